/* Unit tests for lib/auth/sigv4: AWS's published examples, signatures made
 * by botocore (data/sigv4/botocore.inc, see gen_botocore.py), every
 * failure, the error mapping, and sign/presign round trips. */
#include "spx.h"

#include "auth/sigv4.h"

#include "t.h"

#define EMPTY SPX_SIGV4_EMPTY_SHA256

/* The S3 examples (AWS S3 API reference, "Signature Calculations for the
 * Authorization Header" and "Query String Authentication"). */
#define AK "AKIAIOSFODNN7EXAMPLE"
#define S3SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T0 1369353600LL /* 20130524T000000Z */
/* The aws-sig-v4-test-suite. */
#define SUITE_AK "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define T1 1440938160LL /* 20150830T123600Z */

/* ---- helpers ---------------------------------------------------------- */

/* "Name: value\n" lines into l, values stripped as an HTTP parser does. */
static void set_headers(struct spx_kvlist *l, const char *text)
{
	spx_kv_free(l);
	while (text && *text) {
		const char *nl = strchr(text, '\n'), *colon, *v, *e;

		if (!nl)
			nl = text + strlen(text);
		colon = memchr(text, ':', (size_t)(nl - text));
		if (!colon)
			abort();
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		e = nl;
		while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		spx_kv_addn(l, text, (size_t)(colon - text), v, (size_t)(e - v));
		text = *nl ? nl + 1 : nl;
	}
}

struct run {
	const char *method, *path, *query, *headers, *payload_hash;
	const char *region, *service, *secret;
	long long now;
};

/* parse, then verify if parse succeeded. */
static enum spx_sigv4_err run(const struct run *x, struct spx_sigv4_auth *a)
{
	struct spx_kvlist h = SPX_KVLIST_INIT;
	struct spx_sigv4_req r;
	enum spx_sigv4_err e;

	set_headers(&h, x->headers);
	r = (struct spx_sigv4_req){ .method = x->method ? x->method : "GET",
				    .path = x->path ? x->path : "/test.txt",
				    .query = x->query,
				    .headers = &h,
				    .payload_hash = x->payload_hash,
				    .region = x->region,
				    .service = x->service };
	e = spx_sigv4_parse(&r, a);
	if (!e)
		e = spx_sigv4_verify(&r, a, x->secret ? x->secret : S3SECRET,
				     (time_t)(x->now ? x->now : T0));
	spx_kv_free(&h);
	return e;
}

/* The line-th line (0-based) of s, into out. */
static const char *line_of(const char *s, int line, struct spx_buf *out)
{
	const char *e;

	while (line-- > 0 && s)
		if ((s = strchr(s, '\n')))
			s++;
	spx_buf_reset(out);
	if (!s)
		return out->p;
	e = strchr(s, '\n');
	spx_buf_add(out, s, e ? (size_t)(e - s) : strlen(s));
	return out->p;
}

/* ---- AWS's published examples ---------------------------------------- */

struct aws_case {
	const char *name;
	bool suite; /* aws-sig-v4-test-suite (else the S3 examples) */
	const char *method, *path, *query;
	const char *headers;	    /* as sent, without Authorization */
	const char *signed_headers; /* NULL: presigned, all in the query */
	const char *signature;
	const char *payload_hash;  /* body's hash, when no header has it */
	const char *canonical_uri; /* expected, or NULL */
};

#define S3HOST "Host: examplebucket.s3.amazonaws.com\n"
#define XDATE "x-amz-date: 20130524T000000Z\n"
#define SUITE_HDRS "Host: example.amazonaws.com\nX-Amz-Date: 20150830T123600Z\n"
#define UNRESERVED \
	"-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#define PRESIGN_Q                                                          \
	"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7" \
	"EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="  \
	"20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
#define PRESIGN_SIG \
	"aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
#define GET_SIG "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
#define GET_SH "host;range;x-amz-content-sha256;x-amz-date"
#define GET_HDRS \
	S3HOST "Range: bytes=0-9\nx-amz-content-sha256: " EMPTY "\n" XDATE
#define STREAM_HDRS                                                          \
	"Host: s3.amazonaws.com\n" XDATE                                     \
	"x-amz-storage-class: REDUCED_REDUNDANCY\n"                          \
	"x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\n"         \
	"Content-Encoding: aws-chunked\n"                                    \
	"x-amz-decoded-content-length: 66560\nContent-Length: 66824\n"
#define STREAM_SH                                                       \
	"content-encoding;content-length;host;x-amz-content-sha256;"    \
	"x-amz-date;x-amz-decoded-content-length;x-amz-storage-class"

static const struct aws_case aws_cases[] = {
	{ "s3 get object with range", false, "GET", "/test.txt", "", GET_HDRS,
	  GET_SH, GET_SIG, NULL, "/test.txt" },
	{ "s3 put object, date and x-amz-date", false, "PUT",
	  "/test$file.text", "",
	  S3HOST "Date: Fri, 24 May 2013 00:00:00 GMT\n" XDATE
		 "x-amz-storage-class: REDUCED_REDUNDANCY\n"
		 "x-amz-content-sha256: 44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4"
		 "b4e99e42034a8b803f8b072\n",
	  "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
	  "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
	  NULL, "/test%24file.text" },
	{ "s3 get bucket lifecycle", false, "GET", "/", "lifecycle",
	  S3HOST "x-amz-content-sha256: " EMPTY "\n" XDATE,
	  "host;x-amz-content-sha256;x-amz-date",
	  "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
	  NULL, "/" },
	{ "s3 list objects", false, "GET", "/", "max-keys=2&prefix=J",
	  S3HOST "x-amz-content-sha256: " EMPTY "\n" XDATE,
	  "host;x-amz-content-sha256;x-amz-date",
	  "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
	  NULL, "/" },
	{ "s3 presigned get", false, "GET", "/test.txt",
	  PRESIGN_Q "&X-Amz-Signature=" PRESIGN_SIG, S3HOST, NULL, PRESIGN_SIG,
	  NULL, "/test.txt" },
	{ "s3 streaming put seed signature", false, "PUT",
	  "/examplebucket/chunkObject.txt", "", STREAM_HDRS, STREAM_SH,
	  "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
	  NULL, NULL },
	{ "get-vanilla", true, "GET", "/", "", SUITE_HDRS, "host;x-amz-date",
	  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	  EMPTY, "/" },
	{ "get-vanilla-query-order-key-case", true, "GET", "/",
	  "Param2=value2&Param1=value1", SUITE_HDRS, "host;x-amz-date",
	  "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
	  EMPTY, "/" },
	{ "get-vanilla-query-order-value", true, "GET", "/",
	  "Param1=value2&Param1=value1", SUITE_HDRS, "host;x-amz-date",
	  "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694",
	  EMPTY, "/" },
	{ "get-vanilla-empty-query-key", true, "GET", "/", "Param1=value1",
	  SUITE_HDRS, "host;x-amz-date",
	  "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb",
	  EMPTY, "/" },
	{ "get-vanilla-utf8-query", true, "GET", "/", "\341\210\264=bar",
	  SUITE_HDRS, "host;x-amz-date",
	  "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04",
	  EMPTY, "/" },
	{ "get-vanilla-query-unreserved", true, "GET", "/",
	  UNRESERVED "=" UNRESERVED, SUITE_HDRS, "host;x-amz-date",
	  "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197",
	  EMPTY, "/" },
	{ "post-vanilla", true, "POST", "/", "", SUITE_HDRS, "host;x-amz-date",
	  "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
	  EMPTY, "/" },
	{ "post-x-www-form-urlencoded", true, "POST", "/", "",
	  "Content-Type: application/x-www-form-urlencoded\n" SUITE_HDRS,
	  "content-type;host;x-amz-date",
	  "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
	  "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
	  "/" },
	{ "normalize-path get-relative", true, "GET", "/example/..", "",
	  SUITE_HDRS, "host;x-amz-date",
	  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	  EMPTY, "/" },
	{ "normalize-path get-relative-relative", true, "GET",
	  "/example1/example2/../..", "", SUITE_HDRS, "host;x-amz-date",
	  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	  EMPTY, "/" },
	{ "normalize-path get-slash", true, "GET", "//", "", SUITE_HDRS,
	  "host;x-amz-date",
	  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	  EMPTY, "/" },
	{ "normalize-path get-slash-dot-slash", true, "GET", "/./", "",
	  SUITE_HDRS, "host;x-amz-date",
	  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	  EMPTY, "/" },
	{ "normalize-path get-slash-pointless-dot", true, "GET", "/./example",
	  "", SUITE_HDRS, "host;x-amz-date",
	  "ef75d96142cf21edca26f06005da7988e4f8dc83a165a80865db7089db637ec5",
	  EMPTY, "/example" },
	{ "normalize-path get-slashes", true, "GET", "//example//", "",
	  SUITE_HDRS, "host;x-amz-date",
	  "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84",
	  EMPTY, "/example/" },
	{ "normalize-path get-space", true, "GET", "/example space/", "",
	  SUITE_HDRS, "host;x-amz-date",
	  "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
	  EMPTY, "/example%20space/" },
	{ "normalize-path get-unreserved", true, "GET", "/" UNRESERVED, "",
	  SUITE_HDRS, "host;x-amz-date",
	  "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f",
	  EMPTY, "/" UNRESERVED },
	{ "normalize-path get-utf8", true, "GET", "/\341\210\264", "",
	  SUITE_HDRS, "host;x-amz-date",
	  "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
	  EMPTY, "/%E1%88%B4" },
};

