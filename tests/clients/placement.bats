#!/usr/bin/env bats
# Placement groups through real clients (aws CLI v2 at /usr/bin/aws;
# boto3 from Debian's python3-boto3): create-placement-group with its
# rules and exact error codes, describe-placement-groups with names, ids
# and filters, tags on pg- ids, delete-placement-group (Unknown, InUse),
# and run-instances into a group: a spread group holds one instance on
# this node (a second is InsufficientInstanceCapacity and nothing is
# recorded), terminating it frees the place at once, and two launches
# racing for the place cannot both have it.
#
# Only records and admission are tested here, so the node agent is held
# still (SIGSTOP) while the tests run: RunInstances records at once and
# no guest is booted. Booting guests is instances.bats' business.

load ../bats/helpers

F=$BATS_FILE_TMPDIR

setup_file() {
	export ROOT EC2_PORT S3_PORT
	make_node
	start_node
	echo "$ROOT" >"$F/root"
	echo "$EC2_PORT" >"$F/port"
	truncate -s 1M "$F/tiny.raw"
	spx admin images import --root "$ROOT" "$F/tiny.raw" --name pg-test \
		>"$F/ami" 2>"$F/import.err" || {
		cat "$F/import.err" >&2
		return 1
	}
	kill -STOP "$(cat "$ROOT/run/agent.pid")"
}

teardown_file() {
	ROOT=$(cat "$F/root" 2>/dev/null) || return 0
	kill -CONT "$(cat "$ROOT/run/agent.pid")" 2>/dev/null || true
	stop_node
}

setup() {
	ROOT=$(cat "$F/root")
	EC2_PORT=$(cat "$F/port")
	AMI=$(cat "$F/ami")
	aws_env
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
}

