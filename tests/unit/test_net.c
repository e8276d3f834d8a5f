/* Unit tests for lib/net: interface names and IPv4 addresses with a
 * prefix, from tables. The netlink calls are tested by net.bats, in a
 * network namespace of its own. */
#include "spx.h"

#include "net/net.h"
#include "t.h"

static const struct {
	const char *name;
	bool ok;
} names[] = {
	{ "br0", true },
	{ "spx-br.1_a", true },
	{ "t", true },
	{ "tap0123456789ab", true }, /* 15 */
	{ "tap0123456789abc", false }, /* 16 */
	{ "", false },
	{ "0", false },
	{ "123", false },
	{ ".", false },
	{ "..", false },
	{ "-x", false },
	{ "_x", false },
	{ "a/b", false },
	{ "a b", false },
	{ "a,b", false }, /* QEMU's option separator */
	{ "a=b", false },
	{ "a:b", false }, /* an alias */
	{ "a\tb", false },
	{ "\xc3\xa9t", false },
	{ "tap\xc3\xa9", false },
};

static const struct {
	const char *s;
	uint32_t addr;
	unsigned prefix;
	const char *msg; /* NULL: parses */
} cidrs[] = {
	{ "10.0.0.1/24", 0x0a000001, 24, NULL },
	{ "169.254.169.254/32", 0xa9fea9fe, 32, NULL },
	{ "192.168.1.255/16", 0xc0a801ff, 16, NULL },
	{ "10.0.0.0/31", 0x0a000000, 31, NULL },
	{ "10.0.0.1/31", 0x0a000001, 31, NULL },
	{ "255.255.255.255/32", 0xffffffff, 32, NULL },
	{ "1.2.3.4/1", 0x01020304, 1, NULL },
	{ "10.0.0.0/24", 0, 0, "'10.0.0.0/24' is not a host's address in its "
			       "network" },
	{ "10.0.0.255/24", 0, 0, "'10.0.0.255/24' is not a host's address in "
				 "its network" },
	{ "10.0.0.1/0", 0, 0, "not an IPv4 address and prefix: '10.0.0.1/0'" },
	{ "10.0.0.1/33", 0, 0, "not an IPv4 address and prefix: '10.0.0.1/33'" },
	{ "10.0.0.1/024", 0, 0,
	  "not an IPv4 address and prefix: '10.0.0.1/024'" },
	{ "010.0.0.1/24", 0, 0,
	  "not an IPv4 address and prefix: '010.0.0.1/24'" },
	{ "10.0.0.256/24", 0, 0,
	  "not an IPv4 address and prefix: '10.0.0.256/24'" },
	{ "10.0.0.1", 0, 0, "not an IPv4 address and prefix: '10.0.0.1'" },
	{ "10.0.0/24", 0, 0, "not an IPv4 address and prefix: '10.0.0/24'" },
	{ "10.0.0.1.2/24", 0, 0,
	  "not an IPv4 address and prefix: '10.0.0.1.2/24'" },
	{ "10.0.0.1/24 ", 0, 0,
	  "not an IPv4 address and prefix: '10.0.0.1/24 '" },
	{ " 10.0.0.1/24", 0, 0,
	  "not an IPv4 address and prefix: ' 10.0.0.1/24'" },
	{ "10.0.0.1/", 0, 0, "not an IPv4 address and prefix: '10.0.0.1/'" },
	{ "10..0.1/24", 0, 0, "not an IPv4 address and prefix: '10..0.1/24'" },
	{ "0x0a.0.0.1/24", 0, 0,
	  "not an IPv4 address and prefix: '0x0a.0.0.1/24'" },
	{ "1000.0.0.1/24", 0, 0,
	  "not an IPv4 address and prefix: '1000.0.0.1/24'" },
	{ "-1.0.0.1/24", 0, 0, "not an IPv4 address and prefix: '-1.0.0.1/24'" },
	{ "fe80::1/64", 0, 0, "not an IPv4 address and prefix: 'fe80::1/64'" },
	{ "", 0, 0, "not an IPv4 address and prefix: ''" },
};

