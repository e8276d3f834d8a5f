#!/usr/bin/env bats
# spx-bench s3 and scripts/s3-bench.sh: they run end to end on small
# objects, write the figures with their limits, check every byte, and
# refuse bad input. Speed itself is never asserted here (make bench).

load helpers

setup() {
	RES="$BATS_TEST_TMPDIR/results"
	export BENCHDIR="$BATS_TEST_TMPDIR/scratch" SPX_BENCH_RESULTS="$RES"
}

teardown() {
	stop_node
	[ -n "${FAKE:-}" ] && kill "$FAKE" 2>/dev/null || true
}

@test "s3 --quick: every part runs and writes each figure beside its limit" {
	shm0=$(ls /dev/shm 2>/dev/null | grep -c '^spx-bench-s3\.' || true)
	run spx-bench s3 --quick --results "$RES" --tag q --listing 300,1500
	[ "$status" -eq 0 ]
	[[ "$output" == *"growth of the first page from 300 to 1500 keys (x5): x"* ]]
	[[ "$output" == *"targets met:"* ]]
	[[ "$output" == *"every object read back matched"* ]]
	f=$(ls "$RES"/q/*.json)
	python3 - "$f" <<'PY'
import json, os, sys
st = os.statvfs("/dev/shm") if os.path.isdir("/dev/shm") else None
shm = (st is not None and st.f_bavail * st.f_frsize >= 1 << 30 and
       open("/proc/mounts").read().find(" /dev/shm tmpfs ") >= 0)
r = json.load(open(sys.argv[1]))
assert r["schema"] == "spx-bench/1" and r["suite"] == "s3" and r["quick"], r
fig = {f["id"]: f for f in r["figures"]}
need = ["s3.limit.md5.mibs", "s3.limit.sha256.mibs",
        "s3.put.8m.mibs", "s3.get.8m.mibs", "s3.limit.write.8m.mibs",
        "s3.limit.nginx.8m.mibs", "s3.put.24m.mibs", "s3.get.24m.mibs",
        "s3.put.24m.rss.mib", "s3.rget.mibs", "s3.limit.nginx.rget.mibs",
        "s3.put4k.ops", "s3.get4k.ops", "s3.limit.fsync4k.ops",
        "s3.limit.nginx4k.ops", "s3.limit.layout4k.ops",
        "s3.rs10.put.mibs", "s3.rs21.put.mibs",
        "s3.rs42.put.mibs", "s3.rs21.cost", "s3.rs42.cost"]
missing = [n for n in need if n not in fig]
assert not missing, missing
for n in need:
    assert fig[n]["value"] > 0, fig[n]
assert fig["s3.rget.mibs"]["threads"] == 10
assert fig["s3.put4k.ops"]["threads"] == 16
# the PUT's ceiling on a node on tmpfs, wherever /dev/shm is one with room
if shm:
    t = fig["s3.put4k.tmpfs.ops"]
    assert t["value"] > 0 and t["threads"] == 16, t
else:
    assert "s3.put4k.tmpfs.ops" not in fig
assert fig["s3.put.24m.rss.mib"]["better"] == "lower"
g = fig["s3.put.24m.rssgrow.mib"]
assert g["better"] == "lower" and 0 <= g["value"] <= fig["s3.put.24m.rss.mib"]["value"], g
# the listing suite: each bucket size's figures, every one measured
for n in (300, 1500):
    for f in ("puts.ops", "first.ms", "all.s", "keys.ops", "putsl.ops"):
        assert fig["s3.list.%d.%s" % (n, f)]["value"] > 0, (n, f)
    assert fig["s3.list.%d.first.ms" % n]["better"] == "lower"
# cost is PUT MiB/s at RS(1,0) over RS(2,1), from the same run
c = fig["s3.rs10.put.mibs"]["value"] / fig["s3.rs21.put.mibs"]["value"]
assert abs(c - fig["s3.rs21.cost"]["value"]) < 1e-6 * c, (c, fig["s3.rs21.cost"])
PY
	# the summary the README's table is copied from: one row per figure,
	# each ratio beside its limit, the machine named
	sum="$RES/q/summary.md"
	[ -f "$sum" ]
	grep -q '^| figure | spx | limit (same runs) | ratio | verdict |$' "$sum"
	grep -Eq '^\| GET 8 MiB, 1 stream \| [0-9.]+ MiB/s \| nginx[^|]* [0-9.]+ MiB/s \| [0-9]+% \| ((met|NOT MET) \(target >= 80%\)|limit not resolved) \|$' "$sum"
	grep -Eq '^\| PUT 4 KiB, 16 clients \| [0-9.]+ ops/s \| durable 4 KiB files' "$sum"
	# the PUT on tmpfs is a comparison, judged against nothing
	! grep -E '^\| PUT 4 KiB, 16 clients, the node on tmpfs .*(met|resolved)' "$sum"
	grep -q '^- host: ' "$sum"
	# the private nodes and nginx are gone, and so is the scratch space
	[ -z "$(ls -A "$BENCHDIR")" ]
	[ "$(ls /dev/shm 2>/dev/null | grep -c '^spx-bench-s3\.')" = "$shm0" ]
	! pgrep -f "nginx.*$BENCHDIR" >/dev/null
}

@test "s3-bench.sh: three runs against a running node, medians, clean up" {
	make_node --http
	start_node
	run env RUNS=2 "$SPX_TOP/scripts/s3-bench.sh" --root "$ROOT" 8
	[ "$status" -eq 0 ]
	[[ "$output" == *"medians of 2 runs (tag s3-bench-8)"* ]]
	grep -E '^  PUT 8 MiB, 1 stream +[0-9.]+ MiB/s +\(runs: [0-9.]+ / [0-9.]+\)' <<<"$output"
	grep -E '^  GET 8 MiB, 1 stream +[0-9.]+ MiB/s +\(runs: [0-9.]+ / [0-9.]+\)' <<<"$output"
	[[ "$output" == *"vs raw write+fsync 8 MiB"* ]]
	[[ "$output" == *"vs nginx sendfile GET 8 MiB"* ]]
	# only the single-stream part runs against someone else's node
	[[ "$output" != *"RS(2,1)"* ]]
	# it made the bucket, so it removed it with its object
	run spx-gw call --root "$ROOT" --service s3 /
	[ "$status" -eq 0 ]
	[[ "$output" != *"spx-bench"* ]]
}

fake() {
	python3 "$BATS_TEST_DIRNAME/fixtures/fake-s3.py" "$BATS_TEST_TMPDIR/port" "$1" &
	FAKE=$!
	for _ in $(seq 50); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.1; done
	export AWS_ACCESS_KEY_ID=AKIAFAKE AWS_SECRET_ACCESS_KEY=fake
}

@test "s3: a wrong ETag fails the run" {
	fake etag
	run spx-bench s3 --endpoint "http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")" \
		--sizes 1 --results "$RES"
	[ "$status" -ne 0 ]
	[[ "$output" == *"ETag \"00000000000000000000000000000000\", want"* ]]
	[ ! -d "$RES/s3-"* ] || [ -z "$(ls "$RES"/s3-*)" ]
}

@test "s3: one wrong byte read back fails the run" {
	fake flip
	run spx-bench s3 --endpoint "http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")" \
		--sizes 1 --results "$RES"
	[ "$status" -ne 0 ]
	[[ "$output" == *"CRC-32C differs from the object's"* ]]
}

@test "s3: bad input is a usage error that names it" {
	run spx-bench s3 --sizes 0
	[ "$status" -eq 100 ]
	[[ "$output" == *"--sizes"* ]]
	run spx-bench s3 --sizes 8,x
	[ "$status" -eq 100 ]
	run spx-bench s3 --tag ../x
	[ "$status" -eq 100 ]
	[[ "$output" == *"--tag"* ]]
	run spx-bench s3 --runs 0
	[ "$status" -eq 100 ]
	run spx-bench s3 --listing 1000,10
	[ "$status" -eq 100 ]
	[[ "$output" == *"--listing"* ]]
	run spx-bench s3 --listing 0
	[ "$status" -eq 100 ]
	run spx-bench s3 --list-cap 0
	[ "$status" -eq 100 ]
	run spx-bench s3 --root /x --endpoint http://127.0.0.1:1
	[ "$status" -eq 100 ]
	run spx-bench s3 --endpoint ftp://x
	[ "$status" -eq 100 ]
	run env -u AWS_ACCESS_KEY_ID spx-bench s3 --endpoint http://127.0.0.1:1
	[ "$status" -eq 100 ]
	[[ "$output" == *"AWS_ACCESS_KEY_ID"* ]]
	run "$SPX_TOP/scripts/s3-bench.sh" 12x
	[ "$status" -eq 100 ]
	[[ "$output" == *"SIZE_MB"* ]]
	run "$SPX_TOP/scripts/s3-bench.sh" --root
	[ "$status" -eq 100 ]
	# a --dir another user could write in: its runs' directories could
	# be swapped for links there
	mkdir -m 0777 "$BATS_TEST_TMPDIR/open"
	run spx-bench s3 --dir "$BATS_TEST_TMPDIR/open"
	[ "$status" -eq 100 ]
	[[ "$output" == *"is open to another user"* ]]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/open")" ]
}

@test "s3: a node that is not running is a clear failure" {
	make_node --http
	run spx-bench s3 --root "$ROOT" --sizes 1 --results "$RES"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Couldn't connect"* || "$output" == *"connect"* ]]
}
