/* image.h: AMIs as EC2 describes them, kept in the record store, each
 * made from EBS snapshots (RegisterImage, `spx admin images import`).
 *
 * Records, per owning account:
 *   images/<account>/<ami-id>
 * holding the Image item EC2 describes (ImageId, Name, Description,
 * Architecture, RootDeviceName, RootDeviceType "ebs", BlockDeviceMappings
 * with the root's Ebs {SnapshotId, VolumeSize, VolumeType,
 * DeleteOnTermination, Encrypted}, BootMode, VirtualizationType "hvm",
 * EnaSupport, ImageType "machine", State, StateReason, CreationDate (the
 * text EC2 shows), OwnerId, Public, ImageLocation, Hypervisor,
 * PlatformDetails, UsageOperation, Tags) plus members EC2 does not show,
 * which spx_ec2_image_item() removes:
 *   "SpxSnapOwners"  {snap-id: owning account} for each mapping's
 *                    snapshot (another account's, shared with this one
 *                    through createVolumePermission, or its own)
 *   "SpxSha256"      `spx admin images import`: the SHA-256 of the file
 *
 * States: "available" when every mapping's snapshot is completed,
 * "pending" while one is pending; a pending image is looked at again
 * whenever it is read, and moves to "available" once its snapshots are
 * completed, or to "failed" with a StateReason when one of them failed.
 * (Reading converges the record, so no agent step is needed, and a crash
 * anywhere leaves nothing to repair.)
 *
 * Names are unique per account (InvalidAMIName.Duplicate): the check and
 * the new record are made under the node's EBS lock (spx_ebs_lock), which
 * DeleteSnapshot takes too, so a RegisterImage racing a DeleteSnapshot
 * of the same account's snapshot either records its image first (and the
 * deletion is refused with InvalidSnapshot.InUse) or finds no snapshot
 * (InvalidSnapshot.NotFound).
 * In a cluster that lock becomes a lease, as for snapshots.
 *
 * Who sees an image: its owner. Launch permissions (sharing, public
 * images) are not there yet: to any other account an image does not
 * exist (InvalidAMIID.NotFound). XXX: when they come, the owner's tags
 * must stay the owner's, as a shared snapshot's do (spx_ebs_snap_item).
 *
 * Functions record errors with spx_ec2_fault() and return 0 or -1. */
#ifndef SPX_EC2_IMAGE_H
#define SPX_EC2_IMAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct spx_state;

/* Name: 3 to 128 characters, as EC2's RegisterImage documents them. */
#define SPX_EC2_IMAGE_NAME_MIN 3
#define SPX_EC2_IMAGE_NAME_MAX 128
/* Description: at most this many characters. */
#define SPX_EC2_IMAGE_DESC_MAX 255
/* The device a root volume is given when RegisterImage names none. */
#define SPX_EC2_IMAGE_ROOT_DEFAULT "/dev/xvda"

/* "ami-" and 8 or 17 lowercase hex digits. */
bool spx_ec2_image_id_wellformed(const char *id);
/* Letters, digits, space and ( ) [ ] . / - ' @ _, 3 to 128 of them. */
bool spx_ec2_image_name_valid(const char *name);

/* RegisterImage: req is the parsed RegisterImageRequest (Name,
 * Description, Architecture, RootDeviceName, BlockDeviceMappings with
 * Ebs.SnapshotId, BootMode, EnaSupport, ...), tags a TagList (may be
 * NULL), sha256 the hex digest of an imported file (may be NULL). lock is
 * the node's EBS lock file. *out (a new reference) is the record. */
int spx_ec2_image_register(struct spx_state *st, const char *lock,
			   const char *account, const json_t *req,
			   const json_t *tags, const char *sha256, time_t now,
			   json_t **out);
/* CreateImage: req the parsed CreateImageRequest (InstanceId, Name,
 * Description, NoReboot), inst the instance's record (running or
 * stopped), lock the node's EBS lock file, img_tags and snap_tags
 * TagLists (may be NULL). A snapshot of the root volume is recorded
 * (CreateSnapshot's way: the agent takes it while the guest runs, a
 * crash-consistent moment, whatever NoReboot says), then an image of it
 * registered "pending" until the snapshot is completed. *out (a new
 * reference) is the image's record. */
int spx_ec2_image_create(struct spx_state *st, const char *lock,
			 const char *account, const json_t *req,
			 const json_t *inst, const json_t *img_tags,
			 const json_t *snap_tags, time_t now, json_t **out);
/* The record of account's image id, its state brought up to date:
 * InvalidAMIID.Malformed, InvalidAMIID.NotFound. */
int spx_ec2_image_get(struct spx_state *st, const char *account,
		      const char *id, json_t **out);
/* Every image record of account (NULL: of every account, for the
 * operator), sorted by ImageId, states brought up to date; one that
 * cannot be read is left out and logged. */
int spx_ec2_image_list(struct spx_state *st, const char *account,
		       json_t **out);
/* The ImageId of account's image named name into ami (size bytes; ""
 * when there is none). */
int spx_ec2_image_by_name(struct spx_state *st, const char *account,
			  const char *name, char *ami, size_t size);
/* DeregisterImage: the record goes; its snapshots stay. */
int spx_ec2_image_deregister(struct spx_state *st, const char *account,
			     const char *id);
/* Tags (the restype row "image"). */
int spx_ec2_image_set_tags(struct spx_state *st, const char *account,
			   const char *id, const json_t *set,
			   const json_t *unset);
/* The Image item of a record (a new reference). */
json_t *spx_ec2_image_item(const json_t *rec);
/* The first image of account whose block device mappings name snapshot
 * snap, into ami ("" when none). DeleteSnapshot calls it under the
 * node's lock with the snapshot's owner: as on AWS, only the owner's own
 * images keep a snapshot; another account's image of it (registered
 * while it was shared) does not, and can launch nothing once it is gone
 * or no longer shared. */
int spx_ec2_image_using(struct spx_state *st, const char *account,
			const char *snap, char *ami, size_t size);

#endif
