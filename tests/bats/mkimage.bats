#!/usr/bin/env bats
# scripts/mkimage.sh: the test image. Built once (packages from the cache
# in /var/cache/spx/mkimage, or downloaded into it), checked as a file,
# then booted by BIOS under QEMU TCG with user-mode networking: its
# metadata comes from a stand-in on loopback (tests/bats/fixtures/
# imds-standin.py) that QEMU reaches through a guestfwd relay, SSH from a
# forwarded loopback port. One guest runs through the file: boot, SSH,
# reboot (IMDSv1), reboot (metadata unreachable), ACPI power-off.
#
# QEMU's user network (slirp) forwards a guest address only inside its own
# network, so the guest network here is 169.254.169.0/24 (guest
# 169.254.169.15, gateway .2): 169.254.169.254 is in it.

load helpers

F=$BATS_FILE_TMPDIR
IMG=$F/spx.img
DISK=$F/disk.img

setup_file() {
	local t0=$SECONDS
	"$SPX_TOP/scripts/mkimage.sh" "$IMG" >"$F/build.out" 2>"$F/build.err" || {
		echo "mkimage.sh failed:" >&2
		cat "$F/build.err" >&2
		return 1
	}
	echo $((SECONDS - t0)) >"$F/build.seconds"

	# The metadata: a random instance, our key, a user-data script.
	local md=$F/imds/tree/latest/meta-data
	mkdir -p "$md/public-keys/0"
	ssh-keygen -q -t ed25519 -N '' -C spx-test -f "$F/key"
	ssh-keygen -q -t ed25519 -N '' -C other -f "$F/other"
	echo "i-$(od -An -N9 -tx1 /dev/urandom | tr -d ' \n' | cut -c1-17)" >"$md/instance-id"
	echo "spx-test-$RANDOM" >"$md/hostname"
	cp "$F/key.pub" "$md/public-keys/0/openssh-key"
	cat >"$F/imds/tree/latest/user-data" <<'EOF'
#!/bin/sh
echo "user-data marker $(hostname) uid=$(id -u)"
echo here >/root/user-data-was-here
exit 3
EOF
	# Bounded, like QEMU below, should teardown_file never run.
	timeout 600 /usr/bin/python3 "$SPX_TOP/tests/bats/fixtures/imds-standin.py" "$F/imds" \
		>"$F/imds.log" 2>&1 3>&- &
	echo $! >"$F/imds.pid"
	wait_for 10 test -s "$F/imds/port"

	cp --sparse=always "$IMG" "$DISK"
	start_vm
}

