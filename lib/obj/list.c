/* list.c: listing a bucket's keys in S3's byte order.
 *
 * The keys come from the bucket's index (index.c) from the marker on, in
 * order, each with its current version's size, ETag and time. A key the
 * index holds undescribed has its metadata read (and noted in the index),
 * and is skipped if it has none (a write in progress, one deleted since,
 * damage that heal mends). A rolled-up common prefix is passed over with
 * a seek, so a page costs O(page + log n) however the keys under it are
 * spread. Versions are listed from each key's metadata. */
#include "spx.h"

#include "file.h"
#include "obj/index.h"

/* The bucket's key directories on drive 0, for obj_key_meta_at. */
static int keys_dir(struct spx_obj *s, const struct spx_obj_bucket *b)
{
	char *p = spx_xprintf("%s/b/%s/o", s->drives[0], b->name);
	int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);

	free(p);
	return fd;
}

/* obj_key_meta through odir (keys_dir, or -1): a name relative to the
 * bucket's directory is one lookup where the whole path is a dozen. A
 * copy on drive 0 that cannot be read is looked for on the others. */
static int obj_key_meta_at(struct spx_obj *s, int odir, const char *bucket,
			   const char *enc, struct spx_obj_meta *m)
{
	char rel[300];
	int rc;

	if (odir < 0)
		return obj_key_meta(s, bucket, enc, m);
	snprintf(rel, sizeof(rel), "%s/meta", enc);
	rc = obj_meta_at(odir, rel, m);
	if (rc < 0 && rc != SPX_OBJ_NO_SUCH_KEY) {
		spx_obj_meta_release(m);
		*m = (struct spx_obj_meta)SPX_OBJ_META_INIT;
		spx_error_clear();
		rc = obj_key_meta(s, bucket, enc, m);
	}
	return rc;
}

int obj_key_meta(struct spx_obj *s, const char *bucket, const char *enc,
		 struct spx_obj_meta *m)
{
	char *d[32];
	int rc;

	for (int i = 0; i < s->n; i++)
		d[i] = obj_kdir(s, i, bucket, enc);
	rc = obj_get_meta(s, d, "meta", m, SPX_OBJ_NO_SUCH_KEY);
	for (int i = 0; i < s->n; i++)
		free(d[i]);
	return rc;
}

void spx_obj_list_release(struct spx_obj_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].key);
	for (size_t i = 0; i < l->nprefixes; i++)
		free(l->prefixes[i]);
	free(l->v);
	free(l->prefixes);
	free(l->next);
	memset(l, 0, sizeof(*l));
}

/* Place x at the first key to list: the prefix's first, or the one
 * after the marker (from it on when from), past the keys a common prefix
 * used as the marker rolled up. */
static void idx_start(struct obj_idx *x, const char *prefix, const char *after,
		      bool from, const char *delim)
{
	size_t plen = strlen(prefix), al = after ? strlen(after) : 0,
	       dl = delim ? strlen(delim) : 0;

	if (!after || strcmp(after, prefix) < 0) {
		obj_idx_seek(x, prefix, true);
	} else if (delim && al >= dl && !strcmp(after + al - dl, delim) &&
		   !strncmp(after, prefix, plen) &&
		   strstr(after + plen, delim) == after + al - dl) {
		obj_idx_skip_prefix(x, after);
	} else {
		obj_idx_seek(x, after, from);
	}
}

/* Fill a page with fn (ctx, over the open index): an index that turns out
 * damaged under it is made again from the key directories, release(ctx)
 * empties the page, and fn runs once more. */
static int over_index(struct spx_obj *s, const struct spx_obj_bucket *b,
		      void (*fn)(void *ctx, struct obj_idx *x),
		      void (*release)(void *ctx), void *ctx)
{
	for (int tries = 0; tries < 2; tries++) {
		struct obj_idx *x = NULL;
		bool bad;
		int rc;

		if ((rc = obj_idx_open(s, b, &x)) < 0)
			return rc;
		fn(ctx, x);
		bad = obj_idx_bad(x);
		obj_idx_close(x);
		if (!bad)
			return 0;
		release(ctx);
		if ((rc = obj_idx_fold(s, b, true, true)) < 0)
			return rc;
	}
	return obj_err(SPX_OBJ_INTERNAL, "the index of '%s' is damaged",
		       b->name);
}

/* Append p (taken) to a list of prefixes. */
static void push_prefix(char ***v, size_t *n, size_t *cap, char *p)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*v = spx_realloc(*v, *cap * sizeof(char *));
	}
	(*v)[(*n)++] = p;
}

/* The common prefix of key at delim after plen bytes, or NULL. */
static char *rollup(const char *key, size_t plen, const char *delim)
{
	const char *d = delim ? strstr(key + plen, delim) : NULL;

	return d ? spx_strndup(key, (size_t)(d - key) + strlen(delim)) : NULL;
}

struct list_ctx {
	struct spx_obj *s;
	const struct spx_obj_bucket *b;
	const char *prefix, *after, *delim;
	size_t max;
	struct spx_obj_list *out;
};

