/* lib/vol snapshots (snap.h, track.h) on a temporary object store and
 * volume store: the manifest format and its refusals, full and
 * incremental snapshots (what they read and store), dedup and zeros,
 * restore (eager and lazy) byte for byte, removal and collection, a
 * snapshot in the middle of writes (point in time), a snapshot killed
 * mid-upload, and the attacks: a manifest naming a chunk that is not
 * there, a chunk whose bytes are not its name, one with more blocks
 * lost than parity rebuilds, bad ids. */
#include "spx.h"

#include <glob.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "checksum.h"
#include "file.h"
#include "hex.h"
#include "t.h"
#include "vol/snap.h"

#define CH SPX_SNAP_CHUNK

static char *tmp;
static struct spx_obj *obj;
static struct spx_vol_store *vs;
static struct spx_snap_store *ss;

static char *at(const char *rel)
{
	return spx_xprintf("%s/%s", tmp, rel);
}

/* Chunk-sized patterns: byte i of chunk c of pattern p. */
static void pattern(unsigned char *b, size_t n, uint64_t c, unsigned p)
{
	uint32_t x = (uint32_t)(c * 2654435761u) ^ (p * 40503u) ^ 0x9e3779b9u;

	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		b[i] = (unsigned char)(x >> 24);
	}
}

/* Write len bytes at off as the plugin does: through the tracking. */
static int vwrite(const char *id, uint64_t off, const void *p, size_t len)
{
	struct spx_vol_info v;
	struct spx_vol_track *t;
	char *dir = spx_vol_dir(vs, id), *data = spx_vol_data_path(vs, id);
	int fd = open(data, O_RDWR), rc = -1;

	if (fd >= 0 && spx_vol_info(vs, id, &v) == 0 &&
	    spx_vol_track_open(dir, v.size, SPX_TRACK_CREATE, &t) == 0) {
		if (spx_vol_track_writer_lock(t) == 0 &&
		    spx_vol_track_write_begin(t, off, len) == 0) {
			rc = pwrite(fd, p, len, (off_t)off) == (ssize_t)len ? 0 : -1;
			spx_vol_track_write_end(t);
		}
		spx_vol_track_close(t);
	}
	if (fd >= 0)
		close(fd);
	free(dir);
	free(data);
	return rc;
}

/* Write chunk c of volume id with pattern p. */
static int wchunk(const char *id, uint64_t c, unsigned p)
{
	unsigned char *b = spx_malloc(CH);
	int rc;

	pattern(b, CH, c, p);
	rc = vwrite(id, c * CH, b, CH);
	free(b);
	return rc;
}

/* The bytes of a volume's data file, or NULL. */
static unsigned char *slurp(const char *id, uint64_t size)
{
	char *data = spx_vol_data_path(vs, id);
	unsigned char *b = spx_calloc(1, size);
	int fd = open(data, O_RDONLY);
	ssize_t n = fd >= 0 ? pread(fd, b, size, 0) : -1;

	if (fd >= 0)
		close(fd);
	free(data);
	if (n < 0) {
		free(b);
		return NULL;
	}
	return b;
}

/* ---- manifests ---- */

static void test_manifest(void)
{
	struct spx_snap_manifest m = { 0 }, d;
	struct spx_buf b = SPX_BUF_INIT, h = SPX_BUF_INIT;
	static const char *const bad[] = {
		"",
		"spx-snap 1 id=snap-0123456789abcdef0\n",
		"spx-snap 2 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\n",
		/* fields out of order */
		"spx-snap 1 volume=vol-0123456789abcdef0 id=snap-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\n",
		/* a leading zero, a double space, a trailing space */
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=01048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\n",
		"spx-snap 1 id=snap-0123456789abcdef0  volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\n",
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000 \n",
		/* ids: '..', the wrong prefix, the parent is itself */
		"spx-snap 1 id=snap-../../../etc volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\n",
		"spx-snap 1 id=vol-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\n",
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=snap-0123456789abcdef0 created_ms=1 count=0 crc32c=00000000\n",
		/* sizes: not sectors, too large, zero; another chunk size */
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1000 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\n",
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=70368744178176 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\n",
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=0 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\n",
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=4096 parent=- created_ms=1 count=0 crc32c=00000000\n",
		/* a huge chunk count: more than the volume has, and
		 * more than 64 bits */
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=3 crc32c=00000000\n",
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=18446744073709551616 crc32c=00000000\n",
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=1 crc32c=00000000\n",
		/* the crc: upper case, short */
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=0000000A\n",
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=0\n",
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000\nX",
		/* no newline */
		"spx-snap 1 id=snap-0123456789abcdef0 volume=vol-0123456789abcdef0 size=1048576 chunk=524288 parent=- created_ms=1 count=0 crc32c=00000000",
	};

	snprintf(m.id, sizeof(m.id), "snap-0123456789abcdef0");
	snprintf(m.volume, sizeof(m.volume), "vol-0123456789abcdef0");
	m.size = 3 * (uint64_t)CH - 512;
	m.chunk = CH;
	m.created_ms = 1700000000000;
	m.count = 2;
	m.v = spx_calloc(2, sizeof(*m.v));
	m.v[0].idx = 0;
	m.v[1].idx = 2;
	memset(m.v[0].hash, 0xab, SPX_SNAP_HASH);
	memset(m.v[1].hash, 0xcd, SPX_SNAP_HASH);
	spx_snap_manifest_encode(&m, &b);
	T_INT(spx_snap_manifest_parse(b.p, b.len, 0, &d), 0, "round trip");
	T_OK(!strcmp(d.id, m.id) && !strcmp(d.volume, m.volume) &&
		     !*d.parent && d.size == m.size && d.count == 2 &&
		     d.v[1].idx == 2 && d.v[1].hash[31] == 0xcd &&
		     d.created_ms == m.created_ms,
	     "round trip: the same manifest");
	T_OK(spx_snap_manifest_find(&d, 2) == &d.v[1] &&
		     !spx_snap_manifest_find(&d, 1),
	     "find");
	spx_snap_manifest_release(&d);
	T_INT(spx_snap_manifest_parse(b.p, 300, SPX_SNAP_HEADER, &d), 0,
	      "the header alone");
	T_OK(d.count == 2 && !d.v, "header: count, no entries");
	T_INT(spx_snap_manifest_parse(b.p, b.len - 1, 0, &d), -1, "torn");
	b.p[b.len - 1] ^= 1;
	T_INT(spx_snap_manifest_parse(b.p, b.len, 0, &d), -1, "a flipped bit");
	b.p[b.len - 1] ^= 1;
	/* Entries out of order, or beyond the volume, with a right CRC. */
	m.v[0].idx = 2;
	spx_buf_reset(&h);
	spx_snap_manifest_encode(&m, &h);
	T_INT(spx_snap_manifest_parse(h.p, h.len, 0, &d), -1, "idx twice");
	m.v[0].idx = 0;
	m.v[1].idx = 3;
	spx_buf_reset(&h);
	spx_snap_manifest_encode(&m, &h);
	T_INT(spx_snap_manifest_parse(h.p, h.len, 0, &d), -1,
	      "idx past the volume");
	snprintf(m.parent, sizeof(m.parent), "snap-00000000000000001");
	m.v[1].idx = 1;
	spx_buf_reset(&h);
	spx_snap_manifest_encode(&m, &h);
	T_INT(spx_snap_manifest_parse(h.p, h.len, 0, &d), 0, "with a parent");
	T_STR(d.parent, "snap-00000000000000001", "parent");
	spx_snap_manifest_release(&d);
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++) {
		T_INT(spx_snap_manifest_parse(bad[i], strlen(bad[i]), 0, &d), -1,
		      "refused: %.60s...", bad[i]);
		T_OK(!d.v && !d.count, "nothing kept");
	}
	T_INT(spx_snap_manifest_parse(bad[2] + 0, 0, 0, &d), -1, "empty input");
	/* A NUL inside a field (found by fuzz_snap_manifest). */
	{
		struct spx_buf z = SPX_BUF_INIT;
		char *v;

		spx_buf_add(&z, b.p, b.len);
		spx_buf_grow(&z, 2);
		v = strstr(z.p, "volume=vol-") + strlen("volume=vol-0123456789abcdef0");
		memmove(v + 2, v, z.len - (size_t)(v - z.p));
		spx_buf_setlen(&z, z.len + 2);
		v[0] = v[1] = 0;
		T_INT(spx_snap_manifest_parse(z.p, z.len, 0, &d), -1,
		      "a NUL after an id");
		spx_buf_release(&z);
	}
	spx_buf_release(&b);
	spx_buf_release(&h);
	spx_snap_manifest_release(&m);
}

