#!/usr/bin/env bats
# A real guest under spx-vm: the test image (scripts/mkimage.sh) imported
# into a volume, booted by BIOS from the node's NBD server under TCG, its
# metadata from spx-vm imds (IMDSv2, then user data and the SSH key), SSH
# through the forwarded port, and a clean ACPI power-off.

load helpers

F=$BATS_FILE_TMPDIR

setup_file() {
	"$SPX_TOP/scripts/mkimage.sh" "$F/spx.img" >"$F/build.out" 2>"$F/build.err" || {
		cat "$F/build.err" >&2
		return 1
	}
	make_node
	start_node
	echo "$ROOT" >"$F/root"
	VOL=$(spx-vol import --root "$ROOT" "$F/spx.img" --size 512M)
	echo "$VOL" >"$F/vol"
	ssh-keygen -q -t ed25519 -N '' -C spx-test -f "$F/key"
	IID=i-$(od -An -N9 -tx1 /dev/urandom | tr -d ' \n' | cut -c1-17)
	echo "$IID" >"$F/iid"
	# The user data writes a marker to the console and a file.
	ud=$(printf '#!/bin/sh\necho "user-data says hello from $(hostname)"\necho ok >/root/ud\n' | base64 -w0)
	cat >"$F/md.json" <<EOF
{"meta-data": {"instance-id": "$IID", "hostname": "vm-boot-test",
  "local-hostname": "vm-boot-test", "instance-type": "t3.micro",
  "ami-id": "ami-0123456789abcdef0",
  "placement": {"availability-zone": "us-east-1a"}},
 "public-keys": [{"name": "test", "openssh-key": "$(cat "$F/key.pub")"}],
 "user-data": "$ud", "http-tokens": "required"}
EOF
}

teardown_file() {
	ROOT=$(cat "$F/root" 2>/dev/null) || return 0
	spx-vm kill --root "$ROOT" g >/dev/null 2>&1 || true
	stop_node
}

setup() { ROOT=$(cat "$F/root"); }

# A test that failed says what became of the guest: whether its QEMU
# runs, the end of QEMU's own log (an assertion, a signal) and of the
# console, and what the kernel said meanwhile (an OOM kill, seccomp).
teardown() {
	[ -z "${BATS_TEST_COMPLETED:-}" ] || return 0
	local d=$ROOT/run/vm/g pid
	pid=$(cat "$d/qemu.pid" 2>/dev/null)
	{
		echo "# QEMU pid ${pid:-none}: $(ps -o pid=,stat=,etime= -p "${pid:-0}" 2>/dev/null || echo gone)"
		echo "# qemu.log:"
		tail -n 20 "$d/qemu.log" 2>/dev/null | sed 's/^/#   /'
		echo "# console:"
		tail -n 10 "$d/console.log" 2>/dev/null | sed 's/^/#   /'
		echo "# kernel:"
		dmesg 2>/dev/null | tail -n 10 | sed 's/^/#   /'
	} >&3
}

console() { spx-vm console --root "$ROOT" g; }
# readies N: the console (kept across boots) shows N "ready" lines.
readies() { [ "$(console 2>/dev/null | grep -c '^spx-image: ready')" -ge "$1" ]; }
guest() {
	timeout 30 ssh -i "$F/key" -p "$SSH_PORT" -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR -o ConnectTimeout=10 root@127.0.0.1 "$1"
}

