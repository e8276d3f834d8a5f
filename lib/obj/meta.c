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
#include "jsonr.h"
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

void spx_obj_meta_copy(struct spx_obj_meta *to, const struct spx_obj_meta *m)
{
	*to = *m;
	to->key = m->key ? spx_strdup(m->key) : NULL;
	to->sys = to->user = to->checksums = to->tags =
		(struct spx_kvlist)SPX_KVLIST_INIT;
	spx_kv_copy(&to->sys, &m->sys);
	spx_kv_copy(&to->user, &m->user);
	spx_kv_copy(&to->checksums, &m->checksums);
	spx_kv_copy(&to->tags, &m->tags);
	to->segs = NULL;
	if (m->nsegs) {
		to->segs = spx_malloc(m->nsegs * sizeof(*m->segs));
		memcpy(to->segs, m->segs, m->nsegs * sizeof(*m->segs));
	}
	/* The exact size (a buffer grown by doubling would hold 8 KiB for
	 * 4 KiB of data, in every cached record). */
	to->inl = (struct spx_buf)SPX_BUF_INIT;
	if (m->inl.len) {
		to->inl.p = spx_malloc(m->inl.len + 1);
		memcpy(to->inl.p, m->inl.p, m->inl.len);
		to->inl.p[m->inl.len] = '\0';
		to->inl.len = m->inl.len;
		to->inl.cap = m->inl.len + 1;
	}
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

/* A map of strings: keys non-empty and at most 1024 bytes, values at
 * most 8192, no key twice, at most KV_MAX entries. */
#define KV_MAX 4096

static bool read_kv(struct spx_jr *j, struct spx_kvlist *l)
{
	char k[1025];
	int r;

	if (!spx_jr_obj(j))
		return false;
	while ((r = spx_jr_key(j)) == 1) {
		if (!j->s.len || j->s.len >= sizeof(k) || l->n >= KV_MAX ||
		    spx_kv_get(l, j->s.p))
			return false;
		/* The value is decoded into the buffer the key is in. */
		memcpy(k, j->s.p, j->s.len + 1);
		if (!spx_jr_str(j) || j->s.len > 8192)
			return false;
		spx_kv_add(l, k, j->s.p);
	}
	return r == 0;
}

static bool read_u64(struct spx_jr *j, uint64_t max, uint64_t *out)
{
	int64_t v;

	if (!spx_jr_int(j, &v) || v < 0 || (uint64_t)v > max)
		return false;
	*out = (uint64_t)v;
	return true;
}

/* A part's checksum: base64 that decodes, shorter than max. */
static bool cksum_ok(const char *v, size_t n, size_t max)
{
	unsigned char raw[SPX_CKSUM_MAX];
	size_t got = 0;

	return n && n < max &&
	       spx_base64_decode(v, n, raw, sizeof(raw), &got) == 0 && got;
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

/* One segment: [name, size, md5] or [name, size, md5, checksum]. */
static bool read_seg(struct spx_jr *j, struct spx_obj_seg *g)
{
	uint64_t size;

	if (!spx_jr_arr(j) || spx_jr_item(j) != 1 || !spx_jr_str(j) ||
	    !seg_name_ok(j->s.p))
		return false;
	snprintf(g->name, sizeof(g->name), "%s", j->s.p);
	if (spx_jr_item(j) != 1 || !read_u64(j, (uint64_t)INT64_MAX, &size))
		return false;
	g->size = size;
	if (spx_jr_item(j) != 1 || !spx_jr_str(j) || j->s.len != 32 ||
	    !spx_is_lower_hex(j->s.p, 32))
		return false;
	memcpy(g->md5, j->s.p, 33);
	switch (spx_jr_item(j)) {
	case 0:
		return true;
	case 1:
		if (!spx_jr_str(j) || !cksum_ok(j->s.p, j->s.len, sizeof(g->cksum)))
			return false;
		memcpy(g->cksum, j->s.p, j->s.len + 1);
		return spx_jr_item(j) == 0;
	default:
		return false;
	}
}

static bool read_segs(struct spx_jr *j, struct spx_obj_meta *m)
{
	size_t cap = 0;
	int r;

	if (!spx_jr_arr(j))
		return false;
	while ((r = spx_jr_item(j)) == 1) {
		if (m->nsegs >= SPX_OBJ_MAX_PARTS)
			return false;
		if (m->nsegs == cap) {
			cap = cap ? cap * 2 : 4;
			m->segs = spx_realloc(m->segs, cap * sizeof(*m->segs));
		}
		memset(&m->segs[m->nsegs], 0, sizeof(*m->segs));
		if (!read_seg(j, &m->segs[m->nsegs]))
			return false;
		m->nsegs++;
	}
	return r == 0;
}

/* The members of the JSON part, in any order, each once. */
enum {
	F_KEY, F_SIZE, F_ETAG, F_MTIME, F_GEN, F_SYS, F_USER, F_CKSUMS,
	F_TAGS, F_K, F_M, F_BLOCK, F_DATA, F_SEGS, F_PARTS, F_INLINE,
	F_INC, F_VID, F_DM, F_N
};
static const char *const fields[F_N] = {
	"key", "size", "etag", "mtime", "gen", "sys", "user", "checksums",
	"tags", "k", "m", "block", "data", "segs", "parts", "inline",
	"inc", "vid", "dm",
};
#define F_REQUIRED ((1u << F_INC) - 1)

/* Read one member's value into m: NULL, or what is wrong. */
static const char *read_field(struct spx_jr *j, int f, struct spx_obj_meta *m,
			      uint64_t *mv)
{
	uint64_t v;
	bool b;

	switch (f) {
	case F_KEY:
		if (!spx_jr_str(j) || j->s.len > SPX_OBJ_KEY_MAX)
			return "bad key";
		m->key = spx_strdup(j->s.p);
		return NULL;
	case F_ETAG:
		if (!spx_jr_str(j) || j->s.len >= SPX_OBJ_ETAG_SIZE)
			return "bad etag";
		memcpy(m->etag, j->s.p, j->s.len + 1);
		return NULL;
	case F_DATA:
		if (!spx_jr_str(j) || j->s.len >= sizeof(m->data) ||
		    (j->s.len && !seg_name_ok(j->s.p)))
			return "bad data directory";
		memcpy(m->data, j->s.p, j->s.len + 1);
		return NULL;
	case F_SIZE:
	case F_GEN:
	case F_MTIME:
		if (!read_u64(j, (uint64_t)INT64_MAX, &v))
			return "bad size, gen or mtime";
		if (f == F_SIZE)
			m->size = v;
		else if (f == F_GEN)
			m->gen = v;
		else
			m->mtime_ms = (int64_t)v;
		return NULL;
	case F_K:
		if (!read_u64(j, 32, &v) || v < 1)
			return "bad k";
		m->k = (int)v;
		return NULL;
	case F_M:
		/* Checked against k once both are read. */
		return read_u64(j, 32, mv) ? NULL : "bad m";
	case F_BLOCK:
		if (!read_u64(j, 1u << 30, &v) || v < 64)
			return "bad block";
		m->block = (uint32_t)v;
		return NULL;
	case F_PARTS:
		if (!read_u64(j, SPX_OBJ_MAX_PARTS, &v))
			return "bad parts";
		m->nparts = (size_t)v;
		return NULL;
	case F_SYS:
		return read_kv(j, &m->sys) ? NULL : "bad string map";
	case F_USER:
		return read_kv(j, &m->user) ? NULL : "bad string map";
	case F_CKSUMS:
		return read_kv(j, &m->checksums) ? NULL : "bad string map";
	case F_TAGS:
		return read_kv(j, &m->tags) ? NULL : "bad string map";
	case F_INLINE:
		if (!spx_jr_bool(j, &b))
			return "bad inline flag";
		m->is_inline = b;
		return NULL;
	case F_INC:
		if (!spx_jr_str(j) || j->s.len != 16 ||
		    strspn(j->s.p, "0123456789abcdef") != 16)
			return "bad incarnation";
		memcpy(m->inc, j->s.p, 17);
		return NULL;
	case F_VID:
		if (!spx_jr_str(j) || !spx_s3_version_id_valid(j->s.p) ||
		    j->s.len >= sizeof(m->vid))
			return "bad version id";
		memcpy(m->vid, j->s.p, j->s.len + 1);
		return NULL;
	case F_DM:
		if (!spx_jr_bool(j, &b) || !b)
			return "bad delete marker flag";
		m->delete_marker = true;
		return NULL;
	case F_SEGS:
		return read_segs(j, m) ? NULL : "bad segments";
	default:
		return spx_jr_skip(j) ? NULL : "bad json";
	}
}

/* The JSON part into m: 0, or the error. */
static int read_json(const char *p, size_t n, struct spx_obj_meta *m)
{
	struct spx_jr j;
	const char *why = NULL;
	unsigned seen = 0;
	uint64_t mv = 0, total = 0;
	int r;

	spx_jr_init(&j, p, n);
	if (!spx_jr_obj(&j))
		why = "bad json";
	while (!why && (r = spx_jr_key(&j)) == 1) {
		int f = 0;

		while (f < F_N && strcmp(j.s.p, fields[f]))
			f++;
		if (f < F_N && (seen & 1u << f))
			why = "bad json"; /* a member twice */
		else if (!(why = read_field(&j, f, m, &mv)) && f < F_N)
			seen |= 1u << f;
	}
	if (!why && (r != 0 || !spx_jr_end(&j)))
		why = "bad json";
	spx_jr_release(&j);
	if (!why && (seen & F_REQUIRED) != F_REQUIRED)
		why = "a member is missing";
	if (!why && mv > 32 - (uint64_t)m->k)
		why = "bad m";
	m->m = (int)mv;
	if (!why && m->delete_marker && (!m->is_inline || m->size))
		why = "a delete marker with content";
	for (size_t i = 0; !why && i < m->nsegs; i++) {
		if (m->segs[i].size > (uint64_t)INT64_MAX - total)
			why = "bad segment size";
		total += m->segs[i].size;
	}
	if (!why && (m->is_inline ? m->nsegs != 0 : total != m->size))
		why = "sizes disagree";
	return why ? bad(why) : 0;
}

int spx_obj_meta_decode(const char *p, size_t n, struct spx_obj_meta *m)
{
	const char *s = p, *end = p + n, *nl;
	uint64_t jl, dl, crc = 0;
	char hexbuf[9];

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
	if (read_json(s, (size_t)jl, m) < 0 ||
	    ((m->is_inline ? dl != m->size : dl != 0) &&
	     bad("sizes disagree") < 0)) {
		spx_obj_meta_release(m);
		return SPX_OBJ_INTERNAL;
	}
	if (m->is_inline)
		spx_buf_add(&m->inl, s + jl, (size_t)dl);
	return 0;
}
