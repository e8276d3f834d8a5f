/* s3conf.c: S3 tag sets and versioning configuration (contract in
 * s3conf.h). */
#include "spx.h"

#include <jansson.h>
#include <math.h>
#include <time.h>

#include "gw/ec2q.h"
#include "gw/s3conf.h"
#include "http/query.h"
#include "id.h"
#include "obj/obj.h"
#include "utf8.h"
#include "xml/xml.h"

/* A request body of a few tags needs little: these bound the DOM. */
static const struct spx_xml_limits lim = {
	.max_bytes = 256 << 10,
	.max_depth = 8,
	.max_elems = 2000,
	.max_text = 4096,
	.max_attrs = 8,
};

/* The part list of 10000 parts and the object list of 1000 keys of 1024
 * bytes (escaped, up to six times that) are the big ones. */
static const struct spx_xml_limits big = {
	.max_bytes = 2 << 20,
	.max_depth = 8,
	.max_elems = 50000,
	.max_text = 8192,
	.max_attrs = 8,
};

/* The root element of body p, when it parses within l and is named
 * name; else NULL (*doc, freed by the caller, may still be set). */
static const struct spx_xml_node *root_of(const char *p, size_t n,
					  const struct spx_xml_limits *l,
					  const char *name,
					  struct spx_xml_doc **doc)
{
	const struct spx_xml_node *root;

	if (spx_xml_parse(p, n, l, doc) < 0 || !(root = spx_xml_doc_root(*doc)) ||
	    !spx_xml_is(root, name, NULL))
		return NULL;
	return root;
}

int spx_s3_conf_fail(struct spx_apierr *err, int http, const char *code,
		     const char *message)
{
	err->http = http;
	err->code = code;
	err->message = message;
	return spx_error(SPX_USAGE, "%s: %s", code, message);
}

static int fail(struct spx_apierr *err, int http, const char *code,
		const char *message)
{
	return spx_s3_conf_fail(err, http, code, message);
}

static int malformed(struct spx_apierr *err)
{
	return fail(err, 400, "MalformedXML",
		    "The XML you provided was not well-formed or did not "
		    "validate against our published schema");
}

/* Characters (code points) of valid UTF-8 without NUL, or -1. */
static long utf8_chars(const char *str)
{
	return (long)spx_utf8_count(str, strlen(str));
}

static int check(const struct spx_kvlist *t, enum spx_s3_tags_of of,
		 struct spx_apierr *err)
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
		    struct spx_kvlist *out, struct spx_apierr *err)
{
	struct spx_kvlist t = SPX_KVLIST_INIT;
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *set, *tag;
	int rc = -1;

	if (!(root = root_of(p, n, &lim, "Tagging", &doc)) ||
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
		       struct spx_kvlist *out, struct spx_apierr *err)
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
			  struct spx_apierr *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *c;
	const char *st, *mfa;
	int rc = -1;

	if (!(root = root_of(p, n, &lim, "VersioningConfiguration", &doc))) {
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

int spx_s3_create_bucket_xml(const char *p, size_t n, char **location,
			     struct spx_apierr *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root;
	const char *lc;

	*location = NULL;
	if (!(root = root_of(p, n, &lim, "CreateBucketConfiguration", &doc)) ||
	    spx_xml_count(root, "LocationConstraint") > 1) {
		spx_xml_doc_free(doc);
		return malformed(err);
	}
	lc = spx_xml_child_text(root, "LocationConstraint");
	if (lc && *lc)
		*location = spx_strdup(lc);
	spx_xml_doc_free(doc);
	return 0;
}

void spx_s3_delete_release(struct spx_s3_delete *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].key);
		free(d->v[i].vid);
	}
	free(d->v);
	memset(d, 0, sizeof(*d));
}

int spx_s3_delete_xml(const char *p, size_t n, struct spx_s3_delete *out,
		      struct spx_apierr *err)
{
	struct spx_s3_delete d = { 0 };
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *o;
	const char *quiet;
	size_t no;

