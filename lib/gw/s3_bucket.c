/* s3_bucket.c: buckets and their configuration: ListBuckets, create,
 * delete, head, location, versioning, the tag sets of buckets and
 * objects, and the bucket's CORS rules (kept as a bucket document). Buckets belong to the account that made them; the pipeline
 * opens the bucket (and checks the owner) before any handler here runs,
 * except ListBuckets and CreateBucket. */
#include "spx.h"

#include <jansson.h>

#include "gw/s3_int.h"
#include "gw/s3conf.h"
#include "gw/s3life.h"
#include "http/httpdate.h"

int s3_list_buckets(struct gw_req *g, struct spx_http_req *req,
		    struct spx_http_resp *resp)
{
	struct spx_obj_bucket *b = NULL;
	size_t n = 0;
	struct spx_xml x;
	char when[40];
	int rc = spx_obj_bucket_list(g->gw->obj, &b, &n);

	if (rc < 0)
		return s3_obj_fail(g, rc);
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ListAllMyBucketsResult", GW_S3_NS);
	s3_owner_elem(g, &x);
	spx_xml_open(&x, "Buckets");
	for (size_t i = 0; i < n; i++) {
		/* Each account sees its own buckets only. */
		if (strcmp(b[i].owner, g->who.account))
			continue;
		spx_xml_open(&x, "Bucket");
		spx_xml_elem(&x, "Name", b[i].name);
		spx_iso8601_ms((time_t)(b[i].created_ms / 1000), when,
			       sizeof(when));
		spx_xml_elem(&x, "CreationDate", when);
		spx_xml_close(&x);
	}
	free(b);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}

/* x-amz-object-ownership (default BucketOwnerEnforced) and the ACL
 * headers it allows (s3_acl_create): *acl the new bucket's ACL. */
static int create_ownership(struct gw_req *g, struct spx_http_req *req,
			    const char **own, char **acl)
{
	const char *h = spx_kv_geti(&req->headers, "x-amz-object-ownership");

	*acl = NULL;
	*own = h ? spx_s3_ownership_name(h) : "BucketOwnerEnforced";
	if (!*own)
		return s3_fail(g, 400, "InvalidArgument",
			       "Invalid x-amz-object-ownership header: %.64s",
			       h);
	return s3_acl_create(g, req, *own, acl);
}

int s3_create_bucket(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *region = g->gw->conf->aws.region, *own;
	char loc[80], *lc = NULL, *acl;
	struct spx_apierr e;
	int rc;

	if (s->body.len &&
	    spx_s3_create_bucket_xml(s->body.p, s->body.len, &lc, &e) < 0)
		return s3_conf_fail(&e);
	if (lc && strcmp(lc, region)) {
		rc = s3_fail(g, 400, "IllegalLocationConstraintException",
			     "The %s location constraint is incompatible for "
			     "the region specific endpoint this request was "
			     "sent to.",
			     lc);
		free(lc);
		return rc;
	}
	free(lc);
	if (!spx_obj_bucket_name_valid(s->bucket))
		return s3_obj_fail(g, SPX_OBJ_INVALID_BUCKET);
	if (create_ownership(g, req, &own, &acl) < 0)
		return -1;
	rc = spx_obj_bucket_create(g->gw->obj, s->bucket, g->who.account,
				   region);
	/* Ownership other than the default, and an ACL, are documents of
	 * the new bucket (s3_access.c). */
	if (!rc && (strcmp(own, "BucketOwnerEnforced") || acl) &&
	    (rc = spx_obj_bucket_open(g->gw->obj, s->bucket, &s->b)) == 0 &&
	    strcmp(own, "BucketOwnerEnforced"))
		rc = spx_obj_bucket_set_doc(g->gw->obj, &s->b, "ownership", own,
					    strlen(own));
	if (!rc && acl)
		rc = spx_obj_bucket_set_doc(g->gw->obj, &s->b, "acl", acl,
					    strlen(acl));
	free(acl);
	/* S3 answers a bucket its caller owns already with
	 * BucketAlreadyOwnedByYou, but in us-east-1 with 200, for its
	 * oldest clients (the bucket and what it holds stay as they are). */
	if (rc == SPX_OBJ_BUCKET_OWNED && !strcmp(region, "us-east-1"))
		rc = 0;
	if (rc < 0)
		return s3_obj_fail(g, rc);
	/* Object lock, also on a retry that found the bucket made: a crash
	 * between the two must not leave it without. */
	if (s3_lock_on_create(g, req) < 0)
		return -1;
	resp->status = 200;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	snprintf(loc, sizeof(loc), "/%s", s->bucket);
	spx_kv_add(&resp->headers, "Location", loc);
	resp->ready = true;
	return 0;
}

