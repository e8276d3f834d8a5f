#!/usr/bin/env bats
# spx-gw: authentication, errors, limits and transports, driven by curl and
# by requests that botocore signs (tests/clients/sigv4req.py).

load helpers

setup_file() { file_node; }

teardown_file() { stop_node; }

req() { # URL [sigv4req options]
	/usr/bin/python3 "$SPX_TOP/tests/clients/sigv4req.py" --ca "$ROOT/tls/ca.pem" "$@"
}
ec2() { echo "https://127.0.0.1:$EC2_PORT/"; }
s3() { echo "https://127.0.0.1:$S3_PORT/"; }
form() { echo "Action=$1&Version=2016-11-15"; }

@test "a signed DescribeRegions answers with the region" {
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" \
		--header 'Content-Type: application/x-www-form-urlencoded; charset=utf-8' \
		--body "$(form DescribeRegions)"
	[ "${lines[0]}" = 200 ]
	[[ "$output" == *'<DescribeRegionsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'* ]]
	[[ "$output" == *"<regionName>us-east-1</regionName>"* ]]
}

@test "an EC2/STS body swapped after signing is refused (x-amz-content-sha256 not trusted)" {
	signed=$(form DescribeRegions)
	hash=$(printf '%s' "$signed" | sha256sum | cut -d' ' -f1)
	ct='Content-Type: application/x-www-form-urlencoded; charset=utf-8'
	# The signed body with the unsigned header is fine: it is that body's hash.
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" --header "$ct" \
		--body "$signed" --unsigned-header "X-Amz-Content-Sha256: $hash"
	[ "${lines[0]}" = 200 ]
	# The same headers with another body: the other action must not run.
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" --header "$ct" \
		--body "$signed" --unsigned-header "X-Amz-Content-Sha256: $hash" \
		--send-body "$(form DescribeAvailabilityZones)"
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"<Code>SignatureDoesNotMatch</Code>"* ]]
	[[ "$output" != *"zoneName"* ]]
	# Without the header the swap fails as well (the body's hash is signed).
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" --header "$ct" \
		--body "$signed" --send-body "$(form DescribeAvailabilityZones)"
	[ "${lines[0]}" != 200 ]
	[[ "$output" != *"zoneName"* ]]
	# STS, the same.
	sts="Action=GetCallerIdentity&Version=2011-06-15"
	shash=$(printf '%s' "$sts" | sha256sum | cut -d' ' -f1)
	run req "$(ec2)" --method POST --service sts --key "$AK" --secret "$SK" --header "$ct" \
		--body "$sts" --unsigned-header "X-Amz-Content-Sha256: $shash" \
		--send-body "Action=GetCallerIdentity&Version=2011-06-15&X=1"
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"<Code>SignatureDoesNotMatch</Code>"* ]]
}

@test "GET with the query in the URL works too" {
	run req "$(ec2)?Action=DescribeAvailabilityZones&Version=2016-11-15" --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	[[ "$output" == *"<zoneName>us-east-1a</zoneName>"* ]]
	[[ "$output" == *"<zoneId>use1-az1</zoneId>"* ]]
}

@test "no Authorization: 403 with the EC2 error body" {
	run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" -d "$(form DescribeRegions)" "$(ec2)"
	[ "${lines[-1]}" = 403 ]
	[[ "$output" == *"<Response><Errors><Error><Code>MissingAuthenticationToken</Code>"* ]]
	[[ "$output" == *"<RequestID>"* ]]
}

@test "no Authorization on S3: 403 AccessDenied with the S3 error body" {
	run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" "$(s3)"
	[ "${lines[-1]}" = 403 ]
	[[ "$output" == *"<Error><Code>AccessDenied</Code>"* ]]
	[[ "$output" == *"<RequestId>"*"<HostId>"* ]]
}

