#!/usr/bin/env bats
# minio-go's functional suite (mint, full mode) against a node the test
# starts, over HTTPS with the node CA, through tests/clients/minio-go.sh.
# Individual minio-go failures are printed as TAP diagnostics, not failed:
# the test fails when the PASS count drops below the floor or when one of
# the tests known to pass no longer does.

load ../bats/helpers

# Measured 30 PASS, 22 FAIL, 46 NA on 2026-11-30 (minio-go 7.0.46, Debian)
# once the gateway refuses server-side encryption (NotImplemented) instead
# of ignoring it: the SSE tests are NA now. 45 PASS, 5 FAIL, 48 NA on
# 2026-12-03 once SigV2 is accepted; 46, 4, 48 with POST object; 48, 5,
# 45 with bucket policies (testFunctional and its V2 twin pass; the fifth
# FAIL is testGetObjectACLContext, whose PutObject carries x-amz-acl
# public-read-write, which AWS too refuses on its default buckets,
# BucketOwnerEnforced: AccessControlListNotSupported); 60, 5, 33 with
# object lock (the versioning and multi-delete tests make their buckets
# with it). Raise the floor as features land.
: "${SPX_MINIO_GO_FLOOR:=60}"
# ... and the most FAIL and NA it may log: a test that moves from PASS to
# FAIL or NA while another is gained must still be seen.
: "${SPX_MINIO_GO_FAIL_MAX:=5}"
: "${SPX_MINIO_GO_NA_MAX:=33}"

# Tests that pass today: any of them no longer logging PASS is a regression.
# (A name can also log FAIL or NA: the V2 variants share the wrappers, and
# testListObjects logs NA for each storage class it does not get back.)
MUST_PASS="testGetObjectRanges testPutObjectWithChecksums
testPutObjectWithMetadata testPutObjectReadAt testPutObjectStreaming
testGetObjectSeekEnd testGetObjectClosedTwice testRemoveMultipleObjects
testFPutObjectMultipart testFPutObject testGetObjectReadSeekFunctional
testGetObjectReadAtFunctional testGetObjectReadAtWhenEOFWasReached
testCopyObject testComposeObjectErrorCasesWrapper testGetObjectModified
testPutObjectUploadSeekedObject testGetObjectContext testFPutObjectContext
testFGetObjectContext testPutObjectContext testStorageClassMetadataPutObject
testStorageClassMetadataCopyObject testPutObjectWithContentLanguage
testListObjects testUnencryptedToUnencryptedCopyObject
testCopyObjectV2 testFGetObjectContextV2 testFPutObjectContextV2
testFPutObjectV2 testGetObjectClosedTwiceV2 testGetObjectContextV2
testGetObjectReadAtFunctionalV2 testGetObjectReadSeekFunctionalV2
testPutObject0ByteV2 testPutObjectContextV2 testPutObjectNoLengthV2
testPutObjectsUnknownV2 testComposeMultipleSources
testUnencryptedToUnencryptedCopyPart testUserMetadataCopyingWrapper
testPresignedPostPolicy testFunctional testFunctionalV2
testPutObjectWithVersioning testStatObjectWithVersioning
testGetObjectWithVersioning testCopyObjectWithVersioning
testConcurrentCopyObjectWithVersioning testComposeObjectWithVersioning
testRemoveObjectWithVersioning testRemoveObjectsWithVersioning
testObjectTaggingWithVersioning testListObjectVersions
testRemoveMultipleObjectsWithResult testRemoveObjects"

setup_file() {
	export ROOT EC2_PORT S3_PORT
	export SPX_MINIO_GO_CACHE="$SPX_BUILD/minio-go"
	# make_node puts the root under BATS_TEST_TMPDIR, unset in setup_file.
	BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR make_node
	# The suite sets public bucket policies on the buckets it makes, as
	# MinIO takes them: buckets here have no public access block.
	sed -i -E 's/^(http = (true|false))$/\1\ns3_public_access_block = false/' "$ROOT/spinifex.toml"
	grep -q '^s3_public_access_block = false$' "$ROOT/spinifex.toml"
	start_node
}

teardown_file() { stop_node; }

need_minio_go() {
	command -v go >/dev/null 2>&1 || skip "go is not installed (golang-go)"
	[ -f /usr/share/gocode/src/github.com/minio/minio-go/v7/functional_tests.go ] ||
		skip "the minio-go v7 sources are not installed (golang-github-minio-minio-go-v7-dev)"
}

@test "minio-go: the functional suite builds offline from Debian's sources" {
	need_minio_go
	run "$SPX_TOP/tests/clients/minio-go.sh" -b
	[ "$status" -eq 0 ]
	[ -x "$SPX_MINIO_GO_CACHE/functional.test" ]
}

@test "minio-go: usage errors exit 100" {
	run "$SPX_TOP/tests/clients/minio-go.sh" -m fast "$ROOT"
	[ "$status" -eq 100 ]
	[[ "$output" == *"usage: minio-go.sh"* ]]
	run "$SPX_TOP/tests/clients/minio-go.sh"
	[ "$status" -eq 100 ]
}

@test "minio-go: functional suite (full) passes at least the floor, fails and skips at most the ceilings" {
	need_minio_go
	local json="$BATS_TEST_TMPDIR/minio-go.json"
	run "$SPX_TOP/tests/clients/minio-go.sh" -m full -o "$json" "$ROOT"
	[ "$status" -eq 0 ]
	# The summary and every FAIL and NA, as TAP diagnostics.
	printf '# %s\n' "${lines[@]}" >&3
	[[ "${lines[0]}" =~ ^minio-go:\ ([0-9]+)\ PASS,\ ([0-9]+)\ FAIL,\ ([0-9]+)\ NA\ \(mode\ full,\ https\ 1\)$ ]]
	local pass=${BASH_REMATCH[1]} fail=${BASH_REMATCH[2]} na=${BASH_REMATCH[3]}
	[[ "$output" != *"EXIT the suite exited"* ]]
	run python3 - "$json" $MUST_PASS <<'EOF'
import json, sys
st = {}
for l in open(sys.argv[1]):
    try:
        d = json.loads(l)
    except ValueError:
        continue
    n = d.get("name", "").removeprefix("minio-go: ")
    st.setdefault(n, set()).add(d.get("status"))
bad = [n for n in sys.argv[2:] if "PASS" not in st.get(n, ())]
print(" ".join("%s=%s" % (n, ",".join(sorted(st.get(n, {"missing"})))) for n in bad))
sys.exit(1 if bad else 0)
EOF
	[ "$status" -eq 0 ] || { echo "# no longer passing: $output" >&3; false; }
	if [ "$pass" -lt "$SPX_MINIO_GO_FLOOR" ]; then
		echo "# $pass PASS is below the floor of $SPX_MINIO_GO_FLOOR" >&3
		false
	fi
	if [ "$fail" -gt "$SPX_MINIO_GO_FAIL_MAX" ] || [ "$na" -gt "$SPX_MINIO_GO_NA_MAX" ]; then
		echo "# $fail FAIL, $na NA: more than $SPX_MINIO_GO_FAIL_MAX FAIL or $SPX_MINIO_GO_NA_MAX NA" >&3
		false
	fi
}
