/* s3_access.c: who may do what — the IAM action of each operation, the
 * request's condition keys, the decision (spx_s3_access, s3policy.c) made
 * for every operation on a bucket, and the configuration it reads: the
 * bucket policy, the public access block and object ownership, with their
 * Get/Put/Delete operations, and the ACLs (s3acl.h) where the bucket's
 * ownership enables them.
 *
 * The bucket's documents (lib/obj): "policy" the policy as it was given;
 * "pab" the public access block as JSON, absent for the node's default
 * (gw.s3_public_access_block: all four on, as S3 sets for new buckets, or
 * none), "{}" after DeletePublicAccessBlock; "ownership" the ObjectOwnership name, absent
 * for the default BucketOwnerEnforced, "none" after
 * DeleteBucketOwnershipControls (then as ObjectWriter); "acl" the
 * bucket's ACL as s3acl.h keeps it, absent for the owner's FULL_CONTROL.
 * An object's ACL is its system entry S3_ACL_SYS, absent for the bucket
 * owner's FULL_CONTROL: where ACLs are enabled an object written by
 * another account is that account's, and its ACL says so. */
#include "spx.h"

#include <jansson.h>
#include <time.h>

#include "gw/s3_int.h"
#include "gw/s3acl.h"
#include "gw/s3conf.h"
#include "gw/s3policy.h"

/* ---- actions -------------------------------------------------------- */

/* Operation, the action it needs, and the action with a versionId where
 * S3 names another. Operations not named here need s3:<name>. */
static const struct {
	const char *op, *action, *version_action;
} actions[] = {
	{"ListObjects", "s3:ListBucket", NULL},
	{"ListObjectsV2", "s3:ListBucket", NULL},
	{"HeadBucket", "s3:ListBucket", NULL},
	{"ListObjectVersions", "s3:ListBucketVersions", NULL},
	{"ListMultipartUploads", "s3:ListBucketMultipartUploads", NULL},
	{"DeleteBucketTagging", "s3:PutBucketTagging", NULL},
	{"GetBucketCors", "s3:GetBucketCORS", NULL},
	{"PutBucketCors", "s3:PutBucketCORS", NULL},
	{"DeleteBucketCors", "s3:PutBucketCORS", NULL},
	{"GetBucketLifecycleConfiguration", "s3:GetLifecycleConfiguration",
	 NULL},
	{"PutBucketLifecycleConfiguration", "s3:PutLifecycleConfiguration",
	 NULL},
	{"DeleteBucketLifecycle", "s3:PutLifecycleConfiguration", NULL},
	{"GetObject", "s3:GetObject", "s3:GetObjectVersion"},
	{"HeadObject", "s3:GetObject", "s3:GetObjectVersion"},
	{"GetObjectAttributes", "s3:GetObjectAttributes",
	 "s3:GetObjectVersionAttributes"},
	{"GetObjectTagging", "s3:GetObjectTagging", "s3:GetObjectVersionTagging"},
	{"PutObjectTagging", "s3:PutObjectTagging", "s3:PutObjectVersionTagging"},
	{"DeleteObjectTagging", "s3:DeleteObjectTagging",
	 "s3:DeleteObjectVersionTagging"},
	{"GetObjectAcl", "s3:GetObjectAcl", "s3:GetObjectVersionAcl"},
	{"PutObjectAcl", "s3:PutObjectAcl", "s3:PutObjectVersionAcl"},
	{"DeleteObject", "s3:DeleteObject", "s3:DeleteObjectVersion"},
	{"DeleteObjects", "s3:DeleteObject", NULL},
	{"CopyObject", "s3:PutObject", NULL},
	{"UploadPart", "s3:PutObject", NULL},
	{"UploadPartCopy", "s3:PutObject", NULL},
	{"CreateMultipartUpload", "s3:PutObject", NULL},
	{"CompleteMultipartUpload", "s3:PutObject", NULL},
	{"PostObject", "s3:PutObject", NULL},
	{"ListParts", "s3:ListMultipartUploadParts", NULL},
	{"GetPublicAccessBlock", "s3:GetBucketPublicAccessBlock", NULL},
	{"PutPublicAccessBlock", "s3:PutBucketPublicAccessBlock", NULL},
	{"DeletePublicAccessBlock", "s3:PutBucketPublicAccessBlock", NULL},
	{"DeleteBucketOwnershipControls", "s3:PutBucketOwnershipControls",
	 NULL},
	{"GetObjectLockConfiguration", "s3:GetBucketObjectLockConfiguration",
	 NULL},
	{"PutObjectLockConfiguration", "s3:PutBucketObjectLockConfiguration",
	 NULL},
};

