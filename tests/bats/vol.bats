#!/usr/bin/env bats
# spx-vol: every verb and its errors, the bytes through NBD (spx-vol cat
# and write, qemu-io, nbdinfo), thin provisioning, TRIM and zeroing, the
# serve service under spx up, kill -9 of the server mid-stream, and a
# full host disk.

load helpers

setup() {
	make_node
	SOCK="$ROOT/run/vol.sock"
}

teardown() {
	[ -n "${BG_PID:-}" ] && kill -9 $BG_PID 2>/dev/null
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	stop_node
	true
}

# json FIELD: one field of the first object in the JSON array on stdin.
field() {
	python3 -c 'import json,sys; print(json.load(sys.stdin)[0][sys.argv[1]])' "$1"
}

# Start spx-vol serve on the node in the background; wait until it serves.
serve() {
	spx-vol serve --root "$ROOT" "$@" 2>>"$BATS_TEST_TMPDIR/serve.log" &
	SERVE_PID=$!
	# Served once the socket accepts and has its mode (sockmode): nbdkit
	# binds it with a mode of its own first, spx-vol then sets it.
	wait_for 10 served
}

# The socket's mode: the node's user's only (0600); as root, any local
# process's, for the guests' QEMU users, the plugin deciding per export.
sockmode() { if [ "$(id -u)" = 0 ]; then echo 666; else echo 600; fi; }

served() {
	nbdinfo --list "nbd+unix:///?socket=$SOCK" >/dev/null 2>&1 &&
		[ "$(stat -c %a "$SOCK")" = "$(sockmode)" ]
}

uri() { echo "nbd+unix:///$1?socket=$SOCK"; }

@test "create, ls, info, resize, rm" {
	run spx-vol create --root "$ROOT" --size 30G
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^vol-[0-9a-f]{17}$ ]]
	v=$output
	run spx-vol create --root "$ROOT" --size 1M --json
	[ "$status" -eq 0 ]
	w=$(echo "$output" | field id)
	[ "$(echo "$output" | field size)" = 1048576 ]
	[ "$(echo "$output" | field allocated)" = 0 ]
	run spx-vol ls --root "$ROOT"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "ID                    | SIZE | ALLOCATED | CREATED" ]
	[ "${#lines[@]}" -eq 3 ]
	echo "$output" | grep -q "^$v | 30G  | 0 "
	run spx-vol ls --root "$ROOT" --json
	echo "$output" | python3 -c '
import json, sys
v = json.load(sys.stdin)
ids = [x["id"] for x in v]
assert ids == sorted(ids) and set(ids) == set(sys.argv[1:]), v
assert {x["size"] for x in v} == {30 << 30, 1 << 20}, v
' "$v" "$w"
	run spx-vol info --root "$ROOT" "$v" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | field size)" = $((30 << 30)) ]
	# A volume grows, and only grows.
	run spx-vol resize --root "$ROOT" "$v" 40G
	[ "$status" -eq 0 ]
	[ "$(spx-vol info --root "$ROOT" "$v" --json | field size)" = $((40 << 30)) ]
	run spx-vol resize --root "$ROOT" "$v" 40G --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | field size)" = $((40 << 30)) ]
	run spx-vol resize --root "$ROOT" "$v" 1G
	[ "$status" -eq 100 ]
	[[ "$output" == *"a volume only grows"* ]]
	[ "$(spx-vol info --root "$ROOT" "$v" --json | field size)" = $((40 << 30)) ]
	# The data file is sparse: 40G provisioned, nothing allocated.
	[ "$(stat -c %b "$ROOT/data/vol/$v/data")" -eq 0 ]
	run spx-vol rm --root "$ROOT" "$v"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/data/vol/$v" ]
	run spx-vol ls --root "$ROOT" --json
	[ "$(echo "$output" | field id)" = "$w" ]
	# A chosen id.
	run spx-vol create --root "$ROOT" --size 4K --id vol-00000000000000001
	[ "$status" -eq 0 ]
	[ "$output" = vol-00000000000000001 ]
}

