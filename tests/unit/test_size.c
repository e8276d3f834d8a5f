/* Unit tests for lib/core/size: spx_parse_size, _uint, _int from tables. */
#include "spx.h"

#include <inttypes.h>

#include "size.h"
#include "t.h"

#define K 1024ULL
#define M (K * K)
#define G (M * K)
#define T (G * K)
#define P (T * K)
#define E (P * K)

static const struct {
	const char *s;
	uint64_t want; /* when msg is NULL */
	const char *msg;
} sizes[] = {
	{ "0", 0, NULL },
	{ "1", 1, NULL },
	{ "007", 7, NULL },
	{ "512", 512, NULL },
	{ "1b", 1, NULL },
	{ "1B", 1, NULL },
	{ "1k", K, NULL },
	{ "1K", K, NULL },
	{ "1kB", K, NULL },
	{ "1KB", K, NULL },
	{ "1KiB", K, NULL },
	{ "1kiB", K, NULL },
	{ "2m", 2 * M, NULL },
	{ "2M", 2 * M, NULL },
	{ "2MB", 2 * M, NULL },
	{ "2MiB", 2 * M, NULL },
	{ "3g", 3 * G, NULL },
	{ "3G", 3 * G, NULL },
	{ "3GiB", 3 * G, NULL },
	{ "4T", 4 * T, NULL },
	{ "4TiB", 4 * T, NULL },
	{ "5P", 5 * P, NULL },
	{ "5PiB", 5 * P, NULL },
	{ "1E", E, NULL },
	{ "15E", 15 * E, NULL },
	{ "15EiB", 15 * E, NULL },
	{ "0E", 0, NULL },
	{ "16383P", 16383 * P, NULL },
	{ "17179869183G", 17179869183ULL * G, NULL },
	{ "18446744073709551615", UINT64_MAX, NULL },
	{ "018446744073709551615", UINT64_MAX, NULL },
	{ "18014398509481983k", 18014398509481983ULL * K, NULL },
	/* Refused. */
	{ "", 0, "size is empty" },
	{ "16E", 0,
	  "size '16E' is too large (the largest is 18446744073709551615)" },
	{ "17E", 0,
	  "size '17E' is too large (the largest is 18446744073709551615)" },
	{ "16384P", 0,
	  "size '16384P' is too large (the largest is 18446744073709551615)" },
	{ "18014398509481984k", 0,
	  "size '18014398509481984k' is too large (the largest is "
	  "18446744073709551615)" },
	{ "18446744073709551616", 0,
	  "size '18446744073709551616' is too large (the largest is "
	  "18446744073709551615)" },
	{ "99999999999999999999999", 0,
	  "size '99999999999999999999999' is too large (the largest is "
	  "18446744073709551615)" },
	{ "-1", 0, "size '-1' is negative" },
	{ "-0", 0, "size '-0' is negative" },
	{ "1.5G", 0, "invalid size '1.5G'" },
	{ " 1", 0, "invalid size ' 1'" },
	{ "1 ", 0, "invalid size '1 '" },
	{ "1 K", 0, "invalid size '1 K'" },
	{ "+1", 0, "invalid size '+1'" },
	{ "0x10", 0,
	  "size '0x10' has an unknown suffix (use b, K, M, G, T, P or E)" },
	{ "K", 0, "invalid size 'K'" },
	{ "abc", 0, "invalid size 'abc'" },
	{ "1KK", 0,
	  "size '1KK' has an unknown suffix (use b, K, M, G, T, P or E)" },
	{ "1Kb", 0,
	  "size '1Kb' has an unknown suffix (use b, K, M, G, T, P or E)" },
	{ "1KIB", 0,
	  "size '1KIB' has an unknown suffix (use b, K, M, G, T, P or E)" },
	{ "1Ki", 0,
	  "size '1Ki' has an unknown suffix (use b, K, M, G, T, P or E)" },
	{ "1bB", 0,
	  "size '1bB' has an unknown suffix (use b, K, M, G, T, P or E)" },
	{ "1s", 0,
	  "size '1s' has an unknown suffix (use b, K, M, G, T, P or E)" },
	{ "1Z", 0,
	  "size '1Z' has an unknown suffix (use b, K, M, G, T, P or E)" },
	{ "1e3", 0, "invalid size '1e3'" },
	{ "1G;", 0, "invalid size '1G;'" },
	{ "1GiB ", 0,
	  "size '1GiB ' has an unknown suffix (use b, K, M, G, T, P or E)" },
	{ "1\xC3\xA9", 0, "invalid size '1\xC3\xA9'" },
	{ "1,000", 0, "invalid size '1,000'" },
	{ "1_000", 0, "invalid size '1_000'" },
};

