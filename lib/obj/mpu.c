/* mpu.c: multipart uploads. A part is a segment written into the
 * upload's directory; Complete hard-links the parts' shard files into a
 * new data directory of the object and switches its metadata, so no data
 * is copied. */
#include "spx.h"

#include "checksum.h"

#include <dirent.h>
#include <openssl/evp.h>

#include "file.h"
#include "hex.h"
#include "obj/index.h"

static bool id_ok(const char *id)
{
	return id && strlen(id) == SPX_OBJ_UPLOAD_ID_SIZE - 1 &&
	       spx_is_lower_hex(id, SPX_OBJ_UPLOAD_ID_SIZE - 1);
}

/* The upload's lock: a part's commit holds it while it replaces the part,
 * and Complete and Abort hold it (inside the key's lock) from the moment
 * they read the parts until the upload is gone, so Complete sees one
 * consistent set of parts and no part is replaced under it. */
static int upload_lock(struct spx_obj *s, const char *bucket, const char *id,
		       int *lk)
{
	char name[SPX_OBJ_UPLOAD_ID_SIZE + 2];

	snprintf(name, sizeof(name), "\x01%s", id);
	return obj_lock(s, bucket, name, true, lk);
}

static char **udirs(struct spx_obj *s, const char *bucket, const char *id)
{
	char **d = spx_calloc((size_t)s->n, sizeof(char *));

	for (int i = 0; i < s->n; i++)
		d[i] = obj_udir(s, i, bucket, id);
	return d;
}

/* The upload's info, checked against key, in the bucket of handle b
 * (checked after the read; under a lock that holds the bucket, that
 * check holds until the lock is dropped). */
static int upload_read(struct spx_obj *s, const char *bucket,
		       const char *key, const char *id, struct spx_obj_meta *m)
{
	char **d;
	int rc;

	memset(m, 0, sizeof(*m));
	m->inl = (struct spx_buf)SPX_BUF_INIT;
	if (!id_ok(id))
		return SPX_OBJ_NO_SUCH_UPLOAD;
	d = udirs(s, bucket, id);
	rc = obj_get_meta(s, d, "info", m, SPX_OBJ_NO_SUCH_UPLOAD);
	obj_dirs_free(d, s->n);
	if (!rc && key && strcmp(m->key, key)) {
		spx_obj_meta_release(m);
		rc = SPX_OBJ_NO_SUCH_UPLOAD;
	}
	return rc;
}

static int upload_get(struct spx_obj *s, const struct spx_obj_bucket *b,
		      const char *key, const char *id, struct spx_obj_meta *m)
{
	int rc = obj_bucket_name(b);

	if (rc < 0) {
		memset(m, 0, sizeof(*m));
		m->inl = (struct spx_buf)SPX_BUF_INIT;
		return rc;
	}
	rc = upload_read(s, b->name, key, id, m);
	if ((rc == 0 || rc == SPX_OBJ_NO_SUCH_UPLOAD) &&
	    obj_bucket_current(s, b, NULL) < 0) {
		spx_obj_meta_release(m);
		return SPX_OBJ_NO_SUCH_BUCKET;
	}
	if (rc == SPX_OBJ_NO_SUCH_UPLOAD)
		return obj_err(rc, "no such upload '%s'", id);
	return rc;
}

int spx_obj_mpu_create(struct spx_obj *s, const struct spx_obj_bucket *bk,
		       const char *key, const struct spx_obj_meta *in,
		       char id[SPX_OBJ_UPLOAD_ID_SIZE])
{
	struct spx_obj_writer *w;
	struct spx_buf b = SPX_BUF_INIT;
	char **d;
	int rc, lk = -1;

	/* A writer validates and copies the metadata; it writes nothing. */
	if ((rc = obj_writer_new(s, bk, key, in, OBJ_W_PART, &w)) < 0)
		return rc;
	if ((rc = obj_randhex(id, 16)) < 0)
		goto out;
	w->meta.mtime_ms = obj_now_ms();
	spx_obj_meta_encode(&w->meta, &b);
	/* Into the bucket the handle names, which cannot go while the key's
	 * lock holds it. */
	if ((rc = obj_lock(s, bk->name, key, true, &lk)) < 0 ||
	    (rc = obj_bucket_current(s, bk, NULL)) < 0)
		goto out;
	d = udirs(s, bk->name, id);
	rc = obj_put_all(s, d, "info", &b);
	obj_dirs_free(d, s->n);
out:
	obj_unlock(lk);
	spx_buf_release(&b);
	obj_writer_free(w, false);
	return rc;
}

