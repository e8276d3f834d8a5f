/* vol.c: block volumes on local disk (contract in vol.h). */
#include "spx.h"

#include <dirent.h>
#include <jansson.h>
#include <sys/stat.h>

#include "file.h"
#include "proc.h"
#include "vol/track.h"
#include "vol/vol.h"

struct spx_vol_store {
	char *dir;
};

int spx_vol_store_open(const char *dir, unsigned flags,
		       struct spx_vol_store **out)
{
	struct stat st;

	*out = NULL;
	if ((flags & SPX_VOL_CREATE) && spx_mkdirs(dir, 0700) < 0)
		return -1;
	if (stat(dir, &st) < 0)
		return spx_error_errno(errno == ENOENT ? SPX_NO : SPX_FAIL,
				       "cannot open '%s'", dir);
	if (!S_ISDIR(st.st_mode))
		return spx_error(SPX_FAIL, "'%s' is not a directory", dir);
	*out = spx_calloc(1, sizeof(**out));
	(*out)->dir = spx_strdup(dir);
	return 0;
}

void spx_vol_store_close(struct spx_vol_store *vs)
{
	if (!vs)
		return;
	free(vs->dir);
	free(vs);
}

const char *spx_vol_store_dir(const struct spx_vol_store *vs)
{
	return vs->dir;
}

int spx_vol_store_sweep(struct spx_vol_store *vs)
{
	DIR *d = opendir(vs->dir);
	struct dirent *e;
	int rc = 0;

	if (!d)
		return spx_error_errno(SPX_FAIL, "cannot open '%s'", vs->dir);
	while ((e = readdir(d))) {
		char *p;

		if (strncmp(e->d_name, ".del-", 5))
			continue;
		p = spx_path_join(vs->dir, e->d_name);
		if (spx_rmtree(p) < 0)
			rc = -1;
		free(p);
	}
	closedir(d);
	return rc;
}

bool spx_vol_id_valid(const char *id)
{
	return id && spx_id_valid(id, "vol");
}

static int id_check(const char *id)
{
	if (!spx_vol_id_valid(id))
		return spx_error(SPX_USAGE,
				 "'%s' is not a volume id (vol- and 17 hex "
				 "digits)",
				 id ? id : "");
	return 0;
}

static int size_check(uint64_t size)
{
	if (!size || size > SPX_VOL_SIZE_MAX || size % SPX_VOL_SECTOR)
		return spx_error(SPX_USAGE,
				 "a volume is 1 to %llu bytes in whole %u-byte "
				 "sectors, not %llu",
				 (unsigned long long)SPX_VOL_SIZE_MAX,
				 SPX_VOL_SECTOR, (unsigned long long)size);
	return 0;
}

char *spx_vol_dir(const struct spx_vol_store *vs, const char *id)
{
	return spx_xprintf("%s/%s", vs->dir, id);
}

char *spx_vol_data_path(const struct spx_vol_store *vs, const char *id)
{
	return spx_xprintf("%s/%s/data", vs->dir, id);
}

static int meta_write(const struct spx_vol_store *vs,
		      const struct spx_vol_info *v)
{
	json_t *o = json_pack("{s:s, s:I, s:I}", "id", v->id, "size",
			      (json_int_t)v->size, "created_ms",
			      (json_int_t)v->created_ms);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	char *path = spx_xprintf("%s/%s/vol.json", vs->dir, v->id);
	int rc;

	rc = text ? spx_write_file(path, text, strlen(text), 0600, false)
		  : spx_error(SPX_FAIL, "cannot encode '%s'", v->id);
	free(text);
	free(path);
	json_decref(o);
	return rc;
}

int spx_vol_record_parse(const char *buf, size_t n, const char *id,
			 struct spx_vol_info *v)
{
	json_t *o = NULL, *sz, *cr, *jid;
	int rc = -1;

