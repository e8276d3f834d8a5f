/* test_obj: the object engine: layout math, Reed-Solomon, CRC-verified
 * reconstruction, atomic overwrite, concurrent writers, listing, multipart
 * rules, bucket names, the metadata codec. */
#include "spx.h"

#include "checksum.h"

#include <dirent.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "file.h"
#include "hex.h"
#include "id.h"
#include "obj/index.h"
#include "obj/obj.h"
#include "t.h"

static char root[] = "/tmp/spx-test-obj.XXXXXX";

static struct spx_obj *open_store(const char *name, int k, int m,
				  uint32_t block, unsigned flags)
{
	char *dv[32];
	struct spx_obj_opts o = { .ndrives = (size_t)(k + m), .data = k,
				  .parity = m, .block = block,
				  .min_part = 1000, .flags = flags | SPX_OBJ_CREATE };
	struct spx_obj *s = NULL;

	for (int i = 0; i < k + m; i++)
		dv[i] = spx_xprintf("%s/%s/d%d", root, name, i);
	o.drives = (const char *const *)dv;
	if (spx_obj_open(&o, &s) < 0)
		printf("# open: %s\n", spx_errmsg());
	for (int i = 0; i < k + m; i++)
		free(dv[i]);
	return s;
}

/* The handle of bucket name, opened now (a ring of them, so that a call
 * may take two). */
static struct spx_obj_bucket *B(struct spx_obj *s, const char *name)
{
	static struct spx_obj_bucket ring[4];
	static unsigned at;
	struct spx_obj_bucket *b = &ring[at++ % 4];

	if (spx_obj_bucket_open(s, name, b) < 0) {
		/* Calls with it then fail as for a bucket that is gone. */
		memset(b, 0, sizeof(*b));
		snprintf(b->name, sizeof(b->name), "%s", name);
		snprintf(b->inc, sizeof(b->inc), "none");
		spx_error_clear();
	}
	return b;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
}

static int put(struct spx_obj *s, const char *b, const char *k,
	       const void *p, size_t n, size_t piece)
{
	struct spx_obj_writer *w;
	int rc = spx_obj_writer_begin(s, B(s, b), k, NULL, &w);

	if (rc < 0)
		return rc;
	for (size_t off = 0; off < n; off += piece)
		if ((rc = spx_obj_writer_write(w, (const char *)p + off,
					       n - off < piece ? n - off : piece)) < 0) {
			spx_obj_writer_abort(w);
			return rc;
		}
	return spx_obj_writer_commit(w, NULL, NULL);
}

static bool get_ver_eq(struct spx_obj *s, const char *b, const char *k,
		       const char *vid, const void *want, size_t n)
{
	struct spx_obj_reader *r;
	unsigned char *got = malloc(n + 1);
	size_t g, off = 0;
	bool ok;

	if (spx_obj_reader_open_version(s, B(s, b), k, vid, &r) < 0) {
		printf("# open '%s': %s\n", k, spx_errmsg());
		free(got);
		return false;
	}
	/* Odd read sizes cross stripe and block edges. */
	while (off < n && spx_obj_read(r, off, got + off, 777, &g) == 0 && g)
		off += g;
	ok = off == n && spx_obj_reader_meta(r)->size == n && !memcmp(got, want, n);
	spx_obj_reader_close(r);
	/* One read with room for every block and its CRC: each whole block
	 * goes straight into the buffer, and a bad one is reconstructed. */
	if (ok && spx_obj_reader_open_version(s, B(s, b), k, vid, &r) == 0) {
		unsigned char *all = malloc(n + 4096);

		ok = spx_obj_read(r, 0, all, n + 4096, &g) == 0 && g == n &&
		     !memcmp(all, want, n);
		spx_obj_reader_close(r);
		free(all);
	}
	/* And into a buffer of the object's size exactly (a restore's
	 * chunk, a small GET): the last whole block too goes straight in,
	 * its CRC read apart, and nothing is written past the end (ASan,
	 * valgrind). */
	if (ok && n &&
	    spx_obj_reader_open_version(s, B(s, b), k, vid, &r) == 0) {
		unsigned char *all = malloc(n);
		size_t at = 0;

		while (at < n && spx_obj_read(r, at, all + at, n - at, &g) == 0 &&
		       g)
			at += g;
		ok = at == n && !memcmp(all, want, n);
		spx_obj_reader_close(r);
		free(all);
	}
	free(got);
	return ok;
}

static bool get_eq(struct spx_obj *s, const char *b, const char *k,
		   const void *want, size_t n)
{
	return get_ver_eq(s, b, k, NULL, want, n);
}

/* spx_write_file_ordered with excl: made unnamed and linked in whole; a
 * second one fails with EEXIST and changes nothing; a replacement (not
 * excl) takes the name whole; nothing is left beside it. */
static void check_excl(const char *sub, bool ordered)
{
	char *e = spx_xprintf("%s/md/%s/new", root, sub);
	char *ed = spx_xprintf("%s/md/%s", root, sub);
	struct spx_buf b = SPX_BUF_INIT;
	struct dirent *de;
	struct stat st;
	int n = 0;
	DIR *dp;

	spx_mkdirs(ed, 0755);
	T_INT(spx_write_file_ordered(e, "first", 5, 0640, true, ordered), 0,
	      "excl: made");
	T_OK(spx_write_file_ordered(e, "again", 5, 0644, true, ordered) < 0 &&
	     errno == EEXIST, "excl: a second time, EEXIST");
	spx_error_clear();
	T_OK(spx_buf_read_file(&b, e, 100) == 0 && b.len == 5 &&
	     !memcmp(b.p, "first", 5) && stat(e, &st) == 0 &&
	     (st.st_mode & 0777) == 0640, "excl: the first bytes, its mode");
	spx_buf_reset(&b);
	T_OK(spx_write_file_ordered(e, "second!", 7, 0644, false, ordered) ==
		     0 && spx_buf_read_file(&b, e, 100) == 0 && b.len == 7 &&
	     !memcmp(b.p, "second!", 7), "replaced: the new bytes");
	dp = opendir(ed);
	while (dp && (de = readdir(dp)))
		n += de->d_name[0] != '.';
	if (dp)
		closedir(dp);
	T_INT(n, 1, "excl: one file in the directory");
	spx_buf_release(&b);
	free(e);
	free(ed);
}

/* spx_mkdirs, on which every key directory's creation rests. */
static void test_mkdirs(void)
{
	char *a = spx_xprintf("%s/md/a/b/c", root);
	char *t = spx_xprintf("%s/md/x/y/", root);
	char *f = spx_xprintf("%s/md/f", root);
	char *g = spx_xprintf("%s/md/f/g", root);
	struct stat st;

	T_OK(spx_mkdirs(a, 0755) == 0 && stat(a, &st) == 0 && S_ISDIR(st.st_mode),
	     "mkdirs: every missing level");
	T_OK(spx_mkdirs(a, 0755) == 0, "mkdirs: one that is there");
	T_OK(spx_mkdirs(t, 0755) == 0 && stat(t, &st) == 0 && S_ISDIR(st.st_mode),
	     "mkdirs: a trailing slash");
	spx_write_file(f, "x", 1, 0644, false);
	T_OK(spx_mkdirs(g, 0755) < 0 && errno == ENOTDIR,
	     "mkdirs: a file in the way is an error, ENOTDIR");
	spx_error_clear();
	check_excl("e", false);
	/* The one-commit order of an ordered file system: what it leaves is
	 * the same, wherever it runs (the order is the kernel's to keep). */
	check_excl("eo", true);
	T_OK(!spx_fs_ordered("/proc") && !spx_fs_ordered("/dev/shm") &&
	     !spx_fs_ordered("/nonexistent/spx"),
	     "fs_ordered: proc, tmpfs and a missing path are not");
	{
		/* Only a directory made alone leaves its parent's sync to
		 * the caller; one that is there, or a deeper path, none. */
		char *l = spx_xprintf("%s/md/a/b/late", root);
		char *d = spx_xprintf("%s/md/n1/n2", root);
		bool l1 = false, l2 = true, l3 = true;

		T_OK(spx_mkdirs_late(l, 0755, &l1) == 0 && l1 &&
		     spx_sync_parent(l) == 0 &&
		     spx_mkdirs_late(l, 0755, &l2) == 0 && !l2 &&
		     spx_mkdirs_late(d, 0755, &l3) == 0 && !l3 &&
		     stat(d, &st) == 0,
		     "mkdirs: late, only for a directory made alone");
		free(l);
		free(d);
	}
	free(a);
	free(t);
	free(f);
	free(g);
}

static void test_layout(void)
{
	static const struct {
		uint64_t size;
		int k;
		uint32_t block;
		uint64_t nstripes, shard;
		size_t last_len, last_bl;
	} t[] = {
		{ 0, 2, 64, 0, 0, 0, 0 },
		{ 1, 1, 64, 1, 5, 1, 1 },
		{ 1, 2, 64, 1, 5, 1, 1 },
		{ 128, 2, 64, 1, 68, 128, 64 },
		{ 129, 2, 64, 2, 68 + 5, 1, 1 },
		{ 200, 4, 64, 1, 54, 200, 50 },
		{ 3000000, 2, 1048576, 2, 1048580 + 451428, 902848, 451424 },
		{ 1048576, 1, 1048576, 1, 1048580, 1048576, 1048576 },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		struct spx_obj_stripe st;
		uint64_t n = spx_obj_nstripes(t[i].size, t[i].k, t[i].block);

		T_INT(n, t[i].nstripes, "layout %zu: stripes", i);
		T_INT(spx_obj_shard_size(t[i].size, t[i].k, t[i].block),
		      t[i].shard, "layout %zu: shard size", i);
		if (!n)
			continue;
		spx_obj_stripe_at(t[i].size, t[i].k, t[i].block, n - 1, &st);
		T_INT(st.len, t[i].last_len, "layout %zu: last stripe length", i);
		T_INT(st.bl, t[i].last_bl, "layout %zu: last block length", i);
	}
}

static void test_ec(void)
{
	static const int codes[][2] = { { 2, 1 }, { 4, 2 }, { 3, 0 }, { 6, 3 } };

	for (size_t c = 0; c < SPX_ARRAY_SIZE(codes); c++) {
		int k = codes[c][0], m = codes[c][1], n = k + m, bad = 0;
		size_t len = 1000;
		struct spx_ec e;
		unsigned char *orig[32], *sh[32];

		spx_ec_init(&e, k, m);
		for (int i = 0; i < n; i++) {
			orig[i] = malloc(len);
			sh[i] = malloc(len);
			if (i < k)
				fill(orig[i], len, (unsigned)(i + 7 * c));
		}
		spx_ec_encode(&e, len, orig);
		/* Every pattern of up to m lost shards. */
		for (unsigned mask = 0; mask < (1u << n); mask++) {
			bool ok[32];
			int lost = __builtin_popcount(mask);

			if (lost > m)
				continue;
			for (int i = 0; i < n; i++) {
				ok[i] = !(mask >> i & 1);
				memcpy(sh[i], orig[i], len);
				if (!ok[i])
					memset(sh[i], 0xa5, len);
			}
			if (spx_ec_decode(&e, len, sh, ok) < 0)
				bad++;
			for (int i = 0; i < n; i++)
				if (memcmp(sh[i], orig[i], len))
					bad++;
		}
		T_INT(bad, 0, "RS(%d,%d): every loss of up to %d shards decodes", k, m, m);
		if (m) {
			bool ok[32];

			for (int i = 0; i < n; i++)
				ok[i] = i > m;
			T_INT(spx_ec_decode(&e, len, sh, ok), -1,
			      "RS(%d,%d): %d lost shards fail", k, m, m + 1);
		}
		for (int i = 0; i < n; i++) {
			free(orig[i]);
			free(sh[i]);
		}
		spx_ec_release(&e);
	}
	T_INT(spx_crc32c("123456789", 9), 0xe3069283, "crc32c check value");
}

static char *shard_path(const char *name, int drive, const char *bucket,
			const char *key)
{
	struct spx_obj *s = open_store(name, 1, 0, 64, 0);
	char enc[256], *kd, *p = NULL;
	DIR *d;
	struct dirent *e;

	(void)s;
	spx_obj_close(s);
	spx_obj_key_encode(key, enc, sizeof(enc));
	kd = spx_xprintf("%s/%s/d%d/b/%s/o/%s", root, name, drive, bucket, enc);
	d = opendir(kd);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "d-", 2))
			p = spx_xprintf("%s/%s/s0", kd, e->d_name);
	if (d)
		closedir(d);
	free(kd);
	return p;
}

static void test_damage(const char *name, int k, int m)
{
	struct spx_obj *s = open_store(name, k, m, 256, SPX_OBJ_NO_INLINE);
	size_t n = 10000;
	unsigned char *data = malloc(n);
	int lost = 0;

	fill(data, n, 42);
	T_INT(spx_obj_bucket_create(s, "dmg", "111122223333", "us-east-1"), 0,
	      "%s: bucket", name);
	/* Every single and double loss (at RS(4,2)) of whole shard files,
	 * and corruption of one block in each shard. */
	for (int a = 0; a < k + m; a++)
		for (int b = a; b < k + m; b++) {
			char *pa, *pb;

			if (b != a && m < 2)
				continue;
			T_INT(put(s, "dmg", "obj", data, n, 333), 0, "%s: put", name);
			pa = shard_path(name, a, "dmg", "obj");
			pb = shard_path(name, b, "dmg", "obj");
			unlink(pa);
			if (b != a)
				unlink(pb);
			if (!get_eq(s, "dmg", "obj", data, n)) {
				printf("# lost shards %d and %d\n", a, b);
				lost++;
			}
			free(pa);
			free(pb);
		}
	T_INT(lost, 0, "%s: every loss of up to m shard files reads back", name);
	for (int a = 0; a < k + m; a++) {
		char *pa;
		int fd;

		T_INT(put(s, "dmg", "obj", data, n, 4096), 0, "%s: put", name);
		pa = shard_path(name, a, "dmg", "obj");
		fd = open(pa, O_WRONLY);
		pwrite(fd, "XYZ", 3, 300);
		close(fd);
		free(pa);
		T_OK(get_eq(s, "dmg", "obj", data, n),
		     "%s: corrupt block in shard %d: reconstructed", name, a);
	}
	spx_obj_close(s);
	free(data);
}

struct count {
	size_t bad, healed, n;
};

static int count_cb(void *ctx, const struct spx_obj_check *c)
{
	struct count *t = ctx;

	t->n++;
	t->bad += c->missing + c->corrupt + c->meta_bad;
	t->healed += c->healed;
	return 0;
}

static void test_heal(void)
{
	struct spx_obj *s = open_store("heal", 2, 1, 128, SPX_OBJ_NO_INLINE);
	unsigned char data[5000];
	struct count c = { 0 };
	char *p;
	int fd;

	fill(data, sizeof(data), 9);
	spx_obj_bucket_create(s, "hh1", "111122223333", "us-east-1");
	put(s, "hh1", "k", data, sizeof(data), 1000);
	p = shard_path("heal", 2, "hh1", "k");
	fd = open(p, O_WRONLY);
	pwrite(fd, "\1\2\3", 3, 1000);
	close(fd);
	free(p);
	p = shard_path("heal", 2, "hh1", "k");
	truncate(p, 2000);
	free(p);
	T_INT(spx_obj_verify(s, NULL, false, count_cb, &c), 0, "verify runs");
	T_OK(c.n == 1 && c.bad > 0, "verify finds the damage (%zu)", c.bad);
	memset(&c, 0, sizeof(c));
	T_INT(spx_obj_verify(s, "hh1", true, count_cb, &c), 0, "heal runs");
	T_OK(c.healed > 0, "heal rewrote %zu blocks", c.healed);
	memset(&c, 0, sizeof(c));
	spx_obj_verify(s, NULL, false, count_cb, &c);
	T_INT(c.bad, 0, "clean after heal");
	T_OK(get_eq(s, "hh1", "k", data, sizeof(data)), "content after heal");
	spx_obj_close(s);
}

