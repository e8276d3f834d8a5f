#!/usr/bin/env bats
# spx-net in a network namespace the test makes: bridges and taps made,
# kept when asked again, listed and removed over rtnetlink; bad names and
# addresses refused, and nothing made without CAP_NET_ADMIN. Then a real
# guest on a tap: the test image takes its address from dnsmasq on the
# bridge, its metadata from spx-vm imds-server, which knows it by the
# mark of its tap, and answers SSH there.

load helpers

F=$BATS_FILE_TMPDIR

setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	ns_make spxt
}

teardown_file() {
	[ -s "$F/ns" ] || return 0
	if [ -s "$F/root" ]; then
		ROOT=$(cat "$F/root")
		spx-vm kill --root "$ROOT" t >/dev/null 2>&1 || true
		stop_node
	fi
	local p
	for p in dnsmasq imds sniff; do
		[ -s "$F/$p.pid" ] && kill "$(cat "$F/$p.pid")" 2>/dev/null
	done
	ns_drop
}

setup() {
	[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, CAP_NET_ADMIN)"
	NS=$(cat "$F/ns")
}

in_ns() { ip netns exec "$NS" "$@"; }

# field NAME KEY: KEY of interface NAME in spx-net ls --json ("none" when
# there is no such interface).
field() {
	in_ns spx-net ls --json | python3 -c '
import json, sys
for i in json.load(sys.stdin):
    if i["name"] == sys.argv[1]:
        print(json.dumps(i[sys.argv[2]]))
        break
else:
    print("none")' "$1" "$2"
}

@test "spx-net makes a bridge and a tap on it, again as asked, lists them and removes them" {
	run in_ns spx-net bridge spxbr0 --address 10.77.0.1/24,169.254.169.254/32
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	# Asked again, as the agent does after a crash: nothing to do.
	run in_ns spx-net bridge spxbr0 --address 10.77.0.1/24
	[ "$status" -eq 0 ]
	run in_ns spx-net tap spxt0 --bridge spxbr0 --owner 4242
	[ "$status" -eq 0 ]
	run in_ns spx-net tap spxt0 --bridge spxbr0 --owner 4242
	[ "$status" -eq 0 ]
	[ "$(field spxbr0 kind)" = '"bridge"' ]
	[ "$(field spxbr0 state)" = '"up"' ]
	[ "$(field spxbr0 addresses)" = '["10.77.0.1/24", "169.254.169.254/32"]' ]
	[ "$(field spxt0 kind)" = '"tun"' ]
	[ "$(field spxt0 master)" = '"spxbr0"' ]
	[ "$(field spxt0 owner)" = 4242 ]
	[ "$(field spxt0 state)" = '"up"' ]
	# Marked: what comes in from it carries its index under spx's byte.
	idx=$(in_ns cat /sys/class/net/spxt0/ifindex)
	[ "$(field spxt0 mark)" = "$((0x5e000000 | idx))" ]
	run in_ns nft list chain netdev spx spxt0
	[[ "$output" == *'type filter hook ingress device "spxt0" priority -500'* ]]
	[[ "$output" == *"meta mark set $(printf '0x%08x' $((0x5e000000 | idx)))"* ]]
	# What the kernel says, not only what spx-net says.
	run in_ns ip -d link show spxt0
	[[ "$output" == *"master spxbr0"* ]]
	[[ "$output" == *"tun type tap pi off vnet_hdr on persist on user 4242"* ]]
	run in_ns ip -4 -o addr show dev spxbr0
	[[ "$output" == *"inet 10.77.0.1/24 brd 10.77.0.255"* ]]
	# The table: bridges and taps only; --all shows lo too.
	run in_ns spx-net ls
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "NAME   | KIND   | STATE | MASTER | MAC               | MTU  | OWNER | MARK       | ADDRESSES" ]
	[[ "${lines[1]}" == "spxbr0 | bridge | up    | -      | "*" | 1500 | -     | -          | 10.77.0.1/24,169.254.169.254/32" ]]
	[[ "${lines[2]}" == "spxt0  | tun    | up    | spxbr0 | "*" | 1500 | 4242  | 0x5e0000"*" | -" ]]
	[ "${#lines[@]}" -eq 3 ]
	run in_ns spx-net ls --all
	[[ "${lines[1]}" == "lo "* ]]
	# A new owner is given when asked.
	run in_ns spx-net tap spxt0 --bridge spxbr0 --owner 4343
	[ "$status" -eq 0 ]
	[ "$(field spxt0 owner)" = 4343 ]

	run in_ns spx-net rm spxt0 spxbr0
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	[ "$(field spxt0 kind)" = none ]
	[ "$(field spxbr0 kind)" = none ]
	run in_ns spx-net ls --json
	[ "$output" = "[]" ]
	# The tap's chain went with it.
	run in_ns nft list chain netdev spx spxt0
	[ "$status" -ne 0 ]
	run in_ns spx-net rm spxt0
	[ "$status" -eq 1 ]
	[ "$output" = "spx-net: rm: no interface 'spxt0'" ]
}

