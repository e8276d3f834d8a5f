/* ec2.c: the EC2 Query API actions the foundation answers: the probes
 * that the CLI, the SDKs and Terraform make first. Later issues add
 * their actions to the table. */
#include "spx.h"

#include "gw/gw_int.h"

typedef void ec2_fn(struct gw_req *g, struct spx_http_req *req,
		    struct spx_http_resp *resp);

static void ec2_begin(struct gw_req *g, struct spx_http_resp *resp,
		      struct spx_xml *x, const char *action)
{
	char name[96];

	snprintf(name, sizeof(name), "%sResponse", action);
	gw_xml_begin(g, resp, x);
	spx_xml_open_ns(x, name, GW_EC2_NS);
	spx_xml_elem(x, "requestId", g->reqid);
}

/* ---- DescribeRegions ---------------------------------------------- */

struct region {
	const char *name, *endpoint, *optin;
};

static const char *region_get(const void *item, const char *f)
{
	const struct region *r = item;

	if (!strcmp(f, "region-name"))
		return r->name;
	if (!strcmp(f, "endpoint"))
		return r->endpoint;
	if (!strcmp(f, "opt-in-status"))
		return r->optin;
	return NULL;
}

static void describe_regions(struct gw_req *g, struct spx_http_req *req,
			     struct spx_http_resp *resp)
{
	static const char *const known[] = { "endpoint", "opt-in-status",
					     "region-name", NULL };
	const struct spx_conf *c = g->gw->conf;
	const struct spx_conf_node *self = g->gw->self;
	struct gw_filters fs;
	struct spx_xml x;
	const char **names;
	size_t nn;
	char endpoint[300];
	struct region r;

	if (gw_dry_run(g, req, resp))
		return;
	nn = gw_param_list(&g->params, "RegionName", &names);
	for (size_t i = 0; i < nn; i++) {
		if (strcmp(names[i], c->aws.region)) {
			gw_error(g, req, resp, 400, "InvalidParameterValue",
				 "Invalid region: %s", names[i]);
			free(names);
			return;
		}
	}
	free(names);
	if (gw_filters_parse(g, req, resp, known, &fs) < 0)
		return;
	snprintf(endpoint, sizeof(endpoint), "%s:%d", self->host,
		 (int)self->gw.ec2_port);
	r = (struct region){ c->aws.region, endpoint, "opt-in-not-required" };
	ec2_begin(g, resp, &x, "DescribeRegions");
	spx_xml_open(&x, "regionInfo");
	if (gw_filters_match(&fs, region_get, &r)) {
		spx_xml_open(&x, "item");
		spx_xml_elem(&x, "regionName", r.name);
		spx_xml_elem(&x, "regionEndpoint", r.endpoint);
		spx_xml_elem(&x, "optInStatus", r.optin);
		spx_xml_close(&x);
	}
	gw_filters_free(&fs);
	gw_xml_finish(g, req, resp, &x);
}

/* ---- DescribeAvailabilityZones ------------------------------------ */

struct zone {
	char name[64], id[32], region[40];
};

/* AWS zone ids: "use1-az1" for us-east-1a, "apse2-az2" for
 * ap-southeast-2b. */
static void zone_id(const char *region, const char *zone, char *out,
		    size_t sz)
{
	struct spx_buf b = SPX_BUF_INIT;
	const char *p = region, *dash;
	bool first = true;

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
	snprintf(out, sz, "%s%s-az%d", b.p, p,
		 zone[strlen(zone) - 1] - 'a' + 1);
	spx_buf_release(&b);
}

static const char *zone_get(const void *item, const char *f)
{
	const struct zone *z = item;

	if (!strcmp(f, "zone-name"))
		return z->name;
	if (!strcmp(f, "zone-id"))
		return z->id;
	if (!strcmp(f, "region-name") || !strcmp(f, "group-name"))
		return z->region;
	if (!strcmp(f, "state"))
		return "available";
	if (!strcmp(f, "opt-in-status"))
		return "opt-in-not-required";
	if (!strcmp(f, "zone-type"))
		return "availability-zone";
	return NULL;
}

static void describe_zones(struct gw_req *g, struct spx_http_req *req,
			   struct spx_http_resp *resp)
{
	static const char *const known[] = {
		"group-name", "message",   "opt-in-status",
		"region-name", "state",	   "zone-id",
		"zone-name",  "zone-type", "parent-zone-id",
		"parent-zone-name", NULL
	};
	const struct spx_conf *c = g->gw->conf;
	struct zone *zs = spx_calloc(c->n_nodes + 1, sizeof(*zs));
	const char **names = NULL, **ids = NULL;
	size_t nz = 0, nn, ni;
	struct gw_filters fs = { 0 };
	struct spx_xml x;

