/* Unit tests for the generic EC2 machinery in lib/ec2: wildcards and
 * filters, paging tokens, tag rules and TagSpecifications, ClientToken
 * idempotency, and EC2 errors. */
#include "spx.h"

#include "ec2/fault.h"
#include "ec2/filter.h"
#include "ec2/idem.h"
#include "ec2/keypair.h"
#include "ec2/paging.h"
#include "ec2/tags.h"
#include "file.h"
#include "state/state.h"
#include "t.h"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *v = json_loads(s, JSON_DECODE_ANY, &e);

	if (!v) {
		fprintf(stderr, "bad JSON in a test: %s: %s\n", s, e.text);
		abort();
	}
	return v;
}

/* ---- wildcards ---------------------------------------------------- */

static const struct {
	const char *p, *s;
	bool match;
} wild[] = {
	{ "", "", true },
	{ "", "a", false },
	{ "a", "a", true },
	{ "a", "A", false },
	{ "*", "", true },
	{ "*", "anything", true },
	{ "**", "x", true },
	{ "us-*", "us-east-1", true },
	{ "us-*", "eu-west-1", false },
	{ "*-1", "us-east-1", true },
	{ "*east*", "us-east-1", true },
	{ "u?-east-?", "us-east-1", true },
	{ "u?-east-?", "us-east-12", false },
	{ "?", "", false },
	{ "?", "\xc3\xa9", true }, /* one character, two bytes */
	{ "??", "\xc3\xa9", false },
	{ "a*b*c", "aXbYc", true },
	{ "a*b*c", "aXbYcZ", false },
	{ "a*b*c*", "abcabc", true },
	{ "*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
	{ "\\*", "*", true },
	{ "\\*", "x", false },
	{ "a\\?", "a?", true },
	{ "a\\?", "ab", false },
	{ "\\\\", "\\", true },
	{ "\\", "\\", true }, /* a trailing backslash is itself */
	{ "\\a", "a", true },
	{ "*\\*", "ab*", true },
	{ "*\\*", "ab", false },
	{ "t3.*", "t3.micro", true },
	{ "t3.*", "t3a.micro", false },
};

static void test_wildcard(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(wild); i++)
		T_INT(spx_ec2_wildcard(wild[i].p, wild[i].s), wild[i].match,
		      "wildcard '%s' ~ '%s'", wild[i].p, wild[i].s);
}

/* ---- filters ------------------------------------------------------ */

static const struct spx_ec2_filter_field fields[] = {
	{ "name", "Name" },
	{ "vcpus", "VCpuInfo.DefaultVCpus" },
	{ "arch", "ProcessorInfo.SupportedArchitectures" },
	{ "current", "Current" },
	{ "disk-size", "Disks.SizeInGB" },
};
static const struct spx_ec2_filter_table table = {
	fields, SPX_ARRAY_SIZE(fields), "Tags"
};

static const char items_json[] =
	"[{\"Name\":\"a1\",\"VCpuInfo\":{\"DefaultVCpus\":2},"
	"\"ProcessorInfo\":{\"SupportedArchitectures\":[\"x86_64\",\"i386\"]},"
	"\"Current\":true,\"Disks\":[{\"SizeInGB\":10},{\"SizeInGB\":20}],"
	"\"Tags\":[{\"Key\":\"env\",\"Value\":\"prod\"},{\"Key\":\"team\","
	"\"Value\":\"\"}]},"
	"{\"Name\":\"b2\",\"VCpuInfo\":{\"DefaultVCpus\":16},"
	"\"ProcessorInfo\":{\"SupportedArchitectures\":[\"arm64\"]},"
	"\"Current\":false,\"Tags\":[{\"Key\":\"env\",\"Value\":\"dev\"}]},"
	"{\"Name\":\"c3\"}]";

