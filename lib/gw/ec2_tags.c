/* ec2_tags.c: CreateTags, DeleteTags and DescribeTags, across every
 * taggable resource type (lib/ec2/tags.h). */
#include "spx.h"

#include "ec2/filter.h"
#include "ec2/keypair.h"
#include "ec2/paging.h"
#include "ec2/tags.h"
#include "gw/ec2_int.h"
#include "id.h"

int ec2_create_tags(struct ec2_call *c)
{
	return spx_ec2_tags_create(c->gw->state, c->account,
				   ec2_list(c, "Resources"), ec2_list(c, "Tags"));
}

int ec2_delete_tags(struct ec2_call *c)
{
	return spx_ec2_tags_delete(c->gw->state, c->account,
				   ec2_list(c, "Resources"), ec2_list(c, "Tags"));
}

static const struct spx_ec2_filter_field tag_fields[] = {
	{ "key", "Key" },
	{ "resource-id", "ResourceId" },
	{ "resource-type", "ResourceType" },
	{ "value", "Value" },
};
/* "Tags" holds each item's resource's whole tag list, for tag:KEY. */
static const struct spx_ec2_filter_table tag_filters = {
	tag_fields, SPX_ARRAY_SIZE(tag_fields), "Tags"
};

/* Items sort by resource id, then key (spx_ec2_tags_describe's order):
 * "ID KEY" sorts the same way, since no id holds a space and every
 * character of an id sorts after it. A token carries it whole, whatever
 * valid key lands on a page's end. */
_Static_assert(SPX_ID_SIZE + 4 * SPX_EC2_TAG_KEY_MAX <= SPX_EC2_PAGE_KEYMAX,
	       "a DescribeTags sort key fits a page token");
static const char *sort_key(const json_t *item)
{
	return json_string_value(json_object_get(item, "SortKey"));
}

int ec2_describe_tags(struct ec2_call *c)
{
	struct spx_ec2_filters *fs = NULL;
	struct spx_ec2_pager pg;
	struct spx_ec2_page p;
	json_t *all = NULL, *sel, *e;
	char *next = NULL;
	size_t i;
	int rc = -1;

	/* DescribeTags' MaxResults is a plain Integer in the model; EC2
	 * documents 5 to 1000. Without it, every tag comes back. */
	ec2_pager(c, 5, 1000, 0, &pg);
	if (spx_ec2_page_begin(&pg, c->in, &p) < 0)
		return -1;
	if (spx_ec2_filters_compile(&tag_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0 ||
	    spx_ec2_tags_describe(c->gw->state, c->account, &all) < 0)
		goto out;
	sel = json_array();
	json_array_foreach(all, i, e) {
		char *k;

		if (!spx_ec2_filters_match(fs, e))
			continue;
		k = spx_xprintf("%s %s",
				json_string_value(json_object_get(e, "ResourceId")),
				json_string_value(json_object_get(e, "Key")));
		json_object_set_new(e, "SortKey", json_string(k));
		free(k);
		if (spx_ec2_page_after(&p, sort_key(e)))
			json_array_append(sel, e);
	}
	if (spx_ec2_page_take(&p, sel, sort_key, &next) < 0) {
		json_decref(sel);
		goto out;
	}
	json_array_foreach(sel, i, e) {
		json_object_del(e, "Tags");
		json_object_del(e, "SortKey");
	}
	json_object_set_new(c->out, "Tags", sel);
	if (next)
		json_object_set_new(c->out, "NextToken", json_string(next));
	rc = 0;
out:
	free(next);
	json_decref(all);
	spx_ec2_filters_free(fs);
	spx_ec2_page_release(&p);
	return rc;
}