int spx_obj_part_begin(struct spx_obj *s, const struct spx_obj_bucket *b,
		       const char *key, const char *id, int num,
		       struct spx_obj_writer **out)
{
	struct spx_obj_meta info;
	struct spx_obj_writer *w;
	const char *bucket = b ? b->name : NULL;
	char rnd[9];
	int rc;

	*out = NULL;
	if (num < 1 || num > SPX_OBJ_MAX_PARTS)
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "part number %d: must be 1 to %d", num,
			       SPX_OBJ_MAX_PARTS);
	if ((rc = upload_get(s, b, key, id, &info)) < 0)
		return rc;
	spx_obj_meta_release(&info);
	if ((rc = obj_writer_new(s, b, key, NULL, OBJ_W_PART, &w)) < 0)
		return rc;
	if ((rc = obj_randhex(rnd, 4)) < 0) {
		obj_writer_free(w, false);
		return rc;
	}
	snprintf(w->upload, sizeof(w->upload), "%s", id);
	w->partnum = num;
	snprintf(w->segname, sizeof(w->segname), "p%05d-%s", num, rnd);
	w->dirs = udirs(s, bucket, id);
	*out = w;
	return 0;
}

static void unlink_all(struct spx_obj *s, char **dirs, const char *name)
{
	for (int i = 0; i < s->n; i++) {
		char *p = spx_xprintf("%s/%s", dirs[i], name);

		unlink(p);
		free(p);
	}
}

int obj_part_commit(struct spx_obj_writer *w, struct spx_obj_meta *out)
{
	struct spx_obj *s = w->s;
	struct spx_obj_meta old = SPX_OBJ_META_INIT, info;
	struct spx_buf b = SPX_BUF_INIT;
	char pname[8];
	bool had = false;
	int rc, lk;

	snprintf(pname, sizeof(pname), "p%05d", w->partnum);
	if ((rc = upload_lock(s, w->bucket, w->upload, &lk)) < 0)
		return rc;
	if ((rc = upload_get(s, &w->b, w->key, w->upload, &info)) < 0)
		goto out;
	spx_obj_meta_release(&info);
	if (obj_get_meta(s, w->dirs, pname, &old, SPX_OBJ_INVALID_PART) == 0)
		had = true;
	spx_error_clear();
	w->meta.nparts = (size_t)w->partnum;
	w->meta.mtime_ms = obj_now_ms();
	if (!w->meta.nsegs) {
		/* An empty part: no shard files. */
		w->meta.segs = spx_calloc(1, sizeof(*w->meta.segs));
		w->meta.nsegs = 1;
		snprintf(w->meta.segs[0].name, sizeof(w->meta.segs[0].name),
			 "%s", w->segname);
		memcpy(w->meta.segs[0].md5, w->meta.etag, 33);
	}
	spx_obj_meta_encode(&w->meta, &b);
	rc = obj_put_all(s, w->dirs, pname, &b);
	/* The replaced part's shards go while the lock is held: a Complete
	 * that read the old part has linked them already, one that reads
	 * after sees the new part. */
	if (!rc && had && old.nsegs && strcmp(old.segs[0].name, w->segname))
		unlink_all(s, w->dirs, old.segs[0].name);
out:
	obj_unlock(lk);
	if (!rc && out) {
		out->size = w->meta.size;
		memcpy(out->etag, w->meta.etag, sizeof(out->etag));
		out->mtime_ms = w->meta.mtime_ms;
	}
	spx_obj_meta_release(&old);
	spx_buf_release(&b);
	return rc;
}

int spx_obj_mpu_info(struct spx_obj *s, const struct spx_obj_bucket *b,
		     const char *key, const char *id, struct spx_obj_meta *out)
{
	return upload_get(s, b, key, id, out);
}

