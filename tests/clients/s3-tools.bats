#!/usr/bin/env bats
# S3 through third-party tools: rclone (an env-only remote) and s3cmd (a
# generated config), against a node the test starts, over HTTPS with the
# node CA, moving a tree with empty, multi-MiB, nested, spaced and unicode
# names.

load ../bats/helpers

bats_require_minimum_version 1.5.0

setup_file() {
	file_node
	# The tree both tools move.
	local t="$BATS_FILE_TMPDIR/tree"
	mkdir -p "$t/a/b c/ü" "$t/d"
	: >"$t/zero"
	: >"$t/a/b c/empty file"
	echo hello >"$t/a/b c/ü/日本語 ☃.txt"
	echo x >"$t/plus+sign&amp=.txt"
	head -c 3000000 /dev/urandom >"$t/a/f3m"
	head -c 12000000 /dev/urandom >"$t/a/b c/ü/größe 12m.bin"
	head -c 1 /dev/urandom >"$t/d/one"
	export TREE="$t"
}

teardown_file() { stop_node; }

setup() {
	# The AWS SDK in rclone takes AWS_CA_BUNDLE and then fails with
	# "LoadCustomCABundleError ... unsupported transport".
	unset AWS_CA_BUNDLE REQUESTS_CA_BUNDLE AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	BUCKET="t-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
}

# "size path" of every file under $1, sorted: what a listing must show.
tree_listing() {
	(cd "$1" && find . -type f -printf '%s %P\n' | LC_ALL=C sort)
}

# --- rclone -----------------------------------------------------------------

rclone_env() {
	command -v rclone >/dev/null 2>&1 || skip "rclone is not installed"
	export RCLONE_CONFIG=/dev/null
	export RCLONE_CONFIG_SPX_TYPE=s3 RCLONE_CONFIG_SPX_PROVIDER=Other
	export RCLONE_CONFIG_SPX_ENDPOINT="https://127.0.0.1:$S3_PORT"
	export RCLONE_CONFIG_SPX_ACCESS_KEY_ID="$AK" RCLONE_CONFIG_SPX_SECRET_ACCESS_KEY="$SK"
	export RCLONE_CONFIG_SPX_REGION=us-east-1
	export RCLONE_CA_CERT="$ROOT/tls/ca.pem"
}

@test "rclone: mkdir, sync a tree, check, ls, delete, rmdir" {
	rclone_env
	run rclone mkdir "spx:$BUCKET"
	[ "$status" -eq 0 ]
	run rclone sync "$TREE" "spx:$BUCKET/t"
	[ "$status" -eq 0 ]
	run rclone check "$TREE" "spx:$BUCKET/t"
	[ "$status" -eq 0 ]
	[[ "$output" == *": 0 differences found"* ]]
	[[ "$output" == *": 7 matching files"* ]]
	run rclone check --download "$TREE" "spx:$BUCKET/t"
	[ "$status" -eq 0 ]
	[[ "$output" == *": 0 differences found"* ]]
	run --separate-stderr rclone ls "spx:$BUCKET/t"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$(sed 's/^ *//' <<<"$output" | LC_ALL=C sort)" = "$(tree_listing "$TREE")" ]
	# A second sync has nothing to do.
	run rclone sync -v "$TREE" "spx:$BUCKET/t"
	[ "$status" -eq 0 ]
	[[ "$output" != *"Copied"* ]]
	run rclone copy "spx:$BUCKET/t" "$BATS_TEST_TMPDIR/back"
	[ "$status" -eq 0 ]
	diff -r "$TREE" "$BATS_TEST_TMPDIR/back"
	run rclone rmdir "spx:$BUCKET"
	[ "$status" -ne 0 ]
	run rclone delete "spx:$BUCKET"
	[ "$status" -eq 0 ]
	run --separate-stderr rclone ls "spx:$BUCKET"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run rclone rmdir "spx:$BUCKET"
	[ "$status" -eq 0 ]
	run --separate-stderr rclone lsd spx:
	[ "$status" -eq 0 ]
	[[ "$output" != *" $BUCKET"* ]]
}