	if (gw_dry_run(g, req, resp))
		goto out;
	/* One zone per distinct az among the nodes, in node order. */
	for (size_t i = 0; i < c->n_nodes; i++) {
		bool dup = false;

		for (size_t j = 0; j < nz; j++)
			dup |= !strcmp(zs[j].name, c->nodes[i].az);
		if (dup)
			continue;
		snprintf(zs[nz].name, sizeof(zs[nz].name), "%s",
			 c->nodes[i].az);
		snprintf(zs[nz].region, sizeof(zs[nz].region), "%s", c->aws.region);
		zone_id(c->aws.region, c->nodes[i].az, zs[nz].id,
			sizeof(zs[nz].id));
		nz++;
	}
	nn = gw_param_list(&g->params, "ZoneName", &names);
	ni = gw_param_list(&g->params, "ZoneId", &ids);
	for (size_t i = 0; i < nn + ni; i++) {
		const char *want = i < nn ? names[i] : ids[i - nn];
		bool found = false;

		for (size_t j = 0; j < nz; j++)
			found |= !strcmp(want, i < nn ? zs[j].name : zs[j].id);
		if (!found) {
			gw_error(g, req, resp, 400, "InvalidParameterValue",
				 "Invalid availability zone: [%s]", want);
			goto out;
		}
	}
	if (gw_filters_parse(g, req, resp, known, &fs) < 0)
		goto out;
	ec2_begin(g, resp, &x, "DescribeAvailabilityZones");
	spx_xml_open(&x, "availabilityZoneInfo");
	for (size_t j = 0; j < nz; j++) {
		bool named = !nn && !ni;

		for (size_t i = 0; i < nn; i++)
			named |= !strcmp(names[i], zs[j].name);
		for (size_t i = 0; i < ni; i++)
			named |= !strcmp(ids[i], zs[j].id);
		if (!named || !gw_filters_match(&fs, zone_get, &zs[j]))
			continue;
		spx_xml_open(&x, "item");
		spx_xml_elem(&x, "zoneName", zs[j].name);
		spx_xml_elem(&x, "optInStatus", "opt-in-not-required");
		spx_xml_elem(&x, "groupName", zs[j].region);
		spx_xml_elem(&x, "networkBorderGroup", zs[j].region);
		spx_xml_elem(&x, "zoneState", "available");
		spx_xml_elem(&x, "regionName", zs[j].region);
		spx_xml_open(&x, "messageSet");
		spx_xml_close(&x);
		spx_xml_elem(&x, "zoneId", zs[j].id);
		spx_xml_elem(&x, "zoneType", "availability-zone");
		spx_xml_close(&x);
	}
	gw_xml_finish(g, req, resp, &x);
out:
	gw_filters_free(&fs);
	free(names);
	free(ids);
	free(zs);
}

/* ---- DescribeAccountAttributes ------------------------------------ */

static void describe_account_attributes(struct gw_req *g,
					struct spx_http_req *req,
					struct spx_http_resp *resp)
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
	const char **want;
	size_t nw = gw_param_list(&g->params, "AttributeName", &want);
	struct spx_xml x;

	if (gw_dry_run(g, req, resp)) {
		free(want);
		return;
	}
	for (size_t i = 0; i < nw; i++) {
		bool ok = false;

		for (size_t j = 0; j < SPX_ARRAY_SIZE(attrs); j++)
			ok |= !strcmp(want[i], attrs[j].name);
		if (!ok) {
			gw_error(g, req, resp, 400, "InvalidParameterValue",
				 "Value (%s) for parameter attributeName is "
				 "invalid. Unknown attribute.",
				 want[i]);
			free(want);
			return;
		}
	}
	ec2_begin(g, resp, &x, "DescribeAccountAttributes");
	spx_xml_open(&x, "accountAttributeSet");
	for (size_t j = 0; j < SPX_ARRAY_SIZE(attrs); j++) {
		bool named = !nw;

		for (size_t i = 0; i < nw; i++)
			named |= !strcmp(want[i], attrs[j].name);
		if (!named)
			continue;
		spx_xml_open(&x, "item");
		spx_xml_elem(&x, "attributeName", attrs[j].name);
		spx_xml_open(&x, "attributeValueSet");
		spx_xml_open(&x, "item");
		spx_xml_elem(&x, "attributeValue", attrs[j].value);
		spx_xml_close(&x);
		spx_xml_close(&x);
		spx_xml_close(&x);
	}
	free(want);
	gw_xml_finish(g, req, resp, &x);
}

static const struct {
	const char *name;
	ec2_fn *fn;
} actions[] = {
	{ "DescribeAccountAttributes", describe_account_attributes },
	{ "DescribeAvailabilityZones", describe_zones },
	{ "DescribeRegions", describe_regions },
};

void gw_ec2_dispatch(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp, const char *action)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(actions); i++) {
		if (!strcmp(actions[i].name, action)) {
			actions[i].fn(g, req, resp);
			return;
		}
	}
	gw_error(g, req, resp, 400, "InvalidAction",
		 "The action %s is not valid for this web service.", action);
}
