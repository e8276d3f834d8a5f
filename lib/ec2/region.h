/* region.h: the region, its availability zones and the account's
 * attributes as EC2 describes them, from the node's configuration: one
 * region ([aws] region), one zone per distinct `az` among the nodes, in
 * node order. Items are JSON objects in EC2's shapes (Region,
 * AvailabilityZone, AccountAttribute) and each kind has the filter table
 * EC2 documents for it. */
#ifndef SPX_EC2_REGION_H
#define SPX_EC2_REGION_H

#include <jansson.h>

#include "conf/conf.h"
#include "ec2/filter.h"

/* [Region]: RegionName, Endpoint (host:ec2 port of this node),
 * OptInStatus. */
json_t *spx_ec2_regions(const struct spx_conf *c,
			const struct spx_conf_node *self);
/* [AvailabilityZone] with AWS's zone ids ("use1-az1" for us-east-1a). */
json_t *spx_ec2_zones(const struct spx_conf *c);
/* [AccountAttribute]: supported-platforms, default-vpc, max-instances,
 * ... */
json_t *spx_ec2_account_attributes(void);

/* The locations of a LocationType as EC2 names them: "region" -> the
 * region, "availability-zone" -> the zone names, "availability-zone-id"
 * -> the zone ids (in zone order). NULL for another type. */
json_t *spx_ec2_locations(const struct spx_conf *c, const char *type);

/* AWS's zone id for a zone of a region: "use1-az1" for us-east-1a,
 * "apse2-az2" for ap-southeast-2b. */
void spx_ec2_zone_id(const char *region, const char *zone, char *out,
		     size_t outsz);

extern const struct spx_ec2_filter_table spx_ec2_region_filters;
extern const struct spx_ec2_filter_table spx_ec2_zone_filters;

#endif
