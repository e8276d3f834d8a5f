/* meta.c: the metadata file, its encoder and its strict decoder.
 *
 *   spx-obj-meta 1 json=<decimal> data=<decimal> crc32c=<8 hex>\n
 *   <json bytes><inline data bytes>
 *
 * The CRC-32C covers the JSON and the data. The decoder sees files that
 * a crash, a bad disk or a person may have damaged: it checks every
 * field's type and range and refuses anything else (fuzz_obj_meta). */
#include "spx.h"

#include "checksum.h"

#include <inttypes.h>
#include <jansson.h>

#include "hex.h"
#include "id.h"
#include "obj/obj_int.h"

#define MAGIC "spx-obj-meta 1 "
#define META_JSON_MAX (8u << 20)

void spx_obj_meta_release(struct spx_obj_meta *m)
{
	free(m->key);
	spx_kv_free(&m->sys);
	spx_kv_free(&m->user);
	spx_kv_free(&m->checksums);
	spx_kv_free(&m->tags);
	free(m->segs);
	spx_buf_release(&m->inl);
	memset(m, 0, sizeof(*m));
	m->inl = (struct spx_buf)SPX_BUF_INIT;
}

static json_t *kv_json(const struct spx_kvlist *l)
{
	json_t *o = json_object();

	for (size_t i = 0; i < l->n; i++)
		json_object_set_new(o, l->v[i].k, json_string(l->v[i].v));
	return o;
}

void spx_obj_meta_encode(const struct spx_obj_meta *m, struct spx_buf *out)
{
	json_t *o = json_object(), *segs = json_array();
	char *js;
	size_t jl;
	uint32_t crc;

	json_object_set_new(o, "key", json_string(m->key ? m->key : ""));
	json_object_set_new(o, "size", json_integer((json_int_t)m->size));
	json_object_set_new(o, "etag", json_string(m->etag));
	json_object_set_new(o, "mtime", json_integer(m->mtime_ms));
	json_object_set_new(o, "gen", json_integer((json_int_t)m->gen));
	json_object_set_new(o, "sys", kv_json(&m->sys));
	json_object_set_new(o, "user", kv_json(&m->user));
	json_object_set_new(o, "checksums", kv_json(&m->checksums));
	json_object_set_new(o, "tags", kv_json(&m->tags));
	json_object_set_new(o, "k", json_integer(m->k));
	json_object_set_new(o, "m", json_integer(m->m));
	json_object_set_new(o, "block", json_integer(m->block));
	json_object_set_new(o, "data", json_string(m->data));
	for (size_t i = 0; i < m->nsegs; i++) {
		json_t *e = json_pack("[s,I,s]", m->segs[i].name,
				      (json_int_t)m->segs[i].size,
				      m->segs[i].md5);

		/* A part's checksum, where it has one: older files (and
		 * segments without) keep three members. */
		if (m->segs[i].cksum[0])
			json_array_append_new(e, json_string(m->segs[i].cksum));
		json_array_append_new(segs, e);
	}
	json_object_set_new(o, "segs", segs);
	json_object_set_new(o, "parts", json_integer((json_int_t)m->nparts));
	json_object_set_new(o, "inline", json_boolean(m->is_inline));
	if (m->inc[0])
		json_object_set_new(o, "inc", json_string(m->inc));
	/* Only versioned writes carry these: older files stay readable and
	 * unversioned ones unchanged. */
	if (m->vid[0])
		json_object_set_new(o, "vid", json_string(m->vid));
	if (m->delete_marker)
		json_object_set_new(o, "dm", json_true());
	js = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!js)
		spx_die(SPX_FAIL, "out of memory");
	jl = strlen(js);
	spx_buf_reset(out);
	{
		struct spx_buf body = SPX_BUF_INIT;

		spx_buf_add(&body, js, jl);
		if (m->is_inline)
			spx_buf_add(&body, m->inl.p, m->inl.len);
		crc = spx_crc32c(body.p, body.len);
		spx_buf_addf(out, MAGIC "json=%zu data=%zu crc32c=%08" PRIx32 "\n",
			     jl, m->is_inline ? m->inl.len : (size_t)0, crc);
		spx_buf_add(out, body.p, body.len);
		spx_buf_release(&body);
	}
	free(js);
}

static int bad(const char *what)
{
	return obj_err(SPX_OBJ_INTERNAL, "corrupt object metadata: %s", what);
}

