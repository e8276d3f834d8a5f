#!/usr/bin/env bash
# mkimage.sh: build spx's small test image, a BIOS-bootable raw disk, from
# Debian's packages only, offline once they are cached, without root and
# without mounting anything.
#
#   mkimage.sh OUT.img [--size SIZE] [--cache DIR] [--cloud-init]
#
# What is in it: Debian's cloud kernel (linux-image-cloud-amd64), a tiny
# initramfs, busybox-static (init, the shell, udhcpc, acpid, nc) and
# dropbear with exactly the shared libraries it needs. At boot the guest
# takes an address by DHCP, reads its instance metadata from
# http://169.254.169.254 (IMDSv2, then IMDSv1): hostname, root's SSH key,
# the user data, which it runs once per instance when it is a script; it
# starts an SSH server and powers off cleanly on the ACPI power button.
# Each step prints a "spx-image: ..." line on the serial console (ttyS0).
#
# The layout, all written into the image file with no loop device:
#   sector 0    syslinux's mbr.bin (boots the active partition) and an MBR
#               partition table written by sfdisk
#   vda1        FAT16, active: syslinux (its mtools installer works on a
#               file), syslinux.cfg, the kernel and the initramfs. FAT is
#               the one filesystem a boot loader can be installed on from
#               a plain file; made by mkfs.vfat as a file of its own (its
#               hidden-sectors field set to where it will sit), filled with
#               mcopy and spliced in with dd. It boots under UEFI as well:
#               \EFI\BOOT\BOOTX64.EFI is syslinux's EFI build, with the
#               same syslinux.cfg (so the image suits --boot-mode bios
#               and uefi)
#   vda2        ext4, the root filesystem, writable and persistent: made by
#               mkfs.ext4 -d from a staging directory into a file, spliced
#               in with dd (sparse)
# Why an initramfs: the cloud kernel builds ext4 in, but virtio-pci,
# virtio-blk, virtio-net, the ACPI button, evdev and pvpanic are modules (checked
# below from the package's config). The initramfs loads them in an order
# worked out here from each module's "depends", since the image has no
# depmod, then mounts root=/dev/vda2 and switches to it.
#
# Packages come from `apt-get download` (the host's apt sources) into the
# cache, ${SPX_IMAGE_CACHE:-/var/cache/spx/mkimage} or --cache; a package
# whose candidate version is already there is not downloaded again, and
# when apt cannot say (no lists, no network) the newest cached one is used.
# Nothing is installed on the host: packages are unpacked with dpkg-deb -x
# into a temporary directory. The host needs apt, dpkg, binutils (readelf),
# fdisk (sfdisk), dosfstools, mtools, syslinux, syslinux-common (mbr.bin,
# ldlinux.e64), syslinux-efi (syslinux.efi),
# e2fsprogs and gzip; scripts/deps.sh installs them.
#
# --cloud-init: the variant that boots with Debian's real cloud-init and
# OpenSSH in place of spx-imds, spx-userdata and dropbear. The same
# kernel, initramfs, layout and busybox; the root holds the closure of
# cloud-init, openssh-server and base-files as apt resolves it (see
# cloud_init_closure below: what it leaves out and why), and the files in
# image/cloud-init/ (cloud-init's configuration, sshd's, the rcS). Init
# stays busybox's: its rcS runs cloud-init's stages in the order of
# cloud-init's systemd units (init --local; the network by udhcpc; init;
# sshd; modules --mode config; modules --mode final), then prints
# "spx-image: ready". systemd would run the same stages, but it and the
# udev and journald it brings cost seconds more under TCG, where each
# cloud-init process already spends about 10 s importing, and the guest
# needs nothing else of them.
#
# stdout gets the result, one "key: value" a line (image, size, allocated,
# sha256, boot-mode, kernel); progress goes to stderr.
# Exit status: 0 built; 100 usage error; 111 the build failed.
set -eu
export LC_ALL=C
PATH=$PATH:/usr/sbin:/sbin

prog=mkimage.sh
here=$(cd "$(dirname "$0")" && pwd)
files=$here/image

