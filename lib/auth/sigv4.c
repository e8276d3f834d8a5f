#include "spx.h"

#include "checksum.h"
#include "hex.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth/sigv4.h"
#include "http/httpdate.h"
#include "http/query.h"

/* The latest instant a request time may name: 9999-12-31T23:59:59Z. */
#define TIME_MAX 253402300799LL

struct span {
	const char *p;
	size_t n;
};


/* ---- small helpers ---------------------------------------------------- */

static bool span_is(struct span s, const char *lit)
{
	size_t n = strlen(lit);

	return s.p && s.n == n && !memcmp(s.p, lit, n);
}

static bool is_sha256_hex(const char *s)
{
	return s && strlen(s) == 64 && spx_is_lower_hex(s, 64);
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_alnum(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_ws(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	       c == '\f';
}

/* RFC 7230 tchar, lowercase letters only. */
static bool is_lower_tchar(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static bool sha256(const void *p, size_t n, unsigned char out[32])
{
	return EVP_Digest(p, n, out, NULL, spx_md(SPX_CKSUM_SHA256), NULL) == 1;
}

static bool hmac_sha256(const void *key, size_t klen, const void *msg,
			size_t mlen, unsigned char out[32])
{
	if (!spx_hmac_sha256(key, klen, msg, mlen, out)) {
		OPENSSL_cleanse(out, 32);
		return false;
	}
	return true;
}

void spx_sigv4_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[32];

	if (!sha256(data, len, md))
		memset(md, 0, sizeof(md));
	spx_hex_encode(md, 32, out);
}

/* A piece of client input made safe for a log line: printable ASCII only,
 * at most 40 bytes. */
static const char *clip(char *buf, size_t cap, const char *s, size_t n)
{
	size_t i, j = 0, max = cap - 4 < 40 ? cap - 4 : 40;

	for (i = 0; i < n && j < max; i++)
		buf[j++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (i < n)
		for (int k = 0; k < 3; k++)
			buf[j++] = '.';
	buf[j] = '\0';
	return buf;
}

__attribute__((format(printf, 3, 4))) static enum spx_sigv4_err
fail(struct spx_sigv4_auth *a, enum spx_sigv4_err e, const char *fmt, ...)
{
	va_list ap;

	/* The detail is for logs: a truncated one is still useful. */
	va_start(ap, fmt);
	(void)vsnprintf(a->detail, sizeof(a->detail), fmt, ap);
	va_end(ap);
	return e;
}

static size_t header_count(const struct spx_kvlist *h, const char *name)
{
	size_t c = 0;

	for (size_t i = 0; h && i < h->n; i++)
		c += !strcasecmp(h->v[i].k, name);
	return c;
}

static const char *header_get(const struct spx_kvlist *h, const char *name)
{
	return h ? spx_kv_geti(h, name) : NULL;
}

/* ---- percent-encoding ------------------------------------------------- */

/* SigV4's encoding: RFC 3986, uppercase hex, '/' kept in S3 paths. */
static void uri_encode(struct spx_buf *b, const char *s, size_t n,
		       bool keep_slash)
{
	spx_uri_encode(s, n, keep_slash ? SPX_URI_SLASH : 0, b);
}

/* Lenient: a '%' without two hex digits stays a '%'; '+' stays '+'. The
 * result is binary (may hold NUL): it is only ever encoded again. */
static void uri_decode(struct spx_buf *b, const char *s, size_t n)
{
	(void)spx_uri_decode(s, n, SPX_URI_LENIENT, b);
}

/* Decode into a bounded C string; false if it does not fit or holds NUL. */
static bool decode_into(const char *s, size_t n, char *out, size_t cap)
{
	struct spx_buf b = SPX_BUF_INIT;
	bool ok;

	if (n > cap * 3) /* cannot fit: do not even decode */
		return false;
	uri_decode(&b, s, n);
	ok = b.len < cap && memchr(b.p, '\0', b.len) == NULL;
	if (ok)
		memcpy(out, b.p, b.len + 1);
	spx_buf_release(&b);
	return ok;
}

/* ---- query strings ---------------------------------------------------- */

struct qiter {
	const char *p, *end;
};

static void qiter_init(struct qiter *it, const char *q)
{
	it->p = q ? q : "";
	it->end = it->p + strlen(it->p);
}

/* Next non-empty "name[=value]" piece. */
static bool qnext(struct qiter *it, struct span *name, struct span *val)
{
	while (it->p < it->end) {
		const char *s = it->p, *e = memchr(s, '&', (size_t)(it->end - s));
		const char *eq;

		if (!e)
			e = it->end;
		it->p = e < it->end ? e + 1 : e;
		if (e == s)
			continue;
		eq = memchr(s, '=', (size_t)(e - s));
		name->p = s;
		name->n = (size_t)((eq ? eq : e) - s);
		val->p = eq ? eq + 1 : e;
		val->n = eq ? (size_t)(e - eq - 1) : 0;
		return true;
	}
	return false;
}

/* Is the decoded name exactly lit? Cheap: names we look for are short. */
static bool qname_is(struct span name, const char *lit)
{
	char buf[64];

	if (name.n >= sizeof(buf) * 3 || !decode_into(name.p, name.n, buf,
						      sizeof(buf)))
		return false;
	return !strcmp(buf, lit);
}

static bool qname_is_ci(struct span name, const char *lit)
{
	char buf[64];

	if (name.n >= sizeof(buf) * 3 || !decode_into(name.p, name.n, buf,
						      sizeof(buf)))
		return false;
	return !strcasecmp(buf, lit);
}

struct qparam {
	const char *name, *val;
	size_t nlen, vlen;
};

static int span_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

static int qparam_cmp(const void *x, const void *y)
{
	const struct qparam *a = x, *b = y;
	int c = span_cmp(a->name, a->nlen, b->name, b->nlen);

	return c ? c : span_cmp(a->val, a->vlen, b->val, b->vlen);
}

/* The canonical query string. Bounded by the caller (parse counts the
 * parameters); here at most SPX_SIGV4_QUERY_PARAMS_MAX are kept. */
static void canonical_query(struct spx_buf *out, const char *query,
			    bool presigned)
{
	struct spx_buf store = SPX_BUF_INIT, tmp = SPX_BUF_INIT;
	struct qparam *v = NULL;
	size_t n = 0, cap = 0, (*off)[4] = NULL;
	struct qiter it;
	struct span name, val;

	qiter_init(&it, query);
	while (qnext(&it, &name, &val) && n < SPX_SIGV4_QUERY_PARAMS_MAX) {
		if (presigned && qname_is(name, "X-Amz-Signature"))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			off = spx_realloc(off, cap * sizeof(*off));
		}
		spx_buf_reset(&tmp);
		uri_decode(&tmp, name.p, name.n);
		off[n][0] = store.len;
		uri_encode(&store, tmp.p, tmp.len, false);
		off[n][1] = store.len - off[n][0];
		spx_buf_reset(&tmp);
		uri_decode(&tmp, val.p, val.n);
		off[n][2] = store.len;
		uri_encode(&store, tmp.p, tmp.len, false);
		off[n][3] = store.len - off[n][2];
		n++;
	}
	/* Pointers only once the store no longer moves. */
	if (n)
		v = spx_malloc(n * sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		v[i].name = store.p + off[i][0];
		v[i].nlen = off[i][1];
		v[i].val = store.p + off[i][2];
		v[i].vlen = off[i][3];
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), qparam_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i)
			spx_buf_addc(out, '&');
		spx_buf_add(out, v[i].name, v[i].nlen);
		spx_buf_addc(out, '=');
		spx_buf_add(out, v[i].val, v[i].vlen);
	}
	free(v);
	free(off);
	spx_buf_release(&store);
	spx_buf_release(&tmp);
}

/* ---- canonical URI ---------------------------------------------------- */

static void canonical_uri(struct spx_buf *out, const char *path, bool s3)
{
	struct spx_buf seg = SPX_BUF_INIT;
	const char *p = path && *path ? path : "/";
	size_t n = strlen(p);

	if (s3) {
		if (p[0] != '/')
			spx_buf_addc(out, '/');
		/* Each segment decoded and encoded once: "%2F" inside a
		 * segment stays "%2F", nothing is normalized. */
		for (size_t i = 0; i < n;) {
			size_t j = i;

			if (p[i] == '/') {
				spx_buf_addc(out, '/');
				i++;
				continue;
			}
			while (j < n && p[j] != '/')
				j++;
			spx_buf_reset(&seg);
			uri_decode(&seg, p + i, j - i);
			uri_encode(out, seg.p, seg.len, false);
			i = j;
		}
	} else {
		/* RFC 3986 remove_dot_segments, and empty segments dropped as
		 * AWS does, over the raw path; then the result is encoded
		 * (a second time, the raw path being encoded already). */
		struct span *st = spx_malloc((n / 2 + 2) * sizeof(*st));
		size_t k = 0;

		for (size_t i = 0; i < n;) {
			size_t j = i;

			while (j < n && p[j] != '/')
				j++;
			if (j - i == 2 && p[i] == '.' && p[i + 1] == '.') {
				if (k)
					k--;
			} else if (j > i && !(j - i == 1 && p[i] == '.')) {
				st[k].p = p + i;
				st[k].n = j - i;
				k++;
			}
			i = j + 1;
		}
		spx_buf_reset(&seg);
		spx_buf_addc(&seg, '/');
		for (size_t i = 0; i < k; i++) {
			if (i)
				spx_buf_addc(&seg, '/');
			spx_buf_add(&seg, st[i].p, st[i].n);
		}
		if (k && p[n - 1] == '/')
			spx_buf_addc(&seg, '/');
		free(st);
		uri_encode(out, seg.p, seg.len, true);
	}
	spx_buf_release(&seg);
}

/* ---- canonical headers ------------------------------------------------ */

static void add_trimmed(struct spx_buf *out, const char *v)
{
	bool space = false, any = false;

	for (; *v; v++) {
		if (is_ws((unsigned char)*v)) {
			space = any;
			continue;
		}
		if (space)
			spx_buf_addc(out, ' ');
		spx_buf_addc(out, *v);
		space = false;
		any = true;
	}
}

/* Does the ';' list hold name[0..n) (compared without case)? */
static bool list_has(const char *list, const char *name, size_t n)
{
	const char *p = list;

	while (*p) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && !strncasecmp(p, name, n))
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