static void test_objects(void)
{
	struct spx_obj *s = open_store("objs", 2, 1, 64, 0);
	struct spx_obj_meta in = SPX_OBJ_META_INIT, out = SPX_OBJ_META_INIT;
	struct spx_obj_writer *w;
	unsigned char big[300000], small[100];
	char longkey[1100];

	fill(big, sizeof(big), 1);
	fill(small, sizeof(small), 2);
	T_INT(spx_obj_bucket_create(s, "bk1", "111122223333", "us-east-1"), 0, "mb");
	T_INT(spx_obj_bucket_create(s, "bk1", "111122223333", "us-east-1"),
	      SPX_OBJ_BUCKET_OWNED, "mb again: owned");
	T_INT(spx_obj_bucket_create(s, "bk1", "999922223333", "us-east-1"),
	      SPX_OBJ_BUCKET_EXISTS, "mb by another: exists");
	T_INT(spx_obj_bucket_create(s, "BK1", "111122223333", "us-east-1"),
	      SPX_OBJ_INVALID_BUCKET, "mb bad name");
	T_INT(put(s, "nob1", "k", small, 1, 1), SPX_OBJ_NO_SUCH_BUCKET, "put: no bucket");
	spx_kv_add(&in.sys, "content-type", "text/plain");
	spx_kv_add(&in.user, "x-amz-meta-colour", "blue");
	T_INT(spx_obj_writer_begin(s, B(s, "bk1"), "a/b", &in, &w), 0, "begin");
	spx_obj_writer_write(w, small, sizeof(small));
	T_INT(spx_obj_writer_commit(w, NULL, &out), 0, "commit small");
	T_OK(out.is_inline && out.size == 100 && strlen(out.etag) == 32, "small inline");
	spx_obj_meta_release(&out);
	T_INT(spx_obj_stat(s, B(s, "bk1"), "a/b", &out), 0, "stat");
	T_STR(spx_kv_get(&out.sys, "content-type"), "text/plain", "stat: content-type");
	T_STR(spx_kv_get(&out.user, "x-amz-meta-colour"), "blue", "stat: user meta");
	spx_obj_meta_release(&out);
	spx_obj_meta_release(&in);
	T_OK(get_eq(s, "bk1", "a/b", small, sizeof(small)), "small reads back");
	T_INT(put(s, "bk1", "big", big, sizeof(big), 10000), 0, "put big");
	T_OK(get_eq(s, "bk1", "big", big, sizeof(big)), "big reads back");
	/* Overwrite: the reader opened before keeps the old content. */
	{
		struct spx_obj_reader *r;
		unsigned char got[100];
		size_t g;

		spx_obj_reader_open(s, B(s, "bk1"), "big", &r);
		T_INT(put(s, "bk1", "big", small, sizeof(small), 7), 0, "overwrite");
		T_INT(spx_obj_read(r, 1000, got, 100, &g), 0, "old reader reads");
		T_OK(g == 100 && !memcmp(got, big + 1000, 100), "old reader sees the old object");
		spx_obj_reader_close(r);
		T_OK(get_eq(s, "bk1", "big", small, sizeof(small)), "new reader sees the new");
		T_INT(spx_obj_stat(s, B(s, "bk1"), "big", &out), 0, "stat");
		T_INT(out.gen, 2, "generation 2");
		spx_obj_meta_release(&out);
	}
	/* Content-MD5 mismatch leaves the old object. */
	T_INT(spx_obj_writer_begin(s, B(s, "bk1"), "big", NULL, &w), 0, "begin");
	spx_obj_writer_write(w, big, 5000);
	T_INT(spx_obj_writer_commit(w, (const unsigned char *)"0123456789abcdef", NULL),
	      SPX_OBJ_BAD_DIGEST, "bad digest");
	T_OK(get_eq(s, "bk1", "big", small, sizeof(small)), "old object after bad digest");
	/* Keys. */
	memset(longkey, 'x', 1024);
	longkey[1024] = 0;
	T_INT(put(s, "bk1", longkey, small, 10, 10), 0, "1024-byte key");
	T_OK(get_eq(s, "bk1", longkey, small, 10), "1024-byte key reads back");
	longkey[1024] = 'x';
	longkey[1025] = 0;
	T_INT(put(s, "bk1", longkey, small, 10, 10), SPX_OBJ_KEY_TOO_LONG, "1025 bytes: too long");
	T_INT(put(s, "bk1", "bad\xff", small, 10, 10), SPX_OBJ_INVALID_ARG, "invalid utf-8");
	T_INT(put(s, "bk1", "../../etc/passwd", small, 10, 10), 0, "a key with ..");
	T_OK(get_eq(s, "bk1", "../../etc/passwd", small, 10), "stays inside the store");
	T_INT(put(s, "bk1", "..", small, 5, 5), 0, "key ..");
	T_INT(put(s, "bk1", "empty", small, 0, 1), 0, "empty object");
	T_OK(get_eq(s, "bk1", "empty", small, 0), "empty reads back");
	T_INT(spx_obj_bucket_delete(s, B(s, "bk1")), SPX_OBJ_BUCKET_NOT_EMPTY, "rb: not empty");
	T_INT(spx_obj_delete(s, B(s, "bk1"), "a/b"), 0, "rm");
	T_INT(spx_obj_delete(s, B(s, "bk1"), "a/b"), SPX_OBJ_NO_SUCH_KEY, "rm again");
	T_INT(spx_obj_stat(s, B(s, "bk1"), "a/b", &out), SPX_OBJ_NO_SUCH_KEY, "stat gone");
	spx_obj_meta_release(&out);
	T_INT(spx_obj_copy(s, B(s, "bk1"), "big", NULL, B(s, "bk1"), "copy", NULL, &out), 0, "copy");
	spx_obj_meta_release(&out);
	T_OK(get_eq(s, "bk1", "copy", small, sizeof(small)), "copy reads back");
	{
		const char *keys[] = { "big", "copy", longkey, "../../etc/passwd",
				       "..", "empty" };

		longkey[1024] = 0;
		for (size_t i = 0; i < SPX_ARRAY_SIZE(keys); i++)
			spx_obj_delete(s, B(s, "bk1"), keys[i]);
	}
	T_INT(spx_obj_bucket_delete(s, B(s, "bk1")), 0, "rb");
	T_INT(spx_obj_bucket_delete(s, B(s, "bk1")), SPX_OBJ_NO_SUCH_BUCKET, "rb again");
	T_INT(spx_obj_status(SPX_OBJ_NO_SUCH_KEY), SPX_NO, "not found: 1");
	T_INT(spx_obj_status(SPX_OBJ_NO_SPACE), SPX_FAIL, "no space: 111");
	T_INT(spx_obj_status(SPX_OBJ_INVALID_BUCKET), SPX_USAGE, "bad name: 100");
	T_INT(spx_obj_status(SPX_OBJ_RC_MIN - 1), SPX_FAIL, "unknown: 111");
	spx_obj_close(s);
}

static void test_writers(void)
{
	struct spx_obj *s = open_store("race", 2, 1, 64, SPX_OBJ_NO_INLINE);
	unsigned char data[8][3000];
	int good = 0, status, ok = 1;

	spx_obj_bucket_create(s, "rr1", "111122223333", "us-east-1");
	for (int i = 0; i < 8; i++)
		fill(data[i], sizeof(data[i]), (unsigned)i + 100);
	for (int i = 0; i < 8; i++) {
		pid_t p = fork();

		if (!p) {
			int rc = 0;

			for (int j = 0; j < 5; j++)
				rc |= put(s, "rr1", "same", data[i], sizeof(data[i]), 100);
			spx_obj_close(s);
			_exit(rc ? 1 : 0);
		}
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ok = 0;
	T_OK(ok, "8 processes x 5 overwrites of one key all succeed");
	for (int i = 0; i < 8; i++)
		good += get_eq(s, "rr1", "same", data[i], sizeof(data[i]));
	T_INT(good, 1, "one complete object remains");
	{
		struct spx_obj_meta m = SPX_OBJ_META_INIT;

		spx_obj_stat(s, B(s, "rr1"), "same", &m);
		T_INT(m.gen, 40, "40 generations");
		spx_obj_meta_release(&m);
	}
	spx_obj_close(s);
}

static void test_list(void)
{
	struct spx_obj *s = open_store("list", 1, 0, 4096, 0);
	struct spx_obj_list l;
	struct spx_obj_list_opts o = { 0 };
	char key[64], prev[64] = "";
	size_t total = 0, pages = 0, bad = 0;
	char *after = NULL;

	spx_obj_bucket_create(s, "ll1", "111122223333", "us-east-1");
	for (int i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "%s/%04d%s", i % 3 ? "dir" : "dir-x",
			 (i * 7919) % 3000, i % 5 ? "" : "~z");
		put(s, "ll1", key, key, strlen(key), 100);
	}
	put(s, "ll1", "Z", "z", 1, 1);
	do {
		o.after = after;
		o.max = 700;
		if (spx_obj_list(s, B(s, "ll1"), &o, &l) < 0)
			break;
		for (size_t i = 0; i < l.n; i++) {
			if (strcmp(prev, l.v[i].key) >= 0)
				bad++;
			snprintf(prev, sizeof(prev), "%s", l.v[i].key);
			if (l.v[i].size != strlen(l.v[i].key) && strcmp(l.v[i].key, "Z"))
				bad++;
		}
		total += l.n;
		pages++;
		free(after);
		after = l.truncated ? spx_strdup(l.next) : NULL;
		spx_obj_list_release(&l);
	} while (after);
	T_INT(total, 3001, "paging lists every key once");
	T_INT(pages, 5, "in 5 pages of 700");
	T_INT(bad, 0, "in byte order, with sizes");
	o = (struct spx_obj_list_opts){ .prefix = "dir-x/", .max = 10 };
	spx_obj_list(s, B(s, "ll1"), &o, &l);
	T_OK(l.n == 10 && l.truncated && !strncmp(l.v[0].key, "dir-x/", 6), "prefix");
	spx_obj_list_release(&l);
	o = (struct spx_obj_list_opts){ .delimiter = "/" };
	spx_obj_list(s, B(s, "ll1"), &o, &l);
	T_INT(l.nprefixes, 2, "delimiter: two common prefixes");
	T_OK(l.nprefixes == 2 && !strcmp(l.prefixes[0], "dir-x/") &&
	     !strcmp(l.prefixes[1], "dir/"), "prefixes in order");
	T_OK(l.n == 1 && !strcmp(l.v[0].key, "Z"), "and the one key");
	spx_obj_list_release(&l);
	o = (struct spx_obj_list_opts){ .delimiter = "/", .max = 1 };
	spx_obj_list(s, B(s, "ll1"), &o, &l);
	T_OK(l.n == 1 && !l.nprefixes && l.truncated && !strcmp(l.next, "Z"), "max 1: Z first");
	spx_obj_list_release(&l);
	o = (struct spx_obj_list_opts){ .delimiter = "/", .after = "dir-x/", .max = 5 };
	spx_obj_list(s, B(s, "ll1"), &o, &l);
	T_OK(l.nprefixes == 1 && !strcmp(l.prefixes[0], "dir/") && !l.truncated,
	     "after a common prefix: the next one");
	spx_obj_list_release(&l);
	spx_obj_close(s);
}

/* Every key of bucket b through pages of max (prefix and delimiter as
 * given), keys and common prefixes joined by spaces. */
/* Every page of a listing: "key " each, "key=size:etag " with sizes. */
static char *list_pages(struct spx_obj *s, const char *b, const char *prefix,
			const char *delim, size_t max, bool sizes)
{
	struct spx_obj_list_opts o = { .prefix = prefix, .delimiter = delim,
				       .max = max };
	struct spx_buf out = SPX_BUF_INIT;
	char *after = NULL;
	struct spx_obj_list l;

	do {
		o.after = after;
		if (spx_obj_list(s, B(s, b), &o, &l) < 0) {
			spx_buf_addf(&out, "ERROR %s", spx_errmsg());
			break;
		}
		for (size_t i = 0; i < l.n; i++)
			if (sizes)
				spx_buf_addf(&out, "%s=%" PRIu64 ":%.8s ",
					     l.v[i].key, l.v[i].size,
					     l.v[i].etag);
			else
				spx_buf_addf(&out, "%s ", l.v[i].key);
		for (size_t i = 0; i < l.nprefixes; i++)
			spx_buf_addf(&out, "P:%s ", l.prefixes[i]);
		free(after);
		after = l.truncated ? spx_strdup(l.next) : NULL;
		spx_obj_list_release(&l);
	} while (after);
	spx_buf_addc(&out, '\0');
	return spx_buf_detach(&out, NULL);
}

static char *list_all(struct spx_obj *s, const char *b, const char *prefix,
		      const char *delim, size_t max)
{
	return list_pages(s, b, prefix, delim, max, false);
}

static int idx_key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What list_pages should say of the model (keys present[i], no
 * delimiter); with s, each key's size and the ETag its metadata has. */
static char *model_list(struct spx_obj *s, char **keys, const bool *present,
			size_t n, const char *prefix)
{
	struct spx_buf out = SPX_BUF_INIT;
	char **v = malloc(n * sizeof(char *));
	size_t nv = 0;

	for (size_t i = 0; i < n; i++)
		if (present[i] && !strncmp(keys[i], prefix, strlen(prefix)))
			v[nv++] = keys[i];
	qsort(v, nv, sizeof(char *), idx_key_cmp);
	for (size_t i = 0; i < nv; i++) {
		struct spx_obj_meta m = SPX_OBJ_META_INIT;

		if (!s) {
			spx_buf_addf(&out, "%s ", v[i]);
			continue;
		}
		if (spx_obj_stat(s, B(s, "ix1"), v[i], &m) < 0)
			spx_buf_addf(&out, "%s=? ", v[i]);
		else
			spx_buf_addf(&out, "%s=%" PRIu64 ":%.8s ", v[i],
				     m.size, m.etag);
		spx_obj_meta_release(&m);
	}
	spx_buf_addc(&out, '\0');
	free(v);
	return spx_buf_detach(&out, NULL);
}

static int idx_nruns(const char *xdir)
{
	char *p = spx_xprintf("%s/manifest", xdir), buf[4096];
	size_t n = 0;
	int runs = 0;

	if (spx_read_small(p, buf, sizeof(buf) - 1, &n) == 1) {
		buf[n] = '\0';
		for (char *q = buf; (q = strstr(q, "\nrun ")); q++)
			runs++;
	}
	free(p);
	return runs;
}

/* Replace the boot line of the manifest: an index from another boot. */
static void idx_old_boot(const char *xdir)
{
	char *p = spx_xprintf("%s/manifest", xdir), buf[4096], *b, *e;
	size_t n = 0;

	if (spx_read_small(p, buf, sizeof(buf) - 1, &n) == 1) {
		buf[n] = '\0';
		if ((b = strstr(buf, "boot ")) && (e = strchr(b, '\n'))) {
			struct spx_buf t = SPX_BUF_INIT;

			spx_buf_add(&t, buf, (size_t)(b - buf));
			spx_buf_adds(&t, "boot 00000000-0000-0000-0000-000000000000");
			spx_buf_adds(&t, e);
			spx_write_file(p, t.p, t.len, 0644, false);
			spx_buf_release(&t);
		}
	}
	free(p);
}

/* The generation of the index's manifest, or -1. */
static int idx_gen(const char *manifest)
{
	char buf[4096], *g;
	size_t n = 0;

	if (spx_read_small(manifest, buf, sizeof(buf) - 1, &n) != 1)
		return -1;
	buf[n] = '\0';
	g = strstr(buf, "\ngen ");
	return g ? (int)strtol(g + 5, NULL, 10) : -1;
}

/* Wait up to a minute (valgrind is slow) for child pid, killed after
 * that: did it exit 0? */
