/* s3_int.h: what the files of the S3 API share. Internal to lib/gw.
 *
 *   s3.c         the pipeline, the operation table, routing, errors and
 *                the helpers every operation uses
 *   s3_put.c     PutObject and UploadPart: the streaming write path
 *   s3_get.c     GetObject and HeadObject
 *   s3_delete.c  DeleteObject and DeleteObjects
 *   s3_copy.c    CopyObject and UploadPartCopy
 *   s3_bucket.c  buckets and their configuration: create, delete, head,
 *                location, versioning, bucket and object tagging
 *   s3_list.c    ListObjects, ListObjectsV2, ListObjectVersions
 *   s3_mpu.c     the rest of multipart: create, complete, abort, list
 *
 * Every operation is one row of the table in s3.c: its name, how a request
 * is recognised, whether it works in a bucket the caller must own (the
 * pipeline opens that bucket once, as g->s3->b, before the handler runs),
 * and its handlers. A handler returns 0 with resp ready, or -1 with the
 * error recorded (s3_fail, s3_obj_fail: spx_api_error underneath); the
 * pipeline renders every error in one place.
 */
#ifndef SPX_S3_INT_H
#define SPX_S3_INT_H

#include "auth/chunked.h"
#include "checksum.h"
#include "gw/gw_int.h"
#include "obj/obj.h"

/* The XML bodies the gateway gathers (CompleteMultipartUpload,
 * DeleteObjects, configurations). */
#define S3_XML_BODY_MAX ((size_t)2 << 20)

typedef int s3_fn(struct gw_req *g, struct spx_http_req *req,
		  struct spx_http_resp *resp);
/* A piece of a streamed body. */
typedef int s3_body_fn(struct gw_req *g, struct spx_http_req *req,
		       const char *data, size_t len);

enum s3_where { S3_SERVICE, S3_BUCKET, S3_OBJECT };
enum {
	S3_OWN = 1 << 0,    /* in a bucket, as the access decision allows
			     * (s3_authorize) */
	S3_STREAM = 1 << 1, /* the body goes to begin/body, not gathered */
	S3_DIGEST = 1 << 2, /* the body needs Content-MD5 or a checksum */
	S3_OBJCK = 1 << 3,  /* x-amz-checksum-* name the object, not the body */
	S3_ACL = 1 << 4,    /* takes x-amz-acl and x-amz-grant-* headers */
};

struct s3_op {
	const char *name;   /* "PutObject", as the S3 API reference names it */
	const char *method; /* "PUT" */
	enum s3_where where;
	const char *sub;    /* a subresource it needs ("uploadId|partNumber":
			     * one of them), or NULL */
	const char *header; /* a header it needs, or "!name": one it must not
			     * have; NULL */
	unsigned flags;
	s3_fn *begin;	    /* S3_STREAM: once the headers are in */
	s3_body_fn *body;   /* S3_STREAM: each piece of the body */
	s3_fn *run;	    /* once the body is complete */
};

struct s3_post;

struct gw_s3 {
	char *bucket, *key;
	struct spx_obj_bucket b; /* the bucket, for S3_OWN operations */
	const struct s3_op *op;
	struct spx_kvlist err_headers; /* headers an error answer carries */
	struct spx_kvlist cors;	/* Access-Control-* every answer carries */
	bool cors_added;	/* ... and the answer has them */
	struct spx_buf body;	/* a gathered (XML) body */
	bool chunked;		/* the body is aws-chunked: decoded by ch */
	struct spx_chunked ch;
	/* the write path (s3_put.c) */
	struct spx_obj_writer *w;
	int werr;		/* a write failed: its rc */
	bool has_ck;
	enum spx_cksum_algo algo;
	struct spx_cksum ck;
	bool has_md5;
	unsigned char md5[16];
	int part;		/* UploadPart: the part number */
	const char *if_match, *if_none_match; /* conditional PUT */
	bool versioned;		/* PutObject: the bucket has versioning */
	struct s3_post *post;	/* PostObject (s3_post.c) */
	/* The access decision's reading of bucket b (s3_access.c), kept
	 * for the request (DeleteObjects decides each key). */
	bool acc_read;
	struct json_t *acc_policy; /* NULL: none */
	bool acc_pab_read;
	unsigned acc_pab;
	/* A write's object ACL (s3_acl_write_check), as kept: NULL for the
	 * default, the bucket owner's FULL_CONTROL. */
	char *acl;
};

