/* store.c: opening a store, paths, locks, crash-safe small files,
 * error codes and buckets. */
#include "spx.h"

#include <dirent.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/vfs.h>
#include <openssl/evp.h>

#include "file.h"
#include "hex.h"
#include "id.h"
#include "obj/index.h"
#include "obj/obj_int.h"
#include "proc.h"

/* The decoded bucket records (bucket_read_cached). */
#define BCACHE_SLOTS 256

static uint64_t fnv1a(const char *a, const char *b);

/* Drive 0's b/ directory, held open (O_PATH) for the stats of the two
 * caches below: a lookup relative to it walks the bucket's part of the
 * path only, not the drive's (a stat of a bucket's record was 6% of a
 * 4 KiB GET's CPU, most of it the walk). A new disk mounted at the
 * drive's place is seen within D0B_RECHECK_MS: the directory is looked
 * up by name again then, and a new one replaces the old. A replaced
 * descriptor is closed only with the store, so that no thread's lookup
 * can meet its number reused (one per replacement; `umount -l` lets
 * the old disk go). */
#define D0B_RECHECK_MS 1000

struct obj_d0b {
	pthread_mutex_t mu;
	size_t dlen;		/* strlen(drives[0]) */
	int fd;			/* -1: the full paths are used */
	int64_t checked_ms;
	int *old;
	size_t nold;
};

static void d0b_open(struct spx_obj *s)
{
	struct obj_d0b *d = spx_calloc(1, sizeof(*d));
	char *p = spx_xprintf("%s/b", s->drives[0]);

	pthread_mutex_init(&d->mu, NULL);
	d->dlen = strlen(s->drives[0]);
	d->fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	d->checked_ms = spx_mono_ms();
	free(p);
	s->d0b = d;
}

