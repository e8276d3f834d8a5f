#!/usr/bin/env bats
# S3 through real clients: aws v2 (/usr/bin/aws), aws v1, boto3, the npm
# SDK v3 and curl (presigned URLs), over HTTPS with the node CA.

load ../bats/helpers

setup_file() {
	file_node
	head -c 3000000 /dev/urandom >"$BATS_FILE_TMPDIR/f3m"
	head -c 20000000 /dev/urandom >"$BATS_FILE_TMPDIR/f20m"
}

teardown_file() { stop_node; }

setup() {
	aws_env
	EP="https://127.0.0.1:$S3_PORT"
}

# A test that makes a second node stops it here, even when it fails.
teardown() {
	if [ -n "${VH_ROOT:-}" ]; then
		spx down --root "$VH_ROOT" >/dev/null 2>&1 || true
	fi
}

aws2() { awscli2 --endpoint-url "$EP" "$@"; }

@test "aws v2: mb, cp up and down (single and multipart), ls, rm, rb" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	run aws2 s3 mb s3://cli2
	[ "$status" -eq 0 ]
	run aws2 s3 cp "$BATS_FILE_TMPDIR/f3m" s3://cli2/dir/small --no-progress
	[ "$status" -eq 0 ]
	run aws2 s3 cp "$BATS_FILE_TMPDIR/f20m" "s3://cli2/dir/big file" --no-progress
	[ "$status" -eq 0 ]
	aws2 s3 cp s3://cli2/dir/small "$BATS_TEST_TMPDIR/s" --no-progress
	aws2 s3 cp "s3://cli2/dir/big file" "$BATS_TEST_TMPDIR/b" --no-progress
	cmp "$BATS_FILE_TMPDIR/f3m" "$BATS_TEST_TMPDIR/s"
	cmp "$BATS_FILE_TMPDIR/f20m" "$BATS_TEST_TMPDIR/b"
	run aws2 s3api head-object --bucket cli2 --key "dir/big file"
	[[ "$output" == *'"ContentLength": 20000000'* ]]
	[[ "$output" =~ \"ETag\":\ \"\\\"[0-9a-f]{32}-[0-9]+\\\"\" ]]
	run aws2 s3 ls s3://cli2 --recursive
	[[ "$output" == *" 3000000 dir/small"* && "$output" == *"20000000 dir/big file"* ]]
	run aws2 s3 rb s3://cli2
	[ "$status" -ne 0 ]
	[[ "$output" == *"BucketNotEmpty"* ]]
	run aws2 s3 rm s3://cli2 --recursive
	[ "$status" -eq 0 ]
	run aws2 s3 rb s3://cli2
	[ "$status" -eq 0 ]
}

@test "aws v2: s3api errors carry S3's codes" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	run aws2 s3api head-bucket --bucket nosuch-bucket-x
	[ "$status" -ne 0 ]
	[[ "$output" == *"404"* ]]
	run aws2 s3api get-object --bucket nosuch-bucket-x --key k "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(NoSuchBucket)"* ]]
	aws2 s3api create-bucket --bucket errs >/dev/null
	# One's own bucket again: in us-east-1 S3 answers 200 (its legacy),
	# and the bucket keeps what it holds.
	aws2 s3api put-object --bucket errs --key kept --body "$BATS_FILE_TMPDIR/f3m" >/dev/null
	run aws2 s3api create-bucket --bucket errs --query Location --output text
	[ "$status" -eq 0 ] && [ "$output" = /errs ] || { echo "$output"; false; }
	[ "$(aws2 s3api list-objects-v2 --bucket errs --query 'Contents[].Key' --output text)" = kept ]
	aws2 s3api delete-object --bucket errs --key kept
	run aws2 s3api get-object --bucket errs --key nope "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(NoSuchKey)"* ]]
	run aws2 s3api create-bucket --bucket Bad_Name
	[[ "$output" == *"(InvalidBucketName)"* ]]
	run aws2 s3api put-object --bucket errs --key k --body "$BATS_FILE_TMPDIR/f3m" --content-md5 AAAAAAAAAAAAAAAAAAAAAA==
	[[ "$output" == *"(BadDigest)"* ]]
	run aws2 s3api get-object --bucket errs --key nope "$BATS_TEST_TMPDIR/o"
	aws2 s3api put-object --bucket errs --key r --body "$BATS_FILE_TMPDIR/f3m" >/dev/null
	run aws2 s3api get-object --bucket errs --key r --range bytes=5000000-6000000 "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(InvalidRange)"* ]]
	run aws2 s3api get-object --bucket errs --key r --if-none-match '"nomatch"' --if-match '"x"' "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"PreconditionFailed"* || "$output" == *"412"* ]]
	aws2 s3 rm s3://errs --recursive >/dev/null
	aws2 s3 rb s3://errs >/dev/null
}

@test "another region: one's own bucket again is BucketAlreadyOwnedByYou" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	local root0=$ROOT s3p0=$S3_PORT ec2p0=$EC2_PORT
	make_node --region eu-west-1
	VH_ROOT=$ROOT
	start_node
	aws_env
	mk() {
		awscli2 --endpoint-url "https://127.0.0.1:$S3_PORT" s3api create-bucket --bucket mine \
			--create-bucket-configuration LocationConstraint=eu-west-1
	}
	run mk
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run mk
	[ "$status" -ne 0 ] && [[ "$output" == *"(BucketAlreadyOwnedByYou)"* ]] || { echo "$output"; false; }
	spx down --root "$ROOT" >/dev/null
	ROOT=$root0 S3_PORT=$s3p0 EC2_PORT=$ec2p0
}

@test "a bucket for another region is refused as AWS's regional endpoints refuse it, and nothing is made" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	run aws2 s3api create-bucket --bucket elsewhere-bkt --create-bucket-configuration LocationConstraint=eu-west-1
	[ "$status" -ne 0 ]
	[[ "$output" == *"(IllegalLocationConstraintException)"*"The eu-west-1 location constraint is incompatible for the region specific endpoint this request was sent to."* ]] || { echo "$output"; false; }
	run aws2 s3api head-bucket --bucket elsewhere-bkt
	[ "$status" -ne 0 ]
	[[ "$output" == *"404"* ]]
	# Signed for that region too: told ours (minio-go's MakeBucket in
	# another region gets this; against AWS it would have gone to that
	# region's endpoint).
	run awscli2 --endpoint-url "$EP" --region eu-west-1 s3api create-bucket --bucket elsewhere-bkt \
		--create-bucket-configuration LocationConstraint=eu-west-1
	[ "$status" -ne 0 ]
	run aws2 s3api head-bucket --bucket elsewhere-bkt
	[[ "$output" == *"404"* ]]
}

@test "a request signed for another region is told ours, and the SDKs follow" {
	aws2 s3api create-bucket --bucket regions >/dev/null
	# the error names our region in its body and in x-amz-bucket-region
	run curl -sS -i --cacert "$ROOT/tls/ca.pem" --aws-sigv4 "aws:amz:eu-west-1:s3" \
		--user "$AK:$SK" "$EP/regions?list-type=2"
	[[ "$output" == *"HTTP/1.1 400"* ]]
	[[ "$output" == *"<Code>AuthorizationHeaderMalformed</Code>"* ]]
	[[ "$output" == *"the region &apos;eu-west-1&apos; is wrong; expecting &apos;us-east-1&apos;"* ]]
	[[ "$output" == *"<Region>us-east-1</Region>"* ]]
	[[ "$output" == *$'x-amz-bucket-region: us-east-1\r'* ]]
	# botocore re-signs for the region named and succeeds
	run awscli2 --endpoint-url "$EP" --region eu-west-1 s3api list-objects-v2 --bucket regions
	[ "$status" -eq 0 ]
	/usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, boto3
ak, sk, ep, ca = sys.argv[1:]
c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="ap-southeast-2", endpoint_url=ep, verify=ca)
c.put_object(Bucket="regions", Key="k", Body=b"hello")
assert c.get_object(Bucket="regions", Key="k")["Body"].read() == b"hello"
PY
	aws2 s3 rb --force s3://regions >/dev/null
}

@test "conditional PUT: If-None-Match * and If-Match, atomic under racing writers" {
	aws2 s3api create-bucket --bucket condput >/dev/null
	sput() { # sput KEY FILE HEADER... -> prints the HTTP status
		local k=$1 f=$2; shift 2
		curl -sS -o /dev/null -w '%{http_code}\n' --cacert "$ROOT/tls/ca.pem" \
			--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" \
			-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@" -T "$f" "$EP/condput/$k"
	}
	printf one >"$BATS_TEST_TMPDIR/one"
	printf two >"$BATS_TEST_TMPDIR/two"
	[ "$(sput k "$BATS_TEST_TMPDIR/one" -H 'If-None-Match: *')" = 200 ]
	[ "$(sput k "$BATS_TEST_TMPDIR/two" -H 'If-None-Match: *')" = 412 ]
	[ "$(aws2 s3 cp s3://condput/k -)" = one ]
	etag=$(aws2 s3api head-object --bucket condput --key k --query ETag --output text)
	[ "$(sput k "$BATS_TEST_TMPDIR/two" -H 'If-Match: "0123456789abcdef0123456789abcdef"')" = 412 ]
	[ "$(sput k "$BATS_TEST_TMPDIR/two" -H "If-Match: $etag")" = 200 ]
	[ "$(aws2 s3 cp s3://condput/k -)" = two ]
	[ "$(sput nokey "$BATS_TEST_TMPDIR/two" -H 'If-Match: *')" = 404 ]
	[ "$(sput k "$BATS_TEST_TMPDIR/two" -H 'If-None-Match: "abc"')" = 501 ]
	# Eight writers race for one new key with If-None-Match: *. Every one
	# passes the early check (the key is absent while they upload); the
	# engine's check under the key's lock lets exactly one commit.
	for i in 1 2 3 4 5 6 7 8; do
		head -c 4000000 /dev/urandom >"$BATS_TEST_TMPDIR/r$i"
	done
	for i in 1 2 3 4 5 6 7 8; do
		sput race "$BATS_TEST_TMPDIR/r$i" -H 'If-None-Match: *' >"$BATS_TEST_TMPDIR/st$i" &
	done
	wait
	[ "$(cat "$BATS_TEST_TMPDIR"/st* | grep -c 200)" -eq 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR"/st* | grep -c 412)" -eq 7 ]
	# and the object is the winner's bytes
	aws2 s3 cp s3://condput/race "$BATS_TEST_TMPDIR/got" >/dev/null
	win=$(grep -l 200 "$BATS_TEST_TMPDIR"/st* | sed 's/.*st//')
	cmp "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/r$win"
	# boto3, where its model has the parameter
	/usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, boto3, botocore
ak, sk, ep, ca = sys.argv[1:]
c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1", endpoint_url=ep, verify=ca)
m = c.meta.service_model.operation_model("PutObject").input_shape.members
if "IfNoneMatch" in m:
    c.put_object(Bucket="condput", Key="b3", Body=b"x", IfNoneMatch="*")
    try:
        c.put_object(Bucket="condput", Key="b3", Body=b"y", IfNoneMatch="*")
        raise SystemExit("second conditional put succeeded")
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "PreconditionFailed", e.response
PY
	aws2 s3 rb --force s3://condput >/dev/null
}

