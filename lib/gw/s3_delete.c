/* s3_delete.c: DeleteObject and DeleteObjects. Deleting what is not
 * there succeeds, as in S3; in a bucket with versioning, a delete makes a
 * delete marker unless it names a version, which then goes for good. */
#include "spx.h"

#include "gw/s3_int.h"
#include "gw/s3conf.h"

int s3_delete_object(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct spx_obj_deleted d;
	struct s3_lock_ctx lc;
	const char *vid;
	int rc;

	if (s3_version_param(g, &vid) < 0)
		return -1;
	/* A version under object lock stays (checked under the key's
	 * lock); a delete marker is always made (no condition then). */
	s3_lock_ctx_init(g, req, g->s3->key, &lc);
	rc = spx_obj_delete_version_if(g->gw->obj, &g->s3->b, g->s3->key, vid,
				       vid ? s3_lock_cond : NULL, &lc, &d);
	if (rc < 0 && rc != SPX_OBJ_NO_SUCH_KEY && rc != SPX_OBJ_NO_SUCH_VERSION)
		return s3_obj_fail(g, rc);
	spx_error_clear();
	s3_empty_answer(g, resp, 204);
	if (rc == 0 && d.delete_marker)
		spx_kv_add(&resp->headers, "x-amz-delete-marker", "true");
	if (vid)
		s3_version_header(resp, true, vid);
	else if (rc == 0 && d.delete_marker)
		s3_version_header(resp, true, d.vid);
	return 0;
}

int s3_delete_objects(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_s3_delete del;
	struct spx_apierr e;
	struct spx_xml x;

	if (spx_s3_delete_xml(s->body.p, s->body.len, &del, &e) < 0)
		return s3_conf_fail(&e);
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "DeleteResult", GW_S3_NS);
	for (size_t i = 0; i < del.n; i++) {
		const char *k = del.v[i].key, *vid = del.v[i].vid;
		struct spx_obj_deleted d = { 0 };
		int rc = SPX_OBJ_INVALID_ARG;

		/* Each key as DeleteObject would be decided. */
		if (k && s3_authorize(g, req, &s->b,
				      vid ? "s3:DeleteObjectVersion"
					  : "s3:DeleteObject",
				      k) < 0) {
			spx_error_clear();
			spx_xml_open(&x, "Error");
			spx_xml_elem(&x, "Key", k);
			spx_xml_elem(&x, "VersionId", vid);
			spx_xml_elem(&x, "Code", "AccessDenied");
			spx_xml_elem(&x, "Message", "Access Denied");
			spx_xml_close(&x);
			continue;
		}
		if (k) {
			struct s3_lock_ctx lc;

			s3_lock_ctx_init(g, req, k, &lc);
			rc = spx_obj_delete_version_if(
				g->gw->obj, &s->b, k, vid,
				vid ? s3_lock_cond : NULL, &lc, &d);
		}
		spx_error_clear();
		if (rc == 0 || rc == SPX_OBJ_NO_SUCH_KEY ||
		    rc == SPX_OBJ_NO_SUCH_VERSION) {
			if (del.quiet)
				continue;
			spx_xml_open(&x, "Deleted");
			spx_xml_elem(&x, "Key", k);
			spx_xml_elem(&x, "VersionId", vid);
			if (rc == 0 && d.delete_marker) {
				spx_xml_elem(&x, "DeleteMarker", "true");
				spx_xml_elem(&x, "DeleteMarkerVersionId",
					     spx_obj_vid_name(d.vid));
			}
			spx_xml_close(&x);
		} else {
			const struct spx_apierr *c = s3_obj_err(rc);

			spx_xml_open(&x, "Error");
			spx_xml_elem(&x, "Key", k ? k : "");
			spx_xml_elem(&x, "VersionId", vid);
			spx_xml_elem(&x, "Code", c->code);
			spx_xml_elem(&x, "Message", c->message);
			spx_xml_close(&x);
		}
	}
	spx_s3_delete_release(&del);
	gw_xml_finish(g, req, resp, &x);
	return 0;
}
