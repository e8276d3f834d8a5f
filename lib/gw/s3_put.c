/* s3_put.c: PutObject and UploadPart, the streaming write path. begin
 * checks what can be checked from the headers and starts an object
 * writer; each piece of the body goes to it (through the aws-chunked
 * decoder for streaming uploads), the requested checksum computed on the
 * way; the end checks the checksum, Content-MD5 and the signature's hash
 * (gw.c) before the commit, so a bad upload changes nothing. */
#include "spx.h"

#include "gw/s3_int.h"
#include "http/httpdate.h"

/* The storage classes S3 knows; spx keeps every object the same way and
 * records the class the client asked for. */
bool s3_storage_class_valid(const char *c)
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

static bool is_put(const struct gw_s3 *s)
{
	return !strcmp(s->op->name, "PutObject");
}

/* The decoded body into the checksum and the writer. */
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

/* UploadPart to an upload made with a checksum algorithm: a checksum the
 * part carries must be of that algorithm; a COMPOSITE upload requires
 * one, as S3 does, while for a FULL_OBJECT one the gateway computes it
 * when the client sent none. */
static int part_checksum(struct gw_req *g, const char *id)
{
	struct gw_s3 *s = g->s3;
	enum spx_cksum_algo a;
	bool on, full;

	if (s3_upload_algo(g, id, &a, &on, &full) < 0)
		return -1;
	if (on && full && !s->has_ck) {
		if (spx_cksum_init(&s->ck, a) < 0)
			return s3_obj_fail(g, SPX_OBJ_INTERNAL);
		s->algo = a;
		s->has_ck = true;
		return 0;
	}
	if (on && (!s->has_ck || s->algo != a))
		return s3_fail(g, 400, "InvalidRequest",
			       "Checksum Type mismatch occurred, expected "
			       "checksum Type: %s, actual checksum Type: %s",
			       s3_cksum_key(a),
			       s->has_ck ? spx_cksum_name(s->algo) : "null");
	return 0;
}

/* A write's If-None-Match: * and If-Match (PutObject and
 * CompleteMultipartUpload) against the current object (cur NULL: none).
 * S3 answers 412 for an object that is there or differs, and 404
 * NoSuchKey for If-Match on none. */
int s3_write_cond(void *ctx, const struct spx_obj_meta *cur)
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

int s3_write_cond_headers(struct gw_req *g, struct spx_http_req *req)
{
	struct gw_s3 *s = g->s3;

	s->if_none_match = spx_kv_geti(&req->headers, "If-None-Match");
	s->if_match = spx_kv_geti(&req->headers, "If-Match");
	/* S3 takes only "*" here. */
	if (s->if_none_match && strcmp(s->if_none_match, "*"))
		return s3_not_impl();
	return 0;
}

/* The checksum the client names: x-amz-sdk-checksum-algorithm, an
 * x-amz-checksum-* header, or the trailer it announces. */
static int checksum_from_headers(struct gw_req *g, struct spx_http_req *req)
{
	struct gw_s3 *s = g->s3;
	const char *name = spx_kv_geti(&req->headers,
				       "x-amz-sdk-checksum-algorithm");
	const char *tr = spx_kv_geti(&req->headers, "x-amz-trailer");

	for (int a = 0; a < SPX_CKSUM_NALGO && !name; a++)
		if (a != SPX_CKSUM_MD5 &&
		    spx_kv_geti(&req->headers,
				spx_cksum_header((enum spx_cksum_algo)a)))
			name = spx_cksum_name((enum spx_cksum_algo)a);
	if (!name && tr && !strncasecmp(tr, "x-amz-checksum-", 15))
		name = tr + 15;
	if (!name)
		return 0;
	if (spx_cksum_from_name(name, &s->algo) < 0)
		return s3_fail(g, 400, "InvalidRequest",
			       "Value for x-amz-checksum-algorithm header is "
			       "invalid.");
	if (spx_cksum_init(&s->ck, s->algo) < 0)
		return s3_obj_fail(g, SPX_OBJ_INTERNAL);
	s->has_ck = true;
	return 0;
}

/* PutObject: conditions, metadata and tags, and the writer. */
static int begin_object(struct gw_req *g, struct spx_http_req *req)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta in = SPX_OBJ_META_INIT;
	int rc;

	if (s3_write_cond_headers(g, req) < 0)
		return -1;
	/* Conditional writes: checked now, so that a doomed upload is
	 * refused before its body, and again by the engine under the key's
	 * lock at the commit. */
	if (s->if_none_match || s->if_match) {
		struct spx_obj_meta cur = SPX_OBJ_META_INIT;

		rc = spx_obj_stat(g->gw->obj, &s->b, s->key, &cur);
		if (rc == 0 || rc == SPX_OBJ_NO_SUCH_KEY)
			rc = s3_write_cond(s, rc == 0 ? &cur : NULL);
		else
			rc = 0; /* the bucket's failure comes below */
		spx_obj_meta_release(&cur);
		if (rc < 0)
			return s3_obj_fail(g, rc);
	}
	s3_meta_from_headers(req, &in);
	if (s3_tags_from_header(g, req, &in) < 0 ||
	    s3_lock_for_write(g, req, &in, true) < 0) {
		spx_obj_meta_release(&in);
		return -1;
	}
	s3_acl_meta(g, &in);
	rc = spx_obj_writer_begin(g->gw->obj, &s->b, s->key, &in, &s->w);
	spx_obj_meta_release(&in);
	if (rc < 0)
		return s3_obj_fail(g, rc);
	if (s->if_none_match || s->if_match)
		spx_obj_writer_condition(s->w, s3_write_cond, s);
	return 0;
}

