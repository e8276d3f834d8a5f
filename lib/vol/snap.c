/* snap.c: snapshots of volumes in the object store (contract in snap.h). */
#include "spx.h"

#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "checksum.h"
#include "conf/conf.h"
#include "file.h"
#include "hex.h"
#include "iobuf.h"
#include "vol/snap.h"
#include "proc.h"

/* The largest manifest: an entry for every chunk of the largest volume. */
#define MANIFEST_MAX                                                       \
	(SPX_SNAP_HEADER_MAX +                                             \
	 (SPX_VOL_SIZE_MAX / SPX_SNAP_CHUNK) * (uint64_t)SPX_SNAP_ENTRY_SIZE)
/* Listing pages. */
#define PAGE 1000

struct spx_snap_store {
	struct spx_obj *obj;
	struct spx_obj_bucket b;
	struct spx_vol_store *vs;
	char *lock;	/* <vol store>/.snap.lock */
};

bool spx_snap_id_valid(const char *id)
{
	return id && spx_id_valid(id, "snap");
}

static int id_check(const char *id)
{
	if (!spx_snap_id_valid(id))
		return spx_error(SPX_USAGE,
				 "'%s' is not a snapshot id (snap- and 17 hex "
				 "digits)",
				 id ? id : "");
	return 0;
}

static uint64_t nchunks_of(uint64_t size)
{
	return (size + SPX_SNAP_CHUNK - 1) / SPX_SNAP_CHUNK;
}

