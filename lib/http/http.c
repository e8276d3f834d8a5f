#include "spx.h"

#include "http/driver.h"
#include "http/http.h"

const char *spx_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Payload Too Large";
	case 416: return "Range Not Satisfiable";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 507: return "Insufficient Storage";
	default: return "Unknown";
	}
}

void spx_http_resp_init(struct spx_http_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	spx_buf_init(&resp->body, 0);
	resp->gen_len = -1;
}

/* Forget the headers and any streamed body. */
static void drop(struct spx_http_resp *resp)
{
	spx_kv_free(&resp->headers);
	if (resp->gen_free)
		resp->gen_free(resp->gen_ctx);
	resp->gen = NULL;
	resp->gen_free = NULL;
	resp->gen_ctx = NULL;
}

void spx_http_resp_release(struct spx_http_resp *resp)
{
	drop(resp);
	spx_buf_release(&resp->body);
}

void spx_http_req_release(struct spx_http_req *req)
{
	free(req->method);
	free(req->path);
	free(req->query);
	spx_kv_free(&req->headers);
	req->method = req->path = req->query = NULL;
}

void spx_http_fail(const struct spx_http_handler *h, struct spx_http_req *req,
		   int status, const char *code, const char *msg,
		   struct spx_http_resp *resp)
{
	/* Whatever the handler had started is replaced. */
	drop(resp);
	spx_buf_reset(&resp->body);
	h->error(h->app, req, status, code, msg, resp);
	resp->status = status;
	resp->close = true;
	resp->ready = true;
}

bool spx_http_drive_begin(const struct spx_http_handler *h,
			  const struct spx_http_limits *lim,
			  struct spx_http_req *req, size_t header_bytes,
			  struct spx_http_resp *resp)
{
	if (header_bytes > lim->max_header_bytes) {
		spx_http_fail(h, req, 431, "RequestHeaderSectionTooLarge",
			      "Your request header section exceeds the maximum "
			      "allowed size.",
			      resp);
		return true;
	}
	if (req->content_length >= 0 &&
	    (uint64_t)req->content_length > lim->max_body_bytes) {
		spx_http_fail(h, req, 413, "EntityTooLarge",
			      "Your proposed upload exceeds the maximum allowed "
			      "size",
			      resp);
		return true;
	}
	h->begin(h->app, req, resp);
	return resp->ready;
}

bool spx_http_drive_body(const struct spx_http_handler *h,
			 const struct spx_http_limits *lim,
			 struct spx_http_req *req, const char *data, size_t len,
			 struct spx_http_resp *resp)
{
	if (resp->ready)
		return true;
	if (len > lim->max_body_bytes - req->body_seen ||
	    (req->content_length >= 0 &&
	     req->body_seen + len > (uint64_t)req->content_length)) {
		spx_http_fail(h, req, 413, "EntityTooLarge",
			      "Your proposed upload exceeds the maximum allowed "
			      "size",
			      resp);
		return true;
	}
	req->body_seen += len;
	if (len)
		h->body(h->app, req, data, len, resp);
	return resp->ready;
}

void spx_http_drive_end(const struct spx_http_handler *h,
			struct spx_http_req *req, struct spx_http_resp *resp)
{
	if (resp->ready)
		return;
	if (req->content_length >= 0 &&
	    req->body_seen != (uint64_t)req->content_length) {
		spx_http_fail(h, req, 400, "IncompleteBody",
			      "You did not provide the number of bytes "
			      "specified by the Content-Length HTTP header",
			      resp);
		return;
	}
	h->end(h->app, req, resp);
	if (!resp->ready || !resp->status)
		spx_http_fail(h, req, 500, "InternalError",
			      "We encountered an internal error. Please try "
			      "again.",
			      resp);
}

void spx_http_run(const struct spx_http_handler *h,
		  const struct spx_http_limits *lim, struct spx_http_req *req,
		  const char *body, size_t len, struct spx_http_resp *resp)
{
	size_t hb = strlen(req->method) + strlen(req->path) +
		    strlen(req->query) + 16;

	for (size_t i = 0; i < req->headers.n; i++)
		hb += strlen(req->headers.v[i].k) +
		      strlen(req->headers.v[i].v) + 4;
	if (!spx_http_drive_begin(h, lim, req, hb, resp) &&
	    !spx_http_drive_body(h, lim, req, body, len, resp))
		spx_http_drive_end(h, req, resp);
	if (h->done)
		h->done(h->app, req);
}
