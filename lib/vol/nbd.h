/* nbd.h: the server side of the NBD protocol (the handshake, requests and
 * replies), for spx's own NBD server (lib/vol/nbdkit/nbdsrv.c), which
 * serves volumes from an event loop. The protocol is the NBD project's
 * doc/proto.md: fixed newstyle negotiation with NBD_OPT_GO, INFO, LIST,
 * EXPORT_NAME, ABORT, STRUCTURED_REPLY and the base:allocation meta
 * context; no TLS (the server listens on a unix socket only).
 *
 * Everything here reads bytes a client sent and is bounded: an option's
 * data at most SPX_NBD_OPT_MAX bytes (more is refused with
 * NBD_REP_ERR_TOO_BIG and skipped, up to SPX_NBD_OPT_SKIP_MAX, else the
 * connection ends), at most SPX_NBD_OPTS_MAX options a handshake, names
 * at most 4096 bytes without NUL. tests/fuzz/fuzz_nbd.c drives it. */
#ifndef SPX_VOL_NBD_H
#define SPX_VOL_NBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPX_NBD_OPT_MAX 65536
#define SPX_NBD_OPT_SKIP_MAX (1u << 20)
#define SPX_NBD_OPTS_MAX 1024
#define SPX_NBD_NAME_MAX 4096
/* The largest READ or WRITE served (the block size info's maximum). */
#define SPX_NBD_REQ_MAX (32u << 20)

/* Requests. */
#define SPX_NBD_REQ_SIZE 28
#define SPX_NBD_CMD_READ 0
#define SPX_NBD_CMD_WRITE 1
#define SPX_NBD_CMD_DISC 2
#define SPX_NBD_CMD_FLUSH 3
#define SPX_NBD_CMD_TRIM 4
#define SPX_NBD_CMD_CACHE 5
#define SPX_NBD_CMD_WRITE_ZEROES 6
#define SPX_NBD_CMD_BLOCK_STATUS 7

#define SPX_NBD_CMD_FLAG_FUA (1u << 0)
#define SPX_NBD_CMD_FLAG_NO_HOLE (1u << 1)
#define SPX_NBD_CMD_FLAG_DF (1u << 2)
#define SPX_NBD_CMD_FLAG_REQ_ONE (1u << 3)
#define SPX_NBD_CMD_FLAG_FAST_ZERO (1u << 4)

/* Replies. */
#define SPX_NBD_SIMPLE_SIZE 16
#define SPX_NBD_CHUNK_SIZE 20
#define SPX_NBD_REPLY_FLAG_DONE 1u
#define SPX_NBD_REPLY_OFFSET_DATA 1
#define SPX_NBD_REPLY_BLOCK_STATUS 5
#define SPX_NBD_REPLY_ERROR 32769

/* Error values on the wire. */
#define SPX_NBD_EPERM 1
#define SPX_NBD_EIO 5
#define SPX_NBD_ENOMEM 12
#define SPX_NBD_EINVAL 22
#define SPX_NBD_ENOSPC 28
#define SPX_NBD_EOVERFLOW 75
#define SPX_NBD_ENOTSUP 95
#define SPX_NBD_ESHUTDOWN 108

/* The base:allocation meta context's id on the wire. */
#define SPX_NBD_META_BASE 1
#define SPX_NBD_STATE_HOLE 1u
#define SPX_NBD_STATE_ZERO 2u

/* The connection: read or write exactly n bytes, 0 or -1 (gone, or the
 * handshake's time is up). */
struct spx_nbd_io {
	int (*read)(void *ctx, void *buf, size_t n);
	int (*write)(void *ctx, const void *buf, size_t n);
	void *ctx;
};

/* What the server serves. list calls add for each export this peer may
 * see (0, or -1 to fail the listing). open opens export name: for
 * transmission when go, else only to describe it (the backend closes it
 * again itself); 0 with *size (and *handle when go), or -1 with errno:
 * ENOENT no such export, EACCES or EPERM refused, another the backend's
 * failure, *msg (static, may be NULL) saying why. */
struct spx_nbd_backend {
	int (*list)(void *ctx, int (*add)(void *actx, const char *name),
		    void *actx);
	int (*open)(void *ctx, const char *name, bool go, uint64_t *size,
		    void **handle, const char **msg);
	void *ctx;
};

/* What the handshake agreed. */
struct spx_nbd_session {
	void *handle;
	uint64_t size;
	uint16_t tflags;	/* the transmission flags sent */
	bool structured;	/* structured replies */
	bool meta_base;		/* base:allocation for BLOCK_STATUS */
};

/* The handshake on io: 1 once transmission begins (s says with what),
 * 0 when the client ended it (NBD_OPT_ABORT, or gone between options),
 * -1 on a protocol violation or a failed transport. Whatever it returns,
 * s->handle, when not NULL, is open: the caller closes it (the client
 * may go between the open and the reply that says so). */
int spx_nbd_handshake(const struct spx_nbd_io *io,
		      const struct spx_nbd_backend *be,
		      struct spx_nbd_session *s);

struct spx_nbd_req {
	uint16_t flags, type;
	uint64_t cookie, offset;
	uint32_t len;
};

/* Parse SPX_NBD_REQ_SIZE bytes at p: 0, or -1 when the magic is wrong
 * (the stream is lost: the connection must end). */
int spx_nbd_req_parse(const void *p, struct spx_nbd_req *r);

/* May request r be served in session s? 0, or the NBD error to reply
 * with (a WRITE's data must still be read off the connection). */
uint32_t spx_nbd_req_check(const struct spx_nbd_session *s,
			   const struct spx_nbd_req *r);

/* Reply headers, written at buf: a simple reply (SPX_NBD_SIMPLE_SIZE
 * bytes) and a structured reply's chunk (SPX_NBD_CHUNK_SIZE bytes;
 * len is the payload's length). */
void spx_nbd_simple(void *buf, uint64_t cookie, uint32_t err);
void spx_nbd_chunk(void *buf, uint64_t cookie, uint16_t flags,
		   uint16_t type, uint32_t len);

/* The NBD error for errno e. */
uint32_t spx_nbd_error(int e);

#endif
