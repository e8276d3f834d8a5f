/* s3life: S3 lifecycle rules, what they say about a version, and the
 * pass that applies them to a bucket.
 *
 * A bucket's rules are its "lifecycle" document, the JSON that
 * spx_s3_lifecycle_xml (s3conf.h) makes of PutBucketLifecycleConfiguration.
 * Days are counted as S3 counts them: from the version's creation (a
 * noncurrent version: from when it stopped being current; an upload: from
 * its initiation), plus the rule's days, rounded up to the next midnight
 * UTC. day_s is the length of a day in seconds (86400; tests shorten it,
 * and the rounding is then to the next multiple of day_s).
 *
 * The gateway asks spx_s3_life_expiry on every read of a current
 * version, so that an object past its expiration is never served even
 * before the pass removes it; the pass (spx-obj lifecycle, run by the
 * node agent) makes the change. Object lock wins: a version under
 * retention or legal hold is never removed (a current one may still be
 * covered by a delete marker, as S3 does). */
#ifndef SPX_GW_S3LIFE_H
#define SPX_GW_S3LIFE_H

#include <stdbool.h>
#include <stdint.h>

#include "kv.h"
#include "obj/obj.h"

struct spx_s3_life;

/* The bucket documents: the rules, and where a pass that stopped at its
 * budget goes on (the last key it finished). */
#define SPX_S3_LIFE_DOC "lifecycle"
#define SPX_S3_LIFE_POS_DOC "lifecyclepos"

/* The rules of a lifecycle document; -1 (spx_error) when it is not one.
 * Disabled rules are left out. *out NULL when no rule is enabled. */
int spx_s3_life_load(const char *p, size_t n, struct spx_s3_life **out);
void spx_s3_life_free(struct spx_s3_life *l);
/* The enabled rules of bucket b (*l NULL: none): 0, or a negative
 * SPX_OBJ_ code (SPX_OBJ_INTERNAL for a document that is not rules). */
int spx_s3_life_of(struct spx_obj *s, const struct spx_obj_bucket *b,
		   struct spx_s3_life **l);
/* Does an enabled rule filter on tags (so a version's tags are needed)? */
bool spx_s3_life_tags(const struct spx_s3_life *l);
/* When (ms since the epoch) the current version of key made at mtime_ms
 * with size and tags (NULL: none) expires, by the earliest enabled
 * Expiration (Days or Date) that matches it; INT64_MAX: never. rule (may
 * be NULL) receives that rule's ID, valid while l is. */
int64_t spx_s3_life_expiry(const struct spx_s3_life *l, const char *key,
			   uint64_t size, const struct spx_kvlist *tags,
			   int64_t mtime_ms, int64_t day_s, const char **rule);

struct spx_s3_life_stats {
	uint64_t versions;	/* versions looked at */
	uint64_t expired;	/* current versions expired */
	uint64_t noncurrent;	/* noncurrent versions removed */
	uint64_t markers;	/* expired delete markers removed */
	uint64_t aborted;	/* incomplete uploads aborted */
	uint64_t kept;		/* due, but kept by object lock */
};
/* Apply the bucket's rules as of now_ms, looking at about budget
 * versions (0: no bound): 0 when the bucket was done, 1 when it stopped
 * at the budget (where, is kept in the bucket; the next pass goes on from
 * there), or a negative SPX_OBJ_ code. A bucket without rules is done. */
int spx_s3_life_pass(struct spx_obj *s, struct spx_obj_bucket *b,
		     int64_t now_ms, int64_t day_s, size_t budget,
		     struct spx_s3_life_stats *st);

#endif
