/* track.c: chunk tracking shared by the processes of a volume (contract
 * in track.h). */
#include "spx.h"

#include <jansson.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "file.h"
#include "vol/track.h"
#include "vol/vol.h"
#include "proc.h"

#define MAGIC "spxtrk1\n"
#define HDR 4096u
#define GROUP 64u /* bytes: 8 planes of one 64-bit word */
#define STRIPES 64
/* The map reserves room for the largest volume, so that it never moves
 * when the volume grows; only the file's length is real. */
#define MAP_LEN (HDR + (SPX_VOL_SIZE_MAX / SPX_SNAP_CHUNK / 64) * GROUP)
/* How long a snapshot waits for the writes in flight to drain. */
#define DRAIN_MS 60000

struct hdr {
	char magic[8];
	uint32_t chunk;
	uint32_t pad0;
	uint64_t pad1[6];
	/* From here on: coordination, not durable. */
	uint32_t pausing;	/* a snapshot holds writers back */
	uint32_t inflight;	/* writes between _begin and _end */
	uint32_t session_gen;	/* a new cow file */
	uint32_t err_seq;	/* odd while last_error is written */
	uint64_t fetch_errors;
	int64_t last_error_ms;
	char last_error[200];
	/* Fetches that found their chunk lost (zero in a map made before
	 * this field: the header page is zeros past it). */
	uint64_t lost_fetches;
	char lost[200];		/* the last one's message (under err_seq) */
};

struct spx_vol_track {
	char *dir;
	int fd;		/* track */
	int lockfd;	/* lock */
	int datafd;	/* data, read-only: copies and captures */
	int cowfd;	/* cow of session cow_gen, or -1 */
	uint32_t cow_gen;
	unsigned char *map;
	struct hdr *h;
	uint64_t nchunks;
	/* Group commit of DIRTY marks. */
	pthread_mutex_t sync_mu;
	uint64_t mark_seq, synced_seq;
	/* Threads of this process share lockfd, whose OFD locks do not
	 * exclude each other: these do. */
	pthread_mutex_t stripe[STRIPES];
	pthread_mutex_t cow_mu, err_mu;
	char *buf;	/* one chunk, for copies (under cow_mu) */
};

static uint64_t nchunks_of(uint64_t size)
{
	return (size + SPX_SNAP_CHUNK - 1) / SPX_SNAP_CHUNK;
}

static uint64_t file_len(uint64_t size)
{
	return HDR + (nchunks_of(size) + 63) / 64 * GROUP;
}

static char *at(const char *dir, const char *name)
{
	return spx_xprintf("%s/%s", dir, name);
}

static int lock_byte(int fd, int cmd, short type, off_t where)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET,
			   .l_start = where, .l_len = 1 };
	int rc;

	while ((rc = fcntl(fd, cmd, &l)) < 0 && errno == EINTR)
		;
	return rc;
}

/* Is byte where of fd's file locked by another open file? */
static bool held(int fd, off_t where)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			   .l_start = where, .l_len = 1 };

	if (fcntl(fd, F_OFD_GETLK, &l) < 0)
		return true; /* cannot tell: assume the cautious answer */
	return l.l_type != F_UNLCK;
}

/* Write zeros over the first len bytes of fd. */
static int zero_all(int fd, uint64_t len)
{
	static const char z[65536];

	for (uint64_t at = 0; at < len;) {
		size_t n = len - at < sizeof(z) ? (size_t)(len - at) : sizeof(z);
		ssize_t w = pwrite(fd, z, n, (off_t)at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		at += (uint64_t)w;
	}
	return 0;
}

/* Make or grow track; *fresh: it was made (or was not one). */
static int track_size(const char *dir, uint64_t size, bool *fresh_out)
{
	char *p = at(dir, "track"), *lk = at(dir, "lock");
	uint64_t want = file_len(size);
	struct stat st;
	int fd = -1, lfd = -1, rc = -1;
	bool fresh = false;

	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	lfd = open(lk, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || lfd < 0 || fstat(fd, &st) < 0) {
		spx_error_errno(SPX_FAIL, "cannot open '%s'", fd < 0 ? p : lk);
		goto out;
	}
	if ((uint64_t)st.st_size < HDR) {
		fresh = true;
	} else {
		char m[8];

		if (pread(fd, m, 8, 0) != 8 || memcmp(m, MAGIC, 8))
			fresh = true;
	}
	/* Reset in place, never cut short: another process may have it
	 * mapped, and a page past the end would be SIGBUS there. */
	if (fresh && (uint64_t)st.st_size && zero_all(fd, (uint64_t)st.st_size) < 0) {
		spx_error_errno(SPX_FAIL, "cannot reset '%s'", p);
		goto out;
	}
	if (fresh || (uint64_t)st.st_size < want) {
		/* Allocated, not sparse: a page of the map never meets a
		 * full disk (that would be SIGBUS). */
		int e = posix_fallocate(fd, 0, (off_t)want);

		if (e) {
			errno = e;
			spx_error_errno(SPX_FAIL, "cannot grow '%s'", p);
			goto out;
		}
	}
	if (fresh) {
		struct hdr h = { 0 };

		memcpy(h.magic, MAGIC, 8);
		h.chunk = SPX_SNAP_CHUNK;
		if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
			spx_error_errno(SPX_FAIL, "cannot write '%s'", p);
			goto out;
		}
	}
	if (fdatasync(fd) < 0) {
		spx_error_errno(SPX_FAIL, "cannot sync '%s'", p);
		goto out;
	}
	rc = fresh ? spx_fsync_dir(dir) : 0;
	*fresh_out = fresh;
	if (rc == 0 && fresh && (uint64_t)st.st_size >= HDR) {
		/* A track that was there but unreadable counted nothing. */
		spx_log(SPX_LOG_WARN, "vol: '%s' was not a track file: the "
				      "next snapshot reads the whole volume",
			p);
	}
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	free(p);
	free(lk);
	return rc;
}