av2() { awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" "$@"; }
fails_with() { # CODE
	[ "$status" -eq 254 ] || { echo "status $status: $output"; return 1; }
	[[ "$output" == *"($1) when calling"* ]] || { echo "$output"; return 1; }
}
count_instances() {
	av2 ec2 describe-instances \
		--filters Name=instance-state-name,Values=pending,running \
		--query 'length(Reservations[].Instances[])' --output text
}
count_volumes() {
	av2 ec2 describe-volumes --query 'length(Volumes)' --output text
}

@test "create-placement-group: strategies, partitions, spread level, tags; describe by name, id and filter; duplicates and bad input refused; delete" {
	g=pg-$RANDOM$RANDOM
	run av2 ec2 create-placement-group --group-name "$g-s" --strategy spread \
		--tag-specifications "ResourceType=placement-group,Tags=[{Key=team,Value=blue}]" \
		--query 'PlacementGroup.[GroupName,Strategy,State,SpreadLevel,GroupId,GroupArn]' \
		--output text
	[ "$status" -eq 0 ]
	read -r name strat state level gid arn <<<"$output"
	[ "$name" = "$g-s" ] && [ "$strat" = spread ] && [ "$state" = available ]
	[ "$level" = rack ]
	[[ "$gid" =~ ^pg-[0-9a-f]{17}$ ]]
	[[ "$arn" == "arn:aws:ec2:us-east-1:"*":placement-group/$g-s" ]]
	run av2 ec2 create-placement-group --group-name "$g-p" --strategy partition \
		--partition-count 5
	[ "$status" -eq 0 ]
	run av2 ec2 create-placement-group --group-name "$g-c" --strategy cluster
	[ "$status" -eq 0 ]

	run av2 ec2 create-placement-group --group-name "$g-c" --strategy spread
	fails_with InvalidPlacementGroup.Duplicate
	run av2 ec2 create-placement-group --group-name "$g-x" --strategy partition \
		--partition-count 8
	fails_with InvalidParameterValue
	run av2 ec2 create-placement-group --group-name "$g-x" --strategy cluster \
		--partition-count 2
	fails_with InvalidParameterCombination
	run av2 ec2 create-placement-group --group-name "$g-x" --strategy spread \
		--spread-level host
	fails_with InvalidParameterValue
	run av2 ec2 create-placement-group --group-name "$(printf 'n%.0s' $(seq 256))" \
		--strategy cluster
	fails_with InvalidParameterValue
	run av2 ec2 create-placement-group --group-name "$g-x" --strategy diagonal
	fails_with InvalidParameterValue
	run av2 ec2 describe-placement-groups --group-names "$g-x"
	fails_with InvalidPlacementGroup.Unknown

	run av2 ec2 describe-placement-groups --group-names "$g-p" \
		--query 'PlacementGroups[].[GroupName,Strategy,PartitionCount]' --output text
	[ "$output" = "$g-p	partition	5" ]
	run av2 ec2 describe-placement-groups --group-ids "$gid" \
		--query 'PlacementGroups[].[GroupName,Tags[0].Key,Tags[0].Value]' --output text
	[ "$output" = "$g-s	team	blue" ]
	run av2 ec2 describe-placement-groups --group-ids pg-0123456789abcdef0
	fails_with InvalidPlacementGroup.Unknown
	run av2 ec2 describe-placement-groups --group-ids pg-nope
	fails_with InvalidPlacementGroupId.Malformed
	run av2 ec2 describe-placement-groups \
		--filters "Name=group-name,Values=$g-*" Name=strategy,Values=spread,cluster \
		--query 'sort(PlacementGroups[].GroupName)' --output text
	[ "$output" = "$g-c	$g-s" ]
	run av2 ec2 describe-placement-groups \
		--filters "Name=group-name,Values=$g-*" Name=spread-level,Values=rack Name=state,Values=available \
		--query 'PlacementGroups[].GroupName' --output text
	[ "$output" = "$g-s" ]
	run av2 ec2 describe-placement-groups --filters Name=tag:team,Values=blue \
		--query 'PlacementGroups[].GroupId' --output text
	[ "$output" = "$gid" ]
	run av2 ec2 describe-placement-groups --filters Name=color,Values=red
	fails_with InvalidParameterValue

	# A placement group is a tag resource.
	run av2 ec2 create-tags --resources "$gid" --tags Key=env,Value=test
	[ "$status" -eq 0 ]
	run av2 ec2 describe-placement-groups --filters Name=tag-key,Values=env \
		--query 'PlacementGroups[].GroupName' --output text
	[ "$output" = "$g-s" ]
	run av2 ec2 describe-tags --filters "Name=resource-id,Values=$gid" Name=key,Values=env \
		--query 'Tags[].[ResourceType,Value]' --output text
	[ "$output" = "placement-group	test" ]
	run av2 ec2 delete-tags --resources "$gid" --tags Key=env
	[ "$status" -eq 0 ]
	run av2 ec2 create-tags --resources pg-0123456789abcdef0 --tags Key=a,Value=b
	fails_with InvalidPlacementGroup.Unknown

	run av2 ec2 delete-placement-group --group-name "$g-x"
	fails_with InvalidPlacementGroup.Unknown
	run av2 ec2 delete-placement-group --group-name "$g-c" --dry-run
	fails_with DryRunOperation
	for s in s p c; do
		run av2 ec2 delete-placement-group --group-name "$g-$s"
		[ "$status" -eq 0 ]
	done
	run av2 ec2 describe-placement-groups --filters "Name=group-name,Values=$g-*" \
		--query 'length(PlacementGroups)' --output text
	[ "$output" = 0 ]
	# The name is free again.
	run av2 ec2 create-placement-group --group-name "$g-c" --strategy cluster
	[ "$status" -eq 0 ]
	run av2 ec2 delete-placement-group --group-name "$g-c"
	[ "$status" -eq 0 ]
}

@test "run-instances into a spread group: one instance on this node, a second refused with nothing recorded, terminate frees the place at once; InUse; Unknown" {
	g=spread-$RANDOM$RANDOM
	run av2 ec2 create-placement-group --group-name "$g" --strategy spread \
		--query PlacementGroup.GroupId --output text
	[ "$status" -eq 0 ]
	gid=$output
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--placement GroupName=nope-$RANDOM
	fails_with InvalidPlacementGroup.Unknown
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano --count 2 \
		--placement "GroupName=$g"
	fails_with InsufficientInstanceCapacity
	[[ "$output" == *"spread group is full on this node"* ]]

	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--placement "GroupName=$g" \
		--query 'Instances[0].[InstanceId,Placement.GroupName,Placement.GroupId]' --output text
	[ "$status" -eq 0 ]
	read -r iid pgname pgid <<<"$output"
	[[ "$iid" == i-* ]] && [ "$pgname" = "$g" ] && [ "$pgid" = "$gid" ]
	n0=$(count_instances)
	v0=$(count_volumes)
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--placement "GroupName=$g"
	fails_with InsufficientInstanceCapacity
	[[ "$output" == *"spread group is full on this node"* ]]
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--placement "GroupId=$gid"
	fails_with InsufficientInstanceCapacity
	[ "$(count_instances)" = "$n0" ]
	[ "$(count_volumes)" = "$v0" ]
	run av2 ec2 describe-instances --filters "Name=placement-group-name,Values=$g" \
		--query 'Reservations[].Instances[].[InstanceId,Placement.GroupId]' --output text
	[ "$output" = "$iid	$gid" ]
	run av2 ec2 delete-placement-group --group-name "$g"
	fails_with InvalidPlacementGroup.InUse

	run av2 ec2 terminate-instances --instance-ids "$iid" \
		--query 'TerminatingInstances[0].CurrentState.Name' --output text
	[ "$output" = shutting-down ]
	# At once: no wait for the agent.
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--placement "GroupName=$g" --query 'Instances[0].InstanceId' --output text
	[ "$status" -eq 0 ]
	iid2=$output
	[ "$iid2" != "$iid" ]
	run av2 ec2 terminate-instances --instance-ids "$iid2"
	[ "$status" -eq 0 ]
	run av2 ec2 delete-placement-group --group-name "$g"
	[ "$status" -eq 0 ]
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--placement "GroupName=$g"
	fails_with InvalidPlacementGroup.Unknown
}

@test "boto3: partition groups by GroupId, PartitionNumber, placement-group-name filter; two racing launches into a spread group, one wins" {
	run /usr/bin/python3 - "$EC2_PORT" "$ROOT/tls/ca.pem" "$AMI" "$RANDOM$RANDOM" <<'EOF'
import sys, threading
import boto3, botocore
port, ca, ami, tag = sys.argv[1:5]
def client():
    return boto3.Session(profile_name="spx").client(
        "ec2", endpoint_url="https://127.0.0.1:%s" % port, verify=ca)
ec2 = client()
def code(fn, **kw):
    try:
        fn(**kw)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return None
part = ec2.create_placement_group(GroupName="part-" + tag, Strategy="partition",
                                  PartitionCount=3)["PlacementGroup"]
assert part["PartitionCount"] == 3 and part["State"] == "available", part
r = ec2.run_instances(ImageId=ami, InstanceType="t3.nano", MinCount=2, MaxCount=2,
                      Placement={"GroupId": part["GroupId"]})
got = sorted(i["Placement"]["PartitionNumber"] for i in r["Instances"])
assert got == [1, 2], got
assert all(i["Placement"]["GroupName"] == "part-" + tag for i in r["Instances"])
r2 = ec2.run_instances(ImageId=ami, InstanceType="t3.nano", MinCount=1, MaxCount=1,
                       Placement={"GroupName": "part-" + tag, "PartitionNumber": 3})
assert r2["Instances"][0]["Placement"]["PartitionNumber"] == 3, r2
assert code(ec2.run_instances, ImageId=ami, InstanceType="t3.nano", MinCount=1,
            MaxCount=1, Placement={"GroupName": "part-" + tag,
                                   "PartitionNumber": 4}) == "InvalidParameterValue"
ids = [i["InstanceId"] for i in r["Instances"] + r2["Instances"]]
seen = ec2.describe_instances(Filters=[{"Name": "placement-group-name",
                                        "Values": ["part-" + tag]}])
assert sorted(i["InstanceId"] for res in seen["Reservations"]
              for i in res["Instances"]) == sorted(ids), seen
# Two launches at once into a spread group: one place, one winner.
ec2.create_placement_group(GroupName="race-" + tag, Strategy="spread")
results = [None] * 4
def launch(k):
    c = client()
    try:
        x = c.run_instances(ImageId=ami, InstanceType="t3.nano", MinCount=1,
                            MaxCount=1, Placement={"GroupName": "race-" + tag})
        results[k] = x["Instances"][0]["InstanceId"]
    except botocore.exceptions.ClientError as e:
        results[k] = e.response["Error"]["Code"]
threads = [threading.Thread(target=launch, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
won = [x for x in results if x.startswith("i-")]
assert len(won) == 1, results
assert results.count("InsufficientInstanceCapacity") == 3, results
ids += won
assert code(ec2.delete_placement_group, GroupName="race-" + tag) == \
    "InvalidPlacementGroup.InUse"
ec2.terminate_instances(InstanceIds=ids)
ec2.delete_placement_group(GroupName="race-" + tag)
ec2.delete_placement_group(GroupName="part-" + tag)
print("ok")
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
}