int s3_put_begin(struct gw_req *g, struct spx_http_req *req,
		 struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *md5 = spx_kv_geti(&req->headers, "Content-MD5");
	const char *sc = spx_kv_geti(&req->headers, "x-amz-storage-class");
	int rc;

	s->versioned = s->b.versioning != SPX_OBJ_UNVERSIONED;
	if (sc && !s3_storage_class_valid(sc))
		return s3_fail(g, 400, "InvalidStorageClass",
			       "The storage class you specified is not valid");
	if ((rc = spx_obj_key_check(s->key)) < 0)
		return s3_obj_fail(g, rc);
	if (md5) {
		size_t n = 0;

		if (spx_base64_decode(md5, strlen(md5), s->md5, sizeof(s->md5),
				      &n) < 0 ||
		    n != 16)
			return s3_fail(g, 400, "InvalidDigest",
				       "The Content-MD5 you specified was "
				       "invalid.");
		s->has_md5 = true;
	}
	if (checksum_from_headers(g, req) < 0)
		return -1;
	if (is_put(s)) {
		if (begin_object(g, req) < 0)
			return -1;
	} else {
		const char *id = spx_kv_get(&g->params, "uploadId");

		if (s3_part_number(g, &s->part) < 0 || part_checksum(g, id) < 0)
			return -1;
		rc = spx_obj_part_begin(g->gw->obj, &s->b, s->key, id, s->part,
					&s->w);
		if (rc < 0)
			return s3_obj_fail(g, rc);
	}
	return s3_streaming(g) ? s3_chunked_begin(g, req, feed) : 0;
}

int s3_put_body(struct gw_req *g, struct spx_http_req *req, const char *data,
		size_t len)
{
	struct gw_s3 *s = g->s3;

	if (s->chunked)
		return s3_chunked_feed(g, data, len);
	return feed(s, data, len) < 0 ? s3_obj_fail(g, s->werr) : 0;
}

/* The checksum the client stated (header or trailer) against the one
 * computed; kept in the object's metadata (a part's, for Complete to fold
 * in). */
static int check_checksum(struct gw_req *g, struct spx_http_req *req,
			  struct spx_buf *b64)
{
	struct gw_s3 *s = g->s3;
	const char *h = spx_cksum_header(s->algo);
	const char *sent = spx_kv_geti(&req->headers, h);
	unsigned char dig[SPX_CKSUM_MAX];
	enum spx_cksum_verdict why;
	struct spx_obj_meta *wm;
	size_t dlen = 0;

	if (!sent && s->chunked)
		sent = spx_kv_geti(spx_chunked_trailers(&s->ch), h);
	if (spx_cksum_final(&s->ck, dig, &dlen) < 0)
		return s3_obj_fail(g, SPX_OBJ_INTERNAL);
	if (sent && spx_cksum_verify_b64(s->algo, sent, dig, &why) < 0)
		return why == SPX_CKSUM_MALFORMED
			       ? s3_fail(g, 400, "InvalidRequest",
					 "Value for %s header is invalid.", h)
			       : s3_fail(g, 400, "BadDigest",
					 "The %s you specified did not match "
					 "the calculated checksum.",
					 spx_cksum_name(s->algo));
	spx_base64_encode(dig, dlen, b64);
	wm = spx_obj_writer_meta(s->w);
	spx_kv_add(&wm->checksums, s3_cksum_key(s->algo), b64->p);
	if (is_put(s))
		spx_kv_add(&wm->checksums, "type", "FULL_OBJECT");
	return 0;
}

int s3_put_end(struct gw_req *g, struct spx_http_req *req,
	       struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta out = SPX_OBJ_META_INIT;
	struct spx_buf b64 = SPX_BUF_INIT;
	char quoted[SPX_OBJ_ETAG_SIZE + 2];
	int rc = -1;

	if ((s->chunked && s3_chunked_end(g) < 0) ||
	    (s->has_ck && check_checksum(g, req, &b64) < 0))
		goto out;
	rc = spx_obj_writer_commit(s->w, s->has_md5 ? s->md5 : NULL, &out);
	s->w = NULL;
	if (rc < 0) {
		rc = s3_obj_fail(g, rc);
		goto out;
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
	if (is_put(s)) {
		s3_version_header(resp, s->versioned || out.vid[0], out.vid);
		s3_life_header(g, &s->b, &out, resp);
	}
	resp->ready = true;
out:
	spx_buf_release(&b64);
	spx_obj_meta_release(&out);
	return rc;
}