usage() {
	cat <<EOF
usage: $prog OUT.img [--size SIZE] [--cache DIR] [--cloud-init]
  Build spx's BIOS-bootable test image (raw, sparse) into OUT.img.
  --size SIZE  size of the disk: N with K, M or G (default 256M, or 1G with
               --cloud-init; at least 64M)
  --cache DIR  where downloaded packages are kept
               (default \${SPX_IMAGE_CACHE:-/var/cache/spx/mkimage})
  --cloud-init the variant that boots with Debian's cloud-init and OpenSSH
               instead of the image's own metadata script and dropbear
EOF
}
usage_error() {
	echo "$prog: $*" >&2
	usage >&2
	exit 100
}
log() { echo "mkimage: $*" >&2; }
die() {
	echo "$prog: $*" >&2
	exit 111
}

out="" size="" variant=default cache=${SPX_IMAGE_CACHE:-/var/cache/spx/mkimage}
while [ $# -gt 0 ]; do
	case $1 in
	--size) [ $# -ge 2 ] || usage_error "--size needs a value"; size=$2; shift 2 ;;
	--size=*) size=${1#*=}; shift ;;
	--cache) [ $# -ge 2 ] || usage_error "--cache needs a value"; cache=$2; shift 2 ;;
	--cache=*) cache=${1#*=}; shift ;;
	--cloud-init) variant=cloud-init; shift ;;
	-h | --help) usage; exit 0 ;;
	--)
		shift
		if [ $# -ne 1 ] || [ -n "$out" ]; then usage_error "one output file"; fi
		out=$1
		shift ;;
	-*) usage_error "unknown option '$1'" ;;
	*) [ -z "$out" ] || usage_error "more than one output file: '$out' and '$1'"; out=$1; shift ;;
	esac
done
[ -n "$out" ] || usage_error "no output file"
[ -n "$cache" ] || usage_error "empty cache directory"
[ -d "$(dirname -- "$out")" ] || usage_error "no directory for '$out'"
if [ -z "$size" ]; then
	size=256M
	[ $variant = default ] || size=1G
fi

MiB=$((1024 * 1024))
case $size in
[0-9]*[KkMmGg] | [0-9]*)
	n=${size%[KkMmGg]}
	case $n in *[!0-9]* | "") usage_error "bad size '$size'" ;; esac
	[ ${#n} -le 9 ] || usage_error "size '$size' too large"
	n=$((10#$n))
	case $size in
	*[Kk]) bytes=$((n * 1024)) ;;
	*[Mm]) bytes=$((n * MiB)) ;;
	*[Gg]) bytes=$((n * 1024 * MiB)) ;;
	*) bytes=$n ;;
	esac ;;
*) usage_error "bad size '$size'" ;;
esac
# Whole MiB, so both partitions are MiB-aligned; the MBR addresses 2 TiB.
disk_mib=$(((bytes + MiB - 1) / MiB))
[ $disk_mib -ge 64 ] || usage_error "size '$size' too small: the image needs at least 64M"
[ $disk_mib -lt $((2 * 1024 * 1024)) ] || usage_error "size '$size' too large for an MBR disk (2T)"

tools="apt-get apt-cache dpkg dpkg-deb readelf sfdisk mkfs.vfat mcopy mmd syslinux
mkfs.ext4 gzip sha256sum dd truncate"
[ "$(id -u)" = 0 ] || tools="$tools debugfs"
for t in $tools; do
	command -v "$t" >/dev/null || die "needs $t (scripts/deps.sh installs it)"
done
mbr=""
for f in /usr/lib/syslinux/mbr/mbr.bin /usr/lib/SYSLINUX/mbr.bin /usr/share/syslinux/mbr.bin; do
	[ -f "$f" ] && { mbr=$f; break; }
done
[ -n "$mbr" ] || die "needs syslinux's mbr.bin (package syslinux-common)"
# UEFI: syslinux's EFI loader and its core module, on the same partition.
efi_loader=/usr/lib/SYSLINUX.EFI/efi64/syslinux.efi
efi_core=/usr/lib/syslinux/modules/efi64/ldlinux.e64
[ -f "$efi_loader" ] || die "needs $efi_loader (package syslinux-efi)"
[ -f "$efi_core" ] || die "needs $efi_core (package syslinux-common)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "builds an amd64 guest from this host's amd64 packages: run it on amd64"
[ -d "$files" ] || die "no guest files in $files"

