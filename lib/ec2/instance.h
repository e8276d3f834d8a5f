/* instance.h: EC2 instances as EC2 describes them, kept in the record
 * store; the node agent makes them real with spx-vm (and their root
 * volumes with spx-vol, through the EBS records of volume.h).
 *
 * Records, per account:
 *   instances/<account>/<i-id>
 * holding the Instance item EC2 describes (InstanceId, ImageId,
 * InstanceType, State {Code, Name}, StateReason, StateTransitionReason,
 * KeyName, LaunchTime, Placement, PrivateIpAddress, PrivateDnsName,
 * Architecture, RootDeviceName, RootDeviceType, BlockDeviceMappings,
 * MetadataOptions, Monitoring, Tags, AmiLaunchIndex, ClientToken,
 * EbsOptimized, Hypervisor, VirtualizationType, CpuOptions, BootMode,
 * ...) plus members EC2 does not show, which spx_inst_item() removes:
 *   "SpxNode"            the node that runs the guest
 *   "SpxAccount"         the owning account (the agent works across
 *                        accounts)
 *   "SpxReservationId"   "r-...", shared by the instances of one launch
 *   "SpxDesired"         "running", "stopped" or "terminated"
 *   "SpxUserData"        the user data as given (base64), or absent
 *   "SpxPublicKey"       KeyName's OpenSSH public key at launch (EC2 keeps
 *                        it on the instance when the key pair goes)
 *   "SpxMemMiB", "SpxCpus"  the guest's memory and vCPUs, from its type
 *   "SpxRoot"            the root volume: {VolumeId, DeleteOnTermination}
 *   "SpxSshPort"         the host's loopback port forwarded to the
 *                        guest's port 22 (0 before the first start, and
 *                        on a bridge)
 *   "SpxNetwork"         "bridge": the guest is on a tap of the node's
 *                        bridge (spx_inst_tap), PrivateIpAddress its own;
 *                        absent: QEMU's user network
 *   "SpxDisableApiTermination"  DescribeInstanceAttribute's
 *   "SpxSecurityGroupIds", "SpxSubnetId"  recorded until VPCs exist
 *   "SpxForce"           StopInstances asked for Force (while stopping)
 *   "SpxReboot", "SpxRebooted"  reboots asked for and carried out
 *   "SpxTerminatedAt"    when it became terminated (seconds)
 *   "SpxMetadataRev"     ModifyInstanceMetadataOptions' changes, counted
 *                        (the agent applies the latest to a running
 *                        guest)
 *   "SpxError"           why the agent's last step failed ("" if none),
 *                        e.g. a root volume that could not be deleted
 *                        (the volume's own SpxError, copied once)
 *
 * States, as EC2's: RunInstances records "pending" (0) with the root
 * volume recorded "creating" (restored by the agent from the image's
 * snapshot, as CreateVolume with a SnapshotId is) and attached; once the
 * volume exists the agent writes the guest's metadata and runs
 * `spx-vm start`, then records "running" (16). TerminateInstances moves
 * an instance to "shutting-down" (32); the agent runs `spx-vm stop` and
 * records "terminated" (48), the root volume detached and, when its
 * DeleteOnTermination is true, "deleting". StopInstances: "stopping"
 * (64), then "stopped" (80); StartInstances: "stopped" -> "pending". A
 * guest whose QEMU is gone while the record says "running" becomes
 * "stopped" with StateReason Client.InstanceInitiatedShutdown (the guest
 * powered off) or Server.InternalError (anything else). Terminated
 * instances stay visible for SPX_INST_TERMINATED_KEEP seconds, then the
 * agent removes the record.
 *
 * Admission: the memory of the node's instances that are pending,
 * running, stopping or shutting-down (their QEMU holds, or will hold,
 * it) plus the new ones must fit in the memory instances may use on the
 * node (spx_inst_host_mem_mib): RunInstances launches as many as fit up
 * to MaxCount, and refuses with InsufficientInstanceCapacity, recording
 * nothing, when fewer than MinCount fit. The check and the new records
 * are made under a flock of the node (env->lock), so that concurrent
 * launches cannot both take the last memory; StartInstances checks the
 * same way. A launch into a placement group (pgroup.h) checks the group
 * under the same lock: Placement.GroupName or GroupId names one of the
 * account's groups (InvalidPlacementGroup.Unknown), a spread group holds
 * one member on this node (InsufficientInstanceCapacity beyond it,
 * nothing recorded), and the instance's Placement shows GroupName,
 * GroupId (and PartitionNumber in a partition group).
 *
 * Functions record errors with spx_ec2_fault() in EC2's words and return
 * 0 or -1.
 */
