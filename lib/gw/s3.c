/* s3.c: the S3 REST API over the object store (lib/obj): the request
 * pipeline, the table of operations, routing, errors and the helpers
 * every operation shares (s3_int.h says which file holds which).
 *
 * A request is routed by the first row of the table that matches its
 * method, its target (the service, a bucket, or an object: path-style
 * /BUCKET/KEY or the bucket in a virtual-host Host, the key decoded once)
 * and its subresources and headers. Object bodies stream (S3_STREAM):
 * PutObject and UploadPart start an object writer in begin and feed it
 * each piece; nothing becomes visible before the commit at the end. Any
 * other body (XML) is small and gathered under a limit, decoded from
 * aws-chunked and its chunk signatures checked when it was sent so.
 */
#include "spx.h"

#include <ctype.h>

#include "gw/s3_int.h"
#include "gw/s3conf.h"
#include "http/query.h"

/* ---- the operations ------------------------------------------------- */

/* In order: the first row that matches a request serves it, so rows that
 * need a subresource or a header come before the plain one of the same
 * method and target. A subresource that some row names (below) is never
 * served by a row that does not: DELETE /bucket?versioning is no
 * DeleteBucket. */
static const struct s3_op ops[] = {
	{ "ListBuckets", "GET", S3_SERVICE, NULL, NULL, 0, .run = s3_list_buckets },
	{ "GetBucketVersioning", "GET", S3_BUCKET, "versioning", NULL, S3_OWN,
	  .run = s3_get_versioning },
	{ "PutBucketVersioning", "PUT", S3_BUCKET, "versioning", NULL, S3_OWN,
	  .run = s3_put_versioning },
	{ "ListObjectVersions", "GET", S3_BUCKET, "versions", NULL, S3_OWN,
	  .run = s3_list_versions },
	{ "GetBucketTagging", "GET", S3_BUCKET, "tagging", NULL, S3_OWN,
	  .run = s3_get_bucket_tagging },
	{ "PutBucketTagging", "PUT", S3_BUCKET, "tagging", NULL, S3_OWN,
	  .run = s3_put_bucket_tagging },
	{ "DeleteBucketTagging", "DELETE", S3_BUCKET, "tagging", NULL, S3_OWN,
	  .run = s3_delete_bucket_tagging },
	{ "GetBucketCors", "GET", S3_BUCKET, "cors", NULL, S3_OWN,
	  .run = s3_get_bucket_cors },
	{ "PutBucketCors", "PUT", S3_BUCKET, "cors", NULL, S3_OWN | S3_DIGEST,
	  .run = s3_put_bucket_cors },
	{ "DeleteBucketCors", "DELETE", S3_BUCKET, "cors", NULL, S3_OWN,
	  .run = s3_delete_bucket_cors },
	{ "GetBucketLifecycleConfiguration", "GET", S3_BUCKET, "lifecycle",
	  NULL, S3_OWN, .run = s3_get_bucket_lifecycle },
	{ "PutBucketLifecycleConfiguration", "PUT", S3_BUCKET, "lifecycle",
	  NULL, S3_OWN | S3_DIGEST, .run = s3_put_bucket_lifecycle },
	{ "DeleteBucketLifecycle", "DELETE", S3_BUCKET, "lifecycle", NULL,
	  S3_OWN, .run = s3_delete_bucket_lifecycle },
	{ "GetBucketPolicy", "GET", S3_BUCKET, "policy", NULL, S3_OWN,
	  .run = s3_get_bucket_policy },
	/* Content-MD5 is not asked for: minio-go sends none, and S3 takes
	 * policies without. */
	{ "PutBucketPolicy", "PUT", S3_BUCKET, "policy", NULL, S3_OWN,
	  .run = s3_put_bucket_policy },
	{ "DeleteBucketPolicy", "DELETE", S3_BUCKET, "policy", NULL, S3_OWN,
	  .run = s3_delete_bucket_policy },
	{ "GetBucketPolicyStatus", "GET", S3_BUCKET, "policyStatus", NULL,
	  S3_OWN, .run = s3_get_policy_status },
	{ "GetPublicAccessBlock", "GET", S3_BUCKET, "publicAccessBlock", NULL,
	  S3_OWN, .run = s3_get_pab },
	{ "PutPublicAccessBlock", "PUT", S3_BUCKET, "publicAccessBlock", NULL,
	  S3_OWN | S3_DIGEST, .run = s3_put_pab },
	{ "DeletePublicAccessBlock", "DELETE", S3_BUCKET, "publicAccessBlock",
	  NULL, S3_OWN, .run = s3_delete_pab },
	{ "GetBucketOwnershipControls", "GET", S3_BUCKET, "ownershipControls",
	  NULL, S3_OWN, .run = s3_get_ownership },
	{ "PutBucketOwnershipControls", "PUT", S3_BUCKET, "ownershipControls",
	  NULL, S3_OWN | S3_DIGEST, .run = s3_put_ownership },
	{ "DeleteBucketOwnershipControls", "DELETE", S3_BUCKET,
	  "ownershipControls", NULL, S3_OWN, .run = s3_delete_ownership },
	{ "GetObjectLockConfiguration", "GET", S3_BUCKET, "object-lock", NULL,
	  S3_OWN, .run = s3_get_lock_conf },
	{ "PutObjectLockConfiguration", "PUT", S3_BUCKET, "object-lock", NULL,
	  S3_OWN | S3_DIGEST, .run = s3_put_lock_conf },
	{ "GetObjectRetention", "GET", S3_OBJECT, "retention", NULL, S3_OWN,
	  .run = s3_get_retention },
	{ "PutObjectRetention", "PUT", S3_OBJECT, "retention", NULL, S3_OWN,
	  .run = s3_put_retention },
	{ "GetObjectLegalHold", "GET", S3_OBJECT, "legal-hold", NULL, S3_OWN,
	  .run = s3_get_legal_hold },
	{ "PutObjectLegalHold", "PUT", S3_OBJECT, "legal-hold", NULL, S3_OWN,
	  .run = s3_put_legal_hold },
	{ "GetBucketAcl", "GET", S3_BUCKET, "acl", NULL, S3_OWN,
	  .run = s3_get_bucket_acl },
	{ "PutBucketAcl", "PUT", S3_BUCKET, "acl", NULL, S3_OWN,
	  .run = s3_put_acl },
	{ "GetObjectAcl", "GET", S3_OBJECT, "acl", NULL, S3_OWN,
	  .run = s3_get_object_acl },
	{ "PutObjectAcl", "PUT", S3_OBJECT, "acl", NULL, S3_OWN,
	  .run = s3_put_acl },
	{ "GetBucketLocation", "GET", S3_BUCKET, "location", NULL, S3_OWN,
	  .run = s3_get_location },
	{ "ListMultipartUploads", "GET", S3_BUCKET, "uploads", NULL, S3_OWN,
	  .run = s3_list_uploads },
	{ "ListObjectsV2", "GET", S3_BUCKET, "list-type", NULL, S3_OWN,
	  .run = s3_list_objects_v2 },
	{ "ListObjects", "GET", S3_BUCKET, NULL, NULL, S3_OWN,
	  .run = s3_list_objects },
	{ "CreateBucket", "PUT", S3_BUCKET, NULL, NULL, 0,
	  .run = s3_create_bucket },
	{ "HeadBucket", "HEAD", S3_BUCKET, NULL, NULL, S3_OWN,
	  .run = s3_head_bucket },
	{ "DeleteBucket", "DELETE", S3_BUCKET, NULL, NULL, S3_OWN,
	  .run = s3_delete_bucket },
	{ "DeleteObjects", "POST", S3_BUCKET, "delete", NULL, S3_OWN,
	  .run = s3_delete_objects },
	{ "GetObjectTagging", "GET", S3_OBJECT, "tagging", NULL, S3_OWN,
	  .run = s3_get_object_tagging },
	{ "PutObjectTagging", "PUT", S3_OBJECT, "tagging", NULL, S3_OWN,
	  .run = s3_put_object_tagging },
	{ "DeleteObjectTagging", "DELETE", S3_OBJECT, "tagging", NULL, S3_OWN,
	  .run = s3_delete_object_tagging },
	{ "UploadPartCopy", "PUT", S3_OBJECT, "uploadId|partNumber",
	  "x-amz-copy-source", S3_OWN, .run = s3_upload_part_copy },
	{ "UploadPart", "PUT", S3_OBJECT, "uploadId|partNumber", NULL,
	  S3_OWN | S3_STREAM, s3_put_begin, s3_put_body, s3_put_end },
	{ "CopyObject", "PUT", S3_OBJECT, NULL, "x-amz-copy-source",
	  S3_OWN | S3_ACL,
	  .run = s3_copy_object },
	{ "PutObject", "PUT", S3_OBJECT, NULL, NULL,
	  S3_OWN | S3_STREAM | S3_ACL,
	  s3_put_begin, s3_put_body, s3_put_end },
	{ "ListParts", "GET", S3_OBJECT, "uploadId", NULL, S3_OWN,
	  .run = s3_list_parts },
	{ "GetObjectAttributes", "GET", S3_OBJECT, "attributes", NULL, S3_OWN,
	  .run = s3_get_attributes },
	{ "GetObject", "GET", S3_OBJECT, NULL, NULL, S3_OWN,
	  .run = s3_get_object },
	{ "HeadObject", "HEAD", S3_OBJECT, NULL, NULL, S3_OWN,
	  .run = s3_get_object },
	{ "AbortMultipartUpload", "DELETE", S3_OBJECT, "uploadId", NULL, S3_OWN,
	  .run = s3_abort_mpu },
	{ "DeleteObject", "DELETE", S3_OBJECT, NULL, NULL, S3_OWN,
	  .run = s3_delete_object },
	{ "CreateMultipartUpload", "POST", S3_OBJECT, "uploads", NULL,
	  S3_OWN | S3_ACL,
	  .run = s3_create_mpu },
	{ "CompleteMultipartUpload", "POST", S3_OBJECT, "uploadId", NULL,
	  S3_OWN | S3_OBJCK, .run = s3_complete_mpu },
};

