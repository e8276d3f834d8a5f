/* spx-bench s3: the S3 data path beside the limits of this machine, all
 * measured in the same run.
 *
 *   single stream   PUT and GET of each --sizes object (256 MiB, 1 GiB),
 *                   Content-MD5 checked by the gateway, the ETag and the
 *                   CRC-32C of every byte read back checked here. PUT is
 *                   set against the raw sequential write with fsync of the
 *                   same bytes on the same file system, and against MD5
 *                   (the ETag every PUT computes): whichever binds. GET is
 *                   set against nginx serving the same bytes by sendfile to
 *                   the same client.
 *   peak RSS        of spx-gw during the largest PUT (VmHWM after
 *                   clear_refs), and its growth over the RSS before the
 *                   PUT (the rest is what the gateway held already, such
 *                   as its cache of small objects' metadata from earlier
 *                   runs): memory per request must not grow with the
 *                   object.
 *   ranged GET      the largest object in 8 MiB ranges, 10 in flight (as
 *                   the aws CLI downloads), against nginx doing the same.
 *   4 KiB ops       PUT then GET at 16 clients, against 16 threads making
 *                   durable 4 KiB files and nginx serving 4 KiB files;
 *                   and the same PUTs to a node on tmpfs, where files and
 *                   syncs cost next to nothing: the request path's own
 *                   ceiling on this machine, which says whether the disk
 *                   or the path binds (no target of its own).
 *   erasure coding  the first size PUT and GET at RS(1,0), RS(2,1) and
 *                   RS(4,2), each over directories of the same disk.
 *   listing         with --listing N,...: the bucket filled to N keys
 *                   (empty objects, 16 clients: puts/s), then the first
 *                   page of 1000 (median of 5), the whole listing page by
 *                   page (stopped at --list-cap seconds, said so), and
 *                   puts/s while that listing runs; and the growth of each
 *                   from the smallest N to the largest.
 *
 * The nodes are private (spx admin init/up under --dir, plain HTTP on
 * loopback, as nginx is). With --root or --endpoint only the single-stream
 * part runs, against a node that is already up (scripts/s3-bench.sh). */
#include "spx.h"

#include <linux/magic.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/statfs.h>

#include "auth/cred.h"
#include "bench/bench.h"
#include "conf/conf.h"
#include "file.h"
#include "hex.h"
#include "http/query.h"
#include "node/node.h"
#include "node/svc.h"
#include "proc.h"
#include "s3bench.h"
#include "size.h"

#define MAX_SIZES 4
#define MAX_LISTS 4
#define PART (8u << 20)
#define RANGE_STREAMS 10
#define SMALL 4096
#define SMALL_CLIENTS 16

struct want { /* what an object of one size must read back as */
	uint64_t size;
	unsigned char md5[SPX_CKSUM_MAX], crc[SPX_CKSUM_MAX];
	unsigned char (*part_crc)[4]; /* per PART range, largest size only */
	size_t nparts;
};

struct s3b {
	const char *dir, *bucket;
	char *docroot;
	bool quick, own_bucket;
	double secs;
	struct want w[MAX_SIZES];
	int nsizes;
	long list_n[MAX_LISTS]; /* --listing: bucket sizes, ascending */
	int nlists;
	double list_cap;	/* seconds a whole listing may take */
	struct s3node node[3]; /* RS(1,0), RS(2,1), RS(4,2) */
	int nnodes;
	struct ep ext;	       /* --root / --endpoint */
	struct ep *gw;	       /* where the single-stream part goes */
	pid_t gwpid;
	struct nginx ngx;
	CURL *h, *hn;
	struct spx_bench_run *run;
};

/* A size in whole GiB or MiB: "1g"/"256m" for figure ids (label false),
 * "1 GiB"/"256 MiB" for people. */
static const char *size_str(uint64_t size, bool label, char *buf, size_t sz)
{
	bool g = size >= (1u << 30) && size % (1u << 30) == 0;

	snprintf(buf, sz, "%llu%s", (unsigned long long)(size >> (g ? 30 : 20)),
		 label ? (g ? " GiB" : " MiB") : (g ? "g" : "m"));
	return buf;
}

static const char *size_name(uint64_t size, char *buf, size_t sz)
{
	return size_str(size, false, buf, sz);
}

static const char *size_label(uint64_t size, char *buf, size_t sz)
{
	return size_str(size, true, buf, sz);
}

static void add(struct s3b *b, const char *section, double v,
		const char *unit, bool higher, int threads, const char *label,
		const char *idfmt, ...)
	__attribute__((format(printf, 8, 9)));

static void add(struct s3b *b, const char *section, double v,
		const char *unit, bool higher, int threads, const char *label,
		const char *idfmt, ...)
{
	char id[96];
	va_list ap;

	va_start(ap, idfmt);
	vsnprintf(id, sizeof(id), idfmt, ap);
	va_end(ap);
	spx_bench_add(b->run, id, section, label, v, unit, higher, threads);
}

/* ---- one object, one stream ---- */

static double put_obj(struct s3b *b, CURL **h, const struct ep *e,
		      const char *key, const struct want *w)
{
	struct req r = { .method = "PUT", .off = 0, .len = w->size };
	struct spx_buf path = SPX_BUF_INIT, md5 = SPX_BUF_INIT;
	char etag[40];
	double t0, t = -1;

	spx_buf_addf(&path, "/%s/%s", b->bucket, key);
	spx_base64_encode(w->md5, 16, &md5);
	r.path = path.p;
	r.content_md5 = md5.p;
	spx_hex_encode(w->md5, 16, etag);
	t0 = now_s();
	if (ep_do(h, e, &r) < 0)
		goto out;
	t = now_s() - t0;
	if (r.status != 200) {
		t = req_fail(&r);
	} else if (strlen(r.etag) != 34 || strncmp(r.etag + 1, etag, 32)) {
		t = spx_error(SPX_FAIL, "PUT %s: ETag %s, want \"%s\"", r.path,
			      r.etag, etag);
	}
out:
	spx_cksum_release(&r.crc);
	spx_buf_release(&r.err);
	spx_buf_release(&path);
	spx_buf_release(&md5);
	return t;
}

/* GET path whole and check every byte by CRC-32C. */
static double get_obj(CURL **h, const struct ep *e, const char *path,
		      const struct want *w)
{
	struct req r = { .method = "GET", .path = path };
	unsigned char crc[4];
	double t0 = now_s(), t = -1;

	if (ep_do(h, e, &r) < 0)
		goto out;
	t = now_s() - t0;
	req_crc(&r, crc);
	if (r.status != 200)
		t = req_fail(&r);
	else if (r.got != w->size || memcmp(crc, w->crc, 4))
		t = spx_error(SPX_FAIL, "GET %s%s: %llu bytes, CRC-32C %s the "
					"object's",
			      e->base, path, (unsigned long long)r.got,
			      memcmp(crc, w->crc, 4) ? "differs from"
						     : "matches");
out:
	spx_cksum_release(&r.crc);
	spx_buf_release(&r.err);
	return t;
}

