/* fuzz_s3conf: the S3 body parsers on any bytes: tag sets (a tag set
 * they accept keeps S3's rules and, written back as XML, reads back the
 * same), versioning and bucket configuration, and the two bodies read
 * after authentication that can be large: DeleteObjects' object list and
 * CompleteMultipartUpload's part list (what they accept is within S3's
 * bounds: 1..1000 objects, 1..10000 parts numbered 1..10000), and CORS
 * rules (1..100, each with its methods and origins), the public access
 * block, ownership controls and ACL documents, and object lock's
 * configuration, retention and legal hold, and lifecycle rules (loaded
 * as the pass loads them). */
#include "spx.h"

#include <jansson.h>

#include "gw/s3acl.h"
#include "gw/s3conf.h"
#include "gw/s3life.h"
#include "xml/xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What an ACL parser accepts is an ACL its loader takes back, of at most
 * 100 grants, owned by the resource's owner; what it refuses has S3's
 * code. */
static void acl_ok(json_t *acl)
{
	char *t = json_dumps(acl, JSON_COMPACT);
	json_t *back = t ? spx_s3_acl_load(t, strlen(t)) : NULL;
	const char *o = spx_s3_acl_owner(acl);

	if (!back || !o || strcmp(o, "111111111111") ||
	    json_array_size(json_object_get(acl, "Grants")) >
		    SPX_S3_ACL_MAX_GRANTS)
		abort();
	(void)spx_s3_acl_grants(back, "222222222222", SPX_S3_PERM_READ, false);
	(void)spx_s3_acl_grants(back, "", SPX_S3_PERM_WRITE, true);
	(void)spx_s3_acl_public(back);
	json_decref(back);
	free(t);
}

static void acl_checks(const uint8_t *data, size_t size)
{
	static const char *const hs[] = {
		"x-amz-acl", "x-amz-grant-read", "x-amz-grant-full-control",
	};
	struct spx_apierr err = {0};
	char *v = spx_strndup((const char *)data, size);
	json_t *acl = NULL;

	if (spx_s3_acl_xml((const char *)data, size, "111111111111", &acl,
			   &err) == 0)
		acl_ok(acl);
	else if (!err.code || (err.http != 400 && err.http != 403))
		abort();
	json_decref(acl);
	/* The bytes (to a NUL) as the value of each ACL header. */
	for (size_t i = 0; i < SPX_ARRAY_SIZE(hs); i++) {
		struct spx_kvlist h = SPX_KVLIST_INIT;

		acl = NULL;
		err.code = NULL;
		spx_kv_add(&h, hs[i], v);
		if (spx_s3_acl_headers(&h, "111111111111", "333333333333", &acl,
				       &err) == 0) {
			if (!acl)
				abort();
			acl_ok(acl);
		} else if (!err.code || err.http != 400) {
			abort();
		}
		json_decref(acl);
		spx_kv_free(&h);
	}
	free(v);
}

static void check_tags(const struct spx_kvlist *t, size_t max)
{
	if (t->n > max)
		abort();
	for (size_t i = 0; i < t->n; i++) {
		if (!*t->v[i].k || strlen(t->v[i].k) > 4 * SPX_S3_TAG_KEY_MAX ||
		    strlen(t->v[i].v) > 4 * SPX_S3_TAG_VALUE_MAX ||
		    !strncmp(t->v[i].k, "aws:", 4))
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t->v[i].k, t->v[j].k))
				abort();
	}
}

