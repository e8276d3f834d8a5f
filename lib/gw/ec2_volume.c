/* ec2_volume.c: the EBS volume actions (CreateVolume, DeleteVolume,
 * DescribeVolumes, ModifyVolume, DescribeVolumesModifications,
 * DescribeVolumeStatus, DescribeVolumeAttribute) over lib/ec2/volume.h.
 * A change is recorded and the node agent is rung; the answer is the
 * state AWS shows at that moment ("creating", "modifying"). */
#include "spx.h"

#include "ec2/filter.h"
#include "ec2/instance.h"
#include "ec2/region.h"
#include "ec2/tags.h"
#include "ec2/volume.h"
#include "file.h"
#include "gw/ec2_int.h"
#include "node/agent.h"

static const struct spx_ec2_filter_field vol_fields[] = {
	{ "attachment.attach-time", "Attachments.AttachTimeText" },
	{ "attachment.delete-on-termination", "Attachments.DeleteOnTermination" },
	{ "attachment.device", "Attachments.Device" },
	{ "attachment.instance-id", "Attachments.InstanceId" },
	{ "attachment.status", "Attachments.State" },
	{ "availability-zone", "AvailabilityZone" },
	{ "create-time", "CreateTimeText" },
	{ "encrypted", "Encrypted" },
	{ "fast-restored", "FastRestored" },
	{ "multi-attach-enabled", "MultiAttachEnabled" },
	{ "size", "Size" },
	{ "snapshot-id", "SnapshotId" },
	{ "status", "State" },
	{ "volume-id", "VolumeId" },
	{ "volume-type", "VolumeType" },
};
static const struct spx_ec2_filter_table vol_filters = {
	vol_fields, SPX_ARRAY_SIZE(vol_fields), "Tags"
};

static const struct spx_ec2_filter_field mod_fields[] = {
	{ "modification-state", "ModificationState" },
	{ "original-iops", "OriginalIops" },
	{ "original-multi-attach-enabled", "OriginalMultiAttachEnabled" },
	{ "original-size", "OriginalSize" },
	{ "original-throughput", "OriginalThroughput" },
	{ "original-volume-type", "OriginalVolumeType" },
	{ "start-time", "StartTimeText" },
	{ "target-iops", "TargetIops" },
	{ "target-multi-attach-enabled", "TargetMultiAttachEnabled" },
	{ "target-size", "TargetSize" },
	{ "target-throughput", "TargetThroughput" },
	{ "target-volume-type", "TargetVolumeType" },
	{ "volume-id", "VolumeId" },
};
static const struct spx_ec2_filter_table mod_filters = {
	mod_fields, SPX_ARRAY_SIZE(mod_fields), NULL
};

static const struct spx_ec2_filter_field status_fields[] = {
	{ "action.code", "Actions.Code" },
	{ "action.description", "Actions.Description" },
	{ "action.event-id", "Actions.EventId" },
	{ "availability-zone", "AvailabilityZone" },
	{ "event.description", "Events.Description" },
	{ "event.event-id", "Events.EventId" },
	{ "event.event-type", "Events.EventType" },
	{ "event.not-after", "Events.NotAfter" },
	{ "event.not-before", "Events.NotBefore" },
	{ "volume-status.details-name", "VolumeStatus.Details.Name" },
	{ "volume-status.details-status", "VolumeStatus.Details.Status" },
	{ "volume-status.status", "VolumeStatus.Status" },
};
static const struct spx_ec2_filter_table status_filters = {
	status_fields, SPX_ARRAY_SIZE(status_fields), NULL
};

/* The node that holds a new volume in zone az: this one when it is in
 * that zone, else the first of the zone. */
static const char *node_for(const struct spx_conf *conf,
			    const struct spx_conf_node *self, const char *az)
{
	if (!az || !strcmp(self->az, az))
		return self->name;
	for (size_t i = 0; i < conf->n_nodes; i++)
		if (!strcmp(conf->nodes[i].az, az))
			return conf->nodes[i].name;
	return self->name;
}

char *ec2_ebs_lock_path(const struct ec2_call *c)
{
	return spx_path_join(c->gw->conf->paths.run, "ebs.lock");
}

void ec2_wake(const struct ec2_call *c)
{
	spx_agent_wake(c->gw->conf->paths.run);
}

/* The node's volume store, made if missing (caller frees), or NULL with
 * an InternalError fault. */
static char *volume_store(struct ec2_call *c)
{
	char *store = spx_path_join(c->gw->conf->paths.data, "vol");

	if (spx_mkdirs(store, 0700) < 0) {
		spx_ec2_fault(500, "InternalError",
			      "An internal error has occurred (%s)",
			      spx_errmsg());
		free(store);
		return NULL;
	}
	return store;
}

