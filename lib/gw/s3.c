/* s3.c: the S3 REST API over the object store (lib/obj).
 *
 * A request is routed from its method, path (path-style addressing:
 * /BUCKET/KEY, the key percent-decoded once) and subresources. Object
 * bodies stream: PutObject and UploadPart start an object writer in begin
 * and feed it every piece (through the aws-chunked decoder for streaming
 * uploads), computing the requested checksum on the way; nothing becomes
 * visible before the commit at the end, after the signature, Content-MD5
 * and checksums are checked. Other bodies (XML) are small and gathered
 * under a limit. GetObject streams from an object reader.
 */
#include "spx.h"

#include "auth/chunked.h"
#include "checksum.h"
#include "gw/gw_int.h"
#include "gw/s3conf.h"
#include "http/httpdate.h"
#include "http/query.h"
#include "obj/obj.h"

#define S3_XML_BODY_MAX ((size_t)2 << 20)

enum s3op {
	OP_NONE,
	OP_LIST_BUCKETS,
	OP_CREATE_BUCKET,
	OP_DELETE_BUCKET,
	OP_HEAD_BUCKET,
	OP_GET_LOCATION,
	OP_LIST_OBJECTS,
	OP_LIST_OBJECTS_V2,
	OP_LIST_UPLOADS,
	OP_DELETE_OBJECTS,
	OP_PUT_OBJECT,
	OP_COPY_OBJECT,
	OP_GET_OBJECT,
	OP_HEAD_OBJECT,
	OP_DELETE_OBJECT,
	OP_CREATE_MPU,
	OP_UPLOAD_PART,
	OP_COMPLETE_MPU,
	OP_ABORT_MPU,
	OP_LIST_PARTS,
	OP_UPLOAD_PART_COPY,
	OP_GET_VERSIONING,
	OP_PUT_VERSIONING,
	OP_LIST_VERSIONS,
	OP_GET_BUCKET_TAGGING,
	OP_PUT_BUCKET_TAGGING,
	OP_DELETE_BUCKET_TAGGING,
	OP_GET_OBJECT_TAGGING,
	OP_PUT_OBJECT_TAGGING,
	OP_DELETE_OBJECT_TAGGING,
};

/* The operation's name in the access log, as the S3 API reference
 * calls it. */
static const char *const op_names[] = {
	[OP_LIST_BUCKETS] = "ListBuckets",
	[OP_CREATE_BUCKET] = "CreateBucket",
	[OP_DELETE_BUCKET] = "DeleteBucket",
	[OP_HEAD_BUCKET] = "HeadBucket",
	[OP_GET_LOCATION] = "GetBucketLocation",
	[OP_LIST_OBJECTS] = "ListObjects",
	[OP_LIST_OBJECTS_V2] = "ListObjectsV2",
	[OP_LIST_UPLOADS] = "ListMultipartUploads",
	[OP_DELETE_OBJECTS] = "DeleteObjects",
	[OP_PUT_OBJECT] = "PutObject",
	[OP_COPY_OBJECT] = "CopyObject",
	[OP_GET_OBJECT] = "GetObject",
	[OP_HEAD_OBJECT] = "HeadObject",
	[OP_DELETE_OBJECT] = "DeleteObject",
	[OP_CREATE_MPU] = "CreateMultipartUpload",
	[OP_UPLOAD_PART] = "UploadPart",
	[OP_COMPLETE_MPU] = "CompleteMultipartUpload",
	[OP_ABORT_MPU] = "AbortMultipartUpload",
	[OP_LIST_PARTS] = "ListParts",
	[OP_UPLOAD_PART_COPY] = "UploadPartCopy",
	[OP_GET_VERSIONING] = "GetBucketVersioning",
	[OP_PUT_VERSIONING] = "PutBucketVersioning",
	[OP_LIST_VERSIONS] = "ListObjectVersions",
	[OP_GET_BUCKET_TAGGING] = "GetBucketTagging",
	[OP_PUT_BUCKET_TAGGING] = "PutBucketTagging",
	[OP_DELETE_BUCKET_TAGGING] = "DeleteBucketTagging",
	[OP_GET_OBJECT_TAGGING] = "GetObjectTagging",
	[OP_PUT_OBJECT_TAGGING] = "PutObjectTagging",
	[OP_DELETE_OBJECT_TAGGING] = "DeleteObjectTagging",
};

struct gw_s3 {
	char *bucket, *key;
	struct spx_obj_bucket b; /* the bucket, once own_bucket opened it */
	enum s3op op;
	struct spx_obj_writer *w;
	int werr;		/* a write failed: its rc */
	bool chunked;
	struct spx_chunked ch;
	bool has_ck;
	enum spx_cksum_algo algo;
	struct spx_cksum ck;
	bool has_md5;
	unsigned char md5[16];
	struct spx_buf body;	/* XML bodies */
	int part;		/* UploadPart: the part number */
	const char *if_match, *if_none_match; /* conditional PUT */
	bool versioned;		/* PutObject: the bucket has versioning */
};

int gw_s3_open(struct spx_gw *gw)
{
	const struct spx_conf_node *n = gw->self;
	struct spx_obj_opts o = {
		.drives = (const char *const *)n->obj.drives.v,
		.ndrives = n->obj.drives.n,
		.data = n->obj.data,
		.parity = n->obj.parity,
		.flags = SPX_OBJ_CREATE,
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
	free(s->bucket);
	free(s->key);
	free(s);
	g->s3 = NULL;
}

/* ---- errors --------------------------------------------------------- */

static void obj_fail(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp, int rc)
{
	const struct spx_obj_code *c = spx_obj_code(rc);

	if (c->http >= 500)
		spx_log(SPX_LOG_ERROR, "s3: %s %s: %s", req->method, req->path,
			spx_errmsg());
	gw_error(g, req, resp, c->http, c->code, "%s", c->message);
}

static void not_impl(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	gw_error(g, req, resp, 501, "NotImplemented",
		 "A header you provided implies functionality that is not "
		 "implemented");
}

/* HEAD answers carry no body. */
static void headless(struct spx_http_req *req, struct spx_http_resp *resp)
{
	if (!strcmp(req->method, "HEAD"))
		spx_buf_reset(&resp->body);
}

/* The bucket exists and the caller's account owns it: open it into
 * g->s3->b, the handle every engine call of the request then takes (and
 * copy it to *b, which may be NULL). */
static int own_bucket(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp, struct spx_obj_bucket *out)
{
	struct spx_obj_bucket *b = &g->s3->b;
	int rc;

	if (!spx_obj_bucket_name_valid(g->s3->bucket)) {
		/* An invalid name cannot exist: S3 says NoSuchBucket for
		 * reads and InvalidBucketName for creation. */
		obj_fail(g, req, resp, SPX_OBJ_NO_SUCH_BUCKET);
		return -1;
	}
	rc = spx_obj_bucket_open(g->gw->obj, g->s3->bucket, b);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return -1;
	}
	if (strcmp(b->owner, g->who.account)) {
		gw_error(g, req, resp, 403, "AccessDenied", "Access Denied");
		return -1;
	}
	if (out)
		*out = *b;
	return 0;
}

/* An answer without a body: 204 after a delete, 200 after a create. */
static void empty_answer(struct gw_req *g, struct spx_http_resp *resp,
			 int status)
{
	resp->status = status;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	resp->ready = true;
}

/* x-amz-version-id, in answers about a bucket that has (had) versioning
 * or when the client named a version. */
static void version_header(struct spx_http_resp *resp, bool show,
			   const char *vid)
{
	if (show)
		spx_kv_add(&resp->headers, "x-amz-version-id",
			   spx_obj_vid_name(vid));
}

/* The versionId parameter: NULL when absent; on a malformed one, the
 * error is answered and *bad set. */
static const char *version_param(struct gw_req *g, struct spx_http_req *req,
				 struct spx_http_resp *resp, bool *bad)
{
	const char *v = spx_kv_get(&g->params, "versionId");

	*bad = false;
	if (v && !spx_obj_vid_valid(v)) {
		obj_fail(g, req, resp, SPX_OBJ_INVALID_VERSION);
		*bad = true;
	}
	return v;
}

/* After NoSuchKey / MethodNotAllowed for a delete marker: say so, with
 * the marker's version id, as S3 does. */
static void marker_headers(struct gw_req *g, struct spx_http_resp *resp,
			   const char *vid, int rc)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;

	if (rc == SPX_OBJ_DELETE_MARKER) {
		spx_kv_add(&resp->headers, "x-amz-delete-marker", "true");
		spx_kv_add(&resp->headers, "x-amz-version-id", vid);
		spx_kv_add(&resp->headers, "Allow", "DELETE");
		return;
	}
	if (rc == SPX_OBJ_NO_SUCH_KEY && !vid &&
	    spx_obj_stat_version(g->gw->obj, &g->s3->b, g->s3->key, NULL,
				 &m) == 0 &&
	    m.delete_marker) {
		spx_kv_add(&resp->headers, "x-amz-delete-marker", "true");
		spx_kv_add(&resp->headers, "x-amz-version-id",
			   spx_obj_vid_name(m.vid));
	}
	spx_error_clear();
	spx_obj_meta_release(&m);
}

/* An s3conf parser's refusal. */
static void conf_fail(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp, const struct spx_s3_err *e)
{
	gw_error(g, req, resp, e->http, e->code, "%s", e->message);
}

/* ---- routing -------------------------------------------------------- */

static bool has(const struct gw_req *g, const char *p)
{
	return spx_kv_get(&g->params, p) != NULL;
}

static enum s3op route(struct gw_req *g, struct spx_http_req *req)
{
	const char *m = req->method;
	const struct gw_s3 *s = g->s3;
	/* Subresources this gateway does not serve yet. */
	static const char *const later[] = {
		"acl", "policy", "cors",
		"lifecycle", "website", "logging", "notification",
		"replication", "encryption", "object-lock", "retention",
		"legal-hold", "torrent", "restore", "select", "accelerate",
		"requestPayment", "analytics", "metrics", "inventory",
		"intelligent-tiering", "ownershipControls",
		"publicAccessBlock", "attributes", "policyStatus",
	};

	bool get = !strcmp(m, "GET"), put = !strcmp(m, "PUT"),
	     del = !strcmp(m, "DELETE");

