/* spxvol.h: what the volume plugin (spxvol.c) gives spx's own NBD server
 * (nbdsrv.c) beyond nbdkit's plugin API. The server runs the plugin's
 * callbacks for everything but the reads and writes of a volume whose
 * chunks are all local, which it does itself, on the handle's file,
 * from its event loop; these say when it may and keep the change map
 * (track.h) as the plugin's own writes do. */
#ifndef SPX_VOL_SPXVOL_H
#define SPX_VOL_SPXVOL_H

#include <stdbool.h>
#include <stdint.h>

/* The handle's data file (open for reading and writing unless the
 * handle is read-only). */
int spxvol_fd(void *handle);

/* Before a read or write of [off, off + len) done on the file: 0 to do
 * it (a write is then in flight until spxvol_direct_end); 1 when it must
 * go through the plugin's callbacks instead (chunks may be left to
 * fetch); 2, having done nothing, when !wait and a snapshot pauses
 * writers (the caller ends its own writes in flight, then calls again
 * with wait); -1 with errno when it fails (EPERM: the connection was cut
 * off; EIO: the change map failed, logged). */
int spxvol_direct_begin(void *handle, bool write, uint64_t off,
			uint32_t len, bool wait);
void spxvol_direct_end(void *handle);

#endif