static int stream(struct s3b *b, const struct want *w, bool largest)
{
	char sn[16], sl[32], key[32], label[96], *raw, *path;
	double traw, tput, tget, tngx;
	long long rss = -1, rss0 = -1;
	double mib = (double)w->size / MIB;

	size_name(w->size, sn, sizeof(sn));
	size_label(w->size, sl, sizeof(sl));
	snprintf(key, sizeof(key), "obj-%s", sn);
	raw = spx_xprintf("%s/%s", b->docroot, key);
	traw = raw_write(raw, w->size);
	free(raw);
	if (traw < 0)
		return -1;
	if (largest && b->gwpid > 0 &&
	    (rss_reset(b->gwpid) < 0 || (rss0 = rss_now(b->gwpid)) < 0))
		return -1;
	tput = put_obj(b, &b->h, b->gw, key, w);
	if (tput < 0)
		return -1;
	if (largest && b->gwpid > 0)
		rss = rss_peak(b->gwpid);
	/* Each GET is timed on its second read: the first brings the bytes
	 * into the page cache on both sides alike, so that neither pays for
	 * a disk read the other does not (hosts with proactive reclaim,
	 * such as DAMON's pageout, evict files seconds after they are
	 * written). */
	path = spx_xprintf("/%s/%s", b->bucket, key);
	tget = get_obj(&b->h, b->gw, path, w);
	if (tget >= 0)
		tget = get_obj(&b->h, b->gw, path, w);
	free(path);
	if (tget < 0)
		return -1;
	path = spx_xprintf("/%s", key);
	tngx = get_obj(&b->hn, &b->ngx.ep, path, w);
	if (tngx >= 0)
		tngx = get_obj(&b->hn, &b->ngx.ep, path, w);
	free(path);
	if (tngx < 0)
		return -1;
	snprintf(label, sizeof(label), "raw write+fsync %s", sl);
	add(b, "limit", mib / traw, "MiB/s", true, 1, label,
	    "s3.limit.write.%s.mibs", sn);
	snprintf(label, sizeof(label), "nginx sendfile GET %s", sl);
	add(b, "limit", mib / tngx, "MiB/s", true, 1, label,
	    "s3.limit.nginx.%s.mibs", sn);
	snprintf(label, sizeof(label), "PUT %s, 1 stream", sl);
	add(b, "s3", mib / tput, "MiB/s", true, 1, label, "s3.put.%s.mibs",
	    sn);
	snprintf(label, sizeof(label), "GET %s, 1 stream", sl);
	add(b, "s3", mib / tget, "MiB/s", true, 1, label, "s3.get.%s.mibs",
	    sn);
	if (rss > 0) {
		snprintf(label, sizeof(label), "spx-gw peak RSS during a %s PUT",
			 sl);
		add(b, "s3", (double)rss / MIB, "MiB", false, 1, label,
		    "s3.put.%s.rss.mib", sn);
		/* What the gateway held before (its caches of earlier
		 * runs' small objects, up to 32 MiB) against what the PUT
		 * itself took. */
		snprintf(label, sizeof(label),
			 "spx-gw RSS growth during a %s PUT", sl);
		add(b, "s3", (double)(rss - rss0) / MIB, "MiB", false, 1,
		    label, "s3.put.%s.rssgrow.mib", sn);
	}
	printf("  PUT %-8s %9.1f MiB/s   raw write+fsync %9.1f MiB/s  %5.1f%%\n",
	       sl, mib / tput, mib / traw, 100.0 * traw / tput);
	printf("  GET %-8s %9.1f MiB/s   nginx sendfile  %9.1f MiB/s  %5.1f%%\n",
	       sl, mib / tget, mib / tngx, 100.0 * tngx / tget);
	if (rss > 0)
		printf("  spx-gw peak RSS during the %s PUT: %.1f MiB (%.1f "
		       "MiB before it)\n",
		       sl, (double)rss / MIB, (double)rss0 / MIB);
	return 0;
}

static int hashing(struct s3b *b)
{
	unsigned char d[SPX_CKSUM_MAX];
	uint64_t len = b->w[0].size < (256u << 20) ? b->w[0].size
						    : (256u << 20);
	double md5 = pat_digest(SPX_CKSUM_MD5, 0, len, d);
	double sha = pat_digest(SPX_CKSUM_SHA256, 0, len, d);

	if (md5 <= 0 || sha <= 0)
		return spx_error(SPX_FAIL, "hashing failed");
	add(b, "limit", (double)len / MIB / md5, "MiB/s", true, 1,
	    "MD5, one core", "s3.limit.md5.mibs");
	add(b, "limit", (double)len / MIB / sha, "MiB/s", true, 1,
	    "SHA-256, one core", "s3.limit.sha256.mibs");
	printf("  hashing, one core: MD5 %.1f MiB/s, SHA-256 %.1f MiB/s\n",
	       (double)len / MIB / md5, (double)len / MIB / sha);
	return 0;
}

/* ---- concurrent ranged GET ---- */

struct ranged {
	const struct ep *e;
	const char *path;
	const struct want *w;
	atomic_size_t next;
	atomic_int err;
};

static void *ranged_thread(void *arg, int i)
{
	struct ranged *g = arg;
	CURL *h = NULL;
	size_t p;

	while (!atomic_load(&g->err) &&
	       (p = atomic_fetch_add(&g->next, 1)) < g->w->nparts) {
		uint64_t a = (uint64_t)p * PART, z = a + PART - 1;
		char range[64];
		unsigned char crc[4];
		struct req r = { .method = "GET", .path = g->path,
				 .range = range };

		if (z >= g->w->size)
			z = g->w->size - 1;
		snprintf(range, sizeof(range), "bytes=%llu-%llu",
			 (unsigned long long)a, (unsigned long long)z);
		if (ep_do(&h, g->e, &r) < 0) {
			spx_warn("%s", spx_errmsg());
			atomic_store(&g->err, 1);
		} else {
			req_crc(&r, crc);
			if (r.status != 206 || r.got != z - a + 1 ||
			    memcmp(crc, g->w->part_crc[p], 4)) {
				spx_warn("GET %s%s %s: HTTP %ld, %llu bytes, "
					 "CRC-32C %s",
					 g->e->base, g->path, range, r.status,
					 (unsigned long long)r.got,
					 memcmp(crc, g->w->part_crc[p], 4)
						 ? "wrong"
						 : "right");
				atomic_store(&g->err, 1);
			}
		}
		spx_cksum_release(&r.crc);
		spx_buf_release(&r.err);
	}
	curl_easy_cleanup(h);
	return NULL;
}

static double ranged_get(const struct ep *e, const char *path,
			 const struct want *w)
{
	struct ranged g = { e, path, w, 0, 0 };
	double t0 = now_s();

	if (par_run(RANGE_STREAMS, ranged_thread, &g) < 0)
		return -1;
	if (atomic_load(&g.err))
		return spx_error(SPX_FAIL, "ranged GET of %s%s failed",
				 e->base, path);
	return now_s() - t0;
}

static int ranged(struct s3b *b, const struct want *w)
{
	char sn[16], sl[32], label[96], *gp, *np;
	double mib = (double)w->size / MIB, tg, tn;

	size_name(w->size, sn, sizeof(sn));
	size_label(w->size, sl, sizeof(sl));
	gp = spx_xprintf("/%s/obj-%s", b->bucket, sn);
	np = spx_xprintf("/obj-%s", sn);
	/* Warm, then timed, as for the single stream. */
	tg = ranged_get(b->gw, gp, w);
	tg = tg < 0 ? -1 : ranged_get(b->gw, gp, w);
	tn = tg < 0 ? -1 : ranged_get(&b->ngx.ep, np, w);
	tn = tn < 0 ? -1 : ranged_get(&b->ngx.ep, np, w);
	free(gp);
	free(np);
	if (tg < 0 || tn < 0)
		return -1;
	snprintf(label, sizeof(label), "GET %s in 8 MiB ranges, 10 in flight",
		 sl);
	add(b, "s3", mib / tg, "MiB/s", true, RANGE_STREAMS, label,
	    "s3.rget.mibs");
	snprintf(label, sizeof(label), "nginx: %s in 8 MiB ranges, 10 in "
				       "flight", sl);
	add(b, "limit", mib / tn, "MiB/s", true, RANGE_STREAMS, label,
	    "s3.limit.nginx.rget.mibs");
	printf("  GET %-8s in 8 MiB ranges, 10 in flight %9.1f MiB/s   "
	       "nginx %9.1f MiB/s  %5.1f%%\n",
	       sl, mib / tg, mib / tn, 100.0 * tn / tg);
	return 0;
}

/* ---- 4 KiB operations at 16 clients ---- */

struct small {
	const struct ep *e;
	const char *prefix; /* "/bucket/small" or "/small" */
	bool put;
	bool once;	    /* GET every key once, untimed (the warm-up) */
	long have;	    /* GET: keys per client */
	long *written;	    /* PUT: keys each client wrote */
	double until;
	long *ops;
	atomic_int err;
};

