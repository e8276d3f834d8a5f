#!/usr/bin/env bats
# spx-bench vm: one boot end to end on a private node (the test image
# built by mkimage.sh, launched with RunInstances under TCG, polled
# through the API to running, console and SSH, a login with the key,
# terminated; then the limit, the same image started by spx-vm), the busybox jobs in the guest and on the host,
# DescribeInstances with 20 and 30 records beside DescribeRegions, the
# JSON and the summary; an image that does not boot fails the run and
# leaves no guest; bad input is refused. Speed itself is never asserted
# here (make bench).

load helpers

setup() {
	RES="$BATS_TEST_TMPDIR/results"
	export BENCHDIR="$BATS_TEST_TMPDIR/scratch" SPX_BENCH_RESULTS="$RES"
	searchable "$BATS_TEST_TMPDIR"
}

# Nothing spx-bench started is left: no node, no QEMU, no scratch.
left_nothing() {
	[ -z "$(ls -A "$BENCHDIR" 2>/dev/null)" ]
	! pgrep -f "$BENCHDIR" >/dev/null
}

@test "vm --quick --runs 1: a boot, the guest beside the host, DescribeInstances with 20 and 30 records" {
	run spx-bench vm --quick --runs 1 --records 20,30 --tag q
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"== spx-bench vm: 1 boot of a t3.micro guest; DescribeInstances with 20 and 30 records, 4 clients, 1 s each"* ]]
	grep -Eq '^  run 1: i-[0-9a-f]{17} \((tcg|kvm)\): running [0-9.]+ s, console [0-9.]+ s, SSH banner [0-9.]+ s, login [0-9.]+ s$' <<<"$output"
	grep -Eq '^  run 1: terminated in [0-9.]+ s$' <<<"$output"
	grep -Eq '^  run 1, limit \(spx-vm start, no API\): started [0-9.]+ s, console [0-9.]+ s, SSH banner [0-9.]+ s, login [0-9.]+ s$' <<<"$output"
	grep -Eq '^    DescribeInstances    30 records p50 +[0-9.]+ ms  p99 +[0-9.]+ ms +[0-9]+ requests/s$' <<<"$output"
	f=$(ls "$RES"/q/*.json)
	python3 - "$f" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "spx-bench/1" and r["suite"] == "vm" and r["quick"], r
fig = {f["id"]: f for f in r["figures"]}
boot = ["running", "console", "ssh", "login"]
want = ["vm.boot.%s.s" % b for b in boot] + ["vm.boot.kvm", "vm.terminate.s"]
lboot = ["started", "console", "ssh", "login"]
want += ["vm.limit.boot.%s.s" % b for b in lboot]
for p in ("vm.limit.api", "vm.api.describe.20", "vm.api.describe.30"):
    want += [p + ".p50.ms", p + ".p99.ms", p + ".rps"]
for j in ("cpu.md5.mibs", "disk.seqwrite.mibs", "disk.seqread.mibs"):
    want += ["vm.limit.host." + j, "vm.guest." + j]
assert sorted(fig) == sorted(want), sorted(fig)
v = {k: f["value"] for k, f in fig.items()}
assert v["vm.boot.kvm"] in (0, 1), v
# within the run's timeout, each after the request and in their order
for b in boot:
    assert 0 < v["vm.boot.%s.s" % b] < 300, v
    assert fig["vm.boot.%s.s" % b]["better"] == "lower", fig
assert v["vm.boot.ssh.s"] <= v["vm.boot.login.s"], v
for b in lboot:
    assert 0 < v["vm.limit.boot.%s.s" % b] < 300, v
    assert fig["vm.limit.boot.%s.s" % b]["section"] == "limit", fig
assert v["vm.limit.boot.started.s"] <= v["vm.limit.boot.console.s"] <= v["vm.limit.boot.ssh.s"] <= v["vm.limit.boot.login.s"], v
assert 0 < v["vm.terminate.s"] < 300, v
for p in ("vm.limit.api", "vm.api.describe.20", "vm.api.describe.30"):
    assert 0 < v[p + ".p50.ms"] <= v[p + ".p99.ms"], (p, v)
    assert v[p + ".rps"] > 0 and fig[p + ".rps"]["threads"] == 4, (p, fig)
    assert fig[p + ".rps"]["section"] == ("limit" if "limit" in p else "api")
for k in v:
    if k.startswith(("vm.guest.", "vm.limit.host.")):
        assert v[k] > 0 and fig[k]["unit"] == "MiB/s", (k, fig[k])
PY
	sum="$RES/q/summary.md"
	grep -q '^spx-bench vm, tag q: 1 run, ' "$sum"
	grep -q '^- accelerator: \(TCG (no KVM)\|KVM\); one t3.micro guest a run' "$sum"
	grep -q '^- --quick: ' "$sum"
	grep -Eq '^\| to an SSH login with the key \| [0-9.]+ s \[[0-9.]+-[0-9.]+\] \| SSH login \| [0-9.]+ s \[[0-9.]+-[0-9.]+\] \| [0-9.]+x \[[0-9.]+-[0-9.]+\] \|$' "$sum"
	grep -Eq '^\| TerminateInstances to `terminated` \| [0-9.]+ s \[[0-9.]+-[0-9.]+\] \| - \| - \| - \|$' "$sum"
	grep -Eq '^\| DescribeInstances, 30 records \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ \| [0-9.]+x \| [0-9.]+% \|$' "$sum"
	grep -Eq '^\| DescribeRegions, no records \(limit\) \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ \| \(limit\) \| \(limit\) \|$' "$sum"
	grep -q '^The records: one instance booted by RunInstances, its record copied' "$sum"
	grep -Eq '^\| busybox dd read 1M O_DIRECT \| [0-9.]+ MiB/s \| [0-9.]+ MiB/s \| [0-9]+% \|$' "$sum"
	# the printed report is the summary
	[[ "$output" == *"$(cat "$sum")"* ]]
	# a --quick run is not figures for the README
	run "$SPX_TOP/scripts/bench-readme.sh" "$sum"
	[ "$status" -eq 100 ]
	[ "$output" = "bench-readme.sh: '$sum' is a --quick run, not figures to read" ]
	# host and guest as tags of their own, for compare
	run spx-bench compare q-host q-guest
	[ "$status" -eq 0 ]
	[[ "$output" == *"A = q-host (1 run), B = q-guest (1 run)"* ]]
	grep -Eq '^busybox md5sum of dd.s zeros, 1 CPU +MiB/s ' <<<"$output"
	left_nothing
}

@test "vm: an image that does not boot fails the run, and no guest is left" {
	mkdir -p "$BATS_TEST_TMPDIR/img"
	truncate -s 64M "$BATS_TEST_TMPDIR/img/blank.img"
	run spx-bench vm --quick --runs 2 --timeout 10 --tag blank \
		--image "$BATS_TEST_TMPDIR/img/blank.img"
	[ "$status" -eq 111 ]
	grep -Eq '^spx-bench: vm: i-[0-9a-f]{17}: not (on its console|answering SSH) after 10 s$' <<<"$output"
	[[ "$output" != *"run 2 of 2"* ]]
	[ -z "$(ls -A "$RES/blank" 2>/dev/null)" ]
	left_nothing
}

@test "vm: bad input is a usage error that names it" {
	for r in 0 101 x ''; do
		run spx-bench vm --runs "$r"
		[ "$status" -eq 100 ] || { echo "--runs '$r': $status"; false; }
	done
	for r in 5,2 0,10 10 10,20,30 x,y 100,100001; do
		run spx-bench vm --records "$r"
		[ "$status" -eq 100 ] || { echo "--records '$r': $status"; false; }
		[ "$output" = "spx-bench: vm: --records: N,M with 1 <= N <= M <= 100000" ]
	done
	run spx-bench vm --clients 0
	[ "$status" -eq 100 ]
	run spx-bench vm --timeout 5
	[ "$status" -eq 100 ]
	run spx-bench vm --image "$BATS_TEST_TMPDIR/none.img"
	[ "$status" -eq 100 ]
	[ "$output" = "spx-bench: vm: --image: cannot read '$BATS_TEST_TMPDIR/none.img'" ]
	run spx-bench vm --tag ../x
	[ "$status" -eq 100 ]
	[[ "$output" == *"--tag"* ]]
	# a --dir another user could write in: its runs' directories could
	# be swapped for links there
	mkdir -m 0777 "$BATS_TEST_TMPDIR/open"
	run spx-bench vm --dir "$BATS_TEST_TMPDIR/open"
	[ "$status" -eq 100 ]
	[[ "$output" == *"is open to another user"* ]]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/open")" ]
	left_nothing
}
