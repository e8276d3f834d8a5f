/* ec2_int.h: what the gateway's EC2 and STS handlers see.
 *
 * Each action is one row of an action table (ec2.c, sts.c): the model's
 * operation, the handler and flags. The dispatcher (ec2.c) parses the
 * request with the model (ec2q_parse), answers DryRun, checks the caller
 * may act, replays a ClientToken's first answer, calls the handler and
 * renders its answer (ec2q_render) or its error. A handler reads c->in,
 * fills c->out (an object of the output shape, JSON keys = member names)
 * and returns 0, or -1 with an error recorded (spx_ec2_error for EC2's own
 * codes; a plain spx_error becomes InvalidParameterValue for SPX_USAGE and
 * InternalError otherwise). It never sees a query string or writes XML.
 *
 * Handlers live one file per resource family (ec2_region.c,
 * ec2_keypair.c, ec2_itype.c, ec2_tags.c, ec2_launchtemplate.c,
 * ec2_volume.c, ec2_snapshot.c, ec2_image.c, ec2_instance.c, ec2_pgroup.c); the work is
 * done in lib/ec2.
 */
#ifndef SPX_GW_EC2_INT_H
#define SPX_GW_EC2_INT_H

#include <jansson.h>

#include "ec2/fault.h"
#include "ec2/paging.h"
#include "gw/ec2q_model.h"
#include "gw/gw_int.h"

struct ec2_call {
	struct spx_gw *gw;
	const struct spx_cred *who; /* the authenticated caller */
	const char *account;	    /* who->account */
	const struct ec2q_service *svc;
	const struct ec2q_op *op;
	json_t *in;  /* the parsed request, borrowed */
	json_t *out; /* the answer, an empty object to fill */
	time_t now;
};

typedef int ec2_fn(struct ec2_call *c);

/* Action flags. */
enum {
	EC2_DRYRUN = 1 << 0,	 /* has DryRun: answered before the handler */
	EC2_IDEMPOTENT = 1 << 1, /* has ClientToken: first answer replayed */
	EC2_MUTATING = 1 << 2,	 /* changes state (for the access log and
				    later IAM) */
};

struct ec2_action {
	uint16_t op; /* EC2Q_EC2_... index into the service's ops */
	ec2_fn *fn;
	unsigned flags;
};

/* The tables, for the dispatcher and the unit test that checks each row
 * against its model operation. */
extern const struct ec2_action gw_ec2_actions[];
extern const size_t gw_ec2_n_actions;
extern const struct ec2_action gw_sts_actions[];
extern const size_t gw_sts_n_actions;

/* A pager for c's action: the node's secret, the caller's account, the
 * MaxResults range (min < max: checked here; the model's own range is
 * checked by the parser) and the page size without MaxResults. */
void ec2_pager(const struct ec2_call *c, int64_t min, int64_t max,
	       size_t def, struct spx_ec2_pager *pg);
/* The request's list member, or NULL when absent (jansson's array
 * functions take NULL as an empty array). */
/* The page of items (sorted by key) as the answer's member, with a
 * NextToken when more remain; strip (may be NULL) names a member each item
 * loses first (a sort key kept for paging). -1 (recorded) on failure. */
int ec2_page_answer(struct ec2_call *c, struct spx_ec2_page *p,
		    json_t *items, const char *(*key)(const json_t *item),
		    const char *member, const char *strip);
const json_t *ec2_list(const struct ec2_call *c, const char *member);
/* The request's string member, or NULL. */
const char *ec2_str(const struct ec2_call *c, const char *member);
/* Add the text form of the DateTime member as member+"Text" (filters
 * match times as EC2 writes them), and take it away again. */
void ec2_time_text(json_t *o, const char *member);
void ec2_time_text_del(json_t *o, const char *member);
/* The request's boolean member (false when absent). */
bool ec2_bool(const struct ec2_call *c, const char *member);