@test "bad sizes, ids and unknown volumes: a message, a status, no change" {
	for s in 0 1.5G 10Q -1 '' 1000 65T 99999999999999999999 ' 1G' 1G,; do
		run spx-vol create --root "$ROOT" --size "$s"
		[ "$status" -eq 100 ] || { echo "size '$s' gave $status"; false; }
		[[ "$output" == "spx-vol: create: "* ]]
	done
	run spx-vol create --root "$ROOT"
	[ "$status" -eq 100 ]
	[ "$output" = "spx-vol: create: --size is required (e.g. --size 30G)" ]
	run spx-vol ls --root "$ROOT" --json
	[ "$output" = "[]" ]
	for id in nope vol-1 vol-0123456789ABCDEF0 ../vol-00000000000000001 \
		vol-00000000000000001/.. 'vol-0000000000000000%00'; do
		for verb in info rm cat; do
			run spx-vol "$verb" --root "$ROOT" "$id"
			[ "$status" -eq 100 ] || { echo "$verb '$id' gave $status"; false; }
			[[ "$output" == *"is not a volume id"* ]]
		done
	done
	for verb in info rm cat write; do
		run spx-vol "$verb" --root "$ROOT" vol-0123456789abcdef0 </dev/null
		[ "$status" -eq 1 ]
		[ "$output" = "spx-vol: $verb: no volume 'vol-0123456789abcdef0'" ]
	done
	run spx-vol resize --root "$ROOT" vol-0123456789abcdef0 1G
	[ "$status" -eq 1 ]
	v=$(spx-vol create --root "$ROOT" --size 1M)
	run spx-vol create --root "$ROOT" --size 1M --id "$v"
	[ "$status" -eq 1 ]
	[ "$output" = "spx-vol: create: volume '$v' exists" ]
	run spx-vol resize --root "$ROOT" "$v" 1.5M
	[ "$status" -eq 100 ]
	run spx-vol resize --root "$ROOT" "$v" 65T
	[ "$status" -eq 100 ]
	[ "$(spx-vol info --root "$ROOT" "$v" --json | field size)" = 1048576 ]
	# Leftovers that are not volumes are not listed.
	mkdir "$ROOT/data/vol/vol-11111111111111111" "$ROOT/data/vol/junk"
	echo '{' >"$ROOT/data/vol/vol-11111111111111111/vol.json"
	spx-vol ls --root "$ROOT" --json >"$BATS_TEST_TMPDIR/ls" 2>"$BATS_TEST_TMPDIR/err"
	[ "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$BATS_TEST_TMPDIR/ls")" = 1 ]
	# The corrupt one is named, so an operator can look.
	grep -q "vol-11111111111111111/vol.json' is corrupt" "$BATS_TEST_TMPDIR/err"
}

@test "write and cat through a private nbdkit: bytes back, zeros stay thin" {
	v=$(spx-vol create --root "$ROOT" --size 8M)
	head -c 3000000 /dev/urandom >"$BATS_TEST_TMPDIR/r"
	run spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 0 ]
	spx-vol cat --root "$ROOT" "$v" >"$BATS_TEST_TMPDIR/back"
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/back")" -eq $((8 << 20)) ]
	cmp -n 3000000 "$BATS_TEST_TMPDIR/r" "$BATS_TEST_TMPDIR/back"
	cmp -i 3000000 "$BATS_TEST_TMPDIR/back" <(head -c $((8 << 20)) /dev/zero)
	# A stream of zeros writes no blocks (WRITE_ZEROES punches holes).
	w=$(spx-vol create --root "$ROOT" --size 8M)
	head -c $((8 << 20)) /dev/zero | spx-vol write --root "$ROOT" "$w"
	[ "$(spx-vol info --root "$ROOT" "$w" --json | field allocated)" -eq 0 ]
	# Zeros over data clear it, and free it.
	head -c $((8 << 20)) /dev/zero | spx-vol write --root "$ROOT" "$v"
	[ "$(spx-vol info --root "$ROOT" "$v" --json | field allocated)" -eq 0 ]
	cmp <(spx-vol cat --root "$ROOT" "$v") <(head -c $((8 << 20)) /dev/zero)
}

