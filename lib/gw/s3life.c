/* s3life.c: lifecycle rules and the pass (contract in s3life.h). */
#include "spx.h"

#include <jansson.h>

#include "gw/ec2q.h"
#include "gw/s3_int.h"
#include "gw/s3life.h"

#define POS_DOC SPX_S3_LIFE_POS_DOC
/* Versions listed at a time: a listing reads the bucket's directory
 * whole (lib/obj/list.c), so large pages make a pass over a large bucket
 * cheaper; 10000 entries are about a megabyte. */
#define PAGE 10000

struct rule {
	char *id;
	char *prefix;		/* "" matches every key */
	struct spx_kvlist tags;	/* each must be on the version */
	int64_t gt, lt;		/* object size bounds; -1: none */
	int64_t exp_days;	/* 0: none */
	int64_t exp_date_ms;	/* 0: none */
	bool exp_marker;	/* ExpiredObjectDeleteMarker */
	int64_t nc_days;	/* 0: none */
	int64_t nc_newer;	/* NewerNoncurrentVersions; 0: none */
	int64_t abort_days;	/* 0: none */
};

struct spx_s3_life {
	struct rule *r;
	size_t n;
	bool tags;
};

void spx_s3_life_free(struct spx_s3_life *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->r[i].id);
		free(l->r[i].prefix);
		spx_kv_free(&l->r[i].tags);
	}
	free(l->r);
	free(l);
}

static int64_t num(const json_t *o, const char *k, int64_t none)
{
	const json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : none;
}

static int load_rule(const json_t *j, struct rule *r)
{
	const json_t *f = json_object_get(j, "Filter");
	const json_t *e = json_object_get(j, "Expiration");
	const json_t *nc = json_object_get(j, "NoncurrentVersionExpiration");
	const json_t *ab = json_object_get(j, "AbortIncompleteMultipartUpload");
	const json_t *p = json_object_get(f, "Prefix"), *tag;
	const char *date = json_string_value(json_object_get(e, "Date"));
	size_t i;

	r->id = spx_strdup(json_is_string(json_object_get(j, "ID"))
				   ? json_string_value(json_object_get(j, "ID"))
				   : "");
	r->prefix = spx_strdup(json_is_string(p) ? json_string_value(p) : "");
	json_array_foreach(json_object_get(f, "Tags"), i, tag) {
		const char *k = json_string_value(json_object_get(tag, "Key"));
		const char *v = json_string_value(json_object_get(tag, "Value"));

		if (!k || !v)
			return -1;
		spx_kv_add(&r->tags, k, v);
	}
	r->gt = num(f, "Gt", -1);
	r->lt = num(f, "Lt", -1);
	r->exp_days = num(e, "Days", 0);
	if (date) {
		double t;

		if (ec2q_time_parse(date, &t) < 0 || t < 0)
			return -1;
		r->exp_date_ms = (int64_t)t * 1000;
		if (!r->exp_date_ms)
			r->exp_date_ms = 1; /* the epoch itself: long past */
	}
	r->exp_marker = json_is_true(
		json_object_get(e, "ExpiredObjectDeleteMarker"));
	r->nc_days = num(nc, "NoncurrentDays", 0);
	r->nc_newer = num(nc, "NewerNoncurrentVersions", 0);
	r->abort_days = num(ab, "DaysAfterInitiation", 0);
	if (r->exp_days < 0 || r->nc_days < 0 || r->nc_newer < 0 ||
	    r->abort_days < 0)
		return -1;
	return 0;
}

int spx_s3_life_load(const char *p, size_t n, struct spx_s3_life **out)
{
	json_t *doc = json_loadb(p, n, 0, NULL), *j;
	struct spx_s3_life *l;
	size_t i;

	*out = NULL;
	if (!json_is_array(doc)) {
		json_decref(doc);
		return spx_error(SPX_FAIL, "lifecycle: not a rule list");
	}
	l = spx_calloc(1, sizeof(*l));
	l->r = spx_calloc(json_array_size(doc) + 1, sizeof(*l->r));
	json_array_foreach(doc, i, j) {
		const char *st = json_string_value(json_object_get(j, "Status"));

		if (!st || strcmp(st, "Enabled"))
			continue;
		if (load_rule(j, &l->r[l->n++]) < 0) {
			json_decref(doc);
			spx_s3_life_free(l);
			return spx_error(SPX_FAIL, "lifecycle: a bad rule");
		}
		if (l->r[l->n - 1].tags.n)
			l->tags = true;
	}
	json_decref(doc);
	if (!l->n) {
		spx_s3_life_free(l);
		return 0;
	}
	*out = l;
	return 0;
}

