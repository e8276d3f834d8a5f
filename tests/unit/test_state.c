/* Unit tests for lib/state: key validation, every operation and outcome,
 * list order and prefixes, corrupt records, stale temp files, and
 * concurrent writers (processes and threads) on one dir store. */
#include "spx.h"

#include "checksum.h"

#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "state/state.h"
#include "t.h"

static char root[] = "/tmp/spx-test-state.XXXXXX";
static char *store; /* root/s */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rm_one(const char *path, const struct stat *sb, int type,
		  struct FTW *ftw)
{
	return remove(path);
}

static pid_t main_pid;

/* atexit: remove the temp dir, also after spx_die (children _exit). */
static void cleanup(void)
{
	if (getpid() == main_pid)
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Write raw bytes to store/rel (no sync: test setup). */
static void put_file(const char *rel, const void *p, size_t n)
{
	char *path = spx_xprintf("%s/%s", store, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		spx_die_errno(SPX_FAIL, "cannot write '%s'", path);
	close(fd);
	free(path);
}

static int make_link(const char *target, const char *rel)
{
	char *path = spx_xprintf("%s/%s", store, rel);
	int rc = symlink(target, path);

	free(path);
	return rc;
}

static int file_exists(const char *rel)
{
	char *path = spx_xprintf("%s/%s", store, rel);
	struct stat sb;
	int rc = lstat(path, &sb) == 0;

	free(path);
	return rc;
}

static mode_t file_mode(const char *rel)
{
	char *path = spx_xprintf("%s/%s", store, rel);
	struct stat sb;
	mode_t m = lstat(path, &sb) == 0 ? sb.st_mode & 07777 : (mode_t)-1;

	free(path);
	return m;
}

/* key with control and non-ASCII bytes as \xNN, for a TAP line. */
static const char *shown(const char *key)
{
	static char out[256];
	size_t n = 0;

	for (; *key && n + 5 < sizeof(out); key++) {
		unsigned char c = (unsigned char)*key;

		if (c >= 0x20 && c < 0x7f)
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, sizeof(out) - n,
					      "\\x%02x", c);
	}
	out[n] = '\0';
	return out;
}

static void test_keys(void)
{
	static const struct {
		const char *key;
		int ok;
	} cases[] = {
		{ "a", 1 },
		{ "instances/i-0abc", 1 },
		{ "A/B/C", 1 },
		{ "images/ubuntu-24.04", 1 },
		{ "a_b-c.d", 1 },
		{ "a./b..c", 1 },
		{ "0/1/2/3/4/5/6/7/8/9", 1 },
		{ "", 0 },
		{ "/", 0 },
		{ "/a", 0 },
		{ "a/", 0 },
		{ "a//b", 0 },
		{ ".", 0 },
		{ "..", 0 },
		{ "a/./b", 0 },
		{ "a/../b", 0 },
		{ "../a", 0 },
		{ ".hidden", 0 },
		{ "a/.tmp.b", 0 },
		{ "a/.lock", 0 },
		{ "a b", 0 },
		{ "a\tb", 0 },
		{ "a\nb", 0 },
		{ "a:b", 0 },
		{ "a=b", 0 },
		{ "a*b", 0 },
		{ "a>b", 0 },
		{ "a\\b", 0 },
		{ "caf\xc3\xa9", 0 },
		{ "a\x7f", 0 },
	};
	char big[400];

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++)
		T_INT(spx_state_key_valid(cases[i].key), cases[i].ok,
		      "key '%s' is %s", shown(cases[i].key),
		      cases[i].ok ? "valid" : "invalid");
	T_INT(spx_state_key_valid(NULL), 0, "a NULL key is invalid");

	/* Lengths: a component of 250 is the most, a key of 256. */
	memset(big, 'x', sizeof(big));
	big[250] = '\0';
	T_INT(spx_state_key_valid(big), 1, "a 250-byte component is valid");
	big[250] = 'x';
	big[251] = '\0';
	T_INT(spx_state_key_valid(big), 0, "a 251-byte component is invalid");
	big[251] = 'x';
	big[100] = '/';
	big[201] = '/';
	big[256] = '\0';
	T_INT(spx_state_key_valid(big), 1, "a 256-byte key is valid");
	big[256] = 'x';
	big[257] = '\0';
	T_INT(spx_state_key_valid(big), 0, "a 257-byte key is invalid");
}

static void test_codes(void)
{
	T_INT(spx_state_status(SPX_STATE_OK), SPX_OK, "ok is status 0");
	T_INT(spx_state_status(SPX_STATE_NOTFOUND), SPX_NO,
	      "not found is status 1");
	T_INT(spx_state_status(SPX_STATE_EXISTS), SPX_NO, "exists is status 1");
	T_INT(spx_state_status(SPX_STATE_CONFLICT), SPX_NO,
	      "conflict is status 1");
	T_INT(spx_state_status(SPX_STATE_INVALID), SPX_USAGE,
	      "invalid is status 100");
	T_INT(spx_state_status(SPX_STATE_FAIL), SPX_FAIL,
	      "failure is status 111");
	T_STR(spx_state_strrc(SPX_STATE_CONFLICT), "conflict", "strrc names codes");
}

