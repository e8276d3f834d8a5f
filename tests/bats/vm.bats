#!/usr/bin/env bats
# spx-vm: guests under a real QEMU (TCG here), their lifecycle over QMP,
# each step with a deadline, a wedged or killed QEMU, and guests that
# outlive the node's services.

load helpers

setup() {
	make_node
	start_node
	VOL=$(spx-vol create --root "$ROOT" --size 64M)
}

teardown() {
	local d r
	# ROOT2: a second node a test made.
	for r in "$ROOT" ${ROOT2:+"$ROOT2"}; do
		for d in "$r"/run/vm/*/; do
			[ -d "$d" ] || continue
			kill -CONT "$(cat "$d/qemu.pid" 2>/dev/null)" 2>/dev/null || true
			spx-vm kill --root "$r" "$(basename "$d")" >/dev/null 2>&1 || true
		done
		ROOT=$r stop_node
	done
	true
}

vm() { spx-vm "$1" --root "$ROOT" "${@:2}"; }

# field NAME FIELD: one field of spx-vm info --json.
field() {
	vm info "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0][sys.argv[1]])' "$2"
}

# No QEMU runs for guest NAME (by the directory in its command line).
no_qemu() { ! pgrep -f "path=$ROOT/run/vm/$1/qmp.sock" >/dev/null; }

@test "start, ls, info, qmp, reboot, stop: QEMU quits when the guest ignores the power button" {
	run vm start g1 --volume "$VOL" --memory 128M --accel tcg --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
g = json.load(sys.stdin)[0]
assert g["name"] == "g1" and g["state"] == "running", g
assert g["accel"] == "tcg" and g["memory_mib"] == 128 and g["cpus"] == 1, g
assert g["volume"] == sys.argv[1] and g["ssh_port"] is None, g
assert g["uuid"].startswith("ec2"), g
' "$VOL"
	pid=$(field g1 pid)
	[ "$(cat "$ROOT/run/vm/g1/qemu.pid")" = "$pid" ]
	# Searched by its QEMU's user only (as root; else its caller's own).
	if [ "$(id -u)" = 0 ]; then
		[ "$(stat -c %u:%g:%a "$ROOT/run/vm/g1")" = "0:$(cat "$ROOT/run/vm/g1/user"):710" ]
	else
		[ "$(stat -c %a "$ROOT/run/vm/g1")" = 700 ]
	fi
	run vm ls
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" =~ ^g1\ +\|\ running\ +\|\ $pid\ +\|\ tcg ]]
	# The root volume is the guest's disk, through the node's NBD server.
	run vm qmp g1 '{"execute": "query-block"}'
	[ "$status" -eq 0 ]
	[[ "$output" == *"\"export\":\"$VOL\""* || "$output" == *"$VOL"* ]]
	run vm qmp g1 '{"execute": "query-kvm"}'
	[ "$output" = '{"return":{"enabled":false,"present":true}}' ] ||
		[ "$output" = '{"return":{"enabled":false,"present":false}}' ]
	run vm qmp g1 '{"execute": "no-such-command"}'
	[ "$status" -eq 1 ]
	[[ "$output" == *'"class":"CommandNotFound"'* ]]
	run vm qmp g1 'not json'
	[ "$status" -eq 100 ]
	run vm start g1 --volume "$VOL"
	[ "$status" -eq 1 ]
	[[ "$output" == *"'g1' is running already"* ]]
	run vm reboot g1
	[ "$status" -eq 0 ]
	# No guest OS here (a blank disk): the power button goes unanswered.
	run vm stop g1 --timeout 1
	[ "$status" -eq 0 ]
	[ "$output" = "g1: quit" ]
	no_qemu g1
	[ ! -e "$ROOT/run/vm/g1/qmp.sock" ]
	[ "$(field g1 state)" = stopped ]
	run vm stop g1
	[ "$output" = "g1: stopped already" ]
	run vm reboot g1
	[ "$status" -eq 1 ]
}

@test "probe: a tiny guest boots under TCG here; the KVM answer, kept, is what --accel auto uses" {
	run vm probe --accel tcg
	[ "$status" -eq 0 ]
	[ "$output" = "tcg: yes (a guest booted under tcg)" ]
	[ ! -e "$ROOT/run/vm/accel.json" ]
	run vm probe --json
	[ "$status" -eq 0 ] || [ "$status" -eq 1 ]
	kvm=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kvm"])' "$ROOT/run/vm/accel.json")
	if [ "$kvm" = True ]; then want=kvm; [ "$status" -eq 0 ]; else want=tcg; [ "$status" -eq 1 ]; fi
	run vm start g1 --volume "$VOL" --memory 128M
	[ "$status" -eq 0 ]
	[ "$(field g1 accel)" = "$want" ]
	# An answer kept for another QEMU is not believed: it probes again.
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["qemu"]="/other/qemu@1"; j["kvm"]=not j["kvm"]; json.dump(j, open(sys.argv[1],"w"))' "$ROOT/run/vm/accel.json"
	vm stop g1 --force >/dev/null
	run vm start g1 --volume "$VOL" --memory 128M
	[ "$status" -eq 0 ]
	[ "$(field g1 accel)" = "$want" ]
	grep -q "qemu-system-x86_64@" "$ROOT/run/vm/accel.json"
	run vm probe --accel xen
	[ "$status" -eq 100 ]
	# The probe leaves nothing of its own.
	[ ! -e "$ROOT/run/vm/probe.img" ] && [ ! -e "$ROOT/run/vm/probe.out" ]
}

@test "a killed QEMU shows stopped, and the guest starts again" {
	vm start g2 --volume "$VOL" >/dev/null
	pid=$(field g2 pid)
	kill -9 "$pid"
	wait_for 5 no_qemu g2
	[ "$(field g2 state)" = stopped ]
	run vm start g2 --volume "$VOL"
	[ "$status" -eq 0 ]
	[ "$(field g2 pid)" != "$pid" ]
	run vm kill g2
	[ "$status" -eq 0 ]
	no_qemu g2
}

@test "--boot-mode uefi: OVMF with a variable store of the guest's own, kept across starts" {
	[ -r /usr/share/OVMF/OVMF_CODE_4M.fd ] || skip "no OVMF (Debian's ovmf)"
	run vm start u1 --volume "$VOL" --accel tcg --boot-mode uefi
	[ "$status" -eq 0 ]
	d=$ROOT/run/vm/u1
	[ "$(stat -c %a:%s "$d/uefi-vars.fd")" = "600:$(stat -c %s /usr/share/OVMF/OVMF_VARS_4M.fd)" ]
	grep -q '"boot": "uefi"' "$d/spec.json"
	tr '\0' ' ' <"/proc/$(field u1 pid)/cmdline" | grep -q "if=pflash,format=raw,unit=1,file=$d/uefi-vars.fd"
	# The firmware is OVMF: its boot manager, on the serial console,
	# finds nothing to boot on the empty volume.
	wait_for 60 grep -q 'BdsDxe: failed to load .* "UEFI Misc Device"' "$d/console.log"
	ino=$(stat -c %i "$d/uefi-vars.fd")
	vm kill u1 >/dev/null
	run vm start u1 --volume "$VOL" --accel tcg --boot-mode uefi
	[ "$status" -eq 0 ]
	[ "$(stat -c %i "$d/uefi-vars.fd")" = "$ino" ]
	vm kill u1 >/dev/null
	# A BIOS guest has none.
	vm start b1 --volume "$VOL" --accel tcg >/dev/null
	[ ! -e "$ROOT/run/vm/b1/uefi-vars.fd" ]
	grep -q '"boot": "bios"' "$ROOT/run/vm/b1/spec.json"
	vm kill b1 >/dev/null
	# No OVMF: a clear error, no QEMU.
	SPX_OVMF_VARS=/nonexistent run vm start u2 --volume "$VOL" --boot-mode uefi
	[ "$status" -eq 111 ]
	[[ "$output" == *"UEFI needs OVMF"* ]]
	no_qemu u2
}

@test "a recycled pid in qemu.pid is not taken for the guest" {
	vm start g3 --volume "$VOL" >/dev/null
	vm kill g3
	sleep 300 &
	other=$!
	echo "$other" >"$ROOT/run/vm/g3/qemu.pid"
	[ "$(field g3 state)" = stopped ]
	run vm kill g3
	[ "$status" -eq 0 ]
	kill -0 "$other"
	kill "$other"
}

@test "a wedged QEMU: listed as unresponsive, stopped by killing it" {
	vm start g4 --volume "$VOL" >/dev/null
	pid=$(field g4 pid)
	kill -STOP "$pid"
	run vm ls
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" =~ ^g4\ +\|\ unresponsive ]]
	run vm stop g4 --timeout 1
	[ "$status" -eq 0 ]
	[ "$output" = "g4: killed" ]
	no_qemu g4
}

@test "guests keep running while the node's services restart" {
	vm start g5 --volume "$VOL" >/dev/null
	pid=$(field g5 pid)
	spx down --root "$ROOT" >/dev/null
	kill -0 "$pid"
	start_node
	[ "$(field g5 state)" = running ]
	[ "$(field g5 pid)" = "$pid" ]
}

@test "bad input changes nothing" {
	run vm start ../x --volume "$VOL"
	[ "$status" -eq 100 ]
	[[ "$output" == *"not a guest name: '../x'"* ]]
	run vm start g6
	[ "$status" -eq 100 ]
	[[ "$output" == *"--volume is required"* ]]
	run vm start g6 --volume "$VOL" --memory 10M
	[ "$status" -eq 100 ]
	run vm start g6 --volume "$VOL" --accel xen
	[ "$status" -eq 100 ]
	run vm start g6 --volume "$VOL" --boot-mode efi
	[ "$status" -eq 100 ]
	[[ "$output" == *"--boot-mode: bios or uefi, not 'efi'"* ]]
	for mac in 03:00:5e:10:00:01 02:00:5E:10:00:01 02:00:5e:10:00 \
		'02:00:5e:10:00:01,romfile=/etc/passwd' ''; do
		run vm start g6 --volume "$VOL" --mac "$mac"
		[ "$status" -eq 100 ]
		[[ "$output" == *"--mac: a unicast MAC address"* ]]
	done
	run vm start g6 --volume 'vol-x,file=/etc/passwd'
	[ "$status" -eq 100 ]
	run vm info nosuch
	[ "$status" -eq 1 ]
	# A volume the NBD server does not have: QEMU says so, and is gone.
	run vm start g6 --volume vol-0000000000000000a --timeout 10
	[ "$status" -eq 111 ]
	[[ "$output" == *"QEMU exited with 1"* ]]
	no_qemu g6
	[ "$(field g6 state)" = stopped ]
}

@test "two starts of one guest at once run one QEMU; verbs on no guest say so" {
	vm start g7 --volume "$VOL" >"$BATS_TEST_TMPDIR/a" 2>&1 &
	a=$!
	vm start g7 --volume "$VOL" >"$BATS_TEST_TMPDIR/b" 2>&1 &
	b=$!
	sa=0 sb=0
	wait "$a" || sa=$?
	wait "$b" || sb=$?
	[ $((sa + sb)) -eq 1 ]
	cat "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b" | grep -q "'g7' is running already"
	[ "$(pgrep -fc "path=$ROOT/run/vm/g7/qmp.sock")" -eq 1 ]
	for verb in stop reboot; do
		run vm "$verb" nosuch
		[ "$status" -eq 1 ]
		[[ "$output" == *"no guest 'nosuch'"* ]]
	done
	run vm attach nosuch "$VOL"
	[ "$status" -eq 1 ]
}

@test "the metadata service: one guest's connections are bounded, the rest get 429" {
	d=$ROOT/run/vm/md
	mkdir -p "$d"
	echo '{"meta-data": {"instance-id": "i-0123456789abcdef0"}}' >"$d/metadata.json"
	head -c 32 /dev/urandom >"$d/imds.key"
	run spx-vm imds "$d" < <(printf 'GET /latest/meta-data/instance-id HTTP/1.0\r\n\r\n')
	[ "$status" -eq 0 ]
	[[ "$output" == *"200 OK"* && "$output" == *"i-0123456789abcdef0" ]]
	# Eight connections that say nothing hold the eight slots.
	pids=()
	for i in 1 2 3 4 5 6 7 8; do
		sleep 30 | spx-vm imds "$d" >/dev/null &
		pids+=($!)
	done
	# All eight held: each slot file's inode is in /proc/locks (looked
	# up without taking a lock, which would take a slot itself).
	held() {
		local i ino
		for i in 0 1 2 3 4 5 6 7; do
			ino=$(stat -c %i "$d/imds-slot-$i" 2>/dev/null) || return 1
			grep -q ":$ino " /proc/locks || return 1
		done
	}
	wait_for 10 held
	run spx-vm imds "$d" < <(printf 'GET / HTTP/1.0\r\n\r\n')
	[[ "$output" == *"429 Too Many Requests"* ]]
	kill "${pids[@]}" 2>/dev/null || true
	pkill -f "spx-vm imds $d" || true
}

# as UID CMD...: CMD as that uid and the gid of the same number (a guest's
# QEMU user), without root's groups.
as() { local u=$1; shift; setpriv --reuid "$u" --regid "$u" --clear-groups "$@"; }
# gone PID: no such process, or a zombie.
gone() { local s; s=$(ps -o stat= -p "$1"); [ -z "$s" ] || [[ "$s" == Z* ]]; }
# nbd UID VOL: open VOL over the node's socket as UID.
nbd() { as "$1" qemu-img info "nbd+unix:///$2?socket=$ROOT/run/vol.sock"; }

@test "as root, each guest's QEMU runs as a user of its own, which reaches that guest's metadata and volumes only" {
	[ "$(id -u)" = 0 ] || skip "spx-vm gives QEMU a user of its own only as root"
	W=$(spx-vol create --root "$ROOT" --size 16M)
	V2=$(spx-vol create --root "$ROOT" --size 64M)
	md=$BATS_TEST_TMPDIR/md.json
	echo '{"meta-data": {"instance-id": "i-0123456789abcdef0"}}' >"$md"
	run vm start g1 --volume "$VOL" --disks "$W" --memory 128M --accel tcg --metadata "$md"
	[ "$status" -eq 0 ]
	run vm start g2 --volume "$V2" --memory 128M --accel tcg --metadata "$md"
	[ "$status" -eq 0 ]
	u1=$(ps -o uid= -p "$(cat "$ROOT/run/vm/g1/qemu.pid")" | tr -d ' ')
	u2=$(ps -o uid= -p "$(cat "$ROOT/run/vm/g2/qemu.pid")" | tr -d ' ')
	[ "$u1" -gt 0 ]
	[ "$u2" -gt 0 ]
	[ "$u1" != "$u2" ]
	[ "$(ps -o gid= -p "$(cat "$ROOT/run/vm/g1/qemu.pid")" | tr -d ' ')" = "$u1" ]
	[ "$(cat "$ROOT/run/vm/g1/user")" = "$u1" ]
	# The metadata service (QEMU's child, so g1's user) reads g1's files;
	# g2's user reads none of them.
	run as "$u1" spx-vm imds "$ROOT/run/vm/g1" < <(printf 'GET /latest/meta-data/instance-id HTTP/1.0\r\n\r\n')
	[ "$status" -eq 0 ]
	[[ "$output" == *"200 OK"* && "$output" == *"i-0123456789abcdef0" ]]
	run as "$u1" cat "$ROOT/run/vm/g1/imds.key"
	[ "$status" -eq 0 ]
	for f in metadata.json imds.key spec.json console.log; do
		run as "$u2" cat "$ROOT/run/vm/g1/$f"
		[ "$status" -ne 0 ]
	done
	run as "$u2" spx-vm imds "$ROOT/run/vm/g1" </dev/null
	[ "$status" -eq 111 ]
	run as "$u1" cat "$ROOT/run/vm/g1/spec.json"
	[ "$status" -ne 0 ]
	# Over the node's NBD socket each user opens its guest's volumes only.
	run nbd "$u1" "$VOL"
	[ "$status" -eq 0 ]
	run nbd "$u1" "$W"
	[ "$status" -eq 0 ]
	run nbd "$u2" "$V2"
	[ "$status" -eq 0 ]
	for v in "$VOL" "$W"; do
		run nbd "$u2" "$v"
		[ "$status" -ne 0 ]
		[[ "$output" != *"virtual size"* ]]
	done
	run nbd "$u1" "$V2"
	[ "$status" -ne 0 ]
	run nbd 0 "$V2"
	[ "$status" -eq 0 ]
	# A volume attached to g2 (as EBS moves it) is g2's from then on.
	run vm attach g2 "$W"
	[ "$status" -eq 0 ]
	run nbd "$u2" "$W"
	[ "$status" -eq 0 ]
	run nbd "$u1" "$W"
	[ "$status" -ne 0 ]
	# Stopped, g1 gives its user up: its files are root's again, and the
	# user opens nothing.
	run vm stop g1 --force
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/run/vm/g1/user" ]
	[ "$(stat -c %u:%g:%a "$ROOT/run/vm/g1/metadata.json")" = 0:0:600 ]
	[ "$(stat -c %u:%g:%a "$ROOT/run/vm/g1")" = 0:0:700 ]
	run nbd "$u1" "$VOL"
	[ "$status" -ne 0 ]
	# Started again, it takes the lowest free user: its old one.
	run vm start g1 --volume "$VOL" --memory 128M --accel tcg
	[ "$status" -eq 0 ]
	[ "$(ps -o uid= -p "$(cat "$ROOT/run/vm/g1/qemu.pid")" | tr -d ' ')" = "$u1" ]
}

@test "the volume server restarts under a guest: its QEMU, as the guest's user, reconnects to its volume" {
	vm start g6 --volume "$VOL" --memory 128M --accel tcg >/dev/null
	pid=$(field g6 pid)
	spx down --root "$ROOT" >/dev/null
	start_node
	[ "$(field g6 pid)" = "$pid" ]
	# QEMU writes to the volume (qemu-io on the guest's disk; it reports
	# in its log), over a connection made after the restart.
	run vm qmp g6 '{"execute": "human-monitor-command", "arguments": {"command-line": "qemu-io -d /machine/peripheral/root-disk/virtio-backend \"write -P 0x5a 1M 4k\""}}'
	[ "$status" -eq 0 ]
	grep -q "wrote 4096/4096 bytes at offset 1048576" "$ROOT/run/vm/g6/qemu.log"
	! grep -q "failed" "$ROOT/run/vm/g6/qemu.log"
	[ "$(spx-vol cat --root "$ROOT" --socket "$ROOT/run/vol.sock" "$VOL" | dd bs=4096 skip=256 count=1 2>/dev/null | head -c 4)" = ZZZZ ]
	# The new connection is the guest user's (as root), and was let in.
	if [ "$(id -u)" = 0 ]; then
		[ "$(ps -o uid= -p "$pid" | tr -d ' ')" = "$(cat "$ROOT/run/vm/g6/user")" ]
		! grep -q "refused to uid" "$ROOT/log/vol.log"
	fi
}

@test "the guest's TRIM reaches its volume: the blocks it discards are freed and read as zeros" {
	vm start g8 --volume "$VOL" --memory 128M --accel tcg >/dev/null
	# qemu-io on the guest's disk, as the guest's driver would ask.
	io() { vm qmp g8 "{\"execute\": \"human-monitor-command\", \"arguments\": {\"command-line\": \"qemu-io -d /machine/peripheral/root-disk/virtio-backend \\\"$1\\\"\"}}" >/dev/null; }
	allocated() { spx-vol info --root "$ROOT" --json "$VOL" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["allocated"])'; }
	io "write -P 0x5a 8M 8M"
	io "flush"
	full=$(allocated)
	[ "$full" -ge $((8 << 20)) ]
	io "discard 8M 8M"
	io "flush"
	grep -q "discard 8388608/8388608 bytes at offset 8388608" "$ROOT/run/vm/g8/qemu.log"
	[ "$(allocated)" -le $((full - (8 << 20))) ] || { echo "allocated $(allocated), was $full"; false; }
	[ "$(spx-vol cat --root "$ROOT" --socket "$ROOT/run/vol.sock" "$VOL" | dd bs=1M skip=8 count=8 2>/dev/null | tr -d '\0' | wc -c)" = 0 ]
	vm kill g8 >/dev/null
}

@test "resize: the running guest's disks take their volumes' new size, root and hot-plugged, again and again" {
	W=$(spx-vol create --root "$ROOT" --size 16M)
	vm start g9 --volume "$VOL" --memory 128M --accel tcg >/dev/null
	vm attach g9 "$W" >/dev/null
	# size NODE: what QEMU has for the disk's raw node.
	size() { vm qmp g9 '{"execute": "query-named-block-nodes"}' | python3 -c 'import json,sys; print([n["image"]["virtual-size"] for n in json.load(sys.stdin)["return"] if n["node-name"] == sys.argv[1]][0])' "$1"; }
	io() { vm qmp g9 "{\"execute\": \"human-monitor-command\", \"arguments\": {\"command-line\": \"qemu-io -d /machine/peripheral/$1/virtio-backend \\\"$2\\\"\"}}" >/dev/null; }
	run vm resize g9 "$VOL"
	[ "$status" -eq 0 ]
	[ "$output" = "g9: $VOL is 67108864 bytes already" ]
	spx-vol resize --root "$ROOT" "$VOL" 128M
	run vm resize g9 "$VOL"
	[ "$status" -eq 0 ]
	[ "$output" = "g9: $VOL grown to 134217728 bytes" ]
	[ "$(size root)" = 134217728 ]
	# Past the old end, through the guest's disk.
	io root-disk "write -P 0x61 100M 4k"
	grep -q "wrote 4096/4096 bytes at offset 104857600" "$ROOT/run/vm/g9/qemu.log"
	[ "$(spx-vol cat --root "$ROOT" --socket "$ROOT/run/vol.sock" "$VOL" | dd bs=4096 skip=25600 count=1 2>/dev/null | head -c 4)" = aaaa ]
	# The hot-plugged disk, twice (its NBD node n0, then n1, then n0).
	for n in 32 48; do
		spx-vol resize --root "$ROOT" "$W" ${n}M
		run vm resize g9 "$W"
		[ "$status" -eq 0 ]
		[ "$output" = "g9: $W grown to $((n << 20)) bytes" ]
		[ "$(size "d-$W")" = $((n << 20)) ]
	done
	io "disk-$W" "write -P 0x62 40M 4k"
	grep -q "wrote 4096/4096 bytes at offset 41943040" "$ROOT/run/vm/g9/qemu.log"
	! grep -q failed "$ROOT/run/vm/g9/qemu.log"
	# Not a disk of the guest; a guest that is not running.
	V2=$(spx-vol create --root "$ROOT" --size 4M)
	run vm resize g9 "$V2"
	[ "$status" -eq 1 ]
	[[ "$output" == *"'$V2' is not a disk of g9"* ]]
	run vm resize nosuch "$W"
	[ "$status" -eq 1 ]
	vm kill g9 >/dev/null
}

@test "as root, a guest whose QEMU died gives its user up to the next start; the new holder reaches none of the old guest's files or volumes" {
	[ "$(id -u)" = 0 ] || skip "spx-vm gives QEMU a user of its own only as root"
	V2=$(spx-vol create --root "$ROOT" --size 64M)
	md=$BATS_TEST_TMPDIR/md.json
	echo '{"meta-data": {"instance-id": "i-0123456789abcdef0"}}' >"$md"
	run vm start g1 --volume "$VOL" --memory 128M --accel tcg --metadata "$md"
	[ "$status" -eq 0 ]
	u=$(cat "$ROOT/run/vm/g1/user")
	# Killed behind spx-vm's back: its record stays for now. A process
	# it left behind as its user (a compromised QEMU may fork and
	# setsid) must not outlive the user's next start.
	as "$u" setsid sleep 600 </dev/null >/dev/null 2>&1 &
	left=$!
	kill -9 "$(cat "$ROOT/run/vm/g1/qemu.pid")"
	wait_for 10 no_qemu g1
	[ "$(cat "$ROOT/run/vm/g1/user")" = "$u" ]
	kill -0 "$left"
	run vm start g2 --volume "$V2" --memory 128M --accel tcg --metadata "$md"
	[ "$status" -eq 0 ]
	[ "$(cat "$ROOT/run/vm/g2/user")" = "$u" ]
	# Gone, or a zombie until this shell reaps it.
	wait_for 10 gone "$left"
	[ "$(ps -u "$u" -o comm= | grep -vc qemu)" = 0 ]
	[ ! -e "$ROOT/run/vm/g1/user" ]
	[ "$(stat -c %u:%g:%a "$ROOT/run/vm/g1")" = 0:0:700 ]
	[ "$(stat -c %u "$ROOT/run/vm/g1/metadata.json")" = 0 ]
	run as "$u" cat "$ROOT/run/vm/g1/metadata.json"
	[ "$status" -ne 0 ]
	run nbd "$u" "$VOL"
	[ "$status" -ne 0 ]
	run nbd "$u" "$V2"
	[ "$status" -eq 0 ]
}

@test "as root, two nodes on one host with the same vm.uid_base give their guests users of their own: a start on one leaves the other's guests running" {
	[ "$(id -u)" = 0 ] || skip "spx-vm gives QEMU a user of its own only as root"
	R1=$ROOT
	base=$(sed -n 's/^uid_base = //p' "$R1/spinifex.toml")
	[ -n "$base" ]
	make_node
	ROOT2=$ROOT
	sed -i "s/^uid_base = .*/uid_base = $base/" "$ROOT2/spinifex.toml"
	start_node
	V2=$(spx-vol create --root "$ROOT2" --size 64M)
	ROOT=$R1
	run vm start g1 --volume "$VOL" --memory 128M --accel tcg
	[ "$status" -eq 0 ]
	p1=$(cat "$R1/run/vm/g1/qemu.pid")
	u1=$(cat "$R1/run/vm/g1/user")
	[ "$u1" -ge "$base" ]
	# The other node's first guest: the lowest slot of the same base is
	# held on this host, so it takes the next, and the first guest's
	# QEMU (whose uid a start purges of processes) runs on.
	run spx-vm start --root "$ROOT2" g1 --volume "$V2" --memory 128M --accel tcg
	[ "$status" -eq 0 ]
	u2=$(cat "$ROOT2/run/vm/g1/user")
	[ "$u2" != "$u1" ]
	[ "$(ps -o uid= -p "$(cat "$ROOT2/run/vm/g1/qemu.pid")" | tr -d ' ')" = "$u2" ]
	kill -0 "$p1"
	[ "$(field g1 pid)" = "$p1" ]
	# Nor can the first guest's user open the other node's volume.
	run setpriv --reuid "$u1" --regid "$u1" --clear-groups \
		qemu-img info "nbd+unix:///$V2?socket=$ROOT2/run/vol.sock"
	[ "$status" -ne 0 ]
	# Stopped and started again, each keeps its own; once the first
	# node's guest stopped, its user is free for the other's next start.
	restart2() {
		spx-vm stop --root "$ROOT2" g1 --force >/dev/null &&
			spx-vm start --root "$ROOT2" g1 --volume "$V2" \
				--memory 128M --accel tcg >/dev/null
	}
	restart2
	[ "$(cat "$ROOT2/run/vm/g1/user")" = "$u2" ]
	kill -0 "$p1"
	run vm stop g1 --force
	[ "$status" -eq 0 ]
	restart2
	[ "$(cat "$ROOT2/run/vm/g1/user")" = "$u1" ]
	# Its QEMU killed behind spx-vm's back, the claim is stale: the
	# first node's next start takes the uid and gives the other
	# guest's record up, its files back to root.
	kill -9 "$(cat "$ROOT2/run/vm/g1/qemu.pid")"
	wait_for 10 eval '! pgrep -f "path=$ROOT2/run/vm/g1/qmp.sock" >/dev/null'
	[ -e "$ROOT2/run/vm/g1/user" ]
	run vm start g1 --volume "$VOL" --memory 128M --accel tcg
	[ "$status" -eq 0 ]
	[ "$(cat "$R1/run/vm/g1/user")" = "$u1" ]
	[ ! -e "$ROOT2/run/vm/g1/user" ]
	[ "$(stat -c %u:%a "$ROOT2/run/vm/g1")" = 0:700 ]
}
