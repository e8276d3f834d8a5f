#!/usr/bin/env bats
# S3 lifecycle through aws v2 and boto3: the configuration and AWS's
# refusals; expiration by prefix, tags and size, never served once due;
# noncurrent versions, expired delete markers and old uploads; object lock
# winning; a pass bounded and resumed; and the node agent applying it all.
#
# The node's lifecycle day is one second (obj.lifecycle_day), so rules of
# a day come due at once; the agent's own passes are an hour apart, and
# the tests run spx-obj lifecycle (what the agent runs) themselves, with
# --now where a test needs a later time. The last test starts a node whose
# agent passes every second.

load ../bats/helpers

setup_file() {
	export ROOT EC2_PORT S3_PORT
	make_node
	printf '\n[nodes.node1.obj]\nlifecycle_day = 1\nlifecycle_interval = 86400\n' >>"$ROOT/spinifex.toml"
	start_node
	read -r AK SK < <(admin_key)
	export AK SK
}

teardown_file() { stop_node; }

setup() {
	aws_env
	EP="https://127.0.0.1:$S3_PORT"
}

aws2() { awscli2 --endpoint-url "$EP" "$@"; }
rules() { aws2 s3api put-bucket-lifecycle-configuration --bucket "$1" --lifecycle-configuration "$2"; }
keys() { spx-obj ls --root "$ROOT" "$1" | tr '\n' ' '; }
pass() { spx-obj lifecycle --root "$ROOT" "$@"; }

@test "lifecycle: configuration through aws v2, and the refusals S3 gives" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://lcconf >/dev/null
	run aws2 s3api get-bucket-lifecycle-configuration --bucket lcconf
	[[ "$output" == *"(NoSuchLifecycleConfiguration)"* ]]
	run rules lcconf '{"Rules":[{"ID":"a","Status":"Enabled","Filter":{"Prefix":"p/"},"Expiration":{"Days":0}}]}'
	[[ "$output" == *"(InvalidArgument)"*"positive integer"* ]]
	run rules lcconf '{"Rules":[{"ID":"a","Status":"Enabled","Filter":{},"Expiration":{"Date":"2030-01-01T12:00:00Z"}}]}'
	[[ "$output" == *"(InvalidArgument)"*"midnight"* ]]
	run rules lcconf '{"Rules":[{"ID":"a","Status":"Enabled","Filter":{}}]}'
	[[ "$output" == *"(InvalidRequest)"*"At least one action"* ]]
	run rules lcconf '{"Rules":[{"ID":"a","Status":"Enabled","Filter":{},"Expiration":{"Days":1}},{"ID":"a","Status":"Enabled","Filter":{},"Expiration":{"Days":2}}]}'
	[[ "$output" == *"(InvalidArgument)"*"unique"* ]]
	run rules lcconf '{"Rules":[{"ID":"a","Status":"Enabled","Filter":{"Tag":{"Key":"t","Value":"1"}},"AbortIncompleteMultipartUpload":{"DaysAfterInitiation":1}}]}'
	[[ "$output" == *"(InvalidRequest)"*"Tag-based filter"* ]]
	run rules lcconf '{"Rules":[{"ID":"a","Status":"Enabled","Filter":{},"Transitions":[{"Days":30,"StorageClass":"GLACIER"}]}]}'
	[[ "$output" == *"(NotImplemented)"* ]]
	run rules lcconf '{"Rules":[{"ID":"a","Status":"Enabled","Filter":{"And":{"ObjectSizeGreaterThan":10,"ObjectSizeLessThan":5}},"Expiration":{"Days":1}}]}'
	[[ "$output" == *"(InvalidRequest)"* ]]
	# None of those changed anything.
	run aws2 s3api get-bucket-lifecycle-configuration --bucket lcconf
	[[ "$output" == *"(NoSuchLifecycleConfiguration)"* ]]
	# A rule without an ID gets one; the rules read back as given.
	run rules lcconf '{"Rules":[{"Status":"Enabled","Filter":{"And":{"Prefix":"logs/","Tags":[{"Key":"k","Value":"v"}],"ObjectSizeGreaterThan":5}},"Expiration":{"Date":"2030-01-01T00:00:00Z"}},{"ID":"nc","Status":"Disabled","Filter":{"Prefix":""},"NoncurrentVersionExpiration":{"NoncurrentDays":3,"NewerNoncurrentVersions":2},"AbortIncompleteMultipartUpload":{"DaysAfterInitiation":7}}]}'
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-lifecycle-configuration --bucket lcconf --output json
	[ "$status" -eq 0 ]
	echo "$output" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)["Rules"]
