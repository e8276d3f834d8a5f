/* toml.c: a bounded TOML 1.0 parser (see toml.h).
 *
 * One pass over the input with a cursor that tracks line and column; a
 * recursive descent for values whose depth is bounded because every nested
 * array or inline table is a node whose depth is checked before its
 * contents are parsed. The input is validated as UTF-8 without NUL bytes
 * before parsing, so the rest of the parser deals only in whole characters. */
#include "spx.h"

#include "hex.h"

#include "conf/toml.h"

/* How a table came to be, which decides how it may be extended (TOML 1.0):
 * a table created as the parent of a header may later be defined by its own
 * header once; a table defined by a header or made by dotted keys may not be
 * defined again by a header; an inline table is closed. */
#define T_IMPLICIT 0x1	/* parent of a [header], not yet defined */
#define T_DEFINED 0x2	/* defined by a [header] or [[header]] */
#define T_DOTTED 0x4	/* made or extended by a dotted key */
#define T_INLINE 0x8	/* { inline table } */
#define T_AOT 0x10	/* array made by [[header]] */

/* Hash the keys of tables larger than this. */
#define INDEX_MIN 8
/* Longest number or bare word quoted back in a message. */
#define TOKEN_MAX 128

struct parser {
	const char *file;
	const unsigned char *s;
	size_t len, pos;
	int line, col;
	struct spx_toml *root;
	struct spx_toml *cur;	/* the table the last header opened */
	struct spx_buf sb;	/* the last string or key read */
};

struct key {
	size_t n;
	char *part[SPX_TOML_MAX_DEPTH];
	int line[SPX_TOML_MAX_DEPTH];
	int col[SPX_TOML_MAX_DEPTH];
};

#define perr(p, line, col, ...) \
	spx_error_at((p)->file, (line), (col), __VA_ARGS__)

#define PERR(p, ...) perr((p), (p)->line, (p)->col, __VA_ARGS__)

static int peek(const struct parser *p)
{
	return p->pos < p->len ? p->s[p->pos] : -1;
}

static int peekn(const struct parser *p, size_t k)
{
	return p->pos + k < p->len ? p->s[p->pos + k] : -1;
}

static void adv(struct parser *p)
{
	unsigned char c = p->s[p->pos++];

	if (c == '\n') {
		if (p->line < INT_MAX)
			p->line++;
		p->col = 1;
	} else if ((c & 0xc0) != 0x80 && p->col < INT_MAX) {
		p->col++;
	}
}

static void skip_ws(struct parser *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		adv(p);
}

static bool is_bare(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static bool is_ctrl(int c)
{
	return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

/* The character at the cursor, for "found ..." in messages. */
static const char *what(const struct parser *p, char *buf, size_t sz)
{
	int c = peek(p);

	if (c < 0)
		return "end of input";
	if (c == '\n' || (c == '\r' && peekn(p, 1) == '\n'))
		return "end of line";
	if (c == ' ' || c == '\t')
		return "whitespace";
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, sz, "'%c'", c);
	else if (c < 0x80)
		snprintf(buf, sz, "U+%04X", (unsigned)c);
	else
		return "a non-ASCII character";
	return buf;
}

/* Render parts [0, n) of a key for a message: bare parts as they are, the
 * others quoted with control characters escaped, the whole bounded. */
static const char *keystr(char *buf, size_t sz, char *const *part, size_t n)
{
	struct spx_buf b = SPX_BUF_INIT;
	const unsigned char *s;
	bool bare;

	for (size_t i = 0; i < n && b.len < sz; i++) {
		if (i)
			spx_buf_addc(&b, '.');
		bare = part[i][0] != '\0';
		for (s = (const unsigned char *)part[i]; *s; s++)
			bare = bare && is_bare(*s);
		if (bare) {
			spx_buf_adds(&b, part[i]);
			continue;
		}
		spx_buf_addc(&b, '"');
		for (s = (const unsigned char *)part[i]; *s; s++) {
			if (*s == '"' || *s == '\\')
				spx_buf_addf(&b, "\\%c", *s);
			else if (is_ctrl(*s))
				spx_buf_addf(&b, "\\u%04X", *s);
			else
				spx_buf_addc(&b, (char)*s);
		}
		spx_buf_addc(&b, '"');
	}
	if (b.len >= sz && sz > 4) {
		/* Cut on a character boundary and mark the cut. */
		size_t cut = sz - 4;

		while (cut && ((unsigned char)b.p[cut] & 0xc0) == 0x80)
			cut--;
		spx_buf_setlen(&b, cut);
		spx_buf_adds(&b, "...");
	}
	snprintf(buf, sz, "%s", b.p);
	spx_buf_release(&b);
	return buf;
}

/* The type of v with its article, for messages. */
static const char *a_type(const struct spx_toml *v)
{
	switch (v->type) {
	case SPX_TOML_TABLE:
		return "a table";
	case SPX_TOML_ARRAY:
		return v->flags & T_AOT ? "an array of tables" : "an array";
	case SPX_TOML_STRING:
		return "a string";
	case SPX_TOML_INTEGER:
		return "an integer";
	case SPX_TOML_BOOL:
		return "a boolean";
	}
	return "a value";
}

static void key_free(struct key *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->part[i]);
	k->n = 0;
}