int s3_delete_bucket(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	int rc = spx_obj_bucket_delete(g->gw->obj, &g->s3->b);

	if (rc < 0)
		return s3_obj_fail(g, rc);
	s3_empty_answer(g, resp, 204);
	return 0;
}

int s3_head_bucket(struct gw_req *g, struct spx_http_req *req,
		   struct spx_http_resp *resp)
{
	resp->status = 200;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	spx_kv_add(&resp->headers, "x-amz-bucket-region", g->s3->b.region);
	resp->ready = true;
	return 0;
}

int s3_get_location(struct gw_req *g, struct spx_http_req *req,
		    struct spx_http_resp *resp)
{
	struct spx_xml x;

	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "LocationConstraint", GW_S3_NS);
	/* us-east-1 is the empty constraint, as in S3. */
	if (strcmp(g->s3->b.region, "us-east-1"))
		spx_xml_text(&x, g->s3->b.region);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}

/* ---- versioning ----------------------------------------------------- */

int s3_get_versioning(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	enum spx_obj_versioning v = g->s3->b.versioning;
	struct spx_xml x;

	/* A bucket that was never versioned has no Status, as in S3. */
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "VersioningConfiguration", GW_S3_NS);
	if (v != SPX_OBJ_UNVERSIONED)
		spx_xml_elem(&x, "Status",
			     v == SPX_OBJ_VERSIONING_ENABLED ? "Enabled"
							     : "Suspended");
	gw_xml_finish(g, req, resp, &x);
	return 0;
}

int s3_put_versioning(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	struct spx_apierr e;
	bool enabled;
	int rc;

	if (spx_s3_versioning_xml(g->s3->body.p, g->s3->body.len, &enabled,
				  &e) < 0)
		return s3_conf_fail(&e);
	if (!enabled) {
		json_t *lock;

		if (s3_lock_conf(g, &g->s3->b, &lock) < 0)
			return -1;
		json_decref(lock);
		if (lock)
			return s3_fail(g, 409, "InvalidBucketState",
				       "An Object Lock configuration is "
				       "present on this bucket, so the "
				       "versioning state cannot be changed.");
	}
	rc = spx_obj_bucket_set_versioning(g->gw->obj, &g->s3->b,
					   enabled ? SPX_OBJ_VERSIONING_ENABLED
						   : SPX_OBJ_VERSIONING_SUSPENDED);
	if (rc < 0)
		return s3_obj_fail(g, rc);
	s3_empty_answer(g, resp, 200);
	return 0;
}

/* ---- tagging -------------------------------------------------------- */

static void tagging_doc(struct gw_req *g, struct spx_http_req *req,
			struct spx_http_resp *resp,
			const struct spx_kvlist *tags, bool showv,
			const char *vid)
{
	struct spx_xml x;

	gw_xml_begin(g, resp, &x);
	s3_version_header(resp, showv, vid);
	spx_xml_open_ns(&x, "Tagging", GW_S3_NS);
	spx_xml_open(&x, "TagSet");
	for (size_t i = 0; i < tags->n; i++) {
		spx_xml_open(&x, "Tag");
		spx_xml_elem(&x, "Key", tags->v[i].k);
		spx_xml_elem(&x, "Value", tags->v[i].v);
		spx_xml_close(&x);
	}
	gw_xml_finish(g, req, resp, &x);
}

int s3_get_bucket_tagging(struct gw_req *g, struct spx_http_req *req,
			  struct spx_http_resp *resp)
{
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	int rc = spx_obj_bucket_tags(g->gw->obj, &g->s3->b, &tags);

