#!/usr/bin/env bats
# Data is sacred: kill -9 the gateway during PUTs, multipart Completes and
# DELETEs, many times at random moments, restart it, and check that every
# acknowledged write is there byte for byte and nothing partial is visible
# (tests/clients/s3-crash.py keeps the log of what was acknowledged).

load helpers

setup() {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	make_node
	start_node
	aws_env
}

teardown() { stop_node; }

@test "kill -9 of the gateway loses no acknowledged object and shows no partial one" {
	local log="$BATS_TEST_TMPDIR/ops.log" ep="https://127.0.0.1:$S3_PORT"
	local py="$SPX_TOP/tests/clients/s3-crash.py" kills=0
	awscli2 --endpoint-url "$ep" s3 mb s3://crash >/dev/null
	for round in $(seq 1 12); do
		/usr/bin/python3 "$py" run "$ep" "$ROOT/tls/ca.pem" crash "$log" "r$round" &
		driver=$!
		# Once the driver has its client (its "start" line; the last CI's
		# ASan build once killed the gateway before python had imported
		# boto3, and the round had no log at all), a random moment
		# between 0.3 and 2.3 s into the round.
		wait_for 120 grep -qx "start r$round" "$log"
		sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.3 + (r % 200) / 100 }')"
		pid=$(cat "$ROOT/run/gw.pid")
		kill -9 "$pid"
		kills=$((kills + 1))
		# kill(2) returns before the process is gone; until then it
		# still holds its pidfile and looks ready to spx up.
		wait_for 10 bash -c "! kill -0 $pid 2>/dev/null"
		# spx up's supervisor restarts the gateway at once, so a driver
		# with no request in flight would go on against the new one:
		# end the round here. (Its torn last line is allowed for.) An
		# error answer while a gateway was up (exit 2) is a failure.
		kill "$driver" 2>/dev/null || true
		rc=0
		wait "$driver" || rc=$?
		[ "$rc" -ne 2 ]
		# Returns once the restarted gateway is ready.
		spx up --root "$ROOT" >/dev/null
		run /usr/bin/python3 "$py" verify "$ep" "$ROOT/tls/ca.pem" crash "$log"
		echo "# round $round: $output" >&3
		[ "$status" -eq 0 ]
	done
	acked=$(grep -c '^ack' "$log")
	echo "# $kills kills, $acked acknowledged operations verified" >&3
	[ "$acked" -gt 20 ]
	# Every shard and metadata copy is whole after the rounds (stop the
	# gateway first, so that nothing is in flight).
	spx down --root "$ROOT"
	run spx-obj verify --root "$ROOT"
	echo "$output" | tail -5
	[ "$status" -eq 0 ]
}
