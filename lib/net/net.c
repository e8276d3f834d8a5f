/* Bridges and taps over rtnetlink (libnl-3) and the tun driver. */
#include "spx.h"

#include "net/net.h"

#include <ctype.h>
#include <fcntl.h>
#include <jansson.h>
#include <net/if.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <arpa/inet.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <nftables/libnftables.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "file.h"

bool spx_net_name_valid(const char *name)
{
	size_t n = 0;

	if (!name || !((*name >= 'a' && *name <= 'z') ||
		       (*name >= 'A' && *name <= 'Z')))
		return false;
	for (const char *p = name; *p; p++, n++) {
		char c = *p;

		if (n == SPX_NET_NAME_MAX)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* A decimal number of at most three digits, no leading zero, <= max;
 * advances *p. -1 when there is none. */
static int dec(const char **p, const char *end, unsigned max)
{
	const char *s = *p;
	unsigned v = 0;
	int n = 0;

	while (s < end && *s >= '0' && *s <= '9' && n < 4) {
		v = v * 10 + (unsigned)(*s - '0');
		s++;
		n++;
	}
	if (n == 0 || n > 3 || (n > 1 && **p == '0') || v > max)
		return -1;
	*p = s;
	return (int)v;
}

int spx_net_cidr_parse(const char *text, size_t len, struct spx_net_cidr *out)
{
	const char *p = text, *end = text + len;
	uint32_t a = 0, host;
	int v;

	for (int i = 0; i < 4; i++) {
		if (i && (p == end || *p++ != '.'))
			goto bad;
		if ((v = dec(&p, end, 255)) < 0)
			goto bad;
		a = a << 8 | (uint32_t)v;
	}
	if (p == end || *p++ != '/' || (v = dec(&p, end, 32)) < 1 || p != end)
		goto bad;
	host = v == 32 ? 0 : a & (0xffffffffu >> v);
	if (v < 31 && (host == 0 || host == 0xffffffffu >> v))
		return spx_error(SPX_USAGE,
				 "'%.*s' is not a host's address in its "
				 "network",
				 (int)(len < 64 ? len : 64), text);
	out->addr = a;
	out->prefix = (unsigned)v;
	return 0;
bad:
	return spx_error(SPX_USAGE, "not an IPv4 address and prefix: '%.*s'",
			 (int)(len < 64 ? len : 64), text);
}

void spx_net_cidr_format(const struct spx_net_cidr *c, char out[19])
{
	snprintf(out, 19, "%u.%u.%u.%u/%u", c->addr >> 24,
		 (c->addr >> 16) & 255, (c->addr >> 8) & 255, c->addr & 255,
		 c->prefix & 63);
}

/* Record libnl's error e (negative NLE_*) after a message. */
static int nl_fail(int e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int nl_fail(int e, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (e == -NLE_PERM)
		return spx_error(SPX_FAIL,
				 "%s: operation not permitted (needs "
				 "CAP_NET_ADMIN)",
				 what);
	return spx_error(e == -NLE_OBJ_NOTFOUND || e == -NLE_NODEV ? SPX_NO
								    : SPX_FAIL,
			 "%s: %s", what, nl_geterror(e));
}

static int sock_open(struct nl_sock **out)
{
	struct nl_sock *sk = nl_socket_alloc();
	int e;

	if (!sk)
		return spx_error(SPX_FAIL, "out of memory");
	if ((e = nl_connect(sk, NETLINK_ROUTE)) < 0) {
		nl_socket_free(sk);
		return nl_fail(e, "cannot open rtnetlink");
	}
	*out = sk;
	return 0;
}

/* The link named name into *out (NULL when there is none). */
static int link_get(struct nl_sock *sk, const char *name,
		    struct rtnl_link **out)
{
	int e = rtnl_link_get_kernel(sk, 0, name, out);

	if (e == -NLE_OBJ_NOTFOUND || e == -NLE_NODEV) {
		*out = NULL;
		return 0;
	}
	return e < 0 ? nl_fail(e, "cannot look at '%s'", name) : 0;
}

static const char *kind_of(struct rtnl_link *l)
{
	const char *t = rtnl_link_get_type(l);

	return t ? t : "";
}

/* Bring l up and, when master > 0, make it a port of master. */
static int link_set(struct nl_sock *sk, struct rtnl_link *l, int master)
{
	struct rtnl_link *ch;
	int e;

	if ((rtnl_link_get_flags(l) & IFF_UP) &&
	    (master <= 0 || rtnl_link_get_master(l) == master))
		return 0;
	if (!(ch = rtnl_link_alloc()))
		return spx_error(SPX_FAIL, "out of memory");
	rtnl_link_set_flags(ch, IFF_UP);
	if (master > 0)
		rtnl_link_set_master(ch, master);
	e = rtnl_link_change(sk, l, ch, 0);
	rtnl_link_put(ch);
	return e < 0 ? nl_fail(e, "cannot set up '%s'",
			       rtnl_link_get_name(l))
		     : 0;
}

static int addr_add(struct nl_sock *sk, int ifindex, const char *ifname,
		    const struct spx_net_cidr *c)
{
	uint32_t be = htonl(c->addr), bc;
	struct rtnl_addr *ra = rtnl_addr_alloc();
	struct nl_addr *local = nl_addr_build(AF_INET, &be, 4), *brd = NULL;
	char text[19];
	int e = -NLE_NOMEM;

	if (!ra || !local)
		goto out;
	nl_addr_set_prefixlen(local, (int)c->prefix);
	rtnl_addr_set_ifindex(ra, ifindex);
	rtnl_addr_set_family(ra, AF_INET);
	if ((e = rtnl_addr_set_local(ra, local)) < 0)
		goto out;
	rtnl_addr_set_prefixlen(ra, (int)c->prefix);
	if (c->prefix < 31) {
		bc = htonl(c->addr | (0xffffffffu >> c->prefix));
		if (!(brd = nl_addr_build(AF_INET, &bc, 4)) ||
		    (e = rtnl_addr_set_broadcast(ra, brd)) < 0)
			goto out;
	}
	e = rtnl_addr_add(sk, ra, 0);
	if (e == -NLE_EXIST)
		e = 0;
out:
	nl_addr_put(local);
	nl_addr_put(brd);
	rtnl_addr_put(ra);
	if (e < 0) {
		spx_net_cidr_format(c, text);
		return nl_fail(e, "cannot put %s on '%s'", text, ifname);
	}
	return 0;
}

int spx_net_bridge(const char *name, const struct spx_net_cidr *addrs,
		   size_t n)
{
	struct nl_sock *sk = NULL;
	struct rtnl_link *l = NULL;
	int rc = -1, e;

	if (!spx_net_name_valid(name))
		return spx_error(SPX_USAGE, "not an interface name: '%s'",
				 name);
	if (n > SPX_NET_ADDRS_MAX)
		return spx_error(SPX_USAGE, "%d addresses at most",
				 SPX_NET_ADDRS_MAX);
	if (sock_open(&sk) < 0)
		return -1;
	if (link_get(sk, name, &l) < 0)
		goto out;
	if (!l) {
		e = rtnl_link_bridge_add(sk, name);
		/* Another writer made it meanwhile: look at what it made. */
		if (e < 0 && e != -NLE_EXIST) {
			nl_fail(e, "cannot make bridge '%s'", name);
			goto out;
		}
		if (link_get(sk, name, &l) < 0)
			goto out;
		if (!l) {
			spx_error(SPX_FAIL, "bridge '%s' went away", name);
			goto out;
		}
	}
	if (strcmp(kind_of(l), "bridge")) {
		spx_error(SPX_NO, "'%s' is there and is not a bridge (%s)",
			  name, *kind_of(l) ? kind_of(l) : "a device");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (addr_add(sk, rtnl_link_get_ifindex(l), name, &addrs[i]) <
		    0)
			goto out;
	rc = link_set(sk, l, 0);
out:
	if (l)
		rtnl_link_put(l);
	nl_socket_free(sk);
	return rc;
}

/* /sys/class/net/NAME/FILE as a number; def when unreadable. */
static long long sys_num(const char *name, const char *file, long long def)
{
	char path[96], buf[32];
	long long v;
	char *end;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", name, file);
	if (!(f = fopen(path, "re")))
		return def;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return def;
	}
	fclose(f);
	errno = 0;
	v = strtoll(buf, &end, 0);
	return errno || end == buf ? def : v;
}

uint32_t spx_net_tap_mark(int ifindex)
{
	return SPX_NET_TAP_MARK | ((uint32_t)ifindex & ~SPX_NET_TAP_MARK_MASK);
}

int spx_net_mark_tap(uint32_t mark, char name[SPX_NET_NAME_MAX + 1])
{
	char buf[IFNAMSIZ];
	unsigned idx = mark & ~SPX_NET_TAP_MARK_MASK;

	if ((mark & SPX_NET_TAP_MARK_MASK) != SPX_NET_TAP_MARK || !idx ||
	    !if_indextoname(idx, buf) || strlen(buf) > SPX_NET_NAME_MAX)
		return spx_error(SPX_NO, "mark 0x%08x names no tap", mark);
	memcpy(name, buf, strlen(buf) + 1);
	return 0;
}

/* Run nft commands, one transaction. With out, its JSON output there. */
static int nft_run(const char *cmds, struct spx_buf *out)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	int rc = 0;

	if (!ctx)
		return spx_error(SPX_FAIL, "cannot start libnftables");
	nft_ctx_buffer_error(ctx);
	nft_ctx_buffer_output(ctx);
	if (out)
		nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_JSON);
	if (nft_run_cmd_from_buffer(ctx, cmds) != 0) {
		const char *e = nft_ctx_get_error_buffer(ctx);

		if (e && strstr(e, "Operation not permitted"))
			rc = spx_error(SPX_FAIL, "nftables: operation not "
						 "permitted (needs "
						 "CAP_NET_ADMIN)");
		else
			rc = spx_error(SPX_FAIL, "nftables: %.*s",
				       e ? (int)strcspn(e, "\n") : 7,
				       e ? e : "refused");
	} else if (out) {
		spx_buf_adds(out, nft_ctx_get_output_buffer(ctx));
	}
	nft_ctx_free(ctx);
	return rc;
}

/* Mark what comes in from the tap name (index ifindex): its chain made
 * afresh in one transaction, so a tap made again under an old name is
 * hooked, and at no moment does a packet pass unmarked. */
static int mark_set(const char *name, int ifindex,
		    const struct spx_net_guard *g)
{
	struct spx_buf b = SPX_BUF_INIT;
	int rc;

	spx_buf_addf(&b,
		     "add table netdev spx\n"
		     "add chain netdev spx %1$s { type filter hook ingress "
		     "device \"%1$s\" priority -500 ; policy accept ; }\n"
		     "flush chain netdev spx %1$s\n"
		     "delete chain netdev spx %1$s\n"
		     "add chain netdev spx %1$s { type filter hook ingress "
		     "device \"%1$s\" priority -500 ; policy accept ; }\n"
		     "add rule netdev spx %1$s meta mark set 0x%2$08x\n",
		     name, spx_net_tap_mark(ifindex));
	if (g) {
		/* g is parsed: its text is digits, dots and colons. */
		char ip[INET_ADDRSTRLEN];
		struct in_addr ia = { .s_addr = htonl(g->addr) };

		inet_ntop(AF_INET, &ia, ip, sizeof(ip));
		spx_buf_addf(
			&b,
			"add rule netdev spx %1$s ether saddr != %2$s drop\n"
			"add rule netdev spx %1$s meta protocol != { ip, arp } "
			"drop\n"
			"add rule netdev spx %1$s arp saddr ether != %2$s drop\n"
			"add rule netdev spx %1$s arp saddr ip != %3$s drop\n"
			"add rule netdev spx %1$s ip saddr 0.0.0.0 udp sport 68 "
			"udp dport 67 accept\n"
			"add rule netdev spx %1$s ip saddr != %3$s drop\n",
			name, g->mac, ip);
	}
	spx_buf_addc(&b, '\0');
	rc = nft_run(b.p, NULL);
	spx_buf_release(&b);
	return rc < 0 ? spx_error_prefix("cannot mark tap '%s'", name) : 0;
}

int spx_net_guard_parse(const char *mac, const char *addr,
			struct spx_net_guard *g)
{
	struct spx_net_cidr c;
	char host[24];
	size_t i;

	memset(g, 0, sizeof(*g));
	for (i = 0; mac && mac[i] && i < 17; i++)
		if (i % 3 == 2 ? mac[i] != ':' : !isxdigit((unsigned char)mac[i]))
			break;
	/* The group bit: the low bit of the first octet's second digit. */
	if (!mac || i != 17 || mac[17] ||
	    (isdigit((unsigned char)mac[1]) ? mac[1] - '0'
					     : tolower((unsigned char)mac[1]) -
						       'a' + 10) &
		    1)
		return spx_error(SPX_USAGE,
				 "not a unicast MAC address: '%.40s'",
				 mac ? mac : "");
	for (i = 0; i < 17; i++)
		g->mac[i] = (char)tolower((unsigned char)mac[i]);
	/* A host route's form, so the CIDR parser's checks apply. */
	snprintf(host, sizeof(host), "%.15s/32", addr ? addr : "");
	/* Not 0.0.0.0/8, multicast or above: a guest's own address. */
	if (!addr || strlen(addr) > 15 ||
	    spx_net_cidr_parse(host, strlen(host), &c) < 0 ||
	    c.addr >> 24 == 0 || c.addr >> 28 >= 14) {
		spx_error_clear();
		return spx_error(SPX_USAGE, "not an IPv4 address: '%.40s'",
				 addr ? addr : "");
	}
	g->addr = c.addr;
	return 0;
}

/* The marks of the taps: a JSON object chain name -> mark (0: a chain
 * without one), from table netdev spx (empty when there is none). */
static json_t *marks_get(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	json_t *all = json_object(), *doc, *v;
	size_t i;

	if (nft_run("list table netdev spx", &b) < 0) {
		spx_error_clear(); /* no table: no marks */
		spx_buf_release(&b);
		return all;
	}
	doc = json_loadb(b.p ? b.p : "", b.len, 0, NULL);
	json_array_foreach(json_object_get(doc, "nftables"), i, v) {
		json_t *rule = json_object_get(v, "rule"), *e;
		const char *chain = json_string_value(
			json_object_get(rule, "chain"));
		const char *cname = json_string_value(
			json_object_get(json_object_get(v, "chain"), "name"));
		size_t j;

		if (cname && !json_object_get(all, cname))
			json_object_set_new(all, cname, json_integer(0));

		json_array_foreach(json_object_get(rule, "expr"), j, e) {
			json_t *m = json_object_get(e, "mangle");
			const char *key = json_string_value(json_object_get(
				json_object_get(json_object_get(m, "key"),
						"meta"),
				"key"));
			json_t *val = json_object_get(m, "value");

			if (chain && key && !strcmp(key, "mark") &&
			    json_is_integer(val))
				json_object_set(all, chain, val);
		}
	}
	json_decref(doc);
	spx_buf_release(&b);
	return all;
}

/* Make or attach to the persistent tap name, owned by uid. */
static int tun_make(const char *name, uid_t uid)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC), rc = -1;

	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot open /dev/net/tun");
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		spx_error_errno(errno == EPERM ? SPX_FAIL : SPX_NO,
				"cannot make tap '%s'", name);
	else if ((uid != (uid_t)-1 &&
		  ioctl(fd, TUNSETOWNER, (unsigned long)uid) < 0) ||
		 ioctl(fd, TUNSETPERSIST, 1UL) < 0)
		spx_error_errno(SPX_FAIL, "cannot keep tap '%s'", name);
	else
		rc = 0;
	close(fd);
	return rc;
}

