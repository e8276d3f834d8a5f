/* nbdsrv.c: spx-nbd, spx's own NBD server for volumes.
 *
 *   spx-nbd -U SOCKET dir=STORE [conf=FILE root=DIR grants=DIR]
 *
 * It serves the volume plugin (spxvol.c) as nbdkit does, with the same
 * parameters, but from an event loop: a thread a connection reads
 * every request the client has sent, submits the reads and writes
 * together to one io_uring on the volume's file (O_DIRECT where the
 * request is aligned), and sends the replies that are ready in one
 * sendmsg. nbdkit (1.32) gives each request in flight a thread and a
 * blocking call into the plugin, and on a 2-CPU node the switching
 * between those threads is what bounds random 4 KiB I/O
 * (docs/ARCHITECTURE.md has the figures). Why by hand: no NBD server
 * library exists (libnbd is a client; nbdkit and qemu-storage-daemon are
 * programs), and the protocol's server side that volumes need is small
 * (lib/vol/nbd.c, fuzzed).
 *
 * Everything but those reads and writes runs the plugin's own callbacks
 * in the connection's thread (lookup, grants and their cut-off, the
 * bounds on connections of other users, FLUSH's fdatasync, TRIM,
 * WRITE_ZEROES, CACHE, block status, lazy restore of a volume made from
 * a snapshot): the plugin supplies the nbdkit functions it calls, here.
 * One rule links the two: a snapshot pauses writers and waits for the
 * writes in flight to end, so before this loop waits for a pause (or
 * runs a callback that may) it ends its own writes in flight.
 *
 * Durability is the plugin's: a write is acknowledged once the kernel
 * has it (in the page cache, or for O_DIRECT on the way to the disk),
 * FLUSH and FUA are fdatasync of the file. The handshake must end within
 * HANDSHAKE_S seconds (nbdkit 1.32 waits for ever). */
#include "spx.h"

#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "iobuf.h"
#include "size.h"
#include "vol/nbd.h"
#include "vol/nbdkit/spxvol.h"
#include "vol/vol.h"

struct nbdkit_plugin *plugin_init(void);

#define HANDSHAKE_S 30
/* Requests taken from one connection and not yet answered, and their
 * bytes: beyond them the connection is not read until some are. */
#define INFLIGHT_MAX 256
#define INFLIGHT_BYTES_MAX (64u << 20)
#define RING_ENTRIES 512
/* The bytes of buffers a connection keeps for its next requests: a
 * new one costs a page fault a page (mmap, then munmap when freed). */
#define KEEP_BYTES_MAX (32u << 20)
/* The pool of large buffers for O_DIRECT (lib/core/iobuf.h): room for
 * the bytes in flight, so that a stream of large reads keeps to it (with
 * half of that, 1 MiB reads at 4 x 32 in flight ran a quarter slower);
 * its free pages beyond KEEP_BYTES_MAX go back to the kernel. A request
 * that finds it full takes a buffer of its own. */
#define POOL_BYTES INFLIGHT_BYTES_MAX
#define IN_SIZE (256u << 10)
/* A WRITE larger than this is received into its own buffer rather than
 * copied out of the connection's. */
#define INLINE_WRITE_MAX (64u << 10)
/* Descriptors of one BLOCK_STATUS reply at most. */
#define EXTENTS_MAX 1024
#define RECV_TAG ((uint64_t)1)
#define SEND_TAG ((uint64_t)2)
/* Replies a sendmsg carries at most (two pieces each). */
#define SEND_IOV 128

static struct nbdkit_plugin *pl;
static bool verbose;
/* HANDSHAKE_S, or SPX_NBD_HANDSHAKE_S (tests shorten it). */
static int handshake_s = HANDSHAKE_S;
/* O_DIRECT for aligned reads, and writes (SPX_NBD_DIRECT, for
 * measurements: rw, r, w or 0). Through the page cache, io_uring hands
 * the reads and writes of one file to its workers, at a third of the
 * rate (docs/ARCHITECTURE.md has the figures); an unaligned request
 * takes that way all the same. */
static bool direct_read = true, direct_write = true;

/* The connection this thread serves, for the plugin's questions. */
static __thread int64_t tl_uid = -1;
static __thread const char *tl_export;

/* ---- what nbdkit gives a plugin ---- */

static void say(const char *kind, const char *fmt, va_list ap)
{
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "spx-nbd: %s: ", kind);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);

	if (len > sizeof(buf) - 2)
		len = sizeof(buf) - 2;
	buf[len++] = '\n';
	/* One write a line: the lines of threads do not mix. */
	(void)!write(STDERR_FILENO, buf, len);
}

void nbdkit_verror(const char *fmt, va_list ap)
{
	say("error", fmt, ap);
}

void nbdkit_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("error", fmt, ap);
	va_end(ap);
}

void nbdkit_vdebug(const char *fmt, va_list ap)
{
	if (verbose)
		say("debug", fmt, ap);
}

