/* spx-vm ls | info | console | qmp */
#include "spx.h"

#include <dirent.h>
#include <jansson.h>

#include "file.h"
#include "print.h"
#include "vm/qmp.h"
#include "vm/vm.h"
#include "vmcli.h"

#define LOOK_MS 1000 /* a listing does not wait long on one QEMU */

/* The guest's state as QEMU tells it ("running", "paused", "shutdown",
 * ...), "stopped" with no QEMU, "unresponsive" when QEMU runs but does
 * not answer. */
static char *state_of(const char *dir, pid_t pid)
{
	char st[SPX_VM_STATUS_SIZE];

	if (!pid)
		return spx_strdup("stopped");
	if (spx_vm_status(dir, LOOK_MS, st) < 0) {
		spx_error_clear();
		return spx_strdup("unresponsive");
	}
	return spx_strdup(st);
}

static void opt_int(struct spx_table *t, long long v)
{
	if (v)
		spx_table_int(t, v);
	else
		spx_table_json(t, "-", json_null());
}

static void row(struct spx_table *t, const char *dir, const char *name,
		bool detail)
{
	struct spx_vm_spec s;
	pid_t pid = spx_vm_pid(dir);
	char *state = state_of(dir, pid), *p;
	bool have = vmcli_spec(dir, &s) == 0;

	spx_table_row(t);
	spx_table_str(t, name);
	spx_table_str(t, state);
	opt_int(t, pid);
	spx_table_str(t, !have ? "-" : s.accel == SPX_VM_KVM ? "kvm" : "tcg");
	opt_int(t, have ? s.mem_mib : 0);
	opt_int(t, have ? s.cpus : 0);
	spx_table_str(t, have ? s.root : "-");
	opt_int(t, have ? s.ssh_port : 0);
	if (detail) {
		spx_table_str(t, dir);
		p = spx_path_join(dir, "console.log");
		spx_table_str(t, p);
		free(p);
		spx_table_str(t, have ? s.uuid : "-");
		if (!have)
			spx_table_str(t, "-");
		else if (!*s.tap)
			spx_table_str(t, "user");
		else {
			p = spx_xprintf("tap %s%s", s.tap,
					s.vhost ? " vhost-net" : "");
			spx_table_str(t, p);
			free(p);
		}
	}
	if (!have) /* say why, and list the others */
		spx_warn("%s", spx_errmsg());
	spx_error_clear();
	spx_vm_spec_release(&s);
	free(state);
}

static struct spx_table *table(bool detail)
{
	if (detail)
		return spx_table_new("NAME", "STATE", "PID", "ACCEL",
				     "MEMORY MIB", "CPUS", "VOLUME", "SSH PORT",
				     "DIR", "CONSOLE", "UUID", "NETWORK", NULL);
	return spx_table_new("NAME", "STATE", "PID", "ACCEL", "MEMORY MIB",
			     "CPUS", "VOLUME", "SSH PORT", NULL);
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

int cmd_ls(const struct spx_args *a)
{
	struct vmcli c;
	struct spx_table *t = table(false);
	char **names = NULL;
	size_t n = 0, i;
	struct dirent *de;
	DIR *d;
	int rc;

	if ((rc = vmcli_open(a, &c))) {
		spx_table_free(t);
		return rc;
	}
	d = opendir(c.vms);
	while (d && (de = readdir(d))) {
		if (!spx_vm_name_valid(de->d_name))
			continue;
		names = spx_realloc(names, (n + 1) * sizeof(*names));
		names[n++] = spx_strdup(de->d_name);
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		char *dir = spx_path_join(c.vms, names[i]);

		row(t, dir, names[i], false);
		free(dir);
		free(names[i]);
	}
	free(names);
	if (spx_table_print(t, stdout, spx_flag(a, "json")) < 0)
		rc = vmcli_fail(a);
	spx_table_free(t);
	vmcli_close(&c);
	return rc;
}

int cmd_info(const struct spx_args *a)
{
	struct vmcli c;
	struct spx_table *t;
	char *dir;
	int rc;

	if ((rc = vmcli_open(a, &c)))
		return rc;
	dir = vmcli_dir(a, &c, a->argv[0]);
	if (!dir) {
		vmcli_close(&c);
		return SPX_USAGE;
	}
	if (!spx_exists(dir)) {
		spx_warn("%s: no guest '%s'", a->verb->name, a->argv[0]);
		free(dir);
		vmcli_close(&c);
		return SPX_NO;
	}
	t = table(true);
	row(t, dir, a->argv[0], true);
	if (spx_table_print(t, stdout, spx_flag(a, "json")) < 0)
		rc = vmcli_fail(a);
	spx_table_free(t);
	free(dir);
	vmcli_close(&c);
	return rc;
}

int cmd_console(const struct spx_args *a)
{
	struct vmcli c;
	char *dir, *path = NULL;
	char buf[65536];
	ssize_t n;
	int fd = -1, rc;

	if ((rc = vmcli_open(a, &c)))
		return rc;
	dir = vmcli_dir(a, &c, a->argv[0]);
	if (!dir) {
		rc = SPX_USAGE;
		goto out;
	}
	if (spx_vm_console_trim(dir) < 0)
		spx_warn("console: %s", spx_errmsg());
	path = spx_path_join(dir, "console.log");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ENOENT ? SPX_NO : SPX_FAIL;
		spx_warn_errno("console: cannot open '%s'", path);
		goto out;
	}
	fflush(stdout);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (spx_write_all(STDOUT_FILENO, buf, (size_t)n, "stdout") < 0) {
			rc = vmcli_fail(a);
			goto out;
		}
	if (n < 0) {
		spx_warn_errno("console: cannot read '%s'", path);
		rc = SPX_FAIL;
	}
out:
	if (fd >= 0)
		close(fd);
	free(path);
	free(dir);
	vmcli_close(&c);
	return rc;
}

int cmd_qmp(const struct spx_args *a)
{
	struct guest g;
	char *reply = NULL;
	int rc = guest_open(a, GUEST_QMP, &g);

	if (rc == 0 && spx_qmp_raw(g.q, a->argv[1], strlen(a->argv[1]), 30000,
				   &reply) < 0)
		rc = vmcli_fail(a);
	if (reply)
		puts(reply);
	free(reply);
	guest_close(&g);
	return rc;
}
