#!/usr/bin/env bats
# spx up supervises the node's services: a crash is restarted, logged and
# counted; spx down stops them for good; a killed supervisor is noticed and
# its services adopted.

load helpers

setup() {
	# A SIGSEGV must not leave a core file behind; and in a sanitizer
	# build it must kill, not be reported as a crash of ours.
	ulimit -c 0
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}handle_segv=0"
	make_node
	start_node
	loads=()
}

teardown() {
	for p in "${loads[@]}"; do kill "$p" 2>/dev/null || true; done
	stop_node
}


gw_pid() { cat "$ROOT/run/gw.pid" 2>/dev/null; }
sup_pid() { cat "$ROOT/run/supervise.pid" 2>/dev/null; }
# The EC2 port answers (403: unsigned).
answers() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$ROOT/tls/ca.pem" "https://127.0.0.1:$EC2_PORT/")" = 403 ]
}
# The same where it must answer at once: one request, given up to 10 s on
# a loaded machine (the 2 s limit failed once in CI's last stage, 1 run in
# many, with nothing to say why); what it got instead is printed.
answers_now() {
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$ROOT/tls/ca.pem" "https://127.0.0.1:$EC2_PORT/")
	[ "$code" = 403 ] || { echo "# the EC2 port answered '$code' (000: no answer)" >&3; false; }
}
new_gw() { local p; p=$(gw_pid); [ -n "$p" ] && [ "$p" != "$1" ] && kill -0 "$p" 2>/dev/null; }
state() { # FIELD: from spx status --json, the gw row
	spx status --root "$ROOT" --json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[0][sys.argv[1]])' "$1"
}
restarts_are() { [ "$(state restarts)" = "$1" ]; }
lines_at_least() { [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ]; }
# A process that has ended (a zombie counts as ended).
dead() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
now_ms() { date +%s%3N; }

@test "kill -SEGV under load: requests succeed again within 2 s; the restart is logged and counted" {
	read -r AK SK < <(admin_key)
	old=$(gw_pid)
	# Load: signed S3 and EC2 requests on both ports, back to back.
	for i in 1 2; do
		(while :; do
			curl -s -o /dev/null --max-time 2 --cacert "$ROOT/tls/ca.pem" \
				--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" "https://127.0.0.1:$S3_PORT/" || true
			curl -s -o /dev/null --max-time 2 --cacert "$ROOT/tls/ca.pem" "https://127.0.0.1:$EC2_PORT/" || true
		done) &
		loads+=($!)
	done
	wait_for 20 lines_at_least "$ROOT/log/access.log" 20
	t0=$(now_ms)
	kill -SEGV "$old"
	wait_for 10 new_gw "$old"
	wait_for 10 answers
	t1=$(now_ms)
	echo "# the gateway answered again $((t1 - t0)) ms after SIGSEGV" >&3
	[ $((t1 - t0)) -lt 2000 ]
	# The load is served again too: new access-log lines from the new pid's time on.
	n=$(wc -l <"$ROOT/log/access.log")
	wait_for 10 lines_at_least "$ROOT/log/access.log" $((n + 10))
	for p in "${loads[@]}"; do kill "$p"; done
	loads=()
	# Logged with the signal and a timestamp, in the supervisor's log and
	# at the end of the service's own.
	grep -E "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z spx: warn: gw \(pid $old\) killed by SIGSEGV; restarting in 0\.1 s$" "$ROOT/log/supervise.log"
	grep -E "^[0-9T:.-]+Z spx up: gw \(pid $old\) killed by SIGSEGV; restarting in 0\.1 s$" "$ROOT/log/gw.log"
	grep -q "gw (pid $(gw_pid)) is ready again (restart 1)" "$ROOT/log/supervise.log"
	# Counted in spx status and spx get nodes --json.
	run spx status --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "SERVICE | STATUS  | PID"*"| RESTARTS | LAST EXIT"*"| LAST EXIT AT"*"| SUPERVISOR"* ]]
	# Columns are as wide as their widest cell, and pids wrap (pid_max
	# 32768 here): the new gw's pid may be shorter than another row's.
	[[ "${lines[1]}" =~ ^gw\ +\|\ running\ +\|\ $(gw_pid)\ +\|\ 1\ +\|\ killed\ by\ SIGSEGV\ +\|\ 20[0-9T:.-]+Z\ +\|\ spx\ up\ \(pid\ $(sup_pid)\) ]]
	run spx get nodes --root "$ROOT" --json
	[ "$status" -eq 0 ]
	python3 - "$output" "$(gw_pid)" <<'PY'
