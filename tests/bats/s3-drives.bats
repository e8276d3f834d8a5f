#!/usr/bin/env bats
# The S3 path over erasure-coded drives: a lost or corrupt shard is
# rebuilt on read at RS(2,1) and RS(4,2), and a full disk is a clean 507
# that leaves the previous object intact.

load helpers

teardown() {
	stop_node
	if [ -n "${MNT:-}" ]; then umount "$MNT" 2>/dev/null || true; fi
}

# make_node, then give node1 the drives and code of $1 data, $2 parity.
node_rs() {
	make_node
	local drives="" i
	for i in $(seq 0 $(($1 + $2 - 1))); do drives="$drives\"drives/d$i\", "; done
	printf '\n[nodes.node1.obj]\ndrives = [%s]\ndata = %d\nparity = %d\n' "${drives%, }" "$1" "$2" >>"$ROOT/spinifex.toml"
	start_node
	aws_env
	EP="https://127.0.0.1:$S3_PORT"
}

shard_files() { # every shard file of object KEY's current generation
	find "$ROOT/drives" -path "*/o/$1/d-*" -type f | sort
}

roundtrip_with_damage() {
	local k=$1 m=$2 f="$BATS_TEST_TMPDIR/obj" back="$BATS_TEST_TMPDIR/back"
	head -c 7340033 /dev/urandom >"$f"
	node_rs "$k" "$m"
	/usr/bin/aws --endpoint-url "$EP" s3 mb s3://ecb >/dev/null
	/usr/bin/aws --endpoint-url "$EP" s3api put-object --bucket ecb --key obj --body "$f" >/dev/null
	mapfile -t shards < <(shard_files obj)
	[ "${#shards[@]}" -eq $((k + m)) ]
	# Lose m shards: delete the first, corrupt the others in the middle.
	rm -f "${shards[0]}"
	for s in "${shards[@]:1:$((m - 1))}"; do
		printf 'garbage!' | dd of="$s" bs=1 seek=1000 conv=notrunc 2>/dev/null
	done
	/usr/bin/aws --endpoint-url "$EP" s3api get-object --bucket ecb --key obj "$back" >/dev/null
	cmp "$f" "$back"
	run /usr/bin/aws --endpoint-url "$EP" s3api get-object --bucket ecb --key obj --range bytes=5000000-5000099 "$back"
	[ "$status" -eq 0 ]
	cmp <(tail -c +5000001 "$f" | head -c 100) "$back"
}

@test "RS(2,1): a deleted shard is rebuilt on GET" {
	roundtrip_with_damage 2 1
}

@test "RS(4,2): a deleted and a corrupt shard are rebuilt on GET" {
	roundtrip_with_damage 4 2
}

@test "a full disk answers 507 InsufficientStorage and keeps the old object" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to mount a small file system"
	make_node
	MNT="$BATS_TEST_TMPDIR/small"
	mkdir -p "$MNT"
	truncate -s 24M "$BATS_TEST_TMPDIR/small.img"
	mkfs.ext4 -q -F "$BATS_TEST_TMPDIR/small.img"
	mount -o loop "$BATS_TEST_TMPDIR/small.img" "$MNT" || skip "cannot loop-mount"
	printf '\n[nodes.node1.obj]\ndrives = ["%s/d0"]\n' "$MNT" >>"$ROOT/spinifex.toml"
	start_node
	aws_env
	EP="https://127.0.0.1:$S3_PORT"
	head -c 2000000 /dev/urandom >"$BATS_TEST_TMPDIR/small-obj"
	head -c 40000000 /dev/urandom >"$BATS_TEST_TMPDIR/big-obj"
	/usr/bin/aws --endpoint-url "$EP" s3 mb s3://full >/dev/null
	/usr/bin/aws --endpoint-url "$EP" s3api put-object --bucket full --key k --body "$BATS_TEST_TMPDIR/small-obj" >/dev/null
	run /usr/bin/aws --endpoint-url "$EP" s3api put-object --bucket full --key k --body "$BATS_TEST_TMPDIR/big-obj"
	[ "$status" -ne 0 ]
	[[ "$output" == *"InsufficientStorage"* ]]
	/usr/bin/aws --endpoint-url "$EP" s3api get-object --bucket full --key k "$BATS_TEST_TMPDIR/back" >/dev/null
	cmp "$BATS_TEST_TMPDIR/small-obj" "$BATS_TEST_TMPDIR/back"
	# The space comes back: nothing of the failed write is left behind.
	run /usr/bin/aws --endpoint-url "$EP" s3api put-object --bucket full --key k2 --body "$BATS_TEST_TMPDIR/small-obj"
	[ "$status" -eq 0 ]
	stop_node
	umount "$MNT"
	MNT=
}
