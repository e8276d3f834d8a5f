/* heal.c: verify every shard block and metadata copy; heal rewrites what
 * is missing or corrupt from the survivors and sweeps the leftovers of
 * killed writers. */
#include "spx.h"

#include "checksum.h"

#include <dirent.h>
#include <sys/file.h>

#include "file.h"
#include "hex.h"
#include "obj/index.h"

/* Check (and with heal, rebuild) one segment. */
static int check_seg(struct spx_obj *s, const struct spx_obj_meta *m,
		     char **ddirs, const struct spx_obj_seg *seg, bool heal,
		     struct spx_obj_check *c)
{
	int n = m->k + m->m, fds[32], out[32], rc = 0;
	bool badshard[32] = { false }, any = false;
	uint64_t ns = spx_obj_nstripes(seg->size, m->k, m->block);
	unsigned char *buf = spx_malloc((size_t)n * (m->block + 4));
	unsigned char *sh[32];
	char *tmp[32] = { NULL };
	bool ok[32];

	for (int i = 0; i < n; i++) {
		char *p = spx_xprintf("%s/%s", ddirs[i], seg->name);

		fds[i] = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		out[i] = -1;
		sh[i] = buf + (size_t)i * (m->block + 4);
		free(p);
	}
	for (int pass = 0; pass < 2 && !rc; pass++) {
		if (pass == 1) {
			if (!heal || !any || c->lost)
				break;
			for (int i = 0; i < n; i++) {
				char rnd[17];

				if (!badshard[i])
					continue;
				if (spx_mkdirs(ddirs[i], 0755) < 0 ||
				    (rc = obj_randhex(rnd, 8)) < 0) {
					rc = SPX_OBJ_INTERNAL;
					break;
				}
				tmp[i] = spx_xprintf("%s/.heal-%s", ddirs[i], rnd);
				out[i] = open(tmp[i], O_WRONLY | O_CREAT | O_EXCL |
							      O_CLOEXEC, 0644);
				if (out[i] < 0) {
					rc = obj_errno("cannot create '%s'", tmp[i]);
					break;
				}
			}
		}
		for (uint64_t si = 0; si < ns && !rc; si++) {
			struct spx_obj_stripe st;
			int bad = 0;

			spx_obj_stripe_at(seg->size, m->k, m->block, si, &st);
			for (int i = 0; i < n; i++) {
				int b = obj_block_read(fds[i], &st, sh[i]);

				ok[i] = b == OBJ_BLOCK_OK;
				if (pass == 0) {
					c->blocks++;
					c->missing += b == OBJ_BLOCK_MISSING;
					c->corrupt += b == OBJ_BLOCK_CORRUPT ||
						      b == OBJ_BLOCK_ERROR;
				}
				if (!ok[i]) {
					bad++;
					badshard[i] = any = true;
				}
			}
			if (bad > m->m) {
				c->lost = true;
				continue;
			}
			if (pass == 0)
				continue;
			if (spx_ec_decode(&s->ec, st.bl, sh, ok) < 0) {
				rc = SPX_OBJ_INTERNAL;
				break;
			}
			for (int i = 0; i < n && !rc; i++) {
				uint32_t crc;
				unsigned char c4[4];

				if (out[i] < 0)
					continue;
				crc = spx_crc32c(sh[i], st.bl);
				c4[0] = crc & 255, c4[1] = crc >> 8 & 255;
				c4[2] = crc >> 16 & 255, c4[3] = crc >> 24;
				if ((rc = obj_write_all(out[i], sh[i], st.bl, tmp[i])) == 0)
					rc = obj_write_all(out[i], c4, 4, tmp[i]);
				if (!ok[i])
					c->healed++;
			}
		}
	}
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		if (out[i] < 0)
			continue;
		if (!rc && fsync(out[i]) < 0)
			rc = obj_errno("cannot sync '%s'", tmp[i]);
		close(out[i]);
		if (!rc) {
			char *p = spx_xprintf("%s/%s", ddirs[i], seg->name);

			if (rename(tmp[i], p) < 0)
				rc = obj_errno("cannot rename '%s'", tmp[i]);
			else if (spx_fsync_dir(ddirs[i]) < 0)
				rc = SPX_OBJ_INTERNAL;
			free(p);
		}
		if (rc)
			unlink(tmp[i]);
	}
	for (int i = 0; i < n; i++)
		free(tmp[i]);
	free(buf);
	return rc;
}