	if (s->bucket && !s->key && has(g, "versioning"))
		return get ? OP_GET_VERSIONING : put ? OP_PUT_VERSIONING : OP_NONE;
	if (s->bucket && !s->key && has(g, "versions"))
		return get ? OP_LIST_VERSIONS : OP_NONE;
	if (s->bucket && has(g, "tagging")) {
		if (!s->key)
			return get   ? OP_GET_BUCKET_TAGGING
			       : put ? OP_PUT_BUCKET_TAGGING
			       : del ? OP_DELETE_BUCKET_TAGGING
				     : OP_NONE;
		return get   ? OP_GET_OBJECT_TAGGING
		       : put ? OP_PUT_OBJECT_TAGGING
		       : del ? OP_DELETE_OBJECT_TAGGING
			     : OP_NONE;
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(later); i++)
		if (has(g, later[i]))
			return OP_NONE;
	/* Features that must not be accepted and then ignored: encryption,
	 * object lock, form (POST policy) uploads. */
	for (size_t i = 0; i < req->headers.n; i++) {
		const char *k = req->headers.v[i].k;

		if (!strncasecmp(k, "x-amz-server-side-encryption", 28) ||
		    !strncasecmp(k, "x-amz-copy-source-server-side-encryption",
				 40) ||
		    !strncasecmp(k, "x-amz-object-lock", 17) ||
		    (!strcasecmp(k, "x-amz-bucket-object-lock-enabled") &&
		     !strcasecmp(req->headers.v[i].v, "true")))
			return OP_NONE;
	}
	if (!s->bucket)
		return !strcmp(m, "GET") ? OP_LIST_BUCKETS : OP_NONE;
	if (!s->key) {
		if (!strcmp(m, "GET"))
			return has(g, "location")   ? OP_GET_LOCATION
			       : has(g, "uploads")  ? OP_LIST_UPLOADS
			       : has(g, "list-type") ? OP_LIST_OBJECTS_V2
						    : OP_LIST_OBJECTS;
		if (!strcmp(m, "PUT"))
			return OP_CREATE_BUCKET;
		if (!strcmp(m, "HEAD"))
			return OP_HEAD_BUCKET;
		if (!strcmp(m, "DELETE"))
			return OP_DELETE_BUCKET;
		if (!strcmp(m, "POST") && has(g, "delete"))
			return OP_DELETE_OBJECTS;
		return OP_NONE;
	}
	if (!strcmp(m, "PUT")) {
		if (has(g, "uploadId") || has(g, "partNumber"))
			return spx_kv_geti(&req->headers, "x-amz-copy-source")
				       ? OP_UPLOAD_PART_COPY
				       : OP_UPLOAD_PART;
		return spx_kv_geti(&req->headers, "x-amz-copy-source")
			       ? OP_COPY_OBJECT
			       : OP_PUT_OBJECT;
	}
	if (!strcmp(m, "GET"))
		return has(g, "uploadId") ? OP_LIST_PARTS : OP_GET_OBJECT;
	if (!strcmp(m, "HEAD"))
		return OP_HEAD_OBJECT;
	if (!strcmp(m, "DELETE"))
		return has(g, "uploadId") ? OP_ABORT_MPU : OP_DELETE_OBJECT;
	if (!strcmp(m, "POST"))
		return has(g, "uploads")    ? OP_CREATE_MPU
		       : has(g, "uploadId") ? OP_COMPLETE_MPU
					    : OP_NONE;
	return OP_NONE;
}

/* The bucket named by a virtual-host-style Host header
 * ("photos.s3.example.com[:port]" with s3_domain "s3.example.com"), or
 * NULL for path style. */
static char *host_bucket(const struct gw_req *g, struct spx_http_req *req)
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
 * (NULL when absent). */
static int parse_target(struct gw_req *g, struct spx_http_req *req)
{
	struct gw_s3 *s = g->s3;
	const char *p = req->path, *slash;
	struct spx_buf b = SPX_BUF_INIT;

	if (p[0] != '/')
		return spx_error(SPX_USAGE, "the path must start with '/'");
	p++;
	s->bucket = host_bucket(g, req);
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

/* ---- object writes -------------------------------------------------- */

/* The system headers S3 stores with an object and returns on GET. */
static const char *const sys_headers[] = {
	"content-type",	    "cache-control",	"content-disposition",
	"content-encoding", "content-language", "expires",
	"x-amz-storage-class",
};

/* The storage classes S3 knows; spx keeps every object the same way and
 * records the class the client asked for. */
static bool storage_class_valid(const char *c)
{
	static const char *const known[] = {
		"STANDARD",	    "REDUCED_REDUNDANCY", "STANDARD_IA",
		"ONEZONE_IA",	    "INTELLIGENT_TIERING", "GLACIER",
		"DEEP_ARCHIVE",	    "OUTPOSTS",		  "GLACIER_IR",
		"SNOW",		    "EXPRESS_ONEZONE",
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(known); i++)
		if (!strcmp(c, known[i]))
			return true;
	return false;
}

static void meta_from_headers(struct spx_http_req *req,
			      struct spx_obj_meta *m)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(sys_headers); i++) {
		const char *v = spx_kv_geti(&req->headers, sys_headers[i]);

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
	for (size_t i = 0; i < req->headers.n; i++) {
		const char *k = req->headers.v[i].k;
		char low[256];
		size_t n = strlen(k);

		if (n >= sizeof(low) || strncasecmp(k, "x-amz-meta-", 11))
			continue;
		for (size_t j = 0; j <= n; j++)
			low[j] = (char)(k[j] >= 'A' && k[j] <= 'Z' ? k[j] | 0x20
								   : k[j]);
		spx_kv_add(&m->user, low, req->headers.v[i].v);
	}
}

/* x-amz-tagging into m->tags; on a bad header the error is answered. */
static int tags_from_header(struct gw_req *g, struct spx_http_req *req,
			    struct spx_http_resp *resp, struct spx_obj_meta *m)
{
	const char *h = spx_kv_geti(&req->headers, "x-amz-tagging");
	struct spx_s3_err e;

	if (!h)
		return 0;
	spx_kv_free(&m->tags);
	if (spx_s3_tags_header(h, SPX_S3_TAGS_OBJECT, &m->tags, &e) < 0) {
		conf_fail(g, req, resp, &e);
		return -1;
	}
	return 0;
}

static int feed(void *arg, const void *data, size_t len)
{
	struct gw_s3 *s = arg;
	int rc;

	if (s->has_ck)
		spx_cksum_update(&s->ck, data, len);
	rc = spx_obj_writer_write(s->w, data, len);
	if (rc < 0) {
		s->werr = rc;
		return -1;
	}
	return 0;
}

/* "crc32" for SPX_CKSUM_CRC32: how checksums are keyed in metadata, the
 * part of the header's name after "x-amz-checksum-". */
static const char *cksum_key(enum spx_cksum_algo a)
{
	return spx_cksum_header(a) + strlen("x-amz-checksum-");
}

/* The upload's checksum algorithm, or -1 (with resp filled) when the
 * upload does not exist; *algo_on false when it asked for none, *full
 * (may be NULL) true for the FULL_OBJECT type. */
static int upload_algo(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp, const char *id,
		       enum spx_cksum_algo *algo, bool *algo_on, bool *full)
{
	struct spx_obj_meta info = SPX_OBJ_META_INIT;
	const char *a, *t;
	int rc = spx_obj_mpu_info(g->gw->obj, &g->s3->b, g->s3->key, id,
				  &info);

	*algo_on = false;
	if (full)
		*full = false;
	if (rc < 0) {
		spx_obj_meta_release(&info);
		obj_fail(g, req, resp, rc);
		return -1;
	}
	a = spx_kv_get(&info.checksums, "algorithm");
	t = spx_kv_get(&info.checksums, "type");
	if (a && spx_cksum_from_name(a, algo) == 0)
		*algo_on = true;
	if (full && t && !strcmp(t, "FULL_OBJECT"))
		*full = true;
	spx_obj_meta_release(&info);
	return 0;
}

/* UploadPart to an upload made with a checksum algorithm: a checksum the
 * part carries must be of that algorithm; a COMPOSITE upload requires
 * one, as S3 does, while for a FULL_OBJECT one the gateway computes it
 * when the client sent none. */
static int need_part_checksum(struct gw_req *g, struct spx_http_req *req,
			      struct spx_http_resp *resp, const char *id)
{
	struct gw_s3 *s = g->s3;
	enum spx_cksum_algo a;
	bool on, full;

	if (upload_algo(g, req, resp, id, &a, &on, &full) < 0)
		return -1;
	if (on && full && !s->has_ck) {
		if (spx_cksum_init(&s->ck, a) < 0) {
			obj_fail(g, req, resp, SPX_OBJ_INTERNAL);
			return -1;
		}
		s->algo = a;
		s->has_ck = true;
		return 0;
	}
	if (on && (!s->has_ck || s->algo != a)) {
		gw_error(g, req, resp, 400, "InvalidRequest",
			 "Checksum Type mismatch occurred, expected checksum "
			 "Type: %s, actual checksum Type: %s",
			 cksum_key(a),
			 s->has_ck ? spx_cksum_name(s->algo) : "null");
		return -1;
	}
	return 0;
}

/* PutObject's If-None-Match: * and If-Match against the current object
 * (cur NULL: none). S3 answers 412 for an object that is there or differs,
 * and 404 NoSuchKey for If-Match on none. */
static int put_cond(void *ctx, const struct spx_obj_meta *cur)
{
	const struct gw_s3 *s = ctx;

	if (s->if_none_match && cur)
		return SPX_OBJ_PRECONDITION;
	if (s->if_match && !cur)
		return SPX_OBJ_NO_SUCH_KEY;
	if (s->if_match && !spx_etag_list_match(s->if_match, cur->etag))
		return SPX_OBJ_PRECONDITION;
	return 0;
}

/* The small bodies (XML) of the other operations, decoded. */
static int feed_xml(void *arg, const void *data, size_t len)
{
	struct gw_s3 *s = arg;

	if (s->body.len + len > S3_XML_BODY_MAX)
		return -1;
	spx_buf_add(&s->body, data, len);
	return 0;
}

static bool streaming(const struct gw_req *g)
{
	return g->auth.payload == SPX_SIGV4_PAYLOAD_STREAMING ||
	       g->auth.payload == SPX_SIGV4_PAYLOAD_STREAMING_TRAILER ||
	       g->auth.payload == SPX_SIGV4_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
}

/* An aws-chunked body: the decoder, its data going to out. */
static int chunked_begin(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp, spx_chunked_out_fn out)
{
	struct gw_s3 *s = g->s3;
	const char *dl = spx_kv_geti(&req->headers,
				     "x-amz-decoded-content-length");
	char *e = NULL;
	long long d = dl ? strtoll(dl, &e, 10) : -1;

	if (dl && (*e || d < 0 || !*dl)) {
		gw_error(g, req, resp, 400, "InvalidArgument",
			 "x-amz-decoded-content-length is invalid");
		return -1;
	}
	if (spx_chunked_init(&s->ch, &g->auth, d, out, s) < 0) {
		obj_fail(g, req, resp, SPX_OBJ_INTERNAL);
		return -1;
	}
	s->chunked = true;
	return 0;
}

/* Feed a piece of an aws-chunked body; on an error, answer it. */
static void chunked_feed(struct gw_req *g, struct spx_http_req *req,
			 const char *data, size_t len,
			 struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	enum spx_chunked_err e = spx_chunked_feed(&s->ch, data, len);

	if (e == SPX_CHUNKED_EOUTPUT && !s->w) {
		gw_error(g, req, resp, 400, "MaxMessageLengthExceeded",
			 "Your request was too big.");
	} else if (e != SPX_CHUNKED_OK && !s->werr) {
		struct spx_sigv4_status st = spx_chunked_code(e);

		gw_error(g, req, resp, st.http, st.code, "%s", st.message);
	}
}

/* The end of an aws-chunked body: -1 (answered) unless it is whole and
 * every signature held. */
static int chunked_end(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp)
{
	enum spx_chunked_err e = spx_chunked_finish(&g->s3->ch);

	if (e != SPX_CHUNKED_OK) {
		struct spx_sigv4_status st = spx_chunked_code(e);

		gw_error(g, req, resp, st.http, st.code, "%s", st.message);
		return -1;
	}
	return 0;
}

