/* s3acl.c: S3 access control lists (contract in s3acl.h). */
#include "spx.h"

#include <jansson.h>

#include "gw/s3acl.h"
#include "gw/s3conf.h"
#include "id.h"
#include "xml/xml.h"

static const struct spx_xml_limits lim = {
	.max_bytes = 64 << 10,
	.max_depth = 6,
	.max_elems = 1000,
	.max_text = 1024,
	.max_attrs = 8,
};

static const char *const perm_names[] = {
	"READ", "WRITE", "READ_ACP", "WRITE_ACP", "FULL_CONTROL",
};
static const unsigned perm_bits[] = {
	SPX_S3_PERM_READ,      SPX_S3_PERM_WRITE, SPX_S3_PERM_READ_ACP,
	SPX_S3_PERM_WRITE_ACP, SPX_S3_PERM_FULL,
};

unsigned spx_s3_perm_bits(const char *name)
{
	for (size_t i = 0; name && i < SPX_ARRAY_SIZE(perm_names); i++)
		if (!strcmp(name, perm_names[i]))
			return perm_bits[i];
	return 0;
}


static int malformed(struct spx_apierr *err)
{
	return spx_s3_conf_fail(err, 400, "MalformedACLError",
		    "The XML you provided was not well-formed or did not "
		    "validate against our published schema");
}

static int bad_id(struct spx_apierr *err)
{
	return spx_s3_conf_fail(err, 400, "InvalidArgument", "Invalid id");
}

static int bad_format(struct spx_apierr *err)
{
	return spx_s3_conf_fail(err, 400, "InvalidArgument",
				"Argument format not recognized");
}

static int no_email(struct spx_apierr *err)
{
	return spx_s3_conf_fail(err, 400, "UnresolvableGrantByEmailAddress",
				"The e-mail address you provided does not "
				"match any account on record.");
}

static json_t *acl_new(const char *owner)
{
	return json_pack("{s:s, s:[]}", "Owner", owner, "Grants");
}

static void add_grant(json_t *acl, const char *type, const char *who,
		      const char *perm)
{
	json_array_append_new(
		json_object_get(acl, "Grants"),
		json_pack("{s:s, s:s, s:s}", "Type", type,
			  strcmp(type, "Group") ? "ID" : "URI", who,
			  "Permission", perm));
}

json_t *spx_s3_acl_private(const char *owner)
{
	json_t *acl = acl_new(owner);

	add_grant(acl, "CanonicalUser", owner, "FULL_CONTROL");
	return acl;
}

static bool group_known(const char *uri)
{
	return !strcmp(uri, SPX_S3_ALL_USERS) ||
	       !strcmp(uri, SPX_S3_AUTH_USERS) ||
	       !strcmp(uri, SPX_S3_LOG_DELIVERY);
}

static size_t grant_count(const json_t *acl)
{
	return json_array_size(json_object_get(acl, "Grants"));
}

/* ---- canned ACLs ---- */

static int canned(const char *name, const char *owner,
		  const char *bucket_owner, json_t **out,
		  struct spx_apierr *err)
{
	json_t *acl = spx_s3_acl_private(owner);

	if (!strcmp(name, "public-read") || !strcmp(name, "public-read-write"))
		add_grant(acl, "Group", SPX_S3_ALL_USERS, "READ");
	if (!strcmp(name, "public-read-write"))
		add_grant(acl, "Group", SPX_S3_ALL_USERS, "WRITE");
	else if (!strcmp(name, "authenticated-read"))
		add_grant(acl, "Group", SPX_S3_AUTH_USERS, "READ");
	else if (!strcmp(name, "log-delivery-write")) {
		add_grant(acl, "Group", SPX_S3_LOG_DELIVERY, "WRITE");
		add_grant(acl, "Group", SPX_S3_LOG_DELIVERY, "READ_ACP");
	} else if (!strcmp(name, "bucket-owner-read") ||
		   !strcmp(name, "bucket-owner-full-control")) {
		/* On a bucket, or where the writer owns the bucket: the
		 * owner's FULL_CONTROL says it already. */
		if (bucket_owner && strcmp(bucket_owner, owner))
			add_grant(acl, "CanonicalUser", bucket_owner,
				  strcmp(name, "bucket-owner-read")
					  ? "FULL_CONTROL"
					  : "READ");
	} else if (strcmp(name, "private") && strcmp(name, "public-read") &&
		   strcmp(name, "aws-exec-read")) {
		json_decref(acl);
		return spx_s3_conf_fail(err, 400, "InvalidArgument",
			    "The canned ACL is not valid");
	}
	*out = acl;
	return 0;
}

