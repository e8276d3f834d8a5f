/* fuzz_jsonr: the JSON pull reader against jansson. Any input: the
 * reader accepts it exactly when jansson does (JSON_DECODE_ANY, at
 * jansson's depth limit; inputs with a NUL byte aside, below), and the
 * document it reads, rebuilt as a jansson tree, equals jansson's. */
#include "spx.h"

#include <jansson.h>
#include <stdlib.h>

#include "jsonr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *value(struct spx_jr *j);

static json_t *number(struct spx_jr *j)
{
	const char *t;
	size_t n;
	bool is_int;
	char *buf;
	int64_t v;
	json_t *r = NULL;

	if (!spx_jr_num(j, &t, &n, &is_int))
		return NULL;
	buf = strndup(t, n);
	if (is_int) {
		struct spx_jr k;

		/* spx_jr_int on the number's own text. */
		spx_jr_init(&k, buf, n);
		if (spx_jr_int(&k, &v))
			r = json_integer(v);
		spx_jr_release(&k);
		if (!r)
			j->failed = true;
		free(buf);
		return r;
	}
	{
		struct spx_jr k;
		bool ok;

		/* spx_jr_skip checks a real's range. */
		spx_jr_init(&k, buf, n);
		ok = spx_jr_skip(&k);
		spx_jr_release(&k);
		if (ok)
			r = json_real(strtod(buf, NULL));
		else
			j->failed = true;
	}
	free(buf);
	return r;
}

static json_t *value(struct spx_jr *j)
{
	json_t *o, *v;
	char *k;
	bool b;
	int r;

	switch (spx_jr_peek(j)) {
	case SPX_JR_OBJ:
		if (!spx_jr_obj(j))
			return NULL;
		o = json_object();
		while ((r = spx_jr_key(j)) == 1) {
			k = strndup(j->s.p, j->s.len);
			v = value(j);
			if (!v) {
				free(k);
				json_decref(o);
				return NULL;
			}
			json_object_set_new(o, k, v);
			free(k);
		}
		if (r < 0) {
			json_decref(o);
			return NULL;
		}
		return o;
	case SPX_JR_ARR:
		if (!spx_jr_arr(j))
			return NULL;
		o = json_array();
		while ((r = spx_jr_item(j)) == 1) {
			v = value(j);
			if (!v) {
				json_decref(o);
				return NULL;
			}
			json_array_append_new(o, v);
		}
		if (r < 0) {
			json_decref(o);
			return NULL;
		}
		return o;
	case SPX_JR_STR:
		if (!spx_jr_str(j))
			return NULL;
		if (memchr(j->s.p, 0, j->s.len))
			abort();
		return json_stringn(j->s.p, j->s.len);
	case SPX_JR_NUM:
		return number(j);
	case SPX_JR_TRUE:
	case SPX_JR_FALSE:
		return spx_jr_bool(j, &b) ? json_boolean(b) : NULL;
	case SPX_JR_NULL:
		return spx_jr_null(j) ? json_null() : NULL;
	default:
		j->failed = true;
		return NULL;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_jr j;
	json_error_t je;
	json_t *want, *got;
	bool skip_ok;

	if (size > 4096)
		return 0;
	want = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
	spx_jr_init(&j, (const char *)data, size);
	j.max_depth = 2048;
	got = value(&j);
	if (got && !spx_jr_end(&j)) {
		json_decref(got);
		got = NULL;
	}
	spx_jr_release(&j);
	/* skip accepts the same documents. */
	spx_jr_init(&j, (const char *)data, size);
	j.max_depth = 2048;
	skip_ok = spx_jr_skip(&j) && spx_jr_end(&j);
	spx_jr_release(&j);
	/* jansson swallows a NUL byte after a number ("[1\0]" is [1] to
	 * it); the reader refuses NUL anywhere outside a string's escapes.
	 * With a NUL in the input, only what the reader accepts is
	 * compared. */
	if (skip_ok != !!got || (got && !want) ||
	    (want && !got && !memchr(data, 0, size)))
		abort();
	if (got && !json_equal(want, got))
		abort();
	json_decref(want);
	json_decref(got);
	return 0;
}
