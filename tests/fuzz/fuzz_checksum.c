/* fuzz_checksum: base64 as clients send it (x-amz-checksum-*, Content-MD5)
 * and the streaming checksums.
 *
 * The whole input is a base64 candidate: an accepted one must encode back
 * to itself and fit the output size; verification must not disagree with
 * decoding. The input is also the data: for every algorithm, the digest of
 * it split at a point taken from the first byte, and in small chunks (the
 * CRC64 table path) must equal the one-shot digest (the folding path from
 * 256 bytes), and the CRCs of the two halves must combine to the whole. */
#include "spx.h"

#include "checksum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void base64(const uint8_t *data, size_t size)
{
	size_t cap = size / 4 * 3, outsz, n;
	unsigned char *out = spx_malloc(cap ? cap : 1);
	struct spx_buf b = SPX_BUF_INIT;

	/* A bound from the input, sometimes below what it needs. */
	outsz = size ? cap - (data[0] & 3) * (cap > 3) : 0;
	if (spx_base64_decode((const char *)data, size, out, outsz, &n) == 0) {
		if (n > outsz)
			abort();
		spx_base64_encode(out, n, &b);
		if (b.len != size || memcmp(b.p, data, size))
			abort();
	}
	spx_buf_release(&b);
	free(out);
}

static void verify(const uint8_t *data, size_t size)
{
	char *s = spx_strndup((const char *)data, size);
	unsigned char d[SPX_CKSUM_MAX], raw[SPX_CKSUM_MAX];
	enum spx_cksum_verdict why;

	for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
		size_t want = spx_cksum_size((enum spx_cksum_algo)a), n;
		bool wellformed;
		int rc;

		memset(d, a, sizeof(d));
		rc = spx_cksum_verify_b64((enum spx_cksum_algo)a, s, d, &why);
		wellformed = spx_base64_decode(s, strlen(s), raw, sizeof(raw),
					       &n) == 0 &&
			     n == want;
		if ((rc == 0) != (why == SPX_CKSUM_OK) ||
		    wellformed != (why != SPX_CKSUM_MALFORMED) ||
		    (why == SPX_CKSUM_OK && memcmp(raw, d, want)))
			abort();
	}
	free(s);
}

static void streaming(const uint8_t *data, size_t size)
{
	size_t cut = size ? (size_t)data[0] * size / 256 : 0;
	size_t step = size > 1 ? (size_t)(data[1] & 63) + 1 : 1;

	for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
		enum spx_cksum_algo algo = (enum spx_cksum_algo)a;
		unsigned char one[SPX_CKSUM_MAX], two[SPX_CKSUM_MAX],
			many[SPX_CKSUM_MAX], head[SPX_CKSUM_MAX],
			tail[SPX_CKSUM_MAX];
		size_t n = spx_cksum_size(algo), len;
		struct spx_cksum c;

		if (spx_cksum_digest(algo, data, size, one, &len) < 0 ||
		    len != n)
			abort();

		if (spx_cksum_init(&c, algo) < 0)
			abort();
		spx_cksum_update(&c, data, cut);
		spx_cksum_update(&c, data + cut, size - cut);
		if (spx_cksum_final(&c, two, NULL) < 0 || memcmp(one, two, n))
			abort();
		spx_cksum_release(&c);

		if (spx_cksum_init(&c, algo) < 0)
			abort();
		for (size_t off = 0; off < size; off += step)
			spx_cksum_update(&c, data + off,
					 size - off < step ? size - off : step);
		if (spx_cksum_final(&c, many, NULL) < 0 ||
		    memcmp(one, many, n))
			abort();
		spx_cksum_release(&c);

		if (algo > SPX_CKSUM_CRC64NVME)
			continue;
		if (spx_cksum_digest(algo, data, cut, head, NULL) < 0 ||
		    spx_cksum_digest(algo, data + cut, size - cut, tail,
				     NULL) < 0 ||
		    spx_cksum_combine(algo, head, tail, size - cut) < 0 ||
		    memcmp(head, one, n))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	base64(data, size);
	verify(data, size);
	streaming(data, size);
	return 0;
}
