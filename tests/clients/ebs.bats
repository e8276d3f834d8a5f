#!/usr/bin/env bats
# The EBS volume API through real clients (aws CLI v2 at /usr/bin/aws;
# boto3 from Debian's python3-boto3 with its waiter), made real by the node
# agent running spx-vol: states as AWS shows them, parameter errors,
# filters and paging, modification, deletion, other accounts, capacity,
# and the agent killed with work pending.

load ../bats/helpers

setup_file() { file_node; }

teardown_file() {
	# A test that stopped the agent must not leave it stopped.
	[ -f "$ROOT/run/agent.pid" ] && kill -CONT "$(cat "$ROOT/run/agent.pid")" 2>/dev/null
	stop_node
}

setup() {
	aws_env
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
}

av2() { awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" "$@"; }

# state ID: the volume's State as DescribeVolumes says it.
state() { av2 ec2 describe-volumes --volume-ids "$1" --query 'Volumes[0].State' --output text 2>/dev/null; }
# state_is ID STATE
state_is() { { [ "$2" != available ] || agent_done "$1"; } && [ "$(state "$1")" = "$2" ]; }
# create ARGS...: a new volume's id, once it is available.
create() {
	local id
	id=$(av2 ec2 create-volume --availability-zone us-east-1a "$@" --query VolumeId --output text) || return 1
	wait_for 20 state_is "$id" available || return 1
	echo "$id"
}
# aws's error line for code, from the output of a failed run.
fails_with() { # STATUS-OUTPUT CODE
	[ "$status" -eq 254 ] || { echo "status $status: $output"; return 1; }
	[[ "$output" == *"($1) when calling"* ]] || { echo "$output"; return 1; }
}
agent_pid() { cat "$ROOT/run/agent.pid"; }

@test "create-volume: creating, then available once the agent made it; the agent's command is logged" {
	run av2 ec2 create-volume --availability-zone us-east-1a --size 8 --volume-type gp3 \
		--tag-specifications 'ResourceType=volume,Tags=[{Key=Name,Value=data}]' --output json
	[ "$status" -eq 0 ]
	id=$(python3 -c 'import json,sys; v=json.loads(sys.argv[1]); assert v["State"]=="creating" and v["Size"]==8 and v["Iops"]==3000 and v["Throughput"]==125 and v["Encrypted"] is False and v["Tags"]==[{"Key":"Name","Value":"data"}], v; print(v["VolumeId"])' "$output")
	[[ "$id" =~ ^vol-[0-9a-f]{17}$ ]]
	wait_for 20 state_is "$id" available
	grep -q "run: .*spx-vol create --root $ROOT --size 8589934592 --id $id\$" "$ROOT/log/agent.log"
	# The volume is real, thin, and served.
	[ "$(spx-vol info --root "$ROOT" "$id" --json | python3 -c 'import json,sys; v=json.load(sys.stdin)[0]; print(v["size"], v["allocated"])')" = "8589934592 0" ]
	nbdinfo --size "nbd+unix:///$id?socket=$ROOT/run/vol.sock"
	# gp2 by default, with EBS's 3 IOPS per GiB (at least 100).
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --query '[VolumeType,Iops]' --output text
	[ "$output" = "gp2	100" ]
	run av2 ec2 create-volume --availability-zone us-east-1a --size 100 --volume-type io2 --iops 5000 --multi-attach-enabled --query '[VolumeType,Iops,MultiAttachEnabled]' --output text
	[ "$output" = "io2	5000	True" ]
	run av2 ec2 create-volume --availability-zone us-east-1a --size 1 --encrypted --kms-key-id alias/aws/ebs --query '[Encrypted,KmsKeyId]' --output text
	[ "$output" = "True	alias/aws/ebs" ]
	run av2 ec2 create-volume --dry-run --availability-zone us-east-1a --size 1
	fails_with DryRunOperation
}

@test "create-volume parameter errors, as EC2 words them; nothing is created" {
	before=$(av2 ec2 describe-volumes --query 'length(Volumes)' --output text)
	run av2 ec2 create-volume --size 1
	[ "$status" -eq 252 ] # the CLI itself: --availability-zone is required
	run av2 ec2 create-volume --availability-zone us-east-1z --size 1
	fails_with InvalidParameterValue
	[[ "$output" == *": Invalid availability zone: [us-east-1z]" ]]
	run av2 ec2 create-volume --availability-zone us-east-1a
	fails_with MissingParameter
	[[ "$output" == *"size or snapshotId" ]]
	run av2 ec2 create-volume --availability-zone us-east-1a --size 0
	fails_with InvalidParameterValue
	[[ "$output" == *": Volume size of 0GiB is too small; minimum is 1GiB." ]]
	run av2 ec2 create-volume --availability-zone us-east-1a --size 16385
	fails_with InvalidParameterValue
	[[ "$output" == *": Volume size of 16385GiB is too large; maximum is 16384GiB." ]]
	run av2 ec2 create-volume --availability-zone us-east-1a --size 100 --volume-type st1
	fails_with InvalidParameterValue
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --volume-type io1
	fails_with MissingParameter
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --volume-type gp2 --iops 300
	fails_with InvalidParameterCombination
	[[ "$output" == *": The parameter iops is not supported for gp2 volumes." ]]
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --volume-type io1 --iops 1000
	fails_with InvalidParameterValue
	[[ "$output" == *": Iops to volume size ratio of 100.000000 is too high; maximum is 50.000000." ]]
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --volume-type gp3 --iops 2000
	fails_with InvalidParameterValue
	[[ "$output" == *"Volume iops of 2000 is too small; minimum is 3000." ]]
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --volume-type io1 --iops 100 --throughput 200
	fails_with InvalidParameterCombination
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --volume-type gp3 --throughput 1001
	fails_with InvalidParameterValue
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --volume-type gp3 --throughput 1000
	fails_with InvalidParameterValue # 1000 MiB/s needs 4000 IOPS
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --volume-type gp3 --multi-attach-enabled
	fails_with InvalidParameterCombination
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --kms-key-id alias/x
	fails_with InvalidParameterDependency
	run av2 ec2 create-volume --availability-zone us-east-1a --snapshot-id snap-0123456789abcdef0
	fails_with InvalidSnapshot.NotFound
	run av2 ec2 create-volume --availability-zone us-east-1a --snapshot-id snap-x
	fails_with InvalidSnapshotID.Malformed
	run av2 ec2 create-volume --availability-zone us-east-1a --size 10 --volume-type gp9
	fails_with InvalidParameterValue
	[ "$(av2 ec2 describe-volumes --query 'length(Volumes)' --output text)" = "$before" ]
}

@test "describe-volumes: ids, filters, paging, and the errors" {
	n=tag$RANDOM
	ids=()
	for i in 1 2 3 4 5 6 7; do
		ids+=("$(create --size $i --tag-specifications "ResourceType=volume,Tags=[{Key=set,Value=$n},{Key=i,Value=$i}]")")
	done
	run av2 ec2 describe-volumes --filters "Name=tag:set,Values=$n" --query 'length(Volumes)' --output text
	[ "$output" = 7 ]
	run av2 ec2 describe-volumes --filters "Name=tag:set,Values=$n" Name=size,Values=2,5 --query 'sort(Volumes[].VolumeId)' --output text
	[ "$output" = "$(printf '%s\n' "${ids[1]}" "${ids[4]}" | sort | tr '\n' '\t' | sed 's/\t$//')" ]
	run av2 ec2 describe-volumes --filters "Name=tag:set,Values=$n" Name=status,Values=available Name=volume-type,Values=gp2 Name=availability-zone,Values='us-east-*' Name=encrypted,Values=false --query 'length(Volumes)' --output text
	[ "$output" = 7 ]
	run av2 ec2 describe-volumes --filters Name=tag-key,Values=set "Name=tag:i,Values=7" --query 'Volumes[].VolumeId' --output text
	[ "$output" = "${ids[6]}" ]
	run av2 ec2 describe-volumes --filters Name=bogus,Values=1
	fails_with InvalidParameterValue
	[[ "$output" == *"The filter 'bogus' is invalid" ]]
	# Pages of 5 through the raw token; the CLI's own paging gets all 7.
	run av2 ec2 describe-volumes --no-paginate --max-results 5 --filters "Name=tag:set,Values=$n" --output json
	tok=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert len(d["Volumes"])==5; print(d["NextToken"])' "$output")
	run av2 ec2 describe-volumes --no-paginate --max-results 5 --next-token "$tok" --filters "Name=tag:set,Values=$n" --query 'length(Volumes)' --output text
	[ "$output" = 2 ]
	run av2 ec2 describe-volumes --page-size 5 --filters "Name=tag:set,Values=$n" --query 'Volumes[].VolumeId' --output text
	[ "$(echo $output | wc -w)" = 7 ]
	run av2 ec2 describe-volumes --no-paginate --max-results 4
	fails_with InvalidParameterValue
	run av2 ec2 describe-volumes --no-paginate --max-results 5 --volume-ids "${ids[0]}"
	fails_with InvalidParameterCombination
	run av2 ec2 describe-volumes --volume-ids "${ids[0]}" vol-0123456789abcdef0
	fails_with InvalidVolume.NotFound
	[[ "$output" == *": The volume 'vol-0123456789abcdef0' does not exist." ]]
	run av2 ec2 describe-volumes --volume-ids vol-12345678
	fails_with InvalidVolume.NotFound
	for bad in vol-XYZ nope vol-0123456789ABCDEF0 ../vol-0123456789abcdef0; do
		run av2 ec2 describe-volumes --volume-ids "$bad"
		fails_with InvalidVolumeID.Malformed
	done
	run av2 ec2 describe-volume-status --volume-ids "${ids[0]}" --query 'VolumeStatuses[0].VolumeStatus.[Status,Details[0].Name,Details[0].Status]' --output text
	[ "$output" = "ok	io-enabled	passed" ]
	run av2 ec2 describe-volume-attribute --volume-id "${ids[0]}" --attribute autoEnableIO --query AutoEnableIO.Value --output text
	[ "$output" = False ]
	run av2 ec2 describe-volume-attribute --volume-id vol-0123456789abcdef0 --attribute productCodes
	fails_with InvalidVolume.NotFound
	# Tags through the generic actions too.
	av2 ec2 create-tags --resources "${ids[0]}" --tags Key=extra,Value=yes
	run av2 ec2 describe-tags --filters "Name=resource-id,Values=${ids[0]}" Name=key,Values=extra --query 'Tags[0].[ResourceType,Value]' --output text
	[ "$output" = "volume	yes" ]
	run av2 ec2 create-tags --resources vol-0123 --tags Key=a,Value=b
	fails_with InvalidID
	run av2 ec2 create-tags --resources vol-0123456789abcdef0 --tags Key=a,Value=b
	fails_with InvalidVolume.NotFound
	for id in "${ids[@]}"; do av2 ec2 delete-volume --volume-id "$id"; done
}

@test "modify-volume grows the volume; shrinking, a second modification meanwhile and no change are refused" {
	id=$(create --size 8 --volume-type gp3)
	run av2 ec2 modify-volume --volume-id "$id" --size 7
	fails_with InvalidParameterValue
	[[ "$output" == *": New size cannot be smaller than existing size" ]]
	run av2 ec2 modify-volume --volume-id "$id" --size 8
	fails_with InvalidParameterValue
	[[ "$output" == *": New volume configuration is the same as the existing one." ]]
	# 4000 IOPS need 8 GiB at gp3's 500 per GiB: a ratio too high.
	run av2 ec2 modify-volume --volume-id "$id" --iops 4001
	fails_with InvalidParameterValue
	run av2 ec2 describe-volumes-modifications --volume-ids "$id"
	fails_with InvalidVolumeModification.NotFound
	# With the agent stopped the modification stays "modifying".
	kill -STOP "$(agent_pid)"
	run av2 ec2 modify-volume --volume-id "$id" --size 10 --iops 5000 --throughput 250 --query 'VolumeModification.[ModificationState,OriginalSize,TargetSize,TargetIops,TargetThroughput]' --output text
	status_=$status out_=$output
	run av2 ec2 modify-volume --volume-id "$id" --size 11
	second=$output
	kill -CONT "$(agent_pid)"
	[ "$status_" -eq 0 ]
	[ "$out_" = "modifying	8	10	5000	250" ]
	[[ "$second" == *"(IncorrectModificationState)"* ]]
	mod_done() { [ "$(av2 ec2 describe-volumes-modifications --volume-ids "$id" --query 'VolumesModifications[0].ModificationState' --output text)" = completed ]; }
	wait_for 20 mod_done
	run av2 ec2 describe-volumes --volume-ids "$id" --query 'Volumes[0].[Size,Iops,Throughput,State]' --output text
	[ "$output" = "10	5000	250	available" ]
	[ "$(spx-vol info --root "$ROOT" "$id" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["size"])')" = $((10 << 30)) ]
	grep -q "run: .*spx-vol resize --root $ROOT $id $((10 << 30))\$" "$ROOT/log/agent.log"
	run av2 ec2 describe-volumes-modifications --filters Name=modification-state,Values=completed Name=target-size,Values=10 --query 'VolumesModifications[].VolumeId' --output text
	[[ "$output" == *"$id"* ]]
	# A type change carries over what still fits.
	run av2 ec2 modify-volume --volume-id "$id" --volume-type io2 --iops 1000 --query VolumeModification.TargetVolumeType --output text
	[ "$output" = io2 ]
	wait_for 20 mod_done
	[ "$(av2 ec2 describe-volumes --volume-ids "$id" --query 'Volumes[0].[VolumeType,Iops]' --output text)" = "io2	1000" ]
	av2 ec2 delete-volume --volume-id "$id"
}

@test "delete-volume: deleting, then gone; refused while creating; unknown ids" {
	id=$(create --size 1)
	run av2 ec2 delete-volume --volume-id "$id"
	[ "$status" -eq 0 ]
	gone() { ! av2 ec2 describe-volumes --volume-ids "$id" >/dev/null 2>&1; }
	wait_for 20 gone
	run av2 ec2 describe-volumes --volume-ids "$id"
	fails_with InvalidVolume.NotFound
	[ ! -e "$ROOT/data/vol/$id" ]
	grep -q "run: .*spx-vol rm --root $ROOT $id\$" "$ROOT/log/agent.log"
	run av2 ec2 delete-volume --volume-id "$id"
	fails_with InvalidVolume.NotFound
	run av2 ec2 delete-volume --volume-id vol-bad
	fails_with InvalidVolumeID.Malformed
	# While the agent is stopped a new volume stays "creating".
	kill -STOP "$(agent_pid)"
	new=$(av2 ec2 create-volume --availability-zone us-east-1a --size 1 --query VolumeId --output text)
	run av2 ec2 delete-volume --volume-id "$new"
	kill -CONT "$(agent_pid)"
	fails_with IncorrectState
	wait_for 20 state_is "$new" available
	av2 ec2 delete-volume --volume-id "$new"
}

@test "another account's volumes do not exist for it" {
	id=$(create --size 1)
	read -r oak osk < <(spx admin account create --root "$ROOT" --name vol-other-$RANDOM --json |
		python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"])')
	other() ( unset AWS_PROFILE; AWS_ACCESS_KEY_ID=$oak AWS_SECRET_ACCESS_KEY=$osk awscli2 --ca-bundle "$ROOT/tls/ca.pem" --region us-east-1 --endpoint-url "https://127.0.0.1:$EC2_PORT" "$@" )
	for verb in describe-volumes describe-volume-status; do
		run other ec2 $verb --volume-ids "$id"
		fails_with InvalidVolume.NotFound
	done
	run other ec2 describe-volumes --query 'Volumes[].VolumeId' --output text
	[ "$status" -eq 0 ]
	[[ "$output" != *"$id"* ]]
	run other ec2 delete-volume --volume-id "$id"
	fails_with InvalidVolume.NotFound
	run other ec2 modify-volume --volume-id "$id" --size 2
	fails_with InvalidVolume.NotFound
	run other ec2 create-tags --resources "$id" --tags Key=a,Value=b
	fails_with InvalidVolume.NotFound
	state_is "$id" available
	av2 ec2 delete-volume --volume-id "$id"
}

@test "ClientToken: the same request once, its answer again; other parameters refused" {
	tok=tok-$RANDOM$RANDOM
	a=$(av2 ec2 create-volume --availability-zone us-east-1a --size 3 --client-token "$tok" --query VolumeId --output text)
	b=$(av2 ec2 create-volume --availability-zone us-east-1a --size 3 --client-token "$tok" --query VolumeId --output text)
	[ "$a" = "$b" ]
	run av2 ec2 create-volume --availability-zone us-east-1a --size 4 --client-token "$tok"
	fails_with IdempotentParameterMismatch
	wait_for 20 state_is "$a" available
	[ "$(grep -c -- "--id $a\$" "$ROOT/log/agent.log")" = 1 ]
	av2 ec2 delete-volume --volume-id "$a"
}

@test "capacity: CreateVolume, and ModifyVolume's grow, refused beyond the store's size unless overcommit allows it" {
	fs=$(df -B1 --output=size "$ROOT/data" | tail -1 | tr -d ' ')
	gib=$(( fs / (1 << 30) + 1 ))
	[ "$gib" -le 16384 ] || skip "the file system is larger than a gp2 volume can be"
	run av2 ec2 create-volume --availability-zone us-east-1a --size "$gib"
	fails_with InsufficientVolumeCapacity
	[[ "$output" == *"not enough capacity for a $gib GiB volume"* ]]
	[[ "$output" == *"(overcommit 100%)."* ]]
	# A grow is held to the same rule, and changes nothing.
	small=$(create --size 1)
	run av2 ec2 modify-volume --volume-id "$small" --size "$gib"
	fails_with InsufficientVolumeCapacity
	[[ "$output" == *"not enough capacity for volume $small to grow by $((gib - 1)) GiB"* ]]
	[ "$(av2 ec2 describe-volumes --volume-ids "$small" --query 'Volumes[0].Size' --output text)" = 1 ]
	run av2 ec2 describe-volumes-modifications --volume-ids "$small"
	fails_with InvalidVolumeModification.NotFound
	av2 ec2 delete-volume --volume-id "$small"
	# With overcommit the same volume is made: thin, it takes no space.
	printf '\n[nodes.node1.ebs]\novercommit_percent = 400\n' >>"$ROOT/spinifex.toml"
	spx down --root "$ROOT" >/dev/null
	start_node
	id=$(create --size "$gib")
	[ "$(spx-vol info --root "$ROOT" "$id" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["allocated"])')" = 0 ]
	av2 ec2 delete-volume --volume-id "$id"
}

@test "the agent killed with work recorded: the restarted agent does it, once" {
	pid=$(agent_pid)
	kill -STOP "$pid"
	id=$(av2 ec2 create-volume --availability-zone us-east-1a --size 1 --query VolumeId --output text)
	kill -9 "$pid"
	kill -CONT "$pid" 2>/dev/null || true
	wait_for 30 state_is "$id" available
	[ "$(grep -c -- "--id $id\$" "$ROOT/log/agent.log")" = 1 ]
	grep -q "agent (pid $pid) killed by SIGKILL" "$ROOT/log/supervise.log"
	# A create the tool finished before a crash: the record catches up
	# without making the volume again.
	kill -STOP "$(agent_pid)"
	id2=$(av2 ec2 create-volume --availability-zone us-east-1a --size 2 --query VolumeId --output text)
	spx-vol create --root "$ROOT" --size 2G --id "$id2"
	head -c 4096 /dev/urandom >"$BATS_TEST_TMPDIR/d"
	spx-vol write --root "$ROOT" "$id2" <"$BATS_TEST_TMPDIR/d"
	kill -CONT "$(agent_pid)"
	wait_for 20 state_is "$id2" available
	spx-vol cat --root "$ROOT" "$id2" | cmp -n 4096 - "$BATS_TEST_TMPDIR/d"
	av2 ec2 delete-volume --volume-id "$id"
	av2 ec2 delete-volume --volume-id "$id2"
}

@test "boto3: create_volume, the volume_available waiter, modify, delete and the volume_deleted waiter" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	run /usr/bin/python3 - "https://127.0.0.1:$EC2_PORT" "$ROOT/tls/ca.pem" <<-'EOF'
	import sys, boto3
	from botocore.config import Config
	from botocore.exceptions import ClientError
	ec2 = boto3.session.Session(profile_name="spx").client(
	    "ec2", endpoint_url=sys.argv[1], verify=sys.argv[2],
	    config=Config(retries={"max_attempts": 1}))
	fast = {"Delay": 1, "MaxAttempts": 30}
	v = ec2.create_volume(AvailabilityZone="us-east-1a", Size=4, VolumeType="gp3",
	                      TagSpecifications=[{"ResourceType": "volume",
	                                          "Tags": [{"Key": "k", "Value": "v"}]}])
	assert v["State"] == "creating", v
	ec2.get_waiter("volume_available").wait(VolumeIds=[v["VolumeId"]], WaiterConfig=fast)
	m = ec2.modify_volume(VolumeId=v["VolumeId"], Size=6)["VolumeModification"]
	assert m["ModificationState"] == "modifying" and m["TargetSize"] == 6, m
	try:
	    ec2.describe_volumes(VolumeIds=["vol-0000000000000000f"])
	    raise SystemExit("no error for an unknown volume")
	except ClientError as e:
	    assert e.response["Error"]["Code"] == "InvalidVolume.NotFound", e.response
	pages = ec2.get_paginator("describe_volumes").paginate(
	    Filters=[{"Name": "tag:k", "Values": ["v"]}], PaginationConfig={"PageSize": 5})
	assert v["VolumeId"] in [x["VolumeId"] for p in pages for x in p["Volumes"]]
	ec2.delete_volume(VolumeId=v["VolumeId"])
	ec2.get_waiter("volume_deleted").wait(VolumeIds=[v["VolumeId"]], WaiterConfig=fast)
	print("ok boto3")
	EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "ok boto3" ]
}