/* The subresources the rows name: a request with one of them is served
 * only by a row that names it. */
static const char *const claimed[] = {
	"versioning", "versions", "tagging",  "location", "uploads",
	"uploadId",   "partNumber", "delete", "list-type",
	"attributes", "cors",	    "policy",	"policyStatus",
	"publicAccessBlock", "ownershipControls", "acl", "object-lock",
	"retention", "legal-hold", "lifecycle",
};

/* Subresources this gateway does not serve yet: NotImplemented rather
 * than an answer that pretends. */
static const char *const later[] = {
	"website",	 "logging",
	"notification", "replication",	 "encryption",
	"torrent",     "restore",	 "select",
	"accelerate",  "requestPayment", "analytics",
	"metrics",     "inventory",	 "intelligent-tiering",
};

bool s3_has(const struct gw_req *g, const char *p)
{
	return spx_kv_get(&g->params, p) != NULL;
}

/* Does the request have one of the '|'-separated subresources of alt?
 * (Every S3 request routes through this for each candidate operation:
 * no copies, and nothing to do for a request without parameters.) */
static bool has_any(const struct gw_req *g, const char *alt)
{
	for (size_t i = 0; i < g->params.n; i++) {
		const char *k = g->params.v[i].k;
		size_t kl = strlen(k);

		for (const char *p = alt; *p;) {
			size_t n = strcspn(p, "|");

			if (n == kl && !memcmp(p, k, n))
				return true;
			p += n + (p[n] == '|');
		}
	}
	return false;
}

