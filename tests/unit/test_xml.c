/* Unit tests for lib/xml: the writer's escaping and balance, a whole
 * response document, and the reader's DOM, limits and refusals. */
#include "spx.h"

#include <time.h>

#include "xml/xml.h"
#include "t.h"

#define FFFD "\xEF\xBF\xBD"
#define S(lit) lit, sizeof(lit) - 1

/* --- writer --- */

static const struct {
	const char *in;
	size_t n;
	const char *text; /* <a>text</a> */
	const char *attr; /* <a v="attr"></a> */
	bool lossless;	  /* reads back as the input */
} esc[] = {
	{ S(""), "", "", true },
	{ S("plain text 123"), "plain text 123", "plain text 123", true },
	{ S("&"), "&amp;", "&amp;", true },
	{ S("<"), "&lt;", "&lt;", true },
	{ S(">"), "&gt;", "&gt;", true },
	{ S("\""), "&quot;", "&quot;", true },
	{ S("'"), "&apos;", "&apos;", true },
	{ S("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f",
	  "a&amp;b&lt;c&gt;d&quot;e&apos;f", true },
	{ S("&amp;"), "&amp;amp;", "&amp;amp;", true },
	{ S("]]>"), "]]&gt;", "]]&gt;", true },
	{ S("\"etag\""), "&quot;etag&quot;", "&quot;etag&quot;", true },
	{ S("\t"), "\t", "&#x9;", true },
	{ S("\n"), "\n", "&#xA;", true },
	{ S("\r"), "&#xD;", "&#xD;", true },
	{ S("a\r\nb"), "a&#xD;\nb", "a&#xD;&#xA;b", true },
	{ S("\x01"), FFFD, FFFD, false },
	{ S("\x08"), FFFD, FFFD, false },
	{ S("\x0b"), FFFD, FFFD, false },
	{ S("\x0c"), FFFD, FFFD, false },
	{ S("\x0e"), FFFD, FFFD, false },
	{ S("\x1f"), FFFD, FFFD, false },
	{ S("a\0b"), "a" FFFD "b", "a" FFFD "b", false },
	{ S("\x7f"), "\x7f", "\x7f", true },
	{ S(" "), " ", " ", true },
	{ S("\xC3\xA9"), "\xC3\xA9", "\xC3\xA9", true },		/* é */
	{ S("\xC2\x85"), "\xC2\x85", "\xC2\x85", true },		/* NEL */
	{ S("\xE2\x82\xAC"), "\xE2\x82\xAC", "\xE2\x82\xAC", true }, /* € */
	{ S("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80",
	  true },
	{ S("\xF4\x8F\xBF\xBF"), "\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF",
	  true }, /* U+10FFFF */
	{ S("\xEF\xBF\xBD"), FFFD, FFFD, true },
	{ S("\xEF\xBF\xBE"), FFFD, FFFD, false }, /* U+FFFE */
	{ S("\xEF\xBF\xBF"), FFFD, FFFD, false }, /* U+FFFF */
	{ S("\xEF\xBF\xBC"), "\xEF\xBF\xBC", "\xEF\xBF\xBC", true },
	{ S("\x80"), FFFD, FFFD, false },
	{ S("\xBF"), FFFD, FFFD, false },
	{ S("\xC0\xAF"), FFFD FFFD, FFFD FFFD, false }, /* overlong '/' */
	{ S("\xC1\xBF"), FFFD FFFD, FFFD FFFD, false },
	{ S("\xE0\x80\xAF"), FFFD FFFD FFFD, FFFD FFFD FFFD, false },
	{ S("\xF0\x80\x80\xAF"), FFFD FFFD FFFD FFFD, FFFD FFFD FFFD FFFD,
	  false },
	{ S("\xC3"), FFFD, FFFD, false },
	{ S("\xC3("), FFFD "(", FFFD "(", false },
	{ S("\xE2\x82"), FFFD, FFFD, false },
	{ S("a\xE2\x82z"), "a" FFFD "z", "a" FFFD "z", false },
	{ S("\xF0\x9F\x98"), FFFD, FFFD, false },
	{ S("\xF0\x9F\x98<"), FFFD "&lt;", FFFD "&lt;", false },
	{ S("\xED\xA0\x80"), FFFD FFFD FFFD, FFFD FFFD FFFD, false },
	{ S("\xED\x9F\xBF"), "\xED\x9F\xBF", "\xED\x9F\xBF", true },
	{ S("\xF4\x90\x80\x80"), FFFD FFFD FFFD FFFD, FFFD FFFD FFFD FFFD,
	  false },
	{ S("\xF5\x80"), FFFD FFFD, FFFD FFFD, false },
	{ S("\xFE\xFF"), FFFD FFFD, FFFD FFFD, false },
	{ S("ok\xFF&"), "ok" FFFD "&amp;", "ok" FFFD "&amp;", false },
};

static void test_escape(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(esc); i++) {
		struct spx_buf b = SPX_BUF_INIT, want = SPX_BUF_INIT;
		struct spx_xml x;
		struct spx_xml_doc *d = NULL;
		char *v;
		int rc;

		spx_xml_begin_buf(&x, &b);
		rc = spx_xml_elemn(&x, "a", esc[i].in, esc[i].n);
		rc |= spx_xml_end(&x);
		spx_buf_addf(&want, "<a>%s</a>", esc[i].text);
		T_INT(rc, 0, "escape %zu: text renders", i);
		T_STR(b.p, want.p, "escape %zu: text", i);
		T_INT(spx_xml_parse(b.p, b.len, NULL, &d), 0,
		      "escape %zu: text output is well-formed", i);
		if (d && esc[i].lossless)
			T_OK(spx_xml_doc_root(d)->textlen == esc[i].n &&
				     !memcmp(spx_xml_doc_root(d)->text,
					     esc[i].in, esc[i].n),
			     "escape %zu: text reads back", i);
		spx_xml_doc_free(d);

		/* Attributes take a C string. */
		if (memchr(esc[i].in, '\0', esc[i].n)) {
			spx_buf_release(&b);
			spx_buf_release(&want);
			continue;
		}
		spx_buf_reset(&b);
		spx_buf_reset(&want);
		spx_xml_begin_buf(&x, &b);
		spx_xml_open(&x, "a");
		spx_xml_attr(&x, "v", esc[i].in);
		spx_xml_close(&x);
		T_INT(spx_xml_end(&x), 0, "escape %zu: attribute renders", i);
		spx_buf_addf(&want, "<a v=\"%s\"></a>", esc[i].attr);
		T_STR(b.p, want.p, "escape %zu: attribute", i);
		d = NULL;
		T_INT(spx_xml_parse(b.p, b.len, NULL, &d), 0,
		      "escape %zu: attribute output is well-formed", i);
		if (d && esc[i].lossless) {
			v = (char *)spx_xml_node_attr(spx_xml_doc_root(d), "v");
			T_STR(v, esc[i].in, "escape %zu: attribute reads back",
			      i);
		}
		spx_xml_doc_free(d);
		spx_buf_release(&b);
		spx_buf_release(&want);
	}
}

/* Every byte value, alone and after each other: always well-formed. */
static void test_escape_all_bytes(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_xml x;
	struct spx_xml_doc *d;
	char in[512];
	int bad = 0;

	for (int i = 0; i < 256; i++) {
		in[2 * i] = (char)i;
		in[2 * i + 1] = (char)(255 - i);
	}
	for (size_t len = 1; len <= sizeof(in); len += 7) {
		spx_buf_reset(&b);
		spx_xml_begin_buf(&x, &b);
		spx_xml_elemn(&x, "a", in, len);
		if (spx_xml_end(&x) < 0 ||
		    spx_xml_parse(b.p, b.len, NULL, &d) < 0) {
			bad++;
			continue;
		}
		spx_xml_doc_free(d);
	}
	T_INT(bad, 0, "every byte string renders to well-formed xml");
	spx_buf_release(&b);
}

static void test_names(void)
{
	static const struct {
		const char *name;
		bool ok;
	} t[] = {
		{ "a", true },	    { "_x", true },	  { "Name", true },
		{ "a-b.c_d", true }, { "xsi:type", true }, { "A1", true },
		{ "", false },	    { "1a", false },	  { "-a", false },
		{ ".a", false },    { "a b", false },	  { "a<", false },
		{ "a>", false },    { "a&", false },	  { "a\"", false },
		{ "a/", false },    { "\xC3\xA9", false }, { "a\tb", false },
		{ NULL, false },
	};
	char lng[SPX_XML_NAMEMAX + 2];
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_xml x;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		spx_buf_reset(&b);
		spx_xml_begin_buf(&x, &b);
		spx_xml_elem(&x, t[i].name, "v");
		T_INT(spx_xml_end(&x), t[i].ok ? 0 : -1, "element name %zu '%s'",
		      i, t[i].name ? t[i].name : "(null)");
		if (!t[i].ok)
			T_INT(spx_errstatus(), SPX_USAGE,
			      "element name %zu is a usage error", i);
		spx_buf_reset(&b);
		spx_xml_begin_buf(&x, &b);
		spx_xml_open(&x, "a");
		spx_xml_attr(&x, t[i].name, "v");
		spx_xml_close(&x);
		T_INT(spx_xml_end(&x), t[i].ok ? 0 : -1,
		      "attribute name %zu '%s'", i,
		      t[i].name ? t[i].name : "(null)");
	}
	memset(lng, 'n', sizeof(lng));
	lng[SPX_XML_NAMEMAX] = '\0';
	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	spx_xml_elem(&x, lng, "");
	T_INT(spx_xml_end(&x), 0, "a name of SPX_XML_NAMEMAX bytes is fine");
	lng[SPX_XML_NAMEMAX] = 'n';
	lng[SPX_XML_NAMEMAX + 1] = '\0';
	spx_xml_begin_buf(&x, &b);
	spx_xml_elem(&x, lng, "");
	T_INT(spx_xml_end(&x), -1, "a longer name is refused");
	spx_buf_release(&b);
}

