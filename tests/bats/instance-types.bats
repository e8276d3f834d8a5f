#!/usr/bin/env bats
# spx get instance-types: the catalogue lib/ec2/itype.c holds, as a table
# and as JSON, filtered by name; errors with their exit statuses.

bats_require_minimum_version 1.5.0
load helpers

@test "get instance-types lists every size of the seven families" {
	run --separate-stderr spx get instance-types
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "${lines[0]}" = "NAME           | VCPUS | MEMORY(MiB) | GPUS   | NETWORK" ]
	[ "${#lines[@]}" -eq 72 ] # header + 71 types
	[ "${lines[1]}" = "t3.nano        | 2     | 512         | -      | Up to 5 Gigabit" ]
	[[ "$output" == *"m6i.large      | 2     | 8192        | -      | Up to 12.5 Gigabit"* ]]
	[[ "$output" == *"g6.48xlarge    | 192   | 786432      | 8 x L4 | 100 Gigabit"* ]]
	[ "${lines[71]}" = "g6.48xlarge    | 192   | 786432      | 8 x L4 | 100 Gigabit" ]
	for f in t3 m6i c6i r6i m8i c8i g6; do
		[[ "$output" == *$'\n'"$f."* ]] || { echo "no $f"; false; }
	done
	[[ "$output" == *"m8i.metal-96xl | 384   | 1572864"* ]]
}

@test "get instance-types --json is the same table as JSON" {
	run --separate-stderr spx get instance-types --json
	[ "$status" -eq 0 ]
	run /usr/bin/python3 -c '
import json, sys
a = json.loads(sys.argv[1])
assert len(a) == 71, len(a)
e = [x for x in a if x["name"] == "c8i.4xlarge"][0]
assert e == {"name": "c8i.4xlarge", "vcpus": 16, "memory(mib)": 32768,
             "gpus": "-", "network": "Up to 15 Gigabit"}, e
print("ok")' "$output"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
}

@test "get instance-types TYPE... shows those types in that order" {
	run --separate-stderr spx get instance-types r6i.large t3.micro
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[1]}" = "r6i.large | 2     | 16384       | -    | Up to 12.5 Gigabit" ]
	[ "${lines[2]}" = "t3.micro  | 2     | 1024        | -    | Up to 5 Gigabit" ]
}

@test "get instance-types with an unknown type exits 1 and prints nothing" {
	run --separate-stderr spx get instance-types m6i.large m6i.huge
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[ "$stderr" = "spx: get instance-types: unknown instance type 'm6i.huge'" ]
}

@test "get instance-types: a bad option is a usage error, a full stdout 111" {
	run --separate-stderr spx get instance-types --bogus
	[ "$status" -eq 100 ]
	[ -z "$output" ]
	run bash -c "spx get instance-types >/dev/full"
	[ "$status" -eq 111 ]
	[[ "$output" == *"No space left on device"* ]]
}