static void d0b_close(struct spx_obj *s)
{
	struct obj_d0b *d = s->d0b;

	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	for (size_t i = 0; i < d->nold; i++)
		close(d->old[i]);
	free(d->old);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

/* The descriptor of drive 0's b/ now, or -1. */
static int d0b_fd(struct spx_obj *s)
{
	struct obj_d0b *d = s->d0b;
	int64_t now = spx_mono_ms();
	struct stat a, b;
	int fd;

	if (now - __atomic_load_n(&d->checked_ms, __ATOMIC_ACQUIRE) <
	    D0B_RECHECK_MS)
		return __atomic_load_n(&d->fd, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&d->mu);
	if (now - d->checked_ms >= D0B_RECHECK_MS) {
		char *p = spx_xprintf("%s/b", s->drives[0]);

		if (stat(p, &a) < 0 || d->fd < 0 || fstat(d->fd, &b) < 0 ||
		    a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
			fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (d->fd >= 0) {
				d->old = spx_realloc(d->old, (d->nold + 1) *
								     sizeof(int));
				d->old[d->nold++] = d->fd;
			}
			__atomic_store_n(&d->fd, fd, __ATOMIC_RELEASE);
		}
		free(p);
		__atomic_store_n(&d->checked_ms, now, __ATOMIC_RELEASE);
	}
	fd = d->fd;
	pthread_mutex_unlock(&d->mu);
	return fd;
}

/* lstat of path, a path under drive 0's b/, through the held directory
 * when there is one. lstat, as the records' reads open with O_NOFOLLOW:
 * a name turned into a symbolic link never matches a cached record. */
static int d0b_lstat(struct spx_obj *s, const char *path, struct stat *st)
{
	size_t n = s->d0b->dlen;
	int fd = d0b_fd(s);

	if (fd >= 0 && !strncmp(path, s->drives[0], n) &&
	    !strncmp(path + n, "/b/", 3) && path[n + 3])
		return fstatat(fd, path + n + 3, st, AT_SYMLINK_NOFOLLOW);
	return lstat(path, st);
}

/* Decoded object metadata (obj_get_meta_cached): sets of two slots by
 * the hash of the file's path, each stripe of sets under its own lock.
 * Only drive 0's records of up to MCACHE_MAX_FILE bytes (objects of a few
 * KiB, their data inline) are kept, and no more than MCACHE_BUDGET bytes
 * of them (counted by file size): 32 MiB, about 7000 objects of 4 KiB. */
#define MCACHE_SETS 4096
#define MCACHE_LOCKS 64
#define MCACHE_MAX_FILE 8192
#define MCACHE_BUDGET (32u << 20)

struct obj_mcache {
	pthread_mutex_t mu[MCACHE_LOCKS];
	uint64_t bytes;		/* file sizes of the records kept (atomic) */
	struct mset {
		struct mce {
			char *path; /* NULL: free */
			struct spx_file_id id;
			struct spx_obj_meta m;
		} e[2];
		unsigned char next; /* the slot the next new record takes */
	} set[MCACHE_SETS];
};

struct obj_bcache {
	pthread_mutex_t mu;
	struct bce {
		bool used;
		struct spx_file_id id; /* of the record it was decoded from */
		struct spx_obj_bucket b;
	} e[BCACHE_SLOTS];
};

/* The exit status of each code, by -rc. How an API words a code is the
 * API's business (lib/gw/s3.c for S3). */
static const int status_of[] = {
	[0] = SPX_OK,
	[-SPX_OBJ_INTERNAL] = SPX_FAIL,
	[-SPX_OBJ_NO_SUCH_BUCKET] = SPX_NO,
	[-SPX_OBJ_NO_SUCH_KEY] = SPX_NO,
	[-SPX_OBJ_BUCKET_NOT_EMPTY] = SPX_NO,
	[-SPX_OBJ_BUCKET_OWNED] = SPX_NO,
	[-SPX_OBJ_BUCKET_EXISTS] = SPX_NO,
	[-SPX_OBJ_INVALID_BUCKET] = SPX_USAGE,
	[-SPX_OBJ_KEY_TOO_LONG] = SPX_USAGE,
	[-SPX_OBJ_INVALID_ARG] = SPX_USAGE,
	[-SPX_OBJ_INVALID_PART] = SPX_USAGE,
	[-SPX_OBJ_INVALID_PART_ORDER] = SPX_USAGE,
	[-SPX_OBJ_ENTITY_TOO_SMALL] = SPX_USAGE,
	[-SPX_OBJ_NO_SUCH_UPLOAD] = SPX_NO,
	[-SPX_OBJ_NO_SPACE] = SPX_FAIL,
	[-SPX_OBJ_BAD_DIGEST] = SPX_USAGE,
	[-SPX_OBJ_INVALID_RANGE] = SPX_USAGE,
	[-SPX_OBJ_NO_SUCH_VERSION] = SPX_NO,
	[-SPX_OBJ_DELETE_MARKER] = SPX_NO,
	[-SPX_OBJ_INVALID_VERSION] = SPX_USAGE,
	[-SPX_OBJ_PRECONDITION] = SPX_NO,
	[-SPX_OBJ_LOCKED] = SPX_NO,
	[-SPX_OBJ_LOST] = SPX_FAIL,
};
_Static_assert(SPX_ARRAY_SIZE(status_of) == 1 - SPX_OBJ_RC_MIN,
	       "every code has its exit status");

int spx_obj_status(int rc)
{
	if (rc > 0 || rc < SPX_OBJ_RC_MIN)
		return SPX_FAIL;
	return status_of[-rc];
}

int obj_err(int rc, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	spx_error(spx_obj_status(rc), "%s", msg);
	return rc;
}

int obj_errno(const char *fmt, ...)
{
	int e = errno;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (e == ENOSPC || e == EDQUOT)
		return obj_err(SPX_OBJ_NO_SPACE, "%s: %s", msg, strerror(e));
	return obj_err(SPX_OBJ_INTERNAL, "%s: %s", msg, strerror(e));
}

int64_t obj_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int obj_randhex(char *out, size_t nbytes)
{
	unsigned char r[32];

	if (nbytes > sizeof(r) || spx_random(r, nbytes) < 0)
		return obj_err(SPX_OBJ_INTERNAL, "cannot draw random bytes");
	spx_hex_encode(r, nbytes, out);
	return 0;
}

int obj_write_all(int fd, const void *p, size_t n, const char *what)
{
	/* spx_write_all keeps errno: the store's status comes from it. */
	return spx_write_all(fd, p, n, what) < 0
		       ? obj_errno("cannot write '%s'", what)
		       : 0;
}

char *obj_bdir(const struct spx_obj *s, int i, const char *bucket)
{
	return spx_xprintf("%s/b/%s", s->drives[i], bucket);
}

char *obj_kdir(const struct spx_obj *s, int i, const char *bucket,
	       const char *enc)
{
	return spx_xprintf("%s/b/%s/o/%s", s->drives[i], bucket, enc);
}

char *obj_udir(const struct spx_obj *s, int i, const char *bucket,
	       const char *id)
{
	return spx_xprintf("%s/b/%s/u/%s", s->drives[i], bucket, id);
}

void obj_dirs_free(char **dirs, int n)
{
	if (!dirs)
		return;
	for (int i = 0; i < n; i++)
		free(dirs[i]);
	free(dirs);
}

static char *dir_of(const char *path)
{
	const char *sl = strrchr(path, '/');

	return sl ? spx_strndup(path, (size_t)(sl - path)) : spx_strdup(".");
}

/* An error recorded by lib/core, as the engine's code: a full disk is
 * SPX_OBJ_NO_SPACE, anything else SPX_OBJ_INTERNAL. */
static int core_fail(void)
{
	return errno == ENOSPC || errno == EDQUOT ? SPX_OBJ_NO_SPACE
						   : SPX_OBJ_INTERNAL;
}

static int sync_dir(const char *dir)
{
	return spx_fsync_dir(dir) < 0 ? core_fail() : 0;
}

int obj_put_file(const struct spx_obj *s, const char *path, const void *p,
		 size_t n)
{
	return spx_write_file_ordered(path, p, n, 0644, false, s->ordered) < 0
		       ? core_fail()
		       : 0;
}

/* NAME in dir, made as needed. A new directory is synced into its
 * parent after the file in it: one journal commit carries both
 * (spx_mkdirs_late), and where the drives commit in order, the file's
 * own commit carried the directory already. */
static int put_one(const struct spx_obj *s, const char *dir,
		   const char *name, const struct spx_buf *data)
{
	char *path = spx_xprintf("%s/%s", dir, name);
	bool late = false;
	int rc = 0;

	if (spx_mkdirs_late(dir, 0755, &late) < 0)
		rc = obj_errno("cannot create '%s'", dir);
	if (!rc)
		rc = obj_put_file(s, path, data->p, data->len);
	if (!rc && late && !s->ordered && spx_sync_parent(dir) < 0)
		rc = obj_errno("cannot sync '%s'", dir);
	free(path);
	return rc;
}

int obj_put_all(struct spx_obj *s, char **dirs, const char *name,
		const struct spx_buf *data)
{
	/* Drive 0 last: its copy is the commit point. */
	for (int i = s->n - 1; i >= 0; i--) {
		int rc = put_one(s, dirs[i], name, data);

		if (rc)
			return rc;
	}
	return 0;
}

/* ---- flat keys ----
 *
 * A key whose only file would be meta (its current version, its data
 * inline, no other version) is kept flat: D/b/BUCKET/o/ENC is that
 * metadata file itself, not a directory holding it. A new small object
 * is then one file made and one directory synced, where a directory of
 * its own took a mkdir, a rename and a third fsync. The key becomes a
 * directory, under its lock, as soon as it needs one (a data directory,
 * a v- file): the file is linked into a fresh directory as its meta and
 * the two are swapped with renameat2(RENAME_EXCHANGE), so every reader
 * finds the key's meta throughout. A directory never turns flat again;
 * a flat file is made only where the key has nothing (O_TMPFILE, linked
 * in whole) or replaces a flat file. Readers of "meta" look in the
 * directory and, at ENOTDIR, at the key's own name (and look again if
 * that has become a directory meanwhile). */

/* File systems known to have O_TMPFILE and RENAME_EXCHANGE. */
static bool fs_flat_ok(const char *dir)
{
	struct statfs sf;

	if (statfs(dir, &sf) < 0)
		return false;
	switch ((unsigned long)sf.f_type) {
	case 0xEF53:		/* ext2/3/4 */
	case 0x58465342:	/* XFS */
	case 0x9123683E:	/* Btrfs */
	case 0x01021994:	/* tmpfs */
		return true;
	default:
		return false;
	}
}

/* Open file name of key directory kdir to read it: -1 and errno
 * (ENOENT: no such file) when it cannot be. */
static int key_file_open(const char *kdir, const char *name)
{
	for (int round = 0; round < 4; round++) {
		char *p = spx_xprintf("%s/%s", kdir, name);
		struct stat st;
		int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

		free(p);
		if (fd >= 0 || errno != ENOTDIR)
			return fd;
		if (strcmp(name, "meta")) {
			errno = ENOENT;
			return -1;
		}
		fd = open(kdir, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			return -1;
		if (fstat(fd, &st) < 0) {
			int e = errno;

			close(fd);
			errno = e;
			return -1;
		}
		if (S_ISREG(st.st_mode))
			return fd;
		close(fd);
		if (!S_ISDIR(st.st_mode)) {
			errno = EINVAL;
			return -1;
		}
		/* Made a directory since: its meta is there now. */
	}
	errno = EAGAIN;
	return -1;
}

char *obj_key_file(const char *kdir, const char *name)
{
	struct stat st;

	if (!strcmp(name, "meta") && lstat(kdir, &st) == 0 &&
	    S_ISREG(st.st_mode))
		return spx_strdup(kdir);
	return spx_xprintf("%s/%s", kdir, name);
}

int obj_unflat(const char *kdir)
{
	char *parent, *tmp = NULL, *meta = NULL, rnd[17];
	struct stat st;
	int rc = 0;

	if (lstat(kdir, &st) < 0)
		return errno == ENOENT ? 0 : obj_errno("cannot stat '%s'", kdir);
	if (!S_ISREG(st.st_mode))
		return 0;
	if ((rc = obj_randhex(rnd, 8)) < 0)
		return rc;
	parent = dir_of(kdir);
	tmp = spx_xprintf("%s/.cv-%s", parent, rnd);
	meta = spx_xprintf("%s/meta", tmp);
	if (mkdir(tmp, 0755) < 0) {
		rc = obj_errno("cannot create '%s'", tmp);
		goto out;
	}
	/* The same file, a second name: its identity (and so what readers
	 * cached of it) goes with it. */
	if (link(kdir, meta) < 0 || spx_fsync_dir(tmp) < 0 ||
	    renameat2(AT_FDCWD, tmp, AT_FDCWD, kdir, RENAME_EXCHANGE) < 0) {
		rc = obj_errno("cannot make '%s' a directory", kdir);
		unlink(meta);
		rmdir(tmp);
		goto out;
	}
	/* tmp is now the flat file's old name: the directory is in place
	 * once the parent is synced, then the old name can go. */
	if (spx_fsync_dir(parent) < 0)
		rc = core_fail();
	unlink(tmp);
out:
	free(parent);
	free(tmp);
	free(meta);
	return rc;
}

int obj_put_key(struct spx_obj *s, char **dirs, const char *name,
		const struct spx_buf *data, bool flat)
{
	flat = flat && s->flat && !strcmp(name, "meta");
	/* Drive 0 last, as obj_put_all. */
	for (int i = s->n - 1; i >= 0; i--) {
		struct stat st;
		int have = lstat(dirs[i], &st) == 0 ? S_ISREG(st.st_mode) ? 1 : 2
			   : errno == ENOENT ? 0 : -1;
		int rc;

		if (flat && have == 0) {
			if (spx_write_file_ordered(dirs[i], data->p, data->len,
						   0644, true, s->ordered) == 0)
				continue;
			if (errno != EEXIST && errno != ENOENT)
				return core_fail();
			/* A writer made the key's directory meanwhile, or the
			 * bucket has no key directory yet: as a directory. */
			spx_error_clear();
			have = lstat(dirs[i], &st) == 0 && S_ISREG(st.st_mode);
		}
		if (flat && have == 1) {
			rc = obj_put_file(s, dirs[i], data->p, data->len);
			if (rc < 0)
				return rc;
			continue;
		}
		if (have == 1 && (rc = obj_unflat(dirs[i])) < 0)
			return rc;
		if ((rc = put_one(s, dirs[i], name, data)) < 0)
			return rc;
	}
	return 0;
}

/* Read and decode the metadata file open on fd (named path in errors).
 * No fstat: a read shorter than asked is the end of a regular file
 * (metadata is replaced by rename, never grown in place), so a small file
 * costs open, one read, close. */
static int meta_read_fd(int fd, const char *path, struct spx_obj_meta *m)
{
	struct spx_buf b = SPX_BUF_INIT;
	int rc = 0;

	for (;;) {
		size_t want;
		ssize_t r;

		spx_buf_grow(&b, 65536);
		want = b.cap - b.len - 1;
		r = read(fd, b.p + b.len, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = obj_errno("cannot read '%s'", path);
			break;
		}
		spx_buf_setlen(&b, b.len + (size_t)r);
		if (b.len > (80u << 20)) {
			rc = obj_err(SPX_OBJ_INTERNAL, "'%s' is too large", path);
			break;
		}
		if ((size_t)r < want)
			break;
	}
	if (!rc && (rc = spx_obj_meta_decode(b.p, b.len, m)) < 0)
		spx_error_prefix("'%s'", path);
	spx_buf_release(&b);
	return rc;
}

/* The record at path with the identity of the file it was read from
 * (fstat of the one open): 0, or -1 when it cannot be opened, is not a
 * regular file or does not decode. For the caches of drive 0's records,
 * whose entries pair an identity with what was decoded. */
static int meta_read_ident(const char *path, struct stat *st,
			   struct spx_obj_meta *m)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, st) == 0 && S_ISREG(st->st_mode) &&
	    meta_read_fd(fd, path, m) == 0)
		rc = 0;
	close(fd);
	return rc;
}

