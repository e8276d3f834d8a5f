/* index.c: each bucket's sorted index of its keys, so that a page of a
 * listing costs O(page + log n) rather than a read of the whole key
 * directory.
 *
 * Drive 0 keeps it in b/BUCKET/x:
 *   log       records appended (O_APPEND) under the key's lock by each
 *             commit that changes a key's current version: '+' before it
 *             (the key has a version, undescribed), then after it what
 *             the current version now is: '=' an object, with its size,
 *             ETag and time, 'd' a delete marker, '-' none. So the index
 *             never misses a key that has a version, and never describes
 *             one wrongly: a writer killed between its records leaves the
 *             '+', for which a listing reads the key's metadata (and
 *             notes what it found, under the key's lock).
 *   r.GEN     immutable runs: records in strictly increasing key order,
 *             then their offsets, searched in place through mmap.
 *   manifest  the current runs, oldest first, and the boot they belong
 *             to.
 *
 * The key directories stay the truth. Nothing here is fsynced: a kill -9
 * loses nothing (the page cache outlives the process), and an index made
 * in an earlier boot, whose log may have lost its tail in a power cut,
 * is rebuilt from the key directories when it is first used. A rebuilt
 * index names its keys undescribed; the first listing describes them.
 *
 *   log.S     the sealed log: a log a fold set aside, named in the
 *             manifest while the fold merges it.
 *
 * Folding, one at a time per bucket (its fold lock), first seals the log
 * under the bucket's exclusive lock, so that no commit is between its
 * records: it names log.S in a new manifest and renames the log to it,
 * and commits go on into a new log. Then, with no lock of the bucket's,
 * it merges the sealed log and the newest runs into one new run, and
 * under the exclusive lock again renames in the manifest that names the
 * run and no sealed log; the sealed log and the runs it replaced go last.
 * A fold killed on the way is finished by the next. Runs are tiered: the
 * newest ones are merged while the one before them holds at most twice
 * as many records, so there are O(log n) runs and a key is rewritten
 * O(log n) times. Readers take no lock: they read the manifest before
 * and after the runs and the logs, and start again if it changed. */
#include "spx.h"

#include "checksum.h"

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "file.h"
#include "hex.h"
#include "obj/index.h"

#define IDX_READ_FOLD (64u << 10)	/* a reader folds a log this big */
#define IDX_WRITE_FOLD (4u << 20)	/* and a writer one this big */
#define IDX_LOG_MAX (512u << 20)	/* larger: rebuilt */
#define IDX_MANIFEST_MAX 4096
#define RUN_MAGIC "SPXIDX2\n"
#define RUN_HEAD 24
#define RUN_FLUSH (1u << 20)

enum { IDX_OK, IDX_AGAIN, IDX_REBUILD, IDX_FOLD };

static uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static int keycmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al > bl) - (al < bl);
}

/* ---- records, logs, runs, manifests ---- */

void obj_idx_rec_put(struct spx_buf *b, const struct obj_idx_rec *r)
{
	unsigned char h[3] = { (unsigned char)r->op, (unsigned char)r->len,
			       (unsigned char)(r->len >> 8) };
	size_t at = b->len;
	unsigned char t[OBJ_IDX_ATTR_SIZE];
	uint32_t c;

	spx_buf_add(b, h, 3);
	spx_buf_add(b, r->key, r->len);
	if (r->op == '=') {
		put64(t, r->size);
		put64(t + 8, (uint64_t)r->mtime_ms);
		t[16] = r->etaglen;
		spx_buf_add(b, t, OBJ_IDX_ATTR_SIZE);
		spx_buf_add(b, r->etag, r->etaglen);
	}
	c = spx_crc32c(b->p + at, b->len - at);
	for (int i = 0; i < 4; i++)
		t[i] = (unsigned char)(c >> (8 * i));
	spx_buf_add(b, t, 4);
}

void obj_idx_rec_of(struct obj_idx_rec *r, const char *key,
		    const struct spx_obj_meta *m)
{
	size_t el = m ? strnlen(m->etag, sizeof(m->etag) - 1) : 0;

	*r = (struct obj_idx_rec){
		.key = key, .len = (uint16_t)strlen(key),
		.op = !m ? '-' : m->delete_marker ? 'd' : '=',
	};
	if (r->op == '=') {
		r->size = m->size;
		r->mtime_ms = m->mtime_ms;
		r->etag = m->etag;
		r->etaglen = (uint8_t)el;
	}
}

size_t obj_idx_rec_parse(const void *vp, size_t n, struct obj_idx_rec *r)
{
	const unsigned char *p = vp;
	size_t len, at, el = 0;
	char op;

	if (n < 3)
		return 0;
	op = (char)p[0];
	len = get16(p + 1);
	if ((op != '+' && op != '-' && op != '=' && op != 'd') || !len ||
	    len > SPX_OBJ_KEY_MAX)
		return (size_t)-1;
	at = 3 + len;
	if (op == '=') {
		if (n < at + OBJ_IDX_ATTR_SIZE)
			return 0;
		el = p[at + 16];
		if (el >= SPX_OBJ_ETAG_SIZE)
			return (size_t)-1;
		at += OBJ_IDX_ATTR_SIZE + el;
	}
	if (n < at + 4)
		return 0;
	if (get32(p + at) != spx_crc32c(p, at) || memchr(p + 3, 0, len) ||
	    (el && memchr(p + at - el, 0, el)))
		return (size_t)-1;
	*r = (struct obj_idx_rec){
		.op = op, .len = (uint16_t)len, .key = (const char *)p + 3,
	};
	if (op == '=') {
		r->size = get64(p + 3 + len);
		r->mtime_ms = (int64_t)get64(p + 3 + len + 8);
		r->etaglen = (uint8_t)el;
		r->etag = (const char *)p + at - el;
	}
	return at + 4;
}

