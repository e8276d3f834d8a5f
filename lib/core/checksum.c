#include "spx.h"

#include <pthread.h>

#include <isa-l/crc.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_PCLMUL 1
#endif

#include "checksum.h"
#include "hex.h"

/* The state field of struct spx_cksum. */
enum { LIVE = 0, FAILED = 1, DONE = 2 };

static const struct {
	const char *name, *header;
	size_t size;
} algos[SPX_CKSUM_NALGO] = {
	[SPX_CKSUM_CRC32] = { "CRC32", "x-amz-checksum-crc32", 4 },
	[SPX_CKSUM_CRC32C] = { "CRC32C", "x-amz-checksum-crc32c", 4 },
	[SPX_CKSUM_CRC64NVME] = { "CRC64NVME", "x-amz-checksum-crc64nvme", 8 },
	[SPX_CKSUM_SHA1] = { "SHA1", "x-amz-checksum-sha1", 20 },
	[SPX_CKSUM_SHA256] = { "SHA256", "x-amz-checksum-sha256", 32 },
	[SPX_CKSUM_MD5] = { "MD5", "content-md5", 16 },
};

static bool valid(enum spx_cksum_algo a)
{
	return (unsigned)a < SPX_CKSUM_NALGO;
}

static bool is_crc(enum spx_cksum_algo a)
{
	return a == SPX_CKSUM_CRC32 || a == SPX_CKSUM_CRC32C ||
	       a == SPX_CKSUM_CRC64NVME;
}

size_t spx_cksum_size(enum spx_cksum_algo algo)
{
	return valid(algo) ? algos[algo].size : 0;
}

const char *spx_cksum_name(enum spx_cksum_algo algo)
{
	return valid(algo) ? algos[algo].name : NULL;
}

const char *spx_cksum_header(enum spx_cksum_algo algo)
{
	return valid(algo) ? algos[algo].header : NULL;
}

int spx_cksum_from_name(const char *name, enum spx_cksum_algo *algo)
{
	for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
		if (a == SPX_CKSUM_MD5)
			continue;
		if (!strcasecmp(name, algos[a].name)) {
			*algo = (enum spx_cksum_algo)a;
			return 0;
		}
	}
	return spx_error(SPX_USAGE, "unknown checksum algorithm '%.64s'", name);
}

/*
 * CRC-64/NVME. The reflected polynomial is the bit reversal of
 * 0xad93d23594c93659. Tables and folding constants are made once.
 */
#define CRC64_RPOLY 0x9a6c9329ac4bc9b5ULL
#define CRC32_RPOLY 0xedb88320ULL
#define CRC32C_RPOLY 0x82f63b78ULL

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static uint64_t crc64_tab[8][256];
/* x^(2^k) mod P for combining, k < 67 (byte lengths below 2^64). */
#define X2N 67
static uint64_t x2n_tab[3][X2N];
#ifdef HAVE_PCLMUL
static bool use_pclmul;
/* fold_k[d]: the pair x^(128d + 63), x^(128d - 1) mod P (reflected) that
 * moves a 128-bit block 128d bits forward, d = 1..8. */
static uint64_t fold_k[9][2];
#endif

static uint64_t load_le64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
	       (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
}

/* a * b mod P for a reflected CRC of width w (bit w-1 is x^0), as zlib's
 * multmodp. */
