#!/usr/bin/env bats
# S3 access control through real clients: bucket policies, the public
# access block, object ownership and ACLs, anonymous requests (curl) and
# two accounts' aws v2 and boto3 clients against one node.

load ../bats/helpers

setup_file() {
	file_node
	second_account
	printf "public words" >"$BATS_FILE_TMPDIR/pub"
	printf "secret words" >"$BATS_FILE_TMPDIR/sec"
}

teardown_file() { stop_node; }

setup() {
	aws_env
	EP="https://127.0.0.1:$S3_PORT"
}

aws2() { awscli2 --endpoint-url "$EP" "$@"; }

@test "bucket policy: put, get, status, delete; a malformed one refused with its reason, nothing stored" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://pol >/dev/null
	run aws2 s3api get-bucket-policy --bucket pol
	[[ "$output" == *"(NoSuchBucketPolicy)"* ]]
	run aws2 s3api get-bucket-policy-status --bucket pol
	[[ "$output" == *"(NoSuchBucketPolicy)"* ]]
	p='{"Version":"2012-10-17","Statement":[{"Sid":"o","Effect":"Allow","Principal":{"AWS":"'$OTHER'"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::pol/*"}]}'
	run policy pol "$p"
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-policy --bucket pol --query Policy --output text
	[ "$output" = "$p" ]
	run aws2 s3api get-bucket-policy-status --bucket pol --query PolicyStatus.IsPublic --output text
	[ "$output" = False ]
	# Each refusal names what is wrong, and the stored policy stays.
	run policy pol '{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::elsewhere/*"}]}'
	[[ "$output" == *"(MalformedPolicy)"*"Policy has invalid resource"* ]]
	run policy pol '{"Statement":[{"Effect":"Allow","Principal":"*","Action":"ec2:RunInstances","Resource":"*"}]}'
	[[ "$output" == *"(MalformedPolicy)"*"Policy has invalid action"* ]]
	run policy pol '{"Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}'
	[[ "$output" == *"(MalformedPolicy)"*"Missing required field Principal"* ]]
	run policy pol '{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringSorta":{"s3:prefix":"a"}}}]}'
	[[ "$output" == *"(MalformedPolicy)"*"Invalid Condition type : StringSorta"* ]]
	run policy pol 'not json'
	[[ "$output" == *"(MalformedPolicy)"* ]]
	run aws2 s3api get-bucket-policy --bucket pol --query Policy --output text
	[ "$output" = "$p" ]
	# Another account can neither read nor replace it.
	run other s3api get-bucket-policy --bucket pol
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api delete-bucket-policy --bucket pol
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-policy --bucket pol
	[[ "$output" == *"(NoSuchBucketPolicy)"* ]]
	aws2 s3 rb s3://pol >/dev/null
}

@test "anonymous requests: allowed exactly where the policy allows, AccessDenied elsewhere" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://site >/dev/null
	aws2 s3 cp "$BATS_FILE_TMPDIR/pub" s3://site/public/index.html >/dev/null
	aws2 s3 cp "$BATS_FILE_TMPDIR/sec" s3://site/private/key >/dev/null
	# Without a policy, nothing: not the object, not the listing.
	run anon /site/public/index.html
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	# New buckets block public policies, as AWS's do.
	pub='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::site/public/*"}]}'
	run policy site "$pub"
	[[ "$output" == *"(AccessDenied)"*"BlockPublicPolicy"* ]]
	run aws2 s3api get-public-access-block --bucket site --output text
	[[ "$output" == *"True"*"True"*"True"*"True"* ]]
	run aws2 s3api delete-public-access-block --bucket site
	[ "$status" -eq 0 ]
	run aws2 s3api get-public-access-block --bucket site
	[[ "$output" == *"(NoSuchPublicAccessBlockConfiguration)"* ]]
	run policy site "$pub"
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-policy-status --bucket site --query PolicyStatus.IsPublic --output text
	[ "$output" = True ]
	run anon /site/public/index.html
	[ "$output" = $'public words\n200' ]
	run anon /site/public/index.html -I
	[[ "$output" == *"HTTP/1.1 200"* ]]
	# Only that action, only there.
	run anon /site/private/key
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	run anon "/site?list-type=2"
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	run anon /site/public/new -X PUT --data-binary @"$BATS_FILE_TMPDIR/pub"
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	run anon /site/public/index.html -X DELETE
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	run anon "/site?policy"
	[[ "$output" == *$'\n'403 ]]
	# No account, so no bucket list and no bucket of its own.
	run anon /
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	run anon /anonbucket -X PUT
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	run aws2 s3api head-bucket --bucket anonbucket
	[ "$status" -ne 0 ]
	run anon /nosuchbucket/k
	[[ "$output" == *"<Code>NoSuchBucket</Code>"*$'\n'404 ]]
	# RestrictPublicBuckets: the public statement counts for nobody but
	# the owner, however the policy reads.
	run aws2 s3api put-public-access-block --bucket site --public-access-block-configuration RestrictPublicBuckets=true
	[ "$status" -eq 0 ]
	run anon /site/public/index.html
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	run aws2 s3api get-public-access-block --bucket site --query PublicAccessBlockConfiguration.[BlockPublicAcls,RestrictPublicBuckets] --output text
	[ "$output" = $'False\tTrue' ]
	aws2 s3api put-public-access-block --bucket site --public-access-block-configuration BlockPublicPolicy=false
	run anon /site/public/index.html
	[ "$output" = $'public words\n200' ]
	aws2 s3 rb --force s3://site >/dev/null
}