int spx_vol_track_size(const char *dir, uint64_t size)
{
	bool fresh;

	return track_size(dir, size, &fresh);
}

static int invalidate(void *ctx, struct spx_vol_snapstate *s)
{
	if (!s->valid)
		return 1;
	s->valid = false;
	return 0;
}

int spx_vol_track_open(const char *dir, uint64_t size, unsigned flags,
		       struct spx_vol_track **out)
{
	struct spx_vol_track *t;
	char *p = at(dir, "track"), *lk = at(dir, "lock"), *d = at(dir, "data");
	struct stat st;
	char m[8];
	bool made = false;
	int rc = -1;

	*out = NULL;
	if (stat(p, &st) < 0 && (errno != ENOENT || !(flags & SPX_TRACK_CREATE))) {
		rc = spx_error_errno(errno == ENOENT ? SPX_NO : SPX_FAIL,
				     "cannot open '%s'", p);
		free(p), free(lk), free(d);
		return rc;
	}
	/* Made now, grown, or found damaged and made again. */
	if (track_size(dir, size, &made) < 0) {
		free(p), free(lk), free(d);
		return -1;
	}
	t = spx_calloc(1, sizeof(*t));
	t->dir = spx_strdup(dir);
	t->fd = t->lockfd = t->datafd = t->cowfd = -1;
	pthread_mutex_init(&t->sync_mu, NULL);
	pthread_mutex_init(&t->cow_mu, NULL);
	pthread_mutex_init(&t->err_mu, NULL);
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&t->stripe[i], NULL);
	t->nchunks = nchunks_of(size);
	t->fd = open(p, O_RDWR | O_CLOEXEC);
	t->lockfd = open(lk, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	t->datafd = open(d, O_RDONLY | O_CLOEXEC);
	if (t->fd < 0 || t->lockfd < 0 || t->datafd < 0) {
		spx_error_errno(SPX_FAIL, "cannot open '%s'",
				t->fd < 0 ? p : t->lockfd < 0 ? lk : d);
		goto out;
	}
	if (pread(t->fd, m, 8, 0) != 8 || memcmp(m, MAGIC, 8)) {
		spx_error(SPX_FAIL, "'%s' is not a track file", p);
		goto out;
	}
	if (made && spx_vol_snapstate_update(dir, invalidate, NULL) < 0)
		goto out;
	t->map = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd,
		      0);
	if (t->map == MAP_FAILED) {
		t->map = NULL;
		spx_error_errno(SPX_FAIL, "cannot map '%s'", p);
		goto out;
	}
	t->h = (struct hdr *)t->map;
	if (t->h->chunk != SPX_SNAP_CHUNK) {
		spx_error(SPX_FAIL, "'%s' counts chunks of %u bytes, not %u", p,
			  t->h->chunk, SPX_SNAP_CHUNK);
		goto out;
	}
	*out = t;
	t = NULL;
	rc = 0;
out:
	spx_vol_track_close(t);
	free(p);
	free(lk);
	free(d);
	return rc;
}

void spx_vol_track_close(struct spx_vol_track *t)
{
	if (!t)
		return;
	if (t->map)
		munmap(t->map, MAP_LEN);
	if (t->fd >= 0)
		close(t->fd);
	if (t->lockfd >= 0)
		close(t->lockfd);
	if (t->datafd >= 0)
		close(t->datafd);
	if (t->cowfd >= 0)
		close(t->cowfd);
	pthread_mutex_destroy(&t->sync_mu);
	pthread_mutex_destroy(&t->cow_mu);
	pthread_mutex_destroy(&t->err_mu);
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_destroy(&t->stripe[i]);
	free(t->buf);
	free(t->dir);
	free(t);
}

uint64_t spx_vol_track_nchunks(const struct spx_vol_track *t)
{
	return __atomic_load_n(&t->nchunks, __ATOMIC_SEQ_CST);
}