int obj_meta_at(int dfd, const char *rel, struct spx_obj_meta *m)
{
	size_t n = strlen(rel);
	int fd = -1, rc;

	/* ENC/meta, or ENC itself for a key kept flat (looked at again if it
	 * has become a directory in between). */
	for (int round = 0; round < 4 && fd < 0; round++) {
		char *k;
		struct stat st;

		fd = openat(dfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 || errno != ENOTDIR || n <= 5 ||
		    strcmp(rel + n - 5, "/meta"))
			break;
		k = spx_strndup(rel, n - 5);
		fd = openat(dfd, k, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
					    O_NONBLOCK);
		free(k);
		if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
			errno = ENOTDIR;
		}
	}
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR
			       ? obj_err(SPX_OBJ_NO_SUCH_KEY, "'%s' not found", rel)
			       : obj_errno("cannot open '%s'", rel);
	rc = meta_read_fd(fd, rel, m);
	close(fd);
	return rc;
}

bool obj_drive_here(const struct spx_obj *s, int i)
{
	char *p = spx_xprintf("%s/b", s->drives[i]);
	struct stat st;
	bool here = stat(p, &st) == 0 && S_ISDIR(st.st_mode);

	free(p);
	return here;
}

int obj_get_meta(struct spx_obj *s, char **dirs, const char *name,
		 struct spx_obj_meta *m, int notfound)
{
	int rc = SPX_OBJ_INTERNAL;

	for (int i = 0; i < s->n; i++) {
		char *path = spx_xprintf("%s/%s", dirs[i], name);
		int fd = key_file_open(dirs[i], name);

		if (fd < 0) {
			int e = errno;

			/* Drive 0 answers "not found" for the store, if
			 * it is there: one that is away (not mounted) does
			 * not know, and the others are asked. */
			if (i == 0 && (e == ENOENT || e == ENOTDIR) &&
			    (s->n == 1 || obj_drive_here(s, 0))) {
				free(path);
				return obj_err(notfound, "'%s' not found",
					       name);
			}
			errno = e;
			rc = obj_errno("cannot open '%s'", path);
			free(path);
			continue;
		}
		rc = meta_read_fd(fd, path, m);
		close(fd);
		free(path);
		if (!rc)
			return 0;
	}
	return rc;
}

/* obj_get_meta for reads that come again and again (GET and HEAD of
 * small objects): the rule of the bucket-record cache below, for
 * drive 0's metadata files. A file is never changed in place, and
 * spx_write_file stamps each one to the nanosecond, so a file whose
 * (device, inode, size, mtime) are the ones a record was decoded from
 * holds that record. The identity kept is the open file's (fstat), not
 * the name's: a name can be renamed to another file between a stat and
 * an open, but a file's identity and bytes go together. lstat, so that a
 * name that became a symbolic link is refused as the open refuses it.
 * Anything else, drive 0 failing included, is obj_get_meta. */
static struct mset *mcache_set(struct spx_obj *s, const char *path,
				pthread_mutex_t **mu)
{
	size_t i = (size_t)(fnv1a(path, NULL) % MCACHE_SETS);

	*mu = &s->mc->mu[i % MCACHE_LOCKS];
	return &s->mc->set[i];
}

/* Keep record m of path (which it takes), read from the file of st, in
 * set (mu held): in the slot of an older record of the file, else the
 * older of the two; over the budget, the slot keeps what it has. */
static void mcache_put(struct spx_obj *s, struct mset *set, char *path,
		       const struct stat *st, const struct spx_obj_meta *m)
{
	struct mce *e = set->e[1].path && !strcmp(set->e[1].path, path)
				? &set->e[1]
			: set->e[0].path && !strcmp(set->e[0].path, path)
				? &set->e[0]
				: &set->e[set->next];
	uint64_t had = e->path ? (uint64_t)e->id.size : 0;
	uint64_t now = __atomic_load_n(&s->mc->bytes, __ATOMIC_RELAXED);

	if (now - had + (uint64_t)st->st_size > MCACHE_BUDGET) {
		free(path);
		return;
	}
	set->next = (unsigned char)(e == &set->e[0]);
	if (e->path)
		spx_obj_meta_release(&e->m);
	free(e->path);
	e->path = path;
	spx_file_id_of(st, &e->id);
	spx_obj_meta_copy(&e->m, m);
	__atomic_add_fetch(&s->mc->bytes, (uint64_t)st->st_size - had,
			   __ATOMIC_RELAXED);
}

