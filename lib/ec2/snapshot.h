/* snapshot.h: EBS snapshots as EC2 describes them, kept in the record
 * store; the node agent makes them with spx-vol (lib/vol/snap.h holds
 * the bytes: chunks and a manifest in the node's object store).
 *
 * Records, per owning account:
 *   snapshots/<account>/<snap-id>
 * holding the Snapshot item EC2 describes (SnapshotId, VolumeId,
 * VolumeSize in GiB, State, StateMessage, Progress "N%", StartTime in
 * seconds, OwnerId, Description, Encrypted, KmsKeyId, StorageTier, Tags)
 * plus members EC2 does not show, which spx_ebs_snap_item() removes:
 *   "SpxNode"         the node whose object store holds it
 *   "SpxSource"       CopySnapshot: the snapshot copied
 *   "SpxPermissions"  createVolumePermission: [{"UserId": ...} or
 *                     {"Group": "all"}]
 *   "SpxDeleting"     DeleteSnapshot was called: the snapshot is gone for
 *                     every caller; the agent removes the manifest, then
 *                     the record
 *   "SpxError"        why the agent's last try failed ("" if none)
 *   "SpxSet"          CreateSnapshots: the first snapshot id of the set
 *                     taken with this one at one moment
 *
 * States, as EC2's: CreateSnapshot and CopySnapshot record "pending" with
 * Progress "0%" and wake the agent, which runs `spx-vol snapshot --id
 * SNAP VOL` (or `spx-vol snapshot-copy --id SNAP SRC`), records Progress
 * as the tool reports it, then "completed" and "100%". A step that fails
 * for a reason that may pass (the object store unreachable) is tried
 * again, later and later; one that cannot succeed (the volume is gone)
 * ends in "error" with StateMessage. A snapshot is of its volume when the
 * agent starts the step (within a second of CreateSnapshot unless the
 * agent is busy or down); after a crash the step runs again and takes
 * the volume as it is then.
 *
 * Who sees a snapshot: its owner, and accounts its createVolumePermission
 * names (or everyone, for the group "all"): they can describe it, and
 * create volumes and copies from it. Only the owner changes or deletes
 * it. To any other account it does not exist (InvalidSnapshot.NotFound).
 *
 * Functions record errors with spx_ec2_fault() and return 0 or -1. */
#ifndef SPX_EC2_SNAPSHOT_H
#define SPX_EC2_SNAPSHOT_H

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

#include "ec2/volume.h"

struct spx_state;

/* The VolumeId of a snapshot of no volume of its account: a copy, or
 * one `spx admin images import` stored. EC2 shows copies with this
 * arbitrary id, never their source's volume (another account's, maybe). */
#define SPX_EBS_SNAP_NO_VOLUME "vol-ffffffff"

/* A snapshot's Description: at most this many characters, as EC2's. */
#define SPX_EBS_SNAP_DESC_MAX 255

/* "snap-" and 8 or 17 lowercase hex digits. */
bool spx_ebs_snap_id_wellformed(const char *id);

/* CreateSnapshot of account's volume req.VolumeId ("available" or
 * "in-use"). *out (a new reference) is the record. */
int spx_ebs_snap_create(struct spx_state *st, const char *account,
			const json_t *req, const json_t *tags, time_t now,
			json_t **out);
/* CreateSnapshots: a snapshot of each volume of instance inst (its
 * record, account's) that req.InstanceSpecification names (the root
 * volume unless ExcludeBootVolume, the data volumes but
 * ExcludeDataVolumeIds), one set taken at one moment (crash-consistent
 * across the volumes: the agent runs `spx-vol snapshot --id S1,S2 V1
 * V2`). Each record has "SpxSet", the id of the set's first snapshot;
 * tags go on each (and the volume's with CopyTagsFromSource "volume").
 * *out: the records, sorted by VolumeId (a new reference). */
int spx_ebs_snap_create_set(struct spx_state *st, const char *account,
			    const json_t *req, const json_t *inst,
			    const json_t *tags, time_t now, json_t **out);
