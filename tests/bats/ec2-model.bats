#!/usr/bin/env bats
# The committed EC2/STS model tables are what scripts/gen-ec2.py makes now
# from the botocore models Debian's awscli ships.

load helpers

MODELS=/usr/lib/python3/dist-packages/awscli/botocore/data

@test "lib/gw/ec2q_model.{c,h} are what the generator makes" {
	[ -f "$MODELS/ec2/2016-11-15/service-2.json" ] || skip "Debian's awscli (the botocore models) is not installed"
	out=$BATS_TEST_TMPDIR/gen
	mkdir -p "$out"
	run python3 "$SPX_TOP/scripts/gen-ec2.py" --models "$MODELS" --out "$out"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run diff -u "$SPX_TOP/lib/gw/ec2q_model.c" "$out/ec2q_model.c"
	[ "$status" -eq 0 ]
	run diff -u "$SPX_TOP/lib/gw/ec2q_model.h" "$out/ec2q_model.h"
	[ "$status" -eq 0 ]
}

@test "the generator refuses an unknown action and a bad list" {
	[ -f "$MODELS/ec2/2016-11-15/service-2.json" ] || skip "Debian's awscli (the botocore models) is not installed"
	printf 'service ec2 ec2/2016-11-15\naction FlyToTheMoon\n' >"$BATS_TEST_TMPDIR/a.txt"
	run python3 "$SPX_TOP/scripts/gen-ec2.py" --models "$MODELS" --actions "$BATS_TEST_TMPDIR/a.txt" --out "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
	[ "$output" = "gen-ec2.py: ec2: no operation FlyToTheMoon in ec2/2016-11-15/service-2.json" ]
	printf 'action DescribeRegions\n' >"$BATS_TEST_TMPDIR/b.txt"
	run python3 "$SPX_TOP/scripts/gen-ec2.py" --models "$MODELS" --actions "$BATS_TEST_TMPDIR/b.txt" --out "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
	[[ "$output" == *"b.txt:1: action before any service" ]]
	printf 'service ec2 ec2/2016-11-15\naction DescribeRegions\nopen-enum InstanceType\n' >"$BATS_TEST_TMPDIR/c.txt"
	run python3 "$SPX_TOP/scripts/gen-ec2.py" --models "$MODELS" --actions "$BATS_TEST_TMPDIR/c.txt" --out "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
	[ "$output" = "gen-ec2.py: ec2: open-enum InstanceType is not used by any action" ]
	# A member the model has already, or of a shape it lacks.
	printf 'service ec2 ec2/2016-11-15\naction DeleteVolume\nmember DeleteVolumeRequest VolumeId String x\n' >"$BATS_TEST_TMPDIR/d.txt"
	run python3 "$SPX_TOP/scripts/gen-ec2.py" --models "$MODELS" --actions "$BATS_TEST_TMPDIR/d.txt" --out "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
	[[ "$output" == *"d.txt:3: member: DeleteVolumeRequest has VolumeId already" ]]
	printf 'service ec2 ec2/2016-11-15\naction DeleteVolume\nmember DeleteVolumeRequest Extra NoSuchShape x\n' >"$BATS_TEST_TMPDIR/e.txt"
	run python3 "$SPX_TOP/scripts/gen-ec2.py" --models "$MODELS" --actions "$BATS_TEST_TMPDIR/e.txt" --out "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
	[[ "$output" == *"e.txt:3: member: no shape NoSuchShape" ]]
	[ ! -e "$BATS_TEST_TMPDIR/ec2q_model.c" ]
}
