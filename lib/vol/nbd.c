/* nbd.c: the server side of the NBD protocol (nbd.h). */
#include "spx.h"

#include <endian.h>

#include "vol/nbd.h"

#define NBDMAGIC 0x4e42444d41474943ull
#define IHAVEOPT 0x49484156454f5054ull
#define REPLY_MAGIC 0x3e889045565a9ull
#define REQ_MAGIC 0x25609513u
#define SIMPLE_MAGIC 0x67446698u
#define CHUNK_MAGIC 0x668e33efu

#define FLAG_FIXED_NEWSTYLE 1u
#define FLAG_NO_ZEROES 2u

#define OPT_EXPORT_NAME 1
#define OPT_ABORT 2
#define OPT_LIST 3
#define OPT_INFO 6
#define OPT_GO 7
#define OPT_STRUCTURED_REPLY 8
#define OPT_LIST_META_CONTEXT 9
#define OPT_SET_META_CONTEXT 10

#define REP_ACK 1u
#define REP_SERVER 2u
#define REP_INFO 3u
#define REP_META_CONTEXT 4u
#define REP_ERR(n) ((1u << 31) | (n))
#define ERR_UNSUP REP_ERR(1)
#define ERR_POLICY REP_ERR(2)
#define ERR_INVALID REP_ERR(3)
#define ERR_UNKNOWN REP_ERR(6)
#define ERR_TOO_BIG REP_ERR(9)

#define INFO_EXPORT 0
#define INFO_BLOCK_SIZE 3

#define TF_HAS_FLAGS (1u << 0)
#define TF_SEND_FLUSH (1u << 2)
#define TF_SEND_FUA (1u << 3)
#define TF_SEND_TRIM (1u << 5)
#define TF_SEND_WRITE_ZEROES (1u << 6)
#define TF_SEND_DF (1u << 7)
#define TF_CAN_MULTI_CONN (1u << 8)
#define TF_SEND_CACHE (1u << 10)
#define TF_SEND_FAST_ZERO (1u << 11)

static const char base_allocation[] = "base:allocation";

static void put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return be16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

/* An option reply with len bytes of data (header and data in one
 * write: a client reads them as they come either way). */
static int reply(const struct spx_nbd_io *io, uint32_t opt, uint32_t type,
		 const void *data, uint32_t len)
{
	uint8_t buf[20 + 64];
	uint8_t *p = len <= 64 ? buf : malloc(20 + (size_t)len);
	int rc;

	if (!p)
		return -1;
	put64(p, REPLY_MAGIC);
	put32(p + 8, opt);
	put32(p + 12, type);
	put32(p + 16, len);
	if (len)
		memcpy(p + 20, data, len);
	rc = io->write(io->ctx, p, 20 + (size_t)len);
	if (p != buf)
		free(p);
	return rc;
}

/* An error reply with a message for people. */
static int reply_err(const struct spx_nbd_io *io, uint32_t opt,
		     uint32_t type, const char *msg)
{
	return reply(io, opt, type, msg, msg ? (uint32_t)strlen(msg) : 0);
}

/* A name from the client: at most SPX_NBD_NAME_MAX bytes, no NUL. */
static bool name_ok(const uint8_t *p, uint32_t len)
{
	return len <= SPX_NBD_NAME_MAX && !memchr(p, 0, len);
}

static uint16_t tflags(const struct spx_nbd_session *s)
{
	uint16_t f = TF_HAS_FLAGS | TF_SEND_FLUSH | TF_SEND_FUA |
		     TF_SEND_TRIM | TF_SEND_WRITE_ZEROES | TF_CAN_MULTI_CONN |
		     TF_SEND_CACHE | TF_SEND_FAST_ZERO;

	/* A read is always one chunk: DF only means something (and may
	 * only be sent) with structured replies. */
	return s->structured ? (uint16_t)(f | TF_SEND_DF) : f;
}

struct lister {
	const struct spx_nbd_io *io;
	int rc;
};

static int list_add(void *actx, const char *name)
{
	struct lister *l = actx;
	size_t n = strlen(name);
	uint8_t *p;

	if (l->rc < 0 || n > SPX_NBD_NAME_MAX)
		return l->rc;
	p = malloc(4 + n);
	if (!p)
		return l->rc = -1;
	put32(p, (uint32_t)n);
	memcpy(p + 4, name, n);
	l->rc = reply(l->io, OPT_LIST, REP_SERVER, p, (uint32_t)(4 + n));
	free(p);
	return l->rc;
}

/* The export of an option, as the backend answered: 0 and open, 1 when
 * an error reply was sent, -1 when the transport failed. */
