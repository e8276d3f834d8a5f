/* ec2_region.c: DescribeRegions, DescribeAvailabilityZones and
 * DescribeAccountAttributes: the probes that the CLI, the SDKs and
 * Terraform make first. */
#include "spx.h"

#include "ec2/filter.h"
#include "ec2/region.h"
#include "gw/ec2_int.h"

/* Keep the items that pass the request's filters (and want, when given:
 * a list of names that must all exist, looked up in member). */
static int select_items(struct ec2_call *c, json_t *items,
			const struct spx_ec2_filter_table *t, json_t **out)
{
	struct spx_ec2_filters *fs;
	size_t i;
	json_t *e;

	*out = NULL;
	if (spx_ec2_filters_compile(t, json_object_get(c->in, "Filters"),
				    &fs) < 0)
		return -1;
	*out = json_array();
	json_array_foreach(items, i, e)
		if (spx_ec2_filters_match(fs, e))
			json_array_append(*out, e);
	spx_ec2_filters_free(fs);
	return 0;
}

/* Is every name of list found in items' member? The first one that is
 * not, or NULL. */
static const char *missing(const json_t *list, const json_t *items,
			   const char *member)
{
	size_t i, j;
	json_t *n, *e;

	json_array_foreach(list, i, n) {
		bool found = false;

		json_array_foreach(items, j, e)
			found |= json_equal(json_object_get(e, member), n);
		if (!found)
			return json_string_value(n);
	}
	return NULL;
}

/* Drop the items whose member is not in list (when list is not empty). */
static void keep_named(json_t *items, const json_t *list, const char *member)
{
	size_t i, j;
	json_t *n;

	if (!json_array_size(list))
		return;
	for (i = 0; i < json_array_size(items);) {
		bool named = false;

		json_array_foreach(list, j, n)
			named |= json_equal(
				json_object_get(json_array_get(items, i), member),
				n);
		if (named)
			i++;
		else
			json_array_remove(items, i);
	}
}

int ec2_describe_regions(struct ec2_call *c)
{
	json_t *all = spx_ec2_regions(c->gw->conf, c->gw->self), *sel;
	const char *bad = missing(ec2_list(c, "RegionNames"), all, "RegionName");
	int rc = -1;

	if (bad) {
		spx_ec2_fault(400, "InvalidParameterValue", "Invalid region: %s",
			      bad);
		goto out;
	}
	keep_named(all, ec2_list(c, "RegionNames"), "RegionName");
	if (select_items(c, all, &spx_ec2_region_filters, &sel) < 0)
		goto out;
	json_object_set_new(c->out, "Regions", sel);
	rc = 0;
out:
	json_decref(all);
	return rc;
}

int ec2_describe_zones(struct ec2_call *c)
{
	json_t *all = spx_ec2_zones(c->gw->conf), *sel;
	const json_t *names = ec2_list(c, "ZoneNames"),
		     *ids = ec2_list(c, "ZoneIds");
	const char *bad = missing(names, all, "ZoneName");
	int rc = -1;

	if (!bad)
		bad = missing(ids, all, "ZoneId");
	if (bad) {
		spx_ec2_fault(400, "InvalidParameterValue",
			      "Invalid availability zone: [%s]", bad);
		goto out;
	}
	/* Zones named either way. */
	if (json_array_size(names) || json_array_size(ids)) {
		for (size_t i = 0; i < json_array_size(all);) {
			json_t *z = json_array_get(all, i), *n;
			bool named = false;
			size_t j;

			json_array_foreach(names, j, n)
				named |= json_equal(json_object_get(z, "ZoneName"),
						    n);
			json_array_foreach(ids, j, n)
				named |= json_equal(json_object_get(z, "ZoneId"),
						    n);
			if (named)
				i++;
			else
				json_array_remove(all, i);
		}
	}
	if (select_items(c, all, &spx_ec2_zone_filters, &sel) < 0)
		goto out;
	json_object_set_new(c->out, "AvailabilityZones", sel);
	rc = 0;
out:
	json_decref(all);
	return rc;
}

int ec2_describe_account_attributes(struct ec2_call *c)
{
	json_t *all = spx_ec2_account_attributes();
	const json_t *want = ec2_list(c, "AttributeNames");
	const char *bad = missing(want, all, "AttributeName");

	if (bad) {
		json_decref(all);
		return spx_ec2_fault_invalid("attributeName", bad,
				       "Unknown attribute.");
	}
	keep_named(all, want, "AttributeName");
	json_object_set_new(c->out, "AccountAttributes", all);
	return 0;
}
