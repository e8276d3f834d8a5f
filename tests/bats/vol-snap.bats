#!/usr/bin/env bats
# spx-vol snapshot | snapshots | snapshot-rm | snapshot-gc | restore: the
# data through NBD (qemu-io, nbdcopy, spx-vol cat) byte for byte, what an
# incremental snapshot reads and stores, deleting a middle snapshot, a
# snapshot that keeps to its moment while a guest writes, kill -9 of a
# snapshot mid-upload, a lazy restore that waits out an unreachable
# store, the reserved bucket through the S3 API, and hostile input.

load helpers

setup() {
	make_node
	SOCK="$ROOT/run/vol.sock"
	BUCKET=sthree-spx-snapshots
}

teardown() {
	[ -n "${BG_PID:-}" ] && kill -9 "$BG_PID" 2>/dev/null
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	if [ -d "$ROOT/data/obj/d0.away" ]; then
		rm -f "$ROOT/data/obj/d0"
		mv "$ROOT/data/obj/d0.away" "$ROOT/data/obj/d0"
	fi
	stop_node
	true
}

# json FIELD: one field of the first object in the JSON array on stdin.
field() {
	python3 -c 'import json,sys; print(json.load(sys.stdin)[0][sys.argv[1]])' "$1"
}

serve() {
	spx-vol serve --root "$ROOT" "$@" 2>>"$BATS_TEST_TMPDIR/serve.log" &
	SERVE_PID=$!
	wait_for 10 nbdinfo --list "nbd+unix:///?socket=$SOCK" >/dev/null 2>&1
}

uri() { echo "nbd+unix:///$1?socket=$SOCK"; }

# The chunks in the snapshot store.
chunks() {
	spx-obj ls --root "$ROOT" "$BUCKET" | grep -c '^c/' || true
}

# qemu-io on a volume through the server; fails on any failed command.
qio() {
	local u=$1 out
	shift
	out=$(qemu-io -f raw "$@" "$(uri "$u")" 2>&1) || { echo "$out"; return 1; }
	case "$out" in *failed* | *rror*) echo "$out"; return 1 ;; esac
}

@test "write a pattern, snapshot, overwrite, restore: byte for byte" {
	v=$(spx-vol create --root "$ROOT" --size 16M)
	serve
	qio "$v" -c 'write -P 0x11 0 4M' -c 'write -P 0x22 5M 1M' -c 'write -P 0x33 15M 1M' -c flush
	nbdcopy "$(uri "$v")" "$BATS_TEST_TMPDIR/a"
	run spx-vol snapshot --root "$ROOT" "$v"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^snap-[0-9a-f]{17}$ ]]
	s1=$output
	# Overwrite, partly with zeros and a trim.
	qio "$v" -c 'write -P 0x44 0 1M' -c 'write -z 5M 1M' -c 'discard 15M 1M' -c 'write -P 0x55 8M 512k' -c flush
	nbdcopy "$(uri "$v")" "$BATS_TEST_TMPDIR/b"
	! cmp -s "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	s2=$(spx-vol snapshot --root "$ROOT" "$v")
	# Restore both, served by the same server at once, read through
	# NBD while they are fetched on demand.
	r1=$(spx-vol restore --root "$ROOT" "$s1")
	r2=$(spx-vol restore --root "$ROOT" "$s2" --size 32M)
	nbdcopy "$(uri "$r1")" "$BATS_TEST_TMPDIR/r1"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/r1"
	qio "$r2" -r -c 'read -P 0x44 0 1M' -c 'read -P 0x11 1M 3M' -c 'read -P 0 5M 1M' \
		-c 'read -P 0x55 8M 512k' -c 'read -P 0 15M 17M'
	[ "$(spx-vol info --root "$ROOT" "$r2" --json | field size)" = $((32 << 20)) ]
	# The copy a restored volume serves is its own: writes stay in it.
	qio "$r1" -c 'write -P 0x66 0 64k' -c flush
	spx-vol cat --root "$ROOT" --socket "$SOCK" "$r1" >"$BATS_TEST_TMPDIR/r1b"
	cmp -n 65536 "$BATS_TEST_TMPDIR/r1b" <(head -c 64k /dev/zero | tr '\0' '\146')
	cmp -i 65536 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/r1b"
	# The same through a private server, and eagerly.
	kill "$SERVE_PID" && wait "$SERVE_PID"
	SERVE_PID=
	r3=$(spx-vol restore --root "$ROOT" "$s1" --eager)
	[ "$(spx-vol info --root "$ROOT" "$r3" --json | field to_fetch)" = 0 ]
	[ "$(spx-vol info --root "$ROOT" "$r3" --json | field restoring)" = None ]
	spx-vol cat --root "$ROOT" "$r3" | cmp - "$BATS_TEST_TMPDIR/a"
	run spx-vol snapshots --root "$ROOT" --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
v = {x["id"]: x for x in json.load(sys.stdin)}
s1, s2 = sys.argv[1:3]
assert set(v) == {s1, s2}, v
assert v[s1]["parent"] is None and v[s2]["parent"] == s1, v
assert v[s1]["size"] == 16 << 20 and v[s1]["chunks"] == 12, v
' "$s1" "$s2"
}

@test "a guest writing while the background filler fetches the same chunks: every write stays" {
	v=$(spx-vol create --root "$ROOT" --size 64M)
	serve
	qio "$v" -c 'write -P 0x11 0 64M' -c flush
	s=$(spx-vol snapshot --root "$ROOT" "$v")
	r=$(spx-vol restore --root "$ROOT" "$s")
	# Open for writing, so the filler starts; 4 KiB at the start of each
	# of the 128 chunks, while it fetches them without their locks.
	cmds=()
	for c in $(seq 0 127); do cmds+=(-c "write -P 0x77 $((c * 524288)) 4k"); done
	qio "$r" "${cmds[@]}" -c flush
	wait_for 60 eval '[ "$(spx-vol info --root "$ROOT" "$r" --json | field to_fetch)" = 0 ]'
	cmds=()
	for c in $(seq 0 127); do
		cmds+=(-c "read -P 0x77 $((c * 524288)) 4k" -c "read -P 0x11 $((c * 524288 + 4096)) 520192")
	done
	qio "$r" -r "${cmds[@]}"
}

