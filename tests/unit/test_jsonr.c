/* Unit tests for lib/core/jsonr: documents the reader accepts and
 * refuses (fuzz_jsonr compares it with jansson on any input), and the
 * values it reads. */
#include "spx.h"

#include "jsonr.h"
#include "t.h"

/* The whole document, skipped: accepted or not. */
static bool accepts(const char *doc)
{
	struct spx_jr j;
	bool ok;

	spx_jr_init(&j, doc, strlen(doc));
	ok = spx_jr_skip(&j) && spx_jr_end(&j);
	spx_jr_release(&j);
	return ok;
}

static void test_grammar(void)
{
	static const char *const good[] = {
		"{}", "[]", " [ 1 , 2 ] ", "{\"a\":{\"b\":[true,false,null]}}",
		"0", "-0", "1.5e3", "1E-2", "-12.25", "\"\"", "\"\\u00e9\"",
		"\"\\ud83d\\ude00\"", "\"caf\xc3\xa9\"", "9223372036854775807",
		"-9223372036854775808", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
	};
	static const char *const bad[] = {
		"", " ", "{", "[1,]", "{\"a\":1,}", "{,}", "[,1]", "{\"a\" 1}",
		"{a:1}", "01", "-", "1.", ".5", "1e", "1e+", "+1", "tru", "truex",
		"nul", "[1 2]", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u0000\"",
		"\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\tb\"",
		"\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
		"\"\xe2\x82\"", "9223372036854775808", "-9223372036854775809",
		"1e400", "[1]x", "{} {}",
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(good); i++)
		T_OK(accepts(good[i]), "accepts %s", good[i]);
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++)
		T_OK(!accepts(bad[i]), "refuses %s", bad[i]);
}

static void test_depth(void)
{
	char doc[2 * (SPX_JR_DEPTH + 1) + 1];

	for (int d = SPX_JR_DEPTH; d <= SPX_JR_DEPTH + 1; d++) {
		memset(doc, '[', (size_t)d);
		memset(doc + d, ']', (size_t)d);
		doc[2 * d] = '\0';
		T_OK(accepts(doc) == (d <= SPX_JR_DEPTH), "depth %d %s", d,
		     d <= SPX_JR_DEPTH ? "accepted" : "refused");
	}
}

static void test_values(void)
{
	const char *doc = "{\"s\":\"a\\u00e9\\ud83d\\ude00\",\"i\":-42,"
			  "\"b\":true,\"n\":null,\"r\":2.5,\"x\":[1,{}]}";
	struct spx_jr j;
	int64_t v = 0;
	bool b = false;
	const char *t;
	size_t n;
	bool is_int = true;

	spx_jr_init(&j, doc, strlen(doc));
	T_OK(spx_jr_obj(&j), "an object");
	T_INT(spx_jr_key(&j), 1, "a member");
	T_STR(j.s.p, "s", "its key");
	T_OK(spx_jr_str(&j), "a string");
	T_STR(j.s.p, "a\xc3\xa9\xf0\x9f\x98\x80", "decoded to UTF-8");
	T_INT(spx_jr_key(&j), 1, "i");
	T_OK(spx_jr_int(&j, &v), "an integer");
	T_INT(v, -42, "its value");
	T_INT(spx_jr_key(&j), 1, "b");
	T_OK(spx_jr_bool(&j, &b) && b, "true");
	T_INT(spx_jr_key(&j), 1, "n");
	T_OK(spx_jr_null(&j), "null");
	T_INT(spx_jr_key(&j), 1, "r");
	T_OK(spx_jr_num(&j, &t, &n, &is_int) && !is_int && n == 3 &&
		     !memcmp(t, "2.5", 3),
	     "a real's text");
	T_INT(spx_jr_key(&j), 1, "x");
	T_OK(spx_jr_skip(&j), "an array skipped");
	T_INT(spx_jr_key(&j), 0, "the end of the object");
	T_OK(spx_jr_end(&j), "the end of the document");
	spx_jr_release(&j);

	spx_jr_init(&j, "{\"r\":2.5}", 9);
	T_OK(spx_jr_obj(&j) && spx_jr_key(&j) == 1, "a member");
	T_OK(!spx_jr_int(&j, &v), "a real is not an integer");
	T_INT(spx_jr_key(&j), -1, "and the reader stays failed");
	T_OK(!spx_jr_end(&j), "to the end");
	spx_jr_release(&j);
}

int main(void)
{
	test_grammar();
	test_depth();
	test_values();
	return t_done();
}