t0=$SECONDS
T=$(mktemp -d "${TMPDIR:-/tmp}/spx-mkimage.XXXXXX")
tmp_out=""
cleanup() {
	rm -rf "$T"
	[ -z "$tmp_out" ] || rm -f "$tmp_out"
}
trap cleanup EXIT
trap 'exit 111' INT TERM HUP

mkdir -p "$cache" 2>/dev/null || die "cannot create the cache '$cache' (set SPX_IMAGE_CACHE or --cache)"
[ -w "$cache" ] || die "cannot write to the cache '$cache' (set SPX_IMAGE_CACHE or --cache)"

# fetch NAME: print the path of NAME's .deb in the cache, downloading it
# when the version apt would install is not there yet.
fetch() {
	local name=$1 ver f dl
	ver=${candidate[$name]:-}
	if [ -n "$ver" ] && [ "$ver" != "(none)" ]; then
		for f in "$cache/${name}_${ver//:/%3a}_"*.deb; do
			if [ -f "$f" ]; then
				log "$name $ver (cached)"
				echo "$f"
				return 0
			fi
		done
		log "$name $ver: downloading"
		dl=$(mktemp -d "$cache/.dl.XXXXXX")
		# As root, apt drops to _apt, which cannot write into a private
		# directory; the download is checked against the signed lists
		# either way.
		if (cd "$dl" && apt-get -q -o APT::Sandbox::User="$(id -un)" \
			download "$name=$ver" >/dev/null); then
			for f in "$dl"/*.deb; do
				[ -f "$f" ] || continue
				# The cache keeps one version of each package.
				find "$cache" -maxdepth 1 -name "${name}_*.deb" -delete
				mv -f "$f" "$cache/"
				rmdir "$dl"
				echo "$cache/${f##*/}"
				return 0
			done
		fi
		rm -rf "$dl"
		log "$name $ver: download failed"
	fi
	# apt knows no candidate (no lists) or the download failed: the
	# newest version in the cache, if any.
	f=$(ls -1 "$cache/${name}_"*.deb 2>/dev/null | sort -V | tail -n 1)
	[ -n "$f" ] || die "cannot get the package $name (apt-get download failed, nothing cached in $cache)"
	log "$name: using the cached ${f##*/}"
	echo "$f"
}

# What the cloud-init variant installs (base-files: /etc/os-release, read
# by lsb_release for cloud-init), and what it leaves out of the dependency
# closure: the packages only maintainer scripts use (nothing runs them
# here: packages are unpacked, never configured), and locales,
# whose locale-gen cloud-init is told not to run (locale: "false" in
# image/cloud-init/etc/cloud/cloud.cfg.d/90_spx.cfg; the guest keeps the C
# locale). busybox stands in for the Essential packages nothing depends
# on (the shell, coreutils, mount, ...). dpkg stays: cloud-init's
# apt-configure asks it the architecture.
CI_WANT="cloud-init openssh-server base-files"
CI_LEAVE_OUT="usrmerge perl-base debconf adduser ucf runit-helper
init-system-helpers lsb-base sensible-utils locales"

