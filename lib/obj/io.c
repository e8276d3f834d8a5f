/* io.c: the streaming writer and reader, stat, delete, copy. */
#include "spx.h"

#include "checksum.h"

#include <sys/file.h>
#include <sys/uio.h>
#include <openssl/evp.h>

#include "file.h"
#include "hex.h"
#include "obj/index.h"

bool obj_kv_valid(const struct spx_kvlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		if (!*l->v[i].k || strlen(l->v[i].k) > 1024 ||
		    strlen(l->v[i].v) > 8192 || !obj_utf8_valid(l->v[i].k) ||
		    !obj_utf8_valid(l->v[i].v))
			return false;
	}
	return true;
}

static void kv_copy(struct spx_kvlist *to, const struct spx_kvlist *from)
{
	for (size_t i = 0; i < from->n; i++)
		spx_kv_add(to, from->v[i].k, from->v[i].v);
}

/* Room for need bytes in the stripe buffer. It starts small and grows
 * (doubling) as the data comes: a small object, the commonest, never
 * takes the (k + m) blocks of a whole stripe (a MiB or more), whose
 * allocation and release per PUT cost page-table changes and TLB
 * flushes across CPUs. A stripe to encode takes them all. */
#define WRITER_BUF_FIRST (64u << 10)

static void writer_room(struct spx_obj_writer *w, size_t need)
{
	size_t full = (size_t)(w->s->k + w->s->m) * w->s->block;
	size_t cap = w->cap ? w->cap : WRITER_BUF_FIRST;

	if (need <= w->cap)
		return;
	while (cap < need)
		cap *= 2;
	if (cap > full)
		cap = full;
	w->buf = spx_realloc(w->buf, cap);
	w->cap = cap;
}

int obj_writer_new(struct spx_obj *s, const struct spx_obj_bucket *b,
		   const char *key, const struct spx_obj_meta *in, int mode,
		   struct spx_obj_writer **out)
{
	struct spx_obj_writer *w;
	int rc;

	*out = NULL;
	if ((rc = obj_bucket_name(b)) < 0)
		return rc;
	if ((rc = spx_obj_key_check(key)) < 0)
		return rc;
	if (in && (!obj_kv_valid(&in->sys) || !obj_kv_valid(&in->user) ||
		   !obj_kv_valid(&in->checksums) || !obj_kv_valid(&in->tags))) {
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "metadata is not valid UTF-8 or too long");
	}
	w = spx_calloc(1, sizeof(*w));
	w->s = s;
	w->mode = mode;
	w->b = *b;
	w->bucket = w->b.name;
	w->key = spx_strdup(key);
	spx_obj_key_encode(key, w->enc, sizeof(w->enc));
	w->dirlock = -1;
	w->fds = spx_malloc((size_t)s->n * sizeof(int));
	for (int i = 0; i < s->n; i++)
		w->fds[i] = -1;
	writer_room(w, 1);
	w->md5 = EVP_MD_CTX_new();
	if (!w->md5 || !EVP_DigestInit_ex(w->md5, spx_md(SPX_CKSUM_MD5), NULL))
		spx_die(SPX_FAIL, "cannot start md5");
	w->meta.inl = (struct spx_buf)SPX_BUF_INIT;
	w->meta.key = spx_strdup(key);
	if (in) {
		kv_copy(&w->meta.sys, &in->sys);
		kv_copy(&w->meta.user, &in->user);
		kv_copy(&w->meta.checksums, &in->checksums);
		kv_copy(&w->meta.tags, &in->tags);
	}
	w->meta.k = s->k;
	w->meta.m = s->m;
	w->meta.block = s->block;
	*out = w;
	return 0;
}

int spx_obj_writer_begin(struct spx_obj *s, const struct spx_obj_bucket *b,
			 const char *key, const struct spx_obj_meta *in,
			 struct spx_obj_writer **out)
{
	struct spx_obj_writer *w;
	const char *bucket = b ? b->name : NULL;
	char rnd[17];
	int rc;

	if ((rc = obj_writer_new(s, b, key, in, OBJ_W_PUT, &w)) < 0)
		return rc;
	if ((rc = obj_randhex(rnd, 8)) < 0)
		goto fail;
	snprintf(w->meta.data, sizeof(w->meta.data), "d-%s", rnd);
	snprintf(w->segname, sizeof(w->segname), "s0");
	w->dirs = spx_calloc((size_t)s->n, sizeof(char *));
	for (int i = 0; i < s->n; i++)
		w->dirs[i] = spx_xprintf("%s/b/%s/o/%s/%s", s->drives[i], bucket,
					 w->enc, w->meta.data);
	/* The data directory is made at the first stripe (writer_datadir):
	 * an object small enough to live inline never has one. */
	*out = w;
	return 0;
fail:
	obj_writer_free(w, true);
	return rc;
}

