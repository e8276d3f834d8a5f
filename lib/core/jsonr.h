/* jsonr.h: a bounded JSON reader that walks a document in place.
 *
 * jansson (which spx uses to write JSON and to read documents of any
 * shape) builds a tree of allocated nodes: 5 to 7 µs for the 300-byte
 * metadata record that every GET reads. A reader that knows the shape it
 * wants can take each value as it comes instead: this one is a strict
 * RFC 8259 pull parser (UTF-8 checked, no NUL in strings, depth bounded)
 * that allocates only the buffer its strings are decoded into.
 * fuzz_jsonr checks that it accepts exactly what jansson accepts and
 * reads the same values.
 *
 * Use: spx_jr_init, then for an object spx_jr_obj and a loop of
 * spx_jr_key (the key is in jr->s) each followed by one value call
 * (spx_jr_str, spx_jr_int, ... or spx_jr_skip); arrays the same with
 * spx_jr_arr and spx_jr_item. Every call returns false (or -1) on bad
 * input, after which the reader stays failed; spx_jr_end checks that
 * nothing but whitespace follows the document. */
#ifndef SPX_JSONR_H
#define SPX_JSONR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum spx_jr_type {
	SPX_JR_BAD,
	SPX_JR_OBJ,
	SPX_JR_ARR,
	SPX_JR_STR,
	SPX_JR_NUM,
	SPX_JR_TRUE,
	SPX_JR_FALSE,
	SPX_JR_NULL,
};

struct spx_jr {
	const char *p, *end;
	int depth, max_depth;
	bool first;	 /* no member yet in the innermost container */
	bool failed;
	struct spx_buf s; /* the last string or key, NUL-terminated */
};

#define SPX_JR_DEPTH 64

/* Read p[0..n); nesting deeper than SPX_JR_DEPTH is refused. */
void spx_jr_init(struct spx_jr *j, const char *p, size_t n);
void spx_jr_release(struct spx_jr *j);
/* The type of the next value, without taking it (SPX_JR_BAD at the end
 * of the input or before anything that cannot start a value). */
enum spx_jr_type spx_jr_peek(struct spx_jr *j);
/* Take '{' or '['. */
bool spx_jr_obj(struct spx_jr *j);
bool spx_jr_arr(struct spx_jr *j);
/* The next member of the object: 1 with its key in j->s and the ':'
 * taken (the value is next), 0 at its end (the '}' taken), -1 on bad
 * input. */
int spx_jr_key(struct spx_jr *j);
/* The next element of the array: 1 when one follows, 0 at its end (the
 * ']' taken), -1 on bad input. */
int spx_jr_item(struct spx_jr *j);
/* A string, decoded into j->s (j->s.len bytes, no NUL inside). */
bool spx_jr_str(struct spx_jr *j);
/* An integer: no fraction, no exponent, within int64_t. */
bool spx_jr_int(struct spx_jr *j, int64_t *v);
/* Any number: its text (*t, *n, not NUL-terminated) and whether it is
 * an integer (no fraction or exponent). */
bool spx_jr_num(struct spx_jr *j, const char **t, size_t *n, bool *is_int);
bool spx_jr_bool(struct spx_jr *j, bool *v);
bool spx_jr_null(struct spx_jr *j);
/* Any value, checked as strictly as if it were read. */
bool spx_jr_skip(struct spx_jr *j);
/* Only whitespace is left, and nothing failed. */
bool spx_jr_end(struct spx_jr *j);

#endif
