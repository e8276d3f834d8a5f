/* spx-bench block: the snapshot figures, measured in each run beside
 * what limits them.
 *
 *   incremental  a thin volume of 10 GiB (--quick: 256 MiB) on the
 *                private node gets 2 GiB of random bytes (twice the
 *                change) through spx-vol serve and fio's nbd engine, then
 *                a first snapshot; then 1 GiB (1/10 of the volume) is
 *                rewritten in 16 regions, each starting 4 KiB past a
 *                chunk boundary so that it touches one chunk more than
 *                its size, and a second snapshot is taken. The engine's
 *                own report (spx-vol snapshot --json) gives what it read
 *                and uploaded; the limit is the bytes fio changed, and
 *                the target "uploads about 1 GiB": within 10% of them
 *                plus one chunk a region.
 *   restore      the second snapshot restored eagerly (spx-vol restore
 *                --eager), against the object store's GET rate for the
 *                same chunks, in the same order, through lib/obj's engine
 *                with as many threads as the restore fetches with
 *                (SPX_SNAP_FETCHERS). Both start with the store's files
 *                out of the page cache. Target: at least half the GET
 *                rate. A restore also writes what it reads to the same
 *                disk: a third limit GETs the chunks as the first and
 *                writes each into a scratch file where the restore would
 *                (O_DIRECT), then syncs it; no target: it shows what the
 *                restore's own work (the check, the locks, the tracking)
 *                costs beyond moving the bytes. A fourth writes the same
 *                bytes alone, with no GET, adjacent chunks in one write
 *                as the restore's largest: a restore writes every one of
 *                them, so it is never faster than that. Where that rate
 *                is under half the GET rate, no restore can meet the
 *                target on this disk, and its verdict is "limit not
 *                resolved", with the restore against that write rate.
 *   data         the SHA-256 of every chunk of the volume that holds data
 *                is compared with the second snapshot's manifest before
 *                the volume is removed, and the restored volume's with
 *                the same list: a snapshot or a restore that returns other
 *                bytes fails the run, as one that fails does.
 *
 * Everything is removed at the end of the run (the volumes, both
 * snapshots, and their chunks by a collection), so that each run starts
 * from an empty store and the next run's chunks are not found stored
 * already. */
#include "spx.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "blockint.h"
#include "checksum.h"
#include "conf/conf.h"
#include "file.h"
#include "hex.h"
#include "node/node.h"
#include "obj/obj.h"
#include "vol/snap.h"
#include "vol/vol.h"

#define MIB (1024.0 * 1024.0)
#define CHUNK SPX_SNAP_CHUNK
/* The regions changed between the two snapshots, and how far past a
 * chunk boundary each starts. */
#define REGIONS 16
#define MISALIGN 4096u
/* fio jobs writing the first data. */
#define WRITERS 4

/* The node's stores, open in spx-bench for one run's snapshot part. */
struct snapenv {
	struct blk *b;
	struct spx_node_loc loc;
	struct spx_conf conf;
	bool conf_open;
	struct spx_vol_store *vs;
	struct spx_obj *obj;
	struct spx_snap_store *ss;
	int run;
};