static const struct {
	const char *filters; /* JSON */
	const char *want;    /* names that match, or NULL: refused */
	const char *code, *msg;
} filt[] = {
	{ "[]", "a1 b2 c3", NULL, NULL },
	{ "[{\"Name\":\"name\",\"Values\":[\"a*\",\"c3\"]}]", "a1 c3", NULL,
	  NULL },
	{ "[{\"Name\":\"name\",\"Values\":[\"*\"]},{\"Name\":\"vcpus\","
	  "\"Values\":[\"16\"]}]",
	  "b2", NULL, NULL },
	{ "[{\"Name\":\"arch\",\"Values\":[\"i386\"]}]", "a1", NULL, NULL },
	{ "[{\"Name\":\"current\",\"Values\":[\"true\"]}]", "a1", NULL, NULL },
	{ "[{\"Name\":\"current\",\"Values\":[\"false\"]}]", "b2", NULL, NULL },
	{ "[{\"Name\":\"disk-size\",\"Values\":[\"20\"]}]", "a1", NULL, NULL },
	{ "[{\"Name\":\"name\",\"Values\":[]}]", "", NULL, NULL },
	{ "[{\"Name\":\"tag:env\",\"Values\":[\"prod\",\"dev\"]}]", "a1 b2",
	  NULL, NULL },
	{ "[{\"Name\":\"tag:env\",\"Values\":[\"p*\"]}]", "a1", NULL, NULL },
	{ "[{\"Name\":\"tag:team\",\"Values\":[\"\"]}]", "a1", NULL, NULL },
	{ "[{\"Name\":\"tag:Env\",\"Values\":[\"*\"]}]", "", NULL, NULL },
	{ "[{\"Name\":\"tag-key\",\"Values\":[\"te*\"]}]", "a1", NULL, NULL },
	{ "[{\"Name\":\"tag-value\",\"Values\":[\"dev\"]}]", "b2", NULL, NULL },
	{ "[{\"Name\":\"colour\",\"Values\":[\"red\"]}]", NULL,
	  "InvalidParameterValue", "The filter 'colour' is invalid" },
	{ "[{\"Name\":\"tag:\",\"Values\":[\"x\"]}]", NULL,
	  "InvalidParameterValue", "The filter 'tag:' is invalid" },
	{ "[{\"Values\":[\"x\"]}]", NULL, "MissingParameter",
	  "The request must contain the parameter Filter.1.Name" },
};

static void test_filters(void)
{
	json_t *items = J(items_json);

	for (size_t i = 0; i < SPX_ARRAY_SIZE(filt); i++) {
		json_t *f = J(filt[i].filters), *e;
		struct spx_ec2_filters *fs = NULL;
		struct spx_buf got = SPX_BUF_INIT;
		int rc = spx_ec2_filters_compile(&table, f, &fs);
		size_t j;

		if (!filt[i].want) {
			T_INT(rc, -1, "filters %zu refused", i);
			T_STR(spx_ec2_fault_code(NULL), filt[i].code,
			      "filters %zu: code", i);
			T_STR(spx_errmsg(), filt[i].msg, "filters %zu: message",
			      i);
		} else {
			T_INT(rc, 0, "filters %zu compile", i);
			json_array_foreach(items, j, e)
				if (spx_ec2_filters_match(fs, e))
					spx_buf_addf(&got, "%s%s",
						     got.len ? " " : "",
						     json_string_value(json_object_get(
							     e, "Name")));
			T_STR(got.p, filt[i].want, "filters %zu: %s", i,
			      filt[i].filters);
		}
		spx_ec2_filters_free(fs);
		spx_buf_release(&got);
		json_decref(f);
	}
	json_decref(items);
}