@test "conditional CompleteMultipartUpload: If-None-Match * and If-Match, one winner among racing uploads" {
	aws2 s3api create-bucket --bucket condmpu >/dev/null
	# Debian's botocore has no IfNoneMatch on CompleteMultipartUpload
	# yet: the headers go in through its before-sign event.
	run /usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, threading, boto3, botocore
ak, sk, ep, ca = sys.argv[1:]
def client(hdrs):
    c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                     region_name="us-east-1", endpoint_url=ep, verify=ca)
    def add(request, **kw):
        for k, v in hdrs.items():
            request.headers[k] = v
    c.meta.events.register("before-sign.s3.CompleteMultipartUpload", add)
    return c
plain = client({})
def upload(key, body):
    u = plain.create_multipart_upload(Bucket="condmpu", Key=key)["UploadId"]
    e = plain.upload_part(Bucket="condmpu", Key=key, UploadId=u, PartNumber=1, Body=body)["ETag"]
    return u, {"Parts": [{"PartNumber": 1, "ETag": e}]}
def complete(hdrs, key, u, parts):
    try:
        r = client(hdrs).complete_multipart_upload(Bucket="condmpu", Key=key, UploadId=u, MultipartUpload=parts)
        return "200 " + r["ETag"]
    except botocore.exceptions.ClientError as e:
        return "%s %s" % (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
body = lambda k: plain.get_object(Bucket="condmpu", Key=k)["Body"].read()
u1, p1 = upload("k", b"first")
print("new", complete({"If-None-Match": "*"}, "k", u1, p1).split()[0])
etag = plain.head_object(Bucket="condmpu", Key="k")["ETag"]
u2, p2 = upload("k", b"second")
print("exists", complete({"If-None-Match": "*"}, "k", u2, p2), body("k"))
# Refused, the upload stays: it can still be completed.
print("wrong", complete({"If-Match": '"0123456789abcdef0123456789abcdef"'}, "k", u2, p2))
print("not *", complete({"If-None-Match": etag}, "k", u2, p2))
print("match", complete({"If-Match": etag}, "k", u2, p2).split()[0], body("k"))
u3, p3 = upload("none", b"x")
print("none", complete({"If-Match": etag}, "none", u3, p3))
plain.abort_multipart_upload(Bucket="condmpu", Key="none", UploadId=u3)
# Six uploads of one new key completed at once: exactly one wins.
ups = [upload("race", b"racer %d" % i) for i in range(6)]
out = [None] * 6
def go(i):
    out[i] = complete({"If-None-Match": "*"}, "race", *ups[i])
ts = [threading.Thread(target=go, args=(i,)) for i in range(6)]
[t.start() for t in ts]
[t.join() for t in ts]
wins = [i for i in range(6) if out[i].startswith("200")]
print("race", len(wins), sorted(o.split()[0] for o in out), body("race") == b"racer %d" % wins[0])
for i in range(6):
    if i not in wins:
        plain.abort_multipart_upload(Bucket="condmpu", Key="race", UploadId=ups[i][0])
print("left", len(plain.list_multipart_uploads(Bucket="condmpu").get("Uploads", [])))
PY
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "new 200
exists 412 PreconditionFailed b'first'
wrong 412 PreconditionFailed
not * 501 NotImplemented
match 200 b'second'
none 404 NoSuchKey
race 1 ['200', '412', '412', '412', '412', '412'] True
left 0" ] || { echo "$output"; false; }
	aws2 s3 rb --force s3://condmpu >/dev/null
}

@test "aws v2: ranges, metadata and conditional GET" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://meta >/dev/null
	printf 'hello, world' >"$BATS_TEST_TMPDIR/h"
	run aws2 s3api put-object --bucket meta --key h --body "$BATS_TEST_TMPDIR/h" \
		--content-type text/x-spx --metadata colour=blue --cache-control max-age=60
	[ "$status" -eq 0 ]
	etag=$(aws2 s3api head-object --bucket meta --key h --query ETag --output text)
	[ "$etag" = '"e4d7f1b4ed2e42d15898f4b27b019da4"' ]
	run aws2 s3api head-object --bucket meta --key h
	[[ "$output" == *'"ContentType": "text/x-spx"'* ]]
	[[ "$output" == *'"colour": "blue"'* ]]
	[[ "$output" == *'"CacheControl": "max-age=60"'* ]]
	aws2 s3api get-object --bucket meta --key h --range bytes=7- "$BATS_TEST_TMPDIR/r" >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/r")" = world ]
	aws2 s3api get-object --bucket meta --key h --range bytes=-5 "$BATS_TEST_TMPDIR/r" >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/r")" = world ]
	run aws2 s3api get-object --bucket meta --key h --if-none-match "$etag" "$BATS_TEST_TMPDIR/r"
	[[ "$output" == *"304"* || "$output" == *"Not Modified"* ]]
	run aws2 s3api get-object --bucket meta --key h --response-content-type text/plain "$BATS_TEST_TMPDIR/r"
	[[ "$output" == *'"ContentType": "text/plain"'* ]]
	aws2 s3 rm s3://meta/h >/dev/null
	aws2 s3 rb s3://meta >/dev/null
}

@test "aws v2: listing pages, prefixes and delimiters in byte order" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://lst >/dev/null
	for k in a/1 a/2 b/1 c 'd e' Z ä; do
		aws2 s3api put-object --bucket lst --key "$k" >/dev/null
	done
	run aws2 s3api list-objects-v2 --bucket lst --query 'Contents[].Key' --output text
	[ "$output" = "$(printf 'Z\ta/1\ta/2\tb/1\tc\td e\tä')" ]
	run aws2 s3api list-objects-v2 --bucket lst --delimiter / --query 'CommonPrefixes[].Prefix' --output text
	[ "$output" = "$(printf 'a/\tb/')" ]
	# Pages of two: the CLI follows NextContinuationToken.
	run aws2 s3api list-objects-v2 --bucket lst --page-size 2 --query 'Contents[].Key' --output text
	[ "$(tr '\n' '\t' <<<"$output")" = "$(printf 'Z\ta/1\ta/2\tb/1\tc\td e\tä\t')" ]
	run aws2 s3api list-objects --bucket lst --prefix a/ --query 'Contents[].Key' --output text
	[ "$output" = "$(printf 'a/1\ta/2')" ]
	# The SDKs ask for encoding-type=url and decode what S3 encodes:
	# ListObjects' Prefix is not, ListObjectsV2's is; an empty delimiter
	# is left out of the answer.
	for k in 'p q/1' 'p q/r+s/2' 'p q/100%/3'; do
		aws2 s3api put-object --bucket lst --key "$k" >/dev/null
	done
	run aws2 s3api list-objects --no-paginate --bucket lst --prefix 'p q/' --delimiter / \
		--query '[Prefix,Delimiter,Contents[].Key,CommonPrefixes[].Prefix]' --output json
	[ "$(tr -d ' \n' <<<"$output")" = '["pq/","/",["pq/1"],["pq/100%/","pq/r+s/"]]' ] || { echo "$output"; false; }
	run /usr/bin/python3 - "$EP" "$ROOT/tls/ca.pem" <<-'EOF'
		import sys, boto3
		ep, ca = sys.argv[1:3]
		s3 = boto3.Session(profile_name="spx").client("s3", endpoint_url=ep, verify=ca)
		for call in (s3.list_objects, s3.list_objects_v2, s3.list_object_versions):
		    r = call(Bucket="lst", Prefix="p q/", Delimiter="")
		    keys = [c["Key"] for c in r.get("Contents", r.get("Versions", []))]
		    print(call.__name__, repr(r["Prefix"]), "Delimiter" in r, keys)
		r = s3.list_objects_v2(Bucket="lst", Prefix="p q/", StartAfter="p q/1")
		print(repr(r["StartAfter"]), [c["Key"] for c in r["Contents"]])
	EOF
	[ "$output" = "list_objects 'p q/' False ['p q/1', 'p q/100%/3', 'p q/r+s/2']
list_objects_v2 'p q/' False ['p q/1', 'p q/100%/3', 'p q/r+s/2']
list_object_versions 'p q/' False ['p q/1', 'p q/100%/3', 'p q/r+s/2']
'p q/1' ['p q/100%/3', 'p q/r+s/2']" ] || { echo "$output"; false; }
	aws2 s3 rm s3://lst --recursive >/dev/null
	aws2 s3 rb s3://lst >/dev/null
}

@test "aws v2: copy-object and delete-objects" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://cpy >/dev/null
	aws2 s3api put-object --bucket cpy --key src --body "$BATS_FILE_TMPDIR/f3m" --metadata k=v >/dev/null
	run aws2 s3api copy-object --bucket cpy --key dst --copy-source cpy/src
	[ "$status" -eq 0 ]
	[[ "$output" == *'"ETag"'* ]]
	aws2 s3 cp s3://cpy/dst "$BATS_TEST_TMPDIR/d" --no-progress
	cmp "$BATS_FILE_TMPDIR/f3m" "$BATS_TEST_TMPDIR/d"
	run aws2 s3api head-object --bucket cpy --key dst
	[[ "$output" == *'"k": "v"'* ]]
	run aws2 s3api delete-objects --bucket cpy --delete 'Objects=[{Key=src},{Key=dst},{Key=none}]'
	[ "$status" -eq 0 ]
	[[ "$output" == *'"Key": "none"'* ]]
	run aws2 s3api list-objects-v2 --bucket cpy --query 'Contents[].Key' --output text
	[ "$output" = None ]
	aws2 s3 rb s3://cpy >/dev/null
}

