/* toml.h: a bounded TOML 1.0 parser for configuration files.
 *
 *   struct spx_toml *t = spx_toml_parse("spinifex.toml", text, len, 1 << 20);
 *   if (!t)
 *           return -1;         (spx_errmsg(): "FILE:LINE:COL: message")
 *   v = spx_toml_path(t, "aws.region");
 *   if (v && v->type == SPX_TOML_STRING)
 *           use(v->v.s);
 *   spx_toml_free(t);
 *
 * Supported: comments, bare and quoted keys, dotted keys, [tables],
 * [[arrays of tables]], inline tables, basic and literal strings (single- and
 * multi-line, every TOML 1.0 escape), integers (decimal with '_', 0x, 0o, 0b;
 * 64-bit signed, overflow is an error), booleans and arrays (mixed types,
 * nested). Floats, dates and times are rejected as unsupported, and so is the
 * escape \u0000, so that every string and key is a C string. Redefining a key
 * or a table follows the TOML rules and is an error.
 *
 * The input must be UTF-8 without NUL bytes (a leading BOM is skipped), at
 * most max_len bytes. Nesting (tables, arrays and inline tables together, an
 * [[array of tables]] counting as two levels) is limited to
 * SPX_TOML_MAX_DEPTH levels, and each part of a key to SPX_TOML_MAX_KEY
 * bytes. The parser is safe on any bytes: every error is reported, none is
 * undefined. Errors are SPX_USAGE and read "FILE:LINE:COL: message", line
 * and column 1-based, the column counted in characters (tabs count one).
 */
#ifndef SPX_TOML_H
#define SPX_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPX_TOML_MAX_DEPTH 32
#define SPX_TOML_MAX_KEY 256

enum spx_toml_type {
	SPX_TOML_TABLE = 1,
	SPX_TOML_ARRAY,
	SPX_TOML_STRING,
	SPX_TOML_INTEGER,
	SPX_TOML_BOOL,
};

struct spx_toml;

/* One key of a table, in document order; line and col locate the key (for a
 * table made by a header, the last key of the header). */
struct spx_toml_entry {
	char *key;
	struct spx_toml *val;
	int line, col;
};

/* A node of the tree. Read-only for callers. line and col locate the value:
 * its first character, the '[' of the header that defined a table, the first
 * key that created an implicit table, 1:1 for the root. */
struct spx_toml {
	enum spx_toml_type type;
	int line, col;
	union {
		char *s;	/* STRING, NUL-terminated, valid UTF-8 */
		int64_t i;	/* INTEGER */
		bool b;		/* BOOL */
	} v;
	size_t n;			/* TABLE: entries; ARRAY: items */
	struct spx_toml_entry *ent;	/* TABLE */
	struct spx_toml **item;		/* ARRAY */

	/* Private to the parser. */
	size_t cap;
	unsigned flags;
	int depth;
	size_t *idx;
	size_t idxcap;
};

/* Parse len bytes of text (which need not be NUL-terminated); file names the
 * input in messages (NULL reads "<input>"). Returns the root table, which the
 * caller frees with spx_toml_free(), or NULL after spx_error(SPX_USAGE). */
struct spx_toml *spx_toml_parse(const char *file, const char *text, size_t len,
				size_t max_len);
void spx_toml_free(struct spx_toml *t);

/* "table", "array", "string", "integer", "boolean". */
const char *spx_toml_type_name(enum spx_toml_type type);

/* The value of key in table t, NULL if t is NULL, not a table or lacks it. */
const struct spx_toml *spx_toml_get(const struct spx_toml *t, const char *key);
/* The same returning the entry (to reach the key's position). */
const struct spx_toml_entry *spx_toml_get_entry(const struct spx_toml *t,
						const char *key);
/* Follow a dotted path of bare keys ("nodes.node1.gw"); NULL if any step is
 * missing or not a table. */
const struct spx_toml *spx_toml_path(const struct spx_toml *t,
				     const char *path);
/* Items of an array, entries of a table; 0 for anything else. */
size_t spx_toml_len(const struct spx_toml *t);
/* The i-th item of an array or the i-th value of a table, NULL out of range. */
const struct spx_toml *spx_toml_at(const struct spx_toml *t, size_t i);

#endif
