/* s3_get.c: GetObject and HeadObject: preconditions, ranges, the
 * response-* overrides, checksums on request, and the body streamed from
 * an object reader through the response generator (the engine reads each
 * shard block straight into the buffer libmicrohttpd sends from). */
#include "spx.h"

#include "gw/s3_int.h"
#include "gw/s3life.h"
#include "http/httpdate.h"
#include "proc.h"

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
		if (strncasecmp(m->sys.v[i].k, S3_SPX_SYS, strlen(S3_SPX_SYS)))
			spx_kv_add(&resp->headers, m->sys.v[i].k,
				   m->sys.v[i].v);
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
static const char *const response_overrides[][2] = {
	{ "response-content-type", "Content-Type" },
	{ "response-content-language", "Content-Language" },
	{ "response-expires", "Expires" },
	{ "response-cache-control", "Cache-Control" },
	{ "response-content-disposition", "Content-Disposition" },
	{ "response-content-encoding", "Content-Encoding" },
};

/* Only a signed request may ask for them, as S3 has it: else anyone could
 * have a public object served as text/html from the bucket's origin. */
static int overrides_allowed(struct gw_req *g)
{
	if (g->authed)
		return 0;
	for (size_t i = 0; i < SPX_ARRAY_SIZE(response_overrides); i++)
		if (s3_has(g, response_overrides[i][0]))
			return s3_fail(g, 400, "InvalidRequest",
				       "Request specific response headers "
				       "cannot be used for anonymous GET "
				       "requests.");
	return 0;
}

static void overrides(struct gw_req *g, struct spx_http_resp *resp)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(response_overrides); i++) {
		const char *v = spx_kv_get(&g->params,
					    response_overrides[i][0]);
		struct spx_kvlist keep = SPX_KVLIST_INIT;

		if (!v)
			continue;
		for (size_t j = 0; j < resp->headers.n; j++)
			if (strcasecmp(resp->headers.v[j].k,
				       response_overrides[i][1]))
				spx_kv_add(&keep, resp->headers.v[j].k,
					   resp->headers.v[j].v);
		spx_kv_free(&resp->headers);
		resp->headers = keep;
		spx_kv_add(&resp->headers, response_overrides[i][1], v);
	}
}

/* v, percent-encoded where it is not plain printable ASCII or would end
 * the quoted string (a rule ID is any text up to 255 characters). */
static void quoted_id(struct spx_buf *out, const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p > 0x20 && *p < 0x7f && *p != '"' && *p != '%' &&
		    *p != '\\')
			spx_buf_add(out, p, 1);
		else
			spx_buf_addf(out, "%%%02X", *p);
	}
}

int s3_life_expired(struct gw_req *g, const struct spx_obj_bucket *b,
		    const struct spx_obj_meta *m, struct spx_http_resp *resp)
{
	const struct spx_gw *gw = g->gw;
	struct spx_buf d = SPX_BUF_INIT;
	struct spx_s3_life *l = NULL;
	int64_t now = gw->fixed_now ? (int64_t)gw->fixed_now * 1000
				    : spx_wall_ms(),
		when;
	const char *rule = NULL;
	int rc = spx_s3_life_of(gw->obj, b, &l);

	if (rc < 0)
		return s3_obj_fail(g, rc);
	if (!l)
		return 0;
	when = spx_s3_life_expiry(l, m->key, m->size, &m->tags, m->mtime_ms,
				  gw->self->obj.lifecycle_day, &rule);
	rc = when <= now;
	if (!rc && resp && when != INT64_MAX) {
		/* x-amz-expiration: expiry-date="HTTP-date", rule-id="ID" */
		char date[64];

		spx_http_date((time_t)(when / 1000), date, sizeof(date));
		spx_buf_addf(&d, "expiry-date=\"%s\", rule-id=\"", date);
		quoted_id(&d, rule ? rule : "");
		spx_buf_add(&d, "\"", 1);
		spx_buf_add(&d, "", 1);
		spx_kv_add(&resp->headers, "x-amz-expiration", d.p);
		spx_buf_release(&d);
	}
	spx_s3_life_free(l);
	return rc;
}

