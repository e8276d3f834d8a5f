#!/bin/sh
# A spread placement group with the stock aws CLI: one instance in it,
# a second refused (this node is one host, and a spread group keeps its
# instances on distinct hosts), the place freed by terminating the first
# and taken again at once; then everything torn down.
#   examples/spread-group.sh NODE_ROOT IMAGE_FILE
# IMAGE_FILE is a raw or qcow2 disk image (scripts/mkimage.sh builds a
# small one). Prints the group id, the first instance id, the refusal's
# error code, the second instance id, and "done".
set -eu
root=${1:?usage: spread-group.sh NODE_ROOT IMAGE_FILE}
file=${2:?usage: spread-group.sh NODE_ROOT IMAGE_FILE}
unset AWS_CA_BUNDLE REQUESTS_CA_BUNDLE
export AWS_SHARED_CREDENTIALS_FILE="$root/aws/credentials"
export AWS_CONFIG_FILE="$root/aws/config"
export AWS_PROFILE=spx AWS_PAGER=""
port=$(sed -n 's/^ec2_port = //p' "$root/spinifex.toml")
scheme=https
grep -q '^http = true' "$root/spinifex.toml" && scheme=http
ec2() { aws --endpoint-url "$scheme://127.0.0.1:$port" ec2 "$@"; }
work=$(mktemp -d)
name="spread-example-$$"

# 1. The image (an operator's step), a key pair and the group.
ami=$(spx admin images import --root "$root" "$file" --name "$name" 2>/dev/null)
ec2 create-key-pair --key-name "$name" --key-type ed25519 \
	--query KeyMaterial --output text >"$work/key"
ec2 create-placement-group --group-name "$name" --strategy spread \
	--query PlacementGroup.GroupId --output text

launch() {
	ec2 run-instances --image-id "$ami" --instance-type t3.micro \
		--key-name "$name" --placement "GroupName=$name" \
		--query 'Instances[0].InstanceId' --output text
}

# 2. One instance in the group.
first=$(launch)
echo "$first"

# 3. A second is refused: the group already has its instance on this
# host. The CLI's message names the error code.
if launch >"$work/out" 2>"$work/err"; then
	echo "a second instance was launched into the spread group" >&2
	exit 1
fi
sed -n 's/.*(\(InsufficientInstanceCapacity\)).*/\1/p' "$work/err"

# 4. Terminating the first frees its place at once.
ec2 terminate-instances --instance-ids "$first" >/dev/null
second=$(launch)
echo "$second"

# 5. Tear down: the instances (their root volumes go with them), the
# group, the key pair, and the image with its snapshot.
ec2 terminate-instances --instance-ids "$second" >/dev/null
state() {
	ec2 describe-instances --instance-ids "$1" \
		--query 'Reservations[0].Instances[0].State.Name' --output text
}
for i in "$first" "$second"; do
	n=0
	until [ "$(state "$i")" = terminated ]; do
		n=$((n + 1)); [ $n -le 90 ] || { echo "$i: not terminated" >&2; exit 1; }
		sleep 1
	done
done
ec2 delete-placement-group --group-name "$name"
ec2 delete-key-pair --key-name "$name" >/dev/null
spx admin images rm --root "$root" --delete-snapshot "$ami" >/dev/null 2>&1
rm -rf "$work"
echo done