teardown_file() {
	local p
	for p in "$F/qemu.pid" "$F/imds.pid"; do
		[ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	true
}

# Start QEMU on $DISK in the background, as spx-vm will: BIOS boot from
# the virtio disk, serial console to a file, QMP on a socket. QEMU's exit
# status goes to qemu.rc. A forwarded port taken meanwhile: try another.
start_vm() {
	local try relay
	relay="/usr/bin/python3 $SPX_TOP/tests/bats/fixtures/imds-relay.py $(cat "$F/imds/port")"
	for try in 1 2 3; do
		SSH_PORT=$(free_port)
		echo "$SSH_PORT" >"$F/ssh.port"
		rm -f "$F/qemu.rc" "$F/qemu.pid" "$F/qmp.sock" "$F/console.log"
		date +%s.%N >"$F/boot.start"
		(
			timeout 300 qemu-system-x86_64 -accel tcg -machine q35 -m 256 \
				-nodefaults -display none -serial "file:$F/console.log" \
				-drive "file=$DISK,if=virtio,format=raw" \
				-netdev "user,id=n0,net=169.254.169.0/24,hostfwd=tcp:127.0.0.1:$SSH_PORT-:22,guestfwd=tcp:169.254.169.254:80-cmd:$relay" \
				-device virtio-net-pci,netdev=n0 \
				-qmp "unix:$F/qmp.sock,server,nowait" -pidfile "$F/qemu.pid"
			echo $? >"$F/qemu.rc"
		) >"$F/qemu.out" 2>&1 3>&- &
		wait_for 20 qemu_up || return 1
		[ -S "$F/qmp.sock" ] && return 0
		grep -q "host forwarding" "$F/qemu.out" || break
	done
	cat "$F/qemu.out" >&2
	return 1
}
qemu_up() { [ -S "$F/qmp.sock" ] || [ -e "$F/qemu.rc" ]; }

# qmp COMMAND: one QMP command; prints its answer (JSON).
qmp() {
	timeout 10 /usr/bin/python3 -c '
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
json.loads(f.readline())
for cmd in ({"execute": "qmp_capabilities"}, {"execute": sys.argv[2]}):
    f.write(json.dumps(cmd) + "\n")
    f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r or "error" in r:
            break
print(json.dumps(r))' "$F/qmp.sock" "$1"
}

# ssh_as KEY COMMAND: run COMMAND in the guest as root with KEY.
ssh_as() {
	timeout 30 ssh -i "$1" -p "$(cat "$F/ssh.port")" -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR -o ConnectTimeout=10 root@127.0.0.1 "$2"
}
guest() { ssh_as "$F/key" "$1"; }

# readies N: the console shows at least N "ready" lines.
readies() { [ "$(grep -c '^spx-image: ready' "$F/console.log" 2>/dev/null)" -ge "$1" ]; }
console_has() { grep -qF -- "$1" "$F/console.log"; }

@test "mkimage: usage errors exit 100 with the usage" {
	run "$SPX_TOP/scripts/mkimage.sh"
	[ "$status" -eq 100 ]
	[ "${lines[0]}" = "mkimage.sh: no output file" ]
	[ "${lines[1]}" = "usage: mkimage.sh OUT.img [--size SIZE] [--cache DIR] [--cloud-init]" ]
	run "$SPX_TOP/scripts/mkimage.sh" "$F/x.img" --size 12X
	[ "$status" -eq 100 ]
	[ "${lines[0]}" = "mkimage.sh: bad size '12X'" ]
	run "$SPX_TOP/scripts/mkimage.sh" "$F/x.img" --size 32M
	[ "$status" -eq 100 ]
	[ "${lines[0]}" = "mkimage.sh: size '32M' too small: the image needs at least 64M" ]
	run "$SPX_TOP/scripts/mkimage.sh" "$F/x.img" --bogus
	[ "$status" -eq 100 ]
	[ "${lines[0]}" = "mkimage.sh: unknown option '--bogus'" ]
	run "$SPX_TOP/scripts/mkimage.sh" "$F/x.img" "$F/y.img"
	[ "$status" -eq 100 ]
	[ "${lines[0]}" = "mkimage.sh: more than one output file: '$F/x.img' and '$F/y.img'" ]
	run "$SPX_TOP/scripts/mkimage.sh" "$F/x.img" --size
	[ "$status" -eq 100 ]
	[ "${lines[0]}" = "mkimage.sh: --size needs a value" ]
	run "$SPX_TOP/scripts/mkimage.sh" --help
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "usage: mkimage.sh OUT.img [--size SIZE] [--cache DIR] [--cloud-init]" ]
	[ ! -e "$F/x.img" ]
}