int spx_net_tap(const char *name, const char *bridge, uid_t uid,
		const struct spx_net_guard *g)
{
	struct nl_sock *sk = NULL;
	struct rtnl_link *l = NULL, *br = NULL;
	bool made = false; /* there already, as asked */
	int rc = -1, master;

	if (!spx_net_name_valid(name) || !spx_net_name_valid(bridge))
		return spx_error(SPX_USAGE, "not an interface name: '%s'",
				 spx_net_name_valid(name) ? bridge : name);
	if (!strcmp(name, bridge))
		return spx_error(SPX_USAGE, "'%s' cannot be its own bridge",
				 name);
	if (sock_open(&sk) < 0)
		return -1;
	if (link_get(sk, bridge, &br) < 0 || link_get(sk, name, &l) < 0)
		goto out;
	if (!br || strcmp(kind_of(br), "bridge")) {
		spx_error(SPX_NO, "no bridge '%s'", bridge);
		goto out;
	}
	master = rtnl_link_get_ifindex(br);
	if (l) {
		int m = rtnl_link_get_master(l);
		long long owner = sys_num(name, "owner", -1);

		/* tun_flags says tap (IFF_TAP) or tun. */
		if (strcmp(kind_of(l), "tun") ||
		    !(sys_num(name, "tun_flags", 0) & IFF_TAP)) {
			spx_error(SPX_NO, "'%s' is there and is not a tap",
				  name);
			goto out;
		}
		if (m > 0 && m != master) {
			spx_error(SPX_NO, "tap '%s' is on another bridge",
				  name);
			goto out;
		}
		/* A tap QEMU holds cannot be attached to again (EBUSY):
		 * only a new owner needs the tun driver. */
		made = uid == (uid_t)-1 || owner == (long long)uid;
		if (!made) {
			rtnl_link_put(l);
			l = NULL;
		}
	}
	if (!made && (tun_make(name, uid) < 0 || link_get(sk, name, &l) < 0))
		goto out;
	if (!l) {
		spx_error(SPX_FAIL, "tap '%s' went away", name);
		goto out;
	}
	/* Marked before it is up, so that nothing passes unmarked. */
	if (mark_set(name, rtnl_link_get_ifindex(l), g) == 0 &&
	    link_set(sk, l, master) == 0)
		rc = 0;
out:
	if (l)
		rtnl_link_put(l);
	if (br)
		rtnl_link_put(br);
	nl_socket_free(sk);
	return rc;
}