static void test_balance(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_xml x;
	char name[16];

	spx_xml_begin_buf(&x, &b);
	T_INT(spx_xml_close(&x), -1, "close with nothing open fails");
	T_STR(spx_errmsg(), "xml close with no element open",
	      "close with nothing open: message");
	T_INT(spx_errstatus(), SPX_USAGE, "close with nothing open: status");
	T_INT(spx_xml_open(&x, "a"), -1, "the error is sticky");
	T_INT(spx_xml_end(&x), -1, "end reports the sticky error");
	T_STR(spx_errmsg(), "xml close with no element open",
	      "the first message survives");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	spx_xml_open(&x, "a");
	spx_xml_open(&x, "bb");
	spx_xml_close(&x);
	T_INT(spx_xml_end(&x), -1, "end with an element open fails");
	T_STR(spx_errmsg(), "xml element 'a' is not closed",
	      "end names the open element");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	for (int i = 0; i < SPX_XML_MAXDEPTH; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		spx_xml_open(&x, name);
	}
	for (int i = 0; i < SPX_XML_MAXDEPTH; i++)
		spx_xml_close(&x);
	T_INT(spx_xml_end(&x), 0, "nesting SPX_XML_MAXDEPTH deep is fine");
	T_OK(!strncmp(b.p, "<e0><e1><e2>", 12) &&
		     !strcmp(b.p + b.len - 10, "</e1></e0>"),
	     "deep nesting closes in order");
	T_OK(strstr(b.p, "<e31></e31></e30>") != NULL,
	     "the innermost element is empty");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	for (int i = 0; i <= SPX_XML_MAXDEPTH; i++)
		spx_xml_open(&x, "d");
	T_INT(spx_xml_end(&x), -1, "nesting deeper fails");
	T_STR(spx_errmsg(), "xml element 'd' nested deeper than 32 levels",
	      "depth message");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	spx_xml_open(&x, "a");
	spx_xml_text(&x, "t");
	T_INT(spx_xml_attr(&x, "k", "v"), -1, "attribute after text fails");
	T_STR(spx_errmsg(), "xml attribute 'k' outside a start tag",
	      "attribute message");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	T_INT(spx_xml_text(&x, "t"), -1, "text outside an element fails");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	spx_xml_open(&x, "r");
	spx_xml_attr(&x, "n", NULL);
	spx_xml_open(&x, "a");
	spx_xml_close(&x);
	spx_xml_open(&x, "b");
	spx_xml_elem(&x, "c", NULL);
	spx_xml_elem(&x, "d", "");
	spx_xml_text(&x, NULL);
	spx_xml_close(&x);
	spx_xml_close(&x);
	T_INT(spx_xml_end(&x), 0, "siblings and empty elements");
	T_STR(b.p, "<r><a></a><b><d></d></b></r>",
	      "empty elements are <a></a>; NULL omits an element, "
	      "an attribute or a text");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	spx_xml_open(&x, "a");
	spx_xml_close(&x);
	T_INT(spx_xml_open(&x, "b"), -1, "a second root fails");
	T_STR(spx_errmsg(), "xml document has a second root 'b'",
	      "second root: message");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	spx_xml_open(&x, "a");
	T_INT(spx_xml_decl(&x), -1, "a late declaration fails");
	T_STR(spx_errmsg(), "xml declaration after the start",
	      "late declaration: message");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	spx_xml_decl(&x);
	T_INT(spx_xml_decl(&x), -1, "a second declaration fails");
	T_INT(spx_xml_end(&x), -1, "and end reports it");
	spx_buf_release(&b);
}

