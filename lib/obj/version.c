/* version.c: object versions and delete markers (the rules are in obj.h,
 * "Versions"). Everything that changes a key's versions runs under the
 * key's OFD lock and writes through obj_put_key, so each step is a
 * crash-safe rename with drive 0 as the commit point. */
#include "spx.h"

#include <dirent.h>

#include "file.h"
#include "id.h"
#include "obj/index.h"

bool spx_obj_vid_valid(const char *vid)
{
	return !vid || !strcmp(vid, "null") || spx_s3_version_id_valid(vid);
}

int obj_target(const struct spx_obj_bucket *b, const char *key,
	       const char *vid, char *enc)
{
	int rc;

	if ((rc = obj_bucket_name(b)) < 0 || (rc = spx_obj_key_check(key)) < 0)
		return rc;
	if (!spx_obj_vid_valid(vid))
		return obj_err(SPX_OBJ_INVALID_VERSION, "bad version id '%s'",
			       vid);
	spx_obj_key_encode(key, enc, 256);
	return 0;
}

const char *spx_obj_vid_name(const char *vid)
{
	return vid && *vid ? vid : "null";
}

/* "" for the null version, else vid itself. */
static const char *vid_raw(const char *vid)
{
	return strcmp(vid, "null") ? vid : "";
}

void obj_vfile(const char *vid, char out[OBJ_VFILE_SIZE])
{
	snprintf(out, OBJ_VFILE_SIZE, "v-%s", spx_obj_vid_name(vid));
}

char **obj_kdirs(struct spx_obj *s, const char *bucket, const char *enc)
{
	char **d = spx_calloc((size_t)s->n, sizeof(char *));

	for (int i = 0; i < s->n; i++)
		d[i] = obj_kdir(s, i, bucket, enc);
	return d;
}

int obj_unlink_all(struct spx_obj *s, char **dirs, const char *name)
{
	/* Drive 0 first: once its copy is gone, so is the file. */
	for (int i = 0; i < s->n; i++) {
		char *p = obj_key_file(dirs[i], name);
		bool flat = !strcmp(p, dirs[i]);
		int e = unlink(p) < 0 ? errno : 0;

		if (e == ENOTDIR) /* flat, and not "meta": none */
			e = ENOENT;
		if (i == 0 && e && e != ENOENT) {
			errno = e;
			e = obj_errno("cannot remove '%s'", p);
			free(p);
			return e;
		}
		free(p);
		/* What went from drive 0 is gone once its directory is
		 * synced: a flat key's file is an entry of the bucket's o/. */
		if (i == 0 && !e &&
		    (flat ? spx_sync_parent(dirs[0]) : spx_fsync_dir(dirs[0])) < 0)
			return SPX_OBJ_INTERNAL;
	}
	spx_error_clear();
	return 0;
}

void obj_remove_data(struct spx_obj *s, const char *bucket, const char *enc,
		     const char *data)
{
	if (!data || !data[0])
		return;
	for (int i = 0; i < s->n; i++) {
		char *p = spx_xprintf("%s/b/%s/o/%s/%s", s->drives[i], bucket,
				      enc, data);

		obj_rmtree(p);
		free(p);
	}
	spx_error_clear();
}

int obj_install(struct spx_obj *s, const char *bucket, const char *inc,
		const char *enc, enum spx_obj_versioning v,
		struct spx_obj_meta *m, char *old[2])
{
	struct spx_obj_meta cur = SPX_OBJ_META_INIT, vn = SPX_OBJ_META_INIT;
	struct spx_buf b = SPX_BUF_INIT;
	char **d = obj_kdirs(s, bucket, enc), name[OBJ_VFILE_SIZE];
	bool have, drop_vnull = false;
	int rc, log = -1;

