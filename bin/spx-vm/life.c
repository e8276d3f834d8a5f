/* spx-vm start | stop | kill | reboot: a guest's life, each step with a
 * deadline. */
#include "spx.h"

#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "file.h"
#include "id.h"
#include "net/net.h"
#include "size.h"
#include "proc.h"
#include "vm/imds.h"
#include "vm/qmp.h"
#include "vm/runas.h"
#include "vm/vm.h"
#include "vol/grant.h"
#include "vmcli.h"

#define QMP_MS 2000 /* one QMP exchange with a live QEMU */

static void nap(void)
{
	struct timespec ts = { 0, 50 * 1000000 };

	nanosleep(&ts, NULL);
}

/* Wait at most ms until QEMU no longer runs for dir or, when off is
 * set, until its guest is powered off (QEMU, which runs with
 * -no-shutdown, says "shutdown"). */
static bool ended_within(const char *dir, bool off, long long ms)
{
	long long end = spx_mono_ms() + ms;
	char st[SPX_VM_STATUS_SIZE];

	for (;;) {
		if (!spx_vm_pid(dir))
			return true;
		if (off && spx_vm_status(dir, QMP_MS, st) == 0 &&
		    !strcmp(st, "shutdown"))
			return true;
		spx_error_clear();
		if (spx_mono_ms() >= end)
			return false;
		nap();
	}
}

/* What a dead QEMU leaves behind (QEMU removes its pid file itself when
 * it exits cleanly, not when killed). */
static void tidy(const char *dir)
{
	char *p = spx_path_join(dir, "qmp.sock");

	unlink(p);
	free(p);
	p = spx_path_join(dir, "qemu.pid");
	unlink(p);
	free(p);
}

static int kill_now(const char *dir)
{
	pid_t pid = spx_vm_pid(dir);

	if (pid && kill(pid, SIGKILL) < 0 && errno != ESRCH)
		return spx_error_errno(SPX_FAIL, "cannot kill QEMU (pid %d)",
				       (int)pid);
	if (!ended_within(dir, false, 5000))
		return spx_error(SPX_FAIL, "QEMU (pid %d) outlived SIGKILL",
				 (int)pid);
	tidy(dir);
	return spx_vm_user_release(dir);
}

static void new_uuid(char out[37])
{
	unsigned char r[16];
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	if (spx_random(r, sizeof(r)) < 0)
		memset(r, 0, sizeof(r));
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[r[i] >> 4];
		out[o++] = hex[r[i] & 15];
	}
	out[o] = 0;
	memcpy(out, "ec2", 3);
}

static int spec_from_args(const struct spx_args *a, const struct vmcli *c,
			  const char *name, struct spx_vm_spec *s,
			  struct spx_net_guard *guard)
{
	const char *mem = spx_arg(a, "memory"), *accel = spx_arg(a, "accel");
	const char *vol = spx_arg(a, "volume"), *sock = spx_arg(a, "socket");
	const char *boot = spx_arg(a, "boot-mode");
	uint64_t bytes = 256ull << 20;
	long long cpus, port;