@test "write refuses more bytes than the volume holds" {
	v=$(spx-vol create --root "$ROOT" --size 1M)
	head -c 1M /dev/urandom >"$BATS_TEST_TMPDIR/one"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/one"
	# A file too long: refused before anything is written.
	head -c 1048577 /dev/urandom >"$BATS_TEST_TMPDIR/long"
	run spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/long"
	[ "$status" -eq 100 ]
	[ "$output" = "spx-vol: write: $v: stdin holds 1048577 bytes, the volume 1048576" ]
	cmp <(spx-vol cat --root "$ROOT" "$v") "$BATS_TEST_TMPDIR/one"
	# A pipe too long: found out at the end of the volume.
	run bash -c "cat '$BATS_TEST_TMPDIR/long' | spx-vol write --root '$ROOT' $v"
	[ "$status" -eq 100 ]
	[[ "$output" == *"stdin is longer than the volume (1048576 bytes)"* ]]
}

@test "serve: one socket for every volume, for this user only, with the NBD features" {
	v=$(spx-vol create --root "$ROOT" --size 64M)
	w=$(spx-vol create --root "$ROOT" --size 1M)
	serve
	# serve sets its mode once it answers, which may be just after the
	# probe above succeeded.
	wait_for 5 bash -c "[ \"\$(stat -c %a '$SOCK')\" = $(sockmode) ]"
	run nbdinfo --list --json "nbd+unix:///?socket=$SOCK"
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
e = {x["export-name"]: x for x in d["exports"]}
assert set(e) == set(sys.argv[1:3]), e
x = e[sys.argv[1]]
assert x["export-size"] == 64 << 20, x
for k in ("can_flush", "can_fua", "can_trim", "can_zero", "can_fast_zero",
          "can_multi_conn", "can_cache"):
    assert x[k] is True, k
assert x["is_read_only"] is False and x["is_rotational"] is False, x
assert "base:allocation" in x["contexts"], x
' "$v" "$w"
	# A second server on the same socket is refused; the first serves on.
	run spx-vol serve --root "$ROOT"
	[ "$status" -eq 1 ]
	[[ "$output" == *"is being served already"* ]]
	nbdinfo --size "$(uri "$v")"
	# An unknown export is refused by the server.
	run nbdinfo --size "$(uri vol-0123456789abcdef0)"
	[ "$status" -ne 0 ]
	run nbdinfo --size "$(uri ../../etc)"
	[ "$status" -ne 0 ]
	# SIGTERM stops it and takes the socket away.
	kill "$SERVE_PID"
	wait "$SERVE_PID"
	SERVE_PID=
	[ ! -e "$SOCK" ]
}

# qemu_io_features [SERVE OPTIONS]: the NBD features through qemu-io and
# nbdinfo, on a volume served by spx-vol serve with those options.
qemu_io_features() {
	v=$(spx-vol create --root "$ROOT" --size 64M)
	serve "$@"
	# Unaligned writes (through the page cache) between aligned ones
	# (O_DIRECT in spx-nbd): each read sees the last write.
	run qemu-io -f raw -c 'write -P 0x11 2M 64k' -c 'write -P 0x22 2M 512' \
		-c 'read -P 0x22 2M 512' -c 'read -P 0x11 2100k 4k' \
		-c 'write -P 0x33 2M 4k' -c 'read -P 0x33 2M 4k' \
		-c 'write -P 0x44 2049k 100' -c 'read -P 0x44 2049k 100' \
		-c 'read -P 0x33 2048k 1k' "$(uri "$v")"
	[ "$status" -eq 0 ]
	[[ "$output" != *failed* ]]
	run qemu-io -f raw -c 'write -f -P 0xab 0 1M' -c 'write -P 0xcd 1M 1M' \
		-c flush -c 'write -P 0xef 8M 4M' -c flush "$(uri "$v")"
	[ "$status" -eq 0 ]
	[[ "$output" != *failed* ]]
	a=$(spx-vol info --root "$ROOT" "$v" --json | field allocated)
	[ "$a" -ge $((6 << 20)) ]
	# TRIM gives blocks back; WRITE_ZEROES reads as zeros.
	run qemu-io -f raw -c 'discard 8M 4M' -c 'write -z 1M 512k' "$(uri "$v")"
	[ "$status" -eq 0 ]
	b=$(spx-vol info --root "$ROOT" "$v" --json | field allocated)
	[ "$b" -le $((a - (4 << 20))) ]
	run qemu-io -f raw -r -c 'read -P 0xab 0 1M' -c 'read -P 0 1M 512k' \
		-c 'read -P 0xcd 1536k 512k' -c 'read -P 0 8M 4M' "$(uri "$v")"
	[ "$status" -eq 0 ]
	[[ "$output" != *failed* ]]
	# Block status: the trimmed range is a hole, the written one data.
	run nbdinfo --map --json "$(uri "$v")"
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
m = json.load(sys.stdin)
def at(off):
    return next(e for e in m if e["offset"] <= off < e["offset"] + e["length"])
assert at(0)["type"] == 0, m                  # data
assert at(9 << 20)["type"] & 1, m             # hole
assert at(63 << 20)["type"] == 3, m           # hole, zero
'
	# The same bytes through spx-vol cat on the running server.
	spx-vol cat --root "$ROOT" --socket "$SOCK" "$v" | cmp -n $((1 << 20)) - <(head -c 1M /dev/zero | tr '\0' '\253')
}

