#!/usr/bin/env bats
# EBS snapshots through real clients (aws CLI v2 at /usr/bin/aws; boto3
# from Debian's python3-boto3 and the npm SDK v3, with their waiters and
# paginators), made by the node agent
# running spx-vol: pending to completed with Progress, the bytes of a
# volume made from a snapshot, filters and paging, copies, deletion,
# createVolumePermission across accounts, the agent killed mid-snapshot
# and the object store away for a while.

load ../bats/helpers

setup_file() { file_node; }

teardown_file() {
	if [ -d "$ROOT/data/obj/d0.away" ]; then
		rm -f "$ROOT/data/obj/d0"
		mv "$ROOT/data/obj/d0.away" "$ROOT/data/obj/d0"
	fi
	[ -f "$ROOT/run/agent.pid" ] && kill -CONT "$(cat "$ROOT/run/agent.pid")" 2>/dev/null
	stop_node
}

setup() {
	aws_env
	[ -x /usr/bin/aws ] || skip "Debian's awscli (aws v2) is not installed"
}

av2() { awscli2 --endpoint-url "https://127.0.0.1:$EC2_PORT" "$@"; }

vstate() { av2 ec2 describe-volumes --volume-ids "$1" --query 'Volumes[0].State' --output text 2>/dev/null; }
vstate_is() { { [ "$2" != available ] || agent_done "$1"; } && [ "$(vstate "$1")" = "$2" ]; }
sstate() { av2 ec2 describe-snapshots --snapshot-ids "$1" --query 'Snapshots[0].[State,Progress]' --output text 2>/dev/null; }
completed() { agent_done "$1" && [ "$(sstate "$1")" = "completed	100%" ]; }
# volume ARGS...: a new volume's id, once it is available.
volume() {
	local id
	id=$(av2 ec2 create-volume --availability-zone us-east-1a "$@" --query VolumeId --output text) || return 1
	wait_for 30 vstate_is "$id" available || return 1
	echo "$id"
}
# snapshot VOL ARGS...: a new snapshot's id, once it is completed.
snapshot() {
	local id
	id=$(av2 ec2 create-snapshot --volume-id "$@" --query SnapshotId --output text) || return 1
	wait_for 60 completed "$id" || return 1
	echo "$id"
}
fails_with() { # CODE
	[ "$status" -eq 254 ] || { echo "status $status: $output"; return 1; }
	[[ "$output" == *"($1) when calling"* ]] || { echo "$output"; return 1; }
}
agent_pid() { cat "$ROOT/run/agent.pid"; }
# A volume v of 128 MiB of random bytes ($BATS_TEST_TMPDIR/a), a snapshot s
# of it, and the agent's spx-vol snapshot (pid) stopped with SIGSTOP once
# it has stored some chunks (the store held before of them). The step
# takes about a second: a watcher of its own catches it, where a loop of
# pgrep and spx-obj ls on a busy machine can miss it whole.
stopped_midway() {
	v=$(volume --size 1)
	head -c 128M /dev/urandom >"$BATS_TEST_TMPDIR/a"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/a"
	before=$(chunks)
	chunk_list >"$BATS_TEST_TMPDIR/chunks-before"
	# Watching before the step starts: it may be over before the aws CLI is.
	stop_when_written "spx-vol snapshot .*--id snap-[0-9a-f]+ $v\$" $((16 << 20)) >"$BATS_TEST_TMPDIR/pid" &
	s=$(av2 ec2 create-snapshot --volume-id "$v" --query SnapshotId --output text)
	wait $! || return 1
	pid=$(cat "$BATS_TEST_TMPDIR/pid")
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--id $s $v" || { echo "stopped $pid, not the step of $s"; return 1; }
	[ "$(chunks)" -ge $((before + 4)) ] || { echo "$(chunks) chunks, $before before"; return 1; }
}
# stop_when_written REGEX BYTES: the pid of the process whose command line
# matches REGEX, stopped with SIGSTOP once it has written BYTES (its wchar
# in /proc/PID/io); fails after 60 s, or when the process ends first.
stop_when_written() {
	python3 - "$@" <<'PY'
import os, re, signal, sys, time
pat, want = re.compile(sys.argv[1]), int(sys.argv[2])
mine, end, pid, last = {os.getpid(), os.getppid()}, time.monotonic() + 60, None, None
while time.monotonic() < end:
    if pid is None:
        for p in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    cl = f.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if int(p) not in mine and pat.search(cl):
                pid = int(p)
                break
    if pid is not None:
        try:
            with open(f"/proc/{pid}/io") as f:
                io = dict(l.split(": ") for l in f.read().splitlines())
        except OSError:
            sys.exit(f"process {pid} ended before it wrote {want} bytes (last {last})")
        last = io
        if int(io["wchar"]) >= want:
            os.kill(pid, signal.SIGSTOP)
            print(pid)
            sys.exit(0)
    time.sleep(0.002)
sys.exit(f"no process matched {pat.pattern!r} and wrote {want} bytes in 60 s")
PY
}
chunks() { spx-obj ls --root "$ROOT" sthree-spx-snapshots | grep -c '^c/' || true; }
chunk_list() { spx-obj ls --root "$ROOT" sthree-spx-snapshots | grep '^c/' | sort || true; }

