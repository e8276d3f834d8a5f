/* snapshot.c: EBS snapshots in the record store (see snapshot.h). */
#include "spx.h"

#include <unistd.h>

#include "ec2/fault.h"
#include "ec2/image.h"
#include "ec2/instance.h"
#include "ec2/rec.h"
#include "ec2/snapshot.h"
#include "ec2/tags.h"
#include "ec2/volume.h"
#include "id.h"
#include "state/state.h"

#define PREFIX "snapshots/"

static const struct spx_ec2_kind kind = {
	"snapshots", "snap", "snapshot", "SnapshotId",
	"InvalidSnapshot.NotFound", "InvalidSnapshotID.Malformed",
};

static char *rec_key(const char *account, const char *id)
{
	return spx_ec2_kind_key(&kind, account, id);
}

bool spx_ebs_snap_id_wellformed(const char *id)
{
	return spx_ec2_id_wellformed(id, "snap");
}

static int not_found(const char *id)
{
	return spx_ec2_kind_not_found(&kind, id);
}

bool spx_ebs_snap_permits(const json_t *rec, const char *account)
{
	const json_t *p;
	size_t i;

	if (!strcmp(spx_ec2_str0(rec, "OwnerId"), account))
		return true;
	json_array_foreach(json_object_get(rec, "SpxPermissions"), i, p) {
		const char *u = spx_ec2_str(p, "UserId"), *g = spx_ec2_str(p, "Group");

		if ((u && !strcmp(u, account)) || (g && !strcmp(g, "all")))
			return true;
	}
	return false;
}

/* A record that has not been deleted and reads as a snapshot. */
static bool live(const json_t *rec)
{
	return json_is_string(json_object_get(rec, "SnapshotId")) &&
	       json_is_string(json_object_get(rec, "OwnerId")) &&
	       !json_is_true(json_object_get(rec, "SpxDeleting"));
}

int spx_ebs_snap_list(struct spx_state *st, const char *account,
		      json_t **out)
{
	json_t *all, *sel, *r;
	size_t i;

	/* Every account's: those shared with this one count too. */
	*out = NULL;
	if (spx_ec2_kind_list(st, &kind, NULL, &all) < 0)
		return -1;
	sel = json_array();
	json_array_foreach(all, i, r)
		if (live(r) && spx_ebs_snap_permits(r, account))
			json_array_append(sel, r);
	json_decref(all);
	*out = sel;
	return 0;
}

/* The snapshot id of another account that account may use. */
static int shared_get(struct spx_state *st, const char *account,
		      const char *id, json_t **out)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	size_t idlen = strlen(id);
	int rc = spx_state_list(st, PREFIX, 0, &l);

	*out = NULL;
	if (rc < 0)
		return spx_ec2_state_fail(rc);
	for (size_t i = 0; i < l.n && !*out; i++) {
		size_t n = strlen(l.key[i]);
		json_t *r;

		if (n <= idlen || l.key[i][n - idlen - 1] != '/' ||
		    strcmp(l.key[i] + n - idlen, id))
			continue;
		if (spx_ec2_rec_get(st, l.key[i], &r, NULL) < 0) {
			spx_error_clear();
			continue;
		}
		if (live(r) && !strcmp(spx_ec2_str(r, "SnapshotId"), id) &&
		    spx_ebs_snap_permits(r, account))
			*out = r;
		else
			json_decref(r);
	}
	spx_state_list_release(&l);
	return *out ? 0 : not_found(id);
}

int spx_ebs_snap_get(struct spx_state *st, const char *account,
		     const char *id, bool shared, json_t **out)
{
	const char *code;

	*out = NULL;
	if (spx_ec2_kind_get(st, &kind, account, id, out, NULL) == 0) {
		if (live(*out))
			return 0;
		json_decref(*out); /* being deleted: no more */
		*out = NULL;
	} else if (!(code = spx_ec2_fault_code(NULL)) ||
		   strcmp(code, kind.not_found)) {
		return -1; /* malformed, or the store failed */
	}
	if (!shared)
		return not_found(id);
	/* Another account's, if it lets this one use it: the keys name
	 * the owner, so only the record of that id is read. */
	return shared_get(st, account, id, out);
}

