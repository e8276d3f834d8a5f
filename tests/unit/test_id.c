/* Unit tests for lib/core/id: formats, validity, uniqueness. */
#include "spx.h"

#include <sys/wait.h>


#include "id.h"
#include "t.h"

#define N 10000

static bool all_of(const char *s, const char *alphabet)
{
	return s[strspn(s, alphabet)] == '\0';
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the n strings in v are all different. */
static bool unique(char **v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(v[i - 1], v[i]))
			return false;
	return true;
}

static void free_all(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
}

static const char *const prefixes[] = {
	"i",   "vol",	 "snap", "ami",	    "sg",	  "vpc",
	"subnet", "eni", "eipalloc", "eipassoc", "key", "igw",
	"rtb", "acl",	 "r",	 "tgw-attach", "vpce-svc", "lt",
	"export-i", "a1",
};

static void test_new(void)
{
	char id[SPX_ID_SIZE];

	for (size_t i = 0; i < SPX_ARRAY_SIZE(prefixes); i++) {
		const char *p = prefixes[i];
		size_t pl = strlen(p);

		T_INT(spx_id_new(id, sizeof(id), p), 0, "new '%s'", p);
		T_INT(strlen(id), pl + 1 + 17, "'%s' is 17 hex long", id);
		T_OK(!strncmp(id, p, pl) && id[pl] == '-',
		     "'%s' starts with '%s-'", id, p);
		T_OK(all_of(id + pl + 1, "0123456789abcdef"),
		     "'%s' is lowercase hex", id);
		T_OK(spx_id_valid(id, p), "'%s' is valid for '%s'", id, p);
		T_OK(spx_id_valid(id, NULL), "'%s' is valid for any prefix", id);
	}
	T_INT(spx_id_new(id, 2 + 17 + 1, "i"), 0, "an exact buffer is enough");
	T_INT(spx_id_new(id, 2 + 17, "i"), -1, "a buffer one short fails");
	T_INT(spx_errstatus(), SPX_USAGE, "a short buffer is a usage error");
	T_STR(spx_errmsg(), "buffer of 19 bytes too small for an id (20)",
	      "a short buffer: message");
}

static void test_bad_prefix(void)
{
	static const char *const bad[] = {
		"", "I", "1a", "a_b", "-a", "a-", "a--b", "a b", "a.b", "é",
		"abcdefghijklmnopqrstuvwxyzabcdefg", /* 33 */
	};
	char id[SPX_ID_SIZE + 8];

	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++) {
		T_INT(spx_id_new(id, sizeof(id), bad[i]), -1,
		      "prefix '%s' is refused", bad[i]);
		T_OK(!spx_id_prefix_valid(bad[i]), "prefix '%s' is invalid",
		     bad[i]);
	}
	T_INT(spx_id_new(id, sizeof(id), NULL), -1, "a NULL prefix is refused");
	T_STR(spx_errmsg(), "invalid id prefix '(null)'", "NULL prefix: message");
	T_INT(spx_id_new(id, sizeof(id), "a-"), -1, "prefix 'a-'");
	T_STR(spx_errmsg(), "invalid id prefix 'a-'", "bad prefix: message");
	T_OK(spx_id_prefix_valid("abcdefghijklmnopqrstuvwxyzabcdef"),
	     "a prefix of 32 is fine");
	T_INT(spx_id_new(id, sizeof(id), "abcdefghijklmnopqrstuvwxyzabcdef"), 0,
	      "an id with the longest prefix fits SPX_ID_SIZE");
}

