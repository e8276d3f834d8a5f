/* test_s3acl: S3 ACLs — canned ACLs and x-amz-grant-* headers into
 * grants, AccessControlPolicy bodies, what each action asks of which ACL,
 * and who a kept ACL grants what (anonymous, authenticated, by id, with
 * IgnorePublicAcls). */
#include "spx.h"

#include <jansson.h>

#include "gw/s3acl.h"
#include "t.h"

#define OWNER "111111111111"
#define BOWNER "222222222222"
#define OTHER "333333333333"

/* The grants of acl as "TYPE:who:PERM" joined by spaces. */
static void grants(const json_t *acl, char *out, size_t len)
{
	size_t i, o = 0;
	json_t *g;

	out[0] = '\0';
	json_array_foreach(json_object_get(acl, "Grants"), i, g) {
		const char *t = json_string_value(json_object_get(g, "Type"));
		const char *who = json_string_value(
			json_object_get(g, strcmp(t, "Group") ? "ID" : "URI"));

		if (!strcmp(t, "Group"))
			who = strrchr(who, '/') + 1;
		o += (size_t)snprintf(out + o, len - o, "%s%c:%s:%s",
				      o ? " " : "", t[0], who,
				      json_string_value(
					      json_object_get(g, "Permission")));
	}
}

static const struct {
	const char *acl, *want;
	bool object;
} canned[] = {
	{"private", "C:" OWNER ":FULL_CONTROL", true},
	{"public-read", "C:" OWNER ":FULL_CONTROL G:AllUsers:READ", true},
	{"public-read-write",
	 "C:" OWNER ":FULL_CONTROL G:AllUsers:READ G:AllUsers:WRITE", false},
	{"authenticated-read",
	 "C:" OWNER ":FULL_CONTROL G:AuthenticatedUsers:READ", true},
	{"bucket-owner-read",
	 "C:" OWNER ":FULL_CONTROL C:" BOWNER ":READ", true},
	{"bucket-owner-full-control",
	 "C:" OWNER ":FULL_CONTROL C:" BOWNER ":FULL_CONTROL", true},
	/* On a bucket, the bucket owner's are private. */
	{"bucket-owner-full-control", "C:" OWNER ":FULL_CONTROL", false},
	{"log-delivery-write",
	 "C:" OWNER ":FULL_CONTROL G:LogDelivery:WRITE G:LogDelivery:READ_ACP",
	 false},
};

static const struct {
	const char *header, *value, *want; /* want NULL: refused with code */
	const char *code;
} headers[] = {
	{"x-amz-grant-read", "id=" OTHER, "C:" OTHER ":READ", NULL},
	{"x-amz-grant-read", " id=\"" OTHER "\" , uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"",
	 "C:" OTHER ":READ G:AllUsers:READ", NULL},
	{"X-Amz-Grant-Full-Control", "ID=" OTHER, "C:" OTHER ":FULL_CONTROL",
	 NULL},
	{"x-amz-grant-write-acp", "id=" OTHER, "C:" OTHER ":WRITE_ACP", NULL},
	{"x-amz-grant-read", "emailAddress=a@b.c", NULL,
	 "UnresolvableGrantByEmailAddress"},
	{"x-amz-grant-read", "id=12", NULL, "InvalidArgument"},
	{"x-amz-grant-read", "id=\"" OTHER, NULL, "InvalidArgument"},
	{"x-amz-grant-read", "id=" OTHER ",", NULL, "InvalidArgument"},
	{"x-amz-grant-read", "id=" OTHER " id=" OTHER, NULL, "InvalidArgument"},
	{"x-amz-grant-read", "uri=http://acs.amazonaws.com/groups/global/X",
	 NULL, "InvalidArgument"},
	{"x-amz-grant-read", "name=" OTHER, NULL, "InvalidArgument"},
	{"x-amz-grant-read", "", NULL, "InvalidArgument"},
	{"x-amz-acl", "public", NULL, "InvalidArgument"},
};