/* ---- snapshots ---- */

static void test_snapshots(void)
{
	struct spx_vol_info v, r1, r2;
	struct spx_snap_report s1, s2, s3;
	struct spx_snap_opts full = { .full = true };
	struct spx_snap_restore_opts eager = { .eager = true };
	struct spx_snap_manifest *l;
	struct spx_snap_gc_report g;
	unsigned char *a, *b, *z = spx_calloc(1, CH);
	uint64_t size = 10 * (uint64_t)CH - 4096;
	size_t n;

	T_INT(spx_vol_create(vs, size, NULL, &v), 0, "a volume");
	/* Chunks 0-3 and 9 (short) with data, 5 and 6 the same bytes, 7
	 * written with zeros, 4 and 8 never. */
	for (uint64_t c = 0; c < 4; c++)
		wchunk(v.id, c, 1);
	{
		unsigned char *p = spx_malloc(CH);

		pattern(p, CH, 5, 1);
		vwrite(v.id, 5 * (uint64_t)CH, p, CH);
		vwrite(v.id, 6 * (uint64_t)CH, p, CH);
		pattern(p, CH - 4096, 9, 1);
		vwrite(v.id, 9 * (uint64_t)CH, p, CH - 4096);
		free(p);
	}
	vwrite(v.id, 7 * (uint64_t)CH, z, CH);
	a = slurp(v.id, size);
	T_INT(spx_snap_create(ss, v.id, NULL, &s1), 0, "snapshot (%s)",
	      spx_errmsg());
	T_OK(spx_snap_id_valid(s1.id), "its id '%s'", s1.id);
	T_OK(s1.incremental, "a new volume: only what was written is read");
	T_INT(s1.read, 8, "read the 8 chunks written");
	T_INT(s1.chunks, 7, "7 entries (the zeros are none)");
	T_INT(s1.uploaded, 6, "6 chunks stored (5 and 6 are one)");
	T_INT(s1.uploaded_bytes, 5 * (uint64_t)CH + CH - 4096, "their bytes");
	T_STR(s1.parent, "", "no parent");

	/* Overwrite two chunks, one with bytes the store has already. */
	wchunk(v.id, 1, 2);
	wchunk(v.id, 2, 1); /* as it was */
	T_INT(spx_snap_create(ss, v.id, NULL, &s2), 0, "second snapshot");
	T_STR(s2.parent, s1.id, "its parent is the first");
	T_OK(s2.incremental, "incremental");
	T_INT(s2.read, 2, "read only the 2 chunks written since");
	T_INT(s2.uploaded, 1, "stored only the one that changed");
	T_INT(s2.chunks, 7, "a whole manifest all the same");
	b = slurp(v.id, size);

	/* Nothing changed: nothing read, nothing stored. */
	T_INT(spx_snap_create(ss, v.id, NULL, &s3), 0, "third, no change");
	T_INT(s3.read, 0, "nothing read");
	T_INT(s3.uploaded, 0, "nothing stored");
	/* Full: everything with data is read, nothing new stored. */
	T_INT(spx_snap_create(ss, v.id, &full, &s3), 0, "full");
	T_OK(!s3.incremental, "full is not incremental");
	T_INT(s3.read, 8, "full reads every chunk with data");
	T_INT(s3.uploaded, 0, "and stores nothing new");

	/* Restore the first, byte for byte. */
	T_INT(spx_snap_restore(ss, s1.id, &eager, &r1), 0, "restore 1 (%s)",
	      spx_errmsg());
	{
		unsigned char *g1 = slurp(r1.id, size);

		T_OK(g1 && !memcmp(g1, a, size), "restore 1 is snapshot 1");
		free(g1);
	}
	{
		/* Thin still: what the restore allocates ahead of its writes
		 * is the chunks with data, not the holes between them (4, 7
		 * and 8). */
		char *p = spx_vol_data_path(vs, r1.id);
		struct stat sb;
		uint64_t want = 6 * (uint64_t)CH + CH - 4096;

		T_INT(stat(p, &sb), 0, "stat restore 1");
		T_OK((uint64_t)sb.st_blocks * 512 <= want + 65536,
		     "restore 1 allocates %llu bytes, its data %llu",
		     (unsigned long long)sb.st_blocks * 512,
		     (unsigned long long)want);
		free(p);
	}
	T_INT(spx_snap_restore(ss, s2.id, &eager, &r2), 0, "restore 2");
	{
		unsigned char *g2 = slurp(r2.id, size);

		T_OK(g2 && !memcmp(g2, b, size), "restore 2 is snapshot 2");
		free(g2);
	}
	/* Larger, never smaller. */
	{
		struct spx_snap_restore_opts big = { .size = 2 * size, .eager = true },
					     small = { .size = size - 512 };
		struct spx_vol_info r3;

		T_INT(spx_snap_restore(ss, s1.id, &big, &r3), 0, "larger");
		T_INT(r3.size, 2 * size, "its size");
		T_INT(spx_snap_restore(ss, s1.id, &small, &r3), -1, "smaller");
		T_INT(spx_errstatus(), SPX_USAGE, "smaller: SPX_USAGE");
		T_INT(spx_vol_remove(vs, r3.id), 0, "remove the larger");
	}

	/* Delete the middle one: the others stay restorable, after
	 * collection too. */
	T_INT(spx_snap_remove(ss, s2.id), 0, "remove the middle");
	T_INT(spx_snap_remove(ss, s2.id), -1, "twice");
	T_INT(spx_errstatus(), SPX_NO, "twice: SPX_NO");
	T_INT(spx_snap_gc(ss, false, &g), 0, "collect");
	T_INT(g.removed, 0, "chunk 1's new bytes are in the last snapshots");
	T_INT(spx_snap_list(ss, &l, &n), 0, "list");
	T_INT(n, 3, "three left");
	free(l);
	spx_vol_remove(vs, r1.id);
	T_INT(spx_snap_restore(ss, s1.id, &eager, &r1), 0, "1 after collect");
	{
		unsigned char *g1 = slurp(r1.id, size);

		T_OK(g1 && !memcmp(g1, a, size), "still snapshot 1");
		free(g1);
	}
	/* Remove all but the first: the new bytes of chunk 1 go. */
	T_INT(spx_snap_list(ss, &l, &n), 0, "list");
	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i].id, s1.id))
			spx_snap_remove(ss, l[i].id);
	free(l);
	T_INT(spx_snap_gc(ss, true, &g), 0, "collect");
	T_INT(g.removed, 1, "one chunk no snapshot names");
	T_INT(g.referenced, 6, "six named");
	/* While a snapshot is being taken (the lock shared), collection
	 * waits or says so. */
	{
		char *lk = at("vol/.snap.lock");
		int fd = open(lk, O_RDWR);

		flock(fd, LOCK_SH);
		T_INT(spx_snap_gc(ss, false, &g), -1, "busy");
		T_INT(spx_errstatus(), SPX_NO, "busy: SPX_NO");
		close(fd);
		free(lk);
	}
	spx_vol_remove(vs, r1.id);
	spx_vol_remove(vs, r2.id);
	spx_vol_remove(vs, v.id);
	spx_snap_remove(ss, s1.id);
	T_INT(spx_snap_gc(ss, true, &g), 0, "collect all");
	T_INT(g.referenced, 0, "nothing named");
	T_INT(g.chunks, g.removed, "every chunk removed");
	free(a);
	free(b);
	free(z);
}