@test "qemu-io over NBD: FUA, flush, TRIM, WRITE_ZEROES and block status" {
	qemu_io_features
}

@test "spx-nbd and hostile NBD clients: errors for bad options and requests, a silent one timed out, the server serves on" {
	v=$(spx-vol create --root "$ROOT" --size 64M)
	SPX_NBD_HANDSHAKE_S=2 serve
	run python3 "$SPX_TOP/tests/bats/fixtures/nbd-hostile.py" "$SOCK" "$v"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *FAIL* ]]
	# A client that never says a word is closed after the handshake's
	# time (2 s here, 30 s unless SPX_NBD_HANDSHAKE_S says).
	run python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(20)
t = time.monotonic()
s.recv(18)
print(s.recv(1) == b"", round(time.monotonic() - t))
' "$SOCK"
	[ "$status" -eq 0 ]
	[[ "$output" == "True "[1-9]* ]]
	nbdinfo --size "$(uri "$v")"
	qemu-io -f raw -c 'write -P 0x5a 4096 4096' -c 'read -P 0x5a 4096 4096' "$(uri "$v")" | grep -vq failed
	# A handshake time that is not whole seconds from 1 to 3600 is
	# refused, by name, before anything is served.
	for bad in 0 3601 2s -1 ' 5'; do
		run env SPX_NBD_HANDSHAKE_S="$bad" "$SPX_BUILD/lib/spx-nbd" \
			-U "$BATS_TEST_TMPDIR/hs.sock" dir="$ROOT/data/vol"
		[ "$status" -eq 100 ]
		[[ "$output" == *"SPX_NBD_HANDSHAKE_S '$bad' is out of range 1..3600"* ||
			"$output" == *"invalid SPX_NBD_HANDSHAKE_S '$bad'"* ]]
		[ ! -e "$BATS_TEST_TMPDIR/hs.sock" ]
	done
}

@test "spx-nbd without io_uring: nbdkit serves in its place, and the log says why" {
	v=$(spx-vol create --root "$ROOT" --size 4M)
	SPX_NBD_URING=0 serve
	qemu-io -f raw -c 'write -P 0x5a 0 64k' -c 'read -P 0x5a 0 64k' "$(uri "$v")" | grep -vq failed
	grep -q "io_uring is not available (SPX_NBD_URING=0): serving with nbdkit instead" "$BATS_TEST_TMPDIR/serve.log"
	pgrep -P "$SERVE_PID" nbdkit
}

@test "the same through nbdkit (ebs.server = nbdkit)" {
	qemu_io_features --server nbdkit
	pgrep -P "$SERVE_PID" nbdkit
	run spx-vol serve --root "$ROOT" --server qemu
	[ "$status" -eq 100 ]
	[[ "$output" == *"must be spx or nbdkit, not 'qemu'"* ]]
}

# acked N: have N writes been acknowledged?
acked() {
	[ "$(wc -l <"$log")" -ge "$1" ]
}

