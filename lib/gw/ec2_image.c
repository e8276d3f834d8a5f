/* ec2_image.c: the AMI actions (RegisterImage, DescribeImages,
 * DeregisterImage, DescribeImageAttribute) over lib/ec2/image.h. An
 * image is a record naming EBS snapshots; nothing is copied, so the
 * actions answer at once. */
#include "spx.h"

#include "ec2/filter.h"
#include "ec2/image.h"
#include "ec2/instance.h"
#include "ec2/rec.h"
#include "ec2/tags.h"
#include "gw/ec2_int.h"
#include "node/agent.h"

static const struct spx_ec2_filter_field image_fields[] = {
	{ "architecture", "Architecture" },
	{ "block-device-mapping.delete-on-termination",
	  "BlockDeviceMappings.Ebs.DeleteOnTermination" },
	{ "block-device-mapping.device-name", "BlockDeviceMappings.DeviceName" },
	{ "block-device-mapping.encrypted", "BlockDeviceMappings.Ebs.Encrypted" },
	{ "block-device-mapping.snapshot-id",
	  "BlockDeviceMappings.Ebs.SnapshotId" },
	{ "block-device-mapping.volume-size",
	  "BlockDeviceMappings.Ebs.VolumeSize" },
	{ "block-device-mapping.volume-type",
	  "BlockDeviceMappings.Ebs.VolumeType" },
	{ "boot-mode", "BootMode" },
	{ "creation-date", "CreationDate" },
	{ "description", "Description" },
	{ "ena-support", "EnaSupport" },
	{ "hypervisor", "Hypervisor" },
	{ "image-id", "ImageId" },
	{ "image-type", "ImageType" },
	{ "is-public", "Public" },
	{ "manifest-location", "ImageLocation" },
	{ "name", "Name" },
	{ "owner-alias", "ImageOwnerAlias" },
	{ "owner-id", "OwnerId" },
	{ "platform-details", "PlatformDetails" },
	{ "root-device-name", "RootDeviceName" },
	{ "root-device-type", "RootDeviceType" },
	{ "state", "State" },
	{ "state-reason-code", "StateReason.Code" },
	{ "state-reason-message", "StateReason.Message" },
	{ "usage-operation", "UsageOperation" },
	{ "virtualization-type", "VirtualizationType" },
};
static const struct spx_ec2_filter_table image_filters = {
	image_fields, SPX_ARRAY_SIZE(image_fields), "Tags"
};

int ec2_register_image(struct ec2_call *c)
{
	char *lock = ec2_ebs_lock_path(c);
	json_t *tags = NULL, *rec = NULL;
	int rc = -1;

	/* TagSpecifications came to RegisterImage after the model the
	 * tables are made from (2023): a `member` line of
	 * scripts/ec2-actions.txt adds it, for the SDKs that send it. */
	if (spx_ec2_tagspec(json_object_get(c->in, "TagSpecifications"),
			    "image", &tags) < 0 ||
	    spx_ec2_image_register(c->gw->state, lock, c->account, c->in,
				   tags, NULL, c->now, &rec) < 0)
		goto out;
	json_object_set(c->out, "ImageId", json_object_get(rec, "ImageId"));
	rc = 0;
out:
	json_decref(tags);
	json_decref(rec);
	free(lock);
	return rc;
}

/* CreateImage's TagSpecifications name the image, its snapshot, or
 * both: each type's tags, anything else refused as everywhere. */
static int image_tagspecs(const json_t *specs, json_t **img, json_t **snap)
{
	json_t *mine[2] = { json_array(), json_array() }, *sp;
	static const char *const types[2] = { "image", "snapshot" };
	size_t i;
	int rc = 0;

	*img = *snap = NULL;
	json_array_foreach(specs, i, sp) {
		const char *t = spx_ec2_str(sp, "ResourceType");
		bool snapshot = t && !strcmp(t, "snapshot");

		json_array_append(mine[snapshot], sp);
	}
	/* What is neither is in the image's list, which refuses it. */
	rc = spx_ec2_tagspec(mine[0], types[0], img) < 0 ||
			     spx_ec2_tagspec(mine[1], types[1], snap) < 0
		     ? -1
		     : 0;
	json_decref(mine[0]);
	json_decref(mine[1]);
	return rc;
}

int ec2_create_image(struct ec2_call *c)
{
	const char *id = ec2_str(c, "InstanceId");
	char *lock = ec2_ebs_lock_path(c);
	json_t *inst = NULL, *itags = NULL, *stags = NULL, *rec = NULL;
	int rc = -1;

	if (!id) {
		spx_ec2_fault_missing("InstanceId");
		goto out;
	}
	if (image_tagspecs(json_object_get(c->in, "TagSpecifications"), &itags,
			   &stags) < 0 ||
	    spx_inst_get(c->gw->state, c->account, id, &inst) < 0 ||
	    spx_ec2_image_create(c->gw->state, lock, c->account, c->in, inst,
				 itags, stags, c->now, &rec) < 0)
		goto out;
	ec2_wake(c);
	json_object_set(c->out, "ImageId", json_object_get(rec, "ImageId"));
	rc = 0;
out:
	json_decref(inst);
	json_decref(itags);
	json_decref(stags);
	json_decref(rec);
	free(lock);
	return rc;
}

int ec2_deregister_image(struct ec2_call *c)
{
	return spx_ec2_image_deregister(c->gw->state, c->account,
					ec2_str(c, "ImageId"));
}

static const char *image_id(const json_t *item)
{
	return json_string_value(json_object_get(item, "ImageId"));
}

/* ExecutableUsers: "self", account ids, "all" (public images). Only an
 * image's owner may launch it until launch permissions come. */