/* While window_id is set, a run's fill (spx_snap_fill_fetch) meets chunk
 * 1 of that volume filled, then written by a guest (pattern 9), between
 * its fetches and its locks. */
static const char *window_id;
static int window_calls;

void spx_snap_fill_window(struct spx_snap_fill *f, uint64_t c, unsigned n)
{
	unsigned char *b;

	if (!window_id)
		return;
	window_calls++;
	b = spx_malloc(CH);
	if (spx_snap_fill_chunk(f, 1, b, NULL) < 0 ||
	    wchunk(window_id, 1, 9) < 0)
		window_calls = -100; /* fails the count */
	free(b);
}

/* A lazy restore: chunks come on demand, and snapshots of the volume
 * meanwhile are right. */
static void test_lazy(void)
{
	struct spx_vol_info v, r;
	struct spx_snap_report s1, s2;
	struct spx_snap_fill f;
	struct spx_vol_track *t;
	struct spx_vol_snapstate st;
	struct spx_snap_gc_report g;
	uint64_t size = 6 * (uint64_t)CH;
	unsigned char *a, *buf = spx_malloc(SPX_SNAP_FILL_RUN * CH);
	char *dir, *data;
	int fd;

	spx_vol_create(vs, size, NULL, &v);
	for (uint64_t c = 0; c < 6; c++)
		wchunk(v.id, c, 7);
	a = slurp(v.id, size);
	T_INT(spx_snap_create(ss, v.id, NULL, &s1), 0, "snapshot");
	T_INT(spx_snap_restore(ss, s1.id, NULL, &r), 0, "lazy restore");
	dir = spx_vol_dir(vs, r.id);
	data = spx_vol_data_path(vs, r.id);
	spx_vol_snapstate_read(dir, &st);
	T_STR(st.source, s1.id, "restoring from the snapshot");
	T_STR(st.base, s1.id, "counting from it");
	spx_vol_track_open(dir, size, 0, &t);
	T_INT(spx_vol_track_count(t, SPX_TRACK_UNFILLED), 6, "6 chunks to fetch");
	/* The source is a root: deleting the snapshot and collecting leaves
	 * its chunks. */
	T_INT(spx_snap_remove(ss, s1.id), 0, "delete the snapshot");
	T_INT(spx_snap_gc(ss, false, &g), 0, "collect");
	T_INT(g.removed, 0, "the restoring volume's chunks stay");
	/* So they do when its record is damaged (a listing leaves such a
	 * volume out). */
	{
		char *rec = spx_xprintf("%s/vol.json", dir), keep[512];
		size_t kn = 0;

		T_INT(spx_read_small(rec, keep, sizeof(keep), &kn), 1,
		      "its record read");
		spx_write_file(rec, "{", 1, 0644, false);
		T_INT(spx_snap_gc(ss, false, &g), 0, "collect");
		T_INT(g.removed, 0,
		      "a restoring volume's chunks stay, its record damaged");
		spx_write_file(rec, keep, kn, 0644, false);
		free(rec);
	}
	fd = open(data, O_RDWR);
	T_INT(spx_snap_fill_open(ss, t, fd, &f), 0, "fill");
	T_INT(spx_snap_fill_chunk(&f, 2, buf, NULL), 0, "fetch chunk 2");
	T_INT(spx_vol_track_count(t, SPX_TRACK_UNFILLED), 5, "5 left");
	{
		/* In two steps, a fetch at a time: written, not yet local. */
		sem_t one;
		unsigned wrote = 0;
		int turns = -1;
		unsigned char *got = NULL;

		sem_init(&one, 0, 1);
		T_INT(spx_snap_fill_fetch(&f, 3, 1, buf, &one, NULL, &wrote),
		      0, "fetch chunk 3");
		T_INT(wrote, 1, "chunk 3 written");
		sem_getvalue(&one, &turns);
		T_INT(turns, 1, "the fetch gave its turn back");
		T_INT(spx_vol_track_count(t, SPX_TRACK_UNFILLED), 5,
		      "chunk 3 awaits its commit");
		T_INT(spx_snap_fill_commit(&f, (const uint64_t[]){ 3 }, 1), 0,
		      "commit chunk 3");
		T_INT(spx_vol_track_count(t, SPX_TRACK_UNFILLED), 4, "4 left");
		T_INT(spx_snap_fill_fetch(&f, 2, 1, buf, &one, NULL, &wrote),
		      0, "chunk 2 again");
		T_INT(wrote, 0, "local already: not written again");
		/* A run of four, chunk 1 filled and then written by a guest
		 * between the fetches and the locks: only chunk 0 is
		 * written, in place of its hole. */
		window_id = r.id;
		T_INT(spx_snap_fill_fetch(&f, 0, SPX_SNAP_FILL_RUN, buf, &one,
					  NULL, &wrote),
		      0, "fetch chunks 0 to 3 at once");
		window_id = NULL;
		T_INT(wrote, 1, "chunk 0 written; 1 filled meanwhile, 2 and "
				"3 local already");
		T_INT(window_calls, 1, "(the window was taken)");
		got = slurp(r.id, 2 * CH);
		T_OK(got && !memcmp(got, a, CH),
		     "chunk 0 holds the snapshot's bytes");
		pattern(a + CH, CH, 1, 9);
		T_OK(got && !memcmp(got + CH, a + CH, CH),
		     "chunk 1 holds the guest's, not the snapshot's");
		T_INT(spx_snap_fill_commit(&f, (const uint64_t[]){ 0 }, 1), 0,
		      "commit chunk 0");
		T_INT(spx_vol_track_count(t, SPX_TRACK_UNFILLED), 2, "2 left");
		T_INT(spx_snap_fill_fetch(&f, 0, 0, buf, &one, NULL, &wrote),
		      -1, "a run of none is refused");
		T_INT(spx_snap_fill_fetch(&f, 0, SPX_SNAP_FILL_RUN + 1, buf,
					  &one, NULL, &wrote),
		      -1, "so is one longer than a buffer's");
		sem_getvalue(&one, &turns);
		T_INT(turns, 1, "every fetch gave its turn back");
		sem_destroy(&one);
		free(got);
	}
	/* A write to chunk 4, after fetching it, as the plugin does. */
	T_INT(spx_snap_fill_chunk(&f, 4, buf, NULL), 0, "fetch chunk 4");
	spx_snap_fill_release(&f);
	wchunk(r.id, 4, 8);
	pattern(a + 4 * CH, CH, 4, 8);
	/* A snapshot of the half-fetched volume: only chunks 1 and 4 (the
	 * guest's) read, the rest the source's. */
	T_INT(spx_snap_create(ss, r.id, NULL, &s2), 0, "snapshot while "
						       "restoring (%s)",
	      spx_errmsg());
	T_OK(s2.incremental && s2.read == 2 && s2.chunks == 6,
	     "read 2, 6 entries (read %llu, %llu entries)",
	     (unsigned long long)s2.read, (unsigned long long)s2.chunks);
	T_STR(s2.parent, s1.id, "it counts from the source, deleted but held");
	T_INT(spx_snap_fill_open(ss, t, fd, &f), 0, "fill again");
	for (uint64_t c = 0; c < 6; c++)
		spx_snap_fill_chunk(&f, c, buf, NULL);
	T_INT(spx_snap_fill_finish(&f), 1, "complete");
	spx_snap_fill_release(&f);
	spx_vol_snapstate_read(dir, &st);
	T_STR(st.source, "", "no source any more");
	{
		char *src = spx_path_join(dir, "source");

		T_OK(!spx_exists(src), "nor its manifest");
		free(src);
	}
	{
		unsigned char *g1 = slurp(r.id, size);

		T_OK(g1 && !memcmp(g1, a, size), "the volume is the snapshot "
						 "plus the write");
		free(g1);
	}
	T_INT(spx_snap_fill_open(ss, t, fd, &f), -1, "not restoring now");
	T_INT(spx_errstatus(), SPX_NO, "SPX_NO");
	close(fd);
	spx_vol_track_close(t);
	{
		struct spx_vol_info r2;
		struct spx_snap_restore_opts eager = { .eager = true };
		unsigned char *g2;

		T_INT(spx_snap_restore(ss, s2.id, &eager, &r2), 0,
		      "restore the snapshot taken while restoring");
		g2 = slurp(r2.id, size);
		T_OK(g2 && !memcmp(g2, a, size), "it is right");
		free(g2);
		spx_vol_remove(vs, r2.id);
	}
	spx_snap_remove(ss, s2.id);
	spx_vol_remove(vs, r.id);
	spx_vol_remove(vs, v.id);
	spx_snap_gc(ss, true, &g);
	free(dir);
	free(data);
	free(a);
	free(buf);
}