static size_t chunk_len(uint64_t size, uint64_t c)
{
	uint64_t off = c * SPX_SNAP_CHUNK;

	return size - off < SPX_SNAP_CHUNK ? (size_t)(size - off)
					   : SPX_SNAP_CHUNK;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

static int sha256(const void *p, size_t n, unsigned char out[SPX_SNAP_HASH])
{
	unsigned char md[SPX_CKSUM_MAX];

	if (spx_cksum_digest(SPX_CKSUM_SHA256, p, n, md, NULL) < 0)
		return -1;
	memcpy(out, md, SPX_SNAP_HASH);
	return 0;
}

static void chunk_key(const unsigned char h[SPX_SNAP_HASH], char out[70])
{
	memcpy(out, "c/", 2);
	spx_hex_encode(h, SPX_SNAP_HASH, out + 2);
}

/* ---- manifests ---- */

void spx_snap_manifest_encode(const struct spx_snap_manifest *m,
			      struct spx_buf *out)
{
	struct spx_buf body = SPX_BUF_INIT;

	spx_buf_grow(&body, (size_t)m->count * SPX_SNAP_ENTRY_SIZE);
	for (uint64_t i = 0; i < m->count; i++) {
		unsigned char e[SPX_SNAP_ENTRY_SIZE];

		for (int b = 0; b < 8; b++)
			e[b] = (unsigned char)(m->v[i].idx >> (8 * b));
		memcpy(e + 8, m->v[i].hash, SPX_SNAP_HASH);
		spx_buf_add(&body, e, sizeof(e));
	}
	spx_buf_addf(out,
		     "spx-snap 1 id=%s volume=%s size=%llu chunk=%u parent=%s "
		     "created_ms=%lld count=%llu crc32c=%08x\n",
		     m->id, m->volume, (unsigned long long)m->size, m->chunk,
		     *m->parent ? m->parent : "-", (long long)m->created_ms,
		     (unsigned long long)m->count,
		     spx_crc32c(body.p, body.len));
	spx_buf_add(out, body.p, body.len);
	spx_buf_release(&body);
}

void spx_snap_manifest_release(struct spx_snap_manifest *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* A decimal number: 1..20 digits, no leading zero but for "0", no
 * overflow. */
static bool number(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (!n || n > 20 || (n > 1 && s[0] == '0'))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' ||
		    v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* The next field "name=VALUE" of the header at *p (before end), followed
 * by one space or, for the last, the end. */
static bool field(const char **p, const char *end, const char *name,
		  bool last, const char **val, size_t *vlen)
{
	size_t l = strlen(name);
	const char *v, *e;

	if ((size_t)(end - *p) < l + 1 || memcmp(*p, name, l) || (*p)[l] != '=')
		return false;
	v = *p + l + 1;
	e = memchr(v, ' ', (size_t)(end - v));
	if (last) {
		if (e)
			return false;
		e = end;
	} else if (!e) {
		return false;
	}
	*val = v;
	*vlen = (size_t)(e - v);
	*p = last ? e : e + 1;
	return *vlen > 0;
}

static bool id_field(const char *v, size_t n, const char *prefix, char *out)
{
	char id[SPX_ID_SIZE];

	if (n >= sizeof(id))
		return false;
	memcpy(id, v, n);
	id[n] = 0;
	if (!spx_id_valid(id, prefix))
		return false;
	memcpy(out, id, n + 1);
	return true;
}

int spx_snap_manifest_parse(const void *data, size_t n, unsigned flags,
			    struct spx_snap_manifest *m)
{
	const char *p = data, *nl, *end, *v;
	const unsigned char *body;
	size_t vl, hl;
	uint64_t size, chunk, created, count, crc, nch;

	memset(m, 0, sizeof(*m));
	nl = memchr(p, '\n', n < SPX_SNAP_HEADER_MAX ? n : SPX_SNAP_HEADER_MAX);
	if (!nl)
		goto bad;
	end = nl;
	hl = (size_t)(nl - p) + 1;
	/* A NUL would end a field early for the code that reads it. */
	if (memchr(p, 0, hl))
		goto bad;
	if ((size_t)(end - p) < 11 || memcmp(p, "spx-snap 1 ", 11))
		goto bad;
	p += 11;
	if (!field(&p, end, "id", false, &v, &vl) ||
	    !id_field(v, vl, "snap", m->id) ||
	    !field(&p, end, "volume", false, &v, &vl) ||
	    !id_field(v, vl, "vol", m->volume) ||
	    !field(&p, end, "size", false, &v, &vl) || !number(v, vl, &size) ||
	    !field(&p, end, "chunk", false, &v, &vl) || !number(v, vl, &chunk) ||
	    !field(&p, end, "parent", false, &v, &vl) ||
	    !((vl == 1 && *v == '-') || id_field(v, vl, "snap", m->parent)) ||
	    !field(&p, end, "created_ms", false, &v, &vl) ||
	    !number(v, vl, &created) ||
	    !field(&p, end, "count", false, &v, &vl) || !number(v, vl, &count) ||
	    !field(&p, end, "crc32c", true, &v, &vl) || vl != 8 ||
	    !spx_is_lower_hex(v, 8))
		goto bad;
	crc = 0;
	for (int i = 0; i < 8; i++)
		crc = crc << 4 | (uint64_t)spx_hexval(v[i]);
	if (!size || size > SPX_VOL_SIZE_MAX || size % SPX_VOL_SECTOR ||
	    chunk != SPX_SNAP_CHUNK || created > INT64_MAX ||
	    !strcmp(m->parent, m->id))
		goto bad;
	nch = nchunks_of(size);
	if (count > nch)
		goto bad;
	m->size = size;
	m->chunk = (uint32_t)chunk;
	m->created_ms = (int64_t)created;
	m->count = count;
	if (flags & SPX_SNAP_HEADER)
		return 0;
	/* count is at most 2^27: no overflow. */
	if (n - hl != count * SPX_SNAP_ENTRY_SIZE)
		goto bad;
	body = (const unsigned char *)data + hl;
	if (spx_crc32c(body, n - hl) != (uint32_t)crc)
		goto bad;
	m->v = spx_malloc((count ? count : 1) * sizeof(*m->v));
	for (uint64_t i = 0; i < count; i++) {
		const unsigned char *e = body + i * SPX_SNAP_ENTRY_SIZE;
		uint64_t idx = 0;

		for (int b = 7; b >= 0; b--)
			idx = idx << 8 | e[b];
		if (idx >= nch || (i && idx <= m->v[i - 1].idx))
			goto bad;
		m->v[i].idx = idx;
		memcpy(m->v[i].hash, e + 8, SPX_SNAP_HASH);
	}
	return 0;
bad:
	spx_snap_manifest_release(m);
	return spx_error(SPX_FAIL, "not a snapshot manifest");
}

const struct spx_snap_entry *
spx_snap_manifest_find(const struct spx_snap_manifest *m, uint64_t idx)
{
	size_t lo = 0, hi = m->v ? (size_t)m->count : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].idx == idx)
			return &m->v[mid];
		if (m->v[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- the store ---- */

/* An object store failure as our error (status from its code). */
static int obj_fail(int rc)
{
	if (rc == SPX_OBJ_INTERNAL)
		return -1; /* recorded already, SPX_FAIL */
	return spx_error_prefix("snapshot store");
}

int spx_snap_store_open(struct spx_obj *obj, struct spx_vol_store *vs,
			const char *owner, const char *region,
			struct spx_snap_store **out)
{
	struct spx_snap_store *ss;
	int rc;

	*out = NULL;
	rc = spx_obj_bucket_create(obj, SPX_SNAP_BUCKET, owner, region);
	if (rc < 0 && rc != SPX_OBJ_BUCKET_OWNED)
		return spx_error_prefix("snapshot store");
	ss = spx_calloc(1, sizeof(*ss));
	if ((rc = spx_obj_bucket_open(obj, SPX_SNAP_BUCKET, &ss->b)) < 0) {
		free(ss);
		return spx_error_prefix("snapshot store");
	}
	spx_error_clear();
	ss->obj = obj;
	ss->vs = vs;
	ss->lock = spx_path_join(spx_vol_store_dir(vs), ".snap.lock");
	*out = ss;
	return 0;
}

int spx_snap_store_conf(const char *conf, const char *root,
			struct spx_vol_store *vs, struct spx_obj **obj,
			struct spx_snap_store **out)
{
	const struct spx_conf_node *self;
	struct spx_obj_opts o = { 0 };
	struct spx_conf c;
	int rc = -1;

	*obj = NULL;
	*out = NULL;
	if (spx_conf_load(conf, root, &c) < 0)
		return -1;
	self = spx_conf_self(&c);
	o.drives = (const char *const *)self->obj.drives.v;
	o.ndrives = self->obj.drives.n;
	o.data = self->obj.data;
	o.parity = self->obj.parity;
	o.flags = SPX_OBJ_CREATE;
	if (spx_obj_open(&o, obj) < 0)
		spx_error_prefix("snapshot store");
	else if (spx_snap_store_open(*obj, vs, c.aws.account_id, c.aws.region,
				     out) < 0) {
		spx_obj_close(*obj);
		*obj = NULL;
	} else {
		rc = 0;
	}
	spx_conf_release(&c);
	return rc;
}

void spx_snap_store_close(struct spx_snap_store *ss)
{
	if (!ss)
		return;
	free(ss->lock);
	free(ss);
}

/* Open path (made if missing) and flock it (how): the descriptor, which
 * is the lock; -1 with SPX_NO and busy when LOCK_NB and taken. */
/* The collection lock: shared while snapshots are made and restores
 * start, exclusive for collection. -1 with SPX_NO when nonblocking and
 * taken. The descriptor is the lock. */
static int gc_lock(struct spx_snap_store *ss, int how)
{
	return spx_lock_path(ss->lock, how,
			  "snapshots are being taken or restored: try again "
			  "later");
}

/* A collection that could not have the lock leaves this mark, and
 * whoever held the lock looks for it on letting go: so the chunks of
 * snapshots removed side by side do not wait for the next removal. */
static char *gc_mark_path(struct spx_snap_store *ss)
{
	return spx_path_join(spx_vol_store_dir(ss->vs), ".snap.gc-wanted");
}

static void gc_mark(struct spx_snap_store *ss, bool want)
{
	char *p = gc_mark_path(ss);
	int fd;

	if (!want) {
		unlink(p);
	} else if ((fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0) {
		close(fd);
	}
	free(p);
}

static bool gc_marked(struct spx_snap_store *ss)
{
	char *p = gc_mark_path(ss);
	bool r = access(p, F_OK) == 0;

	free(p);
	return r;
}

/* Let go of the shared lock (rc: how the holder's work ended); then run
 * the collection wanted meanwhile. Its failure is left to the next. */
static void gc_unlock(struct spx_snap_store *ss, int lk, int rc)
{
	close(lk);
	if (rc == 0 && gc_marked(ss) && spx_snap_gc(ss, false, NULL) < 0) {
		spx_log(SPX_LOG_INFO, "vol: collection: %s", spx_errmsg());
		spx_error_clear();
	}
}

static int read_object(struct spx_snap_store *ss, const char *key,
		       uint64_t max, bool prefix_only, struct spx_buf *out,
		       uint64_t *size)
{
	struct spx_obj_reader *r;
	uint64_t n, off = 0;
	int rc = spx_obj_reader_open(ss->obj, &ss->b, key, &r);

	if (rc < 0)
		return rc;
	n = spx_obj_reader_meta(r)->size;
	if (size)
		*size = n;
	if (n > max && !prefix_only) {
		spx_obj_reader_close(r);
		return spx_error(SPX_FAIL, "'%s' is %llu bytes: too large", key,
				 (unsigned long long)n);
	}
	if (n > max)
		n = max;
	spx_buf_grow(out, (size_t)n);
	while (off < n) {
		size_t got;

		rc = spx_obj_read(r, off, out->p + out->len, (size_t)(n - off),
				  &got);
		if (rc < 0)
			break;
		if (!got) {
			rc = spx_error(SPX_FAIL, "'%s' ends early", key);
			break;
		}
		off += got;
		spx_buf_setlen(out, out->len + got);
	}
	spx_obj_reader_close(r);
	return rc < 0 ? rc : 0;
}

/* spx_snap_chunk_get without its check of the bytes (chunk_check). */
static int chunk_read(struct spx_snap_store *ss,
		      const unsigned char hash[SPX_SNAP_HASH], void *buf,
		      size_t len, bool *lost)
{
	struct spx_obj_reader *r;
	char key[70];
	size_t off = 0;
	int rc;

	if (lost)
		*lost = false;
	chunk_key(hash, key);
	rc = spx_obj_reader_open(ss->obj, &ss->b, key, &r);
	if (rc == SPX_OBJ_NO_SUCH_KEY) {
		if (lost)
			*lost = true;
		return spx_error(SPX_NO, "the snapshot store has no chunk %s",
				 key + 2);
	}
	if (rc == SPX_OBJ_LOST)
		goto gone;
	if (rc < 0)
		return obj_fail(rc);
	if (spx_obj_reader_meta(r)->size != len) {
		unsigned long long got = spx_obj_reader_meta(r)->size;

		spx_obj_reader_close(r);
		if (lost)
			*lost = true;
		return spx_error(SPX_FAIL,
				 "chunk %s is %llu bytes, not %zu: corrupt",
				 key + 2, got, len);
	}
	while (off < len) {
		size_t got;

		rc = spx_obj_read(r, off, (char *)buf + off, len - off, &got);
		if (rc < 0 || !got) {
			spx_obj_reader_close(r);
			/* Blocks missing or failing their CRC, past
			 * repair; a read that failed with an errno
			 * (SPX_OBJ_INTERNAL) is tried again. */
			if (rc == SPX_OBJ_LOST)
				goto gone;
			return rc < 0 ? obj_fail(rc)
				      : spx_error(SPX_FAIL, "chunk %s ends early",
						  key + 2);
		}
		off += got;
	}
	spx_obj_reader_close(r);
	return 0;
gone:
	if (lost)
		*lost = true;
	return spx_error_prefix("chunk %s is lost", key + 2);
}

/* Do the bytes of a chunk read hash to its name? */
static int chunk_check(const unsigned char hash[SPX_SNAP_HASH],
		       const void *buf, size_t len, bool *lost)
{
	unsigned char h[SPX_SNAP_HASH];
	char got[2 * SPX_SNAP_HASH + 1], key[70];

	if (sha256(buf, len, h) < 0)
		return -1;
	if (!memcmp(h, hash, SPX_SNAP_HASH))
		return 0;
	if (lost)
		*lost = true;
	chunk_key(hash, key);
	spx_hex_encode(h, SPX_SNAP_HASH, got);
	return spx_error(SPX_FAIL, "chunk %s is corrupt: its bytes hash to %s",
			 key + 2, got);
}

int spx_snap_chunk_get(struct spx_snap_store *ss,
		       const unsigned char hash[SPX_SNAP_HASH], void *buf,
		       size_t len, bool *lost)
{
	return chunk_read(ss, hash, buf, len, lost) < 0
		       ? -1
		       : chunk_check(hash, buf, len, lost);
}

/* Store a chunk unless the store holds it; *stored says which. */
static int chunk_put(struct spx_snap_store *ss,
		     const unsigned char hash[SPX_SNAP_HASH], const void *buf,
		     size_t len, bool *stored)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct spx_obj_writer *w;
	char key[70];
	int rc;

	*stored = false;
	chunk_key(hash, key);
	rc = spx_obj_stat(ss->obj, &ss->b, key, &m);
	spx_obj_meta_release(&m);
	if (rc == 0)
		return 0;
	if (rc != SPX_OBJ_NO_SUCH_KEY)
		return obj_fail(rc);
	if ((rc = spx_obj_writer_begin(ss->obj, &ss->b, key, NULL, &w)) < 0)
		return obj_fail(rc);
	if ((rc = spx_obj_writer_write(w, buf, len)) < 0) {
		spx_obj_writer_abort(w);
		return obj_fail(rc);
	}
	if ((rc = spx_obj_writer_commit(w, NULL, NULL)) < 0)
		return obj_fail(rc);
	*stored = true;
	return 0;
}

static bool chunk_exists(struct spx_snap_store *ss,
			 const unsigned char hash[SPX_SNAP_HASH], int *rc)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	char key[70];

	chunk_key(hash, key);
	*rc = spx_obj_stat(ss->obj, &ss->b, key, &m);
	spx_obj_meta_release(&m);
	return *rc == 0;
}

/* Does the store hold every chunk m names? Asked by EXISTS_THREADS
 * threads at once (each answer is a metadata read, cold on a restore).
 * 0, or -1 with *bad the first entry missing and *rc its answer. */
#define EXISTS_THREADS 8

struct exists {
	struct spx_snap_store *ss;
	const struct spx_snap_manifest *m;
	pthread_mutex_t mu;
	uint64_t next, bad;
	int rc, status;
	char err[512];	/* the worker's error (errors are per thread) */
};

static void *exists_worker(void *arg)
{
	struct exists *x = arg;

	for (;;) {
		uint64_t i;
		int r;

		pthread_mutex_lock(&x->mu);
		i = x->next++;
		pthread_mutex_unlock(&x->mu);
		if (i >= x->m->count)
			return NULL;
		if (!chunk_exists(x->ss, x->m->v[i].hash, &r)) {
			pthread_mutex_lock(&x->mu);
			if (i < x->bad) {
				x->bad = i;
				x->rc = r;
				if (r != SPX_OBJ_NO_SUCH_KEY) {
					obj_fail(r);
					x->status = spx_errstatus();
					snprintf(x->err, sizeof(x->err), "%s",
						 spx_errmsg());
				}
			}
			/* No more to ask. */
			x->next = x->m->count;
			pthread_mutex_unlock(&x->mu);
		}
	}
}

static int chunks_exist(struct spx_snap_store *ss,
			const struct spx_snap_manifest *m, uint64_t *bad,
			int *rc)
{
	/* (the worker's error, when the store failed, is recorded here) */
	struct exists x = { .ss = ss, .m = m, .bad = UINT64_MAX };
	pthread_t th[EXISTS_THREADS];
	int n = 0;

	pthread_mutex_init(&x.mu, NULL);
	for (int i = 0; i < EXISTS_THREADS && (uint64_t)i < m->count; i++)
		if (pthread_create(&th[n], NULL, exists_worker, &x) == 0)
			n++;
	if (!n)
		exists_worker(&x);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&x.mu);
	*bad = x.bad;
	*rc = x.rc;
	if (x.bad != UINT64_MAX && x.rc != SPX_OBJ_NO_SUCH_KEY)
		spx_error(x.status ? x.status : SPX_FAIL, "%s", x.err);
	return x.bad == UINT64_MAX ? 0 : -1;
}

static int manifest_decode(const char *what, const struct spx_buf *b,
			   unsigned flags, struct spx_snap_manifest *m)
{
	if (spx_snap_manifest_parse(b->p, b->len, flags, m) < 0)
		return spx_error(SPX_FAIL, "%s is not a snapshot manifest: "
					   "corrupt",
				 what);
	return 0;
}

int spx_snap_manifest_read(struct spx_snap_store *ss, const char *id,
			   unsigned flags, struct spx_snap_manifest *m)
{
	struct spx_buf b = SPX_BUF_INIT;
	char key[SPX_ID_SIZE + 2];
	int rc;

	memset(m, 0, sizeof(*m));
	if (id_check(id) < 0)
		return -1;
	snprintf(key, sizeof(key), "m/%s", id);
	rc = read_object(ss, key, (flags & SPX_SNAP_HEADER)
					  ? SPX_SNAP_HEADER_MAX
					  : MANIFEST_MAX,
			 flags & SPX_SNAP_HEADER, &b, NULL);
	if (rc == SPX_OBJ_NO_SUCH_KEY)
		rc = spx_error(SPX_NO, "no snapshot '%s'", id);
	else if (rc < 0)
		rc = obj_fail(rc);
	else if ((rc = manifest_decode(key, &b, flags, m)) == 0 &&
		 strcmp(m->id, id)) {
		spx_snap_manifest_release(m);
		rc = spx_error(SPX_FAIL, "%s names another snapshot: corrupt",
			       key);
	}
	spx_buf_release(&b);
	return rc;
}

/* ---- snapshots ---- */

struct pick {
	bool incremental;
	uint64_t *data;		/* full: the chunks holding data */
	uint64_t *capture;	/* copies of the session's choices */
	uint64_t *unfilled;
	uint64_t nw;
};

static void bit_set(uint64_t *w, uint64_t c)
{
	w[c / 64] |= (uint64_t)1 << (c % 64);
}

static bool bit(const uint64_t *w, uint64_t c)
{
	return w[c / 64] >> (c % 64) & 1;
}

/* The chunks of the first size bytes of fd that hold data, before the
 * snapshot pauses writers (what they write meanwhile is DIRTY). */
static int data_map(int fd, uint64_t size, uint64_t *out)
{
	uint64_t off = 0;

	while (off < size) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA), h;

		if (d < 0 && errno == ENXIO)
			break;
		if (d < 0 || (h = lseek(fd, d, SEEK_HOLE)) < 0)
			return spx_error_errno(SPX_FAIL, "cannot map the data");
		if ((uint64_t)h > size)
			h = (off_t)size;
		for (uint64_t c = (uint64_t)d / SPX_SNAP_CHUNK;
		     c * SPX_SNAP_CHUNK < (uint64_t)h; c++)
			bit_set(out, c);
		off = (uint64_t)h;
	}
	return 0;
}