static bool matches(const struct gw_req *g, struct spx_http_req *req,
		    const struct s3_op *op, enum s3_where where)
{
	if (op->where != where || strcmp(op->method, req->method))
		return false;
	if (op->sub && !has_any(g, op->sub))
		return false;
	if (!op->sub)
		for (size_t i = 0; i < SPX_ARRAY_SIZE(claimed); i++)
			if (s3_has(g, claimed[i]))
				return false;
	if (op->header && op->header[0] == '!')
		return !spx_kv_geti(&req->headers, op->header + 1);
	return !op->header || spx_kv_geti(&req->headers, op->header);
}

/* The operation a request asks for, or NULL (NotImplemented). */
static const struct s3_op *route(struct gw_req *g, struct spx_http_req *req)
{
	const struct gw_s3 *s = g->s3;
	enum s3_where where = !s->bucket ? S3_SERVICE
			      : !s->key	 ? S3_BUCKET
					 : S3_OBJECT;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(later); i++)
		if (s3_has(g, later[i]))
			return NULL;
	/* Features that must not be accepted and then ignored:
	 * encryption. */
	for (size_t i = 0; i < req->headers.n; i++) {
		const char *k = req->headers.v[i].k;

		if (!strncasecmp(k, "x-amz-server-side-encryption", 28) ||
		    !strncasecmp(k, "x-amz-copy-source-server-side-encryption",
				 40))
			return NULL;
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(ops); i++)
		if (matches(g, req, &ops[i], where))
			return &ops[i];
	return NULL;
}

/* The bucket named by a virtual-host-style Host header
 * ("photos.s3.example.com[:port]" with s3_domain "s3.example.com"), or
 * NULL for path style. */
char *gw_s3_host_bucket(const struct gw_req *g, struct spx_http_req *req)
{
	const char *dom = g->gw->self->gw.s3_domain;
	const char *h = spx_kv_geti(&req->headers, "Host");
	size_t hl, dl = dom ? strlen(dom) : 0;

	if (!dom || !h)
		return NULL;
	hl = strcspn(h, ":");
	if (h[0] == '[' || hl <= dl + 1 || h[hl - dl - 1] != '.' ||
	    strncasecmp(h + hl - dl, dom, dl))
		return NULL;
	return spx_strndup(h, hl - dl - 1);
}

/* /bucket/key (or /key with a bucket in Host) -> bucket and decoded key
 * (NULL when absent). An encoded NUL is refused: the names are kept as C
 * strings, and "important%00.tmp" must not become "important". */
static int parse_target(struct gw_req *g, struct spx_http_req *req)
{
	struct gw_s3 *s = g->s3;
	const char *p = req->path, *slash;
	struct spx_buf b = SPX_BUF_INIT;

	if (p[0] != '/')
		return spx_error(SPX_USAGE, "the path must start with '/'");
	p++;
	s->bucket = gw_s3_host_bucket(g, req);
	if (!s->bucket) {
		if (!*p)
			return 0;
		slash = strchr(p, '/');
		if (spx_uri_decode(p, slash ? (size_t)(slash - p) : strlen(p),
				   SPX_URI_NONUL, &b) < 0) {
			spx_buf_release(&b);
			return -1;
		}
		s->bucket = spx_buf_detach(&b, NULL);
		if (!slash || !slash[1])
			return 0;
		p = slash + 1;
	} else if (!*p) {
		return 0;
	}
	if (spx_uri_decode(p, strlen(p), SPX_URI_NONUL, &b) < 0) {
		spx_buf_release(&b);
		return -1;
	}
	s->key = spx_buf_detach(&b, NULL);
	return 0;
}

/* ---- the store ------------------------------------------------------ */

int gw_s3_open(struct spx_gw *gw)
{
	const struct spx_conf_node *n = gw->self;
	struct spx_obj_opts o = {
		.drives = (const char *const *)n->obj.drives.v,
		.ndrives = n->obj.drives.n,
		.data = n->obj.data,
		.parity = n->obj.parity,
		/* No request waits for an index's merge. */
		.flags = SPX_OBJ_CREATE | SPX_OBJ_FOLD_AWAY,
	};

	if (n->obj.drives.n != (size_t)(n->obj.data + n->obj.parity))
		return spx_error(SPX_USAGE,
				 "[nodes.%s.obj]: %zu drives for RS(%d,%d); "
				 "need data + parity = %d",
				 n->name, n->obj.drives.n, n->obj.data,
				 n->obj.parity, n->obj.data + n->obj.parity);
	return spx_obj_open(&o, &gw->obj) < 0 ? -1 : 0;
}

void gw_s3_close(struct spx_gw *gw)
{
	spx_obj_close(gw->obj);
	gw->obj = NULL;
}

void gw_s3_free(struct gw_req *g)
{
	struct gw_s3 *s = g->s3;

	if (!s)
		return;
	spx_obj_writer_abort(s->w);
	if (s->chunked)
		spx_chunked_release(&s->ch);
	if (s->has_ck)
		spx_cksum_release(&s->ck);
	spx_buf_release(&s->body);
	spx_kv_free(&s->err_headers);
	spx_kv_free(&s->cors);
	s3_post_free(s->post);
	json_decref(s->acc_policy);
	free(s->acl);
	free(s->bucket);
	free(s->key);
	free(s);
	g->s3 = NULL;
}