	if (rc < 0)
		return s3_obj_fail(g, rc);
	if (!tags.n)
		return s3_fail(g, 404, "NoSuchTagSet", "The TagSet does not exist");
	tagging_doc(g, req, resp, &tags, false, NULL);
	spx_kv_free(&tags);
	return 0;
}

int s3_put_bucket_tagging(struct gw_req *g, struct spx_http_req *req,
			  struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	struct spx_apierr e;
	int rc;

	if (spx_s3_tags_xml(s->body.p, s->body.len, SPX_S3_TAGS_BUCKET, &tags,
			    &e) < 0)
		return s3_conf_fail(&e);
	rc = spx_obj_bucket_set_tags(g->gw->obj, &s->b, &tags);
	spx_kv_free(&tags);
	if (rc < 0)
		return s3_obj_fail(g, rc);
	s3_empty_answer(g, resp, 204);
	return 0;
}

int s3_delete_bucket_tagging(struct gw_req *g, struct spx_http_req *req,
			     struct spx_http_resp *resp)
{
	int rc = spx_obj_bucket_set_tags(g->gw->obj, &g->s3->b, NULL);

	if (rc < 0)
		return s3_obj_fail(g, rc);
	s3_empty_answer(g, resp, 204);
	return 0;
}

int s3_get_object_tagging(struct gw_req *g, struct spx_http_req *req,
			  struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	const char *want;

	if (s3_stat_named(g, &want, &m) < 0) {
		spx_obj_meta_release(&m);
		return -1;
	}
	tagging_doc(g, req, resp, &m.tags,
		    want || s->b.versioning != SPX_OBJ_UNVERSIONED, m.vid);
	spx_obj_meta_release(&m);
	return 0;
}

/* PutObjectTagging and DeleteObjectTagging (tags NULL): the tags of a
 * version replaced in place. */
static int set_object_tags(struct gw_req *g, struct spx_http_resp *resp,
			   const struct spx_kvlist *tags, int status)
{
	struct gw_s3 *s = g->s3;
	char vid[SPX_OBJ_VID_SIZE];
	const char *want;
	int rc;

	if (s3_version_param(g, &want) < 0)
		return -1;
	rc = spx_obj_set_tags(g->gw->obj, &s->b, s->key, want, tags, vid);
	if (rc < 0) {
		s3_marker_headers(g, want, rc);
		return s3_obj_fail(g, rc);
	}
	s3_empty_answer(g, resp, status);
	s3_version_header(resp, want || s->b.versioning != SPX_OBJ_UNVERSIONED,
			  vid);
	return 0;
}

int s3_put_object_tagging(struct gw_req *g, struct spx_http_req *req,
			  struct spx_http_resp *resp)
{
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	struct spx_apierr e;
	int rc;

	if (spx_s3_tags_xml(g->s3->body.p, g->s3->body.len, SPX_S3_TAGS_OBJECT,
			    &tags, &e) < 0)
		return s3_conf_fail(&e);
	rc = set_object_tags(g, resp, &tags, 200);
	spx_kv_free(&tags);
	return rc;
}

int s3_delete_object_tagging(struct gw_req *g, struct spx_http_req *req,
			     struct spx_http_resp *resp)
{
	struct spx_kvlist none = SPX_KVLIST_INIT;

	return set_object_tags(g, resp, &none, 204);
}

/* The request's body, made JSON by parse, as the bucket's document
 * name. */
static int put_rule_doc(struct gw_req *g, struct spx_http_resp *resp,
			const char *name,
			int (*parse)(const char *, size_t, char **,
				     struct spx_apierr *))
{
	struct gw_s3 *s = g->s3;
	struct spx_apierr e;
	char *json = NULL;
	int rc;

	if (parse(s->body.p, s->body.len, &json, &e) < 0)
		return s3_conf_fail(&e);
	rc = spx_obj_bucket_set_doc(g->gw->obj, &s->b, name, json,
				    strlen(json));
	free(json);
	if (rc < 0)
		return s3_obj_fail(g, rc);
	s3_empty_answer(g, resp, 200);
	return 0;
}