/* ---- errors (s3.c): each records the error and returns -1 ---- */

int s3_fail(struct gw_req *g, int http, const char *code, const char *fmt,
	    ...) __attribute__((format(printf, 4, 5)));
/* An engine code (enum spx_obj_rc) in S3's words. */
const struct spx_apierr *s3_obj_err(int rc);
/* An engine failure in S3's words; a 5xx one is logged with the engine's
 * own message first. */
int s3_obj_fail(struct gw_req *g, int rc);
/* An s3conf parser's refusal. */
int s3_conf_fail(const struct spx_apierr *e);
int s3_not_impl(void);
int s3_malformed(void);
/* A header the error answer must carry (x-amz-delete-marker, ...). */
void s3_err_header(struct gw_req *g, const char *k, const char *v);
/* After NoSuchKey or MethodNotAllowed for a delete marker: the headers S3
 * sends then. Call it before recording the failure. */
void s3_marker_headers(struct gw_req *g, const char *vid, int rc);

/* ---- helpers (s3.c) ---- */

bool s3_has(const struct gw_req *g, const char *param);
/* HEAD answers carry no body. */
void s3_headless(struct spx_http_req *req, struct spx_http_resp *resp);
/* An answer without a body: 204 after a delete, 200 after a create. */
void s3_empty_answer(struct gw_req *g, struct spx_http_resp *resp,
		     int status);
/* An engine call's rc: the empty answer, or its failure recorded. */
int s3_empty_or_fail(struct gw_req *g, struct spx_http_resp *resp, int rc,
		     int status);
/* x-amz-version-id, in answers about a bucket that has (had) versioning
 * or when the client named a version. */
void s3_version_header(struct spx_http_resp *resp, bool show,
		       const char *vid);
/* The versionId parameter into *vid (NULL when absent); -1 (recorded)
 * when it is malformed. */
int s3_version_param(struct gw_req *g, const char **vid);
/* Stat the request's object, in the version its versionId names (*want,
 * NULL for the current one): -1 (recorded) when it is malformed, missing
 * or a delete marker, with the headers S3 sends then. m is the caller's
 * to release either way. */
int s3_stat_named(struct gw_req *g, const char **want,
		  struct spx_obj_meta *m);
/* Open bucket name (NoSuchBucket when it is not there or cannot be). */
int s3_find_bucket(struct gw_req *g, const char *name,
		   struct spx_obj_bucket *b);
/* Access (s3_access.c). The IAM action operation op needs ("s3:GetObject";
 * with a versionId, the Version one where S3 has it). */
void s3_action(const struct gw_req *g, const char *op, char *out,
	       size_t len);
/* May the caller (g->who, or anonymous when !g->authed) do action on
 * bucket b, or its object key (NULL: the bucket)? 0, or -1 with
 * AccessDenied recorded: the one decision, spx_s3_access, with the
 * bucket's policy and public access block. */
int s3_authorize(struct gw_req *g, struct spx_http_req *req,
		 const struct spx_obj_bucket *b, const char *action,
		 const char *key);
/* The bucket b against header's expected owner, when the request sends
 * one: 403 AccessDenied when b is another account's (S3's bucket owner
 * condition), 400 when the header is no account id. -1 recorded. */
int s3_expected_owner(struct gw_req *g, struct spx_http_req *req,
		      const char *header, const struct spx_obj_bucket *b);
/* May the caller read version vid (NULL: the current one) of key in b,
 * another bucket than the request's, as a copy's source: GetObject's
 * decision, with that version's ACL. */
int s3_authorize_source(struct gw_req *g, struct spx_http_req *req,
			const struct spx_obj_bucket *b, const char *key,
			const char *vid);
/* ACL headers (x-amz-acl, x-amz-grant-*) in h on a write to b: allowed
 * only as the bucket's object ownership allows; -1 recorded. Where ACLs
 * are enabled the new object's ACL (and so its owner) is kept in
 * g->s3->acl for s3_acl_meta. */
int s3_acl_write_check(struct gw_req *g, const struct spx_kvlist *h,
		       const struct spx_obj_bucket *b);
/* The object's ACL as a system entry of m (S3_ACL_SYS, never sent as a
 * header), replacing any m has (a copy's source's). */