static void begin_write(struct gw_req *g, struct spx_http_req *req,
			struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta in = SPX_OBJ_META_INIT;
	const char *md5 = spx_kv_geti(&req->headers, "Content-MD5");
	struct spx_obj_bucket b;
	int rc;

	if (own_bucket(g, req, resp, &b) < 0)
		return;
	s->versioned = b.versioning != SPX_OBJ_UNVERSIONED;
	{
		const char *sc = spx_kv_geti(&req->headers,
					     "x-amz-storage-class");

		if (sc && !storage_class_valid(sc)) {
			gw_error(g, req, resp, 400, "InvalidStorageClass",
				 "The storage class you specified is not "
				 "valid");
			return;
		}
	}
	if ((rc = spx_obj_key_check(s->key)) < 0) {
		obj_fail(g, req, resp, rc);
		return;
	}
	if (md5) {
		size_t n = 0;

		if (spx_base64_decode(md5, strlen(md5), s->md5, sizeof(s->md5),
				      &n) < 0 ||
		    n != 16) {
			gw_error(g, req, resp, 400, "InvalidDigest",
				 "The Content-MD5 you specified was invalid.");
			return;
		}
		s->has_md5 = true;
	}
	{
		const char *alg = spx_kv_geti(&req->headers,
					      "x-amz-sdk-checksum-algorithm");
		const char *tr = spx_kv_geti(&req->headers, "x-amz-trailer");
		const char *name = alg;

		for (int a = 0; a < SPX_CKSUM_NALGO && !name; a++)
			if (a != SPX_CKSUM_MD5 &&
			    spx_kv_geti(&req->headers,
					spx_cksum_header((enum spx_cksum_algo)a)))
				name = spx_cksum_name((enum spx_cksum_algo)a);
		if (!name && tr && !strncasecmp(tr, "x-amz-checksum-", 15))
			name = tr + 15;
		if (name) {
			if (spx_cksum_from_name(name, &s->algo) < 0) {
				gw_error(g, req, resp, 400, "InvalidRequest",
					 "Value for x-amz-checksum-algorithm "
					 "header is invalid.");
				return;
			}
			if (spx_cksum_init(&s->ck, s->algo) < 0) {
				obj_fail(g, req, resp, SPX_OBJ_INTERNAL);
				return;
			}
			s->has_ck = true;
		}
	}
	if (s->op == OP_PUT_OBJECT) {
		s->if_none_match = spx_kv_geti(&req->headers, "If-None-Match");
		s->if_match = spx_kv_geti(&req->headers, "If-Match");
		if (s->if_none_match && strcmp(s->if_none_match, "*")) {
			/* S3 takes only "*" here. */
			not_impl(g, req, resp);
			return;
		}
		/* Conditional writes: checked now, so that a doomed upload
		 * is refused before its body, and again by the engine under
		 * the key's lock at the commit. */
		if (s->if_none_match || s->if_match) {
			struct spx_obj_meta cur = SPX_OBJ_META_INIT;

			rc = spx_obj_stat(g->gw->obj, &s->b, s->key, &cur);
			if (rc == 0 || rc == SPX_OBJ_NO_SUCH_KEY)
				rc = put_cond(s, rc == 0 ? &cur : NULL);
			else
				rc = 0; /* the bucket's failure comes below */
			spx_obj_meta_release(&cur);
			if (rc < 0) {
				obj_fail(g, req, resp, rc);
				return;
			}
		}
		meta_from_headers(req, &in);
		if (tags_from_header(g, req, resp, &in) < 0) {
			spx_obj_meta_release(&in);
			return;
		}
		rc = spx_obj_writer_begin(g->gw->obj, &s->b, s->key, &in,
					  &s->w);
		spx_obj_meta_release(&in);
		if (rc == 0 && (s->if_none_match || s->if_match))
			spx_obj_writer_condition(s->w, put_cond, s);
	} else {
		const char *id = spx_kv_get(&g->params, "uploadId");
		const char *pn = spx_kv_get(&g->params, "partNumber");
		char *end;
		long n = pn ? strtol(pn, &end, 10) : 0;

		if (!id || !pn || *end || n < 1 || n > SPX_OBJ_MAX_PARTS) {
			gw_error(g, req, resp, 400, "InvalidArgument",
				 "Part number must be an integer between 1 "
				 "and 10000, inclusive");
			return;
		}
		s->part = (int)n;
		if (need_part_checksum(g, req, resp, id) < 0)
			return;
		rc = spx_obj_part_begin(g->gw->obj, &s->b, s->key, id,
					s->part, &s->w);
	}
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return;
	}
	if (streaming(g))
		chunked_begin(g, req, resp, feed);
}

static void write_body(struct gw_req *g, struct spx_http_req *req,
		       const char *data, size_t len, struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;

	if (s->chunked) {
		chunked_feed(g, req, data, len, resp);
		if (resp->ready)
			return;
	} else {
		feed(s, data, len);
	}
	if (s->werr)
		obj_fail(g, req, resp, s->werr);
}

static void end_write(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta out = SPX_OBJ_META_INIT;
	unsigned char dig[SPX_CKSUM_MAX];
	struct spx_buf b64 = SPX_BUF_INIT;
	char quoted[SPX_OBJ_ETAG_SIZE + 2];
	size_t dlen = 0;
	int rc;

	if (s->chunked && chunked_end(g, req, resp) < 0)
		return;
	if (s->has_ck) {
		const char *h = spx_cksum_header(s->algo);
		const char *sent = spx_kv_geti(&req->headers, h);
		enum spx_cksum_verdict why;

		if (!sent && s->chunked)
			sent = spx_kv_geti(spx_chunked_trailers(&s->ch), h);
		if (spx_cksum_final(&s->ck, dig, &dlen) < 0) {
			obj_fail(g, req, resp, SPX_OBJ_INTERNAL);
			return;
		}
		if (sent &&
		    spx_cksum_verify_b64(s->algo, sent, dig, &why) < 0) {
			if (why == SPX_CKSUM_MALFORMED)
				gw_error(g, req, resp, 400, "InvalidRequest",
					 "Value for %s header is invalid.", h);
			else
				gw_error(g, req, resp, 400, "BadDigest",
					 "The %s you specified did not match "
					 "the calculated checksum.",
					 spx_cksum_name(s->algo));
			return;
		}
		spx_base64_encode(dig, dlen, &b64);
		{
			/* A part's checksum is kept for Complete to fold in. */
			struct spx_obj_meta *wm = spx_obj_writer_meta(s->w);

			spx_kv_add(&wm->checksums, cksum_key(s->algo), b64.p);
			if (s->op == OP_PUT_OBJECT)
				spx_kv_add(&wm->checksums, "type",
					   "FULL_OBJECT");
		}
	}
	rc = spx_obj_writer_commit(s->w, s->has_md5 ? s->md5 : NULL, &out);
	s->w = NULL;
	if (rc < 0) {
		spx_buf_release(&b64);
		spx_obj_meta_release(&out);
		if (rc == SPX_OBJ_BAD_DIGEST)
			gw_error(g, req, resp, 400, "BadDigest",
				 "The Content-MD5 you specified did not match "
				 "what we received.");
		else
			obj_fail(g, req, resp, rc);
		return;
	}
	resp->status = 200;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	spx_kv_add(&resp->headers, "x-amz-id-2", g->hostid);
	spx_kv_add(&resp->headers, "Server", "AmazonS3");
	snprintf(quoted, sizeof(quoted), "\"%s\"", out.etag);
	spx_kv_add(&resp->headers, "ETag", quoted);
	if (s->has_ck)
		spx_kv_add(&resp->headers, spx_cksum_header(s->algo), b64.p);
	/* The bucket's versioning as begin read it; a version id means
	 * versioning was enabled while the body streamed. */
	if (s->op == OP_PUT_OBJECT)
		version_header(resp, s->versioned || out.vid[0], out.vid);
	resp->ready = true;
	spx_buf_release(&b64);
	spx_obj_meta_release(&out);
}

/* ---- object reads --------------------------------------------------- */

struct getctx {
	struct spx_obj_reader *r;
	uint64_t first;
};

static ssize_t get_gen(void *arg, uint64_t pos, char *buf, size_t max)
{
	struct getctx *c = arg;
	size_t got = 0;

	if (spx_obj_read(c->r, c->first + pos, buf, max, &got) < 0) {
		spx_log(SPX_LOG_ERROR, "s3: read failed: %s", spx_errmsg());
		return -1;
	}
	return (ssize_t)got;
}

static void get_free(void *arg)
{
	struct getctx *c = arg;

	spx_obj_reader_close(c->r);
	free(c);
}

static void object_headers(struct spx_http_resp *resp,
			   const struct spx_obj_meta *m, bool checksums)
{
	char v[64];

	snprintf(v, sizeof(v), "\"%s\"", m->etag);
	spx_kv_add(&resp->headers, "ETag", v);
	spx_http_date((time_t)(m->mtime_ms / 1000), v, sizeof(v));
	spx_kv_add(&resp->headers, "Last-Modified", v);
	spx_kv_add(&resp->headers, "Accept-Ranges", "bytes");
	for (size_t i = 0; i < m->sys.n; i++)
		spx_kv_add(&resp->headers, m->sys.v[i].k, m->sys.v[i].v);
	for (size_t i = 0; i < m->user.n; i++)
		spx_kv_add(&resp->headers, m->user.v[i].k, m->user.v[i].v);
	if (m->nparts) {
		snprintf(v, sizeof(v), "%zu", m->nparts);
		spx_kv_add(&resp->headers, "x-amz-mp-parts-count", v);
	}
	if (m->tags.n) {
		snprintf(v, sizeof(v), "%zu", m->tags.n);
		spx_kv_add(&resp->headers, "x-amz-tagging-count", v);
	}
	for (size_t i = 0; checksums && i < m->checksums.n; i++) {
		char h[48];

		snprintf(h, sizeof(h), "x-amz-checksum-%s", m->checksums.v[i].k);
		spx_kv_add(&resp->headers, h, m->checksums.v[i].v);
	}
}

/* response-* query parameters override stored headers on GET. */
static void overrides(struct gw_req *g, struct spx_http_resp *resp)
{
	static const char *const o[][2] = {
		{ "response-content-type", "Content-Type" },
		{ "response-content-language", "Content-Language" },
		{ "response-expires", "Expires" },
		{ "response-cache-control", "Cache-Control" },
		{ "response-content-disposition", "Content-Disposition" },
		{ "response-content-encoding", "Content-Encoding" },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(o); i++) {
		const char *v = spx_kv_get(&g->params, o[i][0]);
		struct spx_kvlist keep = SPX_KVLIST_INIT;

		if (!v)
			continue;
		for (size_t j = 0; j < resp->headers.n; j++)
			if (strcasecmp(resp->headers.v[j].k, o[i][1]))
				spx_kv_add(&keep, resp->headers.v[j].k,
					   resp->headers.v[j].v);
		spx_kv_free(&resp->headers);
		resp->headers = keep;
		spx_kv_add(&resp->headers, o[i][1], v);
	}
}

