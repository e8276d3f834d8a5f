# Shared by the instance tests (instances.bats, attach.bats): a node with
# the test image imported as an AMI (its id in $F/ami) and a key pair k1
# ($F/k1.pem), and the helpers that watch guests.

# inst_setup_file [MKIMAGE-OPTION...]: the options pick the image's variant
# (cloud-init.bats passes --cloud-init); none builds the default image.
inst_setup_file() {
	export ROOT EC2_PORT S3_PORT
	inst_image "$@" || return 1
	make_node
	start_node
	echo "$ROOT" >"$F/root"
	echo "$EC2_PORT" >"$F/port"
	inst_stock
}

# The test image into $F/spx.img (mkimage.sh's options).
inst_image() {
	"$SPX_TOP/scripts/mkimage.sh" "$F/spx.img" "$@" >"$F/mkimage.out" 2>&1 || {
		cat "$F/mkimage.out" >&2
		return 1
	}
}

# The running node's stock: the test image imported as spx-test (its id
# in $F/ami) and the key pair k1 ($F/k1.pem), made by the aws CLI v2
# run through the command given (ip netns exec NS), if any.
inst_stock() {
	spx admin images import --root "$ROOT" "$F/spx.img" --name spx-test \
		>"$F/ami" 2>"$F/import.err" || {
		cat "$F/import.err" >&2
		return 1
	}
	aws_env
	"$@" /usr/bin/aws --endpoint-url "https://127.0.0.1:$EC2_PORT" \
		ec2 create-key-pair --key-name k1 --key-type ed25519 \
		--query KeyMaterial --output text >"$F/k1.pem" || return 1
	chmod 600 "$F/k1.pem"
}

inst_teardown_file() {
	ROOT=$(cat "$F/root" 2>/dev/null) || return 0
	# Whatever a failed test left running.
	for d in "$ROOT"/run/vm/i-*; do
		[ -d "$d" ] && spx-vm kill --root "$ROOT" "${d##*/}" >/dev/null 2>&1
	done
	stop_node
}

inst_setup() {
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
istate() {
	av2 ec2 describe-instances --instance-ids "$1" \
		--query 'Reservations[0].Instances[0].State.Name' --output text
}
# is IID STATE: the agent logged a step of it, and it shows STATE.
is() { grep -q -- "$1: " "$ROOT/log/agent.log" && [ "$(istate "$1")" = "$2" ]; }
console() { spx-vm console --root "$ROOT" "$1" 2>/dev/null; }
ready() { console "$1" | grep -q '^spx-image: ready'; }
ssh_port() {
	spx-vm info --root "$ROOT" --json "$1" |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["ssh_port"])'
}
guest() { # IID COMMAND
	timeout 30 ssh -i "$F/k1.pem" -p "$(ssh_port "$1")" -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR -o ConnectTimeout=10 root@127.0.0.1 "$2"
}
qemu_of() { pgrep -f -- "run/vm/$1/qmp.sock" || true; }
vol_gone() {
	run av2 ec2 describe-volumes --volume-ids "$1"
	[ "$status" -eq 254 ] && [[ "$output" == *InvalidVolume.NotFound* ]]
}
count_instances() {
	av2 ec2 describe-instances --query 'length(Reservations[].Instances[])' --output text
}
count_volumes() {
	av2 ec2 describe-volumes --query 'length(Volumes)' --output text
}

