/* vm.c: guest directories, QEMU's command line, its process (vm.h). */
#include "spx.h"

#include <jansson.h>
#include <signal.h>
#include <sys/stat.h>

#include "file.h"
#include "net/net.h"
#include "proc.h"
#include "vm/qmp.h"
#include "vm/vm.h"

bool spx_vm_name_valid(const char *name)
{
	size_t i, n = strlen(name);

	if (n == 0 || n > SPX_VM_NAME_MAX || name[0] == '-')
		return false;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-'))
			return false;
	}
	return true;
}

static bool uuid_valid(const char *u)
{
	size_t i;

	if (strlen(u) != 36)
		return false;
	for (i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? u[i] != '-' : !strchr("0123456789abcdef", u[i]))
			return false;
	}
	return true;
}

/* A path QEMU may be given inside an option value: absolute, and without
 * ',' (QEMU's option separator), a quote (guestfwd's command is split
 * as a shell would) or a control character. */
static bool path_ok(const char *p)
{
	if (p[0] != '/' || strlen(p) >= 4096)
		return false;
	for (; *p; p++)
		if (strchr(",'\"\\", *p) || (unsigned char)*p < 0x20)
			return false;
	return true;
}

bool spx_vm_mac_valid(const char *mac)
{
	if (strlen(mac) != 17 || !strchr("02468ace", mac[1]))
		return false;
	for (size_t i = 0; i < 17; i++)
		if (i % 3 == 2 ? mac[i] != ':'
			       : !strchr("0123456789abcdef", mac[i]))
			return false;
	return true;
}

json_t *spx_vm_spec_json(const struct spx_vm_spec *s)
{
	json_t *o = json_pack(
		"{s:s, s:i, s:i, s:s, s:s, s:s, s:i, s:s, s:b, s:s}", "name",
		s->name, "mem_mib", (json_int_t)s->mem_mib, "cpus",
		(json_int_t)s->cpus, "accel",
		s->accel == SPX_VM_KVM ? "kvm" : "tcg", "nbd_socket",
		s->nbd_socket, "root", s->root, "ssh_port",
		(json_int_t)s->ssh_port, "uuid", s->uuid, "imds", (int)s->imds,
		"boot", s->uefi ? "uefi" : "bios");

	if (o && *s->mac)
		json_object_set_new(o, "mac", json_string(s->mac));
	if (o && *s->tap) {
		json_object_set_new(o, "tap", json_string(s->tap));
		json_object_set_new(o, "vhost", json_boolean(s->vhost));
	}
	return o;
}

int spx_vm_spec_parse(const char *text, size_t len, struct spx_vm_spec *s)
{
	json_error_t je;
	json_t *o;
	const char *name, *accel, *sock, *root, *uuid, *boot = "bios";
	const char *mac = "", *tap = "";
	json_int_t mem, cpus, port;
	int imds, vhost = 0;

	memset(s, 0, sizeof(*s));
	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return spx_error(SPX_USAGE, "vm spec: %s", je.text);
	if (json_unpack_ex(o, &je, JSON_STRICT,
			   "{s:s, s:I, s:I, s:s, s:s, s:s, s:I, s:s, s:b, s?:s, "
			   "s?:s, s?:s, s?:b}",
			   "name", &name, "mem_mib", &mem, "cpus", &cpus,
			   "accel", &accel, "nbd_socket", &sock, "root", &root,
			   "ssh_port", &port, "uuid", &uuid, "imds", &imds,
			   "boot", &boot, "mac", &mac, "tap", &tap, "vhost",
			   &vhost) < 0) {
		json_decref(o);
		return spx_error(SPX_USAGE, "vm spec: %s", je.text);
	}
	if (!spx_vm_name_valid(name) || mem < SPX_VM_MEM_MIN ||
	    mem > SPX_VM_MEM_MAX || cpus < 1 || cpus > SPX_VM_CPUS_MAX ||
	    (strcmp(accel, "kvm") && strcmp(accel, "tcg")) ||
	    !path_ok(sock) || !spx_vm_name_valid(root) || port < 0 ||
	    port > 65535 || !uuid_valid(uuid) ||
	    (strcmp(boot, "bios") && strcmp(boot, "uefi")) ||
	    (*mac && !spx_vm_mac_valid(mac)) ||
	    (*tap && (!spx_net_name_valid(tap) || port))) {
		json_decref(o);
		return spx_error(SPX_USAGE, "vm spec: a value out of range");
	}
	memcpy(s->name, name, strlen(name) + 1);
	s->mem_mib = (unsigned)mem;
	s->cpus = (unsigned)cpus;
	s->accel = strcmp(accel, "kvm") == 0 ? SPX_VM_KVM : SPX_VM_TCG;
	s->nbd_socket = spx_strdup(sock);
	s->root = spx_strdup(root);
	s->ssh_port = (unsigned)port;
	memcpy(s->uuid, uuid, 37);
	memcpy(s->mac, mac, strlen(mac) + 1);
	s->imds = imds;
	memcpy(s->tap, tap, strlen(tap) + 1);
	s->vhost = *tap && vhost;
	s->uefi = strcmp(boot, "uefi") == 0;
	json_decref(o);
	return 0;
}

