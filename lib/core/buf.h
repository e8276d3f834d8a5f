/* buf.h: a growable, always NUL-terminated byte buffer (git's strbuf).
 *
 *   struct spx_buf b = SPX_BUF_INIT;
 *   spx_buf_addf(&b, "%d", 42);
 *   use(b.p, b.len);
 *   spx_buf_release(&b);
 *
 * b.p is never NULL after init. Allocation failure exits 111.
 * spx_buf_detach() hands the memory to the caller (who frees it) and
 * leaves the buffer empty. */
#ifndef SPX_BUF_H
#define SPX_BUF_H

#include <stddef.h>

struct spx_buf {
	char *p;
	size_t len;
	size_t cap;
};

extern char spx_buf_empty[];
#define SPX_BUF_INIT { spx_buf_empty, 0, 0 }

void spx_buf_init(struct spx_buf *b, size_t hint);
void spx_buf_release(struct spx_buf *b);
char *spx_buf_detach(struct spx_buf *b, size_t *len);
void spx_buf_grow(struct spx_buf *b, size_t extra);
void spx_buf_reset(struct spx_buf *b);
void spx_buf_setlen(struct spx_buf *b, size_t len);
void spx_buf_add(struct spx_buf *b, const void *data, size_t n);
void spx_buf_adds(struct spx_buf *b, const char *s);
void spx_buf_addc(struct spx_buf *b, char c);
void spx_buf_addf(struct spx_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Read a whole file into b, failing (spx_error, -1) past max bytes. */
int spx_buf_read_file(struct spx_buf *b, const char *path, size_t max);
/* The same from an open descriptor (path names it in errors). */
int spx_buf_read_fd(struct spx_buf *b, int fd, const char *path, size_t max);

#endif
