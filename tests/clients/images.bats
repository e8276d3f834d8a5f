#!/usr/bin/env bats
# AMIs through real clients (aws CLI v2 at /usr/bin/aws; boto3 from
# Debian's python3-boto3 with its image_available waiter; the npm SDK v3):
# `spx admin images import` of the test image (scripts/mkimage.sh), an
# image registered from a snapshot made through the EBS API, filters and
# paging, attributes, tags, deregistration, the snapshot an image keeps
# (InvalidSnapshot.InUse), another account, hostile names, and a
# DeleteSnapshot racing RegisterImage.

load ../bats/helpers

setup_file() {
	export ROOT EC2_PORT S3_PORT IMG
	make_node
	start_node
	IMG="$BATS_FILE_TMPDIR/test.img"
	"$SPX_TOP/scripts/mkimage.sh" "$IMG" >"$BATS_FILE_TMPDIR/mkimage.out" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/mkimage.out" >&2
		return 1
	}
}

teardown_file() {
	if [ -d "$ROOT/data/obj/d0.away" ]; then
		rm -rf "$ROOT/data/obj/d0"
		mv "$ROOT/data/obj/d0.away" "$ROOT/data/obj/d0"
	fi
	if [ -s "$BATS_FILE_TMPDIR/vol" ]; then
		aws_env
		awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" ec2 delete-volume \
			--volume-id "$(cat "$BATS_FILE_TMPDIR/vol")" >/dev/null || true
	fi
	stop_node
}

setup() {
	aws_env
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
}