/* ---- errors --------------------------------------------------------- */

/* The engine's codes as S3 words them, by -rc. */
static const struct spx_apierr obj_errs[] = {
	[-SPX_OBJ_INTERNAL] = { 500, "InternalError",
				"We encountered an internal error. Please try "
				"again." },
	[-SPX_OBJ_NO_SUCH_BUCKET] = { 404, "NoSuchBucket",
				      "The specified bucket does not exist" },
	[-SPX_OBJ_NO_SUCH_KEY] = { 404, "NoSuchKey",
				   "The specified key does not exist." },
	[-SPX_OBJ_BUCKET_NOT_EMPTY] = { 409, "BucketNotEmpty",
					"The bucket you tried to delete is "
					"not empty" },
	[-SPX_OBJ_BUCKET_OWNED] = { 409, "BucketAlreadyOwnedByYou",
				    "Your previous request to create the "
				    "named bucket succeeded and you already "
				    "own it." },
	[-SPX_OBJ_BUCKET_EXISTS] = { 409, "BucketAlreadyExists",
				     "The requested bucket name is not "
				     "available. The bucket namespace is "
				     "shared by all users of the system. "
				     "Please select a different name and try "
				     "again." },
	[-SPX_OBJ_INVALID_BUCKET] = { 400, "InvalidBucketName",
				      "The specified bucket is not valid." },
	[-SPX_OBJ_KEY_TOO_LONG] = { 400, "KeyTooLongError",
				    "Your key is too long" },
	[-SPX_OBJ_INVALID_ARG] = { 400, "InvalidArgument", "Invalid Argument" },
	[-SPX_OBJ_INVALID_PART] = { 400, "InvalidPart",
				    "One or more of the specified parts could "
				    "not be found.  The part may not have "
				    "been uploaded, or the specified entity "
				    "tag may not match the part's entity "
				    "tag." },
	[-SPX_OBJ_INVALID_PART_ORDER] = { 400, "InvalidPartOrder",
					  "The list of parts was not in "
					  "ascending order. Parts must be "
					  "ordered by part number." },
	[-SPX_OBJ_ENTITY_TOO_SMALL] = { 400, "EntityTooSmall",
					"Your proposed upload is smaller than "
					"the minimum allowed object size." },
	[-SPX_OBJ_NO_SUCH_UPLOAD] = { 404, "NoSuchUpload",
				      "The specified upload does not exist. "
				      "The upload ID may be invalid, or the "
				      "upload may have been aborted or "
				      "completed." },
	[-SPX_OBJ_NO_SPACE] = { 507, "InsufficientStorage",
				"Insufficient storage to complete the "
				"request." },
	[-SPX_OBJ_BAD_DIGEST] = { 400, "BadDigest",
				  "The Content-MD5 you specified did not match "
				  "what we received." },
	[-SPX_OBJ_INVALID_RANGE] = { 416, "InvalidRange",
				     "The requested range is not "
				     "satisfiable" },
	[-SPX_OBJ_NO_SUCH_VERSION] = { 404, "NoSuchVersion",
				       "The specified version does not "
				       "exist." },
	[-SPX_OBJ_DELETE_MARKER] = { 405, "MethodNotAllowed",
				     "The specified method is not allowed "
				     "against this resource." },
	[-SPX_OBJ_INVALID_VERSION] = { 400, "InvalidArgument",
				       "Invalid version id specified" },
	[-SPX_OBJ_PRECONDITION] = { 412, "PreconditionFailed",
				    "At least one of the pre-conditions you "
				    "specified did not hold" },
	[-SPX_OBJ_LOCKED] = { 403, "AccessDenied",
			      "Access Denied because object protected by "
			      "object lock." },
	[-SPX_OBJ_LOST] = { 500, "InternalError",
			    "We encountered an internal error. Please try "
			    "again." },
};
_Static_assert(SPX_ARRAY_SIZE(obj_errs) == 1 - SPX_OBJ_RC_MIN,
	       "every lib/obj code has its S3 error");

static int status_of(int http)
{
	return http >= 500		  ? SPX_FAIL
	       : http == 404 || http == 409 || http == 412 ? SPX_NO
							   : SPX_USAGE;
}

int s3_fail(struct gw_req *g, int http, const char *code, const char *fmt,
	    ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return spx_api_error(status_of(http), http, code, "%s", msg);
}

const struct spx_apierr *s3_obj_err(int rc)
{
	return rc < 0 && rc >= SPX_OBJ_RC_MIN && obj_errs[-rc].code
		       ? &obj_errs[-rc]
		       : &obj_errs[-SPX_OBJ_INTERNAL];
}

int s3_obj_fail(struct gw_req *g, int rc)
{
	const struct spx_apierr *e = s3_obj_err(rc);

	if (e->http >= 500)
		spx_log(SPX_LOG_ERROR, "s3: %s: %s", g->reqid, spx_errmsg());
	return s3_fail(g, e->http, e->code, "%s", e->message);
}

int s3_conf_fail(const struct spx_apierr *e)
{
	return spx_api_error(status_of(e->http), e->http, e->code, "%s",
			     e->message);
}

int s3_not_impl(void)
{
	return spx_api_error(SPX_USAGE, 501, "NotImplemented",
			     "A header you provided implies functionality "
			     "that is not implemented");
}