/* The bucket's document name, a JSON list of rules; NULL with the error
 * answered (code and message when there is none). */
static json_t *rule_doc(struct gw_req *g, const char *name, const char *code,
			const char *message)
{
	struct spx_buf doc = SPX_BUF_INIT;
	json_t *rules;
	int rc = spx_obj_bucket_doc(g->gw->obj, &g->s3->b, name, &doc);

	if (rc < 0) {
		spx_buf_release(&doc);
		s3_obj_fail(g, rc);
		return NULL;
	}
	rules = doc.len ? json_loadb(doc.p, doc.len, 0, NULL) : NULL;
	spx_buf_release(&doc);
	if (!json_is_array(rules)) {
		json_decref(rules);
		s3_fail(g, 404, code, "%s", message);
		return NULL;
	}
	return rules;
}

/* ---- CORS ---- */

int s3_put_bucket_cors(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp)
{
	return put_rule_doc(g, resp, "cors", spx_s3_cors_xml);
}

/* One rule's list member as elements named el. */
static void cors_elems(struct spx_xml *x, const json_t *rule,
		       const char *member, const char *el)
{
	const json_t *a = json_object_get(rule, member), *v;
	size_t i;

	json_array_foreach(a, i, v)
		if (json_is_string(v))
			spx_xml_elem(x, el, json_string_value(v));
}

int s3_get_bucket_cors(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp)
{
	json_t *rules, *r;
	struct spx_xml x;
	size_t i;

	if (!(rules = rule_doc(g, "cors", "NoSuchCORSConfiguration",
			       "The CORS configuration does not exist")))
		return -1;
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "CORSConfiguration", GW_S3_NS);
	json_array_foreach(rules, i, r) {
		const json_t *id = json_object_get(r, "ID");
		const json_t *age = json_object_get(r, "MaxAgeSeconds");

		spx_xml_open(&x, "CORSRule");
		if (json_is_string(id))
			spx_xml_elem(&x, "ID", json_string_value(id));
		cors_elems(&x, r, "AllowedHeaders", "AllowedHeader");
		cors_elems(&x, r, "AllowedMethods", "AllowedMethod");
		cors_elems(&x, r, "AllowedOrigins", "AllowedOrigin");
		cors_elems(&x, r, "ExposeHeaders", "ExposeHeader");
		if (json_is_integer(age))
			spx_xml_elem_i64(&x, "MaxAgeSeconds",
					 json_integer_value(age));
		spx_xml_close(&x);
	}
	json_decref(rules);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}

int s3_delete_bucket_cors(struct gw_req *g, struct spx_http_req *req,
			  struct spx_http_resp *resp)
{
	int rc = spx_obj_bucket_set_doc(g->gw->obj, &g->s3->b, "cors", NULL,
					0);

	if (rc < 0)
		return s3_obj_fail(g, rc);
	s3_empty_answer(g, resp, 204);
	return 0;
}

/* ---- lifecycle ---- */

int s3_put_bucket_lifecycle(struct gw_req *g, struct spx_http_req *req,
			    struct spx_http_resp *resp)
{
	return put_rule_doc(g, resp, SPX_S3_LIFE_DOC,
			    spx_s3_lifecycle_xml);
}

/* A filter's conditions, each as its element. */
static void life_conds(struct spx_xml *x, const json_t *f)
{
	const json_t *p = json_object_get(f, "Prefix"), *t;
	size_t i;

	if (json_is_string(p))
		spx_xml_elem(x, "Prefix", json_string_value(p));
	json_array_foreach(json_object_get(f, "Tags"), i, t) {
		spx_xml_open(x, "Tag");
		spx_xml_elem(x, "Key",
			     json_string_value(json_object_get(t, "Key")));
		spx_xml_elem(x, "Value",
			     json_string_value(json_object_get(t, "Value")));
		spx_xml_close(x);
	}
	if (json_is_integer(json_object_get(f, "Gt")))
		spx_xml_elem_i64(x, "ObjectSizeGreaterThan",
				 json_integer_value(json_object_get(f, "Gt")));
	if (json_is_integer(json_object_get(f, "Lt")))
		spx_xml_elem_i64(x, "ObjectSizeLessThan",
				 json_integer_value(json_object_get(f, "Lt")));
}