/* Keys each client reads in the 4 KiB GET test, on either side: the same
 * count for the gateway and nginx, each read once before timing, so both
 * are timed on warm page caches. */
#define SMALL_KEYS 256

static void *small_thread(void *arg, int i)
{
	struct small *s = arg;
	CURL *h = NULL;
	unsigned char body[SMALL], want[SMALL];
	long n = 0;

	while (!atomic_load(&s->err) &&
	       (s->once ? n < s->have : now_s() < s->until)) {
		long k = s->put ? n : n % s->have;
		char *path = spx_xprintf("%s/t%02d/%ld", s->prefix, i, k);
		struct req r = { .method = s->put ? "PUT" : "GET",
				 .path = path };
		uint64_t off = ((uint64_t)i << 20) + (uint64_t)k * SMALL;
		unsigned char md5[SPX_CKSUM_MAX];
		char hex[33];

		if (s->put) {
			r.off = off;
			r.len = SMALL;
			/* Each PUT's ETag must be the MD5 of what was sent. */
			pat_digest(SPX_CKSUM_MD5, off, SMALL, md5);
			spx_hex_encode(md5, 16, hex);
		} else {
			r.into = body;
			r.into_len = SMALL;
			pat_copy(want, off, SMALL);
		}
		if (ep_do(&h, s->e, &r) < 0) {
			spx_warn("%s", spx_errmsg());
			atomic_store(&s->err, 1);
		} else if (r.status != 200 ||
			   (!s->put && (r.got != SMALL ||
					memcmp(body, want, SMALL))) ||
			   (s->put && (strlen(r.etag) != 34 ||
				       strncmp(r.etag + 1, hex, 32)))) {
			req_fail(&r);
			spx_warn("%s%s", spx_errmsg(),
				 r.status != 200 ? ""
				 : s->put	 ? ": the ETag is not the MD5 "
						   "of the body"
						 : ": wrong bytes");
			atomic_store(&s->err, 1);
		}
		spx_cksum_release(&r.crc);
		spx_buf_release(&r.err);
		free(path);
		n++;
	}
	if (s->put)
		s->written[i] = n;
	s->ops[i] = n;
	curl_easy_cleanup(h);
	return NULL;
}

static double small_run(struct small *s, double secs)
{
	double t0 = now_s(), total = 0;

	s->ops = spx_calloc(SMALL_CLIENTS, sizeof(long));
	s->until = t0 + secs;
	atomic_store(&s->err, 0);
	if (par_run(SMALL_CLIENTS, small_thread, s) < 0) {
		free(s->ops);
		return -1;
	}
	t0 = now_s() - t0;
	for (int i = 0; i < SMALL_CLIENTS; i++)
		total += (double)s->ops[i];
	free(s->ops);
	if (atomic_load(&s->err))
		return spx_error(SPX_FAIL, "4 KiB %s at %s failed",
				 s->put ? "PUT" : "GET", s->e->base);
	return total / t0;
}

/* nginx's 4 KiB files: the same bytes the clients PUT, under
 * /small<run>. */
static int small_files(struct s3b *b, long per)
{
	unsigned char body[SMALL];

	for (int i = 0; i < SMALL_CLIENTS; i++) {
		char *d = spx_xprintf("%s/small%d/t%02d", b->docroot,
				      b->run->run, i);

		if (spx_mkdirs(d, 0755) < 0) {
			free(d);
			return -1;
		}
		for (long k = 0; k < per; k++) {
			char *p = spx_xprintf("%s/%ld", d, k);
			int rc;

			pat_copy(body, ((uint64_t)i << 20) + (uint64_t)k * SMALL,
				 SMALL);
			rc = spx_write_file(p, body, SMALL, 0644, false);
			free(p);
			if (rc < 0) {
				free(d);
				return -1;
			}
		}
		free(d);
	}
	return 0;
}

/* The 4 KiB PUTs again, to a node of its own whose whole root is on
 * tmpfs (/dev/shm): there a file costs no block allocation, and a sync
 * returns at once. What is left is the request path: the clients, HTTP
 * over loopback, the signature, MD5, the store's bookkeeping and its
 * system calls, all on the same cores. The node goes with its keys when
 * the phase ends. 0 (and said why) where /dev/shm is not a tmpfs with
 * room for the phase, -1 on an error. */
#define TMPFS_ROOM (1ull << 30)

static int make_bucket(struct s3b *b, CURL **h, const struct ep *e,
		       bool *made);

static double small_put_tmpfs(struct s3b *b)
{
	long written[SMALL_CLIENTS] = { 0 };
	char *dir = NULL, *root = NULL;
	char *prefix = spx_xprintf("/%s/small", b->bucket);
	struct small s = { .prefix = prefix, .put = true, .written = written };
	struct statfs sf;
	struct s3node n;
	CURL *h = NULL;
	double put = -1;

	if (statfs("/dev/shm", &sf) < 0 || sf.f_type != TMPFS_MAGIC ||
	    (unsigned long long)sf.f_bavail * (unsigned long long)sf.f_bsize <
		    TMPFS_ROOM) {
		printf("  (no tmpfs at /dev/shm with 1 GiB free: the 4 KiB "
		       "PUT's ceiling on tmpfs is not measured)\n");
		put = 0;
		goto out;
	}
	/* /dev/shm is everyone's (and sticky): the node goes in a
	 * directory made new for it. */
	dir = spx_bench_scratch("/dev/shm", "spx-bench-s3", 0700);
	if (!dir)
		goto out;
	root = spx_xprintf("%s/node", dir);
	if (s3node_start(&n, root, 1, 0) == 0 &&
	    make_bucket(b, &h, &n.ep, NULL) == 0) {
		s.e = &n.ep;
		put = small_run(&s, b->secs);
	}
	s3node_stop(&n);
	spx_rmtree(dir);
out:
	curl_easy_cleanup(h);
	free(prefix);
	free(root);
	free(dir);
	return put;
}

/* Every run writes new keys and new files, in directories of its own,
 * and nothing is removed before the last run ends: on ext4 without a
 * journal, a new inode is sought past every inode freed in the last
 * minute (up to six while their table is dirty), so a removal here would
 * slow whichever side comes after it (a profile of the gateway showed
 * that search at 28% of a PUT's CPU after such a removal). */