json_t *spx_ebs_snap_item(const json_t *rec, const char *account)
{
	json_t *it = spx_ec2_rec_item(rec);

	/* Tags are the owner's own: AWS shows none of them to an account a
	 * snapshot is shared with, and Describe filters match the item. */
	if (strcmp(spx_ec2_str0(rec, "OwnerId"), account))
		json_object_del(it, "Tags");
	return it;
}

/* A new pending record of account: id, of volume vol (size gib). */
static json_t *new_record(const char *account, const char *id,
			  const char *vol, json_int_t gib, const char *node,
			  const char *desc, bool encrypted, const json_t *tags,
			  time_t now)
{
	return json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:s, s:s, s:b, "
			 "s:s, s:o, s:s, s:s, s:[]}",
			 "SnapshotId", id, "VolumeId", vol, "VolumeSize", gib,
			 "State", "pending", "Progress", "0%", "StartTime",
			 (json_int_t)now, "OwnerId", account, "Description",
			 desc ? desc : "", "Encrypted", encrypted,
			 "StorageTier", "standard", "Tags",
			 tags ? json_deep_copy(tags) : json_array(), "SpxNode",
			 node, "SpxError", "", "SpxPermissions");
}

static int put_new(struct spx_state *st, const char *account, json_t *rec,
		   json_t **out)
{
	char *key = rec_key(account, spx_ec2_str(rec, "SnapshotId"));
	int rc = spx_ec2_rec_put(st, key, rec, true, 0);

	free(key);
	if (rc < 0) {
		json_decref(rec);
		return spx_ec2_state_fail(rc);
	}
	*out = rec;
	return 0;
}

