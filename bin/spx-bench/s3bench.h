/* s3bench.h: the pieces of `spx-bench s3`.
 *
 * load.c holds what the suite measures with: a deterministic data stream,
 * an HTTP client on libcurl (SigV4-signed for the gateway, unsigned for
 * nginx, one code path for both so the client costs the same on either
 * side), the physical limits (raw write with fsync, hashing speed, durable
 * 4 KiB files), a private nginx, and private spx nodes. s3.c runs the
 * suite and reports. */
#ifndef SPX_S3BENCH_H
#define SPX_S3BENCH_H

#include "spx.h"

#include <curl/curl.h>

#include "auth/sigv4.h"
#include "checksum.h"
#include "cmd.h"

#define MIB (1024.0 * 1024.0)

/* The data every object and every limit is made of: a 16 MiB random
 * pattern repeated, so that any size is available without holding it in
 * memory, and its checksums are known before a transfer starts. */
#define PAT_LEN (16u << 20)
int pat_init(void);
void pat_copy(void *dst, uint64_t off, size_t len);
const unsigned char *pat_at(uint64_t off, size_t *avail);
/* The digest of stream bytes [off, off+len): returns the seconds it took
 * (which is the hashing speed when algo is MD5 or SHA-256). */
double pat_digest(enum spx_cksum_algo algo, uint64_t off, uint64_t len,
		  unsigned char out[SPX_CKSUM_MAX]);

double now_s(void);

/* An HTTP endpoint: the gateway's S3 port (signed) or nginx (unsigned). */
struct ep {
	char *base;  /* "http://127.0.0.1:PORT" */
	char *host;  /* "127.0.0.1:PORT" */
	char *ca;    /* CA file for https, or NULL */
	char access_key[32], secret[64], region[32];
	bool sign;
};
void ep_set(struct ep *e, const char *base, const char *ca);
void ep_release(struct ep *e);

/* One request. For a PUT the body is stream bytes [off, off+len). */
struct req {
	const char *method;   /* GET, PUT, HEAD, DELETE */
	const char *path;     /* raw: "/bucket/key" */
	const char *query;    /* canonical (sorted, encoded), or NULL */
	uint64_t off, len;    /* PUT body */
	const char *range;    /* "bytes=A-B" or NULL */
	const char *content_md5; /* base64, or NULL */
	unsigned char *into;  /* GET: copy the body here too (into_len) */
	size_t into_len;
	/* results */
	long status;
	uint64_t got;	      /* body bytes received */
	struct spx_cksum crc; /* CRC-32C of the body received */
	char etag[80];
	struct spx_buf err;   /* the first 4 KiB of an error body */
};
/* Make the request on *h (created on first use; kept for keep-alive).
 * Returns 0 when a response arrived (r->status says which), -1 with an
 * error recorded otherwise. r->err must be released by the caller. */
int ep_do(CURL **h, const struct ep *e, struct req *r);
/* The CRC-32C of the body received, as 4 bytes. */
void req_crc(struct req *r, unsigned char out[4]);
/* A response that is not 2xx as an error: "PUT /b/k: HTTP 403 <Code>". */
int req_fail(const struct req *r);

/* Run fn(arg, i) on n threads, i = 0..n-1, and wait for all. */
int par_run(int n, void *(*fn)(void *arg, int i), void *arg);

/* Limits. raw_write writes stream bytes [0, len) to a new file in 1 MiB
 * writes, fsyncs it and renames it over path (freeing the previous one,
 * as an object overwrite does): the seconds it took. The file stays for
 * nginx. */
double raw_write(const char *path, uint64_t len);
/* Durable 4 KiB files created by n threads for secs: ops per second.
 * With layout, each as spx's store lays out a new key: a directory, the
 * file renamed into it, the directory and its parent synced. */
double fsync_4k(const char *dir, int n, double secs, bool layout);

/* A private nginx serving docroot over loopback with sendfile. */
struct nginx {
	pid_t pid;
	char *prefix;
	struct ep ep;
};
int nginx_start(struct nginx *n, const char *prefix, const char *docroot);
void nginx_stop(struct nginx *n);

/* A private spx node over plain HTTP on loopback, RS(k,m) over k+m drive
 * directories under its root. */
struct s3node {
	char *root, *spx;
	struct ep ep;
	pid_t gw;
	int k, m;
};
int s3node_start(struct s3node *n, const char *root, int k, int m);
void s3node_stop(struct s3node *n);
/* Peak RSS of a process: reset (clear_refs 5) and read (VmHWM, bytes). */
int rss_reset(pid_t pid);
long long rss_peak(pid_t pid);
/* The resident set now (VmRSS), in bytes, or -1. */
long long rss_now(pid_t pid);

/* A free loopback TCP port, or -1. */
int free_port(void);

/* The verb; results is the results directory. */
int cmd_s3(const struct spx_args *a, const char *results);

#endif