assert len(r) == 2, r
assert len(r[0]["ID"]) == 40, r[0]
assert r[0]["Filter"]["And"] == {"Prefix": "logs/", "Tags": [{"Key": "k", "Value": "v"}], "ObjectSizeGreaterThan": 5}, r[0]
assert r[0]["Expiration"]["Date"].startswith("2030-01-01T00:00:00"), r[0]
assert r[1]["Status"] == "Disabled" and r[1]["Filter"] == {"Prefix": ""}, r[1]
assert r[1]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 3, "NewerNoncurrentVersions": 2}, r[1]
assert r[1]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}, r[1]
'
	run aws2 s3api delete-bucket-lifecycle --bucket lcconf
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-lifecycle-configuration --bucket lcconf
	[[ "$output" == *"(NoSuchLifecycleConfiguration)"* ]]
}

@test "lifecycle: the same through boto3" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	/usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, boto3, botocore
ak, sk, ep, ca = sys.argv[1:]
c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1", endpoint_url=ep, verify=ca)
c.create_bucket(Bucket="lcboto")
c.put_bucket_lifecycle_configuration(Bucket="lcboto", LifecycleConfiguration={"Rules": [
    {"ID": "old", "Status": "Enabled", "Prefix": "tmp/", "Expiration": {"Days": 30}},
    {"ID": "dm", "Status": "Enabled", "Filter": {"Prefix": "x/"},
     "Expiration": {"ExpiredObjectDeleteMarker": True}}]})
r = c.get_bucket_lifecycle_configuration(Bucket="lcboto")["Rules"]
assert r[0]["Prefix"] == "tmp/" and "Filter" not in r[0], r[0]
assert r[1]["Expiration"] == {"ExpiredObjectDeleteMarker": True}, r[1]
try:
    c.put_bucket_lifecycle_configuration(Bucket="lcboto", LifecycleConfiguration={"Rules": [
        {"ID": "x", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 1, "ExpiredObjectDeleteMarker": True}}]})
    raise AssertionError("took Days with ExpiredObjectDeleteMarker")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidArgument", e.response
c.delete_bucket_lifecycle(Bucket="lcboto")
try:
    c.get_bucket_lifecycle_configuration(Bucket="lcboto")
    raise AssertionError("still there")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchLifecycleConfiguration", e.response
PY
}