/* What spx-vol snapshot --json reported, and how long it took. */
struct snaprep {
	char id[SPX_ID_SIZE];
	bool incremental;
	uint64_t chunks, read, uploaded, uploaded_bytes;
	double secs;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

uint64_t blk_snap_plan(struct blk *b)
{
	/* 1/10 of the volume changes, in whole MiB a region. */
	b->snap_size = b->quick ? 256u << 20 : (uint64_t)10 << 30;
	b->snap_changed = b->quick ? 32u << 20 : 1u << 30;
	/* At most: the volume's data and both snapshots in the store, or
	 * the store and the restored volume (the volume is removed before
	 * the restore). */
	return 2 * (2 * b->snap_changed) + b->snap_changed;
}

/* ---- the tools ---- */

/* Run spx-vol VERB --root NODE args... with its output in the logs as
 * NAME.out and NAME.err; the first line of its stdout into first (may be
 * NULL). A failure is an error with what spx-vol said. *secs (may be
 * NULL): how long it ran. */
static int spxvol(struct snapenv *e, const char *name, const char *verb,
		  const char *const args[], char *first, size_t n,
		  double *secs)
{
	struct blk *b = e->b;
	char *out = spx_xprintf("%s/%s.out", b->logs, name);
	char *err = spx_xprintf("%s/%s.err", b->logs, name);
	struct blk_argv a = { 0 };
	struct spx_buf o = SPX_BUF_INIT;
	double t0;
	int st, rc = -1;

	blk_arg(&a, spx_strdup(b->spxvol));
	blk_arg(&a, spx_strdup(verb));
	blk_arg(&a, spx_strdup("--root"));
	blk_arg(&a, spx_strdup(b->node));
	for (size_t i = 0; args[i]; i++)
		blk_arg(&a, spx_strdup(args[i]));
	unlink(out);
	unlink(err);
	t0 = now_s();
	st = blk_run_to(a.v, out, err);
	if (secs)
		*secs = now_s() - t0;
	if (st != 0) {
		char *w = st > 0 ? blk_why(err) : NULL;

		if (st > 0)
			spx_error(SPX_FAIL, "spx-vol %s failed (exit %d): %s",
				  verb, st, w ? w : "no message");
		else
			spx_error_prefix("spx-vol %s", verb);
		free(w);
		goto out;
	}
	if (first) {
		if (spx_buf_read_file(&o, out, 1 << 20) < 0)
			goto out;
		snprintf(first, n, "%.*s", (int)strcspn(o.p, "\n"), o.p);
	}
	rc = 0;
out:
	spx_buf_release(&o);
	blk_argv_free(&a);
	free(out);
	free(err);
	return rc;
}

/* One unsigned field of the snapshot's report. */
static int u64_of(json_t *o, const char *k, uint64_t *v)
{
	json_t *j = json_object_get(o, k);

	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return spx_error(SPX_FAIL, "spx-vol snapshot --json: '%s' is "
					   "not a count",
				 k);
	*v = (uint64_t)json_integer_value(j);
	return 0;
}

/* spx-vol snapshot --json VOL: its report and how long it took. */
static int snapshot(struct snapenv *e, const char *vol, const char *which,
		    struct snaprep *r)
{
	const char *args[] = { "--json", vol, NULL };
	char *name = spx_xprintf("snapshot-%s-run%d", which, e->run);
	char *path = spx_xprintf("%s/%s.out", e->b->logs, name);
	struct spx_buf o = SPX_BUF_INIT;
	json_error_t je;
	json_t *j = NULL, *s, *id;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	if (spxvol(e, name, "snapshot", args, NULL, 0, &r->secs) < 0 ||
	    spx_buf_read_file(&o, path, 1 << 20) < 0)
		goto out;
	j = json_loadb(o.p, o.len, 0, &je);
	s = json_array_get(j, 0);
	id = json_object_get(s, "id");
	if (!json_is_array(j) || json_array_size(j) != 1 ||
	    !json_is_object(s) || !json_is_string(id) ||
	    !spx_snap_id_valid(json_string_value(id)) ||
	    !json_is_boolean(json_object_get(s, "incremental"))) {
		spx_error(SPX_FAIL, "spx-vol snapshot --json printed no "
				    "snapshot (%s)",
			  path);
		goto out;
	}
	snprintf(r->id, sizeof(r->id), "%s", json_string_value(id));
	r->incremental = json_is_true(json_object_get(s, "incremental"));
	if (u64_of(s, "chunks", &r->chunks) < 0 ||
	    u64_of(s, "read", &r->read) < 0 ||
	    u64_of(s, "uploaded", &r->uploaded) < 0 ||
	    u64_of(s, "uploaded_bytes", &r->uploaded_bytes) < 0)
		goto out;
	rc = 0;
out:
	json_decref(j);
	spx_buf_release(&o);
	free(path);
	free(name);
	return rc;
}

/* fio writes random bytes (new ones for every block, and other ones in
 * every run: no chunk is found stored already) into volume vol through
 * spx-vol serve: jobs jobs of len bytes, the first at off, each the next
 * step further. *bytes: what fio says it wrote, which must be all. */
static int fio_write(struct snapenv *e, const char *vol, const char *which,
		     int jobs, uint64_t len, uint64_t off, uint64_t step,
		     uint64_t *bytes)
{
	struct blk *b = e->b;
	struct blk_argv a = { 0 };
	struct spx_fio_result r;
	char name[64];
	int rc;

	blk_arg(&a, spx_strdup("fio"));
	blk_arg(&a, spx_strdup("--ioengine=nbd"));
	blk_arg(&a, spx_xprintf("--uri=nbd+unix:///%s?socket=%s", vol,
				b->vol_sock));
	blk_arg(&a, spx_strdup("--rw=write"));
	blk_arg(&a, spx_strdup("--bs=1M"));
	blk_arg(&a, spx_strdup("--iodepth=8"));
	blk_arg(&a, spx_xprintf("--numjobs=%d", jobs));
	blk_arg(&a, spx_xprintf("--size=%llu", (unsigned long long)len));
	blk_arg(&a, spx_xprintf("--offset=%llu", (unsigned long long)off));
	blk_arg(&a, spx_xprintf("--offset_increment=%llu",
				(unsigned long long)step));
	blk_arg(&a, spx_strdup("--refill_buffers"));
	blk_arg(&a, spx_strdup("--randrepeat=0"));
	blk_arg(&a, spx_strdup("--thread"));
	blk_arg(&a, spx_strdup("--group_reporting"));
	blk_arg(&a, spx_strdup("--eta=never"));
	blk_arg(&a, spx_strdup("--output-format=json"));
	snprintf(name, sizeof(name), "snap-%s-run%d", which, e->run);
	rc = blk_fio_run(b, "spx volume", name, &a, &r, false);
	blk_argv_free(&a);
	if (rc < 0)
		return -1;
	*bytes = r.write.bytes;
	if (*bytes != (uint64_t)jobs * len)
		return spx_error(SPX_FAIL, "spx volume: fio %s wrote %llu "
					   "bytes, not %llu",
				 name, (unsigned long long)*bytes,
				 (unsigned long long)jobs * len);
	return 0;
}

/* ---- the page cache ---- */

/* A file flushed and out of the page cache. */
static int drop_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), e = 0;

	if (fd < 0 && errno == ENOENT)
		return 0; /* gone meanwhile: nothing cached */
	if (fd < 0 || fdatasync(fd) < 0 ||
	    (e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))) {
		if (e)
			errno = e;
		e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return spx_error_errno(SPX_FAIL, "cannot flush '%s'", path);
	}
	close(fd);
	return 0;
}

static int drop_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0
				       : spx_error_errno(SPX_FAIL,
							 "cannot open '%s'",
							 dir);
	while (rc == 0 && (de = readdir(d))) {
		char *p;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		p = spx_path_join(dir, de->d_name);
		if (de->d_type == DT_DIR)
			rc = drop_tree(p);
		else if (de->d_type == DT_REG || de->d_type == DT_UNKNOWN)
			rc = drop_file(p);
		free(p);
	}
	closedir(d);
	return rc;
}

