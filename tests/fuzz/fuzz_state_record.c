/* fuzz_state_record: the dir backend's record file decoder. A record file
 * is not network input, but a torn or scribbled-on one must be refused,
 * never misread: whatever decode accepts must be exactly what encode
 * writes for the revision and value it found. */
#include "spx.h"

#include "state/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_buf b = SPX_BUF_INIT;
	const char *p = (const char *)data;
	uint64_t rev = 0;
	size_t off = 0, len = 0;

	if (spx_state_record_decode(p, size, &rev, &off, &len) < 0) {
		if (spx_errstatus() != SPX_FAIL)
			abort();
		return 0;
	}
	if (!rev || off > size || len != size - off ||
	    off > SPX_STATE_HEADER_MAX || len > SPX_STATE_VALUE_MAX)
		abort();
	spx_state_record_encode(&b, rev, p + off, len);
	if (b.len != size || memcmp(b.p, p, size))
		abort();
	spx_buf_release(&b);
	return 0;
}