/* ---- the tree ---- */

static struct spx_toml *node_new(struct parser *p, enum spx_toml_type type,
				 int depth, int line, int col)
{
	struct spx_toml *t;

	if (depth > SPX_TOML_MAX_DEPTH) {
		perr(p, line, col, "nesting deeper than %d levels",
		     SPX_TOML_MAX_DEPTH);
		return NULL;
	}
	t = spx_calloc(1, sizeof(*t));
	t->type = type;
	t->depth = depth;
	t->line = line;
	t->col = col;
	return t;
}

void spx_toml_free(struct spx_toml *t)
{
	if (!t)
		return;
	switch (t->type) {
	case SPX_TOML_STRING:
		free(t->v.s);
		break;
	case SPX_TOML_TABLE:
		for (size_t i = 0; i < t->n; i++) {
			free(t->ent[i].key);
			spx_toml_free(t->ent[i].val);
		}
		free(t->ent);
		free(t->idx);
		break;
	case SPX_TOML_ARRAY:
		for (size_t i = 0; i < t->n; i++)
			spx_toml_free(t->item[i]);
		free(t->item);
		break;
	default:
		break;
	}
	free(t);
}

static size_t hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)h;
}

static struct spx_toml_entry *tbl_find(const struct spx_toml *t,
				       const char *key)
{
	size_t mask, h, x;

	if (t->idx) {
		mask = t->idxcap - 1;
		for (h = hash(key) & mask;; h = (h + 1) & mask) {
			x = t->idx[h];
			if (!x)
				return NULL;
			if (!strcmp(t->ent[x - 1].key, key))
				return &t->ent[x - 1];
		}
	}
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->ent[i].key, key))
			return &t->ent[i];
	return NULL;
}

static void tbl_index(struct spx_toml *t, size_t i)
{
	size_t mask = t->idxcap - 1, h;

	for (h = hash(t->ent[i].key) & mask; t->idx[h]; h = (h + 1) & mask)
		;
	t->idx[h] = i + 1;
}

/* Append key (taking ownership) -> val; the caller checked key is absent. */
static void tbl_add(struct spx_toml *t, char *key, struct spx_toml *val,
		    int line, int col)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 4;
		t->ent = spx_realloc(t->ent, t->cap * sizeof(*t->ent));
	}
	t->ent[t->n].key = key;
	t->ent[t->n].val = val;
	t->ent[t->n].line = line;
	t->ent[t->n].col = col;
	t->n++;
	if (t->n < INDEX_MIN)
		return;
	if (t->n * 2 > t->idxcap) {
		/* Keep the load under a half. */
		free(t->idx);
		t->idxcap = 16;
		while (t->idxcap < t->n * 4)
			t->idxcap *= 2;
		t->idx = spx_calloc(t->idxcap, sizeof(*t->idx));
		for (size_t i = 0; i < t->n; i++)
			tbl_index(t, i);
	} else {
		tbl_index(t, t->n - 1);
	}
}

static void arr_add(struct spx_toml *a, struct spx_toml *val)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 4;
		a->item = spx_realloc(a->item, a->cap * sizeof(*a->item));
	}
	a->item[a->n++] = val;
}

/* ---- the input ---- */

/* Reject oversized input, NUL bytes and invalid UTF-8 (overlong forms,
 * surrogates, code points past U+10FFFF) before parsing. */