/* While writers are paused: which chunks to read. Word operations only,
 * so the pause is short whatever the volume. */
static int pick_fn(void *ctx, struct spx_vol_track *t, const uint64_t *changed,
		   uint64_t *capture, uint64_t nchunks)
{
	struct pick *p = ctx;
	uint64_t nw = (nchunks + 63) / 64;

	if (nw > p->nw)
		return spx_error(SPX_FAIL, "the volume grew under the snapshot");
	spx_vol_track_words(t, SPX_TRACK_UNFILLED, p->unfilled, nw);
	for (uint64_t g = 0; g < nw; g++) {
		capture[g] = changed[g];
		if (!p->incremental)
			capture[g] |= p->data[g];
		/* A chunk not fetched yet is the source's, unread. */
		capture[g] &= ~p->unfilled[g];
		p->capture[g] = capture[g];
	}
	return 0;
}

static int write_manifest(struct spx_snap_store *ss,
			  const struct spx_snap_manifest *m)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_obj_writer *w;
	char key[SPX_ID_SIZE + 2];
	int rc;

	snprintf(key, sizeof(key), "m/%s", m->id);
	spx_snap_manifest_encode(m, &b);
	if ((rc = spx_obj_writer_begin(ss->obj, &ss->b, key, NULL, &w)) == 0) {
		if ((rc = spx_obj_writer_write(w, b.p, b.len)) < 0)
			spx_obj_writer_abort(w);
		else
			rc = spx_obj_writer_commit(w, NULL, NULL);
	}
	spx_buf_release(&b);
	return rc < 0 ? obj_fail(rc) : 0;
}

static int set_base(void *ctx, struct spx_vol_snapstate *s)
{
	snprintf(s->base, sizeof(s->base), "%s", (const char *)ctx);
	s->valid = true;
	return 0;
}

static void add_entry(struct spx_snap_manifest *m, size_t *cap, uint64_t idx,
		      const unsigned char *hash)
{
	if (m->count == *cap) {
		*cap = *cap ? 2 * *cap : 1024;
		m->v = spx_realloc(m->v, *cap * sizeof(*m->v));
	}
	m->v[m->count].idx = idx;
	memcpy(m->v[m->count].hash, hash, SPX_SNAP_HASH);
	m->count++;
}

/* The source manifest of a volume restoring lazily. */
static int source_read(const char *dir, const char *snap,
		       struct spx_snap_manifest *m)
{
	char *p = spx_path_join(dir, "source");
	struct spx_buf b = SPX_BUF_INIT;
	int rc = spx_buf_read_file(&b, p, (size_t)MANIFEST_MAX);

	if (rc == 0 && (rc = manifest_decode(p, &b, 0, m)) == 0 &&
	    strcmp(m->id, snap)) {
		spx_snap_manifest_release(m);
		rc = spx_error(SPX_FAIL, "'%s' is not %s's manifest", p, snap);
	}
	spx_buf_release(&b);
	free(p);
	return rc;
}

/* Uploads overlap: each waits mostly on the store's fsyncs. */
#define UPLOADERS 4
#define SLOTS (2 * UPLOADERS)

/* What became of the seq-th chunk read. */
struct result {
	unsigned char hash[SPX_SNAP_HASH];
	bool zero, stored, done;
	size_t len;
};

struct pool {
	struct spx_snap_store *ss;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned char *buf[SLOTS];
	size_t len[SLOTS];
	uint64_t issued, taken, done;
	struct result *res;
	bool finished, failed;
	int err_status;
	char err[512];
	/* Hashes this snapshot stores already: one upload each. */
	unsigned char (*seen)[SPX_SNAP_HASH];
	bool *used;
	size_t cap;
};

/* Add h to the pool's set (under mu); false when it was there. */
static bool seen_add(struct pool *p, const unsigned char *h)
{
	uint64_t k;
	size_t i;

	memcpy(&k, h, sizeof(k));
	for (i = k % p->cap; p->used[i]; i = (i + 1) % p->cap)
		if (!memcmp(p->seen[i], h, SPX_SNAP_HASH))
			return false;
	p->used[i] = true;
	memcpy(p->seen[i], h, SPX_SNAP_HASH);
	return true;
}

static void *uploader(void *arg)
{
	struct pool *p = arg;

	for (;;) {
		struct result out = { 0 };
		uint64_t seq;
		unsigned char *b;
		int rc = 0;

		pthread_mutex_lock(&p->mu);
		while (p->taken == p->issued && !p->finished && !p->failed)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->taken == p->issued || p->failed) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		seq = p->taken++;
		b = p->buf[seq % SLOTS];
		out.len = p->len[seq % SLOTS];
		pthread_mutex_unlock(&p->mu);
		out.zero = all_zero(b, out.len);
		if (!out.zero && (rc = sha256(b, out.len, out.hash)) == 0) {
			bool first;

			pthread_mutex_lock(&p->mu);
			first = seen_add(p, out.hash);
			pthread_mutex_unlock(&p->mu);
			/* Another chunk of this snapshot with these bytes
			 * is stored (or failing, which fails us all). */
			if (first)
				rc = chunk_put(p->ss, out.hash, b, out.len,
					       &out.stored);
		}
		pthread_mutex_lock(&p->mu);
		if (rc < 0 && !p->failed) {
			/* The error slot is this thread's: hand it over. */
			p->failed = true;
			p->err_status = spx_errstatus();
			snprintf(p->err, sizeof(p->err), "%s", spx_errmsg());
		}
		out.done = true;
		p->res[seq] = out;
		p->done++;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}