void nbdkit_debug(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	say("debug", fmt, ap);
	va_end(ap);
}

char *nbdkit_absolute_path(const char *path)
{
	char *cwd, *p;

	if (*path == '/')
		return strdup(path);
	cwd = getcwd(NULL, 0);
	if (!cwd) {
		nbdkit_error("getcwd: %m");
		return NULL;
	}
	p = spx_xprintf("%s/%s", cwd, path);
	free(cwd);
	return p;
}

int nbdkit_nanosleep(unsigned sec, unsigned nsec)
{
	struct timespec ts = { sec, nsec };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return 0;
}

int64_t nbdkit_peer_uid(void)
{
	return tl_uid;
}

const char *nbdkit_export_name(void)
{
	return tl_export;
}

struct nbdkit_exports {
	int (*add)(void *actx, const char *name);
	void *actx;
};

int nbdkit_add_export(struct nbdkit_exports *e, const char *name,
		      const char *description)
{
	return e->add(e->actx, name);
}

/* Extents of [start, end), merged, at most EXTENTS_MAX: as wire pairs
 * (length, flags) after the context id. */
struct nbdkit_extents {
	uint64_t start, end, next;
	uint32_t n, type;
	uint32_t *v; /* 1 + 2 * EXTENTS_MAX */
};

int nbdkit_add_extent(struct nbdkit_extents *e, uint64_t offset,
		      uint64_t length, uint32_t type)
{
	uint64_t end = offset + length;

	if (offset > e->next) {
		nbdkit_error("extents out of order");
		errno = EINVAL;
		return -1;
	}
	if (end <= e->next || e->next >= e->end)
		return 0;
	if (end > e->end)
		end = e->end;
	/* A reply must not end with a part of one of its extents beyond
	 * 4 GiB: each is at most that long, whole ones merged. */
	while (e->next < end) {
		uint64_t len = end - e->next;

		if (e->n && e->type == type &&
		    (uint64_t)be32toh(e->v[1 + 2 * (e->n - 1)]) + len <=
			    UINT32_MAX) {
			e->v[1 + 2 * (e->n - 1)] = htobe32(
				(uint32_t)(be32toh(e->v[1 + 2 * (e->n - 1)]) + len));
			e->next = end;
			break;
		}
		if (e->n == EXTENTS_MAX) {
			e->next = e->end; /* the reply says this much */
			break;
		}
		if (len > UINT32_MAX - 4095)
			len = UINT32_MAX - 4095;
		e->v[1 + 2 * e->n] = htobe32((uint32_t)len);
		e->v[2 + 2 * e->n] = htobe32(type);
		e->type = type;
		e->n++;
		e->next += len;
	}
	return 0;
}

/* ---- the connection ---- */

struct req {
	struct req *next;
	struct spx_nbd_req r;
	uint32_t err;
	int op;			/* what the io_uring does for it */
	bool counted;		/* a write in flight on the change map */
	bool direct;		/* on the O_DIRECT descriptor */
	bool pooled;		/* buf is from the connection's pool */
	char *buf;		/* aligned: the pool's, or mem */
	char *mem;		/* the request's own buffer, cap bytes */
	size_t cap;
	size_t dlen;		/* reply data in buf */
	uint8_t hdr[SPX_NBD_CHUNK_SIZE + 8];
	size_t hlen;
};

enum { OP_NONE, OP_READ, OP_WRITE, OP_FSYNC };

struct conn {
	int sock, fd, dfd;
	uint64_t align;		/* O_DIRECT: offsets and lengths */
	struct io_uring ring;
	struct spx_nbd_session s;
	uint8_t *in;
	size_t in_len, in_off;
	bool recv_on, eof, stop;
	struct req *payload;	/* receiving a large WRITE's data */
	size_t payload_got;
	unsigned inflight, writes;	/* on the io_uring; writes of them */
	unsigned held;			/* taken, not yet answered */
	size_t bytes;			/* their lengths */
	struct req *free_reqs;
	size_t kept;			/* their buffers' bytes */
	struct spx_iobuf_pool *pool;	/* large buffers, in huge pages */
	/* Replies to send, in order; those a sendmsg on the io_uring
	 * carries now (send_on), and where it is in them. */
	struct req *out, **out_tail;
	struct req *sending;
	bool send_on;
	struct iovec siov[SEND_IOV];
	struct msghdr smsg;
};

static struct req *req_get(struct conn *c, size_t cap)
{
	struct req *q = c->free_reqs;