/* Sign the same request with spx_sigv4_sign and expect the same header. */
static void sign_again(const struct aws_case *c, const char *authz)
{
	struct spx_kvlist h = SPX_KVLIST_INIT, mine = SPX_KVLIST_INIT;
	struct spx_buf out = SPX_BUF_INIT;
	struct spx_sigv4_cred cred = { AK, S3SECRET, "us-east-1", "s3", NULL };
	const char *host = NULL, *sha = NULL;

	set_headers(&h, c->headers);
	for (size_t i = 0; i < h.n; i++) {
		if (!strcasecmp(h.v[i].k, "host"))
			host = h.v[i].v;
		else if (!strcasecmp(h.v[i].k, "x-amz-content-sha256"))
			sha = h.v[i].v;
		else if (strcasecmp(h.v[i].k, "x-amz-date"))
			spx_kv_add(&mine, h.v[i].k, h.v[i].v);
	}
	T_INT(spx_sigv4_sign(&cred, c->method, host, c->path, c->query, &mine,
			     sha, (time_t)T0, &out),
	      0, "%s: spx_sigv4_sign", c->name);
	T_STR(out.p, authz, "%s: spx_sigv4_sign gives AWS's header", c->name);
	spx_kv_free(&h);
	spx_kv_free(&mine);
	spx_buf_release(&out);
}

static void test_aws_examples(void)
{
	struct spx_buf hdrs = SPX_BUF_INIT, authz = SPX_BUF_INIT;
	struct spx_buf cr = SPX_BUF_INIT, l = SPX_BUF_INIT;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(aws_cases); i++) {
		const struct aws_case *c = &aws_cases[i];
		struct spx_kvlist h = SPX_KVLIST_INIT;
		struct spx_sigv4_auth a;
		struct spx_sigv4_req r;
		struct run x = { c->method, c->path, c->query, NULL,
				 c->payload_hash, NULL, NULL,
				 c->suite ? SUITE_SECRET : S3SECRET,
				 c->suite ? T1 : T0 };

		spx_buf_reset(&hdrs);
		spx_buf_reset(&authz);
		spx_buf_adds(&hdrs, c->headers);
		if (c->signed_headers) {
			spx_buf_addf(&authz,
				     "AWS4-HMAC-SHA256 Credential=%s/%s/"
				     "us-east-1/%s/aws4_request, "
				     "SignedHeaders=%s, Signature=%s",
				     c->suite ? SUITE_AK : AK,
				     c->suite ? "20150830" : "20130524",
				     c->suite ? "service" : "s3",
				     c->signed_headers, c->signature);
			spx_buf_addf(&hdrs, "Authorization: %s\n", authz.p);
		}
		x.headers = hdrs.p;
		T_INT(run(&x, &a), SPX_SIGV4_OK, "%s: verifies", c->name);
		T_STR(a.signature, c->signature, "%s: signature", c->name);
		if (c->canonical_uri) {
			set_headers(&h, hdrs.p);
			r = (struct spx_sigv4_req){ c->method, c->path,
						    c->query, &h,
						    c->payload_hash, NULL,
						    NULL };
			spx_sigv4_canonical(&r, &a, &cr, NULL);
			T_STR(line_of(cr.p, 1, &l), c->canonical_uri,
			      "%s: canonical uri", c->name);
			spx_kv_free(&h);
		}
		if (!c->suite && c->signed_headers && a.payload != SPX_SIGV4_PAYLOAD_STREAMING)
			sign_again(c, authz.p);
	}
	spx_buf_release(&hdrs);
	spx_buf_release(&authz);
	spx_buf_release(&cr);
	spx_buf_release(&l);
}

/* The GET example's canonical request, string to sign and signing key as
 * the S3 reference prints them, and what verify leaves in auth. */