static void test_valid(void)
{
	static const struct {
		const char *id, *prefix;
		bool ok;
	} t[] = {
		{ "i-0123456789abcdef0", "i", true },
		{ "i-0123456789abcdef0", NULL, true },
		{ "i-12345678", "i", true }, /* legacy */
		{ "vol-12345678", NULL, true },
		{ "tgw-attach-0123456789abcdef0", "tgw-attach", true },
		{ "tgw-attach-0123456789abcdef0", NULL, true },
		{ "i-0123456789abcdef0", "vol", false },
		{ "vol-0123456789abcdef0", "i", false },
		{ "ii-0123456789abcdef0", "i", false },
		{ "i-0123456789ABCDEF0", "i", false },
		{ "i-0123456789abcdef", "i", false },	/* 16 */
		{ "i-0123456789abcdef01", "i", false }, /* 18 */
		{ "i-1234567", "i", false },
		{ "i-123456789", "i", false },
		{ "i-0123456789abcdefg", "i", false },
		{ "i-", "i", false },
		{ "i", "i", false },
		{ "", "i", false },
		{ "", NULL, false },
		{ "-0123456789abcdef0", NULL, false },
		{ "0123456789abcdef0", NULL, false },
		{ "I-0123456789abcdef0", NULL, false },
		{ "i_0123456789abcdef0", NULL, false },
		{ "i-0123456789abcdef0 ", "i", false },
		{ " i-0123456789abcdef0", NULL, false },
		{ "i--0123456789abcdef0", NULL, false },
		{ "i-0123456789abcdef0\n", NULL, false },
		{ "abcdefghijklmnopqrstuvwxyzabcdefg-12345678", NULL, false },
		{ "i-12345678", "I", false },
		{ NULL, "i", false },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++)
		T_INT(spx_id_valid(t[i].id, t[i].prefix), t[i].ok,
		      "valid %zu: '%s' for '%s'", i, t[i].id ? t[i].id : "(null)",
		      t[i].prefix ? t[i].prefix : "(any)");
}

static void test_unique(void)
{
	char **v = spx_calloc(N, sizeof(*v));
	char buf[SPX_ID_SIZE];
	unsigned seen[17] = { 0 };
	int bad = 0;

	for (size_t i = 0; i < N; i++) {
		bad += spx_id_new(buf, sizeof(buf), "i") < 0;
		v[i] = spx_strdup(buf);
		/* Every hex digit turns up at every position. */
		for (int p = 0; p < 17; p++) {
			char c = buf[2 + p];
			int d = c <= '9' ? c - '0' : c - 'a' + 10;

			seen[p] |= 1u << d;
		}
	}
	T_INT(bad, 0, "%d ids generate", N);
	bad = 0;
	for (int p = 0; p < 17; p++)
		bad += seen[p] != 0xFFFF;
	T_INT(bad, 0, "every digit appears at every position");
	T_OK(unique(v, N), "%d ids are unique", N);
	free_all(v, N);

	for (size_t i = 0; i < N; i++) {
		char u[SPX_UUID_SIZE];

		bad += spx_request_id(u, sizeof(u)) < 0;
		v[i] = spx_strdup(u);
	}
	T_INT(bad, 0, "%d request ids generate", N);
	T_OK(unique(v, N), "%d request ids are unique", N);
	free_all(v, N);

	for (size_t i = 0; i < N; i++) {
		char u[SPX_S3_REQID_SIZE];

		bad += spx_s3_request_id(u, sizeof(u)) < 0;
		v[i] = spx_strdup(u);
	}
	T_INT(bad, 0, "%d s3 request ids generate", N);
	T_OK(unique(v, N), "%d s3 request ids are unique", N);
	free_all(v, N);
	free(v);
}

/* The request ids come from a per-thread pool: a forked child must not
 * draw what its parent draws next. */