/* ---- x-amz-grant-* ---- */

static const struct {
	const char *header, *perm;
} grant_headers[] = {
	{"x-amz-grant-read", "READ"},
	{"x-amz-grant-write", "WRITE"},
	{"x-amz-grant-read-acp", "READ_ACP"},
	{"x-amz-grant-write-acp", "WRITE_ACP"},
	{"x-amz-grant-full-control", "FULL_CONTROL"},
};

/* One grantee of a header's list, type (id, uri or emailAddress) and
 * value, into acl. */
static int header_grantee(json_t *acl, const char *type, size_t tn,
			  const char *v, size_t vn, const char *perm,
			  struct spx_apierr *err)
{
	char val[256];

	if (vn >= sizeof(val) || memchr(v, '\0', vn))
		return bad_id(err);
	memcpy(val, v, vn);
	val[vn] = '\0';
	if (grant_count(acl) >= SPX_S3_ACL_MAX_GRANTS)
		return spx_s3_conf_fail(err, 400, "InvalidArgument",
			    "An ACL has at most 100 grants");
	if (tn == 2 && !strncasecmp(type, "id", 2)) {
		if (!spx_account_id_valid(val))
			return bad_id(err);
		add_grant(acl, "CanonicalUser", val, perm);
	} else if (tn == 3 && !strncasecmp(type, "uri", 3)) {
		if (!group_known(val))
			return spx_s3_conf_fail(err, 400, "InvalidArgument",
				    "Invalid group uri");
		add_grant(acl, "Group", val, perm);
	} else if (tn == 12 && !strncasecmp(type, "emailAddress", 12)) {
		return no_email(err);
	} else {
		return bad_format(err);
	}
	return 0;
}

/* A header's list: type=value, type="value", separated by commas. */
static int header_grants(json_t *acl, const char *s, const char *perm,
			 struct spx_apierr *err)
{
	const char *p = s;

	for (;;) {
		const char *t, *v;
		size_t tn, vn;

		while (*p == ' ' || *p == '\t')
			p++;
		t = p;
		while (*p && *p != '=' && *p != ',' && *p != ' ')
			p++;
		tn = (size_t)(p - t);
		while (*p == ' ' || *p == '\t')
			p++;
		if (!tn || *p != '=')
			return bad_format(err);
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '"') {
			v = ++p;
			while (*p && *p != '"')
				p++;
			if (*p != '"')
				return bad_format(err);
			vn = (size_t)(p++ - v);
		} else {
			v = p;
			while (*p && *p != ',' && *p != ' ' && *p != '\t')
				p++;
			vn = (size_t)(p - v);
		}
		if (header_grantee(acl, t, tn, v, vn, perm, err) < 0)
			return -1;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return 0;
		if (*p++ != ',')
			return bad_format(err);
	}
}

int spx_s3_acl_headers(const struct spx_kvlist *h, const char *owner,
		       const char *bucket_owner, json_t **out,
		       struct spx_apierr *err)
{
	const char *name = spx_kv_geti(h, "x-amz-acl");
	json_t *acl = NULL;

	*out = NULL;
	for (size_t i = 0; i < SPX_ARRAY_SIZE(grant_headers); i++) {
		const char *v = spx_kv_geti(h, grant_headers[i].header);

		if (!v)
			continue;
		if (name) {
			json_decref(acl);
			return spx_s3_conf_fail(err, 400, "InvalidRequest",
				    "Specifying both Canned ACLs and Header "
				    "Grants is not allowed");
		}
		if (!acl)
			acl = acl_new(owner);
		if (header_grants(acl, v, grant_headers[i].perm, err) < 0) {
			json_decref(acl);
			return -1;
		}
	}
	if (acl) {
		*out = acl;
		return 0;
	}
	return name ? canned(name, owner, bucket_owner, out, err) : 0;
}

/* ---- AccessControlPolicy ---- */