/* The tap's chain goes with it (a chain left behind would hook a new
 * interface of its name). */
static int mark_drop(const char *name)
{
	json_t *marks = marks_get();
	char *cmds;
	int rc = 0;

	if (json_object_get(marks, name)) {
		cmds = spx_xprintf("flush chain netdev spx %1$s\n"
				   "delete chain netdev spx %1$s\n",
				   name);
		rc = nft_run(cmds, NULL);
		free(cmds);
	}
	json_decref(marks);
	return rc < 0 ? spx_error_prefix("cannot unmark '%s'", name) : 0;
}

int spx_net_remove(const char *name)
{
	struct nl_sock *sk = NULL;
	struct rtnl_link *l = NULL;
	bool tap;
	int rc = -1, e;

	if (!spx_net_name_valid(name))
		return spx_error(SPX_USAGE, "not an interface name: '%s'",
				 name);
	if (sock_open(&sk) < 0)
		return -1;
	if (link_get(sk, name, &l) < 0)
		goto out;
	if (!l) {
		spx_error(SPX_NO, "no interface '%s'", name);
		goto out;
	}
	tap = !strcmp(kind_of(l), "tun");
	e = rtnl_link_delete(sk, l);
	if (e == -NLE_OBJ_NOTFOUND || e == -NLE_NODEV)
		spx_error(SPX_NO, "no interface '%s'", name);
	else if (e < 0)
		nl_fail(e, "cannot remove '%s'", name);
	else
		rc = tap ? mark_drop(name) : 0;
out:
	if (l)
		rtnl_link_put(l);
	nl_socket_free(sk);
	return rc;
}

