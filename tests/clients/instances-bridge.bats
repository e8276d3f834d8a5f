#!/usr/bin/env bats
# Instances on the node's bridge (vm.network = "bridge"), through the aws
# CLI v2, in a network namespace the test makes (the node, its bridge and
# every client run in it): spx up runs the net service (the bridge,
# dnsmasq, spx-vm imds-server); run-instances gives each instance an
# address of its own, which its guest takes by DHCP on its tap; its
# metadata comes by the tap it asks from, the token's answer with the
# launch's hop limit as its IP TTL; SSH answers at its address; its tap
# lets through nothing from another address or MAC. A
# terminated instance leaves no tap and its address goes to the next
# launch; a killed net service leaves no second DHCP server; a stopped
# one starts again on its tap, at its address.

load ../bats/helpers
load instance_helpers

F=$BATS_FILE_TMPDIR

setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	ns_make spxi || return 1
	inst_image || return 1
	make_node
	local node
	node=$(sed -n 's/^node = "\(.*\)"$/\1/p' "$ROOT/spinifex.toml")
	printf 'network = "bridge"\naddress = "10.91.0.1/24"\n' >>"$ROOT/spinifex.toml"
	grep -q "^\[nodes.$node.vm\]" "$ROOT/spinifex.toml"
	echo "$ROOT" >"$F/root"
	# The node in the namespace: its gateway on the namespace's loopback.
	ip netns exec "$NS" spx up --root "$ROOT" >"$F/up.out" 2>&1 || {
		cat "$F/up.out" >&2
		return 1
	}
	echo "$EC2_PORT" >"$F/port"
	inst_stock ip netns exec "$NS"
}

teardown_file() {
	[ -s "$F/ns" ] || return 0
	[ -s "$F/sniff.pid" ] && kill "$(cat "$F/sniff.pid")" 2>/dev/null
	inst_teardown_file
	# A dnsmasq a failed test left (its service killed, as below).
	ROOT=$(cat "$F/root" 2>/dev/null) &&
		pkill -f -- "--dhcp-hostsdir=$ROOT/run/net/hosts"
	ns_drop
}

setup() {
	[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, CAP_NET_ADMIN)"
	NS=$(cat "$F/ns")
	inst_setup
}

in_ns() { ip netns exec "$NS" "$@"; }
# The helpers' clients, in the namespace.
av2() { in_ns /usr/bin/aws --endpoint-url "https://127.0.0.1:$EC2_PORT" "$@"; }
ip_of() {
	av2 ec2 describe-instances --instance-ids "$1" \
		--query 'Reservations[0].Instances[0].PrivateIpAddress' --output text
}
at() { # ADDRESS COMMAND: SSH to a guest at its own address
	in_ns timeout 30 ssh -i "$F/k1.pem" -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR -o ConnectTimeout=10 "root@$1" "$2"
}
taps() { in_ns spx-net ls | awk '$3 == "tun" { print $1 }' | sort | tr '\n' ' '; }
dnsmasqs() { pgrep -f -- "--dhcp-hostsdir=$ROOT/run/net/hosts" | wc -l; }

@test "run-instances on the bridge: an address each by DHCP, metadata by tap with the hop limit as TTL, SSH at the address; terminate frees tap and address" {
	run spx status --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"net     | running "*"| bridge spxbr0 10.91.0.1/24"* ]]
	[ "$(dnsmasqs)" = 1 ]
	marker="spx-bridge-$RANDOM$RANDOM"
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.micro \
		--count 2 --key-name k1 --user-data "#!/bin/sh