#define XML_HEAD "<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
#define XSI "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
static const struct {
	const char *body, *want, *code;
} bodies[] = {
	{XML_HEAD "<Owner><ID>" OWNER "</ID></Owner><AccessControlList>"
		  "<Grant><Grantee " XSI "xsi:type=\"CanonicalUser\"><ID>" OTHER
		  "</ID></Grantee><Permission>WRITE</Permission></Grant>"
		  "<Grant><Grantee " XSI "xsi:type=\"Group\"><URI>http://acs."
		  "amazonaws.com/groups/global/AuthenticatedUsers</URI></Grantee>"
		  "<Permission>READ</Permission></Grant>"
		  "</AccessControlList></AccessControlPolicy>",
	 "C:" OTHER ":WRITE G:AuthenticatedUsers:READ", NULL},
	{XML_HEAD "<AccessControlList/></AccessControlPolicy>", "", NULL},
	/* Another owner: the owner is not the ACL's to change. */
	{XML_HEAD "<Owner><ID>" OTHER "</ID></Owner><AccessControlList/>"
		  "</AccessControlPolicy>",
	 NULL, "AccessDenied"},
	{XML_HEAD "<AccessControlList><Grant><Grantee " XSI
		  "xsi:type=\"CanonicalUser\"><ID>" OTHER "</ID></Grantee>"
		  "<Permission>ALL</Permission></Grant></AccessControlList>"
		  "</AccessControlPolicy>",
	 NULL, "MalformedACLError"},
	{XML_HEAD "<AccessControlList><Grant><Grantee " XSI
		  "xsi:type=\"AmazonCustomerByEmail\"><EmailAddress>a@b.c"
		  "</EmailAddress></Grantee><Permission>READ</Permission>"
		  "</Grant></AccessControlList></AccessControlPolicy>",
	 NULL, "UnresolvableGrantByEmailAddress"},
	/* A NUL inside an id is not the id before it. */
	{XML_HEAD "<AccessControlList><Grant><Grantee " XSI
		  "xsi:type=\"CanonicalUser\"><ID>" OTHER "&#0;x</ID></Grantee>"
		  "<Permission>READ</Permission></Grant></AccessControlList>"
		  "</AccessControlPolicy>",
	 NULL, NULL},
	{XML_HEAD "<AccessControlList><Nope/></AccessControlList>"
		  "</AccessControlPolicy>",
	 NULL, "MalformedACLError"},
	{"<Other/>", NULL, "MalformedACLError"},
	{"<AccessControlPolicy>", NULL, "MalformedACLError"},
};

/* Who a kept ACL grants what. */
static const char kept[] =
	"{\"Owner\":\"" OWNER "\",\"Grants\":["
	"{\"Type\":\"CanonicalUser\",\"ID\":\"" OWNER "\",\"Permission\":\"FULL_CONTROL\"},"
	"{\"Type\":\"CanonicalUser\",\"ID\":\"" OTHER "\",\"Permission\":\"READ\"},"
	"{\"Type\":\"CanonicalUser\",\"ID\":\"" OTHER "\",\"Permission\":\"WRITE\"},"
	"{\"Type\":\"Group\",\"URI\":\"" SPX_S3_AUTH_USERS "\",\"Permission\":\"READ_ACP\"},"
	"{\"Type\":\"Group\",\"URI\":\"" SPX_S3_ALL_USERS "\",\"Permission\":\"READ\"}]}";
static const struct {
	const char *account;
	unsigned perm;
	bool ignore_public, want;
} decide[] = {
	{OWNER, SPX_S3_PERM_FULL, false, true},
	{OTHER, SPX_S3_PERM_READ | SPX_S3_PERM_WRITE, false, true},
	{OTHER, SPX_S3_PERM_READ | SPX_S3_PERM_WRITE, true, true},
	{OTHER, SPX_S3_PERM_WRITE_ACP, false, false},
	{OTHER, SPX_S3_PERM_READ_ACP, false, true},   /* authenticated */
	{OTHER, SPX_S3_PERM_READ_ACP, true, false},   /* ... ignored */
	{BOWNER, SPX_S3_PERM_READ_ACP, false, true},
	{"", SPX_S3_PERM_READ_ACP, false, false},      /* anonymous */
	{"", SPX_S3_PERM_READ, false, true},
	{"", SPX_S3_PERM_READ, true, false},
	{"", SPX_S3_PERM_WRITE, false, false},
	{"", 0, false, false},
};