int spx_ebs_snap_create(struct spx_state *st, const char *account,
			const json_t *req, const json_t *tags, time_t now,
			json_t **out)
{
	const char *vid = spx_ec2_str(req, "VolumeId"), *s;
	char id[SPX_ID_SIZE];
	json_t *vol, *rec;

	*out = NULL;
	if (json_object_get(req, "OutpostArn"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Snapshots on Outposts are not available "
				     "here.");
	if (spx_ec2_desc_check(spx_ec2_str(req, "Description"),
			       SPX_EBS_SNAP_DESC_MAX) < 0)
		return -1;
	if (spx_ebs_get(st, account, vid ? vid : "", &vol, NULL) < 0)
		return -1;
	s = spx_ec2_str0(vol, "State");
	if (strcmp(s, "available") && strcmp(s, "in-use")) {
		spx_ec2_fault(400, "IncorrectState",
			      "The volume '%s' is '%s'; a snapshot needs it "
			      "'available' or 'in-use'.",
			      vid, s);
		json_decref(vol);
		return -1;
	}
	if (spx_id_new(id, sizeof(id), "snap") < 0) {
		json_decref(vol);
		return spx_ec2_fault(500, "InternalError", "%s", spx_errmsg());
	}
	rec = new_record(account, id, vid,
			 json_integer_value(json_object_get(vol, "Size")),
			 spx_ec2_str0(vol, "SpxNode"), spx_ec2_str(req, "Description"),
			 json_is_true(json_object_get(vol, "Encrypted")), tags,
			 now);
	if (spx_ec2_str(vol, "KmsKeyId"))
		json_object_set(rec, "KmsKeyId", json_object_get(vol, "KmsKeyId"));
	json_decref(vol);
	return put_new(st, account, rec, out);
}

/* The volumes of CreateSnapshots: inst's root volume unless excluded,
 * then its data volumes but those excluded, sorted by id (the order the
 * set is taken in). A new array of VolumeId strings, or NULL with a
 * fault. */
static json_t *set_volumes(struct spx_state *st, const char *account,
			   const json_t *inst, const json_t *spec)
{
	const char *iid = spx_ec2_str0(inst, "InstanceId");
	const char *root = spx_ec2_str(json_object_get(inst, "SpxRoot"),
				       "VolumeId");
	const json_t *ex = json_object_get(spec, "ExcludeDataVolumeIds"), *e;
	json_t *data = spx_ebs_data_volumes(st, account, iid), *out, *v;
	size_t i;

	if (!data)
		return NULL;
	json_array_foreach(ex, i, e) {
		const char *id = json_string_value(e);

		if (!id || !spx_ebs_id_wellformed(id)) {
			json_decref(data);
			spx_ec2_fault(400, "InvalidVolumeID.Malformed",
				      "Invalid id: \"%s\"", id ? id : "");
			return NULL;
		}
		if (root && !strcmp(id, root)) {
			json_decref(data);
			spx_ec2_fault(400, "InvalidParameterValue",
				      "The volume '%s' is the root volume of "
				      "'%s': use ExcludeBootVolume to leave it "
				      "out.",
				      id, iid);
			return NULL;
		}
		if (!spx_ec2_has_string(data, id)) {
			json_decref(data);
			spx_ec2_fault(400, "InvalidParameterValue",
				      "The volume '%s' is not attached to "
				      "'%s'.",
				      id, iid);
			return NULL;
		}
	}
	out = json_array();
	if (root && !json_is_true(json_object_get(spec, "ExcludeBootVolume")))
		json_array_append_new(out, json_string(root));
	json_array_foreach(data, i, v)
		if (!spx_ec2_has_string(ex, json_string_value(v)))
			json_array_append(out, v);
	json_decref(data);
	/* By id: the order spx-vol takes a set's locks in. */
	spx_ec2_sort_by(out, NULL);
	return out;
}

/* The tags of one snapshot of a set: the volume's (CopyTagsFromSource
 * "volume"), then those asked for, which win over a volume's of the same
 * key. A new reference. */
static json_t *set_tags(const json_t *vol, const json_t *tags, bool copy)
{
	json_t *out = json_array(), *t, *a;
	size_t i, k;

	if (copy)
		json_array_foreach(json_object_get(vol, "Tags"), i, t) {
			const char *key = spx_ec2_str0(t, "Key");
			bool asked = false;

			json_array_foreach(tags, k, a)
				asked |= !strcmp(spx_ec2_str0(a, "Key"), key);
			if (!asked && strncasecmp(key, "aws:", 4))
				json_array_append_new(out, json_deep_copy(t));
		}
	json_array_foreach(tags, i, a)
		json_array_append_new(out, json_deep_copy(a));
	return out;
}

int spx_ebs_snap_create_set(struct spx_state *st, const char *account,
			    const json_t *req, const json_t *inst,
			    const json_t *tags, time_t now, json_t **out)
{
	const json_t *spec = json_object_get(req, "InstanceSpecification");
	const char *copy = spx_ec2_str(req, "CopyTagsFromSource");
	const char *iid = spx_ec2_str0(inst, "InstanceId");
	int code = (int)json_integer_value(
		json_object_get(json_object_get(inst, "State"), "Code"));
	json_t *vids = NULL, *vols = json_array(), *recs = json_array(), *v;
	char set[SPX_ID_SIZE] = "";
	size_t i;
	int rc = -1;

	*out = NULL;
	if (json_object_get(req, "OutpostArn"))
		spx_ec2_fault(400, "InvalidParameterValue",
			      "Snapshots on Outposts are not available here.");
	else if (spx_ec2_desc_check(spx_ec2_str(req, "Description"),
				    SPX_EBS_SNAP_DESC_MAX) < 0)
		;
	else if (copy && strcmp(copy, "volume"))
		spx_ec2_fault(400, "InvalidParameterValue",
			      "Value (%s) for parameter CopyTagsFromSource is "
			      "invalid. Expected: 'volume'.",
			      copy);
	else if (code != SPX_INST_RUNNING && code != SPX_INST_STOPPING &&
		 code != SPX_INST_STOPPED)
		spx_ec2_fault(400, "IncorrectState",
			      "The instance '%s' is '%s': its volumes are "
			      "snapshotted while it is running or stopped.",
			      iid,
			      spx_inst_state_name(code) ? spx_inst_state_name(code)
							: "");
	else
		vids = set_volumes(st, account, inst, spec);
	if (!vids)
		goto out;
	if (!json_array_size(vids)) {
		spx_ec2_fault(400, "InvalidParameterValue",
			      "The instance '%s' has no volume left to "
			      "snapshot.",
			      iid);
		goto out;
	}
	/* Every volume first: a set is recorded whole or not at all. */
	json_array_foreach(vids, i, v) {
		json_t *vol;
		const char *s;

		if (spx_ebs_get(st, account, json_string_value(v), &vol, NULL) <
		    0)
			goto out;
		json_array_append_new(vols, vol);
		s = spx_ec2_str0(vol, "State");
		if (strcmp(s, "available") && strcmp(s, "in-use")) {
			spx_ec2_fault(400, "IncorrectState",
				      "The volume '%s' is '%s'; a snapshot "
				      "needs it 'available' or 'in-use'.",
				      json_string_value(v), s);
			goto out;
		}
	}
	json_array_foreach(vols, i, v) {
		char id[SPX_ID_SIZE];
		json_t *t, *rec;

		if (spx_id_new(id, sizeof(id), "snap") < 0) {
			spx_ec2_fault(500, "InternalError", "%s", spx_errmsg());
			goto undo;
		}
		if (!*set)
			snprintf(set, sizeof(set), "%s", id);
		t = set_tags(v, tags, copy != NULL);
		rec = new_record(account, id, spx_ec2_str0(v, "VolumeId"),
				 json_integer_value(json_object_get(v, "Size")),
				 spx_ec2_str0(v, "SpxNode"),
				 spx_ec2_str(req, "Description"),
				 json_is_true(json_object_get(v, "Encrypted")),
				 t, now);
		json_decref(t);
		if (spx_ec2_str(v, "KmsKeyId"))
			json_object_set(rec, "KmsKeyId",
					json_object_get(v, "KmsKeyId"));
		json_object_set_new(rec, "SpxSet", json_string(set));
		json_object_set_new(rec, "SpxSetSize",
				    json_integer((json_int_t)json_array_size(vols)));
		if (put_new(st, account, rec, &rec) < 0)
			goto undo;
		json_array_append_new(recs, rec);
	}
	*out = json_incref(recs);
	rc = 0;
	goto out;
undo:
	/* The agent takes a set from the records it finds: take back the
	 * ones written, so that no part of the set is taken alone. */
	json_array_foreach(recs, i, v) {
		char *key = rec_key(account, spx_ec2_str0(v, "SnapshotId"));

		spx_state_delete(st, key, 0);
		free(key);
	}
out:
	json_decref(vids);
	json_decref(vols);
	json_decref(recs);
	return rc;
}

int spx_ebs_snap_copy(struct spx_state *st, const char *account,
		      const char *region, const json_t *req,
		      const json_t *tags, time_t now, json_t **out)
{
	const char *src = spx_ec2_str(req, "SourceSnapshotId");
	const char *sr = spx_ec2_str(req, "SourceRegion");
	const char *dr = spx_ec2_str(req, "DestinationRegion");
	char id[SPX_ID_SIZE];
	json_t *from, *rec;
	bool enc;

	*out = NULL;
	if (json_object_get(req, "DestinationOutpostArn"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Snapshots on Outposts are not available "
				     "here.");
	if (spx_ec2_desc_check(spx_ec2_str(req, "Description"),
			       SPX_EBS_SNAP_DESC_MAX) < 0)
		return -1;
	if (!sr || strcmp(sr, region))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "The source region '%s' is not this "
				     "cloud's region '%s'.",
				     sr ? sr : "", region);
	if (dr && strcmp(dr, region))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "The destination region '%s' is not this "
				     "cloud's region '%s'.",
				     dr, region);
	if (spx_ec2_str(req, "KmsKeyId") &&
	    !json_is_true(json_object_get(req, "Encrypted")))
		return spx_ec2_fault(400, "InvalidParameterDependency",
				     "The parameter KmsKeyId requires the "
				     "parameter Encrypted to be set.");
	if (spx_ebs_snap_get(st, account, src ? src : "", true, &from) < 0)
		return -1;
	if (strcmp(spx_ec2_str0(from, "State"), "completed")) {
		spx_ec2_fault(400, "IncorrectState",
			      "Snapshot '%s' is '%s'; it can be copied once "
			      "it is 'completed'.",
			      src, spx_ec2_str0(from, "State"));
		json_decref(from);
		return -1;
	}
	if (spx_id_new(id, sizeof(id), "snap") < 0) {
		json_decref(from);
		return spx_ec2_fault(500, "InternalError", "%s", spx_errmsg());
	}
	/* A copy of an encrypted snapshot stays encrypted. */
	enc = json_is_true(json_object_get(from, "Encrypted")) ||
	      json_is_true(json_object_get(req, "Encrypted"));
	/* Not the source's volume, which may be another account's: EC2
	 * gives copies an arbitrary volume id. */
	rec = new_record(account, id, SPX_EBS_SNAP_NO_VOLUME,
			 json_integer_value(json_object_get(from, "VolumeSize")),
			 spx_ec2_str0(from, "SpxNode"),
			 spx_ec2_str(req, "Description")
				 ? spx_ec2_str(req, "Description")
				 : spx_ec2_str(from, "Description"),
			 enc, tags, now);
	if (spx_ec2_str(req, "KmsKeyId"))
		json_object_set_new(rec, "KmsKeyId",
				    json_string(spx_ec2_str(req, "KmsKeyId")));
	else if (enc && spx_ec2_str(from, "KmsKeyId"))
		json_object_set(rec, "KmsKeyId", json_object_get(from, "KmsKeyId"));
	json_object_set_new(rec, "SpxSource", json_string(src));
	json_decref(from);
	return put_new(st, account, rec, out);
}