/* A leaf's text: no NUL within, no child elements. */
static const char *leaf(const struct spx_xml_node *n)
{
	if (!n || n->children || strlen(n->text) != n->textlen)
		return NULL;
	return n->text;
}

static int xml_grant(json_t *acl, const struct spx_xml_node *gr,
		     struct spx_apierr *err)
{
	const struct spx_xml_node *who = spx_xml_child(gr, "Grantee");
	const char *type = who ? spx_xml_node_attr(who, "type") : NULL;
	const char *perm = leaf(spx_xml_child(gr, "Permission"));
	const char *v;

	if (!who || !type || !perm || spx_xml_count(gr, "Permission") != 1)
		return malformed(err);
	if (!spx_s3_perm_bits(perm))
		return malformed(err);
	if (grant_count(acl) >= SPX_S3_ACL_MAX_GRANTS)
		return spx_s3_conf_fail(err, 400, "MalformedACLError",
			    "An ACL has at most 100 grants");
	if (!strcmp(type, "CanonicalUser")) {
		v = leaf(spx_xml_child(who, "ID"));
		if (!v)
			return malformed(err);
		if (!spx_account_id_valid(v))
			return bad_id(err);
		add_grant(acl, type, v, perm);
	} else if (!strcmp(type, "Group")) {
		v = leaf(spx_xml_child(who, "URI"));
		if (!v)
			return malformed(err);
		if (!group_known(v))
			return spx_s3_conf_fail(err, 400, "InvalidArgument",
				    "Invalid group uri");
		add_grant(acl, type, v, perm);
	} else if (!strcmp(type, "AmazonCustomerByEmail")) {
		return no_email(err);
	} else {
		return malformed(err);
	}
	return 0;
}

int spx_s3_acl_xml(const char *p, size_t n, const char *owner, json_t **out,
		   struct spx_apierr *err)
{
	struct spx_xml_doc *doc = NULL;
	const struct spx_xml_node *root, *list, *o, *gr;
	json_t *acl = NULL;
	int rc = -1;

	*out = NULL;
	if (spx_xml_parse(p, n, &lim, &doc) < 0 ||
	    !(root = spx_xml_doc_root(doc)) ||
	    !spx_xml_is(root, "AccessControlPolicy", NULL) ||
	    spx_xml_count(root, "AccessControlList") != 1 ||
	    spx_xml_count(root, "Owner") > 1) {
		malformed(err);
		goto out;
	}
	/* The owner cannot be changed by an ACL. */
	if ((o = spx_xml_child(root, "Owner"))) {
		const char *id = leaf(spx_xml_child(o, "ID"));

		if (!id) {
			malformed(err);
			goto out;
		}
		if (strcmp(id, owner)) {
			spx_s3_conf_fail(err, 403, "AccessDenied",
					 "Access Denied");
			goto out;
		}
	}
	acl = acl_new(owner);
	list = spx_xml_child(root, "AccessControlList");
	for (gr = spx_xml_child(list, NULL); gr; gr = spx_xml_next(gr, NULL))
		if (!spx_xml_is(gr, "Grant", NULL) ||
		    xml_grant(acl, gr, err) < 0)
			goto out;
	*out = acl;
	acl = NULL;
	rc = 0;
out:
	if (rc < 0 && !err->code)
		malformed(err);
	json_decref(acl);
	spx_xml_doc_free(doc);
	return rc;
}

/* ---- kept ACLs ---- */

json_t *spx_s3_acl_load(const char *p, size_t n)
{
	json_t *acl = json_loadb(p, n, 0, NULL);
	const json_t *gs = json_object_get(acl, "Grants");
	size_t i;
	json_t *g;

	if (!json_is_string(json_object_get(acl, "Owner")) ||
	    !json_is_array(gs))
		goto bad;
	json_array_foreach(gs, i, g) {
		const char *type =
			json_string_value(json_object_get(g, "Type"));

		if (!type ||
		    !spx_s3_perm_bits(json_string_value(
			    json_object_get(g, "Permission"))) ||
		    !json_is_string(json_object_get(
			    g, strcmp(type, "Group") ? "ID" : "URI")))
			goto bad;
	}
	return acl;
bad:
	json_decref(acl);
	return NULL;
}