	old[0] = old[1] = NULL;
	/* Absent, or corrupt on every drive: start over. */
	have = obj_get_meta(s, d, "meta", &cur, SPX_OBJ_NO_SUCH_KEY) == 0;
	spx_error_clear();
	m->vid[0] = '\0';
	if (v == SPX_OBJ_VERSIONING_ENABLED &&
	    spx_s3_version_id(m->vid, sizeof(m->vid)) < 0) {
		rc = SPX_OBJ_INTERNAL;
		goto out;
	}
	m->gen = have ? cur.gen + 1 : 1;
	if (have && !cur.vid[0] && !m->vid[0]) {
		/* The null version is replaced. */
		if (cur.data[0] && strcmp(cur.data, m->data))
			old[0] = spx_strdup(cur.data);
	} else if (have) {
		/* The current version becomes noncurrent, first. */
		obj_vfile(cur.vid, name);
		spx_obj_meta_encode(&cur, &b);
		if ((rc = obj_put_key(s, d, name, &b, false)) < 0)
			goto out;
	}
	if (!m->vid[0] && v != SPX_OBJ_UNVERSIONED &&
	    obj_get_meta(s, d, "v-null", &vn, SPX_OBJ_NO_SUCH_VERSION) == 0) {
		/* A noncurrent null version is replaced too. */
		drop_vnull = true;
		if (vn.data[0] && strcmp(vn.data, m->data))
			old[1] = spx_strdup(vn.data);
	}
	spx_error_clear();
	/* Into the index first: the key has a version, not yet described
	 * (index.c). */
	if (!m->key) {
		rc = obj_err(SPX_OBJ_INTERNAL, "a version without a key");
		goto out;
	}
	if ((rc = obj_idx_note(s, bucket, &log, m->key, '+')) < 0)
		goto out;
	m->mtime_ms = obj_now_ms();
	snprintf(m->inc, sizeof(m->inc), "%s", inc);
	spx_obj_meta_encode(m, &b);
	rc = obj_put_key(s, d, "meta", &b, m->is_inline);
	/* Then described: a listing need not read it. */
	if (!rc && obj_idx_note_meta(s, bucket, &log, m->key, m) < 0)
		spx_error_clear();
	/* A crash before this unlink leaves a v-null that repeats meta's
	 * version id: ignored (meta wins). */
	if (!rc && drop_vnull)
		obj_unlink_all(s, d, "v-null");
out:
	obj_idx_note_end(&log);
	if (rc < 0) {
		free(old[0]);
		free(old[1]);
		old[0] = old[1] = NULL;
	}
	spx_obj_meta_release(&cur);
	spx_obj_meta_release(&vn);
	spx_buf_release(&b);
	obj_dirs_free(d, s->n);
	return rc;
}

static int gen_desc(const void *a, const void *b)
{
	const struct spx_obj_meta *x = a, *y = b;

	return x->gen < y->gen ? 1 : x->gen > y->gen ? -1 : 0;
}

void obj_versions_free(struct spx_obj_meta *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		spx_obj_meta_release(&v[i]);
	free(v);
}

int obj_versions_read(struct spx_obj *s, const char *bucket, const char *enc,
		      struct spx_obj_meta **out, size_t *n, bool *current)
{
	char **d = obj_kdirs(s, bucket, enc), name[OBJ_VFILE_SIZE];
	struct spx_obj_meta *v = NULL;
	size_t cap = 4;
	struct dirent *e;
	DIR *dp;
	int rc;

	*out = NULL;
	*n = 0;
	*current = false;
	v = spx_calloc(cap, sizeof(*v));
	rc = obj_get_meta(s, d, "meta", &v[0], SPX_OBJ_NO_SUCH_KEY);
	if (rc == 0) {
		*current = true;
		*n = 1;
	} else if (rc != SPX_OBJ_NO_SUCH_KEY) {
		goto out;
	}
	rc = 0;
	spx_error_clear();
	dp = opendir(d[0]);
	if (!dp)
		goto out;
	while ((e = readdir(dp))) {
		struct spx_obj_meta m;

		if (strncmp(e->d_name, "v-", 2))
			continue;
		if (obj_get_meta(s, d, e->d_name, &m, SPX_OBJ_NO_SUCH_VERSION) < 0) {
			spx_error_clear();
			continue; /* removed meanwhile, or damaged: heal */
		}
		obj_vfile(m.vid, name);
		/* A leftover copy of the current version, or a misnamed
		 * file, is not a version. */
		if (strcmp(name, e->d_name) ||
		    (*current && !strcmp(m.vid, v[0].vid))) {
			spx_obj_meta_release(&m);
			continue;
		}
		if (*n == cap) {
			cap *= 2;
			v = spx_realloc(v, cap * sizeof(*v));
		}
		v[(*n)++] = m;
	}
	closedir(dp);
	if (*n > 1)
		qsort(v + *current, *n - *current, sizeof(*v), gen_desc);
out:
	obj_dirs_free(d, s->n);
	if (rc < 0) {
		obj_versions_free(v, *n);
		*n = 0;
		return rc;
	}
	*out = v;
	return 0;
}