int spx_vol_track_resize(struct spx_vol_track *t, uint64_t size)
{
	if (nchunks_of(size) <= spx_vol_track_nchunks(t))
		return 0;
	if (spx_vol_track_size(t->dir, size) < 0)
		return -1;
	__atomic_store_n(&t->nchunks, nchunks_of(size), __ATOMIC_SEQ_CST);
	return 0;
}

const char *spx_vol_track_dir(const struct spx_vol_track *t)
{
	return t->dir;
}

static uint64_t *word(const struct spx_vol_track *t, int plane, uint64_t c)
{
	return (uint64_t *)(t->map + HDR + (c / 64) * GROUP) + plane;
}

bool spx_vol_track_test(const struct spx_vol_track *t, int plane, uint64_t c)
{
	return __atomic_load_n(word(t, plane, c), __ATOMIC_SEQ_CST) &
	       ((uint64_t)1 << (c % 64));
}

bool spx_vol_track_set(struct spx_vol_track *t, int plane, uint64_t c)
{
	uint64_t b = (uint64_t)1 << (c % 64);

	return __atomic_fetch_or(word(t, plane, c), b, __ATOMIC_SEQ_CST) & b;
}

bool spx_vol_track_clear(struct spx_vol_track *t, int plane, uint64_t c)
{
	uint64_t b = (uint64_t)1 << (c % 64);

	return __atomic_fetch_and(word(t, plane, c), ~b, __ATOMIC_SEQ_CST) & b;
}

static uint64_t nwords(const struct spx_vol_track *t)
{
	return (spx_vol_track_nchunks(t) + 63) / 64;
}

uint64_t spx_vol_track_count(const struct spx_vol_track *t, int plane)
{
	uint64_t n = 0;

	for (uint64_t g = 0; g < nwords(t); g++)
		n += (uint64_t)__builtin_popcountll(
			__atomic_load_n(word(t, plane, g * 64), __ATOMIC_RELAXED));
	return n;
}

void spx_vol_track_words(const struct spx_vol_track *t, int plane,
			 uint64_t *out, uint64_t nw)
{
	for (uint64_t g = 0; g < nw && g < nwords(t); g++)
		out[g] = __atomic_load_n(word(t, plane, g * 64), __ATOMIC_SEQ_CST);
}

/* The bits of word g that are chunks of the volume as this handle
 * knows it. */
static uint64_t inside(const struct spx_vol_track *t, uint64_t g)
{
	uint64_t n = spx_vol_track_nchunks(t);

	if ((g + 1) * 64 <= n)
		return UINT64_MAX;
	return g * 64 >= n ? 0 : ((uint64_t)1 << (n % 64)) - 1;
}

static void plane_zero(struct spx_vol_track *t, int plane)
{
	for (uint64_t g = 0; g < nwords(t); g++)
		__atomic_store_n(word(t, plane, g * 64), 0, __ATOMIC_SEQ_CST);
}

int spx_vol_track_sync(struct spx_vol_track *t)
{
	uint64_t seq = __atomic_add_fetch(&t->mark_seq, 1, __ATOMIC_SEQ_CST);
	uint64_t upto;
	int rc = 0;

	pthread_mutex_lock(&t->sync_mu);
	if (t->synced_seq < seq) {
		/* Every mark made before this load is covered. */
		upto = __atomic_load_n(&t->mark_seq, __ATOMIC_SEQ_CST);
		if (fdatasync(t->fd) < 0)
			rc = spx_error_errno(SPX_FAIL, "cannot sync '%s/track'",
					     t->dir);
		else
			t->synced_seq = upto;
	}
	pthread_mutex_unlock(&t->sync_mu);
	return rc;
}

/* ---- snap.json ---- */

/* "" or a boot id as the kernel writes it: 36 of [0-9a-f-]. */
static bool boot_id_valid(const char *b)
{
	size_t n = strlen(b);

	return !n || (n == 36 && strspn(b, "0123456789abcdef-") == 36);
}

int spx_vol_snapstate_parse(const char *buf, size_t n,
			    struct spx_vol_snapstate *out)
{
	json_t *o, *b, *v, *s, *w;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (n > 1024)
		return spx_error(SPX_FAIL, "not a snapshot state");
	o = json_loadb(buf, n, JSON_REJECT_DUPLICATES, NULL);
	b = o ? json_object_get(o, "base") : NULL;
	v = o ? json_object_get(o, "valid") : NULL;
	s = o ? json_object_get(o, "source") : NULL;
	/* Optional: a state written before writers recorded their boot. */
	w = o ? json_object_get(o, "writer_boot") : NULL;
	if (json_is_string(b) && json_is_boolean(v) && json_is_string(s) &&
	    (!*json_string_value(b) ||
	     spx_id_valid(json_string_value(b), "snap")) &&
	    (!*json_string_value(s) ||
	     spx_id_valid(json_string_value(s), "snap")) &&
	    (!w || (json_is_string(w) && boot_id_valid(json_string_value(w))))) {
		snprintf(out->base, sizeof(out->base), "%s",
			 json_string_value(b));
		snprintf(out->source, sizeof(out->source), "%s",
			 json_string_value(s));
		snprintf(out->writer_boot, sizeof(out->writer_boot), "%s",
			 w ? json_string_value(w) : "");
		out->valid = json_is_true(v);
		rc = 0;
	} else {
		spx_error(SPX_FAIL, "not a snapshot state");
	}
	json_decref(o);
	return rc;
}

