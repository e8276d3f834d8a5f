/* runas.h: each guest's QEMU as a user of its own.
 *
 * When spx-vm runs as root, every running guest of the node gets a
 * numeric uid, and the gid of the same number, from a reserved range
 * (base .. base + SPX_VM_USERS - 1; base is nodes.*.vm.uid_base in
 * spinifex.toml(5)), as Xen gives each domain's QEMU a user of its own.
 * No passwd entry is needed: QEMU drops to it (-runas UID:GID) once its
 * devices are set up, so that a guest that takes its QEMU over holds a
 * process that can read neither the host's files nor another guest's.
 *
 * The slot is the lowest one no other guest of the node holds, chosen
 * under RUN/vm/.users.lock, and kept in the guest's directory as
 * DIR/user ("UID\n"): a guest keeps its user across restarts of spx-vm,
 * the agent and the node's services. A guest holds its slot while its
 * QEMU runs or its lock is held (a start or stop under way); a record
 * left by a QEMU that is gone is released (spx_vm_user_release) before
 * its slot is given again.
 *
 * What the user may reach after the drop, and nothing more of the node:
 *   DIR             root:UID 0710 (searched, never listed or written)
 *   DIR/metadata.json, DIR/imds.key
 *                   UID:UID 0400 (read by `spx-vm imds`, QEMU's child)
 *   DIR/imds-slot-N UID:UID 0600 (its connection slots, locked)
 *   RUN, RUN/vm     0711 (searched only)
 *   RUN/vol.sock    0666, but the volume server opens the user only the
 *                   volumes granted to it (lib/vol/grant.h)
 * QEMU's QMP socket, pid file and console are made as root before the
 * drop and stay root's. */
#ifndef SPX_VM_RUNAS_H
#define SPX_VM_RUNAS_H

#include "spx.h"

#define SPX_VM_USERS 65536u
/* Where the guests of all nodes of the host claim their uids (runas.c):
 * two nodes may share a base and still never give one uid to two
 * guests. */
#define SPX_VM_HOST_USERS "/run/spx-vm-users"

/* Guest dir's recorded user: 1 with *uid, 0 when it has none, -1 with
 * an error (a malformed record is SPX_USAGE). */
int spx_vm_user_read(const char *dir, uint32_t *uid);

/* Become uid (and its gid, with no supplementary groups) for good: what a
 * child of root does before it runs as a guest's user. 0, or -1 with
 * errno set (nothing is recorded: it is for a child about to exit). */
int spx_vm_user_become(uint32_t uid);

/* The user of guest name (RUN/vm/name, whose lock the caller holds):
 * its recorded one, else the lowest free slot above base, recorded.
 * Grants to that uid left in grants (the NBD socket's grants directory)
 * go first. SPX_FAIL when every slot is held. */
int spx_vm_user_take(const char *vms, const char *name, uint32_t base,
		     const char *grants, uint32_t *uid);

/* Make dir ready for a QEMU running as uid (the modes above); each of
 * metadata.json and imds.key only when present. */
int spx_vm_user_prepare(const char *dir, uint32_t uid);

/* Give dir's user up (its QEMU is gone): dir and its files back to
 * root, dir 0700, the grants to it or to this guest (by DIR/spec.json's
 * socket and name) removed, then DIR/user. No record: nothing to do. */
int spx_vm_user_release(const char *dir);

/* Let others search path (add 0111): RUN and RUN/vm. The directories
 * above it must let them already (SPX_FAIL if not: they are the host's
 * to set). */
int spx_vm_user_searchable(const char *path);

#endif
