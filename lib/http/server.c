/* server.c: spx_http_start on libmicrohttpd.
 *
 * One MHD daemon per listener, each with its own thread pool. MHD parses
 * HTTP/1.1, keep-alive, chunked bodies, "Expect: 100-continue" and TLS
 * (GnuTLS); this file turns its calls into the begin/body/end pipeline of
 * driver.h. SigV4 signs the raw bytes of the request, so the unescape
 * callback leaves the path percent-encoded, and the query string is taken
 * from the raw request target that MHD's URI log callback sees before it
 * parses anything (MHD's argument list turns '+' into a space).
 */
#include "spx.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "http/driver.h"
#include "http/http.h"

struct spx_http_server {
	struct MHD_Daemon *d[SPX_HTTP_NSERVICES * 2];
	size_t n;
	struct spx_http_limits lim;
	const struct spx_http_handler *h;
	struct lctx {
		struct spx_http_server *srv;
		enum spx_http_service service;
		bool tls;
		uint64_t max_body;
	} l[SPX_HTTP_NSERVICES * 2];
};

/* What is left of a body after the answer is known is read and thrown
 * away, up to this much; past it the connection is cut. libmicrohttpd
 * 0.9.75 cannot send a response while a body is still arriving. */
#define DRAIN_MAX ((uint64_t)64 << 20)

struct conn {
	struct spx_http_req req;
	struct spx_http_resp resp;
	struct spx_http_limits lim;
	char *raw_query;	/* from the request target, as sent */
	bool began;
	bool queued;
	uint64_t drained;
};

/* The request target as it came: its query, raw, is what SigV4 signs.
 * The state made here is the request's from then on (con_cls). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct conn *cn = spx_calloc(1, sizeof(*cn));
	const char *q = uri ? strchr(uri, '?') : NULL;

	spx_http_resp_init(&cn->resp);
	cn->raw_query = spx_strdup(q ? q + 1 : "");
	return cn;
}

static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	return strlen(s);
}

struct collect {
	struct spx_http_req *req;
	size_t bytes;
};

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind,
				  const char *k, const char *v)
{
	struct collect *c = cls;

	spx_kv_add(&c->req->headers, k, v ? v : "");
	c->bytes += strlen(k) + (v ? strlen(v) : 0) + 4;
	return MHD_YES;
}

static void peer(struct MHD_Connection *c, char *out, size_t sz)
{
	const union MHD_ConnectionInfo *ci;
	const struct sockaddr *sa;

	out[0] = '\0';
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return;
	sa = ci->client_addr;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  out, (socklen_t)sz);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
			  (socklen_t)sz);
}

static ssize_t gen_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct conn *cn = cls;
	ssize_t n = cn->resp.gen(cn->resp.gen_ctx, pos, buf, max);

	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n;
}

static enum MHD_Result queue(struct MHD_Connection *c, struct conn *cn)
{
	struct spx_http_resp *r = &cn->resp;
	struct MHD_Response *mr;
	enum MHD_Result ret;
	size_t len;
	char *p;

	if (r->gen) {
		mr = MHD_create_response_from_callback(
			r->gen_len < 0 ? MHD_SIZE_UNKNOWN : (uint64_t)r->gen_len,
			r->gen_block ? r->gen_block : 64 * 1024, gen_cb, cn,
			NULL);
	} else {
		p = spx_buf_detach(&r->body, &len);
		mr = MHD_create_response_from_buffer(len, p,
						     MHD_RESPMEM_MUST_FREE);
		if (!mr)
			free(p);
	}
	if (!mr)
		return MHD_NO;
	for (size_t i = 0; i < r->headers.n; i++)
		MHD_add_response_header(mr, r->headers.v[i].k,
					r->headers.v[i].v);
	if (r->close)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION,
					"close");
	ret = MHD_queue_response(c, (unsigned)r->status, mr);
	MHD_destroy_response(mr);
	cn->queued = true;
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct lctx *l = cls;
	struct spx_http_server *srv = l->srv;
	struct conn *cn = *con_cls;
	struct collect col;
	const char *cl;
	char *end;

	if (!cn) {
		cn = on_uri(NULL, NULL, c);
		*con_cls = cn;
	}
	if (!cn->began) {
		cn->req.method = spx_strdup(method);
		cn->req.path = spx_strdup(url);
		cn->req.service = l->service;
		cn->req.tls = l->tls;
		cn->req.content_length = -1;
		peer(c, cn->req.remote, sizeof(cn->req.remote));
		col.req = &cn->req;
		col.bytes = strlen(method) + strlen(url) + strlen(version) + 4;
		MHD_get_connection_values(c, MHD_HEADER_KIND, add_header, &col);
		col.bytes += strlen(cn->raw_query);
		cn->req.query = cn->raw_query;
		cn->raw_query = NULL;
		cl = spx_kv_geti(&cn->req.headers, "Content-Length");
		if (cl) {
			errno = 0;
			unsigned long long v = strtoull(cl, &end, 10);
			if (!errno && end != cl && !*end && *cl != '-' &&
			    v <= INT64_MAX)
				cn->req.content_length = (int64_t)v;
		}
		cn->began = true;
		cn->lim = srv->lim;
		if (l->max_body)
			cn->lim.max_body_bytes = l->max_body;
		spx_http_drive_begin(srv->h, &cn->lim, &cn->req, col.bytes,
				     &cn->resp);
		/* An answer before the body: with a body to come, send it now
		 * (no "100 Continue"; the connection closes). Without one,
		 * wait for the final call so that keep-alive survives. */
		if (cn->resp.ready && cn->req.content_length != 0 &&
		    (cn->req.content_length > 0 ||
		     spx_kv_geti(&cn->req.headers, "Transfer-Encoding")))
			return queue(c, cn);
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (cn->resp.ready) {
			cn->drained += n;
			return cn->drained > DRAIN_MAX ? MHD_NO : MHD_YES;
		}
		spx_http_drive_body(srv->h, &cn->lim, &cn->req, upload, n,
				    &cn->resp);
		return MHD_YES;
	}
	if (!cn->resp.ready)
		spx_http_drive_end(srv->h, &cn->req, &cn->resp);
	return queue(c, cn);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct lctx *l = cls;
	struct conn *cn = *con_cls;

	if (!cn)
		return;
	if (cn->began && l->srv->h->done)
		l->srv->h->done(l->srv->h->app, &cn->req);
	spx_http_resp_release(&cn->resp);
	spx_http_req_release(&cn->req);
	free(cn->raw_query);
	free(cn);
	*con_cls = NULL;
}