static bool child_ok(pid_t pid)
{
	pid_t done = 0;
	int st = 0;

	for (int i = 0; pid > 0 && i < 6000 && !done; i++) {
		done = waitpid(pid, &st, WNOHANG);
		if (!done)
			usleep(10000);
	}
	if (pid > 0 && !done) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return done > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A listing never waits for a writer: another process holds a key's
 * lock (and so the bucket's, shared) as a writer stopped in its commit
 * does, the key's '+' already in the log, and the log large enough for
 * the listing to want to fold it. */
static void test_index_held(void)
{
	struct spx_obj *s = open_store("idxh", 1, 0, 4096, 0);
	int pp[2] = { -1, -1 }, lk = -1;
	pid_t holder, lister = -1;
	bool ok;
	char c = 0;

	spx_obj_bucket_create(s, "ixh", "111122223333", "us-east-1");
	put(s, "ixh", "a", "x", 1, 1);
	put(s, "ixh", "c", "x", 1, 1);
	for (int i = 0; i < 200; i++) {
		char *k = spx_xprintf("pad/%0400d", i);

		obj_idx_note(s, "ixh", NULL, k, '+');
		free(k);
	}
	obj_idx_note(s, "ixh", NULL, "b", '+');
	if (pipe(pp) < 0)
		return;
	holder = fork();
	if (holder == 0) {
		if (obj_lock(s, "ixh", "b", true, &lk) == 0)
			(void)!write(pp[1], "x", 1);
		pause();
		_exit(0);
	}
	if (holder > 0 && read(pp[0], &c, 1) == 1 && (lister = fork()) == 0) {
		char *got = list_all(s, "ixh", "", NULL, 1000);
		int bad = strcmp(got, "a c ") != 0;

		free(got);
		spx_obj_close(s);
		_exit(bad);
	}
	ok = child_ok(lister);
	if (holder > 0) {
		kill(holder, SIGKILL);
		waitpid(holder, NULL, 0);
	}
	T_OK(ok, "index: a listing does not wait for a writer stopped in its commit");
	close(pp[0]);
	close(pp[1]);
	spx_obj_close(s);
}

/* The store and outcome of fold_hook's writer. */
static struct spx_obj *fold_store;
static int fold_writer_ok = -1;

/* While a fold merges: another process writes a key of the bucket, and
 * must be done within a minute (valgrind is slow); a fold that held the
 * bucket's lock through its merge would keep it waiting. */
static void fold_hook(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		int rc = put(fold_store, "ixf", "written-during-the-fold", "x", 1,
			     1);

		spx_obj_close(fold_store);
		_exit(rc == 0 ? 0 : 1);
	}
	fold_writer_ok = child_ok(pid);
}

/* "kFROM .. kTO written-during-the-fold " (free). */
static char *fold_want(int from, int to)
{
	struct spx_buf b = SPX_BUF_INIT;

	for (int i = from; i <= to; i++)
		spx_buf_addf(&b, "k%02d ", i);
	spx_buf_adds(&b, "written-during-the-fold ");
	return spx_buf_detach(&b, NULL);
}

/* Rewrite the manifest in xdir to name a sealed log of the next
 * generation, as a fold killed after it wrote it does; returns it. */
static int idx_seal_by_hand(const char *xdir)
{
	char *p = spx_xprintf("%s/manifest", xdir), buf[4096], *g, *e;
	size_t n = 0;
	int gen = -1;

	if (spx_read_small(p, buf, sizeof(buf) - 1, &n) == 1) {
		buf[n] = '\0';
		if ((g = strstr(buf, "\ngen ")) && (e = strchr(g + 1, '\n'))) {
			struct spx_buf t = SPX_BUF_INIT;

			gen = (int)strtol(g + 5, NULL, 10) + 1;
			spx_buf_add(&t, buf, (size_t)(g - buf));
			spx_buf_addf(&t, "\ngen %d\nsealed %d", gen, gen);
			spx_buf_adds(&t, e);
			spx_write_file(p, t.p, t.len, 0644, false);
			spx_buf_release(&t);
		}
	}
	free(p);
	return gen;
}

/* A fold sets the log aside under the bucket's lock and merges without
 * it: a commit goes on meanwhile. A fold killed after it named the
 * sealed log, or after it renamed the log to it, is finished by the
 * next, and listings see every key all along. */
static void test_index_fold(void)
{
	struct spx_obj *s = open_store("idxf", 1, 0, 4096, 0);
	char *xdir = spx_xprintf("%s/idxf/d0/b/ixf/x", root), *got, *p, *q;
	char *want;
	int gen, fk = -1;

	{
		static const char ok[] = "spx-index 2\nboot b-1\ngen 5\nsealed 5\nrun 4 2\n";
		static const char *bad[] = {
			"spx-index 2\nboot b-1\ngen 5\nsealed 6\n",
			"spx-index 2\nboot b-1\ngen 5\nsealed 0\n",
			"spx-index 2\nboot b-1\ngen 5\nrun 4 2\nsealed 5\n",
			"spx-index 2\nboot b-1\ngen 5\nsealed 5\nsealed 5\n",
			"spx-index 2\nboot b-1\ngen 5\nsealed 5x\n",
		};
		struct obj_idx_manifest m;
		int nbad = 0;

		T_OK(obj_idx_manifest_parse(ok, sizeof(ok) - 1, &m) == 0 &&
		     m.sealed == 5 && m.nruns == 1,
		     "index: a manifest names a sealed log");
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			nbad += obj_idx_manifest_parse(bad[i], strlen(bad[i]),
						       &m) < 0;
		T_INT(nbad, 5, "index: a sealed log past the generation, of 0, after the runs, twice or not a number is refused");
	}
	spx_obj_bucket_create(s, "ixf", "111122223333", "us-east-1");
	for (int i = 0; i < 20; i++) {
		char *k = spx_xprintf("k%02d", i);

		put(s, "ixf", k, "x", 1, 1);
		free(k);
	}
	fold_store = s;
	obj_idx_merge_hook = fold_hook;
	T_INT(obj_idx_fold(s, B(s, "ixf"), false, true), 0,
	      "index: a fold of 20 keys");
	obj_idx_merge_hook = NULL;
	T_INT(fold_writer_ok, 1,
	      "index: another process writes a key of the bucket while it merges");
	T_INT(idx_nruns(xdir), 1, "index: the fold made a run");
	want = fold_want(0, 19);
	got = list_all(s, "ixf", "", NULL, 7);
	T_STR(got, want, "index: listed whole after the fold, the key written during it too");
	free(got);

	/* Killed after it named the sealed log: the log is still live.
	 * The fold lock held here keeps listings from finishing it. */
	T_INT(obj_lock_fold(s, "ixf", false, &fk), 1, "index: the fold lock taken");
	put(s, "ixf", "k20", "x", 1, 1);
	gen = idx_seal_by_hand(xdir);
	put(s, "ixf", "k21", "x", 1, 1);
	free(want);
	want = fold_want(0, 21);
	got = list_all(s, "ixf", "", NULL, 7);
	T_STR(got, want, "index: a sealed log named but not yet set aside: the log is read");
	free(got);
	/* Killed after the rename: the sealed log, and a new log. */
	p = spx_xprintf("%s/log", xdir);
	q = spx_xprintf("%s/log.%d", xdir, gen);
	T_INT(rename(p, q), 0, "index: the log set aside by hand");
	put(s, "ixf", "k22", "x", 1, 1);
	spx_obj_delete(s, B(s, "ixf"), "k00");
	got = list_all(s, "ixf", "k2", NULL, 2);
	T_STR(got, "k20 k21 k22 ", "index: the sealed log and the new one are both read");
	free(got);
	got = list_all(s, "ixf", "k0", NULL, 3);
	T_STR(got, "k01 k02 k03 k04 k05 k06 k07 k08 k09 ",
	      "index: a delete in the new log hides the key of the sealed one");
	free(got);
	T_INT(obj_idx_fold(s, B(s, "ixf"), false, true), 0,
	      "index: no fold while another holds the fold lock");
	T_OK(access(q, F_OK) == 0, "index: so the sealed log stays");
	obj_unlock(fk);
	T_INT(obj_idx_fold(s, B(s, "ixf"), false, true), 0,
	      "index: the next fold finishes the one killed");
	{
		char *man = spx_xprintf("%s/manifest", xdir), buf[4096];
		size_t n = 0;

		buf[0] = '\0';
		if (spx_read_small(man, buf, sizeof(buf) - 1, &n) == 1)
			buf[n] = '\0';
		T_OK(access(q, F_OK) != 0 && !strstr(buf, "sealed") &&
		     idx_gen(man) > gen,
		     "index: the sealed log is merged, named no more and gone");
		free(man);
	}
	free(want);
	want = fold_want(1, 22);
	got = list_all(s, "ixf", "", NULL, 1000);
	T_STR(got, want, "index: listed as before after it");
	free(got);
	/* A writer folds a log past 4 MiB once its commit is done (keys
	 * noted and never written: listed as they are, not at all). */
	{
		char key[1001], *man = spx_xprintf("%s/manifest", xdir);
		char *logp = spx_xprintf("%s/log", xdir);
		struct stat st;
		int g0 = idx_gen(man);

		memset(key, 'z', 1000);
		key[1000] = '\0';
		for (int i = 0; i < 4200; i++) {
			char d[16];

			snprintf(d, sizeof(d), "%09d", i);
			memcpy(key + 1, d, 9);
			obj_idx_note(s, "ixf", NULL, key, '+');
		}
		T_OK(stat(logp, &st) == 0 && st.st_size >= (4 << 20) &&
		     idx_gen(man) == g0, "index: a log past 4 MiB, not folded yet");
		obj_idx_after_note(s, B(s, "ixf"));
		T_OK(idx_gen(man) > g0 && (stat(logp, &st) < 0 || st.st_size == 0),
		     "index: folded by the writer once its commit is done");
		got = list_all(s, "ixf", "", NULL, 1000);
		T_STR(got, want, "index: and listed as before");
		free(got);
		free(man);
		free(logp);
	}
	free(p);
	free(q);
	free(xdir);
	free(want);
	spx_obj_close(s);
}

/* SPX_OBJ_FOLD_AWAY: a commit that finds the log large hands its fold
 * to the store's thread and returns at once (the fold lock held here
 * keeps the thread from folding, so nothing is folded while it is
 * held); the fold happens once the lock is let go; a store closed with
 * a fold queued stops without it. */
static void test_index_fold_away(void)
{
	struct spx_obj *s = open_store("idxa", 1, 0, 4096, SPX_OBJ_FOLD_AWAY);
	char *man = spx_xprintf("%s/idxa/d0/b/ixa/x/manifest", root);
	char key[1001], *got;
	int g0, fk = -1, bl = -1, gen = -1;

	spx_obj_bucket_create(s, "ixa", "111122223333", "us-east-1");
	put(s, "ixa", "real", "x", 1, 1);
	memset(key, 'z', 1000);
	key[1000] = '\0';
	for (int i = 0; i < 4200; i++) {
		char d[16];

		snprintf(d, sizeof(d), "%09d", i);
		memcpy(key + 1, d, 9);
		obj_idx_note(s, "ixa", NULL, key, '+');
	}
	g0 = idx_gen(man);
	obj_lock_fold(s, "ixa", false, &fk);
	obj_idx_after_note(s, B(s, "ixa"));
	T_INT(idx_gen(man), g0, "index: folded away: the commit does not fold itself");
	got = list_all(s, "ixa", "", NULL, 1000);
	T_STR(got, "real ", "index: listed meanwhile from the log as it is");
	free(got);
	obj_unlock(fk);
	obj_idx_after_note(s, B(s, "ixa")); /* no wish: nothing */
	/* The commit below with the bucket's lock held shared here, taken
	 * by polling: the store's thread may only now be folding on the
	 * first wish (it dropped it if it came to it while fk was held),
	 * and under valgrind a thread that waits in the kernel for a lock
	 * another thread of its process holds stops them both (the store's
	 * thread polls for locks for that reason; a commit does not). */
	while (obj_lock_try(s, "ixa", NULL, false, &bl) == 0)
		usleep(1000);
	put(s, "ixa", "real2", "x", 1, 1); /* a commit wishes again */
	obj_unlock(bl);
	/* Up to a minute: valgrind is slow. */
	for (int i = 0; i < 600 && (gen = idx_gen(man)) == g0; i++)
		usleep(100000);
	T_OK(gen > g0, "index: folded on the store's thread once it could");
	got = list_all(s, "ixa", "", NULL, 1000);
	T_STR(got, "real real2 ", "index: and listed as before");
	free(got);
	/* Closed with a fold queued and one perhaps under way. */
	for (int i = 0; i < 4200; i++) {
		char d[16];

		snprintf(d, sizeof(d), "%09d", i);
		memcpy(key + 1, d, 9);
		obj_idx_note(s, "ixa", NULL, key, '+');
	}
	obj_idx_after_note(s, B(s, "ixa"));
	spx_obj_close(s);
	T_OK(1, "index: a store closed with a fold queued stops");
	free(man);
}

/* Readers of the index take no lock: while another process writes keys
 * in their byte order, one at a time, and lists them (so that both fold
 * the index again and again), every listing in pages gives a first part
 * of those keys with no gap: a reader that took the runs before a fold
 * and the log after it would miss keys the fold moved. */
static void test_index_race(void)
{
	enum { NR = 1500 };
	struct spx_obj *s = open_store("idxr", 1, 0, 4096, 0);
	char *man = spx_xprintf("%s/idxr/d0/b/ixr/x/manifest", root);
	struct spx_buf all = SPX_BUF_INIT;
	int bad = 0, rounds = 0, st = 0, gen0, gen1;
	pid_t pid;

	spx_obj_bucket_create(s, "ixr", "111122223333", "us-east-1");
	for (int i = 0; i < NR; i++)
		spx_buf_addf(&all, "t/%05d-%0300d ", i, 0);
	gen0 = idx_gen(man);
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < NR; i++) {
			char *k = spx_xprintf("t/%05d-%0300d", i, 0);

			if (put(s, "ixr", k, "x", 1, 1) < 0)
				_exit(1);
			free(k);
			if (i % 50 == 49)
				free(list_all(s, "ixr", "t/", NULL, 7));
		}
		spx_buf_release(&all);
		free(man);
		spx_obj_close(s);
		_exit(0);
	}
	while (pid > 0 && waitpid(pid, &st, WNOHANG) == 0) {
		char *got = list_all(s, "ixr", "t/", NULL,
				     1 + (size_t)rounds % 300);

		if (strncmp(got, all.p, strlen(got)))
			bad++;
		free(got);
		rounds++;
	}
	gen1 = idx_gen(man);
	T_OK(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && !bad &&
	     rounds > 10 && gen1 > gen0 + 10,
	     "index: %d listings beside another process's writes and %d folds, "
	     "%d with a gap", rounds, gen1 - gen0, bad);
	spx_buf_release(&all);
	free(man);
	spx_obj_close(s);
}

/* The records of the index's log: how many of each op ("+-=d"), and
 * where the last one begins. */
static void idx_log_ops(const char *xdir, int count[4], off_t *last)
{
	char *p = spx_xprintf("%s/log", xdir);
	struct spx_buf b = SPX_BUF_INIT;
	struct obj_idx_rec r;
	size_t at = 0, k;

	memset(count, 0, 4 * sizeof(int));
	*last = 0;
	if (spx_buf_read_file(&b, p, 64u << 20) < 0)
		spx_error_clear();
	while (at < b.len &&
	       (k = obj_idx_rec_parse(b.p + at, b.len - at, &r)) &&
	       k != (size_t)-1) {
		count[strchr("+-=d", r.op) - "+-=d"]++;
		*last = (off_t)at;
		at += k;
	}
	spx_buf_release(&b);
	free(p);
}

/* A writer killed after its commit and before the record that describes
 * it: the log ends with the '+' it wrote before the commit. */
static void idx_chop_last(const char *xdir)
{
	char *p = spx_xprintf("%s/log", xdir);
	int count[4];
	off_t last;

	idx_log_ops(xdir, count, &last);
	if (truncate(p, last) < 0)
		printf("# truncate: %s\n", strerror(errno));
	free(p);
}

/* The listing index: random puts and deletes against a model, through
 * folds and tiers; an index from an earlier boot, a damaged run, a torn
 * log record and a missing index are each made again from the keys. */
static void test_index(void)
{
	struct spx_obj *s = open_store("idx", 1, 0, 4096, 0);
	char *xdir = spx_xprintf("%s/idx/d0/b/ix1/x", root), *got, *want;
	enum { NK = 400 };
	char *keys[NK];
	bool present[NK] = { false };
	unsigned seed = 7;
	int bad = 0, maxruns = 0;

	spx_obj_bucket_create(s, "ix1", "111122223333", "us-east-1");
	{
		/* A new bucket's first keys are described by their commits:
		 * its first listing reads no metadata (notes nothing). */
		int c1[4], c2[4];
		off_t l1, l2;

		for (int i = 0; i < 10; i++) {
			char *k = spx_xprintf("first/%d", i);

			put(s, "ix1", k, "x", 1, 1);
			free(k);
		}
		idx_log_ops(xdir, c1, &l1);
		got = list_all(s, "ix1", "first/", NULL, 4);
		idx_log_ops(xdir, c2, &l2);
		T_OK(!strcmp(got, "first/0 first/1 first/2 first/3 first/4 "
				  "first/5 first/6 first/7 first/8 first/9 ") &&
		     c1[0] == 10 && c1[2] == 10 && !memcmp(c1, c2, sizeof(c1)),
		     "index: a new bucket's first listing reads what its commits wrote");
		free(got);
		for (int i = 0; i < 10; i++) {
			char *k = spx_xprintf("first/%d", i);

			spx_obj_delete(s, B(s, "ix1"), k);
			free(k);
		}
	}
	for (int i = 0; i < NK; i++)
		/* Long keys: the log reaches its fold size in a few hundred
		 * records. */
		keys[i] = spx_xprintf("%c/%04d-%0120d", "abc"[i % 3], (i * 37) % NK, i);
	for (int op = 0; op < 1500; op++) {
		int k;

		seed = seed * 1103515245u + 12345u;
		k = (int)((seed >> 8) % NK);
		if ((seed >> 4) % 3) {
			/* Sizes from 1 to 9: an overwrite changes what is
			 * listed. */
			if (put(s, "ix1", keys[k], "abcdefghi", 1 + (seed >> 16) % 9,
				4) == 0)
				present[k] = true;
		} else if (spx_obj_delete(s, B(s, "ix1"), keys[k]) == 0 ||
			   !present[k]) {
			spx_error_clear();
			present[k] = false;
		}
		if (op % 300 == 299) {
			size_t max = 1 + (seed >> 12) % 300;

			for (int p = 0; p < 2; p++) {
				const char *prefix = p ? "b/" : "";

				got = list_pages(s, "ix1", prefix, NULL, max,
						 true);
				want = model_list(s, keys, present, NK, prefix);
				if (strcmp(got, want))
					bad++;
				free(got);
				free(want);
			}
		}
	}
	T_INT(bad, 0, "index: 1500 random puts and deletes, listed in pages, as the model");
	/* New keys, a first page now and then: each fold makes a run, and
	 * merges it with those before while they are not much larger. */
	for (int i = 0; i < 2000; i++) {
		char *k = spx_xprintf("t/%05d-%0120d", i, i);
		struct spx_obj_list_opts o = { .prefix = "t/", .max = 10 };
		struct spx_obj_list l;

		put(s, "ix1", k, "x", 1, 1);
		free(k);
		if (i % 100 == 99) {
			if (spx_obj_list(s, B(s, "ix1"), &o, &l) < 0 || l.n != 10)
				bad++;
			spx_obj_list_release(&l);
			if (idx_nruns(xdir) > maxruns)
				maxruns = idx_nruns(xdir);
		}
	}
	T_OK(!bad && maxruns >= 2 && maxruns <= 4,
	     "index: folded into tiers (%d runs at most)", maxruns);
	for (int i = 0; i < 2000; i++) {
		char *k = spx_xprintf("t/%05d-%0120d", i, i);

		spx_obj_delete(s, B(s, "ix1"), k);
		free(k);
	}
	got = list_all(s, "ix1", "", "/", 1);
	T_STR(got, "P:a/ P:b/ P:c/ ", "index: a common prefix is passed over in one seek");
	free(got);

	/* A key whose '+' is lost from the log with the boot it was
	 * written in: the index is made again from the key directories. */
	want = model_list(NULL, keys, present, NK, "");
	{
		char *log = spx_xprintf("%s/log", xdir);

		put(s, "ix1", "lost-in-a-power-cut", "x", 1, 1);
		truncate(log, 0);
		idx_old_boot(xdir);
		free(log);
	}
	got = list_all(s, "ix1", "", NULL, 1000);
	T_OK(strstr(got, "lost-in-a-power-cut ") != NULL,
	     "index: one from an earlier boot is made again from the keys");
	free(got);
	spx_obj_delete(s, B(s, "ix1"), "lost-in-a-power-cut");

	/* A damaged run: its records are checked as they are read. */
	{
		DIR *d = opendir(xdir);
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (!strncmp(e->d_name, "r.", 2)) {
				char *p = spx_xprintf("%s/%s", xdir, e->d_name);
				FILE *f = fopen(p, "r+");

				if (f) {
					fseek(f, 200, SEEK_SET);
					fputs("garbage", f);
					fclose(f);
				}
				free(p);
			}
		if (d)
			closedir(d);
	}
	got = list_all(s, "ix1", "", NULL, 97);
	T_STR(got, want, "index: a damaged run is made again");
	free(got);

	/* A record torn by a killed writer, then another appended. */
	{
		char *log = spx_xprintf("%s/log", xdir);
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);

		if (fd >= 0) {
			(void)!write(fd, "+\x05\x00" "ab", 5);
			close(fd);
		}
		put(s, "ix1", "after-the-tear", "x", 1, 1);
		free(log);
	}
	got = list_all(s, "ix1", "after", NULL, 1000);
	T_STR(got, "after-the-tear ", "index: a torn log record is made again");
	free(got);
	spx_obj_delete(s, B(s, "ix1"), "after-the-tear");

	/* A bucket from before the index. */
	spx_rmtree(xdir);
	got = list_all(s, "ix1", "", NULL, 1000);
	T_STR(got, want, "index: a bucket without one gets one");
	free(got);
	free(want);
	{
		/* Made from the key directories, it names the keys; the
		 * listing read their metadata and noted what it found. A
		 * second listing reads none (notes nothing). */
		int c1[4], c2[4], live = 0;
		off_t l1, l2;

		for (int i = 0; i < NK; i++)
			live += present[i];
		idx_log_ops(xdir, c1, &l1);
		got = list_all(s, "ix1", "", NULL, 1000);
		free(got);
		idx_log_ops(xdir, c2, &l2);
		T_OK(c1[2] == live && c1[0] == 0 && l1 == l2 &&
		     !memcmp(c1, c2, sizeof(c1)),
		     "index: a rebuilt one is described by the first listing "
		     "(%d of %d keys), read alone by the next", c1[2], live);
	}

	/* Killed between the commit and its description: an overwrite is
	 * listed as it is now, a deleted key not at all. */
	put(s, "ix1", "killed/w", "abc", 3, 3);
	put(s, "ix1", "killed/w", "abcdefg", 7, 7);
	idx_chop_last(xdir);
	put(s, "ix1", "killed/d", "abc", 3, 3);
	spx_obj_delete(s, B(s, "ix1"), "killed/d");
	idx_chop_last(xdir);
	got = list_pages(s, "ix1", "killed/", NULL, 10, true);
	T_STR(got, "killed/w=7:7ac66c0f ",
	      "index: a writer killed after its commit is listed as it left the key");
	free(got);
	spx_obj_delete(s, B(s, "ix1"), "killed/w");

	/* A key too long for a directory name (its directory is named by
	 * its hash): an index made again finds it in its metadata. */
	{
		char longk[700], *w;

		memset(longk, 'k', sizeof(longk) - 1);
		memcpy(longk, "long/", 5);
		longk[sizeof(longk) - 1] = '\0';
		put(s, "ix1", longk, "abcdefg", 7, 7);
		spx_rmtree(xdir);
		got = list_pages(s, "ix1", "long/", NULL, 10, true);
		w = spx_xprintf("%s=7:7ac66c0f ", longk);
		T_STR(got, w, "index: made again, it lists a key named by its hash");
		free(got);
		free(w);
		spx_obj_delete(s, B(s, "ix1"), longk);
	}

	/* A versioned bucket: a delete marker hides the key; its removal
	 * brings back the version before, as it was. */
	{
		char vid[SPX_OBJ_VID_SIZE];
		struct spx_obj_deleted del;

		spx_obj_bucket_set_versioning(s, B(s, "ix1"),
					      SPX_OBJ_VERSIONING_ENABLED);
		put(s, "ix1", "v/k", "abcdefg", 7, 7);
		spx_obj_delete_version(s, B(s, "ix1"), "v/k", NULL, &del);
		got = list_pages(s, "ix1", "v/", NULL, 10, true);
		T_STR(got, "", "index: a key under a delete marker is not listed");
		free(got);
		snprintf(vid, sizeof(vid), "%s", spx_obj_vid_name(del.vid));
		spx_obj_delete_version(s, B(s, "ix1"), "v/k", vid, NULL);
		got = list_pages(s, "ix1", "v/", NULL, 10, true);
		T_STR(got, "v/k=7:7ac66c0f ",
		      "index: its version is listed again when the marker goes");
		free(got);
	}
	for (int i = 0; i < NK; i++)
		free(keys[i]);
	free(xdir);
	spx_obj_close(s);
}