	memset(out, 0, sizeof(*out));
	if (!(root = root_of(p, n, &big, "Delete", &doc)) ||
	    (no = spx_xml_count(root, "Object")) < 1 || no > 1000 ||
	    spx_xml_count(root, "Quiet") > 1) {
		spx_xml_doc_free(doc);
		return malformed(err);
	}
	quiet = spx_xml_child_text(root, "Quiet");
	if (quiet && strcmp(quiet, "true") && strcmp(quiet, "false")) {
		spx_xml_doc_free(doc);
		return malformed(err);
	}
	d.quiet = quiet && !strcmp(quiet, "true");
	d.v = spx_calloc(no, sizeof(*d.v));
	for (o = spx_xml_child(root, "Object"); o; o = spx_xml_next(o, "Object")) {
		const char *k = spx_xml_child_text(o, "Key");
		const char *v = spx_xml_child_text(o, "VersionId");

		if (spx_xml_count(o, "Key") > 1 ||
		    spx_xml_count(o, "VersionId") > 1) {
			spx_xml_doc_free(doc);
			spx_s3_delete_release(&d);
			return malformed(err);
		}
		d.v[d.n].key = k ? spx_strdup(k) : NULL;
		d.v[d.n].vid = v ? spx_strdup(v) : NULL;
		d.n++;
	}
	spx_xml_doc_free(doc);
	*out = d;
	return 0;
}

void spx_s3_complete_release(struct spx_s3_complete *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].etag);
		free(c->v[i].checksum);
	}
	free(c->v);
	memset(c, 0, sizeof(*c));
}

int spx_s3_complete_xml(const char *p, size_t n, const char *ck_elem,
			struct spx_s3_complete *out, struct spx_apierr *err)
{
	struct spx_s3_complete c = { 0 };
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *pt;
	size_t np;

	memset(out, 0, sizeof(*out));
	if (!(root = root_of(p, n, &big, "CompleteMultipartUpload", &doc)) ||
	    (np = spx_xml_count(root, "Part")) < 1 || np > 10000) {
		spx_xml_doc_free(doc);
		return malformed(err);
	}
	c.v = spx_calloc(np, sizeof(*c.v));
	for (pt = spx_xml_child(root, "Part"); pt; pt = spx_xml_next(pt, "Part")) {
		const char *num = spx_xml_child_text(pt, "PartNumber");
		const char *etag = spx_xml_child_text(pt, "ETag");
		const char *ck = ck_elem ? spx_xml_child_text(pt, ck_elem) : NULL;
		char *e = NULL;
		long v = num ? strtol(num, &e, 10) : 0;

		if (!num || !*num || !etag || *e || v < 1 || v > 10000 ||
		    spx_xml_count(pt, "PartNumber") != 1 ||
		    spx_xml_count(pt, "ETag") != 1) {
			spx_xml_doc_free(doc);
			spx_s3_complete_release(&c);
			return malformed(err);
		}
		c.v[c.n].num = (int)v;
		c.v[c.n].etag = spx_strdup(etag);
		c.v[c.n].checksum = ck ? spx_strdup(ck) : NULL;
		c.n++;
	}
	spx_xml_doc_free(doc);
	*out = c;
	return 0;
}

/* ---- CORS ---- */

/* Every child of rule named name, as a JSON array of strings (NULL: none),
 * each checked by ok (NULL: any); -1 with *err set. */
static int cors_list(const struct spx_xml_node *rule, const char *name,
		     int (*ok)(const char *, struct spx_apierr *),
		     json_t *into, const char *member, struct spx_apierr *err)
{
	json_t *a = NULL;

	for (const struct spx_xml_node *c = spx_xml_child(rule, name); c;
	     c = spx_xml_next(c, name)) {
		if (c->children || strlen(c->text) != c->textlen ||
		    utf8_chars(c->text) < 0) {
			json_decref(a);
			return malformed(err);
		}
		if (ok && ok(c->text, err) < 0) {
			json_decref(a);
			return -1;
		}
		if (!a)
			a = json_array();
		json_array_append_new(a, json_string(c->text));
	}
	if (a)
		json_object_set_new(into, member, a);
	return 0;
}

static int cors_method(const char *m, struct spx_apierr *err)
{
	static _Thread_local char msg[128];

	if (!strcmp(m, "GET") || !strcmp(m, "PUT") || !strcmp(m, "POST") ||
	    !strcmp(m, "DELETE") || !strcmp(m, "HEAD"))
		return 0;
	snprintf(msg, sizeof(msg),
		 "Found unsupported HTTP method in CORS config. Unsupported "
		 "method is %.40s",
		 m);
	return fail(err, 400, "InvalidRequest", msg);
}

/* At most one '*'. */
static int one_wildcard(const char *what, const char *v,
			struct spx_apierr *err)
{
	static _Thread_local char msg[160];
	const char *w = strchr(v, '*');

	if (!w || !strchr(w + 1, '*'))
		return 0;
	snprintf(msg, sizeof(msg), "%s \"%.60s\" can not have more than one "
				   "wildcard.",
		 what, v);
	return fail(err, 400, "InvalidRequest", msg);
}

static int cors_origin(const char *v, struct spx_apierr *err)
{
	return one_wildcard("AllowedOrigin", v, err);
}