static void canonical_headers(struct spx_buf *out, const struct spx_kvlist *h,
			      const char *signed_headers)
{
	const char *p = signed_headers;

	while (*p) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		bool first = true;

		spx_buf_add(out, p, len);
		spx_buf_addc(out, ':');
		for (size_t i = 0; h && i < h->n; i++) {
			if (strlen(h->v[i].k) != len ||
			    strncasecmp(h->v[i].k, p, len))
				continue;
			if (!first)
				spx_buf_addc(out, ',');
			add_trimmed(out, h->v[i].v);
			first = false;
		}
		spx_buf_addc(out, '\n');
		if (!e)
			break;
		p = e + 1;
	}
}

/* ---- canonical request and string to sign ----------------------------- */

static void build_canonical(const struct spx_sigv4_req *req,
			    const struct spx_sigv4_auth *a,
			    const char *payload_hash, struct spx_buf *out)
{
	spx_buf_reset(out);
	spx_buf_adds(out, req->method ? req->method : "");
	spx_buf_addc(out, '\n');
	canonical_uri(out, req->path, !strcmp(a->service, "s3"));
	spx_buf_addc(out, '\n');
	canonical_query(out, req->query, a->presigned);
	spx_buf_addc(out, '\n');
	canonical_headers(out, req->headers, a->signed_headers);
	spx_buf_addc(out, '\n');
	spx_buf_adds(out, a->signed_headers);
	spx_buf_addc(out, '\n');
	spx_buf_adds(out, payload_hash);
}

static bool build_sts(const struct spx_sigv4_auth *a,
		      const struct spx_buf *canonical, struct spx_buf *out)
{
	unsigned char md[32];
	char hex[65];
	bool ok = sha256(canonical->p, canonical->len, md);

	spx_hex_encode(md, 32, hex);
	spx_buf_reset(out);
	spx_buf_addf(out, "%s\n%s\n%s\n%s", SPX_SIGV4_ALGORITHM, a->amz_date,
		     a->scope, hex);
	return ok;
}

static bool derive_key_uncached(const char *secret, const char *date,
				const char *region, const char *service,
				unsigned char key[32]);

/* The signing key changes once a day per key, region and service, and
 * deriving it is four HMACs: each thread keeps the last one it made. */
static _Thread_local struct {
	bool ok;
	char secret[SPX_SIGV4_SECRET_MAX + 1], date[9], region[64],
		service[16];
	unsigned char key[32];
} key_cache;

static bool cache_fits(const char *v, size_t cap)
{
	return strlen(v) < cap;
}

static bool derive_key(const char *secret, const char *date,
		       const char *region, const char *service,
		       unsigned char key[32])
{
	bool fits = cache_fits(secret, sizeof(key_cache.secret)) &&
		    cache_fits(date, sizeof(key_cache.date)) &&
		    cache_fits(region, sizeof(key_cache.region)) &&
		    cache_fits(service, sizeof(key_cache.service));

	if (fits && key_cache.ok && !strcmp(key_cache.date, date) &&
	    !strcmp(key_cache.region, region) &&
	    !strcmp(key_cache.service, service) &&
	    strlen(key_cache.secret) == strlen(secret) &&
	    !CRYPTO_memcmp(key_cache.secret, secret, strlen(secret))) {
		memcpy(key, key_cache.key, 32);
		return true;
	}
	if (!derive_key_uncached(secret, date, region, service, key))
		return false;
	if (fits) {
		snprintf(key_cache.secret, sizeof(key_cache.secret), "%s",
			 secret);
		snprintf(key_cache.date, sizeof(key_cache.date), "%s", date);
		snprintf(key_cache.region, sizeof(key_cache.region), "%s",
			 region);
		snprintf(key_cache.service, sizeof(key_cache.service), "%s",
			 service);
		memcpy(key_cache.key, key, 32);
		key_cache.ok = true;
	}
	return true;
}

static bool derive_key_uncached(const char *secret, const char *date,
				const char *region, const char *service,
				unsigned char key[32])
{
	char k0[4 + SPX_SIGV4_SECRET_MAX];
	size_t n = strlen(secret);
	unsigned char a[32], b[32];
	bool ok;

	if (n > SPX_SIGV4_SECRET_MAX)
		return false;
	memcpy(k0, "AWS4", 4);
	memcpy(k0 + 4, secret, n);
	ok = hmac_sha256(k0, 4 + n, date, strlen(date), a) &&
	     hmac_sha256(a, 32, region, strlen(region), b) &&
	     hmac_sha256(b, 32, service, strlen(service), a) &&
	     hmac_sha256(a, 32, "aws4_request", 12, key);
	OPENSSL_cleanse(k0, sizeof(k0));
	OPENSSL_cleanse(a, sizeof(a));
	OPENSSL_cleanse(b, sizeof(b));
	if (!ok)
		OPENSSL_cleanse(key, 32);
	return ok;
}

int spx_sigv4_signing_key(const char *secret, const char *date,
			  const char *region, const char *service,
			  unsigned char key[32])
{
	if (strlen(secret) > SPX_SIGV4_SECRET_MAX)
		return spx_error(SPX_USAGE, "secret key longer than %d bytes",
				 SPX_SIGV4_SECRET_MAX);
	if (!derive_key(secret, date, region, service, key))
		return spx_error(SPX_FAIL, "cannot compute hmac-sha256");
	return 0;
}

/* ---- parse ------------------------------------------------------------ */

static bool name_char(int c)
{
	return is_alnum(c) || c == '-' || c == '_';
}

static bool all_chars(const char *s, size_t n, bool (*ok)(int))
{
	for (size_t i = 0; i < n; i++)
		if (!ok((unsigned char)s[i]))
			return false;
	return true;
}

static enum spx_sigv4_err parse_credential(const char *s, size_t n,
					   struct spx_sigv4_auth *a)
{
	struct span part[5];
	size_t k = 0, start = 0;
	char c[48];

	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '/')
			continue;
		if (k == 5)
			goto bad;
		part[k].p = s + start;
		part[k].n = i - start;
		k++;
		start = i + 1;
	}
	if (k != 5)
		goto bad;
	if (!part[0].n || part[0].n > SPX_SIGV4_KEY_MAX ||
	    !all_chars(part[0].p, part[0].n, name_char))
		return fail(a, SPX_SIGV4_ECREDENTIAL,
			    "invalid access key in credential '%s'",
			    clip(c, sizeof(c), s, n));
	if (!spx_amz_day_valid(part[1].p, part[1].n))
		return fail(a, SPX_SIGV4_ECREDENTIAL,
			    "invalid date in credential '%s'",
			    clip(c, sizeof(c), s, n));
	if (!part[2].n || part[2].n > SPX_SIGV4_REGION_MAX ||
	    !all_chars(part[2].p, part[2].n, name_char))
		return fail(a, SPX_SIGV4_ECREDENTIAL,
			    "invalid region in credential '%s'",
			    clip(c, sizeof(c), s, n));
	if (!part[3].n || part[3].n > SPX_SIGV4_SERVICE_MAX ||
	    !all_chars(part[3].p, part[3].n, name_char))
		return fail(a, SPX_SIGV4_ECREDENTIAL,
			    "invalid service in credential '%s'",
			    clip(c, sizeof(c), s, n));
	if (!span_is(part[4], "aws4_request"))
		goto bad;
	memcpy(a->access_key, part[0].p, part[0].n);
	a->access_key[part[0].n] = '\0';
	memcpy(a->date, part[1].p, 8);
	a->date[8] = '\0';
	memcpy(a->region, part[2].p, part[2].n);
	a->region[part[2].n] = '\0';
	memcpy(a->service, part[3].p, part[3].n);
	a->service[part[3].n] = '\0';
	/* Cannot truncate: the parts are bounded by the scope's size. */
	(void)snprintf(a->scope, sizeof(a->scope), "%s/%s/%s/aws4_request",
		       a->date, a->region, a->service);
	return SPX_SIGV4_OK;
bad:
	return fail(a, SPX_SIGV4_ECREDENTIAL,
		    "credential '%s' is not key/date/region/service/aws4_request",
		    clip(c, sizeof(c), s, n));
}

static enum spx_sigv4_err parse_signed_headers(const char *s, size_t n,
					       struct spx_sigv4_auth *a)
{
	const char *prev = NULL;
	size_t prevn = 0, count = 0;
	char c[48];

	if (n > SPX_SIGV4_SIGNED_HEADERS_MAX)
		return fail(a, SPX_SIGV4_ESIGNEDHEADERS,
			    "signed headers longer than %d bytes",
			    SPX_SIGV4_SIGNED_HEADERS_MAX);
	for (size_t i = 0; i <= n;) {
		size_t j = i;

		while (j < n && s[j] != ';')
			j++;
		if (j == i)
			return fail(a, SPX_SIGV4_ESIGNEDHEADERS,
				    "empty name in signed headers '%s'",
				    clip(c, sizeof(c), s, n));
		if (!all_chars(s + i, j - i, is_lower_tchar))
			return fail(a, SPX_SIGV4_ESIGNEDHEADERS,
				    "signed header '%s' is not a lowercase name",
				    clip(c, sizeof(c), s + i, j - i));
		if (prev && span_cmp(prev, prevn, s + i, j - i) >= 0)
			return fail(a, SPX_SIGV4_ESIGNEDHEADERS,
				    "signed headers are not sorted at '%s'",
				    clip(c, sizeof(c), s + i, j - i));
		if (++count > SPX_SIGV4_SIGNED_HEADERS_NMAX)
			return fail(a, SPX_SIGV4_ESIGNEDHEADERS,
				    "more than %d signed headers",
				    SPX_SIGV4_SIGNED_HEADERS_NMAX);
		prev = s + i;
		prevn = j - i;
		i = j + 1;
	}
	memcpy(a->signed_headers, s, n);
	a->signed_headers[n] = '\0';
	if (!list_has(a->signed_headers, "host", 4))
		return fail(a, SPX_SIGV4_ESIGNEDHEADERS,
			    "host is not a signed header");
	return SPX_SIGV4_OK;
}