static uint64_t multmodp(uint64_t a, uint64_t b, int w, uint64_t rpoly)
{
	uint64_t m = 1ULL << (w - 1), p = 0;

	while (m) {
		if (a & m) {
			p ^= b;
			if (!(a & (m - 1)))
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ rpoly : b >> 1;
	}
	return p;
}

static const struct {
	int w;
	uint64_t rpoly;
} crcs[3] = { { 32, CRC32_RPOLY }, { 32, CRC32C_RPOLY }, { 64, CRC64_RPOLY } };

static void crc_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint64_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC64_RPOLY : c >> 1;
		crc64_tab[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc64_tab[t][i] = (crc64_tab[t - 1][i] >> 8) ^
					  crc64_tab[0][crc64_tab[t - 1][i] & 0xff];

	for (int a = 0; a < 3; a++) {
		x2n_tab[a][0] = 1ULL << (crcs[a].w - 2); /* x^1 */
		for (int k = 1; k < X2N; k++)
			x2n_tab[a][k] = multmodp(x2n_tab[a][k - 1],
						 x2n_tab[a][k - 1], crcs[a].w,
						 crcs[a].rpoly);
	}

#ifdef HAVE_PCLMUL
	{
		uint64_t v = 1ULL << 63; /* x^0 */

		/* Walk v through x^e for e = 0 .. 128*8 + 63. */
		for (int e = 0; e <= 128 * 8 + 63; e++) {
			if (e >= 127 && (e + 1) % 128 == 0 && e < 128 * 8)
				fold_k[(e + 1) / 128][1] = v;
			if (e >= 191 && (e - 63) % 128 == 0)
				fold_k[(e - 63) / 128][0] = v;
			v = v & 1 ? (v >> 1) ^ CRC64_RPOLY : v >> 1;
		}
	}
	__builtin_cpu_init();
	use_pclmul = __builtin_cpu_supports("pclmul");
#endif
}

/* The raw register, without the final xor. */
static uint64_t crc64_table(uint64_t crc, const unsigned char *p, size_t n)
{
	while (n >= 8) {
		crc ^= load_le64(p);
		crc = crc64_tab[7][crc & 0xff] ^ crc64_tab[6][(crc >> 8) & 0xff] ^
		      crc64_tab[5][(crc >> 16) & 0xff] ^
		      crc64_tab[4][(crc >> 24) & 0xff] ^
		      crc64_tab[3][(crc >> 32) & 0xff] ^
		      crc64_tab[2][(crc >> 40) & 0xff] ^
		      crc64_tab[1][(crc >> 48) & 0xff] ^ crc64_tab[0][crc >> 56];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = crc64_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#ifdef HAVE_PCLMUL
/*
 * Carry-less folding (Intel, "Fast CRC Computation for Generic Polynomials
 * Using PCLMULQDQ"). A 16-byte block read little-endian holds x^127 in bit
 * 0 and x^0 in bit 127 (bit-reflected). Moving it D bits forward means
 * multiplying its first 64 bits by x^(D+64) and its last 64 by x^D, mod P;
 * a reflected carry-less product carries one extra factor x, hence the
 * constants x^(D+63) and x^(D-1). Eight lanes hide the multiplier's
 * latency. The last 16 bytes of the folded state are reduced by the table
 * (no Barrett step needed): their CRC from register 0 is the CRC of
 * everything folded into them.
 */
__attribute__((target("pclmul"))) static inline __m128i
fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul"))) static inline __m128i
fold_const(int d)
{
	return _mm_set_epi64x((long long)fold_k[d][1], (long long)fold_k[d][0]);
}

/* n >= 128. */
__attribute__((target("pclmul"))) static uint64_t
crc64_pclmul(uint64_t crc, const unsigned char *p, size_t n)
{
	__m128i x[8], k, acc;
	unsigned char last[16];

	for (int i = 0; i < 8; i++)
		x[i] = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
	x[0] = _mm_xor_si128(x[0], _mm_cvtsi64_si128((long long)crc));
	p += 128;
	n -= 128;
	k = fold_const(8);
	while (n >= 128) {
		for (int i = 0; i < 8; i++)
			x[i] = _mm_xor_si128(
				fold(x[i], k),
				_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)));
		p += 128;
		n -= 128;
	}
	acc = x[7];
	for (int i = 0; i < 7; i++)
		acc = _mm_xor_si128(acc, fold(x[i], fold_const(7 - i)));
	k = fold_const(1);
	while (n >= 16) {
		acc = _mm_xor_si128(fold(acc, k),
				    _mm_loadu_si128((const __m128i *)(const void *)p));
		p += 16;
		n -= 16;
	}
	_mm_storeu_si128((__m128i *)(void *)last, acc);
	return crc64_table(crc64_table(0, last, 16), p, n);
}
#endif

static uint64_t crc64_update(uint64_t crc, const unsigned char *p, size_t n)
{
#ifdef HAVE_PCLMUL
	if (use_pclmul && n >= 256)
		return crc64_pclmul(crc, p, n);
#endif
	return crc64_table(crc, p, n);
}

static void crc32c_update(uint32_t *crc, const unsigned char *p, size_t n)
{
	/* crc32_iscsi takes an int length and a non-const buffer it only
	 * reads. */
	while (n) {
		int k = n > (1u << 30) ? 1 << 30 : (int)n;

		*crc = crc32_iscsi((unsigned char *)(uintptr_t)p, k, *crc);
		p += k;
		n -= (size_t)k;
	}
}

uint32_t spx_crc32c(const void *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	crc32c_update(&c, p, n);
	return c ^ 0xffffffffu;
}

/* OpenSSL 3 looks an algorithm up in its provider tables (under a lock)
 * at every use of EVP_sha256() and friends, and HMAC() fetches HMAC and
 * its digest at every call: on a small GET that was a few percent of the
 * gateway, more with eight threads contending. Each is fetched once. */
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static EVP_MD *md_sha1, *md_sha256, *md_md5;
static EVP_MAC *mac_hmac;
static pthread_key_t hmac_key;

static void hmac_ctx_free(void *ctx)
{
	EVP_MAC_CTX_free(ctx);
}

static void md_init(void)
{
	md_sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
	md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	md_md5 = EVP_MD_fetch(NULL, "MD5", NULL);
	mac_hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (!md_sha1 || !md_sha256 || !md_md5 || !mac_hmac ||
	    pthread_key_create(&hmac_key, hmac_ctx_free))
		spx_die(SPX_FAIL, "OpenSSL has no SHA-1, SHA-256, MD5 or HMAC");
}

const struct evp_md_st *spx_md(enum spx_cksum_algo algo)
{
	pthread_once(&md_once, md_init);
	switch (algo) {
	case SPX_CKSUM_SHA1:
		return md_sha1;
	case SPX_CKSUM_SHA256:
		return md_sha256;
	case SPX_CKSUM_MD5:
		return md_md5;
	default:
		return NULL;
	}
}

/* Each thread keeps one HMAC-SHA-256 context, set up once: a new key
 * restarts it without another lookup. */
bool spx_hmac_sha256(const void *key, size_t klen, const void *msg,
		     size_t mlen, unsigned char out[32])
{
	EVP_MAC_CTX *c;
	size_t n = 0;

	pthread_once(&md_once, md_init);
	c = pthread_getspecific(hmac_key);
	if (!c) {
		OSSL_PARAM p[] = {
			OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
							 (char *)"SHA256", 0),
			OSSL_PARAM_construct_end(),
		};

		if (!(c = EVP_MAC_CTX_new(mac_hmac)))
			return false;
		if (!EVP_MAC_CTX_set_params(c, p) ||
		    pthread_setspecific(hmac_key, c)) {
			EVP_MAC_CTX_free(c);
			return false;
		}
	}
	return EVP_MAC_init(c, key, klen, NULL) == 1 &&
	       EVP_MAC_update(c, msg, mlen) == 1 &&
	       EVP_MAC_final(c, out, &n, 32) == 1 && n == 32;
}

