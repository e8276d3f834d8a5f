#!/usr/bin/env bats
# The examples in examples/ work against a node, as a user would run them.

load helpers

setup_file() {
	export ROOT EC2_PORT S3_PORT
	make_node
	start_node
}

teardown_file() {
	for d in "$ROOT"/run/vm/i-*; do
		[ -d "$d" ] && spx-vm kill --root "$ROOT" "${d##*/}" >/dev/null 2>&1
	done
	stop_node
}

@test "examples/whoami.sh (aws CLI)" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	PATH="/usr/bin:$PATH" run "$SPX_TOP/examples/whoami.sh" "$ROOT"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == arn:aws:iam::*:root ]]
	[ "${lines[1]}" = us-east-1 ]
	[[ "${lines[2]}" == "us-east-1a"*"use1-az1"*"available" ]]
}

@test "examples/whoami.py (boto3)" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	run /usr/bin/python3 "$SPX_TOP/examples/whoami.py" "$ROOT"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == arn:aws:iam::*:root ]]
	[ "${lines[1]}" = us-east-1 ]
	[ "${lines[2]}" = "us-east-1a use1-az1 available" ]
}

@test "examples/launch.sh (aws CLI): image, key pair, instance, SSH, a 30 GiB volume as /dev/vdb, teardown" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	"$SPX_TOP/scripts/mkimage.sh" "$BATS_FILE_TMPDIR/spx.img" \
		>"$BATS_FILE_TMPDIR/mkimage.out" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/mkimage.out" >&2
		return 1
	}
	PATH="/usr/bin:$PATH" run "$SPX_TOP/examples/launch.sh" "$ROOT" "$BATS_FILE_TMPDIR/spx.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == i-* ]]
	[ "${lines[1]}" = "${lines[0]}.ec2.internal" ]
	[ "${lines[2]}" = "hello from user data" ]
	[[ "${lines[3]}" == vol*" 30G" ]]
	# Nothing left: no guest, no volume, no image, no key pair.
	[ -z "$(pgrep -f -- "run/vm/${lines[0]}/qmp.sock")" ]
	aws_env
	ep="https://127.0.0.1:$EC2_PORT"
	run awscli2 --endpoint-url "$ep" ec2 describe-volumes --query 'length(Volumes)'
	[ "$output" = 0 ]
	run awscli2 --endpoint-url "$ep" ec2 describe-images --owners self --query 'length(Images)'
	[ "$output" = 0 ]
	run awscli2 --endpoint-url "$ep" ec2 describe-key-pairs --query 'length(KeyPairs)'
	[ "$output" = 0 ]
}