void spx_vm_spec_release(struct spx_vm_spec *s)
{
	free(s->nbd_socket);
	free(s->root);
	s->nbd_socket = s->root = NULL;
}

struct argv {
	char **v;
	size_t n, cap;
};

static void arg(struct argv *a, char *s) /* takes s */
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = spx_realloc(a->v, a->cap * sizeof(*a->v));
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static void args2(struct argv *a, const char *opt, char *val)
{
	arg(a, spx_strdup(opt));
	arg(a, val);
}

/* -blockdev with node (taken) in JSON. */
static void blockdev(struct argv *a, json_t *node)
{
	args2(a, "-blockdev", json_dumps(node, JSON_COMPACT));
	json_decref(node);
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

const char *spx_vm_ovmf_code(void)
{
	return env_or("SPX_OVMF_CODE", SPX_VM_OVMF_CODE);
}

const char *spx_vm_ovmf_vars(void)
{
	return env_or("SPX_OVMF_VARS", SPX_VM_OVMF_VARS);
}

json_t *spx_vm_nbd_node(const char *node, const char *sock, const char *vol)
{
	/* JSON, so that no value is parsed by QEMU's key=value syntax. When
	 * the server restarts, the guest's I/O waits (up to
	 * SPX_VM_NBD_RECONNECT_S) and is sent again once QEMU has
	 * reconnected: never an EIO. discard "unmap": the guest's TRIM
	 * goes to the volume as NBD_CMD_TRIM (a hole punched); QEMU's
	 * default, "ignore", acknowledges it and drops it. */
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:b, s:i, s:s}",
			 "driver", "nbd", "node-name", node, "server", "type",
			 "unix", "path", sock, "export", vol, "read-only", 0,
			 "reconnect-delay", SPX_VM_NBD_RECONNECT_S, "discard",
			 "unmap");
}

json_t *spx_vm_raw_node(const char *node, const char *file)
{
	/* discard as on the NBD node: each node drops TRIM unless told. */
	return json_pack("{s:s, s:s, s:s, s:s}", "driver", "raw", "node-name",
			 node, "file", file, "discard", "unmap");
}

void spx_vm_nbd_name(const char *vol, unsigned gen,
		     char out[SPX_VM_NODE_SIZE])
{
	snprintf(out, SPX_VM_NODE_SIZE, "n%u-%s", gen & 1, vol);
}

void spx_vm_serial(const char *vol, char out[SPX_VM_SERIAL_SIZE])
{
	size_t o = 0;

	for (; *vol && o + 1 < SPX_VM_SERIAL_SIZE; vol++)
		if (*vol != '-')
			out[o++] = *vol;
	out[o] = 0;
}

/* The user network's -netdev, for a guest without a tap: SSH forwarded
 * on loopback only, and the metadata address served by a spx-vm imds of
 * this guest's own for each connection (its identity is how it was
 * started, never what the guest says). QEMU forwards only an address
 * inside the user network, so the network is 169.254.169.0/24 (the
 * guest is .15, its gateway .2) and DNS sits where EC2 puts its
 * resolver. */
