/* filter.h: EC2's Describe filters over JSON items.
 *
 * A Describe action's items are JSON objects in the shape the answer gives
 * them (KeyPairInfo: {"KeyName": ..., "KeyPairId": ..., "Tags": [...]}),
 * so a resource's filters are a table from filter names to paths in an
 * item:
 *
 *   static const struct spx_ec2_filter_field kp_fields[] = {
 *           { "key-name", "KeyName" },
 *           { "fingerprint", "KeyFingerprint" },
 *   };
 *   static const struct spx_ec2_filter_table kp_filters = {
 *           kp_fields, SPX_ARRAY_SIZE(kp_fields), "Tags" };
 *
 * A path is member names joined by '.' ("VCpuInfo.DefaultVCpus"); a list
 * met on the way matches when any element does
 * ("ProcessorInfo.SupportedArchitectures"). A number or boolean is
 * compared in its text form ("2", "true"). With a tags member, the table
 * also answers tag:KEY (a tag with exactly that key whose value matches),
 * tag-key and tag-value.
 *
 * Semantics as EC2 documents them: filters AND together, the values of one
 * filter OR; a value matches with the wildcards '*' (any run, also empty)
 * and '?' (one character), '\' escaping the next character; matching is
 * case-sensitive. A filter whose name the table does not have is
 * InvalidParameterValue "The filter 'NAME' is invalid".
 */
#ifndef SPX_EC2_FILTER_H
#define SPX_EC2_FILTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Bounds, as EC2 sets them: filters per request, values per request. */
#define SPX_EC2_MAX_FILTERS 50
#define SPX_EC2_MAX_FILTER_VALUES 200
/* Bytes in one filter value (keeps matching cheap). */
#define SPX_EC2_MAX_FILTER_VALUE 1024

struct spx_ec2_filter_field {
	const char *name; /* "key-name" */
	const char *path; /* "KeyName" */
};

struct spx_ec2_filter_table {
	const struct spx_ec2_filter_field *fields;
	size_t n;
	const char *tags; /* the member holding the item's tags, or NULL */
};

struct spx_ec2_filters;

/* Compile the request's Filters (the parsed list [{"Name":..,"Values":
 * [..]}], or NULL: no filters) against table t. Returns 0 with *out (NULL
 * when there are no filters; match then accepts everything), or -1 with an
 * EC2 error recorded. */
int spx_ec2_filters_compile(const struct spx_ec2_filter_table *t,
			    const json_t *filters,
			    struct spx_ec2_filters **out);
bool spx_ec2_filters_match(const struct spx_ec2_filters *f,
			   const json_t *item);
void spx_ec2_filters_free(struct spx_ec2_filters *f);
/* The values given for a filter name (borrowed from the request), or
 * NULL: for actions that look up by a filter rather than scan. */
const json_t *spx_ec2_filters_values(const struct spx_ec2_filters *f,
				     const char *name);

/* Does s match pattern (the wildcards above)? Iterative, at most
 * strlen(pattern) * strlen(s) steps. */
bool spx_ec2_wildcard(const char *pattern, const char *s);

/* The values at path in item, as text, each passed to fn until it returns
 * true; returns whether one did. */
bool spx_ec2_json_path_any(const json_t *item, const char *path,
			   bool (*fn)(void *ctx, const char *value),
			   void *ctx);

#endif
