#!/usr/bin/env bats
# S3 object lock through aws v2 and boto3: buckets made with it, default
# and per-version retention, legal hold, the bypass, and every refusal AWS
# gives; retention surviving a restart of the node; a retention racing a
# delete of the same version.

load ../bats/helpers

setup_file() {
	file_node
	printf 'locked words' >"$BATS_FILE_TMPDIR/f"
	MD5=$(openssl md5 -binary "$BATS_FILE_TMPDIR/f" | base64)
	export MD5
}

teardown_file() { stop_node; }

setup() {
	aws_env
	EP="https://127.0.0.1:$S3_PORT"
}

aws2() { awscli2 --endpoint-url "$EP" "$@"; }
put() { # BUCKET KEY [ARGS]: prints the version id
	local b=$1 k=$2
	shift 2
	aws2 s3api put-object --bucket "$b" --key "$k" --body "$BATS_FILE_TMPDIR/f" \
		--content-md5 "$MD5" --query VersionId --output text "$@"
}

@test "object lock: a bucket made with it has versioning that stays Enabled, and a configuration" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	run aws2 s3api create-bucket --bucket lockcfg --object-lock-enabled-for-bucket
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-versioning --bucket lockcfg --query Status --output text
	[ "$output" = Enabled ]
	run aws2 s3api get-object-lock-configuration --bucket lockcfg --query ObjectLockConfiguration.ObjectLockEnabled --output text
	[ "$output" = Enabled ]
	run aws2 s3api put-bucket-versioning --bucket lockcfg --versioning-configuration Status=Suspended
	[[ "$output" == *"(InvalidBucketState)"* ]]
	run aws2 s3api put-object-lock-configuration --bucket lockcfg --object-lock-configuration \
		'{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"GOVERNANCE","Days":1,"Years":1}}}'
	[[ "$output" == *"(MalformedXML)"* ]]
	run aws2 s3api put-object-lock-configuration --bucket lockcfg --object-lock-configuration \
		'{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"GOVERNANCE","Days":0}}}'
	[[ "$output" == *"(InvalidArgument)"* ]]
	run aws2 s3api put-object-lock-configuration --bucket lockcfg --object-lock-configuration \
		'{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"COMPLIANCE","Years":2}}}'
	[ "$status" -eq 0 ]
	run aws2 s3api get-object-lock-configuration --bucket lockcfg \
		--query 'ObjectLockConfiguration.Rule.DefaultRetention.[Mode,Years]' --output text
	[ "$output" = $'COMPLIANCE\t2' ]
	# A bucket without: no configuration, and lock settings are refused.
	aws2 s3 mb s3://plain >/dev/null
	run aws2 s3api get-object-lock-configuration --bucket plain
	[[ "$output" == *"(ObjectLockConfigurationNotFoundError)"* ]]
	run put plain k --object-lock-mode GOVERNANCE --object-lock-retain-until-date 2099-01-01T00:00:00Z
	[[ "$output" == *"(InvalidRequest)"*"missing Object Lock Configuration"* ]]
	run aws2 s3api head-object --bucket plain --key k
	[ "$status" -ne 0 ]
	run aws2 s3api put-object-lock-configuration --bucket plain --object-lock-configuration '{"ObjectLockEnabled":"Enabled"}'
	[[ "$output" == *"(InvalidBucketState)"* ]]
	# ... until its versioning is Enabled.
	aws2 s3api put-bucket-versioning --bucket plain --versioning-configuration Status=Enabled
	run aws2 s3api put-object-lock-configuration --bucket plain --object-lock-configuration '{"ObjectLockEnabled":"Enabled"}'
	[ "$status" -eq 0 ]
	aws2 s3 rb s3://plain >/dev/null
}