@test "kill -9 of the server mid-stream, many times: every flushed write intact" {
	v=$(spx-vol create --root "$ROOT" --size 256M)
	log="$BATS_TEST_TMPDIR/acked"
	: >"$log"
	i=0
	for round in 1 2 3 4 5 6; do
		serve
		# A stream of 64 KiB writes, FUA or write+flush in turn; each
		# one is logged only once the server acknowledged it durable.
		(
			j=$i
			while :; do
				p=$((j % 255 + 1))
				if [ $((j % 2)) -eq 0 ]; then
					out=$(qemu-io -f raw -c "write -f -P $p $((j * 65536)) 64k" "$(uri "$v")" 2>&1) || exit 0
				else
					out=$(qemu-io -f raw -c "write -P $p $((j * 65536)) 64k" -c flush "$(uri "$v")" 2>&1) || exit 0
				fi
				case "$out" in *failed* | *rror*) exit 0 ;; esac
				echo "$j" >>"$log"
				j=$((j + 1))
			done
		) &
		writer=$!
		want=$((i + 10))
		wait_for 30 acked "$want"
		# Both at once, the server and its supervisor: stopped first,
		# so neither sees the other die (spx-vol serve removes the
		# socket once its server is gone), then killed.
		kids=$(pgrep -P "$SERVE_PID" spx-nbd)
		[ -n "$kids" ]
		kill -STOP $kids "$SERVE_PID"
		kill -9 $kids "$SERVE_PID"
		wait "$SERVE_PID" 2>/dev/null || true
		SERVE_PID=
		wait "$writer"
		i=$(wc -l <"$log")
	done
	# The stale socket of a killed server does not stop the next one.
	[ -S "$SOCK" ]
	serve
	cmds=()
	while read -r j; do
		cmds+=(-c "read -P $((j % 255 + 1)) $((j * 65536)) 64k")
	done <"$log"
	[ "${#cmds[@]}" -ge 120 ]
	run qemu-io -f raw -r "${cmds[@]}" "$(uri "$v")"
	[ "$status" -eq 0 ]
	[[ "$output" != *failed* ]]
}

@test "a full host disk: ENOSPC for the new blocks, what was written stays" {
	# The store on a 16 MiB tmpfs in a mount namespace of this test: a
	# disk that fills.
	unshare -m true 2>/dev/null || skip "no mount namespaces here"
	mkdir -p "$ROOT/data/vol"
	head -c 8M /dev/urandom >"$BATS_TEST_TMPDIR/data"
	cat >"$BATS_TEST_TMPDIR/full.sh" <<-'EOF'
	set -u
	mount -t tmpfs -o size=16M tmpfs "$ROOT/data/vol" || exit 3
	spx-vol create --root "$ROOT" --size 64M --id "$V" >/dev/null || exit 4
	spx-vol write --root "$ROOT" "$V" <"$DATA" || exit 5
	spx-vol serve --root "$ROOT" 2>/dev/null &
	s=$!
	for i in $(seq 500); do
		nbdinfo --size "$URI" >/dev/null 2>&1 && break
		sleep 0.02
	done
	# 16 MiB more where 8 MiB are free.
	qemu-io -f raw -c "write -P 0x55 8M 16M" "$URI"
	echo "status $?"
	# Blocks the volume holds are still written in place.
	qemu-io -f raw -c "write -s $DATA 0 64k" -c flush "$URI" >/dev/null
	echo "status $?"
	kill $s
	wait $s
	spx-vol cat --root "$ROOT" "$V" >"$BACK"
	echo "status $?"
	EOF
	run env ROOT="$ROOT" V=vol-00000000000000002 DATA="$BATS_TEST_TMPDIR/data" \
		BACK="$BATS_TEST_TMPDIR/back" URI="$(uri vol-00000000000000002)" \
		PATH="$PATH" unshare -m bash "$BATS_TEST_TMPDIR/full.sh"
	echo "$output"
	[ "${lines[0]}" = "write failed: No space left on device" ]
	[ "${lines[1]}" = "status 1" ]
	[ "${lines[2]}" = "status 0" ]
	[ "${lines[3]}" = "status 0" ]
	# The first 8 MiB as written; after them only the new bytes or zeros.
	cmp -n 8M "$BATS_TEST_TMPDIR/back" "$BATS_TEST_TMPDIR/data"
	python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
assert len(b) == 64 << 20
assert set(b[8 << 20:]) <= {0, 0x55}, set(b[8 << 20:])
assert b[8 << 20] == 0x55
' "$BATS_TEST_TMPDIR/back"
}

