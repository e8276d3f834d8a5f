#!/usr/bin/env bats
# S3 versioning and tagging through real clients: aws v2 (/usr/bin/aws),
# boto3 and aws v1, over HTTPS with the node CA.

load ../bats/helpers

setup_file() { file_node; }

teardown_file() { stop_node; }

setup() {
	aws_env
	EP="https://127.0.0.1:$S3_PORT"
	B=v$RANDOM$RANDOM
	printf 'one' >"$BATS_TEST_TMPDIR/1"
	printf 'two!' >"$BATS_TEST_TMPDIR/2"
	printf 'three' >"$BATS_TEST_TMPDIR/3"
}

# Remove every version and marker of $B, then $B itself.
teardown() {
	[ -x /usr/bin/aws ] || return 0
	local k v
	while read -r k v; do
		[ -n "$k" ] && [ "$k" != None ] &&
			aws2 s3api delete-object --bucket "$B" --key "$k" --version-id "$v" >/dev/null 2>&1
	done < <(aws2 s3api list-object-versions --bucket "$B" --output text \
		--query '[Versions[].[Key,VersionId], DeleteMarkers[].[Key,VersionId]][][]' 2>/dev/null)
	aws2 s3api delete-bucket --bucket "$B" >/dev/null 2>&1 || true
}

aws2() { awscli2 --endpoint-url "$EP" "$@"; }
need_aws2() { [ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"; }

@test "aws v2: bucket versioning: none, Enabled, Suspended; bad bodies" {
	need_aws2
	aws2 s3api create-bucket --bucket "$B" >/dev/null
	run aws2 s3api get-bucket-versioning --bucket "$B" --output json
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	run aws2 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/1" --query VersionId --output text
	[ "$output" = None ]
	run aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Sometimes
	[[ "$output" == *"(MalformedXML)"* ]]
	run aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Enabled,MFADelete=Enabled
	[[ "$output" == *"(NotImplemented)"* ]]
	run aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Enabled
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-versioning --bucket "$B" --query Status --output text
	[ "$output" = Enabled ]
	run aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Suspended
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-versioning --bucket "$B" --query Status --output text
	[ "$output" = Suspended ]
	# The object from before versioning is the null version.
	run aws2 s3api head-object --bucket "$B" --key k --query VersionId --output text
	[ "$output" = null ]
}

@test "aws v2: versions, delete markers, GET/HEAD/DELETE by version id" {
	need_aws2
	aws2 s3api create-bucket --bucket "$B" >/dev/null
	aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Enabled
	v1=$(aws2 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/1" --query VersionId --output text)
	v2=$(aws2 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/2" --query VersionId --output text)
	[[ "$v1" =~ ^[A-Za-z0-9._]{32}$ ]]
	[[ "$v2" =~ ^[A-Za-z0-9._]{32}$ ]]
	[ "$v1" != "$v2" ]
	run aws2 s3api list-object-versions --bucket "$B" --query 'Versions[].[Key,VersionId,IsLatest,Size]' --output text
	[ "$output" = "$(printf 'k\t%s\tTrue\t4\nk\t%s\tFalse\t3' "$v2" "$v1")" ]
	aws2 s3api get-object --bucket "$B" --key k --version-id "$v1" "$BATS_TEST_TMPDIR/o" >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/o")" = one ]
	run aws2 s3api head-object --bucket "$B" --key k --query '[VersionId,ContentLength]' --output text
	[ "$output" = "$(printf '%s\t4' "$v2")" ]
	# A delete makes a marker.
	run aws2 s3api delete-object --bucket "$B" --key k --query '[DeleteMarker,VersionId]' --output text
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^True$'\t'([A-Za-z0-9._]{32})$ ]]
	dm=${BASH_REMATCH[1]}
	run aws2 s3api get-object --bucket "$B" --key k "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(NoSuchKey)"* ]]
	run aws2 s3api get-object --bucket "$B" --key k --version-id "$dm" "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(MethodNotAllowed)"* ]]
	run aws2 --debug s3api head-object --bucket "$B" --key k --version-id "$dm"
	[[ "$output" == *'" 405 0'* ]]
	[[ "$output" == *"'x-amz-delete-marker': 'true'"* ]]
	run aws2 --debug s3api head-object --bucket "$B" --key k
	[[ "$output" == *'" 404 0'* ]]
	[[ "$output" == *"'x-amz-delete-marker': 'true', 'x-amz-version-id': '$dm'"* ]]
	run aws2 s3api get-object --bucket "$B" --key k --version-id 'not/an/id' "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(InvalidArgument)"*"Invalid version id specified"* ]]
	run aws2 s3api get-object --bucket "$B" --key k --version-id AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(NoSuchVersion)"* ]]
	run aws2 s3api list-objects-v2 --bucket "$B" --query 'Contents[].Key' --output text
	[ "$output" = None ]
	run aws2 s3api list-object-versions --bucket "$B" --query 'DeleteMarkers[].[Key,VersionId,IsLatest]' --output text
	[ "$output" = "$(printf 'k\t%s\tTrue' "$dm")" ]
	# Only versions and markers left: the bucket is not empty.
	run aws2 s3api delete-bucket --bucket "$B"
	[[ "$output" == *"(BucketNotEmpty)"* ]]
	# Removing the marker brings v2 back; removing v2 leaves v1.
	run aws2 s3api delete-object --bucket "$B" --key k --version-id "$dm" --query '[DeleteMarker,VersionId]' --output text
	[ "$output" = "$(printf 'True\t%s' "$dm")" ]
	aws2 s3api get-object --bucket "$B" --key k "$BATS_TEST_TMPDIR/o" >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/o")" = two! ]
	run aws2 s3api delete-object --bucket "$B" --key k --version-id "$v2" --query VersionId --output text
	[ "$output" = "$v2" ]
	aws2 s3api get-object --bucket "$B" --key k "$BATS_TEST_TMPDIR/o" >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/o")" = one ]
	aws2 s3api delete-object --bucket "$B" --key k --version-id "$v1" >/dev/null
	run aws2 s3api delete-bucket --bucket "$B"
	[ "$status" -eq 0 ]
}