static void test_fork(void)
{
	char mine[SPX_S3_HOSTID_SIZE], theirs[SPX_S3_HOSTID_SIZE] = "";
	int fd[2], st = 0;
	pid_t pid;

	spx_s3_host_id(mine, sizeof(mine)); /* the pool is full now */
	if (pipe(fd) < 0 || (pid = fork()) < 0) {
		T_OK(0, "pipe and fork");
		return;
	}
	if (!pid) {
		char c[SPX_S3_HOSTID_SIZE];

		close(fd[0]);
		spx_s3_host_id(c, sizeof(c));
		_exit(write(fd[1], c, sizeof(c)) == (ssize_t)sizeof(c) ? 0
								      : 1);
	}
	close(fd[1]);
	T_OK(read(fd[0], theirs, sizeof(theirs)) == (ssize_t)sizeof(theirs),
	     "the child's host id");
	close(fd[0]);
	waitpid(pid, &st, 0);
	spx_s3_host_id(mine, sizeof(mine));
	theirs[sizeof(theirs) - 1] = '\0';
	T_OK(strcmp(mine, theirs) != 0,
	     "a forked child does not draw its parent's next id");
}

static void test_request_ids(void)
{
	char u[SPX_UUID_SIZE], s[SPX_S3_HOSTID_SIZE];
	int bad = 0;

	for (int i = 0; i < 1000; i++) {
		bad += spx_request_id(u, sizeof(u)) < 0;
		bad += !(strlen(u) == 36 && u[8] == '-' && u[13] == '-' &&
			 u[18] == '-' && u[23] == '-' && u[14] == '4' &&
			 strchr("89ab", u[19]) &&
			 all_of(u, "0123456789abcdef-") &&
			 strspn(u, "0123456789abcdef") == 8);
	}
	T_INT(bad, 0, "request ids are lowercase v4 uuids (8-4-4-4-12)");
	T_INT(spx_request_id(u, 36), -1, "a uuid needs 37 bytes");

	T_INT(spx_s3_request_id(s, SPX_S3_REQID_SIZE), 0, "s3 request id");
	T_INT(strlen(s), 16, "s3 request id is 16 long");
	T_OK(all_of(s, "0123456789ABCDEF"), "s3 request id '%s' is upper hex",
	     s);
	T_INT(spx_s3_request_id(s, 16), -1, "s3 request id needs 17 bytes");

	T_INT(spx_s3_host_id(s, sizeof(s)), 0, "s3 host id");
	T_INT(strlen(s), 64, "s3 host id is 64 long");
	T_OK(all_of(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		       "0123456789+/"),
	     "s3 host id '%s' is base64", s);
	T_INT(spx_s3_host_id(s, 64), -1, "s3 host id needs 65 bytes");

	T_INT(spx_s3_version_id(s, sizeof(s)), 0, "s3 version id");
	T_INT(strlen(s), 32, "s3 version id is 32 long");
	T_OK(all_of(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		       "0123456789._"),
	     "s3 version id '%s' is URL-safe", s);
	T_OK(spx_s3_version_id_valid(s), "a new version id is valid");
	T_OK(!spx_s3_version_id_valid("null"), "null is not a version id");
	T_OK(!spx_s3_version_id_valid("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/"),
	     "'/' is not in a version id");
	T_OK(!spx_s3_version_id_valid("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
	     "33 characters are too many");
	T_INT(spx_s3_version_id(s, 32), -1, "s3 version id needs 33 bytes");
}

static void test_keys(void)
{
	static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const struct {
		const char *s;
		bool ok;
	} ak[] = {
		{ "AKIAIOSFODNN7EXAMPLE", true },
		{ "ASIAIOSFODNN7EXAMPLE", true },
		{ "AKIA2345672345672345", true },
		{ "AKIAIOSFODNN7EXAMPL", false },
		{ "AKIAIOSFODNN7EXAMPLEE", false },
		{ "AKIAIOSFODNN1EXAMPLE", false }, /* 1 is not base32 */
		{ "AKIAIOSFODNN8EXAMPLE", false },
		{ "AKIAiosfodnn7example", false },
		{ "AIDAIOSFODNN7EXAMPLE", false },
		{ "akiaIOSFODNN7EXAMPLE", false },
		{ "", false },
		{ NULL, false },
	};
	static const struct {
		const char *s;
		bool ok;
	} acct[] = {
		{ "123456789012", true }, { "000000000000", true },
		{ "12345678901", false }, { "1234567890123", false },
		{ "12345678901a", false }, { "-12345678901", false },
		{ " 12345678901", false }, { "", false },
		{ NULL, false },
	};
	char k[SPX_SECRET_KEY_SIZE + 8];
	char chars[256] = { 0 };
	size_t nchars = 0;
	int bad = 0;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(ak); i++)
		T_INT(spx_access_key_valid(ak[i].s), ak[i].ok,
		      "access key valid %zu '%s'", i,
		      ak[i].s ? ak[i].s : "(null)");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(acct); i++)
		T_INT(spx_account_id_valid(acct[i].s), acct[i].ok,
		      "account id valid %zu '%s'", i,
		      acct[i].s ? acct[i].s : "(null)");

	T_INT(spx_access_key_new(k, SPX_ACCESS_KEY_SIZE, false), 0,
	      "access key");
	T_OK(strlen(k) == 20 && !strncmp(k, "AKIA", 4) && all_of(k + 4, b32),
	     "access key '%s' is AKIA + 16 base32", k);
	T_OK(spx_access_key_valid(k), "a new access key is valid");
	T_INT(spx_access_key_new(k, SPX_ACCESS_KEY_SIZE, true), 0,
	      "temporary access key");
	T_OK(!strncmp(k, "ASIA", 4) && spx_access_key_valid(k),
	     "temporary access key '%s' is ASIA", k);
	T_INT(spx_access_key_new(k, 20, false), -1, "access key needs 21 bytes");

	T_INT(spx_secret_key_new(k, SPX_SECRET_KEY_SIZE), 0, "secret key");
	T_OK(strlen(k) == 40 && all_of(k, b64), "secret key '%s'", k);
	T_INT(spx_secret_key_new(k, 40), -1, "secret key needs 41 bytes");

	T_INT(spx_account_id_new(k, SPX_ACCOUNT_ID_SIZE), 0, "account id");
	T_OK(spx_account_id_valid(k), "account id '%s' is 12 digits", k);
	T_INT(spx_account_id_new(k, 12), -1, "account id needs 13 bytes");

	/* Over 1000 keys, every letter of each alphabet shows up. */
	for (int i = 0; i < 1000; i++) {
		bad += spx_access_key_new(k, sizeof(k), false) < 0;
		for (const char *c = k + 4; *c; c++)
			chars[(unsigned char)*c] = 1;
	}
	for (const char *c = b32; *c; c++)
		nchars += chars[(unsigned char)*c];
	T_INT(bad, 0, "1000 access keys");
	T_INT(nchars, 32, "access keys use all 32 letters");
	memset(chars, 0, sizeof(chars));
	nchars = 0;
	for (int i = 0; i < 1000; i++) {
		bad += spx_secret_key_new(k, sizeof(k)) < 0;
		for (const char *c = k; *c; c++)
			chars[(unsigned char)*c] = 1;
	}
	for (const char *c = b64; *c; c++)
		nchars += chars[(unsigned char)*c];
	T_INT(nchars, 64, "secret keys use all 64 letters");
	memset(chars, 0, sizeof(chars));
	nchars = 0;
	for (int i = 0; i < 1000; i++) {
		bad += spx_account_id_new(k, sizeof(k)) < 0;
		chars[(unsigned char)k[0]] = 1;
		chars[(unsigned char)k[11]] = 1;
	}
	for (const char *c = "0123456789"; *c; c++)
		nchars += chars[(unsigned char)*c];
	T_INT(nchars, 10, "account ids use all 10 digits first and last");
	T_INT(bad, 0, "1000 secret keys and account ids");
}

int main(void)
{
	unsigned char r[300];

	T_INT(spx_random(r, sizeof(r)), 0, "300 random bytes");
	T_INT(spx_random(r, 0), 0, "0 random bytes");
	test_new();
	test_bad_prefix();
	test_valid();
	test_unique();
	test_fork();
	test_request_ids();
	test_keys();
	return t_done();
}
