/* sts.c: STS over the Query protocol. GetCallerIdentity is what
 * Terraform and the SDKs call first to learn who they are. */
#include "spx.h"

#include "gw/gw_int.h"

static void get_caller_identity(struct gw_req *g, struct spx_http_req *req,
				struct spx_http_resp *resp)
{
	struct spx_xml x;
	bool root = !strcmp(g->who.user, "admin") || !g->who.user[0] ||
		    strstr(g->who.arn, ":root");

	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "GetCallerIdentityResponse", GW_STS_NS);
	spx_xml_open(&x, "GetCallerIdentityResult");
	spx_xml_elem(&x, "Arn", g->who.arn);
	/* For an account's root user, UserId is the account id; for an IAM
	 * user it is the access key's user id (later issues). */
	spx_xml_elem(&x, "UserId", root ? g->who.account : g->who.access_key);
	spx_xml_elem(&x, "Account", g->who.account);
	spx_xml_close(&x);
	spx_xml_open(&x, "ResponseMetadata");
	spx_xml_elem(&x, "RequestId", g->reqid);
	spx_xml_close(&x);
	gw_xml_finish(g, req, resp, &x);
}

void gw_sts_dispatch(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp, const char *action)
{
	if (!strcmp(action, "GetCallerIdentity")) {
		get_caller_identity(g, req, resp);
		return;
	}
	gw_error(g, req, resp, 400, "InvalidAction",
		 "Could not find operation %s for version 2011-06-15", action);
}