/* One of the node's SPX_SNAP_UPLOADS upload slots (a flock on
 * .snap-upload.K in the volume store; a free one if there is, else this
 * process's own, when it frees): the descriptor that holds it. */
static int upload_slot(struct spx_snap_store *ss)
{
	int mine = (int)(getpid() % SPX_SNAP_UPLOADS);

	for (int k = 0; k <= SPX_SNAP_UPLOADS; k++) {
		bool wait = k == SPX_SNAP_UPLOADS;
		char name[32], *path;
		int fd;

		snprintf(name, sizeof(name), ".snap-upload.%d", wait ? mine : k);
		path = spx_path_join(spx_vol_store_dir(ss->vs), name);
		fd = spx_lock_path(path, LOCK_EX | (wait ? 0 : LOCK_NB), "taken");
		free(path);
		if (fd >= 0 || spx_errstatus() != SPX_NO)
			return fd;
		spx_error_clear();
	}
	return spx_error(SPX_FAIL, "no upload slot"); /* cannot be */
}

/* Read the chosen chunks in order (the snapshot's moment) while a pool
 * hashes and stores them; res[seq] for the seq-th. */
static int upload(struct spx_snap_store *ss, struct spx_vol_track *t,
		  const struct pick *pk, uint64_t size, uint64_t total,
		  struct result *res, const struct spx_snap_opts *o,
		  struct spx_snap_report *r)
{
	struct pool p = { .ss = ss, .res = res, .cap = 2 * total + 1 };
	pthread_t th[UPLOADERS];
	int nth = 0, rc = 0;
	uint64_t seq = 0, shown = 0;

	p.seen = spx_malloc(p.cap * sizeof(*p.seen));
	p.used = spx_calloc(p.cap, sizeof(*p.used));
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	for (int i = 0; i < SLOTS; i++)
		p.buf[i] = spx_malloc(SPX_SNAP_CHUNK);
	for (int i = 0; i < UPLOADERS && i < (int)total; i++)
		if (pthread_create(&th[nth], NULL, uploader, &p) == 0)
			nth++;
	if (total && !nth)
		rc = spx_error(SPX_FAIL, "cannot start a thread");
	for (uint64_t c = 0; c < nchunks_of(size) && rc == 0; c++) {
		size_t len;

		if (!bit(pk->capture, c))
			continue;
		len = chunk_len(size, c);
		pthread_mutex_lock(&p.mu);
		/* The slot is free once the chunk SLOTS before is done. */
		while (!p.failed && seq >= SLOTS && !res[seq - SLOTS].done)
			pthread_cond_wait(&p.cv, &p.mu);
		pthread_mutex_unlock(&p.mu);
		if (p.failed)
			break;
		if (spx_vol_track_capture(t, c, p.buf[seq % SLOTS], len) < 0) {
			rc = -1;
			break;
		}
		pthread_mutex_lock(&p.mu);
		p.len[seq % SLOTS] = len;
		p.issued = ++seq;
		pthread_cond_broadcast(&p.cv);
		pthread_mutex_unlock(&p.mu);
		r->read++;
		if (o->progress && p.done / 16 > shown) {
			shown = p.done / 16;
			o->progress(o->ctx, p.done, total);
		}
	}
	pthread_mutex_lock(&p.mu);
	p.finished = true;
	pthread_cond_broadcast(&p.cv);
	while (p.done < p.issued && !p.failed)
		pthread_cond_wait(&p.cv, &p.mu);
	pthread_mutex_unlock(&p.mu);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	if (rc == 0 && p.failed)
		rc = spx_error(p.err_status, "%s", p.err);
	if (rc == 0) {
		for (uint64_t i = 0; i < total; i++)
			if (res[i].stored) {
				r->uploaded++;
				r->uploaded_bytes += res[i].len;
			}
		if (o->progress)
			o->progress(o->ctx, total, total);
	}
	for (int i = 0; i < SLOTS; i++)
		free(p.buf[i]);
	free(p.seen);
	free(p.used);
	pthread_cond_destroy(&p.cv);
	pthread_mutex_destroy(&p.mu);
	return rc;
}

static void report_of(const struct spx_snap_manifest *m,
		      struct spx_snap_report *r)
{
	memcpy(r->id, m->id, sizeof(r->id));
	memcpy(r->volume, m->volume, sizeof(r->volume));
	memcpy(r->parent, m->parent, sizeof(r->parent));
	r->size = m->size;
	r->created_ms = m->created_ms;
	r->chunks = m->count;
}

/* Is snapshot id stored, as one of vol (or, with parent, a copy of
 * parent)? 1 with *out its report (existed, nothing read), 0 when there
 * is no such snapshot, -1 when id is another's (SPX_NO) or the store
 * fails. */
static int stored_already(struct spx_snap_store *ss, const char *id,
			  const char *vol, const char *parent,
			  struct spx_snap_report *out)
{
	struct spx_snap_manifest h;

	if (spx_snap_manifest_read(ss, id, SPX_SNAP_HEADER, &h) < 0) {
		if (spx_errstatus() != SPX_NO)
			return -1;
		spx_error_clear();
		return 0;
	}
	if ((vol && strcmp(h.volume, vol)) ||
	    (parent && strcmp(h.parent, parent))) {
		spx_error(SPX_NO, "snapshot '%s' exists already, of %s", id,
			  parent ? h.parent : h.volume);
		spx_snap_manifest_release(&h);
		return -1;
	}
	if (out) {
		memset(out, 0, sizeof(*out));
		report_of(&h, out);
		out->existed = true;
	}
	spx_snap_manifest_release(&h);
	return 1;
}

int spx_snap_copy(struct spx_snap_store *ss, const char *src, const char *id,
		  struct spx_snap_report *out)
{
	struct spx_snap_manifest m = { 0 };
	int lk, rc = -1;

	if (id_check(src) < 0 || (id && id_check(id) < 0))
		return -1;
	/* Shared: collection must not take the chunks from under the copy
	 * before its manifest names them. */
	if ((lk = gc_lock(ss, LOCK_SH)) < 0)
		return -1;
	if (id && (rc = stored_already(ss, id, NULL, src, out)) != 0) {
		rc = rc < 0 ? -1 : 0;
		goto out;
	}
	rc = -1;
	if (spx_snap_manifest_read(ss, src, 0, &m) < 0)
		goto out;
	snprintf(m.parent, sizeof(m.parent), "%s", src);
	m.created_ms = spx_wall_ms();
	if (id)
		snprintf(m.id, sizeof(m.id), "%s", id);
	else if (spx_id_new(m.id, sizeof(m.id), "snap") < 0)
		goto out;
	if (write_manifest(ss, &m) < 0)
		goto out;
	if (out) {
		memset(out, 0, sizeof(*out));
		report_of(&m, out);
	}
	rc = 0;
out:
	spx_snap_manifest_release(&m);
	gc_unlock(ss, lk, rc);
	return rc;
}

/* One volume's part of a snapshot (of a set of them). */
struct job {
	const char *vol;
	const char *id;		/* the id wanted, or NULL */
	const char *want_parent; /* opts.parent, or NULL */
	const char *pid;	/* the parent taken, or NULL */
	struct spx_snap_manifest parent, src, m;
	struct spx_vol_snapstate st;
	struct spx_vol_track *t;
	struct spx_vol_info vi;
	struct pick pk;
	struct result *res;
	char *dir, *data;
	uint64_t total;		/* chunks to read */
	int datafd;
	bool session;
};

/* Everything before the moment: the volume, its tracking, its parent,
 * and (for a full snapshot) the chunks that hold data. */
static int job_prepare(struct spx_snap_store *ss, struct job *j, bool full)
{
	j->datafd = -1;
	if (spx_vol_info(ss->vs, j->vol, &j->vi) < 0)
		return -1;
	j->dir = spx_vol_dir(ss->vs, j->vol);
	j->data = spx_vol_data_path(ss->vs, j->vol);
	if (spx_vol_track_open(j->dir, j->vi.size, SPX_TRACK_CREATE, &j->t) < 0 ||
	    spx_vol_snapstate_read(j->dir, &j->st) < 0)
		return -1;
	/* The parent: the one asked for, else the last one if it is still
	 * there. */
	j->pid = j->want_parent ? j->want_parent
				: *j->st.base ? j->st.base : NULL;
	if (j->pid) {
		int rc = spx_snap_manifest_read(ss, j->pid, 0, &j->parent);

		if (rc < 0 && (j->want_parent || spx_errstatus() != SPX_NO))
			return -1;
		if (rc < 0) {
			spx_error_clear();
			/* A volume restoring lazily holds its source's
			 * manifest, and the chunks it names, itself. */
			if (!strcmp(j->pid, j->st.source))
				rc = source_read(j->dir, j->st.source, &j->parent);
			if (rc < 0)
				j->pid = NULL;
		}
	}
	if (j->pid && j->parent.size > j->vi.size)
		return spx_error(SPX_USAGE, "'%s' is of %llu bytes, '%s' of "
					    "%llu: a volume only grows",
				 j->pid, (unsigned long long)j->parent.size,
				 j->vol, (unsigned long long)j->vi.size);
	if (*j->st.source && source_read(j->dir, j->st.source, &j->src) < 0)
		return -1;
	/* Only the changed chunks when the tracking counts from the parent
	 * (or from the empty volume when there is none). */
	j->pk.incremental = !full && j->st.valid &&
			    (j->pid ? !strcmp(j->pid, j->st.base) : !*j->st.base);
	j->pk.nw = (nchunks_of(j->vi.size) + 63) / 64;
	j->pk.data = spx_calloc(j->pk.nw ? j->pk.nw : 1, sizeof(uint64_t));
	j->pk.capture = spx_calloc(j->pk.nw ? j->pk.nw : 1, sizeof(uint64_t));
	j->pk.unfilled = spx_calloc(j->pk.nw ? j->pk.nw : 1, sizeof(uint64_t));
	if (!j->pk.incremental) {
		j->datafd = open(j->data, O_RDONLY | O_CLOEXEC);
		if (j->datafd < 0)
			return spx_error_errno(SPX_FAIL, "cannot open '%s'",
					       j->data);
		if (data_map(j->datafd, j->vi.size, j->pk.data) < 0)
			return -1;
	}
	return 0;
}