/* The object checksum an upload asked for, folded in part by part. */
struct mpu_ck {
	enum spx_cksum_algo algo;
	bool on, full;
	const char *name;	  /* "crc32": the parts' checksum key */
	unsigned char acc[SPX_CKSUM_MAX]; /* FULL_OBJECT: CRC so far */
	struct spx_buf digests;	  /* COMPOSITE: raw part digests */
};

static int mpu_ck_init(struct mpu_ck *c, const struct spx_obj_meta *info)
{
	const char *a = spx_kv_get(&info->checksums, "algorithm");
	const char *t = spx_kv_get(&info->checksums, "type");

	memset(c, 0, sizeof(*c));
	spx_buf_init(&c->digests, 0);
	if (!a)
		return 0;
	if (spx_cksum_from_name(a, &c->algo) < 0)
		return obj_err(SPX_OBJ_INTERNAL, "upload has algorithm '%s'", a);
	/* Checksums are keyed by the header's suffix: "crc32". */
	c->name = spx_cksum_header(c->algo) + strlen("x-amz-checksum-");
	c->on = true;
	c->full = t && !strcmp(t, "FULL_OBJECT");
	return 0;
}

/* Fold part num (size bytes; its metadata pm) into c; given, the
 * checksum the client named for it, must be the part's own. */
static int mpu_ck_part(struct mpu_ck *c, int num, const struct spx_obj_meta *pm,
		       const char *given)
{
	unsigned char raw[SPX_CKSUM_MAX];
	const char *have;
	size_t len = 0;

	/* An upload made without an algorithm has no object checksum, and
	 * whatever checksums its parts carry are not folded in. */
	if (!c->on)
		return 0;
	have = spx_kv_get(&pm->checksums, c->name);
	if (!have || spx_base64_decode(have, strlen(have), raw, sizeof(raw),
				       &len) < 0 ||
	    len != spx_cksum_size(c->algo))
		return obj_err(SPX_OBJ_INVALID_PART,
			       "part %d has no %s checksum", num, c->name);
	if (given && strcmp(given, have))
		return obj_err(SPX_OBJ_INVALID_PART,
			       "part %d: another %s checksum", num, c->name);
	if (c->full)
		return spx_cksum_combine(c->algo, c->acc, raw, pm->size) < 0
			       ? obj_err(SPX_OBJ_INTERNAL, "checksum combine")
			       : 0;
	spx_buf_add(&c->digests, raw, len);
	return 0;
}

/* The object's checksums: the algorithm's value and the type. */
static int mpu_ck_final(struct mpu_ck *c, size_t nparts,
			struct spx_kvlist *out)
{
	struct spx_buf v = SPX_BUF_INIT;
	int rc = 0;

	spx_kv_free(out);
	if (!c->on)
		return 0;
	if (c->full)
		spx_base64_encode(c->acc, spx_cksum_size(c->algo), &v);
	else if (spx_cksum_composite(c->algo, (const unsigned char *)c->digests.p,
				     nparts, &v) < 0)
		rc = obj_err(SPX_OBJ_INTERNAL, "composite checksum");
	if (!rc) {
		spx_kv_add(out, c->name, v.p);
		spx_kv_add(out, "type", c->full ? "FULL_OBJECT" : "COMPOSITE");
	}
	spx_buf_release(&v);
	return rc;
}

/* The object checksum the client sent with Complete, if any, must be the
 * one computed (a COMPOSITE one compared without its "-N"). */
static int mpu_ck_check(const struct mpu_ck *c, const struct spx_kvlist *ck,
			const char *want)
{
	const char *have = c->on ? spx_kv_get(ck, c->name) : NULL;
	size_t hl, wl;

	if (!want)
		return 0;
	if (!have)
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "the upload has no checksum to compare with");
	hl = c->full ? strlen(have) : strcspn(have, "-");
	wl = c->full ? strlen(want) : strcspn(want, "-");
	if (hl != wl || memcmp(have, want, hl))
		return obj_err(SPX_OBJ_BAD_DIGEST,
			       "the %s of the object is %s, not %s", c->name,
			       have, want);
	return 0;
}