static int parse_dec(const char **s, const char *end, const char *lit,
		     char stop, uint64_t *v)
{
	size_t l = strlen(lit);
	uint64_t x = 0;
	int nd = 0;

	if ((size_t)(end - *s) < l || memcmp(*s, lit, l))
		return -1;
	*s += l;
	while (*s < end && **s >= '0' && **s <= '9') {
		if (nd && x == 0)
			return -1; /* no leading zeros */
		if (x > (UINT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (uint64_t)(**s - '0');
		(*s)++;
		nd++;
	}
	if (!nd || *s >= end || **s != stop)
		return -1;
	(*s)++;
	*v = x;
	return 0;
}

static int get_kv(json_t *o, const char *name, struct spx_kvlist *l)
{
	json_t *obj = json_object_get(o, name), *v;
	const char *k;

	if (!json_is_object(obj))
		return -1;
	json_object_foreach(obj, k, v) {
		if (!json_is_string(v) || !*k || strlen(k) > 1024 ||
		    json_string_length(v) > 8192 ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return -1;
		spx_kv_add(l, k, json_string_value(v));
	}
	return 0;
}

static int get_u64(json_t *o, const char *name, uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(o, name);

	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* A part's checksum: base64 that decodes, shorter than max. */
static bool cksum_ok(const json_t *v, size_t max)
{
	unsigned char raw[SPX_CKSUM_MAX];
	size_t n = json_is_string(v) ? json_string_length(v) : 0, got = 0;

	return n && n < max &&
	       strlen(json_string_value(v)) == n &&
	       spx_base64_decode(json_string_value(v), n, raw, sizeof(raw),
				 &got) == 0 &&
	       got;
}

static bool seg_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= sizeof(((struct spx_obj_seg *)0)->name))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

int spx_obj_meta_decode(const char *p, size_t n, struct spx_obj_meta *m)
{
	const char *s = p, *end = p + n, *nl;
	uint64_t jl, dl, crc = 0, v, total = 0;
	json_t *o = NULL, *segs, *x;
	json_error_t je;
	char hexbuf[9];
	int rc = SPX_OBJ_INTERNAL;

	memset(m, 0, sizeof(*m));
	m->inl = (struct spx_buf)SPX_BUF_INIT;
	nl = memchr(p, '\n', n < 128 ? n : 128);
	if (!nl || (size_t)(nl - p) < strlen(MAGIC) ||
	    memcmp(p, MAGIC, strlen(MAGIC)))
		return bad("no header");
	s += strlen(MAGIC);
	if (parse_dec(&s, nl, "json=", ' ', &jl) < 0 ||
	    parse_dec(&s, nl, "data=", ' ', &dl) < 0 ||
	    (size_t)(nl - s) != 7 + 8 || memcmp(s, "crc32c=", 7) ||
	    !spx_is_lower_hex(s + 7, 8))
		return bad("bad header");
	memcpy(hexbuf, s + 7, 8);
	hexbuf[8] = 0;
	for (int i = 0; i < 8; i++)
		crc = crc << 4 | (uint64_t)spx_hexval(hexbuf[i]);
	s = nl + 1;
	if (jl > META_JSON_MAX || dl > (64u << 20) ||
	    (uint64_t)(end - s) != jl + dl)
		return bad("bad length");
	if (spx_crc32c(s, (size_t)(jl + dl)) != (uint32_t)crc)
		return bad("checksum mismatch");
	o = json_loadb(s, (size_t)jl, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o)) {
		bad("bad json");
		goto out;
	}
	x = json_object_get(o, "key");
	if (!json_is_string(x) ||
	    strlen(json_string_value(x)) != json_string_length(x) ||
	    json_string_length(x) > SPX_OBJ_KEY_MAX) {
		bad("bad key");
		goto out;
	}
	m->key = spx_strdup(json_string_value(x));
	x = json_object_get(o, "etag");
	if (!json_is_string(x) || json_string_length(x) >= SPX_OBJ_ETAG_SIZE ||
	    strlen(json_string_value(x)) != json_string_length(x)) {
		bad("bad etag");
		goto out;
	}
	memcpy(m->etag, json_string_value(x), json_string_length(x) + 1);
	x = json_object_get(o, "data");
	if (!json_is_string(x) || json_string_length(x) >= sizeof(m->data) ||
	    (json_string_length(x) && !seg_name_ok(json_string_value(x)))) {
		bad("bad data directory");
		goto out;
	}
	memcpy(m->data, json_string_value(x), json_string_length(x) + 1);
	if (get_u64(o, "size", (uint64_t)INT64_MAX, &m->size) < 0 ||
	    get_u64(o, "gen", (uint64_t)INT64_MAX, &m->gen) < 0 ||
	    get_u64(o, "mtime", (uint64_t)INT64_MAX, &v) < 0) {
		bad("bad size, gen or mtime");
		goto out;
	}
	m->mtime_ms = (int64_t)v;
	if (get_u64(o, "k", 32, &v) < 0 || v < 1) {
		bad("bad k");
		goto out;
	}
	m->k = (int)v;
	if (get_u64(o, "m", 32 - (uint64_t)m->k, &v) < 0) {
		bad("bad m");
		goto out;
	}
	m->m = (int)v;
	if (get_u64(o, "block", 1u << 30, &v) < 0 || v < 64) {
		bad("bad block");
		goto out;
	}
	m->block = (uint32_t)v;
	if (get_u64(o, "parts", SPX_OBJ_MAX_PARTS, &v) < 0) {
		bad("bad parts");
		goto out;
	}
	m->nparts = (size_t)v;
	if (get_kv(o, "sys", &m->sys) < 0 || get_kv(o, "user", &m->user) < 0 ||
	    get_kv(o, "checksums", &m->checksums) < 0 ||
	    get_kv(o, "tags", &m->tags) < 0) {
		bad("bad string map");
		goto out;
	}
	x = json_object_get(o, "inline");
	if (!json_is_boolean(x)) {
		bad("bad inline flag");
		goto out;
	}
	m->is_inline = json_is_true(x);
	x = json_object_get(o, "inc");
	if (x && (!json_is_string(x) || json_string_length(x) != 16 ||
		  strspn(json_string_value(x), "0123456789abcdef") != 16)) {
		bad("bad incarnation");
		goto out;
	}
	if (x)
		memcpy(m->inc, json_string_value(x), 17);
	x = json_object_get(o, "vid");
	if (x && (!json_is_string(x) ||
		  !spx_s3_version_id_valid(json_string_value(x)) ||
		  strlen(json_string_value(x)) != json_string_length(x))) {
		bad("bad version id");
		goto out;
	}
	if (x)
		memcpy(m->vid, json_string_value(x), json_string_length(x) + 1);
	x = json_object_get(o, "dm");
	if (x && !json_is_true(x)) {
		bad("bad delete marker flag");
		goto out;
	}
	m->delete_marker = x != NULL;
	if (m->delete_marker && (!m->is_inline || m->size)) {
		bad("a delete marker with content");
		goto out;
	}
	segs = json_object_get(o, "segs");
	if (!json_is_array(segs) ||
	    json_array_size(segs) > SPX_OBJ_MAX_PARTS) {
		bad("bad segments");
		goto out;
	}
	m->nsegs = json_array_size(segs);
	m->segs = spx_calloc(m->nsegs ? m->nsegs : 1, sizeof(*m->segs));
	for (size_t i = 0; i < m->nsegs; i++) {
		json_t *e = json_array_get(segs, i), *a, *b, *c, *d;

		a = json_array_get(e, 0);
		b = json_array_get(e, 1);
		c = json_array_get(e, 2);
		d = json_array_get(e, 3);
		if (!json_is_array(e) ||
		    (json_array_size(e) != 3 && json_array_size(e) != 4) ||
		    !json_is_string(a) || !seg_name_ok(json_string_value(a)) ||
		    !json_is_integer(b) || json_integer_value(b) < 0 ||
		    !json_is_string(c) || json_string_length(c) != 32 ||
		    !spx_is_lower_hex(json_string_value(c), 32) ||
		    (d && !cksum_ok(d, sizeof(m->segs[i].cksum)))) {
			bad("bad segment");
			goto out;
		}
		if (d)
			snprintf(m->segs[i].cksum, sizeof(m->segs[i].cksum),
				 "%s", json_string_value(d));
		snprintf(m->segs[i].name, sizeof(m->segs[i].name), "%s",
			 json_string_value(a));
		m->segs[i].size = (uint64_t)json_integer_value(b);
		memcpy(m->segs[i].md5, json_string_value(c), 33);
		if (m->segs[i].size > (uint64_t)INT64_MAX - total) {
			bad("bad segment size");
			goto out;
		}
		total += m->segs[i].size;
	}
	if (m->is_inline ? (m->nsegs || dl != m->size)
			 : (dl || total != m->size)) {
		bad("sizes disagree");
		goto out;
	}
	if (m->is_inline)
		spx_buf_add(&m->inl, s + jl, (size_t)dl);
	rc = 0;
out:
	json_decref(o);
	if (rc < 0)
		spx_obj_meta_release(m);
	return rc;
}