static void test_record_format(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	uint64_t rev;
	size_t off, len;

	T_INT(spx_crc32c("123456789", 9), 0xe3069283u,
	      "crc32c check value");
	T_INT(spx_crc32c("", 0), 0, "crc32c of nothing");
	spx_state_record_encode(&b, 42, "{\"a\":1}", 7);
	T_STR(b.p, "spx-state 1 rev=42 len=7 crc32c=cff7d56a\n{\"a\":1}",
	      "encode writes the header line and the value");
	T_INT(spx_state_record_decode(b.p, b.len, &rev, &off, &len), 0,
	      "decode accepts what encode wrote");
	T_OK(rev == 42 && len == 7 && !memcmp(b.p + off, "{\"a\":1}", 7),
	     "decode finds the revision and the value");
	T_INT(spx_state_record_decode(b.p, b.len - 1, &rev, &off, &len), -1,
	      "decode rejects a short value");
	b.p[b.len - 2] ^= 1;
	T_INT(spx_state_record_decode(b.p, b.len, &rev, &off, &len), -1,
	      "decode rejects a changed byte");
	T_OK(strstr(spx_errmsg(), "checksum") != NULL, "as a checksum mismatch");
	spx_buf_release(&b);
}

static void test_open(void)
{
	struct spx_state *st = (void *)1;
	char *p;

	T_INT(spx_state_open("", 0, &st), SPX_STATE_INVALID, "empty URL");
	T_OK(st == NULL, "a failed open leaves *out NULL");
	T_INT(spx_state_open("dir:", 0, &st), SPX_STATE_INVALID,
	      "empty dir path");
	T_INT(spx_state_open("nats:x", 0, &st), SPX_STATE_INVALID,
	      "unknown scheme");
	T_STR(spx_errmsg(), "unknown store type 'nats' in 'nats:x'",
	      "the message names the scheme");
	T_INT(spx_errstatus(), SPX_USAGE, "with usage status");
	T_INT(spx_state_open("foo:bar", 0, &st), SPX_STATE_INVALID,
	      "a relative path with a colon needs dir:");
	T_INT(spx_state_open(store, 4, &st), SPX_STATE_INVALID, "bad flags");
	T_INT(spx_state_open(store, 0, &st), SPX_STATE_FAIL,
	      "a missing store without SPX_STATE_CREATE");
	T_INT(spx_errstatus(), SPX_FAIL, "is a system failure");
	T_INT(spx_state_open(store, SPX_STATE_CREATE, &st), 0,
	      "SPX_STATE_CREATE makes the store");
	spx_state_close(st);
	T_INT(file_mode("."), 0700, "the store directory is 0700");
	T_OK(file_exists(".lock"), "and has its lock file");
	p = spx_xprintf("dir:%s", store);
	T_INT(spx_state_open(p, 0, &st), 0, "dir:PATH opens it");
	spx_state_close(st);
	free(p);
	p = spx_xprintf("%s/x:y/z", root);
	T_INT(spx_state_open(p, SPX_STATE_CREATE, &st), 0,
	      "a path with a colon after a slash is a path");
	spx_state_close(st);
	free(p);
	spx_state_close(NULL);
}