static int cors_header(const char *v, struct spx_apierr *err)
{
	return one_wildcard("AllowedHeader", v, err);
}

int spx_s3_cors_xml(const char *p, size_t n, char **json,
		    struct spx_apierr *err)
{
	static const char *const known[] = {
		"ID",		"AllowedMethod", "AllowedOrigin",
		"AllowedHeader", "ExposeHeader", "MaxAgeSeconds",
	};
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *r;
	json_t *rules = json_array();
	size_t nr = 0;
	int rc = -1;

	*json = NULL;
	if (!(root = root_of(p, n, &lim, "CORSConfiguration", &doc)) ||
	    !spx_xml_count(root, "CORSRule")) {
		malformed(err);
		goto out;
	}
	for (r = spx_xml_child(root, NULL); r; r = spx_xml_next(r, NULL)) {
		json_t *o;
		const char *id = spx_xml_child_text(r, "ID");
		const char *age = spx_xml_child_text(r, "MaxAgeSeconds");

		if (!spx_xml_is(r, "CORSRule", NULL) ||
		    ++nr > SPX_S3_CORS_RULES_MAX) {
			if (nr > SPX_S3_CORS_RULES_MAX)
				fail(err, 400, "InvalidRequest",
				     "The number of CORS rules should not "
				     "exceed allowed limit of 100 rules.");
			else
				malformed(err);
			goto out;
		}
		for (const struct spx_xml_node *c = spx_xml_child(r, NULL); c;
		     c = spx_xml_next(c, NULL)) {
			size_t k = 0;

			while (k < SPX_ARRAY_SIZE(known) &&
			       !spx_xml_is(c, known[k], NULL))
				k++;
			if (k == SPX_ARRAY_SIZE(known)) {
				malformed(err);
				goto out;
			}
		}
		if (!spx_xml_count(r, "AllowedMethod") ||
		    !spx_xml_count(r, "AllowedOrigin") ||
		    spx_xml_count(r, "ID") > 1 ||
		    spx_xml_count(r, "MaxAgeSeconds") > 1 ||
		    (id && (utf8_chars(id) < 0 || utf8_chars(id) > 255))) {
			malformed(err);
			goto out;
		}
		o = json_object();
		json_array_append_new(rules, o);
		if (id && *id)
			json_object_set_new(o, "ID", json_string(id));
		if (cors_list(r, "AllowedMethod", cors_method, o,
			      "AllowedMethods", err) < 0 ||
		    cors_list(r, "AllowedOrigin", cors_origin, o,
			      "AllowedOrigins", err) < 0 ||
		    cors_list(r, "AllowedHeader", cors_header, o,
			      "AllowedHeaders", err) < 0 ||
		    cors_list(r, "ExposeHeader", NULL, o, "ExposeHeaders",
			      err) < 0)
			goto out;
		if (age) {
			char *end = NULL;
			long v;

			errno = 0;
			v = strtol(age, &end, 10);
			if (!*age || *end || errno || v < 0 || v > INT32_MAX ||
			    !(age[0] >= '0' && age[0] <= '9')) {
				malformed(err);
				goto out;
			}
			json_object_set_new(o, "MaxAgeSeconds",
					    json_integer(v));
		}
	}
	*json = json_dumps(rules, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!*json)
		spx_die(SPX_FAIL, "out of memory");
	rc = 0;
out:
	json_decref(rules);
	spx_xml_doc_free(doc);
	return rc;
}

/* pat (at most one '*', any run of characters) matches v; headers are
 * compared without case. */
static bool cors_match(const char *pat, const char *v, bool icase)
{
	const char *star = strchr(pat, '*');
	size_t pre, post, n = strlen(v);

	if (!star)
		return icase ? !strcasecmp(pat, v) : !strcmp(pat, v);
	pre = (size_t)(star - pat);
	post = strlen(star + 1);
	if (n < pre + post)
		return false;
	return icase ? !strncasecmp(pat, v, pre) &&
			       !strcasecmp(star + 1, v + n - post)
		     : !strncmp(pat, v, pre) && !strcmp(star + 1, v + n - post);
}

/* Does one of the strings of rule's member match v? */
static bool cors_any(const json_t *rule, const char *member, const char *v,
		     bool icase)
{
	const json_t *a = json_object_get(rule, member), *e;
	size_t i;

	json_array_foreach(a, i, e)
		if (json_is_string(e) &&
		    cors_match(json_string_value(e), v, icase))
			return true;
	return false;
}

