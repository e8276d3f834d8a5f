/* spx-vm: guests under QEMU, driven over QMP. Each verb works on one
 * guest directory (lib/vm/vm.h) and QEMU's QMP socket in it, so a guest
 * started by one spx-vm is stopped, listed and inspected by another,
 * after any tool or the agent restarted. */
#include "spx.h"

#include "conf/conf.h"
#include "file.h"
#include "node/node.h"
#include "vm/qmp.h"
#include "vm/vm.h"
#include "vmcli.h"

#include <sys/file.h>

#define LOCK_WAIT_S 180
/* Connecting to the QMP socket of a QEMU that runs. */
#define QMP_CONNECT_MS 5000

int vmcli_open(const struct spx_args *a, struct vmcli *c)
{
	struct spx_node_loc loc;
	struct spx_conf conf;

	memset(c, 0, sizeof(*c));
	spx_node_locate(spx_arg(a, "root"), &loc);
	if (spx_conf_load(loc.conf, loc.root, &conf) < 0) {
		spx_node_loc_release(&loc);
		return vmcli_fail(a);
	}
	c->run = spx_strdup(conf.paths.run);
	c->vms = spx_path_join(conf.paths.run, "vm");
	c->uid_base = (uint32_t)spx_conf_self(&conf)->vm.uid_base;
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return 0;
}

void vmcli_close(struct vmcli *c)
{
	free(c->run);
	free(c->vms);
	memset(c, 0, sizeof(*c));
}

char *vmcli_dir(const struct spx_args *a, const struct vmcli *c,
		const char *name)
{
	if (!spx_vm_name_valid(name)) {
		spx_warn("%s: not a guest name: '%s' (a-z, 0-9 and '-', at "
			 "most %d)",
			 a->verb->name, name, SPX_VM_NAME_MAX);
		return NULL;
	}
	return spx_path_join(c->vms, name);
}

int vmcli_spec(const char *dir, struct spx_vm_spec *s)
{
	char *path = spx_path_join(dir, "spec.json");
	struct spx_buf b = SPX_BUF_INIT;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = spx_buf_read_file(&b, path, 1 << 16);
	if (rc == 0 && spx_vm_spec_parse(b.p, b.len, s) < 0)
		rc = spx_error_prefix("'%s'", path);
	spx_buf_release(&b);
	free(path);
	return rc;
}

int vmcli_lock(const char *dir)
{
	char *path = spx_path_join(dir, "lock");
	struct timespec nap = { 0, 50 * 1000000 };
	int fd = -1, i;

	if (!spx_exists(dir)) {
		free(path);
		return spx_error(SPX_NO, "no guest '%s'", strrchr(dir, '/') + 1);
	}
	/* Every holder is bounded (a stop at most its --timeout and 10 s);
	 * a waiter gives up after LOCK_WAIT_S rather than hang. */
	for (i = 0; i < LOCK_WAIT_S * 20; i++) {
		fd = spx_lock_path(path, LOCK_EX | LOCK_NB,
				   "another spx-vm is working on this guest");
		if (fd >= 0 || spx_errstatus() != SPX_NO)
			break;
		nanosleep(&nap, NULL);
	}
	free(path);
	return fd;
}

int guest_open(const struct spx_args *a, int flags, struct guest *g)
{
	char *sock;
	int rc;

	memset(g, 0, sizeof(*g));
	g->lock = -1;
	g->name = a->argv[0];
	if ((rc = vmcli_open(a, &g->c)))
		return rc;
	g->dir = vmcli_dir(a, &g->c, g->name);
	if (!g->dir)
		return SPX_USAGE;
	if ((flags & GUEST_LOCK) && (g->lock = vmcli_lock(g->dir)) < 0)
		return vmcli_fail(a);
	if ((flags & GUEST_RUNNING) && !spx_vm_pid(g->dir)) {
		spx_warn("%s: '%s' is not running", a->verb->name, g->name);
		return SPX_NO;
	}
	if ((flags & GUEST_QMP) == GUEST_QMP) {
		sock = spx_path_join(g->dir, "qmp.sock");
		rc = spx_qmp_connect(sock, QMP_CONNECT_MS, &g->q);
		free(sock);
		if (rc < 0)
			return vmcli_fail(a);
	}
	return 0;
}

void guest_close(struct guest *g)
{
	if (g->lock >= 0)
		close(g->lock);
	spx_qmp_close(g->q);
	free(g->dir);
	vmcli_close(&g->c);
	memset(g, 0, sizeof(*g));
	g->lock = -1;
}

int vmcli_fail(const struct spx_args *a)
{
	spx_warn("%s: %s", a->verb->name, spx_errmsg());
	return spx_errstatus();
}