static void get_object(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_reader *r = NULL;
	const struct spx_obj_meta *m;
	struct spx_cond c = {
		spx_kv_geti(&req->headers, "If-Match"),
		spx_kv_geti(&req->headers, "If-None-Match"),
		spx_kv_geti(&req->headers, "If-Modified-Since"),
		spx_kv_geti(&req->headers, "If-Unmodified-Since"),
	};
	const char *mode = spx_kv_geti(&req->headers, "x-amz-checksum-mode");
	struct spx_range rg = { 0, 0 };
	struct spx_obj_bucket b;
	enum spx_range_rc rr;
	struct getctx *ctx;
	const char *vid;
	bool bad, showv;
	char v[96];
	int rc;

	if (own_bucket(g, req, resp, &b) < 0)
		goto fail;
	vid = version_param(g, req, resp, &bad);
	if (bad)
		goto fail;
	showv = vid || b.versioning != SPX_OBJ_UNVERSIONED;
	rc = spx_obj_reader_open_version(g->gw->obj, &s->b, s->key, vid, &r);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		marker_headers(g, resp, vid, rc);
		goto fail;
	}
	m = spx_obj_reader_meta(r);
	switch (spx_cond_eval(&c, m->etag, (time_t)(m->mtime_ms / 1000), true)) {
	case SPX_COND_PASS:
		break;
	case SPX_COND_NOT_MODIFIED:
		resp->status = 304;
		spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
		snprintf(v, sizeof(v), "\"%s\"", m->etag);
		spx_kv_add(&resp->headers, "ETag", v);
		spx_http_date((time_t)(m->mtime_ms / 1000), v, sizeof(v));
		spx_kv_add(&resp->headers, "Last-Modified", v);
		version_header(resp, showv, m->vid);
		resp->ready = true;
		spx_obj_reader_close(r);
		return;
	case SPX_COND_FAILED:
		gw_error(g, req, resp, 412, "PreconditionFailed",
			 "At least one of the pre-conditions you specified "
			 "did not hold");
		goto fail;
	}
	rr = spx_range_parse(spx_kv_geti(&req->headers, "Range"), m->size, &rg);
	if (rr == SPX_RANGE_UNSATISFIABLE) {
		gw_error(g, req, resp, 416, "InvalidRange",
			 "The requested range is not satisfiable");
		snprintf(v, sizeof(v), "bytes */%llu",
			 (unsigned long long)m->size);
		spx_kv_add(&resp->headers, "Content-Range", v);
		goto fail;
	}
	resp->status = rr == SPX_RANGE_OK ? 206 : 200;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	spx_kv_add(&resp->headers, "x-amz-id-2", g->hostid);
	spx_kv_add(&resp->headers, "Server", "AmazonS3");
	object_headers(resp, m,
		       rr != SPX_RANGE_OK && mode && !strcasecmp(mode, "ENABLED"));
	version_header(resp, showv, m->vid);
	if (rr == SPX_RANGE_OK) {
		snprintf(v, sizeof(v), "bytes %llu-%llu/%llu",
			 (unsigned long long)rg.first,
			 (unsigned long long)rg.last,
			 (unsigned long long)m->size);
		spx_kv_add(&resp->headers, "Content-Range", v);
	} else {
		rg.first = 0;
		rg.last = m->size ? m->size - 1 : 0;
	}
	if (!strcmp(req->method, "GET"))
		overrides(g, resp);
	ctx = spx_calloc(1, sizeof(*ctx));
	ctx->r = r;
	ctx->first = rg.first;
	resp->gen = get_gen;
	resp->gen_free = get_free;
	resp->gen_ctx = ctx;
	resp->gen_len = m->size ? (int64_t)(rg.last - rg.first + 1) : 0;
	/* Room for a whole shard block and its CRC: the engine then reads
	 * each block straight into the buffer MHD sends from. */
	resp->gen_block = m->is_inline ? 0 : (size_t)m->block + 4096;
	resp->ready = true;
	return;
fail:
	spx_obj_reader_close(r);
	headless(req, resp);
}

static void delete_object(struct gw_req *g, struct spx_http_req *req,
			  struct spx_http_resp *resp)
{
	struct spx_obj_deleted d;
	struct spx_obj_bucket b;
	const char *vid;
	bool bad;
	int rc;

	if (own_bucket(g, req, resp, &b) < 0)
		return;
	vid = version_param(g, req, resp, &bad);
	if (bad)
		return;
	rc = spx_obj_delete_version(g->gw->obj, &g->s3->b, g->s3->key, vid,
				    &d);
	/* Deleting what is not there succeeds, as in S3. */
	if (rc < 0 && rc != SPX_OBJ_NO_SUCH_KEY && rc != SPX_OBJ_NO_SUCH_VERSION) {
		obj_fail(g, req, resp, rc);
		return;
	}
	spx_error_clear();
	empty_answer(g, resp, 204);
	if (rc == 0 && d.delete_marker)
		spx_kv_add(&resp->headers, "x-amz-delete-marker", "true");
	if (vid)
		version_header(resp, true, vid);
	else if (rc == 0 && d.delete_marker)
		version_header(resp, true, d.vid);
}

/* The source of a copy (x-amz-copy-source). */
struct copy_src {
	char *bucket;		/* the bucket and, after its NUL, the key */
	const char *key;
	struct spx_obj_bucket b; /* the source bucket, opened */
	char *vid;		/* ?versionId=, or NULL */
	bool versioned;		/* the source bucket has versioning */
	struct spx_obj_meta cur;
};

static void copy_src_release(struct copy_src *c)
{
	free(c->bucket);
	free(c->vid);
	spx_obj_meta_release(&c->cur);
	memset(c, 0, sizeof(*c));
}

/* x-amz-copy-source: "/bucket/key" or "bucket/key", URL-encoded, with an
 * optional "?versionId=V". Checks that the caller owns the source bucket,
 * that the source exists (and is no delete marker) and that the
 * copy-source conditions hold. On failure resp holds the error; c is
 * released by the caller either way. */
static int copy_source(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp, struct copy_src *c)
{
	const char *src = spx_kv_geti(&req->headers, "x-amz-copy-source");
	const char *q = strchr(src, '?');
	struct spx_buf dec = SPX_BUF_INIT;
	struct spx_cond cond = {
		spx_kv_geti(&req->headers, "x-amz-copy-source-if-match"),
		spx_kv_geti(&req->headers, "x-amz-copy-source-if-none-match"),
		spx_kv_geti(&req->headers, "x-amz-copy-source-if-modified-since"),
		spx_kv_geti(&req->headers,
			    "x-amz-copy-source-if-unmodified-since"),
	};
	size_t lead;
	char *slash;
	int rc;

	memset(c, 0, sizeof(*c));
	c->cur.inl = (struct spx_buf)SPX_BUF_INIT;
	if (q) {
		struct spx_kvlist qp = SPX_KVLIST_INIT;

		if (spx_query_parse(q + 1, strlen(q + 1), 0, &qp) < 0 ||
		    qp.n != 1 || strcmp(qp.v[0].k, "versionId")) {
			spx_kv_free(&qp);
			goto bad;
		}
		c->vid = spx_strdup(qp.v[0].v);
		spx_kv_free(&qp);
		if (!spx_obj_vid_valid(c->vid)) {
			obj_fail(g, req, resp, SPX_OBJ_INVALID_VERSION);
			return -1;
		}
	}
	if (spx_uri_decode(src, q ? (size_t)(q - src) : strlen(src),
			   SPX_URI_NONUL, &dec) <
	    0)
		goto bad;
	lead = dec.p[0] == '/';
	slash = strchr(dec.p + lead, '/');
	if (!slash || !slash[1] || slash == dec.p + lead)
		goto bad;
	*slash = '\0';
	c->bucket = spx_buf_detach(&dec, NULL);
	/* The bucket and, after its NUL, the key, in one allocation. */
	if (lead)
		memmove(c->bucket, c->bucket + 1, strlen(c->bucket + 1) + 1 +
				 strlen(slash + 1) + 1);
	c->key = c->bucket + strlen(c->bucket) + 1;
	rc = spx_obj_bucket_open(g->gw->obj, c->bucket, &c->b);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return -1;
	}
	if (strcmp(c->b.owner, g->who.account)) {
		gw_error(g, req, resp, 403, "AccessDenied", "Access Denied");
		return -1;
	}
	c->versioned = c->b.versioning != SPX_OBJ_UNVERSIONED;
	rc = c->vid ? spx_obj_stat_version(g->gw->obj, &c->b, c->key,
					   c->vid, &c->cur)
		    : spx_obj_stat(g->gw->obj, &c->b, c->key, &c->cur);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return -1;
	}
	if (c->cur.delete_marker) {
		gw_error(g, req, resp, 400, "InvalidRequest",
			 "The source of a copy request may not specifically "
			 "refer to a delete marker by version id.");
		return -1;
	}
	if (spx_cond_eval(&cond, c->cur.etag,
			  (time_t)(c->cur.mtime_ms / 1000),
			  false) != SPX_COND_PASS) {
		gw_error(g, req, resp, 412, "PreconditionFailed",
			 "At least one of the pre-conditions you specified "
			 "did not hold");
		return -1;
	}
	return 0;
bad:
	spx_buf_release(&dec);
	gw_error(g, req, resp, 400, "InvalidArgument",
		 "Copy Source must mention the source bucket and key: "
		 "sourcebucket/sourcekey");
	return -1;
}

static void copy_object(struct gw_req *g, struct spx_http_req *req,
			struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *dir = spx_kv_geti(&req->headers, "x-amz-metadata-directive");
	const char *tdir = spx_kv_geti(&req->headers, "x-amz-tagging-directive");
	struct spx_obj_meta in = SPX_OBJ_META_INIT, out = SPX_OBJ_META_INIT;
	struct copy_src c = { 0 };
	struct spx_obj_bucket b;
	struct spx_xml x;
	char when[40];
	bool replace = dir && !strcmp(dir, "REPLACE");
	bool treplace = tdir && !strcmp(tdir, "REPLACE");
	int rc;

	c.cur.inl = (struct spx_buf)SPX_BUF_INIT;
	if (own_bucket(g, req, resp, &b) < 0)
		goto out;
	if (dir && !replace && strcmp(dir, "COPY")) {
		gw_error(g, req, resp, 400, "InvalidArgument",
			 "Unknown metadata directive.");
		goto out;
	}
	if (tdir && !treplace && strcmp(tdir, "COPY")) {
		gw_error(g, req, resp, 400, "InvalidArgument",
			 "Unknown tagging directive.");
		goto out;
	}
	if (copy_source(g, req, resp, &c) < 0)
		goto out;
	if (!replace && !c.vid && !strcmp(c.bucket, s->bucket) &&
	    !strcmp(c.key, s->key)) {
		gw_error(g, req, resp, 400, "InvalidRequest",
			 "This copy request is illegal because it is trying to "
			 "copy an object to itself without changing the "
			 "object's metadata, storage class, website redirect "
			 "location or encryption attributes.");
		goto out;
	}
	/* Metadata and tags each come from the source (COPY) or the
	 * request (REPLACE). */
	if (replace) {
		meta_from_headers(req, &in);
	} else {
		for (size_t i = 0; i < c.cur.sys.n; i++)
			spx_kv_add(&in.sys, c.cur.sys.v[i].k, c.cur.sys.v[i].v);
		for (size_t i = 0; i < c.cur.user.n; i++)
			spx_kv_add(&in.user, c.cur.user.v[i].k,
				   c.cur.user.v[i].v);
	}
	if (!treplace)
		for (size_t i = 0; i < c.cur.tags.n; i++)
			spx_kv_add(&in.tags, c.cur.tags.v[i].k, c.cur.tags.v[i].v);
	else if (tags_from_header(g, req, resp, &in) < 0)
		goto out;
	rc = spx_obj_copy(g->gw->obj, &c.b, c.key, c.vid, &s->b, s->key,
			  &in, &out);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		goto out;
	}
	gw_xml_begin(g, resp, &x);
	if (c.versioned || c.vid)
		spx_kv_add(&resp->headers, "x-amz-copy-source-version-id",
			   spx_obj_vid_name(c.cur.vid));
	version_header(resp, b.versioning != SPX_OBJ_UNVERSIONED, out.vid);
	spx_xml_open_ns(&x, "CopyObjectResult", GW_S3_NS);
	spx_iso8601_ms((time_t)(out.mtime_ms / 1000), when, sizeof(when));
	spx_xml_elem(&x, "LastModified", when);
	spx_xml_elemf(&x, "ETag", "\"%s\"", out.etag);
	gw_xml_finish(g, req, resp, &x);
