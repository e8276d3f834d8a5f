#!/usr/bin/env bash
# Run the whole test suite and end with one line "N passed, N failed, N skipped".
#   tests/run.sh [--memcheck] BUILD_DIR [FILTER]
# BUILD_DIR holds bin/ and tests/ (make's O=). FILTER, a substring, limits
# which unit binaries and bats files run. Every part speaks TAP; this script
# counts the lines. Exit status: 0 when nothing failed.
set -u
memcheck=0
if [ "${1:-}" = --memcheck ]; then memcheck=1; shift; fi
O=${1:?usage: tests/run.sh [--memcheck] BUILD_DIR [FILTER]}
filter=${2:-}
top=$(cd "$(dirname "$0")/.." && pwd)
O=$(cd "$top" && cd "$O" && pwd)
export SPX_BUILD="$O" SPX_TOP="$top"
export PATH="$O/bin:$PATH"
log=$(mktemp -d /tmp/spx-test.XXXXXX)
trap 'rm -rf "$log"' EXIT

pass=0 fail=0 skip=0
tally() { # $1: name, $2: file with TAP output, $3: exit status, $4: seconds
	local p f s
	p=$(grep -cE '^ok ' "$2" | head -1)
	s=$(grep -cE '^ok .*# (skip|SKIP)' "$2" | head -1)
	f=$(grep -cE '^not ok ' "$2" | head -1)
	p=$((p - s))
	if [ "$3" -ne 0 ] && [ "$f" -eq 0 ]; then
		# A crash or a non-zero exit with no failing point is a failure.
		echo "not ok - $1 exited with status $3" >>"$2"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	if [ "$f" -gt 0 ]; then
		echo "FAIL $1 ($p passed, $f failed; ${4}s)"
		grep -vE '^ok ' "$2" | sed 's/^/    /' | head -60
	else
		echo "ok   $1 ($p passed${s:+, $s skipped}; ${4}s)"
	fi
}

echo "== unit tests"
for t in "$O"/tests/test_*; do
	[ -x "$t" ] || continue
	n=$(basename "$t")
	case "$n" in *"$filter"*) ;; *) continue ;; esac
	out="$log/$n.tap"
	t0=$SECONDS
	if [ $memcheck = 1 ]; then
		valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
			--error-exitcode=99 --trace-children=no "$t" >"$out" 2>"$log/$n.err"
	else
		"$t" >"$out" 2>"$log/$n.err"
	fi
	rc=$?
	[ $rc -ne 0 ] && sed 's/^/# /' "$log/$n.err" >>"$out"
	tally "$n" "$out" $rc $((SECONDS - t0))
done

if [ $memcheck = 0 ]; then
	if command -v bats >/dev/null 2>&1; then
		echo "== bats and real-client tests"
		for b in "$top"/tests/bats/*.bats "$top"/tests/clients/*.bats; do
			[ -f "$b" ] || continue
			n=${b#"$top"/tests/}
			case "$n" in *"$filter"*) ;; *) continue ;; esac
			out="$log/$(echo "$n" | tr / _).tap"
			t0=$SECONDS
			bats --tap "$b" >"$out" 2>&1
			tally "$n" "$out" $? $((SECONDS - t0))
		done
	else
		echo "not ok - bats is not installed (run scripts/deps.sh)"
		fail=$((fail + 1))
	fi
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
