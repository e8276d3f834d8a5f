#!/usr/bin/env bats
# spx-bench block: a tiny run end to end (every figure on the three
# targets, the snapshot figures, the report and its summary), a volume
# server that loses writes fails the run, so does a snapshot store that
# corrupts chunks and a restored volume that holds other bytes, a file
# system without O_DIRECT is named, bad input is refused. Speed itself
# is never asserted here (make bench).

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
	[[ "$output" == *"== snapshots: every restored volume held the snapshotted bytes"* ]]
	[[ "$output" == *"--- snapshots: a 256 MiB volume, 64 MiB of data, 32 MiB changed in 16 regions ---"* ]]
	grep -Eq '^  snapshots: first 64 MiB uploaded in [0-9.]+ s; second, 32 MiB changed: 40 MiB uploaded \(incremental\) in [0-9.]+ s; restore --eager [0-9,]+ MiB/s, GET [0-9,]+ MiB/s \(with SHA-256 [0-9,]+ MiB/s, with writes [0-9,]+ MiB/s; writes alone [0-9,]+ MiB/s\); the restored volume held the snapshotted bytes$' <<<"$output"
	grep -Eq '^      uploaded/changed 1.25x \| met \(about the bytes changed: within 10% plus a chunk a region\)$' <<<"$output"
	grep -Eq '^      restore/GET [0-9]+% \| restore/\(GET and SHA-256\) [0-9]+% \| restore/\(GET and write\) [0-9]+% \| restore/\(writes alone\) [0-9]+% \| (met|NOT MET|limit not resolved) \(>= 50% of GET(: this disk writes the bytes at [0-9]+% of GET)?\)$' <<<"$output"
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
snap = {k: v["value"] for k, v in fig.items() if k.startswith("block.snap.")}
assert len(fig) == 3 * 5 * 3 + len(snap), sorted(fig)
assert sorted(snap) == sorted("block.snap." + k for k in (
    "first.uploaded_bytes", "first.seconds", "first.mibs",
    "incr.changed_bytes", "incr.read_bytes", "incr.uploaded_bytes",
    "incr.seconds", "incr.mibs", "restore.bytes", "restore.seconds",
    "restore.mibs", "limit.get.seconds", "limit.get.mibs",
    "limit.getsha.mibs", "limit.getwrite.mibs", "limit.write.mibs")), sorted(snap)
MiB = 1 << 20
# --quick: 64 MiB of random bytes, then 32 MiB changed in 16 regions of
# 2 MiB, each 4 KiB past a 512 KiB chunk boundary: 5 chunks a region
assert snap["block.snap.first.uploaded_bytes"] == 64 * MiB, snap
assert snap["block.snap.incr.changed_bytes"] == 32 * MiB, snap
assert snap["block.snap.incr.read_bytes"] == 16 * 5 * MiB // 2, snap
assert snap["block.snap.incr.uploaded_bytes"] == 16 * 5 * MiB // 2, snap
assert snap["block.snap.restore.bytes"] == 64 * MiB, snap
for w, b in (("first", "first.uploaded_bytes"), ("incr", "incr.uploaded_bytes"),
             ("restore", "restore.bytes")):
    s, v = snap["block.snap.%s.seconds" % w], snap["block.snap.%s.mibs" % w]
    assert s > 0 and abs(v - snap["block.snap." + b] / MiB / s) < 1e-6 * v, (w, s, v)
g, gs = snap["block.snap.limit.get.mibs"], snap["block.snap.limit.getsha.mibs"]
gw = snap["block.snap.limit.getwrite.mibs"]
wa = snap["block.snap.limit.write.mibs"]
assert abs(g * snap["block.snap.limit.get.seconds"] - 64) < 1e-6 * 64, snap
assert g > 0 and gs > 0 and gw > 0 and wa > 0, snap
for k in snap:
    f = fig[k]
    assert f["threads"] == 4, f
    assert f["section"] == ("limit" if k.startswith(("block.snap.limit.",
        "block.snap.incr.changed")) else "snapshot"), f
PY
	sum="$RES/q/summary.md"
	grep -q '^spx-bench block, tag q: 1 run, ' "$sum"
	grep -q '^- host: ' "$sum"
	grep -q '^- file system: .* under '"$BENCHDIR"', which also holds' "$sum"
	grep -q '^- --quick: tiny jobs and volumes, to test the suite; these are not figures to read$' "$sum"
	grep -q '^| test | host | plain nbdkit | spx volume | nbdkit/host | volume/host | volume/nbdkit | verdict |$' "$sum"
	grep -Eq '^\| randread 4k read, IOPS \| [0-9,]+ IOPS \| [0-9,]+ IOPS \| [0-9,]+ IOPS \| [0-9]+% \| [0-9]+% \| [0-9]+% \| ((met|NOT MET|limit not resolved) \(>= 50% of host\)); ((met|NOT MET|limit not resolved) \(>= 90% of nbdkit\)) \|$' "$sum"
	grep -Eq '^\| seqwrite 1M write, p99 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+x \| [0-9.]+x \| [0-9.]+x \| (met|NOT MET|limit not resolved) \(<= 3x host\) \|$' "$sum"
	# the header and one row per figure of the ten
	[ "$(grep -c '^| .* | .* | .* | .* | .* | .* | .* | .* |$' "$sum")" -eq 11 ]
	grep -q '^Snapshots, in each run on the same node: a thin volume of 256 MiB, 64 MiB of random bytes' "$sum"
	grep -q '^| figure | measured | limit (same runs) | ratio | verdict |$' "$sum"
	grep -q '^Every restored volume held the snapshotted bytes: ' "$sum"
	grep -Eq '^Targets met: [0-9]+ of [0-9]+[;.]' "$sum"
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
# the snapshots' table: every cell is the run's figure, every verdict
# follows from its ratio
snap = {}
for line in open(sys.argv[2]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) == 5 and c[0] not in ("figure", "---"):
        snap.setdefault(c[0], []).append(c)
