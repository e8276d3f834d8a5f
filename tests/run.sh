#!/usr/bin/env bash
# Run the whole test suite and end with one line "N passed, N failed, N skipped".
#   tests/run.sh [--memcheck] BUILD_DIR [FILTER]
# BUILD_DIR holds bin/ and tests/ (make's O=). FILTER, a substring, limits
# which unit binaries and bats files run. Every part speaks TAP; this script
# counts the lines. Exit status: 0 when nothing failed.
#
# SPX_TEST_JOBS (default: the number of CPUs, at most 2) files run at once.
# Each bats file makes its own node (its own root, ports picked by the
# kernel) and kills only what it started, so files do not meet; most of a
# file's time is a client's start-up or a TCG guest, one core each. The
# files listed in tests/slow start first, so that the longest do not end
# the run alone. SPX_TEST_SKIP: a space-separated list of bats files
# (as tests/bats/x.bats is named, bats/x.bats) not to run; each is counted
# as skipped.
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
. "$top/tests/jobs.sh"
jobs=$(spx_jobs SPX_TEST_JOBS)

declare -A running=() # pid -> name
awsd=
cleanup() {
	local p
	for p in "${!running[@]}"; do kill -- "$p" 2>/dev/null; done
	[ -z "$awsd" ] || kill "$awsd" 2>/dev/null
	rm -rf "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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

# one NAME OUT CMD...: run CMD with its TAP on OUT and its stderr on
# OUT.err; write its exit status and seconds to OUT.rc when it ends.
one() {
	local n=$1 out=$2 t0=$SECONDS rc
	shift 2
	"$@" >"$out" 2>"$out.err"
	rc=$?
	echo "$rc $((SECONDS - t0))" >"$out.rc"
}

# reap: wait for one running part to end and count it.
reap() {
	local p n out rc secs
	wait -n -p p "${!running[@]}"
	n=${running[$p]}
	unset "running[$p]"
	out="$log/$(echo "$n" | tr / _).tap"
	read -r rc secs <"$out.rc" 2>/dev/null || { rc=1 secs=?; }
	case "$n" in
	*.bats) cat "$out.err" >>"$out" ;;
	*) [ "$rc" -ne 0 ] && sed 's/^/# /' "$out.err" >>"$out" ;;
	esac
	tally "$n" "$out" "$rc" "$secs"
}

# start NAME CMD...: run a part once fewer than $jobs run.
start() {
	local n=$1
	shift
	while [ "${#running[@]}" -ge "$jobs" ]; do reap; done
	one "$n" "$log/$(echo "$n" | tr / _).tap" "$@" &
	running[$!]=$n
}
drain() { while [ "${#running[@]}" -gt 0 ]; do reap; done; }

echo "== unit tests"
for t in "$O"/tests/test_*; do
	[ -x "$t" ] || continue
	n=$(basename "$t")
	case "$n" in *"$filter"*) ;; *) continue ;; esac
	if [ $memcheck = 1 ]; then
		start "$n" valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
			--error-exitcode=99 --trace-children=no "$t"
	else
		start "$n" "$t"
	fi
done
drain

if [ $memcheck = 0 ]; then
	if command -v bats >/dev/null 2>&1; then
		echo "== bats and real-client tests ($jobs at a time)"
		# Debian's aws CLI v2, imported once for the run and forked for
		# each call (tests/clients/awsd.py; the helpers' awscli2 uses it
		# once its socket is there, /usr/bin/aws before).
		if [ -x /usr/bin/aws ] && [ -x /usr/bin/python3 ]; then
			/usr/bin/python3 "$top/tests/clients/awsd.py" "$log/aws.sock" 2>"$log/awsd.err" &
			awsd=$!
			export SPX_AWSD="$log/aws.sock"
		fi
		files=()
		while read -r f; do
			[ -f "$top/tests/$f" ] && files+=("$top/tests/$f")
		done < <(grep -v '^#' "$top/tests/slow" 2>/dev/null)
		for b in "$top"/tests/bats/*.bats "$top"/tests/clients/*.bats; do
			case " ${files[*]} " in *" $b "*) continue ;; esac
			files+=("$b")
		done
		for b in "${files[@]}"; do
			[ -f "$b" ] || continue
			n=${b#"$top"/tests/}
			case "$n" in *"$filter"*) ;; *) continue ;; esac
			case " ${SPX_TEST_SKIP:-} " in *" $n "*)
				echo "ok   $n (skipped: SPX_TEST_SKIP)"
				skip=$((skip + 1))
				continue
				;;
			esac
			start "$n" bats --tap "$b"
		done
		drain
		if [ -s "$log/awsd.err" ]; then
			echo "# the aws CLI server said:"
			sed 's/^/#   /' "$log/awsd.err" | head -20
		fi
	else
		echo "not ok - bats is not installed (run scripts/deps.sh)"
		fail=$((fail + 1))
	fi
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