int obj_get_meta_cached(struct spx_obj *s, char **dirs, const char *name,
			struct spx_obj_meta *m, int notfound)
{
	char *path;
	pthread_mutex_t *mu;
	struct mset *set;
	struct stat st;
	bool hit = false, flat = false;

	/* Small objects are kept flat: their own name first. */
	if (!strcmp(name, "meta")) {
		if (d0b_lstat(s, dirs[0], &st) == 0)
			flat = S_ISREG(st.st_mode);
		else if (errno == ENOENT)
			return obj_err(notfound, "'%s' not found", name);
	}
	path = flat ? spx_strdup(dirs[0]) : spx_xprintf("%s/%s", dirs[0], name);
	set = mcache_set(s, path, &mu);
	if (!flat && d0b_lstat(s, path, &st) < 0) {
		int e0 = errno;

		free(path);
		if (e0 == ENOENT || e0 == ENOTDIR)
			return obj_err(notfound, "'%s' not found", name);
		return obj_get_meta(s, dirs, name, m, notfound);
	}
	/* A record the cache would not keep: the plain read. */
	if (!S_ISREG(st.st_mode) || st.st_size > MCACHE_MAX_FILE) {
		free(path);
		return obj_get_meta(s, dirs, name, m, notfound);
	}
	pthread_mutex_lock(mu);
	for (int w = 0; w < 2 && !hit; w++) {
		struct mce *e = &set->e[w];

		hit = e->path && !strcmp(e->path, path) &&
		      spx_file_id_same(&e->id, &st);
		if (hit)
			spx_obj_meta_copy(m, &e->m);
	}
	pthread_mutex_unlock(mu);
	if (hit) {
		free(path);
		return 0;
	}
	if (meta_read_ident(path, &st, m) < 0) {
		free(path);
		return obj_get_meta(s, dirs, name, m, notfound);
	}
	if (st.st_size > MCACHE_MAX_FILE) {
		free(path);
		return 0;
	}
	pthread_mutex_lock(mu);
	mcache_put(s, set, path, &st, m);
	pthread_mutex_unlock(mu);
	return 0;
}

int obj_rmtree(const char *path)
{
	char why[512];

	if (spx_rmtree(path) == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", spx_errmsg());
	return obj_err(SPX_OBJ_INTERNAL, "%s", why);
}

int obj_discard(const char *path)
{
	char *dir = dir_of(path), *del;
	char rnd[17];
	int rc;

	if ((rc = obj_randhex(rnd, 8)) < 0) {
		free(dir);
		return rc;
	}
	del = spx_xprintf("%s/.del-%s", dir, rnd);
	if (rename(path, del) < 0) {
		rc = errno == ENOENT ? 0 : obj_errno("cannot rename '%s'", path);
	} else {
		rc = sync_dir(dir);
		if (!rc)
			rc = obj_rmtree(del);
	}
	free(del);
	free(dir);
	return rc;
}

/* ---- open ---- */

/* The layout's version, in drive 0's `format`: 2 since flat keys (none,
 * or 1: every key a directory). A store of a newer version is refused, as
 * its files may mean what this code does not know; an older one is
 * marked 2 once this code may keep keys flat in it. */
#define OBJ_FORMAT 2

static int format_check(struct spx_obj *s)
{
	char *p = spx_xprintf("%s/format", s->drives[0]), b[32], *end;
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = 0;
	long v = 1;

	if (fd >= 0) {
		ssize_t n = read(fd, b, sizeof(b) - 1);

		close(fd);
		b[n > 0 ? n : 0] = '\0';
		errno = 0;
		v = strtol(b, &end, 10);
		if (n <= 0 || end == b || errno || v < 1 ||
		    (*end && strcmp(end, "\n")))
			rc = obj_err(SPX_OBJ_INTERNAL,
				     "'%s' does not hold a store format", p);
	} else if (errno != ENOENT) {
		rc = obj_errno("cannot open '%s'", p);
	}
	if (!rc && v > OBJ_FORMAT)
		rc = obj_err(SPX_OBJ_INTERNAL,
			     "the store's format is %ld ('%s'), newer than "
			     "this spx's (%d): use the spx that wrote it",
			     v, p, OBJ_FORMAT);
	if (!rc && v < OBJ_FORMAT && s->flat) {
		snprintf(b, sizeof(b), "%d\n", OBJ_FORMAT);
		if (spx_write_file(p, b, strlen(b), 0644, false) < 0)
			rc = core_fail();
	}
	free(p);
	return rc;
}

int spx_obj_open(const struct spx_obj_opts *o, struct spx_obj **out)
{
	struct spx_obj *s;
	int fd;

	*out = NULL;
	if (o->data < 1 || o->parity < 0 || o->data + o->parity > 32)
		return obj_err(SPX_OBJ_INVALID_ARG, "bad erasure code RS(%d,%d)",
			       o->data, o->parity);
	if (o->ndrives != (size_t)(o->data + o->parity))
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "RS(%d,%d) needs %d drives, not %zu", o->data,
			       o->parity, o->data + o->parity, o->ndrives);
	if (o->block && (o->block < 64 || o->block > (1u << 30)))
		return obj_err(SPX_OBJ_INVALID_ARG, "bad block size %" PRIu32,
			       o->block);
	s = spx_calloc(1, sizeof(*s));
	s->n = (int)o->ndrives;
	s->k = o->data;
	s->m = o->parity;
	s->block = o->block ? o->block : SPX_OBJ_BLOCK_DEFAULT;
	s->inline_max = o->inline_max ? o->inline_max : SPX_OBJ_INLINE_DEFAULT;
	s->min_part = o->min_part ? o->min_part : SPX_OBJ_MIN_PART_DEFAULT;
	s->flags = o->flags;
	s->drives = spx_calloc(o->ndrives, sizeof(char *));
	s->bc = spx_calloc(1, sizeof(*s->bc));
	pthread_mutex_init(&s->bc->mu, NULL);
	s->mc = spx_calloc(1, sizeof(*s->mc));
	for (int i = 0; i < MCACHE_LOCKS; i++)
		pthread_mutex_init(&s->mc->mu[i], NULL);
	for (size_t i = 0; i < o->ndrives; i++)
		s->drives[i] = spx_path_abs(o->drives[i]);
	spx_ec_init(&s->ec, s->k, s->m);
	for (int i = 0; i < s->n; i++) {
		char *b = spx_xprintf("%s/b", s->drives[i]);
		int rc = 0;

		if (!spx_exists(s->drives[i]) && !(o->flags & SPX_OBJ_CREATE))
			rc = obj_err(SPX_OBJ_INTERNAL,
				     "drive '%s' does not exist",
				     s->drives[i]);
		else if (spx_mkdirs(b, 0755) < 0)
			rc = SPX_OBJ_INTERNAL;
		free(b);
		if (rc) {
			spx_obj_close(s);
			return rc;
		}
	}
	s->flat = !(o->flags & SPX_OBJ_NO_FLAT);
	for (int i = 0; i < s->n && s->flat; i++)
		s->flat = fs_flat_ok(s->drives[i]);
	s->ordered = true;
	for (int i = 0; i < s->n && s->ordered; i++)
		s->ordered = spx_fs_ordered(s->drives[i]);
	{
		int rc = format_check(s);

		if (rc) {
			spx_obj_close(s);
			return rc;
		}
	}
	d0b_open(s);
	s->lockpath = spx_xprintf("%s/.locks", s->drives[0]);
	fd = open(s->lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		int rc = obj_errno("cannot open '%s'", s->lockpath);

		spx_obj_close(s);
		return rc;
	}
	close(fd);
	if ((s->flags & SPX_OBJ_FOLD_AWAY) && !obj_idx_folder_new(s))
		spx_warn("obj: no thread to fold indexes on: folds are inline");
	*out = s;
	return 0;
}