static int part_cmp(const void *a, const void *b)
{
	return ((const struct spx_obj_part *)a)->num -
	       ((const struct spx_obj_part *)b)->num;
}

int spx_obj_mpu_parts(struct spx_obj *s, const struct spx_obj_bucket *b,
		      const char *key, const char *id, int marker, size_t max,
		      struct spx_obj_part **out, size_t *n, bool *truncated)
{
	const char *bucket = b ? b->name : NULL;
	struct spx_obj_meta info;
	struct spx_obj_part *v = NULL;
	size_t nv = 0, cap = 0;
	struct dirent *e;
	char **d;
	DIR *dp;
	int rc;

	*out = NULL;
	*n = 0;
	*truncated = false;
	if ((rc = upload_get(s, b, key, id, &info)) < 0)
		return rc;
	spx_obj_meta_release(&info);
	d = udirs(s, bucket, id);
	dp = opendir(d[0]);
	if (!dp) {
		rc = obj_errno("cannot open '%s'", d[0]);
		obj_dirs_free(d, s->n);
		return rc;
	}
	while ((e = readdir(dp))) {
		struct spx_obj_meta m;
		int num;

		if (strlen(e->d_name) != 6 || e->d_name[0] != 'p')
			continue;
		num = (int)strtol(e->d_name + 1, NULL, 10);
		if (num <= marker || num < 1 || num > SPX_OBJ_MAX_PARTS)
			continue;
		if (obj_get_meta(s, d, e->d_name, &m, SPX_OBJ_INVALID_PART) < 0) {
			spx_error_clear();
			continue;
		}
		if (nv == cap) {
			cap = cap ? 2 * cap : 64;
			v = spx_realloc(v, cap * sizeof(*v));
		}
		v[nv].num = num;
		v[nv].size = m.size;
		memcpy(v[nv].etag, m.etag, sizeof(m.etag));
		v[nv].mtime_ms = m.mtime_ms;
		v[nv].cksum_name[0] = v[nv].cksum[0] = '\0';
		if (m.checksums.n) {
			snprintf(v[nv].cksum_name, sizeof(v[nv].cksum_name),
				 "%s", m.checksums.v[0].k);
			snprintf(v[nv].cksum, sizeof(v[nv].cksum), "%s",
				 m.checksums.v[0].v);
		}
		nv++;
		spx_obj_meta_release(&m);
	}
	closedir(dp);
	obj_dirs_free(d, s->n);
	if (nv)
		qsort(v, nv, sizeof(*v), part_cmp);
	if (!max)
		max = 1000;
	if (nv > max) {
		nv = max;
		*truncated = true;
	}
	*out = v;
	*n = nv;
	return 0;
}

static void etag_strip(const char *e, char *out, size_t outsz)
{
	size_t n = strlen(e);

	if (n >= 2 && e[0] == '"' && e[n - 1] == '"') {
		e++;
		n -= 2;
	}
	snprintf(out, outsz, "%.*s", (int)n, e);
}

int spx_obj_mpu_complete(struct spx_obj *s, const struct spx_obj_bucket *b,
			 const char *key, const char *id,
			 const struct spx_obj_complete_part *parts, size_t n,
			 const char *want_ck, struct spx_obj_meta *out)
{
	return spx_obj_mpu_complete_if(s, b, key, id, parts, n, want_ck, NULL,
				       NULL, out);
}

