#!/usr/bin/env bats
# EC2 instances through real clients (aws CLI v2 at /usr/bin/aws; boto3
# from Debian's python3-boto3 with its waiters): the test image
# (scripts/mkimage.sh) imported with `spx admin images import`, a key pair
# made with create-key-pair, run-instances booting a real guest under
# TCG through the node agent and spx-vm, its console showing the boot and
# the user data's marker, SSH with the key through the forwarded port,
# the root volume in-use, the agent killed while it runs (nothing done
# twice), a guest whose QEMU dies (stopped with a reason), terminate
# leaving no process, socket or volume (or keeping the volume when
# DeleteOnTermination is false), and refusals (unknown image, type or
# key, a launch beyond the host's memory with nothing left reserved,
# unknown and twice-terminated instances).

load ../bats/helpers
load instance_helpers

F=$BATS_FILE_TMPDIR

setup_file() { inst_setup_file; }
teardown_file() { inst_teardown_file; }
setup() { inst_setup; }

@test "run-instances boots the image: running, console, user data, SSH; ClientToken; the agent restarts without doing it twice; terminate leaves nothing" {
	marker="spx-marker-$RANDOM$RANDOM"
	tok="tok-$RANDOM$RANDOM"
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.micro \
		--key-name k1 --user-data "#!/bin/sh
echo $marker" --client-token "$tok" \
		--tag-specifications 'ResourceType=instance,Tags=[{Key=Name,Value=first}]' \
		--query 'Instances[0].[InstanceId,State.Name,BlockDeviceMappings[0].Ebs.VolumeId,PrivateDnsName]' \
		--output text
	[ "$status" -eq 0 ]
	read -r IID st VOL DNS <<<"$output"
	[[ "$IID" == i-* ]]
	[ "$st" = pending ]
	[[ "$VOL" == vol-* ]]
	[ "$DNS" = "$IID.ec2.internal" ]
	# The ClientToken: the same launch answers the same instance; other
	# parameters with it are refused.
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.micro \
		--key-name k1 --user-data "#!/bin/sh
echo $marker" --client-token "$tok" \
		--tag-specifications 'ResourceType=instance,Tags=[{Key=Name,Value=first}]' \
		--query 'Instances[0].InstanceId' --output text
	[ "$status" -eq 0 ]
	[ "$output" = "$IID" ]
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--client-token "$tok"
	fails_with IdempotentParameterMismatch
	run av2 ec2 describe-instances --filters Name=client-token,Values="$tok" \
		Name=instance-type,Values=t3.micro Name=image-id,Values="$AMI" \
		Name=key-name,Values=k1 \
		--query 'Reservations[].Instances[].InstanceId' --output text
	[ "$output" = "$IID" ]
	wait_for 60 is "$IID" running
	# The commands the agent ran: the root volume from the image's
	# snapshot, then the guest.
	grep -q "run: .*spx-vol restore .*--id $VOL " "$ROOT/log/agent.log"
	grep -q "run: .*spx-vm start --root $ROOT $IID --volume $VOL --memory 1024M --cpus 2 --ssh-port [0-9]* --metadata " "$ROOT/log/agent.log"
	run av2 ec2 describe-volumes --volume-ids "$VOL" \
		--query 'Volumes[0].[State,Attachments[0].InstanceId,Attachments[0].State,Attachments[0].Device]' --output text
	[ "$output" = "in-use	$IID	attached	/dev/xvda" ]
	run av2 ec2 describe-instances --filters Name=tag:Name,Values=first \
		Name=instance-state-name,Values=running \
		--query 'Reservations[].Instances[].InstanceId' --output text
	[ "$output" = "$IID" ]
	wait_for 120 ready "$IID" || { console "$IID" >&2; false; }
	# As root, its QEMU runs as a user of its own (and yet the guest read
	# its metadata and user data, below).
	if [ "$(id -u)" = 0 ]; then
		quid=$(ps -o uid= -p "$(cat "$ROOT/run/vm/$IID/qemu.pid")" | tr -d ' ')
		[ "$quid" -gt 0 ]
		[ "$quid" = "$(cat "$ROOT/run/vm/$IID/user")" ]
	fi
	run console "$IID"
	[[ "$output" == *"spx-image: instance-id $IID"* ]]
	[[ "$output" == *"spx-image: hostname $DNS"* ]]
	[[ "$output" == *"$marker"* ]]
	run guest "$IID" hostname
	[ "$status" -eq 0 ]
	[ "$output" = "$DNS" ]
	# Its interface has the MAC its metadata names (cloud-init finds its
	# interface by network/interfaces/macs/MAC/), one of its own.
	run guest "$IID" 'cat /sys/class/net/eth0/address
		wget -qO- http://169.254.169.254/latest/meta-data/mac; echo
		wget -qO- http://169.254.169.254/latest/meta-data/network/interfaces/macs/; echo
		wget -qO- http://169.254.169.254/latest/meta-data/network/interfaces/macs/$(cat /sys/class/net/eth0/address)/local-ipv4s'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "${lines[0]}" == 02:??:??:??:??:?? ]]
	[ "${lines[0]}" != 02:00:00:00:00:00 ]
	[ "${lines[1]}" = "${lines[0]}" ]
	[ "${lines[2]}" = "${lines[0]}/" ]
	[ "${lines[3]}" = 169.254.169.15 ]
	grep -q "run: .*spx-vm start --root $ROOT $IID .* --mac ${lines[0]} " "$ROOT/log/agent.log"

	# The agent killed: its successor finds the guest running and
	# starts nothing again.
	old=$(cat "$ROOT/run/agent.pid")
	kill -9 "$old"
	wait_for 20 eval '[ -s "$ROOT/run/agent.pid" ] && [ "$(cat "$ROOT/run/agent.pid")" != "$old" ] && grep -q "is ready again" "$ROOT/log/supervise.log"'
	run av2 ec2 describe-instances --instance-ids "$IID" \
		--query 'Reservations[0].Instances[0].State.Name' --output text
	[ "$output" = running ]
	[ "$(grep -c "spx-vm start --root $ROOT $IID " "$ROOT/log/agent.log")" -eq 1 ]
	run guest "$IID" 'echo still here'
	[ "$output" = "still here" ]

	run av2 ec2 terminate-instances --instance-ids "$IID" \
		--query 'TerminatingInstances[0].[PreviousState.Name,CurrentState.Name]' --output text
	[ "$status" -eq 0 ]
	[ "$output" = "running	shutting-down" ]
	wait_for 60 is "$IID" terminated
	grep -q "run: .*spx-vm stop --root $ROOT --timeout 30 $IID" "$ROOT/log/agent.log"
	[ -z "$(qemu_of "$IID")" ]
	[ ! -e "$ROOT/run/vm/$IID/qmp.sock" ]
	wait_for 30 vol_gone "$VOL"
	# Twice: idempotent, as EC2.
	run av2 ec2 terminate-instances --instance-ids "$IID" \
		--query 'TerminatingInstances[0].[PreviousState.Name,CurrentState.Name]' --output text
	[ "$status" -eq 0 ]
	[ "$output" = "terminated	terminated" ]
	run av2 ec2 describe-instances --instance-ids "$IID" \
		--query 'Reservations[0].Instances[0].[StateReason.Code,BlockDeviceMappings[0].Ebs.Status]' --output text
	[ "$output" = "Client.UserInitiatedShutdown	detached" ]
}

