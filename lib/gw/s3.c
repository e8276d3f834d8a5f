/* s3.c: the S3 REST API. The foundation answers ListBuckets (with no
 * buckets: the object store arrives with its own issue); every other
 * operation is NotImplemented, never a fake success. */
#include "spx.h"

#include "gw/gw_int.h"

static void list_buckets(struct gw_req *g, struct spx_http_req *req,
			 struct spx_http_resp *resp)
{
	struct spx_xml x;

	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ListAllMyBucketsResult", GW_S3_NS);
	spx_xml_open(&x, "Owner");
	spx_xml_elem(&x, "ID", g->who.account);
	spx_xml_elem(&x, "DisplayName", g->who.user[0] ? g->who.user : g->who.account);
	spx_xml_close(&x);
	spx_xml_open(&x, "Buckets");
	spx_xml_close(&x);
	gw_xml_finish(g, req, resp, &x);
}

void gw_s3_dispatch(struct gw_req *g, struct spx_http_req *req,
		    struct spx_http_resp *resp)
{
	if (!strcmp(req->path, "/") && !strcmp(req->method, "GET")) {
		list_buckets(g, req, resp);
		return;
	}
	gw_error(g, req, resp, 501, "NotImplemented",
		 "A header you provided implies functionality that is not "
		 "implemented");
}
