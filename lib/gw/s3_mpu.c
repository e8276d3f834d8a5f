/* s3_mpu.c: multipart uploads (UploadPart is the write path's, s3_put.c;
 * UploadPartCopy the copy's, s3_copy.c): create, complete, abort, and the
 * listings of parts and of uploads. */
#include "spx.h"

#include "gw/s3_int.h"
#include "gw/s3conf.h"
#include "http/httpdate.h"

/* CreateMultipartUpload's x-amz-checksum-algorithm and -type: the object
 * checksum Complete will compute. FULL_OBJECT is for the CRCs only, and
 * CRC64NVME is only FULL_OBJECT (its default); the others default to
 * COMPOSITE. */
static int mpu_algo_from_headers(struct gw_req *g, struct spx_http_req *req,
				 struct spx_obj_meta *in)
{
	const char *a = spx_kv_geti(&req->headers, "x-amz-checksum-algorithm");
	const char *t = spx_kv_geti(&req->headers, "x-amz-checksum-type");
	enum spx_cksum_algo algo;
	bool crc;

	if (!a && !t)
		return 0;
	if (!a || spx_cksum_from_name(a, &algo) < 0)
		return s3_fail(g, 400, "InvalidRequest",
			       "Value for x-amz-checksum-algorithm header is "
			       "invalid.");
	crc = algo == SPX_CKSUM_CRC32 || algo == SPX_CKSUM_CRC32C ||
	      algo == SPX_CKSUM_CRC64NVME;
	if (!t)
		t = algo == SPX_CKSUM_CRC64NVME ? "FULL_OBJECT" : "COMPOSITE";
	if ((strcmp(t, "COMPOSITE") && strcmp(t, "FULL_OBJECT")) ||
	    (!strcmp(t, "FULL_OBJECT") && !crc) ||
	    (!strcmp(t, "COMPOSITE") && algo == SPX_CKSUM_CRC64NVME))
		return s3_fail(g, 400, "InvalidRequest",
			       "The %s checksum type cannot be used with the "
			       "%s checksum algorithm.",
			       t, spx_cksum_name(algo));
	spx_kv_add(&in->checksums, "algorithm", spx_cksum_name(algo));
	spx_kv_add(&in->checksums, "type", t);
	return 0;
}