/* CopySnapshot: req.SourceSnapshotId, completed, seen by account, in
 * req.SourceRegion, which must be region. The copy's VolumeId is
 * SPX_EBS_SNAP_NO_VOLUME. */
int spx_ebs_snap_copy(struct spx_state *st, const char *account,
		      const char *region, const json_t *req,
		      const json_t *tags, time_t now, json_t **out);
/* The record of snapshot id as account sees it: its own, or another's
 * it may use (shared: may be NULL to refuse those). *out a new
 * reference; InvalidSnapshot.NotFound, InvalidSnapshotID.Malformed. */
int spx_ebs_snap_get(struct spx_state *st, const char *account,
		     const char *id, bool shared, json_t **out);
/* Every snapshot record account sees (its own, those shared with it, the
 * public ones), sorted by SnapshotId; one that cannot be read is left
 * out and logged. */
int spx_ebs_snap_list(struct spx_state *st, const char *account,
		      json_t **out);
/* May account create volumes from rec? (owner, or permitted) */
bool spx_ebs_snap_permits(const json_t *rec, const char *account);
/* DeleteSnapshot of account's own snapshot: another account's, even
 * one shared with it, is InvalidSnapshot.NotFound before anything else
 * is looked at; InvalidSnapshot.InUse while an image of account names
 * it (ec2/image.h; another account's image does not keep it). Under the node's lock (lock: its file,
 * spx_ebs_lock), as CreateVolume records a volume of a snapshot and
 * RegisterImage an image of one. */
int spx_ebs_snap_delete(struct spx_state *st, const char *lock,
			const char *account, const char *id);
/* The record of snapshot id that `spx admin images import` stored
 * already on node with spx-vol (size in bytes; completed at once; its
 * VolumeId is SPX_EBS_SNAP_NO_VOLUME). *out a new reference. */
int spx_ebs_snap_record_stored(struct spx_state *st, const char *account,
			       const char *id, const char *node,
			       uint64_t bytes, const char *desc,
			       const json_t *tags, time_t now, json_t **out);
/* Take back what spx_ebs_snap_record_stored recorded (a failure
 * midway; the caller removes the manifest). */
int spx_ebs_snap_unrecord(struct spx_state *st, const char *account,
			  const char *id);
/* ModifySnapshotAttribute (createVolumePermission, add or remove; the
 * old form with OperationType, UserIds and GroupNames, or
 * CreateVolumePermission.Add/Remove). */
int spx_ebs_snap_modify_attr(struct spx_state *st, const char *account,
			     const json_t *req);
/* ResetSnapshotAttribute: no permission left. */
int spx_ebs_snap_reset_attr(struct spx_state *st, const char *account,
			    const json_t *req);
/* Tags (the restype row "snapshot"); only the owner's. */
int spx_ebs_snap_set_tags(struct spx_state *st, const char *account,
			  const char *id, const json_t *set,
			  const json_t *unset);
/* The Snapshot item of a record as account sees it (a new reference):
 * another account's, shared with it, has no Tags (they are the owner's,
 * as on AWS, so tag: filters do not match them either). */
json_t *spx_ebs_snap_item(const json_t *rec, const char *account);

/* ---- for the node agent ------------------------------------------- */

/* Append the snapshot steps waiting on node to *out (*n entries, grown
 * with spx_realloc), as spx_ebs_pending does. */
int spx_ebs_snap_pending(struct spx_state *st, const char *node,
			 struct spx_ebs_work **out, size_t *n);
/* Progress of a pending snapshot, in percent. */
int spx_ebs_snap_progress(struct spx_state *st, const struct spx_ebs_work *w,
			  int pct);
/* The end of a snapshot step: ok; or a try that failed, kept in SpxError
 * (final: the snapshot is "error" with why as StateMessage). A record
 * that moved on meanwhile is left alone. */
int spx_ebs_snap_done(struct spx_state *st, const struct spx_ebs_work *w,
		      bool ok, bool final, const char *why);

#endif