static int check_input(struct parser *p, size_t max_len)
{
	const unsigned char *s = p->s;
	int line = 1, col = 1;
	size_t i = 0, n, k;
	uint32_t u, min;

	while (i < p->len) {
		if (s[i] == 0)
			return perr(p, line, col, "input contains a NUL byte");
		if (s[i] < 0x80) {
			n = 1;
		} else {
			if (s[i] >= 0xc2 && s[i] <= 0xdf) {
				n = 2, u = s[i] & 0x1f, min = 0x80;
			} else if (s[i] >= 0xe0 && s[i] <= 0xef) {
				n = 3, u = s[i] & 0x0f, min = 0x800;
			} else if (s[i] >= 0xf0 && s[i] <= 0xf4) {
				n = 4, u = s[i] & 0x07, min = 0x10000;
			} else {
				return perr(p, line, col, "invalid UTF-8");
			}
			if (n > p->len - i)
				return perr(p, line, col, "invalid UTF-8");
			for (k = 1; k < n; k++) {
				if ((s[i + k] & 0xc0) != 0x80)
					return perr(p, line, col,
						    "invalid UTF-8");
				u = u << 6 | (s[i + k] & 0x3f);
			}
			if (u < min || u > 0x10ffff ||
			    (u >= 0xd800 && u <= 0xdfff))
				return perr(p, line, col, "invalid UTF-8");
		}
		/* Reported at the character that crosses the limit. */
		if (n > max_len - i)
			return perr(p, line, col,
				    "input is larger than %zu bytes", max_len);
		if (s[i] == '\n') {
			if (line < INT_MAX)
				line++;
			col = 1;
		} else if (col < INT_MAX) {
			col++;
		}
		i += n;
	}
	return 0;
}

/* At '#': skip the comment, leaving the cursor on the newline. */
static int skip_comment(struct parser *p)
{
	int c;

	adv(p);
	while ((c = peek(p)) >= 0 && c != '\n') {
		if (c == '\r' && peekn(p, 1) == '\n')
			break;
		if (is_ctrl(c))
			return PERR(p, "control character U+%04X in comment",
				    (unsigned)c);
		adv(p);
	}
	return 0;
}

/* Consume a newline (LF or CRLF) if there is one: 1 if consumed, 0 if the
 * cursor is elsewhere, -1 on a bare CR. */
static int newline(struct parser *p)
{
	if (peek(p) == '\n') {
		adv(p);
		return 1;
	}
	if (peek(p) == '\r') {
		if (peekn(p, 1) != '\n')
			return PERR(p, "carriage return without a line feed");
		adv(p);
		adv(p);
		return 1;
	}
	return 0;
}

/* After a key/value pair or a header: whitespace, a comment, then a newline
 * or the end of the input. */
static int eol(struct parser *p)
{
	char buf[16];
	int r;

	skip_ws(p);
	if (peek(p) == '#' && skip_comment(p))
		return -1;
	if (peek(p) < 0)
		return 0;
	r = newline(p);
	if (r)
		return r < 0 ? -1 : 0;
	return PERR(p, "expected the end of the line, found %s",
		    what(p, buf, sizeof(buf)));
}

/* Whitespace, newlines and comments, inside arrays. */
static int skip_wsnl(struct parser *p)
{
	int r;

	for (;;) {
		skip_ws(p);
		if (peek(p) == '#' && skip_comment(p))
			return -1;
		r = newline(p);
		if (r < 0)
			return -1;
		if (!r)
			return 0;
	}
}

/* ---- strings ---- */

static void add_utf8(struct spx_buf *b, uint32_t u)
{
	if (u < 0x80) {
		spx_buf_addc(b, (char)u);
	} else if (u < 0x800) {
		spx_buf_addc(b, (char)(0xc0 | u >> 6));
		spx_buf_addc(b, (char)(0x80 | (u & 0x3f)));
	} else if (u < 0x10000) {
		spx_buf_addc(b, (char)(0xe0 | u >> 12));
		spx_buf_addc(b, (char)(0x80 | (u >> 6 & 0x3f)));
		spx_buf_addc(b, (char)(0x80 | (u & 0x3f)));
	} else {
		spx_buf_addc(b, (char)(0xf0 | u >> 18));
		spx_buf_addc(b, (char)(0x80 | (u >> 12 & 0x3f)));
		spx_buf_addc(b, (char)(0x80 | (u >> 6 & 0x3f)));
		spx_buf_addc(b, (char)(0x80 | (u & 0x3f)));
	}
}

