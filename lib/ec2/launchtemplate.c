/* launchtemplate.c: EC2 launch templates (see launchtemplate.h). */
#include "spx.h"

#include <openssl/evp.h>

#include "ec2/fault.h"
#include "ec2/launchtemplate.h"
#include "ec2/rec.h"
#include "ec2/tags.h"
#include "hex.h"
#include "id.h"
#include "state/state.h"

int spx_lt_name_check(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789().-/_",
			    name[i]))
			n = 0;
	if (n < 3 || n > 128)
		return spx_ec2_fault(400,
				     "InvalidLaunchTemplateName.MalformedException",
				     "A launch template name must be between 3 "
				     "and 128 characters, and may contain "
				     "letters, numbers, and the following "
				     "characters: - ( ) . / _.");
	return 0;
}

static int combination(const char *a, const char *b)
{
	return spx_ec2_fault(400, "InvalidParameterCombination",
			     "The parameter %s cannot be used with the "
			     "parameter %s",
			     a, b);
}

int spx_lt_data_check(const json_t *data)
{
	const json_t *ir = json_object_get(data, "InstanceRequirements");

	if (ir && json_object_get(data, "InstanceType"))
		return combination("instanceRequirements", "instanceType");
	if (json_object_get(ir, "AllowedInstanceTypes") &&
	    json_object_get(ir, "ExcludedInstanceTypes"))
		return combination("allowedInstanceTypes",
				   "excludedInstanceTypes");
	return 0;
}

static bool account_ok(const char *account)
{
	return spx_account_id_valid(account);
}

static char *name_key(const char *account, const char *name)
{
	unsigned char md[32];
	unsigned int n = 0;
	char hex[65];

	EVP_Digest(name, strlen(name), md, &n, EVP_sha256(), NULL);
	spx_hex_encode(md, 32, hex);
	return spx_xprintf("launch-template-names/%s/%s", account, hex);
}

static char *rec_key(const char *account, const char *id)
{
	return spx_xprintf("launch-templates/%s/%s", account, id);
}

static int not_found_id(const char *id)
{
	return spx_ec2_fault(400, "InvalidLaunchTemplateId.NotFound",
			     "The specified launch template, with template ID "
			     "%s, does not exist.",
			     id);
}

static int not_found_name(const char *name)
{
	return spx_ec2_fault(400, "InvalidLaunchTemplateName.NotFoundException",
			     "The specified launch template, with template "
			     "name %s, does not exist.",
			     name);
}

int spx_lt_create(struct spx_state *st, const char *account,
		  const char *created_by, const char *name,
		  const char *version_description, const json_t *data,
		  const json_t *tags, time_t now, json_t **out)
{
	char id[SPX_ID_SIZE];
	char *rk = NULL, *nk = NULL;
	json_t *rec, *ver, *ref;
	int rc;

	*out = NULL;
	if (!account_ok(account))
		return spx_ec2_fault(500, "InternalError", "bad account");
	if (spx_lt_name_check(name) < 0 || spx_lt_data_check(data) < 0)
		return -1;
	if (spx_id_new(id, sizeof(id), "lt") < 0)
		return spx_ec2_fault(500, "InternalError", "%s", spx_errmsg());
	ver = json_pack("{s:s, s:s, s:I, s:I, s:s, s:b, s:O}",
			"LaunchTemplateId", id, "LaunchTemplateName", name,
			"VersionNumber", (json_int_t)1, "CreateTime",
			(json_int_t)now, "CreatedBy", created_by,
			"DefaultVersion", 1, "LaunchTemplateData", data);
	if (version_description)
		json_object_set_new(ver, "VersionDescription",
				    json_string(version_description));
	rec = json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:o, s:[o]}",
			"LaunchTemplateId", id, "LaunchTemplateName", name,
			"CreateTime", (json_int_t)now, "CreatedBy", created_by,
			"DefaultVersionNumber", (json_int_t)1,
			"LatestVersionNumber", (json_int_t)1, "Tags",
			tags ? json_deep_copy(tags) : json_array(), "Versions",
			ver);
	rk = rec_key(account, id);
	nk = name_key(account, name);
	rc = spx_ec2_rec_put(st, rk, rec, true, 0);
	if (rc < 0) {
		spx_ec2_state_fail(rc);
		goto fail;
	}
	ref = json_pack("{s:s}", "LaunchTemplateId", id);
	rc = spx_ec2_rec_put(st, nk, ref, true, 0);
	json_decref(ref);
	if (rc < 0) {
		spx_state_delete(st, rk, 0);
		if (rc == SPX_STATE_EXISTS)
			spx_ec2_fault(400,
				      "InvalidLaunchTemplateName."
				      "AlreadyExistsException",
				      "Launch template name already in use.");
		else
			spx_ec2_state_fail(rc);
		goto fail;
	}
	free(rk);
	free(nk);
	*out = rec;
	return 0;
fail:
	free(rk);
	free(nk);
	json_decref(rec);
	return -1;
}

/* The id the name record names, into id (SPX_ID_SIZE). */
static int id_of(struct spx_state *st, const char *account, const char *name,
		 char *id, uint64_t *rev)
{
	char *nk = name_key(account, name);
	json_t *ref;
	int rc = spx_ec2_rec_get(st, nk, &ref, rev);

	free(nk);
	if (rc == SPX_STATE_NOTFOUND)
		return not_found_name(name);
	if (rc < 0)
		return spx_ec2_state_fail(rc);
	snprintf(id, SPX_ID_SIZE, "%s",
		 json_is_string(json_object_get(ref, "LaunchTemplateId"))
			 ? json_string_value(
				   json_object_get(ref, "LaunchTemplateId"))
			 : "");
	json_decref(ref);
	return 0;
}