static int rec_order(const void *a, const void *b)
{
	const struct obj_idx_rec *x = a, *y = b;
	int c = keycmp(x->key, x->len, y->key, y->len);

	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sort v by key and keep the last of each. */
static size_t recs_settle(struct obj_idx_rec *v, size_t n)
{
	size_t j = 0;

	if (n > 1)
		qsort(v, n, sizeof(*v), rec_order);
	for (size_t i = 0; i < n; i++)
		if (i + 1 == n || keycmp(v[i].key, v[i].len, v[i + 1].key,
					 v[i + 1].len))
			v[j++] = v[i];
	return j;
}

int obj_idx_log_parse(const void *vp, size_t n, struct obj_idx_rec **out,
		      size_t *nout)
{
	const unsigned char *p = vp;
	struct obj_idx_rec *v = NULL, r;
	size_t nv = 0, cap = 0, at = 0, k;

	*out = NULL;
	*nout = 0;
	while (at < n) {
		k = obj_idx_rec_parse(p + at, n - at, &r);
		if (k == 0)
			break; /* the last one, still being appended */
		if (k == (size_t)-1) {
			free(v);
			return -1;
		}
		if (nv == cap) {
			cap = cap ? 2 * cap : 64;
			v = spx_realloc(v, cap * sizeof(*v));
		}
		r.seq = (uint32_t)nv;
		v[nv++] = r;
		at += k;
	}
	*out = v;
	*nout = recs_settle(v, nv);
	return 0;
}

bool obj_idx_run_frame(const void *vp, size_t n, uint64_t *count)
{
	const unsigned char *p = vp;
	uint64_t c, o;

	if (n < RUN_HEAD || memcmp(p, RUN_MAGIC, 8))
		return false;
	c = get64(p + 8);
	o = get64(p + 16);
	if (o < RUN_HEAD || o > n || (n - o) % 8 || (n - o) / 8 != c)
		return false;
	*count = c;
	return true;
}

bool obj_idx_run_rec(const void *vp, size_t n, uint64_t i,
		     struct obj_idx_rec *r)
{
	const unsigned char *p = vp;
	uint64_t o = get64(p + 16), at;
	size_t k;

	(void)n; /* framed: o + 8 * count == n */
	at = get64(p + o + 8 * i);
	if (at < RUN_HEAD || at >= o)
		return false;
	k = obj_idx_rec_parse(p + at, (size_t)(o - at), r);
	return k && k != (size_t)-1;
}

static bool parse_u64(const char *s, uint64_t *v, const char **end)
{
	int n = 0;

	*v = 0;
	for (; *s >= '0' && *s <= '9' && n < 19; s++, n++)
		*v = *v * 10 + (uint64_t)(*s - '0');
	*end = s;
	return n > 0 && !(*s >= '0' && *s <= '9');
}

static bool boot_valid(const char *s)
{
	if (!*s || strlen(s) >= 40)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
		      *s == '-'))
			return false;
	return true;
}

int obj_idx_manifest_parse(const char *p, size_t n,
			   struct obj_idx_manifest *m)
{
	char line[128];
	const char *e;
	size_t at = 0;
	int ln = 0;

	memset(m, 0, sizeof(*m));
	for (; at < n; ln++) {
		const char *nl = memchr(p + at, '\n', n - at);
		size_t l = nl ? (size_t)(nl - (p + at)) : n - at;
		uint64_t a, b;

		if (!nl || l >= sizeof(line) || memchr(p + at, 0, l))
			return -1;
		memcpy(line, p + at, l);
		line[l] = '\0';
		at += l + 1;
		if (ln == 0) {
			if (strcmp(line, "spx-index 2"))
				return -1;
		} else if (ln == 1) {
			if (strncmp(line, "boot ", 5) || !boot_valid(line + 5))
				return -1;
			memcpy(m->boot, line + 5, strlen(line + 5) + 1);
		} else if (ln == 2) {
			if (strncmp(line, "gen ", 4) ||
			    !parse_u64(line + 4, &m->gen, &e) || *e)
				return -1;
		} else if (ln == 3 && !strncmp(line, "sealed ", 7)) {
			if (!parse_u64(line + 7, &m->sealed, &e) || *e ||
			    !m->sealed || m->sealed > m->gen)
				return -1;
		} else {
			if (m->nruns == OBJ_IDX_MAX_RUNS ||
			    strncmp(line, "run ", 4) ||
			    !parse_u64(line + 4, &a, &e) || *e != ' ' ||
			    !parse_u64(e + 1, &b, &e) || *e || a > m->gen)
				return -1;
			m->run_gen[m->nruns] = a;
			m->run_count[m->nruns++] = b;
		}
	}
	return ln >= 3 ? 0 : -1;
}

/* ---- the files ---- */

static pthread_once_t boot_once = PTHREAD_ONCE_INIT;
static char boot[40] = "unknown";

static void boot_read(void)
{
	char b[64];
	size_t n = 0;

	if (spx_read_small("/proc/sys/kernel/random/boot_id", b, sizeof(b) - 1,
			   &n) == 1) {
		while (n && (b[n - 1] == '\n' || b[n - 1] == ' '))
			n--;
		b[n] = '\0';
		if (boot_valid(b))
			memcpy(boot, b, n + 1); /* valid: under 40 */
	}
	spx_error_clear();
}

static const char *boot_id(void)
{
	pthread_once(&boot_once, boot_read);
	return boot;
}

/* b/BUCKET/x on drive 0, or a file in it (caller frees). */
static char *xpath(struct spx_obj *s, const char *bucket, const char *name)
{
	return name ? spx_xprintf("%s/b/%s/x/%s", s->drives[0], bucket, name)
		    : spx_xprintf("%s/b/%s/x", s->drives[0], bucket);
}

static char *run_path(struct spx_obj *s, const char *bucket, uint64_t gen)
{
	char name[32];

	snprintf(name, sizeof(name), "r.%" PRIu64, gen);
	return xpath(s, bucket, name);
}

