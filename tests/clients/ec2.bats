#!/usr/bin/env bats
# The model-driven EC2 Query layer through real clients: aws CLI v2
# (/usr/bin/aws), boto3 (Debian's, /usr/bin/python3 ec2_boto3.py) and the
# npm SDK v3 (ec2-sdk-v3.mjs): key pairs, instance types, tags, launch
# templates, paging and every error the layer answers.

load ../bats/helpers

setup_file() { file_node; }

teardown_file() { stop_node; }

setup() { aws_env; }

av2() { awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" "$@"; }
need_v2() { [ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"; }
boto() {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	run /usr/bin/python3 "$SPX_TOP/tests/clients/ec2_boto3.py" "https://127.0.0.1:$EC2_PORT" "$ROOT/tls/ca.pem" "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == "ok $1 "* ]]
}
sdk3() {
	[ -d "$SPX_TOP/tests/clients/node_modules/@aws-sdk/client-ec2" ] || skip "npm SDK v3 not installed (scripts/deps.sh)"
	run env NODE_EXTRA_CA_CERTS="$ROOT/tls/ca.pem" AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK" \
		AWS_REGION=us-east-1 AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
		node "$SPX_TOP/tests/clients/ec2-sdk-v3.mjs" "https://127.0.0.1:$EC2_PORT" "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "ok $1" ]
}
# A field of a JSON document: json FIELD.PATH DOC
json() { python3 -c 'import json,sys; v=json.loads(sys.argv[2])
for k in sys.argv[1].split("."): v=v[int(k)] if k.isdigit() else v[k]
print(v)' "$1" "$2"; }
rname() { echo "$1-$RANDOM$RANDOM"; }

# ---- aws CLI v2 ------------------------------------------------------

@test "aws v2: create-key-pair rsa pem and ed25519 ppk, describe, delete" {
	need_v2
	n1=$(rname rsa) n2=$(rname ed)
	run av2 ec2 create-key-pair --key-name "$n1" --tag-specifications "ResourceType=key-pair,Tags=[{Key=env,Value=$n1}]" --output json
	[ "$status" -eq 0 ]
	k1=$output
	[[ "$(json KeyMaterial "$k1")" == "-----BEGIN RSA PRIVATE KEY-----"* ]]
	fp=$(json KeyMaterial "$k1" | openssl pkcs8 -topk8 -nocrypt -outform DER | openssl sha1 -c | awk '{print $NF}')
	[ "$(json KeyFingerprint "$k1")" = "$fp" ]
	[ "$(json Tags.0.Value "$k1")" = "$n1" ]
	run av2 ec2 create-key-pair --key-name "$n2" --key-type ed25519 --key-format ppk --query KeyMaterial --output text
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "PuTTY-User-Key-File-2: ssh-ed25519" ]]
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/k.ppk"
	run puttygen "$BATS_TEST_TMPDIR/k.ppk" -O public-openssh
	[ "$status" -eq 0 ]
	pub=$(echo "$output" | cut -d' ' -f1,2)
	run av2 ec2 describe-key-pairs --key-names "$n2" --include-public-key --query 'KeyPairs[0].[KeyType,PublicKey]' --output text
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | cut -f1)" = ed25519 ]
	[ "$(echo "$output" | cut -f2 | cut -d' ' -f1,2)" = "$pub" ]
	run av2 ec2 describe-key-pairs --filters "Name=tag:env,Values=$n1" --query 'KeyPairs[].KeyName' --output text
	[ "$output" = "$n1" ]
	run av2 ec2 describe-key-pairs --filters "Name=key-name,Values=${n2%%-*}-*" Name=key-type,Values=ed25519 --query 'KeyPairs[].KeyName' --output text
	[[ " $output " == *" $n2 "* || "$output" == *"$n2"* ]]
	[[ "$output" != *"$n1"* ]]
	id2=$(av2 ec2 describe-key-pairs --key-names "$n2" --query 'KeyPairs[0].KeyPairId' --output text)
	run av2 ec2 delete-key-pair --key-pair-id "$id2"
	[ "$status" -eq 0 ]
	run av2 ec2 delete-key-pair --key-name "$n1"
	[ "$status" -eq 0 ]
	run av2 ec2 describe-key-pairs --key-names "$n1"
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidKeyPair.NotFound) when calling the DescribeKeyPairs operation"*": The key pair '$n1' does not exist" ]]
}