import json, sys
svc = json.loads(sys.argv[1])[0]["services"][0]
assert svc["name"] == "gw" and svc["status"] == "running", svc
assert svc["pid"] == int(sys.argv[2]) and svc["restarts"] == 1, svc
assert svc["last_exit"] == "killed by SIGSEGV", svc
assert svc["supervisor"].startswith("spx up (pid "), svc
PY
}

@test "spx down after a crash-restart stops everything, and nothing restarts" {
	sup=$(sup_pid)
	old=$(gw_pid)
	kill -SEGV "$old"
	wait_for 10 restarts_are 1
	wait_for 10 answers
	new=$(gw_pid)
	run spx down --root "$ROOT"
	[ "$status" -eq 0 ]
	# The supervisor is gone, so nothing is left that could restart it.
	dead "$sup"
	dead "$new"
	run spx status --root "$ROOT"
	[ "$status" -eq 1 ]
	[[ "${lines[1]}" == "gw      | stopped | 0   | 1        | killed by SIGSEGV | 20"*"Z | -"* ]]
	! answers
	# up again starts afresh.
	run spx up --root "$ROOT"
	[ "$status" -eq 0 ]
	answers_now
	[ "$(state restarts)" = 0 ]
}

@test "spx down during the restart backoff: nothing restarts" {
	sup=$(sup_pid)
	old=$(gw_pid)
	# Three deaths in a row: the third restart waits 0.4 s; down lands in it.
	kill -SEGV "$old"; wait_for 10 new_gw "$old"; wait_for 10 answers
	old=$(gw_pid); kill -SEGV "$old"; wait_for 10 new_gw "$old"; wait_for 10 answers
	old=$(gw_pid); kill -SEGV "$old"
	wait_for 10 grep -q "gw (pid $old) killed by SIGSEGV; restarting in 0.4 s" "$ROOT/log/supervise.log"
	run spx down --root "$ROOT"
	[ "$status" -eq 0 ]
	dead "$sup"
	! answers
	[ "$(state status)" = stopped ]
	grep -q "restarting in 0.1 s" "$ROOT/log/supervise.log"
	grep -q "restarting in 0.2 s" "$ROOT/log/supervise.log"
	# No restart was started after the stop.
	[ "$(grep -c 'is ready again' "$ROOT/log/supervise.log")" = 2 ]
}

@test "a killed supervisor: status says so, the service logs it, up adopts it" {
	sup=$(sup_pid)
	gw=$(gw_pid)
	kill -KILL "$sup"
	wait_for 10 dead "$sup"
	# The service serves on and says why nobody would restart it.
	answers_now
	wait_for 10 grep -q "the supervisor that started this service is gone" "$ROOT/log/gw.log"
	run spx status --root "$ROOT"
	[ "$status" -eq 1 ]
	[[ "$output" == *"gw      | running | $gw "*"| none"* ]]
	[[ "$output" == *"the supervisor is gone"*"'spx up' adopts them"* ]]
	run spx get nodes --root "$ROOT" --json
	[[ "$output" == *'"supervisor": "none"'* ]]
	run spx -v up --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"adopted gw (pid $gw)"* ]]
	[ "$(gw_pid)" = "$gw" ]
	run spx status --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"| spx up (pid $(sup_pid))"* ]]
	# An adopted service is restarted like any other when it ends.
	kill -TERM "$gw"
	wait_for 10 new_gw "$gw"
	wait_for 10 answers
	wait_for 10 restarts_are 1
	[ "$(state last_exit)" = "ended (adopted: cause unknown)" ]
	grep -q "gw (pid $gw) ended (adopted: cause unknown); restarting in 0.1 s" "$ROOT/log/supervise.log"
}

