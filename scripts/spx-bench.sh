#!/usr/bin/env bash
# spx-bench.sh: the platform-cost benchmark, the measurement engine of the
# "host" suite. Operators run it on the bare-metal host and inside a guest so
# that the two results diff directly; `spx-bench host` chainloads it and reads
# the JSON it writes (schema spx-bench/1, the contract with the C tool).
#
# It must run in a guest that has only bash, coreutils, awk (mawk is enough),
# sed, sysbench and fio: no grep, no python, no jq, no findmnt. Keep it so.
set -u
set -o pipefail
export LC_ALL=C # '.' as the decimal point in every number we print or parse

PROG=spx-bench.sh

read -r -d '' USAGE <<'EOF'
usage: spx-bench.sh [--tag T] [--runs N] [--dir DIR] [--results DIR]
                    [--require-mount] [--quick] [--json-only]

Measure the platform: system facts, CPU and memory (sysbench), and disk
(fio, file-backed under DIR). Prints a report and writes one JSON file per run
to RESULTS/TAG/<UTC time>-run<N>.json (schema spx-bench/1).

  --tag T           label of the results, [A-Za-z0-9._-]{1,64}
                    (default: host-<short hostname>)
  --runs N          repeat the whole suite N times, 1..100 (default: 1)
  --dir DIR         where fio puts its files, in a temporary subdirectory
                    .spx-bench.XXXXXX removed at the end (default: $BENCHDIR,
                    else the current directory)
  --results DIR     where the JSON goes (default: $SPX_BENCH_RESULTS, else
                    ./bench-results)
  --require-mount   refuse unless DIR is a mount point of its own
  --quick           short jobs, for tests: 1 s each, 32M fio files
  --json-only       print only the path of each JSON file
  -h, --help        show this help

The methodology: sysbench cpu with 1 thread and with nproc threads (10 s
each); sysbench memory, random 1K writes, nproc threads (10 s); fio with
libaio, direct=1, numjobs=4, iodepth=32, a 1G file per job (4 GiB in all),
30 s after a 5 s ramp per job: randrw 70/30 4k, randread 4k, seqread 1M,
seqwrite 1M.

Environment:
  BENCHDIR            default of --dir
  SPX_BENCH_RESULTS   default of --results
  SPX_BENCH_FIO_SIZE  size of each fio job's file, e.g. 64M or 2G (default: 1G,
                      with --quick 32M); DIR needs four times that free

Exit status: 0 success; 1 DIR does not exist or is not a mount point (with
--require-mount); 100 usage error; 111 a tool is missing, fails, or runs out
of space.
EOF

die() { # status message...
	local st=$1
	shift
	printf '%s: %s\n' "$PROG" "$*" >&2
	exit "$st"
}

# stdout carries the report: a write error (ENOSPC, EIO) is a failure, named
# once, by us rather than by the printf builtin.
out() {
	# shellcheck disable=SC2059 # out takes printf's arguments, format first
	printf "$@" 2>/dev/null || die 111 "cannot write to standard output"
}

needarg() { # option count
	[ "$2" -ge 2 ] || die 100 "option '$1' needs an argument"
}

# --- Arguments -------------------------------------------------------------

TAG=
TAG_SET=0
RUNS=1
DIR=${BENCHDIR:-.}
RESULTS=${SPX_BENCH_RESULTS:-./bench-results}
REQUIRE_MOUNT=0
QUICK=0
JSON_ONLY=0

while [ $# -gt 0 ]; do
	opt=$1
	val=
	case $opt in
	--tag=* | --runs=* | --dir=* | --results=*)
		val=${opt#*=}
		opt=${opt%%=*}
		shift
		set -- "$opt" "$val" "$@"
		continue
		;;
	-h | --help)
		out '%s\n' "$USAGE"
		exit 0
		;;
	--tag) needarg "$opt" $#; TAG=$2; TAG_SET=1; shift 2 ;;
	--runs) needarg "$opt" $#; RUNS=$2; shift 2 ;;
	--dir) needarg "$opt" $#; DIR=$2; shift 2 ;;
	--results) needarg "$opt" $#; RESULTS=$2; shift 2 ;;
	--require-mount) REQUIRE_MOUNT=1; shift ;;
	--quick) QUICK=1; shift ;;
	--json-only) JSON_ONLY=1; shift ;;
	--require-mount=* | --quick=* | --json-only=*)
		die 100 "option '${opt%%=*}' takes no argument" ;;
	--) shift; [ $# -eq 0 ] || die 100 "unexpected argument '$1'" ;;
	-*) die 100 "unknown option '$opt' (see --help)" ;;
	*) die 100 "unexpected argument '$opt' (see --help)" ;;
	esac
