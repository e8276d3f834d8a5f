/* s3conf.h: the documents S3 reads from request bodies and headers —
 * tag sets (PutBucketTagging, PutObjectTagging, the x-amz-tagging header),
 * VersioningConfiguration, CreateBucketConfiguration, and the part list
 * of CompleteMultipartUpload, the object list of DeleteObjects and
 * CORSConfiguration —
 * parsed under tight bounds and checked with S3's rules. Network input:
 * fuzz_s3conf runs all of them.
 *
 * Each parser returns 0, or -1 with *err set to the S3 error to answer
 * (HTTP status, code, message) and the same message recorded with
 * spx_error(SPX_USAGE). out is only filled on success.
 *
 * Tag rules (S3's): keys 1..128 characters, values 0..256, both valid
 * UTF-8; no key twice; no key starting "aws:"; at most 10 tags on an
 * object (BadRequest), 50 on a bucket. */
#ifndef SPX_S3CONF_H
#define SPX_S3CONF_H

#include "spx.h"

#include <jansson.h>

enum spx_s3_tags_of {
	SPX_S3_TAGS_OBJECT,	/* at most 10 */
	SPX_S3_TAGS_BUCKET,	/* at most 50 */
};
#define SPX_S3_TAG_KEY_MAX 128
#define SPX_S3_TAG_VALUE_MAX 256

/* <Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>...</TagSet>
 * </Tagging>, namespace optional. */
int spx_s3_tags_xml(const char *p, size_t n, enum spx_s3_tags_of of,
		    struct spx_kvlist *out, struct spx_apierr *err);
/* The x-amz-tagging header: "k1=v1&k2=v2", URL-encoded. */
int spx_s3_tags_header(const char *s, enum spx_s3_tags_of of,
		       struct spx_kvlist *out, struct spx_apierr *err);
/* <VersioningConfiguration><Status>Enabled|Suspended</Status>
 * [<MfaDelete>Disabled</MfaDelete>]: *enabled is true for Enabled.
 * MfaDelete Enabled is refused (501 NotImplemented): spx has no MFA. */
int spx_s3_versioning_xml(const char *p, size_t n, bool *enabled,
			  struct spx_apierr *err);

/* Record a refusal of an S3 body or header: err (S3's code and message,
 * static storage) and spx_error(SPX_USAGE); always -1. */
int spx_s3_conf_fail(struct spx_apierr *err, int http, const char *code,
		     const char *message);

/* <CreateBucketConfiguration><LocationConstraint>R</LocationConstraint>:
 * *location (caller frees) is R, or NULL when it names none. */
int spx_s3_create_bucket_xml(const char *p, size_t n, char **location,
			     struct spx_apierr *err);

/* DeleteObjects: <Delete>[<Quiet>true</Quiet>]<Object><Key>k</Key>
 * [<VersionId>v</VersionId>]</Object>... (1..1000 objects)</Delete>. An
 * object without a Key is kept with key NULL (answered in its place). */
struct spx_s3_delete_item {
	char *key, *vid;
};
struct spx_s3_delete {
	struct spx_s3_delete_item *v;
	size_t n;
	bool quiet;
};
int spx_s3_delete_xml(const char *p, size_t n, struct spx_s3_delete *out,
		      struct spx_apierr *err);
void spx_s3_delete_release(struct spx_s3_delete *d);

/* CompleteMultipartUpload: <CompleteMultipartUpload><Part><PartNumber>N
 * </PartNumber><ETag>e</ETag>[<ck_elem>c</ck_elem>]</Part>... (1..10000
 * parts, N 1..10000, in the order given)</CompleteMultipartUpload>.
 * ck_elem ("ChecksumCRC32", or NULL) names the checksum kept with each
 * part (NULL where a part has none). */
struct spx_s3_part_item {
	int num;
	char *etag, *checksum;
};
struct spx_s3_complete {
	struct spx_s3_part_item *v;
	size_t n;
};
int spx_s3_complete_xml(const char *p, size_t n, const char *ck_elem,
			struct spx_s3_complete *out, struct spx_apierr *err);
void spx_s3_complete_release(struct spx_s3_complete *c);

/* PutBucketCors: <CORSConfiguration><CORSRule>[<ID>]<AllowedMethod>+
 * <AllowedOrigin>+<AllowedHeader>*<ExposeHeader>*[<MaxAgeSeconds>]
 * </CORSRule>... (1..100 rules)</CORSConfiguration>, S3's rules: methods
 * GET, PUT, POST, DELETE, HEAD; at most one '*' in an origin or an allowed
 * header (InvalidRequest otherwise). *json (caller frees) is the rules as
 * compact JSON, the document spx keeps: [{"ID":..., "AllowedMethods":
 * [...], "AllowedOrigins":[...], "AllowedHeaders":[...], "ExposeHeaders":
 * [...], "MaxAgeSeconds":N}, ...], members absent where the rule has
 * none. */
