/* s3_get.c: GetObject and HeadObject: preconditions, ranges, the
 * response-* overrides, checksums on request, and the body streamed from
 * an object reader through the response generator (the engine reads each
 * shard block straight into the buffer libmicrohttpd sends from). */
#include "spx.h"

#include "gw/s3_int.h"
#include "http/httpdate.h"

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

int s3_get_object(struct gw_req *g, struct spx_http_req *req,
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
	enum spx_range_rc rr;
	struct getctx *ctx;
	const char *vid;
	bool showv;
	char v[96];
	int rc;

	if (s3_version_param(g, &vid) < 0)
		return -1;
	showv = vid || s->b.versioning != SPX_OBJ_UNVERSIONED;
	rc = spx_obj_reader_open_version(g->gw->obj, &s->b, s->key, vid, &r);
	if (rc < 0) {
		s3_marker_headers(g, vid, rc);
		return s3_obj_fail(g, rc);
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
		s3_version_header(resp, showv, m->vid);
		resp->ready = true;
		spx_obj_reader_close(r);
		return 0;
	case SPX_COND_FAILED:
		spx_obj_reader_close(r);
		return s3_obj_fail(g, SPX_OBJ_PRECONDITION);
	}
	rr = spx_range_parse(spx_kv_geti(&req->headers, "Range"), m->size, &rg);
	if (rr == SPX_RANGE_UNSATISFIABLE) {
		snprintf(v, sizeof(v), "bytes */%llu",
			 (unsigned long long)m->size);
		s3_err_header(g, "Content-Range", v);
		spx_obj_reader_close(r);
		return s3_obj_fail(g, SPX_OBJ_INVALID_RANGE);
	}
	resp->status = rr == SPX_RANGE_OK ? 206 : 200;
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	spx_kv_add(&resp->headers, "x-amz-id-2", g->hostid);
	spx_kv_add(&resp->headers, "Server", "AmazonS3");
	object_headers(resp, m,
		       rr != SPX_RANGE_OK && mode && !strcasecmp(mode, "ENABLED"));
	s3_version_header(resp, showv, m->vid);
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
	return 0;
}