int spx_vol_snapstate_read(const char *dir, struct spx_vol_snapstate *out)
{
	char *p = at(dir, "snap.json");
	struct spx_buf b = SPX_BUF_INIT;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (spx_buf_read_file(&b, p, 1024) < 0) {
		if (errno == ENOENT)
			spx_error_clear();
		else
			rc = -1;
	} else if (spx_vol_snapstate_parse(b.p, b.len, out) < 0) {
		rc = spx_error(SPX_FAIL, "'%s' is corrupt", p);
	}
	spx_buf_release(&b);
	free(p);
	return rc;
}

int spx_vol_snapstate_update(const char *dir,
			     int (*fn)(void *ctx, struct spx_vol_snapstate *s),
			     void *ctx)
{
	char *lk = at(dir, "lock"), *p = at(dir, "snap.json"), *text = NULL;
	struct spx_vol_snapstate s;
	int fd = open(lk, O_RDWR | O_CREAT | O_CLOEXEC, 0600), rc = -1, r;
	json_t *o = NULL;

	/* An open file of its own: OFD locks exclude threads too. */
	if (fd < 0 || lock_byte(fd, F_OFD_SETLKW, F_WRLCK,
				SPX_TRACK_LOCK_META) < 0) {
		spx_error_errno(SPX_FAIL, "cannot lock '%s'", lk);
		goto out;
	}
	if (spx_vol_snapstate_read(dir, &s) < 0)
		goto out;
	if ((r = fn(ctx, &s)) != 0) {
		rc = r > 0 ? 0 : -1;
		goto out;
	}
	o = json_pack("{s:s, s:b, s:s, s:s}", "base", s.base, "valid",
		      s.valid, "source", s.source, "writer_boot",
		      s.writer_boot);
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	rc = text ? spx_write_file(p, text, strlen(text), 0600, false)
		  : spx_error(SPX_FAIL, "cannot encode '%s'", p);
out:
	if (fd >= 0)
		close(fd);
	json_decref(o);
	free(text);
	free(lk);
	free(p);
	return rc;
}

/* ---- the writer ---- */

/* This boot of the machine, as the kernel names it. */
static int boot_id(char out[40])
{
	struct spx_buf b = SPX_BUF_INIT;
	int rc = 0;

	if (spx_buf_read_file(&b, "/proc/sys/kernel/random/boot_id", 64) < 0)
		return -1;
	while (b.len && (b.p[b.len - 1] == '\n'))
		b.len--;
	if (b.len != 36) {
		rc = spx_error(SPX_FAIL, "cannot read the boot id");
	} else {
		memcpy(out, b.p, 36);
		out[36] = 0;
		if (!boot_id_valid(out))
			rc = spx_error(SPX_FAIL, "cannot read the boot id");
	}
	spx_buf_release(&b);
	return rc;
}

struct boot_mark {
	const char *now;
	bool lost;
};

static int mark_boot(void *ctx, struct spx_vol_snapstate *s)
{
	struct boot_mark *m = ctx;

	if (!strcmp(s->writer_boot, m->now))
		return 1;
	/* A writer of another boot never closed: the machine went down
	 * under it, and DIRTY marks still in its page cache went too. */
	if (*s->writer_boot && s->valid) {
		s->valid = false;
		m->lost = true;
	}
	snprintf(s->writer_boot, sizeof(s->writer_boot), "%s", m->now);
	return 0;
}

static int clear_boot(void *ctx, struct spx_vol_snapstate *s)
{
	if (!*s->writer_boot)
		return 1;
	s->writer_boot[0] = 0;
	return 0;
}

int spx_vol_track_writer_lock(struct spx_vol_track *t)
{
	char now[40];
	struct boot_mark m = { now, false };

	if (lock_byte(t->lockfd, F_OFD_SETLK, F_WRLCK, SPX_TRACK_LOCK_WRITER) <
	    0) {
		if (errno == EAGAIN || errno == EACCES)
			return spx_error(SPX_NO,
					 "'%s' is open for writing by another "
					 "process",
					 t->dir);
		return spx_error_errno(SPX_FAIL, "cannot lock '%s/lock'",
				       t->dir);
	}
	if (boot_id(now) < 0 ||
	    spx_vol_snapstate_update(t->dir, mark_boot, &m) < 0) {
		lock_byte(t->lockfd, F_OFD_SETLK, F_UNLCK,
			  SPX_TRACK_LOCK_WRITER);
		return -1;
	}
	if (m.lost)
		spx_log(SPX_LOG_WARN, "vol: '%s' was open for writing when the "
				      "machine went down: its next snapshot "
				      "reads the whole volume",
			t->dir);
	/* A writer killed mid-write left its count: no write of it is in
	 * flight any more. */
	__atomic_store_n(&t->h->inflight, 0, __ATOMIC_SEQ_CST);
	return 0;
}