static enum spx_sigv4_err parse_signature(const char *s, size_t n,
					  struct spx_sigv4_auth *a)
{
	if (n != 64 || !spx_is_lower_hex(s, 64))
		return fail(a, SPX_SIGV4_ESIGNATURE_FORMAT,
			    "signature is not 64 lowercase hex digits");
	memcpy(a->signature, s, 64);
	a->signature[64] = '\0';
	return SPX_SIGV4_OK;
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." in any
 * order of the three, with optional white space after the commas. */
static enum spx_sigv4_err parse_authorization(const char *h,
					      struct spx_sigv4_auth *a,
					      struct span *cred,
					      struct span *sh, struct span *sig)
{
	size_t n = strlen(h), alen = strlen(SPX_SIGV4_ALGORITHM);
	const char *p = h, *end = h + n, *alg;
	char c[48];

	if (n > SPX_SIGV4_AUTH_HEADER_MAX)
		return fail(a, SPX_SIGV4_EHEADER,
			    "authorization header longer than %d bytes",
			    SPX_SIGV4_AUTH_HEADER_MAX);
	while (p < end && is_ows(*p))
		p++;
	alg = p;
	while (p < end && !is_ows(*p))
		p++;
	if ((size_t)(p - alg) != alen || memcmp(alg, SPX_SIGV4_ALGORITHM, alen))
		return fail(a, SPX_SIGV4_EALGORITHM,
			    "unsupported authorization type '%s'",
			    clip(c, sizeof(c), alg, (size_t)(p - alg)));
	while (p < end && is_ows(*p))
		p++;
	if (p == end)
		return fail(a, SPX_SIGV4_EHEADER,
			    "authorization header has no components");
	for (;;) {
		const char *name = p, *val;
		struct span *dst = NULL, nm;

		while (p < end && *p != '=' && *p != ',' && !is_ows(*p))
			p++;
		nm.p = name;
		nm.n = (size_t)(p - name);
		if (p == end || *p != '=')
			return fail(a, SPX_SIGV4_EHEADER,
				    "authorization component '%s' has no '='",
				    clip(c, sizeof(c), nm.p, nm.n));
		val = ++p;
		while (p < end && *p != ',' && !is_ows(*p))
			p++;
		if (span_is(nm, "Credential"))
			dst = cred;
		else if (span_is(nm, "SignedHeaders"))
			dst = sh;
		else if (span_is(nm, "Signature"))
			dst = sig;
		if (!dst)
			return fail(a, SPX_SIGV4_EHEADER,
				    "unknown authorization component '%s'",
				    clip(c, sizeof(c), nm.p, nm.n));
		if (dst->p)
			return fail(a, SPX_SIGV4_EHEADER,
				    "repeated authorization component '%s'",
				    clip(c, sizeof(c), nm.p, nm.n));
		if (p == val)
			return fail(a, SPX_SIGV4_EHEADER,
				    "empty authorization component '%s'",
				    clip(c, sizeof(c), nm.p, nm.n));
		dst->p = val;
		dst->n = (size_t)(p - val);
		while (p < end && is_ows(*p))
			p++;
		if (p == end)
			break;
		if (*p != ',')
			return fail(a, SPX_SIGV4_EHEADER,
				    "unexpected '%s' in authorization header",
				    clip(c, sizeof(c), p, (size_t)(end - p)));
		p++;
		while (p < end && is_ows(*p))
			p++;
		if (p == end)
			return fail(a, SPX_SIGV4_EHEADER,
				    "authorization header ends with a comma");
	}
	if (!cred->p)
		return fail(a, SPX_SIGV4_EHEADER,
			    "authorization header has no Credential");
	if (!sh->p)
		return fail(a, SPX_SIGV4_EHEADER,
			    "authorization header has no SignedHeaders");
	if (!sig->p)
		return fail(a, SPX_SIGV4_EHEADER,
			    "authorization header has no Signature");
	return SPX_SIGV4_OK;
}

/* The X-Amz-* parameters of a presigned request. */
enum {
	QP_ALGORITHM,
	QP_CREDENTIAL,
	QP_DATE,
	QP_EXPIRES,
	QP_SIGNED_HEADERS,
	QP_SIGNATURE,
	QP_TOKEN,
	QP_CONTENT_SHA256,
	QP_V2_KEY, /* SigV2: AWSAccessKeyId */
	QP_V2_SIGNATURE,
	QP_N
};

static const char *const qp_names[QP_N] = {
	"X-Amz-Algorithm",     "X-Amz-Credential", "X-Amz-Date",
	"X-Amz-Expires",       "X-Amz-SignedHeaders", "X-Amz-Signature",
	"X-Amz-Security-Token", "X-Amz-Content-Sha256", "AWSAccessKeyId",
	"Signature",
};

struct qauth {
	struct span v[QP_N];
	unsigned count[QP_N];
	size_t nparams;
};

static void scan_query(const char *query, struct qauth *q)
{
	struct qiter it;
	struct span name, val;

	memset(q, 0, sizeof(*q));
	qiter_init(&it, query);
	while (qnext(&it, &name, &val)) {
		q->nparams++;
		/* Only names that may be ours are decoded. */
		if (name.n > 3 * 32)
			continue;
		for (int i = 0; i < QP_N; i++) {
			bool match = i == QP_CONTENT_SHA256
					     ? qname_is_ci(name, qp_names[i])
					     : qname_is(name, qp_names[i]);

			if (match) {
				if (!q->count[i]++)
					q->v[i] = val;
				break;
			}
		}
	}
}

static enum spx_sigv4_err parse_presigned(const struct qauth *q,
					  struct spx_sigv4_auth *a)
{
	/* Decoded parameter values, bounded by what each may hold. */
	char alg[32], cred[SPX_SIGV4_KEY_MAX + SPX_SIGV4_SCOPE_MAX + 2];
	char date[17], exp[16], sig[65];
	char *sh = NULL;
	enum spx_sigv4_err e;
	time_t t;

	a->presigned = true;
	for (int i = 0; i < QP_V2_KEY; i++)
		if (q->count[i] > 1)
			return fail(a, SPX_SIGV4_EQUERY,
				    "repeated query parameter %s", qp_names[i]);
	if (!q->count[QP_ALGORITHM])
		return fail(a, SPX_SIGV4_EQUERY, "no X-Amz-Algorithm");
	if (!decode_into(q->v[QP_ALGORITHM].p, q->v[QP_ALGORITHM].n, alg,
			 sizeof(alg)) ||
	    strcmp(alg, SPX_SIGV4_ALGORITHM))
		return fail(a, SPX_SIGV4_EALGORITHM,
			    "X-Amz-Algorithm is not " SPX_SIGV4_ALGORITHM);
	for (int i = QP_CREDENTIAL; i <= QP_SIGNATURE; i++)
		if (!q->count[i] && i != QP_EXPIRES)
			return fail(a, SPX_SIGV4_EQUERY, "no %s", qp_names[i]);
	if (!decode_into(q->v[QP_CREDENTIAL].p, q->v[QP_CREDENTIAL].n, cred,
			 sizeof(cred)))
		return fail(a, SPX_SIGV4_ECREDENTIAL,
			    "X-Amz-Credential is too long or holds NUL");
	if ((e = parse_credential(cred, strlen(cred), a)))
		return e;
	if (!q->count[QP_EXPIRES] && !strcmp(a->service, "s3"))
		return fail(a, SPX_SIGV4_EQUERY, "no X-Amz-Expires");
	if (!decode_into(q->v[QP_SIGNATURE].p, q->v[QP_SIGNATURE].n, sig,
			 sizeof(sig)))
		return fail(a, SPX_SIGV4_ESIGNATURE_FORMAT,
			    "X-Amz-Signature is not 64 lowercase hex digits");
	if ((e = parse_signature(sig, strlen(sig), a)))
		return e;
	sh = spx_malloc(SPX_SIGV4_SIGNED_HEADERS_MAX + 1);
	if (!decode_into(q->v[QP_SIGNED_HEADERS].p, q->v[QP_SIGNED_HEADERS].n,
			 sh, SPX_SIGV4_SIGNED_HEADERS_MAX + 1))
		e = fail(a, SPX_SIGV4_ESIGNEDHEADERS,
			 "X-Amz-SignedHeaders is too long or holds NUL");
	else
		e = parse_signed_headers(sh, strlen(sh), a);
	free(sh);
	if (e)
		return e;
	if (!decode_into(q->v[QP_DATE].p, q->v[QP_DATE].n, date, sizeof(date)) ||
	    !spx_amz_date_parse(date, strlen(date), &t))
		return fail(a, SPX_SIGV4_EDATE,
			    "X-Amz-Date is not YYYYMMDDTHHMMSSZ");
	memcpy(a->amz_date, date, 17);
	a->time = t;
	if (q->count[QP_EXPIRES]) {
		size_t n;
		long v = 0;

		if (!decode_into(q->v[QP_EXPIRES].p, q->v[QP_EXPIRES].n, exp,
				 sizeof(exp)) ||
		    !(n = strlen(exp)) || n > 7 ||
		    !all_chars(exp, n, is_digit))
			return fail(a, SPX_SIGV4_EEXPIRES,
				    "X-Amz-Expires is not a number of seconds");
		for (size_t i = 0; i < n; i++)
			v = v * 10 + (exp[i] - '0');
		if (v < 1 || v > SPX_SIGV4_MAX_EXPIRES)
			return fail(a, SPX_SIGV4_EEXPIRES,
				    "X-Amz-Expires %ld is not within 1..%d", v,
				    SPX_SIGV4_MAX_EXPIRES);
		a->expires = v;
	}
	if (q->count[QP_TOKEN] &&
	    !decode_into(q->v[QP_TOKEN].p, q->v[QP_TOKEN].n, a->security_token,
			 sizeof(a->security_token)))
		return fail(a, SPX_SIGV4_ETOOBIG,
			    "X-Amz-Security-Token is too long or holds NUL");
	return SPX_SIGV4_OK;
}

static enum spx_sigv4_err parse_header_auth(const struct spx_sigv4_req *req,
					    const char *authz,
					    struct spx_sigv4_auth *a)
{
	struct span cred = { 0 }, sh = { 0 }, sig = { 0 };
	enum spx_sigv4_err e;
	const char *d, *tok;
	size_t nx = header_count(req->headers, "x-amz-date");

