/* spx-obj put | get | cat | cp | rm | stat */
#include "spx.h"

#include <inttypes.h>
#include <jansson.h>

#include "objcli.h"

#define CHUNK (1u << 20)

int cmd_put(const struct spx_args *a)
{
	struct objcli c;
	struct spx_obj_meta in = SPX_OBJ_META_INIT, out = SPX_OBJ_META_INIT;
	struct spx_obj_writer *w = NULL;
	const char *file = a->argc > 2 ? a->argv[2] : NULL;
	unsigned char *buf = NULL;
	int rc, fd = 0;

	if (file && (fd = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
		spx_warn_errno("put: cannot open '%s'", file);
		return errno == ENOENT ? SPX_NO : SPX_FAIL;
	}
	if ((rc = objcli_open_bucket(a, &c, a->argv[0]))) {
		if (file)
			close(fd);
		return rc;
	}
	if (spx_arg(a, "content-type"))
		spx_kv_add(&in.sys, "content-type", spx_arg(a, "content-type"));
	if ((rc = spx_obj_writer_begin(c.s, &c.b, a->argv[1], &in, &w)) < 0) {
		rc = objcli_fail(a, rc);
		goto out;
	}
	buf = spx_malloc(CHUNK);
	for (;;) {
		ssize_t n = read(fd, buf, CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			spx_warn_errno("put: cannot read '%s'", file ? file : "-");
			rc = SPX_FAIL;
			goto out;
		}
		if (!n)
			break;
		if ((rc = spx_obj_writer_write(w, buf, (size_t)n)) < 0) {
			rc = objcli_fail(a, rc);
			goto out;
		}
	}
	rc = spx_obj_writer_commit(w, NULL, &out);
	w = NULL;
	if (rc < 0) {
		rc = objcli_fail(a, rc);
		goto out;
	}
	printf("%s\n", out.etag);
out:
	spx_obj_writer_abort(w);
	if (file)
		close(fd);
	free(buf);
	spx_obj_meta_release(&in);
	spx_obj_meta_release(&out);
	objcli_close(&c);
	return rc;
}

static int parse_range(const char *s, uint64_t size, uint64_t *first,
		       uint64_t *last)
{
	char *end;

	*first = 0;
	*last = size ? size - 1 : 0;
	if (!s)
		return 0;
	errno = 0;
	*first = strtoull(s, &end, 10);
	if (errno || end == s || *end != '-' || *s == '-')
		return -1;
	s = end + 1;
	if (*s) {
		*last = strtoull(s, &end, 10);
		if (errno || *end || *s == '-' || *last < *first)
			return -1;
		if (*last >= size)
			*last = size ? size - 1 : 0;
	}
	return 0;
}

static int copy_out(const struct spx_args *a, const char *file)
{
	struct objcli c;
	struct spx_obj_reader *r = NULL;
	unsigned char *buf = NULL;
	uint64_t first, last, off;
	FILE *f = stdout;
	int rc;

	if ((rc = objcli_open_bucket(a, &c, a->argv[0])))
		return rc;
	if ((rc = spx_obj_reader_open_version(c.s, &c.b, a->argv[1],
					      spx_arg(a, "version-id"), &r)) < 0) {
		rc = objcli_fail(a, rc);
		goto out;
	}
	if (parse_range(spx_arg(a, "range"), spx_obj_reader_meta(r)->size,
			&first, &last) < 0) {
		spx_warn("%s: bad range '%s'", a->verb->name, spx_arg(a, "range"));
		rc = SPX_USAGE;
		goto out;
	}
	if (spx_arg(a, "range") && first >= spx_obj_reader_meta(r)->size) {
		spx_warn("%s: range '%s' is not satisfiable", a->verb->name,
			 spx_arg(a, "range"));
		rc = SPX_USAGE;
		goto out;
	}
	if (file && !(f = fopen(file, "we"))) {
		spx_warn_errno("%s: cannot create '%s'", a->verb->name, file);
		rc = SPX_FAIL;
		goto out;
	}
	buf = spx_malloc(CHUNK);
	for (off = first; spx_obj_reader_meta(r)->size && off <= last;) {
		size_t want = last - off + 1 < CHUNK ? (size_t)(last - off + 1) : CHUNK, got;

		if ((rc = spx_obj_read(r, off, buf, want, &got)) < 0) {
			rc = objcli_fail(a, rc);
			goto out;
		}
		if (!got)
			break;
		if (fwrite(buf, 1, got, f) != got) {
			spx_warn_errno("%s: cannot write", a->verb->name);
			rc = SPX_FAIL;
			goto out;
		}
		off += got;
	}
	rc = 0;
out:
	if (f != stdout && fclose(f) != 0 && !rc) {
		spx_warn_errno("%s: cannot write '%s'", a->verb->name, file);
		rc = SPX_FAIL;
	}
	free(buf);
	spx_obj_reader_close(r);
	objcli_close(&c);
	return rc;
}

int cmd_get(const struct spx_args *a)
{
	return copy_out(a, a->argc > 2 ? a->argv[2] : NULL);
}

int cmd_cat(const struct spx_args *a)
{
	return copy_out(a, NULL);
}

int cmd_cp(const struct spx_args *a)
{
	struct objcli c;
	struct spx_obj_meta out = SPX_OBJ_META_INIT;
	struct spx_obj_bucket to;
	int rc = objcli_open_bucket(a, &c, a->argv[0]);

	if (rc)
		return rc;
	if ((rc = objcli_bucket(a, &c, a->argv[2], &to)))
		goto out;
	rc = spx_obj_copy(c.s, &c.b, a->argv[1], spx_arg(a, "version-id"),
			  &to, a->argv[3], NULL, &out);
	if (rc < 0)
		rc = objcli_fail(a, rc);
	else
		printf("%s\n", out.etag);
out:
	spx_obj_meta_release(&out);
	objcli_close(&c);
	return rc;
}

/* Prints the version id of the delete marker made, or of the version
 * removed, in a bucket that has versioning. */
int cmd_rm(const struct spx_args *a)
{
	struct objcli c;
	struct spx_obj_deleted d;
	struct spx_obj_bucket b;
	int rc = objcli_open_bucket(a, &c, a->argv[0]);

	if (rc)
		return rc;
	rc = spx_obj_delete_version(c.s, &c.b, a->argv[1],
				    spx_arg(a, "version-id"), &d);
	if (rc < 0)
		rc = objcli_fail(a, rc);
	else if (spx_obj_bucket_open(c.s, a->argv[0], &b) == 0 &&
		 b.versioning != SPX_OBJ_UNVERSIONED)
		printf("%s%s\n", spx_obj_vid_name(d.vid),
		       d.delete_marker ? " delete-marker" : "");
	objcli_close(&c);
	return rc;
}

static json_t *kv_obj(const struct spx_kvlist *l)
{
	json_t *o = json_object();

	for (size_t i = 0; i < l->n; i++)
		json_object_set_new(o, l->v[i].k, json_string(l->v[i].v));
	return o;
}

int cmd_stat(const struct spx_args *a)
{
	struct objcli c;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	json_t *o, *segs;
	int rc = objcli_open_bucket(a, &c, a->argv[0]);

	if (rc)
		return rc;
	if ((rc = spx_obj_stat_version(c.s, &c.b, a->argv[1],
				       spx_arg(a, "version-id"), &m)) < 0) {
		rc = objcli_fail(a, rc);
		goto out;
	}
	segs = json_array();
	for (size_t i = 0; i < m.nsegs; i++)
		json_array_append_new(segs, json_pack("{s:s,s:I,s:s}", "name",
						      m.segs[i].name, "size",
						      (json_int_t)m.segs[i].size,
						      "md5", m.segs[i].md5));
	o = json_pack("{s:s,s:s,s:s,s:b,s:I,s:s,s:I,s:I,s:o,s:o,s:o,s:o,s:s,s:b,s:I,s:o}",
		      "bucket", a->argv[0], "key", m.key, "version_id",
		      spx_obj_vid_name(m.vid), "delete_marker",
		      (int)m.delete_marker, "size",
		      (json_int_t)m.size, "etag", m.etag, "mtime_ms",
		      (json_int_t)m.mtime_ms, "gen", (json_int_t)m.gen, "system",
		      kv_obj(&m.sys), "user", kv_obj(&m.user), "checksums",
		      kv_obj(&m.checksums), "tags", kv_obj(&m.tags), "layout",
		      m.is_inline ? "inline" : "erasure", "inline",
		      (int)m.is_inline, "parts", (json_int_t)m.nparts,
		      "segments", segs);
	if (spx_flag(a, "json")) {
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		printf("key: %s\nversion-id: %s\n", m.key,
		       spx_obj_vid_name(m.vid));
		if (m.delete_marker)
			printf("delete-marker: true\n");
		printf("size: %" PRIu64 "\netag: %s\ngen: %" PRIu64
		       "\nmtime_ms: %" PRId64 "\nlayout: %s\n",
		       m.size, m.etag, m.gen, m.mtime_ms,
		       m.is_inline ? "inline" : "erasure");
		if (!m.is_inline)
			printf("erasure: RS(%d,%d) block %u\n", m.k, m.m, m.block);
		for (size_t i = 0; i < m.sys.n; i++)
			printf("%s: %s\n", m.sys.v[i].k, m.sys.v[i].v);
		for (size_t i = 0; i < m.user.n; i++)
			printf("%s: %s\n", m.user.v[i].k, m.user.v[i].v);
		for (size_t i = 0; i < m.tags.n; i++)
			printf("tag: %s=%s\n", m.tags.v[i].k, m.tags.v[i].v);
		for (size_t i = 0; i < m.nsegs; i++)
			printf("segment: %s %" PRIu64 " %s\n", m.segs[i].name,
			       m.segs[i].size, m.segs[i].md5);
	}
	json_decref(o);
out:
	spx_obj_meta_release(&m);
	objcli_close(&c);
	return rc;
}