	memset(v, 0, sizeof(*v));
	if (n > SPX_VOL_RECORD_MAX || !spx_vol_id_valid(id))
		return spx_error(SPX_FAIL, "not a volume record");
	o = json_loadb(buf, n, JSON_REJECT_DUPLICATES, NULL);
	jid = o ? json_object_get(o, "id") : NULL;
	sz = o ? json_object_get(o, "size") : NULL;
	cr = o ? json_object_get(o, "created_ms") : NULL;
	if (json_is_string(jid) && !strcmp(json_string_value(jid), id) &&
	    json_is_integer(sz) && json_integer_value(sz) > 0 &&
	    (uint64_t)json_integer_value(sz) <= SPX_VOL_SIZE_MAX &&
	    !((uint64_t)json_integer_value(sz) % SPX_VOL_SECTOR) &&
	    json_is_integer(cr) && json_integer_value(cr) >= 0) {
		snprintf(v->id, sizeof(v->id), "%s", id);
		v->size = (uint64_t)json_integer_value(sz);
		v->created_ms = (int64_t)json_integer_value(cr);
		rc = 0;
	} else {
		spx_error(SPX_FAIL, "not a volume record");
	}
	json_decref(o);
	return rc;
}

/* Read vol.json of id: SPX_NO when the volume does not exist. */
static int meta_read(const struct spx_vol_store *vs, const char *id,
		     struct spx_vol_info *v)
{
	char *path = spx_xprintf("%s/%s/vol.json", vs->dir, id);
	char buf[SPX_VOL_RECORD_MAX + 1];
	ssize_t n;
	int fd, rc = -1;

	memset(v, 0, sizeof(*v));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ENOENT || errno == ENOTDIR
			     ? spx_error(SPX_NO, "no volume '%s'", id)
			     : spx_error_errno(SPX_FAIL, "cannot open '%s'", path);
		goto out;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || n > SPX_VOL_RECORD_MAX)
		rc = spx_error(SPX_FAIL, "cannot read '%s'", path);
	else if ((rc = spx_vol_record_parse(buf, (size_t)n, id, v)) < 0)
		spx_error(SPX_FAIL, "'%s' is corrupt", path);
out:
	free(path);
	return rc;
}

static int allocated(const struct spx_vol_store *vs, struct spx_vol_info *v)
{
	char *path = spx_vol_data_path(vs, v->id);
	struct stat st;
	int rc = 0;

	if (stat(path, &st) < 0)
		rc = spx_error_errno(SPX_FAIL, "cannot stat '%s'", path);
	else
		v->allocated = (uint64_t)st.st_blocks * 512;
	free(path);
	return rc;
}

static int fresh_state(void *ctx, struct spx_vol_snapstate *s)
{
	const char *snap = ctx;

	snprintf(s->base, sizeof(s->base), "%s", snap ? snap : "");
	snprintf(s->source, sizeof(s->source), "%s", snap ? snap : "");
	s->valid = true;
	return 0;
}

int spx_vol_create(struct spx_vol_store *vs, uint64_t size, const char *id,
		   struct spx_vol_info *out)
{
	return spx_vol_create_from(vs, size, id, NULL, out);
}

int spx_vol_create_from(struct spx_vol_store *vs, uint64_t size,
			const char *id, const struct spx_vol_from *from,
			struct spx_vol_info *out)
{
	struct spx_vol_info v = { 0 };
	char *dir = NULL, *data = NULL;
	int fd = -1, rc = -1;

	if (size_check(size) < 0 || (id && id_check(id) < 0))
		return -1;
	if (id)
		snprintf(v.id, sizeof(v.id), "%s", id);
	else if (spx_id_new(v.id, sizeof(v.id), "vol") < 0)
		return -1;
	v.size = size;
	v.created_ms = spx_wall_ms();
	dir = spx_xprintf("%s/%s", vs->dir, v.id);
	if (mkdir(dir, 0700) < 0) {
		rc = errno == EEXIST
			     ? spx_error(SPX_NO, "volume '%s' exists", v.id)
			     : spx_error_errno(SPX_FAIL, "cannot create '%s'",
					       dir);
		goto out;
	}
	data = spx_vol_data_path(vs, v.id);
	fd = open(data, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 || fsync(fd) < 0) {
		/* ext4 holds files up to 16 TiB, XFS up to 8 EiB. */
		rc = errno == EFBIG || errno == EINVAL
			     ? spx_error(SPX_USAGE,
					 "%llu bytes is more than a file on "
					 "the file system of '%s' can hold",
					 (unsigned long long)size, vs->dir)
			     : spx_error_errno(SPX_FAIL, "cannot create '%s'",
					       data);
		goto undo;
	}
	/* Tracking from the first write: a new volume's changes since the
	 * empty volume (or since the snapshot it is made from) are all
	 * counted. */
	if (spx_vol_track_size(dir, size) < 0)
		goto undo;
	if (from) {
		char *src = spx_xprintf("%s/source", dir);

		bool bad = spx_write_file(src, from->manifest, from->len, 0600,
					  true) < 0 ||
			   (from->prepare && from->prepare(from->ctx, dir) < 0);

		free(src);
		if (bad)
			goto undo;
	}
	if (spx_vol_snapstate_update(dir, fresh_state,
				     from ? (void *)from->snap : NULL) < 0)
		goto undo;
	/* vol.json last: its presence makes the volume. */
	if (spx_fsync_dir(dir) < 0 || meta_write(vs, &v) < 0 ||
	    spx_fsync_dir(vs->dir) < 0)
		goto undo;
	if (out)
		*out = v;
	rc = 0;
	goto out;
undo:
	spx_rmtree(dir);
out:
	if (fd >= 0)
		close(fd);
	free(dir);
	free(data);
	return rc;
}