@test "object lock: GOVERNANCE yields only to the bypass, COMPLIANCE to no one, a legal hold until it is OFF" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3api create-bucket --bucket locked --object-lock-enabled-for-bucket >/dev/null
	gv=$(put locked g --object-lock-mode GOVERNANCE --object-lock-retain-until-date 2099-01-01T00:00:00Z)
	cv=$(put locked c --object-lock-mode COMPLIANCE --object-lock-retain-until-date 2099-01-01T00:00:00Z)
	hv=$(put locked h --object-lock-legal-hold-status ON)
	# GET and HEAD say so.
	run aws2 s3api head-object --bucket locked --key c --query '[ObjectLockMode,ObjectLockRetainUntilDate]' --output text
	[ "$output" = $'COMPLIANCE\t2099-01-01T00:00:00+00:00' ]
	run aws2 s3api get-object-legal-hold --bucket locked --key h --query LegalHold.Status --output text
	[ "$output" = ON ]
	# Settings need a digest, the date must be ahead, mode and date go together.
	run aws2 s3api put-object --bucket locked --key x --body "$BATS_FILE_TMPDIR/f" \
		--object-lock-mode GOVERNANCE --object-lock-retain-until-date 2001-01-01T00:00:00Z --content-md5 "$MD5"
	[[ "$output" == *"(InvalidArgument)"*"future"* ]]
	run aws2 s3api put-object --bucket locked --key x --body "$BATS_FILE_TMPDIR/f" --object-lock-mode GOVERNANCE --content-md5 "$MD5"
	[[ "$output" == *"(InvalidArgument)"* ]]
	# The versions stay, whoever asks, one by one or many at once.
	for v in "g $gv" "c $cv" "h $hv"; do
		set -- $v
		run aws2 s3api delete-object --bucket locked --key "$1" --version-id "$2"
		[[ "$output" == *"(AccessDenied)"* ]] || { echo "$1: $output"; false; }
	done
	run aws2 s3api delete-objects --bucket locked --delete "Objects=[{Key=g,VersionId=$gv},{Key=c,VersionId=$cv}]" \
		--query 'Errors[].Code' --output text
	[ "$output" = $'AccessDenied\tAccessDenied' ]
	run aws2 s3api list-object-versions --bucket locked --query 'length(Versions)'
	[ "$output" = 3 ]
	# A delete without a version makes a marker, as always; the version stays.
	run aws2 s3api delete-object --bucket locked --key g
	[[ "$output" == *'"DeleteMarker": true'* ]]
	run aws2 s3api get-object --bucket locked --key g --version-id "$gv" "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 0 ]
	cmp "$BATS_FILE_TMPDIR/f" "$BATS_TEST_TMPDIR/o"
	# COMPLIANCE: not shortened, not weakened, not removed, bypass or not;
	# made longer, yes.
	run aws2 s3api put-object-retention --bucket locked --key c --version-id "$cv" --bypass-governance-retention \
		--retention Mode=COMPLIANCE,RetainUntilDate=2098-01-01T00:00:00Z
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api put-object-retention --bucket locked --key c --version-id "$cv" --bypass-governance-retention \
		--retention Mode=GOVERNANCE,RetainUntilDate=2100-01-01T00:00:00Z
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api delete-object --bucket locked --key c --version-id "$cv" --bypass-governance-retention
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api put-object-retention --bucket locked --key c --version-id "$cv" \
		--retention Mode=COMPLIANCE,RetainUntilDate=2100-01-01T00:00:00Z
	[ "$status" -eq 0 ]
	# GOVERNANCE: shortened or removed only with the bypass.
	run aws2 s3api put-object-retention --bucket locked --key g --version-id "$gv" \
		--retention Mode=GOVERNANCE,RetainUntilDate=2098-01-01T00:00:00Z
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api put-object-retention --bucket locked --key g --version-id "$gv" --bypass-governance-retention \
		--retention Mode=GOVERNANCE,RetainUntilDate=2098-01-01T00:00:00Z
	[ "$status" -eq 0 ]
	run aws2 s3api get-object-retention --bucket locked --key g --version-id "$gv" --query Retention.RetainUntilDate --output text
	[ "$output" = 2098-01-01T00:00:00+00:00 ]
	run aws2 s3api delete-object --bucket locked --key g --version-id "$gv" --bypass-governance-retention
	[ "$status" -eq 0 ]
	# The legal hold binds until it is lifted, the bypass too.
	run aws2 s3api delete-object --bucket locked --key h --version-id "$hv" --bypass-governance-retention
	[[ "$output" == *"(AccessDenied)"* ]]
	aws2 s3api put-object-legal-hold --bucket locked --key h --version-id "$hv" --legal-hold Status=OFF
	run aws2 s3api delete-object --bucket locked --key h --version-id "$hv"
	[ "$status" -eq 0 ]
	# Another account may not bypass: the owner's policy grants it nothing.
	read -r oak osk < <(spx admin account create --root "$ROOT" --name lockother-$RANDOM --json |
		python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"])')
	run env -u AWS_PROFILE AWS_ACCESS_KEY_ID="$oak" AWS_SECRET_ACCESS_KEY="$osk" /usr/bin/aws --ca-bundle "$ROOT/tls/ca.pem" \
		--region us-east-1 --endpoint-url "$EP" s3api delete-object --bucket locked --key c --version-id "$cv" --bypass-governance-retention
	[[ "$output" == *"(AccessDenied)"* ]]
}

