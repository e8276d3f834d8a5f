#!/usr/bin/env bats
# AttachVolume and DetachVolume with real guests (aws CLI v2 at
# /usr/bin/aws, boto3 from Debian's python3-boto3 with its waiters): a
# volume hot-plugged into a running instance appears in the guest as a
# disk with the volume's id, both guests run on while the gateway and the
# agent are killed and come back, the guest's writes survive a detach and a
# re-attach to a second instance, a stopped instance keeps its volume and
# has it again when it starts, a terminated one lets it go (available,
# DeleteOnTermination false), and the refusals EC2 gives. CreateSnapshots
# of a running instance, also through boto3 and the npm SDK v3
# (snapset-sdk-v3.mjs). CreateImage of a running instance: an instance of
# the new image has what it wrote; its root volume, detached while it is
# stopped, mended from another instance and attached back, boots.

load ../bats/helpers
load instance_helpers

F=$BATS_FILE_TMPDIR

setup_file() { inst_setup_file; }
teardown_file() { inst_teardown_file; }
setup() { inst_setup; }
# The object store put back if a test failed while it was away.
teardown() {
	if [ -d "$ROOT/data/obj/d0.away" ]; then
		rm -f "$ROOT/data/obj/d0"
		mv "$ROOT/data/obj/d0.away" "$ROOT/data/obj/d0"
	fi
}

vstate() {
	av2 ec2 describe-volumes --volume-ids "$1" \
		--query 'Volumes[0].[State,Attachments[0].State]' --output text
}
# vis VOL "STATE	ATTACHMENT-STATE"
vis() { [ "$(vstate "$1")" = "$2" ]; }
# md IID PATH...: in the guest, its metadata at each path, each answer
# followed by a newline ("-" when the answer was not 200).
md() {
	local i=$1
	shift
	guest "$i" "for p in $*; do
		printf 'GET /latest/meta-data/%s HTTP/1.0\\r\\n\\r\\n' \$p |
			nc -w 2 169.254.169.254 80 | tr -d '\\r' >/tmp/md
		if head -n 1 /tmp/md | grep -q ' 200 '; then
			sed '1,/^\$/d' /tmp/md; echo
		else echo -; fi
	done"
}
has_disk() { # IID VOL: the guest sees the volume's disk
	[ "$(guest "$1" 'cat /sys/block/vdb/serial 2>/dev/null')" = "${2/-/}" ]
}

