/* net.h: the node's layer-2 plumbing for guests, over rtnetlink
 * (libnl-3) and the tun driver: bridges with the addresses the host
 * answers on, and persistent taps that QEMU attaches a guest's NIC to.
 *
 * Every call works in the network namespace of the caller and needs
 * CAP_NET_ADMIN there. Names and addresses are checked here, whoever
 * passes them (spx-net re-validates what spx-gw or the agent sends).
 * Making what is already there, as asked, succeeds: the agent converges
 * by running the same command again. Something of the same name but of
 * another kind, or a tap on another bridge, is SPX_NO.
 *
 * Errors: -1 with the error recorded (SPX_USAGE for a bad name or
 * address, SPX_NO for an interface missing or in the way, SPX_FAIL for
 * the kernel's refusal, EPERM included). */
#ifndef SPX_NET_H
#define SPX_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct json_t;

#define SPX_NET_NAME_MAX 15 /* IFNAMSIZ - 1 */
#define SPX_NET_ADDRS_MAX 8 /* addresses on one bridge */

/* An interface name spx makes or removes: 1..15 of [a-zA-Z0-9_.-], a
 * letter first (so never ".", "..", "-x" or all digits, which ip(8)
 * takes for an index). */
bool spx_net_name_valid(const char *name);

struct spx_net_cidr {
	uint32_t addr; /* host byte order */
	unsigned prefix; /* 0..32 */
};

/* Parse "a.b.c.d/n" exactly: four decimal octets without leading zeros
 * (inet_aton would read "010" as octal), a prefix 1..32 likewise, nothing
 * else. For an interface address the host part may be neither all zeros
 * nor all ones unless the prefix is 31 or 32. 0 or -1 (SPX_USAGE). */
int spx_net_cidr_parse(const char *text, size_t len, struct spx_net_cidr *out);
/* "a.b.c.d/n" into out (at least 19 bytes). */
void spx_net_cidr_format(const struct spx_net_cidr *c, char out[19]);

/* The bridge name, up, with each of addrs (IPv4) on it; addresses it
 * has beyond those are left alone. */
int spx_net_bridge(const char *name, const struct spx_net_cidr *addrs,
		   size_t n);
/* A persistent tap (IFF_TAP, no packet information, virtio-net
 * headers), owned by uid (who may attach to it without privilege; -1:
 * a new tap is root's alone, an old one keeps its owner), a port of
 * bridge, up, and marked: every packet that comes in from it carries
 * spx_net_tap_mark(its index) (an nftables netdev ingress chain of its
 * own in table "netdev spx", which runs before the bridge sees the
 * packet). With net.ipv4.tcp_fwmark_accept, a TCP connection the host
 * accepts from the guest has that mark as SO_MARK: how the metadata
 * server knows which guest asks, whatever the guest puts in its
 * packets. A tap that is there as asked is not attached to again (one
 * QEMU holds is busy to the tun driver); giving it a new owner needs
 * that, so a held tap refuses one (SPX_NO, EBUSY). The mark is in place
 * before the tap is up. */
struct spx_net_guard;
int spx_net_tap(const char *name, const char *bridge, uid_t uid,
		const struct spx_net_guard *g);

/* A guard on a tap (spx_net_tap, g not NULL): in the same chain, after
 * the mark, only frames from the guest's MAC pass, and of them only ARP
 * whose sender is that MAC and addr, and IPv4 from addr (or DHCP's
 * requests from 0.0.0.0); anything else (other MACs, other addresses,
 * IPv6, VLAN tags) is dropped before the bridge sees it. So a guest
 * cannot take another's address on the bridge, by ARP or by what it
 * sends. Without a guard the chain marks only. */
struct spx_net_guard {
	char mac[18];		/* "02:00:5e:10:00:01", unicast */
	uint32_t addr;		/* host byte order */
};
/* Parse mac ("xx:xx:xx:xx:xx:xx", hex digits of either case, unicast)
 * and addr (an IPv4 address, decimal octets without leading zeros) into
 * g. 0 or -1 (SPX_USAGE). */
int spx_net_guard_parse(const char *mac, const char *addr,
			struct spx_net_guard *g);
/* Remove the interface (a bridge's ports stay, without a master), and a
 * tap's mark. An interface that is not there: SPX_NO. */
int spx_net_remove(const char *name);

/* The marks of taps: SPX_NET_TAP_MARK and the tap's index in the low 24
 * bits. spx_net_mark_tap puts the name of the tap a mark names in name
 * (0), or -1 (SPX_NO) for a mark that names none. */
#define SPX_NET_TAP_MARK 0x5e000000u
#define SPX_NET_TAP_MARK_MASK 0xff000000u
uint32_t spx_net_tap_mark(int ifindex);
int spx_net_mark_tap(uint32_t mark, char name[SPX_NET_NAME_MAX + 1]);

/* The interfaces, as an array of objects: name, kind ("bridge", "tun",
 * "veth", "" unknown), master ("" for none), state ("up" or "down"),
 * mac, mtu, addresses (IPv4 "a.b.c.d/n"); for taps, owner (-1: none)
 * and mark (0: not marked).
 * In the kernel's order (by index). */
int spx_net_list(struct json_t **out);

#endif
