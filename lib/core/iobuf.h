/* iobuf.h: large buffers for O_DIRECT I/O, in transparent huge pages.
 *
 * The kernel pins an O_DIRECT buffer page by page, and every physically
 * separate piece of it is one segment of the block request. A disk takes
 * so many segments a request (virtio-blk: 254 on our machines), so a
 * 1 MiB buffer of scattered 4 KiB pages becomes two requests, and two
 * requests next to each other on the disk cannot be merged into one.
 * Inside one 2 MiB huge page a buffer is one segment: measured on
 * spx-nbd, 1 MiB reads went from 0.96 MiB a disk request (split) to
 * 1.3 MiB (merged) and from 2.0-2.2 GB/s to 3.5-3.8 GB/s
 * (docs/ARCHITECTURE.md).
 *
 * A pool is one mapping of whole 2 MiB pages, advised MADV_HUGEPAGE and
 * faulted in as it is used. A page serves buffers of one size class
 * (SPX_IOBUF_MIN, twice that, ... 2 MiB), each aligned to its size; a
 * buffer larger than a page takes a run of free pages. A page whose
 * buffers are all back is free for any class again, and beyond the free
 * pages the pool keeps, its memory goes back to the kernel (it is
 * faulted in again when next used). Where the kernel
 * gives no huge pages (THP off), the buffers work all the same, as
 * ordinary pages.
 *
 * Not thread-safe: one pool per thread (spx-nbd: per connection). */
#ifndef SPX_IOBUF_H
#define SPX_IOBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Smaller buffers are few segments anyway: the pool gives none. */
#define SPX_IOBUF_MIN (64u << 10)
#define SPX_IOBUF_PAGE (2u << 20)

struct spx_iobuf_pool;

/* A pool of bytes (rounded up to whole pages, at least one), or NULL
 * with the error set. Memory is taken from the kernel as buffers are
 * used; of the pages no buffer is on, keep bytes (whole pages) keep
 * theirs, the others give it back. */
struct spx_iobuf_pool *spx_iobuf_pool_new(size_t bytes, size_t keep);
void spx_iobuf_pool_free(struct spx_iobuf_pool *p);

/* A buffer of at least len bytes, aligned to 4096, or NULL when len is
 * below SPX_IOBUF_MIN or the pool has no room for it now: take another
 * allocator then. */
void *spx_iobuf_get(struct spx_iobuf_pool *p, size_t len);
/* Give back a buffer spx_iobuf_get returned. false, and nothing done,
 * when buf is not in the pool (NULL included); a pointer into the pool
 * that is not a buffer given out (given back twice, say) aborts, as a
 * second owner of a buffer would corrupt data. */
bool spx_iobuf_put(struct spx_iobuf_pool *p, void *buf);

#endif