static int open_export(const struct spx_nbd_io *io,
		       const struct spx_nbd_backend *be, uint32_t opt,
		       const char *name, bool go, struct spx_nbd_session *s)
{
	const char *msg = NULL;
	uint32_t err;

	errno = 0;
	if (be->open(be->ctx, name, go, &s->size, &s->handle, &msg) == 0)
		return 0;
	err = errno == ENOENT			 ? ERR_UNKNOWN
	      : errno == EACCES || errno == EPERM ? ERR_POLICY
						 : ERR_UNKNOWN;
	if (!msg)
		msg = err == ERR_POLICY ? "access to this export is refused"
		      : errno == ENOENT ? "no such export"
					: "the export cannot be opened";
	return reply_err(io, opt, err, msg) < 0 ? -1 : 1;
}

/* NBD_OPT_INFO and NBD_OPT_GO: 1 when transmission begins (GO), 0 to go
 * on negotiating, -1 to end. */
static int info_go(const struct spx_nbd_io *io,
		   const struct spx_nbd_backend *be, uint32_t opt,
		   const uint8_t *d, uint32_t len, const char *meta_name,
		   struct spx_nbd_session *s)
{
	uint32_t nlen, ninfo;
	bool block_size = false;
	char name[SPX_NBD_NAME_MAX + 1];
	uint8_t buf[14];
	int r;

	if (len < 6 || (nlen = get32(d)) > len - 6 || !name_ok(d + 4, nlen) ||
	    (ninfo = get16(d + 4 + nlen)) * 2u != len - 6 - nlen)
		return reply_err(io, opt, ERR_INVALID,
				 "malformed request") < 0 ? -1 : 0;
	memcpy(name, d + 4, nlen);
	name[nlen] = 0;
	for (uint32_t i = 0; i < ninfo; i++)
		if (get16(d + 6 + nlen + 2 * i) == INFO_BLOCK_SIZE)
			block_size = true;
	if ((r = open_export(io, be, opt, name, opt == OPT_GO, s)))
		return r < 0 ? -1 : 0;
	s->tflags = tflags(s);
	put16(buf, INFO_EXPORT);
	put64(buf + 2, s->size);
	put16(buf + 10, s->tflags);
	r = reply(io, opt, REP_INFO, buf, 12);
	if (!r && block_size) {
		put16(buf, INFO_BLOCK_SIZE);
		put32(buf + 2, 1);
		put32(buf + 6, 4096);
		put32(buf + 10, SPX_NBD_REQ_MAX);
		r = reply(io, opt, REP_INFO, buf, 14);
	}
	if (!r)
		r = reply(io, opt, REP_ACK, NULL, 0);
	if (opt != OPT_GO)
		return r < 0 ? -1 : 0;
	/* The meta context was set for the export chosen now, or for none. */
	if (s->meta_base && (!meta_name || strcmp(meta_name, name)))
		s->meta_base = false;
	return r < 0 ? -1 : 1;
}

/* Does a meta context query select base:allocation? For LIST, "base:"
 * does too. */
static bool query_base(const uint8_t *q, uint32_t n, bool list)
{
	return (n == sizeof(base_allocation) - 1 &&
		!memcmp(q, base_allocation, n)) ||
	       (list && n == 5 && !memcmp(q, "base:", 5));
}

/* NBD_OPT_LIST_META_CONTEXT and NBD_OPT_SET_META_CONTEXT: 0, or -1. */
static int meta(const struct spx_nbd_io *io, uint32_t opt, const uint8_t *d,
		uint32_t len, char *meta_name, struct spx_nbd_session *s)
{
	uint32_t nlen, nq, at;
	bool list = opt == OPT_LIST_META_CONTEXT, base = false;
	uint8_t buf[4 + sizeof(base_allocation) - 1];

	if (!s->structured)
		return reply_err(io, opt, ERR_INVALID,
				 "structured replies first") < 0 ? -1 : 0;
	if (len < 8 || (nlen = get32(d)) > len - 8 || !name_ok(d + 4, nlen))
		goto bad;
	nq = get32(d + 4 + nlen);
	at = 8 + nlen;
	for (uint32_t i = 0; i < nq; i++) {
		uint32_t ql;

		if (len - at < 4 || (ql = get32(d + at)) > len - at - 4 ||
		    !name_ok(d + at + 4, ql))
			goto bad;
		if (query_base(d + at + 4, ql, list))
			base = true;
		at += 4 + ql;
	}
	if (at != len)
		goto bad;
	if (list && !nq)
		base = true;
	if (!list) {
		memcpy(meta_name, d + 4, nlen);
		meta_name[nlen] = 0;
		s->meta_base = base;
	}
	if (base) {
		put32(buf, SPX_NBD_META_BASE);
		memcpy(buf + 4, base_allocation, sizeof(base_allocation) - 1);
		if (reply(io, opt, REP_META_CONTEXT, buf, sizeof(buf)) < 0)
			return -1;
	}
	return reply(io, opt, REP_ACK, NULL, 0);
bad:
	if (!list)
		s->meta_base = false;
	return reply_err(io, opt, ERR_INVALID, "malformed request") < 0 ? -1
									: 0;
}