/* 1 and *m, 0 when there is none or it is not a manifest, or an error. */
static int manifest_read(struct spx_obj *s, const char *bucket,
			 struct obj_idx_manifest *m)
{
	char *p = xpath(s, bucket, "manifest"), buf[IDX_MANIFEST_MAX];
	size_t n = 0;
	int rc = spx_read_small(p, buf, sizeof(buf), &n);

	free(p);
	if (rc < 0)
		return obj_err(SPX_OBJ_INTERNAL, "cannot read the index of '%s'",
			       bucket);
	if (rc == 0 || n == sizeof(buf) || obj_idx_manifest_parse(buf, n, m) < 0)
		return 0;
	return 1;
}

/* Write a file of the index by rename (no fsync: see the top). */
static int xput(struct spx_obj *s, const char *bucket, const char *name,
		const struct spx_buf *b)
{
	char *p = xpath(s, bucket, name), *t = xpath(s, bucket, ".put.tmp");
	int fd = open(t, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = 0;

	if (fd < 0 || spx_write_all(fd, b->p, b->len, t) < 0)
		rc = obj_errno("cannot write '%s'", t);
	if (fd >= 0 && close(fd) < 0 && !rc)
		rc = obj_errno("cannot write '%s'", t);
	if (!rc && rename(t, p) < 0)
		rc = obj_errno("cannot rename '%s'", t);
	if (rc)
		unlink(t);
	free(p);
	free(t);
	return rc;
}

static int manifest_put(struct spx_obj *s, const char *bucket,
			const struct obj_idx_manifest *m)
{
	struct spx_buf b = SPX_BUF_INIT;
	int rc;

	spx_buf_addf(&b, "spx-index 2\nboot %s\ngen %" PRIu64 "\n", m->boot,
		     m->gen);
	if (m->sealed)
		spx_buf_addf(&b, "sealed %" PRIu64 "\n", m->sealed);
	for (int i = 0; i < m->nruns; i++)
		spx_buf_addf(&b, "run %" PRIu64 " %" PRIu64 "\n", m->run_gen[i],
			     m->run_count[i]);
	rc = xput(s, bucket, "manifest", &b);
	spx_buf_release(&b);
	return rc;
}

/* b/BUCKET/x, made if it is not there. */
static int xdir_make(struct spx_obj *s, const char *bucket)
{
	char *d = xpath(s, bucket, NULL);
	int rc = 0;

	if (mkdir(d, 0755) < 0 && errno != EEXIST)
		rc = obj_errno("cannot create '%s'", d);
	free(d);
	return rc;
}

int obj_idx_create(struct spx_obj *s, const char *bucket)
{
	struct obj_idx_manifest m;
	int rc;

	if ((rc = xdir_make(s, bucket)) < 0)
		return rc;
	memset(&m, 0, sizeof(m));
	snprintf(m.boot, sizeof(m.boot), "%s", boot_id());
	return manifest_put(s, bucket, &m);
}

static int log_empty(struct spx_obj *s, const char *bucket)
{
	char *p = xpath(s, bucket, "log");
	int rc = 0;

	if (truncate(p, 0) < 0 && errno != ENOENT)
		rc = obj_errno("cannot empty '%s'", p);
	free(p);
	return rc;
}

/* ---- reading ---- */

struct src {
	const unsigned char *map;	/* a run, mapped */
	size_t maplen;
	const struct obj_idx_rec *v;	/* or the log's records */
	uint64_t count, pos;
};

struct obj_idx {
	struct obj_idx_manifest man;
	/* Runs oldest first, the sealed log (while the manifest names
	 * one), the log. */
	struct src src[OBJ_IDX_MAX_RUNS + 2];
	int nsrc;
	bool borrowed;		/* a view of another's sources */
	struct spx_buf log, slog;
	struct obj_idx_rec *lv, *slv;
	bool slog_there;	/* the sealed log's file was found */
	char last[SPX_OBJ_KEY_MAX + 1];
	size_t lastlen;
	bool have_last, bad;
};

static struct obj_idx *idx_new(void)
{
	struct obj_idx *x = spx_calloc(1, sizeof(*x));

	x->log = (struct spx_buf)SPX_BUF_INIT;
	x->slog = (struct spx_buf)SPX_BUF_INIT;
	return x;
}

void obj_idx_close(struct obj_idx *x)
{
	if (!x)
		return;
	for (int i = 0; i < x->nsrc && !x->borrowed; i++)
		if (x->src[i].map)
			munmap((void *)x->src[i].map, x->src[i].maplen);
	spx_buf_release(&x->log);
	spx_buf_release(&x->slog);
	free(x->lv);
	free(x->slv);
	free(x);
}

bool obj_idx_bad(const struct obj_idx *x)
{
	return x->bad;
}

static bool src_at(struct obj_idx *x, const struct src *c, uint64_t i,
		   struct obj_idx_rec *r)
{
	if (!c->map) {
		*r = c->v[i];
		return true;
	}
	if (!obj_idx_run_rec(c->map, c->maplen, i, r)) {
		x->bad = true;
		return false;
	}
	return true;
}

static bool src_cur(struct obj_idx *x, const struct src *c,
		    struct obj_idx_rec *r)
{
	return c->pos < c->count && src_at(x, c, c->pos, r);
}

static void src_seek(struct obj_idx *x, struct src *c, const char *key,
		     size_t len, bool inclusive)
{
	uint64_t lo = 0, hi = c->count;
	struct obj_idx_rec r;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int cmp;

		if (!src_at(x, c, mid, &r)) {
			c->pos = c->count;
			return;
		}
		cmp = keycmp(r.key, r.len, key, len);
		if (cmp < 0 || (cmp == 0 && !inclusive))
			lo = mid + 1;
		else
			hi = mid;
	}
	c->pos = lo;
}

/* The next record of the merge, removals included: for a key in several
 * sources, the newest source's. */
