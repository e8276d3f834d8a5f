/* grant.h: which guest user may open which volume over the node's NBD
 * socket.
 *
 * When spx-vm runs as root, each guest's QEMU runs as a user of its own
 * (lib/vm/runas.h) and connects to the volume server after dropping
 * privileges: on a reconnect and on every hot-plug. The server's socket
 * is therefore connectable by those users, and the plugin
 * (lib/vol/nbdkit/spxvol.c) decides per export, from the peer's uid
 * (SO_PEERCRED, nbdkit_peer_uid):
 *   root and the server's own uid open any volume;
 *   any other uid opens volume ID only while SOCK.grants/ID names it.
 *
 * SOCK.grants is a directory beside the socket (spx_vol_grants_dir),
 * made and written by root only (0700); a grant is one small file per
 * volume, "UID GUEST\n" (GUEST: the spx-vm guest it was written for),
 * replaced crash-safely. spx-vm writes it before QEMU opens the volume
 * (start, attach) and removes it when the disk goes (detach) or the
 * guest's QEMU does (stop, kill, or the uid given to another guest).
 * The plugin reads it afresh on each open, and watches the directory: a
 * grant removed or rewritten for another uid refuses the next
 * connection and cuts off those it let in (each of their requests then
 * fails with EPERM). */
#ifndef SPX_VOL_GRANT_H
#define SPX_VOL_GRANT_H

#include "spx.h"

/* A grant file is at most this long. */
#define SPX_VOL_GRANT_MAX 96
#define SPX_VOL_GRANT_GUEST_MAX 63

struct spx_vol_grant {
	uint32_t uid;				    /* never 0 */
	char guest[SPX_VOL_GRANT_GUEST_MAX + 1];    /* [a-z0-9-] */
};

/* The grants directory of NBD socket sock (caller frees). */
char *spx_vol_grants_dir(const char *sock);

/* Parse a grant file's n bytes: "UID GUEST\n", UID decimal 1..2^32-2
 * without leading zeros, GUEST [a-z0-9][a-z0-9-]{0,62}. -1 with
 * SPX_USAGE on anything else. */
int spx_vol_grant_parse(const char *buf, size_t n, struct spx_vol_grant *g);

/* Read volume vol's grant in dir: 1 with *g, 0 when there is none, -1
 * with an error (a malformed file is SPX_USAGE). */
int spx_vol_grant_read(const char *dir, const char *vol,
		       struct spx_vol_grant *g);
/* Grant vol to g (making dir, 0700, when absent), replacing any grant. */
int spx_vol_grant_write(const char *dir, const char *vol,
			const struct spx_vol_grant *g);
/* Remove vol's grant if it is guest's (guest NULL: whoever's). */
int spx_vol_grant_drop(const char *dir, const char *vol, const char *guest);
/* Remove every grant to uid, and every grant written for guest (either
 * may be 0 / NULL). A missing dir holds none. */
int spx_vol_grant_purge(const char *dir, uint32_t uid, const char *guest);

#endif