static void test_ops(struct spx_state *st)
{
	struct spx_buf v = SPX_BUF_INIT;
	char *big;
	uint64_t rev = 99;

	T_INT(spx_state_get(st, "instances/i-0abc", &v, &rev),
	      SPX_STATE_NOTFOUND, "get of a missing record");
	T_INT(spx_errstatus(), SPX_NO, "is a negative answer");
	T_STR(spx_errmsg(), "no record 'instances/i-0abc'", "message");
	T_INT(rev, 0, "and sets the revision to 0");

	T_INT(spx_state_create(st, "instances/i-0abc", "{\"s\":1}", 7, &rev), 0,
	      "create");
	T_INT(rev, 1, "a new record is at revision 1");
	T_INT(file_mode("instances"), 0700, "directories are 0700");
	T_INT(file_mode("instances/i-0abc"), 0600, "record files are 0600");
	T_INT(spx_state_create(st, "instances/i-0abc", "x", 1, &rev),
	      SPX_STATE_EXISTS, "create of an existing key");
	T_STR(spx_errmsg(), "record 'instances/i-0abc' exists", "message");
	T_INT(spx_errstatus(), SPX_NO, "is a negative answer");
	T_INT(spx_state_get(st, "instances/i-0abc", &v, &rev), 0, "get");
	T_STR(v.p, "{\"s\":1}", "returns the value");
	T_INT(rev, 1, "and the revision");

	T_INT(spx_state_put(st, "instances/i-0abc", "{\"s\":2}", 7, 1, &rev), 0,
	      "put with the current revision");
	T_INT(rev, 2, "increments the revision");
	T_INT(spx_state_put(st, "instances/i-0abc", "{\"s\":3}", 7, 1, &rev),
	      SPX_STATE_CONFLICT, "put with an old revision");
	T_STR(spx_errmsg(), "record 'instances/i-0abc' is at revision 2, not 1",
	      "message");
	T_INT(spx_errstatus(), SPX_NO, "is a negative answer");
	T_INT(spx_state_put(st, "instances/i-0abc", "x", 1, 7, NULL),
	      SPX_STATE_CONFLICT, "put with a future revision");
	spx_state_get(st, "instances/i-0abc", &v, &rev);
	T_OK(rev == 2 && !strcmp(v.p, "{\"s\":2}"),
	     "a conflict leaves the record alone");
	T_INT(spx_state_put(st, "instances/i-0abc", "{\"s\":4}", 7, 0, &rev), 0,
	      "put with revision 0 is unconditional");
	T_INT(rev, 3, "and increments too");
	T_INT(spx_state_put(st, "instances/i-0new", "n", 1, 0, &rev), 0,
	      "unconditional put of a missing key");
	T_INT(rev, 1, "creates it at revision 1");
	T_INT(spx_state_put(st, "instances/i-0none", "n", 1, 3, &rev),
	      SPX_STATE_NOTFOUND, "put with a revision of a missing key");
	T_INT(spx_state_put(st, "nodir/i-0none", "n", 1, 3, &rev),
	      SPX_STATE_NOTFOUND, "even when its directory is missing");
	T_OK(!file_exists("nodir"), "which it does not create");

	T_INT(spx_state_delete(st, "instances/i-0abc", 2), SPX_STATE_CONFLICT,
	      "delete with an old revision");
	T_INT(spx_state_delete(st, "instances/i-0abc", 3), 0,
	      "delete with the current revision");
	T_INT(spx_state_get(st, "instances/i-0abc", &v, &rev),
	      SPX_STATE_NOTFOUND, "the record is gone");
	T_STR(v.p, "", "and get leaves the value empty");
	T_INT(spx_state_delete(st, "instances/i-0abc", 0), SPX_STATE_NOTFOUND,
	      "delete of a missing record");
	T_INT(spx_state_delete(st, "instances/i-0abc", 3), SPX_STATE_NOTFOUND,
	      "with a revision too");
	T_INT(spx_state_delete(st, "gone/x/y", 0), SPX_STATE_NOTFOUND,
	      "and under a missing directory");
	T_INT(spx_state_delete(st, "instances/i-0new", 0), 0,
	      "delete without a revision");
	T_INT(spx_state_create(st, "instances/i-0abc", "again", 5, &rev), 0,
	      "create after delete");
	T_INT(rev, 1, "starts at revision 1 again");

	/* Values are bytes: empty, with NULs, up to the limit. */
	T_INT(spx_state_create(st, "v/empty", NULL, 0, &rev), 0,
	      "an empty value");
	T_INT(spx_state_get(st, "v/empty", &v, &rev), 0, "reads back");
	T_INT(v.len, 0, "empty");
	T_INT(spx_state_create(st, "v/bin", "a\0b\n\xff", 5, NULL), 0,
	      "a binary value");
	spx_state_get(st, "v/bin", &v, NULL);
	T_OK(v.len == 5 && !memcmp(v.p, "a\0b\n\xff", 5), "reads back whole");
	big = spx_malloc(SPX_STATE_VALUE_MAX + 1);
	for (size_t i = 0; i < SPX_STATE_VALUE_MAX + 1; i++)
		big[i] = (char)(i * 7);
	T_INT(spx_state_create(st, "v/big", big, SPX_STATE_VALUE_MAX, &rev), 0,
	      "a value of SPX_STATE_VALUE_MAX bytes");
	spx_state_get(st, "v/big", &v, NULL);
	T_OK(v.len == SPX_STATE_VALUE_MAX &&
	     !memcmp(v.p, big, SPX_STATE_VALUE_MAX), "reads back whole");
	T_INT(spx_state_put(st, "v/big", big, SPX_STATE_VALUE_MAX + 1, 0, &rev),
	      SPX_STATE_INVALID, "a value one byte larger");
	T_INT(spx_errstatus(), SPX_USAGE, "is a usage error");
	T_INT(spx_state_create(st, "v/big2", big, SPX_STATE_VALUE_MAX + 1, &rev),
	      SPX_STATE_INVALID, "for create too");
	T_INT(spx_state_get(st, "v/big", NULL, &rev), 0,
	      "get with no value buffer");
	T_INT(rev, 1, "still gives the revision");
	free(big);

	/* Bad keys, for every operation. */
	T_INT(spx_state_get(st, "../etc/passwd", &v, &rev), SPX_STATE_INVALID,
	      "get of a bad key");
	T_STR(spx_errmsg(), "invalid key '../etc/passwd'", "message");
	T_INT(spx_errstatus(), SPX_USAGE, "is a usage error");
	T_INT(spx_state_create(st, "a//b", "x", 1, &rev), SPX_STATE_INVALID,
	      "create of a bad key");
	T_INT(spx_state_put(st, ".lock", "x", 1, 0, &rev), SPX_STATE_INVALID,
	      "put of a bad key");
	T_INT(spx_state_delete(st, "a/.tmp.b", 0), SPX_STATE_INVALID,
	      "delete of a bad key");
	T_INT(spx_state_get(st, NULL, &v, &rev), SPX_STATE_INVALID,
	      "a NULL key");

	/* A key names a leaf: "t/a" and "t/a/b" cannot both be records. */
	T_INT(spx_state_create(st, "t/a", "x", 1, NULL), 0, "create 't/a'");
	T_INT(spx_state_create(st, "t/a/b", "x", 1, NULL), SPX_STATE_INVALID,
	      "then 't/a/b' is refused");
	T_STR(spx_errmsg(), "cannot write 't/a/b': a parent is a record",
	      "message");
	T_INT(spx_state_get(st, "t/a/b", &v, NULL), SPX_STATE_NOTFOUND,
	      "get 't/a/b' is not found");
	T_INT(spx_state_create(st, "t/c/d", "x", 1, NULL), 0, "create 't/c/d'");
	T_INT(spx_state_create(st, "t/c", "x", 1, NULL), SPX_STATE_INVALID,
	      "then 't/c' is refused");
	T_STR(spx_errmsg(), "cannot write 't/c': other keys are below it",
	      "message");
	T_INT(spx_state_put(st, "t/c", "x", 1, 0, NULL), SPX_STATE_INVALID,
	      "by put too");
	T_OK(!file_exists("t/.tmp.c"), "without leaving a temp file");
	T_INT(spx_state_get(st, "t/c", &v, NULL), SPX_STATE_NOTFOUND,
	      "get 't/c' is not found");
	T_INT(spx_state_delete(st, "t/c", 0), SPX_STATE_NOTFOUND,
	      "delete 't/c' is not found");
	spx_buf_release(&v);
}

