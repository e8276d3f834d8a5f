/* Unit tests for lib/http/httpdate: dates, ranges, preconditions. */
#include "spx.h"

#include "http/httpdate.h"
#include "t.h"

static void dates(void)
{
	static const struct {
		const char *in;
		long long want; /* -1: refused */
	} cases[] = {
		{ "Sun, 06 Nov 1994 08:49:37 GMT", 784111777 },
		{ "Sunday, 06-Nov-94 08:49:37 GMT", 784111777 },
		{ "Sun Nov  6 08:49:37 1994", 784111777 },
		{ "Mon, 30 Nov 2026 20:15:00 GMT", 1796069700 },
		{ "Thu, 01 Jan 1970 00:00:00 GMT", 0 },
		{ "Sun, 06 Nov 1994 08:49:37 UTC", -1 },
		{ "Sun, 06 Nov 1994 24:00:00 GMT", -1 },
		{ "Sun, 06 Foo 1994 08:49:37 GMT", -1 },
		{ "Sun, 6 Nov 1994 08:49:37 GMT", -1 },
		{ "", -1 },
		{ "1994-11-06T08:49:37Z", -1 },
		{ "Sun, 00 Nov 1994 08:49:37 GMT", -1 },
		{ "Sun, 06 Nov 1994 08:49:37 +0000", 784111777 },
		{ "Sun, 06 Nov 1994 08:49:37 -0000", 784111777 },
		{ "Sun, 06 Nov 1994 08:49:37 +0100", -1 },
		/* never rolled over into the next month */
		{ "Mon, 30 Feb 2026 00:00:00 GMT", -1 },
		{ "Thu, 31 Apr 2026 00:00:00 GMT", -1 },
		{ "Thu, 29 Feb 2024 00:00:00 GMT", 1709164800 },
		{ "Fri, 29 Feb 2025 00:00:00 GMT", -1 },
		{ "Sun, 06 Nov 1994 08:60:37 GMT", -1 },
	};
	static const struct {
		const char *in;
		long long want; /* -1: refused */
	} amz[] = {
		{ "20130524T000000Z", 1369353600 },
		{ "19700101T000000Z", 0 },
		{ "20240229T235959Z", 1709251199 },
		{ "20250229T000000Z", -1 },
		{ "20130524T240000Z", -1 },
		{ "20130524T000000", -1 },
		{ "20130524 000000Z", -1 },
		{ "2013052AT000000Z", -1 },
		{ "20130524T000000Z0", -1 },
	};
	char buf[64];
	char ad[17];

	for (size_t i = 0; i < SPX_ARRAY_SIZE(amz); i++) {
		time_t t = 0;
		bool ok = spx_amz_date_parse(amz[i].in, strlen(amz[i].in), &t);

		if (amz[i].want < 0)
			T_OK(!ok, "amz date '%s' is refused", amz[i].in);
		else
			T_OK(ok && t == amz[i].want, "amz date '%s'", amz[i].in);
	}
	T_OK(spx_amz_date(1369353600, ad) && !strcmp(ad, "20130524T000000Z"),
	     "format an amz date (%s)", ad);
	T_OK(spx_amz_day_valid("20240229", 8), "a leap day is a day");
	T_OK(!spx_amz_day_valid("20250229", 8), "Feb 29 2025 is not");
	T_OK(!spx_amz_day_valid("2025022", 7), "8 digits");

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		time_t t = 0;
		int rc = spx_http_date_parse(cases[i].in, &t);

		if (cases[i].want < 0)
			T_INT(rc, -1, "date '%s' is refused", cases[i].in);
		else
			T_OK(rc == 0 && t == cases[i].want, "date '%s'",
			     cases[i].in);
	}
	spx_http_date(784111777, buf, sizeof(buf));
	T_STR(buf, "Sun, 06 Nov 1994 08:49:37 GMT", "format an HTTP date");
	spx_iso8601_ms(784111777, buf, sizeof(buf));
	T_STR(buf, "1994-11-06T08:49:37.000Z", "format an ISO 8601 date");
}

