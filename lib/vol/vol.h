/* vol.h: block volumes on the node's local disk.
 *
 *   struct spx_vol_store *vs;
 *   struct spx_vol_info v;
 *
 *   if (spx_vol_store_open("/var/lib/spinifex/vol", SPX_VOL_CREATE, &vs) < 0)
 *           spx_die_last();
 *   if (spx_vol_create(vs, 30ULL << 30, NULL, &v) < 0) ...
 *   ... v.id ("vol-0a1b2c3d4e5f60718"), served over NBD by nbdkit with
 *       the spx-vol plugin (lib/vol/nbdkit/spxvol.c) as export v.id ...
 *   spx_vol_store_close(vs);
 *
 * Layout. A store is a directory; each volume is DIR/ID/ with
 *
 *   data       the volume's bytes: a sparse file, thin-provisioned (a
 *              block never written, trimmed or zeroed holds no disk)
 *   vol.json   {"id", "size", "created_ms"}: written crash-safely last,
 *              so a volume exists once it is there; the size it names is
 *              the volume's (data may be longer after a crash mid-resize)
 *   track, snap.json, lock, source, cow
 *              what snapshots need (track.h)
 *
 * IDs are "vol-" and 17 lowercase hex digits (id.h). Directories that are
 * not a valid id, or have no vol.json, are not volumes: leftovers of a
 * create cut short, which listings skip. A removal renames DIR/ID to
 * DIR/.del-ID-RANDOM (the volume is gone from then on) and then frees
 * its blocks; spx_vol_store_sweep finishes one a crash interrupted.
 *
 * Return values: 0, or -1 with spx_error(): SPX_NO for a volume that does
 * not exist or already does, SPX_USAGE for a bad id or size, SPX_FAIL
 * for the system.
 */
#ifndef SPX_VOL_H
#define SPX_VOL_H

#include "spx.h"

#include "id.h"

/* The largest volume: 64 TiB, as EBS's io2 Block Express. */
#define SPX_VOL_SIZE_MAX ((uint64_t)64 << 40)
/* Sizes are whole 512-byte sectors: NBD clients and QEMU address them. */
#define SPX_VOL_SECTOR 512u

struct spx_vol_store;

enum {
	SPX_VOL_CREATE = 1 << 0, /* make the store's directory if absent */
};

int spx_vol_store_open(const char *dir, unsigned flags,
		       struct spx_vol_store **out);
void spx_vol_store_close(struct spx_vol_store *vs);
const char *spx_vol_store_dir(const struct spx_vol_store *vs);
/* Finish removals a crash cut short (DIR/.del-*: volumes already gone,
 * their blocks not yet freed). For one process per store at a time: the
 * volume server runs it as it starts. */
int spx_vol_store_sweep(struct spx_vol_store *vs);

struct spx_vol_info {
	char id[SPX_ID_SIZE];
	uint64_t size;		/* provisioned bytes */
	uint64_t allocated;	/* bytes the data file holds on disk */
	int64_t created_ms;
};

bool spx_vol_id_valid(const char *id);
/* A new volume of size bytes (1..SPX_VOL_SIZE_MAX, whole sectors), with
 * id, or a new one when id is NULL. */
int spx_vol_create(struct spx_vol_store *vs, uint64_t size, const char *id,
		   struct spx_vol_info *out);
/* What spx_vol_create_from makes a volume from (a snapshot: lib/vol's
 * snap.h), all written before the volume exists: manifest (len bytes)
 * as DIR/ID/source, snap.json naming snap as base and source, and
 * whatever prepare (may be NULL) does in the volume's directory. */
struct spx_vol_from {
	const char *snap;
	const void *manifest;
	size_t len;
	int (*prepare)(void *ctx, const char *dir);
	void *ctx;
};
int spx_vol_create_from(struct spx_vol_store *vs, uint64_t size,
			const char *id, const struct spx_vol_from *from,
			struct spx_vol_info *out);
/* The volume goes at once (renamed away, then removed). */
int spx_vol_remove(struct spx_vol_store *vs, const char *id);
/* Grow to size (whole sectors): shrinking is refused, as EBS does. */
int spx_vol_resize(struct spx_vol_store *vs, const char *id, uint64_t size);
int spx_vol_info(struct spx_vol_store *vs, const char *id,
		 struct spx_vol_info *out);
/* Every volume, sorted by id; *out (caller frees) holds *n. */
int spx_vol_list(struct spx_vol_store *vs, struct spx_vol_info **out,
		 size_t *n);
/* The directory of a volume, DIR/ID (caller frees). */
char *spx_vol_dir(const struct spx_vol_store *vs, const char *id);
/* The id of every volume directory, its record readable or not, for
 * what must miss none (the chunk collection): *ids, each and it freed by
 * the caller. */
int spx_vol_ids(struct spx_vol_store *vs, char ***ids, size_t *n);
/* The data file of a volume (caller frees). */
char *spx_vol_data_path(const struct spx_vol_store *vs, const char *id);

/* vol.json is a few dozen bytes: anything larger is not ours. */
#define SPX_VOL_RECORD_MAX 4096
/* Parse the n bytes of a vol.json that should describe volume id (the
 * directory it was found in), bounded and strict: the id must match, the
 * size be a valid volume size, no key twice. 0 and *v, or -1 (SPX_FAIL).
 * fuzz_vol_record runs it on anything. */
int spx_vol_record_parse(const char *buf, size_t n, const char *id,
			 struct spx_vol_info *v);

/* Images spx-vol import and export read and write. */
enum spx_vol_format {
	SPX_VOL_RAW = 0,
	SPX_VOL_QCOW2 = 1,
};
/* "raw" or "qcow2" to a format: -1 (SPX_USAGE) for anything else. */
int spx_vol_format_parse(const char *s);
/* The format of n bytes from the start of an image (at least 104 give a
 * qcow2 header whole) and, for qcow2, its virtual size from the header.
 * A qcow2 header that is torn, of an unknown version, encrypted, with a
 * backing file or an external data file, marked corrupt or needing an
 * unknown feature is SPX_USAGE: the image cannot be taken alone. raw
 * leaves *vsize alone (the caller knows the file's size). */
int spx_vol_image_probe(const unsigned char *p, size_t n, int *fmt,
			uint64_t *vsize);

/* The nbdkit plugin that serves a store: $SPX_VOL_PLUGIN, else
 * ../lib/nbdkit-spxvol-plugin.so beside the running program (caller
 * frees; NULL with an error when there is none). */
char *spx_vol_plugin_path(void);
/* spx's own NBD server (lib/vol/nbdkit/nbdsrv.c), which serves the same
 * plugin: $SPX_NBD, else ../lib/spx-nbd beside the running program. */
char *spx_vol_server_path(void);

#endif
