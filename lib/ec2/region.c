/* region.c: regions, zones and account attributes (see region.h). */
#include "spx.h"

#include "ec2/region.h"

static const struct spx_ec2_filter_field region_fields[] = {
	{ "endpoint", "Endpoint" },
	{ "opt-in-status", "OptInStatus" },
	{ "region-name", "RegionName" },
};
const struct spx_ec2_filter_table spx_ec2_region_filters = {
	region_fields, SPX_ARRAY_SIZE(region_fields), NULL
};

static const struct spx_ec2_filter_field zone_fields[] = {
	{ "group-name", "GroupName" },
	{ "message", "Messages.Message" },
	{ "opt-in-status", "OptInStatus" },
	{ "parent-zone-id", "ParentZoneId" },
	{ "parent-zone-name", "ParentZoneName" },
	{ "region-name", "RegionName" },
	{ "state", "State" },
	{ "zone-id", "ZoneId" },
	{ "zone-name", "ZoneName" },
	{ "zone-type", "ZoneType" },
};
const struct spx_ec2_filter_table spx_ec2_zone_filters = {
	zone_fields, SPX_ARRAY_SIZE(zone_fields), NULL
};

json_t *spx_ec2_regions(const struct spx_conf *c,
			const struct spx_conf_node *self)
{
	char endpoint[300];

	snprintf(endpoint, sizeof(endpoint), "%s:%d", self->host,
		 (int)self->gw.ec2_port);
	return json_pack("[{s:s, s:s, s:s}]", "RegionName", c->aws.region,
			 "Endpoint", endpoint, "OptInStatus",
			 "opt-in-not-required");
}

void spx_ec2_zone_id(const char *region, const char *zone, char *out,
		     size_t outsz)
{
	struct spx_buf b = SPX_BUF_INIT;
	const char *p = region, *dash;
	bool first = true;
	size_t zl = strlen(zone);

	/* The first word whole, then the initial of each other word
	 * ("north"/"south" keep their sixth letter: "ne" of northeast). */
	while ((dash = strchr(p, '-'))) {
		size_t l = (size_t)(dash - p);

		if (first)
			spx_buf_add(&b, p, l);
		else if (l > 5 && (!strncmp(p, "north", 5) ||
				   !strncmp(p, "south", 5)))
			spx_buf_addf(&b, "%c%c", p[0], p[5]);
		else
			spx_buf_addc(&b, p[0]);
		first = false;
		p = dash + 1;
	}
	snprintf(out, outsz, "%s%s-az%d", b.p, p,
		 zl ? zone[zl - 1] - 'a' + 1 : 0);
	spx_buf_release(&b);
}

json_t *spx_ec2_zones(const struct spx_conf *c)
{
	json_t *zs = json_array();

	for (size_t i = 0; i < c->n_nodes; i++) {
		const char *az = c->nodes[i].az;
		bool dup = false;
		char id[64];

		for (size_t j = 0; j < i; j++)
			dup |= !strcmp(c->nodes[j].az, az);
		if (dup)
			continue;
		spx_ec2_zone_id(c->aws.region, az, id, sizeof(id));
		json_array_append_new(
			zs, json_pack("{s:s, s:s, s:[], s:s, s:s, s:s, s:s, "
				      "s:s, s:s}",
				      "State", "available", "OptInStatus",
				      "opt-in-not-required", "Messages",
				      "RegionName", c->aws.region, "ZoneName",
				      az, "ZoneId", id, "GroupName",
				      c->aws.region, "NetworkBorderGroup",
				      c->aws.region, "ZoneType",
				      "availability-zone"));
	}
	return zs;
}

json_t *spx_ec2_account_attributes(void)
{
	static const struct {
		const char *name, *value;
	} attrs[] = {
		{ "supported-platforms", "VPC" },
		{ "default-vpc", "none" },
		{ "max-instances", "20" },
		{ "vpc-max-security-groups-per-interface", "5" },
		{ "max-elastic-ips", "5" },
		{ "vpc-max-elastic-ips", "5" },
	};
	json_t *a = json_array();

	for (size_t i = 0; i < SPX_ARRAY_SIZE(attrs); i++)
		json_array_append_new(
			a, json_pack("{s:s, s:[{s:s}]}", "AttributeName",
				     attrs[i].name, "AttributeValues",
				     "AttributeValue", attrs[i].value));
	return a;
}

json_t *spx_ec2_locations(const struct spx_conf *c, const char *type)
{
	json_t *zs, *z, *out;
	size_t i;

	if (!strcmp(type, "region"))
		return json_pack("[s]", c->aws.region);
	if (strcmp(type, "availability-zone") &&
	    strcmp(type, "availability-zone-id"))
		return NULL;
	zs = spx_ec2_zones(c);
	out = json_array();
	json_array_foreach(zs, i, z)
		json_array_append(out, json_object_get(
					       z, strcmp(type, "availability-zone")
							  ? "ZoneId"
							  : "ZoneName"));
	json_decref(zs);
	return out;
}