int obj_version_get(struct spx_obj *s, const char *bucket, const char *enc,
		    const char *vid, struct spx_obj_meta *m,
		    char name[OBJ_VFILE_SIZE])
{
	char **d = obj_kdirs(s, bucket, enc);
	int rc = SPX_OBJ_NO_SUCH_VERSION;

	snprintf(name, OBJ_VFILE_SIZE, "meta");
	if (!vid) {
		rc = obj_get_meta_cached(s, d, "meta", m, SPX_OBJ_NO_SUCH_KEY);
		goto out;
	}
	/* meta first: a version moves from meta to a v- file (a newer
	 * write) and back (the newer deleted), each time written at the new
	 * place before it leaves the old; three rounds see it settle. */
	for (int round = 0; round < 3; round++) {
		rc = obj_get_meta(s, d, "meta", m, SPX_OBJ_NO_SUCH_VERSION);
		if (rc == 0 && !strcmp(m->vid, vid_raw(vid)))
			goto out;
		if (rc == 0)
			spx_obj_meta_release(m);
		else if (rc != SPX_OBJ_NO_SUCH_VERSION)
			goto out;
		obj_vfile(vid_raw(vid), name);
		rc = obj_get_meta(s, d, name, m, SPX_OBJ_NO_SUCH_VERSION);
		if (rc != SPX_OBJ_NO_SUCH_VERSION)
			goto out;
		snprintf(name, OBJ_VFILE_SIZE, "meta");
	}
out:
	obj_dirs_free(d, s->n);
	if (rc == SPX_OBJ_NO_SUCH_VERSION)
		return obj_err(rc, "no version '%s'", vid);
	return rc;
}

int spx_obj_stat_version(struct spx_obj *s, const struct spx_obj_bucket *b,
			 const char *key, const char *vid,
			 struct spx_obj_meta *out)
{
	char enc[256], name[OBJ_VFILE_SIZE];
	int rc;

	memset(out, 0, sizeof(*out));
	out->inl = (struct spx_buf)SPX_BUF_INIT;
	if ((rc = obj_target(b, key, vid, enc)) < 0)
		return rc;
	rc = obj_version_get(s, b->name, enc, vid, out, name);
	/* Read, then check that it was this bucket's. */
	if ((rc == 0 || rc == SPX_OBJ_NO_SUCH_KEY ||
	     rc == SPX_OBJ_NO_SUCH_VERSION) &&
	    obj_bucket_read_ok(s, b, rc == 0 ? out : NULL) < 0) {
		spx_obj_meta_release(out);
		return SPX_OBJ_NO_SUCH_BUCKET;
	}
	if (rc == SPX_OBJ_NO_SUCH_KEY)
		return obj_err(rc, "no such key '%s' in '%s'", key, b->name);
	return rc;
}

int spx_obj_stat(struct spx_obj *s, const struct spx_obj_bucket *b,
		 const char *key, struct spx_obj_meta *out)
{
	int rc = spx_obj_stat_version(s, b, key, NULL, out);

	if (rc == 0 && out->delete_marker) {
		spx_obj_meta_release(out);
		return obj_err(SPX_OBJ_NO_SUCH_KEY,
			       "'%s' in '%s' is deleted (a delete marker)", key,
			       b->name);
	}
	return rc;
}

/* The key directory goes when nothing is left in it. */
static void rmdir_all(struct spx_obj *s, char **d)
{
	for (int i = 0; i < s->n; i++)
		rmdir(d[i]); /* fails while another writer streams: fine */
}

/* An unversioned bucket's delete: the object goes, even if its metadata
 * is corrupt. */
static int delete_plain(struct spx_obj *s, const char *bucket,
			const char *key, char **d, spx_obj_cond_fn cond,
			void *cond_ctx, char **old)
{
	struct spx_obj_meta cur = SPX_OBJ_META_INIT;
	int rc = obj_get_meta(s, d, "meta", &cur, SPX_OBJ_NO_SUCH_KEY);
	int log = -1;

	if (rc == SPX_OBJ_NO_SUCH_KEY)
		return obj_err(rc, "no such key '%s' in '%s'", key, bucket);
	if (rc < 0 && cond) {
		spx_obj_meta_release(&cur);
		return rc; /* a condition needs what it asks about */
	}
	if (rc < 0)
		spx_error_clear(); /* corrupt: delete it anyway */
	if ((cond && (rc = cond(cond_ctx, &cur)) < 0) ||
	    (rc = obj_idx_note(s, bucket, &log, key, '+')) < 0) {
		obj_idx_note_end(&log);
		spx_obj_meta_release(&cur);
		return rc;
	}
	rc = obj_unlink_all(s, d, "meta");
	if (!rc && obj_idx_note_meta(s, bucket, &log, key, NULL) < 0)
		spx_error_clear(); /* the index keeps it; listings skip it */
	obj_idx_note_end(&log);
	if (!rc && cur.data[0])
		*old = spx_strdup(cur.data);
	spx_obj_meta_release(&cur);
	return rc;
}