@test "an incremental snapshot reads and stores only the changed chunks" {
	v=$(spx-vol create --root "$ROOT" --size 64M)
	head -c 64M /dev/urandom >"$BATS_TEST_TMPDIR/r"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/r"
	run spx-vol snapshot --root "$ROOT" "$v" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | field uploaded)" = 128 ]
	[ "$(echo "$output" | field chunks)" = 128 ]
	s1=$(echo "$output" | field id)
	[ "$(chunks)" = 128 ]
	serve
	# Three chunks rewritten whole (two alike), a 4 KiB write in a
	# fourth, one written with the bytes it had (read, nothing new).
	qio "$v" -c 'write -P 1 0 512k' -c 'write -P 2 10M 1M' -c 'write -P 3 40M 4k'
	dd if="$BATS_TEST_TMPDIR/r" bs=512k skip=100 count=1 status=none |
		qemu-io -f raw -c 'write -s /dev/stdin 50M 512k' "$(uri "$v")" >/dev/null
	run spx-vol snapshot --root "$ROOT" "$v" --json
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(echo "$output" | field parent)" = "$s1" ]
	[ "$(echo "$output" | field incremental)" = True ]
	# Read 5; stored 3: chunks 20 and 21 hold the same bytes (dedup).
	[ "$(echo "$output" | field read)" = 5 ]
	[ "$(echo "$output" | field uploaded)" = 3 ]
	[ "$(echo "$output" | field uploaded_bytes)" = $((3 * 512 * 1024)) ]
	[ "$(chunks)" = 131 ]
	# Nothing written since: nothing read, nothing stored.
	[ "$(spx-vol snapshot --root "$ROOT" "$v" --json | field read)" = 0 ]
	[ "$(chunks)" = 131 ]
	# --full reads every chunk with data and still stores nothing.
	run spx-vol snapshot --root "$ROOT" "$v" --json --full
	[ "$(echo "$output" | field read)" = 128 ]
	[ "$(echo "$output" | field uploaded)" = 0 ]
}

@test "deleting a middle snapshot leaves the others restorable" {
	v=$(spx-vol create --root "$ROOT" --size 8M)
	t=$BATS_TEST_TMPDIR
	head -c 8M /dev/urandom >"$t/a"
	head -c 2M /dev/urandom >"$t/p2"
	head -c 2M /dev/urandom >"$t/p3"
	serve
	qio "$v" -c "write -s $t/a 0 8M"
	s1=$(spx-vol snapshot --root "$ROOT" "$v")
	qio "$v" -c "write -s $t/p2 0 2M"
	s2=$(spx-vol snapshot --root "$ROOT" "$v")
	qio "$v" -c "write -s $t/p3 1M 2M"
	s3=$(spx-vol snapshot --root "$ROOT" "$v")
	# 16 chunks, 4 new in s2 (0-3), 4 new in s3 (2-5).
	[ "$(chunks)" = 24 ]
	run spx-vol snapshot-rm --root "$ROOT" "$s2"
	[ "$status" -eq 0 ]
	# s2's chunks 0 and 1 are s3's too; its 2 and 3 are no one's.
	[ "$(chunks)" = 22 ]
	run spx-vol snapshot-rm --root "$ROOT" "$s2"
	[ "$status" -eq 1 ]
	[ "$output" = "spx-vol: snapshot-rm: no snapshot '$s2'" ]
	run spx-vol snapshots --root "$ROOT" "$s2"
	[ "$status" -eq 1 ]
	r1=$(spx-vol restore --root "$ROOT" "$s1")
	r3=$(spx-vol restore --root "$ROOT" "$s3")
	nbdcopy "$(uri "$r1")" - | cmp - "$t/a"
	cp "$t/a" "$t/c"
	dd if="$t/p2" of="$t/c" conv=notrunc status=none
	dd if="$t/p3" of="$t/c" bs=1M seek=1 conv=notrunc status=none
	nbdcopy "$(uri "$r3")" - | cmp - "$t/c"
	run spx-vol snapshot-gc --root "$ROOT" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | field removed)" = 0 ]
	[ "$(echo "$output" | field referenced)" = 22 ]
}

@test "a removal that cannot collect (a snapshot holds the lock) leaves it to the holder" {
	v=$(spx-vol create --root "$ROOT" --size 4M)
	w=$(spx-vol create --root "$ROOT" --size 4M)
	head -c 2M /dev/urandom | spx-vol write --root "$ROOT" "$v"
	head -c 1M /dev/urandom | spx-vol write --root "$ROOT" "$w"
	s=$(spx-vol snapshot --root "$ROOT" "$v")
	[ "$(chunks)" = 4 ]
	# As a snapshot being taken holds it.
	exec {lk}>"$ROOT/data/vol/.snap.lock"
	flock -s "$lk"
	spx-vol snapshot-rm --root "$ROOT" "$s"
	[ "$(chunks)" = 4 ]
	exec {lk}>&-
	# The next holder to let go collects: here a snapshot of another
	# volume (its 2 chunks stay).
	spx-vol snapshot --root "$ROOT" "$w" >/dev/null
	[ "$(chunks)" = 2 ]
	[ ! -e "$ROOT/data/vol/.snap.gc-wanted" ]
	# Nothing wanted: a snapshot leaves the store as it is.
	spx-vol snapshot --root "$ROOT" "$v" >/dev/null
	[ "$(chunks)" = 6 ]
}

