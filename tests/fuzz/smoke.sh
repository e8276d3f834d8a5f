#!/usr/bin/env bash
# Run every fuzz target for SECONDS seconds each; fail if any crashed.
#   tests/fuzz/smoke.sh FUZZ_BIN_DIR SECONDS
# Targets run SPX_FUZZ_JOBS at a time (default: the CPUs, at most 2);
# libFuzzer runs on one core, so each target gets as many runs as it
# would alone. Results are printed in the targets' order.
set -u
dir=${1:?usage: smoke.sh FUZZ_BIN_DIR SECONDS} secs=${2:-60}
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/jobs.sh"
jobs=$(spx_jobs SPX_FUZZ_JOBS)
out=$(mktemp -d /tmp/spx-fuzz.XXXXXX)
trap 'rm -rf "$out"' EXIT

# one N TARGET: run it; its result line goes to $out/N.
one() {
	local n=$1 f=$2 name corpus
	name=$(basename "$f")
	corpus=$(mktemp -d /tmp/spx-corpus.XXXXXX)
	# Seed with the target's own corpus when it has one.
	[ -d "$top/tests/fuzz/corpus/$name" ] && cp -r "$top/tests/fuzz/corpus/$name/." "$corpus/"
	if "$f" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="/tmp/$name-" "$corpus" >"/tmp/$name.log" 2>&1; then
		echo "ok $n - $name: $(grep -Eo 'Done [0-9]+ runs.*' "/tmp/$name.log" | tail -1)" >"$out/$n"
		rm -f "/tmp/$name.log" # kept only for a crash
	else
		{
			echo "not ok $n - $name crashed; see /tmp/$name.log and /tmp/$name-*"
			tail -30 "/tmp/$name.log"
		} >"$out/$n"
	fi
	rm -rf "$corpus"
}

n=0
for f in "$dir"/fuzz_*; do
	[ -x "$f" ] || continue
	n=$((n + 1))
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	one "$n" "$f" &
done
wait
fail=0
for i in $(seq 1 "$n"); do
	if [ -s "$out/$i" ]; then
		cat "$out/$i"
		grep -q '^not ok' "$out/$i" && fail=1
	else
		echo "not ok $i - no result"
		fail=1
	fi
done
echo "1..$n"
exit $fail
