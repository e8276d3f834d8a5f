/* obj.h: the object storage engine (S3 buckets, objects, multipart).
 *
 *   struct spx_obj_opts o = { .drives = drives, .ndrives = 3,
 *                             .data = 2, .parity = 1 };
 *   struct spx_obj *s;
 *   struct spx_obj_writer *w;
 *   struct spx_obj_meta in = SPX_OBJ_META_INIT, out = SPX_OBJ_META_INIT;
 *
 *   if (spx_obj_open(&o, &s) < 0)
 *           spx_die_last();
 *   spx_obj_bucket_create(s, "photos", "123456789012", "us-east-1");
 *   spx_kv_add(&in.sys, "content-type", "image/jpeg");
 *   if (spx_obj_writer_begin(s, "photos", "a/b.jpg", &in, &w) < 0) ...
 *   while (...) spx_obj_writer_write(w, buf, n);    (on error: _abort)
 *   if (spx_obj_writer_commit(w, NULL, &out) < 0) ...  (w is gone either way)
 *   ... out.size, out.etag ...
 *   spx_obj_meta_release(&out);
 *   spx_obj_close(s);
 *
 * Return values. Every function returns 0 or a negative enum spx_obj_rc
 * and records a message with spx_error() whose exit status matches the
 * code (spx_obj_status(rc)), so `if (rc < 0) spx_die_last();` works and
 * the S3 layer switches on the code, which it words as S3 does (lib/gw).
 * SPX_OBJ_INTERNAL is -1, so `return spx_error(SPX_FAIL, ...)` is a valid
 * internal failure.
 *
 * Layout. Each of the node's k + m drive directories holds, for shard i:
 *
 *   D/.locks                          (drive 0) OFD byte locks, see below
 *   D/format                          (drive 0) the layout's version (2)
 *   D/b/BUCKET/info                   bucket record (JSON), on every drive
 *   D/b/BUCKET/o/ENC/meta             object metadata (meta.c), every drive
 *   D/b/BUCKET/o/ENC/v-VID            a noncurrent version's metadata
 *   D/b/BUCKET/o/ENC/d-GEN16/SEG      shard i of each data segment
 *   D/b/BUCKET/o/ENC                  a flat key: its meta, nothing else
 *   D/b/BUCKET/u/UPLOADID/info        a multipart upload; parts are segments
 *   D/b/BUCKET/u/UPLOADID/pNNNNN      part metadata; pNNNNN-RAND the shards
 *
 * ENC is the key, percent-encoded (bytes outside [A-Za-z0-9_.-] and a
 * leading '.' become %XX) when that is at most 200 bytes, else "~" and the
 * SHA-256 of the key in hex: never a raw user byte as a path, never "..".
 * A key whose current version keeps its data inline and that has no
 * other version is flat: ENC is its metadata file (written unnamed and
 * linked in whole when new), until the key needs a directory, which it
 * then becomes under its lock without ever going missing (store.c). A
 * directory never turns flat again; every reader of meta handles both.
 * Drive 0's copy of a metadata file is authoritative (the commit point);
 * the copies on the other drives are written first and only read when
 * drive 0's copy is unreadable or corrupt.
 *
 * Data. An object is a list of segments (one for a PUT, one per part after
 * a multipart upload), each an independent Reed-Solomon RS(k,m) code over
 * stripes of k blocks of `block` bytes (1 MiB by default): shard file i of
 * a segment holds block i of every stripe, each followed by its CRC-32C
 * (4 bytes, little endian). The last stripe's blocks are ceil(L/k) bytes.
 * A read that meets a missing or corrupt block decodes it from the others.
 * Objects up to inline_max bytes are kept inside the metadata instead.
 * Memory per reader or writer is (k + m) blocks whatever the object size.
 *
 * Atomicity and durability. A writer streams into a new data directory
 * d-GEN16 that nothing references, then, holding the key's lock, writes
 * the metadata (temp file, fsync, rename, directory fsync) on every drive,
 * drive 0 last, and only then removes the previous generation. A reader
 * reads the metadata and opens every shard file of that generation before
 * it reads (an open file outlives its unlink), so it sees the old object
 * or the new one. Commit, delete, bucket create/delete return only after
 * files and directories are fsynced. Leftovers of killed writers (data
 * directories no metadata names, temp files) are harmless and invisible;
 * spx_obj_verify(..., heal) removes them.
 *
 * Concurrency. Any number of processes and threads may use one store.
 * Writers of a key are serialised at commit by an OFD write lock on a byte
 * of D0/.locks hashed from bucket and key, under a read lock on the
 * bucket's byte (bucket create/delete take it for writing). Readers and
 * listings take no lock. A live writer holds flock() on its data directory
 * so that heal never removes it.
 *
 * Versions. A bucket is unversioned until versioning is set Enabled or
 * Suspended (it never goes back). `meta` is always the current version
 * (the newest; it may be a delete marker) and `v-VID` ("v-null" for the
 * null version) each noncurrent one, with its own data directory. Every
 * version has a generation; newer versions have larger ones, which is the
 * order of a listing. Under the key's lock a commit to an Enabled bucket
 * first writes the current version as `v-VID`, then the new `meta`; an
 * unversioned or Suspended commit replaces the null version (the current
 * one, or `v-null`, which is unlinked after `meta` is written).
 * Permanently deleting the current version first copies the newest
 * noncurrent one into `meta`, then unlinks its `v-` file. A crash between
 * those steps leaves a `v-` file that repeats `meta`'s version id: readers
 * and listings ignore it (meta wins), so every step is atomic as seen
 * from outside, and the key keeps `meta` as long as any version exists.
 *
 * Handles are not thread-safe: use one writer or reader per thread; the
 * store handle may be shared.
 */