@test "served as root, a volume opens to another uid only while SOCKET.grants names it; a bad grant refuses, the server serves on" {
	[ "$(id -u)" = 0 ] || skip "the socket is this user's alone when not root"
	v=$(spx-vol create --root "$ROOT" --size 4M)
	w=$(spx-vol create --root "$ROOT" --size 4M)
	start_node
	chmod o+x "$ROOT/run"
	u=2113999999
	as_u() { setpriv --reuid "$u" --regid "$u" --clear-groups qemu-img info "$(uri "$1")"; }
	run as_u "$v"
	[ "$status" -ne 0 ]
	[[ "$output" != *"virtual size"* ]]
	wait_for 10 grep -q "spx-nbd: .*$v: refused to uid $u (not granted to it)" "$ROOT/log/vol.log"
	# Refused before it is looked up: no volume is not told apart.
	run as_u vol-0123456789abcdef0
	[ "$status" -ne 0 ]
	wait_for 10 grep -q "vol-0123456789abcdef0: refused to uid $u" "$ROOT/log/vol.log"
	mkdir -p -m 0700 "$SOCK.grants"
	echo "$u g1" >"$SOCK.grants/$v"
	run as_u "$v"
	[ "$status" -eq 0 ]
	[[ "$output" == *"virtual size: 4 MiB"* ]]
	run as_u "$w"
	[ "$status" -ne 0 ]
	for bad in "$((u + 1)) g1" "$u" "0$u g1" "$u G1" "$(head -c 200 /dev/zero | tr '\0' 1) g1"; do
		echo "$bad" >"$SOCK.grants/$w"
		run as_u "$w"
		[ "$status" -ne 0 ]
	done
	rm "$SOCK.grants/$v"
	run as_u "$v"
	[ "$status" -ne 0 ]
	# Root opens any, and the server lives on.
	qemu-img info "$(uri "$w")" >/dev/null
	[ "$(spx status --root "$ROOT" --json | python3 -c 'import json,sys; print({x["service"]: x for x in json.load(sys.stdin)}["vol"]["restarts"])')" = 0 ]
}

@test "served as root, a grant taken away or given to another uid cuts off the connection it let in" {
	[ "$(id -u)" = 0 ] || skip "the socket is this user's alone when not root"
	v=$(spx-vol create --root "$ROOT" --size 4M)
	start_node
	chmod o+x "$ROOT/run"
	u=2113999997
	mkdir -p -m 0700 "$SOCK.grants"
	# session N UID: qemu-io as UID on the volume, its commands from
	# fd N (a fifo; bats has 3), its output (by line) in out.N.
	session() {
		mkfifo "$BATS_TEST_TMPDIR/in.$1"
		setpriv --reuid "$2" --regid "$2" --clear-groups stdbuf -oL qemu-io -f raw "$(uri "$v")" \
			<"$BATS_TEST_TMPDIR/in.$1" >"$BATS_TEST_TMPDIR/out.$1" 2>&1 &
		BG_PID="${BG_PID:-} $!"
		eval "exec $1>'$BATS_TEST_TMPDIR/in.$1'"
	}
	said() { grep -o -- "$2" "$BATS_TEST_TMPDIR/out.$1" | wc -l; }
	more() { [ "$(said "$1" "$2")" -gt "$3" ]; }
	# ask N COMMAND ANSWER: one command (qemu-io reads a line when
	# its input becomes readable), then wait for its answer.
	ask() {
		local n
		n=$(said "$1" "$3")
		echo "$2" >&"$1"
		wait_for 10 more "$1" "$3" "$n" || { cat "$BATS_TEST_TMPDIR/out.$1"; false; }
	}
	echo "$u g1" >"$SOCK.grants/$v"
	session 7 "$u"
	ask 7 "write -P 0x11 0 64k" "wrote 65536/65536"
	ask 7 "read -P 0x11 0 64k" "read 65536/65536"
	# The volume goes to another guest: the first one's connection is
	# refused from the next request on, a write changes nothing.
	echo "$((u + 1)) g2" >"$SOCK.grants/$v.new"
	mv "$SOCK.grants/$v.new" "$SOCK.grants/$v"
	wait_for 10 grep -q "spx-nbd: .*$v: the grant to uid $u is gone" "$ROOT/log/vol.log"
	ask 7 "read 0 64k" "read failed: Operation not permitted"
	ask 7 "write -P 0x22 0 64k" "write failed: Operation not permitted"
	ask 7 "discard 0 64k" "discard failed: Operation not permitted"
	# Granted to it again, the cut connection stays cut.
	echo "$u g1" >"$SOCK.grants/$v"
	ask 7 "read 0 64k" "read failed: Operation not permitted"
	[ "$(said 7 "read failed: Operation not permitted")" -eq 2 ]
	exec 7>&-
	# The other guest's connection; removing its grant cuts it.
	echo "$((u + 1)) g2" >"$SOCK.grants/$v"
	session 8 "$((u + 1))"
	ask 8 "read -P 0x11 0 64k" "read 65536/65536"
	# The directory exchanged for another with the same grant (in one
	# rename: RENAME_EXCHANGE): the new one is watched.
	mkdir -m 0700 "$SOCK.grants.new"
	cp "$SOCK.grants/$v" "$SOCK.grants.new/$v"
	python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
if libc.renameat2(AT_FDCWD, sys.argv[1].encode(), AT_FDCWD, sys.argv[2].encode(), RENAME_EXCHANGE):
    sys.exit(os.strerror(ctypes.get_errno()))
' "$SOCK.grants.new" "$SOCK.grants"
	ask 8 "read -P 0x11 0 64k" "read 65536/65536"
	rm "$SOCK.grants/$v"
	wait_for 10 grep -q "spx-nbd: .*$v: the grant to uid $((u + 1)) is gone" "$ROOT/log/vol.log"
	ask 8 "write -P 0x33 0 64k" "write failed: Operation not permitted"
	exec 8>&-
	rm -r "$SOCK.grants.new"
	# Root's connections are not cut, and find the first bytes.
	qemu-io -f raw -r -c "read -P 0x11 0 64k" "$(uri "$v")" >/dev/null
	[ "$(spx status --root "$ROOT" --json | python3 -c 'import json,sys; print({x["service"]: x for x in json.load(sys.stdin)}["vol"]["restarts"])')" = 0 ]
}