@test "rclone: multipart upload, modtime update by server-side copy, moveto" {
	rclone_env
	local r=(--s3-upload-cutoff 5M --s3-chunk-size 5M)
	run rclone mkdir "spx:$BUCKET"
	[ "$status" -eq 0 ]
	run rclone copyto "${r[@]}" "$TREE/a/b c/ü/größe 12m.bin" "spx:$BUCKET/big"
	[ "$status" -eq 0 ]
	run rclone copyto "spx:$BUCKET/big" "$BATS_TEST_TMPDIR/big"
	[ "$status" -eq 0 ]
	cmp "$TREE/a/b c/ü/größe 12m.bin" "$BATS_TEST_TMPDIR/big"
	# rclone keeps the md5 of a multipart object in x-amz-meta-md5chksum.
	run rclone md5sum "spx:$BUCKET/big"
	[ "$status" -eq 0 ]
	[ "${output%% *}" = "$(md5sum <"$TREE/a/b c/ü/größe 12m.bin" | cut -d' ' -f1)" ]
	# A new mtime only: rclone copies the object onto itself (REPLACE).
	cp "$TREE/a/b c/ü/größe 12m.bin" "$BATS_TEST_TMPDIR/src"
	touch -d '2020-01-02 03:04:05 UTC' "$BATS_TEST_TMPDIR/src"
	run rclone copyto -v "${r[@]}" "$BATS_TEST_TMPDIR/src" "spx:$BUCKET/big"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Updated modification time in destination"* ]]
	run --separate-stderr rclone lsjson --hash "spx:$BUCKET/big"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"ModTime":"2020-01-02T03:04:05'* ]]
	[[ "$output" == *'"Size":12000000'* ]]
	run rclone moveto "spx:$BUCKET/big" "spx:$BUCKET/moved big"
	[ "$status" -eq 0 ]
	run --separate-stderr rclone lsf "spx:$BUCKET"
	[ "$status" -eq 0 ]
	[ "$output" = "moved big" ]
	run rclone purge "spx:$BUCKET"
	[ "$status" -eq 0 ]
}

@test "rclone: listings one key per page, ListObjects v1 and v2, url-encoded or not" {
	rclone_env
	run rclone mkdir "spx:$BUCKET"
	[ "$status" -eq 0 ]
	run rclone sync "$TREE" "spx:$BUCKET"
	[ "$status" -eq 0 ]
	local v e
	for v in 1 2; do
		for e in true false; do
			run rclone check --s3-list-version $v --s3-list-url-encode $e --s3-list-chunk 1 "$TREE" "spx:$BUCKET"
			[ "$status" -eq 0 ]
			[[ "$output" == *": 0 differences found"* && "$output" == *": 7 matching files"* ]]
		done
	done
	run --separate-stderr rclone lsf --s3-list-version 1 --s3-list-chunk 1 "spx:$BUCKET/a"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'b c/\nf3m')" ]
	run rclone purge "spx:$BUCKET"
	[ "$status" -eq 0 ]
}

# --- s3cmd ------------------------------------------------------------------

s3cmd_env() {
	command -v s3cmd >/dev/null 2>&1 || skip "s3cmd is not installed"
	CFG="$BATS_TEST_TMPDIR/s3cfg"
	cat >"$CFG" <<-EOF
	[default]
	access_key = $AK
	secret_key = $SK
	host_base = 127.0.0.1:$S3_PORT
	host_bucket = 127.0.0.1:$S3_PORT
	bucket_location = us-east-1
	use_https = True
	ca_certs_file = $ROOT/tls/ca.pem
	check_ssl_certificate = True
	check_ssl_hostname = True
	signature_v2 = ${1:-False}
	EOF
}

s3c() { s3cmd -c "$CFG" "$@"; }

