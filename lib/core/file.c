#include "spx.h"

#include <dirent.h>

#include <libgen.h>

#include <sys/file.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "file.h"

bool spx_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

char *spx_path_join(const char *a, const char *b)
{
	size_t la;

	if (b[0] == '/' || !a || !*a)
		return spx_strdup(b);
	la = strlen(a);
	while (la > 1 && a[la - 1] == '/')
		la--;
	return spx_xprintf("%.*s/%s", (int)la, a, b);
}

char *spx_path_abs(const char *path)
{
	struct spx_buf out = SPX_BUF_INIT;
	char cwd[PATH_MAX];
	char *tmp, *p, *save = NULL;

	if (path[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd)))
			spx_die_errno(SPX_FAIL, "cannot read the current directory");
		tmp = spx_xprintf("%s/%s", cwd, path);
	} else {
		tmp = spx_strdup(path);
	}
	/* Resolve "." and ".." textually. */
	for (p = strtok_r(tmp, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (!strcmp(p, ".") || !*p)
			continue;
		if (!strcmp(p, "..")) {
			char *s = strrchr(out.p, '/');

			spx_buf_setlen(&out, s ? (size_t)(s - out.p) : 0);
			continue;
		}
		spx_buf_addc(&out, '/');
		spx_buf_adds(&out, p);
	}
	free(tmp);
	if (!out.len)
		spx_buf_addc(&out, '/');
	return spx_buf_detach(&out, NULL);
}

/* A new directory is durable only once its parent is synced. */
static int sync_parent(char *p)
{
	char *q = strrchr(p, '/');
	int r;

	if (q == p)
		return spx_fsync_dir("/");
	if (!q)
		return spx_fsync_dir(".");
	*q = '\0';
	r = spx_fsync_dir(p);
	*q = '/';
	return r;
}

int spx_sync_parent(const char *path)
{
	char *p = spx_strdup(path);
	size_t n = strlen(p);
	int rc;

	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	rc = sync_parent(p);
	free(p);
	return rc;
}

int spx_mkdirs(const char *path, mode_t mode)
{
	return spx_mkdirs_late(path, mode, NULL);
}

