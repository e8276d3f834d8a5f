#!/bin/sh
# minio-go's functional suite (the one MinIO's mint runs) against a running
# spx node: a compatibility measurement, not a pass/fail test.
#
#   tests/clients/minio-go.sh [-m core|full] [-o FILE] ROOT
#   tests/clients/minio-go.sh -b
#
# The suite is functional_tests.go from Debian's
# golang-github-minio-minio-go-v7-dev, built offline in GOPATH mode against
# the Debian-packaged modules under /usr/share/gocode, into
# $SPX_MINIO_GO_CACHE (default build/minio-go) as functional.test; it is
# rebuilt only when missing or older than its source. -b builds and stops.
#
# The node is read from ROOT: endpoint and scheme from spinifex.toml (an
# --http node runs plain HTTP, otherwise HTTPS trusting ROOT/tls/ca.pem, which
# adds the SSE-C tests), the first key of credentials.json. -m picks
# MINT_MODE (default full: about 20 s; core is two tests). The raw JSON lines
# go to FILE (default: a temporary file, removed).
#
# Output: "minio-go: N PASS, N FAIL, N NA (mode M, https H)", then one line
# per FAIL and NA: "FAIL test: function: message: error". A failing test
# of minio-go does not change the exit status.
#
# Exit status: 0 the suite ran; 1 go or the minio-go sources are absent;
# 100 usage; 111 the suite could not be built or run.
set -u

prog=minio-go.sh
src=/usr/share/gocode/src/github.com/minio/minio-go/v7/functional_tests.go
top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${SPX_MINIO_GO_CACHE:-$top/build/minio-go}
bin=$cache/functional.test

usage() {
	echo "usage: $prog [-m core|full] [-o FILE] ROOT" >&2
	echo "       $prog -b" >&2
	exit 100
}

mode=full out="" build_only=0
while getopts bm:o: c; do
	case $c in
	b) build_only=1 ;;
	m) case $OPTARG in core|full) mode=$OPTARG ;; *) usage ;; esac ;;
	o) out=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
if [ $build_only = 1 ]; then
	[ $# -eq 0 ] || usage
else
	[ $# -eq 1 ] || usage
	root=$(cd "$1" 2>/dev/null && pwd) || root=$1
	if [ ! -f "$root/spinifex.toml" ] || [ ! -f "$root/credentials.json" ]; then
		echo "$prog: '$root' is not a node root (no spinifex.toml, credentials.json)" >&2
		exit 100
	fi
fi

command -v go >/dev/null 2>&1 || {
	echo "$prog: go is not installed (apt-get install golang-go)" >&2
	exit 1
}
[ -f "$src" ] || {
	echo "$prog: cannot find '$src' (apt-get install golang-github-minio-minio-go-v7-dev)" >&2
	exit 1
}

# functional_tests.go is "package main" behind the build tag "mint", in the
# library's own directory: GOPATH mode with -tags mint would compile it into
# the library package. A copy without the tag lines builds as a program of
# its own, importing the library from GOPATH. No module proxy is consulted.
build() {
	mkdir -p "$cache/src" || return 1
	sed '/^\/\/go:build mint$/d; /^\/\/ +build mint$/d' "$src" \
		>"$cache/src/functional_tests.go" || return 1
	(cd "$cache/src" &&
	 env GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS= \
		GOCACHE="$cache/gocache" CGO_ENABLED=0 \
		go build -o "$bin.tmp" functional_tests.go) || return 1
	mv "$bin.tmp" "$bin"
}

if [ ! -x "$bin" ] || [ -n "$(find "$src" -newer "$bin")" ]; then
	echo "$prog: building $bin" >&2
	build || { echo "$prog: cannot build '$bin'" >&2; exit 111; }
fi
[ $build_only = 1 ] && exit 0

# The node's S3 endpoint, scheme and admin key.
node=$(python3 - "$root" <<'EOF'
import json, sys, tomllib
root = sys.argv[1]
with open(root + "/spinifex.toml", "rb") as f:
    t = tomllib.load(f)
gw = t["nodes"][t["node"]]["gw"]
k = json.load(open(root + "/credentials.json"))["keys"][0]
print(gw.get("bind", "127.0.0.1"), gw["s3_port"], 0 if gw.get("http") else 1,
      k["AccessKeyId"], k["SecretAccessKey"])
EOF
) || { echo "$prog: cannot read the node in '$root'" >&2; exit 111; }
set -f
# shellcheck disable=SC2086 # five words, split on purpose
set -- $node
set +f
host=$1 port=$2 https=$3 ak=$4 sk=$5
case $host in 0.0.0.0|"") host=127.0.0.1 ;; esac

# The suite writes scratch files into its working directory, and some into
# os.TempDir() that it never removes (a 129 MiB FPutObject file, a
# PresignedPostPolicy one): TMPDIR keeps those in $work too.
work=$(mktemp -d "${TMPDIR:-/tmp}/minio-go.XXXXXX") || exit 111
trap 'rm -rf "$work"' EXIT
trap 'exit 111' INT TERM
case $out in
"") out=$work/out.json ;;
/*) ;;
*) out=$PWD/$out ;;
esac

# The suite logs "Fatal" on the first failure unless RUN_ON_FAIL=1; KMS
# (SSE-S3) tests are asked for explicitly. SSL_CERT_FILE is how Go's
# crypto/x509 takes the node CA.
(cd "$work" &&
 env SERVER_ENDPOINT="$host:$port" ACCESS_KEY="$ak" SECRET_KEY="$sk" \
	TMPDIR="$work" ENABLE_HTTPS="$https" ENABLE_KMS=1 MINT_MODE="$mode" RUN_ON_FAIL=1 \
	SSL_CERT_FILE="$root/tls/ca.pem" \
	timeout 240 "$bin" >"$out" 2>"$work/stderr")
rc=$?

python3 - "$out" "$mode" "$https" "$rc" <<'EOF'
import json, sys
path, mode, https, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
n = {"PASS": 0, "FAIL": 0, "NA": 0}
lines, raw = [], []
for l in open(path, errors="replace"):
    l = l.strip()
    if not l:
        continue
    try:
        d = json.loads(l)
    except ValueError:
        raw.append(l)
        continue
    s = d.get("status", "?")
    n[s] = n.get(s, 0) + 1
    if s != "PASS":
        name = d.get("name", "?").removeprefix("minio-go: ")
        why = ": ".join(x for x in (d.get("message"), d.get("error"),
                                    d.get("alert")) if x)
        lines.append("%s %s: %s: %s" % (s, name, d.get("function", "?"), why))
print("minio-go: %d PASS, %d FAIL, %d NA (mode %s, https %s)"
      % (n["PASS"], n["FAIL"], n["NA"], mode, https))
for l in lines:
    print(l)
for l in raw[:20]:
    print("RAW " + l[:300])
if rc != 0:
    print("EXIT the suite exited with status %d" % rc)
EOF
[ -s "$work/stderr" ] && sed 's/^/STDERR /' "$work/stderr" | head -20
exit 0
