/* spx-vm probe: can this host run guests under KVM? Told by booting,
 * never assumed: a /dev/kvm that opens may still not run a guest (a PVM
 * host, a nested hypervisor that refuses). QEMU boots a 512-byte boot
 * sector of ours under the accelerator; the firmware loads it, and it
 * writes a line to the serial port and halts. The line on QEMU's serial
 * output within the deadline is the proof.
 *
 * The answer is kept in RUN/vm/accel.json ({"kvm": bool, "why": text,
 * "qemu": the binary, "checked": seconds}) for `spx-vm start --accel
 * auto`, until the QEMU binary changes or `spx-vm probe` runs again. */
#include "spx.h"

#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "file.h"
#include "print.h"
#include "proc.h"
#include "vm/vm.h"
#include "vmcli.h"

extern char **environ;

#define PROBE_MS 15000
#define PROBE_LINE "spx-vm-probe-ok"

/* The boot sector: xor ax,ax; mov ds,ax; mov dx,0x3f8; mov si,msg;
 * loop: lodsb; test al,al; jz done; out dx,al; jmp loop; done: hlt;
 * jmp done; msg. */
static void boot_sector(unsigned char s[512])
{
	static const unsigned char code[] = {
		0x31, 0xc0, 0x8e, 0xd8, 0xba, 0xf8, 0x03, 0xbe, 0x15, 0x7c,
		0xac, 0x84, 0xc0, 0x74, 0x03, 0xee, 0xeb, 0xf8, 0xf4, 0xeb,
		0xfd,
	};
	static const char msg[] = PROBE_LINE "\r\n";

	memset(s, 0, 512);
	memcpy(s, code, sizeof(code));		  /* msg at 0x7c00 + 21 */
	memcpy(s + sizeof(code), msg, sizeof(msg)); /* with its NUL */
	s[510] = 0x55;
	s[511] = 0xaa;
}

static const char *qemu_bin(void)
{
	const char *q = getenv("SPX_QEMU");

	return q && *q ? q : "qemu-system-x86_64";
}

/* Boot the sector under accel in dir (scratch). true when the line came;
 * else why (a short reason) says. */
static bool boot_probe(const char *accel, const char *dir, char *why,
		       size_t whylen)
{
	char *img = spx_path_join(dir, "probe.img");
	char *out = spx_path_join(dir, "probe.out");
	char *log = spx_path_join(dir, "probe.log");
	char *machine = spx_xprintf("q35,accel=%s", accel);
	char *drive = spx_xprintf("file=%s,format=raw,if=ide", img);
	char *serial = spx_xprintf("file:%s", out);
	char *argv[] = { (char *)qemu_bin(), "-machine", machine, "-cpu",
			 strcmp(accel, "kvm") ? "max" : "host", "-m", "64",
			 "-nodefaults", "-display", "none", "-no-reboot",
			 "-drive", drive, "-serial", serial, NULL };
	unsigned char sec[512];
	posix_spawn_file_actions_t fa;
	long long end = spx_mono_ms() + PROBE_MS;
	bool ok = false;
	pid_t pid = -1;
	int err, st;

	boot_sector(sec);
	unlink(out);
	/* A whole MiB: the firmware cannot read a disk of one sector. */
	if (spx_write_file(img, sec, sizeof(sec), 0600, false) < 0 ||
	    truncate(img, 1 << 20) < 0) {
		snprintf(why, whylen, "%s",
			 spx_errmsg()[0] ? spx_errmsg() : strerror(errno));
		goto done;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log,
					 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err) {
		snprintf(why, whylen, "cannot run %s: %s", argv[0],
			 strerror(err));
		pid = -1;
		goto done;
	}
	for (;;) {
		struct spx_buf b = SPX_BUF_INIT;

		if (spx_buf_read_file(&b, out, 4096) == 0 &&
		    memmem(b.p, b.len, PROBE_LINE, strlen(PROBE_LINE)))
			ok = true;
		spx_buf_release(&b);
		spx_error_clear();
		if (ok)
			break;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			struct spx_buf l = SPX_BUF_INIT;
			char *nl;

			pid = -1;
			/* QEMU's own words: why it could not run. */
			if (spx_buf_read_file(&l, log, 4096) == 0 && l.len) {
				spx_buf_addc(&l, 0);
				while ((nl = strrchr(l.p, '\n')) && !nl[1])
					*nl = 0;
				nl = strrchr(l.p, '\n');
				snprintf(why, whylen, "%s", nl ? nl + 1 : l.p);
			} else {
				snprintf(why, whylen, "QEMU exited (%d)",
					 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			}
			spx_buf_release(&l);
			spx_error_clear();
			break;
		}
		if (spx_mono_ms() > end) {
			snprintf(why, whylen,
				 "the guest did not boot in %d s under %s",
				 PROBE_MS / 1000, accel);
			break;
		}
		usleep(50 * 1000);
	}
done:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	unlink(img);
	unlink(out);
	unlink(log);
	free(img);
	free(out);
	free(log);
	free(machine);
	free(drive);
	free(serial);
	return ok;
}

