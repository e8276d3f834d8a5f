/* xml.c: the XML writer (contract in xml.h). */
#include "spx.h"

#include <inttypes.h>

#include "xml/xml.h"

static int fail(struct spx_xml *x)
{
	x->failed = true;
	return -1;
}

int spx_xml_buf_sink(void *ctx, const char *p, size_t n)
{
	spx_buf_add(ctx, p, n);
	return 0;
}

void spx_xml_begin(struct spx_xml *x, spx_xml_sink *sink, void *ctx)
{
	x->sink = sink;
	x->ctx = ctx;
	x->buf = sink == spx_xml_buf_sink ? ctx : NULL;
	x->bytes = 0;
	x->depth = 0;
	x->intag = false;
	x->failed = false;
	x->root = false;
	x->poollen = 0;
	x->stagelen = 0;
}

void spx_xml_begin_buf(struct spx_xml *x, struct spx_buf *b)
{
	spx_xml_begin(x, spx_xml_buf_sink, b);
}

int spx_xml_flush(struct spx_xml *x)
{
	size_t n = x->stagelen;

	if (x->failed)
		return -1;
	x->stagelen = 0;
	if (n && x->sink(x->ctx, x->stage, n) < 0)
		return fail(x);
	return 0;
}

static int put(struct spx_xml *x, const char *p, size_t n)
{
	if (x->failed)
		return -1;
	x->bytes += n;
	if (x->buf) {
		spx_buf_add(x->buf, p, n);
		return 0;
	}
	if (n > sizeof(x->stage) - x->stagelen) {
		if (spx_xml_flush(x) < 0)
			return -1;
		if (n > sizeof(x->stage)) {
			if (x->sink(x->ctx, p, n) < 0)
				return fail(x);
			return 0;
		}
	}
	memcpy(x->stage + x->stagelen, p, n);
	x->stagelen += n;
	return 0;
}

static int puts_(struct spx_xml *x, const char *s)
{
	return put(x, s, strlen(s));
}

static bool name_ok(const char *s)
{
	size_t i;

	if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		    *s == '_'))
		return false;
	for (i = 1; s[i]; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == ':' || c == '-'))
			return false;
		if (i >= SPX_XML_NAMEMAX)
			return false;
	}
	return true;
}

static int bad_name(struct spx_xml *x, const char *what, const char *name)
{
	if (x->failed)
		return -1;
	spx_error(SPX_USAGE, "invalid xml %s name '%.*s'", what,
		  SPX_XML_NAMEMAX, name ? name : "(null)");
	return fail(x);
}

/* End a pending start tag with '>'. */
static int content(struct spx_xml *x)
{
	if (x->failed)
		return -1;
	if (x->intag) {
		x->intag = false;
		return put(x, ">", 1);
	}
	return 0;
}

/* Length of the well-formed UTF-8 sequence at s (1 to 4), or minus the
 * length of the maximal ill-formed subpart there, to be replaced by one
 * U+FFFD (Unicode 3.9, "U+FFFD Substitution of Maximal Subparts"). */
static int utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	int len;

	if (c < 0x80)
		return 1;
	if (c < 0xC2)
		return -1;
	if (c < 0xE0) {
		len = 2;
	} else if (c < 0xF0) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0; /* overlong */
		else if (c == 0xED)
			hi = 0x9F; /* surrogates */
	} else if (c < 0xF5) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90; /* overlong */
		else if (c == 0xF4)
			hi = 0x8F; /* beyond U+10FFFF */
	} else {
		return -1;
	}
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n || s[i] < lo || s[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xBF;
	}
	return len;
}

static const char fffd[] = "\xEF\xBF\xBD";

/* Write s escaped for text (attr false) or an attribute value. */
static int escape(struct spx_xml *x, const char *s, size_t n, bool attr)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0, i = 0;

	while (i < n) {
		unsigned char c = u[i];
		const char *rep = NULL;
		size_t adv = 1;
		int len;

		if (c >= 0x20 && c < 0x7F) {
			switch (c) {
			case '&': rep = "&amp;"; break;
			case '<': rep = "&lt;"; break;
			case '>': rep = "&gt;"; break;
			case '"': rep = "&quot;"; break;
			case '\'': rep = "&apos;"; break;
			}
		} else if (c == '\t') {
			rep = attr ? "&#x9;" : NULL;
		} else if (c == '\n') {
			rep = attr ? "&#xA;" : NULL;
		} else if (c == '\r') {
			rep = "&#xD;";
		} else if (c < 0x20) {
			rep = fffd;
		} else if (c >= 0x80) {
			len = utf8_seq(u + i, n - i);
			if (len < 0) {
				rep = fffd;
				adv = (size_t)-len;
			} else {
				adv = (size_t)len;
				/* U+FFFE and U+FFFF are not XML characters. */
				if (len == 3 && c == 0xEF && u[i + 1] == 0xBF &&
				    u[i + 2] >= 0xBE)
					rep = fffd;
			}
		}
		if (!rep) {
			i += adv;
			continue;
		}
		if (i > run && put(x, s + run, i - run) < 0)
			return -1;
		if (puts_(x, rep) < 0)
			return -1;
		i += adv;
		run = i;
	}
	if (n > run)
		return put(x, s + run, n - run);
	return 0;
}