/* Every header of the comma-separated list hs is allowed by rule. */
static bool cors_headers_ok(const json_t *rule, const char *hs)
{
	for (const char *p = hs ? hs : ""; *p;) {
		char h[256];
		size_t n;

		p += strspn(p, " \t,");
		n = strcspn(p, ",");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (!n)
			break;
		if (n >= sizeof(h))
			return false;
		memcpy(h, p, n);
		h[n] = '\0';
		if (!cors_any(rule, "AllowedHeaders", h, true))
			return false;
		p += n;
	}
	return true;
}

bool spx_s3_cors_any_origin(const json_t *rule)
{
	const json_t *a = json_object_get(rule, "AllowedOrigins"), *e;
	size_t i;

	json_array_foreach(a, i, e)
		if (json_is_string(e) && !strcmp(json_string_value(e), "*"))
			return true;
	return false;
}

const json_t *spx_s3_cors_rule(const json_t *rules, const char *origin,
			       const char *method, const char *hs)
{
	const json_t *r;
	size_t i;

	json_array_foreach(rules, i, r)
		if (cors_any(r, "AllowedOrigins", origin, false) &&
		    cors_any(r, "AllowedMethods", method, false) &&
		    cors_headers_ok(r, hs))
			return r;
	return NULL;
}

/* ---- public access block and object ownership ---- */

const char *const spx_s3_pab_names[SPX_S3_PAB_N] = {
	"BlockPublicAcls",
	"IgnorePublicAcls",
	"BlockPublicPolicy",
	"RestrictPublicBuckets",
};

int spx_s3_pab_xml(const char *p, size_t n, unsigned *flags,
		   struct spx_apierr *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *c;
	unsigned f = 0;
	int rc = -1;

	if (!(root = root_of(p, n, &lim, "PublicAccessBlockConfiguration", &doc))) {
		malformed(err);
		goto out;
	}
	for (c = spx_xml_child(root, NULL); c; c = spx_xml_next(c, NULL)) {
		size_t i;

		for (i = 0; i < SPX_S3_PAB_N; i++)
			if (spx_xml_is(c, spx_s3_pab_names[i], NULL))
				break;
		if (i == SPX_S3_PAB_N ||
		    spx_xml_count(root, spx_s3_pab_names[i]) != 1) {
			malformed(err);
			goto out;
		}
	}
	for (size_t i = 0; i < SPX_S3_PAB_N; i++) {
		const char *v = spx_xml_child_text(root, spx_s3_pab_names[i]);

		if (!v)
			continue;
		if (!strcmp(v, "true"))
			f |= 1u << i;
		else if (strcmp(v, "false")) {
			malformed(err);
			goto out;
		}
	}
	*flags = f;
	rc = 0;
out:
	spx_xml_doc_free(doc);
	return rc;
}

const char *spx_s3_ownership_name(const char *s)
{
	static const char *const names[] = {
		"BucketOwnerEnforced",
		"BucketOwnerPreferred",
		"ObjectWriter",
	};

	for (size_t i = 0; s && i < SPX_ARRAY_SIZE(names); i++)
		if (!strcmp(s, names[i]))
			return names[i];
	return NULL;
}

int spx_s3_ownership_xml(const char *p, size_t n, const char **out,
			 struct spx_apierr *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *rule;
	const char *o = NULL;
	int rc = -1;

	if (!(root = root_of(p, n, &lim, "OwnershipControls", &doc)) ||
	    spx_xml_count(root, NULL) != 1 ||
	    spx_xml_count(root, "Rule") != 1 ||
	    !(rule = spx_xml_child(root, "Rule")) ||
	    spx_xml_count(rule, NULL) != 1 ||
	    !(o = spx_s3_ownership_name(
		      spx_xml_child_text(rule, "ObjectOwnership")))) {
		malformed(err);
		goto out;
	}
	*out = o;
	rc = 0;
out:
	spx_xml_doc_free(doc);
	return rc;
}

/* ---- object lock ---- */

static bool lock_mode(const char *m)
{
	return m && (!strcmp(m, "GOVERNANCE") || !strcmp(m, "COMPLIANCE"));
}