/* Dispatch action of svc through table (see above). */
void gw_query_dispatch(struct gw_req *g, struct spx_http_req *req,
		       struct spx_http_resp *resp,
		       const struct ec2q_service *svc,
		       const struct ec2_action *table, size_t n,
		       const char *action);

/* Handlers. */
int ec2_describe_regions(struct ec2_call *c);
int ec2_describe_zones(struct ec2_call *c);
int ec2_describe_account_attributes(struct ec2_call *c);
int ec2_create_key_pair(struct ec2_call *c);
int ec2_import_key_pair(struct ec2_call *c);
int ec2_describe_key_pairs(struct ec2_call *c);
int ec2_delete_key_pair(struct ec2_call *c);
int ec2_describe_instance_types(struct ec2_call *c);
int ec2_describe_instance_type_offerings(struct ec2_call *c);
int ec2_create_tags(struct ec2_call *c);
int ec2_delete_tags(struct ec2_call *c);
int ec2_describe_tags(struct ec2_call *c);
int ec2_create_launch_template(struct ec2_call *c);
int ec2_describe_launch_templates(struct ec2_call *c);
int ec2_delete_launch_template(struct ec2_call *c);
/* The node's EBS lock file (spx_ebs_lock): a new string. */
char *ec2_ebs_lock_path(const struct ec2_call *c);
/* Tell the node's agent that records changed (spx_agent_wake). */
void ec2_wake(const struct ec2_call *c);
/* Owners / OwnerIds of DescribeSnapshots and DescribeImages: "self",
 * account ids, and the aliases of owners that have nothing here
 * ("amazon", "aws-marketplace"): does owner match any (none given: yes)? */
bool ec2_owner_wanted(const json_t *owners, const char *account,
		      const char *owner);
int ec2_create_volume(struct ec2_call *c);
int ec2_delete_volume(struct ec2_call *c);
int ec2_describe_volumes(struct ec2_call *c);
int ec2_modify_volume(struct ec2_call *c);
int ec2_attach_volume(struct ec2_call *c);
int ec2_detach_volume(struct ec2_call *c);
int ec2_describe_volumes_modifications(struct ec2_call *c);
int ec2_describe_volume_status(struct ec2_call *c);
int ec2_describe_volume_attribute(struct ec2_call *c);
int ec2_create_snapshot(struct ec2_call *c);
int ec2_create_snapshots(struct ec2_call *c);
int ec2_copy_snapshot(struct ec2_call *c);
int ec2_delete_snapshot(struct ec2_call *c);
int ec2_describe_snapshots(struct ec2_call *c);
int ec2_describe_snapshot_attribute(struct ec2_call *c);
int ec2_modify_snapshot_attribute(struct ec2_call *c);
int ec2_reset_snapshot_attribute(struct ec2_call *c);
int ec2_register_image(struct ec2_call *c);
int ec2_create_image(struct ec2_call *c);
int ec2_describe_images(struct ec2_call *c);
int ec2_deregister_image(struct ec2_call *c);
int ec2_describe_image_attribute(struct ec2_call *c);
int ec2_run_instances(struct ec2_call *c);
int ec2_describe_instances(struct ec2_call *c);
int ec2_terminate_instances(struct ec2_call *c);
int ec2_stop_instances(struct ec2_call *c);
int ec2_start_instances(struct ec2_call *c);
int ec2_describe_instance_status(struct ec2_call *c);
int ec2_get_console_output(struct ec2_call *c);
int ec2_describe_instance_attribute(struct ec2_call *c);
int ec2_reboot_instances(struct ec2_call *c);
int ec2_modify_instance_attribute(struct ec2_call *c);
int ec2_modify_instance_metadata_options(struct ec2_call *c);
int ec2_create_placement_group(struct ec2_call *c);
int ec2_describe_placement_groups(struct ec2_call *c);
int ec2_delete_placement_group(struct ec2_call *c);
int sts_get_caller_identity(struct ec2_call *c);

#endif