bool spx_s3_life_tags(const struct spx_s3_life *l)
{
	return l && l->tags;
}

/* Does key begin with rule r's prefix? */
static bool prefixed(const struct rule *r, const char *key)
{
	return !strncmp(key, r->prefix, strlen(r->prefix));
}

/* Does rule r apply to a version of key with size and tags? */
static bool match(const struct rule *r, const char *key, uint64_t size,
		  const struct spx_kvlist *tags)
{
	if (!prefixed(r, key))
		return false;
	if (r->gt >= 0 && size <= (uint64_t)r->gt)
		return false;
	if (r->lt >= 0 && size >= (uint64_t)r->lt)
		return false;
	for (size_t i = 0; i < r->tags.n; i++) {
		const char *v = tags ? spx_kv_get(tags, r->tags.v[i].k) : NULL;

		if (!v || strcmp(v, r->tags.v[i].v))
			return false;
	}
	return true;
}

/* from_ms plus days, rounded up to the next day boundary (midnight UTC
 * for days of 86400 s), in ms. */
static int64_t due(int64_t from_ms, int64_t days, int64_t day_s)
{
	int64_t day_ms = day_s * 1000;
	int64_t t;

	if (days > INT64_MAX / 2 / day_ms || from_ms > INT64_MAX / 2)
		return INT64_MAX;
	t = from_ms + days * day_ms;
	return (t + day_ms - 1) / day_ms * day_ms;
}

int64_t spx_s3_life_expiry(const struct spx_s3_life *l, const char *key,
			   uint64_t size, const struct spx_kvlist *tags,
			   int64_t mtime_ms, int64_t day_s, const char **rule)
{
	int64_t best = INT64_MAX;

	if (rule)
		*rule = NULL;

	for (size_t i = 0; l && i < l->n; i++) {
		const struct rule *r = &l->r[i];
		int64_t t = INT64_MAX;

		if (r->exp_days)
			t = due(mtime_ms, r->exp_days, day_s);
		else if (r->exp_date_ms)
			t = r->exp_date_ms;
		if (t < best && match(r, key, size, tags)) {
			best = t;
			if (rule)
				*rule = r->id;
		}
	}
	return best;
}

/* ---- the pass ---- */

/* The version a decision was made about must still be the one acted on
 * (a client may have written the key meanwhile). */
struct same {
	const char *vid;	/* "" for the null version */
	int64_t mtime_ms;
	struct s3_lock_ctx lock;
};

static int still_current(void *ctx, const struct spx_obj_meta *cur)
{
	const struct same *w = ctx;

	if (cur->delete_marker || strcmp(cur->vid, w->vid) ||
	    cur->mtime_ms != w->mtime_ms)
		return SPX_OBJ_PRECONDITION;
	return 0;
}

static int not_locked(void *ctx, const struct spx_obj_meta *v)
{
	struct same *w = ctx;

	return s3_lock_cond(&w->lock, v);
}

struct walk {
	struct spx_obj *s;
	const struct spx_obj_bucket *b;
	const struct spx_s3_life *l;
	int64_t now, day_s;
	struct spx_s3_life_stats *st;
	/* The key being walked, newest version first. */
	char *key;
	int64_t newer_ms;	/* the mtime of the version seen before */
	int64_t nc_seen;	/* noncurrent versions seen of it */
	size_t nseen;		/* versions seen of it */
	bool marker;		/* its current version is a delete marker */
	char marker_vid[SPX_OBJ_VID_SIZE];
};

/* A failed change is counted, not fatal: the key may have changed under
 * the pass (a client's write wins), and the next pass looks again. */
static int acted(struct walk *w, int rc, uint64_t *count)
{
	if (!rc) {
		(*count)++;
		return 0;
	}
	if (rc == SPX_OBJ_LOCKED) {
		w->st->kept++;
		spx_error_clear();
		return 0;
	}
	if (rc == SPX_OBJ_PRECONDITION || rc == SPX_OBJ_NO_SUCH_KEY ||
	    rc == SPX_OBJ_NO_SUCH_VERSION) {
		spx_error_clear();
		return 0;
	}
	return rc;
}

