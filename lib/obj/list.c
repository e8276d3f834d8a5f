/* list.c: listing a bucket's keys in S3's byte order.
 *
 * The index is the bucket's directory on drive 0: one entry per key,
 * named by its encoding. A listing reads the directory, decodes the names
 * (a hashed long name costs a metadata read), keeps the keys after the
 * marker that match the prefix, sorts them bytewise and reads the
 * metadata of just the page it returns (a key without metadata is a write
 * in progress and is skipped). That is O(keys in the bucket) per page,
 * fine for the tens of thousands of keys an edge node holds per bucket;
 * XXX: a sorted per-bucket index (lib/state) when buckets grow past
 * that. */
#include "spx.h"

#include <dirent.h>

#include "file.h"
#include "hex.h"
#include "obj/obj_int.h"

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
	return out->len && strlen(out->p) == out->len;
}

struct cand {
	char *key;
	char *enc;
};

static int cand_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cand *)a)->key, ((const struct cand *)b)->key);
}

static int read_meta(struct spx_obj *s, const char *bucket, const char *enc,
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

/* The keys of the bucket that begin with prefix and sort after `after`
 * (from it on when `from`), without those a common prefix `after` rolled
 * up, sorted bytewise: *c (cands_free) holds *nc. */
static int gather(struct spx_obj *s, const char *bucket, const char *prefix,
		  const char *after, bool from, const char *delim,
		  struct cand **c, size_t *nc)
{
	size_t plen = strlen(prefix), cap = 0;
	struct spx_buf kb = SPX_BUF_INIT;
	struct dirent *e;
	char *odir;
	DIR *dp;
	int rc;

	*c = NULL;
	*nc = 0;
	odir = spx_xprintf("%s/b/%s/o", s->drives[0], bucket);
	dp = opendir(odir);
	if (!dp) {
		rc = errno == ENOENT ? 0 : obj_errno("cannot open '%s'", odir);
		free(odir);
		return rc;
	}
	while ((e = readdir(dp))) {
		struct spx_obj_meta m = SPX_OBJ_META_INIT;
		const char *key;
		int cmp;

		if (e->d_name[0] == '.')
			continue;
		if (e->d_name[0] == '~') {
			if (read_meta(s, bucket, e->d_name, &m) < 0) {
				spx_error_clear();
				continue;
			}
			spx_buf_reset(&kb);
			spx_buf_adds(&kb, m.key);
			spx_obj_meta_release(&m);
		} else if (!decode_name(e->d_name, &kb)) {
			continue;
		}
		key = kb.p;
		cmp = after ? strcmp(key, after) : 1;
		if (strncmp(key, prefix, plen) || cmp < 0 || (cmp == 0 && !from))
			continue;
		/* After a common prefix, skip the keys it rolled up. */
		if (after && delim && !strncmp(key, after, strlen(after)) &&
		    strlen(after) >= strlen(delim) &&
		    !strcmp(after + strlen(after) - strlen(delim), delim) &&
		    !strncmp(after, prefix, plen) &&
		    strstr(after + plen, delim) ==
			    after + strlen(after) - strlen(delim))
			continue;
		if (*nc == cap) {
			cap = cap ? 2 * cap : 256;
			*c = spx_realloc(*c, cap * sizeof(**c));
		}
		(*c)[*nc].key = spx_strdup(key);
		(*c)[*nc].enc = spx_strdup(e->d_name);
		(*nc)++;
	}
	closedir(dp);
	free(odir);
	spx_buf_release(&kb);
	if (*nc)
		qsort(*c, *nc, sizeof(**c), cand_cmp);
	return 0;
}

static void cands_free(struct cand *c, size_t nc)
{
	for (size_t i = 0; i < nc; i++) {
		free(c[i].key);
		free(c[i].enc);
	}
	free(c);
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

int spx_obj_list(struct spx_obj *s, const struct spx_obj_bucket *b,
		 const struct spx_obj_list_opts *o, struct spx_obj_list *out)
{
	const char *bucket = b ? b->name : NULL;
	const char *prefix = o && o->prefix ? o->prefix : "";
	const char *after = o && o->after ? o->after : NULL;
	const char *delim = o && o->delimiter && *o->delimiter ? o->delimiter : NULL;
	size_t max = o && o->max ? o->max : 1000, plen = strlen(prefix), nc = 0;
	struct cand *c = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = obj_bucket_name(b)) < 0 ||
	    (rc = gather(s, bucket, prefix, after, false, delim, &c, &nc)) < 0)
		return rc;
	rc = 0;
	for (size_t i = 0, cape = 0, capp = 0; i < nc; i++) {
		struct spx_obj_meta m = SPX_OBJ_META_INIT;
		const char *d = delim ? strstr(c[i].key + plen, delim) : NULL;
		int r;

		if (d && out->nprefixes &&
		    !strncmp(out->prefixes[out->nprefixes - 1], c[i].key,
			     (size_t)(d - c[i].key) + strlen(delim)) &&
		    strlen(out->prefixes[out->nprefixes - 1]) ==
			    (size_t)(d - c[i].key) + strlen(delim))
			continue;
		if (out->n + out->nprefixes == max) {
			/* Truncated only if a live key remains. */
			r = read_meta(s, bucket, c[i].enc, &m);
			if (r == 0 && m.delete_marker)
				r = SPX_OBJ_NO_SUCH_KEY;
			spx_obj_meta_release(&m);
			spx_error_clear();
			if (r == SPX_OBJ_NO_SUCH_KEY)
				continue;
			out->truncated = true;
			break;
		}
		r = read_meta(s, bucket, c[i].enc, &m);
		if (r < 0 || m.delete_marker) {
			/* A write in progress, damage (heal), or a key whose
			 * current version is a delete marker. */
			spx_error_clear();
			spx_obj_meta_release(&m);
			continue;
		}
		if (d) {
			size_t pl = (size_t)(d - c[i].key) + strlen(delim);
			char *p = spx_strndup(c[i].key, pl);

			spx_obj_meta_release(&m);
			if (out->nprefixes &&
			    !strcmp(out->prefixes[out->nprefixes - 1], p)) {
				free(p);
				continue;
			}
			push_prefix(&out->prefixes, &out->nprefixes, &capp, p);
			free(out->next);
			out->next = spx_strdup(p);
			continue;
		}
		if (out->n == cape) {
			cape = cape ? 2 * cape : 64;
			out->v = spx_realloc(out->v, cape * sizeof(*out->v));
		}
		out->v[out->n].key = spx_strdup(c[i].key);
		out->v[out->n].size = m.size;
		memcpy(out->v[out->n].etag, m.etag, sizeof(m.etag));
		out->v[out->n].mtime_ms = m.mtime_ms;
		out->n++;
		free(out->next);
		out->next = spx_strdup(c[i].key);
		spx_obj_meta_release(&m);
	}
	if (!out->truncated) {
		free(out->next);
		out->next = NULL;
	}
	cands_free(c, nc);
	/* What was listed is the handle's bucket only if it still is. */
	if (!rc && (rc = obj_bucket_current(s, b, NULL)) < 0)
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
	char *p = spx_xprintf("%s/b/%s/o/%s/meta", s->drives[0], bucket, enc);
	bool yes = spx_exists(p);

	free(p);
	return yes;
}