int spx_mkdirs_late(const char *path, mode_t mode, bool *late)
{
	char *p = spx_strdup(path);
	size_t n = strlen(p);
	int rc = 0, again = 0, err = 0;

	if (late)
		*late = false;
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0'; /* "a/b/": its parent is a */
	/* Most calls find the directory there, or only it missing: one
	 * mkdir, where walking down from the root is one per component. */
	if (mkdir(p, mode) == 0) {
		if (late)
			*late = true;
		else
			rc = sync_parent(p);
		free(p);
		return rc;
	}
	if (errno == EEXIST) {
		free(p);
		return 0;
	}

	for (char *s = p + 1;; s++) {
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		if (mkdir(p, mode) == 0) {
			if (sync_parent(p) < 0) {
				err = errno;
				rc = -1;
				break;
			}
		} else if (errno == ENOENT && s != p + 1 && again < 100) {
			/* A parent made or seen a moment ago was removed
			 * meanwhile (another process removes empty ones, as a
			 * DELETE does with a key's directory): start over. */
			*s = c;
			s = p;
			again++;
			continue;
		} else if (errno != EEXIST) {
			err = errno;
			rc = spx_error_errno(SPX_FAIL, "cannot create '%s'", p);
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	if (rc) /* the caller may look (ENOTDIR: a file in the way) */
		errno = err;
	return rc;
}

int spx_write_all(int fd, const void *p, size_t n, const char *what)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;

			spx_error_errno(SPX_FAIL, "cannot write '%s'", what);
			errno = e;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int spx_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot open '%s'", dir);
	if (fsync(fd) < 0)
		rc = spx_error_errno(SPX_FAIL, "cannot sync '%s'", dir);
	close(fd);
	return rc;
}

void spx_file_id_of(const struct stat *st, struct spx_file_id *id)
{
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->size = st->st_size;
	id->mtime = st->st_mtim;
}

bool spx_file_id_same(const struct spx_file_id *id, const struct stat *st)
{
	return id->dev == st->st_dev && id->ino == st->st_ino &&
	       id->size == st->st_size &&
	       id->mtime.tv_sec == st->st_mtim.tv_sec &&
	       id->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

int spx_write_file(const char *path, const void *data, size_t len,
		   mode_t mode, bool excl)
{
	return spx_write_file_owned(path, data, len, mode, excl, (uid_t)-1,
				    (gid_t)-1);
}

/* /proc/self/fd is there to link an O_TMPFILE file by (looked at once). */
static bool proc_fds(void)
{
	static int have; /* 0 unknown, 1 yes, 2 no */
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);

	if (!h) {
		h = access("/proc/self/fd", X_OK) == 0 ? 1 : 2;
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h == 1;
}

/* How write_file makes its file durable. */
enum {
	WF_EXCL = 1,	/* create-if-absent */
	WF_ONE_SYNC = 2,/* the file system commits metadata in order */
};

static int write_file(const char *path, const void *data, size_t len,
		      mode_t mode, unsigned how, uid_t uid, gid_t gid)
{
	bool excl = how & WF_EXCL, one = how & WF_ONE_SYNC;
	char *dcopy = spx_strdup(path), *dir = dirname(dcopy);
	char *tmp = spx_xprintf("%s/.tmp.XXXXXX", dir);
	const char *p = data;
	char fdname[32];
	bool anon = false;
	int fd = -1, rc = -1;

	/* A new file is best made without a name (O_TMPFILE) and linked in
	 * whole: no temp name to rename or unlink, nothing left behind by a
	 * crash. A file system without it gets the named temp file. */
	if (excl && proc_fds()) {
		fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
		anon = fd >= 0;
		snprintf(fdname, sizeof(fdname), "/proc/self/fd/%d", fd);
	}
	if (!anon)
		fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		spx_error_errno(SPX_FAIL, "cannot create a file in '%s'", dir);
		goto out;
	}
	if (fchmod(fd, mode) < 0) {
		spx_error_errno(SPX_FAIL, "cannot chmod '%s'", tmp);
		goto fail;
	}
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) && fchown(fd, uid, gid) < 0) {
		spx_error_errno(SPX_FAIL, "cannot chown '%s'", tmp);
		goto fail;
	}
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			spx_error_errno(SPX_FAIL, "cannot write '%s'", path);
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	/* The kernel stamps a new file from its coarse clock (a tick of a
	 * few ms): two versions of a file written in one tick, on a reused
	 * inode, would look the same to stat. Stamped to the nanosecond,
	 * (inode, size, mtime) tells every version apart, which is what
	 * lets a reader cache what it decoded (lib/obj's bucket records and
	 * object metadata).
	 * Best effort: a failure leaves the kernel's stamp. */
	{
		struct timespec ts[2];

		clock_gettime(CLOCK_REALTIME, &ts[1]);
		ts[0] = ts[1];
		(void)futimens(fd, ts);
	}
	/* One commit (spx_fs_ordered): the data is written and waited for
	 * (its blocks allocated, its size set, in the running transaction or
	 * an earlier one), the file takes its name, and the file's fsync then
	 * commits the transaction that holds the name and everything before
	 * it. A commit that carries the name, whoever's, carries the data's
	 * allocation too, and the commit's flush comes after the data's
	 * write: the name is never found on a file short of its bytes.
	 * Otherwise the file is synced before it is named and the directory
	 * after. */
	if (one ? sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE |
					     SYNC_FILE_RANGE_WRITE |
					     SYNC_FILE_RANGE_WAIT_AFTER) < 0
		: fsync(fd) < 0) {
		spx_error_errno(SPX_FAIL, "cannot sync '%s'", path);
		goto fail;
	}
	if (!anon && !one) {
		close(fd);
		fd = -1;
	}
	if (anon) {
		/* linkat(2) fails if the name exists: create-if-absent. The
		 * /proc name links the open file itself (AT_EMPTY_PATH would
		 * need CAP_DAC_READ_SEARCH). */
		if (linkat(AT_FDCWD, fdname, AT_FDCWD, path,
			   AT_SYMLINK_FOLLOW) < 0) {
			spx_error_errno(errno == EEXIST ? SPX_NO : SPX_FAIL,
					"cannot create '%s'", path);
			goto fail;
		}
	} else if (excl) {
		/* link(2) fails if the name exists: create-if-absent. */
		if (link(tmp, path) < 0) {
			spx_error_errno(errno == EEXIST ? SPX_NO : SPX_FAIL,
					"cannot create '%s'", path);
			goto fail;
		}
		unlink(tmp);
	} else if (rename(tmp, path) < 0) {
		spx_error_errno(SPX_FAIL, "cannot rename onto '%s'", path);
		goto fail;
	}
	if (one) {
		/* The name changed the file (its link count, its ctime): its
		 * fsync waits for the commit that holds the name. */
		if (fsync(fd) < 0) {
			spx_error_errno(SPX_FAIL, "cannot sync '%s'", path);
			close(fd);
			goto out;
		}
		rc = close(fd) < 0 ? spx_error_errno(SPX_FAIL,
						     "cannot close '%s'", path)
				   : 0;
		goto out;
	}
	if (fd >= 0)
		close(fd);
	rc = spx_fsync_dir(dir);
	goto out;