static void round_trip(const struct spx_kvlist *t, enum spx_s3_tags_of of)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_kvlist again = SPX_KVLIST_INIT;
	struct spx_apierr err;
	struct spx_xml x;

	spx_xml_begin_buf(&x, &b);
	spx_xml_open(&x, "Tagging");
	spx_xml_open(&x, "TagSet");
	for (size_t i = 0; i < t->n; i++) {
		spx_xml_open(&x, "Tag");
		spx_xml_elem(&x, "Key", t->v[i].k);
		spx_xml_elem(&x, "Value", t->v[i].v);
		spx_xml_close(&x);
	}
	spx_xml_close(&x);
	spx_xml_close(&x);
	if (spx_xml_end(&x) < 0)
		abort();
	/* CR and controls do not survive XML; only exact text compares. */
	if (spx_s3_tags_xml(b.p, b.len, of, &again, &err) == 0) {
		if (again.n != t->n)
			abort();
	}
	spx_kv_free(&again);
	spx_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_kvlist t = SPX_KVLIST_INIT;
	struct spx_apierr err;
	char *s;
	bool en;

	for (int of = SPX_S3_TAGS_OBJECT; of <= SPX_S3_TAGS_BUCKET; of++) {
		if (spx_s3_tags_xml((const char *)data, size,
				    (enum spx_s3_tags_of)of, &t, &err) == 0) {
			check_tags(&t, of == SPX_S3_TAGS_OBJECT ? 10 : 50);
			round_trip(&t, (enum spx_s3_tags_of)of);
			spx_kv_free(&t);
		} else if (!err.code || err.http < 400) {
			abort();
		}
	}
	s = spx_strndup((const char *)data, size);
	if (strlen(s) == size &&
	    spx_s3_tags_header(s, SPX_S3_TAGS_OBJECT, &t, &err) == 0) {
		check_tags(&t, 10);
		spx_kv_free(&t);
	}
	free(s);
	if (spx_s3_versioning_xml((const char *)data, size, &en, &err) < 0 &&
	    (!err.code || err.http < 400))
		abort();
	{
		char *loc = NULL;

		if (spx_s3_create_bucket_xml((const char *)data, size, &loc,
					     &err) == 0 &&
		    loc && !*loc)
			abort();
		free(loc);
	}
	{
		struct spx_s3_delete d;

		if (spx_s3_delete_xml((const char *)data, size, &d, &err) == 0) {
			if (d.n < 1 || d.n > 1000)
				abort();
			spx_s3_delete_release(&d);
		} else if (!err.code || err.http != 400) {
			abort();
		}
	}
	for (int ck = 0; ck < 2; ck++) {
		struct spx_s3_complete c;

		if (spx_s3_complete_xml((const char *)data, size,
					ck ? "ChecksumCRC32" : NULL, &c,
					&err) == 0) {
			if (c.n < 1 || c.n > 10000)
				abort();
			for (size_t i = 0; i < c.n; i++)
				if (c.v[i].num < 1 || c.v[i].num > 10000 ||
				    !c.v[i].etag || (!ck && c.v[i].checksum))
					abort();
			spx_s3_complete_release(&c);
		} else if (!err.code || err.http != 400) {
			abort();
		}
	}
	{
		char *js = NULL;

		/* CORS rules: 1..100, each with methods and origins. */
		if (spx_s3_cors_xml((const char *)data, size, &js, &err) == 0) {
			json_t *r = json_loads(js, 0, NULL), *v;
			size_t i;

			if (!json_is_array(r) || json_array_size(r) < 1 ||
			    json_array_size(r) > SPX_S3_CORS_RULES_MAX)
				abort();
			json_array_foreach(r, i, v)
				if (!json_array_size(json_object_get(
					    v, "AllowedMethods")) ||
				    !json_array_size(json_object_get(
					    v, "AllowedOrigins")))
					abort();
			/* The matcher on what it is given: the same bytes as
			 * an origin, a method and request headers. */
			{
				char *any = spx_strndup((const char *)data,
							size);

				(void)spx_s3_cors_rule(r, any, "GET", any);
				(void)spx_s3_cors_rule(r, "https://a.example",
						       any, NULL);
				free(any);
			}
			json_decref(r);
			free(js);
		} else if (!err.code || err.http != 400 || js) {
			abort();
		}
	}
	/* And rules that match broadly against any request. */
	{
		static const char wide[] =
			"[{\"AllowedOrigins\":[\"*\",\"https://*.x\"],"
			"\"AllowedMethods\":[\"GET\"],"
			"\"AllowedHeaders\":[\"x-*\",\"*-y\",\"*\"]}]";
		json_t *r = json_loads(wide, 0, NULL);
		char *any = spx_strndup((const char *)data, size);

		if (!r)
			abort();
		(void)spx_s3_cors_rule(r, any, "GET", any);
		free(any);
		json_decref(r);
	}
	/* Public access block, ownership controls, an ACL document. */
	{
		unsigned f = 0;
		const char *o = NULL;

		if (spx_s3_pab_xml((const char *)data, size, &f, &err) == 0) {
			if (f & ~(unsigned)SPX_S3_PAB_ALL)
				abort();
		} else if (!err.code || err.http != 400) {
			abort();
		}
		if (spx_s3_ownership_xml((const char *)data, size, &o, &err) ==
		    0) {
			if (spx_s3_ownership_name(o) != o)
				abort();
		} else if (!err.code || err.http != 400) {
			abort();
		}
		acl_checks(data, size);
	}
	/* Object lock: configuration, retention, legal hold. */
	{
		char *js = NULL;
		const char *mode = NULL;
		double until;
		bool on;

		if (spx_s3_lock_conf_xml((const char *)data, size, &js, &err) ==
		    0) {
			json_t *j = json_loads(js, 0, NULL);

			if (!json_is_object(j))
				abort();
			json_decref(j);
			free(js);
		} else if (!err.code || err.http != 400 || js) {
			abort();
		}
		if (spx_s3_retention_xml((const char *)data, size, &mode,
					 &until, &err) == 0) {
			if (mode && strcmp(mode, "GOVERNANCE") &&
			    strcmp(mode, "COMPLIANCE"))
				abort();
		} else if (!err.code || err.http != 400) {
			abort();
		}
		if (spx_s3_legal_hold_xml((const char *)data, size, &on,
					  &err) < 0 &&
		    (!err.code || err.http != 400))
			abort();
	}
	/* Lifecycle: what the parser accepts, the pass and the gateway
	 * load (1..1000 rules, each with an action). */
	{
		char *js = NULL;
		struct spx_s3_life *l = NULL;

		if (spx_s3_lifecycle_xml((const char *)data, size, &js,
					 &err) == 0) {
			json_t *j = json_loads(js, 0, NULL);

			if (!json_is_array(j) || !json_array_size(j) ||
			    json_array_size(j) > SPX_S3_LIFE_RULES_MAX)
				abort();
			json_decref(j);
			if (spx_s3_life_load(js, strlen(js), &l) < 0)
				abort();
			(void)spx_s3_life_expiry(l, "logs/a", 10, NULL, 0,
						 86400, NULL);
			spx_s3_life_free(l);
			free(js);
		} else if (!err.code || (err.http != 400 && err.http != 501 &&
					 err.http != 500) ||
			   js) {
			abort();
		}
	}
	return 0;
}
