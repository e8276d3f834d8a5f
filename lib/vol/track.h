/* track.h: what the processes that share a volume know about its chunks
 * between snapshots: the nbdkit plugin that writes it, spx-vol snapshot
 * that captures it, and whoever fills a volume restored lazily.
 *
 * A volume is cut into chunks of SPX_SNAP_CHUNK bytes (the last one may
 * be short). Besides data and vol.json, its directory DIR/ID holds
 *
 *   track      a shared map (MAP_SHARED in every process that has the
 *              volume open): a 4 KiB header of coordination words, then
 *              one 64-byte group per 64 chunks, eight bit planes of one
 *              64-bit word each (the planes below). Made when the volume
 *              is, grown before it grows, so a chunk of the volume always
 *              has its bits; preallocated (no page of it can fail with
 *              SIGBUS on a full disk).
 *   snap.json  {"base", "valid", "source"}: the snapshot the DIRTY plane
 *              counts from (or "" for the empty volume), whether it
 *              counts everything (a volume made before tracking existed
 *              does not: its next snapshot reads it all), and the snapshot
 *              a lazy restore still fetches from. Written crash-safely
 *              under the meta lock.
 *   source     that snapshot's manifest, while chunks are still to fetch
 *   cow        during a snapshot, the old bytes of chunks written before
 *              the snapshot read them (copy-on-write)
 *   lock       OFD byte locks: WRITER, SNAPPER, SESSION, META below, and
 *              byte SPX_TRACK_LOCK_CHUNK + c for chunk c. OFD locks go
 *              with their holder, so a kill -9 never leaves one held.
 *
 * The planes:
 *   DIRTY     written since base. Set before the first write to a clean
 *             chunk, in the shared map: a process that dies leaves it in
 *             the page cache, which outlives it. Only the machine going
 *             down can lose a mark, so the writer records the boot it
 *             writes in (snap.json's writer_boot, durable before its
 *             first write) and syncs track before it clears that on a
 *             clean close; a writer that finds another boot's mark left
 *             there makes the plane count nothing (valid false: the next
 *             snapshot reads the whole volume, and deduplication still
 *             stores only the chunks that changed). No sync on the write
 *             path.
 *   TAKEN     moved out of DIRTY by a snapshot that has not committed
 *             yet (durable before DIRTY is cleared): if it dies, the next
 *             snapshot still reads them.
 *   PENDING   the running snapshot must still read this chunk as it was
 *             when the snapshot began.
 *   COWED     ... and its old bytes are in cow.
 *   UNFILLED  not fetched yet from the source snapshot.
 *
 * Point in time. A snapshot pauses writers (new writes wait, the ones in
 * flight drain: a few milliseconds, never the upload), moves DIRTY to
 * TAKEN, marks what it will read PENDING, and lets writers go. A write to
 * a PENDING chunk first copies the chunk to cow under the chunk's lock;
 * the snapshot reads a chunk under the same lock (from data while it is
 * PENDING, else from cow), so it sees every chunk as it was at the pause.
 * A snapshot killed at any point leaves DIRTY | TAKEN covering every
 * change since base; writers notice a dead snapshot (its SESSION lock is
 * free) and stop pausing and copying.
 *
 * One process writes a volume at a time (it holds WRITER; another gets
 * SPX_NO "in use"); readers need nothing. All functions return 0 or -1
 * with spx_error() unless they say otherwise.
 */
#ifndef SPX_VOL_TRACK_H
#define SPX_VOL_TRACK_H

#include "spx.h"

#include "id.h"

/* A snapshot chunk: 512 KiB, as EBS (docs/ARCHITECTURE.md says why). */
#define SPX_SNAP_CHUNK (512u * 1024)

enum spx_track_plane {
	SPX_TRACK_DIRTY = 0,
	SPX_TRACK_TAKEN = 1,
	SPX_TRACK_PENDING = 2,
	SPX_TRACK_COWED = 3,
	SPX_TRACK_UNFILLED = 4,
};

