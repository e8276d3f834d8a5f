# Shared set-up for the bats tests. Each test file loads this.
# The build under test is $SPX_BUILD (set by tests/run.sh), its tools on PATH.

: "${SPX_BUILD:=$BATS_TEST_DIRNAME/../../build}"
: "${SPX_TOP:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
export PATH="$SPX_BUILD/bin:$PATH"
unset SPX_ROOT SPX_LOG_LEVEL

# python3 in the tests is Debian's, the one scripts/deps.sh installs (with
# python3-boto3), not whatever is first on PATH: a version manager's shim
# there (pyenv's, on our machines) costs 0.4 s a call. A name on PATH, not
# a function: `python3 ... &` must leave python3's own pid in $!.
if [ -x /usr/bin/python3 ] && [ -n "${BATS_RUN_TMPDIR:-}" ]; then
	[ -e "$BATS_RUN_TMPDIR/bin/python3" ] ||
		{ mkdir -p "$BATS_RUN_TMPDIR/bin" && ln -sf /usr/bin/python3 "$BATS_RUN_TMPDIR/bin/python3"; }
	export PATH="$BATS_RUN_TMPDIR/bin:$PATH"
fi

# A TCP port nobody listens on, from the kernel.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# A fresh node root under the test's temp dir, with random ports.
# Sets ROOT, EC2_PORT, S3_PORT. Extra arguments go to spx admin init.
# searchable DIR: DIR and every directory above it searchable by others.
# As root, spx-vm runs each guest's QEMU as a user of its own, which must
# find its way to the node's run directory; bats makes 0700 directories.
searchable() {
	local d=$1
	while [ "$d" != / ]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
}

make_node() {
	# In setup_file there is no test dir yet: use the file's.
	ROOT=$(mktemp -d "${BATS_TEST_TMPDIR:-$BATS_FILE_TMPDIR}/node.XXXXXX")
	searchable "$ROOT"
	EC2_PORT=$(free_port)
	S3_PORT=$(free_port)
	while [ "$S3_PORT" = "$EC2_PORT" ]; do S3_PORT=$(free_port); done
	spx admin init --root "$ROOT" --ec2-port "$EC2_PORT" --s3-port "$S3_PORT" "$@" >/dev/null
	# Nodes of test files run side by side, as nodes on one host. The
	# host's claims keep their guests' users apart whatever the bases
	# (vm.bats), but a test that watches which uid a guest takes next
	# would see another file's guests take it: each node has a range
	# of its own, below the default, above systemd's container range.
	local node
	node=$(sed -n 's/^node = "\(.*\)"$/\1/p' "$ROOT/spinifex.toml")
	printf '\n[nodes.%s.vm]\nuid_base = %d\n' "$node" \
		$((2113929216 - 65536 * (RANDOM % 3583 + 1))) >>"$ROOT/spinifex.toml"
}

# Start the node made by make_node; stop it in teardown with stop_node.
# A port free_port picked may have been taken since (by a client's
# outgoing connection, or another test): then pick new ones, rewrite the
# node's configuration and try again, a bounded number of times.
start_node() {
	local try out
	for try in 1 2 3 4 5; do
		out=$(spx up --root "$ROOT" 2>&1) && return 0
		case "$out" in
		*"cannot listen on"*) ;;
		*) echo "$out" >&2; return 1 ;;
		esac
		EC2_PORT=$(free_port)
		S3_PORT=$(free_port)
		while [ "$S3_PORT" = "$EC2_PORT" ]; do S3_PORT=$(free_port); done
		sed -i -e "s/^ec2_port = .*/ec2_port = $EC2_PORT/" \
			-e "s/^s3_port = .*/s3_port = $S3_PORT/" "$ROOT/spinifex.toml"
	done
	echo "$out" >&2
	return 1
}

# Hold a TCP port on 127.0.0.1 with a listening socket: the kernel picks
# it, so it cannot be taken already. Sets HELD_PORT and HOLDER_PID once the
# socket listens (the holder writes the port only after listen()).
hold_port() {
	local f="$BATS_TEST_TMPDIR/held.$$.$RANDOM" i
	python3 -c 'import socket,sys,time,os
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen()
t=sys.argv[1]+".tmp"; open(t,"w").write(str(s.getsockname()[1])); os.rename(t,sys.argv[1])
time.sleep(120)' "$f" &
	HOLDER_PID=$!
	for i in $(seq 200); do
		[ -s "$f" ] && break
		kill -0 "$HOLDER_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	HELD_PORT=$(cat "$f") || return 1
}

# The node of a whole file, for setup_file: made with make_node's
# arguments, started, and ROOT, its ports and its admin key (AK, SK)
# exported to the file's tests.
file_node() {
	# Under the file's directory: no test's exists yet.
	BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR make_node "$@" || return 1
	start_node || return 1
	read -r AK SK < <(admin_key)
	export ROOT EC2_PORT S3_PORT AK SK
}

stop_node() {
	[ -n "${ROOT:-}" ] && [ -d "$ROOT" ] && spx down --root "$ROOT" >/dev/null 2>&1 || true
}

