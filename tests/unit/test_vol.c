/* lib/vol: the volume store's contract (vol.h) on a temporary directory:
 * create, list, info, resize, remove, ids and sizes refused, records
 * that are not volumes, and removals a crash cut short. */
#include "spx.h"

#include <sys/stat.h>

#include "file.h"
#include "t.h"
#include "vol/grant.h"
#include "vol/vol.h"

static char *tmp;

static char *at(const char *rel)
{
	return spx_xprintf("%s/%s", tmp, rel);
}

static void put(const char *rel, const char *text)
{
	char *p = at(rel);
	FILE *f = fopen(p, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	free(p);
}

static void test_lifecycle(struct spx_vol_store *vs)
{
	struct spx_vol_info a, b, c, *l;
	struct stat st;
	size_t n;
	char *data;

	T_INT(spx_vol_create(vs, 30ULL << 30, NULL, &a), 0, "create 30G");
	T_OK(spx_vol_id_valid(a.id), "new id '%s' is valid", a.id);
	T_INT(a.size, 30ULL << 30, "create: size");
	T_OK(a.created_ms > 1700000000000LL, "create: created_ms");
	data = spx_vol_data_path(vs, a.id);
	T_OK(stat(data, &st) == 0 && (uint64_t)st.st_size == a.size &&
		     st.st_blocks == 0,
	     "data is a sparse file of the size");
	T_OK((st.st_mode & 0777) == 0600, "data is the owner's alone");
	free(data);
	T_INT(spx_vol_info(vs, a.id, &b), 0, "info");
	T_OK(!strcmp(b.id, a.id) && b.size == a.size &&
		     b.created_ms == a.created_ms && b.allocated == 0,
	     "info: what create said");

	T_INT(spx_vol_create(vs, 512, "vol-00000000000000001", &c), 0,
	      "create with an id");
	T_INT(spx_vol_create(vs, 512, "vol-00000000000000001", NULL), -1,
	      "create an id that exists");
	T_INT(spx_errstatus(), SPX_NO, "exists: SPX_NO");

	T_INT(spx_vol_list(vs, &l, &n), 0, "list");
	T_INT(n, 2, "list: two");
	T_OK(n == 2 && !strcmp(l[0].id, "vol-00000000000000001") &&
		     !strcmp(l[1].id, a.id),
	     "list: sorted by id");
	free(l);

	T_INT(spx_vol_resize(vs, a.id, 40ULL << 30), 0, "grow");
	spx_vol_info(vs, a.id, &b);
	T_INT(b.size, 40ULL << 30, "grow: new size");
	T_INT(spx_vol_resize(vs, a.id, 1ULL << 30), -1, "shrink refused");
	T_INT(spx_errstatus(), SPX_USAGE, "shrink: SPX_USAGE");
	T_INT(spx_vol_resize(vs, a.id, (40ULL << 30) + 1), -1,
	      "grow to a part sector refused");
	spx_vol_info(vs, a.id, &b);
	T_INT(b.size, 40ULL << 30, "refusals changed nothing");
	T_INT(spx_vol_resize(vs, a.id, 40ULL << 30), 0, "same size: no-op");

	T_INT(spx_vol_remove(vs, a.id), 0, "remove");
	T_INT(spx_vol_info(vs, a.id, &b), -1, "removed: gone");
	T_INT(spx_errstatus(), SPX_NO, "removed: SPX_NO");
	T_INT(spx_vol_remove(vs, a.id), -1, "remove twice");
	T_INT(spx_errstatus(), SPX_NO, "remove twice: SPX_NO");
	T_INT(spx_vol_resize(vs, a.id, 1ULL << 40), -1, "resize the removed");
	T_INT(spx_errstatus(), SPX_NO, "resize the removed: SPX_NO");
}

static void test_refusals(struct spx_vol_store *vs)
{
	static const char *const ids[] = {
		"", "vol-", "vol-1", "vol-0123456789ABCDEF0", "snap-0123456789abcdef0",
		"vol-0123456789abcdef0/", "../vol-0123456789abcdef0",
		"vol-0123456789abcdef00", "vol-0123456789abcdef", ".", "..",
	};
	static const uint64_t sizes[] = {
		0, 1, 511, 513, 1000, SPX_VOL_SIZE_MAX + 512, UINT64_MAX,
	};
	struct spx_vol_info v;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(ids); i++) {
		T_OK(!spx_vol_id_valid(ids[i]), "id '%s' is not valid", ids[i]);
		T_INT(spx_vol_create(vs, 512, ids[i], NULL), -1,
		      "create '%s' refused", ids[i]);
		T_INT(spx_errstatus(), SPX_USAGE, "create '%s': SPX_USAGE",
		      ids[i]);
		T_INT(spx_vol_info(vs, ids[i], &v), -1, "info '%s' refused",
		      ids[i]);
		T_INT(spx_errstatus(), SPX_USAGE, "info '%s': SPX_USAGE", ids[i]);
		T_INT(spx_vol_remove(vs, ids[i]), -1, "remove '%s' refused",
		      ids[i]);
	}
	T_OK(!spx_vol_id_valid(NULL), "NULL is not an id");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(sizes); i++) {
		T_INT(spx_vol_create(vs, sizes[i], NULL, NULL), -1,
		      "size %llu refused", (unsigned long long)sizes[i]);
		T_INT(spx_errstatus(), SPX_USAGE, "size %llu: SPX_USAGE",
		      (unsigned long long)sizes[i]);
	}
	/* The largest passes the checks; the host file system may still
	 * refuse it (ext4 holds files to 16 TiB), and says so. */
	if (spx_vol_create(vs, SPX_VOL_SIZE_MAX, "vol-000000000000000ff",
			   &v) == 0) {
		T_OK(1, "the largest size");
		T_INT(spx_vol_remove(vs, v.id), 0, "remove the largest");
	} else {
		T_INT(spx_errstatus(), SPX_USAGE, "the largest: SPX_USAGE");
		T_OK(strstr(spx_errmsg(), "more than a file on the file system"),
		     "the largest: '%s'", spx_errmsg());
		T_OK(!spx_exists(tmp) || spx_vol_info(vs, "vol-000000000000000ff",
						      &v) < 0,
		     "the largest: nothing left");
	}
	T_INT(spx_vol_create(vs, 8ULL << 40, "vol-000000000000000fe", &v), 0,
	      "8 TiB, thin");
	T_INT(spx_vol_remove(vs, "vol-000000000000000fe"), 0, "remove 8 TiB");
}

