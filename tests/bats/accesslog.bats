#!/usr/bin/env bats
# The access log: exactly one line per request, written in one place for
# every kind of answer, with the right fields:
#   TIME ID REMOTE PRINCIPAL API OP METHOD PATH STATUS ERROR IN OUT MS END AGENT

load helpers

setup_file() {
	file_node
	export LOG="$ROOT/log/access.log"
}

teardown_file() { stop_node; }


count() { wc -l <"$LOG"; }
lines_at_least() { [ "$(count)" -ge "$1" ]; }

# after N0: the request made since the log had N0 lines wrote exactly one
# line; its fields are in F (F[1] is TIME ... F[15] is AGENT).
after() {
	wait_for 10 lines_at_least $(($1 + 1))
	if [ "$(count)" -ne $(($1 + 1)) ]; then
		echo "more than one line:" >&2
		tail -n +$(($1 + 1)) "$LOG" >&2
		return 1
	fi
	F=("" $(tail -1 "$LOG"))
	[ ${#F[@]} -eq 16 ] || { echo "not 15 fields: $(tail -1 "$LOG")" >&2; return 1; }
}

# expect ID REMOTE PRINCIPAL API OP METHOD PATH STATUS ERROR IN OUT END;
# '*' matches anything.
expect() {
	local want=("$@") idx=(2 3 4 5 6 7 8 9 10 11 12 14) i
	for i in "${!want[@]}"; do
		[ "${want[$i]}" = '*' ] && continue
		if [ "${F[${idx[$i]}]}" != "${want[$i]}" ]; then
			echo "field ${idx[$i]}: got '${F[${idx[$i]}]}', want '${want[$i]}' in: ${F[*]}" >&2
			return 1
		fi
	done
	[[ "${F[1]}" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$ ]]
	[[ "${F[13]}" =~ ^[0-9]+\.[0-9]{3}$ ]]
}

s3curl() { curl -s --cacert "$ROOT/tls/ca.pem" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" "$@"; }
s3url() { echo "https://127.0.0.1:$S3_PORT/$1"; }
reqid() { tr -d '\r' <"$1" | sed -n 's/^x-amz-request-id: //Ip' | head -1; }

@test "signed EC2 and STS calls: the action, the caller, the sizes" {
	n=$(count)
	run spx-gw call --root "$ROOT" DescribeRegions
	[ "$status" -eq 0 ]
	id=$(sed -n 's:.*<requestId>\(.*\)</requestId>.*:\1:p' <<<"$output")
	after $n
	expect "$id" 127.0.0.1 "$AK" ec2 DescribeRegions POST / 200 - 41 '*' ok
	[ "${F[12]}" -gt 100 ]
	n=$(count)
	run spx-gw call --root "$ROOT" --service sts GetCallerIdentity
	[ "$status" -eq 0 ]
	id=$(sed -n 's:.*<RequestId>\(.*\)</RequestId>.*:\1:p' <<<"$output")
	after $n
	expect "$id" 127.0.0.1 "$AK" sts GetCallerIdentity POST / 200 - '*' '*' ok
}

@test "errors: unsigned, a bad signature, an unknown action" {
	n=$(count)
	run curl -s --cacert "$ROOT/tls/ca.pem" "https://127.0.0.1:$EC2_PORT/"
	id=$(sed -n 's:.*<RequestID>\(.*\)</RequestID>.*:\1:p' <<<"$output")
	after $n
	expect "$id" 127.0.0.1 - ec2 - GET / 403 MissingAuthenticationToken 0 "${#output}" ok
	n=$(count)
	curl -s -o /dev/null -D "$BATS_TEST_TMPDIR/h" --cacert "$ROOT/tls/ca.pem" \
		--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:wrong" "$(s3url)"
	after $n
	expect "$(reqid "$BATS_TEST_TMPDIR/h")" 127.0.0.1 - s3 '*' GET / 403 SignatureDoesNotMatch 0 '*' ok
	n=$(count)
	run spx-gw call --root "$ROOT" NoSuchThing
	after $n
	expect '*' 127.0.0.1 "$AK" ec2 NoSuchThing POST / 400 InvalidAction '*' '*' ok
}

@test "transport answers: 431, 413, and 400 from the CGI driver" {
	big=$(head -c 20000 /dev/zero | tr '\0' 'x')
	n=$(count)
	curl -s -o /dev/null -D "$BATS_TEST_TMPDIR/h" --cacert "$ROOT/tls/ca.pem" -H "X-Big: $big" "$(s3url bkt/k)"
	after $n
	expect "$(reqid "$BATS_TEST_TMPDIR/h")" 127.0.0.1 - s3 - GET /bkt/k 431 RequestHeaderSectionTooLarge 0 '*' ok
	head -c 2000000 /dev/zero | tr '\0' 'a' >"$BATS_TEST_TMPDIR/big"
	n=$(count)
	run curl -s --cacert "$ROOT/tls/ca.pem" --data-binary @"$BATS_TEST_TMPDIR/big" "https://127.0.0.1:$EC2_PORT/"
	after $n
	expect '*' 127.0.0.1 - ec2 - POST / 413 EntityTooLarge '*' "${#output}" ok
	# spx-gw cgi writes its line to the same log.
	n=$(count)
	run bash -c "printf abc | REQUEST_METHOD=PUT REQUEST_URI=/bkt/k CONTENT_LENGTH=10 REMOTE_ADDR=192.0.2.7 HTTP_HOST=x spx-gw cgi --root '$ROOT' --service s3"
	[[ "${lines[0]}" == "Status: 4"* ]]
	after $n
	expect '*' 192.0.2.7 - s3 '*' PUT /bkt/k '*' '*' '*' '*' ok
	n=$(count)
	run bash -c "printf abc | REQUEST_METHOD=POST REQUEST_URI=/ CONTENT_LENGTH=10 REMOTE_ADDR=192.0.2.7 spx-gw cgi --root '$ROOT' --service ec2"
	[[ "${lines[0]}" == "Status: 400 Bad Request"* ]]
	after $n
	expect '*' 192.0.2.7 - ec2 - POST / 400 IncompleteBody 3 '*' ok
}

@test "S3: create, put, head (no body), 304, streamed GET, 204" {
	n=$(count)
	s3curl -o /dev/null -D "$BATS_TEST_TMPDIR/h" -X PUT "$(s3url logbkt)"
	after $n
	expect "$(reqid "$BATS_TEST_TMPDIR/h")" 127.0.0.1 "$AK" s3 CreateBucket PUT /logbkt 200 - 0 '*' ok
	head -c 5000 /dev/urandom >"$BATS_TEST_TMPDIR/small"
	n=$(count)
	s3curl -o /dev/null -D "$BATS_TEST_TMPDIR/h" -X PUT --data-binary @"$BATS_TEST_TMPDIR/small" "$(s3url logbkt/k1)"
	after $n
	expect "$(reqid "$BATS_TEST_TMPDIR/h")" 127.0.0.1 "$AK" s3 PutObject PUT /logbkt/k1 200 - 5000 0 ok
	[[ "${F[15]}" =~ ^curl/[0-9.]+$ ]]
	etag=$(tr -d '\r' <"$BATS_TEST_TMPDIR/h" | sed -n 's/^etag: //Ip')
	n=$(count)
	s3curl -o /dev/null -D "$BATS_TEST_TMPDIR/h" -I "$(s3url logbkt/k1)"
	after $n
	expect "$(reqid "$BATS_TEST_TMPDIR/h")" 127.0.0.1 "$AK" s3 HeadObject HEAD /logbkt/k1 200 - 0 0 ok
	# A small object leaves with its head in one send: counted whole.
	n=$(count)
	s3curl -o "$BATS_TEST_TMPDIR/back" -D "$BATS_TEST_TMPDIR/h" "$(s3url logbkt/k1)"
	after $n
	expect "$(reqid "$BATS_TEST_TMPDIR/h")" 127.0.0.1 "$AK" s3 GetObject GET /logbkt/k1 200 - 0 5000 ok
	cmp "$BATS_TEST_TMPDIR/small" "$BATS_TEST_TMPDIR/back"
	n=$(count)
	s3curl -o "$BATS_TEST_TMPDIR/back" -D "$BATS_TEST_TMPDIR/h" -r 100-199 "$(s3url logbkt/k1)"
	after $n
	expect "$(reqid "$BATS_TEST_TMPDIR/h")" 127.0.0.1 "$AK" s3 GetObject GET /logbkt/k1 206 - 0 100 ok
	cmp <(tail -c +101 "$BATS_TEST_TMPDIR/small" | head -c 100) "$BATS_TEST_TMPDIR/back"
	n=$(count)
	code=$(s3curl -o /dev/null -w '%{http_code}' -D "$BATS_TEST_TMPDIR/h" -H "If-None-Match: $etag" "$(s3url logbkt/k1)")
	[ "$code" = 304 ]
	after $n
	expect "$(reqid "$BATS_TEST_TMPDIR/h")" 127.0.0.1 "$AK" s3 GetObject GET /logbkt/k1 304 - 0 0 ok
	head -c 3145728 /dev/urandom >"$BATS_TEST_TMPDIR/3m"
	n=$(count)
	s3curl -o /dev/null -X PUT --data-binary @"$BATS_TEST_TMPDIR/3m" "$(s3url logbkt/k3)"
	after $n
	expect '*' 127.0.0.1 "$AK" s3 PutObject PUT /logbkt/k3 200 - 3145728 0 ok
	n=$(count)
	s3curl -o "$BATS_TEST_TMPDIR/got" -D "$BATS_TEST_TMPDIR/h" "$(s3url logbkt/k3)"
	cmp "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/3m"
	after $n
	expect "$(reqid "$BATS_TEST_TMPDIR/h")" 127.0.0.1 "$AK" s3 GetObject GET /logbkt/k3 200 - 0 3145728 ok
	n=$(count)
	code=$(s3curl -o /dev/null -w '%{http_code}' -X DELETE "$(s3url logbkt/k1)")
	[ "$code" = 204 ]
	after $n
	expect '*' 127.0.0.1 "$AK" s3 DeleteObject DELETE /logbkt/k1 204 - 0 0 ok
	# The query (presigned credentials, for one) stays out of the log.
	n=$(count)
	s3curl -o /dev/null "$(s3url 'logbkt?list-type=2&prefix=k')"
	after $n
	expect '*' 127.0.0.1 "$AK" s3 ListObjectsV2 GET /logbkt 200 - 0 '*' ok
}

@test "the client's name, escaped, is the last field" {
	n=$(count)
	AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_CA_BUNDLE="$ROOT/tls/ca.pem" \
		/usr/bin/aws --region us-east-1 --endpoint-url "https://127.0.0.1:$EC2_PORT" \
		ec2 describe-regions >/dev/null
	after $n
	expect '*' 127.0.0.1 "$AK" ec2 DescribeRegions POST / 200 - '*' '*' ok
	[[ "${F[15]}" == aws-cli/2.*\\x20Python/3.* ]]
	# No User-Agent: "-"; one with spaces, quotes and a tab stays one field.
	n=$(count)
	s3curl -o /dev/null -H 'User-Agent:' "$(s3url)"
	after $n
	[ "${F[15]}" = - ]
	n=$(count)
	s3curl -o /dev/null -A $'my "tool"\t1 -' "$(s3url)"
	after $n
	[ "${F[15]}" = 'my\x20\x22tool\x22\x091\x20-' ]
}

@test "keep-alive: one line per request on one connection" {
	n=$(count)
	run s3curl -v "$(s3url)" "$(s3url)" "$(s3url)"
	[[ "$output" == *"Re-using existing connection"* ]]
	wait_for 10 lines_at_least $((n + 3))
	[ "$(count)" -eq $((n + 3)) ]
	[ "$(tail -3 "$LOG" | awk '$6 == "ListBuckets" && $9 == 200' | wc -l)" = 3 ]
	[ "$(tail -3 "$LOG" | awk '{print $2}' | sort -u | wc -l)" = 3 ]
}

@test "clients that go away: a PUT and a GET cut short" {
	s3curl -o /dev/null -X PUT "$(s3url gonebkt)"
	head -c 33554432 /dev/zero >"$BATS_TEST_TMPDIR/32m"
	# (Bodies this big must name their hash, or UNSIGNED-PAYLOAD: a body
	# signed only through its hash is kept in memory until the end.)
	code=$(s3curl -o /dev/null -w '%{http_code}' -X PUT -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		--data-binary @"$BATS_TEST_TMPDIR/32m" "$(s3url gonebkt/big)")
	[ "$code" = 200 ]
	# A PUT whose client gives up after a second of a slow upload.
	n=$(count)
	run s3curl -o /dev/null --limit-rate 200K --max-time 1 -X PUT -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		--data-binary @"$BATS_TEST_TMPDIR/32m" "$(s3url gonebkt/partial)"
	[ "$status" -eq 28 ]
	after $n
	expect '*' 127.0.0.1 "$AK" s3 PutObject PUT /gonebkt/partial - - '*' 0 aborted
	[ "${F[11]}" -gt 0 ] && [ "${F[11]}" -lt 33554432 ]
	# A GET whose client stops reading.
	n=$(count)
	run s3curl -o /dev/null --limit-rate 1M --max-time 1 "$(s3url gonebkt/big)"
	[ "$status" -eq 28 ]
	after $n
	expect '*' 127.0.0.1 "$AK" s3 GetObject GET /gonebkt/big 200 - 0 '*' aborted
	[ "${F[12]}" -gt 0 ] && [ "${F[12]}" -lt 33554432 ]
	# Nothing was committed for the PUT.
	code=$(s3curl -o /dev/null -w '%{http_code}' -I "$(s3url gonebkt/partial)")
	[ "$code" = 404 ]
}

@test "a head libmicrohttpd refuses itself is logged too" {
	n=$(count)
	/usr/bin/python3 - "$ROOT/tls/ca.pem" "$S3_PORT" <<'PY'
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
with socket.create_connection(("127.0.0.1", int(sys.argv[2]))) as raw:
    with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        s.sendall(b"GET /bkt/x?secret=1 HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n")
        print(s.recv(100).split(b"\r\n")[0].decode())
PY
	after $n
	expect - 127.0.0.1 - s3 - - /bkt/x - - 0 0 error
}

@test "every line so far is one request: nothing was logged twice" {
	# Each test above checked its own lines one by one; no line may have
	# a request id that another line has.
	[ "$(awk '$2 != "-" {print $2}' "$LOG" | sort | uniq -d | wc -l)" = 0 ]
}