int s3_malformed(void)
{
	return spx_api_error(SPX_USAGE, 400, "MalformedXML",
			     "The XML you provided was not well-formed or did "
			     "not validate against our published schema");
}

void s3_err_header(struct gw_req *g, const char *k, const char *v)
{
	spx_kv_add(&g->s3->err_headers, k, v);
}

void s3_marker_headers(struct gw_req *g, const char *vid, int rc)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;

	if (rc == SPX_OBJ_DELETE_MARKER) {
		s3_err_header(g, "x-amz-delete-marker", "true");
		s3_err_header(g, "x-amz-version-id", vid);
		s3_err_header(g, "Allow", "DELETE");
		return;
	}
	if (rc == SPX_OBJ_NO_SUCH_KEY && !vid &&
	    spx_obj_stat_version(g->gw->obj, &g->s3->b, g->s3->key, NULL,
				 &m) == 0 &&
	    m.delete_marker) {
		s3_err_header(g, "x-amz-delete-marker", "true");
		s3_err_header(g, "x-amz-version-id", spx_obj_vid_name(m.vid));
	}
	spx_obj_meta_release(&m);
}

void s3_headless(struct spx_http_req *req, struct spx_http_resp *resp)
{
	if (!strcmp(req->method, "HEAD"))
		spx_buf_reset(&resp->body);
}

/* The one place an S3 error is answered: the code and message a handler
 * recorded (spx_api_error), else, for a failure recorded some other way,
 * its class; the headers the error carries; no body for HEAD. */
static void answer_error(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	char code[SPX_API_CODE_MAX], msg[1024];
	const char *c;
	int http = 500;

	c = spx_api_errcode(&http);
	if (c) {
		snprintf(code, sizeof(code), "%s", c);
		snprintf(msg, sizeof(msg), "%s", spx_errmsg());
	} else if (spx_errstatus() == SPX_USAGE) {
		http = 400;
		snprintf(code, sizeof(code), "InvalidRequest");
		snprintf(msg, sizeof(msg), "%s", spx_errmsg());
	} else {
		spx_log(SPX_LOG_ERROR, "s3: %s: %s", g->reqid, spx_errmsg());
		http = 500;
		snprintf(code, sizeof(code), "InternalError");
		snprintf(msg, sizeof(msg), "%s", obj_errs[1].message);
	}
	gw_error(g, req, resp, http, code, "%s", msg);
	for (size_t i = 0; g->s3 && i < g->s3->err_headers.n; i++)
		spx_kv_add(&resp->headers, g->s3->err_headers.v[i].k,
			   g->s3->err_headers.v[i].v);
	s3_headless(req, resp);
}

/* ---- helpers -------------------------------------------------------- */

void s3_empty_answer(struct gw_req *g, struct spx_http_resp *resp,
		     int status)
{
	resp->status = status;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	resp->ready = true;
}

int s3_empty_or_fail(struct gw_req *g, struct spx_http_resp *resp, int rc,
		     int status)
{
	if (rc < 0)
		return s3_obj_fail(g, rc);
	s3_empty_answer(g, resp, status);
	return 0;
}

void s3_version_header(struct spx_http_resp *resp, bool show,
		       const char *vid)
{
	if (show)
		spx_kv_add(&resp->headers, "x-amz-version-id",
			   spx_obj_vid_name(vid));
}

int s3_version_param(struct gw_req *g, const char **vid)
{
	*vid = spx_kv_get(&g->params, "versionId");
	if (*vid && !spx_obj_vid_valid(*vid))
		return s3_obj_fail(g, SPX_OBJ_INVALID_VERSION);
	return 0;
}

int s3_stat_named(struct gw_req *g, const char **want,
		  struct spx_obj_meta *m)
{
	struct gw_s3 *s = g->s3;
	int rc;

	if (s3_version_param(g, want) < 0)
		return -1;
	rc = spx_obj_stat_version(g->gw->obj, &s->b, s->key, *want, m);
	if (rc == 0 && m->delete_marker)
		rc = *want ? SPX_OBJ_DELETE_MARKER : SPX_OBJ_NO_SUCH_KEY;
	if (rc < 0) {
		s3_marker_headers(g, *want, rc);
		return s3_obj_fail(g, rc);
	}
	return 0;
}

int s3_find_bucket(struct gw_req *g, const char *name,
		   struct spx_obj_bucket *b)
{
	int rc;

	/* An invalid name cannot exist: S3 says NoSuchBucket for reads and
	 * InvalidBucketName for creation. */
	if (!spx_obj_bucket_name_valid(name))
		return s3_obj_fail(g, SPX_OBJ_NO_SUCH_BUCKET);
	rc = spx_obj_bucket_open(g->gw->obj, name, b);
	return rc < 0 ? s3_obj_fail(g, rc) : 0;
}

/* The system headers S3 stores with an object and returns on GET. */
static const char *const sys_headers[] = {
	"content-type",	    "cache-control",	"content-disposition",
	"content-encoding", "content-language", "expires",
	"x-amz-storage-class",
};

void s3_meta_from_headers(struct spx_http_req *req, struct spx_obj_meta *m)
{
	s3_meta_from_list(&req->headers, m);
}