static bool idx_step(struct obj_idx *x, struct obj_idx_rec *out)
{
	struct obj_idx_rec r, best = { 0 };
	bool have = false;

	for (int i = 0; i < x->nsrc && !x->bad; i++) {
		if (!src_cur(x, &x->src[i], &r))
			continue;
		if (!have || keycmp(r.key, r.len, best.key, best.len) <= 0) {
			best = r;
			have = true;
		}
	}
	if (x->bad || !have)
		return false;
	for (int i = 0; i < x->nsrc; i++)
		if (src_cur(x, &x->src[i], &r) &&
		    !keycmp(r.key, r.len, best.key, best.len))
			x->src[i].pos++;
	/* A run out of order is damaged. */
	if (x->bad || (x->have_last && keycmp(best.key, best.len, x->last,
					       x->lastlen) <= 0)) {
		x->bad = true;
		return false;
	}
	memcpy(x->last, best.key, best.len);
	x->last[best.len] = '\0';
	x->lastlen = best.len;
	x->have_last = true;
	*out = best;
	return true;
}

const char *obj_idx_next(struct obj_idx *x, struct obj_idx_rec *r)
{
	while (idx_step(x, r))
		if (r->op != '-') {
			r->key = x->last;
			return x->last;
		}
	return NULL;
}

void obj_idx_seek(struct obj_idx *x, const char *key, bool inclusive)
{
	for (int i = 0; i < x->nsrc; i++)
		src_seek(x, &x->src[i], key, strlen(key), inclusive);
	x->have_last = false;
}

void obj_idx_skip_prefix(struct obj_idx *x, const char *prefix)
{
	size_t n = strlen(prefix);
	char *t;

	/* The least string above every one that begins with prefix. */
	while (n && (unsigned char)prefix[n - 1] == 0xff)
		n--;
	if (!n) {
		for (int i = 0; i < x->nsrc; i++)
			x->src[i].pos = x->src[i].count;
		return;
	}
	t = spx_strndup(prefix, n);
	t[n - 1] = (char)((unsigned char)t[n - 1] + 1);
	obj_idx_seek(x, t, true);
	free(t);
}

enum { RUN_GONE, RUN_OK, RUN_BAD };

static int run_map(struct spx_obj *s, const char *bucket, uint64_t gen,
		   uint64_t count, struct src *c)
{
	char *p = run_path(s, bucket, gen);
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = RUN_OK;
	struct stat st;
	void *m;

	if (fd < 0) {
		rc = errno == ENOENT ? RUN_GONE : obj_errno("cannot open '%s'", p);
		free(p);
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = obj_errno("cannot stat '%s'", p);
	} else if (!S_ISREG(st.st_mode) || st.st_size < RUN_HEAD) {
		rc = RUN_BAD;
	} else {
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			rc = obj_errno("cannot map '%s'", p);
		} else {
			c->map = m;
			c->maplen = (size_t)st.st_size;
			if (!obj_idx_run_frame(m, c->maplen, &c->count) ||
			    c->count != count)
				rc = RUN_BAD;
		}
	}
	close(fd);
	free(p);
	return rc;
}

static char *slog_path(struct spx_obj *s, const char *bucket, uint64_t gen)
{
	char name[32];

	snprintf(name, sizeof(name), "log.%" PRIu64, gen);
	return xpath(s, bucket, name);
}

/* Read and parse a log into b and *v: IDX_OK (*ino its inode, 0 when
 * there is no such file), IDX_REBUILD when it is no log, or an error. */
static int log_load(struct spx_obj *s, const char *bucket, char *path,
		    struct spx_buf *b, struct obj_idx_rec **v, size_t *nv,
		    ino_t *ino)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = IDX_OK;
	struct stat st;

	*ino = 0;
	*nv = 0;
	if (fd < 0 && errno == ENOENT) {
		free(path);
		return IDX_OK;
	}
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = obj_err(SPX_OBJ_INTERNAL, "cannot read the index of '%s'",
			     bucket);
	} else if (!S_ISREG(st.st_mode)) {
		rc = IDX_REBUILD;
	} else if (spx_buf_read_fd(b, fd, path, IDX_LOG_MAX) < 0) {
		rc = spx_errstatus() == SPX_USAGE /* larger than a log grows */
			     ? IDX_REBUILD
			     : obj_err(SPX_OBJ_INTERNAL,
				       "cannot read the index of '%s'", bucket);
		if (rc == IDX_REBUILD)
			spx_error_clear();
	} else if (obj_idx_log_parse(b->p, b->len, v, nv) < 0) {
		rc = IDX_REBUILD;
	} else {
		*ino = st.st_ino;
	}
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

/* Read the index: IDX_OK (or IDX_FOLD: its log is large, or a fold set
 * one aside), IDX_AGAIN when it changed while read, IDX_REBUILD when it
 * is missing, damaged or of an earlier boot, or an error.
 *
 * A fold names the sealed log in the manifest before it renames the log
 * to it, without changing the manifest again, so the live log is read
 * before the sealed one: what was live and is sealed by then is read
 * again there, whole. Read the same file twice (the rename came between
 * the two reads), only the later read counts; the sealed file missing,
 * the rename has not come, and the live log held it all. */