@test "another account: allowed by the policy, a deny binds the owner too, DeleteObjects and copies decided key by key" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://shared >/dev/null
	aws2 s3 mb s3://closed >/dev/null
	aws2 s3 cp "$BATS_FILE_TMPDIR/sec" s3://shared/keep/a >/dev/null
	aws2 s3 cp "$BATS_FILE_TMPDIR/sec" s3://shared/b >/dev/null
	aws2 s3 cp "$BATS_FILE_TMPDIR/sec" s3://closed/c >/dev/null
	run other s3api get-object --bucket shared --key b "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(AccessDenied)"* ]]
	run policy shared '{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::'$OTHER':root"},"Action":["s3:GetObject","s3:PutObject","s3:ListBucket","s3:DeleteObject"],"Resource":["arn:aws:s3:::shared","arn:aws:s3:::shared/*"]},
	 {"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::shared/keep/*"}]}'
	[ "$status" -eq 0 ]
	run other s3api get-object --bucket shared --key b "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 0 ]
	cmp "$BATS_FILE_TMPDIR/sec" "$BATS_TEST_TMPDIR/o"
	run other s3 cp "$BATS_FILE_TMPDIR/pub" s3://shared/from-other
	[ "$status" -eq 0 ]
	run other s3 ls s3://shared/
	[[ "$output" == *"from-other"* ]]
	# Objects belong to the bucket owner (BucketOwnerEnforced).
	run aws2 s3api list-objects-v2 --bucket shared --fetch-owner --query "Contents[?Key=='from-other'].Owner.ID" --output text
	[ "$output" = "$OWNER" ]
	# Not granted: the bucket's configuration, and another bucket.
	run other s3api get-bucket-tagging --bucket shared
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3api delete-bucket --bucket shared
	[[ "$output" == *"(AccessDenied)"* ]]
	# A copy needs the source read: from a bucket it may not read, no.
	run other s3api copy-object --bucket shared --key stolen --copy-source closed/c
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api head-object --bucket shared --key stolen
	[ "$status" -ne 0 ]
	run other s3api copy-object --bucket shared --key copied --copy-source shared/b
	[ "$status" -eq 0 ]
	# The deny binds everyone, the owner included, one key at a time.
	run aws2 s3api delete-object --bucket shared --key keep/a
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api delete-objects --bucket shared --delete 'Objects=[{Key=keep/a},{Key=copied}]' --query '[Deleted[].Key, Errors[].[Key,Code]]' --output text
	[[ "$output" == *"copied"* && "$output" == *$'keep/a\tAccessDenied'* ]]
	run aws2 s3api head-object --bucket shared --key keep/a
	[ "$status" -eq 0 ]
	run other s3api delete-object --bucket shared --key from-other
	[ "$status" -eq 0 ]
	# The owner's root may still replace the policy that binds it.
	run policy shared '{"Statement":{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::shared","arn:aws:s3:::shared/*"]}}'
	[ "$status" -eq 0 ]
	run aws2 s3api list-objects-v2 --bucket shared
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api delete-bucket-policy --bucket shared
	[ "$status" -eq 0 ]
	aws2 s3 rb --force s3://shared >/dev/null
	aws2 s3 rb --force s3://closed >/dev/null
}