static void test_values(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_xml x;
	char lng[1000];

	spx_xml_begin_buf(&x, &b);
	spx_xml_open(&x, "r");
	spx_xml_elem_bool(&x, "t", true);
	spx_xml_elem_bool(&x, "f", false);
	spx_xml_elem_u64(&x, "u", UINT64_MAX);
	spx_xml_elem_u64(&x, "z", 0);
	spx_xml_elem_i64(&x, "i", INT64_MIN);
	spx_xml_elemf(&x, "s", "%s-%03d", "a&b", 7);
	spx_xml_close(&x);
	T_INT(spx_xml_end(&x), 0, "typed values render");
	T_STR(b.p,
	      "<r><t>true</t><f>false</f><u>18446744073709551615</u><z>0</z>"
	      "<i>-9223372036854775808</i><s>a&amp;b-007</s></r>",
	      "typed values");

	memset(lng, 'x', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	lng[500] = '<';
	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	spx_xml_elemf(&x, "l", "[%s]", lng);
	T_INT(spx_xml_end(&x), 0, "a long elemf renders");
	T_INT(b.len, strlen("<l>[]</l>") + 999 + 3, "a long elemf is whole");
	T_OK(strstr(b.p, "x&lt;x") != NULL, "a long elemf is escaped");

	spx_buf_reset(&b);
	spx_xml_begin_buf(&x, &b);
	spx_xml_open_ns(&x, "AccessControlPolicy", SPX_XML_NS_S3);
	spx_xml_open(&x, "Grantee");
	spx_xml_attr(&x, "xmlns:xsi", SPX_XML_NS_XSI);
	spx_xml_attr(&x, "xsi:type", "CanonicalUser");
	spx_xml_elem(&x, "ID", "abc");
	spx_xml_close(&x);
	spx_xml_close(&x);
	T_INT(spx_xml_end(&x), 0, "attributes render");
	T_STR(b.p,
	      "<AccessControlPolicy "
	      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Grantee "
	      "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
	      "xsi:type=\"CanonicalUser\"><ID>abc</ID></Grantee>"
	      "</AccessControlPolicy>",
	      "attributes");
	spx_buf_release(&b);
}

static void describe_regions(struct spx_xml *x)
{
	static const char *const regions[][2] = {
		{ "eu-north-1", "ec2.eu-north-1.amazonaws.com" },
		{ "us-east-1", "ec2.us-east-1.amazonaws.com" },
		{ "ap-southeast-2", "ec2.ap-southeast-2.amazonaws.com" },
	};

	spx_xml_decl(x);
	spx_xml_open_ns(x, "DescribeRegionsResponse", SPX_XML_NS_EC2);
	spx_xml_elem(x, "requestId", "59dbff89-35bd-4eac-99ed-be587ebb7ed2");
	spx_xml_open(x, "regionInfo");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(regions); i++) {
		spx_xml_open(x, "item");
		spx_xml_elem(x, "regionName", regions[i][0]);
		spx_xml_elem(x, "regionEndpoint", regions[i][1]);
		spx_xml_elem(x, "optInStatus", "opt-in-not-required");
		spx_xml_close(x);
	}
	spx_xml_close(x);
	spx_xml_close(x);
}