@test "served as root, another user's idle connections are bounded: the server's threads stay few, a guest is served" {
	[ "$(id -u)" = 0 ] || skip "the socket is this user's alone when not root"
	v=$(spx-vol create --root "$ROOT" --size 4M)
	start_node
	chmod o+x "$ROOT/run"
	pid=$(cat "$ROOT/run/vol.pid")
	srv=$(pgrep -P "$pid" spx-nbd)
	threads() { ls "/proc/$srv/task" | wc -l; }
	base=$(threads)
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 for another user to run"
	u=2113999995
	# hold N: as uid u, open N connections and keep them open without a
	# word until fd 7 closes; print how many got the server's greeting and
	# how many were closed unanswered (refused).
	mkfifo "$BATS_TEST_TMPDIR/in"
	hold() {
		setpriv --reuid "$u" --regid "$u" --clear-groups /usr/bin/python3 -c '
import socket, sys
held = refused = 0
socks = []
for i in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.settimeout(10)
    b = s.recv(18)
    if len(b) == 18 and b.startswith(b"NBDMAGIC"):
        held += 1
        socks.append(s)
    elif not b:
        refused += 1
        s.close()
print(held, refused, flush=True)
sys.stdin.read()
' "$SOCK" "$1" <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/held" &
		BG_PID=$!
		exec 7>"$BATS_TEST_TMPDIR/in"
	}
	counted() { [ -s "$BATS_TEST_TMPDIR/held" ]; }
	hold 100
	wait_for 30 counted
	[ "$(cat "$BATS_TEST_TMPDIR/held")" = "64 36" ]
	# One thread a connection held, none for the refused.
	[ "$(threads)" -le $((base + 64 + 4)) ]
	grep -q "spx-nbd: .*refused a connection of uid $u: 64 of its own are open" "$ROOT/log/vol.log"
	# A guest (another uid) is served meanwhile, and root.
	mkdir -p -m 0700 "$SOCK.grants"
	echo "$((u + 1)) g1" >"$SOCK.grants/$v"
	setpriv --reuid "$((u + 1))" --regid "$((u + 1))" --clear-groups qemu-io -f raw -c "write -P 0x11 0 64k" "$(uri "$v")" >/dev/null
	qemu-io -f raw -r -c "read -P 0x11 0 64k" "$(uri "$v")" >/dev/null
	# Closed, they give their places back.
	exec 7>&-
	wait "$BG_PID"
	BG_PID=
	few() { [ "$(threads)" -le $((base + 4)) ]; }
	wait_for 10 few
	rm "$BATS_TEST_TMPDIR/held"
	hold 1
	wait_for 30 counted
	[ "$(cat "$BATS_TEST_TMPDIR/held")" = "1 0" ]
	exec 7>&-
	wait "$BG_PID"
	BG_PID=
}