	if ((e = parse_authorization(authz, a, &cred, &sh, &sig)))
		return e;
	if ((e = parse_credential(cred.p, cred.n, a)))
		return e;
	if ((e = parse_signature(sig.p, sig.n, a)))
		return e;
	if ((e = parse_signed_headers(sh.p, sh.n, a)))
		return e;
	if (nx > 1)
		return fail(a, SPX_SIGV4_EDATE, "repeated x-amz-date header");
	if (nx == 1) {
		d = header_get(req->headers, "x-amz-date");
		if (!spx_amz_date_parse(d, strlen(d), &a->time))
			return fail(a, SPX_SIGV4_EDATE,
				    "x-amz-date is not YYYYMMDDTHHMMSSZ");
		memcpy(a->amz_date, d, 17);
		if (!list_has(a->signed_headers, "x-amz-date", 10))
			return fail(a, SPX_SIGV4_ESIGNEDHEADERS,
				    "x-amz-date is not a signed header");
	} else {
		if (header_count(req->headers, "date") != 1)
			return fail(a, SPX_SIGV4_EDATE,
				    "no x-amz-date or date header");
		d = header_get(req->headers, "date");
		if (spx_http_date_parse(d, &a->time) < 0 ||
		    !spx_amz_date(a->time, a->amz_date))
			return fail(a, SPX_SIGV4_EDATE,
				    "date header is not an IMF-fixdate");
		if (!list_has(a->signed_headers, "date", 4))
			return fail(a, SPX_SIGV4_ESIGNEDHEADERS,
				    "date is not a signed header");
	}
	if (header_count(req->headers, "x-amz-security-token") > 1)
		return fail(a, SPX_SIGV4_EHEADER,
			    "repeated x-amz-security-token header");
	tok = header_get(req->headers, "x-amz-security-token");
	if (tok) {
		size_t n = strlen(tok);

		if (n > SPX_SIGV4_TOKEN_MAX)
			return fail(a, SPX_SIGV4_ETOOBIG,
				    "x-amz-security-token longer than %d bytes",
				    SPX_SIGV4_TOKEN_MAX);
		memcpy(a->security_token, tok, n + 1);
	}
	return SPX_SIGV4_OK;
}

static enum spx_sigv4_err classify_payload(const char *v, bool s3,
					   bool presigned,
					   struct spx_sigv4_auth *a)
{
	static const struct {
		const char *s;
		enum spx_sigv4_payload kind;
	} known[] = {
		{ SPX_SIGV4_UNSIGNED_PAYLOAD, SPX_SIGV4_PAYLOAD_UNSIGNED },
		{ SPX_SIGV4_STREAMING_PAYLOAD, SPX_SIGV4_PAYLOAD_STREAMING },
		{ SPX_SIGV4_STREAMING_PAYLOAD_TRAILER,
		  SPX_SIGV4_PAYLOAD_STREAMING_TRAILER },
		{ SPX_SIGV4_STREAMING_UNSIGNED_TRAILER,
		  SPX_SIGV4_PAYLOAD_STREAMING_UNSIGNED_TRAILER },
	};
	size_t n = strlen(v);
	char c[48];

	if (n == 64) {
		for (size_t i = 0; i < 32; i++) {
			int h = spx_hexval(v[2 * i]), l = spx_hexval(v[2 * i + 1]);

			if (h < 0 || l < 0)
				goto bad;
			a->payload_sha256[i] = (unsigned char)(h << 4 | l);
		}
		a->payload = SPX_SIGV4_PAYLOAD_SHA256;
		memcpy(a->payload_hash, v, 65);
		return SPX_SIGV4_OK;
	}
	/* Only S3 accepts a body the signature does not cover, and only a
	 * header-signed request can stream. */
	for (size_t i = 0; s3 && i < SPX_ARRAY_SIZE(known); i++) {
		if (strcmp(v, known[i].s))
			continue;
		if (presigned && known[i].kind != SPX_SIGV4_PAYLOAD_UNSIGNED)
			break;
		a->payload = known[i].kind;
		memcpy(a->payload_hash, v, n + 1);
		return SPX_SIGV4_OK;
	}
bad:
	return fail(a, SPX_SIGV4_ECONTENTSHA,
		    "x-amz-content-sha256 '%s' is not allowed here",
		    clip(c, sizeof(c), v, n));
}

enum spx_sigv4_err spx_sigv4_parse(const struct spx_sigv4_req *req,
				   struct spx_sigv4_auth *a)
{
	const struct spx_kvlist *h = req->headers;
	const char *authz = header_get(h, "authorization"), *v;
	struct qauth qa, *q = &qa;
	enum spx_sigv4_err e;
	bool qauth, s3;
	char c[48];

	memset(a, 0, sizeof(*a));
	scan_query(req->query, q);
	qauth = q->count[QP_ALGORITHM] || q->count[QP_CREDENTIAL] ||
		q->count[QP_SIGNATURE] || q->count[QP_SIGNED_HEADERS];
	if (header_count(h, "authorization") > 1) {
		e = fail(a, SPX_SIGV4_EHEADER, "repeated authorization header");
	} else if (q->nparams > SPX_SIGV4_QUERY_PARAMS_MAX) {
		e = fail(a, SPX_SIGV4_ETOOBIG, "more than %d query parameters",
			 SPX_SIGV4_QUERY_PARAMS_MAX);
	} else if (authz && qauth) {
		e = fail(a, SPX_SIGV4_EMULTIPLE,
			 "both an authorization header and X-Amz-* parameters");
	} else if (authz) {
		e = parse_header_auth(req, authz, a);
	} else if (qauth) {
		e = parse_presigned(q, a);
	} else if (q->count[QP_V2_KEY] && q->count[QP_V2_SIGNATURE]) {
		e = fail(a, SPX_SIGV4_EALGORITHM,
			 "signature version 2 query authentication");
	} else {
		e = fail(a, SPX_SIGV4_ENOAUTH, "no authentication");
	}
	if (e)
		return e;

	if (memcmp(a->date, a->amz_date, 8))
		return fail(a, SPX_SIGV4_ESCOPEDATE,
			    "credential date %s is not the date of %s", a->date,
			    a->amz_date);
	if (req->region && strcmp(req->region, a->region))
		return fail(a, SPX_SIGV4_EREGION,
			    "region '%s' is wrong; expecting '%s'", a->region,
			    clip(c, sizeof(c), req->region,
				 strlen(req->region)));
	if (req->service && strcmp(req->service, a->service))
		return fail(a, SPX_SIGV4_ESERVICE,
			    "service '%s' is wrong; expecting '%s'", a->service,
			    clip(c, sizeof(c), req->service,
				 strlen(req->service)));
	s3 = !strcmp(a->service, "s3");

	/* Every signed header must be there... */
	for (const char *p = a->signed_headers; *p;) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		bool found = false;

		for (size_t i = 0; h && i < h->n && !found; i++)
			found = strlen(h->v[i].k) == n &&
				!strncasecmp(h->v[i].k, p, n);
		if (!found) {
			(void)snprintf(a->header, sizeof(a->header), "%s",
				       clip(c, sizeof(c), p, n));
			return fail(a, SPX_SIGV4_EMISSINGHEADER,
				    "signed header '%s' is absent", a->header);
		}
		if (!end)
			break;
		p = end + 1;
	}
	/* ... and, for S3, every x-amz-* header signed. */
	for (size_t i = 0; s3 && h && i < h->n; i++) {
		const char *k = h->v[i].k;

		if (strncasecmp(k, "x-amz-", 6) ||
		    list_has(a->signed_headers, k, strlen(k)))
			continue;
		(void)snprintf(a->header, sizeof(a->header), "%s",
			       clip(c, sizeof(c), k, strlen(k)));
		for (char *p = a->header; *p; p++)
			*p = (char)lower((unsigned char)*p);
		return fail(a, SPX_SIGV4_EUNSIGNED,
			    "header '%s' is present but not signed",
			    a->header);
	}

	/* The payload hash the client signed. */
	if (header_count(h, "x-amz-content-sha256") > 1)
		return fail(a, SPX_SIGV4_ECONTENTSHA,
			    "repeated x-amz-content-sha256 header");
	v = header_get(h, "x-amz-content-sha256");
	if (a->presigned && s3) {
		char qv[65];

		/* (parse_presigned refused a repeated one) */
		if (!q->count[QP_CONTENT_SHA256]) {
			a->payload = SPX_SIGV4_PAYLOAD_UNSIGNED;
			memcpy(a->payload_hash, SPX_SIGV4_UNSIGNED_PAYLOAD,
			       sizeof(SPX_SIGV4_UNSIGNED_PAYLOAD));
			return SPX_SIGV4_OK;
		}
		if (!decode_into(q->v[QP_CONTENT_SHA256].p,
				 q->v[QP_CONTENT_SHA256].n, qv, sizeof(qv)))
			return fail(a, SPX_SIGV4_ECONTENTSHA,
				    "X-Amz-Content-Sha256 is not a hash");
		return classify_payload(qv, s3, true, a);
	}
	if (v)
		return classify_payload(v, s3, a->presigned, a);
	a->payload = SPX_SIGV4_PAYLOAD_BODY;
	return SPX_SIGV4_OK;
}

/* ---- verify ----------------------------------------------------------- */

enum spx_sigv4_err spx_sigv4_verify(const struct spx_sigv4_req *req,
				    struct spx_sigv4_auth *a,
				    const char *secret, time_t now)
{
	unsigned char key[32];
	enum spx_sigv4_err e;

	a->verified = false;
	OPENSSL_cleanse(a->signing_key, sizeof(a->signing_key));
	if (!a->scope[0])
		return fail(a, SPX_SIGV4_ESIGNATURE,
			    "verify called without a successful parse");
	if (!secret || !derive_key(secret, a->date, a->region, a->service, key))
		return fail(a, SPX_SIGV4_ESIGNATURE,
			    "cannot derive the signing key");
	e = spx_sigv4_verify_key(req, a, key, now);
	OPENSSL_cleanse(key, sizeof(key));
	return e;
}

static enum spx_sigv4_err check_clock(struct spx_sigv4_auth *a, time_t now)
{
	long long t = (long long)a->time, n = (long long)now;

	/* Both are bounded, so the differences below cannot overflow. */
	if (n < 0 || n > TIME_MAX)
		return fail(a, SPX_SIGV4_ESKEW, "the server clock is invalid");
	if (a->presigned && a->expires) {
		if (t - n > SPX_SIGV4_MAX_SKEW)
			return fail(a, SPX_SIGV4_ENOTYET,
				    "request time %s is %lld s in the future",
				    a->amz_date, t - n);
		if (n > t + a->expires)
			return fail(a, SPX_SIGV4_EEXPIRED,
				    "request expired %lld s ago",
				    n - t - a->expires);
		return SPX_SIGV4_OK;
	}
	if (t - n > SPX_SIGV4_MAX_SKEW || n - t > SPX_SIGV4_MAX_SKEW)
		return fail(a, SPX_SIGV4_ESKEW,
			    "request time %s is %lld s from the server's",
			    a->amz_date, n - t);
	return SPX_SIGV4_OK;
}

