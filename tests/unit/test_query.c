/* Unit tests for lib/http/query: percent-decoding and -encoding, and
 * query/form parsing. */
#include "spx.h"

#include "http/query.h"
#include "t.h"

#define S(lit) lit, sizeof(lit) - 1

static const struct {
	const char *in;
	int flags;
	const char *out; /* NULL: refused with msg */
	size_t outlen;
	const char *msg;
} dec[] = {
	{ "", 0, "", 0, NULL },
	{ "abc", 0, "abc", 3, NULL },
	{ "a%20b", 0, "a b", 3, NULL },
	{ "%41%42%43", 0, "ABC", 3, NULL },
	{ "%2f%2F", 0, "//", 2, NULL },
	{ "%e2%82%ac", 0, "\xE2\x82\xAC", 3, NULL },
	{ "%C3%A9t%C3%A9", 0, "\xC3\xA9t\xC3\xA9", 5, NULL },
	{ "%00", 0, "\0", 1, NULL },
	{ "%00", SPX_URI_NONUL, NULL, 0, "an encoded NUL at byte 0" },
	{ "ab%2500%00", SPX_URI_NONUL, NULL, 0, "an encoded NUL at byte 7" },
	{ "ab%2500", SPX_URI_NONUL, "ab%00", 5, NULL },
	{ "%FF", 0, "\xFF", 1, NULL },
	{ "a+b", 0, "a+b", 3, NULL },
	{ "a+b", SPX_URI_PLUS, "a b", 3, NULL },
	{ "a%2Bb", SPX_URI_PLUS, "a+b", 3, NULL },
	{ "++", SPX_URI_PLUS, "  ", 2, NULL },
	{ "%25", 0, "%", 1, NULL },
	{ "%2525", 0, "%25", 3, NULL },
	{ "~-._", 0, "~-._", 4, NULL },
	{ "a=b&c", 0, "a=b&c", 5, NULL },
	{ "%", 0, NULL, 0, "invalid percent-encoding at byte 0" },
	{ "a%", 0, NULL, 0, "invalid percent-encoding at byte 1" },
	{ "ab%4", 0, NULL, 0, "invalid percent-encoding at byte 2" },
	{ "%G0", 0, NULL, 0, "invalid percent-encoding at byte 0" },
	{ "%0G", 0, NULL, 0, "invalid percent-encoding at byte 0" },
	{ "x%%41", 0, NULL, 0, "invalid percent-encoding at byte 1" },
	{ "% 1", 0, NULL, 0, "invalid percent-encoding at byte 0" },
	{ "%-1", 0, NULL, 0, "invalid percent-encoding at byte 0" },
	{ "%+1", SPX_URI_PLUS, NULL, 0, "invalid percent-encoding at byte 0" },
	{ "%", SPX_URI_LENIENT, "%", 1, NULL },
	{ "a%zz%41", SPX_URI_LENIENT, "a%zzA", 5, NULL },
	{ "%4", SPX_URI_LENIENT, "%4", 2, NULL },
	{ "%%41", SPX_URI_LENIENT, "%A", 2, NULL },
	{ "100%+", SPX_URI_LENIENT | SPX_URI_PLUS, "100% ", 5, NULL },
};

static void test_decode(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(dec); i++) {
		struct spx_buf b = SPX_BUF_INIT;
		int rc;

		spx_buf_adds(&b, "pre:");
		rc = spx_uri_decode(dec[i].in, strlen(dec[i].in), dec[i].flags,
				    &b);
		if (dec[i].out) {
			T_INT(rc, 0, "decode %zu '%s' (flags %d)", i, dec[i].in,
			      dec[i].flags);
			T_OK(b.len == 4 + dec[i].outlen &&
				     !memcmp(b.p + 4, dec[i].out,
					     dec[i].outlen),
			     "decode %zu '%s' gives '%s'", i, dec[i].in,
			     dec[i].out);
		} else {
			T_INT(rc, -1, "decode %zu '%s' is refused", i,
			      dec[i].in);
			T_STR(spx_errmsg(), dec[i].msg, "decode %zu: message",
			      i);
			T_INT(spx_errstatus(), SPX_USAGE, "decode %zu: status",
			      i);
			T_STR(b.p, "pre:", "decode %zu: out as it was", i);
		}
		spx_buf_release(&b);
	}
}