void s3_life_header(struct gw_req *g, const struct spx_obj_bucket *b,
		    const struct spx_obj_meta *m, struct spx_http_resp *resp)
{
	/* The write is done: a failure to read the rules costs the header
	 * only. */
	if (s3_life_expired(g, b, m, resp) < 0)
		spx_error_clear();
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

	if ((!strcmp(req->method, "GET") && overrides_allowed(g) < 0) ||
	    s3_version_param(g, &vid) < 0)
		return -1;
	showv = vid || s->b.versioning != SPX_OBJ_UNVERSIONED;
	rc = spx_obj_reader_open_version(g->gw->obj, &s->b, s->key, vid, &r);
	if (rc < 0) {
		s3_marker_headers(g, vid, rc);
		return s3_obj_fail(g, rc);
	}
	m = spx_obj_reader_meta(r);
	if (!vid && (rc = s3_life_expired(g, &s->b, m, resp))) {
		/* Past its expiration: never served, though the agent's
		 * pass may not have removed it yet. */
		spx_obj_reader_close(r);
		return rc < 0 ? -1 : s3_obj_fail(g, SPX_OBJ_NO_SUCH_KEY);
	}
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
	/* A small object is read before the answer starts: its bytes go out
	 * with the head in one send, and a read that fails is a 500, not
	 * a cut connection. */
	if (m->is_inline && !strcmp(req->method, "GET")) {
		size_t len = m->size ? (size_t)(rg.last - rg.first + 1) : 0;
		size_t got = 0;

		spx_buf_grow(&resp->body, len);
		while (got < len) {
			size_t n = 0;

			rc = spx_obj_read(r, rg.first + got, resp->body.p + got,
					  len - got, &n);
			if (rc < 0 || !n) {
				spx_obj_reader_close(r);
				return s3_obj_fail(g, rc < 0 ? rc
							     : SPX_OBJ_INTERNAL);
			}
			got += n;
		}
		spx_buf_setlen(&resp->body, len);
		spx_obj_reader_close(r);
		resp->ready = true;
		return 0;
	}
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

/* ---- GetObjectAttributes ---- */

enum {
	ATTR_ETAG = 1 << 0,
	ATTR_CHECKSUM = 1 << 1,
	ATTR_PARTS = 1 << 2,
	ATTR_CLASS = 1 << 3,
	ATTR_SIZE = 1 << 4,
};

/* x-amz-object-attributes: names separated by commas (and spaces), at
 * least one, each one of the five. */
static int attr_list(struct gw_req *g, const char *h, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
		{ "ETag", ATTR_ETAG },	       { "Checksum", ATTR_CHECKSUM },
		{ "ObjectParts", ATTR_PARTS }, { "StorageClass", ATTR_CLASS },
		{ "ObjectSize", ATTR_SIZE },
	};

	*out = 0;
	for (const char *p = h ? h : ""; *p;) {
		size_t n;
		size_t i;

		p += strspn(p, " \t,");
		n = strcspn(p, " \t,");
		if (!n)
			break;
		for (i = 0; i < SPX_ARRAY_SIZE(names); i++)
			if (strlen(names[i].name) == n &&
			    !memcmp(names[i].name, p, n))
				break;
		if (i == SPX_ARRAY_SIZE(names))
			return s3_fail(g, 400, "InvalidArgument",
				       "Invalid attribute name specified.");
		*out |= names[i].bit;
		p += n;
	}
	if (!*out)
		return s3_fail(g, 400, "InvalidArgument",
			       "The x-amz-object-attributes header specifying "
			       "the attributes to be retrieved is either "
			       "missing or empty");
	return 0;
}

/* A decimal header from 0 to max; absent: dflt. */
static int attr_number(struct gw_req *g, struct spx_http_req *req,
		       const char *name, long max, long dflt, long *out)
{
	const char *v = spx_kv_geti(&req->headers, name);
	char *end = NULL;

	*out = dflt;
	if (!v)
		return 0;
	errno = 0;
	*out = strtol(v, &end, 10);
	if (!*v || *end || errno || *out < 0 || *out > max || v[0] == '+' ||
	    v[0] == ' ')
		return s3_fail(g, 400, "InvalidArgument",
			       "Provided %s not an integer or within integer "
			       "range", name);
	return 0;
}

/* A segment's part number: "p00042-..." is part 42; 0 for others. */
static long seg_part(const struct spx_obj_seg *sg)
{
	long n = 0;

	if (sg->name[0] != 'p')
		return 0;
	for (const char *p = sg->name + 1; *p >= '0' && *p <= '9'; p++)
		n = n * 10 + (*p - '0');
	return n <= SPX_OBJ_MAX_PARTS ? n : 0;
}

/* The object's own checksum (the algorithm and its value), if any. */
static bool object_cksum(const struct spx_obj_meta *m,
			 enum spx_cksum_algo *a, const char **v)
{
	for (size_t i = 0; i < m->checksums.n; i++)
		if (strcmp(m->checksums.v[i].k, "type") &&
		    spx_cksum_from_name(m->checksums.v[i].k, a) == 0) {
			*v = m->checksums.v[i].v;
			return true;
		}
	return false;
}

