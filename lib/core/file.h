/* file.h: small file-system helpers with the durability rules of spx. */
#ifndef SPX_FILE_H
#define SPX_FILE_H

#include "spx.h"

/* One version of a file, as stat tells it: files spx writes are
 * replaced by rename, never changed in place, and spx_write_file stamps
 * each with a nanosecond mtime, so two versions never share all four.
 * A reader that caches what it decoded from a file keeps its id and
 * compares a fresh stat with it. */
struct spx_file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

void spx_file_id_of(const struct stat *st, struct spx_file_id *id);
bool spx_file_id_same(const struct spx_file_id *id, const struct stat *st);

/* Write data to path crash-safely: a temp file in the same directory,
 * fsync, rename over path, fsync the directory. After it returns 0 the
 * file holds either the old or the new contents, never a mix, across
 * kill -9 and power loss. excl: fail with SPX_NO if path exists. On
 * failure errno is that of the step that failed. */
int spx_write_file(const char *path, const void *data, size_t len,
		   mode_t mode, bool excl);
/* spx_write_file, the new file owned by uid:gid (chown(2)'s -1 leaves
 * one as it is) before it takes path's name: a reader running as that
 * user never finds the name on a file it cannot read. */
int spx_write_file_owned(const char *path, const void *data, size_t len,
			 mode_t mode, bool excl, uid_t uid, gid_t gid);
/* spx_write_file, for a file system that commits its metadata in order
 * (ordered: spx_fs_ordered of its directory): the data is written and
 * waited for, the file named, then one fsync of the file commits the
 * name with it, where spx_write_file's two (the file's, then the
 * directory's) wait for two commits. The same guarantee: after it
 * returns 0 the file is there whole, and before, its name is never on a
 * file short of its bytes. ordered false: spx_write_file. */
int spx_write_file_ordered(const char *path, const void *data, size_t len,
			   mode_t mode, bool excl, bool ordered);
/* Whether the file system dir is on commits metadata changes in order,
 * each commit carrying every change before it: XFS, and ext3/ext4 with a
 * journal (its data= mode shown in /proc/fs/ext4). Then an fsync of a
 * file carries its new name too. False for any other, ext4 without a
 * journal among them, and when it cannot tell. */
bool spx_fs_ordered(const char *dir);
/* write(2) all n bytes of p to fd, across short writes and EINTR.
 * Returns 0, or -1 with "cannot write 'what'" recorded (SPX_FAIL) and
 * errno kept as write(2) left it. */
int spx_write_all(int fd, const void *p, size_t n, const char *what);
/* mkdir -p with mode for the directories it makes, each synced into its
 * parent so that it survives power loss. */
int spx_mkdirs(const char *path, mode_t mode);
/* The same, except that when path alone was missing its parent is left
 * unsynced and *late set: the caller calls spx_sync_parent(path) before
 * it relies on the directory, after it has synced a file in it, so that
 * the journal commit that file waits for carries the new directory too
 * and the parent's sync finds nothing left to wait for. */
int spx_mkdirs_late(const char *path, mode_t mode, bool *late);
/* fsync the directory that holds path. */
int spx_sync_parent(const char *path);
/* rm -rf path (absent is fine); -1 with an error on the first failure,
 * after removing what it can. */
int spx_rmtree(const char *path);
/* fsync a directory by path. */
int spx_fsync_dir(const char *dir);
bool spx_exists(const char *path);
/* Read at most cap bytes of the small file path (a final symlink is not
 * followed) into buf, *len what was read (cap: that much or more).
 * Returns 1, 0 when there is no such file, or -1 with an error. */
int spx_read_small(const char *path, void *buf, size_t cap, size_t *len);
/* Open path (made 0600 if absent) and flock it: how is LOCK_SH or LOCK_EX,
 * with LOCK_NB to fail at once, with SPX_NO and the message busy, when
 * another holds it. Returns the descriptor, which is the lock (close it
 * to let go), or -1 with an error recorded. */
int spx_lock_path(const char *path, int how, const char *busy);
/* Join a and b with one '/', or return b if it is absolute. Caller frees. */
char *spx_path_join(const char *a, const char *b);
/* An absolute, normalised form of path (need not exist). Caller frees. */
char *spx_path_abs(const char *path);

#endif