# cloud_init_closure: set GPKGS (and their candidate versions) to the
# closure of CI_WANT by apt's own resolver, run against a private dpkg
# status that holds only CI_LEAVE_OUT (as if installed, so apt takes their
# dependencies as met), without Recommends. The list is kept in the cache
# for a build with no package lists.
cloud_init_closure() {
	local saved=$cache/cloud-init.closure name ver
	apt-cache show --no-all-versions $CI_LEAVE_OUT 2>/dev/null | awk '
		/^(Package|Version|Architecture|Provides|Multi-Arch):/ { print }
		/^Package:/ { print "Status: install ok installed" }
		/^$/ { print }' >"$T/status"
	: >"$T/extended_states"
	if apt-get -s -q -o Dir::State::status="$T/status" \
		-o Dir::State::extended_states="$T/extended_states" \
		-o APT::Install-Recommends=false -o APT::Install-Suggests=false \
		install $CI_WANT >"$T/resolve" 2>&1; then
		sed -n 's/^Inst \([^ ]*\) \(\[[^]]*\] \)\{0,1\}(\([^ ]*\) .*/\1 \3/p' \
			"$T/resolve" >"$T/closure"
	else
		: >"$T/closure"
	fi
	if grep -q '^cloud-init ' "$T/closure"; then
		cp "$T/closure" "$saved.new" && mv -f "$saved.new" "$saved"
	elif [ -s "$saved" ]; then
		log "apt cannot resolve $CI_WANT; using the closure saved in $saved"
		cp "$saved" "$T/closure"
	else
		sed 's/^/  /' "$T/resolve" >&2
		die "apt cannot resolve $CI_WANT (apt-get update?)"
	fi
	while read -r name ver; do
		GPKGS="$GPKGS $name"
		candidate[$name]=$ver
	done <"$T/closure"
	log "cloud-init closure: $(wc -l <"$T/closure") packages, leaving out $(echo $CI_LEAVE_OUT)"
}

# cloud_init_root: what the packages' maintainer scripts would have done
# and the image's own files, on top of the unpacked closure in $R (the
# default image's files, copied into $R before, are shared: inittab, rcK,
# the power button, udhcpc's script).
cloud_init_root() {
	local py
	rm -f "$R/usr/sbin/spx-imds" "$R/usr/sbin/spx-userdata"
	cp -R --preserve=mode "$files/cloud-init/." "$R/"
	# openssh-server's postinst installs sshd_config with ucf.
	[ -f "$R/usr/share/openssh/sshd_config" ] ||
		die "openssh-server has no /usr/share/openssh/sshd_config"
	cp "$R/usr/share/openssh/sshd_config" "$R/etc/ssh/sshd_config"
	mkdir -p "$R/var/lib/cloud" "$R/var/log"
	# Documentation a guest never reads.
	rm -rf "$R/usr/share/doc" "$R/usr/share/man" "$R/usr/share/info" \
		"$R/usr/share/locale" "$R/usr/share/lintian"
	# Python's bytecode, made now with the guest's own interpreter (run
	# from the unpacked tree): otherwise the first boot compiles every
	# module cloud-init imports, which is slow under TCG.
	set -- "$R"/usr/bin/python3.[0-9]*
	py=$1
	[ -x "$py" ] && [ -x "$R/lib64/ld-linux-x86-64.so.2" ] ||
		die "no python3 in the cloud-init closure"
	PYTHONHOME=$R/usr "$R/lib64/ld-linux-x86-64.so.2" \
		--library-path "$R/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu" \
		"$py" -m compileall -q -j 2 -s "$R" -p / \
		"$R/usr/lib/python3" "$R/usr/lib/${py##*/}" >"$T/compileall" 2>&1 ||
		log "compileall: some modules did not compile (not used by cloud-init): $(grep -c '^\*\*\*' "$T/compileall")"
	log "cloud-init: $(cat "$R/usr/lib/python3/dist-packages/cloudinit/version.py" 2>/dev/null | sed -n 's/^__VERSION__ = "\(.*\)"$/\1/p') with ${py##*/}"
}

# The cloud kernel is a metapackage; the kernel itself is the package it
# depends on (linux-image-VERSION-cloud-amd64).
cloud_kernel() {
	apt-cache depends linux-image-cloud-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-cloud-amd64\)$/\1/p' | head -n 1
}
kpkg=$(cloud_kernel)
if [ -z "$kpkg" ] && [ "$(id -u)" = 0 ] &&
	! ls "$cache"/linux-image-[0-9]*-cloud-amd64_*.deb >/dev/null 2>&1; then
	# A host whose package lists were never fetched (or were cleaned).
	log "apt knows no linux-image-cloud-amd64: apt-get update"
	apt-get update -qq >&2 || log "apt-get update failed"
	kpkg=$(cloud_kernel)