int spx_cksum_init(struct spx_cksum *c, enum spx_cksum_algo algo)
{
	const EVP_MD *md;

	memset(c, 0, sizeof(*c));
	if (!valid(algo)) {
		c->state = DONE;
		return spx_error(SPX_USAGE, "invalid checksum algorithm %d",
				 (int)algo);
	}
	c->algo = algo;
	pthread_once(&crc_once, crc_init);
	switch (algo) {
	case SPX_CKSUM_CRC32:
		c->u.crc32 = 0;
		return 0;
	case SPX_CKSUM_CRC32C:
		c->u.crc32 = 0xffffffffu;
		return 0;
	case SPX_CKSUM_CRC64NVME:
		c->u.crc64 = ~0ULL;
		return 0;
	default:
		break;
	}
	md = spx_md(algo);
	if (!(c->u.md = EVP_MD_CTX_new()) || !md ||
	    !EVP_DigestInit_ex(c->u.md, md, NULL)) {
		EVP_MD_CTX_free(c->u.md);
		c->u.md = NULL;
		c->state = DONE;
		return spx_error(SPX_FAIL, "cannot start %s digest",
				 algos[algo].name);
	}
	return 0;
}

void spx_cksum_update(struct spx_cksum *c, const void *data, size_t len)
{
	const unsigned char *p = data;

	if (c->state != LIVE || !len)
		return;
	switch (c->algo) {
	case SPX_CKSUM_CRC32:
		c->u.crc32 = crc32_gzip_refl(c->u.crc32, p, len);
		break;
	case SPX_CKSUM_CRC32C:
		crc32c_update(&c->u.crc32, p, len);
		break;
	case SPX_CKSUM_CRC64NVME:
		c->u.crc64 = crc64_update(c->u.crc64, p, len);
		break;
	default:
		if (!EVP_DigestUpdate(c->u.md, p, len))
			c->state = FAILED;
		break;
	}
}

