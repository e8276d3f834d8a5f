#!/usr/bin/env bats
# scripts/spx-bench.sh: the host suite's measurement engine, run as in a
# guest (bash, coreutils, awk, sed, sysbench and fio only), with --quick.

load helpers
bats_require_minimum_version 1.5.0

SCRIPT="$SPX_TOP/scripts/spx-bench.sh"

# GNU coreutils' programs: what a guest has besides bash, awk, sed and the
# two benchmarks.
COREUTILS="[ arch b2sum base32 base64 basename basenc cat chcon chgrp chmod
chown chroot cksum comm cp csplit cut date dd df dir dircolors dirname du echo
env expand expr factor false fmt fold groups head hostid id install join link
ln logname ls md5sum mkdir mkfifo mknod mktemp mv nice nl nohup nproc numfmt od
paste pathchk pinky pr printenv printf ptx pwd readlink realpath rm rmdir
runcon seq sha1sum sha224sum sha256sum sha384sum sha512sum shred shuf sleep
sort split stat stdbuf stty sum sync tac tail tee test timeout touch tr true
truncate tsort tty uname unexpand uniq unlink users vdir wc who whoami yes"

FIGURE_IDS="cpu.single.events cpu.single.p95 cpu.all.events cpu.all.p95
mem.rndwrite.mibs
disk.randrw.read.iops disk.randrw.read.mibs disk.randrw.read.p99
disk.randrw.write.iops disk.randrw.write.mibs disk.randrw.write.p99
disk.randread.read.iops disk.randread.read.mibs disk.randread.read.p99
disk.seqread.read.iops disk.seqread.read.mibs disk.seqread.read.p99
disk.seqwrite.write.iops disk.seqwrite.write.mibs disk.seqwrite.write.p99"

setup() {
	if ! command -v sysbench >/dev/null || ! command -v fio >/dev/null; then
		skip "sysbench and fio are not installed (scripts/deps.sh)"
	fi
	MOUNTS=()
	BG=
}

teardown() {
	if [ -n "$BG" ]; then kill "$BG" 2>/dev/null; wait "$BG" 2>/dev/null; fi
	local m
	for m in ${MOUNTS[@]+"${MOUNTS[@]}"}; do umount "$m" 2>/dev/null || umount -l "$m"; done
}

# A bin directory that has what a guest has, less the tools named; sets
# GUEST_PATH.
guest_path() { # tool-to-leave-out...
	local bin="$BATS_TEST_TMPDIR/guest-bin" t p
	rm -rf "$bin"
	mkdir "$bin"
	for t in $COREUTILS bash awk sed sysbench fio; do
		case " $* " in *" $t "*) continue ;; esac
		p=$(type -P "$t") || continue
		ln -s "$p" "$bin/$t"
	done
	GUEST_PATH=$bin
}

# A fresh ext4 file system of SIZE MiB, loop-mounted at $BATS_TEST_TMPDIR/NAME
# (sets MNT); unmounted in teardown. Skips when loop mounts are impossible.
mount_ext4() { # name size-mib
	[ "$(id -u)" = 0 ] || skip "loop mounts need root"
	command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 is not installed"
	local img="$BATS_TEST_TMPDIR/$1.img"
	MNT="$BATS_TEST_TMPDIR/$1"
	truncate -s "${2}M" "$img"
	mkfs.ext4 -q -F "$img" || skip "mkfs.ext4 failed"
	mkdir "$MNT"
	mount -o loop "$img" "$MNT" 2>/dev/null || skip "cannot loop-mount here"
	MOUNTS+=("$MNT")
}