@test "attach-volume plugs a volume into a running guest; the data stays through detach and re-attach to another; refusals; stop, start and terminate" {
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--key-name k1 --count 2 \
		--query 'Instances[].[InstanceId,Placement.AvailabilityZone]' --output text
	[ "$status" -eq 0 ]
	I1=$(echo "$output" | sed -n 1p | cut -f1)
	I2=$(echo "$output" | sed -n 2p | cut -f1)
	AZ=$(echo "$output" | sed -n 1p | cut -f2)
	[[ "$I1" == i-* && "$I2" == i-* ]]
	ROOT1=$(av2 ec2 describe-instances --instance-ids "$I1" \
		--query 'Reservations[0].Instances[0].BlockDeviceMappings[0].Ebs.VolumeId' --output text)
	V=$(av2 ec2 create-volume --availability-zone "$AZ" --size 1 \
		--volume-type gp3 --query VolumeId --output text)
	W=$(av2 ec2 create-volume --availability-zone "$AZ" --size 1 \
		--query VolumeId --output text)
	wait_for 30 vis "$V" "available	None"
	wait_for 30 vis "$W" "available	None"
	wait_for 60 is "$I1" running
	wait_for 60 is "$I2" running
	wait_for 120 ready "$I1" || { console "$I1" >&2; false; }
	wait_for 120 ready "$I2" || { console "$I2" >&2; false; }

	# Two clients attach one volume to both guests at once: one wins,
	# the other is told VolumeInUse; the winner's attachment is whole.
	run /usr/bin/python3 - "$EC2_PORT" "$ROOT/tls/ca.pem" "$W" "$I1" "$I2" <<-'EOF'
		import sys, threading, boto3, botocore
		port, ca, vol, i1, i2 = sys.argv[1:6]
		go = threading.Barrier(2)
		got = {}
		def attach(inst):
		    ec2 = boto3.Session(profile_name="spx").client(
		        "ec2", endpoint_url="https://127.0.0.1:%s" % port, verify=ca)
		    go.wait()
		    try:
		        got[inst] = ec2.attach_volume(VolumeId=vol, InstanceId=inst,
		                                      Device="/dev/sdj")["State"]
		    except botocore.exceptions.ClientError as e:
		        got[inst] = e.response["Error"]["Code"]
		ts = [threading.Thread(target=attach, args=(i,)) for i in (i1, i2)]
		[t.start() for t in ts]
		[t.join() for t in ts]
		print(" ".join(sorted(got.values())))
		print([i for i in got if got[i] == "attaching"][0])
	EOF
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "VolumeInUse attaching" ] || { echo "$output"; false; }
	winner=${lines[1]}
	wait_for 60 vis "$W" "in-use	attached"
	run av2 ec2 describe-volumes --volume-ids "$W" \
		--query 'Volumes[0].Attachments[].[InstanceId,Device]' --output text
	[ "$output" = "$winner	/dev/sdj" ]
	av2 ec2 detach-volume --volume-id "$W" >/dev/null
	wait_for 60 vis "$W" "available	None"

	run av2 ec2 attach-volume --volume-id "$V" --instance-id "$I1" \
		--device /dev/sdf --query '[State,Device,InstanceId,VolumeId]' --output text
	[ "$status" -eq 0 ]
	[ "$output" = "attaching	/dev/sdf	$I1	$V" ]
	wait_for 60 vis "$V" "in-use	attached"
	grep -q "run: .*spx-vm attach --root $ROOT $I1 $V" "$ROOT/log/agent.log"
	run av2 ec2 describe-instances --instance-ids "$I1" \
		--query 'Reservations[0].Instances[0].BlockDeviceMappings[].[DeviceName,Ebs.VolumeId,Ebs.Status]' --output text
	[ "$output" = "/dev/xvda	$ROOT1	attached
/dev/sdf	$V	attached" ]
	run av2 ec2 describe-instances --filters Name=block-device-mapping.volume-id,Values="$V" \
		--query 'Reservations[].Instances[].InstanceId' --output text
	[ "$output" = "$I1" ]
	wait_for 30 has_disk "$I1" "$V"
	marker="spx-data-$RANDOM$RANDOM"
	run guest "$I1" "printf $marker | dd of=/dev/vdb conv=fsync 2>/dev/null"
	[ "$status" -eq 0 ]
	# Grown while attached: optimizing until the guest's disk has grown
	# too; the guest sees 2 GiB (512-byte sectors) without a restart.
	run av2 ec2 modify-volume --volume-id "$V" --size 2 --query VolumeModification.ModificationState --output text
	[ "$output" = modifying ]
	mstate() { [ "$(av2 ec2 describe-volumes-modifications --volume-ids "$V" --query 'VolumesModifications[0].[ModificationState,Progress]' --output text)" = "completed	100" ]; }
	wait_for 60 mstate
	grep -q "run: .*spx-vm resize --root $ROOT $I1 $V" "$ROOT/log/agent.log"
	wait_for 30 eval '[ "$(guest "$I1" "cat /sys/block/vdb/size")" = 4194304 ]'
	[ "$(av2 ec2 describe-volumes --volume-ids "$V" --query 'Volumes[0].Size' --output text)" = 2 ]

	# The gateway and the agent killed while both guests run: they come
	# back, the guests run on, visible and attached as they were.
	gw=$(cat "$ROOT/run/gw.pid")
	ag=$(cat "$ROOT/run/agent.pid")
	kill -9 "$gw" "$ag"
	wait_for 30 eval 'grep -q "gw (pid [0-9]*) is ready again" "$ROOT/log/supervise.log" && grep -q "agent (pid [0-9]*) is ready again" "$ROOT/log/supervise.log"'
	[ "$(cat "$ROOT/run/gw.pid")" != "$gw" ]
	run av2 ec2 describe-instances --instance-ids "$I1" "$I2" \
		--query 'Reservations[].Instances[].State.Name' --output text
	[ "$output" = "running	running" ]
	# Launched together: one reservation holding both.
	run av2 ec2 describe-instances --instance-ids "$I1" "$I2" \
		--query 'Reservations[].length(Instances)' --output text
	[ "$output" = 2 ]
	vis "$V" "in-use	attached"
	run guest "$I2" 'echo still here'
	[ "$output" = "still here" ]
	has_disk "$I1" "$V"
	[ "$(grep -c "spx-vm start --root $ROOT $I1 " "$ROOT/log/agent.log")" -eq 1 ]

	# A second volume takes the next port: the guest sees both (QEMU put
	# it beside the first, where no guest looks, until slot 0 was named).
	run av2 ec2 attach-volume --volume-id "$W" --instance-id "$I1" --device /dev/sdg
	[ "$status" -eq 0 ]
	wait_for 60 vis "$W" "in-use	attached"
	wait_for 30 eval 'guest "$I1" "cat /sys/block/vd*/serial" | grep -q "${W/-/}"'
	av2 ec2 detach-volume --volume-id "$W" >/dev/null
	wait_for 60 vis "$W" "available	None"
	run guest "$I1" 'cat /sys/block/vd*/serial'
	[[ "$output" != *"${W/-/}"* && "$output" == *"${V/-/}"* ]]

	# Refusals, each changing nothing.
	run av2 ec2 attach-volume --volume-id "$V" --instance-id "$I2" --device /dev/sdf
	fails_with VolumeInUse
	run av2 ec2 attach-volume --volume-id "$W" --instance-id "$I1" --device /dev/sdf
	fails_with InvalidParameterValue
	[[ "$output" == *"Attachment point /dev/sdf is already in use"* ]]
	for dev in /dev/hda /dev/sda /dev/sdf1 sdg /dev/sd.. "/dev/sd%00"; do
		run av2 ec2 attach-volume --volume-id "$W" --instance-id "$I1" --device "$dev"
		fails_with InvalidParameterValue
	done
	run av2 ec2 attach-volume --volume-id vol-0123456789abcdef0 --instance-id "$I1" --device /dev/sdg
	fails_with InvalidVolume.NotFound
	run av2 ec2 attach-volume --volume-id "$W" --instance-id i-0123456789abcdef0 --device /dev/sdg
	fails_with InvalidInstanceID.NotFound
	run av2 ec2 attach-volume --volume-id "$W" --instance-id "i-../x" --device /dev/sdg
	fails_with InvalidInstanceID.Malformed
	run av2 ec2 detach-volume --volume-id "$ROOT1"
	fails_with IncorrectState
	run av2 ec2 detach-volume --volume-id "$V" --instance-id "$I2"
	fails_with InvalidAttachment.NotFound
	run av2 ec2 detach-volume --volume-id "$W"
	fails_with IncorrectState
	run av2 ec2 delete-volume --volume-id "$V"
	fails_with VolumeInUse
	vis "$V" "in-use	attached"
	vis "$W" "available	None"

	# Detached with boto3 and its waiter: the guest lets the disk go.
	run /usr/bin/python3 - "$EC2_PORT" "$ROOT/tls/ca.pem" "$V" <<-'EOF'
		import sys, boto3
		port, ca, vol = sys.argv[1:4]
		ec2 = boto3.Session(profile_name="spx").client(
		    "ec2", endpoint_url="https://127.0.0.1:%s" % port, verify=ca)
		print(ec2.detach_volume(VolumeId=vol)["State"])
		ec2.get_waiter("volume_available").wait(
		    VolumeIds=[vol], WaiterConfig={"Delay": 1, "MaxAttempts": 90})
		print(ec2.describe_volumes(VolumeIds=[vol])["Volumes"][0]["Attachments"])
	EOF
	[ "$status" -eq 0 ]
	[ "$output" = "detaching
[]" ]
	run guest "$I1" '[ -b /dev/vdb ]'
	[ "$status" -ne 0 ]

	# To the second instance: the data is there.
	run av2 ec2 attach-volume --volume-id "$V" --instance-id "$I2" --device /dev/sdg
	[ "$status" -eq 0 ]
	wait_for 60 vis "$V" "in-use	attached"
	wait_for 30 has_disk "$I2" "$V"
	run guest "$I2" "head -c ${#marker} /dev/vdb"
	[ "$output" = "$marker" ]

	# Stopped, the instance keeps it (attached); started, it has it again.
	run av2 ec2 stop-instances --instance-ids "$I2" --force
	[ "$status" -eq 0 ]
	wait_for 60 is "$I2" stopped
	vis "$V" "in-use	attached"
	# A volume attached while it is stopped is plugged when it starts.
	run av2 ec2 attach-volume --volume-id "$W" --instance-id "$I2" --device /dev/sdh
	[ "$status" -eq 0 ]
	wait_for 30 vis "$W" "in-use	attached"
	run av2 ec2 start-instances --instance-ids "$I2"
	[ "$status" -eq 0 ]
	wait_for 60 is "$I2" running
	grep -q "run: .*spx-vm start --root $ROOT $I2 .* --disks $(printf '%s\n' "$V" "$W" | sort | paste -sd,)" "$ROOT/log/agent.log"
	# The console keeps the first boot's lines: the second's "ready".
	wait_for 120 eval '[ "$(console "$I2" | grep -c "^spx-image: ready")" -ge 2 ]' ||
		{ console "$I2" >&2; false; }
	run guest "$I2" 'for s in /sys/block/vd*/serial; do cat $s; echo; done'
	[[ "$output" == *"${V/-/}"* && "$output" == *"${W/-/}"* ]]
	# Its metadata names the data volumes it started with; the first
	# instance's, whose volume came after it started, names none (EC2's
	# block-device-mapping/ebsN).
	run md "$I2" block-device-mapping/ block-device-mapping/ebs1 block-device-mapping/ebs2
	[ "$output" = "ami
ebs1
ebs2
root
sdg
sdh" ] || { echo "$output"; false; }
	run md "$I1" block-device-mapping/ block-device-mapping/ebs1
	[ "$output" = "ami
root
-" ] || { echo "$output"; false; }

	# CreateSnapshots of the second instance while its guest writes a
	# count to V's disk and then (that write flushed) to W's: the set is
	# one moment of the three volumes, so W's snapshot holds V's count or
	# the one before, never a later one.
	run guest "$I2" "rm -f /tmp/stop /tmp/n; V=${V/-/} W=${W/-/} setsid sh -c '
		for b in /sys/block/vd*; do
			[ \"\$(cat \$b/serial)\" = \"\$V\" ] && v=\${b##*/}
			[ \"\$(cat \$b/serial)\" = \"\$W\" ] && w=\${b##*/}
		done
		i=0
		while [ ! -e /tmp/stop ]; do i=\$((i + 1))
			printf %0512d \$i | dd of=/dev/\$v bs=512 count=1 conv=fsync 2>/dev/null
			printf %0512d \$i | dd of=/dev/\$w bs=512 count=1 conv=fsync 2>/dev/null
			echo \$i >/tmp/n
		done' </dev/null >/dev/null 2>&1 &"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	counted() { local n; n=$(guest "$I2" 'cat /tmp/n 2>/dev/null') && [ "${n:-0}" -ge "$1" ]; }
	wait_for 60 counted 10
	ROOT2=$(av2 ec2 describe-instances --instance-ids "$I2" \
		--query 'Reservations[0].Instances[0].BlockDeviceMappings[0].Ebs.VolumeId' --output text)
	av2 ec2 create-tags --resources "$V" --tags Key=from,Value=vol Key=k,Value=vol
	run av2 ec2 create-snapshots --instance-specification InstanceId="$I2" \
		--description "set of $I2" --copy-tags-from-source volume \
		--tag-specifications 'ResourceType=snapshot,Tags=[{Key=k,Value=set}]' \
		--query 'Snapshots[].[VolumeId,State,Progress,Description]' --output text
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	exp=$(for v in $(printf '%s\n' "$ROOT2" "$V" "$W" | sort); do
		printf '%s\tpending\t0%%\tset of %s\n' "$v" "$I2"; done)
	[ "$output" = "$exp" ] || { echo "$output"; false; }
	run av2 ec2 describe-snapshots --filters Name=description,Values="set of $I2" \
		--query 'Snapshots[].[VolumeId,SnapshotId]' --output text
	[ "${#lines[@]}" -eq 3 ]
	SV=$(echo "$output" | grep "^$V" | cut -f2)
	SW=$(echo "$output" | grep "^$W" | cut -f2)
	SR=$(echo "$output" | grep "^$ROOT2" | cut -f2)
	setdone() { [ "$(av2 ec2 describe-snapshots --snapshot-ids "$SV" "$SW" "$SR" --query 'Snapshots[].[State,Progress]' --output text | sort -u)" = "completed	100%" ]; }
	wait_for 120 setdone
	guest "$I2" 'touch /tmp/stop'
	# One spx-vol run took the three, at one moment.
	grep -q "run: .*spx-vol snapshot --root $ROOT --progress --id [a-z0-9,-]* vol-" "$ROOT/log/agent.log"
	[ "$(grep -c "run: .*spx-vol snapshot .*$SV" "$ROOT/log/agent.log")" -eq 1 ]
	grep "run: .*spx-vol snapshot .*$SV" "$ROOT/log/agent.log" | grep -q "$SW"
	count_of() { # SNAP: the count at the start of its volume
		local r
		r=$(spx-vol restore --root "$ROOT" --eager "$1") &&
			spx-vol cat --root "$ROOT" "$r" | head -c 512 | sed 's/^0*//' &&
			spx-vol rm --root "$ROOT" "$r" >/dev/null
	}
	cv=$(count_of "$SV")
	cw=$(count_of "$SW")
	n=$(guest "$I2" 'cat /tmp/n')
	echo "# CreateSnapshots: V holds $cv, W $cw; the guest wrote $n" >&3
	[ "$cv" -ge 10 ] && [ "$n" -gt "$cv" ]
	[ "$cw" -eq "$cv" ] || [ "$cw" -eq $((cv - 1)) ]
	# Tags: the volume's copied, those asked for win; the set's others.
	run av2 ec2 describe-snapshots --snapshot-ids "$SV" \
		--query 'Snapshots[0].Tags[].[Key,Value]' --output text
	[ "$(echo "$output" | sort)" = "from	vol
k	set" ] || { echo "$output"; false; }
	# Without the root volume and W: V's alone.
	run av2 ec2 create-snapshots --instance-specification InstanceId="$I2",ExcludeBootVolume=true,ExcludeDataVolumeIds="$W" \
		--query 'Snapshots[].VolumeId' --output text
	[ "$output" = "$V" ] || { echo "$output"; false; }
	SV2=$(av2 ec2 describe-snapshots --filters Name=volume-id,Values="$V" \
		--query "Snapshots[?SnapshotId!='$SV'].SnapshotId" --output text)
	# Refused, nothing recorded: the root volume among the data volumes,
	# a volume not attached, an unknown or malformed instance, another
	# source of tags, nothing left.
	n=$(av2 ec2 describe-snapshots --owner-ids self --query 'length(Snapshots)' --output text)
	run av2 ec2 create-snapshots --instance-specification InstanceId="$I2",ExcludeDataVolumeIds="$ROOT2"
	fails_with InvalidParameterValue
	run av2 ec2 create-snapshots --instance-specification InstanceId="$I2",ExcludeDataVolumeIds="$ROOT1"
	fails_with InvalidParameterValue
	run av2 ec2 create-snapshots --instance-specification InstanceId="$I2",ExcludeDataVolumeIds="vol-../x"
	fails_with InvalidVolumeID.Malformed
	run av2 ec2 create-snapshots --instance-specification InstanceId=i-0123456789abcdef0
	fails_with InvalidInstanceID.NotFound
	run av2 ec2 create-snapshots --instance-specification InstanceId="i-../x"
	fails_with InvalidInstanceID.Malformed
	run av2 ec2 create-snapshots --instance-specification InstanceId="$I2" --copy-tags-from-source image
	fails_with InvalidParameterValue
	run av2 ec2 create-snapshots --instance-specification InstanceId="$I2",ExcludeBootVolume=true,ExcludeDataVolumeIds="$V","$W"
	fails_with InvalidParameterValue
	[ "$(av2 ec2 describe-snapshots --owner-ids self --query 'length(Snapshots)' --output text)" = "$n" ]
	wait_for 60 eval '[ "$(av2 ec2 describe-snapshots --snapshot-ids "$SV2" --query "Snapshots[0].State" --output text)" = completed ]'
	# The object store away: the set fails, waits and is tried again as
	# one (one member leads every try: none starts it before its time),
	# and completes once the store is back.
	mv "$ROOT/data/obj/d0" "$ROOT/data/obj/d0.away"
	touch "$ROOT/data/obj/d0"
	run av2 ec2 create-snapshots --instance-specification InstanceId="$I2",ExcludeBootVolume=true \
		--query 'Snapshots[].SnapshotId' --output text
	[ "$status" -eq 0 ]
	read -r SA SB <<<"$output"
	tries() { grep -c -e "$SA: to be tried again" -e "$SB: to be tried again" "$ROOT/log/agent.log"; }
	wait_for 60 eval '[ "$(tries)" -ge 2 ]'
	[ "$(av2 ec2 describe-snapshots --snapshot-ids "$SA" "$SB" --query 'Snapshots[].State' --output text)" = "pending	pending" ]
	[ "$(grep -c "$SA: to be tried again" "$ROOT/log/agent.log")" -eq 0 ] ||
		[ "$(grep -c "$SB: to be tried again" "$ROOT/log/agent.log")" -eq 0 ]
	rm "$ROOT/data/obj/d0"
	mv "$ROOT/data/obj/d0.away" "$ROOT/data/obj/d0"
	wait_for 90 eval '[ "$(av2 ec2 describe-snapshots --snapshot-ids "$SA" "$SB" --query "Snapshots[].State" --output text)" = "completed	completed" ]'
	# boto3, and the agent killed as the set begins: the supervisor
	# starts it again, and every run that takes the set takes it whole.
	run /usr/bin/python3 - "$EC2_PORT" "$ROOT/tls/ca.pem" "$I2" <<-'EOF'
		import sys, boto3
		port, ca, inst = sys.argv[1:4]
		ec2 = boto3.Session(profile_name="spx").client(
		    "ec2", endpoint_url="https://127.0.0.1:%s" % port, verify=ca)
		r = ec2.create_snapshots(
		    InstanceSpecification={"InstanceId": inst, "ExcludeBootVolume": True},
		    Description="boto3 set",
		    TagSpecifications=[{"ResourceType": "snapshot",
		                        "Tags": [{"Key": "k", "Value": "b3"}]}])
		print(" ".join(s["SnapshotId"] + ":" + s["State"] for s in r["Snapshots"]))
	EOF
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	ag=$(cat "$ROOT/run/agent.pid")
	kill -9 "$ag"
	read -r SC SD <<<"$output"
	[[ "$SC" == snap-*:pending && "$SD" == snap-*:pending ]]
	SC=${SC%:*} SD=${SD%:*}
	run /usr/bin/python3 - "$EC2_PORT" "$ROOT/tls/ca.pem" "$SC" "$SD" <<-'EOF'
		import sys, boto3
		port, ca, a, b = sys.argv[1:5]
		ec2 = boto3.Session(profile_name="spx").client(
		    "ec2", endpoint_url="https://127.0.0.1:%s" % port, verify=ca)
		ec2.get_waiter("snapshot_completed").wait(
		    SnapshotIds=[a, b], WaiterConfig={"Delay": 1, "MaxAttempts": 120})
		for s in ec2.describe_snapshots(SnapshotIds=[a, b])["Snapshots"]:
		    print(s["State"], s["Progress"], s["Description"], s["Tags"][0]["Value"])
	EOF
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "completed 100% boto3 set b3
completed 100% boto3 set b3" ]
	grep -q "agent (pid $ag) killed by SIGKILL" "$ROOT/log/supervise.log"
	grep -q "run: .*spx-vol snapshot .*$SC" "$ROOT/log/agent.log"
	! grep "run: .*spx-vol snapshot .*$SC" "$ROOT/log/agent.log" | grep -v "$SD"
	! grep "run: .*spx-vol snapshot .*$SD" "$ROOT/log/agent.log" | grep -v "$SC"
	# The npm SDK v3: the set, its waiter, its error for an unknown
	# instance (where scripts/deps.sh installed it; the rest goes on).
	SG= SH=
	if [ -d "$SPX_TOP/tests/clients/node_modules/@aws-sdk/client-ec2" ]; then
		run env NODE_EXTRA_CA_CERTS="$ROOT/tls/ca.pem" \
			node "$SPX_TOP/tests/clients/snapset-sdk-v3.mjs" "https://127.0.0.1:$EC2_PORT" "$I2" "$V" "$W"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		read -r SG SH <<<"${lines[-1]}"
		[[ "$SG" == snap-* && "$SH" == snap-* ]] || { echo "$output"; false; }
	else
		echo "# npm SDK v3 not installed (scripts/deps.sh): its CreateSnapshots step left out" >&3
	fi
	# A member deleted as the set begins: the other is taken (and soon),
	# the deleted one is gone.
	run av2 ec2 create-snapshots --instance-specification InstanceId="$I2",ExcludeBootVolume=true \
		--query 'Snapshots[].SnapshotId' --output text
	[ "$status" -eq 0 ]
	read -r SE SF <<<"$output"
	av2 ec2 delete-snapshot --snapshot-id "$SF"
	wait_for 20 eval '[ "$(av2 ec2 describe-snapshots --snapshot-ids "$SE" --query "Snapshots[0].State" --output text)" = completed ]'
	run av2 ec2 describe-snapshots --snapshot-ids "$SF"
	fails_with InvalidSnapshot.NotFound
	for s in "$SV" "$SW" "$SR" "$SV2" "$SA" "$SB" "$SC" "$SD" "$SE" $SG $SH; do av2 ec2 delete-snapshot --snapshot-id "$s"; done

	# CreateImage of the running first instance: its root volume's
	# snapshot (taken while it runs), an image pending until it is
	# stored; an instance of the image has what the first one wrote.
	run guest "$I1" 'echo imaged-from-running >/root/mark && sync'
	[ "$status" -eq 0 ]
	run av2 ec2 create-image --instance-id "$I1" --name "from $I1" \
		--description "made by attach.bats" --no-reboot \
		--tag-specifications 'ResourceType=image,Tags=[{Key=k,Value=img}]' \
		'ResourceType=snapshot,Tags=[{Key=k,Value=snap}]' \
		--query ImageId --output text
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	NEW_AMI=$output
	[[ "$NEW_AMI" == ami-* ]]
	run av2 ec2 create-image --instance-id "$I1" --name "from $I1"
	fails_with InvalidAMIName.Duplicate
	run av2 ec2 create-image --instance-id i-0123456789abcdef0 --name other
	fails_with InvalidInstanceID.NotFound
	run av2 ec2 create-image --instance-id "$I1" --name "x"
	fails_with InvalidAMIName.Malformed
	run av2 ec2 create-image --instance-id "$I1" --name other \
		--tag-specifications 'ResourceType=volume,Tags=[{Key=k,Value=v}]'
	fails_with InvalidParameterValue
	run /usr/bin/python3 - "$EC2_PORT" "$ROOT/tls/ca.pem" "$NEW_AMI" <<-'EOF'
		import sys, boto3
		port, ca, ami = sys.argv[1:4]
		ec2 = boto3.Session(profile_name="spx").client(
		    "ec2", endpoint_url="https://127.0.0.1:%s" % port, verify=ca)
		ec2.get_waiter("image_available").wait(
		    ImageIds=[ami], WaiterConfig={"Delay": 1, "MaxAttempts": 120})
		im = ec2.describe_images(ImageIds=[ami])["Images"][0]
		snap = im["BlockDeviceMappings"][0]["Ebs"]["SnapshotId"]
		s = ec2.describe_snapshots(SnapshotIds=[snap])["Snapshots"][0]
		print(im["State"], im["Name"], im["Description"], im["Tags"][0]["Value"])
		print(s["State"], s["Description"].startswith("Created by CreateImage"), s["Tags"][0]["Value"])
	EOF
	[ "$status" -eq 0 ]
	[ "$output" = "available from $I1 made by attach.bats img
completed True snap" ]
	run av2 ec2 run-instances --image-id "$NEW_AMI" --instance-type t3.nano \
		--key-name k1 --query 'Instances[0].InstanceId' --output text
	[ "$status" -eq 0 ]
	I3=$output
	wait_for 60 is "$I3" running
	wait_for 120 ready "$I3" || { console "$I3" >&2; false; }
	run guest "$I3" 'cat /root/mark'
	[ "$output" = imaged-from-running ]

	# Mending a root filesystem from another instance, as operators do:
	# the root volume is detached only while its instance is stopped,
	# which then does not start without one; attached to the first
	# instance as a data volume, written there; attached back at the
	# root device, the instance boots from it with what was written.
	R3=$(av2 ec2 describe-instances --instance-ids "$I3" \
		--query 'Reservations[0].Instances[0].BlockDeviceMappings[0].Ebs.VolumeId' --output text)
	RD=$(av2 ec2 describe-instances --instance-ids "$I3" \
		--query 'Reservations[0].Instances[0].RootDeviceName' --output text)
	run av2 ec2 detach-volume --volume-id "$R3"
	fails_with IncorrectState
	run av2 ec2 stop-instances --instance-ids "$I3"
	[ "$status" -eq 0 ]
	wait_for 60 is "$I3" stopped
	run av2 ec2 detach-volume --volume-id "$R3" --instance-id "$I3" \
		--query State --output text
	[ "$output" = detaching ] || { echo "$output"; false; }
	wait_for 30 vis "$R3" "available	None"
	[ "$(av2 ec2 describe-instances --instance-ids "$I3" \
		--query 'length(Reservations[0].Instances[0].BlockDeviceMappings)' --output text)" = 0 ]
	run av2 ec2 start-instances --instance-ids "$I3"
	fails_with IncorrectInstanceState
	[ "$(istate "$I3")" = stopped ]
	run av2 ec2 attach-volume --volume-id "$R3" --instance-id "$I1" --device /dev/sdf
	[ "$status" -eq 0 ]
	wait_for 60 vis "$R3" "in-use	attached"
	wait_for 30 has_disk "$I1" "$R3"
	run guest "$I1" 'mkdir -p /mnt/r && mount /dev/vdb2 /mnt/r &&
		echo mended-from-elsewhere >/mnt/r/root/mended && umount /mnt/r && sync'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run av2 ec2 detach-volume --volume-id "$R3"
	[ "$status" -eq 0 ]
	wait_for 60 vis "$R3" "available	None"
	# Back at the root device (another device would make it a data
	# volume); a second one there is refused.
	run av2 ec2 attach-volume --volume-id "$R3" --instance-id "$I3" --device "$RD" \
		--query State --output text
	[ "$output" = attached ] || { echo "$output"; false; }
	vis "$R3" "in-use	attached"
	run av2 ec2 attach-volume --volume-id "$W" --instance-id "$I3" --device "$RD"
	fails_with InvalidParameterValue
	run av2 ec2 start-instances --instance-ids "$I3"
	[ "$status" -eq 0 ]
	wait_for 60 is "$I3" running
	wait_for 120 eval '[ "$(console "$I3" | grep -c "^spx-image: ready")" -ge 2 ]' ||
		{ console "$I3" >&2; false; }
	run guest "$I3" 'cat /root/mended /root/mark'
	[ "$output" = "mended-from-elsewhere
imaged-from-running" ] || { echo "$output"; false; }
	# Attached by hand, it outlives the instance (DeleteOnTermination
	# false, as EC2 has it).
	[ "$(av2 ec2 describe-instances --instance-ids "$I3" \
		--query 'Reservations[0].Instances[0].BlockDeviceMappings[0].Ebs.[VolumeId,DeleteOnTermination]' --output text)" = "$R3	False" ]
	run av2 ec2 terminate-instances --instance-ids "$I3"
	[ "$status" -eq 0 ]

	# Terminated: the data volumes are let go, and stay.
	run av2 ec2 terminate-instances --instance-ids "$I1" "$I2"
	[ "$status" -eq 0 ]
	wait_for 60 is "$I2" terminated
	wait_for 60 is "$I1" terminated
	wait_for 30 vis "$V" "available	None"
	wait_for 30 vis "$W" "available	None"
	[ -z "$(qemu_of "$I1")$(qemu_of "$I2")" ]
	run av2 ec2 attach-volume --volume-id "$V" --instance-id "$I2" --device /dev/sdf
	fails_with IncorrectInstanceState
	wait_for 60 is "$I3" terminated
	wait_for 30 vis "$R3" "available	None"
	av2 ec2 delete-volume --volume-id "$R3"
	snap=$(av2 ec2 describe-images --image-ids "$NEW_AMI" \
		--query 'Images[0].BlockDeviceMappings[0].Ebs.SnapshotId' --output text)
	av2 ec2 deregister-image --image-id "$NEW_AMI"
	av2 ec2 delete-snapshot --snapshot-id "$snap"
	av2 ec2 delete-volume --volume-id "$V"
	av2 ec2 delete-volume --volume-id "$W"
	wait_for 30 vol_gone "$V"
	wait_for 30 vol_gone "$W"
}

@test "another account's instances, volumes and placement groups do not exist for it" {
	read -r oak osk < <(spx admin account create --root "$ROOT" --name inst-other-$RANDOM --json |
		/usr/bin/python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"])')
	other() ( unset AWS_PROFILE; AWS_ACCESS_KEY_ID=$oak AWS_SECRET_ACCESS_KEY=$osk awscli2 --ca-bundle "$ROOT/tls/ca.pem" --region us-east-1 --endpoint-url "https://127.0.0.1:$EC2_PORT" "$@" )
	av2 ec2 create-placement-group --group-name mine-pg --strategy spread >/dev/null
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.nano \
		--placement GroupName=mine-pg \
		--query 'Instances[0].[InstanceId,Placement.AvailabilityZone]' --output text
	[ "$status" -eq 0 ]
	read -r I AZ <<<"$output"
	ROOTV=$(av2 ec2 describe-instances --instance-ids "$I" \
		--query 'Reservations[0].Instances[0].BlockDeviceMappings[0].Ebs.VolumeId' --output text)
	[[ "$ROOTV" == vol-* ]]
	MINE=$(av2 ec2 create-volume --availability-zone "$AZ" --size 1 --query VolumeId --output text)
	THEIRS=$(other ec2 create-volume --availability-zone "$AZ" --size 1 --query VolumeId --output text)
	wait_for 30 vis "$MINE" "available	None"
	wait_for 60 is "$I" running

	# The other account names this one's instance, volumes and group.
	for verb in describe-instances describe-instance-status stop-instances \
		start-instances reboot-instances terminate-instances; do
		run other ec2 $verb --instance-ids "$I"
		fails_with InvalidInstanceID.NotFound
	done
	run other ec2 get-console-output --instance-id "$I"
	fails_with InvalidInstanceID.NotFound
	run other ec2 describe-instance-attribute --instance-id "$I" --attribute instanceType
	fails_with InvalidInstanceID.NotFound
	run other ec2 modify-instance-metadata-options --instance-id "$I" --http-tokens required
	fails_with InvalidInstanceID.NotFound
	run other ec2 create-image --instance-id "$I" --name stolen
	fails_with InvalidInstanceID.NotFound
	run other ec2 attach-volume --volume-id "$THEIRS" --instance-id "$I" --device /dev/sdf
	fails_with InvalidInstanceID.NotFound
	run other ec2 detach-volume --volume-id "$ROOTV"
	fails_with InvalidVolume.NotFound
	run other ec2 attach-volume --volume-id "$MINE" --instance-id "$I" --device /dev/sdf
	fails_with InvalidInstanceID.NotFound
	run other ec2 create-snapshots --instance-specification InstanceId="$I"
	fails_with InvalidInstanceID.NotFound
	run other ec2 describe-instances --query 'Reservations[].Instances[].InstanceId' --output text
	[ "$status" -eq 0 ]
	[[ "$output" != *"$I"* ]]
	run other ec2 describe-placement-groups --group-names mine-pg
	fails_with InvalidPlacementGroup.Unknown
	run other ec2 delete-placement-group --group-name mine-pg
	fails_with InvalidPlacementGroup.Unknown
	run other ec2 run-instances --image-id "$AMI" --instance-type t3.nano --placement GroupName=mine-pg
	[ "$status" -eq 254 ]
	# ... and this one names the other's volume.
	run av2 ec2 attach-volume --volume-id "$THEIRS" --instance-id "$I" --device /dev/sdf
	fails_with InvalidVolume.NotFound

	# Nothing changed: still running, the root volume attached, the group.
	[ "$(istate "$I")" = running ]
	vis "$ROOTV" "in-use	attached"
	vis "$MINE" "available	None"
	run av2 ec2 describe-placement-groups --group-names mine-pg --query 'PlacementGroups[0].State' --output text
	[ "$output" = available ]
	for who in av2 other; do
		run $who ec2 describe-snapshots --owner-ids self \
			--filters Name=volume-id,Values="$ROOTV" --query 'length(Snapshots)'
		[ "$status" -eq 0 ]
		[ "$output" = 0 ]
	done
	av2 ec2 terminate-instances --instance-ids "$I" >/dev/null
	wait_for 60 is "$I" terminated
	av2 ec2 delete-placement-group --group-name mine-pg
	av2 ec2 delete-volume --volume-id "$MINE"
	other ec2 delete-volume --volume-id "$THEIRS"
}