/* The snapshot bucket on every drive of the node's object store. */
static int drop_store(struct snapenv *e)
{
	const struct spx_conf_node *self = spx_conf_self(&e->conf);

	for (size_t i = 0; i < self->obj.drives.n; i++) {
		char *p = spx_xprintf("%s/b/%s", self->obj.drives.v[i],
				      SPX_SNAP_BUCKET);
		int rc = drop_tree(p);

		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* ---- the bytes of a volume ---- */

static bool all_zero(const unsigned char *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/* The SHA-256 of each chunk of volume vol that is not all zeros, in the
 * manifest's form (holes are skipped as zeros): *out (caller frees)
 * holds *n, by chunk. */
static int vol_digest(struct snapenv *e, const char *vol,
		      struct spx_snap_entry **out, size_t *n)
{
	char *path = spx_vol_data_path(e->vs, vol);
	unsigned char *buf = spx_malloc(CHUNK);
	struct spx_snap_entry *v = NULL;
	size_t cap = 0;
	uint64_t off = 0, size = e->b->snap_size;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;

	*out = NULL;
	*n = 0;
	if (fd < 0) {
		spx_error_errno(SPX_FAIL, "cannot open '%s'", path);
		goto out;
	}
	while (off < size) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA);
		uint64_t c;
		size_t len, got = 0;
		unsigned char md[SPX_CKSUM_MAX];

		if (d < 0 && errno == ENXIO)
			break; /* only holes left */
		if (d < 0) {
			spx_error_errno(SPX_FAIL, "cannot seek in '%s'", path);
			goto out;
		}
		c = (uint64_t)d / CHUNK;
		off = c * CHUNK;
		if (off >= size)
			break;
		len = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		while (got < len) {
			ssize_t r = pread(fd, buf + got, len - got,
					  (off_t)(off + got));

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				if (r == 0)
					errno = EIO;
				spx_error_errno(SPX_FAIL, "cannot read '%s'",
						path);
				goto out;
			}
			got += (size_t)r;
		}
		off += len;
		if (all_zero(buf, len))
			continue;
		if (spx_cksum_digest(SPX_CKSUM_SHA256, buf, len, md, NULL) < 0)
			goto out;
		if (*n == cap) {
			cap = cap ? 2 * cap : 1024;
			v = spx_realloc(v, cap * sizeof(*v));
		}
		v[*n].idx = c;
		memcpy(v[*n].hash, md, SPX_SNAP_HASH);
		++*n;
	}
	*out = v;
	v = NULL;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(v);
	free(buf);
	free(path);
	return rc;
}

/* The first chunk where two such lists differ (one has data where the
 * other has zeros, or other bytes), or -1 when they are the same. */
static int64_t digest_diff(const struct spx_snap_entry *a, size_t na,
			   const struct spx_snap_entry *b, size_t nb)
{
	size_t i = 0, j = 0;

	while (i < na || j < nb) {
		if (i == na)
			return (int64_t)b[j].idx;
		if (j == nb || a[i].idx < b[j].idx)
			return (int64_t)a[i].idx;
		if (b[j].idx < a[i].idx)
			return (int64_t)b[j].idx;
		if (memcmp(a[i].hash, b[j].hash, SPX_SNAP_HASH))
			return (int64_t)a[i].idx;
		i++;
		j++;
	}
	return -1;
}

/* ---- the limit: the object store's GET rate ---- */

struct getters {
	struct spx_obj *obj;
	const struct spx_obj_bucket *bk;
	const struct spx_snap_manifest *m;
	bool verify;	/* check each chunk's SHA-256, as a restore does */
	bool noget;	/* write without a GET: the disk's write rate */
	int wfd, directfd; /* write each chunk there (-1: no) */
	pthread_mutex_t mu;
	uint64_t next, bytes;
	bool failed;
	int err_status;
	char err[512];
};

/* The bytes of the manifest's entry i: a chunk, or less at the end. */
static uint64_t chunk_bytes(const struct spx_snap_manifest *m, uint64_t i)
{
	uint64_t off = m->v[i].idx * CHUNK;

	return m->size - off < CHUNK ? m->size - off : CHUNK;
}

/* GET one chunk whole into buf (and check its SHA-256 when g->verify):
 * its length, or -1. */
static int64_t get_chunk(struct getters *g, const struct spx_snap_entry *en,
			 unsigned char *buf)
{
	char key[2 + 2 * SPX_SNAP_HASH + 1] = "c/";
	struct spx_obj_reader *r;
	uint64_t size, off = 0;
	int rc;

	spx_hex_encode(en->hash, SPX_SNAP_HASH, key + 2);
	if ((rc = spx_obj_reader_open(g->obj, g->bk, key, &r)) < 0)
		return spx_error_prefix("GET %s", key);
	size = spx_obj_reader_meta(r)->size;
	if (size > CHUNK) {
		spx_obj_reader_close(r);
		return spx_error(SPX_FAIL, "GET %s: %llu bytes, more than a "
					   "chunk",
				 key, (unsigned long long)size);
	}
	while (off < size) {
		size_t got;

		rc = spx_obj_read(r, off, buf + off, (size_t)(size - off),
				  &got);
		if (rc < 0 || !got) {
			spx_obj_reader_close(r);
			if (rc < 0)
				return spx_error_prefix("GET %s", key);
			return spx_error(SPX_FAIL, "GET %s: ends early", key);
		}
		off += got;
	}
	spx_obj_reader_close(r);
	if (g->verify) {
		unsigned char md[SPX_CKSUM_MAX];

		if (spx_cksum_digest(SPX_CKSUM_SHA256, buf, (size_t)size, md,
				     NULL) < 0)
			return -1;
		if (memcmp(md, en->hash, SPX_SNAP_HASH))
			return spx_error(SPX_FAIL, "GET %s: its bytes hash to "
						   "something else",
					 key);
	}
	return (int64_t)size;
}

/* Write chunk idx of len bytes where a restore would: around the page
 * cache when it can, as the restore's writes go. */
