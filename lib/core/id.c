/* id.c: identifiers and secrets (contract in id.h). */
#include "spx.h"

#include <pthread.h>
#include <sys/random.h>

#include "id.h"

static const char hexl[] = "0123456789abcdef";
static const char hexu[] = "0123456789ABCDEF";
static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/* base64 with '.' and '_' for '+' and '/': safe in URLs and file names. */
static const char b64safe[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._";

int spx_random(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n) {
		ssize_t r = getrandom(p, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return spx_error_errno(SPX_FAIL, "getrandom");
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int room(size_t outsz, size_t need, const char *what)
{
	if (outsz < need)
		return spx_error(SPX_USAGE,
				 "buffer of %zu bytes too small for %s (%zu)",
				 outsz, what, need);
	return 0;
}

/* Request and host ids, two on every request, are drawn from a
 * per-thread pool of getrandom(2)'s bytes, refilled 4 KiB at a time:
 * one call per some sixty requests instead of two per request. A forked
 * child starts with an empty pool (pthread_atfork), so that it never
 * repeats its parent's. Stored ids and secrets call getrandom
 * themselves. */
static _Thread_local unsigned char pool[4096];
static _Thread_local size_t pool_left;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_child(void)
{
	pool_left = 0;
}

static void pool_init(void)
{
	pthread_atfork(NULL, NULL, pool_child);
}

static int pooled_random(void *buf, size_t n)
{
	pthread_once(&pool_once, pool_init);
	if (pool_left < n) {
		if (spx_random(pool, sizeof(pool)) < 0)
			return -1;
		pool_left = sizeof(pool);
	}
	memcpy(buf, pool + sizeof(pool) - pool_left, n);
	pool_left -= n;
	return 0;
}

/* n characters, each a random index into alphabet abc of 2^bits letters
 * (from the pool when pooled). */
static int random_chars(char *out, size_t n, const char *abc, unsigned bits,
			bool pooled)
{
	unsigned char r[64];
	size_t need = (n * bits + 7) / 8, byte = 0;
	uint64_t acc = 0;
	unsigned have = 0;

	if (need > sizeof(r))
		return spx_error(SPX_USAGE, "%zu random characters are too many",
				 n);
	if ((pooled ? pooled_random(r, need) : spx_random(r, need)) < 0)
		return -1;
	/* The bits of r in order, most significant first, bits at a time. */
	for (size_t i = 0; i < n; i++) {
		while (have < bits) {
			acc = acc << 8 | r[byte++];
			have += 8;
		}
		have -= bits;
		out[i] = abc[(acc >> have) & ((1u << bits) - 1)];
	}
	out[n] = '\0';
	return 0;
}

bool spx_id_prefix_valid(const char *prefix)
{
	size_t i;

	if (!prefix || !(*prefix >= 'a' && *prefix <= 'z'))
		return false;
	for (i = 1; prefix[i]; i++) {
		char c = prefix[i];

		if (i >= SPX_ID_PREFIXMAX)
			return false;
		if (c == '-' && prefix[i - 1] != '-' && prefix[i + 1])
			continue;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

int spx_id_new(char *out, size_t outsz, const char *prefix)
{
	size_t pl;

	if (!spx_id_prefix_valid(prefix))
		return spx_error(SPX_USAGE, "invalid id prefix '%.*s'",
				 SPX_ID_PREFIXMAX, prefix ? prefix : "(null)");
	pl = strlen(prefix);
	if (room(outsz, pl + 1 + SPX_ID_HEX + 1, "an id") < 0)
		return -1;
	memcpy(out, prefix, pl);
	out[pl] = '-';
	return random_chars(out + pl + 1, SPX_ID_HEX, hexl, 4, false);
}

static bool lowerhex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool spx_id_valid(const char *id, const char *prefix)
{
	const char *dash;
	size_t pl, hl;

	if (!id)
		return false;
	if (prefix) {
		pl = strlen(prefix);
		if (strncmp(id, prefix, pl) || id[pl] != '-' ||
		    !spx_id_prefix_valid(prefix))
			return false;
	} else {
		/* The hex part holds no '-': the prefix ends at the last. */
		char p[SPX_ID_PREFIXMAX + 1];

		dash = strrchr(id, '-');
		if (!dash || (size_t)(dash - id) > SPX_ID_PREFIXMAX)
			return false;
		pl = (size_t)(dash - id);
		memcpy(p, id, pl);
		p[pl] = '\0';
		if (!spx_id_prefix_valid(p))
			return false;
	}
	hl = strlen(id + pl + 1);
	return (hl == SPX_ID_HEX || hl == SPX_ID_HEX_LEGACY) &&
	       lowerhex(id + pl + 1, hl);
}

int spx_request_id(char *out, size_t outsz)
{
	unsigned char r[16];
	size_t o = 0;

	if (room(outsz, SPX_UUID_SIZE, "a request id") < 0 ||
	    pooled_random(r, sizeof(r)) < 0)
		return -1;
	r[6] = (unsigned char)((r[6] & 0x0F) | 0x40); /* version 4 */
	r[8] = (unsigned char)((r[8] & 0x3F) | 0x80); /* RFC 4122 variant */
	for (size_t i = 0; i < sizeof(r); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hexl[r[i] >> 4];
		out[o++] = hexl[r[i] & 15];
	}
	out[o] = '\0';
	return 0;
}

int spx_s3_request_id(char *out, size_t outsz)
{
	if (room(outsz, SPX_S3_REQID_SIZE, "a request id") < 0)
		return -1;
	return random_chars(out, SPX_S3_REQID_SIZE - 1, hexu, 4, true);
}

int spx_s3_host_id(char *out, size_t outsz)
{
	if (room(outsz, SPX_S3_HOSTID_SIZE, "a host id") < 0)
		return -1;
	/* 64 characters of 6 bits: the base64 of 48 random bytes. */
	return random_chars(out, SPX_S3_HOSTID_SIZE - 1, b64, 6, true);
}

int spx_s3_version_id(char *out, size_t outsz)
{
	if (room(outsz, SPX_S3_VERSION_ID_SIZE, "a version id") < 0)
		return -1;
	/* 192 random bits: unique without coordination between nodes. */
	return random_chars(out, SPX_S3_VERSION_ID_SIZE - 1, b64safe, 6, false);
}

bool spx_s3_version_id_valid(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= SPX_S3_VERSION_ID_SIZE - 1 || !strchr(b64safe, s[n]))
			return false;
	return n == SPX_S3_VERSION_ID_SIZE - 1;
}

int spx_access_key_new(char *out, size_t outsz, bool temporary)
{
	if (room(outsz, SPX_ACCESS_KEY_SIZE, "an access key id") < 0)
		return -1;
	memcpy(out, temporary ? "ASIA" : "AKIA", 4);
	return random_chars(out + 4, SPX_ACCESS_KEY_SIZE - 5, b32, 5, false);
}

int spx_secret_key_new(char *out, size_t outsz)
{
	if (room(outsz, SPX_SECRET_KEY_SIZE, "a secret key") < 0)
		return -1;
	return random_chars(out, SPX_SECRET_KEY_SIZE - 1, b64, 6, false);
}

int spx_account_id_new(char *out, size_t outsz)
{
	const uint64_t range = 1000000000000ULL; /* 10^12 */
	const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
	uint64_t v;

	if (room(outsz, SPX_ACCOUNT_ID_SIZE, "an account id") < 0)
		return -1;
	do {
		if (spx_random(&v, sizeof(v)) < 0)
			return -1;
	} while (v >= limit);
	v %= range;
	for (int i = 11; i >= 0; i--) {
		out[i] = (char)('0' + v % 10);
		v /= 10;
	}
	out[12] = '\0';
	return 0;
}

bool spx_access_key_valid(const char *s)
{
	if (!s || (strncmp(s, "AKIA", 4) && strncmp(s, "ASIA", 4)) ||
	    strlen(s) != SPX_ACCESS_KEY_SIZE - 1)
		return false;
	for (size_t i = 4; s[i]; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '2' && s[i] <= '7')))
			return false;
	return true;
}

bool spx_account_id_valid(const char *s)
{
	size_t i;

	for (i = 0; s && s[i]; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return i == SPX_ACCOUNT_ID_SIZE - 1;
}