#ifndef SPX_EC2_INSTANCE_H
#define SPX_EC2_INSTANCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct spx_state;
struct spx_ebs_env;

#define SPX_INST_TERMINATED_KEEP 3600
/* The guest's address on QEMU's user network (spx-vm(8)) until VPCs. */
#define SPX_INST_PRIVATE_IP "169.254.169.15"
/* The type RunInstances launches when given none (EC2's m1.small is not
 * in the catalogue). */
#define SPX_INST_DEFAULT_TYPE "t3.micro"
/* The host keeps this much memory for itself and its services, at least:
 * max(SPX_INST_RESERVE_MIB, MemTotal / 10). */
#define SPX_INST_RESERVE_MIB 1024

/* EC2's state codes. */
enum {
	SPX_INST_PENDING = 0,
	SPX_INST_RUNNING = 16,
	SPX_INST_SHUTTING_DOWN = 32,
	SPX_INST_TERMINATED = 48,
	SPX_INST_STOPPING = 64,
	SPX_INST_STOPPED = 80,
};

/* What RunInstances needs to know of the node. */
struct spx_inst_env {
	const char *node;		/* this node: the instances' SpxNode */
	const char *zone;		/* this node's availability zone */
	const char *region;
	const char *lock;		/* the node's instance lock file */
	uint64_t mem_mib;		/* memory instances may use here */
	const struct spx_ebs_env *ebs;	/* for the root volumes */
	/* vm.address when the instances are on a bridge (vm.network
	 * "bridge"): each new one takes the lowest address of its network
	 * that no instance here holds (one not terminated), but the
	 * bridge's own and, as a VPC subnet's, the first four and the last
	 * (InsufficientFreeAddressesInSubnet when none is left), and keeps
	 * it while it lives; NULL: QEMU's user network, SPX_INST_PRIVATE_IP
	 * for all. */
	const char *bridge_address;
};

/* MemTotal (/proc/meminfo) less what the host keeps (see above), MiB;
 * 0 when it cannot be read (an error recorded). */
uint64_t spx_inst_host_mem_mib(void);

/* RunInstances: req is the parsed RunInstancesRequest. *out (a new
 * reference) is the Reservation item EC2 answers. */
int spx_inst_run(struct spx_state *st, const struct spx_inst_env *env,
		 const char *account, const json_t *req, time_t now,
		 json_t **out);
/* "i-" and 8 or 17 lowercase hex digits. */
bool spx_inst_id_wellformed(const char *id);
/* The record of account's instance id (InvalidInstanceID.NotFound,
 * .Malformed). */
int spx_inst_get(struct spx_state *st, const char *account, const char *id,
		 json_t **out);
/* Every instance record of account (NULL: every account), sorted by
 * InstanceId; terminated ones past SPX_INST_TERMINATED_KEEP are left
 * out. */
int spx_inst_list(struct spx_state *st, const char *account, time_t now,
		  json_t **out);
/* The records of account's instances that ids names, as spx_inst_list
 * would give them (each once, sorted by InstanceId, expired ones left
 * out), reading only those: each id is checked in turn, and a malformed
 * or unknown one fails the call as spx_inst_get does. */
int spx_inst_list_ids(struct spx_state *st, const char *account,
		      const json_t *ids, time_t now, json_t **out);
/* TerminateInstances: ids an array of instance ids, each checked before
 * any changes (NotFound, Malformed, OperationNotPermitted for
 * DisableApiTermination), and DisableApiTermination again as each is
 * changed, so that protection set meanwhile holds (then the ids before
 * it are terminated and the call fails). *out: InstanceStateChange items
 * {InstanceId, PreviousState, CurrentState}. Terminating a terminated or
 * shutting-down instance changes nothing and answers its state. */
/* Defined only by a test, to act between the checks and the changes. */
void spx_inst_terminate_window(const char *id) __attribute__((weak));
int spx_inst_terminate(struct spx_state *st, const char *account,
		       const json_t *ids, time_t now, json_t **out);