int spx_ebs_snap_record_stored(struct spx_state *st, const char *account,
			       const char *id, const char *node,
			       uint64_t bytes, const char *desc,
			       const json_t *tags, time_t now, json_t **out)
{
	json_int_t gib = (json_int_t)((bytes + ((uint64_t)1 << 30) - 1) >> 30);
	json_t *rec;

	*out = NULL;
	if (!spx_ebs_snap_id_wellformed(id) || !spx_account_id_valid(account))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "bad snapshot id or account");
	if (spx_ec2_desc_check(desc, SPX_EBS_SNAP_DESC_MAX) < 0)
		return -1;
	rec = new_record(account, id, SPX_EBS_SNAP_NO_VOLUME, gib ? gib : 1, node,
			 desc, false, tags, now);
	json_object_set_new(rec, "State", json_string("completed"));
	json_object_set_new(rec, "Progress", json_string("100%"));
	return put_new(st, account, rec, out);
}

int spx_ebs_snap_unrecord(struct spx_state *st, const char *account,
			  const char *id)
{
	char *key = rec_key(account, id);
	int rc = spx_state_delete(st, key, 0);

	free(key);
	return rc < 0 && rc != SPX_STATE_NOTFOUND ? spx_ec2_state_fail(rc) : 0;
}

/* ---- changes by the owner ------------------------------------------ */

