/* s3acl.h: S3 access control lists — the grants of a bucket or an object
 * where the bucket's ObjectOwnership enables ACLs (ObjectWriter,
 * BucketOwnerPreferred), read from a request (a canned ACL, the
 * x-amz-grant-* headers or an AccessControlPolicy body) under bounds, and
 * asked whether they grant a request (step 4 of spx_s3_access).
 *
 * An ACL is kept as JSON:
 *   {"Owner": "<account id>",
 *    "Grants": [{"Type": "CanonicalUser", "ID": "<account id>",
 *                "Permission": "READ"},
 *               {"Type": "Group", "URI": "http://acs...", ...}]}
 * spx's canonical user id is the account id (12 digits): the Owner ID
 * every answer carries. Grants by e-mail address are refused
 * (UnresolvableGrantByEmailAddress): spx accounts have none.
 *
 * The parsers take network input: fuzz_s3conf runs them. */
#ifndef SPX_S3ACL_H
#define SPX_S3ACL_H

#include "spx.h"

#include <jansson.h>

#include "gw/ec2q.h"

/* S3's limit on the grants of one ACL. */
#define SPX_S3_ACL_MAX_GRANTS 100

#define SPX_S3_ALL_USERS "http://acs.amazonaws.com/groups/global/AllUsers"
#define SPX_S3_AUTH_USERS \
	"http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
#define SPX_S3_LOG_DELIVERY "http://acs.amazonaws.com/groups/s3/LogDelivery"

/* Permissions, as bits: FULL_CONTROL is all four. */
enum {
	SPX_S3_PERM_READ = 1 << 0,
	SPX_S3_PERM_WRITE = 1 << 1,
	SPX_S3_PERM_READ_ACP = 1 << 2,
	SPX_S3_PERM_WRITE_ACP = 1 << 3,
	SPX_S3_PERM_FULL = 0xf,
};

/* The ACL of a resource owned by owner that grants owner FULL_CONTROL
 * and nothing else: what "private" is, and what every bucket and object
 * has that was given no other. */
json_t *spx_s3_acl_private(const char *owner);

/* The ACL a request's headers ask for: the canned ACL x-amz-acl, or the
 * grants of the x-amz-grant-* headers (not both: InvalidRequest), for a
 * resource owned by owner. bucket_owner: the bucket's owner, for an
 * object (bucket-owner-read, bucket-owner-full-control); NULL for a
 * bucket, where those two are private. 0 and *out (NULL when the headers
 * ask nothing; the caller decrefs), or -1 with err (InvalidArgument,
 * InvalidRequest, UnresolvableGrantByEmailAddress). */
int spx_s3_acl_headers(const struct spx_kvlist *h, const char *owner,
		       const char *bucket_owner, json_t **out,
		       struct spx_apierr *err);

/* An AccessControlPolicy body (PutBucketAcl, PutObjectAcl) for a
 * resource owned by owner: its Owner, if given, must be owner
 * (AccessDenied); its grants, 0..100. 0 and *out, or -1 with err
 * (MalformedACLError, InvalidArgument, UnresolvableGrantByEmailAddress,
 * AccessDenied). */
int spx_s3_acl_xml(const char *p, size_t n, const char *owner, json_t **out,
		   struct spx_apierr *err);

/* A kept ACL back from its text: NULL if it is not one (a damaged copy
 * grants nothing). */
json_t *spx_s3_acl_load(const char *p, size_t n);

/* The ACL's owner (never NULL for what the functions above made). */
const char *spx_s3_acl_owner(const json_t *acl);
/* Does it grant AllUsers or AuthenticatedUsers anything (S3's "public"
 * ACL, what BlockPublicAcls refuses and IgnorePublicAcls ignores)? */
bool spx_s3_acl_public(const json_t *acl);
/* Is it owner_id's FULL_CONTROL alone, and owner_id its owner? */
bool spx_s3_acl_is_private(const json_t *acl, const char *owner_id);

/* What an action asks of the ACLs: SPX_S3_ACL_OF_BUCKET or _OBJECT and
 * *perm, or SPX_S3_ACL_OF_NONE (ACLs grant it to nobody). */
enum spx_s3_acl_of {
	SPX_S3_ACL_OF_NONE,
	SPX_S3_ACL_OF_BUCKET,
	SPX_S3_ACL_OF_OBJECT,
};
enum spx_s3_acl_of spx_s3_acl_need(const char *action, unsigned *perm);

/* Does acl grant every bit of perm to the caller, account ("" when
 * anonymous)? ignore_public: IgnorePublicAcls, the AllUsers and
 * AuthenticatedUsers grants count for nothing. */
bool spx_s3_acl_grants(const json_t *acl, const char *account, unsigned perm,
		       bool ignore_public);

/* Permission name to bits (0 if none), and back. */
unsigned spx_s3_perm_bits(const char *name);

#endif