fi
if [ -z "$kpkg" ]; then
	f=$(ls -1 "$cache"/linux-image-[0-9]*-cloud-amd64_*.deb 2>/dev/null | sort -V | tail -n 1)
	[ -n "$f" ] || die "apt knows no linux-image-cloud-amd64 and none is cached (apt-get update?)"
	kpkg=${f##*/}
	kpkg=${kpkg%%_*}
fi

declare -A candidate=()
R=$T/root
mkdir -p "$R"
GPKGS=""
if [ $variant = default ]; then
	PKGS="$kpkg busybox-static dropbear-bin libc6 zlib1g libcrypt1 libtomcrypt1 libtommath1 libgmp10"
else
	# The kernel and busybox (initramfs, init, the shell and the small
	# tools) as for the default image; the rest of the guest is
	# cloud-init's closure, unpacked straight into the root filesystem.
	PKGS="$kpkg busybox-static"
	cloud_init_closure
fi
# The version apt would install of each, in one call (each costs half a
# second).
while read -r name ver; do
	candidate[$name]=$ver
done < <(apt-cache policy $PKGS 2>/dev/null | awk '
	/^[^ ].*:$/ { name = substr($0, 1, length($0) - 1) }
	/^ *Candidate: / { print name, $2 }')
P=$T/pkg
mkdir -p "$P"
for p in $PKGS; do
	deb=$(fetch "$p")
	dpkg-deb -x "$deb" "$P" || die "cannot unpack $deb"
	# Versions for /etc/spx-image-release.
	echo "$p $(dpkg-deb -f "$deb" Version)" >>"$T/versions"
done
for p in $GPKGS; do
	deb=$(fetch "$p")
	dpkg-deb -x "$deb" "$R" || die "cannot unpack $deb"
	echo "$p $(dpkg-deb -f "$deb" Version)" >>"$T/versions"
done

# --- the kernel and the modules it needs -----------------------------------
set -- "$P"/boot/vmlinuz-*
[ $# -eq 1 ] && [ -f "$1" ] || die "the package $kpkg holds no single /boot/vmlinuz-*"
vmlinuz=$1
kver=${vmlinuz##*/vmlinuz-}
kconf=$P/boot/config-$kver
mods=$P/lib/modules/$kver
[ -f "$kconf" ] && [ -d "$mods" ] || die "the package $kpkg has no config or modules for $kver"

# Each thing the guest needs: built in (=y), or a module to load (=m).
load="" builtin=""
need() { # need CONFIG_X [module [optional]]
	local v
	v=$(sed -n "s/^$1=//p" "$kconf")
	case $v in
	y) builtin="$builtin ${1#CONFIG_}" ;;
	m) [ -n "${2:-}" ] || die "$kver: $1 is a module, the image needs it built in"
	   load="$load $2" ;;
	*) [ -n "${3:-}" ] || die "$kver: $1 is not set, the image needs it" ;;
	esac
}
need CONFIG_BLK_DEV_INITRD
need CONFIG_RD_GZIP
need CONFIG_DEVTMPFS
need CONFIG_SERIAL_8250_CONSOLE
need CONFIG_MSDOS_PARTITION
need CONFIG_UNIX
need CONFIG_PACKET
need CONFIG_EXT4_FS ext4
need CONFIG_VIRTIO_PCI virtio_pci
need CONFIG_VIRTIO_BLK virtio_blk
need CONFIG_VIRTIO_NET virtio_net
need CONFIG_ACPI_BUTTON button
need CONFIG_INPUT_EVDEV evdev
# A virtio-rng device, when the VM has one, seeds the kernel's random pool
# at once; without it (and without RDRAND, as in QEMU's default TCG CPU)
# the first boot's dropbearkey waits about 1.5 s for the pool.
need CONFIG_HW_RANDOM_VIRTIO virtio_rng optional
# pvpanic: a kernel panic tells QEMU, which stops the guest, and the
# cloud shows the instance stopped by a fault instead of running.
need CONFIG_PVPANIC_PCI pvpanic_pci optional

# modfile NAME: the .ko of module NAME (file names may use - for _),
# maybe compressed, as newer Debian kernels ship them.
find "$mods/kernel" -name '*.ko' -o -name '*.ko.xz' -o -name '*.ko.zst' -o -name '*.ko.gz' |
	awk '{ n = $0; sub(/.*\//, "", n); sub(/\.ko(\.(xz|zst|gz))?$/, "", n)
	       gsub(/-/, "_", n); print n, $0 }' >"$T/kos"
