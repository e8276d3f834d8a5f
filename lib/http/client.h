/* client.h: signed HTTP calls from one node to another (libcurl).
 *
 * The request is signed with SigV4 (lib/auth/sigv4.h) exactly as an AWS
 * SDK would sign it, so every node-to-node call goes through the same
 * authentication as a client's. */
#ifndef SPX_CLIENT_H
#define SPX_CLIENT_H

#include "spx.h"

#include "auth/sigv4.h"

struct spx_http_call {
	const char *method;	  /* "GET", "POST" ... */
	const char *endpoint;	  /* "https://127.0.0.1:9999" */
	const char *path;	  /* raw, percent-encoded; "/" */
	const char *query;	  /* raw, without '?'; NULL or "" */
	const char *body;	  /* NULL for none */
	size_t body_len;
	const char *content_type; /* NULL for none */
	const char *ca_file;	  /* trust anchors; NULL: the system's */
	const struct spx_sigv4_cred *cred; /* NULL: send unsigned */
	long timeout_ms;	  /* 0: 30 s */
};

/* libcurl's global set-up, once per process (thread-safe). */
void spx_http_client_init(void);

/* The headers of a request for libcurl: hdrs, signed with SigV4 for cred
 * (NULL: unsigned; hdrs gains X-Amz-Date, X-Amz-Content-Sha256 =
 * payload_hash and Authorization), and an empty "Expect:" (no
 * 100-continue round trip). *out is freed with curl_slist_free_all.
 * Returns 0, or -1 with an error recorded. */
struct curl_slist;
int spx_http_headers(const struct spx_sigv4_cred *cred, const char *method,
		     const char *endpoint, const char *path, const char *query,
		     struct spx_kvlist *hdrs, const char *payload_hash,
		     struct curl_slist **out);

/* Make the call; *status gets the HTTP status and body the response body
 * (bounded by max_body). Returns 0 when a response arrived (whatever its
 * status), -1 with an error recorded (SPX_FAIL) when none did. */
int spx_http_call(const struct spx_http_call *c, long *status,
		  struct spx_buf *body, size_t max_body);

#endif