@test "spx-net refuses bad names, addresses and what is in the way, and changes nothing" {
	in_ns spx-net bridge spxbr1 --address 10.78.0.1/24
	in_ns spx-net bridge spxbr2
	in_ns spx-net tap spxt1 --bridge spxbr1
	in_ns ip link add spxv0 type veth peer name spxv1
	before=$(in_ns spx-net ls --all --json)

	run in_ns spx-net tap spxt2 --bridge nobr
	[ "$status" -eq 1 ]
	[ "$output" = "spx-net: tap: no bridge 'nobr'" ]
	run in_ns spx-net tap spxt2 --bridge spxv0
	[ "$status" -eq 1 ]
	[ "$output" = "spx-net: tap: no bridge 'spxv0'" ]
	run in_ns spx-net tap spxt1 --bridge spxbr2
	[ "$status" -eq 1 ]
	[ "$output" = "spx-net: tap: tap 'spxt1' is on another bridge" ]
	run in_ns spx-net tap spxv0 --bridge spxbr1
	[ "$status" -eq 1 ]
	[ "$output" = "spx-net: tap: 'spxv0' is there and is not a tap" ]
	run in_ns spx-net bridge spxt1
	[ "$status" -eq 1 ]
	[ "$output" = "spx-net: bridge: 'spxt1' is there and is not a bridge (tun)" ]
	run in_ns spx-net bridge spxv0
	[ "$status" -eq 1 ]
	[ "$output" = "spx-net: bridge: 'spxv0' is there and is not a bridge (veth)" ]

	for name in '' 0 .. _x 'a:b' 'a/b' 'a,b' 'a b' "$(printf 'a\nb')" spx0123456789abc; do
		run in_ns spx-net bridge "$name"
		[ "$status" -eq 100 ]
		[ "$output" = "spx-net: bridge: not an interface name: '$name'" ]
	done
	run in_ns spx-net tap spxt2 --bridge 'br/0'
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: tap: not an interface name: 'br/0'" ]
	run in_ns spx-net tap spxt2
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: tap: --bridge is required" ]
	run in_ns spx-net tap spxt2 --bridge spxbr1 --owner -1
	[ "$status" -eq 100 ]
	run in_ns spx-net tap spxbr1 --bridge spxbr1
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: tap: 'spxbr1' cannot be its own bridge" ]
	run in_ns spx-net bridge spxbr3 --address 10.79.0.0/24
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: bridge: --address: '10.79.0.0/24' is not a host's address in its network" ]
	run in_ns spx-net bridge spxbr3 --address 010.79.0.1/24
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: bridge: --address: not an IPv4 address and prefix: '010.79.0.1/24'" ]
	run in_ns spx-net bridge spxbr3 --address 10.79.0.1/24,10.79.0.1/16
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: bridge: --address: '10.79.0.1/16' twice" ]
	run in_ns spx-net bridge spxbr3 --address 10.79.0.1/24,
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: bridge: --address: an empty one" ]
	run in_ns spx-net tap spxt2 --bridge spxbr1 --mac 03:00:5e:10:00:01 --address 10.78.0.5
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: tap: not a unicast MAC address: '03:00:5e:10:00:01'" ]
	run in_ns spx-net tap spxt2 --bridge spxbr1 --mac 02:00:5e:10:00:01 --address '10.78.0.5 drop'
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: tap: not an IPv4 address: '10.78.0.5 drop'" ]
	run in_ns spx-net tap spxt2 --bridge spxbr1 --mac 02:00:5e:10:00:01
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: tap: --mac and --address go together (the guard)" ]
	run in_ns spx-net rm 'a/b'
	[ "$status" -eq 100 ]
	[ "$output" = "spx-net: rm: not an interface name: 'a/b'" ]

	# Without CAP_NET_ADMIN: a clear refusal, nothing made.
	run in_ns setpriv --reuid 65534 --regid 65534 --clear-groups \
		--inh-caps=-all --bounding-set=-all spx-net bridge spxbr3
	[ "$status" -eq 111 ]
	[ "$output" = "spx-net: bridge: cannot make bridge 'spxbr3': operation not permitted (needs CAP_NET_ADMIN)" ]

	[ "$(in_ns spx-net ls --all --json)" = "$before" ]
	in_ns spx-net rm spxt1 spxbr1 spxbr2 spxv0
}

