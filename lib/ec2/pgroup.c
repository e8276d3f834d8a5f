/* pgroup.c: placement groups in the record store (see pgroup.h). */
#include "spx.h"

#include "ec2/fault.h"
#include "ec2/instance.h"
#include "ec2/pgroup.h"
#include "ec2/rec.h"
#include "ec2/tags.h"
#include "ec2/volume.h"
#include "id.h"
#include "state/state.h"

static const struct spx_ec2_kind kind = {
	"placement-groups", "pg", "placement group", "GroupId",
	"InvalidPlacementGroup.Unknown", "InvalidPlacementGroupId.Malformed",
};

bool spx_pg_id_wellformed(const char *id)
{
	return spx_ec2_id_wellformed(id, "pg");
}

int spx_pg_name_check(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!name)
		return spx_ec2_fault_missing("GroupName");
	if (!n || n > SPX_PG_NAME_MAX)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "The placement group name must be 1 to %d "
				     "characters long.",
				     SPX_PG_NAME_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 ||
		    (unsigned char)name[i] > 0x7e)
			return spx_ec2_fault(400, "InvalidParameterValue",
					     "The placement group name may "
					     "hold only printable ASCII "
					     "characters.");
	return 0;
}

static int unknown(const char *name)
{
	return spx_ec2_fault(400, "InvalidPlacementGroup.Unknown",
			     "The Placement Group '%s' is unknown.", name);
}

int spx_pg_get(struct spx_state *st, const char *account, const char *id,
	       json_t **out)
{
	*out = NULL;
	return spx_ec2_kind_get(st, &kind, account, id, out, NULL);
}

int spx_pg_list(struct spx_state *st, const char *account, json_t **out)
{
	return spx_ec2_kind_list(st, &kind, account, out);
}

/* The record named name, or none (*out NULL, 0). */
static int by_name(struct spx_state *st, const char *account,
		   const char *name, json_t **out)
{
	json_t *all, *r;
	size_t i;

	*out = NULL;
	if (spx_pg_list(st, account, &all) < 0)
		return -1;
	json_array_foreach(all, i, r)
		if (!strcmp(spx_ec2_str0(r, "GroupName"), name)) {
			*out = json_incref(r);
			break;
		}
	json_decref(all);
	return 0;
}

int spx_pg_find(struct spx_state *st, const char *account, const char *name,
		json_t **out)
{
	if (by_name(st, account, name ? name : "", out) < 0)
		return -1;
	return *out ? 0 : unknown(name ? name : "");
}

/* The checks of CreatePlacementGroup's members; *count the partitions
 * (0: not a partition group), *level the spread level (NULL: none). */
static int check_create(const json_t *req, int64_t *count,
			const char **level)
{
	const char *strat = spx_ec2_str(req, "Strategy");
	const json_t *pc = json_object_get(req, "PartitionCount");

	*count = 0;
	*level = spx_ec2_str(req, "SpreadLevel");
	if (spx_pg_name_check(spx_ec2_str(req, "GroupName")) < 0)
		return -1;
	if (!strat)
		return spx_ec2_fault_missing("Strategy");
	if (strcmp(strat, "cluster") && strcmp(strat, "spread") &&
	    strcmp(strat, "partition"))
		return spx_ec2_fault_invalid("strategy", strat, NULL);
	if (pc && strcmp(strat, "partition"))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "PartitionCount is valid only when the "
				     "strategy is partition.");
	if (!strcmp(strat, "partition")) {
		*count = pc ? json_integer_value(pc) : 2;
		if (*count < 1 || *count > SPX_PG_PARTITIONS_MAX)
			return spx_ec2_fault(400, "InvalidParameterValue",
					     "The partition count (%lld) must "
					     "be between 1 and %d.",
					     (long long)*count,
					     SPX_PG_PARTITIONS_MAX);
	}
	if (*level && strcmp(strat, "spread"))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "SpreadLevel is valid only when the "
				     "strategy is spread.");
	if (*level && !strcmp(*level, "host"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "The spread level host is only for "
				     "placement groups on Outposts; use rack.");
	if (*level && strcmp(*level, "rack"))
		return spx_ec2_fault_invalid("spreadLevel", *level, NULL);
	if (!strcmp(strat, "spread") && !*level)
		*level = "rack";
	return 0;
}