static void one_addr(struct nl_object *o, void *arg)
{
	struct rtnl_addr *a = (struct rtnl_addr *)o;
	json_t *arr = arg;
	struct nl_addr *local = rtnl_addr_get_local(a);
	struct spx_net_cidr c;
	const unsigned char *b;
	char text[19];

	if (rtnl_addr_get_family(a) != AF_INET || !local ||
	    nl_addr_get_len(local) != 4)
		return;
	b = nl_addr_get_binary_addr(local);
	c.addr = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
		 (uint32_t)b[2] << 8 | b[3];
	c.prefix = (unsigned)rtnl_addr_get_prefixlen(a);
	spx_net_cidr_format(&c, text);
	json_array_append_new(arr, json_string(text));
}

int spx_net_list(json_t **out)
{
	struct nl_sock *sk = NULL;
	struct nl_cache *links = NULL, *addrs = NULL;
	json_t *arr = json_array(), *marks = NULL;
	int e, rc = -1;

	if (sock_open(&sk) < 0)
		goto out;
	marks = marks_get();
	if ((e = rtnl_link_alloc_cache(sk, AF_UNSPEC, &links)) < 0 ||
	    (e = rtnl_addr_alloc_cache(sk, &addrs)) < 0) {
		nl_fail(e, "cannot list interfaces");
		goto out;
	}
	for (struct nl_object *o = nl_cache_get_first(links); o;
	     o = nl_cache_get_next(o)) {
		struct rtnl_link *l = (struct rtnl_link *)o;
		const char *name = rtnl_link_get_name(l);
		struct rtnl_link *m;
		struct rtnl_addr *want;
		struct nl_addr *mac = rtnl_link_get_addr(l);
		char mtext[32] = "";
		json_t *obj, *list;

		if (!name)
			continue;
		m = rtnl_link_get(links, rtnl_link_get_master(l));
		if (mac && nl_addr_get_len(mac) == 6)
			nl_addr2str(mac, mtext, sizeof(mtext));
		list = json_array();
		if ((want = rtnl_addr_alloc())) {
			rtnl_addr_set_ifindex(want, rtnl_link_get_ifindex(l));
			nl_cache_foreach_filter(addrs, (struct nl_object *)want,
						one_addr, list);
			rtnl_addr_put(want);
		}
		obj = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:o}", "name",
				name, "kind", kind_of(l), "master",
				m ? rtnl_link_get_name(m) : "", "state",
				rtnl_link_get_flags(l) & IFF_UP ? "up" : "down",
				"mac", mtext, "mtu",
				(json_int_t)rtnl_link_get_mtu(l), "addresses",
				list);
		if (m)
			rtnl_link_put(m);
		if (!strcmp(kind_of(l), "tun")) {
			json_t *mk = json_object_get(marks, name);

			json_object_set_new(obj, "owner",
					    json_integer(sys_num(name, "owner",
								 -1)));
			json_object_set_new(obj, "mark",
					    json_integer(json_integer_value(mk)));
		}
		json_array_append_new(arr, obj);
	}
	*out = arr;
	arr = NULL;
	rc = 0;
out:
	json_decref(arr);
	json_decref(marks);
	nl_cache_free(links);
	nl_cache_free(addrs);
	nl_socket_free(sk);
	return rc;
}