	memset(s, 0, sizeof(*s));
	memcpy(s->name, name, strlen(name) + 1);
	if (mem && spx_parse_size(mem, &bytes) < 0)
		return -1;
	if (bytes % (1 << 20) || bytes < (uint64_t)SPX_VM_MEM_MIN << 20 ||
	    bytes > (uint64_t)SPX_VM_MEM_MAX << 20)
		return spx_error(SPX_USAGE,
				 "--memory: whole MiB from %uM to %uM",
				 SPX_VM_MEM_MIN, SPX_VM_MEM_MAX);
	s->mem_mib = (unsigned)(bytes >> 20);
	if (spx_arg_int(a, "cpus", 1, SPX_VM_CPUS_MAX, 1, &cpus) < 0 ||
	    spx_arg_int(a, "ssh-port", 1, 65535, 0, &port) < 0)
		return -1;
	s->cpus = (unsigned)cpus;
	s->ssh_port = (unsigned)port;
	if (!accel || strcmp(accel, "auto") == 0) {
		if (vm_accel_auto(c, &s->accel) < 0)
			return -1;
	} else if (strcmp(accel, "tcg") == 0) {
		s->accel = SPX_VM_TCG;
	} else if (strcmp(accel, "kvm") == 0) {
		s->accel = SPX_VM_KVM;
	} else {
		return spx_error(SPX_USAGE,
				 "--accel: auto, tcg or kvm, not '%s'", accel);
	}
	if (boot && strcmp(boot, "bios") && strcmp(boot, "uefi"))
		return spx_error(SPX_USAGE, "--boot-mode: bios or uefi, not '%s'",
				 boot);
	s->uefi = boot && !strcmp(boot, "uefi");
	if (!vol)
		return spx_error(SPX_USAGE, "--volume is required");
	if (!spx_vm_name_valid(vol))
		return spx_error(SPX_USAGE, "--volume: not a volume id: '%s'",
				 vol);
	if (spx_arg(a, "mac")) {
		if (!spx_vm_mac_valid(spx_arg(a, "mac")))
			return spx_error(SPX_USAGE,
					 "--mac: a unicast MAC address in lower "
					 "case, as 02:00:5e:10:00:01, not '%s'",
					 spx_arg(a, "mac"));
		memcpy(s->mac, spx_arg(a, "mac"), 18);
	}
	if (spx_arg(a, "tap")) {
		const char *tap = spx_arg(a, "tap");

		if (!spx_net_name_valid(tap))
			return spx_error(SPX_USAGE,
					 "--tap: not an interface name: '%s'",
					 tap);
		if (port)
			return spx_error(SPX_USAGE,
					 "--tap: --ssh-port is for user "
					 "networking; on a tap the guest has an "
					 "address of its own");
		memcpy(s->tap, tap, strlen(tap) + 1);
		if (spx_arg(a, "bridge") &&
		    !spx_net_name_valid(spx_arg(a, "bridge")))
			return spx_error(SPX_USAGE,
					 "--bridge: not an interface name: "
					 "'%s'",
					 spx_arg(a, "bridge"));
		/* As root QEMU opens it before it drops to its user. */
		s->vhost = access("/dev/vhost-net", R_OK | W_OK) == 0;
	}
	if (spx_arg(a, "bridge") && !spx_arg(a, "tap"))
		return spx_error(SPX_USAGE, "--bridge: is for --tap");
	if (spx_arg(a, "address") &&
	    (!spx_arg(a, "bridge") || !spx_arg(a, "mac")))
		return spx_error(SPX_USAGE,
				 "--address: is for --bridge, with --mac");
	if (spx_arg(a, "address") &&
	    spx_net_guard_parse(spx_arg(a, "mac"), spx_arg(a, "address"),
				guard) < 0)
		return spx_error_prefix("--address");
	s->root = spx_strdup(vol);
	s->nbd_socket = sock ? spx_path_abs(sock)
			     : spx_path_join(c->run, "vol.sock");
	new_uuid(s->uuid);
	return 0;
}

/* --metadata FILE: checked, then written to DIR/metadata.json with a
 * new token key, DIR/imds.key (tokens of an earlier run are void). */
static int put_metadata(const struct spx_args *a, const char *dir,
			struct spx_vm_spec *s)
{
	const char *file = spx_arg(a, "metadata");
	struct spx_buf b = SPX_BUF_INIT;
	unsigned char key[SPX_IMDS_KEY_LEN];
	struct spx_imds *md = NULL;
	char *path = NULL;
	int rc = -1;

	if (!file)
		return 0;
	if (spx_buf_read_file(&b, file, SPX_IMDS_MD_MAX) < 0 ||
	    spx_imds_load(b.p, b.len, &md) < 0 ||
	    spx_random(key, sizeof(key)) < 0)
		goto out;
	path = spx_path_join(dir, "metadata.json");
	if (spx_write_file(path, b.p, b.len, 0600, false) < 0)
		goto out;
	free(path);
	path = spx_path_join(dir, "imds.key");
	if (spx_write_file(path, key, sizeof(key), 0600, false) < 0)
		goto out;
	s->imds = true;
	rc = 0;
out:
	spx_imds_free(md);
	spx_buf_release(&b);
	free(path);
	return rc;
}

/* A UEFI guest's variable store, DIR/uefi-vars.fd: OVMF's template
 * copied at its first start, then kept (its boot entries live there). */
#define UEFI_VARS_MAX (64 << 20)
static int uefi_vars(const struct spx_vm_spec *s, const char *dir)
{
	char *path = spx_path_join(dir, "uefi-vars.fd");
	struct spx_buf b = SPX_BUF_INIT;
	struct stat sb;
	int rc = 0;

	if (s->uefi && stat(path, &sb) < 0) {
		rc = spx_buf_read_file(&b, spx_vm_ovmf_vars(), UEFI_VARS_MAX);
		if (rc < 0) {
			char why[512];

			snprintf(why, sizeof(why), "%s", spx_errmsg());
			rc = spx_error(SPX_FAIL, "UEFI needs OVMF (Debian's "
						 "ovmf): %s", why);
		} else {
			rc = spx_write_file(path, b.p, b.len, 0600, false);
		}
	}
	spx_buf_release(&b);
	free(path);
	return rc;
}