int spx_xml_decl(struct spx_xml *x)
{
	if (x->failed)
		return -1;
	if (x->bytes) {
		spx_error(SPX_USAGE, "xml declaration after the start");
		return fail(x);
	}
	return puts_(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
}

int spx_xml_open(struct spx_xml *x, const char *name)
{
	size_t len;

	if (x->failed)
		return -1;
	if (!name_ok(name))
		return bad_name(x, "element", name);
	if (x->depth >= SPX_XML_MAXDEPTH) {
		spx_error(SPX_USAGE,
			  "xml element '%s' nested deeper than %d levels",
			  name, SPX_XML_MAXDEPTH);
		return fail(x);
	}
	if (!x->depth && x->root) {
		spx_error(SPX_USAGE, "xml document has a second root '%s'",
			  name);
		return fail(x);
	}
	if (content(x) < 0)
		return -1;
	x->root = true;
	len = strlen(name);
	/* The pool holds SPX_XML_MAXDEPTH names of SPX_XML_NAMEMAX bytes. */
	memcpy(x->pool + x->poollen, name, len + 1);
	x->off[x->depth++] = x->poollen;
	x->poollen += len + 1;
	x->intag = true;
	if (put(x, "<", 1) < 0)
		return -1;
	return put(x, name, len);
}

int spx_xml_attr(struct spx_xml *x, const char *name, const char *value)
{
	if (x->failed)
		return -1;
	if (!name_ok(name))
		return bad_name(x, "attribute", name);
	if (!value)
		return 0;
	if (!x->intag) {
		spx_error(SPX_USAGE, "xml attribute '%s' outside a start tag",
			  name);
		return fail(x);
	}
	if (put(x, " ", 1) < 0 || puts_(x, name) < 0 || put(x, "=\"", 2) < 0 ||
	    escape(x, value, strlen(value), true) < 0)
		return -1;
	return put(x, "\"", 1);
}

int spx_xml_open_ns(struct spx_xml *x, const char *name, const char *ns)
{
	if (spx_xml_open(x, name) < 0)
		return -1;
	return spx_xml_attr(x, "xmlns", ns);
}

int spx_xml_textn(struct spx_xml *x, const char *s, size_t n)
{
	if (x->failed)
		return -1;
	if (!s)
		return 0;
	if (!x->depth) {
		spx_error(SPX_USAGE, "xml text outside any element");
		return fail(x);
	}
	if (content(x) < 0)
		return -1;
	return escape(x, s, n, false);
}

int spx_xml_text(struct spx_xml *x, const char *s)
{
	return spx_xml_textn(x, s, s ? strlen(s) : 0);
}

int spx_xml_close(struct spx_xml *x)
{
	const char *name;

	if (x->failed)
		return -1;
	if (!x->depth) {
		spx_error(SPX_USAGE, "xml close with no element open");
		return fail(x);
	}
	if (content(x) < 0)
		return -1;
	name = x->pool + x->off[--x->depth];
	x->poollen = x->off[x->depth];
	if (put(x, "</", 2) < 0 || puts_(x, name) < 0)
		return -1;
	return put(x, ">", 1);
}

int spx_xml_elemn(struct spx_xml *x, const char *name, const char *text,
		  size_t n)
{
	if (x->failed)
		return -1;
	if (!text)
		return 0;
	if (spx_xml_open(x, name) < 0 || content(x) < 0 ||
	    escape(x, text, n, false) < 0)
		return -1;
	return spx_xml_close(x);
}

int spx_xml_elem(struct spx_xml *x, const char *name, const char *text)
{
	return spx_xml_elemn(x, name, text, text ? strlen(text) : 0);
}

int spx_xml_elemf(struct spx_xml *x, const char *name, const char *fmt, ...)
{
	char small[256], *p = small;
	va_list ap;
	int n, rc;

	if (x->failed)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		spx_error(SPX_USAGE, "bad format for xml element '%s'", name);
		return fail(x);
	}
	if ((size_t)n >= sizeof(small)) {
		p = spx_malloc((size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	rc = spx_xml_elemn(x, name, p, (size_t)n);
	if (p != small)
		free(p);
	return rc;
}

int spx_xml_elem_bool(struct spx_xml *x, const char *name, bool v)
{
	return spx_xml_elem(x, name, v ? "true" : "false");
}

int spx_xml_elem_u64(struct spx_xml *x, const char *name, uint64_t v)
{
	return spx_xml_elemf(x, name, "%" PRIu64, v);
}

int spx_xml_elem_i64(struct spx_xml *x, const char *name, int64_t v)
{
	return spx_xml_elemf(x, name, "%" PRId64, v);
}

int spx_xml_end(struct spx_xml *x)
{
	if (x->failed)
		return -1;
	if (x->depth) {
		spx_error(SPX_USAGE, "xml element '%s' is not closed",
			  x->pool + x->off[x->depth - 1]);
		return fail(x);
	}
	return spx_xml_flush(x);
}
