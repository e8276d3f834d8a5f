/* spxvol.c: the nbdkit plugin that serves a volume store (lib/vol) over
 * NBD, one export per volume, named by its id.
 *
 *   nbdkit -U SOCKET nbdkit-spxvol-plugin.so dir=STORE
 *
 * Why nbdkit with a plugin of ours (docs/ARCHITECTURE.md says more):
 * nbdkit is the well-kept NBD server (newstyle handshake, TLS, multi-conn,
 * structured replies, block status, export listing) and leaves the
 * storage to the plugin, which is where spx's work is: reading and
 * writing the sparse data file with the durability NBD promises, and,
 * later, fetching the chunks of a volume made from a snapshot on first
 * read and tracking which chunks changed since the last snapshot.
 *
 * Durability: a write is acknowledged once pwrite(2) returned (in the
 * page cache); FLUSH is fdatasync(2) of the file, and a FUA write, trim or
 * zero is followed by one before it is acknowledged, so whatever a client
 * saw flushed survives kill -9 of every process and a power loss. One
 * fdatasync covers every connection's writes to the file, so several
 * connections may be open at once (multi-conn). A full disk is ENOSPC for
 * the write that needs a new block, never damage to what was written.
 */
#include "spx.h"

#include <linux/falloc.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "vol/vol.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static char *store_dir;
static struct spx_vol_store *vs;

struct handle {
	int fd;
	uint64_t size;
	bool readonly;
};

static void spxvol_unload(void)
{
	spx_vol_store_close(vs);
	free(store_dir);
}

static int spxvol_config(const char *key, const char *value)
{
	if (!strcmp(key, "dir")) {
		free(store_dir);
		store_dir = nbdkit_absolute_path(value);
		return store_dir ? 0 : -1;
	}
	nbdkit_error("unknown parameter '%s'", key);
	return -1;
}

static int spxvol_config_complete(void)
{
	if (!store_dir) {
		nbdkit_error("dir=STORE is required");
		return -1;
	}
	if (spx_vol_store_open(store_dir, 0, &vs) < 0) {
		nbdkit_error("%s", spx_errmsg());
		return -1;
	}
	return 0;
}

static int spxvol_list_exports(int readonly, int is_tls,
			       struct nbdkit_exports *exports)
{
	struct spx_vol_info *v = NULL;
	size_t n = 0;
	int rc = 0;

	if (spx_vol_list(vs, &v, &n) < 0) {
		nbdkit_error("%s", spx_errmsg());
		return -1;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = nbdkit_add_export(exports, v[i].id, NULL);
	free(v);
	return rc;
}

static void *spxvol_open(int readonly)
{
	const char *name = nbdkit_export_name();
	struct spx_vol_info v;
	struct handle *h;
	char *path;

	if (!name || !spx_vol_id_valid(name)) {
		nbdkit_error("the export name must be a volume id, not '%s'",
			     name ? name : "");
		errno = ENOENT;
		return NULL;
	}
	if (spx_vol_info(vs, name, &v) < 0) {
		nbdkit_error("%s", spx_errmsg());
		errno = ENOENT;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		nbdkit_error("out of memory");
		return NULL;
	}
	path = spx_vol_data_path(vs, name);
	h->fd = open(path, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (h->fd < 0) {
		nbdkit_error("cannot open '%s': %m", path);
		free(path);
		free(h);
		return NULL;
	}
	free(path);
	h->size = v.size;
	h->readonly = readonly;
	return h;
}

static void spxvol_close(void *handle)
{
	struct handle *h = handle;

	close(h->fd);
	free(h);
}

static int64_t spxvol_get_size(void *handle)
{
	return (int64_t)((struct handle *)handle)->size;
}

static int spxvol_block_size(void *handle, uint32_t *minimum,
			     uint32_t *preferred, uint32_t *maximum)
{
	*minimum = 1;
	*preferred = 4096;
	*maximum = 0xffffffff;
	return 0;
}

static int yes(void *handle)
{
	return 1;
}

static int spxvol_is_rotational(void *handle)
{
	return 0;
}

static int spxvol_can_fua(void *handle)
{
	return NBDKIT_FUA_NATIVE;
}

static int spxvol_can_cache(void *handle)
{
	return NBDKIT_CACHE_NATIVE;
}

/* The write is on the disk before it is acknowledged. */
static int sync_if(struct handle *h, uint32_t flags)
{
	if ((flags & NBDKIT_FLAG_FUA) && fdatasync(h->fd) < 0) {
		nbdkit_error("fdatasync: %m");
		return -1;
	}
	return 0;
}

static int spxvol_pread(void *handle, void *buf, uint32_t count,
			uint64_t offset, uint32_t flags)
{
	struct handle *h = handle;
	char *p = buf;

	while (count) {
		ssize_t r = pread(h->fd, p, count, (off_t)offset);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			nbdkit_error("pread: %m");
			return -1;
		}
		if (!r) { /* past the file (cannot be, but a zero is right) */
			memset(p, 0, count);
			break;
		}
		p += r;
		count -= (uint32_t)r;
		offset += (uint64_t)r;
	}
	return 0;
}

static int spxvol_pwrite(void *handle, const void *buf, uint32_t count,
			 uint64_t offset, uint32_t flags)
{
	struct handle *h = handle;
	const char *p = buf;

	while (count) {
		ssize_t r = pwrite(h->fd, p, count, (off_t)offset);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* ENOSPC reaches the client as itself (nbdkit keeps
			 * errno): only the new block failed. */
			nbdkit_error("pwrite: %m");
			return -1;
		}
		p += r;
		count -= (uint32_t)r;
		offset += (uint64_t)r;
	}
	return sync_if(h, flags);
}