enum spx_sigv4_err spx_sigv4_verify_key(const struct spx_sigv4_req *req,
					struct spx_sigv4_auth *a,
					const unsigned char key[32],
					time_t now)
{
	struct spx_buf canon = SPX_BUF_INIT, sts = SPX_BUF_INIT;
	unsigned char mac[32];
	char want[65];
	const char *ph = a->payload_hash;
	enum spx_sigv4_err e;
	bool ok;

	a->verified = false;
	OPENSSL_cleanse(a->signing_key, sizeof(a->signing_key));
	if (!a->scope[0] || a->payload == SPX_SIGV4_PAYLOAD_NONE)
		return fail(a, SPX_SIGV4_ESIGNATURE,
			    "verify called without a successful parse");
	if ((e = check_clock(a, now)))
		return e;
	if (a->payload == SPX_SIGV4_PAYLOAD_BODY) {
		if (!is_sha256_hex(req->payload_hash))
			return fail(a, SPX_SIGV4_ENOCONTENTSHA,
				    "no payload hash for a request without "
				    "x-amz-content-sha256");
		ph = req->payload_hash;
	}
	build_canonical(req, a, ph, &canon);
	ok = build_sts(a, &canon, &sts) &&
	     hmac_sha256(key, 32, sts.p, sts.len, mac);
	spx_hex_encode(mac, 32, want);
	spx_buf_release(&canon);
	spx_buf_release(&sts);
	if (!ok || CRYPTO_memcmp(want, a->signature, 64))
		return fail(a, SPX_SIGV4_ESIGNATURE,
			    "signature does not match for key '%s'",
			    a->access_key);
	memcpy(a->signing_key, key, 32);
	a->verified = true;
	return SPX_SIGV4_OK;
}

void spx_sigv4_canonical(const struct spx_sigv4_req *req,
			 const struct spx_sigv4_auth *a,
			 struct spx_buf *canonical_request,
			 struct spx_buf *string_to_sign)
{
	struct spx_buf canon = SPX_BUF_INIT;
	const char *ph = a->payload_hash;

	if (a->payload == SPX_SIGV4_PAYLOAD_BODY)
		ph = req->payload_hash ? req->payload_hash : "";
	build_canonical(req, a, ph, &canon);
	if (string_to_sign)
		(void)build_sts(a, &canon, string_to_sign);
	if (canonical_request) {
		spx_buf_reset(canonical_request);
		spx_buf_add(canonical_request, canon.p, canon.len);
	}
	spx_buf_release(&canon);
}

/* ---- sign ------------------------------------------------------------- */

static int check_cred(const struct spx_sigv4_cred *cred, const char *host)
{
	if (!cred || !cred->access_key || !cred->secret || !cred->region ||
	    !cred->service)
		return spx_error(SPX_USAGE, "incomplete signing credentials");
	if (!*cred->access_key || strlen(cred->access_key) > SPX_SIGV4_KEY_MAX ||
	    !all_chars(cred->access_key, strlen(cred->access_key), name_char))
		return spx_error(SPX_USAGE, "invalid access key '%s'",
				 cred->access_key);
	if (strlen(cred->secret) > SPX_SIGV4_SECRET_MAX)
		return spx_error(SPX_USAGE, "secret key longer than %d bytes",
				 SPX_SIGV4_SECRET_MAX);
	if (!*cred->region || strlen(cred->region) > SPX_SIGV4_REGION_MAX ||
	    !all_chars(cred->region, strlen(cred->region), name_char))
		return spx_error(SPX_USAGE, "invalid region '%s'",
				 cred->region);
	if (!*cred->service || strlen(cred->service) > SPX_SIGV4_SERVICE_MAX ||
	    !all_chars(cred->service, strlen(cred->service), name_char))
		return spx_error(SPX_USAGE, "invalid service '%s'",
				 cred->service);
	if (cred->session_token &&
	    strlen(cred->session_token) > SPX_SIGV4_TOKEN_MAX)
		return spx_error(SPX_USAGE, "session token longer than %d bytes",
				 SPX_SIGV4_TOKEN_MAX);
	if (!host || !*host || strpbrk(host, "\r\n"))
		return spx_error(SPX_USAGE, "invalid host '%s'",
				 host ? host : "");
	return 0;
}

/* Fill the scope fields of a for signing at now. */
static int sign_scope(const struct spx_sigv4_cred *cred, time_t now,
		      struct spx_sigv4_auth *a)
{
	memset(a, 0, sizeof(*a));
	if ((long long)now < 0 || (long long)now > TIME_MAX ||
	    !spx_amz_date(now, a->amz_date))
		return spx_error(SPX_USAGE, "invalid signing time %lld",
				 (long long)now);
	a->time = now;
	memcpy(a->date, a->amz_date, 8);
	(void)snprintf(a->access_key, sizeof(a->access_key), "%s",
		       cred->access_key);
	(void)snprintf(a->region, sizeof(a->region), "%s", cred->region);
	(void)snprintf(a->service, sizeof(a->service), "%s", cred->service);
	(void)snprintf(a->scope, sizeof(a->scope), "%s/%s/%s/aws4_request",
		       a->date, a->region, a->service);
	return 0;
}

static int sign_finish(const struct spx_sigv4_cred *cred,
		       const struct spx_sigv4_req *req,
		       struct spx_sigv4_auth *a, const char *payload_hash,
		       char sig[65])
{
	struct spx_buf canon = SPX_BUF_INIT, sts = SPX_BUF_INIT;
	unsigned char key[32], mac[32];
	bool ok;

	build_canonical(req, a, payload_hash, &canon);
	ok = build_sts(a, &canon, &sts) &&
	     derive_key(cred->secret, a->date, a->region, a->service, key) &&
	     hmac_sha256(key, 32, sts.p, sts.len, mac);
	OPENSSL_cleanse(key, sizeof(key));
	spx_buf_release(&canon);
	spx_buf_release(&sts);
	if (!ok)
		return spx_error(SPX_FAIL, "cannot compute hmac-sha256");
	spx_hex_encode(mac, 32, sig);
	return 0;
}

/* Set name to value in l, replacing every earlier value (any case). */
static void set_header(struct spx_kvlist *l, const char *name,
		       const char *value)
{
	size_t j = 0;

	for (size_t i = 0; i < l->n; i++) {
		if (!strcasecmp(l->v[i].k, name)) {
			free(l->v[i].k);
			free(l->v[i].v);
			continue;
		}
		l->v[j++] = l->v[i];
	}
	l->n = j;
	spx_kv_add(l, name, value);
}

static int name_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

int spx_sigv4_sign(const struct spx_sigv4_cred *cred, const char *method,
		   const char *host, const char *path, const char *query,
		   struct spx_kvlist *headers, const char *payload_hash,
		   time_t now, struct spx_buf *authorization)
{
	struct spx_sigv4_auth *a = NULL;
	struct spx_kvlist all = SPX_KVLIST_INIT;
	struct spx_sigv4_req req;
	struct spx_buf sh = SPX_BUF_INIT;
	char **names = NULL, sig[65];
	size_t nn = 0;
	int rc = -1;

	if (check_cred(cred, host) < 0)
		return -1;
	if (!method || !*method || strpbrk(method, " \r\n"))
		return spx_error(SPX_USAGE, "invalid method");
	if (!payload_hash || (!is_sha256_hex(payload_hash) &&
			      strcmp(payload_hash, SPX_SIGV4_UNSIGNED_PAYLOAD) &&
			      strcmp(payload_hash,
				     SPX_SIGV4_STREAMING_UNSIGNED_TRAILER)))
		return spx_error(SPX_USAGE, "invalid payload hash '%s'",
				 payload_hash ? payload_hash : "");
	for (size_t i = 0; i < headers->n; i++) {
		const char *k = headers->v[i].k;

		if (!*k || !strcasecmp(k, "host") || !strcasecmp(k, "authorization"))
			return spx_error(SPX_USAGE,
					 "header '%s' cannot be signed here", k);
		for (const char *p = k; *p; p++)
			if (!is_lower_tchar(lower((unsigned char)*p)))
				return spx_error(SPX_USAGE,
						 "invalid header name '%s'", k);
		if (strpbrk(headers->v[i].v, "\r\n"))
			return spx_error(SPX_USAGE,
					 "header '%s' has a line break", k);
	}
	a = spx_malloc(sizeof(*a));
	if (sign_scope(cred, now, a) < 0)
		goto out;
	set_header(headers, "X-Amz-Date", a->amz_date);
	set_header(headers, "X-Amz-Content-Sha256", payload_hash);
	if (cred->session_token)
		set_header(headers, "X-Amz-Security-Token", cred->session_token);

	spx_kv_add(&all, "host", host);
	for (size_t i = 0; i < headers->n; i++)
		spx_kv_add(&all, headers->v[i].k, headers->v[i].v);
	names = spx_malloc(all.n * sizeof(*names));
	for (size_t i = 0; i < all.n; i++) {
		char *k = spx_strdup(all.v[i].k);
		bool dup = false;

		for (char *p = k; *p; p++)
			*p = (char)lower((unsigned char)*p);
		for (size_t j = 0; j < nn && !dup; j++)
			dup = !strcmp(names[j], k);
		if (dup)
			free(k);
		else
			names[nn++] = k;
	}
	qsort(names, nn, sizeof(*names), name_cmp);
	for (size_t i = 0; i < nn; i++) {
		if (i)
			spx_buf_addc(&sh, ';');
		spx_buf_adds(&sh, names[i]);
	}
	if (nn > SPX_SIGV4_SIGNED_HEADERS_NMAX ||
	    sh.len > SPX_SIGV4_SIGNED_HEADERS_MAX) {
		spx_error(SPX_USAGE, "too many headers to sign");
		goto out;
	}
	memcpy(a->signed_headers, sh.p, sh.len + 1);

	req = (struct spx_sigv4_req){ .method = method,
				      .path = path,
				      .query = query,
				      .headers = &all };
	if (sign_finish(cred, &req, a, payload_hash, sig) < 0)
		goto out;
	spx_buf_reset(authorization);
	spx_buf_addf(authorization,
		     "%s Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		     SPX_SIGV4_ALGORITHM, a->access_key, a->scope,
		     a->signed_headers, sig);
	rc = 0;
out:
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	free(a);
	spx_kv_free(&all);
	spx_buf_release(&sh);
	return rc;
}

