/* http.h: the CGI-style request/response abstraction under spx-gw.
 *
 * A request is the method, the raw path and query (still percent-encoded,
 * exactly as on the request line, since SigV4 signs those bytes), the
 * headers in arrival order, and a body that arrives in pieces. A handler is
 * four callbacks, called in this order on one thread:
 *
 *   begin  after the headers. It may answer at once by filling resp and
 *          setting resp->ready (an auth failure, say): the body is then never
 *          read, "100 Continue" is never sent, and the connection closes.
 *   body   zero or more times with the next piece of the body. Memory stays
 *          bounded because no layer gathers the whole body; a handler that
 *          needs all of it (an EC2 Query form) keeps it under its own limit.
 *          It may set resp->ready to stop early (the connection closes).
 *   end    once the body is complete; must leave resp ready.
 *   done   always, exactly once for every begun request, to free req->ctx.
 *
 * The same handler runs behind libmicrohttpd (spx_http_serve) and from CGI
 * variables and stdin (spx_http_cgi). The transport enforces the header
 * and body limits and reports them through the error callback, so the
 * client gets the service's own error document (431, 413, 400).
 */
#ifndef SPX_HTTP_H
#define SPX_HTTP_H

#include "spx.h"

/* Which listener received the request. */
enum spx_http_service {
	SPX_HTTP_EC2 = 0, /* EC2, STS, IAM Query APIs (port 9999) */
	SPX_HTTP_S3 = 1,  /* S3 REST (port 8443) */
	SPX_HTTP_NSERVICES
};

struct spx_http_req {
	char *method;
	char *path;  /* raw: "/bkt/a%20b" */
	char *query; /* raw, without '?': "list-type=2&prefix=a%2F"; "" if none */
	struct spx_kvlist headers;
	char remote[64]; /* peer address, text */
	enum spx_http_service service;
	bool tls;
	int64_t content_length; /* -1 when not given (chunked) */
	uint64_t body_seen;	/* bytes of body handed to the handler so far */
	void *ctx;		/* the handler's per-request state */
};

struct spx_http_resp {
	int status; /* 0 until set */
	struct spx_kvlist headers;
	struct spx_buf body;
	/* A streamed body: when gen is set, body is ignored. gen fills buf
	 * with up to max bytes from offset pos and returns the count, 0 at the
	 * end, -1 on error (the connection is then cut). gen_free (may be NULL)
	 * is called once when the response is gone. */
	ssize_t (*gen)(void *gctx, uint64_t pos, char *buf, size_t max);
	void (*gen_free)(void *gctx);
	void *gen_ctx;
	int64_t gen_len; /* -1: unknown, sent chunked */
	size_t gen_block; /* gen's largest max; 0: 64 KiB */
	bool close;	 /* close the connection after this response */
	bool ready;	 /* the response is complete and may be sent */
};

struct spx_http_handler {
	void *app;
	void (*begin)(void *app, struct spx_http_req *req,
		      struct spx_http_resp *resp);
	void (*body)(void *app, struct spx_http_req *req, const char *data,
		     size_t len, struct spx_http_resp *resp);
	void (*end)(void *app, struct spx_http_req *req,
		    struct spx_http_resp *resp);
	void (*done)(void *app, struct spx_http_req *req);
	/* Fill resp with the service's error document for a transport-level
	 * failure: status 400, 413 or 431, an AWS error code and a message. */
	void (*error)(void *app, struct spx_http_req *req, int status,
		      const char *code, const char *message,
		      struct spx_http_resp *resp);
};

struct spx_http_limits {
	size_t max_header_bytes; /* request line + headers */
	uint64_t max_body_bytes;
};

struct spx_http_listener {
	enum spx_http_service service;
	const char *bind; /* numeric IPv4/IPv6 address */
	int port;
	const char *cert_pem; /* NULL: plain HTTP */
	const char *key_pem;
	uint64_t max_body_bytes; /* 0: the server's limit */
};

struct spx_http_server;

/* Start one libmicrohttpd daemon per listener, each with a pool of
 * `threads` threads. Returns 0 once every listener accepts connections. */
int spx_http_start(const struct spx_http_listener *ls, size_t n,
		   unsigned threads, const struct spx_http_limits *lim,
		   const struct spx_http_handler *h,
		   struct spx_http_server **out);
void spx_http_stop(struct spx_http_server *srv);

/* Run one request from CGI/1.1 variables (REQUEST_METHOD, REQUEST_URI or
 * PATH_INFO + QUERY_STRING, CONTENT_LENGTH, CONTENT_TYPE, HTTP_*) and the
 * body on fd `in`; write "Status:", headers, a blank line and the body to
 * fd `out`. Returns 0, or -1 if the output could not be written. */
int spx_http_cgi(enum spx_http_service service,
		 const struct spx_http_limits *lim,
		 const struct spx_http_handler *h, int in, int out);

/* Reason phrase for a status code ("OK", "Not Found", ...). */
const char *spx_http_reason(int status);

/* Helpers for handlers. */
void spx_http_resp_init(struct spx_http_resp *resp);
void spx_http_resp_release(struct spx_http_resp *resp);
void spx_http_req_release(struct spx_http_req *req);
/* Drive one complete request through a handler: begin, body (in one
 * piece), end, done. Used by spx-gw cgi, the tests and the fuzz target. */
void spx_http_run(const struct spx_http_handler *h,
		  const struct spx_http_limits *lim, struct spx_http_req *req,
		  const char *body, size_t len, struct spx_http_resp *resp);

#endif
