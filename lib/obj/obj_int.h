/* obj_int.h: what the files of lib/obj share. */
#ifndef SPX_OBJ_INT_H
#define SPX_OBJ_INT_H

#include "obj/obj.h"

struct spx_obj {
	int n, k, m;
	char **drives;		/* absolute, n of them */
	uint32_t block;
	uint64_t inline_max;
	uint64_t min_part;
	unsigned flags;
	struct spx_ec ec;
	char *lockpath;		/* drive 0's .locks */
	struct obj_bcache *bc;	/* decoded bucket records (store.c) */
	struct obj_mcache *mc;	/* decoded object metadata (store.c) */
	struct obj_d0b *d0b;	/* drive 0's b/, held open (store.c) */
	bool flat;		/* keys may be kept flat (store.c) */
	bool ordered;		/* every drive commits metadata in order:
				 * a file's fsync carries its name */
	struct obj_folder *folder; /* SPX_OBJ_FOLD_AWAY's thread (index.c) */
};

/* Record an error of class rc (its exit status from spx_obj_status) and
 * return rc. */
int obj_err(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with ": strerror(errno)"; ENOSPC and EDQUOT become
 * SPX_OBJ_NO_SPACE, anything else SPX_OBJ_INTERNAL. */
int obj_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* D_i/b/BUCKET and D_i/b/BUCKET/o/ENC (caller frees). */
char *obj_bdir(const struct spx_obj *s, int i, const char *bucket);
char *obj_kdir(const struct spx_obj *s, int i, const char *bucket,
	       const char *enc);
char *obj_udir(const struct spx_obj *s, int i, const char *bucket,
	       const char *id);

/* Check the handle's name, key and version id (NULL: none) as every
 * object call does (no I/O), and encode the key into enc (256 bytes). */
int obj_target(const struct spx_obj_bucket *b, const char *key,
	       const char *vid, char *enc);
/* Every key and value of l non-empty (keys), bounded and valid UTF-8. */
bool obj_kv_valid(const struct spx_kvlist *l);
/* The handle names a valid bucket (no I/O). */
int obj_bucket_name(const struct spx_obj_bucket *b);
/* spx_obj_bucket_list, with the reserved buckets when reserved is set. */
int obj_bucket_list(struct spx_obj *s, bool reserved,
		    struct spx_obj_bucket **out, size_t *n);
/* The bucket of handle b still exists and is the same one (its
 * incarnation): SPX_OBJ_NO_SUCH_BUCKET if not. *v (may be NULL) receives
 * its versioning now. Changes call it under the bucket's lock (held
 * shared by obj_lock with a key), reads after opening what they read. */
int obj_bucket_current(struct spx_obj *s, const struct spx_obj_bucket *b,
		       enum spx_obj_versioning *v);
/* The same after a read that found m (NULL: found nothing): no I/O when
 * m was written under b's incarnation (it carries it). */
int obj_bucket_read_ok(struct spx_obj *s, const struct spx_obj_bucket *b,
		       const struct spx_obj_meta *m);

/* OFD locks on drive 0's .locks: key NULL locks the bucket (exclusive
 * when write); with a key, the bucket shared and the key exclusive. */
int obj_lock(struct spx_obj *s, const char *bucket, const char *key,
	     bool write, int *fd);
/* The same without waiting: 1 and *fd when taken, 0 when another holds
 * it (a reader must never wait on a writer, which may be stopped). */
int obj_lock_try(struct spx_obj *s, const char *bucket, const char *key,
		 bool write, int *fd);
/* A bucket's fold lock, taken before its lock by whoever rewrites its
 * index (index.c): 1 and *fd when taken, 0 when another holds it and
 * wait is false. */
int obj_lock_fold(struct spx_obj *s, const char *bucket, bool wait, int *fd);
void obj_unlock(int fd);

/* Write a small file whole and durable (temp, synced, renamed in), as
 * the store's drives allow: one commit where they commit metadata in
 * order (s->ordered), else the file's sync and its directory's. */
int obj_put_file(const struct spx_obj *s, const char *path, const void *p,
		 size_t n);
/* Write meta (encoded) as NAME in dirs[i] of every drive, drive 0 last.
 * dirs are made as needed. */
int obj_put_all(struct spx_obj *s, char **dirs, const char *name,
		const struct spx_buf *data);
/* The key's file NAME in key directory kdir (caller frees): kdir/NAME,
 * or kdir itself for "meta" of a key kept flat (store.c, "Flat keys"). */
char *obj_key_file(const char *kdir, const char *name);
/* obj_put_all for a key's metadata file NAME (dirs: its key directory
 * on every drive), which keeps the key flat where it is flat or new and
 * flat is asked for (a current version without a data directory), and
 * turns a flat key into a directory where it needs one. Under the key's
 * lock. */
int obj_put_key(struct spx_obj *s, char **dirs, const char *name,
		const struct spx_buf *data, bool flat);
/* Turn the key kept flat at kdir into a directory holding the same file
 * as its meta (nothing if it is not flat). Under the key's lock. */
int obj_unflat(const char *kdir);
/* Read and decode NAME in dirs[0], else (corrupt or unreadable, not
 * absent) the copies on the other drives. notfound: the code when drive
 * 0 has no such file. */
/* Is drive i there (its buckets' directory)? One that is away (not
 * mounted) has lost nothing yet. */
bool obj_drive_here(const struct spx_obj *s, int i);
int obj_get_meta(struct spx_obj *s, char **dirs, const char *name,
		 struct spx_obj_meta *m, int notfound);
/* obj_get_meta through the store's cache of decoded records (store.c
 * says when a cached record is used): for the reads of GET and HEAD. */
int obj_get_meta_cached(struct spx_obj *s, char **dirs, const char *name,
			struct spx_obj_meta *m, int notfound);
/* Read and decode the metadata file rel under directory dfd: drive 0
 * only; SPX_OBJ_NO_SUCH_KEY when it is not there. */
int obj_meta_at(int dfd, const char *rel, struct spx_obj_meta *m);
/* Read the current version of the key whose directory is enc (list.c). */
int obj_key_meta(struct spx_obj *s, const char *bucket, const char *enc,
		 struct spx_obj_meta *m);
/* Remove a tree; an absent one is fine. */
int obj_rmtree(const char *path);
/* Rename path to a unique ".del-" name beside it, then remove it. */
int obj_discard(const char *path);
void obj_dirs_free(char **dirs, int n);
int64_t obj_now_ms(void);
bool obj_utf8_valid(const char *s);
/* n random bytes as 2n hex digits. */
int obj_randhex(char *out, size_t nbytes);
int obj_write_all(int fd, const void *p, size_t n, const char *what);

/* ---- versions (version.c) ---- */

/* "v-VID" or "v-null": a noncurrent version's metadata file. */
#define OBJ_VFILE_SIZE (SPX_OBJ_VID_SIZE + 8)
void obj_vfile(const char *vid, char out[OBJ_VFILE_SIZE]);
/* The key directory on every drive (caller frees, obj_dirs_free). */
char **obj_kdirs(struct spx_obj *s, const char *bucket, const char *enc);
/* Unlink NAME in every dirs[i], drive 0 first (then fsynced): an error
 * only if drive 0's copy could not go. An absent file is fine. */
int obj_unlink_all(struct spx_obj *s, char **dirs, const char *name);
/* Remove a data directory of the key on every drive ("" or NULL: no-op). */
void obj_remove_data(struct spx_obj *s, const char *bucket, const char *enc,
		     const char *data);
/* Under the key's lock, with the bucket's versioning v: make m the
 * current version. Assigns m->vid (a new id when Enabled, else the null
 * version), m->gen and m->mtime_ms; the old current version becomes
 * noncurrent or, if both are null versions, is replaced. old[0..1]
 * (caller frees) receive data directories nothing references any more,
 * to remove after the lock is dropped. */
/* m is stamped with the incarnation inc (of the handle checked under the
 * bucket's lock). */
int obj_install(struct spx_obj *s, const char *bucket, const char *inc,
		const char *enc,
		enum spx_obj_versioning v, struct spx_obj_meta *m,
		char *old[2]);
/* Every version of a key: *out (obj_versions_free) holds *n, the
 * current one first when *current, then the rest newest first. */
int obj_versions_read(struct spx_obj *s, const char *bucket, const char *enc,
		      struct spx_obj_meta **out, size_t *n, bool *current);
void obj_versions_free(struct spx_obj_meta *v, size_t n);
/* Read version vid (NULL: current, SPX_OBJ_NO_SUCH_KEY if none; else
 * SPX_OBJ_NO_SUCH_VERSION) and the file it is in ("meta" or "v-..."). */
int obj_version_get(struct spx_obj *s, const char *bucket, const char *enc,
		    const char *vid, struct spx_obj_meta *m,
		    char name[OBJ_VFILE_SIZE]);

/* The writer for a part (mpu.c) and the PUT path share struct and code. */
enum { OBJ_W_PUT, OBJ_W_PART };
int obj_writer_new(struct spx_obj *s, const struct spx_obj_bucket *b,
		   const char *key, const struct spx_obj_meta *in, int mode,
		   struct spx_obj_writer **out);
int obj_part_commit(struct spx_obj_writer *w, struct spx_obj_meta *out);

/* Read block st->bl (+ its CRC-32C) of a shard file at st->foff into p
 * (st->bl + 4 bytes) and check it: whole and right, absent (no file, or
 * the file ends first), corrupt (its CRC), or not read (the read failed:
 * errno says why, and it may pass). */
enum { OBJ_BLOCK_OK, OBJ_BLOCK_MISSING, OBJ_BLOCK_CORRUPT, OBJ_BLOCK_ERROR };
int obj_block_read(int fd, const struct spx_obj_stripe *st, unsigned char *p);

/* Writeback of a shard file is started every this many bytes. */
#define OBJ_WRITEBACK_STEP (8u << 20)

struct spx_obj_writer {
	struct spx_obj *s;
	struct spx_obj_bucket b;	/* the handle the write is bound to */
	const char *bucket;	/* b.name */
	char *key;
	char enc[256];
	int mode;
	char upload[SPX_OBJ_UPLOAD_ID_SIZE];
	int partnum;
	char **dirs;		/* the data directory on each drive */
	int dirlock;		/* flock()ed fd of dirs[0] */
	char segname[24];
	int *fds;		/* one shard file per drive, -1 until opened */
	unsigned char *buf;	/* (k + m) blocks: the stripe being filled */
	size_t cap;		/* of buf: grown as the data comes, whole
				 * (k + m) blocks before a stripe is encoded */
	size_t fill;		/* bytes of the current stripe */
	/* Past the first stripe, a hasher thread takes the MD5 of one full
	 * stripe while the caller writes it and fills the other buffer:
	 * two stripe buffers at most (io.c, writer_submit). */
	unsigned char *spare;	/* the other stripe buffer */
	bool th_on, th_failed, busy, quit;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned char *busy_buf;
	size_t busy_fill;
	spx_obj_cond_fn cond;	/* conditional commit, or NULL */
	void *cond_ctx;
	uint64_t wr_off;	/* bytes written to each shard file */
	uint64_t wr_kicked;	/* ... of which writeback has been started */
	uint64_t size;
	bool flushed;
	void *md5;		/* EVP_MD_CTX */
	struct spx_obj_meta meta;
	int err;		/* sticky failure */
};
int obj_writer_flush(struct spx_obj_writer *w);
int obj_writer_sync(struct spx_obj_writer *w);
void obj_writer_free(struct spx_obj_writer *w, bool remove);

#endif