# The JSON file parses and has the schema, the run numbers and every figure
# as a number > 0.
check_json() { # file run runs quick tag dir
	python3 -m json.tool "$1" >/dev/null
	python3 - "$@" "$FIGURE_IDS" <<'EOF'
import json, sys
path, run, runs, quick, tag, dir, ids = sys.argv[1:]
j = json.load(open(path))
def need(c, what):
    if not c:
        sys.exit("%s: %s" % (path, what))
need(j["schema"] == "spx-bench/1" and j["suite"] == "host", "schema")
need(j["tag"] == tag, "tag %r" % j["tag"])
need(j["run"] == int(run) and j["runs"] == int(runs), "run/runs")
need(j["quick"] is (quick == "true"), "quick")
need(isinstance(j["host"], str) and j["host"], "host")
need(path.endswith("-run%s.json" % run), "file name")
s = j["system"]
for k in ("cpu_model", "kernel", "os", "dir", "device", "fs", "virt"):
    need(isinstance(s[k], str) and s[k], "system." + k)
for k in ("cores", "threads", "mem_mib", "fs_size_mib", "fs_free_mib"):
    need(type(s[k]) is int and s[k] > 0, "system." + k)
need(s["dir"] == dir, "system.dir %r" % s["dir"])
figs = {f["id"]: f for f in j["figures"]}
need(len(figs) == len(j["figures"]), "duplicate figure ids")
need(sorted(figs) == sorted(ids.split()), "figure ids %s" % sorted(figs))
for f in j["figures"]:
    need(type(f["value"]) in (int, float) and f["value"] > 0, "value of " + f["id"])
    need(f["better"] == ("lower" if f["unit"] == "ms" else "higher"), "better of " + f["id"])
    need(f["section"] == f["id"].split(".")[0].replace("mem", "memory"), "section of " + f["id"])
    need(isinstance(f["label"], str) and f["label"], "label of " + f["id"])
    t = 4 if f["section"] == "disk" else 1 if ".single." in f["id"] else s["threads"]
    need(f["threads"] == t, "threads of " + f["id"])
EOF
}