#ifndef SPX_OBJ_H
#define SPX_OBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "kv.h"

enum spx_obj_rc {
	SPX_OBJ_OK = 0,
	SPX_OBJ_INTERNAL = -1,		/* 500 InternalError */
	SPX_OBJ_NO_SUCH_BUCKET = -2,	/* 404 NoSuchBucket */
	SPX_OBJ_NO_SUCH_KEY = -3,	/* 404 NoSuchKey */
	SPX_OBJ_BUCKET_NOT_EMPTY = -4,	/* 409 BucketNotEmpty */
	SPX_OBJ_BUCKET_OWNED = -5,	/* 409 BucketAlreadyOwnedByYou */
	SPX_OBJ_BUCKET_EXISTS = -6,	/* 409 BucketAlreadyExists */
	SPX_OBJ_INVALID_BUCKET = -7,	/* 400 InvalidBucketName */
	SPX_OBJ_KEY_TOO_LONG = -8,	/* 400 KeyTooLongError */
	SPX_OBJ_INVALID_ARG = -9,	/* 400 InvalidArgument */
	SPX_OBJ_INVALID_PART = -10,	/* 400 InvalidPart */
	SPX_OBJ_INVALID_PART_ORDER = -11, /* 400 InvalidPartOrder */
	SPX_OBJ_ENTITY_TOO_SMALL = -12,	/* 400 EntityTooSmall */
	SPX_OBJ_NO_SUCH_UPLOAD = -13,	/* 404 NoSuchUpload */
	SPX_OBJ_NO_SPACE = -14,		/* 507 InsufficientStorage */
	SPX_OBJ_BAD_DIGEST = -15,	/* 400 BadDigest */
	SPX_OBJ_INVALID_RANGE = -16,	/* 416 InvalidRange */
	SPX_OBJ_NO_SUCH_VERSION = -17,	/* 404 NoSuchVersion */
	SPX_OBJ_DELETE_MARKER = -18,	/* 405 MethodNotAllowed: that version
					 * is a delete marker */
	SPX_OBJ_INVALID_VERSION = -19,	/* 400 InvalidArgument: not a version
					 * id */
	SPX_OBJ_PRECONDITION = -20,	/* 412 PreconditionFailed */
	SPX_OBJ_LOCKED = -21,		/* 403 AccessDenied: the version is
					 * under retention or legal hold */
	SPX_OBJ_LOST = -22,		/* 500 InternalError: the bytes are
					 * gone (shard files missing, or
					 * blocks failing their CRC, past
					 * what parity rebuilds); a read that
					 * failed with an errno is
					 * SPX_OBJ_INTERNAL, and may pass */
};
#define SPX_OBJ_RC_MIN (-22)

/* The exit status of a code (SPX_OK, SPX_NO, SPX_USAGE, SPX_FAIL; unknown
 * codes: SPX_FAIL). */
int spx_obj_status(int rc);

#define SPX_OBJ_KEY_MAX 1024
#define SPX_OBJ_BUCKET_MAX 63
#define SPX_OBJ_BLOCK_DEFAULT (1024 * 1024)
#define SPX_OBJ_INLINE_DEFAULT (128 * 1024)
#define SPX_OBJ_MIN_PART_DEFAULT (5 * 1024 * 1024)
#define SPX_OBJ_MAX_PARTS 10000
/* "<32 hex>-10000" and a NUL. */
#define SPX_OBJ_ETAG_SIZE 40
#define SPX_OBJ_UPLOAD_ID_SIZE 33
/* A version id: 32 of [A-Za-z0-9._] (lib/core id.h) and a NUL. */
#define SPX_OBJ_VID_SIZE 33

