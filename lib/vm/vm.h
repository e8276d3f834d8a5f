/* vm.h: a guest's directory, its QEMU command line and its process.
 *
 * Each guest has a directory RUN/vm/NAME (0700; 0710 to its QEMU's group
 * while that runs as a user of its own, runas.h) holding
 *   spec.json    what it was started with (struct spx_vm_spec)
 *   qmp.sock     QEMU's QMP socket (qmp.h)
 *   qemu.pid     QEMU's pid, written by QEMU itself (-pidfile)
 *   console.log  the serial console (appended; see spx_vm_console_trim)
 *   user         the uid its QEMU runs as, when spx-vm runs as root
 * QEMU runs daemonized in its own session, so a guest outlives every spx
 * tool, the agent and the gateway; whoever looks later finds it again by
 * its pid file, checked against /proc so that a recycled pid is never
 * taken for it. */
#ifndef SPX_VM_VM_H
#define SPX_VM_VM_H

#include "spx.h"

struct json_t;

#define SPX_VM_NAME_MAX 63
/* The serial console log is cut back to its last SPX_VM_CONSOLE_KEEP
 * bytes once it passes SPX_VM_CONSOLE_MAX. */
#define SPX_VM_CONSOLE_MAX (4u << 20)
#define SPX_VM_CONSOLE_KEEP (1u << 20)

enum spx_vm_accel {
	SPX_VM_TCG,
	SPX_VM_KVM,
};

struct spx_vm_spec {
	char name[SPX_VM_NAME_MAX + 1]; /* an instance id, or any spx_vm_name_valid */
	unsigned mem_mib;		/* SPX_VM_MEM_MIN.. */
	unsigned cpus;			/* 1..SPX_VM_CPUS_MAX */
	enum spx_vm_accel accel;
	char *nbd_socket; /* the node's volume server (spx-vol serve) */
	char *root;	  /* the root volume: an export of nbd_socket */
	unsigned ssh_port; /* 127.0.0.1:ssh_port reaches the guest's port 22 */
	bool imds;	   /* 169.254.169.254:80 reaches `spx-vm imds DIR`,
			    * serving DIR/metadata.json (imds.h) */
	char uuid[37];	   /* SMBIOS system uuid, "ec2" first (cloud-init's
			    * EC2 datasource looks for that) */
	char mac[18];	   /* the network interface's, "xx:..:xx" in lower
			    * case, unicast; "": QEMU's default */
	bool uefi;	   /* firmware: OVMF (UEFI) with DIR/uefi-vars.fd as
			    * its variable store, instead of SeaBIOS */
	bool paused;	   /* -S: the CPUs wait for QMP's "cont" (disks are
			    * plugged first, so the firmware finds them);
			    * not kept in spec.json */
	char tap[16];	   /* "": user networking (ssh_port; imds by
			    * guestfwd); else the persistent tap (spx-net
			    * tap) the NIC is on (imds by spx-vm imds-server) */
	bool vhost;	   /* with a tap: vhost-net moves its packets */
	uint32_t runas;	   /* QEMU drops to this uid and gid once set up
			    * (-runas; runas.h); 0: stays who started it.
			    * Not kept in spec.json (DIR/user is) */
};
/* OVMF's code (read-only, shared) and the template of a guest's own
 * variable store: $SPX_OVMF_CODE and $SPX_OVMF_VARS, else Debian's ovmf
 * package's 4 MiB builds (no Secure Boot, so no SMM needed). */
#define SPX_VM_OVMF_CODE "/usr/share/OVMF/OVMF_CODE_4M.fd"
#define SPX_VM_OVMF_VARS "/usr/share/OVMF/OVMF_VARS_4M.fd"
const char *spx_vm_ovmf_code(void);
const char *spx_vm_ovmf_vars(void);
/* How long a guest's disk I/O waits for the volume server to come back
 * (spx-vol serve restarting) before it fails. */
#define SPX_VM_NBD_RECONNECT_S 60
#define SPX_VM_MEM_MIN 64u
#define SPX_VM_MEM_MAX (4u << 20) /* 4 TiB */
#define SPX_VM_CPUS_MAX 256u