static int idx_load(struct spx_obj *s, const char *bucket, struct obj_idx *x)
{
	struct obj_idx_manifest m2;
	size_t nlv = 0, nsv = 0;
	ino_t live = 0, sealed = 0;
	int rc;

	if ((rc = manifest_read(s, bucket, &x->man)) <= 0)
		return rc < 0 ? rc : IDX_REBUILD;
	if (strcmp(x->man.boot, boot_id()))
		return IDX_REBUILD;
	for (int i = 0; i < x->man.nruns; i++) {
		rc = run_map(s, bucket, x->man.run_gen[i], x->man.run_count[i],
			     &x->src[x->nsrc]);
		if (x->src[x->nsrc].map)
			x->nsrc++;
		if (rc != RUN_OK)
			return rc < 0 ? rc : rc == RUN_GONE ? IDX_AGAIN
							    : IDX_REBUILD;
	}
	if ((rc = log_load(s, bucket, xpath(s, bucket, "log"), &x->log,
			   &x->lv, &nlv, &live)) != IDX_OK)
		return rc;
	if (x->man.sealed) {
		if ((rc = log_load(s, bucket,
				   slog_path(s, bucket, x->man.sealed),
				   &x->slog, &x->slv, &nsv, &sealed)) != IDX_OK)
			return rc;
		x->slog_there = sealed != 0;
		if (sealed && sealed == live)
			nlv = 0;
		x->src[x->nsrc++] = (struct src){ .v = x->slv, .count = nsv };
	}
	x->src[x->nsrc++] = (struct src){ .v = x->lv, .count = nlv };
	if ((rc = manifest_read(s, bucket, &m2)) < 0)
		return rc;
	if (rc == 0 || m2.gen != x->man.gen)
		return IDX_AGAIN;
	return x->log.len >= IDX_READ_FOLD || x->man.sealed ? IDX_FOLD
							     : IDX_OK;
}

static bool fold_away(struct spx_obj *s, const struct spx_obj_bucket *b);

int obj_idx_open(struct spx_obj *s, const struct spx_obj_bucket *b,
		 struct obj_idx **out)
{
	bool folded = false;

	*out = NULL;
	for (int tries = 0; tries < 8; tries++) {
		struct obj_idx *x = idx_new();
		int rc = idx_load(s, b->name, x);

		/* Folded on the store's thread: this one serves as it is. */
		if (rc == IDX_OK ||
		    (rc == IDX_FOLD && (folded || fold_away(s, b)))) {
			*out = x;
			return 0;
		}
		obj_idx_close(x);
		if (rc < 0)
			return rc;
		if (rc == IDX_AGAIN)
			continue;
		/* A reader's fold only saves work: it does not wait for
		 * the bucket's commits (a writer may be stopped in one);
		 * writers fold a larger log, waiting. A rebuild waits. */
		if ((rc = obj_idx_fold(s, b, rc == IDX_REBUILD,
				       rc == IDX_REBUILD)) < 0)
			return rc;
		folded = true;
	}
	return obj_err(SPX_OBJ_INTERNAL, "the index of '%s' keeps changing",
		       b->name);
}

/* ---- writing ---- */

static _Thread_local bool fold_wish;
/* On the store's folding thread: wait for locks by trying again and
 * again rather than blocking in the kernel (a thread blocked in an OFD
 * lock wait while holding valgrind's lock would stop the whole process
 * under valgrind; outside it this costs a few wakeups). */
static _Thread_local bool polling;

/* Append r to the bucket's log: through *held if it is open, else
 * opened here and left in *held (closed here when held is NULL). */
static int note(struct spx_obj *s, const char *bucket, int *held,
		const struct obj_idx_rec *r)
{
	struct spx_buf b = SPX_BUF_INIT;
	char *p = NULL; /* the log's path: only to open it or to say why */
	int fd = held ? *held : -1, rc = 0;

	fold_wish = false;
	if (fd < 0) {
		p = xpath(s, bucket, "log");
		fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0 && errno == ENOENT && xdir_make(s, bucket) == 0)
			fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
				  0644);
		if (fd < 0) {
			rc = obj_errno("cannot open '%s'", p);
			goto out;
		}
	}
	obj_idx_rec_put(&b, r);
	/* The size from the offset O_APPEND left, not fstat: a stat marks
	 * the log's times as seen, and the kernel (6.13 on) then stamps the
	 * next append to the nanosecond, which dirties the inode every time.
	 * On a journaled file system that waits, under the log's lock that
	 * every commit of the bucket queues for, while a commit writes the
	 * inode out. */
	if (spx_write_all(fd, b.p, b.len, "the index log") < 0) {
		int e = errno;

		if (!p)
			p = xpath(s, bucket, "log");
		errno = e;
		rc = obj_errno("cannot append to '%s'", p);
	} else if (lseek(fd, 0, SEEK_CUR) >= (off_t)IDX_WRITE_FOLD) {
		fold_wish = true;
	}
	if (held)
		*held = fd;
	else
		close(fd);
out:
	spx_buf_release(&b);
	free(p);
	return rc;
}

int obj_idx_note(struct spx_obj *s, const char *bucket, int *held,
		 const char *key, char op)
{
	struct obj_idx_rec r = { .key = key, .len = (uint16_t)strlen(key),
				 .op = op };

	return note(s, bucket, held, &r);
}

int obj_idx_note_meta(struct spx_obj *s, const char *bucket, int *held,
		      const char *key, const struct spx_obj_meta *m)
{
	struct obj_idx_rec r;

	obj_idx_rec_of(&r, key, m);
	return note(s, bucket, held, &r);
}

void obj_idx_note_end(int *held)
{
	if (*held >= 0)
		close(*held);
	*held = -1;
}

/* ---- folding away ---- */

#define FOLD_QUEUE 16

struct obj_folder {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	bool stop;
	int n;
	struct spx_obj_bucket q[FOLD_QUEUE];
};

static void *folder_main(void *arg)
{
	struct spx_obj *s = arg;
	struct obj_folder *f = s->folder;

	polling = true;
	pthread_mutex_lock(&f->mu);
	for (;;) {
		struct spx_obj_bucket b;

		while (!f->n && !f->stop)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->stop)
			break;
		b = f->q[0];
		memmove(f->q, f->q + 1, (size_t)--f->n * sizeof(f->q[0]));
		pthread_mutex_unlock(&f->mu);
		if (obj_idx_fold(s, &b, false, true) < 0) {
			spx_warn("obj: the index of '%s' was not folded: %s",
				 b.name, spx_errmsg());
			spx_error_clear(); /* a later commit asks again */
		}
		pthread_mutex_lock(&f->mu);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

bool obj_idx_folder_new(struct spx_obj *s)
{
	struct obj_folder *f = spx_calloc(1, sizeof(*f));

	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	s->folder = f;
	if (pthread_create(&f->th, NULL, folder_main, s)) {
		s->folder = NULL;
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->mu);
		free(f);
		return false;
	}
	return true;
}