/* Integer member k of o as element k, if there. */
static void life_int(struct spx_xml *x, const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	if (json_is_integer(v))
		spx_xml_elem_i64(x, k, json_integer_value(v));
}

static void life_rule_xml(struct spx_xml *x, const json_t *r)
{
	const json_t *e = json_object_get(r, "Expiration");
	const json_t *f = json_object_get(r, "Filter");
	const json_t *nc = json_object_get(r, "NoncurrentVersionExpiration");
	const json_t *ab = json_object_get(r, "AbortIncompleteMultipartUpload");
	const json_t *v;

	spx_xml_open(x, "Rule");
	if (e) {
		spx_xml_open(x, "Expiration");
		if ((v = json_object_get(e, "Date")))
			spx_xml_elem(x, "Date", json_string_value(v));
		life_int(x, e, "Days");
		if ((v = json_object_get(e, "ExpiredObjectDeleteMarker")))
			spx_xml_elem_bool(x, "ExpiredObjectDeleteMarker",
					  json_is_true(v));
		spx_xml_close(x);
	}
	spx_xml_elem(x, "ID", json_string_value(json_object_get(r, "ID")));
	if (json_is_true(json_object_get(r, "Legacy"))) {
		life_conds(x, f);
	} else {
		spx_xml_open(x, "Filter");
		if (json_is_true(json_object_get(f, "And"))) {
			spx_xml_open(x, "And");
			life_conds(x, f);
			spx_xml_close(x);
		} else {
			life_conds(x, f);
		}
		spx_xml_close(x);
	}
	spx_xml_elem(x, "Status",
		     json_string_value(json_object_get(r, "Status")));
	if (nc) {
		spx_xml_open(x, "NoncurrentVersionExpiration");
		life_int(x, nc, "NoncurrentDays");
		life_int(x, nc, "NewerNoncurrentVersions");
		spx_xml_close(x);
	}
	if (ab) {
		spx_xml_open(x, "AbortIncompleteMultipartUpload");
		life_int(x, ab, "DaysAfterInitiation");
		spx_xml_close(x);
	}
	spx_xml_close(x);
}

int s3_get_bucket_lifecycle(struct gw_req *g, struct spx_http_req *req,
			    struct spx_http_resp *resp)
{
	json_t *rules, *r;
	struct spx_xml x;
	size_t i;

	if (!(rules = rule_doc(g, SPX_S3_LIFE_DOC, "NoSuchLifecycleConfiguration",
			       "The lifecycle configuration does not exist")))
		return -1;
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "LifecycleConfiguration", GW_S3_NS);
	json_array_foreach(rules, i, r)
		life_rule_xml(&x, r);
	json_decref(rules);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}

int s3_delete_bucket_lifecycle(struct gw_req *g, struct spx_http_req *req,
			       struct spx_http_resp *resp)
{
	int rc = spx_obj_bucket_set_doc(g->gw->obj, &g->s3->b,
					SPX_S3_LIFE_DOC, NULL, 0);

	if (rc >= 0)
		rc = spx_obj_bucket_set_doc(g->gw->obj, &g->s3->b,
					    SPX_S3_LIFE_POS_DOC, NULL, 0);
	if (rc < 0)
		return s3_obj_fail(g, rc);
	s3_empty_answer(g, resp, 204);
	return 0;
}

/* Join rule's member into v with ", ". */
static void cors_join(const json_t *rule, const char *member,
		      struct spx_buf *v)
{
	const json_t *a = json_object_get(rule, member), *e;
	size_t i;

	spx_buf_reset(v);
	json_array_foreach(a, i, e)
		if (json_is_string(e))
			spx_buf_addf(v, "%s%s", v->len ? ", " : "",
				     json_string_value(e));
}