@test "a service that ended with no supervisor is counted when up starts it again" {
	sup=$(sup_pid)
	gw=$(gw_pid)
	kill -KILL "$sup"
	wait_for 10 dead "$sup"
	kill -KILL "$gw"
	wait_for 10 dead "$gw"
	run spx up --root "$ROOT"
	[ "$status" -eq 0 ]
	answers_now
	[ "$(state restarts)" = 1 ]
	[ "$(state last_exit)" = "ended while no supervisor ran (cause unknown)" ]
}

@test "up on a supervised node returns once a restarting service is ready again" {
	old=$(gw_pid)
	kill -KILL "$old"
	wait_for 10 dead "$old"
	run spx up --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" == "node 'node1' is up (supervisor pid $(sup_pid))" ]]
	# No waiting here: it answers at once, from a new process.
	answers_now
	[ "$(gw_pid)" != "$old" ]
	# (It failed once in CI's ASan pass, with nothing to say why: what
	# the node says is printed if it happens again.)
	[ "$(state last_exit)" = "killed by SIGKILL" ] || {
		spx status --root "$ROOT" --json
		tail -20 "$ROOT/log/supervise.log"
		false
	}
}

@test "up ends a restart backoff at once; the next death backs off further" {
	# Deaths in a row wait 0.1, 0.2, 0.4, 0.8, 1.6 s, then 3.2 s.
	for i in 1 2 3 4 5; do
		old=$(gw_pid)
		kill -KILL "$old"
		wait_for 10 dead "$old"
		wait_for 10 new_gw "$old"
		wait_for 10 grep -q "gw (pid $(gw_pid)) is ready again (restart $i)" "$ROOT/log/supervise.log"
	done
	old=$(gw_pid)
	kill -KILL "$old"
	wait_for 10 grep -q "gw (pid $old) killed by SIGKILL; restarting in 3.2 s" "$ROOT/log/supervise.log"
	run spx up --root "$ROOT"
	[ "$status" -eq 0 ]
	grep -q "gw: restarting now (spx up)" "$ROOT/log/supervise.log"
	answers_now
	[ "$(state restarts)" = 6 ]
	# The streak is kept: the next death waits 6.4 s.
	old=$(gw_pid)
	kill -KILL "$old"
	wait_for 10 grep -q "gw (pid $old) killed by SIGKILL; restarting in 6.4 s" "$ROOT/log/supervise.log"
	spx up --root "$ROOT" >/dev/null
	answers_now
}

@test "a second supervisor is refused; up on a supervised node says so" {
	run spx up --root "$ROOT"
	[ "$status" -eq 0 ]
	[[ "$output" == "node 'node1' is up (supervisor pid $(sup_pid))" ]]
	run spx up --root "$ROOT" --foreground
	[ "$status" -eq 1 ]
	[[ "$output" == *"a supervisor runs already (pid $(sup_pid))"* ]]
}

