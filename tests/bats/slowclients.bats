#!/usr/bin/env bats
# Slow clients cannot starve the others: a thousand connections trickling
# bytes from one address (127.0.0.2) are refused over the per-address cap
# or cut by the header and body deadlines, while a normal client from
# 127.0.0.1 keeps getting answers. The figures go to the TAP output; only
# behaviour is asserted, with generous bounds on time.

load helpers

setup_file() {
	export ROOT EC2_PORT S3_PORT
	make_node --http
	sed -i 's/^http = true$/http = true\nmax_conns_per_addr = 50\nheader_timeout = 2\nbody_timeout = 2\nbody_min_rate = 1024/' "$ROOT/spinifex.toml"
	start_node
}

teardown_file() { stop_node; }


trickle() { # MODE CONNS
	timeout 60 /usr/bin/python3 "$SPX_TOP/tests/clients/trickle.py" --port "$EC2_PORT" \
		--mode "$1" --conns "$2" --from 127.0.0.2 --interval 0.2 --duration 30
}

get() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); v=d
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2"; }

@test "1000 connections trickling a request head: refused or cut, the normal client is served" {
	run trickle head 1000
	[ "$status" -eq 0 ]
	echo "# head: $output" >&3
	# Every trickler is gone: none outlived the run.
	[ "$(get "$output" tricklers.open)" = 0 ]
	# At most the cap got in; those were cut by the deadline (2 s), well
	# before the 30 s the run allows.
	[ "$(get "$output" tricklers.cut)" -le 50 ]
	[ "$(get "$output" tricklers.refused)" -ge 950 ]
	[ "$(get "$output" tricklers.cut)" = 0 ] ||
		python3 -c 'import sys; assert 1.5 <= float(sys.argv[1]) and float(sys.argv[2]) < 15' \
			"$(get "$output" tricklers.cut_after.min)" "$(get "$output" tricklers.cut_after.max)"
	# The normal client was answered every time meanwhile.
	[ "$(get "$output" normal.sent)" -ge 1 ]
	[ "$(get "$output" normal.failed)" = 0 ]
	# The gateway says what it did, at most every 10 s, at the default level.
	wait_for 20 grep -q "http: in the last [0-9]* s: [0-9]* connections closed without a complete request head in 2000 ms, 0 bodies cut for sending under 1024 bytes/s, [0-9]* connections refused over 50 per address (the last from 127.0.0.2)" "$ROOT/log/gw.log"
}

@test "slow bodies are cut; their requests are logged as timeouts" {
	n=$(wc -l <"$ROOT/log/access.log")
	run trickle body 200
	[ "$status" -eq 0 ]
	echo "# body: $output" >&3
	[ "$(get "$output" tricklers.open)" = 0 ]
	[ "$(get "$output" tricklers.cut)" -ge 1 ]
	[ "$(get "$output" tricklers.cut)" -le 50 ]
	python3 -c 'import sys; assert 1.5 <= float(sys.argv[1]) and float(sys.argv[2]) < 15' \
		"$(get "$output" tricklers.cut_after.min)" "$(get "$output" tricklers.cut_after.max)"
	[ "$(get "$output" normal.failed)" = 0 ]
	cut=$(get "$output" tricklers.cut)
	# One access-log line for each cut body: its head was complete.
	wait_for 10 cut_lines "$((n + 1))" "$cut"
}

# Whether the access log from line $1 on holds $2 lines of cut bodies;
# looked at again on every try of wait_for.
cut_lines() {
	[ "$(tail -n +"$1" "$ROOT/log/access.log" | grep -c ' 127\.0\.0\.2 - ec2 - POST / - - [0-9]* 0 [0-9.]* timeout [^ ]*$')" = "$2" ]
}

@test "a body that keeps up is not cut" {
	read -r AK SK < <(admin_key)
	# 40 KiB at 16 KiB/s: longer than body_timeout, faster than the minimum.
	body="Action=DescribeRegions&Version=2016-11-15&Pad=$(head -c 40000 /dev/zero | tr '\0' 'a')"
	run curl -s -o /dev/null -w '%{http_code}' --limit-rate 16K \
		-H 'Content-Type: application/x-www-form-urlencoded' --data-binary "$body" "http://127.0.0.1:$EC2_PORT/"
	# Unsigned: 403, but answered, not cut.
	[ "$output" = 403 ]
}

@test "a kept-alive connection may idle past header_timeout, within idle_timeout" {
	run timeout 30 /usr/bin/python3 - "$EC2_PORT" <<'PY'
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", "/")
r = c.getresponse(); r.read(); first = r.status
sock = c.sock
# The idle time is what is tested: past header_timeout (2 s), well
# within idle_timeout (60 s).
time.sleep(3)
c.request("GET", "/")
r = c.getresponse(); r.read()
print(first, r.status, c.sock is sock)
PY
	[ "$status" -eq 0 ]
	[ "$output" = "403 403 True" ]
}

@test "a TLS connection that never sends its handshake is closed by the header deadline" {
	make_node
	sed -i 's/^http = false$/http = false\nheader_timeout = 1/' "$ROOT/spinifex.toml"
	start_node
	run timeout 20 /usr/bin/python3 - "$EC2_PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0 = time.monotonic()
s.settimeout(15)
try:
    data = s.recv(100)
except ConnectionResetError:
    data = b""
print("%.2f %d" % (time.monotonic() - t0, len(data)))
PY
	stop_node
	[ "$status" -eq 0 ]
	echo "# TLS, no handshake: closed after ${output% *} s" >&3
	python3 -c 'import sys; t, n = sys.argv[1].split(); assert 0.8 <= float(t) < 10 and n == "0"' "$output"
}
