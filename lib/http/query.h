/* query.h: percent-encoding (RFC 3986, as AWS SigV4 uses it) and the
 * parsing of query strings and application/x-www-form-urlencoded bodies.
 *
 * Flags, or'ed:
 *   SPX_URI_PLUS     decoding: '+' is a space (form bodies, the EC2 Query
 *                    API). Without it '+' stays '+', as in an S3 URI.
 *   SPX_URI_LENIENT  decoding: a '%' not followed by two hex digits stays
 *                    as it is. Without it that is an error (the default).
 *   SPX_URI_SLASH    encoding: keep '/' (a SigV4 canonical S3 path).
 *   SPX_URI_NONUL    decoding: a %00 is an error (SPX_USAGE), for names
 *                    kept as C strings (an S3 bucket, key, copy source).
 *
 * spx_uri_encode keeps A-Z a-z 0-9 - . _ ~ and writes every other byte
 * as %XX with uppercase hex, so it also gives SigV4's canonical form.
 * spx_uri_decode accepts either case of hex. Both append to out and are
 * binary-safe: the decoded bytes may hold NUL (a caller that keeps a C
 * string must refuse it: SPX_URI_NONUL, or as spx_query_parse does).
 *
 * spx_query_parse appends the parameters of s[0..len) to out in order,
 * duplicates included: it splits on '&', then on the first '=', and
 * decodes both sides. A parameter without '=' ("?uploads", "?tagging") has
 * the value ""; empty pieces ("a=1&&b=2") are skipped. It fails with
 * SPX_USAGE, leaving out as it was, on a bad escape (unless LENIENT), a
 * NUL after decoding, more than SPX_QUERY_MAX_PARAMS parameters, or more
 * than SPX_QUERY_MAX_BYTES bytes of input; spx_query_parse_max sets those
 * two bounds itself (0: the default). */
#ifndef SPX_QUERY_H
#define SPX_QUERY_H

#include "spx.h"

enum {
	SPX_URI_PLUS = 1 << 0,
	SPX_URI_LENIENT = 1 << 1,
	SPX_URI_SLASH = 1 << 2,
	SPX_URI_NONUL = 1 << 3,
};

#define SPX_QUERY_MAX_PARAMS ((size_t)1000)
#define SPX_QUERY_MAX_BYTES ((size_t)1 << 20)

/* Decode s[0..len) onto out; -1 on a bad escape (SPX_USAGE). */
int spx_uri_decode(const char *s, size_t len, int flags, struct spx_buf *out);
/* Encode s[0..len) onto out; never fails. */
void spx_uri_encode(const char *s, size_t len, int flags,
		    struct spx_buf *out);

int spx_query_parse(const char *s, size_t len, int flags,
		    struct spx_kvlist *out);
int spx_query_parse_max(const char *s, size_t len, int flags,
			size_t max_params, size_t max_bytes,
			struct spx_kvlist *out);

#endif