static int small_ops(struct s3b *b)
{
	long written[SMALL_CLIENTS] = { 0 };
	char *prefix = spx_xprintf("/%s/small%d", b->bucket, b->run->run);
	char *fdir = spx_xprintf("%s/f4k-%d", b->dir, b->run->run);
	char *ldir = spx_xprintf("%s/f4k-layout-%d", b->dir, b->run->run);
	char *nprefix = spx_xprintf("/small%d", b->run->run);
	struct small s = { .e = b->gw, .prefix = prefix, .put = true,
			   .written = written };
	double put, get, lput, lget, llay, tput;
	int rc = -1;

	put = small_run(&s, b->secs);
	if (put < 0)
		goto out;
	/* The same keys on both sides, each read once first. */
	s.put = false;
	s.have = SMALL_KEYS;
	for (int i = 0; i < SMALL_CLIENTS; i++)
		if (written[i] < s.have)
			s.have = written[i];
	if (s.have < 1) {
		spx_error(SPX_FAIL, "4 KiB PUT wrote no key");
		goto out;
	}
	s.once = true;
	if (small_run(&s, b->secs) < 0)
		goto out;
	s.once = false;
	get = small_run(&s, b->secs);
	if (get < 0)
		goto out;
	lput = fsync_4k(fdir, SMALL_CLIENTS, b->secs, false);
	if (lput < 0)
		goto out;
	llay = fsync_4k(ldir, SMALL_CLIENTS, b->secs, true);
	if (llay < 0)
		goto out;
	tput = small_put_tmpfs(b);
	if (tput < 0)
		goto out;
	s = (struct small){ .e = &b->ngx.ep, .prefix = nprefix, .have = s.have };
	if (small_files(b, s.have) < 0)
		goto out;
	s.once = true;
	if (small_run(&s, b->secs) < 0)
		goto out;
	s.once = false;
	lget = small_run(&s, b->secs);
	if (lget < 0)
		goto out;
	add(b, "s3", put, "ops/s", true, SMALL_CLIENTS,
	    "PUT 4 KiB, 16 clients", "s3.put4k.ops");
	add(b, "s3", get, "ops/s", true, SMALL_CLIENTS,
	    "GET 4 KiB, 16 clients", "s3.get4k.ops");
	add(b, "limit", lput, "ops/s", true, SMALL_CLIENTS,
	    "durable 4 KiB files (write, fsync file and directory), 16 threads",
	    "s3.limit.fsync4k.ops");
	add(b, "limit", lget, "ops/s", true, SMALL_CLIENTS,
	    "nginx GET 4 KiB, 16 clients", "s3.limit.nginx4k.ops");
	add(b, "limit", llay, "ops/s", true, SMALL_CLIENTS,
	    "durable 4 KiB files as spx lays out a new key, 16 threads",
	    "s3.limit.layout4k.ops");
	if (tput > 0)
		add(b, "s3", tput, "ops/s", true, SMALL_CLIENTS,
		    "PUT 4 KiB, 16 clients, the node on tmpfs",
		    "s3.put4k.tmpfs.ops");
	printf("  PUT 4 KiB, 16 clients %9.0f ops/s   durable 4 KiB files "
	       "%9.0f ops/s  %5.1f%%\n",
	       put, lput, 100.0 * put / lput);
	printf("  PUT 4 KiB, 16 clients %9.0f ops/s   same, spx layout "
	       "%9.0f ops/s  %5.1f%%\n",
	       put, llay, 100.0 * put / llay);
	if (tput > 0)
		printf("  PUT 4 KiB, node on tmpfs %6.0f ops/s   durable 4 KiB "
		       "files %9.0f ops/s  %5.1f%%  (the request path's "
		       "ceiling)\n",
		       tput, lput, 100.0 * tput / lput);
	printf("  %s\n", spx_fs_ordered(b->dir)
			    ? "this file system commits in order: a new small "
			      "object is written, named and synced once"
			    : "a new small object: its file synced, then its "
			      "directory (no ordered commits here)");
	printf("  GET 4 KiB, 16 clients %9.0f ops/s   nginx           "
	       "%9.0f ops/s  %5.1f%%\n",
	       get, lget, 100.0 * get / lget);
	rc = 0;
out:
	free(prefix);
	free(nprefix);
	free(fdir);
	free(ldir);
	return rc;
}

/* ---- listing at scale ---- */

#define LIST_CLIENTS 16
#define LIST_PAGE 1000
#define LIST_BODY (4u << 20)

struct fill {
	const struct ep *e;
	const char *bucket;
	long from, to;	     /* keys l/<from..to-1>, shared by the clients */
	double until;	     /* else: keys w/<client>/<n> until then */
	long ops[LIST_CLIENTS];
	atomic_int err;
};

static void *fill_thread(void *arg, int i)
{
	struct fill *f = arg;
	CURL *h = NULL;
	long n = 0;

	for (long k = f->from + i; !atomic_load(&f->err);
	     k += LIST_CLIENTS) {
		char *path;
		struct req r = { .method = "PUT" };

		if (f->until ? now_s() >= f->until : k >= f->to)
			break;
		path = f->until ? spx_xprintf("/%s/w/%02d/%ld", f->bucket, i, n)
			       : spx_xprintf("/%s/l/%08ld", f->bucket, k);
		r.path = path;
		if (ep_do(&h, f->e, &r) < 0 || r.status != 200) {
			if (r.status)
				req_fail(&r);
			spx_warn("%s", spx_errmsg());
			atomic_store(&f->err, 1);
		}
		spx_cksum_release(&r.crc);
		spx_buf_release(&r.err);
		free(path);
		n++;
	}
	f->ops[i] = n;
	curl_easy_cleanup(h);
	return NULL;
}

/* Fill (or write until f->until): puts per second. */
static double fill_run(struct fill *f)
{
	double t0 = now_s(), total = 0;

	atomic_store(&f->err, 0);
	if (par_run(LIST_CLIENTS, fill_thread, f) < 0)
		return -1;
	t0 = now_s() - t0;
	for (int i = 0; i < LIST_CLIENTS; i++)
		total += (double)f->ops[i];
	if (atomic_load(&f->err))
		return spx_error(SPX_FAIL, "filling %s failed", f->bucket);
	return t0 > 0 ? total / t0 : 0;
}

/* The page of l/ after key `after` ("" first): *keys on it, its last key
 * into `after`, *more when truncated. */
static int list_page(CURL **h, const struct ep *e, const char *bucket,
		     unsigned char *body, struct spx_buf *after, long *keys,
		     bool *more)
{
	struct spx_buf q = SPX_BUF_INIT;
	char *path = spx_xprintf("/%s", bucket);
	struct req r = { .method = "GET", .path = path, .into = body,
			 .into_len = LIST_BODY - 1 };
	const char *p, *last = NULL;
	int rc = -1;

	/* The canonical query: names sorted, values encoded. */
	spx_buf_addf(&q, "list-type=2&max-keys=%d&prefix=l%%2F", LIST_PAGE);
	if (after->len) {
		spx_buf_adds(&q, "&start-after=");
		spx_uri_encode(after->p, after->len, 0, &q);
	}
	r.query = q.p;
	if (ep_do(h, e, &r) < 0)
		goto out;
	if (r.status != 200) {
		req_fail(&r);
		goto out;
	}
	if (r.got >= LIST_BODY - 1) {
		spx_error(SPX_FAIL, "a listing page of %llu bytes",
			  (unsigned long long)r.got);
		goto out;
	}
	body[r.got] = '\0';
	*keys = 0;
	for (p = (const char *)body; (p = strstr(p, "<Key>")); p += 5) {
		(*keys)++;
		last = p + 5;
	}
	*more = strstr((const char *)body, "<IsTruncated>true") != NULL;
	spx_buf_reset(after);
	if (last)
		spx_buf_add(after, last, strcspn(last, "<"));
	if (*more && !last) {
		spx_error(SPX_FAIL, "a truncated page without keys");
		goto out;
	}
	rc = 0;
out:
	spx_cksum_release(&r.crc);
	spx_buf_release(&r.err);
	spx_buf_release(&q);
	free(path);
	return rc;
}

struct lister {
	const struct ep *e;
	const char *bucket;
	double cap;
	unsigned char *body;
	long keys;	/* listed */
	double secs;	/* taken */
	bool done;	/* to the end, within the cap */
	atomic_bool *stop; /* else: list again and again until it is set */
	int rc;
};

/* The whole listing, page by page, up to l->cap seconds; with stop,
 * from the start again each time it ends, until stop is set. */