@test "malformed Authorization headers: 403, never a crash" {
	for h in "AWS4-HMAC-SHA256" "AWS4-HMAC-SHA256 Credential=" \
		"AWS4-HMAC-SHA256 Credential=$AK/2020/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=zz" \
		"Basic Zm9vOmJhcg==" "AWS4-HMAC-SHA256 Credential=$AK/20261130/us-east-1/ec2/aws4_request,SignedHeaders=,Signature=$(printf 'a%.0s' {1..64})" \
		"$(head -c 3000 /dev/zero | tr '\0' 'A')"; do
		run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" -H "Authorization: $h" \
			-H "X-Amz-Date: $(date -u +%Y%m%dT%H%M%SZ)" -d "$(form DescribeRegions)" "$(ec2)"
		[ "${lines[-1]}" = 403 ] || { echo "header: $h -> $output"; false; }
		[[ "$output" == *"<Response><Errors><Error><Code>"* ]]
	done
}

@test "a bad signature is SignatureDoesNotMatch (EC2, STS, S3)" {
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" --tamper \
		--header 'Content-Type: application/x-www-form-urlencoded' --body "$(form DescribeRegions)"
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"<Code>SignatureDoesNotMatch</Code>"* ]]
	run req "$(ec2)" --method POST --service sts --key "$AK" --secret wrong \
		--header 'Content-Type: application/x-www-form-urlencoded' --body "Action=GetCallerIdentity&Version=2011-06-15"
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"<ErrorResponse"*"<Type>Sender</Type><Code>SignatureDoesNotMatch</Code>"* ]]
	run req "$(s3)" --service s3 --key "$AK" --secret wrong
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"<Error><Code>SignatureDoesNotMatch</Code>"* ]]
}

@test "an unknown key gets each service's code" {
	run req "$(ec2)" --method POST --key AKIAIOSFODNN7EXAMPLE --secret x \
		--header 'Content-Type: application/x-www-form-urlencoded' --body "$(form DescribeRegions)"
	[ "${lines[0]}" = 401 ]
	[[ "$output" == *"<Code>AuthFailure</Code>"* ]]
	run req "$(ec2)" --method POST --service sts --key AKIAIOSFODNN7EXAMPLE --secret x \
		--header 'Content-Type: application/x-www-form-urlencoded' --body "Action=GetCallerIdentity&Version=2011-06-15"
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"<Code>InvalidClientTokenId</Code>"* ]]
	run req "$(s3)" --service s3 --key AKIAIOSFODNN7EXAMPLE --secret x
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"<Code>InvalidAccessKeyId</Code>"* ]]
}

@test "a stale date is RequestExpired (EC2) and RequestTimeTooSkewed (S3)" {
	for skew in -960 960; do
		run req "$(ec2)" --method POST --key "$AK" --secret "$SK" --skew $skew \
			--header 'Content-Type: application/x-www-form-urlencoded' --body "$(form DescribeRegions)"
		[ "${lines[0]}" = 400 ] || [ "${lines[0]}" = 403 ]
		[[ "$output" == *"<Code>RequestExpired</Code>"* ]]
		run req "$(s3)" --service s3 --key "$AK" --secret "$SK" --skew $skew
		[ "${lines[0]}" = 403 ]
		[[ "$output" == *"<Code>RequestTimeTooSkewed</Code>"* ]]
	done
	# 14 minutes is inside the window.
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" --skew -840 \
		--header 'Content-Type: application/x-www-form-urlencoded' --body "$(form DescribeRegions)"
	[ "${lines[0]}" = 200 ]
}

@test "an unknown action is InvalidAction (400)" {
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" \
		--header 'Content-Type: application/x-www-form-urlencoded' --body "$(form FlyToTheMoon)"
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>InvalidAction</Code><Message>The action FlyToTheMoon is not valid for this web service.</Message>"* ]]
}

@test "DryRun answers DryRunOperation" {
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" \
		--header 'Content-Type: application/x-www-form-urlencoded' --body "$(form DescribeRegions)&DryRun=true"
	[ "${lines[0]}" = 412 ]
	[[ "$output" == *"<Code>DryRunOperation</Code>"* ]]
}

