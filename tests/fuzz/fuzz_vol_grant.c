/* fuzz_vol_grant: a volume's grant file (lib/vol/grant.h), which the NBD
 * plugin reads on each open. What parses names a uid other than root's
 * and a guest name safe to print. */
#include "spx.h"

#include "vol/grant.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_vol_grant g;

	if (spx_vol_grant_parse((const char *)data, size, &g) == 0) {
		size_t n = strnlen(g.guest, sizeof(g.guest));

		if (g.uid == 0 || g.uid == UINT32_MAX || n == 0 ||
		    n >= sizeof(g.guest) || g.guest[0] == '-' ||
		    strspn(g.guest, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
			abort();
	} else if (g.uid || g.guest[0]) {
		abort();
	}
	spx_error_clear();
	return 0;
}
