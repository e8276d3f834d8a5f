/* ec2_launchtemplate.c: CreateLaunchTemplate (ClientToken idempotent),
 * DescribeLaunchTemplates and DeleteLaunchTemplate over
 * lib/ec2/launchtemplate.h. */
#include "spx.h"

#include "ec2/filter.h"
#include "ec2/launchtemplate.h"
#include "ec2/tags.h"
#include "gw/ec2_int.h"

static const struct spx_ec2_filter_field lt_fields[] = {
	{ "create-time", "CreateTimeText" },
	{ "launch-template-name", "LaunchTemplateName" },
};
static const struct spx_ec2_filter_table lt_filters = {
	lt_fields, SPX_ARRAY_SIZE(lt_fields), "Tags"
};

int ec2_create_launch_template(struct ec2_call *c)
{
	json_t *tags, *rec;
	int rc;

	if (spx_ec2_tagspec(json_object_get(c->in, "TagSpecifications"),
			    "launch-template", &tags) < 0)
		return -1;
	rc = spx_lt_create(c->gw->state, c->account, c->who->arn,
			   ec2_str(c, "LaunchTemplateName"),
			   ec2_str(c, "VersionDescription"),
			   json_object_get(c->in, "LaunchTemplateData"), tags,
			   c->now, &rec);
	json_decref(tags);
	if (rc < 0)
		return -1;
	json_object_set_new(c->out, "LaunchTemplate", spx_lt_item(rec));
	json_decref(rec);
	return 0;
}

static const char *lt_id(const json_t *item)
{
	return json_string_value(json_object_get(item, "LaunchTemplateId"));
}

static bool named(const json_t *list, const json_t *v)
{
	size_t i;
	json_t *e;

	json_array_foreach(list, i, e)
		if (json_equal(e, v))
			return true;
	return false;
}

int ec2_describe_launch_templates(struct ec2_call *c)
{
	const json_t *ids = ec2_list(c, "LaunchTemplateIds");
	const json_t *names = ec2_list(c, "LaunchTemplateNames");
	struct spx_ec2_filters *fs = NULL;
	struct spx_ec2_pager pg;
	struct spx_ec2_page p;
	json_t *all = NULL, *sel = NULL, *rec;
	size_t i;
	int rc = -1;

	ec2_pager(c, 0, 0, 0, &pg);
	if (spx_ec2_page_begin(&pg, c->in, &p) < 0)
		return -1;
	if (spx_ec2_filters_compile(&lt_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0 ||
	    spx_lt_list(c->gw->state, c->account, &all) < 0)
		goto out;
	json_array_foreach(ids, i, rec) {
		size_t j;
		json_t *r;
		bool found = false;

		json_array_foreach(all, j, r)
			found |= json_equal(json_object_get(r, "LaunchTemplateId"),
					    rec);
		if (!found) {
			spx_ec2_fault(400, "InvalidLaunchTemplateId.NotFound",
				      "The specified launch template, with "
				      "template ID %s, does not exist.",
				      json_string_value(rec));
			goto out;
		}
	}
	json_array_foreach(names, i, rec) {
		size_t j;
		json_t *r;
		bool found = false;

		json_array_foreach(all, j, r)
			found |= json_equal(json_object_get(r,
							    "LaunchTemplateName"),
					    rec);
		if (!found) {
			spx_ec2_fault(400,
				      "InvalidLaunchTemplateName."
				      "NotFoundException",
				      "At least one of the launch templates "
				      "specified in the request does not "
				      "exist.");
			goto out;
		}
	}
	sel = json_array();
	json_array_foreach(all, i, rec) {
		json_t *it = spx_lt_item(rec);
		char when[40];

		if ((json_array_size(ids) || json_array_size(names)) &&
		    !named(ids, json_object_get(it, "LaunchTemplateId")) &&
		    !named(names, json_object_get(it, "LaunchTemplateName"))) {
			json_decref(it);
			continue;
		}
		/* create-time matches the time as EC2 writes it. */
		ec2q_time_format((double)json_integer_value(
					 json_object_get(it, "CreateTime")),
				 when, sizeof(when));
		json_object_set_new(it, "CreateTimeText", json_string(when));
		if (spx_ec2_filters_match(fs, it) &&
		    spx_ec2_page_after(&p, lt_id(it)))
			json_array_append(sel, it);
		json_object_del(it, "CreateTimeText");
		json_decref(it);
	}
	if (ec2_page_answer(c, &p, sel, lt_id, "LaunchTemplates", NULL) < 0)
		goto out;
	rc = 0;
out:
	json_decref(sel);
	json_decref(all);
	spx_ec2_filters_free(fs);
	spx_ec2_page_release(&p);
	return rc;
}

int ec2_delete_launch_template(struct ec2_call *c)
{
	const char *id = ec2_str(c, "LaunchTemplateId");
	const char *name = ec2_str(c, "LaunchTemplateName");
	json_t *rec;

	if (!id && !name)
		return spx_ec2_fault_missing("LaunchTemplateId or "
					     "LaunchTemplateName");
	if (spx_lt_delete(c->gw->state, c->account, id, name, &rec) < 0)
		return -1;
	json_object_set_new(c->out, "LaunchTemplate", spx_lt_item(rec));
	json_decref(rec);
	return 0;
}
