/* sts.c: STS over the Query protocol, on the model-driven layer.
 * GetCallerIdentity is what Terraform and the SDKs call first to learn who
 * they are. */
#include "spx.h"

#include "gw/ec2_int.h"

int sts_get_caller_identity(struct ec2_call *c)
{
	const struct spx_cred *who = c->who;
	bool root = !strcmp(who->user, "admin") || !who->user[0] ||
		    strstr(who->arn, ":root");

	/* For an account's root user, UserId is the account id; for an IAM
	 * user it is the access key's user id (later issues). */
	json_object_set_new(c->out, "UserId",
			    json_string(root ? who->account : who->access_key));
	json_object_set_new(c->out, "Account", json_string(who->account));
	json_object_set_new(c->out, "Arn", json_string(who->arn));
	return 0;
}

const struct ec2_action gw_sts_actions[] = {
	{ EC2Q_STS_GetCallerIdentity, sts_get_caller_identity, 0 },
};
const size_t gw_sts_n_actions = SPX_ARRAY_SIZE(gw_sts_actions);

void gw_sts_dispatch(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp, const char *action)
{
	gw_query_dispatch(g, req, resp, &ec2q_sts, gw_sts_actions,
			  gw_sts_n_actions, action);
}