static void ranges(void)
{
	static const struct {
		const char *h;
		uint64_t size;
		enum spx_range_rc rc;
		uint64_t first, last;
	} cases[] = {
		{ "bytes=0-99", 1000, SPX_RANGE_OK, 0, 99 },
		{ "bytes=100-", 1000, SPX_RANGE_OK, 100, 999 },
		{ "bytes=-100", 1000, SPX_RANGE_OK, 900, 999 },
		{ "bytes=-5000", 1000, SPX_RANGE_OK, 0, 999 },
		{ "bytes=990-5000", 1000, SPX_RANGE_OK, 990, 999 },
		{ "bytes=999-999", 1000, SPX_RANGE_OK, 999, 999 },
		{ "bytes=1000-", 1000, SPX_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=1000-2000", 1000, SPX_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-0", 1000, SPX_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=0-0", 0, SPX_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-1", 0, SPX_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=5-1", 1000, SPX_RANGE_NONE, 0, 0 },
		{ "bytes=0-1,5-6", 1000, SPX_RANGE_NONE, 0, 0 },
		{ "items=0-1", 1000, SPX_RANGE_NONE, 0, 0 },
		{ "bytes=a-b", 1000, SPX_RANGE_NONE, 0, 0 },
		{ "bytes=-", 1000, SPX_RANGE_NONE, 0, 0 },
		{ "bytes= 0-1", 1000, SPX_RANGE_NONE, 0, 0 },
		{ "bytes=0-18446744073709551615", 10, SPX_RANGE_OK, 0, 9 },
		{ "bytes=0-18446744073709551616", 10, SPX_RANGE_NONE, 0, 0 },
		{ NULL, 10, SPX_RANGE_NONE, 0, 0 },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		struct spx_range r = { 0, 0 };
		enum spx_range_rc rc = spx_range_parse(cases[i].h,
						       cases[i].size, &r);

		T_INT(rc, cases[i].rc, "range '%s' of %llu",
		      cases[i].h ? cases[i].h : "(none)",
		      (unsigned long long)cases[i].size);
		if (rc == SPX_RANGE_OK)
			T_OK(r.first == cases[i].first && r.last == cases[i].last,
			     "range '%s' bounds", cases[i].h);
	}
}

static void conditions(void)
{
	const char *etag = "\"9b2cf535f27731c974343645a3985328\"";
	const time_t lm = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
	static const struct {
		struct spx_cond c;
		bool read;
		enum spx_cond_rc want;
		const char *name;
	} cases[] = {
		{ { NULL, NULL, NULL, NULL }, true, SPX_COND_PASS, "none" },
		{ { "\"9b2cf535f27731c974343645a3985328\"", NULL, NULL, NULL },
		  true, SPX_COND_PASS, "if-match hit" },
		{ { "9b2cf535f27731c974343645a3985328", NULL, NULL, NULL },
		  true, SPX_COND_PASS, "if-match hit, unquoted" },
		{ { "\"x\", \"9b2cf535f27731c974343645a3985328\"", NULL, NULL,
		    NULL },
		  true, SPX_COND_PASS, "if-match list" },
		{ { "*", NULL, NULL, NULL }, true, SPX_COND_PASS, "if-match *" },
		{ { "\"other\"", NULL, NULL, NULL }, true, SPX_COND_FAILED,
		  "if-match miss" },
		{ { NULL, "\"9b2cf535f27731c974343645a3985328\"", NULL, NULL },
		  true, SPX_COND_NOT_MODIFIED, "if-none-match hit on read" },
		{ { NULL, "*", NULL, NULL }, false, SPX_COND_FAILED,
		  "if-none-match * on write" },
		{ { NULL, "\"other\"", NULL, NULL }, true, SPX_COND_PASS,
		  "if-none-match miss" },
		{ { NULL, NULL, "Sun, 06 Nov 1994 08:49:37 GMT", NULL }, true,
		  SPX_COND_NOT_MODIFIED, "not modified since" },
		{ { NULL, NULL, "Sat, 05 Nov 1994 08:49:37 GMT", NULL }, true,
		  SPX_COND_PASS, "modified since" },
		{ { NULL, NULL, NULL, "Sat, 05 Nov 1994 08:49:37 GMT" }, true,
		  SPX_COND_FAILED, "modified after unmodified-since" },
		{ { NULL, NULL, NULL, "Sun, 06 Nov 1994 08:49:37 GMT" }, true,
		  SPX_COND_PASS, "unmodified since" },
		{ { "\"9b2cf535f27731c974343645a3985328\"", NULL, NULL,
		    "Sat, 05 Nov 1994 08:49:37 GMT" },
		  true, SPX_COND_PASS,
		  "if-match true overrides if-unmodified-since false" },
		{ { NULL, "\"9b2cf535f27731c974343645a3985328\"",
		    "Sat, 05 Nov 1994 08:49:37 GMT", NULL },
		  true, SPX_COND_NOT_MODIFIED,
		  "if-none-match false overrides if-modified-since true" },
		{ { NULL, NULL, "garbage", NULL }, true, SPX_COND_PASS,
		  "a bad date is ignored" },
		{ { NULL, NULL, "Sun, 06 Nov 1994 08:49:37 GMT", NULL }, false,
		  SPX_COND_FAILED, "copy source not modified since: 412" },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++)
		T_INT(spx_cond_eval(&cases[i].c, etag, lm, cases[i].read),
		      cases[i].want, "condition: %s", cases[i].name);
	T_OK(spx_etag_list_match("W/\"abc\"", "abc"), "a weak tag matches");
	T_OK(!spx_etag_list_match("", "abc"), "an empty list matches nothing");
}

int main(void)
{
	dates();
	ranges();
	conditions();
	return t_done();
}
