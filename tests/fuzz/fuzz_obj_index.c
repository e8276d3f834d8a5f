/* fuzz_obj_index: the listing index's parsers. Its log, runs and manifest
 * live on drive 0 beside the objects, are torn by killed writers and can
 * be scribbled on; whatever is accepted must hold together: records
 * inside the input, a log's records sorted with one per key, a run's
 * records read only inside its frame, a manifest's runs within bounds.
 * The first byte picks the parser. */
#include "spx.h"

#include "obj/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rec(const struct obj_idx_rec *r, const uint8_t *p, size_t n)
{
	if ((r->op != '+' && r->op != '-' && r->op != '=' && r->op != 'd') ||
	    !r->len || r->len > SPX_OBJ_KEY_MAX ||
	    (const uint8_t *)r->key < p ||
	    (const uint8_t *)r->key + r->len > p + n ||
	    memchr(r->key, 0, r->len))
		abort();
	if (r->op == '=' &&
	    (r->etaglen >= SPX_OBJ_ETAG_SIZE ||
	     (r->etaglen && ((const uint8_t *)r->etag < p ||
			     (const uint8_t *)r->etag + r->etaglen > p + n ||
			     memchr(r->etag, 0, r->etaglen)))))
		abort();
}

static int cmp(const struct obj_idx_rec *a, const struct obj_idx_rec *b)
{
	int c = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data + 1;
	size_t n = size ? size - 1 : 0;

	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0: {
		struct obj_idx_rec *v = NULL;
		struct spx_buf b = SPX_BUF_INIT;
		size_t nv = 0;

		if (obj_idx_log_parse(p, n, &v, &nv) < 0)
			return 0;
		for (size_t i = 0; i < nv; i++) {
			check_rec(&v[i], p, n);
			if (i && cmp(&v[i - 1], &v[i]) >= 0)
				abort();
			obj_idx_rec_put(&b, &v[i]);
		}
		/* What was kept encodes to a log that parses the same. */
		free(v);
		if (obj_idx_log_parse(b.p, b.len, &v, &nv) < 0)
			abort();
		free(v);
		spx_buf_release(&b);
		break;
	}
	case 1: {
		struct obj_idx_rec r;
		uint64_t count;
		/* A copy the size of the input: reads past it are caught. */
		uint8_t *c = malloc(n ? n : 1);

		memcpy(c, p, n);
		if (obj_idx_run_frame(c, n, &count))
			for (uint64_t i = 0; i < count; i++)
				if (obj_idx_run_rec(c, n, i, &r))
					check_rec(&r, c, n);
		free(c);
		break;
	}
	default: {
		struct obj_idx_manifest m;

		if (obj_idx_manifest_parse((const char *)p, n, &m) < 0)
			return 0;
		if (m.nruns < 0 || m.nruns > OBJ_IDX_MAX_RUNS ||
		    strlen(m.boot) >= sizeof(m.boot) || !m.boot[0] ||
		    m.sealed > m.gen)
			abort();
		for (int i = 0; i < m.nruns; i++)
			if (m.run_gen[i] > m.gen)
				abort();
		break;
	}
	}
	return 0;
}