/* Writes during a snapshot: it is of the volume when it began. */
static int during_n;
static void during(void *ctx, uint64_t done, uint64_t total)
{
	const char *id = ctx;

	if (during_n++)
		return;
	for (uint64_t c = 0; c < 40; c++)
		wchunk(id, c, 9);
}

static void test_point_in_time(void)
{
	struct spx_vol_info v, r;
	struct spx_snap_report s1, s2;
	struct spx_snap_opts o = { .progress = during };
	struct spx_snap_restore_opts eager = { .eager = true };
	uint64_t size = 40 * (uint64_t)CH;
	unsigned char *a, *b, *g;

	spx_vol_create(vs, size, NULL, &v);
	for (uint64_t c = 0; c < 40; c++)
		wchunk(v.id, c, 3);
	a = slurp(v.id, size);
	o.ctx = v.id;
	T_INT(spx_snap_create(ss, v.id, &o, &s1), 0, "snapshot under writes");
	T_INT(during_n > 0, 1, "the writes ran in the middle of it");
	b = slurp(v.id, size);
	T_OK(memcmp(a, b, size), "the volume changed meanwhile");
	T_INT(spx_snap_restore(ss, s1.id, &eager, &r), 0, "restore it");
	g = slurp(r.id, size);
	T_OK(g && !memcmp(g, a, size), "it is the volume as the snapshot began");
	free(g);
	spx_vol_remove(vs, r.id);
	/* The writes made during it are the next one's. */
	T_INT(spx_snap_create(ss, v.id, NULL, &s2), 0, "the next snapshot");
	T_INT(s2.read, 40, "reads the 40 chunks written during the first");
	T_INT(spx_snap_restore(ss, s2.id, &eager, &r), 0, "restore it");
	g = slurp(r.id, size);
	T_OK(g && !memcmp(g, b, size), "it has them");
	free(g);
	spx_vol_remove(vs, r.id);
	spx_vol_remove(vs, v.id);
	spx_snap_remove(ss, s1.id);
	spx_snap_remove(ss, s2.id);
	free(a);
	free(b);
}

/* A set of snapshots is one moment. A writer puts k at the start of
 * volume A, then (A's write done) k at the start of B, k = 1, 2, ...: in
 * any moment A holds k and B k or k - 1. Taken one after the other, B
 * would hold a later k than A. The writer is another process, as nbdkit
 * is (valgrind would hold a thread's blocking OFD lock against it). */
struct seq_writer {
	const char *a, *b;
	bool stop;	/* both in shared memory, with __atomic */
	uint64_t k;
};

static uint64_t seq_k(struct seq_writer *w)
{
	return __atomic_load_n(&w->k, __ATOMIC_SEQ_CST);
}

static bool seq_stopped(struct seq_writer *w)
{
	return __atomic_load_n(&w->stop, __ATOMIC_SEQ_CST);
}

static pid_t seq_start(struct seq_writer *w)
{
	pid_t pid;

	__atomic_store_n(&w->stop, false, __ATOMIC_SEQ_CST);
	pid = fork();
	if (pid)
		return pid;
	while (!seq_stopped(w)) {
		uint64_t k = seq_k(w) + 1;

		if (vwrite(w->a, 0, &k, sizeof(k)) < 0 ||
		    vwrite(w->b, 0, &k, sizeof(k)) < 0)
			_exit(1);
		__atomic_store_n(&w->k, k, __ATOMIC_SEQ_CST);
	}
	_exit(0);
}