@test "aws v2: list-object-versions pages, prefixes, delimiter, url encoding" {
	need_aws2
	aws2 s3api create-bucket --bucket "$B" >/dev/null
	aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Enabled
	for k in a/1 a/1 b 'c d' c/x c/x c/x Z; do
		aws2 s3api put-object --bucket "$B" --key "$k" --body "$BATS_TEST_TMPDIR/1" >/dev/null
	done
	aws2 s3api delete-object --bucket "$B" --key b >/dev/null
	run aws2 s3api list-object-versions --bucket "$B" --query 'length(Versions)'
	[ "$output" = 8 ]
	# Byte order of keys (Z first), newest first within a key.
	run aws2 s3api list-object-versions --bucket "$B" --query 'Versions[].[Key,IsLatest]' --output text
	[ "$output" = "$(printf 'Z\tTrue\na/1\tTrue\na/1\tFalse\nb\tFalse\nc d\tTrue\nc/x\tTrue\nc/x\tFalse\nc/x\tFalse')" ]
	# One page of three by hand: the markers say where the next starts.
	run aws2 s3api list-object-versions --bucket "$B" --max-keys 3 --no-paginate \
		--query '[IsTruncated,NextKeyMarker,length(Versions)]' --output text
	[ "$output" = "$(printf 'True\ta/1\t3')" ]
	vm=$(aws2 s3api list-object-versions --bucket "$B" --max-keys 3 --no-paginate --query NextVersionIdMarker --output text)
	old=$(aws2 s3api list-object-versions --bucket "$B" --prefix a/ --query 'Versions[1].VersionId' --output text)
	[ "$vm" = "$old" ]
	# What follows a/1's older version: b's marker, then b's version.
	run aws2 s3api list-object-versions --bucket "$B" --key-marker a/1 --version-id-marker "$vm" --max-keys 2 --no-paginate \
		--query '[DeleteMarkers[].[Key,IsLatest], Versions[].[Key,IsLatest]][]' --output text
	[ "$output" = "$(printf 'b\tTrue\nb\tFalse')" ]
	# The CLI following the markers in pages of two sees all 9 entries.
	run aws2 s3api list-object-versions --bucket "$B" --page-size 2 --query 'length([Versions[], DeleteMarkers[]][])'
	[ "$output" = 9 ]
	run aws2 s3api list-object-versions --bucket "$B" --delimiter / --query '[CommonPrefixes[].Prefix, Versions[].Key][]' --output text
	[ "$output" = "$(printf 'a/\tc/\tZ\tb\tc d')" ]
	run aws2 s3api list-object-versions --bucket "$B" --delimiter / --max-keys 2 --no-paginate \
		--query '[IsTruncated,NextKeyMarker]' --output text
	[ "$output" = "$(printf 'True\ta/')" ]
	# Asked for explicitly, url encoding reaches the caller as it is.
	run aws2 s3api list-object-versions --bucket "$B" --prefix 'c ' --encoding-type url --query 'Versions[].Key' --output text
	[ "$output" = "c%20d" ]
	run aws2 s3api list-object-versions --bucket "$B" --version-id-marker null
	[[ "$output" == *"(InvalidArgument)"* ]]
}