/* After the moment (at wall time now, one for a whole set, as EC2 gives
 * the snapshots of one CreateSnapshots one StartTime): the manifest's
 * header, and what is to read. */
static int job_begun(struct job *j, int64_t now)
{
	j->session = true;
	snprintf(j->m.volume, sizeof(j->m.volume), "%s", j->vol);
	snprintf(j->m.parent, sizeof(j->m.parent), "%s", j->pid ? j->pid : "");
	j->m.size = j->vi.size;
	j->m.chunk = SPX_SNAP_CHUNK;
	j->m.created_ms = now;
	if (j->id)
		snprintf(j->m.id, sizeof(j->m.id), "%s", j->id);
	else if (spx_id_new(j->m.id, sizeof(j->m.id), "snap") < 0)
		return -1;
	for (uint64_t g = 0; g < j->pk.nw; g++)
		j->total += (uint64_t)__builtin_popcountll(j->pk.capture[g]);
	j->res = spx_calloc(j->total ? j->total : 1, sizeof(*j->res));
	return 0;
}

/* Read and store the chunks, then write the manifest (the commit point)
 * and count the next snapshot from it. */
static int job_commit(struct spx_snap_store *ss, struct job *j,
		      const struct spx_snap_opts *o, struct spx_snap_report *out)
{
	struct spx_snap_report r = { 0 };
	size_t cap = 0, pi = 0;

	if (upload(ss, j->t, &j->pk, j->vi.size, j->total, j->res, o, &r) < 0)
		return -1;
	for (uint64_t c = 0, seq = 0; c < nchunks_of(j->vi.size); c++) {
		const struct spx_snap_entry *e = NULL;

		if (bit(j->pk.capture, c)) {
			if (!j->res[seq].zero)
				add_entry(&j->m, &cap, c, j->res[seq].hash);
			seq++;
			continue;
		}
		if (bit(j->pk.unfilled, c))
			e = spx_snap_manifest_find(&j->src, c);
		else if (j->pk.incremental && j->pid) {
			while (pi < j->parent.count && j->parent.v[pi].idx < c)
				pi++;
			if (pi < j->parent.count && j->parent.v[pi].idx == c)
				e = &j->parent.v[pi];
		}
		if (e)
			add_entry(&j->m, &cap, c, e->hash);
	}
	if (write_manifest(ss, &j->m) < 0)
		return -1;
	if (spx_vol_snapstate_update(j->dir, set_base, j->m.id) < 0) {
		/* Stored, but the next one reads everything. */
		spx_log(SPX_LOG_WARN, "vol: %s", spx_errmsg());
		spx_error_clear();
		spx_vol_track_session_end(j->t, false);
	} else {
		spx_vol_track_session_end(j->t, true);
	}
	j->session = false;
	report_of(&j->m, &r);
	r.incremental = j->pk.incremental;
	*out = r;
	return 0;
}

static void job_release(struct job *j)
{
	if (j->session)
		spx_vol_track_session_end(j->t, false);
	if (j->datafd >= 0)
		close(j->datafd);
	free(j->pk.data);
	free(j->pk.capture);
	free(j->pk.unfilled);
	free(j->res);
	spx_snap_manifest_release(&j->m);
	spx_snap_manifest_release(&j->parent);
	spx_snap_manifest_release(&j->src);
	spx_vol_track_close(j->t);
	free(j->dir);
	free(j->data);
}

/* The progress of a set: its volumes one after another. */
struct set_prog {
	const struct spx_snap_opts *o;
	uint64_t before, total;
};

static void set_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct set_prog *sp = ctx;

	(void)total;
	sp->o->progress(sp->o->ctx, sp->before + done, sp->total);
}

/* Take the n jobs (distinct volumes, sorted by id) at one moment, store
 * them, and report each into out[i]. The caller holds the collection
 * lock shared. */
static int take(struct spx_snap_store *ss, struct job *jobs, size_t n,
		const struct spx_snap_opts *o, struct spx_snap_report *out)
{
	struct spx_vol_track **ts = spx_calloc(n, sizeof(*ts));
	void **ctx = spx_calloc(n, sizeof(*ctx));
	struct set_prog sp = { .o = o };
	struct spx_snap_opts each = *o;
	int rc = -1, slot = -1;
	int64_t now;
	size_t i;

	for (i = 0; i < n; i++)
		if (job_prepare(ss, &jobs[i], o->full) < 0)
			goto out;
	for (i = 0; i < n; i++) {
		ts[i] = jobs[i].t;
		ctx[i] = &jobs[i].pk;
	}
	if (spx_vol_track_session_begin_set(ts, n, pick_fn, ctx) < 0)
		goto out;
	for (i = 0; i < n; i++)
		jobs[i].session = true;
	now = spx_wall_ms();
	for (i = 0; i < n; i++) {
		if (job_begun(&jobs[i], now) < 0)
			goto out;
		sp.total += jobs[i].total;
	}
	if (o->progress) {
		each.progress = set_progress;
		each.ctx = &sp;
	}
	if (sp.total && (slot = upload_slot(ss)) < 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (job_commit(ss, &jobs[i], &each, &out[i]) < 0)
			goto out;
		sp.before += jobs[i].total;
	}
	rc = 0;
out:
	if (slot >= 0)
		close(slot);
	free(ts);
	free(ctx);
	return rc;
}

int spx_snap_create(struct spx_snap_store *ss, const char *vol,
		    const struct spx_snap_opts *o, struct spx_snap_report *out)
{
	static const struct spx_snap_opts none = { 0 };
	struct spx_snap_report r;
	struct job j = { .vol = vol, .datafd = -1 };
	int lk, rc;

	if (!o)
		o = &none;
	if (o->parent && id_check(o->parent) < 0)
		return -1;
	if (o->id && id_check(o->id) < 0)
		return -1;
	if ((lk = gc_lock(ss, LOCK_SH)) < 0)
		return -1;
	if (o->id && (rc = stored_already(ss, o->id, vol, NULL, out)) != 0) {
		close(lk);
		return rc < 0 ? -1 : 0;
	}
	j.id = o->id;
	j.want_parent = o->parent;
	rc = take(ss, &j, 1, o, &r);
	job_release(&j);
	if (rc == 0 && out)
		*out = r;
	gc_unlock(ss, lk, rc);
	return rc;
}

static int by_vol(const void *a, const void *b)
{
	return strcmp(((const struct job *)a)->vol, ((const struct job *)b)->vol);
}

int spx_snap_create_set(struct spx_snap_store *ss, const char *const *vols,
			const char *const *ids, size_t n,
			const struct spx_snap_opts *o,
			struct spx_snap_report *out)
{
	static const struct spx_snap_opts none = { 0 };
	struct spx_snap_report *r = NULL;
	struct job *jobs;
	size_t stored = 0, i;
	int lk, rc = -1;
	bool bad = false;

	if (!o)
		o = &none;
	if (!n || n > SPX_SNAP_SET_MAX)
		return spx_error(SPX_USAGE, "a set is of 1 to %d volumes",
				 SPX_SNAP_SET_MAX);
	if (o->id || o->parent)
		return spx_error(SPX_USAGE, "a set takes ids per volume, and "
					    "each volume's own parent");
	jobs = spx_calloc(n, sizeof(*jobs));
	for (i = 0; i < n; i++) {
		jobs[i].vol = vols[i];
		jobs[i].id = ids ? ids[i] : NULL;
		jobs[i].datafd = -1;
	}
	qsort(jobs, n, sizeof(*jobs), by_vol);
	for (i = 0; i < n && !bad; i++) {
		if (jobs[i].id && id_check(jobs[i].id) < 0)
			bad = true;
		else if (i && !strcmp(jobs[i - 1].vol, jobs[i].vol))
			bad = spx_error(SPX_USAGE, "'%s' is in the set twice",
					jobs[i].vol) < 0;
		for (size_t k = 0; !bad && jobs[i].id && k < i; k++)
			if (jobs[k].id && !strcmp(jobs[k].id, jobs[i].id))
				bad = spx_error(SPX_USAGE, "'%s' is named twice",
						jobs[i].id) < 0;
	}
	if (bad) {
		free(jobs);
		return -1;
	}
	if ((lk = gc_lock(ss, LOCK_SH)) < 0) {
		free(jobs);
		return -1;
	}
	r = spx_calloc(n, sizeof(*r));
	for (i = 0; i < n; i++) {
		int s = jobs[i].id ? stored_already(ss, jobs[i].id, jobs[i].vol,
						    NULL, &r[i])
				   : 0;

		if (s < 0)
			goto out;
		stored += (size_t)s;
	}
	if (stored && stored < n) {
		/* A set cut short (a crash between its manifests): its
		 * snapshots are one moment or none, so the stored ones go
		 * and the set is taken again. Nothing uses them yet: the
		 * records name them pending until every one is stored. */
		for (i = 0; i < n; i++)
			if (r[i].existed && spx_snap_remove(ss, jobs[i].id) < 0)
				goto out;
		spx_log(SPX_LOG_INFO, "vol: a set of %zu snapshots was cut "
				      "short at %zu: taking it again",
			n, stored);
		memset(r, 0, n * sizeof(*r));
	}
	if (stored < n && take(ss, jobs, n, o, r) < 0)
		goto out;
	/* In the caller's order. */
	for (i = 0; i < n; i++)
		for (size_t k = 0; k < n; k++)
			if (!strcmp(r[k].volume, vols[i]))
				out[i] = r[k];
	rc = 0;
out:
	for (i = 0; i < n; i++)
		job_release(&jobs[i]);
	free(jobs);
	free(r);
	gc_unlock(ss, lk, rc);
	return rc;
}