struct spx_obj_opts {
	const char *const *drives;	/* ndrives directories, shard i on i */
	size_t ndrives;			/* must be data + parity */
	int data, parity;		/* k >= 1, m >= 0, k + m <= 32 */
	uint32_t block;			/* 0: 1 MiB; at least 64 */
	uint64_t inline_max;		/* 0: 128 KiB */
	uint64_t min_part;		/* 0: 5 MiB (tests use less) */
	unsigned flags;
};
enum {
	SPX_OBJ_CREATE = 1 << 0,	/* make missing drive directories */
	SPX_OBJ_NO_INLINE = 1 << 1,	/* never inline (tests of the EC path) */
	SPX_OBJ_NO_FLAT = 1 << 2,	/* every key a directory (store.c) */
	/* Fold listing indexes on a thread of the store's, so that no
	 * commit or listing waits for a merge (a server's; index.c). */
	SPX_OBJ_FOLD_AWAY = 1 << 3,
};

struct spx_obj;

/* Open a store; *out is released with spx_obj_close(). */
int spx_obj_open(const struct spx_obj_opts *o, struct spx_obj **out);
void spx_obj_close(struct spx_obj *s);

/* One data segment of an object (engine layout, shown by stat). */
struct spx_obj_seg {
	char name[24];		/* "s0", "p00001-0a1b2c3d" */
	uint64_t size;
	char md5[33];		/* hex MD5 of the segment's bytes */
	/* A part of an upload made with a checksum algorithm: the part's
	 * checksum of that algorithm (base64), else "". */
	char cksum[48];
};

/* Object metadata. Callers fill sys/user/checksums/tags for a write; the
 * engine fills the rest. Every string map is opaque to the engine:
 *   sys        system headers by lower-case name: content-type,
 *              cache-control, content-disposition, content-encoding, ...
 *   user       x-amz-meta-* (full lower-case header name -> value)
 *   checksums  "crc32c" -> base64 value, ... (set by the S3 layer)
 *   tags       tag key -> value
 * All strings must be valid UTF-8 (SPX_OBJ_INVALID_ARG otherwise). */
struct spx_obj_meta {
	char *key;
	uint64_t size;
	char etag[SPX_OBJ_ETAG_SIZE];	/* hex MD5, or hex-N (multipart) */
	int64_t mtime_ms;		/* commit time, ms since the epoch */
	uint64_t gen;			/* grows by one per overwrite */
	struct spx_kvlist sys, user, checksums, tags;
	/* Layout. */
	int k, m;
	uint32_t block;
	char data[24];			/* the data directory, "d-<16 hex>" */
	struct spx_obj_seg *segs;	/* nsegs segments, in order */
	size_t nsegs;
	size_t nparts;			/* multipart: parts; else 0 */
	bool is_inline;
	struct spx_buf inl;		/* the content when is_inline */
	/* Versions (set by the engine). "" is the null version: every
	 * object of an unversioned bucket, and what Suspended writes. A
	 * delete marker is an inline, empty version with no metadata. */
	char vid[SPX_OBJ_VID_SIZE];
	bool delete_marker;
	/* The incarnation of the bucket it was written in (set by the
	 * engine; "" in older files): a read of a version that carries its
	 * handle's incarnation needs no second look at the bucket. */
	char inc[17];
};
#define SPX_OBJ_META_INIT { .inl = SPX_BUF_INIT }
void spx_obj_meta_release(struct spx_obj_meta *m);
/* A deep copy of m into to (which it overwrites without releasing). */
void spx_obj_meta_copy(struct spx_obj_meta *to, const struct spx_obj_meta *m);

/* ---- buckets ---- */

enum spx_obj_versioning {
	SPX_OBJ_UNVERSIONED,		/* never configured */
	SPX_OBJ_VERSIONING_ENABLED,
	SPX_OBJ_VERSIONING_SUSPENDED,
};

/* A bucket as spx_obj_bucket_open found it: also the handle every object
 * call takes. inc, drawn from the CSPRNG when the bucket is made, tells
 * this bucket from another of the same name made after it was deleted:
 * every change the engine makes for a handle happens under the bucket's
 * lock after checking that inc is still the bucket's, and every read
 * checks it after opening what it reads, so a caller authorised against
 * one bucket never reads or writes its successor (SPX_OBJ_NO_SUCH_BUCKET
 * instead). Plain data: copy it freely. */