	if (q) {
		c->free_reqs = q->next;
		c->kept -= q->cap;
	} else if (!(q = calloc(1, sizeof(*q)))) {
		return NULL;
	}
	cap = (cap + 4095) & ~(size_t)4095;
	/* A large buffer from the pool if it has one: a disk request for
	 * it is not split, and the next one can merge with it (iobuf.h). */
	q->buf = c->pool ? spx_iobuf_get(c->pool, cap) : NULL;
	q->pooled = q->buf != NULL;
	if (!q->pooled && cap > q->cap) {
		free(q->mem);
		q->mem = aligned_alloc(4096, cap);
		q->cap = q->mem ? cap : 0;
		if (!q->mem) {
			free(q);
			return NULL;
		}
	}
	if (!q->pooled)
		q->buf = q->mem;
	q->next = NULL;
	memset(&q->r, 0, sizeof(q->r));
	q->err = 0;
	q->op = OP_NONE;
	q->counted = q->direct = false;
	q->dlen = q->hlen = 0;
	return q;
}

static void req_put(struct conn *c, struct req *q)
{
	c->held--;
	c->bytes -= q->r.len;
	if (q->pooled)
		spx_iobuf_put(c->pool, q->buf);
	q->pooled = false;
	q->buf = NULL;
	if (c->kept + q->cap > KEEP_BYTES_MAX) {
		free(q->mem);
		q->mem = NULL;
		q->cap = 0;
	}
	c->kept += q->cap;
	q->next = c->free_reqs;
	c->free_reqs = q;
}

/* The reply of q is ready: queue it (sent after this round). */
static void reply(struct conn *c, struct req *q)
{
	bool read = q->r.type == SPX_NBD_CMD_READ;

	/* With structured replies, a READ's or BLOCK_STATUS's error is an
	 * error chunk; other commands have simple replies. */
	if (c->s.structured && q->err &&
	    (read || q->r.type == SPX_NBD_CMD_BLOCK_STATUS)) {
		uint32_t e = htobe32(q->err);

		spx_nbd_chunk(q->hdr, q->r.cookie, SPX_NBD_REPLY_FLAG_DONE,
			      SPX_NBD_REPLY_ERROR, 6);
		memcpy(q->hdr + SPX_NBD_CHUNK_SIZE, &e, 4);
		memset(q->hdr + SPX_NBD_CHUNK_SIZE + 4, 0, 2);
		q->hlen = SPX_NBD_CHUNK_SIZE + 6;
		q->dlen = 0;
	} else if (c->s.structured && read) {
		uint64_t off = htobe64(q->r.offset);

		spx_nbd_chunk(q->hdr, q->r.cookie, SPX_NBD_REPLY_FLAG_DONE,
			      SPX_NBD_REPLY_OFFSET_DATA, 8 + q->r.len);
		memcpy(q->hdr + SPX_NBD_CHUNK_SIZE, &off, 8);
		q->hlen = SPX_NBD_CHUNK_SIZE + 8;
		q->dlen = q->r.len;
	} else if (q->r.type == SPX_NBD_CMD_BLOCK_STATUS && !q->err) {
		spx_nbd_chunk(q->hdr, q->r.cookie, SPX_NBD_REPLY_FLAG_DONE,
			      SPX_NBD_REPLY_BLOCK_STATUS, (uint32_t)q->dlen);
		q->hlen = SPX_NBD_CHUNK_SIZE;
	} else {
		spx_nbd_simple(q->hdr, q->r.cookie, q->err);
		q->hlen = SPX_NBD_SIMPLE_SIZE;
		q->dlen = read && !q->err ? q->r.len : 0;
	}
	*c->out_tail = q;
	c->out_tail = &q->next;
	q->next = NULL;
}

static void fail(struct conn *c, struct req *q, int e)
{
	q->err = spx_nbd_error(e);
	reply(c, q);
}

static struct io_uring_sqe *sqe_get(struct conn *c);

/* Send the queued replies, as many as one sendmsg carries, on the
 * io_uring: the loop goes on reading and submitting meanwhile. */
static void send_start(struct conn *c)
{
	struct io_uring_sqe *e;
	struct req *q;
	size_t n = 0;

	if (c->send_on || !c->out)
		return;
	if (c->eof) { /* nobody to send to */
		while ((q = c->out)) {
			c->out = q->next;
			req_put(c, q);
		}
		c->out_tail = &c->out;
		return;
	}
	c->sending = c->out;
	for (q = c->out; q && n + 2 <= SEND_IOV; q = q->next) {
		c->siov[n++] = (struct iovec){ q->hdr, q->hlen };
		if (q->dlen)
			c->siov[n++] = (struct iovec){ q->buf, q->dlen };
		c->out = q->next;
	}
	if (!c->out)
		c->out_tail = &c->out;
	memset(&c->smsg, 0, sizeof(c->smsg));
	c->smsg.msg_iov = c->siov;
	c->smsg.msg_iovlen = n;
	e = sqe_get(c);
	io_uring_prep_sendmsg(e, c->sock, &c->smsg, MSG_NOSIGNAL | MSG_WAITALL);
	io_uring_sqe_set_data64(e, SEND_TAG);
	c->send_on = true;
}

/* The sendmsg ended having sent res bytes (or failed): go on with the
 * rest, or let the replies it carried go. */
