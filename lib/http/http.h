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

/* What a handler tells the access log about a request. Every field is
 * optional (an empty one prints as "-"); the transport writes the line.
 * Set them with snprintf: the strings are the handler's own copies. */
struct spx_http_note {
	char id[48];	     /* the request id the client was told */
	char principal[64];  /* the authenticated access key */
	char api[8];	     /* "ec2", "sts", "s3"; empty: the listener's */
	char op[64];	     /* the action, or the S3 operation */
	char error[64];	     /* the error code of the answer */
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
	struct spx_http_note note; /* for the access log */
	struct timespec t0;	/* CLOCK_MONOTONIC when the request began */
	struct timespec wall;	/* CLOCK_REALTIME when the request began */
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

/* How the listeners treat connections, so that slow clients cannot
 * starve the others (server only; 0 turns a rule off). */
struct spx_http_conns {
	/* Open connections one client address may hold on all listeners
	 * together; more are closed as soon as they are accepted. */
	unsigned max_per_addr;
	/* A request head (and, on TLS, the handshake before the first) must
	 * be complete this long after the connection opened or the previous
	 * answer was sent; otherwise the connection is closed. An idle
	 * keep-alive connection is closed after the same time. */
	unsigned header_timeout_ms;
	/* A request body must bring at least body_min_rate bytes a second,
	 * measured over each body_timeout_ms window; a body that stalls
	 * (min rate 0: brings nothing in a window) is cut. Time spent in the
	 * handler does not count against the client. */
	unsigned body_timeout_ms;
	uint64_t body_min_rate;
	/* libmicrohttpd's idle timeout, for every other phase (a client
	 * that stops reading an answer), in seconds. */
	unsigned idle_timeout_s;
	/* Threads that finish requests which change something (any method
	 * but GET, HEAD and OPTIONS): the handler's end runs there while
	 * the connection waits, suspended, so a request thread never waits
	 * on the disk. 0: it runs on the request thread. */
	unsigned workers;
};

/* The access log: one line per request, whatever its outcome, written
 * by the transport when the request is finished (spx_http_alog_write):
 *
 *   TIME ID REMOTE PRINCIPAL API OP METHOD PATH STATUS ERROR IN OUT MS END
 *
 * TIME is when the request began (UTC, ms); PATH is the raw path without
 * the query (which can hold presigned credentials); IN and OUT are body
 * bytes received and handed to the connection; MS the duration; END how
 * the exchange ended: ok, aborted (the client went away), timeout (cut by
 * a deadline), error (the HTTP layer refused the request before the
 * handler saw it, or the answer failed midway) or shutdown. Empty fields
 * are "-"; bytes outside printable ASCII, '"' and '\\' are written as
 * \xHH so that a line is always one line of space-separated fields. */
struct spx_http_alog;
/* Open (create, append) path. */
int spx_http_alog_open(const char *path, struct spx_http_alog **out);
/* Open the path again (after logrotate moved the file away). */
int spx_http_alog_reopen(struct spx_http_alog *a);
void spx_http_alog_close(struct spx_http_alog *a);

struct spx_http_outcome {
	int status;	 /* 0: no answer was made */
	uint64_t in, out;
	const char *end; /* "ok", "aborted", "timeout", "error", "shutdown" */
	struct timespec t1; /* CLOCK_MONOTONIC at the end */
};
/* Format the line for req (with its trailing newline) into buf; returns
 * its length (at most size - 1). */
size_t spx_http_alog_format(char *buf, size_t size,
			    const struct spx_http_req *req,
			    const struct spx_http_outcome *o);
/* Write the line; a NULL log writes nothing. */
void spx_http_alog_write(struct spx_http_alog *a,
			 const struct spx_http_req *req,
			 const struct spx_http_outcome *o);
/* Stamp req->t0 and req->wall with the current time. */
void spx_http_req_start(struct spx_http_req *req);

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
 * `threads` threads. Returns 0 once every listener accepts connections.
 * conns may be NULL (no connection rules); alog may be NULL (no access
 * log) and must outlive the server. */
int spx_http_start(const struct spx_http_listener *ls, size_t n,
		   unsigned threads, const struct spx_http_limits *lim,
		   const struct spx_http_conns *conns,
		   const struct spx_http_handler *h, struct spx_http_alog *alog,
		   struct spx_http_server **out);
void spx_http_stop(struct spx_http_server *srv);

/* Run one request from CGI/1.1 variables (REQUEST_METHOD, REQUEST_URI or
 * PATH_INFO + QUERY_STRING, CONTENT_LENGTH, CONTENT_TYPE, HTTP_*) and the
 * body on fd `in`; write "Status:", headers, a blank line and the body to
 * fd `out`, and its line to alog (may be NULL). Returns 0, or -1 if the
 * output could not be written. */
int spx_http_cgi(enum spx_http_service service,
		 const struct spx_http_limits *lim,
		 const struct spx_http_handler *h, struct spx_http_alog *alog,
		 int in, int out);

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
