/* fuzz_sigv4: SigV4 parsing and verification of arbitrary requests, the
 * sign/verify round trip, and the aws-chunked decoder.
 *
 * Input: "method\npath\nquery\nName: value\n...\n\nbody". The request is
 * parsed and verified with a fixed secret and clock (the checks must hold
 * whatever the result); then the same method, path, query and headers are
 * signed with spx_sigv4_sign, which verify must accept; then the body is
 * fed to the aws-chunked decoder in each mode, in slices whose sizes come
 * from the body's first byte. The same request is also read as SigV2,
 * and signed with SigV2 (HMAC-SHA1 of its string to sign), which verify
 * must accept. */
#include "spx.h"

#include <openssl/hmac.h>

#include "auth/chunked.h"
#include "auth/sigv4.h"
#include "checksum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define NOW ((time_t)1369353600) /* 20130524T000000Z */

/* The next '\n'-terminated piece of [*p, end) as a C string (a NUL inside
 * ends it early). */
static char *piece(const char **p, const char *end)
{
	const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
	const char *e = nl ? nl : end;

	*p = nl ? nl + 1 : end;
	return spx_strndup(s, (size_t)(e - s));
}

static bool is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (int i = 0; i < 64; i++)
		if (!s[i] || !strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

static void check_auth(const struct spx_sigv4_auth *a)
{
	if (!is_hex64(a->signature) || !strstr(a->signed_headers, "host") ||
	    strlen(a->scope) < 8 + 1 + 1 + 1 + 1 + 13 ||
	    memcmp(a->scope, a->date, 8) || memcmp(a->date, a->amz_date, 8) ||
	    a->payload == SPX_SIGV4_PAYLOAD_NONE)
		abort();
	if (a->presigned && (a->expires < 0 || a->expires > 604800))
		abort();
}

static void check_status(enum spx_sigv4_err e, const struct spx_sigv4_auth *a)
{
	for (int api = 0; api < 3; api++) {
		struct spx_apierr s =
			spx_sigv4_code(e, (enum spx_sigv4_api)api, a);

		if (!s.code || !s.message)
			abort();
	}
	if (!spx_sigv4_strerror(e))
		abort();
}

static void verify_raw(const char *method, const char *path,
		       const char *query, const struct spx_kvlist *h,
		       bool s3)
{
	struct spx_sigv4_auth a;
	struct spx_sigv4_req r = { method, path, query, h,
				   SPX_SIGV4_EMPTY_SHA256,
				   s3 ? "us-east-1" : NULL, s3 ? "s3" : NULL };
	struct spx_buf cr = SPX_BUF_INIT, sts = SPX_BUF_INIT;
	enum spx_sigv4_err e = spx_sigv4_parse(&r, &a);

	if ((unsigned)e >= SPX_SIGV4_NERR)
		abort();
	check_status(e, &a);
	if (e)
		return;
	check_auth(&a);
	spx_sigv4_canonical(&r, &a, &cr, &sts);
	e = spx_sigv4_verify(&r, &a, SECRET, NOW);
	if ((unsigned)e >= SPX_SIGV4_NERR || (e == SPX_SIGV4_OK) != a.verified)
		abort();
	check_status(e, &a);
	spx_buf_release(&cr);
	spx_buf_release(&sts);
}

/* SigV2: whatever parses holds its invariants; verify agrees with
 * auth.verified; a request signed over its own string to sign verifies. */
static void verify_v2(const char *method, const char *path,
		      const char *query, const struct spx_kvlist *h)
{
	struct spx_sigv4_req r = { method, path, query, h, NULL, NULL, NULL };
	struct spx_kvlist sent = SPX_KVLIST_INIT;
	struct spx_buf st = SPX_BUF_INIT, sig = SPX_BUF_INIT;
	struct spx_sigv4_auth a;
	enum spx_sigv4_err e = spx_sigv2_parse(&r, &a);
	unsigned char mac[20];
	unsigned int len = 0;
	char authz[200];

	if ((unsigned)e >= SPX_SIGV4_NERR || !a.v2)
		abort();
	(void)spx_sigv2_present(&r);
	check_status(e, &a);
	if (!e) {
		if (strlen(a.signature) != 28 || !a.access_key[0] ||
		    a.payload != SPX_SIGV4_PAYLOAD_UNSIGNED)
			abort();
		for (int i = 0; i < 2; i++) {
			e = spx_sigv2_verify(&r, &a, i ? "bkt" : NULL, SECRET,
					     NOW);
			if ((unsigned)e >= SPX_SIGV4_NERR ||
			    (e == SPX_SIGV4_OK) != a.verified)
				abort();
			check_status(e, &a);
		}
	}
	/* Signed here: no auth of its own, a Date at NOW. */
	for (size_t i = 0; i < h->n; i++) {
		if (!strcasecmp(h->v[i].k, "authorization") ||
		    !strcasecmp(h->v[i].k, "date") ||
		    !strcasecmp(h->v[i].k, "x-amz-date"))
			goto out;
		spx_kv_add(&sent, h->v[i].k, h->v[i].v);
	}
	spx_kv_add(&sent, "Date", "Fri, 24 May 2013 00:00:00 GMT");
	r.headers = &sent;
	memset(&a, 0, sizeof(a));
	spx_sigv2_string_to_sign(&r, &a, "bkt", &st);
	if (!HMAC(EVP_sha1(), SECRET, (int)strlen(SECRET),
		  (const unsigned char *)st.p, st.len, mac, &len))
		abort();
	spx_base64_encode(mac, len, &sig);
	snprintf(authz, sizeof(authz), "AWS AKIAIOSFODNN7EXAMPLE:%s", sig.p);
	spx_kv_add(&sent, "Authorization", authz);
	e = spx_sigv2_parse(&r, &a);
	/* The query may carry auth parameters or too many of them. */
	if (e == SPX_SIGV4_EMULTIPLE || e == SPX_SIGV4_ETOOBIG ||
	    (e == SPX_SIGV4_EHEADER &&
	     spx_kv_geti(&sent, "x-amz-security-token")))
		goto out;
	if (e || spx_sigv2_verify(&r, &a, "bkt", SECRET, NOW + 5))
		abort();
out:
	spx_kv_free(&sent);
	spx_buf_release(&st);
	spx_buf_release(&sig);
}

/* Whatever sign accepts, verify must accept. */
static void roundtrip(const char *method, const char *path, const char *query,
		      const struct spx_kvlist *h, const char *service)
{
	struct spx_sigv4_cred cred = { "AKIAIOSFODNN7EXAMPLE", SECRET,
				       "us-east-1", service, NULL };
	struct spx_kvlist mine = SPX_KVLIST_INIT, sent = SPX_KVLIST_INIT;
	struct spx_buf authz = SPX_BUF_INIT;
	struct spx_sigv4_auth a;
	struct spx_sigv4_req r;
	enum spx_sigv4_err e;

	for (size_t i = 0; i < h->n; i++)
		spx_kv_add(&mine, h->v[i].k, h->v[i].v);
	if (spx_sigv4_sign(&cred, method, "fuzz.example:8443", path, query,
			   &mine, SPX_SIGV4_EMPTY_SHA256, NOW, &authz) < 0)
		goto out;
	spx_kv_add(&sent, "Host", "fuzz.example:8443");
	for (size_t i = 0; i < mine.n; i++)
		spx_kv_add(&sent, mine.v[i].k, mine.v[i].v);
	spx_kv_add(&sent, "Authorization", authz.p);
	r = (struct spx_sigv4_req){ method, path, query, &sent, NULL, NULL,
				    NULL };
	e = spx_sigv4_parse(&r, &a);
	/* The query may carry auth parameters or too many of them. */
	if (e == SPX_SIGV4_EMULTIPLE || e == SPX_SIGV4_ETOOBIG)
		goto out;
	if (e)
		abort();
	check_auth(&a);
	if (spx_sigv4_verify(&r, &a, SECRET, NOW + 5) != SPX_SIGV4_OK)
		abort();
out:
	spx_kv_free(&mine);
	spx_kv_free(&sent);
	spx_buf_release(&authz);
}

/* Whatever presign accepts, verify must accept until it expires. */
static void presign_roundtrip(const char *method, const char *path,
			      const char *query, const char *service)
{
	struct spx_sigv4_cred cred = { "AKIAIOSFODNN7EXAMPLE", SECRET,
				       "us-east-1", service, "tok+en" };
	struct spx_kvlist sent = SPX_KVLIST_INIT;
	struct spx_buf q = SPX_BUF_INIT;
	struct spx_sigv4_auth a;
	struct spx_sigv4_req r;
	enum spx_sigv4_err e;

	if (spx_sigv4_presign(&cred, method, "fuzz.example", path, query, NOW,
			      300, &q) < 0)
		goto out;
	spx_kv_add(&sent, "host", "fuzz.example");
	r = (struct spx_sigv4_req){ method, path, q.p, &sent,
				    SPX_SIGV4_EMPTY_SHA256, NULL, NULL };
	e = spx_sigv4_parse(&r, &a);
	if (e == SPX_SIGV4_ETOOBIG)
		goto out;
	if (e || !a.presigned || strcmp(a.security_token, "tok+en"))
		abort();
	check_auth(&a);
	if (spx_sigv4_verify(&r, &a, SECRET, NOW + 300) != SPX_SIGV4_OK ||
	    spx_sigv4_verify(&r, &a, SECRET, NOW + 301) != SPX_SIGV4_EEXPIRED)
		abort();
out:
	spx_kv_free(&sent);
	spx_buf_release(&q);
}

static int sink(void *arg, const void *p, size_t n)
{
	*(uint64_t *)arg += n;
	return 0;
}

static void chunked(const struct spx_sigv4_auth *base,
		    enum spx_sigv4_payload kind, const char *body, size_t len)
{
	struct spx_sigv4_auth a = *base;
	struct spx_chunked d;
	enum spx_chunked_err e = SPX_CHUNKED_OK;
	uint64_t out = 0;
	size_t step = len ? (unsigned char)body[0] % 17 : 0, off = 0;
	int64_t declared = len > 1 ? (int64_t)(unsigned char)body[1] * 3 - 1
				   : -1;

	a.payload = kind;
	if (spx_chunked_init(&d, &a, declared, sink, &out) < 0)
		abort();
	while (off < len) {
		size_t n = step ? step : len - off;

		if (n > len - off)
			n = len - off;
		e = spx_chunked_feed(&d, body + off, n);
		if ((unsigned)e >= SPX_CHUNKED_NERR)
			abort();
		if (e)
			break;
		off += n;
	}
	if (!e)
		e = spx_chunked_finish(&d);
	if (out > spx_chunked_decoded(&d) || out > len)
		abort();
	if (!e && declared >= 0 && out != (uint64_t)declared)
		abort();
	if (spx_chunked_trailers(&d)->n > SPX_CHUNKED_TRAILERS_NMAX)
		abort();
	if (!spx_chunked_code(e).code)
		abort();
	spx_chunked_release(&d);
}

/* A verified request to start decoders from. */
static const struct spx_sigv4_auth *streaming_auth(void)
{
	static struct spx_sigv4_auth a;
	static bool done;
	struct spx_sigv4_cred cred = { "AKIAIOSFODNN7EXAMPLE", SECRET,
				       "us-east-1", "s3", NULL };
	struct spx_kvlist h = SPX_KVLIST_INIT;
	struct spx_buf authz = SPX_BUF_INIT;
	struct spx_sigv4_req r = { "PUT", "/b/k", "", &h, NULL, NULL, NULL };

	if (done)
		return &a;
	if (spx_sigv4_sign(&cred, "PUT", "h", "/b/k", "", &h,
			   SPX_SIGV4_STREAMING_UNSIGNED_TRAILER, NOW, &authz) < 0)
		abort();
	spx_kv_add(&h, "Host", "h");
	spx_kv_add(&h, "Authorization", authz.p);
	if (spx_sigv4_parse(&r, &a) || spx_sigv4_verify(&r, &a, SECRET, NOW))
		abort();
	spx_kv_free(&h);
	spx_buf_release(&authz);
	done = true;
	return &a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	char *method = piece(&p, end), *path = piece(&p, end);
	char *query = piece(&p, end);
	struct spx_kvlist h = SPX_KVLIST_INIT;
	const struct spx_sigv4_auth *sa = streaming_auth();

	while (p < end) {
		char *line = piece(&p, end), *colon = strchr(line, ':');

		if (!*line) {
			free(line);
			break;
		}
		if (colon) {
			char *v = colon + 1;

			while (*v == ' ')
				v++;
			spx_kv_addn(&h, line, (size_t)(colon - line), v,
				    strlen(v));
		}
		free(line);
	}
	verify_raw(method, path, query, &h, false);
	verify_raw(method, path, query, &h, true);
	verify_v2(method, path, query, &h);
	roundtrip(method, path, query, &h, "s3");
	roundtrip(method, path, query, &h, "ec2");
	presign_roundtrip(method, path, query, "s3");
	presign_roundtrip(method, path, query, "sts");

	chunked(sa, SPX_SIGV4_PAYLOAD_STREAMING, p, (size_t)(end - p));
	chunked(sa, SPX_SIGV4_PAYLOAD_STREAMING_TRAILER, p, (size_t)(end - p));
	chunked(sa, SPX_SIGV4_PAYLOAD_STREAMING_UNSIGNED_TRAILER, p,
		(size_t)(end - p));

	spx_kv_free(&h);
	free(method);
	free(path);
	free(query);
	return 0;
}