@test "aws v1: cp with its CRC32 checksums, multipart, ls, rm" {
	v1=$(aws_v1) || skip "no aws CLI v1 on PATH"
	run "$v1" --endpoint-url "$EP" s3 mb s3://cli1
	[ "$status" -eq 0 ]
	run "$v1" --endpoint-url "$EP" s3 cp "$BATS_FILE_TMPDIR/f20m" s3://cli1/big
	[ "$status" -eq 0 ]
	run "$v1" --endpoint-url "$EP" s3 cp "$BATS_FILE_TMPDIR/f3m" s3://cli1/small
	[ "$status" -eq 0 ]
	"$v1" --endpoint-url "$EP" s3 cp s3://cli1/big "$BATS_TEST_TMPDIR/b"
	cmp "$BATS_FILE_TMPDIR/f20m" "$BATS_TEST_TMPDIR/b"
	run "$v1" --endpoint-url "$EP" s3api get-object --bucket cli1 --key small --checksum-mode ENABLED "$BATS_TEST_TMPDIR/s"
	[ "$status" -eq 0 ]
	cmp "$BATS_FILE_TMPDIR/f3m" "$BATS_TEST_TMPDIR/s"
	run "$v1" --endpoint-url "$EP" s3 rm s3://cli1 --recursive
	[ "$status" -eq 0 ]
	run "$v1" --endpoint-url "$EP" s3 rb s3://cli1
	[ "$status" -eq 0 ]
}