static void *list_all(void *arg)
{
	struct lister *l = arg;
	struct spx_buf after = SPX_BUF_INIT;
	CURL *h = NULL;
	double t0 = now_s();
	bool more = true;

	l->keys = 0;
	l->rc = 0;
	while (l->stop ? !atomic_load(l->stop)
		       : more && now_s() - t0 < l->cap) {
		long k;

		if (!more)
			spx_buf_reset(&after);
		if (list_page(&h, l->e, l->bucket, l->body, &after, &k,
			      &more) < 0) {
			spx_warn("%s", spx_errmsg());
			l->rc = -1;
			break;
		}
		l->keys += k;
	}
	l->secs = now_s() - t0;
	l->done = !more && !l->rc;
	curl_easy_cleanup(h);
	spx_buf_release(&after);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int listing(struct s3b *b)
{
	unsigned char *body = spx_malloc(LIST_BODY);
	struct fill f = { .e = b->gw, .bucket = b->bucket };
	long have = 0;
	int rc = -1;

	for (int i = 0; i < b->nlists; i++) {
		long n = b->list_n[i];
		struct spx_buf after = SPX_BUF_INIT;
		atomic_bool stop = false;
		struct lister l = { .e = b->gw, .bucket = b->bucket,
				    .cap = b->list_cap, .body = body };
		struct lister bg = l;
		struct fill w = { .e = b->gw, .bucket = b->bucket };
		double puts, beside, first[5];
		char label[96];
		pthread_t t;
		long k;
		bool more;

		f.from = have;
		f.to = n;
		puts = fill_run(&f);
		if (puts < 0)
			goto out;
		have = n;
		/* Writing back what the fill left dirty (gigabytes at a
		 * million keys) is the fill's cost, not the listing's. */
		sync();
		for (int j = 0; j < 5; j++) {
			CURL *h = NULL;
			double t0 = now_s();

			spx_buf_reset(&after);
			/* A fresh connection each time, as a client's first
			 * request would have. */
			if (list_page(&h, b->gw, b->bucket, body, &after, &k,
				      &more) < 0) {
				curl_easy_cleanup(h);
				spx_buf_release(&after);
				goto out;
			}
			first[j] = (now_s() - t0) * 1000;
			curl_easy_cleanup(h);
			if (k != (n < LIST_PAGE ? n : LIST_PAGE)) {
				spx_error(SPX_FAIL, "the first page of %ld keys "
						    "had %ld", n, k);
				spx_buf_release(&after);
				goto out;
			}
		}
		spx_buf_release(&after);
		qsort(first, 5, sizeof(first[0]), cmp_double);
		/* The whole listing, alone: it must give exactly the n. */
		list_all(&l);
		if (l.rc < 0)
			goto out;
		if (l.done && l.keys != n) {
			spx_error(SPX_FAIL, "the listing of %ld keys gave %ld", n,
				  l.keys);
			goto out;
		}
		/* 16 writers of other keys for the phase's seconds, beside a
		 * client listing the bucket over and over. */
		bg.stop = &stop;
		if (pthread_create(&t, NULL, list_all, &bg)) {
			spx_error(SPX_FAIL, "cannot start the lister");
			goto out;
		}
		w.until = now_s() + b->secs;
		beside = fill_run(&w);
		atomic_store(&stop, true);
		pthread_join(t, NULL);
		if (beside < 0 || bg.rc < 0)
			goto out;
		snprintf(label, sizeof(label), "%ld keys: empty PUTs filling",
			 n);
		add(b, "s3", puts, "puts/s", true, LIST_CLIENTS, label,
		    "s3.list.%ld.puts.ops", n);
		snprintf(label, sizeof(label), "%ld keys: first page of 1000",
			 n);
		add(b, "s3", first[2], "ms", false, 1, label,
		    "s3.list.%ld.first.ms", n);
		snprintf(label, sizeof(label), "%ld keys: whole listing", n);
		if (l.done)
			add(b, "s3", l.secs, "s", false, 1, label,
			    "s3.list.%ld.all.s", n);
		snprintf(label, sizeof(label), "%ld keys: listed per second",
			 n);
		add(b, "s3", (double)l.keys / l.secs, "keys/s", true, 1, label,
		    "s3.list.%ld.keys.ops", n);
		snprintf(label, sizeof(label),
			 "%ld keys: PUTs beside a listing client", n);
		add(b, "s3", beside, "puts/s", true, LIST_CLIENTS, label,
		    "s3.list.%ld.putsl.ops", n);
		printf("  listing %8ld keys: filled at %.0f puts/s; first page "
		       "%.1f ms; whole listing %s %.1f s (%ld keys, %.0f "
		       "keys/s); %.0f puts/s beside a listing client\n",
		       n, puts, first[2], l.done ? "in" : "stopped at the cap,",
		       l.secs, l.keys, (double)l.keys / l.secs, beside);
	}
	rc = 0;
out:
	free(body);
	return rc;
}

/* ---- erasure coding ---- */

static int erasure(struct s3b *b)
{
	static const char *const name[] = { "rs10", "rs21", "rs42" };
	const struct want *w = &b->w[0];
	double mib = (double)w->size / MIB, put[3], get[3];
	char sl[32], label[96], *path;

	size_label(w->size, sl, sizeof(sl));
	path = spx_xprintf("/%s/rs", b->bucket);
	for (int i = 0; i < b->nnodes; i++) {
		CURL *h = NULL;
		double tp = put_obj(b, &h, &b->node[i].ep, "rs", w);
		double tg = tp < 0 ? -1 : get_obj(&h, &b->node[i].ep, path, w);

		tg = tg < 0 ? -1 : get_obj(&h, &b->node[i].ep, path, w);

		curl_easy_cleanup(h);
		if (tp < 0 || tg < 0) {
			free(path);
			return -1;
		}
		put[i] = mib / tp, get[i] = mib / tg;
		snprintf(label, sizeof(label), "PUT %s at RS(%d,%d)", sl,
			 b->node[i].k, b->node[i].m);
		add(b, "erasure", put[i], "MiB/s", true, 1, label,
		    "s3.%s.put.mibs", name[i]);
		snprintf(label, sizeof(label), "GET %s at RS(%d,%d)", sl,
			 b->node[i].k, b->node[i].m);
		add(b, "erasure", get[i], "MiB/s", true, 1, label,
		    "s3.%s.get.mibs", name[i]);
	}
	free(path);
	for (int i = 1; i < b->nnodes; i++) {
		snprintf(label, sizeof(label), "write cost of RS(%d,%d) over "
					       "RS(1,0)",
			 b->node[i].k, b->node[i].m);
		add(b, "erasure", put[0] / put[i], "x", false, 1, label,
		    "s3.%s.cost", name[i]);
	}
	printf("  RS(1,0) PUT %.1f GET %.1f | RS(2,1) PUT %.1f GET %.1f "
	       "(write cost %.2fx) | RS(4,2) PUT %.1f GET %.1f (%.2fx) MiB/s\n",
	       put[0], get[0], put[1], get[1], put[0] / put[1], put[2], get[2],
	       put[0] / put[2]);
	return 0;
}

/* ---- set-up ---- */

static int parse_sizes(struct s3b *b, const char *s)
{
	char *copy = spx_strdup(s), *save = NULL;
	int rc = 0;

	b->nsizes = 0;
	for (char *t = strtok_r(copy, ",", &save); t && !rc;
	     t = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (b->nsizes == MAX_SIZES)
			rc = spx_error(SPX_USAGE, "--sizes: at most %d sizes",
				       MAX_SIZES);
		else if (spx_parse_uint("--sizes", t, 1, 1u << 20, &v) < 0)
			rc = -1;
		else
			b->w[b->nsizes++].size = v << 20;
	}
	free(copy);
	if (!rc && !b->nsizes)
		rc = spx_error(SPX_USAGE, "--sizes: give sizes in MiB, e.g. "
					  "256,1024");
	return rc;
}

/* --listing: 1..4 bucket sizes, ascending, 1..10 000 000 keys. */
static int parse_lists(struct s3b *b, const char *s)
{
	char *copy = spx_strdup(s), *save = NULL;
	int rc = 0;

	b->nlists = 0;
	for (char *t = strtok_r(copy, ",", &save); t && !rc;
	     t = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (b->nlists == MAX_LISTS)
			rc = spx_error(SPX_USAGE, "--listing: at most %d sizes",
				       MAX_LISTS);
		else if (spx_parse_uint("--listing", t, 1, 10000000, &v) < 0)
			rc = -1;
		else if (b->nlists && (long)v <= b->list_n[b->nlists - 1])
			rc = spx_error(SPX_USAGE, "--listing: sizes ascending");
		else
			b->list_n[b->nlists++] = (long)v;
	}
	free(copy);
	if (!rc && !b->nlists)
		rc = spx_error(SPX_USAGE, "--listing: give key counts, e.g. "
					  "10000,100000,1000000");
	return rc;
}

/* The digests every size must read back as, before anything is timed. */
static void wants(struct s3b *b)
{
	int big = 0;

	for (int i = 0; i < b->nsizes; i++) {
		pat_digest(SPX_CKSUM_MD5, 0, b->w[i].size, b->w[i].md5);
		pat_digest(SPX_CKSUM_CRC32C, 0, b->w[i].size, b->w[i].crc);
		if (b->w[i].size > b->w[big].size)
			big = i;
	}
	struct want *w = &b->w[big];
	w->nparts = (size_t)((w->size + PART - 1) / PART);
	w->part_crc = spx_calloc(w->nparts, sizeof(*w->part_crc));
	for (size_t p = 0; p < w->nparts; p++) {
		unsigned char d[SPX_CKSUM_MAX];
		uint64_t a = (uint64_t)p * PART;

		pat_digest(SPX_CKSUM_CRC32C, a,
			   w->size - a < PART ? w->size - a : PART, d);
		memcpy(w->part_crc[p], d, 4);
	}
}

static int largest(const struct s3b *b)
{
	int big = 0;

	for (int i = 1; i < b->nsizes; i++)
		if (b->w[i].size > b->w[big].size)
			big = i;
	return big;
}

static int make_bucket(struct s3b *b, CURL **h, const struct ep *e,
		       bool *made)
{
	char *path = spx_xprintf("/%s", b->bucket);
	struct req r = { .method = "PUT", .path = path };
	int rc = 0;

	if (ep_do(h, e, &r) < 0)
		rc = -1;
	else if (r.status == 200 && made)
		*made = true;
	else if (r.status != 200 &&
		 !(r.status == 409 && r.err.len &&
		   memmem(r.err.p, r.err.len, "BucketAlreadyOwnedByYou", 23)))
		rc = req_fail(&r);
	spx_cksum_release(&r.crc);
	spx_buf_release(&r.err);
	free(path);
	return rc;
}

static void delete_path(CURL **h, const struct ep *e, const char *path)
{
	struct req r = { .method = "DELETE", .path = path };

	ep_do(h, e, &r);
	spx_cksum_release(&r.crc);
	spx_buf_release(&r.err);
}

/* --root DIR: a running node's S3 endpoint, admin key and CA. */
static int from_root(struct s3b *b, const char *root)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	const struct spx_conf_node *self;
	struct spx_creds *creds = NULL;
	struct spx_cred key;
	char *base, *pidf;
	int rc = -1;

	spx_node_locate(root, &loc);
	if (spx_conf_load(loc.conf, loc.root, &conf) < 0) {
		spx_node_loc_release(&loc);
		return -1;
	}
	self = spx_conf_self(&conf);
	base = spx_xprintf("%s://%s:%d", self->gw.http ? "http" : "https",
			   strchr(self->gw.bind, ':') ? "[::1]"
			   : strcmp(self->gw.bind, "0.0.0.0") ? self->gw.bind
							      : "127.0.0.1",
			   self->gw.s3_port);
	ep_set(&b->ext, base, self->gw.http ? NULL : conf.tls.ca_cert);
	free(base);
	if (spx_cred_open(conf.credentials.file, &creds) == 0 &&
	    spx_cred_first(creds, &key) == 0) {
		snprintf(b->ext.access_key, sizeof(b->ext.access_key), "%s",
			 key.access_key);
		snprintf(b->ext.secret, sizeof(b->ext.secret), "%s",
			 key.secret);
		snprintf(b->ext.region, sizeof(b->ext.region), "%s",
			 conf.aws.region);
		b->ext.sign = true;
		memset(&key, 0, sizeof(key));
		rc = 0;
	}
	pidf = spx_path_join(loc.root, "run");
	b->gwpid = spx_svc_pid(pidf, "gw");
	free(pidf);
	spx_cred_close(creds);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}