static void test_size(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(sizes); i++) {
		uint64_t v = 42;
		int rc = spx_parse_size(sizes[i].s, &v);

		if (!sizes[i].msg) {
			T_INT(rc, 0, "size '%s' parses", sizes[i].s);
			T_OK(v == sizes[i].want, "size '%s' is %" PRIu64,
			     sizes[i].s, sizes[i].want);
		} else {
			T_INT(rc, -1, "size '%s' is refused", sizes[i].s);
			T_STR(spx_errmsg(), sizes[i].msg, "size '%s': message",
			      sizes[i].s);
			T_INT(spx_errstatus(), SPX_USAGE,
			      "size '%s': usage error", sizes[i].s);
			T_OK(v == 42, "size '%s': out untouched", sizes[i].s);
		}
	}
	{
		uint64_t v;

		T_INT(spx_parse_size(NULL, &v), -1, "a NULL size is refused");
	}
}

static const struct {
	const char *name, *s;
	uint64_t min, max, want;
	const char *msg;
} uints[] = {
	{ "port", "1", 1, 65535, 1, NULL },
	{ "port", "65535", 1, 65535, 65535, NULL },
	{ "port", "8443", 1, 65535, 8443, NULL },
	{ "port", "00080", 1, 65535, 80, NULL },
	{ "count", "0", 0, UINT64_MAX, 0, NULL },
	{ "count", "18446744073709551615", 0, UINT64_MAX, UINT64_MAX, NULL },
	{ "port", "70000", 1, 65535, 0, "port '70000' is out of range 1..65535" },
	{ "port", "0", 1, 65535, 0, "port '0' is out of range 1..65535" },
	{ "port", "65536", 1, 65535, 0, "port '65536' is out of range 1..65535" },
	{ "port", "99999999999999999999", 1, 65535, 0,
	  "port '99999999999999999999' is out of range 1..65535" },
	{ "count", "18446744073709551616", 0, UINT64_MAX, 0,
	  "count '18446744073709551616' is out of range "
	  "0..18446744073709551615" },
	{ "port", "", 1, 65535, 0, "invalid port ''" },
	{ "port", "-1", 1, 65535, 0, "invalid port '-1'" },
	{ "port", "+1", 1, 65535, 0, "invalid port '+1'" },
	{ "port", " 1", 1, 65535, 0, "invalid port ' 1'" },
	{ "port", "1 ", 1, 65535, 0, "invalid port '1 '" },
	{ "port", "http", 1, 65535, 0, "invalid port 'http'" },
	{ "port", "0x50", 1, 65535, 0, "invalid port '0x50'" },
	{ "port", "80k", 1, 65535, 0, "invalid port '80k'" },
	{ "port", "1.0", 1, 65535, 0, "invalid port '1.0'" },
	{ NULL, "x", 0, 1, 0, "invalid value 'x'" },
	{ NULL, "2", 0, 1, 0, "value '2' is out of range 0..1" },
	{ "threads", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0, 1, 0,
	  "invalid threads 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaa'" },
};

