#include "spx.h"

#include "checksum.h"

#include "hex.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth/chunked.h"

enum {
	ST_HEADER,  /* reading "hex-size[;chunk-signature=sig]" CRLF */
	ST_DATA,    /* passing payload bytes through */
	ST_DATA_CR, /* the CR after the data */
	ST_DATA_LF, /* the LF after the data */
	ST_TRAILER, /* trailer lines after the final chunk, up to CRLF */
	ST_DONE,
};

#define SIG_PREFIX ";chunk-signature="
#define TRAILER_SIG "x-amz-trailer-signature"

static bool is_tchar(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

__attribute__((format(printf, 3, 4))) static enum spx_chunked_err
fail(struct spx_chunked *c, enum spx_chunked_err e, const char *fmt, ...)
{
	va_list ap;

	/* A detail for logs; truncation is harmless. */
	va_start(ap, fmt);
	(void)vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
	c->err = e;
	return e;
}

int spx_chunked_init(struct spx_chunked *c, const struct spx_sigv4_auth *auth,
		     int64_t decoded_length, spx_chunked_out_fn out, void *arg)
{
	memset(c, 0, sizeof(*c));
	c->expect = -1;
	c->err = SPX_CHUNKED_EFORMAT; /* until init succeeds */
	if (!auth || !auth->verified)
		return spx_error(SPX_USAGE,
				 "aws-chunked body of an unverified request");
	switch (auth->payload) {
	case SPX_SIGV4_PAYLOAD_STREAMING:
		c->sign = true;
		break;
	case SPX_SIGV4_PAYLOAD_STREAMING_TRAILER:
		c->sign = c->trailer = true;
		break;
	case SPX_SIGV4_PAYLOAD_STREAMING_UNSIGNED_TRAILER:
		c->trailer = true;
		break;
	default:
		return spx_error(SPX_USAGE, "payload '%s' is not aws-chunked",
				 auth->payload_hash);
	}
	if (c->sign && !(c->md = EVP_MD_CTX_new()))
		return spx_error(SPX_FAIL, "cannot allocate a digest context");
	memcpy(c->key, auth->signing_key, 32);
	memcpy(c->amz_date, auth->amz_date, sizeof(c->amz_date));
	memcpy(c->scope, auth->scope, sizeof(c->scope));
	memcpy(c->prev, auth->signature, sizeof(c->prev));
	c->expect = decoded_length < 0 ? -1 : decoded_length;
	c->out = out;
	c->arg = arg;
	c->state = ST_HEADER;
	c->err = SPX_CHUNKED_OK;
	return 0;
}

void spx_chunked_release(struct spx_chunked *c)
{
	EVP_MD_CTX_free(c->md);
	c->md = NULL;
	spx_kv_free(&c->trailers);
	OPENSSL_cleanse(c->key, sizeof(c->key));
}

/* HMAC of the string to sign for a chunk (kind "AWS4-HMAC-SHA256-PAYLOAD",
 * with the empty hash line) or for the trailer. */
static bool chain_sig(struct spx_chunked *c, const char *kind, bool empty_line,
		      const unsigned char hash[32], char out[65])
{
	struct spx_buf s = SPX_BUF_INIT;
	unsigned char mac[32];
	char hex[65];
	bool ok;

	spx_hex_encode(hash, 32, hex);
	spx_buf_addf(&s, "%s\n%s\n%s\n%s\n%s%s", kind, c->amz_date, c->scope,
		     c->prev, empty_line ? SPX_SIGV4_EMPTY_SHA256 "\n" : "",
		     hex);
	ok = spx_hmac_sha256(c->key, 32, s.p, s.len, mac);
	spx_buf_release(&s);
	if (ok)
		spx_hex_encode(mac, 32, out);
	return ok;
}

/* The current chunk's data is complete: check its signature. */
static enum spx_chunked_err end_chunk(struct spx_chunked *c)
{
	unsigned char md[32];
	unsigned int len = 0;
	char want[65];

	if (!c->sign)
		return SPX_CHUNKED_OK;
	if (EVP_DigestFinal_ex(c->md, md, &len) != 1 ||
	    !chain_sig(c, "AWS4-HMAC-SHA256-PAYLOAD", true, md, want))
		return fail(c, SPX_CHUNKED_ESIGNATURE, "cannot compute sha256");
	if (CRYPTO_memcmp(want, c->chunk_sig, 64))
		return fail(c, SPX_CHUNKED_ESIGNATURE,
			    "chunk signature does not match after %llu bytes",
			    (unsigned long long)c->decoded);
	memcpy(c->prev, c->chunk_sig, 65);
	return SPX_CHUNKED_OK;
}

static enum spx_chunked_err chunk_header(struct spx_chunked *c, const char *s,
					 size_t n)
{
	uint64_t size = 0;
	size_t i = 0;
	int v;

	while (i < n && (v = spx_hexval((unsigned char)s[i])) >= 0) {
		if (i == 16)
			return fail(c, SPX_CHUNKED_EFORMAT,
				    "chunk size has more than 16 digits");
		size = size << 4 | (uint64_t)v;
		i++;
	}
	if (i == 0)
		return fail(c, SPX_CHUNKED_EFORMAT,
			    "chunk header does not start with a hex size");
	if (c->sign) {
		size_t pl = strlen(SIG_PREFIX);

		if (n - i != pl + 64 || memcmp(s + i, SIG_PREFIX, pl) ||
		    !spx_is_lower_hex(s + i + pl, 64))
			return fail(c, SPX_CHUNKED_EFORMAT,
				    "chunk header is not "
				    "size;chunk-signature=signature");
		memcpy(c->chunk_sig, s + i + pl, 64);
		c->chunk_sig[64] = '\0';
	} else if (i != n) {
		return fail(c, SPX_CHUNKED_EFORMAT,
			    "unexpected text after the chunk size");
	}
	if (size > UINT64_MAX - c->decoded ||
	    (c->expect >= 0 && c->decoded + size > (uint64_t)c->expect))
		return fail(c, SPX_CHUNKED_ELENGTH,
			    "chunks exceed the decoded length %lld",
			    (long long)c->expect);
	c->decoded += size;
	if (c->sign && EVP_DigestInit_ex(c->md, spx_md(SPX_CKSUM_SHA256), NULL) != 1)
		return fail(c, SPX_CHUNKED_ESIGNATURE, "cannot compute sha256");
	if (size == 0) {
		enum spx_chunked_err e = end_chunk(c);

		if (e)
			return e;
		c->state = ST_TRAILER;
		return SPX_CHUNKED_OK;
	}
	c->remaining = size;
	c->state = ST_DATA;
	return SPX_CHUNKED_OK;
}

static int name_cmp(const void *x, const void *y)
{
	const struct spx_kv *a = x, *b = y;

	return strcmp(a->k, b->k);
}

static enum spx_chunked_err check_trailer_sig(struct spx_chunked *c,
					      const char *sig)
{
	struct spx_kv *v = NULL;
	struct spx_buf s = SPX_BUF_INIT;
	unsigned char md[32];
	char want[65];
	bool ok;
	size_t n = c->trailers.n;

	if (n) {
		v = spx_malloc(n * sizeof(*v));
		memcpy(v, c->trailers.v, n * sizeof(*v));
		qsort(v, n, sizeof(*v), name_cmp);
	}
	for (size_t i = 0; i < n; i++)
		spx_buf_addf(&s, "%s:%s\n", v[i].k, v[i].v);
	free(v);
	ok = EVP_Digest(s.p, s.len, md, NULL, spx_md(SPX_CKSUM_SHA256), NULL) == 1 &&
	     chain_sig(c, "AWS4-HMAC-SHA256-TRAILER", false, md, want);
	spx_buf_release(&s);
	if (!ok)
		return fail(c, SPX_CHUNKED_ESIGNATURE, "cannot compute sha256");
	if (CRYPTO_memcmp(want, sig, 64))
		return fail(c, SPX_CHUNKED_ESIGNATURE,
			    "trailer signature does not match");
	return SPX_CHUNKED_OK;
}

static enum spx_chunked_err trailer_line(struct spx_chunked *c, char *s,
					 size_t n)
{
	char *colon, *v, *e;
	size_t vn;

	if (n == 0) {
		if (c->sign && c->trailer && !c->got_trailer_sig)
			return fail(c, SPX_CHUNKED_ETRAILER,
				    "no x-amz-trailer-signature");
		c->state = ST_DONE;
		return SPX_CHUNKED_OK;
	}
	if (!c->trailer)
		return fail(c, SPX_CHUNKED_EFORMAT,
			    "no CRLF after the final chunk");
	if (c->got_trailer_sig)
		return fail(c, SPX_CHUNKED_ETRAILER,
			    "trailer after x-amz-trailer-signature");
	c->trailer_bytes += n + 2;
	if (c->trailer_bytes > SPX_CHUNKED_TRAILER_MAX ||
	    c->trailers.n >= SPX_CHUNKED_TRAILERS_NMAX)
		return fail(c, SPX_CHUNKED_ETRAILER, "trailers exceed %d bytes",
			    SPX_CHUNKED_TRAILER_MAX);
	s[n] = '\0';
	colon = memchr(s, ':', n);
	if (!colon || colon == s)
		return fail(c, SPX_CHUNKED_ETRAILER,
			    "trailer line is not name:value");
	for (char *p = s; p < colon; p++) {
		if (!is_tchar((unsigned char)*p))
			return fail(c, SPX_CHUNKED_ETRAILER,
				    "invalid trailer name");
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p + 32);
	}
	*colon = '\0';
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	e = s + n;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*e = '\0';
	vn = (size_t)(e - v);
	for (size_t i = 0; i < vn; i++)
		if ((unsigned char)v[i] < 0x20 && v[i] != '\t')
			return fail(c, SPX_CHUNKED_ETRAILER,
				    "control character in trailer '%s'", s);
	if (!strcmp(s, TRAILER_SIG)) {
		if (!c->sign)
			return fail(c, SPX_CHUNKED_ETRAILER,
				    "trailer signature in an unsigned body");
		if (vn != 64 || !spx_is_lower_hex(v, 64))
			return fail(c, SPX_CHUNKED_ETRAILER,
				    "trailer signature is not 64 hex digits");
		c->got_trailer_sig = true;
		return check_trailer_sig(c, v);
	}
	if (spx_kv_get(&c->trailers, s))
		return fail(c, SPX_CHUNKED_ETRAILER, "repeated trailer '%s'", s);
	spx_kv_add(&c->trailers, s, v);
	return SPX_CHUNKED_OK;
}