void s3_action(const struct gw_req *g, const char *op, char *out,
	       size_t len)
{
	bool version = s3_has(g, "versionId");

	for (size_t i = 0; i < SPX_ARRAY_SIZE(actions); i++)
		if (!strcmp(actions[i].op, op)) {
			snprintf(out, len, "%s",
				 version && actions[i].version_action
					 ? actions[i].version_action
					 : actions[i].action);
			return;
		}
	snprintf(out, len, "s3:%s", op);
}

/* ---- condition keys ------------------------------------------------- */

static void add_header(struct spx_kvlist *k, struct spx_http_req *req,
		       const char *key, const char *header)
{
	const char *v = spx_kv_geti(&req->headers, header);

	if (v)
		spx_kv_add(k, key, v);
}

static void add_param(struct spx_kvlist *k, const struct gw_req *g,
		      const char *key, const char *param)
{
	const char *v = spx_kv_get(&g->params, param);

	if (v)
		spx_kv_add(k, key, v);
}

/* The keys a policy's conditions may ask of this request. */
static void request_keys(struct gw_req *g, struct spx_http_req *req,
			 struct spx_kvlist *k)
{
	time_t now = gw_now(g->gw);
	struct tm tm;
	char t[40];

	spx_kv_add(k, "aws:SourceIp", req->remote);
	spx_kv_add(k, "aws:SecureTransport", req->tls ? "true" : "false");
	gmtime_r(&now, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
	spx_kv_add(k, "aws:CurrentTime", t);
	snprintf(t, sizeof(t), "%lld", (long long)now);
	spx_kv_add(k, "aws:EpochTime", t);
	add_header(k, req, "aws:UserAgent", "User-Agent");
	add_header(k, req, "aws:Referer", "Referer");
	if (g->authed) {
		size_t n = strlen(g->who.arn);

		spx_kv_add(k, "aws:PrincipalAccount", g->who.account);
		spx_kv_add(k, "aws:PrincipalArn", g->who.arn);
		spx_kv_add(k, "aws:PrincipalType",
			   n > 5 && !strcmp(g->who.arn + n - 5, ":root")
				   ? "Account"
				   : "User");
		if (g->who.user[0])
			spx_kv_add(k, "aws:username", g->who.user);
		spx_kv_add(k, "s3:signatureversion",
			   g->auth.v2 ? "AWS" : "AWS4-HMAC-SHA256");
		spx_kv_add(k, "s3:authType",
			   g->s3 && g->s3->post ? "POST"
			   : g->auth.presigned  ? "REST-QUERY-STRING"
						: "REST-HEADER");
	} else
		spx_kv_add(k, "aws:PrincipalType", "Anonymous");
	add_param(k, g, "s3:prefix", "prefix");
	add_param(k, g, "s3:delimiter", "delimiter");
	add_param(k, g, "s3:max-keys", "max-keys");
	add_param(k, g, "s3:VersionId", "versionId");
	add_header(k, req, "s3:x-amz-acl", "x-amz-acl");
	add_header(k, req, "s3:x-amz-storage-class", "x-amz-storage-class");
	add_header(k, req, "s3:x-amz-server-side-encryption",
		   "x-amz-server-side-encryption");
	add_header(k, req, "s3:x-amz-copy-source", "x-amz-copy-source");
	add_header(k, req, "s3:x-amz-metadata-directive",
		   "x-amz-metadata-directive");
	add_header(k, req, "s3:x-amz-content-sha256", "x-amz-content-sha256");
}

/* ---- the bucket's documents ----------------------------------------- */

/* The bucket's policy, parsed, or NULL (none). A stored policy that no
 * longer parses is logged and read as one that allows nobody but the
 * owner and denies nothing: fail closed, without locking the owner out. */
static int read_policy(struct gw_req *g, const struct spx_obj_bucket *b,
		       json_t **out)
{
	struct spx_buf d = SPX_BUF_INIT;
	char why[160];
	int rc = spx_obj_bucket_doc(g->gw->obj, b, "policy", &d);

	*out = NULL;
	if (rc < 0) {
		spx_buf_release(&d);
		return s3_obj_fail(g, rc);
	}
	if (d.len && spx_s3_policy_parse(d.p, d.len, b->name, out, why,
					 sizeof(why)) < 0)
		spx_log(SPX_LOG_ERROR, "s3: bucket '%s': stored policy: %s",
			b->name, why);
	spx_buf_release(&d);
	return 0;
}

/* The public access block's settings (SPX_S3_PAB_*); *set false after
 * DeletePublicAccessBlock. */
static int read_pab(struct gw_req *g, const struct spx_obj_bucket *b,
		    unsigned *flags, bool *set)
{
	struct spx_buf d = SPX_BUF_INIT;
	int rc = spx_obj_bucket_doc(g->gw->obj, b, "pab", &d);
	json_t *j = NULL;

	/* No document: the node's default for buckets. */
	*set = g->gw->self->gw.s3_public_access_block;
	*flags = *set ? SPX_S3_PAB_ALL : 0;
	if (rc < 0) {
		spx_buf_release(&d);
		return s3_obj_fail(g, rc);
	}
	if (d.len) {
		j = json_loadb(d.p, d.len, 0, NULL);
		*flags = 0;
		for (size_t i = 0; i < SPX_S3_PAB_N; i++)
			if (json_is_true(json_object_get(j,
							 spx_s3_pab_names[i])))
				*flags |= 1u << i;
		*set = j && json_object_size(j) > 0;
		json_decref(j);
	}
	spx_buf_release(&d);
	return 0;
}

/* ObjectOwnership (a constant), or NULL after
 * DeleteBucketOwnershipControls. */
static int read_ownership(struct gw_req *g, const struct spx_obj_bucket *b,
			  const char **out)
{
	struct spx_buf d = SPX_BUF_INIT;
	int rc = spx_obj_bucket_doc(g->gw->obj, b, "ownership", &d);

	*out = "BucketOwnerEnforced";
	if (rc < 0) {
		spx_buf_release(&d);
		return s3_obj_fail(g, rc);
	}
	if (d.len) {
		spx_buf_addc(&d, '\0');
		*out = spx_s3_ownership_name(d.p);
	}
	spx_buf_release(&d);
	return 0;
}

/* ---- ACLs: reading and the decision's step 4 ------------------------ */

static bool enforced(const char *own)
{
	return own && !strcmp(own, "BucketOwnerEnforced");
}

/* The bucket's ACL (the owner's FULL_CONTROL when none is kept). */
static int read_bucket_acl(struct gw_req *g, const struct spx_obj_bucket *b,
			   json_t **out)
{
	struct spx_buf d = SPX_BUF_INIT;
	int rc = spx_obj_bucket_doc(g->gw->obj, b, "acl", &d);

	*out = NULL;
	if (rc < 0) {
		spx_buf_release(&d);
		return s3_obj_fail(g, rc);
	}
	if (d.len && !(*out = spx_s3_acl_load(d.p, d.len)))
		spx_log(SPX_LOG_ERROR, "s3: bucket '%s': stored ACL unreadable",
			b->name);
	spx_buf_release(&d);
	if (!*out)
		*out = spx_s3_acl_private(b->owner);
	return 0;
}

/* A version's ACL (the bucket owner's FULL_CONTROL when none is kept;
 * nothing for a damaged one: it grants nobody but the bucket owner). */
static json_t *object_acl(const struct spx_obj_meta *m,
			  const struct spx_obj_bucket *b)
{
	const char *t = spx_kv_get(&m->sys, S3_ACL_SYS);
	json_t *acl = t ? spx_s3_acl_load(t, strlen(t)) : NULL;

	return acl ? acl : spx_s3_acl_private(b->owner);
}

/* Do b's ACLs grant action (on key) to the caller? Never where the
 * bucket's ownership disables ACLs. The object is the version the
 * request names, for the request's own bucket; for another (a copy's
 * source), version src_vid, or the current one when NULL. */
static int acl_allows(struct gw_req *g, const struct spx_obj_bucket *b,
		      const char *action, const char *key, const char *src_vid,
		      bool *ok)
{
	bool mine = b == &g->s3->b;
	enum spx_s3_acl_of of;
	unsigned perm, pab = 0;
	const char *own, *vid = mine ? NULL : src_vid;
	json_t *acl = NULL;
	bool set;

	*ok = false;
	of = spx_s3_acl_need(action, &perm);
	if (of == SPX_S3_ACL_OF_NONE || (of == SPX_S3_ACL_OF_OBJECT && !key))
		return 0;
	if (read_ownership(g, b, &own) < 0)
		return -1;
	if (enforced(own))
		return 0;
	if (mine && g->s3->acc_pab_read)
		pab = g->s3->acc_pab;
	else if (read_pab(g, b, &pab, &set) < 0)
		return -1;
	if (of == SPX_S3_ACL_OF_BUCKET) {
		if (read_bucket_acl(g, b, &acl) < 0)
			return -1;
	} else {
		struct spx_obj_meta m = SPX_OBJ_META_INIT;

		if (mine && s3_version_param(g, &vid) < 0)
			return -1;
		/* No such version: nothing to grant it. */
		if (spx_obj_stat_version(g->gw->obj, b, key, vid, &m) == 0 &&
		    !m.delete_marker)
			acl = object_acl(&m, b);
		spx_obj_meta_release(&m);
	}
	*ok = acl && spx_s3_acl_grants(acl, g->authed ? g->who.account : "",
				       perm, pab & SPX_S3_PAB_IGNORE_ACLS);
	json_decref(acl);
	return 0;
}

/* ---- the decision --------------------------------------------------- */

static int authorize(struct gw_req *g, struct spx_http_req *req,
		     const struct spx_obj_bucket *b, const char *action,
		     const char *key, const char *src_vid)
{
	struct spx_kvlist keys = SPX_KVLIST_INIT;
	struct spx_buf res = SPX_BUF_INIT;
	struct gw_s3 *s = g->s3;
	/* What is read of the request's own bucket is kept for the
	 * request; another bucket (a copy's source) is read each time. */
	bool mine = b == &s->b;
	json_t *pol = mine && s->acc_read ? s->acc_policy : NULL;
	unsigned pab = mine ? s->acc_pab : 0;
	struct spx_s3_access_bucket ab = {.owner = b->owner};
	struct spx_s3_access_req r = {
		.account = g->authed ? g->who.account : "",
		.arn = g->authed ? g->who.arn : "",
		.action = action,
		.keys = &keys,
	};
	enum spx_s3_access_why why;
	bool owner = g->authed && !strcmp(g->who.account, b->owner);

	if (!mine || !s->acc_read) {
		if (read_policy(g, b, &pol) < 0)
			return -1;
		if (mine) {
			s->acc_read = true;
			s->acc_policy = pol;
		}
	}
	/* The owner, with no policy to deny it: nothing more to read. */
	if (owner && !pol)
		return 0;
	if (pol && !owner && (!mine || !s->acc_pab_read)) {
		bool set;

		if (read_pab(g, b, &pab, &set) < 0) {
			if (!mine)
				json_decref(pol);
			return -1;
		}
		if (mine) {
			s->acc_pab_read = true;
			s->acc_pab = pab;
		}
	}
	ab.policy = pol;
	ab.restrict_public = pab & SPX_S3_PAB_RESTRICT;
	spx_buf_addf(&res, "arn:aws:s3:::%s%s%s", b->name, key ? "/" : "",
		     key ? key : "");
	r.resource = res.p;
	if (pol)
		request_keys(g, req, &keys);
	why = spx_s3_access(&ab, &r);
	/* Step 4, read only when nothing before it decided. */
	if (why == SPX_S3_DENIED) {
		if (acl_allows(g, b, action, key, src_vid,
			       &ab.acl_allows) < 0) {
			if (!mine)
				json_decref(pol);
			spx_kv_free(&keys);
			spx_buf_release(&res);
			return -1;
		}
		why = spx_s3_access(&ab, &r);
	}
	if (!mine)
		json_decref(pol);
	spx_kv_free(&keys);
	spx_buf_release(&res);
	if (why > 0)
		return 0;
	spx_info("s3: %s: %s on %s/%s by %s: %s", g->reqid, action, b->name,
		 key ? key : "", g->authed ? g->who.arn : "anonymous",
		 why == SPX_S3_DENIED_BY_POLICY ? "denied by the bucket policy"
						: "not allowed");
	return s3_fail(g, 403, "AccessDenied", "Access Denied");
}

int s3_authorize(struct gw_req *g, struct spx_http_req *req,
		 const struct spx_obj_bucket *b, const char *action,
		 const char *key)
{
	return authorize(g, req, b, action, key, NULL);
}

int s3_authorize_source(struct gw_req *g, struct spx_http_req *req,
			const struct spx_obj_bucket *b, const char *key,
			const char *vid)
{
	return authorize(g, req, b,
			 vid ? "s3:GetObjectVersion" : "s3:GetObject", key,
			 vid);
}

/* ---- bucket policy -------------------------------------------------- */

/* Set (or, n 0, remove) the bucket's document name and answer status. */
static int set_doc(struct gw_req *g, struct spx_http_resp *resp,
		   const char *name, const char *p, size_t n, int status)
{
	return s3_empty_or_fail(g, resp,
				spx_obj_bucket_set_doc(g->gw->obj, &g->s3->b,
						       name, p, n),
				status);
}


int s3_put_bucket_policy(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	char why[160];
	json_t *pol = NULL;
	unsigned pab;
	bool set, pub;

	if (spx_s3_policy_parse(s->body.p, s->body.len, s->bucket, &pol, why,
				sizeof(why)) < 0)
		return s3_fail(g, 400, "MalformedPolicy", "%s", why);
	pub = spx_s3_policy_public(pol);
	json_decref(pol);
	if (read_pab(g, &s->b, &pab, &set) < 0)
		return -1;
	if (pub && (pab & SPX_S3_PAB_BLOCK_POLICY))
		return s3_fail(g, 403, "AccessDenied",
			       "User: %s is not authorized to perform: "
			       "s3:PutBucketPolicy on resource: "
			       "\"arn:aws:s3:::%s\" because public policies "
			       "are blocked by the BlockPublicPolicy block "
			       "public access setting.",
			       g->who.arn, s->bucket);
	return set_doc(g, resp, "policy", s->body.p, s->body.len, 204);
}

static int no_policy(struct gw_req *g)
{
	return s3_fail(g, 404, "NoSuchBucketPolicy",
		       "The bucket policy does not exist");
}

int s3_get_bucket_policy(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	struct spx_buf d = SPX_BUF_INIT;
	int rc = spx_obj_bucket_doc(g->gw->obj, &g->s3->b, "policy", &d);

	if (rc < 0 || !d.len) {
		spx_buf_release(&d);
		return rc < 0 ? s3_obj_fail(g, rc) : no_policy(g);
	}
	resp->status = 200;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	spx_kv_add(&resp->headers, "Content-Type", "application/json");
	spx_buf_add(&resp->body, d.p, d.len);
	resp->ready = true;
	spx_buf_release(&d);
	return 0;
}

int s3_delete_bucket_policy(struct gw_req *g, struct spx_http_req *req,
			    struct spx_http_resp *resp)
{
	return set_doc(g, resp, "policy", NULL, 0, 204);
}

int s3_get_policy_status(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	struct spx_xml x;
	json_t *pol;
	bool pub;

	if (read_policy(g, &g->s3->b, &pol) < 0)
		return -1;
	if (!pol)
		return no_policy(g);
	pub = spx_s3_policy_public(pol);
	json_decref(pol);
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "PolicyStatus", GW_S3_NS);
	spx_xml_elem(&x, "IsPublic", pub ? "true" : "false");
	spx_xml_close(&x);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}