/* --endpoint URL: the key from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. */
static int from_endpoint(struct s3b *b, const char *url)
{
	const char *ak = getenv("AWS_ACCESS_KEY_ID");
	const char *sk = getenv("AWS_SECRET_ACCESS_KEY");
	const char *rg = getenv("AWS_REGION");
	const char *ca = getenv("AWS_CA_BUNDLE");

	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return spx_error(SPX_USAGE, "--endpoint: '%s' is not an http "
					    "or https URL", url);
	if (!ak || !*ak || !sk || !*sk)
		return spx_error(SPX_USAGE, "--endpoint needs "
					    "AWS_ACCESS_KEY_ID and "
					    "AWS_SECRET_ACCESS_KEY");
	ep_set(&b->ext, url, ca && *ca ? ca : NULL);
	snprintf(b->ext.access_key, sizeof(b->ext.access_key), "%s", ak);
	snprintf(b->ext.secret, sizeof(b->ext.secret), "%s", sk);
	snprintf(b->ext.region, sizeof(b->ext.region), "%s",
		 rg && *rg ? rg : "us-east-1");
	b->ext.sign = true;
	return 0;
}

/* ---- the report ---- */

/* The report is printed and also written, as a Markdown table, to
 * RESULTS/TAG/summary.md: the file the README's figures are copied from
 * (scripts/bench-readme.sh), never typed by hand. */
struct report {
	const struct spx_bench_runs *rs;
	const struct spx_bench_stat *s;
	size_t n;
	struct spx_buf md;
	int met, unmet, unresolved;
};

/* How a figure stands against a target of its limit. */
enum verdict { V_NONE, V_MET, V_NOT_MET, V_UNRESOLVED };

/* One row: the figure (median and each run), the limit, the ratio as the
 * median of the runs' own ratios [min-max], and the verdict against
 * target (0: none). A figure above its limit is "limit not resolved": the
 * limit did not measure what binds here, so nothing is met or missed.
 * A target below 0: the second figure is beside it for comparison, not
 * as its limit, and there is no verdict. */
static void row(struct report *rp, const char *id, const char *lim_id,
		double target, const char *note)
{
	const struct spx_bench_stat *a = spx_bench_stat_find(rp->s, rp->n, id);
	const struct spx_bench_stat *l =
		lim_id ? spx_bench_stat_find(rp->s, rp->n, lim_id) : NULL;
	double med = 0, lo = 0, hi = 0;
	enum verdict v = V_NONE;
	char runs[160] = "", ratio[64] = "", lim[96] = "";
	size_t k;

	if (!a)
		return;
	for (size_t i = 0, o = 0; a->n > 1 && i < a->n && o < sizeof(runs);
	     i++)
		o += (size_t)snprintf(runs + o, sizeof(runs) - o, "%s%.1f",
				      i ? " / " : "", a->values[i]);
	printf("  %-44s %10.1f %-6s", a->f->label, a->median, a->f->unit);
	if (runs[0])
		printf(" (runs: %s)", runs);
	printf("\n");
	if (l &&
	    (k = spx_bench_run_ratios(rp->rs, id, lim_id, &med, &lo, &hi))) {
		if (k > 1)
			snprintf(ratio, sizeof(ratio), "%.0f%% [%.0f-%.0f%%]",
				 100 * med, 100 * lo, 100 * hi);
		else
			snprintf(ratio, sizeof(ratio), "%.0f%%", 100 * med);
		snprintf(lim, sizeof(lim), "%s %.1f %s", l->f->label,
			 l->median, l->f->unit);
		if (target < 0)
			v = V_NONE;
		else if (med > 1.0)
			v = V_UNRESOLVED;
		else if (target > 0)
			v = med >= target ? V_MET : V_NOT_MET;
		printf("      vs %-41s %10.1f %-6s %s", l->f->label, l->median,
		       l->f->unit, ratio);
		if (v == V_UNRESOLVED)
			printf("  limit not resolved");
		else if (v != V_NONE)
			printf("  target >= %.0f%%: %s", 100 * target,
			       v == V_MET ? "met" : "NOT MET");
		printf("%s%s\n", note ? "  " : "", note ? note : "");
	}
	rp->met += v == V_MET;
	rp->unmet += v == V_NOT_MET;
	rp->unresolved += v == V_UNRESOLVED;
	spx_buf_addf(&rp->md, "| %s | %.1f %s%s%s%s | %s | %s | ",
		     a->f->label, a->median, a->f->unit,
		     runs[0] ? " (" : "", runs, runs[0] ? ")" : "",
		     lim[0] ? lim : "", ratio);
	if (v == V_UNRESOLVED)
		spx_buf_adds(&rp->md, "limit not resolved");
	else if (v != V_NONE)
		spx_buf_addf(&rp->md, "%s (target >= %.0f%%)",
			     v == V_MET ? "met" : "NOT MET", 100 * target);
	spx_buf_adds(&rp->md, " |\n");
}