static void check_list(struct spx_state *st, const char *prefix,
		       const char *want)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	struct spx_buf got = SPX_BUF_INIT;
	int rc = spx_state_list(st, prefix, 0, &l);

	for (size_t i = 0; i < l.n; i++)
		spx_buf_addf(&got, "%s%s", i ? " " : "", l.key[i]);
	T_INT(rc, 0, "list '%s'", prefix);
	T_STR(got.p, want, "list '%s' gives the keys in order", prefix);
	spx_state_list_release(&l);
	spx_buf_release(&got);
}

static void test_list(struct spx_state *st)
{
	static const char *keys[] = {
		"l/b", "l/instances/i-0b1", "l/a/y/z", "l/ab",
		"l/instances/i-0a2", "l/a-b", "l/instances/i-0a/x", "l/a/x",
		"l/instances/i-0a1", "l/B", "l/a.b",
	};
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	uint64_t rev;
	int ok = 1;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(keys); i++)
		ok &= spx_state_create(st, keys[i], "v", 1, NULL) == 0;
	T_OK(ok, "create %zu keys in no order", SPX_ARRAY_SIZE(keys));
	/* Not keys: dot files, names outside the alphabet, symlinks. */
	put_file("l/.tmp.zz", "junk", 4);
	put_file("l/a/bad name", "junk", 4);
	put_file("l/a/bad~", "junk", 4);
	T_INT(make_link("b", "l/link"), 0, "a symlink in the store");

	check_list(st, "l/", "l/B l/a-b l/a.b l/a/x l/a/y/z l/ab l/b "
		   "l/instances/i-0a/x l/instances/i-0a1 l/instances/i-0a2 "
		   "l/instances/i-0b1");
	check_list(st, "l/a", "l/a-b l/a.b l/a/x l/a/y/z l/ab");
	check_list(st, "l/a/", "l/a/x l/a/y/z");
	check_list(st, "l/a/y", "l/a/y/z");
	check_list(st, "l/instances/i-0a",
		   "l/instances/i-0a/x l/instances/i-0a1 l/instances/i-0a2");
	check_list(st, "l/instances/i-0a1", "l/instances/i-0a1");
	check_list(st, "l/instances/i-0c", "");
	check_list(st, "l/zzz/", "");
	check_list(st, "l/b/", "");
	check_list(st, "nothing", "");
	check_list(st, "v/", "v/big v/bin v/empty");

	spx_state_put(st, "l/ab", "w", 1, 1, NULL);
	spx_state_put(st, "l/ab", "w", 1, 2, NULL);
	spx_state_put(st, "l/a/x", "w", 1, 1, NULL);
	T_INT(spx_state_list(st, "l/a", SPX_STATE_LIST_REVS, &l), 0,
	      "list with revisions");
	T_OK(l.n == 5 && l.rev, "has revisions");
	if (l.n == 5 && l.rev) {
		T_OK(!strcmp(l.key[2], "l/a/x") && l.rev[2] == 2,
		     "revisions follow their keys (l/a/x at 2)");
		T_OK(!strcmp(l.key[4], "l/ab") && l.rev[4] == 3,
		     "revisions follow their keys (l/ab at 3)");
		T_OK(l.rev[0] == 1 && l.rev[1] == 1 && l.rev[3] == 1,
		     "and the others are at 1");
	}
	spx_state_list_release(&l);
	T_INT(spx_state_list(st, "nothing/", SPX_STATE_LIST_REVS, &l), 0,
	      "an empty list with revisions");
	T_INT(l.n, 0, "is empty");
	spx_state_list_release(&l);

	static const char *bad[] = { "/", "/l", "l//", "l/./", "l/..", ".l",
				     "l/.tmp", "l/a b", "l\n" };
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++)
		T_INT(spx_state_list(st, bad[i], 0, &l), SPX_STATE_INVALID,
		      "list of bad prefix '%s'", shown(bad[i]));
	T_INT(spx_state_list(st, NULL, 0, &l), SPX_STATE_INVALID,
	      "list of a NULL prefix");
	T_INT(spx_state_list(st, "l/", 2, &l), SPX_STATE_INVALID,
	      "list with bad flags");
	T_INT(spx_state_get(st, "l/ab", NULL, &rev), 0, "get after list");
}