modfile() {
	awk -v m="$1" '$1 == m { print $2; found = 1; exit } END { exit !found }' "$T/kos"
}
# modget NAME DEST: module NAME, uncompressed (busybox insmod wants it so).
modget() {
	local f
	f=$(modfile "$1") || die "$kver: no module $1"
	case $f in
	*.ko) cp "$f" "$2" ;;
	*.xz) xz -dc "$f" >"$2" ;;
	*.zst) zstd -qdc "$f" >"$2" ;;
	*.gz) gzip -dc "$f" >"$2" ;;
	esac || die "cannot uncompress $f"
}
order=""
visit() { # visit NAME: NAME's dependencies first, then NAME
	local m=${1//-/_} f d
	case " $order " in *" $m "*) return 0 ;; esac
	if grep -q "/${m}\.ko\$" "$mods/modules.builtin" 2>/dev/null ||
		grep -q "/${m//_/-}\.ko\$" "$mods/modules.builtin" 2>/dev/null; then
		return 0
	fi
	modget "$m" "$T/mods/$m.ko"
	for d in $(readelf -p .modinfo "$T/mods/$m.ko" |
		sed -n 's/^ *\[ *[0-9a-f]*\] *depends=//p' | tr ',' ' '); do
		visit "$d"
	done
	order="$order $m"
}
mkdir -p "$T/mods"
for m in $load; do visit "$m"; done
log "kernel $kver: built in:$builtin; modules:$order"

# --- the initramfs ---------------------------------------------------------
bb=$P/bin/busybox
[ -x "$bb" ] || die "busybox-static has no /bin/busybox"
I=$T/initramfs
mkdir -p "$I/bin" "$I/dev" "$I/proc" "$I/newroot" "$I/lib/modules"
cp "$bb" "$I/bin/busybox"
for a in sh mount umount insmod cat usleep poweroff sync switch_root; do
	ln -s busybox "$I/bin/$a"
done
for m in $order; do
	cp "$T/mods/$m.ko" "$I/lib/modules/$m.ko"
	echo "$m" >>"$I/lib/modules/order"
done
: >>"$I/lib/modules/order"
cp "$files/init" "$I/init"
chmod 755 "$I/init"
(cd "$I" && find . | sort | "$bb" cpio -o -H newc 2>/dev/null) | gzip -9 -n >"$T/initrd.gz" ||
	die "cannot build the initramfs"

# --- the root filesystem ---------------------------------------------------
# $R holds the unpacked packages of the cloud-init variant already.
for d in bin sbin usr/bin usr/sbin lib lib64 etc/dropbear root dev proc sys \
	run tmp var/lib/spx-image var/log mnt; do
	mkdir -p "$R/$d"
done
chmod 700 "$R/root"
chmod 1777 "$R/tmp"
# Every applet as a link to /bin/busybox, by the path busybox names, then
# the binary itself: --list-full names bin/busybox too, and a link made
# there first would point the binary at itself.
"$bb" --list-full >"$T/applets"
while IFS= read -r a; do
	[ "${a##*/}" = busybox ] && continue
	# What a Debian package installed stays (the cloud-init variant).
	[ -e "$R/$a" ] || [ -L "$R/$a" ] && continue
	mkdir -p "$R/${a%/*}"
	ln -sf /bin/busybox "$R/$a"
done <"$T/applets"
rm -f "$R/bin/busybox"
cp "$bb" "$R/bin/busybox"
[ ! -L "$R/bin/busybox" ] || die "bin/busybox is a link"

cp -R --preserve=mode "$files/rootfs/." "$R/"

