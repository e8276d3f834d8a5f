#!/usr/bin/env bats
# Real clients against a gateway the test starts, over HTTPS with the node
# CA: aws CLI v2 (/usr/bin/aws), aws CLI v1, boto3 and the npm SDK v3.

load ../bats/helpers

setup_file() {
	file_node
	ACCOUNT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["keys"][0]["AccountId"])' "$ROOT/credentials.json")
	export ACCOUNT
}

teardown_file() { stop_node; }

setup() { aws_env; }

@test "aws v2: ec2 describe-regions through the profile (ca_bundle)" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
	run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" ec2 describe-regions --output json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); r=d["Regions"][0]; assert r["RegionName"]=="us-east-1" and r["OptInStatus"]=="opt-in-not-required", d' "$output"
}

@test "aws v2: --ca-bundle on the command line, without the profile's" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
	sed '/ca_bundle/d' "$ROOT/aws/config" >"$BATS_TEST_TMPDIR/config"
	AWS_CONFIG_FILE="$BATS_TEST_TMPDIR/config" run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" ec2 describe-regions --output text
	[ "$status" -ne 0 ]
	[[ "$output" == *"SSL"* || "$output" == *"certificate"* ]]
	AWS_CONFIG_FILE="$BATS_TEST_TMPDIR/config" run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" --ca-bundle "$ROOT/tls/ca.pem" ec2 describe-regions --output text
	[ "$status" -eq 0 ]
	[[ "$output" == *"us-east-1"* ]]
}

@test "aws v2: sts get-caller-identity" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
	run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" sts get-caller-identity --output json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["Account"]==sys.argv[2] and d["Arn"]=="arn:aws:iam::%s:root" % sys.argv[2] and d["UserId"]==sys.argv[2], d' "$output" "$ACCOUNT"
}

@test "aws v2: describe-availability-zones, describe-account-attributes, s3 ls" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
	run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" ec2 describe-availability-zones --output text
	[ "$status" -eq 0 ]
	[[ "$output" == *"us-east-1a"* && "$output" == *"use1-az1"* && "$output" == *"available"* ]]
	run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" ec2 describe-account-attributes --attribute-names supported-platforms --output text
	[ "$status" -eq 0 ]
	[[ "$output" == *"VPC"* ]]
	run awscli2 --endpoint-url "https://127.0.0.1:$S3_PORT" s3 ls
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run awscli2 --endpoint-url "https://127.0.0.1:$S3_PORT" s3api list-buckets --output json
	[ "$status" -eq 0 ]
	[[ "$output" == *"\"ID\": \"$ACCOUNT\""* ]]
}

@test "aws v2: errors come back as the CLI expects them" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
	run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" ec2 describe-regions --region-names mars-north-1
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidParameterValue) when calling the DescribeRegions operation"*": Invalid region: mars-north-1"* ]]
	AWS_SECRET_ACCESS_KEY=wrong AWS_ACCESS_KEY_ID=$AK run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" ec2 describe-regions
	[ "$status" -eq 254 ]
	[[ "$output" == *"(SignatureDoesNotMatch)"* ]]
	AWS_SECRET_ACCESS_KEY=x AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" sts get-caller-identity
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidClientTokenId)"* ]]
	run awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" ec2 describe-regions --dry-run
	[ "$status" -eq 254 ]
	[[ "$output" == *"(DryRunOperation)"* ]]
}

@test "aws v1: ec2 describe-regions and sts get-caller-identity" {
	v1=$(aws_v1) || skip "no aws CLI v1 on PATH"
	run "$v1" --endpoint-url "https://127.0.0.1:$EC2_PORT" ec2 describe-regions --output json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"RegionName": "us-east-1"'* ]]
	run "$v1" --endpoint-url "https://127.0.0.1:$EC2_PORT" sts get-caller-identity --output json
	[ "$status" -eq 0 ]
	[[ "$output" == *"\"Account\": \"$ACCOUNT\""* ]]
	run "$v1" --endpoint-url "https://127.0.0.1:$S3_PORT" s3 ls
	[ "$status" -eq 0 ]
}

@test "boto3 (Debian python3-boto3): describe_regions and get_caller_identity" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	run /usr/bin/python3 - "$EC2_PORT" "$ROOT/tls/ca.pem" "$ACCOUNT" <<'PY'
import sys, boto3
port, ca, account = sys.argv[1], sys.argv[2], sys.argv[3]
s = boto3.session.Session(profile_name="spx")
ep = "https://127.0.0.1:%s" % port
ec2 = s.client("ec2", endpoint_url=ep, verify=ca)
sts = s.client("sts", endpoint_url=ep, verify=ca)
r = ec2.describe_regions()["Regions"]
assert [x["RegionName"] for x in r] == ["us-east-1"], r
z = ec2.describe_availability_zones()["AvailabilityZones"]
assert z[0]["ZoneName"] == "us-east-1a" and z[0]["State"] == "available", z
me = sts.get_caller_identity()
assert me["Account"] == account and me["Arn"].endswith(":root"), me
try:
    ec2.describe_regions(Filters=[{"Name": "nope", "Values": ["x"]}])
    raise SystemExit("no error")
except ec2.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidParameterValue", e.response
print("boto3 ok", boto3.__version__)
PY
	[ "$status" -eq 0 ]
	[[ "$output" == *"boto3 ok"* ]]
}

@test "npm AWS SDK v3: DescribeRegions and GetCallerIdentity" {
	[ -d "$SPX_TOP/tests/clients/node_modules/@aws-sdk/client-ec2" ] || skip "npm SDK v3 not installed (scripts/deps.sh)"
	run env NODE_EXTRA_CA_CERTS="$ROOT/tls/ca.pem" AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK" \
		AWS_REGION=us-east-1 AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
		node "$SPX_TOP/tests/clients/sdk-v3.mjs" "https://127.0.0.1:$EC2_PORT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"regions us-east-1"* ]]
	[[ "$output" == *"zones us-east-1a/use1-az1/available"* ]]
	[[ "$output" == *"account $ACCOUNT"* ]]
	[[ "$output" == *"error InvalidParameterValue 400"* ]]
}

@test "plain HTTP on loopback (--http) works with the CLI" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
	local saved=$ROOT
	make_node --http
	start_node
	aws_env
	run awscli2 --endpoint-url "http://127.0.0.1:$EC2_PORT" sts get-caller-identity --output text
	stop_node
	ROOT=$saved
	[ "$status" -eq 0 ]
	[[ "$output" == *":root"* ]]
}
