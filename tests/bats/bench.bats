#!/usr/bin/env bats
# spx-bench compare and plot on fixture results with known medians, ranges,
# overlaps and thread counts (tests/bats/fixtures/bench), and host's
# chainloading of scripts/spx-bench.sh.

load helpers

FIX="$BATS_TEST_DIRNAME/fixtures/bench"

@test "compare: medians, ranges, spread and ratio of two tags" {
	run spx-bench compare host guest --results "$FIX"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "spx-bench compare: A = host (3 runs), B = guest (3 runs)" ]
	row=$(grep '^sysbench cpu, 1 thread ' <<<"$output")
	[[ "$row" == *"1,000 [990.00–1,010] 2.0%"*"930.00 [920.00–940.00] 2.2%"*"93.0%" ]]
}

@test "compare: ranges that overlap are not resolved; those that do not are" {
	run spx-bench compare host guest --results "$FIX"
	[[ "$(grep '^randread 4k read ' <<<"$output")" == *"95.0%  not resolved" ]]
	[[ "$(grep '^seqwrite 1M write ' <<<"$output")" == *"83.3%" ]]
	[[ "$(grep '^seqwrite 1M write ' <<<"$output")" != *"not resolved"* ]]
	[[ "$(grep '^randrw 70/30 4k read p99 ' <<<"$output")" == *"ms (lower)"*"130.0%" ]]
}

@test "compare: no ratio between different thread counts" {
	run spx-bench compare host guest --results "$FIX"
	row=$(grep '^sysbench cpu, all threads ' <<<"$output")
	[[ "$row" == *"(16t)"*"(8t)"*"not comparable" ]]
	[[ "$row" != *"50.0%"* ]]
}

@test "compare --json gives the same figures to machines" {
	run spx-bench compare host guest --results "$FIX" --json
	[ "$status" -eq 0 ]
	python3 - "$output" <<'PY'
import json, sys
rows = {r["id"]: r for r in json.loads(sys.argv[1])}
c = rows["cpu.single.events"]
assert c["a"]["median"] == 1000 and c["a"]["min"] == 990 and c["a"]["max"] == 1010, c
assert abs(c["ratio"] - 0.93) < 1e-9 and c["resolved"] and c["comparable"], c
assert rows["cpu.all.events"]["comparable"] is False and rows["cpu.all.events"]["ratio"] is None
assert rows["disk.randread.read.iops"]["resolved"] is False
assert rows["disk.randrw.read.p99"]["better"] == "lower"
PY
}

@test "compare: a missing tag is a negative answer, a bad tag a usage error" {
	run spx-bench compare host nosuchtag --results "$FIX"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no results for tag 'nosuchtag'"* ]]
	run spx-bench compare host '../etc' --results "$FIX"
	[ "$status" -eq 100 ]
	[[ "$output" == *"bad tag '../etc'"* ]]
	run spx-bench compare host --results "$FIX"
	[ "$status" -eq 100 ]
}

@test "compare: a malformed result file is named with its position" {
	mkdir -p "$BATS_TEST_TMPDIR/r/bad"
	printf '{"schema": "spx-bench/1", "figures": [' >"$BATS_TEST_TMPDIR/r/bad/x.json"
	run spx-bench compare bad bad --results "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 100 ]
	[[ "$output" == *"bad/x.json:1:"* ]]
}

@test "plot writes valid PNG charts" {
	command -v gnuplot >/dev/null || skip "gnuplot is not installed"
	run spx-bench plot host guest --results "$FIX" --out "$BATS_TEST_TMPDIR/p"
	[ "$status" -eq 0 ]
	for c in cpu-single random-iops sequential-mibs variance; do
		f="$BATS_TEST_TMPDIR/p/$c.png"
		[ -s "$f" ]
		[ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
		[ "$(file -b "$f" 2>/dev/null | cut -d, -f1)" = "PNG image data" ] || ! command -v file >/dev/null
	done
}

@test "plot without gnuplot says so (111)" {
	mkdir -p "$BATS_TEST_TMPDIR/nobin"
	run env PATH="$BATS_TEST_TMPDIR/nobin" "$SPX_BUILD/bin/spx-bench" plot host --results "$FIX" --out "$BATS_TEST_TMPDIR/p2"
	[ "$status" -eq 111 ]
	[[ "$output" == *"cannot run gnuplot"* ]]
}

@test "plot needs --out" {
	run spx-bench plot host --results "$FIX"
	[ "$status" -eq 100 ]
	[[ "$output" == *"--out DIR is required"* ]]
}

@test "host chainloads the script and passes its status through" {
	cat >"$BATS_TEST_TMPDIR/fake.sh" <<'SH'
echo "fake: $*"
exit 7
SH
	SPX_BENCH_SCRIPT="$BATS_TEST_TMPDIR/fake.sh" run spx-bench host --tag t1 --quick --runs 2
	[ "$status" -eq 7 ]
	[ "$output" = "fake: --tag t1 --runs 2 --quick" ]
}
