#include "spx.h"

#include "http/httpdate.h"

static const char days[] = "SunMonTueWedThuFriSat";
static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

void spx_http_date(time_t t, char *out, size_t sz)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, sz, "%.3s, %02d %.3s %04d %02d:%02d:%02d GMT",
		 days + 3 * tm.tm_wday, tm.tm_mday, months + 3 * tm.tm_mon,
		 tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void spx_iso8601_ms(time_t t, char *out, size_t sz)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, sz, "%04d-%02d-%02dT%02d:%02d:%02d.000Z",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec);
}

static int month(const char *s)
{
	for (int i = 0; i < 12; i++)
		if (!strncmp(s, months + 3 * i, 3))
			return i;
	return -1;
}

/* n decimal digits at s, or -1. */
static int digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil), without the time zone timegm would consult. */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	long long era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

static bool valid_ymd(int y, int m, int d)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30,
				     31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	if (y < 1970 || m < 1 || m > 12 || d < 1)
		return false;
	return d <= mdays[m - 1] + (m == 2 && leap);
}

/* A UTC time from its parts (month 1..12), checked. */
static bool make_time(int y, int mo, int d, int h, int mi, int sec,
		      time_t *out)
{
	if (!valid_ymd(y, mo, d) || h < 0 || h > 23 || mi < 0 || mi > 59 ||
	    sec < 0 || sec > 60)
		return false;
	*out = (time_t)(days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
			h * 3600 + mi * 60 + sec);
	return true;
}

/* "HH:MM:SS" at s into h, m, sec. */
static bool hms(const char *s, int *h, int *m, int *sec)
{
	if (s[2] != ':' || s[5] != ':')
		return false;
	*h = digits(s, 2);
	*m = digits(s + 3, 2);
	*sec = digits(s + 6, 2);
	return *h >= 0 && *m >= 0 && *sec >= 0;
}

int spx_http_date_parse(const char *s, time_t *out)
{
	size_t n = strlen(s);
	int y, mo, d, h, mi, sec;
	const char *c;

	if ((n == 29 && !strcmp(s + 25, " GMT")) ||
	    (n == 31 && (!strcmp(s + 25, " +0000") ||
			 !strcmp(s + 25, " -0000")))) {
		/* Sun, 06 Nov 1994 08:49:37 GMT */
		if (s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
		    s[16] != ' ' || !hms(s + 17, &h, &mi, &sec))
			goto bad;
		d = digits(s + 5, 2);
		mo = month(s + 8) + 1;
		y = digits(s + 12, 4);
	} else if (n == 24 && s[3] == ' ' && s[7] == ' ' && s[10] == ' ' &&
		   s[19] == ' ') {
		/* Sun Nov  6 08:49:37 1994 */
		if (!hms(s + 11, &h, &mi, &sec))
			goto bad;
		mo = month(s + 4) + 1;
		d = s[8] == ' ' ? digits(s + 9, 1) : digits(s + 8, 2);
		y = digits(s + 20, 4);
	} else if ((c = strchr(s, ',')) && c - s >= 6 && c - s <= 9 &&
		   strlen(c) == 24 && c[1] == ' ' && c[4] == '-' &&
		   c[8] == '-' && c[11] == ' ' && !strcmp(c + 20, " GMT")) {
		/* Sunday, 06-Nov-94 08:49:37 GMT */
		if (!hms(c + 12, &h, &mi, &sec))
			goto bad;
		y = digits(c + 9, 2);
		y = y < 0 ? -1 : y < 70 ? y + 2000 : y + 1900;
		d = digits(c + 2, 2);
		mo = month(c + 5) + 1;
	} else {
		goto bad;
	}
	if (make_time(y, mo, d, h, mi, sec, out))
		return 0;
bad:
	return spx_error(SPX_USAGE, "bad HTTP date");
}

