/* fuzz_obj_meta: the object metadata decoder. Metadata files live on
 * drives that fail and can be scribbled on: whatever decode accepts must
 * be self-consistent and re-encode to a file that decodes the same. */
#include "spx.h"

#include "checksum.h"
#include "obj/obj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An input that starts with '{' is the JSON part: it gets a valid
 * header (no inline data, the right CRC), so that the fuzzer reaches
 * the JSON reader instead of stopping at the checksum. */
static void wrap(const uint8_t *data, size_t size, struct spx_buf *out)
{
	uint32_t crc = spx_crc32c(data, size);

	spx_buf_addf(out, "spx-obj-meta 1 json=%zu data=0 crc32c=%08x\n", size,
		     crc);
	spx_buf_add(out, data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_obj_meta m, m2;
	struct spx_buf b = SPX_BUF_INIT, w = SPX_BUF_INIT;
	uint64_t total = 0;

	if (size && data[0] == '{') {
		wrap(data, size, &w);
		data = (const uint8_t *)w.p;
		size = w.len;
	}
	if (spx_obj_meta_decode((const char *)data, size, &m) < 0) {
		spx_buf_release(&w);
		if (spx_errstatus() != SPX_FAIL)
			abort();
		return 0;
	}
	for (size_t i = 0; i < m.nsegs; i++)
		total += m.segs[i].size;
	if (m.k < 1 || m.k + m.m > 32 || m.block < 64 ||
	    (m.is_inline ? m.inl.len != m.size : total != m.size))
		abort();
	spx_obj_meta_encode(&m, &b);
	if (spx_obj_meta_decode(b.p, b.len, &m2) < 0 || m2.size != m.size ||
	    m2.gen != m.gen || strcmp(m2.key, m.key) || strcmp(m2.etag, m.etag) ||
	    m2.nsegs != m.nsegs || m2.inl.len != m.inl.len)
		abort();
	for (size_t i = 0; i < m.nsegs; i++)
		if (strcmp(m2.segs[i].cksum, m.segs[i].cksum))
			abort();
	spx_obj_meta_release(&m2);
	spx_obj_meta_release(&m);
	spx_buf_release(&b);
	spx_buf_release(&w);
	return 0;
}
