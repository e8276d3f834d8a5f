/* ec2_keypair.c: CreateKeyPair, ImportKeyPair, DescribeKeyPairs and
 * DeleteKeyPair over lib/ec2/keypair.h. */
#include "spx.h"

#include <openssl/crypto.h>

#include "checksum.h"
#include "ec2/filter.h"
#include "ec2/keypair.h"
#include "ec2/tags.h"
#include "gw/ec2_int.h"

static const struct spx_ec2_filter_field kp_fields[] = {
	{ "fingerprint", "KeyFingerprint" },
	{ "key-name", "KeyName" },
	{ "key-pair-id", "KeyPairId" },
	{ "key-type", "KeyType" },
};
static const struct spx_ec2_filter_table kp_filters = {
	kp_fields, SPX_ARRAY_SIZE(kp_fields), "Tags"
};

static json_t *tags_json(const struct spx_kvlist *kv)
{
	json_t *a = json_array();

	for (size_t i = 0; i < kv->n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s}", "Key",
						   kv->v[i].k, "Value",
						   kv->v[i].v));
	return a;
}

/* A KeyPairInfo item. */
static json_t *kp_info(const struct spx_keypair *k, bool pub)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:f}", "KeyPairId",
			      k->id, "KeyFingerprint", k->fingerprint,
			      "KeyName", k->name, "KeyType",
			      spx_key_type_name(k->type), "Tags",
			      tags_json(&k->tags), "CreateTime",
			      (double)k->created_ms / 1000.0);

	if (pub && k->public_key)
		json_object_set_new(o, "PublicKey", json_string(k->public_key));
	return o;
}

/* The TagSpecifications of a create action as a Key -> Value list. */
static int spec_tags(const struct ec2_call *c, struct spx_kvlist *kv)
{
	json_t *tags, *t;
	size_t i;

	if (spx_ec2_tagspec(json_object_get(c->in, "TagSpecifications"),
			    "key-pair", &tags) < 0)
		return -1;
	json_array_foreach(tags, i, t)
		spx_kv_add(kv, json_string_value(json_object_get(t, "Key")),
			   json_string_value(json_object_get(t, "Value")));
	json_decref(tags);
	return 0;
}

/* The answer's common members; tags only when there are some, as EC2. */
static void kp_answer(json_t *out, const struct spx_keypair *k)
{
	json_object_set_new(out, "KeyFingerprint", json_string(k->fingerprint));
	json_object_set_new(out, "KeyName", json_string(k->name));
	json_object_set_new(out, "KeyPairId", json_string(k->id));
	if (k->tags.n)
		json_object_set_new(out, "Tags", tags_json(&k->tags));
}

int ec2_create_key_pair(struct ec2_call *c)
{
	const char *name = ec2_str(c, "KeyName");
	const char *type = ec2_str(c, "KeyType");
	const char *fmt = ec2_str(c, "KeyFormat");
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	enum spx_key_type t = SPX_KEY_RSA;
	enum spx_key_format f = SPX_KEY_PEM;
	struct spx_keypair k;
	char *material = NULL;
	int rc;

	/* The model has checked both enums. */
	if ((type && spx_key_type_parse(type, &t) < 0) ||
	    (fmt && spx_key_format_parse(fmt, &f) < 0))
		return spx_ec2_fault_invalid(type ? "keyType" : "keyFormat",
					     type ? type : fmt, NULL);
	if (spec_tags(c, &tags) < 0)
		return -1;
	rc = spx_keypair_create(c->gw->state, c->account, name, t, f, &tags,
				&k, &material);
	spx_kv_free(&tags);
	if (rc < 0)
		return spx_ec2_fault_rc(rc, name);
	kp_answer(c->out, &k);
	json_object_set_new(c->out, "KeyMaterial", json_string(material));
	OPENSSL_cleanse(material, strlen(material));
	free(material);
	spx_keypair_release(&k);
	return 0;
}

