/* tags.c: EC2 tags (see tags.h). */
#include "spx.h"

#include "ec2/fault.h"
#include "ec2/keypair.h"
#include "ec2/tags.h"

static const char *tag_key(const json_t *t)
{
	return json_string_value(json_object_get(t, "Key"));
}

static const char *tag_value(const json_t *t)
{
	return json_string_value(json_object_get(t, "Value"));
}

int spx_ec2_taglist_check(const json_t *tags, const char *where, bool del)
{
	struct spx_kvlist kv = SPX_KVLIST_INIT;
	size_t i;
	json_t *t;
	int rc;

	json_array_foreach(tags, i, t) {
		const char *v = tag_value(t);
		char name[96];

		snprintf(name, sizeof(name), "%s.%zu.Key", where, i + 1);
		if (!tag_key(t))
			return spx_ec2_fault_missing(name);
		spx_kv_add(&kv, tag_key(t), v ? v : "");
	}
	/* The rules are the key pair library's, the one set of them. A
	 * DeleteTags list only names what to remove. */
	rc = del ? 0 : spx_ec2_tags_check(&kv);
	spx_kv_free(&kv);
	return rc < 0 ? spx_ec2_fault_rc(rc, NULL) : 0;
}

int spx_ec2_tags_merge(json_t *have, const json_t *add)
{
	size_t i, j;
	json_t *t, *h;

	json_array_foreach(add, i, t) {
		const char *k = tag_key(t), *v = tag_value(t);
		bool found = false;

		json_array_foreach(have, j, h) {
			if (!strcmp(tag_key(h), k)) {
				json_object_set_new(h, "Value",
						    json_string(v ? v : ""));
				found = true;
				break;
			}
		}
		if (!found)
			json_array_append_new(have,
					      json_pack("{s:s, s:s}", "Key", k,
							"Value", v ? v : ""));
	}
	if (json_array_size(have) > SPX_EC2_TAGS_MAX)
		return spx_ec2_fault(400, "TagLimitExceeded",
				     "The maximum number of Tags for a resource "
				     "has been reached.");
	return 0;
}

void spx_ec2_tags_remove(json_t *have, const json_t *del)
{
	size_t i, j;
	json_t *t, *h;

	json_array_foreach(del, i, t) {
		const char *k = tag_key(t), *v = tag_value(t);

		for (j = 0; j < json_array_size(have); j++) {
			h = json_array_get(have, j);
			if (strcmp(tag_key(h), k))
				continue;
			if (!v || !strcmp(v, tag_value(h) ? tag_value(h) : ""))
				json_array_remove(have, j);
			break;
		}
	}
}

int spx_ec2_tagspec(const json_t *specs, const char *type, json_t **out)
{
	bool seen = false;
	size_t i;
	json_t *s;

	*out = json_array();
	json_array_foreach(specs, i, s) {
		const char *rt = json_string_value(
			json_object_get(s, "ResourceType"));
		const json_t *tags = json_object_get(s, "Tags");
		char where[64];

		snprintf(where, sizeof(where), "TagSpecification.%zu", i + 1);
		if (!rt) {
			char name[96];

			snprintf(name, sizeof(name), "%s.ResourceType", where);
			spx_ec2_fault_missing(name);
			goto fail;
		}
		if (strcmp(rt, type)) {
			spx_ec2_fault(400, "InvalidParameterValue",
				      "'%s' is not a valid taggable resource "
				      "type for this operation.",
				      rt);
			goto fail;
		}
		if (seen) {
			spx_ec2_fault(400, "InvalidParameterValue",
				      "The same resource type may not be "
				      "specified more than once in tag "
				      "specifications");
			goto fail;
		}
		seen = true;
		if (!json_array_size(tags)) {
			spx_ec2_fault(400, "InvalidParameterValue",
				      "Tag specification must have at least one "
				      "tag");
			goto fail;
		}
		snprintf(where + strlen(where), sizeof(where) - strlen(where),
			 ".Tag");
		if (spx_ec2_taglist_check(tags, where, false) < 0 ||
		    spx_ec2_tags_merge(*out, tags) < 0)
			goto fail;
	}
	return 0;
fail:
	json_decref(*out);
	*out = NULL;
	return -1;
}