static void test_filter_limits(void)
{
	json_t *f = json_array(), *vals = json_array();
	struct spx_ec2_filters *fs;
	char big[SPX_EC2_MAX_FILTER_VALUE + 2];

	for (int i = 0; i < SPX_EC2_MAX_FILTER_VALUES + 1; i++)
		json_array_append_new(vals, json_string("x"));
	json_array_append_new(f, json_pack("{s:s, s:o}", "Name", "name",
					   "Values", vals));
	T_INT(spx_ec2_filters_compile(&table, f, &fs), -1, "201 values");
	T_STR(spx_ec2_fault_code(NULL), "FilterLimitExceeded", "its code");
	T_STR(spx_errmsg(),
	      "The maximum number of filter values specified on a single "
	      "call is 200",
	      "its message");
	json_decref(f);

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	f = json_pack("[{s:s, s:[s]}]", "Name", "name", "Values", big);
	T_INT(spx_ec2_filters_compile(&table, f, &fs), -1,
	      "a value past 1024 bytes");
	T_STR(spx_ec2_fault_code(NULL), "InvalidParameterValue", "its code");
	json_decref(f);
}

/* ---- paging ------------------------------------------------------- */

static const char *name_of(const json_t *item)
{
	return json_string_value(json_object_get(item, "Name"));
}

/* The page of items (names n0..n9) after p.after. */
static json_t *page_items(const struct spx_ec2_page *p)
{
	json_t *a = json_array();
	char n[16];

	for (int i = 0; i < 10; i++) {
		snprintf(n, sizeof(n), "n%d", i);
		if (spx_ec2_page_after(p, n))
			json_array_append_new(a, json_pack("{s:s}", "Name", n));
	}
	return a;
}

static void test_paging(void)
{
	static const unsigned char secret[SPX_EC2_PAGE_SECRET] = { 1, 2, 3 };
	static const unsigned char other[SPX_EC2_PAGE_SECRET] = { 9 };
	struct spx_ec2_pager pg = { secret, "123456789012", "DescribeThings",
				    5, 1000, 0 };
	struct spx_ec2_page p;
	json_t *in = J("{\"Filters\":[{\"Name\":\"a\",\"Values\":[\"1\"]}],"
		       "\"MaxResults\":5,\"DryRun\":false}");
	json_t *items;
	char *tok = NULL, *tok2 = NULL;
	struct spx_buf seen = SPX_BUF_INIT;

	/* Two pages of 5, then none. */
	T_INT(spx_ec2_page_begin(&pg, in, &p), 0, "first page");
	T_OK(!p.after && p.max == 5, "from the start, 5 items");
	items = page_items(&p);
	T_INT(spx_ec2_page_take(&p, items, name_of, &tok), 0, "take");
	T_INT(json_array_size(items), 5, "5 items");
	T_STR(name_of(json_array_get(items, 4)), "n4", "up to n4");
	T_OK(tok != NULL, "a token");
	json_decref(items);
	spx_ec2_page_release(&p);

	/* The same query with the token, another page size: fine. */
	json_object_set_new(in, "NextToken", json_string(tok));
	json_object_set_new(in, "MaxResults", json_integer(1000));
	json_object_set_new(in, "DryRun", json_true());
	T_INT(spx_ec2_page_begin(&pg, in, &p), 0, "second page");
	T_STR(p.after, "n4", "after n4");
	items = page_items(&p);
	T_INT(spx_ec2_page_take(&p, items, name_of, &tok2), 0, "take");
	T_INT(json_array_size(items), 5, "the 5 others");
	T_STR(name_of(json_array_get(items, 0)), "n5", "from n5");
	T_OK(tok2 == NULL, "no more");
	json_decref(items);
	spx_ec2_page_release(&p);

	/* Other filters, another action, another account, another secret,
	 * a changed token: all InvalidParameterValue. */
	json_object_set_new(in, "Filters", J("[{\"Name\":\"a\",\"Values\":"
					     "[\"2\"]}]"));
	T_INT(spx_ec2_page_begin(&pg, in, &p), -1, "other filters");
	T_STR(spx_ec2_fault_code(NULL), "InvalidParameterValue", "code");
	spx_buf_addf(&seen, "Value ( %s ) for parameter NextToken is "
			    "invalid. The token is invalid.",
		     tok);
	T_STR(spx_errmsg(), seen.p, "EC2's message");
	json_object_set_new(in, "Filters", J("[{\"Name\":\"a\",\"Values\":"
					     "[\"1\"]}]"));
	T_INT(spx_ec2_page_begin(&pg, in, &p), 0, "the same filters again");
	spx_ec2_page_release(&p);
	pg.action = "DescribeOthers";
	T_INT(spx_ec2_page_begin(&pg, in, &p), -1, "another action");
	pg.action = "DescribeThings";
	pg.account = "210987654321";
	T_INT(spx_ec2_page_begin(&pg, in, &p), -1, "another account");
	pg.account = "123456789012";
	pg.secret = other;
	T_INT(spx_ec2_page_begin(&pg, in, &p), -1, "another node's secret");
	pg.secret = secret;
	tok[3] = tok[3] == 'A' ? 'B' : 'A';
	json_object_set_new(in, "NextToken", json_string(tok));
	T_INT(spx_ec2_page_begin(&pg, in, &p), -1, "a changed token");
	json_object_set_new(in, "NextToken", json_string("%%%"));
	T_INT(spx_ec2_page_begin(&pg, in, &p), -1, "not base64");
	json_object_set_new(in, "NextToken", json_string(""));
	T_INT(spx_ec2_page_begin(&pg, in, &p), 0, "an empty token: start");
	T_OK(!p.after, "from the start");
	spx_ec2_page_release(&p);

	/* MaxResults outside the pager's range. */
	json_object_del(in, "NextToken");
	json_object_set_new(in, "MaxResults", json_integer(4));
	T_INT(spx_ec2_page_begin(&pg, in, &p), -1, "MaxResults 4");
	T_STR(spx_errmsg(),
	      "Value ( 4 ) for parameter maxResults is invalid. Expecting a "
	      "value greater than 5.",
	      "its message");
	json_object_set_new(in, "MaxResults", json_integer(1001));
	T_INT(spx_ec2_page_begin(&pg, in, &p), -1, "MaxResults 1001");
	json_object_del(in, "MaxResults");
	T_INT(spx_ec2_page_begin(&pg, in, &p), 0, "no MaxResults");
	T_INT(p.max, 0, "everything");
	spx_ec2_page_release(&p);

	free(tok);
	json_decref(in);
	spx_buf_release(&seen);
}

