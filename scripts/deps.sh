#!/bin/sh
# Install every Debian package spx needs to build, run and test.
# Idempotent: packages already present are not touched, and apt is not even
# consulted when nothing is missing. Run as root (or with sudo on PATH).
set -eu

# Build: compiler, pkg-config and the libraries linked by lib/.
BUILD="build-essential pkg-config libssl-dev libjansson-dev libexpat1-dev
libmicrohttpd-dev libcurl4-openssl-dev libisal-dev libnbd-dev nbdkit-plugin-dev
liburing-dev libnl-3-dev libnl-route-3-dev libnftables-dev
openssl ca-certificates"
# Fuzzing and sanitizers (make fuzz, make asan).
FUZZ="clang libclang-rt-14-dev"
# Tests: bats, the real clients (aws v2, boto3, node for the npm SDK v3),
# valgrind for the leak check of the unit tests; ssh-keygen (openssh-client)
# and puttygen (putty-tools) read the key pairs test_keypair makes; nbdinfo
# (libnbd-bin) asks the volume server what it exports (vol.bats); ip
# (iproute2) makes the network namespaces the network tests run in,
# dnsmasq (dnsmasq-base) answers DHCP for guests on a tap (net.bats), nft
# (nftables) shows the rules spx-net made (net.bats),
# and strace counts the syncs of a small PUT (s3-drives.bats).
TEST="bats awscli python3-boto3 nodejs valgrind curl procps groff-base
openssh-client putty-tools libnbd-bin iproute2 dnsmasq-base nftables strace"
# Third-party S3 harnesses (tests/clients/s3-tools.bats, minio-go.bats): the
# tools, and Go with minio-go's sources for its functional suite, built
# offline from /usr/share/gocode.
HARNESS="rclone s3cmd golang-go golang-github-minio-minio-go-v7-dev"
# Benchmarks (spx-bench): the load generators, the plotter, and nginx, the
# GET limit spx-bench s3 measures the gateway against (it runs a private
# nginx on loopback; the system service is left stopped, see below).
BENCH="sysbench fio gnuplot-nox nginx"
# Guests (spx-vm, scripts/mkimage.sh, tests/bats/vm*.bats, mkimage.bats): QEMU and
# its image tools; the test image is built without root or mounts from
# Debian packages apt-get download fetches (apt, dpkg), unpacked and
# inspected with dpkg-deb and readelf (binutils), partitioned by sfdisk
# (fdisk), its boot partition made by mkfs.vfat (dosfstools), filled by
# mtools and made bootable by syslinux (mbr.bin from syslinux-common), its
# root by mkfs.ext4 (e2fsprogs); the tests' metadata stand-in is Debian's
# python3. mkimage.sh --cloud-init (cloud-init.bats) needs nothing more: apt
# resolves its packages and the guest's own python3 compiles them. UEFI
# guests boot OVMF (ovmf); the test image boots under it too, by
# syslinux's EFI build (syslinux-efi).
IMAGE="qemu-system-x86 qemu-utils syslinux syslinux-common mtools dosfstools
fdisk e2fsprogs binutils gzip python3 ovmf syslinux-efi"

want=""
for p in $BUILD $FUZZ $TEST $HARNESS $BENCH $IMAGE; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		want="$want $p"
	fi
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

if [ -n "$want" ]; then
	echo "deps.sh: installing:$want" >&2
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
		--no-install-recommends $want >&2
fi

# Debian starts nginx on port 80 when it installs it: spx-bench only needs
# the binary, so a service started by this install is stopped again.
case " $want " in
*" nginx "*)
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		$SUDO systemctl disable --now nginx >/dev/null 2>&1 || true
	elif [ -x /etc/init.d/nginx ]; then
		$SUDO /etc/init.d/nginx stop >/dev/null 2>&1 || true
	fi ;;
esac

# Some nodejs builds ship npm themselves and conflict with Debian's npm.
if ! command -v npm >/dev/null 2>&1; then
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
		--no-install-recommends npm >&2
fi

# The npm AWS SDK v3 clients used by the real-client tests, pinned by
# tests/clients/package-lock.json and installed into the tree, not globally.
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$top/tests/clients/package.json" ] &&
   [ ! -d "$top/tests/clients/node_modules/@aws-sdk/client-sts" ]; then
	echo "deps.sh: installing the npm AWS SDK v3 clients" >&2
	(cd "$top/tests/clients" && npm ci --no-audit --no-fund --silent >&2 ||
	 npm install --no-audit --no-fund --silent >&2)
fi
exit 0