@test "conditions: source address, prefix and secure transport, through boto3" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	/usr/bin/python3 - "$AK" "$SK" "$OAK" "$OSK" "$OTHER" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import json, sys, boto3, botocore
ak, sk, oak, osk, other, ep, ca = sys.argv[1:]
mk = lambda a, s: boto3.client("s3", aws_access_key_id=a, aws_secret_access_key=s,
                               region_name="us-east-1", endpoint_url=ep, verify=ca)
me, them = mk(ak, sk), mk(oak, osk)
me.create_bucket(Bucket="cond")
for k in ("docs/a", "docs/b", "logs/c"):
    me.put_object(Bucket="cond", Key=k, Body=b"x")
def denied(f, **kw):
    try:
        f(**kw)
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "AccessDenied", e.response
        return
    raise AssertionError("allowed: %r" % (kw,))
arn = "arn:aws:iam::%s:root" % other
def put(statements):
    me.put_bucket_policy(Bucket="cond", Policy=json.dumps(
        {"Version": "2012-10-17", "Statement": statements}))
# Listing only under docs/, and only from loopback.
put([{"Effect": "Allow", "Principal": {"AWS": arn}, "Action": "s3:ListBucket",
      "Resource": "arn:aws:s3:::cond",
      "Condition": {"StringLike": {"s3:prefix": "docs/*"},
                    "IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}])
keys = [o["Key"] for o in them.list_objects_v2(Bucket="cond", Prefix="docs/")["Contents"]]
assert keys == ["docs/a", "docs/b"], keys
denied(them.list_objects_v2, Bucket="cond", Prefix="logs/")
denied(them.list_objects_v2, Bucket="cond")
put([{"Effect": "Allow", "Principal": {"AWS": arn}, "Action": "s3:ListBucket",
      "Resource": "arn:aws:s3:::cond",
      "Condition": {"NotIpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}])
denied(them.list_objects_v2, Bucket="cond", Prefix="docs/")
# Plain HTTP refused to all: this endpoint is HTTPS, so nothing changes.
put([{"Effect": "Allow", "Principal": {"AWS": arn}, "Action": "s3:GetObject",
      "Resource": "arn:aws:s3:::cond/*"},
     {"Effect": "Deny", "Principal": "*", "Action": "s3:*",
      "Resource": ["arn:aws:s3:::cond", "arn:aws:s3:::cond/*"],
      "Condition": {"Bool": {"aws:SecureTransport": "false"}}}])
assert them.get_object(Bucket="cond", Key="docs/a")["Body"].read() == b"x"
assert me.get_object(Bucket="cond", Key="docs/a")["Body"].read() == b"x"
# A deny for HTTPS does bind, the owner too.
put([{"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
      "Resource": "arn:aws:s3:::cond/*",
      "Condition": {"Bool": {"aws:SecureTransport": "true"}}}])
denied(me.get_object, Bucket="cond", Key="docs/a")
assert me.get_bucket_policy(Bucket="cond")["Policy"]
assert me.get_bucket_policy_status(Bucket="cond")["PolicyStatus"]["IsPublic"] is False
me.delete_bucket_policy(Bucket="cond")
for k in ("docs/a", "docs/b", "logs/c"):
    me.delete_object(Bucket="cond", Key=k)
me.delete_bucket(Bucket="cond")
PY
}

@test "object ownership and ACLs: BucketOwnerEnforced by default, ACLs refused as AWS refuses them, read as the owner's" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	aws2 s3 mb s3://owned >/dev/null
	run aws2 s3api get-bucket-ownership-controls --bucket owned --query 'OwnershipControls.Rules[0].ObjectOwnership' --output text
	[ "$output" = BucketOwnerEnforced ]
	run aws2 s3api put-object --bucket owned --key k --body "$BATS_FILE_TMPDIR/pub" --acl public-read
	[[ "$output" == *"(AccessControlListNotSupported)"* ]]
	run aws2 s3api put-object --bucket owned --key k --body "$BATS_FILE_TMPDIR/pub" --grant-read id=abc
	[[ "$output" == *"(AccessControlListNotSupported)"* ]]
	run aws2 s3api head-object --bucket owned --key k
	[ "$status" -ne 0 ]
	run aws2 s3api put-object --bucket owned --key k --body "$BATS_FILE_TMPDIR/pub" --acl bucket-owner-full-control
	[ "$status" -eq 0 ]
	run aws2 s3api create-multipart-upload --bucket owned --key m --acl public-read
	[[ "$output" == *"(AccessControlListNotSupported)"* ]]
	run aws2 s3api get-object-acl --bucket owned --key k --query 'Grants[0].[Grantee.ID,Permission]' --output text
	[ "$output" = "$OWNER"$'\tFULL_CONTROL' ]
	run aws2 s3api get-bucket-acl --bucket owned --query 'Owner.ID' --output text
	[ "$output" = "$OWNER" ]
	run aws2 s3api get-object-acl --bucket owned --key nothing
	[[ "$output" == *"(NoSuchKey)"* ]]
	run aws2 s3api put-bucket-acl --bucket owned --acl public-read
	[[ "$output" == *"(AccessControlListNotSupported)"* ]]
	run aws2 s3api put-object-acl --bucket owned --key k --acl public-read
	[[ "$output" == *"(AccessControlListNotSupported)"* ]]
	run other s3api get-bucket-acl --bucket owned
	[[ "$output" == *"(AccessDenied)"* ]]
	# Creation: a public ACL with enforcement is refused and makes nothing.
	run aws2 s3api create-bucket --bucket aclpub --acl public-read
	[[ "$output" == *"(InvalidBucketAclWithObjectOwnership)"* ]]
	run aws2 s3api head-bucket --bucket aclpub
	[ "$status" -ne 0 ]
	run aws2 s3api create-bucket --bucket writer --object-ownership ObjectWriter
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-ownership-controls --bucket writer --query 'OwnershipControls.Rules[0].ObjectOwnership' --output text
	[ "$output" = ObjectWriter ]
	run aws2 s3api put-bucket-ownership-controls --bucket writer --ownership-controls 'Rules=[{ObjectOwnership=BucketOwnerPreferred}]'
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-ownership-controls --bucket writer --query 'OwnershipControls.Rules[0].ObjectOwnership' --output text
	[ "$output" = BucketOwnerPreferred ]
	run aws2 s3api delete-bucket-ownership-controls --bucket writer
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-ownership-controls --bucket writer
	[[ "$output" == *"(OwnershipControlsNotFoundError)"* ]]
	run aws2 s3api put-bucket-ownership-controls --bucket writer --ownership-controls 'Rules=[{ObjectOwnership=Nobody}]'
	[[ "$output" == *"(MalformedXML)"* ]]
	run aws2 s3api create-bucket --bucket badown --object-ownership Nobody
	[[ "$output" == *"(InvalidArgument)"* ]]
	aws2 s3 rb --force s3://owned >/dev/null
	aws2 s3 rb s3://writer >/dev/null
}

@test "ACLs where ownership enables them: canned and granted, anonymous and another account, the public access block" {
	[ -x /usr/bin/aws ] || skip "Debian's awscli is not installed"
	AU=http://acs.amazonaws.com/groups/global/AllUsers
	aws2 s3api create-bucket --bucket acls --object-ownership ObjectWriter >/dev/null
	# New buckets block public ACLs, as AWS's do; creation too.
	run aws2 s3api put-bucket-acl --bucket acls --acl public-read
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api create-bucket --bucket aclpub2 --object-ownership ObjectWriter --acl public-read
	[[ "$output" == *"(InvalidBucketAclWithBlockPublicAccessError)"* ]]
	run aws2 s3api head-bucket --bucket aclpub2
	[ "$status" -ne 0 ]
	aws2 s3api delete-public-access-block --bucket acls
	run aws2 s3api put-bucket-acl --bucket acls --acl public-read
	[ "$status" -eq 0 ]
	run aws2 s3api get-bucket-acl --bucket acls --query 'Grants[].[Grantee.Type,Grantee.URI||Grantee.ID,Permission]' --output text
	[ "$output" = "CanonicalUser	$OWNER	FULL_CONTROL
Group	$AU	READ" ]
	aws2 s3api put-object --bucket acls --key open --body "$BATS_FILE_TMPDIR/pub" --acl public-read >/dev/null
	aws2 s3api put-object --bucket acls --key shut --body "$BATS_FILE_TMPDIR/sec" >/dev/null
	# Anonymous: what the ACLs grant, nothing else.
	run anon /acls/open
	[ "$output" = $'public words\n200' ]
	run anon /acls/shut
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	run anon "/acls?list-type=2"
	[[ "$output" == *"<Key>open</Key>"*"<Key>shut</Key>"*$'\n'200 ]]
	run anon /acls/new -X PUT --data-binary @"$BATS_FILE_TMPDIR/pub"
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	run anon "/acls?acl"
	[[ "$output" == *"<Code>AccessDenied</Code>"*$'\n'403 ]]
	# The ACL is not a header of the object.
	run anon /acls/open -I
	[[ "$output" != *x-spx* ]]
	# A copy gets its own ACL, never the source's.
	aws2 s3api copy-object --bucket acls --key copied --copy-source acls/open >/dev/null
	run anon /acls/copied
	[[ "$output" == *$'\n'403 ]]
	# Grants by header: the other account may write, and owns what it
	# writes; it reads its own object, not the owner's.
	run aws2 s3api put-bucket-acl --bucket acls --grant-write "id=$OTHER" \
		--grant-read "uri=\"$AU\", id=\"$OTHER\"" --grant-full-control "id=$OWNER"
	[ "$status" -eq 0 ]
	run other s3api put-object --bucket acls --key theirs --body "$BATS_FILE_TMPDIR/pub"
	[ "$status" -eq 0 ]
	run other s3api get-object --bucket acls --key theirs "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 0 ]
	run other s3api get-object --bucket acls --key shut "$BATS_TEST_TMPDIR/o"
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api get-object-acl --bucket acls --key theirs --query '[Owner.ID,Grants[0].Grantee.ID,Grants[0].Permission]' --output text
	[ "$output" = "$OTHER	$OTHER	FULL_CONTROL" ]
	run other s3api put-object-acl --bucket acls --key theirs --acl bucket-owner-read
	[ "$status" -eq 0 ]
	run aws2 s3api get-object-acl --bucket acls --key theirs --query 'Grants[1].[Grantee.ID,Permission]' --output text
	[ "$output" = "$OWNER	READ" ]
	run other s3api get-bucket-acl --bucket acls
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3api put-object-acl --bucket acls --key shut --acl public-read
	[[ "$output" == *"(AccessDenied)"* ]]
	run other s3api delete-object --bucket acls --key copied
	[ "$status" -eq 0 ]
	# Refusals, each changing nothing.
	run aws2 s3api put-bucket-acl --bucket acls --grant-read emailAddress=someone@example.com
	[[ "$output" == *"(UnresolvableGrantByEmailAddress)"* ]]
	run aws2 s3api put-bucket-acl --bucket acls --grant-read id=12
	[[ "$output" == *"(InvalidArgument)"* ]]
	run aws2 s3api put-bucket-acl --bucket acls --grant-read 'id="1'
	[[ "$output" == *"(InvalidArgument)"* ]]
	run aws2 s3api put-bucket-acl --bucket acls --acl public-read --grant-read "id=$OTHER"
	[[ "$output" == *"(InvalidRequest)"* ]]
	run aws2 s3api put-bucket-acl --bucket acls --acl everyone
	[[ "$output" == *"(InvalidArgument)"* ]]
	run aws2 s3api put-bucket-acl --bucket acls --access-control-policy \
		"{\"Owner\":{\"ID\":\"$OTHER\"},\"Grants\":[]}"
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api get-bucket-acl --bucket acls --query 'length(Grants)'
	[ "$output" = 4 ]
	# IgnorePublicAcls: the AllUsers grants count for nothing;
	# BlockPublicAcls: no new public ACL.
	aws2 s3api put-public-access-block --bucket acls --public-access-block-configuration IgnorePublicAcls=true
	run anon /acls/open
	[[ "$output" == *$'\n'403 ]]
	aws2 s3api put-public-access-block --bucket acls --public-access-block-configuration BlockPublicAcls=true
	run anon /acls/open
	[ "$output" = $'public words\n200' ]
	run aws2 s3api put-object-acl --bucket acls --key shut --acl public-read
	[[ "$output" == *"(AccessDenied)"* ]]
	run aws2 s3api put-object --bucket acls --key more --body "$BATS_FILE_TMPDIR/pub" --acl authenticated-read
	[[ "$output" == *"(AccessDenied)"* ]]
	aws2 s3api delete-public-access-block --bucket acls
	# An AccessControlPolicy body: an empty list takes every grant away,
	# and the owner still reads its object.
	run aws2 s3api put-object-acl --bucket acls --key open --access-control-policy '{"Grants":[]}'
	[ "$status" -eq 0 ]
	run anon /acls/open
	[[ "$output" == *$'\n'403 ]]
	run aws2 s3api get-object --bucket acls --key open "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 0 ]
	# public-read-write: anyone writes; the object is the bucket owner's.
	aws2 s3api put-bucket-acl --bucket acls --acl public-read-write
	run anon /acls/dropped -X PUT --data-binary @"$BATS_FILE_TMPDIR/pub"
	[[ "$output" == *$'\n'200 ]]
	run aws2 s3api get-object-acl --bucket acls --key dropped --query Owner.ID --output text
	[ "$output" = "$OWNER" ]
	# BucketOwnerPreferred: bucket-owner-full-control hands the object to
	# the bucket's owner.
	aws2 s3api put-bucket-ownership-controls --bucket acls --ownership-controls 'Rules=[{ObjectOwnership=BucketOwnerPreferred}]'
	other s3api put-object --bucket acls --key given --body "$BATS_FILE_TMPDIR/pub" --acl bucket-owner-full-control >/dev/null
	other s3api put-object --bucket acls --key kept --body "$BATS_FILE_TMPDIR/pub" >/dev/null
	run aws2 s3api get-object-acl --bucket acls --key given --query Owner.ID --output text
	[ "$output" = "$OWNER" ]
	run aws2 s3api get-object-acl --bucket acls --key kept --query Owner.ID --output text
	[ "$output" = "$OTHER" ]
	# Enforcement again: the ACLs count for nothing, objects stay.
	aws2 s3api put-bucket-ownership-controls --bucket acls --ownership-controls 'Rules=[{ObjectOwnership=BucketOwnerEnforced}]'
	run anon /acls/dropped
	[[ "$output" == *$'\n'403 ]]
	aws2 s3 rb --force s3://acls >/dev/null
}

@test "ACLs through boto3: an AccessControlPolicy put and read back, a versioned object's ACL by version" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	/usr/bin/python3 - "$AK" "$SK" "$OAK" "$OSK" "$OTHER" "$OWNER" "$EP" "$ROOT/tls/ca.pem" <<'PY'
import sys, boto3, botocore
ak, sk, oak, osk, other, owner, ep, ca = sys.argv[1:]
mk = lambda a, s: boto3.client("s3", aws_access_key_id=a, aws_secret_access_key=s,
                               region_name="us-east-1", endpoint_url=ep, verify=ca)
me, them = mk(ak, sk), mk(oak, osk)
me.create_bucket(Bucket="aclv", ObjectOwnership="ObjectWriter")
me.put_bucket_versioning(Bucket="aclv", VersioningConfiguration={"Status": "Enabled"})
v1 = me.put_object(Bucket="aclv", Key="k", Body=b"one")["VersionId"]
v2 = me.put_object(Bucket="aclv", Key="k", Body=b"two")["VersionId"]
me.put_object_acl(Bucket="aclv", Key="k", VersionId=v1, AccessControlPolicy={
    "Owner": {"ID": owner},
    "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": other}, "Permission": "READ"},
               {"Grantee": {"Type": "CanonicalUser", "ID": owner}, "Permission": "FULL_CONTROL"}]})
g = me.get_object_acl(Bucket="aclv", Key="k", VersionId=v1)
assert g["Owner"]["ID"] == owner, g
assert [(x["Grantee"]["ID"], x["Permission"]) for x in g["Grants"]] == \
    [(other, "READ"), (owner, "FULL_CONTROL")], g["Grants"]
assert len(me.get_object_acl(Bucket="aclv", Key="k")["Grants"]) == 1
# The grant is on that version only.
assert them.get_object(Bucket="aclv", Key="k", VersionId=v1)["Body"].read() == b"one"
try:
    them.get_object(Bucket="aclv", Key="k")
    raise AssertionError("the current version was readable")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "AccessDenied", e.response
try:
    me.put_bucket_acl(Bucket="aclv", AccessControlPolicy={"Owner": {"ID": owner}, "Grants": [
        {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/Everybody"},
         "Permission": "READ"}]})
    raise AssertionError("an unknown group was taken")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidArgument", e.response
me.put_bucket_acl(Bucket="aclv", GrantRead="id=" + other)
assert [o["Key"] for o in them.list_object_versions(Bucket="aclv").get("Versions", [])] == ["k", "k"]
for v in (v1, v2):
    me.delete_object(Bucket="aclv", Key="k", VersionId=v)
me.delete_bucket(Bucket="aclv")
PY
}