/* ---- restore ---- */

struct prep {
	const struct spx_snap_manifest *m;
	uint64_t size;
};

/* Before the volume exists: every chunk of the snapshot is to fetch. */
static int prepare(void *ctx, const char *dir)
{
	struct prep *p = ctx;
	struct spx_vol_track *t;
	int rc;

	if (spx_vol_track_open(dir, p->size, 0, &t) < 0)
		return -1;
	for (uint64_t i = 0; i < p->m->count; i++)
		spx_vol_track_set(t, SPX_TRACK_UNFILLED, p->m->v[i].idx);
	rc = spx_vol_track_sync(t);
	spx_vol_track_close(t);
	return rc;
}

/* SPX_SNAP_FETCHERS fetches overlap, and as many threads again write
 * what they fetched meanwhile. */
#define FILLERS (2 * SPX_SNAP_FETCHERS)

struct fillers {
	struct spx_snap_fill *f;
	sem_t fetching;
	pthread_mutex_t mu;
	uint64_t next, done;
	bool failed;
	int err_status;
	char err[512];
};

static void filler_fail(struct fillers *p)
{
	pthread_mutex_lock(&p->mu);
	if (!p->failed) {
		p->failed = true;
		p->err_status = spx_errstatus();
		snprintf(p->err, sizeof(p->err), "%s", spx_errmsg());
	}
	pthread_mutex_unlock(&p->mu);
}

static void *filler(void *arg)
{
	struct fillers *p = arg;
	const struct spx_snap_manifest *m = &p->f->src;
	struct spx_snap_runbuf rb;
	unsigned char *buf = spx_snap_runbuf_get(&rb);
	uint64_t batch[SPX_SNAP_FILL_BATCH];
	size_t nb = 0;

	if (!buf) {
		spx_error(SPX_FAIL, "out of memory");
		filler_fail(p);
		return NULL;
	}
	for (;;) {
		uint64_t i = 0, c;
		unsigned n = 0, wrote;
		bool end;
		int rc;

		/* A run of adjacent chunks of the snapshot at a time. */
		pthread_mutex_lock(&p->mu);
		end = p->failed || p->next >= m->count;
		if (!end) {
			i = p->next;
			n = spx_snap_fill_run(m, i);
			p->next += n;
		}
		pthread_mutex_unlock(&p->mu);
		/* Written chunks become local a batch at a time: one sync
		 * of the data and one of the map for many chunks. */
		if ((end || nb + SPX_SNAP_FILL_RUN > SPX_SNAP_FILL_BATCH) &&
		    nb) {
			if (spx_snap_fill_commit(p->f, batch, nb) < 0)
				filler_fail(p);
			nb = 0;
		}
		if (end)
			break;
		c = m->v[i].idx;
		rc = spx_snap_fill_fetch(p->f, c, n, buf, &p->fetching, NULL,
					 &wrote);
		if (rc < 0)
			filler_fail(p);
		for (unsigned j = 0; j < n; j++)
			if (wrote & 1u << j)
				batch[nb++] = c + j;
		pthread_mutex_lock(&p->mu);
		p->done += n;
		pthread_mutex_unlock(&p->mu);
	}
	spx_snap_runbuf_put(&rb);
	return NULL;
}

/* Allocate the blocks of the chunks still to fill, a run of adjacent
 * chunks at a time. An O_DIRECT write into a hole allocates, and ext4
 * then holds the file's lock for the whole write, so that the fillers'
 * writes go one at a time; into allocated (unwritten) blocks they go
 * together. The space is what the writes take anyway; a failure here
 * (no fallocate, a full disk) is left for the writes to meet. */
static void fill_allocate(struct spx_snap_fill *f)
{
	const struct spx_snap_manifest *m = &f->src;

	for (uint64_t i = 0; i < m->count;) {
		uint64_t first = m->v[i].idx, n = 0;

		while (i < m->count && m->v[i].idx == first + n &&
		       spx_vol_track_test(f->t, SPX_TRACK_UNFILLED, first + n)) {
			i++;
			n++;
		}
		if (!n) {
			i++;
			continue;
		}
		if (fallocate(f->datafd, FALLOC_FL_KEEP_SIZE,
			      (off_t)(first * SPX_SNAP_CHUNK),
			      (off_t)((first + n - 1) * SPX_SNAP_CHUNK +
				      chunk_len(m->size, first + n - 1) -
				      first * SPX_SNAP_CHUNK)) < 0) {
			spx_log(SPX_LOG_DEBUG, "vol: fallocate of %s: %s",
				spx_vol_track_dir(f->t), strerror(errno));
			return;
		}
	}
}

static int fill_all(struct spx_snap_store *ss, const char *vol,
		    const struct spx_snap_restore_opts *o)
{
	struct spx_snap_fill f;
	struct spx_vol_track *t = NULL;
	struct spx_vol_info vi;
	char *dir = spx_vol_dir(ss->vs, vol), *data = spx_vol_data_path(ss->vs, vol);
	struct fillers p = { .f = &f };
	pthread_t th[FILLERS];
	int fd = -1, rc = -1, nth = 0;

	if (spx_vol_info(ss->vs, vol, &vi) < 0 ||
	    spx_vol_track_open(dir, vi.size, 0, &t) < 0)
		goto out;
	if ((fd = open(data, O_RDWR | O_CLOEXEC)) < 0) {
		spx_error_errno(SPX_FAIL, "cannot open '%s'", data);
		goto out;
	}
	if ((rc = spx_snap_fill_open(ss, t, fd, &f)) < 0) {
		if (spx_errstatus() == SPX_NO) { /* filled already */
			spx_error_clear();
			rc = 0;
		}
		goto out;
	}
	/* Where the file system takes it (else -1: the page cache). */
	f.directfd = open(data, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (f.directfd >= 0)
		fill_allocate(&f);
	pthread_mutex_init(&p.mu, NULL);
	sem_init(&p.fetching, 0, SPX_SNAP_FETCHERS);
	for (int i = 0; i < FILLERS && (uint64_t)i < f.src.count; i++)
		if (pthread_create(&th[nth], NULL, filler, &p) == 0)
			nth++;
	if (f.src.count && !nth)
		filler(&p);
	for (;;) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		uint64_t done;
		bool end;

		pthread_mutex_lock(&p.mu);
		done = p.done;
		end = p.failed || p.done >= f.src.count;
		pthread_mutex_unlock(&p.mu);
		if (o->progress)
			o->progress(o->ctx, done, f.src.count);
		if (end)
			break;
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&p.mu);
	sem_destroy(&p.fetching);
	rc = p.failed ? spx_error(p.err_status, "%s", p.err) : 0;
	if (rc == 0 && spx_snap_fill_finish(&f) < 0)
		rc = -1;
	if (f.directfd >= 0)
		close(f.directfd);
	spx_snap_fill_release(&f);
out:
	if (fd >= 0)
		close(fd);
	spx_vol_track_close(t);
	free(dir);
	free(data);
	return rc;
}

int spx_snap_restore(struct spx_snap_store *ss, const char *snap,
		     const struct spx_snap_restore_opts *o,
		     struct spx_vol_info *out)
{
	static const struct spx_snap_restore_opts none = { 0 };
	struct spx_snap_manifest m = { 0 };
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_vol_info vi;
	struct prep pp;
	char key[SPX_ID_SIZE + 2];
	uint64_t size;
	int lk, rc = -1;

