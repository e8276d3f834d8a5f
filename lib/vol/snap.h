/* snap.h: snapshots of volumes in the object store.
 *
 *   struct spx_snap_store *ss;
 *   struct spx_snap_report r;
 *
 *   spx_snap_store_open(obj, vs, "123456789012", "us-east-1", &ss);
 *   if (spx_snap_create(ss, "vol-0a1b2c3d4e5f60718", NULL, &r) < 0) ...
 *   ... r.id ("snap-..."), r.uploaded (chunks stored new) ...
 *   spx_snap_restore(ss, r.id, NULL, &vinfo);   a new volume, at once
 *   spx_snap_store_close(ss);
 *
 * Layout. One bucket of the node's account, SPX_SNAP_BUCKET, reserved
 * (lib/obj: S3 clients can neither create, list nor address it), through
 * lib/obj's engine directly, holds
 *
 *   c/HASH     a chunk: the bytes of SPX_SNAP_CHUNK of a volume (fewer
 *              for a short last chunk), keyed by their SHA-256 in hex, so
 *              that a chunk is stored once however many volumes and
 *              snapshots hold it. A chunk of zeros, or a hole, is stored as
 *              nothing.
 *   m/SNAP     a manifest: the snapshot's volume, size, parent and one
 *              entry (chunk number, hash) per chunk that is not zero. Every
 *              manifest is whole, so no snapshot needs another to be
 *              restored, and deleting one breaks none.
 *
 * The manifest is the commit point: chunks are stored first, so a
 * snapshot exists once its manifest does, and everything it names exists.
 *
 * Incremental. A snapshot reads only the chunks written since its parent
 * (the volume's DIRTY plane, track.h), copies the parent's entries for the
 * rest, and stores only chunks whose hash the store lacks. Without the
 * parent the volume was last snapshotted from, or after a crash lost the
 * tracking, it reads every chunk that holds data and still stores only
 * the new ones.
 *
 * Collection (mark and sweep). Chunks no manifest names are removed by
 * spx_snap_gc, which reads every manifest (and the source manifest of
 * every volume still restoring lazily) and removes the chunks none names.
 * The race with a snapshot being made (which may find a chunk stored and
 * name it in a manifest that is not written yet) is closed by a lock:
 * making a snapshot and starting a restore hold <vol store>/.snap.lock
 * shared from before they look at a chunk until their manifest (or the
 * volume's source) is written; collection holds it exclusively. A process
 * killed at any point leaves chunks no manifest names, which the next
 * collection removes, and never a manifest naming a chunk that is gone.
 * A collection that finds the lock held (a removal's, beside a snapshot
 * or another removal) leaves a mark, <vol store>/.snap.gc-wanted, and
 * every holder looks for it as it lets go and collects then: the chunks
 * of a removed snapshot do not wait for the next removal.
 * The lock is the node's (flock); a cluster will need a lease instead.
 *
 * Return values: 0, or -1 with spx_error(): SPX_NO for a snapshot or
 * volume that does not exist (or one that does), SPX_USAGE for a bad id or
 * size, SPX_FAIL for the system, the object store, and data that is not
 * what it should be (a chunk whose bytes do not hash to its name).
 */
#ifndef SPX_VOL_SNAP_H
#define SPX_VOL_SNAP_H

#include "spx.h"

#include <semaphore.h>

#include "buf.h"
#include "id.h"
#include "obj/obj.h"
#include "vol/track.h"
#include "vol/vol.h"

#define SPX_SNAP_BUCKET SPX_OBJ_RESERVED_PREFIX "snapshots"
#define SPX_SNAP_HASH 32 /* SHA-256 */
/* The threads an eager restore fetches chunks with (spx-bench block
 * measures the object store's GET rate with as many). */
#define SPX_SNAP_FETCHERS 4

bool spx_snap_id_valid(const char *id);

/* ---- manifests ---- */

struct spx_snap_entry {
	uint64_t idx;			/* chunk number */
	unsigned char hash[SPX_SNAP_HASH];
};

