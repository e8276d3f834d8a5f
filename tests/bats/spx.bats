#!/usr/bin/env bats
# spx: the dispatcher and the node verbs, including bad input and exit codes.

load helpers

teardown() { stop_node; }

@test "spx with no verb is a usage error (100)" {
	run spx
	[ "$status" -eq 100 ]
	[[ "$output" == *"usage: spx"* ]]
}

@test "spx --help lists every verb from the table" {
	run spx --help
	[ "$status" -eq 0 ]
	for v in "admin init" "admin profile" up down status "get nodes"; do
		[[ "$output" == *"$v"* ]]
	done
}

@test "an unknown verb is a usage error and names the verb" {
	run spx frobnicate
	[ "$status" -eq 100 ]
	[[ "$output" == *"unknown verb or tool 'frobnicate'"* ]]
}

@test "verbs match exactly, never by prefix" {
	run spx stat
	[ "$status" -eq 100 ]
	run spx admin ini --root "$BATS_TEST_TMPDIR/x"
	[ "$status" -eq 100 ]
	[ ! -e "$BATS_TEST_TMPDIR/x" ]
}

@test "a tool name with a slash is refused" {
	run spx ../../bin/sh
	[ "$status" -eq 100 ]
}

@test "spx gw VERB runs spx-gw and passes its status through" {
	run spx gw --list-verbs
	[ "$status" -eq 0 ]
	[[ "$output" == *serve* && "$output" == *cgi* ]]
	run spx gw nosuchverb
	[ "$status" -eq 100 ]
	[[ "$output" == *"spx-gw: unknown verb 'nosuchverb'"* ]]
}

@test "--list-options comes from the verb table" {
	run spx --list-options "admin init"
	[ "$status" -eq 0 ]
	for o in --root --nodes --region --az --ec2-port --s3-port --force --http; do
		grep -qx -- "$o" <<<"$output"
	done
}

@test "an unknown option is a usage error with the verb's usage" {
	run spx up --bogus
	[ "$status" -eq 100 ]
	[[ "$output" == *"spx: up: unknown option '--bogus'"* ]]
	[[ "$output" == *"usage: spx up"* ]]
}

@test "admin init writes config, key (0600), CA, certificate and aws profile" {
	root="$BATS_TEST_TMPDIR/n1"
	run spx admin init --root "$root"
	[ "$status" -eq 0 ]
	[[ "$output" == *"access key:  AKIA"* ]]
	[ -f "$root/spinifex.toml" ]
	[ "$(stat -c %a "$root/credentials.json")" = 600 ]
	[ "$(stat -c %a "$root/tls/node.key")" = 600 ]
	[ "$(stat -c %a "$root/tls/ca.key")" = 600 ]
	[ "$(stat -c %a "$root/aws/credentials")" = 600 ]
	grep -q '^\[spx\]' "$root/aws/credentials"
	grep -q '^aws_access_key_id = AKIA[A-Z2-7]\{16\}$' "$root/aws/credentials"
	grep -q "^ca_bundle = $root/tls/ca.pem$" "$root/aws/config"
	openssl verify -CAfile "$root/tls/ca.pem" "$root/tls/node.pem"
	openssl x509 -in "$root/tls/node.pem" -noout -ext subjectAltName | grep -q 'IP Address:127.0.0.1'
	for d in state data run log; do [ -d "$root/$d" ]; done
}

@test "admin init refuses to overwrite without --force (exit 1), and --force does" {
	root="$BATS_TEST_TMPDIR/n2"
	spx admin init --root "$root" >/dev/null
	before=$(sha256sum "$root/credentials.json")
	run spx admin init --root "$root"
	[ "$status" -eq 1 ]
	[[ "$output" == *"spinifex.toml' exists (use --force to overwrite)"* ]]
	[ "$(sha256sum "$root/credentials.json")" = "$before" ]
	run spx admin init --root "$root" --force
	[ "$status" -eq 0 ]
	[ "$(sha256sum "$root/credentials.json")" != "$before" ]
}

@test "admin init rejects bad arguments with 100 and writes nothing" {
	for args in "--region nowhere" "--region US-EAST-1" "--ec2-port 0" \
		"--ec2-port 70000" "--s3-port x" "--az eu-west-1a" "--nodes 0" \
		"--name Bad_Name" "--http --bind 10.1.2.3" "--ec2-port 9000 --s3-port 9000" \
		"--nodes 3"; do
		root="$BATS_TEST_TMPDIR/bad.$RANDOM"
		run spx admin init --root "$root" $args
		[ "$status" -eq 100 ] || { echo "args: $args -> $status $output"; false; }
		[ ! -e "$root/spinifex.toml" ]
	done
}

