/* s3conf.c: S3 tag sets and versioning configuration (contract in
 * s3conf.h). */
#include "spx.h"

#include "gw/s3conf.h"
#include "http/query.h"
#include "xml/xml.h"

/* A request body of a few tags needs little: these bound the DOM. */
static const struct spx_xml_limits lim = {
	.max_bytes = 256 << 10,
	.max_depth = 8,
	.max_elems = 2000,
	.max_text = 4096,
	.max_attrs = 8,
};

static int fail(struct spx_s3_err *err, int http, const char *code,
		const char *message)
{
	err->http = http;
	err->code = code;
	err->message = message;
	return spx_error(SPX_USAGE, "%s: %s", code, message);
}

static int malformed(struct spx_s3_err *err)
{
	return fail(err, 400, "MalformedXML",
		    "The XML you provided was not well-formed or did not "
		    "validate against our published schema");
}

/* Characters (code points) of valid UTF-8, or -1 if it is not. */
static long utf8_chars(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	long n = 0;

	while (*s) {
		unsigned c = *s, more, min;
		uint32_t cp;

		if (c < 0x80)
			more = 0, min = 0, cp = c;
		else if ((c & 0xe0) == 0xc0)
			more = 1, min = 0x80, cp = c & 0x1f;
		else if ((c & 0xf0) == 0xe0)
			more = 2, min = 0x800, cp = c & 0x0f;
		else if ((c & 0xf8) == 0xf0)
			more = 3, min = 0x10000, cp = c & 0x07;
		else
			return -1;
		for (unsigned i = 1; i <= more; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return -1;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return -1;
		s += more + 1;
		n++;
	}
	return n;
}

static int check(const struct spx_kvlist *t, enum spx_s3_tags_of of,
		 struct spx_s3_err *err)
{
	if (of == SPX_S3_TAGS_OBJECT && t->n > 10)
		return fail(err, 400, "BadRequest",
			    "Object tags cannot be greater than 10");
	if (of == SPX_S3_TAGS_BUCKET && t->n > 50)
		return fail(err, 400, "InvalidTag",
			    "Bucket tag count cannot be greater than 50");
	for (size_t i = 0; i < t->n; i++) {
		long kl = utf8_chars(t->v[i].k), vl = utf8_chars(t->v[i].v);

		if (kl <= 0)
			return fail(err, 400, "InvalidTag",
				    "The TagKey you have provided is invalid");
		if (vl < 0)
			return fail(err, 400, "InvalidTag",
				    "The TagValue you have provided is invalid");
		if (kl > SPX_S3_TAG_KEY_MAX)
			return fail(err, 400, "InvalidTag",
				    "The TagKey you have provided is too long, "
				    "max 128");
		if (vl > SPX_S3_TAG_VALUE_MAX)
			return fail(err, 400, "InvalidTag",
				    "The TagValue you have provided is too "
				    "long, max 256");
		if (!strncmp(t->v[i].k, "aws:", 4))
			return fail(err, 400, "InvalidTag",
				    "Your TagKey cannot be prefixed with aws:");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t->v[i].k, t->v[j].k))
				return fail(err, 400, "InvalidTag",
					    "Cannot provide multiple Tags with "
					    "the same key");
	}
	return 0;
}

int spx_s3_tags_xml(const char *p, size_t n, enum spx_s3_tags_of of,
		    struct spx_kvlist *out, struct spx_s3_err *err)
{
	struct spx_kvlist t = SPX_KVLIST_INIT;
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *set, *tag;
	int rc = -1;

	if (spx_xml_parse(p, n, &lim, &doc) < 0 ||
	    !(root = spx_xml_doc_root(doc)) || !spx_xml_is(root, "Tagging", NULL) ||
	    spx_xml_count(root, "TagSet") != 1) {
		malformed(err);
		goto out;
	}
	set = spx_xml_child(root, "TagSet");
	for (tag = spx_xml_child(set, NULL); tag; tag = spx_xml_next(tag, NULL)) {
		const char *k = spx_xml_child_text(tag, "Key");
		const char *v = spx_xml_child_text(tag, "Value");

		if (!spx_xml_is(tag, "Tag", NULL) || !k || !v ||
		    spx_xml_count(tag, "Key") != 1 ||
		    spx_xml_count(tag, "Value") != 1) {
			malformed(err);
			goto out;
		}
		spx_kv_add(&t, k, v);
		/* Far past any limit: stop reading. */
		if (t.n > 100)
			break;
	}
	if (check(&t, of, err) < 0)
		goto out;
	*out = t;
	t = (struct spx_kvlist)SPX_KVLIST_INIT;
	rc = 0;
out:
	spx_kv_free(&t);
	spx_xml_doc_free(doc);
	return rc;
}

int spx_s3_tags_header(const char *s, enum spx_s3_tags_of of,
		       struct spx_kvlist *out, struct spx_s3_err *err)
{
	struct spx_kvlist t = SPX_KVLIST_INIT;

	if (spx_query_parse_max(s, strlen(s), SPX_URI_PLUS, 100, 64 << 10,
				&t) < 0) {
		spx_kv_free(&t); /* its entries are gone, not its array */
		return fail(err, 400, "InvalidArgument",
			    "The header 'x-amz-tagging' shall be encoded as "
			    "UTF-8 then URLEncoded URL query parameters "
			    "without tag name duplicates.");
	}
	if (check(&t, of, err) < 0) {
		spx_kv_free(&t);
		return -1;
	}
	*out = t;
	return 0;
}

int spx_s3_versioning_xml(const char *p, size_t n, bool *enabled,
			  struct spx_s3_err *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *c;
	const char *st, *mfa;
	int rc = -1;

	if (spx_xml_parse(p, n, &lim, &doc) < 0 ||
	    !(root = spx_xml_doc_root(doc)) ||
	    !spx_xml_is(root, "VersioningConfiguration", NULL)) {
		malformed(err);
		goto out;
	}
	for (c = spx_xml_child(root, NULL); c; c = spx_xml_next(c, NULL))
		if (!spx_xml_is(c, "Status", NULL) &&
		    !spx_xml_is(c, "MfaDelete", NULL)) {
			malformed(err);
			goto out;
		}
	st = spx_xml_child_text(root, "Status");
	mfa = spx_xml_child_text(root, "MfaDelete");
	if (!st || spx_xml_count(root, "Status") != 1 ||
	    spx_xml_count(root, "MfaDelete") > 1 ||
	    (strcmp(st, "Enabled") && strcmp(st, "Suspended")) ||
	    (mfa && strcmp(mfa, "Enabled") && strcmp(mfa, "Disabled"))) {
		malformed(err);
		goto out;
	}
	if (mfa && !strcmp(mfa, "Enabled")) {
		fail(err, 501, "NotImplemented",
		     "A header you provided implies functionality that is not "
		     "implemented");
		goto out;
	}
	*enabled = !strcmp(st, "Enabled");
	rc = 0;
out:
	spx_xml_doc_free(doc);
	return rc;
}