/* A key the index holds undescribed ('+': a commit in progress, one
 * killed between its records, a rebuilt index): its metadata, read under
 * the key's lock and noted, so that the next listing need not read it.
 * A listing never waits for a writer (which may be stopped in its
 * commit): with the lock held, the metadata is read and not noted. */
static int resolve(struct spx_obj *s, int odir, const char *bucket,
		   const char *key, const char *enc, struct spx_obj_meta *m)
{
	int lk = -1, rc = obj_lock_try(s, bucket, key, true, &lk);

	if (rc <= 0) {
		spx_error_clear();
		return obj_key_meta_at(s, odir, bucket, enc, m);
	}
	rc = obj_key_meta_at(s, odir, bucket, enc, m);
	if ((rc == 0 || rc == SPX_OBJ_NO_SUCH_KEY) &&
	    obj_idx_note_meta(s, bucket, NULL, key, rc == 0 ? m : NULL) < 0)
		spx_error_clear();
	obj_unlock(lk);
	return rc;
}

static void list_page(void *vc, struct obj_idx *x)
{
	struct list_ctx *c = vc;
	struct spx_obj *s = c->s;
	const struct spx_obj_bucket *b = c->b;
	const char *prefix = c->prefix, *delim = c->delim, *after = c->after;
	struct spx_obj_list *out = c->out;
	size_t plen = strlen(prefix), cape = 0, capp = 0, max = c->max;
	int odir = -1;
	struct obj_idx_rec r;
	const char *key;
	char enc[256];

	idx_start(x, prefix, after, false, delim);
	while ((key = obj_idx_next(x, &r)) && !strncmp(key, prefix, plen)) {
		struct spx_obj_meta m = SPX_OBJ_META_INIT;
		const char *d = delim ? strstr(key + plen, delim) : NULL;
		struct spx_obj_entry *e;

		if (r.op == '+') {
			if (odir < 0)
				odir = keys_dir(s, b);
			spx_obj_key_encode(key, enc, sizeof(enc));
			if (resolve(s, odir, b->name, key, enc, &m) < 0) {
				/* A write in progress, or damage (heal). */
				spx_error_clear();
				spx_obj_meta_release(&m);
				continue;
			}
			obj_idx_rec_of(&r, key, &m);
		}
		if (r.op != '=') {
			/* Its current version is a delete marker. */
			spx_obj_meta_release(&m);
			continue;
		}
		if (out->n + out->nprefixes == max) {
			/* Truncated only if a live key remains: this one. */
			spx_obj_meta_release(&m);
			out->truncated = true;
			break;
		}
		if (d) {
			char *p = spx_strndup(key, (size_t)(d - key) + strlen(delim));

			spx_obj_meta_release(&m);
			push_prefix(&out->prefixes, &out->nprefixes, &capp, p);
			free(out->next);
			out->next = spx_strdup(p);
			obj_idx_skip_prefix(x, p);
			continue;
		}
		if (out->n == cape) {
			cape = cape ? 2 * cape : 64;
			out->v = spx_realloc(out->v, cape * sizeof(*out->v));
		}
		e = &out->v[out->n++];
		memset(e, 0, sizeof(*e));
		e->key = spx_strdup(key);
		e->size = r.size;
		memcpy(e->etag, r.etag, r.etaglen);
		e->mtime_ms = r.mtime_ms;
		free(out->next);
		out->next = spx_strdup(key);
		spx_obj_meta_release(&m);
	}
	if (odir >= 0)
		close(odir);
}

static void list_release(void *vc)
{
	spx_obj_list_release(((struct list_ctx *)vc)->out);
}

int spx_obj_list(struct spx_obj *s, const struct spx_obj_bucket *b,
		 const struct spx_obj_list_opts *o, struct spx_obj_list *out)
{
	const char *prefix = o && o->prefix ? o->prefix : "";
	const char *after = o && o->after ? o->after : NULL;
	const char *delim = o && o->delimiter && *o->delimiter ? o->delimiter : NULL;
	struct list_ctx c = {
		.s = s, .b = b, .prefix = prefix, .after = after, .delim = delim,
		.max = o && o->max ? o->max : 1000, .out = out,
	};
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = obj_bucket_name(b)) < 0 ||
	    (rc = over_index(s, b, list_page, list_release, &c)) < 0) {
		spx_obj_list_release(out);
		return rc;
	}
	if (!out->truncated) {
		free(out->next);
		out->next = NULL;
	}
	/* What was listed is the handle's bucket only if it still is. */
	if ((rc = obj_bucket_current(s, b, NULL)) < 0)
		spx_obj_list_release(out);
	return rc;
}

void spx_obj_versions_release(struct spx_obj_versions *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].key);
	for (size_t i = 0; i < l->nprefixes; i++)
		free(l->prefixes[i]);
	free(l->v);
	free(l->prefixes);
	free(l->next_key);
	memset(l, 0, sizeof(*l));
}

static bool has_meta(struct spx_obj *s, const char *bucket, const char *enc)
{
	char *k = obj_kdir(s, 0, bucket, enc), *p = obj_key_file(k, "meta");
	bool yes = spx_exists(p);

	free(p);
	free(k);
	return yes;
}

