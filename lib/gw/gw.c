/* gw.c: the gateway's request pipeline: identify the API, gather and hash
 * the body, authenticate with SigV4, dispatch, and shape every error the
 * way the API in question does. */
#include "spx.h"

#include "checksum.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "gw/gw_int.h"
#include "hex.h"
#include "http/query.h"
#include "id.h"
#include "state/state.h"

time_t gw_now(const struct spx_gw *gw)
{
	return gw->fixed_now ? gw->fixed_now : time(NULL);
}

void spx_gw_set_clock(struct spx_gw *gw, time_t now)
{
	gw->fixed_now = now;
}

/* ---- responses ---------------------------------------------------- */

static void common_headers(struct gw_req *g, struct spx_http_resp *resp)
{
	if (g->api == GW_S3) {
		spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
		spx_kv_add(&resp->headers, "x-amz-id-2", g->hostid);
		spx_kv_add(&resp->headers, "Server", "AmazonS3");
	} else {
		spx_kv_add(&resp->headers, "x-amzn-RequestId", g->reqid);
		spx_kv_add(&resp->headers, "Server", "AmazonEC2");
	}
}

void gw_xml_begin(struct gw_req *g, struct spx_http_resp *resp,
		  struct spx_xml *x)
{
	resp->status = 200;
	common_headers(g, resp);
	spx_kv_add(&resp->headers, "Content-Type",
		   g->api == GW_S3 ? "application/xml"
				   : "text/xml;charset=UTF-8");
	spx_xml_begin_buf(x, &resp->body);
	spx_xml_decl(x);
}

void gw_xml_finish(struct gw_req *g, struct spx_http_req *req,
		   struct spx_http_resp *resp, struct spx_xml *x)
{
	while (x->depth > 0 && !x->failed)
		spx_xml_close(x);
	if (spx_xml_end(x) < 0) {
		spx_log(SPX_LOG_ERROR, "gw: bad response document: %s",
			spx_errmsg());
		gw_error(g, req, resp, 500, "InternalError",
			 "We encountered an internal error. Please try again.");
		return;
	}
	resp->ready = true;
}

static void verror(struct gw_req *g, struct spx_http_req *req,
		   struct spx_http_resp *resp, int status, const char *code,
		   const char *msg)
{
	struct spx_xml x;

	spx_kv_free(&resp->headers);
	spx_buf_reset(&resp->body);
	gw_xml_begin(g, resp, &x);
	resp->status = status;
	switch (g->api) {
	case GW_EC2:
		/* EC2: <Response><Errors><Error>...</Errors><RequestID> */
		spx_xml_open(&x, "Response");
		spx_xml_open(&x, "Errors");
		spx_xml_open(&x, "Error");
		spx_xml_elem(&x, "Code", code);
		spx_xml_elem(&x, "Message", msg);
		spx_xml_close(&x);
		spx_xml_close(&x);
		spx_xml_elem(&x, "RequestID", g->reqid);
		break;
	case GW_STS:
		spx_xml_open_ns(&x, "ErrorResponse", GW_STS_NS);
		spx_xml_open(&x, "Error");
		spx_xml_elem(&x, "Type", status >= 500 ? "Receiver" : "Sender");
		spx_xml_elem(&x, "Code", code);
		spx_xml_elem(&x, "Message", msg);
		spx_xml_close(&x);
		spx_xml_elem(&x, "RequestId", g->reqid);
		break;
	case GW_S3:
		spx_xml_open(&x, "Error");
		spx_xml_elem(&x, "Code", code);
		spx_xml_elem(&x, "Message", msg);
		/* A request signed for another region is told ours, as S3
		 * does: the SDKs retry there. */
		if (g->err_region)
			spx_xml_elem(&x, "Region", g->gw->conf->aws.region);
		if (req && req->path)
			spx_xml_elem(&x, "Resource", req->path);
		spx_xml_elem(&x, "RequestId", g->reqid);
		spx_xml_elem(&x, "HostId", g->hostid);
		break;
	}
	while (x.depth > 0 && !x.failed)
		spx_xml_close(&x);
	if (spx_xml_end(&x) < 0)
		spx_log(SPX_LOG_ERROR, "gw: bad error document: %s",
			spx_errmsg());
	resp->ready = true;
	if (req)
		snprintf(req->note.error, sizeof(req->note.error), "%s", code);
}