/* A condition for spx_obj_mpu_complete_if: records whether it saw a
 * current object (2) or none (1), and answers *ctx. */
static int cond_seen, cond_said;
static int cond_check(void *ctx, const struct spx_obj_meta *cur)
{
	cond_seen = cur ? 2 : 1;
	return *(int *)ctx;
}

static void test_mpu(void)
{
	struct spx_obj *s = open_store("mpu", 2, 1, 64, 0);
	struct spx_obj_writer *w;
	struct spx_obj_meta out = SPX_OBJ_META_INIT, in = SPX_OBJ_META_INIT;
	char id[SPX_OBJ_UPLOAD_ID_SIZE], etag[4][SPX_OBJ_ETAG_SIZE + 8];
	unsigned char data[4500];
	struct spx_obj_part *parts;
	struct spx_obj_upload *ups;
	size_t np;
	bool trunc;

	fill(data, sizeof(data), 5);
	spx_obj_bucket_create(s, "mm1", "111122223333", "us-east-1");
	spx_kv_add(&in.sys, "content-type", "video/mp4");
	T_INT(spx_obj_mpu_create(s, B(s, "mm1"), "movie", &in, id), 0, "create upload");
	spx_obj_meta_release(&in);
	/* Parts 1..3 of 1500 bytes (min_part is 1000 here), 3 out of order. */
	for (int p = 3; p >= 1; p--) {
		T_INT(spx_obj_part_begin(s, B(s, "mm1"), "movie", id, p, &w), 0, "part %d", p);
		spx_obj_writer_write(w, data + (p - 1) * 1500, p == 3 ? 1500 : 1500);
		T_INT(spx_obj_writer_commit(w, NULL, &out), 0, "part %d commit", p);
		snprintf(etag[p], sizeof(etag[p]), "\"%s\"", out.etag);
	}
	T_INT(spx_obj_part_begin(s, B(s, "mm1"), "movie", id, 10001, &w), SPX_OBJ_INVALID_ARG, "part 10001");
	T_INT(spx_obj_part_begin(s, B(s, "mm1"), "movie", "00", 1, &w), SPX_OBJ_NO_SUCH_UPLOAD, "bad id");
	T_INT(spx_obj_mpu_parts(s, B(s, "mm1"), "movie", id, 0, 0, &parts, &np, &trunc), 0, "list parts");
	T_OK(np == 3 && parts[0].num == 1 && parts[2].num == 3 && parts[1].size == 1500, "3 parts");
	free(parts);
	T_INT(spx_obj_mpu_list(s, B(s, "mm1"), NULL, &ups, &np), 0, "list uploads");
	T_OK(np == 1 && !strcmp(ups[0].key, "movie") && !strcmp(ups[0].id, id), "one upload");
	spx_obj_upload_free(ups, np);
	{
		struct spx_obj_complete_part order[] = { { 2, etag[2], NULL }, { 1, etag[1], NULL } };
		struct spx_obj_complete_part wrong[] = { { 1, etag[2], NULL }, { 2, etag[2], NULL } };
		struct spx_obj_complete_part missing[] = { { 1, etag[1], NULL }, { 4, etag[2], NULL } };
		struct spx_obj_complete_part all[] = { { 1, etag[1], NULL }, { 2, etag[2], NULL }, { 3, etag[3], NULL } };

		T_INT(spx_obj_mpu_complete(s, B(s, "mm1"), "movie", id, order, 2, NULL, &out),
		      SPX_OBJ_INVALID_PART_ORDER, "complete: InvalidPartOrder");
		T_INT(spx_obj_mpu_complete(s, B(s, "mm1"), "movie", id, wrong, 2, NULL, &out),
		      SPX_OBJ_INVALID_PART, "complete: wrong etag is InvalidPart");
		T_INT(spx_obj_mpu_complete(s, B(s, "mm1"), "movie", id, missing, 2, NULL, &out),
		      SPX_OBJ_INVALID_PART, "complete: missing part is InvalidPart");
		/* A small part that is not the last one. */
		T_INT(spx_obj_part_begin(s, B(s, "mm1"), "movie", id, 2, &w), 0, "part 2 again, small");
		spx_obj_writer_write(w, data + 1500, 10);
		spx_obj_writer_commit(w, NULL, &out);
		snprintf(etag[0], sizeof(etag[0]), "%s", out.etag);
		all[1].etag = etag[0];
		T_INT(spx_obj_mpu_complete(s, B(s, "mm1"), "movie", id, all, 3, NULL, &out),
		      SPX_OBJ_ENTITY_TOO_SMALL, "complete: EntityTooSmall");
		T_INT(spx_obj_part_begin(s, B(s, "mm1"), "movie", id, 2, &w), 0, "part 2 again");
		spx_obj_writer_write(w, data + 1500, 1500);
		spx_obj_writer_commit(w, NULL, &out);
		T_OK(!strncmp(out.etag, etag[2] + 1, 32), "same bytes, same part etag");
		all[1].etag = etag[2];
		/* A condition refused: nothing changes, the upload stays. */
		cond_said = SPX_OBJ_PRECONDITION;
		T_INT(spx_obj_mpu_complete_if(s, B(s, "mm1"), "movie", id, all, 3, NULL,
					      cond_check, &cond_said, &out),
		      SPX_OBJ_PRECONDITION, "complete: its condition refused");
		T_INT(cond_seen, 1, "the condition saw no current object");
		T_INT(spx_obj_stat(s, B(s, "mm1"), "movie", &out), SPX_OBJ_NO_SUCH_KEY,
		      "nothing installed");
		T_INT(spx_obj_mpu_complete(s, B(s, "mm1"), "movie", id, all, 3, NULL, &out), 0, "complete");
		T_OK(out.size == 4500 && out.nsegs == 3 && !strcmp(out.etag + 32, "-3"),
		     "3 segments, etag -3 (%s)", out.etag);
		T_STR(spx_kv_get(&out.sys, "content-type"), "video/mp4", "upload's metadata");
		spx_obj_meta_release(&out);
		T_OK(get_eq(s, "mm1", "movie", data, sizeof(data)), "completed object reads back");
		T_INT(spx_obj_mpu_complete(s, B(s, "mm1"), "movie", id, all, 3, NULL, &out),
		      SPX_OBJ_NO_SUCH_UPLOAD, "complete again: NoSuchUpload");
	}
	{
		/* An upload made without an algorithm whose parts carry
		 * checksums (current SDKs send a CRC32 with every part):
		 * completed with plain part numbers and ETags, and no object
		 * checksum. This once dereferenced a NULL checksum name. */
		struct spx_obj_complete_part plain[2] = { { 1, NULL, NULL },
							  { 2, NULL, NULL } };
		char pe[2][SPX_OBJ_ETAG_SIZE];

		T_INT(spx_obj_mpu_create(s, B(s, "mm1"), "cks", NULL, id), 0, "create 3");
		for (int p = 1; p <= 2; p++) {
			T_INT(spx_obj_part_begin(s, B(s, "mm1"), "cks", id, p, &w), 0,
			      "cks part %d", p);
			spx_obj_writer_write(w, data, 1200);
			spx_kv_add(&spx_obj_writer_meta(w)->checksums, "crc32",
				   "AAAAAA==");
			T_INT(spx_obj_writer_commit(w, NULL, &out), 0,
			      "cks part %d commit", p);
			snprintf(pe[p - 1], sizeof(pe[p - 1]), "%s", out.etag);
			plain[p - 1].etag = pe[p - 1];
		}
		T_INT(spx_obj_mpu_complete(s, B(s, "mm1"), "cks", id, plain, 2, NULL, &out),
		      0, "complete: parts with checksums, upload without");
		T_OK(out.checksums.n == 0, "no object checksum");
		spx_obj_meta_release(&out);
	}
	T_INT(spx_obj_mpu_create(s, B(s, "mm1"), "other", NULL, id), 0, "create 2");
	T_INT(spx_obj_mpu_abort(s, B(s, "mm1"), "other", id), 0, "abort");
	T_INT(spx_obj_mpu_abort(s, B(s, "mm1"), "other", id), SPX_OBJ_NO_SUCH_UPLOAD, "abort again");
	spx_obj_close(s);
}

static void test_names(void)
{
	static const struct {
		const char *name;
		bool ok;
	} t[] = {
		{ "abc", true }, { "my-bucket.example", true }, { "a1.b2-c3", true },
		{ "ab", false }, { "", false }, { "Abc", false }, { "ab_c", false },
		{ "-abc", false }, { "abc-", false }, { ".abc", false },
		{ "abc.", false }, { "a..b", false }, { "a.-b", false },
		{ "a-.b", false }, { "192.168.5.4", false }, { "1.2.3", true },
		{ "xn--abc", false }, { "sthree-x", false }, { "abc-s3alias", false },
		{ "abc--ol-s3", false }, { "a--b", true },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++)
		T_INT(spx_obj_bucket_name_valid(t[i].name), t[i].ok, "bucket name '%s'",
		      t[i].name);
}

/* The reserved buckets: the engine takes them, S3's rules do not, S3's
 * listing leaves them out and verify covers them. */
static void test_reserved(void)
{
	static const struct {
		const char *name;
		bool ok;
	} t[] = {
		{ "sthree-spx-snapshots", true }, { "sthree-spx-a", true },
		{ "sthree-spx-a-1", true }, { "sthree-spx-", false },
		{ "sthree-spx-a-", false }, { "sthree-spx-A", false },
		{ "sthree-spx-a.b", false }, { "sthree-x", false },
		{ "spx-snapshots", false }, { "sthree-spx-../x", false },
		{ "sthree-spx-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true },
		{ "sthree-spx-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
	};
	struct spx_obj *s = open_store("rsv", 2, 1, 128, SPX_OBJ_NO_INLINE);
	struct spx_obj_bucket *l = NULL;
	struct count c = { 0 };
	unsigned char data[3000];
	size_t n = 0;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		T_INT(spx_obj_bucket_name_reserved(t[i].name), t[i].ok,
		      "reserved name '%s'", t[i].name);
		if (!strncmp(t[i].name, "sthree-", 7))
			T_INT(spx_obj_bucket_name_valid(t[i].name), false,
			      "S3 refuses '%s'", t[i].name);
	}
	fill(data, sizeof(data), 4);
	T_INT(spx_obj_bucket_create(s, "sthree-spx-x", "111122223333", "us-east-1"),
	      0, "the engine makes a reserved bucket");
	T_INT(spx_obj_bucket_create(s, "sthree-x", "111122223333", "us-east-1"),
	      SPX_OBJ_INVALID_BUCKET, "but no other sthree- name");
	T_INT(spx_obj_bucket_create(s, "plain", "111122223333", "us-east-1"), 0,
	      "and a plain one");
	T_INT(put(s, "sthree-spx-x", "k", data, sizeof(data), 1000), 0,
	      "an object in it");
	T_OK(get_eq(s, "sthree-spx-x", "k", data, sizeof(data)), "read back");
	T_INT(spx_obj_bucket_list(s, &l, &n), 0, "list buckets");
	T_OK(n == 1 && !strcmp(l[0].name, "plain"), "S3's listing leaves it out");
	free(l);
	T_INT(spx_obj_verify(s, NULL, false, count_cb, &c), 0, "verify");
	T_INT(c.n, 1, "verify covers the object in the reserved bucket");
	spx_obj_close(s);
}

static void test_meta(void)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT, d;
	struct spx_buf b = SPX_BUF_INIT;
	char enc[256];

	m.key = spx_strdup("k\xc3\xa9y");
	m.size = 3;
	snprintf(m.etag, sizeof(m.etag), "%s", "900150983cd24fb0d6963f7d28e17f72");
	m.k = 1;
	m.block = 64;
	m.is_inline = true;
	spx_buf_add(&m.inl, "abc", 3);
	spx_kv_add(&m.tags, "t", "v");
	spx_obj_meta_encode(&m, &b);
	T_INT(spx_obj_meta_decode(b.p, b.len, &d), 0, "meta round trip");
	T_OK(!strcmp(d.key, m.key) && d.inl.len == 3 && !strcmp(spx_kv_get(&d.tags, "t"), "v"),
	     "meta fields");
	spx_obj_meta_release(&d);
	b.p[b.len - 1] ^= 1;
	T_INT(spx_obj_meta_decode(b.p, b.len, &d), SPX_OBJ_INTERNAL, "a flipped bit is refused");
	T_INT(spx_obj_meta_decode(b.p, b.len - 1, &d), SPX_OBJ_INTERNAL, "a torn file is refused");
	spx_buf_release(&b);
	spx_obj_meta_release(&m);

	/* A completed upload's segments carry their parts' checksums. */
	m.key = spx_strdup("mp");
	m.size = 300;
	snprintf(m.etag, sizeof(m.etag), "%s",
		 "900150983cd24fb0d6963f7d28e17f72-2");
	m.k = 1;
	m.block = 64;
	m.nparts = 2;
	snprintf(m.data, sizeof(m.data), "d-0123456789abcdef");
	m.segs = spx_calloc(2, sizeof(*m.segs));
	m.nsegs = 2;
	for (int i = 0; i < 2; i++) {
		snprintf(m.segs[i].name, sizeof(m.segs[i].name),
			 "p%05d-0a1b2c3d", i + 1);
		m.segs[i].size = 100 + 100 * (uint64_t)i;
		memset(m.segs[i].md5, 'a', 32);
	}
	snprintf(m.segs[0].cksum, sizeof(m.segs[0].cksum), "67XDxA==");
	spx_obj_meta_encode(&m, &b);
	T_INT(spx_obj_meta_decode(b.p, b.len, &d), 0, "segments round trip");
	T_STR(d.segs[0].cksum, "67XDxA==", "a part's checksum kept");
	T_STR(d.segs[1].cksum, "", "a part without one has none");
	T_OK(strstr(b.p, "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]") != NULL,
	     "and is written as before (three members)");
	spx_obj_meta_release(&d);
	{
		static const char *const bad_ck[] = { "not base64!", "67XDxA=",
						      "\"", "67XD xA==" };

		for (size_t i = 0; i < SPX_ARRAY_SIZE(bad_ck); i++) {
			snprintf(m.segs[0].cksum, sizeof(m.segs[0].cksum), "%s",
				 bad_ck[i]);
			spx_obj_meta_encode(&m, &b);
			T_INT(spx_obj_meta_decode(b.p, b.len, &d),
			      SPX_OBJ_INTERNAL, "a part checksum '%s' is refused",
			      bad_ck[i]);
		}
	}
	spx_buf_release(&b);
	spx_obj_meta_release(&m);
	spx_obj_key_encode("a/b c", enc, sizeof(enc));
	T_STR(enc, "a%2Fb%20c", "key encoding");
	spx_obj_key_encode(".hidden", enc, sizeof(enc));
	T_STR(enc, "%2Ehidden", "leading dot");
	spx_obj_key_encode("..", enc, sizeof(enc));
	T_STR(enc, "%2E.", "dot dot");
}