@test "a snapshot is of its moment, while the guest keeps writing" {
	v=$(spx-vol create --root "$ROOT" --size 256M)
	head -c 256M /dev/urandom >"$BATS_TEST_TMPDIR/r"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/r"
	serve
	# The snapshot says when it has started reading; then it is held
	# still (SIGSTOP) and the guest rewrites the whole volume. The writes
	# finishing while the snapshot cannot move shows they do not wait
	# for its upload, whatever the machine's speed (before, this looked
	# at whether the upload was still going, and a fast one was not).
	spx-vol snapshot --root "$ROOT" "$v" --progress >"$BATS_TEST_TMPDIR/id" 2>"$BATS_TEST_TMPDIR/progress" &
	BG_PID=$!
	wait_for 60 grep -q '%' "$BATS_TEST_TMPDIR/progress"
	kill -STOP "$BG_PID"
	# Held between chunks, not inside one's lock: a snapshot reads each
	# chunk under it (briefly), and a write to that chunk rightly waits
	# for it, so a stop that lands there would hold the guest forever.
	# The chunk locks are bytes from 2^20 of the volume's lock file
	# (lib/vol/track.h); nobody else holds one while the guest is idle.
	ino=$(stat -c %i "$ROOT/data/vol/$v/lock")
	for _ in $(seq 1 200); do
		awk -v ino="$ino" '$2 != "->" && $6 ~ (":" ino "$") && $7 >= 1048576 { f = 1 }
			END { exit !f }' /proc/locks || break
		kill -CONT "$BG_PID"
		sleep 0.01
		kill -STOP "$BG_PID"
	done
	! grep -q '100%' "$BATS_TEST_TMPDIR/progress" || skip "the upload ended before it could be held"
	qio "$v" -c 'write -P 0xb2 0 256M' -c flush
	kill -CONT "$BG_PID"
	wait "$BG_PID"
	BG_PID=
	s1=$(cat "$BATS_TEST_TMPDIR/id")
	s2=$(spx-vol snapshot --root "$ROOT" "$v")
	r1=$(spx-vol restore --root "$ROOT" "$s1")
	r2=$(spx-vol restore --root "$ROOT" "$s2")
	nbdcopy "$(uri "$r1")" - | cmp - "$BATS_TEST_TMPDIR/r"
	qio "$r2" -r -c 'read -P 0xb2 0 256M'
	qio "$v" -r -c 'read -P 0xb2 0 256M'
}

@test "snapshots taken while 32 writes are in flight: each pauses the writers and finishes, and the writes all land" {
	v=$(spx-vol create --root "$ROOT" --size 64M)
	serve
	# fio keeps 32 writes in flight on one connection, so that each
	# snapshot's pause finds the server with writes of its own under way
	# (it must end them before it waits, never wait holding them).
	fio --name=w --ioengine=nbd --uri="$(uri "$v")" --rw=randwrite --bs=4k \
		--iodepth=32 --size=64M --time_based --runtime=20 \
		--output="$BATS_TEST_TMPDIR/fio" &
	BG_PID=$!
	sleep 2
	for i in 1 2 3 4 5; do
		timeout 60 spx-vol snapshot --root "$ROOT" "$v" >>"$BATS_TEST_TMPDIR/ids"
	done
	wait "$BG_PID"
	BG_PID=
	! grep -q 'err= *[1-9]' "$BATS_TEST_TMPDIR/fio"
	[ "$(grep -c '^snap-' "$BATS_TEST_TMPDIR/ids")" -eq 5 ]
	# The last snapshot is the volume at its moment: after fio, one more
	# has what fio left, and restores to it byte for byte.
	s=$(spx-vol snapshot --root "$ROOT" "$v")
	r=$(spx-vol restore --root "$ROOT" "$s")
	cmp <(nbdcopy "$(uri "$v")" -) <(nbdcopy "$(uri "$r")" -)
}

@test "kill -9 of spx-vol snapshot mid-upload, then again: right, nothing named lost" {
	v=$(spx-vol create --root "$ROOT" --size 128M)
	head -c 128M /dev/urandom >"$BATS_TEST_TMPDIR/r"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/r"
	s0=$(spx-vol snapshot --root "$ROOT" "$v")
	head -c 128M /dev/urandom >"$BATS_TEST_TMPDIR/r2"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/r2"
	for round in 1 2 3; do
		spx-vol snapshot --root "$ROOT" "$v" --progress 2>"$BATS_TEST_TMPDIR/p$round" &
		BG_PID=$!
		wait_for 60 grep -q '[1-9][0-9]*%' "$BATS_TEST_TMPDIR/p$round"
		kill -9 "$BG_PID"
		wait "$BG_PID" 2>/dev/null || true
		BG_PID=
	done
	# Only s0 exists; the dead ones' chunks are there, named by none.
	run spx-vol snapshots --root "$ROOT" --json
	[ "$(echo "$output" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 1 ]
	[ "$(chunks)" -gt 256 ]
	run spx-vol snapshot-gc --root "$ROOT" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | field referenced)" = 256 ]
	[ "$(chunks)" = 256 ]
	run spx-vol snapshot --root "$ROOT" "$v" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | field read)" = 256 ]
	s1=$(echo "$output" | field id)
	spx-vol snapshot-gc --root "$ROOT" >/dev/null
	r0=$(spx-vol restore --root "$ROOT" "$s0")
	r1=$(spx-vol restore --root "$ROOT" "$s1")
	spx-vol cat --root "$ROOT" "$r0" | cmp - "$BATS_TEST_TMPDIR/r"
	spx-vol cat --root "$ROOT" "$r1" | cmp - "$BATS_TEST_TMPDIR/r2"
}