enum spx_chunked_err spx_chunked_feed(struct spx_chunked *c, const void *data,
				      size_t len)
{
	const char *p = data, *end = p + len;
	enum spx_chunked_err e;

	if (c->err)
		return c->err;
	while (p < end) {
		switch (c->state) {
		case ST_HEADER:
		case ST_TRAILER: {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t take = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
			size_t n;

			/* One byte of line[] is kept for a terminating NUL. */
			if (take > sizeof(c->line) - 1 - c->linelen)
				return fail(c, SPX_CHUNKED_ELINE,
					    "%s line longer than %d bytes",
					    c->state == ST_HEADER ? "chunk header"
								  : "trailer",
					    SPX_CHUNKED_LINE_MAX - 1);
			memcpy(c->line + c->linelen, p, take);
			c->linelen += take;
			p += take;
			if (!nl)
				break;
			n = c->linelen;
			c->linelen = 0;
			if (n < 2 || c->line[n - 2] != '\r')
				return fail(c, SPX_CHUNKED_EFORMAT,
					    "line does not end with CRLF");
			if (memchr(c->line, '\r', n - 2) ||
			    memchr(c->line, '\0', n - 2))
				return fail(c, SPX_CHUNKED_EFORMAT,
					    "stray CR or NUL in a line");
			e = c->state == ST_HEADER
				    ? chunk_header(c, c->line, n - 2)
				    : trailer_line(c, c->line, n - 2);
			if (e)
				return e;
			break;
		}
		case ST_DATA: {
			size_t take = (size_t)(end - p);

			if (take > c->remaining)
				take = (size_t)c->remaining;
			if (c->sign && EVP_DigestUpdate(c->md, p, take) != 1)
				return fail(c, SPX_CHUNKED_ESIGNATURE,
					    "cannot compute sha256");
			if (c->out && c->out(c->arg, p, take) < 0)
				return fail(c, SPX_CHUNKED_EOUTPUT,
					    "output failed");
			p += take;
			c->remaining -= take;
			if (c->remaining == 0) {
				if ((e = end_chunk(c)))
					return e;
				c->state = ST_DATA_CR;
			}
			break;
		}
		case ST_DATA_CR:
			if (*p++ != '\r')
				return fail(c, SPX_CHUNKED_EFORMAT,
					    "no CRLF after chunk data");
			c->state = ST_DATA_LF;
			break;
		case ST_DATA_LF:
			if (*p++ != '\n')
				return fail(c, SPX_CHUNKED_EFORMAT,
					    "no CRLF after chunk data");
			c->state = ST_HEADER;
			break;
		default:
			return fail(c, SPX_CHUNKED_EFORMAT,
				    "data after the end of the body");
		}
	}
	return SPX_CHUNKED_OK;
}

