/* access.c: the access log (see http.h). The transports call
 * spx_http_alog_write once per request when it is finished; nothing else
 * writes these lines. */
#include "spx.h"

#include "http/http.h"

struct spx_http_alog {
	char *path;
	int fd;
};

static int open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);

	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot open '%s'", path);
	return fd;
}

int spx_http_alog_open(const char *path, struct spx_http_alog **out)
{
	struct spx_http_alog *a;
	int fd = open_log(path);

	if (fd < 0)
		return -1;
	a = spx_calloc(1, sizeof(*a));
	a->path = spx_strdup(path);
	a->fd = fd;
	*out = a;
	return 0;
}

int spx_http_alog_reopen(struct spx_http_alog *a)
{
	int fd;

	if (!a)
		return 0;
	fd = open_log(a->path);
	if (fd < 0)
		return -1;
	/* dup2 swaps the file under the same descriptor number in one step,
	 * so a writer on another thread writes whole lines to one file or
	 * the other, never to a closed descriptor. */
	if (dup2(fd, a->fd) < 0) {
		close(fd);
		return spx_error_errno(SPX_FAIL, "cannot reopen '%s'", a->path);
	}
	close(fd);
	return 0;
}

void spx_http_alog_close(struct spx_http_alog *a)
{
	if (!a)
		return;
	close(a->fd);
	free(a->path);
	free(a);
}

void spx_http_req_start(struct spx_http_req *req)
{
	clock_gettime(CLOCK_MONOTONIC, &req->t0);
	clock_gettime(CLOCK_REALTIME, &req->wall);
}

/* One field: "-" when empty; bytes that would break the line or its
 * fields (controls, space, non-ASCII, '"', '\') as \xHH. */
static void field(struct spx_buf *b, const char *s, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (!s || !*s) {
		spx_buf_adds(b, "-");
		return;
	}
	while (*s && n < max) {
		size_t run = 0;
		unsigned char c;

		/* A run of plain characters in one copy. */
		while (n + run < max && (c = (unsigned char)s[run]) > 0x20 &&
		       c < 0x7f && c != '"' && c != '\\')
			run++;
		spx_buf_add(b, s, run);
		s += run;
		n += run;
		if (*s && n < max) {
			char e[4] = { '\\', 'x', hex[(unsigned char)*s >> 4],
				      hex[(unsigned char)*s & 15] };

			spx_buf_add(b, e, 4);
			s++;
			n++;
		}
	}
	if (*s)
		spx_buf_adds(b, "...");
}

/* v in decimal, zero-padded to width digits (the line is written for
 * every request: no printf). */
static void add_dec(struct spx_buf *b, unsigned long long v, int width)
{
	char d[24];
	int n = 0;

	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < (int)sizeof(d));
	while (n < width && n < (int)sizeof(d))
		d[n++] = '0';
	while (n)
		spx_buf_addc(b, d[--n]);
}

static const char *const service_names[] = { "ec2", "s3" };

size_t spx_http_alog_format(char *buf, size_t size,
			    const struct spx_http_req *req,
			    const struct spx_http_outcome *o)
{
	struct spx_buf b = SPX_BUF_INIT;
	const struct spx_http_note *n = &req->note;
	struct timespec wall = req->wall;
	struct tm tm;
	int64_t us;
	char path[4096];
	size_t len;

	if (!size)
		return 0;
	if (!wall.tv_sec)
		clock_gettime(CLOCK_REALTIME, &wall);
	gmtime_r(&wall.tv_sec, &tm);
	us = (int64_t)(o->t1.tv_sec - req->t0.tv_sec) * 1000000 +
	     (o->t1.tv_nsec - req->t0.tv_nsec) / 1000;
	if (!req->t0.tv_sec || us < 0)
		us = 0;
	add_dec(&b, (unsigned)(tm.tm_year + 1900), 4);
	spx_buf_addc(&b, '-');
	add_dec(&b, (unsigned)(tm.tm_mon + 1), 2);
	spx_buf_addc(&b, '-');
	add_dec(&b, (unsigned)tm.tm_mday, 2);
	spx_buf_addc(&b, 'T');
	add_dec(&b, (unsigned)tm.tm_hour, 2);
	spx_buf_addc(&b, ':');
	add_dec(&b, (unsigned)tm.tm_min, 2);
	spx_buf_addc(&b, ':');
	add_dec(&b, (unsigned)tm.tm_sec, 2);
	spx_buf_addc(&b, '.');
	add_dec(&b, (unsigned long long)(wall.tv_nsec / 1000000), 3);
	spx_buf_adds(&b, "Z ");
	field(&b, n->id, sizeof(n->id));
	spx_buf_addc(&b, ' ');
	field(&b, req->remote, sizeof(req->remote));
	spx_buf_addc(&b, ' ');
	field(&b, n->principal, sizeof(n->principal));
	spx_buf_addc(&b, ' ');
	field(&b,
	      n->api[0] ? n->api
	      : (unsigned)req->service < SPX_ARRAY_SIZE(service_names)
		      ? service_names[req->service]
		      : NULL,
	      sizeof(n->api));
	spx_buf_addc(&b, ' ');
	field(&b, n->op, sizeof(n->op));
	spx_buf_addc(&b, ' ');
	field(&b, req->method, 32);
	spx_buf_addc(&b, ' ');
	/* The path without the query: presigned URLs carry credentials. */
	len = req->path ? strcspn(req->path, "?") : 0;
	if (len >= sizeof(path))
		len = sizeof(path) - 1;
	memcpy(path, req->path ? req->path : "", len);
	path[len] = '\0';
	field(&b, path, 1024);
	spx_buf_addc(&b, ' ');
	if (o->status > 0)
		add_dec(&b, (unsigned)o->status, 1);
	else
		spx_buf_addc(&b, '-');
	spx_buf_addc(&b, ' ');
	field(&b, n->error, sizeof(n->error));
	spx_buf_addc(&b, ' ');
	add_dec(&b, (unsigned long long)o->in, 1);
	spx_buf_addc(&b, ' ');
	add_dec(&b, (unsigned long long)o->out, 1);
	spx_buf_addc(&b, ' ');
	add_dec(&b, (unsigned long long)(us / 1000), 1);
	spx_buf_addc(&b, '.');
	add_dec(&b, (unsigned long long)(us % 1000), 3);
	spx_buf_addc(&b, ' ');
	field(&b, o->end, 16);
	spx_buf_addc(&b, ' ');
	/* Last, so that a reader splitting on spaces keeps the fields before
	 * it in their places whatever a client calls itself. */
	field(&b, spx_kv_geti(&req->headers, "User-Agent"), 256);
	spx_buf_addc(&b, '\n');
	len = b.len < size - 1 ? b.len : size - 1;
	memcpy(buf, b.p, len);
	buf[len] = '\0';
	/* A line cut short still ends the line. */
	if (len && buf[len - 1] != '\n')
		buf[len - 1] = '\n';
	spx_buf_release(&b);
	return len;
}

void spx_http_alog_write(struct spx_http_alog *a,
			 const struct spx_http_req *req,
			 const struct spx_http_outcome *o)
{
	char line[8192];
	size_t n;

	if (!a)
		return;
	n = spx_http_alog_format(line, sizeof(line), req, o);
	/* One write per line (O_APPEND): threads never interleave. A full
	 * disk loses lines, never the request. */
	if (write(a->fd, line, n) < 0)
		return;
}