/* From the smallest bucket to the largest: how each listing figure grew,
 * beside how the bucket did (linear: the same factor; O(page + log n):
 * about 1 for the first page). */
static void list_growth(const struct s3b *b, struct report *rp)
{
	static const struct {
		const char *f, *what;
	} g[] = {
		{ "first.ms", "first page" },
		{ "all.s", "whole listing" },
		{ "putsl.ops", "puts/s beside a listing" },
	};
	long lo = b->list_n[0], hi = b->list_n[b->nlists - 1];
	char id[96];

	for (size_t j = 0; j < SPX_ARRAY_SIZE(g); j++) {
		const struct spx_bench_stat *a, *z;

		snprintf(id, sizeof(id), "s3.list.%ld.%s", lo, g[j].f);
		a = spx_bench_stat_find(rp->s, rp->n, id);
		snprintf(id, sizeof(id), "s3.list.%ld.%s", hi, g[j].f);
		z = spx_bench_stat_find(rp->s, rp->n, id);
		if (!a || !z || a->median <= 0) {
			printf("  growth of the %s from %ld to %ld keys: not "
			       "measured (a listing stopped at the cap)\n",
			       g[j].what, lo, hi);
			continue;
		}
		printf("  growth of the %s from %ld to %ld keys (x%.0f): "
		       "x%.2f\n",
		       g[j].what, lo, hi, (double)hi / (double)lo,
		       z->median / a->median);
		spx_buf_addf(&rp->md, "| growth of the %s, %ld to %ld keys "
				      "(x%.0f) | x%.2f |  |  |  |\n",
			     g[j].what, lo, hi, (double)hi / (double)lo,
			     z->median / a->median);
	}
}

static void report(const struct s3b *b, const struct spx_bench_runs *rs,
		   const char *tag, const char *results)
{
	struct spx_bench_stat *s = NULL;
	size_t n = spx_bench_summarise(rs, &s);
	struct report rp = { .rs = rs, .s = s, .n = n, .md = SPX_BUF_INIT };
	const struct spx_bench_stat *md5 =
		spx_bench_stat_find(s, n, "s3.limit.md5.mibs");
	char id[96], lim[96], sn[16], note[160], *path;
	bool tls = !strncmp(b->gw->base, "https:", 6);

	printf("\n== spx-bench s3: medians of %zu run%s (tag %s); each ratio "
	       "is the median of the runs' own ratios\n",
	       rs->n, rs->n == 1 ? "" : "s", tag);
	spx_buf_addf(&rp.md, "spx-bench s3, tag %s: %zu run%s", tag, rs->n,
		     rs->n == 1 ? "" : "s");
	if (rs->n)
		spx_buf_addf(&rp.md, ", %s to %s", rs->v[0].time,
			     rs->v[rs->n - 1].time);
	spx_buf_adds(&rp.md, ".\n\n");
	spx_bench_machine(&rp.md);
	spx_buf_addf(&rp.md,
		     "- figures are medians over the runs (each run's value "
		     "in brackets); a ratio is the median of the runs' own "
		     "ratios, each figure over its limit measured in the same "
		     "run [lowest-highest]\n%s\n"
		     "| figure | spx | limit (same runs) | ratio | verdict |\n"
		     "|---|---|---|---|---|\n",
		     tls ? "- the gateway answered over HTTPS and nginx over "
			   "plain HTTP: the ratios include TLS\n"
			 : "");
	if (tls)
		printf("== the gateway answered over HTTPS and nginx over plain "
		       "HTTP: the ratios include TLS (an --http node, or "
		       "--endpoint http://..., compares like with like)\n");
	row(&rp, "s3.limit.md5.mibs", NULL, 0, NULL);
	row(&rp, "s3.limit.sha256.mibs", NULL, 0, NULL);
	for (int i = 0; i < b->nsizes; i++) {
		const struct spx_bench_stat *w;

		size_name(b->w[i].size, sn, sizeof(sn));
		snprintf(id, sizeof(id), "s3.put.%s.mibs", sn);
		snprintf(lim, sizeof(lim), "s3.limit.write.%s.mibs", sn);
		w = spx_bench_stat_find(s, n, lim);
		/* Every PUT hashes its bytes with MD5 for the ETag: when MD5
		 * is slower than the disk, MD5 is the ceiling the target is
		 * set against. A PUT above the raw write means that write did
		 * not measure this machine's ceiling: not resolved. */
		{
			bool md5_binds = w && md5 && md5->median < w->median;
			const char *bind = md5_binds ? "s3.limit.md5.mibs" : lim;
			const char *other = md5_binds ? lim : "s3.limit.md5.mibs";
			double med = 0, lo = 0, hi = 0;
			/* When the PUT beats the ceiling that should bind, that
			 * one is not resolved here, and the target is judged
			 * against the other. */
			bool unresolved = spx_bench_run_ratios(rp.rs, id, bind,
							       &med, &lo, &hi) &&
					  med > 1.0;

			snprintf(note, sizeof(note), "(%s binds%s)",
				 md5_binds ? "MD5" : "the raw write",
				 md5_binds ? "" : "; see bench/README.md");
			row(&rp, id, bind, 0.8, note);
			row(&rp, id, other, unresolved ? 0.8 : 0, NULL);
		}
		snprintf(id, sizeof(id), "s3.get.%s.mibs", sn);
		snprintf(lim, sizeof(lim), "s3.limit.nginx.%s.mibs", sn);
		row(&rp, id, lim, 0.8, NULL);
		snprintf(id, sizeof(id), "s3.put.%s.rss.mib", sn);
		row(&rp, id, NULL, 0, NULL);
		snprintf(id, sizeof(id), "s3.put.%s.rssgrow.mib", sn);
		row(&rp, id, NULL, 0, NULL);
	}
	row(&rp, "s3.rget.mibs", "s3.limit.nginx.rget.mibs", 0, NULL);
	row(&rp, "s3.put4k.ops", "s3.limit.fsync4k.ops", 0.6, NULL);
	row(&rp, "s3.put4k.ops", "s3.limit.layout4k.ops", 0.6, NULL);
	row(&rp, "s3.put4k.tmpfs.ops", "s3.limit.fsync4k.ops", -1, NULL);
	row(&rp, "s3.get4k.ops", "s3.limit.nginx4k.ops", 0.5, NULL);
	row(&rp, "s3.rs10.put.mibs", NULL, 0, NULL);
	row(&rp, "s3.rs21.put.mibs", NULL, 0, NULL);
	row(&rp, "s3.rs42.put.mibs", NULL, 0, NULL);
	row(&rp, "s3.rs10.get.mibs", NULL, 0, NULL);
	row(&rp, "s3.rs21.get.mibs", NULL, 0, NULL);
	row(&rp, "s3.rs42.get.mibs", NULL, 0, NULL);
	for (int i = 0; i < 2; i++) {
		const struct spx_bench_stat *c = spx_bench_stat_find(
			s, n, i ? "s3.rs42.cost" : "s3.rs21.cost");
		bool met;

		if (!c)
			continue;
		met = c->median <= 1.6;
		printf("  %-44s %10.2fx%s%s\n", c->f->label, c->median,
		       i ? "" : "  target <= 1.60x: ",
		       i ? "" : met ? "met" : "NOT MET");
		spx_buf_addf(&rp.md, "| %s | %.2fx |  |  | %s |\n",
			     c->f->label, c->median,
			     i ? "" : met ? "met (target <= 1.60x)"
					  : "NOT MET (target <= 1.60x)");
		if (!i)
			met ? rp.met++ : rp.unmet++;
	}
	for (int i = 0; i < b->nlists; i++) {
		static const char *const f[] = { "puts.ops", "first.ms",
						 "all.s", "keys.ops",
						 "putsl.ops" };

		for (size_t j = 0; j < SPX_ARRAY_SIZE(f); j++) {
			snprintf(id, sizeof(id), "s3.list.%ld.%s",
				 b->list_n[i], f[j]);
			row(&rp, id, NULL, 0, NULL);
		}
	}
	if (b->nlists > 1)
		list_growth(b, &rp);
	printf("== every object read back matched: the ETag of each PUT is "
	       "the MD5 of what was sent, and every byte of each GET its "
	       "CRC-32C\n");
	printf("== targets met: %d of %d%s\n", rp.met, rp.met + rp.unmet,
	       rp.unresolved ? "; some limits not resolved on this machine"
			     : "");
	spx_buf_addf(&rp.md,
		     "\nTargets met: %d of %d%s. Every PUT's ETag was the MD5 "
		     "of what was sent and every byte read back matched its "
		     "CRC-32C.\n",
		     rp.met, rp.met + rp.unmet,
		     rp.unresolved ? "; a figure above its limit is \"limit "
				     "not resolved\", neither met nor missed"
				   : "");
	path = spx_xprintf("%s/%s/summary.md", results, tag);
	if (spx_write_file(path, rp.md.p, rp.md.len, 0644, false) < 0)
		spx_warn("s3: %s", spx_errmsg());
	else
		printf("== summary: %s\n", path);
	free(path);
	spx_buf_release(&rp.md);
	spx_bench_stats_free(s, n);
}