@test "the image boots from its volume; metadata, user data and the key come from spx-vm imds; SSH answers" {
	# A port taken meanwhile makes QEMU fail at once: try another.
	for try in 1 2 3; do
		SSH_PORT=$(free_port)
		run spx-vm start --root "$ROOT" g --volume "$(cat "$F/vol")" \
			--ssh-port "$SSH_PORT" --metadata "$F/md.json"
		[ "$status" -eq 0 ] && break
		[[ "$output" == *"host forwarding"* ]] || break
	done
	[ "$status" -eq 0 ]
	echo "$SSH_PORT" >"$F/port"
	# As root, QEMU runs as the guest's user of its own: the metadata
	# service it runs for each connection reads the guest's files as that
	# user.
	if [ "$(id -u)" = 0 ]; then
		uid=$(ps -o uid= -p "$(cat "$ROOT/run/vm/g/qemu.pid")" | tr -d ' ')
		[ "$uid" -gt 0 ]
		[ "$uid" = "$(cat "$ROOT/run/vm/g/user")" ]
	fi
	wait_for 180 readies 1 || { console >&2; false; }
	run console
	[[ "$output" == *"spx-image: hostname vm-boot-test"* ]]
	[[ "$output" == *"user-data says hello from vm-boot-test"* ]]
	[[ "$output" == *"$(cat "$F/iid")"* ]]
	run guest hostname
	[ "$status" -eq 0 ]
	[ "$output" = vm-boot-test ]
	run guest 'cat /root/ud'
	[ "$output" = ok ]
	# From inside: IMDSv1 is refused (http-tokens required), v2 answers.
	run guest 'wget -q -O - http://169.254.169.254/latest/meta-data/instance-id'
	[ "$status" -ne 0 ]
	run guest 'wget -q -O - http://169.254.169.254/latest/meta-data/'
	[ "$status" -ne 0 ]
}

@test "a volume attached while the guest runs appears as a disk with its id, grows live; the guest's writes stay after detach" {
	SSH_PORT=$(cat "$F/port")
	w=$(spx-vol create --root "$ROOT" --size 16M)
	printf 'spx-attach-pattern' | spx-vol write --root "$ROOT" --socket "$ROOT/run/vol.sock" "$w"
	run spx-vm attach --root "$ROOT" g "$w"
	[ "$status" -eq 0 ]
	[ "$output" = "g: $w attached (serial ${w/-/})" ]
	# Asked again (the agent does after a crash): done already.
	run spx-vm attach --root "$ROOT" g "$w"
	[ "$status" -eq 0 ]
	[ "$output" = "g: $w is attached already" ]
	run guest 'for i in $(seq 100); do [ -b /dev/vdb ] && break; sleep 0.1; done
		cat /sys/block/vdb/serial; echo; head -c 18 /dev/vdb; echo
		printf guest-wrote | dd of=/dev/vdb bs=4096 seek=1 conv=fsync 2>/dev/null'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "${w/-/}" ]
	[ "${lines[1]}" = spx-attach-pattern ]
	# Grown while it runs: the guest's kernel sees the new size (512-byte
	# sectors) at once, and writes past the old end.
	spx-vol resize --root "$ROOT" "$w" 32M
	run spx-vm resize --root "$ROOT" g "$w"
	[ "$status" -eq 0 ]
	[ "$output" = "g: $w grown to 33554432 bytes" ]
	run guest 'for i in $(seq 100); do [ "$(cat /sys/block/vdb/size)" = 65536 ] && break; sleep 0.1; done
		cat /sys/block/vdb/size
		printf past-the-old-end | dd of=/dev/vdb bs=1M seek=24 conv=fsync 2>/dev/null'
	[ "$status" -eq 0 ]
	[ "$output" = 65536 ]
	run spx-vm detach --root "$ROOT" g "$w"
	[ "$status" -eq 0 ]
	[ "$output" = "g: $w detached" ]
	# Its block nodes went with it, the resize's NBD node too.
	run spx-vm qmp --root "$ROOT" g '{"execute": "query-named-block-nodes"}'
	[[ "$output" != *"$w"* ]]
	[ "$(spx-vol cat --root "$ROOT" --socket "$ROOT/run/vol.sock" "$w" | dd bs=1M skip=24 count=1 iflag=fullblock 2>/dev/null | head -c 16)" = past-the-old-end ]
	run guest '[ -b /dev/vdb ]'
	[ "$status" -ne 0 ]
	# Detached, the volume is no longer the guest's user's to open.
	if [ "$(id -u)" = 0 ]; then
		u=$(cat "$ROOT/run/vm/g/user")
		run setpriv --reuid "$u" --regid "$u" --clear-groups \
			qemu-img info "nbd+unix:///$w?socket=$ROOT/run/vol.sock"
		[ "$status" -ne 0 ]
		run setpriv --reuid "$u" --regid "$u" --clear-groups \
			qemu-img info "nbd+unix:///$(cat "$F/vol")?socket=$ROOT/run/vol.sock"
		[ "$status" -eq 0 ]
	fi
	[ "$(spx-vol cat --root "$ROOT" --socket "$ROOT/run/vol.sock" "$w" | dd bs=4096 skip=1 count=1 2>/dev/null | head -c 11)" = guest-wrote ]
	run spx-vm detach --root "$ROOT" g "$w"
	[ "$status" -eq 0 ]
	[ "$output" = "g: $w was not attached" ]
}