/* Each case: the bytes of a record file that must be refused. */
static void test_corrupt(struct spx_state *st)
{
	static const struct {
		const char *what, *data;
		size_t n;
	} cases[] = {
#define C(what, s) { what, s, sizeof(s) - 1 }
		C("an empty file", ""),
		C("garbage", "hello world\n"),
		C("json without a header", "{\"a\":1}"),
		C("a torn header", "spx-state 1 rev=3 le"),
		C("a header only", "spx-state 1 rev=3 len=7 crc32c=cff7d56a\n"),
		C("a torn value", "spx-state 1 rev=3 len=7 crc32c=cff7d56a\n{\"a\""),
		C("a longer value",
		  "spx-state 1 rev=3 len=7 crc32c=cff7d56a\n{\"a\":1}\n"),
		C("a changed value",
		  "spx-state 1 rev=3 len=7 crc32c=cff7d56a\n{\"a\":2}"),
		C("a changed crc",
		  "spx-state 1 rev=3 len=7 crc32c=cff7d56b\n{\"a\":1}"),
		C("revision 0", "spx-state 1 rev=0 len=7 crc32c=cff7d56a\n{\"a\":1}"),
		C("a leading zero",
		  "spx-state 1 rev=03 len=7 crc32c=cff7d56a\n{\"a\":1}"),
		C("a huge revision", "spx-state 1 rev=18446744073709551616 len=7 "
				     "crc32c=cff7d56a\n{\"a\":1}"),
		C("a negative length",
		  "spx-state 1 rev=3 len=-7 crc32c=cff7d56a\n{\"a\":1}"),
		C("an uppercase crc",
		  "spx-state 1 rev=3 len=7 crc32c=CFF7D56A\n{\"a\":1}"),
		C("another version",
		  "spx-state 2 rev=3 len=7 crc32c=cff7d56a\n{\"a\":1}"),
		C("NULs", "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"),
#undef C
	};
	struct spx_buf v = SPX_BUF_INIT;
	uint64_t rev;

	spx_state_create(st, "c/ok", "x", 1, NULL);
	put_file("c/k", "spx-state 1 rev=3 len=7 crc32c=cff7d56a\n{\"a\":1}",
		 47);
	T_INT(spx_state_get(st, "c/k", &v, &rev), 0, "a hand-made record");
	T_OK(rev == 3 && !strcmp(v.p, "{\"a\":1}"), "reads back");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		spx_buf_reset(&v);
		spx_buf_adds(&v, "stale");
		put_file("c/k", cases[i].data, cases[i].n);
		T_INT(spx_state_get(st, "c/k", &v, &rev), SPX_STATE_FAIL,
		      "%s is refused", cases[i].what);
		T_OK(spx_errstatus() == SPX_FAIL && v.len == 0 && rev == 0 &&
		     strstr(spx_errmsg(), "corrupt record '"),
		     "as a corrupt record, with no data (%s)", spx_errmsg());
	}
	T_INT(spx_state_put(st, "c/k", "x", 1, 3, &rev), SPX_STATE_FAIL,
	      "put over a corrupt record fails");
	T_INT(spx_state_delete(st, "c/k", 3), SPX_STATE_FAIL,
	      "and so does delete with a revision");
	T_INT(spx_state_delete(st, "c/k", 0), 0,
	      "but delete without one removes it");
	T_INT(make_link("/etc/passwd", "c/sym"), 0,
	      "a symlink where a record should be");
	T_INT(spx_state_get(st, "c/sym", &v, &rev), SPX_STATE_FAIL,
	      "is not followed");
	spx_buf_release(&v);
}

static void test_temp(struct spx_state *st)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	struct spx_buf v = SPX_BUF_INIT;
	uint64_t rev;
	size_t n = 99;

	spx_state_create(st, "tmp/k", "real", 4, NULL);
	spx_state_create(st, "tmp/d", "real", 4, NULL);
	/* What writers killed between open and rename leave behind. */
	put_file("tmp/.tmp.k", "spx-state 1 rev=2 len=4", 23);
	put_file("tmp/.tmp.d", "half", 4);
	put_file("tmp/.tmp.orphan", "half", 4);
	put_file(".tmp.top", "half", 4);
	put_file("tmp/.tmp.bad name", "x", 1);
	put_file("tmp/.other", "x", 1);
	T_INT(spx_state_get(st, "tmp/k", &v, &rev), 0,
	      "a stale temp file does not disturb get");
	T_OK(rev == 1 && !strcmp(v.p, "real"), "which reads the record");
	T_INT(spx_state_list(st, "tmp/", 0, &l), 0, "nor list");
	T_OK(l.n == 2, "which shows the records only");
	spx_state_list_release(&l);
	T_INT(spx_state_put(st, "tmp/k", "new", 3, 1, &rev), 0,
	      "a put over a stale temp file");
	T_OK(rev == 2 && !file_exists("tmp/.tmp.k"), "reuses and renames it");
	spx_state_get(st, "tmp/k", &v, &rev);
	T_STR(v.p, "new", "with the new value");
	T_INT(spx_state_delete(st, "tmp/d", 0), 0, "a delete");
	T_OK(!file_exists("tmp/.tmp.d"), "removes the key's temp file");
	T_INT(spx_state_sweep(st, &n), 0, "sweep");
	T_INT(n, 3, "removes the orphans (and test_list's)");
	T_OK(!file_exists("tmp/.tmp.orphan") && !file_exists(".tmp.top"),
	     "in every directory");
	T_OK(file_exists(".lock") && file_exists("tmp/.other") &&
	     file_exists("tmp/.tmp.bad name"),
	     "and leaves other dot files alone");
	T_INT(spx_state_sweep(st, NULL), 0, "a second sweep");
	spx_buf_release(&v);
}