void gw_error(struct gw_req *g, struct spx_http_req *req,
	      struct spx_http_resp *resp, int status, const char *code,
	      const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	verror(g, req, resp, status, code, msg);
}

/* ---- per-request state -------------------------------------------- */

static struct gw_req *req_new(struct spx_gw *gw, struct spx_http_req *req)
{
	struct gw_req *g = spx_calloc(1, sizeof(*g));

	g->gw = gw;
	g->api = req->service == SPX_HTTP_S3 ? GW_S3 : GW_EC2;
	spx_buf_init(&g->form, 0);
	if (g->api == GW_S3) {
		spx_s3_request_id(g->reqid, sizeof(g->reqid));
		spx_s3_host_id(g->hostid, sizeof(g->hostid));
	} else {
		spx_request_id(g->reqid, sizeof(g->reqid));
	}
	snprintf(req->note.id, sizeof(req->note.id), "%s", g->reqid);
	snprintf(req->note.api, sizeof(req->note.api), "%s",
		 g->api == GW_S3 ? "s3" : "ec2");
	g->sha = EVP_MD_CTX_new();
	if (!g->sha || !EVP_DigestInit_ex(g->sha, spx_md(SPX_CKSUM_SHA256), NULL))
		spx_die(SPX_FAIL, "cannot initialise SHA-256");
	req->ctx = g;
	return g;
}

static void req_free(struct gw_req *g)
{
	if (!g)
		return;
	gw_s3_free(g);
	EVP_MD_CTX_free(g->sha);
	spx_buf_release(&g->form);
	spx_kv_free(&g->params);
	OPENSSL_cleanse(&g->who, sizeof(g->who));
	free(g);
}

/* The error handler the transport calls (limits, broken bodies). It may
 * run before begin, so it makes the request state when there is none. */
static void on_error(void *app, struct spx_http_req *req, int status,
		     const char *code, const char *msg,
		     struct spx_http_resp *resp)
{
	struct gw_req *g = req->ctx ? req->ctx : req_new(app, req);

	verror(g, req, resp, status, code, msg);
}

/* ---- authentication ----------------------------------------------- */

static enum spx_sigv4_api sigv4_api(const struct gw_req *g)
{
	return g->api == GW_S3 ? SPX_SIGV4_API_S3
	       : g->api == GW_STS ? SPX_SIGV4_API_STS
				  : SPX_SIGV4_API_EC2;
}

static void sigv4_req(struct gw_req *g, struct spx_http_req *req,
		      struct spx_sigv4_req *sr, const char *body_hash)
{
	*sr = (struct spx_sigv4_req){
		.method = req->method,
		.path = req->path,
		.query = req->query,
		.headers = &req->headers,
		.payload_hash = body_hash,
		.region = g->gw->conf->aws.region,
		/* The EC2 port serves ec2 and sts: checked below. */
		.service = g->api == GW_S3 ? "s3" : NULL,
	};
}

static void auth_fail(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp, enum spx_sigv4_err e)
{
	struct spx_apierr st = spx_sigv4_code(e, sigv4_api(g), &g->auth);

	const char *why = spx_sigv4_strerror(e);
	bool more = g->auth.detail[0] && strcmp(g->auth.detail, why);

	spx_info("gw: %s: sigv4: %s%s%s", g->reqid, why, more ? ": " : "",
		 more ? g->auth.detail : "");
	if (e == SPX_SIGV4_EREGION && g->api == GW_S3) {
		const char *ours = g->gw->conf->aws.region;

		g->err_region = true;
		gw_error(g, req, resp, st.http, st.code,
			 "%s; the region '%s' is wrong; expecting '%s'",
			 g->auth.presigned
				 ? "Error parsing the X-Amz-Credential parameter"
				 : "The authorization header is malformed",
			 g->auth.region, ours);
		spx_kv_add(&resp->headers, "x-amz-bucket-region", ours);
		return;
	}
	gw_error(g, req, resp, st.http, st.code, "%s", st.message);
}

