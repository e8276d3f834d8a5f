/* Unit tests for lib/auth/chunked: AWS's streaming PUT example end to end,
 * fed whole, a byte at a time and in random slices; a signed-trailer body
 * (data/sigv4/chunked.inc, see gen_chunked.py); the unsigned-trailer form;
 * and every way a body can be wrong. */
#include "spx.h"

#include "auth/chunked.h"
#include "auth/sigv4.h"

#include "t.h"

#include "data/sigv4/chunked.inc"

#define AK "AKIAIOSFODNN7EXAMPLE"
#define S3SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T0 1369353600LL /* 20130524T000000Z */
#define CRED AK "/20130524/us-east-1/s3/aws4_request"

/* AWS's example: 65536 + 1024 bytes of 'a'. */
#define SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG_FINAL \
	"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"

#define STREAM_HDRS                                                          \
	"Host: s3.amazonaws.com\nx-amz-date: 20130524T000000Z\n"             \
	"x-amz-storage-class: REDUCED_REDUNDANCY\n"                          \
	"Authorization: AWS4-HMAC-SHA256 Credential=" CRED ", "              \
	"SignedHeaders=content-encoding;content-length;host;"                \
	"x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;"      \
	"x-amz-storage-class, Signature=" SEED "\n"                          \
	"x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\n"         \
	"Content-Encoding: aws-chunked\n"                                    \
	"x-amz-decoded-content-length: 66560\nContent-Length: 66824\n"
#define TRAILER_HDRS                                                        \
	"Host: s3.amazonaws.com\nContent-Encoding: aws-chunked\n"           \
	"x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER\n" \
	"x-amz-date: 20130524T000000Z\n"                                    \
	"x-amz-decoded-content-length: 66560\n"                             \
	"x-amz-storage-class: REDUCED_REDUNDANCY\n"                         \
	"x-amz-trailer: x-amz-checksum-crc32\n"                             \
	"Authorization: AWS4-HMAC-SHA256 Credential=" CRED ", "             \
	"SignedHeaders=" TR_SIGNED_HEADERS ", Signature=" TR_SEED "\n"

static void set_headers(struct spx_kvlist *l, const char *text)
{
	spx_kv_free(l);
	while (*text) {
		const char *nl = strchr(text, '\n'), *colon, *v;

		colon = memchr(text, ':', (size_t)(nl - text));
		v = colon + 1;
		while (*v == ' ')
			v++;
		spx_kv_addn(l, text, (size_t)(colon - text), v, (size_t)(nl - v));
		text = nl + 1;
	}
}

/* A verified auth for the PUT of the example's object. */
static enum spx_sigv4_err make_auth(const char *headers, const char *secret,
				    struct spx_sigv4_auth *a)
{
	struct spx_kvlist h = SPX_KVLIST_INIT;
	struct spx_sigv4_req r;
	enum spx_sigv4_err e;

	set_headers(&h, headers);
	r = (struct spx_sigv4_req){ "PUT", "/examplebucket/chunkObject.txt", "",
				    &h, NULL, "us-east-1", "s3" };
	e = spx_sigv4_parse(&r, a);
	if (!e)
		e = spx_sigv4_verify(&r, a, secret, (time_t)T0);
	spx_kv_free(&h);
	return e;
}

static void add_a(struct spx_buf *b, size_t n)
{
	spx_buf_grow(b, n);
	memset(b->p + b->len, 'a', n);
	spx_buf_setlen(b, b->len + n);
}

static void example_body(struct spx_buf *b, const char *s1, const char *s2,
			 const char *s3)
{
	spx_buf_reset(b);
	spx_buf_addf(b, "10000;chunk-signature=%s\r\n", s1);
	add_a(b, 65536);
	spx_buf_addf(b, "\r\n400;chunk-signature=%s\r\n", s2);
	add_a(b, 1024);
	spx_buf_addf(b, "\r\n0;chunk-signature=%s\r\n", s3);
}

static int collect(void *arg, const void *p, size_t n)
{
	spx_buf_add(arg, p, n);
	return 0;
}

static int refuse(void *arg, const void *p, size_t n)
{
	return -1;
}

static uint32_t rng = 1;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* Feed body in slices: step 0 all at once, 1 a byte at a time, 2 random
 * sizes (1..9000, seeded). Returns the first error, else finish's. */