const struct spx_ec2_restype *spx_ec2_restype_of(const char *id)
{
	const char *dash = strrchr(id, '-');

	if (!dash)
		return NULL;
	for (size_t i = 0; spx_ec2_restypes[i]; i++) {
		const struct spx_ec2_restype *r = spx_ec2_restypes[i];
		size_t n = strlen(r->prefix);

		if ((size_t)(dash - id) == n && !strncmp(id, r->prefix, n))
			return r;
	}
	return NULL;
}

static int tags_change(struct spx_state *st, const char *account,
		       const json_t *ids, const json_t *tags, bool del)
{
	size_t i;
	json_t *id;

	if (spx_ec2_taglist_check(tags, "Tag", del) < 0)
		return -1;
	json_array_foreach(ids, i, id) {
		if (!spx_ec2_restype_of(json_string_value(id)))
			return spx_ec2_fault(400, "InvalidID",
					     "The ID '%s' is not valid",
					     json_string_value(id));
	}
	/* First see that every resource exists and the tags fit, then
	 * change them: a request that names a missing resource changes
	 * nothing (short of a concurrent delete between the passes). */
	json_array_foreach(ids, i, id) {
		const char *s = json_string_value(id);
		json_t *have;
		int rc;

		if (spx_ec2_restype_of(s)->get_tags(st, account, s, &have) < 0)
			return -1;
		rc = del ? 0 : spx_ec2_tags_merge(have, tags);
		json_decref(have);
		if (rc < 0)
			return -1;
	}
	json_array_foreach(ids, i, id) {
		const char *s = json_string_value(id);
		const struct spx_ec2_restype *r = spx_ec2_restype_of(s);
		json_t *all = NULL;
		int rc;

		/* DeleteTags without tags deletes them all. */
		if (del && !tags && r->get_tags(st, account, s, &all) < 0)
			return -1;
		rc = del ? r->set_tags(st, account, s, NULL, tags ? tags : all)
			 : r->set_tags(st, account, s, tags, NULL);
		json_decref(all);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int spx_ec2_tags_create(struct spx_state *st, const char *account,
			const json_t *ids, const json_t *tags)
{
	return tags_change(st, account, ids, tags, false);
}

int spx_ec2_tags_delete(struct spx_state *st, const char *account,
			const json_t *ids, const json_t *tags)
{
	return tags_change(st, account, ids, tags, true);
}

static int cmp_desc(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int c = strcmp(json_string_value(json_object_get(x, "ResourceId")),
		       json_string_value(json_object_get(y, "ResourceId")));

	return c ? c : strcmp(tag_key(x), tag_key(y));
}

int spx_ec2_tags_describe(struct spx_state *st, const char *account,
			  json_t **out)
{
	json_t *all = json_array(), *res, **v;
	size_t n = 0, i, j;
	json_t *r, *t;

	*out = NULL;
	for (size_t k = 0; spx_ec2_restypes[k]; k++) {
		const struct spx_ec2_restype *rt = spx_ec2_restypes[k];
		json_t *list = json_array();

		if (rt->list_tags(st, account, list) < 0) {
			json_decref(list);
			json_decref(all);
			return -1;
		}
		json_array_foreach(list, i, r) {
			json_t *tags = json_object_get(r, "Tags");

			json_array_foreach(tags, j, t)
				json_array_append_new(
					all,
					json_pack("{s:s, s:O, s:s, s:s, s:O}",
						  "Key", tag_key(t), "ResourceId",
						  json_object_get(r, "ResourceId"),
						  "ResourceType", rt->type,
						  "Value",
						  tag_value(t) ? tag_value(t) : "",
						  "Tags", tags));
		}
		json_decref(list);
	}
	n = json_array_size(all);
	v = spx_calloc(n ? n : 1, sizeof(*v));
	json_array_foreach(all, i, t)
		v[i] = json_incref(t);
	qsort(v, n, sizeof(*v), cmp_desc);
	res = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(res, v[i]);
	free(v);
	json_decref(all);
	*out = res;
	return 0;
}