void spx_vol_track_writer_unlock(struct spx_vol_track *t)
{
	/* The marks durable first; if they cannot be, the boot stays
	 * recorded, which is only ever too cautious. */
	if (spx_vol_track_sync(t) < 0 ||
	    spx_vol_snapstate_update(t->dir, clear_boot, NULL) < 0)
		spx_log(SPX_LOG_WARN, "vol: %s", spx_errmsg());
	lock_byte(t->lockfd, F_OFD_SETLK, F_UNLCK, SPX_TRACK_LOCK_WRITER);
}

static void futex_wake(uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* A snapshot that died leaves writers paused and chunks PENDING: whoever
 * sees the SESSION lock free (and holds it shared meanwhile, so that no
 * new snapshot starts under it) clears both. */
static void reap(struct spx_vol_track *t)
{
	int fd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), lfd;

	if (fd < 0)
		return;
	lfd = openat(fd, "lock", O_RDWR | O_CLOEXEC);
	close(fd);
	if (lfd < 0)
		return;
	if (lock_byte(lfd, F_OFD_SETLK, F_RDLCK, SPX_TRACK_LOCK_SESSION) == 0) {
		plane_zero(t, SPX_TRACK_PENDING);
		__atomic_store_n(&t->h->pausing, 0, __ATOMIC_SEQ_CST);
		futex_wake(&t->h->pausing);
	}
	close(lfd);
}

static void wait_pause(struct spx_vol_track *t)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	unsigned n = 0;

	while (__atomic_load_n(&t->h->pausing, __ATOMIC_SEQ_CST)) {
		syscall(SYS_futex, &t->h->pausing, FUTEX_WAIT, 1, &ts, NULL, 0);
		if (++n % 20 == 0)
			reap(t);
	}
}

static size_t chunk_len(const struct spx_vol_track *t, uint64_t c,
			uint64_t size)
{
	uint64_t off = c * SPX_SNAP_CHUNK;

	return size - off < SPX_SNAP_CHUNK ? (size_t)(size - off)
					   : SPX_SNAP_CHUNK;
}

