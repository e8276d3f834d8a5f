#!/bin/sh
# Put the figures of an `spx-bench s3`, `block` or `vm` run into the
# README, from the summary the run wrote: never typed by hand.
#   scripts/bench-readme.sh RESULTS/TAG/summary.md
# Tells the suite from the summary's first line, copies the summary to
# bench/results/SUITE.md (committed with the machine it ran on, which the
# summary names) and replaces the README's block between the
# "spx-bench SUITE results" markers with it. A --quick run is refused.
# tests/bats/docs.bats checks that the README and the files agree.
set -eu
src=${1:?usage: scripts/bench-readme.sh RESULTS/TAG/summary.md}
top=$(cd "$(dirname "$0")/.." && pwd)
suite=$(sed -n '1s/^spx-bench \(s3\|block\|vm\), tag [A-Za-z0-9._-]*: [0-9]* runs\{0,1\}, .*/\1/p' "$src")
case $suite in
s3) head='| figure | spx | limit (same runs) | ratio | verdict |' ;;
block) head='| test | host | plain nbdkit | spx volume | nbdkit/host | volume/host | volume/nbdkit | verdict |' ;;
vm) head='| boot, from the request (API polled every 50 ms) | instance, median [min-max] | limit: spx-vm start, no API | limit, median [min-max] | instance/limit |' ;;
*) head= ;;
esac
[ -n "$head" ] && grep -qxF "$head" "$src" || {
	echo "bench-readme.sh: '$src' is not an spx-bench s3, block or vm summary" >&2
	exit 100
}
if grep -q '^- --quick: ' "$src"; then
	echo "bench-readme.sh: '$src' is a --quick run, not figures to read" >&2
	exit 100
fi
begin="<!-- spx-bench $suite results: bench/results/$suite.md, written by scripts/bench-readme.sh -->"
end="<!-- end of spx-bench $suite results -->"
grep -qxF "$begin" "$top/README.md" && grep -qxF "$end" "$top/README.md" || {
	echo "bench-readme.sh: README.md lacks the $suite result markers" >&2
	exit 1
}
mkdir -p "$top/bench/results"
cp "$src" "$top/bench/results/$suite.md.tmp"
mv "$top/bench/results/$suite.md.tmp" "$top/bench/results/$suite.md"
awk -v b="$begin" -v e="$end" -v f="$top/bench/results/$suite.md" '
	$0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }
' "$top/README.md" >"$top/README.md.tmp"
mv "$top/README.md.tmp" "$top/README.md"
echo "README.md: figures from $src (kept as bench/results/$suite.md)"
