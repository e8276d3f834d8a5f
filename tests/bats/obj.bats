#!/usr/bin/env bats
# spx-obj: every verb, exit statuses, erasure coding over drive
# directories, shard loss and corruption, kill -9 mid-put.

load helpers

setup() {
	make_node
}

# Switch the node to RS(k,m) over k+m drive directories.
use_rs() {
	local k=$1 m=$2 d="" i
	for ((i = 0; i < k + m; i++)); do d="$d${d:+, }\"$ROOT/drive$i\""; done
	printf '\n[nodes.node1.obj]\ndrives = [%s]\ndata = %d\nparity = %d\n' "$d" "$k" "$m" >>"$ROOT/spinifex.toml"
}

shard() { # drive bucket key: the s0 shard file of the object
	ls "$ROOT"/drive"$1"/b/"$2"/o/"$3"/d-*/s0
}

@test "mb, ls, rb and their errors" {
	run spx-obj mb --root "$ROOT" photos
	[ "$status" -eq 0 ]
	run spx-obj mb --root "$ROOT" photos
	[ "$status" -eq 1 ]
	[ "$output" = "spx-obj: mb: bucket 'photos' exists and is yours" ]
	run spx-obj mb --root "$ROOT" Bad_Name
	[ "$status" -eq 100 ]
	[ "$output" = "spx-obj: mb: invalid bucket name 'Bad_Name'" ]
	spx-obj mb --root "$ROOT" apples
	run spx-obj ls --root "$ROOT"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'apples\nphotos')" ]
	run spx-obj ls --root "$ROOT" --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c 'import json,sys; b=json.load(sys.stdin); assert [x["name"] for x in b]==["apples","photos"]'
	echo x | spx-obj put --root "$ROOT" photos k >/dev/null
	run spx-obj rb --root "$ROOT" photos
	[ "$status" -eq 1 ]
	[ "$output" = "spx-obj: rb: bucket 'photos' is not empty" ]
	spx-obj rm --root "$ROOT" photos k
	run spx-obj rb --root "$ROOT" photos
	[ "$status" -eq 0 ]
	run spx-obj rb --root "$ROOT" photos
	[ "$status" -eq 1 ]
	[ "$output" = "spx-obj: rb: no such bucket 'photos'" ]
	run spx-obj mb --root "$ROOT"
	[ "$status" -eq 100 ]
}

@test "put, get, cat, stat, cp, rm on one drive" {
	spx-obj mb --root "$ROOT" bkt
	head -c 500000 /dev/urandom >"$BATS_TEST_TMPDIR/f"
	want=$(md5sum <"$BATS_TEST_TMPDIR/f" | cut -d' ' -f1)
	run spx-obj put --root "$ROOT" bkt "dir/file one" "$BATS_TEST_TMPDIR/f"
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ]
	spx-obj get --root "$ROOT" bkt "dir/file one" "$BATS_TEST_TMPDIR/g"
	cmp "$BATS_TEST_TMPDIR/f" "$BATS_TEST_TMPDIR/g"
	spx-obj cat --root "$ROOT" bkt "dir/file one" >"$BATS_TEST_TMPDIR/h"
	cmp "$BATS_TEST_TMPDIR/f" "$BATS_TEST_TMPDIR/h"
	spx-obj cat --root "$ROOT" --range 10-19 bkt "dir/file one" >"$BATS_TEST_TMPDIR/r"
	cmp <(tail -c +11 "$BATS_TEST_TMPDIR/f" | head -c 10) "$BATS_TEST_TMPDIR/r"
	printf 'hello' | spx-obj put --root "$ROOT" -t text/plain bkt small >/dev/null
	run spx-obj cat --root "$ROOT" bkt small
	[ "$output" = "hello" ]
	run spx-obj stat --root "$ROOT" bkt small
	[ "$status" -eq 0 ]
	[[ "$output" == *"content-type: text/plain"* ]]
	[[ "$output" == *"size: 5"* ]]
	run spx-obj stat --root "$ROOT" --json bkt "dir/file one"
	echo "$output" | python3 -c 'import json,sys; m=json.load(sys.stdin); assert m["size"]==500000 and m["layout"]=="erasure"'
	run spx-obj cp --root "$ROOT" bkt small bkt copy
	[ "$status" -eq 0 ]
	run spx-obj ls --root "$ROOT" bkt
	[ "$output" = "$(printf 'copy\ndir/file one\nsmall')" ]
	run spx-obj ls --root "$ROOT" --prefix dir/ bkt
	[ "$output" = "dir/file one" ]
	run spx-obj ls --root "$ROOT" --delimiter / bkt
	[ "$output" = "$(printf 'dir/\ncopy\nsmall')" ]
	run spx-obj rm --root "$ROOT" bkt small
	[ "$status" -eq 0 ]
	run spx-obj cat --root "$ROOT" bkt small
	[ "$status" -eq 1 ]
	[ "$output" = "spx-obj: cat: no such key 'small' in 'bkt'" ]
	run spx-obj rm --root "$ROOT" bkt small
	[ "$status" -eq 1 ]
	run spx-obj get --root "$ROOT" nobkt k
	[ "$status" -eq 1 ]
	run spx-obj put --root "$ROOT" bkt k "$BATS_TEST_TMPDIR/absent"
	[ "$status" -eq 1 ]
	run spx-obj put --root "$ROOT" bkt "$(head -c 1025 /dev/zero | tr '\0' x)" "$BATS_TEST_TMPDIR/f"
	[ "$status" -eq 100 ]
	run spx-obj cat --root "$ROOT" --range 9-1 bkt copy
	[ "$status" -eq 100 ]
	run spx-obj frob --root "$ROOT"
	[ "$status" -eq 100 ]
}

