/* launchtemplate.h: EC2 launch templates, kept in the record store.
 *
 * A launch template is a name and a first version holding the
 * LaunchTemplateData of the request, as the model parsed it (the JSON of
 * RequestLaunchTemplateData): nothing here interprets it yet; RunInstances
 * will. Records, per account:
 *   launch-templates/<account>/<lt-id>                  the template
 *   launch-template-names/<account>/<sha256-hex(name)>  {"LaunchTemplateId"}
 * The name record is the commit point, as for key pairs: create writes the
 * template, then creates the name record (of concurrent creates of one name
 * exactly one wins); delete removes the name record first.
 *
 * The template record is the LaunchTemplate item EC2 describes
 * (LaunchTemplateId, LaunchTemplateName, CreateTime in seconds, CreatedBy,
 * DefaultVersionNumber, LatestVersionNumber, Tags) plus "Versions", an
 * array of LaunchTemplateVersion items. spx_lt_item() gives the item
 * without the versions.
 *
 * Errors are recorded with spx_ec2_fault() in EC2's words; every function
 * returns 0 or -1.
 */
#ifndef SPX_EC2_LAUNCHTEMPLATE_H
#define SPX_EC2_LAUNCHTEMPLATE_H

#include <jansson.h>
#include <time.h>

struct spx_state;

/* Check a name: 3 to 128 of [A-Za-z0-9().-/_]. */
int spx_lt_name_check(const char *name);

/* Check LaunchTemplateData for the combinations EC2 documents as
 * exclusive (InstanceRequirements with InstanceType; AllowedInstanceTypes
 * with ExcludedInstanceTypes): InvalidParameterCombination. */
int spx_lt_data_check(const json_t *data);

/* Create a template (its data checked with spx_lt_data_check); *out (a new reference) is its record. tags: a
 * TagList (may be NULL); data: the LaunchTemplateData (copied). */
int spx_lt_create(struct spx_state *st, const char *account,
		  const char *created_by, const char *name,
		  const char *version_description, const json_t *data,
		  const json_t *tags, time_t now, json_t **out);
/* The record of the template with that id (if id) or else that name. */
int spx_lt_get(struct spx_state *st, const char *account, const char *id,
	       const char *name, json_t **out);
/* Every template of the account, records sorted by id. */
int spx_lt_list(struct spx_state *st, const char *account, json_t **out);
/* Delete by id (if id) or else by name; *out (may be NULL) gets the
 * deleted record. */
int spx_lt_delete(struct spx_state *st, const char *account, const char *id,
		  const char *name, json_t **out);
/* Remove unset then add set (TagLists, NULL: none) on the template id. */
int spx_lt_set_tags(struct spx_state *st, const char *account,
		    const char *id, const json_t *set, const json_t *unset);

/* The LaunchTemplate item of a record (a new reference). */
json_t *spx_lt_item(const json_t *rec);

#endif