/* Read and drop n bytes of an option's data that is too big. */
static int skip(const struct spx_nbd_io *io, uint32_t n)
{
	uint8_t buf[4096];

	while (n) {
		uint32_t k = n < sizeof(buf) ? n : (uint32_t)sizeof(buf);

		if (io->read(io->ctx, buf, k) < 0)
			return -1;
		n -= k;
	}
	return 0;
}

int spx_nbd_handshake(const struct spx_nbd_io *io,
		      const struct spx_nbd_backend *be,
		      struct spx_nbd_session *s)
{
	uint8_t hello[18], cflags[4], h[16];
	char *meta_name = NULL;
	uint8_t *d = NULL;
	int rc = -1;
	bool no_zeroes;

	memset(s, 0, sizeof(*s));
	put64(hello, NBDMAGIC);
	put64(hello + 8, IHAVEOPT);
	put16(hello + 16, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
	if (io->write(io->ctx, hello, sizeof(hello)) < 0 ||
	    io->read(io->ctx, cflags, 4) < 0)
		return -1;
	/* Flags this server does not know end it (as proto.md says). */
	if (get32(cflags) & ~(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
		return -1;
	no_zeroes = get32(cflags) & FLAG_NO_ZEROES;
	d = malloc(SPX_NBD_OPT_MAX);
	meta_name = malloc(SPX_NBD_NAME_MAX + 1);
	if (!d || !meta_name)
		goto out;
	*meta_name = 0;
	for (unsigned n = 0; n < SPX_NBD_OPTS_MAX; n++) {
		uint32_t opt, len;
		int r = 0;

		if (io->read(io->ctx, h, 16) < 0) {
			rc = 0; /* gone between options */
			goto out;
		}
		if (get64(h) != IHAVEOPT)
			goto out;
		opt = get32(h + 8);
		len = get32(h + 12);
		if (len > SPX_NBD_OPT_MAX) {
			if (opt == OPT_EXPORT_NAME || len > SPX_NBD_OPT_SKIP_MAX ||
			    skip(io, len) < 0 ||
			    reply_err(io, opt, ERR_TOO_BIG,
				      "option too long") < 0)
				goto out;
			continue;
		}
		if (len && io->read(io->ctx, d, len) < 0)
			goto out;
		switch (opt) {
		case OPT_EXPORT_NAME: {
			char name[SPX_NBD_NAME_MAX + 1];
			const char *msg;
			uint8_t out[10 + 124];

			/* No way to say why: a refusal closes the
			 * connection. */
			if (!name_ok(d, len))
				goto out;
			memcpy(name, d, len);
			name[len] = 0;
			if (be->open(be->ctx, name, true, &s->size, &s->handle,
				      &msg) < 0)
				goto out;
			if (s->meta_base && strcmp(meta_name, name))
				s->meta_base = false;
			s->tflags = tflags(s);
			memset(out, 0, sizeof(out));
			put64(out, s->size);
			put16(out + 8, s->tflags);
			if (io->write(io->ctx, out, no_zeroes ? 10 : sizeof(out)) == 0)
				rc = 1;
			goto out;
		}
		case OPT_ABORT:
			/* Best effort: the client may be gone already. */
			reply(io, opt, REP_ACK, NULL, 0);
			rc = 0;
			goto out;
		case OPT_LIST: {
			struct lister l = { io, 0 };

			if (len) {
				r = reply_err(io, opt, ERR_INVALID,
					      "LIST takes no data");
				break;
			}
			if (be->list(be->ctx, list_add, &l) < 0 && l.rc >= 0)
				r = reply_err(io, opt, ERR_UNKNOWN,
					      "cannot list the exports");
			else if (l.rc < 0)
				r = -1;
			else
				r = reply(io, opt, REP_ACK, NULL, 0);
			break;
		}
		case OPT_INFO:
		case OPT_GO:
			r = info_go(io, be, opt, d, len,
				    *meta_name ? meta_name : NULL, s);
			if (r == 1) {
				rc = 1;
				goto out;
			}
			break;
		case OPT_STRUCTURED_REPLY:
			if (len) {
				r = reply_err(io, opt, ERR_INVALID,
					      "STRUCTURED_REPLY takes no data");
				break;
			}
			s->structured = true;
			r = reply(io, opt, REP_ACK, NULL, 0);
			break;
		case OPT_LIST_META_CONTEXT:
		case OPT_SET_META_CONTEXT:
			r = meta(io, opt, d, len, meta_name, s);
			break;
		default: /* STARTTLS among them: no TLS on a unix socket */
			r = reply_err(io, opt, ERR_UNSUP, "unsupported option");
		}
		if (r < 0)
			goto out;
	}
out:
	free(d);
	free(meta_name);
	return rc;
}

int spx_nbd_req_parse(const void *p, struct spx_nbd_req *r)
{
	const uint8_t *b = p;

	if (get32(b) != REQ_MAGIC)
		return -1;
	r->flags = get16(b + 4);
	r->type = get16(b + 6);
	r->cookie = get64(b + 8);
	r->offset = get64(b + 16);
	r->len = get32(b + 24);
	return 0;
}

uint32_t spx_nbd_req_check(const struct spx_nbd_session *s,
			   const struct spx_nbd_req *r)
{
	uint32_t allowed;

	switch (r->type) {
	case SPX_NBD_CMD_READ:
		allowed = SPX_NBD_CMD_FLAG_DF;
		break;
	case SPX_NBD_CMD_WRITE:
	case SPX_NBD_CMD_TRIM:
		allowed = SPX_NBD_CMD_FLAG_FUA;
		break;
	case SPX_NBD_CMD_WRITE_ZEROES:
		allowed = SPX_NBD_CMD_FLAG_FUA | SPX_NBD_CMD_FLAG_NO_HOLE |
			  SPX_NBD_CMD_FLAG_FAST_ZERO;
		break;
	case SPX_NBD_CMD_BLOCK_STATUS:
		if (!s->meta_base)
			return SPX_NBD_EINVAL;
		allowed = SPX_NBD_CMD_FLAG_REQ_ONE;
		break;
	case SPX_NBD_CMD_FLUSH:
		return r->flags || r->offset || r->len ? SPX_NBD_EINVAL : 0;
	case SPX_NBD_CMD_CACHE:
	case SPX_NBD_CMD_DISC:
		allowed = 0;
		break;
	default:
		return SPX_NBD_EINVAL;
	}
	if (r->flags & ~allowed)
		return SPX_NBD_EINVAL;
	if (r->type == SPX_NBD_CMD_DISC)
		return 0;
	if ((r->flags & SPX_NBD_CMD_FLAG_DF) && !s->structured)
		return SPX_NBD_EINVAL;
	if ((r->type == SPX_NBD_CMD_READ || r->type == SPX_NBD_CMD_WRITE) &&
	    r->len > SPX_NBD_REQ_MAX)
		return r->type == SPX_NBD_CMD_WRITE ? SPX_NBD_EOVERFLOW
						    : SPX_NBD_EINVAL;
	if (!r->len)
		return SPX_NBD_EINVAL;
	if (r->offset > s->size || r->len > s->size - r->offset)
		return r->type == SPX_NBD_CMD_WRITE ||
				       r->type == SPX_NBD_CMD_TRIM ||
				       r->type == SPX_NBD_CMD_WRITE_ZEROES
			       ? SPX_NBD_ENOSPC
			       : SPX_NBD_EINVAL;
	return 0;
}

void spx_nbd_simple(void *buf, uint64_t cookie, uint32_t err)
{
	uint8_t *p = buf;

	put32(p, SIMPLE_MAGIC);
	put32(p + 4, err);
	put64(p + 8, cookie);
}

void spx_nbd_chunk(void *buf, uint64_t cookie, uint16_t flags,
		   uint16_t type, uint32_t len)
{
	uint8_t *p = buf;

	put32(p, CHUNK_MAGIC);
	put16(p + 4, flags);
	put16(p + 6, type);
	put64(p + 8, cookie);
	put32(p + 16, len);
}

uint32_t spx_nbd_error(int e)
{
	switch (e) {
	case 0:
		return 0;
	case EPERM:
	case EACCES:
	case EROFS:
		return SPX_NBD_EPERM;
	case ENOMEM:
		return SPX_NBD_ENOMEM;
	case EINVAL:
		return SPX_NBD_EINVAL;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return SPX_NBD_ENOSPC;
	case EOVERFLOW:
		return SPX_NBD_EOVERFLOW;
	case ENOTSUP:
		return SPX_NBD_ENOTSUP;
	case ESHUTDOWN:
		return SPX_NBD_ESHUTDOWN;
	default:
		return SPX_NBD_EIO;
	}
}
