#include "spx.h"

#include <curl/curl.h>
#include <pthread.h>

#include "http/client.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void spx_http_client_init(void)
{
	pthread_once(&curl_once, curl_init);
}

struct sink {
	struct spx_buf *b;
	size_t max;
	bool over;
};

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct sink *s = ctx;
	size_t len = size * n;

	if (s->b->len + len > s->max) {
		s->over = true;
		return 0; /* makes curl fail with CURLE_WRITE_ERROR */
	}
	spx_buf_add(s->b, p, len);
	return len;
}

/* "https://h:p" -> "h:p" */
static const char *host_of(const char *endpoint, char *out, size_t sz)
{
	const char *p = strstr(endpoint, "://");

	p = p ? p + 3 : endpoint;
	snprintf(out, sz, "%.*s", (int)strcspn(p, "/"), p);
	return out;
}

int spx_http_headers(const struct spx_sigv4_cred *cred, const char *method,
		     const char *endpoint, const char *path, const char *query,
		     struct spx_kvlist *hdrs, const char *payload_hash,
		     struct curl_slist **out)
{
	struct spx_buf auth = SPX_BUF_INIT;
	struct curl_slist *sl = NULL;
	char host[256];
	int rc = -1;

	*out = NULL;
	if (cred) {
		if (spx_sigv4_sign(cred, method,
				   host_of(endpoint, host, sizeof(host)), path,
				   query ? query : "", hdrs, payload_hash,
				   time(NULL), &auth) < 0)
			goto out;
		spx_kv_add(hdrs, "Authorization", auth.p);
	}
	for (size_t i = 0; i <= hdrs->n; i++) {
		char *line = i < hdrs->n ? spx_xprintf("%s: %s", hdrs->v[i].k,
						       hdrs->v[i].v)
					 : spx_strdup("Expect:");
		struct curl_slist *n = curl_slist_append(sl, line);

		free(line);
		if (!n) {
			spx_error(SPX_FAIL, "out of memory");
			goto out;
		}
		sl = n;
	}
	*out = sl;
	sl = NULL;
	rc = 0;
out:
	curl_slist_free_all(sl);
	spx_buf_release(&auth);
	return rc;
}

int spx_http_call(const struct spx_http_call *c, long *status,
		  struct spx_buf *body, size_t max_body)
{
	struct spx_kvlist hdrs = SPX_KVLIST_INIT;
	struct spx_buf url = SPX_BUF_INIT;
	struct curl_slist *sl = NULL;
	struct sink sink = { body, max_body, false };
	char hash[65];
	CURL *curl;
	CURLcode cc;
	int rc = -1;

	spx_http_client_init();
	curl = curl_easy_init();
	if (!curl)
		return spx_error(SPX_FAIL, "cannot initialise libcurl");
	spx_buf_addf(&url, "%s%s%s%s", c->endpoint, c->path,
		     c->query && *c->query ? "?" : "",
		     c->query ? c->query : "");
	if (c->content_type)
		spx_kv_add(&hdrs, "Content-Type", c->content_type);
	if (c->cred)
		spx_sigv4_sha256_hex(c->body ? c->body : "", c->body_len, hash);
	/* The body is small and whole: no "Expect: 100-continue" round trip. */
	if (spx_http_headers(c->cred, c->method, c->endpoint, c->path,
			     c->query, &hdrs, hash, &sl) < 0)
		goto out;
	curl_easy_setopt(curl, CURLOPT_URL, url.p);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, c->method);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, sl);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
			 c->timeout_ms ? c->timeout_ms : 30000L);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->ca_file)
		curl_easy_setopt(curl, CURLOPT_CAINFO, c->ca_file);
	if (c->body) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, c->body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)c->body_len);
	} else if (!strcmp(c->method, "HEAD")) {
		curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	}
	cc = curl_easy_perform(curl);
	if (cc != CURLE_OK) {
		spx_error(SPX_FAIL, "%s %s: %s", c->method, url.p,
			  sink.over ? "response too large"
				    : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
	rc = 0;
out:
	curl_slist_free_all(sl);
	curl_easy_cleanup(curl);
	spx_kv_free(&hdrs);
	spx_buf_release(&url);
	return rc;
}
