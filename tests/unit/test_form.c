/* Unit tests for lib/http/form: the multipart/form-data reader, whole and
 * fed in every split, and its refusals. */
#include "spx.h"

#include "http/form.h"

#include "t.h"

struct got {
	struct spx_buf log; /* "name=value;" ... "file(name,type)=...;" */
	int fail_at;	    /* refuse the n-th callback (0: never) */
	int calls;
};

static int refuse(struct got *g)
{
	return ++g->calls == g->fail_at ? -1 : 0;
}

static int on_field(void *arg, const char *name, const char *v, size_t n)
{
	struct got *g = arg;

	if (strlen(v) != n && memchr(v, '\0', n) == NULL)
		abort();
	spx_buf_addf(&g->log, "%s=", name);
	spx_buf_add(&g->log, v, n);
	spx_buf_addc(&g->log, ';');
	return refuse(g);
}

static int on_begin(void *arg, const char *fn, const char *ct)
{
	struct got *g = arg;

	spx_buf_addf(&g->log, "file(%s,%s)=", fn, ct ? ct : "-");
	return refuse(g);
}

static int on_data(void *arg, const void *p, size_t n)
{
	struct got *g = arg;

	spx_buf_add(&g->log, p, n);
	return refuse(g) < 0 ? -1 : 0;
}

static int on_end(void *arg)
{
	struct got *g = arg;

	spx_buf_addc(&g->log, ';');
	return refuse(g);
}

static const struct spx_form_cb cb = { on_field, on_begin, on_data, on_end };

#define CT "multipart/form-data; boundary=XyZ"
#define S(lit) lit, sizeof(lit) - 1

/* Feed body in pieces of `step` bytes (0: whole); the log, or the error. */
static enum spx_form_err read_form(const char *ct, const char *body,
				   size_t len, size_t step, struct got *g)
{
	struct spx_form f;
	enum spx_form_err e = SPX_FORM_OK;

	spx_buf_reset(&g->log);
	g->calls = 0;
	if (spx_form_init(&f, ct, &cb, g) < 0) {
		spx_form_release(&f);
		return SPX_FORM_ECONTENT_TYPE;
	}
	for (size_t off = 0; off < len && !e;) {
		size_t n = step && step < len - off ? step : len - off;

		e = spx_form_feed(&f, body + off, n);
		off += n;
	}
	if (!e)
		e = spx_form_finish(&f);
	spx_form_release(&f);
	spx_buf_addc(&g->log, '\0');
	g->log.len--;
	return e;
}

static const char good[] =
	"preamble, ignored\r\n"
	"--XyZ\r\n"
	"Content-Disposition: form-data; name=\"key\"\r\n"
	"\r\n"
	"user/${filename}\r\n"
	"--XyZ  \r\n"
	"content-disposition: form-data; name=policy\r\n"
	"\r\n"
	"\r\n"
	"--XyZ\r\n"
	"Content-Disposition: form-data; name=\"x-amz-meta-a\"\r\n"
	"Content-Type: text/plain\r\n"
	"\r\n"
	"line one\r\nline two --XyZ not a delimiter\r\n"
	"--XyZ\r\n"
	"Content-Disposition: form-data; name=\"file\"; filename=\"a b.txt\"\r\n"
	"Content-Type: image/png\r\n"
	"\r\n"
	"\r\n--Xy\r\n-\n--XyZa\0binary\r\n"
	"--XyZ\r\n"
	"Content-Disposition: form-data; name=\"after\"\r\n"
	"\r\n"
	"ignored\r\n"
	"--XyZ--\r\n"
	"epilogue";

static const char good_log[] =
	"key=user/${filename};policy=;x-amz-meta-a=line one\r\nline two "
	"--XyZ not a delimiter;file(a b.txt,image/png)=\r\n--Xy\r\n-\n"
	"--XyZa\0binary;";

static void test_good(void)
{
	struct got g = { SPX_BUF_INIT, 0, 0 };
	size_t len = sizeof(good) - 1;
	bool all = true;

	T_INT(read_form(CT, good, len, 0, &g), SPX_FORM_OK, "whole");
	T_OK(g.log.len == sizeof(good_log) - 1 &&
		     !memcmp(g.log.p, good_log, g.log.len),
	     "whole: fields, file content with near-delimiters, the part "
	     "after the file left out");
	for (size_t step = 1; step < len; step++) {
		enum spx_form_err e = read_form(CT, good, len, step, &g);

		if (e || g.log.len != sizeof(good_log) - 1 ||
		    memcmp(g.log.p, good_log, g.log.len)) {
			T_OK(false, "fed %zu bytes at a time: %s", step,
			     spx_form_strerror(e));
			all = false;
			break;
		}
	}
	T_OK(all, "the same whatever the pieces");
	T_INT(read_form("Multipart/Form-Data ; charset=utf-8; "
			"BOUNDARY=\"XyZ\"",
			good, len, 7, &g),
	      SPX_FORM_OK, "a quoted boundary among other parameters");
	/* An empty file, and no preamble. */
	T_INT(read_form(CT, S("--XyZ\r\nContent-Disposition: form-data; name=file\r\n"
			"\r\n\r\n--XyZ--"), 0, &g),
	      SPX_FORM_OK, "an empty file");
	T_STR(g.log.p, "file(,-)=;", "an empty file: no name, no type");
	spx_buf_release(&g.log);
}

