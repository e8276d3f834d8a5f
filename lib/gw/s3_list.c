/* s3_list.c: ListObjects, ListObjectsV2 and ListObjectVersions, and the
 * pieces every listing shares (URL encoding on request, owners, common
 * prefixes, the count parameters). */
#include "spx.h"

#include "gw/s3_int.h"
#include "http/httpdate.h"
#include "http/query.h"

/* Text for a listing, URL-encoded when the client asked for it. */
void s3_list_text(struct spx_xml *x, const char *name, const char *v,
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

/* <Owner> of a listing entry: the bucket owner's account (the caller's in
 * ListBuckets, where no bucket is open). */
void s3_owner_elem(struct gw_req *g, struct spx_xml *x)
{
	const char *owner = g->s3 && g->s3->b.owner[0] ? g->s3->b.owner
						       : g->who.account;
	bool self = g->authed && !strcmp(owner, g->who.account);

	spx_xml_open(x, "Owner");
	spx_xml_elem(x, "ID", owner);
	spx_xml_elem(x, "DisplayName",
		     self && g->who.user[0] ? g->who.user : owner);
	spx_xml_close(x);
}

/* The CommonPrefixes and EncodingType that end a listing. */
void s3_list_tail(struct spx_xml *x, char **prefixes, size_t n, bool url)
{
	for (size_t i = 0; i < n; i++) {
		spx_xml_open(x, "CommonPrefixes");
		s3_list_text(x, "Prefix", prefixes[i], url);
		spx_xml_close(x);
	}
	if (url)
		spx_xml_elem(x, "EncodingType", "url");
}

int s3_list_params(struct gw_req *g, const char *name, long *max)
{
	const char *mk = spx_kv_get(&g->params, name);
	const char *enc = spx_kv_get(&g->params, "encoding-type");
	char *e;

	*max = 1000;
	if (enc && strcmp(enc, "url"))
		return s3_fail(g, 400, "InvalidArgument",
			       "Invalid Encoding Method specified in Request");
	if (!mk)
		return 0;
	*max = strtol(mk, &e, 10);
	if (*e || !*mk || *max < 0)
		return s3_fail(g, 400, "InvalidArgument",
			       "Provided %s not an integer or within integer "
			       "range",
			       name);
	if (*max > 1000)
		*max = 1000;
	return 0;
}

static int list_objects(struct gw_req *g, struct spx_http_req *req,
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

	if (s3_list_params(g, "max-keys", &max) < 0)
		return -1;
	/* An empty delimiter is none: S3 leaves it out of the answer. */
	if (delim && !*delim)
		delim = NULL;
	if (token) {
		/* Our continuation token: the base64 of the last key. */
		char raw[SPX_OBJ_KEY_MAX + 4];
		size_t n = 0;

		if (spx_base64_decode(token, strlen(token), raw, sizeof(raw) - 1,
				      &n) < 0) {
			return s3_fail(g, 400, "InvalidArgument",
				 "The continuation token provided is "
				 "incorrect");
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
			return s3_obj_fail(g, rc);
		}
	}
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ListBucketResult", GW_S3_NS);
	spx_xml_elem(&x, "Name", s->bucket);
	/* With encoding-type=url S3 encodes the keys, common prefixes,
	 * delimiter and markers; the Prefix in ListObjectsV2 only (the SDKs
	 * decode exactly those, so ListObjects' Prefix stays as given). */
	s3_list_text(&x, "Prefix", prefix ? prefix : "", url && v2);
	if (v2) {
		spx_xml_elem_u64(&x, "KeyCount", l.n + l.nprefixes);
	} else {
		s3_list_text(&x, "Marker", after ? after : "", url);
		if (l.truncated && delim && l.next)
			s3_list_text(&x, "NextMarker", l.next, url);
	}
	spx_xml_elem_u64(&x, "MaxKeys", (uint64_t)max);
	if (delim)
		s3_list_text(&x, "Delimiter", delim, url);
	spx_xml_elem(&x, "IsTruncated", l.truncated ? "true" : "false");
	if (v2) {
		if (token)
			spx_xml_elem(&x, "ContinuationToken", token);
		if (l.truncated && l.next) {
			spx_base64_encode(l.next, strlen(l.next), &tok);
			spx_xml_elem(&x, "NextContinuationToken", tok.p);
		}
		if (after)
			s3_list_text(&x, "StartAfter", after, url);
	}
	for (size_t i = 0; i < l.n; i++) {
		spx_xml_open(&x, "Contents");
		s3_list_text(&x, "Key", l.v[i].key, url);
		spx_iso8601_ms((time_t)(l.v[i].mtime_ms / 1000), when,
			       sizeof(when));
		spx_xml_elem(&x, "LastModified", when);
		spx_xml_elemf(&x, "ETag", "\"%s\"", l.v[i].etag);
		spx_xml_elem_u64(&x, "Size", l.v[i].size);
		if (owner)
			s3_owner_elem(g, &x);
		spx_xml_elem(&x, "StorageClass", "STANDARD");
		spx_xml_close(&x);
	}
	s3_list_tail(&x, l.prefixes, l.nprefixes, url);
	gw_xml_finish(g, req, resp, &x);
	spx_obj_list_release(&l);
	spx_buf_release(&tok);
	free(tkey);
	return 0;
}

int s3_list_objects(struct gw_req *g, struct spx_http_req *req,
		    struct spx_http_resp *resp)
{
	return list_objects(g, req, resp, false);
}

int s3_list_objects_v2(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp)
{
	return list_objects(g, req, resp, true);
}

int s3_list_versions(struct gw_req *g, struct spx_http_req *req,
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

	if (s3_list_params(g, "max-keys", &max) < 0)
		return -1;
	if (delim && !*delim)
		delim = NULL;
	if (vm && *vm && !(km && *km)) {
		return s3_fail(g, 400, "InvalidArgument",
			 "A version-id marker cannot be specified without a "
			 "key marker.");
	}
	o.prefix = prefix;
	o.key_marker = km;
	o.vid_marker = vm;
	o.delimiter = delim;
	o.max = max ? (size_t)max : 1;
	if (max) {
		rc = spx_obj_list_versions(g->gw->obj, &s->b, &o, &l);
		if (rc < 0) {
			return s3_obj_fail(g, rc);
		}
	}
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ListVersionsResult", GW_S3_NS);
	spx_xml_elem(&x, "Name", s->bucket);
	s3_list_text(&x, "Prefix", prefix ? prefix : "", url);
	s3_list_text(&x, "KeyMarker", km ? km : "", url);
	spx_xml_elem(&x, "VersionIdMarker", vm ? vm : "");
	if (l.truncated) {
		s3_list_text(&x, "NextKeyMarker", l.next_key, url);
		if (!l.next_is_prefix)
			spx_xml_elem(&x, "NextVersionIdMarker",
				     spx_obj_vid_name(l.next_vid));
	}
	spx_xml_elem_u64(&x, "MaxKeys", (uint64_t)max);
	if (delim)
		s3_list_text(&x, "Delimiter", delim, url);
	spx_xml_elem(&x, "IsTruncated", l.truncated ? "true" : "false");
	for (size_t i = 0; i < l.n; i++) {
		const struct spx_obj_version *v = &l.v[i];

		spx_xml_open(&x, v->delete_marker ? "DeleteMarker" : "Version");
		s3_list_text(&x, "Key", v->key, url);
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
		s3_owner_elem(g, &x);
		spx_xml_close(&x);
	}
	s3_list_tail(&x, l.prefixes, l.nprefixes, url);
	gw_xml_finish(g, req, resp, &x);
	spx_obj_versions_release(&l);
	return 0;
}