@test "lifecycle: expiration by prefix, tags and size; never served once due, then removed by the pass" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://lcexp >/dev/null
	printf x >"$BATS_TEST_TMPDIR/small"
	head -c 100 /dev/zero >"$BATS_TEST_TMPDIR/big"
	aws2 s3api put-object --bucket lcexp --key tmp/tagged --body "$BATS_TEST_TMPDIR/small" --tagging t=1 >/dev/null
	aws2 s3api put-object --bucket lcexp --key tmp/plain --body "$BATS_TEST_TMPDIR/small" >/dev/null
	aws2 s3api put-object --bucket lcexp --key logs/big --body "$BATS_TEST_TMPDIR/big" >/dev/null
	aws2 s3api put-object --bucket lcexp --key logs/small --body "$BATS_TEST_TMPDIR/small" >/dev/null
	aws2 s3api put-object --bucket lcexp --key keep --body "$BATS_TEST_TMPDIR/big" >/dev/null
	rules lcexp '{"Rules":[
		{"ID":"tagged","Status":"Enabled","Filter":{"And":{"Prefix":"tmp/","Tags":[{"Key":"t","Value":"1"}]}},"Expiration":{"Days":1}},
		{"ID":"big","Status":"Enabled","Filter":{"And":{"Prefix":"logs/","ObjectSizeGreaterThan":10}},"Expiration":{"Days":1}},
		{"ID":"far \"away\"","Status":"Enabled","Filter":{"Prefix":"keep"},"Expiration":{"Days":100000}},
		{"ID":"off","Status":"Disabled","Filter":{},"Expiration":{"Days":1}}]}'
	# Due within two seconds (a day is one): then GET and HEAD answer as
	# if it were gone, before any pass ran.
	wait_for 10 bash -c "! /usr/bin/aws --endpoint-url $EP s3api head-object --bucket lcexp --key logs/big >/dev/null 2>&1"
	run aws2 s3api get-object --bucket lcexp --key tmp/tagged "$BATS_TEST_TMPDIR/out"
	[[ "$output" == *"(NoSuchKey)"* ]]
	[ "$(keys lcexp)" = "keep logs/big logs/small tmp/plain tmp/tagged " ]
	run aws2 s3api head-object --bucket lcexp --key tmp/plain
	[ "$status" -eq 0 ]
	run aws2 s3api head-object --bucket lcexp --key logs/small
	[ "$status" -eq 0 ]
	[[ "$output" != *Expiration* ]]
	# Not due yet: HEAD says when, and by which rule (its ID encoded).
	run aws2 s3api head-object --bucket lcexp --key keep --query Expiration --output text
	[[ "$output" == 'expiry-date="'*' GMT", rule-id="far%20%22away%22"' ]]
	# So do the answers to the writes that make such an object.
	run aws2 s3api put-object --bucket lcexp --key keep2 --body "$BATS_TEST_TMPDIR/small" --query Expiration --output text
	[[ "$output" == 'expiry-date="'*' GMT", rule-id="far%20%22away%22"' ]]
	run aws2 s3api copy-object --bucket lcexp --key keep3 --copy-source lcexp/keep --query Expiration --output text
	[[ "$output" == 'expiry-date="'*' GMT", rule-id="far%20%22away%22"' ]]
	up=$(aws2 s3api create-multipart-upload --bucket lcexp --key keep4 --query UploadId --output text)
	etag=$(aws2 s3api upload-part --bucket lcexp --key keep4 --upload-id "$up" --part-number 1 --body "$BATS_TEST_TMPDIR/small" --query ETag --output text)
	run aws2 s3api complete-multipart-upload --bucket lcexp --key keep4 --upload-id "$up" \
		--multipart-upload "{\"Parts\":[{\"PartNumber\":1,\"ETag\":$etag}]}" --query Expiration --output text
	[[ "$output" == 'expiry-date="'*' GMT", rule-id="far%20%22away%22"' ]]
	run aws2 s3api put-object --bucket lcexp --key elsewhere --body "$BATS_TEST_TMPDIR/small" --query Expiration --output text
	[ "$output" = None ]
	aws2 s3api delete-object --bucket lcexp --key elsewhere >/dev/null
	for k in keep2 keep3 keep4; do aws2 s3api delete-object --bucket lcexp --key $k >/dev/null; done
	# An expired source is not copied either.
	run aws2 s3api copy-object --bucket lcexp --key copy --copy-source lcexp/logs/big
	[[ "$output" == *"(NoSuchKey)"* ]]
	run pass lcexp
	[ "$status" -eq 0 ]
	[[ "$output" == *"lcexp: 5 versions looked at, 2 expired"* ]]
	[ "$(keys lcexp)" = "keep logs/small tmp/plain " ]
	# A second pass finds nothing more to do.
	run pass lcexp
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "lifecycle: noncurrent versions, expired delete markers, old uploads, and object lock winning" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	local now v1 v2 v3 m out
	now=$(date +%s)
	aws2 s3api create-bucket --bucket lcver --object-lock-enabled-for-bucket >/dev/null
	printf y >"$BATS_TEST_TMPDIR/f"
	md5=$(openssl md5 -binary "$BATS_TEST_TMPDIR/f" | base64)
	put() { aws2 s3api put-object --bucket lcver --key "$1" --body "$BATS_TEST_TMPDIR/f" --content-md5 "$md5" --query VersionId --output text "${@:2}"; }
	v1=$(put v/k)
	v2=$(put v/k)
	v3=$(put v/k)
	m=$(put m/k)
	aws2 s3api delete-object --bucket lcver --key m/k >/dev/null
	aws2 s3api delete-object --bucket lcver --key m/k --version-id "$m" >/dev/null
	l1=$(put locked/k --object-lock-mode GOVERNANCE --object-lock-retain-until-date 2099-01-01T00:00:00Z)
	put locked/k >/dev/null
	aws2 s3api create-multipart-upload --bucket lcver --key up/k >/dev/null
	rules lcver '{"Rules":[
		{"ID":"v","Status":"Enabled","Filter":{"Prefix":"v/"},"Expiration":{"Days":1},"NoncurrentVersionExpiration":{"NoncurrentDays":1,"NewerNoncurrentVersions":1}},
		{"ID":"m","Status":"Enabled","Filter":{"Prefix":"m/"},"Expiration":{"ExpiredObjectDeleteMarker":true}},
		{"ID":"l","Status":"Enabled","Filter":{"Prefix":"locked/"},"NoncurrentVersionExpiration":{"NoncurrentDays":1}},
		{"ID":"u","Status":"Enabled","Filter":{},"AbortIncompleteMultipartUpload":{"DaysAfterInitiation":2}}]}'
	# A hundred days on (of a second each: the calls above took some):
	# v3 is covered by a delete marker, v1 goes (v2 is the
	# one newer noncurrent version kept), m/k's lone marker goes, the
	# locked version stays, the upload is aborted.
	run pass --now $((now + 100)) lcver
	[ "$status" -eq 0 ]
	[[ "$output" == *"1 expired, 1 noncurrent removed, 1 delete markers removed, 1 uploads aborted, 1 kept by object lock"* ]]
	out=$(aws2 s3api list-object-versions --bucket lcver --output json)
	echo "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