struct spx_obj_bucket {
	char name[SPX_OBJ_BUCKET_MAX + 1];
	char owner[16];		/* account id */
	char region[32];
	int64_t created_ms;
	enum spx_obj_versioning versioning; /* when opened */
	char inc[17];		/* incarnation: 16 hex, "" for buckets made
				 * before incarnations existed */
	/* Which documents may exist, when opened: bit (hash of the name
	 * % 64) set for each name ever given one (a bit stays set once
	 * set). A clear bit spares spx_obj_bucket_doc its reads; all set
	 * for buckets made before the mask was kept. */
	uint64_t docs;
};

/* S3's rules: 3-63 of [a-z0-9.-], starting and ending with a letter or
 * digit, no "..", ".-" or "-.", not an IPv4 address, no "xn--", "sthree-"
 * or "amzn-s3-demo-" prefix, no "-s3alias", "--ol-s3", ".mrap" or
 * "--x-s3" suffix. */
bool spx_obj_bucket_name_valid(const char *name);
/* Buckets spx keeps for itself (the snapshot store of lib/vol): names
 * of SPX_OBJ_RESERVED_PREFIX and 1..(63 - 11) of [a-z0-9-], ending with a
 * letter or digit. "sthree-" is a prefix S3's rules refuse, so the
 * gateway, which checks spx_obj_bucket_name_valid before it calls the
 * engine, can neither create nor address one (InvalidBucketName,
 * NoSuchBucket); every call here accepts them, spx_obj_bucket_list (S3's
 * ListBuckets) leaves them out and spx_obj_verify includes them. */
#define SPX_OBJ_RESERVED_PREFIX "sthree-spx-"
bool spx_obj_bucket_name_reserved(const char *name);
/* SPX_OBJ_BUCKET_OWNED when it exists and owner owns it,
 * SPX_OBJ_BUCKET_EXISTS when someone else does. owner: 1..15 of
 * [0-9A-Za-z], region: 1..31 of [a-z0-9-]. */
int spx_obj_bucket_create(struct spx_obj *s, const char *name,
			  const char *owner, const char *region);
/* Open a bucket: check the name (SPX_OBJ_INVALID_BUCKET) and read it
 * (SPX_OBJ_NO_SUCH_BUCKET) into *out, the handle the calls below take. */
int spx_obj_bucket_open(struct spx_obj *s, const char *name,
			struct spx_obj_bucket *out);
/* SPX_OBJ_NO_SUCH_BUCKET, SPX_OBJ_BUCKET_NOT_EMPTY (objects; pending
 * multipart uploads are aborted with the bucket). */
int spx_obj_bucket_delete(struct spx_obj *s, const struct spx_obj_bucket *b);
/* Enabled or Suspended (SPX_OBJ_INVALID_ARG for UNVERSIONED: a bucket
 * cannot go back). Waits for commits in progress in the bucket. */
int spx_obj_bucket_set_versioning(struct spx_obj *s,
				  const struct spx_obj_bucket *b,
				  enum spx_obj_versioning v);
/* The bucket's tags (empty: none) into *out, which the caller frees. */
int spx_obj_bucket_tags(struct spx_obj *s, const struct spx_obj_bucket *b,
			struct spx_kvlist *out);
/* Replace the bucket's tags (NULL or empty: remove them). The caller
 * validates them (S3's rules live in the gateway). */
int spx_obj_bucket_set_tags(struct spx_obj *s, const struct spx_obj_bucket *b,
			    const struct spx_kvlist *tags);
/* A bucket's configuration documents (the gateway's CORS rules, ...):
 * name is 1..15 of [a-z]; the document is opaque bytes, at most
 * SPX_OBJ_DOC_MAX, kept on every drive with the bucket and gone with it.
 * spx_obj_bucket_doc fills out (reset first; empty: none; a document
 * read is checked to be of b's incarnation, an absent one is not, as no
 * byte of another incarnation was read). It reads nothing for a name
 * whose bit in b->docs is clear: a document given after b was opened,
 * through another handle, is not seen through b (as if read before it
 * was given); one given through b is. set_doc with n == 0 removes it
 * (none already is fine); it changes the document under the bucket's
 * lock, of the bucket b was opened as only, and sets the name's bit in
 * the bucket's mask (before the document: a crash between leaves a bit
 * that costs a read) and in b->docs. */
#define SPX_OBJ_DOC_MAX (256u << 10)
int spx_obj_bucket_doc(struct spx_obj *s, const struct spx_obj_bucket *b,
		       const char *name, struct spx_buf *out);
