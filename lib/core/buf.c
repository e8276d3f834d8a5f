#include "spx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char spx_buf_empty[1];

void spx_buf_init(struct spx_buf *b, size_t hint)
{
	b->p = spx_buf_empty;
	b->len = b->cap = 0;
	if (hint)
		spx_buf_grow(b, hint);
}

void spx_buf_release(struct spx_buf *b)
{
	if (b->cap)
		free(b->p);
	spx_buf_init(b, 0);
}

char *spx_buf_detach(struct spx_buf *b, size_t *len)
{
	char *p;

	if (!b->cap)
		spx_buf_grow(b, 0);
	p = b->p;
	if (len)
		*len = b->len;
	spx_buf_init(b, 0);
	return p;
}

void spx_buf_grow(struct spx_buf *b, size_t extra)
{
	size_t need;

	if (extra > SIZE_MAX - b->len - 1)
		spx_die(SPX_FAIL, "buffer size overflow");
	need = b->len + extra + 1;
	if (need <= b->cap)
		return;
	if (!b->cap)
		b->p = NULL;
	b->cap = b->cap ? b->cap : 64;
	while (b->cap < need)
		b->cap = b->cap > SIZE_MAX / 2 ? need : b->cap * 2;
	b->p = spx_realloc(b->p, b->cap);
	b->p[b->len] = '\0';
}

void spx_buf_reset(struct spx_buf *b)
{
	spx_buf_setlen(b, 0);
}

void spx_buf_setlen(struct spx_buf *b, size_t len)
{
	if (len > (b->cap ? b->cap - 1 : 0))
		spx_die(SPX_FAIL, "spx_buf_setlen beyond allocation");
	b->len = len;
	if (b->cap)
		b->p[len] = '\0';
}

void spx_buf_add(struct spx_buf *b, const void *data, size_t n)
{
	if (!n)
		return;
	spx_buf_grow(b, n);
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void spx_buf_adds(struct spx_buf *b, const char *s)
{
	spx_buf_add(b, s, strlen(s));
}

void spx_buf_addc(struct spx_buf *b, char c)
{
	spx_buf_grow(b, 1);
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
}

void spx_buf_addf(struct spx_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		spx_die(SPX_FAIL, "bad format string");
	spx_buf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

int spx_buf_read_fd(struct spx_buf *b, int fd, const char *path, size_t max)
{
	char tmp[65536];
	ssize_t n;

	for (;;) {
		n = read(fd, tmp, sizeof(tmp));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return spx_error_errno(SPX_FAIL, "cannot read '%s'", path);
		if (n == 0)
			return 0;
		if (b->len + (size_t)n > max)
			return spx_error(SPX_USAGE,
					 "'%s' is larger than %zu bytes", path,
					 max);
		spx_buf_add(b, tmp, (size_t)n);
	}
}

int spx_buf_read_file(struct spx_buf *b, const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return spx_error_errno(errno == ENOENT ? SPX_NO : SPX_FAIL,
				       "cannot open '%s'", path);
	rc = spx_buf_read_fd(b, fd, path, max);
	close(fd);
	return rc;
}
