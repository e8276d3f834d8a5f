/* The verbs of spx-vm and what they share. */
#ifndef SPX_VMCLI_H
#define SPX_VMCLI_H

#include "cmd.h"

struct spx_vm_spec;

struct vmcli {
	char *run;  /* the node's run directory */
	char *vms;  /* RUN/vm: one directory a guest */
	uint32_t uid_base; /* the guests' users (nodes.*.vm.uid_base) */
};

/* Find the node (--root, $SPX_ROOT, the system layout); on failure print
 * why and return the exit status. */
int vmcli_open(const struct spx_args *a, struct vmcli *c);
void vmcli_close(struct vmcli *c);
/* The directory of guest name (caller frees), or NULL after printing
 * why (a name that is not spx_vm_name_valid). */
char *vmcli_dir(const struct spx_args *a, const struct vmcli *c,
		const char *name);
/* Read dir/spec.json. */
int vmcli_spec(const char *dir, struct spx_vm_spec *s);
/* Take the guest's lock (dir/lock): start, stop, reboot, attach and
 * detach hold it, so that two of them never act on one guest at once
 * (two starts would run two QEMUs on one volume); kill does not wait
 * for it. The descriptor, or -1 with an error (SPX_NO: no such guest, or
 * still held after minutes). */
int vmcli_lock(const char *dir);
/* One guest a verb works on: a->argv[0] looked up, and as the flags ask,
 * its lock taken (GUEST_LOCK), QEMU required to run (GUEST_RUNNING: "not
 * running" is SPX_NO), a QMP connection made (GUEST_QMP, implies
 * GUEST_RUNNING). guest_open prints what failed and returns the exit
 * status (0 when all is there); guest_close undoes what was done. */
enum {
	GUEST_LOCK = 1,
	GUEST_RUNNING = 2,
	GUEST_QMP = 4 | GUEST_RUNNING,
};
struct spx_qmp;
struct guest {
	struct vmcli c;
	const char *name;
	char *dir;
	int lock;	    /* -1 when not taken */
	struct spx_qmp *q;  /* NULL when not connected */
};
int guest_open(const struct spx_args *a, int flags, struct guest *g);
void guest_close(struct guest *g);

/* Plug volume vol into the guest on q from the NBD socket sock (attach,
 * and start's --disks); *already when it was plugged before. */
int vm_plug(struct spx_qmp *q, const char *sock, const char *vol,
	    bool *already);

/* The accelerator `--accel auto` means: KVM when a probe (probe.c) has
 * booted a guest under it with this QEMU, else TCG; the probe runs when
 * no answer is kept for this QEMU. */
enum spx_vm_accel;
int vm_accel_auto(const struct vmcli *c, enum spx_vm_accel *accel);

/* Print "spx-vm: VERB: message" and return the recorded exit status. */
int vmcli_fail(const struct spx_args *a);

int cmd_start(const struct spx_args *a);
int cmd_stop(const struct spx_args *a);
int cmd_kill(const struct spx_args *a);
int cmd_reboot(const struct spx_args *a);
int cmd_ls(const struct spx_args *a);
int cmd_info(const struct spx_args *a);
int cmd_console(const struct spx_args *a);
int cmd_qmp(const struct spx_args *a);
int cmd_imds(const struct spx_args *a);
int cmd_imds_server(const struct spx_args *a);
int cmd_attach(const struct spx_args *a);
int cmd_detach(const struct spx_args *a);
int cmd_resize(const struct spx_args *a);
int cmd_probe(const struct spx_args *a);

#endif