struct spx_snap_manifest {
	char id[SPX_ID_SIZE];
	char volume[SPX_ID_SIZE];
	char parent[SPX_ID_SIZE];	/* "" for none */
	uint64_t size;			/* the volume's, bytes */
	uint32_t chunk;			/* SPX_SNAP_CHUNK */
	int64_t created_ms;
	uint64_t count;			/* entries (also with HEADER only) */
	struct spx_snap_entry *v;	/* by idx, ascending; NULL with HEADER */
};

/* The manifest format, version 1: one header line
 *
 *   spx-snap 1 id=SNAP volume=VOL size=N chunk=N parent=SNAP|- \
 *       created_ms=N count=N crc32c=8HEX\n
 *
 * (one space between fields, in this order) then count entries of 40
 * bytes: the chunk number (64 bits, little endian) and the SHA-256.
 * crc32c covers the entries. */
#define SPX_SNAP_HEADER_MAX 512
#define SPX_SNAP_ENTRY_SIZE 40
void spx_snap_manifest_encode(const struct spx_snap_manifest *m,
			      struct spx_buf *out);
enum {
	SPX_SNAP_HEADER = 1 << 0, /* parse only the header line of p */
};
/* Parse n bytes, bounded and strict: every field valid, count at most the
 * chunks of size, exactly count entries after the header, chunk numbers
 * ascending and inside the volume, the CRC right. 0, or -1 (SPX_FAIL)
 * with *m empty. fuzz_snap_manifest runs it on anything. */
int spx_snap_manifest_parse(const void *p, size_t n, unsigned flags,
			    struct spx_snap_manifest *m);
void spx_snap_manifest_release(struct spx_snap_manifest *m);
/* The entry of chunk idx, or NULL (a chunk of zeros). */
const struct spx_snap_entry *
spx_snap_manifest_find(const struct spx_snap_manifest *m, uint64_t idx);

/* ---- the store ---- */

struct spx_snap_store;

/* The snapshot store of the node over obj (not owned; must outlive it)
 * and the volume store vs (the same), owned by account owner: the bucket
 * is made on first use. */
int spx_snap_store_open(struct spx_obj *obj, struct spx_vol_store *vs,
			const char *owner, const char *region,
			struct spx_snap_store **out);
void spx_snap_store_close(struct spx_snap_store *ss);
/* The node's snapshot store from its configuration (conf and root as
 * spx_conf_load takes them): its object store into *obj (closed by the
 * caller, after the snapshot store) and the store on it into *out. */
int spx_snap_store_conf(const char *conf, const char *root,
			struct spx_vol_store *vs, struct spx_obj **obj,
			struct spx_snap_store **out);

/* Fetch the chunk named hash, of len bytes (its length in the volume),
 * into buf and check that it hashes to its name. On failure *lost (may
 * be NULL) says whether the chunk is gone for good, which no retry
 * mends: SPX_NO when the store does not hold it; SPX_FAIL when its bytes
 * are not the ones named, or when the store holds it but a stripe lost
 * more blocks than its parity rebuilds (spx_obj_read's SPX_OBJ_INTERNAL
 * on an object it opened; lib/obj counts a block whose read failed with
 * EIO as lost too). Else (*lost false) SPX_FAIL for a store that may
 * come back: unreachable, a drive away, too few shard files to open. */
int spx_snap_chunk_get(struct spx_snap_store *ss,
		       const unsigned char hash[SPX_SNAP_HASH], void *buf,
		       size_t len, bool *lost);

/* Read and parse a manifest: SPX_NO when there is no such snapshot. */
int spx_snap_manifest_read(struct spx_snap_store *ss, const char *id,
			   unsigned flags, struct spx_snap_manifest *m);

/* ---- snapshots ---- */