static int spxvol_flush(void *handle, uint32_t flags)
{
	struct handle *h = handle;

	if (fdatasync(h->fd) < 0) {
		nbdkit_error("fdatasync: %m");
		return -1;
	}
	return 0;
}

static int spxvol_trim(void *handle, uint32_t count, uint64_t offset,
		       uint32_t flags)
{
	struct handle *h = handle;

	/* The blocks go back to the host: thin again. */
	if (fallocate(h->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)offset, count) < 0) {
		nbdkit_error("trim: %m");
		return -1;
	}
	return sync_if(h, flags);
}

static int spxvol_zero(void *handle, uint32_t count, uint64_t offset,
		       uint32_t flags)
{
	struct handle *h = handle;
	int mode = flags & NBDKIT_FLAG_MAY_TRIM
			   ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
			   : FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;

	if (fallocate(h->fd, mode, (off_t)offset, count) < 0) {
		/* A file system without ZERO_RANGE: nbdkit writes zeros
		 * itself (or says a fast zero is not to be had). */
		if (errno == EOPNOTSUPP)
			errno = ENOTSUP;
		if (errno != ENOTSUP)
			nbdkit_error("zero: %m");
		return -1;
	}
	return sync_if(h, flags);
}

static int spxvol_extents(void *handle, uint32_t count, uint64_t offset,
			  uint32_t flags, struct nbdkit_extents *extents)
{
	struct handle *h = handle;
	uint64_t end = offset + count;

	while (offset < end) {
		off_t data = lseek(h->fd, (off_t)offset, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO)
			data = (off_t)end; /* holes to the end */
		else if (data < 0) {
			nbdkit_error("lseek: %m");
			return -1;
		}
		if ((uint64_t)data > offset) {
			uint64_t to = (uint64_t)data < end ? (uint64_t)data : end;

			if (nbdkit_add_extent(extents, offset, to - offset,
					      NBDKIT_EXTENT_HOLE |
						      NBDKIT_EXTENT_ZERO) < 0)
				return -1;
			offset = to;
			if ((flags & NBDKIT_FLAG_REQ_ONE) || offset >= end)
				break;
		}
		hole = lseek(h->fd, (off_t)offset, SEEK_HOLE);
		if (hole < 0) {
			nbdkit_error("lseek: %m");
			return -1;
		}
		{
			uint64_t to = (uint64_t)hole < end ? (uint64_t)hole : end;

			if (nbdkit_add_extent(extents, offset, to - offset, 0) <
			    0)
				return -1;
			offset = to;
		}
		if (flags & NBDKIT_FLAG_REQ_ONE)
			break;
	}
	return 0;
}

static int spxvol_cache(void *handle, uint32_t count, uint64_t offset,
			uint32_t flags)
{
	struct handle *h = handle;
	int e = posix_fadvise(h->fd, (off_t)offset, count, POSIX_FADV_WILLNEED);

	if (e) {
		errno = e;
		nbdkit_error("posix_fadvise: %m");
		return -1;
	}
	return 0;
}

static struct nbdkit_plugin plugin = {
	.name = "spxvol",
	.longname = "spx volumes",
	.description = "spx's block volumes (lib/vol), one export per volume",
	.unload = spxvol_unload,
	.config = spxvol_config,
	.config_complete = spxvol_config_complete,
	.config_help = "dir=<STORE>   the volume store (required)",
	.magic_config_key = "dir",
	.list_exports = spxvol_list_exports,
	.open = spxvol_open,
	.close = spxvol_close,
	.get_size = spxvol_get_size,
	.block_size = spxvol_block_size,
	.can_write = yes,
	.can_flush = yes,
	.can_trim = yes,
	.can_zero = yes,
	.can_fast_zero = yes,
	.can_extents = yes,
	.can_multi_conn = yes,
	.can_fua = spxvol_can_fua,
	.can_cache = spxvol_can_cache,
	.is_rotational = spxvol_is_rotational,
	.pread = spxvol_pread,
	.pwrite = spxvol_pwrite,
	.flush = spxvol_flush,
	.trim = spxvol_trim,
	.zero = spxvol_zero,
	.extents = spxvol_extents,
	.cache = spxvol_cache,
	.errno_is_preserved = 1,
};

NBDKIT_REGISTER_PLUGIN(plugin)