/* What a crash or a hand leaves in the store: never a volume, never a
 * broken listing. */
static void test_leftovers(struct spx_vol_store *vs)
{
	static const char *const bad[] = {
		"{", "[]", "{\"id\":\"vol-00000000000000aaa\",\"size\":512}",
		"{\"id\":\"vol-00000000000000bbb\",\"size\":512,\"created_ms\":1}",
		"{\"id\":\"vol-00000000000000ccc\",\"size\":-512,\"created_ms\":1}",
		"{\"id\":\"vol-00000000000000ccc\",\"size\":\"512\",\"created_ms\":1}",
		"{\"id\":\"vol-00000000000000ccc\",\"size\":513,\"created_ms\":1}",
		"{\"id\":\"vol-00000000000000ccc\",\"size\":70368744178176,\"created_ms\":1}",
		"{\"id\":\"vol-00000000000000ccc\",\"size\":512,\"created_ms\":-1}",
		"{\"id\":\"vol-00000000000000ccc\",\"size\":512,\"size\":1024,\"created_ms\":1}",
		"{\"id\":\"vol-00000000000000ccc\",\"size\":512,\"created_ms\":1}junk",
	};
	struct spx_vol_info v, *l;
	char *p, *dead;
	size_t n;

	T_INT(spx_vol_create(vs, 4096, "vol-00000000000000002", &v), 0,
	      "a good volume");
	p = at("vol/vol-00000000000000ccc");
	mkdir(p, 0700);
	free(p);
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++) {
		put("vol/vol-00000000000000ccc/vol.json", bad[i]);
		T_INT(spx_vol_info(vs, "vol-00000000000000ccc", &v), -1,
		      "record %zu is refused", i);
		T_INT(spx_errstatus(), SPX_FAIL, "record %zu: SPX_FAIL", i);
		T_INT(spx_vol_list(vs, &l, &n), 0, "list with record %zu", i);
		T_OK(n == 2, "list skips record %zu (%zu listed)", i, n);
		free(l);
	}
	put("vol/vol-00000000000000ccc/vol.json",
	    "{\"id\":\"vol-00000000000000ccc\",\"size\":512,\"created_ms\":1}");
	T_INT(spx_vol_info(vs, "vol-00000000000000ccc", &v), -1,
	      "a record without its data file");
	/* A create cut short before vol.json: not a volume. */
	p = at("vol/vol-00000000000000ddd");
	mkdir(p, 0700);
	free(p);
	T_INT(spx_vol_info(vs, "vol-00000000000000ddd", &v), -1,
	      "no vol.json: no volume");
	T_INT(spx_errstatus(), SPX_NO, "no vol.json: SPX_NO");
	/* A remove cut short after its rename: gone, swept later. */
	p = at("vol/vol-00000000000000002");
	dead = at("vol/.del-vol-00000000000000002-0badf00d");
	T_OK(rename(p, dead) == 0, "a removal cut short");
	T_INT(spx_vol_info(vs, "vol-00000000000000002", &v), -1,
	      "renamed away: gone");
	T_INT(spx_vol_list(vs, &l, &n), 0, "list after the cut removal");
	T_INT(n, 1, "list: only the volume left");
	free(l);
	T_INT(spx_vol_store_sweep(vs), 0, "sweep");
	T_OK(!spx_exists(dead), "sweep freed the removed volume");
	free(p);
	free(dead);
}