static const char regions_want[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
	"<DescribeRegionsResponse "
	"xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
	"<requestId>59dbff89-35bd-4eac-99ed-be587ebb7ed2</requestId>"
	"<regionInfo>"
	"<item><regionName>eu-north-1</regionName>"
	"<regionEndpoint>ec2.eu-north-1.amazonaws.com</regionEndpoint>"
	"<optInStatus>opt-in-not-required</optInStatus></item>"
	"<item><regionName>us-east-1</regionName>"
	"<regionEndpoint>ec2.us-east-1.amazonaws.com</regionEndpoint>"
	"<optInStatus>opt-in-not-required</optInStatus></item>"
	"<item><regionName>ap-southeast-2</regionName>"
	"<regionEndpoint>ec2.ap-southeast-2.amazonaws.com</regionEndpoint>"
	"<optInStatus>opt-in-not-required</optInStatus></item>"
	"</regionInfo></DescribeRegionsResponse>";

struct rec {
	struct spx_buf b;
	int calls;
	size_t maxpiece;
	size_t failat; /* fail once this many bytes are in; 0: never */
};

static int rec_sink(void *ctx, const char *p, size_t n)
{
	struct rec *r = ctx;

	r->calls++;
	if (n > r->maxpiece)
		r->maxpiece = n;
	if (r->failat && r->b.len + n >= r->failat)
		return spx_error(SPX_FAIL, "cannot write response: %s",
				 "Broken pipe");
	spx_buf_add(&r->b, p, n);
	return 0;
}

static void test_document(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct rec r = { SPX_BUF_INIT, 0, 0, 0 };
	struct spx_xml x;
	struct spx_xml_doc *d;
	const struct spx_xml_node *root, *it;
	int n = 0;

	spx_xml_begin_buf(&x, &b);
	describe_regions(&x);
	T_INT(spx_xml_end(&x), 0, "DescribeRegions renders");
	T_STR(b.p, regions_want, "DescribeRegions document");
	T_INT(x.bytes, strlen(regions_want), "the writer counts its bytes");

	T_INT(spx_xml_parse(b.p, b.len, NULL, &d), 0,
	      "DescribeRegions reads back");
	root = spx_xml_doc_root(d);
	T_OK(spx_xml_is(root, "DescribeRegionsResponse", SPX_XML_NS_EC2),
	     "DescribeRegions root and namespace");
	it = spx_xml_child(spx_xml_child(root, "regionInfo"), "item");
	for (; it; it = spx_xml_next(it, "item"))
		n++;
	T_INT(n, 3, "DescribeRegions has three items");
	spx_xml_doc_free(d);

	/* A streaming sink sees the same bytes, in bounded pieces. */
	spx_xml_begin(&x, rec_sink, &r);
	spx_xml_open(&x, "ListBucketResult");
	spx_xml_elem(&x, "Name", "bucket");
	T_INT(r.calls, 0, "nothing reaches the sink before the stage fills");
	for (int i = 0; i < 500; i++) {
		spx_xml_open(&x, "Contents");
		spx_xml_elemf(&x, "Key", "photos/2024/%04d.jpg", i);
		spx_xml_elem(&x, "ETag", "\"9b2cf535f27731c974343645a3985328\"");
		spx_xml_close(&x);
	}
	spx_xml_close(&x);
	T_INT(spx_xml_end(&x), 0, "a streamed listing renders");
	T_OK(r.calls > 10, "a streamed listing arrives in pieces (%d)",
	     r.calls);
	T_OK(r.maxpiece <= SPX_XML_STAGE, "pieces are at most SPX_XML_STAGE");
	T_INT(r.b.len, x.bytes, "the sink got every byte");
	T_OK(spx_xml_parse(r.b.p, r.b.len, NULL, &d) == 0 &&
		     spx_xml_count(spx_xml_doc_root(d), "Contents") == 500,
	     "the streamed listing reads back");
	spx_xml_doc_free(d);

	/* A text longer than the stage goes straight through. */
	{
		char *big = spx_malloc(3 * SPX_XML_STAGE);

		memset(big, 'q', 3 * SPX_XML_STAGE);
		spx_buf_reset(&r.b);
		spx_xml_begin(&x, rec_sink, &r);
		spx_xml_elemn(&x, "big", big, 3 * SPX_XML_STAGE);
		T_INT(spx_xml_end(&x), 0, "a long text streams");
		T_INT(r.b.len, 3 * SPX_XML_STAGE + 11, "a long text is whole");
		free(big);
	}

	spx_buf_reset(&r.b);
	r.failat = 5000;
	spx_xml_begin(&x, rec_sink, &r);
	spx_xml_open(&x, "L");
	for (int i = 0; i < 500; i++)
		spx_xml_elem(&x, "Key", "some/key/name");
	spx_xml_close(&x);
	T_INT(spx_xml_end(&x), -1, "a failing sink fails the document");
	T_INT(spx_errstatus(), SPX_FAIL, "the sink's status is kept");
	T_STR(spx_errmsg(), "cannot write response: Broken pipe",
	      "the sink's message is kept");
	spx_buf_release(&r.b);
	spx_buf_release(&b);
}

/* --- reader --- */

static void dump(struct spx_buf *o, const struct spx_xml_node *n)
{
	spx_buf_addf(o, "{%s}%s", n->ns, n->name);
	for (size_t i = 0; i < n->nattrs; i++)
		spx_buf_addf(o, " {%s}%s=%s", n->attrs[i].ns, n->attrs[i].name,
			     n->attrs[i].value);
	spx_buf_addf(o, "(%s)[", n->text);
	for (const struct spx_xml_node *c = n->children; c; c = c->next)
		dump(o, c);
	spx_buf_adds(o, "]");
}

/* Parse in pieces of chunk bytes (0: whole) and dump, or the message. */
static char *parse_dump(const char *s, size_t len, size_t chunk,
			const struct spx_xml_limits *lim)
{
	struct spx_xml_parser *p = spx_xml_parser_new(lim);
	struct spx_xml_doc *d = NULL;
	struct spx_buf o = SPX_BUF_INIT;
	size_t i = 0;
	int rc = 0;

	if (!chunk)
		chunk = len ? len : 1;
	for (; i < len && !rc; i += chunk)
		rc = spx_xml_feed(p, s + i, len - i < chunk ? len - i : chunk);
	if (!rc)
		rc = spx_xml_finish(p, &d);
	spx_xml_parser_free(p);
	if (rc)
		spx_buf_addf(&o, "error %d: %s", spx_errstatus(), spx_errmsg());
	else
		dump(&o, spx_xml_doc_root(d));
	spx_xml_doc_free(d);
	return spx_buf_detach(&o, NULL);
}

static const char create_bucket[] =
	"<CreateBucketConfiguration "
	"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
	"  <LocationConstraint>eu-west-1</LocationConstraint>\n"
	"</CreateBucketConfiguration>\n";

static const char delete_objects[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
	"  <Quiet>true</Quiet>\n"
	"  <Object><Key>a.txt</Key></Object>\n"
	"  <Object><Key> spaced &amp; odd </Key>"
	"<VersionId>UIORUnfnd89493jJFJ</VersionId></Object>\n"
	"  <Object><Key>&#xD;cr&#10;lf</Key></Object>\n"
	"</Delete>";

static const char complete_mpu[] =
	"<CompleteMultipartUpload>"
	"<Part><PartNumber>1</PartNumber>"
	"<ETag>\"a54357aff0632cce46d942af68356b38\"</ETag></Part>"
	"<Part><PartNumber>2</PartNumber>"
	"<ETag>&quot;0c78aef83f66abc1fa1e8477f296d394&quot;</ETag></Part>"
	"</CompleteMultipartUpload>";

static const char tagging[] =
	"<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<TagSet><Tag><Key>project</Key><Value>spx</Value></Tag>"
	"<Tag><Key>empty</Key><Value></Value></Tag>"
	"<Tag><Key>\xC3\xA9t\xC3\xA9</Key><Value><![CDATA[<b>&]]></Value>"
	"</Tag></TagSet></Tagging>";

static const char versioning[] =
	"<VersioningConfiguration "
	"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Status>Enabled</Status><MfaDelete>Disabled</MfaDelete>"
	"</VersioningConfiguration>";

static const char acl[] =
	"<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Owner><ID>owner</ID></Owner><AccessControlList><Grant>"
	"<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
	"xsi:type=\"CanonicalUser\"><ID>owner</ID></Grantee>"
	"<Permission>FULL_CONTROL</Permission></Grant></AccessControlList>"
	"</AccessControlPolicy>";

static void test_s3_bodies(void)
{
	struct spx_xml_doc *d;
	const struct spx_xml_node *r, *o, *t;
	int n;

	T_INT(spx_xml_parse(S(create_bucket), NULL, &d), 0,
	      "CreateBucketConfiguration parses");
	r = spx_xml_doc_root(d);
	T_OK(spx_xml_is(r, "CreateBucketConfiguration", SPX_XML_NS_S3),
	     "CreateBucketConfiguration: root");
	T_STR(spx_xml_child_text(r, "LocationConstraint"), "eu-west-1",
	      "CreateBucketConfiguration: LocationConstraint");
	T_OK(spx_xml_child_text(r, "Nope") == NULL,
	     "child_text of a missing child is NULL");
	T_INT(r->line, 1, "root line");
	T_INT(spx_xml_child(r, NULL)->line, 2, "child line");
	T_INT(spx_xml_child(r, NULL)->column, 3, "child column");
	spx_xml_doc_free(d);

	T_INT(spx_xml_parse(S(delete_objects), NULL, &d), 0,
	      "Delete parses");
	r = spx_xml_doc_root(d);
	T_STR(spx_xml_child_text(r, "Quiet"), "true", "Delete: Quiet");
	T_INT(spx_xml_count(r, "Object"), 3, "Delete: three objects");
	T_INT(spx_xml_count(r, NULL), 4, "Delete: four children");
	o = spx_xml_child(r, "Object");
	T_STR(spx_xml_child_text(o, "Key"), "a.txt", "Delete: first key");
	T_OK(spx_xml_child_text(o, "VersionId") == NULL,
	     "Delete: first has no version");
	o = spx_xml_next(o, "Object");
	T_STR(spx_xml_child_text(o, "Key"), " spaced & odd ",
	      "Delete: whitespace and entities are kept");
	T_STR(spx_xml_child_text(o, "VersionId"), "UIORUnfnd89493jJFJ",
	      "Delete: version id");
	o = spx_xml_next(o, "Object");
	T_STR(spx_xml_child_text(o, "Key"), "\rcr\nlf",
	      "Delete: character references");
	T_OK(spx_xml_next(o, "Object") == NULL, "Delete: three, no more");
	T_STR(r->text, "\n  \n  \n  \n  \n", "Delete: root text is whitespace");
	spx_xml_doc_free(d);

	T_INT(spx_xml_parse(S(complete_mpu), NULL, &d), 0,
	      "CompleteMultipartUpload parses");
	r = spx_xml_doc_root(d);
	T_STR(r->ns, "", "CompleteMultipartUpload: no namespace");
	n = 0;
	for (o = spx_xml_child(r, "Part"); o; o = spx_xml_next(o, "Part"))
		n++;
	T_INT(n, 2, "CompleteMultipartUpload: two parts");
	o = spx_xml_child(r, "Part");
	o = spx_xml_next(o, "Part");
	T_STR(spx_xml_child_text(o, "PartNumber"), "2",
	      "CompleteMultipartUpload: part number");
	T_STR(spx_xml_child_text(o, "ETag"),
	      "\"0c78aef83f66abc1fa1e8477f296d394\"",
	      "CompleteMultipartUpload: etag");
	spx_xml_doc_free(d);

	T_INT(spx_xml_parse(S(tagging), NULL, &d), 0, "Tagging parses");
	r = spx_xml_doc_root(d);
	t = spx_xml_child(spx_xml_child(r, "TagSet"), "Tag");
	T_STR(spx_xml_child_text(t, "Key"), "project", "Tagging: key");
	T_STR(spx_xml_child_text(t, "Value"), "spx", "Tagging: value");
	t = spx_xml_next(t, "Tag");
	T_STR(spx_xml_child_text(t, "Value"), "", "Tagging: empty value");
	t = spx_xml_next(t, "Tag");
	T_STR(spx_xml_child_text(t, "Key"), "\xC3\xA9t\xC3\xA9",
	      "Tagging: utf-8 key");
	T_STR(spx_xml_child_text(t, "Value"), "<b>&", "Tagging: CDATA");
	spx_xml_doc_free(d);

	T_INT(spx_xml_parse(S(versioning), NULL, &d), 0,
	      "VersioningConfiguration parses");
	r = spx_xml_doc_root(d);
	T_STR(spx_xml_child_text(r, "Status"), "Enabled",
	      "VersioningConfiguration: Status");
	T_STR(spx_xml_child_text(r, "MfaDelete"), "Disabled",
	      "VersioningConfiguration: MfaDelete");
	spx_xml_doc_free(d);

	T_INT(spx_xml_parse(S(acl), NULL, &d), 0, "AccessControlPolicy parses");
	r = spx_xml_doc_root(d);
	t = spx_xml_child(spx_xml_child(spx_xml_child(r, "AccessControlList"),
					"Grant"),
			  "Grantee");
	T_STR(spx_xml_node_attr(t, "type"), "CanonicalUser",
	      "AccessControlPolicy: xsi:type by local name");
	T_INT(t->nattrs, 1, "xmlns declarations are not attributes");
	T_STR(t->attrs[0].ns, SPX_XML_NS_XSI, "attribute namespace");
	T_OK(spx_xml_node_attr(t, "xsi:type") == NULL,
	     "attributes are looked up by local name");
	T_STR(t->ns, SPX_XML_NS_S3, "the default namespace is inherited");
	spx_xml_doc_free(d);
}

static const struct {
	const char *in;
	const char *want; /* the dump, or "error ..." */
} parses[] = {
	{ "<a/>", "{}a()[]" },
	{ "  <a/>\n\n", "{}a()[]" },
	{ "<?xml version=\"1.0\"?><a>x</a>", "{}a(x)[]" },
	{ "\xEF\xBB\xBF<a>bom</a>", "{}a(bom)[]" },
	{ "<!-- c --><a><!-- c -->x<?pi y?>y</a><!-- c -->", "{}a(xy)[]" },
	{ "<a>x<b>y</b>z<c/>w</a>", "{}a(xzw)[{}b(y)[]{}c()[]]" },
	{ "<a>&lt;&gt;&amp;&quot;&apos;&#65;&#x42;</a>", "{}a(<>&\"'AB)[]" },
	{ "<a>l1\r\nl2\rl3</a>", "{}a(l1\nl2\nl3)[]" },
	{ "<a>&#xD;&#13;</a>", "{}a(\r\r)[]" },
	{ "<a k='v' j=\"&lt;\"/>", "{}a {}k=v {}j=<()[]" },
	{ "<a k=' x\ty\nz '/>", "{}a {}k= x y z ()[]" },
	{ "<a xmlns='urn:x'><b/></a>", "{urn:x}a()[{urn:x}b()[]]" },
	{ "<p:a xmlns:p='urn:p'><p:b/><c/></p:a>",
	  "{urn:p}a()[{urn:p}b()[]{}c()[]]" },
	{ "<a xmlns='urn:1'><b xmlns='urn:2'><c/></b><d/></a>",
	  "{urn:1}a()[{urn:2}b()[{urn:2}c()[]]{urn:1}d()[]]" },
	{ "<a xmlns='urn:1'><b xmlns=''/></a>", "{urn:1}a()[{}b()[]]" },
	{ "<a xmlns:q='urn:q' q:k='1' k='2'/>", "{}a {urn:q}k=1 {}k=2()[]" },
	{ "<?xml version='1.0' encoding='ISO-8859-1'?><a>\xE9</a>",
	  "{}a(\xC3\xA9)[]" },
	/* Refused, with positions. */
	{ "", "error 100: line 1 column 1: no element found" },
	{ "  \n ", "error 100: line 2 column 2: no element found" },
	{ "<a>", "error 100: line 1 column 4: no element found" },
	{ "<a", "error 100: line 1 column 1: unclosed token" },
	{ "<a></b>", "error 100: line 1 column 6: mismatched tag" },
	{ "<a>\n<b>\n</c></a>", "error 100: line 3 column 3: mismatched tag" },
	{ "<a/>junk",
	  "error 100: line 1 column 5: junk after document element" },
	{ "<a/><b/>",
	  "error 100: line 1 column 5: junk after document element" },
	{ "junk<a/>",
	  "error 100: line 1 column 5: not well-formed (invalid token)" },
	{ "<a x='1' x='2'/>",
	  "error 100: line 1 column 10: duplicate attribute" },
	{ "<a>&foo;</a>", "error 100: line 1 column 4: undefined entity" },
	{ "<a>&#0;</a>",
	  "error 100: line 1 column 4: reference to invalid character number" },
	{ "<a>&#1;</a>",
	  "error 100: line 1 column 4: reference to invalid character number" },
	{ "<a>\xFF</a>",
	  "error 100: line 1 column 4: not well-formed (invalid token)" },
	{ "<a>\xC0\xAF</a>",
	  "error 100: line 1 column 4: not well-formed (invalid token)" },
	{ "<a>\x01</a>",
	  "error 100: line 1 column 4: not well-formed (invalid token)" },
	{ "<p:a/>", "error 100: line 1 column 1: unbound prefix" },
	{ "<a><b></a>", "error 100: line 1 column 9: mismatched tag" },
	{ "<1a/>", "error 100: line 1 column 2: not well-formed (invalid token)" },
	{ "<a b=c/>",
	  "error 100: line 1 column 6: not well-formed (invalid token)" },
	{ "<a>]]></a>",
	  "error 100: line 1 column 6: not well-formed (invalid token)" },
};

static void test_parse_table(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(parses); i++) {
		const char *in = parses[i].in;
		char *got = parse_dump(in, strlen(in), 0, NULL);

		T_STR(got, parses[i].want, "parse %zu", i);
		free(got);
		/* Whole, in bytes, and in pairs: the same answer. */
		got = parse_dump(in, strlen(in), 1, NULL);
		T_STR(got, parses[i].want, "parse %zu, one byte at a time", i);
		free(got);
	}
}

static void test_chunked(void)
{
	static const char *const docs[] = { create_bucket, delete_objects,
					    complete_mpu, tagging, versioning,
					    acl };
	static const size_t chunks[] = { 1, 2, 3, 7, 100, 8191, 8192, 8193,
					 10000 };
	struct spx_buf big = SPX_BUF_INIT;
	const char *s;
	char *whole, *got;
	size_t len;
	int bad;

	/* A big DeleteObjects of 1000 keys, past the reader's staging. */
	spx_buf_adds(&big, "<Delete xmlns=\"" SPX_XML_NS_S3 "\">");
	for (int i = 0; i < 1000; i++)
		spx_buf_addf(&big,
			     "<Object><Key>dir/%d/file&amp;%d.txt</Key>"
			     "<VersionId>v%d</VersionId></Object>\n",
			     i, i, i);
	spx_buf_adds(&big, "</Delete>");

	for (size_t i = 0; i <= SPX_ARRAY_SIZE(docs); i++) {
		s = i < SPX_ARRAY_SIZE(docs) ? docs[i] : big.p;
		len = strlen(s);
		whole = parse_dump(s, len, 0, NULL);
		T_OK(strncmp(whole, "error", 5),
		     "chunked %zu: parses whole", i);
		bad = 0;
		for (size_t c = 0; c < SPX_ARRAY_SIZE(chunks); c++) {
			got = parse_dump(s, len, chunks[c], NULL);
			bad += strcmp(got, whole) != 0;
			free(got);
		}
		T_INT(bad, 0, "chunked %zu: every chunk size gives the same DOM",
		      i);
		free(whole);
	}
	{
		struct spx_xml_doc *d;

		T_INT(spx_xml_parse(big.p, big.len, NULL, &d), 0,
		      "1000 objects parse");
		T_INT(spx_xml_count(spx_xml_doc_root(d), "Object"), 1000,
		      "1000 objects are there");
		T_STR(spx_xml_child_text(spx_xml_child(spx_xml_doc_root(d),
						       "Object"),
					 "Key"),
		      "dir/0/file&0.txt", "the first of 1000");
		spx_xml_doc_free(d);
	}
	spx_buf_release(&big);
}

static char *nested(int depth)
{
	struct spx_buf b = SPX_BUF_INIT;

	for (int i = 0; i < depth; i++)
		spx_buf_adds(&b, "<e>");
	for (int i = 0; i < depth; i++)
		spx_buf_adds(&b, "</e>");
	return spx_buf_detach(&b, NULL);
}

static void test_limits(void)
{
	struct spx_xml_limits lim = { 0 };
	struct spx_buf b = SPX_BUF_INIT;
	char *s, *got;

	s = nested(16);
	got = parse_dump(s, strlen(s), 0, NULL);
	T_OK(strncmp(got, "error", 5), "depth 16 is fine by default");
	free(got);
	free(s);
	s = nested(17);
	got = parse_dump(s, strlen(s), 0, NULL);
	T_STR(got,
	      "error 100: line 1 column 49: elements nested deeper than 16 "
	      "levels",
	      "depth 17 is refused by default");
	free(got);
	free(s);
	lim.max_depth = 3;
	got = parse_dump(S("<a><b><c/></b></a>"), 0, &lim);
	T_OK(strncmp(got, "error", 5), "depth 3 of 3");
	free(got);
	got = parse_dump(S("<a><b><c><d/></c></b></a>"), 0, &lim);
	T_STR(got,
	      "error 100: line 1 column 10: elements nested deeper than 3 "
	      "levels",
	      "depth 4 of 3");
	free(got);
	s = nested(100000);
	lim.max_depth = 0;
	lim.max_bytes = 2000000;
	got = parse_dump(s, strlen(s), 0, &lim);
	T_OK(!strncmp(got, "error 100: line 1 column 49: elements nested",
		      44),
	     "100000 levels are refused early");
	free(got);
	free(s);

	lim = (struct spx_xml_limits){ .max_bytes = 20 };
	got = parse_dump(S("<a>0123456789abc</a>"), 0, &lim);
	T_OK(strncmp(got, "error", 5), "20 bytes of 20");
	free(got);
	got = parse_dump(S("<a>0123456789abcd</a>"), 0, &lim);
	T_STR(got, "error 100: xml document is larger than 20 bytes",
	      "21 bytes of 20");
	free(got);
	got = parse_dump(S("<a>0123456789abcd</a>"), 1, &lim);
	T_STR(got, "error 100: xml document is larger than 20 bytes",
	      "21 bytes of 20, fed one at a time");
	free(got);

	lim = (struct spx_xml_limits){ .max_elems = 3 };
	got = parse_dump(S("<a><b/><c/></a>"), 0, &lim);
	T_OK(strncmp(got, "error", 5), "3 elements of 3");
	free(got);
	got = parse_dump(S("<a><b/><c/><d/></a>"), 0, &lim);
	T_STR(got, "error 100: line 1 column 12: more than 3 elements",
	      "4 elements of 3");
	free(got);
	spx_buf_adds(&b, "<a>");
	for (int i = 0; i < 100001; i++)
		spx_buf_adds(&b, "<b/>");
	spx_buf_adds(&b, "</a>");
	got = parse_dump(b.p, b.len, 0, NULL);
	T_OK(strstr(got, ": more than 100000 elements") != NULL,
	     "100002 elements are refused by default");
	free(got);

	lim = (struct spx_xml_limits){ .max_text = 5 };
	got = parse_dump(S("<a>12345<b>12345</b></a>"), 0, &lim);
	T_OK(strncmp(got, "error", 5), "5 bytes of text each, of 5");
	free(got);
	got = parse_dump(S("<a>123<b/>456</a>"), 0, &lim);
	T_STR(got,
	      "error 100: line 1 column 11: text of element 'a' is longer "
	      "than 5 bytes",
	      "text split by a child counts whole");
	free(got);
	got = parse_dump(S("<a>&amp;&amp;&amp;&amp;&amp;&amp;</a>"), 0, &lim);
	T_OK(strstr(got, "text of element 'a' is longer than 5 bytes") != NULL,
	     "the limit counts decoded text");
	free(got);

	lim = (struct spx_xml_limits){ .max_attrs = 2 };
	got = parse_dump(S("<a x='1' y='2'/>"), 0, &lim);
	T_OK(strncmp(got, "error", 5), "2 attributes of 2");
	free(got);
	got = parse_dump(S("<a x='1' y='2' z='3'/>"), 0, &lim);
	T_STR(got, "error 100: line 1 column 1: more than 2 attributes",
	      "3 attributes of 2");
	free(got);
	spx_buf_release(&b);
}

static const char lol[] =
	"<?xml version=\"1.0\"?>\n"
	"<!DOCTYPE lolz [\n"
	" <!ENTITY lol \"lol\">\n"
	" <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
	" <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;"
	"&lol1;\">\n"
	" <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"
	"&lol2;\">\n"
	" <!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;"
	"&lol3;\">\n"
	" <!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;"
	"&lol4;\">\n"
	" <!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;"
	"&lol5;\">\n"
	" <!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;"
	"&lol6;\">\n"
	" <!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;"
	"&lol7;\">\n"
	" <!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;"
	"&lol8;\">\n"
	"]>\n"
	"<lolz>&lol9;</lolz>\n";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_doctype(void)
{
	static const struct {
		const char *in;
		const char *want;
	} t[] = {
		{ "<!DOCTYPE a><a/>",
		  "error 100: line 1 column 12: a document type declaration "
		  "is not allowed" },
		{ "<!DOCTYPE a SYSTEM \"file:///etc/passwd\"><a/>",
		  "error 100: line 1 column 40: a document type declaration "
		  "is not allowed" },
		{ "<?xml version=\"1.0\"?>\n<!DOCTYPE a [<!ENTITY x SYSTEM "
		  "\"file:///etc/passwd\">]><a>&x;</a>",
		  "error 100: line 2 column 13: a document type declaration "
		  "is not allowed" },
		{ "<!DOCTYPE a [<!ENTITY % p SYSTEM \"http://evil/x.dtd\"> %p;]>"
		  "<a/>",
		  "error 100: line 1 column 13: a document type declaration "
		  "is not allowed" },
		{ "<!DOCTYPE a PUBLIC \"-//X//Y\" \"http://evil/y.dtd\"><a/>",
		  "error 100: line 1 column 49: a document type declaration "
		  "is not allowed" },
		{ "<a/><!DOCTYPE a>",
		  "error 100: line 1 column 5: junk after document element" },
		{ "<a><!DOCTYPE a></a>",
		  "error 100: line 1 column 6: not well-formed (invalid token)" },
		{ "<a><!ENTITY x \"y\"></a>",
		  "error 100: line 1 column 6: not well-formed (invalid token)" },
	};
	double t0;
	char *got;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		got = parse_dump(t[i].in, strlen(t[i].in), 0, NULL);
		T_STR(got, t[i].want, "doctype %zu", i);
		free(got);
		got = parse_dump(t[i].in, strlen(t[i].in), 1, NULL);
		T_STR(got, t[i].want, "doctype %zu, one byte at a time", i);
		free(got);
	}
	t0 = now();
	got = parse_dump(S(lol), 0, NULL);
	T_STR(got,
	      "error 100: line 2 column 16: a document type declaration is "
	      "not allowed",
	      "billion laughs is refused");
	T_OK(now() - t0 < 0.5, "billion laughs fails fast (%.4f s)",
	     now() - t0);
	free(got);
}

