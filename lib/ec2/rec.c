/* rec.c: EC2 resources as JSON records (see rec.h). */
#include "spx.h"

#include "buf.h"
#include "ec2/fault.h"
#include "ec2/rec.h"
#include "ec2/tags.h"
#include "state/state.h"
#include "utf8.h"

/* spx_ec2_rec_get reading through b, which a caller reading many
 * records keeps: one buffer for all, not a large allocation each (each
 * makes malloc gather its small free chunks, a fifth of a
 * DescribeInstances of 1000 records once). */
static int rec_load(struct spx_state *st, const char *key, struct spx_buf *b,
		    json_t **out, uint64_t *rev)
{
	int rc = spx_state_get(st, key, b, rev);

	*out = NULL;
	if (rc == 0) {
		*out = json_loadb(b->p, b->len, 0, NULL);
		if (!*out)
			rc = spx_state_error(SPX_STATE_FAIL,
					     "record '%s' is not JSON", key);
	}
	return rc;
}

int spx_ec2_rec_get(struct spx_state *st, const char *key, json_t **out,
		    uint64_t *rev)
{
	struct spx_buf b = SPX_BUF_INIT;
	int rc = rec_load(st, key, &b, out, rev);

	spx_buf_release(&b);
	return rc;
}

int spx_ec2_rec_put(struct spx_state *st, const char *key, const json_t *v,
		    bool create, uint64_t expect)
{
	char *s = json_dumps(v, JSON_COMPACT);
	int rc;

	if (!s)
		return spx_state_error(SPX_STATE_FAIL, "cannot encode '%s'", key);
	rc = create ? spx_state_create(st, key, s, strlen(s), NULL)
		    : spx_state_put(st, key, s, strlen(s), expect, NULL);
	free(s);
	return rc;
}

struct change {
	int (*fn)(json_t *rec, void *arg);
	void *arg;
	const char *key;
	bool missing, faulted;
};

static int change_fn(void *ctx, const struct spx_buf *old, uint64_t rev,
		     struct spx_buf *out)
{
	struct change *c = ctx;
	json_t *rec;
	char *s;
	int rc;

	(void)rev;
	c->faulted = false;
	if (!old) {
		c->missing = true;
		return 1;
	}
	rec = json_loadb(old->p, old->len, 0, NULL);
	if (!rec)
		return spx_state_error(SPX_STATE_FAIL, "record '%s' is not JSON",
				       c->key);
	rc = c->fn(rec, c->arg);
	if (rc < 0) {
		c->faulted = true;
	} else if (rc == 0) {
		s = json_dumps(rec, JSON_COMPACT);
		if (s)
			spx_buf_adds(out, s);
		else
			rc = spx_state_error(SPX_STATE_FAIL,
					     "cannot encode '%s'", c->key);
		free(s);
	}
	json_decref(rec);
	return rc;
}

int spx_ec2_rec_change(struct spx_state *st, const char *key,
		       int (*fn)(json_t *rec, void *arg), void *arg)
{
	struct change c = { fn, arg, key, false, false };
	int rc = spx_state_update(st, key, change_fn, &c, NULL);

	if (c.missing || rc == SPX_STATE_NOTFOUND)
		return SPX_STATE_NOTFOUND;
	if (rc < 0 && c.faulted)
		return -1;
	return rc < 0 ? spx_ec2_state_fail(rc) : 0;
}

bool spx_ec2_id_wellformed(const char *id, const char *prefix)
{
	size_t p = strlen(prefix), n = id ? strlen(id) : 0;

	if (n <= p || strncmp(id, prefix, p) || id[p] != '-' ||
	    (n - p - 1 != 8 && n - p - 1 != 17))
		return false;
	for (size_t i = p + 1; i < n; i++)
		if (!strchr("0123456789abcdef", id[i]))
			return false;
	return true;
}

void spx_ec2_rec_strip(json_t *rec)
{
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(rec, tmp, k, v)
		if (!strncmp(k, "Spx", 3))
			json_object_del(rec, k);
}

json_t *spx_ec2_rec_item(const json_t *rec)
{
	json_t *it = json_deep_copy(rec);

	spx_ec2_rec_strip(it);
	return it;
}

int spx_ec2_rec_tags(json_t *rec, const json_t *set, const json_t *unset)
{
	json_t *have = json_object_get(rec, "Tags");

	if (!json_is_array(have)) {
		have = json_array();
		json_object_set_new(rec, "Tags", have);
	}
	if (unset)
		spx_ec2_tags_remove(have, unset);
	if (set && spx_ec2_tags_merge(have, set) < 0)
		return -1;
	return 0;
}

int spx_ec2_state_fail(int rc)
{
	return spx_ec2_fault(500, "InternalError",
			     "An internal error has occurred (%s)",
			     spx_state_strrc(rc));
}

