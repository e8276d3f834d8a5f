/* rec.h: EC2 resources as JSON records in lib/state, the small pieces
 * every resource module shares. Each returns a spx_state code (0, or a
 * negative SPX_STATE_* with the error recorded). */
#ifndef SPX_EC2_REC_H
#define SPX_EC2_REC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct spx_state;

/* Read key as JSON: *out (a new reference) and *rev (may be NULL). A
 * record that is not JSON is SPX_STATE_FAIL. */
int spx_ec2_rec_get(struct spx_state *st, const char *key, json_t **out,
		    uint64_t *rev);
/* Write v at key: created (SPX_STATE_EXISTS if taken) when create, else
 * compare-and-swap against expect (0: unconditionally). */
int spx_ec2_rec_put(struct spx_state *st, const char *key, const json_t *v,
		    bool create, uint64_t expect);
/* Change the record at key in place: fn gets it (never NULL) and returns
 * 0 to write it back, 1 to leave it, -1 to fail (an EC2 fault recorded).
 * A compare-and-swap (spx_state_update): fn may run more than once.
 * 0; SPX_STATE_NOTFOUND when there is no record; else -1 with an EC2
 * fault recorded (fn's own, or InternalError for the store). */
int spx_ec2_rec_change(struct spx_state *st, const char *key,
		       int (*fn)(json_t *rec, void *arg), void *arg);
/* The string member k of o, or NULL; spx_ec2_str0: "" for NULL. */
static inline const char *spx_ec2_str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static inline const char *spx_ec2_str0(const json_t *o, const char *k)
{
	const char *s = spx_ec2_str(o, k);

	return s ? s : "";
}

/* "PREFIX-" and 8 or 17 lowercase hex digits, the forms EC2 uses. */
bool spx_ec2_id_wellformed(const char *id, const char *prefix);
/* The item EC2 describes of a record: a deep copy without the members
 * whose names start with "Spx" (a new reference). */
json_t *spx_ec2_rec_item(const json_t *rec);
/* The same made of rec itself, which the caller owns and no longer
 * needs as a record: its "Spx" members removed in place. */
void spx_ec2_rec_strip(json_t *rec);
/* Set and unset (TagLists, either may be NULL) on rec's Tags: the body of
 * CreateTags and DeleteTags for a record (0, or -1 with a fault). */
int spx_ec2_rec_tags(json_t *rec, const json_t *set, const json_t *unset);
/* InternalError in EC2's words for a failed state operation rc; -1. */
int spx_ec2_state_fail(int rc);
/* A kind of resource whose records are "DIR/ACCOUNT/ID", and how EC2
 * words its errors. */
struct spx_ec2_kind {
	const char *dir;	 /* "volumes" */
	const char *prefix;	 /* "vol": ids are "vol-..." */
	const char *noun;	 /* "volume" */
	const char *id_member;	 /* "VolumeId" */
	const char *not_found;	 /* "InvalidVolume.NotFound" */
	const char *malformed;	 /* "InvalidVolumeID.Malformed" */
};
/* The key of account's record id (caller frees). */
char *spx_ec2_kind_key(const struct spx_ec2_kind *k, const char *account,
		       const char *id);
/* The kind's two faults for id; -1. */
int spx_ec2_kind_not_found(const struct spx_ec2_kind *k, const char *id);
int spx_ec2_kind_malformed(const struct spx_ec2_kind *k, const char *id);
/* Read account's record id (*out, a new reference; *rev may be NULL):
 * 0, or -1 with the kind's fault (malformed, not found) or
 * InternalError. */
int spx_ec2_kind_get(struct spx_state *st, const struct spx_ec2_kind *k,
		     const char *account, const char *id, json_t **out,
		     uint64_t *rev);
/* spx_ec2_rec_change on account's record id, with the kind's faults. */
int spx_ec2_kind_change(struct spx_state *st, const struct spx_ec2_kind *k,
			const char *account, const char *id,
			int (*fn)(json_t *rec, void *arg), void *arg);
/* Every record under DIR/ (account NULL) or DIR/ACCOUNT/, sorted by id;
 * a record that cannot be read, or names no id, is logged and left out:
 * one never breaks a listing. 0, or -1 with InternalError. */
int spx_ec2_kind_list(struct spx_state *st, const struct spx_ec2_kind *k,
		      const char *account, json_t **out);
/* A Description of a request (may be NULL): at most max characters, as
 * EC2 bounds descriptions (255); else InvalidParameterValue, -1. */
int spx_ec2_desc_check(const char *desc, long max);
/* Sort an array of objects in place by the string member key (strcmp);
 * with key NULL, an array of strings by themselves. */
void spx_ec2_sort_by(json_t *arr, const char *key);
/* Does the array arr hold the string s? */
bool spx_ec2_has_string(const json_t *arr, const char *s);

#endif