@test "object lock: default retention, multipart and copies, and dates that survive a restart (boto3)" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	/usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, datetime, boto3, botocore
ak, sk, ep, ca = sys.argv[1:]
c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1", endpoint_url=ep, verify=ca)
c.create_bucket(Bucket="deflock", ObjectLockEnabledForBucket=True)
c.put_object_lock_configuration(Bucket="deflock", ObjectLockConfiguration={
    "ObjectLockEnabled": "Enabled",
    "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 2}}})
now = datetime.datetime.now(datetime.timezone.utc)
v = c.put_object(Bucket="deflock", Key="d", Body=b"x")["VersionId"]
h = c.head_object(Bucket="deflock", Key="d")
assert h["ObjectLockMode"] == "GOVERNANCE", h
left = h["ObjectLockRetainUntilDate"] - now
assert datetime.timedelta(days=1, hours=23) < left < datetime.timedelta(days=2, hours=1), left
# Multipart: the settings of CreateMultipartUpload.
mp = c.create_multipart_upload(Bucket="deflock", Key="m", ObjectLockMode="COMPLIANCE",
                               ObjectLockRetainUntilDate=datetime.datetime(2099, 1, 1, tzinfo=datetime.timezone.utc))
e = c.upload_part(Bucket="deflock", Key="m", UploadId=mp["UploadId"], PartNumber=1, Body=b"y" * 100)["ETag"]
mv = c.complete_multipart_upload(Bucket="deflock", Key="m", UploadId=mp["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})["VersionId"]
assert c.get_object_retention(Bucket="deflock", Key="m", VersionId=mv)["Retention"]["Mode"] == "COMPLIANCE"
# A copy takes the bucket's default, not its source's COMPLIANCE.
cv = c.copy_object(Bucket="deflock", Key="copy", CopySource={"Bucket": "deflock", "Key": "m"})["VersionId"]
assert c.head_object(Bucket="deflock", Key="copy", VersionId=cv)["ObjectLockMode"] == "GOVERNANCE"
for key, vid in (("d", v), ("m", mv)):
    try:
        c.delete_object(Bucket="deflock", Key=key, VersionId=vid)
        raise AssertionError("deleted a locked version")
    except botocore.exceptions.ClientError as err:
        assert err.response["Error"]["Code"] == "AccessDenied", err.response
print(v, mv)
PY
	# After a restart the dates and refusals are the same.
	spx down --root "$ROOT" >/dev/null
	start_node
	EP="https://127.0.0.1:$S3_PORT"
	run aws2 s3api head-object --bucket deflock --key m --query ObjectLockMode --output text
	[ "$output" = COMPLIANCE ]
	v=$(aws2 s3api list-object-versions --bucket deflock --prefix m --query 'Versions[0].VersionId' --output text)
	run aws2 s3api delete-object --bucket deflock --key m --version-id "$v" --bypass-governance-retention
	[[ "$output" == *"(AccessDenied)"* ]]
}

@test "object lock: PutObjectRetention racing DeleteObject on the same version never both win (boto3)" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	/usr/bin/python3 - "$AK" "$SK" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, datetime, random, threading, time, boto3, botocore
ak, sk, ep, ca = sys.argv[1:]
c = boto3.client("s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1", endpoint_url=ep, verify=ca,
                 config=botocore.config.Config(max_pool_connections=4,
                                               retries={"max_attempts": 1}))
c.create_bucket(Bucket="lockrace", ObjectLockEnabledForBucket=True)
until = datetime.datetime(2099, 1, 1, tzinfo=datetime.timezone.utc)
both = kept = gone = 0
for i in range(25):
    v = c.put_object(Bucket="lockrace", Key="k", Body=b"x")["VersionId"]
    res = {}
    go = threading.Barrier(2)
    # Each starts after a random few ms, so that either may come first.
    def retain():
        go.wait()
        time.sleep(random.random() * 0.02)
        try:
            c.put_object_retention(Bucket="lockrace", Key="k", VersionId=v,
                                   Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until})
            res["retain"] = True
        except botocore.exceptions.ClientError as e:
            assert e.response["Error"]["Code"] in ("NoSuchVersion", "NoSuchKey"), e.response
            res["retain"] = False
    def delete():
        go.wait()
        time.sleep(random.random() * 0.02)
        try:
            c.delete_object(Bucket="lockrace", Key="k", VersionId=v)
            res["delete"] = True
        except botocore.exceptions.ClientError as e:
            assert e.response["Error"]["Code"] == "AccessDenied", e.response
            res["delete"] = False
    ts = [threading.Thread(target=f) for f in (retain, delete)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    left = [x["VersionId"] for x in c.list_object_versions(Bucket="lockrace").get("Versions", [])]
    # Exactly one wins: a retention that was set holds the version; a
    # delete that succeeded came first, and the retention found nothing.
    assert res["retain"] != res["delete"], (i, res)
    assert (v in left) == res["retain"], (i, res, left)
    kept += res["retain"]
    gone += res["delete"]
print(kept, "kept,", gone, "deleted")
PY
}