@test "a guest on a tap: its address from dnsmasq, its metadata from spx-vm imds-server by its tap's mark, the token's answer with the hop limit as TTL, SSH at its address" {
	"$SPX_TOP/scripts/mkimage.sh" "$F/spx.img" >"$F/build.out" 2>"$F/build.err" || {
		cat "$F/build.err" >&2
		false
	}
	make_node
	start_node
	echo "$ROOT" >"$F/root"
	VOL=$(spx-vol import --root "$ROOT" "$F/spx.img" --size 512M)
	in_ns ip link set lo up
	in_ns spx-net bridge spxbr0 --address 10.77.0.1/24,169.254.169.254/32
	in_ns spx-net tap spxt0 --bridge spxbr0
	mac=02:00:5e:10:00:01
	# DHCP only (no DNS), for this guest's MAC alone, on the bridge alone.
	in_ns dnsmasq --conf-file=/dev/null --port=0 --interface=spxbr0 \
		--bind-interfaces --dhcp-range=10.77.0.10,static,255.255.255.0 \
		--dhcp-host=$mac,10.77.0.10 --dhcp-leasefile="$F/leases" \
		--pid-file="$F/dnsmasq.pid" --user=root --log-dhcp \
		--log-facility="$F/dnsmasq.log"
	# In the background, not holding bats's output (fd 3); $! is the
	# server itself (ip netns exec execs it).
	ip netns exec "$NS" spx-vm imds-server --root "$ROOT" 2>"$F/imds.log" 3>&- &
	echo $! >"$F/imds.pid"
	# What leaves the host for the guest, seen on its tap: each HTTP
	# answer from the metadata address with its IP TTL, and whether it
	# is a token's.
	ip netns exec "$NS" python3 "$SPX_TOP/tests/bats/fixtures/ttl-sniff.py" spxt0 >"$F/sniff.out" 2>&1 3>&- &
	echo $! >"$F/sniff.pid"
	ssh-keygen -q -t ed25519 -N '' -C spx-test -f "$F/key"
	ud=$(printf '#!/bin/sh\necho "user-data on a tap from $(hostname)"\n' | base64 -w0)
	cat >"$F/md.json" <<MD
{"meta-data": {"instance-id": "i-0123456789abcdef0", "hostname": "tap-test",
  "local-hostname": "tap-test"},
 "public-keys": [{"name": "test", "openssh-key": "$(cat "$F/key.pub")"}],
 "user-data": "$ud", "http-tokens": "required",
 "http-put-response-hop-limit": 3}
MD

	run in_ns spx-vm start --root "$ROOT" t --volume "$VOL" --tap spxt0 --mac $mac --metadata "$F/md.json"
	[ "$status" -eq 0 ]
	vhost=""
	[ -w /dev/vhost-net ] && vhost=" vhost-net"
	run spx-vm info --root "$ROOT" t --json
	[ "$(echo "$output" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["network"])')" = "tap spxt0$vhost" ]
	pid=$(cat "$ROOT/run/vm/t/qemu.pid")
	tr '\0' ' ' </proc/$pid/cmdline | grep -q -- "-netdev tap,id=n0,ifname=spxt0,script=no,downscript=no"
	wait_for 180 grep -q '^spx-image: ready' "$ROOT/run/vm/t/console.log" || {
		spx-vm console --root "$ROOT" t >&2
		cat "$F/dnsmasq.log" "$F/imds.log" >&2
		false
	}
	run spx-vm console --root "$ROOT" t
	[[ "$output" == *"spx-image: network: eth0 10.77.0.10/24"* ]]
	[[ "$output" == *"spx-image: hostname tap-test"* ]]
	[[ "$output" == *"user-data on a tap from tap-test"* ]]
	grep -q "DHCPACK(spxbr0) 10.77.0.10 $mac" "$F/dnsmasq.log"
	# Asked again while QEMU holds the tap (the agent converging): done
	# already, the mark kept, the guest still reached (below).
	run in_ns spx-net tap spxt0 --bridge spxbr0
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	[ "$(field spxt0 mark)" = "$((0x5e000000 | $(in_ns cat /sys/class/net/spxt0/ifindex)))" ]
	# A new owner needs the tun driver, which a held tap refuses.
	run in_ns spx-net tap spxt0 --bridge spxbr0 --owner 4242
	[ "$status" -eq 1 ]
	[ "$output" = "spx-net: tap: cannot make tap 'spxt0': Device or resource busy" ]
	# The key came from the metadata: SSH at the guest's own address.
	run in_ns timeout 30 ssh -i "$F/key" -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR -o ConnectTimeout=10 root@10.77.0.10 hostname
	[ "$status" -eq 0 ]
	[ "$output" = tap-test ]
	# The token's answer left with the hop limit as its TTL, the other
	# answers with the host's own.
	kill "$(cat "$F/sniff.pid")"
	grep -q '^ttl 3 token HTTP/1.1 200 OK$' "$F/sniff.out" || { cat "$F/sniff.out" >&2; false; }
	grep -q '^ttl 64 other HTTP/1.1 200 OK$' "$F/sniff.out"
	run grep -c '^ttl 64 token' "$F/sniff.out"
	[ "$output" = 0 ]

	# A port of the bridge that is no guest's tap gets no answer.
	C=spxc-$$-$RANDOM
	ip netns add "$C"
	ip link add spxv2 netns "$NS" type veth peer name eth0 netns "$C"
	in_ns ip link set spxv2 master spxbr0 up
	ip netns exec "$C" ip link set eth0 up
	ip netns exec "$C" ip addr add 10.77.0.50/24 dev eth0
	ip netns exec "$C" ip route add default via 10.77.0.1
	run ip netns exec "$C" python3 -c '
import socket
s = socket.create_connection(("169.254.169.254", 80), timeout=10)
s.sendall(b"GET /latest/meta-data/instance-id HTTP/1.0\r\n\r\n")
try:
    d = s.recv(100)
except ConnectionResetError:
    d = b""
print("closed" if d == b"" else repr(d))'
	ip netns del "$C"
	[ "$status" -eq 0 ]
	[ "$output" = closed ]
	grep -q "imds-server: 10.77.0.50: not from a guest's tap (mark 0x00000000): turned away" "$F/imds.log"

	# The tap is the node's: QEMU leaves it when it stops.
	run spx-vm stop --root "$ROOT" t
	[ "$status" -eq 0 ]
	[ "$(field spxt0 master)" = '"spxbr0"' ]
	kill "$(cat "$F/imds.pid")"
	in_ns spx-net rm spxt0 spxbr0
}

@test "spx-vm start --tap refuses what belongs to user networking and bad names" {
	make_node
	run spx-vm start --root "$ROOT" t --volume vol-0a --tap 'a,b'
	[ "$status" -eq 100 ]
	[[ "$output" == *"--tap: not an interface name: 'a,b'"* ]]
	run spx-vm start --root "$ROOT" t --volume vol-0a --tap spxt0 --ssh-port 2222
	[ "$status" -eq 100 ]
	[[ "$output" == *"--tap: --ssh-port is for user networking"* ]]
	[ ! -e "$ROOT/run/vm/t" ]
}
