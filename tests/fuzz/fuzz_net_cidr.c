/* fuzz_net_cidr: an address with a prefix (spx-net --address, and what
 * the agent passes on from records). What parses formats back to the
 * same text and is a host's address in its network. */
#include "spx.h"

#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_net_cidr c;
	char back[19];

	if (spx_net_cidr_parse((const char *)data, size, &c) == 0) {
		uint32_t host = c.prefix == 32 ? 0
					       : c.addr & (0xffffffffu >> c.prefix);

		spx_net_cidr_format(&c, back);
		if (c.prefix < 1 || c.prefix > 32 || strlen(back) != size ||
		    memcmp(back, data, size) ||
		    (c.prefix < 31 &&
		     (!host || host == 0xffffffffu >> c.prefix)))
			abort();
	}
	spx_error_clear();
	return 0;
}