static const struct {
	const char *action;
	enum spx_s3_acl_of of;
	unsigned perm;
} needs[] = {
	{"s3:ListBucket", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_READ},
	{"s3:PutObject", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_WRITE},
	{"s3:DeleteObject", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_WRITE},
	/* AWS's table: WRITE allows these to the bucket owner alone (or
	 * the upload's initiator), and the owner is allowed before ACLs. */
	{"s3:DeleteObjectVersion", SPX_S3_ACL_OF_NONE, 0},
	{"s3:AbortMultipartUpload", SPX_S3_ACL_OF_NONE, 0},
	{"s3:ListMultipartUploadParts", SPX_S3_ACL_OF_NONE, 0},
	{"s3:ListBucketVersions", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_READ},
	{"s3:ListBucketMultipartUploads", SPX_S3_ACL_OF_BUCKET,
	 SPX_S3_PERM_READ},
	{"s3:GetObject", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_READ},
	{"s3:GetObjectAcl", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_READ_ACP},
	{"s3:GetObjectVersionAcl", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_READ_ACP},
	{"s3:PutObjectVersionAcl", SPX_S3_ACL_OF_OBJECT,
	 SPX_S3_PERM_WRITE_ACP},
	{"s3:GetBucketAcl", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_READ_ACP},
	{"s3:PutBucketAcl", SPX_S3_ACL_OF_BUCKET, SPX_S3_PERM_WRITE_ACP},
	{"s3:GetObjectVersion", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_READ},
	{"s3:PutObjectAcl", SPX_S3_ACL_OF_OBJECT, SPX_S3_PERM_WRITE_ACP},
	{"s3:PutBucketPolicy", SPX_S3_ACL_OF_NONE, 0},
	{"s3:PutObjectTagging", SPX_S3_ACL_OF_NONE, 0},
	{"s3:DeleteBucket", SPX_S3_ACL_OF_NONE, 0},
};