static void test_parser_use(void)
{
	struct spx_xml_parser *p;
	struct spx_xml_doc *d, *d2;
	struct spx_xml_node *root;

	p = spx_xml_parser_new(NULL);
	T_INT(spx_xml_feed(p, S("<a>")), 0, "feed a start");
	T_INT(spx_xml_feed(p, S("</b>")), 0, "a bad piece is only staged");
	T_INT(spx_xml_finish(p, &d), -1, "finish finds the error");
	T_STR(spx_errmsg(), "line 1 column 6: mismatched tag",
	      "finish: message");
	T_OK(d == NULL, "no document after an error");
	T_INT(spx_xml_feed(p, S("</a>")), -1, "a failed parser stays failed");
	T_STR(spx_errmsg(), "line 1 column 6: mismatched tag",
	      "the same message again");
	spx_xml_parser_free(p);

	p = spx_xml_parser_new(NULL);
	T_INT(spx_xml_feed(p, S("<a/>")), 0, "feed a whole document");
	T_INT(spx_xml_finish(p, &d), 0, "finish");
	T_INT(spx_xml_feed(p, S(" ")), -1, "feeding after the end fails");
	T_INT(spx_xml_finish(p, &d2), -1, "finishing twice fails");
	spx_xml_parser_free(p);
	root = (struct spx_xml_node *)spx_xml_doc_root(d);
	T_STR(root->name, "a", "the document outlives its parser");
	spx_xml_doc_free(d);

	spx_xml_parser_free(spx_xml_parser_new(NULL));
	T_OK(1, "a parser never fed frees cleanly");
	spx_xml_doc_free(NULL);
	spx_xml_parser_free(NULL);
	T_OK(1, "freeing NULL is fine");

	T_OK(!spx_xml_is(NULL, "a", NULL), "is(NULL) is false");
	T_OK(spx_xml_child(NULL, "a") == NULL, "child(NULL) is NULL");
	T_INT(spx_xml_count(NULL, NULL), 0, "count(NULL) is 0");
}

int main(void)
{
	test_escape();
	test_escape_all_bytes();
	test_names();
	test_balance();
	test_values();
	test_document();
	test_s3_bodies();
	test_parse_table();
	test_chunked();
	test_limits();
	test_doctype();
	test_parser_use();
	return t_done();
}