static enum spx_chunked_err decode(const struct spx_sigv4_auth *a,
				   const char *body, size_t len,
				   int64_t declared, int step,
				   struct spx_buf *out, struct spx_kvlist *tr)
{
	struct spx_chunked d;
	enum spx_chunked_err e = SPX_CHUNKED_OK;
	size_t off = 0;

	if (out)
		spx_buf_reset(out);
	if (spx_chunked_init(&d, a, declared, out ? collect : NULL, out) < 0)
		abort();
	while (off < len && !e) {
		size_t n = step == 0 ? len
			 : step == 1 ? 1
				     : 1 + next_rand() % 9000;

		if (n > len - off)
			n = len - off;
		e = spx_chunked_feed(&d, body + off, n);
		off += n;
	}
	if (!e)
		e = spx_chunked_finish(&d);
	if (tr) {
		const struct spx_kvlist *t = spx_chunked_trailers(&d);

		spx_kv_free(tr);
		for (size_t i = 0; i < t->n; i++)
			spx_kv_add(tr, t->v[i].k, t->v[i].v);
	}
	spx_chunked_release(&d);
	return e;
}

static bool all_a(const struct spx_buf *b, size_t n)
{
	if (b->len != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (b->p[i] != 'a')
			return false;
	return true;
}

static void test_example(void)
{
	struct spx_sigv4_auth a;
	struct spx_buf body = SPX_BUF_INIT, out = SPX_BUF_INIT, bad = SPX_BUF_INIT;
	static const size_t cuts[] = { 0, 1, 10, 87, 88, 50000, 65624, 65625,
				       66700, 66819, 66822, 66823 };

	T_INT(make_auth(STREAM_HDRS, S3SECRET, &a), SPX_SIGV4_OK,
	      "the example's seed signature verifies");
	T_INT(a.payload, SPX_SIGV4_PAYLOAD_STREAMING, "payload is streaming");
	T_STR(a.signature, SEED, "the seed signature is kept");
	example_body(&body, SIG1, SIG2, SIG_FINAL);
	spx_buf_adds(&body, "\r\n");
	T_INT(body.len, 66824, "the body is the example's Content-Length");

	T_INT(decode(&a, body.p, body.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_OK, "whole body decodes");
	T_OK(all_a(&out, 66560), "66560 bytes of 'a' come out");
	T_INT(decode(&a, body.p, body.len, 66560, 1, &out, NULL),
	      SPX_CHUNKED_OK, "a byte at a time");
	T_OK(all_a(&out, 66560), "a byte at a time: same output");
	for (uint32_t seed = 1; seed <= 8; seed++) {
		rng = seed * 2654435761u;
		T_INT(decode(&a, body.p, body.len, 66560, 2, &out, NULL),
		      SPX_CHUNKED_OK, "random slices, seed %u", seed);
		T_OK(all_a(&out, 66560), "random slices, seed %u: output",
		     seed);
	}
	T_INT(decode(&a, body.p, body.len, -1, 0, NULL, NULL), SPX_CHUNKED_OK,
	      "no declared length, output discarded");

	/* tampering */
	spx_buf_reset(&bad);
	spx_buf_add(&bad, body.p, body.len);
	bad.p[1000] = 'b';
	T_INT(decode(&a, bad.p, bad.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_ESIGNATURE, "a changed byte in chunk 1");
	spx_buf_reset(&bad);
	spx_buf_add(&bad, body.p, body.len);
	bad.p[66700] = 'b';
	T_INT(decode(&a, bad.p, bad.len, 66560, 1, &out, NULL),
	      SPX_CHUNKED_ESIGNATURE, "a changed byte in chunk 2");
	example_body(&bad, SIG1, SIG2, SIG2);
	spx_buf_adds(&bad, "\r\n");
	T_INT(decode(&a, bad.p, bad.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_ESIGNATURE, "a wrong final signature");
	example_body(&bad, SIG2, SIG1, SIG_FINAL);
	spx_buf_adds(&bad, "\r\n");
	T_INT(decode(&a, bad.p, bad.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_ESIGNATURE, "swapped signatures");
	{
		struct spx_sigv4_auth wrong;

		T_INT(make_auth(STREAM_HDRS, S3SECRET, &wrong), SPX_SIGV4_OK,
		      "second auth");
		wrong.signing_key[3] ^= 0x40;
		T_INT(decode(&wrong, body.p, body.len, 66560, 0, &out, NULL),
		      SPX_CHUNKED_ESIGNATURE, "a wrong signing key");
	}

	/* truncation anywhere */
	for (size_t i = 0; i < SPX_ARRAY_SIZE(cuts); i++)
		T_INT(decode(&a, body.p, cuts[i], -1, 2, &out, NULL),
		      SPX_CHUNKED_ETRUNCATED, "truncated to %zu bytes", cuts[i]);

	/* declared length */
	T_INT(decode(&a, body.p, body.len, 66561, 0, &out, NULL),
	      SPX_CHUNKED_ELENGTH, "one byte fewer than declared");
	T_INT(decode(&a, body.p, body.len, 66559, 0, &out, NULL),
	      SPX_CHUNKED_ELENGTH, "one byte more than declared");
	T_INT(decode(&a, body.p, body.len, 1000, 0, &out, NULL),
	      SPX_CHUNKED_ELENGTH, "first chunk beyond the declared length");
	T_INT(out.len, 0, "and nothing came out");

	/* garbage after the end */
	spx_buf_reset(&bad);
	spx_buf_add(&bad, body.p, body.len);
	spx_buf_adds(&bad, "x");
	T_INT(decode(&a, bad.p, bad.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_EFORMAT, "a byte after the end");

	spx_buf_release(&body);
	spx_buf_release(&out);
	spx_buf_release(&bad);
}

static void test_garbage(void)
{
	static const struct {
		const char *name, *body;
		enum spx_chunked_err want;
	} cases[] = {
		{ "not hex", "zz;chunk-signature=" SIG1 "\r\n", SPX_CHUNKED_EFORMAT },
		{ "empty line", "\r\n", SPX_CHUNKED_EFORMAT },
		{ "lf only", "10000;chunk-signature=" SIG1 "\n", SPX_CHUNKED_EFORMAT },
		{ "cr inside", "10000;chunk-sig\rnature=" SIG1 "\r\n",
		  SPX_CHUNKED_EFORMAT },
		{ "nul inside", "1\0;chunk-signature=" SIG1 "\r\n",
		  SPX_CHUNKED_EFORMAT },
		{ "no signature in a signed body", "10000\r\n",
		  SPX_CHUNKED_EFORMAT },
		{ "another extension", "10000;chunk-ext=" SIG1 "\r\n",
		  SPX_CHUNKED_EFORMAT },
		{ "uppercase signature",
		  "10000;chunk-signature=AD80C730A21E5B8D04586A2213DD63B9A0E99E0E"
		  "2307B0ADE35A65485A288648\r\n",
		  SPX_CHUNKED_EFORMAT },
		{ "short signature", "10000;chunk-signature=ad80\r\n",
		  SPX_CHUNKED_EFORMAT },
		{ "17 hex digits", "00000000000010000;chunk-signature=" SIG1 "\r\n",
		  SPX_CHUNKED_EFORMAT },
		{ "space before the extension", "10000 ;chunk-signature=" SIG1 "\r\n",
		  SPX_CHUNKED_EFORMAT },
		{ "a chunk's signature is checked at its end",
		  "1;chunk-signature=" SIG1 "\r\na\r\n", SPX_CHUNKED_ESIGNATURE },
	};
	struct spx_sigv4_auth a;
	struct spx_buf b = SPX_BUF_INIT;

	T_INT(make_auth(STREAM_HDRS, S3SECRET, &a), SPX_SIGV4_OK, "auth");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		/* The body with a NUL needs its true length. */
		size_t len = strlen(cases[i].body);

		if (len == 1 && cases[i].body[0] == '1')
			len = 2 + strlen(cases[i].body + 2);

		T_INT(decode(&a, cases[i].body, len, -1, 0, NULL, NULL),
		      cases[i].want, "%s", cases[i].name);
		T_INT(decode(&a, cases[i].body, len, -1, 1, NULL, NULL),
		      cases[i].want, "%s, a byte at a time", cases[i].name);
	}

	/* An overlong header line, fed in pieces: refused at the limit. */
	spx_buf_adds(&b, "1");
	for (int i = 0; i < 300; i++)
		spx_buf_addc(&b, '0');
	T_INT(decode(&a, b.p, b.len, -1, 1, NULL, NULL), SPX_CHUNKED_ELINE,
	      "a chunk header of 301 bytes without CRLF");
	T_INT(decode(&a, b.p, b.len, -1, 0, NULL, NULL), SPX_CHUNKED_ELINE,
	      "the same in one piece");

	/* errors stick; the output callback can stop the decoder */
	{
		struct spx_chunked d;
		struct spx_buf body = SPX_BUF_INIT;

		T_INT(spx_chunked_init(&d, &a, -1, NULL, NULL), 0, "init");
		T_INT(spx_chunked_feed(&d, "zz\r\n", 4), SPX_CHUNKED_EFORMAT,
		      "garbage");
		T_OK(d.detail[0], "a detail is given");
		T_INT(spx_chunked_feed(&d, "", 0), SPX_CHUNKED_EFORMAT,
		      "the error sticks");
		T_INT(spx_chunked_finish(&d), SPX_CHUNKED_EFORMAT,
		      "finish reports it");
		spx_chunked_release(&d);

		example_body(&body, SIG1, SIG2, SIG_FINAL);
		T_INT(spx_chunked_init(&d, &a, -1, refuse, NULL), 0, "init");
		T_INT(spx_chunked_feed(&d, body.p, body.len),
		      SPX_CHUNKED_EOUTPUT, "output refused");
		spx_chunked_release(&d);
		spx_buf_release(&body);
	}

	/* init refuses what it cannot decode */
	{
		struct spx_chunked d;
		struct spx_sigv4_auth u = a;

		u.verified = false;
		T_INT(spx_chunked_init(&d, &u, -1, NULL, NULL), -1,
		      "init refuses an unverified auth");
		spx_chunked_release(&d);
		u.verified = true;
		u.payload = SPX_SIGV4_PAYLOAD_SHA256;
		T_INT(spx_chunked_init(&d, &u, -1, NULL, NULL), -1,
		      "init refuses a non-streaming payload");
		T_INT(spx_errstatus(), SPX_USAGE, "as a usage error");
		spx_chunked_release(&d);
	}
	spx_buf_release(&b);
}

static void test_unsigned_trailer(void)
{
	struct spx_sigv4_cred cred = { AK, S3SECRET, "us-east-1", "s3", NULL };
	struct spx_kvlist h = SPX_KVLIST_INIT, tr = SPX_KVLIST_INIT;
	struct spx_buf authz = SPX_BUF_INIT, out = SPX_BUF_INIT, b = SPX_BUF_INIT;
	struct spx_sigv4_auth a;
	struct spx_sigv4_req r;
	static const char body[] =
		"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n";
	static const struct {
		const char *name, *body;
		enum spx_chunked_err want;
	} bad[] = {
		{ "a signature in an unsigned body",
		  "5;chunk-signature=" SIG1 "\r\nhello\r\n0\r\n\r\n",
		  SPX_CHUNKED_EFORMAT },
		{ "trailer without colon", "5\r\nhello\r\n0\r\nx-amz-checksum\r\n\r\n",
		  SPX_CHUNKED_ETRAILER },
		{ "trailer with empty name", "5\r\nhello\r\n0\r\n:AAAA\r\n\r\n",
		  SPX_CHUNKED_ETRAILER },
		{ "trailer with a space in its name",
		  "5\r\nhello\r\n0\r\nx amz:AAAA\r\n\r\n", SPX_CHUNKED_ETRAILER },
		{ "repeated trailer",
		  "5\r\nhello\r\n0\r\nx-a:1\r\nx-a:2\r\n\r\n", SPX_CHUNKED_ETRAILER },
		{ "trailer signature in an unsigned body",
		  "5\r\nhello\r\n0\r\nx-amz-trailer-signature:" SIG1 "\r\n\r\n",
		  SPX_CHUNKED_ETRAILER },
		{ "trailers never end", "5\r\nhello\r\n0\r\nx-a:1\r\n",
		  SPX_CHUNKED_ETRUNCATED },
		{ "data longer than its size", "5\r\nhello!\r\n0\r\n\r\n",
		  SPX_CHUNKED_EFORMAT },
	};

	spx_kv_add(&h, "Content-Encoding", "aws-chunked");
	spx_kv_add(&h, "x-amz-decoded-content-length", "5");
	spx_kv_add(&h, "x-amz-trailer", "x-amz-checksum-crc32");
	T_INT(spx_sigv4_sign(&cred, "PUT", "s3.amazonaws.com", "/bkt/k", "", &h,
			     SPX_SIGV4_STREAMING_UNSIGNED_TRAILER, (time_t)T0,
			     &authz),
	      0, "sign an unsigned-trailer upload");
	spx_kv_add(&h, "Host", "s3.amazonaws.com");
	spx_kv_add(&h, "Authorization", authz.p);
	r = (struct spx_sigv4_req){ "PUT", "/bkt/k", "", &h, NULL, NULL, NULL };
	T_INT(spx_sigv4_parse(&r, &a), SPX_SIGV4_OK, "parses");
	T_INT(spx_sigv4_verify(&r, &a, S3SECRET, (time_t)T0), SPX_SIGV4_OK,
	      "verifies");
	T_INT(a.payload, SPX_SIGV4_PAYLOAD_STREAMING_UNSIGNED_TRAILER,
	      "payload kind");

	for (int step = 0; step < 3; step++) {
		rng = 7;
		T_INT(decode(&a, body, sizeof(body) - 1, 5, step, &out, &tr),
		      SPX_CHUNKED_OK, "unsigned trailer body, step %d", step);
		T_INT(out.len, 5, "five bytes, step %d", step);
		T_OK(!memcmp(out.p, "hello", 5), "hello, step %d", step);
		T_INT(tr.n, 1, "one trailer, step %d", step);
		T_STR(spx_kv_get(&tr, "x-amz-checksum-crc32"), "NhCmhg==",
		      "the crc32 trailer, step %d", step);
	}
	T_INT(decode(&a, "5\r\nhello\r\n0\r\nX-Amz-Checksum-CRC32:  NhCmhg==  \r\n\r\n",
		     50, 5, 0, &out, &tr),
	      SPX_CHUNKED_OK, "trailer name case and spaces");
	T_STR(spx_kv_get(&tr, "x-amz-checksum-crc32"), "NhCmhg==",
	      "trailer name lowercased, value trimmed");
	T_INT(decode(&a, "5\r\nhello\r\n0\r\n\r\n", 15, 5, 0, &out, &tr),
	      SPX_CHUNKED_OK, "no trailers at all");
	T_INT(tr.n, 0, "no trailers reported");
	T_INT(decode(&a, body, sizeof(body) - 1, 6, 0, &out, NULL),
	      SPX_CHUNKED_ELENGTH, "declared six, got five");
	T_INT(decode(&a, "0\r\n\r\n", 5, 0, 1, &out, NULL), SPX_CHUNKED_OK,
	      "an empty body");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++)
		T_INT(decode(&a, bad[i].body, strlen(bad[i].body), -1, 1, NULL,
			     NULL),
		      bad[i].want, "%s", bad[i].name);

	/* Trailers are bounded in number and size. */
	spx_buf_adds(&b, "0\r\n");
	for (int i = 0; i < SPX_CHUNKED_TRAILERS_NMAX + 1; i++)
		spx_buf_addf(&b, "x-t%d:1\r\n", i);
	spx_buf_adds(&b, "\r\n");
	T_INT(decode(&a, b.p, b.len, -1, 0, NULL, NULL), SPX_CHUNKED_ETRAILER,
	      "%d trailers", SPX_CHUNKED_TRAILERS_NMAX + 1);
	spx_buf_reset(&b);
	spx_buf_adds(&b, "0\r\n");
	for (int i = 0; i < 9; i++) {
		spx_buf_addf(&b, "x-t%02d:", i);
		for (int j = 0; j < 240; j++)
			spx_buf_addc(&b, 'v');
		spx_buf_adds(&b, "\r\n");
	}
	spx_buf_adds(&b, "\r\n");
	T_INT(decode(&a, b.p, b.len, -1, 0, NULL, NULL), SPX_CHUNKED_ETRAILER,
	      "trailers over %d bytes", SPX_CHUNKED_TRAILER_MAX);

	spx_kv_free(&h);
	spx_kv_free(&tr);
	spx_buf_release(&authz);
	spx_buf_release(&out);
	spx_buf_release(&b);
}

static void signed_trailer_body(struct spx_buf *b, const char *crc,
				const char *tsig, const char *extra)
{
	example_body(b, TR_SIG1, TR_SIG2, TR_SIG_FINAL);
	spx_buf_addf(b, "x-amz-checksum-crc32:%s\r\n", crc);
	if (tsig)
		spx_buf_addf(b, "x-amz-trailer-signature:%s\r\n", tsig);
	spx_buf_adds(b, extra);
	spx_buf_adds(b, "\r\n");
}

static void test_signed_trailer(void)
{
	struct spx_sigv4_auth a;
	struct spx_buf body = SPX_BUF_INIT, out = SPX_BUF_INIT;
	struct spx_kvlist tr = SPX_KVLIST_INIT;

	T_INT(make_auth(TRAILER_HDRS, S3SECRET, &a), SPX_SIGV4_OK,
	      "signed-trailer seed signature verifies");
	T_INT(a.payload, SPX_SIGV4_PAYLOAD_STREAMING_TRAILER, "payload kind");
	signed_trailer_body(&body, TR_CRC32, TR_TRAILER_SIG, "");
	for (int step = 0; step < 3; step++) {
		rng = 99;
		T_INT(decode(&a, body.p, body.len, 66560, step, &out, &tr),
		      SPX_CHUNKED_OK, "signed trailer body, step %d", step);
		T_OK(all_a(&out, 66560), "payload, step %d", step);
		T_INT(tr.n, 1, "one trailer (the signature is not one)");
		T_STR(spx_kv_get(&tr, "x-amz-checksum-crc32"), TR_CRC32,
		      "crc32 trailer, step %d", step);
	}
	signed_trailer_body(&body, "AAAAAA==", TR_TRAILER_SIG, "");
	T_INT(decode(&a, body.p, body.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_ESIGNATURE, "a changed trailer");
	signed_trailer_body(&body, TR_CRC32, TR_SIG1, "");
	T_INT(decode(&a, body.p, body.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_ESIGNATURE, "a wrong trailer signature");
	signed_trailer_body(&body, TR_CRC32, NULL, "");
	T_INT(decode(&a, body.p, body.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_ETRAILER, "no trailer signature");
	signed_trailer_body(&body, TR_CRC32, TR_TRAILER_SIG, "x-a:1\r\n");
	T_INT(decode(&a, body.p, body.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_ETRAILER, "a trailer after the signature");
	signed_trailer_body(&body, TR_CRC32, "xyz", "");
	T_INT(decode(&a, body.p, body.len, 66560, 0, &out, NULL),
	      SPX_CHUNKED_ETRAILER, "a malformed trailer signature");
	spx_buf_release(&body);
	spx_buf_release(&out);
	spx_kv_free(&tr);
}

static void test_codes(void)
{
	T_STR(spx_chunked_code(SPX_CHUNKED_ESIGNATURE).code,
	      "SignatureDoesNotMatch", "chunk signature code");
	T_INT(spx_chunked_code(SPX_CHUNKED_ESIGNATURE).http, 403,
	      "chunk signature status");
	T_STR(spx_chunked_code(SPX_CHUNKED_ETRUNCATED).code, "IncompleteBody",
	      "truncation code");
	T_STR(spx_chunked_code(SPX_CHUNKED_ETRAILER).code,
	      "MalformedTrailerError", "trailer code");
	for (int e = 1; e < SPX_CHUNKED_NERR; e++) {
		struct spx_apierr s = spx_chunked_code((enum spx_chunked_err)e);

		T_OK(s.code && s.message && s.http >= 400 &&
			     strcmp(spx_chunked_strerror((enum spx_chunked_err)e),
				    "unknown error"),
		     "chunked error %d (%s) has a code", e,
		     spx_chunked_strerror((enum spx_chunked_err)e));
	}
}

int main(void)
{
	test_example();
	test_garbage();
	test_unsigned_trailer();
	test_signed_trailer();
	test_codes();
	return t_done();
}