int spx_obj_bucket_set_doc(struct spx_obj *s, struct spx_obj_bucket *b,
			   const char *name, const void *p, size_t n);
/* Every bucket but the reserved ones, sorted by name; *out (caller
 * frees) holds *n. */
int spx_obj_bucket_list(struct spx_obj *s, struct spx_obj_bucket **out,
			size_t *n);

/* ---- objects ---- */

/* "" and keys over SPX_OBJ_KEY_MAX bytes (KEY_TOO_LONG), invalid UTF-8 or
 * a NUL are refused. */
int spx_obj_key_check(const char *key);

struct spx_obj_writer;

/* Start writing bucket/key with the caller's metadata (in: sys, user,
 * checksums and tags are copied; NULL for none). */
int spx_obj_writer_begin(struct spx_obj *s, const struct spx_obj_bucket *b,
			 const char *key, const struct spx_obj_meta *in,
			 struct spx_obj_writer **out);
int spx_obj_writer_write(struct spx_obj_writer *w, const void *p, size_t n);
/* The metadata being written: the caller may still change sys, user,
 * checksums and tags before the commit (checksums known at the end). */
struct spx_obj_meta *spx_obj_writer_meta(struct spx_obj_writer *w);
/* Make the object visible. md5 (16 bytes, may be NULL) is the expected
 * Content-MD5: SPX_OBJ_BAD_DIGEST and nothing is written if it differs.
 * out (may be NULL) receives the final metadata. Frees w, whatever the
 * result; on failure nothing is visible and the old object remains. */
int spx_obj_writer_commit(struct spx_obj_writer *w, const unsigned char *md5,
			  struct spx_obj_meta *out);
/* Throw the write away and free w (NULL: no-op). */
void spx_obj_writer_abort(struct spx_obj_writer *w);
/* Make the commit conditional on the key's current object (conditional
 * PUT). fn runs under the key's lock just before the new object is
 * installed, so no other writer commits between the check and this one;
 * cur is NULL when the key has no current object (none, or a delete
 * marker). fn returns 0 to commit or an SPX_OBJ_ code, which the commit
 * returns with nothing changed. */
typedef int (*spx_obj_cond_fn)(void *ctx, const struct spx_obj_meta *cur);
void spx_obj_writer_condition(struct spx_obj_writer *w, spx_obj_cond_fn fn,
			      void *ctx);

struct spx_obj_reader;

/* Version arguments: NULL is the current version, "null" the null
 * version, else a version id; anything else is SPX_OBJ_INVALID_VERSION. */
bool spx_obj_vid_valid(const char *vid);
/* A version's id as S3 shows it: "null" for the null version. */
const char *spx_obj_vid_name(const char *vid);

/* Open the current version of bucket/key for reading: SPX_OBJ_NO_SUCH_KEY
 * if there is none or it is a delete marker. */
int spx_obj_reader_open(struct spx_obj *s, const struct spx_obj_bucket *b,
			const char *key, struct spx_obj_reader **out);
/* Open version vid (NULL: as above). SPX_OBJ_NO_SUCH_VERSION if there is
 * no such version, SPX_OBJ_DELETE_MARKER if vid names a delete marker. */
int spx_obj_reader_open_version(struct spx_obj *s, const struct spx_obj_bucket *b,
				const char *key, const char *vid,
				struct spx_obj_reader **out);
const struct spx_obj_meta *spx_obj_reader_meta(const struct spx_obj_reader *r);
/* Read up to len bytes at off into p; *got is 0 only at or past the end.
 * Reconstructs missing or corrupt blocks; SPX_OBJ_INTERNAL if more than m
 * shards of a stripe are lost. */
int spx_obj_read(struct spx_obj_reader *r, uint64_t off, void *p, size_t len,
		 size_t *got);
void spx_obj_reader_close(struct spx_obj_reader *r);

/* The current version's metadata; SPX_OBJ_NO_SUCH_KEY if there is none
 * or it is a delete marker. */
int spx_obj_stat(struct spx_obj *s, const struct spx_obj_bucket *b, const char *key,
		 struct spx_obj_meta *out);
/* Version vid's metadata (NULL: the current version), delete markers
 * included (out->delete_marker). SPX_OBJ_NO_SUCH_KEY when vid is NULL
 * and the key has no version, else SPX_OBJ_NO_SUCH_VERSION. */
int spx_obj_stat_version(struct spx_obj *s, const struct spx_obj_bucket *b,
			 const char *key, const char *vid,
			 struct spx_obj_meta *out);