/* put, returning the new version's id in vid. */
static int put_v(struct spx_obj *s, const char *b, const char *k,
		 const void *p, size_t n, char vid[SPX_OBJ_VID_SIZE])
{
	struct spx_obj_writer *w;
	struct spx_obj_meta out = SPX_OBJ_META_INIT;
	int rc = spx_obj_writer_begin(s, B(s, b), k, NULL, &w);

	if (rc < 0)
		return rc;
	if ((rc = spx_obj_writer_write(w, p, n)) < 0) {
		spx_obj_writer_abort(w);
		return rc;
	}
	rc = spx_obj_writer_commit(w, NULL, &out);
	if (vid)
		memcpy(vid, out.vid, SPX_OBJ_VID_SIZE);
	spx_obj_meta_release(&out);
	return rc;
}

/* "key:vid:L|-:D|size;" for every version, paging by max, then the
 * common prefixes after a '|' if there are any. */
static void versions_str(struct spx_obj *s, const char *b, const char *delim,
			 size_t max, struct spx_buf *o)
{
	struct spx_obj_versions_opts vo = { .delimiter = delim, .max = max };
	struct spx_obj_versions l;
	struct spx_buf pb = SPX_BUF_INIT;
	char *km = NULL, vm[SPX_OBJ_VID_SIZE + 4] = "";

	spx_buf_reset(o);
	spx_buf_reset(&pb);
	for (int page = 0; page < 1000; page++) {
		vo.key_marker = km;
		vo.vid_marker = vm[0] ? vm : NULL;
		if (spx_obj_list_versions(s, B(s, b), &vo, &l) < 0) {
			spx_buf_addf(o, "error %s", spx_errmsg());
			break;
		}
		for (size_t i = 0; i < l.nprefixes; i++)
			spx_buf_addf(&pb, "%s;", l.prefixes[i]);
		for (size_t i = 0; i < l.n; i++) {
			if (l.v[i].delete_marker)
				spx_buf_addf(o, "%s:%s:%s:D;", l.v[i].key,
					     spx_obj_vid_name(l.v[i].vid),
					     l.v[i].latest ? "L" : "-");
			else
				spx_buf_addf(o, "%s:%s:%s:%llu;", l.v[i].key,
					     spx_obj_vid_name(l.v[i].vid),
					     l.v[i].latest ? "L" : "-",
					     (unsigned long long)l.v[i].size);
		}
		free(km);
		km = l.truncated ? spx_strdup(l.next_key) : NULL;
		snprintf(vm, sizeof(vm), "%s",
			 l.truncated && !l.next_is_prefix
				 ? spx_obj_vid_name(l.next_vid) : "");
		spx_obj_versions_release(&l);
		if (!km)
			break;
	}
	free(km);
	if (pb.len)
		spx_buf_addf(o, "|%s", pb.p);
	spx_buf_release(&pb);
}

/* Data directories in the key's directory on drive 0. */
static int count_data(const char *store, const char *b, const char *k)
{
	char *p = spx_xprintf("%s/%s/d0/b/%s/o/%s", root, store, b, k);
	DIR *d = opendir(p);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "d-", 2);
	if (d)
		closedir(d);
	free(p);
	return n;
}

static void test_versions(void)
{
	struct spx_obj *s = open_store("ver", 2, 1, 64, SPX_OBJ_NO_INLINE);
	unsigned char d[5][700];
	char vb[SPX_OBJ_VID_SIZE], vc[SPX_OBJ_VID_SIZE], vx[SPX_OBJ_VID_SIZE];
	struct spx_obj_meta m = SPX_OBJ_META_INIT, out = SPX_OBJ_META_INIT;
	struct spx_obj_reader *r = NULL;
	struct spx_obj_deleted del;
	struct spx_obj_bucket b;
	struct spx_obj_list l;
	struct spx_obj_list_opts lo = { 0 };
	struct spx_buf vs = SPX_BUF_INIT, want = SPX_BUF_INIT;
	struct spx_kvlist tags = SPX_KVLIST_INIT;

	for (int i = 0; i < 5; i++)
		fill(d[i], sizeof(d[i]), (unsigned)i + 40);
	spx_obj_bucket_create(s, "vv1", "111122223333", "us-east-1");
	T_INT(put_v(s, "vv1", "k", d[0], 100, vx), 0, "unversioned put");
	T_STR(vx, "", "unversioned: the null version");
	spx_obj_bucket_open(s, "vv1", &b);
	T_INT(b.versioning, SPX_OBJ_UNVERSIONED, "a new bucket is unversioned");
	T_INT(spx_obj_bucket_set_versioning(s, B(s, "vv1"), SPX_OBJ_UNVERSIONED),
	      SPX_OBJ_INVALID_ARG, "a bucket cannot go back to unversioned");
	T_INT(spx_obj_bucket_set_versioning(s, B(s, "vv1"), SPX_OBJ_VERSIONING_ENABLED),
	      0, "enable versioning");
	spx_obj_bucket_open(s, "vv1", &b);
	T_INT(b.versioning, SPX_OBJ_VERSIONING_ENABLED, "enabled");
	T_INT(put_v(s, "vv1", "k", d[1], 200, vb), 0, "put B");
	T_INT(put_v(s, "vv1", "k", d[2], 300, vc), 0, "put C");
	T_OK(spx_s3_version_id_valid(vb) && spx_s3_version_id_valid(vc) &&
	     strcmp(vb, vc), "B and C have distinct version ids");
	T_OK(get_eq(s, "vv1", "k", d[2], 300), "current is C");
	T_OK(get_ver_eq(s, "vv1", "k", vb, d[1], 200), "version B reads back");
	T_OK(get_ver_eq(s, "vv1", "k", "null", d[0], 100),
	     "the null version (written before versioning) reads back");
	T_INT(count_data("ver", "vv1", "k"), 3, "three data directories kept");
	versions_str(s, "vv1", NULL, 0, &vs);
	spx_buf_reset(&want);
	spx_buf_addf(&want, "k:%s:L:300;k:%s:-:200;k:null:-:100;", vc, vb);
	T_STR(vs.p, want.p, "versions newest first, the latest marked");

	/* A delete makes a marker. */
	T_INT(spx_obj_delete_version(s, B(s, "vv1"), "k", NULL, &del), 0, "delete");
	T_OK(del.delete_marker && spx_s3_version_id_valid(del.vid),
	     "a delete marker with a version id");
	memcpy(vx, del.vid, sizeof(vx));
	T_INT(spx_obj_stat(s, B(s, "vv1"), "k", &m), SPX_OBJ_NO_SUCH_KEY,
	      "stat: no such key behind a marker");
	T_INT(spx_obj_stat_version(s, B(s, "vv1"), "k", NULL, &m), 0, "stat_version");
	T_OK(m.delete_marker && !strcmp(m.vid, vx), "stat_version sees the marker");
	spx_obj_meta_release(&m);
	T_INT(spx_obj_reader_open(s, B(s, "vv1"), "k", &r), SPX_OBJ_NO_SUCH_KEY,
	      "read: no such key");
	T_INT(spx_obj_reader_open_version(s, B(s, "vv1"), "k", vx, &r),
	      SPX_OBJ_DELETE_MARKER, "read the marker by id: method not allowed");
	T_INT(spx_obj_reader_open_version(s, B(s, "vv1"), "k",
					  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &r),
	      SPX_OBJ_NO_SUCH_VERSION, "a version that is not there");
	T_INT(spx_obj_reader_open_version(s, B(s, "vv1"), "k", "a/b", &r),
	      SPX_OBJ_INVALID_VERSION, "a malformed version id");
	T_INT(spx_obj_list(s, B(s, "vv1"), &lo, &l), 0, "list");
	T_INT(l.n, 0, "a key behind a marker is not listed");
	spx_obj_list_release(&l);
	T_INT(spx_obj_bucket_delete(s, B(s, "vv1")), SPX_OBJ_BUCKET_NOT_EMPTY,
	      "versions left: bucket not empty");
	versions_str(s, "vv1", NULL, 0, &vs);
	spx_buf_reset(&want);
	spx_buf_addf(&want, "k:%s:L:D;k:%s:-:300;k:%s:-:200;k:null:-:100;", vx,
		     vc, vb);
	T_STR(vs.p, want.p, "the marker is the latest");

	/* Removing the marker brings C back; removing C brings B. */
	T_INT(spx_obj_delete_version(s, B(s, "vv1"), "k", vx, &del), 0,
	      "delete the marker by id");
	T_OK(del.delete_marker && !strcmp(del.vid, vx), "it was a marker");
	T_OK(get_eq(s, "vv1", "k", d[2], 300), "C is current again");
	T_INT(spx_obj_delete_version(s, B(s, "vv1"), "k", vc, &del), 0, "delete C");
	T_OK(!del.delete_marker, "C was no marker");
	T_OK(get_eq(s, "vv1", "k", d[1], 200), "B is current");
	T_INT(count_data("ver", "vv1", "k"), 2, "C's data is gone");
	T_INT(spx_obj_delete_version(s, B(s, "vv1"), "k", vc, NULL),
	      SPX_OBJ_NO_SUCH_VERSION, "C again: no such version");
	T_INT(spx_obj_delete_version(s, B(s, "vv1"), "k", "..", NULL),
	      SPX_OBJ_INVALID_VERSION, "delete a malformed version id");

	/* Copy from a version; tags on a version. */
	T_INT(spx_obj_copy(s, B(s, "vv1"), "k", "null", B(s, "vv1"), "cp", NULL, &out), 0,
	      "copy the null version");
	T_OK(spx_s3_version_id_valid(out.vid), "the copy is a new version");
	spx_obj_meta_release(&out);
	T_OK(get_eq(s, "vv1", "cp", d[0], 100), "the copy has the null version's bytes");
	spx_kv_add(&tags, "colour", "blue");
	T_INT(spx_obj_stat_version(s, B(s, "vv1"), "k", "null", &m), 0, "stat null");
	T_INT(spx_obj_set_tags(s, B(s, "vv1"), "k", "null", &tags, vx), 0,
	      "tag the null version");
	T_STR(vx, "", "the null version's id");
	T_INT(spx_obj_stat_version(s, B(s, "vv1"), "k", "null", &out), 0, "stat null again");
	T_STR(spx_kv_get(&out.tags, "colour"), "blue", "its tag");
	T_OK(out.gen == m.gen && out.mtime_ms == m.mtime_ms,
	     "tagging keeps the generation and time");
	spx_obj_meta_release(&out);
	spx_obj_meta_release(&m);
	T_INT(spx_obj_stat(s, B(s, "vv1"), "k", &m), 0, "stat current");
	T_INT(m.tags.n, 0, "the current version has no tags");
	spx_obj_meta_release(&m);

	/* Suspended: writes are the null version, which they replace. */
	T_INT(spx_obj_bucket_set_versioning(s, B(s, "vv1"), SPX_OBJ_VERSIONING_SUSPENDED),
	      0, "suspend");
	T_INT(put_v(s, "vv1", "k", d[3], 400, vx), 0, "put D");
	T_STR(vx, "", "D is the null version");
	versions_str(s, "vv1", NULL, 0, &vs);
	spx_buf_reset(&want);
	spx_buf_addf(&want, "cp:%s:L:100;k:null:L:400;k:%s:-:200;", out.vid, vb);
	T_OK(strstr(vs.p, want.p + strcspn(want.p, ";") + 1) != NULL,
	     "D replaced the old null version: %s", vs.p);
	T_INT(count_data("ver", "vv1", "k"), 2, "the old null's data is gone");
	T_INT(put_v(s, "vv1", "k", d[4], 500, vx), 0, "put E");
	T_OK(get_ver_eq(s, "vv1", "k", "null", d[4], 500), "E replaced D");
	T_INT(count_data("ver", "vv1", "k"), 2, "still two data directories");
	T_INT(spx_obj_delete_version(s, B(s, "vv1"), "k", NULL, &del), 0,
	      "suspended delete");
	T_OK(del.delete_marker && !del.vid[0], "a null delete marker");
	T_INT(count_data("ver", "vv1", "k"), 1, "which replaced E");
	T_OK(get_ver_eq(s, "vv1", "k", vb, d[1], 200), "B is still there");

	/* Heal keeps every version's data. */
	{
		struct count c = { 0 };

		T_INT(spx_obj_verify(s, "vv1", true, count_cb, &c), 0, "heal");
		T_INT(c.bad, 0, "nothing to heal");
		T_OK(get_ver_eq(s, "vv1", "k", vb, d[1], 200),
		     "B survives heal");
	}

	/* Remove every version: then the bucket can go. */
	T_INT(spx_obj_delete_version(s, B(s, "vv1"), "k", "null", NULL), 0, "rm null marker");
	T_INT(spx_obj_delete_version(s, B(s, "vv1"), "k", vb, NULL), 0, "rm B");
	T_INT(spx_obj_stat_version(s, B(s, "vv1"), "k", NULL, &m), SPX_OBJ_NO_SUCH_KEY,
	      "no version left");
	spx_obj_meta_release(&out);
	spx_obj_stat(s, B(s, "vv1"), "cp", &out);
	T_INT(spx_obj_delete_version(s, B(s, "vv1"), "cp", out.vid, NULL), 0, "rm cp");
	spx_obj_meta_release(&out);
	T_INT(spx_obj_bucket_delete(s, B(s, "vv1")), 0, "an emptied bucket goes");

	/* Bucket tags. */
	spx_kv_free(&tags);
	spx_obj_bucket_create(s, "vt1", "111122223333", "us-east-1");
	T_INT(spx_obj_bucket_tags(s, B(s, "vt1"), &tags), 0, "bucket tags");
	T_INT(tags.n, 0, "none at first");
	spx_kv_add(&tags, "env", "prod");
	spx_kv_add(&tags, "team", "");
	T_INT(spx_obj_bucket_set_tags(s, B(s, "vt1"), &tags), 0, "set bucket tags");
	spx_kv_free(&tags);
	T_INT(spx_obj_bucket_tags(s, B(s, "vt1"), &tags), 0, "read them");
	T_OK(tags.n == 2 && !strcmp(spx_kv_get(&tags, "env"), "prod") &&
	     !strcmp(spx_kv_get(&tags, "team"), ""), "both tags");
	spx_kv_free(&tags);
	T_INT(spx_obj_bucket_set_versioning(s, B(s, "vt1"), SPX_OBJ_VERSIONING_ENABLED),
	      0, "versioning keeps the tags");
	T_INT(spx_obj_bucket_tags(s, B(s, "vt1"), &tags), 0, "read them");
	T_INT(tags.n, 2, "still two");
	spx_kv_free(&tags);
	T_INT(spx_obj_bucket_set_tags(s, B(s, "vt1"), NULL), 0, "remove bucket tags");
	T_INT(spx_obj_bucket_tags(s, B(s, "vt1"), &tags), 0, "read them");
	T_INT(tags.n, 0, "gone");
	spx_obj_bucket_open(s, "vt1", &b);
	T_INT(b.versioning, SPX_OBJ_VERSIONING_ENABLED, "tags keep versioning");
	T_INT(spx_obj_bucket_tags(s, B(s, "nobkt"), &tags), SPX_OBJ_NO_SUCH_BUCKET,
	      "tags of no bucket");
	spx_kv_free(&tags);

	/* Bucket documents: kept, replaced, removed; of this bucket only. */
	{
		struct spx_buf doc = SPX_BUF_INIT;
		struct spx_obj_bucket old;

		spx_obj_bucket_create(s, "vd1", "111122223333", "us-east-1");
		T_INT(spx_obj_bucket_doc(s, B(s, "vd1"), "cors", &doc), 0,
		      "no document");
		T_INT((int)doc.len, 0, "is empty");
		T_INT(spx_obj_bucket_set_doc(s, B(s, "vd1"), "cors", "[1]", 3),
		      0, "set one");
		T_INT(spx_obj_bucket_set_doc(s, B(s, "vd1"), "cors", "[22]", 4),
		      0, "replace it");
		T_INT(spx_obj_bucket_doc(s, B(s, "vd1"), "cors", &doc), 0, "read");
		T_OK(doc.len == 4 && !memcmp(doc.p, "[22]", 4), "the last one");
		T_INT(spx_obj_bucket_doc(s, B(s, "vd1"), "Cors", &doc),
		      SPX_OBJ_INVALID_ARG, "names are [a-z]");
		T_INT(spx_obj_bucket_doc(s, B(s, "vd1"), "../info", &doc),
		      SPX_OBJ_INVALID_ARG, "never a path");
		T_INT(spx_obj_bucket_tags(s, B(s, "vd1"), &tags), 0,
		      "the bucket's info");
		T_INT(tags.n, 0, "unchanged");
		spx_kv_free(&tags);
		old = *B(s, "vd1");
		T_INT(spx_obj_bucket_delete(s, &old), 0, "the bucket goes");
		spx_obj_bucket_create(s, "vd1", "111122223333", "us-east-1");
		T_INT(spx_obj_bucket_doc(s, B(s, "vd1"), "cors", &doc), 0,
		      "one made again of the name");
		T_INT((int)doc.len, 0, "has none");
		T_INT(spx_obj_bucket_set_doc(s, &old, "cors", "[3]", 3),
		      SPX_OBJ_NO_SUCH_BUCKET, "the old handle cannot set one");
		T_INT(spx_obj_bucket_set_doc(s, B(s, "vd1"), "cors", "[4]", 3),
		      0, "the new one sets one");
		T_INT(spx_obj_bucket_doc(s, &old, "cors", &doc),
		      SPX_OBJ_NO_SUCH_BUCKET, "the old handle cannot read it");
		spx_obj_bucket_set_doc(s, B(s, "vd1"), "cors", NULL, 0);
		/* None, read through the old handle, is none: nothing of
		 * the new bucket is seen, and every later step under the
		 * old handle is refused. */
		T_INT(spx_obj_bucket_doc(s, &old, "cors", &doc), 0,
		      "an absent one reads as none");
		T_INT((int)doc.len, 0, "empty");
		T_INT(spx_obj_bucket_set_doc(s, B(s, "vd1"), "cors", NULL, 0), 0,
		      "removing none is fine");
		T_INT(spx_obj_bucket_delete(s, B(s, "vd1")), 0, "and it goes");
		spx_buf_release(&doc);
	}

	/* The bucket's mask of documents: a name never given one is not
	 * read at all (a file of that name, garbage, is not seen), and a
	 * handle sees the documents given before it was opened. */
	{
		struct spx_buf doc = SPX_BUF_INIT;
		struct spx_obj_bucket before;

		spx_obj_bucket_create(s, "vm1", "111122223333", "us-east-1");
		for (int i = 0; i < 3; i++) {
			char *f = spx_xprintf("%s/ver/d%d/b/vm1/doc-policy",
					      root, i);

			spx_write_file(f, "garbage", 7, 0600, false);
			free(f);
		}
		T_INT(spx_obj_bucket_doc(s, B(s, "vm1"), "policy", &doc), 0,
		      "a name never given a document is not read");
		T_INT((int)doc.len, 0, "none");
		before = *B(s, "vm1");
		T_INT(spx_obj_bucket_set_doc(s, B(s, "vm1"), "policy", "{}", 2),
		      0, "given one");
		T_INT(spx_obj_bucket_doc(s, &before, "policy", &doc), 0,
		      "a handle opened before");
		T_INT((int)doc.len, 0, "does not see it");
		T_INT(spx_obj_bucket_set_doc(s, &before, "cors", "[1]", 3), 0,
		      "given one through that handle");
		T_INT(spx_obj_bucket_doc(s, &before, "cors", &doc), 0,
		      "read through it");
		T_OK(doc.len == 3 && !memcmp(doc.p, "[1]", 3), "it sees that");
		T_INT(spx_obj_bucket_doc(s, B(s, "vm1"), "policy", &doc), 0,
		      "a handle opened after");
		T_OK(doc.len == 2 && !memcmp(doc.p, "{}", 2), "sees it");
		T_INT(spx_obj_bucket_set_doc(s, B(s, "vm1"), "policy", NULL, 0),
		      0, "removed");
		T_INT(spx_obj_bucket_doc(s, B(s, "vm1"), "policy", &doc), 0,
		      "read again");
		T_INT((int)doc.len, 0, "none");
		T_INT(spx_obj_bucket_set_doc(s, B(s, "vm1"), "policy", "[]", 2),
		      0, "given again");
		T_INT(spx_obj_bucket_doc(s, B(s, "vm1"), "policy", &doc), 0,
		      "read");
		T_OK(doc.len == 2 && !memcmp(doc.p, "[]", 2), "the new one");
		T_OK(B(s, "vm1")->versioning == SPX_OBJ_UNVERSIONED,
		     "the mask leaves the rest of the bucket as it was");
		T_INT(spx_obj_bucket_delete(s, B(s, "vm1")), 0, "it goes");
		spx_buf_release(&doc);
	}

	/* A version carries the incarnation it was written under: a read
	 * through that handle needs no second look at the bucket (its info,
	 * made unreadable here, is not read); through another incarnation's
	 * handle it still is, and fails. */
	{
		struct spx_obj_bucket h, old;
		struct spx_buf keep[3] = { SPX_BUF_INIT, SPX_BUF_INIT,
					   SPX_BUF_INIT };
		char *info[3];

		spx_obj_meta_release(&m);
		spx_obj_bucket_create(s, "vi1", "111122223333", "us-east-1");
		T_INT(put(s, "vi1", "k", "abc", 3, 3), 0, "a version");
		h = *B(s, "vi1");
		T_INT(spx_obj_stat(s, &h, "k", &m), 0, "read");
		T_STR(m.inc, h.inc, "it carries the bucket's incarnation");
		spx_obj_meta_release(&m);
		/* Garbage in the bucket's info on every drive: a look at it
		 * fails. */
		for (int i = 0; i < 3; i++) {
			info[i] = spx_xprintf("%s/ver/d%d/b/vi1/info", root, i);
			keep[i].len = 0;
			spx_buf_read_file(&keep[i], info[i], 1 << 20);
			spx_write_file(info[i], "garbage", 7, 0644, false);
		}
		T_INT(spx_obj_stat(s, &h, "k", &m), 0,
		      "read without the bucket's info");
		spx_obj_meta_release(&m);
		T_INT(spx_obj_reader_open(s, &h, "k", &r), 0,
		      "opened without it");
		spx_obj_reader_close(r);
		r = NULL;
		T_OK(spx_obj_stat(s, &h, "nokey", &m) < 0 &&
			     spx_obj_stat(s, &h, "nokey", &m) !=
				     SPX_OBJ_NO_SUCH_KEY,
		     "a key that is not there still looks at the bucket");
		spx_error_clear();
		for (int i = 0; i < 3; i++) {
			spx_write_file(info[i], keep[i].p, keep[i].len, 0644,
				       false);
			spx_buf_release(&keep[i]);
			free(info[i]);
		}
		old = h;
		T_INT(spx_obj_delete(s, &h, "k"), 0, "removed");
		T_INT(spx_obj_bucket_delete(s, &h), 0, "the bucket goes");
		spx_obj_bucket_create(s, "vi1", "111122223333", "us-east-1");
		T_INT(put(s, "vi1", "k", "xyz", 3, 3), 0, "another, made again");
		T_INT(spx_obj_stat(s, &old, "k", &m),
		      SPX_OBJ_NO_SUCH_BUCKET, "the old handle reads nothing");
		spx_obj_meta_release(&m);
		T_INT(spx_obj_reader_open(s, &old, "k", &r),
		      SPX_OBJ_NO_SUCH_BUCKET, "nor opens it");
		T_INT(spx_obj_delete(s, B(s, "vi1"), "k"), 0, "removed");
		T_INT(spx_obj_bucket_delete(s, B(s, "vi1")), 0, "it goes");
	}

	/* Paging through versions, with and without a delimiter, gives the
	 * same as one page. */
	{
		static const char *const keys[] = { "a/1", "a/2", "b", "c/x/y",
						     "d" };
		struct spx_buf one = SPX_BUF_INIT;
		bool same = true;

		for (size_t i = 0; i < SPX_ARRAY_SIZE(keys); i++)
			for (size_t j = 0; j <= i; j++)
				put_v(s, "vt1", keys[i], d[j], 10 + j, NULL);
		spx_obj_delete(s, B(s, "vt1"), "b");
		versions_str(s, "vt1", NULL, 0, &one);
		T_OK(!strncmp(one.p, "a/1:", 4) && strstr(one.p, ":D;"),
		     "one page: %s", one.p);
		for (size_t max = 1; max <= 17; max++) {
			versions_str(s, "vt1", NULL, max, &vs);
			same = same && !strcmp(vs.p, one.p);
		}
		T_OK(same, "pages of 1 to 17 list the same 17 versions");
		versions_str(s, "vt1", "/", 0, &one);
		same = true;
		for (size_t max = 1; max <= 12; max++) {
			versions_str(s, "vt1", "/", max, &vs);
			same = same && !strcmp(vs.p, one.p);
		}
		T_OK(!strncmp(one.p, "b:", 2) && strstr(one.p, ";d:") &&
		     !strcmp(strchr(one.p, '|'), "|a/;c/;"),
		     "delimiter: %s", one.p);
		T_OK(same, "and in pages");
		spx_buf_release(&one);
	}
	/* A multipart upload completes as a new version. */
	{
		char id[SPX_OBJ_UPLOAD_ID_SIZE];
		struct spx_obj_writer *w;
		struct spx_obj_complete_part cp = { 1, NULL, NULL };

		spx_obj_mpu_create(s, B(s, "vt1"), "d", NULL, id);
		spx_obj_part_begin(s, B(s, "vt1"), "d", id, 1, &w);
		spx_obj_writer_write(w, d[4], 700);
		spx_obj_writer_commit(w, NULL, &out);
		cp.etag = out.etag;
		T_INT(spx_obj_mpu_complete(s, B(s, "vt1"), "d", id, &cp, 1, NULL, &m), 0,
		      "complete in a versioned bucket");
		T_OK(spx_s3_version_id_valid(m.vid), "a new version id");
		spx_obj_meta_release(&m);
		spx_obj_meta_release(&out);
		versions_str(s, "vt1", NULL, 0, &vs);
		T_OK(strstr(vs.p, ":L:700;d:") != NULL, "the old ones remain: %s",
		     vs.p);
	}
	spx_buf_release(&vs);
	spx_buf_release(&want);
	spx_obj_close(s);
}