/* At the 'u' or 'U' of an escape that began at line:col. */
static int parse_ucs(struct parser *p, int line, int col)
{
	int ndig = peek(p) == 'u' ? 4 : 8, h;
	char letter = (char)peek(p);
	uint32_t u = 0;

	adv(p);
	for (int i = 0; i < ndig; i++) {
		h = spx_hexval(peek(p));
		if (h < 0)
			return perr(p, line, col,
				    "invalid escape sequence: '\\%c' takes %d "
				    "hex digits", letter, ndig);
		u = u << 4 | (uint32_t)h;
		adv(p);
	}
	if (u == 0)
		return perr(p, line, col,
			    "unsupported escape sequence: U+0000 (NUL)");
	if (u > 0x10ffff || (u >= 0xd800 && u <= 0xdfff))
		return perr(p, line, col,
			    "invalid escape sequence: U+%04X is not a unicode "
			    "scalar value", u);
	add_utf8(&p->sb, u);
	return 0;
}

/* At a backslash inside a basic string. */
static int parse_escape(struct parser *p, bool ml)
{
	int line = p->line, col = p->col, c;
	char e;

	adv(p);
	c = peek(p);
	switch (c) {
	case 'b': e = '\b'; break;
	case 't': e = '\t'; break;
	case 'n': e = '\n'; break;
	case 'f': e = '\f'; break;
	case 'r': e = '\r'; break;
	case '"': e = '"'; break;
	case '\\': e = '\\'; break;
	case 'u':
	case 'U':
		return parse_ucs(p, line, col);
	default:
		e = 0;
		break;
	}
	if (e) {
		adv(p);
		spx_buf_addc(&p->sb, e);
		return 0;
	}
	if (ml && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
		/* A line-ending backslash eats the newline and all the
		 * whitespace and newlines after it. */
		skip_ws(p);
		c = peek(p);
		if (c != '\n' && !(c == '\r' && peekn(p, 1) == '\n'))
			return perr(p, line, col,
				    "invalid escape sequence: only whitespace "
				    "may follow a line-ending backslash");
		for (;;) {
			c = peek(p);
			if (c == ' ' || c == '\t' || c == '\n')
				adv(p);
			else if (c == '\r' && peekn(p, 1) == '\n')
				adv(p);
			else
				return 0;
		}
	}
	if (c > 0x20 && c < 0x7f)
		return perr(p, line, col, "invalid escape sequence '\\%c'", c);
	return perr(p, line, col, "invalid escape sequence");
}

/* At the opening quote of any of the four kinds of string: the contents go
 * to p->sb. */
static int parse_string(struct parser *p)
{
	int q = peek(p), line = p->line, col = p->col, c;
	bool ml = peekn(p, 1) == q && peekn(p, 2) == q;
	size_t run;

	spx_buf_reset(&p->sb);
	adv(p);
	if (ml) {
		adv(p);
		adv(p);
		/* A newline right after the opening quotes is trimmed. */
		if (newline(p) < 0)
			return -1;
	}
	for (;;) {
		c = peek(p);
		if (c < 0)
			return perr(p, line, col, "unterminated string");
		if (c == q) {
			if (!ml) {
				adv(p);
				return 0;
			}
			for (run = 1; run < 6 && peekn(p, run) == q; run++)
				;
			if (run >= 6)
				return PERR(p, "too many quotation marks in a "
					       "row in a multi-line string");
			/* Up to two quotes just before the closing three
			 * belong to the string. */
			for (size_t i = 0; i < run; i++) {
				if (run < 3 || i < run - 3)
					spx_buf_addc(&p->sb, (char)q);
				adv(p);
			}
			if (run >= 3)
				return 0;
			continue;
		}
		if (c == '\n' || c == '\r') {
			if (!ml)
				return perr(p, line, col,
					    "unterminated string");
			if (newline(p) < 0)
				return -1;
			spx_buf_addc(&p->sb, '\n');
			continue;
		}
		if (c == '\\' && q == '"') {
			if (parse_escape(p, ml))
				return -1;
			continue;
		}
		if (is_ctrl(c))
			return PERR(p, "control character U+%04X in string",
				    (unsigned)c);
		spx_buf_addc(&p->sb, (char)c);
		adv(p);
	}
}

/* ---- keys ---- */

/* A key, simple or dotted; leaves the cursor after trailing whitespace. The
 * caller frees k with key_free() whatever the result. */
