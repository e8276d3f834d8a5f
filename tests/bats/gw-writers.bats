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

# With bucket $1's lock held, $2 PUTs (of w1, w2 ..., each on a
# connection of its own, a second apart) wait in their commit, and a GET
# of $1/r is answered meanwhile; then the lock goes and every PUT lands.
get_while_puts_wait() {
	local b=$1 n=$2 i pids=()
	[ "$(s3curl -o /dev/null -w '%{http_code}' -X PUT "$(s3 "$b")")" = 200 ]
	[ "$(s3curl -o /dev/null -w '%{http_code}' -X PUT --data-binary hello "$(s3 "$b/r")")" = 200 ]
	hold_bucket_lock "$b" "$BATS_TEST_TMPDIR/stop" "$BATS_TEST_TMPDIR/held"
	holder=$!
	wait_for 10 test -e "$BATS_TEST_TMPDIR/held"
	for i in $(seq 1 "$n"); do
		s3curl -o /dev/null -w '%{http_code}' -X PUT --data-binary "w$i" \
			"$(s3 "$b/w$i")" >"$BATS_TEST_TMPDIR/put$i.code" 3>&- &
		pids+=($!)
		sleep 1
	done
	put="${pids[*]}"
	# The PUTs are still waiting...
	for i in "${pids[@]}"; do kill -0 "$i"; done
	# ...and a request thread answers a GET meanwhile.
	run s3curl --max-time 5 "$(s3 "$b/r")"
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	touch "$BATS_TEST_TMPDIR/stop"
	wait "$holder"
	for i in "${pids[@]}"; do wait "$i"; done
	put=
	for i in $(seq 1 "$n"); do
		[ "$(cat "$BATS_TEST_TMPDIR/put$i.code")" = 200 ]
		[ "$(s3curl "$(s3 "$b/w$i")")" = "w$i" ]
	done
}

@test "a GET is answered while a PUT waits in its commit on the only request thread" {
	get_while_puts_wait wq1 1
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
	get_while_puts_wait wq3 2
}