/* Remove version vid for good; the newest other one becomes current if
 * it was the current one. */
static int remove_version(struct spx_obj *s, const char *bucket,
			  const char *key, const char *enc, char **d,
			  const char *vid,
			  spx_obj_cond_fn cond, void *cond_ctx,
			  struct spx_obj_deleted *out, char **old)
{
	struct spx_obj_meta *v = NULL;
	struct spx_buf b = SPX_BUF_INIT;
	char name[OBJ_VFILE_SIZE];
	size_t n = 0, t;
	bool current;
	int rc, log = -1;

	if ((rc = obj_versions_read(s, bucket, enc, &v, &n, &current)) < 0)
		return rc;
	for (t = 0; t < n && strcmp(v[t].vid, vid_raw(vid)); t++)
		;
	if (t == n) {
		rc = obj_err(SPX_OBJ_NO_SUCH_VERSION, "no version '%s'", vid);
		goto out;
	}
	/* The caller's condition on this version, under the key's lock. */
	if (cond && (rc = cond(cond_ctx, &v[t])) < 0)
		goto out;
	out->delete_marker = v[t].delete_marker;
	snprintf(out->vid, sizeof(out->vid), "%s", v[t].vid);
	obj_vfile(v[t].vid, name);
	if (t == 0 && current) {
		/* The key's current version changes: undescribed in the
		 * index until it has. A leftover copy of the current version
		 * goes first, so that it can never come back as a version of
		 * its own. */
		if ((rc = obj_idx_note(s, bucket, &log, key, '+')) < 0 ||
		    (rc = obj_unlink_all(s, d, name)) < 0)
			goto out;
		if (n > 1) {
			char next[OBJ_VFILE_SIZE];

			/* The next version is written as meta before its v-
			 * file goes: a crash leaves a copy, never a gap. */
			spx_obj_meta_encode(&v[1], &b);
			if ((rc = obj_put_key(s, d, "meta", &b, false)) < 0)
				goto out;
			obj_vfile(v[1].vid, next);
			obj_unlink_all(s, d, next);
			if (obj_idx_note_meta(s, bucket, &log, key, &v[1]) < 0)
				spx_error_clear(); /* as in delete_plain */
		} else if ((rc = obj_unlink_all(s, d, "meta")) < 0) {
			goto out;
		} else if (obj_idx_note_meta(s, bucket, &log, key, NULL) < 0) {
			spx_error_clear(); /* as in delete_plain */
		}
	} else if ((rc = obj_unlink_all(s, d, name)) < 0) {
		goto out;
	}
	if (v[t].data[0])
		*old = spx_strdup(v[t].data);
out:
	obj_idx_note_end(&log);
	obj_versions_free(v, n);
	spx_buf_release(&b);
	return rc;
}

int spx_obj_delete_version(struct spx_obj *s, const struct spx_obj_bucket *b,
			   const char *key, const char *vid,
			   struct spx_obj_deleted *out)
{
	return spx_obj_delete_version_if(s, b, key, vid, NULL, NULL, out);
}