static void put_be(unsigned char *out, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int spx_cksum_final(struct spx_cksum *c, unsigned char out[SPX_CKSUM_MAX],
		    size_t *len)
{
	unsigned int n;
	int state = c->state;

	c->state = DONE;
	if (state == DONE)
		return spx_error(SPX_USAGE, "checksum already finished");
	if (state == FAILED)
		return spx_error(SPX_FAIL, "cannot compute %s digest",
				 algos[c->algo].name);
	switch (c->algo) {
	case SPX_CKSUM_CRC32:
		put_be(out, c->u.crc32, 4);
		break;
	case SPX_CKSUM_CRC32C:
		put_be(out, c->u.crc32 ^ 0xffffffffu, 4);
		break;
	case SPX_CKSUM_CRC64NVME:
		put_be(out, c->u.crc64 ^ ~0ULL, 8);
		break;
	default:
		if (!EVP_DigestFinal_ex(c->u.md, out, &n) ||
		    n != algos[c->algo].size)
			return spx_error(SPX_FAIL, "cannot compute %s digest",
					 algos[c->algo].name);
		break;
	}
	if (len)
		*len = algos[c->algo].size;
	return 0;
}

void spx_cksum_release(struct spx_cksum *c)
{
	if (valid(c->algo) && !is_crc(c->algo)) {
		EVP_MD_CTX_free(c->u.md);
		c->u.md = NULL;
	}
	c->state = DONE;
}

int spx_cksum_digest(enum spx_cksum_algo algo, const void *data, size_t len,
		     unsigned char out[SPX_CKSUM_MAX], size_t *outlen)
{
	struct spx_cksum c;
	int rc;

	if (spx_cksum_init(&c, algo) < 0)
		return -1;
	spx_cksum_update(&c, data, len);
	rc = spx_cksum_final(&c, out, outlen);
	spx_cksum_release(&c);
	return rc;
}

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void spx_base64_encode(const void *data, size_t len, struct spx_buf *out)
{
	const unsigned char *p = data;
	char *o;

	spx_buf_grow(out, SPX_BASE64_LEN(len));
	o = out->p + out->len;
	for (; len >= 3; len -= 3, p += 3) {
		*o++ = b64_alphabet[p[0] >> 2];
		*o++ = b64_alphabet[(p[0] & 3) << 4 | p[1] >> 4];
		*o++ = b64_alphabet[(p[1] & 15) << 2 | p[2] >> 6];
		*o++ = b64_alphabet[p[2] & 63];
	}
	if (len) {
		*o++ = b64_alphabet[p[0] >> 2];
		if (len == 1) {
			*o++ = b64_alphabet[(p[0] & 3) << 4];
			*o++ = '=';
		} else {
			*o++ = b64_alphabet[(p[0] & 3) << 4 | p[1] >> 4];
			*o++ = b64_alphabet[(p[1] & 15) << 2];
		}
		*o++ = '=';
	}
	spx_buf_setlen(out, (size_t)(o - out->p));
}

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int spx_base64_decode(const char *s, size_t len, void *out, size_t outsz,
		      size_t *outlen)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char *o = out;
	size_t pad = 0, n;

	*outlen = 0;
	if (len % 4)
		return spx_error(SPX_USAGE,
				 "malformed base64: length %zu is not a "
				 "multiple of 4", len);
	if (len && s[len - 1] == '=')
		pad = s[len - 2] == '=' ? 2 : 1;
	n = len / 4 * 3 - pad;
	if (n > outsz)
		return spx_error(SPX_USAGE,
				 "base64 value too long: %zu bytes, at most %zu",
				 n, outsz);
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		size_t k = i + 4 == len ? 4 - pad : 4;
		uint32_t w = 0;

		for (size_t j = 0; j < 4; j++) {
			v[j] = j < k ? b64val(u[i + j]) : 0;
			if (v[j] < 0)
				return spx_error(SPX_USAGE,
						 "malformed base64: bad "
						 "character at offset %zu",
						 i + j);
			w = w << 6 | (uint32_t)v[j];
		}
		/* Unused bits must be zero: one encoding per value. */
		if ((k == 3 && (w & 0xff)) || (k == 2 && (w & 0xffff)))
			return spx_error(SPX_USAGE,
					 "malformed base64: nonzero padding "
					 "bits");
		*o++ = (unsigned char)(w >> 16);
		if (k > 2)
			*o++ = (unsigned char)(w >> 8);
		if (k > 3)
			*o++ = (unsigned char)w;
	}
	*outlen = n;
	return 0;
}

