/* volume.h: EBS volumes as EC2 describes them, kept in the record store;
 * the node agent makes them real with spx-vol.
 *
 * Records, per account:
 *   volumes/<account>/<vol-id>
 * holding the Volume item EC2 describes (VolumeId, Size in GiB,
 * VolumeType, Iops, Throughput, AvailabilityZone, Encrypted, KmsKeyId,
 * MultiAttachEnabled, SnapshotId, State, CreateTime in seconds,
 * Attachments, Tags) plus members EC2 does not show, which
 * spx_ebs_item() removes:
 *   "SpxNode"          the node that holds the volume's blocks
 *   "SpxError"         why the agent could not do the last step ("" if
 *                      none), also in the agent's log
 *   "SpxModification"  the last ModifyVolume: a VolumeModification item
 *   "SpxData"          attached by AttachVolume (a data volume); a root
 *                      volume's attachment (instance.h) has none
 *   "SpxForce"         DetachVolume asked for Force
 *
 * States, as EC2's: CreateVolume records "creating" and wakes the agent,
 * which runs `spx-vol create --id ID --size NG` on SpxNode and then
 * marks the volume "available" (or "error" with SpxError). DeleteVolume
 * moves "available" or "error" to "deleting"; the agent runs `spx-vol rm`
 * and then removes the record, after which the volume is not found.
 * ModifyVolume records a modification "modifying"; the agent runs
 * `spx-vol resize` when the size grows and records "completed" with the
 * new Size, type, Iops and Throughput.
 *
 * Attachments: AttachVolume moves "available" to "in-use" with one
 * attachment {InstanceId, Device, State "attaching", AttachTime,
 * DeleteOnTermination false}; the agent hot-plugs the volume into the
 * running guest (spx-vm attach) and records "attached". A stopped
 * instance's volume is "attached" at once by the agent and plugged when
 * the instance starts (spx-vm start --disks); a pending one's waits for
 * its launch. DetachVolume moves the attachment to "detaching"; the agent
 * unplugs it (spx-vm detach, which needs the guest to let the disk go)
 * and records the volume "available" with no attachment. A volume whose
 * instance is terminated or gone is released the same way. The checks
 * of AttachVolume (device names in use, the instance's slots) are made
 * under the node's lock (env->lock), so that two attachments cannot
 * take one device name.
 *
 * Every transition is a compare-and-swap of the record (spx_state_update),
 * so the gateway and the agent never undo each other's change, and the
 * agent's steps are idempotent: after a crash it finds the record where it
 * was and runs the step again (spx-vol create on an existing volume of the
 * right size counts as done; rm of an absent one too).
 *
 * Capacity: CreateVolume refuses with InsufficientVolumeCapacity when the
 * volumes of the node (every account, every state but deleting) would
 * provision more than ebs.overcommit_percent of the volume store's file
 * system; the check and the new record are made under a lock of the node
 * (a flock on env->lock), so concurrent creates cannot both pass.
 * DeleteSnapshot takes the same lock, and CreateVolume looks at its
 * snapshot again under it: a volume is recorded before its snapshot is
 * marked for deletion, or not at all (InvalidSnapshot.NotFound).
 *
 * Functions record errors with spx_ec2_fault() in EC2's words and return
 * 0 or -1.
 */
#ifndef SPX_EC2_VOLUME_H
#define SPX_EC2_VOLUME_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct spx_state;

/* What CreateVolume (and ModifyVolume's capacity check) needs to know
 * of the node. */
struct spx_ebs_env {
	const char *node;	/* this node's name: the volume's SpxNode */
	const json_t *zones;	/* the region's zone names (strings) */
	const char *store;	/* the volume store's directory (capacity) */
	const char *lock;	/* the node's capacity lock file */
	int64_t overcommit;	/* percent of the store's size */
};

/* The limits of a volume type, as EBS documents them. */
struct spx_ebs_type {
	const char *name;		/* "gp3" */
	int64_t min_gib, max_gib;
	int64_t min_iops, max_iops;	/* 0, 0: Iops not settable */
	int64_t iops_per_gib;		/* the largest Iops:Size ratio */
	int64_t def_iops;		/* when not given; 0: required or none */
	int64_t min_tput, max_tput;	/* MiB/s; 0, 0: not settable */
	int64_t def_tput;
	bool multi_attach;
};
const struct spx_ebs_type *spx_ebs_type(const char *name);

/* The node's lock (a flock on path, made if missing): the open file to
 * close, or -1 with an InternalError fault. */
int spx_ebs_lock(const char *path);

/* CreateVolume: req is the parsed CreateVolumeRequest, tags the TagList
 * from its TagSpecifications. *out (a new reference) is the record. */
int spx_ebs_create(struct spx_state *st, const struct spx_ebs_env *env,
		   const char *account, const json_t *req, const json_t *tags,
		   time_t now, json_t **out);
/* "vol-" and 8 or 17 lowercase hex digits, the forms EC2 uses. */
bool spx_ebs_id_wellformed(const char *id);
/* The record of account's volume id (InvalidVolume.NotFound,
 * InvalidVolumeID.Malformed). *rev may be NULL. */
int spx_ebs_get(struct spx_state *st, const char *account, const char *id,
		json_t **out, uint64_t *rev);