const char *spx_s3_acl_owner(const json_t *acl)
{
	return json_string_value(json_object_get(acl, "Owner"));
}

static const char *grant_uri(const json_t *g)
{
	const char *type = json_string_value(json_object_get(g, "Type"));

	return type && !strcmp(type, "Group")
		       ? json_string_value(json_object_get(g, "URI"))
		       : NULL;
}

static bool public_uri(const char *uri)
{
	return uri && (!strcmp(uri, SPX_S3_ALL_USERS) ||
		       !strcmp(uri, SPX_S3_AUTH_USERS));
}

bool spx_s3_acl_public(const json_t *acl)
{
	size_t i;
	json_t *g;

	json_array_foreach(json_object_get(acl, "Grants"), i, g)
		if (public_uri(grant_uri(g)))
			return true;
	return false;
}

bool spx_s3_acl_is_private(const json_t *acl, const char *owner_id)
{
	const json_t *g = json_array_get(json_object_get(acl, "Grants"), 0);
	const char *o = spx_s3_acl_owner(acl);
	const char *id = json_string_value(json_object_get(g, "ID"));

	return o && !strcmp(o, owner_id) && grant_count(acl) == 1 &&
	       !grant_uri(g) && id && !strcmp(id, owner_id) &&
	       spx_s3_perm_bits(json_string_value(
		       json_object_get(g, "Permission"))) == SPX_S3_PERM_FULL;
}

/* ---- the decision's step 4 ---- */

/* AWS's table of ACL permissions to actions ("Mapping of ACL permissions
 * and access policy permissions"). Bucket WRITE is s3:PutObject and
 * s3:DeleteObject; it allows s3:DeleteObjectVersion only to the bucket
 * owner, who is allowed before the ACLs are read (step 2), so a grant
 * never allows it: another account with WRITE must not destroy versions
 * for good. s3:AbortMultipartUpload and s3:ListMultipartUploadParts are
 * in no row: by default the bucket owner and the upload's initiator
 * may, and spx keeps no initiator, so only the owner (or a policy). */
static const struct {
	const char *action;
	enum spx_s3_acl_of of;
	unsigned perm;
} needs[] = {
	{"s3:ListBucket", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_READ},
	{"s3:ListBucketVersions", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_READ},
	{"s3:ListBucketMultipartUploads", SPX_S3_ACL_OF_BUCKET,
	 SPX_S3_PERM_READ},
	{"s3:PutObject", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_WRITE},
	{"s3:DeleteObject", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_WRITE},
	{"s3:GetBucketAcl", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_READ_ACP},
	{"s3:PutBucketAcl", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_WRITE_ACP},
	{"s3:GetObject", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_READ},
	{"s3:GetObjectVersion", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_READ},
	{"s3:GetObjectAcl", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_READ_ACP},
	{"s3:GetObjectVersionAcl", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_READ_ACP},
	{"s3:PutObjectAcl", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_WRITE_ACP},
	{"s3:PutObjectVersionAcl", SPX_S3_ACL_OF_OBJECT,
	 SPX_S3_PERM_WRITE_ACP},
};

enum spx_s3_acl_of spx_s3_acl_need(const char *action, unsigned *perm)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(needs); i++)
		if (!strcmp(needs[i].action, action)) {
			*perm = needs[i].perm;
			return needs[i].of;
		}
	*perm = 0;
	return SPX_S3_ACL_OF_NONE;
}

bool spx_s3_acl_grants(const json_t *acl, const char *account, unsigned perm,
		       bool ignore_public)
{
	unsigned have = 0;
	size_t i;
	json_t *g;

	if (!perm)
		return false;
	json_array_foreach(json_object_get(acl, "Grants"), i, g) {
		const char *uri = grant_uri(g);
		const char *id = json_string_value(json_object_get(g, "ID"));
		bool me;

		if (uri)
			me = (!strcmp(uri, SPX_S3_ALL_USERS) ||
			      (!strcmp(uri, SPX_S3_AUTH_USERS) && *account)) &&
			     !ignore_public;
		else
			me = *account && id && !strcmp(id, account);
		if (me)
			have |= spx_s3_perm_bits(json_string_value(
				json_object_get(g, "Permission")));
	}
	return (have & perm) == perm;
}