/* The image probe of spx-vol import: qcow2 headers read bounded. */
/* A version 3 header's bytes 48 to 103, with its incompatible features
 * (16 hex digits) at 72. */
#define V3_TAIL(inc) "000000000000000000000000000000000000000000000000" inc "000000000000000000000000000000000000000000000000"

static void test_probe(void)
{
	static const struct {
		const char *name;
		const char *head; /* hex, at most 48 bytes */
		int rc, fmt;
		uint64_t vsize;
	} t[] = {
		{ "empty", "", 0, SPX_VOL_RAW, 0 },
		{ "raw", "00000000000000000000", 0, SPX_VOL_RAW, 0 },
		{ "three bytes of magic", "514649", 0, SPX_VOL_RAW, 0 },
		{ "torn", "514649fb00000003", -1, SPX_VOL_QCOW2, 0 },
		{ "v3, 1 MiB",
		  "514649fb000000030000000000000000000000000000001000000000001000"
		  "0000000000000000000000000000000000" V3_TAIL("0000000000000000"),
		  0, SPX_VOL_QCOW2, 1 << 20 },
		{ "v3 cut short of its 104 bytes",
		  "514649fb000000030000000000000000000000000000001000000000001000"
		  "0000000000000000000000000000000000",
		  -1, SPX_VOL_QCOW2, 0 },
		{ "v3, dirty, zstd and extended L2: read as they are",
		  "514649fb000000030000000000000000000000000000001000000000001000"
		  "0000000000000000000000000000000000" V3_TAIL("0000000000000019"),
		  0, SPX_VOL_QCOW2, 1 << 20 },
		{ "v3, an external data file",
		  "514649fb000000030000000000000000000000000000001000000000001000"
		  "0000000000000000000000000000000000" V3_TAIL("0000000000000004"),
		  -1, SPX_VOL_QCOW2, 0 },
		{ "v3, marked corrupt",
		  "514649fb000000030000000000000000000000000000001000000000001000"
		  "0000000000000000000000000000000000" V3_TAIL("0000000000000002"),
		  -1, SPX_VOL_QCOW2, 0 },
		{ "v3, an unknown incompatible feature",
		  "514649fb000000030000000000000000000000000000001000000000001000"
		  "0000000000000000000000000000000000" V3_TAIL("8000000000000000"),
		  -1, SPX_VOL_QCOW2, 0 },
		{ "v2, 2 GiB",
		  "514649fb000000020000000000000000000000000000001000000000800000"
		  "0000000000000000000000000000000000",
		  0, SPX_VOL_QCOW2, 2ULL << 30 },
		{ "v4",
		  "514649fb000000040000000000000000000000000000001000000000001000"
		  "0000000000000000000000000000000000" V3_TAIL("0000000000000000"),
		  -1, SPX_VOL_QCOW2, 0 },
		{ "a backing file",
		  "514649fb000000030000000000000200000000080000001000000000001000"
		  "0000000000000000000000000000000000" V3_TAIL("0000000000000000"),
		  -1, SPX_VOL_QCOW2, 0 },
		{ "encrypted",
		  "514649fb000000030000000000000000000000000000001000000000001000"
		  "0000000001000000000000000000000000" V3_TAIL("0000000000000000"),
		  -1, SPX_VOL_QCOW2, 0 },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		unsigned char b[128];
		size_t n = strlen(t[i].head) / 2;
		uint64_t vs = 0;
		int fmt = -1;

		for (size_t j = 0; j < n; j++)
			sscanf(t[i].head + 2 * j, "%2hhx", &b[j]);
		T_INT(spx_vol_image_probe(b, n, &fmt, &vs), t[i].rc, "probe %s",
		      t[i].name);
		T_INT(fmt, t[i].fmt, "probe %s: format", t[i].name);
		if (!t[i].rc)
			T_INT(vs, t[i].vsize, "probe %s: size", t[i].name);
	}
	T_INT(spx_vol_format_parse("raw"), SPX_VOL_RAW, "raw");
	T_INT(spx_vol_format_parse("qcow2"), SPX_VOL_QCOW2, "qcow2");
	T_INT(spx_vol_format_parse("QCOW2"), -1, "QCOW2");
	T_INT(spx_errstatus(), SPX_USAGE, "QCOW2: SPX_USAGE");
	T_INT(spx_vol_format_parse(""), -1, "''");
}