void spx_obj_close(struct spx_obj *s)
{
	if (!s)
		return;
	obj_idx_folder_free(s);
	obj_dirs_free(s->drives, s->n);
	spx_ec_release(&s->ec);
	free(s->lockpath);
	if (s->bc)
		pthread_mutex_destroy(&s->bc->mu);
	free(s->bc);
	if (s->mc) {
		for (int i = 0; i < MCACHE_LOCKS; i++)
			pthread_mutex_destroy(&s->mc->mu[i]);
		for (int i = 0; i < MCACHE_SETS; i++) {
			for (int w = 0; w < 2; w++) {
				free(s->mc->set[i].e[w].path);
				spx_obj_meta_release(&s->mc->set[i].e[w].m);
			}
		}
	}
	free(s->mc);
	d0b_close(s);
	free(s);
}

/* ---- locks ---- */

static uint64_t fnv1a(const char *a, const char *b)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *a; a++)
		h = (h ^ (unsigned char)*a) * 0x100000001b3ull;
	h = (h ^ 0xff) * 0x100000001b3ull;
	for (; b && *b; b++)
		h = (h ^ (unsigned char)*b) * 0x100000001b3ull;
	return h;
}

/* 0 when taken, 1 when held by another (only when !wait), or an error. */
static int lock_byte(int fd, off_t at, short type, bool wait,
		     const char *what)
{
	struct flock fl = {
		.l_type = type, .l_whence = SEEK_SET, .l_start = at, .l_len = 1,
	};

	while (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) < 0) {
		if (errno == EINTR)
			continue;
		if (!wait && (errno == EAGAIN || errno == EACCES))
			return 1;
		return obj_errno("cannot lock '%s'", what);
	}
	return 0;
}

static int lock_take(struct spx_obj *s, const char *bucket, const char *key,
		     bool write, bool wait, int *out)
{
	/* Bucket bytes in [0, 2^20), key bytes in [2^20, 2^20 + 2^24). A
	 * fresh open per lock: OFD locks then exclude threads too. */
	int fd = open(s->lockpath, O_RDWR | O_CLOEXEC);
	int rc;

	*out = -1;
	if (fd < 0)
		return obj_errno("cannot open '%s'", s->lockpath);
	rc = lock_byte(fd, (off_t)(fnv1a(bucket, NULL) % (1u << 20)),
		       key || !write ? F_RDLCK : F_WRLCK, wait, bucket);
	if (!rc && key)
		rc = lock_byte(fd,
			       (off_t)((1u << 20) + fnv1a(bucket, key) % (1u << 24)),
			       F_WRLCK, wait, key);
	if (rc) {
		close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

int obj_lock(struct spx_obj *s, const char *bucket, const char *key,
	     bool write, int *out)
{
	return lock_take(s, bucket, key, write, true, out);
}

int obj_lock_try(struct spx_obj *s, const char *bucket, const char *key,
		 bool write, int *out)
{
	int rc = lock_take(s, bucket, key, write, false, out);

	return rc < 0 ? rc : !rc;
}

int obj_lock_fold(struct spx_obj *s, const char *bucket, bool wait, int *out)
{
	/* Fold bytes in [2^20 + 2^24, 2^21 + 2^24): apart from the bucket
	 * and key bytes, so that holding one never orders against them. */
	int fd = open(s->lockpath, O_RDWR | O_CLOEXEC);
	int rc;

	*out = -1;
	if (fd < 0)
		return obj_errno("cannot open '%s'", s->lockpath);
	rc = lock_byte(fd,
		       (off_t)((1u << 20) + (1u << 24) +
			       fnv1a(bucket, NULL) % (1u << 20)),
		       F_WRLCK, wait, bucket);
	if (rc) {
		close(fd);
		return rc < 0 ? rc : 0;
	}
	*out = fd;
	return 1;
}

void obj_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* ---- names ---- */

static bool is_ipv4(const char *s)
{
	int parts = 0;

	while (*s) {
		int v = 0, nd = 0;

		while (*s >= '0' && *s <= '9') {
			v = v * 10 + (*s++ - '0');
			if (++nd > 3)
				return false;
		}
		if (!nd || v > 255)
			return false;
		parts++;
		if (*s == '.')
			s++;
		else if (*s)
			return false;
	}
	return parts == 4;
}

static bool starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static bool ends(const char *s, const char *p)
{
	size_t n = strlen(s), l = strlen(p);

	return n >= l && !strcmp(s + n - l, p);
}

bool spx_obj_bucket_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n < 3 || n > SPX_OBJ_BUCKET_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && c != '.' && c != '-')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
		if (i && (c == '.' || c == '-') &&
		    (name[i - 1] == '.' || (c == '.' && name[i - 1] == '-') ||
		     (c == '-' && name[i - 1] == '.')))
			return false;
	}
	if (is_ipv4(name) || starts(name, "xn--") || starts(name, "sthree-") ||
	    starts(name, "amzn-s3-demo-") || ends(name, "-s3alias") ||
	    ends(name, "--ol-s3") || ends(name, ".mrap") ||
	    ends(name, "--x-s3") || ends(name, "--table-s3"))
		return false;
	return true;
}

bool spx_obj_bucket_name_reserved(const char *name)
{
	size_t l = strlen(SPX_OBJ_RESERVED_PREFIX), n = strlen(name);

	if (n <= l || n > SPX_OBJ_BUCKET_MAX ||
	    strncmp(name, SPX_OBJ_RESERVED_PREFIX, l) || name[n - 1] == '-')
		return false;
	for (size_t i = l; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= '0' && name[i] <= '9') || name[i] == '-'))
			return false;
	return true;
}

bool obj_utf8_valid(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		unsigned c = *s, n, min;
		uint32_t cp;

		if (c < 0x80) {
			s++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1, min = 0x80, cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2, min = 0x800, cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3, min = 0x10000, cp = c & 0x07;
		} else {
			return false;
		}
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += n + 1;
	}
	return true;
}

int spx_obj_key_check(const char *key)
{
	size_t n = strlen(key);

	if (!n)
		return obj_err(SPX_OBJ_INVALID_ARG, "empty key");
	if (n > SPX_OBJ_KEY_MAX)
		return obj_err(SPX_OBJ_KEY_TOO_LONG,
			       "key of %zu bytes: at most %d", n,
			       SPX_OBJ_KEY_MAX);
	if (!obj_utf8_valid(key))
		return obj_err(SPX_OBJ_INVALID_ARG, "key is not valid UTF-8");
	return 0;
}

void spx_obj_key_encode(const char *key, char *out, size_t outsz)
{
	static const char hx[] = "0123456789ABCDEF";
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		unsigned c = *p;
		bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_' || c == '-' ||
			    (c == '.' && p != (const unsigned char *)key);

		if (o + 4 > outsz || o + 4 > 201)
			goto hash;
		if (safe) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hx[c >> 4];
			out[o++] = hx[c & 15];
		}
	}
	out[o] = 0;
	return;