/* A decimal of 1 to digits (at most 18) digits, or -1. */
static int64_t decimal(const char *s, size_t digits)
{
	int64_t v = 0;

	if (!s || !*s || strlen(s) > digits)
		return -1;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

/* A decimal of at most 9 digits, or -1. */
static long small_count(const char *s)
{
	return (long)decimal(s, 9);
}

int spx_s3_lock_conf_xml(const char *p, size_t n, char **json,
			 struct spx_apierr *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *rule, *dr;
	const char *en, *mode;
	json_t *j = NULL;
	int rc = -1;

	*json = NULL;
	if (!(root = root_of(p, n, &lim, "ObjectLockConfiguration", &doc)) ||
	    spx_xml_count(root, "ObjectLockEnabled") > 1 ||
	    spx_xml_count(root, "Rule") > 1 ||
	    spx_xml_count(root, NULL) != spx_xml_count(root, "ObjectLockEnabled") +
						    spx_xml_count(root, "Rule")) {
		malformed(err);
		goto out;
	}
	en = spx_xml_child_text(root, "ObjectLockEnabled");
	if (!en || strcmp(en, "Enabled")) {
		malformed(err);
		goto out;
	}
	j = json_object();
	if ((rule = spx_xml_child(root, "Rule"))) {
		const char *days, *years;
		long d = -1, y = -1;

		dr = spx_xml_child(rule, "DefaultRetention");
		if (!dr || spx_xml_count(rule, NULL) != 1) {
			malformed(err);
			goto out;
		}
		mode = spx_xml_child_text(dr, "Mode");
		days = spx_xml_child_text(dr, "Days");
		years = spx_xml_child_text(dr, "Years");
		if (!lock_mode(mode) || (days && years) || (!days && !years) ||
		    spx_xml_count(dr, NULL) != 2) {
			malformed(err);
			goto out;
		}
		if (days)
			d = small_count(days);
		else
			y = small_count(years);
		if ((days && (d < 1 || d > 36500)) ||
		    (years && (y < 1 || y > 100))) {
			fail(err, 400, "InvalidArgument",
			     "Default retention period must be a positive "
			     "integer value");
			goto out;
		}
		json_object_set_new(j, "Mode", json_string(mode));
		json_object_set_new(j, days ? "Days" : "Years",
				    json_integer(days ? d : y));
	}
	*json = json_dumps(j, JSON_COMPACT);
	rc = 0;
out:
	json_decref(j);
	spx_xml_doc_free(doc);
	return rc;
}

int spx_s3_retention_xml(const char *p, size_t n, const char **mode,
			 double *until, struct spx_apierr *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root;
	const char *m, *d;
	int rc = -1;

	if (!(root = root_of(p, n, &lim, "Retention", &doc)) ||
	    spx_xml_count(root, "Mode") > 1 ||
	    spx_xml_count(root, "RetainUntilDate") > 1 ||
	    spx_xml_count(root, NULL) != spx_xml_count(root, "Mode") +
						    spx_xml_count(root,
								  "RetainUntilDate")) {
		malformed(err);
		goto out;
	}
	m = spx_xml_child_text(root, "Mode");
	d = spx_xml_child_text(root, "RetainUntilDate");
	/* Both, or neither (removing a GOVERNANCE retention). */
	if (!m != !d || (m && !lock_mode(m))) {
		malformed(err);
		goto out;
	}
	*mode = !m ? NULL : !strcmp(m, "GOVERNANCE") ? "GOVERNANCE"
						     : "COMPLIANCE";
	*until = 0;
	if (d && ec2q_time_parse(d, until) < 0) {
		fail(err, 400, "InvalidArgument",
		     "The retain until date must be a valid ISO 8601 date");
		goto out;
	}
	rc = 0;
out:
	spx_xml_doc_free(doc);
	return rc;
}

int spx_s3_legal_hold_xml(const char *p, size_t n, bool *on,
			  struct spx_apierr *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root;
	const char *st;
	int rc = -1;

	if (!(root = root_of(p, n, &lim, "LegalHold", &doc)) ||
	    spx_xml_count(root, NULL) != 1 ||
	    !(st = spx_xml_child_text(root, "Status")) ||
	    (strcmp(st, "ON") && strcmp(st, "OFF"))) {
		malformed(err);
		goto out;
	}
	*on = !strcmp(st, "ON");
	rc = 0;
out:
	spx_xml_doc_free(doc);
	return rc;
}

/* ---- lifecycle ---- */

/* Is every child of n named one of known, each at most once but many? */
static bool only_known(const struct spx_xml_node *n, const char *const *known,
		       size_t nk, const char *many)
{
	for (const struct spx_xml_node *c = spx_xml_child(n, NULL); c;
	     c = spx_xml_next(c, NULL)) {
		size_t k = 0;

		while (k < nk && !spx_xml_is(c, known[k], NULL))
			k++;
		if (k == nk)
			return false;
		if ((!many || strcmp(known[k], many)) &&
		    spx_xml_count(n, known[k]) > 1)
			return false;
	}
	return true;
}

/* A leaf's text: plain UTF-8 without NUL and no child elements. */
static const char *leaf(const struct spx_xml_node *n)
{
	if (!n || n->children || strlen(n->text) != n->textlen ||
	    utf8_chars(n->text) < 0)
		return NULL;
	return n->text;
}

/* An object size: a decimal of at most 15 digits, or -1. */
static int64_t size_count(const char *s)
{
	return decimal(s, 15);
}

/* A positive count of days, or -1 with err set to S3's message for
 * what (static storage). */
static long life_days(const struct spx_xml_node *n, const char *msg,
		      struct spx_apierr *err)
{
	long d;

	if (!leaf(n))
		return malformed(err);
	d = small_count(n->text);
	if (d < 1 || d > 2147483647L)
		return fail(err, 400, "InvalidArgument", msg);
	return d;
}

/* <Tag><Key>K</Key><Value>V</Value></Tag> onto the array tags. */
static int life_tag(const struct spx_xml_node *t, json_t *tags,
		    struct spx_apierr *err)
{
	static const char *const known[] = { "Key", "Value" };
	const char *k = leaf(spx_xml_child(t, "Key"));
	const char *v = leaf(spx_xml_child(t, "Value"));
	json_t *o;

	if (!only_known(t, known, 2, NULL) || !k || !v)
		return malformed(err);
	if (utf8_chars(k) < 1 || utf8_chars(k) > 128 || utf8_chars(v) > 256)
		return fail(err, 400, "InvalidTag",
			    "The TagKey you have provided is invalid");
	o = json_object();
	json_object_set_new(o, "Key", json_string(k));
	json_object_set_new(o, "Value", json_string(v));
	json_array_append_new(tags, o);
	return 0;
}

/* One condition of a filter (Prefix, Tag, ObjectSizeGreaterThan,
 * ObjectSizeLessThan) into f. */
static int life_cond(const struct spx_xml_node *c, json_t *f,
		     struct spx_apierr *err)
{
	if (spx_xml_is(c, "Prefix", NULL)) {
		if (!leaf(c) || c->textlen > SPX_OBJ_KEY_MAX)
			return malformed(err);
		json_object_set_new(f, "Prefix", json_string(c->text));
		return 0;
	}
	if (spx_xml_is(c, "Tag", NULL)) {
		json_t *tags = json_object_get(f, "Tags");

		if (!tags) {
			tags = json_array();
			json_object_set_new(f, "Tags", tags);
		}
		return life_tag(c, tags, err);
	}
	if (!leaf(c) || size_count(c->text) < 0)
		return fail(err, 400, "InvalidArgument",
			    "Object size filters must be non-negative "
			    "integers");
	json_object_set_new(f, spx_xml_is(c, "ObjectSizeLessThan", NULL) ? "Lt"
									 : "Gt",
			    json_integer(size_count(c->text)));
	return 0;
}

/* The rule's filter (<Filter> or the older <Prefix>) into r. */
static int life_filter(const struct spx_xml_node *rule, json_t *r,
		       struct spx_apierr *err)
{
	static const char *const conds[] = {
		"Prefix", "Tag", "ObjectSizeGreaterThan", "ObjectSizeLessThan",
		"And",
	};
	const struct spx_xml_node *fl = spx_xml_child(rule, "Filter");
	const struct spx_xml_node *px = spx_xml_child(rule, "Prefix");
	const struct spx_xml_node *c;
	json_t *f = json_object();
	const json_t *gt, *lt;

	json_object_set_new(r, "Filter", f);
	if (fl && px)
		return malformed(err);
	if (px) {
		json_object_set_new(r, "Legacy", json_true());
		return life_cond(px, f, err);
	}
	if (!fl)
		return 0;
	if (fl->textlen && strspn(fl->text, " \t\r\n") != fl->textlen)
		return malformed(err);
	if (!only_known(fl, conds, SPX_ARRAY_SIZE(conds), NULL) ||
	    spx_xml_count(fl, NULL) > 1)
		return malformed(err);
	if ((c = spx_xml_child(fl, "And"))) {
		json_object_set_new(f, "And", json_true());
		if (!only_known(c, conds, SPX_ARRAY_SIZE(conds) - 1, "Tag"))
			return malformed(err);
		for (c = spx_xml_child(c, NULL); c; c = spx_xml_next(c, NULL))
			if (life_cond(c, f, err) < 0)
				return -1;
	} else if ((c = spx_xml_child(fl, NULL)) && life_cond(c, f, err) < 0) {
		return -1;
	}
	gt = json_object_get(f, "Gt");
	lt = json_object_get(f, "Lt");
	if (gt && lt && json_integer_value(gt) >= json_integer_value(lt))
		return fail(err, 400, "InvalidRequest",
			    "ObjectSizeGreaterThan must be less than "
			    "ObjectSizeLessThan");
	return 0;
}

static int life_expiration(const struct spx_xml_node *e, json_t *r,
			   struct spx_apierr *err)
{
	static const char *const known[] = { "Days", "Date",
					     "ExpiredObjectDeleteMarker" };
	const struct spx_xml_node *days = spx_xml_child(e, "Days");
	const struct spx_xml_node *date = spx_xml_child(e, "Date");
	const struct spx_xml_node *dm =
		spx_xml_child(e, "ExpiredObjectDeleteMarker");
	json_t *o;

	if (!only_known(e, known, 3, NULL) || (days && date) ||
	    (!days && !date && !dm))
		return malformed(err);
	if (dm && (days || date))
		return fail(err, 400, "InvalidArgument",
			    "ExpiredObjectDeleteMarker cannot be specified "
			    "with Days or Date in a Lifecycle Expiration "
			    "Policy");
	o = json_object();
	json_object_set_new(r, "Expiration", o);
	if (days) {
		long d = life_days(days, "'Days' for Expiration action must "
					 "be a positive integer",
				   err);

		if (d < 0)
			return -1;
		json_object_set_new(o, "Days", json_integer(d));
	} else if (date) {
		double t;
		char out[64];
		time_t s;
		struct tm tm;

		if (!leaf(date) || ec2q_time_parse(date->text, &t) < 0 ||
		    t < 0 || t >= 253402300800.0)
			return malformed(err);
		if (fmod(t, 86400.0) != 0.0)
			return fail(err, 400, "InvalidArgument",
				    "'Date' must be at midnight GMT");
		s = (time_t)t;
		gmtime_r(&s, &tm);
		snprintf(out, sizeof(out), "%04d-%02d-%02dT00:00:00.000Z",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
		json_object_set_new(o, "Date", json_string(out));
	} else {
		const char *v = leaf(dm);

		if (!v || (strcmp(v, "true") && strcmp(v, "false")))
			return malformed(err);
		json_object_set_new(o, "ExpiredObjectDeleteMarker",
				    json_boolean(!strcmp(v, "true")));
	}
	return 0;
}

static int life_noncurrent(const struct spx_xml_node *e, json_t *r,
			   struct spx_apierr *err)
{
	static const char *const known[] = { "NoncurrentDays",
					     "NewerNoncurrentVersions" };
	const struct spx_xml_node *nd = spx_xml_child(e, "NoncurrentDays");
	const struct spx_xml_node *nn =
		spx_xml_child(e, "NewerNoncurrentVersions");
	json_t *o;
	long d, k = 0;

	if (!only_known(e, known, 2, NULL) || !nd)
		return malformed(err);
	d = life_days(nd, "'NoncurrentDays' for NoncurrentVersionExpiration "
			  "action must be a positive integer",
		      err);
	if (d < 0)
		return -1;
	if (nn && ((k = life_days(nn, "NewerNoncurrentVersions must be "
					"between 1 and 100",
				  err)) < 0))
		return -1;
	if (k > 100)
		return fail(err, 400, "InvalidArgument",
			    "NewerNoncurrentVersions must be between 1 and "
			    "100");
	o = json_object();
	json_object_set_new(r, "NoncurrentVersionExpiration", o);
	json_object_set_new(o, "NoncurrentDays", json_integer(d));
	if (nn)
		json_object_set_new(o, "NewerNoncurrentVersions",
				    json_integer(k));
	return 0;
}

static int life_abort(const struct spx_xml_node *e, json_t *r,
		      struct spx_apierr *err)
{
	static const char *const known[] = { "DaysAfterInitiation" };
	const struct spx_xml_node *d = spx_xml_child(e, "DaysAfterInitiation");
	long n;

	if (!only_known(e, known, 1, NULL) || !d)
		return malformed(err);
	n = life_days(d, "'DaysAfterInitiation' for "
			 "AbortIncompleteMultipartUpload action must be a "
			 "positive integer",
		      err);
	if (n < 0)
		return -1;
	json_object_set_new(r, "AbortIncompleteMultipartUpload",
			    json_pack("{sI}", "DaysAfterInitiation",
				      (json_int_t)n));
	return 0;
}

/* One <Rule> into rules; ids is the set of IDs so far. */
static int life_rule(const struct spx_xml_node *x, json_t *rules, json_t *ids,
		     struct spx_apierr *err)
{
	static const char *const known[] = {
		"ID",
		"Prefix",
		"Filter",
		"Status",
		"Expiration",
		"NoncurrentVersionExpiration",
		"AbortIncompleteMultipartUpload",
		"Transition",
		"NoncurrentVersionTransition",
	};
	const struct spx_xml_node *c;
	const char *id, *st;
	json_t *r, *f;
	char gen[41];

	if (!spx_xml_is(x, "Rule", NULL) ||
	    !only_known(x, known, SPX_ARRAY_SIZE(known), NULL) ||
	    spx_xml_count(x, "ID") > 1 || spx_xml_count(x, "Status") != 1 ||
	    spx_xml_count(x, "Filter") > 1 || spx_xml_count(x, "Prefix") > 1)
		return malformed(err);
	st = leaf(spx_xml_child(x, "Status"));
	if (!st || (strcmp(st, "Enabled") && strcmp(st, "Disabled")))
		return malformed(err);
	if (spx_xml_child(x, "Transition") ||
	    spx_xml_child(x, "NoncurrentVersionTransition"))
		return fail(err, 501, "NotImplemented",
			    "Transitions are not implemented: this store "
			    "has one storage class, STANDARD");
	if ((c = spx_xml_child(x, "ID"))) {
		if (!(id = leaf(c)))
			return malformed(err);
		if (utf8_chars(id) > 255)
			return fail(err, 400, "InvalidArgument",
				    "ID length should not exceed allowed "
				    "limit of 255");
	} else {
		unsigned char rnd[40];
		static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

		/* S3 names a rule without an ID itself. */
		if (spx_random(rnd, sizeof(rnd)) < 0)
			return fail(err, 500, "InternalError",
				    "no random bytes");
		for (size_t i = 0; i < 40; i++)
			gen[i] = b32[rnd[i] & 31];
		gen[40] = 0;
		id = gen;
	}
	if (*id && json_object_get(ids, id))
		return fail(err, 400, "InvalidArgument",
			    "Rule ID must be unique. Found same ID for more "
			    "than one rule");
	json_object_set_new(ids, id, json_true());
	r = json_object();
	json_array_append_new(rules, r);
	json_object_set_new(r, "ID", json_string(id));
	json_object_set_new(r, "Status", json_string(st));
	if (life_filter(x, r, err) < 0)
		return -1;
	if ((c = spx_xml_child(x, "Expiration")) &&
	    life_expiration(c, r, err) < 0)
		return -1;
	if ((c = spx_xml_child(x, "NoncurrentVersionExpiration")) &&
	    life_noncurrent(c, r, err) < 0)
		return -1;
	if ((c = spx_xml_child(x, "AbortIncompleteMultipartUpload")) &&
	    life_abort(c, r, err) < 0)
		return -1;
	if (!json_object_get(r, "Expiration") &&
	    !json_object_get(r, "NoncurrentVersionExpiration") &&
	    !json_object_get(r, "AbortIncompleteMultipartUpload"))
		return fail(err, 400, "InvalidRequest",
			    "At least one action needs to be specified in a "
			    "rule");
	f = json_object_get(r, "Filter");
	if (json_object_get(f, "Tags") &&
	    json_object_get(r, "AbortIncompleteMultipartUpload"))
		return fail(err, 400, "InvalidRequest",
			    "Tag-based filter cannot be used with "
			    "AbortIncompleteMultipartUpload action");
	if (json_object_get(f, "Tags") &&
	    json_is_true(json_object_get(json_object_get(r, "Expiration"),
					 "ExpiredObjectDeleteMarker")))
		return fail(err, 400, "InvalidRequest",
			    "Tag-based filter cannot be used with "
			    "ExpiredObjectDeleteMarker action");
	return 0;
}

int spx_s3_lifecycle_xml(const char *p, size_t n, char **json,
			 struct spx_apierr *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *r;
	json_t *rules = json_array(), *ids = json_object();
	int rc = -1;

	*json = NULL;
	if (!(root = root_of(p, n, &big, "LifecycleConfiguration", &doc)) ||
	    !spx_xml_count(root, "Rule") ||
	    spx_xml_count(root, NULL) != spx_xml_count(root, "Rule")) {
		malformed(err);
		goto out;
	}
	if (spx_xml_count(root, "Rule") > SPX_S3_LIFE_RULES_MAX) {
		fail(err, 400, "InvalidRequest",
		     "The number of lifecycle rules should not exceed allowed "
		     "limit of 1000 rules");
		goto out;
	}
	for (r = spx_xml_child(root, NULL); r; r = spx_xml_next(r, NULL))
		if (life_rule(r, rules, ids, err) < 0)
			goto out;
	*json = json_dumps(rules, JSON_COMPACT);
	rc = 0;
out:
	json_decref(rules);
	json_decref(ids);
	spx_xml_doc_free(doc);
	return rc;
}