@test "filters: a known filter matches with wildcards, an unknown one is an error" {
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" \
		--header 'Content-Type: application/x-www-form-urlencoded' \
		--body "$(form DescribeRegions)&Filter.1.Name=region-name&Filter.1.Value.1=us-*"
	[[ "$output" == *"<regionName>us-east-1</regionName>"* ]]
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" \
		--header 'Content-Type: application/x-www-form-urlencoded' \
		--body "$(form DescribeRegions)&Filter.1.Name=region-name&Filter.1.Value.1=eu-*"
	[ "${lines[0]}" = 200 ]
	[[ "$output" != *"<item>"* ]]
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" \
		--header 'Content-Type: application/x-www-form-urlencoded' \
		--body "$(form DescribeRegions)&Filter.1.Name=colour&Filter.1.Value.1=red"
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>InvalidParameterValue</Code><Message>The filter &apos;colour&apos; is invalid</Message>"* ]]
	run req "$(ec2)" --method POST --key "$AK" --secret "$SK" \
		--header 'Content-Type: application/x-www-form-urlencoded' \
		--body "$(form DescribeRegions)&RegionName.1=mars-north-1"
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"Invalid region: mars-north-1"* ]]
}

@test "oversized headers: 431 with an AWS body; the gateway serves on" {
	big=$(head -c 20000 /dev/zero | tr '\0' 'x')
	run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" -H "X-Big: $big" "$(s3)"
	[ "${lines[-1]}" = 431 ]
	[[ "$output" == *"<Error><Code>RequestHeaderSectionTooLarge</Code>"* ]]
	run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" -H "X-Big: $big" -d "$(form DescribeRegions)" "$(ec2)"
	[ "${lines[-1]}" = 431 ]
	[[ "$output" == *"<Response><Errors><Error><Code>RequestHeaderSectionTooLarge</Code>"* ]]
	run req "$(s3)" --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
}

@test "an oversized Query body: 413 with an AWS body; the gateway serves on" {
	head -c 2000000 /dev/zero | tr '\0' 'a' >"$BATS_TEST_TMPDIR/big"
	run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" --data-binary @"$BATS_TEST_TMPDIR/big" "$(ec2)"
	[ "${lines[-1]}" = 413 ]
	[[ "$output" == *"<Response><Errors><Error><Code>"*"</Code>"* ]]
	run req "$(s3)" --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
}

@test "a body over the node's limit is refused before it is sent (413)" {
	sed -i "s/^http = false$/http = false\nmax_body_bytes = 1000/" "$ROOT/spinifex.toml"
	spx down --root "$ROOT"
	spx up --root "$ROOT"
	head -c 5000 /dev/zero >"$BATS_TEST_TMPDIR/5k"
	run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" -X PUT --data-binary @"$BATS_TEST_TMPDIR/5k" "$(s3)bkt/key"
	[ "${lines[-1]}" = 413 ]
	[[ "$output" == *"<Error><Code>EntityTooLarge</Code>"* ]]
	sed -i '/^max_body_bytes = 1000$/d' "$ROOT/spinifex.toml"
	spx down --root "$ROOT"
	spx up --root "$ROOT"
}

@test "garbage and half requests do not stop the gateway" {
	for i in 1 2 3; do
		head -c 4096 /dev/urandom | timeout 5 openssl s_client -quiet -connect 127.0.0.1:$EC2_PORT >/dev/null 2>&1 || true
		head -c 4096 /dev/urandom | timeout 5 bash -c "cat >/dev/tcp/127.0.0.1/$S3_PORT" 2>/dev/null || true
		printf 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab' | timeout 3 openssl s_client -quiet -connect 127.0.0.1:$S3_PORT >/dev/null 2>&1 || true
	done
	run req "$(s3)" --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
}

@test "keep-alive: several requests on one connection, errors included" {
	run curl -s -v --cacert "$ROOT/tls/ca.pem" "$(s3)" "$(s3)" "$(s3)"
	[[ "$output" == *"Re-using existing connection"* ]]
	[[ "$output" != *"Connection: close"* ]]
	run curl -s -v --cacert "$ROOT/tls/ca.pem" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" "$(s3)" "$(s3)"
	[[ "$output" == *"Re-using existing connection"* ]]
	[ "$(grep -c '<ListAllMyBucketsResult' <<<"$output")" = 2 ]
}