/* Grants (grant.h): the parser from a table, then write, read, drop and
 * purge on a directory. */
static void test_grants(void)
{
	static const struct {
		const char *in;
		uint32_t uid;	/* 0: refused */
		const char *guest;
	} t[] = {
		{ "2113929216 i-0123456789abcdef0\n", 2113929216u,
		  "i-0123456789abcdef0" },
		{ "1 g\n", 1, "g" },
		{ "4294967294 g\n", 4294967294u, "g" },
		{ "4294967295 g\n", 0, NULL },	/* (uid_t)-1 */
		{ "99999999999999999999 g\n", 0, NULL },
		{ "0 g\n", 0, NULL },
		{ "01 g\n", 0, NULL },
		{ "-1 g\n", 0, NULL },
		{ "1 g", 0, NULL },		/* no newline */
		{ "1 g\n\n", 0, NULL },	/* more after it */
		{ "1  g\n", 0, NULL },
		{ "1 -g\n", 0, NULL },
		{ "1 G\n", 0, NULL },
		{ "1 g/x\n", 0, NULL },
		{ "1 \n", 0, NULL },
		{ "1\n", 0, NULL },
		{ "", 0, NULL },
		{ "1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		  1, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
		{ "1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		  0, NULL },			/* 64 */
	};
	struct spx_vol_grant g, w = { .uid = 7, .guest = "g1" };
	char *dir = at("vol.sock.grants"), *sock = at("vol.sock");
	char *want = spx_xprintf("%s.grants", sock);
	const char *v1 = "vol-0123456789abcdef0", *v2 = "vol-0123456789abcdef1";

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		int rc = spx_vol_grant_parse(t[i].in, strlen(t[i].in), &g);

		T_INT(rc, t[i].uid ? 0 : -1, "grant parse %zu", i);
		T_INT(g.uid, t[i].uid, "grant parse %zu: uid", i);
		if (t[i].guest)
			T_STR(g.guest, t[i].guest, "grant parse %zu: guest", i);
		spx_error_clear();
	}
	{
		char *got = spx_vol_grants_dir(sock);

		T_STR(got, want, "the grants beside the socket");
		free(got);
	}
	T_INT(spx_vol_grant_read(dir, v1, &g), 0, "no grants dir: none");
	T_INT(spx_vol_grant_write(dir, v1, &w), 0, "grant written");
	T_INT(spx_vol_grant_read(dir, v1, &g), 1, "grant read");
	T_INT(g.uid, 7, "its uid");
	T_STR(g.guest, "g1", "its guest");
	T_INT(spx_vol_grant_read(dir, "../x", &g), -1, "not a volume id");
	w.uid = 0;
	T_INT(spx_vol_grant_write(dir, v2, &w), -1, "no grant to root");
	w.uid = 8;
	snprintf(w.guest, sizeof(w.guest), "g2");
	T_INT(spx_vol_grant_write(dir, v2, &w), 0, "a second grant");
	T_INT(spx_vol_grant_drop(dir, v1, "g2"), 0, "another guest's: kept");
	T_INT(spx_vol_grant_read(dir, v1, &g), 1, "kept");
	T_INT(spx_vol_grant_drop(dir, v1, "g1"), 0, "its guest's: dropped");
	T_INT(spx_vol_grant_read(dir, v1, &g), 0, "dropped");
	T_INT(spx_vol_grant_write(dir, v1, &w), 0, "v1 to g2 too");
	T_INT(spx_vol_grant_purge(dir, 9, "g1"), 0, "purge of others");
	T_INT(spx_vol_grant_read(dir, v2, &g), 1, "g2's stays");
	T_INT(spx_vol_grant_purge(dir, 8, NULL), 0, "purge of uid 8");
	T_INT(spx_vol_grant_read(dir, v1, &g) + spx_vol_grant_read(dir, v2, &g),
	      0, "uid 8's grants gone");
	put("vol.sock.grants/vol-0123456789abcdef2", "1 g\nmore");
	T_INT(spx_vol_grant_read(dir, "vol-0123456789abcdef2", &g), -1,
	      "a malformed grant");
	T_INT(spx_errstatus(), SPX_USAGE, "is SPX_USAGE");
	T_INT(spx_vol_grant_purge(dir, 0, "nobody"), 0, "purge clears it");
	T_INT(spx_vol_grant_read(dir, "vol-0123456789abcdef2", &g), 0,
	      "malformed: gone");
	spx_error_clear();
	free(dir);
	free(sock);
	free(want);
}

int main(void)
{
	char tpl[] = "/tmp/spx-test-vol.XXXXXX";
	struct spx_vol_store *vs;
	char *dir;

	tmp = mkdtemp(tpl);
	if (!tmp)
		return 2;
	dir = at("vol");
	T_INT(spx_vol_store_open(dir, 0, &vs), -1, "no store without CREATE");
	T_INT(spx_errstatus(), SPX_NO, "no store: SPX_NO");
	T_INT(spx_vol_store_open(dir, SPX_VOL_CREATE, &vs), 0, "open, creating");
	test_lifecycle(vs);
	test_refusals(vs);
	test_leftovers(vs);
	test_probe();
	test_grants();
	spx_vol_store_close(vs);
	free(dir);
	spx_rmtree(tmp);
	return t_done();
}