enum spx_chunked_err spx_chunked_finish(struct spx_chunked *c)
{
	if (c->err)
		return c->err;
	if (c->state != ST_DONE)
		return fail(c, SPX_CHUNKED_ETRUNCATED,
			    "body ended after %llu payload bytes, before the "
			    "final chunk",
			    (unsigned long long)c->decoded);
	if (c->expect >= 0 && c->decoded != (uint64_t)c->expect)
		return fail(c, SPX_CHUNKED_ELENGTH,
			    "decoded %llu bytes, declared %lld",
			    (unsigned long long)c->decoded,
			    (long long)c->expect);
	return SPX_CHUNKED_OK;
}

const struct spx_kvlist *spx_chunked_trailers(const struct spx_chunked *c)
{
	return &c->trailers;
}

uint64_t spx_chunked_decoded(const struct spx_chunked *c)
{
	return c->decoded;
}

const char *spx_chunked_strerror(enum spx_chunked_err err)
{
	static const char *const s[SPX_CHUNKED_NERR] = {
		[SPX_CHUNKED_OK] = "ok",
		[SPX_CHUNKED_EFORMAT] = "malformed aws-chunked body",
		[SPX_CHUNKED_ELINE] = "aws-chunked line too long",
		[SPX_CHUNKED_ESIGNATURE] = "chunk signature does not match",
		[SPX_CHUNKED_ELENGTH] = "decoded length mismatch",
		[SPX_CHUNKED_ETRUNCATED] = "truncated aws-chunked body",
		[SPX_CHUNKED_ETRAILER] = "malformed trailer",
		[SPX_CHUNKED_EOUTPUT] = "output failed",
	};

	if ((unsigned)err >= SPX_CHUNKED_NERR)
		return "unknown error";
	return s[err];
}

