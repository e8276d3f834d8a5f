/* fuzz_form: the multipart/form-data reader on arbitrary input.
 *
 * Input: "Content-Type\n" then the body. The body is read whole, then in
 * slices whose size comes from its first byte: both readings must give
 * the same fields, the same file content and the same verdict, and the
 * fields must stay within SPX_FORM_FIELDS_MAX. */
#include "spx.h"

#include "http/form.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct log {
	struct spx_buf b;
	size_t fields;
	bool in_file;
};

static int on_field(void *arg, const char *name, const char *v, size_t n)
{
	struct log *l = arg;

	if (l->in_file || v[n] != '\0' || strlen(name) > SPX_FORM_NAME_MAX)
		abort();
	l->fields += n;
	if (l->fields > SPX_FORM_FIELDS_MAX)
		abort();
	spx_buf_addf(&l->b, "F%s=%zu:", name, n);
	spx_buf_add(&l->b, v, n);
	return 0;
}

static int on_begin(void *arg, const char *fn, const char *ct)
{
	struct log *l = arg;

	if (l->in_file)
		abort();
	l->in_file = true;
	spx_buf_addf(&l->b, "B%s|%s|", fn, ct ? ct : "");
	return 0;
}

static int on_data(void *arg, const void *p, size_t n)
{
	struct log *l = arg;

	if (!l->in_file || !n)
		abort();
	spx_buf_add(&l->b, p, n); /* pieces joined: compared whole */
	return 0;
}

static int on_end(void *arg)
{
	struct log *l = arg;

	if (!l->in_file)
		abort();
	l->in_file = false;
	spx_buf_addc(&l->b, 'E');
	return 0;
}

static const struct spx_form_cb cb = { on_field, on_begin, on_data, on_end };

static enum spx_form_err run(const char *ct, const char *body, size_t len,
			     size_t step, struct log *l)
{
	struct spx_form f;
	enum spx_form_err e = SPX_FORM_OK;

	if (spx_form_init(&f, ct, &cb, l) < 0) {
		spx_form_release(&f);
		return SPX_FORM_ECONTENT_TYPE;
	}
	for (size_t off = 0; off < len && !e;) {
		size_t n = step && step < len - off ? step : len - off;

		e = spx_form_feed(&f, body + off, n);
		if ((unsigned)e >= SPX_FORM_NERR)
			abort();
		off += n;
	}
	if (!e)
		e = spx_form_finish(&f);
	if (f.in.len > SPX_FORM_HEAD_MAX + 8 + len)
		abort();
	spx_form_release(&f);
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *nl = memchr(p, '\n', size);
	struct log a = { SPX_BUF_INIT, 0, false }, b = { SPX_BUF_INIT, 0, false };
	size_t len, step;
	char *ct;
	enum spx_form_err ea, eb;

	if (!nl)
		return 0;
	ct = spx_strndup(p, (size_t)(nl - p));
	p = nl + 1;
	len = size - (size_t)(p - (const char *)data);
	step = len ? (unsigned char)p[0] % 23 + 1 : 1;
	ea = run(ct, p, len, 0, &a);
	eb = run(ct, p, len, step, &b);
	/* A failure may be found at another point when the input comes in
	 * pieces (a header block over its bound, say), but never another
	 * verdict, and what was handed on agrees up to there. */
	if (ea != eb)
		abort();
	if (!ea && (a.b.len != b.b.len || memcmp(a.b.p, b.b.p, a.b.len)))
		abort();
	if (!spx_form_strerror(ea))
		abort();
	free(ct);
	spx_buf_release(&a.b);
	spx_buf_release(&b.b);
	return 0;
}