/* Delete the current version. Unversioned bucket: the object goes
 * (SPX_OBJ_NO_SUCH_KEY if there is none). Enabled: a delete marker with a
 * new version id becomes current, even if the key had no version;
 * Suspended: a delete marker with the null version id, replacing the
 * null version. */
int spx_obj_delete(struct spx_obj *s, const struct spx_obj_bucket *b, const char *key);
struct spx_obj_deleted {
	bool delete_marker;	/* a marker was made, or the version removed
				 * was one */
	char vid[SPX_OBJ_VID_SIZE]; /* the marker's or the removed version's */
};
/* With vid NULL as spx_obj_delete; else remove that version for good
 * (SPX_OBJ_NO_SUCH_VERSION if there is none); when it was the current
 * one, the newest remaining version becomes current. out may be NULL. */
int spx_obj_delete_version(struct spx_obj *s, const struct spx_obj_bucket *b,
			   const char *key, const char *vid,
			   struct spx_obj_deleted *out);
/* The same; cond (NULL: none) is asked under the key's lock about the
 * version to remove (with vid) or the current one (without: the one a
 * delete removes or covers with a marker, which may be a marker itself;
 * SPX_OBJ_NO_SUCH_KEY when there is none) before anything changes, and its code is returned with
 * nothing changed (object lock; lifecycle, that the version it judged is
 * still the current one). */
int spx_obj_delete_version_if(struct spx_obj *s,
			      const struct spx_obj_bucket *b, const char *key,
			      const char *vid, spx_obj_cond_fn cond,
			      void *cond_ctx, struct spx_obj_deleted *out);
/* Replace the tags of version vid (NULL: the current one) in place: no
 * new version, same generation and time. SPX_OBJ_NO_SUCH_KEY /
 * SPX_OBJ_DELETE_MARKER as for reading; vid_out (may be NULL) receives
 * the version's id. */
int spx_obj_set_tags(struct spx_obj *s, const struct spx_obj_bucket *b, const char *key,
		     const char *vid, const struct spx_kvlist *tags,
		     char vid_out[SPX_OBJ_VID_SIZE]);
/* The same for any change fn makes to the version's metadata (its sys
 * headers: object lock's retention and legal hold), under the key's lock:
 * fn returns 0, or a (negative) SPX_OBJ_ code, recorded, that is returned
 * with nothing changed. */
typedef int (*spx_obj_update_fn)(void *ctx, struct spx_obj_meta *m);
int spx_obj_update(struct spx_obj *s, const struct spx_obj_bucket *b,
		   const char *key, const char *vid, spx_obj_update_fn fn,
		   void *ctx, char vid_out[SPX_OBJ_VID_SIZE]);
/* Copy version svid (NULL: current) of an object (streamed through
 * memory, k + m blocks at a time). in NULL keeps the source's sys, user
 * and tags (CopyObject's COPY directive); else in's replace them. */
int spx_obj_copy(struct spx_obj *s, const struct spx_obj_bucket *sb,
		 const char *skey, const char *svid,
		 const struct spx_obj_bucket *db, const char *dkey,
		 const struct spx_obj_meta *in, struct spx_obj_meta *out);

/* ---- listing ---- */

struct spx_obj_list_opts {
	const char *prefix;	/* NULL: "" */
	const char *after;	/* start-after / marker / continuation; NULL */
	const char *delimiter;	/* NULL or "": none */
	size_t max;		/* entries + prefixes returned; 0: 1000 */
};
struct spx_obj_entry {
	char *key;
	uint64_t size;
	char etag[SPX_OBJ_ETAG_SIZE];
	int64_t mtime_ms;
};
struct spx_obj_list {
	struct spx_obj_entry *v;	/* keys, in byte order */
	size_t n;
	char **prefixes;		/* common prefixes, in byte order */
	size_t nprefixes;
	bool truncated;
	char *next;	/* when truncated: the last key or prefix returned,
			 * the `after` of the next page */
};
#define SPX_OBJ_LIST_INIT { 0 }
/* Keys greater than after (bytewise) that begin with prefix, in S3's
 * order. With a delimiter, keys that have it after the prefix are rolled
 * up into common prefixes (each counts once toward max). */
int spx_obj_list(struct spx_obj *s, const struct spx_obj_bucket *b,
		 const struct spx_obj_list_opts *o, struct spx_obj_list *out);
void spx_obj_list_release(struct spx_obj_list *l);