@test "admin init takes region, zone and ports into the config" {
	root="$BATS_TEST_TMPDIR/n3"
	run spx admin init --root "$root" --region ap-southeast-2 --az ap-southeast-2b --ec2-port 19999 --s3-port 18443 --name edge-7
	[ "$status" -eq 0 ]
	grep -q '^region = "ap-southeast-2"$' "$root/spinifex.toml"
	grep -q '^az = "ap-southeast-2b"$' "$root/spinifex.toml"
	grep -q '^ec2_port = 19999$' "$root/spinifex.toml"
	grep -q '^\[nodes.edge-7\]$' "$root/spinifex.toml"
}

@test "a malformed spinifex.toml names file:line:col, exits 100, writes nothing" {
	make_node
	printf '\n[aws]\nregion = "us-east-1\n' >>"$ROOT/spinifex.toml"
	ls -R "$ROOT" >"$BATS_TEST_TMPDIR/before"
	run spx up --root "$ROOT"
	[ "$status" -eq 100 ]
	[[ "$output" =~ spinifex.toml:[0-9]+:[0-9]+: ]]
	ls -R "$ROOT" >"$BATS_TEST_TMPDIR/after"
	diff "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	run spx status --root "$ROOT"
	[ "$status" -eq 100 ]
}

@test "an unknown key in spinifex.toml is an error with its position" {
	make_node
	sed -i 's/^underlay_mtu = 1500$/underlay_mtu = 1500\nbogus_key = 1/' "$ROOT/spinifex.toml"
	run spx get nodes --root "$ROOT"
	[ "$status" -eq 100 ]
	[[ "$output" == *"spinifex.toml:"*"unknown key 'network.bogus_key'"* ]]
}

@test "a missing node is a negative answer (1)" {
	run spx status --root "$BATS_TEST_TMPDIR/nothing-here"
	[ "$status" -eq 1 ]
	[[ "$output" == *"cannot open"* ]]
}

@test "up returns once the gateway answers; status, get nodes, down" {
	make_node
	start_node
	# It answers at once: no sleep between up and the first request.
	run curl -s -o /dev/null -w '%{http_code}' --cacert "$ROOT/tls/ca.pem" "https://127.0.0.1:$EC2_PORT/"
	[ "$output" = 403 ]
	run spx status --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gw"*"running"* ]]
	[[ "$output" == *"vol"*"running"*"nbd+unix:///?socket=$ROOT/run/vol.sock"* ]]
	[[ "$output" == *"agent"*"running"*"unix:$ROOT/run/agent.sock"* ]]
	run spx get nodes --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "NAME  | STATUS | ROLES        | IP        | REGION    | AZ         | VMs | SERVICES" ]]
	[[ "${lines[1]}" == "node1 | Ready  | gw,vol,agent | 127.0.0.1 | us-east-1 | us-east-1a | 0   | gw,vol,agent" ]]
	run spx get nodes --root "$ROOT" --json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; n=json.loads(sys.argv[1]); assert n[0]["name"]=="node1" and n[0]["status"]=="Ready" and n[0]["vms"]==0' "$output"
	run spx up --root "$ROOT"
	[ "$status" -eq 0 ]
	run spx down --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" != *"nothing was running"* ]]
	run spx status --root "$ROOT"
	[ "$status" -eq 1 ]
	[[ "$output" == *"stopped"* ]]
	# Down again: still success, and it says that nothing ran.
	run spx down --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"spx: down: nothing was running at '$ROOT'"* ]]
	run spx get nodes --root "$ROOT"
	[[ "${lines[1]}" == "node1 | NotReady"* ]]
}

@test "up reports a service that cannot start, with its log" {
	# The EC2 port is held by a socket that listens before the node is
	# made, so the port is certainly taken when spx up runs.
	hold_port
	ROOT=$(mktemp -d "$BATS_TEST_TMPDIR/node.XXXXXX")
	EC2_PORT=$HELD_PORT
	S3_PORT=$(free_port)
	spx admin init --root "$ROOT" --ec2-port "$EC2_PORT" --s3-port "$S3_PORT" >/dev/null
	run spx up --root "$ROOT"
	kill "$HOLDER_PID"
	[ "$status" -eq 111 ]
	[[ "$output" == *"spx-gw failed to start"* ]]
	[[ "$output" == *"cannot listen on 127.0.0.1 port $EC2_PORT"* ]]
}

@test "two nodes with different roots and ports run at once" {
	make_node
	r1=$ROOT p1=$EC2_PORT
	start_node
	make_node
	r2=$ROOT p2=$EC2_PORT
	start_node
	run curl -s -o /dev/null -w '%{http_code}' --cacert "$r1/tls/ca.pem" "https://127.0.0.1:$p1/"
	[ "$output" = 403 ]
	run curl -s -o /dev/null -w '%{http_code}' --cacert "$r2/tls/ca.pem" "https://127.0.0.1:$p2/"
	[ "$output" = 403 ]
	# Each node's CA vouches only for its own gateway.
	run curl -s -o /dev/null --cacert "$r1/tls/ca.pem" "https://127.0.0.1:$p2/"
	[ "$status" -ne 0 ]
	spx down --root "$r1"
	spx down --root "$r2"
}

