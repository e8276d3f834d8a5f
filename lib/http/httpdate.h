/* httpdate.h: HTTP dates, byte ranges and conditional requests, the
 * header grammar S3 GET/HEAD/PUT/COPY share. All parsers are bounded and
 * total: any input gives an answer or a clean refusal. */
#ifndef SPX_HTTPDATE_H
#define SPX_HTTPDATE_H

#include "spx.h"

/* "Sun, 06 Nov 1994 08:49:37 GMT" into out (at least 30 bytes). */
void spx_http_date(time_t t, char *out, size_t sz);
/* "2026-11-30T20:15:00.000Z" (S3 listings' LastModified). */
void spx_iso8601_ms(time_t t, char *out, size_t sz);
/* Parse the three HTTP-date forms (IMF-fixdate, also with the zone
 * written "+0000" or "-0000" as RFC 2822 and botocore write it; RFC 850;
 * asctime). Strict: a day the month does not have is refused, never
 * rolled over. Returns 0, or -1 (SPX_USAGE) for anything else. */
int spx_http_date_parse(const char *s, time_t *out);

/* SigV4's dates. "20130524T000000Z" (ISO 8601 basic, UTC), exactly
 * those n = 16 bytes, strict as above: true and *out, or false. */
bool spx_amz_date_parse(const char *s, size_t n, time_t *out);
/* The same form of t into out (17 bytes); false for a time gmtime
 * cannot show. */
bool spx_amz_date(time_t t, char out[17]);
/* "20130524", a credential scope's day: exactly n = 8 bytes, a real
 * date. */
bool spx_amz_day_valid(const char *s, size_t n);

/* A single byte range of a representation of `size` bytes. */
struct spx_range {
	uint64_t first, last; /* inclusive */
};

enum spx_range_rc {
	SPX_RANGE_NONE = 0,	  /* no usable Range: send it all (200) */
	SPX_RANGE_OK = 1,	  /* send first..last (206) */
	SPX_RANGE_UNSATISFIABLE = 2, /* 416 InvalidRange */
};

/* Evaluate a Range header as S3 does: "bytes=a-b", "bytes=a-",
 * "bytes=-n"; a syntactically invalid header or several ranges are
 * ignored (the whole object, 200); a valid range that starts beyond the
 * end (or a suffix of 0) is unsatisfiable. A last beyond the end is
 * clamped. */
enum spx_range_rc spx_range_parse(const char *h, uint64_t size,
				  struct spx_range *out);

/* The precondition headers of a request. NULL where absent. */
struct spx_cond {
	const char *if_match, *if_none_match;
	const char *if_modified_since, *if_unmodified_since;
};

enum spx_cond_rc {
	SPX_COND_PASS = 0,
	SPX_COND_NOT_MODIFIED = 304, /* GET/HEAD only */
	SPX_COND_FAILED = 412,	    /* PreconditionFailed */
};

/* Evaluate preconditions against an object's ETag (quoted or not) and
 * Last-Modified, with S3's precedence: If-Match true overrides a false
 * If-Unmodified-Since; If-None-Match false (304) overrides a true
 * If-Modified-Since. read: GET/HEAD (304 possible) rather than a write or
 * a copy source (412 instead). Unparseable dates are ignored. */
enum spx_cond_rc spx_cond_eval(const struct spx_cond *c, const char *etag,
			       time_t last_modified, bool read);
/* Does an If-Match / If-None-Match list ("*", "\"a\", \"b\"", W/ tags)
 * name this ETag? */
bool spx_etag_list_match(const char *list, const char *etag);

#endif