static const struct {
	const char *in;
	size_t len;
	int flags;
	const char *out;
} enc[] = {
	{ S(""), 0, "" },
	{ S("AZaz09-._~"), 0, "AZaz09-._~" },
	{ S("a b"), 0, "a%20b" },
	{ S("a+b"), 0, "a%2Bb" },
	{ S("a/b/c"), 0, "a%2Fb%2Fc" },
	{ S("a/b/c"), SPX_URI_SLASH, "a/b/c" },
	{ S("/a b/"), SPX_URI_SLASH, "/a%20b/" },
	{ S("%"), 0, "%25" },
	{ S("=&?#"), 0, "%3D%26%3F%23" },
	{ S("!*'()"), 0, "%21%2A%27%28%29" },
	{ S("\xE2\x82\xAC"), 0, "%E2%82%AC" },
	{ S("\0\x01\x7f\xff"), 0, "%00%01%7F%FF" },
	{ S(":@$,;"), 0, "%3A%40%24%2C%3B" },
};

static void test_encode(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(enc); i++) {
		struct spx_buf b = SPX_BUF_INIT, back = SPX_BUF_INIT;

		spx_uri_encode(enc[i].in, enc[i].len, enc[i].flags, &b);
		T_STR(b.p, enc[i].out, "encode %zu", i);
		T_INT(spx_uri_decode(b.p, b.len, 0, &back), 0,
		      "encode %zu decodes", i);
		T_OK(back.len == enc[i].len &&
			     !memcmp(back.p, enc[i].in, enc[i].len),
		     "encode %zu round-trips", i);
		spx_buf_release(&b);
		spx_buf_release(&back);
	}
	{
		struct spx_buf b = SPX_BUF_INIT, back = SPX_BUF_INIT;
		char all[256];
		int bad = 0;

		for (int i = 0; i < 256; i++)
			all[i] = (char)i;
		spx_uri_encode(all, sizeof(all), 0, &b);
		T_INT(b.len, 66 + 190 * 3, "every byte: 66 kept, 190 escaped");
		for (size_t i = 0; i < b.len; i++)
			bad += (b.p[i] >= 'a' && b.p[i] <= 'f' && i >= 2 &&
				(b.p[i - 1] == '%' || b.p[i - 2] == '%'));
		T_INT(bad, 0, "escapes use uppercase hex");
		spx_uri_decode(b.p, b.len, 0, &back);
		T_OK(back.len == 256 && !memcmp(back.p, all, 256),
		     "every byte round-trips");
		spx_buf_release(&b);
		spx_buf_release(&back);
	}
}

/* "k=v|k=v|..." of a parse, or "error: message". */
static char *parse(const char *s, size_t len, int flags, size_t max_params,
		   size_t max_bytes)
{
	struct spx_kvlist l = SPX_KVLIST_INIT;
	struct spx_buf o = SPX_BUF_INIT;

	spx_kv_add(&l, "before", "1");
	if (spx_query_parse_max(s, len, flags, max_params, max_bytes, &l) <
	    0) {
		spx_buf_addf(&o, "error: %s", spx_errmsg());
		if (l.n != 1 || strcmp(l.v[0].k, "before"))
			spx_buf_adds(&o, " (and the list changed)");
	} else {
		for (size_t i = 1; i < l.n; i++)
			spx_buf_addf(&o, "%s%s=%s", i > 1 ? "|" : "",
				     l.v[i].k, l.v[i].v);
	}
	spx_kv_free(&l);
	return spx_buf_detach(&o, NULL);
}

static const struct {
	const char *in;
	int flags;
	const char *out;
} qs[] = {
	{ "", 0, "" },
	{ "a=1", 0, "a=1" },
	{ "a=1&b=2", 0, "a=1|b=2" },
	{ "b=2&a=1", 0, "b=2|a=1" },
	{ "a=1&a=2&a=3", 0, "a=1|a=2|a=3" },
	{ "uploads", 0, "uploads=" },
	{ "tagging&versionId=3", 0, "tagging=|versionId=3" },
	{ "a=", 0, "a=" },
	{ "=v", 0, "=v" },
	{ "=", 0, "=" },
	{ "a==b", 0, "a==b" },
	{ "a=b=c", 0, "a=b=c" },
	{ "a=1&&b=2", 0, "a=1|b=2" },
	{ "&a=1&", 0, "a=1" },
	{ "&&&", 0, "" },
	{ "prefix=a%2Fb&delimiter=%2F", 0, "prefix=a/b|delimiter=/" },
	{ "k%3D=v%26", 0, "k==v&" },
	{ "a+b=c+d", 0, "a+b=c+d" },
	{ "a+b=c+d", SPX_URI_PLUS, "a b=c d" },
	{ "Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag%3AName"
	  "&Filter.1.Value.1=my+web",
	  SPX_URI_PLUS,
	  "Action=DescribeInstances|Version=2016-11-15|Filter.1.Name=tag:Name|"
	  "Filter.1.Value.1=my web" },
	{ "list-type=2&prefix=&max-keys=10", 0,
	  "list-type=2|prefix=|max-keys=10" },
	{ "k=%E2%82%AC", 0, "k=\xE2\x82\xAC" },
	{ "a=%zz", SPX_URI_LENIENT, "a=%zz" },
	{ "a=1&b=%zz", 0,
	  "error: invalid percent-encoding at byte 6" },
	{ "%=1", 0, "error: invalid percent-encoding at byte 0" },
	{ "abc=%4", 0, "error: invalid percent-encoding at byte 4" },
	{ "a=%00", 0, "error: query parameter 1 holds a NUL byte" },
	{ "a=1&b%00=2", 0, "error: query parameter 2 holds a NUL byte" },
	{ "a=1&x%00", SPX_URI_PLUS,
	  "error: query parameter 2 holds a NUL byte" },
};