hash:
	{
		unsigned char md[32];
		unsigned int mdl = 0;

		EVP_Digest(key, strlen(key), md, &mdl, EVP_sha256(), NULL);
		out[0] = '~';
		spx_hex_encode(md, 32, out + 1);
	}
}

/* ---- buckets ---- */

static bool word_ok(const char *s, size_t max, bool upper)
{
	size_t n = strlen(s);

	if (!n || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') ||
		      (upper && s[i] >= 'A' && s[i] <= 'Z') ||
		      (!upper && s[i] == '-')))
			return false;
	return true;
}

static int bucket_name_check(const char *name)
{
	if (!spx_obj_bucket_name_valid(name) &&
	    !spx_obj_bucket_name_reserved(name))
		return obj_err(SPX_OBJ_INVALID_BUCKET, "invalid bucket name '%s'",
			       name);
	return 0;
}

static char **bdirs(struct spx_obj *s, const char *bucket)
{
	char **d = spx_calloc((size_t)s->n, sizeof(char *));

	for (int i = 0; i < s->n; i++)
		d[i] = obj_bdir(s, i, bucket);
	return d;
}

/* Bucket info is stored as metadata: key = owner, etag = region,
 * sys "versioning" = Enabled or Suspended once set, tags = its tags. */
static int bucket_info(struct spx_obj *s, const char *name,
		       struct spx_obj_meta *m)
{
	char **d = bdirs(s, name);
	int rc = obj_get_meta(s, d, "info", m, SPX_OBJ_NO_SUCH_BUCKET);

	obj_dirs_free(d, s->n);
	if (rc == SPX_OBJ_NO_SUCH_BUCKET)
		return obj_err(rc, "no such bucket '%s'", name);
	return rc;
}

static enum spx_obj_versioning versioning_of(const struct spx_obj_meta *m)
{
	const char *v = spx_kv_get(&m->sys, "versioning");

	return !v			   ? SPX_OBJ_UNVERSIONED
	       : !strcmp(v, "Enabled") ? SPX_OBJ_VERSIONING_ENABLED
				       : SPX_OBJ_VERSIONING_SUSPENDED;
}

/* The document mask (sys "docs", 16 hex); all set when it is not kept. */
static uint64_t docs_of(const struct spx_obj_meta *m)
{
	const char *v = spx_kv_get(&m->sys, "docs");
	uint64_t x = 0;

	if (!v || strlen(v) != 16)
		return UINT64_MAX;
	for (const char *p = v; *p; p++) {
		if (spx_hexval(*p) < 0)
			return UINT64_MAX;
		x = x << 4 | (uint64_t)spx_hexval(*p);
	}
	return x;
}

static void docs_set(struct spx_obj_meta *m, uint64_t x)
{
	struct spx_kvlist sys = SPX_KVLIST_INIT;
	char v[17];

	for (size_t i = 0; i < m->sys.n; i++)
		if (strcmp(m->sys.v[i].k, "docs"))
			spx_kv_add(&sys, m->sys.v[i].k, m->sys.v[i].v);
	snprintf(v, sizeof(v), "%016llx", (unsigned long long)x);
	spx_kv_add(&sys, "docs", v);
	spx_kv_free(&m->sys);
	m->sys = sys;
}

/* A document name's bit in the mask (FNV-1a). */
static uint64_t doc_bit(const char *name)
{
	uint32_t h = 2166136261u;

	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return (uint64_t)1 << (h % 64);
}

static void bucket_from_meta(const char *name, const struct spx_obj_meta *m,
			     struct spx_obj_bucket *out)
{
	const char *inc = spx_kv_get(&m->sys, "incarnation");

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	snprintf(out->owner, sizeof(out->owner), "%s", m->key);
	snprintf(out->region, sizeof(out->region), "%.31s", m->etag);
	out->created_ms = m->mtime_ms;
	out->versioning = versioning_of(m);
	snprintf(out->inc, sizeof(out->inc), "%s", inc ? inc : "");
	out->docs = docs_of(m);
}

/* Every S3 request opens its bucket, and decoding the record costs more
 * than the rest of a small GET's reads: the handles decoded from drive
 * 0's record are kept, each with the identity of the file it came from.
 * A record is never changed in place (it is replaced by rename) and
 * spx_write_file stamps each version's mtime to the nanosecond, so
 * (device, inode, size, mtime) names one version of the record: a stat
 * that finds the same four finds what was decoded, whichever process
 * wrote it. Anything else, and every failure, reads the record again. */
static struct bce *bcache_slot(struct spx_obj *s, const char *name)
{
	return &s->bc->e[fnv1a(name, NULL) % BCACHE_SLOTS];
}

static bool bcache_get(struct spx_obj *s, const char *name,
		       const struct stat *st, struct spx_obj_bucket *out)
{
	struct bce *e = bcache_slot(s, name);
	bool hit;

	pthread_mutex_lock(&s->bc->mu);
	hit = e->used && !strcmp(e->b.name, name) &&
	      spx_file_id_same(&e->id, st);
	if (hit)
		*out = e->b;
	pthread_mutex_unlock(&s->bc->mu);
	return hit;
}

static void bcache_put(struct spx_obj *s, const struct stat *st,
		       const struct spx_obj_bucket *b)
{
	struct bce *e = bcache_slot(s, b->name);

	pthread_mutex_lock(&s->bc->mu);
	e->used = true;
	spx_file_id_of(st, &e->id);
	e->b = *b;
	pthread_mutex_unlock(&s->bc->mu);
}

/* Drive 0's record through the cache: 0 with *out, 1 for the full read
 * (drive 0's record unreadable: another drive may have it), or
 * SPX_OBJ_NO_SUCH_BUCKET when drive 0 has none, which is what the full
 * read would say (drive 0 decides whether a record exists). */
static int bucket_read_cached(struct spx_obj *s, const char *name,
			      struct spx_obj_bucket *out)
{
	char *path = spx_xprintf("%s/b/%s/info", s->drives[0], name);
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct stat st;
	int rc = 1;

	if (d0b_lstat(s, path, &st) < 0) {
		rc = errno == ENOENT || errno == ENOTDIR
			     ? obj_err(SPX_OBJ_NO_SUCH_BUCKET,
				       "no such bucket '%s'", name)
			     : 1;
	} else if (bcache_get(s, name, &st, out)) {
		rc = 0;
	} else if (meta_read_ident(path, &st, &m) == 0) {
		bucket_from_meta(name, &m, out);
		bcache_put(s, &st, out);
		rc = 0;
	}
	spx_obj_meta_release(&m);
	free(path);
	return rc;
}

static int bucket_read(struct spx_obj *s, const char *name,
		       struct spx_obj_bucket *out)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct spx_obj_bucket b;
	int rc = bucket_read_cached(s, name, &b);

	if (rc <= 0) {
		if (!rc && out)
			*out = b;
		return rc;
	}
	if ((rc = bucket_info(s, name, &m)) < 0)
		return rc;
	if (out)
		bucket_from_meta(name, &m, out);
	spx_obj_meta_release(&m);
	return 0;
}

int obj_bucket_name(const struct spx_obj_bucket *b)
{
	if (!b)
		return obj_err(SPX_OBJ_NO_SUCH_BUCKET, "no bucket");
	return bucket_name_check(b->name);
}

