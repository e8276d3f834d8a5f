#!/bin/sh
# Put the figures of an `spx-bench s3` run into the README, from the
# summary the run wrote: never typed by hand.
#   scripts/bench-readme.sh RESULTS/TAG/summary.md
# Copies the summary to bench/results/s3.md (committed with the machine
# it ran on, which the summary names) and replaces the README's block
# between the "spx-bench s3 results" markers with it. tests/bats/docs.bats
# checks that the two agree.
set -eu
src=${1:?usage: scripts/bench-readme.sh RESULTS/TAG/summary.md}
top=$(cd "$(dirname "$0")/.." && pwd)
begin='<!-- spx-bench s3 results: bench/results/s3.md, written by scripts/bench-readme.sh -->'
end='<!-- end of spx-bench s3 results -->'
grep -q '^| figure | spx | limit (same runs) | ratio | verdict |$' "$src" || {
	echo "bench-readme.sh: '$src' is not an spx-bench s3 summary" >&2
	exit 100
}
grep -qxF "$begin" "$top/README.md" && grep -qxF "$end" "$top/README.md" || {
	echo "bench-readme.sh: README.md lacks the result markers" >&2
	exit 1
}
mkdir -p "$top/bench/results"
cp "$src" "$top/bench/results/s3.md.tmp"
mv "$top/bench/results/s3.md.tmp" "$top/bench/results/s3.md"
awk -v b="$begin" -v e="$end" -v f="$top/bench/results/s3.md" '
	$0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }
' "$top/README.md" >"$top/README.md.tmp"
mv "$top/README.md.tmp" "$top/README.md"
echo "README.md: figures from $src (kept as bench/results/s3.md)"