/* Parse the request's SigV4 authentication into g->auth. */
static enum spx_sigv4_err auth_parse(struct gw_req *g,
				     struct spx_http_req *req)
{
	struct spx_sigv4_req sr;
	enum spx_sigv4_err e;

	sigv4_req(g, req, &sr, NULL);
	e = spx_sigv4_parse(&sr, &g->auth);
	/* SigV2, where the node accepts it: S3 only, as AWS. */
	if (e == SPX_SIGV4_EALGORITHM && g->api == GW_S3 &&
	    g->gw->self->gw.s3_sigv2 && spx_sigv2_present(&sr))
		e = spx_sigv2_parse(&sr, &g->auth);
	if (e != SPX_SIGV4_OK || g->api == GW_S3)
		return e;
	/* On the Query port the credential scope names the API. */
	if (!strcmp(g->auth.service, "sts")) {
		g->api = GW_STS;
		snprintf(req->note.api, sizeof(req->note.api), "sts");
	} else if (strcmp(g->auth.service, "ec2"))
		return SPX_SIGV4_ESERVICE;
	return SPX_SIGV4_OK;
}

/* Look the key up and check the signature; on failure resp holds the
 * error. body_hash: the body's SHA-256, for requests whose signature
 * covers it without an x-amz-content-sha256 header. */
static int auth_verify(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp, const char *body_hash)
{
	struct spx_sigv4_req sr;
	enum spx_sigv4_err e;

	char *vhost = g->auth.v2 ? gw_s3_host_bucket(g, req) : NULL;

	sigv4_req(g, req, &sr, body_hash);
	if (spx_cred_lookup(g->gw->creds, g->auth.access_key, &g->who) < 0)
		e = SPX_SIGV4_EUNKNOWNKEY;
	else if (g->auth.v2)
		e = spx_sigv2_verify(&sr, &g->auth, vhost, g->who.secret,
				     gw_now(g->gw));
	else
		e = spx_sigv4_verify(&sr, &g->auth, g->who.secret,
				     gw_now(g->gw));
	if (e != SPX_SIGV4_OK) {
		if (e == SPX_SIGV4_ESIGNATURE &&
		    spx_log_get() >= SPX_LOG_DEBUG) {
			struct spx_buf c = SPX_BUF_INIT, s = SPX_BUF_INIT;

			if (g->auth.v2)
				spx_sigv2_string_to_sign(&sr, &g->auth, vhost,
							 &s);
			else
				spx_sigv4_canonical(&sr, &g->auth, &c, &s);
			spx_debug("gw: %s: canonical request:\n%s\nstring "
				  "to sign:\n%s",
				  g->reqid, c.p, s.p);
			spx_buf_release(&c);
			spx_buf_release(&s);
		}
		free(vhost);
		auth_fail(g, req, resp, e);
		return -1;
	}
	free(vhost);
	g->authed = true;
	snprintf(req->note.principal, sizeof(req->note.principal), "%s",
		 g->who.access_key);
	return 0;
}

/* ---- the handler -------------------------------------------------- */

/* A body signed only through its hash, too big to keep until the
 * signature can be checked. */
static void unsigned_too_big(struct gw_req *g, struct spx_http_req *req,
			     struct spx_http_resp *resp)
{
	gw_error(g, req, resp, 400, "InvalidRequest",
		 "Missing required header for this request: "
		 "x-amz-content-sha256 (a body of more than %u bytes must be "
		 "signed with it)",
		 GW_UNVERIFIED_MAX);
	resp->close = true;
}