void s3_meta_from_list(const struct spx_kvlist *h, struct spx_obj_meta *m)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(sys_headers); i++) {
		const char *v = spx_kv_geti(h, sys_headers[i]);

		if (!v)
			continue;
		/* STANDARD is the default S3 never names in a response. */
		if (!strcmp(sys_headers[i], "x-amz-storage-class") &&
		    !strcmp(v, "STANDARD"))
			continue;
		/* aws-chunked is the transfer's encoding, not the object's. */
		if (!strcmp(sys_headers[i], "content-encoding")) {
			if (!strcmp(v, "aws-chunked"))
				continue;
			if (!strncmp(v, "aws-chunked,", 12))
				v += 12 + strspn(v + 12, " ");
		}
		spx_kv_add(&m->sys, sys_headers[i], v);
	}
	if (!spx_kv_get(&m->sys, "content-type"))
		spx_kv_add(&m->sys, "content-type", "binary/octet-stream");
	for (size_t i = 0; i < h->n; i++) {
		const char *k = h->v[i].k;
		char low[256];
		size_t n = strlen(k);

		if (n >= sizeof(low) || strncasecmp(k, "x-amz-meta-", 11))
			continue;
		for (size_t j = 0; j <= n; j++)
			low[j] = (char)(k[j] >= 'A' && k[j] <= 'Z' ? k[j] | 0x20
								   : k[j]);
		spx_kv_add(&m->user, low, h->v[i].v);
	}
}

int s3_tags_from_header(struct gw_req *g, struct spx_http_req *req,
			struct spx_obj_meta *m)
{
	const char *h = spx_kv_geti(&req->headers, "x-amz-tagging");
	struct spx_apierr e;

	if (!h)
		return 0;
	spx_kv_free(&m->tags);
	if (spx_s3_tags_header(h, SPX_S3_TAGS_OBJECT, &m->tags, &e) < 0)
		return s3_conf_fail(&e);
	return 0;
}

const char *s3_cksum_key(enum spx_cksum_algo a)
{
	return spx_cksum_header(a) + strlen("x-amz-checksum-");
}

int s3_upload_algo(struct gw_req *g, const char *id, enum spx_cksum_algo *a,
		   bool *on, bool *full)
{
	struct spx_obj_meta info = SPX_OBJ_META_INIT;
	const char *al, *t;
	int rc = spx_obj_mpu_info(g->gw->obj, &g->s3->b, g->s3->key, id, &info);

	*on = false;
	if (full)
		*full = false;
	if (rc < 0) {
		spx_obj_meta_release(&info);
		return s3_obj_fail(g, rc);
	}
	al = spx_kv_get(&info.checksums, "algorithm");
	t = spx_kv_get(&info.checksums, "type");
	if (al && spx_cksum_from_name(al, a) == 0)
		*on = true;
	if (full && t && !strcmp(t, "FULL_OBJECT"))
		*full = true;
	spx_obj_meta_release(&info);
	return 0;
}

int s3_part_number(struct gw_req *g, int *part)
{
	const char *id = spx_kv_get(&g->params, "uploadId");
	const char *pn = spx_kv_get(&g->params, "partNumber");
	char *end = NULL;
	long n = pn ? strtol(pn, &end, 10) : 0;

	if (!id || !pn || !*pn || *end || n < 1 || n > SPX_OBJ_MAX_PARTS)
		return s3_fail(g, 400, "InvalidArgument",
			       "Part number must be an integer between 1 and "
			       "10000, inclusive");
	*part = (int)n;
	return 0;
}

/* ---- aws-chunked bodies --------------------------------------------- */

bool s3_streaming(const struct gw_req *g)
{
	return g->auth.payload == SPX_SIGV4_PAYLOAD_STREAMING ||
	       g->auth.payload == SPX_SIGV4_PAYLOAD_STREAMING_TRAILER ||
	       g->auth.payload == SPX_SIGV4_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
}

int s3_chunked_begin(struct gw_req *g, struct spx_http_req *req,
		     spx_chunked_out_fn out)
{
	struct gw_s3 *s = g->s3;
	const char *dl = spx_kv_geti(&req->headers,
				     "x-amz-decoded-content-length");
	char *e = NULL;
	long long d = dl ? strtoll(dl, &e, 10) : -1;

	if (dl && (*e || d < 0 || !*dl))
		return s3_fail(g, 400, "InvalidArgument",
			       "x-amz-decoded-content-length is invalid");
	if (spx_chunked_init(&s->ch, &g->auth, d, out, s) < 0)
		return s3_obj_fail(g, SPX_OBJ_INTERNAL);
	s->chunked = true;
	return 0;
}

static int chunked_error(enum spx_chunked_err e)
{
	struct spx_apierr st = spx_chunked_code(e);

	return spx_api_error(status_of(st.http), st.http, st.code, "%s",
			     st.message);
}

int s3_chunked_feed(struct gw_req *g, const char *data, size_t len)
{
	struct gw_s3 *s = g->s3;
	enum spx_chunked_err e = spx_chunked_feed(&s->ch, data, len);

	if (e == SPX_CHUNKED_OK)
		return 0;
	/* The output refused it: the writer's failure, or a gathered body
	 * over its limit. */
	if (e == SPX_CHUNKED_EOUTPUT)
		return s->werr ? s3_obj_fail(g, s->werr)
			       : s3_fail(g, 400, "MaxMessageLengthExceeded",
					 "Your request was too big.");
	return chunked_error(e);
}

int s3_chunked_end(struct gw_req *g)
{
	enum spx_chunked_err e = spx_chunked_finish(&g->s3->ch);

	return e == SPX_CHUNKED_OK ? 0 : chunked_error(e);
}

/* A gathered body, decoded from aws-chunked. */
static int feed_body(void *arg, const void *data, size_t len)
{
	struct gw_s3 *s = arg;

	if (s->body.len + len > S3_XML_BODY_MAX)
		return -1;
	spx_buf_add(&s->body, data, len);
	return 0;
}

/* ---- the pipeline --------------------------------------------------- */

/* The request's S3 state, its query and its target; NULL when answered
 * (InvalidURI). */