/* Every version and delete marker (ListObjectVersions). */
struct spx_obj_versions_opts {
	const char *prefix;	/* NULL: "" */
	const char *key_marker;	/* start after this key; NULL */
	const char *vid_marker;	/* with key_marker: start after this
				 * version of it ("null" for the null one) */
	const char *delimiter;	/* NULL or "": none */
	size_t max;		/* versions + prefixes returned; 0: 1000 */
};
struct spx_obj_version {
	char *key;
	char vid[SPX_OBJ_VID_SIZE];	/* "" for the null version */
	bool latest, delete_marker;
	uint64_t size;
	char etag[SPX_OBJ_ETAG_SIZE];
	int64_t mtime_ms;
	char storage_class[24];		/* "" for STANDARD */
};
struct spx_obj_versions {
	struct spx_obj_version *v;	/* by key (bytewise), newest first */
	size_t n;
	char **prefixes;
	size_t nprefixes;
	bool truncated;
	char *next_key;			/* when truncated */
	char next_vid[SPX_OBJ_VID_SIZE];
	bool next_is_prefix;		/* next_key is a common prefix */
};
/* SPX_OBJ_NO_SUCH_VERSION if vid_marker is not a version of key_marker
 * (SPX_OBJ_INVALID_ARG without a key_marker). */
int spx_obj_list_versions(struct spx_obj *s, const struct spx_obj_bucket *b,
			  const struct spx_obj_versions_opts *o,
			  struct spx_obj_versions *out);
void spx_obj_versions_release(struct spx_obj_versions *l);

/* ---- multipart uploads ---- */

int spx_obj_mpu_create(struct spx_obj *s, const struct spx_obj_bucket *b,
		       const char *key, const struct spx_obj_meta *in,
		       char id[SPX_OBJ_UPLOAD_ID_SIZE]);
/* A writer for part num (1..10000) of an upload; its commit records the
 * part (replacing an earlier one of that number) and fills out->size and
 * out->etag (the part's hex MD5). */
int spx_obj_part_begin(struct spx_obj *s, const struct spx_obj_bucket *b, const char *key,
		       const char *id, int num, struct spx_obj_writer **out);

struct spx_obj_part {
	int num;
	uint64_t size;
	char etag[SPX_OBJ_ETAG_SIZE];
	int64_t mtime_ms;
	char cksum_name[16];	/* "crc32" ...: the part's checksum, "" none */
	char cksum[64];		/* its base64 value */
};
/* An upload's metadata as CreateMultipartUpload gave it. Its checksums
 * hold "algorithm" ("CRC32" ...) and "type" ("COMPOSITE" or
 * "FULL_OBJECT") when the upload asked for an object checksum. */
int spx_obj_mpu_info(struct spx_obj *s, const struct spx_obj_bucket *b, const char *key,
		     const char *id, struct spx_obj_meta *out);
/* The parts uploaded so far with num > marker, at most max (0: 1000). */
int spx_obj_mpu_parts(struct spx_obj *s, const struct spx_obj_bucket *b, const char *key,
		      const char *id, int marker, size_t max,
		      struct spx_obj_part **out, size_t *n, bool *truncated);
/* Complete: parts (num ascending, etag hex with or without quotes) become
 * the object's segments by linking, without copying data. Errors:
 * SPX_OBJ_INVALID_PART_ORDER, SPX_OBJ_INVALID_PART (missing, or another
 * ETag), SPX_OBJ_ENTITY_TOO_SMALL (a part but the last under min_part),
 * SPX_OBJ_NO_SUCH_UPLOAD. The ETag is hex(MD5(part MD5s))-N.
 * An upload with an algorithm (spx_obj_mpu_info) gets the object checksum
 * of its type from the parts' checksums: COMPOSITE, base64 of the
 * checksum of the parts' raw checksums, "-N"; FULL_OBJECT, the CRC of
 * the whole object. Every part must have one (SPX_OBJ_INVALID_PART), and
 * a checksum given with a part must be the part's. */
struct spx_obj_complete_part {
	int num;
	const char *etag;
	const char *checksum;	/* base64 of the upload's algorithm, or NULL */
};
/* want_ck: the object checksum the client stated (base64; NULL: none),
 * checked before anything changes: SPX_OBJ_BAD_DIGEST when it differs,
 * SPX_OBJ_INVALID_ARG when the upload has no algorithm. */
int spx_obj_mpu_complete(struct spx_obj *s, const struct spx_obj_bucket *b,
			 const char *key, const char *id,
			 const struct spx_obj_complete_part *parts, size_t n,
			 const char *want_ck, struct spx_obj_meta *out);