int main(void)
{
	struct spx_apierr e;
	char got[512];
	json_t *acl;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(canned); i++) {
		struct spx_kvlist h = SPX_KVLIST_INIT;

		spx_kv_add(&h, "x-amz-acl", canned[i].acl);
		acl = NULL;
		T_OK(spx_s3_acl_headers(&h, OWNER,
					canned[i].object ? BOWNER : NULL, &acl,
					&e) == 0 && acl,
		     "canned %s", canned[i].acl);
		grants(acl, got, sizeof(got));
		T_STR(got, canned[i].want, "canned %s grants", canned[i].acl);
		T_STR(spx_s3_acl_owner(acl), OWNER, "canned %s owner",
		      canned[i].acl);
		json_decref(acl);
		spx_kv_free(&h);
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(headers); i++) {
		struct spx_kvlist h = SPX_KVLIST_INIT;
		int rc;

		spx_kv_add(&h, headers[i].header, headers[i].value);
		acl = NULL;
		e.code = NULL;
		rc = spx_s3_acl_headers(&h, OWNER, BOWNER, &acl, &e);
		if (headers[i].want) {
			grants(acl, got, sizeof(got));
			T_OK(rc == 0, "header %zu accepted", i);
			T_STR(got, headers[i].want, "header %zu grants", i);
		} else {
			T_OK(rc < 0 && !acl, "header %zu refused", i);
			T_STR(e.code, headers[i].code, "header %zu code", i);
		}
		json_decref(acl);
		spx_kv_free(&h);
	}
	/* None asked; both asked. */
	{
		struct spx_kvlist h = SPX_KVLIST_INIT;

		acl = (json_t *)1;
		T_OK(spx_s3_acl_headers(&h, OWNER, NULL, &acl, &e) == 0 && !acl,
		     "no ACL headers: nothing");
		spx_kv_add(&h, "x-amz-acl", "private");
		spx_kv_add(&h, "x-amz-grant-read", "id=" OTHER);
		e.code = NULL;
		T_OK(spx_s3_acl_headers(&h, OWNER, NULL, &acl, &e) < 0 && !acl,
		     "canned and grants: refused");
		T_STR(e.code, "InvalidRequest", "canned and grants: code");
		spx_kv_free(&h);
	}
	/* 100 grants, not 101. */
	{
		struct spx_buf v = SPX_BUF_INIT;
		struct spx_kvlist h = SPX_KVLIST_INIT;

		for (int i = 0; i < 101; i++)
			spx_buf_addf(&v, "%sid=%012d", i ? "," : "", i);
		spx_kv_add(&h, "x-amz-grant-read", v.p);
		T_OK(spx_s3_acl_headers(&h, OWNER, NULL, &acl, &e) < 0,
		     "101 grants refused");
		spx_kv_free(&h);
		v.len = 0;
		for (int i = 0; i < 100; i++)
			spx_buf_addf(&v, "%sid=%012d", i ? "," : "", i);
		spx_kv_add(&h, "x-amz-grant-read", v.p);
		T_OK(spx_s3_acl_headers(&h, OWNER, NULL, &acl, &e) == 0 &&
			     json_array_size(json_object_get(acl, "Grants")) ==
				     100,
		     "100 grants taken");
		json_decref(acl);
		spx_kv_free(&h);
		spx_buf_release(&v);
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bodies); i++) {
		const char *b = bodies[i].body;
		int rc;

		acl = NULL;
		e.code = NULL;
		rc = spx_s3_acl_xml(b, strlen(b), OWNER, &acl, &e);
		if (bodies[i].want) {
			grants(acl, got, sizeof(got));
			T_OK(rc == 0, "body %zu accepted", i);
			T_STR(got, bodies[i].want, "body %zu grants", i);
		} else {
			T_OK(rc < 0 && !acl, "body %zu refused", i);
			if (bodies[i].code)
				T_STR(e.code, bodies[i].code, "body %zu code", i);
		}
		json_decref(acl);
	}
	acl = spx_s3_acl_load(kept, strlen(kept));
	T_OK(acl != NULL, "a kept ACL loads");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(decide); i++)
		T_OK(spx_s3_acl_grants(acl, decide[i].account, decide[i].perm,
				       decide[i].ignore_public) == decide[i].want,
		     "grants %zu: '%s' %#x%s", i, decide[i].account,
		     decide[i].perm, decide[i].ignore_public ? " ignoring" : "");
	T_OK(spx_s3_acl_public(acl), "AllUsers: public");
	T_OK(!spx_s3_acl_is_private(acl, OWNER), "not private");
	json_decref(acl);
	acl = spx_s3_acl_private(OWNER);
	T_OK(spx_s3_acl_is_private(acl, OWNER) &&
		     !spx_s3_acl_is_private(acl, OTHER) &&
		     !spx_s3_acl_public(acl),
	     "private is private, for its owner only");
	json_decref(acl);
	{
		static const char nobody[] =
			"{\"Owner\":\"1\",\"Grants\":[{\"Type\":"
			"\"CanonicalUser\",\"Permission\":\"READ\"}]}";

		T_OK(!spx_s3_acl_load(nobody, strlen(nobody)),
		     "a grant without its grantee does not load");
	}
	T_OK(!spx_s3_acl_load("nonsense", 8), "nonsense does not load");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(needs); i++) {
		unsigned perm = 99;

		T_OK(spx_s3_acl_need(needs[i].action, &perm) == needs[i].of &&
			     perm == needs[i].perm,
		     "%s asks %d/%#x", needs[i].action, needs[i].of,
		     needs[i].perm);
	}
	return t_done();
}