static int change(struct spx_state *st, const char *account, const char *id,
		  int (*fn)(json_t *, void *), void *arg)
{
	return spx_ec2_kind_change(st, &kind, account, id, fn, arg);
}

/* A deleted snapshot is not found by any change. */
static int gone(json_t *rec)
{
	return live(rec) ? 0 : not_found(spx_ec2_str0(rec, "SnapshotId"));
}

static int to_deleting(json_t *rec, void *arg)
{
	(void)arg;
	if (gone(rec) < 0)
		return -1;
	json_object_set_new(rec, "SpxDeleting", json_true());
	return 0;
}

int spx_ebs_snap_delete(struct spx_state *st, const char *lock,
			const char *account, const char *id)
{
	char ami[64];
	json_t *rec = NULL;
	int lk, rc;

	if (!spx_ebs_snap_id_wellformed(id))
		return spx_ec2_kind_malformed(&kind, id);
	if ((lk = spx_ebs_lock(lock)) < 0)
		return -1;
	/* The caller's own snapshot before anything else: to another
	 * account, even one it is shared with, it does not exist, and
	 * which images use it is not that account's to learn. */
	rc = spx_ebs_snap_get(st, account, id, false, &rec);
	json_decref(rec);
	/* Only the owner's images keep it, as on AWS: another account's
	 * image of it (made while it was shared) would let that account
	 * keep the owner from deleting it, with an image the owner can
	 * neither see nor deregister. */
	if (rc == 0 &&
	    (rc = spx_ec2_image_using(st, account, id, ami, sizeof(ami))) == 0 &&
	    *ami)
		rc = spx_ec2_fault(400, "InvalidSnapshot.InUse",
				   "The snapshot %s is currently in use by %s",
				   id, ami);
	if (rc == 0)
		rc = change(st, account, id, to_deleting, NULL);
	close(lk);
	return rc;
}

