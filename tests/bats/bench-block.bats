#!/usr/bin/env bats
# spx-bench block: a tiny run end to end (every figure on the three
# targets, the report and its summary), a volume server that loses
# writes fails the run, a file system without O_DIRECT is named, bad
# input is refused. Speed itself is never asserted here (make bench).

load helpers

setup() {
	RES="$BATS_TEST_TMPDIR/results"
	export BENCHDIR="$BATS_TEST_TMPDIR/scratch" SPX_BENCH_RESULTS="$RES"
}

# Nothing spx-bench started is left: no server, no fio, no scratch.
left_nothing() {
	[ -z "$(ls -A "$BENCHDIR" 2>/dev/null)" ]
	! pgrep -f "$BENCHDIR" >/dev/null
}

@test "block --quick: the jobs on the three targets, the report, the summary" {
	run spx-bench block --quick --runs 1 --tag q
	[ "$status" -eq 0 ]
	[[ "$output" == *"== data: every target read back what it wrote"* ]]
	[[ "$output" == *"== targets met: "* ]]
	[[ "$output" == *"== snapshots: not built yet, not measured"* ]]
	# the reference layout, once per target
	grep -Eq '^  randrw 70/30 4k    read +[0-9,]+ IOPS +[0-9,]+ MiB/s   p99 +[0-9.]+ ms$' <<<"$output"
	[ "$(grep -c '^  seqwrite 1M        write' <<<"$output")" -eq 3 ]
	f=$(ls "$RES"/q/*.json)
	python3 - "$f" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "spx-bench/1" and r["suite"] == "block" and r["quick"], r
fig = {f["id"]: f for f in r["figures"]}
want = [("randrw", "read"), ("randrw", "write"), ("randread", "read"),
        ("seqread", "read"), ("seqwrite", "write")]
for t in ("host", "nbdkit", "vol"):
    for job, d in want:
        for m in ("iops", "mibs", "p99"):
            f = fig["block.%s.%s.%s.%s" % (t, job, d, m)]
            assert f["value"] > 0 and f["threads"] == 4, f
            assert f["better"] == ("lower" if m == "p99" else "higher"), f
            assert f["section"] == ("block" if t == "vol" else "limit"), f
assert len(fig) == 3 * 5 * 3, sorted(fig)
PY
	sum="$RES/q/summary.md"
	grep -q '^spx-bench block, tag q: 1 run, ' "$sum"
	grep -q '^- host: ' "$sum"
	grep -q '^- file system: .* under '"$BENCHDIR"', which also holds' "$sum"
	grep -q '^| test | host | plain nbdkit | spx volume | nbdkit/host | volume/host | volume/nbdkit | verdict |$' "$sum"
	grep -Eq '^\| randread 4k read, IOPS \| [0-9,]+ IOPS \| [0-9,]+ IOPS \| [0-9,]+ IOPS \| [0-9]+% \| [0-9]+% \| [0-9]+% \| ((met|NOT MET|limit not resolved) \(>= 50% of host\)); ((met|NOT MET|limit not resolved) \(>= 90% of nbdkit\)) \|$' "$sum"
	grep -Eq '^\| seqwrite 1M write, p99 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+x \| [0-9.]+x \| [0-9.]+x \| (met|NOT MET|limit not resolved) \(<= 3x host\) \|$' "$sum"
	# the header and one row per figure of the ten
	[ "$(grep -c '^| .* | .* | .* | .* | .* | .* | .* | .* |$' "$sum")" -eq 11 ]
	grep -q '^| snapshot of a 10 GiB volume with 1 GiB changed: bytes uploaded | not measured' "$sum"
	grep -q '^Targets met: [0-9] of [0-9]' "$sum"
	# every figure and ratio in the summary is the run's, and each
	# verdict follows from its ratio
	python3 - "$f" "$sum" <<'PY'
import json, sys
fig = {f["id"]: f["value"] for f in json.load(open(sys.argv[1]))["figures"]}
rows = {}
for line in open(sys.argv[2]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) == 8 and c[0] != "test" and not c[0].startswith("---"):
        rows[c[0]] = c
assert len(rows) == 10, rows
def num(s):
    return float(s.split()[0].replace(",", ""))
for name, job, d, m in [("randrw 70/30 4k read, IOPS", "randrw", "read", "iops"),
                        ("randread 4k read, IOPS", "randread", "read", "iops"),
                        ("seqwrite 1M write, MiB/s", "seqwrite", "write", "mibs"),
                        ("seqwrite 1M write, p99", "seqwrite", "write", "p99")]:
    c = rows[name]
    h, n, v = (fig["block.%s.%s.%s.%s" % (t, job, d, m)] for t in ("host", "nbdkit", "vol"))
    for cell, val in zip(c[1:4], (h, n, v)):
        assert abs(num(cell) - val) <= (0.01 if m == "p99" else 0.1 if val < 100 else 0.5), (cell, val)
    if m == "p99":
        assert c[5] == "%.2fx" % (v / h), (c, v / h)
        want = "limit not resolved" if v < h else "met" if v / h <= 3 else "NOT MET"
        assert c[7] == want + " (<= 3x host)", (c, want)
    else:
        assert c[5] == "%.0f%%" % (100 * v / h) and c[6] == "%.0f%%" % (100 * v / n), c
        lo = 0.5 if job != "seqwrite" else 0.8
        want = "limit not resolved" if v > h else "met" if v / h >= lo else "NOT MET"
        assert c[7].startswith(want + " (>= %d%% of host)" % (100 * lo)), (c, want)
PY
	left_nothing
}

# spx-bench block with the volume's nbdkit replaced by nbdkit's LOSSY
# plugin (tests/bats/fixtures/nbdkit-lossy.sh).
lossy() {
	LOSSY=$1 SPX_NBDKIT="$BATS_TEST_DIRNAME/fixtures/nbdkit-lossy.sh" \
		run spx-bench block --quick --runs 2 --tag lossy
}

@test "block: a server that drops writes fails the run" {
	lossy null
	[ "$status" -eq 111 ]
	[[ "$output" == *"spx-bench: block: spx volume: the data read back is not what was written (check-vol-run1): "* ]]
	[[ "$output" != *"run 2 of 2"* ]]
	# the figures of a run whose data was wrong are not kept
	[ -z "$(ls -A "$RES/lossy" 2>/dev/null)" ]
	left_nothing
}

@test "block: a server that keeps writes only in memory fails after its restart" {
	lossy memory
	[ "$status" -eq 111 ]
	# the same fio job read its writes back; the restarted server had none
	[[ "$output" == *"spx-bench: block: spx volume: the data read back is not what was written (reread-vol-run1): "* ]]
	[ -z "$(ls -A "$RES/lossy" 2>/dev/null)" ]
	left_nothing
}

@test "block: a file system without O_DIRECT is named, and buffered I/O used" {
	command -v unshare >/dev/null || skip "no unshare"
	mkdir -p "$BENCHDIR"
	run unshare -m sh -c 'mount -t ramfs none "$BENCHDIR" &&
		exec spx-bench block --quick --runs 1 --tag ramfs'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"== O_DIRECT is not available on ramfs: the host jobs run buffered (direct=0)"* ]]
	grep -q '^- O_DIRECT is not available on ramfs: the host jobs ran buffered (direct=0)' "$RES/ramfs/summary.md"
	grep -q '^- ramfs is memory, not a disk' "$RES/ramfs/summary.md"
	grep -q '^host file system: ramfs none (libaio, direct=0)$' "$RES/ramfs/summary.md"
	left_nothing
}

@test "block: bad input is a usage error that names it" {
	for s in 3M 1.5G 1000K 2T x ''; do
		run spx-bench block --size "$s"
		[ "$status" -eq 100 ] || { echo "--size '$s': $status"; false; }
		[[ "$output" == "spx-bench: block: "* ]]
	done
	run spx-bench block --size 3M
	[ "$output" = "spx-bench: block: --size: '3M' is not whole MiB from 4M to 1T" ]
	run spx-bench block --runs 0
	[ "$status" -eq 100 ]
	run spx-bench block --runtime 0
	[ "$status" -eq 100 ]
	[[ "$output" == *"--runtime"* ]]
	run spx-bench block --ramp x
	[ "$status" -eq 100 ]
	run spx-bench block --tag ../x
	[ "$status" -eq 100 ]
	[[ "$output" == *"--tag"* ]]
	run spx-bench block --dir "$BATS_TEST_TMPDIR/$(printf 'd%.0s' $(seq 90))"
	[ "$status" -eq 100 ]
	[[ "$output" == *"too long a path for a unix socket"* ]]
	left_nothing
}