av2() { awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" "$@"; }
admin_images() { spx admin images "$1" --root "$ROOT" "${@:2}"; }
fails_with() { # CODE
	[ "$status" -eq 254 ] || { echo "status $status: $output"; return 1; }
	[[ "$output" == *"($1) when calling"* ]] || { echo "$output"; return 1; }
}
py() { /usr/bin/python3 -c "$@"; }
sstate() { av2 ec2 describe-snapshots --snapshot-ids "$1" --query 'Snapshots[0].State' --output text 2>/dev/null; }
vstate() { av2 ec2 describe-volumes --volume-ids "$1" --query 'Volumes[0].State' --output text 2>/dev/null; }
completed() { agent_done "$1" && [ "$(sstate "$1")" = completed ]; }
available() { agent_done "$1" && [ "$(vstate "$1")" = available ]; }
# snapshot: a new completed snapshot of the file's 1 GiB volume (made
# once, deleted in teardown_file).
snapshot() {
	local v s
	if [ ! -s "$BATS_FILE_TMPDIR/vol" ]; then
		v=$(av2 ec2 create-volume --availability-zone us-east-1a --size 1 --query VolumeId --output text) || return 1
		wait_for 30 available "$v" || return 1
		echo "$v" >"$BATS_FILE_TMPDIR/vol"
	fi
	v=$(cat "$BATS_FILE_TMPDIR/vol")
	s=$(av2 ec2 create-snapshot --volume-id "$v" --query SnapshotId --output text) || return 1
	wait_for 60 completed "$s" || return 1
	echo "$s"
}
register() { # NAME SNAP [ARGS...]
	av2 ec2 register-image --name "$1" --root-device-name /dev/xvda \
		--block-device-mappings "DeviceName=/dev/xvda,Ebs={SnapshotId=$2}" "${@:3}" \
		--query ImageId --output text
}
vols() { spx-vol ls --root "$ROOT" --json | py 'import json,sys; print(len(json.load(sys.stdin)))'; }
snap_records() { find "$ROOT/state" -path '*snapshots*' -type f | wc -l; }

# other: the aws CLI as a second account, made once.
other() {
	if [ ! -f "$BATS_FILE_TMPDIR/other" ]; then
		spx admin account create --root "$ROOT" --name img-other --json |
			py 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"], a["AccountId"])' \
				>"$BATS_FILE_TMPDIR/other"
	fi
	read -r oak osk _ <"$BATS_FILE_TMPDIR/other"
	(
		unset AWS_PROFILE
		AWS_ACCESS_KEY_ID="$oak" AWS_SECRET_ACCESS_KEY="$osk" \
			awscli2 --ca-bundle "$ROOT/tls/ca.pem" --region us-east-1 \
			--endpoint-url "https://127.0.0.1:$EC2_PORT" "$@"
	)
}

@test "admin images import: the test image is an available AMI with its snapshot, size and SHA-256; a duplicate name or a failure leaves nothing" {
	before=$(snap_records)
	admin_images import "$IMG" --name "spx test image" --description "mkimage.sh" --json \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
	cat "$BATS_TEST_TMPDIR/err"
	# The tools it ran, in order, on stderr; stdout is the image alone.
	[ "$(grep -c '^spx: run: spx-vol \(import\|snapshot\|rm\) ' "$BATS_TEST_TMPDIR/err")" = 3 ]
	ami=$(py 'import json,sys; print(json.load(open(sys.argv[1]))["ImageId"])' "$BATS_TEST_TMPDIR/out")
	[[ "$ami" =~ ^ami-[0-9a-f]{17}$ ]]
	echo "$ami" >"$BATS_FILE_TMPDIR/ami"
	[ "$(vols)" = 0 ]	# the temporary volume is gone
	run av2 ec2 describe-images --owners self --image-ids "$ami" --output json
	[ "$status" -eq 0 ]
	sha=$(sha256sum "$IMG" | cut -d' ' -f1)
	py 'import json,sys
i=json.loads(sys.argv[1])["Images"][0]
assert i["State"]=="available" and i["Name"]=="spx test image", i
assert i["Description"]=="mkimage.sh" and i["Architecture"]=="x86_64", i
assert i["RootDeviceName"]=="/dev/xvda" and i["RootDeviceType"]=="ebs", i
assert i["BootMode"]=="legacy-bios" and i["VirtualizationType"]=="hvm", i
assert i["ImageType"]=="machine" and i["Public"] is False and i["EnaSupport"] is True, i
e=i["BlockDeviceMappings"][0]["Ebs"]
assert i["BlockDeviceMappings"][0]["DeviceName"]=="/dev/xvda", i
assert e["SnapshotId"].startswith("snap-") and e["VolumeSize"]==1 and e["DeleteOnTermination"] is True, e
assert {"Key":"spx:sha256","Value":sys.argv[2]} in i["Tags"], i
print(e["SnapshotId"])' "$output" "$sha" >"$BATS_FILE_TMPDIR/ami-snap"
	s=$(cat "$BATS_FILE_TMPDIR/ami-snap")
	[ "$(sstate "$s")" = completed ]
	[ "$(snap_records)" -eq $((before + 1)) ]
	run admin_images ls --json
	[ "$status" -eq 0 ]
	[[ "$output" == *"$sha"* ]]

	# A name taken: refused before any work.
	run admin_images import "$IMG" --name "spx test image"
	[ "$status" -eq 1 ]
	[[ "$output" == *"has an image named 'spx test image' ($ami)"* ]]
	[[ "$output" != *"spx-vol import"* ]]
	# Bad arguments.
	run admin_images import "$IMG" --name ".."
	[ "$status" -eq 100 ]
	run admin_images import "$IMG" --name "ok name" --boot-mode efi
	[ "$status" -eq 100 ]
	run admin_images import "$BATS_FILE_TMPDIR/absent.img" --name "absent"
	[ "$status" -eq 1 ]
	# Not an image: spx-vol import refuses, nothing is left.
	printf 'QFI\xfb\0\0\0\x09' >"$BATS_TEST_TMPDIR/bad.qcow2"
	run admin_images import "$BATS_TEST_TMPDIR/bad.qcow2" --name "bad qcow2"
	[ "$status" -eq 100 ]
	# The object store away: the snapshot fails, the volume and the
	# snapshot go, no image is registered.
	mv "$ROOT/data/obj/d0" "$ROOT/data/obj/d0.away"
	touch "$ROOT/data/obj/d0"
	run admin_images import "$IMG" --name "no store" --boot-mode uefi
	rm -f "$ROOT/data/obj/d0"
	mv "$ROOT/data/obj/d0.away" "$ROOT/data/obj/d0"
	echo "$output"
	[ "$status" -eq 111 ]
	[[ "$output" == *"spx-vol snapshot failed"* ]]
	[ "$(vols)" = 0 ]
	[ "$(snap_records)" -eq $((before + 1)) ]
	run av2 ec2 describe-images --owners self --filters Name=name,Values="no store" --query 'length(Images)'
	[ "$output" = 0 ]
	# uefi, once the store is back.
	u=$(admin_images import "$IMG" --name "uefi image" --boot-mode uefi 2>/dev/null)
	run av2 ec2 describe-image-attribute --image-id "$u" --attribute bootMode --query BootMode.Value --output text
	[ "$output" = uefi ]
	run admin_images rm "$u" --delete-snapshot
	[ "$status" -eq 0 ]
	run admin_images rm "$u"
	[ "$status" -eq 1 ]
}

@test "register-image from an EBS snapshot: filters, paging, attributes, tags; the snapshot is in use until deregister-image" {
	s=$(snapshot)
	a1=$(register "web-1 (x86_64)" "$s" --description "first")
	a2=$(register "web-2 [test]" "$s" --architecture x86_64 --boot-mode uefi)
	a3=$(av2 ec2 register-image --name "db-1" \
		--block-device-mappings "DeviceName=/dev/xvda,Ebs={SnapshotId=$s,VolumeSize=4,VolumeType=gp3,DeleteOnTermination=false}" \
		"DeviceName=/dev/xvdb,Ebs={VolumeSize=2}" --query ImageId --output text)
	for a in "$a1" "$a2" "$a3"; do [[ "$a" =~ ^ami-[0-9a-f]{17}$ ]]; done
	av2 ec2 create-tags --resources "$a1" "$a2" --tags Key=role,Value=web
	q() { av2 ec2 describe-images --owners self "$@" --query 'sort(Images[].Name)' --output text; }
	[ "$(q --filters 'Name=name,Values=web-?*')" = "web-1 (x86_64)	web-2 [test]" ]
	[ "$(q --filters '[{"Name": "name", "Values": ["*[test]"]}]')" = "web-2 [test]" ]
	[ "$(q --filters Name=tag:role,Values=web Name=boot-mode,Values=uefi)" = "web-2 [test]" ]
	[ "$(q --filters Name=tag-key,Values=role)" = "web-1 (x86_64)	web-2 [test]" ]
	[ "$(q --filters Name=block-device-mapping.snapshot-id,Values=$s Name=block-device-mapping.volume-size,Values=4)" = "db-1" ]
	[ "$(q --filters Name=state,Values=available Name=architecture,Values=x86_64 Name=root-device-type,Values=ebs Name=image-id,Values=$a1,$a3)" = "db-1	web-1 (x86_64)" ]
	me=$(av2 sts get-caller-identity --query Account --output text)
	[ "$(q --owners "$me" --filters Name=owner-id,Values=$me Name=name,Values=db-1)" = "db-1" ]
	[ "$(q --executable-users self --filters Name=name,Values=db-1)" = "db-1" ]
	[ "$(av2 ec2 describe-images --owners amazon --query 'length(Images)')" = 0 ]
	run av2 ec2 describe-images --filters Name=flavour,Values=x
	fails_with InvalidParameterValue
	# Paging: two a page, each image once.
	run av2 ec2 describe-images --owners self --max-results 2 --no-paginate --output json
	[ "$status" -eq 0 ]
	tok=$(py 'import json,sys; d=json.loads(sys.argv[1]); assert len(d["Images"])==2, d; print(d["NextToken"])' "$output")
	run av2 ec2 describe-images --owners self --max-results 2 --next-token "$tok" --no-paginate --query 'Images[].ImageId' --output text
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	n=$(av2 ec2 describe-images --owners self --query 'length(Images)')
	[ "$(av2 ec2 describe-images --owners self --page-size 1 --query 'length(Images)')" = "$n" ]
	run av2 ec2 describe-images --image-ids "$a1" --max-results 5
	fails_with InvalidParameterCombination
	# Attributes.
	[ "$(av2 ec2 describe-image-attribute --image-id "$a1" --attribute description --query Description.Value --output text)" = first ]
	[ "$(av2 ec2 describe-image-attribute --image-id "$a1" --attribute launchPermission --query 'length(LaunchPermissions)')" = 0 ]
	run av2 ec2 describe-image-attribute --image-id "$a3" --attribute blockDeviceMapping --output json
	py 'import json,sys
m=json.loads(sys.argv[1])["BlockDeviceMappings"]
assert m[0]["Ebs"]=={"DeleteOnTermination":False,"SnapshotId":sys.argv[2],"VolumeSize":4,"VolumeType":"gp3","Iops":3000,"Throughput":125,"Encrypted":False}, m
assert m[1]["DeviceName"]=="/dev/xvdb" and m[1]["Ebs"]["VolumeSize"]==2 and "SnapshotId" not in m[1]["Ebs"], m' "$output" "$s"
	run av2 ec2 describe-tags --filters Name=resource-type,Values=image Name=resource-id,Values=$a1 --query 'Tags[].[ResourceType,Key,Value]' --output text
	[ "$output" = "image	role	web" ]
	# The snapshot stays while an image names it.
	run av2 ec2 delete-snapshot --snapshot-id "$s"
	fails_with InvalidSnapshot.InUse
	[[ "$output" == *"The snapshot $s is currently in use by ami-"* ]]
	for a in "$a1" "$a2"; do av2 ec2 deregister-image --image-id "$a"; done
	run av2 ec2 delete-snapshot --snapshot-id "$s"
	fails_with InvalidSnapshot.InUse
	[[ "$output" == *"in use by $a3"* ]]
	av2 ec2 deregister-image --image-id "$a3"
	run av2 ec2 describe-images --image-ids "$a3"
	fails_with InvalidAMIID.NotFound
	run av2 ec2 deregister-image --image-id "$a3"
	fails_with InvalidAMIID.NotFound
	[ "$(sstate "$s")" = completed ]	# deregistering leaves the snapshot
	av2 ec2 delete-snapshot --snapshot-id "$s"
}

@test "bad input: unknown and malformed ids, duplicate and hostile names, unknown snapshots, another account's images and snapshots" {
	s=$(snapshot)
	ami=$(cat "$BATS_FILE_TMPDIR/ami" 2>/dev/null || echo ami-0123456789abcdef0)
	run av2 ec2 describe-images --image-ids ami-0123456789abcdef0
	fails_with InvalidAMIID.NotFound
	[[ "$output" == *"The image id '[ami-0123456789abcdef0]' does not exist"* ]]
	run av2 ec2 describe-images --image-ids ami-0123456789abcdef0 ami-xyz
	fails_with InvalidAMIID.Malformed
	run av2 ec2 describe-image-attribute --image-id ami-../../etc --attribute description
	fails_with InvalidAMIID.Malformed
	run av2 ec2 deregister-image --image-id ami-0123456789abcdef0
	fails_with InvalidAMIID.NotFound
	a=$(register "dup-name" "$s")
	run register "dup-name" "$s"
	fails_with InvalidAMIName.Duplicate
	[[ "$output" == *"AMI name dup-name is already in use by AMI $a"* ]]
	run register "../../../etc/passwd;" "$s"	# more in the boto3 test
	fails_with InvalidAMIName.Malformed
	long=$(printf 'n%.0s' {1..128})
	la=$(register "$long" "$s")
	[ "$(av2 ec2 describe-images --image-ids "$la" --query 'Images[0].Name' --output text)" = "$long" ]
	run register "arm" "$s" --architecture arm64
	fails_with InvalidParameterValue
	[[ "$output" == *"only x86_64 images"* ]]
	run register "unknown snap" snap-0123456789abcdef0
	fails_with InvalidSnapshot.NotFound
	run register "bad snap" "snap-../x"
	fails_with InvalidSnapshotID.Malformed
	run register "no root" "$s" --root-device-name /dev/sdf
	fails_with InvalidBlockDeviceMapping
	run register "small" "$s" --block-device-mappings "DeviceName=/dev/xvda,Ebs={SnapshotId=$s,VolumeSize=1}" --root-device-name /dev/xvdz
	fails_with InvalidBlockDeviceMapping
	run av2 ec2 register-image --name "s3 image" --image-location bucket/image.manifest.xml
	fails_with InvalidParameterValue
	run register "odd description" "$s" --description "$(printf 'line\001ctl')"
	fails_with InvalidParameterValue
	# Odd UTF-8 in a description is kept as it was sent.
	d=$(printf 'caf\xc3\xa9 \xf0\x9f\x92\xbe \xe2\x80\xae rtl')
	ua=$(register "utf8 description" "$s" --description "$d")
	[ "$(av2 ec2 describe-images --image-ids "$ua" --query 'Images[0].Description' --output text)" = "$d" ]

	# Another account sees none of this account's images.
	run other ec2 describe-images --image-ids "$a"
	fails_with InvalidAMIID.NotFound
	run other ec2 describe-images --owners self --query 'length(Images)'
	[ "$output" = 0 ]
	run other ec2 describe-image-attribute --image-id "$a" --attribute description
	fails_with InvalidAMIID.NotFound
	run other ec2 deregister-image --image-id "$a"
	fails_with InvalidAMIID.NotFound
	run other ec2 create-tags --resources "$a" --tags Key=x,Value=y
	fails_with InvalidAMIID.NotFound
	# ... nor its snapshots, until shared with createVolumePermission.
	run other ec2 register-image --name "theirs" --block-device-mappings "DeviceName=/dev/xvda,Ebs={SnapshotId=$s}"
	fails_with InvalidSnapshot.NotFound
	oacct=$(cut -d' ' -f3 "$BATS_FILE_TMPDIR/other")
	av2 ec2 modify-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --operation-type add --user-ids "$oacct"
	oa=$(other ec2 register-image --name "theirs" --block-device-mappings "DeviceName=/dev/xvda,Ebs={SnapshotId=$s}" --query ImageId --output text)
	[ "$(other ec2 describe-images --owners self --query 'Images[0].ImageId' --output text)" = "$oa" ]
	run av2 ec2 describe-images --image-ids "$oa"
	fails_with InvalidAMIID.NotFound
	# Only the owner deletes it: to the other account, which may use it,
	# it does not exist, and the images that keep it are not named.
	run other ec2 delete-snapshot --snapshot-id "$s"
	fails_with InvalidSnapshot.NotFound
	[[ "$output" != *ami-* ]]
	# Only the owner's own images keep the snapshot, as on AWS: the
	# other's image, which the owner can neither see nor deregister,
	# does not, once the share is withdrawn or while it lasts.
	run av2 ec2 delete-snapshot --snapshot-id "$s"
	fails_with InvalidSnapshot.InUse
	[[ "$output" != *"$oa"* ]]
	for x in "$a" "$la" "$ua"; do av2 ec2 deregister-image --image-id "$x"; done
	av2 ec2 modify-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --operation-type remove --user-ids "$oacct"
	av2 ec2 delete-snapshot --snapshot-id "$s"
	run av2 ec2 describe-snapshots --snapshot-ids "$s"
	fails_with InvalidSnapshot.NotFound
	other ec2 deregister-image --image-id "$oa"
	[ "$ami" ] # the imported image is untouched
}

@test "a DeleteSnapshot racing RegisterImage: the image is registered and the deletion refused, or the registration fails" {
	for round in 1 2; do
		s=$(snapshot)
		register "race-$round" "$s" >"$BATS_TEST_TMPDIR/reg.out" 2>&1 &
		rp=$!
		rc_del=0
		av2 ec2 delete-snapshot --snapshot-id "$s" >"$BATS_TEST_TMPDIR/del.out" 2>&1 || rc_del=$?
		rc_reg=0
		wait "$rp" || rc_reg=$?
		cat "$BATS_TEST_TMPDIR/reg.out" "$BATS_TEST_TMPDIR/del.out"
		if [ "$rc_reg" -eq 0 ]; then
			[ "$rc_del" -eq 254 ]
			grep -q InvalidSnapshot.InUse "$BATS_TEST_TMPDIR/del.out"
			av2 ec2 deregister-image --image-id "$(cat "$BATS_TEST_TMPDIR/reg.out")"
			av2 ec2 delete-snapshot --snapshot-id "$s"
		else
			[ "$rc_reg" -eq 254 ] && [ "$rc_del" -eq 0 ]
			grep -q InvalidSnapshot.NotFound "$BATS_TEST_TMPDIR/reg.out"
			[ "$(av2 ec2 describe-images --owners self --filters Name=name,Values=race-$round --query 'length(Images)')" = 0 ]
		fi
	done
}

@test "boto3: register_image, describe_images with the image_available waiter, attributes, deregister_image" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	s=$(snapshot)
	run /usr/bin/python3 - "https://127.0.0.1:$EC2_PORT" "$ROOT/tls/ca.pem" "$s" <<-'EOF'
	import sys, boto3
	from botocore.config import Config
	from botocore.exceptions import ClientError
	ec2 = boto3.session.Session(profile_name="spx").client(
	    "ec2", endpoint_url=sys.argv[1], verify=sys.argv[2],
	    config=Config(retries={"max_attempts": 1}))
	def code(f, **kw):
	    try:
	        f(**kw)
	    except ClientError as e:
	        return e.response["Error"]["Code"]
	    raise SystemExit("no error: %r" % (kw,))
	bdm = [{"DeviceName": "/dev/xvda", "Ebs": {"SnapshotId": sys.argv[3]}}]
	ami = ec2.register_image(Name="boto3 image", RootDeviceName="/dev/xvda",
	                         BlockDeviceMappings=bdm)["ImageId"]
	ec2.get_waiter("image_available").wait(ImageIds=[ami],
	                                      WaiterConfig={"Delay": 1, "MaxAttempts": 30})
	i = ec2.describe_images(Owners=["self"], ImageIds=[ami])["Images"][0]
	assert i["State"] == "available" and i["Name"] == "boto3 image", i
	assert i["BlockDeviceMappings"][0]["Ebs"]["SnapshotId"] == sys.argv[3], i
	a = ec2.describe_image_attribute(ImageId=ami, Attribute="bootMode")
	assert a["BootMode"]["Value"] == "legacy-bios", a
	# A NUL never reaches a handler (the gateway refuses the query);
	# characters beyond EC2's set in a name are refused.
	assert code(ec2.register_image, Name="a\x00bc", BlockDeviceMappings=bdm) == "MalformedQueryString"
	assert code(ec2.register_image, Name="nul desc", Description="a\x00b",
	            BlockDeviceMappings=bdm) == "MalformedQueryString"
	for name in ["ab\xff\xfe", "..", "ab", "a*b", "a" * 129, "x" * 4000,
	             "na\u00efve", "tab\tname", "rtl\u202ename", "../../etc;"]:
	    assert code(ec2.register_image, Name=name, BlockDeviceMappings=bdm) == "InvalidAMIName.Malformed", name
	assert code(ec2.register_image, Name="boto3 image", BlockDeviceMappings=bdm) == "InvalidAMIName.Duplicate"
	ec2.deregister_image(ImageId=ami)
	assert code(ec2.describe_images, ImageIds=[ami]) == "InvalidAMIID.NotFound"
	ec2.delete_snapshot(SnapshotId=sys.argv[3])
	print("ok")
	EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = ok ]
}

@test "npm SDK v3: RegisterImage, DescribeImages with its waiter and paginator, DeregisterImage, error types" {
	[ -d "$SPX_TOP/tests/clients/node_modules/@aws-sdk/client-ec2" ] || skip "npm SDK v3 not installed (scripts/deps.sh)"
	s=$(snapshot)
	read -r ak sk < <(admin_key)
	run env NODE_EXTRA_CA_CERTS="$ROOT/tls/ca.pem" AWS_ACCESS_KEY_ID="$ak" AWS_SECRET_ACCESS_KEY="$sk" \
		AWS_REGION=us-east-1 AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
		node "$SPX_TOP/tests/clients/images-sdk-v3.mjs" "https://127.0.0.1:$EC2_PORT" "$s"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "ok images" ]
	av2 ec2 delete-snapshot --snapshot-id "$s"
}