static char *user_net(const struct spx_vm_spec *s, const char *dir,
		      const char *prog)
{
	char *net = spx_strdup("user,id=n0,net=169.254.169.0/24,"
			       "dns=169.254.169.253"),
	     *js;

	if (s->ssh_port) {
		js = net;
		net = spx_xprintf("%s,hostfwd=tcp:127.0.0.1:%u-:22", js,
				  s->ssh_port);
		free(js);
	}
	if (s->imds) {
		js = net;
		net = spx_xprintf("%s,guestfwd=tcp:169.254.169.254:80-"
				  "cmd:'%s' imds '%s'",
				  js, prog, dir);
		free(js);
	}
	return net;
}

char **spx_vm_qemu_argv(const struct spx_vm_spec *s, const char *dir,
			const char *prog)
{
	const char *qemu = getenv("SPX_QEMU");
	struct argv a = { 0 };
	char *net;
	char serial[SPX_VM_SERIAL_SIZE], node[SPX_VM_NODE_SIZE];

	if (*s->tap && !spx_net_name_valid(s->tap)) {
		spx_error(SPX_USAGE, "not a tap name: '%s'", s->tap);
		return NULL;
	}
	if (!path_ok(dir) || (s->imds && (!prog || !path_ok(prog)))) {
		spx_error(SPX_USAGE,
			  "'%s' cannot be put on QEMU's command line", dir);
		return NULL;
	}
	if (s->uefi && !path_ok(spx_vm_ovmf_code())) {
		spx_error(SPX_USAGE,
			  "'%s' cannot be put on QEMU's command line",
			  spx_vm_ovmf_code());
		return NULL;
	}

	arg(&a, spx_strdup(qemu && *qemu ? qemu : "qemu-system-x86_64"));
	args2(&a, "-name", spx_xprintf("guest=%s,debug-threads=on", s->name));
	if (s->paused)
		arg(&a, spx_strdup("-S"));
	/* KVM only when asked: the caller probes it (vm.h); TCG's "max" CPU
	 * has every feature TCG can emulate. */
	args2(&a, "-machine",
	      spx_xprintf("q35,accel=%s",
			  s->accel == SPX_VM_KVM ? "kvm" : "tcg"));
	args2(&a, "-cpu", spx_strdup(s->accel == SPX_VM_KVM ? "host" : "max"));
	args2(&a, "-m", spx_xprintf("%u", s->mem_mib));
	args2(&a, "-smp", spx_xprintf("%u", s->cpus));
	arg(&a, spx_strdup("-nodefaults"));
	arg(&a, spx_strdup("-no-user-config"));
	args2(&a, "-display", spx_strdup("none"));
	/* A guest that powers itself off leaves QEMU running in the state
	 * "shutdown" (spx_vm_status) until it is told to quit: so the agent
	 * learns from QEMU, never from the console the guest writes, that
	 * the guest asked to stop, and not that QEMU died. */
	arg(&a, spx_strdup("-no-shutdown"));
	/* QEMU may not change its scheduling or use obsolete system calls.
	 * It may fork, exec and setsid: user networking's guestfwd does all
	 * three for each connection to the metadata service (a child killed
	 * by SIGSYS under elevateprivileges=deny was seen). Nor can
	 * elevateprivileges=deny or =children go with -runas: QEMU 7.2
	 * installs the filter before it drops privileges, and is killed by
	 * its own setgid (seen). The bound on a compromised QEMU is the user
	 * it runs as (runas.h). */
	args2(&a, "-sandbox",
	      spx_strdup("on,obsolete=deny,resourcecontrol=deny"));
	if (s->runas)
		args2(&a, "-runas",
		      spx_xprintf("%lu:%lu", (unsigned long)s->runas,
				  (unsigned long)s->runas));
	args2(&a, "-chardev",
	      spx_xprintf("socket,id=qmp,path=%s/qmp.sock,server=on,wait=off",
			  dir));
	args2(&a, "-mon", spx_strdup("chardev=qmp,mode=control"));
	args2(&a, "-chardev",
	      spx_xprintf("file,id=con,path=%s/console.log,append=on", dir));
	args2(&a, "-serial", spx_strdup("chardev:con"));
	args2(&a, "-pidfile", spx_xprintf("%s/qemu.pid", dir));
	/* UEFI: OVMF's code read-only, the guest's own variable store
	 * (its boot entries), kept in its directory across starts. */
	if (s->uefi) {
		args2(&a, "-drive",
		      spx_xprintf("if=pflash,format=raw,unit=0,readonly=on,"
				  "file=%s",
				  spx_vm_ovmf_code()));
		args2(&a, "-drive",
		      spx_xprintf("if=pflash,format=raw,unit=1,"
				  "file=%s/uefi-vars.fd",
				  dir));
	}
	/* SMBIOS as EC2 shows it: cloud-init takes a system uuid starting
	 * "ec2" that matches the serial number for EC2. */
	args2(&a, "-smbios",
	      spx_xprintf("type=1,manufacturer=Amazon EC2,product=spx,"
			  "serial=%s,uuid=%s",
			  s->uuid, s->uuid));
	args2(&a, "-object", spx_strdup("iothread,id=io0"));
	/* The root volume from the node's NBD server, under a raw node
	 * "root" (see spx_vm_raw_node). */
	spx_vm_nbd_name(s->root, 0, node);
	blockdev(&a, spx_vm_nbd_node(node, s->nbd_socket, s->root));
	blockdev(&a, spx_vm_raw_node("root", node));
	spx_vm_serial(s->root, serial);
	args2(&a, "-device",
	      spx_xprintf("virtio-blk-pci,drive=root,iothread=io0,bootindex=0,"
			  "id=root-disk,serial=%s",
			  serial));
	/* Empty PCIe root ports for the volumes attached later: q35's root
	 * bus takes no hot-plugged device. */
	for (unsigned i = 0; i < SPX_VM_HOTPLUG_SLOTS; i++)
		args2(&a, "-device",
		      spx_xprintf("pcie-root-port,id=hp%u,chassis=%u", i,
				  i + 1));
	if (*s->tap) {
		/* The guest on a bridge by its own tap, which QEMU opens
		 * before it drops to its user; vhost-net, where the host has
		 * it, moves the packets in the kernel. */
		net = spx_xprintf("tap,id=n0,ifname=%s,script=no,"
				  "downscript=no%s",
				  s->tap, s->vhost ? ",vhost=on" : "");
	} else {
		net = user_net(s, dir, prog);
	}
	args2(&a, "-netdev", net);
	args2(&a, "-device",
	      *s->mac ? spx_xprintf("virtio-net-pci,netdev=n0,mac=%s", s->mac)
		      : spx_strdup("virtio-net-pci,netdev=n0"));
	/* Entropy from the host: TCG's CPU has no RDRAND, and a first boot
	 * making SSH host keys would wait for the pool. */
	args2(&a, "-object", spx_strdup("rng-random,id=rng0,filename=/dev/urandom"));
	args2(&a, "-device", spx_strdup("virtio-rng-pci,rng=rng0"));
	/* A guest kernel that panics tells QEMU through pvpanic (Linux's
	 * pvpanic-pci driver, which udev loads for the device), and QEMU
	 * keeps it stopped in "guest-panicked" for the agent to see. Without
	 * the device such a guest hangs where it fell and its record says
	 * running. QEMU's default action (shutdown) leaves the same state
	 * only because of -no-shutdown; without it QEMU would exit, so the
	 * pause is asked for outright. Last on the bus, so that no other
	 * device moves. */
	args2(&a, "-device", spx_strdup("pvpanic-pci"));
	args2(&a, "-action", spx_strdup("panic=pause"));
	return a.v;
}

