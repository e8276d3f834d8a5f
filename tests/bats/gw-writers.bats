#!/usr/bin/env bats
# A write that waits in its commit does not hold up the request thread:
# the gateway runs with one request thread, a PUT is made to wait on its
# bucket's lock (held here, as a long commit would hold the disk), and a
# GET on another connection is answered meanwhile. With gw.write_threads
# = 0 (the commit on the request thread) the GET waits for the PUT.

load helpers

setup_file() {
	export ROOT EC2_PORT S3_PORT AK SK
	make_node --http
	sed -i 's/^http = true$/http = true\nthreads = 1/' "$ROOT/spinifex.toml"
	start_node
	read -r AK SK < <(admin_key)
}

# A failed test leaves no holder or client behind: the lock holder
# stops at the file, or after 30 s at most.
teardown() {
	touch "$BATS_TEST_TMPDIR/stop"
	[ -z "${put:-}" ] || kill $put 2>/dev/null || true
}

teardown_file() { stop_node; }

s3curl() { curl -s --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" \
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"; }
s3() { echo "http://127.0.0.1:$S3_PORT/$1"; }

# Hold bucket $1's lock (as spx's store takes it for a change of the
# bucket) until $2 exists; write $3 once it is held.
hold_bucket_lock() {
	python3 - "$ROOT/data/obj/d0/.locks" "$1" "$2" "$3" <<'EOF' 3>&- &
import fcntl, os, sys, time
path, bucket, stop, ready = sys.argv[1:5]
h = 0xcbf29ce484222325
for c in bucket.encode():
    h = ((h ^ c) * 0x100000001b3) & (2**64 - 1)
h = ((h ^ 0xff) * 0x100000001b3) & (2**64 - 1)
fd = os.open(path, os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX, 1, h % (1 << 20))
open(ready, "w").close()
end = time.monotonic() + 30
while not os.path.exists(stop) and time.monotonic() < end:
    time.sleep(0.05)
EOF
}

@test "a GET is answered while a PUT waits in its commit on the only request thread" {
	[ "$(s3curl -o /dev/null -w '%{http_code}' -X PUT "$(s3 wq1)")" = 200 ]
	[ "$(s3curl -o /dev/null -w '%{http_code}' -X PUT --data-binary hello "$(s3 wq1/r)")" = 200 ]
	hold_bucket_lock wq1 "$BATS_TEST_TMPDIR/stop" "$BATS_TEST_TMPDIR/held"
	holder=$!
	wait_for 10 test -e "$BATS_TEST_TMPDIR/held"
	s3curl -o "$BATS_TEST_TMPDIR/put.out" -w '%{http_code}' -X PUT \
		--data-binary world "$(s3 wq1/w)" >"$BATS_TEST_TMPDIR/put.code" 3>&- &
	put=$!
	sleep 1
	# The PUT is still waiting...
	kill -0 "$put"
	# ...and the only request thread answers a GET meanwhile.
	run s3curl --max-time 5 "$(s3 wq1/r)"
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	touch "$BATS_TEST_TMPDIR/stop"
	wait "$holder"
	wait "$put"
	[ "$(cat "$BATS_TEST_TMPDIR/put.code")" = 200 ]
	[ "$(s3curl "$(s3 wq1/w)")" = world ]
}

@test "a client that goes away while its PUT waits in the commit: the write lands, the gateway goes on" {
	[ "$(s3curl -o /dev/null -w '%{http_code}' -X PUT "$(s3 wq2)")" = 200 ]
	hold_bucket_lock wq2 "$BATS_TEST_TMPDIR/stop" "$BATS_TEST_TMPDIR/held"
	holder=$!
	wait_for 10 test -e "$BATS_TEST_TMPDIR/held"
	s3curl -o /dev/null -X PUT --data-binary gone "$(s3 wq2/gone)" 3>&- &
	put=$!
	sleep 1
	kill "$put"
	wait "$put" || true
	put=
	touch "$BATS_TEST_TMPDIR/stop"
	wait "$holder"
	# The body had arrived whole: the commit went on without its client
	# and the object is there, as S3 keeps such a write.
	wait_for 10 test "$(s3curl "$(s3 wq2/gone)")" = gone
	# The request is logged once, and the connection's thread serves on.
	wait_for 10 grep -q " PUT /wq2/gone " "$ROOT/log/access.log"
	[ "$(grep -c " PUT /wq2/gone " "$ROOT/log/access.log")" = 1 ]
	[ "$(s3curl -o /dev/null -w '%{http_code}' -X PUT --data-binary next "$(s3 wq2/next)")" = 200 ]
	[ "$(s3curl "$(s3 wq2/next)")" = next ]
}

@test "two request threads, each with a PUT waiting in its commit: a GET is still answered" {
	# A request thread that serves one connection alone finishes that
	# connection's write itself, but at most half of them do at once:
	# the other PUT goes to a worker, and its thread takes the GET.
	stop_node
	sed -i 's/^threads = 1$/threads = 2/' "$ROOT/spinifex.toml"
	grep -q '^threads = 2$' "$ROOT/spinifex.toml"
	start_node
	[ "$(s3curl -o /dev/null -w '%{http_code}' -X PUT "$(s3 wq3)")" = 200 ]
	[ "$(s3curl -o /dev/null -w '%{http_code}' -X PUT --data-binary hello "$(s3 wq3/r)")" = 200 ]
	hold_bucket_lock wq3 "$BATS_TEST_TMPDIR/stop" "$BATS_TEST_TMPDIR/held"
	holder=$!
	wait_for 10 test -e "$BATS_TEST_TMPDIR/held"
	local pids=() i
	for i in 1 2; do
		s3curl -o /dev/null -w '%{http_code}' -X PUT --data-binary "w$i" \
			"$(s3 wq3/w$i)" >"$BATS_TEST_TMPDIR/put$i.code" 3>&- &
		pids+=($!)
		sleep 1
	done
	put="${pids[*]}"
	kill -0 "${pids[0]}"
	kill -0 "${pids[1]}"
	run s3curl --max-time 5 "$(s3 wq3/r)"
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	touch "$BATS_TEST_TMPDIR/stop"
	wait "$holder"
	wait "${pids[0]}"
	wait "${pids[1]}"
	put=
	for i in 1 2; do
		[ "$(cat "$BATS_TEST_TMPDIR/put$i.code")" = 200 ]
		[ "$(s3curl "$(s3 wq3/w$i)")" = "w$i" ]
	done
}
