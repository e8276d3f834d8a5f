# Sourced by tests/run.sh and tests/fuzz/smoke.sh (bash).
# spx_jobs VAR: how many to run at once. $VAR when it is set (anything but
# a number above 0 counts as 1); else the CPUs, at most 2: each job wants
# a core of its own, and CI has two.
spx_jobs() {
	local v=${!1:-} n
	n=${v:-$(nproc 2>/dev/null || echo 1)}
	case "$n" in '' | *[!0-9]* | 0) n=1 ;; esac
	[ -n "$v" ] || [ "$n" -le 2 ] || n=2
	echo "$n"
}
