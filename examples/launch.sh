#!/bin/sh
# Launch an instance from a disk image with the stock aws CLI, use it,
# and tear everything down again in the right order.
#   examples/launch.sh NODE_ROOT IMAGE_FILE
# IMAGE_FILE is a BIOS-bootable raw or qcow2 disk whose guest reads its
# metadata as an EC2 guest does (scripts/mkimage.sh builds a small one).
# Prints the instance id, the guest's hostname as SSH answers it, the
# user data's line from the console, and the serial and size of the
# 30 GiB gp3 volume attached as /dev/vdb as the guest sees them.
set -eu
root=${1:?usage: launch.sh NODE_ROOT IMAGE_FILE}
file=${2:?usage: launch.sh NODE_ROOT IMAGE_FILE}
unset AWS_CA_BUNDLE REQUESTS_CA_BUNDLE
export AWS_SHARED_CREDENTIALS_FILE="$root/aws/credentials"
export AWS_CONFIG_FILE="$root/aws/config"
export AWS_PROFILE=spx AWS_PAGER=""
port=$(sed -n 's/^ec2_port = //p' "$root/spinifex.toml")
scheme=https
grep -q '^http = true' "$root/spinifex.toml" && scheme=http
ec2() { aws --endpoint-url "$scheme://127.0.0.1:$port" ec2 "$@"; }
work=$(mktemp -d)
name="example-$$"

# 1. The image (an operator's step), and a key pair.
ami=$(spx admin images import --root "$root" "$file" --name "$name" 2>/dev/null)
ec2 create-key-pair --key-name "$name" --key-type ed25519 \
	--query KeyMaterial --output text >"$work/key"
chmod 600 "$work/key"

# 2. Launch, with user data that says hello on the console.
iid=$(ec2 run-instances --image-id "$ami" --instance-type t3.micro \
	--key-name "$name" --user-data '#!/bin/sh
echo "hello from user data"' \
	--tag-specifications "ResourceType=instance,Tags=[{Key=Name,Value=$name}]" \
	--query 'Instances[0].InstanceId' --output text)
echo "$iid"

# 3. Wait for it (a minute at most), then for the guest's boot to end.
state() {
	ec2 describe-instances --instance-ids "$iid" \
		--query 'Reservations[0].Instances[0].State.Name' --output text
}
n=0
until [ "$(state)" = running ]; do
	n=$((n + 1)); [ $n -le 60 ] || { echo "not running" >&2; exit 1; }
	sleep 1
done
n=0
until ec2 get-console-output --instance-id "$iid" --latest --output text \
	--query Output >"$work/console" && grep -q '^spx-image: ready' "$work/console"; do
	n=$((n + 1)); [ $n -le 120 ] || { echo "no boot" >&2; exit 1; }
	sleep 1
done

# 4. SSH through the port the node forwards to the guest.
sshport=$(spx get vms --root "$root" |
	awk -F' *[|] *' -v i="$iid" '$1 == i { sub(/.*:/, "", $8); print $8 }')
guest() {
	ssh -i "$work/key" -p "$sshport" -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR root@127.0.0.1 "$@"
}
guest hostname
tr -d '\r' <"$work/console" | grep '^hello from user data'

# 5. A 30 GiB gp3 volume in the instance's zone, attached as /dev/vdb
# while it runs (the guest sees the volume id as the disk's serial).
az=$(ec2 describe-instances --instance-ids "$iid" \
	--query 'Reservations[0].Instances[0].Placement.AvailabilityZone' --output text)
vol=$(ec2 create-volume --availability-zone "$az" --size 30 --volume-type gp3 \
	--query VolumeId --output text)
ec2 wait volume-available --volume-ids "$vol"
ec2 attach-volume --volume-id "$vol" --instance-id "$iid" --device /dev/vdb >/dev/null
ec2 wait volume-in-use --volume-ids "$vol" \
	--filters Name=attachment.status,Values=attached
n=0
until guest '[ -b /dev/vdb ]'; do
	n=$((n + 1)); [ $n -le 30 ] || { echo "no /dev/vdb" >&2; exit 1; }
	sleep 1
done
guest 'echo "$(cat /sys/block/vdb/serial) $(($(cat /sys/block/vdb/size) / 2097152))G"'

# 6. Tear down in order: the volume detached and deleted, the instance
# (its root volume goes with it), then the key pair and the image with
# its snapshot.
ec2 detach-volume --volume-id "$vol" >/dev/null
ec2 wait volume-available --volume-ids "$vol"
ec2 delete-volume --volume-id "$vol"
ec2 terminate-instances --instance-ids "$iid" >/dev/null
n=0
until [ "$(state)" = terminated ]; do
	n=$((n + 1)); [ $n -le 60 ] || { echo "not terminated" >&2; exit 1; }
	sleep 1
done
ec2 delete-key-pair --key-name "$name" >/dev/null
spx admin images rm --root "$root" --delete-snapshot "$ami" >/dev/null 2>&1
rm -rf "$work"