static void test_aws_intermediates(void)
{
	static const char canon[] =
		"GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\n"
		"range:bytes=0-9\nx-amz-content-sha256:" EMPTY "\n"
		"x-amz-date:20130524T000000Z\n\n" GET_SH "\n" EMPTY;
	static const char sts[] =
		"AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/"
		"aws4_request\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb"
		"2dc43964946972";
	struct spx_kvlist h = SPX_KVLIST_INIT;
	struct spx_buf cr = SPX_BUF_INIT, st = SPX_BUF_INIT;
	struct spx_sigv4_auth a;
	struct spx_sigv4_req r = { "GET", "/test.txt", "", &h, NULL, NULL,
				   NULL };
	unsigned char key[32], key2[32];
	char hex[65];

	set_headers(&h, GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=" AK
				 "/20130524/us-east-1/s3/aws4_request, "
				 "SignedHeaders=" GET_SH ", Signature=" GET_SIG);
	T_INT(spx_sigv4_parse(&r, &a), SPX_SIGV4_OK, "get example parses");
	T_STR(a.access_key, AK, "access key");
	T_STR(a.date, "20130524", "scope date");
	T_STR(a.region, "us-east-1", "region");
	T_STR(a.service, "s3", "service");
	T_STR(a.scope, "20130524/us-east-1/s3/aws4_request", "scope");
	T_STR(a.amz_date, "20130524T000000Z", "request time");
	T_INT(a.time, T0, "request time in seconds");
	T_STR(a.signed_headers, GET_SH, "signed headers");
	T_OK(!a.presigned, "header auth is not presigned");
	T_INT(a.payload, SPX_SIGV4_PAYLOAD_SHA256, "payload is a hash");
	T_INT(a.payload_sha256[0], 0xe3, "payload hash decoded");
	T_INT(a.payload_sha256[31], 0x55, "payload hash decoded to the end");
	spx_sigv4_canonical(&r, &a, &cr, &st);
	T_STR(cr.p, canon, "canonical request as AWS prints it");
	T_STR(st.p, sts, "string to sign as AWS prints it");
	T_OK(!a.verified, "not verified before verify");
	T_INT(spx_sigv4_verify(&r, &a, S3SECRET, (time_t)T0), SPX_SIGV4_OK,
	      "get example verifies");
	T_OK(a.verified, "verified after verify");
	T_INT(spx_sigv4_signing_key(S3SECRET, "20130524", "us-east-1", "s3",
				    key),
	      0, "signing key");
	T_OK(!memcmp(key, a.signing_key, 32), "verify keeps the signing key");
	T_INT(spx_sigv4_verify_key(&r, &a, key, (time_t)T0), SPX_SIGV4_OK,
	      "verify with a cached key");
	key[0] ^= 1;
	T_INT(spx_sigv4_verify_key(&r, &a, key, (time_t)T0),
	      SPX_SIGV4_ESIGNATURE, "verify with a wrong cached key");
	T_OK(!a.verified, "a failed verify clears verified");
	T_OK(!memcmp(a.signing_key, (unsigned char[32]){ 0 }, 32),
	     "a failed verify clears the key");

	/* The general reference's derived key example. */
	T_INT(spx_sigv4_signing_key(SUITE_SECRET, "20150830", "us-east-1",
				    "iam", key2),
	      0, "iam signing key");
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = "0123456789abcdef"[key2[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[key2[i] & 15];
	}
	hex[64] = '\0';
	T_STR(hex,
	      "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9",
	      "derived signing key as the general reference prints it");
	{
		char big[SPX_SIGV4_SECRET_MAX + 2];

		memset(big, 'k', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		T_INT(spx_sigv4_signing_key(big, "20150830", "us-east-1", "iam",
					    key2),
		      -1, "an overlong secret is refused");
		T_INT(spx_errstatus(), SPX_USAGE, "as a usage error");
	}
	spx_sigv4_sha256_hex("", 0, hex);
	T_STR(hex, EMPTY, "sha256 of nothing");
	spx_kv_free(&h);
	spx_buf_release(&cr);
	spx_buf_release(&st);
}

/* ---- botocore --------------------------------------------------------- */

struct boto_case {
	const char *name, *service, *method, *path, *query, *headers;
	const char *payload_hash;
	long long now;
	const char *canonical, *signature;
};

static const struct boto_case boto_cases[] = {
#include "data/sigv4/botocore.inc"
};

static void test_botocore(void)
{
	struct spx_buf cr = SPX_BUF_INIT, out = SPX_BUF_INIT;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(boto_cases); i++) {
		const struct boto_case *c = &boto_cases[i];
		struct spx_kvlist h = SPX_KVLIST_INIT;
		struct spx_sigv4_auth a;
		struct spx_sigv4_req r;

		set_headers(&h, c->headers);
		r = (struct spx_sigv4_req){ c->method, c->path, c->query, &h,
					    c->payload_hash, NULL, c->service };
		T_INT(spx_sigv4_parse(&r, &a), SPX_SIGV4_OK,
		      "botocore %s: parses", c->name);
		spx_sigv4_canonical(&r, &a, &cr, NULL);
		T_STR(cr.p, c->canonical, "botocore %s: canonical request",
		      c->name);
		T_INT(spx_sigv4_verify(&r, &a, SUITE_SECRET, (time_t)c->now),
		      SPX_SIGV4_OK, "botocore %s: verifies", c->name);
		T_INT(spx_sigv4_verify(&r, &a, S3SECRET, (time_t)c->now),
		      SPX_SIGV4_ESIGNATURE, "botocore %s: wrong secret fails",
		      c->name);
		if (!strcmp(c->service, "s3") && a.presigned) {
			/* presign reproduces botocore's URL exactly. */
			const char *tok = strstr(c->query, "Security-Token=");
			struct spx_sigv4_cred cred = {
				SUITE_AK, SUITE_SECRET, "us-east-1", "s3",
				tok ? "FQoGZXIvYXdzEBYaDH+session/token=="
				    : NULL
			};
			const char *q0 = strstr(c->query, "X-Amz-Algorithm");
			char *orig = spx_strndup(c->query,
						 q0 > c->query
							 ? (size_t)(q0 - c->query - 1)
							 : 0);

			T_INT(spx_sigv4_presign(&cred, c->method,
						spx_kv_geti(&h, "host"), c->path,
						orig, (time_t)c->now, a.expires,
						&out),
			      0, "botocore %s: presign", c->name);
			T_STR(out.p, c->query,
			      "botocore %s: presign gives botocore's query",
			      c->name);
			free(orig);
		} else if (!strcmp(c->service, "s3")) {
			/* sign reproduces botocore's Authorization. */
			struct spx_kvlist mine = SPX_KVLIST_INIT;
			struct spx_sigv4_cred cred = { SUITE_AK, SUITE_SECRET,
						       a.region, "s3", NULL };

			for (size_t j = 0; j < h.n; j++)
				if (strcasecmp(h.v[j].k, "host") &&
				    strcasecmp(h.v[j].k, "authorization") &&
				    strncasecmp(h.v[j].k, "x-amz-date", 10) &&
				    strcasecmp(h.v[j].k, "x-amz-content-sha256"))
					spx_kv_add(&mine, h.v[j].k, h.v[j].v);
			T_INT(spx_sigv4_sign(&cred, c->method,
					     spx_kv_geti(&h, "host"), c->path,
					     c->query, &mine, a.payload_hash,
					     (time_t)c->now, &out),
			      0, "botocore %s: sign", c->name);
			T_STR(out.p, spx_kv_geti(&h, "authorization"),
			      "botocore %s: sign gives botocore's header",
			      c->name);
			spx_kv_free(&mine);
		}
		spx_kv_free(&h);
	}
	spx_buf_release(&cr);
	spx_buf_release(&out);
}

/* ---- failures --------------------------------------------------------- */

#define AUTHZ(cred, sh, sig)                                         \
	"Authorization: AWS4-HMAC-SHA256 Credential=" cred              \
	", SignedHeaders=" sh ", Signature=" sig "\n"
#define CRED AK "/20130524/us-east-1/s3/aws4_request"
#define GOOD GET_HDRS AUTHZ(CRED, GET_SH, GET_SIG)
#define PRESIGNED(q) PRESIGN_Q q "&X-Amz-Signature=" PRESIGN_SIG
#define PRESIGN_NOEXP                                                      \
	"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7" \
	"EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="  \
	"20130524T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG
#define SUITE_GOOD                                                          \
	SUITE_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" \
		   "20150830/us-east-1/service/aws4_request, SignedHeaders="  \
		   "host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86"  \
		   "291e8372ff2a2260956d9b8aae1d763fbf31\n"
#define BADSIG "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb42"

struct neg_case {
	const char *name;
	struct run x;
	enum spx_sigv4_err want;
	const char *header; /* expected auth.header, or NULL */
};

static const struct neg_case neg_cases[] = {
	/* positives that stress the parser */
	{ "components in another order, no spaces",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 Signature=" GET_SIG
				",Credential=" CRED ",SignedHeaders=" GET_SH "\n" },
	  SPX_SIGV4_OK, NULL },
	{ "extra white space around components",
	  { .headers = GET_HDRS "Authorization:   AWS4-HMAC-SHA256   Credential=" CRED
				" ,\tSignedHeaders=" GET_SH " ,  Signature=" GET_SIG "  \n" },
	  SPX_SIGV4_OK, NULL },
	{ "header names in any case",
	  { .headers = "HOST: examplebucket.s3.amazonaws.com\nrange: bytes=0-9\n"
		       "X-Amz-Content-Sha256: " EMPTY "\nX-AMZ-DATE: 20130524T000000Z\n"
		       AUTHZ(CRED, GET_SH, GET_SIG) },
	  SPX_SIGV4_OK, NULL },
	{ "header value white space is trimmed",
	  { .headers = S3HOST "Range:   bytes=0-9  \nx-amz-content-sha256: " EMPTY "\n"
			      XDATE AUTHZ(CRED, GET_SH, GET_SIG) },
	  SPX_SIGV4_OK, NULL },
	{ "expected region and service",
	  { .headers = GOOD, .region = "us-east-1", .service = "s3" },
	  SPX_SIGV4_OK, NULL },
	{ "skew of exactly 15 minutes ahead", { .headers = GOOD, .now = T0 - 900 },
	  SPX_SIGV4_OK, NULL },
	{ "skew of exactly 15 minutes behind", { .headers = GOOD, .now = T0 + 900 },
	  SPX_SIGV4_OK, NULL },
	{ "presigned at its last second",
	  { .query = PRESIGNED(""), .headers = S3HOST, .now = T0 + 86400 },
	  SPX_SIGV4_OK, NULL },
	{ "presigned 15 minutes early",
	  { .query = PRESIGNED(""), .headers = S3HOST, .now = T0 - 900 },
	  SPX_SIGV4_OK, NULL },

	{ "no authentication", { .headers = GET_HDRS }, SPX_SIGV4_ENOAUTH, NULL },
	{ "header and query auth",
	  { .query = PRESIGNED(""), .headers = GOOD }, SPX_SIGV4_EMULTIPLE, NULL },
	{ "header auth and X-Amz-Signature",
	  { .query = "X-Amz-Signature=" GET_SIG, .headers = GOOD },
	  SPX_SIGV4_EMULTIPLE, NULL },
	{ "signature version 2 header",
	  { .headers = GET_HDRS "Authorization: AWS " AK ":frJIUN8DYpKDtOLCwo//yllqDzg=\n" },
	  SPX_SIGV4_EALGORITHM, NULL },
	{ "sigv4a header",
	  { .headers = GET_HDRS "Authorization: AWS4-ECDSA-P256-SHA256 Credential=" CRED
				", SignedHeaders=" GET_SH ", Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EALGORITHM, NULL },
	{ "no space after the algorithm",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256Credential=" CRED
				", SignedHeaders=" GET_SH ", Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EALGORITHM, NULL },
	{ "signature version 2 query",
	  { .query = "AWSAccessKeyId=" AK "&Expires=1141889120&Signature=vjbyPxybdZ"
		     "aNmGa%2ByT272YEAiv4%3D",
	    .headers = S3HOST },
	  SPX_SIGV4_EALGORITHM, NULL },
	{ "presigned with another algorithm",
	  { .query = "X-Amz-Algorithm=AWS4-HMAC-SHA512&X-Amz-Credential=x",
	    .headers = S3HOST },
	  SPX_SIGV4_EALGORITHM, NULL },
	{ "algorithm only",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "algorithm and spaces only",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256   \n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "no signature",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=" CRED
				", SignedHeaders=" GET_SH "\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "no credential",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 SignedHeaders=" GET_SH
				", Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "no signed headers",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=" CRED
				", Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "repeated credential",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=" CRED
				", Credential=" CRED ", SignedHeaders=" GET_SH
				", Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "unknown component",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=" CRED
				", SignedHeaders=" GET_SH ", Signature=" GET_SIG
				", Foo=bar\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "lowercase component name",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 credential=" CRED
				", SignedHeaders=" GET_SH ", Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "trailing comma",
	  { .headers = GET_HDRS AUTHZ(CRED, GET_SH, GET_SIG ",") },
	  SPX_SIGV4_EHEADER, NULL },
	{ "component without '='",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential, "
				"SignedHeaders=" GET_SH ", Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "empty component value",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=, "
				"SignedHeaders=" GET_SH ", Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "space inside a value",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=AKIA "
				"x/20130524/us-east-1/s3/aws4_request, SignedHeaders="
				GET_SH ", Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "components separated by semicolons",
	  { .headers = GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=" CRED
				"; SignedHeaders=" GET_SH "; Signature=" GET_SIG "\n" },
	  SPX_SIGV4_EHEADER, NULL },
	{ "two authorization headers",
	  { .headers = GOOD AUTHZ(CRED, GET_SH, GET_SIG) }, SPX_SIGV4_EHEADER, NULL },
	{ "credential with four parts",
	  { .headers = GET_HDRS AUTHZ(AK "/20130524/us-east-1/s3", GET_SH, GET_SIG) },
	  SPX_SIGV4_ECREDENTIAL, NULL },
	{ "credential with six parts",
	  { .headers = GET_HDRS AUTHZ(AK "/20130524/us-east-1/s3/aws4_request/x",
				      GET_SH, GET_SIG) },
	  SPX_SIGV4_ECREDENTIAL, NULL },
	{ "credential with a short date",
	  { .headers = GET_HDRS AUTHZ(AK "/2013052/us-east-1/s3/aws4_request",
				      GET_SH, GET_SIG) },
	  SPX_SIGV4_ECREDENTIAL, NULL },
	{ "credential with an impossible date",
	  { .headers = GET_HDRS AUTHZ(AK "/20130230/us-east-1/s3/aws4_request",
				      GET_SH, GET_SIG) },
	  SPX_SIGV4_ECREDENTIAL, NULL },
	{ "credential with another terminator",
	  { .headers = GET_HDRS AUTHZ(AK "/20130524/us-east-1/s3/aws5_request",
				      GET_SH, GET_SIG) },
	  SPX_SIGV4_ECREDENTIAL, NULL },
	{ "credential with an empty key",
	  { .headers = GET_HDRS AUTHZ("/20130524/us-east-1/s3/aws4_request",
				      GET_SH, GET_SIG) },
	  SPX_SIGV4_ECREDENTIAL, NULL },
	{ "credential with an empty region",
	  { .headers = GET_HDRS AUTHZ(AK "/20130524//s3/aws4_request", GET_SH,
				      GET_SIG) },
	  SPX_SIGV4_ECREDENTIAL, NULL },
	{ "credential with a bad key character",
	  { .headers = GET_HDRS AUTHZ("AKIA+EXAMPLE/20130524/us-east-1/s3/aws4_request",
				      GET_SH, GET_SIG) },
	  SPX_SIGV4_ECREDENTIAL, NULL },
	{ "wrong region", { .headers = GOOD, .region = "us-west-2" },
	  SPX_SIGV4_EREGION, NULL },
	{ "wrong service", { .headers = GOOD, .service = "ec2" },
	  SPX_SIGV4_ESERVICE, NULL },
	{ "no date header",
	  { .headers = S3HOST "Range: bytes=0-9\nx-amz-content-sha256: " EMPTY "\n"
		       AUTHZ(CRED, "host;range;x-amz-content-sha256", GET_SIG) },
	  SPX_SIGV4_EDATE, NULL },
	{ "x-amz-date without Z",
	  { .headers = S3HOST "Range: bytes=0-9\nx-amz-content-sha256: " EMPTY
			      "\nx-amz-date: 20130524T000000\n"
			      AUTHZ(CRED, GET_SH, GET_SIG) },
	  SPX_SIGV4_EDATE, NULL },
	{ "x-amz-date in month 13",
	  { .headers = S3HOST "Range: bytes=0-9\nx-amz-content-sha256: " EMPTY
			      "\nx-amz-date: 20131324T000000Z\n"
			      AUTHZ(CRED, GET_SH, GET_SIG) },
	  SPX_SIGV4_EDATE, NULL },
	{ "x-amz-date at hour 24",
	  { .headers = S3HOST "Range: bytes=0-9\nx-amz-content-sha256: " EMPTY
			      "\nx-amz-date: 20130524T240000Z\n"
			      AUTHZ(CRED, GET_SH, GET_SIG) },
	  SPX_SIGV4_EDATE, NULL },
	{ "two x-amz-date headers",
	  { .headers = GOOD XDATE }, SPX_SIGV4_EDATE, NULL },
	{ "date header not an http date",
	  { .headers = S3HOST "Date: 2013-05-24T00:00:00Z\nRange: bytes=0-9\n"
			      "x-amz-content-sha256: " EMPTY "\n"
			      AUTHZ(CRED, "date;host;range;x-amz-content-sha256",
				    GET_SIG) },
	  SPX_SIGV4_EDATE, NULL },
	{ "presigned date malformed",
	  { .query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7"
		     "EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
		     "2013-05-24&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
		     "&X-Amz-Signature=" PRESIGN_SIG,
	    .headers = S3HOST },
	  SPX_SIGV4_EDATE, NULL },
	{ "scope date is not the request date",
	  { .headers = GET_HDRS AUTHZ(AK "/20130525/us-east-1/s3/aws4_request",
				      GET_SH, GET_SIG) },
	  SPX_SIGV4_ESCOPEDATE, NULL },
	{ "signed headers unsorted",
	  { .headers = GET_HDRS AUTHZ(CRED, "range;host;x-amz-content-sha256;x-amz-date",
				      GET_SIG) },
	  SPX_SIGV4_ESIGNEDHEADERS, NULL },
	{ "signed headers in uppercase",
	  { .headers = GET_HDRS AUTHZ(CRED, "Host;Range;X-Amz-Content-Sha256;X-Amz-Date",
				      GET_SIG) },
	  SPX_SIGV4_ESIGNEDHEADERS, NULL },
	{ "signed headers repeated",
	  { .headers = GET_HDRS AUTHZ(CRED, "host;host;range;x-amz-content-sha256;"
					    "x-amz-date",
				      GET_SIG) },
	  SPX_SIGV4_ESIGNEDHEADERS, NULL },
	{ "signed headers with an empty name",
	  { .headers = GET_HDRS AUTHZ(CRED, "host;;range;x-amz-content-sha256;x-amz-date",
				      GET_SIG) },
	  SPX_SIGV4_ESIGNEDHEADERS, NULL },
	{ "signed headers without host",
	  { .headers = GET_HDRS AUTHZ(CRED, "range;x-amz-content-sha256;x-amz-date",
				      GET_SIG) },
	  SPX_SIGV4_ESIGNEDHEADERS, NULL },
	{ "x-amz-date not signed",
	  { .headers = GET_HDRS AUTHZ(CRED, "host;range;x-amz-content-sha256", GET_SIG) },
	  SPX_SIGV4_ESIGNEDHEADERS, NULL },
	{ "presigned signed headers unsorted",
	  { .query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7"
		     "EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
		     "20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders="
		     "x-a%3Bhost&X-Amz-Signature=" PRESIGN_SIG,
	    .headers = S3HOST "x-a: 1\n" },
	  SPX_SIGV4_ESIGNEDHEADERS, NULL },
	{ "signed header absent",
	  { .headers = S3HOST "x-amz-content-sha256: " EMPTY "\n" XDATE
			      AUTHZ(CRED, GET_SH, GET_SIG) },
	  SPX_SIGV4_EMISSINGHEADER, "range" },
	{ "x-amz header not signed",
	  { .headers = GOOD "X-Amz-Acl: private\n" }, SPX_SIGV4_EUNSIGNED,
	  "x-amz-acl" },
	{ "x-amz header not signed in a presigned url",
	  { .query = PRESIGNED(""), .headers = S3HOST "x-amz-acl: private\n" },
	  SPX_SIGV4_EUNSIGNED, "x-amz-acl" },
	{ "signature in uppercase",
	  { .headers = GET_HDRS AUTHZ(CRED, GET_SH, "F0E8BDB87C964420E857BD35B5D6ED31"
						    "0BD44F0170ABA48DD91039C6036BDB41") },
	  SPX_SIGV4_ESIGNATURE_FORMAT, NULL },
	{ "signature too short",
	  { .headers = GET_HDRS AUTHZ(CRED, GET_SH, "f0e8bdb87c964420e857bd35b5d6ed310"
						    "bd44f0170aba48dd91039c6036bdb4") },
	  SPX_SIGV4_ESIGNATURE_FORMAT, NULL },
	{ "signature not hex",
	  { .headers = GET_HDRS AUTHZ(CRED, GET_SH, "g0e8bdb87c964420e857bd35b5d6ed310"
						    "bd44f0170aba48dd91039c6036bdb41") },
	  SPX_SIGV4_ESIGNATURE_FORMAT, NULL },
	{ "presigned signature not hex",
	  { .query = PRESIGN_Q "&X-Amz-Signature=xyz", .headers = S3HOST },
	  SPX_SIGV4_ESIGNATURE_FORMAT, NULL },
	{ "presigned for 604801 seconds",
	  { .query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7"
		     "EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
		     "20130524T000000Z&X-Amz-Expires=604801&X-Amz-SignedHeaders=host"
		     "&X-Amz-Signature=" PRESIGN_SIG,
	    .headers = S3HOST },
	  SPX_SIGV4_EEXPIRES, NULL },
	{ "presigned for 0 seconds",
	  { .query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7"
		     "EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
		     "20130524T000000Z&X-Amz-Expires=0&X-Amz-SignedHeaders=host"
		     "&X-Amz-Signature=" PRESIGN_SIG,
	    .headers = S3HOST },
	  SPX_SIGV4_EEXPIRES, NULL },
	{ "presigned for -1 seconds",
	  { .query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7"
		     "EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
		     "20130524T000000Z&X-Amz-Expires=-1&X-Amz-SignedHeaders=host"
		     "&X-Amz-Signature=" PRESIGN_SIG,
	    .headers = S3HOST },
	  SPX_SIGV4_EEXPIRES, NULL },
	{ "presigned expiry not a number",
	  { .query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7"
		     "EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
		     "20130524T000000Z&X-Amz-Expires=1e3&X-Amz-SignedHeaders=host"
		     "&X-Amz-Signature=" PRESIGN_SIG,
	    .headers = S3HOST },
	  SPX_SIGV4_EEXPIRES, NULL },
	{ "presigned s3 without expiry",
	  { .query = PRESIGN_NOEXP, .headers = S3HOST }, SPX_SIGV4_EQUERY, NULL },
	{ "presigned without signature",
	  { .query = PRESIGN_Q, .headers = S3HOST }, SPX_SIGV4_EQUERY, NULL },
	{ "presigned without algorithm",
	  { .query = "X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1"
		     "%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-"
		     "Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature="
		     PRESIGN_SIG,
	    .headers = S3HOST },
	  SPX_SIGV4_EQUERY, NULL },
	{ "presigned with two dates",
	  { .query = PRESIGNED("&X-Amz-Date=20130524T000000Z"), .headers = S3HOST },
	  SPX_SIGV4_EQUERY, NULL },
	{ "content sha256 not a hash",
	  { .headers = S3HOST "Range: bytes=0-9\nx-amz-content-sha256: bogus\n" XDATE
			      AUTHZ(CRED, GET_SH, GET_SIG) },
	  SPX_SIGV4_ECONTENTSHA, NULL },
	{ "content sha256 sigv4a streaming",
	  { .headers = S3HOST "Range: bytes=0-9\nx-amz-content-sha256: "
			      "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD\n" XDATE
			      AUTHZ(CRED, GET_SH, GET_SIG) },
	  SPX_SIGV4_ECONTENTSHA, NULL },
	{ "unsigned payload outside s3",
	  { .path = "/",
	    .headers = SUITE_HDRS "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\n"
		       "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"
		       "20150830/us-east-1/service/aws4_request, SignedHeaders="
		       "host;x-amz-content-sha256;x-amz-date, Signature=" GET_SIG "\n",
	    .secret = SUITE_SECRET, .now = T1 },
	  SPX_SIGV4_ECONTENTSHA, NULL },
	{ "no payload hash for a request without the header",
	  { .path = "/", .headers = SUITE_GOOD, .secret = SUITE_SECRET, .now = T1 },
	  SPX_SIGV4_ENOCONTENTSHA, NULL },
	{ "payload hash not hex",
	  { .path = "/", .headers = SUITE_GOOD, .payload_hash = "xyz",
	    .secret = SUITE_SECRET, .now = T1 },
	  SPX_SIGV4_ENOCONTENTSHA, NULL },
	{ "16 minutes late", { .headers = GOOD, .now = T0 + 960 }, SPX_SIGV4_ESKEW, NULL },
	{ "16 minutes early", { .headers = GOOD, .now = T0 - 960 }, SPX_SIGV4_ESKEW, NULL },
	{ "one second beyond the skew", { .headers = GOOD, .now = T0 + 901 },
	  SPX_SIGV4_ESKEW, NULL },
	{ "presigned without expiry outside s3 keeps the skew rule",
	  { .path = "/",
	    .query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE"
		     "%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date="
		     "20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Signature="
		     GET_SIG,
	    .headers = SUITE_HDRS, .payload_hash = EMPTY, .secret = SUITE_SECRET,
	    .now = T1 + 3600 },
	  SPX_SIGV4_ESKEW, NULL },
	{ "presigned 16 minutes early",
	  { .query = PRESIGNED(""), .headers = S3HOST, .now = T0 - 960 },
	  SPX_SIGV4_ENOTYET, NULL },
	{ "presigned expired",
	  { .query = PRESIGNED(""), .headers = S3HOST, .now = T0 + 86401 },
	  SPX_SIGV4_EEXPIRED, NULL },
	{ "tampered signature", { .headers = GET_HDRS AUTHZ(CRED, GET_SH, BADSIG) },
	  SPX_SIGV4_ESIGNATURE, NULL },
	{ "wrong secret", { .headers = GOOD, .secret = SUITE_SECRET },
	  SPX_SIGV4_ESIGNATURE, NULL },
	{ "tampered header value",
	  { .headers = S3HOST "Range: bytes=0-10\nx-amz-content-sha256: " EMPTY "\n"
			      XDATE AUTHZ(CRED, GET_SH, GET_SIG) },
	  SPX_SIGV4_ESIGNATURE, NULL },
	{ "tampered path", { .path = "/test.txu", .headers = GOOD },
	  SPX_SIGV4_ESIGNATURE, NULL },
	{ "tampered method", { .method = "HEAD", .headers = GOOD },
	  SPX_SIGV4_ESIGNATURE, NULL },
	{ "added query parameter", { .query = "x=1", .headers = GOOD },
	  SPX_SIGV4_ESIGNATURE, NULL },
	{ "tampered presigned expiry",
	  { .query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7"
		     "EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
		     "20130524T000000Z&X-Amz-Expires=86401&X-Amz-SignedHeaders=host"
		     "&X-Amz-Signature=" PRESIGN_SIG,
	    .headers = S3HOST },
	  SPX_SIGV4_ESIGNATURE, NULL },
	{ "presigned with a payload hash param",
	  { .query = PRESIGNED("&X-Amz-Content-Sha256=" EMPTY), .headers = S3HOST },
	  SPX_SIGV4_ESIGNATURE, NULL },
	{ "test suite with the wrong payload",
	  { .path = "/", .headers = SUITE_GOOD,
	    .payload_hash = "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
	    .secret = SUITE_SECRET, .now = T1 },
	  SPX_SIGV4_ESIGNATURE, NULL },
};

static bool seen[SPX_SIGV4_NERR];

static void test_failures(void)
{

	for (size_t i = 0; i < SPX_ARRAY_SIZE(neg_cases); i++) {
		const struct neg_case *c = &neg_cases[i];
		struct spx_sigv4_auth a;
		enum spx_sigv4_err e = run(&c->x, &a);

		T_INT(e, c->want, "%s (%s)", c->name, a.detail);
		if (c->header)
			T_STR(a.header, c->header, "%s: names the header",
			      c->name);
		if (e != SPX_SIGV4_OK)
			T_OK(a.detail[0], "%s: has a detail", c->name);
		if (e == c->want)
			seen[e] = true;
	}
}

/* Limits that need built inputs. */
static void test_limits(void)
{
	struct spx_buf q = SPX_BUF_INIT, h = SPX_BUF_INIT;
	struct spx_sigv4_auth a;
	struct run x = { .headers = GOOD };

	for (int i = 0; i < 1001; i++)
		spx_buf_addf(&q, "%sp%d=%d", i ? "&" : "", i, i);
	x.query = q.p;
	T_INT(run(&x, &a), SPX_SIGV4_ETOOBIG, "1001 query parameters");
	spx_buf_reset(&q);
	for (int i = 0; i < 1000; i++)
		spx_buf_addf(&q, "%sp%d=%d", i ? "&" : "", i, i);
	T_INT(run(&x, &a), SPX_SIGV4_ESIGNATURE,
	      "1000 query parameters are read (and not signed)");

	spx_buf_adds(&h, GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=" CRED
			      ",");
	while (h.len <= SPX_SIGV4_AUTH_HEADER_MAX + 200)
		spx_buf_adds(&h, "          ");
	spx_buf_adds(&h, "SignedHeaders=" GET_SH ", Signature=" GET_SIG "\n");
	x.query = NULL;
	x.headers = h.p;
	T_INT(run(&x, &a), SPX_SIGV4_EHEADER, "an overlong authorization header");

	spx_buf_reset(&h);
	spx_buf_adds(&h, GOOD "X-Amz-Security-Token: ");
	for (int i = 0; i <= SPX_SIGV4_TOKEN_MAX; i++)
		spx_buf_addc(&h, 't');
	spx_buf_addc(&h, '\n');
	x.headers = h.p;
	T_INT(run(&x, &a), SPX_SIGV4_ETOOBIG, "an overlong security token");
	seen[SPX_SIGV4_ETOOBIG] = true;

	spx_buf_reset(&h);
	spx_buf_adds(&h, GET_HDRS "Authorization: AWS4-HMAC-SHA256 Credential=" CRED
			      ", SignedHeaders=host");
	for (int i = 0; i < SPX_SIGV4_SIGNED_HEADERS_NMAX; i++)
		spx_buf_addf(&h, ";x%03d", i);
	spx_buf_adds(&h, ", Signature=" GET_SIG "\n");
	x.headers = h.p;
	T_INT(run(&x, &a), SPX_SIGV4_ESIGNEDHEADERS, "too many signed headers");

	/* verify without a parse fails closed */
	memset(&a, 0, sizeof(a));
	{
		struct spx_kvlist l = SPX_KVLIST_INIT;
		struct spx_sigv4_req r = { "GET", "/", "", &l, NULL, NULL, NULL };

		T_INT(spx_sigv4_verify(&r, &a, S3SECRET, (time_t)T0),
		      SPX_SIGV4_ESIGNATURE, "verify without parse fails");
	}
	spx_buf_release(&q);
	spx_buf_release(&h);
}

/* Canonicalization details beyond the published cases. */
static void test_canonical(void)
{
	static const struct {
		const char *name, *service, *path, *query, *headers;
		int line;
		const char *want;
	} cases[] = {
		{ "s3 path is not normalized", "s3", "/a/./b/../c//d", "", "", 1,
		  "/a/./b/../c//d" },
		{ "s3 path is encoded once", "s3", "/a%20b/c+d/%7e/%2F", "", "", 1,
		  "/a%20b/c%2Bd/~/%2F" },
		{ "s3 raw bytes are encoded", "s3", "/\303\244 b", "", "", 1,
		  "/%C3%A4%20b" },
		{ "s3 bad escape stays", "s3", "/a%zz%4", "", "", 1,
		  "/a%25zz%254" },
		{ "other paths are encoded twice", "ec2", "/a%20b", "", "", 1,
		  "/a%2520b" },
		{ "empty path is /", "s3", "", "", "", 1, "/" },
		{ "query sorted by name then value", "s3", "/", "b=2&a=2&a=1&c",
		  "", 2, "a=1&a=2&b=2&c=" },
		{ "query re-encoded", "s3", "/", "k=a+b%2fc%7E&%41=~", "", 2,
		  "A=~&k=a%2Bb%2Fc~" },
		{ "query empty pieces skipped", "s3", "/", "&&a=1&&", "", 2,
		  "a=1" },
		{ "query sorted on encoded bytes", "s3", "/", "a_=1&a%20=2&aZ=3",
		  "", 2, "a%20=2&aZ=3&a_=1" },
		{ "repeated headers joined in order", "s3", "/", "",
		  "X-A: 2\nx-a: 1\nX-A:   3   4  \n", 4, "x-a:2,1,3 4" },
		{ "tabs collapse", "s3", "/", "", "x-a: \ta\t\tb \n", 4,
		  "x-a:a b" },
	};
	struct spx_buf cr = SPX_BUF_INIT, l = SPX_BUF_INIT, h = SPX_BUF_INIT;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		struct spx_kvlist hl = SPX_KVLIST_INIT;
		struct spx_sigv4_auth a;
		struct spx_sigv4_req r;
		bool xa = strstr(cases[i].headers, "x-a") ||
			  strstr(cases[i].headers, "X-A");

		spx_buf_reset(&h);
		spx_buf_addf(&h, "Host: h\n%sx-amz-content-sha256: %s\n" XDATE
				 "Authorization: AWS4-HMAC-SHA256 Credential=%s/"
				 "20130524/us-east-1/%s/aws4_request, "
				 "SignedHeaders=host;%sx-amz-content-sha256;x-amz-date, "
				 "Signature=%s\n",
			     cases[i].headers, EMPTY, AK, cases[i].service,
			     xa ? "x-a;" : "", GET_SIG);
		set_headers(&hl, h.p);
		r = (struct spx_sigv4_req){ "GET", cases[i].path, cases[i].query,
					    &hl, NULL, NULL, NULL };
		T_INT(spx_sigv4_parse(&r, &a), SPX_SIGV4_OK, "%s: parses",
		      cases[i].name);
		spx_sigv4_canonical(&r, &a, &cr, NULL);
		T_STR(line_of(cr.p, cases[i].line, &l), cases[i].want, "%s",
		      cases[i].name);
		spx_kv_free(&hl);
	}
	spx_buf_release(&cr);
	spx_buf_release(&l);
	spx_buf_release(&h);
}

/* Payload kinds from x-amz-content-sha256. */
static void test_payload(void)
{
	static const struct {
		const char *value;
		enum spx_sigv4_payload want;
	} cases[] = {
		{ EMPTY, SPX_SIGV4_PAYLOAD_SHA256 },
		{ "UNSIGNED-PAYLOAD", SPX_SIGV4_PAYLOAD_UNSIGNED },
		{ "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", SPX_SIGV4_PAYLOAD_STREAMING },
		{ "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
		  SPX_SIGV4_PAYLOAD_STREAMING_TRAILER },
		{ "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
		  SPX_SIGV4_PAYLOAD_STREAMING_UNSIGNED_TRAILER },
		{ NULL, SPX_SIGV4_PAYLOAD_BODY },
	};
	struct spx_buf h = SPX_BUF_INIT;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		struct spx_kvlist hl = SPX_KVLIST_INIT;
		struct spx_sigv4_auth a;
		struct spx_sigv4_req r = { "PUT", "/k", "", &hl, NULL, NULL, NULL };
		const char *v = cases[i].value;

		spx_buf_reset(&h);
		spx_buf_addf(&h, "Host: h\n%s%s%s" XDATE
				 "Authorization: AWS4-HMAC-SHA256 Credential=" CRED
				 ", SignedHeaders=host;%sx-amz-date, Signature="
				 GET_SIG "\n",
			     v ? "x-amz-content-sha256: " : "", v ? v : "",
			     v ? "\n" : "", v ? "x-amz-content-sha256;" : "");
		set_headers(&hl, h.p);
		T_INT(spx_sigv4_parse(&r, &a), SPX_SIGV4_OK, "payload %s parses",
		      v ? v : "(none)");
		T_INT(a.payload, cases[i].want, "payload %s kind", v ? v : "(none)");
		spx_kv_free(&hl);
	}
	spx_buf_release(&h);
}

/* ---- sign and presign round trips ------------------------------------ */

static void test_sign_roundtrip(void)
{
	struct spx_sigv4_cred cred = { "AKIASPXNODE0000001", "node/secret+key",
				       "spx-1", "s3", NULL };
	struct spx_kvlist h = SPX_KVLIST_INIT, sent = SPX_KVLIST_INIT;
	struct spx_buf authz = SPX_BUF_INIT, q = SPX_BUF_INIT;
	struct spx_sigv4_auth a;
	struct spx_sigv4_req r;
	time_t now = 1700000000;

	spx_kv_add(&h, "Content-Type", "application/octet-stream");
	spx_kv_add(&h, "x-amz-meta-a", " spaced   value ");
	spx_kv_add(&h, "X-Amz-Date", "stale");
	T_INT(spx_sigv4_sign(&cred, "PUT", "node2:8443", "/bkt/a%20b%2Bc",
			     "partNumber=1&uploadId=x%2By", &h, EMPTY, now,
			     &authz),
	      0, "sign");
	T_INT(spx_kv_count(&h, "X-Amz-Date"), 1, "x-amz-date replaced");
	T_STR(spx_kv_geti(&h, "x-amz-date"), "20231114T221320Z", "x-amz-date");
	T_STR(spx_kv_geti(&h, "x-amz-content-sha256"), EMPTY,
	      "x-amz-content-sha256 added");
	/* The request as it arrives: Host and Authorization added. */
	spx_kv_add(&sent, "Host", "node2:8443");
	for (size_t i = 0; i < h.n; i++)
		spx_kv_add(&sent, h.v[i].k, h.v[i].v);
	spx_kv_add(&sent, "Authorization", authz.p);
	r = (struct spx_sigv4_req){ "PUT", "/bkt/a%20b%2Bc",
				    "partNumber=1&uploadId=x%2By", &sent, NULL,
				    "spx-1", "s3" };
	T_INT(spx_sigv4_parse(&r, &a), SPX_SIGV4_OK, "signed request parses");
	T_INT(spx_sigv4_verify(&r, &a, cred.secret, now + 60), SPX_SIGV4_OK,
	      "signed request verifies");
	T_STR(a.signed_headers,
	      "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-a",
	      "every header is signed");
	spx_kv_free(&sent);

	/* Signing again (a retry) reuses the list. */
	T_INT(spx_sigv4_sign(&cred, "PUT", "node2:8443", "/bkt/a%20b%2Bc",
			     "partNumber=1&uploadId=x%2By", &h, EMPTY, now + 5,
			     &authz),
	      0, "sign again");
	T_INT(spx_kv_count(&h, "X-Amz-Date") + spx_kv_count(&h, "x-amz-date"),
	      1, "still one x-amz-date");

	/* A session token and a non-s3 service. */
	cred.service = "ec2";
	cred.session_token = "tok/en+==";
	spx_kv_free(&h);
	T_INT(spx_sigv4_sign(&cred, "POST", "node2:9999", "/", "", &h,
			     "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
			     now, &authz),
	      0, "sign with a session token");
	spx_kv_add(&sent, "host", "node2:9999");
	for (size_t i = 0; i < h.n; i++)
		spx_kv_add(&sent, h.v[i].k, h.v[i].v);
	spx_kv_add(&sent, "authorization", authz.p);
	r = (struct spx_sigv4_req){ "POST", "/", "", &sent, NULL, NULL, NULL };
	T_INT(spx_sigv4_parse(&r, &a), SPX_SIGV4_OK, "token request parses");
	T_STR(a.security_token, "tok/en+==", "token seen");
	T_INT(spx_sigv4_verify(&r, &a, cred.secret, now), SPX_SIGV4_OK,
	      "token request verifies");
	spx_kv_free(&sent);

	/* Arguments verify would reject. */
	cred.region = "us east";
	T_INT(spx_sigv4_sign(&cred, "GET", "h", "/", "", &h, EMPTY, now, &authz),
	      -1, "sign refuses a bad region");
	T_INT(spx_errstatus(), SPX_USAGE, "as a usage error");
	cred.region = "spx-1";
	T_INT(spx_sigv4_sign(&cred, "GET", "h", "/", "", &h, "abc", now, &authz),
	      -1, "sign refuses a bad payload hash");
	spx_kv_add(&h, "Host", "h");
	T_INT(spx_sigv4_sign(&cred, "GET", "h", "/", "", &h, EMPTY, now, &authz),
	      -1, "sign refuses a host header in the list");
	spx_kv_free(&h);
	T_INT(spx_sigv4_sign(&cred, "GET", "h\r\nx: y", "/", "", &h, EMPTY, now,
			     &authz),
	      -1, "sign refuses CRLF in host");

	/* Presign round trip, and expiry. */
	cred.service = "s3";
	cred.session_token = NULL;
	T_INT(spx_sigv4_presign(&cred, "GET", "node2:8443", "/bkt/k%20ey",
				"versionId=3", now, 600, &q),
	      0, "presign");
	spx_kv_add(&sent, "Host", "node2:8443");
	r = (struct spx_sigv4_req){ "GET", "/bkt/k%20ey", q.p, &sent, NULL,
				    "spx-1", "s3" };
	T_INT(spx_sigv4_parse(&r, &a), SPX_SIGV4_OK, "presigned parses");
	T_OK(a.presigned, "presigned");
	T_INT(a.expires, 600, "expiry");
	T_INT(a.payload, SPX_SIGV4_PAYLOAD_UNSIGNED, "unsigned payload");
	T_INT(spx_sigv4_verify(&r, &a, cred.secret, now + 600), SPX_SIGV4_OK,
	      "presigned verifies at its last second");
	T_INT(spx_sigv4_verify(&r, &a, cred.secret, now + 601),
	      SPX_SIGV4_EEXPIRED, "presigned expires");
	T_INT(spx_sigv4_presign(&cred, "GET", "h", "/", "", now, 604801, &q),
	      -1, "presign refuses 604801 s");
	T_INT(spx_sigv4_presign(&cred, "GET", "h", "/", "", now, 0, &q), -1,
	      "presign refuses 0 s");
	spx_kv_free(&sent);
	spx_buf_release(&authz);
	spx_buf_release(&q);
}

/* ---- error mapping ---------------------------------------------------- */

static void test_codes(void)
{
	struct spx_sigv4_auth pre = { .presigned = true };
	struct spx_apierr s;
	static const struct {
		enum spx_sigv4_err e;
		enum spx_sigv4_api api;
		bool presigned;
		int http;
		const char *code, *message;
	} cases[] = {
		{ SPX_SIGV4_ENOAUTH, SPX_SIGV4_API_S3, false, 403, "AccessDenied",
		  "Access Denied" },
		{ SPX_SIGV4_EHEADER, SPX_SIGV4_API_S3, false, 400,
		  "AuthorizationHeaderMalformed", NULL },
		{ SPX_SIGV4_EQUERY, SPX_SIGV4_API_S3, true, 400,
		  "AuthorizationQueryParametersError", NULL },
		{ SPX_SIGV4_ESCOPEDATE, SPX_SIGV4_API_S3, false, 400,
		  "AuthorizationHeaderMalformed", NULL },
		{ SPX_SIGV4_ESCOPEDATE, SPX_SIGV4_API_S3, true, 400,
		  "AuthorizationQueryParametersError", NULL },
		{ SPX_SIGV4_EEXPIRES, SPX_SIGV4_API_S3, true, 400,
		  "AuthorizationQueryParametersError",
		  "X-Amz-Expires must be less than a week (in seconds) that is; "
		  "604800" },
		{ SPX_SIGV4_ESIGNATURE, SPX_SIGV4_API_S3, false, 403,
		  "SignatureDoesNotMatch", NULL },
		{ SPX_SIGV4_ESKEW, SPX_SIGV4_API_S3, false, 403,
		  "RequestTimeTooSkewed", NULL },
		{ SPX_SIGV4_EEXPIRED, SPX_SIGV4_API_S3, true, 403, "AccessDenied",
		  "Request has expired" },
		{ SPX_SIGV4_EUNSIGNED, SPX_SIGV4_API_S3, false, 403, "AccessDenied",
		  "There were headers present in the request which were not "
		  "signed" },
		{ SPX_SIGV4_EALGORITHM, SPX_SIGV4_API_S3, false, 400,
		  "InvalidRequest", NULL },
		{ SPX_SIGV4_EUNKNOWNKEY, SPX_SIGV4_API_S3, false, 403,
		  "InvalidAccessKeyId", NULL },
		{ SPX_SIGV4_ENOAUTH, SPX_SIGV4_API_EC2, false, 403,
		  "MissingAuthenticationToken", NULL },
		{ SPX_SIGV4_EHEADER, SPX_SIGV4_API_EC2, false, 403,
		  "IncompleteSignature", NULL },
		{ SPX_SIGV4_ESIGNATURE, SPX_SIGV4_API_EC2, false, 403,
		  "SignatureDoesNotMatch", NULL },
		{ SPX_SIGV4_ESKEW, SPX_SIGV4_API_EC2, false, 400, "RequestExpired",
		  NULL },
		{ SPX_SIGV4_EUNKNOWNKEY, SPX_SIGV4_API_EC2, false, 401,
		  "AuthFailure", NULL },
		{ SPX_SIGV4_EUNKNOWNKEY, SPX_SIGV4_API_STS, false, 403,
		  "InvalidClientTokenId", NULL },
		{ SPX_SIGV4_ESKEW, SPX_SIGV4_API_STS, false, 403,
		  "SignatureDoesNotMatch", "Signature expired." },
		{ SPX_SIGV4_EDATE, SPX_SIGV4_API_STS, false, 403,
		  "IncompleteSignature", NULL },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		s = spx_sigv4_code(cases[i].e, cases[i].api,
				   cases[i].presigned ? &pre : NULL);
		T_INT(s.http, cases[i].http, "%s api %d: status",
		      spx_sigv4_strerror(cases[i].e), cases[i].api);
		T_STR(s.code, cases[i].code, "%s api %d: code",
		      spx_sigv4_strerror(cases[i].e), cases[i].api);
		if (cases[i].message)
			T_STR(s.message, cases[i].message, "%s api %d: message",
			      spx_sigv4_strerror(cases[i].e), cases[i].api);
	}
	for (int e = 1; e < SPX_SIGV4_NERR; e++) {
		bool ok = strcmp(spx_sigv4_strerror((enum spx_sigv4_err)e),
				 "unknown error") != 0;

		for (int api = 0; api < 3; api++)
			for (int p = 0; p < 2; p++) {
				s = spx_sigv4_code((enum spx_sigv4_err)e,
						   (enum spx_sigv4_api)api,
						   p ? &pre : NULL);
				ok = ok && s.code && s.message && *s.code &&
				     *s.message &&
				     (s.http == 400 || s.http == 401 ||
				      s.http == 403);
			}
		T_OK(ok, "error %d (%s) maps to a code in every api", e,
		     spx_sigv4_strerror((enum spx_sigv4_err)e));
	}
	T_STR(spx_sigv4_strerror(SPX_SIGV4_NERR), "unknown error",
	      "out of range strerror");
}

/* ---- Signature Version 2 ---------------------------------------------- */

/* parse and verify a SigV2 request; st, if not NULL, gets the string to
 * sign. */
static enum spx_sigv4_err run2(const char *method, const char *path,
			       const char *query, const char *headers,
			       const char *vhost, long long now,
			       struct spx_sigv4_auth *a, struct spx_buf *st)
{
	struct spx_kvlist h = SPX_KVLIST_INIT;
	struct spx_sigv4_req r;
	enum spx_sigv4_err e;

	set_headers(&h, headers);
	r = (struct spx_sigv4_req){ method, path, query, &h, NULL,
				    "us-east-1", "s3" };
	e = spx_sigv2_parse(&r, a);
	if (!e)
		e = spx_sigv2_verify(&r, a, vhost, S3SECRET, (time_t)now);
	if (st && a->v2)
		spx_sigv2_string_to_sign(&r, a, vhost, st);
	spx_kv_free(&h);
	return e;
}

static bool present2(const char *query, const char *headers)
{
	struct spx_kvlist h = SPX_KVLIST_INIT;
	struct spx_sigv4_req r = { "GET", "/b/k", query, &h, NULL, NULL,
				   NULL };
	bool p;

	set_headers(&h, headers);
	p = spx_sigv2_present(&r);
	spx_kv_free(&h);
	return p;
}

static void test_sigv2(void)
{
	/* The S3 reference's examples: 2007-03-27 19:36:42 and 21:15:45. */
	const long long get_t = 1175024202LL, put_t = 1175030145LL;
	const char *get_h = "Host: johnsmith.s3.amazonaws.com\n"
			    "Date: Tue, 27 Mar 2007 19:36:42 +0000\n"
			    "Authorization: AWS " AK
			    ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=";
	struct spx_buf st = SPX_BUF_INIT;
	struct spx_sigv4_auth a;
	struct spx_apierr c;

	T_INT(run2("GET", "/photos/puppy.jpg", "", get_h, "johnsmith", get_t,
		   &a, &st),
	      SPX_SIGV4_OK, "v2 GET example (virtual host)");
	T_STR(st.p,
	      "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n"
	      "/johnsmith/photos/puppy.jpg",
	      "v2 GET example: string to sign");
	T_OK(a.v2 && !a.presigned && a.payload == SPX_SIGV4_PAYLOAD_UNSIGNED &&
		     !strcmp(a.access_key, AK) && a.verified,
	     "v2 GET example: what parse and verify leave");
	T_INT(run2("GET", "/johnsmith/photos/puppy.jpg", "", get_h, NULL,
		   get_t, &a, NULL),
	      SPX_SIGV4_OK, "v2 GET example, path style");
	T_INT(run2("GET", "/johnsmith/photos/puppy.jpg", "", get_h,
		   "johnsmith", get_t, &a, NULL),
	      SPX_SIGV4_ESIGNATURE, "v2: the bucket named twice");
	T_INT(run2("GET", "/photos/puppy.jpeg", "", get_h, "johnsmith", get_t,
		   &a, NULL),
	      SPX_SIGV4_ESIGNATURE, "v2: another key");
	T_INT(run2("DELETE", "/photos/puppy.jpg", "", get_h, "johnsmith",
		   get_t, &a, NULL),
	      SPX_SIGV4_ESIGNATURE, "v2: another method");
	T_INT(run2("GET", "/photos/puppy.jpg", "acl", get_h, "johnsmith",
		   get_t, &a, NULL),
	      SPX_SIGV4_ESIGNATURE, "v2: a subresource added");
	T_INT(run2("GET", "/photos/puppy.jpg", "prefix=x&max-keys=1", get_h,
		   "johnsmith", get_t, &a, NULL),
	      SPX_SIGV4_OK, "v2: other parameters are not signed");
	T_INT(run2("GET", "/photos/puppy.jpg", "", get_h, "johnsmith",
		   get_t + 901, &a, NULL),
	      SPX_SIGV4_ESKEW, "v2: 901 s late");
	T_INT(run2("GET", "/photos/puppy.jpg", "", get_h, "johnsmith",
		   get_t - 901, &a, NULL),
	      SPX_SIGV4_ESKEW, "v2: 901 s early");
	T_INT(run2("PUT", "/photos/puppy.jpg", "",
		   "Content-Type: image/jpeg\nContent-Length: 94328\n"
		   "Host: johnsmith.s3.amazonaws.com\n"
		   "Date: Tue, 27 Mar 2007 21:15:45 +0000\n"
		   "Authorization: AWS " AK ":MyyxeRY7whkBe+bq8fHCL/2kKUg=",
		   "johnsmith", put_t, &a, NULL),
	      SPX_SIGV4_OK, "v2 PUT example");
	T_INT(run2("PUT", "/photos/puppy.jpg", "",
		   "Content-Type: image/png\n"
		   "Date: Tue, 27 Mar 2007 21:15:45 +0000\n"
		   "Authorization: AWS " AK ":MyyxeRY7whkBe+bq8fHCL/2kKUg=",
		   "johnsmith", put_t, &a, NULL),
	      SPX_SIGV4_ESIGNATURE, "v2 PUT example, Content-Type changed");
	/* Query-string authentication (the reference's example). */
	T_INT(run2("GET", "/photos/puppy.jpg",
		   "AWSAccessKeyId=" AK "&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8"
		   "%3D&Expires=1175139620",
		   "Host: johnsmith.s3.amazonaws.com", "johnsmith", 1175139620LL,
		   &a, &st),
	      SPX_SIGV4_OK, "v2 presigned example, at its last second");
	T_OK(a.presigned && a.expires == 1175139620L,
	     "v2 presigned: Expires kept");
	T_STR(st.p, "GET\n\n\n1175139620\n/johnsmith/photos/puppy.jpg",
	      "v2 presigned: string to sign");
	T_INT(run2("GET", "/photos/puppy.jpg",
		   "AWSAccessKeyId=" AK "&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8"
		   "%3D&Expires=1175139620",
		   "", "johnsmith", 1175139621LL, &a, NULL),
	      SPX_SIGV4_EEXPIRED, "v2 presigned: a second later");
	T_INT(run2("GET", "/photos/puppy.jpg",
		   "AWSAccessKeyId=" AK "&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8"
		   "%3D&Expires=1175139621",
		   "", "johnsmith", 1175139000LL, &a, NULL),
	      SPX_SIGV4_ESIGNATURE, "v2 presigned: Expires moved");
	/* The string to sign: x-amz-* sorted, lowercased, trimmed, repeats
	 * joined; Date left out for x-amz-date; subresources sorted and
	 * decoded, an empty one by its name only; "/bucket" is "/bucket/". */
	run2("PUT", "/b/k%20x", "versionId=3&uploads=&foo=1&acl&"
	     "response-content-type=a%2Fb",
	     "X-Amz-Meta-B: two \nx-amz-meta-a: one\nX-AMZ-META-B:  1\n"
	     "Content-MD5: XrY7u+Ae7tCTyyK7j1rNww==\n"
	     "x-amz-date: Tue, 27 Mar 2007 21:20:26 +0000\n"
	     "Date: Tue, 27 Mar 2007 21:20:27 +0000\n"
	     "Authorization: AWS " AK ":XrY7u+Ae7tCTyyK7j1rNwwXXXXX=",
	     NULL, 1175030426LL, &a, &st);
	T_STR(st.p,
	      "PUT\nXrY7u+Ae7tCTyyK7j1rNww==\n\n\n"
	      "x-amz-date:Tue, 27 Mar 2007 21:20:26 +0000\n"
	      "x-amz-meta-a:one\nx-amz-meta-b:two,1\n"
	      "/b/k%20x?acl&response-content-type=a/b&uploads&versionId=3",
	      "v2 string to sign: headers and subresources");
	run2("GET", "/bkt", "", "Date: Tue, 27 Mar 2007 19:36:42 +0000\n"
	     "Authorization: AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
	     NULL, get_t, &a, &st);
	T_STR(st.p, "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/bkt/",
	      "v2 string to sign: a bucket path-style");
	run2("GET", "/", "", "Date: Tue, 27 Mar 2007 19:36:42 +0000\n"
	     "Authorization: AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
	     "bkt", get_t, &a, &st);
	T_STR(st.p, "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/bkt/",
	      "v2 string to sign: a bucket virtual-hosted");
	/* Malformed. */
	T_INT(run2("GET", "/b", "", "Date: Tue, 27 Mar 2007 19:36:42 +0000\n"
		   "Authorization: AWS " AK, NULL, get_t, &a, NULL),
	      SPX_SIGV4_EHEADER, "v2: no ':signature'");
	c = spx_sigv4_code(SPX_SIGV4_EHEADER, SPX_SIGV4_API_S3, &a);
	T_STR(c.code, "InvalidArgument", "v2: a malformed header's code");
	T_INT(run2("GET", "/b", "", "Date: Tue, 27 Mar 2007 19:36:42 +0000\n"
		   "Authorization: AWS :bWq2s1WEIj+Ydj0vQ697zp+IXMU=", NULL,
		   get_t, &a, NULL),
	      SPX_SIGV4_EHEADER, "v2: no access key");
	T_INT(run2("GET", "/b", "", "Date: Tue, 27 Mar 2007 19:36:42 +0000\n"
		   "Authorization: AWS " AK ":bWq2s1WEIj", NULL, get_t, &a,
		   NULL),
	      SPX_SIGV4_ESIGNATURE_FORMAT, "v2: a short signature");
	T_INT(run2("GET", "/b", "",
		   "Authorization: AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
		   NULL, get_t, &a, NULL),
	      SPX_SIGV4_EDATE, "v2: no date");
	T_INT(run2("GET", "/b", "", "Date: yesterday\n"
		   "Authorization: AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
		   NULL, get_t, &a, NULL),
	      SPX_SIGV4_EDATE, "v2: an unreadable date");
	T_INT(run2("GET", "/b", "Expires=1", "Date: Tue, 27 Mar 2007 19:36:42 "
		   "+0000\nAuthorization: AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
		   NULL, get_t, &a, NULL),
	      SPX_SIGV4_ESIGNATURE, "v2: Expires beside a header is a parameter");
	T_INT(run2("GET", "/b", "AWSAccessKeyId=" AK "&Signature=x",
		   "Authorization: AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
		   NULL, get_t, &a, NULL),
	      SPX_SIGV4_EMULTIPLE, "v2: header and query both");
	T_INT(run2("GET", "/b", "AWSAccessKeyId=" AK "&Signature=x",
		   "Authorization: AWS4-HMAC-SHA256 Credential=x", NULL, get_t,
		   &a, NULL),
	      SPX_SIGV4_EMULTIPLE, "v2: query beside a SigV4 header");
	T_INT(run2("GET", "/b", "AWSAccessKeyId=" AK "&Signature=NpgCjnDzrM%2B"
		   "WFzoENXmpNDUsSn8%3D", "", NULL, get_t, &a, NULL),
	      SPX_SIGV4_EQUERY, "v2: no Expires");
	c = spx_sigv4_code(SPX_SIGV4_EQUERY, SPX_SIGV4_API_S3, &a);
	T_OK(c.http == 403 && !strcmp(c.code, "AccessDenied"),
	     "v2: missing parameters are AccessDenied");
	T_INT(run2("GET", "/b", "AWSAccessKeyId=" AK "&Signature=NpgCjnDzrM%2B"
		   "WFzoENXmpNDUsSn8%3D&Expires=1&Expires=2", "", NULL, 0, &a,
		   NULL),
	      SPX_SIGV4_EQUERY, "v2: Expires twice");
	T_INT(run2("GET", "/b", "AWSAccessKeyId=" AK "&Signature=NpgCjnDzrM%2B"
		   "WFzoENXmpNDUsSn8%3D&Expires=-5", "", NULL, 0, &a, NULL),
	      SPX_SIGV4_EQUERY, "v2: a negative Expires");
	T_INT(run2("GET", "/b", "AWSAccessKeyId=" AK "&Signature=NpgCjnDzrM%2B"
		   "WFzoENXmpNDUsSn8%3D&Expires=99999999999999", "", NULL, 0, &a,
		   NULL),
	      SPX_SIGV4_EQUERY, "v2: an Expires past 9999");
	T_INT(run2("GET", "/b", "AWSAccessKeyId=A%00K&Signature=NpgCjnDzrM%2B"
		   "WFzoENXmpNDUsSn8%3D&Expires=1", "", NULL, 0, &a, NULL),
	      SPX_SIGV4_EQUERY, "v2: a NUL in the key");
	T_INT(run2("GET", "/b", "", "", NULL, 0, &a, NULL), SPX_SIGV4_ENOAUTH,
	      "v2: nothing");
	T_OK(present2("", "Authorization: AWS a:b"), "v2 present: header");
	T_OK(present2("Signature=x", ""), "v2 present: query");
	T_OK(!present2("", "Authorization: AWS4-HMAC-SHA256 Credential=x"),
	     "v2 not present: SigV4");
	T_OK(!present2("X-Amz-Signature=x", "Authorization: AWSX a:b"),
	     "v2 not present: other words");
	spx_buf_release(&st);
}

/* What a SigV2 signature covers of the query: S3's subresources as
 * botocore signs them, not the newer ones the gateway routes on. */
static void test_sigv2_signs(void)
{
	static const struct {
		const char *name;
		bool signs;
	} t[] = {
		{"acl", true},		     {"uploadId", true},
		{"versionId", true},	     {"response-content-type", true},
		{"tagging", true},	     {"object-lock", true},
		{"publicAccessBlock", false}, {"ownershipControls", false},
		{"policyStatus", false},     {"attributes", false},
		{"list-type", false},	     {"prefix", false},
		{"ACL", false},		     {"", false},
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++)
		T_OK(spx_sigv2_signs_param(t[i].name) == t[i].signs,
		     "sigv2 signs '%s': %d", t[i].name, t[i].signs);
}

int main(void)
{
	test_aws_examples();
	test_aws_intermediates();
	test_botocore();
	test_failures();
	test_limits();
	test_canonical();
	test_payload();
	test_sign_roundtrip();
	test_codes();
	test_sigv2();
	test_sigv2_signs();
	seen[SPX_SIGV4_EUNKNOWNKEY] = true; /* the caller's: see test_codes */
	for (int e = 0; e < SPX_SIGV4_NERR; e++)
		T_OK(seen[e], "failure '%s' is exercised",
		     spx_sigv4_strerror((enum spx_sigv4_err)e));
	return t_done();
}
