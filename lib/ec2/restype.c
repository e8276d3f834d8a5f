/* restype.c: the taggable resource types (see tags.h): each row and the
 * two small functions that reach its records. A new kind of resource
 * adds its row here. */
#include "spx.h"

#include "ec2/fault.h"
#include "ec2/image.h"
#include "ec2/instance.h"
#include "ec2/keypair.h"
#include "ec2/launchtemplate.h"
#include "ec2/pgroup.h"
#include "ec2/snapshot.h"
#include "ec2/tags.h"
#include "ec2/volume.h"

/* ---- key pairs ---------------------------------------------------- */

/* A TagList as a Key -> Value list (a Value absent: ""). */
static void tags_to_kv(const json_t *tags, struct spx_kvlist *out)
{
	size_t i;
	json_t *t;

	json_array_foreach(tags, i, t) {
		const char *v = json_string_value(json_object_get(t, "Value"));

		spx_kv_add(out, json_string_value(json_object_get(t, "Key")),
			   v ? v : "");
	}
}

static json_t *kv_to_tags(const struct spx_kvlist *kv)
{
	json_t *a = json_array();

	for (size_t i = 0; i < kv->n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s}", "Key",
						   kv->v[i].k, "Value",
						   kv->v[i].v));
	return a;
}

static int kp_get_tags(struct spx_state *st, const char *account,
		       const char *id, json_t **tags)
{
	struct spx_keypair k;
	int rc = spx_keypair_get(st, account, id, NULL, &k);

	*tags = NULL;
	if (rc < 0)
		return spx_ec2_fault_rc(rc, id);
	*tags = kv_to_tags(&k.tags);
	spx_keypair_release(&k);
	return 0;
}

static int kp_set_tags(struct spx_state *st, const char *account,
		       const char *id, const json_t *set,
		       const json_t *unset)
{
	struct spx_kvlist kset = SPX_KVLIST_INIT;
	size_t n = json_array_size(unset), i;
	struct spx_kv *kun = spx_calloc(n ? n : 1, sizeof(*kun));
	json_t *t;
	int rc;

	tags_to_kv(set, &kset);
	json_array_foreach(unset, i, t) {
		/* A key alone removes the tag whatever its value. */
		kun[i].k = (char *)json_string_value(json_object_get(t, "Key"));
		kun[i].v = (char *)json_string_value(json_object_get(t, "Value"));
	}
	rc = spx_keypair_set_tags(st, account, id, set ? &kset : NULL, kun, n);
	spx_kv_free(&kset);
	free(kun);
	return rc < 0 ? spx_ec2_fault_rc(rc, id) : 0;
}

static int kp_list_tags(struct spx_state *st, const char *account,
			json_t *out)
{
	struct spx_keypair *v;
	size_t n;
	int rc = spx_keypair_list(st, account, &v, &n);

	if (rc < 0)
		return spx_ec2_fault_rc(rc, NULL);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(out, json_pack("{s:s, s:o}", "ResourceId",
						     v[i].id, "Tags",
						     kv_to_tags(&v[i].tags)));
	spx_keypair_list_free(v, n);
	return 0;
}

static const struct spx_ec2_restype keypairs = {
	"key", "key-pair", kp_get_tags, kp_set_tags, kp_list_tags,
};

/* ---- launch templates --------------------------------------------- */

/* The tags of a JSON record (a new reference; [] when it has none). */
static json_t *rec_tags(json_t *rec)
{
	json_t *t = json_incref(json_object_get(rec, "Tags"));

	json_decref(rec);
	return t ? t : json_array();
}

/* {"ResourceId", "Tags"} of each record of all (which it takes). */
static void rec_list_tags(json_t *all, const char *idkey, json_t *out)
{
	json_t *rec;
	size_t i;

	json_array_foreach(all, i, rec)
		json_array_append_new(
			out, json_pack("{s:O, s:O}", "ResourceId",
				       json_object_get(rec, idkey), "Tags",
				       json_object_get(rec, "Tags")));
	json_decref(all);
}

static int lt_get_tags(struct spx_state *st, const char *account,
		       const char *id, json_t **tags)
{
	json_t *rec;

	*tags = NULL;
	if (spx_lt_get(st, account, id, NULL, &rec) < 0)
		return -1;
	*tags = rec_tags(rec);
	return 0;
}

static int lt_list_tags(struct spx_state *st, const char *account,
			json_t *out)
{
	json_t *all;

	if (spx_lt_list(st, account, &all) < 0)
		return -1;
	rec_list_tags(all, "LaunchTemplateId", out);
	return 0;
}

static const struct spx_ec2_restype launch_templates = {
	"lt", "launch-template", lt_get_tags, spx_lt_set_tags, lt_list_tags,
};

/* ---- volumes ------------------------------------------------------- */

/* Tagging names a malformed id InvalidID, as for any type. */
static int vol_id_check(const char *id)
{
	if (!spx_ebs_id_wellformed(id))
		return spx_ec2_fault(400, "InvalidID", "The ID '%s' is not valid",
				     id);
	return 0;
}

static int vol_get_tags(struct spx_state *st, const char *account,
			const char *id, json_t **tags)
{
	json_t *rec;

	*tags = NULL;
	if (vol_id_check(id) < 0 ||
	    spx_ebs_get(st, account, id, &rec, NULL) < 0)
		return -1;
	*tags = rec_tags(rec);
	return 0;
}

static int vol_list_tags(struct spx_state *st, const char *account,
			 json_t *out)
{
	json_t *all;

	if (spx_ebs_list(st, account, &all) < 0)
		return -1;
	rec_list_tags(all, "VolumeId", out);
	return 0;
}