fail:
	{
		/* The failure's errno outlives the clean-up (ENOSPC tells
		 * callers a full disk from a broken one). */
		int e = errno;

		if (fd >= 0)
			close(fd);
		if (!anon)
			unlink(tmp);
		errno = e;
	}
out:
	free(tmp);
	free(dcopy);
	return rc;
}

int spx_write_file_owned(const char *path, const void *data, size_t len,
			 mode_t mode, bool excl, uid_t uid, gid_t gid)
{
	return write_file(path, data, len, mode, excl ? WF_EXCL : 0, uid, gid);
}

int spx_write_file_ordered(const char *path, const void *data, size_t len,
			   mode_t mode, bool excl, bool ordered)
{
	return write_file(path, data, len, mode,
			  (excl ? WF_EXCL : 0) | (ordered ? WF_ONE_SYNC : 0),
			  (uid_t)-1, (gid_t)-1);
}

/* The name of the block device a file system is on, as /proc/fs/ext4
 * names it: what /sys/dev/block/MAJOR:MINOR links to. */
static bool dev_name(dev_t dev, char *out, size_t outsz)
{
	char link[64], target[256];
	ssize_t n;
	const char *base;

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(dev),
		 minor(dev));
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = 0;
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	n = (ssize_t)strlen(base);
	if (!n || (size_t)n >= outsz || strchr(base, '.'))
		return false;
	memcpy(out, base, (size_t)n + 1);
	return true;
}

bool spx_fs_ordered(const char *dir)
{
	struct statfs sf;
	struct stat st;
	char name[64], *opts, text[4096];
	size_t len = 0;
	bool yes = false;

	if (statfs(dir, &sf) < 0 || stat(dir, &st) < 0)
		return false;
	switch ((unsigned long)sf.f_type) {
	case 0x58465342: /* XFS: every change is logged, in order */
		return true;
	case 0xEF53: /* ext2/3/4: ordered only with a journal */
		break;
	default:
		return false;
	}
	/* ext4 lists a data= mode among its options only with a journal
	 * (made without one, mkfs -O ^has_journal, it has none). */
	if (!dev_name(st.st_dev, name, sizeof(name)))
		return false;
	opts = spx_xprintf("/proc/fs/ext4/%s/options", name);
	if (spx_read_small(opts, text, sizeof(text) - 1, &len) == 1) {
		text[len] = 0;
		yes = !strncmp(text, "data=", 5) || strstr(text, "\ndata=");
	} else {
		spx_error_clear();
	}
	free(opts);
	return yes;
}

int spx_rmtree(const char *path)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (unlink(path) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return spx_error_errno(SPX_FAIL, "cannot remove '%s'", path);
	d = opendir(path);
	if (!d)
		return errno == ENOENT
			       ? 0
			       : spx_error_errno(SPX_FAIL, "cannot open '%s'",
						 path);
	while ((e = readdir(d))) {
		char *sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		sub = spx_xprintf("%s/%s", path, e->d_name);
		if (spx_rmtree(sub) < 0)
			rc = -1;
		free(sub);
	}
	closedir(d);
	if (rmdir(path) < 0 && errno != ENOENT && !rc)
		rc = spx_error_errno(SPX_FAIL, "cannot remove '%s'", path);
	return rc;
}

int spx_lock_path(const char *path, int how, const char *busy)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot open '%s'", path);
	while (flock(fd, how) < 0) {
		int err = errno;

		if (err == EINTR)
			continue;
		close(fd);
		if (err == EWOULDBLOCK)
			return spx_error(SPX_NO, "%s", busy);
		errno = err;
		return spx_error_errno(SPX_FAIL, "cannot lock '%s'", path);
	}
	return fd;
}

int spx_read_small(const char *path, void *buf, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t r = 0;

	*len = 0;
	if (fd < 0)
		return errno == ENOENT ? 0
				       : spx_error_errno(SPX_FAIL,
							 "cannot open '%s'", path);
	while (*len < cap && (r = read(fd, (char *)buf + *len, cap - *len)) > 0)
		*len += (size_t)r;
	close(fd);
	if (r < 0)
		return spx_error_errno(SPX_FAIL, "cannot read '%s'", path);
	return 1;
}