int spx_sigv4_presign(const struct spx_sigv4_cred *cred, const char *method,
		      const char *host, const char *path, const char *query,
		      time_t now, long expires, struct spx_buf *query_out)
{
	struct spx_sigv4_auth *a = NULL;
	struct qauth *qa;
	struct spx_kvlist h = SPX_KVLIST_INIT;
	struct spx_buf q = SPX_BUF_INIT, cr = SPX_BUF_INIT;
	struct spx_sigv4_req req;
	char sig[65];
	int rc = -1;

	if (check_cred(cred, host) < 0)
		return -1;
	if (!method || !*method || strpbrk(method, " \r\n"))
		return spx_error(SPX_USAGE, "invalid method");
	if (expires < 1 || expires > SPX_SIGV4_MAX_EXPIRES)
		return spx_error(SPX_USAGE, "expiry %ld is not within 1..%d",
				 expires, SPX_SIGV4_MAX_EXPIRES);
	/* The query must not hold what presign adds (or what would change
	 * the payload hash verify uses). */
	qa = spx_malloc(sizeof(*qa));
	scan_query(query, qa);
	for (int i = QP_ALGORITHM; i <= QP_CONTENT_SHA256; i++)
		if (qa->count[i]) {
			free(qa);
			return spx_error(SPX_USAGE,
					 "query already holds %s", qp_names[i]);
		}
	free(qa);
	a = spx_malloc(sizeof(*a));
	if (sign_scope(cred, now, a) < 0)
		goto out;
	a->presigned = true;
	memcpy(a->signed_headers, "host", 5);

	if (query && *query) {
		spx_buf_adds(&q, query);
		spx_buf_addc(&q, '&');
	}
	spx_buf_addf(&q, "X-Amz-Algorithm=%s&X-Amz-Credential=",
		     SPX_SIGV4_ALGORITHM);
	spx_buf_addf(&cr, "%s/%s", a->access_key, a->scope);
	uri_encode(&q, cr.p, cr.len, false);
	spx_buf_addf(&q, "&X-Amz-Date=%s&X-Amz-Expires=%ld", a->amz_date,
		     expires);
	spx_buf_adds(&q, "&X-Amz-SignedHeaders=host");
	if (cred->session_token) {
		spx_buf_adds(&q, "&X-Amz-Security-Token=");
		uri_encode(&q, cred->session_token,
			   strlen(cred->session_token), false);
	}
	spx_kv_add(&h, "host", host);
	req = (struct spx_sigv4_req){
		.method = method, .path = path, .query = q.p, .headers = &h
	};
	if (sign_finish(cred, &req, a, !strcmp(a->service, "s3")
					       ? SPX_SIGV4_UNSIGNED_PAYLOAD
					       : SPX_SIGV4_EMPTY_SHA256,
			sig) < 0)
		goto out;
	spx_buf_addf(&q, "&X-Amz-Signature=%s", sig);
	spx_buf_reset(query_out);
	spx_buf_add(query_out, q.p, q.len);
	rc = 0;
out:
	free(a);
	spx_kv_free(&h);
	spx_buf_release(&q);
	spx_buf_release(&cr);
	return rc;
}

/* ---- errors ----------------------------------------------------------- */

const char *spx_sigv4_strerror(enum spx_sigv4_err err)
{
	static const char *const s[SPX_SIGV4_NERR] = {
		[SPX_SIGV4_OK] = "ok",
		[SPX_SIGV4_ENOAUTH] = "no authentication",
		[SPX_SIGV4_EMULTIPLE] = "more than one authentication mechanism",
		[SPX_SIGV4_EALGORITHM] = "unsupported signing algorithm",
		[SPX_SIGV4_EHEADER] = "malformed authorization header",
		[SPX_SIGV4_EQUERY] = "malformed presigned query parameters",
		[SPX_SIGV4_ECREDENTIAL] = "malformed credential",
		[SPX_SIGV4_EREGION] = "wrong region in credential scope",
		[SPX_SIGV4_ESERVICE] = "wrong service in credential scope",
		[SPX_SIGV4_EDATE] = "missing or invalid request date",
		[SPX_SIGV4_ESCOPEDATE] = "credential date is not the request date",
		[SPX_SIGV4_ESIGNEDHEADERS] = "invalid signed headers",
		[SPX_SIGV4_EMISSINGHEADER] = "signed header is absent",
		[SPX_SIGV4_EUNSIGNED] = "header present but not signed",
		[SPX_SIGV4_ESIGNATURE_FORMAT] = "malformed signature",
		[SPX_SIGV4_EEXPIRES] = "invalid expiry",
		[SPX_SIGV4_ECONTENTSHA] = "invalid x-amz-content-sha256",
		[SPX_SIGV4_ENOCONTENTSHA] = "missing payload hash",
		[SPX_SIGV4_ETOOBIG] = "request too large to authenticate",
		[SPX_SIGV4_ESKEW] = "request time too skewed",
		[SPX_SIGV4_ENOTYET] = "request not yet valid",
		[SPX_SIGV4_EEXPIRED] = "request expired",
		[SPX_SIGV4_ESIGNATURE] = "signature does not match",
		[SPX_SIGV4_EUNKNOWNKEY] = "unknown access key",
	};

	if ((unsigned)err >= SPX_SIGV4_NERR)
		return "unknown error";
	return s[err];
}

#define ST(h, c, m) ((struct spx_apierr){ (h), (c), (m) })

static const char s3_sig_msg[] =
	"The request signature we calculated does not match the signature "
	"you provided. Check your key and signing method.";
static const char query_sig_msg[] =
	"The request signature we calculated does not match the signature "
	"you provided. Check your AWS Secret Access Key and signing method. "
	"Consult the service documentation for details.";
static const char incomplete_msg[] =
	"The request signature does not conform to AWS standards.";

static struct spx_apierr s3_code(enum spx_sigv4_err err, bool pre)
{
	const char *hm = "AuthorizationHeaderMalformed";
	const char *qe = "AuthorizationQueryParametersError";

	switch (err) {
	case SPX_SIGV4_OK:
		return ST(200, "OK", "OK");
	case SPX_SIGV4_ENOAUTH:
		return ST(403, "AccessDenied", "Access Denied");
	case SPX_SIGV4_EMULTIPLE:
		return ST(400, "InvalidArgument",
			  "Only one auth mechanism allowed; only the "
			  "X-Amz-Algorithm query parameter, Signature query "
			  "string parameter or the Authorization header "
			  "should be specified");
	case SPX_SIGV4_EALGORITHM:
		if (pre)
			return ST(400, qe,
				  "X-Amz-Algorithm only supports "
				  "\"AWS4-HMAC-SHA256\"");
		return ST(400, "InvalidRequest",
			  "The authorization mechanism you have provided is "
			  "not supported. Please use AWS4-HMAC-SHA256.");
	case SPX_SIGV4_EHEADER:
		return ST(400, hm,
			  "The authorization header is malformed; the "
			  "authorization header requires three components: "
			  "Credential, SignedHeaders, and Signature.");
	case SPX_SIGV4_EQUERY:
		return ST(400, qe,
			  "Query-string authentication version 4 requires the "
			  "X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, "
			  "X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires "
			  "parameters.");
	case SPX_SIGV4_ECREDENTIAL:
		if (pre)
			return ST(400, qe,
				  "Error parsing the X-Amz-Credential parameter; "
				  "the Credential is mal-formed; expecting "
				  "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/"
				  "aws4_request\".");
		return ST(400, hm,
			  "The authorization header is malformed; the "
			  "Credential is mal-formed; expecting "
			  "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/"
			  "aws4_request\".");
	case SPX_SIGV4_EREGION:
		if (pre)
			return ST(400, qe,
				  "Error parsing the X-Amz-Credential parameter; "
				  "the region is wrong.");
		return ST(400, hm,
			  "The authorization header is malformed; the region "
			  "is wrong.");
	case SPX_SIGV4_ESERVICE:
		if (pre)
			return ST(400, qe,
				  "Error parsing the X-Amz-Credential parameter; "
				  "incorrect service. This endpoint belongs to "
				  "\"s3\".");
		return ST(400, hm,
			  "The authorization header is malformed; incorrect "
			  "service. This endpoint belongs to \"s3\".");
	case SPX_SIGV4_EDATE:
		if (pre)
			return ST(400, qe,
				  "X-Amz-Date must be in the ISO8601 Long Format "
				  "\"yyyyMMdd'T'HHmmss'Z'\"");
		return ST(403, "AccessDenied",
			  "AWS authentication requires a valid Date or "
			  "x-amz-date header");
	case SPX_SIGV4_ESCOPEDATE:
		if (pre)
			return ST(400, qe,
				  "Invalid credential date. Date is not the same "
				  "as X-Amz-Date.");
		return ST(400, hm,
			  "The authorization header is malformed; Invalid "
			  "credential date. Date is not the same as "
			  "X-Amz-Date.");
	case SPX_SIGV4_ESIGNEDHEADERS:
		if (pre)
			return ST(400, qe,
				  "X-Amz-SignedHeaders must be a sorted list of "
				  "lowercase header names including host.");
		return ST(400, hm,
			  "The authorization header is malformed; "
			  "SignedHeaders must be a sorted list of lowercase "
			  "header names including host and the date header.");
	case SPX_SIGV4_EMISSINGHEADER:
		return ST(403, "SignatureDoesNotMatch", s3_sig_msg);
	case SPX_SIGV4_EUNSIGNED:
		return ST(403, "AccessDenied",
			  "There were headers present in the request which "
			  "were not signed");
	case SPX_SIGV4_ESIGNATURE_FORMAT:
		if (pre)
			return ST(400, qe,
				  "X-Amz-Signature must be 64 lowercase "
				  "hexadecimal digits.");
		return ST(400, hm,
			  "The authorization header is malformed; the "
			  "Signature must be 64 lowercase hexadecimal "
			  "digits.");
	case SPX_SIGV4_EEXPIRES:
		return ST(400, qe,
			  "X-Amz-Expires must be less than a week (in seconds) "
			  "that is; 604800");
	case SPX_SIGV4_ECONTENTSHA:
		return ST(400, "InvalidArgument",
			  "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
			  "STREAMING-AWS4-HMAC-SHA256-PAYLOAD, or a valid "
			  "sha256 value.");
	case SPX_SIGV4_ENOCONTENTSHA:
		return ST(400, "InvalidRequest",
			  "Missing required header for this request: "
			  "x-amz-content-sha256");
	case SPX_SIGV4_ETOOBIG:
		return ST(400, "InvalidRequest",
			  "The request is too large to authenticate.");
	case SPX_SIGV4_ESKEW:
		return ST(403, "RequestTimeTooSkewed",
			  "The difference between the request time and the "
			  "current time is too large.");
	case SPX_SIGV4_ENOTYET:
		return ST(403, "AccessDenied", "Request is not valid yet");
	case SPX_SIGV4_EEXPIRED:
		return ST(403, "AccessDenied", "Request has expired");
	case SPX_SIGV4_ESIGNATURE:
		return ST(403, "SignatureDoesNotMatch", s3_sig_msg);
	case SPX_SIGV4_EUNKNOWNKEY:
		return ST(403, "InvalidAccessKeyId",
			  "The AWS Access Key Id you provided does not exist "
			  "in our records.");
	case SPX_SIGV4_NERR:
		break;
	}
	return ST(403, "AccessDenied", "Access Denied");
}