static int seq_stop(struct seq_writer *w, pid_t pid)
{
	int ws = 0;

	__atomic_store_n(&w->stop, true, __ATOMIC_SEQ_CST);
	if (pid > 0)
		waitpid(pid, &ws, 0);
	return pid > 0 && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static uint64_t first_word(const char *snap, uint64_t size)
{
	struct spx_snap_restore_opts eager = { .eager = true };
	struct spx_vol_info r;
	uint64_t k = 0;
	unsigned char *g;

	if (spx_snap_restore(ss, snap, &eager, &r) < 0)
		return UINT64_MAX;
	g = slurp(r.id, size);
	if (g)
		memcpy(&k, g, sizeof(k));
	free(g);
	spx_vol_remove(vs, r.id);
	return k;
}

/* Progress of the set: the writer runs on while the set uploads. */
static void set_prog(void *ctx, uint64_t done, uint64_t total)
{
	struct seq_writer *w = ctx;
	uint64_t k0 = seq_k(w);

	while (seq_k(w) < k0 + 3 && !seq_stopped(w))
		usleep(1000);
}

static void test_set(void)
{
	uint64_t size = 8 * (uint64_t)CH;
	struct spx_vol_info va, vb, vc;
	struct spx_snap_report r[3], again[3];
	struct seq_writer *wp = mmap(NULL, sizeof(*wp), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct seq_writer w0 = { 0 };
	struct spx_snap_opts o = { .progress = set_prog };
	const char *vols[3], *ids[3] = { "snap-5e70000000000000a",
					 "snap-5e70000000000000b",
					 "snap-5e70000000000000c" };
	uint64_t ka, kb;
	pid_t pid;
	int bad = 0;

	spx_vol_create(vs, size, NULL, &va);
	spx_vol_create(vs, size, NULL, &vb);
	spx_vol_create(vs, size, NULL, &vc);
	for (uint64_t c = 1; c < 8; c++) {
		wchunk(va.id, c, 1);
		wchunk(vb.id, c, 2);
	}
	/* B first in the call: the set is taken in the volumes' order and
	 * reported in the caller's. */
	vols[0] = vb.id;
	vols[1] = va.id;
	if (wp == MAP_FAILED)
		wp = &w0; /* the test fails below: nothing written */
	wp->a = va.id;
	wp->b = vb.id;
	o.ctx = wp;
	for (int round = 0; round < 5 && wp != &w0; round++) {
		struct spx_snap_report rr[2];

		pid = seq_start(wp);
		while (pid > 0 && seq_k(wp) < 20 * (uint64_t)(round + 1))
			usleep(1000);
		T_INT(spx_snap_create_set(ss, vols, NULL, 2, &o, rr), 0,
		      "round %d: a set of two under writes", round);
		T_INT(seq_stop(wp, pid), 0, "round %d: the writer wrote",
		      round);
		T_STR(rr[0].volume, vb.id, "round %d: reported in the "
					   "caller's order", round);
		kb = first_word(rr[0].id, size);
		ka = first_word(rr[1].id, size);
		if (!(ka == kb || ka == kb + 1)) {
			printf("#   round %d: A holds %llu, B %llu\n", round,
			       (unsigned long long)ka, (unsigned long long)kb);
			bad++;
		}
		spx_snap_remove(ss, rr[0].id);
		spx_snap_remove(ss, rr[1].id);
	}
	T_INT(bad, 0, "every set is one moment of both volumes");
	T_OK(seq_k(wp) > 100, "the writer wrote on meanwhile (%llu)",
	     (unsigned long long)seq_k(wp));
	if (wp != &w0)
		munmap(wp, sizeof(*wp));

	/* With ids: a retried step finds the set stored. */
	vols[0] = va.id;
	vols[1] = vb.id;
	vols[2] = vc.id;
	T_INT(spx_snap_create_set(ss, vols, ids, 3, NULL, r), 0, "with ids");
	T_STR(r[2].id, ids[2], "named as asked");
	T_INT(spx_snap_create_set(ss, vols, ids, 3, NULL, again), 0,
	      "again");
	T_OK(again[0].existed && again[1].existed && again[2].existed,
	     "stored already: done");
	/* Cut short: one of the three lost; the set is taken again. */
	wchunk(va.id, 3, 7);
	spx_snap_remove(ss, ids[1]);
	T_INT(spx_snap_create_set(ss, vols, ids, 3, NULL, again), 0,
	      "a set stored in part");
	T_OK(!again[0].existed && !again[1].existed && !again[2].existed,
	     "is taken again, all of it");
	T_OK(again[0].created_ms == again[1].created_ms &&
		     again[1].created_ms == again[2].created_ms,
	     "at one moment: one start time");
	{
		struct spx_snap_restore_opts eager = { .eager = true };
		struct spx_vol_info rv;
		unsigned char *g, *want = slurp(va.id, size);

		T_INT(spx_snap_restore(ss, ids[0], &eager, &rv), 0,
		      "restore A's");
		g = slurp(rv.id, size);
		T_OK(g && want && !memcmp(g, want, size),
		     "it has the write made after the first set");
		free(g);
		free(want);
		spx_vol_remove(vs, rv.id);
	}

	/* Refused. */
	vols[1] = va.id;
	T_INT(spx_snap_create_set(ss, vols, NULL, 2, NULL, r), -1,
	      "a volume twice");
	T_INT(spx_errstatus(), SPX_USAGE, "SPX_USAGE");
	vols[1] = vb.id;
	ids[1] = ids[0];
	T_INT(spx_snap_create_set(ss, vols, ids, 2, NULL, r), -1,
	      "an id twice");
	T_INT(spx_snap_create_set(ss, vols, NULL, 0, NULL, r), -1,
	      "no volume");
	vols[1] = "vol-00000000000000000";
	T_INT(spx_snap_create_set(ss, vols, NULL, 2, NULL, r), -1,
	      "an unknown volume");
	T_INT(spx_errstatus(), SPX_NO, "SPX_NO");
	spx_error_clear();
	spx_snap_remove(ss, "snap-5e70000000000000a");
	spx_snap_remove(ss, "snap-5e70000000000000b");
	spx_snap_remove(ss, "snap-5e70000000000000c");
	spx_vol_remove(vs, va.id);
	spx_vol_remove(vs, vb.id);
	spx_vol_remove(vs, vc.id);
}

/* The volume grows while a snapshot runs, and the new chunk, in the
 * same word of the bitmap as the last old ones, is written: the next
 * snapshot has it. */
static int grow_n;
static void grow(void *ctx, uint64_t done, uint64_t total)
{
	const char *id = ctx;

	if (grow_n++)
		return;
	spx_vol_resize(vs, id, 41 * (uint64_t)CH);
	wchunk(id, 40, 6);
}

static void test_grow(void)
{
	struct spx_vol_info v, r;
	struct spx_snap_report s1, s2;
	struct spx_snap_opts o = { .progress = grow };
	struct spx_snap_restore_opts eager = { .eager = true };
	unsigned char *a, *g;

	spx_vol_create(vs, 40 * (uint64_t)CH, NULL, &v);
	for (uint64_t c = 0; c < 40; c++)
		wchunk(v.id, c, 2);
	o.ctx = v.id;
	T_INT(spx_snap_create(ss, v.id, &o, &s1), 0, "snapshot while it grows");
	T_INT(s1.size, 40 * (uint64_t)CH, "of the old size");
	T_INT(spx_snap_create(ss, v.id, NULL, &s2), 0, "the next");
	T_INT(s2.size, 41 * (uint64_t)CH, "of the new size");
	T_INT(s2.read, 1, "reads the chunk written past the old end");
	a = slurp(v.id, 41 * (uint64_t)CH);
	T_INT(spx_snap_restore(ss, s2.id, &eager, &r), 0, "restore it");
	g = slurp(r.id, 41 * (uint64_t)CH);
	T_OK(a && g && !memcmp(a, g, 41 * (uint64_t)CH), "it has it");
	free(a);
	free(g);
	spx_vol_remove(vs, r.id);
	spx_vol_remove(vs, v.id);
	spx_snap_remove(ss, s1.id);
	spx_snap_remove(ss, s2.id);
}

/* The same at the level of the map: a snapshot that knows the volume at
 * 40 chunks never takes (and forgets) the DIRTY bit of chunk 40, written
 * after the volume grew, though it shares their word. */
static int pick_changed(void *ctx, struct spx_vol_track *t,
			const uint64_t *changed, uint64_t *capture,
			uint64_t nchunks)
{
	memcpy(capture, changed, (nchunks + 63) / 64 * sizeof(uint64_t));
	return 0;
}

/* A track file found damaged is made again in place: a process that has
 * it mapped (the plugin, while a tool opens it) reads zeros, and the next
 * snapshot reads the whole volume. (That the file is never cut short on
 * the way, which another process's map would meet as SIGBUS, this does
 * not see: it was cut and grown again within one call.) */
static void test_track_reset(void)
{
	struct spx_vol_info v;
	struct spx_vol_track *t1, *t2 = NULL;
	struct spx_vol_snapstate st;
	char *dir, *p;
	int fd;

	spx_vol_create(vs, 40 * (uint64_t)CH, NULL, &v);
	dir = spx_vol_dir(vs, v.id);
	p = spx_xprintf("%s/track", dir);
	T_INT(spx_vol_track_open(dir, 40 * (uint64_t)CH, SPX_TRACK_CREATE, &t1),
	      0, "a track, mapped");
	spx_vol_track_writer_lock(t1);
	spx_vol_track_write_begin(t1, 39 * (uint64_t)CH, 1);
	spx_vol_track_write_end(t1);
	T_OK(spx_vol_track_test(t1, SPX_TRACK_DIRTY, 39), "chunk 39 dirty");
	fd = open(p, O_WRONLY);
	T_INT((int)pwrite(fd, "garbage!", 8, 0), 8, "its magic damaged");
	close(fd);
	T_INT(spx_vol_track_open(dir, 40 * (uint64_t)CH, 0, &t2), 0,
	      "opened again: made again");
	/* The first mapping is still inside the file. */
	T_OK(!spx_vol_track_test(t1, SPX_TRACK_DIRTY, 39),
	     "the mapped one reads the reset");
	T_OK(spx_vol_snapstate_read(dir, &st) == 0 && !st.valid,
	     "the next snapshot reads the whole volume");
	spx_vol_track_close(t2);
	spx_vol_track_writer_unlock(t1);
	spx_vol_track_close(t1);
	spx_vol_remove(vs, v.id);
	free(p);
	free(dir);
}

static void test_grow_map(void)
{
	struct spx_vol_info v;
	struct spx_vol_track *ts, *tw;
	unsigned char *b = spx_malloc(CH);
	char *dir;

	spx_vol_create(vs, 40 * (uint64_t)CH, NULL, &v);
	dir = spx_vol_dir(vs, v.id);
	T_INT(spx_vol_track_open(dir, 40 * (uint64_t)CH, 0, &ts), 0,
	      "the snapshot's view: 40 chunks");
	spx_vol_resize(vs, v.id, 41 * (uint64_t)CH);
	T_INT(spx_vol_track_open(dir, 41 * (uint64_t)CH, 0, &tw), 0,
	      "the writer's: 41");
	spx_vol_track_writer_lock(tw);
	spx_vol_track_write_begin(tw, 39 * (uint64_t)CH, 2 * (uint64_t)CH);
	spx_vol_track_write_end(tw);
	T_OK(spx_vol_track_test(tw, SPX_TRACK_DIRTY, 40), "chunk 40 is dirty");
	T_INT(spx_vol_track_session_begin(ts, pick_changed, NULL), 0, "session");
	T_OK(!spx_vol_track_test(tw, SPX_TRACK_DIRTY, 39) &&
		     spx_vol_track_test(tw, SPX_TRACK_TAKEN, 39),
	     "chunk 39 taken");
	T_OK(spx_vol_track_test(tw, SPX_TRACK_DIRTY, 40) &&
		     !spx_vol_track_test(tw, SPX_TRACK_TAKEN, 40),
	     "chunk 40 left dirty");
	T_INT(spx_vol_track_capture(ts, 39, b, CH), 0, "capture 39");
	spx_vol_track_session_end(ts, true);
	T_OK(spx_vol_track_test(tw, SPX_TRACK_DIRTY, 40),
	     "chunk 40 still dirty after the commit");
	T_OK(!spx_vol_track_test(tw, SPX_TRACK_TAKEN, 39), "39 no longer taken");
	spx_vol_track_close(ts);
	spx_vol_track_close(tw);
	spx_vol_remove(vs, v.id);
	free(dir);
	free(b);
}

/* kill -9 in the middle of uploading, then again: right, and the chunks
 * of the dead one are collected, never the ones a snapshot names. */
/* The child says it is midway, and waits for the parent's kill -9 (a
 * kill from outside, as in life: valgrind would run its leak check
 * first for a SIGKILL a process sends itself, scanning its whole map). */
static int die_fd = -1;
static void die(void *ctx, uint64_t done, uint64_t total)
{
	if (done >= 16) {
		if (write(die_fd, "k", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
}

static void test_killed(void)
{
	struct spx_vol_info v, r;
	struct spx_snap_report s1, s2;
	struct spx_snap_restore_opts eager = { .eager = true };
	struct spx_vol_snapstate st;
	struct spx_snap_gc_report g;
	struct spx_snap_manifest *l;
	uint64_t size = 40 * (uint64_t)CH;
	unsigned char *a, *back;
	char *dir;
	size_t n;
	pid_t pid;
	int status;

	spx_vol_create(vs, size, NULL, &v);
	dir = spx_vol_dir(vs, v.id);
	for (uint64_t c = 0; c < 40; c++)
		wchunk(v.id, c, 4);
	T_INT(spx_snap_create(ss, v.id, NULL, &s1), 0, "a first snapshot");
	for (uint64_t c = 0; c < 40; c++)
		wchunk(v.id, c, 5);
	a = slurp(v.id, size);
	fflush(stdout);
	{
		int p[2];
		char k;

		if (pipe(p) < 0)
			abort();
		pid = fork();
		if (pid == 0) {
			struct spx_snap_opts o = { .progress = die };

			close(p[0]);
			die_fd = p[1];
			spx_snap_create(ss, v.id, &o, NULL);
			_exit(0);
		}
		close(p[1]);
		if (read(p[0], &k, 1) == 1)
			kill(pid, SIGKILL);
		close(p[0]);
	}
	waitpid(pid, &status, 0);
	T_OK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	     "killed mid-upload");
	spx_vol_snapstate_read(dir, &st);
	T_STR(st.base, s1.id, "the base is still the first");
	T_INT(spx_snap_list(ss, &l, &n), 0, "list");
	T_INT(n, 1, "no second snapshot");
	free(l);
	T_INT(spx_snap_gc(ss, false, &g), 0, "collect after the kill");
	T_OK(g.removed >= 16, "the dead one's chunks go (%llu)",
	     (unsigned long long)g.removed);
	T_INT(spx_snap_create(ss, v.id, NULL, &s2), 0, "again");
	T_OK(s2.incremental && s2.read == 40,
	     "reads the 40 chunks the dead one had taken (%llu)",
	     (unsigned long long)s2.read);
	T_INT(s2.uploaded, 40, "and stores them");
	T_INT(spx_snap_gc(ss, false, &g), 0, "collect");
	T_INT(g.removed, 0, "nothing named is removed");
	T_INT(spx_snap_restore(ss, s2.id, &eager, &r), 0, "restore");
	back = slurp(r.id, size);
	T_OK(back && !memcmp(back, a, size), "right");
	free(back);
	spx_vol_remove(vs, r.id);
	T_INT(spx_snap_restore(ss, s1.id, &eager, &r), 0, "restore the first");
	spx_vol_remove(vs, r.id);
	/* A volume whose tracking is lost reads everything. */
	{
		char *p = spx_path_join(dir, "snap.json");

		unlink(p);
		free(p);
		T_INT(spx_snap_create(ss, v.id, NULL, &s2), 0, "no snap.json");
		T_OK(!s2.incremental && s2.read == 40 && s2.uploaded == 0,
		     "reads all, stores nothing new");
		spx_snap_remove(ss, s2.id);
	}
	spx_snap_remove(ss, s1.id);
	spx_vol_remove(vs, v.id);
	spx_snap_gc(ss, true, &g);
	free(dir);
	free(a);
}

/* A hand in the store: a chunk that is not its name, a manifest naming
 * one that is not there, a manifest of another id, bad ids. */
static void put_object(const char *key, const void *p, size_t n)
{
	struct spx_obj_bucket b;
	struct spx_obj_writer *w;

	spx_obj_bucket_open(obj, SPX_SNAP_BUCKET, &b);
	spx_obj_writer_begin(obj, &b, key, NULL, &w);
	spx_obj_writer_write(w, p, n);
	spx_obj_writer_commit(w, NULL, NULL);
}

/* Every shard file of key's object on drives [from, to): a byte flipped
 * (its block fails its CRC), removed, or put in place of a directory of
 * its name, whose reads fail with an errno (EISDIR) as a disk's EIO
 * would. */
enum { SHARD_FLIP, SHARD_REMOVE, SHARD_UNREADABLE };
static void break_shards(const char *key, int from, int to, int how)
{
	char enc[256];

	spx_obj_key_encode(key, enc, sizeof(enc));
	for (int i = from; i < to; i++) {
		char *pat = spx_xprintf("%s/d%d/b/%s/o/%s/d-*/*", tmp, i,
					SPX_SNAP_BUCKET, enc);
		glob_t g;

		T_INT(glob(pat, 0, NULL, &g), 0, "shard files of '%s'", pat);
		for (size_t j = 0; j < g.gl_pathc; j++) {
			const char *f = g.gl_pathv[j];
			int fd;
			unsigned char c = 0;

			if (how != SHARD_FLIP) {
				T_INT(unlink(f), 0, "remove '%s'", f);
				if (how == SHARD_UNREADABLE)
					T_INT(mkdir(f, 0755), 0,
					      "a directory at '%s'", f);
				continue;
			}
			fd = open(f, O_RDWR);
			T_OK(fd >= 0 && pread(fd, &c, 1, 100) == 1, "read '%s'",
			     f);
			c ^= 1;
			T_OK(pwrite(fd, &c, 1, 100) == 1, "flip '%s'", f);
			close(fd);
		}
		globfree(&g);
		free(pat);
	}
}

static void test_attacks(void)
{
	struct spx_vol_info v, r, *vl;
	struct spx_snap_report s1;
	struct spx_snap_manifest m;
	struct spx_snap_restore_opts eager = { .eager = true };
	struct spx_buf b = SPX_BUF_INIT;
	unsigned char *p = spx_malloc(CH);
	size_t n0, n1;
	char key[80], hex[65];
	bool lost;
	static const char *const ids[] = {
		"snap-..", "../m/snap-0123456789abcdef0", "snap-0123456789abcdef0/..",
		"vol-0123456789abcdef0", "", "snap-0123456789ABCDEF0",
	};

	spx_vol_create(vs, 2 * (uint64_t)CH, NULL, &v);
	wchunk(v.id, 0, 11);
	wchunk(v.id, 1, 12);
	spx_snap_create(ss, v.id, NULL, &s1);
	spx_snap_manifest_read(ss, s1.id, 0, &m);
	/* Chunk 1's object gets chunk 0's bytes. */
	pattern(p, CH, 0, 11);
	spx_hex_encode(m.v[1].hash, 32, hex);
	snprintf(key, sizeof(key), "c/%s", hex);
	put_object(key, p, CH);
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), -1,
	      "a chunk whose bytes are not its name");
	T_OK(lost && strstr(spx_errmsg(), "corrupt"), "lost, says corrupt: %s",
	     spx_errmsg());
	spx_vol_list(vs, &vl, &n0);
	free(vl);
	T_INT(spx_snap_restore(ss, s1.id, &eager, &r), -1,
	      "an eager restore fails loudly");
	T_OK(strstr(spx_errmsg(), "corrupt") != NULL, "%s", spx_errmsg());
	/* A short one. */
	put_object(key, p, 100);
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), -1,
	      "a chunk of the wrong length");
	T_OK(lost, "lost");
	/* The right bytes, then more of its blocks fail their CRC than
	 * parity (RS(2,1) here) rebuilds: the store holds the chunk but has
	 * lost it, which no retry brings back. */
	pattern(p, CH, 1, 12);
	put_object(key, p, CH);
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), 0,
	      "its bytes again");
	break_shards(key, 0, 1, SHARD_FLIP);
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), 0,
	      "a block lost: rebuilt from parity");
	T_OK(!lost, "not lost");
	break_shards(key, 1, 2, SHARD_FLIP);
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), -1,
	      "two of three blocks lost");
	T_OK(lost && strstr(spx_errmsg(), "lost"), "lost: %s", spx_errmsg());
	T_INT(spx_errstatus(), SPX_FAIL, "SPX_FAIL");
	/* Reads that fail with an errno are not a loss: the fetch waits
	 * and tries again (a guest gets no EIO for a fault that may pass). */
	pattern(p, CH, 1, 12);
	put_object(key, p, CH);
	break_shards(key, 0, 2, SHARD_UNREADABLE);
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), -1,
	      "two of three shard files unreadable");
	T_OK(!lost && strstr(spx_errmsg(), "cannot be read"),
	     "not lost, to try again: %s", spx_errmsg());
	/* So are drives that are away (not mounted): they may come back. */
	pattern(p, CH, 1, 12);
	put_object(key, p, CH);
	for (int i = 0; i < 2; i++) {
		char *d = spx_xprintf("%s/d%d/b", tmp, i),
		     *away = spx_xprintf("%s/d%d/b.away", tmp, i);

		T_INT(rename(d, away), 0, "drive %d away", i);
		free(d);
		free(away);
	}
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), -1,
	      "two of three drives away");
	T_OK(!lost, "not lost, to try again: %s", spx_errmsg());
	for (int i = 0; i < 2; i++) {
		char *d = spx_xprintf("%s/d%d/b", tmp, i),
		     *away = spx_xprintf("%s/d%d/b.away", tmp, i);

		T_INT(rename(away, d), 0, "drive %d back", i);
		free(d);
		free(away);
	}
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), 0,
	      "back: read");
	/* Shard files gone are. */
	pattern(p, CH, 1, 12);
	put_object(key, p, CH);
	break_shards(key, 0, 2, SHARD_REMOVE);
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), -1,
	      "two of three shard files gone");
	T_OK(lost, "lost: %s", spx_errmsg());
	/* Gone. */
	{
		struct spx_obj_bucket bk;

		spx_obj_bucket_open(obj, SPX_SNAP_BUCKET, &bk);
		spx_obj_delete(obj, &bk, key);
	}
	T_INT(spx_snap_chunk_get(ss, m.v[1].hash, p, CH, &lost), -1,
	      "a missing chunk");
	T_INT(spx_errstatus(), SPX_NO, "SPX_NO");
	T_OK(lost, "a missing chunk is lost");
	spx_vol_list(vs, &vl, &n0);
	free(vl);
	T_INT(spx_snap_restore(ss, s1.id, NULL, &r), -1,
	      "a manifest naming a chunk that is not there: no restore");
	T_OK(strstr(spx_errmsg(), "does not hold") != NULL, "%s", spx_errmsg());
	spx_vol_list(vs, &vl, &n1);
	free(vl);
	T_INT(n1, n0, "and no volume");
	/* A manifest under another snapshot's name. */
	spx_snap_manifest_encode(&m, &b);
	put_object("m/snap-00000000000000bad", b.p, b.len);
	T_INT(spx_snap_restore(ss, "snap-00000000000000bad", NULL, &r), -1,
	      "a manifest of another id");
	T_INT(spx_errstatus(), SPX_FAIL, "SPX_FAIL");
	/* Garbage under m/: listings skip it, collection stops. */
	put_object("m/snap-00000000000000bbb", "junk", 4);
	{
		struct spx_snap_manifest *l;
		struct spx_snap_gc_report g;
		size_t n;

		T_INT(spx_snap_list(ss, &l, &n), 0, "list with junk");
		T_OK(n >= 1, "the good ones listed");
		for (size_t i = 0; i < n; i++)
			T_OK(strcmp(l[i].id, "snap-00000000000000bbb"),
			     "not the junk");
		free(l);
		T_INT(spx_snap_gc(ss, false, &g), -1,
		      "collection stops at an unreadable manifest");
		T_OK(strstr(spx_errmsg(), "nothing removed") != NULL, "%s",
		     spx_errmsg());
		T_INT(g.removed, 0, "nothing removed");
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(ids); i++) {
		T_INT(spx_snap_restore(ss, ids[i], NULL, &r), -1,
		      "restore '%s' refused", ids[i]);
		T_INT(spx_errstatus(), SPX_USAGE, "SPX_USAGE");
		T_INT(spx_snap_remove(ss, ids[i]), -1, "remove '%s'", ids[i]);
		T_INT(spx_errstatus(), SPX_USAGE, "SPX_USAGE");
	}
	T_INT(spx_snap_restore(ss, "snap-0000000000000dead", NULL, &r), -1,
	      "unknown");
	T_INT(spx_errstatus(), SPX_NO, "unknown: SPX_NO");
	T_INT(spx_snap_create(ss, "vol-0000000000000dead", NULL, NULL), -1,
	      "no such volume");
	T_INT(spx_errstatus(), SPX_NO, "no such volume: SPX_NO");
	{
		struct spx_snap_opts o = { .parent = "snap-0000000000000dead" };

		T_INT(spx_snap_create(ss, v.id, &o, NULL), -1, "unknown parent");
		T_INT(spx_errstatus(), SPX_NO, "unknown parent: SPX_NO");
	}
	spx_buf_release(&b);
	spx_snap_manifest_release(&m);
	free(p);
}

