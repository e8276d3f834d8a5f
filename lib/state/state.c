/* state.c: the backend-independent half of the record store: URL parsing,
 * validation of keys, prefixes and values, dispatch to a backend, sorting
 * of lists and the update loop. See state.h for the contract. */
#include "spx.h"

#include <pthread.h>

#include "state/state.h"

struct spx_state {
	const struct spx_state_ops *ops;
	void *be;
};

static const struct spx_state_ops *const backends[] = {
	&spx_state_dir_ops,
};

int spx_state_status(int rc)
{
	switch (rc) {
	case SPX_STATE_OK:
		return SPX_OK;
	case SPX_STATE_NOTFOUND:
	case SPX_STATE_EXISTS:
	case SPX_STATE_CONFLICT:
		return SPX_NO;
	case SPX_STATE_INVALID:
		return SPX_USAGE;
	default:
		return SPX_FAIL;
	}
}

const char *spx_state_strrc(int rc)
{
	switch (rc) {
	case SPX_STATE_OK:
		return "ok";
	case SPX_STATE_NOTFOUND:
		return "not found";
	case SPX_STATE_EXISTS:
		return "exists";
	case SPX_STATE_CONFLICT:
		return "conflict";
	case SPX_STATE_INVALID:
		return "invalid";
	default:
		return "failure";
	}
}

int spx_state_error(int rc, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	spx_error(spx_state_status(rc), "%s", msg);
	return rc < 0 ? rc : SPX_STATE_FAIL;
}

static int key_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* Check s[0..n) as a key (partial 0) or as a prefix (partial 1: may be
 * empty, may end with '/' or inside a component). */
static int check_key(const char *s, size_t n, int partial)
{
	size_t comp = 0;

	if (n > SPX_STATE_KEY_MAX || (!partial && !n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '/') {
			if (!comp)
				return 0;
			comp = 0;
			continue;
		}
		if (!key_char((unsigned char)s[i]))
			return 0;
		if (!comp && s[i] == '.')
			return 0;
		if (++comp > SPX_STATE_COMPONENT_MAX)
			return 0;
	}
	return partial || comp;
}

int spx_state_key_valid(const char *key)
{
	return key && check_key(key, strnlen(key, SPX_STATE_KEY_MAX + 1), 0);
}

static int need_key(const char *key)
{
	if (!spx_state_key_valid(key))
		return spx_state_error(SPX_STATE_INVALID, "invalid key '%.*s'",
				       SPX_STATE_KEY_MAX, key ? key : "");
	return 0;
}

static int need_value(const char *key, const void *val, size_t len)
{
	if (len > SPX_STATE_VALUE_MAX)
		return spx_state_error(SPX_STATE_INVALID,
				       "value of '%s' is too large: %zu bytes, "
				       "at most %d", key, len,
				       SPX_STATE_VALUE_MAX);
	if (len && !val)
		return spx_state_error(SPX_STATE_INVALID,
				       "value of '%s' is NULL", key);
	return 0;
}

int spx_state_open(const char *url, unsigned flags, struct spx_state **out)
{
	const struct spx_state_ops *ops = NULL;
	const char *arg = url, *colon;
	struct spx_state *st;
	size_t n;
	int rc;

	*out = NULL;
	if (!url || !*url)
		return spx_state_error(SPX_STATE_INVALID, "empty store URL");
	if (flags & ~(unsigned)(SPX_STATE_CREATE | SPX_STATE_UNSAFE_NOSYNC))
		return spx_state_error(SPX_STATE_INVALID,
				       "bad flags %#x opening '%s'", flags, url);
	/* A scheme is lowercase letters before the first ':'; a path with a
	 * '/' before any ':' is a dir path. */
	colon = strchr(url, ':');
	n = colon ? (size_t)(colon - url) : 0;
	if (colon && n && strspn(url, "abcdefghijklmnopqrstuvwxyz") == n) {
		for (size_t i = 0; i < SPX_ARRAY_SIZE(backends); i++)
			if (strlen(backends[i]->scheme) == n &&
			    !memcmp(backends[i]->scheme, url, n))
				ops = backends[i];
		if (!ops)
			return spx_state_error(SPX_STATE_INVALID,
					       "unknown store type '%.*s' in '%s'",
					       (int)n, url, url);
		arg = colon + 1;
	} else if (colon && !memchr(url, '/', n)) {
		return spx_state_error(SPX_STATE_INVALID,
				       "bad store URL '%s' (write dir:PATH)",
				       url);
	} else {
		ops = &spx_state_dir_ops;
	}
	st = spx_calloc(1, sizeof(*st));
	st->ops = ops;
	rc = ops->open(arg, flags, &st->be);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*out = st;
	return 0;
}