@test "a chunked Query body over the limit: 413 once it ends, or cut off" {
	head -c 1100000 /dev/zero | tr '\0' 'a' >"$BATS_TEST_TMPDIR/chunked"
	run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" -H 'Transfer-Encoding: chunked' \
		--data-binary @"$BATS_TEST_TMPDIR/chunked" "$(ec2)"
	[ "${lines[-1]}" = 413 ]
	[[ "$output" == *"<Response><Errors><Error><Code>"* ]]
}

@test "Expect: 100-continue is answered before the body" {
	head -c 100000 /dev/zero | tr '\0' 'b' >"$BATS_TEST_TMPDIR/body"
	run curl -s -v --cacert "$ROOT/tls/ca.pem" -H 'Expect: 100-continue' \
		-H 'Content-Type: application/x-www-form-urlencoded' --data-binary @"$BATS_TEST_TMPDIR/body" "$(ec2)"
	[[ "$output" == *"HTTP/1.1 100 Continue"* ]]
}

@test "an early answer: a body up to 64 MiB is taken and dropped first; a larger one is refused unsent" {
	# A client may send its body whatever the answer (boto3 waits for
	# "100 Continue" one second, then sends): it gets the answer, never
	# a reset mid-send, and the connection stays.
	# The PUTs are anonymous, to a bucket whose policy lets nobody in.
	run req "$(s3)early" --method PUT --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	head -c 100000 /dev/zero >"$BATS_TEST_TMPDIR/body0"
	for te in "" "Transfer-Encoding: chunked"; do
		run curl -s -v --cacert "$ROOT/tls/ca.pem" -X PUT -H 'Expect: 100-continue' ${te:+-H "$te"} \
			--data-binary @"$BATS_TEST_TMPDIR/body0" "$(s3)early/k" "$(s3)early/k"
		[[ "$output" == *"HTTP/1.1 403"*"HTTP/1.1 403"* ]]
		[[ "$output" == *"Re-using existing connection"* ]]
	done
	# More than 64 MiB declared: the answer at once, no "100 Continue",
	# and the connection closes.
	truncate -s 65M "$BATS_TEST_TMPDIR/big0"
	run curl -s -v --cacert "$ROOT/tls/ca.pem" -X PUT -H 'Expect: 100-continue' \
		--data-binary @"$BATS_TEST_TMPDIR/big0" "$(s3)early/k"
	[[ "$output" != *"100 Continue"* ]]
	[[ "$output" == *"HTTP/1.1 403"* ]]
	# The dropped bodies were read whole.
	[ "$(grep -c ' PUT /early/k 403 AccessDenied 100000 ' "$ROOT/log/access.log")" -ge 4 ]
}

