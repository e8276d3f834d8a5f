/* fuzz_nbd: the NBD handshake and request parsing of spx-nbd
 * (lib/vol/nbd.h), as a client would send them: the input is the byte
 * stream from the client, the server's replies are checked for shape
 * and dropped. Exports: "a" opens, "b" is refused, others are unknown.
 * What the handshake agrees must be consistent (meta context only with
 * structured replies, a handle only on success), and every request
 * header after it is parsed and checked against the session. */
#include "spx.h"

#include "vol/nbd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct stream {
	const uint8_t *p;
	size_t n;
	size_t written;
};

static int rd(void *ctx, void *buf, size_t n)
{
	struct stream *s = ctx;

	if (n > s->n)
		return -1;
	memcpy(buf, s->p, n);
	s->p += n;
	s->n -= n;
	return 0;
}

static int wr(void *ctx, const void *buf, size_t n)
{
	struct stream *s = ctx;

	/* Every write is at least a reply header's worth, or the hello,
	 * or the EXPORT_NAME answer (10 or 134 bytes). */
	if (!buf || !n)
		abort();
	s->written += n;
	return 0;
}

static int handle_a;

static int list(void *ctx, int (*add)(void *, const char *), void *actx)
{
	return add(actx, "a") < 0 || add(actx, "b") < 0 ? -1 : 0;
}

static int open_(void *ctx, const char *name, bool go, uint64_t *size,
		 void **handle, const char **msg)
{
	if (strlen(name) > SPX_NBD_NAME_MAX)
		abort();
	if (!strcmp(name, "a")) {
		*size = 1 << 20;
		if (go)
			*handle = &handle_a;
		return 0;
	}
	errno = !strcmp(name, "b") ? EACCES : ENOENT;
	return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stream st = { data, size, 0 };
	struct spx_nbd_io io = { rd, wr, &st };
	struct spx_nbd_backend be = { list, open_, NULL };
	struct spx_nbd_session s;
	int r = spx_nbd_handshake(&io, &be, &s);

	if (r != 1 && r != 0 && r != -1)
		abort();
	if (s.meta_base && !s.structured)
		abort();
	if (r == 1) {
		struct spx_nbd_req q;

		if (s.handle != &handle_a || s.size != 1 << 20)
			abort();
		while (st.n >= SPX_NBD_REQ_SIZE) {
			uint32_t e;

			if (spx_nbd_req_parse(st.p, &q) < 0)
				break;
			e = spx_nbd_req_check(&s, &q);
			/* What passes is inside the export and bounded. */
			if (!e && q.type != SPX_NBD_CMD_DISC &&
			    q.type != SPX_NBD_CMD_FLUSH &&
			    (q.offset > s.size || q.len > s.size - q.offset ||
			     !q.len))
				abort();
			st.p += SPX_NBD_REQ_SIZE;
			st.n -= SPX_NBD_REQ_SIZE;
		}
	} else if (s.handle && s.handle != &handle_a) {
		abort();
	}
	return 0;
}
