/* ec2.c: the EC2 action table and the dispatcher every Query action (EC2
 * and STS) goes through: parse with the model, DryRun, authorisation,
 * ClientToken, the handler, render with the model. */
#include "spx.h"

#include "ec2/idem.h"
#include "gw/ec2_int.h"

const struct ec2_action gw_ec2_actions[] = {
	{ EC2Q_EC2_CreateImage, ec2_create_image, EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_CreateKeyPair, ec2_create_key_pair,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_CreateLaunchTemplate, ec2_create_launch_template,
	  EC2_DRYRUN | EC2_IDEMPOTENT | EC2_MUTATING },
	{ EC2Q_EC2_AttachVolume, ec2_attach_volume, EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_CopySnapshot, ec2_copy_snapshot, EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_CreateSnapshot, ec2_create_snapshot,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_CreateSnapshots, ec2_create_snapshots,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_CreatePlacementGroup, ec2_create_placement_group,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_CreateTags, ec2_create_tags, EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_CreateVolume, ec2_create_volume,
	  EC2_DRYRUN | EC2_IDEMPOTENT | EC2_MUTATING },
	{ EC2Q_EC2_DeleteKeyPair, ec2_delete_key_pair,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_DeleteLaunchTemplate, ec2_delete_launch_template,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_DeletePlacementGroup, ec2_delete_placement_group,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_DeleteSnapshot, ec2_delete_snapshot,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_DeleteTags, ec2_delete_tags, EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_DeregisterImage, ec2_deregister_image,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_DeleteVolume, ec2_delete_volume, EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_DetachVolume, ec2_detach_volume, EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_DescribeAccountAttributes, ec2_describe_account_attributes,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribeAvailabilityZones, ec2_describe_zones, EC2_DRYRUN },
	{ EC2Q_EC2_DescribeImageAttribute, ec2_describe_image_attribute,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribeImages, ec2_describe_images, EC2_DRYRUN },
	{ EC2Q_EC2_DescribeInstanceTypeOfferings,
	  ec2_describe_instance_type_offerings, EC2_DRYRUN },
	{ EC2Q_EC2_DescribeInstanceTypes, ec2_describe_instance_types,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribeInstanceAttribute, ec2_describe_instance_attribute,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribeInstanceStatus, ec2_describe_instance_status,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribeInstances, ec2_describe_instances, EC2_DRYRUN },
	{ EC2Q_EC2_GetConsoleOutput, ec2_get_console_output, EC2_DRYRUN },
	{ EC2Q_EC2_DescribeKeyPairs, ec2_describe_key_pairs, EC2_DRYRUN },
	{ EC2Q_EC2_DescribeLaunchTemplates, ec2_describe_launch_templates,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribePlacementGroups, ec2_describe_placement_groups,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribeRegions, ec2_describe_regions, EC2_DRYRUN },
	{ EC2Q_EC2_DescribeSnapshotAttribute, ec2_describe_snapshot_attribute,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribeSnapshots, ec2_describe_snapshots, EC2_DRYRUN },
	{ EC2Q_EC2_DescribeTags, ec2_describe_tags, EC2_DRYRUN },
	{ EC2Q_EC2_DescribeVolumeAttribute, ec2_describe_volume_attribute,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribeVolumeStatus, ec2_describe_volume_status,
	  EC2_DRYRUN },
	{ EC2Q_EC2_DescribeVolumes, ec2_describe_volumes, EC2_DRYRUN },
	{ EC2Q_EC2_DescribeVolumesModifications,
	  ec2_describe_volumes_modifications, EC2_DRYRUN },
	{ EC2Q_EC2_ImportKeyPair, ec2_import_key_pair,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_ModifyInstanceAttribute, ec2_modify_instance_attribute,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_ModifyInstanceMetadataOptions,
	  ec2_modify_instance_metadata_options, EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_ModifySnapshotAttribute, ec2_modify_snapshot_attribute,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_ModifyVolume, ec2_modify_volume, EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_RebootInstances, ec2_reboot_instances,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_RegisterImage, ec2_register_image,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_RunInstances, ec2_run_instances,
	  EC2_DRYRUN | EC2_IDEMPOTENT | EC2_MUTATING },
	{ EC2Q_EC2_StartInstances, ec2_start_instances,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_StopInstances, ec2_stop_instances,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_TerminateInstances, ec2_terminate_instances,
	  EC2_DRYRUN | EC2_MUTATING },
	{ EC2Q_EC2_ResetSnapshotAttribute, ec2_reset_snapshot_attribute,
	  EC2_DRYRUN | EC2_MUTATING },
};
const size_t gw_ec2_n_actions = SPX_ARRAY_SIZE(gw_ec2_actions);

/* ---- helpers for handlers ----------------------------------------- */

/* Add a text form of a DateTime member as member+"Text" (filters match
 * times as EC2 writes them). */
void ec2_time_text(json_t *o, const char *member)
{
	json_t *t = json_object_get(o, member);
	char when[40], *k;

	if (!json_is_integer(t))
		return;
	ec2q_time_format((double)json_integer_value(t), when, sizeof(when));
	k = spx_xprintf("%sText", member);
	json_object_set_new(o, k, json_string(when));
	free(k);
}

void ec2_time_text_del(json_t *o, const char *member)
{
	char *k = spx_xprintf("%sText", member);

	json_object_del(o, k);
	free(k);
}