int spx_cksum_verify_b64(enum spx_cksum_algo algo, const char *b64,
			 const unsigned char *computed,
			 enum spx_cksum_verdict *why)
{
	unsigned char d[SPX_CKSUM_MAX];
	struct spx_buf want = SPX_BUF_INIT;
	size_t n, len;

	if (why)
		*why = SPX_CKSUM_MALFORMED;
	if (!valid(algo))
		return spx_error(SPX_USAGE, "invalid checksum algorithm %d",
				 (int)algo);
	n = algos[algo].size;
	len = strlen(b64);
	if (len != SPX_BASE64_LEN(n) ||
	    spx_base64_decode(b64, len, d, sizeof(d), &len) < 0 || len != n)
		return spx_error(SPX_USAGE,
				 "malformed %s: not the base64 of %zu bytes",
				 algos[algo].header, n);
	if (memcmp(d, computed, n)) {
		if (why)
			*why = SPX_CKSUM_MISMATCH;
		spx_base64_encode(computed, n, &want);
		spx_error(SPX_USAGE, "%s mismatch: sent '%s', computed '%s'",
			  algos[algo].header, b64, want.p);
		spx_buf_release(&want);
		return -1;
	}
	if (why)
		*why = SPX_CKSUM_OK;
	return 0;
}

int spx_cksum_composite(enum spx_cksum_algo algo, const unsigned char *digests,
			size_t nparts, struct spx_buf *out)
{
	unsigned char d[SPX_CKSUM_MAX];
	size_t n;

	if (!valid(algo) || algo == SPX_CKSUM_MD5)
		return spx_error(SPX_USAGE,
				 "no composite checksum for algorithm %d",
				 (int)algo);
	n = algos[algo].size;
	if (!nparts || nparts > SIZE_MAX / n)
		return spx_error(SPX_USAGE,
				 "composite checksum of %zu parts", nparts);
	if (spx_cksum_digest(algo, digests, nparts * n, d, NULL) < 0)
		return -1;
	spx_base64_encode(d, n, out);
	spx_buf_addf(out, "-%zu", nparts);
	return 0;
}

int spx_cksum_combine(enum spx_cksum_algo algo, unsigned char *acc,
		      const unsigned char *part, uint64_t part_len)
{
	int a = (int)algo, w;
	uint64_t x, crc, rpoly;

	if (!valid(algo) || !is_crc(algo))
		return spx_error(SPX_USAGE, "cannot combine %s checksums",
				 valid(algo) ? algos[algo].name : "invalid");
	pthread_once(&crc_once, crc_init);
	w = crcs[a].w;
	rpoly = crcs[a].rpoly;
	/* crc(AB) = crc(A) x^(8|B|) + crc(B) mod P, as zlib's crc32_combine:
	 * the equal init and xorout cancel. x^(8|B|) = prod x^(2^k) over the
	 * bits k of 8|B|. */
	x = 1ULL << (w - 1);
	for (int k = 3; part_len; part_len >>= 1, k++)
		if (part_len & 1)
			x = multmodp(x2n_tab[a][k], x, w, rpoly);
	crc = multmodp(x, get_be(acc, (size_t)w / 8), w, rpoly) ^
	      get_be(part, (size_t)w / 8);
	put_be(acc, crc, (size_t)w / 8);
	return 0;
}

int spx_etag_multipart(const unsigned char (*md5s)[16], size_t n,
		       char out[SPX_ETAG_MAX])
{
	unsigned char d[SPX_CKSUM_MAX];
	int k;

	out[0] = '\0';
	if (!n || n > SIZE_MAX / 16)
		return spx_error(SPX_USAGE, "multipart etag of %zu parts", n);
	if (spx_cksum_digest(SPX_CKSUM_MD5, md5s, n * 16, d, NULL) < 0)
		return -1;
	spx_hex_encode(d, 16, out);
	k = snprintf(out + 32, SPX_ETAG_MAX - 32, "-%zu", n);
	if (k < 0 || (size_t)k >= SPX_ETAG_MAX - 32)
		return spx_error(SPX_FAIL, "multipart etag truncated");
	return 0;
}