@test "the store unreachable during a lazy restore: reads wait, then succeed" {
	v=$(spx-vol create --root "$ROOT" --size 4M)
	serve
	qio "$v" -c 'write -P 0x5a 0 4M'
	s=$(spx-vol snapshot --root "$ROOT" "$v")
	r=$(spx-vol restore --root "$ROOT" "$s")
	# The store's drive goes away (a link to a file in its place, which
	# the store cannot make a drive of again); a read of the new volume
	# waits.
	mv "$ROOT/data/obj/d0" "$ROOT/data/obj/d0.away"
	touch "$ROOT/data/obj/d0.file"
	ln -s d0.file "$ROOT/data/obj/d0"
	qemu-io -f raw -r -c 'read -P 0x5a 1M 64k' "$(uri "$r")" >"$BATS_TEST_TMPDIR/read" 2>&1 &
	BG_PID=$!
	errors() { [ "$(spx-vol info --root "$ROOT" "$r" --json | field fetch_errors)" -ge 2 ]; }
	wait_for 30 errors
	kill -0 "$BG_PID" || { cat "$BATS_TEST_TMPDIR/progress" "$BATS_TEST_TMPDIR/id"; false; }
	spx-vol info --root "$ROOT" "$r" --json | field last_error | grep -q .
	[ "$(spx-vol info --root "$ROOT" "$r" --json | field to_fetch)" -ge 1 ]
	grep -q "$r: cannot fetch chunk 2 .*retrying" "$BATS_TEST_TMPDIR/serve.log"
	# A snapshot meanwhile fails (the store is gone), the volume it
	# reads serves on.
	run spx-vol snapshot --root "$ROOT" "$v"
	[ "$status" -eq 111 ]
	# The store comes back: the read completes with the right bytes. The
	# link is replaced in one rename: with d0 missing for a moment, the
	# retrying store made a new empty drive there, and the old one was
	# moved into it (the read then waited for ever).
	ln -s d0.away "$ROOT/data/obj/d0.new"
	mv -T "$ROOT/data/obj/d0.new" "$ROOT/data/obj/d0"
	wait "$BG_PID"
	BG_PID=
	! grep -q failed "$BATS_TEST_TMPDIR/read"
	[ "$(spx-vol info --root "$ROOT" "$r" --json | field last_error)" = None ]
	# Open for writing, the rest comes in the background; then the
	# volume no longer needs its snapshot.
	qio "$r" -c 'read -P 0x5a 0 4M'
	done_fetching() { [ "$(spx-vol info --root "$ROOT" "$r" --json | field restoring)" = None ]; }
	wait_for 30 done_fetching
	[ "$(spx-vol info --root "$ROOT" "$r" --json | field to_fetch)" = 0 ]
	run spx-vol snapshot --root "$ROOT" "$v"
	[ "$status" -eq 0 ]
}