void obj_idx_folder_free(struct spx_obj *s)
{
	struct obj_folder *f = s->folder;

	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->th, NULL);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	s->folder = NULL;
}

/* Hand b's fold to the store's thread: false when it has none. A full
 * queue drops it: the log only grows until a later commit asks. */
static bool fold_away(struct spx_obj *s, const struct spx_obj_bucket *b)
{
	struct obj_folder *f = s->folder;
	bool queued = false;

	if (!f)
		return false;
	pthread_mutex_lock(&f->mu);
	for (int i = 0; i < f->n && !queued; i++)
		queued = !strcmp(f->q[i].name, b->name);
	if (!queued && f->n < FOLD_QUEUE) {
		f->q[f->n++] = *b;
		pthread_cond_signal(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return true;
}

void obj_idx_after_note(struct spx_obj *s, const struct spx_obj_bucket *b)
{
	if (!fold_wish)
		return;
	fold_wish = false;
	if (fold_away(s, b))
		return;
	if (obj_idx_fold(s, b, false, true) < 0)
		spx_error_clear(); /* the next listing tries again */
}

struct runw {
	int fd;
	char *tmp;
	struct spx_buf b;
	uint64_t *offs, at;
	size_t n, cap;
};

static int runw_open(struct runw *w, struct spx_obj *s, const char *bucket)
{
	unsigned char h[RUN_HEAD] = { 0 };

	memset(w, 0, sizeof(*w));
	w->b = (struct spx_buf)SPX_BUF_INIT;
	w->tmp = xpath(s, bucket, ".run.XXXXXX");
	w->fd = mkostemp(w->tmp, O_CLOEXEC);
	if (w->fd < 0)
		return obj_errno("cannot create '%s'", w->tmp);
	spx_buf_add(&w->b, h, RUN_HEAD);
	w->at = RUN_HEAD;
	return 0;
}

static int runw_flush(struct runw *w)
{
	if (spx_write_all(w->fd, w->b.p, w->b.len, w->tmp) < 0)
		return obj_errno("cannot write '%s'", w->tmp);
	spx_buf_reset(&w->b);
	return 0;
}

static int runw_add(struct runw *w, const struct obj_idx_rec *r)
{
	size_t before = w->b.len;

	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 1024;
		w->offs = spx_realloc(w->offs, w->cap * sizeof(*w->offs));
	}
	w->offs[w->n++] = w->at;
	obj_idx_rec_put(&w->b, r);
	w->at += w->b.len - before;
	return w->b.len >= RUN_FLUSH ? runw_flush(w) : 0;
}

static void runw_free(struct runw *w)
{
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp)
		unlink(w->tmp);
	free(w->tmp);
	free(w->offs);
	spx_buf_release(&w->b);
}

static int runw_finish(struct runw *w, const char *path)
{
	unsigned char h[RUN_HEAD], o[8];
	int rc = 0;

	for (size_t i = 0; i < w->n && !rc; i++) {
		put64(o, w->offs[i]);
		spx_buf_add(&w->b, o, 8);
		if (w->b.len >= RUN_FLUSH)
			rc = runw_flush(w);
	}
	if (rc || (rc = runw_flush(w)) < 0)
		goto out;
	memcpy(h, RUN_MAGIC, 8);
	put64(h + 8, w->n);
	put64(h + 16, w->at);
	if (pwrite(w->fd, h, RUN_HEAD, 0) != RUN_HEAD) {
		rc = obj_errno("cannot write '%s'", w->tmp);
		goto out;
	}
	if (close(w->fd) < 0) {
		w->fd = -1;
		rc = obj_errno("cannot write '%s'", w->tmp);
		goto out;
	}
	w->fd = -1;
	if (rename(w->tmp, path) < 0)
		rc = obj_errno("cannot rename '%s'", w->tmp);
out:
	runw_free(w);
	return rc;
}

/* Merge sources [from, to) of x into run gen (removals dropped when
 * nothing older is left); *count receives its size. */
static int merge_to_run(struct spx_obj *s, const char *bucket,
			struct obj_idx *x, int from, int to, uint64_t gen,
			uint64_t *count)
{
	struct obj_idx *y = idx_new();
	struct obj_idx_rec r;
	struct runw w;
	char *path;
	int rc;

	y->borrowed = true;
	for (int i = from; i < to; i++) {
		y->src[y->nsrc] = x->src[i];
		y->src[y->nsrc++].pos = 0;
	}
	if ((rc = runw_open(&w, s, bucket)) < 0) {
		runw_free(&w);
		obj_idx_close(y);
		return rc;
	}
	while (!rc && idx_step(y, &r))
		if (r.op != '-' || from > 0)
			rc = runw_add(&w, &r);
	if (!rc && y->bad)
		rc = IDX_REBUILD;
	*count = w.n;
	path = run_path(s, bucket, gen);
	if (rc)
		runw_free(&w);
	else
		rc = runw_finish(&w, path);
	free(path);
	obj_idx_close(y);
	return rc;
}

void (*obj_idx_merge_hook)(void);

/* Under the bucket's exclusive lock, with its manifest m: set the log
 * aside as the sealed log (the manifest names it first, then the log is
 * renamed to it: see idx_load), or finish the seal of a fold that was
 * killed. 1 when there is a sealed log, 0 when there is nothing to fold,
 * or an error. Nothing is read: commits wait only for this. */
static int seal(struct spx_obj *s, const char *bucket,
		struct obj_idx_manifest *m)
{
	char *from = xpath(s, bucket, "log"), *to = NULL;
	struct stat st;
	int rc = 1;