void spx_vm_argv_free(char **argv)
{
	char **p;

	if (!argv)
		return;
	for (p = argv; *p; p++)
		free(*p);
	free(argv);
}

/* Read at most size - 1 bytes of path into buf, NUL-terminated; the
 * length, or -1. Records no error: a missing file is an answer here. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n = 0;

	if (fd < 0)
		return -1;
	while (len < size - 1 &&
	       (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (n < 0)
		return -1;
	buf[len] = 0;
	return (ssize_t)len;
}

pid_t spx_vm_pid(const char *dir)
{
	char *path = spx_path_join(dir, "qemu.pid");
	char *want = spx_xprintf("path=%s/qmp.sock,", dir);
	char small[32];
	char *cmdline = NULL;
	ssize_t len;
	pid_t pid = 0;
	char *end;
	long v;

	if (read_small(path, small, sizeof(small)) <= 0)
		goto out;
	errno = 0;
	v = strtol(small, &end, 10);
	if (errno || end == small || (*end && *end != '\n') || v <= 1 ||
	    v > INT_MAX)
		goto out;
	/* Its command line names this directory's QMP socket: QEMU for this
	 * guest, not whatever has the pid since. */
	free(path);
	path = spx_xprintf("/proc/%ld/cmdline", v);
	cmdline = spx_malloc(1 << 16);
	len = read_small(path, cmdline, 1 << 16);
	for (ssize_t off = 0; off < len;
	     off += (ssize_t)strlen(cmdline + off) + 1) {
		if (strstr(cmdline + off, want)) {
			pid = (pid_t)v;
			break;
		}
	}