static struct gw_s3 *s3_start(struct gw_req *g, struct spx_http_req *req,
			      struct spx_http_resp *resp)
{
	struct gw_s3 *s = spx_calloc(1, sizeof(*s));

	g->s3 = s;
	spx_buf_init(&s->body, 0);
	if (spx_query_parse(req->query, strlen(req->query), 0, &g->params) <
		    0 ||
	    parse_target(g, req) < 0) {
		s3_fail(g, 400, "InvalidURI", "Couldn't parse the specified URI.");
		answer_error(g, req, resp);
		return NULL;
	}
	return s;
}

/* A made answer carries the request's CORS headers (an error answer
 * replaced whatever was added before it). */
static void cors_decorate(struct gw_req *g, struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;

	if (!s || !resp->ready || s->cors_added)
		return;
	for (size_t i = 0; i < s->cors.n; i++)
		spx_kv_add(&resp->headers, s->cors.v[i].k, s->cors.v[i].v);
	s->cors_added = true;
}

/* x-amz-expected-bucket-owner (or, for a copy's source,
 * x-amz-source-expected-bucket-owner) named by header, when the request
 * sends it: 400 InvalidBucketOwnerAWSAccountID unless it is an account
 * id (12 digits), as S3 answers. -1 recorded. */
static int expected_owner_valid(struct gw_req *g, struct spx_http_req *req,
				const char *header)
{
	const char *want = spx_kv_geti(&req->headers, header);
	size_t n = want ? strlen(want) : 0;

	if (!want)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)want[i]))
			n = 0;
	if (n != 12)
		return s3_fail(g, 400, "InvalidBucketOwnerAWSAccountID",
			       "The value of the expected bucket owner "
			       "parameter must be an AWS Account ID... [%.64s]",
			       want);
	return 0;
}

int s3_expected_owner(struct gw_req *g, struct spx_http_req *req,
		      const char *header, const struct spx_obj_bucket *b)
{
	const char *want = spx_kv_geti(&req->headers, header);

	if (expected_owner_valid(g, req, header) < 0)
		return -1;
	if (want && strcmp(want, b->owner))
		return s3_fail(g, 403, "AccessDenied", "Access Denied");
	return 0;
}

/* A SigV2 signature covers only the subresources its RESOURCE lists
 * (spx_sigv2_signs_param): one the router tells operations apart by but
 * that is outside it (publicAccessBlock, policyStatus, ...) could be
 * added to a signed or presigned URL to make it another operation, so
 * such a request is refused. list-type is let through: it only shapes
 * the answer of the same listing (s3:ListBucket either way, the same
 * keys), and minio-go's V2 signer sends it, unsigned, on every
 * ListObjects. -1 recorded. */
static int v2_unsigned_sub(struct gw_req *g)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(claimed); i++)
		if (s3_has(g, claimed[i]) &&
		    !spx_sigv2_signs_param(claimed[i]) &&
		    strcmp(claimed[i], "list-type"))
			return s3_fail(g, 403, "AccessDenied",
				       "The subresource '%s' is not covered by "
				       "a Signature Version 2 signature: sign "
				       "the request with AWS4-HMAC-SHA256.",
				       claimed[i]);
	return 0;
}

static void s3_begin(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct gw_s3 *s = s3_start(g, req, resp);
	int rc = 0;

	if (!s)
		return;
	s->op = route(g, req);
	if (!s->op) {
		s3_not_impl();
		answer_error(g, req, resp);
		return;
	}
	snprintf(req->note.op, sizeof(req->note.op), "%s", s->op->name);
	if (g->authed && g->auth.v2 && v2_unsigned_sub(g) < 0) {
		answer_error(g, req, resp);
		return;
	}
	/* A browser reads the answer, an error too, only with the bucket's
	 * CORS headers: they are known once the bucket is, before its
	 * owner is checked. */
	if (s->op->flags & S3_OWN) {
		rc = expected_owner_valid(g, req, "x-amz-expected-bucket-owner");
		if (!rc)
			rc = expected_owner_valid(
				g, req, "x-amz-source-expected-bucket-owner");
		if (!rc)
			rc = s3_find_bucket(g, s->bucket, &s->b);
		if (!rc && spx_kv_geti(&req->headers, "Origin"))
			s3_cors_actual(g, req);
		/* DeleteObjects is decided key by key (s3_delete.c). */
		if (!rc && strcmp(s->op->name, "DeleteObjects")) {
			char action[64];

			s3_action(g, s->op->name, action, sizeof(action));
			rc = s3_authorize(g, req, &s->b, action, s->key);
		}
		/* After the decision, so that a caller with no right to the
		 * bucket learns nothing of its owner. */
		if (!rc)
			rc = s3_expected_owner(g, req,
					       "x-amz-expected-bucket-owner",
					       &s->b);
		if (!rc && (s->op->flags & S3_ACL))
			rc = s3_acl_write_check(g, &req->headers, &s->b);
	} else if (!g->authed)
		/* ListBuckets and CreateBucket need a caller. */
		rc = s3_fail(g, 403, "AccessDenied", "Access Denied");
	if (!rc && (s->op->flags & S3_STREAM))
		rc = s->op->begin(g, req, resp);
	else if (!rc && s3_streaming(g))
		/* Any other body sent aws-chunked is decoded, and its chunk
		 * signatures checked, like an object's. */
		rc = s3_chunked_begin(g, req, feed_body);
	if (rc < 0)
		answer_error(g, req, resp);
}

void gw_s3_begin(struct gw_req *g, struct spx_http_req *req,
		 struct spx_http_resp *resp)
{
	s3_begin(g, req, resp);
	cors_decorate(g, resp);
}