@test "mkimage: an MBR disk, syslinux on an active FAT partition, ext4 root" {
	# What the build printed, and that it is true of the file.
	grep -qx "image: $IMG" "$F/build.out"
	grep -qx "size: 268435456" "$F/build.out"
	[ "$(stat -c %s "$IMG")" -eq 268435456 ]
	grep -qx "boot-mode: bios uefi" "$F/build.out"
	grep -qx "sha256: $(sha256sum "$IMG" | cut -d' ' -f1)" "$F/build.out"
	alloc=$(sed -n 's/^allocated: //p' "$F/build.out")
	[ "$alloc" -eq $(($(stat -c %b "$IMG") * $(stat -c %B "$IMG"))) ]
	# Sparse: the kernel is most of it.
	[ "$alloc" -lt $((48 * 1024 * 1024)) ]
	echo "# image: 256 MiB, $((alloc / 1024)) KiB allocated, built in $(cat "$F/build.seconds") s" >&3

	# sector 0: syslinux's MBR code and the boot signature.
	mbr=/usr/lib/syslinux/mbr/mbr.bin
	cmp -n 440 "$mbr" "$IMG"
	[ "$(od -An -tx1 -j510 -N2 "$IMG" | tr -d ' ')" = 55aa ]
	# Two partitions: 1 FAT16 (LBA) and active, 2 Linux.
	run sfdisk -d "$IMG"
	[ "$status" -eq 0 ]
	echo "$output" | grep -qE "^$IMG""1 : start= *2048, size= *[0-9]+, type=e, bootable$"
	echo "$output" | grep -qE "^$IMG""2 : start= *[0-9]+, size= *[0-9]+, type=83$"
	p1=$(echo "$output" | sed -n "s|^${IMG}1 : start= *\([0-9]*\),.*|\1|p")
	p2=$(echo "$output" | sed -n "s|^${IMG}2 : start= *\([0-9]*\),.*|\1|p")

	# The boot partition: syslinux installed, its config, the kernel.
	export MTOOLS_SKIP_CHECK=1
	run mdir -a -b -i "$IMG@@$((p1 * 512))" ::/
	[ "$status" -eq 0 ]
	for f in LDLINUX.SYS LDLINUX.C32 VMLINUZ INITRD.GZ SYSLINUX.CFG; do
		echo "$output" | grep -qix "::/$f"
	done
	run mtype -i "$IMG@@$((p1 * 512))" ::/syslinux.cfg
	[ "$status" -eq 0 ]
	echo "$output" | grep -q "^  APPEND root=/dev/vda2 rw console=ttyS0,115200"
	# ... and for UEFI, syslinux's EFI loader on the removable-media path.
	run mdir -a -b -i "$IMG@@$((p1 * 512))" ::/EFI/BOOT
	[ "$status" -eq 0 ]
	for f in BOOTX64.EFI LDLINUX.E64 SYSLINUX.CFG; do
		echo "$output" | grep -qix "::/EFI/BOOT/$f"
	done
	cmp <(mtype -i "$IMG@@$((p1 * 512))" ::/EFI/BOOT/BOOTX64.EFI) /usr/lib/SYSLINUX.EFI/efi64/syslinux.efi

	# The root filesystem: busybox itself (not a link to itself), init,
	# dropbear and each library it needs, all root's.
	r="$IMG?offset=$((p2 * 512))"
	run debugfs -R "stat /bin/busybox" "$r"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q "Type: regular"
	echo "$output" | grep -q "User: *0 *Group: *0"
	run debugfs -R "stat /sbin/init" "$r"
	echo "$output" | grep -q 'Fast link dest: "/bin/busybox"'
	debugfs -R "dump /usr/sbin/dropbear $F/dropbear" "$r"
	[ -s "$F/dropbear" ]
	libs=$(readelf -d "$F/dropbear" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
	[ -n "$libs" ]
	for l in $libs ld-linux-x86-64.so.2; do
		found=0
		for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
			run debugfs -R "stat $d/$l" "$r"
			echo "$output" | grep -q "Type: regular" && found=$((found + 1))
		done
		[ $found -eq 1 ]
	done
	run debugfs -R "stat /lib64/ld-linux-x86-64.so.2" "$r"
	echo "$output" | grep -q 'Fast link dest: "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"'
	run debugfs -R "cat /etc/inittab" "$r"
	echo "$output" | grep -qx "::sysinit:/etc/init.d/rcS"
	run e2fsck -fn "$r"
	[ "$status" -eq 0 ]
}

@test "boot: BIOS and syslinux to ready; hostname and user data from IMDS" {
	wait_for 120 readies 1
	end=$(date +%s.%N)
	secs=$(echo "$(cat "$F/boot.start") $end" | awk '{ printf "%.1f", $2 - $1 }')
	# The serial console ends lines with CR LF.
	up=$(sed -n 's/^spx-image: ready (uptime \([0-9.]*\) s).*/\1/p' "$F/console.log")
	echo "# boot to 'spx-image: ready' under TCG: $secs s wall (guest uptime $up s)" >&3
	name=$(cat "$F/imds/tree/latest/meta-data/hostname")
	id=$(cat "$F/imds/tree/latest/meta-data/instance-id")
	console_has "SYSLINUX 6."
	console_has "spx-image: network: eth0 169.254.169.15/24"
	console_has "spx-image: metadata: IMDSv2 token acquired"
	console_has "spx-image: instance-id $id"
	console_has "spx-image: hostname $name"
	console_has "spx-image: ssh key installed (ssh-ed25519 spx-test)"
	console_has "user-data marker $name uid=0"
	console_has "spx-image: user-data ran (exit 3)"
	console_has "spx-image: ssh: dropbear listening on port 22"
	console_has "spx-image: acpid: power button armed"
}

@test "boot: the guest used IMDSv2: a token, then every GET with it" {
	run cat "$F/imds/requests.log"
	[ "${lines[0]}" = "PUT /latest/api/token ttl=21600" ]
	[ "${lines[1]}" = "GET /latest/meta-data/instance-id token=valid" ]
	[ "${lines[2]}" = "GET /latest/meta-data/hostname token=valid" ]
	[ "${lines[3]}" = "GET /latest/meta-data/public-keys/0/openssh-key token=valid" ]
	[ "${lines[4]}" = "GET /latest/user-data token=valid" ]
	[ "${#lines[@]}" -eq 5 ]
}

@test "ssh: the key from IMDS logs in as root through the forwarded port; another key does not" {
	run guest 'hostname; cat /proc/cmdline; id -u; cat /root/user-data-was-here'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(cat "$F/imds/tree/latest/meta-data/hostname")" ]
	[[ "${lines[1]}" == *"root=/dev/vda2 rw console=ttyS0,115200"* ]]
	[ "${lines[2]}" = 0 ]
	[ "${lines[3]}" = here ]
	run ssh_as "$F/other" true
	[ "$status" -eq 255 ]
	[[ "$output" == *"Permission denied (publickey)"* ]]
}

@test "reboot: a file written over ssh is still there; user data does not run again; IMDSv1 fallback" {
	readies 1
	token=$RANDOM$RANDOM
	run guest "echo $token >/root/persist && sync"
	[ "$status" -eq 0 ]
	: >"$F/imds/requests.log"
	# The token request now gets no answer (a dropped PUT): IMDSv1.
	echo drop >"$F/imds/mode"
	run guest reboot
	wait_for 120 readies 2
	run guest "cat /root/persist; hostname"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$token" ]
	[ "${lines[1]}" = "$(cat "$F/imds/tree/latest/meta-data/hostname")" ]
	console_has "spx-image: root filesystem read-only"
	console_has "spx-image: metadata: no answer to the token request, using IMDSv1"
	console_has "spx-image: user-data already ran for $(cat "$F/imds/tree/latest/meta-data/instance-id")"
	[ "$(grep -c "spx-image: user-data ran" "$F/console.log")" -eq 1 ]
	[ "$(grep -c "^user-data marker" "$F/console.log")" -eq 1 ]
	run grep -c "^GET .* token=none$" "$F/imds/requests.log"
	[ "$output" -ge 4 ]
	run grep -c "token=valid" "$F/imds/requests.log"
	[ "$output" -eq 0 ]
}

@test "reboot: metadata unreachable: bounded retries, then boot carries on" {
	readies 2
	echo down >"$F/imds/mode"
	t0=$SECONDS
	run guest reboot
	wait_for 120 readies 3
	console_has "spx-image: metadata: IMDS unreachable at http://169.254.169.254 (no answer in 4 tries), carrying on without it"
	echo "# reboot with the metadata service unreachable: ready after $((SECONDS - t0)) s" >&3
	# The key installed at the first boot still logs in.
	run guest hostname
	[ "$status" -eq 0 ]
}

@test "QMP system_powerdown: a clean ACPI power-off, QEMU exits" {
	readies 3
	run qmp system_powerdown
	[ "$status" -eq 0 ]
	[ "$output" = '{"return": {}}' ]
	wait_for 30 test -e "$F/qemu.rc"
	[ "$(cat "$F/qemu.rc")" = 0 ]
	console_has "spx-image: power button pressed, powering off"
	[ "$(grep -c "spx-image: root filesystem read-only" "$F/console.log")" -eq 3 ]
	# Clean: nothing for the journal to replay, nothing for fsck to fix.
	p2=$(sfdisk -d "$DISK" | sed -n "s|^${DISK}2 : start= *\([0-9]*\),.*|\1|p")
	run dumpe2fs -h "$DISK?offset=$((p2 * 512))"
	echo "$output" | grep -q "^Filesystem state: *clean$"
	! echo "$output" | grep -q needs_recovery
	run e2fsck -fn "$DISK?offset=$((p2 * 512))"
	[ "$status" -eq 0 ]
}

@test "mkimage: a second build takes every package from the cache" {
	# An apt-get that fails on a download and says so.
	mkdir -p "$F/fakebin"
	cat >"$F/fakebin/apt-get" <<EOF
#!/bin/sh
case " \$* " in *" download "*) echo "\$*" >>"$F/downloads"; exit 1 ;; esac
exec /usr/bin/apt-get "\$@"
EOF
	chmod +x "$F/fakebin/apt-get"
	PATH=$F/fakebin:$PATH run "$SPX_TOP/scripts/mkimage.sh" "$F/again.img" --size 128M
	[ "$status" -eq 0 ]
	[ ! -e "$F/downloads" ]
	[ "$(echo "$output" | grep -c '^mkimage: .* (cached)$')" -eq 9 ]
	echo "$output" | grep -qx "size: 134217728"
	[ "$(stat -c %s "$F/again.img")" -eq 134217728 ]
}