int ec2_import_key_pair(struct ec2_call *c)
{
	const char *name = ec2_str(c, "KeyName");
	const char *b64 = ec2_str(c, "PublicKeyMaterial");
	size_t len = strlen(b64), n = 0;
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	struct spx_keypair k;
	unsigned char *raw;
	int rc;

	/* The parser checked the base64; the library checks the key. */
	if (len / 4 * 3 > SPX_KEYPAIR_IMPORT_MAX)
		return spx_ec2_fault_rc(SPX_EC2_KEY_FORMAT, name);
	raw = spx_malloc(len / 4 * 3 + 1);
	if (spx_base64_decode(b64, len, raw, len / 4 * 3 + 1, &n) < 0) {
		free(raw);
		return spx_ec2_fault_rc(SPX_EC2_KEY_FORMAT, name);
	}
	if (spec_tags(c, &tags) < 0) {
		free(raw);
		return -1;
	}
	rc = spx_keypair_import(c->gw->state, c->account, name, raw, n, &tags,
				&k);
	free(raw);
	spx_kv_free(&tags);
	if (rc < 0)
		return spx_ec2_fault_rc(rc, name);
	kp_answer(c->out, &k);
	spx_keypair_release(&k);
	return 0;
}

/* Is s one of list's strings? */
static bool in_list(const json_t *list, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(list, i, v)
		if (!strcmp(json_string_value(v), s))
			return true;
	return false;
}

int ec2_describe_key_pairs(struct ec2_call *c)
{
	const json_t *names = ec2_list(c, "KeyNames");
	const json_t *ids = ec2_list(c, "KeyPairIds");
	bool pub = ec2_bool(c, "IncludePublicKey");
	struct spx_ec2_filters *fs;
	struct spx_keypair *v = NULL;
	size_t n = 0, i;
	json_t *items, *e;
	int rc;

	if (spx_ec2_filters_compile(&kp_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0)
		return -1;
	rc = spx_keypair_list(c->gw->state, c->account, &v, &n);
	if (rc < 0) {
		spx_ec2_filters_free(fs);
		return spx_ec2_fault_rc(rc, NULL);
	}
	/* Every name and id asked for must exist. */
	json_array_foreach(names, i, e) {
		size_t j;

		for (j = 0; j < n && strcmp(v[j].name, json_string_value(e));
		     j++)
			;
		if (j == n) {
			rc = spx_ec2_fault_rc(SPX_EC2_KEYPAIR_NOTFOUND,
					      json_string_value(e));
			goto out;
		}
	}
	json_array_foreach(ids, i, e) {
		size_t j;

		for (j = 0; j < n && strcmp(v[j].id, json_string_value(e)); j++)
			;
		if (j == n) {
			rc = spx_ec2_fault_rc(SPX_EC2_KEYPAIR_NOTFOUND,
					      json_string_value(e));
			goto out;
		}
	}
	items = json_array();
	for (i = 0; i < n; i++) {
		json_t *it;

		if ((json_array_size(names) || json_array_size(ids)) &&
		    !in_list(names, v[i].name) && !in_list(ids, v[i].id))
			continue;
		it = kp_info(&v[i], pub);
		if (spx_ec2_filters_match(fs, it))
			json_array_append(items, it);
		json_decref(it);
	}
	json_object_set_new(c->out, "KeyPairs", items);
	rc = 0;
out:
	spx_keypair_list_free(v, n);
	spx_ec2_filters_free(fs);
	return rc;
}

int ec2_delete_key_pair(struct ec2_call *c)
{
	const char *name = ec2_str(c, "KeyName");
	const char *id = ec2_str(c, "KeyPairId");
	int rc;

	if (!name && !id)
		return spx_ec2_fault_missing("KeyName or KeyPairId");
	rc = spx_keypair_delete(c->gw->state, c->account, id, name, NULL);
	/* EC2 answers the delete of an unknown name with success (the key
	 * is gone either way), but an unknown id with NotFound. */
	if (rc == SPX_EC2_KEYPAIR_NOTFOUND && !id)
		return 0;
	return rc < 0 ? spx_ec2_fault_rc(rc, id ? id : name) : 0;
}