/* Writers of one key in a versioned bucket, in several processes: every
 * commit is a version of its own. */
static void test_version_race(void)
{
	struct spx_obj *s = open_store("vrace", 2, 1, 64, 0);
	struct spx_obj_versions_opts vo = { 0 };
	struct spx_obj_versions l;
	unsigned char data[300];
	int status, ok = 1, latest = 0, dup = 0;

	fill(data, sizeof(data), 77);
	spx_obj_bucket_create(s, "vr1", "111122223333", "us-east-1");
	spx_obj_bucket_set_versioning(s, B(s, "vr1"), SPX_OBJ_VERSIONING_ENABLED);
	for (int i = 0; i < 6; i++) {
		pid_t p = fork();

		if (!p) {
			int rc = 0;

			for (int j = 0; j < 4; j++) {
				rc |= put(s, "vr1", "same", data, sizeof(data), 50);
				if (j == 2)
					rc |= spx_obj_delete(s, B(s, "vr1"), "same");
			}
			spx_obj_close(s);
			_exit(rc ? 1 : 0);
		}
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ok = 0;
	T_OK(ok, "6 processes x (4 puts + 1 delete) all succeed");
	T_INT(spx_obj_list_versions(s, B(s, "vr1"), &vo, &l), 0, "list versions");
	T_INT(l.n, 30, "30 versions (24 objects, 6 markers)");
	for (size_t i = 0; i < l.n; i++) {
		latest += l.v[i].latest;
		for (size_t j = 0; j < i; j++)
			dup += !strcmp(l.v[i].vid, l.v[j].vid);
	}
	T_INT(latest, 1, "one is the latest");
	T_INT(dup, 0, "every version id is distinct");
	spx_obj_versions_release(&l);
	spx_obj_close(s);
}

/* PUT racing DELETE of the same key: every write either lands or loses
 * to a later delete, never fails because the delete removed the key's
 * directory between the writer's steps. */
static void test_put_delete_race(void)
{
	struct spx_obj *s = open_store("pdrace", 2, 1, 64, SPX_OBJ_NO_INLINE);
	unsigned char data[2000];
	int failed = 0, status;
	pid_t child;

	fill(data, sizeof(data), 41);
	spx_obj_bucket_create(s, "pd1", "111122223333", "us-east-1");
	child = fork();
	if (!child) {
		/* Until the parent is done (its kill). */
		for (;;) {
			spx_obj_delete(s, B(s, "pd1"), "k");
			spx_error_clear();
		}
	}
	for (int i = 0; i < 1000; i++)
		if (put(s, "pd1", "k", data, 100 + (size_t)(i % 7) * 150,
			100) < 0) {
			if (!failed)
				printf("# put %d: %s\n", i, spx_errmsg());
			failed++;
		}
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	T_INT(failed, 0, "1000 PUTs racing DELETEs all succeed");
	spx_obj_close(s);
}

/* A handle is bound to the bucket it opened, not to its name: after the
 * bucket is deleted and another of the name made (by another account),
 * nothing done with the old handle reaches the new bucket. */
static void test_incarnation(void)
{
	struct spx_obj *s = open_store("inc", 2, 1, 64, 0);
	struct spx_obj_bucket a, b;
	struct spx_obj_writer *w;
	struct spx_obj_reader *r;
	struct spx_obj_list l;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	char id[SPX_OBJ_UPLOAD_ID_SIZE];
	unsigned char data[500];

	fill(data, sizeof(data), 3);
	T_INT(spx_obj_bucket_create(s, "ib1", "111111111111", "us-east-1"), 0, "A's bucket");
	T_INT(spx_obj_bucket_open(s, "ib1", &a), 0, "open it");
	T_OK(strlen(a.inc) == 16, "an incarnation (%s)", a.inc);
	T_INT(spx_obj_writer_begin(s, &a, "k", NULL, &w), 0, "A starts a write");
	spx_obj_writer_write(w, data, sizeof(data));
	T_INT(spx_obj_bucket_delete(s, &a), 0, "A deletes the (empty) bucket");
	T_INT(spx_obj_bucket_create(s, "ib1", "222222222222", "us-east-1"), 0, "B makes one of the name");
	T_INT(spx_obj_bucket_open(s, "ib1", &b), 0, "open B's");
	T_OK(strcmp(a.inc, b.inc), "another incarnation");
	T_INT(spx_obj_writer_commit(w, NULL, NULL), SPX_OBJ_NO_SUCH_BUCKET, "A's write does not land in B's bucket (%s)", spx_errmsg());
	T_INT(spx_obj_mpu_create(s, &a, "m", NULL, id), SPX_OBJ_NO_SUCH_BUCKET, "nor an upload");
	T_INT(spx_obj_list(s, &b, NULL, &l), 0, "B lists");
	T_INT(l.n, 0, "B's bucket is empty");
	spx_obj_list_release(&l);
	T_INT(put(s, "ib1", "k", data, sizeof(data), 100), 0, "B writes k");
	T_INT(spx_obj_reader_open(s, &a, "k", &r), SPX_OBJ_NO_SUCH_BUCKET, "A cannot read B's k");
	T_INT(spx_obj_stat(s, &a, "k", &m), SPX_OBJ_NO_SUCH_BUCKET, "nor stat it");
	T_INT(spx_obj_list(s, &a, NULL, &l), SPX_OBJ_NO_SUCH_BUCKET, "nor list the bucket");
	T_INT(spx_obj_delete(s, &a, "k"), SPX_OBJ_NO_SUCH_BUCKET, "nor delete k");
	T_INT(spx_obj_bucket_set_versioning(s, &a, SPX_OBJ_VERSIONING_ENABLED),
	      SPX_OBJ_NO_SUCH_BUCKET, "nor configure the bucket");
	T_INT(spx_obj_delete(s, &b, "k"), 0, "B deletes k");
	T_INT(spx_obj_bucket_delete(s, &a), SPX_OBJ_NO_SUCH_BUCKET, "A cannot delete B's bucket");
	T_INT(spx_obj_bucket_delete(s, &b), 0, "B can");
	spx_obj_close(s);
}

/* Drive 0's directory replaced under a running store (a new disk in its
 * place): the store's held directory follows within a second. */
static void test_drive0_replaced(void)
{
	struct spx_obj *s = open_store("dr", 1, 0, 64, 0), *t;
	struct spx_obj_bucket a;
	char *b = spx_xprintf("%s/dr/d0/b", root);
	char *old = spx_xprintf("%s/dr/d0/b-old", root);
	struct timespec ts = { 1, 200 * 1000 * 1000 };

	T_INT(spx_obj_bucket_create(s, "dr1", "111111111111", "us-east-1"), 0, "a bucket");
	T_INT(spx_obj_bucket_open(s, "dr1", &a), 0, "opened");
	T_INT(rename(b, old), 0, "drive 0's b/ moved away");
	t = open_store("dr", 1, 0, 64, 0);
	T_INT(spx_obj_bucket_create(t, "dr1", "222222222222", "us-east-1"), 0,
	      "the bucket made again in a new b/");
	nanosleep(&ts, NULL);
	T_INT(spx_obj_bucket_open(s, "dr1", &a), 0, "opened after a second");
	T_STR(a.owner, "222222222222", "from the new directory");
	spx_obj_close(t);
	spx_obj_close(s);
	spx_rmtree(old);
	free(b);
	free(old);
}

/* A reader beside a writer of one key (another process), through the
 * metadata cache: every read is a whole version whose ETag is the MD5 of
 * its bytes, and no read goes back to a version older than one read
 * before it. */
static void test_meta_cache_race(void)
{
	struct spx_obj *s = open_store("mcr", 1, 0, 64, 0);
	int status, bad = 0, back = 0, reads = 0;
	long last = -1;
	pid_t child;

	spx_obj_bucket_create(s, "mcr1", "111122223333", "us-east-1");
	put(s, "mcr1", "k", "v000000", 7, 7);
	child = fork();
	if (!child) {
		struct spx_obj *w = open_store("mcr", 1, 0, 64, 0);
		char v[16]; /* "v%06d" of an int, as the compiler counts */

		for (int i = 1; i < 300; i++) {
			snprintf(v, sizeof(v), "v%06d", i);
			put(w, "mcr1", "k", v, 7, 7);
		}
		spx_obj_close(w);
		spx_obj_close(s);
		_exit(0);
	}
	for (;;) {
		struct spx_obj_reader *r;
		char got[8] = { 0 }, md5hex[33];
		unsigned char md5[SPX_CKSUM_MAX];
		size_t g = 0, ml;
		bool done = waitpid(child, &status, WNOHANG) == child;

		if (spx_obj_reader_open_version(s, B(s, "mcr1"), "k", NULL, &r) == 0) {
			spx_obj_read(r, 0, got, 7, &g);
			spx_cksum_digest(SPX_CKSUM_MD5, got, g, md5, &ml);
			spx_hex_encode(md5, 16, md5hex);
			if (g != 7 || got[0] != 'v' ||
			    strcmp(spx_obj_reader_meta(r)->etag, md5hex))
				bad++;
			else {
				long n = strtol(got + 1, NULL, 10);

				back += n < last;
				last = n;
			}
			spx_obj_reader_close(r);
		} else {
			bad++;
			spx_error_clear();
		}
		reads++;
		if (done)
			break;
	}
	T_INT(bad, 0, "every read is a whole version with its own ETag");
	T_INT(back, 0, "and none is older than one read before it");
	T_INT((int)last, 299, "the last read is the last version");
	printf("# %d reads beside 300 overwrites\n", reads);
	spx_obj_close(s);
}

/* How key k of bucket b lies on drive d of store name: 1 flat (a file),
 * 2 a directory, 0 absent. */
static int key_form(const char *name, int d, const char *b, const char *k)
{
	char enc[256], *p;
	struct stat st;
	int form;

	spx_obj_key_encode(k, enc, sizeof(enc));
	p = spx_xprintf("%s/%s/d%d/b/%s/o/%s", root, name, d, b, enc);
	form = lstat(p, &st) < 0 ? 0 : S_ISREG(st.st_mode) ? 1 : 2;
	free(p);
	return form;
}

static bool forms(const char *name, int n, const char *b, const char *k,
		  int want)
{
	for (int d = 0; d < n; d++)
		if (key_form(name, d, b, k) != want)
			return false;
	return true;
}

/* Small objects are kept flat (store.c, "flat keys"): the key's own
 * name is its metadata file until the key needs a directory. */
static void test_flat(void)
{
	struct spx_obj *s = open_store("fl", 2, 1, 128, 0), *t;
	static unsigned char big[200 << 10];
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct spx_kvlist tags = { 0 };
	struct count c = { 0 };
	struct spx_buf vs = SPX_BUF_INIT;
	char lk[600], *got, *p, v1[SPX_OBJ_VID_SIZE] = "";
	size_t restored = 0;

	fill(big, sizeof(big), 41);
	memset(lk, 'L', sizeof(lk) - 1);
	lk[sizeof(lk) - 1] = 0;
	spx_obj_bucket_create(s, "fl1", "111122223333", "us-east-1");
	T_INT(put(s, "fl1", "a", "hello", 5, 5), 0, "flat: a small object");
	T_OK(forms("fl", 3, "fl1", "a", 1), "flat: a file on every drive");
	T_OK(get_eq(s, "fl1", "a", "hello", 5), "flat: read back");
	T_INT(spx_obj_stat(s, B(s, "fl1"), "a", &m), 0, "flat: stat");
	T_INT((int)m.size, 5, "flat: its size");
	spx_obj_meta_release(&m);
	T_INT(spx_obj_bucket_delete(s, B(s, "fl1")), SPX_OBJ_BUCKET_NOT_EMPTY,
	      "flat: the bucket is not empty");
	T_INT(put(s, "fl1", "a", "world", 5, 5), 0, "flat: overwritten");
	T_OK(forms("fl", 3, "fl1", "a", 1) && get_eq(s, "fl1", "a", "world", 5),
	     "flat: still a file, the new bytes");
	spx_kv_add(&tags, "t", "1");
	T_INT(spx_obj_set_tags(s, B(s, "fl1"), "a", NULL, &tags, NULL), 0,
	      "flat: tagged");
	T_OK(spx_obj_stat(s, B(s, "fl1"), "a", &m) == 0 &&
	     spx_kv_get(&m.tags, "t") && forms("fl", 3, "fl1", "a", 1),
	     "flat: the tag is kept, still a file");
	spx_obj_meta_release(&m);
	T_INT(put(s, "fl1", "a", big, sizeof(big), 7000), 0,
	      "flat: overwritten by an object with data");
	T_OK(forms("fl", 3, "fl1", "a", 2), "flat: a directory now");
	T_OK(get_eq(s, "fl1", "a", big, sizeof(big)), "flat: the large bytes");
	T_INT(put(s, "fl1", "a", "small", 5, 5), 0, "flat: small again");
	T_OK(forms("fl", 3, "fl1", "a", 2) && get_eq(s, "fl1", "a", "small", 5),
	     "flat: a directory stays one");
	T_INT(put(s, "fl1", "b", "bee", 3, 3), 0, "flat: another key");
	T_INT(put(s, "fl1", lk, "long", 4, 4), 0, "flat: a long (hashed) key");
	T_OK(forms("fl", 3, "fl1", lk, 1), "flat: hashed and flat");
	got = list_all(s, "fl1", "", NULL, 2);
	T_OK(strstr(got, "a ") && strstr(got, "b ") && strstr(got, "LLLL"),
	     "flat: listed (%.40s)", got);
	free(got);
	/* The index made again from the key directories (files too). */
	p = spx_xprintf("%s/fl/d0/b/fl1/x", root);
	spx_rmtree(p);
	free(p);
	got = list_all(s, "fl1", "", NULL, 2);
	T_OK(strstr(got, "a ") && strstr(got, "b ") && strstr(got, "LLLL"),
	     "flat: listed after the index is made again (%.40s)", got);
	free(got);
	/* Another drive's copy lost: found and healed. */
	p = spx_xprintf("%s/fl/d1/b/fl1/o/b", root);
	T_INT(unlink(p), 0, "flat: drive 1's copy removed");
	free(p);
	spx_obj_verify(s, "fl1", false, count_cb, &c);
	T_OK(c.bad > 0, "flat: verify finds it (%zu)", c.bad);
	memset(&c, 0, sizeof(c));
	spx_obj_verify(s, "fl1", true, count_cb, &c);
	T_OK(c.healed > 0, "flat: heal writes it (%zu)", c.healed);
	memset(&c, 0, sizeof(c));
	spx_obj_verify(s, "fl1", false, count_cb, &c);
	T_INT(c.bad, 0, "flat: clean after heal");
	/* Drive 0's copy lost: brought back from the others. */
	p = spx_xprintf("%s/fl/d0/b/fl1/o/b", root);
	T_INT(unlink(p), 0, "flat: drive 0's copy removed");
	free(p);
	T_INT(spx_obj_restore_drive0(s, &restored), 0, "flat: restore drive 0");
	T_OK(restored >= 1 && get_eq(s, "fl1", "b", "bee", 3),
	     "flat: restored (%zu)", restored);
	/* A store that makes no flat keys reads them, and makes
	 * directories. */
	t = open_store("fl", 2, 1, 128, SPX_OBJ_NO_FLAT);
	T_OK(get_eq(t, "fl1", lk, "long", 4), "flat: read by a store without");
	T_INT(put(t, "fl1", "c", "sea", 3, 3), 0, "flat: a key from it");
	T_OK(forms("fl", 3, "fl1", "c", 2), "flat: is a directory");
	spx_obj_close(t);
	T_INT(spx_obj_delete(s, B(s, "fl1"), "b"), 0, "flat: deleted");
	T_OK(forms("fl", 3, "fl1", "b", 0), "flat: gone from every drive");
	T_INT(spx_obj_stat(s, B(s, "fl1"), "b", &m), SPX_OBJ_NO_SUCH_KEY,
	      "flat: not found");
	spx_error_clear();
	put(s, "fl1", "n", "null", 4, 4);
	T_INT(spx_obj_delete_version(s, B(s, "fl1"), "n", "null", NULL), 0,
	      "flat: the null version deleted by its id");
	T_OK(forms("fl", 3, "fl1", "n", 0), "flat: and gone");
	/* Versions need the directory. */
	spx_obj_bucket_create(s, "fl2", "111122223333", "us-east-1");
	spx_obj_bucket_set_versioning(s, B(s, "fl2"), SPX_OBJ_VERSIONING_ENABLED);
	T_INT(put_v(s, "fl2", "v", "one", 3, v1), 0, "flat: a first version");
	T_OK(forms("fl", 3, "fl2", "v", 1), "flat: it is flat");
	T_INT(put(s, "fl2", "v", "two", 3, 3), 0, "flat: a second version");
	T_OK(forms("fl", 3, "fl2", "v", 2), "flat: a directory now");
	T_OK(get_ver_eq(s, "fl2", "v", v1, "one", 3) &&
	     get_eq(s, "fl2", "v", "two", 3), "flat: both versions read");
	versions_str(s, "fl2", NULL, 1000, &vs);
	T_OK(strstr(vs.p, ":L:3;") && strstr(vs.p, ":-:3;"),
	     "flat: two versions listed (%s)", vs.p);
	/* A multipart upload completed onto a flat key. */
	{
		struct spx_obj_writer *w;
		struct spx_obj_meta out = SPX_OBJ_META_INIT;
		char id[SPX_OBJ_UPLOAD_ID_SIZE], etag[2][SPX_OBJ_ETAG_SIZE + 8];
		struct spx_obj_complete_part all[2];

		put(s, "fl1", "m", "x", 1, 1);
		T_OK(forms("fl", 3, "fl1", "m", 1), "flat: before the upload");
		spx_obj_mpu_create(s, B(s, "fl1"), "m", NULL, id);
		for (int pn = 1; pn <= 2; pn++) {
			spx_obj_part_begin(s, B(s, "fl1"), "m", id, pn, &w);
			spx_obj_writer_write(w, big + (pn - 1) * 1500, 1500);
			spx_obj_writer_commit(w, NULL, &out);
			snprintf(etag[pn - 1], sizeof(etag[0]), "\"%s\"", out.etag);
			spx_obj_meta_release(&out);
			all[pn - 1] = (struct spx_obj_complete_part){ pn, etag[pn - 1], NULL };
		}
		T_INT(spx_obj_mpu_complete(s, B(s, "fl1"), "m", id, all, 2, NULL, &out),
		      0, "flat: an upload completed onto it");
		spx_obj_meta_release(&out);
		T_OK(forms("fl", 3, "fl1", "m", 2) && get_eq(s, "fl1", "m", big, 3000),
		     "flat: a directory with the upload's bytes");
	}
	/* What a crash in the middle of making a directory leaves is swept
	 * by heal once it is old. */
	{
		char *cv = spx_xprintf("%s/fl/d0/b/fl1/o/.cv-0123456789abcdef", root);
		struct timespec old[2] = { { 1000000, 0 }, { 1000000, 0 } };

		mkdir(cv, 0755);
		utimensat(AT_FDCWD, cv, old, AT_SYMLINK_NOFOLLOW);
		spx_obj_verify(s, "fl1", true, count_cb, &c);
		T_OK(access(cv, F_OK) < 0, "flat: an old leftover is swept");
		free(cv);
	}
	spx_buf_release(&vs);
	spx_kv_free(&tags);
	spx_obj_close(s);
}

/* drive 0's `format`: written when a store may keep keys flat; a newer
 * or unreadable one refuses the store. */
static void test_format(void)
{
	char *f = spx_xprintf("%s/fmt/d0/format", root);
	struct spx_obj *s = open_store("fmt", 1, 0, 64, 0);
	struct spx_buf b = SPX_BUF_INIT;

	T_OK(s && spx_buf_read_file(&b, f, 100) == 0 && b.len == 2 &&
	     !memcmp(b.p, "2\n", 2), "format: 2 written at open");
	spx_obj_close(s);
	spx_write_file(f, "3\n", 2, 0644, false);
	s = open_store("fmt", 1, 0, 64, 0);
	T_OK(!s && strstr(spx_errmsg(), "newer"), "format: a newer one refused (%s)",
	     spx_errmsg());
	spx_obj_close(s);
	spx_write_file(f, "2x", 2, 0644, false);
	s = open_store("fmt", 1, 0, 64, 0);
	T_OK(!s && strstr(spx_errmsg(), "does not hold"), "format: garbage refused");
	spx_obj_close(s);
	spx_write_file(f, "1\n", 2, 0644, false);
	s = open_store("fmt", 1, 0, 64, SPX_OBJ_NO_FLAT);
	spx_buf_reset(&b);
	T_OK(s && spx_buf_read_file(&b, f, 100) == 0 && b.p[0] == '1',
	     "format: 1 kept by a store that keeps no key flat");
	spx_obj_close(s);
	s = open_store("fmt", 1, 0, 64, 0);
	spx_buf_reset(&b);
	T_OK(s && spx_buf_read_file(&b, f, 100) == 0 && b.p[0] == '2',
	     "format: 1 becomes 2");
	spx_obj_close(s);
	spx_error_clear();
	spx_buf_release(&b);
	free(f);
}

/* Readers beside a writer that turns flat keys into directories (another
 * process): a reader of a key that exists throughout never misses it,
 * and every read is a whole version whose ETag is the MD5 of its bytes. */
static void test_flat_race(void)
{
	struct spx_obj *s = open_store("flr", 1, 0, 64, 0);
	static unsigned char big[200 << 10];
	int status, bad = 0, missed = 0, reads = 0;
	pid_t child;
	char k[16];

	fill(big, sizeof(big), 43);
	spx_obj_bucket_create(s, "flr1", "111122223333", "us-east-1");
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%03d", i);
		put(s, "flr1", k, "v0", 2, 2);
	}
	child = fork();
	if (!child) {
		struct spx_obj *w = open_store("flr", 1, 0, 64, 0);

		for (int i = 0; i < 100; i++) {
			snprintf(k, sizeof(k), "k%03d", i);
			put(w, "flr1", k, big, sizeof(big), sizeof(big));
		}
		spx_obj_close(w);
		spx_obj_close(s);
		_exit(0);
	}
	for (int i = 0;; i = (i + 1) % 100) {
		struct spx_obj_reader *r;
		bool done = waitpid(child, &status, WNOHANG) == child;

		snprintf(k, sizeof(k), "k%03d", i);
		if (spx_obj_reader_open_version(s, B(s, "flr1"), k, NULL, &r) == 0) {
			const struct spx_obj_meta *m = spx_obj_reader_meta(r);
			unsigned char *got = malloc(m->size + 1), md5[SPX_CKSUM_MAX];
			char md5hex[33];
			size_t g = 0, off = 0, ml;

			while (off < m->size &&
			       spx_obj_read(r, off, got + off, m->size - off, &g) == 0 && g)
				off += g;
			spx_cksum_digest(SPX_CKSUM_MD5, got, off, md5, &ml);
			spx_hex_encode(md5, 16, md5hex);
			bad += off != m->size || strcmp(m->etag, md5hex) != 0;
			free(got);
			spx_obj_reader_close(r);
		} else {
			missed++;
			spx_error_clear();
		}
		reads++;
		if (done)
			break;
	}
	T_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0, "flat race: the writer ran");
	T_INT(missed, 0, "flat race: no key was missed");
	T_INT(bad, 0, "flat race: every read whole, with its own ETag");
	T_OK(forms("flr", 1, "flr1", "k099", 2), "flat race: the keys are directories");
	printf("# %d reads beside 100 keys made directories\n", reads);
	spx_obj_close(s);
}

