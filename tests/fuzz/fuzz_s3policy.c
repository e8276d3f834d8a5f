/* fuzz_s3policy: bucket policies on any bytes. A policy the parser accepts
 * is evaluated for a few requests (owner, another account, anonymous,
 * with and without condition keys) and asked whether it is public; none
 * of that may crash, and the decision keeps its order: the owner is never
 * refused but by a deny, nobody is allowed by nothing. */
#include "spx.h"

#include <jansson.h>

#include "gw/s3policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
	const char *account, *arn, *action, *resource;
} reqs[] = {
	{"111111111111", "arn:aws:iam::111111111111:root", "s3:GetObject",
	 "arn:aws:s3:::bkt/a/b"},
	{"222222222222", "arn:aws:iam::222222222222:user/bob", "s3:PutObject",
	 "arn:aws:s3:::bkt/x"},
	{"", "", "s3:ListBucket", "arn:aws:s3:::bkt"},
	{"", "", "s3:PutBucketPolicy", "arn:aws:s3:::bkt"},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_kvlist keys = SPX_KVLIST_INIT;
	char why[160];
	json_t *pol = NULL;

	if (spx_s3_policy_parse((const char *)data, size, "bkt", &pol, why,
				sizeof(why)) < 0) {
		if (!why[0] || strlen(why) >= sizeof(why))
			abort();
		return 0;
	}
	spx_kv_add(&keys, "aws:SourceIp", "10.1.2.3");
	spx_kv_add(&keys, "aws:SecureTransport", "true");
	spx_kv_add(&keys, "aws:CurrentTime", "2026-12-01T00:00:00Z");
	spx_kv_add(&keys, "s3:prefix", "a/");
	spx_kv_add(&keys, "s3:max-keys", "1000");
	(void)spx_s3_policy_public(pol);
	for (size_t i = 0; i < SPX_ARRAY_SIZE(reqs); i++)
		for (int k = 0; k < 2; k++) {
			struct spx_s3_access_bucket b = {
				.owner = "111111111111",
				.policy = pol,
				.restrict_public = k,
			};
			struct spx_s3_access_req r = {
				reqs[i].account, reqs[i].arn, reqs[i].action,
				reqs[i].resource, k ? &keys : NULL,
			};
			enum spx_s3_policy_says says = spx_s3_policy_eval(pol, &r);
			enum spx_s3_access_why w = spx_s3_access(&b, &r);

			if (i == 0 && says != SPX_S3_POLICY_DENY && w < 0)
				abort();
			if (says == SPX_S3_POLICY_NOTHING && i > 0 && w > 0)
				abort();
		}
	spx_kv_free(&keys);
	json_decref(pol);
	return 0;
}