int spx_obj_mpu_complete_if(struct spx_obj *s, const struct spx_obj_bucket *b,
			    const char *key, const char *id,
			    const struct spx_obj_complete_part *parts,
			    size_t n, const char *want_ck,
			    spx_obj_cond_fn cond, void *cond_ctx,
			    struct spx_obj_meta *out)
{
	const char *bucket;
	struct spx_obj_meta info = SPX_OBJ_META_INIT;
	struct mpu_ck ck = { .digests = SPX_BUF_INIT };
	enum spx_obj_versioning v;
	char **ud = NULL, **kd = NULL, enc[256], rnd[17], *old[2] = { 0 };
	EVP_MD_CTX *md = NULL;
	unsigned char dig[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;
	size_t *linked = NULL;
	int rc, lk = -1, ulk = -1;

	if (out) {
		memset(out, 0, sizeof(*out));
		out->inl = (struct spx_buf)SPX_BUF_INIT;
	}
	if ((rc = obj_bucket_name(b)) < 0 || (rc = spx_obj_key_check(key)) < 0)
		return rc;
	bucket = b->name;
	if (!id_ok(id))
		return obj_err(SPX_OBJ_NO_SUCH_UPLOAD, "no such upload '%s'", id);
	if ((rc = obj_lock(s, bucket, key, true, &lk)) < 0)
		return rc;
	if ((rc = upload_lock(s, bucket, id, &ulk)) < 0)
		goto out;
	if ((rc = upload_get(s, b, key, id, &info)) < 0)
		goto out;
	/* The condition under the key's lock, before anything changes: no
	 * other writer commits between it and this one. */
	if (cond) {
		struct spx_obj_meta cur = SPX_OBJ_META_INIT;
		int st = spx_obj_stat(s, b, key, &cur);

		rc = st < 0 && st != SPX_OBJ_NO_SUCH_KEY
			     ? st
			     : cond(cond_ctx, st == 0 ? &cur : NULL);
		spx_obj_meta_release(&cur);
		if (rc < 0) {
			rc = obj_err(rc, "'%s' in '%s': precondition failed",
				     key, bucket);
			goto out;
		}
	}
	if (!n || n > SPX_OBJ_MAX_PARTS) {
		rc = obj_err(SPX_OBJ_INVALID_PART, "no parts to complete");
		goto out;
	}
	for (size_t i = 1; i < n; i++)
		if (parts[i].num <= parts[i - 1].num) {
			rc = obj_err(SPX_OBJ_INVALID_PART_ORDER,
				     "part %d after part %d", parts[i].num,
				     parts[i - 1].num);
			goto out;
		}
	if ((rc = mpu_ck_init(&ck, &info)) < 0)
		goto out;
	ud = udirs(s, bucket, id);
	md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(md, spx_md(SPX_CKSUM_MD5), NULL);
	free(info.segs);
	info.segs = spx_calloc(n, sizeof(*info.segs));
	info.nsegs = 0;
	info.size = 0;
	for (size_t i = 0; i < n; i++) {
		struct spx_obj_meta pm;
		char pname[8], want[SPX_OBJ_ETAG_SIZE];
		unsigned char raw[16];

		if (parts[i].num < 1 || parts[i].num > SPX_OBJ_MAX_PARTS) {
			rc = obj_err(SPX_OBJ_INVALID_PART, "bad part number %d",
				     parts[i].num);
			goto out;
		}
		snprintf(pname, sizeof(pname), "p%05d", parts[i].num);
		if ((rc = obj_get_meta(s, ud, pname, &pm, SPX_OBJ_INVALID_PART)) < 0) {
			if (rc == SPX_OBJ_INVALID_PART)
				obj_err(rc, "no part %d", parts[i].num);
			goto out;
		}
		etag_strip(parts[i].etag ? parts[i].etag : "", want, sizeof(want));
		if (strcmp(want, pm.etag) || pm.nsegs != 1) {
			spx_obj_meta_release(&pm);
			rc = obj_err(SPX_OBJ_INVALID_PART,
				     "part %d has another etag", parts[i].num);
			goto out;
		}
		if (i + 1 < n && pm.size < s->min_part) {
			spx_obj_meta_release(&pm);
			rc = obj_err(SPX_OBJ_ENTITY_TOO_SMALL,
				     "part %d is smaller than %llu bytes",
				     parts[i].num, (unsigned long long)s->min_part);
			goto out;
		}
		if (pm.k != s->k || pm.m != s->m || pm.block != s->block) {
			spx_obj_meta_release(&pm);
			rc = obj_err(SPX_OBJ_INTERNAL,
				     "part %d has another erasure layout",
				     parts[i].num);
			goto out;
		}
		if ((rc = mpu_ck_part(&ck, parts[i].num, &pm,
				      parts[i].checksum)) < 0) {
			spx_obj_meta_release(&pm);
			goto out;
		}
		info.segs[i] = pm.segs[0];
		if (ck.on)
			snprintf(info.segs[i].cksum, sizeof(info.segs[i].cksum),
				 "%s", spx_kv_get(&pm.checksums, ck.name));
		info.nsegs = i + 1;
		info.size += pm.size;
		for (int j = 0; j < 16; j++)
			raw[j] = (unsigned char)(spx_hexval(pm.etag[2 * j]) << 4 |
						 spx_hexval(pm.etag[2 * j + 1]));
		EVP_DigestUpdate(md, raw, 16);
		spx_obj_meta_release(&pm);
	}
	EVP_DigestFinal_ex(md, dig, &dl);
	spx_hex_encode(dig, 16, info.etag);
	snprintf(info.etag + 32, sizeof(info.etag) - 32, "-%zu", n);
	info.nparts = n;
	if ((rc = mpu_ck_final(&ck, n, &info.checksums)) < 0 ||
	    (rc = mpu_ck_check(&ck, &info.checksums, want_ck)) < 0)
		goto out;
	info.k = s->k;
	info.m = s->m;
	info.block = s->block;
	if ((rc = obj_randhex(rnd, 8)) < 0)
		goto out;
	snprintf(info.data, sizeof(info.data), "d-%s", rnd);
	spx_obj_key_encode(key, enc, sizeof(enc));
	kd = spx_calloc((size_t)s->n, sizeof(char *));
	linked = spx_calloc(n, sizeof(*linked));
	for (int i = 0; i < s->n; i++) {
		char *dd = spx_xprintf("%s/b/%s/o/%s/%s", s->drives[i], bucket,
				       enc, info.data);

		kd[i] = obj_kdir(s, i, bucket, enc);
		/* A key kept flat becomes a directory (under its lock). */
		if ((rc = obj_unflat(kd[i])) < 0) {
			free(dd);
			goto out;
		}
		if (spx_mkdirs(dd, 0755) < 0) {
			rc = obj_errno("cannot create '%s'", dd);
			free(dd);
			goto out;
		}
		for (size_t j = 0; j < n; j++) {
			char *from = spx_xprintf("%s/%s", ud[i], info.segs[j].name);
			char *to = spx_xprintf("%s/%s", dd, info.segs[j].name);

			/* A shard lost on this drive stays lost (heal rebuilds
			 * it), as long as each segment keeps k of them. */
			if (link(from, to) == 0 || errno == EEXIST)
				linked[j]++;
			else if (errno != ENOENT)
				rc = obj_errno("cannot link '%s'", from);
			free(from);
			free(to);
			if (rc)
				break;
		}
		if (!rc && spx_fsync_dir(dd) < 0)
			rc = SPX_OBJ_INTERNAL;
		free(dd);
		if (rc)
			goto out;
	}
	/* Never acknowledge an object whose data is not all there. */
	for (size_t j = 0; j < n; j++)
		if (info.segs[j].size && linked[j] < (size_t)s->k) {
			rc = obj_err(SPX_OBJ_INTERNAL,
				     "part %d has %zu of the %d shards it needs",
				     parts[j].num, linked[j], s->k);
			goto out;
		}
	if ((rc = obj_bucket_current(s, b, &v)) < 0)
		goto out;
	info.is_inline = false;
	info.delete_marker = false;
	if ((rc = obj_install(s, bucket, b->inc, enc, v, &info, old)) < 0)
		goto out;
	obj_remove_data(s, bucket, enc, old[0]);
	obj_remove_data(s, bucket, enc, old[1]);
	/* The upload is done: drive 0's info first. */
	{
		char *p = spx_xprintf("%s/info", ud[0]);

		unlink(p);
		free(p);
	}
	for (int i = 0; i < s->n; i++)
		obj_discard(ud[i]);
	spx_error_clear();
	if (out) {
		struct spx_buf t = SPX_BUF_INIT;

		spx_obj_meta_encode(&info, &t);
		spx_obj_meta_decode(t.p, t.len, out);
		spx_buf_release(&t);
	}
out:
	if (rc && rc != SPX_OBJ_INVALID_PART && info.data[0] && kd)
		for (int i = 0; i < s->n; i++) {
			char *p = spx_xprintf("%s/%s", kd[i], info.data);

			obj_rmtree(p);
			free(p);
		}
	obj_unlock(ulk);
	obj_unlock(lk);
	if (!rc)
		obj_idx_after_note(s, b);
	free(linked);
	spx_buf_release(&ck.digests);
	EVP_MD_CTX_free(md);
	obj_dirs_free(ud, s->n);
	obj_dirs_free(kd, s->n);
	spx_obj_meta_release(&info);
	free(old[0]);
	free(old[1]);
	return rc;
}

int spx_obj_mpu_abort(struct spx_obj *s, const struct spx_obj_bucket *b,
		      const char *key, const char *id)
{
	struct spx_obj_meta info;
	const char *bucket = b ? b->name : NULL;
	char **d, *p;
	int rc, lk, ulk = -1;

	if ((rc = obj_bucket_name(b)) < 0)
		return rc;
	if (!id_ok(id))
		return obj_err(SPX_OBJ_NO_SUCH_UPLOAD, "no such upload '%s'", id);
	if ((rc = obj_lock(s, bucket, key, true, &lk)) < 0)
		return rc;
	if ((rc = upload_lock(s, bucket, id, &ulk)) < 0 ||
	    (rc = upload_get(s, b, key, id, &info)) < 0) {
		obj_unlock(ulk);
		obj_unlock(lk);
		return rc;
	}
	spx_obj_meta_release(&info);
	d = udirs(s, bucket, id);
	p = spx_xprintf("%s/info", d[0]);
	if (unlink(p) < 0)
		rc = obj_errno("cannot remove '%s'", p);
	else if (spx_fsync_dir(d[0]) < 0)
		rc = SPX_OBJ_INTERNAL;
	free(p);
	obj_unlock(ulk);
	obj_unlock(lk);
	if (!rc)
		for (int i = 0; i < s->n; i++)
			obj_discard(d[i]);
	obj_dirs_free(d, s->n);
	return rc;
}

static int upload_cmp(const void *a, const void *b)
{
	const struct spx_obj_upload *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->initiated_ms < y->initiated_ms ? -1
	       : x->initiated_ms > y->initiated_ms ? 1
						   : strcmp(x->id, y->id);
}

void spx_obj_upload_free(struct spx_obj_upload *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].key);
		spx_kv_free(&v[i].sys);
	}
	free(v);
}