/* The same, conditional on the key's current object as
 * spx_obj_writer_condition has it: cond (NULL: none) runs under the key's
 * lock before anything changes; its SPX_OBJ_ code is returned with the
 * upload left as it was. */
int spx_obj_mpu_complete_if(struct spx_obj *s, const struct spx_obj_bucket *b,
			    const char *key, const char *id,
			    const struct spx_obj_complete_part *parts,
			    size_t n, const char *want_ck,
			    spx_obj_cond_fn cond, void *cond_ctx,
			    struct spx_obj_meta *out);
int spx_obj_mpu_abort(struct spx_obj *s, const struct spx_obj_bucket *b, const char *key,
		      const char *id);

struct spx_obj_upload {
	char *key;
	char id[SPX_OBJ_UPLOAD_ID_SIZE];
	int64_t initiated_ms;
	struct spx_kvlist sys;	/* the system entries it was begun with */
};
/* Pending uploads whose key begins with prefix, by key then time. */
int spx_obj_mpu_list(struct spx_obj *s, const struct spx_obj_bucket *b,
		     const char *prefix, struct spx_obj_upload **out,
		     size_t *n);
void spx_obj_upload_free(struct spx_obj_upload *v, size_t n);

/* ---- verify and heal ---- */

struct spx_obj_check {
	const char *bucket, *key;
	size_t blocks;		/* shard blocks examined */
	size_t missing;		/* shard blocks absent (file or tail) */
	size_t corrupt;		/* shard blocks failing their CRC */
	size_t meta_bad;	/* metadata copies missing or corrupt */
	size_t healed;		/* blocks and copies rewritten */
	bool lost;		/* some stripe has more than m bad blocks */
};
/* Called once per object; a non-zero return stops the scan with it. */
typedef int spx_obj_check_fn(void *ctx, const struct spx_obj_check *c);
/* Scan every object of bucket (NULL: every bucket). With heal, rewrite
 * the bad shard files and metadata copies (under the key's lock) and
 * remove leftovers of killed writers. */
/* Drive 0 was replaced (it is empty, or lost some files): copy onto it
 * the bucket records and object metadata (current and older versions)
 * that it lacks, from the first good copy on the other drives, under the
 * bucket's and key's locks. Drive 0's copy is the commit point, so a
 * missing one otherwise means "never committed": only the operator knows
 * the drive was replaced. spx_obj_verify(..., heal) then rebuilds its
 * shard files. *restored counts the files copied. */
int spx_obj_restore_drive0(struct spx_obj *s, size_t *restored);
int spx_obj_verify(struct spx_obj *s, const char *bucket, bool heal,
		   spx_obj_check_fn *fn, void *ctx);

/* ---- internals exposed for tests and the fuzz target ---- */

/* Encode key into a file name (out: at least 256 bytes). */
void spx_obj_key_encode(const char *key, char *out, size_t outsz);

/* Stripe s of a segment of `size` bytes: data offset and length, block
 * length, and the offset of its block in every shard file. */
struct spx_obj_stripe {
	uint64_t off;
	size_t len;
	size_t bl;
	uint64_t foff;
};
uint64_t spx_obj_nstripes(uint64_t size, int k, uint32_t block);
void spx_obj_stripe_at(uint64_t size, int k, uint32_t block, uint64_t s,
		       struct spx_obj_stripe *out);
uint64_t spx_obj_shard_size(uint64_t size, int k, uint32_t block);

/* Reed-Solomon over GF(2^8) with ISA-L's Cauchy matrix. */
struct spx_ec {
	int k, m;
	unsigned char *matrix;	/* (k+m) x k */
	unsigned char *tbls;	/* k x m x 32 */
};
int spx_ec_init(struct spx_ec *e, int k, int m);
void spx_ec_release(struct spx_ec *e);
/* sh[0..k) data, sh[k..k+m) parity out. */
void spx_ec_encode(const struct spx_ec *e, size_t len, unsigned char **sh);
/* Rebuild every shard with ok[i] false from k with ok[i] true; -1 if
 * fewer than k are ok. */
int spx_ec_decode(const struct spx_ec *e, size_t len, unsigned char **sh,
		  const bool *ok);

/* The metadata file: "spx-obj-meta 1 json=N data=N crc32c=HEX\n", N bytes
 * of JSON and N bytes of inline content; decode checks all of it and
 * returns 0 or SPX_OBJ_INTERNAL (corrupt) without touching the disk. */
void spx_obj_meta_encode(const struct spx_obj_meta *m, struct spx_buf *out);
int spx_obj_meta_decode(const char *p, size_t n, struct spx_obj_meta *m);

#endif