done

HOST=$(uname -n) || die 111 "uname failed"
if [ "$TAG_SET" = 0 ]; then
	# The short host name, made a valid tag.
	TAG=host-${HOST%%.*}
	TAG=${TAG//[^A-Za-z0-9._-]/-}
	TAG=${TAG:0:64}
fi
if [[ ! $TAG =~ ^[A-Za-z0-9._-]{1,64}$ ]] || [ "$TAG" = . ] || [ "$TAG" = .. ]; then
	die 100 "bad tag '$TAG' (want 1 to 64 of A-Z a-z 0-9 . _ -)"
fi
if [[ ! $RUNS =~ ^[1-9][0-9]{0,2}$ ]] || [ "$RUNS" -gt 100 ]; then
	die 100 "bad run count '$RUNS' (want 1 to 100)"
fi
[ -n "$DIR" ] || die 100 "empty directory name for --dir"
[ -n "$RESULTS" ] || die 100 "empty directory name for --results"

if [ "$QUICK" = 1 ]; then
	CPU_TIME=1 FIO_RUNTIME=1 FIO_RAMP=0 FIO_SIZE=32M
else
	CPU_TIME=10 FIO_RUNTIME=30 FIO_RAMP=5 FIO_SIZE=1G
fi
FIO_JOBS=4
FIO_SIZE=${SPX_BENCH_FIO_SIZE:-$FIO_SIZE}
# fio reads K, M, G, T as powers of 1024; at least 1M, the seqread block.
if [[ ! $FIO_SIZE =~ ^([1-9][0-9]{0,6})([KMGT])$ ]]; then
	die 100 "bad SPX_BENCH_FIO_SIZE '$FIO_SIZE' (want a size such as 64M or 2G)"
fi
case ${BASH_REMATCH[2]} in
K) FIO_SIZE_MIB=$(((BASH_REMATCH[1] + 1023) / 1024)) ;;
M) FIO_SIZE_MIB=${BASH_REMATCH[1]} ;;
G) FIO_SIZE_MIB=$((BASH_REMATCH[1] * 1024)) ;;
T) FIO_SIZE_MIB=$((BASH_REMATCH[1] * 1024 * 1024)) ;;
esac
if [ "${BASH_REMATCH[2]}" = K ] && [ "${BASH_REMATCH[1]}" -lt 1024 ]; then
	die 100 "bad SPX_BENCH_FIO_SIZE '$FIO_SIZE' (at least 1M)"
fi
FIO_NEED_MIB=$((FIO_SIZE_MIB * FIO_JOBS))

# --- Prerequisites, all before any output ------------------------------------

for t in awk sed sysbench fio; do
	command -v "$t" >/dev/null 2>&1 || {
		pkg=$t
		[ "$t" = awk ] && pkg=mawk
		die 111 "$t is not installed (apt-get install $pkg)"
	}
done

[ -e "$DIR" ] || die 1 "'$DIR' does not exist"
[ -d "$DIR" ] || die 1 "'$DIR' is not a directory"
DIR=$(cd -- "$DIR" && pwd -P) || die 111 "cannot enter '$DIR'"

# A mount point: another device than its parent, the root of the tree
# (/ is its own parent), or listed in the mount table (a bind mount of a
# directory of the same file system).
is_mount_point() { # dir
	local d p
	d=$(stat -c '%d:%i' -- "$1") || return 1
	p=$(stat -c '%d:%i' -- "$1/..") || return 1
	[ "${d%%:*}" != "${p%%:*}" ] && return 0
	[ "$d" = "$p" ] && return 0
	[ -r /proc/self/mounts ] || return 1
	# The kernel writes blanks in mount points as octal escapes (\040).
	awk -v dir="$1" '
		{ m = $2; while (match(m, /\\[0-7][0-7][0-7]/)) {
			c = substr(m, RSTART + 1, 3)
			v = (substr(c, 1, 1) * 64) + (substr(c, 2, 1) * 8) + substr(c, 3, 1)
			m = substr(m, 1, RSTART - 1) sprintf("%c", v) substr(m, RSTART + RLENGTH) }
		  if (m == dir) found = 1 }
		END { exit !found }' /proc/self/mounts
}

