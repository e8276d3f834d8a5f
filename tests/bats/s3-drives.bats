#!/usr/bin/env bats
# The S3 path over erasure-coded drives: a lost or corrupt shard is
# rebuilt on read at RS(2,1) and RS(4,2), and a full disk is a clean 507
# that leaves the previous object intact. A small object is synced once
# on a file system that commits in order, twice on one that does not.

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
	awscli2 --endpoint-url "$EP" s3 mb s3://ecb >/dev/null
	awscli2 --endpoint-url "$EP" s3api put-object --bucket ecb --key obj --body "$f" >/dev/null
	mapfile -t shards < <(shard_files obj)
	[ "${#shards[@]}" -eq $((k + m)) ]
	# Lose m shards: delete the first, corrupt the others in the middle.
	rm -f "${shards[0]}"
	for s in "${shards[@]:1:$((m - 1))}"; do
		printf 'garbage!' | dd of="$s" bs=1 seek=1000 conv=notrunc 2>/dev/null
	done
	awscli2 --endpoint-url "$EP" s3api get-object --bucket ecb --key obj "$back" >/dev/null
	cmp "$f" "$back"
	run awscli2 --endpoint-url "$EP" s3api get-object --bucket ecb --key obj --range bytes=5000000-5000099 "$back"
	[ "$status" -eq 0 ]
	cmp <(tail -c +5000001 "$f" | head -c 100) "$back"
}

@test "RS(2,1): a deleted shard is rebuilt on GET" {
	roundtrip_with_damage 2 1
}

@test "RS(4,2): a deleted and a corrupt shard are rebuilt on GET" {
	roundtrip_with_damage 4 2
}