out:
	copy_src_release(&c);
	spx_obj_meta_release(&in);
	spx_obj_meta_release(&out);
}

/* UploadPart with x-amz-copy-source: a part made from (a range of) an
 * existing object, streamed through k + m blocks of memory. */
static void upload_part_copy(struct gw_req *g, struct spx_http_req *req,
			     struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *id = spx_kv_get(&g->params, "uploadId");
	const char *pn = spx_kv_get(&g->params, "partNumber");
	const char *rh = spx_kv_geti(&req->headers, "x-amz-copy-source-range");
	struct spx_obj_meta out = SPX_OBJ_META_INIT;
	struct copy_src c = { 0 };
	struct spx_obj_writer *w = NULL;
	struct spx_obj_reader *r = NULL;
	struct spx_range rg = { 0, 0 };
	char *end;
	unsigned char *buf = NULL;
	long n = pn ? strtol(pn, &end, 10) : 0;
	struct spx_xml x;
	char when[40];
	int rc;

	c.cur.inl = (struct spx_buf)SPX_BUF_INIT;
	if (own_bucket(g, req, resp, NULL) < 0)
		goto out;
	if (!id || !pn || *end || n < 1 || n > SPX_OBJ_MAX_PARTS) {
		gw_error(g, req, resp, 400, "InvalidArgument",
			 "Part number must be an integer between 1 and 10000, "
			 "inclusive");
		goto out;
	}
	if (copy_source(g, req, resp, &c) < 0)
		goto out;
	if (rh) {
		/* Unlike GET, a copy range must be exact and inside. */
		if (spx_range_parse(rh, c.cur.size, &rg) != SPX_RANGE_OK ||
		    strchr(rh + 6, '-') == rh + 6 ||
		    rg.last != strtoull(strchr(rh, '-') + 1, NULL, 10)) {
			gw_error(g, req, resp, 400, "InvalidArgument",
				 "The x-amz-copy-source-range value must be of "
				 "the form bytes=first-last where first and "
				 "last are the zero-based offsets of the first "
				 "and last bytes to copy");
			goto out;
		}
	} else {
		rg.last = c.cur.size ? c.cur.size - 1 : 0;
	}
	rc = spx_obj_part_begin(g->gw->obj, &s->b, s->key, id, (int)n, &w);
	if (rc == 0)
		rc = spx_obj_reader_open_version(g->gw->obj, &c.b, c.key,
						 c.vid, &r);
	buf = spx_malloc(1u << 20);
	for (uint64_t off = rg.first; rc == 0 && c.cur.size && off <= rg.last;) {
		size_t want = rg.last - off + 1 > (1u << 20) ? (1u << 20)
							      : (size_t)(rg.last - off + 1);
		size_t got = 0;

		rc = spx_obj_read(r, off, buf, want, &got);
		if (rc == 0 && got == 0)
			rc = spx_error(SPX_FAIL, "the source ended early");
		if (rc == 0)
			rc = spx_obj_writer_write(w, buf, got);
		off += got;
	}
	if (rc == 0) {
		rc = spx_obj_writer_commit(w, NULL, &out);
		w = NULL;
	}
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		goto out;
	}
	gw_xml_begin(g, resp, &x);
	if (c.versioned || c.vid)
		spx_kv_add(&resp->headers, "x-amz-copy-source-version-id",
			   spx_obj_vid_name(c.cur.vid));
	spx_xml_open_ns(&x, "CopyPartResult", GW_S3_NS);
	spx_iso8601_ms((time_t)(out.mtime_ms / 1000), when, sizeof(when));
	spx_xml_elem(&x, "LastModified", when);
	spx_xml_elemf(&x, "ETag", "\"%s\"", out.etag);
	gw_xml_finish(g, req, resp, &x);
out:
	spx_obj_writer_abort(w);
	spx_obj_reader_close(r);
	free(buf);
	copy_src_release(&c);
	spx_obj_meta_release(&out);
}

/* ---- buckets -------------------------------------------------------- */

static void list_buckets(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	struct spx_obj_bucket *b = NULL;
	size_t n = 0;
	struct spx_xml x;
	char when[40];
	int rc = spx_obj_bucket_list(g->gw->obj, &b, &n);

	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return;
	}
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ListAllMyBucketsResult", GW_S3_NS);
	spx_xml_open(&x, "Owner");
	spx_xml_elem(&x, "ID", g->who.account);
	spx_xml_elem(&x, "DisplayName",
		     g->who.user[0] ? g->who.user : g->who.account);
	spx_xml_close(&x);
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
}

static void create_bucket(struct gw_req *g, struct spx_http_req *req,
			  struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *region = g->gw->conf->aws.region;
	char loc[80];
	int rc;

	if (s->body.len) {
		struct spx_xml_doc *doc = NULL;
		const struct spx_xml_node *root;
		const char *lc;

		if (spx_xml_parse(s->body.p, s->body.len, NULL, &doc) < 0 ||
		    !(root = spx_xml_doc_root(doc)) ||
		    !spx_xml_is(root, "CreateBucketConfiguration", NULL)) {
			spx_xml_doc_free(doc);
			gw_error(g, req, resp, 400, "MalformedXML",
				 "The XML you provided was not well-formed or "
				 "did not validate against our published "
				 "schema");
			return;
		}
		lc = spx_xml_child_text(root, "LocationConstraint");
		if (lc && *lc && strcmp(lc, region)) {
			gw_error(g, req, resp, 400,
				 "IllegalLocationConstraintException",
				 "The %s location constraint is incompatible "
				 "for the region specific endpoint this "
				 "request was sent to.",
				 lc);
			spx_xml_doc_free(doc);
			return;
		}
		spx_xml_doc_free(doc);
	}
	if (!spx_obj_bucket_name_valid(s->bucket)) {
		obj_fail(g, req, resp, SPX_OBJ_INVALID_BUCKET);
		return;
	}
	rc = spx_obj_bucket_create(g->gw->obj, s->bucket, g->who.account,
				   region);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return;
	}
	resp->status = 200;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	snprintf(loc, sizeof(loc), "/%s", s->bucket);
	spx_kv_add(&resp->headers, "Location", loc);
	resp->ready = true;
}

static void delete_bucket(struct gw_req *g, struct spx_http_req *req,
			  struct spx_http_resp *resp)
{
	int rc;

	if (own_bucket(g, req, resp, NULL) < 0)
		return;
	rc = spx_obj_bucket_delete(g->gw->obj, &g->s3->b);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return;
	}
	empty_answer(g, resp, 204);
}

static void head_bucket(struct gw_req *g, struct spx_http_req *req,
			struct spx_http_resp *resp)
{
	struct spx_obj_bucket b;

	if (own_bucket(g, req, resp, &b) < 0) {
		headless(req, resp);
		return;
	}
	resp->status = 200;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	spx_kv_add(&resp->headers, "x-amz-bucket-region", b.region);
	resp->ready = true;
}

static void get_location(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	struct spx_obj_bucket b;
	struct spx_xml x;

	if (own_bucket(g, req, resp, &b) < 0)
		return;
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "LocationConstraint", GW_S3_NS);
	/* us-east-1 is the empty constraint, as in S3. */
	if (strcmp(b.region, "us-east-1"))
		spx_xml_text(&x, b.region);
	gw_xml_finish(g, req, resp, &x);
}

/* ---- listing -------------------------------------------------------- */

/* Text for a listing, URL-encoded when the client asked for it. */
static void list_text(struct spx_xml *x, const char *name, const char *v,
		      bool url)
{
	struct spx_buf b = SPX_BUF_INIT;

	if (!url) {
		spx_xml_elem(x, name, v);
		return;
	}
	spx_uri_encode(v, strlen(v), SPX_URI_SLASH, &b);
	spx_xml_elem(x, name, b.p);
	spx_buf_release(&b);
}

/* <Owner> of a listing entry: the caller's account. */
static void owner_elem(struct gw_req *g, struct spx_xml *x)
{
	spx_xml_open(x, "Owner");
	spx_xml_elem(x, "ID", g->who.account);
	spx_xml_elem(x, "DisplayName",
		     g->who.user[0] ? g->who.user : g->who.account);
	spx_xml_close(x);
}

/* The CommonPrefixes and EncodingType that end a listing. */
static void list_tail(struct spx_xml *x, char **prefixes, size_t n, bool url)
{
	for (size_t i = 0; i < n; i++) {
		spx_xml_open(x, "CommonPrefixes");
		list_text(x, "Prefix", prefixes[i], url);
		spx_xml_close(x);
	}
	if (url)
		spx_xml_elem(x, "EncodingType", "url");
}

static int list_params_max(struct gw_req *g, struct spx_http_req *req,
			   struct spx_http_resp *resp, const char *name,
			   long *max);

/* encoding-type (only "url") and max-keys (0..1000, default 1000) of a
 * listing; on a bad one the error is answered. */
static int list_params(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp, long *max)
{
	return list_params_max(g, req, resp, "max-keys", max);
}

/* The same with the count named name (max-uploads, ...). */
static int list_params_max(struct gw_req *g, struct spx_http_req *req,
			   struct spx_http_resp *resp, const char *name,
			   long *max)
{
	const char *mk = spx_kv_get(&g->params, name);
	const char *enc = spx_kv_get(&g->params, "encoding-type");
	char *e;

	*max = 1000;
	if (enc && strcmp(enc, "url")) {
		gw_error(g, req, resp, 400, "InvalidArgument",
			 "Invalid Encoding Method specified in Request");
		return -1;
	}
	if (!mk)
		return 0;
	*max = strtol(mk, &e, 10);
	if (*e || !*mk || *max < 0) {
		gw_error(g, req, resp, 400, "InvalidArgument",
			 "Provided %s not an integer or within integer range",
			 name);
		return -1;
	}
	if (*max > 1000)
		*max = 1000;
	return 0;
}