/* Start QEMU in a session of its own (so that it outlives this tool and
 * whoever ran it), its output into qemu.log. */
static pid_t spawn_qemu(char **argv, const char *dir)
{
	char *log = spx_path_join(dir, "qemu.log");
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t pid;
	int err;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log,
					 O_WRONLY | O_CREAT | O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID |
					      POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	err = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(log);
	if (err) {
		errno = err;
		return spx_error_errno(SPX_FAIL, "cannot run '%s'", argv[0]);
	}
	return pid;
}

/* The last line QEMU wrote to qemu.log: why it stopped. */
static void qemu_said(const char *dir)
{
	char *log = spx_path_join(dir, "qemu.log");
	struct spx_buf b = SPX_BUF_INIT;
	char *last;

	if (spx_buf_read_file(&b, log, 1 << 20) == 0) {
		while (b.len && b.p[b.len - 1] == '\n')
			b.p[--b.len] = 0;
		last = strrchr(b.p, '\n');
		last = last ? last + 1 : b.p;
		if (*last)
			spx_error_prefix("%s", last);
	}
	spx_buf_release(&b);
	free(log);
}

/* Run QEMU and wait until it answers over QMP (its devices are up, the
 * root volume's NBD connection made), all by deadline. */
static int launch(const struct spx_vm_spec *s, const char *dir,
		  long long deadline)
{
	char *self = spx_self_dir();
	char *prog = self ? spx_path_join(self, "spx-vm") : NULL;
	char **argv = spx_vm_qemu_argv(s, dir, prog);
	char *sock = spx_path_join(dir, "qmp.sock");
	struct spx_qmp *q = NULL;
	char st[SPX_VM_STATUS_SIZE];
	pid_t pid = -1;
	int status, rc = -1;

	free(self);
	free(prog);
	if (!argv)
		goto out;
	pid = spawn_qemu(argv, dir);
	if (pid < 0)
		goto out;
	for (;;) {
		long long left = deadline - spx_mono_ms();

		if (waitpid(pid, &status, WNOHANG) == pid) {
			if (WIFSIGNALED(status))
				spx_error(SPX_FAIL,
					  "QEMU was killed by signal %d",
					  WTERMSIG(status));
			else
				spx_error(SPX_FAIL, "QEMU exited with %d",
					  WEXITSTATUS(status));
			qemu_said(dir);
			goto fail;
		}
		if (left <= 0) {
			spx_error(SPX_FAIL, "QEMU did not answer in time");
			goto fail;
		}
		if (spx_qmp_connect(sock, left < 500 ? (int)left : 500, &q) ==
		    0)
			break;
		nap();
	}
	if (spx_vm_status_of(q, QMP_MS, st) < 0)
		goto fail;
	rc = 0;
	goto out;
fail:
	spx_error_prefix("'%s'", s->name);
	if (pid > 0 && kill(pid, SIGKILL) == 0)
		waitpid(pid, &status, 0);
	tidy(dir);
out:
	spx_qmp_close(q);
	spx_vm_argv_free(argv);
	free(sock);
	return rc;
}

/* --disks: the volume ids, checked (well-formed, not the root, none
 * twice, SPX_VM_HOTPLUG_SLOTS at most); a NULL-ended array to free with
 * spx_vm_argv_free, or NULL with a usage error. */
static char **disks_of(const struct spx_args *a, const char *root)
{
	const char *list = spx_arg(a, "disks");
	char **v = spx_calloc(SPX_VM_HOTPLUG_SLOTS + 1, sizeof(char *));
	size_t n = 0;

	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ",");
		char id[SPX_VM_NAME_MAX + 1];

		if (n == SPX_VM_HOTPLUG_SLOTS) {
			spx_error(SPX_USAGE, "--disks: %d at most",
				  SPX_VM_HOTPLUG_SLOTS);
			goto bad;
		}
		snprintf(id, sizeof(id), "%.*s",
			 (int)(len < sizeof(id) ? len : sizeof(id) - 1), p);
		if (len >= sizeof(id) || !spx_vm_name_valid(id) ||
		    !strcmp(id, root)) {
			spx_error(SPX_USAGE, "--disks: not a data volume: '%.*s'",
				  (int)(len < 64 ? len : 64), p);
			goto bad;
		}
		for (size_t i = 0; i < n; i++)
			if (!strcmp(v[i], id)) {
				spx_error(SPX_USAGE, "--disks: '%s' twice", id);
				goto bad;
			}
		v[n++] = spx_strdup(id);
		p += len;
		if (*p == ',' && *++p == 0) {
			spx_error(SPX_USAGE, "--disks: an empty id");
			goto bad;
		}
	}
	return v;