@test "aws v2: import-key-pair gives the fingerprints AWS computes; InvalidKey.Format" {
	need_v2
	for t in rsa ed25519; do
		ssh-keygen -q -t $t -N '' -f "$BATS_TEST_TMPDIR/id_$t"
		if [ $t = rsa ]; then
			want=$(ssh-keygen -e -m PKCS8 -f "$BATS_TEST_TMPDIR/id_$t.pub" | openssl pkey -pubin -outform DER | openssl md5 -c | awk '{print $NF}')
		else
			want=$(ssh-keygen -l -E sha256 -f "$BATS_TEST_TMPDIR/id_$t.pub" | awk '{print $2}' | sed 's/^SHA256://')=
		fi
		n=$(rname imp)
		run av2 ec2 import-key-pair --key-name "$n" --public-key-material "fileb://$BATS_TEST_TMPDIR/id_$t.pub" --query KeyFingerprint --output text
		[ "$status" -eq 0 ]
		[ "$output" = "$want" ]
		run av2 ec2 import-key-pair --key-name "$n" --public-key-material "fileb://$BATS_TEST_TMPDIR/id_$t.pub"
		[ "$status" -eq 254 ]
		[[ "$output" == *"(InvalidKeyPair.Duplicate)"*": The keypair '$n' already exists." ]]
		av2 ec2 delete-key-pair --key-name "$n"
	done
	echo "ssh-dss AAAAB3NzaC1kc3MAAACBAP= me" >"$BATS_TEST_TMPDIR/bad.pub"
	run av2 ec2 import-key-pair --key-name "$(rname bad)" --public-key-material "fileb://$BATS_TEST_TMPDIR/bad.pub"
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidKey.Format)"*": Key is not in valid OpenSSH public key format" ]]
}

@test "aws v2: describe-instance-types and describe-instance-type-offerings, with filters and paging" {
	need_v2
	run av2 ec2 describe-instance-types --instance-types t3.micro m8i.large --query 'InstanceTypes[].[InstanceType,VCpuInfo.DefaultVCpus,MemoryInfo.SizeInMiB]' --output text
	[ "$status" -eq 0 ]
	[[ "$output" == *"t3.micro	2	1024"* ]]
	[[ "$output" == *"m8i.large	2	8192"* ]]
	run av2 ec2 describe-instance-types --filters Name=vcpu-info.default-vcpus,Values=2 Name=instance-type,Values='c8i.*' --query 'InstanceTypes[].InstanceType' --output text
	[ "$status" -eq 0 ]
	[ "$output" = c8i.large ]
	run av2 ec2 describe-instance-types --filters Name=current-generation,Values=true Name=processor-info.supported-architecture,Values=x86_64 Name=memory-info.size-in-mib,Values=1024 --query 'InstanceTypes[].InstanceType' --output text
	[ "$status" -eq 0 ]
	[[ "$output" == *t3.micro* ]]
	# The CLI pages with --page-size; every type comes back once.
	run av2 ec2 describe-instance-types --page-size 5 --query 'InstanceTypes[].InstanceType' --output text
	[ "$status" -eq 0 ]
	all=$(printf '%s\n' $output | sort)
	[ "$(echo "$all" | uniq | wc -l)" = "$(echo "$all" | wc -l)" ]
	[ "$(echo "$all" | wc -l)" -gt 20 ]
	for l in region:us-east-1 availability-zone:us-east-1a availability-zone-id:use1-az1; do
		run av2 ec2 describe-instance-type-offerings --location-type "${l%%:*}" --filters Name=instance-type,Values=g6.xlarge --query 'InstanceTypeOfferings[].[InstanceType,LocationType,Location]' --output text
		[ "$status" -eq 0 ]
		[ "$output" = "g6.xlarge	${l%%:*}	${l#*:}" ]
	done
	run av2 ec2 describe-instance-types --instance-types t3.nosuch
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidInstanceType)"* ]]
}

