/* ec2_pgroup.c: the placement group actions (CreatePlacementGroup,
 * DescribePlacementGroups, DeletePlacementGroup) over lib/ec2/pgroup.h.
 * Groups are records only: RunInstances checks membership (instance.h). */
#include "spx.h"

#include "ec2/filter.h"
#include "ec2/pgroup.h"
#include "ec2/rec.h"
#include "ec2/tags.h"
#include "file.h"
#include "gw/ec2_int.h"

static const struct spx_ec2_filter_field pg_fields[] = {
	{ "group-arn", "GroupArn" },
	{ "group-id", "GroupId" },
	{ "group-name", "GroupName" },
	{ "spread-level", "SpreadLevel" },
	{ "state", "State" },
	{ "strategy", "Strategy" },
};
static const struct spx_ec2_filter_table pg_filters = {
	pg_fields, SPX_ARRAY_SIZE(pg_fields), "Tags"
};

static char *lock_path(const struct ec2_call *c)
{
	return spx_path_join(c->gw->conf->paths.run, "instances.lock");
}

int ec2_create_placement_group(struct ec2_call *c)
{
	char *lock = lock_path(c);
	json_t *tags = NULL, *rec = NULL;
	int rc = -1;

	if (spx_ec2_tagspec(json_object_get(c->in, "TagSpecifications"),
			    "placement-group", &tags) < 0 ||
	    spx_pg_create(c->gw->state, lock, c->gw->conf->aws.region,
			  c->account, c->in, tags, &rec) < 0)
		goto out;
	json_object_set_new(c->out, "PlacementGroup", spx_pg_item(rec));
	rc = 0;
out:
	json_decref(rec);
	json_decref(tags);
	free(lock);
	return rc;
}

int ec2_delete_placement_group(struct ec2_call *c)
{
	char *lock = lock_path(c);
	int rc = spx_pg_delete(c->gw->state, lock, c->account,
			       ec2_str(c, "GroupName"));

	free(lock);
	return rc;
}

/* Is rec named by list (of member k of each record; an empty list names
 * all)? */
static bool named(const json_t *list, const json_t *rec, const char *k)
{
	size_t i;
	json_t *v;

	if (!json_array_size(list))
		return true;
	json_array_foreach(list, i, v)
		if (json_equal(v, json_object_get(rec, k)))
			return true;
	return false;
}

int ec2_describe_placement_groups(struct ec2_call *c)
{
	const json_t *names = ec2_list(c, "GroupNames");
	const json_t *ids = ec2_list(c, "GroupIds");
	struct spx_ec2_filters *fs = NULL;
	json_t *all = NULL, *sel, *rec, *v;
	size_t i;
	int rc = -1;

	/* Every name and id named must be there, as EC2 has it. */
	json_array_foreach(names, i, v) {
		if (spx_pg_find(c->gw->state, c->account, json_string_value(v),
				&rec) < 0)
			return -1;
		json_decref(rec);
	}
	json_array_foreach(ids, i, v) {
		if (spx_pg_get(c->gw->state, c->account, json_string_value(v),
			       &rec) < 0)
			return -1;
		json_decref(rec);
	}
	if (spx_ec2_filters_compile(&pg_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0 ||
	    spx_pg_list(c->gw->state, c->account, &all) < 0)
		goto out;
	sel = json_array();
	json_array_foreach(all, i, rec) {
		json_t *it;

		if (!named(names, rec, "GroupName") || !named(ids, rec, "GroupId"))
			continue;
		it = spx_pg_item(rec);
		if (spx_ec2_filters_match(fs, it))
			json_array_append(sel, it);
		json_decref(it);
	}
	json_object_set_new(c->out, "PlacementGroups", sel);
	rc = 0;
out:
	json_decref(all);
	spx_ec2_filters_free(fs);
	return rc;
}
