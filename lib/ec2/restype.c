/* restype.c: the taggable resource types (see tags.h): each row and the
 * two small functions that reach its records. A new kind of resource
 * adds its row here. */
#include "spx.h"

#include "ec2/fault.h"
#include "ec2/launchtemplate.h"
#include "ec2/tags.h"

/* ---- launch templates --------------------------------------------- */

static int lt_get_tags(struct spx_state *st, const char *account,
		       const char *id, json_t **tags)
{
	json_t *rec;

	*tags = NULL;
	if (spx_lt_get(st, account, id, NULL, &rec) < 0)
		return -1;
	*tags = json_incref(json_object_get(rec, "Tags"));
	if (!*tags)
		*tags = json_array();
	json_decref(rec);
	return 0;
}

static int lt_list_tags(struct spx_state *st, const char *account,
			json_t *out)
{
	json_t *all, *rec;
	size_t i;

	if (spx_lt_list(st, account, &all) < 0)
		return -1;
	json_array_foreach(all, i, rec)
		json_array_append_new(
			out, json_pack("{s:O, s:O}", "ResourceId",
				       json_object_get(rec, "LaunchTemplateId"),
				       "Tags", json_object_get(rec, "Tags")));
	json_decref(all);
	return 0;
}

static const struct spx_ec2_restype launch_templates = {
	"lt", "launch-template", lt_get_tags, spx_lt_set_tags, lt_list_tags,
};

const struct spx_ec2_restype *const spx_ec2_restypes[] = {
	&launch_templates,
	NULL,
};