static void send_done(struct conn *c, int res)
{
	struct io_uring_sqe *e;
	struct req *q;
	size_t left = 0;

	c->send_on = false;
	if (res < 0 && res != -EINTR && res != -EAGAIN) {
		c->eof = c->stop = true; /* the client is gone */
		res = 0;
	}
	if (res < 0)
		res = 0;
	while (c->smsg.msg_iovlen && (size_t)res >= c->smsg.msg_iov->iov_len) {
		res -= (int)c->smsg.msg_iov->iov_len;
		c->smsg.msg_iov++;
		c->smsg.msg_iovlen--;
	}
	if (c->smsg.msg_iovlen) {
		c->smsg.msg_iov->iov_base = (char *)c->smsg.msg_iov->iov_base + res;
		c->smsg.msg_iov->iov_len -= (size_t)res;
		left = 1;
	}
	if (left && !c->eof) {
		e = sqe_get(c);
		io_uring_prep_sendmsg(e, c->sock, &c->smsg,
				      MSG_NOSIGNAL | MSG_WAITALL);
		io_uring_sqe_set_data64(e, SEND_TAG);
		c->send_on = true;
		return;
	}
	/* Every reply up to the first still queued (or the end). */
	while ((q = c->sending) && q != c->out) {
		c->sending = q->next;
		req_put(c, q);
	}
	c->sending = NULL;
}

static struct io_uring_sqe *sqe_get(struct conn *c)
{
	struct io_uring_sqe *e = io_uring_get_sqe(&c->ring);

	if (!e) {
		io_uring_submit(&c->ring);
		e = io_uring_get_sqe(&c->ring);
	}
	return e;
}

/* fdatasync of the file on the io_uring, then q's reply: a FLUSH, or a
 * write with FUA once written. */
static void submit_fsync(struct conn *c, struct req *q)
{
	struct io_uring_sqe *e = sqe_get(c);

	io_uring_prep_fsync(e, c->fd, IORING_FSYNC_DATASYNC);
	io_uring_sqe_set_data(e, q);
	q->op = OP_FSYNC;
	c->inflight++;
}

static bool aligned(const struct conn *c, const struct req *q)
{
	return c->dfd >= 0 && !(q->r.offset % c->align) &&
	       !(q->r.len % c->align);
}

/* Submit q's read or write on the file. */
static void submit_rw(struct conn *c, struct req *q)
{
	struct io_uring_sqe *e = sqe_get(c);
	bool w = q->r.type == SPX_NBD_CMD_WRITE;
	int fd;

	q->direct = aligned(c, q) && (w ? direct_write : direct_read);
	fd = q->direct ? c->dfd : c->fd;
	if (w)
		io_uring_prep_write(e, fd, q->buf, q->r.len, q->r.offset);
	else
		io_uring_prep_read(e, fd, q->buf, q->r.len, q->r.offset);
	q->op = w ? OP_WRITE : OP_READ;
	io_uring_sqe_set_data(e, q);
	c->inflight++;
}

static void handle_cqe(struct conn *c, struct io_uring_cqe *cqe);

/* Wait for one completion and handle it. */
static void wait_one(struct conn *c)
{
	struct io_uring_cqe *cqe;
	int r;

	io_uring_submit(&c->ring);
	while ((r = io_uring_wait_cqe(&c->ring, &cqe)) == -EINTR)
		;
	if (r < 0) {
		nbdkit_error("io_uring_wait_cqe: %s", strerror(-r));
		abort(); /* buffers in flight cannot be let go */
	}
	handle_cqe(c, cqe);
	io_uring_cqe_seen(&c->ring, cqe);
}

/* End this connection's writes in flight (before a wait for a paused
 * snapshot, or a callback that may wait for one). */
static void drain_writes(struct conn *c)
{
	while (c->writes)
		wait_one(c);
}

/* Do the rest of a read or write the io_uring did done bytes of, with
 * the plain descriptor: 0 or -1 with errno. */