if [ "$REQUIRE_MOUNT" = 1 ] && ! is_mount_point "$DIR"; then
	die 1 "$DIR is not a mount point; mount a dedicated volume there (the guest's root is too small to benchmark)"
fi

# The file system under DIR: device and type from df (coreutils, so the same
# on host and guest), findmnt or the mount table when df has no answer;
# size and free space from statfs.
fs_info() {
	local line
	DEVICE='' FSTYPE=''
	line=$(df -PT -- "$DIR" 2>/dev/null | awk 'NR == 2 { print $1, $2 }')
	[ -n "$line" ] && read -r DEVICE FSTYPE <<<"$line"
	if [ -z "$FSTYPE" ] || [ "$FSTYPE" = - ]; then
		if command -v findmnt >/dev/null 2>&1; then
			line=$(findmnt -n -r -o SOURCE,FSTYPE -T "$DIR" 2>/dev/null)
		elif [ -r /proc/self/mounts ]; then
			# The longest mount point that is a prefix of DIR.
			line=$(awk -v dir="$DIR" '
				{ m = $2; if (m != "/") m = m "/"
				  if (index(dir "/", m) == 1 && length(m) >= best) { best = length(m); r = $1 " " $3 } }
				END { print r }' /proc/self/mounts)
		fi
		[ -n "$line" ] && read -r DEVICE FSTYPE <<<"$line"
	fi
	DEVICE=${DEVICE:-unknown} FSTYPE=${FSTYPE:-unknown}
	line=$(stat -f -c '%S %b %a' -- "$DIR") || die 111 "cannot stat the file system of '$DIR'"
	read -r FS_SIZE_MIB FS_FREE_MIB <<<"$(awk '{ printf "%d %d\n", $1 * $2 / 1048576, $1 * $3 / 1048576 }' <<<"$line")"
}
fs_info

if [ "$FS_FREE_MIB" -lt "$FIO_NEED_MIB" ]; then
	die 111 "fio: no space left on device under $DIR (needs about $FIO_NEED_MIB MiB free, has $FS_FREE_MIB MiB)"
fi

# --- Working space -------------------------------------------------------------

WORK='' LOGS='' TMPJSON='' CHILD='' MADE=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	if [ -n "$CHILD" ]; then
		kill -TERM "$CHILD" 2>/dev/null
		wait "$CHILD" 2>/dev/null
	fi
	[ -n "$WORK" ] && rm -rf -- "$WORK"
	[ -n "$LOGS" ] && rm -rf -- "$LOGS"
	[ -n "$TMPJSON" ] && rm -f -- "$TMPJSON"
	# The results directories this run made, if it wrote nothing there.
	local d
	for d in ${MADE[@]+"${MADE[@]}"}; do rmdir -- "$d" 2>/dev/null; done
	return 0
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

[ -d "$RESULTS/$TAG" ] || MADE=("$RESULTS/$TAG")
[ -d "$RESULTS" ] || MADE+=("$RESULTS")
# The reason at the end of a tool's message ("...: Permission denied").
why() { sed -n '$s/.*: //p' <<<"$1"; }

if ! e=$(mkdir -p -- "$RESULTS/$TAG" 2>&1); then
	die 111 "cannot create '$RESULTS/$TAG': $(why "$e")"
fi
RESULTS=$(cd -- "$RESULTS" && pwd -P) || die 111 "cannot enter '$RESULTS'"
# The tools' output stays off DIR: DIR may fill up while fio runs.
if ! LOGS=$(mktemp -d "${TMPDIR:-/tmp}/spx-bench-log.XXXXXX" 2>&1); then
	e=$LOGS LOGS=
	die 111 "cannot create a temporary directory in '${TMPDIR:-/tmp}': $(why "$e")"
fi
if ! WORK=$(mktemp -d "$DIR/.spx-bench.XXXXXX" 2>&1); then
	e=$WORK WORK=
	die 111 "cannot create a directory in '$DIR': $(why "$e")"
fi

# --- System facts ------------------------------------------------------------

NPROC=$(nproc) || die 111 "nproc failed"

read_cpu() {
	awk -F '[ \t]*:[ \t]*' '
		$1 == "model name" && model == "" { model = $2 }
		($1 == "Hardware" || $1 == "cpu model" || $1 == "Processor" || $1 == "cpu") && alt == "" { alt = $2 }
		$1 == "physical id" { phys = $2 }
		$1 == "core id" { if (!((phys ":" $2) in seen)) { seen[phys ":" $2] = 1; cores++ } }
		END {
			if (model == "") model = alt
			if (model == "") model = "unknown"
			gsub(/[ \t]+/, " ", model); sub(/ $/, "", model)
			print cores + 0
			print model
		}' /proc/cpuinfo 2>/dev/null
}
{
	read -r CORES
	read -r CPU_MODEL
} < <(read_cpu)
[ "${CORES:-0}" -gt 0 ] 2>/dev/null || CORES=$NPROC
CPU_MODEL=${CPU_MODEL:-unknown}
MEM_MIB=$(awk '$1 == "MemTotal:" { printf "%d", $2 / 1024 }' /proc/meminfo 2>/dev/null)
MEM_MIB=${MEM_MIB:-0}
KERNEL=$(uname -r)
OS=unknown
if [ -r /etc/os-release ]; then
	OS=$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | sed -e 's/^"\(.*\)"$/\1/' -e "s/^'\(.*\)'\$/\1/")
	OS=${OS:-unknown}