	if (!o)
		o = &none;
	if (id_check(snap) < 0)
		return -1;
	if (o->id && !spx_vol_id_valid(o->id))
		return spx_error(SPX_USAGE,
				 "'%s' is not a volume id (vol- and 17 hex "
				 "digits)",
				 o->id);
	if ((lk = gc_lock(ss, LOCK_SH)) < 0)
		return -1;
	snprintf(key, sizeof(key), "m/%s", snap);
	rc = read_object(ss, key, MANIFEST_MAX, false, &b, NULL);
	if (rc == SPX_OBJ_NO_SUCH_KEY) {
		rc = spx_error(SPX_NO, "no snapshot '%s'", snap);
		goto out;
	}
	if (rc < 0) {
		rc = obj_fail(rc);
		goto out;
	}
	rc = -1;
	if (manifest_decode(key, &b, 0, &m) < 0)
		goto out;
	if (strcmp(m.id, snap)) {
		spx_error(SPX_FAIL, "%s names another snapshot: corrupt", key);
		goto out;
	}
	size = o->size ? o->size : m.size;
	if (size < m.size) {
		spx_error(SPX_USAGE,
			  "'%s' is of %llu bytes: a volume from it cannot be "
			  "smaller",
			  snap, (unsigned long long)m.size);
		goto out;
	}
	/* Everything it names is there, before there is a volume that
	 * would need it. */
	{
		uint64_t i;
		int r;

		if (chunks_exist(ss, &m, &i, &r) < 0) {
			char hex[2 * SPX_SNAP_HASH + 1];

			spx_hex_encode(m.v[i].hash, SPX_SNAP_HASH, hex);
			if (r == SPX_OBJ_NO_SUCH_KEY)
				spx_error(SPX_FAIL,
					  "snapshot '%s' names chunk %s (chunk "
					  "%llu of the volume), which the store "
					  "does not hold",
					  snap, hex, (unsigned long long)m.v[i].idx);
			goto out;
		}
	}
	pp.m = &m;
	pp.size = size;
	{
		struct spx_vol_from from = { snap, b.p, b.len, prepare, &pp };

		if (spx_vol_create_from(ss->vs, size, o->id, &from, &vi) < 0)
			goto out;
	}
	/* The volume's source manifest holds its chunks from now on. */
	gc_unlock(ss, lk, 0);
	lk = -1;
	/* Eager, or nothing to fetch (a snapshot of zeros): done now. */
	if ((o->eager || !m.count) && fill_all(ss, vi.id, o) < 0) {
		spx_error_prefix("'%s' is restored, but not every chunk could "
				 "be fetched yet",
				 vi.id);
		goto out;
	}
	if (out)
		*out = vi;
	rc = 0;
out:
	if (lk >= 0)
		close(lk);
	spx_buf_release(&b);
	spx_snap_manifest_release(&m);
	return rc;
}

/* ---- listing, removal ---- */

/* Every key under prefix, in pages, to fn; stops at fn's -1. */
static int each_key(struct spx_snap_store *ss, const char *prefix,
		    int (*fn)(void *ctx, const struct spx_obj_entry *e),
		    void *ctx)
{
	char *after = NULL;
	int rc = 0;

	do {
		struct spx_obj_list_opts lo = { .prefix = prefix, .after = after,
						.max = PAGE };
		struct spx_obj_list l = SPX_OBJ_LIST_INIT;

		if ((rc = spx_obj_list(ss->obj, &ss->b, &lo, &l)) < 0) {
			rc = obj_fail(rc);
			break;
		}
		for (size_t i = 0; i < l.n && rc == 0; i++)
			rc = fn(ctx, &l.v[i]);
		free(after);
		after = l.truncated && l.next ? spx_strdup(l.next) : NULL;
		spx_obj_list_release(&l);
	} while (rc == 0 && after);
	free(after);
	return rc;
}

struct lister {
	struct spx_snap_store *ss;
	struct spx_snap_manifest *v;
	size_t n, cap;
};

