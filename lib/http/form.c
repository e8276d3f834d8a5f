/* form.c: the streaming multipart/form-data reader (form.h).
 *
 * The input is read through one bounded window, in: every delimiter is
 * "\r\n--boundary" (a CRLF is put before the body so the first one is
 * too). In a part's body everything up to a delimiter is content; when
 * no delimiter is in the window, all but its last dlen - 1 bytes (which
 * may begin one) are content, so the window never holds more than one
 * piece of input and a delimiter's worth. */
#include "spx.h"

#include "http/form.h"

static bool is_bchar(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || strchr("'()+_,-./:=? ", c);
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* The next ';' parameter of a header value: name and value (a token, or
 * a quoted-string without its quotes) into bounded buffers. Returns the
 * rest, or NULL at the end or on a malformed one (*bad set). */
static const char *next_param(const char *p, char *name, size_t ncap,
			      char *val, size_t vcap, bool *bad)
{
	size_t n = 0;

	p = skip_ws(p);
	if (*p != ';')
		return *p ? (*bad = true, NULL) : NULL;
	p = skip_ws(p + 1);
	while (*p && *p != '=' && *p != ';' && *p != ' ' && *p != '\t') {
		if (n + 1 >= ncap)
			return *bad = true, NULL;
		name[n++] = *p++;
	}
	name[n] = '\0';
	p = skip_ws(p);
	n = 0;
	val[0] = '\0';
	if (*p != '=')
		return p; /* a parameter without a value */
	p = skip_ws(p + 1);
	if (*p == '"') {
		const char *q = strchr(++p, '"');

		if (!q || (size_t)(q - p) >= vcap)
			return *bad = true, NULL;
		memcpy(val, p, (size_t)(q - p));
		val[q - p] = '\0';
		return q + 1;
	}
	while (*p && *p != ';' && *p != ' ' && *p != '\t') {
		if (n + 1 >= vcap)
			return *bad = true, NULL;
		val[n++] = *p++;
	}
	val[n] = '\0';
	return p;
}

int spx_form_init(struct spx_form *f, const char *ct,
		  const struct spx_form_cb *cb, void *arg)
{
	char name[32], val[SPX_FORM_BOUNDARY_MAX + 2];
	const char *p;
	bool bad = false, got = false;
	size_t n;

	memset(f, 0, sizeof(*f));
	f->cb = cb;
	f->arg = arg;
	f->st = SPX_FORM_FAILED;
	f->err = SPX_FORM_ECONTENT_TYPE;
	spx_buf_init(&f->in, 0);
	spx_buf_init(&f->value, 0);
	if (!ct)
		return -1;
	p = skip_ws(ct);
	if (strncasecmp(p, "multipart/form-data", 19))
		return -1;
	p += 19;
	while ((p = next_param(p, name, sizeof(name), val, sizeof(val),
			       &bad))) {
		if (strcasecmp(name, "boundary"))
			continue;
		n = strlen(val);
		if (got || !n || n > SPX_FORM_BOUNDARY_MAX ||
		    val[n - 1] == ' ')
			return -1;
		for (size_t i = 0; i < n; i++)
			if (!is_bchar((unsigned char)val[i]))
				return -1;
		/* n <= SPX_FORM_BOUNDARY_MAX: delim holds it (form.h). */
		memcpy(f->delim, "\r\n--", 4);
		memcpy(f->delim + 4, val, n + 1);
		f->dlen = n + 4;
		got = true;
	}
	if (bad || !got)
		return -1;
	f->st = SPX_FORM_PREAMBLE;
	f->err = SPX_FORM_OK;
	spx_buf_add(&f->in, "\r\n", 2);
	return 0;
}

/* Drop the first n bytes of b. */
static void consume(struct spx_buf *b, size_t n)
{
	if (!n)
		return;
	memmove(b->p, b->p + n, b->len - n);
	spx_buf_setlen(b, b->len - n);
}

static enum spx_form_err failed(struct spx_form *f, enum spx_form_err e)
{
	f->st = SPX_FORM_FAILED;
	f->err = e;
	return e;
}

/* A part's header block [p, p+n) (without its blank line). */
static enum spx_form_err part_head(struct spx_form *f, const char *p,
				   size_t n)
{
	char cd[SPX_FORM_HEAD_MAX + 1], ctype[256] = "", *line, *save = NULL;
	char pname[32], pval[SPX_FORM_NAME_MAX + 1];
	char filename[SPX_FORM_NAME_MAX + 1] = "";
	bool have_cd = false, have_ct = false, bad = false, named = false;
	const char *v;

	if (memchr(p, '\0', n))
		return failed(f, SPX_FORM_EMALFORMED);
	memcpy(cd, p, n);
	cd[n] = '\0';
	for (line = cd; line && *line; line = save) {
		char *e = strstr(line, "\r\n"), *colon;

		save = e ? e + 2 : NULL;
		if (e)
			*e = '\0';
		colon = strchr(line, ':');
		if (!colon)
			return failed(f, SPX_FORM_EMALFORMED);
		*colon = '\0';
		v = skip_ws(colon + 1);
		if (!strcasecmp(line, "Content-Disposition")) {
			if (have_cd || strncasecmp(v, "form-data", 9))
				return failed(f, SPX_FORM_EMALFORMED);
			have_cd = true;
			v += 9;
			while ((v = next_param(v, pname, sizeof(pname), pval,
					       sizeof(pval), &bad))) {
				if (!strcasecmp(pname, "name")) {
					if (named)
						return failed(
							f, SPX_FORM_EMALFORMED);
					memcpy(f->name, pval, strlen(pval) + 1);
					named = true;
				} else if (!strcasecmp(pname, "filename")) {
					memcpy(filename, pval,
					       strlen(pval) + 1);
				}
			}
			if (bad)
				return failed(f, SPX_FORM_EMALFORMED);
		} else if (!strcasecmp(line, "Content-Type")) {
			if (have_ct || strlen(v) >= sizeof(ctype))
				return failed(f, SPX_FORM_EMALFORMED);
			memcpy(ctype, v, strlen(v) + 1);
			have_ct = true;
		}
	}
	if (!have_cd || !named)
		return failed(f, SPX_FORM_EMALFORMED);
	if (++f->parts > SPX_FORM_PARTS_MAX)
		return failed(f, SPX_FORM_ETOOBIG);
	f->in_file = !f->file_seen && !strcmp(f->name, "file");
	spx_buf_reset(&f->value);
	if (f->in_file) {
		f->file_seen = true;
		if (f->cb->file_begin(f->arg, filename,
				      have_ct ? ctype : NULL) < 0)
			return failed(f, SPX_FORM_ECALLBACK);
	}
	return SPX_FORM_OK;
}

/* Content [p, p+n) of the current part. */
static enum spx_form_err content(struct spx_form *f, const char *p, size_t n)
{
	if (!n || f->st == SPX_FORM_PREAMBLE)
		return SPX_FORM_OK;
	if (f->in_file)
		return f->cb->file_data(f->arg, p, n) < 0
			       ? failed(f, SPX_FORM_ECALLBACK)
			       : SPX_FORM_OK;
	if (f->file_seen)
		return SPX_FORM_OK; /* after the file: ignored */
	if (f->fields + n > SPX_FORM_FIELDS_MAX)
		return failed(f, SPX_FORM_ETOOBIG);
	f->fields += n;
	spx_buf_add(&f->value, p, n);
	return SPX_FORM_OK;
}

/* The current part has ended. */
static enum spx_form_err part_end(struct spx_form *f)
{
	if (f->st == SPX_FORM_PREAMBLE)
		return SPX_FORM_OK;
	if (f->in_file) {
		f->in_file = false;
		return f->cb->file_end(f->arg) < 0
			       ? failed(f, SPX_FORM_ECALLBACK)
			       : SPX_FORM_OK;
	}
	if (f->file_seen)
		return SPX_FORM_OK;
	spx_buf_addc(&f->value, '\0');
	return f->cb->field(f->arg, f->name, f->value.p, f->value.len - 1) < 0
		       ? failed(f, SPX_FORM_ECALLBACK)
		       : SPX_FORM_OK;
}

/* One step over the window: *more when the state moved on, so that
 * another step may go on with what is left; false when more input is
 * needed. */
static enum spx_form_err step(struct spx_form *f, bool *more)
{
	const char *p = f->in.p, *d, *end;
	size_t n = f->in.len, used = 0;
	enum spx_form_err e = SPX_FORM_OK;

	*more = false;
	switch (f->st) {
	case SPX_FORM_PREAMBLE:
	case SPX_FORM_BODY:
		d = n >= f->dlen ? memmem(p, n, f->delim, f->dlen) : NULL;
		if (!d) {
			/* Keep what may begin a delimiter. */
			used = n >= f->dlen ? n - (f->dlen - 1) : 0;
			e = content(f, p, used);
			break;
		}
		used = (size_t)(d - p) + f->dlen;
		if ((e = content(f, p, (size_t)(d - p))) || (e = part_end(f)))
			break;
		f->st = SPX_FORM_AFTER_DELIM;
		*more = true;
		break;
	case SPX_FORM_AFTER_DELIM:
		/* "--" closes; else padding, then CRLF and a part. */
		if (n < 2)
			break;
		if (p[0] == '-' && p[1] == '-') {
			f->st = SPX_FORM_DONE;
			used = n;
			break;
		}
		while (used < n && (p[used] == ' ' || p[used] == '\t'))
			used++;
		if (used > 64)
			return failed(f, SPX_FORM_EMALFORMED);
		if (n - used < 2) {
			used = 0;
			break;
		}
		if (p[used] != '\r' || p[used + 1] != '\n')
			return failed(f, SPX_FORM_EMALFORMED);
		used += 2;
		f->st = SPX_FORM_HEAD;
		*more = true;
		break;
	case SPX_FORM_HEAD:
		/* Header lines, then a blank line; the content follows it, and
		 * the delimiter after the content begins with its own CRLF. A
		 * part without headers has no name: refused. */
		if (n >= 2 && p[0] == '\r' && p[1] == '\n')
			return failed(f, SPX_FORM_EMALFORMED);
		end = n >= 4 ? memmem(p, n, "\r\n\r\n", 4) : NULL;
		if (!end || (size_t)(end - p) > SPX_FORM_HEAD_MAX) {
			if (n > SPX_FORM_HEAD_MAX + 4)
				return failed(f, SPX_FORM_ETOOBIG);
			break;
		}
		if ((e = part_head(f, p, (size_t)(end - p))))
			break;
		used = (size_t)(end - p) + 4;
		f->st = SPX_FORM_BODY;
		*more = true;
		break;
	case SPX_FORM_DONE:
		used = n; /* the epilogue */
		break;
	case SPX_FORM_FAILED:
		return f->err;
	}
	if (e)
		return e;
	consume(&f->in, used);
	return SPX_FORM_OK;
}

enum spx_form_err spx_form_feed(struct spx_form *f, const char *p, size_t n)
{
	enum spx_form_err e;
	bool more = true;

	if (f->st == SPX_FORM_FAILED)
		return f->err;
	if (f->st == SPX_FORM_DONE)
		return SPX_FORM_OK;
	spx_buf_add(&f->in, p, n);
	while (more)
		if ((e = step(f, &more)))
			return e;
	return SPX_FORM_OK;
}

enum spx_form_err spx_form_finish(struct spx_form *f)
{
	if (f->st == SPX_FORM_FAILED)
		return f->err;
	if (f->st != SPX_FORM_DONE)
		return failed(f, SPX_FORM_ETRUNCATED);
	if (!f->file_seen)
		return failed(f, SPX_FORM_ENOFILE);
	return SPX_FORM_OK;
}

void spx_form_release(struct spx_form *f)
{
	spx_buf_release(&f->in);
	spx_buf_release(&f->value);
}

const char *spx_form_strerror(enum spx_form_err e)
{
	static const char *const s[SPX_FORM_NERR] = {
		[SPX_FORM_OK] = "ok",
		[SPX_FORM_ECONTENT_TYPE] = "not multipart/form-data",
		[SPX_FORM_EMALFORMED] = "malformed multipart body",
		[SPX_FORM_ETOOBIG] = "form fields too large",
		[SPX_FORM_ETRUNCATED] = "the body ended before the form did",
		[SPX_FORM_ENOFILE] = "no file field",
		[SPX_FORM_ECALLBACK] = "refused",
	};

	return (unsigned)e < SPX_FORM_NERR ? s[e] : "unknown";
}
