/* index.h: each bucket's sorted index of keys (index.c). Internal to
 * lib/obj; the parsers are declared here for the unit test and the fuzz
 * target. */
#ifndef SPX_OBJ_INDEX_H
#define SPX_OBJ_INDEX_H

#include "obj/obj_int.h"

/* One record, in the log and in runs: op ('+': the key has a version,
 * '-': it has none), key length (u16 little-endian, 1..SPX_OBJ_KEY_MAX),
 * the key (no NUL), CRC-32C of the three. */
#define OBJ_IDX_REC_OVERHEAD 7
struct obj_idx_rec {
	const char *key;	/* into the buffer parsed, not terminated */
	uint32_t seq;		/* its place in the log */
	uint16_t len;
	char op;
};

/* Append a record to b. */
void obj_idx_rec_add(struct spx_buf *b, char op, const char *key, size_t len);
/* Parse the record at p (n bytes there): its size, 0 when n ends before
 * it does (a record still being appended), or (size_t)-1 when it is not
 * a record. */
size_t obj_idx_rec_parse(const void *p, size_t n, struct obj_idx_rec *r);
/* A log's records, sorted by key with only the last of each key kept:
 * *v (free) holds *nv pointing into p. -1 (nothing allocated) for a log
 * that holds anything but whole records and one partial last record. */
int obj_idx_log_parse(const void *p, size_t n, struct obj_idx_rec **v,
		      size_t *nv);

/* A run: "SPXIDX1\n", record count (u64 LE), offset of the offsets
 * (u64 LE), the records in strictly increasing key order, then one u64
 * LE offset per record. Check the frame of the n bytes at p; the records
 * are checked as they are read. */
bool obj_idx_run_frame(const void *p, size_t n, uint64_t *count);
/* Record i of a framed run: false when it is not a valid record. */
bool obj_idx_run_rec(const void *p, size_t n, uint64_t i,
		     struct obj_idx_rec *r);

/* The manifest: "spx-index 1\nboot B\ngen G\n" then "run GEN COUNT\n" per
 * run, oldest first. */
#define OBJ_IDX_MAX_RUNS 48
struct obj_idx_manifest {
	char boot[40];
	uint64_t gen;
	int nruns;
	uint64_t run_gen[OBJ_IDX_MAX_RUNS];
	uint64_t run_count[OBJ_IDX_MAX_RUNS];
};
int obj_idx_manifest_parse(const char *p, size_t n,
			   struct obj_idx_manifest *m);

/* The index of a bucket, opened for one listing: keys in order from a
 * place, each one the index holds ('+'), which may no longer have a
 * version (the listing checks). */
struct obj_idx;
/* Open it, building it from the key directories when it is missing,
 * damaged, or was made before this boot, and folding a large log. */
int obj_idx_open(struct spx_obj *s, const struct spx_obj_bucket *b,
		 struct obj_idx **out);
/* Go to the first key >= key (> key unless inclusive). */
void obj_idx_seek(struct obj_idx *x, const char *key, bool inclusive);
/* Go past every key that begins with prefix. */
void obj_idx_skip_prefix(struct obj_idx *x, const char *prefix);
/* The next key (valid until the next call), or NULL at the end. */
const char *obj_idx_next(struct obj_idx *x);
/* The index turned out damaged while it was read (what was read before
 * is right; the rest is not there). */
bool obj_idx_bad(const struct obj_idx *x);
void obj_idx_close(struct obj_idx *x);

/* Record that key got its first version ('+', before the commit: an
 * error must fail it) or lost its last ('-', after). Called under the
 * key's lock. */
int obj_idx_note(struct spx_obj *s, const char *bucket, const char *key,
		 char op);
/* After the key's lock is dropped: fold the log if this thread's last
 * note found it large. */
void obj_idx_after_note(struct spx_obj *s, const struct spx_obj_bucket *b);
/* Fold the log into the runs (rebuild: remake the index from the key
 * directories), under the bucket's lock. */
int obj_idx_fold(struct spx_obj *s, const struct spx_obj_bucket *b,
		 bool rebuild);

#endif