fi
VIRT=
if command -v systemd-detect-virt >/dev/null 2>&1; then
	VIRT=$(systemd-detect-virt 2>/dev/null) # "none" on bare metal, with status 1
fi
if [ -z "$VIRT" ] && [ -r /sys/class/dmi/id/product_name ]; then
	VIRT=$(sed -e 's/[[:space:]]*$//' /sys/class/dmi/id/product_name 2>/dev/null)
fi
VIRT=${VIRT:-unknown}

# --- Measurements --------------------------------------------------------------

# Run a tool in the background so that a signal reaches our trap (which
# stops the tool) at once rather than when the tool ends.
run_tool() { # log-name argv...
	local name=$1 rc
	shift
	"$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" </dev/null &
	CHILD=$!
	wait "$CHILD"
	rc=$?
	CHILD=
	return $rc
}

# The first line of the logs that names an error, else the last non-empty
# line of the first log that has one (stderr comes first).
error_line() { # file...
	awk '
		FNR == 1 && last != "" { done = 1 }
		/[Ee]rror|FATAL|[Ff]atal|[Ff]ailed|[Ii]nvalid|^fio: / && first == "" { first = $0 }
		NF && !done { last = $0 }
		END { if (first != "") print first; else print last }' "$@"
}

sysbench_failed() { # job rc name
	local line
	line=$(error_line "$LOGS/$3.err" "$LOGS/$3.out")
	die 111 "sysbench $1 failed (exit $2): ${line:-no output}"
}

num_ok() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }

# sysbench cpu with N threads: sets EPS and P95.
bench_cpu() { # threads
	local name=cpu-$1 rc out
	run_tool "$name" sysbench cpu --threads="$1" --time="$CPU_TIME" run
	rc=$?
	[ $rc -eq 0 ] || sysbench_failed "cpu (threads=$1)" $rc "$name"
	out=$(awk -F ':' '
		$1 ~ /events per second/ { gsub(/[ \t]/, "", $2); eps = $2 }
		$1 ~ /95th percentile/ { gsub(/[ \t]/, "", $2); p95 = $2 }
		END { printf "%.2f %.2f\n", eps, p95 }' "$LOGS/$name.out")
	read -r EPS P95 <<<"$out"
	if ! num_ok "$EPS" || ! num_ok "$P95" || [ "$EPS" = 0.00 ]; then
		sysbench_failed "cpu (threads=$1)" "0, but no figures" "$name"
	fi
}

# sysbench memory, random 1K writes with nproc threads: sets MEMBW.
bench_mem() {
	local name=memory rc
	run_tool "$name" sysbench memory --threads="$NPROC" --memory-oper=write \
		--memory-access-mode=rnd --memory-block-size=1K \
		--memory-total-size=100T --time="$CPU_TIME" run
	rc=$?
	[ $rc -eq 0 ] || sysbench_failed memory $rc "$name"
	# "2486.88 MiB transferred (2484.90 MiB/sec)"
	MEMBW=$(awk '/ transferred \(/ { s = $0; sub(/.*\(/, "", s); sub(/ .*/, "", s); printf "%.2f", s }' "$LOGS/$name.out")
	if ! num_ok "$MEMBW" || [ "$MEMBW" = 0.00 ]; then
		sysbench_failed memory "0, but no figures" "$name"
	fi
}

# Flatten fio's pretty-printed JSON (one key per line) into path=value lines,
# e.g. "jobs.read.clat_ns.percentile.99.000000=4358144". fio may print
# messages ahead of the JSON: start at the first line that opens an object.
fio_flatten() { # file
	awk '
		!started { if ($0 !~ /^\{/) next; started = 1 }
		{
			line = $0
			sub(/^[ \t]+/, "", line); sub(/[ \t\r]+$/, "", line)
			if (line ~ /^[\]}]/) { depth--; next }
			key = ""; rest = line
			if (match(line, /^"[^"]*" : /)) { key = substr(line, 2, RLENGTH - 5); rest = substr(line, RLENGTH + 1) }
			sub(/,$/, "", rest)
			if (rest == "{" || rest == "[") { stack[++depth] = key; next }
			path = ""
			for (i = 1; i <= depth; i++) if (stack[i] != "") path = path stack[i] "."
			print path key "=" rest
		}' "$1"
}

# One fio job: sets, for each direction D (read, write) it reports,
# D_IOPS, D_MIBS (two decimals) and D_P99 (ms, three decimals).
bench_fio() { # name rw bs [extra fio options...]
	local name=$1 rw=$2 bs=$3 rc line flat
	shift 3
	# shellcheck disable=SC2016 # $jobnum is fio's: every job gets the same files
	run_tool "fio-$name" fio --name="$name" --directory="$WORK" \
		--filename_format='spx-bench.$jobnum' \
		--ioengine=libaio --direct=1 --numjobs="$FIO_JOBS" --iodepth=32 \
		--group_reporting --time_based --runtime="$FIO_RUNTIME" \
		--ramp_time="$FIO_RAMP" --size="$FIO_SIZE" --rw="$rw" --bs="$bs" \
		--eta=never --output-format=json "$@"
	rc=$?
	flat=$(fio_flatten "$LOGS/fio-$name.out")
	local err
	err=$(awk -F '=' '$1 == "jobs.error" && $2 != 0 { print $2; exit }' <<<"$flat")
	if [ $rc -ne 0 ] || [ -n "$err" ]; then
		if [ "$err" = 28 ] || awk '/No space left on device|err=28\// { f = 1 } END { exit !f }' \
			"$LOGS/fio-$name.err" "$LOGS/fio-$name.out"; then
			die 111 "fio: no space left on device under $DIR (needs about $FIO_NEED_MIB MiB free)"
		fi
		line=$(error_line "$LOGS/fio-$name.err" "$LOGS/fio-$name.out")
		die 111 "fio $name failed (exit $rc): ${line:-error ${err:-unknown}}"
	fi
	line=$(awk -F '=' '
		{ v[$1] = $2 }
		END {
			for (i = 1; i <= 2; i++) {
				d = i == 1 ? "read" : "write"
				p = v["jobs." d ".clat_ns.percentile.99.000000"]
				if (v["jobs." d ".iops"] + 0 > 0 && p != "")
					printf "%s %.0f %.2f %.3f\n", d, v["jobs." d ".iops"], v["jobs." d ".bw"] / 1024, p / 1000000
			}
		}' <<<"$flat")
	# shellcheck disable=SC2034 # read through ${!name}
	read_IOPS='' read_MIBS='' read_P99='' write_IOPS='' write_MIBS='' write_P99=''
	local d i m p
	while read -r d i m p; do
		[ -n "$d" ] || continue
		printf -v "${d}_IOPS" %s "$i"
		printf -v "${d}_MIBS" %s "$m"
		printf -v "${d}_P99" %s "$p"
	done <<<"$line"
}

# --- Output ----------------------------------------------------------------------

FIGS=() # "id|section|label|value|unit|better|threads"
fig() { FIGS+=("$1|$2|$3|$4|$5|$6|$7"); }

# JSON strings: backslash, quote and the control characters escaped.
JSON_CTRL=()
for ((i = 1; i < 32; i++)); do
	printf -v hex %02x "$i"
	printf -v "JSON_CTRL[i]" %b "\\x$hex"
done
json_str() { # string -> JSTR
	local s=$1 i
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	for ((i = 1; i < 32; i++)); do
		case $s in *"${JSON_CTRL[i]}"*) s=${s//"${JSON_CTRL[i]}"/$(printf '\\u%04x' "$i")} ;; esac
	done
	JSTR=\"$s\"
}

with_commas() { # number
	awk -v n="$1" 'BEGIN {
		s = sprintf("%.0f", n); r = ""
		while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) }
		print s r }'
}