static void list_objects(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp, bool v2)
{
	struct gw_s3 *s = g->s3;
	const char *prefix = spx_kv_get(&g->params, "prefix");
	const char *delim = spx_kv_get(&g->params, "delimiter");
	const char *enc = spx_kv_get(&g->params, "encoding-type");
	const char *token = v2 ? spx_kv_get(&g->params, "continuation-token")
			       : NULL;
	const char *after = v2 ? spx_kv_get(&g->params, "start-after")
			       : spx_kv_get(&g->params, "marker");
	const char *fo = spx_kv_get(&g->params, "fetch-owner");
	bool owner = !v2 || (fo && !strcmp(fo, "true"));
	bool url = enc && !strcmp(enc, "url");
	struct spx_obj_list l = SPX_OBJ_LIST_INIT;
	struct spx_buf tok = SPX_BUF_INIT;
	char *tkey = NULL, when[40];
	long max = 1000;
	struct spx_xml x;
	int rc;

	if (own_bucket(g, req, resp, NULL) < 0 ||
	    list_params(g, req, resp, &max) < 0)
		return;
	if (token) {
		/* Our continuation token: the base64 of the last key. */
		char raw[SPX_OBJ_KEY_MAX + 4];
		size_t n = 0;

		if (spx_base64_decode(token, strlen(token), raw, sizeof(raw) - 1,
				      &n) < 0) {
			gw_error(g, req, resp, 400, "InvalidArgument",
				 "The continuation token provided is "
				 "incorrect");
			return;
		}
		raw[n] = '\0';
		tkey = spx_strndup(raw, n);
	}
	struct spx_obj_list_opts o = {
		.prefix = prefix,
		.after = tkey ? tkey : after,
		.delimiter = delim,
		.max = max ? (size_t)max : 1,
	};
	if (max == 0) {
		l.truncated = false;
	} else {
		rc = spx_obj_list(g->gw->obj, &s->b, &o, &l);
		if (rc < 0) {
			free(tkey);
			obj_fail(g, req, resp, rc);
			return;
		}
	}
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ListBucketResult", GW_S3_NS);
	spx_xml_elem(&x, "Name", s->bucket);
	list_text(&x, "Prefix", prefix ? prefix : "", url);
	if (v2) {
		spx_xml_elem_u64(&x, "KeyCount", l.n + l.nprefixes);
	} else {
		list_text(&x, "Marker", after ? after : "", url);
		if (l.truncated && delim && l.next)
			list_text(&x, "NextMarker", l.next, url);
	}
	spx_xml_elem_u64(&x, "MaxKeys", (uint64_t)max);
	if (delim)
		list_text(&x, "Delimiter", delim, url);
	spx_xml_elem(&x, "IsTruncated", l.truncated ? "true" : "false");
	if (v2) {
		if (token)
			spx_xml_elem(&x, "ContinuationToken", token);
		if (l.truncated && l.next) {
			spx_base64_encode(l.next, strlen(l.next), &tok);
			spx_xml_elem(&x, "NextContinuationToken", tok.p);
		}
		if (after)
			list_text(&x, "StartAfter", after, url);
	}
	for (size_t i = 0; i < l.n; i++) {
		spx_xml_open(&x, "Contents");
		list_text(&x, "Key", l.v[i].key, url);
		spx_iso8601_ms((time_t)(l.v[i].mtime_ms / 1000), when,
			       sizeof(when));
		spx_xml_elem(&x, "LastModified", when);
		spx_xml_elemf(&x, "ETag", "\"%s\"", l.v[i].etag);
		spx_xml_elem_u64(&x, "Size", l.v[i].size);
		if (owner)
			owner_elem(g, &x);
		spx_xml_elem(&x, "StorageClass", "STANDARD");
		spx_xml_close(&x);
	}
	list_tail(&x, l.prefixes, l.nprefixes, url);
	gw_xml_finish(g, req, resp, &x);
	spx_obj_list_release(&l);
	spx_buf_release(&tok);
	free(tkey);
}

static void get_versioning(struct gw_req *g, struct spx_http_req *req,
			   struct spx_http_resp *resp)
{
	struct spx_obj_bucket b;
	struct spx_xml x;

	if (own_bucket(g, req, resp, &b) < 0)
		return;
	/* A bucket that was never versioned has no Status, as in S3. */
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "VersioningConfiguration", GW_S3_NS);
	if (b.versioning != SPX_OBJ_UNVERSIONED)
		spx_xml_elem(&x, "Status",
			     b.versioning == SPX_OBJ_VERSIONING_ENABLED
				     ? "Enabled"
				     : "Suspended");
	gw_xml_finish(g, req, resp, &x);
}

static void put_versioning(struct gw_req *g, struct spx_http_req *req,
			   struct spx_http_resp *resp)
{
	struct spx_s3_err e;
	bool enabled;
	int rc;

	if (own_bucket(g, req, resp, NULL) < 0)
		return;
	if (spx_s3_versioning_xml(g->s3->body.p, g->s3->body.len, &enabled,
				  &e) < 0) {
		conf_fail(g, req, resp, &e);
		return;
	}
	rc = spx_obj_bucket_set_versioning(g->gw->obj, &g->s3->b,
					   enabled ? SPX_OBJ_VERSIONING_ENABLED
						   : SPX_OBJ_VERSIONING_SUSPENDED);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return;
	}
	empty_answer(g, resp, 200);
}

static void list_versions(struct gw_req *g, struct spx_http_req *req,
			  struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *prefix = spx_kv_get(&g->params, "prefix");
	const char *delim = spx_kv_get(&g->params, "delimiter");
	const char *enc = spx_kv_get(&g->params, "encoding-type");
	const char *km = spx_kv_get(&g->params, "key-marker");
	const char *vm = spx_kv_get(&g->params, "version-id-marker");
	bool url = enc && !strcmp(enc, "url");
	struct spx_obj_versions l = { 0 };
	struct spx_obj_versions_opts o = { 0 };
	long max = 1000;
	struct spx_xml x;
	char when[40];
	int rc;

	if (own_bucket(g, req, resp, NULL) < 0 ||
	    list_params(g, req, resp, &max) < 0)
		return;
	if (vm && *vm && !(km && *km)) {
		gw_error(g, req, resp, 400, "InvalidArgument",
			 "A version-id marker cannot be specified without a "
			 "key marker.");
		return;
	}
	o.prefix = prefix;
	o.key_marker = km;
	o.vid_marker = vm;
	o.delimiter = delim;
	o.max = max ? (size_t)max : 1;
	if (max) {
		rc = spx_obj_list_versions(g->gw->obj, &s->b, &o, &l);
		if (rc < 0) {
			obj_fail(g, req, resp, rc);
			return;
		}
	}
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ListVersionsResult", GW_S3_NS);
	spx_xml_elem(&x, "Name", s->bucket);
	list_text(&x, "Prefix", prefix ? prefix : "", url);
	list_text(&x, "KeyMarker", km ? km : "", url);
	spx_xml_elem(&x, "VersionIdMarker", vm ? vm : "");
	if (l.truncated) {
		list_text(&x, "NextKeyMarker", l.next_key, url);
		if (!l.next_is_prefix)
			spx_xml_elem(&x, "NextVersionIdMarker",
				     spx_obj_vid_name(l.next_vid));
	}
	spx_xml_elem_u64(&x, "MaxKeys", (uint64_t)max);
	if (delim)
		list_text(&x, "Delimiter", delim, url);
	spx_xml_elem(&x, "IsTruncated", l.truncated ? "true" : "false");
	for (size_t i = 0; i < l.n; i++) {
		const struct spx_obj_version *v = &l.v[i];

		spx_xml_open(&x, v->delete_marker ? "DeleteMarker" : "Version");
		list_text(&x, "Key", v->key, url);
		spx_xml_elem(&x, "VersionId", spx_obj_vid_name(v->vid));
		spx_xml_elem(&x, "IsLatest", v->latest ? "true" : "false");
		spx_iso8601_ms((time_t)(v->mtime_ms / 1000), when, sizeof(when));
		spx_xml_elem(&x, "LastModified", when);
		if (!v->delete_marker) {
			spx_xml_elemf(&x, "ETag", "\"%s\"", v->etag);
			spx_xml_elem_u64(&x, "Size", v->size);
			spx_xml_elem(&x, "StorageClass",
				     v->storage_class[0] ? v->storage_class
							 : "STANDARD");
		}
		owner_elem(g, &x);
		spx_xml_close(&x);
	}
	list_tail(&x, l.prefixes, l.nprefixes, url);
	gw_xml_finish(g, req, resp, &x);
	spx_obj_versions_release(&l);
}

static void tagging_doc(struct gw_req *g, struct spx_http_req *req,
			struct spx_http_resp *resp,
			const struct spx_kvlist *tags, bool showv,
			const char *vid)
{
	struct spx_xml x;

	gw_xml_begin(g, resp, &x);
	version_header(resp, showv, vid);
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

static void bucket_tagging(struct gw_req *g, struct spx_http_req *req,
			   struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	struct spx_s3_err e;
	int rc;

	if (own_bucket(g, req, resp, NULL) < 0)
		return;
	switch (s->op) {
	case OP_GET_BUCKET_TAGGING:
		rc = spx_obj_bucket_tags(g->gw->obj, &s->b, &tags);
		if (rc < 0)
			obj_fail(g, req, resp, rc);
		else if (!tags.n)
			gw_error(g, req, resp, 404, "NoSuchTagSet",
				 "The TagSet does not exist");
		else
			tagging_doc(g, req, resp, &tags, false, NULL);
		break;
	case OP_PUT_BUCKET_TAGGING:
		if (spx_s3_tags_xml(s->body.p, s->body.len, SPX_S3_TAGS_BUCKET,
				    &tags, &e) < 0) {
			conf_fail(g, req, resp, &e);
			break;
		}
		rc = spx_obj_bucket_set_tags(g->gw->obj, &s->b, &tags);
		if (rc < 0)
			obj_fail(g, req, resp, rc);
		else
			empty_answer(g, resp, 204);
		break;
	default:
		rc = spx_obj_bucket_set_tags(g->gw->obj, &s->b, NULL);
		if (rc < 0)
			obj_fail(g, req, resp, rc);
		else
			empty_answer(g, resp, 204);
		break;
	}
	spx_kv_free(&tags);
}

static void object_tagging(struct gw_req *g, struct spx_http_req *req,
			   struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	struct spx_obj_bucket b;
	struct spx_s3_err e;
	char vid[SPX_OBJ_VID_SIZE];
	const char *want;
	bool bad, showv;
	int rc;

	if (own_bucket(g, req, resp, &b) < 0)
		return;
	want = version_param(g, req, resp, &bad);
	if (bad)
		return;
	showv = want || b.versioning != SPX_OBJ_UNVERSIONED;
	if (s->op == OP_GET_OBJECT_TAGGING) {
		rc = spx_obj_stat_version(g->gw->obj, &s->b, s->key, want, &m);
		if (rc == 0 && m.delete_marker)
			rc = want ? SPX_OBJ_DELETE_MARKER : SPX_OBJ_NO_SUCH_KEY;
		if (rc < 0) {
			obj_fail(g, req, resp, rc);
			marker_headers(g, resp, want, rc);
		} else {
			tagging_doc(g, req, resp, &m.tags, showv, m.vid);
		}
		spx_obj_meta_release(&m);
		return;
	}
	if (s->op == OP_PUT_OBJECT_TAGGING &&
	    spx_s3_tags_xml(s->body.p, s->body.len, SPX_S3_TAGS_OBJECT, &tags,
			    &e) < 0) {
		conf_fail(g, req, resp, &e);
		return;
	}
	rc = spx_obj_set_tags(g->gw->obj, &s->b, s->key, want, &tags, vid);
	spx_kv_free(&tags);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		marker_headers(g, resp, want, rc);
		return;
	}
	empty_answer(g, resp, s->op == OP_PUT_OBJECT_TAGGING ? 200 : 204);
	version_header(resp, showv, vid);
}

