/* s3policy.h: who may do what to a bucket — bucket policies (the JSON
 * access policy language, parsed under bounds and checked as S3 checks
 * it), and spx_s3_access, the one decision every S3 operation makes.
 *
 * The decision, in AWS's order:
 *   1. a statement of the bucket policy that denies: denied. Only the
 *      bucket owner's root may still read, replace or delete the policy
 *      (as AWS keeps an account from locking itself out);
 *   2. the bucket owner's account: allowed (spx has no IAM policies: a
 *      key of the account may do what the account may);
 *   3. a statement that allows: allowed, unless the bucket's public
 *      access block restricts public buckets and the policy is public
 *      (then it grants nothing outside the owner's account, not even
 *      its statements for named accounts);
 *   4. the ACL grants the caller made by the caller's side (acl_allows);
 *   5. otherwise denied.
 *
 * A policy is network input (PutBucketPolicy): fuzz_s3policy runs it. */
#ifndef SPX_S3POLICY_H
#define SPX_S3POLICY_H

#include "spx.h"

#include <jansson.h>

/* S3's limit on a bucket policy. */
#define SPX_S3_POLICY_MAX (20u << 10)

/* Parse a bucket policy for bucket. 0 and *out (a JSON object, the caller
 * decrefs), or -1 with why (S3's reason, for MalformedPolicy) and the same
 * recorded as spx_error(SPX_USAGE).
 * Version "2012-10-17" or "2008-10-17"; Statement, one or a list (at most
 * 100); each with Effect Allow|Deny, Principal or NotPrincipal ("*",
 * {"AWS": "*" | account id | IAM ARN, or a list}), Action or NotAction
 * ("*" or "s3:" and a name with the wildcards * and ?), Resource or
 * NotResource ("*" or an S3 ARN of this bucket or its objects, wildcards
 * allowed), an optional Sid and Condition ({operator: {key: value or
 * list}}, the operators String*, Numeric*, Date*, Bool, IpAddress,
 * NotIpAddress, Arn*, Null, with IfExists and ForAnyValue:/ForAllValues:;
 * keys: only those the gateway gives a request, as request_keys in
 * s3_access.c does; any other is refused, naming it, since a Deny on a
 * key that is never present would never deny). */
int spx_s3_policy_parse(const char *p, size_t n, const char *bucket,
			json_t **out, char *why, size_t whylen);

/* Is the policy public, in S3's sense: does a statement allow a principal
 * of "*" without a condition that pins the caller (aws:SourceIp to
 * ranges that, as parsed, do not add up to every address of a family,
 * aws:SourceAccount, aws:SourceArn,
 * aws:SourceVpc(e), aws:PrincipalAccount, aws:PrincipalArn,
 * aws:PrincipalOrgID, aws:userid)? */
bool spx_s3_policy_public(const json_t *policy);

/* One request, as the decision sees it. */
struct spx_s3_access_req {
	const char *account; /* the caller's account; "" when anonymous */
	const char *arn;     /* the caller's ARN; "" when anonymous */
	const char *action;  /* "s3:GetObject" */
	const char *resource; /* "arn:aws:s3:::bucket" or ".../key" */
	/* Condition keys, lowercase ("aws:sourceip", "s3:prefix") to their
	 * values; a key the request lacks is absent. */
	const struct spx_kvlist *keys;
};

/* What a policy says of a request. */
enum spx_s3_policy_says {
	SPX_S3_POLICY_NOTHING = 0,
	SPX_S3_POLICY_ALLOW,	    /* a statement allows it */
	SPX_S3_POLICY_ALLOW_PUBLIC, /* only public statements allow it */
	SPX_S3_POLICY_DENY,	    /* a statement denies it */
};
enum spx_s3_policy_says spx_s3_policy_eval(const json_t *policy,
					   const struct spx_s3_access_req *r);

/* The bucket, as the decision sees it. */
struct spx_s3_access_bucket {
	const char *owner;	  /* the owner's account */
	const json_t *policy;	  /* NULL: none */
	bool restrict_public;	  /* PublicAccessBlock RestrictPublicBuckets */
	bool acl_allows;	  /* the ACLs grant the request (step 4) */
};

enum spx_s3_access_why {
	SPX_S3_DENIED_BY_POLICY = -2, /* step 1 */
	SPX_S3_DENIED = -1,	      /* step 5 */
	SPX_S3_ALLOWED_OWNER = 1,     /* step 2 (or 1's exception) */
	SPX_S3_ALLOWED_POLICY,	      /* step 3 */
	SPX_S3_ALLOWED_ACL,	      /* step 4 */
};
/* > 0 allowed, < 0 denied; the value says which step decided. */
enum spx_s3_access_why spx_s3_access(const struct spx_s3_access_bucket *b,
				     const struct spx_s3_access_req *r);

#endif
