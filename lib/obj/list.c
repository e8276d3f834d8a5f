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

int spx_obj_list(struct spx_obj *s, const char *bucket,
		 const struct spx_obj_list_opts *o, struct spx_obj_list *out)
{
	const char *prefix = o && o->prefix ? o->prefix : "";
	const char *after = o && o->after ? o->after : NULL;
	const char *delim = o && o->delimiter && *o->delimiter ? o->delimiter : NULL;
	size_t max = o && o->max ? o->max : 1000, plen = strlen(prefix), nc = 0,
	       cap = 0;
	struct spx_buf kb = SPX_BUF_INIT;
	struct cand *c = NULL;
	struct dirent *e;
	char *odir;
	DIR *dp;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = obj_bucket_check(s, bucket)) < 0)
		return rc;
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
		if (strncmp(key, prefix, plen) || (after && strcmp(key, after) <= 0))
			continue;
		/* After a common prefix, skip the keys it rolled up. */
		if (after && delim && !strncmp(key, after, strlen(after)) &&
		    strlen(after) >= strlen(delim) &&
		    !strcmp(after + strlen(after) - strlen(delim), delim) &&
		    !strncmp(after, prefix, plen) &&
		    strstr(after + plen, delim) ==
			    after + strlen(after) - strlen(delim))
			continue;
		if (nc == cap) {
			cap = cap ? 2 * cap : 256;
			c = spx_realloc(c, cap * sizeof(*c));
		}
		c[nc].key = spx_strdup(key);
		c[nc].enc = spx_strdup(e->d_name);
		nc++;
	}
	closedir(dp);
	free(odir);
	if (nc)
		qsort(c, nc, sizeof(*c), cand_cmp);
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
			spx_obj_meta_release(&m);
			spx_error_clear();
			if (r == SPX_OBJ_NO_SUCH_KEY)
				continue;
			out->truncated = true;
			break;
		}
		r = read_meta(s, bucket, c[i].enc, &m);
		if (r < 0) {
			spx_error_clear();
			spx_obj_meta_release(&m);
			continue; /* a write in progress, or damage: heal */
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
			if (out->nprefixes == capp) {
				capp = capp ? 2 * capp : 16;
				out->prefixes = spx_realloc(out->prefixes,
							    capp * sizeof(char *));
			}
			out->prefixes[out->nprefixes++] = p;
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
	for (size_t i = 0; i < nc; i++) {
		free(c[i].key);
		free(c[i].enc);
	}
	free(c);
	spx_buf_release(&kb);
	return rc;
}