void ec2_pager(const struct ec2_call *c, int64_t min, int64_t max,
	       size_t def, struct spx_ec2_pager *pg)
{
	*pg = (struct spx_ec2_pager){
		.secret = c->gw->page_secret,
		.account = c->account,
		.action = c->op->name,
		.min = min,
		.max = max,
		.def = def,
	};
}

int ec2_page_answer(struct ec2_call *c, struct spx_ec2_page *p,
		    json_t *items, const char *(*key)(const json_t *item),
		    const char *member, const char *strip)
{
	char *next = NULL;
	size_t i;
	json_t *e;

	if (spx_ec2_page_take(p, items, key, &next) < 0)
		return -1;
	json_array_foreach(items, i, e)
		json_object_del(e, strip ? strip : "");
	json_object_set(c->out, member, items);
	if (next)
		json_object_set_new(c->out, "NextToken", json_string(next));
	free(next);
	return 0;
}

const json_t *ec2_list(const struct ec2_call *c, const char *member)
{
	return json_object_get(c->in, member);
}

const char *ec2_str(const struct ec2_call *c, const char *member)
{
	return json_string_value(json_object_get(c->in, member));
}

bool ec2_bool(const struct ec2_call *c, const char *member)
{
	return json_is_true(json_object_get(c->in, member));
}

/* ---- the dispatcher ------------------------------------------------ */

/* The place where IAM will decide; until then every authenticated caller
 * may do everything in its own account. */
static int authorize(const struct ec2_call *c, const struct ec2_action *a)
{
	(void)c;
	(void)a;
	return 0;
}

static void answer_error(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	int http = 400;
	const char *code = spx_ec2_fault_code(&http);

	if (code) {
		gw_error(g, req, resp, http, code, "%s", spx_errmsg());
	} else if (spx_errstatus() == SPX_USAGE) {
		gw_error(g, req, resp, 400, "InvalidParameterValue", "%s",
			 spx_errmsg());
	} else {
		spx_log(SPX_LOG_ERROR, "gw: %s: %s", g->reqid, spx_errmsg());
		gw_error(g, req, resp, 500, "InternalError",
			 "An internal error has occurred");
	}
}

static void answer(struct gw_req *g, struct spx_http_req *req,
		   struct spx_http_resp *resp, const struct ec2_call *c)
{
	struct spx_xml x;

	gw_xml_begin(g, resp, &x);
	if (ec2q_render(&x, c->svc, c->op, c->out, g->reqid) < 0) {
		spx_log(SPX_LOG_ERROR, "gw: %s: %s: %s", g->reqid, c->op->name,
			spx_errmsg());
		gw_error(g, req, resp, 500, "InternalError",
			 "An internal error has occurred");
		return;
	}
	gw_xml_finish(g, req, resp, &x);
}

void gw_query_dispatch(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp,
		       const struct ec2q_service *svc,
		       const struct ec2_action *table, size_t n,
		       const char *action)
{
	const struct ec2_action *a = NULL;
	struct ec2_call c = { 0 };
	struct spx_ec2_idem idem = { 0 };
	json_t *first = NULL;
	const char *token;
	bool idem_on = false;

	for (size_t i = 0; i < n && !a; i++)
		if (!strcmp(svc->ops[table[i].op].name, action))
			a = &table[i];
	if (!a) {
		if (svc->proto == EC2Q_PROTO_EC2)
			gw_error(g, req, resp, 400, "InvalidAction",
				 "The action %s is not valid for this web "
				 "service.",
				 action);
		else
			gw_error(g, req, resp, 400, "InvalidAction",
				 "Could not find operation %s for version %s",
				 action, svc->version);
		return;
	}
	c.gw = g->gw;
	c.who = &g->who;
	c.account = g->who.account;
	c.svc = svc;
	c.op = &svc->ops[a->op];
	c.now = gw_now(g->gw);
	spx_error_clear();
	if (ec2q_parse(svc, c.op, &g->params, &c.in) < 0) {
		answer_error(g, req, resp);
		return;
	}
	if (authorize(&c, a) < 0) {
		answer_error(g, req, resp);
		goto out;
	}
	if ((a->flags & EC2_DRYRUN) && ec2_bool(&c, "DryRun")) {
		gw_error(g, req, resp, 412, "DryRunOperation",
			 "Request would have succeeded, but DryRun flag is "
			 "set.");
		goto out;
	}
	token = (a->flags & EC2_IDEMPOTENT) ? ec2_str(&c, "ClientToken") : NULL;
	if (token) {
		int rc = spx_ec2_idem_begin(g->gw->state, c.account,
					    c.op->name, token, c.in, c.now,
					    &idem, &first);

		if (rc < 0) {
			answer_error(g, req, resp);
			goto out;
		}
		if (rc == 1) {
			c.out = first;
			answer(g, req, resp, &c);
			goto out;
		}
		idem_on = true;
	}
	c.out = json_object();
	if (a->fn(&c) < 0) {
		answer_error(g, req, resp);
		if (idem_on)
			spx_ec2_idem_end(&idem, NULL);
		goto out;
	}
	if (idem_on && spx_ec2_idem_end(&idem, c.out) < 0)
		spx_log(SPX_LOG_ERROR, "gw: %s: %s: client token not recorded: "
			"%s", g->reqid, c.op->name, spx_errmsg());
	answer(g, req, resp, &c);
out:
	json_decref(c.in);
	json_decref(c.out);
}

void gw_ec2_dispatch(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp, const char *action)
{
	gw_query_dispatch(g, req, resp, &ec2q_ec2, gw_ec2_actions,
			  gw_ec2_n_actions, action);
}