static void on_begin(void *app, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct spx_gw *gw = app;
	struct gw_req *g = req_new(gw, req);
	const char *m = req->method;

	if (g->api == GW_S3) {
		enum spx_sigv4_err e;

		if (!strcmp(m, "OPTIONS")) {
			gw_s3_preflight(g, req, resp);
			return;
		}
		if (strcmp(m, "GET") && strcmp(m, "HEAD") && strcmp(m, "PUT") &&
		    strcmp(m, "POST") && strcmp(m, "DELETE")) {
			gw_error(g, req, resp, 405, "MethodNotAllowed",
				 "The specified method is not allowed against "
				 "this resource.");
			return;
		}
		/* Browser form uploads (POST object) authenticate through
		 * the form, read as it arrives (s3_post.c): no header
		 * authentication. */
		{
			const char *ct = spx_kv_geti(&req->headers,
						     "Content-Type");

			if (!strcmp(m, "POST") && ct &&
			    !strncasecmp(ct, "multipart/form-data",
					 19) &&
			    !spx_kv_geti(&req->headers, "Authorization")) {
				gw_s3_post(g, req, resp);
				return;
			}
		}
		e = auth_parse(g, req);
		/* No authentication at all: an anonymous request, which the
		 * bucket's policy decides (s3_authorize); the access log
		 * names no principal ("-", as S3's logs). */
		if (e == SPX_SIGV4_ENOAUTH) {
			g->authed = false;
			memset(&g->who, 0, sizeof(g->who));
			gw_s3_begin(g, req, resp);
			return;
		}
		if (e != SPX_SIGV4_OK) {
			auth_fail(g, req, resp, e);
			return;
		}
		/* curl --aws-sigv4 sends no x-amz-content-sha256 and signs
		 * the body's hash: with a body, the signature can only be
		 * checked at the end. Until then nothing may be observable
		 * (no bucket looked up, no precondition answered, no byte
		 * written), so the body is kept in memory, up to a bound, and
		 * the request runs once the signature is verified. */
		g->hash_body = g->auth.payload == SPX_SIGV4_PAYLOAD_BODY ||
			       g->auth.payload == SPX_SIGV4_PAYLOAD_SHA256;
		if (g->auth.payload == SPX_SIGV4_PAYLOAD_BODY &&
		    (req->content_length > 0 ||
		     (req->content_length < 0 &&
		      spx_kv_geti(&req->headers, "Transfer-Encoding")))) {
			if (req->content_length > 0 &&
			    (uint64_t)req->content_length > GW_UNVERIFIED_MAX) {
				unsigned_too_big(g, req, resp);
				return;
			}
			g->auth_deferred = true;
			g->keep_form = true;
			return;
		}
		if (auth_verify(g, req, resp, SPX_SIGV4_EMPTY_SHA256) < 0)
			return;
		gw_s3_begin(g, req, resp);
		return;
	}
	if (strcmp(m, "GET") && strcmp(m, "POST")) {
		gw_error(g, req, resp, 405, "MethodNotAllowed",
			 "The HTTP method %s is not allowed.", m);
		return;
	}
	g->keep_form = !strcmp(m, "POST");
	g->hash_body = true;
}

static void on_body(void *app, struct spx_http_req *req, const char *data,
		    size_t len, struct spx_http_resp *resp)
{
	struct gw_req *g = req->ctx;

	if (g->hash_body)
		EVP_DigestUpdate(g->sha, data, len);
	if (g->api == GW_S3 && g->auth_deferred) {
		/* Not authenticated yet: kept, bounded (checked in begin
		 * against Content-Length, here against what arrives). */
		if (g->form.len + len > GW_UNVERIFIED_MAX) {
			unsigned_too_big(g, req, resp);
			return;
		}
		spx_buf_add(&g->form, data, len);
		return;
	}
	if (g->api == GW_S3) {
		gw_s3_body(g, req, data, len, resp);
		return;
	}
	if (!g->keep_form)
		return;
	if (g->form.len + len > g->gw->max_form) {
		gw_error(g, req, resp, 413, "RequestEntityTooLarge",
			 "Request body exceeds %llu bytes",
			 (unsigned long long)g->gw->max_form);
		resp->close = true;
		return;
	}
	spx_buf_add(&g->form, data, len);
}