int spx_lt_get(struct spx_state *st, const char *account, const char *id,
	       const char *name, json_t **out)
{
	char byname[SPX_ID_SIZE];
	char *rk;
	int rc;

	*out = NULL;
	if (!id) {
		if (id_of(st, account, name, byname, NULL) < 0)
			return -1;
		id = byname;
	}
	if (!spx_id_valid(id, "lt"))
		return not_found_id(id);
	rk = rec_key(account, id);
	rc = spx_ec2_rec_get(st, rk, out, NULL);
	free(rk);
	if (rc == SPX_STATE_NOTFOUND)
		return name ? not_found_name(name) : not_found_id(id);
	return rc < 0 ? spx_ec2_state_fail(rc) : 0;
}

int spx_lt_list(struct spx_state *st, const char *account, json_t **out)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	char *prefix = spx_xprintf("launch-template-names/%s/", account);
	json_t *all = json_array();
	int rc = spx_state_list(st, prefix, 0, &l);

	*out = NULL;
	free(prefix);
	if (rc < 0) {
		json_decref(all);
		return spx_ec2_state_fail(rc);
	}
	/* Through the name records: a template is there when its name
	 * record (the commit point) is. */
	for (size_t i = 0; i < l.n; i++) {
		json_t *ref, *rec;
		const char *id;
		char *rk;

		if (spx_ec2_rec_get(st, l.key[i], &ref, NULL) < 0)
			continue; /* deleted meanwhile */
		id = json_string_value(json_object_get(ref, "LaunchTemplateId"));
		if (id && spx_id_valid(id, "lt")) {
			rk = rec_key(account, id);
			if (spx_ec2_rec_get(st, rk, &rec, NULL) == 0)
				json_array_append_new(all, rec);
			free(rk);
		}
		json_decref(ref);
	}
	spx_state_list_release(&l);
	spx_ec2_sort_by(all, "LaunchTemplateId");
	*out = all;
	return 0;
}

int spx_lt_delete(struct spx_state *st, const char *account, const char *id,
		  const char *name, json_t **out)
{
	json_t *rec;
	char *nk, *rk;
	int rc;

	if (out)
		*out = NULL;
	if (spx_lt_get(st, account, id, name, &rec) < 0)
		return -1;
	nk = name_key(account,
		      json_string_value(json_object_get(rec, "LaunchTemplateName")));
	rk = rec_key(account,
		     json_string_value(json_object_get(rec, "LaunchTemplateId")));
	/* The name first: that is the commit point. */
	rc = spx_state_delete(st, nk, 0);
	if (rc == SPX_STATE_NOTFOUND) {
		rc = id ? not_found_id(id) : not_found_name(name);
	} else if (rc < 0) {
		rc = spx_ec2_state_fail(rc);
	} else {
		spx_state_delete(st, rk, 0);
		if (out)
			*out = json_incref(rec);
	}
	free(nk);
	free(rk);
	json_decref(rec);
	return rc < 0 ? -1 : 0;
}

struct tag_change {
	const json_t *set, *unset;
	bool missing;
};

static int tags_fn(void *ctx, const struct spx_buf *old, uint64_t rev,
		   struct spx_buf *out)
{
	struct tag_change *tc = ctx;
	json_t *rec, *tags;
	char *s;

	(void)rev;
	if (!old) {
		tc->missing = true;
		return 1;
	}
	rec = json_loadb(old->p, old->len, 0, NULL);
	if (!rec)
		return spx_error(SPX_FAIL, "a launch template record is corrupt");
	tags = json_object_get(rec, "Tags");
	if (!json_is_array(tags)) {
		tags = json_array();
		json_object_set_new(rec, "Tags", tags);
	}
	if (tc->unset)
		spx_ec2_tags_remove(tags, tc->unset);
	if (tc->set && spx_ec2_tags_merge(tags, tc->set) < 0) {
		json_decref(rec);
		return -1;
	}
	s = json_dumps(rec, JSON_COMPACT);
	json_decref(rec);
	if (!s)
		return spx_error(SPX_FAIL, "cannot write a launch template");
	spx_buf_adds(out, s);
	free(s);
	return 0;
}

int spx_lt_set_tags(struct spx_state *st, const char *account,
		    const char *id, const json_t *set, const json_t *unset)
{
	struct tag_change tc = { set, unset, false };
	char *rk;
	int rc;

	if (!spx_id_valid(id, "lt"))
		return not_found_id(id);
	rk = rec_key(account, id);
	rc = spx_state_update(st, rk, tags_fn, &tc, NULL);
	free(rk);
	if (tc.missing || rc == SPX_STATE_NOTFOUND)
		return not_found_id(id);
	if (rc == -1 && spx_ec2_fault_code(NULL))
		return -1; /* TagLimitExceeded */
	return rc < 0 ? spx_ec2_state_fail(rc) : 0;
}

json_t *spx_lt_item(const json_t *rec)
{
	json_t *it = json_deep_copy(rec);

	json_object_del(it, "Versions");
	return it;
}