@test "up --foreground restarts a crashed service and stops on SIGTERM" {
	spx down --root "$ROOT"
	spx -v up --root "$ROOT" --foreground >"$BATS_TEST_TMPDIR/fg.out" 2>&1 &
	fg=$!
	wait_for 20 grep -q "is up" "$BATS_TEST_TMPDIR/fg.out"
	# Each step is said once, as `make run` shows it (-v): the
	# supervisor's log is this stderr.
	[ "$(grep -c "spx: info: started gw (pid" "$BATS_TEST_TMPDIR/fg.out")" = 1 ]
	old=$(gw_pid)
	kill -SEGV "$old"
	wait_for 10 new_gw "$old"
	wait_for 10 answers
	grep -qE "Z spx: warn: gw \(pid $old\) killed by SIGSEGV; restarting in 0\.1 s" "$BATS_TEST_TMPDIR/fg.out"
	new=$(gw_pid)
	kill -TERM "$fg"
	wait "$fg"
	dead "$new"
	run spx status --root "$ROOT"
	[ "$status" -eq 1 ]
}

@test "SIGHUP to the supervisor reopens every log (logrotate)" {
	read -r AK SK < <(admin_key)
	mv "$ROOT/log/access.log" "$ROOT/log/access.log.1"
	mv "$ROOT/log/gw.log" "$ROOT/log/gw.log.1"
	mv "$ROOT/log/supervise.log" "$ROOT/log/supervise.log.1"
	kill -HUP "$(sup_pid)"
	wait_for 10 test -e "$ROOT/log/access.log"
	n=$(wc -l <"$ROOT/log/access.log.1")
	curl -s -o /dev/null --cacert "$ROOT/tls/ca.pem" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" "https://127.0.0.1:$S3_PORT/"
	wait_for 10 lines_at_least "$ROOT/log/access.log" 1
	[ "$(wc -l <"$ROOT/log/access.log.1")" = "$n" ]
	grep -q " $AK s3 ListBuckets GET / 200 " "$ROOT/log/access.log"
	# The next death is written to the new files.
	old=$(gw_pid)
	kill -SEGV "$old"
	wait_for 10 grep -q "gw (pid $old) killed by SIGSEGV" "$ROOT/log/supervise.log"
	wait_for 10 grep -q "gw (pid $old) killed by SIGSEGV" "$ROOT/log/gw.log"
	! grep -q "gw (pid $old) killed" "$ROOT/log/supervise.log.1"
}

@test "the systemd units are valid" {
	command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
	d="$BATS_TEST_TMPDIR/units"
	mkdir -p "$d"
	cp "$SPX_TOP"/scripts/systemd/*.service "$SPX_TOP"/scripts/systemd/*.target "$d/"
	# verify wants the programs the units name: point them at this build.
	sed -i "s|/usr/local/bin/|$SPX_BUILD/bin/|g" "$d"/*.service
	run systemd-analyze verify --man=no "$d"/spx.target "$d"/spx-gw.service \
		"$d"/spx-vol.service "$d"/spx-net.service "$d"/spx-agent.service
	echo "$output"
	[ "$status" -eq 0 ]
	# verify only warns about unknown keys and bad values: none allowed.
	[ -z "$output" ]
	for u in spx-gw spx-vol spx-net spx-agent; do
		grep -q '^Restart=on-failure$' "$d/$u.service"
		grep -q '^Type=notify$' "$d/$u.service"
	done
}

@test "under systemd, spx-gw reports READY=1 and STOPPING=1 to NOTIFY_SOCKET" {
	spx down --root "$ROOT"
	sock="$BATS_TEST_TMPDIR/notify.sock"
	/usr/bin/python3 - "$sock" >"$BATS_TEST_TMPDIR/notes" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(30)
for _ in range(2):
    print(s.recv(4096).decode(), flush=True)
PY
	listener=$!
	wait_for 10 test -S "$sock"
	NOTIFY_SOCKET="$sock" spx-gw serve --root "$ROOT" --pidfile "$ROOT/run/gw.pid" &
	gw=$!
	wait_for 20 grep -qx "READY=1" "$BATS_TEST_TMPDIR/notes"
	answers_now
	kill -TERM "$gw"
	wait "$gw"
	wait "$listener"
	[ "$(cat "$BATS_TEST_TMPDIR/notes")" = "$(printf 'READY=1\nSTOPPING=1')" ]
}