static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	char *p = buf;

	while (n) {
		ssize_t r = pread(fd, p, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (!r) { /* past the end: zeros */
			memset(p, 0, n);
			break;
		}
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	const char *p = buf;

	while (n) {
		ssize_t r = pwrite(fd, p, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static uint64_t data_size(const struct spx_vol_track *t)
{
	struct stat st;

	return fstat(t->datafd, &st) == 0 ? (uint64_t)st.st_size
					  : t->nchunks * SPX_SNAP_CHUNK;
}

int spx_vol_track_chunk_lock(struct spx_vol_track *t, uint64_t c)
{
	pthread_mutex_lock(&t->stripe[c % STRIPES]);
	if (lock_byte(t->lockfd, F_OFD_SETLKW, F_WRLCK,
		      SPX_TRACK_LOCK_CHUNK + (off_t)c) < 0) {
		pthread_mutex_unlock(&t->stripe[c % STRIPES]);
		return spx_error_errno(SPX_FAIL, "cannot lock chunk %llu of '%s'",
				       (unsigned long long)c, t->dir);
	}
	return 0;
}

void spx_vol_track_chunk_unlock(struct spx_vol_track *t, uint64_t c)
{
	lock_byte(t->lockfd, F_OFD_SETLK, F_UNLCK,
		  SPX_TRACK_LOCK_CHUNK + (off_t)c);
	pthread_mutex_unlock(&t->stripe[c % STRIPES]);
}

/* Copy chunk c to cow before its first write since the snapshot began.
 * A copy that fails costs the snapshot (it finds the chunk neither
 * PENDING nor COWED and fails), never the write. */
static void cow(struct spx_vol_track *t, uint64_t c)
{
	if (spx_vol_track_chunk_lock(t, c) < 0) {
		spx_log(SPX_LOG_WARN, "vol: %s", spx_errmsg());
		spx_vol_track_clear(t, SPX_TRACK_PENDING, c);
		return;
	}
	if (spx_vol_track_test(t, SPX_TRACK_PENDING, c)) {
		uint32_t gen = __atomic_load_n(&t->h->session_gen,
					       __ATOMIC_SEQ_CST);
		size_t len = chunk_len(t, c, data_size(t));
		bool ok = false;

		pthread_mutex_lock(&t->cow_mu);
		if (!held(t->lockfd, SPX_TRACK_LOCK_SESSION)) {
			pthread_mutex_unlock(&t->cow_mu);
			reap(t);
			goto out;
		}
		if (t->cowfd < 0 || t->cow_gen != gen) {
			char *p = at(t->dir, "cow");

			if (t->cowfd >= 0)
				close(t->cowfd);
			t->cowfd = open(p, O_RDWR | O_CLOEXEC);
			t->cow_gen = gen;
			free(p);
		}
		if (!t->buf)
			t->buf = spx_malloc(SPX_SNAP_CHUNK);
		if (t->cowfd >= 0 &&
		    pread_all(t->datafd, t->buf, len, c * SPX_SNAP_CHUNK) == 0 &&
		    pwrite_all(t->cowfd, t->buf, len, c * SPX_SNAP_CHUNK) == 0)
			ok = true;
		if (ok)
			spx_vol_track_set(t, SPX_TRACK_COWED, c);
		else
			spx_log(SPX_LOG_WARN,
				"vol: %s: cannot keep chunk %llu for the "
				"snapshot being taken (%s): that snapshot will "
				"fail",
				t->dir, (unsigned long long)c, strerror(errno));
		spx_vol_track_clear(t, SPX_TRACK_PENDING, c);
		pthread_mutex_unlock(&t->cow_mu);
	}
out:
	spx_vol_track_chunk_unlock(t, c);
}

/* Count a write in flight unless writers are paused: 0, or 1 (not
 * counted) when they are. */
static int enter(struct spx_vol_track *t)
{
	if (__atomic_load_n(&t->h->pausing, __ATOMIC_SEQ_CST))
		return 1;
	__atomic_add_fetch(&t->h->inflight, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&t->h->pausing, __ATOMIC_SEQ_CST))
		return 0;
	__atomic_sub_fetch(&t->h->inflight, 1, __ATOMIC_SEQ_CST);
	return 1;
}

static int mark(struct spx_vol_track *t, uint64_t off, uint64_t len);

int spx_vol_track_write_try_begin(struct spx_vol_track *t, uint64_t off,
				  uint64_t len)
{
	return enter(t) ? 1 : mark(t, off, len);
}

int spx_vol_track_write_begin(struct spx_vol_track *t, uint64_t off,
			      uint64_t len)
{
	while (enter(t))
		wait_pause(t);
	return mark(t, off, len);
}

/* The chunks of a write counted in flight: DIRTY, and copied for the
 * snapshot that has yet to read them. */
static int mark(struct spx_vol_track *t, uint64_t off, uint64_t len)
{
	uint64_t first, last;

	if (!len)
		return 0;
	first = off / SPX_SNAP_CHUNK;
	last = (off + len - 1) / SPX_SNAP_CHUNK;
	if (last >= spx_vol_track_nchunks(t))
		last = spx_vol_track_nchunks(t) - 1;
	/* In the shared map only: see DIRTY in track.h. */
	for (uint64_t c = first; c <= last; c++)
		if (!spx_vol_track_test(t, SPX_TRACK_DIRTY, c))
			spx_vol_track_set(t, SPX_TRACK_DIRTY, c);
	for (uint64_t c = first; c <= last; c++)
		if (spx_vol_track_test(t, SPX_TRACK_PENDING, c))
			cow(t, c);
	return 0;
}

void spx_vol_track_write_end(struct spx_vol_track *t)
{
	__atomic_sub_fetch(&t->h->inflight, 1, __ATOMIC_SEQ_CST);
}

/* ---- the snapshot ---- */

static void session_unlock(struct spx_vol_track *t)
{
	lock_byte(t->lockfd, F_OFD_SETLK, F_UNLCK, SPX_TRACK_LOCK_SESSION);
	lock_byte(t->lockfd, F_OFD_SETLK, F_UNLCK, SPX_TRACK_LOCK_SNAPPER);
}

static void resume(struct spx_vol_track *t)
{
	__atomic_store_n(&t->h->pausing, 0, __ATOMIC_SEQ_CST);
	futex_wake(&t->h->pausing);
}

/* Writers are held back: wait until the ones in flight are done (a
 * writer that is gone has none). */
static int drain(struct spx_vol_track *t)
{
	int64_t end = spx_mono_ms() + DRAIN_MS;
	struct timespec ts = { 0, 100 * 1000 };

	while (__atomic_load_n(&t->h->inflight, __ATOMIC_SEQ_CST)) {
		if (!held(t->lockfd, SPX_TRACK_LOCK_WRITER))
			return 0;
		if (spx_mono_ms() > end)
			return spx_error(SPX_FAIL,
					 "'%s': writes in flight did not end "
					 "within %d s",
					 t->dir, DRAIN_MS / 1000);
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* A session that did not begin: nothing PENDING, no cow, no lock. */
static void session_fail(struct spx_vol_track *t)
{
	plane_zero(t, SPX_TRACK_PENDING);
	if (t->cowfd >= 0) {
		char *p = at(t->dir, "cow");

		close(t->cowfd);
		t->cowfd = -1;
		unlink(p);
		free(p);
	}
	session_unlock(t);
}

static int new_cow(struct spx_vol_track *t)
{
	char *p = at(t->dir, "cow");
	int rc = 0;

	if (t->cowfd >= 0)
		close(t->cowfd);
	unlink(p);
	t->cowfd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (t->cowfd < 0 ||
	    ftruncate(t->cowfd, (off_t)(t->nchunks * SPX_SNAP_CHUNK)) < 0)
		rc = spx_error_errno(SPX_FAIL, "cannot create '%s'", p);
	free(p);
	__atomic_add_fetch(&t->h->session_gen, 1, __ATOMIC_SEQ_CST);
	return rc;
}

/* Take SNAPPER and SESSION of t and clean up after a dead snapshot
 * (a new cow). On failure nothing is held. */
static int session_lock(struct spx_vol_track *t)
{
	if (lock_byte(t->lockfd, F_OFD_SETLK, F_WRLCK, SPX_TRACK_LOCK_SNAPPER) <
	    0) {
		if (errno == EAGAIN || errno == EACCES)
			return spx_error(SPX_NO,
					 "a snapshot of '%s' is being taken",
					 t->dir);
		return spx_error_errno(SPX_FAIL, "cannot lock '%s/lock'",
				       t->dir);
	}
	if (lock_byte(t->lockfd, F_OFD_SETLKW, F_WRLCK, SPX_TRACK_LOCK_SESSION) <
	    0) {
		spx_error_errno(SPX_FAIL, "cannot lock '%s/lock'", t->dir);
		lock_byte(t->lockfd, F_OFD_SETLK, F_UNLCK,
			  SPX_TRACK_LOCK_SNAPPER);
		return -1;
	}
	/* What a dead snapshot left. */
	plane_zero(t, SPX_TRACK_PENDING);
	plane_zero(t, SPX_TRACK_COWED);
	if (new_cow(t) < 0) {
		session_fail(t);
		return -1;
	}
	return 0;
}

/* Writers of t are paused and drained: let pick choose, and move DIRTY
 * to TAKEN durably. PENDING is set by mark(). */
static int session_pick(struct spx_vol_track *t, spx_vol_track_pick_fn pick,
			void *ctx, uint64_t *changed, uint64_t *capture)
{
	uint64_t nw = nwords(t);

	for (uint64_t g = 0; g < nw; g++)
		changed[g] = *word(t, SPX_TRACK_DIRTY, g * 64) |
			     *word(t, SPX_TRACK_TAKEN, g * 64);
	if (t->nchunks % 64 && nw)
		changed[nw - 1] &= ((uint64_t)1 << (t->nchunks % 64)) - 1;
	if (pick(ctx, t, changed, capture, t->nchunks) < 0)
		return -1;
	/* TAKEN is durable before DIRTY forgets: a crash from here on still
	 * knows every change since base. */
	for (uint64_t g = 0; g < nw; g++)
		__atomic_fetch_or(word(t, SPX_TRACK_TAKEN, g * 64),
				  *word(t, SPX_TRACK_DIRTY, g * 64) & inside(t, g),
				  __ATOMIC_SEQ_CST);
	return spx_vol_track_sync(t);
}

static void session_mark(struct spx_vol_track *t, const uint64_t *capture)
{
	for (uint64_t g = 0; g < nwords(t); g++) {
		/* Chunks past the end (the volume grew meanwhile) stay
		 * DIRTY for the next snapshot. */
		__atomic_fetch_and(word(t, SPX_TRACK_DIRTY, g * 64),
				   ~inside(t, g), __ATOMIC_SEQ_CST);
		__atomic_store_n(word(t, SPX_TRACK_PENDING, g * 64), capture[g],
				 __ATOMIC_SEQ_CST);
	}
}

int spx_vol_track_session_begin_set(struct spx_vol_track *const *t, size_t n,
				    spx_vol_track_pick_fn pick,
				    void *const *ctx)
{
	uint64_t **capture = spx_calloc(n ? n : 1, sizeof(*capture));
	uint64_t *changed = NULL, maxw = 1;
	size_t locked = 0, i;
	int rc = -1;

	for (i = 0; i < n; i++) {
		uint64_t nw = nwords(t[i]);

		if (nw > maxw)
			maxw = nw;
		capture[i] = spx_calloc(nw ? nw : 1, sizeof(uint64_t));
	}
	changed = spx_calloc(maxw, sizeof(uint64_t));
	/* In the caller's order (the volumes' ids): two sets never wait on
	 * each other. */
	for (; locked < n; locked++)
		if (session_lock(t[locked]) < 0)
			goto fail;
	/* Every volume's writers are held back before any is read: no write
	 * to one volume that follows a write to another (the guest waited
	 * for the first) is in without the first. */
	for (i = 0; i < n; i++)
		__atomic_store_n(&t[i]->h->pausing, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		if (drain(t[i]) < 0)
			goto fail;
	/* No write is in flight on any and none starts: the moment. */
	for (i = 0; i < n; i++) {
		memset(changed, 0, maxw * sizeof(uint64_t));
		if (session_pick(t[i], pick, ctx[i], changed, capture[i]) < 0)
			goto fail;
	}
	for (i = 0; i < n; i++) {
		session_mark(t[i], capture[i]);
		resume(t[i]);
	}
	rc = 0;
	goto out;
fail:
	for (i = 0; i < n; i++)
		resume(t[i]);
	for (i = 0; i < locked; i++)
		session_fail(t[i]);
out:
	for (i = 0; i < n; i++)
		free(capture[i]);
	free(capture);
	free(changed);
	return rc;
}

int spx_vol_track_session_begin(struct spx_vol_track *t,
				spx_vol_track_pick_fn pick, void *ctx)
{
	return spx_vol_track_session_begin_set(&t, 1, pick, &ctx);
}

int spx_vol_track_capture(struct spx_vol_track *t, uint64_t c, void *buf,
			  size_t len)
{
	int rc;

	if (spx_vol_track_chunk_lock(t, c) < 0)
		return -1;
	if (spx_vol_track_test(t, SPX_TRACK_PENDING, c)) {
		rc = pread_all(t->datafd, buf, len, c * SPX_SNAP_CHUNK);
		if (rc < 0)
			spx_error_errno(SPX_FAIL, "cannot read '%s/data'", t->dir);
		else
			spx_vol_track_clear(t, SPX_TRACK_PENDING, c);
		spx_vol_track_chunk_unlock(t, c);
		return rc;
	}
	spx_vol_track_chunk_unlock(t, c);
	if (!spx_vol_track_test(t, SPX_TRACK_COWED, c))
		return spx_error(SPX_FAIL,
				 "chunk %llu of '%s' was written before the "
				 "snapshot read it, and its copy failed",
				 (unsigned long long)c, t->dir);
	if (pread_all(t->cowfd, buf, len, c * SPX_SNAP_CHUNK) < 0)
		return spx_error_errno(SPX_FAIL, "cannot read '%s/cow'", t->dir);
	return 0;
}

void spx_vol_track_session_end(struct spx_vol_track *t, bool committed)
{
	char *p = at(t->dir, "cow");

	if (committed) {
		for (uint64_t g = 0; g < nwords(t); g++)
			__atomic_fetch_and(word(t, SPX_TRACK_TAKEN, g * 64),
					   ~inside(t, g), __ATOMIC_SEQ_CST);
		spx_vol_track_sync(t);
	}
	plane_zero(t, SPX_TRACK_PENDING);
	plane_zero(t, SPX_TRACK_COWED);
	if (t->cowfd >= 0) {
		close(t->cowfd);
		t->cowfd = -1;
	}
	unlink(p);
	free(p);
	session_unlock(t);
}

/* ---- status ---- */

void spx_vol_track_status(const struct spx_vol_track *t,
			  struct spx_vol_track_status *out)
{
	memset(out, 0, sizeof(*out));
	out->unfilled = spx_vol_track_count(t, SPX_TRACK_UNFILLED);
	out->fetch_errors =
		__atomic_load_n(&t->h->fetch_errors, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 100; i++) {
		uint32_t s = __atomic_load_n(&t->h->err_seq, __ATOMIC_SEQ_CST);

		if (s & 1)
			continue;
		out->last_error_ms = t->h->last_error_ms;
		memcpy(out->last_error, t->h->last_error,
		       sizeof(out->last_error));
		memcpy(out->lost, t->h->lost, sizeof(out->lost));
		if (__atomic_load_n(&t->h->err_seq, __ATOMIC_SEQ_CST) == s)
			break;
	}
	out->last_error[sizeof(out->last_error) - 1] = 0;
	out->lost[sizeof(out->lost) - 1] = 0;
	out->lost_fetches = __atomic_load_n(&t->h->lost_fetches, __ATOMIC_SEQ_CST);
}

static void fetch_failed(struct spx_vol_track *t, const char *msg, bool lost)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&t->err_mu);
	__atomic_add_fetch(&t->h->err_seq, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&t->h->fetch_errors, 1, __ATOMIC_SEQ_CST);
	t->h->last_error_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	snprintf(t->h->last_error, sizeof(t->h->last_error), "%s", msg);
	if (lost) {
		__atomic_add_fetch(&t->h->lost_fetches, 1, __ATOMIC_SEQ_CST);
		snprintf(t->h->lost, sizeof(t->h->lost), "%s", msg);
	}
	__atomic_add_fetch(&t->h->err_seq, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&t->err_mu);
}

void spx_vol_track_fetch_error(struct spx_vol_track *t, const char *msg)
{
	fetch_failed(t, msg, false);
}

void spx_vol_track_fetch_lost(struct spx_vol_track *t, const char *msg)
{
	fetch_failed(t, msg, true);
}

void spx_vol_track_fetch_ok(struct spx_vol_track *t)
{
	if (!__atomic_load_n(&t->h->last_error_ms, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&t->err_mu);
	__atomic_add_fetch(&t->h->err_seq, 1, __ATOMIC_SEQ_CST);
	t->h->last_error_ms = 0;
	t->h->last_error[0] = 0;
	__atomic_add_fetch(&t->h->err_seq, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&t->err_mu);
}
