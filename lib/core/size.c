/* size.c: bounded number parsers (contract in size.h). */
#include "spx.h"

#include <inttypes.h>

#include "size.h"

/* How much of a bad input to quote in a message. */
#define QUOTE 64

/* Parse the leading decimal digits of s into *v; *end is the first
 * character after them. Returns 0, -1 when there is no digit, -2 on
 * overflow of uint64_t. */
static int digits(const char *s, const char **end, uint64_t *v)
{
	uint64_t n = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (n > (UINT64_MAX - d) / 10) {
			while (p[1] >= '0' && p[1] <= '9')
				p++;
			*end = p + 1;
			return -2;
		}
		n = n * 10 + d;
	}
	*end = p;
	if (p == s)
		return -1;
	*v = n;
	return 0;
}

int spx_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "kmgtpe";
	const char *end, *u;
	uint64_t v;
	unsigned shift = 0;
	int rc;

	if (!s || !*s)
		return spx_error(SPX_USAGE, "size is empty");
	if (*s == '-')
		return spx_error(SPX_USAGE, "size '%.*s' is negative", QUOTE, s);
	rc = digits(s, &end, &v);
	if (rc == -1)
		return spx_error(SPX_USAGE, "invalid size '%.*s'", QUOTE, s);
	if (*end) {
		if ((*end == 'b' || *end == 'B') && !end[1]) {
			end++;
		} else if ((u = strchr(units, *end | 0x20))) {
			shift = 10 * (unsigned)(u - units + 1);
			end++;
			if (!strcmp(end, "iB") || !strcmp(end, "B"))
				end += strlen(end);
		}
		if (*end && !((*end >= 'a' && *end <= 'z') ||
			      (*end >= 'A' && *end <= 'Z')))
			return spx_error(SPX_USAGE, "invalid size '%.*s'",
					 QUOTE, s);
		if (*end)
			return spx_error(SPX_USAGE,
					 "size '%.*s' has an unknown suffix "
					 "(use b, K, M, G, T, P or E)",
					 QUOTE, s);
	}
	if (rc == -2 || (shift && v > UINT64_MAX >> shift))
		return spx_error(SPX_USAGE,
				 "size '%.*s' is too large (the largest is "
				 "%" PRIu64 ")",
				 QUOTE, s, UINT64_MAX);
	*out = v << shift;
	return 0;
}

int spx_parse_uint(const char *name, const char *s, uint64_t min,
		   uint64_t max, uint64_t *out)
{
	const char *end;
	uint64_t v;
	int rc;

	if (!name)
		name = "value";
	if (!s)
		s = "";
	rc = digits(s, &end, &v);
	if (rc == -1 || *end)
		return spx_error(SPX_USAGE, "invalid %s '%.*s'", name, QUOTE,
				 s);
	if (rc == -2 || v < min || v > max)
		return spx_error(SPX_USAGE,
				 "%s '%.*s' is out of range %" PRIu64
				 "..%" PRIu64,
				 name, QUOTE, s, min, max);
	*out = v;
	return 0;
}

int spx_parse_int(const char *name, const char *s, int64_t min, int64_t max,
		  int64_t *out)
{
	const char *end;
	bool neg;
	uint64_t v;
	int64_t r;
	int rc;

	if (!name)
		name = "value";
	if (!s)
		s = "";
	neg = *s == '-';
	rc = digits(s + neg, &end, &v);
	if (rc == -1 || *end)
		return spx_error(SPX_USAGE, "invalid %s '%.*s'", name, QUOTE,
				 s);
	if (rc == -2 || (neg ? v > (uint64_t)INT64_MAX + 1
			     : v > (uint64_t)INT64_MAX))
		goto range;
	if (neg)
		r = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		r = (int64_t)v;
	if (r < min || r > max)
		goto range;
	*out = r;
	return 0;
range:
	return spx_error(SPX_USAGE,
			 "%s '%.*s' is out of range %" PRId64 "..%" PRId64,
			 name, QUOTE, s, min, max);
}

void spx_size_str(uint64_t v, char *out, size_t n)
{
	static const char units[] = "KMGTPE";
	unsigned i = 0;

	if (v < 1024) {
		snprintf(out, n, "%" PRIu64, v);
		return;
	}
	while (i + 1 < sizeof(units) - 1 && v >> (10 * (i + 2)))
		i++;
	if (!(v & ((UINT64_C(1) << (10 * (i + 1))) - 1)))
		snprintf(out, n, "%" PRIu64 "%c", v >> (10 * (i + 1)), units[i]);
	else
		snprintf(out, n, "%.1f%c",
			 (double)v / (double)(UINT64_C(1) << (10 * (i + 1))),
			 units[i]);
}
