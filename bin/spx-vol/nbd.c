/* spx-vol cat | write: a volume's bytes through NBD.
 *
 * Both are libnbd clients, of a running spx-vol serve (--socket) or of a
 * private nbdkit they start on a socketpair and that exits with them. */
#include "spx.h"

#include <libnbd.h>
#include <sys/stat.h>

#include "file.h"
#include "proc.h"
#include "volcli.h"

/* One request: large enough to stream at disk speed, well inside NBD's
 * 32 MiB request limit. */
#define CHUNK (1u << 20)

/* A libnbd handle on volume id: through --socket, else a private nbdkit
 * on the store. On failure prints why and returns NULL with *rc set. */
static struct nbd_handle *connect_vol(const struct spx_args *a,
				      struct volcli *c, const char *id,
				      bool readonly, uint64_t *size, int *rc)
{
	struct spx_vol_info v;
	struct nbd_handle *nbd;
	int64_t sz;
	int r;

	/* Not there is "no volume", never a protocol error. */
	if (spx_vol_info(c->vs, id, &v) < 0) {
		*rc = volcli_fail(a);
		return NULL;
	}
	nbd = nbd_create();
	if (!nbd || nbd_set_export_name(nbd, id) < 0)
		goto fail;
	if (spx_arg(a, "socket")) {
		r = nbd_connect_unix(nbd, spx_arg(a, "socket"));
	} else {
		char *plugin = spx_vol_plugin_path();
		char *dir = spx_xprintf("dir=%s", spx_vol_store_dir(c->vs));
		char *conf = spx_xprintf("conf=%s", c->conf);
		char *root = spx_xprintf("root=%s", c->root);
		char *argv[10];
		int n = 0;

		argv[n++] = (char *)volcli_nbdkit();
		argv[n++] = "-s";
		argv[n++] = "--exit-with-parent";
		/* A reader does not take the volume from a server that
		 * writes it. */
		if (readonly)
			argv[n++] = "-r";
		argv[n++] = plugin;
		argv[n++] = dir;
		argv[n++] = conf;
		argv[n++] = root;
		argv[n] = NULL;

		if (!plugin) {
			free(dir);
			free(conf);
			free(root);
			nbd_close(nbd);
			*rc = volcli_fail(a);
			return NULL;
		}
		spx_preload_sanitizers();
		r = nbd_connect_command(nbd, argv);
		free(plugin);
		free(dir);
		free(conf);
		free(root);
	}
	if (r < 0 || (sz = nbd_get_size(nbd)) < 0)
		goto fail;
	*size = (uint64_t)sz;
	return nbd;
fail:
	spx_warn("%s: %s: %s", a->verb->name, id,
		 nbd ? nbd_get_error() : "cannot create an NBD handle");
	nbd_close(nbd);
	*rc = SPX_FAIL;
	return NULL;
}

static int nbd_fail(const struct spx_args *a, const char *id)
{
	spx_warn("%s: %s: %s", a->verb->name, id, nbd_get_error());
	return SPX_FAIL;
}

int cmd_cat(const struct spx_args *a)
{
	const char *id = a->argv[0];
	struct nbd_handle *nbd;
	struct volcli c;
	uint64_t size, off;
	char *buf;
	int rc;

	if ((rc = volcli_open(a, &c)))
		return rc;
	if (!(nbd = connect_vol(a, &c, id, true, &size, &rc))) {
		volcli_close(&c);
		return rc;
	}
	buf = spx_malloc(CHUNK);
	for (off = 0; off < size && !rc; off += CHUNK) {
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;

		if (nbd_pread(nbd, buf, n, off, 0) < 0)
			rc = nbd_fail(a, id);
		else if (spx_write_all(STDOUT_FILENO, buf, n, "stdout") < 0) {
			spx_warn("cat: %s", spx_errmsg());
			rc = SPX_FAIL;
		}
	}
	if (!rc)
		nbd_shutdown(nbd, 0);
	nbd_close(nbd);
	free(buf);
	volcli_close(&c);
	return rc;
}

/* Fill buf from fd up to n bytes; the count read (short only at EOF), or
 * -1 with errno. */
static ssize_t read_full(int fd, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (!r)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static bool all_zero(const char *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

int cmd_write(const struct spx_args *a)
{
	const char *id = a->argv[0];
	struct nbd_handle *nbd;
	struct volcli c;
	struct stat st;
	uint64_t size, off = 0;
	char *buf;
	int rc;

	if ((rc = volcli_open(a, &c)))
		return rc;
	if (!(nbd = connect_vol(a, &c, id, false, &size, &rc))) {
		volcli_close(&c);
		return rc;
	}
	/* A file too large for the volume is refused before a byte is
	 * written; a pipe is found too long only when it gets there. */
	if (!fstat(STDIN_FILENO, &st) && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size > size) {
		spx_warn("write: %s: stdin holds %llu bytes, the volume %llu",
			 id, (unsigned long long)st.st_size,
			 (unsigned long long)size);
		nbd_close(nbd);
		volcli_close(&c);
		return SPX_USAGE;
	}
	buf = spx_malloc(CHUNK);
	for (;;) {
		size_t want = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		ssize_t n = read_full(STDIN_FILENO, buf, want ? want : 1);

		if (n < 0) {
			spx_warn("write: stdin: %s", strerror(errno));
			rc = SPX_FAIL;
			break;
		}
		if (!n)
			break;
		if (!want) {
			spx_warn("write: %s: stdin is longer than the volume "
				 "(%llu bytes); its first %llu bytes are "
				 "written",
				 id, (unsigned long long)size,
				 (unsigned long long)size);
			rc = SPX_USAGE;
			break;
		}
		/* Zeros stay thin: WRITE_ZEROES may punch a hole. */
		if ((all_zero(buf, (size_t)n)
			     ? nbd_zero(nbd, (uint64_t)n, off, 0)
			     : nbd_pwrite(nbd, buf, (size_t)n, off, 0)) < 0) {
			rc = nbd_fail(a, id);
			break;
		}
		off += (uint64_t)n;
	}
	/* What was written is on disk before we say so (and before we say
	 * what went wrong). */
	if (nbd_flush(nbd, 0) < 0 && !rc)
		rc = nbd_fail(a, id);
	if (!rc)
		nbd_shutdown(nbd, 0);
	nbd_close(nbd);
	free(buf);
	volcli_close(&c);
	return rc;
}