/* Every version in S3's order: keys bytewise, each key's newest first.
 * Paging resumes after (key_marker, vid_marker); a vid_marker that is no
 * longer there resumes after the whole key. */
int spx_obj_list_versions(struct spx_obj *s, const struct spx_obj_bucket *b,
			  const struct spx_obj_versions_opts *o,
			  struct spx_obj_versions *out)
{
	const char *bucket = b ? b->name : NULL;
	const char *prefix = o->prefix ? o->prefix : "";
	const char *km = o->key_marker && *o->key_marker ? o->key_marker : NULL;
	const char *vm = km && o->vid_marker && *o->vid_marker ? o->vid_marker
							      : NULL;
	const char *delim = o->delimiter && *o->delimiter ? o->delimiter : NULL;
	size_t max = o->max ? o->max : 1000, plen = strlen(prefix), nc = 0,
	       cape = 0, capp = 0;
	struct cand *c = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (o->vid_marker && *o->vid_marker && !km)
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "a version id marker needs a key marker");
	if (vm && !spx_obj_vid_valid(vm))
		return obj_err(SPX_OBJ_INVALID_VERSION, "bad version id marker");
	if ((rc = obj_bucket_name(b)) < 0 ||
	    (rc = gather(s, bucket, prefix, km, vm != NULL, delim, &c, &nc)) < 0)
		return rc;
	for (size_t i = 0; i < nc && !out->truncated; i++) {
		char *p = rollup(c[i].key, plen, delim);
		struct spx_obj_meta *v = NULL;
		size_t nv = 0, j = 0;
		bool cur;

		if (p) {
			if ((out->nprefixes &&
			     !strcmp(out->prefixes[out->nprefixes - 1], p)) ||
			    !has_meta(s, bucket, c[i].enc)) {
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
			continue;
		}
		if (obj_versions_read(s, bucket, c[i].enc, &v, &nv, &cur) < 0) {
			spx_error_clear();
			continue;
		}
		if (vm && !strcmp(c[i].key, km)) {
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
			e->key = spx_strdup(c[i].key);
			memcpy(e->vid, v[j].vid, sizeof(e->vid));
			e->latest = cur && j == 0;
			e->delete_marker = v[j].delete_marker;
			e->size = v[j].size;
			memcpy(e->etag, v[j].etag, sizeof(e->etag));
			e->mtime_ms = v[j].mtime_ms;
			snprintf(e->storage_class, sizeof(e->storage_class),
				 "%s", sc ? sc : "");
			free(out->next_key);
			out->next_key = spx_strdup(c[i].key);
			memcpy(out->next_vid, v[j].vid, sizeof(out->next_vid));
			out->next_is_prefix = false;
		}
		obj_versions_free(v, nv);
	}
	if (!out->truncated) {
		free(out->next_key);
		out->next_key = NULL;
		out->next_vid[0] = '\0';
		out->next_is_prefix = false;
	}
	cands_free(c, nc);
	if ((rc = obj_bucket_current(s, b, NULL)) < 0)
		spx_obj_versions_release(out);
	return rc;
}