static int parse_key(struct parser *p, struct key *k)
{
	char buf[16];
	int c, line, col;

	k->n = 0;
	for (;;) {
		skip_ws(p);
		if (k->n == SPX_TOML_MAX_DEPTH)
			return PERR(p, "key has more than %d parts",
				    SPX_TOML_MAX_DEPTH);
		line = p->line;
		col = p->col;
		c = peek(p);
		if (is_bare(c)) {
			spx_buf_reset(&p->sb);
			while (is_bare(peek(p))) {
				spx_buf_addc(&p->sb, (char)peek(p));
				adv(p);
			}
		} else if (c == '"' || c == '\'') {
			if (peekn(p, 1) == c && peekn(p, 2) == c)
				return PERR(p, "a multi-line string cannot "
					       "be a key");
			if (parse_string(p))
				return -1;
		} else {
			return PERR(p, "expected a key, found %s",
				    what(p, buf, sizeof(buf)));
		}
		if (p->sb.len > SPX_TOML_MAX_KEY)
			return perr(p, line, col, "key longer than %d bytes",
				    SPX_TOML_MAX_KEY);
		k->part[k->n] = spx_strndup(p->sb.p, p->sb.len);
		k->line[k->n] = line;
		k->col[k->n] = col;
		k->n++;
		skip_ws(p);
		if (peek(p) != '.')
			return 0;
		adv(p);
	}
}

/* ---- values ---- */

static int parse_value(struct parser *p, int depth, struct spx_toml **out);
static int parse_keyval(struct parser *p, struct spx_toml *tbl);

static int digitval(int c, int base)
{
	int d = spx_hexval(c);

	return d >= 0 && d < base ? d : -1;
}

/* An integer from tok (NUL-terminated), or an error at line:col. */
static int parse_integer(struct parser *p, const char *tok, int line, int col,
			 int64_t *out)
{
	const char *s = tok;
	bool neg = false, sign = false, prev = false;
	uint64_t v = 0;
	int base = 10, d;

	if (*s == '+' || *s == '-') {
		sign = true;
		neg = *s == '-';
		s++;
	}
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) {
		if (sign)
			return perr(p, line, col,
				    "invalid integer '%s': no sign is allowed "
				    "with a base prefix", tok);
		base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
		s += 2;
	} else if (s[0] == '0' && s[1]) {
		return perr(p, line, col,
			    "invalid integer '%s': leading zeros are not "
			    "allowed", tok);
	}
	for (; *s; s++) {
		if (*s == '_') {
			if (!prev || !s[1])
				return perr(p, line, col,
					    "invalid integer '%s': '_' must "
					    "be between digits", tok);
			prev = false;
			continue;
		}
		d = digitval(*s, base);
		if (d < 0)
			return perr(p, line, col, "invalid integer '%s'", tok);
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return perr(p, line, col,
				    "integer '%s' is out of range", tok);
		v = v * (uint64_t)base + (uint64_t)d;
		prev = true;
	}
	if (!prev)
		return perr(p, line, col, "invalid integer '%s'", tok);
	if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0))
		return perr(p, line, col, "integer '%s' is out of range", tok);
	if (neg)
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	return 0;
}

/* A bare value: boolean or integer, or a float or date to reject. */
static int parse_scalar(struct parser *p, int depth, struct spx_toml **out)
{
	char tok[TOKEN_MAX + 1];
	int line = p->line, col = p->col, c;
	size_t n = 0;
	struct spx_toml *t;
	const char *s;
	int64_t iv = 0;

	while ((c = peek(p)) >= 0 &&
	       (is_bare(c) || c == '+' || c == '.' || c == ':')) {
		if (n == TOKEN_MAX)
			return perr(p, line, col, "value is too long");
		tok[n++] = (char)c;
		adv(p);
	}
	tok[n] = '\0';
	s = tok + (tok[0] == '+' || tok[0] == '-');
	if (!strcmp(tok, "true") || !strcmp(tok, "false")) {
		t = node_new(p, SPX_TOML_BOOL, depth, line, col);
		if (!t)
			return -1;
		t->v.b = tok[0] == 't';
		*out = t;
		return 0;
	}
	if (!strcmp(s, "inf") || !strcmp(s, "nan"))
		return perr(p, line, col, "floats are not supported");
	if (!(s[0] >= '0' && s[0] <= '9'))
		return perr(p, line, col,
			    "invalid value '%s' (strings must be quoted)", tok);
	if (strchr(tok, ':') ||
	    (n >= 5 && tok[4] == '-' && strspn(tok, "0123456789") == 4))
		return perr(p, line, col, "dates and times are not supported");
	if (!(s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) &&
	    strpbrk(tok, ".eE"))
		return perr(p, line, col, "floats are not supported");
	if (parse_integer(p, tok, line, col, &iv))
		return -1;
	t = node_new(p, SPX_TOML_INTEGER, depth, line, col);
	if (!t)
		return -1;
	t->v.i = iv;
	*out = t;
	return 0;
}