static int list_one(void *ctx, const struct spx_obj_entry *e)
{
	struct lister *l = ctx;
	struct spx_snap_manifest m;

	if (!spx_snap_id_valid(e->key + 2))
		return 0;
	if (spx_snap_manifest_read(l->ss, e->key + 2, SPX_SNAP_HEADER, &m) < 0) {
		/* One unreadable snapshot never breaks a listing. */
		if (spx_errstatus() != SPX_NO)
			spx_log(SPX_LOG_WARN, "vol: %s", spx_errmsg());
		spx_error_clear();
		return 0;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = spx_realloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = m;
	return 0;
}

int spx_snap_list(struct spx_snap_store *ss, struct spx_snap_manifest **out,
		  size_t *n)
{
	struct lister l = { .ss = ss };
	int rc = each_key(ss, "m/", list_one, &l);

	if (rc < 0) {
		free(l.v);
		*out = NULL;
		*n = 0;
		return -1;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

int spx_snap_remove(struct spx_snap_store *ss, const char *id)
{
	char key[SPX_ID_SIZE + 2];
	int rc;

	if (id_check(id) < 0)
		return -1;
	snprintf(key, sizeof(key), "m/%s", id);
	rc = spx_obj_delete(ss->obj, &ss->b, key);
	if (rc == SPX_OBJ_NO_SUCH_KEY)
		return spx_error(SPX_NO, "no snapshot '%s'", id);
	return rc < 0 ? obj_fail(rc) : 0;
}

/* ---- collection ---- */

struct marks {
	struct spx_snap_store *ss;
	unsigned char (*h)[SPX_SNAP_HASH];
	size_t n, cap;
	struct spx_snap_gc_report *r;
};

static void mark_all(struct marks *k, const struct spx_snap_manifest *m)
{
	for (uint64_t i = 0; i < m->count; i++) {
		if (k->n == k->cap) {
			k->cap = k->cap ? 2 * k->cap : 4096;
			k->h = spx_realloc(k->h, k->cap * sizeof(*k->h));
		}
		memcpy(k->h[k->n++], m->v[i].hash, SPX_SNAP_HASH);
	}
	k->r->manifests++;
}

static int mark_one(void *ctx, const struct spx_obj_entry *e)
{
	struct marks *k = ctx;
	struct spx_snap_manifest m;
	struct spx_buf b = SPX_BUF_INIT;
	int rc = read_object(k->ss, e->key, MANIFEST_MAX, false, &b, NULL);

	/* Deleted since it was listed: it names nothing now. */
	if (rc == SPX_OBJ_NO_SUCH_KEY) {
		spx_error_clear();
		spx_buf_release(&b);
		return 0;
	}
	if (rc < 0 || manifest_decode(e->key, &b, 0, &m) < 0) {
		if (rc < 0)
			obj_fail(rc);
		spx_buf_release(&b);
		return spx_error_prefix("collection stopped, nothing removed");
	}
	mark_all(k, &m);
	spx_snap_manifest_release(&m);
	spx_buf_release(&b);
	return 0;
}

/* Volumes restoring lazily still need their source's chunks. */
static int mark_volumes(struct marks *k)
{
	char **v;
	size_t n;
	int rc = 0;

	/* Every volume directory, its record readable or not: one whose
	 * vol.json is damaged may still be restoring from its source. */
	if (spx_vol_ids(k->ss->vs, &v, &n) < 0)
		return -1;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *dir = spx_vol_dir(k->ss->vs, v[i]);
		struct spx_vol_snapstate st;
		struct spx_snap_manifest m;

		if (spx_vol_snapstate_read(dir, &st) < 0)
			rc = -1;
		else if (*st.source) {
			if (source_read(dir, st.source, &m) < 0) {
				rc = -1;
			} else {
				mark_all(k, &m);
				spx_snap_manifest_release(&m);
			}
		}
		free(dir);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return rc < 0 ? spx_error_prefix("collection stopped, nothing removed")
		      : 0;
}

static int hash_cmp(const void *a, const void *b)
{
	return memcmp(a, b, SPX_SNAP_HASH);
}

static int sweep_one(void *ctx, const struct spx_obj_entry *e)
{
	struct marks *k = ctx;
	unsigned char h[SPX_SNAP_HASH];
	int rc;

	if (strlen(e->key) != 2 + 2 * SPX_SNAP_HASH ||
	    !spx_is_lower_hex(e->key + 2, 2 * SPX_SNAP_HASH))
		return 0; /* not a chunk of ours: left alone */
	k->r->chunks++;
	for (size_t i = 0; i < SPX_SNAP_HASH; i++)
		h[i] = (unsigned char)(spx_hexval(e->key[2 + 2 * i]) << 4 |
				       spx_hexval(e->key[3 + 2 * i]));
	if (k->n && bsearch(h, k->h, k->n, SPX_SNAP_HASH, hash_cmp))
		return 0;
	rc = spx_obj_delete(k->ss->obj, &k->ss->b, e->key);
	if (rc < 0 && rc != SPX_OBJ_NO_SUCH_KEY)
		return obj_fail(rc);
	k->r->removed++;
	k->r->removed_bytes += e->size;
	return 0;
}

int spx_snap_gc(struct spx_snap_store *ss, bool wait,
		struct spx_snap_gc_report *out)
{
	struct spx_snap_gc_report r = { 0 };
	struct marks k = { .ss = ss, .r = &r };
	int lk = gc_lock(ss, LOCK_EX | (wait ? 0 : LOCK_NB)), rc;

	/* Held: marked for the holder, who looks after it lets go; and
	 * tried once more, in case that was just before the mark. */
	if (lk < 0 && spx_errstatus() == SPX_NO) {
		gc_mark(ss, true);
		lk = gc_lock(ss, LOCK_EX | LOCK_NB);
	}
	if (lk < 0)
		return -1;
	/* What is removed from now on, this pass or a later one sees. */
	gc_mark(ss, false);
	rc = each_key(ss, "m/", mark_one, &k);
	if (rc == 0)
		rc = mark_volumes(&k);
	if (rc == 0) {
		if (k.n)
			qsort(k.h, k.n, SPX_SNAP_HASH, hash_cmp);
		/* Distinct. */
		size_t d = 0;

		for (size_t i = 0; i < k.n; i++)
			if (!d || memcmp(k.h[d - 1], k.h[i], SPX_SNAP_HASH))
				memcpy(k.h[d++], k.h[i], SPX_SNAP_HASH);
		k.n = d;
		r.referenced = d;
		rc = each_key(ss, "c/", sweep_one, &k);
	}
	free(k.h);
	close(lk);
	if (out)
		*out = r;
	/* A removal while this one marked left its chunks to it; if
	 * another holds the lock by now, that one is marked. */
	if (rc == 0 && gc_marked(ss)) {
		struct spx_snap_gc_report again;

		if (spx_snap_gc(ss, false, &again) < 0) {
			spx_error_clear();
		} else if (out) {
			out->removed += again.removed;
			out->removed_bytes += again.removed_bytes;
		}
	}
	return rc;
}

/* ---- lazy restore ---- */

int spx_snap_fill_open(struct spx_snap_store *ss, struct spx_vol_track *t,
		       int datafd, struct spx_snap_fill *f)
{
	struct spx_vol_snapstate st;
	const char *dir = spx_vol_track_dir(t);

	memset(f, 0, sizeof(*f));
	f->datafd = f->directfd = -1;
	if (spx_vol_snapstate_read(dir, &st) < 0)
		return -1;
	if (!*st.source) {
		char *p = spx_path_join(dir, "source");

		/* Left by a crash after the restore completed. */
		unlink(p);
		free(p);
		return spx_error(SPX_NO, "'%s' is not restoring", dir);
	}
	if (source_read(dir, st.source, &f->src) < 0)
		return -1;
	f->ss = ss;
	f->t = t;
	f->datafd = datafd;
	return 0;
}

void spx_snap_fill_release(struct spx_snap_fill *f)
{
	spx_snap_manifest_release(&f->src);
	memset(f, 0, sizeof(*f));
	f->datafd = f->directfd = -1;
}

/* Write chunk c's bytes (len of buf) into the volume, without syncing. */
static int fill_put(struct spx_snap_fill *f, uint64_t c, const void *buf,
		    size_t len)
{
	const char *p = buf;
	uint64_t off = c * SPX_SNAP_CHUNK;
	size_t left = len;

	/* Around the page cache where it can: restoring threads writing
	 * one file through it wait on each other's copies. */
	if (f->directfd >= 0 && !((uintptr_t)buf % 4096) && !(len % 4096)) {
		ssize_t w = pwrite(f->directfd, buf, len, (off_t)off);

		if (w == (ssize_t)len)
			return 0;
		/* Anything else is done again the plain way. */
	}
	while (left) {
		ssize_t w = pwrite(f->datafd, p, left, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return spx_error_errno(SPX_FAIL,
					       "cannot write chunk %llu of '%s'",
					       (unsigned long long)c,
					       spx_vol_track_dir(f->t));
		p += w;
		left -= (size_t)w;
		off += (uint64_t)w;
	}
	/* Its writeback begins now, while the next chunk is fetched: the
	 * batch's fdatasync (spx_snap_fill_commit) then waits for what is
	 * on its way rather than starting it all. A failure here is only
	 * a lost head start. */
	sync_file_range(f->datafd, (off_t)(c * SPX_SNAP_CHUNK), (off_t)len,
			SYNC_FILE_RANGE_WRITE);
	return 0;
}

/* Fetch chunk c into buf: its length (0: the snapshot holds zeros,
 * which the volume's hole is already), or -1. fetching, if not NULL, is
 * held while the store reads; the bytes are checked after. */
static int64_t fill_get(struct spx_snap_fill *f, uint64_t c, void *buf,
			sem_t *fetching, bool *lost)
{
	const struct spx_snap_entry *e = spx_snap_manifest_find(&f->src, c);
	size_t len;
	int rc;

	if (!e)
		return 0;
	len = chunk_len(f->src.size, c);
	while (fetching && sem_wait(fetching) < 0 && errno == EINTR)
		;
	rc = chunk_read(f->ss, e->hash, buf, len, lost);
	if (fetching)
		sem_post(fetching);
	if (rc < 0 || chunk_check(e->hash, buf, len, lost) < 0)
		return -1;
	return (int64_t)len;
}

int spx_snap_fill_chunk(struct spx_snap_fill *f, uint64_t c, void *buf,
			bool *lost)
{
	int64_t len;
	int rc = 0;

	if (lost)
		*lost = false;
	if (!spx_vol_track_test(f->t, SPX_TRACK_UNFILLED, c))
		return 0;
	if (spx_vol_track_chunk_lock(f->t, c) < 0)
		return -1;
	/* The reader waits for this chunk anyway: fetched under its lock,
	 * so that it is fetched once. */
	if (spx_vol_track_test(f->t, SPX_TRACK_UNFILLED, c)) {
		if ((len = fill_get(f, c, buf, NULL, lost)) < 0 ||
		    (len && fill_put(f, c, buf, (size_t)len) < 0))
			rc = -1;
		else
			rc = spx_snap_fill_commit(f, &c, 1);
	}
	spx_vol_track_chunk_unlock(f->t, c);
	return rc;
}

unsigned spx_snap_fill_run(const struct spx_snap_manifest *m, uint64_t i)
{
	unsigned n = 0;

	if (i >= m->count)
		return 0;
	do
		n++;
	while (n < SPX_SNAP_FILL_RUN && i + n < m->count &&
	       m->v[i + n].idx == m->v[i].idx + n);
	return n;
}

void *spx_snap_runbuf_get(struct spx_snap_runbuf *rb)
{
	const size_t bytes = SPX_SNAP_FILL_RUN * SPX_SNAP_CHUNK;

	/* In a huge page, one segment of a disk request (lib/core/iobuf.h),
	 * else malloc's; aligned for O_DIRECT either way. */
	rb->pool = spx_iobuf_pool_new(bytes, 0);
	rb->pooled = rb->pool && (rb->buf = spx_iobuf_get(rb->pool, bytes));
	if (!rb->pooled)
		rb->buf = aligned_alloc(4096, bytes);
	if (!rb->buf) {
		spx_iobuf_pool_free(rb->pool);
		rb->pool = NULL;
	}
	return rb->buf;
}

void spx_snap_runbuf_put(struct spx_snap_runbuf *rb)
{
	if (!rb->pooled)
		free(rb->buf);
	spx_iobuf_pool_free(rb->pool);
	rb->buf = NULL;
	rb->pool = NULL;
}

int spx_snap_fill_fetch(struct spx_snap_fill *f, uint64_t c, unsigned n,
			void *buf, sem_t *fetching, bool *lost,
			unsigned *wrote)
{
	unsigned char *b = buf;
	size_t len[SPX_SNAP_FILL_RUN] = { 0 };
	unsigned want = 0, locked = 0;
	int rc = 0;

	if (lost)
		*lost = false;
	*wrote = 0;
	if (!n || n > SPX_SNAP_FILL_RUN)
		return spx_error(SPX_USAGE, "a fill of %u chunks (1 to %d)", n,
				 SPX_SNAP_FILL_RUN);
	/* Fetched without the chunks' locks: the bytes are the snapshot's
	 * whatever the volume does meanwhile, and a guest's write to a
	 * chunk need not wait for the store. Whether they still belong in
	 * the volume is decided under the locks. */
	for (unsigned j = 0; j < n; j++) {
		int64_t l;

		if (!spx_vol_track_test(f->t, SPX_TRACK_UNFILLED, c + j))
			continue;
		l = fill_get(f, c + j, b + (size_t)j * SPX_SNAP_CHUNK, fetching,
			     lost);
		if (l < 0)
			return -1;
		len[j] = (size_t)l;
		want |= 1u << j;
	}
	if (spx_snap_fill_window)
		spx_snap_fill_window(f, c, n);
	/* In ascending order, as every holder of more than one takes
	 * them. */
	for (unsigned j = 0; j < n && rc == 0; j++) {
		if (!(want & 1u << j))
			continue;
		if (spx_vol_track_chunk_lock(f->t, c + j) < 0) {
			rc = -1;
			break;
		}
		locked |= 1u << j;
		if (spx_vol_track_test(f->t, SPX_TRACK_UNFILLED, c + j))
			*wrote |= 1u << j;
	}
	/* Adjacent chunks with data in one write: fewer and larger disk
	 * requests (docs/ARCHITECTURE.md has the figures). A chunk of zeros
	 * is the volume's hole already. */
	for (unsigned j = 0; j < n && rc == 0;) {
		unsigned k = j;
		size_t run = 0;

		while (k < n && (*wrote >> k & 1) && len[k]) {
			run += len[k++];
			if (len[k - 1] < SPX_SNAP_CHUNK)
				break; /* the volume's last, shorter chunk */
		}
		if (run)
			rc = fill_put(f, c + j, b + (size_t)j * SPX_SNAP_CHUNK,
				      run);
		j = k > j ? k : j + 1;
	}
	for (unsigned j = 0; j < n; j++)
		if (locked & 1u << j)
			spx_vol_track_chunk_unlock(f->t, c + j);
	if (rc < 0)
		*wrote = 0;
	return rc;
}

int spx_snap_fill_commit(struct spx_snap_fill *f, const uint64_t *c,
			 size_t n)
{
	if (!n)
		return 0;
	/* The bytes are durable before a chunk counts as local: else a
	 * crash could leave it local and empty. */
	if (fdatasync(f->datafd) < 0)
		return spx_error_errno(SPX_FAIL, "cannot sync '%s/data'",
				       spx_vol_track_dir(f->t));
	for (size_t i = 0; i < n; i++)
		spx_vol_track_clear(f->t, SPX_TRACK_UNFILLED, c[i]);
	return spx_vol_track_sync(f->t);
}

static int clear_source(void *ctx, struct spx_vol_snapstate *s)
{
	if (!*s->source)
		return 1;
	s->source[0] = 0;
	return 0;
}

int spx_snap_fill_finish(struct spx_snap_fill *f)
{
	const char *dir = spx_vol_track_dir(f->t);
	char *p;

	if (spx_vol_track_count(f->t, SPX_TRACK_UNFILLED))
		return 0;
	if (spx_vol_snapstate_update(dir, clear_source, NULL) < 0)
		return -1;
	p = spx_path_join(dir, "source");
	unlink(p);
	free(p);
	return 1;
}
