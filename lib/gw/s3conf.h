/* s3conf.h: the small configuration documents S3 reads from requests —
 * tag sets (PutBucketTagging, PutObjectTagging, the x-amz-tagging header)
 * and VersioningConfiguration — parsed under tight bounds and checked
 * with S3's rules. Network input: fuzz_s3conf runs all of them.
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

struct spx_s3_err {
	int http;
	const char *code;
	const char *message;
};

enum spx_s3_tags_of {
	SPX_S3_TAGS_OBJECT,	/* at most 10 */
	SPX_S3_TAGS_BUCKET,	/* at most 50 */
};
#define SPX_S3_TAG_KEY_MAX 128
#define SPX_S3_TAG_VALUE_MAX 256

/* <Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>...</TagSet>
 * </Tagging>, namespace optional. */
int spx_s3_tags_xml(const char *p, size_t n, enum spx_s3_tags_of of,
		    struct spx_kvlist *out, struct spx_s3_err *err);
/* The x-amz-tagging header: "k1=v1&k2=v2", URL-encoded. */
int spx_s3_tags_header(const char *s, enum spx_s3_tags_of of,
		       struct spx_kvlist *out, struct spx_s3_err *err);
/* <VersioningConfiguration><Status>Enabled|Suspended</Status>
 * [<MfaDelete>Disabled</MfaDelete>]: *enabled is true for Enabled.
 * MfaDelete Enabled is refused (501 NotImplemented): spx has no MFA. */
int spx_s3_versioning_xml(const char *p, size_t n, bool *enabled,
			  struct spx_s3_err *err);

#endif