/* The permission entries req asks to add and to remove, checked. */
static int perm_lists(const json_t *req, json_t *add, json_t *rm)
{
	const char *attr = spx_ec2_str(req, "Attribute");
	const char *op = spx_ec2_str(req, "OperationType");
	const json_t *cvp = json_object_get(req, "CreateVolumePermission");
	json_t *lists[2] = { add, rm }, *v;
	const char *names[2] = { "Add", "Remove" };
	size_t i;

	if (attr && strcmp(attr, "createVolumePermission"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%s) for parameter attribute is "
				     "invalid. Only createVolumePermission can "
				     "be modified.",
				     attr);
	if (op && strcmp(op, "add") && strcmp(op, "remove"))
		return spx_ec2_fault_invalid("operationType", op, NULL);
	if (op) {
		json_t *to = strcmp(op, "add") ? rm : add;

		json_array_foreach(json_object_get(req, "UserIds"), i, v)
			json_array_append_new(to, json_pack("{s:O}", "UserId", v));
		json_array_foreach(json_object_get(req, "GroupNames"), i, v)
			json_array_append_new(to, json_pack("{s:O}", "Group", v));
	}
	for (int k = 0; k < 2; k++)
		json_array_foreach(json_object_get(cvp, names[k]), i, v)
			json_array_append(lists[k], v);
	if (!json_array_size(add) && !json_array_size(rm))
		return spx_ec2_fault(400, "MissingParameter",
				     "No permission to add or remove was "
				     "given.");
	for (int k = 0; k < 2; k++)
		json_array_foreach(lists[k], i, v) {
			const char *u = spx_ec2_str(v, "UserId"), *g = spx_ec2_str(v, "Group");

			if ((u != NULL) == (g != NULL))
				return spx_ec2_fault(400,
						     "InvalidParameterValue",
						     "A permission names a "
						     "user id or the group "
						     "'all', not both.");
			if (u && !spx_account_id_valid(u))
				return spx_ec2_fault(400,
						     "InvalidParameterValue",
						     "Value (%s) for parameter "
						     "userId is invalid.",
						     u);
			if (g && strcmp(g, "all"))
				return spx_ec2_fault(400,
						     "InvalidParameterValue",
						     "Value (%s) for parameter "
						     "group is invalid. Only "
						     "'all' is allowed.",
						     g);
		}
	return 0;
}