/* Remove what no metadata references in a key directory: data
 * directories no version uses and no live writer holds, temp files. */
static void sweep_kdir(const char *kdir, char **keep, size_t nkeep)
{
	DIR *dp = opendir(kdir);
	struct dirent *e;

	if (!dp)
		return;
	while ((e = readdir(dp))) {
		char *p;

		bool kept = false;

		for (size_t i = 0; i < nkeep && !kept; i++)
			kept = !strcmp(e->d_name, keep[i]);
		if (kept || !strcmp(e->d_name, ".") ||
		    !strcmp(e->d_name, "..") || !strcmp(e->d_name, "meta"))
			continue;
		p = spx_xprintf("%s/%s", kdir, e->d_name);
		if (!strncmp(e->d_name, "d-", 2)) {
			int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
				obj_rmtree(p);
			if (fd >= 0)
				close(fd);
		} else if (!strncmp(e->d_name, ".tmp.", 5) ||
			   !strncmp(e->d_name, ".heal-", 6)) {
			unlink(p);
		}
		free(p);
	}
	closedir(dp);
	rmdir(kdir); /* only if empty */
	spx_error_clear();
}

/* Write metadata file name of key directory kd at p (obj_key_file's
 * answer). A key this drive lacks altogether comes back flat if the
 * store keeps keys flat and it can be (its current version, inline),
 * else as a directory. */
static int heal_meta(struct spx_obj *s, const char *kd, const char *name,
		     const char *p, const struct spx_obj_meta *m,
		     const struct spx_buf *want)
{
	struct stat st;

	if (lstat(kd, &st) < 0 && errno == ENOENT) {
		if (s->flat && !strcmp(name, "meta") && m->is_inline)
			return obj_put_file(s, kd, want->p, want->len);
		if (spx_mkdirs(kd, 0755) < 0)
			return SPX_OBJ_INTERNAL;
	}
	return obj_put_file(s, p, want->p, want->len);
}

/* Leftovers of a crash in a bucket's o/ (a key being made a directory,
 * a flat key's temp file) once they are old enough that nothing is
 * writing them. */
#define LEFTOVER_AGE_S (10 * 60)
static void sweep_odir(const char *odir)
{
	DIR *dp = opendir(odir);
	struct dirent *e;
	time_t now = time(NULL);

	while (dp && (e = readdir(dp))) {
		struct stat st;
		char *p;

		if (strncmp(e->d_name, ".cv-", 4) &&
		    strncmp(e->d_name, ".tmp.", 5))
			continue;
		p = spx_xprintf("%s/%s", odir, e->d_name);
		if (lstat(p, &st) == 0 && st.st_mtime < now - LEFTOVER_AGE_S)
			obj_rmtree(p);
		free(p);
	}
	if (dp)
		closedir(dp);
	spx_error_clear();
}

/* One version (meta or a v- file): its metadata copies must match drive
 * 0's, and its data must be whole. */
static int check_version(struct spx_obj *s, char **kd, const char *name,
			 const struct spx_obj_meta *m, bool heal,
			 struct spx_obj_check *c)
{
	struct spx_buf want = SPX_BUF_INIT, got = SPX_BUF_INIT;
	char *dd[32] = { NULL };
	int rc = 0, n = s->n;

