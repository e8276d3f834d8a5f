/* state_dir.c: the dir backend of the record store.
 *
 * Layout. Key "instances/i-0abc" is the file DIR/instances/i-0abc (0600;
 * directories 0700, made as needed). The file is one header line and the
 * value (see spx_state_record_encode in state.h): the header carries the
 * revision, the value's length and its CRC-32C, so a truncated, extended
 * or scribbled-on file is reported as corrupt instead of being returned.
 * Names starting with '.' are ours and never keys: DIR/.lock and temp files
 * ".tmp.<name>" beside the record they will replace.
 *
 * Writes. Every write of a key (create, put, delete) runs under an
 * exclusive lock on that key: an OFD byte-range lock on DIR/.lock, one
 * byte at an offset hashed from the key, so writers of different keys do
 * not wait for each other (unless two keys collide in 2^62 offsets, which
 * only costs a wait). OFD locks belong to the open file description, so
 * each operation opens .lock afresh; they then exclude threads of one
 * process too, and the kernel drops them when a holder dies. The lock file
 * is never removed, so there is no unlink-while-locked race.
 *
 * Under the lock the writer reads the current revision, compares, writes
 * ".tmp.<name>", fsyncs it, renames it over the record and fsyncs the
 * directory (and, for a new record, every directory up to DIR, in case a
 * writer killed earlier made them and never synced their entries). Only the
 * lock holder touches ".tmp.<name>", so its fixed name is safe: a temp file
 * left by a killed writer is truncated and reused by the next write of the
 * key, removed by its delete, or removed by spx_state_sweep().
 *
 * Reads take no lock: a record file is never modified in place, only
 * replaced by rename(2), so a reader sees the old file or the new one.
 */
#include "spx.h"

#include "file.h"

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/uio.h>

#include "checksum.h"
#include "state/state.h"

#define TMP_PREFIX ".tmp."
#define LOCK_NAME ".lock"

struct dir_be {
	char *path;  /* as given, for messages */
	int rootfd;  /* O_DIRECTORY, shared read-only by all threads */
	bool nosync; /* SPX_STATE_UNSAFE_NOSYNC */
};


static size_t header_fmt(char *h, size_t cap, uint64_t rev, size_t len,
			 uint32_t crc)
{
	int n = snprintf(h, cap, "spx-state 1 rev=%" PRIu64 " len=%zu "
			 "crc32c=%08" PRIx32 "\n", rev, len, crc);

	/* Cannot truncate: 20 + 20 digits and the fixed text fit in 96. */
	if (n < 0 || (size_t)n >= cap)
		spx_die(SPX_FAIL, "record header overflow");
	return (size_t)n;
}

void spx_state_record_encode(struct spx_buf *out, uint64_t rev,
			     const void *val, size_t len)
{
	char h[SPX_STATE_HEADER_MAX];
	size_t hn = header_fmt(h, sizeof(h), rev, len,
			       spx_crc32c(val, len));

	spx_buf_add(out, h, hn);
	spx_buf_add(out, val, len);
}

/* Parse an unsigned decimal at *p, at most max, no sign, no leading zero. */
static int parse_u64(const char **p, const char *end, uint64_t max,
		     uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (s >= end || *s < '0' || *s > '9' || (*s == '0' && s + 1 < end &&
						 s[1] >= '0' && s[1] <= '9'))
		return -1;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*p = s;
	*v = x;
	return 0;
}

static int expect_lit(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(end - *p) < n || memcmp(*p, lit, n))
		return -1;
	*p += n;
	return 0;
}

/* Parse the header line of p[0..n): 0, or -1 with a reason recorded. */
static int header_parse(const char *p, size_t n, uint64_t *rev,
			size_t *off, size_t *len, uint32_t *crc)
{
	const char *s = p, *end = p + (n < SPX_STATE_HEADER_MAX ? n :
				       SPX_STATE_HEADER_MAX);
	uint64_t r, l;
	uint32_t c = 0;

	if (expect_lit(&s, end, "spx-state ") < 0)
		return spx_error(SPX_FAIL, "not a record");
	if (expect_lit(&s, end, "1 ") < 0)
		return spx_error(SPX_FAIL, "unknown record version");
	if (expect_lit(&s, end, "rev=") < 0 ||
	    parse_u64(&s, end, UINT64_MAX, &r) < 0 || !r ||
	    expect_lit(&s, end, " len=") < 0 ||
	    parse_u64(&s, end, SPX_STATE_VALUE_MAX, &l) < 0 ||
	    expect_lit(&s, end, " crc32c=") < 0 || end - s < 9)
		return spx_error(SPX_FAIL, "bad header");
	for (int i = 0; i < 8; i++, s++) {
		if (*s >= '0' && *s <= '9')
			c = c << 4 | (uint32_t)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			c = c << 4 | (uint32_t)(*s - 'a' + 10);
		else
			return spx_error(SPX_FAIL, "bad header");
	}
	if (*s++ != '\n')
		return spx_error(SPX_FAIL, "bad header");
	*rev = r;
	*off = (size_t)(s - p);
	*len = (size_t)l;
	*crc = c;
	return 0;
}