@test "stop and start keep the root volume's data; reboot; a guest's own power-off; get-console-output, describe-instance-status, -attribute and modify-instance-attribute, modify-instance-metadata-options on a running guest, spx get vms" {
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--key-name k1 --disable-api-termination \
		--query 'Instances[0].InstanceId' --output text
	[ "$status" -eq 0 ]
	IID=$output
	wait_for 60 is "$IID" running
	wait_for 120 ready "$IID" || { console "$IID" >&2; false; }
	run av2 ec2 get-console-output --instance-id "$IID" --latest \
		--query Output --output text
	[ "$status" -eq 0 ]
	[[ "$output" == *"spx-image: instance-id $IID"* ]]
	[[ "$output" == *"spx-image: ready"* ]]
	run av2 ec2 describe-instance-status --instance-ids "$IID" \
		--query 'InstanceStatuses[0].[InstanceState.Name,InstanceStatus.Status,SystemStatus.Status]' --output text
	[ "$output" = "running	ok	ok" ]
	run av2 ec2 describe-instance-attribute --instance-id "$IID" \
		--attribute disableApiTermination --query DisableApiTermination.Value --output text
	[ "$output" = True ]
	run spx get vms --root "$ROOT" --json
	[ "$status" -eq 0 ]
	port=$(ssh_port "$IID")
	[[ "$output" == *"\"$IID\""*"127.0.0.1:$port"* ]]
	run av2 ec2 terminate-instances --instance-ids "$IID"
	fails_with OperationNotPermitted
	# IMDSv2 made required while it runs: the agent rewrites the guest's
	# metadata, which the metadata service reads for each connection, so
	# the next IMDSv1 GET is refused and a token works, with no restart.
	d=$ROOT/run/vm/$IID
	imds() { spx-vm imds "$d" < <(printf '%b' "$1"); }
	run imds 'GET /latest/meta-data/instance-id HTTP/1.0\r\n\r\n'
	[[ "$output" == *"200 OK"* && "$output" == *"$IID" ]]
	run av2 ec2 modify-instance-metadata-options --instance-id "$IID" \
		--http-tokens required --http-put-response-hop-limit 2 \
		--query 'InstanceMetadataOptions.[HttpTokens,HttpPutResponseHopLimit,State]' --output text
	[ "$status" -eq 0 ]
	[ "$output" = "required	2	pending" ]
	wait_for 30 grep -q "$IID: metadata options applied" "$ROOT/log/agent.log"
	run av2 ec2 describe-instances --instance-ids "$IID" \
		--query 'Reservations[0].Instances[0].MetadataOptions.[HttpTokens,State]' --output text
	[ "$output" = "required	applied" ]
	# Rewritten, it is still the guest's QEMU user's, who reads it.
	if [ "$(id -u)" = 0 ]; then
		u=$(cat "$d/user")
		[ "$(stat -c %u:%g:%a "$d/metadata.json")" = "$u:$u:400" ]
		run setpriv --reuid "$u" --regid "$u" --clear-groups spx-vm imds "$d" < <(printf 'GET /latest/meta-data/instance-id HTTP/1.0\r\n\r\n')
		[[ "$output" == *"401 Unauthorized"* ]]
	fi
	run imds 'GET /latest/meta-data/instance-id HTTP/1.0\r\n\r\n'
	[[ "$output" == *"401 Unauthorized"* ]]
	run imds 'PUT /latest/api/token HTTP/1.0\r\nX-aws-ec2-metadata-token-ttl-seconds: 60\r\n\r\n'
	[[ "$output" == *"200 OK"* ]]
	token=${lines[${#lines[@]}-1]}
	run imds "GET /latest/meta-data/instance-id HTTP/1.0\r\nX-aws-ec2-metadata-token: $token\r\n\r\n"
	[[ "$output" == *"200 OK"* && "$output" == *"$IID" ]]
	run av2 ec2 modify-instance-metadata-options --instance-id "$IID" \
		--http-put-response-hop-limit 65
	fails_with InvalidParameterValue
	run av2 ec2 modify-instance-metadata-options --instance-id i-0123456789abcdef0 \
		--http-tokens required
	fails_with InvalidInstanceID.NotFound
	run guest "$IID" 'echo kept >/root/data; sync; cat /root/data'
	[ "$output" = kept ]

	run av2 ec2 stop-instances --instance-ids "$IID" \
		--query 'StoppingInstances[0].[PreviousState.Name,CurrentState.Name]' --output text
	[ "$output" = "running	stopping" ]
	wait_for 60 is "$IID" stopped
	[ -z "$(qemu_of "$IID")" ]
	run av2 ec2 describe-instances --instance-ids "$IID" \
		--query 'Reservations[0].Instances[0].StateReason.Code' --output text
	[ "$output" = Client.UserInitiatedShutdown ]
	run av2 ec2 describe-instance-status --instance-ids "$IID" --include-all-instances \
		--query 'InstanceStatuses[0].[InstanceState.Name,InstanceStatus.Status]' --output text
	[ "$output" = "stopped	not-applicable" ]
	# Stopped, it takes another type (running, it does not).
	run av2 ec2 modify-instance-attribute --instance-id "$IID" --instance-type t3.micro
	[ "$status" -eq 0 ]
	run av2 ec2 start-instances --instance-ids "$IID" \
		--query 'StartingInstances[0].[PreviousState.Name,CurrentState.Name]' --output text
	[ "$output" = "stopped	pending" ]
	wait_for 60 is "$IID" running
	[ "$(grep -c "spx-vm start --root $ROOT $IID " "$ROOT/log/agent.log")" -eq 2 ]
	grep -q "spx-vm start --root $ROOT $IID .*--memory 1024M" "$ROOT/log/agent.log"
	run av2 ec2 modify-instance-attribute --instance-id "$IID" --instance-type t3.nano
	fails_with IncorrectInstanceState
	wait_for 120 eval '[ "$(console "$IID" | grep -c "^spx-image: ready")" -ge 2 ]'
	run guest "$IID" 'cat /root/data'
	[ "$output" = kept ]
	# A reboot: the same QEMU, the guest boots again.
	pid=$(qemu_of "$IID")
	run av2 ec2 reboot-instances --instance-ids "$IID"
	[ "$status" -eq 0 ]
	wait_for 120 eval '[ "$(console "$IID" | grep -c "^spx-image: ready")" -ge 3 ]'
	grep -q "run: .*spx-vm reboot --root $ROOT $IID" "$ROOT/log/agent.log"
	[ "$(qemu_of "$IID")" = "$pid" ]
	# The guest powers itself off: stopped, and said so.
	run guest "$IID" poweroff
	wait_for 60 is "$IID" stopped
	run av2 ec2 describe-instances --instance-ids "$IID" \
		--query 'Reservations[0].Instances[0].StateReason.Code' --output text
	[ "$output" = Client.InstanceInitiatedShutdown ]
	# Its QEMU said so (-no-shutdown), and was then told to quit.
	grep -q "$IID: the guest powered itself off" "$ROOT/log/agent.log"
	[ -z "$(qemu_of "$IID")" ]
	# Forced: QEMU quits at once, whatever the guest is doing.
	run av2 ec2 start-instances --instance-ids "$IID"
	[ "$status" -eq 0 ]
	wait_for 60 is "$IID" running
	run av2 ec2 stop-instances --instance-ids "$IID" --force
	[ "$status" -eq 0 ]
	wait_for 30 is "$IID" stopped
	grep -q "spx-vm stop --root $ROOT --timeout 30 --force $IID" "$ROOT/log/agent.log"
	[ -z "$(qemu_of "$IID")" ]
	run av2 ec2 terminate-instances --instance-ids "$IID"
	fails_with OperationNotPermitted
	run av2 ec2 modify-instance-attribute --instance-id "$IID" --no-disable-api-termination
	[ "$status" -eq 0 ]
	run av2 ec2 terminate-instances --instance-ids "$IID"
	[ "$status" -eq 0 ]
	wait_for 60 is "$IID" terminated
}

@test "an image whose boot mode is uefi boots under OVMF; the instance shows it; a guest whose kernel panics is stopped with a reason" {
	[ -r /usr/share/OVMF/OVMF_CODE_4M.fd ] || skip "no OVMF (Debian's ovmf)"
	U=$(spx admin images import --root "$ROOT" "$F/spx.img" --name spx-uefi --boot-mode uefi 2>/dev/null)
	[[ "$U" == ami-* ]]
	run av2 ec2 run-instances --image-id "$U" --instance-type t3.nano --key-name k1 \
		--query 'Instances[0].[InstanceId,BootMode]' --output text
	[ "$status" -eq 0 ]
	read -r IID mode <<<"$output"
	[ "$mode" = uefi ]
	wait_for 60 is "$IID" running
	grep -q "run: .*spx-vm start --root $ROOT $IID .*--boot-mode uefi" "$ROOT/log/agent.log"
	wait_for 180 ready "$IID" || { console "$IID" >&2; false; }
	# OVMF's boot manager started the disk's EFI loader; the kernel
	# sees EFI firmware.
	console "$IID" | grep -q 'BdsDxe: starting Boot[0-9A-F]* "UEFI Misc Device"'
	run guest "$IID" '[ -d /sys/firmware/efi ] && echo efi'
	[ "$output" = efi ]
	[ -s "$ROOT/run/vm/$IID/uefi-vars.fd" ]
	# The guest's kernel panics: pvpanic tells QEMU, which keeps it
	# stopped; the agent stops QEMU and the instance shows the fault
	# (without the device the guest hung, and showed running).
	run guest "$IID" 'sync; echo c >/proc/sysrq-trigger'
	wait_for 60 is "$IID" stopped
	run av2 ec2 describe-instances --instance-ids "$IID" \
		--query 'Reservations[0].Instances[0].StateReason.Code' --output text
	[ "$output" = Server.InternalError ]
	grep -q "$IID: QEMU stopped the guest (a fault)" "$ROOT/log/agent.log"
	grep -q "spx-vm stop --root $ROOT --timeout 30 --force $IID" "$ROOT/log/agent.log"
	console "$IID" | grep -q 'Kernel panic'
	[ -z "$(qemu_of "$IID")" ]
	av2 ec2 terminate-instances --instance-ids "$IID" >/dev/null
	wait_for 60 is "$IID" terminated
	av2 ec2 deregister-image --image-id "$U"
}

@test "boto3 with its waiters: a guest whose QEMU dies is stopped with a reason; DeleteOnTermination false keeps the root volume" {
	run /usr/bin/python3 - "$EC2_PORT" "$ROOT/tls/ca.pem" "$AMI" "$ROOT" <<'EOF'
import os, signal, sys, time
import boto3
port, ca, ami, root = sys.argv[1:5]
ec2 = boto3.Session(profile_name="spx").client(
    "ec2", endpoint_url="https://127.0.0.1:%s" % port, verify=ca)
fast = {"Delay": 1, "MaxAttempts": 120}
r = ec2.run_instances(ImageId=ami, InstanceType="t3.nano", MinCount=1,
                      MaxCount=1, KeyName="k1",
                      BlockDeviceMappings=[{"DeviceName": "/dev/xvda",
                          "Ebs": {"DeleteOnTermination": False,
                                  "VolumeSize": 2, "VolumeType": "gp3"}}],
                      TagSpecifications=[{"ResourceType": "volume",
                          "Tags": [{"Key": "role", "Value": "root"}]}],
                      MetadataOptions={"HttpTokens": "required"})
iid = r["Instances"][0]["InstanceId"]
vol = r["Instances"][0]["BlockDeviceMappings"][0]["Ebs"]["VolumeId"]
ec2.get_waiter("instance_running").wait(InstanceIds=[iid], WaiterConfig=fast)
v = ec2.describe_volumes(VolumeIds=[vol])["Volumes"][0]
assert (v["Size"], v["VolumeType"], v["State"]) == (2, "gp3", "in-use"), v
assert v["Tags"] == [{"Key": "role", "Value": "root"}], v
i = ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
assert i["MetadataOptions"]["HttpTokens"] == "required", i
assert i["MetadataOptions"]["State"] == "applied", i
# QEMU killed behind the cloud's back: the instance shows stopped, and
# the cloud's fault, even after the console (which the guest writes)
# told of a power-off.
pid = int(open(os.path.join(root, "run/vm", iid, "qemu.pid")).read())
with open(os.path.join(root, "run/vm", iid, "console.log"), "a") as f:
    f.write("[   42.000000] reboot: Power down\n")
os.kill(pid, signal.SIGKILL)
ec2.get_waiter("instance_stopped").wait(InstanceIds=[iid], WaiterConfig=fast)
i = ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
assert i["StateReason"]["Code"] == "Server.InternalError", i
ec2.terminate_instances(InstanceIds=[iid])
ec2.get_waiter("instance_terminated").wait(InstanceIds=[iid], WaiterConfig=fast)
deadline = time.time() + 30
while ec2.describe_volumes(VolumeIds=[vol])["Volumes"][0]["State"] != "available":
    assert time.time() < deadline, "the root volume did not become available"
    time.sleep(0.2)
v = ec2.describe_volumes(VolumeIds=[vol])["Volumes"][0]
assert v["Attachments"] == [], v
ec2.delete_volume(VolumeId=vol)
print("ok", iid)
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "ok i-"* ]]
	iid=${output#ok }
	[ -z "$(qemu_of "$iid")" ]
}

@test "refusals: unknown image, type and key; beyond the host's memory nothing is left reserved; unknown instances" {
	n0=$(count_instances)
	v0=$(count_volumes)
	run av2 ec2 run-instances --image-id ami-0123456789abcdef0 --instance-type t3.micro
	fails_with InvalidAMIID.NotFound
	run av2 ec2 run-instances --image-id ami-nope --instance-type t3.micro
	fails_with InvalidAMIID.Malformed
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.enormous
	fails_with InvalidParameterValue
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.micro --key-name nokey
	fails_with InvalidKeyPair.NotFound
	# 1 TiB of guest memory, and 40 guests of 8 GiB: more than the host.
	run av2 ec2 run-instances --image-id "$AMI" --instance-type r6i.32xlarge
	fails_with InsufficientInstanceCapacity
	[[ "$output" == *"MiB"* ]]
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.large --count 40
	fails_with InsufficientInstanceCapacity
	[ "$(count_instances)" = "$n0" ]
	[ "$(count_volumes)" = "$v0" ]
	run av2 ec2 terminate-instances --instance-ids i-0123456789abcdef0
	fails_with InvalidInstanceID.NotFound
	run av2 ec2 terminate-instances --instance-ids i-xyz
	fails_with InvalidInstanceID.Malformed
	run av2 ec2 describe-instances --instance-ids i-0123456789abcdef0
	fails_with InvalidInstanceID.NotFound
	run av2 ec2 run-instances --image-id "$AMI" --user-data "$(head -c 20000 /dev/zero | tr '\0' x)"
	fails_with InvalidParameterValue
	[ "$(count_instances)" = "$n0" ]
	[ "$(count_volumes)" = "$v0" ]
}