void s3_acl_meta(struct gw_req *g, struct spx_obj_meta *m);
/* CreateBucket's ACL headers under ownership own: *out the new bucket's
 * ACL document (NULL: private; the caller frees); -1 recorded. */
int s3_acl_create(struct gw_req *g, struct spx_http_req *req,
		  const char *own, char **out);
/* The system entry that keeps an object's ACL; entries named x-spx-*
 * are spx's own and never sent. */
#define S3_ACL_SYS "x-spx-acl"
/* Who began a multipart upload: its account, and the name it shows. */
#define S3_INITIATOR_SYS "x-spx-initiator"
#define S3_INITIATOR_NAME_SYS "x-spx-initiator-name"
#define S3_SPX_SYS "x-spx-"

/* A storage class S3 knows. */
bool s3_storage_class_valid(const char *c);
/* The system headers and x-amz-meta-* of the request into m. */
void s3_meta_from_headers(struct spx_http_req *req, struct spx_obj_meta *m);
/* The same from any list of header-like names and values (a form's
 * fields). */
void s3_meta_from_list(const struct spx_kvlist *h, struct spx_obj_meta *m);
/* x-amz-tagging into m->tags; -1 (recorded) when it is bad. */
int s3_tags_from_header(struct gw_req *g, struct spx_http_req *req,
			struct spx_obj_meta *m);
/* "crc32" for SPX_CKSUM_CRC32: how checksums are keyed in metadata. */
const char *s3_cksum_key(enum spx_cksum_algo a);
/* Conditional writes (PutObject, CompleteMultipartUpload): the
 * If-None-Match and If-Match headers into g->s3 (If-None-Match other than
 * "*" is NotImplemented), and the check an spx_obj_cond_fn makes of them
 * under the key's lock (ctx: the struct gw_s3). */
int s3_write_cond_headers(struct gw_req *g, struct spx_http_req *req);
int s3_write_cond(void *ctx, const struct spx_obj_meta *cur);
/* The upload's checksum algorithm (*on false when it asked for none; *full
 * true for FULL_OBJECT, may be NULL); -1 (recorded) if there is no such
 * upload. */
int s3_upload_algo(struct gw_req *g, const char *id, enum spx_cksum_algo *a,
		   bool *on, bool *full);
/* The part number of UploadPart and UploadPartCopy; -1 (recorded) when it
 * is not 1..10000 or there is no upload id. */
int s3_part_number(struct gw_req *g, int *part);

/* aws-chunked bodies (s3.c). */
bool s3_streaming(const struct gw_req *g);
int s3_chunked_begin(struct gw_req *g, struct spx_http_req *req,
		     spx_chunked_out_fn out);
int s3_chunked_feed(struct gw_req *g, const char *data, size_t len);
int s3_chunked_end(struct gw_req *g);

/* Listings (s3_list.c). */
/* Text for a listing, URL-encoded when the client asked for it. */
void s3_list_text(struct spx_xml *x, const char *name, const char *v,
		  bool url);
/* <Owner> of a listing entry: the bucket's owner (every object is the
 * bucket owner's, as under BucketOwnerEnforced); in ListBuckets, the
 * caller. */
void s3_owner_elem(struct gw_req *g, struct spx_xml *x);
/* The CommonPrefixes and EncodingType that end a listing. */
void s3_list_tail(struct spx_xml *x, char **prefixes, size_t n, bool url);
/* encoding-type (only "url") and the count parameter `name` (0..1000,
 * default 1000, more is 1000); -1 (recorded) when bad. */
int s3_list_params(struct gw_req *g, const char *name, long *max);

/* Object lock (s3_lock.c). The bucket's configuration (*conf, decref;
 * NULL when it has no object lock); -1 recorded. */
int s3_lock_conf(struct gw_req *g, const struct spx_obj_bucket *b,
		 struct json_t **conf);
/* A write's retention and legal hold (x-amz-object-lock-* headers, else
 * the bucket's default retention) into m->sys, whose lock headers (a
 * copy's source's) go first; need_digest: PutObject, which must then
 * carry Content-MD5 or a checksum. -1 recorded. */
int s3_lock_for_write(struct gw_req *g, struct spx_http_req *req,
		      struct spx_obj_meta *m, bool need_digest);