@test "boto3: put, get, list, multipart, delete" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	run /usr/bin/python3 - "$EP" "$ROOT/tls/ca.pem" "$BATS_FILE_TMPDIR/f20m" <<'PY'
import sys, boto3
from boto3.s3.transfer import TransferConfig
ep, ca, big = sys.argv[1:4]
s3 = boto3.session.Session(profile_name="spx").client("s3", endpoint_url=ep, verify=ca)
s3.create_bucket(Bucket="boto3b")
s3.put_object(Bucket="boto3b", Key="k", Body=b"x" * 1000)
assert s3.get_object(Bucket="boto3b", Key="k")["Body"].read() == b"x" * 1000
s3.upload_file(big, "boto3b", "big", Config=TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20))
data = open(big, "rb").read()
assert s3.get_object(Bucket="boto3b", Key="big")["Body"].read() == data
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="boto3b")["Contents"]]
assert keys == ["big", "k"], keys
mpu = s3.create_multipart_upload(Bucket="boto3b", Key="small-parts")
p1 = s3.upload_part(Bucket="boto3b", Key="small-parts", UploadId=mpu["UploadId"], PartNumber=1, Body=b"a" * 100)
p2 = s3.upload_part(Bucket="boto3b", Key="small-parts", UploadId=mpu["UploadId"], PartNumber=2, Body=b"b" * 100)
try:
    s3.complete_multipart_upload(Bucket="boto3b", Key="small-parts", UploadId=mpu["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
    raise SystemExit("a 100-byte first part was accepted")
except s3.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "EntityTooSmall", e.response
parts = s3.list_parts(Bucket="boto3b", Key="small-parts", UploadId=mpu["UploadId"])["Parts"]
assert [p["PartNumber"] for p in parts] == [1, 2], parts
s3.abort_multipart_upload(Bucket="boto3b", Key="small-parts", UploadId=mpu["UploadId"])
for k in keys:
    s3.delete_object(Bucket="boto3b", Key=k)
s3.delete_bucket(Bucket="boto3b")
print("boto3 s3 ok")
PY
	[ "$status" -eq 0 ]
	[[ "$output" == *"boto3 s3 ok"* ]]
}

@test "multipart checksums: COMPOSITE and FULL_OBJECT CRC32 through boto3" {
	/usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import base64, os, sys, zlib, boto3, botocore
ak, sk, ep, ca = sys.argv[1:]
c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1", endpoint_url=ep, verify=ca)
c.create_bucket(Bucket="mpuck")
parts = [os.urandom(5 * 1024 * 1024), os.urandom(1024 * 1024 + 7)]
raw = [zlib.crc32(p).to_bytes(4, "big") for p in parts]
b64 = [base64.b64encode(r).decode() for r in raw]

def upload(key, **kw):
    u = c.create_multipart_upload(Bucket="mpuck", Key=key, ChecksumAlgorithm="CRC32", **kw)
    assert u["ChecksumAlgorithm"] == "CRC32", u
    got = []
    for i, p in enumerate(parts, 1):
        r = c.upload_part(Bucket="mpuck", Key=key, UploadId=u["UploadId"], PartNumber=i,
                          Body=p, ChecksumAlgorithm="CRC32")
        assert r["ChecksumCRC32"] == b64[i - 1], (r, b64)
        got.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
    lp = c.list_parts(Bucket="mpuck", Key=key, UploadId=u["UploadId"])
    assert [p["ChecksumCRC32"] for p in lp["Parts"]] == b64, lp
    assert lp["ChecksumAlgorithm"] == "CRC32", lp
    return u["UploadId"], got

# COMPOSITE: the CRC32 of the parts' CRC32s, "-2"
want = base64.b64encode(zlib.crc32(b"".join(raw)).to_bytes(4, "big")).decode() + "-2"
uid, got = upload("comp")
r = c.complete_multipart_upload(Bucket="mpuck", Key="comp", UploadId=uid,
                                MultipartUpload={"Parts": got})
assert r["ChecksumCRC32"] == want, (r, want)
h = c.head_object(Bucket="mpuck", Key="comp", ChecksumMode="ENABLED")
assert h["ChecksumCRC32"] == want, h
if "ChecksumType" in h:
    assert h["ChecksumType"] == "COMPOSITE", h

# a part's checksum that is not the part's is InvalidPart; one left out
# is InvalidRequest; nothing is committed by either
uid, got = upload("bad")
wrong = [dict(got[0], ChecksumCRC32=b64[1]), got[1]]
for parts_sent, code in ((wrong, "InvalidPart"),
                         ([{k: v for k, v in p.items() if k != "ChecksumCRC32"} for p in got],
                          "InvalidRequest")):
    try:
        c.complete_multipart_upload(Bucket="mpuck", Key="bad", UploadId=uid,
                                    MultipartUpload={"Parts": parts_sent})
        raise SystemExit("complete with %s succeeded" % code)
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == code, e.response
try:
    c.head_object(Bucket="mpuck", Key="bad")
    raise SystemExit("a refused complete left an object")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "404", e.response
# a part sent with another algorithm is refused
try:
    c.upload_part(Bucket="mpuck", Key="bad", UploadId=uid, PartNumber=3,
                  Body=b"x", ChecksumAlgorithm="SHA256")
    raise SystemExit("a SHA256 part of a CRC32 upload was taken")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidRequest", e.response
c.abort_multipart_upload(Bucket="mpuck", Key="bad", UploadId=uid)

# FULL_OBJECT: the CRC32 of the whole object, where the model has the type
m = c.meta.service_model.operation_model("CreateMultipartUpload").input_shape.members
if "ChecksumType" in m:
    uid, got = upload("full", ChecksumType="FULL_OBJECT")
    whole = base64.b64encode(zlib.crc32(b"".join(parts)).to_bytes(4, "big")).decode()
    # a stated whole-object checksum that is wrong: BadDigest, no object
    try:
        c.complete_multipart_upload(Bucket="mpuck", Key="full", UploadId=uid,
                                    MultipartUpload={"Parts": got}, ChecksumCRC32=b64[0])
        raise SystemExit("complete with a wrong object checksum succeeded")
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "BadDigest", e.response
    r = c.complete_multipart_upload(Bucket="mpuck", Key="full", UploadId=uid,
                                    MultipartUpload={"Parts": got}, ChecksumCRC32=whole)
    assert r["ChecksumCRC32"] == whole and r["ChecksumType"] == "FULL_OBJECT", (r, whole)
    h = c.head_object(Bucket="mpuck", Key="full", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32"] == whole and h["ChecksumType"] == "FULL_OBJECT", h
    o = c.get_object(Bucket="mpuck", Key="full", ChecksumMode="ENABLED")
    assert o["Body"].read() == b"".join(parts)
for k in ("comp", "full"):
    c.delete_object(Bucket="mpuck", Key=k)
c.delete_bucket(Bucket="mpuck")
PY
}

@test "GetObjectAttributes: aws v2 and boto3 (Debian), parts and their checksums, paging, refusals" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://attrs >/dev/null
	printf 'hello' >"$BATS_TEST_TMPDIR/h"
	aws2 s3api put-object --bucket attrs --key one --body "$BATS_TEST_TMPDIR/h" --checksum-algorithm SHA256 \
		--storage-class REDUCED_REDUNDANCY >/dev/null
	run aws2 s3api get-object-attributes --bucket attrs --key one \
		--object-attributes ETag Checksum ObjectParts StorageClass ObjectSize \
		--query '[ETag, Checksum.ChecksumSHA256, ObjectParts, StorageClass, ObjectSize]' --output text
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# sha256("hello"), in base64; no ObjectParts for a single PUT.
	[ "$output" = "5d41402abc4b2a76b9719d911017c592	LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=	None	REDUCED_REDUNDANCY	5" ]
	run aws2 s3api get-object-attributes --bucket attrs --key one --object-attributes ETag Bogus
	[[ "$output" == *"(InvalidArgument)"*"Invalid attribute name"* ]]
	run aws2 s3api get-object-attributes --bucket attrs --key none --object-attributes ETag
	[[ "$output" == *"(NoSuchKey)"* ]]
	run aws2 s3api get-object-attributes --bucket attrs --key one --object-attributes ETag --max-parts -1
	[[ "$output" == *"(InvalidArgument)"* ]]
	/usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import base64, sys, zlib, boto3, botocore
ak, sk, ep, ca = sys.argv[1:]
c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1", endpoint_url=ep, verify=ca)
def b64crc(b):
    return base64.b64encode(zlib.crc32(b).to_bytes(4, "big")).decode()
parts = [bytes([n]) * (5 << 20) for n in (1, 2)] + [b"tail" * 250]
u = c.create_multipart_upload(Bucket="attrs", Key="mp", ChecksumAlgorithm="CRC32")["UploadId"]
done = []
for n, p in enumerate(parts, 1):
    r = c.upload_part(Bucket="attrs", Key="mp", UploadId=u, PartNumber=n, Body=p, ChecksumAlgorithm="CRC32")
    done.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
r = c.complete_multipart_upload(Bucket="attrs", Key="mp", UploadId=u, MultipartUpload={"Parts": done})
whole = r["ChecksumCRC32"]
assert whole.endswith("-3"), r
def attrs(key, **kw):
    r = c.get_object_attributes(Bucket="attrs", Key=key, **kw)
    r.pop("ResponseMetadata")
    return r
a = attrs("mp", ObjectAttributes=["ETag", "Checksum", "ObjectParts", "ObjectSize"], MaxParts=2)
assert a["ETag"] == r["ETag"].strip('"'), (a, r)
assert a["ObjectSize"] == sum(map(len, parts)), a
# The object's checksum without the "-3" HeadObject shows.
assert a["Checksum"]["ChecksumCRC32"] == whole[:-2], a
op = a["ObjectParts"]
assert op["TotalPartsCount"] == 3 and op["MaxParts"] == 2 and op["IsTruncated"] is True, op
assert [(p["PartNumber"], p["Size"], p["ChecksumCRC32"]) for p in op["Parts"]] == \
    [(1, 5 << 20, b64crc(parts[0])), (2, 5 << 20, b64crc(parts[1]))], op
assert int(op["NextPartNumberMarker"]) == 2, op
op = attrs("mp", ObjectAttributes=["ObjectParts"], MaxParts=2, PartNumberMarker=int(op["NextPartNumberMarker"]))["ObjectParts"]
assert op["IsTruncated"] is False, op
assert [(p["PartNumber"], p["Size"], p["ChecksumCRC32"]) for p in op["Parts"]] == [(3, 1000, b64crc(parts[2]))], op
# Without a checksum algorithm: the count only, as AWS.
u = c.create_multipart_upload(Bucket="attrs", Key="plain")["UploadId"]
e = c.upload_part(Bucket="attrs", Key="plain", UploadId=u, PartNumber=1, Body=b"x" * 100)["ETag"]
c.complete_multipart_upload(Bucket="attrs", Key="plain", UploadId=u,
                            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
a = attrs("plain", ObjectAttributes=["Checksum", "ObjectParts"])
assert "Checksum" not in a and a["ObjectParts"] == {"TotalPartsCount": 1}, a
# A copy is one piece: its CRC32 is the whole object's (FULL_OBJECT), no parts.
c.copy_object(Bucket="attrs", Key="cp", CopySource={"Bucket": "attrs", "Key": "mp"})
a = attrs("cp", ObjectAttributes=["Checksum", "ObjectParts"])
assert a["Checksum"]["ChecksumCRC32"] == b64crc(b"".join(parts)) and "ObjectParts" not in a, a
h = c.head_object(Bucket="attrs", Key="cp", ChecksumMode="ENABLED")
assert h["ChecksumCRC32"] == b64crc(b"".join(parts)), h
# Versions: a delete marker is NoSuchKey (and says so), by its id 405.
c.put_bucket_versioning(Bucket="attrs", VersioningConfiguration={"Status": "Enabled"})
v1 = c.put_object(Bucket="attrs", Key="v", Body=b"first")["VersionId"]
c.delete_object(Bucket="attrs", Key="v")
try:
    attrs("v", ObjectAttributes=["ETag"])
    raise SystemExit("a delete marker answered")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchKey", e.response
    assert e.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true", e.response
dm = c.list_object_versions(Bucket="attrs", Prefix="v")["DeleteMarkers"][0]["VersionId"]
try:
    attrs("v", VersionId=dm, ObjectAttributes=["ETag"])
    raise SystemExit("a delete marker's version answered")
except botocore.exceptions.ClientError as e:
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 405, e.response
a = attrs("v", VersionId=v1, ObjectAttributes=["ObjectSize"])
assert a["VersionId"] == v1 and a["ObjectSize"] == 5, a
print("attributes ok")
PY
}

@test "bucket CORS rules: put, get, delete through aws v2 and boto3 (Debian); S3's refusals; Content-MD5 checked" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://corsb >/dev/null
	run aws2 s3api get-bucket-cors --bucket corsb
	[[ "$output" == *"(NoSuchCORSConfiguration)"* ]]
	aws2 s3api put-bucket-cors --bucket corsb --cors-configuration \
		'{"CORSRules":[{"ID":"r1","AllowedOrigins":["https://*.example.com"],"AllowedMethods":["GET","PUT"],"AllowedHeaders":["*"],"ExposeHeaders":["ETag"],"MaxAgeSeconds":300},{"AllowedOrigins":["*"],"AllowedMethods":["GET"]}]}'
	run aws2 s3api get-bucket-cors --bucket corsb --output text --query \
		'CORSRules[].[ID, join(`,`, AllowedOrigins), join(`,`, AllowedMethods), join(`,`, AllowedHeaders || `[]`), join(`,`, ExposeHeaders || `[]`), MaxAgeSeconds]'
	[ "$status" -eq 0 ]
	[ "$output" = "r1	https://*.example.com	GET,PUT	*	ETag	300
None	*	GET			None" ] || { echo "$output"; false; }
	run aws2 s3api put-bucket-cors --bucket corsb --cors-configuration '{"CORSRules":[{"AllowedOrigins":["*"],"AllowedMethods":["PATCH"]}]}'
	[[ "$output" == *"(InvalidRequest)"*"Unsupported method is PATCH"* ]]
	run aws2 s3api put-bucket-cors --bucket corsb --cors-configuration '{"CORSRules":[{"AllowedOrigins":["*.*"],"AllowedMethods":["GET"]}]}'
	[[ "$output" == *"(InvalidRequest)"*"more than one wildcard"* ]]
	# A refused configuration changed nothing.
	run aws2 s3api get-bucket-cors --bucket corsb --query 'length(CORSRules)'
	[ "$output" = 2 ]
	/usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, boto3, botocore
ak, sk, ep, ca = sys.argv[1:]
c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1", endpoint_url=ep, verify=ca)
rules = {"CORSRules": [{"AllowedOrigins": ["https://app.example"], "AllowedMethods": ["POST"]}] * 101}
def code(f, **kw):
    try:
        f(**kw)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["Error"]["Message"]
    return None
assert code(c.put_bucket_cors, Bucket="corsb", CORSConfiguration=rules)[0] == "InvalidRequest"
# The body's Content-MD5 is checked, and needed: altered, then left out.
def alter(request, **kw):
    # (the headers are an email.message.Message: a plain set would add a
    # second Content-MD5)
    request.headers.replace_header("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")
c.meta.events.register("before-sign.s3.PutBucketCors", alter)
rules["CORSRules"] = rules["CORSRules"][:1]
assert code(c.put_bucket_cors, Bucket="corsb", CORSConfiguration=rules)[0] == "BadDigest"
c.meta.events.unregister("before-sign.s3.PutBucketCors", alter)
def drop(request, **kw):
    for h in list(request.headers.keys()):
        if h.lower() == "content-md5" or h.lower().startswith("x-amz-checksum-"):
            del request.headers[h]
c.meta.events.register("before-sign.s3.PutBucketCors", drop)
r = code(c.put_bucket_cors, Bucket="corsb", CORSConfiguration=rules)
assert r == ("InvalidRequest", "Missing required header for this request: Content-MD5"), r
c.meta.events.unregister("before-sign.s3.PutBucketCors", drop)
# A wrong Content-MD5 on any other XML body is refused too (DeleteObjects).
c.put_object(Bucket="corsb", Key="k", Body=b"x")
def alter_d(request, **kw):
    for h in list(request.headers.keys()):
        if h.lower() == "content-md5" or h.lower().startswith("x-amz-checksum-"):
            del request.headers[h]
    request.headers["Content-MD5"] = "1B2M2Y8AsgTpgAmY7PhCfg=="
c.meta.events.register("before-sign.s3.DeleteObjects", alter_d)
assert code(c.delete_objects, Bucket="corsb", Delete={"Objects": [{"Key": "k"}]})[0] == "BadDigest"
c.meta.events.unregister("before-sign.s3.DeleteObjects", alter_d)
assert c.head_object(Bucket="corsb", Key="k")["ContentLength"] == 1
c.put_bucket_cors(Bucket="corsb", CORSConfiguration=rules)
got = c.get_bucket_cors(Bucket="corsb")["CORSRules"]
assert got == [{"AllowedMethods": ["POST"], "AllowedOrigins": ["https://app.example"]}], got
c.delete_bucket_cors(Bucket="corsb")
assert code(c.get_bucket_cors, Bucket="corsb")[0] == "NoSuchCORSConfiguration"
c.delete_object(Bucket="corsb", Key="k")
# The rules go with the bucket: one made again of the name has none.
c.put_bucket_cors(Bucket="corsb", CORSConfiguration=rules)
c.delete_bucket(Bucket="corsb")
c.create_bucket(Bucket="corsb")
assert code(c.get_bucket_cors, Bucket="corsb")[0] == "NoSuchCORSConfiguration"
c.delete_bucket(Bucket="corsb")
print("cors ok")
PY
}

@test "CORS preflight (OPTIONS) with curl: answered from the bucket's rules, without credentials" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://corsp >/dev/null
	pre() {
		local path=$1; shift
		curl -s --cacert "$ROOT/tls/ca.pem" -X OPTIONS -D "$BATS_TEST_TMPDIR/h" -o "$BATS_TEST_TMPDIR/b" \
			-w '%{http_code}' "$@" "$EP/$path"
	}
	# No rules: refused.
	run pre corsp/k -H "Origin: https://app.example.com" -H "Access-Control-Request-Method: GET"
	[ "$output" = 403 ]
	grep -q '<Code>AccessForbidden</Code>' "$BATS_TEST_TMPDIR/b"
	aws2 s3api put-bucket-cors --bucket corsp --cors-configuration \
		'{"CORSRules":[{"AllowedOrigins":["https://*.example.com"],"AllowedMethods":["GET","PUT"],"AllowedHeaders":["x-amz-*","content-type"],"ExposeHeaders":["ETag"],"MaxAgeSeconds":300},{"AllowedOrigins":["*"],"AllowedMethods":["GET"]}]}'
	run pre corsp/dir/k -H "Origin: https://app.example.com" -H "Access-Control-Request-Method: PUT" \
		-H "Access-Control-Request-Headers: x-amz-meta-a, Content-Type"
	[ "$output" = 200 ]
	tr -d '\r' <"$BATS_TEST_TMPDIR/h" >"$BATS_TEST_TMPDIR/hh"
	grep -qx 'Access-Control-Allow-Origin: https://app.example.com' "$BATS_TEST_TMPDIR/hh"
	grep -qx 'Access-Control-Allow-Credentials: true' "$BATS_TEST_TMPDIR/hh"
	grep -qx 'Access-Control-Allow-Methods: GET, PUT' "$BATS_TEST_TMPDIR/hh"
	grep -qx 'Access-Control-Allow-Headers: x-amz-meta-a, Content-Type' "$BATS_TEST_TMPDIR/hh"
	grep -qx 'Access-Control-Expose-Headers: ETag' "$BATS_TEST_TMPDIR/hh"
	grep -qx 'Access-Control-Max-Age: 300' "$BATS_TEST_TMPDIR/hh"
	# Another origin: the second rule, "*", for GET only; no credentials.
	run pre corsp/k -H "Origin: https://other.org" -H "Access-Control-Request-Method: GET"
	[ "$output" = 200 ]
	tr -d '\r' <"$BATS_TEST_TMPDIR/h" >"$BATS_TEST_TMPDIR/hh"
	grep -qx 'Access-Control-Allow-Origin: \*' "$BATS_TEST_TMPDIR/hh"
	! grep -qi 'Access-Control-Allow-Credentials' "$BATS_TEST_TMPDIR/hh"
	run pre corsp/k -H "Origin: https://other.org" -H "Access-Control-Request-Method: PUT"
	[ "$output" = 403 ]
	# A header no rule allows; a method S3 does not have; no Origin.
	run pre corsp/k -H "Origin: https://app.example.com" -H "Access-Control-Request-Method: PUT" \
		-H "Access-Control-Request-Headers: authorization"
	[ "$output" = 403 ]
	run pre corsp/k -H "Origin: https://app.example.com" -H "Access-Control-Request-Method: PATCH"
	[ "$output" = 400 ]
	run pre corsp/k -H "Access-Control-Request-Method: GET"
	[ "$output" = 400 ]
	grep -q 'Origin request header needed' "$BATS_TEST_TMPDIR/b"
	run pre nosuchbucket-cors/k -H "Origin: https://app.example.com" -H "Access-Control-Request-Method: GET"
	[ "$output" = 404 ]
	# A preflight changes nothing and reads no object: the bucket is still empty.
	run aws2 s3api list-objects-v2 --bucket corsp --query 'length(Contents || `[]`)'
	[ "$output" = 0 ]
	aws2 s3api delete-bucket-cors --bucket corsp
	aws2 s3 rb s3://corsp >/dev/null
}

@test "CORS headers on answers: presigned GET and PUT with curl, errors too; none without a matching rule" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://corsa >/dev/null
	printf hi >"$BATS_TEST_TMPDIR/f"
	aws2 s3 cp "$BATS_TEST_TMPDIR/f" s3://corsa/k --no-progress >/dev/null
	aws2 s3api put-bucket-cors --bucket corsa --cors-configuration \
		'{"CORSRules":[{"AllowedOrigins":["https://*.example.com"],"AllowedMethods":["GET","PUT","HEAD"],"ExposeHeaders":["ETag","x-amz-request-id"],"MaxAgeSeconds":60},{"AllowedOrigins":["*"],"AllowedMethods":["GET"]}]}'
	# Presigned URLs, as a browser page would get them from its server.
	read -r get put miss < <(/usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, boto3, botocore.config
ak, sk, ep, ca = sys.argv[1:]
# (this boto3 presigns with SigV2 unless told otherwise)
c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1", endpoint_url=ep, verify=ca,
                 config=botocore.config.Config(signature_version="s3v4"))
u = lambda op, k: c.generate_presigned_url(op, Params={"Bucket": "corsa", "Key": k}, ExpiresIn=300)
print(u("get_object", "k"), u("put_object", "up"), u("get_object", "missing"))
PY
)
	req() {
		curl -s --cacert "$ROOT/tls/ca.pem" -D "$BATS_TEST_TMPDIR/h0" -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' "$@"
		tr -d '\r' <"$BATS_TEST_TMPDIR/h0" >"$BATS_TEST_TMPDIR/h"
	}
	hdr() { grep -qx "$1" "$BATS_TEST_TMPDIR/h" || { cat "$BATS_TEST_TMPDIR/h"; false; }; }
	run req -H "Origin: https://app.example.com" "$get"
	[ "$output" = 200 ]
	[ "$(cat "$BATS_TEST_TMPDIR/b")" = hi ]
	hdr 'Access-Control-Allow-Origin: https://app.example.com'
	hdr 'Access-Control-Allow-Credentials: true'
	hdr 'Access-Control-Allow-Methods: GET, PUT, HEAD'
	hdr 'Access-Control-Expose-Headers: ETag, x-amz-request-id'
	hdr 'Access-Control-Max-Age: 60'
	hdr 'Vary: Origin, Access-Control-Request-Headers, Access-Control-Request-Method'
	# The second rule: any origin, GET only, no credentials.
	run req -H "Origin: https://other.org" "$get"
	[ "$output" = 200 ]
	hdr 'Access-Control-Allow-Origin: \*'
	! grep -qi '^Access-Control-Allow-Credentials' "$BATS_TEST_TMPDIR/h"
	# No Origin: no CORS headers.
	run req "$get"
	[ "$output" = 200 ]
	! grep -qi '^Access-Control-' "$BATS_TEST_TMPDIR/h"
	# An error a browser must be able to read carries them too.
	run req -H "Origin: https://app.example.com" "$miss"
	[ "$output" = 404 ]
	grep -q '<Code>NoSuchKey</Code>' "$BATS_TEST_TMPDIR/b"
	hdr 'Access-Control-Allow-Origin: https://app.example.com'
	# A presigned PUT: the first rule allows it; for another origin no
	# rule does, so it is stored but the answer has no CORS headers.
	run req -X PUT --data-binary @"$BATS_TEST_TMPDIR/f" -H "Origin: https://up.example.com" "$put"
	[ "$output" = 200 ]
	hdr 'Access-Control-Allow-Origin: https://up.example.com'
	grep -qi '^ETag: ' "$BATS_TEST_TMPDIR/h"
	run req -X PUT --data-binary @"$BATS_TEST_TMPDIR/f" -H "Origin: https://other.org" "$put"
	[ "$output" = 200 ]
	! grep -qi '^Access-Control-' "$BATS_TEST_TMPDIR/h"
	# HEAD is its own method: allowed by the first rule, not by "*".
	run req -I -H "Origin: https://app.example.com" "$EP/corsa/k" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK"
	[ "$output" = 200 ]
	hdr 'Access-Control-Allow-Origin: https://app.example.com'
	run req -I -H "Origin: https://other.org" "$EP/corsa/k" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK"
	[ "$output" = 200 ]
	! grep -qi '^Access-Control-' "$BATS_TEST_TMPDIR/h"
	# Without rules, nothing.
	aws2 s3api delete-bucket-cors --bucket corsa
	run req -H "Origin: https://app.example.com" "$get"
	[ "$output" = 200 ]
	! grep -qi '^Access-Control-' "$BATS_TEST_TMPDIR/h"
	aws2 s3 rm --recursive s3://corsa >/dev/null
	aws2 s3 rb s3://corsa >/dev/null
}

