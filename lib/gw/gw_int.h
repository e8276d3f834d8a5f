/* gw_int.h: what the gateway's API files (ec2.c, sts.c, s3.c) share.
 * Internal to lib/gw. */
#ifndef SPX_GW_INT_H
#define SPX_GW_INT_H

#include <openssl/evp.h>

#include "auth/cred.h"
#include "auth/sigv4.h"
#include "gw/gw.h"
#include "xml/xml.h"

#define GW_EC2_NS "http://ec2.amazonaws.com/doc/2016-11-15/"
#define GW_STS_NS "https://sts.amazonaws.com/doc/2011-06-15/"
#define GW_S3_NS "http://s3.amazonaws.com/doc/2006-03-01/"

enum gw_api { GW_EC2, GW_STS, GW_S3 };

/* The most an S3 request whose signature covers its body's hash (no
 * x-amz-content-sha256: curl --aws-sigv4) may send: it is kept in memory
 * until the signature, checked at the end, lets it run. */
#define GW_UNVERIFIED_MAX (8u << 20)

/* Parameters an EC2 Query request may carry (a DescribeInstances with
 * 1000 instance ids and filters has more than the parser's default). */
#define GW_MAX_PARAMS 20000

struct spx_obj;
struct spx_state;
struct gw_s3;

struct spx_gw {
	const struct spx_conf *conf;
	const struct spx_conf_node *self;
	struct spx_creds *creds;
	struct spx_obj *obj; /* the object store (S3) */
	struct spx_state *state; /* the node's records (EC2) */
	unsigned char page_secret[32]; /* signs Describe NextTokens */
	struct spx_http_handler handler;
	struct spx_http_limits limits;
	uint64_t max_form;
	time_t fixed_now; /* 0: the real clock */
};

/* Per-request state, req->ctx. */
struct gw_req {
	struct spx_gw *gw;
	enum gw_api api;
	char reqid[48];	 /* EC2/STS: a UUID; S3: 16 hex digits */
	char hostid[80]; /* S3 x-amz-id-2 */
	EVP_MD_CTX *sha; /* SHA-256 of the body as it arrives */
	struct spx_buf form; /* the Query API body, kept whole (bounded) */
	bool keep_form;
	struct spx_kvlist params; /* Query API parameters, decoded */
	struct spx_sigv4_auth auth; /* what the request's SigV4 said */
	struct spx_cred who;	  /* the authenticated caller */
	bool authed;
	bool auth_deferred; /* S3 without x-amz-content-sha256, with a body:
			     * kept in form until verified at the end */
	bool hash_body;	    /* the signature covers the body's SHA-256 */
	char body_hash[65];
	unsigned char body_sha[32]; /* the same, binary */
	struct gw_s3 *s3;   /* S3 request state (s3.c) */
	bool err_region;    /* S3 error names our region (wrong scope) */
};

time_t gw_now(const struct spx_gw *gw);

/* Fill resp with the error document of api and make it ready. */
void gw_error(struct gw_req *g, struct spx_http_req *req,
	      struct spx_http_resp *resp, int status, const char *code,
	      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Start an XML response: status 200, content type, request id headers,
 * the declaration. */
void gw_xml_begin(struct gw_req *g, struct spx_http_resp *resp,
		  struct spx_xml *x);
/* Finish it: close every open element and make resp ready. */
void gw_xml_finish(struct gw_req *g, struct spx_http_req *req,
		   struct spx_http_resp *resp, struct spx_xml *x);

/* Query API dispatch. */
void gw_ec2_dispatch(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp, const char *action);
void gw_sts_dispatch(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp, const char *action);
/* S3, in request order: begin once the caller is known (authenticated,
 * or for a body-signed request, identified and verified at the end:
 * nothing is committed before), body for each piece, end when the body is
 * complete and authenticated. free releases g->s3 whatever happened. */
void gw_s3_preflight(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp);
void gw_s3_begin(struct gw_req *g, struct spx_http_req *req,
		 struct spx_http_resp *resp);
/* POST object (a multipart/form-data POST to a bucket): begin before any
 * authentication, which its form carries; body and end as for others. */
void gw_s3_post(struct gw_req *g, struct spx_http_req *req,
		struct spx_http_resp *resp);
void gw_s3_body(struct gw_req *g, struct spx_http_req *req, const char *data,
		size_t len, struct spx_http_resp *resp);
void gw_s3_end(struct gw_req *g, struct spx_http_req *req,
	       struct spx_http_resp *resp);
void gw_s3_free(struct gw_req *g);
/* The bucket a virtual-host-style Host header names (gw.s3_domain), or
 * NULL; the caller frees it. */
char *gw_s3_host_bucket(const struct gw_req *g, struct spx_http_req *req);
int gw_s3_open(struct spx_gw *gw);
void gw_s3_close(struct spx_gw *gw);

#endif