/* Two processes write the same new keys at once, one small objects (made
 * flat where the key has nothing), the other large ones (whose data
 * directory needs the key to be a directory): every write succeeds, and
 * each key then reads as a whole object, whichever came last. */
static void test_flat_writers_race(void)
{
	struct spx_obj *s = open_store("flw", 1, 0, 64, 0);
	static unsigned char big[200 << 10];
	int status, fails = 0, bad = 0;
	pid_t child;
	char k[16];

	fill(big, sizeof(big), 47);
	spx_obj_bucket_create(s, "flw1", "111122223333", "us-east-1");
	child = fork();
	if (!child) {
		struct spx_obj *w = open_store("flw", 1, 0, 64, 0);
		int f = 0;

		for (int i = 0; i < 100; i++) {
			snprintf(k, sizeof(k), "k%03d", i);
			f += put(w, "flw1", k, "small", 5, 5) != 0;
		}
		spx_obj_close(w);
		spx_obj_close(s);
		_exit(f ? 1 : 0);
	}
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%03d", i);
		fails += put(s, "flw1", k, big, sizeof(big), 65536) != 0;
	}
	waitpid(child, &status, 0);
	T_INT(fails, 0, "flat writers: every large write succeeded");
	T_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0,
	      "flat writers: every small write succeeded");
	for (int i = 0; i < 100; i++) {
		struct spx_obj_meta m = SPX_OBJ_META_INIT;

		snprintf(k, sizeof(k), "k%03d", i);
		/* get_eq reads into a buffer of the size it expects. */
		if (spx_obj_stat(s, B(s, "flw1"), k, &m) < 0)
			bad++;
		else if (m.size == 5)
			bad += !get_eq(s, "flw1", k, "small", 5);
		else
			bad += !get_eq(s, "flw1", k, big, sizeof(big));
		spx_obj_meta_release(&m);
	}
	T_INT(bad, 0, "flat writers: each key one whole object");
	spx_obj_close(s);
}

/* A bucket deleted and made again between two pages of a listing: the
 * old handle's next page is NoSuchBucket, never the new bucket's keys,
 * and a new handle lists only the new bucket's keys after the marker. */
static void test_list_recreated(void)
{
	struct spx_obj *s = open_store("lr", 1, 0, 64, 0);
	struct spx_obj_bucket old;
	struct spx_obj_list_opts o = { .max = 10 };
	struct spx_obj_list l = SPX_OBJ_LIST_INIT;
	char k[16], *got;

	spx_obj_bucket_create(s, "lr1", "111111111111", "us-east-1");
	for (int i = 0; i < 30; i++) {
		snprintf(k, sizeof(k), "a%02d", i);
		put(s, "lr1", k, "x", 1, 1);
	}
	T_INT(spx_obj_bucket_open(s, "lr1", &old), 0, "the bucket");
	T_INT(spx_obj_list(s, &old, &o, &l), 0, "the first page");
	T_OK(l.n == 10 && l.truncated && !strcmp(l.next, "a09"), "ten keys, more to come");
	spx_obj_list_release(&l);
	for (int i = 0; i < 30; i++) {
		snprintf(k, sizeof(k), "a%02d", i);
		spx_obj_delete(s, &old, k);
	}
	T_INT(spx_obj_bucket_delete(s, &old), 0, "emptied and deleted");
	T_INT(spx_obj_bucket_create(s, "lr1", "222222222222", "us-east-1"), 0,
	      "made again by another account");
	for (int i = 0; i < 5; i++) {
		snprintf(k, sizeof(k), "b%02d", i);
		put(s, "lr1", k, "y", 1, 1);
	}
	o.after = "a09";
	l = (struct spx_obj_list)SPX_OBJ_LIST_INIT;
	T_INT(spx_obj_list(s, &old, &o, &l), SPX_OBJ_NO_SUCH_BUCKET,
	      "the old handle's next page: no such bucket");
	spx_obj_list_release(&l);
	spx_error_clear();
	got = list_pages(s, "lr1", NULL, NULL, 2, false);
	T_STR(got, "b00 b01 b02 b03 b04 ", "the new bucket lists its own keys");
	free(got);
	spx_obj_close(s);
}