assert len(snap) == 11, snap
MiB = 1 << 20
def mib(k):
    return "%.1f MiB" % (fig[k] / MiB)
assert snap["first snapshot, 64 MiB of data: uploaded"][0][1] == mib("block.snap.first.uploaded_bytes")
assert snap["first snapshot: time"][0][1] == "%.2f s" % fig["block.snap.first.seconds"]
up = snap["incremental snapshot: uploaded"][0]
assert up[1] == mib("block.snap.incr.uploaded_bytes") == "40.0 MiB", up
assert up[2] == "changed: " + mib("block.snap.incr.changed_bytes"), up
r = fig["block.snap.incr.uploaded_bytes"] / fig["block.snap.incr.changed_bytes"]
assert up[3] == "%.2fx" % r, up
assert up[4] == ("met" if abs(r - 1) <= 0.1 + 16 * 0.5 / 32 else "NOT MET") + \
    " (about the bytes changed: within 10% plus a chunk a region)", up
assert snap["incremental snapshot: read from the volume"][0][1] == mib("block.snap.incr.read_bytes")
assert snap["restore --eager: bytes"][0][1] == mib("block.snap.restore.bytes")
rate, rate_sha, rate_w, rate_wa = snap["restore --eager: rate"]
v, g, gs, gw, wa = (fig["block.snap." + k] for k in ("restore.mibs", "limit.get.mibs",
                                                      "limit.getsha.mibs", "limit.getwrite.mibs",
                                                      "limit.write.mibs"))
for row, lim in ((rate, g), (rate_sha, gs), (rate_w, gw), (rate_wa, wa)):
    assert abs(num(row[1]) - v) <= 0.5, (row, v)
    assert abs(num(row[2].split(": ")[1]) - lim) <= 0.5, (row, lim)
    assert row[3] == "%.0f%%" % (100 * v / lim), (row, lim)
assert rate_w[2].startswith("GET and write of each chunk, 4 threads: "), rate_w
assert rate_wa[2].startswith("the same bytes written alone, 4 threads: "), rate_wa
(alone,) = snap["the same bytes written alone"]
assert abs(num(alone[1]) - wa) <= 0.5 and abs(num(alone[2].split(": ")[1]) - g) <= 0.5, alone
assert alone[3] == "%.0f%%" % (100 * wa / g) and alone[4] == "", alone
# a restore writes every byte: where the disk writes them at under half
# the GET rate, no restore meets the target here
if v > g:
    want = "limit not resolved (>= 50% of GET)"
elif v / g >= 0.5:
    want = "met (>= 50% of GET)"
elif wa / g < 0.5:
    want = "limit not resolved (>= 50%% of GET: this disk writes the bytes at %s of GET)" % alone[3]
else:
    want = "NOT MET (>= 50% of GET)"
assert rate[4] == want, (rate, want)
assert rate_sha[4] == rate_w[4] == rate_wa[4] == "", (rate_sha, rate_w, rate_wa)
PY
	left_nothing
}

# spx-bench block with the volume's server replaced by nbdkit's LOSSY
# plugin (tests/bats/fixtures/nbdkit-lossy.sh).
lossy() {
	LOSSY=$1 SPX_NBD="$BATS_TEST_DIRNAME/fixtures/nbdkit-lossy.sh" \
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

# spx-bench block with spx-vol replaced by one that meets a fault at
# restore (tests/bats/fixtures/spx-vol-fault.sh).
fault() {
	FAULT=$1 SPX_VOL="$BATS_TEST_DIRNAME/fixtures/spx-vol-fault.sh" \
		run spx-bench block --quick --runs 2 --tag fault
}

@test "block: a snapshot store that corrupts its chunks fails the run" {
	fault store
	[ "$status" -eq 111 ]
	[[ "$output" == *"spx-bench: block: snapshots: spx-vol restore failed (exit 111): spx-vol: restore: '"*"' is restored, but not every chunk could be fetched yet: chunk "*" is lost: 'c/"* ]]
	[[ "$output" != *"run 2 of 2"* ]]
	[ -z "$(ls -A "$RES/fault" 2>/dev/null)" ]
	left_nothing
}

@test "block: a restored volume that holds other bytes fails the run" {
	fault volume
	[ "$status" -eq 111 ]
	[[ "$output" == *"spx-bench: block: snapshots: the volume restored from snap-"*" does not hold the snapshotted bytes: chunk 0 (at byte 0) differs"* ]]
	[[ "$output" != *"run 2 of 2"* ]]
	[ -z "$(ls -A "$RES/fault" 2>/dev/null)" ]
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
	# a --dir another user could write in: its runs' directories could
	# be swapped for links there
	mkdir -m 0777 "$BATS_TEST_TMPDIR/open"
	run spx-bench block --dir "$BATS_TEST_TMPDIR/open"
	[ "$status" -eq 100 ]
	[[ "$output" == *"is open to another user"* ]]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/open")" ]
	left_nothing
}
