/* pgroup.h: EC2 placement groups, kept in the record store.
 *
 * Records, per account:
 *   placement-groups/<account>/<pg-id>
 * holding the PlacementGroup item EC2 describes (GroupName, GroupId,
 * GroupArn, State "available", Strategy, PartitionCount for partition,
 * SpreadLevel for spread, Tags). Names are unique per account; a name is
 * 1 to 255 printable ASCII characters (EC2: "Up to 255 ASCII
 * characters").
 *
 * Rules, as EC2 states them: Strategy is cluster, spread or partition;
 * PartitionCount (1 to 7) only with partition (default 2); SpreadLevel
 * only with spread, and "host" only on Outposts, so "rack" (the default)
 * here.
 *
 * Membership is the instances' own: an instance launched into a group
 * records its GroupName and GroupId under Placement (instance.h), and is
 * a member while it is not shutting-down or terminated. So a group's
 * place is released as soon as TerminateInstances is answered, or when
 * a launch fails (the instance ends terminated), and the same group
 * takes a new instance at once. This node is one host: a spread group
 * holds one member here (RunInstances: InsufficientInstanceCapacity).
 *
 * Creation, deletion and RunInstances' membership check take the node's
 * instance lock (lock below, run/instances.lock), so a name cannot be
 * taken twice, and a group cannot be deleted while a launch into it is
 * being recorded, nor two launches both take a spread group's one place.
 *
 * Functions record errors with spx_ec2_fault() in EC2's words and return
 * 0 or -1.
 */
#ifndef SPX_EC2_PGROUP_H
#define SPX_EC2_PGROUP_H

#include <jansson.h>
#include <stdbool.h>

struct spx_state;

#define SPX_PG_NAME_MAX 255
#define SPX_PG_PARTITIONS_MAX 7

/* Is name a group name EC2 takes (InvalidParameterValue if not)? */
int spx_pg_name_check(const char *name);
/* "pg-" and 8 or 17 lowercase hex digits. */
bool spx_pg_id_wellformed(const char *id);

/* CreatePlacementGroup: req the parsed request, tags the TagList from its
 * TagSpecifications, lock the node's instance lock file. *out (a new
 * reference) is the record. */
int spx_pg_create(struct spx_state *st, const char *lock, const char *region,
		  const char *account, const json_t *req, const json_t *tags,
		  json_t **out);
/* The record of account's group id (InvalidPlacementGroupId.Malformed,
 * InvalidPlacementGroup.Unknown). */
int spx_pg_get(struct spx_state *st, const char *account, const char *id,
	       json_t **out);
/* The record of account's group named name (InvalidPlacementGroup.Unknown). */
int spx_pg_find(struct spx_state *st, const char *account, const char *name,
		json_t **out);
/* Every group record of account, sorted by GroupId. */
int spx_pg_list(struct spx_state *st, const char *account, json_t **out);
/* DeletePlacementGroup by name: InvalidPlacementGroup.Unknown, or .InUse
 * while it has a member (under the lock). */
int spx_pg_delete(struct spx_state *st, const char *lock, const char *account,
		  const char *name);
/* Tags (the restype row "placement-group"). */
int spx_pg_set_tags(struct spx_state *st, const char *account, const char *id,
		    const json_t *set, const json_t *unset);
/* The PlacementGroup item of a record (a new reference). */
json_t *spx_pg_item(const json_t *rec);

#endif