@test "aws v2: Suspended writes the null version, which replaces the null version" {
	need_aws2
	aws2 s3api create-bucket --bucket "$B" >/dev/null
	aws2 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/1" >/dev/null
	aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Enabled
	v2=$(aws2 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/2" --query VersionId --output text)
	aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Suspended
	run aws2 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/3" --query VersionId --output text
	[ "$output" = null ]
	run aws2 s3api list-object-versions --bucket "$B" --query 'Versions[].[VersionId,IsLatest,Size]' --output text
	[ "$output" = "$(printf 'null\tTrue\t5\n%s\tFalse\t4' "$v2")" ]
	aws2 s3api get-object --bucket "$B" --key k --version-id null "$BATS_TEST_TMPDIR/o" >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/o")" = three ]
	# A suspended delete: a null marker replacing the null version.
	run aws2 s3api delete-object --bucket "$B" --key k --query '[DeleteMarker,VersionId]' --output text
	[ "$output" = "$(printf 'True\tnull')" ]
	run aws2 s3api list-object-versions --bucket "$B" --query '[Versions[].VersionId, DeleteMarkers[].VersionId][]' --output text
	[ "$output" = "$(printf '%s\tnull' "$v2")" ]
}

@test "aws v2: bucket tagging: put, get, delete, NoSuchTagSet, InvalidTag" {
	need_aws2
	aws2 s3api create-bucket --bucket "$B" >/dev/null
	run aws2 s3api get-bucket-tagging --bucket "$B"
	[[ "$output" == *"(NoSuchTagSet)"*"The TagSet does not exist"* ]]
	run aws2 s3api put-bucket-tagging --bucket "$B" --tagging 'TagSet=[{Key=env,Value=prod},{Key=team,Value=edge ops}]'
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-tagging --bucket "$B" --query 'TagSet[].[Key,Value]' --output text
	[ "$output" = "$(printf 'env\tprod\nteam\tedge ops')" ]
	run aws2 s3api put-bucket-tagging --bucket "$B" --tagging 'TagSet=[{Key=a,Value=1},{Key=a,Value=2}]'
	[[ "$output" == *"(InvalidTag)"*"Cannot provide multiple Tags with the same key"* ]]
	long=$(printf 'k%.0s' {1..129})
	run aws2 s3api put-bucket-tagging --bucket "$B" --tagging "TagSet=[{Key=$long,Value=1}]"
	[[ "$output" == *"(InvalidTag)"*"too long, max 128"* ]]
	many=$(for i in $(seq 51); do printf '{Key=k%d,Value=v},' "$i"; done)
	run aws2 s3api put-bucket-tagging --bucket "$B" --tagging "TagSet=[${many%,}]"
	[[ "$output" == *"(InvalidTag)"* ]]
	many=$(for i in $(seq 50); do printf '{Key=k%d,Value=v},' "$i"; done)
	run aws2 s3api put-bucket-tagging --bucket "$B" --tagging "TagSet=[${many%,}]"
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-tagging --bucket "$B" --query 'length(TagSet)'
	[ "$output" = 50 ]
	run aws2 s3api delete-bucket-tagging --bucket "$B"
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-tagging --bucket "$B"
	[[ "$output" == *"(NoSuchTagSet)"* ]]
}