/* StopInstances: pending or running -> stopping (force: spx-vm stop
 * --force); stopping and stopped stay; any other is
 * IncorrectInstanceState, every id checked before any changes. *out:
 * InstanceStateChange items. */
int spx_inst_stop(struct spx_state *st, const char *account,
		  const json_t *ids, bool force, time_t now, json_t **out);
/* StartInstances: stopped -> pending, when the memory of those to start
 * fits (InsufficientInstanceCapacity); pending and running stay; any
 * other is IncorrectInstanceState. */
int spx_inst_start(struct spx_state *st, const struct spx_inst_env *env,
		   const char *account, const json_t *ids, time_t now,
		   json_t **out);
/* The root volume of a stopped instance, as EC2 lets it be detached
 * (to mend it from another instance) and attached again at the root
 * device. spx_inst_root_detach: if vol is id's root volume, the record
 * no longer names it (IncorrectState unless stopped); 1 when it did not.
 * spx_inst_root_attach: vol becomes the root volume of id, which must be
 * stopped (IncorrectInstanceState) and have none
 * (InvalidParameterValue); 1 when it is already. The volume's own record
 * is volume.c's business: spx_ebs_attach and spx_ebs_detach call these
 * in the order that a crash between the two leaves no instance naming a
 * volume that is not attached to it. A stopped instance without a root
 * volume is not started (IncorrectInstanceState). */
int spx_inst_root_detach(struct spx_state *st, const char *account,
			 const char *id, const char *vol);
int spx_inst_root_attach(struct spx_state *st, const char *account,
			 const char *id, const char *vol, time_t now);
/* RebootInstances: a reboot of each running instance is recorded
 * (SpxReboot counts them; the agent carries one out with spx-vm reboot,
 * a reset, and records SpxRebooted); a pending one is left alone; any
 * other is IncorrectInstanceState, every id checked first. */
int spx_inst_reboot(struct spx_state *st, const char *account,
		    const json_t *ids);
/* ModifyInstanceAttribute (req the parsed request): disableApiTermination
 * at any time; instanceType (from the catalogue) and userData (base64,
 * 16 KiB) while stopped, else IncorrectInstanceState; one attribute a
 * request; any other is Unsupported. */
int spx_inst_modify(struct spx_state *st, const char *account,
		    const json_t *req);
/* ModifyInstanceMetadataOptions (req the parsed request): HttpTokens,
 * HttpPutResponseHopLimit (1 to 64), HttpEndpoint change the record's
 * MetadataOptions, whose State becomes "pending" (SpxMetadataRev counts
 * the changes); the agent writes them into a running guest's metadata
 * and records "applied" (a stopped one gets them when it starts).
 * HttpProtocolIpv6 and InstanceMetadataTags stay "disabled" (Unsupported
 * otherwise). Shutting-down and terminated instances are
 * IncorrectInstanceState. *out: the MetadataOptions now (a new
 * reference). */
int spx_inst_modify_mdopts(struct spx_state *st, const char *account,
			   const json_t *req, json_t **out);
/* The members of account's placement group gid: its instances that are
 * not shutting-down or terminated (pgroup.h). */
int spx_inst_pg_members(struct spx_state *st, const char *account,
			const char *gid, int64_t *n);
/* Tags (the restype row "instance"). */
int spx_inst_set_tags(struct spx_state *st, const char *account,
		      const char *id, const json_t *set, const json_t *unset);
/* The Instance item of a record (a new reference). */
json_t *spx_inst_item(const json_t *rec);
/* The metadata.json (lib/vm/imds.h) of a record: what the guest reads at
 * 169.254.169.254. */
json_t *spx_inst_metadata(const json_t *rec, const char *region);
/* The MAC address of instance id's network interface: locally
 * administered and unicast ("02:" and five bytes of the id's SHA-256),
 * so it stays through stops and starts, as an interface's does. The
 * agent gives it to spx-vm start; the metadata serves it (mac, and
 * network/interfaces/macs/MAC/, where cloud-init finds its interface). */
#define SPX_INST_MAC_SIZE 18
void spx_inst_mac(const char *id, char out[SPX_INST_MAC_SIZE]);
/* Set md's block-device-mapping/ebs1..ebsN to devs, an array of device
 * names ("sdf", from spx_ebs_data_devices). As EC2 has it, the data
 * volumes shown are those attached when the instance last started: a
 * volume attached later shows from its next start. */