static struct spx_apierr query_code(enum spx_sigv4_err err, bool ec2)
{
	const char *is = "IncompleteSignature", *sdm = "SignatureDoesNotMatch";

	/* The Query APIs answer every authentication failure but a stale
	 * clock and an EC2 unknown key with 403 (AWS's common errors). */
	switch (err) {
	case SPX_SIGV4_OK:
		return ST(200, "OK", "OK");
	case SPX_SIGV4_ENOAUTH:
		return ST(403, "MissingAuthenticationToken",
			  "Request is missing Authentication Token");
	case SPX_SIGV4_EMULTIPLE:
	case SPX_SIGV4_EALGORITHM:
	case SPX_SIGV4_EHEADER:
	case SPX_SIGV4_EQUERY:
	case SPX_SIGV4_ECREDENTIAL:
	case SPX_SIGV4_ESIGNEDHEADERS:
	case SPX_SIGV4_EUNSIGNED:
	case SPX_SIGV4_ESIGNATURE_FORMAT:
	case SPX_SIGV4_EEXPIRES:
	case SPX_SIGV4_ECONTENTSHA:
	case SPX_SIGV4_ENOCONTENTSHA:
	case SPX_SIGV4_ETOOBIG:
		return ST(403, is, incomplete_msg);
	case SPX_SIGV4_EDATE:
		return ST(403, is,
			  "Authorization header requires existence of either "
			  "a 'X-Amz-Date' or a 'Date' header.");
	case SPX_SIGV4_EREGION:
		return ST(403, sdm,
			  "Credential should be scoped to a valid region.");
	case SPX_SIGV4_ESERVICE:
		return ST(403, sdm,
			  "Credential should be scoped to correct service.");
	case SPX_SIGV4_ESCOPEDATE:
		return ST(403, sdm,
			  "Date in Credential scope does not match YYYYMMDD "
			  "from ISO-8601 version of date from HTTP.");
	case SPX_SIGV4_EMISSINGHEADER:
	case SPX_SIGV4_ESIGNATURE:
		return ST(403, sdm, query_sig_msg);
	case SPX_SIGV4_ESKEW:
	case SPX_SIGV4_EEXPIRED:
		if (ec2)
			return ST(400, "RequestExpired", "Request has expired.");
		return ST(403, sdm, "Signature expired.");
	case SPX_SIGV4_ENOTYET:
		if (ec2)
			return ST(400, "RequestExpired", "Request has expired.");
		return ST(403, sdm, "Signature not yet current.");
	case SPX_SIGV4_EUNKNOWNKEY:
		if (ec2)
			return ST(401, "AuthFailure",
				  "AWS was not able to validate the provided "
				  "access credentials");
		return ST(403, "InvalidClientTokenId",
			  "The security token included in the request is "
			  "invalid.");
	case SPX_SIGV4_NERR:
		break;
	}
	return ST(403, "MissingAuthenticationToken",
		  "Request is missing Authentication Token");
}

struct spx_apierr spx_sigv4_code(enum spx_sigv4_err err,
				       enum spx_sigv4_api api,
				       const struct spx_sigv4_auth *auth)
{
	/* SigV2's own words where they differ from SigV4's. */
	if (api == SPX_SIGV4_API_S3 && auth && auth->v2) {
		if (err == SPX_SIGV4_EHEADER)
			return ST(400, "InvalidArgument",
				  "AWS authorization header is invalid.  "
				  "Expected AwsAccessKeyId:signature");
		if (err == SPX_SIGV4_EQUERY)
			return ST(403, "AccessDenied",
				  "Query-string authentication requires the "
				  "Signature, Expires and AWSAccessKeyId "
				  "parameters");
		if (err == SPX_SIGV4_ESIGNATURE_FORMAT)
			return ST(403, "SignatureDoesNotMatch", s3_sig_msg);
	}
	if (api == SPX_SIGV4_API_S3)
		return s3_code(err, auth && auth->presigned);
	return query_code(err, api == SPX_SIGV4_API_EC2);
}

/* ---- Signature Version 2 --------------------------------------------- */

/* The query parameters that are part of a SigV2 resource: S3's
 * subresources and response overrides, sorted as they are signed. */
static const char *const v2_subresources[] = {
	"accelerate",
	"acl",
	"analytics",
	"cors",
	"delete",
	"encryption",
	"inventory",
	"legal-hold",
	"lifecycle",
	"location",
	"logging",
	"metrics",
	"notification",
	"object-lock",
	"partNumber",
	"policy",
	"replication",
	"requestPayment",
	"response-cache-control",
	"response-content-disposition",
	"response-content-encoding",
	"response-content-language",
	"response-content-type",
	"response-expires",
	"restore",
	"retention",
	"select",
	"select-type",
	"tagging",
	"torrent",
	"uploadId",
	"uploads",
	"versionId",
	"versioning",
	"versions",
	"website",
};

bool spx_sigv2_signs_param(const char *name)
{
	for (size_t k = 0; k < SPX_ARRAY_SIZE(v2_subresources); k++)
		if (!strcmp(name, v2_subresources[k]))
			return true;
	return false;
}

/* The Authorization header's value after its "AWS" and spaces, or NULL
 * when it is not SigV2's. */
static const char *v2_header(const char *authz)
{
	while (authz && is_ows(*authz))
		authz++;
	if (!authz || strncmp(authz, "AWS", 3) || !is_ows(authz[3]))
		return NULL;
	authz += 3;
	while (is_ows(*authz))
		authz++;
	return authz;
}

bool spx_sigv2_present(const struct spx_sigv4_req *req)
{
	struct qauth q;

	if (v2_header(header_get(req->headers, "authorization")))
		return true;
	scan_query(req->query, &q);
	return q.count[QP_V2_KEY] || q.count[QP_V2_SIGNATURE];
}

static bool is_b64_char(int c)
{
	return is_alnum(c) || c == '+' || c == '/' || c == '=';
}

/* An access key id [s, s+n) into a->access_key. */
static enum spx_sigv4_err v2_key(const char *s, size_t n,
				 struct spx_sigv4_auth *a)
{
	if (!n || n > SPX_SIGV4_KEY_MAX || !all_chars(s, n, name_char))
		return fail(a, SPX_SIGV4_EHEADER, "malformed access key id");
	memcpy(a->access_key, s, n);
	a->access_key[n] = '\0';
	return SPX_SIGV4_OK;
}

/* base64 of a 20-byte HMAC-SHA1: 28 characters. */
static enum spx_sigv4_err v2_signature(const char *s, size_t n,
				       struct spx_sigv4_auth *a)
{
	if (n != 28 || !all_chars(s, n, is_b64_char))
		return fail(a, SPX_SIGV4_ESIGNATURE_FORMAT,
			    "signature is not base64 of 20 bytes");
	memcpy(a->signature, s, n);
	a->signature[n] = '\0';
	return SPX_SIGV4_OK;
}

/* Header form: "AWS AKID:SIG" and the request time. */
static enum spx_sigv4_err v2_parse_header(const struct spx_sigv4_req *req,
					  const char *v,
					  struct spx_sigv4_auth *a)
{
	const char *colon = strchr(v, ':'), *d;
	size_t n = strlen(v), nx = header_count(req->headers, "x-amz-date");
	enum spx_sigv4_err e;

	while (n && is_ows(v[n - 1]))
		n--;
	if (!colon || (size_t)(colon - v) >= n)
		return fail(a, SPX_SIGV4_EHEADER,
			    "expected AWS AccessKeyId:Signature");
	if ((e = v2_key(v, (size_t)(colon - v), a)) ||
	    (e = v2_signature(colon + 1, n - (size_t)(colon - v) - 1, a)))
		return e;
	if (nx > 1 || (!nx && header_count(req->headers, "date") != 1))
		return fail(a, SPX_SIGV4_EDATE,
			    "no single x-amz-date or date header");
	d = header_get(req->headers, nx ? "x-amz-date" : "date");
	/* x-amz-date in either form clients send it. */
	if (spx_http_date_parse(d, &a->time) < 0 &&
	    !(nx && spx_amz_date_parse(d, strlen(d), &a->time)))
		return fail(a, SPX_SIGV4_EDATE, "unreadable request date");
	if (!spx_amz_date(a->time, a->amz_date))
		return fail(a, SPX_SIGV4_EDATE, "request date out of range");
	return SPX_SIGV4_OK;
}

/* Query form: AWSAccessKeyId, Signature and Expires, once each. */
static enum spx_sigv4_err v2_parse_query(const struct spx_sigv4_req *req,
					 const struct qauth *q,
					 struct spx_sigv4_auth *a)
{
	char key[SPX_SIGV4_KEY_MAX + 1], sig[64], exp[16];
	struct qiter it;
	struct span name, val, ev = { 0 };
	unsigned ne = 0;
	enum spx_sigv4_err e;
	char *end;
	long long t;