int spx_vol_remove(struct spx_vol_store *vs, const char *id)
{
	struct spx_vol_info v;
	char *dir, *gone;
	char rnd[9];
	unsigned char r[4];
	int rc;

	if (id_check(id) < 0 || meta_read(vs, id, &v) < 0)
		return -1;
	if (spx_random(r, sizeof(r)) < 0)
		return -1;
	snprintf(rnd, sizeof(rnd), "%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
	dir = spx_xprintf("%s/%s", vs->dir, id);
	gone = spx_xprintf("%s/.del-%s-%s", vs->dir, id, rnd);
	/* The rename is the removal; the rest is cleaning up. */
	if (rename(dir, gone) < 0)
		rc = spx_error_errno(SPX_FAIL, "cannot remove '%s'", dir);
	else
		rc = spx_fsync_dir(vs->dir) < 0 ? -1 : spx_rmtree(gone);
	free(dir);
	free(gone);
	return rc;
}

int spx_vol_resize(struct spx_vol_store *vs, const char *id, uint64_t size)
{
	struct spx_vol_info v;
	char *data;
	int rc;

	if (id_check(id) < 0 || size_check(size) < 0 ||
	    meta_read(vs, id, &v) < 0)
		return -1;
	if (size < v.size)
		return spx_error(SPX_USAGE,
				 "'%s' is %llu bytes: a volume only grows",
				 id, (unsigned long long)v.size);
	if (size == v.size)
		return 0;
	/* Tracking and data first: a crash between leaves them longer and
	 * the old size, which is still the volume's. */
	{
		char *dir = spx_vol_dir(vs, id);

		rc = spx_vol_track_size(dir, size);
		free(dir);
		if (rc < 0)
			return -1;
	}
	data = spx_vol_data_path(vs, id);
	if (truncate(data, (off_t)size) < 0)
		rc = errno == EFBIG || errno == EINVAL
			     ? spx_error(SPX_USAGE,
					 "%llu bytes is more than a file on "
					 "the file system of '%s' can hold",
					 (unsigned long long)size, vs->dir)
			     : spx_error_errno(SPX_FAIL, "cannot grow '%s'",
					       data);
	else
		rc = 0;
	free(data);
	if (rc < 0)
		return rc;
	v.size = size;
	return meta_write(vs, &v);
}

int spx_vol_info(struct spx_vol_store *vs, const char *id,
		 struct spx_vol_info *out)
{
	if (id_check(id) < 0 || meta_read(vs, id, out) < 0)
		return -1;
	return allocated(vs, out);
}

static int info_cmp(const void *a, const void *b)
{
	return strcmp(((const struct spx_vol_info *)a)->id,
		      ((const struct spx_vol_info *)b)->id);
}

int spx_vol_ids(struct spx_vol_store *vs, char ***out, size_t *n)
{
	DIR *d = opendir(vs->dir);
	struct dirent *e;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return spx_error_errno(SPX_FAIL, "cannot open '%s'", vs->dir);
	while ((e = readdir(d))) {
		if (!spx_vol_id_valid(e->d_name))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			*out = spx_realloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = spx_strdup(e->d_name);
	}
	closedir(d);
	return 0;
}

int spx_vol_list(struct spx_vol_store *vs, struct spx_vol_info **out,
		 size_t *n)
{
	char **ids;
	size_t nids, cap = 0;

	*out = NULL;
	*n = 0;
	if (spx_vol_ids(vs, &ids, &nids) < 0)
		return -1;
	for (size_t i = 0; i < nids; i++) {
		struct spx_vol_info v;

		/* One unreadable volume never breaks a listing. */
		if (meta_read(vs, ids[i], &v) < 0 || allocated(vs, &v) < 0) {
			if (spx_errstatus() != SPX_NO)
				spx_log(SPX_LOG_WARN, "vol: %s", spx_errmsg());
		} else {
			if (*n == cap) {
				cap = cap ? 2 * cap : 16;
				*out = spx_realloc(*out, cap * sizeof(**out));
			}
			(*out)[(*n)++] = v;
		}
		free(ids[i]);
	}
	free(ids);
	spx_error_clear();
	if (*n)
		qsort(*out, *n, sizeof(**out), info_cmp);
	return 0;
}

int spx_vol_format_parse(const char *s)
{
	if (!strcmp(s, "raw"))
		return SPX_VOL_RAW;
	if (!strcmp(s, "qcow2"))
		return SPX_VOL_QCOW2;
	return spx_error(SPX_USAGE, "'%s' is not an image format (raw, qcow2)",
			 s);
}

static uint64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int spx_vol_image_probe(const unsigned char *p, size_t n, int *fmt,
			uint64_t *vsize)
{
	/* QEMU's qcow2 header: magic "QFI\xfb", version, backing file
	 * offset and size, cluster bits, size, crypt method (big endian). */
	if (n < 4 || memcmp(p, "QFI\xfb", 4)) {
		*fmt = SPX_VOL_RAW;
		return 0;
	}
	*fmt = SPX_VOL_QCOW2;
	if (n < 48)
		return spx_error(SPX_USAGE, "a qcow2 header cut short");
	if (be(p + 4, 4) != 2 && be(p + 4, 4) != 3)
		return spx_error(SPX_USAGE, "qcow2 version %llu is not one we "
					    "read (2, 3)",
				 (unsigned long long)be(p + 4, 4));
	if (be(p + 8, 8))
		return spx_error(SPX_USAGE,
				 "the qcow2 image has a backing file: convert it "
				 "to one image first (qemu-img convert)");
	if (be(p + 32, 4))
		return spx_error(SPX_USAGE, "the qcow2 image is encrypted");
	/* Version 3's incompatible features: dirty, the compression type
	 * and extended L2 entries are read by qemu-img as they are; an
	 * external data file would have it read any file of the host into
	 * the volume, as root; a corrupt image, or one with a feature
	 * unknown here, is refused. */
	if (be(p + 4, 4) == 3) {
		uint64_t inc;

		if (n < 104)
			return spx_error(SPX_USAGE, "a qcow2 header cut short");
		inc = be(p + 72, 8);
		if (inc & 4)
			return spx_error(SPX_USAGE,
					 "the qcow2 image keeps its data in an "
					 "external file: convert it to one image "
					 "first (qemu-img convert)");
		if (inc & 2)
			return spx_error(SPX_USAGE,
					 "the qcow2 image is marked corrupt "
					 "(qemu-img check -r all repairs it)");
		if (inc & ~(uint64_t)0x19)
			return spx_error(SPX_USAGE,
					 "the qcow2 image needs features not "
					 "known here (incompatible bits %#llx)",
					 (unsigned long long)inc);
	}
	*vsize = be(p + 24, 8);
	return 0;
}

/* A file of ours in lib/ beside bin/ (or env's), what for the message. */
static char *lib_path(const char *env, const char *name, const char *what)
{
	const char *e = getenv(env);
	char *self, *p;

	if (e && *e)
		return spx_strdup(e);
	self = spx_self_dir();
	if (!self) {
		spx_error(SPX_FAIL, "cannot find the running program");
		return NULL;
	}
	p = spx_xprintf("%s/../lib/%s", self, name);
	free(self);
	if (access(p, R_OK) < 0) {
		spx_error_errno(SPX_FAIL, "no %s at '%s'", what, p);
		free(p);
		return NULL;
	}
	return p;
}

char *spx_vol_plugin_path(void)
{
	return lib_path("SPX_VOL_PLUGIN", "nbdkit-spxvol-plugin.so",
			"nbdkit plugin");
}

char *spx_vol_server_path(void)
{
	return lib_path("SPX_NBD", "spx-nbd", "NBD server");
}