	spx_obj_meta_encode(m, &want);
	for (int i = 0; i < n; i++) {
		char *p = obj_key_file(kd[i], name);

		spx_buf_reset(&got);
		if (spx_buf_read_file(&got, p, 80u << 20) < 0 ||
		    got.len != want.len || memcmp(got.p, want.p, want.len)) {
			struct spx_obj_meta t;

			/* Drive 0 may be the bad one, read from a copy. */
			if (i == 0 || spx_obj_meta_decode(got.p, got.len, &t) < 0 ||
			    t.gen != m->gen || strcmp(t.data, m->data)) {
				c->meta_bad++;
				if (heal && heal_meta(s, kd[i], name, p, m, &want) == 0)
					c->healed++;
			} else {
				spx_obj_meta_release(&t);
			}
		}
		spx_error_clear();
		free(p);
	}
	spx_buf_release(&want);
	spx_buf_release(&got);
	if (!m->is_inline && m->k + m->m == n) {
		for (int i = 0; i < n; i++)
			dd[i] = spx_xprintf("%s/%s", kd[i], m->data);
		for (size_t j = 0; j < m->nsegs && !rc; j++)
			if (m->segs[j].size)
				rc = check_seg(s, m, dd, &m->segs[j], heal, c);
		for (int i = 0; i < n; i++)
			free(dd[i]);
	}
	return rc;
}

/* The key of key directory enc: decoded from the name, or read from the
 * metadata (any drive's copy) for a hashed name; NULL if unknown. */
static const char *key_of(struct spx_obj *s, char **kd, const char *enc,
			  char keybuf[SPX_OBJ_KEY_MAX + 1])
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	const char *key = NULL;

	if (enc[0] != '~') {
		size_t o = 0;

		for (const char *p = enc; *p && o < SPX_OBJ_KEY_MAX; p++) {
			if (*p == '%' && spx_hexval(p[1]) >= 0 && spx_hexval(p[2]) >= 0) {
				keybuf[o++] = (char)(spx_hexval(p[1]) << 4 | spx_hexval(p[2]));
				p += 2;
			} else {
				keybuf[o++] = *p;
			}
		}
		keybuf[o] = 0;
		key = keybuf;
	} else {
		for (int i = 0; i < s->n && !key; i++) {
			char *p = obj_key_file(kd[i], "meta");
			struct spx_buf b = SPX_BUF_INIT;

			if (spx_buf_read_file(&b, p, 80u << 20) == 0 &&
			    spx_obj_meta_decode(b.p, b.len, &m) == 0) {
				snprintf(keybuf, SPX_OBJ_KEY_MAX + 1, "%s",
					 m.key);
				key = keybuf;
				spx_obj_meta_release(&m);
			}
			spx_buf_release(&b);
			free(p);
		}
	}
	spx_error_clear();
	return key;
}

static int check_key(struct spx_obj *s, const char *bucket, const char *enc,
		     bool heal, spx_obj_check_fn *fn, void *ctx)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	struct spx_obj_check c = { .bucket = bucket };
	char *kd[32], keybuf[SPX_OBJ_KEY_MAX + 1];
	int rc, lk = -1, n = s->n;
	const char *key = NULL;

	for (int i = 0; i < n; i++)
		kd[i] = obj_kdir(s, i, bucket, enc);
	key = key_of(s, kd, enc, keybuf);
	if (!key) {
		rc = 0; /* XXX: a hashed key never committed: left for now */
		goto out;
	}
	c.key = key;
	if (heal && (rc = obj_lock(s, bucket, key, true, &lk)) < 0)
		goto out;
	rc = obj_get_meta(s, kd, "meta", &m, SPX_OBJ_NO_SUCH_KEY);
	if (rc == SPX_OBJ_NO_SUCH_KEY) {
		/* No object: only leftovers, if anything (the engine never
		 * leaves a v- file without meta, but keep what one names). */
		spx_error_clear();
		rc = 0;
		m.is_inline = true;
	} else if (rc < 0) {
		spx_error_clear();
		c.meta_bad = (size_t)n;
		c.lost = true;
		rc = fn ? fn(ctx, &c) : 0;
		goto out;
	}
	if (m.key)
		rc = check_version(s, kd, "meta", &m, heal, &c);
	/* The noncurrent versions, and the data directories to keep. */
	{
		struct spx_obj_meta *v = NULL;
		char **keep = NULL, name[OBJ_VFILE_SIZE];
		size_t nv = 0, nk = 0;
		bool cur = false;

		if (obj_versions_read(s, bucket, enc, &v, &nv, &cur) < 0)
			spx_error_clear();
		keep = spx_calloc(nv + 1, sizeof(char *));
		if (!m.is_inline)
			keep[nk++] = m.data;
		for (size_t j = cur ? 1 : 0; j < nv; j++) {
			obj_vfile(v[j].vid, name);
			if (!rc)
				rc = check_version(s, kd, name, &v[j], heal, &c);
			if (!v[j].is_inline && v[j].data[0])
				keep[nk++] = v[j].data;
		}
		if (heal && !rc)
			for (int i = 0; i < n; i++)
				sweep_kdir(kd[i], keep, nk);
		free(keep);
		obj_versions_free(v, nv);
	}
	if (!rc && fn && m.key)
		rc = fn(ctx, &c);