static int by_key(const void *a, const void *b, void *key)
{
	const json_t *p = *(json_t *const *)a, *q = *(json_t *const *)b;
	const char *x = json_string_value(key ? json_object_get(p, key) : p);
	const char *y = json_string_value(key ? json_object_get(q, key) : q);

	return strcmp(x ? x : "", y ? y : "");
}

void spx_ec2_sort_by(json_t *arr, const char *key)
{
	size_t n = json_array_size(arr), i;
	json_t **v, *e;

	if (n < 2)
		return;
	v = spx_calloc(n, sizeof(*v));
	json_array_foreach(arr, i, e)
		v[i] = json_incref(e);
	qsort_r(v, n, sizeof(*v), by_key, (void *)key);
	json_array_clear(arr);
	for (i = 0; i < n; i++)
		json_array_append_new(arr, v[i]);
	free(v);
}

bool spx_ec2_has_string(const json_t *arr, const char *s)
{
	const json_t *e;
	size_t i;

	json_array_foreach(arr, i, e) {
		const char *v = json_string_value(e);

		if (v && s && !strcmp(v, s))
			return true;
	}
	return false;
}

int spx_ec2_desc_check(const char *desc, long max)
{
	ssize_t n = desc ? spx_utf8_count(desc, strlen(desc)) : 0;

	if (n > max)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "The description is %zd characters long; "
				     "at most %ld are allowed.",
				     n, max);
	return 0;
}

char *spx_ec2_kind_key(const struct spx_ec2_kind *k, const char *account,
		       const char *id)
{
	return spx_xprintf("%s/%s/%s", k->dir, account, id);
}

int spx_ec2_kind_not_found(const struct spx_ec2_kind *k, const char *id)
{
	return spx_ec2_fault(400, k->not_found, "The %s '%s' does not exist.",
			     k->noun, id);
}

int spx_ec2_kind_malformed(const struct spx_ec2_kind *k, const char *id)
{
	return spx_ec2_fault(400, k->malformed,
			     "Invalid id: \"%s\" (expecting \"%s-...\")",
			     id ? id : "", k->prefix);
}

int spx_ec2_kind_get(struct spx_state *st, const struct spx_ec2_kind *k,
		     const char *account, const char *id, json_t **out,
		     uint64_t *rev)
{
	char *key;
	int rc;

	*out = NULL;
	if (!spx_ec2_id_wellformed(id, k->prefix))
		return spx_ec2_kind_malformed(k, id);
	key = spx_ec2_kind_key(k, account, id);
	rc = spx_ec2_rec_get(st, key, out, rev);
	free(key);
	if (rc == SPX_STATE_NOTFOUND)
		return spx_ec2_kind_not_found(k, id);
	return rc < 0 ? spx_ec2_state_fail(rc) : 0;
}

int spx_ec2_kind_change(struct spx_state *st, const struct spx_ec2_kind *k,
			const char *account, const char *id,
			int (*fn)(json_t *rec, void *arg), void *arg)
{
	char *key;
	int rc;

	if (!spx_ec2_id_wellformed(id, k->prefix))
		return spx_ec2_kind_malformed(k, id);
	key = spx_ec2_kind_key(k, account, id);
	rc = spx_ec2_rec_change(st, key, fn, arg);
	free(key);
	return rc == SPX_STATE_NOTFOUND ? spx_ec2_kind_not_found(k, id) : rc;
}

int spx_ec2_kind_list(struct spx_state *st, const struct spx_ec2_kind *k,
		      const char *account, json_t **out)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	struct spx_buf b = SPX_BUF_INIT;
	char *prefix = account ? spx_xprintf("%s/%s/", k->dir, account)
			       : spx_xprintf("%s/", k->dir);
	json_t *all = json_array();
	int rc = spx_state_list(st, prefix, 0, &l);

	*out = NULL;
	free(prefix);
	if (rc < 0) {
		json_decref(all);
		return spx_ec2_state_fail(rc);
	}
	for (size_t i = 0; i < l.n; i++) {
		json_t *r;

		rc = rec_load(st, l.key[i], &b, &r, NULL);
		if (rc == SPX_STATE_NOTFOUND)
			continue; /* deleted meanwhile */
		if (rc < 0 || !json_is_string(json_object_get(r, k->id_member))) {
			spx_log(SPX_LOG_WARN, "ec2: '%s' is unreadable%s%s",
				l.key[i], rc < 0 ? ": " : "",
				rc < 0 ? spx_errmsg() : "");
			json_decref(r);
			continue;
		}
		json_array_append_new(all, r);
	}
	spx_buf_release(&b);
	spx_state_list_release(&l);
	spx_error_clear();
	spx_ec2_sort_by(all, k->id_member);
	*out = all;
	return 0;
}