@test "more shards lost than parity: an error, never 200 with wrong or short bytes" {
	local f="$BATS_TEST_TMPDIR/obj" back="$BATS_TEST_TMPDIR/back"
	head -c 5242880 /dev/urandom >"$f"
	node_rs 2 1
	read -r AK SK < <(admin_key)
	awscli2 --endpoint-url "$EP" s3 mb s3://lost >/dev/null
	for k in gone rotten; do
		awscli2 --endpoint-url "$EP" s3api put-object --bucket lost --key $k --body "$f" >/dev/null
	done
	get() { # KEY -> "HTTP_CODE CURL_EXIT SIZE"
		local rc=0 code
		code=$(curl -sS -o "$back" -w '%{http_code}' --cacert "$ROOT/tls/ca.pem" \
			--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" "$EP/lost/$1" 2>/dev/null) || rc=$?
		echo "$code $rc $(stat -c %s "$back" 2>/dev/null || echo 0)"
	}
	# Two of three shard files gone: refused before any byte, as a 500.
	mapfile -t shards < <(shard_files gone)
	rm -f "${shards[0]}" "${shards[1]}"
	read -r code rc size < <(get gone)
	echo "# gone: HTTP $code, curl $rc, $size bytes" >&3
	[ "$code" = 500 ]
	grep -q '<Code>InternalError</Code>' "$back"
	# Two of three shards corrupt in the third stripe: the answer may have
	# begun, but it must not end cleanly with the whole length.
	mapfile -t shards < <(shard_files rotten)
	for s in "${shards[0]}" "${shards[1]}"; do
		printf 'garbage!' | dd of="$s" bs=1 seek=$(((1048576 + 4) * 2 + 100)) conv=notrunc 2>/dev/null
	done
	read -r code rc size < <(get rotten)
	echo "# rotten: HTTP $code, curl $rc, $size bytes" >&3
	if [ "$code" = 200 ]; then
		[ "$rc" -ne 0 ]
		[ "$size" -lt 5242880 ]
		cmp -n "$size" "$f" "$back"
	else
		[ "$code" = 500 ]
	fi
	# and the SDK sees a failure, not an object
	run awscli2 --endpoint-url "$EP" s3api get-object --bucket lost --key rotten "$back"
	[ "$status" -ne 0 ]
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
	awscli2 --endpoint-url "$EP" s3 mb s3://full >/dev/null
	awscli2 --endpoint-url "$EP" s3api put-object --bucket full --key k --body "$BATS_TEST_TMPDIR/small-obj" >/dev/null
	run awscli2 --endpoint-url "$EP" s3api put-object --bucket full --key k --body "$BATS_TEST_TMPDIR/big-obj"
	[ "$status" -ne 0 ]
	[[ "$output" == *"InsufficientStorage"* ]]
	awscli2 --endpoint-url "$EP" s3api get-object --bucket full --key k "$BATS_TEST_TMPDIR/back" >/dev/null
	cmp "$BATS_TEST_TMPDIR/small-obj" "$BATS_TEST_TMPDIR/back"
	# The space comes back: nothing of the failed write is left behind.
	run awscli2 --endpoint-url "$EP" s3api put-object --bucket full --key k2 --body "$BATS_TEST_TMPDIR/small-obj"
	[ "$status" -eq 0 ]
	stop_node
	umount "$MNT"
	MNT=
}

@test "a replaced drive 0 is rebuilt by heal --drive0-replaced, through the gateway after" {
	local f="$BATS_TEST_TMPDIR/obj" long
	head -c 5000001 /dev/urandom >"$f"
	long=$(printf 'k%.0s' $(seq 1000)) # a key stored under a hashed name
	node_rs 2 1
	aws2() { awscli2 --endpoint-url "$EP" "$@"; }
	aws2 s3 mb s3://repl >/dev/null
	aws2 s3api put-object --bucket repl --key big --body "$f" >/dev/null
	printf small | aws2 s3 cp - "s3://repl/dir/small one" >/dev/null
	printf long | aws2 s3 cp - "s3://repl/$long" >/dev/null
	aws2 s3api put-bucket-versioning --bucket repl --versioning-configuration Status=Enabled
	printf v1 | aws2 s3 cp - s3://repl/ver >/dev/null
	printf v2 | aws2 s3 cp - s3://repl/ver >/dev/null
	stop_node
	# The disk behind drive 0 is replaced: an empty directory.
	rm -rf "$ROOT/drives/d0" && mkdir "$ROOT/drives/d0"
	# Without being told, drive 0's absence means "never committed".
	run spx-obj ls --root "$ROOT" repl
	[ "$status" -ne 0 ]
	run spx-obj heal --root "$ROOT" --drive0-replaced
	[ "$status" -eq 0 ]
	[[ "$output" == "drive 0: 6 metadata files restored from the other drives"* ]]
	[[ "$output" == *"repl/big healed missing=3 corrupt=0 meta=0"* ]]
	run spx-obj verify --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" != *damaged* ]]
	# every shard of drive 0 is back
	[ "$(find "$ROOT/drives/d0" -path '*/o/big/d-*' -type f | wc -l)" -eq 1 ]
	start_node
	aws_env
	aws2 s3 cp s3://repl/big "$BATS_TEST_TMPDIR/back" >/dev/null
	cmp "$f" "$BATS_TEST_TMPDIR/back"
	[ "$(aws2 s3 cp "s3://repl/dir/small one" -)" = small ]
	[ "$(aws2 s3 cp "s3://repl/$long" -)" = long ]
	[ "$(aws2 s3 cp s3://repl/ver -)" = v2 ]
	[ "$(aws2 s3api list-object-versions --bucket repl --prefix ver --query 'length(Versions)')" = 2 ]
	[ "$(aws2 s3api get-bucket-versioning --bucket repl --query Status --output text)" = Enabled ]
}

# A node whose one drive is a fresh ext4 of 64 MiB, loop-mounted at $MNT,
# made with mkfs.ext4's extra options "$@"; started, aws_env set, EP.
node_on_ext4() {
	make_node
	MNT="$BATS_TEST_TMPDIR/ext4"
	mkdir -p "$MNT"
	truncate -s 64M "$BATS_TEST_TMPDIR/ext4.img"
	mkfs.ext4 -q -F "$@" "$BATS_TEST_TMPDIR/ext4.img"
	mount -o loop "$BATS_TEST_TMPDIR/ext4.img" "$MNT" || return 1
	printf '\n[nodes.node1.obj]\ndrives = ["%s/d0"]\n' "$MNT" >>"$ROOT/spinifex.toml"
	start_node
	aws_env
	EP="https://127.0.0.1:$S3_PORT"
}

# The syncs the gateway makes of bucket B's files for one PUT of a new
# 4 KiB key K, as strace sees them, then the object read back: one line
# per fsync or sync_file_range, "CALL PATH" (an unnamed file's path is
# the one it was made with, DIR/#INODE, even once it is linked in).
put_syncs() { # B K
	local log="$BATS_TEST_TMPDIR/strace.$2" sp i
	head -c 4096 /dev/urandom >"$BATS_TEST_TMPDIR/small"
	strace -f -qq -y -e trace=fsync,sync_file_range,recvfrom -o "$log" \
		-p "$(cat "$ROOT/run/gw.pid")" &
	sp=$!
	# Traced once a request's read shows in the log.
	for i in $(seq 100); do
		awscli2 --endpoint-url "$EP" s3api head-bucket --bucket "$1" >/dev/null
		grep -q recvfrom "$log" 2>/dev/null && break
		sleep 0.1
	done
	awscli2 --endpoint-url "$EP" s3api put-object --bucket "$1" --key "$2" \
		--body "$BATS_TEST_TMPDIR/small" >/dev/null
	kill "$sp"
	wait "$sp" || true
	grep -oE '^[0-9]+ +(fsync|sync_file_range)\([0-9]+<[^>]*>' "$log" |
		sed -E 's/^[0-9]+ +([a-z_]+)\([0-9]+<(.*)>$/\1 \2/' |
		grep -F " $MNT/d0/b/$1/"
	awscli2 --endpoint-url "$EP" s3 cp "s3://$1/$2" "$BATS_TEST_TMPDIR/back" >/dev/null
	cmp "$BATS_TEST_TMPDIR/small" "$BATS_TEST_TMPDIR/back"
}

# A new bucket B, a first key in it (its directories made), then
# put_syncs B new.
fresh_syncs() { # B
	awscli2 --endpoint-url "$EP" s3 mb "s3://$1" >/dev/null
	awscli2 --endpoint-url "$EP" s3api put-object --bucket "$1" --key warm >/dev/null
	put_syncs "$1" new
}

drop_ext4() {
	stop_node
	umount "$MNT"
	MNT=
}

@test "a small object is synced once on ext4 with a journal, with its directory without one" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to mount a file system"
	command -v strace >/dev/null || skip "no strace"
	node_on_ext4
	run fresh_syncs jrn1
	[ "$status" -eq 0 ]
	# Written and waited for, named, then one fsync of the same file.
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == "sync_file_range $MNT/d0/b/jrn1/o/#"* ]]
	[ "${lines[1]}" = "fsync ${lines[0]#sync_file_range }" ]
	drop_ext4
	# Without a journal nothing orders a name after its data: the file
	# is synced before it is named, then its directory.
	node_on_ext4 -O ^has_journal
	run fresh_syncs jrn2
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == "fsync $MNT/d0/b/jrn2/o/#"* ]]
	[ "${lines[1]}" = "fsync $MNT/d0/b/jrn2/o" ]
	drop_ext4
}