echo $marker" --metadata-options HttpTokens=required,HttpPutResponseHopLimit=2 \
		--query 'Instances[].[InstanceId,PrivateIpAddress]' --output text
	[ "$status" -eq 0 ]
	# The first four addresses and the bridge's are not given out.
	[ "${#lines[@]}" = 2 ]
	read -r I1 A1 <<<"${lines[0]}"
	read -r I2 A2 <<<"${lines[1]}"
	[ "$A1" = 10.91.0.4 ]
	[ "$A2" = 10.91.0.5 ]
	wait_for 60 is "$I1" running
	wait_for 60 is "$I2" running
	# The agent's command: the guest on its tap, made on the bridge.
	grep -q "run: .*spx-vm start --root $ROOT $I1 --volume vol-[0-9a-f]* --memory 1024M --cpus 2 --tap ${I1:0:15} --bridge spxbr0 --address 10.91.0.4 --metadata " "$ROOT/log/agent.log"
	[ "$(taps)" = "$(printf '%s\n' "${I1:0:15}" "${I2:0:15}" | sort | tr '\n' ' ')" ]
	wait_for 120 ready "$I1" || { console "$I1" >&2; cat "$ROOT/log/net.log" >&2; false; }
	wait_for 120 ready "$I2" || { console "$I2" >&2; false; }
	run console "$I1"
	[[ "$output" == *"spx-image: network: eth0 10.91.0.4/24"* ]]
	[[ "$output" == *"spx-image: metadata: IMDSv2 token acquired"* ]]
	[[ "$output" == *"spx-image: instance-id $I1"* ]]
	[[ "$output" == *"$marker"* ]]
	# dnsmasq's lines come through the service, with the log's timestamps.
	grep -Eq "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z spx-net: info: dnsmasq-dhcp\[[0-9]+\]: DHCPACK\(spxbr0\) 10.91.0.5 " "$ROOT/log/net.log"
	run spx get vms --root "$ROOT"
	[[ "$output" == *"$I1 "*" 10.91.0.4:22 "* ]]

	# SSH at its own address, with the key from the metadata, which
	# names that address; the other guest is on the same network.
	run at 10.91.0.4 'hostname; wget -qO- http://169.254.169.254/latest/meta-data/local-ipv4 2>&1; ping -c 1 -W 5 10.91.0.5 >/dev/null && echo reached'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "${lines[0]}" = "$I1.ec2.internal" ]
	# HttpTokens required: IMDSv1 is refused.
	[[ "${lines[1]}" == *"401"* ]]
	[ "${lines[2]}" = reached ]
	grep -q '"local-ipv4":"10.91.0.4"' "$ROOT/run/instances/$I1.json"
	# Its tap's guard: from the other guest's address, or with a MAC not
	# its own, nothing passes (the host does not answer); from its own,
	# as before.
	run at 10.91.0.4 'ip addr add 10.91.0.5/32 dev eth0
		ping -c 1 -W 3 -I 10.91.0.5 10.91.0.1 >/dev/null 2>&1 && echo passed-as-.5
		ip addr del 10.91.0.5/32 dev eth0
		mac=$(cat /sys/class/net/eth0/address)
		ip link set eth0 address 02:00:00:00:00:99
		ping -c 1 -W 3 10.91.0.1 >/dev/null 2>&1 && echo passed-with-mac
		ip link set eth0 address $mac
		ping -c 1 -W 5 10.91.0.1 >/dev/null && echo own'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = own ]

	# The token's answer leaves the host with the launch's hop limit as
	# its TTL, seen on the guest's tap.
	in_ns python3 "$SPX_TOP/tests/bats/fixtures/ttl-sniff.py" "${I1:0:15}" \
		>"$F/sniff.out" 2>&1 3>&- &
	echo $! >"$F/sniff.pid"
	sleep 1
	run at 10.91.0.4 'printf "PUT /latest/api/token HTTP/1.0\r\nX-aws-ec2-metadata-token-ttl-seconds: 60\r\n\r\n" | nc 169.254.169.254 80 | tail -1 | wc -c'
	[ "$status" -eq 0 ]
	[ "$output" -gt 20 ]
	wait_for 10 grep -q '^ttl 2 token HTTP/1.1 200 OK$' "$F/sniff.out" || { cat "$F/sniff.out" >&2; false; }
	kill "$(cat "$F/sniff.pid")"
	rm "$F/sniff.pid"

	# Terminated: no QEMU, no tap, no host line; dnsmasq started again to
	# forget it.
	run av2 ec2 terminate-instances --instance-ids "$I1"
	[ "$status" -eq 0 ]
	wait_for 60 is "$I1" terminated
	[ -z "$(qemu_of "$I1")" ]
	[ "$(taps)" = "${I2:0:15} " ]
	[ ! -e "$ROOT/run/net/hosts/$I1" ]
	grep -q "$I1: tap ${I1:0:15} removed" "$ROOT/log/agent.log"
	wait_for 10 grep -q "restarting dnsmasq to forget it" "$ROOT/log/net.log"
	wait_for 10 eval '[ "$(dnsmasqs)" = 1 ]'
	# The log rotated (moved away, then SIGHUP, as scripts/logrotate
	# does): what dnsmasq says next is in the new file, not the old.
	mv "$ROOT/log/net.log" "$ROOT/log/net.log.1"
	kill -HUP "$(cat "$ROOT/run/net.pid")"
	wait_for 10 test -e "$ROOT/log/net.log"
	# Its address is the next launch's, and DHCP gives it to the new MAC.
	run av2 ec2 run-instances --image-id "$AMI" --instance-type t3.micro \
		--key-name k1 --query 'Instances[0].[InstanceId,PrivateIpAddress]' --output text
	[ "$status" -eq 0 ]
	read -r I3 A3 <<<"$output"
	[ "$A3" = 10.91.0.4 ]
	wait_for 60 is "$I3" running
	wait_for 120 ready "$I3" || { console "$I3" >&2; cat "$ROOT/log/net.log" >&2; false; }
	run at 10.91.0.4 hostname
	[ "$output" = "$I3.ec2.internal" ]
	grep -Eq "dnsmasq-dhcp\[[0-9]+\]: DHCPACK\(spxbr0\) 10.91.0.4 " "$ROOT/log/net.log"

	# The net service killed outright: its supervisor starts it again,
	# and the dnsmasq it left (nobody's, so without the parent-death
	# signal) does not answer beside the new one.
	old=$(cat "$ROOT/run/net.pid")
	kill -9 "$old"
	wait_for 30 eval '[ -s "$ROOT/run/net.pid" ] && [ "$(cat "$ROOT/run/net.pid")" != "$old" ] && spx status --root "$ROOT" >/dev/null'
	wait_for 10 eval '[ "$(dnsmasqs)" = 1 ]'
	grep -q "outlived its service: killing it" "$ROOT/log/net.log"
	run at 10.91.0.5 'wget -qO- http://169.254.169.254/latest/meta-data/instance-id 2>&1'
	[[ "$output" == *401* ]]

	# Stopped and started again: on its tap, at its address (StartInstances
	# admits it on a node whose instances are on the bridge).
	run av2 ec2 stop-instances --instance-ids "$I3" --force
	[ "$status" -eq 0 ]
	wait_for 120 is "$I3" stopped
	run av2 ec2 start-instances --instance-ids "$I3"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	wait_for 60 is "$I3" running
	[ "$(ip_of "$I3")" = 10.91.0.4 ]
	[ "$(taps)" = "$(printf '%s\n' "${I2:0:15}" "${I3:0:15}" | sort | tr '\n' ' ')" ]
	wait_for 120 at 10.91.0.4 hostname || { console "$I3" >&2; false; }
	run at 10.91.0.4 hostname
	[ "$output" = "$I3.ec2.internal" ]

	run av2 ec2 terminate-instances --instance-ids "$I2" "$I3"
	[ "$status" -eq 0 ]
	wait_for 60 is "$I2" terminated
	wait_for 60 is "$I3" terminated
	[ "$(taps)" = "" ]
	run ls "$ROOT/run/net/hosts"
	[ "$output" = "" ]
}

@test "a node refuses a bad network configuration, saying where" {
	local bad
	bad=$(mktemp -d "$BATS_TEST_TMPDIR/bad.XXXXXX")
	cp "$ROOT/spinifex.toml" "$bad/spinifex.toml"
	sed -i 's|^address = "10.91.0.1/24"|address = "10.91.0.0/24"|' "$bad/spinifex.toml"
	run spx status --root "$bad"
	[ "$status" -eq 100 ]
	[[ "$output" == *"'nodes."*".vm.address' must be a host's address and a prefix of 16 to 28 (172.31.0.1/20), not '10.91.0.0/24'"* ]]
	sed -i 's|^network = "bridge"|network = "tap"|' "$bad/spinifex.toml"
	run spx status --root "$bad"
	[ "$status" -eq 100 ]
	[[ "$output" == *".vm.network' must be 'user' or 'bridge', not 'tap'"* ]]
	# spx-net serve on a node of the user network: nothing to serve.
	sed -i -e 's|^network = "tap"|network = "user"|' -e 's|^address = .*||' "$bad/spinifex.toml"
	run spx-net serve --root "$bad"
	[ "$status" -eq 100 ]
	[[ "$output" == *"this node's instances are on QEMU's user network"* ]]
}