@test "SigV2: boto3's default presigned URLs with curl, header-signed calls through boto3 (Debian); tampered, expired, unknown and foreign keys refused" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://sigv2 >/dev/null
	read -r oak osk < <(spx admin account create --root "$ROOT" --name v2other-$RANDOM --json |
		python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"])')
	run /usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" "$oak" "$osk" <<'PY'
import sys, hashlib, base64, subprocess, boto3, botocore, botocore.config
ak, sk, ep, ca, oak, osk = sys.argv[1:]
mk = lambda a, s, **kw: boto3.client("s3", aws_access_key_id=a, aws_secret_access_key=s,
                                     region_name="us-east-1", endpoint_url=ep, verify=ca, **kw)
v2 = botocore.config.Config(signature_version="s3")
c, c2 = mk(ak, sk), mk(ak, sk, config=v2)
def code(f, **kw):
    try:
        f(**kw)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return None
def curl(url, *args):
    r = subprocess.run(["curl", "-s", "--cacert", ca, "-w", "\n%{http_code}", *args, url],
                       capture_output=True)
    body, _, st = r.stdout.rpartition(b"\n")
    return int(st), body
# Header-signed (Authorization: AWS ...) through boto3's v2 signer.
body = b"v2 body " * 1000
md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
c2.put_object(Bucket="sigv2", Key="d/k é+1", Body=body, ContentMD5=md5,
              ContentType="text/x-v2", Metadata={"who": "v2"})
o = c2.get_object(Bucket="sigv2", Key="d/k é+1", Range="bytes=0-7", ResponseContentType="a/b")
assert o["Body"].read() == b"v2 body " and o["ContentType"] == "a/b", o
h = c2.head_object(Bucket="sigv2", Key="d/k é+1")
assert h["Metadata"] == {"who": "v2"} and h["ContentLength"] == len(body), h
assert [x["Key"] for x in c2.list_objects(Bucket="sigv2")["Contents"]] == ["d/k é+1"]
# (this botocore signs a subresource its model puts in the path twice,
# "?uploads?uploads", so its v2 multipart and ?versioning calls fail
# against any server: s3cmd and minio-go cover those.)
c2.copy_object(Bucket="sigv2", Key="mp", CopySource={"Bucket": "sigv2", "Key": "d/k é+1"})
assert c.head_object(Bucket="sigv2", Key="mp")["ContentLength"] == len(body)
# A wrong Content-MD5 is still checked: the body is not signed in v2.
assert code(c2.put_object, Bucket="sigv2", Key="bad", Body=b"x", ContentMD5=md5) == "BadDigest"
# Unknown and foreign keys.
assert code(mk("AKIANOSUCHKEY0000000", sk, config=v2).head_bucket, Bucket="sigv2") == "403"
assert code(mk("AKIANOSUCHKEY0000000", sk, config=v2).get_object, Bucket="sigv2", Key="mp") == "InvalidAccessKeyId"
assert code(mk(ak, "wrong" + sk[5:], config=v2).get_object, Bucket="sigv2", Key="mp") == "SignatureDoesNotMatch"
assert code(mk(oak, osk, config=v2).get_object, Bucket="sigv2", Key="mp") == "AccessDenied"
assert code(mk(oak, osk, config=v2).delete_object, Bucket="sigv2", Key="mp") == "AccessDenied"
# This boto3 presigns with SigV2 when not told otherwise.
url = c.generate_presigned_url("get_object", Params={"Bucket": "sigv2", "Key": "d/k é+1"}, ExpiresIn=300)
assert "AWSAccessKeyId=" in url and "Signature=" in url and "Expires=" in url, url
assert curl(url) == (200, body)
put = c.generate_presigned_url("put_object", Params={"Bucket": "sigv2", "Key": "up"}, ExpiresIn=300)
# (v2 signs Content-Type: curl's form type is taken out, as it was not
# presigned)
assert curl(put, "-X", "PUT", "-H", "Content-Type:", "--data-binary", "uploaded")[0] == 200
assert curl(put, "-X", "PUT", "--data-binary", "other")[0] == 403
assert c.get_object(Bucket="sigv2", Key="up")["Body"].read() == b"uploaded"
# Tampered: another key, another signature, a later Expires; expired.
st, b = curl(url.replace("/d/k", "/d/j"))
assert st == 403 and b"<Code>SignatureDoesNotMatch</Code>" in b, (st, b)
sig = url.split("Signature=")[1].split("&")[0]
st, b = curl(url.replace(sig, ("A" if sig[0] != "A" else "B") + sig[1:]))
assert st == 403 and b"<Code>SignatureDoesNotMatch</Code>" in b, (st, b)
exp = url.split("Expires=")[1].split("&")[0]
assert curl(url.replace("Expires=" + exp, "Expires=" + str(int(exp) + 60)))[0] == 403
old = c.generate_presigned_url("get_object", Params={"Bucket": "sigv2", "Key": "mp"}, ExpiresIn=-10)
st, b = curl(old)
assert st == 403 and b"Request has expired" in b, (st, b)
st, b = curl(ep + "/sigv2/mp?AWSAccessKeyId=" + ak + "&Signature=" + sig)
assert st == 403 and b"Expires and AWSAccessKeyId" in b, (st, b)
c2.delete_object(Bucket="sigv2", Key="up")
for k in ("d/k é+1", "mp"):
    c.delete_object(Bucket="sigv2", Key=k)
c.delete_bucket(Bucket="sigv2")
print("sigv2 ok")
PY
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "${lines[-1]}" = "sigv2 ok" ]
}

