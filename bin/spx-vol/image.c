/* spx-vol import | export: images (raw, qcow2) into and out of volumes.
 *
 * qemu-img does the converting (it reads and writes qcow2, skips zeros,
 * shows progress); it talks NBD to the volume, through the running
 * server (--socket) or a private nbdkit on a socket in a directory of
 * our own under the node's run directory, so every byte goes through the
 * plugin as a guest's would (its chunks marked for the next snapshot).
 * Programs are run by argv, never through a shell. */
#include "spx.h"

#include <libnbd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "file.h"
#include "proc.h"
#include "size.h"
#include "volcli.h"

/* How long a private nbdkit may take to listen. */
#define READY_MS 30000

struct server {
	pid_t pid;
	char *dir, *sock;
};

static void server_stop(struct server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (s->sock)
		unlink(s->sock);
	if (s->dir)
		rmdir(s->dir);
	free(s->sock);
	free(s->dir);
	memset(s, 0, sizeof(*s));
}

/* A private nbdkit on the store, listening on a socket of its own. */
static int server_start(struct volcli *c, bool readonly, struct server *s)
{
	char *plugin = spx_vol_plugin_path(), *tpl;
	char *dir = NULL, *conf = NULL, *root = NULL;
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int waited = 0, rc = -1;

	memset(s, 0, sizeof(*s));
	if (!plugin || spx_mkdirs(c->run, 0700) < 0)
		goto out;
	tpl = spx_xprintf("%s/vol-image.XXXXXX", c->run);
	if (!mkdtemp(tpl)) {
		spx_error_errno(SPX_FAIL, "cannot create '%s'", tpl);
		free(tpl);
		goto out;
	}
	s->dir = tpl;
	s->sock = spx_path_join(s->dir, "nbd.sock");
	dir = spx_xprintf("dir=%s", spx_vol_store_dir(c->vs));
	conf = spx_xprintf("conf=%s", c->conf);
	root = spx_xprintf("root=%s", c->root);
	fflush(NULL);
	s->pid = fork();
	if (s->pid < 0) {
		spx_error_errno(SPX_FAIL, "cannot fork");
		goto out;
	}
	if (!s->pid) {
		char *argv[12];
		int n = 0;

		argv[n++] = (char *)volcli_nbdkit();
		argv[n++] = "-f";
		argv[n++] = "--exit-with-parent";
		argv[n++] = "-U";
		argv[n++] = s->sock;
		if (readonly)
			argv[n++] = "-r";
		argv[n++] = plugin;
		argv[n++] = dir;
		argv[n++] = conf;
		argv[n++] = root;
		argv[n] = NULL;
		spx_preload_sanitizers();
		execvp(argv[0], argv);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(SPX_FAIL);
	}
	while (volcli_probe(s->sock) < 0) {
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = 0;
			spx_error(SPX_FAIL, "nbdkit stopped before it served");
			goto out;
		}
		if ((waited += 20) > READY_MS) {
			spx_error(SPX_FAIL, "nbdkit did not listen within %d s",
				  READY_MS / 1000);
			goto out;
		}
		nanosleep(&ts, NULL);
	}
	rc = 0;
out:
	if (rc < 0)
		server_stop(s);
	free(plugin);
	free(dir);
	free(conf);
	free(root);
	return rc;
}

/* Run qemu-img with argv; its progress (stdout) goes to our stderr, so
 * that our stdout carries only our answer. */