human_mib() { # MiB -> "252G"
	awk -v m="$1" 'BEGIN {
		u = "M"; if (m >= 1048576) { m /= 1048576; u = "T" } else if (m >= 1024) { m /= 1024; u = "G" }
		if (m < 10 && m != int(m)) printf "%.1f%s\n", m, u; else printf "%.0f%s\n", m, u }'
}

report() { [ "$JSON_ONLY" = 1 ] || out "$@"; }

disk_row() { # label dir iops mibs p99
	report '  %-19s%-5s%11s IOPS %6s MiB/s   p99 %7.2f ms\n' "$1" "$2" \
		"$(with_commas "$3")" "$(with_commas "$4")" "$5"
}

write_json() { # run time file
	local f j s id sec label val unit better thr n=0 IFS_SAVE=$IFS
	j='{'$'\n'
	j+='  "schema": "spx-bench/1",'$'\n'
	j+='  "suite": "host",'$'\n'
	json_str "$TAG"; j+="  \"tag\": $JSTR,"$'\n'
	j+="  \"run\": $1,"$'\n'
	j+="  \"runs\": $RUNS,"$'\n'
	j+="  \"time\": \"$2\","$'\n'
	json_str "$HOST"; j+="  \"host\": $JSTR,"$'\n'
	if [ "$QUICK" = 1 ]; then j+='  "quick": true,'$'\n'; else j+='  "quick": false,'$'\n'; fi
	j+='  "system": {'
	json_str "$CPU_MODEL"; j+="\"cpu_model\": $JSTR, \"cores\": $CORES, \"threads\": $NPROC, \"mem_mib\": $MEM_MIB, "
	json_str "$KERNEL"; j+="\"kernel\": $JSTR, "
	json_str "$OS"; j+="\"os\": $JSTR,"$'\n'
	json_str "$DIR"; j+="             \"dir\": $JSTR, "
	json_str "$DEVICE"; j+="\"device\": $JSTR, "
	json_str "$FSTYPE"; j+="\"fs\": $JSTR, \"fs_size_mib\": $FS_SIZE_MIB, \"fs_free_mib\": $FS_FREE_MIB, "
	json_str "$VIRT"; j+="\"virt\": $JSTR},"$'\n'
	j+='  "figures": ['$'\n'
	for f in "${FIGS[@]}"; do
		IFS='|' read -r id sec label val unit better thr <<<"$f"
		IFS=$IFS_SAVE
		[ $n -gt 0 ] && j+=','$'\n'
		json_str "$label"
		j+="    {\"id\": \"$id\", \"section\": \"$sec\", \"label\": $JSTR, \"value\": $val, \"unit\": \"$unit\", \"better\": \"$better\", \"threads\": $thr}"
		n=$((n + 1))
	done
	j+=$'\n''  ]'$'\n''}'$'\n'
	# Written whole to a temporary name, then renamed: readers never see
	# half a file.
	TMPJSON=$(dirname -- "$3")/.$(basename -- "$3").tmp.$$
	printf '%s' "$j" >"$TMPJSON" || die 111 "cannot write '$TMPJSON'"
	mv -f -- "$TMPJSON" "$3" || die 111 "cannot rename '$TMPJSON' to '$3'"
	TMPJSON=
}

