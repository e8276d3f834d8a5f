/* s3_copy.c: CopyObject and UploadPartCopy. The source (x-amz-copy-source)
 * is opened as a handle of its own bucket, which the caller must own too,
 * and streamed through memory k + m blocks at a time. */
#include "spx.h"

#include "gw/s3_int.h"
#include "http/httpdate.h"
#include "http/query.h"

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

static int bad_source(void)
{
	return spx_api_error(SPX_USAGE, 400, "InvalidArgument",
			     "Copy Source must mention the source bucket and "
			     "key: sourcebucket/sourcekey");
}

/* x-amz-copy-source: "/bucket/key" or "bucket/key", URL-encoded (an
 * encoded NUL refused), with an optional "?versionId=V". Checks that the
 * caller owns the source bucket, that the source exists (and is no delete
 * marker) and that the copy-source conditions hold. c is released by the
 * caller either way. */
static int copy_source(struct gw_req *g, struct spx_http_req *req,
		       struct copy_src *c)
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
			return bad_source();
		}
		c->vid = spx_strdup(qp.v[0].v);
		spx_kv_free(&qp);
		if (!spx_obj_vid_valid(c->vid))
			return s3_obj_fail(g, SPX_OBJ_INVALID_VERSION);
	}
	if (spx_uri_decode(src, q ? (size_t)(q - src) : strlen(src),
			   SPX_URI_NONUL, &dec) < 0) {
		spx_buf_release(&dec);
		return bad_source();
	}
	lead = dec.p[0] == '/';
	slash = strchr(dec.p + lead, '/');
	if (!slash || !slash[1] || slash == dec.p + lead) {
		spx_buf_release(&dec);
		return bad_source();
	}
	*slash = '\0';
	c->bucket = spx_buf_detach(&dec, NULL);
	/* The bucket and, after its NUL, the key, in one allocation. */
	if (lead)
		memmove(c->bucket, c->bucket + 1, strlen(c->bucket + 1) + 1 +
				 strlen(slash + 1) + 1);
	c->key = c->bucket + strlen(c->bucket) + 1;
	/* The source is read as GetObject reads it. */
	if (s3_find_bucket(g, c->bucket, &c->b) < 0 ||
	    s3_authorize_source(g, req, &c->b, c->key, c->vid) < 0 ||
	    s3_expected_owner(g, req, "x-amz-source-expected-bucket-owner",
			      &c->b) < 0)
		return -1;
	c->versioned = c->b.versioning != SPX_OBJ_UNVERSIONED;
	rc = c->vid ? spx_obj_stat_version(g->gw->obj, &c->b, c->key, c->vid,
					   &c->cur)
		    : spx_obj_stat(g->gw->obj, &c->b, c->key, &c->cur);
	if (rc < 0)
		return s3_obj_fail(g, rc);
	if (c->cur.delete_marker)
		return s3_fail(g, 400, "InvalidRequest",
			       "The source of a copy request may not "
			       "specifically refer to a delete marker by "
			       "version id.");
	/* A source past its expiration is not read, as GET would not. */
	if (!c->vid && (rc = s3_life_expired(g, &c->b, &c->cur, NULL)))
		return rc < 0 ? -1 : s3_obj_fail(g, SPX_OBJ_NO_SUCH_KEY);
	if (spx_cond_eval(&cond, c->cur.etag, (time_t)(c->cur.mtime_ms / 1000),
			  false) != SPX_COND_PASS)
		return s3_obj_fail(g, SPX_OBJ_PRECONDITION);
	return 0;
}

/* The copy's answer: <ROOT><LastModified/><ETag/></ROOT>. */
static void copy_result(struct gw_req *g, struct spx_http_req *req,
			struct spx_http_resp *resp, const struct copy_src *c,
			const char *root, const struct spx_obj_meta *out,
			bool showv)
{
	struct spx_xml x;
	char when[40];

	gw_xml_begin(g, resp, &x);
	if (c->versioned || c->vid)
		spx_kv_add(&resp->headers, "x-amz-copy-source-version-id",
			   spx_obj_vid_name(c->cur.vid));
	s3_version_header(resp, showv, out->vid);
	spx_xml_open_ns(&x, root, GW_S3_NS);
	spx_iso8601_ms((time_t)(out->mtime_ms / 1000), when, sizeof(when));
	spx_xml_elem(&x, "LastModified", when);
	spx_xml_elemf(&x, "ETag", "\"%s\"", out->etag);
	gw_xml_finish(g, req, resp, &x);
}