struct spx_apierr spx_chunked_code(enum spx_chunked_err err)
{
	switch (err) {
	case SPX_CHUNKED_OK:
		return (struct spx_apierr){ 200, "OK", "OK" };
	case SPX_CHUNKED_ESIGNATURE:
		return (struct spx_apierr){
			403, "SignatureDoesNotMatch",
			"The request signature we calculated does not match "
			"the signature you provided. Check your key and "
			"signing method."
		};
	case SPX_CHUNKED_ELENGTH:
	case SPX_CHUNKED_ETRUNCATED:
		return (struct spx_apierr){
			400, "IncompleteBody",
			"You did not provide the number of bytes specified by "
			"the Content-Length HTTP header"
		};
	case SPX_CHUNKED_ETRAILER:
		return (struct spx_apierr){
			400, "MalformedTrailerError",
			"The request contained trailing data that was not "
			"well-formed or did not conform to our published "
			"schema."
		};
	case SPX_CHUNKED_EOUTPUT:
		return (struct spx_apierr){
			500, "InternalError",
			"We encountered an internal error. Please try again."
		};
	case SPX_CHUNKED_EFORMAT:
	case SPX_CHUNKED_ELINE:
	case SPX_CHUNKED_NERR:
		break;
	}
	return (struct spx_apierr){
		400, "InvalidRequest",
		"The request body is not valid aws-chunked encoding."
	};
}
