/* tags.h: EC2 tags: their rules, TagSpecifications on create actions, and
 * the table of taggable resource types that CreateTags, DeleteTags and
 * DescribeTags work through.
 *
 * A tag list is the JSON of EC2's TagList: [{"Key": k, "Value": v}, ...].
 * Rules, as EC2's user guide states them ("Tag restrictions"): at most 50
 * tags on a resource; a key is 1 to 127 characters, a value 0 to 255
 * (Unicode characters, not bytes; other AWS services allow 128 and 256); a
 * key may not begin with "aws:" in any case (reserved for AWS). Keys are
 * unique per resource and case-sensitive.
 *
 * Each taggable resource type is a row of spx_ec2_restypes: its id prefix
 * ("key" in key-0123456789abcdef0), its ResourceType name ("key-pair") and
 * two functions over lib/state, so that tagging a new kind of resource is
 * one row and two small functions beside that resource's own code.
 */
#ifndef SPX_EC2_TAGS_H
#define SPX_EC2_TAGS_H

#include <jansson.h>
#include <stdbool.h>

struct spx_state;

/* Check a tag list from a request with spx_ec2_tags_check's rules
 * (ec2/keypair.h): every tag has a Key (where names it in the message:
 * "Tag", "TagSpecification.1.Tag"). For DeleteTags (del) only that: the
 * list names what to remove. */
int spx_ec2_taglist_check(const json_t *tags, const char *where, bool del);
/* Set tags in have (an array, changed in place): existing keys get the new
 * value, new keys are appended. Fails with TagLimitExceeded past 50. */
int spx_ec2_tags_merge(json_t *have, const json_t *add);
/* DeleteTags: a tag given with only its key goes whatever its value; one
 * given with a value (even "") goes only if its value is that. */
void spx_ec2_tags_remove(json_t *have, const json_t *del);

/* The tags for a new resource of type from a create action's
 * TagSpecifications (the parsed list, or NULL): *out is a new array, empty
 * when nothing applies. A specification for another resource type, one
 * without a ResourceType, or the same type twice is InvalidParameterValue. */
int spx_ec2_tagspec(const json_t *specs, const char *type, json_t **out);

struct spx_ec2_restype {
	const char *prefix; /* "key" */
	const char *type;   /* "key-pair" */
	/* The tags of account's resource id: *tags, a new TagList. An
	 * absent resource is the type's own NotFound error. */
	int (*get_tags)(struct spx_state *st, const char *account,
			const char *id, json_t **tags);
	/* In one atomic change of the resource: remove unset (a TagList
	 * whose Values may be absent, as DeleteTags takes them; NULL: none),
	 * then add or overwrite set (NULL: none); fail with TagLimitExceeded
	 * past 50 tags. */
	int (*set_tags)(struct spx_state *st, const char *account,
			const char *id, const json_t *set,
			const json_t *unset);
	/* Append {"ResourceId": id, "Tags": [...]} for every resource of
	 * account to out (an array). */
	int (*list_tags)(struct spx_state *st, const char *account,
			 json_t *out);
};

/* The table, NULL-terminated. */
extern const struct spx_ec2_restype *const spx_ec2_restypes[];

/* The type whose prefix an id has ("key-0abc..." -> key-pair), or NULL. */
const struct spx_ec2_restype *spx_ec2_restype_of(const char *id);

/* CreateTags / DeleteTags on resource ids (a parsed ResourceIdList) for
 * account. An id of no known type is InvalidID "The ID 'x' is not valid".
 * Every resource is checked first (it exists; the tags fit) and only then
 * changed, so a request that fails on its third id changes nothing, short
 * of a race with a concurrent delete. */
int spx_ec2_tags_create(struct spx_state *st, const char *account,
			const json_t *ids, const json_t *tags);
int spx_ec2_tags_delete(struct spx_state *st, const char *account,
			const json_t *ids, const json_t *tags);
/* DescribeTags: every tag of account's resources as TagDescription items
 * {"Key", "ResourceId", "ResourceType", "Value"} and, for the tag:KEY
 * filter, the resource's whole list under "Tags"; sorted by resource id,
 * then key. *out is a new array. */
int spx_ec2_tags_describe(struct spx_state *st, const char *account,
			  json_t **out);

#endif