static int parse_array(struct parser *p, int depth, struct spx_toml **out)
{
	struct spx_toml *a, *v;
	char buf[16];
	int c;

	a = node_new(p, SPX_TOML_ARRAY, depth, p->line, p->col);
	if (!a)
		return -1;
	adv(p);
	for (;;) {
		if (skip_wsnl(p))
			goto fail;
		if (peek(p) < 0) {
			perr(p, a->line, a->col, "unterminated array");
			goto fail;
		}
		if (peek(p) == ']')
			break;
		if (parse_value(p, depth + 1, &v))
			goto fail;
		arr_add(a, v);
		if (skip_wsnl(p))
			goto fail;
		c = peek(p);
		if (c == ']')
			break;
		if (c != ',') {
			if (c < 0)
				perr(p, a->line, a->col, "unterminated array");
			else
				PERR(p, "expected ',' or ']' in array, "
					"found %s", what(p, buf, sizeof(buf)));
			goto fail;
		}
		adv(p);
	}
	adv(p);
	*out = a;
	return 0;
fail:
	spx_toml_free(a);
	return -1;
}

static int parse_inline(struct parser *p, int depth, struct spx_toml **out)
{
	struct spx_toml *t;
	char buf[16];
	int c;

	t = node_new(p, SPX_TOML_TABLE, depth, p->line, p->col);
	if (!t)
		return -1;
	t->flags = T_INLINE;
	adv(p);
	skip_ws(p);
	if (peek(p) == '}') {
		adv(p);
		*out = t;
		return 0;
	}
	for (;;) {
		if (parse_keyval(p, t))
			goto fail;
		skip_ws(p);
		c = peek(p);
		if (c == '}')
			break;
		if (c != ',') {
			if (c < 0)
				perr(p, t->line, t->col,
				     "unterminated inline table");
			else if (c == '\n' || c == '\r' || c == '#')
				PERR(p, "an inline table must be on one line");
			else
				PERR(p, "expected ',' or '}' in inline table, "
					"found %s", what(p, buf, sizeof(buf)));
			goto fail;
		}
		adv(p);
		skip_ws(p);
		if (peek(p) == '}') {
			PERR(p, "trailing comma in inline table");
			goto fail;
		}
	}
	adv(p);
	*out = t;
	return 0;
fail:
	spx_toml_free(t);
	return -1;
}

static int parse_value(struct parser *p, int depth, struct spx_toml **out)
{
	int c = peek(p), line = p->line, col = p->col;
	struct spx_toml *t;
	char buf[16];

	if (c == '"' || c == '\'') {
		if (parse_string(p))
			return -1;
		t = node_new(p, SPX_TOML_STRING, depth, line, col);
		if (!t)
			return -1;
		t->v.s = spx_strndup(p->sb.p, p->sb.len);
		*out = t;
		return 0;
	}
	if (c == '[')
		return parse_array(p, depth, out);
	if (c == '{')
		return parse_inline(p, depth, out);
	if (is_bare(c) || c == '+' || c == '.')
		return parse_scalar(p, depth, out);
	return PERR(p, "expected a value, found %s", what(p, buf, sizeof(buf)));
}

/* ---- key/value pairs and headers ---- */