/* The tags of a version, when a rule needs them. */
static int version_tags(struct walk *w, const struct spx_obj_version *v,
			struct spx_obj_meta *m)
{
	int rc;

	if (!w->l->tags || v->delete_marker)
		return 0;
	rc = spx_obj_stat_version(w->s, w->b, v->key, spx_obj_vid_name(v->vid),
				  m);
	if (rc == SPX_OBJ_NO_SUCH_KEY || rc == SPX_OBJ_NO_SUCH_VERSION) {
		spx_error_clear();
		return 1; /* gone meanwhile */
	}
	return rc;
}

static int current(struct walk *w, const struct spx_obj_version *v)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct same c = { .vid = v->vid, .mtime_ms = v->mtime_ms };
	int rc = version_tags(w, v, &m);

	if (rc)
		return rc < 0 ? rc : 0;
	if (spx_s3_life_expiry(w->l, v->key, v->size, w->l->tags ? &m.tags
								 : NULL,
			       v->mtime_ms, w->day_s, NULL) <= w->now) {
		/* Unversioned: the object goes; else a delete marker covers
		 * it (a locked version may be covered, never removed). */
		rc = spx_obj_delete_version_if(w->s, w->b, v->key, NULL,
					       still_current, &c, NULL);
		rc = acted(w, rc, &w->st->expired);
	}
	spx_obj_meta_release(&m);
	return rc;
}

static int noncurrent(struct walk *w, const struct spx_obj_version *v,
		      int64_t since_ms, int64_t newer)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct same c = { .vid = v->vid,
			  .mtime_ms = v->mtime_ms,
			  .lock = { .now = (double)w->now / 1000.0,
				    .removing = true } };
	bool go = false;
	int rc = version_tags(w, v, &m);

	if (rc)
		return rc < 0 ? rc : 0;
	for (size_t i = 0; i < w->l->n && !go; i++) {
		const struct rule *r = &w->l->r[i];

		go = r->nc_days && newer >= r->nc_newer &&
		     due(since_ms, r->nc_days, w->day_s) <= w->now &&
		     match(r, v->key, v->size, w->l->tags ? &m.tags : NULL);
	}
	if (go) {
		rc = spx_obj_delete_version_if(w->s, w->b, v->key,
					       spx_obj_vid_name(v->vid),
					       not_locked, &c, NULL);
		rc = acted(w, rc, &w->st->noncurrent);
	}
	spx_obj_meta_release(&m);
	return rc;
}

/* The key walked ends: a delete marker that was its only version is an
 * expired one. */
static int key_end(struct walk *w)
{
	int rc = 0;

	if (w->key && w->marker && w->nseen == 1) {
		bool go = false;

		for (size_t i = 0; i < w->l->n && !go; i++)
			go = w->l->r[i].exp_marker &&
			     prefixed(&w->l->r[i], w->key);
		if (go)
			rc = acted(w,
				   spx_obj_delete_version(
					   w->s, w->b, w->key,
					   spx_obj_vid_name(w->marker_vid),
					   NULL),
				   &w->st->markers);
	}
	free(w->key);
	w->key = NULL;
	return rc;
}

static int one(struct walk *w, const struct spx_obj_version *v)
{
	int rc;

	w->st->versions++;
	if (!w->key || strcmp(w->key, v->key)) {
		if ((rc = key_end(w)) < 0)
			return rc;
		w->key = spx_strdup(v->key);
		w->nseen = 0;
		w->nc_seen = 0;
		w->marker = false;
	}
	w->nseen++;
	if (v->latest) {
		w->marker = v->delete_marker;
		memcpy(w->marker_vid, v->vid, sizeof(w->marker_vid));
		rc = v->delete_marker ? 0 : current(w, v);
	} else if (w->nseen == 1) {
		rc = 0; /* its newer versions went before this page */
	} else {
		rc = noncurrent(w, v, w->newer_ms, w->nc_seen);
		w->nc_seen++;
	}
	w->newer_ms = v->mtime_ms;
	return rc;
}