/* DIRTY marks live in the page cache between a writer's open and its
 * clean close: a process killed keeps them (the same boot), the machine
 * going down may not. A writer that finds another boot's writer never
 * closed makes the next snapshot read everything; dedup still stores
 * only what changed. */
static void test_machine_down(void)
{
	struct spx_vol_info v;
	struct spx_vol_snapstate st;
	struct spx_snap_report s1, s2, s3;
	struct spx_vol_track *t;
	char *dir, *p;
	const char *other = "00000000-1111-2222-3333-444444444444";
	char boot[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = 0;
		fclose(f);
	}
	boot[strcspn(boot, "\n")] = 0;
	T_INT(spx_vol_create(vs, 8 * (uint64_t)CH, NULL, &v), 0, "a volume");
	dir = spx_vol_dir(vs, v.id);
	for (uint64_t c = 0; c < 8; c++)
		wchunk(v.id, c, 3);
	T_INT(spx_snap_create(ss, v.id, NULL, &s1), 0, "a first snapshot");
	/* A writer open, killed (never unlocked): this boot is recorded. */
	wchunk(v.id, 2, 4);
	spx_vol_snapstate_read(dir, &st);
	T_STR(st.writer_boot, boot, "the writer's boot is recorded");
	T_OK(st.valid, "tracking counts");
	/* Opened again in the same boot: the marks are still there. */
	wchunk(v.id, 3, 4);
	T_INT(spx_snap_create(ss, v.id, NULL, &s2), 0, "second snapshot");
	T_OK(s2.incremental && s2.read == 2,
	     "incremental after a killed writer: %llu read",
	     (unsigned long long)s2.read);
	/* Now as if the machine went down under a writer: the mark is of
	 * another boot. */
	p = spx_xprintf("%s/snap.json", dir);
	{
		char *text = spx_xprintf("{\"base\":\"%s\",\"valid\":true,"
					 "\"source\":\"\",\"writer_boot\":\"%s\"}",
					 s2.id, other);

		T_INT(spx_write_file(p, text, strlen(text), 0600, false), 0,
		      "snap.json of a machine that went down");
		free(text);
	}
	wchunk(v.id, 5, 4);
	spx_vol_snapstate_read(dir, &st);
	T_OK(!st.valid, "tracking no longer counts");
	T_STR(st.writer_boot, boot, "this boot is recorded instead");
	T_INT(spx_snap_create(ss, v.id, NULL, &s3), 0, "third snapshot");
	T_OK(!s3.incremental && s3.read == 8, "reads the whole volume: %llu",
	     (unsigned long long)s3.read);
	T_INT(s3.uploaded, 1, "stores only the chunk that changed");
	/* A clean close syncs the marks and clears the boot. */
	T_INT(spx_vol_track_open(dir, v.size, 0, &t), 0, "open the tracking");
	T_INT(spx_vol_track_writer_lock(t), 0, "a writer");
	spx_vol_track_writer_unlock(t);
	spx_vol_track_close(t);
	spx_vol_snapstate_read(dir, &st);
	T_STR(st.writer_boot, "", "cleared on a clean close");
	T_OK(st.valid, "and tracking counts again");
	/* A hostile writer_boot is not a state. */
	{
		const char *bad = "{\"base\":\"\",\"valid\":true,\"source\":\"\","
				  "\"writer_boot\":\"../../x\"}";

		T_INT(spx_vol_snapstate_parse(bad, strlen(bad), &st), -1,
		      "a writer_boot that is not a boot id");
	}
	free(p);
	free(dir);
}