/* The bucket info m read for handle b is the same bucket's. */
static int bucket_same(const struct spx_obj_bucket *b,
		       const struct spx_obj_meta *m)
{
	const char *inc = spx_kv_get(&m->sys, "incarnation");

	if (strcmp(inc ? inc : "", b->inc) || strcmp(m->key, b->owner))
		return obj_err(SPX_OBJ_NO_SUCH_BUCKET,
			       "bucket '%s' was deleted (another of the name "
			       "exists now)",
			       b->name);
	return 0;
}

int obj_bucket_read_ok(struct spx_obj *s, const struct spx_obj_bucket *b,
		       const struct spx_obj_meta *m)
{
	/* Written under the handle's own incarnation: a version is only
	 * ever installed after that is checked under the bucket's lock, and
	 * a bucket made again starts from empty directories, so no file of
	 * another incarnation carries it. */
	if (m && m->inc[0] && b->inc[0] && !strcmp(m->inc, b->inc))
		return 0;
	return obj_bucket_current(s, b, NULL);
}

int obj_bucket_current(struct spx_obj *s, const struct spx_obj_bucket *b,
		       enum spx_obj_versioning *v)
{
	struct spx_obj_bucket cur;
	int rc = obj_bucket_name(b);

	if (!rc)
		rc = bucket_read(s, b->name, &cur);
	if (!rc && (strcmp(cur.inc, b->inc) || strcmp(cur.owner, b->owner)))
		rc = obj_err(SPX_OBJ_NO_SUCH_BUCKET,
			     "bucket '%s' was deleted (another of the name "
			     "exists now)",
			     b->name);
	if (v)
		*v = rc ? SPX_OBJ_UNVERSIONED : cur.versioning;
	return rc;
}

/* Change the bucket's info under its exclusive lock: commits in the
 * bucket (which hold it shared) finish first and later ones see the
 * change. */
static int bucket_update(struct spx_obj *s, const struct spx_obj_bucket *b,
			 enum spx_obj_versioning v,
			 const struct spx_kvlist *tags, bool set_tags)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct spx_kvlist sys = SPX_KVLIST_INIT;
	struct spx_buf enc = SPX_BUF_INIT;
	const char *name;
	char **d = NULL;
	int rc, lk;

	if ((rc = obj_bucket_name(b)) < 0)
		return rc;
	name = b->name;
	if ((rc = obj_lock(s, name, NULL, true, &lk)) < 0)
		return rc;
	if ((rc = bucket_info(s, name, &m)) < 0 || (rc = bucket_same(b, &m)) < 0)
		goto out;
	if (v != SPX_OBJ_UNVERSIONED) {
		for (size_t i = 0; i < m.sys.n; i++)
			if (strcmp(m.sys.v[i].k, "versioning"))
				spx_kv_add(&sys, m.sys.v[i].k, m.sys.v[i].v);
		spx_kv_add(&sys, "versioning",
			   v == SPX_OBJ_VERSIONING_ENABLED ? "Enabled"
							   : "Suspended");
		spx_kv_free(&m.sys);
		m.sys = sys;
	}
	if (set_tags) {
		spx_kv_free(&m.tags);
		for (size_t i = 0; tags && i < tags->n; i++)
			spx_kv_add(&m.tags, tags->v[i].k, tags->v[i].v);
	}
	spx_obj_meta_encode(&m, &enc);
	d = bdirs(s, name);
	rc = obj_put_all(s, d, "info", &enc);
out:
	obj_unlock(lk);
	obj_dirs_free(d, s->n);
	spx_obj_meta_release(&m);
	spx_buf_release(&enc);
	return rc;
}

int spx_obj_bucket_set_versioning(struct spx_obj *s,
				  const struct spx_obj_bucket *b,
				  enum spx_obj_versioning v)
{
	if (v != SPX_OBJ_VERSIONING_ENABLED && v != SPX_OBJ_VERSIONING_SUSPENDED)
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "versioning is Enabled or Suspended");
	return bucket_update(s, b, v, NULL, false);
}

int spx_obj_bucket_tags(struct spx_obj *s, const struct spx_obj_bucket *b,
			struct spx_kvlist *out)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	int rc = obj_bucket_name(b);

	memset(out, 0, sizeof(*out));
	if (!rc)
		rc = bucket_info(s, b->name, &m);
	if (!rc)
		rc = bucket_same(b, &m);
	if (rc < 0) {
		spx_obj_meta_release(&m);
		return rc;
	}
	*out = m.tags;
	m.tags = (struct spx_kvlist)SPX_KVLIST_INIT;
	spx_obj_meta_release(&m);
	return 0;
}

int spx_obj_bucket_set_tags(struct spx_obj *s, const struct spx_obj_bucket *b,
			    const struct spx_kvlist *tags)
{
	if (tags && !obj_kv_valid(tags))
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "a tag is not valid UTF-8 or too long");
	return bucket_update(s, b, SPX_OBJ_UNVERSIONED, tags, true);
}

/* The file of bucket document name: "doc-NAME". */
static int doc_file(const char *name, char file[24])
{
	size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz");

	if (!n || n > 15 || name[n])
		return obj_err(SPX_OBJ_INVALID_ARG, "bad document name");
	snprintf(file, 24, "doc-%s", name);
	return 0;
}

int spx_obj_bucket_doc(struct spx_obj *s, const struct spx_obj_bucket *b,
		       const char *name, struct spx_buf *out)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	char file[24], **d = NULL;
	int rc;

	spx_buf_reset(out);
	if ((rc = obj_bucket_name(b)) < 0 || (rc = doc_file(name, file)) < 0)
		return rc;
	/* Never given one when the handle was opened: none, unread. */
	if (!(b->docs & doc_bit(name)))
		return 0;
	d = bdirs(s, b->name);
	rc = obj_get_meta(s, d, file, &m, SPX_OBJ_NO_SUCH_KEY);
	obj_dirs_free(d, s->n);
	/* None: nothing was read that could be another incarnation's, and
	 * every later read or commit under b checks b's own (this is on
	 * every S3 request's path: the bucket policy). */
	if (rc == SPX_OBJ_NO_SUCH_KEY) {
		spx_obj_meta_release(&m);
		return 0;
	}
	if (!rc && (!m.is_inline || strcmp(m.key, name)))
		rc = obj_err(SPX_OBJ_INTERNAL, "bucket '%s': bad document '%s'",
			     b->name, name);
	/* Read, then check that it was this bucket's. */
	if (!rc)
		rc = obj_bucket_current(s, b, NULL);
	if (!rc && m.is_inline)
		spx_buf_add(out, m.inl.p, m.inl.len);
	spx_obj_meta_release(&m);
	return rc;
}