out:
	obj_unlock(lk);
	for (int i = 0; i < n; i++)
		free(kd[i]);
	spx_obj_meta_release(&m);
	return rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of D_i/rel on drives from..to-1 (not starting with '.'),
 * sorted, without repeats. */
static size_t drive_names(struct spx_obj *s, int from, int to, const char *rel,
			  char ***out)
{
	char **v = NULL;
	size_t n = 0, cap = 0, k = 0;

	for (int i = from; i < to; i++) {
		char *d = spx_xprintf("%s/%s", s->drives[i], rel);
		DIR *dp = opendir(d);
		struct dirent *e;

		free(d);
		while (dp && (e = readdir(dp))) {
			if (e->d_name[0] == '.')
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				v = spx_realloc(v, cap * sizeof(*v));
			}
			v[n++] = spx_strdup(e->d_name);
		}
		if (dp)
			closedir(dp);
	}
	if (n)
		qsort(v, n, sizeof(*v), name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(v[k - 1], v[i]))
			free(v[i]);
		else
			v[k++] = v[i];
	}
	*out = v;
	return k;
}

static void names_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int check_bucket(struct spx_obj *s, const char *bucket, bool heal,
			spx_obj_check_fn *fn, void *ctx)
{
	char *rel = spx_xprintf("b/%s/o", bucket), **names = NULL;
	size_t nn = drive_names(s, 0, 1, rel, &names);
	int rc = 0;

	free(rel);
	for (size_t i = 0; i < nn && !rc; i++)
		rc = check_key(s, bucket, names[i], heal, fn, ctx);
	names_free(names, nn);
	for (int i = 0; heal && i < s->n; i++) {
		char *odir = spx_xprintf("%s/b/%s/o", s->drives[i], bucket);

		sweep_odir(odir);
		free(odir);
	}
	return rc;
}

int spx_obj_verify(struct spx_obj *s, const char *bucket, bool heal,
		   spx_obj_check_fn *fn, void *ctx)
{
	struct spx_obj_bucket *b = NULL;
	size_t n = 0;
	int rc;

	if (bucket) {
		struct spx_obj_bucket one;

		if ((rc = spx_obj_bucket_open(s, bucket, &one)) < 0)
			return rc;
		return check_bucket(s, bucket, heal, fn, ctx);
	}
	if ((rc = obj_bucket_list(s, true, &b, &n)) < 0)
		return rc;
	for (size_t i = 0; i < n && !rc; i++)
		rc = check_bucket(s, b[i].name, heal, fn, ctx);
	free(b);
	return rc;
}

/* ---- a replaced drive 0 ---- */

/* Put on drive 0 the first good copy of metadata file name that drive 0
 * lacks. Returns 1 when one was copied, 0 when none was needed or
 * found, or an error. */
static int restore_file(struct spx_obj *s, char **dirs, const char *name)
{
	char *p0 = spx_xprintf("%s/%s", dirs[0], name);
	int rc = 0;

	if (access(p0, F_OK) == 0 || errno != ENOENT) {
		free(p0);
		return 0;
	}
	for (int i = 1; i < s->n && !rc; i++) {
		char *p = obj_key_file(dirs[i], name);
		struct spx_buf b = SPX_BUF_INIT;
		struct spx_obj_meta m = SPX_OBJ_META_INIT;

		if (spx_buf_read_file(&b, p, 80u << 20) == 0 &&
		    spx_obj_meta_decode(b.p, b.len, &m) == 0) {
			spx_obj_meta_release(&m);
			if (spx_mkdirs(dirs[0], 0755) < 0)
				rc = obj_errno("cannot create '%s'", dirs[0]);
			else
				rc = obj_put_file(s, p0, b.p, b.len) < 0 ? -1
									  : 1;
		}
		spx_buf_release(&b);
		free(p);
	}
	spx_error_clear();
	free(p0);
	return rc < 0 ? SPX_OBJ_INTERNAL : rc;
}