struct versions_ctx {
	struct spx_obj *s;
	const struct spx_obj_bucket *b;
	const char *prefix, *km, *vm, *delim;
	size_t max;
	struct spx_obj_versions *out;
};

static void versions_page(void *vc, struct obj_idx *x)
{
	struct versions_ctx *c = vc;
	struct spx_obj *s = c->s;
	const struct spx_obj_bucket *b = c->b;
	const char *prefix = c->prefix, *km = c->km, *vm = c->vm,
		   *delim = c->delim;
	struct spx_obj_versions *out = c->out;
	size_t plen = strlen(prefix), cape = 0, capp = 0, max = c->max;
	struct obj_idx_rec r;
	const char *key;
	char enc[256];

	idx_start(x, prefix, km, vm != NULL, delim);
	while (!out->truncated && (key = obj_idx_next(x, &r)) &&
	       !strncmp(key, prefix, plen)) {
		char *p = rollup(key, plen, delim);
		struct spx_obj_meta *v = NULL;
		size_t nv = 0, j = 0;
		bool cur;

		spx_obj_key_encode(key, enc, sizeof(enc));
		if (p) {
			if (r.op == '+' && !has_meta(s, b->name, enc)) {
				free(p);
				continue;
			}
			if (out->n + out->nprefixes == max) {
				out->truncated = true;
				free(p);
				break;
			}
			push_prefix(&out->prefixes, &out->nprefixes, &capp, p);
			free(out->next_key);
			out->next_key = spx_strdup(p);
			out->next_vid[0] = '\0';
			out->next_is_prefix = true;
			obj_idx_skip_prefix(x, p);
			continue;
		}
		if (obj_versions_read(s, b->name, enc, &v, &nv, &cur) < 0) {
			spx_error_clear();
			continue;
		}
		if (vm && !strcmp(key, km)) {
			/* Resume after the marker's version of this key. */
			while (j < nv && strcmp(spx_obj_vid_name(v[j].vid), vm))
				j++;
			j = j < nv ? j + 1 : nv;
		}
		for (; j < nv; j++) {
			struct spx_obj_version *e;
			const char *sc = spx_kv_get(&v[j].sys,
						    "x-amz-storage-class");

			if (out->n + out->nprefixes == max) {
				out->truncated = true;
				break;
			}
			if (out->n == cape) {
				cape = cape ? 2 * cape : 64;
				out->v = spx_realloc(out->v, cape * sizeof(*out->v));
			}
			e = &out->v[out->n++];
			memset(e, 0, sizeof(*e));
			e->key = spx_strdup(key);
			memcpy(e->vid, v[j].vid, sizeof(e->vid));
			e->latest = cur && j == 0;
			e->delete_marker = v[j].delete_marker;
			e->size = v[j].size;
			memcpy(e->etag, v[j].etag, sizeof(e->etag));
			e->mtime_ms = v[j].mtime_ms;
			snprintf(e->storage_class, sizeof(e->storage_class),
				 "%s", sc ? sc : "");
			free(out->next_key);
			out->next_key = spx_strdup(key);
			memcpy(out->next_vid, v[j].vid, sizeof(out->next_vid));
			out->next_is_prefix = false;
		}
		obj_versions_free(v, nv);
	}
}

static void versions_release(void *vc)
{
	spx_obj_versions_release(((struct versions_ctx *)vc)->out);
}

/* Every version in S3's order: keys bytewise, each key's newest first.
 * Paging resumes after (key_marker, vid_marker); a vid_marker that is no
 * longer there resumes after the whole key. */
int spx_obj_list_versions(struct spx_obj *s, const struct spx_obj_bucket *b,
			  const struct spx_obj_versions_opts *o,
			  struct spx_obj_versions *out)
{
	const char *km = o->key_marker && *o->key_marker ? o->key_marker : NULL;
	const char *vm = km && o->vid_marker && *o->vid_marker ? o->vid_marker
							      : NULL;
	const char *delim = o->delimiter && *o->delimiter ? o->delimiter : NULL;
	struct versions_ctx c = {
		.s = s, .b = b, .prefix = o->prefix ? o->prefix : "", .km = km,
		.vm = vm, .delim = delim, .max = o->max ? o->max : 1000,
		.out = out,
	};
	int rc;

	memset(out, 0, sizeof(*out));
	if (o->vid_marker && *o->vid_marker && !km)
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "a version id marker needs a key marker");
	if (vm && !spx_obj_vid_valid(vm))
		return obj_err(SPX_OBJ_INVALID_VERSION, "bad version id marker");
	if ((rc = obj_bucket_name(b)) < 0 ||
	    (rc = over_index(s, b, versions_page, versions_release, &c)) < 0) {
		spx_obj_versions_release(out);
		return rc;
	}
	if (!out->truncated) {
		free(out->next_key);
		out->next_key = NULL;
		out->next_vid[0] = '\0';
		out->next_is_prefix = false;
	}
	if ((rc = obj_bucket_current(s, b, NULL)) < 0)
		spx_obj_versions_release(out);
	return rc;
}
