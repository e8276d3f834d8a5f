#!/usr/bin/env bats
# Object lock and access control where they meet, through aws v2, boto3
# and curl with two accounts: setting a lock is an action of its own, a
# browser upload gets the bucket's default retention, and a copy of an
# older version is decided by that version's ACL.

load ../bats/helpers

setup_file() {
	file_node
	second_account
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

@test "object lock: another account allowed only s3:PutObject cannot set a retention or a legal hold on what it writes" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3api create-bucket --bucket lockdrop --object-lock-enabled-for-bucket >/dev/null
	policy lockdrop '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"'"$OTHER"'"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::lockdrop/in/*"}]}'
	run other s3api put-object --bucket lockdrop --key in/a --body "$BATS_FILE_TMPDIR/f" --content-md5 "$MD5" \
		--object-lock-mode COMPLIANCE --object-lock-retain-until-date 2099-01-01T00:00:00Z
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3api put-object --bucket lockdrop --key in/b --body "$BATS_FILE_TMPDIR/f" --content-md5 "$MD5" \
		--object-lock-legal-hold-status ON
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3api create-multipart-upload --bucket lockdrop --key in/c \
		--object-lock-mode GOVERNANCE --object-lock-retain-until-date 2099-01-01T00:00:00Z
	[[ "$output" == *"(AccessDenied)"* ]]
	# Nothing was written; a plain write is still allowed.
	run aws2 s3api list-object-versions --bucket lockdrop --query 'length(Versions || `[]`)'
	[ "$output" = 0 ]
	run aws2 s3api list-multipart-uploads --bucket lockdrop --query 'length(Uploads || `[]`)'
	[ "$output" = 0 ]
	run other s3api put-object --bucket lockdrop --key in/d --body "$BATS_FILE_TMPDIR/f" --content-md5 "$MD5"
	[ "$status" -eq 0 ]
	# Granted the lock's own actions, the same writes succeed.
	policy lockdrop '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"'"$OTHER"'"},"Action":["s3:PutObject","s3:PutObjectRetention","s3:PutObjectLegalHold"],"Resource":"arn:aws:s3:::lockdrop/in/*"}]}'
	run other s3api put-object --bucket lockdrop --key in/e --body "$BATS_FILE_TMPDIR/f" --content-md5 "$MD5" \
		--object-lock-mode GOVERNANCE --object-lock-retain-until-date 2099-01-01T00:00:00Z \
		--object-lock-legal-hold-status ON
	[ "$status" -eq 0 ]
	run aws2 s3api head-object --bucket lockdrop --key in/e \
		--query '[ObjectLockMode,ObjectLockLegalHoldStatus]' --output text
	[ "$output" = $'GOVERNANCE\tON' ]
	# The owner sets them on its own writes with no policy of its own.
	run aws2 s3api put-object --bucket lockdrop --key mine --body "$BATS_FILE_TMPDIR/f" --content-md5 "$MD5" \
		--object-lock-legal-hold-status ON
	[ "$status" -eq 0 ]
}

@test "object lock: a browser POST upload gets the bucket's default retention (boto3 presigned POST, curl -F)" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3api create-bucket --bucket lockpost --object-lock-enabled-for-bucket >/dev/null
	aws2 s3api put-object-lock-configuration --bucket lockpost --object-lock-configuration \
		'{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"COMPLIANCE","Days":1}}}'
	run python3 - "$EP" "$ROOT/tls/ca.pem" "$BATS_FILE_TMPDIR/f" <<'EOF'
import subprocess, sys, boto3
ep, ca, f = sys.argv[1:4]
c = boto3.client("s3", endpoint_url=ep, verify=ca, region_name="us-east-1")
p = c.generate_presigned_post("lockpost", "post.txt", ExpiresIn=300)
args = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca]
for k, v in p["fields"].items():
    args += ["-F", "%s=%s" % (k, v)]