/* ---- multipart uploads ---------------------------------------------- */

/* CreateMultipartUpload's x-amz-checksum-algorithm and -type: the object
 * checksum Complete will compute. FULL_OBJECT is for the CRCs only, and
 * CRC64NVME is only FULL_OBJECT (its default); the others default to
 * COMPOSITE. */
static int mpu_algo_from_headers(struct gw_req *g, struct spx_http_req *req,
				 struct spx_http_resp *resp,
				 struct spx_obj_meta *in)
{
	const char *a = spx_kv_geti(&req->headers, "x-amz-checksum-algorithm");
	const char *t = spx_kv_geti(&req->headers, "x-amz-checksum-type");
	enum spx_cksum_algo algo;
	bool crc;

	if (!a && !t)
		return 0;
	if (!a || spx_cksum_from_name(a, &algo) < 0) {
		gw_error(g, req, resp, 400, "InvalidRequest",
			 "Value for x-amz-checksum-algorithm header is "
			 "invalid.");
		return -1;
	}
	crc = algo == SPX_CKSUM_CRC32 || algo == SPX_CKSUM_CRC32C ||
	      algo == SPX_CKSUM_CRC64NVME;
	if (!t)
		t = algo == SPX_CKSUM_CRC64NVME ? "FULL_OBJECT" : "COMPOSITE";
	if ((strcmp(t, "COMPOSITE") && strcmp(t, "FULL_OBJECT")) ||
	    (!strcmp(t, "FULL_OBJECT") && !crc) ||
	    (!strcmp(t, "COMPOSITE") && algo == SPX_CKSUM_CRC64NVME)) {
		gw_error(g, req, resp, 400, "InvalidRequest",
			 "The %s checksum type cannot be used with the %s "
			 "checksum algorithm.", t, spx_cksum_name(algo));
		return -1;
	}
	spx_kv_add(&in->checksums, "algorithm", spx_cksum_name(algo));
	spx_kv_add(&in->checksums, "type", t);
	return 0;
}

static void create_mpu(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta in = SPX_OBJ_META_INIT;
	char id[SPX_OBJ_UPLOAD_ID_SIZE];
	struct spx_xml x;
	int rc;

	if (own_bucket(g, req, resp, NULL) < 0)
		return;
	meta_from_headers(req, &in);
	if (tags_from_header(g, req, resp, &in) < 0 ||
	    mpu_algo_from_headers(g, req, resp, &in) < 0) {
		spx_obj_meta_release(&in);
		return;
	}
	rc = spx_obj_mpu_create(g->gw->obj, &s->b, s->key, &in, id);
	if (rc < 0) {
		spx_obj_meta_release(&in);
		obj_fail(g, req, resp, rc);
		return;
	}
	gw_xml_begin(g, resp, &x);
	if (spx_kv_get(&in.checksums, "algorithm")) {
		spx_kv_add(&resp->headers, "x-amz-checksum-algorithm",
			   spx_kv_get(&in.checksums, "algorithm"));
		spx_kv_add(&resp->headers, "x-amz-checksum-type",
			   spx_kv_get(&in.checksums, "type"));
	}
	spx_obj_meta_release(&in);
	spx_xml_open_ns(&x, "InitiateMultipartUploadResult", GW_S3_NS);
	spx_xml_elem(&x, "Bucket", s->bucket);
	spx_xml_elem(&x, "Key", s->key);
	spx_xml_elem(&x, "UploadId", id);
	gw_xml_finish(g, req, resp, &x);
}

static void malformed(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	gw_error(g, req, resp, 400, "MalformedXML",
		 "The XML you provided was not well-formed or did not "
		 "validate against our published schema");
}

static void complete_mpu(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *id = spx_kv_get(&g->params, "uploadId");
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *p;
	struct spx_obj_complete_part *parts = NULL;
	struct spx_obj_meta out = SPX_OBJ_META_INIT;
	struct spx_obj_bucket b;
	enum spx_cksum_algo algo = SPX_CKSUM_CRC32;
	bool algo_on = false, full = false;
	char ckel[32] = "";
	const char *want = NULL;
	size_t n = 0;
	struct spx_xml x;
	int rc;

	if (own_bucket(g, req, resp, &b) < 0)
		return;
	if (upload_algo(g, req, resp, id, &algo, &algo_on, &full) < 0)
		return;
	if (algo_on)
		snprintf(ckel, sizeof(ckel), "Checksum%s", spx_cksum_name(algo));
	if (spx_xml_parse(s->body.p, s->body.len, NULL, &doc) < 0 ||
	    !(root = spx_xml_doc_root(doc)) ||
	    !spx_xml_is(root, "CompleteMultipartUpload", NULL)) {
		malformed(g, req, resp);
		goto out;
	}
	parts = spx_calloc(spx_xml_count(root, "Part") + 1, sizeof(*parts));
	for (p = spx_xml_child(root, "Part"); p; p = spx_xml_next(p, "Part")) {
		const char *num = spx_xml_child_text(p, "PartNumber");
		const char *etag = spx_xml_child_text(p, "ETag");
		char *e;
		long v = num ? strtol(num, &e, 10) : 0;

		if (!num || !etag || *e || v < 1 || v > SPX_OBJ_MAX_PARTS) {
			malformed(g, req, resp);
			goto out;
		}
		parts[n].num = (int)v;
		parts[n].etag = etag;
		/* S3 wants each part's checksum for a COMPOSITE upload; for
		 * FULL_OBJECT they are optional, and checked when given. */
		if (algo_on) {
			parts[n].checksum = spx_xml_child_text(p, ckel);
			if (!parts[n].checksum && !full) {
				gw_error(g, req, resp, 400, "InvalidRequest",
					 "The upload was created using a %s "
					 "checksum. The complete request must "
					 "include the checksum for each part. "
					 "It was missing for part %ld in the "
					 "request.",
					 cksum_key(algo), v);
				goto out;
			}
		}
		n++;
	}
	if (!n) {
		malformed(g, req, resp);
		goto out;
	}
	/* The whole object's checksum, if the client states it. */
	if (algo_on)
		want = spx_kv_geti(&req->headers, spx_cksum_header(algo));
	rc = spx_obj_mpu_complete(g->gw->obj, &s->b, s->key, id, parts, n,
				  want, &out);
	if (rc == SPX_OBJ_BAD_DIGEST) {
		gw_error(g, req, resp, 400, "BadDigest",
			 "The %s you specified did not match the calculated "
			 "checksum.", spx_cksum_name(algo));
		goto out;
	}
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		goto out;
	}
	gw_xml_begin(g, resp, &x);
	version_header(resp, b.versioning != SPX_OBJ_UNVERSIONED, out.vid);
	spx_xml_open_ns(&x, "CompleteMultipartUploadResult", GW_S3_NS);
	spx_xml_elemf(&x, "Location", "/%s/%s", s->bucket, s->key);
	spx_xml_elem(&x, "Bucket", s->bucket);
	spx_xml_elem(&x, "Key", s->key);
	spx_xml_elemf(&x, "ETag", "\"%s\"", out.etag);
	if (algo_on) {
		const char *v = spx_kv_get(&out.checksums, cksum_key(algo));

		if (v)
			spx_xml_elem(&x, ckel, v);
		if (spx_kv_get(&out.checksums, "type"))
			spx_xml_elem(&x, "ChecksumType",
				     spx_kv_get(&out.checksums, "type"));
	}
	gw_xml_finish(g, req, resp, &x);
out:
	free(parts);
	spx_xml_doc_free(doc);
	spx_obj_meta_release(&out);
}

static void abort_mpu(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	int rc;

	if (own_bucket(g, req, resp, NULL) < 0)
		return;
	rc = spx_obj_mpu_abort(g->gw->obj, &g->s3->b, g->s3->key,
			       spx_kv_get(&g->params, "uploadId"));
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return;
	}
	empty_answer(g, resp, 204);
}

static void list_parts(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *id = spx_kv_get(&g->params, "uploadId");
	const char *mk = spx_kv_get(&g->params, "part-number-marker");
	struct spx_obj_part *parts = NULL;
	size_t n = 0;
	bool trunc = false;
	char *end = NULL;
	long marker = mk ? strtol(mk, &end, 10) : 0;
	long max = 1000;
	enum spx_cksum_algo a = SPX_CKSUM_CRC32;
	bool algo_on = false;
	struct spx_xml x;
	char when[40];
	int rc;

	if (own_bucket(g, req, resp, NULL) < 0 ||
	    list_params_max(g, req, resp, "max-parts", &max) < 0)
		return;
	if (mk && (!*mk || *end || marker < 0 || marker > SPX_OBJ_MAX_PARTS)) {
		gw_error(g, req, resp, 400, "InvalidArgument",
			 "Provided part-number-marker not an integer or within "
			 "integer range");
		return;
	}
	if (upload_algo(g, req, resp, id, &a, &algo_on, NULL) < 0)
		return;
	if (max == 0)
		max = 1000;
	rc = spx_obj_mpu_parts(g->gw->obj, &s->b, s->key, id,
			       marker < 0 ? 0 : (int)marker, (size_t)max,
			       &parts, &n, &trunc);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return;
	}
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ListPartsResult", GW_S3_NS);
	spx_xml_elem(&x, "Bucket", s->bucket);
	spx_xml_elem(&x, "Key", s->key);
	spx_xml_elem(&x, "UploadId", id);
	spx_xml_elem_i64(&x, "PartNumberMarker", marker);
	if (n)
		spx_xml_elem_i64(&x, "NextPartNumberMarker", parts[n - 1].num);
	spx_xml_elem_i64(&x, "MaxParts", max);
	spx_xml_elem(&x, "IsTruncated", trunc ? "true" : "false");
	for (size_t i = 0; i < n; i++) {
		spx_xml_open(&x, "Part");
		spx_xml_elem_i64(&x, "PartNumber", parts[i].num);
		spx_iso8601_ms((time_t)(parts[i].mtime_ms / 1000), when,
			       sizeof(when));
		spx_xml_elem(&x, "LastModified", when);
		spx_xml_elemf(&x, "ETag", "\"%s\"", parts[i].etag);
		spx_xml_elem_u64(&x, "Size", parts[i].size);
		enum spx_cksum_algo pa;

		if (parts[i].cksum_name[0] &&
		    spx_cksum_from_name(parts[i].cksum_name, &pa) == 0) {
			char el[32];

			snprintf(el, sizeof(el), "Checksum%s", spx_cksum_name(pa));
			spx_xml_elem(&x, el, parts[i].cksum);
		}
		spx_xml_close(&x);
	}
	spx_xml_elem(&x, "StorageClass", "STANDARD");
	if (algo_on)
		spx_xml_elem(&x, "ChecksumAlgorithm", spx_cksum_name(a));
	free(parts);
	gw_xml_finish(g, req, resp, &x);
}

/* ListMultipartUploads: by key, then by initiation; paged with
 * key-marker and upload-id-marker, max-uploads at a time, keys rolled up
 * into common prefixes at a delimiter. XXX: the engine reads every
 * pending upload of the bucket for each page. */