static const char *sort_key_of(const json_t *item)
{
	return json_string_value(json_object_get(item, "SortKey"));
}

/* Any valid tag key pages: DescribeTags' sort key "ID KEY" with a key of
 * 127 characters of 4 bytes each (and of 3, as the review found it) is
 * carried by the token whole; a longer one is still refused, and so is a
 * token too long for any key. */
static void test_paging_wide_keys(void)
{
	static const unsigned char secret[SPX_EC2_PAGE_SECRET] = { 4 };
	static const char *const chars[] = { "\xe2\x82\xac", /* U+20AC */
					     "\xf0\x9f\x98\x80" /* U+1F600 */ };
	struct spx_ec2_pager pg = { secret, "123456789012", "DescribeTags",
				    5, 1000, 0 };
	struct spx_ec2_page p;
	json_t *in = J("{\"MaxResults\":5}"), *items;
	char *tok = NULL, *big;

	for (size_t c = 0; c < SPX_ARRAY_SIZE(chars); c++) {
		struct spx_buf key = SPX_BUF_INIT;
		char *want = NULL;

		for (int i = 0; i < SPX_EC2_TAG_KEY_MAX; i++)
			spx_buf_adds(&key, chars[c]);
		items = json_pack("[{s:s, s:s}]", "Key", key.p, "Value", "");
		T_INT(spx_ec2_taglist_check(items, "Tag", false), 0,
		      "a valid tag key of %d characters, %zu bytes",
		      SPX_EC2_TAG_KEY_MAX, key.len);
		json_decref(items);
		items = json_array();
		for (int i = 0; i < 6; i++) {
			char *k = spx_xprintf("vol-0123456789abcdef%d %s", i,
					      key.p);

			if (i == 4)
				want = spx_strdup(k);
			json_array_append_new(items,
					      json_pack("{s:s}", "SortKey", k));
			free(k);
		}
		json_object_del(in, "NextToken");
		T_INT(spx_ec2_page_begin(&pg, in, &p), 0, "first page");
		T_INT(spx_ec2_page_take(&p, items, sort_key_of, &tok), 0,
		      "a %zu-byte key on the page's end",
		      strlen(want));
		T_OK(tok != NULL, "a token");
		spx_ec2_page_release(&p);
		json_decref(items);
		json_object_set_new(in, "NextToken", json_string(tok ? tok : ""));
		T_INT(spx_ec2_page_begin(&pg, in, &p), 0, "the next page");
		T_STR(p.after, want, "after that key, whole");
		spx_ec2_page_release(&p);
		free(tok);
		tok = NULL;
		free(want);
		spx_buf_release(&key);
	}

	/* Still bounded: a key past the limit cannot be paged after, and a
	 * token longer than any token made here is refused unread. */
	big = spx_malloc(SPX_EC2_PAGE_KEYMAX + 2);
	memset(big, 'k', SPX_EC2_PAGE_KEYMAX + 1);
	big[SPX_EC2_PAGE_KEYMAX + 1] = '\0';
	items = json_pack("[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}, {s:s}]",
			  "SortKey", "a", "SortKey", "b", "SortKey", "c",
			  "SortKey", "d", "SortKey", big, "SortKey", "z");
	json_object_del(in, "NextToken");
	T_INT(spx_ec2_page_begin(&pg, in, &p), 0, "a page");
	T_INT(spx_ec2_page_take(&p, items, sort_key_of, &tok), -1,
	      "a key of %d bytes", SPX_EC2_PAGE_KEYMAX + 1);
	T_STR(spx_ec2_fault_code(NULL), "InternalError", "InternalError");
	spx_ec2_page_release(&p);
	json_decref(items);
	free(tok);
	memset(big, 'A', SPX_EC2_PAGE_KEYMAX + 1);
	json_object_set_new(in, "NextToken", json_string(big));
	T_INT(spx_ec2_page_begin(&pg, in, &p), -1, "a token too long");
	T_STR(spx_ec2_fault_code(NULL), "InvalidParameterValue",
	      "InvalidParameterValue");
	free(big);
	json_decref(in);
}