	a->presigned = true;
	qiter_init(&it, req->query);
	while (qnext(&it, &name, &val))
		if (qname_is(name, "Expires") && !ne++)
			ev = val;
	if (q->count[QP_V2_KEY] != 1 || q->count[QP_V2_SIGNATURE] != 1 ||
	    ne != 1)
		return fail(a, SPX_SIGV4_EQUERY,
			    "AWSAccessKeyId, Signature and Expires are needed "
			    "once each");
	if (!decode_into(q->v[QP_V2_KEY].p, q->v[QP_V2_KEY].n, key,
			 sizeof(key)) ||
	    (e = v2_key(key, strlen(key), a)))
		return fail(a, SPX_SIGV4_EQUERY, "malformed AWSAccessKeyId");
	if (!decode_into(q->v[QP_V2_SIGNATURE].p, q->v[QP_V2_SIGNATURE].n,
			 sig, sizeof(sig)))
		return fail(a, SPX_SIGV4_ESIGNATURE_FORMAT,
			    "signature is not base64 of 20 bytes");
	if ((e = v2_signature(sig, strlen(sig), a)))
		return e;
	if (!decode_into(ev.p, ev.n, exp, sizeof(exp)) || !exp[0] ||
	    !all_chars(exp, strlen(exp), is_digit) || strlen(exp) > 12)
		return fail(a, SPX_SIGV4_EQUERY, "Expires is not a time");
	t = strtoll(exp, &end, 10);
	if (t > TIME_MAX)
		return fail(a, SPX_SIGV4_EQUERY, "Expires is out of range");
	a->expires = (long)t;
	a->time = (time_t)t;
	if (!spx_amz_date(a->time, a->amz_date))
		return fail(a, SPX_SIGV4_EQUERY, "Expires is out of range");
	return SPX_SIGV4_OK;
}

enum spx_sigv4_err spx_sigv2_parse(const struct spx_sigv4_req *req,
				   struct spx_sigv4_auth *a)
{
	const struct spx_kvlist *h = req->headers;
	const char *v = v2_header(header_get(h, "authorization")), *tok;
	struct qauth q;
	enum spx_sigv4_err e;

	memset(a, 0, sizeof(*a));
	a->v2 = true;
	scan_query(req->query, &q);
	if (header_count(h, "authorization") > 1)
		e = fail(a, SPX_SIGV4_EHEADER, "repeated authorization header");
	else if (q.nparams > SPX_SIGV4_QUERY_PARAMS_MAX)
		e = fail(a, SPX_SIGV4_ETOOBIG, "more than %d query parameters",
			 SPX_SIGV4_QUERY_PARAMS_MAX);
	else if (v && (q.count[QP_V2_KEY] || q.count[QP_V2_SIGNATURE] ||
		       q.count[QP_ALGORITHM] || q.count[QP_SIGNATURE]))
		e = fail(a, SPX_SIGV4_EMULTIPLE,
			 "both an authorization header and query "
			 "authentication");
	else if (v)
		e = v2_parse_header(req, v, a);
	else if (header_get(h, "authorization"))
		e = fail(a, SPX_SIGV4_EMULTIPLE,
			 "both an authorization header and query "
			 "authentication");
	else if (q.count[QP_V2_KEY] || q.count[QP_V2_SIGNATURE])
		e = v2_parse_query(req, &q, a);
	else
		e = fail(a, SPX_SIGV4_ENOAUTH, "no authentication");
	if (e)
		return e;
	if (header_count(h, "x-amz-security-token") > 1)
		return fail(a, SPX_SIGV4_EHEADER,
			    "repeated x-amz-security-token header");
	if ((tok = header_get(h, "x-amz-security-token"))) {
		if (strlen(tok) > SPX_SIGV4_TOKEN_MAX)
			return fail(a, SPX_SIGV4_ETOOBIG,
				    "x-amz-security-token longer than %d bytes",
				    SPX_SIGV4_TOKEN_MAX);
		memcpy(a->security_token, tok, strlen(tok) + 1);
	}
	a->payload = SPX_SIGV4_PAYLOAD_UNSIGNED;
	memcpy(a->payload_hash, SPX_SIGV4_UNSIGNED_PAYLOAD,
	       sizeof(SPX_SIGV4_UNSIGNED_PAYLOAD));
	return SPX_SIGV4_OK;
}

/* A value with the white space at its ends left out. */
static void add_ends_trimmed(struct spx_buf *out, const char *v)
{
	size_t n;

	while (is_ws((unsigned char)*v))
		v++;
	n = strlen(v);
	while (n && is_ws((unsigned char)v[n - 1]))
		n--;
	spx_buf_add(out, v, n);
}

struct v2_hdr {
	char *name; /* lowercase */
	const char *value;
	size_t order;
};

static int v2_hdr_cmp(const void *x, const void *y)
{
	const struct v2_hdr *a = x, *b = y;
	int c = strcmp(a->name, b->name);

	return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* "name:value\n" for each x-amz-* header, sorted, repeats joined. */
static void v2_amz_headers(struct spx_buf *out, const struct spx_kvlist *h)
{
	struct v2_hdr *v = spx_calloc(h && h->n ? h->n : 1, sizeof(*v));
	size_t n = 0;

	for (size_t i = 0; h && i < h->n; i++) {
		if (strncasecmp(h->v[i].k, "x-amz-", 6))
			continue;
		v[n].name = spx_strdup(h->v[i].k);
		for (char *c = v[n].name; *c; c++)
			*c = (char)lower((unsigned char)*c);
		v[n].value = h->v[i].v;
		v[n].order = i;
		n++;
	}
	qsort(v, n, sizeof(*v), v2_hdr_cmp);
	for (size_t i = 0; i < n; i++) {
		bool same = i && !strcmp(v[i].name, v[i - 1].name);

		if (same) {
			spx_buf_addc(out, ',');
		} else {
			if (i)
				spx_buf_addc(out, '\n');
			spx_buf_adds(out, v[i].name);
			spx_buf_addc(out, ':');
		}
		add_ends_trimmed(out, v[i].value);
	}
	if (n)
		spx_buf_addc(out, '\n');
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* The subresources of the query, sorted, decoded. */
static void v2_subresource_query(struct spx_buf *out, const char *query)
{
	bool first = true;

	for (size_t k = 0; k < SPX_ARRAY_SIZE(v2_subresources); k++) {
		struct qiter it;
		struct span name, val;

		qiter_init(&it, query);
		while (qnext(&it, &name, &val)) {
			if (!qname_is(name, v2_subresources[k]))
				continue;
			spx_buf_addc(out, first ? '?' : '&');
			first = false;
			spx_buf_adds(out, v2_subresources[k]);
			if (val.n) {
				spx_buf_addc(out, '=');
				uri_decode(out, val.p, val.n);
			}
		}
	}
}

void spx_sigv2_string_to_sign(const struct spx_sigv4_req *req,
			      const struct spx_sigv4_auth *a,
			      const char *vhost_bucket, struct spx_buf *out)
{
	const struct spx_kvlist *h = req->headers;
	const char *md5 = header_get(h, "content-md5");
	const char *ct = header_get(h, "content-type");
	const char *date = header_get(h, "date");
	char exp[24];

	spx_buf_reset(out);
	spx_buf_adds(out, req->method);
	spx_buf_addc(out, '\n');
	add_ends_trimmed(out, md5 ? md5 : "");
	spx_buf_addc(out, '\n');
	add_ends_trimmed(out, ct ? ct : "");
	spx_buf_addc(out, '\n');
	if (a->presigned) {
		snprintf(exp, sizeof(exp), "%ld", a->expires);
		spx_buf_adds(out, exp);
	} else if (!header_get(h, "x-amz-date")) {
		add_ends_trimmed(out, date ? date : "");
	}
	spx_buf_addc(out, '\n');
	v2_amz_headers(out, h);
	if (vhost_bucket) {
		spx_buf_addc(out, '/');
		spx_buf_adds(out, vhost_bucket);
	}
	spx_buf_adds(out, req->path);
	/* A bucket's own resource is "/bucket/", however its path was
	 * written ("/bucket" path-style: botocore signs it so). */
	if (!vhost_bucket && req->path[0] == '/' && req->path[1] &&
	    !strchr(req->path + 1, '/'))
		spx_buf_addc(out, '/');
	v2_subresource_query(out, req->query);
}

enum spx_sigv4_err spx_sigv2_verify(const struct spx_sigv4_req *req,
				    struct spx_sigv4_auth *a,
				    const char *vhost_bucket,
				    const char *secret, time_t now)
{
	struct spx_buf sts = SPX_BUF_INIT, want = SPX_BUF_INIT;
	unsigned char mac[20];
	unsigned int len = 0;
	enum spx_sigv4_err e = SPX_SIGV4_OK;
	long long n = (long long)now, t = (long long)a->time;

	a->verified = false;
	if (!a->v2 || strlen(secret) > SPX_SIGV4_SECRET_MAX)
		return fail(a, SPX_SIGV4_ESIGNATURE, "not a SigV2 request");
	if (n < 0 || n > TIME_MAX)
		return fail(a, SPX_SIGV4_ESKEW, "the server clock is invalid");
	if (a->presigned && n > t)
		return fail(a, SPX_SIGV4_EEXPIRED, "request expired %lld s ago",
			    n - t);
	if (!a->presigned &&
	    (t - n > SPX_SIGV4_MAX_SKEW || n - t > SPX_SIGV4_MAX_SKEW))
		return fail(a, SPX_SIGV4_ESKEW,
			    "request time %s is %lld s from the server's",
			    a->amz_date, n - t);
	spx_sigv2_string_to_sign(req, a, vhost_bucket, &sts);
	if (!HMAC(EVP_sha1(), secret, (int)strlen(secret),
		  (const unsigned char *)sts.p, sts.len, mac, &len) ||
	    len != sizeof(mac)) {
		e = fail(a, SPX_SIGV4_ESIGNATURE, "HMAC-SHA1 failed");
	} else {
		spx_base64_encode(mac, sizeof(mac), &want);
		if (want.len != strlen(a->signature) ||
		    CRYPTO_memcmp(want.p, a->signature, want.len))
			e = fail(a, SPX_SIGV4_ESIGNATURE,
				 "signature does not match");
	}
	OPENSSL_cleanse(mac, sizeof(mac));
	spx_buf_release(&sts);
	spx_buf_release(&want);
	a->verified = e == SPX_SIGV4_OK;
	return e;
}
