/* cgi.c: one request from CGI/1.1 variables and stdin (RFC 3875), so the
 * gateway can sit behind any web server or be driven from a shell. */
#include "spx.h"

#include "http/driver.h"
#include "http/http.h"

extern char **environ;

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return spx_error_errno(SPX_FAIL, "cannot write response");
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* HTTP_X_AMZ_DATE -> x-amz-date */
static void add_env_header(struct spx_http_req *req, const char *name,
			   const char *val)
{
	char k[256];
	size_t i;

	for (i = 0; name[i] && i < sizeof(k) - 1; i++)
		k[i] = name[i] == '_' ? '-' : (char)(name[i] | 0x20);
	k[i] = '\0';
	spx_kv_add(&req->headers, k, val);
}

static int build(struct spx_http_req *req, size_t *hbytes)
{
	const char *m = getenv("REQUEST_METHOD");
	const char *uri = getenv("REQUEST_URI");
	const char *cl = getenv("CONTENT_LENGTH");
	const char *q, *v;
	char *end;

	if (!m || !*m)
		return spx_error(SPX_USAGE, "REQUEST_METHOD is not set");
	req->method = spx_strdup(m);
	if (uri && *uri) {
		/* REQUEST_URI is the raw request target: path?query. */
		q = strchr(uri, '?');
		req->path = q ? spx_strndup(uri, (size_t)(q - uri))
			      : spx_strdup(uri);
		req->query = spx_strdup(q ? q + 1 : "");
	} else {
		v = getenv("PATH_INFO");
		req->path = spx_strdup(v && *v ? v : "/");
		v = getenv("QUERY_STRING");
		req->query = spx_strdup(v ? v : "");
	}
	req->content_length = -1;
	if (cl && *cl) {
		errno = 0;
		unsigned long long n = strtoull(cl, &end, 10);
		if (errno || *end || *cl == '-' || n > INT64_MAX)
			return spx_error(SPX_USAGE, "bad CONTENT_LENGTH '%s'",
					 cl);
		req->content_length = (int64_t)n;
	}
	*hbytes = strlen(req->method) + strlen(req->path) +
		  strlen(req->query) + 16;
	for (char **e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];
		size_t nl;

		if (!eq)
			continue;
		nl = (size_t)(eq - *e);
		if (nl >= sizeof(name))
			continue;
		memcpy(name, *e, nl);
		name[nl] = '\0';
		if (!strncmp(name, "HTTP_", 5) && name[5])
			add_env_header(req, name + 5, eq + 1);
		else if (!strcmp(name, "CONTENT_TYPE"))
			add_env_header(req, "CONTENT_TYPE", eq + 1);
		else if (!strcmp(name, "CONTENT_LENGTH"))
			add_env_header(req, "CONTENT_LENGTH", eq + 1);
		else
			continue;
		*hbytes += strlen(*e) + 4;
	}
	v = getenv("REMOTE_ADDR");
	snprintf(req->remote, sizeof(req->remote), "%s", v ? v : "");
	v = getenv("HTTPS");
	req->tls = v && !strcasecmp(v, "on");
	return 0;
}

/* *sent counts the body bytes written. */
static int emit(const struct spx_http_resp *resp, bool head, int out,
		uint64_t *sent)
{
	struct spx_buf h = SPX_BUF_INIT;
	char chunk[65536];
	uint64_t pos = 0;
	int rc;

	spx_buf_addf(&h, "Status: %d %s\r\n", resp->status,
		     spx_http_reason(resp->status));
	for (size_t i = 0; i < resp->headers.n; i++)
		spx_buf_addf(&h, "%s: %s\r\n", resp->headers.v[i].k,
			     resp->headers.v[i].v);
	if (!resp->gen)
		spx_buf_addf(&h, "Content-Length: %zu\r\n", resp->body.len);
	else if (resp->gen_len >= 0)
		spx_buf_addf(&h, "Content-Length: %lld\r\n",
			     (long long)resp->gen_len);
	spx_buf_adds(&h, "\r\n");
	rc = write_all(out, h.p, h.len);
	spx_buf_release(&h);
	if (rc < 0)
		return -1;
	if (head)
		return 0; /* a HEAD answer has headers only */
	if (!resp->gen) {
		if (write_all(out, resp->body.p, resp->body.len) < 0)
			return -1;
		*sent = resp->body.len;
		return 0;
	}
	for (;;) {
		ssize_t n = resp->gen(resp->gen_ctx, pos, chunk, sizeof(chunk));

		if (n < 0)
			return spx_error(SPX_FAIL, "response body failed");
		if (n == 0)
			return 0;
		if (write_all(out, chunk, (size_t)n) < 0)
			return -1;
		pos += (uint64_t)n;
		*sent = pos;
	}
}

int spx_http_cgi(enum spx_http_service service,
		 const struct spx_http_limits *lim,
		 const struct spx_http_handler *h, struct spx_http_alog *alog,
		 int in, int out)
{
	struct spx_http_req req = { 0 };
	struct spx_http_resp resp;
	struct spx_http_outcome o = { 0 };
	char chunk[65536];
	size_t hbytes = 0;
	bool ready;
	int rc;

	spx_http_req_start(&req);
	spx_http_resp_init(&resp);
	req.service = service;
	if (build(&req, &hbytes) < 0) {
		spx_http_req_release(&req);
		spx_http_resp_release(&resp);
		return -1;
	}
	ready = spx_http_drive_begin(h, lim, &req, hbytes, &resp);
	while (!ready) {
		ssize_t n = read(in, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			spx_http_fail(h, &req, 400, "IncompleteBody",
				      "cannot read the request body", &resp);
			break;
		}
		if (n == 0) {
			spx_http_drive_end(h, &req, &resp);
			break;
		}
		ready = spx_http_drive_body(h, lim, &req, chunk, (size_t)n,
					    &resp);
	}
	rc = emit(&resp, !strcmp(req.method, "HEAD"), out, &o.out);
	clock_gettime(CLOCK_MONOTONIC, &o.t1);
	o.status = resp.status;
	o.in = req.body_seen;
	o.end = rc < 0 ? "aborted" : "ok";
	spx_http_alog_write(alog, &req, &o);
	if (h->done)
		h->done(h->app, &req);
	spx_http_resp_release(&resp);
	spx_http_req_release(&req);
	return rc;
}