int s3_create_mpu(struct gw_req *g, struct spx_http_req *req,
		  struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta in = SPX_OBJ_META_INIT;
	char id[SPX_OBJ_UPLOAD_ID_SIZE];
	struct spx_xml x;
	int rc;

	s3_meta_from_headers(req, &in);
	if (s3_tags_from_header(g, req, &in) < 0 ||
	    mpu_algo_from_headers(g, req, &in) < 0 ||
	    s3_lock_for_write(g, req, &in, false) < 0) {
		spx_obj_meta_release(&in);
		return -1;
	}
	s3_acl_meta(g, &in);
	/* Shown by ListMultipartUploads to whoever lists. */
	spx_kv_add(&in.sys, S3_INITIATOR_SYS,
		   g->authed ? g->who.account : "anonymous");
	spx_kv_add(&in.sys, S3_INITIATOR_NAME_SYS,
		   !g->authed ? "anonymous"
		   : g->who.user[0] ? g->who.user : g->who.account);
	rc = spx_obj_mpu_create(g->gw->obj, &s->b, s->key, &in, id);
	if (rc < 0) {
		spx_obj_meta_release(&in);
		return s3_obj_fail(g, rc);
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
	return 0;
}

/* The part list (s3conf) into the engine's parts. S3 wants each part's
 * checksum for a COMPOSITE upload; for FULL_OBJECT they are optional,
 * and checked when given. */
static int complete_parts(struct gw_req *g, const struct spx_s3_complete *c,
			  bool algo_on, bool full, enum spx_cksum_algo algo,
			  struct spx_obj_complete_part *parts)
{
	for (size_t i = 0; i < c->n; i++) {
		parts[i].num = c->v[i].num;
		parts[i].etag = c->v[i].etag;
		parts[i].checksum = algo_on ? c->v[i].checksum : NULL;
		if (algo_on && !full && !c->v[i].checksum)
			return s3_fail(g, 400, "InvalidRequest",
				       "The upload was created using a %s "
				       "checksum. The complete request must "
				       "include the checksum for each part. It "
				       "was missing for part %d in the "
				       "request.",
				       s3_cksum_key(algo), c->v[i].num);
	}
	return 0;
}

int s3_complete_mpu(struct gw_req *g, struct spx_http_req *req,
		    struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	const char *id = spx_kv_get(&g->params, "uploadId");
	struct spx_obj_complete_part *parts = NULL;
	struct spx_obj_meta out = SPX_OBJ_META_INIT;
	struct spx_s3_complete c = { 0 };
	enum spx_cksum_algo algo = SPX_CKSUM_CRC32;
	bool algo_on = false, full = false;
	char ckel[32] = "";
	const char *want = NULL;
	struct spx_apierr e;
	struct spx_xml x;
	int rc = -1;

	if (s3_write_cond_headers(g, req) < 0 ||
	    s3_upload_algo(g, id, &algo, &algo_on, &full) < 0)
		return -1;
	if (algo_on)
		snprintf(ckel, sizeof(ckel), "Checksum%s", spx_cksum_name(algo));
	if (spx_s3_complete_xml(s->body.p, s->body.len, algo_on ? ckel : NULL,
				&c, &e) < 0)
		return s3_conf_fail(&e);
	parts = spx_calloc(c.n, sizeof(*parts));
	if (complete_parts(g, &c, algo_on, full, algo, parts) < 0)
		goto out;
	/* The whole object's checksum, if the client states it. */
	if (algo_on)
		want = spx_kv_geti(&req->headers, spx_cksum_header(algo));
	rc = spx_obj_mpu_complete_if(g->gw->obj, &s->b, s->key, id, parts,
				     c.n, want,
				     s->if_none_match || s->if_match
					     ? s3_write_cond
					     : NULL,
				     s, &out);
	if (rc == SPX_OBJ_BAD_DIGEST) {
		rc = s3_fail(g, 400, "BadDigest",
			     "The %s you specified did not match the "
			     "calculated checksum.",
			     spx_cksum_name(algo));
		goto out;
	}
	if (rc < 0) {
		rc = s3_obj_fail(g, rc);
		goto out;
	}
	gw_xml_begin(g, resp, &x);
	s3_version_header(resp, s->b.versioning != SPX_OBJ_UNVERSIONED,
			  out.vid);
	s3_life_header(g, &s->b, &out, resp);
	spx_xml_open_ns(&x, "CompleteMultipartUploadResult", GW_S3_NS);
	spx_xml_elemf(&x, "Location", "/%s/%s", s->bucket, s->key);
	spx_xml_elem(&x, "Bucket", s->bucket);
	spx_xml_elem(&x, "Key", s->key);
	spx_xml_elemf(&x, "ETag", "\"%s\"", out.etag);
	if (algo_on) {
		const char *v = spx_kv_get(&out.checksums, s3_cksum_key(algo));

		if (v)
			spx_xml_elem(&x, ckel, v);
		if (spx_kv_get(&out.checksums, "type"))
			spx_xml_elem(&x, "ChecksumType",
				     spx_kv_get(&out.checksums, "type"));
	}
	gw_xml_finish(g, req, resp, &x);
out:
	free(parts);
	spx_s3_complete_release(&c);
	spx_obj_meta_release(&out);
	return rc;
}

int s3_abort_mpu(struct gw_req *g, struct spx_http_req *req,
		 struct spx_http_resp *resp)
{
	int rc = spx_obj_mpu_abort(g->gw->obj, &g->s3->b, g->s3->key,
				   spx_kv_get(&g->params, "uploadId"));

	if (rc < 0)
		return s3_obj_fail(g, rc);
	s3_empty_answer(g, resp, 204);
	return 0;
}

int s3_list_parts(struct gw_req *g, struct spx_http_req *req,
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

	if (s3_list_params(g, "max-parts", &max) < 0)
		return -1;
	if (mk && (!*mk || *end || marker < 0 || marker > SPX_OBJ_MAX_PARTS))
		return s3_fail(g, 400, "InvalidArgument",
			       "Provided part-number-marker not an integer or "
			       "within integer range");
	if (s3_upload_algo(g, id, &a, &algo_on, NULL) < 0)
		return -1;
	if (max == 0)
		max = 1000;
	rc = spx_obj_mpu_parts(g->gw->obj, &s->b, s->key, id, (int)marker,
			       (size_t)max, &parts, &n, &trunc);
	if (rc < 0)
		return s3_obj_fail(g, rc);
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
		enum spx_cksum_algo pa;

		spx_xml_open(&x, "Part");
		spx_xml_elem_i64(&x, "PartNumber", parts[i].num);
		spx_iso8601_ms((time_t)(parts[i].mtime_ms / 1000), when,
			       sizeof(when));
		spx_xml_elem(&x, "LastModified", when);
		spx_xml_elemf(&x, "ETag", "\"%s\"", parts[i].etag);
		spx_xml_elem_u64(&x, "Size", parts[i].size);
		if (parts[i].cksum_name[0] &&
		    spx_cksum_from_name(parts[i].cksum_name, &pa) == 0) {
			char el[32];

			snprintf(el, sizeof(el), "Checksum%s",
				 spx_cksum_name(pa));
			spx_xml_elem(&x, el, parts[i].cksum);
		}
		spx_xml_close(&x);
	}
	spx_xml_elem(&x, "StorageClass", "STANDARD");
	if (algo_on)
		spx_xml_elem(&x, "ChecksumAlgorithm", spx_cksum_name(a));
	free(parts);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}

