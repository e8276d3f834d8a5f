/* Unit tests for lib/http: the request pipeline's limits and order of
 * calls, as spx_http_run drives them. */
#include "spx.h"

#include "http/http.h"
#include "t.h"

struct rec {
	struct spx_buf calls;
	size_t body;
	bool answer_in_begin;
};

static void h_begin(void *app, struct spx_http_req *req,
		    struct spx_http_resp *resp)
{
	struct rec *r = app;

	spx_buf_adds(&r->calls, "begin;");
	req->ctx = r;
	if (r->answer_in_begin) {
		resp->status = 403;
		resp->ready = true;
	}
}

static void h_body(void *app, struct spx_http_req *req, const char *d,
		   size_t n, struct spx_http_resp *resp)
{
	struct rec *r = app;

	spx_buf_adds(&r->calls, "body;");
	r->body += n;
}

static void h_end(void *app, struct spx_http_req *req,
		  struct spx_http_resp *resp)
{
	struct rec *r = app;

	spx_buf_adds(&r->calls, "end;");
	resp->status = 200;
	spx_buf_adds(&resp->body, "ok");
	resp->ready = true;
}

static void h_done(void *app, struct spx_http_req *req)
{
	struct rec *r = app;

	spx_buf_adds(&r->calls, "done;");
}

static void h_error(void *app, struct spx_http_req *req, int status,
		    const char *code, const char *msg,
		    struct spx_http_resp *resp)
{
	struct rec *r = app;

	spx_buf_addf(&r->calls, "error %d %s;", status, code);
	spx_buf_addf(&resp->body, "<Error><Code>%s</Code></Error>", code);
}

static const struct {
	const char *name;
	size_t header_pad; /* bytes of one extra header */
	int64_t content_length;
	const char *body;
	bool early;
	int status;
	const char *calls;
} cases[] = {
	{ "a plain request runs begin, body, end, done", 0, 5, "hello",
	  false, 200, "begin;body;end;done;" },
	{ "an empty body skips body", 0, 0, "", false, 200,
	  "begin;end;done;" },
	{ "no content-length (chunked) is fine", 0, -1, "abc", false, 200,
	  "begin;body;end;done;" },
	{ "an oversized head is 431 before begin", 300, -1, "", false, 431,
	  "error 431 RequestHeaderSectionTooLarge;done;" },
	{ "a declared body over the limit is 413 before begin", 0, 101, "",
	  false, 413, "error 413 EntityTooLarge;done;" },
	{ "a chunked body over the limit is 413 in flight", 0, -1,
	  "0123456789012345678901234567890123456789012345678901234567890123456"
	  "789012345678901234567890123456789012345678901234567890123456789",
	  false, 413, "begin;error 413 EntityTooLarge;done;" },
	{ "a short body is IncompleteBody", 0, 10, "abc", false, 400,
	  "begin;body;error 400 IncompleteBody;done;" },
	{ "a long body is refused", 0, 2, "abc", false, 413,
	  "begin;error 413 EntityTooLarge;done;" },
	{ "an answer in begin skips the body", 0, 5, "hello", true, 403,
	  "begin;done;" },
};

int main(void)
{
	const struct spx_http_limits lim = { .max_header_bytes = 256,
					     .max_body_bytes = 100 };

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		struct rec r = { .answer_in_begin = cases[i].early };
		struct spx_http_handler h = { &r, h_begin, h_body, h_end,
					      h_done, h_error };
		struct spx_http_req req = { 0 };
		struct spx_http_resp resp;
		char *pad;

		spx_buf_init(&r.calls, 0);
		req.method = spx_strdup("PUT");
		req.path = spx_strdup("/b/k");
		req.query = spx_strdup("");
		req.content_length = cases[i].content_length;
		spx_kv_add(&req.headers, "Host", "127.0.0.1");
		pad = spx_calloc(cases[i].header_pad + 1, 1);
		memset(pad, 'x', cases[i].header_pad);
		if (cases[i].header_pad)
			spx_kv_add(&req.headers, "X-Pad", pad);
		free(pad);
		spx_http_resp_init(&resp);
		spx_http_run(&h, &lim, &req, cases[i].body,
			     strlen(cases[i].body), &resp);
		T_INT(resp.status, cases[i].status, "%s: status", cases[i].name);
		T_STR(r.calls.p, cases[i].calls, "%s: calls", cases[i].name);
		T_OK(resp.ready, "%s: the response is ready", cases[i].name);
		if (cases[i].status >= 400 && !cases[i].early)
			T_OK(resp.close, "%s: the connection closes",
			     cases[i].name);
		spx_http_resp_release(&resp);
		spx_http_req_release(&req);
		spx_buf_release(&r.calls);
	}
	T_STR(spx_http_reason(431), "Request Header Fields Too Large",
	      "reason phrases");
	T_STR(spx_http_reason(999), "Unknown", "an unknown status");
	return t_done();
}