int spx_pg_create(struct spx_state *st, const char *lock, const char *region,
		  const char *account, const json_t *req, const json_t *tags,
		  json_t **out)
{
	const char *name = spx_ec2_str(req, "GroupName");
	const char *level;
	char id[SPX_ID_SIZE];
	json_t *rec = NULL, *dup = NULL;
	int64_t count;
	char *arn, *key;
	int lk, rc;

	*out = NULL;
	if (!spx_account_id_valid(account))
		return spx_ec2_fault(500, "InternalError", "bad account");
	if (check_create(req, &count, &level) < 0)
		return -1;
	if (spx_id_new(id, sizeof(id), "pg") < 0)
		return spx_ec2_fault(500, "InternalError", "%s", spx_errmsg());
	arn = spx_xprintf("arn:aws:ec2:%s:%s:placement-group/%s", region,
			  account, name);
	rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "GroupName", name,
			"GroupId", id, "GroupArn", arn, "State", "available",
			"Strategy", spx_ec2_str(req, "Strategy"), "Tags",
			tags ? json_deep_copy(tags) : json_array());
	free(arn);
	if (count)
		json_object_set_new(rec, "PartitionCount", json_integer(count));
	if (level)
		json_object_set_new(rec, "SpreadLevel", json_string(level));
	/* The name is looked for and taken under the lock. */
	if ((lk = spx_ebs_lock(lock)) < 0) {
		json_decref(rec);
		return -1;
	}
	rc = by_name(st, account, name, &dup);
	if (rc == 0 && dup)
		rc = spx_ec2_fault(400, "InvalidPlacementGroup.Duplicate",
				   "The Placement Group '%s' already exists.",
				   name);
	if (rc == 0) {
		key = spx_ec2_kind_key(&kind, account, id);
		rc = spx_ec2_rec_put(st, key, rec, true, 0);
		free(key);
		if (rc < 0)
			rc = spx_ec2_state_fail(rc);
	}
	close(lk);
	json_decref(dup);
	if (rc < 0) {
		json_decref(rec);
		return -1;
	}
	*out = rec;
	return 0;
}

int spx_pg_delete(struct spx_state *st, const char *lock, const char *account,
		  const char *name)
{
	json_t *rec = NULL;
	int64_t n = 0;
	char *key;
	int lk, rc;

	if ((lk = spx_ebs_lock(lock)) < 0)
		return -1;
	rc = spx_pg_find(st, account, name, &rec);
	if (rc == 0)
		rc = spx_inst_pg_members(st, account,
					 spx_ec2_str0(rec, "GroupId"), &n);
	if (rc == 0 && n)
		rc = spx_ec2_fault(400, "InvalidPlacementGroup.InUse",
				   "The Placement Group '%s' is in use and may "
				   "not be deleted: %lld instance(s) are in it.",
				   name, (long long)n);
	if (rc == 0) {
		key = spx_ec2_kind_key(&kind, account,
				       spx_ec2_str0(rec, "GroupId"));
		rc = spx_state_delete(st, key, 0);
		free(key);
		if (rc == SPX_STATE_NOTFOUND)
			rc = 0;
		else if (rc < 0)
			rc = spx_ec2_state_fail(rc);
	}
	close(lk);
	json_decref(rec);
	return rc < 0 ? -1 : 0;
}

struct tags {
	const json_t *set, *unset;
};

static int do_tags(json_t *rec, void *arg)
{
	struct tags *t = arg;

	return spx_ec2_rec_tags(rec, t->set, t->unset);
}

int spx_pg_set_tags(struct spx_state *st, const char *account, const char *id,
		    const json_t *set, const json_t *unset)
{
	struct tags t = { set, unset };

	return spx_ec2_kind_change(st, &kind, account, id, do_tags, &t);
}

json_t *spx_pg_item(const json_t *rec)
{
	return spx_ec2_rec_item(rec);
}