int s3_list_uploads(struct gw_req *g, struct spx_http_req *req,
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

	if (s3_list_params(g, "max-uploads", &max) < 0)
		return -1;
	delim = delim && *delim ? delim : NULL;
	km = km && *km ? km : NULL;
	um = km && um && *um ? um : NULL;
	plen = prefix ? strlen(prefix) : 0;
	rc = spx_obj_mpu_list(g->gw->obj, &s->b, prefix ? prefix : "", &u,
			      &n);
	if (rc < 0)
		return s3_obj_fail(g, rc);
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
	s3_list_text(&x, "KeyMarker", km ? km : "", url);
	spx_xml_elem(&x, "UploadIdMarker", um ? um : "");
	if (trunc && last_key) {
		s3_list_text(&x, "NextKeyMarker", last_key, url);
		spx_xml_elem(&x, "NextUploadIdMarker", last_id ? last_id : "");
	}
	if (delim)
		s3_list_text(&x, "Delimiter", delim, url);
	s3_list_text(&x, "Prefix", prefix ? prefix : "", url);
	spx_xml_elem_i64(&x, "MaxUploads", max);
	spx_xml_elem(&x, "IsTruncated", trunc ? "true" : "false");
	for (size_t j = 0; j < ns; j++) {
		const struct spx_obj_upload *v = &u[show[j]];
		const char *id, *name;

		spx_xml_open(&x, "Upload");
		s3_list_text(&x, "Key", v->key, url);
		spx_xml_elem(&x, "UploadId", v->id);
		/* Who began it (an upload older than the record of it:
		 * the bucket's owner). */
		id = spx_kv_get(&v->sys, S3_INITIATOR_SYS);
		name = spx_kv_get(&v->sys, S3_INITIATOR_NAME_SYS);
		spx_xml_open(&x, "Initiator");
		spx_xml_elem(&x, "ID", id ? id : s->b.owner);
		spx_xml_elem(&x, "DisplayName",
			     id && name ? name : id ? id : s->b.owner);
		spx_xml_close(&x);
		s3_owner_elem(g, &x);
		spx_xml_elem(&x, "StorageClass", "STANDARD");
		spx_iso8601_ms((time_t)(v->initiated_ms / 1000), when,
			       sizeof(when));
		spx_xml_elem(&x, "Initiated", when);
		spx_xml_close(&x);
	}
	s3_list_tail(&x, pfx, np, url);
	for (size_t j = 0; j < np; j++)
		free(pfx[j]);
	free(pfx);
	free(show);
	spx_obj_upload_free(u, n);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}