static void attr_parts(struct spx_xml *x, const struct spx_obj_meta *m,
		       long marker, long max)
{
	enum spx_cksum_algo a;
	const char *ov;
	bool each = object_cksum(m, &a, &ov) && m->nsegs &&
		    m->segs[0].cksum[0];
	char el[32];
	size_t shown = 0, i = 0;
	long last = 0;

	spx_xml_open(x, "ObjectParts");
	spx_xml_elem_u64(x, "PartsCount", m->nparts);
	/* As AWS: the parts themselves only of an object uploaded with a
	 * checksum algorithm, each with its checksum. */
	if (!each) {
		spx_xml_close(x);
		return;
	}
	snprintf(el, sizeof(el), "Checksum%s", spx_cksum_name(a));
	spx_xml_elem_i64(x, "PartNumberMarker", marker);
	while (i < m->nsegs && seg_part(&m->segs[i]) <= marker)
		i++;
	for (; i < m->nsegs && (long)shown < max; i++, shown++) {
		last = seg_part(&m->segs[i]);
		spx_xml_open(x, "Part");
		spx_xml_elem_i64(x, "PartNumber", last);
		spx_xml_elem_u64(x, "Size", m->segs[i].size);
		if (m->segs[i].cksum[0])
			spx_xml_elem(x, el, m->segs[i].cksum);
		spx_xml_close(x);
	}
	if (shown)
		spx_xml_elem_i64(x, "NextPartNumberMarker", last);
	spx_xml_elem_i64(x, "MaxParts", max);
	spx_xml_elem(x, "IsTruncated", i < m->nsegs ? "true" : "false");
	spx_xml_close(x);
}

int s3_get_attributes(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	enum spx_cksum_algo a;
	const char *vid, *cv, *type;
	unsigned want;
	long max, marker;
	struct spx_xml x;
	char v[64];
	int rc;

	if (attr_list(g, spx_kv_geti(&req->headers, "x-amz-object-attributes"),
		      &want) < 0 ||
	    attr_number(g, req, "x-amz-max-parts", 1000, 1000, &max) < 0 ||
	    attr_number(g, req, "x-amz-part-number-marker", SPX_OBJ_MAX_PARTS,
			0, &marker) < 0 ||
	    s3_version_param(g, &vid) < 0)
		return -1;
	rc = spx_obj_stat_version(g->gw->obj, &s->b, s->key, vid, &m);
	if (rc == 0 && m.delete_marker)
		rc = vid ? SPX_OBJ_DELETE_MARKER : SPX_OBJ_NO_SUCH_KEY;
	if (rc < 0) {
		spx_obj_meta_release(&m);
		s3_marker_headers(g, vid, rc);
		return s3_obj_fail(g, rc);
	}
	gw_xml_begin(g, resp, &x);
	spx_http_date((time_t)(m.mtime_ms / 1000), v, sizeof(v));
	spx_kv_add(&resp->headers, "Last-Modified", v);
	s3_version_header(resp, vid || s->b.versioning != SPX_OBJ_UNVERSIONED,
			  m.vid);
	spx_xml_open_ns(&x, "GetObjectAttributesResponse", GW_S3_NS);
	if (want & ATTR_ETAG)
		spx_xml_elem(&x, "ETag", m.etag);
	if ((want & ATTR_CHECKSUM) && object_cksum(&m, &a, &cv)) {
		char el[32];

		type = spx_kv_get(&m.checksums, "type");
		snprintf(el, sizeof(el), "Checksum%s", spx_cksum_name(a));
		spx_xml_open(&x, "Checksum");
		/* The value without the "-N" a composite one carries in
		 * HeadObject: base64 has no '-'. */
		spx_xml_elemf(&x, el, "%.*s", (int)strcspn(cv, "-"), cv);
		if (type)
			spx_xml_elem(&x, "ChecksumType", type);
		spx_xml_close(&x);
	}
	if ((want & ATTR_PARTS) && m.nparts)
		attr_parts(&x, &m, marker, max);
	if (want & ATTR_CLASS) {
		const char *sc = spx_kv_get(&m.sys, "x-amz-storage-class");

		spx_xml_elem(&x, "StorageClass", sc ? sc : "STANDARD");
	}
	if (want & ATTR_SIZE)
		spx_xml_elem_u64(&x, "ObjectSize", m.size);
	spx_obj_meta_release(&m);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}