@test "nothing observable happens before the signature is verified" {
	# curl --aws-sigv4 sends no x-amz-content-sha256: the signature covers
	# the body's hash and can only be checked at the end. With a forged
	# signature (the right access key, the wrong secret), preconditions
	# must not answer and nothing may be written first.
	fput() { # BUCKET/KEY FILE SECRET HEADER... -> status
		local k=$1 f=$2 sec=$3; shift 3
		curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' --cacert "$ROOT/tls/ca.pem" \
			--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$sec" "$@" -X PUT --data-binary @"$f" "$(s3)$k"
	}
	run req "$(s3)preauth" --method PUT --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	printf secret-content >"$BATS_TEST_TMPDIR/v"
	[ "$(fput preauth/k "$BATS_TEST_TMPDIR/v" "$SK")" = 200 ]
	etag=\"$(md5sum "$BATS_TEST_TMPDIR/v" | cut -d' ' -f1)\"
	# A forged If-None-Match: * on an existing key, and a forged If-Match
	# with the right guess: both 403, never 412 or anything that tells.
	[ "$(fput preauth/k "$BATS_TEST_TMPDIR/v" wrong -H 'If-None-Match: *')" = 403 ]
	grep -q '<Code>SignatureDoesNotMatch</Code>' "$BATS_TEST_TMPDIR/body"
	[ "$(fput preauth/k "$BATS_TEST_TMPDIR/v" wrong -H "If-Match: $etag")" = 403 ]
	[ "$(fput preauth/k "$BATS_TEST_TMPDIR/v" wrong -H 'If-Match: "00000000000000000000000000000000"')" = 403 ]
	# Nor does the bucket's existence or owner show.
	[ "$(fput no-such-bucket-$RANDOM/k "$BATS_TEST_TMPDIR/v" wrong)" = 403 ]
	# A stream of forged bytes is not written to the disk: the gateway
	# buffers a bounded amount and refuses more.
	head -c $((150 << 20)) /dev/zero >"$BATS_TEST_TMPDIR/big"
	before=$(du -sk "$ROOT/data" | cut -f1)
	st=$(fput preauth/big "$BATS_TEST_TMPDIR/big" wrong || true)
	after=$(du -sk "$ROOT/data" | cut -f1)
	echo "# status $st, data dir ${before}K -> ${after}K" >&3
	[ "$st" = 400 ] || [ "$st" = 403 ]
	[ $((after - before)) -lt 1024 ]
	# The same without a Content-Length (chunked transfer coding).
	st=$(fput preauth/big "$BATS_TEST_TMPDIR/big" wrong -H 'Transfer-Encoding: chunked' || true)
	after=$(du -sk "$ROOT/data" | cut -f1)
	echo "# chunked: status $st, data dir ${before}K -> ${after}K" >&3
	# (refused mid-body: the answer or a cut connection)
	[ "$st" != 200 ]
	[ $((after - before)) -lt 1024 ]
	# The genuine key is untouched and small signed uploads still work.
	run curl -sS --cacert "$ROOT/tls/ca.pem" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" "$(s3)preauth/k"
	[ "$output" = secret-content ]
	[ "$(fput preauth/k2 "$BATS_TEST_TMPDIR/v" "$SK" -H 'If-None-Match: *')" = 200 ]
	[ "$(fput preauth/k2 "$BATS_TEST_TMPDIR/v" "$SK" -H 'If-None-Match: *')" = 412 ]
	for k in k k2; do
		run req "$(s3)preauth/$k" --method DELETE --service s3 --key "$AK" --secret "$SK"
	done
	run req "$(s3)preauth" --method DELETE --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 204 ]
}

@test "an encoded NUL in a bucket, key or copy source is refused, never cut short" {
	s3c() { # METHOD PATH [curl args] -> status (body in $BATS_TEST_TMPDIR/body)
		local m=$1 p=$2; shift 2
		curl -sS --path-as-is -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' --cacert "$ROOT/tls/ca.pem" \
			--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" -X "$m" "$@" "$(s3)$p"
	}
	[ "$(s3c PUT nulb)" = 200 ]
	printf keep >"$BATS_TEST_TMPDIR/v"
	[ "$(s3c PUT nulb/important --data-binary @"$BATS_TEST_TMPDIR/v")" = 200 ]
	[ "$(s3c PUT nulb/src --data-binary @"$BATS_TEST_TMPDIR/v")" = 200 ]
	[ "$(s3c DELETE 'nulb/important%00.tmp')" = 400 ]
	grep -q '<Code>InvalidURI</Code>' "$BATS_TEST_TMPDIR/body"
	[ "$(s3c GET nulb/important)" = 200 ]
	[ "$(s3c PUT 'nulb%00xyz/k' --data-binary @"$BATS_TEST_TMPDIR/v")" = 400 ]
	[ "$(s3c GET nulb/k)" = 404 ]
	[ "$(s3c PUT nulb/copy -H 'x-amz-copy-source: nulb/src%00junk')" = 400 ]
	[ "$(s3c GET nulb/copy)" = 404 ]
	[ "$(s3c GET 'nulb?prefix=a%00b')" = 400 ]
	for k in important src; do s3c DELETE "nulb/$k" >/dev/null; done
	[ "$(s3c DELETE nulb)" = 204 ]
}

