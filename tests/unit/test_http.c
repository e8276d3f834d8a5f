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

/* The access-log line: every field in its place, "-" for what is
 * unknown, nothing that could split the line or a field. */
static const struct {
	const char *name;
	const char *method, *path, *remote, *agent;
	struct spx_http_note note;
	struct spx_http_outcome o;
	long ms; /* t1 - t0 */
	const char *want;
} lines[] = {
	{ "a full line", "GET", "/bkt/key?X-Amz-Signature=secret", "10.0.0.1",
	  "aws-cli/2.9.19 Python/3.11.2",
	  { "ABCDEF0123456789", "AKIAEXAMPLE", "s3", "GetObject", "" },
	  { 200, 0, 1048576, "ok", { 0, 0 } }, 12,
	  "2026-12-01T10:00:00.123Z ABCDEF0123456789 10.0.0.1 AKIAEXAMPLE s3 "
	  "GetObject GET /bkt/key 200 - 0 1048576 12.000 ok "
	  "aws-cli/2.9.19\\x20Python/3.11.2\n" },
	{ "nothing known", NULL, "/", "", NULL, { "", "", "", "", "" },
	  { 0, 0, 0, "error", { 0, 0 } }, 0,
	  "2026-12-01T10:00:00.123Z - - - ec2 - - / - - 0 0 0.000 error -\n" },
	{ "an error, bytes in", "PUT", "/b/k", "::1", "",
	  { "id", "", "s3", "PutObject", "AccessDenied" },
	  { 403, 5, 243, "aborted", { 0, 0 } }, 1,
	  "2026-12-01T10:00:00.123Z id ::1 - s3 PutObject PUT /b/k 403 "
	  "AccessDenied 5 243 1.000 aborted -\n" },
	{ "hostile bytes are escaped", "GET", "/a b\"c\\d\n\xff", "1.2.3.4",
	  "x\ry\"",
	  { "x y", "", "ec2", "Describe\tRegions", "" },
	  { 400, 0, 0, "ok", { 0, 0 } }, 0,
	  "2026-12-01T10:00:00.123Z x\\x20y 1.2.3.4 - ec2 Describe\\x09Regions "
	  "GET /a\\x20b\\x22c\\x5cd\\x0a\\xff 400 - 0 0 0.000 ok "
	  "x\\x0dy\\x22\n" },
};

static void test_alog_lines(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(lines); i++) {
		struct spx_http_req req = { 0 };
		struct spx_http_outcome o = lines[i].o;
		char buf[1024];
		size_t n;

		req.method = (char *)lines[i].method;
		req.path = (char *)lines[i].path;
		snprintf(req.remote, sizeof(req.remote), "%s", lines[i].remote);
		req.note = lines[i].note;
		if (lines[i].agent)
			spx_kv_add(&req.headers, "user-agent", lines[i].agent);
		req.service = SPX_HTTP_EC2;
		/* 2026-12-01T10:00:00.123Z */
		req.wall.tv_sec = 1796119200;
		req.wall.tv_nsec = 123000000;
		req.t0.tv_sec = 100;
		o.t1.tv_sec = 100 + lines[i].ms / 1000;
		o.t1.tv_nsec = lines[i].ms % 1000 * 1000000;
		n = spx_http_alog_format(buf, sizeof(buf), &req, &o);
		T_STR(buf, lines[i].want, "access log: %s", lines[i].name);
		T_INT(n, strlen(lines[i].want), "access log: %s: length",
		      lines[i].name);
		spx_kv_free(&req.headers);
	}
}

/* A client's name is cut at 256 bytes, the cut marked. */
static void test_alog_agent_cut(void)
{
	struct spx_http_req req = { .method = "GET", .path = "/" };
	struct spx_http_outcome o = { .status = 200, .end = "ok" };
	char agent[1000], buf[2048], *last;

	memset(agent, 'a', sizeof(agent) - 1);
	agent[sizeof(agent) - 1] = '\0';
	spx_kv_add(&req.headers, "User-Agent", agent);
	spx_http_alog_format(buf, sizeof(buf), &req, &o);
	last = strrchr(buf, ' ');
	T_OK(last && strlen(last + 1) == 256 + 3 + 1 &&
		     !strcmp(last + 1 + 256, "...\n"),
	     "a long User-Agent is its first 256 bytes and '...'");
	spx_kv_free(&req.headers);
}

/* A line that does not fit is cut, and still ends the line. */
static void test_alog_cut(void)
{
	struct spx_http_req req = { .method = "GET", .path = "/aaaa" };
	struct spx_http_outcome o = { .status = 200, .end = "ok" };
	char buf[32];
	size_t n = spx_http_alog_format(buf, sizeof(buf), &req, &o);

	T_INT(n, sizeof(buf) - 1, "a long line fills the buffer");
	T_OK(buf[n - 1] == '\n' && !memchr(buf, '\n', n - 1),
	     "a cut line is one line");
}

/* reopen: after the file is moved away, lines go to a new file. */
static void test_alog_reopen(void)
{
	char dir[] = "/tmp/spx-alog.XXXXXX", *path, *moved;
	struct spx_http_alog *a = NULL;
	struct spx_http_req req = { .method = "GET", .path = "/" };
	struct spx_http_outcome o = { .status = 200, .end = "ok" };
	struct spx_buf b = SPX_BUF_INIT;

	T_OK(mkdtemp(dir) != NULL, "a temp dir");
	path = spx_xprintf("%s/access.log", dir);
	moved = spx_xprintf("%s/access.log.1", dir);
	T_INT(spx_http_alog_open(path, &a), 0, "open");
	spx_http_alog_write(a, &req, &o);
	T_INT(rename(path, moved), 0, "logrotate moves it");
	spx_http_alog_write(a, &req, &o);
	T_INT(spx_http_alog_reopen(a), 0, "reopen");
	spx_http_alog_write(a, &req, &o);
	spx_http_alog_close(a);
	T_INT(spx_buf_read_file(&b, moved, 1 << 20), 0, "read the old file");
	T_INT(b.len ? (long)(strchr(b.p, '\n') - b.p) > 0 : 0, 1,
	      "the old file has lines");
	T_INT((long)(b.len - (size_t)(strchr(strchr(b.p, '\n') + 1, '\n') + 1 - b.p)), 0,
	      "two lines before the reopen");
	spx_buf_reset(&b);
	T_INT(spx_buf_read_file(&b, path, 1 << 20), 0, "read the new file");
	T_INT((long)(strchr(b.p, '\n') + 1 - b.p), (long)b.len,
	      "one line after it");
	spx_buf_release(&b);
	unlink(path);
	unlink(moved);
	rmdir(dir);
	free(path);
	free(moved);
}

int main(void)
{
	test_alog_lines();
	test_alog_cut();
	test_alog_agent_cut();
	test_alog_reopen();

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