@test "aws v2: object tagging: headers, put, get, delete, copy directives, multipart" {
	need_aws2
	aws2 s3api create-bucket --bucket "$B" >/dev/null
	aws2 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/1" --tagging 'colour=blue&size=x%20l' >/dev/null
	run aws2 s3api get-object-tagging --bucket "$B" --key k --query 'TagSet[].[Key,Value]' --output text
	[ "$output" = "$(printf 'colour\tblue\nsize\tx l')" ]
	run aws2 s3api get-object --bucket "$B" --key k --query TagCount --output text "$BATS_TEST_TMPDIR/o"
	[ "$output" = 2 ]
	run aws2 s3api put-object-tagging --bucket "$B" --key k --tagging 'TagSet=[{Key=only,Value=one}]'
	[ "$status" -eq 0 ]
	run aws2 s3api get-object-tagging --bucket "$B" --key k --query 'TagSet[].[Key,Value]' --output text
	[ "$output" = "$(printf 'only\tone')" ]
	many=$(for i in $(seq 11); do printf '{Key=k%d,Value=v},' "$i"; done)
	run aws2 s3api put-object-tagging --bucket "$B" --key k --tagging "TagSet=[${many%,}]"
	[[ "$output" == *"(BadRequest)"*"Object tags cannot be greater than 10"* ]]
	run aws2 s3api put-object --bucket "$B" --key k2 --body "$BATS_TEST_TMPDIR/1" --tagging 'a=1&a=2'
	[[ "$output" == *"(InvalidTag)"* ]]
	run aws2 s3api put-object-tagging --bucket "$B" --key k --tagging 'TagSet=[{Key=aws:x,Value=1}]'
	[[ "$output" == *"(InvalidTag)"* ]]
	run aws2 s3api put-object-tagging --bucket "$B" --key nope --tagging 'TagSet=[{Key=a,Value=1}]'
	[[ "$output" == *"(NoSuchKey)"* ]]
	# CopyObject keeps the source's tags, or takes the request's.
	aws2 s3api copy-object --bucket "$B" --key c1 --copy-source "$B/k" >/dev/null
	run aws2 s3api get-object-tagging --bucket "$B" --key c1 --query 'TagSet[].Key' --output text
	[ "$output" = only ]
	aws2 s3api copy-object --bucket "$B" --key c2 --copy-source "$B/k" --tagging-directive REPLACE --tagging 'new=tag' >/dev/null
	run aws2 s3api get-object-tagging --bucket "$B" --key c2 --query 'TagSet[].[Key,Value]' --output text
	[ "$output" = "$(printf 'new\ttag')" ]
	run aws2 s3api copy-object --bucket "$B" --key c3 --copy-source "$B/k" --tagging-directive MAYBE
	[[ "$output" == *"(InvalidArgument)"* ]]
	run aws2 s3api delete-object-tagging --bucket "$B" --key k
	[ "$status" -eq 0 ]
	run aws2 s3api get-object-tagging --bucket "$B" --key k --query 'length(TagSet)'
	[ "$output" = 0 ]
	up=$(aws2 s3api create-multipart-upload --bucket "$B" --key m --tagging 'mp=yes' --query UploadId --output text)
	etag=$(aws2 s3api upload-part --bucket "$B" --key m --upload-id "$up" --part-number 1 --body "$BATS_TEST_TMPDIR/3" --query ETag --output text)
	aws2 s3api complete-multipart-upload --bucket "$B" --key m --upload-id "$up" \
		--multipart-upload "Parts=[{PartNumber=1,ETag=$etag}]" >/dev/null
	run aws2 s3api get-object-tagging --bucket "$B" --key m --query 'TagSet[].[Key,Value]' --output text
	[ "$output" = "$(printf 'mp\tyes')" ]
	# Tags of one version, in a versioned bucket.
	aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Enabled
	v=$(aws2 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/2" --query VersionId --output text)
	aws2 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/3" >/dev/null
	run aws2 s3api put-object-tagging --bucket "$B" --key k --version-id "$v" --tagging 'TagSet=[{Key=old,Value=1}]' --query VersionId --output text
	[ "$output" = "$v" ]
	run aws2 s3api get-object-tagging --bucket "$B" --key k --version-id "$v" --query 'TagSet[].Key' --output text
	[ "$output" = old ]
	run aws2 s3api get-object-tagging --bucket "$B" --key k --query 'length(TagSet)'
	[ "$output" = 0 ]
}

@test "aws v2: copy-object and upload-part-copy from a version" {
	need_aws2
	aws2 s3api create-bucket --bucket "$B" >/dev/null
	aws2 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Enabled
	v1=$(aws2 s3api put-object --bucket "$B" --key src --body "$BATS_TEST_TMPDIR/1" --query VersionId --output text)
	aws2 s3api put-object --bucket "$B" --key src --body "$BATS_TEST_TMPDIR/2" >/dev/null
	run aws2 s3api copy-object --bucket "$B" --key dst --copy-source "$B/src?versionId=$v1" \
		--query '[CopySourceVersionId,VersionId]' --output text
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^$v1$'\t'[A-Za-z0-9._]{32}$ ]]
	aws2 s3api get-object --bucket "$B" --key dst "$BATS_TEST_TMPDIR/o" >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/o")" = one ]
	up=$(aws2 s3api create-multipart-upload --bucket "$B" --key mp --query UploadId --output text)
	run aws2 s3api upload-part-copy --bucket "$B" --key mp --upload-id "$up" --part-number 1 \
		--copy-source "$B/src?versionId=$v1" --query CopySourceVersionId --output text
	[ "$output" = "$v1" ]
	aws2 s3api abort-multipart-upload --bucket "$B" --key mp --upload-id "$up"
	run aws2 s3api copy-object --bucket "$B" --key dst --copy-source "$B/src?versionId=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	[[ "$output" == *"(NoSuchVersion)"* ]]
	dm=$(aws2 s3api delete-object --bucket "$B" --key src --query VersionId --output text)
	run aws2 s3api copy-object --bucket "$B" --key dst --copy-source "$B/src?versionId=$dm"
	[[ "$output" == *"(InvalidRequest)"* ]]
	run aws2 s3api copy-object --bucket "$B" --key dst --copy-source "$B/src"
	[[ "$output" == *"(NoSuchKey)"* ]]
}