struct spx_snap_opts {
	/* The snapshot's id instead of a new one. When a snapshot of vol
	 * with this id is stored already, the call is done (a step retried
	 * after a crash): the report says existed, with nothing read. */
	const char *id;
	/* The snapshot this one counts from: NULL for the one the volume
	 * was last snapshotted from (or restored from), if it still exists.
	 * Its entries are kept for the chunks that did not change. */
	const char *parent;
	/* Read every chunk that holds data, not only the changed ones. */
	bool full;
	/* Called now and then with chunks done of total (on this thread). */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *ctx;
};

struct spx_snap_report {
	char id[SPX_ID_SIZE];
	char volume[SPX_ID_SIZE];
	char parent[SPX_ID_SIZE];	/* "" for none */
	uint64_t size;
	int64_t created_ms;
	uint64_t chunks;	/* entries of the manifest */
	uint64_t read;		/* chunks read from the volume */
	uint64_t uploaded;	/* chunks the store did not hold */
	uint64_t uploaded_bytes;
	bool incremental;	/* only the changed chunks were read */
	bool existed;		/* opts.id was stored already */
};

/* Snapshot volume vol as it is at the call (point in time, while a guest
 * keeps writing: track.h). SPX_NO also when a snapshot of vol is being
 * taken already. The node uploads at most SPX_SNAP_UPLOADS snapshots at
 * once: another takes its moment at the call all the same, and then
 * waits for one of them to end (writes to the chunks it has still to
 * read meanwhile copy them first, as during any upload). */
#define SPX_SNAP_UPLOADS 4
int spx_snap_create(struct spx_snap_store *ss, const char *vol,
		    const struct spx_snap_opts *o, struct spx_snap_report *out);

/* Snapshots of the n volumes vols at one moment, crash-consistent as a
 * guest's disks after a power cut (CreateSnapshots of an instance): no
 * write to one volume that followed a write to another is in the set
 * without the other (track.h). ids[i] is vols[i]'s snapshot id (ids, or
 * an entry, NULL: a new one); o->id and o->parent must be NULL (each
 * volume counts from its own last snapshot); progress counts the set's
 * chunks. out[i] reports vols[i]. A set stored already is done
 * (existed); one stored in part (a crash between its manifests) is
 * removed and taken again, so a set is one moment or none. */
#define SPX_SNAP_SET_MAX 32
int spx_snap_create_set(struct spx_snap_store *ss, const char *const *vols,
			const char *const *ids, size_t n,
			const struct spx_snap_opts *o,
			struct spx_snap_report *out);

/* A copy of snapshot src under id (NULL: a new id): a manifest naming
 * the same chunks, with src as its parent, so nothing is uploaded. A copy
 * named id of src that exists already is done (existed); SPX_NO when id
 * names another snapshot. */
int spx_snap_copy(struct spx_snap_store *ss, const char *src, const char *id,
		  struct spx_snap_report *out);

struct spx_snap_restore_opts {
	const char *id;		/* the new volume's id; NULL: a new one */
	uint64_t size;		/* 0: the snapshot's; never less */
	bool eager;		/* fetch every chunk before returning */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *ctx;
};

/* A new volume from snapshot snap, usable at once: its chunks are
 * fetched on first use (by the plugin, lib/vol/nbdkit) or, with eager,
 * before this returns. Every chunk the manifest names must be in the
 * store (else SPX_FAIL and no volume). */
int spx_snap_restore(struct spx_snap_store *ss, const char *snap,
		     const struct spx_snap_restore_opts *o,
		     struct spx_vol_info *out);

/* Every snapshot (manifest headers), sorted by id; one that cannot be
 * read is left out with a warning. *out (caller frees) holds *n. */
int spx_snap_list(struct spx_snap_store *ss, struct spx_snap_manifest **out,
		  size_t *n);
/* The snapshot goes (its manifest); its chunks wait for spx_snap_gc. */
int spx_snap_remove(struct spx_snap_store *ss, const char *id);