/* [a-z0-9] then up to 62 of [a-z0-9-]: safe as a directory name and in
 * QEMU's option syntax (no ',' or '='). */
bool spx_vm_name_valid(const char *name);
/* A unicast MAC address as spx writes them: six pairs of [0-9a-f] with
 * ':' between, the first octet even. */
bool spx_vm_mac_valid(const char *mac);

/* spec <-> spec.json. From JSON every field is checked (the file is
 * input like any other); -1 with SPX_USAGE on a bad one. The spec owns
 * its strings: spx_vm_spec_release frees them. */
struct json_t *spx_vm_spec_json(const struct spx_vm_spec *s);
int spx_vm_spec_parse(const char *text, size_t len, struct spx_vm_spec *s);
void spx_vm_spec_release(struct spx_vm_spec *s);

/* QEMU's argv for spec s in directory dir (NULL-terminated; free with
 * spx_vm_argv_free). The QEMU binary is $SPX_QEMU or
 * qemu-system-x86_64. prog is spx-vm's absolute path, which QEMU runs
 * for each metadata connection when s->imds; NULL with an error
 * (SPX_USAGE) when prog or dir cannot be put on its command line. */
char **spx_vm_qemu_argv(const struct spx_vm_spec *s, const char *dir,
			const char *prog);
void spx_vm_argv_free(char **argv);

/* Hot-plug slots (PCIe root ports hp0..) each guest has for volumes. */
#define SPX_VM_HOTPLUG_SLOTS 8
/* A disk's serial number: its volume id without the '-' ("vol0a1b...",
 * 20 characters, virtio-blk's limit), as EC2 shows an EBS volume's id in
 * its NVMe serial. */
#define SPX_VM_SERIAL_SIZE 21
void spx_vm_serial(const char *vol, char out[SPX_VM_SERIAL_SIZE]);
/* A disk is two block nodes: a raw node that the device drives ("root",
 * or d-VOL for a hot-plugged one) over an NBD node n0-VOL or n1-VOL. To
 * grow a disk live (spx-vm resize), a second NBD node, whose fresh
 * connection sees the volume's new size, takes the first one's place
 * under the raw node (QEMU's NBD driver keeps the size it connected
 * with, and the device has no other way to a new node).
 *
 * The -blockdev / blockdev-add arguments of the NBD node node for volume
 * vol on the socket sock, and of the raw node node over file. */
struct json_t *spx_vm_nbd_node(const char *node, const char *sock,
			       const char *vol);
struct json_t *spx_vm_raw_node(const char *node, const char *file);
/* The name of NBD node gen (0 or 1) of volume vol. */
#define SPX_VM_NODE_SIZE (SPX_VM_NAME_MAX + 4)
void spx_vm_nbd_name(const char *vol, unsigned gen,
		     char out[SPX_VM_NODE_SIZE]);

/* The pid of the QEMU running for dir, or 0 when there is none (no pid
 * file, a dead pid, or a pid now used by another program). */
pid_t spx_vm_pid(const char *dir);

/* The guest's run state as its QEMU tells it over QMP (query-status:
 * "running", "paused", "shutdown" once the guest powered itself off, as
 * QEMU runs with -no-shutdown, ...) into out, all within timeout_ms;
 * -1 (SPX_FAIL) when QEMU does not answer in time, or answers nonsense. */
#define SPX_VM_STATUS_SIZE 32
int spx_vm_status(const char *dir, int timeout_ms,
		  char out[SPX_VM_STATUS_SIZE]);
/* The same over a QMP connection open already (QEMU serves one at a
 * time: a second would wait for the first to close). */
struct spx_qmp;
int spx_vm_status_of(struct spx_qmp *q, int timeout_ms,
		     char out[SPX_VM_STATUS_SIZE]);

/* Cut console.log in dir back to its last SPX_VM_CONSOLE_KEEP bytes when
 * it has grown past SPX_VM_CONSOLE_MAX (QEMU appends, so it goes on at
 * the new end); the cut-off part goes to console.log.1. */
int spx_vm_console_trim(const char *dir);

#endif