void spx_inst_metadata_ebs(json_t *md, const json_t *devs);
/* The state name of a code ("running"), or NULL. */
const char *spx_inst_state_name(int code);

/* ---- for the node agent ------------------------------------------- */

enum spx_inst_step {
	SPX_INST_LAUNCH,	/* pending, root volume there: spx-vm start */
	SPX_INST_FAIL,		/* pending, root volume in error: terminated */
	SPX_INST_WATCH,		/* running: is its QEMU still there? */
	SPX_INST_SHUTDOWN,	/* shutting-down: spx-vm stop, terminated */
	SPX_INST_STOP,		/* stopping: spx-vm stop, stopped */
	SPX_INST_EXPIRE,	/* terminated long enough: the record goes */
	SPX_INST_REPORT,	/* terminated, its root volume cannot be
				   deleted: why goes into SpxError */
	SPX_INST_REBOOT,	/* running, a reboot asked for: spx-vm
				   reboot (else as WATCH) */
	SPX_INST_METADATA,	/* running, its MetadataOptions changed
				   (State pending): the guest's
				   metadata.json rewritten (else as WATCH) */
};

struct spx_inst_work {
	char account[16];
	char id[32];
	enum spx_inst_step step;
	char vol[32];		/* the root volume */
	int64_t mem_mib;
	int cpus;
	int port;		/* SpxSshPort */
	bool bridge;		/* SpxNetwork "bridge": on a tap */
	char ip[16];		/* its PrivateIpAddress, when on a tap */
	bool force;		/* stop: StopInstances Force */
	bool uefi;		/* BootMode "uefi" (the image's): OVMF */
	int64_t reboot;		/* reboot: the SpxReboot it carries out */
	int64_t mdrev;		/* SpxMetadataRev when the step was read */
	char why[512];		/* FAIL, REPORT: the volume's error */
};

/* The name of instance id's tap: "i-" and the first 13 digits of its
 * id (an interface name has 15 characters at most). */
#define SPX_INST_TAP_SIZE 16
void spx_inst_tap(const char *id, char out[SPX_INST_TAP_SIZE]);

/* The steps node's instances wait on, across accounts; *out (free it)
 * holds *n. */
int spx_inst_pending(struct spx_state *st, const char *node, time_t now,
		     struct spx_inst_work **out, size_t *n);
/* Record the SSH port chosen for a launch (before spx-vm start runs). */
int spx_inst_set_port(struct spx_state *st, const struct spx_inst_work *w,
		      int port);
/* The launch worked: pending -> running. */
int spx_inst_launched(struct spx_state *st, const struct spx_inst_work *w,
		      time_t now);
/* The launch failed for good (why): terminated with StateReason
 * Server.InternalError; the root volume detached and deleted when
 * DeleteOnTermination. */
int spx_inst_launch_failed(struct spx_state *st,
			   const struct spx_inst_work *w, const char *why,
			   time_t now);
/* A running guest's QEMU is gone: stopped with StateReason code (one of
 * EC2's, "Client.InstanceInitiatedShutdown", "Server.InternalError"). */
int spx_inst_died(struct spx_state *st, const struct spx_inst_work *w,
		  const char *code, time_t now);
/* The guest was stopped (spx-vm stop): shutting-down -> terminated (the
 * root volume detached, and deleted when DeleteOnTermination; a failure
 * to do so is kept in SpxError), stopping -> stopped. */
int spx_inst_halted(struct spx_state *st, const struct spx_inst_work *w,
		    time_t now);
/* The metadata of w's options (w->mdrev) is in the running guest's
 * metadata.json: MetadataOptions State "applied", unless they changed
 * again meanwhile. */
int spx_inst_metadata_applied(struct spx_state *st,
			      const struct spx_inst_work *w);
/* The reboot w carries (w->reboot) is done. */
int spx_inst_rebooted(struct spx_state *st, const struct spx_inst_work *w);
/* Remove a terminated instance's record. */
int spx_inst_expire(struct spx_state *st, const struct spx_inst_work *w);
/* Record why a step failed (SpxError) without changing the state. */
int spx_inst_note(struct spx_state *st, const struct spx_inst_work *w,
		  const char *why);

#endif