static int abort_uploads(struct walk *w)
{
	struct spx_obj_upload *u = NULL;
	size_t n = 0;
	int rc = spx_obj_mpu_list(w->s, w->b, "", &u, &n);

	for (size_t i = 0; rc >= 0 && i < n; i++) {
		bool go = false;

		for (size_t k = 0; k < w->l->n && !go; k++) {
			const struct rule *r = &w->l->r[k];

			go = r->abort_days &&
			     prefixed(r, u[i].key) &&
			     due(u[i].initiated_ms, r->abort_days, w->day_s) <=
				     w->now;
		}
		if (go)
			rc = acted(w,
				   spx_obj_mpu_abort(w->s, w->b, u[i].key,
						     u[i].id),
				   &w->st->aborted);
		if (rc == SPX_OBJ_NO_SUCH_UPLOAD) {
			spx_error_clear();
			rc = 0;
		}
	}
	spx_obj_upload_free(u, n);
	return rc;
}

int spx_s3_life_of(struct spx_obj *s, const struct spx_obj_bucket *b,
		   struct spx_s3_life **l)
{
	struct spx_buf d = SPX_BUF_INIT;
	int rc = spx_obj_bucket_doc(s, b, SPX_S3_LIFE_DOC, &d);

	*l = NULL;
	if (rc >= 0 && d.len && spx_s3_life_load(d.p, d.len, l) < 0)
		rc = SPX_OBJ_INTERNAL;
	spx_buf_release(&d);
	return rc;
}

int spx_s3_life_pass(struct spx_obj *s, struct spx_obj_bucket *b,
		     int64_t now_ms, int64_t day_s, size_t budget,
		     struct spx_s3_life_stats *st)
{
	struct walk w = {
		.s = s, .b = b, .now = now_ms, .day_s = day_s, .st = st
	};
	struct spx_buf pos = SPX_BUF_INIT;
	char *after = NULL, vid_buf[SPX_OBJ_VID_SIZE];
	const char *after_vid = NULL;
	size_t looked = 0;
	struct spx_s3_life *l = NULL;
	int rc = spx_s3_life_of(s, b, &l);

	if (rc < 0 || !(w.l = l))
		goto out;
	if ((rc = spx_obj_bucket_doc(s, b, POS_DOC, &pos)) < 0)
		goto out;
	if (pos.len && !memchr(pos.p, 0, pos.len))
		after = spx_strndup(pos.p, pos.len);
	/* Uploads are few and listed whole: once per round of the bucket. */
	if (!after && (rc = abort_uploads(&w)) < 0)
		goto out;
	for (;;) {
		struct spx_obj_versions_opts o = { .key_marker = after,
						   .vid_marker = after_vid,
						   .max = PAGE };
		struct spx_obj_versions v = { 0 };

		if ((rc = spx_obj_list_versions(s, b, &o, &v)) < 0)
			goto out;
		for (size_t i = 0; i < v.n; i++) {
			/* Stop between keys once the budget is spent: the
			 * position is the last key finished. */
			if (budget && looked >= budget && w.key &&
			    strcmp(w.key, v.v[i].key)) {
				rc = spx_obj_bucket_set_doc(s, b, POS_DOC,
							    w.key,
							    strlen(w.key));
				spx_obj_versions_release(&v);
				if (rc >= 0)
					rc = 1;
				goto out;
			}
			looked++;
			if ((rc = one(&w, &v.v[i])) < 0) {
				spx_obj_versions_release(&v);
				goto out;
			}
		}
		/* The next page starts after the last version listed, in
		 * the middle of its key if need be: the walk's state goes on
		 * (a marker version removed meanwhile resumes after the
		 * key). */
		free(after);
		after = v.truncated && v.next_key ? spx_strdup(v.next_key)
						  : NULL;
		snprintf(vid_buf, sizeof(vid_buf), "%s",
			 spx_obj_vid_name(v.next_vid));
		after_vid = after && !v.next_is_prefix ? vid_buf : NULL;
		spx_obj_versions_release(&v);
		if (!after)
			break;
	}
	if ((rc = key_end(&w)) < 0)
		goto out;
	if (pos.len)
		rc = spx_obj_bucket_set_doc(s, b, POS_DOC, NULL, 0);
out:
	free(w.key);
	free(after);
	spx_buf_release(&pos);
	spx_s3_life_free(l);
	return rc < 0 ? rc : rc == 1 ? 1 : 0;
}