void spx_state_close(struct spx_state *st)
{
	if (!st)
		return;
	st->ops->close(st->be);
	free(st);
}

int spx_state_get(struct spx_state *st, const char *key,
		  struct spx_buf *value, uint64_t *rev)
{
	struct spx_buf tmp = SPX_BUF_INIT;
	uint64_t r = 0;
	int rc;

	if (rev)
		*rev = 0;
	if ((rc = need_key(key)) < 0)
		return rc;
	if (value)
		spx_buf_reset(value);
	rc = st->ops->get(st->be, key, value ? value : &tmp, &r);
	spx_buf_release(&tmp);
	if (rc < 0) {
		if (value)
			spx_buf_reset(value);
		return rc;
	}
	if (rev)
		*rev = r;
	return 0;
}

int spx_state_create(struct spx_state *st, const char *key, const void *val,
		     size_t len, uint64_t *rev)
{
	uint64_t r = 0;
	int rc;

	if (rev)
		*rev = 0;
	if ((rc = need_key(key)) < 0 || (rc = need_value(key, val, len)) < 0)
		return rc;
	if ((rc = st->ops->create(st->be, key, val, len, &r)) < 0)
		return rc;
	if (rev)
		*rev = r;
	return 0;
}

int spx_state_put(struct spx_state *st, const char *key, const void *val,
		  size_t len, uint64_t expect, uint64_t *rev)
{
	uint64_t r = 0;
	int rc;

	if (rev)
		*rev = 0;
	if ((rc = need_key(key)) < 0 || (rc = need_value(key, val, len)) < 0)
		return rc;
	if ((rc = st->ops->put(st->be, key, val, len, expect, &r)) < 0)
		return rc;
	if (rev)
		*rev = r;
	return 0;
}

int spx_state_delete(struct spx_state *st, const char *key, uint64_t expect)
{
	int rc;

	if ((rc = need_key(key)) < 0)
		return rc;
	return st->ops->del(st->be, key, expect);
}

/* A small per-thread generator for backoff jitter. */
static uint64_t jitter(void)
{
	static _Thread_local uint64_t s;
	struct timespec ts;

	if (!s) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
		    ((uint64_t)getpid() << 16) ^ (uint64_t)(uintptr_t)&s;
		s |= 1;
	}
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

static void backoff(int attempt)
{
	long cap = 100000L << (attempt < 8 ? attempt : 8); /* ns */
	struct timespec ts;

	if (cap > 20000000L)
		cap = 20000000L;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)(jitter() % (uint64_t)cap);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int spx_state_update(struct spx_state *st, const char *key,
		     spx_state_update_fn *fn, void *ctx, uint64_t *rev)
{
	struct spx_buf old = SPX_BUF_INIT, out = SPX_BUF_INIT;
	uint64_t cur, r = 0;
	int rc, present;

	if (rev)
		*rev = 0;
	if ((rc = need_key(key)) < 0)
		return rc;
	for (int attempt = 0; attempt < SPX_STATE_UPDATE_TRIES; attempt++) {
		if (attempt)
			backoff(attempt - 1);
		rc = spx_state_get(st, key, &old, &cur);
		if (rc < 0 && rc != SPX_STATE_NOTFOUND)
			goto out;
		present = rc == 0;
		spx_buf_reset(&out);
		rc = fn(ctx, present ? &old : NULL, present ? cur : 0, &out);
		if (rc < 0)
			goto out;
		if (rc > 0) {
			if (!present) {
				rc = spx_state_error(SPX_STATE_NOTFOUND,
						     "no record '%s'", key);
				goto out;
			}
			r = cur;
			rc = 0;
			goto out;
		}
		if ((rc = need_value(key, out.p, out.len)) < 0)
			goto out;
		if (present)
			rc = st->ops->put(st->be, key, out.p, out.len, cur, &r);
		else
			rc = st->ops->create(st->be, key, out.p, out.len, &r);
		/* Someone wrote, created or deleted the record since we read
		 * it: read it again. */
		if (rc == SPX_STATE_CONFLICT || rc == SPX_STATE_EXISTS ||
		    (rc == SPX_STATE_NOTFOUND && present))
			continue;
		goto out;
	}
	rc = spx_state_error(SPX_STATE_CONFLICT,
			     "cannot update '%s': %d conflicting writes", key,
			     SPX_STATE_UPDATE_TRIES);
out:
	spx_buf_release(&old);
	spx_buf_release(&out);
	if (rc == 0 && rev)
		*rev = r;
	return rc;
}