v1, v2, v3, l1 = sys.argv[1:]
vs = [(x["Key"], x["VersionId"]) for x in d.get("Versions", [])]
ms = [(x["Key"], x["IsLatest"]) for x in d.get("DeleteMarkers", [])]
assert ("v/k", v3) in vs and ("v/k", v2) in vs and ("v/k", v1) not in vs, vs
assert ("v/k", True) in ms and not any(k == "m/k" for k, _ in ms), ms
assert ("locked/k", l1) in vs, vs
' "$v1" "$v2" "$v3" "$l1"
	run aws2 s3api list-multipart-uploads --bucket lcver --query 'Uploads[].Key' --output text
	[ "$output" = None ]
	# Two hundred days on: v3 is the newest noncurrent, v2 goes.
	run pass --now $((now + 200)) lcver
	[ "$status" -eq 0 ]
	[[ "$output" == *"0 expired, 1 noncurrent removed"* ]]
	run aws2 s3api list-object-versions --bucket lcver --prefix v/ --query 'Versions[].VersionId' --output text
	[ "$output" = "$v3" ]
	# The locked version is still readable.
	run aws2 s3api head-object --bucket lcver --key locked/k --version-id "$l1"
	[ "$status" -eq 0 ]
}

@test "lifecycle: a pass stops at its budget between keys and the next goes on" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://lcbudget >/dev/null
	for k in a b c d e; do spx-obj put --root "$ROOT" lcbudget "$k" /dev/null; done
	rules lcbudget '{"Rules":[{"ID":"all","Status":"Enabled","Filter":{},"Expiration":{"Date":"2020-01-01T00:00:00Z"}}]}'
	run pass --budget 2 lcbudget
	[ "$status" -eq 1 ]
	[[ "$output" == *"2 versions looked at, 2 expired"*"more next run"* ]]
	[ "$(keys lcbudget)" = "c d e " ]
	run pass --budget 2 lcbudget
	[ "$status" -eq 1 ]
	[ "$(keys lcbudget)" = "e " ]
	run pass --budget 2 lcbudget
	[ "$status" -eq 0 ]
	[ -z "$(keys lcbudget)" ]
	# Every bucket, then --unfinished: on with those that stopped, alone.
	for k in a b c d e; do spx-obj put --root "$ROOT" lcbudget "$k" /dev/null; done
	aws2 s3 mb s3://lcside >/dev/null
	spx-obj put --root "$ROOT" lcside one /dev/null
	rules lcside '{"Rules":[{"ID":"all","Status":"Enabled","Filter":{},"Expiration":{"Date":"2020-01-01T00:00:00Z"}}]}'
	run pass --budget 2
	[ "$status" -eq 1 ]
	[[ "$output" == *"lcbudget: 2 versions looked at, 2 expired"*"more next run"* ]]
	[[ "$output" == *"lcside: 1 versions looked at, 1 expired"* ]]
	spx-obj put --root "$ROOT" lcside two /dev/null
	run pass --budget 2 --unfinished
	[ "$status" -eq 1 ]
	[[ "$output" == "lcbudget: 2 versions looked at, 2 expired"*"more next run" ]]
	[ "$(keys lcbudget)" = "e " ]
	[ "$(keys lcside)" = "two " ]
	run pass --budget 2 --unfinished
	[ "$status" -eq 0 ]
	[ -z "$(keys lcbudget)" ]
	[ "$(keys lcside)" = "two " ]
	run pass
	[ "$status" -eq 0 ]
	[ -z "$(keys lcside)" ]
	# Bad options: a usage error, nothing done.
	run pass --budget -1 lcbudget
	[ "$status" -eq 100 ]
	run pass nosuchbucket
	[ "$status" -ne 0 ]
}

@test "lifecycle: the node agent applies the rules by itself" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	local first=$ROOT
	make_node
	printf '\n[nodes.node1.obj]\nlifecycle_day = 1\nlifecycle_interval = 1\n' >>"$ROOT/spinifex.toml"
	start_node
	aws_env
	EP="https://127.0.0.1:$S3_PORT"
	aws2 s3 mb s3://lcagent >/dev/null
	printf z >"$BATS_TEST_TMPDIR/z"
	aws2 s3api put-object --bucket lcagent --key gone --body "$BATS_TEST_TMPDIR/z" >/dev/null
	aws2 s3api put-object --bucket lcagent --key stays --body "$BATS_TEST_TMPDIR/z" >/dev/null
	rules lcagent '{"Rules":[{"ID":"g","Status":"Enabled","Filter":{"Prefix":"gone"},"Expiration":{"Days":1}}]}'
	wait_for 30 bash -c "[ \"\$(spx-obj ls --root $ROOT lcagent)\" = stays ]"
	wait_for 10 grep -q "lifecycle: lcagent: .* 1 expired" "$ROOT/log/agent.log"
	stop_node
	ROOT=$first
}