int spx_obj_bucket_set_doc(struct spx_obj *s, struct spx_obj_bucket *b,
			   const char *name, const void *p, size_t n)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT, info = SPX_OBJ_META_INIT;
	struct spx_buf enc = SPX_BUF_INIT;
	unsigned char dig[16];
	char file[24], **d = NULL;
	int rc, lk;

	if ((rc = obj_bucket_name(b)) < 0 || (rc = doc_file(name, file)) < 0)
		return rc;
	if (n > SPX_OBJ_DOC_MAX)
		return obj_err(SPX_OBJ_INVALID_ARG, "a document of %zu bytes",
			       n);
	if ((rc = obj_lock(s, b->name, NULL, true, &lk)) < 0)
		return rc;
	if ((rc = bucket_info(s, b->name, &info)) < 0 ||
	    (rc = bucket_same(b, &info)) < 0)
		goto out;
	d = bdirs(s, b->name);
	if (!n) {
		rc = obj_unlink_all(s, d, file);
		goto out;
	}
	/* The bucket says the document may exist before it does: a crash
	 * between the two leaves a bit that costs a read, never a document
	 * that is not read. */
	if (!(docs_of(&info) & doc_bit(name))) {
		docs_set(&info, docs_of(&info) | doc_bit(name));
		spx_obj_meta_encode(&info, &enc);
		if ((rc = obj_put_all(s, d, "info", &enc)) < 0)
			goto out;
		spx_buf_reset(&enc);
	}
	m.key = spx_strdup(name);
	m.size = n;
	if (!EVP_Digest(p, n, dig, NULL, EVP_md5(), NULL)) {
		rc = obj_err(SPX_OBJ_INTERNAL, "MD5 failed");
		goto out;
	}
	spx_hex_encode(dig, 16, m.etag);
	m.mtime_ms = obj_now_ms();
	m.k = s->k;
	m.m = s->m;
	m.block = s->block;
	m.is_inline = true;
	spx_buf_add(&m.inl, p, n);
	spx_obj_meta_encode(&m, &enc);
	rc = obj_put_all(s, d, file, &enc);
	if (!rc)
		b->docs |= doc_bit(name);
out:
	obj_unlock(lk);
	obj_dirs_free(d, s->n);
	spx_obj_meta_release(&m);
	spx_obj_meta_release(&info);
	spx_buf_release(&enc);
	return rc;
}

int spx_obj_bucket_open(struct spx_obj *s, const char *name,
			struct spx_obj_bucket *out)
{
	int rc = bucket_name_check(name);

	return rc ? rc : bucket_read(s, name, out);
}

int spx_obj_bucket_create(struct spx_obj *s, const char *name,
			  const char *owner, const char *region)
{
	struct spx_obj_bucket cur;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct spx_buf enc = SPX_BUF_INIT;
	char **d = NULL;
	int rc, lk;

	if ((rc = bucket_name_check(name)) < 0)
		return rc;
	if (!word_ok(owner, 15, true) || !word_ok(region, 31, false))
		return obj_err(SPX_OBJ_INVALID_ARG, "bad owner or region");
	if ((rc = obj_lock(s, name, NULL, true, &lk)) < 0)
		return rc;
	rc = bucket_read(s, name, &cur);
	if (rc == 0) {
		rc = !strcmp(cur.owner, owner)
			     ? obj_err(SPX_OBJ_BUCKET_OWNED,
				       "bucket '%s' exists and is yours", name)
			     : obj_err(SPX_OBJ_BUCKET_EXISTS,
				       "bucket '%s' exists", name);
		goto out;
	}
	if (rc != SPX_OBJ_NO_SUCH_BUCKET)
		goto out;
	/* Leftovers of a half-made or half-deleted bucket go first. */
	d = bdirs(s, name);
	for (int i = 0; i < s->n; i++)
		if ((rc = obj_discard(d[i])) < 0)
			goto out;
	for (int i = 0; i < s->n; i++) {
		char *o = spx_xprintf("%s/o", d[i]), *u = spx_xprintf("%s/u", d[i]);

		rc = spx_mkdirs(o, 0755) < 0 || spx_mkdirs(u, 0755) < 0
			     ? obj_errno("cannot create '%s'", d[i])
			     : 0;
		free(o);
		free(u);
		if (rc)
			goto out;
	}
	if ((rc = obj_idx_create(s, name)) < 0)
		goto out;
	{
		char inc[17];

		if ((rc = obj_randhex(inc, 8)) < 0)
			goto out;
		spx_kv_add(&m.sys, "incarnation", inc);
		/* No document yet. */
		docs_set(&m, 0);
	}
	m.key = spx_strdup(owner);
	snprintf(m.etag, sizeof(m.etag), "%s", region);
	m.mtime_ms = obj_now_ms();
	m.k = s->k;
	m.m = s->m;
	m.block = s->block;
	spx_obj_meta_encode(&m, &enc);
	rc = obj_put_all(s, d, "info", &enc);
out:
	obj_unlock(lk);
	obj_dirs_free(d, s->n);
	spx_obj_meta_release(&m);
	spx_buf_release(&enc);
	return rc;
}

static int has_objects(const char *odir, bool *yes)
{
	DIR *dp = opendir(odir);
	struct dirent *e;

	*yes = false;
	if (!dp)
		return errno == ENOENT ? 0 : obj_errno("cannot open '%s'", odir);
	while ((e = readdir(dp)) && !*yes) {
		char *meta, *k;

		if (e->d_name[0] == '.')
			continue;
		/* The current version (or delete marker) is in meta as long
		 * as the key has any version. */
		k = spx_xprintf("%s/%s", odir, e->d_name);
		meta = obj_key_file(k, "meta");
		*yes = spx_exists(meta);
		free(meta);
		free(k);
	}
	closedir(dp);
	return 0;
}

int spx_obj_bucket_delete(struct spx_obj *s, const struct spx_obj_bucket *b)
{
	char **d = NULL, *odir = NULL, *info = NULL;
	const char *name;
	bool full;
	int rc, lk;

	if ((rc = obj_bucket_name(b)) < 0)
		return rc;
	name = b->name;
	if ((rc = obj_lock(s, name, NULL, true, &lk)) < 0)
		return rc;
	if ((rc = obj_bucket_current(s, b, NULL)) < 0)
		goto out;
	d = bdirs(s, name);
	odir = spx_xprintf("%s/o", d[0]);
	if ((rc = has_objects(odir, &full)) < 0)
		goto out;
	if (full) {
		rc = obj_err(SPX_OBJ_BUCKET_NOT_EMPTY, "bucket '%s' is not empty",
			     name);
		goto out;
	}
	/* Drive 0's info is the commit point: once it is gone, so is the
	 * bucket; the rest is cleaning up. */
	info = spx_xprintf("%s/info", d[0]);
	if (unlink(info) < 0) {
		rc = obj_errno("cannot remove '%s'", info);
		goto out;
	}
	if ((rc = sync_dir(d[0])) < 0)
		goto out;
	for (int i = 0; i < s->n; i++)
		if (obj_discard(d[i]) < 0)
			rc = SPX_OBJ_INTERNAL;
out:
	obj_unlock(lk);
	obj_dirs_free(d, s->n);
	free(odir);
	free(info);
	return rc;
}

static int bucket_cmp(const void *a, const void *b)
{
	return strcmp(((const struct spx_obj_bucket *)a)->name,
		      ((const struct spx_obj_bucket *)b)->name);
}

int obj_bucket_list(struct spx_obj *s, bool reserved,
		    struct spx_obj_bucket **out, size_t *n)
{
	char *b = spx_xprintf("%s/b", s->drives[0]);
	DIR *dp = opendir(b);
	struct dirent *e;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!dp) {
		int rc = obj_errno("cannot open '%s'", b);

		free(b);
		return rc;
	}
	while ((e = readdir(dp))) {
		struct spx_obj_bucket info;

		if (!spx_obj_bucket_name_valid(e->d_name) &&
		    !(reserved && spx_obj_bucket_name_reserved(e->d_name)))
			continue;
		if (bucket_read(s, e->d_name, &info) < 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			*out = spx_realloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = info;
	}
	closedir(dp);
	free(b);
	spx_error_clear();
	if (*n)
		qsort(*out, *n, sizeof(**out), bucket_cmp);
	return 0;
}

int spx_obj_bucket_list(struct spx_obj *s, struct spx_obj_bucket **out,
			size_t *n)
{
	return obj_bucket_list(s, false, out, n);
}