/* ---- public access block -------------------------------------------- */

int s3_put_pab(struct gw_req *g, struct spx_http_req *req,
	       struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_apierr e;
	unsigned f;
	json_t *j;
	char *text;
	int rc;

	if (spx_s3_pab_xml(s->body.p, s->body.len, &f, &e) < 0)
		return s3_conf_fail(&e);
	j = json_object();
	for (size_t i = 0; i < SPX_S3_PAB_N; i++)
		json_object_set_new(j, spx_s3_pab_names[i],
				    json_boolean(f & (1u << i)));
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	rc = set_doc(g, resp, "pab", text, strlen(text), 200);
	free(text);
	return rc;
}

int s3_get_pab(struct gw_req *g, struct spx_http_req *req,
	       struct spx_http_resp *resp)
{
	struct spx_xml x;
	unsigned f;
	bool set;

	if (read_pab(g, &g->s3->b, &f, &set) < 0)
		return -1;
	if (!set)
		return s3_fail(g, 404, "NoSuchPublicAccessBlockConfiguration",
			       "The public access block configuration was "
			       "not found");
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "PublicAccessBlockConfiguration", GW_S3_NS);
	for (size_t i = 0; i < SPX_S3_PAB_N; i++)
		spx_xml_elem(&x, spx_s3_pab_names[i],
			     f & (1u << i) ? "true" : "false");
	spx_xml_close(&x);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}