int ec2_create_volume(struct ec2_call *c)
{
	const struct spx_conf *conf = c->gw->conf;
	json_t *zones = spx_ec2_locations(conf, "availability-zone");
	char *store = volume_store(c);
	char *lock = ec2_ebs_lock_path(c);
	struct spx_ebs_env env = {
		node_for(conf, c->gw->self, ec2_str(c, "AvailabilityZone")),
		zones, store, lock, c->gw->self->ebs.overcommit_percent
	};
	json_t *tags = NULL, *rec = NULL, *it;
	int rc = -1;

	if (!store)
		goto out;
	if (spx_ec2_tagspec(json_object_get(c->in, "TagSpecifications"),
			    "volume", &tags) < 0 ||
	    spx_ebs_create(c->gw->state, &env, c->account, c->in, tags, c->now,
			   &rec) < 0)
		goto out;
	ec2_wake(c);
	it = spx_ebs_item(rec);
	json_object_update(c->out, it);
	json_decref(it);
	rc = 0;
out:
	json_decref(rec);
	json_decref(tags);
	json_decref(zones);
	free(store);
	free(lock);
	return rc;
}

int ec2_delete_volume(struct ec2_call *c)
{
	if (spx_ebs_delete(c->gw->state, c->account, ec2_str(c, "VolumeId")) < 0)
		return -1;
	ec2_wake(c);
	return 0;
}

int ec2_modify_volume(struct ec2_call *c)
{
	char *store = volume_store(c);
	char *lock = ec2_ebs_lock_path(c);
	/* A grow is checked against the volume store as CreateVolume is. */
	struct spx_ebs_env env = { c->gw->self->name, NULL, store, lock,
				   c->gw->self->ebs.overcommit_percent };
	json_t *mod = NULL;
	int rc = -1;

	if (!store)
		goto out;
	if (spx_ebs_modify(c->gw->state, &env, c->account, c->in, c->now,
			   &mod) < 0)
		goto out;
	ec2_wake(c);
	json_object_set_new(c->out, "VolumeModification", mod);
	rc = 0;
out:
	free(store);
	free(lock);
	return rc;
}

int ec2_attach_volume(struct ec2_call *c)
{
	const char *id = ec2_str(c, "InstanceId");
	struct spx_ebs_env env = { 0 };
	json_t *inst, *att;
	int rc;

	if (!id)
		return spx_ec2_fault_missing("InstanceId");
	if (spx_inst_get(c->gw->state, c->account, id, &inst) < 0)
		return -1;
	env.lock = ec2_ebs_lock_path(c);
	rc = spx_ebs_attach(c->gw->state, &env, c->account, c->in, inst,
			    c->now, &att);
	free((char *)env.lock);
	json_decref(inst);
	if (rc < 0)
		return -1;
	ec2_wake(c);
	json_object_update(c->out, att);
	json_decref(att);
	return 0;
}

int ec2_detach_volume(struct ec2_call *c)
{
	json_t *att;

	if (spx_ebs_detach(c->gw->state, c->account, c->in, &att) < 0)
		return -1;
	ec2_wake(c);
	json_object_update(c->out, att);
	json_decref(att);
	return 0;
}

static const char *vol_id(const json_t *item)
{
	return json_string_value(json_object_get(item, "VolumeId"));
}

/* The records of the account that VolumeIds names (all when absent), in
 * *out; a malformed or unknown id fails as EC2 fails it. */
static int selected(struct ec2_call *c, json_t **out)
{
	const json_t *ids = ec2_list(c, "VolumeIds");
	json_t *all, *rec, *v;
	size_t i;

	*out = NULL;
	json_array_foreach(ids, i, v) {
		if (spx_ebs_get(c->gw->state, c->account, json_string_value(v),
				&rec, NULL) < 0)
			return -1;
		json_decref(rec);
	}
	if (spx_ebs_list(c->gw->state, c->account, &all) < 0)
		return -1;
	if (json_array_size(ids)) {
		json_t *sel = json_array();

		json_array_foreach(all, i, rec) {
			size_t j;

			json_array_foreach(ids, j, v)
				if (json_equal(v, json_object_get(rec, "VolumeId"))) {
					json_array_append(sel, rec);
					break;
				}
		}
		json_decref(all);
		all = sel;
	}
	*out = all;
	return 0;
}

/* MaxResults cannot be combined with VolumeIds (EC2's rule). */
static int ids_or_pages(struct ec2_call *c)
{
	if (json_array_size(ec2_list(c, "VolumeIds")) &&
	    json_object_get(c->in, "MaxResults"))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "The parameter volumeIdSet cannot be used "
				     "with the parameter maxResults");
	return 0;
}

/* One Describe over the volume records: each record becomes an item
 * (make), filtered by table, paged by volume id, answered as member.
 * MaxResults is at least min; above cap a page holds cap items (EC2
 * answers a larger MaxResults that way rather than refusing it: the aws
 * CLI asks for 1000). */