@test "a chunk the store has lost, during a lazy restore: EIO for its reads at once, shown by info; the other chunks read" {
	v=$(spx-vol create --root "$ROOT" --size 4M)
	serve
	# Chunks 2 and 3 of bytes of their own (the others are one chunk).
	qio "$v" -c 'write -P 0x5a 0 4M' -c 'write -P 0x62 1M 512k' -c 'write -P 0x63 1536k 512k'
	s=$(spx-vol snapshot --root "$ROOT" "$v")
	r=$(spx-vol restore --root "$ROOT" "$s")
	hash() { python3 -c 'import hashlib,sys; print(hashlib.sha256(bytes([int(sys.argv[1], 0)]) * 524288).hexdigest())' "$1"; }
	h2=$(hash 0x62)
	h3=$(hash 0x63)
	# Chunk 2: a byte of its shard file flipped (one drive, no parity:
	# the stripe is lost). Chunk 3: gone from the store.
	shards=("$ROOT/data/obj/d0/b/$BUCKET/o/c%2F$h2"/d-*/*)
	[ "${#shards[@]}" = 1 ] && [ -f "${shards[0]}" ]
	python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(100)
    b = f.read(1)
    f.seek(100)
    f.write(bytes([b[0] ^ 1]))
' "${shards[0]}"
	spx-obj rm --root "$ROOT" "$BUCKET" "c/$h3"
	# The reads of those chunks fail at once; the others are served.
	run timeout 30 qemu-io -f raw -r -c 'read -P 0x5a 0 64k' -c 'read 1M 64k' \
		-c 'read 1536k 64k' -c 'read -P 0x5a 2M 64k' "$(uri "$r")"
	[ "$status" -ne 124 ]
	[ "$(grep -c 'read failed: Input/output error' <<<"$output")" = 2 ]
	[ "$(grep -c 'read 65536/65536' <<<"$output")" = 2 ]
	grep -q "$r: chunk 2: chunk $h2 is lost: .*stripe 0 has lost more than 0 blocks" "$BATS_TEST_TMPDIR/serve.log"
	grep -q "$r: chunk 3: the snapshot store has no chunk $h3" "$BATS_TEST_TMPDIR/serve.log"
	! grep -q "$r: cannot fetch chunk" "$BATS_TEST_TMPDIR/serve.log"
	# spx-vol info shows them (the background fetch of a writable
	# open met them too), and they stay to fetch.
	spx-vol info --root "$ROOT" "$r" --json >"$BATS_TEST_TMPDIR/info"
	[ "$(field lost_fetches <"$BATS_TEST_TMPDIR/info")" -ge 2 ]
	lost=$(field lost <"$BATS_TEST_TMPDIR/info")
	[[ "$lost" == *"no chunk $h3" || "$lost" == "chunk $h2 is lost: "* ]]
	[ "$(field fetch_errors <"$BATS_TEST_TMPDIR/info")" = "$(field lost_fetches <"$BATS_TEST_TMPDIR/info")" ]
	[ "$(field restoring <"$BATS_TEST_TMPDIR/info")" = "$s" ]
	[ "$(field to_fetch <"$BATS_TEST_TMPDIR/info")" -ge 2 ]
	# Good fetches after them leave them shown.
	qio "$r" -c 'read -P 0x5a 3M 64k' -c 'read -P 0x5a 3584k 512k'
	[ "$(spx-vol info --root "$ROOT" "$r" --json | field lost)" != None ]
}

@test "a lazy restore's background filler: a lost chunk inside a run of chunks leaves only itself to fetch" {
	v=$(spx-vol create --root "$ROOT" --size 4M)
	serve
	# Chunk 3 of bytes of its own, in the filler's first run (chunks 0
	# to 3); the others are one stored chunk.
	qio "$v" -c 'write -P 0x5a 0 4M' -c 'write -P 0x63 1536k 512k'
	s=$(spx-vol snapshot --root "$ROOT" "$v")
	r=$(spx-vol restore --root "$ROOT" "$s")
	h3=$(python3 -c 'import hashlib; print(hashlib.sha256(b"\x63" * 524288).hexdigest())')
	spx-obj rm --root "$ROOT" "$BUCKET" "c/$h3"
	# A writable open: the filler starts, and its run of four fails on
	# chunk 3; the run is then taken a chunk at a time.
	qemu-io -f raw -c 'sleep 600000' "$(uri "$r")" >/dev/null 2>&1 &
	BG_PID=$!
	wait_for 30 eval '[ "$(spx-vol info --root "$ROOT" "$r" --json | field to_fetch)" = 1 ]'
	grep -q "$r: chunk 3: the snapshot store has no chunk $h3" "$BATS_TEST_TMPDIR/serve.log"
	kill "$BG_PID"
	wait "$BG_PID" 2>/dev/null || true
	BG_PID=
	run timeout 30 qemu-io -f raw -r -c 'read -P 0x5a 0 1536k' -c 'read 1536k 4k' \
		-c 'read -P 0x5a 2M 2M' "$(uri "$r")"
	[ "$(grep -c 'read failed: Input/output error' <<<"$output")" = 1 ]
	[ "$(grep -c 'read [0-9]*/[0-9]* bytes' <<<"$output")" = 2 ]
	[ "$(spx-vol info --root "$ROOT" "$r" --json | field to_fetch)" = 1 ]
}

@test "a chunk the store cannot read for now (an errno, not a loss): its read waits and is served once the fault passes" {
	v=$(spx-vol create --root "$ROOT" --size 4M)
	serve
	qio "$v" -c 'write -P 0x5a 0 4M' -c 'write -P 0x62 1M 512k'
	s=$(spx-vol snapshot --root "$ROOT" "$v")
	r=$(spx-vol restore --root "$ROOT" "$s")
	h2=$(python3 -c 'import hashlib; print(hashlib.sha256(b"\x62" * 524288).hexdigest())')
	# Chunk 2's shard file moved aside and a directory put in its
	# place: the store's read of it fails with an errno (EISDIR), as a
	# disk's EIO would.
	shards=("$ROOT/data/obj/d0/b/$BUCKET/o/c%2F$h2"/d-*/*)
	[ "${#shards[@]}" = 1 ] && [ -f "${shards[0]}" ]
	mv "${shards[0]}" "$BATS_TEST_TMPDIR/shard"
	mkdir "${shards[0]}"
	qemu-io -f raw -r -c 'read -P 0x62 1M 64k' "$(uri "$r")" >"$BATS_TEST_TMPDIR/qio" 2>&1 &
	BG_PID=$!
	wait_for 30 grep -q "$r: cannot fetch chunk 2 (.*Is a directory); retrying" "$BATS_TEST_TMPDIR/serve.log"
	sleep 1
	kill -0 "$BG_PID" # still waiting, no EIO
	! grep -q "$r: chunk 2: .*is lost" "$BATS_TEST_TMPDIR/serve.log"
	rmdir "${shards[0]}"
	mv "$BATS_TEST_TMPDIR/shard" "${shards[0]}"
	wait "$BG_PID"
	BG_PID=
	grep -q 'read 65536/65536' "$BATS_TEST_TMPDIR/qio"
	grep -q "$r: chunk 2 fetched after [1-9][0-9]* failures" "$BATS_TEST_TMPDIR/serve.log"
}

@test "the reserved bucket: S3 clients can neither create, see nor address it" {
	v=$(spx-vol create --root "$ROOT" --size 1M)
	spx-vol snapshot --root "$ROOT" "$v" >/dev/null
	start_node
	aws_env
	ep="https://127.0.0.1:$S3_PORT"
	awscli2 --endpoint-url "$ep" s3 mb s3://mine >/dev/null
	: >"$BATS_TEST_TMPDIR/empty"
	run awscli2 --endpoint-url "$ep" s3api list-buckets --query 'Buckets[].Name' --output text
	[ "$status" -eq 0 ]
	[ "$output" = mine ]
	run awscli2 --endpoint-url "$ep" s3api create-bucket --bucket "$BUCKET"
	[ "$status" -ne 0 ]
	[[ "$output" == *InvalidBucketName* ]]
	for cmd in "list-objects-v2 --bucket $BUCKET" "head-bucket --bucket $BUCKET" \
		"get-object --bucket $BUCKET --key x $BATS_TEST_TMPDIR/x" \
		"put-object --bucket $BUCKET --key m/x --body $BATS_TEST_TMPDIR/empty" \
		"delete-bucket --bucket $BUCKET" \
		"copy-object --bucket mine --key k --copy-source $BUCKET/c/x"; do
		run awscli2 --endpoint-url "$ep" s3api $cmd
		[ "$status" -ne 0 ] || { echo "$cmd succeeded"; false; }
		[[ "$output" == *NoSuchBucket* || "$output" == *"Not Found"* || "$output" == *404* ]] ||
			{ echo "$cmd: $output"; false; }
	done
	# Still there for spx.
	[ "$(spx-vol snapshots --root "$ROOT" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 1 ]
}

@test "hostile input: ids, sizes, a manifest naming a missing chunk, a corrupt chunk" {
	v=$(spx-vol create --root "$ROOT" --size 2M)
	for id in snap-.. ../m/snap-0123456789abcdef0 'snap-0123456789abcdef0/..' \
		vol-0123456789abcdef0 snap-0123456789ABCDEF0 ''; do
		for verb in restore snapshot-rm snapshots; do
			run spx-vol "$verb" --root "$ROOT" "$id"
			[ "$status" -eq 100 ] || { echo "$verb '$id': $status $output"; false; }
			[[ "$output" == *"is not a snapshot id"* ]]
		done
		run spx-vol snapshot --root "$ROOT" "$v" --parent "$id"
		[ "$status" -eq 100 ]
	done
	run spx-vol snapshot --root "$ROOT" ../x
	[ "$status" -eq 100 ]
	run spx-vol snapshot --root "$ROOT" vol-0123456789abcdef0
	[ "$status" -eq 1 ]
	[ "$output" = "spx-vol: snapshot: no volume 'vol-0123456789abcdef0'" ]
	run spx-vol restore --root "$ROOT" snap-0123456789abcdef0
	[ "$status" -eq 1 ]
	[ "$output" = "spx-vol: restore: no snapshot 'snap-0123456789abcdef0'" ]
	run spx-vol snapshot --root "$ROOT" "$v" --parent snap-0123456789abcdef0
	[ "$status" -eq 1 ]
	head -c 2M /dev/urandom >"$BATS_TEST_TMPDIR/r"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/r"
	s=$(spx-vol snapshot --root "$ROOT" "$v")
	for size in 1M 1.5M 0 -1 2M+ ''; do
		run spx-vol restore --root "$ROOT" "$s" --size "$size"
		[ "$status" -eq 100 ] || { echo "size '$size': $status"; false; }
	done
	run spx-vol restore --root "$ROOT" "$s" --id "$v"
	[ "$status" -eq 1 ]
	[ "$output" = "spx-vol: restore: volume '$v' exists" ]
	nvols=$(spx-vol ls --root "$ROOT" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
	# A chunk whose bytes are not its name: an eager restore fails
	# loudly, a lazy one gives EIO for that chunk, never its bytes.
	c=$(spx-obj ls --root "$ROOT" "$BUCKET" | grep '^c/' | head -1)
	head -c 512k /dev/zero | tr '\0' x | spx-obj put --root "$ROOT" "$BUCKET" "$c" >/dev/null
	run spx-vol restore --root "$ROOT" "$s" --eager
	[ "$status" -eq 111 ]
	[[ "$output" == *"is corrupt: its bytes hash to"* ]]
	r=$(spx-vol restore --root "$ROOT" "$s")
	run bash -c "spx-vol cat --root '$ROOT' $r >'$BATS_TEST_TMPDIR/out'"
	[ "$status" -eq 111 ]
	[[ "$output" == *"is corrupt: its bytes hash to"* ]]
	! grep -q xxxxxxxx "$BATS_TEST_TMPDIR/out"
	# Open for writing, the background fetch meets the corrupt chunk
	# too: the others become local, it never counts as local.
	serve
	r2=$(spx-vol restore --root "$ROOT" "$s")
	qemu-io -f raw -c 'sleep 30000' "$(uri "$r2")" >/dev/null 2>&1 &
	BG_PID=$!
	one_left() { [ "$(spx-vol info --root "$ROOT" "$r2" --json | field to_fetch)" = 1 ]; }
	wait_for 30 one_left
	kill "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
	run qemu-io -f raw -r -c 'read 0 2M' "$(uri "$r2")"
	[[ "$output" == *"read failed: Input/output error"* ]]
	[ "$(spx-vol info --root "$ROOT" "$r2" --json | field to_fetch)" = 1 ]
	[ "$(spx-vol info --root "$ROOT" "$r2" --json | field restoring)" = "$s" ]
	# A chunk that is not there at all: no restore, no volume.
	spx-obj rm --root "$ROOT" "$BUCKET" "$c"
	run spx-vol restore --root "$ROOT" "$s"
	[ "$status" -eq 111 ]
	[[ "$output" == *"which the store does not hold"* ]]
	[ "$(spx-vol ls --root "$ROOT" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = $((nvols + 3)) ]
	# A manifest claiming a huge number of chunks is refused as such.
	m=$(spx-obj ls --root "$ROOT" "$BUCKET" | grep '^m/' | head -1)
	spx-obj cat --root "$ROOT" "$BUCKET" "$m" >"$BATS_TEST_TMPDIR/m"
	sed -i '1s/count=[0-9]*/count=99999999999/' "$BATS_TEST_TMPDIR/m"
	spx-obj put --root "$ROOT" "$BUCKET" "$m" <"$BATS_TEST_TMPDIR/m" >/dev/null
	run spx-vol restore --root "$ROOT" "${m#m/}"
	[ "$status" -eq 111 ]
	[[ "$output" == *"not a snapshot manifest: corrupt"* ]]
	# Collection will not guess what an unreadable manifest names.
	run spx-vol snapshot-gc --root "$ROOT"
	[ "$status" -eq 111 ]
	[[ "$output" == *"nothing removed"* ]]
	# And a listing skips it, with a warning.
	run spx-vol snapshots --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"is not a snapshot manifest"* ]]
}