@test "RS(2,1) and RS(4,2): lost and corrupt shards read back, verify and heal" {
	for code in "2 1" "4 2"; do
		make_node
		use_rs $code
		spx-obj mb --root "$ROOT" ecb
		head -c 3000000 /dev/urandom >"$BATS_TEST_TMPDIR/f"
		spx-obj put --root "$ROOT" ecb obj "$BATS_TEST_TMPDIR/f" >/dev/null
		rm "$(shard 0 ecb obj)"
		printf 'garbage' | dd of="$(shard 1 ecb obj)" bs=1 seek=1000 conv=notrunc 2>/dev/null
		if [ "$code" = "2 1" ]; then
			# One loss only at RS(2,1): the corrupt block is in shard 1's first
			# stripe, shard 0 is gone: stripe 0 is lost, later stripes are not.
			run spx-obj verify --root "$ROOT"
			[ "$status" -eq 1 ]
			[[ "$output" == "ecb/obj lost"* ]]
			make_node; use_rs 2 1; spx-obj mb --root "$ROOT" ecb
			spx-obj put --root "$ROOT" ecb obj "$BATS_TEST_TMPDIR/f" >/dev/null
			rm "$(shard 2 ecb obj)"
		fi
		spx-obj cat --root "$ROOT" ecb obj | cmp - "$BATS_TEST_TMPDIR/f"
		run spx-obj verify --root "$ROOT"
		[ "$status" -eq 1 ]
		[[ "$output" == "ecb/obj damaged missing="* ]]
		run spx-obj heal --root "$ROOT"
		[ "$status" -eq 0 ]
		[[ "$output" == "ecb/obj healed"* ]]
		run spx-obj verify --root "$ROOT"
		[ "$status" -eq 0 ]
		[ "$output" = "ecb/obj ok" ]
		spx-obj cat --root "$ROOT" ecb obj | cmp - "$BATS_TEST_TMPDIR/f"
	done
}

@test "kill -9 mid-put leaves the previous version or the new one, never a part" {
	use_rs 2 1
	spx-obj mb --root "$ROOT" kbk
	for i in $(seq 0 15); do
		head -c 24000000 /dev/urandom >"$BATS_TEST_TMPDIR/v$i"
	done
	spx-obj put --root "$ROOT" kbk k "$BATS_TEST_TMPDIR/v0" >/dev/null
	# How long one put takes here, so that the kills below spread from
	# early in the data to past the commit: some must reach it.
	t0=$(date +%s%N)
	spx-obj put --root "$ROOT" kbk k "$BATS_TEST_TMPDIR/v0" >/dev/null
	ms=$((($(date +%s%N) - t0) / 1000000))
	prev=0 reached=0 before=0
	for i in $(seq 1 15); do
		spx-obj put --root "$ROOT" kbk k "$BATS_TEST_TMPDIR/v$i" >/dev/null &
		pid=$!
		# From 20% to 160% of a put's time, evenly.
		delay=$((ms * (20 + (i - 1) * 10) / 100))
		sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
		kill -9 $pid 2>/dev/null || true
		wait $pid 2>/dev/null || true
		spx-obj cat --root "$ROOT" kbk k >"$BATS_TEST_TMPDIR/got"
		if cmp -s "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/v$i"; then
			prev=$i reached=$((reached + 1))
		else
			cmp "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/v$prev"
			before=$((before + 1))
		fi
	done
	echo "# a put takes ${ms} ms; $reached kills came after the commit, $before before it" >&3
	[ "$reached" -ge 1 ]
	[ "$before" -ge 1 ]
	run spx-obj heal --root "$ROOT"
	[ "$status" -eq 0 ]
	run spx-obj verify --root "$ROOT"
	[ "$status" -eq 0 ]
	[ "$(ls -d "$ROOT"/drive0/b/kbk/o/k/d-* | wc -l)" -eq 1 ]
}
