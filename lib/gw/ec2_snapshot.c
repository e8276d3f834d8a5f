/* ec2_snapshot.c: the EBS snapshot actions (CreateSnapshot, CopySnapshot,
 * DeleteSnapshot, DescribeSnapshots, Describe/Modify/Reset
 * SnapshotAttribute) over lib/ec2/snapshot.h. A change is recorded and
 * the node agent is rung; the answer is what AWS shows at that moment
 * ("pending", "0%"). */
#include "spx.h"

#include "ec2/filter.h"
#include "ec2/instance.h"
#include "ec2/rec.h"
#include "ec2/snapshot.h"
#include "ec2/tags.h"
#include "gw/ec2_int.h"
#include "node/agent.h"

static const struct spx_ec2_filter_field snap_fields[] = {
	{ "description", "Description" },
	{ "encrypted", "Encrypted" },
	{ "owner-alias", "OwnerAlias" },
	{ "owner-id", "OwnerId" },
	{ "progress", "Progress" },
	{ "snapshot-id", "SnapshotId" },
	{ "start-time", "StartTimeText" },
	{ "status", "State" },
	{ "storage-tier", "StorageTier" },
	{ "volume-id", "VolumeId" },
	{ "volume-size", "VolumeSize" },
};
static const struct spx_ec2_filter_table snap_filters = {
	snap_fields, SPX_ARRAY_SIZE(snap_fields), "Tags"
};

int ec2_create_snapshot(struct ec2_call *c)
{
	json_t *tags = NULL, *rec = NULL, *it;
	int rc = -1;

	if (spx_ec2_tagspec(json_object_get(c->in, "TagSpecifications"),
			    "snapshot", &tags) < 0 ||
	    spx_ebs_snap_create(c->gw->state, c->account, c->in, tags, c->now,
				&rec) < 0)
		goto out;
	ec2_wake(c);
	it = spx_ebs_snap_item(rec, c->account);
	json_object_update(c->out, it);
	json_decref(it);
	rc = 0;
out:
	json_decref(rec);
	json_decref(tags);
	return rc;
}

int ec2_create_snapshots(struct ec2_call *c)
{
	const json_t *spec = json_object_get(c->in, "InstanceSpecification");
	const char *iid = spx_ec2_str(spec, "InstanceId");
	json_t *tags = NULL, *inst = NULL, *recs = NULL, *list, *r;
	size_t i;
	int rc = -1;

	if (!iid) {
		spx_ec2_fault_missing("InstanceSpecification.InstanceId");
		goto out;
	}
	if (spx_ec2_tagspec(json_object_get(c->in, "TagSpecifications"),
			    "snapshot", &tags) < 0 ||
	    spx_inst_get(c->gw->state, c->account, iid, &inst) < 0 ||
	    spx_ebs_snap_create_set(c->gw->state, c->account, c->in, inst,
				    tags, c->now, &recs) < 0)
		goto out;
	ec2_wake(c);
	list = json_array();
	json_array_foreach(recs, i, r) {
		/* SnapshotInfo: the members of the Snapshot item it has. */
		json_t *it = spx_ec2_rec_item(r);

		ec2q_prune(c->svc, ec2q_shape_find(c->svc, "SnapshotInfo"), it);
		json_array_append_new(list, it);
	}
	json_object_set_new(c->out, "Snapshots", list);
	rc = 0;
out:
	json_decref(recs);
	json_decref(inst);
	json_decref(tags);
	return rc;
}

int ec2_copy_snapshot(struct ec2_call *c)
{
	json_t *tags = NULL, *rec = NULL;
	int rc = -1;

	if (spx_ec2_tagspec(json_object_get(c->in, "TagSpecifications"),
			    "snapshot", &tags) < 0 ||
	    spx_ebs_snap_copy(c->gw->state, c->account, c->gw->conf->aws.region,
			      c->in, tags, c->now, &rec) < 0)
		goto out;
	ec2_wake(c);
	json_object_set(c->out, "SnapshotId", json_object_get(rec, "SnapshotId"));
	if (json_array_size(json_object_get(rec, "Tags")))
		json_object_set(c->out, "Tags", json_object_get(rec, "Tags"));
	rc = 0;
out:
	json_decref(rec);
	json_decref(tags);
	return rc;
}

int ec2_delete_snapshot(struct ec2_call *c)
{
	char *lock = ec2_ebs_lock_path(c);
	int rc = spx_ebs_snap_delete(c->gw->state, lock, c->account,
				     ec2_str(c, "SnapshotId"));

	free(lock);
	if (rc < 0)
		return -1;
	ec2_wake(c);
	return 0;
}

static const char *snap_id(const json_t *item)
{
	return json_string_value(json_object_get(item, "SnapshotId"));
}

bool ec2_owner_wanted(const json_t *owners, const char *account,
		      const char *owner)
{
	const json_t *o;
	size_t i;

	if (!json_array_size(owners))
		return true;
	json_array_foreach(owners, i, o) {
		const char *s = json_string_value(o);

		if (s && (!strcmp(s, owner) ||
			  (!strcmp(s, "self") && !strcmp(owner, account))))
			return true;
	}
	return false;
}

