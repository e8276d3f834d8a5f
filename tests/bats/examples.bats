#!/usr/bin/env bats
# The examples in examples/ work against a node, as a user would run them.

load helpers

setup_file() {
	export ROOT EC2_PORT S3_PORT
	make_node
	start_node
}

teardown_file() { stop_node; }

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