static int parse_keyval(struct parser *p, struct spx_toml *tbl)
{
	struct key k;
	struct spx_toml *t = tbl, *v, *child;
	struct spx_toml_entry *e;
	char buf[16], ks[256], ps[256];
	size_t last;
	int rc = -1;

	if (parse_key(p, &k))
		goto out;
	if (peek(p) != '=') {
		PERR(p, "expected '=' after key '%s', found %s",
		     keystr(ks, sizeof(ks), k.part, k.n),
		     what(p, buf, sizeof(buf)));
		goto out;
	}
	adv(p);
	skip_ws(p);
	last = k.n - 1;
	for (size_t i = 0; i < last; i++) {
		e = tbl_find(t, k.part[i]);
		if (!e) {
			child = node_new(p, SPX_TOML_TABLE, t->depth + 1,
					 k.line[i], k.col[i]);
			if (!child)
				goto out;
			child->flags = T_DOTTED;
			tbl_add(t, spx_strdup(k.part[i]), child, k.line[i],
				k.col[i]);
			t = child;
			continue;
		}
		v = e->val;
		if (v->type == SPX_TOML_TABLE &&
		    !(v->flags & (T_INLINE | T_DEFINED))) {
			v->flags = (v->flags & ~T_IMPLICIT) | T_DOTTED;
			t = v;
			continue;
		}
		keystr(ks, sizeof(ks), k.part, k.n);
		keystr(ps, sizeof(ps), k.part, i + 1);
		if (v->type != SPX_TOML_TABLE) {
			perr(p, k.line[i], k.col[i],
			     "cannot define key '%s': '%s' is %s defined at "
			     "%d:%d", ks, ps, a_type(v), e->line, e->col);
			goto out;
		}
		if (v->flags & T_INLINE) {
			perr(p, k.line[i], k.col[i],
			     "cannot define key '%s': inline table '%s' "
			     "(%d:%d) cannot be extended", ks, ps, v->line,
			     v->col);
			goto out;
		}
		perr(p, k.line[i], k.col[i],
		     "cannot define key '%s': table '%s' is defined by the "
		     "header at %d:%d", ks, ps, v->line, v->col);
		goto out;
	}
	e = tbl_find(t, k.part[last]);
	if (e) {
		perr(p, k.line[last], k.col[last],
		     "duplicate key '%s' (first defined at %d:%d)",
		     keystr(ks, sizeof(ks), k.part, k.n), e->line, e->col);
		goto out;
	}
	if (parse_value(p, t->depth + 1, &v))
		goto out;
	tbl_add(t, spx_strdup(k.part[last]), v, k.line[last], k.col[last]);
	rc = 0;
out:
	key_free(&k);
	return rc;
}

static int parse_header(struct parser *p)
{
	int line = p->line, col = p->col;
	struct spx_toml *t = p->root, *v, *nt;
	struct spx_toml_entry *e;
	struct key k;
	char buf[16], ks[256], ps[256];
	size_t last;
	bool aot;
	int rc = -1;

	k.n = 0;
	adv(p);
	aot = peek(p) == '[';
	if (aot)
		adv(p);
	if (parse_key(p, &k))
		goto out;
	if (peek(p) != ']' || (aot && peekn(p, 1) != ']')) {
		PERR(p, "expected '%s' after the table name, found %s",
		     aot ? "]]" : "]", what(p, buf, sizeof(buf)));
		goto out;
	}
	adv(p);
	if (aot)
		adv(p);
	keystr(ks, sizeof(ks), k.part, k.n);
	last = k.n - 1;
	for (size_t i = 0; i < last; i++) {
		e = tbl_find(t, k.part[i]);
		if (!e) {
			nt = node_new(p, SPX_TOML_TABLE, t->depth + 1,
				      k.line[i], k.col[i]);
			if (!nt)
				goto out;
			nt->flags = T_IMPLICIT;
			tbl_add(t, spx_strdup(k.part[i]), nt, k.line[i],
				k.col[i]);
			t = nt;
			continue;
		}
		v = e->val;
		if (v->type == SPX_TOML_ARRAY && (v->flags & T_AOT)) {
			t = v->item[v->n - 1];
			continue;
		}
		if (v->type == SPX_TOML_TABLE && !(v->flags & T_INLINE)) {
			t = v;
			continue;
		}
		keystr(ps, sizeof(ps), k.part, i + 1);
		if (v->type != SPX_TOML_TABLE)
			perr(p, k.line[i], k.col[i],
			     "cannot define table '%s': '%s' is %s defined "
			     "at %d:%d", ks, ps, a_type(v), e->line, e->col);
		else
			perr(p, k.line[i], k.col[i],
			     "cannot define table '%s': inline table '%s' "
			     "(%d:%d) cannot be extended", ks, ps, v->line,
			     v->col);
		goto out;
	}
	e = tbl_find(t, k.part[last]);
	if (!aot) {
		if (!e) {
			nt = node_new(p, SPX_TOML_TABLE, t->depth + 1, line,
				      col);
			if (!nt)
				goto out;
			nt->flags = T_DEFINED;
			tbl_add(t, spx_strdup(k.part[last]), nt, k.line[last],
				k.col[last]);
			p->cur = nt;
		} else if (e->val->type == SPX_TOML_TABLE &&
			   (e->val->flags & T_IMPLICIT)) {
			v = e->val;
			v->flags = T_DEFINED;
			v->line = line;
			v->col = col;
			e->line = k.line[last];
			e->col = k.col[last];
			p->cur = v;
		} else if (e->val->type == SPX_TOML_TABLE) {
			perr(p, line, col,
			     "table '%s' is already defined at %d:%d", ks,
			     e->val->line, e->val->col);
			goto out;
		} else {
			perr(p, line, col,
			     "cannot define table '%s': it is already %s "
			     "defined at %d:%d", ks, a_type(e->val), e->line,
			     e->col);
			goto out;
		}
		rc = 0;
		goto out;
	}
	if (!e) {
		v = node_new(p, SPX_TOML_ARRAY, t->depth + 1, line, col);
		if (!v)
			goto out;
		v->flags = T_AOT;
		tbl_add(t, spx_strdup(k.part[last]), v, k.line[last],
			k.col[last]);
	} else if (e->val->type == SPX_TOML_ARRAY &&
		   (e->val->flags & T_AOT)) {
		v = e->val;
	} else {
		perr(p, line, col,
		     "cannot define array of tables '%s': '%s' is already "
		     "%s defined at %d:%d", ks, ks,
		     e->val->type == SPX_TOML_ARRAY ? "a static array"
						    : a_type(e->val),
		     e->line, e->col);
		goto out;
	}
	nt = node_new(p, SPX_TOML_TABLE, v->depth + 1, line, col);
	if (!nt)
		goto out;
	nt->flags = T_DEFINED;
	arr_add(v, nt);
	p->cur = nt;
	rc = 0;
out:
	key_free(&k);
	return rc;
}