/* The QEMU binary's identity for the cache: its path and mtime. */
static char *qemu_id(void)
{
	const char *q = qemu_bin();
	char *path = NULL;
	struct stat sb;

	if (strchr(q, '/'))
		path = spx_strdup(q);
	else {
		const char *p = getenv("PATH");

		while (p && *p && !path) {
			size_t n = strcspn(p, ":");
			char *c = spx_xprintf("%.*s/%s", (int)n, p, q);

			if (access(c, X_OK) == 0)
				path = c;
			else
				free(c);
			p += n + (p[n] == ':');
		}
	}
	if (!path || stat(path, &sb) < 0) {
		free(path);
		return spx_strdup(q);
	}
	char *id = spx_xprintf("%s@%lld", path, (long long)sb.st_mtime);

	free(path);
	return id;
}

static bool have_dev_kvm(void)
{
	return access("/dev/kvm", F_OK) == 0;
}

/* Boot under accel ("kvm": the answer is cached; else only told). */
static int probe_run(const struct vmcli *c, const char *accel, json_t **out)
{
	char why[512] = "", *cache = spx_path_join(c->vms, "accel.json");
	char *id = qemu_id(), *text, *said = NULL;
	bool ok;
	int rc = -1;

	if (spx_mkdirs(c->vms, 0700) < 0)
		goto out;
	ok = boot_probe(accel, c->vms, why, sizeof(why));
	said = spx_xprintf("a guest booted under %s", accel);
	*out = json_pack("{s:s, s:b, s:s, s:s, s:I, s:b}", "accel", accel,
			 "kvm", ok && !strcmp(accel, "kvm"), "why",
			 ok ? said : why, "qemu", id, "checked",
			 (json_int_t)time(NULL), "dev_kvm", have_dev_kvm());
	if (!ok)
		json_object_set_new(*out, "booted", json_false());
	else
		json_object_set_new(*out, "booted", json_true());
	rc = 0;
	if (!strcmp(accel, "kvm")) {
		text = json_dumps(*out, JSON_COMPACT | JSON_SORT_KEYS);
		rc = spx_write_file(cache, text, strlen(text), 0600, false);
		free(text);
	}
out:
	free(said);
	free(id);
	free(cache);
	return rc;
}

/* The cached answer, if it is for this QEMU and /dev/kvm is as it was
 * (a module loaded since asks again); NULL otherwise. */
static json_t *probe_cached(const struct vmcli *c)
{
	char *cache = spx_path_join(c->vms, "accel.json"), *id = qemu_id();
	json_t *j = json_load_file(cache, 0, NULL);

	if (j && (!json_is_boolean(json_object_get(j, "kvm")) ||
		  !json_is_string(json_object_get(j, "qemu")) ||
		  strcmp(json_string_value(json_object_get(j, "qemu")), id) ||
		  json_is_true(json_object_get(j, "dev_kvm")) !=
			  have_dev_kvm())) {
		json_decref(j);
		j = NULL;
	}
	free(id);
	free(cache);
	return j;
}

int vm_accel_auto(const struct vmcli *c, enum spx_vm_accel *accel)
{
	json_t *j = probe_cached(c);

	if (!j && probe_run(c, "kvm", &j) < 0) {
		json_decref(j);
		return -1;
	}
	*accel = json_is_true(json_object_get(j, "kvm")) ? SPX_VM_KVM
							 : SPX_VM_TCG;
	json_decref(j);
	return 0;
}

int cmd_probe(const struct spx_args *a)
{
	const char *accel = spx_arg(a, "accel");
	struct vmcli c;
	json_t *j = NULL;
	int rc;

	if (!accel)
		accel = "kvm";
	if (strcmp(accel, "kvm") && strcmp(accel, "tcg")) {
		spx_warn("probe: --accel: kvm or tcg, not '%s'", accel);
		return SPX_USAGE;
	}
	if ((rc = vmcli_open(a, &c)))
		return rc;
	if (probe_run(&c, accel, &j) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	if (spx_flag(a, "json")) {
		char *t = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);

		printf("%s\n", t);
		free(t);
	} else {
		printf("%s: %s (%s)\n", accel,
		       json_is_true(json_object_get(j, "booted")) ? "yes" : "no",
		       json_string_value(json_object_get(j, "why")));
	}
	rc = json_is_true(json_object_get(j, "booted")) ? SPX_OK : SPX_NO;
out:
	json_decref(j);
	vmcli_close(&c);
	return rc;
}