/* ---- tags --------------------------------------------------------- */

static const struct {
	const char *tags;
	bool del;
	const char *code, *msg; /* NULL: accepted */
} tagcheck[] = {
	{ "[{\"Key\":\"a\",\"Value\":\"1\"},{\"Key\":\"b\"}]", false, NULL,
	  NULL },
	{ "[{\"Value\":\"1\"}]", false, "MissingParameter",
	  "The request must contain the parameter Tag.1.Key" },
	{ "[{\"Key\":\"\"}]", false, "InvalidParameterValue",
	  "Tag key must not be empty" },
	{ "[{\"Key\":\"aws:x\"}]", false, "InvalidParameterValue",
	  "Tag keys starting with 'aws:' are reserved for internal use" },
	{ "[{\"Key\":\"AWS:x\"}]", false, "InvalidParameterValue",
	  "Tag keys starting with 'aws:' are reserved for internal use" },
	{ "[{\"Key\":\"aws:x\"}]", true, NULL, NULL },
	{ "[{\"Key\":\"a\"},{\"Key\":\"a\"}]", false, "InvalidParameterValue",
	  "Duplicate tag key 'a' specified." },
};

static void test_tags(void)
{
	char key[300], val[300];
	json_t *t, *have, *out;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(tagcheck); i++) {
		t = J(tagcheck[i].tags);
		if (!tagcheck[i].code) {
			T_INT(spx_ec2_taglist_check(t, "Tag", tagcheck[i].del),
			      0, "tags %zu accepted", i);
		} else {
			T_INT(spx_ec2_taglist_check(t, "Tag", tagcheck[i].del),
			      -1, "tags %zu refused", i);
			T_STR(spx_ec2_fault_code(NULL), tagcheck[i].code,
			      "tags %zu: code", i);
			T_STR(spx_errmsg(), tagcheck[i].msg,
			      "tags %zu: message", i);
		}
		json_decref(t);
	}

	/* Lengths count characters: 127 two-byte characters are fine. */
	for (int i = 0; i < 127; i++)
		memcpy(key + 2 * i, "\xc3\xa9", 2);
	key[254] = '\0';
	memset(val, 'v', 255);
	val[255] = '\0';
	t = json_pack("[{s:s, s:s}]", "Key", key, "Value", val);
	T_INT(spx_ec2_taglist_check(t, "Tag", false), 0,
	      "127-character key, 255-character value");
	json_decref(t);
	key[254] = 'x';
	key[255] = '\0';
	t = json_pack("[{s:s}]", "Key", key);
	T_INT(spx_ec2_taglist_check(t, "Tag", false), -1, "128 characters");
	T_STR(spx_errmsg(),
	      "Tag key exceeds the maximum length of 127 characters",
	      "its message");
	json_decref(t);
	val[255] = 'v';
	val[256] = '\0';
	t = json_pack("[{s:s, s:s}]", "Key", "k", "Value", val);
	T_INT(spx_ec2_taglist_check(t, "Tag", false), -1, "256-char value");
	json_decref(t);

	/* Merge overwrites and appends; 50 is the limit. */
	have = J("[{\"Key\":\"a\",\"Value\":\"1\"},{\"Key\":\"b\",\"Value\":"
		 "\"2\"}]");
	t = J("[{\"Key\":\"b\",\"Value\":\"3\"},{\"Key\":\"c\"}]");
	T_INT(spx_ec2_tags_merge(have, t), 0, "merge");
	out = J("[{\"Key\":\"a\",\"Value\":\"1\"},{\"Key\":\"b\",\"Value\":"
		"\"3\"},{\"Key\":\"c\",\"Value\":\"\"}]");
	T_OK(json_equal(have, out), "b overwritten, c appended");
	json_decref(t);
	json_decref(out);
	/* DeleteTags: a key alone goes; with a value, only if equal. */
	t = J("[{\"Key\":\"a\",\"Value\":\"9\"},{\"Key\":\"b\",\"Value\":"
	      "\"3\"},{\"Key\":\"c\",\"Value\":\"\"},{\"Key\":\"zz\"}]");
	spx_ec2_tags_remove(have, t);
	out = J("[{\"Key\":\"a\",\"Value\":\"1\"}]");
	T_OK(json_equal(have, out), "only the matching values removed");
	json_decref(t);
	json_decref(out);
	t = J("[{\"Key\":\"a\"}]");
	spx_ec2_tags_remove(have, t);
	T_INT(json_array_size(have), 0, "a key alone removes it");
	json_decref(t);
	for (int i = 0; i < 50; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%d", i);
		json_array_append_new(have, json_pack("{s:s,s:s}", "Key", k,
						      "Value", ""));
	}
	t = J("[{\"Key\":\"k0\",\"Value\":\"x\"}]");
	T_INT(spx_ec2_tags_merge(have, t), 0, "overwriting at 50");
	json_decref(t);
	t = J("[{\"Key\":\"new\"}]");
	T_INT(spx_ec2_tags_merge(have, t), -1, "a 51st tag");
	T_STR(spx_ec2_fault_code(NULL), "TagLimitExceeded", "its code");
	json_decref(t);
	json_decref(have);

	/* TagSpecifications. */
	t = J("[{\"ResourceType\":\"key-pair\",\"Tags\":[{\"Key\":\"a\","
	      "\"Value\":\"1\"}]}]");
	T_INT(spx_ec2_tagspec(t, "key-pair", &out), 0, "a tag spec");
	T_INT(json_array_size(out), 1, "its tag");
	json_decref(out);
	T_INT(spx_ec2_tagspec(t, "instance", &out), -1, "for another type");
	T_STR(spx_errmsg(),
	      "'key-pair' is not a valid taggable resource type for this "
	      "operation.",
	      "its message");
	T_OK(out == NULL, "no tags");
	json_decref(t);
	T_INT(spx_ec2_tagspec(NULL, "key-pair", &out), 0, "no specs");
	T_INT(json_array_size(out), 0, "no tags");
	json_decref(out);
	t = J("[{\"ResourceType\":\"key-pair\",\"Tags\":[{\"Key\":\"a\"}]},"
	      "{\"ResourceType\":\"key-pair\",\"Tags\":[{\"Key\":\"b\"}]}]");
	T_INT(spx_ec2_tagspec(t, "key-pair", &out), -1, "the type twice");
	json_decref(t);
	t = J("[{\"ResourceType\":\"key-pair\"}]");
	T_INT(spx_ec2_tagspec(t, "key-pair", &out), -1, "no tags in a spec");
	T_STR(spx_errmsg(), "Tag specification must have at least one tag",
	      "its message");
	json_decref(t);
	t = J("[{\"Tags\":[{\"Key\":\"a\"}]}]");
	T_INT(spx_ec2_tagspec(t, "key-pair", &out), -1, "no resource type");
	T_STR(spx_errmsg(),
	      "The request must contain the parameter "
	      "TagSpecification.1.ResourceType",
	      "its message");
	json_decref(t);
	t = J("[{\"ResourceType\":\"key-pair\",\"Tags\":[{\"Key\":\"aws:a\"}]}]");
	T_INT(spx_ec2_tagspec(t, "key-pair", &out), -1, "aws: in a spec");
	json_decref(t);

	/* Ids of no known type. */
	t = J("[\"nothing-0123\"]");
	have = J("[{\"Key\":\"a\"}]");
	T_INT(spx_ec2_tags_create(NULL, "123456789012", t, have), -1,
	      "an unknown id");
	T_STR(spx_ec2_fault_code(NULL), "InvalidID", "its code");
	T_STR(spx_errmsg(), "The ID 'nothing-0123' is not valid",
	      "its message");
	json_decref(t);
	json_decref(have);
}

