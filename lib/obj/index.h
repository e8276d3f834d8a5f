/* index.h: each bucket's sorted index of keys (index.c). Internal to
 * lib/obj; the parsers are declared here for the unit test and the fuzz
 * target. */
#ifndef SPX_OBJ_INDEX_H
#define SPX_OBJ_INDEX_H

#include "obj/obj_int.h"

/* One record, in the log and in runs: op, key length (u16 little-endian,
 * 1..SPX_OBJ_KEY_MAX), the key (no NUL); for '=' the current version's
 * size (u64 LE), mtime in ms (i64 LE), ETag length (u8, under
 * SPX_OBJ_ETAG_SIZE) and ETag (no NUL); then CRC-32C of all before it.
 * The ops: '=' the key's current version is an object, as described;
 * 'd' it is a delete marker; '+' the key may have a version, not
 * described (a commit in progress or killed in it, a rebuilt index: its
 * metadata says); '-' it has none. */
#define OBJ_IDX_REC_OVERHEAD 7
#define OBJ_IDX_ATTR_SIZE 17
struct obj_idx_rec {
	const char *key;	/* into the buffer parsed, not terminated */
	const char *etag;	/* '=': likewise */
	uint64_t size;		/* '=' */
	int64_t mtime_ms;	/* '=' */
	uint32_t seq;		/* its place in the log */
	uint16_t len;
	uint8_t etaglen;
	char op;
};

/* Append a record to b. */
void obj_idx_rec_put(struct spx_buf *b, const struct obj_idx_rec *r);
/* The record that describes key's current version m ('=' or 'd'), or
 * that it has none (m NULL: '-'). Points into key and m. */
void obj_idx_rec_of(struct obj_idx_rec *r, const char *key,
		    const struct spx_obj_meta *m);
/* Parse the record at p (n bytes there): its size, 0 when n ends before
 * it does (a record still being appended), or (size_t)-1 when it is not
 * a record. */
size_t obj_idx_rec_parse(const void *p, size_t n, struct obj_idx_rec *r);
/* A log's records, sorted by key with only the last of each key kept:
 * *v (free) holds *nv pointing into p. -1 (nothing allocated) for a log
 * that holds anything but whole records and one partial last record. */
int obj_idx_log_parse(const void *p, size_t n, struct obj_idx_rec **v,
		      size_t *nv);

/* A run: "SPXIDX2\n", record count (u64 LE), offset of the offsets
 * (u64 LE), the records in strictly increasing key order, then one u64
 * LE offset per record. Check the frame of the n bytes at p; the records
 * are checked as they are read. */
bool obj_idx_run_frame(const void *p, size_t n, uint64_t *count);
/* Record i of a framed run: false when it is not a valid record. */
bool obj_idx_run_rec(const void *p, size_t n, uint64_t i,
		     struct obj_idx_rec *r);

/* The manifest: "spx-index 2\nboot B\ngen G\n", then "sealed S\n" while
 * a fold has set the log aside as log.S, then "run GEN COUNT\n" per run,
 * oldest first. (A spx that knows no sealed log rebuilds the index.) */
#define OBJ_IDX_MAX_RUNS 48
struct obj_idx_manifest {
	char boot[40];
	uint64_t gen;
	uint64_t sealed;	/* 0: none */
	int nruns;
	uint64_t run_gen[OBJ_IDX_MAX_RUNS];
	uint64_t run_count[OBJ_IDX_MAX_RUNS];
};
int obj_idx_manifest_parse(const char *p, size_t n,
			   struct obj_idx_manifest *m);

/* The index of a bucket, opened for one listing: keys in order from a
 * place, each one the index holds ('=', 'd' or '+'), which may no longer
 * have a version when it is '+' (the listing checks). */
struct obj_idx;
/* A new bucket's index: empty, so that the records of its first commits
 * describe its keys (an index made from the key directories does not). */
int obj_idx_create(struct spx_obj *s, const char *bucket);
/* Open it, building it from the key directories when it is missing,
 * damaged, or was made before this boot, and folding a large log. */
int obj_idx_open(struct spx_obj *s, const struct spx_obj_bucket *b,
		 struct obj_idx **out);
/* Go to the first key >= key (> key unless inclusive). */
void obj_idx_seek(struct obj_idx *x, const char *key, bool inclusive);
/* Go past every key that begins with prefix. */
void obj_idx_skip_prefix(struct obj_idx *x, const char *prefix);
/* The next key (valid until the next call), or NULL at the end; *r
 * its record (r->key is the returned key). */
const char *obj_idx_next(struct obj_idx *x, struct obj_idx_rec *r);
/* The index turned out damaged while it was read (what was read before
 * is right; the rest is not there). */
bool obj_idx_bad(const struct obj_idx *x);
void obj_idx_close(struct obj_idx *x);

/* Record what a commit does to key, under the key's lock: '+' before
 * it (an error must fail the commit), then obj_idx_note_meta with what
 * the key's current version is after it (m: '=' or 'd'; NULL: '-'),
 * whose error only leaves the key undescribed. held (-1 to start, or
 * NULL) keeps the log open from one note of a commit to the next, one
 * open a commit: the key's lock holds the bucket's shared, which sealing
 * the log needs exclusive, so both records go to the same log;
 * obj_idx_note_end closes it. */
int obj_idx_note(struct spx_obj *s, const char *bucket, int *held,
		 const char *key, char op);
int obj_idx_note_meta(struct spx_obj *s, const char *bucket, int *held,
		      const char *key, const struct spx_obj_meta *m);
void obj_idx_note_end(int *held);
/* After the key's lock is dropped: fold the log if this thread's last
 * note found it large. */
void obj_idx_after_note(struct spx_obj *s, const struct spx_obj_bucket *b);
/* Fold the log into the runs, or (rebuild) remake the index from the
 * key directories. One fold of a bucket at a time (its fold lock); a
 * fold holds the bucket's lock only to set the log aside and to put the
 * new manifest in place, and merges with commits going on. wait: for
 * the bucket's lock (the commits that hold it shared), and a rebuild
 * for the fold lock too; else nothing when either is held. */
int obj_idx_fold(struct spx_obj *s, const struct spx_obj_bucket *b,
		 bool rebuild, bool wait);
/* SPX_OBJ_FOLD_AWAY: the store's folding thread, made when the store is
 * opened (false: it could not be, and folds stay inline), and stopped
 * (the fold under way finished, those queued dropped) and freed. */
bool obj_idx_folder_new(struct spx_obj *s);
void obj_idx_folder_free(struct spx_obj *s);
/* Tests: called while a fold merges, holding none of the bucket's locks
 * but the fold lock. */
extern void (*obj_idx_merge_hook)(void);

#endif