static int put_chunk(struct getters *g, uint64_t idx, const unsigned char *buf,
		     size_t len)
{
	off_t off = (off_t)(idx * CHUNK);
	int fd = g->directfd >= 0 && !(len % 4096) ? g->directfd : g->wfd;

	while (len) {
		ssize_t w = pwrite(fd, buf, len, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return spx_error_errno(SPX_FAIL, "cannot write the "
							 "scratch file");
		buf += w;
		len -= (size_t)w;
		off += w;
	}
	return 0;
}

/* As lib/vol/snap.c's fillers take the manifest's entries in turn: one
 * at a time to GET; without a GET, a run of adjacent ones at a time in
 * one write of up to SPX_SNAP_FILL_RUN chunks, the restore's largest. */
static void *getter(void *arg)
{
	struct getters *g = arg;
	size_t size = g->noget ? SPX_SNAP_FILL_RUN * CHUNK : CHUNK;
	unsigned char *buf = aligned_alloc(4096, size);

	/* Bytes a disk cannot tell from the chunks' (no zeros to skip). */
	if (buf && g->noget && spx_random(buf, size) < 0) {
		free(buf);
		buf = NULL;
	}
	for (;;) {
		uint64_t i;
		unsigned n = 1;
		int64_t got = 0;

		pthread_mutex_lock(&g->mu);
		if (g->failed || g->next >= g->m->count) {
			pthread_mutex_unlock(&g->mu);
			break;
		}
		i = g->next;
		if (g->noget)
			n = spx_snap_fill_run(g->m, i);
		g->next += n;
		pthread_mutex_unlock(&g->mu);
		if (!buf)
			got = spx_error(SPX_FAIL, "out of memory");
		else if (g->noget)
			for (unsigned j = 0; j < n; j++)
				got += (int64_t)chunk_bytes(g->m, i + j);
		else
			got = get_chunk(g, &g->m->v[i], buf);
		if (got > 0 && g->wfd >= 0 &&
		    put_chunk(g, g->m->v[i].idx, buf, (size_t)got) < 0)
			got = -1;
		pthread_mutex_lock(&g->mu);
		if (got < 0 && !g->failed) {
			/* The error slot is this thread's: hand it over. */
			g->failed = true;
			g->err_status = spx_errstatus();
			snprintf(g->err, sizeof(g->err), "%s", spx_errmsg());
		} else if (got > 0) {
			g->bytes += (uint64_t)got;
		}
		pthread_mutex_unlock(&g->mu);
	}
	free(buf);
	return NULL;
}

/* The restore's limits: GET alone, GET and check each chunk's SHA-256,
 * GET and write each chunk into a scratch file of the volume's size
 * (allocated first, as the restore's is), synced at the end; and the
 * same writes with no GET. */
enum get_how { GET_ALONE, GET_CHECK, GET_WRITE, WRITE_ALONE, GET_HOWS };

/* GET every chunk the manifest names with SPX_SNAP_FETCHERS threads,
 * as how says. */
static int get_limit(struct snapenv *e, const struct spx_snap_manifest *m,
		     enum get_how how, double *secs, uint64_t *bytes)
{
	struct spx_obj_bucket bk;
	struct getters g = { .obj = e->obj, .bk = &bk, .m = m,
			     .verify = how == GET_CHECK,
			     .noget = how == WRITE_ALONE, .wfd = -1,
			     .directfd = -1 };
	char *scratch = spx_xprintf("%s/get-write", e->b->dir);
	pthread_t th[SPX_SNAP_FETCHERS];
	int nth = 0, rc;
	double t0;

	if ((rc = spx_obj_bucket_open(e->obj, SPX_SNAP_BUCKET, &bk)) < 0) {
		free(scratch);
		return spx_error_prefix("the snapshot store");
	}
	if (how == GET_WRITE || how == WRITE_ALONE) {
		g.wfd = open(scratch, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
			     0600);
		if (g.wfd < 0) {
			rc = spx_error_errno(SPX_FAIL, "cannot make '%s'",
					     scratch);
			goto out;
		}
		/* As the restore: where the file system cannot, the writes
		 * allocate. */
		(void)!fallocate(g.wfd, 0, 0, (off_t)m->size);
		g.directfd = open(scratch, O_WRONLY | O_DIRECT | O_CLOEXEC);
	}
	pthread_mutex_init(&g.mu, NULL);
	t0 = now_s();
	for (int i = 0; i < SPX_SNAP_FETCHERS; i++)
		if (pthread_create(&th[nth], NULL, getter, &g) == 0)
			nth++;
	if (nth < SPX_SNAP_FETCHERS) {
		pthread_mutex_lock(&g.mu);
		g.failed = true;
		g.err_status = SPX_FAIL;
		snprintf(g.err, sizeof(g.err), "cannot start a thread");
		pthread_mutex_unlock(&g.mu);
	}
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	if (g.wfd >= 0 && !g.failed && fdatasync(g.wfd) < 0) {
		g.failed = true;
		g.err_status = SPX_FAIL;
		snprintf(g.err, sizeof(g.err), "cannot sync '%s': %s", scratch,
			 strerror(errno));
	}
	*secs = now_s() - t0;
	*bytes = g.bytes;
	pthread_mutex_destroy(&g.mu);
	rc = g.failed ? spx_error(g.err_status, "object store GET limit: %s",
				  g.err)
		      : 0;
out:
	if (g.directfd >= 0)
		close(g.directfd);
	if (g.wfd >= 0)
		close(g.wfd);
	if (g.wfd >= 0)
		unlink(scratch);
	free(scratch);
	return rc;
}

/* ---- one run ---- */

static int env_open(struct snapenv *e, struct blk *b)
{
	char *dir;
	int rc;

	memset(e, 0, sizeof(*e));
	e->b = b;
	e->run = b->run->run;
	spx_node_locate(b->node, &e->loc);
	if (spx_conf_load(e->loc.conf, e->loc.root, &e->conf) < 0)
		return -1;
	e->conf_open = true;
	dir = spx_path_join(e->conf.paths.data, "vol");
	rc = spx_vol_store_open(dir, 0, &e->vs);
	free(dir);
	if (rc < 0)
		return -1;
	return spx_snap_store_conf(e->loc.conf, e->loc.root, e->vs, &e->obj,
				   &e->ss);
}

static void env_close(struct snapenv *e)
{
	spx_snap_store_close(e->ss);
	spx_obj_close(e->obj);
	spx_vol_store_close(e->vs);
	if (e->conf_open)
		spx_conf_release(&e->conf);
	spx_node_loc_release(&e->loc);
	memset(e, 0, sizeof(*e));
}

static void add(struct blk *b, const char *id, const char *section,
		const char *label, double v, const char *unit, bool higher)
{
	spx_bench_add(b->run, id, section, label, v, unit, higher,
		      SPX_SNAP_FETCHERS);
}

/* A volume's data file out of the page cache. */
static int drop_vol(struct snapenv *e, const char *vol)
{
	char *p = spx_vol_data_path(e->vs, vol);
	int rc = drop_file(p);

	free(p);
	return rc;
}

static int snap_steps(struct snapenv *e, char vol[SPX_ID_SIZE],
		      char restored[SPX_ID_SIZE], char snaps[2][SPX_ID_SIZE])
{
	struct blk *b = e->b;
	uint64_t changed = b->snap_changed, region = changed / REGIONS;
	uint64_t data = 2 * changed, wrote = 0, bytes = 0;
	uint64_t got[GET_HOWS] = { 0 };
	struct snaprep s1, s2;
	struct spx_snap_manifest m = { 0 };
	struct spx_snap_entry *src = NULL, *res = NULL;
	size_t nsrc = 0, nres = 0;
	char size[32], name[64];
	double tget[GET_HOWS] = { 0 }, trest = 0;
	int64_t bad;
	int rc = -1;

	/* A thin volume, data in its first part, a first snapshot. */
	snprintf(size, sizeof(size), "%llu", (unsigned long long)b->snap_size);
	snprintf(name, sizeof(name), "snap-create-run%d", e->run);
	if (spxvol(e, name, "create",
		   (const char *const[]){ "--size", size, NULL }, vol,
		   SPX_ID_SIZE, NULL) < 0)
		goto out;
	if (!spx_vol_id_valid(vol)) {
		spx_error(SPX_FAIL, "spx-vol create printed '%s', not a "
				    "volume id",
			  vol);
		*vol = '\0';
		goto out;
	}
	if (fio_write(e, vol, "data", WRITERS, data / WRITERS, 0,
		      data / WRITERS, &wrote) < 0 ||
	    drop_vol(e, vol) < 0 || snapshot(e, vol, "first", &s1) < 0)
		goto out;
	snprintf(snaps[0], SPX_ID_SIZE, "%s", s1.id);
	/* REGIONS regions, each MISALIGN past a chunk boundary, spread over
	 * the data: changed bytes in 1 + region / CHUNK chunks each. */
	if (fio_write(e, vol, "change", REGIONS, region, MISALIGN,
		      data / REGIONS, &wrote) < 0 ||
	    drop_vol(e, vol) < 0 || snapshot(e, vol, "second", &s2) < 0)
		goto out;
	snprintf(snaps[1], SPX_ID_SIZE, "%s", s2.id);
	/* The snapshot holds the volume's bytes, then the volume goes:
	 * what is restored comes from the store. */
	if (spx_snap_manifest_read(e->ss, s2.id, 0, &m) < 0 ||
	    vol_digest(e, vol, &src, &nsrc) < 0)
		goto out;
	if ((bad = digest_diff(src, nsrc, m.v, m.count)) >= 0) {
		spx_error(SPX_FAIL, "snapshot %s does not hold "
				    "the volume's bytes: chunk %lld (at byte "
				    "%llu) differs",
			  s2.id, (long long)bad,
			  (unsigned long long)bad * CHUNK);
		goto out;
	}
	snprintf(name, sizeof(name), "snap-rm-run%d", e->run);
	if (spxvol(e, name, "rm", (const char *const[]){ vol, NULL }, NULL, 0,
		   NULL) < 0)
		goto out;
	*vol = '\0';
	/* The limits (GET alone, GET and the SHA-256 check a restore owes,
	 * GET and write, the writes alone), then the restore, each from the
	 * disk. The bytes of each: the chunks the manifest names. */
	for (uint64_t i = 0; i < m.count; i++)
		bytes += chunk_bytes(&m, i);
	for (enum get_how v = GET_ALONE; v < GET_HOWS; v++) {
		if (drop_store(e) < 0 ||
		    get_limit(e, &m, v, &tget[v], &got[v]) < 0)
			goto out;
		if (got[v] != bytes) {
			spx_error(SPX_FAIL, "object store GET limit: %llu "
					    "bytes moved, not the snapshot's "
					    "%llu",
				  (unsigned long long)got[v],
				  (unsigned long long)bytes);
			goto out;
		}
	}
	snprintf(name, sizeof(name), "snap-restore-run%d", e->run);
	if (drop_store(e) < 0 ||
	    spxvol(e, name, "restore",
		   (const char *const[]){ "--eager", s2.id, NULL }, restored,
		   SPX_ID_SIZE, &trest) < 0)
		goto out;
	if (!spx_vol_id_valid(restored)) {
		spx_error(SPX_FAIL, "spx-vol restore printed '%s', not a "
				    "volume id",
			  restored);
		*restored = '\0';
		goto out;
	}
	if (vol_digest(e, restored, &res, &nres) < 0)
		goto out;
	if ((bad = digest_diff(res, nres, src, nsrc)) >= 0) {
		spx_error(SPX_FAIL, "the volume restored from %s "
				    "does not hold the snapshotted bytes: "
				    "chunk %lld (at byte %llu) differs",
			  s2.id, (long long)bad,
			  (unsigned long long)bad * CHUNK);
		goto out;
	}

	add(b, "block.snap.first.uploaded_bytes", "snapshot",
	    "first snapshot: bytes uploaded", (double)s1.uploaded_bytes,
	    "bytes", false);
	add(b, "block.snap.first.seconds", "snapshot",
	    "first snapshot: seconds", s1.secs, "s", false);
	add(b, "block.snap.first.mibs", "snapshot",
	    "first snapshot: MiB/s uploaded",
	    s1.uploaded_bytes / MIB / s1.secs, "MiB/s", true);
	add(b, "block.snap.incr.changed_bytes", "limit",
	    "incremental snapshot: bytes changed since the first",
	    (double)wrote, "bytes", false);
	add(b, "block.snap.incr.read_bytes", "snapshot",
	    "incremental snapshot: bytes read from the volume",
	    (double)s2.read * CHUNK, "bytes", false);
	add(b, "block.snap.incr.uploaded_bytes", "snapshot",
	    "incremental snapshot: bytes uploaded", (double)s2.uploaded_bytes,
	    "bytes", false);
	add(b, "block.snap.incr.seconds", "snapshot",
	    "incremental snapshot: seconds", s2.secs, "s", false);
	add(b, "block.snap.incr.mibs", "snapshot",
	    "incremental snapshot: MiB/s uploaded",
	    s2.uploaded_bytes / MIB / s2.secs, "MiB/s", true);
	add(b, "block.snap.restore.bytes", "snapshot",
	    "restore --eager: bytes restored", (double)bytes, "bytes", true);
	add(b, "block.snap.restore.seconds", "snapshot",
	    "restore --eager: seconds", trest, "s", false);
	add(b, "block.snap.restore.mibs", "snapshot", "restore --eager: MiB/s",
	    bytes / MIB / trest, "MiB/s", true);
	add(b, "block.snap.limit.get.seconds", "limit",
	    "object store GET of the same chunks: seconds", tget[GET_ALONE], "s",
	    false);
	add(b, "block.snap.limit.get.mibs", "limit",
	    "object store GET of the same chunks: MiB/s",
	    bytes / MIB / tget[GET_ALONE], "MiB/s", true);
	add(b, "block.snap.limit.getsha.mibs", "limit",
	    "object store GET and SHA-256 check of the same chunks: MiB/s",
	    bytes / MIB / tget[GET_CHECK], "MiB/s", true);
	add(b, "block.snap.limit.getwrite.mibs", "limit",
	    "object store GET of the same chunks, each written to the disk: "
	    "MiB/s",
	    bytes / MIB / tget[GET_WRITE], "MiB/s", true);
	add(b, "block.snap.limit.write.mibs", "limit",
	    "the same bytes written to the disk, no GET: MiB/s",
	    bytes / MIB / tget[WRITE_ALONE], "MiB/s", true);
	{
		char f[32], c[32], u[32], r[32], g[32], h[32], d[32], w[32];

		printf("  snapshots: first %s MiB uploaded in %.2f s; second, "
		       "%s MiB changed: %s MiB uploaded (%s) in %.2f s; "
		       "restore --eager %s MiB/s, GET %s MiB/s (with SHA-256 "
		       "%s MiB/s, with writes %s MiB/s; writes alone %s "
		       "MiB/s); the restored volume held the snapshotted "
		       "bytes\n",
		       blk_commas(s1.uploaded_bytes / MIB, 0, f, sizeof(f)),
		       s1.secs, blk_commas(wrote / MIB, 0, c, sizeof(c)),
		       blk_commas(s2.uploaded_bytes / MIB, 0, u, sizeof(u)),
		       s2.incremental ? "incremental" : "NOT incremental",
		       s2.secs,
		       blk_commas(bytes / MIB / trest, 0, r, sizeof(r)),
		       blk_commas(bytes / MIB / tget[GET_ALONE], 0, g, sizeof(g)),
		       blk_commas(bytes / MIB / tget[GET_CHECK], 0, h, sizeof(h)),
		       blk_commas(bytes / MIB / tget[GET_WRITE], 0, d, sizeof(d)),
		       blk_commas(bytes / MIB / tget[WRITE_ALONE], 0, w,
				  sizeof(w)));
	}
	rc = 0;
out:
	free(src);
	free(res);
	spx_snap_manifest_release(&m);
	return rc;
}

/* Remove what the run made: the volumes, the snapshots and, by a
 * collection, their chunks. */
static int snap_clean(struct snapenv *e, const char *vol, const char *restored,
		      char snaps[2][SPX_ID_SIZE])
{
	const char *const steps[][3] = {
		{ "rm", restored, NULL },
		{ "rm", vol, NULL },
		{ "snapshot-rm", snaps[0], NULL },
		{ "snapshot-rm", snaps[1], NULL },
		{ "snapshot-gc", "--wait", NULL },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(steps); i++) {
		char name[64];

		if (!*steps[i][1])
			continue;
		snprintf(name, sizeof(name), "snap-clean%zu-run%d", i, e->run);
		if (spxvol(e, name, steps[i][0], &steps[i][1], NULL, 0,
			   NULL) < 0)
			return -1;
	}
	return 0;
}

int blk_snap_run(struct blk *b)
{
	struct snapenv e;
	char vol[SPX_ID_SIZE] = "", restored[SPX_ID_SIZE] = "";
	char snaps[2][SPX_ID_SIZE] = { "", "" };
	int rc = -1;

	if (env_open(&e, b) == 0 && snap_steps(&e, vol, restored, snaps) == 0)
		rc = 0;
	/* A failed run leaves its volumes for --keep; the scratch
	 * directory goes otherwise. */
	if (rc == 0 && snap_clean(&e, vol, restored, snaps) < 0)
		rc = -1;
	if (rc < 0)
		spx_error_prefix("snapshots");
	env_close(&e);
	return rc;
}

/* ---- the report ---- */

/* One value: bytes ('b') in MiB, seconds ('s') with two decimals, a
 * rate ('r') in MiB/s; unit: with the unit. */
static const char *val(double x, int kind, bool unit, char *out, size_t n)
{
	char v[48];

	if (kind == 's')
		snprintf(v, sizeof(v), "%.2f", x);
	else if (kind == 'b')
		blk_commas(x / MIB, x < 100 * MIB ? 1 : 0, v, sizeof(v));
	else
		blk_commas(x, x < 100 ? 1 : 0, v, sizeof(v));
	snprintf(out, n, "%s%s", v,
		 !unit	       ? ""
		 : kind == 's' ? " s"
		 : kind == 'b' ? " MiB"
			       : " MiB/s");
	return out;
}

/* A figure's median and each run's: "2,048 MiB (2,048 / 2,048)". */
static void fig(struct spx_buf *o, const struct spx_bench_stat *s, int kind)
{
	char v[64];

	if (!s) {
		spx_buf_adds(o, "-");
		return;
	}
	spx_buf_adds(o, val(s->median, kind, true, v, sizeof(v)));
	if (s->n < 2)
		return;
	for (size_t i = 0; i < s->n; i++)
		spx_buf_addf(o, "%s%s", i ? " / " : " (",
			     val(s->values[i], kind, false, v, sizeof(v)));
	spx_buf_adds(o, ")");
}

void blk_snap_report(const struct blk *b, const struct spx_bench_runs *rs,
		     const struct spx_bench_stat *s, size_t n,
		     struct blk_tally *t, struct spx_buf *md)
{
	static const char *const ids[] = {
		"block.snap.first.uploaded_bytes",
		"block.snap.first.seconds",
		"block.snap.first.mibs",
		"block.snap.incr.changed_bytes",
		"block.snap.incr.read_bytes",
		"block.snap.incr.uploaded_bytes",
		"block.snap.incr.seconds",
		"block.snap.incr.mibs",
		"block.snap.restore.bytes",
		"block.snap.restore.seconds",
		"block.snap.restore.mibs",
		"block.snap.limit.get.mibs",
		"block.snap.limit.getsha.mibs",
		"block.snap.limit.getwrite.mibs",
		"block.snap.limit.write.mibs",
	};
	static const char kinds[] = "bsrbbbsrbsrrrrr";
	struct spx_buf c[SPX_ARRAY_SIZE(ids)];
	struct spx_buf up = SPX_BUF_INIT, rest = SPX_BUF_INIT;
	char vs[32], ch[32], da[32], rg[32], ru[64], rr[64], rh[64], rd[64];
	char rw[64], wg[64];
	uint64_t region = b->snap_changed / REGIONS;
	double tol = 0.1 + (double)REGIONS * CHUNK / b->snap_changed, med, wmed;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(ids); i++) {
		c[i] = (struct spx_buf)SPX_BUF_INIT;
		fig(&c[i], spx_bench_stat_find(s, n, ids[i]), kinds[i]);
	}
	blk_mib_str(b->snap_size, vs, sizeof(vs));
	blk_mib_str(b->snap_changed, ch, sizeof(ch));
	blk_mib_str(2 * b->snap_changed, da, sizeof(da));
	blk_mib_str(region, rg, sizeof(rg));
	/* uploaded over changed: about 1, both ways. */
	med = blk_ratio(rs, "block.snap.incr.uploaded_bytes",
			"block.snap.incr.changed_bytes", false, ru,
			sizeof(ru));
	if (!isnan(med)) {
		bool ok = fabs(med - 1) <= tol;

		spx_buf_addf(&up, "%s (about the bytes changed: within 10%% "
				  "plus a chunk a region)",
			     ok ? "met" : "NOT MET");
		t->met += ok;
		t->unmet += !ok;
	}
	med = blk_ratio(rs, "block.snap.restore.mibs",
			"block.snap.limit.get.mibs", true, rr, sizeof(rr));
	/* A restore writes every byte it GETs: where the disk writes them
	 * at under half the GET rate, the target is beyond any restore
	 * here, and what binds is that write rate. */
	blk_ratio(rs, "block.snap.restore.mibs", "block.snap.limit.write.mibs",
		  true, rw, sizeof(rw));
	wmed = blk_ratio(rs, "block.snap.limit.write.mibs",
			 "block.snap.limit.get.mibs", true, wg, sizeof(wg));
	if (!isnan(med) && !isnan(wmed) && wmed < 0.5 && med < 0.5) {
		spx_buf_addf(&rest, "limit not resolved (>= 50%% of GET: this "
				    "disk writes the bytes at %s of GET)",
			     wg);
		t->unresolved++;
	} else {
		blk_judge(&rest, t, med, false, 0.5, ">= 50% of GET");
	}
	blk_ratio(rs, "block.snap.restore.mibs", "block.snap.limit.getsha.mibs",
		  true, rh, sizeof(rh));
	blk_ratio(rs, "block.snap.restore.mibs",
		  "block.snap.limit.getwrite.mibs", true, rd, sizeof(rd));

	printf("--- snapshots: a %s volume, %s of data, %s changed in %d "
	       "regions ---\n",
	       vs, da, ch, REGIONS);
	printf("  first snapshot: uploaded %s in %s, %s\n", c[0].p, c[1].p,
	       c[2].p);
	printf("  incremental snapshot: changed %s | read %s | uploaded %s in "
	       "%s, %s\n      uploaded/changed %s%s%s\n",
	       c[3].p, c[4].p, c[5].p, c[6].p, c[7].p, ru, up.len ? " | " : "",
	       up.p);
	printf("  restore --eager: %s in %s, %s | object store GET (%d "
	       "threads) %s | GET and SHA-256 check %s | GET and write %s | "
	       "writes alone %s\n"
	       "      restore/GET %s | restore/(GET and SHA-256) %s | "
	       "restore/(GET and write) %s | restore/(writes alone) %s%s%s\n",
	       c[8].p, c[9].p, c[10].p, SPX_SNAP_FETCHERS, c[11].p, c[12].p,
	       c[13].p, c[14].p, rr, rh, rd, rw, rest.len ? " | " : "",
	       rest.p);
	printf("== snapshots: every restored volume held the snapshotted "
	       "bytes (SHA-256 of each %u KiB chunk, against the volume's "
	       "before it was removed and the snapshot's manifest)\n",
	       CHUNK >> 10);

	spx_buf_addf(md,
		     "\nSnapshots, in each run on the same node: a thin "
		     "volume of %s, %s of random bytes written through "
		     "spx-vol serve (fio's nbd engine), a first snapshot; "
		     "then %s rewritten in %d regions of %s, each starting "
		     "%u KiB past a %u KiB chunk boundary (so one chunk more "
		     "than its size), and a second snapshot, which the "
		     "volume's change tracking makes incremental; the volume "
		     "removed and the second snapshot restored with "
		     "`spx-vol restore --eager`. The object store is the "
		     "node's (lib/obj, on the same file system); its GET rate "
		     "is measured in the same run for the same chunks, with "
		     "the restore's %d threads, alone and with the SHA-256 "
		     "check a restore makes of every chunk, each from the "
		     "disk (the store's files flushed and out of the page "
		     "cache). A restore also writes every byte to the same "
		     "disk: the third limit GETs the chunks as the first and "
		     "writes each where the restore would, into an allocated "
		     "scratch file (O_DIRECT), synced at the end: the bytes "
		     "moved without the restore's check and bookkeeping. "
		     "The fourth writes the same bytes as the third with no "
		     "GET, up to %d adjacent chunks in one write as the "
		     "restore does: a restore writes every byte it fetches, so it is "
		     "never faster than that; where that write rate is under "
		     "half the GET rate, no restore can meet the target on "
		     "this disk, and its verdict is \"limit not resolved\". "
		     "Bytes uploaded are the engine's report (`spx-vol "
		     "snapshot --json`); bytes changed are what fio wrote.\n\n",
		     vs, da, ch, REGIONS, rg, MISALIGN >> 10, CHUNK >> 10,
		     SPX_SNAP_FETCHERS, SPX_SNAP_FILL_RUN);
	spx_buf_adds(md, "| figure | measured | limit (same runs) | ratio | "
			 "verdict |\n|---|---|---|---|---|\n");
	spx_buf_addf(md, "| first snapshot, %s of data: uploaded | %s | | | "
			 "|\n",
		     da, c[0].p);
	spx_buf_addf(md, "| first snapshot: time | %s | | | |\n", c[1].p);
	spx_buf_addf(md, "| first snapshot: rate | %s | | | |\n", c[2].p);
	spx_buf_addf(md, "| incremental snapshot: uploaded | %s | changed: %s "
			 "| %s | %s |\n",
		     c[5].p, c[3].p, ru, up.p);
	spx_buf_addf(md, "| incremental snapshot: read from the volume | %s | "
			 "| | |\n",
		     c[4].p);
	spx_buf_addf(md, "| incremental snapshot: time | %s | | | |\n", c[6].p);
	spx_buf_addf(md, "| incremental snapshot: rate | %s | | | |\n", c[7].p);
	spx_buf_addf(md, "| restore --eager: bytes | %s | | | |\n", c[8].p);
	spx_buf_addf(md, "| restore --eager: time | %s | | | |\n", c[9].p);
	spx_buf_addf(md, "| restore --eager: rate | %s | object store GET, %d "
			 "threads: %s | %s | %s |\n",
		     c[10].p, SPX_SNAP_FETCHERS, c[11].p, rr, rest.p);
	spx_buf_addf(md, "| restore --eager: rate | %s | GET and SHA-256 "
			 "check, %d threads: %s | %s | |\n",
		     c[10].p, SPX_SNAP_FETCHERS, c[12].p, rh);
	spx_buf_addf(md, "| restore --eager: rate | %s | GET and write of "
			 "each chunk, %d threads: %s | %s | |\n",
		     c[10].p, SPX_SNAP_FETCHERS, c[13].p, rd);
	spx_buf_addf(md, "| restore --eager: rate | %s | the same bytes "
			 "written alone, %d threads: %s | %s | |\n",
		     c[10].p, SPX_SNAP_FETCHERS, c[14].p, rw);
	spx_buf_addf(md, "| the same bytes written alone | %s | object store "
			 "GET: %s | %s | |\n",
		     c[14].p, c[11].p, wg);
	spx_buf_addf(md, "\nEvery restored volume held the snapshotted bytes: "
			 "the SHA-256 of each %u KiB chunk with data matched "
			 "the volume's, taken before it was removed, and the "
			 "snapshot's manifest.\n",
		     CHUNK >> 10);
	for (size_t i = 0; i < SPX_ARRAY_SIZE(ids); i++)
		spx_buf_release(&c[i]);
	spx_buf_release(&up);
	spx_buf_release(&rest);
}