int s3_copy_object(struct gw_req *g, struct spx_http_req *req,
		   struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *dir = spx_kv_geti(&req->headers, "x-amz-metadata-directive");
	const char *tdir = spx_kv_geti(&req->headers, "x-amz-tagging-directive");
	struct spx_obj_meta in = SPX_OBJ_META_INIT, out = SPX_OBJ_META_INIT;
	struct copy_src c = { 0 };
	bool replace = dir && !strcmp(dir, "REPLACE");
	bool treplace = tdir && !strcmp(tdir, "REPLACE");
	int rc = -1;

	c.cur.inl = (struct spx_buf)SPX_BUF_INIT;
	if (dir && !replace && strcmp(dir, "COPY")) {
		s3_fail(g, 400, "InvalidArgument", "Unknown metadata directive.");
		goto out;
	}
	if (tdir && !treplace && strcmp(tdir, "COPY")) {
		s3_fail(g, 400, "InvalidArgument", "Unknown tagging directive.");
		goto out;
	}
	if (copy_source(g, req, &c) < 0)
		goto out;
	if (!replace && !c.vid && !strcmp(c.bucket, s->bucket) &&
	    !strcmp(c.key, s->key)) {
		s3_fail(g, 400, "InvalidRequest",
			"This copy request is illegal because it is trying to "
			"copy an object to itself without changing the "
			"object's metadata, storage class, website redirect "
			"location or encryption attributes.");
		goto out;
	}
	/* Metadata and tags each come from the source (COPY) or the
	 * request (REPLACE). */
	if (replace) {
		s3_meta_from_headers(req, &in);
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
	else if (s3_tags_from_header(g, req, &in) < 0)
		goto out;
	/* The copy's own lock (never the source's). */
	if (s3_lock_for_write(g, req, &in, false) < 0)
		goto out;
	/* The copy's own ACL (never the source's). */
	s3_acl_meta(g, &in);
	rc = spx_obj_copy(g->gw->obj, &c.b, c.key, c.vid, &s->b, s->key, &in,
			  &out);
	if (rc < 0) {
		rc = s3_obj_fail(g, rc);
		goto out;
	}
	s3_life_header(g, &s->b, &out, resp);
	copy_result(g, req, resp, &c, "CopyObjectResult", &out,
		    s->b.versioning != SPX_OBJ_UNVERSIONED);
out:
	copy_src_release(&c);
	spx_obj_meta_release(&in);
	spx_obj_meta_release(&out);
	return rc;
}

/* A copy range must be exact and inside the source, unlike GET's. */
static int copy_range(struct gw_req *g, const char *rh, uint64_t size,
		      struct spx_range *rg)
{
	if (!rh) {
		rg->first = 0;
		rg->last = size ? size - 1 : 0;
		return 0;
	}
	if (spx_range_parse(rh, size, rg) != SPX_RANGE_OK ||
	    strchr(rh + 6, '-') == rh + 6 ||
	    rg->last != strtoull(strchr(rh, '-') + 1, NULL, 10))
		return s3_fail(g, 400, "InvalidArgument",
			       "The x-amz-copy-source-range value must be of "
			       "the form bytes=first-last where first and last "
			       "are the zero-based offsets of the first and "
			       "last bytes to copy");
	return 0;
}

/* UploadPart with x-amz-copy-source: a part made from (a range of) an
 * existing object, streamed through k + m blocks of memory. */
int s3_upload_part_copy(struct gw_req *g, struct spx_http_req *req,
			struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *id = spx_kv_get(&g->params, "uploadId");
	const char *rh = spx_kv_geti(&req->headers, "x-amz-copy-source-range");
	struct spx_obj_meta out = SPX_OBJ_META_INIT;
	struct copy_src c = { 0 };
	struct spx_obj_writer *w = NULL;
	struct spx_obj_reader *r = NULL;
	struct spx_range rg = { 0, 0 };
	unsigned char *buf = NULL;
	int part, rc = -1;

	c.cur.inl = (struct spx_buf)SPX_BUF_INIT;
	if (s3_part_number(g, &part) < 0 || copy_source(g, req, &c) < 0 ||
	    copy_range(g, rh, c.cur.size, &rg) < 0)
		goto out;
	rc = spx_obj_part_begin(g->gw->obj, &s->b, s->key, id, part, &w);
	if (rc == 0)
		rc = spx_obj_reader_open_version(g->gw->obj, &c.b, c.key,
						 c.vid, &r);
	buf = spx_malloc(1u << 20);
	for (uint64_t off = rg.first; rc == 0 && c.cur.size && off <= rg.last;) {
		size_t want = rg.last - off + 1 > (1u << 20)
				      ? (1u << 20)
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
		rc = s3_obj_fail(g, rc);
		goto out;
	}
	copy_result(g, req, resp, &c, "CopyPartResult", &out, false);
out:
	spx_obj_writer_abort(w);
	spx_obj_reader_close(r);
	free(buf);
	copy_src_release(&c);
	spx_obj_meta_release(&out);
	return rc;
}