/* The bucket's CORS rules (NULL: none); -1 when unreadable. */
static int cors_rules(struct gw_req *g, json_t **rules)
{
	struct spx_buf doc = SPX_BUF_INIT;
	int rc = spx_obj_bucket_doc(g->gw->obj, &g->s3->b, "cors", &doc);

	*rules = rc == 0 && doc.len ? json_loadb(doc.p, doc.len, 0, NULL)
				    : NULL;
	spx_buf_release(&doc);
	return rc;
}

/* What rule r grants origin, into h: a rule for any origin answers "*",
 * and then no credentials; hs, a preflight's requested headers. */
static void cors_grant(struct spx_kvlist *h, const json_t *r,
		       const char *origin, const char *hs)
{
	struct spx_buf v = SPX_BUF_INIT;
	const json_t *age = json_object_get(r, "MaxAgeSeconds");

	if (spx_s3_cors_any_origin(r)) {
		spx_kv_add(h, "Access-Control-Allow-Origin", "*");
	} else {
		spx_kv_add(h, "Access-Control-Allow-Origin", origin);
		spx_kv_add(h, "Access-Control-Allow-Credentials", "true");
	}
	cors_join(r, "AllowedMethods", &v);
	spx_kv_add(h, "Access-Control-Allow-Methods", v.p);
	if (hs && *hs)
		spx_kv_add(h, "Access-Control-Allow-Headers", hs);
	cors_join(r, "ExposeHeaders", &v);
	if (v.len)
		spx_kv_add(h, "Access-Control-Expose-Headers", v.p);
	if (json_is_integer(age)) {
		spx_buf_reset(&v);
		spx_buf_addf(&v, "%lld", (long long)json_integer_value(age));
		spx_kv_add(h, "Access-Control-Max-Age", v.p);
	}
	spx_kv_add(h, "Vary",
		   "Origin, Access-Control-Request-Headers, "
		   "Access-Control-Request-Method");
	spx_buf_release(&v);
}

int s3_cors_preflight(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	const char *origin = spx_kv_geti(&req->headers, "Origin");
	const char *method = spx_kv_geti(&req->headers,
					 "Access-Control-Request-Method");
	const char *hs = spx_kv_geti(&req->headers,
				     "Access-Control-Request-Headers");
	const json_t *r;
	json_t *rules;
	int rc;

	if (!origin || !*origin)
		return s3_fail(g, 400, "BadRequest",
			       "Insufficient information. Origin request "
			       "header needed.");
	if (!method || (strcmp(method, "GET") && strcmp(method, "PUT") &&
			strcmp(method, "POST") && strcmp(method, "DELETE") &&
			strcmp(method, "HEAD")))
		return s3_fail(g, 400, "BadRequest",
			       "Invalid Access-Control-Request-Method: %.40s",
			       method ? method : "");
	if ((rc = cors_rules(g, &rules)) < 0)
		return s3_obj_fail(g, rc);
	r = spx_s3_cors_rule(rules, origin, method, hs);
	if (!r) {
		json_decref(rules);
		return s3_fail(g, 403, "AccessForbidden",
			       "CORSResponse: This CORS request is not "
			       "allowed. This is usually because the "
			       "evaluation of Origin, request method / "
			       "Access-Control-Request-Method or "
			       "Access-Control-Request-Headers are not "
			       "whitelisted by the resource's CORS spec.");
	}
	resp->status = 200;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	cors_grant(&resp->headers, r, origin, hs);
	spx_kv_add(&resp->headers, "Content-Length", "0");
	resp->ready = true;
	json_decref(rules);
	return 0;
}

void s3_cors_actual(struct gw_req *g, struct spx_http_req *req)
{
	const char *origin = spx_kv_geti(&req->headers, "Origin");
	const json_t *r;
	json_t *rules;

	if (!origin || !*origin)
		return;
	if (cors_rules(g, &rules) < 0) {
		spx_info("s3: %s: CORS rules of %s unreadable: %s", g->reqid,
			 g->s3->b.name, spx_errmsg());
		return;
	}
	r = spx_s3_cors_rule(rules, origin, req->method, NULL);
	if (r)
		cors_grant(&g->s3->cors, r, origin, NULL);
	json_decref(rules);
}