static int describe(struct ec2_call *c, const struct spx_ec2_filter_table *ft,
		    json_t *(*make)(const json_t *rec), const char *member,
		    int64_t min, size_t cap)
{
	struct spx_ec2_filters *fs = NULL;
	struct spx_ec2_pager pg;
	struct spx_ec2_page p;
	json_t *all = NULL, *sel = NULL, *rec;
	size_t i;
	int rc = -1;

	if (ids_or_pages(c) < 0)
		return -1;
	ec2_pager(c, min, INT32_MAX, 0, &pg);
	if (spx_ec2_page_begin(&pg, c->in, &p) < 0)
		return -1;
	if (p.max > cap)
		p.max = cap;
	if (spx_ec2_filters_compile(ft, json_object_get(c->in, "Filters"),
				    &fs) < 0 ||
	    selected(c, &all) < 0)
		goto out;
	sel = json_array();
	json_array_foreach(all, i, rec) {
		json_t *it = make(rec);

		if (!it)
			continue;
		if (spx_ec2_filters_match(fs, it) &&
		    spx_ec2_page_after(&p, vol_id(it)))
			json_array_append(sel, it);
		json_decref(it);
	}
	json_array_foreach(sel, i, rec) {
		size_t j;
		json_t *a;

		ec2_time_text_del(rec, "CreateTime");
		ec2_time_text_del(rec, "StartTime");
		json_array_foreach(json_object_get(rec, "Attachments"), j, a)
			ec2_time_text_del(a, "AttachTime");
	}
	rc = ec2_page_answer(c, &p, sel, vol_id, member, NULL);
out:
	json_decref(sel);
	json_decref(all);
	spx_ec2_filters_free(fs);
	spx_ec2_page_release(&p);
	return rc;
}

static json_t *volume_item(const json_t *rec)
{
	json_t *it = spx_ebs_item(rec), *a;
	size_t i;

	ec2_time_text(it, "CreateTime");
	json_array_foreach(json_object_get(it, "Attachments"), i, a)
		ec2_time_text(a, "AttachTime");
	return it;
}

int ec2_describe_volumes(struct ec2_call *c)
{
	return describe(c, &vol_filters, volume_item, "Volumes", 5, 500);
}

static json_t *modification_item(const json_t *rec)
{
	json_t *m = json_object_get(rec, "SpxModification");

	if (!json_is_object(m))
		return NULL;
	m = json_deep_copy(m);
	ec2_time_text(m, "StartTime");
	return m;
}

int ec2_describe_volumes_modifications(struct ec2_call *c)
{
	const json_t *ids = ec2_list(c, "VolumeIds");
	json_t *rec, *v;
	size_t i;

	/* A volume never modified has no modification to show. */
	json_array_foreach(ids, i, v) {
		bool none;

		if (spx_ebs_get(c->gw->state, c->account, json_string_value(v),
				&rec, NULL) < 0)
			return -1;
		none = !json_object_get(rec, "SpxModification");
		json_decref(rec);
		if (none)
			return spx_ec2_fault(400,
					     "InvalidVolumeModification.NotFound",
					     "Modification for volume '%s' does "
					     "not exist.",
					     json_string_value(v));
	}
	return describe(c, &mod_filters, modification_item,
			"VolumesModifications", 1, 500);
}

static json_t *status_item(const json_t *rec)
{
	const char *s = json_string_value(json_object_get(rec, "State"));
	const char *st = "ok";

	if (!s || !strcmp(s, "creating") || !strcmp(s, "deleting"))
		st = "insufficient-data";
	else if (!strcmp(s, "error"))
		st = "impaired";
	return json_pack("{s:O, s:O, s:{s:s, s:[{s:s, s:s}, {s:s, s:s}]}, "
			 "s:[], s:[]}",
			 "VolumeId", json_object_get(rec, "VolumeId"),
			 "AvailabilityZone",
			 json_object_get(rec, "AvailabilityZone"), "VolumeStatus",
			 "Status", st, "Details", "Name", "io-enabled", "Status",
			 strcmp(st, "impaired") ? "passed" : "failed", "Name",
			 "io-performance", "Status", "not-applicable", "Events",
			 "Actions");
}

int ec2_describe_volume_status(struct ec2_call *c)
{
	return describe(c, &status_filters, status_item, "VolumeStatuses", 5,
			1000);
}

int ec2_describe_volume_attribute(struct ec2_call *c)
{
	const char *attr = ec2_str(c, "Attribute");
	json_t *rec;

	if (spx_ebs_get(c->gw->state, c->account, ec2_str(c, "VolumeId"), &rec,
			NULL) < 0)
		return -1;
	json_object_set(c->out, "VolumeId", json_object_get(rec, "VolumeId"));
	json_decref(rec);
	if (!strcmp(attr, "autoEnableIO"))
		json_object_set_new(c->out, "AutoEnableIO",
				    json_pack("{s:b}", "Value", 0));
	else
		json_object_set_new(c->out, "ProductCodes", json_array());
	return 0;
}