@test "POST object (browser form upload): boto3's generate_presigned_post (SigV4 and its default SigV2) with curl -F; the policy's refusals change nothing" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://postb >/dev/null
	aws2 s3api put-bucket-cors --bucket postb --cors-configuration \
		'{"CORSRules":[{"AllowedOrigins":["https://app.example"],"AllowedMethods":["POST"]}]}'
	read -r oak osk < <(spx admin account create --root "$ROOT" --name postother-$RANDOM --json |
		python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"])')
	run /usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" "$oak" "$osk" "$BATS_FILE_TMPDIR/f20m" <<'PY'
import sys, base64, json, subprocess, boto3, botocore.config
ak, sk, ep, ca, oak, osk, big = sys.argv[1:]
v4 = botocore.config.Config(signature_version="s3v4")
mk = lambda a, s, cfg=v4: boto3.client("s3", aws_access_key_id=a, aws_secret_access_key=s,
                                       region_name="us-east-1", endpoint_url=ep, verify=ca, config=cfg)
c, cv2 = mk(ak, sk), mk(ak, sk, None)
def post(p, data="@-;filename=hello.txt", stdin=b"hello post", extra=(), fields=None, headers=()):
    args = ["curl", "-s", "-D", "/dev/stderr", "-w", "\n%{http_code}", "--cacert", ca]
    for h in headers:
        args += ["-H", h]
    for k, v in (fields if fields is not None else p["fields"]).items():
        args += ["--form-string", f"{k}={v}"]
    args += list(extra) + ["-F", "file=" + data, p["url"]]
    r = subprocess.run(args, capture_output=True, input=stdin)
    body, _, st = r.stdout.rpartition(b"\n")
    return int(st), body.decode(), r.stderr.decode()
def keys():
    return sorted(o["Key"] for o in c.list_objects_v2(Bucket="postb").get("Contents", []))
cond = [["starts-with", "$key", "up/"], {"success_action_status": "201"},
        {"x-amz-meta-who": "form"}, ["content-length-range", 1, 30000000]]
fields = {"success_action_status": "201", "x-amz-meta-who": "form"}
# SigV4 (what newer SDKs make) and the SigV2 this boto3 makes by default.
for cl, name in ((c, "v4"), (cv2, "v2")):
    # (boto3 appends its own conditions to the list it is given)
    p = cl.generate_presigned_post("postb", "up/" + name + "-${filename}", Fields=dict(fields),
                                   Conditions=list(cond), ExpiresIn=300)
    assert ("x-amz-signature" in p["fields"]) == (name == "v4"), p["fields"]
    st, body, hdr = post(p)
    assert st == 201, (st, body)
    assert "<Key>up/" + name + "-hello.txt</Key>" in body and "<Bucket>postb</Bucket>" in body, body
    o = c.get_object(Bucket="postb", Key="up/" + name + "-hello.txt")
    assert o["Body"].read() == b"hello post" and o["Metadata"] == {"who": "form"}, o
# 20 MB streamed; the default answer is 204 with Location and ETag.
p = c.generate_presigned_post("postb", "big", ExpiresIn=300)
st, body, hdr = post(p, data="@" + big, stdin=None)
assert st == 204 and "Location: https://" in hdr and "ETag: " in hdr, (st, hdr)
assert c.head_object(Bucket="postb", Key="big")["ContentLength"] == 20000000
assert c.get_object(Bucket="postb", Key="big")["Body"].read() == open(big, "rb").read()
# A redirect, and CORS for the page that posted.
p = c.generate_presigned_post("postb", "redir", Fields={"success_action_redirect": "https://app.example/done?x=1"},
                              Conditions=[{"success_action_redirect": "https://app.example/done?x=1"}], ExpiresIn=300)
st, body, hdr = post(p, headers=["Origin: https://app.example"])
assert st == 303 and "Location: https://app.example/done?x=1&bucket=postb&key=redir&etag=%22" in hdr, (st, hdr)
assert "Access-Control-Allow-Origin: https://app.example" in hdr, hdr
before = keys()
def refused(p, code, msg="", **kw):
    st, body, hdr = post(p, **kw)
    assert "<Code>" + code + "</Code>" in body and msg in body, (code, st, body)
# The policy's conditions: a key outside it, a field it does not name,
# sizes out of range, a changed field value.
p = c.generate_presigned_post("postb", "up/x", Conditions=[["starts-with", "$key", "up/"],
                              ["content-length-range", 5, 20]], ExpiresIn=300)
f = dict(p["fields"]); f["key"] = "elsewhere/x"
refused(p, "AccessDenied", "Policy Condition failed", fields=f)
refused(p, "AccessDenied", "Extra input fields: x-amz-meta-sneaky", extra=["--form-string", "x-amz-meta-sneaky=1"])
refused(p, "EntityTooLarge", stdin=b"x" * 21)
refused(p, "EntityTooSmall", stdin=b"x" * 4)
# Expired; signature over another policy; another account's form for
# this bucket; no policy; no file; not multipart at all.
refused(c.generate_presigned_post("postb", "up/x", ExpiresIn=-10), "AccessDenied", "Policy expired")
p = c.generate_presigned_post("postb", "up/x", ExpiresIn=300)
pol = json.loads(base64.b64decode(p["fields"]["policy"]))
pol["expiration"] = "2099-01-01T00:00:00Z"
f = dict(p["fields"]); f["policy"] = base64.b64encode(json.dumps(pol).encode()).decode()
refused(p, "SignatureDoesNotMatch", fields=f)
refused(mk(oak, osk).generate_presigned_post("postb", "up/x", ExpiresIn=300), "AccessDenied")
refused(mk(oak, osk).generate_presigned_post("nosuchbucket-post", "up/x", ExpiresIn=300), "NoSuchBucket")
f = dict(p["fields"]); del f["policy"]
refused(p, "AccessDenied", fields=f)
args = ["curl", "-s", "--cacert", ca, "-H", "Content-Type: multipart/form-data; boundary=zz",
        "--data-binary", "--zz\r\nContent-Disposition: form-data; name=key\r\n\r\nk\r\n--zz--", p["url"]]
out = subprocess.run(args, capture_output=True, text=True).stdout
assert "<Code>InvalidArgument</Code>" in out and "exactly one file" in out, out
args[7] = "--zz\r\nbroken"
out = subprocess.run(args, capture_output=True, text=True).stdout
assert "<Code>MalformedPOSTRequest</Code>" in out, out
# Values that would become headers must not split them.
for fld, val in (("Content-Type", "text/plain\r\nX-Evil: 1"), ("x-amz-meta-a b", "v"),
                 ("success_action_redirect", "https://x/\r\nSet-Cookie: a=b")):
    p = c.generate_presigned_post("postb", "inj", Fields={fld: val}, Conditions=[{fld: val}], ExpiresIn=300)
    refused(p, "InvalidArgument", "cannot be stored as a header")
assert keys() == before, (keys(), before)
for k in keys():
    c.delete_object(Bucket="postb", Key=k)
c.delete_bucket_cors(Bucket="postb")
c.delete_bucket(Bucket="postb")
print("post ok")
PY
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "${lines[-1]}" = "post ok" ]
}