void spx_state_list_add(struct spx_state_list *l, const char *key,
			uint64_t rev, int with_rev)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->key = spx_realloc(l->key, l->cap * sizeof(*l->key));
		if (with_rev || l->rev)
			l->rev = spx_realloc(l->rev, l->cap * sizeof(*l->rev));
	}
	l->key[l->n] = spx_strdup(key);
	if (l->rev)
		l->rev[l->n] = rev;
	l->n++;
}

void spx_state_list_release(struct spx_state_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->key[i]);
	free(l->key);
	free(l->rev);
	l->key = NULL;
	l->rev = NULL;
	l->n = l->cap = 0;
}

static int cmp_index(const void *a, const void *b, void *arg)
{
	char **key = arg;

	return strcmp(key[*(const size_t *)a], key[*(const size_t *)b]);
}

/* Sort keys bytewise, carrying revisions along. */
static void list_sort(struct spx_state_list *l)
{
	size_t *ix;
	char **k;
	uint64_t *r = NULL;

	if (l->n < 2)
		return;
	ix = spx_calloc(l->n, sizeof(*ix));
	for (size_t i = 0; i < l->n; i++)
		ix[i] = i;
	qsort_r(ix, l->n, sizeof(*ix), cmp_index, l->key);
	k = spx_calloc(l->n, sizeof(*k));
	if (l->rev)
		r = spx_calloc(l->n, sizeof(*r));
	for (size_t i = 0; i < l->n; i++) {
		k[i] = l->key[ix[i]];
		if (r)
			r[i] = l->rev[ix[i]];
	}
	memcpy(l->key, k, l->n * sizeof(*k));
	if (r)
		memcpy(l->rev, r, l->n * sizeof(*r));
	free(k);
	free(r);
	free(ix);
}

int spx_state_list(struct spx_state *st, const char *prefix, unsigned flags,
		   struct spx_state_list *out)
{
	int rc;

	if (!prefix || !check_key(prefix, strnlen(prefix, SPX_STATE_KEY_MAX + 1),
				  1))
		return spx_state_error(SPX_STATE_INVALID, "invalid prefix '%.*s'",
				       SPX_STATE_KEY_MAX, prefix ? prefix : "");
	if (flags & ~(unsigned)SPX_STATE_LIST_REVS)
		return spx_state_error(SPX_STATE_INVALID,
				       "bad flags %#x listing '%s'", flags,
				       prefix);
	if (out->n)
		return spx_state_error(SPX_STATE_INVALID,
				       "listing '%s' into a list that is not "
				       "empty", prefix);
	/* Drop the arrays of an empty list, so that rev is allocated along
	 * with key exactly when revisions are asked for. */
	spx_state_list_release(out);
	rc = st->ops->list(st->be, prefix, flags, out);
	if (rc < 0) {
		spx_state_list_release(out);
		return rc;
	}
	list_sort(out);
	return 0;
}

int spx_state_sweep(struct spx_state *st, size_t *removed)
{
	if (removed)
		*removed = 0;
	if (!st->ops->sweep)
		return 0;
	return st->ops->sweep(st->be, removed ? removed : &(size_t){ 0 });
}
