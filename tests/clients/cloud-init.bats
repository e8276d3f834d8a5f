#!/usr/bin/env bats
# The test image's cloud-init variant (scripts/mkimage.sh --cloud-init:
# Debian's cloud-init and OpenSSH) launched with the aws CLI v2 at
# /usr/bin/aws: run-instances reaches running; the console shows
# cloud-init's own stages and that its Ec2 datasource read the metadata;
# user data in two parts (#cloud-config runcmd and a #! script) both ran;
# the hostname is the one the metadata gave; SSH with the key pair as
# root (the variant's choice of user) through the forwarded port;
# `cloud-init status` in the guest says done; terminate leaves no process
# or volume. Slow (a real cloud-init boot under TCG).

load ../bats/helpers
load instance_helpers

F=$BATS_FILE_TMPDIR

setup_file() { inst_setup_file --cloud-init; }
teardown_file() { inst_teardown_file; }
setup() { inst_setup; }

@test "cloud-init: run-instances boots the cloud-init image: Ec2 datasource, hostname, runcmd and a user script, SSH as root, status done; terminate" {
	marker="ci-$RANDOM$RANDOM"
	# User data in two MIME parts, as cloud-init takes them.
	/usr/bin/python3 - "$marker" >"$F/user-data" <<'PY'
import sys
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
m = sys.argv[1]
msg = MIMEMultipart()
msg.attach(MIMEText("#cloud-config\nruncmd:\n - [sh, -c, 'echo runcmd-%s']\n" % m,
                    "cloud-config"))
msg.attach(MIMEText("#!/bin/sh\necho script-%s-$(id -u)\n" % m, "x-shellscript"))
print(msg.as_string())
PY
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.micro \
		--key-name k1 --user-data "file://$F/user-data" \
		--query 'Instances[0].[InstanceId,State.Name,BlockDeviceMappings[0].Ebs.VolumeId,PrivateDnsName]' \
		--output text
	[ "$status" -eq 0 ]
	read -r IID st VOL DNS <<<"$output"
	[[ "$IID" == i-* ]]
	[ "$st" = pending ]
	wait_for 60 is "$IID" running
	t0=$SECONDS
	wait_for 400 ready "$IID" || { console "$IID" >&2; false; }
	run console "$IID"
	up=$(echo "$output" | sed -n 's/^spx-image: ready (uptime \([0-9.]*\) s).*/\1/p')
	echo "# cloud-init image: 'spx-image: ready' at guest uptime $up s ($((SECONDS - t0)) s after running)" >&3
	# cloud-init's own lines: each stage, and its final message naming
	# the datasource that found the metadata.
	[[ "$output" == *"Cloud-init v. 22.4"*"running 'init-local'"* ]]
	[[ "$output" == *"Cloud-init v. 22.4"*"running 'init'"* ]]
	[[ "$output" == *"Cloud-init v. 22.4"*"running 'modules:config'"* ]]
	[[ "$output" == *"Cloud-init v. 22.4"*"running 'modules:final'"* ]]
	[[ "$output" == *"Cloud-init v. 22.4"*"finished at"*"Datasource DataSourceEc2"* ]]
	[[ "$output" == *"runcmd-$marker"* ]]
	[[ "$output" == *"script-$marker-0"* ]]
	[[ "$output" == *"spx-image: cloud-init: done, DataSourceEc2Local"* ]]
	# Its configuration and the image's are what its schema takes.
	[[ "$output" != *"Invalid cloud-config"* ]]
	run guest "$IID" 'hostname; cloud-init status; cat /run/cloud-init/status.json; cat /run/cloud-init/result.json'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# cloud-init sets the short name of the metadata's local-hostname.
	[ "${lines[0]}" = "${DNS%%.*}" ]
	[ "${lines[1]}" = "status: done" ]
	[[ "$output" == *'"datasource": "DataSourceEc2Local'* ]]
	[[ "$output" == *'"errors": []'* ]]
	# The key pair's key, installed by cloud-init for root.
	run guest "$IID" 'cat /root/.ssh/authorized_keys'
	[ "$status" -eq 0 ]
	pub=$(ssh-keygen -y -f "$F/k1.pem" | cut -d' ' -f2)
	[[ "$output" == *"$pub"* ]]

	run av2 ec2 terminate-instances --instance-ids "$IID" \
		--query 'TerminatingInstances[0].CurrentState.Name' --output text
	[ "$status" -eq 0 ]
	[ "$output" = shutting-down ]
	wait_for 60 is "$IID" terminated
	[ -z "$(qemu_of "$IID")" ]
	[ ! -e "$ROOT/run/vm/$IID/qmp.sock" ]
	wait_for 30 vol_gone "$VOL"
}