static int qemu_img(char *const argv[])
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return spx_error_errno(SPX_FAIL, "cannot fork");
	if (!pid) {
		if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(SPX_FAIL);
		execvp(argv[0], argv);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(SPX_FAIL);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return spx_error_errno(SPX_FAIL, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return spx_error(SPX_FAIL, "qemu-img failed (%s %d)",
				 WIFEXITED(status) ? "status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status)
						   : WTERMSIG(status));
	return 0;
}

static const char *qemu_img_prog(void)
{
	const char *e = getenv("SPX_QEMU_IMG");

	return e && *e ? e : "qemu-img";
}

/* The NBD URI of volume id on socket sock, as qemu-img takes it. */
static char *nbd_uri(const char *id, const char *sock)
{
	return spx_xprintf("nbd+unix:///%s?socket=%s", id, sock);
}

/* file as qemu-img is to take it: a file's name, never a protocol or
 * options its text might spell ("nbd:...", "json:{...}"). Caller frees. */
static char *img_path(const char *file)
{
	return file[0] == '/' ? spx_strdup(file) : spx_xprintf("./%s", file);
}

int cmd_import(const struct spx_args *a)
{
	const char *file = a->argv[0], *fs = spx_arg(a, "format");
	const char *ss = spx_arg(a, "size");
	unsigned char head[512];
	char *path = NULL;
	struct spx_vol_info v;
	struct server srv = { 0 };
	struct volcli c;
	struct stat st;
	uint64_t vsize = 0, size = 0;
	int fmt, want = -1, fd, rc;
	ssize_t n;
	bool made = false;

	if (fs && (want = spx_vol_format_parse(fs)) < 0) {
		spx_warn("import: %s", spx_errmsg());
		return SPX_USAGE;
	}
	if (ss && spx_parse_size(ss, &size) < 0) {
		spx_warn("import: %s", spx_errmsg());
		return SPX_USAGE;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		spx_warn("import: cannot open '%s': %s", file, strerror(errno));
		return errno == ENOENT ? SPX_NO : SPX_FAIL;
	}
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
		spx_warn("import: '%s' is not a file", file);
		close(fd);
		return SPX_USAGE;
	}
	if ((n = read(fd, head, sizeof(head))) < 0) {
		spx_warn("import: cannot read '%s': %s", file, strerror(errno));
		close(fd);
		return SPX_FAIL;
	}
	close(fd);
	if (spx_vol_image_probe(head, (size_t)n, &fmt, &vsize) < 0 &&
	    want != SPX_VOL_RAW) {
		spx_warn("import: '%s': %s", file, spx_errmsg());
		return SPX_USAGE;
	}
	if (want >= 0 && want != fmt) {
		if (want == SPX_VOL_QCOW2) {
			spx_warn("import: '%s' is not a qcow2 image", file);
			return SPX_USAGE;
		}
		fmt = SPX_VOL_RAW;
	}
	if (fmt == SPX_VOL_RAW)
		vsize = (uint64_t)st.st_size;
	/* Whole sectors: a raw image's tail reads as zeros after it. */
	vsize = (vsize + SPX_VOL_SECTOR - 1) / SPX_VOL_SECTOR * SPX_VOL_SECTOR;
	if (!size)
		size = vsize;
	if (size < vsize) {
		spx_warn("import: '%s' holds %llu bytes, more than --size", file,
			 (unsigned long long)vsize);
		return SPX_USAGE;
	}
	if (!size) {
		spx_warn("import: '%s' is empty", file);
		return SPX_USAGE;
	}
	if ((rc = volcli_open(a, &c)))
		return rc;
	if (spx_vol_create(c.vs, size, spx_arg(a, "id"), &v) < 0) {
		rc = volcli_fail(a);
		goto out;
	}
	made = true;
	if (!spx_arg(a, "socket") && server_start(&c, false, &srv) < 0) {
		rc = volcli_fail(a);
		goto out;
	}
	{
		char *uri = nbd_uri(v.id, srv.sock ? srv.sock : spx_arg(a, "socket"));
		char *argv[16];
		int i = 0;

		path = img_path(file);
		argv[i++] = (char *)qemu_img_prog();
		argv[i++] = "convert";
		argv[i++] = "-n";
		/* A new volume reads as zeros: its holes stay holes. */
		argv[i++] = "--target-is-zero";
		if (isatty(STDERR_FILENO))
			argv[i++] = "-p";
		argv[i++] = "-f";
		argv[i++] = fmt == SPX_VOL_QCOW2 ? "qcow2" : "raw";
		argv[i++] = "-O";
		argv[i++] = "raw";
		argv[i++] = path;
		argv[i++] = uri;
		argv[i] = NULL;
		rc = qemu_img(argv);
		free(uri);
	}
	if (rc < 0) {
		rc = volcli_fail(a);
		goto out;
	}
	server_stop(&srv);
	made = false;
	if (spx_flag(a, "json")) {
		struct spx_vol_info now;

		if (spx_vol_info(c.vs, v.id, &now) < 0)
			now = v;
		rc = volcli_print_vols(&c, &now, 1, true, false);
	} else {
		printf("%s\n", v.id);
	}
out:
	free(path);
	server_stop(&srv);
	/* Half an image is not a volume anyone asked for. */
	if (made && spx_vol_remove(c.vs, v.id) < 0)
		spx_warn("import: %s", spx_errmsg());
	volcli_close(&c);
	return rc;
}

int cmd_export(const struct spx_args *a)
{
	const char *id = a->argv[0], *file = a->argv[1];
	const char *fs = spx_arg(a, "format");
	struct spx_vol_info v;
	struct server srv = { 0 };
	struct volcli c;
	int fmt = SPX_VOL_RAW, rc;
	char *path = NULL;

	if (fs && (fmt = spx_vol_format_parse(fs)) < 0) {
		spx_warn("export: %s", spx_errmsg());
		return SPX_USAGE;
	}
	if ((rc = volcli_open(a, &c)))
		return rc;
	if (spx_vol_info(c.vs, id, &v) < 0) {
		rc = volcli_fail(a);
		goto out;
	}
	if (spx_exists(file)) {
		spx_warn("export: '%s' exists", file);
		rc = SPX_NO;
		goto out;
	}
	if (!spx_arg(a, "socket") && server_start(&c, true, &srv) < 0) {
		rc = volcli_fail(a);
		goto out;
	}
	{
		char *uri = nbd_uri(id, srv.sock ? srv.sock : spx_arg(a, "socket"));
		char *argv[16];
		int i = 0;

		path = img_path(file);
		argv[i++] = (char *)qemu_img_prog();
		argv[i++] = "convert";
		if (isatty(STDERR_FILENO))
			argv[i++] = "-p";
		argv[i++] = "-f";
		argv[i++] = "raw";
		argv[i++] = "-O";
		argv[i++] = fmt == SPX_VOL_QCOW2 ? "qcow2" : "raw";
		argv[i++] = uri;
		argv[i++] = path;
		argv[i] = NULL;
		rc = qemu_img(argv);
		free(uri);
	}
	if (rc < 0) {
		rc = volcli_fail(a);
		unlink(file);
	}
out:
	free(path);
	server_stop(&srv);
	volcli_close(&c);
	return rc;
}