bad:
	spx_vm_argv_free(v);
	return NULL;
}

/* Plug the disks into the guest that has just started in dir. */
static int plug_disks(const struct spx_vm_spec *s, const char *dir,
		      char **disks)
{
	char *sock = spx_path_join(dir, "qmp.sock");
	struct spx_qmp *q = NULL;
	bool already;
	int rc = 0;

	if (!disks[0])
		goto out;
	rc = spx_qmp_connect(sock, QMP_MS, &q);
	for (size_t i = 0; rc == 0 && disks[i]; i++)
		if ((rc = vm_plug(q, s->nbd_socket, disks[i], &already)) < 0)
			spx_error_prefix("'%s'", disks[i]);
	/* Started paused (-S) for this: now it runs. */
	if (rc == 0)
		rc = spx_qmp_exec(q, "cont", NULL, QMP_MS, NULL);
	spx_qmp_close(q);
out:
	free(sock);
	return rc;
}

/* As root: the guest's QEMU runs as a user of its own (runas.h), which
 * may open its root volume and its disks over the NBD socket (grant.h). */
static int give_user(const struct vmcli *c, struct spx_vm_spec *s,
		     const char *dir, char **disks)
{
	char *grants = spx_vol_grants_dir(s->nbd_socket);
	struct spx_vol_grant g = { 0 };
	uint32_t uid;
	int rc = -1;

	if (spx_vm_user_searchable(c->run) < 0 ||
	    spx_vm_user_searchable(c->vms) < 0 ||
	    spx_vm_user_take(c->vms, s->name, c->uid_base, grants, &uid) < 0 ||
	    spx_vm_user_prepare(dir, uid) < 0)
		goto out;
	g.uid = uid;
	snprintf(g.guest, sizeof(g.guest), "%s", s->name);
	if (spx_vol_grant_write(grants, s->root, &g) < 0)
		goto out;
	for (size_t i = 0; disks[i]; i++)
		if (spx_vol_grant_write(grants, disks[i], &g) < 0)
			goto out;
	s->runas = uid;
	rc = 0;
out:
	free(grants);
	return rc;
}