static bool executable_wanted(const json_t *users, const char *account,
			      const json_t *rec)
{
	const char *owner = spx_ec2_str0(rec, "OwnerId");
	const json_t *u;
	size_t i;

	if (!json_array_size(users))
		return true;
	json_array_foreach(users, i, u) {
		const char *s = json_string_value(u);

		if (s && !strcmp(s, "self"))
			s = account;
		if (s && !strcmp(s, owner))
			return true;
		if (s && !strcmp(s, "all") &&
		    json_is_true(json_object_get(rec, "Public")))
			return true;
	}
	return false;
}

/* The records of the ids asked for (else the fault for the first that
 * is not the caller's), sorted by id, once each. */
static int get_ids(struct ec2_call *c, const json_t *ids, json_t **out)
{
	const json_t *v;
	size_t i;

	*out = json_array();
	/* Every id well-formed first: a malformed one is that, whatever
	 * comes before it. */
	json_array_foreach(ids, i, v)
		if (!spx_ec2_image_id_wellformed(json_string_value(v))) {
			json_decref(*out);
			*out = NULL;
			return spx_ec2_fault(400, "InvalidAMIID.Malformed",
					     "Invalid id: \"%s\" (expecting "
					     "\"ami-...\")",
					     json_string_value(v));
		}
	json_array_foreach(ids, i, v) {
		json_t *rec;

		if (spx_ec2_image_get(c->gw->state, c->account,
				      json_string_value(v), &rec) < 0) {
			json_decref(*out);
			*out = NULL;
			return -1;
		}
		json_array_append_new(*out, rec);
	}
	spx_ec2_sort_by(*out, "ImageId");
	for (i = 1; i < json_array_size(*out);)
		if (!strcmp(image_id(json_array_get(*out, i)),
			    image_id(json_array_get(*out, i - 1))))
			json_array_remove(*out, i);
		else
			i++;
	return 0;
}

int ec2_describe_images(struct ec2_call *c)
{
	const json_t *ids = ec2_list(c, "ImageIds");
	const json_t *owners = ec2_list(c, "Owners");
	const json_t *users = ec2_list(c, "ExecutableUsers");
	struct spx_ec2_filters *fs = NULL;
	struct spx_ec2_pager pg;
	struct spx_ec2_page p;
	json_t *all = NULL, *sel = NULL, *rec;
	size_t i;
	int rc = -1;

	if (json_array_size(ids) && json_object_get(c->in, "MaxResults"))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "The parameter imageIdSet cannot be used "
				     "with the parameter maxResults");
	ec2_pager(c, 1, 1000, 0, &pg);
	if (spx_ec2_page_begin(&pg, c->in, &p) < 0)
		return -1;
	if (spx_ec2_filters_compile(&image_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0 ||
	    (json_array_size(ids)
		     ? get_ids(c, ids, &all)
		     : spx_ec2_image_list(c->gw->state, c->account, &all)) < 0)
		goto out;
	sel = json_array();
	json_array_foreach(all, i, rec) {
		json_t *it;

		if (!ec2_owner_wanted(owners, c->account,
				      spx_ec2_str0(rec, "OwnerId")) ||
		    !executable_wanted(users, c->account, rec))
			continue;
		it = spx_ec2_image_item(rec);
		if (spx_ec2_filters_match(fs, it) &&
		    spx_ec2_page_after(&p, image_id(it)))
			json_array_append(sel, it);
		json_decref(it);
	}
	rc = ec2_page_answer(c, &p, sel, image_id, "Images", NULL);
out:
	json_decref(sel);
	json_decref(all);
	spx_ec2_filters_free(fs);
	spx_ec2_page_release(&p);
	return rc;
}

static void attr_value(json_t *out, const char *member, const json_t *v)
{
	if (json_is_string(v))
		json_object_set_new(out, member, json_pack("{s:O}", "Value", v));
	else
		json_object_set_new(out, member, json_object());
}

int ec2_describe_image_attribute(struct ec2_call *c)
{
	const char *attr = ec2_str(c, "Attribute");
	json_t *rec;

	if (spx_ec2_image_get(c->gw->state, c->account, ec2_str(c, "ImageId"),
			      &rec) < 0)
		return -1;
	json_object_set(c->out, "ImageId", json_object_get(rec, "ImageId"));
	if (!strcmp(attr, "description"))
		attr_value(c->out, "Description",
			   json_object_get(rec, "Description"));
	else if (!strcmp(attr, "bootMode"))
		attr_value(c->out, "BootMode", json_object_get(rec, "BootMode"));
	else if (!strcmp(attr, "imdsSupport"))
		attr_value(c->out, "ImdsSupport",
			   json_object_get(rec, "ImdsSupport"));
	else if (!strcmp(attr, "sriovNetSupport"))
		attr_value(c->out, "SriovNetSupport",
			   json_object_get(rec, "SriovNetSupport"));
	else if (!strcmp(attr, "kernel"))
		attr_value(c->out, "KernelId", NULL);
	else if (!strcmp(attr, "ramdisk"))
		attr_value(c->out, "RamdiskId", NULL);
	else if (!strcmp(attr, "blockDeviceMapping"))
		json_object_set(c->out, "BlockDeviceMappings",
				json_object_get(rec, "BlockDeviceMappings"));
	else if (!strcmp(attr, "launchPermission"))
		/* Only the owner launches it: no permission to list. */
		json_object_set_new(c->out, "LaunchPermissions", json_array());
	else if (!strcmp(attr, "productCodes"))
		json_object_set_new(c->out, "ProductCodes", json_array());
	/* tpmSupport, uefiData, lastLaunchedTime: none, as EC2 answers an
	 * image that has none. */
	json_decref(rec);
	return 0;
}