@test "a literal + in a query string is a plus, as signed" {
	run req "$(s3)plusq" --method PUT --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	# Signed as prefix=a%2Bb, sent as prefix=a+b: RFC 3986 makes them the
	# same parameter, and the prefix is "a+b", not "a b".
	run req "$(s3)plusq?prefix=a%2Bb" --service s3 --key "$AK" --secret "$SK" --send-query 'prefix=a+b'
	[ "${lines[0]}" = 200 ]
	[[ "$output" == *"<Prefix>a+b</Prefix>"* ]]
	# A value holding an encoded '&' or '=' stays one value.
	run req "$(s3)plusq?prefix=a%26b%3Dc" --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	[[ "$output" == *"<Prefix>a&amp;b=c</Prefix>"* ]]
	run req "$(s3)plusq" --method DELETE --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 204 ]
}

@test "aws-chunked bodies of other operations are decoded and their chunk signatures checked" {
	creq() { /usr/bin/python3 "$SPX_TOP/tests/clients/chunkedreq.py" --ca "$ROOT/tls/ca.pem" --key "$AK" --secret "$SK" "$@"; }
	run req "$(s3)chunky" --method PUT --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	# The helper itself: a streaming PutObject works.
	run creq "$(s3)chunky/a" --body "first object"
	[ "${lines[0]}" = 200 ]
	run creq "$(s3)chunky/b" --body "second object"
	[ "${lines[0]}" = 200 ]
	del='<Delete><Object><Key>a</Key></Object></Delete>'
	tags='<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>'
	# A chunk signature that does not match: refused, nothing changes.
	run creq "$(s3)chunky?delete" --method POST --body "$del" --chunk 16 --tamper-chunk
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"<Code>SignatureDoesNotMatch</Code>"* ]]
	run req "$(s3)chunky/a" --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	run creq "$(s3)chunky/b?tagging" --body "$tags" --chunk 16 --tamper-chunk
	[ "${lines[0]}" = 403 ]
	run req "$(s3)chunky/b?tagging" --service s3 --key "$AK" --secret "$SK"
	[[ "$output" != *"<Key>k</Key>"* ]]
	# Signed correctly, both work on the decoded body.
	run creq "$(s3)chunky/b?tagging" --body "$tags" --chunk 16
	[ "${lines[0]}" = 200 ]
	run req "$(s3)chunky/b?tagging" --service s3 --key "$AK" --secret "$SK"
	[[ "$output" == *"<Key>k</Key><Value>v</Value>"* ]]
	run creq "$(s3)chunky?delete" --method POST --body "<Delete><Object><Key>a</Key></Object><Object><Key>b</Key></Object></Delete>" --chunk 16
	[ "${lines[0]}" = 200 ]
	[[ "$output" == *"<Deleted><Key>a</Key></Deleted>"* ]]
	run req "$(s3)chunky" --method DELETE --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 204 ]
}

@test "listing counts and markers that are not numbers are InvalidArgument" {
	run req "$(s3)lparams" --method PUT --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	for q in "max-keys=abc" "max-keys=-1" "uploads&max-uploads=x" "uploads&max-uploads=-3"; do
		run req "$(s3)lparams?$q" --service s3 --key "$AK" --secret "$SK"
		[ "${lines[0]}" = 400 ]
		[[ "$output" == *"<Code>InvalidArgument</Code>"* ]]
	done
	run req "$(s3)lparams/k?uploads" --method POST --service s3 --key "$AK" --secret "$SK"
	id=$(sed -n 's:.*<UploadId>\(.*\)</UploadId>.*:\1:p' <<<"$output")
	[ -n "$id" ]
	for q in "max-parts=abc" "max-parts=-1" "part-number-marker=x" "part-number-marker=-2"; do
		run req "$(s3)lparams/k?uploadId=$id&$q" --service s3 --key "$AK" --secret "$SK"
		[ "${lines[0]}" = 400 ]
		[[ "$output" == *"<Code>InvalidArgument</Code>"* ]]
	done
	run req "$(s3)lparams/k?uploadId=$id&max-parts=2" --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	run req "$(s3)lparams/k?uploadId=$id" --method DELETE --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 204 ]
	run req "$(s3)lparams" --method DELETE --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 204 ]
}

