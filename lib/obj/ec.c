/* ec.c: stripe layout, Reed-Solomon with ISA-L, block CRC-32C. */
#include "spx.h"

#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>

#include "obj/obj.h"

uint64_t spx_obj_nstripes(uint64_t size, int k, uint32_t block)
{
	uint64_t sw = (uint64_t)k * block;

	return (size + sw - 1) / sw;
}

void spx_obj_stripe_at(uint64_t size, int k, uint32_t block, uint64_t s,
		       struct spx_obj_stripe *out)
{
	uint64_t sw = (uint64_t)k * block;
	uint64_t rest;

	out->off = s * sw;
	rest = size > out->off ? size - out->off : 0;
	out->len = (size_t)(rest < sw ? rest : sw);
	out->bl = (out->len + (size_t)k - 1) / (size_t)k;
	out->foff = s * ((uint64_t)block + 4);
}

uint64_t spx_obj_shard_size(uint64_t size, int k, uint32_t block)
{
	uint64_t n = spx_obj_nstripes(size, k, block);
	struct spx_obj_stripe st;

	if (!n)
		return 0;
	spx_obj_stripe_at(size, k, block, n - 1, &st);
	return st.foff + st.bl + 4;
}

int spx_ec_init(struct spx_ec *e, int k, int m)
{
	if (k < 1 || m < 0 || k + m > 32)
		return spx_error(SPX_USAGE, "bad erasure code RS(%d,%d)", k, m);
	e->k = k;
	e->m = m;
	e->matrix = spx_malloc((size_t)(k + m) * (size_t)k);
	e->tbls = spx_malloc((size_t)k * (size_t)(m ? m : 1) * 32);
	gf_gen_cauchy1_matrix(e->matrix, k + m, k);
	if (m)
		ec_init_tables(k, m, e->matrix + k * k, e->tbls);
	return 0;
}

void spx_ec_release(struct spx_ec *e)
{
	free(e->matrix);
	free(e->tbls);
	e->matrix = e->tbls = NULL;
}

void spx_ec_encode(const struct spx_ec *e, size_t len, unsigned char **sh)
{
	if (e->m && len)
		ec_encode_data((int)len, e->k, e->m, e->tbls, sh, sh + e->k);
}

int spx_ec_decode(const struct spx_ec *e, size_t len, unsigned char **sh,
		  const bool *ok)
{
	int k = e->k, n = e->k + e->m, nsrc = 0, nerr = 0;
	unsigned char b[32 * 32], d[32 * 32], c[32 * 32], tbls[32 * 32 * 32];
	unsigned char *src[32], *dst[32];
	int srcidx[32], erridx[32];

	for (int i = 0; i < n; i++) {
		if (ok[i] && nsrc < k)
			srcidx[nsrc++] = i;
		else if (!ok[i])
			erridx[nerr++] = i;
	}
	if (nsrc < k)
		return spx_error(SPX_FAIL, "%d of %d shards lost: cannot decode",
				 nerr, n);
	if (!nerr || !len)
		return 0;
	/* The rows of the surviving shards, inverted, map them back to the
	 * data; a lost parity row is its encoding row times that inverse. */
	for (int r = 0; r < k; r++)
		memcpy(b + r * k, e->matrix + srcidx[r] * k, (size_t)k);
	if (gf_invert_matrix(b, d, k) < 0)
		return spx_error(SPX_FAIL, "singular decoding matrix");
	for (int r = 0; r < nerr; r++) {
		int ei = erridx[r];

		if (ei < k) {
			memcpy(c + r * k, d + ei * k, (size_t)k);
			continue;
		}
		for (int j = 0; j < k; j++) {
			unsigned char s = 0;

			for (int l = 0; l < k; l++)
				s ^= gf_mul(e->matrix[ei * k + l], d[l * k + j]);
			c[r * k + j] = s;
		}
	}
	for (int i = 0; i < k; i++)
		src[i] = sh[srcidx[i]];
	for (int i = 0; i < nerr; i++)
		dst[i] = sh[erridx[i]];
	ec_init_tables(k, nerr, c, tbls);
	ec_encode_data((int)len, k, nerr, tbls, src, dst);
	return 0;
}