/* Every volume record of account, sorted by VolumeId; a record that
 * cannot be read is left out (and logged), never a failed listing. */
int spx_ebs_list(struct spx_state *st, const char *account, json_t **out);
/* DeleteVolume: "available" or "error" -> "deleting" (VolumeInUse when
 * in use; IncorrectState while creating; a volume already deleting is
 * fine). */
int spx_ebs_delete(struct spx_state *st, const char *account,
		   const char *id);
/* ModifyVolume: req the parsed ModifyVolumeRequest; *out the
 * VolumeModification item (a new reference). A grow must fit as a
 * create of its growth would (env's store, lock and overcommit; the
 * volume's own node): else InsufficientVolumeCapacity, with nothing
 * changed. env's node and zones are not used. */
int spx_ebs_modify(struct spx_state *st, const struct spx_ebs_env *env,
		   const char *account, const json_t *req, time_t now,
		   json_t **out);
/* The data volumes an instance may have: spx-vm's hot-plug ports. */
#define SPX_EBS_DATA_MAX 8

/* AttachVolume: req the parsed AttachVolumeRequest (VolumeId,
 * InstanceId, Device); inst the instance's record. *out the
 * VolumeAttachment item EC2 answers (a new reference). */
int spx_ebs_attach(struct spx_state *st, const struct spx_ebs_env *env,
		   const char *account, const json_t *req, const json_t *inst,
		   time_t now, json_t **out);
/* DetachVolume: req the parsed DetachVolumeRequest (VolumeId, and
 * InstanceId, Device, Force). *out as AttachVolume's. */
int spx_ebs_detach(struct spx_state *st, const char *account,
		   const json_t *req, json_t **out);
/* The data volumes (AttachVolume's) attached or attaching to account's
 * instance inst, sorted: an array of VolumeId strings (a new reference),
 * or NULL with an error. */
json_t *spx_ebs_data_volumes(struct spx_state *st, const char *account,
			     const char *inst);
/* Their devices without "/dev/" ("sdf"), sorted: what the instance
 * metadata's block-device-mapping/ebsN show. A new reference, or NULL
 * with an error. */
json_t *spx_ebs_data_devices(struct spx_state *st, const char *account,
			     const char *inst);
/* Release every data volume of account attached to inst (terminated):
 * each becomes "available" with no attachment. */
int spx_ebs_release_data(struct spx_state *st, const char *account,
			 const char *inst);
/* "/dev/sd[b-z]", "/dev/xvd[b-z]" or "/dev/vd[b-z]": a device name
 * AttachVolume takes. */
bool spx_ebs_device_valid(const char *dev);

/* Tags (the restype row "volume"). */
int spx_ebs_set_tags(struct spx_state *st, const char *account,
		     const char *id, const json_t *set, const json_t *unset);

/* The Volume item of a record (a new reference). */
json_t *spx_ebs_item(const json_t *rec);
/* The volume's size in bytes for spx-vol. */
uint64_t spx_ebs_bytes(const json_t *rec);

/* ---- for the node agent ------------------------------------------- */

enum spx_ebs_step {
	SPX_EBS_CREATE,	/* "creating": run spx-vol create, or restore */
	SPX_EBS_DELETE,	/* "deleting": run spx-vol rm */
	SPX_EBS_RESIZE,	/* a modification "modifying": spx-vol resize */
	SPX_EBS_SNAP_TAKE,	/* a snapshot "pending": spx-vol snapshot */
	SPX_EBS_SNAP_COPY,	/* a copy "pending": spx-vol snapshot-copy */
	SPX_EBS_SNAP_DELETE,	/* SpxDeleting: spx-vol snapshot-rm */
	SPX_EBS_ATTACH,	/* an attachment "attaching": spx-vm attach */
	SPX_EBS_DETACH,	/* "detaching", or its instance gone: spx-vm
			   detach */
	SPX_EBS_GROW,	/* a modification "optimizing" (the volume grown,
			   and attached): spx-vm resize, when its
			   instance's guest runs */
};

struct spx_ebs_work {
	char account[16];
	char id[32];		/* the volume's, or the snapshot's */
	enum spx_ebs_step step;
	uint64_t bytes;	/* create, resize: the size wanted */
	/* create: the snapshot to restore ("": none); snapshot: its
	 * volume; copy: the snapshot copied */
	char src[32];
	/* attach, detach, grow: the instance, and (attach, detach) its
	 * state code (-1: no such instance), whether Force was asked for */
	char inst[32];
	int inst_code;
	bool force;
	/* snapshot: the set it is taken with (CreateSnapshots' SpxSet),
	 * "" for none; how many snapshots the set has, and when it was
	 * asked for (StartTime) */
	char set[32];
	unsigned set_size;
	int64_t set_time;
};

/* The steps waiting on node's volumes, across accounts; *out (free it)
 * holds *n. */
int spx_ebs_pending(struct spx_state *st, const char *node,
		    struct spx_ebs_work **out, size_t *n);
/* Record the end of a step: ok, or failed with why (logged by the
 * caller; kept in SpxError, and the volume moves to "error" for a failed
 * create, a modification to "failed"). A record that moved on meanwhile
 * is left alone. */
int spx_ebs_done(struct spx_state *st, const struct spx_ebs_work *w, bool ok,
		 const char *why, time_t now);

#endif