static bool same_perm(const json_t *a, const json_t *b)
{
	return !strcmp(spx_ec2_str0(a, "UserId"), spx_ec2_str0(b, "UserId")) &&
	       !strcmp(spx_ec2_str0(a, "Group"), spx_ec2_str0(b, "Group"));
}

struct perms {
	const json_t *add, *rm;
	bool reset;
};

static int do_perms(json_t *rec, void *arg)
{
	struct perms *p = arg;
	json_t *have = json_object_get(rec, "SpxPermissions"), *v, *h;
	size_t i, j;

	if (gone(rec) < 0)
		return -1;
	if (!json_is_array(have) || p->reset) {
		have = json_array();
		json_object_set_new(rec, "SpxPermissions", have);
	}
	json_array_foreach(p->add, i, v) {
		if (spx_ec2_str(v, "Group") &&
		    json_is_true(json_object_get(rec, "Encrypted")))
			return spx_ec2_fault(400, "InvalidParameter",
					     "Encrypted snapshots cannot be "
					     "made public.");
		json_array_foreach(have, j, h)
			if (same_perm(h, v))
				break;
		if (j == json_array_size(have))
			json_array_append(have, v);
	}
	json_array_foreach(p->rm, i, v)
		for (j = 0; j < json_array_size(have); j++)
			if (same_perm(json_array_get(have, j), v))
				json_array_remove(have, j--);
	return 0;
}

int spx_ebs_snap_modify_attr(struct spx_state *st, const char *account,
			     const json_t *req)
{
	json_t *add = json_array(), *rm = json_array();
	struct perms p = { add, rm, false };
	const char *id = spx_ec2_str(req, "SnapshotId");
	int rc = perm_lists(req, add, rm);

	if (rc == 0)
		rc = change(st, account, id ? id : "", do_perms, &p);
	json_decref(add);
	json_decref(rm);
	return rc;
}

int spx_ebs_snap_reset_attr(struct spx_state *st, const char *account,
			    const json_t *req)
{
	struct perms p = { NULL, NULL, true };
	const char *id = spx_ec2_str(req, "SnapshotId");
	const char *attr = spx_ec2_str(req, "Attribute");

	if (attr && strcmp(attr, "createVolumePermission"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%s) for parameter attribute is "
				     "invalid. Only createVolumePermission can "
				     "be reset.",
				     attr);
	return change(st, account, id ? id : "", do_perms, &p);
}

struct tags {
	const json_t *set, *unset;
};

static int do_tags(json_t *rec, void *arg)
{
	struct tags *t = arg;

	if (gone(rec) < 0)
		return -1;
	return spx_ec2_rec_tags(rec, t->set, t->unset);
}

int spx_ebs_snap_set_tags(struct spx_state *st, const char *account,
			  const char *id, const json_t *set,
			  const json_t *unset)
{
	struct tags t = { set, unset };

	return change(st, account, id, do_tags, &t);
}

/* ---- the agent's side ---------------------------------------------- */

