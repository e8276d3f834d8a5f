/* fuzz_http: the gateway's request handling, from the head to the answer.
 *
 * The input is one request: "METHOD PATH?QUERY\n" then header lines
 * "Name: value\n", a blank line, and the body. The target makes a node in a
 * temp dir once (configuration and keys), then runs each request through
 * the same begin/body/end pipeline that libmicrohttpd and CGI drive. The
 * low bit of the first byte picks the listener (EC2 or S3). */
#include "spx.h"

#include "gwnode.h"
#include "http/http.h"

static char *take_line(const char **p, const char *end)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	const char *e = nl ? nl : end;
	char *s = spx_strndup(*p, (size_t)(e - *p));

	*p = nl ? nl + 1 : end;
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct spx_http_req req = { 0 };
	struct spx_http_resp resp;
	char *line, *sp, *q;
	struct spx_gw *gw = fuzz_gw();

	if (size > 1 << 16 || memchr(data, '\0', size))
		return 0;
	line = take_line(&p, end);
	sp = strchr(line, ' ');
	req.method = spx_strndup(line, sp ? (size_t)(sp - line) : strlen(line));
	q = sp ? strchr(sp + 1, '?') : NULL;
	req.path = sp ? spx_strndup(sp + 1, q ? (size_t)(q - sp - 1)
					     : strlen(sp + 1))
		      : spx_strdup("/");
	req.query = spx_strdup(q ? q + 1 : "");
	free(line);
	req.service = size && (data[0] & 1) ? SPX_HTTP_S3 : SPX_HTTP_EC2;
	req.content_length = -1;
	while (p < end) {
		char *h = take_line(&p, end), *colon = strchr(h, ':');

		if (!*h) {
			free(h);
			break;
		}
		if (colon) {
			*colon = '\0';
			spx_kv_add(&req.headers, h, colon[1] == ' ' ? colon + 2 : colon + 1);
		}
		free(h);
	}
	spx_http_resp_init(&resp);
	spx_http_run(spx_gw_handler(gw), spx_gw_limits(gw), &req, p,
		     (size_t)(end - p), &resp);
	if (!resp.ready || resp.status < 200 || resp.status > 599)
		abort();
	/* Its access-log line: one line, whatever the request held. */
	{
		struct spx_http_outcome o = { resp.status, req.body_seen,
					      resp.body.len, "ok", { 0, 0 } };
		char buf[8192];
		size_t n = spx_http_alog_format(buf, sizeof(buf), &req, &o);

		if (!n || buf[n - 1] != '\n' || memchr(buf, '\n', n - 1))
			abort();
	}
	spx_http_resp_release(&resp);
	spx_http_req_release(&req);
	return 0;
}