#define SPX_S3_CORS_RULES_MAX 100
int spx_s3_cors_xml(const char *p, size_t n, char **json,
		    struct spx_apierr *err);
/* The first of rules (that JSON) allowing a request from origin with
 * method and the comma-separated request headers hs (NULL: none), or
 * NULL. Origins and methods compare exactly, headers without case, each
 * pattern's one '*' matching any run of characters. */
const json_t *spx_s3_cors_rule(const json_t *rules, const char *origin,
			       const char *method, const char *hs);
/* Does rule allow every origin ("*" itself)? */
bool spx_s3_cors_any_origin(const json_t *rule);

/* PutPublicAccessBlock: <PublicAccessBlockConfiguration> with any of the
 * four settings below, each true or false (absent: false): *flags gets
 * bit i for spx_s3_pab_names[i] set true. */
#define SPX_S3_PAB_N 4
enum {
	SPX_S3_PAB_BLOCK_ACLS = 1 << 0,
	SPX_S3_PAB_IGNORE_ACLS = 1 << 1,
	SPX_S3_PAB_BLOCK_POLICY = 1 << 2,
	SPX_S3_PAB_RESTRICT = 1 << 3,
	SPX_S3_PAB_ALL = 0xf,
};
extern const char *const spx_s3_pab_names[SPX_S3_PAB_N];
int spx_s3_pab_xml(const char *p, size_t n, unsigned *flags,
		   struct spx_apierr *err);

/* PutBucketOwnershipControls: <OwnershipControls><Rule><ObjectOwnership>
 * BucketOwnerEnforced | BucketOwnerPreferred | ObjectWriter
 * </ObjectOwnership></Rule></OwnershipControls>: *out is that name (a
 * constant). */
int spx_s3_ownership_xml(const char *p, size_t n, const char **out,
			 struct spx_apierr *err);
/* The name, if it is one of the three (a constant), else NULL. */
const char *spx_s3_ownership_name(const char *s);

/* Object lock. PutObjectLockConfiguration: <ObjectLockConfiguration>
 * <ObjectLockEnabled>Enabled</ObjectLockEnabled>[<Rule><DefaultRetention>
 * <Mode>GOVERNANCE|COMPLIANCE</Mode><Days>1..36500</Days> | <Years>1..100
 * </Years></DefaultRetention></Rule>]: *json (caller frees) is
 * {"Mode": M, "Days"|"Years": N}, or {} without a rule. */
int spx_s3_lock_conf_xml(const char *p, size_t n, char **json,
			 struct spx_apierr *err);
/* PutObjectRetention: <Retention><Mode>M</Mode><RetainUntilDate>ISO 8601
 * </RetainUntilDate></Retention>, or neither: *mode (a constant, NULL for
 * neither) and *until (seconds since the epoch, 0 for neither). */
int spx_s3_retention_xml(const char *p, size_t n, const char **mode,
			 double *until, struct spx_apierr *err);
/* PutObjectLegalHold: <LegalHold><Status>ON|OFF</Status></LegalHold>. */
int spx_s3_legal_hold_xml(const char *p, size_t n, bool *on,
			  struct spx_apierr *err);

/* PutBucketLifecycleConfiguration: <LifecycleConfiguration><Rule>...
 * (1..SPX_S3_LIFE_RULES_MAX): *json (caller frees) is the array of the
 * rules, each {"ID", "Status": "Enabled"|"Disabled", "Filter": {["Prefix"],
 * ["Tags": [{"Key","Value"}...]], ["Gt"], ["Lt"] (object sizes), ["And":
 * true]}, ["Legacy": true] (the rule's own <Prefix>), ["Expiration":
 * {"Days"|"Date" (midnight UTC, ISO 8601)|"ExpiredObjectDeleteMarker"}],
 * ["NoncurrentVersionExpiration": {"NoncurrentDays",
 * ["NewerNoncurrentVersions"]}], ["AbortIncompleteMultipartUpload":
 * {"DaysAfterInitiation"}]}, a rule without an ID given one as S3 does.
 * Transitions are NotImplemented (one storage class). */
#define SPX_S3_LIFE_RULES_MAX 1000
int spx_s3_lifecycle_xml(const char *p, size_t n, char **json,
			 struct spx_apierr *err);

#endif