out:
	free(cmdline);
	free(path);
	free(want);
	return pid;
}

int spx_vm_console_trim(const char *dir)
{
	char *path = spx_path_join(dir, "console.log");
	char *old = spx_path_join(dir, "console.log.1");
	int fd = -1, ofd = -1, rc = -1;
	struct stat st;
	off_t cut, off = 0;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ENOENT ? 0 : spx_error_errno(SPX_FAIL,
							   "cannot open '%s'",
							   path);
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		spx_error_errno(SPX_FAIL, "cannot stat '%s'", path);
		goto out;
	}
	if ((uint64_t)st.st_size <= SPX_VM_CONSOLE_MAX) {
		rc = 0;
		goto out;
	}
	/* Whole blocks off the front, in place: QEMU appends (O_APPEND), so
	 * it writes on at the new end and nothing it writes is lost. */
	cut = (st.st_size - SPX_VM_CONSOLE_KEEP) / st.st_blksize * st.st_blksize;
	ofd = open(old, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (ofd < 0) {
		spx_error_errno(SPX_FAIL, "cannot open '%s'", old);
		goto out;
	}
	while (off < cut) {
		ssize_t n = copy_file_range(fd, &off, ofd, NULL,
					    (size_t)(cut - off), 0);

		if (n <= 0) {
			spx_error_errno(SPX_FAIL, "cannot copy to '%s'", old);
			goto out;
		}
	}
	if (fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, cut) == 0) {
		rc = 0;
		goto out;
	}
	if (errno != EOPNOTSUPP && errno != EINVAL) {
		spx_error_errno(SPX_FAIL, "cannot cut '%s'", path);
		goto out;
	}
	/* A file system without it (tmpfs): copy the tail to the front and
	 * cut the file there. What QEMU appends meanwhile can be lost; the
	 * console is a log, not data. */
	{
		char *buf = spx_malloc(SPX_VM_CONSOLE_KEEP);
		off_t from = st.st_size - SPX_VM_CONSOLE_KEEP;
		ssize_t n = pread(fd, buf, SPX_VM_CONSOLE_KEEP, from);

		if (n < 0 || ftruncate(fd, 0) < 0 ||
		    pwrite(fd, buf, (size_t)n, 0) != n) {
			spx_error_errno(SPX_FAIL, "cannot cut '%s'", path);
			free(buf);
			goto out;
		}
		free(buf);
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (ofd >= 0)
		close(ofd);
	free(path);
	free(old);
	return rc;
}

int spx_vm_status_of(struct spx_qmp *q, int timeout_ms,
		     char out[SPX_VM_STATUS_SIZE])
{
	json_t *r = NULL;
	const char *st;
	int rc = -1;

	if (spx_qmp_exec(q, "query-status", NULL, timeout_ms, &r) < 0)
		return -1;
	st = json_string_value(json_object_get(r, "status"));
	if (!st || !*st || strlen(st) >= SPX_VM_STATUS_SIZE) {
		spx_error(SPX_FAIL, "QEMU's query-status has no status");
	} else {
		memcpy(out, st, strlen(st) + 1);
		rc = 0;
	}
	json_decref(r);
	return rc;
}

int spx_vm_status(const char *dir, int timeout_ms,
		  char out[SPX_VM_STATUS_SIZE])
{
	char *sock = spx_path_join(dir, "qmp.sock");
	long long end = spx_mono_ms() + timeout_ms;
	struct spx_qmp *q = NULL;
	int rc = -1;

	if (spx_qmp_connect(sock, timeout_ms, &q) == 0)
		rc = spx_vm_status_of(q,
				      (int)(end > spx_mono_ms()
						    ? end - spx_mono_ms()
						    : 1),
				      out);
	spx_qmp_close(q);
	free(sock);
	return rc;
}
