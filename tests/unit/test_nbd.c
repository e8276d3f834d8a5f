/* lib/vol/nbd.c: the server side of the NBD handshake over an in-memory
 * client (what it sends is a script, what the server answers is read
 * back reply by reply), and the checks of requests. */
#include "spx.h"

#include <endian.h>

#include "t.h"
#include "vol/nbd.h"

#define IHAVEOPT 0x49484156454f5054ull
#define REPLY_MAGIC 0x3e889045565a9ull

struct mem {
	const uint8_t *in;
	size_t n;
	uint8_t out[1 << 16];
	size_t outn, at;
};

static int mrd(void *ctx, void *buf, size_t n)
{
	struct mem *m = ctx;

	if (n > m->n)
		return -1;
	memcpy(buf, m->in, n);
	m->in += n;
	m->n -= n;
	return 0;
}

static int mwr(void *ctx, const void *buf, size_t n)
{
	struct mem *m = ctx;

	if (n > sizeof(m->out) - m->outn)
		return -1;
	memcpy(m->out + m->outn, buf, n);
	m->outn += n;
	return 0;
}

static int handle;

static int blist(void *ctx, int (*add)(void *, const char *), void *actx)
{
	return add(actx, "vol-a") < 0 || add(actx, "vol-b") < 0 ? -1 : 0;
}

static int bopen(void *ctx, const char *name, bool go, uint64_t *size,
		 void **h, const char **msg)
{
	if (!strcmp(name, "vol-a")) {
		*size = 5 << 20;
		if (go)
			*h = &handle;
		return 0;
	}
	errno = !strcmp(name, "vol-b") ? EACCES : ENOENT;
	return -1;
}

/* The client's bytes. */
struct script {
	uint8_t b[1 << 17];
	size_t n;
};

static void s32(struct script *s, uint32_t v)
{
	v = htobe32(v);
	memcpy(s->b + s->n, &v, 4);
	s->n += 4;
}

static void s64(struct script *s, uint64_t v)
{
	v = htobe64(v);
	memcpy(s->b + s->n, &v, 8);
	s->n += 8;
}