/* The metadata cache of GET and HEAD (obj_get_meta_cached): every change
 * another handle (another process) makes is seen at once, however alike
 * the new file is to the old one (same size, a reused inode). */
static void test_meta_cache(void)
{
	struct spx_obj *s = open_store("mc", 1, 0, 64, 0);
	struct spx_obj *t = open_store("mc", 1, 0, 64, 0);
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	char v1[SPX_OBJ_VID_SIZE], v2[SPX_OBJ_VID_SIZE];
	char body[5] = "aaaa";
	int stale = 0;

	T_INT(spx_obj_bucket_create(s, "mc1", "111111111111", "us-east-1"), 0, "a bucket");
	T_INT(put(t, "mc1", "k", body, 4, 4), 0, "an object, there");
	T_OK(get_eq(s, "mc1", "k", body, 4), "read here");
	T_OK(get_eq(s, "mc1", "k", body, 4), "and again (cached)");
	/* Overwrites of the same size in quick succession: each file the
	 * same size as the last, on inodes the file system reuses. */
	for (int i = 0; i < 40; i++) {
		body[0] = body[1] = (char)('b' + i % 20);
		body[2] = (char)('a' + i / 20);
		put(t, "mc1", "k", body, 4, 4);
		stale += !get_eq(s, "mc1", "k", body, 4);
	}
	T_INT(stale, 0, "40 overwrites there, each read here at once");
	spx_kv_add(&tags, "t", "1");
	T_INT(spx_obj_set_tags(t, B(t, "mc1"), "k", NULL, &tags, NULL), 0, "tags");
	T_INT(spx_obj_stat_version(s, B(s, "mc1"), "k", NULL, &m), 0, "HEAD here");
	T_STR(spx_kv_get(&m.tags, "t"), "1", "sees them");
	spx_obj_meta_release(&m);
	spx_kv_free(&tags);
	spx_kv_add(&tags, "t", "2");
	T_INT(spx_obj_set_tags(t, B(t, "mc1"), "k", NULL, &tags, NULL), 0,
	      "tags of the same size");
	T_INT(spx_obj_stat_version(s, B(s, "mc1"), "k", NULL, &m), 0, "HEAD here");
	T_STR(spx_kv_get(&m.tags, "t"), "2", "sees the new ones");
	spx_obj_meta_release(&m);
	T_INT(spx_obj_delete(t, B(t, "mc1"), "k"), 0, "deleted there");
	T_INT(spx_obj_stat_version(s, B(s, "mc1"), "k", NULL, &m), SPX_OBJ_NO_SUCH_KEY,
	      "gone here");
	spx_obj_meta_release(&m);

	/* A version that becomes current again is the file it was. */
	T_INT(spx_obj_bucket_set_versioning(t, B(t, "mc1"), SPX_OBJ_VERSIONING_ENABLED),
	      0, "versioning");
	T_INT(put_v(t, "mc1", "v", "1111", 4, v1), 0, "version 1");
	T_OK(get_eq(s, "mc1", "v", "1111", 4), "read here");
	T_INT(put_v(t, "mc1", "v", "2222", 4, v2), 0, "version 2");
	T_OK(get_eq(s, "mc1", "v", "2222", 4), "read here");
	T_INT(spx_obj_delete_version(t, B(t, "mc1"), "v", v2, NULL), 0,
	      "version 2 removed");
	T_OK(get_eq(s, "mc1", "v", "1111", 4), "version 1 is read here");

	/* A name that became a link is refused, cached or not. */
	{
		char *kd = spx_xprintf("%s/mc/d0/b/mc1/o/v", root);
		char *meta = spx_xprintf("%s/meta", kd);
		char *keep = spx_xprintf("%s/kept", kd);
		struct spx_obj_reader *r = NULL;

		T_INT(rename(meta, keep), 0, "the metadata moved aside");
		T_INT(symlink("kept", meta), 0, "and linked back");
		T_OK(spx_obj_reader_open_version(s, B(s, "mc1"), "v", NULL, &r) < 0,
		     "a link is not read");
		spx_obj_reader_close(r);
		spx_error_clear();
		unlink(meta);
		T_INT(rename(keep, meta), 0, "back");
		free(kd);
		free(meta);
		free(keep);
	}
	spx_kv_free(&tags);
	spx_obj_close(t);
	spx_obj_close(s);
}

/* Bucket records are cached per store handle (one per process): a change
 * made through another handle, as another process would, is seen at the
 * next open, and so are a delete and a re-creation; two versions of the
 * record written within one tick of the kernel's clock still differ by
 * mtime (spx_write_file stamps it to the nanosecond). */
static void test_bucket_cache(void)
{
	struct spx_obj *s = open_store("bc", 1, 0, 64, 0);
	struct spx_obj *t = open_store("bc", 1, 0, 64, 0);
	struct spx_obj_bucket a, b;
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	char *info = spx_xprintf("%s/bc/d0/b/bc1/info", root);
	struct stat st1, st2;

	T_INT(spx_obj_bucket_create(s, "bc1", "111111111111", "us-east-1"), 0, "a bucket");
	T_INT(spx_obj_bucket_open(s, "bc1", &a), 0, "open it (cached)");
	T_INT(spx_obj_bucket_open(s, "bc1", &a), 0, "open it again (from the cache)");
	T_INT(a.versioning, SPX_OBJ_UNVERSIONED, "unversioned");
	T_INT(spx_obj_bucket_open(t, "bc1", &b), 0, "the other process opens it");
	T_INT(spx_obj_bucket_set_versioning(t, &b, SPX_OBJ_VERSIONING_ENABLED), 0,
	      "and enables versioning");
	T_INT(spx_obj_bucket_open(s, "bc1", &a), 0, "open it here");
	T_INT(a.versioning, SPX_OBJ_VERSIONING_ENABLED, "versioning is seen at once");
	T_INT(stat(info, &st1), 0, "stat the record");
	spx_kv_add(&tags, "k", "1");
	T_INT(spx_obj_bucket_set_tags(t, &b, &tags), 0, "tags, there");
	T_INT(stat(info, &st2), 0, "stat it again");
	T_OK(st1.st_mtim.tv_sec != st2.st_mtim.tv_sec ||
		     st1.st_mtim.tv_nsec != st2.st_mtim.tv_nsec,
	     "the new record has another mtime");
	/* Many versions of one file in quick succession, each of the same
	 * size: the kernel's coarse clock would give several the same. */
	{
		char *f = spx_xprintf("%s/bc/stamp", root);
		struct timespec seen[40];
		int dup = 0;

		for (int i = 0; i < 40; i++) {
			struct stat st;

			spx_write_file(f, "x", 1, 0644, false);
			stat(f, &st);
			seen[i] = st.st_mtim;
			for (int j = 0; j < i; j++)
				dup += seen[j].tv_sec == seen[i].tv_sec &&
				       seen[j].tv_nsec == seen[i].tv_nsec;
		}
		T_INT(dup, 0, "40 versions of a file written at once: 40 mtimes");
		free(f);
	}
	T_INT(spx_obj_bucket_set_versioning(t, &b, SPX_OBJ_VERSIONING_SUSPENDED), 0,
	      "suspended, there");
	T_INT(spx_obj_bucket_open(s, "bc1", &a), 0, "open it here");
	T_INT(a.versioning, SPX_OBJ_VERSIONING_SUSPENDED, "suspended, here");
	T_INT(spx_obj_bucket_delete(t, &b), 0, "the other process deletes it");
	T_INT(spx_obj_bucket_open(s, "bc1", &a), SPX_OBJ_NO_SUCH_BUCKET, "gone here too");
	T_INT(spx_obj_bucket_create(t, "bc1", "222222222222", "us-east-1"), 0,
	      "and makes another of the name");
	T_INT(spx_obj_bucket_open(s, "bc1", &a), 0, "open it here");
	T_STR(a.owner, "222222222222", "the new owner");
	T_INT(spx_obj_bucket_open(t, "bc1", &b), 0, "open it there");
	T_STR(a.inc, b.inc, "the new incarnation");
	spx_kv_free(&tags);
	free(info);
	spx_obj_close(t);
	spx_obj_close(s);
}

/* Re-sending a part while CompleteMultipartUpload runs: Complete must see
 * one consistent set of parts, so the object it acknowledges has all its
 * shards. A child process re-commits part 1 (same bytes, so the same
 * ETag, in a new segment) in a loop while the parent completes. */
static void test_mpu_race(void)
{
	struct spx_obj *s = open_store("mrace", 2, 1, 64, SPX_OBJ_NO_INLINE);
	unsigned char data[3000];
	int bad = 0, done = 0, resent = 0;

	fill(data, sizeof(data), 31);
	spx_obj_bucket_create(s, "mr1", "111122223333", "us-east-1");
	for (int round = 0; round < 40; round++) {
		struct spx_obj_complete_part cp[2] = { { 1, NULL, NULL },
						       { 2, NULL, NULL } };
		char id[SPX_OBJ_UPLOAD_ID_SIZE], e[2][SPX_OBJ_ETAG_SIZE];
		struct spx_obj_meta out = SPX_OBJ_META_INIT;
		struct spx_obj_writer *w;
		struct count c = { 0 };
		int status;
		pid_t child;

		spx_obj_mpu_create(s, B(s, "mr1"), "obj", NULL, id);
		for (int p = 1; p <= 2; p++) {
			spx_obj_part_begin(s, B(s, "mr1"), "obj", id, p, &w);
			spx_obj_writer_write(w, data + (p - 1) * 1500, 1500);
			spx_obj_writer_commit(w, NULL, &out);
			snprintf(e[p - 1], sizeof(e[p - 1]), "%s", out.etag);
			cp[p - 1].etag = e[p - 1];
		}
		child = fork();
		if (!child) {
			int i;

			/* Until the upload is gone. */
			for (i = 0; i < 2000; i++) {
				if (spx_obj_part_begin(s, B(s, "mr1"), "obj", id, 1, &w) < 0)
					break;
				spx_obj_writer_write(w, data, 1500);
				if (spx_obj_writer_commit(w, NULL, NULL) < 0)
					break;
			}
			spx_obj_close(s);
			_exit(i > 250 ? 250 : i);
		}
		/* Let the child get going. */
		usleep((useconds_t)(1000 + (round % 8) * 1500));
		if (spx_obj_mpu_complete(s, B(s, "mr1"), "obj", id, cp, 2, NULL, &out) == 0) {
			done++;
			if (!get_eq(s, "mr1", "obj", data, sizeof(data)))
				bad++;
			spx_obj_verify(s, "mr1", false, count_cb, &c);
			if (c.bad)
				bad++;
		}
		spx_obj_meta_release(&out);
		waitpid(child, &status, 0);
		if (WIFEXITED(status))
			resent += WEXITSTATUS(status);
	}
	printf("# %d parts re-sent\n", resent);
	T_OK(done > 0, "%d of 40 completes succeeded", done);
	T_INT(bad, 0, "every completed object has all its data");
	spx_obj_close(s);
}

/* A conditional commit: the condition sees the current object (NULL for
 * none or a delete marker), and a refusal changes nothing. */
static int cond_absent(void *ctx, const struct spx_obj_meta *cur)
{
	(*(int *)ctx)++;
	return cur ? SPX_OBJ_PRECONDITION : 0;
}

static int cond_etag(void *ctx, const struct spx_obj_meta *cur)
{
	return cur && !strcmp(cur->etag, (const char *)ctx) ? 0
							    : SPX_OBJ_PRECONDITION;
}

static int put_cond(struct spx_obj *s, const char *k, const void *p, size_t n,
		    spx_obj_cond_fn fn, void *ctx)
{
	struct spx_obj_writer *w;
	int rc = spx_obj_writer_begin(s, B(s, "cnd"), k, NULL, &w);

	if (rc < 0)
		return rc;
	spx_obj_writer_condition(w, fn, ctx);
	if ((rc = spx_obj_writer_write(w, p, n)) < 0) {
		spx_obj_writer_abort(w);
		return rc;
	}
	return spx_obj_writer_commit(w, NULL, NULL);
}

static void test_condition(void)
{
	struct spx_obj *s = open_store("cnd", 1, 0, 256, 0);
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	unsigned char a[1000], b[1000];
	int calls = 0;

	fill(a, sizeof(a), 7);
	fill(b, sizeof(b), 8);
	spx_obj_bucket_create(s, "cnd", "111122223333", "us-east-1");
	T_INT(put_cond(s, "k", a, sizeof(a), cond_absent, &calls), 0,
	      "if-none-match on a new key commits");
	T_INT(calls, 1, "the condition ran once, at the commit");
	T_INT(put_cond(s, "k", b, sizeof(b), cond_absent, &calls),
	      SPX_OBJ_PRECONDITION, "if-none-match on an existing key fails");
	T_OK(get_eq(s, "cnd", "k", a, sizeof(a)), "and the object is unchanged");
	T_INT(spx_obj_stat(s, B(s, "cnd"), "k", &m), 0, "stat");
	T_INT(put_cond(s, "k", b, sizeof(b), cond_etag, "0123"),
	      SPX_OBJ_PRECONDITION, "if-match on another etag fails");
	T_OK(get_eq(s, "cnd", "k", a, sizeof(a)), "unchanged again");
	T_INT(put_cond(s, "k", b, sizeof(b), cond_etag, m.etag), 0,
	      "if-match on the current etag commits");
	T_OK(get_eq(s, "cnd", "k", b, sizeof(b)), "and the object is new");
	spx_obj_meta_release(&m);
	spx_obj_close(s);
}

/* Object lock's two engine hooks: a conditional version delete and an
 * in-place metadata change, each refused under the key's lock with
 * nothing changed. */
static int keep_held(void *ctx, const struct spx_obj_meta *v)
{
	(*(int *)ctx)++;
	return spx_kv_get(&v->sys, "hold") ? SPX_OBJ_LOCKED : 0;
}

static int add_hold(void *ctx, struct spx_obj_meta *m)
{
	if (spx_kv_get(&m->sys, "hold"))
		return SPX_OBJ_LOCKED;
	spx_kv_add(&m->sys, "hold", (const char *)ctx);
	return 0;
}

static void test_lock_hooks(void)
{
	struct spx_obj *s = open_store("lck", 1, 0, 256, 0);
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct spx_obj_deleted del;
	unsigned char a[500];
	char v1[SPX_OBJ_VID_SIZE], v2[SPX_OBJ_VID_SIZE], got[SPX_OBJ_VID_SIZE];
	int calls = 0;

	fill(a, sizeof(a), 9);
	spx_obj_bucket_create(s, "lck", "111122223333", "us-east-1");
	spx_obj_bucket_set_versioning(s, B(s, "lck"),
				      SPX_OBJ_VERSIONING_ENABLED);
	T_INT(put_v(s, "lck", "k", a, sizeof(a), v1), 0, "put v1");
	T_INT(put_v(s, "lck", "k", a, 100, v2), 0, "put v2");
	T_INT(spx_obj_update(s, B(s, "lck"), "k", v1, add_hold, "on", got), 0,
	      "v1 held");
	T_STR(got, v1, "the version changed is named");
	T_INT(spx_obj_update(s, B(s, "lck"), "k", v1, add_hold, "again", NULL),
	      SPX_OBJ_LOCKED, "a refused change");
	T_INT(spx_obj_stat_version(s, B(s, "lck"), "k", v1, &m), 0, "stat v1");
	T_STR(spx_kv_get(&m.sys, "hold"), "on", "kept as the first change");
	T_INT((long long)m.size, (long long)sizeof(a), "size unchanged");
	spx_obj_meta_release(&m);
	T_INT(spx_obj_delete_version_if(s, B(s, "lck"), "k", v1, keep_held,
					&calls, &del),
	      SPX_OBJ_LOCKED, "the held version is refused");
	T_INT(calls, 1, "asked once");
	T_OK(get_ver_eq(s, "lck", "k", v1, a, sizeof(a)), "and reads back");
	T_INT(spx_obj_delete_version_if(s, B(s, "lck"), "k", v2, keep_held,
					&calls, &del),
	      0, "another version goes");
	T_INT(spx_obj_delete_version_if(s, B(s, "lck"), "k", NULL, keep_held,
					&calls, &del),
	      SPX_OBJ_LOCKED,
	      "without a version the current one is asked about");
	T_INT(calls, 3, "asked once more");
	T_INT(spx_obj_stat(s, B(s, "lck"), "k", &m), 0,
	      "no marker was made then");
	T_STR(m.vid, v1, "v1 is still the current version");
	spx_obj_meta_release(&m);
	T_INT(spx_obj_delete_version_if(s, B(s, "lck"), "k", NULL, NULL, NULL,
					&del),
	      0, "without a condition a marker is made");
	T_INT(spx_obj_delete_version_if(s, B(s, "lck"), "k", NULL, keep_held,
					&calls, &del),
	      0, "a condition is asked about a current marker too");
	T_INT(calls, 4, "and it was");
	T_INT(spx_obj_update(s, B(s, "lck"), "k", NULL, add_hold, "x", NULL),
	      SPX_OBJ_NO_SUCH_KEY, "no change behind a delete marker");
	spx_obj_close(s);
}

int main(void)
{
	if (!mkdtemp(root))
		return 99;
	test_mkdirs();
	test_layout();
	test_ec();
	test_names();
	test_reserved();
	test_meta();
	test_objects();
	test_damage("rs21", 2, 1);
	test_damage("rs42", 4, 2);
	test_heal();
	test_writers();
	test_list();
	test_index();
	test_index_race();
	test_index_held();
	test_index_fold();
	test_index_fold_away();
	test_mpu();
	test_versions();
	test_version_race();
	test_mpu_race();
	test_incarnation();
	test_bucket_cache();
	test_meta_cache();
	test_list_recreated();
	test_meta_cache_race();
	test_flat();
	test_format();
	test_flat_race();
	test_flat_writers_race();
	test_drive0_replaced();
	test_put_delete_race();
	test_lock_hooks();
	test_condition();
	spx_rmtree(root);
	return t_done();
}