int spx_obj_delete_version_if(struct spx_obj *s,
			      const struct spx_obj_bucket *b, const char *key,
			      const char *vid, spx_obj_cond_fn cond,
			      void *cond_ctx, struct spx_obj_deleted *out)
{
	struct spx_obj_deleted tmp;
	enum spx_obj_versioning v;
	char enc[256], **d = NULL, *old[2] = { NULL, NULL };
	const char *bucket;
	int rc, lk = -1;

	if (!out)
		out = &tmp;
	memset(out, 0, sizeof(*out));
	if ((rc = obj_target(b, key, vid, enc)) < 0)
		return rc;
	bucket = b->name;
	if ((rc = obj_lock(s, bucket, key, true, &lk)) < 0)
		return rc;
	if ((rc = obj_bucket_current(s, b, &v)) < 0)
		goto out;
	d = obj_kdirs(s, bucket, enc);
	if (vid) {
		rc = remove_version(s, bucket, key, enc, d, vid, cond, cond_ctx,
				    out, &old[0]);
	} else if (v == SPX_OBJ_UNVERSIONED) {
		rc = delete_plain(s, bucket, key, d, cond, cond_ctx, &old[0]);
	} else {
		struct spx_obj_meta m = SPX_OBJ_META_INIT;

		if (cond) {
			/* The condition asks about the current version. */
			rc = obj_get_meta(s, d, "meta", &m,
					  SPX_OBJ_NO_SUCH_KEY);
			if (!rc)
				rc = cond(cond_ctx, &m);
			spx_obj_meta_release(&m);
			m = (struct spx_obj_meta)SPX_OBJ_META_INIT;
			if (rc < 0)
				goto out;
		}
		m.key = spx_strdup(key);
		m.k = s->k;
		m.m = s->m;
		m.block = s->block;
		m.is_inline = true;
		m.delete_marker = true;
		rc = obj_install(s, bucket, b->inc, enc, v, &m, old);
		if (!rc) {
			out->delete_marker = true;
			memcpy(out->vid, m.vid, sizeof(out->vid));
		}
		spx_obj_meta_release(&m);
	}
out:
	obj_unlock(lk);
	if (!rc) {
		obj_idx_after_note(s, b);
		obj_remove_data(s, bucket, enc, old[0]);
		obj_remove_data(s, bucket, enc, old[1]);
		rmdir_all(s, d);
	}
	free(old[0]);
	free(old[1]);
	obj_dirs_free(d, s->n);
	return rc;
}

int spx_obj_delete(struct spx_obj *s, const struct spx_obj_bucket *b,
		   const char *key)
{
	return spx_obj_delete_version(s, b, key, NULL, NULL);
}

struct tags_ctx {
	const struct spx_kvlist *tags;
};

static int replace_tags(void *ctx, struct spx_obj_meta *m)
{
	const struct spx_kvlist *tags = ((struct tags_ctx *)ctx)->tags;

	spx_kv_free(&m->tags);
	for (size_t i = 0; tags && i < tags->n; i++)
		spx_kv_add(&m->tags, tags->v[i].k, tags->v[i].v);
	return 0;
}

int spx_obj_set_tags(struct spx_obj *s, const struct spx_obj_bucket *bk,
		     const char *key, const char *vid,
		     const struct spx_kvlist *tags,
		     char vid_out[SPX_OBJ_VID_SIZE])
{
	struct tags_ctx c = {tags};

	if (tags && !obj_kv_valid(tags))
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "a tag is not valid UTF-8 or too long");
	return spx_obj_update(s, bk, key, vid, replace_tags, &c, vid_out);
}

int spx_obj_update(struct spx_obj *s, const struct spx_obj_bucket *bk,
		   const char *key, const char *vid, spx_obj_update_fn fn,
		   void *ctx, char vid_out[SPX_OBJ_VID_SIZE])
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct spx_buf b = SPX_BUF_INIT;
	char enc[256], name[OBJ_VFILE_SIZE], **d = NULL;
	const char *bucket;
	int rc, lk = -1;

	if ((rc = obj_target(bk, key, vid, enc)) < 0)
		return rc;
	bucket = bk->name;
	if ((rc = obj_lock(s, bucket, key, true, &lk)) < 0)
		return rc;
	if ((rc = obj_bucket_current(s, bk, NULL)) < 0)
		goto out;
	rc = obj_version_get(s, bucket, enc, vid, &m, name);
	if (rc == SPX_OBJ_NO_SUCH_KEY) {
		rc = obj_err(rc, "no such key '%s' in '%s'", key, bucket);
		goto out;
	}
	if (rc < 0)
		goto out;
	if (m.delete_marker) {
		rc = vid ? obj_err(SPX_OBJ_DELETE_MARKER,
				   "version '%s' is a delete marker", vid)
			 : obj_err(SPX_OBJ_NO_SUCH_KEY,
				   "'%s' in '%s' is deleted", key, bucket);
		goto out;
	}
	if ((rc = fn(ctx, &m)) < 0)
		goto out;
	if (!obj_kv_valid(&m.sys)) {
		rc = obj_err(SPX_OBJ_INVALID_ARG, "metadata too long");
		goto out;
	}
	spx_obj_meta_encode(&m, &b);
	d = obj_kdirs(s, bucket, enc);
	rc = obj_put_key(s, d, name, &b, m.is_inline);
	if (!rc && vid_out)
		memcpy(vid_out, m.vid, SPX_OBJ_VID_SIZE);
out:
	obj_unlock(lk);
	obj_dirs_free(d, s->n);
	spx_obj_meta_release(&m);
	spx_buf_release(&b);
	return rc;
}