/* ---- ClientToken -------------------------------------------------- */

static void test_idem(void)
{
	char dir[] = "/tmp/spx-test-idem.XXXXXX";
	struct spx_state *st;
	struct spx_ec2_idem h, h2;
	json_t *in, *in2, *first = NULL, *ans;
	char tok[80];

	if (!mkdtemp(dir) ||
	    spx_state_open(dir, SPX_STATE_UNSAFE_NOSYNC, &st) < 0) {
		T_OK(0, "a store: %s", spx_errmsg());
		return;
	}
	in = J("{\"ClientToken\":\"tok-1\",\"Size\":8,\"DryRun\":false}");
	ans = J("{\"VolumeId\":\"vol-1\"}");
	T_INT(spx_ec2_idem_begin(st, "123456789012", "CreateVolume", "tok-1",
				 in, 1000, &h, &first),
	      0, "a new token: go on");
	/* While it runs, the same token and request waits, then times out:
	 * test the mismatch path instead, which answers at once. */
	in2 = J("{\"ClientToken\":\"tok-1\",\"Size\":9}");
	T_INT(spx_ec2_idem_begin(st, "123456789012", "CreateVolume", "tok-1",
				 in2, 1000, &h2, &first),
	      -1, "different parameters while pending");
	T_STR(spx_ec2_fault_code(NULL), "IdempotentParameterMismatch",
	      "IdempotentParameterMismatch");
	T_INT(spx_ec2_idem_end(&h, ans), 0, "record the answer");

	/* The same again: the first answer; DryRun does not count. */
	json_object_set_new(in, "DryRun", json_true());
	T_INT(spx_ec2_idem_begin(st, "123456789012", "CreateVolume", "tok-1",
				 in, 1001, &h2, &first),
	      1, "the same request: answered");
	T_OK(json_equal(first, ans), "with the first answer");
	json_decref(first);
	first = NULL;
	T_INT(spx_ec2_idem_begin(st, "123456789012", "CreateVolume", "tok-1",
				 in2, 1001, &h2, &first),
	      -1, "different parameters: mismatch");
	T_STR(spx_errmsg(),
	      "The request uses the same client token as a previous, but "
	      "non-identical request. Do not reuse a client token with "
	      "different requests, unless the requests are identical.",
	      "EC2's message");
	T_INT(spx_ec2_idem_begin(st, "123456789012", "CreateSnapshot",
				 "tok-1", in, 1001, &h2, &first),
	      -1, "another action: mismatch");
	/* Another account has its own tokens. */
	T_INT(spx_ec2_idem_begin(st, "210987654321", "CreateVolume", "tok-1",
				 in2, 1001, &h2, &first),
	      0, "another account: its own token");
	/* A failure frees the token. */
	T_INT(spx_ec2_idem_end(&h2, NULL), 0, "released");
	T_INT(spx_ec2_idem_begin(st, "210987654321", "CreateVolume", "tok-1",
				 in, 1002, &h2, &first),
	      0, "free again, for any parameters");
	/* A reservation left by a dead gateway is taken over. */
	T_INT(spx_ec2_idem_begin(st, "210987654321", "CreateVolume", "tok-1",
				 in, 1002 + SPX_EC2_IDEM_STALE + 1, &h, &first),
	      0, "a stale reservation is taken over");
	T_INT(spx_ec2_idem_end(&h, ans), 0, "recorded by the new owner");
	T_INT(spx_ec2_idem_end(&h2, ans), -1,
	      "the old owner's answer is not recorded");

	/* Bad tokens. */
	memset(tok, 'a', 65);
	tok[65] = '\0';
	T_INT(spx_ec2_idem_begin(st, "123456789012", "CreateVolume", tok, in,
				 1, &h, &first),
	      -1, "65 characters");
	T_STR(spx_ec2_fault_code(NULL), "InvalidParameterValue", "its code");
	tok[64] = '\0';
	T_INT(spx_ec2_idem_begin(st, "123456789012", "CreateVolume", tok, in,
				 1, &h, &first),
	      0, "64 characters");
	spx_ec2_idem_end(&h, NULL);
	T_INT(spx_ec2_idem_begin(st, "123456789012", "CreateVolume", "a b",
				 in, 1, &h, &first),
	      -1, "a space");
	T_INT(spx_ec2_idem_begin(st, "123456789012", "CreateVolume",
				 "\xc3\xa9", in, 1, &h, &first),
	      -1, "not ASCII");

	json_decref(in);
	json_decref(in2);
	json_decref(ans);
	spx_state_close(st);
	spx_rmtree(dir);
}