@test "up --foreground serves until SIGINT, then stops its services" {
	make_node
	spx up --root "$ROOT" --foreground >"$BATS_TEST_TMPDIR/fg.out" 2>&1 &
	pid=$!
	for i in $(seq 100); do grep -q "is up" "$BATS_TEST_TMPDIR/fg.out" && break; sleep 0.1; done
	run spx status --root "$ROOT"
	[ "$status" -eq 0 ]
	kill -INT $pid
	wait $pid || true
	run spx status --root "$ROOT"
	[ "$status" -eq 1 ]
}

@test "admin profile prints the endpoints and the profile lines" {
	make_node
	run spx admin profile --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"export AWS_SHARED_CREDENTIALS_FILE=$ROOT/aws/credentials"* ]]
	[[ "$output" == *"export AWS_PROFILE=spx"* ]]
	[[ "$output" == *"https://127.0.0.1:$EC2_PORT"* ]]
	[[ "$output" == *"aws_secret_access_key = "* ]]
}

@test "stdout write errors fail with 111" {
	make_node
	run bash -c "spx get nodes --root '$ROOT' >/dev/full"
	[ "$status" -eq 111 ]
	[[ "$output" == *"cannot"*"No space left on device"* ]]
}

@test "-v and SPX_LOG_LEVEL raise the log level; logs go to stderr only" {
	make_node
	run bash -c "SPX_LOG_LEVEL=info spx up --root '$ROOT' 2>/dev/null"
	[ "$status" -eq 0 ]
	[[ "$output" != *"info:"* ]]
	spx down --root "$ROOT"
	run bash -c "spx -v up --root '$ROOT' 2>&1 >/dev/null"
	[[ "$output" == *"spx: info: started gw"* ]]
	spx down --root "$ROOT"
	run env SPX_LOG_LEVEL=loud spx status --root "$ROOT"
	[ "$status" -eq 100 ]
	[[ "$output" == *"unknown log level 'loud'"* ]]
}

@test "admin schema lists every key with type, default and meaning" {
	run spx admin schema
	[ "$status" -eq 0 ]
	grep -qP '^nodes\.\*\.gw\.ec2_port\tinteger 1\.\.65535\t9999\t' <<<"$output"
	grep -qP '^aws\.region\tregion\tus-east-1\t' <<<"$output"
	run spx admin schema extra
	[ "$status" -eq 100 ]
	[[ "$output" == *"unexpected operand 'extra'"* ]]
}

@test "admin profile and down on a missing node" {
	run spx admin profile --root "$BATS_TEST_TMPDIR/none"
	[ "$status" -eq 1 ]
	[[ "$output" == *"spx: admin profile: cannot open '$BATS_TEST_TMPDIR/none/spinifex.toml'"* ]]
	# Nothing runs there, so there is nothing to stop: success, said (a
	# mistyped root would otherwise pass unnoticed).
	run spx down --root "$BATS_TEST_TMPDIR/none"
	[ "$status" -eq 0 ]
	[ "$output" = "spx: down: nothing was running at '$BATS_TEST_TMPDIR/none'" ]
}

@test "options take their values in both forms, and a missing value is an error" {
	root="$BATS_TEST_TMPDIR/forms"
	run spx admin init --root="$root" --region=eu-west-2 --ec2-port 10001 --s3-port=10002
	[ "$status" -eq 0 ]
	grep -q '^region = "eu-west-2"$' "$root/spinifex.toml"
	run spx admin init --root
	[ "$status" -eq 100 ]
	[[ "$output" == *"option '--root' needs DIR"* ]]
	run spx up --foreground=yes --root "$root"
	[ "$status" -eq 100 ]
	[[ "$output" == *"option '--foreground' takes no value"* ]]
}

@test "admin account create makes an account with its own key" {
	make_node
	run spx admin account create --root "$ROOT" --name team-a --json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert len(a["AccountId"])==12 and a["AccessKeyId"].startswith("AKIA") and len(a["SecretAccessKey"])==40 and a["AccountName"]=="team-a"' "$output"
	[ "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["keys"]))' "$ROOT/credentials.json")" = 2 ]
	[ "$(stat -c %a "$ROOT/credentials.json")" = 600 ]
	run spx admin account create --root "$ROOT" --name team-a
	[ "$status" -eq 1 ]
	[[ "$output" == *"an account named 'team-a' exists"* ]]
	run spx admin account create --root "$ROOT" --name 'bad name'
	[ "$status" -eq 100 ]
	run spx admin account create --root "$ROOT"
	[ "$status" -eq 100 ]
	run spx admin account create --root "$ROOT" --name team-b
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "AccountId        "* ]]
}