@test "npm SDK v3: CRC32 trailers (aws-chunked), range, metadata" {
	[ -d "$SPX_TOP/tests/clients/node_modules/@aws-sdk/client-s3" ] || skip "npm SDK v3 not installed (scripts/deps.sh)"
	run env NODE_EXTRA_CA_CERTS="$ROOT/tls/ca.pem" AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK" \
		AWS_REGION=us-east-1 AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
		node "$SPX_TOP/tests/clients/s3-sdk-v3.mjs" "$EP" sdkv3
	[ "$status" -eq 0 ]
	[[ "$output" == *"head 3145745 application/x-test blue"* ]]
	[[ "$output" == *'range "pxsp"'* ]]
	[[ "$output" == *"same true"* ]]
	[[ "$output" == *"list 1 a/b c.bin"* ]]
	[[ "$output" == *"gone NotFound 404"* ]]
	[[ "$output" == *"done"* ]]
}

@test "boto3 (Debian): part checksums, completed with PartNumber and ETag only" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	# Current SDKs send a CRC32 with every UploadPart; a part list without
	# the checksums is the common way to complete. It once crashed spx-gw.
	run /usr/bin/python3 - "$EP" "$ROOT/tls/ca.pem" <<'PY'
import os, sys, boto3
ep, ca = sys.argv[1:3]
s3 = boto3.session.Session(profile_name="spx").client("s3", endpoint_url=ep, verify=ca)
s3.create_bucket(Bucket="plainlist")
MiB = 1024 * 1024
data = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(3 * MiB)]

def upload(key, **create):
    u = s3.create_multipart_upload(Bucket="plainlist", Key=key, **create)
    parts = []
    for n, d in enumerate(data, 1):
        r = s3.upload_part(Bucket="plainlist", Key=key, UploadId=u["UploadId"],
                           PartNumber=n, Body=d, ChecksumAlgorithm="CRC32")
        assert "ChecksumCRC32" in r, r
        parts.append({"ETag": r["ETag"], "PartNumber": n})
    return u["UploadId"], parts

# No algorithm on the upload: the part list needs no checksums.
uid, parts = upload("none")
r = s3.complete_multipart_upload(Bucket="plainlist", Key="none", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
assert r["ETag"].endswith('-4"'), r
assert s3.get_object(Bucket="plainlist", Key="none")["Body"].read() == b"".join(data)
# A COMPOSITE CRC32 upload: S3 wants each part's checksum in the list.
uid, parts = upload("comp", ChecksumAlgorithm="CRC32")
try:
    s3.complete_multipart_upload(Bucket="plainlist", Key="comp", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
    raise SystemExit("a COMPOSITE upload completed without part checksums")
except s3.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidRequest", e.response
    assert "must include the checksum for each part" in e.response["Error"]["Message"], e.response
s3.abort_multipart_upload(Bucket="plainlist", Key="comp", UploadId=uid)
# A FULL_OBJECT CRC32 upload: the part checksums are optional.
uid, parts = upload("full", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT") \
    if "ChecksumType" in s3.meta.service_model.operation_model("CreateMultipartUpload").input_shape.members \
    else (None, None)
if uid:
    r = s3.complete_multipart_upload(Bucket="plainlist", Key="full", UploadId=uid,
                                     MultipartUpload={"Parts": parts})
    assert s3.get_object(Bucket="plainlist", Key="full")["Body"].read() == b"".join(data)
    s3.delete_object(Bucket="plainlist", Key="full")
s3.delete_object(Bucket="plainlist", Key="none")
s3.delete_bucket(Bucket="plainlist")
print("plain part list ok")
PY
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"plain part list ok"* ]]
	# The gateway is still the one that started.
	run curl -s -o /dev/null -w '%{http_code}' --cacert "$ROOT/tls/ca.pem" "$EP/"
	[ "$output" = 403 ]
}

@test "npm SDK v3: part checksums, completed with PartNumber and ETag only" {
	[ -d "$SPX_TOP/tests/clients/node_modules/@aws-sdk/client-s3" ] || skip "npm SDK v3 not installed (scripts/deps.sh)"
	run env NODE_EXTRA_CA_CERTS="$ROOT/tls/ca.pem" AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK" \
		AWS_REGION=us-east-1 AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
		node "$SPX_TOP/tests/clients/s3-mpu-sdk-v3.mjs" "$EP" sdkv3mpu
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"part 4 crc32"* ]]
	[[ "$output" == *"complete"*"-4"* ]]
	[[ "$output" == *"same true"* ]]
	[[ "$output" == *"full FULL_OBJECT true"* ]]
	[[ "$output" == *"done"* ]]
}

@test "boto3 (Debian): ListMultipartUploads pages with max-uploads and its markers" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	run /usr/bin/python3 - "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, boto3
ep, ca = sys.argv[1:3]
s3 = boto3.session.Session(profile_name="spx").client("s3", endpoint_url=ep, verify=ca)
s3.create_bucket(Bucket="uploads")
made = []
for i in range(1040):
    k = "k%04d" % i
    made.append((k, s3.create_multipart_upload(Bucket="uploads", Key=k)["UploadId"]))
for i in range(5):   # one key, several uploads
    made.append(("dup", s3.create_multipart_upload(Bucket="uploads", Key="dup")["UploadId"]))
for k in ("dir/a", "dir/b", "dir/sub/c", "else/x"):
    made.append((k, s3.create_multipart_upload(Bucket="uploads", Key=k)["UploadId"]))
want = sorted(made)

def same(got):
    """Every upload once, keys in order (one key's uploads are ordered by
    initiation, which may tie within a millisecond)."""
    keys = [k for k, _ in got]
    return keys == sorted(keys) and len(got) == len(set(got)) and sorted(got) == want
r = s3.list_multipart_uploads(Bucket="uploads")
assert len(r["Uploads"]) == 1000 and r["IsTruncated"] and r["MaxUploads"] == 1000, (len(r["Uploads"]), r["IsTruncated"])
# Paging 7 at a time with the markers gives every upload once, in order.
got, kw = [], {}
while True:
    r = s3.list_multipart_uploads(Bucket="uploads", MaxUploads=7, **kw)
    got += [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
    assert len(r.get("Uploads", [])) <= 7
    if not r["IsTruncated"]:
        break
    kw = {"KeyMarker": r["NextKeyMarker"], "UploadIdMarker": r["NextUploadIdMarker"]}
assert same(got), (len(got), len(want), [g for g in got if g not in want][:3])
# boto3's own paginator agrees
pg = s3.get_paginator("list_multipart_uploads")
seen = [(u["Key"], u["UploadId"]) for page in pg.paginate(Bucket="uploads", PaginationConfig={"PageSize": 100}) for u in page.get("Uploads", [])]
assert same(seen), len(seen)
# A delimiter rolls keys up into common prefixes, each counted once.
r = s3.list_multipart_uploads(Bucket="uploads", Prefix="d", Delimiter="/")
assert [p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["dir/"], r
assert [u["Key"] for u in r["Uploads"]] == ["dup"] * 5, r["Uploads"]
r = s3.list_multipart_uploads(Bucket="uploads", Prefix="dir/", Delimiter="/", MaxUploads=2)
assert [u["Key"] for u in r["Uploads"]] == ["dir/a", "dir/b"] and r["IsTruncated"], r
r = s3.list_multipart_uploads(Bucket="uploads", Prefix="dir/", Delimiter="/", KeyMarker=r["NextKeyMarker"], UploadIdMarker=r["NextUploadIdMarker"])
assert [p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["dir/sub/"] and not r.get("Uploads"), r
for k, u in made:
    s3.abort_multipart_upload(Bucket="uploads", Key=k, UploadId=u)
assert "Uploads" not in s3.list_multipart_uploads(Bucket="uploads")
s3.delete_bucket(Bucket="uploads")
print("uploads ok")
PY
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"uploads ok"* ]]
}

@test "presigned URLs: PUT and GET with curl" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	awscli2 --endpoint-url "$EP" s3 mb s3://pre >/dev/null
	read -r put get < <(/usr/bin/python3 - "$EP" <<'PY'
import sys, boto3
from botocore.config import Config
s3 = boto3.session.Session(profile_name="spx").client("s3", endpoint_url=sys.argv[1], config=Config(signature_version="s3v4"))
print(s3.generate_presigned_url("put_object", Params={"Bucket": "pre", "Key": "p k"}, ExpiresIn=300),
      s3.generate_presigned_url("get_object", Params={"Bucket": "pre", "Key": "p k"}, ExpiresIn=300))
PY
)
	run curl -s -w '%{http_code}' --cacert "$ROOT/tls/ca.pem" -T "$BATS_FILE_TMPDIR/f3m" "$put"
	[ "$output" = 200 ]
	curl -s --cacert "$ROOT/tls/ca.pem" -o "$BATS_TEST_TMPDIR/g" "$get"
	cmp "$BATS_FILE_TMPDIR/f3m" "$BATS_TEST_TMPDIR/g"
	# The same URL with its signature's last digit changed.
	last=${get: -1}
	[ "$last" = 0 ] && other=1 || other=0
	run curl -s -w '%{http_code}' --cacert "$ROOT/tls/ca.pem" -o /dev/null "${get%?}$other"
	[ "$output" = 403 ]
	awscli2 --endpoint-url "$EP" s3 rm "s3://pre/p k" >/dev/null
	awscli2 --endpoint-url "$EP" s3 rb s3://pre >/dev/null
}

@test "buckets belong to the account that made them: another gets AccessDenied" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://mine-only >/dev/null
	aws2 s3api put-object --bucket mine-only --key k --body "$BATS_FILE_TMPDIR/f3m" >/dev/null
	read -r oak osk < <(spx admin account create --root "$ROOT" --name other-$RANDOM --json |
		python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"])')
	other() ( unset AWS_PROFILE; AWS_ACCESS_KEY_ID=$oak AWS_SECRET_ACCESS_KEY=$osk awscli2 --ca-bundle "$ROOT/tls/ca.pem" --region us-east-1 --endpoint-url "$EP" "$@" )
	run other s3api get-object --bucket mine-only --key k "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3api put-object --bucket mine-only --key k2 --body "$BATS_FILE_TMPDIR/f3m"
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3api delete-bucket --bucket mine-only
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3 ls
	[ "$status" -eq 0 ]
	[[ "$output" != *"mine-only"* ]]
	run other s3api create-bucket --bucket mine-only
	[[ "$output" == *"(BucketAlreadyExists)"* ]]
	run other sts get-caller-identity --endpoint-url "https://127.0.0.1:$EC2_PORT" --query Account --output text
	[ "$status" -eq 0 ]
	[ "$output" != "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["keys"][0]["AccountId"])' "$ROOT/credentials.json")" ]
	aws2 s3 rm s3://mine-only/k >/dev/null
	aws2 s3 rb s3://mine-only >/dev/null
}