@test "boto3: versioning, delete_objects with versions, tagging, unversioned headers" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	run /usr/bin/python3 - "$EP" "$B" <<'PY'
import sys, boto3
ep, b = sys.argv[1:3]
s3 = boto3.session.Session(profile_name="spx").client("s3", endpoint_url=ep)
def code(f, **kw):
    try:
        f(**kw)
    except s3.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPHeaders"]
    raise SystemExit("%s succeeded" % f.__name__)
s3.create_bucket(Bucket=b)
r = s3.put_object(Bucket=b, Key="plain", Body=b"p")
assert "VersionId" not in r and "x-amz-version-id" not in r["ResponseMetadata"]["HTTPHeaders"], r
assert "x-amz-version-id" not in s3.get_object(Bucket=b, Key="plain")["ResponseMetadata"]["HTTPHeaders"]
assert "Status" not in s3.get_bucket_versioning(Bucket=b)
s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
vs = [s3.put_object(Bucket=b, Key="k", Body=bytes([65 + i]) * (i + 1))["VersionId"] for i in range(4)]
assert len(set(vs)) == 4, vs
for i, v in enumerate(vs):
    assert s3.get_object(Bucket=b, Key="k", VersionId=v)["Body"].read() == bytes([65 + i]) * (i + 1)
    h = s3.head_object(Bucket=b, Key="k", VersionId=v)
    assert h["VersionId"] == v and h["ContentLength"] == i + 1, h