static void end_query(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	const char *ct = spx_kv_geti(&req->headers, "Content-Type");
	const char *action, *version;
	enum spx_sigv4_err e;

	if (spx_query_parse(req->query, strlen(req->query), 0,
			    &g->params) < 0) {
		gw_error(g, req, resp, 400, "MalformedQueryString", "%s",
			 spx_errmsg());
		return;
	}
	if (g->keep_form && g->form.len) {
		if (ct && strncasecmp(ct, "application/x-www-form-urlencoded",
				      33)) {
			gw_error(g, req, resp, 400, "InvalidParameterValue",
				 "Unsupported Content-Type '%s'", ct);
			return;
		}
		if (spx_query_parse_max(g->form.p, g->form.len, SPX_URI_PLUS,
					GW_MAX_PARAMS, g->gw->max_form,
					&g->params) < 0) {
			gw_error(g, req, resp, 400, "MalformedQueryString",
				 "%s", spx_errmsg());
			return;
		}
	}
	version = spx_kv_get(&g->params, "Version");
	if (version && !strcmp(version, "2011-06-15")) {
		g->api = GW_STS;
		snprintf(req->note.api, sizeof(req->note.api), "sts");
	}
	action = spx_kv_get(&g->params, "Action");
	snprintf(req->note.op, sizeof(req->note.op), "%s",
		 action ? action : "");
	e = auth_parse(g, req);
	if (e != SPX_SIGV4_OK) {
		auth_fail(g, req, resp, e);
		return;
	}
	if (auth_verify(g, req, resp, g->body_hash) < 0)
		return;
	/* The Query APIs sign the body through its hash. When the client
	 * sends x-amz-content-sha256, the signature covers that header's
	 * value, not the bytes received: they must be the same, or the
	 * parameters just parsed are not the ones that were signed. */
	if (g->auth.payload == SPX_SIGV4_PAYLOAD_SHA256 &&
	    CRYPTO_memcmp(g->auth.payload_sha256, g->body_sha, 32)) {
		g->authed = false;
		spx_info("gw: %s: the body is not the one whose hash was "
			 "signed", g->reqid);
		auth_fail(g, req, resp, SPX_SIGV4_ESIGNATURE);
		return;
	}
	action = spx_kv_get(&g->params, "Action");
	if (!action || !*action) {
		gw_error(g, req, resp, 400, "MissingAction",
			 "The request must contain the parameter Action");
		return;
	}
	if (g->api == GW_STS)
		gw_sts_dispatch(g, req, resp, action);
	else
		gw_ec2_dispatch(g, req, resp, action);
}

static void on_end(void *app, struct spx_http_req *req,
		   struct spx_http_resp *resp)
{
	struct gw_req *g = req->ctx;
	unsigned char md[32];
	unsigned int n = 0;

	EVP_DigestFinal_ex(g->sha, md, &n);
	memcpy(g->body_sha, md, 32);
	spx_hex_encode(md, 32, g->body_hash);
	if (g->api != GW_S3) {
		end_query(g, req, resp);
		return;
	}
	if (g->auth_deferred) {
		/* Verified at last: now the request runs, as if its body
		 * were arriving. */
		if (auth_verify(g, req, resp, g->body_hash) < 0)
			return;
		gw_s3_begin(g, req, resp);
		if (resp->ready)
			return;
		if (g->form.len)
			gw_s3_body(g, req, g->form.p, g->form.len, resp);
		spx_buf_release(&g->form);
		if (resp->ready)
			return;
	}
	if (g->auth.payload == SPX_SIGV4_PAYLOAD_SHA256 &&
	    memcmp(md, g->auth.payload_sha256, 32)) {
		gw_error(g, req, resp, 400, "XAmzContentSHA256Mismatch",
			 "The provided 'x-amz-content-sha256' header does not "
			 "match what was computed.");
		return;
	}
	gw_s3_end(g, req, resp);
}