/* ---- the verb ---- */

static int one_run(struct s3b *b)
{
	int big = largest(b);

	if (hashing(b) < 0)
		return -1;
	for (int i = 0; i < b->nsizes; i++)
		if (stream(b, &b->w[i], i == big) < 0)
			return -1;
	if (!b->nnodes)
		return 0;
	if (ranged(b, &b->w[big]) < 0 || small_ops(b) < 0 || erasure(b) < 0 ||
	    (b->nlists && listing(b) < 0))
		return -1;
	return 0;
}

/* One run of the suite into r (spx_bench_repeat's step). */
static int run_one(void *ctx, struct spx_bench_run *r)
{
	struct s3b *b = ctx;

	b->run = r;
	return one_run(b);
}

int cmd_s3(const struct spx_args *a, const char *results)
{
	static const int rs[3][2] = { { 1, 0 }, { 2, 1 }, { 4, 2 } };
	struct s3b b = { .bucket = "spx-bench" };
	const char *tag = spx_arg(a, "tag"), *env = getenv("BENCHDIR");
	const char *root = spx_arg(a, "root"), *url = spx_arg(a, "endpoint");
	struct spx_bench_runs runs = { 0 };
	char host[64] = "", *deftag = NULL, *scratch = NULL;
	uint64_t nruns = 1;
	int rc = SPX_FAIL;

	b.quick = spx_flag(a, "quick");
	b.secs = b.quick ? 0.5 : 5;
	b.dir = spx_arg(a, "dir") ? spx_arg(a, "dir")
		: env && *env	  ? env
				  : "/var/tmp/spx-bench";
	if (spx_arg(a, "bucket"))
		b.bucket = spx_arg(a, "bucket");
	if (spx_arg(a, "runs") &&
	    spx_parse_uint("--runs", spx_arg(a, "runs"), 1, 100, &nruns) < 0)
		goto usage;
	if (spx_arg(a, "seconds")) {
		uint64_t v;

		if (spx_parse_uint("--seconds", spx_arg(a, "seconds"), 1, 600,
				   &v) < 0)
			goto usage;
		b.secs = (double)v;
	}
	if (parse_sizes(&b, spx_arg(a, "sizes") ? spx_arg(a, "sizes")
				  : b.quick	       ? "8,24"
						       : "256,1024") < 0)
		goto usage;
	if (spx_arg(a, "listing") && parse_lists(&b, spx_arg(a, "listing")) < 0)
		goto usage;
	b.list_cap = 60;
	if (spx_arg(a, "list-cap")) {
		uint64_t v;

		if (spx_parse_uint("--list-cap", spx_arg(a, "list-cap"), 1,
				   86400, &v) < 0)
			goto usage;
		b.list_cap = (double)v;
	}
	if (root && url) {
		spx_error(SPX_USAGE, "give --root or --endpoint, not both");
		goto usage;
	}
	if (!tag) {
		gethostname(host, sizeof(host) - 1);
		deftag = spx_xprintf("s3-%.*s", (int)strcspn(host, "."), host);
		tag = deftag;
	}
	if (!spx_bench_tag_valid(tag)) {
		spx_error(SPX_USAGE, "--tag: '%s' is not [A-Za-z0-9._-]{1,64}",
			  tag);
		goto usage;
	}
	if ((root && from_root(&b, root) < 0) ||
	    (url && from_endpoint(&b, url) < 0))
		goto fail;
	if (pat_init() < 0)
		goto fail;
	/* nginx's workers read the docroot below. */
	scratch = spx_bench_scratch(b.dir, "s3", 0755);
	if (!scratch)
		goto fail;
	b.dir = scratch;
	b.docroot = spx_xprintf("%s/www", scratch);
	if (spx_mkdirs(b.docroot, 0755) < 0)
		goto fail;
	printf("== spx-bench s3: %s, under %s\n",
	       root || url ? b.ext.base : "private nodes (plain HTTP, loopback)",
	       scratch);
	wants(&b);
	{
		char *prefix = spx_xprintf("%s/nginx", scratch);
		int e = nginx_start(&b.ngx, prefix, b.docroot);

		free(prefix);
		if (e < 0)
			goto fail;
	}
	if (root || url) {
		b.gw = &b.ext;
		if (make_bucket(&b, &b.h, b.gw, &b.own_bucket) < 0)
			goto fail;
	} else {
		for (int i = 0; i < 3; i++) {
			char *nr = spx_xprintf("%s/rs%d%d", scratch, rs[i][0],
					       rs[i][1]);
			int e = s3node_start(&b.node[i], nr, rs[i][0], rs[i][1]);

			free(nr);
			if (e < 0)
				goto fail;
			b.nnodes++;
			CURL *h = NULL;
			e = make_bucket(&b, &h, &b.node[i].ep, NULL);
			curl_easy_cleanup(h);
			if (e < 0)
				goto fail;
		}
		b.gw = &b.node[0].ep;
		b.gwpid = b.node[0].gw;
	}
	if (spx_bench_repeat("s3", tag, nruns, b.quick, results, run_one,
			     &b, &runs) < 0)
		goto fail;
	report(&b, &runs, tag, results);
	rc = 0;
	goto out;
usage:
	rc = SPX_USAGE;
fail:
	spx_warn("s3: %s", spx_errmsg());
	if (rc != SPX_USAGE)
		rc = spx_errstatus();
out:
	if (b.gw == &b.ext) {
		for (int i = 0; i < b.nsizes; i++) {
			char sn[16], *p;

			size_name(b.w[i].size, sn, sizeof(sn));
			p = spx_xprintf("/%s/obj-%s", b.bucket, sn);
			delete_path(&b.h, b.gw, p);
			free(p);
		}
		if (b.own_bucket) {
			char *p = spx_xprintf("/%s", b.bucket);

			delete_path(&b.h, b.gw, p);
			free(p);
		}
	}
	curl_easy_cleanup(b.h);
	curl_easy_cleanup(b.hn);
	for (int i = 0; i < b.nnodes; i++)
		s3node_stop(&b.node[i]);
	nginx_stop(&b.ngx);
	ep_release(&b.ext);
	if (scratch && !spx_flag(a, "keep"))
		spx_rmtree(scratch);
	spx_bench_runs_release(&runs);
	for (int i = 0; i < b.nsizes; i++)
		free(b.w[i].part_crc);
	free(b.docroot);
	free(scratch);
	free(deftag);
	return rc;
}