/* RestorableByUserIds: may any of them ("self" is the caller) create a
 * volume from rec? */
static bool restorable_wanted(const json_t *users, const char *account,
			      const json_t *rec)
{
	const json_t *u;
	size_t i;

	if (!json_array_size(users))
		return true;
	json_array_foreach(users, i, u) {
		const char *s = json_string_value(u);

		if (s && !strcmp(s, "self"))
			s = account;
		if (s && spx_ebs_snap_permits(rec, s))
			return true;
	}
	return false;
}

/* The records of the ids asked for, each one the caller may see (else
 * the fault for the first that is not), sorted by id, in *out. */
static int get_ids(struct ec2_call *c, const json_t *ids, json_t **out)
{
	const json_t *v;
	size_t i;

	*out = json_array();
	json_array_foreach(ids, i, v) {
		json_t *rec;

		if (spx_ebs_snap_get(c->gw->state, c->account,
				     json_string_value(v), true, &rec) < 0) {
			json_decref(*out);
			*out = NULL;
			return -1;
		}
		json_array_append_new(*out, rec);
	}
	/* An id asked for twice is described once. */
	spx_ec2_sort_by(*out, "SnapshotId");
	for (i = 1; i < json_array_size(*out);)
		if (!strcmp(snap_id(json_array_get(*out, i)),
			    snap_id(json_array_get(*out, i - 1))))
			json_array_remove(*out, i);
		else
			i++;
	return 0;
}

static bool id_wanted(const json_t *ids, const char *id)
{
	const json_t *v;
	size_t i;

	if (!json_array_size(ids))
		return true;
	json_array_foreach(ids, i, v)
		if (!strcmp(json_string_value(v), id))
			return true;
	return false;
}

int ec2_describe_snapshots(struct ec2_call *c)
{
	const json_t *ids = ec2_list(c, "SnapshotIds");
	const json_t *owners = ec2_list(c, "OwnerIds");
	const json_t *users = ec2_list(c, "RestorableByUserIds");
	struct spx_ec2_filters *fs = NULL;
	struct spx_ec2_pager pg;
	struct spx_ec2_page p;
	json_t *all = NULL, *sel = NULL, *rec;
	size_t i;
	int rc = -1;

	if (json_array_size(ids) && json_object_get(c->in, "MaxResults"))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "The parameter snapshotIdSet cannot be "
				     "used with the parameter maxResults");
	ec2_pager(c, 5, 1000, 0, &pg);
	if (spx_ec2_page_begin(&pg, c->in, &p) < 0)
		return -1;
	if (spx_ec2_filters_compile(&snap_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0 ||
	    (json_array_size(ids)
		     ? get_ids(c, ids, &all)
		     : spx_ebs_snap_list(c->gw->state, c->account, &all)) < 0)
		goto out;
	sel = json_array();
	json_array_foreach(all, i, rec) {
		json_t *it;

		if (!id_wanted(ids, snap_id(rec)) ||
		    !ec2_owner_wanted(owners, c->account,
				  json_string_value(
					  json_object_get(rec, "OwnerId"))) ||
		    !restorable_wanted(users, c->account, rec))
			continue;
		it = spx_ebs_snap_item(rec, c->account);
		ec2_time_text(it, "StartTime");
		if (spx_ec2_filters_match(fs, it) &&
		    spx_ec2_page_after(&p, snap_id(it))) {
			ec2_time_text_del(it, "StartTime");
			json_array_append(sel, it);
		}
		json_decref(it);
	}
	rc = ec2_page_answer(c, &p, sel, snap_id, "Snapshots", NULL);
out:
	json_decref(sel);
	json_decref(all);
	spx_ec2_filters_free(fs);
	spx_ec2_page_release(&p);
	return rc;
}

int ec2_describe_snapshot_attribute(struct ec2_call *c)
{
	const char *attr = ec2_str(c, "Attribute");
	json_t *rec, *perms, *p;
	size_t i;

	/* Only the owner reads who else may use it. */
	if (spx_ebs_snap_get(c->gw->state, c->account,
			     ec2_str(c, "SnapshotId"), false, &rec) < 0)
		return -1;
	json_object_set(c->out, "SnapshotId", json_object_get(rec, "SnapshotId"));
	if (!strcmp(attr, "createVolumePermission")) {
		perms = json_array();
		json_array_foreach(json_object_get(rec, "SpxPermissions"), i, p)
			json_array_append(perms, p);
		json_object_set_new(c->out, "CreateVolumePermissions", perms);
	} else if (!strcmp(attr, "productCodes")) {
		json_object_set_new(c->out, "ProductCodes", json_array());
	} else {
		json_decref(rec);
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%s) for parameter attribute is "
				     "invalid.",
				     attr);
	}
	json_decref(rec);
	return 0;
}

int ec2_modify_snapshot_attribute(struct ec2_call *c)
{
	return spx_ebs_snap_modify_attr(c->gw->state, c->account, c->in);
}

int ec2_reset_snapshot_attribute(struct ec2_call *c)
{
	return spx_ebs_snap_reset_attr(c->gw->state, c->account, c->in);
}