pages = s3.get_paginator("list_object_versions").paginate(Bucket=b, PaginationConfig={"PageSize": 1})
got = [(v["Key"], v["VersionId"], v["IsLatest"]) for p in pages for v in p.get("Versions", [])]
assert got == [("k", v, v == vs[-1]) for v in reversed(vs)] + [("plain", "null", True)], got
dm = s3.delete_object(Bucket=b, Key="k")
assert dm["DeleteMarker"] is True, dm
c, h = code(s3.get_object, Bucket=b, Key="k")
assert c == "NoSuchKey" and h["x-amz-delete-marker"] == "true" and h["x-amz-version-id"] == dm["VersionId"], (c, h)
c, h = code(s3.get_object, Bucket=b, Key="k", VersionId=dm["VersionId"])
assert c == "MethodNotAllowed" and h["x-amz-delete-marker"] == "true", (c, h)
r = s3.delete_objects(Bucket=b, Delete={"Objects": [
    {"Key": "k", "VersionId": dm["VersionId"]}, {"Key": "k", "VersionId": vs[0]},
    {"Key": "plain"}, {"Key": "k", "VersionId": "bad id"}]})
d = {(x["Key"], x.get("VersionId")): x for x in r["Deleted"]}
assert d[("k", dm["VersionId"])]["DeleteMarker"] is True, r
assert d[("k", dm["VersionId"])]["DeleteMarkerVersionId"] == dm["VersionId"], r
assert "DeleteMarker" not in d[("k", vs[0])], r
assert d[("plain", None)]["DeleteMarker"] is True and len(d[("plain", None)]["DeleteMarkerVersionId"]) == 32, r
assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("k", "InvalidArgument")], r
assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"DDDD"
left = s3.list_object_versions(Bucket=b)
assert [v["VersionId"] for v in left["Versions"] if v["Key"] == "k"] == list(reversed(vs[1:])), left
s3.put_object_tagging(Bucket=b, Key="k", VersionId=vs[1], Tagging={"TagSet": [{"Key": "t", "Value": "1"}]})
assert s3.get_object_tagging(Bucket=b, Key="k", VersionId=vs[1])["TagSet"] == [{"Key": "t", "Value": "1"}]
assert s3.get_object(Bucket=b, Key="k", VersionId=vs[1])["TagCount"] == 1
assert "TagCount" not in s3.get_object(Bucket=b, Key="k")
r = s3.copy_object(Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "k", "VersionId": vs[1]})
assert r["CopySourceVersionId"] == vs[1], r
assert s3.get_object(Bucket=b, Key="c")["Body"].read() == b"BB"
assert s3.get_object_tagging(Bucket=b, Key="c")["TagSet"] == [{"Key": "t", "Value": "1"}]
s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "b", "Value": "2"}]})
assert s3.get_bucket_tagging(Bucket=b)["TagSet"] == [{"Key": "b", "Value": "2"}]
s3.delete_bucket_tagging(Bucket=b)
assert code(s3.get_bucket_tagging, Bucket=b)[0] == "NoSuchTagSet"
assert code(s3.delete_bucket, Bucket=b)[0] == "BucketNotEmpty"
for p in s3.get_paginator("list_object_versions").paginate(Bucket=b):
    for v in p.get("Versions", []) + p.get("DeleteMarkers", []):
        s3.delete_object(Bucket=b, Key=v["Key"], VersionId=v["VersionId"])
