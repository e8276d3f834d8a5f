/* spx-vm imds DIR: one guest connection to 169.254.169.254, on stdin and
 * stdout. QEMU's user network runs it for each connection the guest opens
 * to that address (guestfwd), so the guest it answers is the one whose
 * directory it was given: nothing the guest sends can change that. */
#include "spx.h"

#include <poll.h>
#include <sys/file.h>

#include "file.h"
#include "vm/imds.h"
#include "vmcli.h"

/* A connection that says nothing for this long is closed. */
#define IDLE_MS 10000
/* Connections of one guest answered at once; more get 429. QEMU runs a
 * process for each connection the guest opens, so without a bound a
 * guest could fill the host with them. */
#define SLOTS SPX_IMDS_SLOTS
/* Requests answered on one connection at most. */
#define REQUESTS_MAX 1000

/* One of the guest's SLOTS connection slots (a lock held while this
 * process runs), or -1 when all are taken. */
static int take_slot(const char *dir)
{
	int i, fd = -1;

	for (i = 0; i < SLOTS && fd < 0; i++) {
		char name[32];
		char *path;

		snprintf(name, sizeof(name), "imds-slot-%d", i);
		path = spx_path_join(dir, name);
		fd = spx_lock_path(path, LOCK_EX | LOCK_NB, "taken");
		free(path);
	}
	spx_error_clear();
	return fd;
}

int cmd_imds(const struct spx_args *a)
{
	const char *dir = a->argv[0];
	char *path = spx_path_join(dir, "metadata.json");
	struct spx_buf b = SPX_BUF_INIT, out = SPX_BUF_INIT;
	unsigned char key[SPX_IMDS_KEY_LEN];
	struct spx_imds_req *r = spx_malloc(sizeof(*r));
	struct spx_imds *md = NULL;
	char in[SPX_IMDS_REQ_MAX];
	size_t have = 0;
	int n = 0, rc = SPX_FAIL, fd, slot = -1;

	if (spx_buf_read_file(&b, path, SPX_IMDS_MD_MAX) < 0 ||
	    spx_imds_load(b.p, b.len, &md) < 0) {
		spx_warn("imds: %s", spx_errmsg());
		goto out;
	}
	free(path);
	path = spx_path_join(dir, "imds.key");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, key, sizeof(key)) != (ssize_t)sizeof(key)) {
		spx_warn_errno("imds: cannot read '%s'", path);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	slot = take_slot(dir);
	if (slot < 0) {
		static const char busy[] =
			"HTTP/1.1 429 Too Many Requests\r\n"
			"Content-Type: text/plain\r\nContent-Length: 4\r\n"
			"Server: EC2ws\r\nConnection: close\r\n\r\n429\n";

		spx_write_all(STDOUT_FILENO, busy, sizeof(busy) - 1, "stdout");
		rc = SPX_OK;
		goto out;
	}
	while (n < REQUESTS_MAX) {
		int used = spx_imds_parse(in, have, r);
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		ssize_t got;

		if (used < 0) {
			memset(r, 0, sizeof(*r));
			r->close = true;
			spx_buf_adds(&out, "HTTP/1.1 400 Bad Request\r\n"
					   "Content-Type: text/plain\r\n"
					   "Content-Length: 4\r\nServer: EC2ws\r\n"
					   "Connection: close\r\n\r\n400\n");
			spx_write_all(STDOUT_FILENO, out.p, out.len, "stdout");
			break;
		}
		if (used > 0) {
			spx_buf_reset(&out);
			spx_imds_answer(md, r, key, time(NULL), &out);
			if (spx_write_all(STDOUT_FILENO, out.p, out.len,
					  "stdout") < 0)
				break;
			memmove(in, in + used, have - (size_t)used);
			have -= (size_t)used;
			n++;
			if (r->close)
				break;
			continue;
		}
		if (poll(&p, 1, IDLE_MS) <= 0)
			break;
		got = read(STDIN_FILENO, in + have, sizeof(in) - have);
		if (got <= 0)
			break;
		have += (size_t)got;
	}
	rc = SPX_OK;
out:
	if (slot >= 0)
		close(slot);
	spx_imds_free(md);
	spx_buf_release(&b);
	spx_buf_release(&out);
	free(r);
	free(path);
	return rc;
}