@test "import raw and qcow2, export raw and qcow2: the same bytes, holes kept" {
	t=$BATS_TEST_TMPDIR
	head -c 3M /dev/urandom >"$t/a.raw"
	truncate -s 10M "$t/a.raw"
	head -c 1000 /dev/urandom >>"$t/a.raw" # not whole sectors
	qemu-img convert -f raw -O qcow2 "$t/a.raw" "$t/a.qcow2"
	run spx-vol import --root "$ROOT" "$t/a.raw"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^vol-[0-9a-f]{17}$ ]]
	v=$output
	run spx-vol import --root "$ROOT" "$t/a.qcow2" --json --size 16M
	[ "$status" -eq 0 ]
	w=$(echo "$output" | field id)
	[ "$(echo "$output" | field size)" = $((16 << 20)) ]
	# The raw one is its file's size in whole sectors; zeros stayed
	# holes in both.
	size=$(spx-vol info --root "$ROOT" "$v" --json | field size)
	[ "$size" = $(((10 << 20) + 1024)) ]
	[ "$(spx-vol info --root "$ROOT" "$v" --json | field allocated)" -lt $((4 << 20)) ]
	[ "$(spx-vol info --root "$ROOT" "$w" --json | field allocated)" -lt $((4 << 20)) ]
	spx-vol cat --root "$ROOT" "$v" | cmp -n $(stat -c %s "$t/a.raw") - "$t/a.raw"
	spx-vol cat --root "$ROOT" "$w" | cmp -n $(stat -c %s "$t/a.raw") - "$t/a.raw"
	# What was imported is what the next snapshot reads.
	[ "$(spx-vol snapshot --root "$ROOT" "$v" --json | field read)" = 7 ]
	run spx-vol export --root "$ROOT" "$v" "$t/out.qcow2" --format qcow2
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	qemu-img compare -f qcow2 -F raw "$t/out.qcow2" "$t/a.raw"
	spx-vol export --root "$ROOT" "$w" "$t/out.raw"
	[ "$(stat -c %s "$t/out.raw")" = $((16 << 20)) ]
	cmp -n $(stat -c %s "$t/a.raw") "$t/out.raw" "$t/a.raw"
	# Through a running server too.
	serve
	x=$(spx-vol import --root "$ROOT" --socket "$SOCK" "$t/a.qcow2")
	qio "$x" -r -c "read -s $t/a.raw 0 3M" >/dev/null || qemu-img compare -f raw -F raw "$(uri "$x")" "$t/a.raw"
	spx-vol export --root "$ROOT" --socket "$SOCK" "$x" "$t/x.raw"
	cmp "$t/x.raw" <(cat "$t/a.raw"; head -c 24 /dev/zero)
}