/* ---- errors ------------------------------------------------------- */

static void test_fault(void)
{
	int http = 0;

	spx_error_clear();
	T_OK(!spx_ec2_fault_code(NULL), "nothing recorded");
	T_INT(spx_ec2_fault(400, "InvalidKeyPair.NotFound",
			    "The key pair '%s' does not exist", "k"),
	      -1, "record");
	T_STR(spx_ec2_fault_code(&http), "InvalidKeyPair.NotFound", "code");
	T_INT(http, 400, "status");
	T_STR(spx_errmsg(), "The key pair 'k' does not exist", "message");
	T_INT(spx_errstatus(), SPX_NO, "a NotFound exits 1");
	spx_ec2_fault(400, "InvalidParameterValue", "x");
	T_INT(spx_errstatus(), SPX_USAGE, "a bad value exits 100");
	spx_ec2_fault(500, "InternalError", "y");
	T_INT(spx_errstatus(), SPX_FAIL, "a 5xx exits 111");
	spx_error(SPX_USAGE, "something else");
	T_OK(!spx_ec2_fault_code(NULL), "a later plain error replaces it");
}

int main(void)
{
	test_wildcard();
	test_filters();
	test_filter_limits();
	test_paging();
	test_paging_wide_keys();
	test_tags();
	test_idem();
	test_fault();
	return t_done();
}