static void list_uploads(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *prefix = spx_kv_get(&g->params, "prefix");
	const char *delim = spx_kv_get(&g->params, "delimiter");
	const char *km = spx_kv_get(&g->params, "key-marker");
	const char *um = spx_kv_get(&g->params, "upload-id-marker");
	const char *enc = spx_kv_get(&g->params, "encoding-type");
	bool url = enc && !strcmp(enc, "url");
	struct spx_obj_upload *u = NULL;
	char **pfx = NULL, when[40];
	const char *last_key = NULL, *last_id = NULL;
	size_t n = 0, i = 0, np = 0, *show = NULL, ns = 0, plen;
	bool trunc = false;
	long max = 1000;
	struct spx_xml x;
	int rc;

	if (own_bucket(g, req, resp, NULL) < 0 ||
	    list_params_max(g, req, resp, "max-uploads", &max) < 0)
		return;
	delim = delim && *delim ? delim : NULL;
	km = km && *km ? km : NULL;
	um = km && um && *um ? um : NULL;
	plen = prefix ? strlen(prefix) : 0;
	rc = spx_obj_mpu_list(g->gw->obj, &s->b, prefix ? prefix : "", &u,
			      &n);
	if (rc < 0) {
		obj_fail(g, req, resp, rc);
		return;
	}
	/* Skip what the markers say was shown: keys before key-marker, and
	 * key-marker's own uploads up to upload-id-marker (all of them
	 * without one, or when that id is not among them). */
	if (km) {
		size_t j;

		while (i < n && strcmp(u[i].key, km) < 0)
			i++;
		for (j = i; um && j < n && !strcmp(u[j].key, km); j++)
			if (!strcmp(u[j].id, um))
				break;
		if (um && j < n && !strcmp(u[j].key, km))
			i = j + 1;
		else
			while (i < n && !strcmp(u[i].key, km))
				i++;
	}
	show = spx_calloc(n + 1, sizeof(*show));
	for (; i < n; i++) {
		const char *d = delim ? strstr(u[i].key + plen, delim) : NULL;
		size_t l = d ? (size_t)(d - u[i].key) + strlen(delim) : 0;

		/* A common prefix counts once; one a key-marker names was
		 * shown on an earlier page. */
		if (d && ((np && strlen(pfx[np - 1]) == l &&
			   !strncmp(pfx[np - 1], u[i].key, l)) ||
			  (km && strlen(km) == l && !strncmp(km, u[i].key, l))))
			continue;
		if (ns + np == (size_t)max) {
			trunc = true;
			break;
		}
		if (d) {
			pfx = spx_realloc(pfx, (np + 1) * sizeof(*pfx));
			pfx[np] = spx_strndup(u[i].key, l);
			last_key = pfx[np++];
			last_id = NULL;
		} else {
			show[ns++] = i;
			last_key = u[i].key;
			last_id = u[i].id;
		}
	}
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ListMultipartUploadsResult", GW_S3_NS);
	spx_xml_elem(&x, "Bucket", s->bucket);
	list_text(&x, "KeyMarker", km ? km : "", url);
	spx_xml_elem(&x, "UploadIdMarker", um ? um : "");
	if (trunc && last_key) {
		list_text(&x, "NextKeyMarker", last_key, url);
		spx_xml_elem(&x, "NextUploadIdMarker", last_id ? last_id : "");
	}
	if (delim)
		list_text(&x, "Delimiter", delim, url);
	list_text(&x, "Prefix", prefix ? prefix : "", url);
	spx_xml_elem_i64(&x, "MaxUploads", max);
	spx_xml_elem(&x, "IsTruncated", trunc ? "true" : "false");
	for (size_t j = 0; j < ns; j++) {
		const struct spx_obj_upload *v = &u[show[j]];

		spx_xml_open(&x, "Upload");
		list_text(&x, "Key", v->key, url);
		spx_xml_elem(&x, "UploadId", v->id);
		spx_xml_open(&x, "Initiator");
		spx_xml_elem(&x, "ID", g->who.account);
		spx_xml_elem(&x, "DisplayName",
			     g->who.user[0] ? g->who.user : g->who.account);
		spx_xml_close(&x);
		owner_elem(g, &x);
		spx_xml_elem(&x, "StorageClass", "STANDARD");
		spx_iso8601_ms((time_t)(v->initiated_ms / 1000), when,
			       sizeof(when));
		spx_xml_elem(&x, "Initiated", when);
		spx_xml_close(&x);
	}
	list_tail(&x, pfx, np, url);
	for (size_t j = 0; j < np; j++)
		free(pfx[j]);
	free(pfx);
	free(show);
	spx_obj_upload_free(u, n);
	gw_xml_finish(g, req, resp, &x);
}

/* ---- DeleteObjects -------------------------------------------------- */

static void delete_objects(struct gw_req *g, struct spx_http_req *req,
			   struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *o;
	const char *quiet;
	struct spx_xml x;
	bool q;

	if (own_bucket(g, req, resp, NULL) < 0)
		return;
	if (spx_xml_parse(s->body.p, s->body.len, NULL, &doc) < 0 ||
	    !(root = spx_xml_doc_root(doc)) || !spx_xml_is(root, "Delete", NULL) ||
	    spx_xml_count(root, "Object") > 1000) {
		spx_xml_doc_free(doc);
		malformed(g, req, resp);
		return;
	}
	quiet = spx_xml_child_text(root, "Quiet");
	q = quiet && !strcmp(quiet, "true");
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "DeleteResult", GW_S3_NS);
	for (o = spx_xml_child(root, "Object"); o; o = spx_xml_next(o, "Object")) {
		const char *k = spx_xml_child_text(o, "Key");
		const char *vid = spx_xml_child_text(o, "VersionId");
		struct spx_obj_deleted d = { 0 };
		int rc = k ? spx_obj_delete_version(g->gw->obj, &s->b, k,
						    vid, &d)
			   : SPX_OBJ_INVALID_ARG;

		spx_error_clear();
		if (rc == 0 || rc == SPX_OBJ_NO_SUCH_KEY ||
		    rc == SPX_OBJ_NO_SUCH_VERSION) {
			if (q)
				continue;
			spx_xml_open(&x, "Deleted");
			spx_xml_elem(&x, "Key", k);
			spx_xml_elem(&x, "VersionId", vid);
			if (rc == 0 && d.delete_marker) {
				spx_xml_elem(&x, "DeleteMarker", "true");
				spx_xml_elem(&x, "DeleteMarkerVersionId",
					     spx_obj_vid_name(d.vid));
			}
			spx_xml_close(&x);
		} else {
			const struct spx_obj_code *c = spx_obj_code(rc);

			spx_xml_open(&x, "Error");
			spx_xml_elem(&x, "Key", k ? k : "");
			spx_xml_elem(&x, "VersionId", vid);
			spx_xml_elem(&x, "Code", c->code);
			spx_xml_elem(&x, "Message", c->message);
			spx_xml_close(&x);
		}
	}
	spx_xml_doc_free(doc);
	gw_xml_finish(g, req, resp, &x);
}

/* ---- the pipeline --------------------------------------------------- */

void gw_s3_begin(struct gw_req *g, struct spx_http_req *req,
		 struct spx_http_resp *resp)
{
	struct gw_s3 *s = spx_calloc(1, sizeof(*s));

	g->s3 = s;
	spx_buf_init(&s->body, 0);
	if (spx_query_parse(req->query, strlen(req->query), 0, &g->params) <
		    0 ||
	    parse_target(g, req) < 0) {
		gw_error(g, req, resp, 400, "InvalidURI",
			 "Couldn't parse the specified URI.");
		return;
	}
	s->op = route(g, req);
	if (op_names[s->op])
		snprintf(req->note.op, sizeof(req->note.op), "%s",
			 op_names[s->op]);
	switch (s->op) {
	case OP_NONE:
		not_impl(g, req, resp);
		return;
	case OP_PUT_OBJECT:
	case OP_UPLOAD_PART:
		begin_write(g, req, resp);
		return;
	default:
		/* Any other body sent aws-chunked is decoded, and its chunk
		 * signatures checked, like an object's. */
		if (streaming(g))
			chunked_begin(g, req, resp, feed_xml);
		return;
	}
}

void gw_s3_body(struct gw_req *g, struct spx_http_req *req, const char *data,
		size_t len, struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;

	if (s->w) {
		write_body(g, req, data, len, resp);
		return;
	}
	if (s->chunked) {
		chunked_feed(g, req, data, len, resp);
		return;
	}
	if (s->body.len + len > S3_XML_BODY_MAX) {
		gw_error(g, req, resp, 400, "MaxMessageLengthExceeded",
			 "Your request was too big.");
		return;
	}
	spx_buf_add(&s->body, data, len);
}

void gw_s3_end(struct gw_req *g, struct spx_http_req *req,
	       struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;

	if (s->chunked && !s->w && s->op != OP_PUT_OBJECT &&
	    s->op != OP_UPLOAD_PART && chunked_end(g, req, resp) < 0) {
		headless(req, resp);
		return;
	}
	switch (s->op) {
	case OP_PUT_OBJECT:
	case OP_UPLOAD_PART:
		end_write(g, req, resp);
		break;
	case OP_LIST_BUCKETS:
		list_buckets(g, req, resp);
		break;
	case OP_CREATE_BUCKET:
		create_bucket(g, req, resp);
		break;
	case OP_DELETE_BUCKET:
		delete_bucket(g, req, resp);
		break;
	case OP_HEAD_BUCKET:
		head_bucket(g, req, resp);
		break;
	case OP_GET_LOCATION:
		get_location(g, req, resp);
		break;
	case OP_LIST_OBJECTS:
	case OP_LIST_OBJECTS_V2:
		list_objects(g, req, resp, s->op == OP_LIST_OBJECTS_V2);
		break;
	case OP_LIST_UPLOADS:
		list_uploads(g, req, resp);
		break;
	case OP_DELETE_OBJECTS:
		delete_objects(g, req, resp);
		break;
	case OP_COPY_OBJECT:
		copy_object(g, req, resp);
		break;
	case OP_GET_OBJECT:
	case OP_HEAD_OBJECT:
		get_object(g, req, resp);
		break;
	case OP_DELETE_OBJECT:
		delete_object(g, req, resp);
		break;
	case OP_CREATE_MPU:
		create_mpu(g, req, resp);
		break;
	case OP_COMPLETE_MPU:
		complete_mpu(g, req, resp);
		break;
	case OP_ABORT_MPU:
		abort_mpu(g, req, resp);
		break;
	case OP_LIST_PARTS:
		list_parts(g, req, resp);
		break;
	case OP_UPLOAD_PART_COPY:
		upload_part_copy(g, req, resp);
		break;
	case OP_GET_VERSIONING:
		get_versioning(g, req, resp);
		break;
	case OP_PUT_VERSIONING:
		put_versioning(g, req, resp);
		break;
	case OP_LIST_VERSIONS:
		list_versions(g, req, resp);
		break;
	case OP_GET_BUCKET_TAGGING:
	case OP_PUT_BUCKET_TAGGING:
	case OP_DELETE_BUCKET_TAGGING:
		bucket_tagging(g, req, resp);
		break;
	case OP_GET_OBJECT_TAGGING:
	case OP_PUT_OBJECT_TAGGING:
	case OP_DELETE_OBJECT_TAGGING:
		object_tagging(g, req, resp);
		break;
	case OP_NONE:
		not_impl(g, req, resp);
		break;
	}
	headless(req, resp);
}
