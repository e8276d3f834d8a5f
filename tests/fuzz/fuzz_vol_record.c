/* fuzz_vol_record: a volume's record (vol.json) as a crash or a hand may
 * leave it. Any input parses or is refused; what parses is a volume the
 * store can serve: the id asked for, a size in whole sectors within the
 * limit, a creation time that is not negative. */
#include "spx.h"

#include "vol/vol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char id[] = "vol-0123456789abcdef0";
	struct spx_vol_info v;

	if (spx_vol_record_parse((const char *)data, size, id, &v) == 0) {
		if (strcmp(v.id, id) || !v.size || v.size > SPX_VOL_SIZE_MAX ||
		    v.size % SPX_VOL_SECTOR || v.created_ms < 0)
			abort();
	}
	spx_error_clear();
	return 0;
}