@test "integrity errors end to end: XAmzContentSHA256Mismatch, BadDigest, InvalidDigest" {
	creq() { /usr/bin/python3 "$SPX_TOP/tests/clients/chunkedreq.py" --ca "$ROOT/tls/ca.pem" --key "$AK" --secret "$SK" "$@"; }
	sreq() { req "$@" --service s3 --key "$AK" --secret "$SK"; }
	gone() { run sreq "$(s3)integ/$1"; [ "${lines[0]}" = 404 ]; }
	run sreq "$(s3)integ" --method PUT
	[ "${lines[0]}" = 200 ]
	# the body is not the one whose hash was signed
	run sreq "$(s3)integ/a" --method PUT --body "signed body" --send-body "other body!"
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>XAmzContentSHA256Mismatch</Code>"* ]]
	gone a
	# a checksum header that does not match the body (CRC32 of "123456789")
	run sreq "$(s3)integ/b" --method PUT --body "not 123456789" --header "x-amz-checksum-crc32: y/Q5Jg=="
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>BadDigest</Code>"* ]]
	gone b
	run sreq "$(s3)integ/b" --method PUT --body "123456789" --header "x-amz-checksum-crc32: y/Q5Jg=="
	[ "${lines[0]}" = 200 ]
	# a checksum trailer that does not match
	run creq "$(s3)integ/c" --body "not 123456789" --unsigned-trailer "x-amz-checksum-crc32:y/Q5Jg=="
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>BadDigest</Code>"* ]]
	gone c
	run creq "$(s3)integ/c" --body "123456789" --unsigned-trailer "x-amz-checksum-crc32:y/Q5Jg=="
	[ "${lines[0]}" = 200 ]
	# Content-MD5: malformed, then well formed but wrong
	run sreq "$(s3)integ/d" --method PUT --body "x" --header "Content-MD5: not-base64!"
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>InvalidDigest</Code>"* ]]
	run sreq "$(s3)integ/d" --method PUT --body "x" --header "Content-MD5: AAAAAAAAAAAAAAAAAAAAAA=="
	[ "${lines[0]}" = 400 ]
	[[ "$output" == *"<Code>BadDigest</Code>"* ]]
	gone d
	for k in b c; do run sreq "$(s3)integ/$k" --method DELETE; done
	run sreq "$(s3)integ" --method DELETE
	[ "${lines[0]}" = 204 ]
}

@test "a client that disconnects mid-PUT leaves nothing behind" {
	run req "$(s3)cutoff" --method PUT --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 200 ]
	/usr/bin/python3 - "$(s3)" "$ROOT/tls/ca.pem" "$AK" "$SK" <<'PY'