/* Lock bytes of DIR/ID/lock. */
enum {
	SPX_TRACK_LOCK_WRITER = 0,
	SPX_TRACK_LOCK_SNAPPER = 1,
	SPX_TRACK_LOCK_SESSION = 2,
	SPX_TRACK_LOCK_META = 3,
};
#define SPX_TRACK_LOCK_CHUNK ((off_t)1 << 20)

struct spx_vol_track;

enum {
	SPX_TRACK_CREATE = 1 << 0, /* make track (and lock) when absent */
};

/* Open the tracking of the volume in directory dir, whose size is size
 * (the chunks it may touch). A missing track is SPX_NO, or made with
 * SPX_TRACK_CREATE (and snap.json then says valid false unless it
 * exists); a smaller one grows. */
int spx_vol_track_open(const char *dir, uint64_t size, unsigned flags,
		       struct spx_vol_track **out);
void spx_vol_track_close(struct spx_vol_track *t);
uint64_t spx_vol_track_nchunks(const struct spx_vol_track *t);
/* The volume grew to size (spx_vol_resize made room already): count its
 * new chunks too. */
int spx_vol_track_resize(struct spx_vol_track *t, uint64_t size);
const char *spx_vol_track_dir(const struct spx_vol_track *t);
/* Make (or grow) track for size bytes: what create and resize call
 * before the volume has that size. */
int spx_vol_track_size(const char *dir, uint64_t size);

bool spx_vol_track_test(const struct spx_vol_track *t, int plane, uint64_t c);
/* Set or clear a bit; the previous value. */
bool spx_vol_track_set(struct spx_vol_track *t, int plane, uint64_t c);
bool spx_vol_track_clear(struct spx_vol_track *t, int plane, uint64_t c);
/* The nw words of plane (chunks 64 * i .. 64 * i + 63 in out[i]). */
void spx_vol_track_words(const struct spx_vol_track *t, int plane,
			 uint64_t *out, uint64_t nw);
/* Bits set in plane. */
uint64_t spx_vol_track_count(const struct spx_vol_track *t, int plane);
/* Make every bit set so far durable (fdatasync, shared by the threads
 * that wait for it). */
int spx_vol_track_sync(struct spx_vol_track *t);

/* Hold chunk c against the copies, captures and fills of every process
 * and thread (its lock byte and a mutex of this process). */
int spx_vol_track_chunk_lock(struct spx_vol_track *t, uint64_t c);
void spx_vol_track_chunk_unlock(struct spx_vol_track *t, uint64_t c);

/* ---- snap.json ---- */

struct spx_vol_snapstate {
	char base[SPX_ID_SIZE];	  /* "" for none */
	bool valid;
	char source[SPX_ID_SIZE]; /* "" when every chunk is local */
	/* The machine's boot id (/proc/sys/kernel/random/boot_id) while a
	 * writer has the volume open; "" once the last one closed it with
	 * its DIRTY marks synced. */
	char writer_boot[40];
};
/* Absent: base "", valid false, source "". */
int spx_vol_snapstate_read(const char *dir, struct spx_vol_snapstate *out);
/* Read, change with fn (which returns 0 to write, 1 to leave it, -1 to
 * fail), write crash-safely, all under the META lock. */
int spx_vol_snapstate_update(const char *dir,
			     int (*fn)(void *ctx, struct spx_vol_snapstate *s),
			     void *ctx);
int spx_vol_snapstate_parse(const char *buf, size_t n,
			    struct spx_vol_snapstate *out);

/* ---- the writer (the plugin) ---- */

/* Become the volume's writer: SPX_NO when another process is. Records
 * this boot in snap.json (durably), after making the DIRTY plane count
 * nothing if a writer of an earlier boot never closed (see DIRTY). */