int spx_state_record_decode(const char *p, size_t n, uint64_t *rev,
			    size_t *off, size_t *len)
{
	uint32_t crc;

	if (header_parse(p, n, rev, off, len, &crc) < 0)
		return SPX_STATE_FAIL;
	if (n - *off != *len)
		return spx_error(SPX_FAIL, "length %zu does not match the "
				 "header's %zu (torn write?)", n - *off, *len);
	if (spx_crc32c(p + *off, *len) != crc)
		return spx_error(SPX_FAIL, "checksum mismatch");
	return 0;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Take the write lock of key; *lfd is the fd to close to release it. */
static int lock_key(struct dir_be *d, const char *key, int *lfd)
{
	uint64_t lim = (uint64_t)1 << (sizeof(off_t) * 8 - 2);
	int fd = openat(d->rootfd, LOCK_NAME, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

	*lfd = -1;
	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot open '%s/%s'", d->path,
				       LOCK_NAME);
#ifdef F_OFD_SETLKW
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = (off_t)(fnv1a(key) % lim),
		.l_len = 1,
	};
	while (fcntl(fd, F_OFD_SETLKW, &fl) < 0) {
		if (errno == EINTR)
			continue;
		spx_error_errno(SPX_FAIL, "cannot lock '%s' in '%s'", key,
				d->path);
		close(fd);
		return -1;
	}
#else
	/* XXX: no OFD locks here: flock is per open file description too,
	 * but whole-file, so every writer of the store waits for the others. */
	(void)lim;
	while (flock(fd, LOCK_EX) < 0) {
		if (errno == EINTR)
			continue;
		spx_error_errno(SPX_FAIL, "cannot lock '%s' in '%s'", key,
				d->path);
		close(fd);
		return -1;
	}
#endif
	*lfd = fd;
	return 0;
}

static int sync_fd(struct dir_be *d, int fd, const char *what)
{
	if (d->nosync)
		return 0;
	if (fsync(fd) < 0)
		return spx_error_errno(SPX_FAIL, "cannot sync '%s/%s'", d->path,
				       what);
	return 0;
}

/* fsync the directories of key's ancestors, deepest first, then DIR. */
static int sync_ancestors(struct dir_be *d, const char *key)
{
	char *k, *s;
	int rc = 0;

	if (d->nosync)
		return 0;
	k = spx_strdup(key);
	while (rc == 0 && (s = strrchr(k, '/'))) {
		int fd;

		*s = '\0';
		fd = openat(d->rootfd, k, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			rc = spx_error_errno(SPX_FAIL, "cannot open '%s/%s'",
					     d->path, k);
			break;
		}
		rc = sync_fd(d, fd, k);
		close(fd);
	}
	if (rc == 0)
		rc = sync_fd(d, d->rootfd, ".");
	free(k);
	return rc;
}

/* Open the directory that holds key's file into *dfd (-1 for DIR itself:
 * use d->rootfd). make: create missing directories. Returns 0,
 * SPX_STATE_NOTFOUND (missing and !make), SPX_STATE_INVALID (a parent is a
 * record) or SPX_STATE_FAIL. */