@test "--quick with only a guest's tools: four sections, and a JSON file with every figure" {
	guest_path
	# A directory name that JSON must escape: a quote, a backslash, a tab.
	dir="$BATS_TEST_TMPDIR/d\"i\\r"$'\t'"x"
	mkdir "$dir"
	BENCHDIR="$dir" SPX_BENCH_RESULTS="$BATS_TEST_TMPDIR/res" \
		run --separate-stderr env PATH="$GUEST_PATH" "$SCRIPT" --quick --tag t-quick
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ -z "$stderr" ]
	[[ "${lines[0]}" =~ ^"=== spx-bench host — tag t-quick — run 1/1 — "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z" — quick ===" ]]
	for l in "--- 1. System ---" "  cpu        " "  memory     " "  kernel     " \
		"  disk       " "  virt       " \
		"--- 2. CPU (sysbench, events/sec — higher is better) ---" \
		"--- 3. Memory ---" "--- 4. Disk (file-backed, $dir) ---"; do
		[[ "$output" == *$'\n'"$l"* ]] || { echo "missing: $l"; false; }
	done
	n=$(nproc)
	grep -Eq '^  threads=1 +[0-9]+\.[0-9]{2} events/s   95th [0-9]+\.[0-9]{2} ms$' <<<"$output"
	grep -Eq "^  threads=$n +[0-9]+\.[0-9]{2} events/s   95th [0-9]+\.[0-9]{2} ms$" <<<"$output"
	grep -Eq "^  random write, $n threads?: [0-9]+\.[0-9]{2} MiB/sec$" <<<"$output"
	for row in "randrw 70/30 4k    read " "randrw 70/30 4k    write" "randread 4k        read " \
		"seqread 1M         read " "seqwrite 1M        write"; do
		grep -Eq "^  $row +[0-9,]+ IOPS +[0-9,]+ MiB/s   p99 +[0-9]+\.[0-9]{2} ms$" <<<"$output" ||
			{ echo "missing row: $row"; false; }
	done
	json=("$BATS_TEST_TMPDIR"/res/t-quick/*-run1.json)
	[ "${#json[@]}" -eq 1 ] && [ -f "${json[0]}" ]
	[ "${lines[-1]}" = "  json       ${json[0]}" ]
	check_json "${json[0]}" 1 1 true t-quick "$dir"
	# The fio files and the temporary names are gone.
	[ -z "$(ls -A "$dir")" ]
	[ "$(ls -A "$BATS_TEST_TMPDIR/res/t-quick")" = "$(basename "${json[0]}")" ]
}

@test "--require-mount on a mount point of its own, --runs 2 --json-only: two files" {
	mount_ext4 vol 256
	run --separate-stderr "$SCRIPT" --quick --runs 2 --json-only --require-mount \
		--dir "$MNT" --results "$BATS_TEST_TMPDIR/res" --tag=t-runs
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == "$BATS_TEST_TMPDIR/res/t-runs/"*-run1.json ]]
	[[ "${lines[1]}" == "$BATS_TEST_TMPDIR/res/t-runs/"*-run2.json ]]
	check_json "${lines[0]}" 1 2 true t-runs "$MNT"
	check_json "${lines[1]}" 2 2 true t-runs "$MNT"
	files=("$BATS_TEST_TMPDIR"/res/t-runs/*)
	[ "${#files[@]}" -eq 2 ]
	[ "$(ls -A "$MNT")" = lost+found ]
}

@test "--require-mount refuses a directory that is not a mount point (1)" {
	mkdir "$BATS_TEST_TMPDIR/plain"
	run --separate-stderr "$SCRIPT" --quick --require-mount --dir "$BATS_TEST_TMPDIR/plain" \
		--results "$BATS_TEST_TMPDIR/res"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[ "$stderr" = "spx-bench.sh: $BATS_TEST_TMPDIR/plain is not a mount point; mount a dedicated volume there (the guest's root is too small to benchmark)" ]
	[ ! -e "$BATS_TEST_TMPDIR/res" ]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/plain")" ]
}

# The mount check passes for / (its own parent) and for a bind mount (same
# device as its parent); an impossible file size then stops the run at the
# free-space check, before anything is written.
@test "--require-mount takes / and a bind mount as mount points" {
	for d in / "$BATS_TEST_TMPDIR/bind"; do
		if [ "$d" != / ]; then
			[ "$(id -u)" = 0 ] || skip "bind mounts need root"
			mkdir "$d"
			mount --bind "$d" "$d" || skip "cannot bind-mount here"
			MOUNTS+=("$d")
		fi
		SPX_BENCH_FIO_SIZE=9999999T run --separate-stderr "$SCRIPT" --require-mount --dir "$d" \
			--results "$BATS_TEST_TMPDIR/res"
		[ "$status" -eq 111 ]
		[ -z "$output" ]
		[[ "$stderr" == "spx-bench.sh: fio: no space left on device under $d (needs about $((9999999 * 1024 * 1024 * 4)) MiB free, has "*" MiB)" ]]
	done
	[ ! -e "$BATS_TEST_TMPDIR/res" ]
}

@test "a missing sysbench or fio is named, exit 111, before any output" {
	for t in sysbench fio; do
		guest_path "$t"
		run --separate-stderr env PATH="$GUEST_PATH" "$SCRIPT" --quick \
			--dir "$BATS_TEST_TMPDIR" --results "$BATS_TEST_TMPDIR/res"
		[ "$status" -eq 111 ]
		[ -z "$output" ]
		[ "$stderr" = "spx-bench.sh: $t is not installed (apt-get install $t)" ]
	done
	[ ! -e "$BATS_TEST_TMPDIR/res" ]
}

@test "too little room for the fio files is refused before measuring (111)" {
	mount_ext4 small 20
	SPX_BENCH_FIO_SIZE=64M run --separate-stderr "$SCRIPT" --quick --dir "$MNT" \
		--results "$BATS_TEST_TMPDIR/res"
	[ "$status" -eq 111 ]
	[ -z "$output" ]
	[[ "$stderr" =~ ^"spx-bench.sh: fio: no space left on device under $MNT (needs about 256 MiB free, has "[0-9]+" MiB)"$ ]]
	[ "$(ls -A "$MNT")" = lost+found ]
}

@test "fio running out of space (ENOSPC) is reported as such (111)" {
	mount_ext4 filled 20
	# The space is there at the check, and gone by the time fio runs: fill
	# the file system once the script has made its directory (it then
	# spends seconds on CPU and memory).
	SPX_BENCH_FIO_SIZE=2M "$SCRIPT" --quick --dir "$MNT" --results "$BATS_TEST_TMPDIR/res" \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	BG=$!
	for _ in $(seq 200); do
		compgen -G "$MNT/.spx-bench.*" >/dev/null && break
		sleep 0.05
	done
	dd if=/dev/zero of="$MNT/fill" bs=1M status=none 2>/dev/null || true
	status=0
	wait "$BG" || status=$?
	BG=
	[ "$status" -eq 111 ]
	[ "$(cat "$BATS_TEST_TMPDIR/err")" = "spx-bench.sh: fio: no space left on device under $MNT (needs about 8 MiB free)" ]
	grep -q '^--- 3. Memory ---' "$BATS_TEST_TMPDIR/out"
	[ "$(ls -A "$MNT")" = "fill
lost+found" ]
	[ ! -e "$BATS_TEST_TMPDIR/res" ]
}

@test "bad arguments are usage errors (100) with one line on stderr" {
	long=$(printf 'x%.0s' $(seq 65))
	for args in "--runs 0" "--runs 101" "--runs x" "--runs 010" "--runs=" "--runs" \
		"--tag ''" "--tag=" "--tag a/b" "--tag .." "--tag 'a b'" "--tag $long" \
		"--quick=1" "--bogus" "extra" "-- extra" "--dir ''" "--results ''"; do
		eval "set -- $args"
		run --separate-stderr "$SCRIPT" --dir "$BATS_TEST_TMPDIR" \
			--results "$BATS_TEST_TMPDIR/res" "$@"
		[ "$status" -eq 100 ] || { echo "args: $args -> $status $stderr"; false; }
		[ -z "$output" ]
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ "$stderr" == "spx-bench.sh: "* ]]
	done
	for size in 10 512K 1.5G 64MB -1M; do
		SPX_BENCH_FIO_SIZE=$size run --separate-stderr "$SCRIPT" --dir "$BATS_TEST_TMPDIR"
		[ "$status" -eq 100 ] || { echo "size: $size -> $status $stderr"; false; }
		[[ "$stderr" == "spx-bench.sh: bad SPX_BENCH_FIO_SIZE '$size'"* ]]
	done
	run --separate-stderr "$SCRIPT" --bogus
	[ "$stderr" = "spx-bench.sh: unknown option '--bogus' (see --help)" ]
	run --separate-stderr "$SCRIPT" --runs 0
	[ "$stderr" = "spx-bench.sh: bad run count '0' (want 1 to 100)" ]
	[ ! -e "$BATS_TEST_TMPDIR/res" ]
}

@test "--dir that does not exist is a negative answer (1)" {
	run --separate-stderr "$SCRIPT" --quick --dir "$BATS_TEST_TMPDIR/nope" \
		--results "$BATS_TEST_TMPDIR/res"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[ "$stderr" = "spx-bench.sh: '$BATS_TEST_TMPDIR/nope' does not exist" ]
}

@test "--help prints the usage; a write error on stdout is a failure (111)" {
	run --separate-stderr "$SCRIPT" --help
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ "${lines[0]}" == "usage: spx-bench.sh [--tag T] [--runs N] [--dir DIR] [--results DIR]" ]]
	for w in --require-mount --quick --json-only BENCHDIR SPX_BENCH_RESULTS SPX_BENCH_FIO_SIZE; do
		[[ "$output" == *"$w"* ]]
	done
	[ -w /dev/full ] || skip "no /dev/full"
	run --separate-stderr bash -c '"$0" --help >/dev/full' "$SCRIPT"
	[ "$status" -eq 111 ]
	[ "$stderr" = "spx-bench.sh: cannot write to standard output" ]
}