/* Update callbacks: the value is a decimal counter. */
static int incr(void *ctx, const struct spx_buf *old, uint64_t rev,
		struct spx_buf *out)
{
	long n = old ? strtol(old->p, NULL, 10) : 0;

	spx_buf_addf(out, "%ld", n + 1);
	return 0;
}

static int keep(void *ctx, const struct spx_buf *old, uint64_t rev,
		struct spx_buf *out)
{
	return 1;
}

static int refuse(void *ctx, const struct spx_buf *old, uint64_t rev,
		  struct spx_buf *out)
{
	return spx_error(SPX_USAGE, "cannot add to '%s'", old ? old->p : "");
}

static void test_update(struct spx_state *st)
{
	struct spx_buf v = SPX_BUF_INIT;
	uint64_t rev;

	T_INT(spx_state_update(st, "u/n", incr, NULL, &rev), 0,
	      "update of a missing record");
	T_INT(rev, 1, "creates it");
	T_INT(spx_state_update(st, "u/n", incr, NULL, &rev), 0,
	      "update of a record");
	spx_state_get(st, "u/n", &v, NULL);
	T_OK(rev == 2 && !strcmp(v.p, "2"), "writes what fn made");
	T_INT(spx_state_update(st, "u/n", keep, NULL, &rev), 0,
	      "fn returning 1");
	T_INT(rev, 2, "leaves the record at its revision");
	T_INT(spx_state_update(st, "u/none", keep, NULL, &rev),
	      SPX_STATE_NOTFOUND, "and is not found on a missing record");
	T_INT(spx_state_update(st, "u/n", refuse, NULL, &rev), -1,
	      "fn failing");
	T_STR(spx_errmsg(), "cannot add to '2'", "keeps fn's message");
	T_INT(spx_errstatus(), SPX_USAGE, "and status");
	T_INT(spx_state_update(st, "u/../n", incr, NULL, &rev),
	      SPX_STATE_INVALID, "update of a bad key");
	spx_buf_release(&v);
}

/* ---- Concurrency ---- */

enum { NPROC = 8, NTHREAD = 4, NRACE = 25 };

/* Increments per process or thread, and the flags of the handles children
 * open: the big runs skip fsync (it is the locking that they test, and a
 * virtual disk's fsync can take 10 ms), one smaller run syncs. */
static int ninc = 200;
static unsigned open_flags;

/* get + put-if-revision until it sticks; returns the conflicts seen, or
 * -1 on another failure. */
static long incr_cas(struct spx_state *st, const char *key)
{
	struct spx_buf v = SPX_BUF_INIT;
	long conflicts = 0;

	for (;;) {
		uint64_t rev;
		char n[32];
		int rc, len;

		if (spx_state_get(st, key, &v, &rev) < 0)
			break;
		len = snprintf(n, sizeof(n), "%ld", strtol(v.p, NULL, 10) + 1);
		rc = spx_state_put(st, key, n, (size_t)len, rev, NULL);
		if (rc == 0) {
			spx_buf_release(&v);
			return conflicts;
		}
		if (rc != SPX_STATE_CONFLICT)
			break;
		conflicts++;
	}
	spx_buf_release(&v);
	return -1;
}

/* Fork NPROC children running fn(st, key); odd ones open a handle of
 * their own, even ones use the one inherited. */
static void spawn(pid_t *pid, struct spx_state *st, const char *key,
		  int (*fn)(struct spx_state *, const char *))
{
	int gate[2];

	/* Children wait for the gate to close, then all start at once. */
	if (pipe(gate) < 0)
		spx_die_errno(SPX_FAIL, "cannot make a pipe");
	fflush(stdout);
	for (int i = 0; i < NPROC; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			spx_die_errno(SPX_FAIL, "cannot fork");
		if (pid[i] == 0) {
			struct spx_state *mine = NULL;
			char c;
			int rc;

			close(gate[1]);
			while (read(gate[0], &c, 1) < 0 && errno == EINTR)
				;
			close(gate[0]);
			if (i % 2 && spx_state_open(store, open_flags, &mine) < 0)
				_exit(3);
			rc = fn(mine ? mine : st, key);
			spx_state_close(mine);
			spx_state_close(st);
			free(store);
			_exit(rc);
		}
	}
	close(gate[0]);
	close(gate[1]);
}

