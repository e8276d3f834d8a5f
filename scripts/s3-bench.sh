#!/usr/bin/env bash
# s3-bench.sh: the S3 data path of a running node, the reference way:
# write an object of SIZE_MB MiB, read it back, verify it, three times, and
# print write and read MiB/s of each run and their medians, each beside the
# limit measured in the same run (raw write with fsync on BENCHDIR's file
# system, and nginx serving the same bytes by sendfile).
#
#   scripts/s3-bench.sh [--root DIR | --endpoint URL] [SIZE_MB]
#
# The node is --root DIR, else $SPX_ROOT, else ./run/node1 (the node
# `make run` starts), else the system node; or any S3
# endpoint with --endpoint (key from AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY). SIZE_MB defaults to 256. RUNS (3), BENCHDIR
# (/var/tmp/spx-bench) and SPX_BENCH_RESULTS change what it does. Every
# byte read back is checked (CRC-32C), and every write's ETag against the
# MD5 of what was sent; a mismatch fails the run.
set -euo pipefail
target=()
while [ $# -gt 0 ]; do
	case $1 in
	--root | --endpoint)
		[ $# -ge 2 ] || { echo "s3-bench.sh: $1 needs a value" >&2; exit 100; }
		target=("$1" "$2"); shift 2 ;;
	-h | --help)
		sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "s3-bench.sh: unknown option $1" >&2; exit 100 ;;
	*) break ;;
	esac
done
size=${1:-256}
case $size in
'' | *[!0-9]*) echo "s3-bench.sh: SIZE_MB must be a whole number of MiB, not '$size'" >&2; exit 100 ;;
esac
if [ ${#target[@]} -eq 0 ]; then
	# $SPX_ROOT, else the node `make run` starts, else the system node.
	root=${SPX_ROOT:-}
	[ -z "$root" ] && [ -f run/node1/spinifex.toml ] && root=run/node1
	target=(--root "${root:-/etc/spinifex}")
fi
# spx-bench from PATH (an installed or a built tree's), else this tree's build.
bench=spx-bench
if ! command -v spx-bench >/dev/null 2>&1; then
	bench=$(cd "$(dirname "$0")/.." && pwd)/build/bin/spx-bench
fi
exec "$bench" s3 "${target[@]}" --sizes "$size" \
	--runs "${RUNS:-3}" --tag "s3-bench-$size"