# A network namespace of the file's own, named PREFIX-PID-RANDOM, its
# loopback up, its name in $F/ns and $NS (setup_file, as root).
ns_make() {
	NS=$1-$$-$RANDOM
	ip netns add "$NS" || return 1
	echo "$NS" >"$F/ns"
	ip netns exec "$NS" ip link set lo up
}

# Remove the namespace ns_make made, if it did.
ns_drop() {
	[ -s "$F/ns" ] && ip netns del "$(cat "$F/ns")"
	return 0
}

# The admin key of the node.
admin_key() {
	python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["keys"][0]; print(k["AccessKeyId"], k["SecretAccessKey"])' "$ROOT/credentials.json"
}

# Environment for the aws CLI (v1 or v2) against the node.
aws_env() {
	export AWS_SHARED_CREDENTIALS_FILE="$ROOT/aws/credentials"
	export AWS_CONFIG_FILE="$ROOT/aws/config"
	export AWS_PROFILE=spx
	export AWS_EC2_METADATA_DISABLED=true AWS_MAX_ATTEMPTS=1 AWS_PAGER=""
	# A CA bundle in the environment overrides the profile's ca_bundle.
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_DEFAULT_REGION AWS_REGION \
		AWS_CA_BUNDLE REQUESTS_CA_BUNDLE
}

# awscli2 ARGS...: Debian's aws CLI v2 (/usr/bin/aws). In CI it once died
# of SIGSEGV after it had printed that its download was done (exit 139; one
# call in some ten thousand, not reproduced in 100 more; aws-cli#10508
# reports the same). The node is a separate process, so a client killed by
# a signal says nothing about it: such a call runs once more, and says so
# on stderr. The first try's stdout is dropped then, so that a `run`
# sees one answer. Any other failure is returned as it is.
#
# Under tests/run.sh, the run's aws CLI server (tests/clients/awsd.py) runs
# the call: the same CLI, imported once for the run rather than per call.
awscli2() {
	local out rc=0 aws=/usr/bin/aws
	if [ -n "${SPX_AWSD:-}" ] && [ -S "$SPX_AWSD" ]; then
		aws=$SPX_TOP/tests/clients/awsc.py
	fi
	out=$(mktemp)
	"$aws" "$@" >"$out" || rc=$?
	if [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then
		echo "# /usr/bin/aws died of signal $((rc - 128)); running it once more" >&2
		rc=0
		"$aws" "$@" || rc=$?
	else
		cat "$out"
	fi
	rm -f "$out"
	return "$rc"
}

# The aws CLI v1 on PATH (not Debian's v2 at /usr/bin/aws), or fail.
aws_v1() {
	local a
	for a in $(type -ap aws); do
		[ "$a" = /usr/bin/aws ] && continue
		"$a" --version 2>&1 | grep -q '^aws-cli/1\.' && { echo "$a"; return; }
	done
	return 1
}

# agent_done ID: the node agent logged a step of ID done. A cheap first
# look before an aws CLI call (about half a second of CPU each) while
# waiting for a volume or snapshot to be made.
agent_done() { grep -q -- "$1: done" "$ROOT/log/agent.log" 2>/dev/null; }

# wait_for SECONDS COMMAND...: run COMMAND until it succeeds, at most
# SECONDS; fail (naming the command) when the time is up. Tests wait on
# the condition itself, never on a fixed sleep.
wait_for() {
	local end=$((SECONDS + $1)); shift
	until "$@"; do
		if [ $SECONDS -ge $end ]; then
			echo "timed out waiting for: $*" >&2
			return 1
		fi
		sleep 0.02
	done
}

# S3 tests with two accounts (in setup_file, after file_node): OWNER, the
# node's own account, and OTHER with its keys OAK and OSK, made for the
# file.
second_account() {
	OWNER=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["keys"][0]["AccountId"])' "$ROOT/credentials.json")
	read -r OAK OSK OTHER < <(spx admin account create --root "$ROOT" --name other-$RANDOM --json |
		python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"], a["AccountId"])')
	export OWNER OAK OSK OTHER
}
# other ARGS: the second account's aws v2 against $EP.
other() (
	unset AWS_PROFILE
	AWS_ACCESS_KEY_ID=$OAK AWS_SECRET_ACCESS_KEY=$OSK awscli2 --ca-bundle "$ROOT/tls/ca.pem" \
		--region us-east-1 --endpoint-url "$EP" "$@"
)
# anon PATH [curl args]: an unsigned request to $EP; prints the body,
# then the status code on a line of its own.
anon() {
	local p=$1
	shift
	curl -s --cacert "$ROOT/tls/ca.pem" -w '\n%{http_code}' "$@" "$EP$p"
}
# policy BUCKET JSON: the owner puts BUCKET's policy.
policy() {
	printf '%s' "$2" >"$BATS_TEST_TMPDIR/policy.json"
	awscli2 --endpoint-url "$EP" s3api put-bucket-policy --bucket "$1" \
		--policy "file://$BATS_TEST_TMPDIR/policy.json"
}