@test "the server stopped and started under QEMU's NBD client, five times: its writes wait for the new server, none fails" {
	v=$(spx-vol create --root "$ROOT" --size 64M)
	serve
	out=$BATS_TEST_TMPDIR/qemu-io
	# QEMU's NBD driver as spx-vm gives it a guest's disk (lib/vm/vm.c:
	# reconnect-delay), writing without a pause until told to stop.
	(
		j=0
		while [ ! -e "$BATS_TEST_TMPDIR/enough" ]; do
			echo "write -P $((j % 255 + 1)) $((j % 4096 * 4096)) 4k"
			j=$((j + 1))
		done
	) | qemu-io --image-opts "driver=nbd,server.type=unix,server.path=$SOCK,export=$v,reconnect-delay=60" >"$out" 2>&1 &
	q=$!
	# Killed by teardown if the test fails: its writer then ends too,
	# rather than feeding it for ever (bats would wait for both).
	BG_PID=$q
	# 0 before qemu-io's output file is there (the background job
	# opens it when it gets to it).
	wrote() { local n; n=$(grep -c "wrote 4096/4096" "$out" 2>/dev/null); echo "${n:-0}"; }
	more_than() { [ "$(wrote)" -gt "$1" ]; }
	for round in 1 2 3 4 5; do
		# Generous: a loaded CI machine (TCG guests beside) once took
		# more than 30 s.
		wait_for 60 more_than "$(wrote)"
		kill "$SERVE_PID"
		wait "$SERVE_PID" || true
		SERVE_PID=
		serve
	done
	wait_for 60 more_than "$(wrote)"
	touch "$BATS_TEST_TMPDIR/enough"
	BG_PID=
	wait "$q" || { grep -viE "^(qemu-io> )*wrote|^4 KiB" "$out" | sort | uniq -c | head; false; }
	# nbdkit stopped with SIGTERM answers what it reads then with
	# ESHUTDOWN, which QEMU hands to the guest ("Cannot send after
	# transport endpoint shutdown"); spx-vol serve kills it instead.
	! grep -iE "failed|error|shutdown" "$out"
	[ "$(wrote)" -gt 5 ]
}

@test "spx up serves the volumes: a supervised service, restarted if killed" {
	v=$(spx-vol create --root "$ROOT" --size 4M)
	start_node
	run spx status --root "$ROOT"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q "^vol  *| running .*| nbd+unix:///?socket=$SOCK\$"
	[ "$(stat -c %a "$SOCK")" = "$(sockmode)" ]
	# The server's errors reach the service log, with a timestamp.
	! nbdinfo --size "$(uri vol-0123456789abcdef0)" 2>/dev/null
	wait_for 10 grep -q "Z spx-vol: warn: spx-nbd: .*no volume 'vol-0123456789abcdef0'" "$ROOT/log/vol.log"
	qemu-io -f raw -c 'write -f -P 7 0 4M' "$(uri "$v")"
	old=$(cat "$ROOT/run/vol.pid")
	pkill -9 -P "$old" spx-nbd
	wait_for 20 bash -c "[ \"\$(cat '$ROOT/run/vol.pid')\" != $old ] && nbdinfo --size '$(uri "$v")' >/dev/null 2>&1"
	qemu-io -f raw -r -c 'read -P 7 0 4M' "$(uri "$v")" | grep -vq failed
	run spx status --root "$ROOT" --json
	echo "$output" | python3 -c '
import json, sys
s = {x["service"]: x for x in json.load(sys.stdin)}
assert s["vol"]["restarts"] == 1, s
'
	stop_node
	[ ! -e "$SOCK" ]
}