static int open_parent(struct dir_be *d, const char *key, int make, int *dfd)
{
	const char *slash = strrchr(key, '/');
	char *parent;
	int fd, rc = 0;

	*dfd = -1;
	if (!slash)
		return 0;
	parent = spx_strndup(key, (size_t)(slash - key));
	fd = openat(d->rootfd, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && make) {
		/* mkdir each missing level; EEXIST means another writer made
		 * it, which is as good. */
		for (char *s = parent;; s++) {
			char c = *s;

			if (c != '/' && c != '\0')
				continue;
			*s = '\0';
			if (mkdirat(d->rootfd, parent, 0700) < 0 &&
			    errno != EEXIST && errno != ENOTDIR) {
				rc = spx_error_errno(SPX_FAIL,
						     "cannot create '%s/%s'",
						     d->path, parent);
				goto out;
			}
			*s = c;
			if (!c)
				break;
		}
		fd = openat(d->rootfd, parent,
			    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0 && errno == ENOTDIR && make)
		rc = spx_state_error(SPX_STATE_INVALID,
				     "cannot write '%s': a parent is a record",
				     key);
	else if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		rc = spx_state_error(SPX_STATE_NOTFOUND, "no record '%s'", key);
	else if (fd < 0)
		rc = spx_error_errno(SPX_FAIL, "cannot open '%s/%s'", d->path,
				     parent);
	else
		*dfd = fd;
out:
	free(parent);
	return rc;
}

static int read_all(int fd, struct spx_buf *b, size_t n)
{
	spx_buf_grow(b, n);
	while (b->len < n) {
		ssize_t r = read(fd, b->p + b->len, n - b->len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		spx_buf_setlen(b, b->len + (size_t)r);
	}
	return 0;
}

/* Read and check the record file at/path of key. On 0, b
 * holds the value and *rev its revision. SPX_STATE_NOTFOUND if there is no
 * file (*isdir set if path is a directory), SPX_STATE_FAIL if unreadable or
 * corrupt. head: only read and check the header and the file's size. */
static int read_record(struct dir_be *d, int at, const char *path,
		       const char *key, struct spx_buf *b, uint64_t *rev,
		       int *isdir, int head)
{
	struct stat sb;
	size_t off, len, want;
	uint32_t crc;
	int fd, rc = 0;

	spx_buf_reset(b);
	if (isdir)
		*isdir = 0;
	/* O_NONBLOCK: a FIFO put where a record should be cannot hang us. */
	fd = openat(at, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return spx_state_error(SPX_STATE_NOTFOUND, "no record '%s'",
				       key);
	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot open '%s/%s'",
				       d->path, key);
	if (fstat(fd, &sb) < 0) {
		rc = spx_error_errno(SPX_FAIL, "cannot stat '%s/%s'", d->path,
				     key);
		goto out;
	}
	if (S_ISDIR(sb.st_mode)) {
		if (isdir)
			*isdir = 1;
		rc = spx_state_error(SPX_STATE_NOTFOUND, "no record '%s'", key);
		goto out;
	}
	if (!S_ISREG(sb.st_mode) ||
	    sb.st_size > SPX_STATE_HEADER_MAX + SPX_STATE_VALUE_MAX) {
		rc = spx_error(SPX_FAIL, "corrupt record '%s/%s': %s", d->path,
			       key, S_ISREG(sb.st_mode) ? "too large" :
			       "not a regular file");
		goto out;
	}
	/* One byte more than the size, to notice a file that grew. */
	want = head && sb.st_size > SPX_STATE_HEADER_MAX ?
	       SPX_STATE_HEADER_MAX : (size_t)sb.st_size + 1;
	if (read_all(fd, b, want) < 0) {
		rc = spx_error_errno(SPX_FAIL, "cannot read '%s/%s'", d->path,
				     key);
		goto out;
	}
	if (head) {
		if (header_parse(b->p, b->len, rev, &off, &len, &crc) < 0)
			goto corrupt;
		if ((uint64_t)sb.st_size != (uint64_t)off + len) {
			spx_error(SPX_FAIL, "length %jd does not match the "
				  "header's %zu (torn write?)",
				  (intmax_t)sb.st_size - (intmax_t)off, len);
			goto corrupt;
		}
		goto out;
	}
	if (spx_state_record_decode(b->p, b->len, rev, &off, &len) < 0)
		goto corrupt;
	memmove(b->p, b->p + off, len);
	spx_buf_setlen(b, len);
	goto out;
corrupt:
	rc = spx_error_prefix("corrupt record '%s/%s'", d->path, key);
out:
	close(fd);
	if (rc < 0)
		spx_buf_reset(b);
	return rc;
}

static int write_all(int fd, const void *data, size_t n)
{
	const char *p = data;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write the record to at/tmp and fsync it. */
static int write_temp(struct dir_be *d, int at, const char *tmp,
		      const char *key, uint64_t rev, const void *val,
		      size_t len)
{
	char h[SPX_STATE_HEADER_MAX];
	size_t hn = header_fmt(h, sizeof(h), rev, len,
			       spx_crc32c(val, len));
	int fd, rc = 0;

	fd = openat(at, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot create a temp file "
				       "for '%s/%s'", d->path, key);
	if (write_all(fd, h, hn) < 0 || write_all(fd, val, len) < 0)
		rc = spx_error_errno(SPX_FAIL, "cannot write '%s/%s'", d->path,
				     key);
	else if (sync_fd(d, fd, key) < 0)
		rc = -1;
	if (close(fd) < 0 && rc == 0)
		rc = spx_error_errno(SPX_FAIL, "cannot write '%s/%s'", d->path,
				     key);
	return rc;
}

static const char *base_name(const char *key)
{
	const char *s = strrchr(key, '/');

	return s ? s + 1 : key;
}

/* create (create 1) or put (create 0) under the key's lock. */
static int dir_write(struct dir_be *d, const char *key, const void *val,
		     size_t len, int create, uint64_t expect, uint64_t *rev)
{
	struct spx_buf cur = SPX_BUF_INIT;
	const char *name = base_name(key);
	char *tmp = spx_xprintf(TMP_PREFIX "%s", name);
	uint64_t currev = 0, newrev;
	int lfd, dfd = -1, at, isdir, fresh, rc;

	if ((rc = lock_key(d, key, &lfd)) < 0)
		goto out;
	rc = open_parent(d, key, create || !expect, &dfd);
	if (rc < 0)
		goto out;
	at = dfd >= 0 ? dfd : d->rootfd;
	rc = read_record(d, at, name, key, &cur, &currev, &isdir, 1);
	if (rc < 0 && rc != SPX_STATE_NOTFOUND)
		goto out;
	fresh = rc == SPX_STATE_NOTFOUND;
	if (fresh && isdir) {
		rc = spx_state_error(SPX_STATE_INVALID, "cannot write '%s': "
				     "other keys are below it", key);
		goto out;
	}
	if (!fresh && create) {
		rc = spx_state_error(SPX_STATE_EXISTS, "record '%s' exists",
				     key);
		goto out;
	}
	if (fresh && !create && expect) {
		rc = spx_state_error(SPX_STATE_NOTFOUND, "no record '%s'", key);
		goto out;
	}
	if (!fresh && expect && currev != expect) {
		rc = spx_state_error(SPX_STATE_CONFLICT, "record '%s' is at "
				     "revision %" PRIu64 ", not %" PRIu64, key,
				     currev, expect);
		goto out;
	}
	if (currev == UINT64_MAX) {
		rc = spx_error(SPX_FAIL, "record '%s' is out of revisions", key);
		goto out;
	}
	newrev = fresh ? 1 : currev + 1;
	if ((rc = write_temp(d, at, tmp, key, newrev, val, len)) < 0)
		goto fail;
	if (renameat(at, tmp, at, name) < 0) {
		if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)
			rc = spx_state_error(SPX_STATE_INVALID, "cannot write "
					     "'%s': other keys are below it",
					     key);
		else
			rc = spx_error_errno(SPX_FAIL, "cannot rename onto "
					     "'%s/%s'", d->path, key);
		goto fail;
	}
	/* The rename is only durable once the directory is synced; a new
	 * file also needs the entries of the directories above it. */
	rc = fresh ? sync_ancestors(d, key) : sync_fd(d, at, key);
	if (rc == 0)
		*rev = newrev;
	goto out;
fail:
	unlinkat(at, tmp, 0);
out:
	if (dfd >= 0)
		close(dfd);
	if (lfd >= 0)
		close(lfd); /* drops the lock */
	spx_buf_release(&cur);
	free(tmp);
	return rc;
}

static int dir_create(void *be, const char *key, const void *val, size_t len,
		      uint64_t *rev)
{
	return dir_write(be, key, val, len, 1, 0, rev);
}

static int dir_put(void *be, const char *key, const void *val, size_t len,
		   uint64_t expect, uint64_t *rev)
{
	return dir_write(be, key, val, len, 0, expect, rev);
}

static int dir_del(void *be, const char *key, uint64_t expect)
{
	struct dir_be *d = be;
	struct spx_buf cur = SPX_BUF_INIT;
	const char *name = base_name(key);
	char *tmp = spx_xprintf(TMP_PREFIX "%s", name);
	uint64_t currev;
	int lfd, dfd = -1, at, rc;

	if ((rc = lock_key(d, key, &lfd)) < 0)
		goto out;
	if ((rc = open_parent(d, key, 0, &dfd)) < 0)
		goto out;
	at = dfd >= 0 ? dfd : d->rootfd;
	/* Without a revision to compare, do not read: a corrupt record can
	 * be deleted. */
	if (expect) {
		rc = read_record(d, at, name, key, &cur, &currev, NULL, 1);
		if (rc < 0)
			goto out;
		if (currev != expect) {
			rc = spx_state_error(SPX_STATE_CONFLICT, "record '%s' "
					     "is at revision %" PRIu64 ", not %"
					     PRIu64, key, currev, expect);
			goto out;
		}
	}
	if (unlinkat(at, name, 0) < 0) {
		if (errno == ENOENT || errno == EISDIR || errno == ENOTDIR)
			rc = spx_state_error(SPX_STATE_NOTFOUND,
					     "no record '%s'", key);
		else
			rc = spx_error_errno(SPX_FAIL, "cannot remove '%s/%s'",
					     d->path, key);
		goto out;
	}
	/* A temp file left by a writer killed before its rename. */
	unlinkat(at, tmp, 0);
	/* XXX: empty directories are left in place: removing one races with a
	 * writer of another key that has just opened it. */
	rc = sync_fd(d, at, key);
out:
	if (dfd >= 0)
		close(dfd);
	if (lfd >= 0)
		close(lfd);
	spx_buf_release(&cur);
	free(tmp);
	return rc;
}

static int dir_get(void *be, const char *key, struct spx_buf *value,
		   uint64_t *rev)
{
	struct dir_be *d = be;

	return read_record(d, d->rootfd, key, key, value, rev, NULL, 0);
}

/* Called by walk() for each entry that is not a directory, with the
 * directory's key prefix ("" or "a/b/"). */
typedef int walk_fn(struct dir_be *d, int at, const char *name,
		    const char *kprefix, void *ctx);

/* Walk the tree under the directory at (which walk closes), descending
 * into directories whose names are key components and, at this level only,
 * start with partial. fn sees the regular files whose names are key
 * components (dots 0) or, instead, the dot files (dots 1). */
static int walk(struct dir_be *d, int at, struct spx_buf *kprefix,
		const char *partial, int dots, walk_fn *fn, void *ctx)
{
	size_t plen = strlen(partial), klen = kprefix->len;
	struct dirent *e;
	DIR *dp;
	int rc = 0;

	dp = fdopendir(at);
	if (!dp) {
		rc = spx_error_errno(SPX_FAIL, "cannot read '%s/%s'", d->path,
				     kprefix->p);
		close(at);
		return rc;
	}
	while (rc == 0) {
		struct stat sb;
		const char *name;
		int isdir, fd;

		errno = 0;
		if (!(e = readdir(dp))) {
			if (errno)
				rc = spx_error_errno(SPX_FAIL, "cannot read "
						     "'%s/%s'", d->path,
						     kprefix->p);
			break;
		}
		name = e->d_name;
		if (strncmp(name, partial, plen))
			continue;
		if (name[0] == '.') {
			if (dots && e->d_type != DT_DIR)
				rc = fn(d, at, name, kprefix->p, ctx);
			continue;
		}
		if (!spx_state_key_valid(name) ||
		    klen + strlen(name) > SPX_STATE_KEY_MAX)
			continue;
		if (e->d_type == DT_UNKNOWN) {
			if (fstatat(at, name, &sb,
				    AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* gone */
			isdir = S_ISDIR(sb.st_mode);
			if (!isdir && !S_ISREG(sb.st_mode))
				continue;
		} else if (e->d_type == DT_DIR) {
			isdir = 1;
		} else if (e->d_type == DT_REG) {
			isdir = 0;
		} else {
			continue;
		}
		if (!isdir) {
			if (!dots)
				rc = fn(d, at, name, kprefix->p, ctx);
			continue;
		}
		fd = openat(at, name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno != ENOENT && errno != ENOTDIR)
				rc = spx_error_errno(SPX_FAIL, "cannot open "
						     "'%s/%s%s'", d->path,
						     kprefix->p, name);
			continue;
		}
		spx_buf_adds(kprefix, name);
		spx_buf_addc(kprefix, '/');
		rc = walk(d, fd, kprefix, "", dots, fn, ctx);
		spx_buf_setlen(kprefix, klen);
	}
	closedir(dp);
	return rc;
}

struct list_ctx {
	unsigned flags;
	struct spx_state_list *out;
	struct spx_buf key, scratch;
};

static int list_one(struct dir_be *d, int at, const char *name,
		    const char *kprefix, void *ctx)
{
	struct list_ctx *c = ctx;
	uint64_t rev = 0;
	int rc;

	spx_buf_reset(&c->key);
	spx_buf_adds(&c->key, kprefix);
	spx_buf_adds(&c->key, name);
	if (c->flags & SPX_STATE_LIST_REVS) {
		rc = read_record(d, at, name, c->key.p, &c->scratch, &rev,
				 NULL, 1);
		if (rc == SPX_STATE_NOTFOUND)
			return 0; /* deleted meanwhile */
		if (rc < 0)
			return rc;
	}
	spx_state_list_add(c->out, c->key.p, rev,
			   !!(c->flags & SPX_STATE_LIST_REVS));
	return 0;
}

/* Open the directory of prefix (up to its last '/') and walk it. fd < 0
 * and rc 0: nothing there. */
static int walk_prefix(struct dir_be *d, const char *prefix, int dots,
		       walk_fn *fn, void *ctx)
{
	struct spx_buf kp = SPX_BUF_INIT;
	const char *slash = strrchr(prefix, '/');
	int fd, rc = 0;

	if (slash)
		spx_buf_add(&kp, prefix, (size_t)(slash - prefix) + 1);
	fd = openat(d->rootfd, slash ? kp.p : ".", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			rc = spx_error_errno(SPX_FAIL, "cannot open '%s/%s'",
					     d->path, kp.p);
	} else {
		rc = walk(d, fd, &kp, slash ? slash + 1 : prefix, dots, fn,
			  ctx);
	}
	spx_buf_release(&kp);
	return rc;
}

static int dir_list(void *be, const char *prefix, unsigned flags,
		    struct spx_state_list *out)
{
	struct list_ctx c = { flags, out, SPX_BUF_INIT, SPX_BUF_INIT };
	int rc;

	rc = walk_prefix(be, prefix, 0, list_one, &c);
	spx_buf_release(&c.key);
	spx_buf_release(&c.scratch);
	return rc;
}

static int sweep_one(struct dir_be *d, int at, const char *name,
		     const char *kprefix, void *ctx)
{
	const char *rest = name + strlen(TMP_PREFIX);
	size_t *removed = ctx;
	char *key;
	int lfd, rc;

	if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) ||
	    !spx_state_key_valid(rest))
		return 0;
	key = spx_xprintf("%s%s", kprefix, rest);
	/* Under the key's lock no writer is between creating the temp file
	 * and renaming it, so whatever is there is left over. */
	rc = lock_key(d, key, &lfd);
	if (rc == 0) {
		if (unlinkat(at, name, 0) == 0)
			(*removed)++;
		else if (errno != ENOENT && errno != EISDIR)
			rc = spx_error_errno(SPX_FAIL, "cannot remove '%s/%s%s'",
					     d->path, kprefix, name);
		close(lfd);
	}
	free(key);
	return rc;
}

static int dir_sweep(void *be, size_t *removed)
{
	return walk_prefix(be, "", 1, sweep_one, removed);
}

static int dir_open(const char *arg, unsigned flags, void **be)
{
	struct dir_be *d;
	int fd;

	if (!*arg)
		return spx_state_error(SPX_STATE_INVALID, "empty store path");
	if ((flags & SPX_STATE_CREATE) && spx_mkdirs(arg, 0700) < 0)
		return SPX_STATE_FAIL;
	d = spx_calloc(1, sizeof(*d));
	d->path = spx_strdup(arg);
	d->nosync = flags & SPX_STATE_UNSAFE_NOSYNC;
	d->rootfd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->rootfd < 0) {
		spx_error_errno(SPX_FAIL, "cannot open store '%s'", arg);
		goto fail;
	}
	/* O_RDONLY: a reader without write access to an existing store can
	 * still open it. */
	fd = openat(d->rootfd, LOCK_NAME, O_RDONLY | O_CREAT | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0) {
		spx_error_errno(SPX_FAIL, "cannot create '%s/%s'", arg,
				LOCK_NAME);
		goto fail;
	}
	close(fd);
	*be = d;
	return 0;
fail:
	if (d->rootfd >= 0)
		close(d->rootfd);
	free(d->path);
	free(d);
	return SPX_STATE_FAIL;
}

static void dir_close(void *be)
{
	struct dir_be *d = be;

	close(d->rootfd);
	free(d->path);
	free(d);
}

const struct spx_state_ops spx_state_dir_ops = {
	.scheme = "dir",
	.open = dir_open,
	.close = dir_close,
	.get = dir_get,
	.create = dir_create,
	.put = dir_put,
	.del = dir_del,
	.list = dir_list,
	.sweep = dir_sweep,
};