int cmd_start(const struct spx_args *a)
{
	const char *name = a->argv[0];
	struct vmcli c;
	struct spx_vm_spec s = { 0 };
	struct spx_net_guard guard;
	char *dir = NULL, *path = NULL, **disks = NULL;
	json_t *j = NULL;
	char *text = NULL;
	long long secs;
	int rc, lock = -1;

	if ((rc = vmcli_open(a, &c)))
		return rc;
	rc = SPX_USAGE;
	dir = vmcli_dir(a, &c, name);
	if (!dir)
		goto out;
	if (spx_arg_int(a, "timeout", 1, 3600, 30, &secs) < 0 ||
	    spec_from_args(a, &c, name, &s, &guard) < 0 ||
	    !(disks = disks_of(a, s.root))) {
		rc = vmcli_fail(a);
		goto out;
	}
	s.paused = disks[0] != NULL;
	/* What QEMU makes before it drops privileges (its console) is
	 * root's alone. */
	umask(077);
	long long deadline = spx_mono_ms() + secs * 1000;

	if (spx_mkdirs(dir, 0700) < 0 || (lock = vmcli_lock(dir)) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	if (spx_vm_pid(dir)) {
		spx_warn("start: '%s' is running already", name);
		rc = SPX_NO;
		goto out;
	}
	tidy(dir);
	/* The tap made (or found as asked) on the bridge, as spx-net tap
	 * makes it: the agent's one command for a guest on a bridge. */
	if ((spx_arg(a, "bridge") &&
	     spx_net_tap(s.tap, spx_arg(a, "bridge"), (uid_t)-1,
			 spx_arg(a, "address") ? &guard : NULL) < 0) ||
	    put_metadata(a, dir, &s) < 0 || uefi_vars(&s, dir) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	j = spx_vm_spec_json(&s);
	text = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
	path = spx_path_join(dir, "spec.json");
	/* The spec first: it says which grants a release removes. */
	if (spx_write_file(path, text, strlen(text), 0600, false) < 0 ||
	    (geteuid() == 0 && give_user(&c, &s, dir, disks) < 0)) {
		rc = vmcli_fail(a);
		spx_vm_user_release(dir);
		goto out;
	}
	if (launch(&s, dir, deadline) < 0) {
		rc = vmcli_fail(a);
		spx_vm_user_release(dir);
		goto out;
	}
	/* A guest without the disks it was started with is no start. */
	if (plug_disks(&s, dir, disks) < 0) {
		rc = vmcli_fail(a);
		kill_now(dir);
		tidy(dir);
		goto out;
	}
	rc = cmd_info(a);
out:
	if (lock >= 0)
		close(lock);
	free(text);
	json_decref(j);
	free(path);
	free(dir);
	if (disks)
		spx_vm_argv_free(disks);
	spx_vm_spec_release(&s);
	vmcli_close(&c);
	return rc;
}

int cmd_stop(const struct spx_args *a)
{
	struct guest g;
	const char *how = "stopped already";
	char *sock = NULL;
	bool quit = false;
	long long secs;
	int rc;

	if (spx_arg_int(a, "timeout", 0, 86400, 60, &secs) < 0)
		return vmcli_fail(a);
	if ((rc = guest_open(a, GUEST_LOCK, &g)))
		goto out;
	if (!spx_vm_pid(g.dir))
		goto done;
	sock = spx_path_join(g.dir, "qmp.sock");
	quit = spx_flag(a, "force");
	if (!quit && !ended_within(g.dir, true, 0)) {
		/* The power button, then time for the guest to shut down
		 * (QMP takes one connection at a time: the wait makes its
		 * own). A guest that is off already needs neither. */
		quit = spx_qmp_connect(sock, QMP_MS, &g.q) < 0 ||
		       spx_qmp_exec(g.q, "system_powerdown", NULL, QMP_MS,
				    NULL) < 0;
		spx_qmp_close(g.q);
		g.q = NULL;
		quit = quit || !ended_within(g.dir, true, secs * 1000);
	}
	how = quit ? "quit" : "powered off";
	/* Then QEMU is told to quit (a guest that is off leaves it running:
	 * -no-shutdown), then killed. */
	if (!spx_vm_pid(g.dir))
		goto done;
	if (spx_qmp_connect(sock, QMP_MS, &g.q) == 0 &&
	    spx_qmp_exec(g.q, "quit", NULL, QMP_MS, NULL) == 0 &&
	    ended_within(g.dir, false, 5000))
		goto done;
	how = "killed";
	if (kill_now(g.dir) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
done:
	spx_error_clear();
	tidy(g.dir);
	if (spx_vm_user_release(g.dir) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	printf("%s: %s\n", g.name, how);
out:
	free(sock);
	guest_close(&g);
	return rc;
}

int cmd_kill(const struct spx_args *a)
{
	struct vmcli c;
	char *dir;
	int rc;

	if ((rc = vmcli_open(a, &c)))
		return rc;
	dir = vmcli_dir(a, &c, a->argv[0]);
	if (!dir)
		rc = SPX_USAGE;
	else if (kill_now(dir) < 0) /* at once: not behind a stop's wait */
		rc = vmcli_fail(a);
	free(dir);
	vmcli_close(&c);
	return rc;
}

/* A guest that powered itself off (QEMU in "shutdown", -no-shutdown)
 * comes out of a reset in "prelaunch", its CPUs stopped: it is told to
 * go on once the reset is done, so that a reboot boots it either way. */
static int reboot_off(struct guest *g)
{
	long long end = spx_mono_ms() + QMP_MS;
	char st[SPX_VM_STATUS_SIZE];

	for (;;) {
		if (spx_vm_status_of(g->q, QMP_MS, st) < 0)
			return -1;
		if (strcmp(st, "shutdown"))
			break;
		if (spx_mono_ms() >= end)
			return spx_error(SPX_FAIL, "QEMU did not reset the "
						   "guest in time");
		nap();
	}
	if (!strcmp(st, "prelaunch") &&
	    spx_qmp_exec(g->q, "cont", NULL, QMP_MS, NULL) < 0)
		return -1;
	return 0;
}

int cmd_reboot(const struct spx_args *a)
{
	struct guest g;
	int rc = guest_open(a, GUEST_LOCK | GUEST_QMP, &g);
	char st[SPX_VM_STATUS_SIZE];

	if (rc == 0 &&
	    (spx_vm_status_of(g.q, QMP_MS, st) < 0 ||
	     spx_qmp_exec(g.q, "system_reset", NULL, QMP_MS, NULL) < 0 ||
	     (!strcmp(st, "shutdown") && reboot_off(&g) < 0)))
		rc = vmcli_fail(a);
	guest_close(&g);
	return rc;
}
