/* fuzz_net_cidr: an address with a prefix (spx-net --address, and what
 * the agent passes on from records). What parses formats back to the
 * same text and is a host's address in its network. The same bytes,
 * split at their first newline, as a tap's guard (a MAC and an address,
 * which go into nftables commands): what parses is a lower-case unicast
 * MAC of 17 characters and an address that is no network's 0 or a
 * multicast one. */
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
	{
		const uint8_t *nl = memchr(data, '\n', size);
		size_t ml = nl ? (size_t)(nl - data) : size;
		char *mac = spx_strndup((const char *)data, ml);
		char *addr = nl ? spx_strndup((const char *)nl + 1,
					      size - ml - 1)
				: NULL;
		struct spx_net_guard g;

		if (spx_net_guard_parse(mac, addr, &g) == 0) {
			if (strlen(g.mac) != 17 || strspn(g.mac,
					"0123456789abcdef:") != 17 ||
			    strchr("13579bdf", g.mac[1]) || !(g.addr >> 24) ||
			    g.addr >> 28 >= 14)
				abort();
		}
		spx_error_clear();
		free(addr);
		free(mac);
	}
	return 0;
}