	if (!m->sealed) {
		if (stat(from, &st) < 0 || !st.st_size) {
			free(from);
			return 0;
		}
		m->gen++;
		m->sealed = m->gen;
		if ((rc = manifest_put(s, bucket, m)) < 0) {
			free(from);
			return rc;
		}
		rc = 1;
	}
	to = slog_path(s, bucket, m->sealed);
	/* Commits append under the lock shared: none has the log open. A
	 * sealed log already there is a killed fold's, renamed. */
	if (access(to, F_OK) < 0 && rename(from, to) < 0 && errno != ENOENT)
		rc = obj_errno("cannot rename '%s'", from);
	free(from);
	free(to);
	return rc;
}

/* Under the bucket's exclusive lock: put in place the manifest m, made
 * by a fold that read man, unless the index changed meanwhile (a bucket
 * removed and made again). */
static int publish(struct spx_obj *s, const struct spx_obj_bucket *b,
		   const struct obj_idx_manifest *man,
		   const struct obj_idx_manifest *m)
{
	struct obj_idx_manifest now;
	int rc;

	if ((rc = obj_bucket_current(s, b, NULL)) < 0)
		return rc;
	if ((rc = manifest_read(s, b->name, &now)) < 0)
		return rc;
	if (!rc || now.gen != man->gen || now.sealed != man->sealed ||
	    now.nruns != man->nruns ||
	    memcmp(now.run_gen, man->run_gen,
		   (size_t)now.nruns * sizeof(now.run_gen[0])))
		return obj_err(SPX_OBJ_INTERNAL,
			       "the index of '%s' changed while folded",
			       b->name);
	return manifest_put(s, b->name, m);
}

/* The bucket's exclusive lock, waiting for it. */
static int bucket_lock_wait(struct spx_obj *s, const char *bucket, int *lk)
{
	struct timespec ts = { 0, 1000000 };
	int rc;

	if (!polling)
		return obj_lock(s, bucket, NULL, true, lk);
	while ((rc = obj_lock_try(s, bucket, NULL, true, lk)) == 0) {
		nanosleep(&ts, NULL);
		if (ts.tv_nsec < 16000000)
			ts.tv_nsec *= 2;
	}
	return rc < 0 ? rc : 0;
}

/* With the fold lock and the bucket's lock (*lk), the manifest man read:
 * seal the log, let the bucket's lock go, merge the sealed log and the
 * newest runs into one run, and put the manifest that names it in place
 * under the lock again. IDX_REBUILD, with the lock held again, for an
 * index found damaged. */
static int fold(struct spx_obj *s, const struct spx_obj_bucket *b,
		struct obj_idx_manifest *man, int *lk, bool wait)
{
	struct obj_idx *x = NULL;
	struct obj_idx_manifest m;
	int n, j, rc;
	uint64_t sum = 0, count = 0, gen;

	if ((rc = seal(s, b->name, man)) <= 0)
		return rc;
	obj_unlock(*lk);
	*lk = -1;
	/* As a reader does; only a fold (this one) changes the index. */
	x = idx_new();
	if ((rc = idx_load(s, b->name, x)) != IDX_OK && rc != IDX_FOLD)
		goto out;
	n = j = x->man.nruns;
	m = x->man;
	gen = m.sealed;
	if (!gen || m.gen != man->gen) {
		rc = IDX_AGAIN; /* cannot be, under the fold lock */
		goto out;
	}
	sum = x->src[n].count; /* the sealed log, after the runs */
	if (sum) {
		while (j > 0 && m.run_count[j - 1] <= 2 * sum)
			sum += m.run_count[--j];
		if (j == OBJ_IDX_MAX_RUNS)
			j = 0;
		if (obj_idx_merge_hook)
			obj_idx_merge_hook();
		if ((rc = merge_to_run(s, b->name, x, j, n + 1, gen,
				       &count)) != 0)
			goto out;
		m.nruns = j + 1;
		m.run_gen[j] = gen;
		m.run_count[j] = count;
	}
	m.gen++;
	m.sealed = 0;
	if (wait)
		rc = bucket_lock_wait(s, b->name, lk);
	else if ((rc = obj_lock_try(s, b->name, NULL, true, lk)) == 0)
		goto out; /* a later fold merges it again */
	if (rc >= 0)
		rc = publish(s, b, &x->man, &m);
	obj_unlock(*lk);
	*lk = -1;
	if (rc < 0) {
		char *p = run_path(s, b->name, gen);

		if (sum)
			unlink(p);
		free(p);
		goto out;
	}
	for (int i = j; i < n; i++) {
		char *p = run_path(s, b->name, x->man.run_gen[i]);

		unlink(p);
		free(p);
	}
	{
		char *p = slog_path(s, b->name, gen);

		unlink(p);
		free(p);
	}
out:
	obj_idx_close(x);
	return rc;
}

static bool decode_name(const char *name, struct spx_buf *out)
{
	spx_buf_reset(out);
	for (const char *p = name; *p; p++) {
		if (*p != '%') {
			spx_buf_addc(out, *p);
			continue;
		}
		if (spx_hexval(p[1]) < 0 || spx_hexval(p[2]) < 0)
			return false;
		spx_buf_addc(out, (char)(spx_hexval(p[1]) << 4 | spx_hexval(p[2])));
		p += 2;
	}
	return out->len && out->len <= SPX_OBJ_KEY_MAX &&
	       strlen(out->p) == out->len;
}

/* Every key directory's key, as records into arena (offsets in .key
 * until the arena stops moving). */
static int scan_keys(struct spx_obj *s, const char *bucket,
		     struct spx_buf *arena, struct obj_idx_rec **v, size_t *nv)
{
	char *odir = spx_xprintf("%s/b/%s/o", s->drives[0], bucket);
	struct spx_buf kb = SPX_BUF_INIT;
	size_t cap = 0;
	struct dirent *e;
	DIR *dp = opendir(odir);
	int rc = 0;