@test "import and export refuse what they cannot take, and leave nothing" {
	t=$BATS_TEST_TMPDIR
	head -c 1M /dev/urandom >"$t/a.raw"
	run spx-vol import --root "$ROOT" "$t/none"
	[ "$status" -eq 1 ]
	[[ "$output" == "spx-vol: import: cannot open '$t/none': No such file or directory" ]]
	run spx-vol import --root "$ROOT" "$t/a.raw" --format vmdk
	[ "$status" -eq 100 ]
	[ "$output" = "spx-vol: import: 'vmdk' is not an image format (raw, qcow2)" ]
	run spx-vol import --root "$ROOT" "$t/a.raw" --format qcow2
	[ "$status" -eq 100 ]
	run spx-vol import --root "$ROOT" "$t/a.raw" --size 512k
	[ "$status" -eq 100 ]
	run spx-vol import --root "$ROOT" "$t"
	[ "$status" -eq 100 ]
	: >"$t/empty"
	run spx-vol import --root "$ROOT" "$t/empty"
	[ "$status" -eq 100 ]
	# A qcow2 image that needs another, a torn header, one claiming
	# more than a volume can hold.
	qemu-img create -q -f qcow2 "$t/base.qcow2" 1M
	qemu-img create -q -f qcow2 -b "$t/base.qcow2" -F qcow2 "$t/top.qcow2"
	run spx-vol import --root "$ROOT" "$t/top.qcow2"
	[ "$status" -eq 100 ]
	[[ "$output" == *"has a backing file"* ]]
	head -c 20 "$t/base.qcow2" >"$t/torn.qcow2"
	run spx-vol import --root "$ROOT" "$t/torn.qcow2"
	[ "$status" -eq 100 ]
	[[ "$output" == *"cut short"* ]]
	cp "$t/base.qcow2" "$t/huge.qcow2"
	printf '\x00\x00\x80\x00\x00\x00\x00\x00' | dd of="$t/huge.qcow2" bs=1 seek=24 conv=notrunc status=none
	run spx-vol import --root "$ROOT" "$t/huge.qcow2"
	[ "$status" -eq 100 ]
	# One that would have qemu-img read another file of the host (an
	# external data file, named in the image).
	printf 'host secret' >"$t/secret"
	qemu-img create -q -f qcow2 -o data_file="$t/secret",data_file_raw=on "$t/ext.qcow2" 64K
	run spx-vol import --root "$ROOT" "$t/ext.qcow2"
	[ "$status" -eq 100 ]
	[[ "$output" == *"external file"* ]]
	# A qcow2 file qemu-img cannot read (its refcount table past any
	# file): the volume made for it goes.
	cp "$t/base.qcow2" "$t/bad.qcow2"
	printf '\xff\xff\xff\xff\xff\xff\xfe\x00' | dd of="$t/bad.qcow2" bs=1 seek=48 conv=notrunc status=none
	run spx-vol import --root "$ROOT" "$t/bad.qcow2"
	[ "$status" -eq 111 ]
	[ "$(spx-vol ls --root "$ROOT" --json)" = "[]" ]
	[ -z "$(ls "$ROOT/run")" ]
	# A relative name is a file's, whatever qemu-img would make of it.
	mkdir -p "$t/json:{}"
	cp "$t/a.raw" "$t/json:{}/a.raw"
	v=$(cd "$t" && spx-vol import --root "$ROOT" "json:{}/a.raw")
	[ "$(spx-vol cat --root "$ROOT" "$v" | cmp - "$t/a.raw" && echo same)" = same ]
	spx-vol rm --root "$ROOT" "$v"
	v=$(spx-vol import --root "$ROOT" "$t/a.raw")
	: >"$t/there"
	run spx-vol export --root "$ROOT" "$v" "$t/there"
	[ "$status" -eq 1 ]
	[ "$output" = "spx-vol: export: '$t/there' exists" ]
	run spx-vol export --root "$ROOT" vol-0123456789abcdef0 "$t/x"
	[ "$status" -eq 1 ]
	run spx-vol export --root "$ROOT" "$v" "$t/x" --format vmdk
	[ "$status" -eq 100 ]
	[ ! -e "$t/x" ]
}