/* The same for a POST upload of key: the settings from its form fields. */
int s3_lock_for_post(struct gw_req *g, struct spx_http_req *req,
		     const struct spx_kvlist *fields, const char *key,
		     struct spx_obj_meta *m);
/* CreateBucket with x-amz-bucket-object-lock-enabled: true, once made:
 * versioning Enabled and an empty configuration. */
int s3_lock_on_create(struct gw_req *g, struct spx_http_req *req);
/* Removing a version: the engine asks s3_lock_cond (ctx: a struct
 * s3_lock_ctx) under the key's lock; SPX_OBJ_LOCKED when its legal hold
 * or retention forbids it. */
struct s3_lock_ctx {
	double now;
	bool bypass;   /* x-amz-bypass-governance-retention, allowed */
	bool removing; /* the version goes (legal hold counts) */
};
void s3_lock_ctx_init(struct gw_req *g, struct spx_http_req *req,
		      const char *key, struct s3_lock_ctx *c);
int s3_lock_cond(void *ctx, const struct spx_obj_meta *v);

/* ---- the handlers, by file ---- */

int s3_put_begin(struct gw_req *, struct spx_http_req *, struct spx_http_resp *);
int s3_put_body(struct gw_req *, struct spx_http_req *, const char *, size_t);
int s3_put_end(struct gw_req *, struct spx_http_req *, struct spx_http_resp *);
/* POST object (s3_post.c): a browser form upload, authenticated by its
 * form. */
s3_fn s3_post_begin, s3_post_end;
s3_body_fn s3_post_body;
void s3_post_free(struct s3_post *p);
s3_fn s3_get_object;
s3_fn s3_get_attributes;
s3_fn s3_delete_object, s3_delete_objects;
s3_fn s3_copy_object, s3_upload_part_copy;
s3_fn s3_list_buckets, s3_create_bucket, s3_delete_bucket, s3_head_bucket,
	s3_get_location, s3_get_versioning, s3_put_versioning,
	s3_get_bucket_tagging, s3_put_bucket_tagging, s3_delete_bucket_tagging,
	s3_get_object_tagging, s3_put_object_tagging,
	s3_delete_object_tagging;
s3_fn s3_put_bucket_cors, s3_get_bucket_cors, s3_delete_bucket_cors;
/* Is the current version m of bucket b past its expiration by the
 * bucket's lifecycle rules (s3_get.c)? 1 yes, 0 no, -1 with the error
 * answered. When it will expire, resp (may be NULL) gets the
 * x-amz-expiration header saying when and by which rule. */
/* After a write of m: its x-amz-expiration, as S3 sends it on PutObject,
 * CopyObject and CompleteMultipartUpload (the rules unreadable: none). */
void s3_life_header(struct gw_req *g, const struct spx_obj_bucket *b,
		    const struct spx_obj_meta *m, struct spx_http_resp *resp);
int s3_life_expired(struct gw_req *g, const struct spx_obj_bucket *b,
		    const struct spx_obj_meta *m, struct spx_http_resp *resp);
s3_fn s3_put_bucket_lifecycle, s3_get_bucket_lifecycle,
	s3_delete_bucket_lifecycle;
s3_fn s3_put_bucket_policy, s3_get_bucket_policy, s3_delete_bucket_policy,
	s3_get_policy_status, s3_put_pab, s3_get_pab, s3_delete_pab,
	s3_put_ownership, s3_get_ownership, s3_delete_ownership,
	s3_get_bucket_acl, s3_get_object_acl, s3_put_acl;
s3_fn s3_put_lock_conf, s3_get_lock_conf, s3_get_retention, s3_put_retention,
	s3_get_legal_hold, s3_put_legal_hold;
/* OPTIONS: the preflight answered from the rules of the bucket g->s3->b
 * (opened, its owner not checked: a browser's preflight carries no
 * credentials). */
s3_fn s3_cors_preflight;
/* A request with an Origin to bucket g->s3->b (opened): the CORS headers
 * of the first rule matching its origin and method into g->s3->cors, for
 * whatever answer it gets. Best effort: unreadable rules give none. */
void s3_cors_actual(struct gw_req *g, struct spx_http_req *req);
s3_fn s3_list_objects, s3_list_objects_v2, s3_list_versions;
s3_fn s3_create_mpu, s3_complete_mpu, s3_abort_mpu, s3_list_parts,
	s3_list_uploads;

#endif