static void on_done(void *app, struct spx_http_req *req)
{
	req_free(req->ctx);
	req->ctx = NULL;
}

/* ---- setup -------------------------------------------------------- */

/* The node's secret that signs Describe NextTokens: made once, kept in
 * the node's records (a token outlives a gateway restart). */
static int page_secret(struct spx_gw *gw)
{
	char key[SPX_STATE_KEY_MAX], hex[2 * sizeof(gw->page_secret) + 1];
	struct spx_buf v = SPX_BUF_INIT;
	int rc;

	snprintf(key, sizeof(key), "gw/%s/page-secret", gw->conf->node);
	if (spx_random(gw->page_secret, sizeof(gw->page_secret)) < 0)
		return -1;
	spx_hex_encode(gw->page_secret, sizeof(gw->page_secret), hex);
	rc = spx_state_create(gw->state, key, hex, strlen(hex), NULL);
	if (rc == SPX_STATE_EXISTS)
		rc = spx_state_get(gw->state, key, &v, NULL);
	if (rc == 0 && v.len) {
		/* Someone made it first: use theirs. */
		if (v.len != strlen(hex) || !spx_is_lower_hex(v.p, v.len))
			rc = spx_error(SPX_FAIL, "state '%s' is not a secret",
				       key);
		for (size_t i = 0; rc == 0 && i < sizeof(gw->page_secret); i++)
			gw->page_secret[i] =
				(unsigned char)(spx_hexval(v.p[2 * i]) << 4 |
						spx_hexval(v.p[2 * i + 1]));
	}
	spx_buf_release(&v);
	OPENSSL_cleanse(hex, sizeof(hex));
	return rc < 0 ? -1 : 0;
}

int spx_gw_open(const struct spx_conf *conf, struct spx_gw **out)
{
	struct spx_gw *gw = spx_calloc(1, sizeof(*gw));

	gw->conf = conf;
	gw->self = spx_conf_self(conf);
	if (!gw->self) {
		free(gw);
		return spx_error(SPX_USAGE, "no [nodes.%s] in the configuration",
				 conf->node);
	}
	if (spx_cred_open(conf->credentials.file, &gw->creds) < 0) {
		free(gw);
		return -1;
	}
	/* An absolute path: no scheme needed. */
	if (spx_state_open(conf->paths.state, SPX_STATE_CREATE, &gw->state) <
		    0 ||
	    page_secret(gw) < 0 || gw_s3_open(gw) < 0) {
		spx_state_close(gw->state);
		spx_cred_close(gw->creds);
		free(gw);
		return -1;
	}
	gw->limits.max_header_bytes = (size_t)gw->self->gw.max_header_bytes;
	gw->limits.max_body_bytes = gw->self->gw.max_body_bytes;
	gw->max_form = gw->self->gw.max_query_body_bytes;
	gw->handler = (struct spx_http_handler){
		.app = gw,
		.begin = on_begin,
		.body = on_body,
		.end = on_end,
		.done = on_done,
		.error = on_error,
	};
	*out = gw;
	return 0;
}

void spx_gw_close(struct spx_gw *gw)
{
	if (!gw)
		return;
	gw_s3_close(gw);
	spx_state_close(gw->state);
	spx_cred_close(gw->creds);
	free(gw);
}

const struct spx_http_handler *spx_gw_handler(struct spx_gw *gw)
{
	return &gw->handler;
}

const struct spx_http_limits *spx_gw_limits(struct spx_gw *gw)
{
	return &gw->limits;
}
