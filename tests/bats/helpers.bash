# Shared set-up for the bats tests. Each test file loads this.
# The build under test is $SPX_BUILD (set by tests/run.sh), its tools on PATH.

: "${SPX_BUILD:=$BATS_TEST_DIRNAME/../../build}"
: "${SPX_TOP:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
export PATH="$SPX_BUILD/bin:$PATH"
unset SPX_ROOT SPX_LOG_LEVEL

# A TCP port nobody listens on, from the kernel.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# A fresh node root under the test's temp dir, with random ports.
# Sets ROOT, EC2_PORT, S3_PORT. Extra arguments go to spx admin init.
make_node() {
	# In setup_file there is no test dir yet: use the file's.
	ROOT=$(mktemp -d "${BATS_TEST_TMPDIR:-$BATS_FILE_TMPDIR}/node.XXXXXX")
	EC2_PORT=$(free_port)
	S3_PORT=$(free_port)
	while [ "$S3_PORT" = "$EC2_PORT" ]; do S3_PORT=$(free_port); done
	spx admin init --root "$ROOT" --ec2-port "$EC2_PORT" --s3-port "$S3_PORT" "$@" >/dev/null
}

# Start the node made by make_node; stop it in teardown with stop_node.
start_node() {
	spx up --root "$ROOT" >/dev/null
}

stop_node() {
	[ -n "${ROOT:-}" ] && [ -d "$ROOT" ] && spx down --root "$ROOT" >/dev/null 2>&1 || true
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

# The aws CLI v1 on PATH (not Debian's v2 at /usr/bin/aws), or fail.
aws_v1() {
	local a
	for a in $(type -ap aws); do
		[ "$a" = /usr/bin/aws ] && continue
		"$a" --version 2>&1 | grep -q '^aws-cli/1\.' && { echo "$a"; return; }
	done
	return 1
}
