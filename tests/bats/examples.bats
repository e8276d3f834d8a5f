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

@test "examples/spread-group.sh (aws CLI): one instance per spread group here, the place freed at terminate, teardown" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	img=$BATS_FILE_TMPDIR/spx.img
	if [ ! -s "$img" ]; then
		"$SPX_TOP/scripts/mkimage.sh" "$img" >"$BATS_FILE_TMPDIR/mkimage.out" 2>&1 || {
			cat "$BATS_FILE_TMPDIR/mkimage.out" >&2
			return 1
		}
	fi
	PATH="/usr/bin:$PATH" run "$SPX_TOP/examples/spread-group.sh" "$ROOT" "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^pg-[0-9a-f]{17}$ ]]
	[[ "${lines[1]}" == i-* ]]
	[ "${lines[2]}" = InsufficientInstanceCapacity ]
	[[ "${lines[3]}" == i-* ]] && [ "${lines[3]}" != "${lines[1]}" ]
	[ "${lines[4]}" = done ]
	# Nothing left: no guest, no volume, no group, no image, no key pair.
	[ -z "$(pgrep -f -- "run/vm/${lines[1]}/qmp.sock")" ]
	[ -z "$(pgrep -f -- "run/vm/${lines[3]}/qmp.sock")" ]
	aws_env
	ep="https://127.0.0.1:$EC2_PORT"
	wait_for 30 eval '[ "$(awscli2 --endpoint-url "$ep" ec2 describe-volumes --query "length(Volumes)")" = 0 ]'
	run awscli2 --endpoint-url "$ep" ec2 describe-placement-groups --query 'length(PlacementGroups)'
	[ "$output" = 0 ]
	run awscli2 --endpoint-url "$ep" ec2 describe-images --owners self --query 'length(Images)'
	[ "$output" = 0 ]
	run awscli2 --endpoint-url "$ep" ec2 describe-key-pairs --query 'length(KeyPairs)'
	[ "$output" = 0 ]
}