# other: the aws CLI as a second account, made once.
other() {
	if [ ! -f "$BATS_FILE_TMPDIR/other" ]; then
		spx admin account create --root "$ROOT" --name snap-other --json |
			python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["AccessKeyId"], a["SecretAccessKey"], a["AccountId"])' \
				>"$BATS_FILE_TMPDIR/other"
	fi
	read -r oak osk _ <"$BATS_FILE_TMPDIR/other"
	(
		unset AWS_PROFILE
		AWS_ACCESS_KEY_ID="$oak" AWS_SECRET_ACCESS_KEY="$osk" \
			awscli2 --ca-bundle "$ROOT/tls/ca.pem" --region us-east-1 \
			--endpoint-url "https://127.0.0.1:$EC2_PORT" "$@"
	)
}
other_account() { other sts get-caller-identity >/dev/null; cut -d' ' -f3 "$BATS_FILE_TMPDIR/other"; }

@test "create-snapshot: pending, then completed; a volume from it holds the snapshot's bytes, not the later ones" {
	v=$(volume --size 1)
	head -c 3M /dev/urandom >"$BATS_TEST_TMPDIR/a"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/a"
	run av2 ec2 create-snapshot --volume-id "$v" --description "before the change" \
		--tag-specifications 'ResourceType=snapshot,Tags=[{Key=Name,Value=first}]' --output json
	[ "$status" -eq 0 ]
	s=$(python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["State"] == "pending" and s["Progress"] == "0%", s
assert s["VolumeId"] == sys.argv[2] and s["VolumeSize"] == 1, s
assert s["Description"] == "before the change" and s["Encrypted"] is False, s
assert s["Tags"] == [{"Key": "Name", "Value": "first"}], s
assert s["StorageTier"] == "standard" and len(s["OwnerId"]) == 12, s
assert not any(k.startswith("Spx") for k in s), s
print(s["SnapshotId"])' "$output" "$v")
	[[ "$s" =~ ^snap-[0-9a-f]{17}$ ]]
	wait_for 60 completed "$s"
	grep -q "run: .*spx-vol snapshot --root $ROOT --progress --id $s $v\$" "$ROOT/log/agent.log"
	# The snapshot's own bytes, whatever the volume holds later.
	head -c 1M /dev/urandom | spx-vol write --root "$ROOT" "$v"
	run av2 ec2 create-volume --availability-zone us-east-1a --snapshot-id "$s" --output json
	[ "$status" -eq 0 ]
	r=$(python3 -c '
import json, sys
v = json.loads(sys.argv[1])
assert v["SnapshotId"] == sys.argv[2] and v["Size"] == 1 and v["State"] == "creating", v
print(v["VolumeId"])' "$output" "$s")
	wait_for 30 vstate_is "$r" available || { grep -B3 -A12 "snapshot-rm.*$s" "$ROOT/log/agent.log"; false; }
	grep -q "run: .*spx-vol restore --root $ROOT --size 1073741824 --id $r --progress $s\$" "$ROOT/log/agent.log"
	spx-vol cat --root "$ROOT" "$r" | cmp -n 3145728 - "$BATS_TEST_TMPDIR/a"
	[ "$(av2 ec2 describe-volumes --filters "Name=snapshot-id,Values=$s" --query 'Volumes[].VolumeId' --output text)" = "$r" ]
	# Larger than the snapshot: fine; smaller: refused.
	r2=$(volume --snapshot-id "$s" --size 2)
	[ "$(spx-vol info --root "$ROOT" "$r2" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["size"])')" = 2147483648 ]
	spx-vol cat --root "$ROOT" "$r2" | cmp -n 3145728 - "$BATS_TEST_TMPDIR/a"
	for x in "$r" "$r2" "$v"; do av2 ec2 delete-volume --volume-id "$x"; done
}

@test "snapshot errors as EC2 words them; nothing is made" {
	before=$(av2 ec2 describe-snapshots --owner-ids self --query 'length(Snapshots)' --output text)
	run av2 ec2 create-snapshot --volume-id vol-0123456789abcdef0
	fails_with InvalidVolume.NotFound
	run av2 ec2 create-snapshot --volume-id vol-xyz
	fails_with InvalidVolumeID.Malformed
	run av2 ec2 create-snapshot --volume-id vol-0123456789abcdef0 --dry-run
	fails_with DryRunOperation
	run av2 ec2 describe-snapshots --snapshot-ids snap-0123456789abcdef0
	fails_with InvalidSnapshot.NotFound
	run av2 ec2 describe-snapshots --snapshot-ids snap-../../x
	fails_with InvalidSnapshotID.Malformed
	run av2 ec2 describe-snapshots --snapshot-ids snap-0123456789abcdef0 --max-results 5 --no-paginate
	fails_with InvalidParameterCombination
	run av2 ec2 describe-snapshots --max-results 4 --no-paginate
	fails_with InvalidParameterValue
	run av2 ec2 create-volume --availability-zone us-east-1a --snapshot-id snap-0123456789abcdef0
	fails_with InvalidSnapshot.NotFound
	run av2 ec2 create-volume --availability-zone us-east-1a --snapshot-id snap-nothex
	fails_with InvalidSnapshotID.Malformed
	run av2 ec2 delete-snapshot --snapshot-id snap-0123456789abcdef0
	fails_with InvalidSnapshot.NotFound
	run av2 ec2 copy-snapshot --source-region us-east-1 --source-snapshot-id snap-0123456789abcdef0
	fails_with InvalidSnapshot.NotFound
	run av2 ec2 create-tags --resources snap-0123 --tags Key=a,Value=b
	fails_with InvalidID
	run av2 ec2 create-tags --resources snap-0123456789abcdef0 --tags Key=a,Value=b
	fails_with InvalidSnapshot.NotFound
	v=$(volume --size 2)
	s=$(snapshot "$v")
	run av2 ec2 create-volume --availability-zone us-east-1a --snapshot-id "$s" --size 1
	fails_with InvalidParameterValue
	[[ "$output" == *"Volume of 1GiB is smaller than snapshot '$s', expect size >= 2GiB"* ]]
	run av2 ec2 copy-snapshot --source-region eu-west-1 --source-snapshot-id "$s"
	fails_with InvalidParameterValue
	# A Description of 256 characters.
	long=$(printf 'd%.0s' {1..256})
	run av2 ec2 create-snapshot --volume-id "$v" --description "$long"
	fails_with InvalidParameterValue
	run av2 ec2 copy-snapshot --source-region us-east-1 --source-snapshot-id "$s" --description "$long"
	fails_with InvalidParameterValue
	run av2 ec2 modify-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --operation-type add --user-ids 12345
	fails_with InvalidParameterValue
	run av2 ec2 modify-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --operation-type add --group-names admins
	fails_with InvalidParameterValue
	[ "$(av2 ec2 describe-snapshots --owner-ids self --query 'length(Snapshots)' --output text)" = $((before + 1)) ]
	av2 ec2 delete-snapshot --snapshot-id "$s"
	av2 ec2 delete-volume --volume-id "$v"
}

@test "describe-snapshots: ids, owners, filters, paging" {
	v=$(volume --size 1)
	w=$(volume --size 3)
	ids=()
	for i in 1 2 3 4 5 6; do
		x=$v; [ $((i % 2)) -eq 0 ] && x=$w
		ids+=("$(snapshot "$x" --description "n$i" --tag-specifications "ResourceType=snapshot,Tags=[{Key=i,Value=$i},{Key=set,Value=$BATS_TEST_NUMBER}]")")
	done
	# mine [FILTER...] [-- ARGS...]: this test's snapshots.
	mine() {
		local f=()
		while [ $# -gt 0 ] && [ "$1" != -- ]; do f+=("$1"); shift; done
		[ $# -gt 0 ] && shift
		av2 ec2 describe-snapshots --owner-ids self --filters "Name=tag:set,Values=$BATS_TEST_NUMBER" "${f[@]}" "$@"
	}
	[ "$(mine -- --query 'length(Snapshots)' --output text)" = 6 ]
	[ "$(mine "Name=volume-id,Values=$w" -- --query 'length(Snapshots)' --output text)" = 3 ]
	[ "$(mine Name=volume-size,Values=3 -- --query 'length(Snapshots)' --output text)" = 3 ]
	[ "$(mine Name=description,Values=n4 -- --query 'Snapshots[].SnapshotId' --output text)" = "${ids[3]}" ]
	[ "$(mine Name=tag:i,Values=2,5 -- --query 'length(Snapshots)' --output text)" = 2 ]
	[ "$(mine Name=status,Values=completed Name=progress,Values=100% -- --query 'length(Snapshots)' --output text)" = 6 ]
	[ "$(mine Name=status,Values=pending -- --query 'length(Snapshots)' --output text)" = 0 ]
	acct=$(av2 sts get-caller-identity --query Account --output text)
	[ "$(av2 ec2 describe-snapshots --owner-ids "$acct" --filters "Name=tag:set,Values=$BATS_TEST_NUMBER" --query 'length(Snapshots)' --output text)" = 6 ]
	[ "$(av2 ec2 describe-snapshots --owner-ids amazon --query 'length(Snapshots)' --output text)" = 0 ]
	run av2 ec2 describe-snapshots --snapshot-ids "${ids[0]}" "${ids[5]}" --query 'Snapshots[].SnapshotId' --output text
	[ "$output" = "$(printf '%s\n' "${ids[0]}" "${ids[5]}" | sort | paste -sd '\t')" ]
	# An id asked for twice is described once; ids and filters together.
	[ "$(av2 ec2 describe-snapshots --snapshot-ids "${ids[2]}" "${ids[2]}" --query 'length(Snapshots)' --output text)" = 1 ]
	[ "$(av2 ec2 describe-snapshots --snapshot-ids "${ids[0]}" "${ids[1]}" --filters "Name=volume-id,Values=$w" --query 'Snapshots[].SnapshotId' --output text)" = "${ids[1]}" ]
	# Pages of 5: the first has a token, both together have all six.
	run av2 ec2 describe-snapshots --owner-ids self --filters "Name=tag:set,Values=$BATS_TEST_NUMBER" --max-results 5 --no-paginate --output json
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert len(d["Snapshots"])==5 and d.get("NextToken"), d' "$output"
	# (the CLI applies --query to each page of text output)
	[ "$(mine -- --page-size 5 --query 'Snapshots[].SnapshotId' --output text | wc -w)" = 6 ]
	for s in "${ids[@]}"; do av2 ec2 delete-snapshot --snapshot-id "$s"; done
	av2 ec2 delete-volume --volume-id "$v"
	av2 ec2 delete-volume --volume-id "$w"
}

@test "delete-snapshot: gone at once, its manifest and unshared chunks after; the others and volumes made from it unharmed" {
	v=$(volume --size 1)
	head -c 2M /dev/urandom >"$BATS_TEST_TMPDIR/a"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/a"
	s1=$(snapshot "$v")
	head -c 1M /dev/urandom | dd of="$BATS_TEST_TMPDIR/a" bs=1M seek=1 conv=notrunc status=none
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/a"
	s2=$(snapshot "$v")
	head -c 512K /dev/urandom | dd of="$BATS_TEST_TMPDIR/b" status=none
	cp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/c"
	dd if="$BATS_TEST_TMPDIR/b" of="$BATS_TEST_TMPDIR/c" conv=notrunc status=none
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/c"
	s3=$(snapshot "$v")
	# A volume restoring lazily from the middle one, then that one goes.
	r=$(volume --snapshot-id "$s2")
	av2 ec2 delete-snapshot --snapshot-id "$s2"
	run av2 ec2 describe-snapshots --snapshot-ids "$s2"
	fails_with InvalidSnapshot.NotFound
	run av2 ec2 delete-snapshot --snapshot-id "$s2"
	fails_with InvalidSnapshot.NotFound
	run av2 ec2 create-volume --availability-zone us-east-1a --snapshot-id "$s2"
	fails_with InvalidSnapshot.NotFound
	gone() { ! spx-vol snapshots --root "$ROOT" "$s2" >/dev/null 2>&1; }
	wait_for 30 gone
	grep -q "run: .*spx-vol snapshot-rm --root $ROOT $s2\$" "$ROOT/log/agent.log"
	spx-vol cat --root "$ROOT" "$r" | cmp -n 2097152 - "$BATS_TEST_TMPDIR/a"
	r1=$(volume --snapshot-id "$s1")
	r3=$(volume --snapshot-id "$s3")
	spx-vol cat --root "$ROOT" "$r3" | cmp -n 2097152 - "$BATS_TEST_TMPDIR/c"
	spx-vol cat --root "$ROOT" "$r1" | head -c 1M | cmp - <(head -c 1M "$BATS_TEST_TMPDIR/a")
	for s in "$s1" "$s3"; do av2 ec2 delete-snapshot --snapshot-id "$s"; done
	for x in "$v" "$r" "$r1" "$r3"; do av2 ec2 delete-volume --volume-id "$x"; done
}

@test "copy-snapshot: a completed copy that stores nothing new and outlives its source" {
	v=$(volume --size 1)
	head -c 2M /dev/urandom >"$BATS_TEST_TMPDIR/a"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/a"
	s=$(snapshot "$v" --description orig)
	n=$(chunks)
	run av2 ec2 copy-snapshot --source-region us-east-1 --source-snapshot-id "$s" \
		--tag-specifications 'ResourceType=snapshot,Tags=[{Key=copy,Value=yes}]' --output json
	[ "$status" -eq 0 ]
	c=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["Tags"]==[{"Key":"copy","Value":"yes"}], d; print(d["SnapshotId"])' "$output")
	wait_for 30 completed "$c"
	grep -q "run: .*spx-vol snapshot-copy --root $ROOT --id $c $s\$" "$ROOT/log/agent.log"
	# EC2 gives a copy an arbitrary volume id, not its source's volume.
	[ "$(av2 ec2 describe-snapshots --snapshot-ids "$c" --query 'Snapshots[0].[VolumeId,VolumeSize,Description]' --output text)" = "vol-ffffffff	1	orig" ]
	[ "$(av2 ec2 describe-snapshots --owner-ids self --filters "Name=volume-id,Values=$v" --query 'Snapshots[].SnapshotId' --output text)" = "$s" ]
	[ "$(chunks)" = "$n" ]
	av2 ec2 delete-snapshot --snapshot-id "$s"
	r=$(volume --snapshot-id "$c")
	spx-vol cat --root "$ROOT" "$r" | cmp -n 2097152 - "$BATS_TEST_TMPDIR/a"
	av2 ec2 delete-snapshot --snapshot-id "$c"
	for x in "$v" "$r"; do av2 ec2 delete-volume --volume-id "$x"; done
}

@test "createVolumePermission: another account sees and uses a snapshot only once it is shared, and never changes it" {
	v=$(volume --size 1)
	head -c 1M /dev/urandom >"$BATS_TEST_TMPDIR/a"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/a"
	s=$(snapshot "$v")
	oid=$(other_account)
	run other ec2 describe-snapshots --snapshot-ids "$s"
	fails_with InvalidSnapshot.NotFound
	run other ec2 create-volume --availability-zone us-east-1a --snapshot-id "$s"
	fails_with InvalidSnapshot.NotFound
	[[ "$(other ec2 describe-snapshots --query 'Snapshots[].SnapshotId' --output text)" != *"$s"* ]]
	av2 ec2 modify-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --operation-type add --user-ids "$oid"
	[ "$(av2 ec2 describe-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --query 'CreateVolumePermissions[].UserId' --output text)" = "$oid" ]
	[ "$(other ec2 describe-snapshots --restorable-by-user-ids self --query 'Snapshots[].SnapshotId' --output text)" = "$s" ]
	[ "$(other ec2 describe-snapshots --owner-ids self --query 'length(Snapshots)' --output text)" = 0 ]
	[ "$(other ec2 describe-snapshots --snapshot-ids "$s" --query 'Snapshots[0].OwnerId' --output text)" = "$(av2 sts get-caller-identity --query Account --output text)" ]
	# The owner's tags are its own, as on AWS: not shown to the other
	# account, nor matched by its tag filters.
	av2 ec2 create-tags --resources "$s" --tags Key=secret,Value=x
	[ "$(av2 ec2 describe-snapshots --snapshot-ids "$s" --query 'Snapshots[0].Tags[0].Key' --output text)" = secret ]
	run other ec2 describe-snapshots --snapshot-ids "$s" --output json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.loads(sys.argv[1])["Snapshots"][0]; assert d["SnapshotId"]==sys.argv[2] and "Tags" not in d, d' "$output" "$s"
	for f in Name=tag:secret,Values=x Name=tag-key,Values=secret Name=tag-value,Values=x; do
		[ "$(av2 ec2 describe-snapshots --owner-ids self --filters "$f" --query 'length(Snapshots)' --output text)" = 1 ]
		[ "$(other ec2 describe-snapshots --filters "$f" --query 'length(Snapshots)' --output text)" = 0 ]
		[ "$(other ec2 describe-snapshots --snapshot-ids "$s" --filters "$f" --query 'length(Snapshots)' --output text)" = 0 ]
	done
	# It may make a volume of it, its own.
	r=$(other ec2 create-volume --availability-zone us-east-1a --snapshot-id "$s" --query VolumeId --output text)
	ostate() { agent_done "$r" && [ "$(other ec2 describe-volumes --volume-ids "$r" --query 'Volumes[0].State' --output text)" = available ]; }
	wait_for 30 ostate
	spx-vol cat --root "$ROOT" "$r" | cmp -n 1048576 - "$BATS_TEST_TMPDIR/a"
	run av2 ec2 describe-volumes --volume-ids "$r"
	fails_with InvalidVolume.NotFound
	# ... but neither delete, share, tag nor read its permissions.
	run other ec2 delete-snapshot --snapshot-id "$s"
	fails_with InvalidSnapshot.NotFound
	run other ec2 modify-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --operation-type add --group-names all
	fails_with InvalidSnapshot.NotFound
	run other ec2 describe-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission
	fails_with InvalidSnapshot.NotFound
	run other ec2 create-tags --resources "$s" --tags Key=a,Value=b
	fails_with InvalidSnapshot.NotFound
	# Removed: gone again for it. Public (group all): everyone sees it.
	av2 ec2 modify-snapshot-attribute --snapshot-id "$s" --create-volume-permission "Remove=[{UserId=$oid}]"
	run other ec2 describe-snapshots --snapshot-ids "$s"
	fails_with InvalidSnapshot.NotFound
	av2 ec2 modify-snapshot-attribute --snapshot-id "$s" --create-volume-permission 'Add=[{Group=all}]'
	[ "$(av2 ec2 describe-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --query 'CreateVolumePermissions[].Group' --output text)" = all ]
	[[ "$(other ec2 describe-snapshots --query 'Snapshots[].SnapshotId' --output text)" == *"$s"* ]]
	av2 ec2 reset-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission
	[ "$(av2 ec2 describe-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --query 'length(CreateVolumePermissions)' --output text)" = 0 ]
	run other ec2 describe-snapshots --snapshot-ids "$s"
	fails_with InvalidSnapshot.NotFound
	other ec2 delete-volume --volume-id "$r"
	av2 ec2 delete-snapshot --snapshot-id "$s"
	av2 ec2 delete-volume --volume-id "$v"
}

@test "the agent killed mid-snapshot: the restarted agent finishes it, with the volume's bytes" {
	stopped_midway
	mid=$(chunks)
	[ "$mid" -lt $((before + 256)) ]
	[ "$(sstate "$s" | cut -f1)" = pending ]
	apid=$(agent_pid)
	kill -9 "$apid"
	# It dies with its agent (SIGTERM once it runs again).
	kill -CONT "$pid"
	dead() { ! kill -0 "$pid" 2>/dev/null; }
	wait_for 30 dead
	wait_for 60 completed "$s"
	grep -q "agent (pid $apid) killed by SIGKILL" "$ROOT/log/supervise.log"
	[ "$(grep -c -- "spx-vol snapshot .*--id $s $v\$" "$ROOT/log/agent.log")" = 2 ]
	r=$(volume --snapshot-id "$s")
	spx-vol cat --root "$ROOT" "$r" | head -c 128M | cmp - "$BATS_TEST_TMPDIR/a"
	av2 ec2 delete-snapshot --snapshot-id "$s"
	for x in "$v" "$r"; do av2 ec2 delete-volume --volume-id "$x"; done
}

@test "the object store away for a while: the snapshot waits and completes, the volume serves on" {
	v=$(volume --size 1)
	head -c 1M /dev/urandom >"$BATS_TEST_TMPDIR/a"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/a"
	mv "$ROOT/data/obj/d0" "$ROOT/data/obj/d0.away"
	touch "$ROOT/data/obj/d0"
	s=$(av2 ec2 create-snapshot --volume-id "$v" --query SnapshotId --output text)
	retried() { grep -q "$s: to be tried again" "$ROOT/log/agent.log"; }
	wait_for 30 retried
	[ "$(sstate "$s" | cut -f1)" = pending ]
	# The volume's own data is local: it is read (and written) as ever.
	spx-vol cat --root "$ROOT" "$v" | cmp -n 1048576 - "$BATS_TEST_TMPDIR/a"
	rm "$ROOT/data/obj/d0"
	mv "$ROOT/data/obj/d0.away" "$ROOT/data/obj/d0"
	wait_for 90 completed "$s"
	r=$(volume --snapshot-id "$s")
	spx-vol cat --root "$ROOT" "$r" | cmp -n 1048576 - "$BATS_TEST_TMPDIR/a"
	av2 ec2 delete-snapshot --snapshot-id "$s"
	for x in "$v" "$r"; do av2 ec2 delete-volume --volume-id "$x"; done
}

@test "boto3: create_snapshot, the snapshot_completed waiter, describe and delete" {
	/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "python3-boto3 is not installed"
	v=$(volume --size 1)
	run /usr/bin/python3 - "https://127.0.0.1:$EC2_PORT" "$ROOT/tls/ca.pem" "$v" <<-'EOF'
	import sys, boto3
	from botocore.config import Config
	from botocore.exceptions import ClientError
	ec2 = boto3.session.Session(profile_name="spx").client(
	    "ec2", endpoint_url=sys.argv[1], verify=sys.argv[2],
	    config=Config(retries={"max_attempts": 1}))
	s = ec2.create_snapshot(VolumeId=sys.argv[3], Description="boto3")
	assert s["State"] == "pending", s
	ec2.get_waiter("snapshot_completed").wait(SnapshotIds=[s["SnapshotId"]],
	                                         WaiterConfig={"Delay": 1, "MaxAttempts": 60})
	d = ec2.describe_snapshots(SnapshotIds=[s["SnapshotId"]])["Snapshots"][0]
	assert d["State"] == "completed" and d["Progress"] == "100%", d
	assert d["StartTime"].year >= 2024, d
	ec2.delete_snapshot(SnapshotId=s["SnapshotId"])
	try:
	    ec2.describe_snapshots(SnapshotIds=[s["SnapshotId"]])
	    raise SystemExit("still there")
	except ClientError as e:
	    assert e.response["Error"]["Code"] == "InvalidSnapshot.NotFound", e.response
	print("ok")
	EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	av2 ec2 delete-volume --volume-id "$v"
}

@test "snapshots beyond the upload slots take their moment when asked; other steps do not wait behind them" {
	# The node's upload slots held, as by four long uploads.
	local fds=() vols=() snaps=() f i
	for i in 0 1 2 3; do
		exec {f}>"$ROOT/data/vol/.snap-upload.$i"
		flock -x "$f"
		fds+=("$f")
	done
	head -c 2M /dev/urandom >"$BATS_TEST_TMPDIR/a"
	for i in 0 1 2 3 4; do
		vols+=("$(volume --size 1)")
		spx-vol write --root "$ROOT" "${vols[i]}" <"$BATS_TEST_TMPDIR/a"
	done
	for i in 0 1 2 3 4; do
		snaps+=("$(av2 ec2 create-snapshot --volume-id "${vols[i]}" --query SnapshotId --output text)")
	done
	# A second snapshot of a volume waits for the first, not fails.
	second=$(av2 ec2 create-snapshot --volume-id "${vols[0]}" --query SnapshotId --output text)
	# Each step has taken its moment and waits for a slot: all five at
	# once, past the agent's old limit of four.
	waiting() {
		local pid
		pid=$(pgrep -f -- "spx-vol snapshot .*--id $1 ") || return 1
		grep -q -- "-> FLOCK .* $pid " /proc/locks
	}
	for i in 0 1 2 3 4; do wait_for 30 waiting "${snaps[i]}"; done
	! pgrep -f -- "spx-vol snapshot .*--id $second " >/dev/null
	# What is written now is not in them.
	for i in 0 1 2 3 4; do
		head -c 2M /dev/zero | spx-vol write --root "$ROOT" "${vols[i]}"
	done
	# A volume is made meanwhile.
	n=$(volume --size 1)
	for i in 0 1 2 3 4; do [ "$(sstate "${snaps[i]}")" = "pending	0%" ]; done
	for f in "${fds[@]}"; do exec {f}>&-; done
	for i in 0 1 2 3 4; do wait_for 60 completed "${snaps[i]}"; done
	wait_for 60 completed "$second"
	! grep -E -- "(${snaps[0]}|$second): (to be tried again|.*(fail|refused|in use))" "$ROOT/log/agent.log"
	r=$(volume --snapshot-id "${snaps[4]}")
	spx-vol cat --root "$ROOT" "$r" | cmp -n 2097152 - "$BATS_TEST_TMPDIR/a"
	r2=$(volume --snapshot-id "$second")
	spx-vol cat --root "$ROOT" "$r2" | cmp -n 2097152 - /dev/zero
	for x in "${snaps[@]}" "$second"; do av2 ec2 delete-snapshot --snapshot-id "$x"; done
	for x in "${vols[@]}" "$n" "$r" "$r2"; do av2 ec2 delete-volume --volume-id "$x"; done
	# Gone before the next test counts the store's chunks (a volume still
	# restoring keeps the chunks it fetches from).
	removed() { grep -q "$1: done" <(grep -E -A1000 -- "spx-vol (snapshot-)?rm .*$1" "$ROOT/log/agent.log"); }
	for x in "${snaps[@]}" "$second" "${vols[@]}" "$n" "$r" "$r2"; do wait_for 30 removed "$x"; done
	# The volumes restored from two of them were removed after them:
	# the chunks they kept wait for a collection.
	spx-vol snapshot-gc --root "$ROOT" --wait >/dev/null
}

@test "a snapshot deleted while it is being taken: its step is stopped, nothing of it stays" {
	# Held half way while the delete is recorded and the agent acts.
	stopped_midway
	av2 ec2 delete-snapshot --snapshot-id "$s"
	run av2 ec2 describe-snapshots --snapshot-ids "$s"
	fails_with InvalidSnapshot.NotFound
	stopped() { grep -q "$s: stopped, the snapshot is deleted" "$ROOT/log/agent.log"; }
	kill -CONT "$pid"
	wait_for 30 stopped
	dead() { ! kill -0 "$pid" 2>/dev/null; }
	wait_for 30 dead
	removed() { grep -q -- "spx-vol snapshot-rm .*$s" "$ROOT/log/agent.log" && grep -q "$s: done" "$ROOT/log/agent.log"; }
	wait_for 30 removed
	# No manifest of it, and what it had uploaded goes with collection.
	! spx-obj ls --root "$ROOT" sthree-spx-snapshots | grep -q "^m/$s"
	spx-vol snapshot-gc --root "$ROOT" >/dev/null
	# None of its chunks is left (the collection may also take older
	# ones that earlier removals left to it).
	! comm -13 "$BATS_TEST_TMPDIR/chunks-before" <(chunk_list) | grep .
	# The volume is unharmed and can be snapshotted again.
	t=$(snapshot "$v")
	r=$(volume --snapshot-id "$t")
	spx-vol cat --root "$ROOT" "$r" | head -c 128M | cmp - "$BATS_TEST_TMPDIR/a"
	av2 ec2 delete-snapshot --snapshot-id "$t"
	for x in "$v" "$r"; do av2 ec2 delete-volume --volume-id "$x"; done
}

@test "two accounts make volumes of one snapshot at once while its owner deletes it: both hold its bytes" {
	v=$(volume --size 1)
	head -c 8M /dev/urandom >"$BATS_TEST_TMPDIR/a"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/a"
	s=$(snapshot "$v")
	av2 ec2 modify-snapshot-attribute --snapshot-id "$s" --attribute createVolumePermission --operation-type add --user-ids "$(other_account)"
	# All three recorded before the agent looks: the removal must wait
	# for both restores.
	kill -STOP "$(agent_pid)"
	av2 ec2 create-volume --availability-zone us-east-1a --snapshot-id "$s" --query VolumeId --output text >"$BATS_TEST_TMPDIR/mine" &
	a=$!
	other ec2 create-volume --availability-zone us-east-1a --snapshot-id "$s" --query VolumeId --output text >"$BATS_TEST_TMPDIR/theirs" &
	b=$!
	wait "$a"
	wait "$b"
	av2 ec2 delete-snapshot --snapshot-id "$s"
	kill -CONT "$(agent_pid)"
	r=$(cat "$BATS_TEST_TMPDIR/mine")
	o=$(cat "$BATS_TEST_TMPDIR/theirs")
	wait_for 30 vstate_is "$r" available || { grep -B3 -A12 "snapshot-rm.*$s" "$ROOT/log/agent.log"; false; }
	ostate_is() { agent_done "$o" && [ "$(other ec2 describe-volumes --volume-ids "$o" --query 'Volumes[0].State' --output text)" = available ]; }
	wait_for 30 ostate_is
	removed() { grep -q "$s: done" <(grep -A100 -- "spx-vol snapshot-rm .*$s" "$ROOT/log/agent.log"); }
	wait_for 30 removed
	# Both restores were started before the snapshot was removed.
	rm_at=$(grep -n -- "spx-vol snapshot-rm .*$s" "$ROOT/log/agent.log" | cut -d: -f1)
	for x in "$r" "$o"; do
		at=$(grep -n -- "spx-vol restore .*--id $x " "$ROOT/log/agent.log" | cut -d: -f1)
		[ -n "$at" ] && [ "$at" -lt "$rm_at" ] || { cat "$ROOT/log/agent.log"; false; }
	done
	# And both hold the snapshot's bytes, fetched after it was removed.
	for x in "$r" "$o"; do
		spx-vol cat --root "$ROOT" "$x" | cmp -n 8388608 - "$BATS_TEST_TMPDIR/a"
	done
	av2 ec2 delete-volume --volume-id "$r"
	other ec2 delete-volume --volume-id "$o"
	av2 ec2 delete-volume --volume-id "$v"
}

@test "a volume deleted while its snapshot is pending: the snapshot completes first, then the volume goes" {
	v=$(volume --size 1)
	head -c 2M /dev/urandom >"$BATS_TEST_TMPDIR/a"
	spx-vol write --root "$ROOT" "$v" <"$BATS_TEST_TMPDIR/a"
	# Both recorded before the agent looks.
	kill -STOP "$(agent_pid)"
	s=$(av2 ec2 create-snapshot --volume-id "$v" --query SnapshotId --output text)
	av2 ec2 delete-volume --volume-id "$v"
	kill -CONT "$(agent_pid)"
	wait_for 60 completed "$s"
	vgone() { ! av2 ec2 describe-volumes --volume-ids "$v" >/dev/null 2>&1; }
	wait_for 30 vgone
	# The snapshot was taken before the volume was removed.
	a=$(grep -n -- "spx-vol snapshot .*--id $s $v\$" "$ROOT/log/agent.log" | cut -d: -f1)
	b=$(grep -n -- "spx-vol rm --root $ROOT $v\$" "$ROOT/log/agent.log" | cut -d: -f1)
	d=$(grep -n -- "$s: done" "$ROOT/log/agent.log" | cut -d: -f1)
	[ -n "$a" ] && [ -n "$b" ] && [ -n "$d" ] && [ "$d" -lt "$b" ]
	r=$(volume --snapshot-id "$s")
	spx-vol cat --root "$ROOT" "$r" | cmp -n 2097152 - "$BATS_TEST_TMPDIR/a"
	av2 ec2 delete-snapshot --snapshot-id "$s"
	av2 ec2 delete-volume --volume-id "$r"
}

@test "npm SDK v3: volumes and snapshots with its waiters, paginator and error types" {
	[ -d "$SPX_TOP/tests/clients/node_modules/@aws-sdk/client-ec2" ] || skip "npm SDK v3 not installed (scripts/deps.sh)"
	read -r ak sk < <(admin_key)
	run env NODE_EXTRA_CA_CERTS="$ROOT/tls/ca.pem" AWS_ACCESS_KEY_ID="$ak" AWS_SECRET_ACCESS_KEY="$sk" \
		AWS_REGION=us-east-1 AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
		node "$SPX_TOP/tests/clients/ebs-sdk-v3.mjs" "https://127.0.0.1:$EC2_PORT"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "ok ebs" ]
}