if [ $variant = default ]; then
	# dropbear and what it links: the ELF interpreter and each NEEDED library,
	# recursively, taken from the unpacked Debian packages, never the host.
	cp "$P/usr/sbin/dropbear" "$R/usr/sbin/dropbear"
	cp "$P/usr/bin/dropbearkey" "$R/usr/bin/dropbearkey"
	libdirs="lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu"
	libfile() { # libfile SONAME: the unpacked file, relative to $P
		local d
		for d in $libdirs; do
			[ -e "$P/$d/$1" ] && { echo "$d/$1"; return 0; }
		done
		return 1
	}
	copied=""
	copy_needs() { # copy_needs ELF: copy the libraries ELF needs into $R
		local lib rel
		for lib in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
			case " $copied " in *" $lib "*) continue ;; esac
			rel=$(libfile "$lib") ||
				die "$lib, needed by ${1##*/}, is in none of the packages: $PKGS"
			mkdir -p "$R/${rel%/*}"
			cp -L "$P/$rel" "$R/$rel"
			copied="$copied $lib"
			copy_needs "$R/$rel"
		done
	}
	for e in "$R/usr/sbin/dropbear" "$R/usr/bin/dropbearkey"; do
		copy_needs "$e"
	done
	interp=$(readelf -l "$R/usr/sbin/dropbear" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')
	[ -n "$interp" ] || die "dropbear has no ELF interpreter"
	rel=$(libfile "${interp##*/}") || die "no ${interp##*/} in libc6"
	mkdir -p "$R/${rel%/*}" "$R/${interp%/*}"
	cp -L "$P/$rel" "$R/$rel"
	[ "/$rel" = "$interp" ] || ln -sf "/$rel" "$R$interp"
	log "dropbear links:$copied (interpreter $interp)"
else
	cloud_init_root
fi

cat >"$R/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
EOF
cat >"$R/etc/group" <<'EOF'
root:x:0:
tty:x:5:
EOF
# No password: root logs in by SSH key only ('*', not '!': dropbear takes
# '!' for a locked account and refuses keys too).
echo 'root:*:19000:0:99999:7:::' >"$R/etc/shadow"
if [ $variant = cloud-init ]; then
	# OpenSSH's privilege separation user, as its postinst makes it.
	echo 'sshd:x:100:65534::/run/sshd:/usr/sbin/nologin' >>"$R/etc/passwd"
	echo 'nogroup:x:65534:' >>"$R/etc/group"
	echo 'sshd:*:19000:0:99999:7:::' >>"$R/etc/shadow"
fi
chmod 600 "$R/etc/shadow"
printf '/bin/sh\n/bin/ash\n' >"$R/etc/shells"
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n' >"$R/etc/nsswitch.conf"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$R/etc/hosts"
echo spx-image >"$R/etc/hostname"
echo '/dev/vda2 / ext4 rw 0 1' >"$R/etc/fstab"
cat >"$R/etc/profile" <<'EOF'
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
PS1='\h:\w\$ '
EOF
{
	echo "spx test image$([ $variant = default ] || echo " ($variant)"), built by scripts/mkimage.sh"
	echo "kernel $kver"
	cat "$T/versions"
} >"$R/etc/spx-image-release"

# --- the boot partition ----------------------------------------------------
cmdline="root=/dev/vda2 rw console=ttyS0,115200 quiet"
cat >"$T/syslinux.cfg" <<EOF
SERIAL 0 115200
DEFAULT spx
PROMPT 0
TIMEOUT 0
LABEL spx
  KERNEL /vmlinuz
  INITRD /initrd.gz
  APPEND $cmdline
EOF
payload=$(($(stat -c %s "$vmlinuz") + $(stat -c %s "$T/initrd.gz")))
boot_mib=$((payload * 5 / 4 / MiB + 2))
[ $boot_mib -ge 32 ] || boot_mib=32
boot_start=2048
boot_sectors=$((boot_mib * 2048))
root_start=$((boot_start + boot_sectors))
root_sectors=$((disk_mib * 2048 - root_start))
tree_mib=$(($(du -sk "$R" | cut -f1) / 1024 + 1))
[ $((root_sectors / 2048)) -ge $((tree_mib * 2 + 16)) ] ||
	usage_error "size '$size' too small: the root filesystem needs $((tree_mib * 2 + 16))M, so at least $((1 + boot_mib + tree_mib * 2 + 16))M"

export MTOOLS_SKIP_CHECK=1
mkfs.vfat -C -F 16 -n SPXBOOT -i 5350580a -h $boot_start "$T/boot.img" \
	$((boot_sectors / 2)) >/dev/null || die "mkfs.vfat failed"
mcopy -i "$T/boot.img" "$vmlinuz" ::/vmlinuz || die "mcopy failed"
mcopy -i "$T/boot.img" "$T/initrd.gz" ::/initrd.gz || die "mcopy failed"
mcopy -i "$T/boot.img" "$T/syslinux.cfg" ::/syslinux.cfg || die "mcopy failed"
syslinux --install "$T/boot.img" || die "syslinux failed"
# The same partition boots under UEFI too: firmware with no boot entry
# for the disk loads \EFI\BOOT\BOOTX64.EFI (the removable-media path)
# from it, syslinux's EFI build, which reads syslinux.cfg beside itself.
mmd -i "$T/boot.img" ::/EFI ::/EFI/BOOT || die "mmd failed"
mcopy -i "$T/boot.img" "$efi_loader" ::/EFI/BOOT/BOOTX64.EFI || die "mcopy failed"
mcopy -i "$T/boot.img" "$efi_core" ::/EFI/BOOT/ldlinux.e64 || die "mcopy failed"
mcopy -i "$T/boot.img" "$T/syslinux.cfg" ::/EFI/BOOT/syslinux.cfg || die "mcopy failed"

# --- the root partition ----------------------------------------------------
truncate -s $((root_sectors * 512)) "$T/root.img"
# lazy_itable_init and lazy_journal_init: the file is new and sparse, so
# its unwritten tables already read as zeros; writing them would only
# allocate space.
mkfs.ext4 -q -F -L spx-root -m 0 -E lazy_itable_init=1,lazy_journal_init=1 \
	-d "$R" "$T/root.img" || die "mkfs.ext4 failed"
if [ "$(id -u)" != 0 ]; then
	# Without root, mkfs.ext4 -d copies the builder's uid: give every
	# file to root.
	(cd "$R" && find . -mindepth 1) | sed 's|^\.||' |
		awk '{ print "sif \"" $0 "\" uid 0"; print "sif \"" $0 "\" gid 0" }' >"$T/chown"
	printf 'sif / uid 0\nsif / gid 0\n' >>"$T/chown"
	debugfs -w -f "$T/chown" "$T/root.img" >/dev/null 2>&1 || die "debugfs failed"
fi

# --- the disk --------------------------------------------------------------
tmp_out=$out.tmp.$$
rm -f "$tmp_out"
truncate -s $((disk_mib * MiB)) "$tmp_out"
sfdisk -q --no-reread --no-tell-kernel "$tmp_out" >/dev/null <<EOF || die "sfdisk failed"
label: dos
label-id: 0x5350580a
unit: sectors
start=$boot_start, size=$boot_sectors, type=e, bootable
start=$root_start, size=$root_sectors, type=83
EOF
dd if="$mbr" of="$tmp_out" bs=440 count=1 conv=notrunc status=none
dd if="$T/boot.img" of="$tmp_out" bs=4096 seek=$((boot_start / 8)) conv=notrunc,sparse status=none
dd if="$T/root.img" of="$tmp_out" bs=4096 seek=$((root_start / 8)) conv=notrunc,sparse status=none
mv -f "$tmp_out" "$out"
tmp_out=""

sum=$(sha256sum "$out" | cut -d' ' -f1)
alloc=$(($(stat -c %b "$out") * $(stat -c %B "$out")))
log "built $out in $((SECONDS - t0)) s: $disk_mib MiB, $((alloc / 1024)) KiB allocated"
cat <<EOF
image: $out
size: $((disk_mib * MiB))
allocated: $alloc
sha256: $sum
boot-mode: bios uefi
kernel: $kver
EOF