@test "snapshot --id and snapshot-copy: a retried step is done, not done twice; another's id is refused" {
	v=$(spx-vol create --root "$ROOT" --size 4M)
	w=$(spx-vol create --root "$ROOT" --size 4M)
	head -c 3M /dev/urandom | spx-vol write --root "$ROOT" "$v"
	id=snap-0123456789abcdef0
	run spx-vol snapshot --root "$ROOT" --id "$id" "$v" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | field id)" = "$id" ]
	[ "$(echo "$output" | field uploaded)" -eq 6 ]
	n=$(chunks)
	# The same step again (an agent after a crash): done, nothing read.
	run spx-vol snapshot --root "$ROOT" --id "$id" "$v" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | field read)" -eq 0 ]
	[ "$(echo "$output" | field uploaded)" -eq 0 ]
	# The id of another volume's snapshot: refused, that one unchanged.
	run spx-vol snapshot --root "$ROOT" --id "$id" "$w"
	[ "$status" -eq 1 ]
	[[ "$output" == *"snapshot '$id' exists already, of $v"* ]]
	run spx-vol snapshot --root "$ROOT" --id snap-../../etc "$v"
	[ "$status" -eq 100 ]
	# A copy names the same chunks: nothing is stored.
	cp=snap-0123456789abcdef1
	run spx-vol snapshot-copy --root "$ROOT" --id "$cp" "$id" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | field source)" = "$id" ]
	[ "$(echo "$output" | field chunks)" -eq 6 ]
	[ "$(chunks)" -eq "$n" ]
	run spx-vol snapshot-copy --root "$ROOT" --id "$cp" "$id"
	[ "$status" -eq 0 ]
	[ "$output" = "$cp" ]
	run spx-vol snapshot-copy --root "$ROOT" --id "$id" "$cp"
	[ "$status" -eq 1 ]
	run spx-vol snapshot-copy --root "$ROOT" snap-0123456789abcdef9
	[ "$status" -eq 1 ]
	[[ "$output" == *"no snapshot 'snap-0123456789abcdef9'"* ]]
	# The source goes; the copy still restores, byte for byte.
	spx-vol snapshot-rm --root "$ROOT" "$id"
	r=$(spx-vol restore --root "$ROOT" --eager "$cp")
	cmp <(spx-vol cat --root "$ROOT" "$r") <(spx-vol cat --root "$ROOT" "$v")
}

@test "snapshot of several volumes: one moment, one row each, a retried set is done" {
	v=$(spx-vol create --root "$ROOT" --size 4M)
	w=$(spx-vol create --root "$ROOT" --size 2M)
	head -c 3M /dev/urandom >"$BATS_TEST_TMPDIR/v"
	head -c 1M /dev/urandom >"$BATS_TEST_TMPDIR/w"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/v"
	spx-vol write --root "$ROOT" "$w" <"$BATS_TEST_TMPDIR/w"
	ids=snap-0123456789abcdef2,snap-0123456789abcdef3
	run spx-vol snapshot --root "$ROOT" --id "$ids" "$w" "$v" --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
r = json.load(sys.stdin)
w, v = sys.argv[1:3]
assert [x["volume"] for x in r] == [w, v], r
assert [x["id"] for x in r] == ["snap-0123456789abcdef2", "snap-0123456789abcdef3"], r
assert [x["uploaded"] for x in r] == [2, 6], r
' "$w" "$v"
	# Again (the agent after a crash): done, nothing read; one id a line.
	run spx-vol snapshot --root "$ROOT" --id "$ids" "$w" "$v"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'snap-0123456789abcdef2\nsnap-0123456789abcdef3')" ]
	r=$(spx-vol restore --root "$ROOT" --eager snap-0123456789abcdef3)
	spx-vol cat --root "$ROOT" "$r" | cmp -n 3145728 - "$BATS_TEST_TMPDIR/v"
	# Refused: ids not one per volume, --parent for a set, a volume
	# twice, an unknown one; nothing is stored.
	n=$(spx-vol snapshots --root "$ROOT" | wc -l)
	run spx-vol snapshot --root "$ROOT" --id snap-0123456789abcdef4 "$w" "$v"
	[ "$status" -eq 100 ]
	[[ "$output" == *"--id names 1 snapshot for 2 volumes"* ]]
	run spx-vol snapshot --root "$ROOT" --id "$ids,snap-0123456789abcdef5" "$w" "$v"
	[ "$status" -eq 100 ]
	run spx-vol snapshot --root "$ROOT" --parent snap-0123456789abcdef2 "$w" "$v"
	[ "$status" -eq 100 ]
	run spx-vol snapshot --root "$ROOT" "$v" "$v"
	[ "$status" -eq 100 ]
	[[ "$output" == *"is in the set twice"* ]]
	run spx-vol snapshot --root "$ROOT" "$v" vol-0123456789abcdef0
	[ "$status" -eq 1 ]
	[ "$(spx-vol snapshots --root "$ROOT" | wc -l)" = "$n" ]
}