@test "aws v2: tags across resource types; DescribeTags paging and a token reused with other filters" {
	need_v2
	n=$(rname tg)
	kid=$(av2 ec2 create-key-pair --key-name "$n" --key-type ed25519 --query KeyPairId --output text)
	lid=$(av2 ec2 create-launch-template --launch-template-name "$n" --launch-template-data '{"ImageId":"ami-1"}' --query LaunchTemplate.LaunchTemplateId --output text)
	run av2 ec2 create-tags --resources "$kid" "$lid" --tags Key=a,Value=1 Key=b,Value=2 Key=c Key=d,Value=4 Key=e,Value=5 Key=f,Value=6
	[ "$status" -eq 0 ]
	run av2 ec2 describe-tags --filters "Name=resource-id,Values=$kid,$lid" Name=resource-type,Values=launch-template --query 'Tags[].[Key,Value]' --output text
	[ "$(echo "$output" | wc -l)" = 6 ]
	[[ "$output" == *"c	"* ]]
	# 12 tags, 5 a page: three pages through the raw NextToken.
	run av2 ec2 describe-tags --no-paginate --max-results 5 --filters "Name=resource-id,Values=$kid,$lid" --output json
	[ "$status" -eq 0 ]
	tok=$(json NextToken "$output")
	[ -n "$tok" ]
	run av2 ec2 describe-tags --no-paginate --max-results 5 --next-token "$tok" --filters "Name=resource-id,Values=$kid,$lid" --output json
	[ "$status" -eq 0 ]
	[ "$(json Tags.0.Key "$output")" = f ]
	run av2 ec2 describe-tags --no-paginate --max-results 5 --next-token "$tok" --filters "Name=resource-id,Values=$kid" --output json
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidParameterValue) when calling the DescribeTags operation"*": Value ( $tok ) for parameter NextToken is invalid. The token is invalid." ]]
	run av2 ec2 describe-tags --page-size 5 --filters "Name=resource-id,Values=$kid,$lid" --query 'Tags[].Key' --output text
	[ "$(echo $output | wc -w)" = 12 ]
	run av2 ec2 delete-tags --resources "$kid" --tags Key=a Key=b,Value=nope
	run av2 ec2 describe-tags --filters "Name=resource-id,Values=$kid" Name=key,Values=a,b --query 'Tags[].Key' --output text
	[ "$output" = b ]
	run av2 ec2 create-tags --resources "$kid" --tags Key=aws:x,Value=1
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidParameterValue)"*"Tag keys starting with 'aws:' are reserved for internal use" ]]
	# Instances are taggable: an unknown one is not found; an id of no
	# type at all is InvalidID.
	run av2 ec2 create-tags --resources "i-0123456789abcdef0" --tags Key=a,Value=1
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidInstanceID.NotFound)"* ]]
	run av2 ec2 create-tags --resources "zz-0123456789abcdef0" --tags Key=a,Value=1
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidID)"* ]]
	av2 ec2 delete-key-pair --key-name "$n"
	av2 ec2 delete-launch-template --launch-template-name "$n" >/dev/null
}

@test "aws v2: launch templates: ClientToken idempotency and IdempotentParameterMismatch" {
	need_v2
	n=$(rname lt) tok=$(rname tok)
	run av2 ec2 create-launch-template --launch-template-name "$n" --client-token "$tok" --launch-template-data '{"ImageId":"ami-1","InstanceType":"c8i.large"}' --query LaunchTemplate.LaunchTemplateId --output text
	[ "$status" -eq 0 ]
	id=$output
	run av2 ec2 create-launch-template --launch-template-name "$n" --client-token "$tok" --launch-template-data '{"ImageId":"ami-1","InstanceType":"c8i.large"}' --query LaunchTemplate.LaunchTemplateId --output text
	[ "$status" -eq 0 ]
	[ "$output" = "$id" ]
	run av2 ec2 create-launch-template --launch-template-name "$n" --client-token "$tok" --launch-template-data '{"ImageId":"ami-2"}'
	[ "$status" -eq 254 ]
	[[ "$output" == *"(IdempotentParameterMismatch) when calling the CreateLaunchTemplate operation"* ]]
	run av2 ec2 create-launch-template --launch-template-name "$n" --launch-template-data '{"ImageId":"ami-2"}'
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidLaunchTemplateName.AlreadyExistsException)"* ]]
	run av2 ec2 describe-launch-templates --launch-template-names "$n" --query 'LaunchTemplates[].LaunchTemplateId' --output text
	[ "$output" = "$id" ]
	run av2 ec2 delete-launch-template --launch-template-id "$id" --query LaunchTemplate.LaunchTemplateName --output text
	[ "$status" -eq 0 ]
	[ "$output" = "$n" ]
}