int spx_vol_track_writer_lock(struct spx_vol_track *t);
/* Sync the marks and clear writer_boot, then stop being the writer. */
void spx_vol_track_writer_unlock(struct spx_vol_track *t);
/* Before a write (trim, zero) of len bytes at off: wait while a snapshot
 * pauses writers, mark the chunks DIRTY, copy the PENDING ones
 * to cow. Then the write, then spx_vol_track_write_end whatever
 * happened. On failure (-1) the write must not be done and _end is not
 * called. */
int spx_vol_track_write_begin(struct spx_vol_track *t, uint64_t off,
			      uint64_t len);
/* The same, for a writer with other writes of its own in flight (an
 * event loop): 1, having done nothing, when a snapshot pauses writers.
 * Such a writer must end its writes in flight before it waits in
 * spx_vol_track_write_begin: the snapshot waits for them to end. */
int spx_vol_track_write_try_begin(struct spx_vol_track *t, uint64_t off,
				  uint64_t len);
void spx_vol_track_write_end(struct spx_vol_track *t);

/* ---- the snapshot ---- */

/* Chooses the chunks a snapshot reads, while writers are paused: changed
 * holds DIRTY | TAKEN (what changed since base), capture (zeroed) gets the
 * chunks to read; both are nchunks bits in 64-bit words. */
typedef int (*spx_vol_track_pick_fn)(void *ctx, struct spx_vol_track *t,
				     const uint64_t *changed, uint64_t *capture,
				     uint64_t nchunks);
/* Take SNAPPER (SPX_NO: another snapshot of the volume is running) and
 * SESSION, clean up after a dead snapshot, pause writers, let pick
 * choose, move DIRTY to TAKEN, mark the choice PENDING, resume writers.
 * On failure every lock is released. */
int spx_vol_track_session_begin(struct spx_vol_track *t,
				spx_vol_track_pick_fn pick, void *ctx);
/* The same for n volumes at one moment (crash-consistent, as a guest's
 * disks after a power cut): every volume's writers are paused and
 * drained before any chooses, so a write to one that followed a write to
 * another is in the set only with the first. t in the volumes' id order
 * (the locks are taken in it); ctx[i] is pick's for t[i]. All begin or
 * none does. */
int spx_vol_track_session_begin_set(struct spx_vol_track *const *t, size_t n,
				    spx_vol_track_pick_fn pick,
				    void *const *ctx);
/* The bytes of chunk c (PENDING when the session began) as they were
 * then: len bytes into buf (len is the chunk's length). */
int spx_vol_track_capture(struct spx_vol_track *t, uint64_t c, void *buf,
			  size_t len);
/* End the session. committed: the snapshot is stored and snap.json
 * names it as base: TAKEN is cleared. Otherwise TAKEN stays for the next
 * one. Releases the locks. */
void spx_vol_track_session_end(struct spx_vol_track *t, bool committed);

/* ---- status shown by spx-vol info ---- */

struct spx_vol_track_status {
	uint64_t unfilled;	/* chunks still to fetch */
	uint64_t fetch_errors;	/* failed fetches since the writer started */
	int64_t last_error_ms;	/* 0: none */
	char last_error[200];
	uint64_t lost_fetches;	/* fetches that found their chunk lost (a
				 * read then fails with EIO) */
	char lost[200];		/* the last of them ("": none) */
};
void spx_vol_track_status(const struct spx_vol_track *t,
			  struct spx_vol_track_status *out);
/* Record a failed fetch (what the guest waits on). */
void spx_vol_track_fetch_error(struct spx_vol_track *t, const char *msg);
/* Record a fetch that failed for good (the store lost the chunk: the
 * read fails): counted as a failed fetch, and kept as lost, which a
 * later fetch does not clear. */
void spx_vol_track_fetch_lost(struct spx_vol_track *t, const char *msg);
void spx_vol_track_fetch_ok(struct spx_vol_track *t);

#endif