struct spx_snap_gc_report {
	uint64_t manifests;	/* read, of snapshots and restoring volumes */
	uint64_t referenced;	/* distinct chunks they name */
	uint64_t chunks;	/* chunks in the store before */
	uint64_t removed;
	uint64_t removed_bytes;
};
/* Remove the chunks no snapshot names. wait: wait for snapshots being
 * taken and restores starting; else SPX_NO when one is. A manifest that
 * cannot be read stops it (SPX_FAIL) before anything is removed. */
int spx_snap_gc(struct spx_snap_store *ss, bool wait,
		struct spx_snap_gc_report *out);

/* ---- lazy restore ---- */

/* A volume being restored lazily: its source manifest and tracking. */
struct spx_snap_fill {
	struct spx_snap_store *ss;
	struct spx_vol_track *t;
	struct spx_snap_manifest src;
	int datafd;		/* data, open for writing */
	int directfd;		/* the same with O_DIRECT, or -1 */
};
/* Set up from the volume's directory: SPX_NO when it is not restoring.
 * ss may be NULL, and set in f->ss before the first fill. */
int spx_snap_fill_open(struct spx_snap_store *ss, struct spx_vol_track *t,
		       int datafd, struct spx_snap_fill *f);
void spx_snap_fill_release(struct spx_snap_fill *f);
/* Make chunk c local if it is not yet: under the chunk's lock, fetch it
 * (buf: SPX_SNAP_CHUNK bytes), write it, fdatasync, then clear UNFILLED
 * durably. Errors as spx_snap_chunk_get; nothing is written then. */
int spx_snap_fill_chunk(struct spx_snap_fill *f, uint64_t c, void *buf,
			bool *lost);
/* The same in two steps, for fetching many chunks: fetch the chunks
 * c .. c + n - 1 that are UNFILLED (n <= SPX_SNAP_FILL_RUN; buf: n
 * chunks), then, under their locks, write those still UNFILLED, adjacent
 * ones in one write (bit j of *wrote: chunk c + j), leaving them
 * UNFILLED (a reader meanwhile fetches them again: the same bytes); then
 * commit a batch of written chunks: one fdatasync of the data, then
 * UNFILLED cleared durably for all of them. A chunk that cannot be
 * fetched fails the call, and nothing is written. */
#define SPX_SNAP_FILL_BATCH 32 /* chunks a commit, for callers that batch */
#define SPX_SNAP_FILL_RUN 4    /* chunks a fetch at most: 2 MiB */
/* The entries of m from i on that one fetch takes: chunks adjacent on
 * the volume, at most SPX_SNAP_FILL_RUN of them (0 when i is past the
 * end). */
unsigned spx_snap_fill_run(const struct spx_snap_manifest *m, uint64_t i);
/* A buffer for one such run (SPX_SNAP_FILL_RUN chunks, aligned for
 * O_DIRECT); NULL when out of memory. Put gives it back. */
struct spx_iobuf_pool;
struct spx_snap_runbuf {
	struct spx_iobuf_pool *pool;
	void *buf;
	bool pooled;
};
void *spx_snap_runbuf_get(struct spx_snap_runbuf *rb);
void spx_snap_runbuf_put(struct spx_snap_runbuf *rb);
/* fetching, if not NULL, limits the fetches from the store (held for
 * a chunk's fetch only, not the write): more threads than fetches keep
 * the store busy while some of them write. */
int spx_snap_fill_fetch(struct spx_snap_fill *f, uint64_t c, unsigned n,
			void *buf, sem_t *fetching, bool *lost,
			unsigned *wrote);
/* Defined only by a test, to act between the fetches and the locks. */
void spx_snap_fill_window(struct spx_snap_fill *f, uint64_t c, unsigned n)
	__attribute__((weak));
int spx_snap_fill_commit(struct spx_snap_fill *f, const uint64_t *c,
			 size_t n);
/* When no chunk is left to fetch: snap.json forgets the source and the
 * source manifest goes (idempotent). 1 when the restore is complete. */
int spx_snap_fill_finish(struct spx_snap_fill *f);

#endif