bool spx_amz_date_parse(const char *s, size_t n, time_t *out)
{
	if (n != 16 || s[8] != 'T' || s[15] != 'Z')
		return false;
	return make_time(digits(s, 4), digits(s + 4, 2), digits(s + 6, 2),
			 digits(s + 9, 2), digits(s + 11, 2), digits(s + 13, 2),
			 out);
}

bool spx_amz_date(time_t t, char out[17])
{
	struct tm tm;

	if (!gmtime_r(&t, &tm))
		return false;
	return strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) == 16;
}

bool spx_amz_day_valid(const char *s, size_t n)
{
	return n == 8 &&
	       valid_ymd(digits(s, 4), digits(s + 4, 2), digits(s + 6, 2));
}

static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (!n || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

enum spx_range_rc spx_range_parse(const char *h, uint64_t size,
				  struct spx_range *out)
{
	const char *spec, *dash;
	uint64_t a, b;

	if (!h || strncmp(h, "bytes=", 6))
		return SPX_RANGE_NONE;
	spec = h + 6;
	if (strchr(spec, ','))
		return SPX_RANGE_NONE; /* S3 serves one range only */
	dash = strchr(spec, '-');
	if (!dash)
		return SPX_RANGE_NONE;
	if (dash == spec) {
		/* bytes=-n: the last n bytes */
		if (!parse_u64(dash + 1, strlen(dash + 1), &b))
			return SPX_RANGE_NONE;
		if (b == 0 || size == 0)
			return SPX_RANGE_UNSATISFIABLE;
		out->first = b >= size ? 0 : size - b;
		out->last = size - 1;
		return SPX_RANGE_OK;
	}
	if (!parse_u64(spec, (size_t)(dash - spec), &a))
		return SPX_RANGE_NONE;
	if (!dash[1]) {
		b = UINT64_MAX;
	} else if (!parse_u64(dash + 1, strlen(dash + 1), &b) || b < a) {
		return SPX_RANGE_NONE;
	}
	if (a >= size)
		return SPX_RANGE_UNSATISFIABLE;
	out->first = a;
	out->last = b >= size ? size - 1 : b;
	return SPX_RANGE_OK;
}

/* The tag without quotes or a weak prefix: "abc" from W/"abc". */
static void bare(const char *s, size_t n, const char **out, size_t *outn)
{
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n >= 2 && s[0] == 'W' && s[1] == '/') {
		s += 2;
		n -= 2;
	}
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		s++;
		n -= 2;
	}
	*out = s;
	*outn = n;
}

bool spx_etag_list_match(const char *list, const char *etag)
{
	const char *e, *p = list;
	size_t en;

	bare(etag, strlen(etag), &e, &en);
	while (p && *p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		const char *t;
		size_t tn;

		bare(p, n, &t, &tn);
		if ((tn == 1 && *t == '*') || (tn == en && !memcmp(t, e, en)))
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

enum spx_cond_rc spx_cond_eval(const struct spx_cond *c, const char *etag,
			       time_t last_modified, bool read)
{
	time_t t;
	bool match_ok = false;

	if (c->if_match) {
		if (!spx_etag_list_match(c->if_match, etag))
			return SPX_COND_FAILED;
		match_ok = true;
	}
	if (!match_ok && c->if_unmodified_since &&
	    spx_http_date_parse(c->if_unmodified_since, &t) == 0 &&
	    last_modified > t)
		return SPX_COND_FAILED;
	if (c->if_none_match) {
		if (spx_etag_list_match(c->if_none_match, etag))
			return read ? SPX_COND_NOT_MODIFIED : SPX_COND_FAILED;
		return SPX_COND_PASS;
	}
	if (c->if_modified_since &&
	    spx_http_date_parse(c->if_modified_since, &t) == 0 &&
	    last_modified <= t)
		return read ? SPX_COND_NOT_MODIFIED : SPX_COND_FAILED;
	return SPX_COND_PASS;
}