__attribute__((format(printf, 2, 0))) static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	spx_log(SPX_LOG_INFO, "http: %s", line);
}

static int parse_addr(const char *bind, int port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!strcmp(bind, "localhost"))
		bind = "127.0.0.1";
	if (inet_pton(AF_INET, bind, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		return 0;
	}
	if (inet_pton(AF_INET6, bind, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		return 0;
	}
	return spx_error(SPX_USAGE, "bad listen address '%s'", bind);
}

int spx_http_start(const struct spx_http_listener *ls, size_t n,
		   unsigned threads, const struct spx_http_limits *lim,
		   const struct spx_http_handler *h,
		   struct spx_http_server **out)
{
	struct spx_http_server *srv;
	struct sockaddr_storage ss;
	unsigned flags;

	if (n > SPX_ARRAY_SIZE(srv->d))
		return spx_error(SPX_USAGE, "too many listeners");
	srv = spx_calloc(1, sizeof(*srv));
	srv->lim = *lim;
	srv->h = h;
	for (size_t i = 0; i < n; i++) {
		if (parse_addr(ls[i].bind, ls[i].port, &ss) < 0)
			goto fail;
		srv->l[i].srv = srv;
		srv->l[i].service = ls[i].service;
		srv->l[i].tls = ls[i].cert_pem != NULL;
		srv->l[i].max_body = ls[i].max_body_bytes;
		flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			MHD_USE_ERROR_LOG;
		if (ss.ss_family == AF_INET6)
			flags |= MHD_USE_IPv6;
		if (ls[i].cert_pem)
			flags |= MHD_USE_TLS;
		/* The connection memory pool holds the request head. It is
		 * well above our own header limit so that the driver, not
		 * MHD, answers an oversized head, with an AWS error body; only
		 * a head beyond the pool itself gets MHD's own 431 page. MHD
		 * maps a pool this large lazily: untouched pages cost no
		 * memory. */
		size_t pool = lim->max_header_bytes * 4;

		if (pool < (1u << 20))
			pool = 1u << 20;
		/* The logger first, so that MHD reports everything after it
		 * through us. The TLS pair last, so that END can cut it. */
		struct MHD_OptionItem opts[] = {
			{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL },
			{ MHD_OPTION_SOCK_ADDR, 0, &ss },
			{ MHD_OPTION_THREAD_POOL_SIZE, threads, NULL },
			{ MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)pool,
			  NULL },
			{ MHD_OPTION_CONNECTION_TIMEOUT, 120, NULL },
			{ MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)no_unescape,
			  NULL },
			{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed,
			  &srv->l[i] },
			{ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri,
			  &srv->l[i] },
			{ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)ls[i].key_pem },
			{ MHD_OPTION_HTTPS_MEM_CERT, 0,
			  (void *)ls[i].cert_pem },
			{ MHD_OPTION_END, 0, NULL },
		};

		if (!ls[i].cert_pem)
			opts[8].option = MHD_OPTION_END;
		srv->d[i] = MHD_start_daemon(flags, 0, NULL, NULL, on_request,
					     &srv->l[i], MHD_OPTION_ARRAY,
					     opts, MHD_OPTION_END);
		if (!srv->d[i]) {
			spx_error_errno(SPX_FAIL, "cannot listen on %s port %d",
					ls[i].bind, ls[i].port);
			goto fail;
		}
		srv->n = i + 1;
	}
	*out = srv;
	return 0;
fail:
	spx_http_stop(srv);
	return -1;
}

void spx_http_stop(struct spx_http_server *srv)
{
	if (!srv)
		return;
	for (size_t i = 0; i < srv->n; i++)
		if (srv->d[i])
			MHD_stop_daemon(srv->d[i]);
	free(srv);
}