int s3_delete_pab(struct gw_req *g, struct spx_http_req *req,
		  struct spx_http_resp *resp)
{
	return set_doc(g, resp, "pab", "{}", 2, 204);
}

/* ---- object ownership ----------------------------------------------- */

int s3_put_ownership(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_apierr e;
	const char *o;

	if (spx_s3_ownership_xml(s->body.p, s->body.len, &o, &e) < 0)
		return s3_conf_fail(&e);
	/* The default is kept as no document. */
	if (!strcmp(o, "BucketOwnerEnforced"))
		return set_doc(g, resp, "ownership", NULL, 0, 200);
	return set_doc(g, resp, "ownership", o, strlen(o), 200);
}

int s3_get_ownership(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct spx_xml x;
	const char *o;

	if (read_ownership(g, &g->s3->b, &o) < 0)
		return -1;
	if (!o)
		return s3_fail(g, 404, "OwnershipControlsNotFoundError",
			       "The bucket ownership controls were not found");
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "OwnershipControls", GW_S3_NS);
	spx_xml_open(&x, "Rule");
	spx_xml_elem(&x, "ObjectOwnership", o);
	spx_xml_close(&x);
	spx_xml_close(&x);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}

int s3_delete_ownership(struct gw_req *g, struct spx_http_req *req,
			struct spx_http_resp *resp)
{
	return set_doc(g, resp, "ownership", "none", 4, 204);
}