import http.client, ssl, sys, time, urllib.parse
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
ep, ca, ak, sk = sys.argv[1:]
u = urllib.parse.urlparse(ep)
for key, n in (("half", 20 << 20), ("tiny", 1000)):
    r = AWSRequest(method="PUT", url=ep + "cutoff/" + key,
                   headers={"Content-Length": str(n), "X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(r)
    c = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cafile=ca))
    c.putrequest("PUT", "/cutoff/" + key)
    for k, v in r.headers.items():
        c.putheader(k, v)
    c.endheaders()
    c.send(b"z" * (n // 2))
    time.sleep(0.3)
    c.sock.close()
PY
	# the gateway notices at once; wait for it with a deadline
	for i in $(seq 50); do
		[ -z "$(find "$ROOT/data" -path '*/b/cutoff/o/*' 2>/dev/null)" ] && break
		sleep 0.1
	done
	for k in half tiny; do
		run req "$(s3)cutoff/$k" --service s3 --key "$AK" --secret "$SK"
		[ "${lines[0]}" = 404 ]
	done
	# no data directory, no temporary file of the two writes anywhere
	run find "$ROOT/data" -path '*/b/cutoff/*' \( -name 'd-*' -o -name '.tmp.*' \)
	[ -z "$output" ]
	run req "$(s3)cutoff" --method DELETE --service s3 --key "$AK" --secret "$SK"
	[ "${lines[0]}" = 204 ]
}

@test "curl --aws-sigv4 (no x-amz-content-sha256) is accepted" {
	run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" "$(s3)"
	[ "${lines[-1]}" = 200 ]
	[[ "$output" == *"<ListAllMyBucketsResult"* ]]
}

@test "presigned URLs work until they expire" {
	url=$(python3 - "$AK" "$SK" "$S3_PORT" <<'PY'
import sys, boto3
from botocore.config import Config
s = boto3.session.Session(aws_access_key_id=sys.argv[1], aws_secret_access_key=sys.argv[2], region_name="us-east-1")
c = s.client("s3", endpoint_url="https://127.0.0.1:%s" % sys.argv[3], config=Config(signature_version="s3v4"))
print(c.generate_presigned_url("list_buckets", ExpiresIn=300))
PY
)
	run curl -s -w '\n%{http_code}' --cacert "$ROOT/tls/ca.pem" "$url"
	[ "${lines[-1]}" = 200 ]
	run req "$(s3)" --service s3 --key "$AK" --secret "$SK" --presign 1 --skew -5
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"<Code>AccessDenied</Code><Message>Request has expired</Message>"* ]]
	run req "$(s3)" --service s3 --key "$AK" --secret "$SK" --presign 604801
	[ "${lines[0]}" = 400 ] || [ "${lines[0]}" = 403 ]
	[[ "$output" == *"<Code>AuthorizationQueryParametersError</Code>"* ]]
}

@test "spx-gw cgi answers one request from CGI variables" {
	run env REQUEST_METHOD=GET REQUEST_URI=/ HTTP_HOST=127.0.0.1 spx-gw cgi --root "$ROOT" --service s3
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Status: 403 Forbidden"* ]]
	[[ "$output" == *"<Error><Code>AccessDenied</Code>"* ]]
	run spx-gw cgi --root "$ROOT" --service nfs
	[ "$status" -eq 100 ]
	run env -u REQUEST_METHOD spx-gw cgi --root "$ROOT"
	[ "$status" -eq 100 ]
	[[ "$output" == *"REQUEST_METHOD is not set"* ]]
}

@test "spx-gw serve refuses a second instance on the same pidfile" {
	run spx-gw serve --root "$ROOT" --pidfile "$ROOT/run/gw.pid"
	[ "$status" -eq 1 ]
	[[ "$output" == *"already running"* ]]
}

@test "spx-gw call signs with libcurl the way nodes call each other" {
	run spx-gw call --root "$ROOT" DescribeRegions
	[ "$status" -eq 0 ]
	[[ "$output" == *"<regionName>us-east-1</regionName>"* ]]
	run spx-gw call --root "$ROOT" --service sts GetCallerIdentity
	[ "$status" -eq 0 ]
	[[ "$output" == *"<Arn>arn:aws:iam::"*":root</Arn>"* ]]
	run spx-gw call --root "$ROOT" --service s3 /
	[ "$status" -eq 0 ]
	[[ "$output" == *"<ListAllMyBucketsResult"* ]]
	run spx-gw call --root "$ROOT" DescribeRegions "RegionName.1=a b&c"
	[ "$status" -eq 100 ]
	[[ "$output" == *"Invalid region: a b&amp;c"* ]]
	run spx-gw call --root "$ROOT" DescribeRegions NoEquals
	[ "$status" -eq 100 ]
	[[ "$output" == *"'NoEquals' is not Name=Value"* ]]
	run spx-gw call --root "$ROOT" --service s3 nopath
	[ "$status" -eq 100 ]
}