static int parse_doc(struct parser *p)
{
	int c;

	for (;;) {
		skip_ws(p);
		c = peek(p);
		if (c < 0)
			return 0;
		if (c == '[') {
			if (parse_header(p))
				return -1;
		} else if (c != '#' && c != '\n' && c != '\r') {
			if (parse_keyval(p, p->cur))
				return -1;
		}
		if (eol(p))
			return -1;
	}
}

struct spx_toml *spx_toml_parse(const char *file, const char *text, size_t len,
				size_t max_len)
{
	struct parser p = {
		.file = file ? file : "<input>",
		.s = (const unsigned char *)text,
		.len = text ? len : 0,
		.line = 1,
		.col = 1,
		.sb = SPX_BUF_INIT,
	};
	int rc;

	if (check_input(&p, max_len))
		return NULL;
	if (p.len >= 3 && !memcmp(p.s, "\xef\xbb\xbf", 3))
		p.pos = 3;
	p.root = node_new(&p, SPX_TOML_TABLE, 0, 1, 1);
	p.root->flags = T_DEFINED;
	p.cur = p.root;
	rc = parse_doc(&p);
	spx_buf_release(&p.sb);
	if (rc) {
		spx_toml_free(p.root);
		return NULL;
	}
	return p.root;
}

/* ---- lookups ---- */

const char *spx_toml_type_name(enum spx_toml_type type)
{
	switch (type) {
	case SPX_TOML_TABLE:
		return "table";
	case SPX_TOML_ARRAY:
		return "array";
	case SPX_TOML_STRING:
		return "string";
	case SPX_TOML_INTEGER:
		return "integer";
	case SPX_TOML_BOOL:
		return "boolean";
	}
	return "unknown";
}

const struct spx_toml_entry *spx_toml_get_entry(const struct spx_toml *t,
						const char *key)
{
	if (!t || t->type != SPX_TOML_TABLE || !key)
		return NULL;
	return tbl_find(t, key);
}

const struct spx_toml *spx_toml_get(const struct spx_toml *t, const char *key)
{
	const struct spx_toml_entry *e = spx_toml_get_entry(t, key);

	return e ? e->val : NULL;
}

const struct spx_toml *spx_toml_path(const struct spx_toml *t,
				     const char *path)
{
	char part[SPX_TOML_MAX_KEY + 1];
	const char *dot;
	size_t n;

	if (!path)
		return NULL;
	for (;;) {
		dot = strchr(path, '.');
		n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(part))
			return NULL;
		memcpy(part, path, n);
		part[n] = '\0';
		t = spx_toml_get(t, part);
		if (!t || !dot)
			return t;
		path = dot + 1;
	}
}

size_t spx_toml_len(const struct spx_toml *t)
{
	if (!t || (t->type != SPX_TOML_TABLE && t->type != SPX_TOML_ARRAY))
		return 0;
	return t->n;
}

const struct spx_toml *spx_toml_at(const struct spx_toml *t, size_t i)
{
	if (!t || i >= spx_toml_len(t))
		return NULL;
	return t->type == SPX_TOML_ARRAY ? t->item[i] : t->ent[i].val;
}