int spx_obj_mpu_list(struct spx_obj *s, const struct spx_obj_bucket *b,
		     const char *prefix, struct spx_obj_upload **out,
		     size_t *n)
{
	const char *bucket = b ? b->name : NULL;
	char *ud;
	DIR *dp;
	struct dirent *e;
	size_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = obj_bucket_name(b)) < 0)
		return rc;
	ud = spx_xprintf("%s/b/%s/u", s->drives[0], bucket);
	dp = opendir(ud);
	free(ud);
	if (!dp)
		return obj_bucket_current(s, b, NULL);
	while ((e = readdir(dp))) {
		struct spx_obj_meta m;

		if (upload_read(s, bucket, NULL, e->d_name, &m) < 0)
			continue;
		if (prefix && strncmp(m.key, prefix, strlen(prefix))) {
			spx_obj_meta_release(&m);
			continue;
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			*out = spx_realloc(*out, cap * sizeof(**out));
		}
		(*out)[*n].key = spx_strdup(m.key);
		snprintf((*out)[*n].id, sizeof((*out)[*n].id), "%.32s", e->d_name);
		(*out)[*n].initiated_ms = m.mtime_ms;
		(*out)[*n].sys = m.sys;
		m.sys = (struct spx_kvlist)SPX_KVLIST_INIT;
		(*n)++;
		spx_obj_meta_release(&m);
	}
	closedir(dp);
	spx_error_clear();
	if ((rc = obj_bucket_current(s, b, NULL)) < 0) {
		spx_obj_upload_free(*out, *n);
		*out = NULL;
		*n = 0;
		return rc;
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), upload_cmp);
	return 0;
}