static int finish_sync(struct conn *c, struct req *q, size_t done)
{
	bool w = q->r.type == SPX_NBD_CMD_WRITE;

	while (done < q->r.len) {
		ssize_t r = w ? pwrite(c->fd, q->buf + done, q->r.len - done,
				       (off_t)(q->r.offset + done))
			      : pread(c->fd, q->buf + done, q->r.len - done,
				      (off_t)(q->r.offset + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (!r) {
			if (w) {
				errno = ENOSPC;
				return -1;
			}
			memset(q->buf + done, 0, q->r.len - done);
			break;
		}
		done += (size_t)r;
	}
	return 0;
}

static void complete_rw(struct conn *c, struct req *q, int res)
{
	bool w = q->r.type == SPX_NBD_CMD_WRITE;
	int e = 0;

	if (res == -EINVAL && q->direct) {
		/* The file system wants another alignment: no more O_DIRECT
		 * on this connection. */
		nbdkit_debug("O_DIRECT refused (EINVAL): buffered from now on");
		close(c->dfd);
		c->dfd = -1;
		res = 0;
	}
	if (res < 0 && res != -EAGAIN && res != -EINTR)
		e = -res;
	else if (finish_sync(c, q, res < 0 ? 0 : (size_t)res) < 0)
		e = errno;
	if (e && e != ENOSPC)
		nbdkit_error("%s: %s", w ? "write" : "read", strerror(e));
	if (q->counted) {
		spxvol_direct_end(c->s.handle);
		q->counted = false;
		c->writes--;
	}
	if (e)
		fail(c, q, e);
	else if (w && (q->r.flags & SPX_NBD_CMD_FLAG_FUA))
		submit_fsync(c, q); /* acknowledged once it is on the disk */
	else
		reply(c, q);
}

static void handle_cqe(struct conn *c, struct io_uring_cqe *cqe)
{
	uint64_t tag = io_uring_cqe_get_data64(cqe);
	struct req *q;

	if (tag == SEND_TAG) {
		send_done(c, cqe->res);
		return;
	}
	if (tag == RECV_TAG) {
		c->recv_on = false;
		if (cqe->res == -EINTR || cqe->res == -EAGAIN)
			return;
		if (cqe->res <= 0) {
			/* No more requests (a client may half-close): the
			 * ones taken are still answered, unless sending
			 * fails. */
			c->stop = true;
			return;
		}
		if (c->payload)
			c->payload_got += (size_t)cqe->res;
		else
			c->in_len += (size_t)cqe->res;
		return;
	}
	q = (struct req *)(uintptr_t)tag;
	c->inflight--;
	if (q->op == OP_FSYNC) {
		if (cqe->res < 0) {
			nbdkit_error("fdatasync: %s", strerror(-cqe->res));
			fail(c, q, -cqe->res);
		} else {
			reply(c, q);
		}
		return;
	}
	complete_rw(c, q, cqe->res);
}

/* A read or write through the plugin's callbacks. */
static void rw_plugin(struct conn *c, struct req *q)
{
	int r;

	if (q->r.type == SPX_NBD_CMD_WRITE) {
		drain_writes(c);
		r = pl->pwrite(c->s.handle, q->buf, q->r.len, q->r.offset,
			       q->r.flags & SPX_NBD_CMD_FLAG_FUA ? NBDKIT_FLAG_FUA
								 : 0);
	} else {
		r = pl->pread(c->s.handle, q->buf, q->r.len, q->r.offset, 0);
	}
	if (r < 0)
		fail(c, q, errno);
	else
		reply(c, q);
}

/* A WRITE with its data in q->buf. */
static void start_write(struct conn *c, struct req *q)
{
	int r;

	if (q->err) {
		reply(c, q);
		return;
	}
	r = spxvol_direct_begin(c->s.handle, true, q->r.offset, q->r.len,
				false);
	if (r == 2) {
		drain_writes(c);
		r = spxvol_direct_begin(c->s.handle, true, q->r.offset,
					q->r.len, true);
	}
	if (r < 0) {
		fail(c, q, errno);
	} else if (r == 1) {
		rw_plugin(c, q);
	} else {
		q->counted = true;
		c->writes++;
		submit_rw(c, q);
	}
}

/* WRITE_ZEROES: as nbdkit does when the plugin cannot zero fast, zeros
 * are written, unless the client asked for a fast zero only. */
static int zero(struct conn *c, struct req *q)
{
	uint32_t f = (q->r.flags & SPX_NBD_CMD_FLAG_FUA ? NBDKIT_FLAG_FUA : 0) |
		     (q->r.flags & SPX_NBD_CMD_FLAG_NO_HOLE ? 0
							    : NBDKIT_FLAG_MAY_TRIM);
	uint64_t off = q->r.offset, end = q->r.offset + q->r.len;
	static const char zeros[1 << 16];

	if (pl->zero(c->s.handle, q->r.len, q->r.offset,
		     f | (q->r.flags & SPX_NBD_CMD_FLAG_FAST_ZERO
				  ? NBDKIT_FLAG_FAST_ZERO
				  : 0)) == 0)
		return 0;
	if (errno != ENOTSUP || (q->r.flags & SPX_NBD_CMD_FLAG_FAST_ZERO))
		return -1;
	for (; off < end; off += sizeof(zeros)) {
		uint32_t n = end - off < sizeof(zeros) ? (uint32_t)(end - off)
						       : (uint32_t)sizeof(zeros);

		if (pl->pwrite(c->s.handle, zeros, n, off,
			       off + n == end ? f & NBDKIT_FLAG_FUA : 0) < 0)
			return -1;
	}
	return 0;
}

static void block_status(struct conn *c, struct req *q)
{
	struct nbdkit_extents e = { .start = q->r.offset,
				    .end = q->r.offset + q->r.len,
				    .next = q->r.offset,
				    .v = (uint32_t *)q->buf };

	if (pl->extents(c->s.handle, q->r.len, q->r.offset,
			q->r.flags & SPX_NBD_CMD_FLAG_REQ_ONE ? NBDKIT_FLAG_REQ_ONE
							      : 0,
			&e) < 0) {
		fail(c, q, errno);
		return;
	}
	if (!e.n) {
		nbdkit_error("no extents for a block status");
		fail(c, q, EIO);
		return;
	}
	e.v[0] = htobe32(SPX_NBD_META_BASE);
	q->dlen = 4 + 8 * (size_t)e.n;
	reply(c, q);
}

/* Any request but a WRITE (whose data comes first). */
static void dispatch(struct conn *c, struct req *q)
{
	int r = 0;

	if (q->err) {
		reply(c, q);
		return;
	}
	switch (q->r.type) {
	case SPX_NBD_CMD_READ:
		r = spxvol_direct_begin(c->s.handle, false, q->r.offset,
					q->r.len, false);
		if (r == 0)
			submit_rw(c, q);
		else if (r == 1)
			rw_plugin(c, q);
		else
			fail(c, q, errno);
		return;
	case SPX_NBD_CMD_FLUSH:
		/* Checks the connection was not cut off. */
		if (spxvol_direct_begin(c->s.handle, false, 0, 0, false) < 0)
			fail(c, q, errno);
		else
			submit_fsync(c, q);
		return;
	case SPX_NBD_CMD_TRIM:
		drain_writes(c);
		r = pl->trim(c->s.handle, q->r.len, q->r.offset,
			     q->r.flags & SPX_NBD_CMD_FLAG_FUA ? NBDKIT_FLAG_FUA
							       : 0);
		break;
	case SPX_NBD_CMD_WRITE_ZEROES:
		drain_writes(c);
		r = zero(c, q);
		break;
	case SPX_NBD_CMD_CACHE:
		r = pl->cache(c->s.handle, q->r.len, q->r.offset, 0);
		break;
	case SPX_NBD_CMD_BLOCK_STATUS:
		block_status(c, q);
		return;
	case SPX_NBD_CMD_DISC:
		c->stop = true;
		req_put(c, q);
		return;
	}
	if (r < 0)
		fail(c, q, errno);
	else
		reply(c, q);
}

/* Take the requests whole in the input. */
static void parse(struct conn *c)
{
	while (!c->stop && !c->payload && c->held < INFLIGHT_MAX &&
	       c->bytes < INFLIGHT_BYTES_MAX &&
	       c->in_len - c->in_off >= SPX_NBD_REQ_SIZE) {
		struct spx_nbd_req r;
		struct req *q;
		size_t have, take, cap;
		uint32_t err;

		if (spx_nbd_req_parse(c->in + c->in_off, &r) < 0) {
			nbdkit_error("bad request magic: the connection ends");
			c->stop = true;
			return;
		}
		if (r.type == SPX_NBD_CMD_WRITE && r.len > SPX_NBD_REQ_MAX) {
			nbdkit_error("a write of %u bytes (at most %u): the "
				     "connection ends",
				     r.len, SPX_NBD_REQ_MAX);
			c->stop = true;
			return;
		}
		cap = r.type == SPX_NBD_CMD_BLOCK_STATUS
			      ? 4 + 8 * (size_t)EXTENTS_MAX
		      : r.type == SPX_NBD_CMD_READ || r.type == SPX_NBD_CMD_WRITE
			      ? (r.len <= SPX_NBD_REQ_MAX ? r.len : 0)
			      : 0;
		have = c->in_len - c->in_off - SPX_NBD_REQ_SIZE;
		if (r.type == SPX_NBD_CMD_WRITE && r.len <= INLINE_WRITE_MAX &&
		    have < r.len)
			break; /* wait for its data, in the input */
		err = spx_nbd_req_check(&c->s, &r);
		/* A refused WRITE's data is still read (and dropped). */
		q = req_get(c, cap && (!err || r.type == SPX_NBD_CMD_WRITE)
				       ? cap
				       : 1);
		if (!q) {
			nbdkit_error("out of memory: the connection ends");
			c->stop = true;
			return;
		}
		q->r = r;
		q->err = err;
		c->held++;
		c->bytes += r.len;
		c->in_off += SPX_NBD_REQ_SIZE;
		if (r.type != SPX_NBD_CMD_WRITE) {
			dispatch(c, q);
			continue;
		}
		take = have < r.len ? have : r.len;
		memcpy(q->buf, c->in + c->in_off, take);
		c->in_off += take;
		if (take < r.len) {
			c->payload = q;
			c->payload_got = take;
			return;
		}
		start_write(c, q);
	}
}

static void post_recv(struct conn *c)
{
	struct io_uring_sqe *e;
	void *to;
	size_t n;

	if (c->recv_on || c->eof || c->stop)
		return;
	if (c->payload) {
		to = c->payload->buf + c->payload_got;
		n = c->payload->r.len - c->payload_got;
	} else {
		if (c->in_off) {
			memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
			c->in_len -= c->in_off;
			c->in_off = 0;
		}
		if (c->in_len == IN_SIZE)
			return; /* full until requests are taken */
		to = c->in + c->in_len;
		n = IN_SIZE - c->in_len;
	}
	e = sqe_get(c);
	/* A write's data whole, in one completion. */
	io_uring_prep_recv(e, c->sock, to, n, c->payload ? MSG_WAITALL : 0);
	io_uring_sqe_set_data64(e, RECV_TAG);
	c->recv_on = true;
}

static void transmission(struct conn *c)
{
	struct io_uring_cqe *cqe;

	for (;;) {
		unsigned head, n = 0;

		if (c->payload && c->payload_got == c->payload->r.len) {
			struct req *q = c->payload;

			c->payload = NULL;
			start_write(c, q);
		}
		parse(c);
		send_start(c);
		post_recv(c);
		if (c->stop && c->recv_on)
			shutdown(c->sock, SHUT_RD); /* ends the recv */
		/* Done once nothing is on the io_uring and every reply is
		 * sent (or cannot be). */
		if (!c->recv_on && !c->inflight && !c->send_on && !c->out &&
		    (c->eof || c->stop ||
		     (c->in_len == IN_SIZE && !c->in_off)))
			break;
		io_uring_submit_and_wait(&c->ring, 1);
		io_uring_for_each_cqe(&c->ring, head, cqe)
		{
			handle_cqe(c, cqe);
			n++;
		}
		io_uring_cq_advance(&c->ring, n);
	}
	if (c->payload)
		req_put(c, c->payload);
}

/* ---- the handshake ---- */

static int io_read(void *ctx, void *buf, size_t n)
{
	struct conn *c = ctx;

	while (n) {
		ssize_t r = recv(c->sock, buf, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		buf = (char *)buf + r;
		n -= (size_t)r;
	}
	return 0;
}

static int io_write(void *ctx, const void *buf, size_t n)
{
	struct conn *c = ctx;

	while (n) {
		ssize_t r = send(c->sock, buf, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		buf = (const char *)buf + r;
		n -= (size_t)r;
	}
	return 0;
}

static int be_list(void *ctx, int (*add)(void *, const char *), void *actx)
{
	struct nbdkit_exports e = { add, actx };

	return pl->list_exports(0, 0, &e);
}

static int be_open(void *ctx, const char *name, bool go, uint64_t *size,
		   void **handle, const char **msg)
{
	void *h;
	int64_t sz;

	tl_export = name;
	errno = 0;
	h = pl->open(0);
	tl_export = NULL;
	if (!h) {
		if (!errno)
			errno = EIO;
		if (errno == EBUSY)
			*msg = "the volume is open for writing elsewhere";
		return -1;
	}
	sz = pl->get_size(h);
	if (sz < 0) {
		pl->close(h);
		errno = EIO;
		return -1;
	}
	*size = (uint64_t)sz;
	if (go)
		*handle = h;
	else
		pl->close(h);
	return 0;
}

static void set_timeout(int sock, int secs)
{
	struct timeval tv = { secs, 0 };

	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The direct descriptor of the volume's file, and its alignment. */
static void open_direct(struct conn *c)
{
	char path[64];
	struct statx stx;

	c->dfd = -1;
	if (!direct_read && !direct_write)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", c->fd);
	c->dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (c->dfd < 0) {
		nbdkit_debug("no O_DIRECT: %m");
		return;
	}
	/* Buffers are aligned to 4096; offsets and lengths as the file
	 * system says (else 4096, and EINVAL ends O_DIRECT). */
	c->align = 4096;
#ifdef STATX_DIOALIGN
	if (statx(c->dfd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		if (stx.stx_dio_offset_align && stx.stx_dio_mem_align <= 4096 &&
		    stx.stx_dio_offset_align <= 4096) {
			c->align = stx.stx_dio_offset_align;
		} else {
			close(c->dfd); /* no O_DIRECT here */
			c->dfd = -1;
		}
	}
#else
	(void)stx;
#endif
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct spx_nbd_io io = { io_read, io_write, c };
	struct spx_nbd_backend be = { be_list, be_open, c };
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	int r;

	tl_uid = getsockopt(c->sock, SOL_SOCKET, SO_PEERCRED, &cr, &crl) == 0
			 ? (int64_t)cr.uid
			 : -1;
	if (pl->preconnect && pl->preconnect(0) < 0)
		goto out;
	set_timeout(c->sock, handshake_s);
	r = spx_nbd_handshake(&io, &be, &c->s);
	if (r != 1)
		goto out;
	set_timeout(c->sock, 0);
	c->fd = spxvol_fd(c->s.handle);
	open_direct(c);
	if (c->dfd >= 0 &&
	    !(c->pool = spx_iobuf_pool_new(POOL_BYTES, KEEP_BYTES_MAX)))
		nbdkit_debug("no buffer pool: %s", spx_errmsg());
	c->in = malloc(IN_SIZE);
	if (!c->in || (r = io_uring_queue_init(RING_ENTRIES, &c->ring, 0)) < 0) {
		nbdkit_error("cannot set up the connection: %s",
			     c->in ? strerror(-r) : "out of memory");
		goto out;
	}
	c->out_tail = &c->out;
	transmission(c);
	io_uring_queue_exit(&c->ring);
out:
	if (c->s.handle)
		pl->close(c->s.handle);
	if (c->dfd >= 0)
		close(c->dfd);
	close(c->sock);
	while (c->free_reqs) {
		struct req *q = c->free_reqs;

		c->free_reqs = q->next;
		free(q->mem);
		free(q);
	}
	spx_iobuf_pool_free(c->pool);
	free(c->in);
	free(c);
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: spx-nbd [-v] -U SOCKET dir=STORE [conf=FILE] "
			"[root=DIR] [grants=DIR]\n");
	return SPX_USAGE;
}

/* Without io_uring (a kernel built without it, kernel.io_uring_disabled,
 * a seccomp profile that refuses it), nbdkit serves the same plugin in
 * this process's place, with the same arguments: the volumes are served,
 * more slowly, and the log says why. Returns only if that fails. */
static void fall_back(int argc, char **argv, const char *why)
{
	const char *nbdkit = getenv("SPX_NBDKIT");
	char *plugin = spx_vol_plugin_path();
	char **av = calloc((size_t)argc + 4, sizeof(*av));
	int n = 0;
	bool placed = false;

	nbdkit_error("io_uring is not available (%s): serving with nbdkit "
		     "instead",
		     why);
	if (!plugin || !av) {
		nbdkit_error("cannot run nbdkit: %s",
			     plugin ? "out of memory" : spx_errmsg());
		free(av);
		free(plugin);
		return;
	}
	av[n++] = (char *)(nbdkit && *nbdkit ? nbdkit : "nbdkit");
	av[n++] = "-f";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			continue;
		if (strchr(argv[i], '=') && !placed) {
			av[n++] = plugin; /* before the first key=value */
			placed = true;
		}
		av[n++] = argv[i];
	}
	if (!placed)
		av[n++] = plugin;
	execvp(av[0], av);
	nbdkit_error("cannot run %s: %m", av[0]);
	free(av);
	free(plugin);
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *d = getenv("SPX_NBD_DIRECT"), *h;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pthread_attr_t attr;
	int lfd;

	signal(SIGPIPE, SIG_IGN);
	if ((h = getenv("SPX_NBD_HANDSHAKE_S")) && *h) {
		uint64_t v;

		if (spx_parse_uint("SPX_NBD_HANDSHAKE_S", h, 1, 3600, &v) < 0) {
			fprintf(stderr, "spx-nbd: %s\n", spx_errmsg());
			return SPX_USAGE;
		}
		handshake_s = (int)v;
	}
	if (d && *d) {
		direct_read = strchr(d, 'r') != NULL;
		direct_write = strchr(d, 'w') != NULL;
	}
	{
		struct io_uring probe;
		const char *u = getenv("SPX_NBD_URING"); /* 0: as if none */
		int r = u && !strcmp(u, "0") ? -ENOSYS
					     : io_uring_queue_init(8, &probe, 0);

		if (r < 0) {
			fall_back(argc, argv,
				  u && !strcmp(u, "0") ? "SPX_NBD_URING=0"
						       : strerror(-r));
			return SPX_FAIL;
		}
		io_uring_queue_exit(&probe);
	}
	pl = plugin_init();
	for (int i = 1; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');

		if (!strcmp(argv[i], "-U") && i + 1 < argc) {
			sock = argv[++i];
		} else if (!strcmp(argv[i], "-v")) {
			verbose = true;
		} else if (eq && eq != argv[i]) {
			char *k = strndup(argv[i], (size_t)(eq - argv[i]));

			if (!k || pl->config(k, eq + 1) < 0) {
				free(k);
				return SPX_USAGE;
			}
			free(k);
		} else {
			return usage();
		}
	}
	if (!sock || strlen(sock) >= sizeof(sa.sun_path))
		return usage();
	if (pl->config_complete() < 0)
		return SPX_FAIL;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, SOMAXCONN) < 0) {
		nbdkit_error("cannot listen on '%s': %m", sock);
		return SPX_FAIL;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		struct conn *c;
		pthread_t th;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				nbdkit_error("accept: %m");
				nbdkit_nanosleep(0, 100000000);
				continue;
			}
			nbdkit_error("accept: %m");
			return SPX_FAIL;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->sock = fd;
		c->fd = c->dfd = -1;
		if ((errno = pthread_create(&th, &attr, conn_main, c))) {
			nbdkit_error("pthread_create: %m");
			close(fd);
			free(c);
		}
	}
}