static int vol_set_tags(struct spx_state *st, const char *account,
			const char *id, const json_t *set, const json_t *unset)
{
	return vol_id_check(id) < 0
		       ? -1
		       : spx_ebs_set_tags(st, account, id, set, unset);
}

static const struct spx_ec2_restype volumes = {
	"vol", "volume", vol_get_tags, vol_set_tags, vol_list_tags,
};

static int snap_id_check(const char *id)
{
	if (!spx_ebs_snap_id_wellformed(id))
		return spx_ec2_fault(400, "InvalidID", "The ID '%s' is not valid",
				     id);
	return 0;
}

/* Tags are the owner's: another account's snapshot is not found, even
 * one shared with the caller. */
static int snap_get_tags(struct spx_state *st, const char *account,
			 const char *id, json_t **tags)
{
	json_t *rec;

	*tags = NULL;
	if (snap_id_check(id) < 0 ||
	    spx_ebs_snap_get(st, account, id, false, &rec) < 0)
		return -1;
	*tags = rec_tags(rec);
	return 0;
}

static int snap_list_tags(struct spx_state *st, const char *account,
			  json_t *out)
{
	json_t *all, *own = json_array(), *r;
	size_t i;

	if (spx_ebs_snap_list(st, account, &all) < 0) {
		json_decref(own);
		return -1;
	}
	json_array_foreach(all, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "OwnerId")),
			    account))
			json_array_append(own, r);
	json_decref(all);
	rec_list_tags(own, "SnapshotId", out);
	return 0;
}

static int snap_set_tags(struct spx_state *st, const char *account,
			 const char *id, const json_t *set, const json_t *unset)
{
	return snap_id_check(id) < 0
		       ? -1
		       : spx_ebs_snap_set_tags(st, account, id, set, unset);
}

static const struct spx_ec2_restype snapshots = {
	"snap", "snapshot", snap_get_tags, snap_set_tags, snap_list_tags,
};

/* ---- images ------------------------------------------------------- */

static int ami_id_check(const char *id)
{
	if (!spx_ec2_image_id_wellformed(id))
		return spx_ec2_fault(400, "InvalidID", "The ID '%s' is not valid",
				     id);
	return 0;
}

static int ami_get_tags(struct spx_state *st, const char *account,
			const char *id, json_t **tags)
{
	json_t *rec;

	*tags = NULL;
	if (ami_id_check(id) < 0 ||
	    spx_ec2_image_get(st, account, id, &rec) < 0)
		return -1;
	*tags = rec_tags(rec);
	return 0;
}

static int ami_list_tags(struct spx_state *st, const char *account,
			 json_t *out)
{
	json_t *all;

	if (spx_ec2_image_list(st, account, &all) < 0)
		return -1;
	rec_list_tags(all, "ImageId", out);
	return 0;
}

static int ami_set_tags(struct spx_state *st, const char *account,
			const char *id, const json_t *set, const json_t *unset)
{
	return ami_id_check(id) < 0
		       ? -1
		       : spx_ec2_image_set_tags(st, account, id, set, unset);
}

static const struct spx_ec2_restype images = {
	"ami", "image", ami_get_tags, ami_set_tags, ami_list_tags,
};

/* ---- instances ---------------------------------------------------- */

static int inst_id_check(const char *id)
{
	if (!spx_inst_id_wellformed(id))
		return spx_ec2_fault(400, "InvalidID", "The ID '%s' is not valid",
				     id);
	return 0;
}

static int inst_get_tags(struct spx_state *st, const char *account,
			 const char *id, json_t **tags)
{
	json_t *rec;

	*tags = NULL;
	if (inst_id_check(id) < 0 || spx_inst_get(st, account, id, &rec) < 0)
		return -1;
	*tags = rec_tags(rec);
	return 0;
}

static int inst_list_tags(struct spx_state *st, const char *account,
			  json_t *out)
{
	json_t *all;

	if (spx_inst_list(st, account, time(NULL), &all) < 0)
		return -1;
	rec_list_tags(all, "InstanceId", out);
	return 0;
}

static int inst_set_tags(struct spx_state *st, const char *account,
			 const char *id, const json_t *set, const json_t *unset)
{
	return inst_id_check(id) < 0
		       ? -1
		       : spx_inst_set_tags(st, account, id, set, unset);
}

static const struct spx_ec2_restype instances = {
	"i", "instance", inst_get_tags, inst_set_tags, inst_list_tags,
};

/* ---- placement groups --------------------------------------------- */

static int pg_id_check(const char *id)
{
	if (!spx_pg_id_wellformed(id))
		return spx_ec2_fault(400, "InvalidID", "The ID '%s' is not valid",
				     id);
	return 0;
}

static int pg_get_tags(struct spx_state *st, const char *account,
		       const char *id, json_t **tags)
{
	json_t *rec;

	*tags = NULL;
	if (pg_id_check(id) < 0 || spx_pg_get(st, account, id, &rec) < 0)
		return -1;
	*tags = rec_tags(rec);
	return 0;
}

static int pg_list_tags(struct spx_state *st, const char *account,
			json_t *out)
{
	json_t *all;

	if (spx_pg_list(st, account, &all) < 0)
		return -1;
	rec_list_tags(all, "GroupId", out);
	return 0;
}

static int pg_set_tags(struct spx_state *st, const char *account,
		       const char *id, const json_t *set, const json_t *unset)
{
	return pg_id_check(id) < 0 ? -1
				   : spx_pg_set_tags(st, account, id, set, unset);
}

static const struct spx_ec2_restype placement_groups = {
	"pg", "placement-group", pg_get_tags, pg_set_tags, pg_list_tags,
};

const struct spx_ec2_restype *const spx_ec2_restypes[] = {
	&keypairs,
	&launch_templates,
	&volumes,
	&snapshots,
	&images,
	&instances,
	&placement_groups,
	NULL,
};