static const struct {
	const char *name, *s;
	int64_t min, max, want;
	const char *msg;
} ints[] = {
	{ "n", "0", -5, 5, 0, NULL },
	{ "n", "-5", -5, 5, -5, NULL },
	{ "n", "5", -5, 5, 5, NULL },
	{ "n", "-0", -5, 5, 0, NULL },
	{ "n", "-9223372036854775808", INT64_MIN, INT64_MAX, INT64_MIN, NULL },
	{ "n", "9223372036854775807", INT64_MIN, INT64_MAX, INT64_MAX, NULL },
	{ "n", "-6", -5, 5, 0, "n '-6' is out of range -5..5" },
	{ "n", "6", -5, 5, 0, "n '6' is out of range -5..5" },
	{ "n", "-9223372036854775809", INT64_MIN, INT64_MAX, 0,
	  "n '-9223372036854775809' is out of range "
	  "-9223372036854775808..9223372036854775807" },
	{ "n", "9223372036854775808", INT64_MIN, INT64_MAX, 0,
	  "n '9223372036854775808' is out of range "
	  "-9223372036854775808..9223372036854775807" },
	{ "n", "18446744073709551616", INT64_MIN, INT64_MAX, 0,
	  "n '18446744073709551616' is out of range "
	  "-9223372036854775808..9223372036854775807" },
	{ "n", "", -5, 5, 0, "invalid n ''" },
	{ "n", "-", -5, 5, 0, "invalid n '-'" },
	{ "n", "--1", -5, 5, 0, "invalid n '--1'" },
	{ "n", "+1", -5, 5, 0, "invalid n '+1'" },
	{ "n", " -1", -5, 5, 0, "invalid n ' -1'" },
	{ "n", "- 1", -5, 5, 0, "invalid n '- 1'" },
	{ "n", "1-", -5, 5, 0, "invalid n '1-'" },
};

static void test_ints(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(uints); i++) {
		uint64_t v = 42;
		int rc = spx_parse_uint(uints[i].name, uints[i].s, uints[i].min,
					uints[i].max, &v);

		if (!uints[i].msg) {
			T_INT(rc, 0, "uint '%s' parses", uints[i].s);
			T_OK(v == uints[i].want, "uint '%s' is %" PRIu64,
			     uints[i].s, uints[i].want);
		} else {
			T_INT(rc, -1, "uint '%s' is refused", uints[i].s);
			T_STR(spx_errmsg(), uints[i].msg, "uint '%.20s': message",
			      uints[i].s);
			T_INT(spx_errstatus(), SPX_USAGE, "uint: usage error");
			T_OK(v == 42, "uint '%.20s': out untouched", uints[i].s);
		}
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(ints); i++) {
		int64_t v = 42;
		int rc = spx_parse_int(ints[i].name, ints[i].s, ints[i].min,
				       ints[i].max, &v);

		if (!ints[i].msg) {
			T_INT(rc, 0, "int '%s' parses", ints[i].s);
			T_OK(v == ints[i].want, "int '%s' is %" PRId64,
			     ints[i].s, ints[i].want);
		} else {
			T_INT(rc, -1, "int '%s' is refused", ints[i].s);
			T_STR(spx_errmsg(), ints[i].msg, "int '%s': message",
			      ints[i].s);
			T_OK(v == 42, "int '%s': out untouched", ints[i].s);
		}
	}
}

/* spx_size_str writes what spx_parse_size reads back. */
static void test_size_str(void)
{
	static const struct {
		uint64_t v;
		const char *want;
	} cases[] = {
		{ 0, "0" },
		{ 512, "512" },
		{ 1023, "1023" },
		{ 1024, "1K" },
		{ 1536, "1.5K" },
		{ 1048576, "1M" },
		{ 30ULL << 30, "30G" },
		{ (1ULL << 30) + (1ULL << 29), "1.5G" },
		{ 64ULL << 40, "64T" },
		{ 1ULL << 60, "1E" },
		{ UINT64_MAX, "16.0E" },
	};
	char buf[SPX_SIZE_STR];

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		uint64_t back = 0;

		spx_size_str(cases[i].v, buf, sizeof(buf));
		T_STR(buf, cases[i].want, "size_str %" PRIu64, cases[i].v);
		if (!strchr(buf, '.'))
			T_OK(spx_parse_size(buf, &back) == 0 &&
				     back == cases[i].v,
			     "size_str %s parses back", buf);
	}
}

int main(void)
{
	test_size();
	test_ints();
	test_size_str();
	return t_done();
}