struct spx_obj_meta *spx_obj_writer_meta(struct spx_obj_writer *w)
{
	return &w->meta;
}

/* Make the writer's directory on drive i. A PUT's is in the key's
 * directory, which a key kept flat must become first (store.c), under
 * the key's lock: the data streams before the commit takes it. */
static int writer_mkdir(struct spx_obj_writer *w, int i)
{
	char *kd;
	int rc, lk = -1;

	if (spx_mkdirs(w->dirs[i], 0755) == 0)
		return 0;
	if (w->mode != OBJ_W_PUT || errno != ENOTDIR)
		return obj_errno("cannot create '%s'", w->dirs[i]);
	spx_error_clear();
	if ((rc = obj_lock(w->s, w->bucket, w->key, true, &lk)) < 0)
		return rc;
	kd = obj_kdir(w->s, i, w->bucket, w->enc);
	rc = obj_unflat(kd);
	obj_unlock(lk);
	free(kd);
	if (!rc && spx_mkdirs(w->dirs[i], 0755) < 0)
		rc = obj_errno("cannot create '%s'", w->dirs[i]);
	return rc;
}

/* A PUT's data directory on drive 0 exists, locked, from its first
 * stripe to the end of the writer: heal removes only unlocked,
 * unreferenced ones. */
static int writer_datadir(struct spx_obj_writer *w)
{
	int rc;

	if (w->mode != OBJ_W_PUT || w->dirlock >= 0)
		return 0;
	if ((rc = writer_mkdir(w, 0)) < 0)
		return rc;
	w->dirlock = open(w->dirs[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->dirlock < 0 || flock(w->dirlock, LOCK_EX) < 0)
		return obj_errno("cannot lock '%s'", w->dirs[0]);
	return 0;
}

/* Encode the first L bytes of stripe buffer buf and append one block to
 * every shard file. */
static int flush_buf(struct spx_obj_writer *w, unsigned char *buf, size_t L)
{
	struct spx_obj *s = w->s;
	size_t B = s->block, bl = (L + (size_t)s->k - 1) / (size_t)s->k;
	unsigned char *sh[32];
	int rc;

	if (!L)
		return 0;
	if ((rc = writer_datadir(w)) < 0)
		return rc;
	/* A short stripe: spread the bytes over k blocks of bl, highest
	 * first so that no source is overwritten before it moves. */
	if (L < (size_t)s->k * B) {
		for (int j = s->k - 1; j >= 0; j--) {
			size_t from = (size_t)j * bl;
			size_t have = from < L ? (L - from < bl ? L - from : bl) : 0;

			if (have && j)
				memmove(buf + (size_t)j * B, buf + from, have);
			memset(buf + (size_t)j * B + have, 0, bl - have);
		}
	}
	for (int i = 0; i < s->n; i++)
		sh[i] = buf + (size_t)i * B;
	spx_ec_encode(&s->ec, bl, sh);
	for (int i = 0; i < s->n; i++) {
		uint32_t crc = spx_crc32c(sh[i], bl);
		unsigned char c4[4] = { crc & 255, crc >> 8 & 255,
					crc >> 16 & 255, crc >> 24 };

		if (w->fds[i] < 0) {
			char *path = spx_xprintf("%s/%s", w->dirs[i], w->segname);

			if ((rc = writer_mkdir(w, i)) < 0) {
				free(path);
				return rc;
			}
			w->fds[i] = open(path, O_WRONLY | O_CREAT | O_EXCL |
						       O_CLOEXEC, 0644);
			if (w->fds[i] < 0) {
				rc = obj_errno("cannot create '%s'", path);
				free(path);
				return rc;
			}
			free(path);
		}
		if ((rc = obj_write_all(w->fds[i], sh[i], bl, w->dirs[i])) < 0 ||
		    (rc = obj_write_all(w->fds[i], c4, 4, w->dirs[i])) < 0)
			return rc;
	}
	/* Start writeback as the object streams in, so that the fsync
	 * before the acknowledgement waits for the last few MiB, not the
	 * whole object. Advisory: fsync reports any failure. */
	w->wr_off += bl + 4;
	if (w->wr_off - w->wr_kicked >= OBJ_WRITEBACK_STEP) {
		for (int i = 0; i < s->n; i++)
			sync_file_range(w->fds[i], (off_t)w->wr_kicked,
					(off_t)(w->wr_off - w->wr_kicked),
					SYNC_FILE_RANGE_WRITE);
		w->wr_kicked = w->wr_off;
	}
	return 0;
}

/* The hasher thread: MD5 of each full stripe handed to it, in order. */
static void *hasher(void *arg)
{
	struct spx_obj_writer *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->busy && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->busy)
			break;
		pthread_mutex_unlock(&w->mu);
		EVP_DigestUpdate(w->md5, w->busy_buf, w->busy_fill);
		pthread_mutex_lock(&w->mu);
		w->busy = false;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Wait until the hasher has taken in every stripe handed to it. */
static void hasher_wait(struct spx_obj_writer *w)
{
	if (!w->th_on)
		return;
	pthread_mutex_lock(&w->mu);
	while (w->busy)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

/* A full stripe. MD5, the largest cost of a PUT and a serial one, runs on
 * the hasher thread while this thread encodes and writes the same stripe
 * (both only read its data blocks) and then fills the other buffer: on two
 * cores, receiving and writing overlap hashing. Without the thread (it
 * could not be started) all of it happens here. */
static int writer_submit(struct spx_obj_writer *w)
{
	size_t sz = (size_t)(w->s->k + w->s->m) * w->s->block;
	unsigned char *full;
	int rc;

	writer_room(w, sz);
	full = w->buf;
	w->flushed = true;
	if (!w->th_on && !w->th_failed) {
		w->spare = spx_malloc(sz);
		pthread_mutex_init(&w->mu, NULL);
		pthread_cond_init(&w->cv, NULL);
		if (pthread_create(&w->th, NULL, hasher, w) == 0) {
			w->th_on = true;
		} else {
			pthread_cond_destroy(&w->cv);
			pthread_mutex_destroy(&w->mu);
			free(w->spare);
			w->spare = NULL;
			w->th_failed = true;
		}
	}
	if (!w->th_on) {
		EVP_DigestUpdate(w->md5, w->buf, w->fill);
		rc = flush_buf(w, w->buf, w->fill);
		w->fill = 0;
		return rc;
	}
	/* The spare buffer is free once the hasher is done with it. */
	hasher_wait(w);
	pthread_mutex_lock(&w->mu);
	w->busy_buf = full;
	w->busy_fill = w->fill;
	w->busy = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	rc = flush_buf(w, full, w->fill);
	w->buf = w->spare;
	w->spare = full;
	w->fill = 0;
	return rc;
}

/* Flush the partial stripe (its MD5 is taken by writer_finish). */
int obj_writer_flush(struct spx_obj_writer *w)
{
	int rc;

	if (!w->fill)
		return 0;
	w->flushed = true;
	writer_room(w, (size_t)(w->s->k + w->s->m) * w->s->block);
	rc = flush_buf(w, w->buf, w->fill);
	w->fill = 0;
	return rc;
}

int spx_obj_writer_write(struct spx_obj_writer *w, const void *p, size_t n)
{
	size_t sw = (size_t)w->s->k * w->s->block;
	const unsigned char *c = p;

	if (w->err)
		return obj_err(w->err, "writer failed earlier");
	/* MD5 is taken a stripe at a time: writer_submit, writer_finish. */
	w->size += n;
	while (n) {
		size_t take = sw - w->fill < n ? sw - w->fill : n;

		writer_room(w, w->fill + take);
		memcpy(w->buf + w->fill, c, take);
		w->fill += take;
		c += take;
		n -= take;
		if (w->fill == sw) {
			int rc = writer_submit(w);

			/* The bucket went, and the data directory with it. */
			if (rc == SPX_OBJ_INTERNAL &&
			    obj_bucket_current(w->s, &w->b, NULL) < 0)
				rc = SPX_OBJ_NO_SUCH_BUCKET;
			if (rc < 0)
				return w->err = rc;
		}
	}
	return 0;
}

int obj_writer_sync(struct spx_obj_writer *w)
{
	int rc;

	for (int i = 0; i < w->s->n; i++) {
		if (w->fds[i] < 0)
			continue;
		if (fsync(w->fds[i]) < 0)
			return obj_errno("cannot sync '%s'", w->dirs[i]);
		if (close(w->fds[i]) < 0) {
			w->fds[i] = -1;
			return obj_errno("cannot close '%s'", w->dirs[i]);
		}
		w->fds[i] = -1;
		if ((rc = spx_fsync_dir(w->dirs[i])) < 0)
			return SPX_OBJ_INTERNAL;
	}
	return 0;
}

void obj_writer_free(struct spx_obj_writer *w, bool remove)
{
	if (!w)
		return;
	if (w->th_on) {
		pthread_mutex_lock(&w->mu);
		while (w->busy)
			pthread_cond_wait(&w->cv, &w->mu);
		w->quit = true;
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->th, NULL);
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		w->th_on = false;
	}
	free(w->spare);
	for (int i = 0; i < w->s->n; i++) {
		if (w->fds[i] >= 0)
			close(w->fds[i]);
		if (remove && w->dirs) {
			if (w->mode == OBJ_W_PUT) {
				obj_rmtree(w->dirs[i]);
			} else {
				char *p = spx_xprintf("%s/%s", w->dirs[i],
						      w->segname);

				unlink(p);
				free(p);
			}
		}
	}
	if (remove && w->mode == OBJ_W_PUT && w->dirs) {
		/* The key directory goes too if nothing else is in it. */
		for (int i = 0; i < w->s->n; i++) {
			char *k = obj_kdir(w->s, i, w->bucket, w->enc);

			rmdir(k);
			free(k);
		}
	}
	if (w->dirlock >= 0)
		close(w->dirlock);
	obj_dirs_free(w->dirs, w->s->n);
	free(w->fds);
	free(w->buf);
	EVP_MD_CTX_free(w->md5);
	spx_obj_meta_release(&w->meta);
	free(w->key);
	free(w);
}

void spx_obj_writer_condition(struct spx_obj_writer *w, spx_obj_cond_fn fn,
			      void *ctx)
{
	w->cond = fn;
	w->cond_ctx = ctx;
}

void spx_obj_writer_abort(struct spx_obj_writer *w)
{
	obj_writer_free(w, true);
}

/* Finish the content: inline it or flush and sync the shards, and fill
 * size, etag and the segment. */
static int writer_finish(struct spx_obj_writer *w, const unsigned char *want)
{
	struct spx_obj *s = w->s;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdl = 0;
	int rc;

	if (w->err)
		return obj_err(w->err, "writer failed earlier");
	hasher_wait(w);
	EVP_DigestUpdate(w->md5, w->buf, w->fill); /* the last stripe */
	EVP_DigestFinal_ex(w->md5, md, &mdl);
	if (want && memcmp(want, md, 16))
		return obj_err(SPX_OBJ_BAD_DIGEST,
			       "content does not match its md5");
	spx_hex_encode(md, 16, w->meta.etag);
	w->meta.size = w->size;
	if (w->mode == OBJ_W_PUT && !w->flushed && w->size <= s->inline_max &&
	    !(s->flags & SPX_OBJ_NO_INLINE)) {
		w->meta.is_inline = true;
		spx_buf_add(&w->meta.inl, w->buf, w->fill);
		return 0;
	}
	if ((rc = obj_writer_flush(w)) < 0 || (rc = obj_writer_sync(w)) < 0)
		return rc;
	w->meta.segs = spx_calloc(1, sizeof(*w->meta.segs));
	w->meta.nsegs = 1;
	snprintf(w->meta.segs[0].name, sizeof(w->meta.segs[0].name), "%s",
		 w->segname);
	w->meta.segs[0].size = w->size;
	memcpy(w->meta.segs[0].md5, w->meta.etag, 33);
	return 0;
}

int spx_obj_writer_commit(struct spx_obj_writer *w, const unsigned char *md5,
			  struct spx_obj_meta *out)
{
	struct spx_obj *s = w->s;
	char *old[2] = { NULL, NULL };
	enum spx_obj_versioning v;
	int rc, lk = -1;

	if (out) {
		memset(out, 0, sizeof(*out));
		out->inl = (struct spx_buf)SPX_BUF_INIT;
	}
	if (w->mode == OBJ_W_PART) {
		rc = writer_finish(w, md5);
		if (rc == SPX_OBJ_INTERNAL && obj_bucket_current(s, &w->b, NULL) < 0)
			rc = SPX_OBJ_NO_SUCH_BUCKET;
		else if (!rc)
			rc = obj_part_commit(w, out);
		obj_writer_free(w, rc < 0);
		return rc;
	}
	/* A bucket deleted while the data streamed took the data directory
	 * with it: say so, rather than report the missing files. */
	if ((rc = writer_finish(w, md5)) < 0) {
		if (rc == SPX_OBJ_INTERNAL &&
		    obj_bucket_current(s, &w->b, NULL) < 0)
			rc = SPX_OBJ_NO_SUCH_BUCKET;
		goto out;
	}
	if ((rc = obj_lock(s, w->bucket, w->key, true, &lk)) < 0)
		goto out;
	/* The bucket may have gone while we streamed, and another of its
	 * name may have been made: the commit goes only into the bucket the
	 * handle was opened on. Its versioning is read under the lock that
	 * PutBucketVersioning takes for writing. */
	if ((rc = obj_bucket_current(s, &w->b, &v)) < 0)
		goto out;
	if (w->cond) {
		struct spx_obj_meta cur = SPX_OBJ_META_INIT;
		int st = spx_obj_stat(s, &w->b, w->key, &cur);

		if (st < 0 && st != SPX_OBJ_NO_SUCH_KEY) {
			rc = st;
			goto out;
		}
		rc = w->cond(w->cond_ctx, st == 0 ? &cur : NULL);
		spx_obj_meta_release(&cur);
		if (rc < 0) {
			rc = obj_err(rc, "'%s' in '%s': precondition failed",
				     w->key, w->bucket);
			goto out;
		}
	}
	if (w->meta.is_inline)
		w->meta.data[0] = 0;
	w->meta.delete_marker = false;
	rc = obj_install(s, w->bucket, w->b.inc, w->enc, v, &w->meta, old);
out:
	obj_unlock(lk);
	if (!rc) {
		obj_idx_after_note(s, &w->b);
		if (out)
			spx_obj_meta_copy(out, &w->meta);
		obj_remove_data(s, w->bucket, w->enc, old[0]);
		obj_remove_data(s, w->bucket, w->enc, old[1]);
	}
	free(old[0]);
	free(old[1]);
	obj_writer_free(w, rc < 0);
	return rc;
}

/* ---- reading ---- */

struct spx_obj_reader {
	struct spx_obj *s;
	struct spx_obj_meta meta;
	char **ddirs;		/* data directory on each drive */
	int *fds;		/* nsegs x n, -1 where missing */
	bool lazy;		/* too many segments: one at a time */
	size_t lazyseg;
	uint64_t *segoff;	/* nsegs + 1 */
	unsigned char *buf;	/* (k + m) x (block + 4) */
	bool cached;
	size_t cseg;
	uint64_t cstripe;
	struct spx_obj_stripe cst;
	int open_errno;		/* a shard open's failure other than ENOENT */
};

const struct spx_obj_meta *spx_obj_reader_meta(const struct spx_obj_reader *r)
{
	return &r->meta;
}

static int open_seg(struct spx_obj_reader *r, size_t seg, int *fds)
{
	int have = 0;

	for (int i = 0; i < r->s->n; i++) {
		char *p = spx_xprintf("%s/%s", r->ddirs[i], r->meta.segs[seg].name);

		fds[i] = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fds[i] >= 0)
			have++;
		else if (errno != ENOENT && errno != ENOTDIR)
			r->open_errno = errno; /* EMFILE, EIO...: may pass */
		else if (!obj_drive_here(r->s, i))
			r->open_errno = ENODEV; /* it may come back */
		free(p);
	}
	return have;
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

void spx_obj_reader_close(struct spx_obj_reader *r)
{
	if (!r)
		return;
	if (r->fds)
		close_fds(r->fds, (r->lazy ? 1 : r->meta.nsegs) * (size_t)r->s->n);
	free(r->fds);
	obj_dirs_free(r->ddirs, r->s->n);
	free(r->segoff);
	free(r->buf);
	spx_obj_meta_release(&r->meta);
	free(r);
}

static int reader_try(struct spx_obj_reader *r, const char *bucket,
		      const char *enc, const char *vid, bool *retry)
{
	struct spx_obj *s = r->s;
	char name[OBJ_VFILE_SIZE];
	int rc, n = s->n;

	*retry = false;
	rc = obj_version_get(s, bucket, enc, vid, &r->meta, name);
	if (rc < 0)
		return rc;
	if (r->meta.delete_marker)
		return vid ? obj_err(SPX_OBJ_DELETE_MARKER,
				     "version '%s' is a delete marker", vid)
			   : SPX_OBJ_NO_SUCH_KEY;
	if (r->meta.is_inline)
		return 0;
	if (r->meta.k + r->meta.m != n)
		return obj_err(SPX_OBJ_INTERNAL,
			       "object written with RS(%d,%d), store has %d drives",
			       r->meta.k, r->meta.m, n);
	r->ddirs = spx_calloc((size_t)n, sizeof(char *));
	for (int i = 0; i < n; i++)
		r->ddirs[i] = spx_xprintf("%s/b/%s/o/%s/%s", s->drives[i], bucket,
					  enc, r->meta.data);
	r->segoff = spx_calloc(r->meta.nsegs + 1, sizeof(uint64_t));
	for (size_t i = 0; i < r->meta.nsegs; i++)
		r->segoff[i + 1] = r->segoff[i] + r->meta.segs[i].size;
	r->buf = spx_malloc((size_t)n * (r->meta.block + 4));
	/* Open every shard file now, so that an overwrite that removes
	 * this generation cannot pull them away mid-read. XXX: an object of
	 * many parts is opened one segment at a time instead (fd limits);
	 * an overwrite during such a read fails it. */
	r->lazy = r->meta.nsegs * (size_t)n > 256;
	r->fds = spx_malloc((r->lazy ? 1 : r->meta.nsegs) * (size_t)n * sizeof(int));
	for (size_t i = 0; i < (r->lazy ? 1 : r->meta.nsegs); i++) {
		if (!r->meta.segs[i].size) {
			for (int j = 0; j < n; j++)
				r->fds[i * (size_t)n + (size_t)j] = -1;
			continue;
		}
		if (open_seg(r, i, r->fds + i * (size_t)n) < r->meta.k)
			*retry = true;
	}
	return 0;
}

int spx_obj_reader_open(struct spx_obj *s, const struct spx_obj_bucket *b,
			const char *key, struct spx_obj_reader **out)
{
	return spx_obj_reader_open_version(s, b, key, NULL, out);
}

int spx_obj_reader_open_version(struct spx_obj *s,
				const struct spx_obj_bucket *b,
				const char *key, const char *vid,
				struct spx_obj_reader **out)
{
	struct spx_obj_reader *r;
	const char *bucket;
	char enc[256];
	bool retry = false;
	int rc, errs = 0;

	*out = NULL;
	if ((rc = obj_target(b, key, vid, enc)) < 0)
		return rc;
	bucket = b->name;
	for (int attempt = 0; attempt < 5; attempt++) {
		r = spx_calloc(1, sizeof(*r));
		r->s = s;
		r->meta.inl = (struct spx_buf)SPX_BUF_INIT;
		rc = reader_try(r, bucket, enc, vid, &retry);
		/* What was opened belongs to the bucket the handle names
		 * only if that bucket is still there now that it is open. */
		if ((rc == 0 || rc == SPX_OBJ_NO_SUCH_KEY ||
		     rc == SPX_OBJ_NO_SUCH_VERSION ||
		     rc == SPX_OBJ_DELETE_MARKER) &&
		    obj_bucket_read_ok(s, b, rc == 0 ? &r->meta : NULL) < 0) {
			spx_obj_reader_close(r);
			return SPX_OBJ_NO_SUCH_BUCKET;
		}
		if (rc == SPX_OBJ_NO_SUCH_KEY) {
			spx_obj_reader_close(r);
			return obj_err(rc, "no such key '%s' in '%s'", key,
				       bucket);
		}
		if (rc < 0 || !retry) {
			if (rc < 0) {
				spx_obj_reader_close(r);
				return rc;
			}
			*out = r;
			return 0;
		}
		/* Fewer than k shards: an overwrite or a version's removal
		 * took this generation between our metadata read and the
		 * opens. Read again. */
		errs = r->open_errno;
		spx_obj_reader_close(r);
	}
	/* Still too few: gone, unless an open failed otherwise. */
	return errs ? obj_err(SPX_OBJ_INTERNAL,
			      "'%s': too few shard files open: %s", key,
			      strerror(errs))
		    : obj_err(SPX_OBJ_LOST, "'%s': too few shard files to read",
			      key);
}

/* obj_block_read with the block into p and its CRC into t (4 bytes),
 * which need not follow it. */
static int block_read_split(int fd, const struct spx_obj_stripe *st,
			    unsigned char *p, unsigned char *t)
{
	size_t want = st->bl + 4, got = 0;
	uint32_t crc;

	if (fd < 0)
		return OBJ_BLOCK_MISSING;
	while (got < want) {
		struct iovec v[2];
		int nv = 0;
		ssize_t n;

		if (got < st->bl)
			v[nv++] = (struct iovec){ p + got, st->bl - got };
		v[nv++] = got < st->bl ? (struct iovec){ t, 4 }
				       : (struct iovec){ t + (got - st->bl),
							 want - got };
		n = preadv(fd, v, nv, (off_t)(st->foff + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return OBJ_BLOCK_ERROR;
		if (!n)
			return OBJ_BLOCK_MISSING;
		got += (size_t)n;
	}
	crc = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
	      (uint32_t)t[3] << 24;
	return spx_crc32c(p, st->bl) == crc ? OBJ_BLOCK_OK : OBJ_BLOCK_CORRUPT;
}

int obj_block_read(int fd, const struct spx_obj_stripe *st, unsigned char *p)
{
	return block_read_split(fd, st, p, p + st->bl);
}

/* The shard files of segment seg (opened now if the reader is lazy). */
static int seg_fds(struct spx_obj_reader *r, size_t seg, int **fds)
{
	const struct spx_obj_meta *m = &r->meta;
	int n = m->k + m->m;

	if (r->lazy && r->lazyseg != seg) {
		r->cached = false;
		close_fds(r->fds, (size_t)n);
		r->open_errno = 0;
		if (open_seg(r, seg, r->fds) < m->k)
			return r->open_errno
				       ? obj_err(SPX_OBJ_INTERNAL,
						 "'%s': segment %zu cannot be "
						 "opened: %s",
						 m->key, seg,
						 strerror(r->open_errno))
				       : obj_err(SPX_OBJ_LOST,
						 "'%s': segment %zu has lost "
						 "more than %d shard files",
						 m->key, seg, m->m);
		r->lazyseg = seg;
	}
	*fds = r->fds + (r->lazy ? 0 : seg * (size_t)n);
	return 0;
}

/* Bring stripe si of segment seg, decoded, into r->buf. */
static int load_stripe(struct spx_obj_reader *r, size_t seg, uint64_t si)
{
	struct spx_obj *s = r->s;
	const struct spx_obj_meta *m = &r->meta;
	int n = m->k + m->m, good = 0, err = 0, *fds, rc;
	unsigned char *sh[32];
	bool ok[32];

	if (r->cached && r->cseg == seg && r->cstripe == si)
		return 0;
	r->cached = false;
	if ((rc = seg_fds(r, seg, &fds)) < 0)
		return rc;
	spx_obj_stripe_at(m->segs[seg].size, m->k, m->block, si, &r->cst);
	for (int i = 0; i < n; i++) {
		sh[i] = r->buf + (size_t)i * (m->block + 4);
		ok[i] = false;
	}
	/* Data blocks first; parity only as far as needed. */
	for (int i = 0; i < n && good < m->k; i++) {
		int b = obj_block_read(fds[i], &r->cst, sh[i]);

		ok[i] = b == OBJ_BLOCK_OK;
		good += ok[i];
		if (b == OBJ_BLOCK_ERROR)
			err = errno;
	}
	/* Too few: lost when what failed is missing or corrupt; a read
	 * that failed may pass, as may a shard file that did not open for
	 * a reason other than its absence. */
	if (good < m->k && !err)
		err = r->open_errno;
	if (good < m->k && err)
		return obj_err(SPX_OBJ_INTERNAL,
			       "'%s': stripe %llu cannot be read: %s", m->key,
			       (unsigned long long)si, strerror(err));
	if (good < m->k)
		return obj_err(SPX_OBJ_LOST,
			       "'%s': stripe %llu has lost more than %d blocks",
			       m->key, (unsigned long long)si, m->m);
	if (spx_ec_decode(&s->ec, r->cst.bl, sh, ok) < 0)
		return SPX_OBJ_INTERNAL;
	r->cached = true;
	r->cseg = seg;
	r->cstripe = si;
	return 0;
}

int spx_obj_read(struct spx_obj_reader *r, uint64_t off, void *p, size_t len,
		 size_t *got)
{
	const struct spx_obj_meta *m = &r->meta;
	unsigned char *o = p;
	size_t seg = 0;

	*got = 0;
	if (off >= m->size || !len)
		return 0;
	if (len > m->size - off)
		len = (size_t)(m->size - off);
	if (m->is_inline) {
		memcpy(p, m->inl.p + off, len);
		*got = len;
		return 0;
	}
	while (len) {
		uint64_t sw = (uint64_t)m->k * m->block, rel, si, x;
		int rc;

		while (seg < m->nsegs && r->segoff[seg + 1] <= off)
			seg++;
		if (seg == m->nsegs)
			break;
		rel = off - r->segoff[seg];
		si = rel / sw;
		/* A whole block the caller has room for: read it straight
		 * into the caller's buffer, one copy fewer (its CRC beside
		 * it, or apart when the block fills what is left, as a whole
		 * object read into a buffer of its size does). A block that
		 * fails its CRC is left to load_stripe, which reconstructs
		 * it. */
		if (!(r->cached && r->cseg == seg && r->cstripe == si)) {
			struct spx_obj_stripe st;
			int *fds;

			spx_obj_stripe_at(m->segs[seg].size, m->k, m->block, si,
					  &st);
			x = rel - st.off;
			if (x % st.bl == 0 &&
			    (len >= st.bl + 4 ||
			     (len >= st.bl && st.len - x >= st.bl))) {
				/* Block b is at the same offset in shard b. */
				size_t b = (size_t)(x / st.bl), take = st.bl;
				unsigned char t[4];

				if ((rc = seg_fds(r, seg, &fds)) < 0)
					return rc;
				if (take > st.len - x)
					take = (size_t)(st.len - x);
				if (block_read_split(fds[b], &st, o,
						     len >= st.bl + 4 ? o + st.bl
								      : t) ==
				    OBJ_BLOCK_OK) {
					o += take;
					off += take;
					len -= take;
					*got += take;
					continue;
				}
			}
		}
		if ((rc = load_stripe(r, seg, si)) < 0)
			return rc;
		/* Byte x of a stripe is in block x / bl at x % bl. */
		x = rel - r->cst.off;
		while (len && x < r->cst.len) {
			size_t b = (size_t)(x / r->cst.bl), at = (size_t)(x % r->cst.bl);
			size_t take = r->cst.bl - at;

			if (take > len)
				take = len;
			if (take > r->cst.len - x)
				take = (size_t)(r->cst.len - x);
			memcpy(o, r->buf + b * (m->block + 4) + at, take);
			o += take;
			off += take;
			x += take;
			len -= take;
			*got += take;
		}
	}
	return 0;
}

/* A copy of an object with a COMPOSITE checksum: start that algorithm
 * (1), or nothing to do (0), or -1. */
static int copy_ck_begin(const struct spx_obj_meta *wm, struct spx_cksum *c)
{
	const char *t = spx_kv_get(&wm->checksums, "type");
	enum spx_cksum_algo a;

	if (!t || strcmp(t, "COMPOSITE"))
		return 0;
	for (size_t i = 0; i < wm->checksums.n; i++)
		if (strcmp(wm->checksums.v[i].k, "type") &&
		    spx_cksum_from_name(wm->checksums.v[i].k, &a) == 0)
			return spx_cksum_init(c, a) < 0
				       ? obj_err(SPX_OBJ_INTERNAL, "checksum")
				       : 1;
	return 0;
}

/* ... and its value over the whole copy, FULL_OBJECT. */
static int copy_ck_end(struct spx_obj_meta *wm, struct spx_cksum *c)
{
	unsigned char d[SPX_CKSUM_MAX];
	struct spx_buf v = SPX_BUF_INIT;
	size_t n = 0;

	if (spx_cksum_final(c, d, &n) < 0)
		return obj_err(SPX_OBJ_INTERNAL, "checksum");
	spx_base64_encode(d, n, &v);
	spx_kv_free(&wm->checksums);
	spx_kv_add(&wm->checksums,
		   spx_cksum_header(c->algo) + strlen("x-amz-checksum-"), v.p);
	spx_kv_add(&wm->checksums, "type", "FULL_OBJECT");
	spx_buf_release(&v);
	return 0;
}

int spx_obj_copy(struct spx_obj *s, const struct spx_obj_bucket *sbucket,
		 const char *skey, const char *svid,
		 const struct spx_obj_bucket *dbucket, const char *dkey,
		 const struct spx_obj_meta *in, struct spx_obj_meta *out)
{
	struct spx_obj_reader *r = NULL;
	struct spx_obj_writer *w = NULL;
	const struct spx_obj_meta *sm;
	struct spx_obj_meta *wm;
	size_t bufsz = 1u << 20, got;
	unsigned char *buf = NULL;
	uint64_t off = 0;
	struct spx_cksum ck;
	bool ck_on = false;
	int rc;

	if ((rc = spx_obj_reader_open_version(s, sbucket, skey, svid, &r)) < 0)
		return rc;
	sm = spx_obj_reader_meta(r);
	if ((rc = spx_obj_writer_begin(s, dbucket, dkey, in ? in : sm, &w)) < 0)
		goto out;
	wm = spx_obj_writer_meta(w);
	if (in) {
		spx_kv_free(&wm->checksums);
		kv_copy(&wm->checksums, &sm->checksums);
	}
	/* The copy is one piece: a source's COMPOSITE checksum (of its
	 * parts) becomes the same algorithm's over the whole copy. */
	if ((rc = copy_ck_begin(wm, &ck)) < 0)
		goto out;
	ck_on = rc == 1;
	buf = spx_malloc(bufsz);
	while (off < sm->size) {
		if ((rc = spx_obj_read(r, off, buf, bufsz, &got)) < 0)
			goto out;
		if (!got) {
			rc = obj_err(SPX_OBJ_INTERNAL, "short read of '%s'", skey);
			goto out;
		}
		if ((rc = spx_obj_writer_write(w, buf, got)) < 0)
			goto out;
		if (ck_on)
			spx_cksum_update(&ck, buf, got);
		off += got;
	}
	if (ck_on && (rc = copy_ck_end(wm, &ck)) < 0)
		goto out;
	rc = spx_obj_writer_commit(w, NULL, out);
	w = NULL;
out:
	if (ck_on)
		spx_cksum_release(&ck);
	spx_obj_writer_abort(w);
	spx_obj_reader_close(r);
	free(buf);
	return rc;
}