@test "aws v2: errors: InvalidParameterValue, InvalidParameterCombination, DryRunOperation, NotFound, Duplicate" {
	need_v2
	n=$(rname err)
	run av2 ec2 create-key-pair --key-name "$n" --key-type dsa
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidParameterValue) when calling the CreateKeyPair operation"*": Value (dsa) for parameter keyType is invalid. Valid values are: rsa, ed25519" ]]
	run av2 ec2 create-launch-template --launch-template-name "$n" --launch-template-data '{"InstanceType":"t3.micro","InstanceRequirements":{"VCpuCount":{"Min":1},"MemoryMiB":{"Min":512}}}'
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidParameterCombination)"*": The parameter instanceRequirements cannot be used with the parameter instanceType" ]]
	run av2 ec2 create-key-pair --key-name "$n" --dry-run
	[ "$status" -eq 254 ]
	[[ "$output" == *"(DryRunOperation) when calling the CreateKeyPair operation"*": Request would have succeeded, but DryRun flag is set." ]]
	run av2 ec2 describe-key-pairs --key-names "$n"
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidKeyPair.NotFound)"* ]]
	run av2 ec2 create-key-pair --key-name "$n" --key-type ed25519 --query KeyName --output text
	[ "$status" -eq 0 ]
	run av2 ec2 create-key-pair --key-name "$n"
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidKeyPair.Duplicate)"*": The keypair '$n' already exists." ]]
	run av2 ec2 describe-account-attributes --attribute-names max-instances --query 'AccountAttributes[0].AttributeValues[0].AttributeValue' --output text
	[ "$output" = 20 ]
	run av2 ec2 describe-account-attributes --attribute-names colour
	[ "$status" -eq 254 ]
	[[ "$output" == *"(InvalidParameterValue)"*": Value (colour) for parameter attributeName is invalid. Unknown attribute." ]]
	av2 ec2 delete-key-pair --key-name "$n"
}

@test "raw requests: MissingParameter, UnknownParameter, bad indexes" {
	req() { python3 "$SPX_TOP/tests/clients/sigv4req.py" --ca "$ROOT/tls/ca.pem" "https://127.0.0.1:$EC2_PORT/" \
		--method POST --key "$AK" --secret "$SK" --header 'Content-Type: application/x-www-form-urlencoded' --body "$1"; }
	run req "Action=CreateKeyPair&Version=2016-11-15"
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>MissingParameter</Code><Message>The request must contain the parameter KeyName</Message>"* ]]
	run req "Action=DescribeKeyPairs&Version=2016-11-15&KeyNames.1=a"
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>UnknownParameter</Code><Message>The parameter KeyNames.1 is not recognized</Message>"* ]]
	for k in KeyName.0 KeyName.01 KeyName.x KeyName.1.2 Filter.1.Value.99999999999; do
		run req "Action=DescribeKeyPairs&Version=2016-11-15&$k=a"
		[ "${lines[0]}" = 400 ]
		[[ "$output" == *"<Code>UnknownParameter</Code><Message>The parameter $k is not recognized</Message>"* ]]
	done
	run req "Action=DescribeInstanceTypes&Version=2016-11-15&MaxResults=abc"
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>InvalidParameterValue</Code><Message>Value (abc) for parameter maxResults is invalid. It is not a valid integer.</Message>"* ]]
	run req "Action=DescribeKeyPairs&Version=2016-11-15&DryRun=maybe"
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>InvalidParameterValue</Code>"* ]]
	# The gateway still answers.
	run req "Action=DescribeRegions&Version=2016-11-15"
	[ "${lines[0]}" = 200 ]
}

# ---- boto3 (Debian's python3-boto3) -------------------------------------

@test "boto3: key pairs (rsa, ed25519, pem, ppk), describe filters, delete" { boto keypairs; }
@test "boto3: import-key-pair fingerprints, Duplicate, InvalidKey.Format" { boto import; }
@test "boto3: tags across resource types, DeleteTags rules, TagLimitExceeded, InvalidID" { boto tags; }
@test "boto3: DescribeTags paging, paginator, a token reused with other filters" { boto paging; }
@test "boto3: launch templates, ClientToken, IdempotentParameterMismatch, InvalidParameterCombination" { boto templates; }
@test "boto3: MissingParameter, UnknownParameter, InvalidParameterValue, DryRunOperation" { boto errors; }
@test "boto3: instance types and offerings, filters, paging" { boto itypes; }

# ---- npm SDK v3 ---------------------------------------------------------

@test "SDK v3: key pairs (rsa pem, ed25519 ppk), describe filters, delete" { sdk3 keypairs; }
@test "SDK v3: import-key-pair fingerprints, Duplicate, InvalidKey.Format" { sdk3 import; }
@test "SDK v3: tags across resource types, TagLimitExceeded, InvalidID" { sdk3 tags; }
@test "SDK v3: DescribeTags paging, paginator, a token reused with other filters" { sdk3 paging; }
@test "SDK v3: launch templates, ClientToken, IdempotentParameterMismatch, InvalidParameterCombination" { sdk3 templates; }
@test "SDK v3: MissingParameter, UnknownParameter, InvalidParameterValue, DryRunOperation" { sdk3 errors; }
@test "SDK v3: instance types and offerings, filters, paging" { sdk3 itypes; }