int main(void)
{
	char tpl[] = "/tmp/spx-test-snap.XXXXXX";
	char *dv[3], *dir;
	struct spx_obj_opts o = { .ndrives = 3, .data = 2, .parity = 1,
				  .flags = SPX_OBJ_CREATE };

	tmp = mkdtemp(tpl);
	if (!tmp)
		return 2;
	for (int i = 0; i < 3; i++)
		dv[i] = spx_xprintf("%s/d%d", tmp, i);
	o.drives = (const char *const *)dv;
	dir = at("vol");
	if (spx_obj_open(&o, &obj) < 0 ||
	    spx_vol_store_open(dir, SPX_VOL_CREATE, &vs) < 0 ||
	    spx_snap_store_open(obj, vs, "123456789012", "us-east-1", &ss) < 0) {
		printf("# setup: %s\n", spx_errmsg());
		return 2;
	}
	test_manifest();
	test_snapshots();
	test_lazy();
	test_point_in_time();
	test_set();
	test_grow();
	test_grow_map();
	test_track_reset();
	test_killed();
	test_machine_down();
	test_attacks();
	spx_snap_store_close(ss);
	spx_vol_store_close(vs);
	spx_obj_close(obj);
	for (int i = 0; i < 3; i++)
		free(dv[i]);
	free(dir);
	spx_rmtree(tmp);
	return t_done();
}