@test "a PUT is bound to the bucket it was authorised for, not to its name" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	read -r oak osk < <(spx admin account create --root "$ROOT" --name rebind-$RANDOM --json |
		python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"])')
	# Account A starts a slow PUT into its bucket, deletes the bucket,
	# account B makes one of the same name, A finishes: the object must
	# not land in B's bucket. The same for the other writes that commit
	# late (UploadPart, CompleteMultipartUpload) and a read.
	run /usr/bin/python3 - "$EP" "$ROOT/tls/ca.pem" "$AK" "$SK" "$oak" "$osk" <<'PY'
import http.client, ssl, sys, urllib.parse, boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
ep, ca, ak, sk, oak, osk = sys.argv[1:]
host = urllib.parse.urlparse(ep)
A = boto3.client("s3", endpoint_url=ep, verify=ca, region_name="us-east-1",
                 aws_access_key_id=ak, aws_secret_access_key=sk)
B = boto3.client("s3", endpoint_url=ep, verify=ca, region_name="us-east-1",
                 aws_access_key_id=oak, aws_secret_access_key=osk)

def start_put(path, n):
    """A signed PUT of n bytes whose body is sent later."""
    r = AWSRequest(method="PUT", url=ep + path,
                   headers={"Content-Length": str(n), "X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(r)
    c = http.client.HTTPSConnection(host.hostname, host.port,
                                    context=ssl.create_default_context(cafile=ca))
    c.putrequest("PUT", path)
    for k, v in r.headers.items():
        c.putheader(k, v)
    c.endheaders()
    c.send(b"a" * (n // 2))
    return c

def finish(c, n):
    """The rest of the body, then the answer. The gateway may answer
    (and close) before the body is all sent: that answer counts."""
    try:
        c.send(b"a" * (n - n // 2))
    except OSError:
        pass
    try:
        r = c.getresponse()
        return r.status, r.read().decode()
    except OSError as e:
        return None, str(e)

def swap():
    A.delete_bucket(Bucket="rebind")
    B.create_bucket(Bucket="rebind")

# PutObject
A.create_bucket(Bucket="rebind")
c = start_put("/rebind/k", 1 << 20)
swap()
st, body = finish(c, 1 << 20)
assert st == 404 and "NoSuchBucket" in body, (st, body)
assert B.list_objects_v2(Bucket="rebind").get("KeyCount") == 0
B.delete_bucket(Bucket="rebind")
# UploadPart then CompleteMultipartUpload: the upload went with A's bucket
A.create_bucket(Bucket="rebind")
u = A.create_multipart_upload(Bucket="rebind", Key="m")["UploadId"]
p1 = A.upload_part(Bucket="rebind", Key="m", UploadId=u, PartNumber=1, Body=b"x" * 100)
c = start_put("/rebind/m?partNumber=2&uploadId=" + u, 1 << 20)
A.abort_multipart_upload(Bucket="rebind", Key="m", UploadId=u)
swap()
st, body = finish(c, 1 << 20)
assert st != 200, (st, body)
assert B.list_multipart_uploads(Bucket="rebind").get("Uploads", []) == []
assert B.list_objects_v2(Bucket="rebind").get("KeyCount") == 0
B.delete_bucket(Bucket="rebind")
print("bound ok")
PY
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"bound ok"* ]]
}

@test "virtual-host-style requests (BUCKET.s3_domain); SigV2 refused where configured" {
	local saved=$ROOT port
	make_node --http
	VH_ROOT=$ROOT
	sed -i 's/^http = true$/http = true\ns3_domain = "s3.spx.test"\ns3_sigv2 = false/' "$ROOT/spinifex.toml"
	start_node
	read -r ak sk < <(admin_key)
	port=$S3_PORT
	vh() { curl -s -w '\n%{http_code}' --resolve "vhost-bkt.s3.spx.test:$port:127.0.0.1" \
		--aws-sigv4 "aws:amz:us-east-1:s3" --user "$ak:$sk" "$@"; }
	run curl -s -w '\n%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ak:$sk" -X PUT "http://127.0.0.1:$port/vhost-bkt"
	[ "${lines[-1]}" = 200 ]
	printf 'virtual' >"$BATS_TEST_TMPDIR/v"
	# curl 7.88 signs the hash of an empty body with -T: send it as data.
	run vh -X PUT --data-binary @"$BATS_TEST_TMPDIR/v" "http://vhost-bkt.s3.spx.test:$port/dir/v.txt"
	[ "${lines[-1]}" = 200 ]
	run vh "http://vhost-bkt.s3.spx.test:$port/dir/v.txt"
	[ "${lines[0]}" = virtual ]
	run vh "http://vhost-bkt.s3.spx.test:$port/?list-type=2"
	[[ "$output" == *"<Name>vhost-bkt</Name>"*"<Key>dir/v.txt</Key>"* ]]
	# The same object path-style.
	run curl -s --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ak:$sk" "http://127.0.0.1:$port/vhost-bkt/dir/v.txt"
	[ "$output" = virtual ]
	# gw.s3_sigv2 = false: a SigV2 URL (boto3's default presign) is
	# refused as AWS regions without SigV2 refuse it.
	url=$(/usr/bin/python3 -c 'import sys, boto3; print(boto3.client("s3", aws_access_key_id=sys.argv[1], aws_secret_access_key=sys.argv[2], region_name="us-east-1", endpoint_url=sys.argv[3]).generate_presigned_url("get_object", Params={"Bucket": "vhost-bkt", "Key": "dir/v.txt"}))' "$ak" "$sk" "http://127.0.0.1:$port")
	[[ "$url" == *"AWSAccessKeyId="* ]]
	run curl -s -w '\n%{http_code}' "$url"
	[ "${lines[-1]}" = 400 ]
	[[ "$output" == *"<Code>InvalidRequest</Code>"*"Please use AWS4-HMAC-SHA256."* ]]
	stop_node
	ROOT=$saved
}

@test "what spx does not do is refused, never accepted and ignored" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://refuse >/dev/null
	printf 'x' >"$BATS_TEST_TMPDIR/x"
	run aws2 s3api put-object --bucket refuse --key k --body "$BATS_TEST_TMPDIR/x" --server-side-encryption aws:kms
	[[ "$output" == *"(NotImplemented)"* ]]
	run aws2 s3api put-object --bucket refuse --key k --body "$BATS_TEST_TMPDIR/x" --storage-class BOGUS
	[[ "$output" == *"(InvalidStorageClass)"* ]]
	run aws2 s3api put-bucket-website --bucket refuse \
		--website-configuration '{"IndexDocument":{"Suffix":"index.html"}}'
	[[ "$output" == *"(NotImplemented)"* ]]
	run aws2 s3api put-bucket-lifecycle-configuration --bucket refuse \
		--lifecycle-configuration '{"Rules":[{"ID":"r","Status":"Enabled","Filter":{"Prefix":""},"Transitions":[{"Days":30,"StorageClass":"GLACIER"}]}]}'
	[[ "$output" == *"(NotImplemented)"* ]]
	run aws2 s3api list-objects-v2 --bucket refuse --query 'Contents[].Key' --output text
	[ "$output" = None ]
	# The class asked for is kept and returned.
	run aws2 s3api put-object --bucket refuse --key k --body "$BATS_TEST_TMPDIR/x" --storage-class REDUCED_REDUNDANCY
	[ "$status" -eq 0 ]
	run aws2 s3api head-object --bucket refuse --key k --query StorageClass --output text
	[ "$output" = REDUCED_REDUNDANCY ]
	# "Nothing configured" reads are answered.
	run aws2 s3api get-bucket-versioning --bucket refuse
	[ "$status" -eq 0 ]
	run aws2 s3api get-object-tagging --bucket refuse --key k --query 'length(TagSet)'
	[ "$output" = 0 ]
	aws2 s3 rm s3://refuse/k >/dev/null
	aws2 s3 rb s3://refuse >/dev/null
}

@test "aws v2: a copy between buckets above the multipart threshold (UploadPartCopy)" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://cpa-src >/dev/null
	aws2 s3 mb s3://cpa-dst >/dev/null
	aws2 s3 cp "$BATS_FILE_TMPDIR/f20m" s3://cpa-src/big --no-progress >/dev/null
	run aws2 s3 cp s3://cpa-src/big s3://cpa-dst/big --no-progress
	[ "$status" -eq 0 ]
	aws2 s3 cp s3://cpa-dst/big "$BATS_TEST_TMPDIR/b" --no-progress >/dev/null
	cmp "$BATS_FILE_TMPDIR/f20m" "$BATS_TEST_TMPDIR/b"
	# A copy range outside the source is refused.
	up=$(aws2 s3api create-multipart-upload --bucket cpa-dst --key r --query UploadId --output text)
	run aws2 s3api upload-part-copy --bucket cpa-dst --key r --upload-id "$up" --part-number 1 \
		--copy-source cpa-src/big --copy-source-range bytes=0-99999999
	[[ "$output" == *"(InvalidArgument)"* ]]
	run aws2 s3api upload-part-copy --bucket cpa-dst --key r --upload-id "$up" --part-number 1 \
		--copy-source cpa-src/big --copy-source-range bytes=100-199
	[ "$status" -eq 0 ]
	aws2 s3api abort-multipart-upload --bucket cpa-dst --key r --upload-id "$up"
	aws2 s3 rm s3://cpa-src --recursive >/dev/null
	aws2 s3 rm s3://cpa-dst --recursive >/dev/null
	aws2 s3 rb s3://cpa-src >/dev/null
	aws2 s3 rb s3://cpa-dst >/dev/null
}