int main(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(names); i++)
		T_OK(spx_net_name_valid(names[i].name) == names[i].ok,
		     "name '%s' %s", names[i].name,
		     names[i].ok ? "passes" : "is refused");
	T_OK(!spx_net_name_valid(NULL), "a NULL name is refused");

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cidrs); i++) {
		struct spx_net_cidr c = { 7, 7 };
		int rc = spx_net_cidr_parse(cidrs[i].s, strlen(cidrs[i].s), &c);
		char back[19];

		if (!cidrs[i].msg) {
			T_INT(rc, 0, "'%s' parses", cidrs[i].s);
			T_INT(c.addr, cidrs[i].addr, "'%s': address",
			      cidrs[i].s);
			T_INT(c.prefix, cidrs[i].prefix, "'%s': prefix",
			      cidrs[i].s);
			spx_net_cidr_format(&c, back);
			T_STR(back, cidrs[i].s, "'%s' formats back", cidrs[i].s);
		} else {
			T_INT(rc, -1, "'%s' is refused", cidrs[i].s);
			T_STR(spx_errmsg(), cidrs[i].msg, "'%s': message",
			      cidrs[i].s);
			T_INT(spx_errstatus(), SPX_USAGE, "'%s': usage error",
			      cidrs[i].s);
			T_OK(c.addr == 7 && c.prefix == 7, "'%s': untouched",
			     cidrs[i].s);
		}
		spx_error_clear();
	}
	/* The length bounds the parse: what follows is not read. */
	{
		struct spx_net_cidr c;

		T_INT(spx_net_cidr_parse("10.0.0.1/24garbage", 11, &c), 0,
		      "a prefix of the text, by its length");
		T_INT(c.prefix, 24, "the prefix read up to the length");
	}
	/* Marks: spx's byte and an index, or nothing. */
	{
		char name[SPX_NET_NAME_MAX + 1] = "x";
		static const uint32_t bad[] = { 0, SPX_NET_TAP_MARK,
						0x12000001u, 0x5f000001u,
						SPX_NET_TAP_MARK | 0xffffffu };

		T_INT(spx_net_tap_mark(7), 0x5e000007, "the mark of index 7");
		T_INT(spx_net_tap_mark(0x1234567), 0x5e234567,
		      "an index wider than 24 bits keeps spx's byte");
		for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++) {
			T_INT(spx_net_mark_tap(bad[i], name), -1,
			      "mark 0x%08x names no tap", bad[i]);
			T_INT(spx_errstatus(), SPX_NO, "mark 0x%08x: SPX_NO",
			      bad[i]);
			T_STR(name, "x", "mark 0x%08x: name untouched", bad[i]);
			spx_error_clear();
		}
		/* Index 1 is the loopback in every network namespace. */
		T_INT(spx_net_mark_tap(spx_net_tap_mark(1), name), 0,
		      "the mark of index 1");
		T_STR(name, "lo", "names lo");
	}
	/* Guards: a unicast MAC and a host's IPv4 address, or nothing. */
	{
		static const struct {
			const char *mac, *addr;
			bool ok;
		} gs[] = {
			{ "02:00:5e:10:00:01", "10.91.0.4", true },
			{ "02:AB:cd:EF:00:01", "172.31.15.254", true },
			{ "03:00:5e:10:00:01", "10.91.0.4", false }, /* group */
			{ "ff:ff:ff:ff:ff:ff", "10.91.0.4", false },
			{ "02:00:5e:10:00", "10.91.0.4", false },
			{ "02:00:5e:10:00:01:02", "10.91.0.4", false },
			{ "02-00-5e-10-00-01", "10.91.0.4", false },
			{ "02:00:5e:10:00:0g", "10.91.0.4", false },
			{ "02:00:5e:10:00:01 drop", "10.91.0.4", false },
			{ "02:00:5e:10:00:01", "10.91.0.4; flush", false },
			{ "02:00:5e:10:00:01", "010.91.0.4", false },
			{ "02:00:5e:10:00:01", "10.91.0.256", false },
			{ "02:00:5e:10:00:01", "0.0.0.0", false },
			{ "02:00:5e:10:00:01", "224.0.0.1", false },
			{ "02:00:5e:10:00:01", "255.255.255.255", false },
			{ "02:00:5e:10:00:01", "10.91.0.4/24", false },
			{ "02:00:5e:10:00:01", "", false },
			{ NULL, "10.91.0.4", false },
			{ "02:00:5e:10:00:01", NULL, false },
		};

		for (size_t i = 0; i < SPX_ARRAY_SIZE(gs); i++) {
			struct spx_net_guard g;
			int rc = spx_net_guard_parse(gs[i].mac, gs[i].addr, &g);

			T_INT(rc, gs[i].ok ? 0 : -1, "guard %s %s: %s",
			      gs[i].mac ? gs[i].mac : "(null)",
			      gs[i].addr ? gs[i].addr : "(null)",
			      gs[i].ok ? "parses" : "refused");
			if (!gs[i].ok)
				T_INT(spx_errstatus(), SPX_USAGE,
				      "guard %zu: a usage error", i);
			spx_error_clear();
		}
		{
			struct spx_net_guard g;

			spx_net_guard_parse("02:AB:cd:EF:00:01", "172.31.15.254",
					    &g);
			T_STR(g.mac, "02:ab:cd:ef:00:01", "the MAC in lower case");
			T_INT(g.addr, 0xac1f0ffe, "the address");
		}
	}
	return t_done();
}