static void sbytes(struct script *s, const void *p, size_t n)
{
	if (n) /* p may be NULL then, which memcpy does not take */
		memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void sopt(struct script *s, uint32_t opt, const void *d, uint32_t n)
{
	s64(s, IHAVEOPT);
	s32(s, opt);
	s32(s, n);
	sbytes(s, d, n);
}

/* GO or INFO data: a name and the infos asked for. */
static void sgo(struct script *s, uint32_t opt, const char *name, bool bs)
{
	uint8_t d[64];
	size_t n = strlen(name);
	uint32_t l = htobe32((uint32_t)n);
	uint16_t k = htobe16(bs ? 1 : 0), i = htobe16(3);

	memcpy(d, &l, 4);
	memcpy(d + 4, name, n);
	memcpy(d + 4 + n, &k, 2);
	if (bs)
		memcpy(d + 6 + n, &i, 2);
	sopt(s, opt, d, (uint32_t)(6 + n + (bs ? 2 : 0)));
}

static void smeta(struct script *s, uint32_t opt, const char *name,
		  const char *q)
{
	uint8_t d[128];
	size_t n = strlen(name), qn = q ? strlen(q) : 0, at = 0;
	uint32_t v;

	v = htobe32((uint32_t)n);
	memcpy(d, &v, 4);
	memcpy(d + 4, name, n);
	at = 4 + n;
	v = htobe32(q ? 1 : 0);
	memcpy(d + at, &v, 4);
	at += 4;
	if (q) {
		v = htobe32((uint32_t)qn);
		memcpy(d + at, &v, 4);
		memcpy(d + at + 4, q, qn);
		at += 4 + qn;
	}
	sopt(s, opt, d, (uint32_t)at);
}

static uint32_t g32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t g64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

/* The next option reply: its type, and its data at *d (length *n). */
static uint32_t next(struct mem *m, const uint8_t **d, uint32_t *n)
{
	uint32_t type, len;

	if (m->outn - m->at < 20 || g64(m->out + m->at) != REPLY_MAGIC)
		return 0;
	type = g32(m->out + m->at + 12);
	len = g32(m->out + m->at + 16);
	*d = m->out + m->at + 20;
	*n = len;
	m->at += 20 + len;
	return type;
}

static int run(const struct script *s, struct mem *m,
	       struct spx_nbd_session *ss)
{
	struct spx_nbd_io io = { mrd, mwr, m };
	struct spx_nbd_backend be = { blist, bopen, NULL };

	memset(m, 0, sizeof(*m));
	m->in = s->b;
	m->n = s->n;
	return spx_nbd_handshake(&io, &be, ss);
}

static void test_go(void)
{
	static struct script s;
	static struct mem m;
	struct spx_nbd_session ss;
	const uint8_t *d;
	uint32_t n;

	s.n = 0;
	s32(&s, 3); /* fixed newstyle, no zeroes */
	sopt(&s, 8, NULL, 0);
	smeta(&s, 10, "vol-a", "base:allocation");
	sgo(&s, 7, "vol-a", true);
	T_INT(run(&s, &m, &ss), 1, "GO: transmission");
	T_OK(!memcmp(m.out, "NBDMAGICIHAVEOPT\0\3", 18), "the hello");
	m.at = 18;
	T_INT(next(&m, &d, &n), 1, "STRUCTURED_REPLY: ACK");
	T_INT(next(&m, &d, &n), 4, "SET_META_CONTEXT: a context");
	T_INT(n, 4 + 15, "its id and name");
	T_OK(n == 19 && !memcmp(d + 4, "base:allocation", 15), "base:allocation");
	T_INT(next(&m, &d, &n), 1, "then ACK");
	T_INT(next(&m, &d, &n), 3, "GO: INFO_EXPORT");
	T_INT(n, 12, "its length");
	T_OK(g64(d + 2) == 5 << 20, "the size");
	T_OK((d[10] << 8 | d[11]) == ss.tflags, "the flags");
	T_OK(ss.tflags & (1 << 8) && ss.tflags & (1 << 7) && ss.tflags & 1,
	     "multi-conn, DF, HAS_FLAGS");
	T_INT(next(&m, &d, &n), 3, "GO: INFO_BLOCK_SIZE, asked for");
	T_OK(n == 14 && g32(d + 2) == 1 && g32(d + 6) == 4096 &&
		     g32(d + 10) == SPX_NBD_REQ_MAX,
	     "1, 4096, 32 MiB");
	T_INT(next(&m, &d, &n), 1, "GO: ACK");
	T_INT(m.at, m.outn, "nothing more");
	T_OK(ss.handle == &handle && ss.structured && ss.meta_base,
	     "the session");

	/* Without structured replies: no DF, no meta context. */
	s.n = 0;
	s32(&s, 1);
	smeta(&s, 10, "vol-a", "base:allocation");
	sgo(&s, 7, "vol-a", false);
	T_INT(run(&s, &m, &ss), 1, "GO, plain");
	m.at = 18;
	T_INT(next(&m, &d, &n), (1u << 31) | 3,
	      "SET_META_CONTEXT before STRUCTURED_REPLY: ERR_INVALID");
	T_INT(next(&m, &d, &n), 3, "INFO_EXPORT");
	T_INT(next(&m, &d, &n), 1, "ACK, no block size unasked");
	T_OK(!(ss.tflags & (1 << 7)) && !ss.meta_base && !ss.structured,
	     "no DF, no meta context");

	/* A meta context set for another export does not follow GO. */
	s.n = 0;
	s32(&s, 1);
	sopt(&s, 8, NULL, 0);
	smeta(&s, 10, "vol-x", "base:allocation");
	sgo(&s, 7, "vol-a", false);
	T_INT(run(&s, &m, &ss), 1, "GO another export");
	T_OK(!ss.meta_base, "its meta context dropped");
}

static void test_errors(void)
{
	static struct script s;
	static struct mem m;
	static uint8_t big[70000];
	struct spx_nbd_session ss;
	const uint8_t *d;
	uint32_t n;

	s.n = 0;
	s32(&s, 1);
	sgo(&s, 7, "vol-nope", false);
	sgo(&s, 6, "vol-b", false);
	sopt(&s, 99, "x", 1);
	sopt(&s, 1000, big, sizeof(big));
	sopt(&s, 3, NULL, 0);
	smeta(&s, 9, "vol-a", NULL); /* structured replies not asked for */
	sopt(&s, 2, NULL, 0);
	T_INT(run(&s, &m, &ss), 0, "ABORT ends it");
	T_OK(!ss.handle, "no handle");
	m.at = 18;
	T_INT(next(&m, &d, &n), (1u << 31) | 6, "unknown export: ERR_UNKNOWN");
	T_OK(n && !memchr(d, 0, n), "with a message");
	T_INT(next(&m, &d, &n), (1u << 31) | 2, "refused: ERR_POLICY");
	T_INT(next(&m, &d, &n), (1u << 31) | 1, "unknown option: ERR_UNSUP");
	T_INT(next(&m, &d, &n), (1u << 31) | 9, "70000 bytes: ERR_TOO_BIG");
	T_INT(next(&m, &d, &n), 2, "LIST: a server");
	T_OK(n == 9 && g32(d) == 5 && !memcmp(d + 4, "vol-a", 5), "vol-a");
	T_INT(next(&m, &d, &n), 2, "LIST: another");
	T_INT(next(&m, &d, &n), 1, "LIST: ACK");
	T_INT(next(&m, &d, &n), (1u << 31) | 3, "LIST_META_CONTEXT: ERR_INVALID");
	T_INT(next(&m, &d, &n), 1, "ABORT: ACK");

	/* EXPORT_NAME: the old way, with and without the zeroes. */
	s.n = 0;
	s32(&s, 3);
	sopt(&s, 1, "vol-a", 5);
	T_INT(run(&s, &m, &ss), 1, "EXPORT_NAME");
	T_INT(m.outn, 18 + 10, "size and flags, no zeroes");
	s.n = 0;
	s32(&s, 1);
	sopt(&s, 1, "vol-a", 5);
	T_INT(run(&s, &m, &ss), 1, "EXPORT_NAME");
	T_INT(m.outn, 18 + 134, "size, flags and 124 zeroes");
	s.n = 0;
	s32(&s, 1);
	sopt(&s, 1, "vol-b", 5);
	T_INT(run(&s, &m, &ss), -1, "EXPORT_NAME refused: the end");

	/* What ends it. */
	s.n = 0;
	s32(&s, 1u << 5);
	T_INT(run(&s, &m, &ss), -1, "unknown client flags");
	s.n = 0;
	s32(&s, 1);
	s64(&s, 0x1122334455667788ull);
	s32(&s, 7);
	s32(&s, 0);
	T_INT(run(&s, &m, &ss), -1, "an option without IHAVEOPT");
	s.n = 0;
	s32(&s, 1);
	sopt(&s, 1, "vol-a\0x", 7);
	T_INT(run(&s, &m, &ss), -1, "EXPORT_NAME with a NUL");
	s.n = 0;
	s32(&s, 1);
	s64(&s, IHAVEOPT);
	s32(&s, 3);
	s32(&s, 5 << 20);
	T_INT(run(&s, &m, &ss), -1, "an option over 1 MiB: not skipped");
	s.n = 0;
	s32(&s, 1);
	T_INT(run(&s, &m, &ss), 0, "gone between options");
	s.n = 0;
	s32(&s, 1);
	for (int i = 0; i < SPX_NBD_OPTS_MAX + 1; i++)
		sopt(&s, 8, NULL, 0);
	T_INT(run(&s, &m, &ss), -1, "more than SPX_NBD_OPTS_MAX options");
}

static void test_requests(void)
{
	struct spx_nbd_session ss = { .size = 1 << 20, .structured = true };
	uint8_t h[SPX_NBD_REQ_SIZE];
	struct spx_nbd_req r;
	uint32_t v;
	uint64_t w;

	v = htobe32(0x25609513);
	memcpy(h, &v, 4);
	h[4] = 0, h[5] = 1;	/* FUA */
	h[6] = 0, h[7] = 1;	/* WRITE */
	w = htobe64(42);
	memcpy(h + 8, &w, 8);
	w = htobe64(4096);
	memcpy(h + 16, &w, 8);
	v = htobe32(512);
	memcpy(h + 24, &v, 4);
	T_INT(spx_nbd_req_parse(h, &r), 0, "a request");
	T_OK(r.type == 1 && r.flags == 1 && r.cookie == 42 && r.offset == 4096 &&
		     r.len == 512,
	     "its fields");
	h[0] ^= 1;
	T_INT(spx_nbd_req_parse(h, &r), -1, "a bad magic");
#define CHECK(t, f, o, l, want, what)                                      \
	do {                                                               \
		struct spx_nbd_req q = { .type = (t), .flags = (f),        \
					 .offset = (o), .len = (l) };      \
		T_INT(spx_nbd_req_check(&ss, &q), (want), what);           \
	} while (0)
	CHECK(0, 0, 0, 4096, 0, "a read");
	CHECK(0, 0, (1 << 20) - 4096, 4096, 0, "a read to the end");
	CHECK(0, 0, (1 << 20) - 4096, 4097, SPX_NBD_EINVAL, "a read past it");
	CHECK(0, 0, UINT64_MAX, 2, SPX_NBD_EINVAL, "an offset that wraps");
	CHECK(1, 0, 1 << 20, 1, SPX_NBD_ENOSPC, "a write past the end");
	CHECK(1, 0, 0, SPX_NBD_REQ_MAX + 1, SPX_NBD_EOVERFLOW, "a write too big");
	CHECK(0, 0, 0, 0, SPX_NBD_EINVAL, "a read of nothing");
	CHECK(0, 1, 0, 512, SPX_NBD_EINVAL, "FUA on a read");
	CHECK(0, 4, 0, 512, 0, "DF on a read, structured");
	CHECK(3, 0, 0, 0, 0, "FLUSH");
	CHECK(3, 0, 0, 1, SPX_NBD_EINVAL, "FLUSH with a length");
	CHECK(6, 2 | 16 | 1, 0, 4096, 0, "WRITE_ZEROES, NO_HOLE, FAST_ZERO, FUA");
	CHECK(4, 2, 0, 4096, SPX_NBD_EINVAL, "NO_HOLE on a TRIM");
	CHECK(7, 8, 0, 4096, SPX_NBD_EINVAL, "BLOCK_STATUS, no meta context");
	CHECK(2, 0, 0, 0, 0, "DISC");
	CHECK(9, 0, 0, 4096, SPX_NBD_EINVAL, "an unknown command");
	ss.meta_base = true;
	CHECK(7, 8, 0, 4096, 0, "BLOCK_STATUS, REQ_ONE");
	ss.structured = false;
	CHECK(0, 4, 0, 512, SPX_NBD_EINVAL, "DF without structured replies");
#undef CHECK
	T_INT(spx_nbd_error(ENOSPC), SPX_NBD_ENOSPC, "ENOSPC");
	T_INT(spx_nbd_error(EDQUOT), SPX_NBD_ENOSPC, "EDQUOT");
	T_INT(spx_nbd_error(EACCES), SPX_NBD_EPERM, "EACCES");
	T_INT(spx_nbd_error(EBADF), SPX_NBD_EIO, "another: EIO");
	T_INT(spx_nbd_error(0), 0, "none");
}

int main(void)
{
	test_go();
	test_errors();
	test_requests();
	return t_done();
}