args += ["-F", "file=@" + f, p["url"]]
print(subprocess.run(args, capture_output=True, text=True).stdout)
EOF
	[ "$status" -eq 0 ]
	[ "$output" = 204 ]
	run aws2 s3api head-object --bucket lockpost --key post.txt --query ObjectLockMode --output text
	[ "$output" = COMPLIANCE ]
	vid=$(aws2 s3api head-object --bucket lockpost --key post.txt --query VersionId --output text)
	run aws2 s3api delete-object --bucket lockpost --key post.txt --version-id "$vid"
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api head-object --bucket lockpost --key post.txt --version-id "$vid"
	[ "$status" -eq 0 ]
}

@test "ACLs: a copy of an older version (CopyObject, UploadPartCopy) is decided by that version's ACL, not the current one's" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3api create-bucket --bucket aclver --object-ownership ObjectWriter >/dev/null
	aws2 s3api put-bucket-versioning --bucket aclver --versioning-configuration Status=Enabled
	printf 'old secret' >"$BATS_TEST_TMPDIR/v1"
	printf 'new shared' >"$BATS_TEST_TMPDIR/v2"
	v1=$(aws2 s3api put-object --bucket aclver --key doc --body "$BATS_TEST_TMPDIR/v1" --query VersionId --output text)
	v2=$(aws2 s3api put-object --bucket aclver --key doc --body "$BATS_TEST_TMPDIR/v2" \
		--grant-read "id=$OTHER" --query VersionId --output text)
	other s3api create-bucket --bucket otherdst >/dev/null
	run other s3api get-object --bucket aclver --key doc --version-id "$v1" "$BATS_TEST_TMPDIR/out"
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3api copy-object --bucket otherdst --key stolen --copy-source "aclver/doc?versionId=$v1"
	[[ "$output" == *"(AccessDenied)"* ]]
	up=$(other s3api create-multipart-upload --bucket otherdst --key stolen2 --query UploadId --output text)
	run other s3api upload-part-copy --bucket otherdst --key stolen2 --upload-id "$up" --part-number 1 \
		--copy-source "aclver/doc?versionId=$v1"
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3api head-object --bucket otherdst --key stolen
	[ "$status" -ne 0 ]
	# The version it was granted, named or current, is copied.
	run other s3api copy-object --bucket otherdst --key shared --copy-source "aclver/doc?versionId=$v2"
	[ "$status" -eq 0 ]
	run other s3api copy-object --bucket otherdst --key shared2 --copy-source "aclver/doc"
	[ "$status" -eq 0 ]
	run other s3 cp s3://otherdst/shared -
	[ "$output" = "new shared" ]
	other s3api abort-multipart-upload --bucket otherdst --key stolen2 --upload-id "$up"
}

@test "multipart: ListMultipartUploads names the account that began each upload, whoever lists" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3api create-bucket --bucket mpuinit >/dev/null
	policy mpuinit '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"'"$OTHER"'"},"Action":["s3:PutObject","s3:ListBucketMultipartUploads","s3:AbortMultipartUpload"],"Resource":["arn:aws:s3:::mpuinit","arn:aws:s3:::mpuinit/*"]}]}'
	theirs=$(other s3api create-multipart-upload --bucket mpuinit --key a --query UploadId --output text)
	mine=$(aws2 s3api create-multipart-upload --bucket mpuinit --key b --query UploadId --output text)
	run aws2 s3api list-multipart-uploads --bucket mpuinit --query 'Uploads[].[Key,Initiator.ID]' --output text
	[ "$output" = "a	$OTHER"$'\n'"b	$OWNER" ]
	run other s3api list-multipart-uploads --bucket mpuinit --query 'Uploads[].[Key,Initiator.ID]' --output text
	[ "$output" = "a	$OTHER"$'\n'"b	$OWNER" ]
	other s3api abort-multipart-upload --bucket mpuinit --key a --upload-id "$theirs"
	aws2 s3api abort-multipart-upload --bucket mpuinit --key b --upload-id "$mine"
}