static int restore_key(struct spx_obj *s, const char *bucket, const char *enc,
		       size_t *restored)
{
	char *kd[32], keybuf[SPX_OBJ_KEY_MAX + 1], **files = NULL, *rel;
	const char *key;
	size_t nf;
	int rc = 0, lk = -1;

	for (int i = 0; i < s->n; i++)
		kd[i] = obj_kdir(s, i, bucket, enc);
	key = key_of(s, kd, enc, keybuf);
	rel = spx_xprintf("b/%s/o/%s", bucket, enc);
	nf = drive_names(s, 1, s->n, rel, &files);
	free(rel);
	/* A key kept flat on a drive has its meta and nothing else. */
	for (int i = 1; i < s->n; i++) {
		struct stat st;
		bool has = false;

		for (size_t j = 0; j < nf && !has; j++)
			has = !strcmp(files[j], "meta");
		if (!has && lstat(kd[i], &st) == 0 && S_ISREG(st.st_mode)) {
			files = spx_realloc(files, (nf + 1) * sizeof(*files));
			files[nf++] = spx_strdup("meta");
		}
	}
	/* Under the key's lock: a writer commits drive 0 last, so nothing
	 * it writes is replaced by an older copy from here. */
	if (key && (rc = obj_lock(s, bucket, key, true, &lk)) == 0) {
		for (size_t i = 0; i < nf && rc >= 0; i++) {
			if (strcmp(files[i], "meta") &&
			    strncmp(files[i], "v-", 2))
				continue;
			rc = restore_file(s, kd, files[i]);
			/* The key is back on drive 0: in its index too. */
			if (rc > 0 && !strcmp(files[i], "meta") &&
			    obj_idx_note(s, bucket, NULL, key, '+') < 0)
				rc = SPX_OBJ_INTERNAL;
			if (rc > 0)
				(*restored)++;
		}
		obj_unlock(lk);
	}
	names_free(files, nf);
	for (int i = 0; i < s->n; i++)
		free(kd[i]);
	return rc < 0 ? rc : 0;
}

int spx_obj_restore_drive0(struct spx_obj *s, size_t *restored)
{
	char **buckets = NULL;
	size_t nb;
	int rc = 0;

	*restored = 0;
	if (s->n < 2)
		return obj_err(SPX_OBJ_INVALID_ARG,
			       "one drive: no copies to restore drive 0 from");
	nb = drive_names(s, 1, s->n, "b", &buckets);
	for (size_t i = 0; i < nb && !rc; i++) {
		char *bd[32], **keys = NULL, *rel;
		size_t nk;
		int lk = -1;

		if (!spx_obj_bucket_name_valid(buckets[i]) &&
		    !spx_obj_bucket_name_reserved(buckets[i]))
			continue;
		for (int j = 0; j < s->n; j++)
			bd[j] = obj_bdir(s, j, buckets[i]);
		if ((rc = obj_lock(s, buckets[i], NULL, true, &lk)) == 0) {
			rc = restore_file(s, bd, "info");
			if (rc > 0) {
				(*restored)++;
				rc = 0;
			}
			obj_unlock(lk);
		}
		for (int j = 0; j < s->n; j++)
			free(bd[j]);
		rel = spx_xprintf("b/%s/o", buckets[i]);
		nk = drive_names(s, 1, s->n, rel, &keys);
		free(rel);
		for (size_t k = 0; k < nk && !rc; k++)
			rc = restore_key(s, buckets[i], keys[k], restored);
		names_free(keys, nk);
	}
	names_free(buckets, nb);
	return rc;
}