@test "the guest writes without a pause while the node stops and starts three times: no I/O error, its root stays writable" {
	SSH_PORT=$(cat "$F/port")
	# Small synchronous writes, one after another, until told to stop.
	base=$(guest 'dmesg | wc -l')
	guest 'rm -f /root/stop /root/n /root/dd.err
		setsid sh -c "i=0; while [ ! -e /root/stop ]; do
			dd if=/dev/urandom of=/root/w bs=4k count=4 conv=fsync 2>/dev/null || echo dd failed >>/root/dd.err
			i=\$((i + 1)); echo \$i >/root/n; done" </dev/null >/dev/null 2>&1 &'
	n() { guest 'cat /root/n 2>/dev/null || echo 0'; }
	more_than() { [ "$(n)" -gt "$1" ]; }
	for round in 1 2 3; do
		wait_for 60 more_than "$(n)"
		# spx down stops the volume server under the running guest; its
		# QEMU waits and sends its requests again to the next one.
		spx down --root "$ROOT" >/dev/null
		start_node
	done
	wait_for 60 more_than "$(n)"
	guest 'touch /root/stop'
	# The kernel's messages since the writes began: none of a failed
	# request or a file system gone read-only.
	run guest "cat /root/dd.err 2>/dev/null; dmesg | tail -n +$((base + 1)) | grep -iE 'I/O error|read-only|EXT4-fs (error|warning)'; touch /root/still-writable && echo writable"
	[ "$output" = writable ] || { echo "$output"; false; }
}

@test "the guest writes to its volume; the power button powers it off; a guest's own power-off leaves QEMU in shutdown until stop" {
	SSH_PORT=$(cat "$F/port")
	guest 'echo persisted >/root/mark && sync'
	run spx-vm stop --root "$ROOT" g --timeout 60
	[ "$status" -eq 0 ]
	[ "$output" = "g: powered off" ]
	# The volume holds what the guest wrote: boot it again and look.
	run spx-vm start --root "$ROOT" g --volume "$(cat "$F/vol")" \
		--ssh-port "$SSH_PORT" --metadata "$F/md.json"
	[ "$status" -eq 0 ]
	wait_for 180 readies 2
	run guest 'cat /root/mark'
	[ "$output" = persisted ]
	# Powered off from inside: QEMU (-no-shutdown) stays and says so,
	# and stop quits it without pressing the button or waiting.
	guest 'poweroff' || true
	state() {
		spx-vm info --root "$ROOT" g --json |
			python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["state"])'
	}
	wait_for 120 eval '[ "$(state)" = shutdown ]'
	# A reboot of a guest that is off boots it again, in the same QEMU.
	pid=$(cat "$ROOT/run/vm/g/qemu.pid")
	run spx-vm reboot --root "$ROOT" g
	[ "$status" -eq 0 ]
	[ "$(state)" = running ]
	wait_for 180 readies 3
	[ "$(cat "$ROOT/run/vm/g/qemu.pid")" = "$pid" ]
	guest 'poweroff' || true
	wait_for 120 eval '[ "$(state)" = shutdown ]'
	grep -qa "$ROOT/run/vm/g/qmp.sock" "/proc/$pid/cmdline"
	run spx-vm stop --root "$ROOT" g --timeout 600
	[ "$status" -eq 0 ]
	[ "$output" = "g: powered off" ]
	# (gone, or a zombie left to whoever reaps it: no command line)
	run grep -qa "$ROOT/run/vm/g/qmp.sock" "/proc/$pid/cmdline"
	[ "$status" -ne 0 ]
	[ "$(state)" = stopped ]
}