int spx_ebs_snap_pending(struct spx_state *st, const char *node,
			 struct spx_ebs_work **out, size_t *n)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	int rc = spx_state_list(st, PREFIX, 0, &l);

	if (rc < 0)
		return spx_ec2_state_fail(rc);
	for (size_t i = 0; i < l.n; i++) {
		struct spx_ebs_work w = { 0 };
		const char *acct = l.key[i] + strlen(PREFIX);
		const char *slash = strchr(acct, '/');
		const char *src;
		json_t *r;

		if (!slash || (size_t)(slash - acct) >= sizeof(w.account) ||
		    spx_ec2_rec_get(st, l.key[i], &r, NULL) < 0)
			continue;
		memcpy(w.account, acct, (size_t)(slash - acct));
		snprintf(w.id, sizeof(w.id), "%s", spx_ec2_str0(r, "SnapshotId"));
		src = spx_ec2_str(r, "SpxSource");
		if (strcmp(spx_ec2_str0(r, "SpxNode"), node) ||
		    !spx_ebs_snap_id_wellformed(w.id)) {
			json_decref(r);
			continue;
		}
		snprintf(w.set, sizeof(w.set), "%s", spx_ec2_str0(r, "SpxSet"));
		w.set_size = (unsigned)json_integer_value(
			json_object_get(r, "SpxSetSize"));
		w.set_time = json_integer_value(json_object_get(r, "StartTime"));
		if (json_is_true(json_object_get(r, "SpxDeleting"))) {
			w.step = SPX_EBS_SNAP_DELETE;
		} else if (!strcmp(spx_ec2_str0(r, "State"), "pending")) {
			w.step = src ? SPX_EBS_SNAP_COPY : SPX_EBS_SNAP_TAKE;
			snprintf(w.src, sizeof(w.src), "%s",
				 src ? src : spx_ec2_str0(r, "VolumeId"));

		} else {
			json_decref(r);
			continue;
		}
		json_decref(r);
		*out = spx_realloc(*out, (*n + 1) * sizeof(**out));
		(*out)[(*n)++] = w;
	}
	spx_state_list_release(&l);
	spx_error_clear();
	return 0;
}

static int snap_change(struct spx_state *st, const struct spx_ebs_work *w,
		       int (*fn)(json_t *, void *), void *arg)
{
	char *key = rec_key(w->account, w->id);
	int rc = spx_ec2_rec_change(st, key, fn, arg);

	free(key);
	return rc == SPX_STATE_NOTFOUND ? 0 : rc;
}

static int do_progress(json_t *rec, void *arg)
{
	char pct[8];

	if (strcmp(spx_ec2_str0(rec, "State"), "pending"))
		return 1;
	snprintf(pct, sizeof(pct), "%d%%", *(int *)arg);
	if (!strcmp(spx_ec2_str0(rec, "Progress"), pct))
		return 1;
	json_object_set_new(rec, "Progress", json_string(pct));
	return 0;
}

int spx_ebs_snap_progress(struct spx_state *st, const struct spx_ebs_work *w,
			  int pct)
{
	if (pct < 0)
		pct = 0;
	/* 100% is said with "completed", never before. */
	if (pct > 99)
		pct = 99;
	return snap_change(st, w, do_progress, &pct);
}

struct done {
	bool ok, final;
	const char *why;
};

static int do_done(json_t *rec, void *arg)
{
	struct done *d = arg;

	if (strcmp(spx_ec2_str0(rec, "State"), "pending") ||
	    json_is_true(json_object_get(rec, "SpxDeleting")))
		return 1;
	json_object_set_new(rec, "SpxError", json_string(d->ok ? "" : d->why));
	if (d->ok) {
		json_object_set_new(rec, "State", json_string("completed"));
		json_object_set_new(rec, "Progress", json_string("100%"));
	} else if (d->final) {
		json_object_set_new(rec, "State", json_string("error"));
		json_object_set_new(rec, "StateMessage", json_string(d->why));
	}
	return 0;
}

int spx_ebs_snap_done(struct spx_state *st, const struct spx_ebs_work *w,
		      bool ok, bool final, const char *why)
{
	struct done d = { ok, final, why ? why : "" };
	char *key;
	int rc;

	if (w->step != SPX_EBS_SNAP_DELETE)
		return snap_change(st, w, do_done, &d);
	if (!ok)
		return 0; /* still deleting: tried again */
	key = rec_key(w->account, w->id);
	rc = spx_state_delete(st, key, 0);
	free(key);
	return rc < 0 && rc != SPX_STATE_NOTFOUND ? spx_ec2_state_fail(rc) : 0;
}