static void test_refusals(void)
{
	struct got g = { SPX_BUF_INIT, 0, 0 };
	char big[SPX_FORM_FIELDS_MAX + 200];
	struct spx_buf b = SPX_BUF_INIT;

	T_INT(read_form("text/plain; boundary=XyZ", good, 10, 0, &g),
	      SPX_FORM_ECONTENT_TYPE, "another type");
	T_INT(read_form("multipart/form-data", good, 10, 0, &g),
	      SPX_FORM_ECONTENT_TYPE, "no boundary");
	T_INT(read_form("multipart/form-data; boundary=", good, 10, 0, &g),
	      SPX_FORM_ECONTENT_TYPE, "an empty boundary");
	T_INT(read_form("multipart/form-data; boundary=a\x01", good, 10, 0,
			&g),
	      SPX_FORM_ECONTENT_TYPE, "a control character in the boundary");
	T_INT(read_form("multipart/form-data; boundary=\"abc", good, 10, 0,
			&g),
	      SPX_FORM_ECONTENT_TYPE, "an unclosed quote");
	memset(big, 'b', 71);
	big[71] = '\0';
	spx_buf_addf(&b, "multipart/form-data; boundary=%s", big);
	T_INT(read_form(b.p, good, 10, 0, &g), SPX_FORM_ECONTENT_TYPE,
	      "a boundary of 71");
	T_INT(read_form(CT, good, sizeof(good) - 20, 3, &g),
	      SPX_FORM_ETRUNCATED, "cut before the closing delimiter");
	T_INT(read_form(CT, S("--XyZ\r\nContent-Disposition: form-data; name=a\r\n"
			"\r\nv\r\n--XyZ--"), 0, &g),
	      SPX_FORM_ENOFILE, "no file");
	T_INT(read_form(CT, S("--XyZ\r\nContent-Type: a\r\n\r\nv\r\n--XyZ--"), 0, &g),
	      SPX_FORM_EMALFORMED, "a part without Content-Disposition");
	T_INT(read_form(CT, S("--XyZ\r\n\r\nv\r\n--XyZ--"), 0, &g),
	      SPX_FORM_EMALFORMED, "a part without headers");
	T_INT(read_form(CT, S("--XyZ\r\nContent-Disposition: attachment; "
			"name=a\r\n\r\nv\r\n--XyZ--"), 0, &g),
	      SPX_FORM_EMALFORMED, "not form-data");
	T_INT(read_form(CT, S("--XyZ\r\nContent-Disposition: form-data; "
			"name=a; name=b\r\n\r\nv\r\n--XyZ--"), 0, &g),
	      SPX_FORM_EMALFORMED, "two names");
	T_INT(read_form(CT, S("--XyZ\r\nContent-Disposition: form-data; "
			"name=\"a\r\n\r\nv\r\n--XyZ--"), 0, &g),
	      SPX_FORM_EMALFORMED, "an unclosed quoted name");
	T_INT(read_form(CT, S("--XyZ\r\nno colon\r\n\r\nv\r\n--XyZ--"), 0, &g),
	      SPX_FORM_EMALFORMED, "a header line without a colon");
	T_INT(read_form(CT, S("--XyZjunk\r\n"), 0, &g), SPX_FORM_EMALFORMED,
	      "junk after a delimiter");
	T_INT(read_form(CT, S("--XyZ\r\nContent-Disposition: form-data; "
			"name=a\0b\r\n\r\nv\r\n--XyZ--"), 0, &g),
	      SPX_FORM_EMALFORMED, "a NUL in the header block");
	/* Fields over the bound, a header block over its bound. */
	spx_buf_reset(&b);
	memset(big, 'v', sizeof(big));
	spx_buf_adds(&b, "--XyZ\r\nContent-Disposition: form-data; name=a\r\n"
			 "\r\n");
	spx_buf_add(&b, big, sizeof(big));
	spx_buf_adds(&b, "\r\n--XyZ--");
	T_INT(read_form(CT, b.p, b.len, 4096, &g), SPX_FORM_ETOOBIG,
	      "fields over SPX_FORM_FIELDS_MAX");
	spx_buf_reset(&b);
	spx_buf_adds(&b, "--XyZ\r\nContent-Disposition: form-data; name=a\r\n"
			 "X-Pad: ");
	spx_buf_add(&b, big, SPX_FORM_HEAD_MAX);
	spx_buf_adds(&b, "\r\n\r\nv\r\n--XyZ--");
	T_INT(read_form(CT, b.p, b.len, 1000, &g), SPX_FORM_ETOOBIG,
	      "a header block over SPX_FORM_HEAD_MAX");
	/* A callback's refusal stops the reader. */
	for (int i = 1; i <= 5; i++) {
		g.fail_at = i;
		T_INT(read_form(CT, good, sizeof(good) - 1, 0, &g),
		      SPX_FORM_ECALLBACK, "callback %d refuses", i);
	}
	g.fail_at = 0;
	for (int e = 0; e <= SPX_FORM_NERR; e++)
		T_OK(spx_form_strerror((enum spx_form_err)e) != NULL,
		     "strerror %d", e);
	spx_buf_release(&b);
	spx_buf_release(&g.log);
}

int main(void)
{
	test_good();
	test_refusals();
	return t_done();
}