static const struct spx_opt start_opts[] = {
	SPX_OPT_ROOT,
	{ "volume", 'v', "ID", "the root volume, booted from (required)" },
	{ "boot-mode", 'b', "MODE",
	  "bios (default: SeaBIOS) or uefi (OVMF, with a variable store of "
	  "the guest's own)" },
	{ "memory", 'm', "SIZE", "guest memory (default 256M)" },
	{ "cpus", 'c', "N", "virtual CPUs (default 1)" },
	{ "accel", 0, "ACCEL",
	  "auto (default: kvm where spx-vm probe has booted a guest under "
	  "it, else tcg), tcg or kvm" },
	{ "socket", 'S', "PATH",
	  "the volumes' NBD socket (default: RUN/vol.sock, spx-vol serve's)" },
	{ "ssh-port", 0, "PORT",
	  "forward 127.0.0.1:PORT to the guest's port 22" },
	{ "mac", 0, "MAC",
	  "the network interface's MAC address, unicast, as "
	  "02:00:5e:10:00:01 (default: QEMU's)" },
	{ "tap", 0, "NAME",
	  "put the NIC on the persistent tap NAME (spx-net tap) instead of "
	  "user networking; vhost-net where /dev/vhost-net opens" },
	{ "bridge", 0, "BRIDGE",
	  "with --tap: make the tap on BRIDGE first, as spx-net tap does, "
	  "unless it is there as asked" },
	{ "address", 0, "ADDRESS",
	  "with --bridge and --mac: the guest's IPv4 address there; its tap "
	  "lets in only frames from the MAC, and only ARP and IPv4 from "
	  "ADDRESS (spx-net tap's guard)" },
	{ "metadata", 0, "FILE",
	  "serve FILE (metadata.json, see spx-vm(8)) to the guest at "
	  "169.254.169.254 (on a tap: by spx-vm imds-server)" },
	{ "disks", 'd', "ID[,ID...]",
	  "data volumes to plug in as it starts, as attach does (8 at most)" },
	{ "timeout", 't', "SECONDS",
	  "give up (and kill QEMU) when it does not answer by then (30)" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};
static const struct spx_opt stop_opts[] = {
	SPX_OPT_ROOT,
	{ "timeout", 't', "SECONDS",
	  "how long the guest has to power off after the ACPI power button "
	  "before QEMU is told to quit, then killed (60)" },
	{ "force", 'f', NULL, "quit at once, without asking the guest" },
	{ 0 },
};
static const struct spx_opt root_opts[] = { SPX_OPT_ROOT, { 0 } };
static const struct spx_opt attach_opts[] = {
	SPX_OPT_ROOT,
	{ "socket", 'S', "PATH",
	  "the volume's NBD socket (default: the root volume's)" },
	{ 0 },
};
static const struct spx_opt detach_opts[] = {
	SPX_OPT_ROOT,
	{ "timeout", 't', "SECONDS",
	  "how long the guest has to let the disk go (30)" },
	{ 0 },
};
static const struct spx_opt json_opts[] = {
	SPX_OPT_ROOT,
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};

static const struct spx_opt imds_server_opts[] = {
	SPX_OPT_ROOT,
	{ "listen", 'l', "ADDR",
	  "the IPv4 address to answer on (169.254.169.254; it may come "
	  "onto its bridge later)" },
	{ "port", 'p', "PORT", "the port (80)" },
	{ 0 },
};

static const struct spx_opt probe_opts[] = {
	SPX_OPT_ROOT,
	{ "accel", 0, "ACCEL",
	  "kvm (default; the answer is kept for --accel auto) or tcg (only "
	  "told)" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};

static const struct spx_verb verbs[] = {
	{ "start", cmd_start, start_opts, "NAME",
	  "start a guest from a root volume; return once QEMU answers over "
	  "QMP",
	  1, 1 },
	{ "stop", cmd_stop, stop_opts, "NAME",
	  "press the guest's power button, wait, then quit QEMU, then kill "
	  "it; say which it took",
	  1, 1 },
	{ "kill", cmd_kill, root_opts, "NAME", "kill QEMU at once (SIGKILL)", 1,
	  1 },
	{ "reboot", cmd_reboot, root_opts, "NAME",
	  "reset the guest (QEMU keeps running)", 1, 1 },
	{ "ls", cmd_ls, json_opts, "",
	  "list the guests: NAME STATE PID ACCEL MEMORY CPUS VOLUME SSH", 0,
	  0 },
	{ "info", cmd_info, json_opts, "NAME",
	  "show one guest, with its directory and console log", 1, 1 },
	{ "console", cmd_console, root_opts, "NAME",
	  "write the guest's serial console log to stdout", 1, 1 },
	{ "attach", cmd_attach, attach_opts, "NAME VOLUME",
	  "hot-plug a volume into a running guest as a virtio disk", 2, 2 },
	{ "detach", cmd_detach, detach_opts, "NAME VOLUME",
	  "ask the guest to let a volume go, then unplug it", 2, 2 },
	{ "resize", cmd_resize, root_opts, "NAME VOLUME",
	  "give the running guest's disk of a volume the volume's size now "
	  "(after spx-vol resize); the guest is told",
	  2, 2 },
	{ "imds", cmd_imds, NULL, "DIR",
	  "answer one guest connection to the metadata service on stdin and "
	  "stdout from DIR/metadata.json (QEMU runs this)",
	  1, 1 },
	{ "imds-server", cmd_imds_server, imds_server_opts, "",
	  "answer the guests on taps at 169.254.169.254:80, each known by "
	  "the tap its connection came in from (runs until killed)",
	  0, 0 },
	{ "probe", cmd_probe, probe_opts, "",
	  "boot a tiny guest under KVM to learn whether guests can use it; "
	  "exit 0 when they can",
	  0, 0 },
	{ "qmp", cmd_qmp, root_opts, "NAME JSON",
	  "send one QMP command ({\"execute\": ...}) and print QEMU's answer",
	  2, 2 },
	{ 0 },
};

int main(int argc, char **argv)
{
	static const struct spx_tool tool = {
		"spx-vm",
		"spx-vm: guests under QEMU, driven over QMP.",
		verbs, NULL
	};

	return spx_cmd_main(&tool, argc, argv);
}