@test "s3cmd: mb, put, ls, get, info, del, rb" {
	s3cmd_env
	run s3c mb "s3://$BUCKET"
	[ "$status" -eq 0 ]
	[ "$output" = "Bucket 's3://$BUCKET/' created" ]
	# The type named: s3cmd's guess from random bytes (libmagic) is at
	# times another (a flake seen once: no MIME line to match).
	run s3c put --mime-type=application/octet-stream "$TREE/a/f3m" "s3://$BUCKET/dir/f 3m"
	[ "$status" -eq 0 ]
	run s3c put "$TREE/a/b c/ü/日本語 ☃.txt" "s3://$BUCKET/dir/"
	[ "$status" -eq 0 ]
	run s3c put "$TREE/zero" "s3://$BUCKET/zero"
	[ "$status" -eq 0 ]
	run s3c ls "s3://$BUCKET"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" =~ ^\ +DIR\ +s3://$BUCKET/dir/$ ]]
	[[ "${lines[1]}" =~ \ 0\ +s3://$BUCKET/zero$ ]]
	run s3c ls -r "s3://$BUCKET"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "$output" =~ \ 3000000\ +s3://$BUCKET/dir/f\ 3m ]]
	[[ "$output" =~ \ 6\ +s3://$BUCKET/dir/日本語\ ☃\.txt ]]
	run s3c get "s3://$BUCKET/dir/f 3m" "$BATS_TEST_TMPDIR/f"
	[ "$status" -eq 0 ]
	cmp "$TREE/a/f3m" "$BATS_TEST_TMPDIR/f"
	run s3c get "s3://$BUCKET/dir/日本語 ☃.txt" "$BATS_TEST_TMPDIR/u"
	[ "$status" -eq 0 ]
	cmp "$TREE/a/b c/ü/日本語 ☃.txt" "$BATS_TEST_TMPDIR/u"
	run s3c info "s3://$BUCKET/dir/f 3m"
	[ "$status" -eq 0 ]
	[[ "$output" == *"File size: 3000000"* ]]
	[[ "$output" == *"MD5 sum:   $(md5sum <"$TREE/a/f3m" | cut -d' ' -f1)"* ]]
	[[ "$output" == *"MIME type: application/octet-stream"* ]]
	run s3c rb "s3://$BUCKET"
	[ "$status" -ne 0 ]
	[[ "$output" == *"409 (BucketNotEmpty)"* ]]
	run s3c del "s3://$BUCKET/dir/f 3m" "s3://$BUCKET/dir/日本語 ☃.txt" "s3://$BUCKET/zero"
	[ "$status" -eq 0 ]
	run s3c get "s3://$BUCKET/zero" "$BATS_TEST_TMPDIR/z"
	[ "$status" -eq 64 ]
	[[ "$output" == *"Source object 's3://$BUCKET/zero' does not exist."* ]]
	run s3c ls -r "s3://$BUCKET"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run s3c rb "s3://$BUCKET"
	[ "$status" -eq 0 ]
	[ "$output" = "Bucket 's3://$BUCKET/' removed" ]
	run s3c ls
	[ "$status" -eq 0 ]
	[[ "$output" != *"s3://$BUCKET"* ]]
}

@test "s3cmd: expire (a lifecycle rule), getlifecycle, dellifecycle" {
	s3cmd_env
	s3c mb "s3://$BUCKET-lc" >/dev/null
	run s3c expire "s3://$BUCKET-lc" --expiry-days 30 --expiry-prefix logs/
	[ "$status" -eq 0 ]
	run s3c getlifecycle "s3://$BUCKET-lc"
	[ "$status" -eq 0 ]
	[[ "$output" == *"<Days>30</Days>"* ]]
	[[ "$output" == *"<Prefix>logs/</Prefix>"* ]]
	run s3c dellifecycle "s3://$BUCKET-lc"
	[ "$status" -eq 0 ]
	run s3c getlifecycle "s3://$BUCKET-lc"
	[[ "$output" == *"404 (NoSuchLifecycleConfiguration)"* ]]
	s3c rb "s3://$BUCKET-lc" >/dev/null
}

@test "s3cmd in its SigV2 mode: mb, multipart put, ls, get, cp, signurl, del, rb" {
	s3cmd_env True
	run s3c mb "s3://$BUCKET"
	[ "$status" -eq 0 ]
	run s3c put -v --multipart-chunk-size-mb=5 "$TREE/a/b c/ü/größe 12m.bin" "s3://$BUCKET/d/größe 12m+"
	[ "$status" -eq 0 ]
	[ "$(grep -c "^INFO: Sending file" <<<"$output")" -eq 3 ]
	run s3c put --mime-type=text/plain "$TREE/a/b c/ü/日本語 ☃.txt" "s3://$BUCKET/d/"
	[ "$status" -eq 0 ]
	run s3c ls -r "s3://$BUCKET"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	run s3c get "s3://$BUCKET/d/größe 12m+" "$BATS_TEST_TMPDIR/g"
	[ "$status" -eq 0 ]
	cmp "$TREE/a/b c/ü/größe 12m.bin" "$BATS_TEST_TMPDIR/g"
	run s3c cp "s3://$BUCKET/d/日本語 ☃.txt" "s3://$BUCKET/copy"
	[ "$status" -eq 0 ]
	# signurl makes a SigV2 query URL (written http:// whatever use_https
	# says).
	url=$(s3c signurl "s3://$BUCKET/copy" +300)
	[[ "$url" == *"AWSAccessKeyId="*"Expires="*"Signature="* ]]
	run curl -s --cacert "$ROOT/tls/ca.pem" "${url/http:/https:}"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$TREE/a/b c/ü/日本語 ☃.txt")" ]
	run s3c del -r --force "s3://$BUCKET"
	[ "$status" -eq 0 ]
	run s3c rb "s3://$BUCKET"
	[ "$status" -eq 0 ]
}

@test "s3cmd: multipart put, cp, mv, sync both ways, rm -r" {
	s3cmd_env
	run s3c mb "s3://$BUCKET"
	[ "$status" -eq 0 ]
	# -v says "Sending file" once per part.
	run s3c put -v --multipart-chunk-size-mb=5 "$TREE/a/b c/ü/größe 12m.bin" "s3://$BUCKET/mp"
	[ "$status" -eq 0 ]
	[ "$(grep -c "^INFO: Sending file" <<<"$output")" -eq 3 ]
	run s3c get "s3://$BUCKET/mp" "$BATS_TEST_TMPDIR/mp"
	[ "$status" -eq 0 ]
	cmp "$TREE/a/b c/ü/größe 12m.bin" "$BATS_TEST_TMPDIR/mp"
	run s3c cp "s3://$BUCKET/mp" "s3://$BUCKET/copy of mp"
	[ "$status" -eq 0 ]
	run s3c mv "s3://$BUCKET/copy of mp" "s3://$BUCKET/moved"
	[ "$status" -eq 0 ]
	run s3c get "s3://$BUCKET/moved" "$BATS_TEST_TMPDIR/moved"
	[ "$status" -eq 0 ]
	cmp "$TREE/a/b c/ü/größe 12m.bin" "$BATS_TEST_TMPDIR/moved"
	run s3c sync "$TREE/" "s3://$BUCKET/sync/"
	[ "$status" -eq 0 ]
	[[ "$output" == *"[7 of 7]"* ]]
	run s3c sync "s3://$BUCKET/sync/" "$BATS_TEST_TMPDIR/back/"
	[ "$status" -eq 0 ]
	diff -r "$TREE" "$BATS_TEST_TMPDIR/back"
	run s3c du "s3://$BUCKET"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^\ *39000009\ +9\ objects\ s3://$BUCKET/$ ]]
	run s3c rm -r --force "s3://$BUCKET"
	[ "$status" -eq 0 ]
	run s3c rb "s3://$BUCKET"
	[ "$status" -eq 0 ]
}