/* ---- ACLs: writing and reading them -------------------------------- */

/* Does h carry an x-amz-grant-* header (S3's five)? */
static bool has_grants(const struct spx_kvlist *h)
{
	static const char *const grants[] = {
		"x-amz-grant-full-control", "x-amz-grant-read",
		"x-amz-grant-read-acp",	    "x-amz-grant-write",
		"x-amz-grant-write-acp",
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(grants); i++)
		if (spx_kv_geti(h, grants[i]))
			return true;
	return false;
}

/* BlockPublicAcls: a public ACL is refused, as S3 refuses it. */
static int block_public(struct gw_req *g, const struct spx_obj_bucket *b,
			const json_t *acl)
{
	unsigned pab;
	bool set;

	if (!spx_s3_acl_public(acl))
		return 0;
	if (read_pab(g, b, &pab, &set) < 0)
		return -1;
	if (pab & SPX_S3_PAB_BLOCK_ACLS)
		return s3_fail(g, 403, "AccessDenied", "Access Denied");
	return 0;
}

/* The ACL of headers h for a resource of owner (bucket_owner: for an
 * object), or NULL: *out; -1 recorded. */
static int acl_of_headers(struct gw_req *g, const struct spx_kvlist *h,
			  const struct spx_obj_bucket *b, const char *owner,
			  const char *bucket_owner, json_t **out)
{
	struct spx_apierr e;

	if (spx_s3_acl_headers(h, owner, bucket_owner, out, &e) < 0)
		return s3_conf_fail(&e);
	if (*out && block_public(g, b, *out) < 0) {
		json_decref(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* ACL headers on a write (PutObject, CopyObject, CreateMultipartUpload,
 * a form's acl field). Under BucketOwnerEnforced only an ACL that says
 * what enforcement does is accepted, as S3 does: bucket-owner-full-control,
 * or private from the bucket owner's account (rclone sends it on every
 * write). Where ACLs are enabled the object is its writer's (the bucket
 * owner's for an anonymous writer, and under BucketOwnerPreferred for a
 * writer that grants the bucket owner full control). */
int s3_acl_write_check(struct gw_req *g, const struct spx_kvlist *h,
		       const struct spx_obj_bucket *b)
{
	const char *acl = spx_kv_geti(h, "x-amz-acl");
	const char *writer = g->authed ? g->who.account : NULL;
	const char *own, *owner;
	bool grant = has_grants(h);
	json_t *j;

	/* The bucket owner writing without an ACL: the default, nothing to
	 * read. */
	if (!acl && !grant && writer && !strcmp(writer, b->owner))
		return 0;
	if (read_ownership(g, b, &own) < 0)
		return -1;
	if (enforced(own)) {
		if (!acl && !grant)
			return 0;
		/* What enforcement does anyway: the bucket owner holds every
		 * right (private, when the writer is the owner). */
		if (!grant && (!strcmp(acl, "bucket-owner-full-control") ||
			       (!strcmp(acl, "private") && writer &&
				!strcmp(writer, b->owner))))
			return 0;
		return s3_fail(g, 400, "AccessControlListNotSupported",
			       "The bucket does not allow ACLs");
	}
	owner = writer ? writer : b->owner;
	if (own && !strcmp(own, "BucketOwnerPreferred") && acl &&
	    !strcmp(acl, "bucket-owner-full-control"))
		owner = b->owner;
	if (acl_of_headers(g, h, b, owner, b->owner, &j) < 0)
		return -1;
	if (!j)
		j = spx_s3_acl_private(owner);
	free(g->s3->acl);
	g->s3->acl = spx_s3_acl_is_private(j, b->owner)
			     ? NULL
			     : json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return 0;
}

/* m's sys without name. */
static void sys_drop(struct spx_obj_meta *m, const char *name)
{
	struct spx_kvlist keep = SPX_KVLIST_INIT;

	for (size_t i = 0; i < m->sys.n; i++)
		if (strcasecmp(m->sys.v[i].k, name))
			spx_kv_add(&keep, m->sys.v[i].k, m->sys.v[i].v);
	spx_kv_free(&m->sys);
	m->sys = keep;
}

void s3_acl_meta(struct gw_req *g, struct spx_obj_meta *m)
{
	sys_drop(m, S3_ACL_SYS);
	if (g->s3->acl)
		spx_kv_add(&m->sys, S3_ACL_SYS, g->s3->acl);
}

/* CreateBucket's ACL headers, where its ownership enables ACLs: the new
 * bucket's ACL (*out, NULL for private), checked against the public
 * access block new buckets get. */
int s3_acl_create(struct gw_req *g, struct spx_http_req *req,
		  const char *own, char **out)
{
	struct spx_apierr e;
	json_t *j;

	*out = NULL;
	if (spx_s3_acl_headers(&req->headers, g->who.account, NULL, &j, &e) < 0)
		return s3_conf_fail(&e);
	if (!j)
		return 0;
	if (enforced(own) && !spx_s3_acl_is_private(j, g->who.account)) {
		json_decref(j);
		return s3_fail(g, 400, "InvalidBucketAclWithObjectOwnership",
			       "Bucket cannot have ACLs set with "
			       "ObjectOwnership's BucketOwnerEnforced setting");
	}
	if (spx_s3_acl_public(j) && g->gw->self->gw.s3_public_access_block) {
		json_decref(j);
		return s3_fail(g, 400, "InvalidBucketAclWithBlockPublicAccessError",
			       "Bucket cannot have public ACLs set with "
			       "BlockPublicAccess enabled");
	}
	if (!spx_s3_acl_is_private(j, g->who.account))
		*out = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return 0;
}

/* The ACL as S3 answers it. */
static void render_acl(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp, const json_t *acl)
{
	struct spx_xml x;
	size_t i;
	json_t *gr;

	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "AccessControlPolicy", GW_S3_NS);
	spx_xml_open(&x, "Owner");
	spx_xml_elem(&x, "ID", spx_s3_acl_owner(acl));
	spx_xml_close(&x);
	spx_xml_open(&x, "AccessControlList");
	json_array_foreach(json_object_get(acl, "Grants"), i, gr) {
		const char *type = json_string_value(json_object_get(gr, "Type"));
		bool group = !strcmp(type, "Group");

		spx_xml_open(&x, "Grant");
		spx_xml_open(&x, "Grantee");
		spx_xml_attr(&x, "xmlns:xsi",
			     "http://www.w3.org/2001/XMLSchema-instance");
		spx_xml_attr(&x, "xsi:type", type);
		spx_xml_elem(&x, group ? "URI" : "ID",
			     json_string_value(json_object_get(
				     gr, group ? "URI" : "ID")));
		spx_xml_close(&x);
		spx_xml_elem(&x, "Permission",
			     json_string_value(
				     json_object_get(gr, "Permission")));
		spx_xml_close(&x);
	}
	spx_xml_close(&x);
	spx_xml_close(&x);
	gw_xml_finish(g, req, resp, &x);
}

int s3_get_bucket_acl(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	json_t *acl;

	if (read_bucket_acl(g, &g->s3->b, &acl) < 0)
		return -1;
	render_acl(g, req, resp, acl);
	json_decref(acl);
	return 0;
}

int s3_get_object_acl(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	const char *want;
	json_t *acl;

	if (s3_stat_named(g, &want, &m) < 0) {
		spx_obj_meta_release(&m);
		return -1;
	}
	s3_version_header(resp, want || s->b.versioning != SPX_OBJ_UNVERSIONED,
			  m.vid);
	acl = object_acl(&m, &s->b);
	spx_obj_meta_release(&m);
	render_acl(g, req, resp, acl);
	json_decref(acl);
	return 0;
}

/* spx_obj_update's change for PutObjectAcl: ctx the ACL kept, or NULL. */
static int set_object_acl(void *ctx, struct spx_obj_meta *m)
{
	sys_drop(m, S3_ACL_SYS);
	if (ctx)
		spx_kv_add(&m->sys, S3_ACL_SYS, ctx);
	return 0;
}

/* PutBucketAcl, PutObjectAcl: the ACL in headers or in the body, for
 * the resource's owner (an object's stays its own). Under
 * BucketOwnerEnforced only the bucket owner's FULL_CONTROL alone is
 * taken, and changes nothing (s3cmd puts back the ACL it read after
 * each copy). */
int s3_put_acl(struct gw_req *g, struct spx_http_req *req,
	       struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *own, *owner = s->b.owner, *want = NULL;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	char vid[SPX_OBJ_VID_SIZE], *text = NULL;
	json_t *cur = NULL, *acl = NULL;
	struct spx_apierr e;
	int rc = -1;

	if (s->key) {
		if (s3_stat_named(g, &want, &m) < 0)
			goto out;
		cur = object_acl(&m, &s->b);
		owner = spx_s3_acl_owner(cur);
	}
	if (s->body.len) {
		if (spx_kv_geti(&req->headers, "x-amz-acl") ||
		    has_grants(&req->headers)) {
			s3_fail(g, 400, "UnexpectedContent",
				"This request does not support content");
			goto out;
		}
		if (spx_s3_acl_xml(s->body.p, s->body.len, owner, &acl, &e) <
		    0) {
			s3_conf_fail(&e);
			goto out;
		}
	} else {
		if (spx_s3_acl_headers(&req->headers, owner,
				       s->key ? s->b.owner : NULL, &acl,
				       &e) < 0) {
			s3_conf_fail(&e);
			goto out;
		}
		if (!acl) {
			s3_fail(g, 400, "MissingSecurityHeader",
				"Your request was missing a required header");
			goto out;
		}
	}
	if (read_ownership(g, &s->b, &own) < 0)
		goto out;
	if (enforced(own)) {
		if (!spx_s3_acl_is_private(acl, s->b.owner)) {
			s3_fail(g, 400, "AccessControlListNotSupported",
				"The bucket does not allow ACLs");
			goto out;
		}
		s3_empty_answer(g, resp, 200);
		rc = 0;
		goto out;
	}
	if (block_public(g, &s->b, acl) < 0)
		goto out;
	if (!spx_s3_acl_is_private(acl, s->b.owner))
		text = json_dumps(acl, JSON_COMPACT);
	if (!s->key) {
		rc = set_doc(g, resp, "acl", text, text ? strlen(text) : 0,
			     200);
		goto out;
	}
	rc = spx_obj_update(g->gw->obj, &s->b, s->key, want, set_object_acl,
			    text, vid);
	if (rc < 0) {
		rc = s3_obj_fail(g, rc);
		goto out;
	}
	s3_version_header(resp, want || s->b.versioning != SPX_OBJ_UNVERSIONED,
			  vid);
	s3_empty_answer(g, resp, 200);
out:
	free(text);
	json_decref(acl);
	json_decref(cur);
	spx_obj_meta_release(&m);
	return rc;
}
