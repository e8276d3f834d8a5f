#!/usr/bin/env bash
# Run every fuzz target for SECONDS seconds each; fail on the first crash.
#   tests/fuzz/smoke.sh FUZZ_BIN_DIR SECONDS
set -u
dir=${1:?usage: smoke.sh FUZZ_BIN_DIR SECONDS} secs=${2:-60}
top=$(cd "$(dirname "$0")/../.." && pwd)
fail=0 n=0
for f in "$dir"/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	corpus=$(mktemp -d /tmp/spx-corpus.XXXXXX)
	# Seed with the target's own corpus when it has one.
	[ -d "$top/tests/fuzz/corpus/$name" ] && cp -r "$top/tests/fuzz/corpus/$name/." "$corpus/"
	n=$((n + 1))
	if "$f" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="/tmp/$name-" "$corpus" >"/tmp/$name.log" 2>&1; then
		echo "ok $n - $name: $(grep -Eo 'Done [0-9]+ runs.*' "/tmp/$name.log" | tail -1)"
		rm -f "/tmp/$name.log" # kept only for a crash
	else
		echo "not ok $n - $name crashed; see /tmp/$name.log and /tmp/$name-*"
		tail -30 "/tmp/$name.log"
		fail=1
	fi
	rm -rf "$corpus"
done
echo "1..$n"
exit $fail