	*v = NULL;
	*nv = 0;
	if (!dp) {
		rc = errno == ENOENT ? 0 : obj_errno("cannot open '%s'", odir);
		free(odir);
		return rc;
	}
	while ((e = readdir(dp))) {
		struct spx_obj_meta m = SPX_OBJ_META_INIT;

		if (e->d_name[0] == '.')
			continue;
		if (e->d_name[0] == '~') {
			/* A long key's name is its hash: the key is in its
			 * metadata (none yet: a first write in progress, which
			 * notes itself when it commits). */
			if (obj_key_meta(s, bucket, e->d_name, &m) < 0 ||
			    !m.key || strlen(m.key) > SPX_OBJ_KEY_MAX) {
				spx_error_clear();
				spx_obj_meta_release(&m);
				continue;
			}
			spx_buf_reset(&kb);
			spx_buf_adds(&kb, m.key);
			spx_obj_meta_release(&m);
		} else if (!decode_name(e->d_name, &kb)) {
			continue;
		}
		if (*nv == cap) {
			cap = cap ? 2 * cap : 1024;
			*v = spx_realloc(*v, cap * sizeof(**v));
		}
		(*v)[*nv] = (struct obj_idx_rec){
			.key = (const char *)(uintptr_t)arena->len,
			.len = (uint16_t)kb.len, .op = '+', .seq = 0,
		};
		(*nv)++;
		spx_buf_add(arena, kb.p, kb.len);
	}
	closedir(dp);
	free(odir);
	spx_buf_release(&kb);
	for (size_t i = 0; i < *nv; i++)
		(*v)[i].key = arena->p + (uintptr_t)(*v)[i].key;
	*nv = recs_settle(*v, *nv);
	return 0;
}

/* Under the lock: make the index again from the key directories. */
static int rebuild(struct spx_obj *s, const char *bucket, uint64_t gen)
{
	struct obj_idx_manifest m;
	struct spx_buf arena = SPX_BUF_INIT;
	struct obj_idx_rec *v = NULL;
	char *dir = xpath(s, bucket, NULL), *path = NULL, keep[32];
	struct dirent *e;
	struct runw w;
	size_t nv = 0;
	DIR *dp;
	int rc = 0;

	if ((rc = xdir_make(s, bucket)) < 0)
		goto out;
	/* A generation above any run there, so that no reader mistakes
	 * the new index for the one it read. */
	if ((dp = opendir(dir))) {
		while ((e = readdir(dp))) {
			const char *end;
			uint64_t g;

			if (!strncmp(e->d_name, "r.", 2) &&
			    parse_u64(e->d_name + 2, &g, &end) && !*end && g > gen)
				gen = g;
		}
		closedir(dp);
	}
	gen++;
	if ((rc = scan_keys(s, bucket, &arena, &v, &nv)) < 0 ||
	    (rc = runw_open(&w, s, bucket)) < 0)
		goto out;
	for (size_t i = 0; i < nv && !rc; i++)
		rc = runw_add(&w, &v[i]);
	path = run_path(s, bucket, gen);
	if (rc) {
		runw_free(&w);
		goto out;
	}
	if ((rc = runw_finish(&w, path)) < 0)
		goto out;
	memset(&m, 0, sizeof(m));
	snprintf(m.boot, sizeof(m.boot), "%s", boot_id());
	m.gen = gen;
	m.nruns = 1;
	m.run_gen[0] = gen;
	m.run_count[0] = nv;
	if ((rc = manifest_put(s, bucket, &m)) < 0 ||
	    (rc = log_empty(s, bucket)) < 0)
		goto out;
	/* Whatever else is there (old runs, a killed writer's temp) goes. */
	snprintf(keep, sizeof(keep), "r.%" PRIu64, gen);
	if ((dp = opendir(dir))) {
		while ((e = readdir(dp))) {
			char *p;

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
			    !strcmp(e->d_name, "manifest") ||
			    !strcmp(e->d_name, "log") || !strcmp(e->d_name, keep))
				continue;
			p = xpath(s, bucket, e->d_name);
			unlink(p);
			free(p);
		}
		closedir(dp);
	}
out:
	free(v);
	free(dir);
	free(path);
	spx_buf_release(&arena);
	return rc;
}

int obj_idx_fold(struct spx_obj *s, const struct spx_obj_bucket *b,
		 bool remake, bool wait)
{
	struct obj_idx_manifest m;
	int rc, fk = -1, lk = -1;

	/* The fold lock first, the bucket's second, as everyone takes them. */
	if ((rc = obj_lock_fold(s, b->name, remake, &fk)) <= 0)
		return rc; /* another folds it */
	if (remake || wait)
		rc = bucket_lock_wait(s, b->name, &lk);
	else if ((rc = obj_lock_try(s, b->name, NULL, true, &lk)) > 0)
		rc = 0;
	else if (rc == 0)
		goto out; /* held: the index serves as it is */
	if (rc < 0)
		goto out;
	if ((rc = obj_bucket_current(s, b, NULL)) < 0)
		goto out;
	if ((rc = manifest_read(s, b->name, &m)) < 0)
		goto out;
	if (rc == 0) {
		memset(&m, 0, sizeof(m));
		rc = IDX_REBUILD;
	} else if (remake || strcmp(m.boot, boot_id())) {
		rc = IDX_REBUILD; /* its generation, if it has one, grows */
	} else {
		rc = fold(s, b, &m, &lk, wait);
	}
	/* Under the locks nothing changes: a run gone is a damaged index. */
	if (rc == IDX_REBUILD || rc == IDX_AGAIN) {
		if (lk < 0)
			rc = bucket_lock_wait(s, b->name, &lk);
		if (lk >= 0)
			rc = rebuild(s, b->name, m.gen);
	}
out:
	obj_unlock(lk);
	obj_unlock(fk);
	return rc;
}