/* Wait for the children; returns how many exited 0. */
static int reap(const pid_t *pid)
{
	int good = 0;

	for (int i = 0; i < NPROC; i++) {
		int status = 0;

		while (waitpid(pid[i], &status, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			good++;
		else
			printf("# child %d: status %#x\n", i, status);
	}
	return good;
}

static int child_cas(struct spx_state *st, const char *key)
{
	for (int i = 0; i < ninc; i++)
		if (incr_cas(st, key) < 0)
			return 1;
	return 0;
}

static int child_update(struct spx_state *st, const char *key)
{
	for (int i = 0; i < ninc; i++)
		if (spx_state_update(st, key, incr, NULL, NULL) < 0)
			return 1;
	return 0;
}

struct thread_arg {
	struct spx_state *st;
	const char *key;
	pthread_t th;
	int failed;
};

/* Alternately spx_state_update and get + put-if-revision. */
static void *thread_incr(void *p)
{
	struct thread_arg *a = p;

	for (int i = 0; i < ninc; i++)
		if ((i % 2 ? incr_cas(a->st, a->key) :
		     spx_state_update(a->st, a->key, incr, NULL, NULL)) < 0)
			a->failed++;
	return NULL;
}

static void start_threads(struct thread_arg *ta, struct spx_state *st,
			  const char *key)
{
	for (int i = 0; i < NTHREAD; i++) {
		ta[i] = (struct thread_arg){ .st = st, .key = key };
		if (pthread_create(&ta[i].th, NULL, thread_incr, &ta[i]))
			spx_die(SPX_FAIL, "cannot create a thread");
	}
}

/* Join the threads; returns their failures. */
static int join_threads(struct thread_arg *ta)
{
	int failed = 0;

	for (int i = 0; i < NTHREAD; i++) {
		pthread_join(ta[i].th, NULL);
		failed += ta[i].failed;
	}
	return failed;
}

/* The counter must be want, written by want + created writes. */
static void check_counter(struct spx_state *st, const char *key, long want,
			  int created, const char *what)
{
	struct spx_buf v = SPX_BUF_INIT;
	uint64_t rev = 0;

	spx_state_get(st, key, &v, &rev);
	T_INT(strtol(v.p, NULL, 10), want, "%s: no lost update", what);
	T_INT(rev, want + created, "%s: revision is the writes%s", what,
	      created ? " + 1" : "");
	spx_buf_release(&v);
}

static int child_race(struct spx_state *st, const char *unused)
{
	char *key, me[32];
	int wins = 0, len = snprintf(me, sizeof(me), "%d", (int)getpid());

	for (int i = 0; i < NRACE; i++) {
		int rc;

		key = spx_xprintf("race/k%d", i);
		rc = spx_state_create(st, key, me, (size_t)len, NULL);
		free(key);
		if (rc == 0)
			wins++;
		else if (rc != SPX_STATE_EXISTS)
			return 100;
	}
	/* Report the wins through a record of our own. */
	key = spx_xprintf("race/wins-%d", (int)getpid());
	snprintf(me, sizeof(me), "%d", wins);
	if (spx_state_create(st, key, me, strlen(me), NULL) < 0)
		wins = -1;
	free(key);
	return wins < 0 ? 101 : 0;
}

/* NPROC processes increment key by get + put-if-revision. */
static void run_cas(struct spx_state *st, const char *key, const char *what)
{
	pid_t pid[NPROC];
	double t0 = now();

	spx_state_create(st, key, "0", 1, NULL);
	spawn(pid, st, key, child_cas);
	T_INT(reap(pid), NPROC, "%s: %d processes x %d get+put-if-revision",
	      what, NPROC, ninc);
	check_counter(st, key, (long)NPROC * ninc, 1, what);
	printf("# %s: %d processes x %d increments: %.2f s\n", what, NPROC,
	       ninc, now() - t0);
}

/* Valgrind 3.19 does not know that F_OFD_SETLKW blocks: a thread waiting
 * in it keeps valgrind's big lock, so the thread holding the lock in the
 * same process never runs again. Processes are unaffected. */
static int under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

static void test_concurrency(struct spx_state *synced)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	struct spx_buf v = SPX_BUF_INIT;
	struct thread_arg ta[NTHREAD];
	struct spx_state *st;
	pid_t pid[NPROC];
	double t0;
	long wins = 0;
	int good, nthread = under_valgrind() ? 0 : NTHREAD;

	ninc = 25;
	run_cas(synced, "n/sync", "with fsync");

	if (spx_state_open(store, SPX_STATE_UNSAFE_NOSYNC, &st) < 0)
		spx_die_last();
	open_flags = SPX_STATE_UNSAFE_NOSYNC;
	ninc = 200;
	run_cas(st, "n/cas", "no fsync");

	/* spx_state_update in processes, and update or get + put in threads
	 * of this one, all at once, starting from a missing record. */
	t0 = now();
	spawn(pid, st, "n/upd", child_update); /* before threads exist */
	if (nthread)
		start_threads(ta, st, "n/upd");
	good = reap(pid);
	if (nthread)
		T_INT(join_threads(ta), 0, "%d threads x %d increments",
		      nthread, ninc);
	T_INT(good, NPROC, "%d processes x %d updates", NPROC, ninc);
	check_counter(st, "n/upd", (long)(NPROC + nthread) * ninc, 0,
		      "processes and threads");
	printf("# %d processes + %d threads x %d increments: %.2f s\n", NPROC,
	       nthread, ninc, now() - t0);

	/* Threads alone: OFD locks must exclude threads of one process. */
	if (nthread) {
		t0 = now();
		spx_state_create(st, "n/thr", "0", 1, NULL);
		start_threads(ta, st, "n/thr");
		T_INT(join_threads(ta), 0, "%d threads x %d increments",
		      nthread, ninc);
		check_counter(st, "n/thr", (long)nthread * ninc, 1, "threads");
		printf("# %d threads x %d increments: %.2f s\n", nthread, ninc,
		       now() - t0);
	} else {
		T_OK(1, "threads of one process # SKIP valgrind deadlocks "
		     "threads waiting in F_OFD_SETLKW");
	}
	spx_state_close(st);

	/* Create races, synced: on each key exactly one process wins. */
	t0 = now();
	open_flags = 0;
	spawn(pid, synced, "", child_race);
	T_INT(reap(pid), NPROC, "%d processes race to create %d keys", NPROC,
	      NRACE);
	spx_state_list(synced, "race/wins-", 0, &l);
	for (size_t i = 0; i < l.n; i++) {
		spx_state_get(synced, l.key[i], &v, NULL);
		wins += strtol(v.p, NULL, 10);
	}
	T_INT(l.n, NPROC, "every racer reported");
	T_INT(wins, NRACE, "each key has exactly one winner");
	spx_state_list_release(&l);
	spx_state_list(synced, "race/k", SPX_STATE_LIST_REVS, &l);
	T_INT(l.n, NRACE, "and every key exists");
	for (size_t i = 0; i < l.n; i++)
		if (l.rev[i] != 1)
			wins = -1;
	T_OK(wins >= 0, "at revision 1");
	spx_state_list_release(&l);
	printf("# %d processes x %d create races: %.2f s\n", NPROC, NRACE,
	       now() - t0);
	spx_buf_release(&v);
}

/* kill -9 a writer at random moments: the record is never torn and holds
 * at least the last write that was acknowledged. */
static void test_kill(struct spx_state *st)
{
	enum { ROUNDS = 12, VLEN = 256 * 1024 };
	char *val = spx_malloc(VLEN);
	struct spx_buf v = SPX_BUF_INIT;
	int bad = 0, torn = 0, total = 0, stale = 0;
	size_t swept = 0;
	double t0 = now();

	for (int r = 0; r < ROUNDS; r++) {
		long acked = 0, got, n;
		int ack[2], status;
		pid_t pid;

		if (pipe(ack) < 0)
			spx_die_errno(SPX_FAIL, "cannot make a pipe");
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			spx_die_errno(SPX_FAIL, "cannot fork");
		if (pid == 0) {
			close(ack[0]);
			/* A large value widens the window to be killed in. */
			for (long i = 1;; i++) {
				int len = snprintf(val, VLEN, "%ld ", i);

				memset(val + len, 'x', VLEN - (size_t)len);
				if (spx_state_put(st, "k/victim", val, VLEN, 0,
						  NULL) < 0 ||
				    write(ack[1], &i, sizeof(i)) != sizeof(i))
					_exit(1);
			}
		}
		close(ack[1]);
		usleep(2000 + (useconds_t)(r * 1500));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		while (read(ack[0], &n, sizeof(n)) == sizeof(n))
			acked = n;
		close(ack[0]);
		total += (int)acked;
		if (spx_state_get(st, "k/victim", &v, NULL) < 0) {
			if (acked || spx_state_get(st, "k/victim", &v, NULL) !=
			    SPX_STATE_NOTFOUND)
				torn++;
			continue;
		}
		got = strtol(v.p, NULL, 10);
		if (v.len != VLEN || got < acked || got > acked + 1)
			bad++;
		stale += file_exists("k/.tmp.victim");
		spx_state_delete(st, "k/victim", 0);
	}
	T_INT(torn, 0, "a writer killed %d times never leaves a torn record",
	      ROUNDS);
	T_INT(bad, 0, "nor loses an acknowledged write (%d writes)", total);
	T_INT(spx_state_sweep(st, &swept), 0, "sweep after the kills");
	T_OK(!file_exists("k/.tmp.victim"), "leaves no temp file (%zu swept)",
	     swept);
	printf("# %d kill -9 rounds, %d killed mid-write: %.2f s\n", ROUNDS,
	       stale, now() - t0);
	spx_buf_release(&v);
	free(val);
}

int main(void)
{
	struct spx_state *st;
	double t0 = now();

	if (!mkdtemp(root))
		spx_die_errno(SPX_FAIL, "cannot create '%s'", root);
	main_pid = getpid();
	atexit(cleanup);
	store = spx_xprintf("%s/s", root);

	test_keys();
	test_codes();
	test_record_format();
	test_open();
	if (spx_state_open(store, 0, &st) < 0)
		spx_die_last();
	test_ops(st);
	test_list(st);
	test_corrupt(st);
	test_temp(st);
	test_update(st);
	test_concurrency(st);
	test_kill(st);
	spx_state_close(st);

	free(store);
	printf("# total %.2f s\n", now() - t0);
	return t_done();
}
