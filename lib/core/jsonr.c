/* jsonr.c: the bounded JSON pull reader (jsonr.h). Written here rather
 * than taken from jansson because jansson only reads into a tree, which
 * costs more than the read of a small file it decodes (jsonr.h says
 * how much); jansson stays the writer and the reader of documents of
 * any shape. */
#include "spx.h"

#include <math.h>

#include "jsonr.h"

static bool fail(struct spx_jr *j)
{
	j->failed = true;
	return false;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static void ws(struct spx_jr *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

void spx_jr_init(struct spx_jr *j, const char *p, size_t n)
{
	memset(j, 0, sizeof(*j));
	j->p = p;
	j->end = p + n;
	j->max_depth = SPX_JR_DEPTH;
	j->s = (struct spx_buf)SPX_BUF_INIT;
}

void spx_jr_release(struct spx_jr *j)
{
	spx_buf_release(&j->s);
}

enum spx_jr_type spx_jr_peek(struct spx_jr *j)
{
	if (j->failed)
		return SPX_JR_BAD;
	ws(j);
	if (j->p >= j->end)
		return SPX_JR_BAD;
	switch (*j->p) {
	case '{':
		return SPX_JR_OBJ;
	case '[':
		return SPX_JR_ARR;
	case '"':
		return SPX_JR_STR;
	case 't':
		return SPX_JR_TRUE;
	case 'f':
		return SPX_JR_FALSE;
	case 'n':
		return SPX_JR_NULL;
	default:
		return *j->p == '-' || is_digit(*j->p) ? SPX_JR_NUM : SPX_JR_BAD;
	}
}

/* Take the character c (after whitespace). */
static bool take(struct spx_jr *j, char c)
{
	if (j->failed)
		return false;
	ws(j);
	if (j->p >= j->end || *j->p != c)
		return fail(j);
	j->p++;
	return true;
}

static bool open_container(struct spx_jr *j, char c)
{
	if (!take(j, c))
		return false;
	if (++j->depth > j->max_depth)
		return fail(j);
	j->first = true;
	return true;
}

bool spx_jr_obj(struct spx_jr *j)
{
	return open_container(j, '{');
}

bool spx_jr_arr(struct spx_jr *j)
{
	return open_container(j, '[');
}

/* The end of the innermost container, or the comma before its next
 * member: 0 at the end, 1 before a member, -1 on bad input. */
static int next_member(struct spx_jr *j, char close)
{
	if (j->failed)
		return -1;
	ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		/* The container that holds this one has a member now. */
		j->first = false;
		return 0;
	}
	if (!j->first && !take(j, ','))
		return -1;
	j->first = false;
	return 1;
}

/* One UTF-8 sequence at q (not ASCII): its length, or 0 if it is not
 * well formed (overlong, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_seq(const char *q, const char *end)
{
	unsigned char c = (unsigned char)q[0];
	size_t n;
	uint32_t cp;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1fu;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0fu;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07u;
	else
		return 0;
	if ((size_t)(end - q) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (((unsigned char)q[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | ((unsigned char)q[i] & 0x3fu);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

static bool hex4(const char **q, const char *end, uint32_t *u)
{
	uint32_t v = 0;

	if (end - *q < 4)
		return false;
	for (int i = 0; i < 4; i++) {
		char c = (*q)[i];
		int d = c >= '0' && c <= '9'	 ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;

		if (d < 0)
			return false;
		v = v << 4 | (uint32_t)d;
	}
	*q += 4;
	*u = v;
	return true;
}

static void put_utf8(struct spx_buf *b, uint32_t u)
{
	char o[4];
	size_t n;

	if (u < 0x80) {
		o[0] = (char)u;
		n = 1;
	} else if (u < 0x800) {
		o[0] = (char)(0xc0 | u >> 6);
		o[1] = (char)(0x80 | (u & 0x3f));
		n = 2;
	} else if (u < 0x10000) {
		o[0] = (char)(0xe0 | u >> 12);
		o[1] = (char)(0x80 | (u >> 6 & 0x3f));
		o[2] = (char)(0x80 | (u & 0x3f));
		n = 3;
	} else {
		o[0] = (char)(0xf0 | u >> 18);
		o[1] = (char)(0x80 | (u >> 12 & 0x3f));
		o[2] = (char)(0x80 | (u >> 6 & 0x3f));
		o[3] = (char)(0x80 | (u & 0x3f));
		n = 4;
	}
	spx_buf_add(b, o, n);
}

/* The \u escape after "\u": one code point, or a surrogate pair. */
static bool unicode_escape(struct spx_jr *j, const char **q)
{
	uint32_t u, lo;

	if (!hex4(q, j->end, &u))
		return false;
	if (u >= 0xdc00 && u <= 0xdfff)
		return false;
	if (u >= 0xd800 && u <= 0xdbff) {
		if (j->end - *q < 6 || (*q)[0] != '\\' || (*q)[1] != 'u')
			return false;
		*q += 2;
		if (!hex4(q, j->end, &lo) || lo < 0xdc00 || lo > 0xdfff)
			return false;
		u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (!u)
		return false; /* no NUL inside a string */
	put_utf8(&j->s, u);
	return true;
}

bool spx_jr_str(struct spx_jr *j)
{
	const char *q;

	if (!take(j, '"'))
		return false;
	spx_buf_reset(&j->s);
	q = j->p;
	for (;;) {
		const char *run = q;
		unsigned char c;

		while (q < j->end && (unsigned char)*q >= 0x20 &&
		       (unsigned char)*q < 0x80 && *q != '"' && *q != '\\')
			q++;
		if (q > run)
			spx_buf_add(&j->s, run, (size_t)(q - run));
		if (q >= j->end)
			return fail(j);
		c = (unsigned char)*q;
		if (c == '"') {
			j->p = q + 1;
			return true;
		}
		if (c < 0x20)
			return fail(j);
		if (c >= 0x80) {
			size_t n = utf8_seq(q, j->end);

			if (!n)
				return fail(j);
			spx_buf_add(&j->s, q, n);
			q += n;
			continue;
		}
		if (++q >= j->end)
			return fail(j);
		switch (*q++) {
		case '"':
			spx_buf_addc(&j->s, '"');
			break;
		case '\\':
			spx_buf_addc(&j->s, '\\');
			break;
		case '/':
			spx_buf_addc(&j->s, '/');
			break;
		case 'b':
			spx_buf_addc(&j->s, '\b');
			break;
		case 'f':
			spx_buf_addc(&j->s, '\f');
			break;
		case 'n':
			spx_buf_addc(&j->s, '\n');
			break;
		case 'r':
			spx_buf_addc(&j->s, '\r');
			break;
		case 't':
			spx_buf_addc(&j->s, '\t');
			break;
		case 'u':
			if (!unicode_escape(j, &q))
				return fail(j);
			break;
		default:
			return fail(j);
		}
	}
}

int spx_jr_key(struct spx_jr *j)
{
	int r = next_member(j, '}');

	if (r != 1)
		return r;
	if (!spx_jr_str(j) || !take(j, ':'))
		return -1;
	return 1;
}

int spx_jr_item(struct spx_jr *j)
{
	return next_member(j, ']');
}

bool spx_jr_num(struct spx_jr *j, const char **t, size_t *n, bool *is_int)
{
	const char *s, *q;

	if (j->failed)
		return false;
	ws(j);
	s = q = j->p;
	if (q < j->end && *q == '-')
		q++;
	if (q >= j->end)
		return fail(j);
	if (*q == '0') {
		if (++q < j->end && is_digit(*q))
			return fail(j); /* no leading zeros */
	} else if (is_digit(*q)) {
		while (q < j->end && is_digit(*q))
			q++;
	} else {
		return fail(j);
	}
	*is_int = true;
	if (q < j->end && *q == '.') {
		if (++q >= j->end || !is_digit(*q))
			return fail(j);
		while (q < j->end && is_digit(*q))
			q++;
		*is_int = false;
	}
	if (q < j->end && (*q == 'e' || *q == 'E')) {
		if (++q < j->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= j->end || !is_digit(*q))
			return fail(j);
		while (q < j->end && is_digit(*q))
			q++;
		*is_int = false;
	}
	*t = s;
	*n = (size_t)(q - s);
	j->p = q;
	return true;
}

/* The integer t[0..n) (as spx_jr_num found it) within int64_t. */
static bool int_value(const char *t, size_t n, int64_t *v)
{
	bool neg = n && t[0] == '-';
	uint64_t x = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

	for (size_t i = neg; i < n; i++) {
		uint64_t d = (uint64_t)(t[i] - '0');

		if (x > (lim - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = neg ? (x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x)
		 : (int64_t)x;
	return true;
}

bool spx_jr_int(struct spx_jr *j, int64_t *v)
{
	const char *t;
	size_t n;
	bool is_int;

	if (!spx_jr_num(j, &t, &n, &is_int))
		return false;
	if (!is_int || !int_value(t, n, v))
		return fail(j);
	return true;
}

static bool word(struct spx_jr *j, const char *w)
{
	size_t n = strlen(w);

	if (j->failed)
		return false;
	ws(j);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return fail(j);
	j->p += n;
	return true;
}

bool spx_jr_bool(struct spx_jr *j, bool *v)
{
	enum spx_jr_type t = spx_jr_peek(j);

	if (t != SPX_JR_TRUE && t != SPX_JR_FALSE)
		return fail(j);
	*v = t == SPX_JR_TRUE;
	return word(j, *v ? "true" : "false");
}

bool spx_jr_null(struct spx_jr *j)
{
	return word(j, "null");
}

/* A real number's text: one strtod reads (spx keeps the C locale), and
 * one that overflows a double is refused, as jansson refuses it. */
static bool real_ok(const char *t, size_t n)
{
	char buf[128], *e;
	char *big = NULL;
	const char *s = t;
	double d;

	if (n < sizeof(buf)) {
		memcpy(buf, t, n);
		buf[n] = '\0';
		s = buf;
	} else {
		s = big = spx_strndup(t, n);
	}
	errno = 0;
	d = strtod(s, &e);
	free(big);
	return !(errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL));
}

bool spx_jr_skip(struct spx_jr *j)
{
	const char *t;
	size_t n;
	int64_t v;
	bool b, is_int;
	int r;

	switch (spx_jr_peek(j)) {
	case SPX_JR_OBJ:
		if (!spx_jr_obj(j))
			return false;
		while ((r = spx_jr_key(j)) == 1)
			if (!spx_jr_skip(j))
				return false;
		return r == 0;
	case SPX_JR_ARR:
		if (!spx_jr_arr(j))
			return false;
		while ((r = spx_jr_item(j)) == 1)
			if (!spx_jr_skip(j))
				return false;
		return r == 0;
	case SPX_JR_STR:
		return spx_jr_str(j);
	case SPX_JR_NUM:
		if (!spx_jr_num(j, &t, &n, &is_int))
			return false;
		if (is_int ? !int_value(t, n, &v) : !real_ok(t, n))
			return fail(j);
		return true;
	case SPX_JR_TRUE:
	case SPX_JR_FALSE:
		return spx_jr_bool(j, &b);
	case SPX_JR_NULL:
		return spx_jr_null(j);
	default:
		return fail(j);
	}
}

bool spx_jr_end(struct spx_jr *j)
{
	if (j->failed)
		return false;
	ws(j);
	return j->p == j->end;
}