/* POST object: the form authenticates it (s3_post.c). */
static const struct s3_op post_op = {
	"PostObject", "POST", S3_BUCKET, NULL, NULL, S3_STREAM,
	s3_post_begin, s3_post_body, s3_post_end,
};

void gw_s3_post(struct gw_req *g, struct spx_http_req *req,
		struct spx_http_resp *resp)
{
	struct gw_s3 *s;

	snprintf(req->note.op, sizeof(req->note.op), "PostObject");
	if (!(s = s3_start(g, req, resp)))
		return;
	s->op = &post_op;
	if (post_op.begin(g, req, resp) < 0)
		answer_error(g, req, resp);
	cors_decorate(g, resp);
}

/* A CORS preflight (OPTIONS): unauthenticated, as browsers send it,
 * answered from the bucket's rules. */
void gw_s3_preflight(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct gw_s3 *s;
	int rc;

	snprintf(req->note.op, sizeof(req->note.op), "PreflightRequest");
	if (!(s = s3_start(g, req, resp)))
		return;
	if (!s->bucket)
		rc = s3_fail(g, 400, "BadRequest",
			     "Insufficient information. Bucket name needed.");
	else if ((rc = s3_find_bucket(g, s->bucket, &s->b)) == 0)
		rc = s3_cors_preflight(g, req, resp);
	if (rc < 0)
		answer_error(g, req, resp);
}

static void s3_body(struct gw_req *g, struct spx_http_req *req,
		    const char *data, size_t len, struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	int rc;

	if (s->op->flags & S3_STREAM)
		rc = s->op->body(g, req, data, len);
	else if (s->chunked)
		rc = s3_chunked_feed(g, data, len);
	else if (s->body.len + len > S3_XML_BODY_MAX)
		rc = s3_fail(g, 400, "MaxMessageLengthExceeded",
			     "Your request was too big.");
	else
		rc = (spx_buf_add(&s->body, data, len), 0);
	if (rc < 0)
		answer_error(g, req, resp);
}

void gw_s3_body(struct gw_req *g, struct spx_http_req *req, const char *data,
		size_t len, struct spx_http_resp *resp)
{
	s3_body(g, req, data, len, resp);
	cors_decorate(g, resp);
}

/* A gathered body against the Content-MD5 and x-amz-checksum-* (header
 * or trailer) sent with it: InvalidDigest when malformed, BadDigest when
 * another. An operation that needs one (S3_DIGEST) is refused without. */
static int body_digests(struct gw_req *g, struct spx_http_req *req)
{
	struct gw_s3 *s = g->s3;
	const char *md5 = spx_kv_geti(&req->headers, "Content-MD5");
	bool some = md5 != NULL;
	unsigned char d[SPX_CKSUM_MAX];
	enum spx_cksum_verdict why;

	if (md5) {
		if (spx_cksum_digest(SPX_CKSUM_MD5, s->body.p, s->body.len, d,
				     NULL) < 0)
			return s3_obj_fail(g, SPX_OBJ_INTERNAL);
		if (spx_cksum_verify_b64(SPX_CKSUM_MD5, md5, d, &why) < 0)
			return why == SPX_CKSUM_MALFORMED
				       ? s3_fail(g, 400, "InvalidDigest",
						 "The Content-MD5 you specified "
						 "was invalid.")
				       : s3_obj_fail(g, SPX_OBJ_BAD_DIGEST);
	}
	/* CompleteMultipartUpload's are the whole object's (its handler
	 * checks them). */
	for (int a = 0; a < SPX_CKSUM_NALGO && !(s->op->flags & S3_OBJCK);
	     a++) {
		const char *h = spx_cksum_header((enum spx_cksum_algo)a);
		const char *v;

		if (a == SPX_CKSUM_MD5 || !h)
			continue;
		v = spx_kv_geti(&req->headers, h);
		if (!v && s->chunked)
			v = spx_kv_geti(spx_chunked_trailers(&s->ch), h);
		if (!v)
			continue;
		some = true;
		if (spx_cksum_digest((enum spx_cksum_algo)a, s->body.p,
				     s->body.len, d, NULL) < 0)
			return s3_obj_fail(g, SPX_OBJ_INTERNAL);
		if (spx_cksum_verify_b64((enum spx_cksum_algo)a, v, d, &why) < 0)
			return why == SPX_CKSUM_MALFORMED
				       ? s3_fail(g, 400, "InvalidRequest",
						 "Value for %s header is "
						 "invalid.", h)
				       : s3_fail(g, 400, "BadDigest",
						 "The %s you specified did not "
						 "match the calculated "
						 "checksum.",
						 spx_cksum_name(
							 (enum spx_cksum_algo)a));
	}
	if (!some && (s->op->flags & S3_DIGEST))
		return s3_fail(g, 400, "InvalidRequest",
			       "Missing required header for this request: "
			       "Content-MD5");
	return 0;
}

static void s3_end(struct gw_req *g, struct spx_http_req *req,
		   struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;

	if ((!(s->op->flags & S3_STREAM) && s->chunked &&
	     s3_chunked_end(g) < 0) ||
	    (!(s->op->flags & S3_STREAM) && body_digests(g, req) < 0) ||
	    s->op->run(g, req, resp) < 0) {
		answer_error(g, req, resp);
		return;
	}
	s3_headless(req, resp);
}

void gw_s3_end(struct gw_req *g, struct spx_http_req *req,
	       struct spx_http_resp *resp)
{
	s3_end(g, req, resp);
	cors_decorate(g, resp);
}