s3.delete_bucket(Bucket=b)
print("boto3 versioning ok")
PY
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"boto3 versioning ok"* ]]
}

@test "aws v1: versioning, list-object-versions, get by version id, tagging" {
	v1cli=$(aws_v1) || skip "no aws CLI v1 on PATH"
	a1() { "$v1cli" --endpoint-url "$EP" "$@"; }
	a1 s3api create-bucket --bucket "$B" >/dev/null
	a1 s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Enabled
	run a1 s3api get-bucket-versioning --bucket "$B" --query Status --output text
	[ "$output" = Enabled ]
	v1=$(a1 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/1" --query VersionId --output text)
	a1 s3api put-object --bucket "$B" --key k --body "$BATS_TEST_TMPDIR/2" >/dev/null
	run a1 s3api list-object-versions --bucket "$B" --query 'Versions[].[Size,IsLatest]' --output text
	[ "$output" = "$(printf '4\tTrue\n3\tFalse')" ]
	a1 s3api get-object --bucket "$B" --key k --version-id "$v1" "$BATS_TEST_TMPDIR/o" >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/o")" = one ]
	run a1 s3api put-object-tagging --bucket "$B" --key k --tagging 'TagSet=[{Key=v,Value=one}]'
	[ "$status" -eq 0 ]
	run a1 s3api get-object-tagging --bucket "$B" --key k --query 'TagSet[].[Key,Value]' --output text
	[ "$output" = "$(printf 'v\tone')" ]
	run a1 s3api delete-object --bucket "$B" --key k --query DeleteMarker --output text
	[ "$output" = True ]
	run a1 s3api get-object --bucket "$B" --key k "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"NoSuchKey"* ]]
}

@test "spx-obj: versioning, ls --versions, get --version-id, rm --version-id" {
	spx-obj mb --root "$ROOT" "$B"
	run spx-obj versioning --root "$ROOT" "$B"
	[ "$output" = Unversioned ]
	printf 'plain' | spx-obj put --root "$ROOT" "$B" k >/dev/null
	run spx-obj versioning --root "$ROOT" "$B" enable
	[ "$status" -eq 0 ]
	run spx-obj versioning --root "$ROOT" "$B" sometimes
	[ "$status" -eq 100 ]
	printf 'newer' | spx-obj put --root "$ROOT" "$B" k >/dev/null
	run spx-obj ls --root "$ROOT" --versions "$B"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" =~ ^k\ [A-Za-z0-9._]{32}\ latest\ 5$ ]]
	[ "${lines[1]}" = "k null - 5" ]
	run spx-obj cat --root "$ROOT" --version-id null "$B" k
	[ "$output" = plain ]
	run spx-obj rm --root "$ROOT" "$B" k
	[[ "$output" =~ ^[A-Za-z0-9._]{32}\ delete-marker$ ]]
	run spx-obj cat --root "$ROOT" "$B" k
	[ "$status" -eq 1 ]
	run spx-obj rb --root "$ROOT" "$B"
	[ "$status" -eq 1 ]
	for v in $(spx-obj ls --root "$ROOT" --versions "$B" | cut -d' ' -f2); do
		spx-obj rm --root "$ROOT" --version-id "$v" "$B" k >/dev/null
	done
	run spx-obj rb --root "$ROOT" "$B"
	[ "$status" -eq 0 ]
}