DISK_HEAD="--- 4. Disk (file-backed, $DIR) "
while [ ${#DISK_HEAD} -lt 61 ]; do DISK_HEAD+=-; done
DISK_HEAD+=---

if [ "$MEM_MIB" -lt 10240 ]; then
	MEM_SHOW=$(awk -v m="$MEM_MIB" 'BEGIN { printf "%.1f GiB", m / 1024 }')
else
	MEM_SHOW=$(awk -v m="$MEM_MIB" 'BEGIN { printf "%.0f GiB", m / 1024 }')
fi
DISK_SHOW="$DEVICE $FSTYPE under $DIR  ($(human_mib "$FS_SIZE_MIB"), $(human_mib "$FS_FREE_MIB") free)"

for ((run = 1; run <= RUNS; run++)); do
	FIGS=()
	epoch=$(date -u +%s)
	now=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
	stamp=$(date -u -d "@$epoch" +%Y%m%dT%H%M%SZ)
	file=$RESULTS/$TAG/$stamp-run$run.json
	quick_note=
	[ "$QUICK" = 1 ] && quick_note=" — quick"

	[ $run -gt 1 ] && report '\n'
	report '=== spx-bench host — tag %s — run %d/%d — %s%s ===\n' "$TAG" "$run" "$RUNS" "$now" "$quick_note"
	report -- '--- 1. System --------------------------------------------------\n'
	report '  %-11s%s (%d cores / %d threads)\n' cpu "$CPU_MODEL" "$CORES" "$NPROC"
	report '  %-11s%s\n' memory "$MEM_SHOW"
	report '  %-11s%s   (%s)\n' kernel "$KERNEL" "$OS"
	report '  %-11s%s\n' disk "$DISK_SHOW"
	report '  %-11s%s\n' virt "$VIRT"

	report -- '--- 2. CPU (sysbench, events/sec — higher is better) ------------\n'
	for t in 1 "$NPROC"; do
		bench_cpu "$t"
		report '  %-10s%15s events/s   95th %s ms\n' "threads=$t" "$EPS" "$P95"
		if [ "$t" = 1 ]; then w=single; l="1 thread"; else w=all; l="$t threads"; fi
		fig "cpu.$w.events" cpu "sysbench cpu, $l" "$EPS" events/s higher "$t"
		fig "cpu.$w.p95" cpu "sysbench cpu, $l, 95th" "$P95" ms lower "$t"
	done

	report -- '\n--- 3. Memory --------------------------------------------------\n'
	bench_mem
	if [ "$NPROC" = 1 ]; then l="1 thread"; else l="$NPROC threads"; fi
	report '  random write, %s: %s MiB/sec\n' "$l" "$MEMBW"
	fig mem.rndwrite.mibs memory "memory random write" "$MEMBW" MiB/s higher "$NPROC"

	report '\n%s\n' "$DISK_HEAD"
	# id, report label, fio rw, block size, extra options; the files are
	# laid out by the first job and reused by the others.
	for job in "randrw|randrw 70/30 4k|randrw|4k|--rwmixread=70" \
		"randread|randread 4k|randread|4k|" \
		"seqread|seqread 1M|read|1M|" \
		"seqwrite|seqwrite 1M|write|1M|"; do
		IFS='|' read -r id label rw bs extra <<<"$job"
		bench_fio "$id" "$rw" "$bs" ${extra:+"$extra"}
		case $rw in
		randrw) dirs="read write" ;;
		randread | read) dirs='read' ;;
		write) dirs='write' ;;
		esac
		for d in $dirs; do
			iv=${d}_IOPS mv=${d}_MIBS pv=${d}_P99
			if ! num_ok "${!iv}" || ! num_ok "${!mv}" || ! num_ok "${!pv}"; then
				line=$(error_line "$LOGS/fio-$id.err")
				die 111 "fio $id: no $d figures in its output${line:+: $line}"
			fi
			disk_row "$label" "$d" "${!iv}" "${!mv}" "${!pv}"
			fig "disk.$id.$d.iops" disk "$label $d" "${!iv}" IOPS higher "$FIO_JOBS"
			fig "disk.$id.$d.mibs" disk "$label $d" "${!mv}" MiB/s higher "$FIO_JOBS"
			fig "disk.$id.$d.p99" disk "$label $d, p99" "${!pv}" ms lower "$FIO_JOBS"
		done
	done

	write_json "$run" "$now" "$file"
	if [ "$JSON_ONLY" = 1 ]; then
		out '%s\n' "$file"
	else
		out '\n  %-11s%s\n' json "$file"
	fi
done
exit 0