static void test_parse(void)
{
	char *got;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(qs); i++) {
		got = parse(qs[i].in, strlen(qs[i].in), qs[i].flags, 0, 0);
		T_STR(got, qs[i].out, "query %zu '%s'", i, qs[i].in);
		free(got);
	}
	/* len bounds the input, not the NUL. */
	got = parse("a=1&b=2", 3, 0, 0, 0);
	T_STR(got, "a=1", "the length bounds the query");
	free(got);
	{
		struct spx_kvlist l = SPX_KVLIST_INIT;

		T_INT(spx_query_parse(S("a=1\0&b=2"), 0, &l), -1,
		      "a raw NUL is refused");
		T_STR(spx_errmsg(), "query parameter 1 holds a NUL byte",
		      "a raw NUL: message");
		T_INT(spx_query_parse(S("x=1&y&x=2"), 0, &l), 0,
		      "spx_query_parse with the defaults");
		T_STR(spx_kv_get(&l, "x"), "1", "the first of duplicates");
		T_INT(spx_kv_count(&l, "x"), 2, "duplicates are kept");
		T_STR(spx_kv_get(&l, "y"), "", "a key alone has value ''");
		spx_kv_free(&l);
	}
}

static void test_limits(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	char *got;

	got = parse(S("a=1&b=2&c=3"), 0, 3, 0);
	T_STR(got, "a=1|b=2|c=3", "3 parameters of 3");
	free(got);
	got = parse(S("a=1&b=2&c=3&d=4"), 0, 3, 0);
	T_STR(got, "error: query has more than 3 parameters",
	      "4 parameters of 3, and the list is as it was");
	free(got);
	got = parse(S("a=1&&&&&&&&&b=2&c=3&"), 0, 3, 0);
	T_STR(got, "a=1|b=2|c=3", "empty pieces do not count");
	free(got);
	got = parse(S("a=12345"), 0, 0, 7);
	T_STR(got, "a=12345", "7 bytes of 7");
	free(got);
	got = parse(S("a=123456"), 0, 0, 7);
	T_STR(got, "error: query is longer than 7 bytes", "8 bytes of 7");
	free(got);

	for (int i = 0; i < 1000; i++)
		spx_buf_addf(&b, "%sInstanceId.%d=i-%08x", i ? "&" : "", i + 1,
			     i);
	got = parse(b.p, b.len, 0, 0, 0);
	T_OK(strncmp(got, "error", 5), "1000 parameters by default");
	free(got);
	spx_buf_adds(&b, "&Action=DescribeInstances");
	got = parse(b.p, b.len, 0, 0, 0);
	T_STR(got, "error: query has more than 1000 parameters",
	      "1001 parameters by default");
	free(got);
	spx_buf_reset(&b);
	spx_buf_adds(&b, "a=");
	while (b.len <= SPX_QUERY_MAX_BYTES)
		spx_buf_adds(&b, "xxxxxxxxxxxxxxxx");
	got = parse(b.p, b.len, 0, 0, 0);
	T_STR(got, "error: query is longer than 1048576 bytes",
	      "more than 1 MiB by default");
	free(got);
	spx_buf_setlen(&b, SPX_QUERY_MAX_BYTES);
	got = parse(b.p, b.len, 0, 0, 0);
	T_OK(strlen(got) == SPX_QUERY_MAX_BYTES, "1 MiB by default");
	free(got);
	spx_buf_release(&b);
}

int main(void)
{
	test_decode();
	test_encode();
	test_parse();
	test_limits();
	return t_done();
}
