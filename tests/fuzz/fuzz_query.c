/* fuzz_query: spx_query_parse in every mode, and percent-decoding and
 * -encoding round trips. */
#include "spx.h"

#include "http/query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_list(const struct spx_kvlist *l, size_t max)
{
	if (l->n > max)
		abort();
	for (size_t i = 0; i < l->n; i++)
		if (!l->v[i].k || !l->v[i].v)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int modes[] = { 0, SPX_URI_PLUS, SPX_URI_LENIENT,
				     SPX_URI_PLUS | SPX_URI_LENIENT };
	const char *s = (const char *)data;
	struct spx_buf dec = SPX_BUF_INIT, enc = SPX_BUF_INIT;
	struct spx_buf back = SPX_BUF_INIT;

	for (size_t m = 0; m < SPX_ARRAY_SIZE(modes); m++) {
		struct spx_kvlist l = SPX_KVLIST_INIT;
		int rc;

		rc = spx_query_parse_max(s, size, modes[m], 16, 4096, &l);
		if (rc < 0 && l.n)
			abort(); /* a failure leaves the list as it was */
		check_list(&l, 16);
		spx_kv_free(&l);

		/* decode, encode, decode: the same bytes. */
		spx_buf_reset(&dec);
		spx_buf_reset(&enc);
		spx_buf_reset(&back);
		rc = spx_uri_decode(s, size, modes[m], &dec);
		if (rc < 0 && ((modes[m] & SPX_URI_LENIENT) || dec.len))
			abort();
		if (rc < 0)
			continue;
		if (dec.len > size)
			abort();
		spx_uri_encode(dec.p, dec.len, m & 1 ? SPX_URI_SLASH : 0, &enc);
		for (size_t i = 0; i < enc.len; i++) {
			char c = enc.p[i];

			if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			      (c >= '0' && c <= '9') || strchr("-._~%/", c)))
				abort();
		}
		if (spx_uri_decode(enc.p, enc.len, 0, &back) < 0 ||
		    back.len != dec.len || memcmp(back.p, dec.p, dec.len))
			abort();
	}

	/* encode, decode: the input. */
	spx_buf_reset(&enc);
	spx_buf_reset(&back);
	spx_uri_encode(s, size, 0, &enc);
	if (spx_uri_decode(enc.p, enc.len, SPX_URI_PLUS, &back) < 0 ||
	    back.len != size || (size && memcmp(back.p, s, size)))
		abort();
	spx_buf_release(&dec);
	spx_buf_release(&enc);
	spx_buf_release(&back);
	return 0;
}
