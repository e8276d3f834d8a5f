/* Unit tests for lib/gw/s3policy: bucket policies refused with S3's
 * reasons, the public test, and the access decision's order, each as a
 * table. */
#include "spx.h"

#include <jansson.h>

#include "gw/s3policy.h"

#include "t.h"

#define OWNER "111111111111"
#define OTHER "222222222222"
#define B "arn:aws:s3:::bkt"

/* ---- parsing: good and refused ---- */

static const struct {
	const char *json, *why; /* why NULL: accepted */
} parses[] = {
	{"{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
	 "\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B
	 "/*\"}]}",
	 NULL},
	{"{\"Statement\":{\"Sid\":\"x\",\"Effect\":\"Deny\",\"Principal\":{"
	 "\"AWS\":[\"" OTHER "\",\"arn:aws:iam::" OTHER ":user/bob\"]},"
	 "\"NotAction\":[\"s3:Get*\",\"s3:List?ucket\"],\"NotResource\":\"" B
	 "\"}}",
	 NULL},
	{"{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
	 "\"Principal\":\"*\",\"Action\":\"*\",\"Resource\":\"arn:aws:s3:::b*\","
	 "\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":[\"10.0.0.0/8\","
	 "\"::1\"]},\"Bool\":{\"aws:SecureTransport\":true},"
	 "\"NumericLessThanIfExists\":{\"s3:max-keys\":10},"
	 "\"ForAnyValue:StringLike\":{\"s3:prefix\":[\"a/*\"]},"
	 "\"DateGreaterThan\":{\"aws:CurrentTime\":\"2020-01-01T00:00:00Z\"},"
	 "\"Null\":{\"s3:x-amz-acl\":\"true\"}}}]}",
	 NULL},
	{"", "Policies must be valid JSON and the first byte must be '{'"},
	{"[1]", "Policies must be valid JSON and the first byte must be '{'"},
	{"{\"Statement\":[]}", "Invalid policy syntax."},
	{"{\"Version\":\"2012-10-18\",\"Statement\":[]}",
	 "The policy must contain a valid version string"},
	{"{\"Version\":\"2012-10-17\"}", "Missing required field Statement"},
	{"{\"Statement\":{},\"Extra\":1}", "Unknown field Extra"},
	{"{\"Statement\":{\"Principal\":\"*\",\"Action\":\"*\",\"Resource\":"
	 "\"*\"}}",
	 "Missing required field Effect"},
	{"{\"Statement\":{\"Effect\":\"Maybe\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\"}}",
	 "Invalid effect: Maybe"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":"
	 "\"*\"}}",
	 "Missing required field Principal"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"bob\",\"Action\":"
	 "\"*\",\"Resource\":\"*\"}}",
	 "Invalid principal in policy"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"1234\"},"
	 "\"Action\":\"*\",\"Resource\":\"*\"}}",
	 "Invalid principal in policy"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"ec2:RunInstances\",\"Resource\":\"*\"}}",
	 "Policy has invalid action"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"arn:aws:s3:::other/*\"}}",
	 "Policy has invalid resource"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"*\"}}",
	 "Missing required field Resource"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"NotAction\":\"*\",\"Resource\":\"*\"}}",
	 "Invalid policy syntax."},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"StringSorta\":{"
	 "\"s3:prefix\":\"a\"}}}}",
	 "Invalid Condition type : StringSorta"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"StringEquals\":{"
	 "\"foo:bar\":\"a\"}}}}",
	 "Policy has an invalid condition key"},
	/* Keys the gateway never gives a request: a Deny on them would
	 * never deny. */
	{"{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":"
	 "\"s3:GetObject\",\"Resource\":\"*\",\"Condition\":{\"StringEquals\":{"
	 "\"s3:ExistingObjectTag/classification\":\"secret\"}}}}",
	 "Policy has an invalid condition key: "
	 "s3:ExistingObjectTag/classification is not evaluated by this server"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"StringNotEquals\":{"
	 "\"aws:SourceVpc\":\"vpc-1\"}}}}",
	 "Policy has an invalid condition key: aws:SourceVpc is not "
	 "evaluated by this server"},
	{"{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"NumericLessThan\":{"
	 "\"s3:TlsVersion\":1.2}}}}",
	 "Policy has an invalid condition key: s3:TlsVersion is not "
	 "evaluated by this server"},
	{"{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"Null\":{"
	 "\"s3:object-lock-mode\":\"true\"}}}}",
	 "Policy has an invalid condition key: s3:object-lock-mode is not "
	 "evaluated by this server"},
	{"{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"ForAnyValue:StringLike\":{"
	 "\"s3:RequestObjectTagKeys\":\"x\"}}}}",
	 "Policy has an invalid condition key: s3:RequestObjectTagKeys is not "
	 "evaluated by this server"},
	/* Every key the gateway gives, in any case. */
	{"{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"StringEqualsIfExists\":{"
	 "\"aws:currenttime\":\"x\",\"AWS:EpochTime\":\"x\","
	 "\"aws:PrincipalAccount\":\"x\",\"aws:PrincipalArn\":\"x\","
	 "\"aws:PrincipalType\":\"x\",\"aws:Referer\":\"x\","
	 "\"aws:SecureTransport\":\"x\",\"aws:SourceIp\":\"x\","
	 "\"aws:UserAgent\":\"x\",\"aws:username\":\"x\","
	 "\"s3:authType\":\"x\",\"s3:delimiter\":\"x\",\"s3:max-keys\":\"x\","
	 "\"s3:prefix\":\"x\",\"s3:signatureversion\":\"x\","
	 "\"s3:versionid\":\"x\",\"s3:x-amz-acl\":\"x\","
	 "\"s3:x-amz-content-sha256\":\"x\",\"s3:x-amz-copy-source\":\"x\","
	 "\"s3:x-amz-metadata-directive\":\"x\","
	 "\"s3:x-amz-server-side-encryption\":\"x\","
	 "\"s3:x-amz-storage-class\":\"x\"}}}}",
	 NULL},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"IpAddress\":{"
	 "\"aws:SourceIp\":\"10.0.0.0/33\"}}}}",
	 "Invalid Condition value for IpAddress"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"DateLessThan\":{"
	 "\"aws:CurrentTime\":\"soon\"}}}}",
	 "Invalid Condition value for DateLessThan"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\",\"Condition\":{\"NullIfExists\":{"
	 "\"s3:prefix\":\"true\"}}}}",
	 "Invalid Condition type : NullIfExists"},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Effect\":\"Deny\"}}",
	 "Policies must be valid JSON and the first byte must be '{'"},
};

static void test_parse(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(parses); i++) {
		char why[160] = "";
		json_t *p = NULL;
		int rc = spx_s3_policy_parse(parses[i].json,
					     strlen(parses[i].json), "bkt", &p,
					     why, sizeof(why));

		if (!parses[i].why) {
			T_INT(rc, 0, "parse %zu accepted (%s)", i, why);
		} else {
			T_INT(rc, -1, "parse %zu refused", i);
			T_STR(why, parses[i].why, "parse %zu reason", i);
		}
		json_decref(p);
	}
	/* Over the size limit, however well formed. */
	{
		size_t n = SPX_S3_POLICY_MAX + 1;
		char *big = spx_malloc(n), why[160];
		json_t *p = NULL;

		memset(big, ' ', n);
		big[0] = '{';
		big[n - 1] = '}';
		T_INT(spx_s3_policy_parse(big, n, "bkt", &p, why, sizeof(why)),
		      -1, "a policy over 20 KB is refused");
		free(big);
	}
}

/* ---- public ---- */

#define ALLOW_STAR(cond)                                                     \
	"{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"*\"},"  \
	"\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\"" cond "}]}"

static const struct {
	const char *json;
	bool pub;
} publics[] = {
	{ALLOW_STAR(""), true},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "\"10.1.0.0/16\"}}"),
	 false},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "\"0.0.0.0/0\"}}"),
	 true},
	/* A range that is everything however it is written, or ranges that
	 * together are, or everything but a few: public. */
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "\"1.2.3.4/0\"}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "\"1.2.3.4/00\"}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "\"2001:db8::/0\"}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "[\"0.0.0.0/1\",\"10.0.0.0/8\",\"128.0.0.0/1\"]}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "[\"0.0.0.0/1\",\"128.0.0.0/2\",\"192.0.0.0/3\","
		    "\"224.0.0.0/3\"]}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "[\"0.0.0.0/1\",\"128.0.0.0/2\",\"192.0.0.0/3\"]}}"),
	 false},
	/* Every IPv4 peer of a dual-stack socket (::ffff:a.b.c.d). */
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "\"::/64\"}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "\"::ffff:0.0.0.0/96\"}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "[\"::ffff:0.0.0.0/97\",\"128.0.0.0/1\"]}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "\"::ffff:10.0.0.0/104\"}}"),
	 false},
	{ALLOW_STAR(",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		    "[\"10.0.0.0/8\",\"::1\"]}}"),
	 false},
	{ALLOW_STAR(",\"Condition\":{\"NotIpAddress\":{\"aws:SourceIp\":"
		    "\"10.1.2.3/32\"}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"StringLike\":{\"aws:SourceIp\":"
		    "\"10.1.2.?\"}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"StringEquals\":{\"aws:PrincipalAccount\":"
		    "\"" OTHER "\"}}"),
	 false},
	{ALLOW_STAR(",\"Condition\":{\"StringLike\":{\"aws:PrincipalArn\":"
		    "\"*\"}}"),
	 true},
	{ALLOW_STAR(",\"Condition\":{\"StringEquals\":{\"s3:prefix\":\"a\"}}"),
	 true},
	{"{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":"
	 "\"*\",\"Resource\":\"*\"}}",
	 false},
	{"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" OTHER
	 "\"},\"Action\":\"*\",\"Resource\":\"*\"}}",
	 false},
};

static void test_public(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(publics); i++) {
		char why[160];
		json_t *p = NULL;

		if (spx_s3_policy_parse(publics[i].json, strlen(publics[i].json),
					"bkt", &p, why, sizeof(why)) < 0) {
			T_OK(0, "public %zu parses: %s", i, why);
			continue;
		}
		T_INT(spx_s3_policy_public(p), publics[i].pub, "public %zu", i);
		json_decref(p);
	}
}

/* ---- the decision, in order ---- */

/* One policy for the table: the owner's account is denied deletes; the
 * other account may read; anyone may read public/ from 10/8; anyone may
 * list with prefix public/; plain HTTP is refused to all. */
static const char order_policy[] =
	"{\"Version\":\"2012-10-17\",\"Statement\":["
	"{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:DeleteObject\","
	"\"Resource\":\"" B "/keep/*\"},"
	"{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::" OTHER
	":root\"},\"Action\":[\"s3:GetObject\",\"s3:PutObject\"],\"Resource\":\"" B
	"/*\"},"
	"{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
	"\"Resource\":\"" B "/public/*\"},"
	"{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\","
	"\"Resource\":\"" B "\",\"Condition\":{\"StringLike\":{\"s3:prefix\":"
	"\"public/*\"},\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}},"
	"{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
	"\"Resource\":[\"" B "\",\"" B "/*\"],\"Condition\":{\"Bool\":{"
	"\"aws:SecureTransport\":\"false\"}}},"
	"{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"*\",\"Resource\":"
	"\"" B "/*\",\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":"
	"\"2001-01-01T00:00:00Z\"}}}"
	"]}";

/* Not public: one account, named. */
static const char account_policy[] =
	"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" OTHER
	"\"},\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\"}}";

#define ROOT(a) "arn:aws:iam::" a ":root"

static const struct {
	const char *account, *arn, *action, *resource;
	const char *keys; /* "k=v;k=v" */
	int policy; /* 0 none, 1 order_policy, 2 account_policy */
	bool restrict_public, acl;
	enum spx_s3_access_why want;
} decisions[] = {
	/* Step 2: the owner, with no policy, and with one that is silent. */
	{OWNER, ROOT(OWNER), "s3:GetObject", B "/a", "", false, false, false,
	 SPX_S3_ALLOWED_OWNER},
	{OWNER, ROOT(OWNER), "s3:DeleteBucket", B, "", true, false, false,
	 SPX_S3_ALLOWED_OWNER},
	/* Step 1 before 2: a deny binds the owner too. */
	{OWNER, ROOT(OWNER), "s3:DeleteObject", B "/keep/x", "", true, false,
	 false, SPX_S3_DENIED_BY_POLICY},
	{OWNER, ROOT(OWNER), "s3:DeleteObject", B "/other", "", true, false,
	 false, SPX_S3_ALLOWED_OWNER},
	{OWNER, ROOT(OWNER), "s3:GetObject", B "/a",
	 "aws:SecureTransport=false", true, false, false,
	 SPX_S3_DENIED_BY_POLICY},
	/* ... except the owner's root on the policy itself. */
	{OWNER, ROOT(OWNER), "s3:PutBucketPolicy", B,
	 "aws:SecureTransport=false", true, false, false, SPX_S3_ALLOWED_OWNER},
	{OWNER, "arn:aws:iam::" OWNER ":user/u", "s3:PutBucketPolicy", B,
	 "aws:SecureTransport=false", true, false, false,
	 SPX_S3_DENIED_BY_POLICY},
	/* Step 3: another account, by the account statement. */
	{OTHER, ROOT(OTHER), "s3:PutObject", B "/x",
	 "aws:SecureTransport=true", true, false, false, SPX_S3_ALLOWED_POLICY},
	{OTHER, "arn:aws:iam::" OTHER ":user/bob", "s3:GetObject", B "/x", "",
	 true, false, false, SPX_S3_ALLOWED_POLICY},
	{OTHER, ROOT(OTHER), "s3:DeleteObject", B "/x", "", true, false, false,
	 SPX_S3_DENIED},
	{OTHER, ROOT(OTHER), "s3:PutObject", B "/x", "", false, false, false,
	 SPX_S3_DENIED},
	/* A third account, and anonymous callers, by public statements. */
	{"333333333333", ROOT("333333333333"), "s3:GetObject", B "/public/p",
	 "", true, false, false, SPX_S3_ALLOWED_POLICY},
	{"", "", "s3:GetObject", B "/public/p", "", true, false, false,
	 SPX_S3_ALLOWED_POLICY},
	{"", "", "s3:GetObject", B "/private", "", true, false, false,
	 SPX_S3_DENIED},
	{"", "", "s3:PutObject", B "/public/p", "", true, false, false,
	 SPX_S3_DENIED},
	/* RestrictPublicBuckets: a public policy grants nobody else
	 * anything, its account statement included ... */
	{"", "", "s3:GetObject", B "/public/p", "", true, true, false,
	 SPX_S3_DENIED},
	{OTHER, ROOT(OTHER), "s3:GetObject", B "/x", "", true, true, false,
	 SPX_S3_DENIED},
	/* ... while a policy that is not public still grants. */
	{OTHER, ROOT(OTHER), "s3:GetObject", B "/x", "", 2, true, false,
	 SPX_S3_ALLOWED_POLICY},
	{"", "", "s3:GetObject", B "/x", "", 2, true, false, SPX_S3_DENIED},
	/* Conditions: prefix and address both, or nothing. */
	{"", "", "s3:ListBucket", B, "s3:prefix=public/a;aws:SourceIp=10.2.3.4",
	 true, false, false, SPX_S3_ALLOWED_POLICY},
	{"", "", "s3:ListBucket", B, "s3:prefix=public/a;aws:SourceIp=11.2.3.4",
	 true, false, false, SPX_S3_DENIED},
	{"", "", "s3:ListBucket", B, "aws:SourceIp=10.2.3.4", true, false, false,
	 SPX_S3_DENIED},
	/* An IPv4 peer seen on a dual-stack socket is that IPv4 address. */
	{"", "", "s3:ListBucket", B,
	 "s3:prefix=public/a;aws:SourceIp=::ffff:10.2.3.4", true, false, false,
	 SPX_S3_ALLOWED_POLICY},
	{"", "", "s3:ListBucket", B,
	 "s3:prefix=public/a;aws:SourceIp=::ffff:11.2.3.4", true, false, false,
	 SPX_S3_DENIED},
	/* Actions are matched without regard to case. */
	{"", "", "s3:getobject", B "/public/p", "", true, false, false,
	 SPX_S3_ALLOWED_POLICY},
	/* Step 4 and 5: an ACL grant, only where nothing denies. */
	{OTHER, ROOT(OTHER), "s3:GetBucketAcl", B, "", false, false, true,
	 SPX_S3_ALLOWED_ACL},
	{OTHER, ROOT(OTHER), "s3:GetObject", B "/x", "aws:SecureTransport=false",
	 true, false, true, SPX_S3_DENIED_BY_POLICY},
	{"", "", "s3:GetObject", B "/x", "", false, false, false, SPX_S3_DENIED},
	/* Dates: the statement of 2001 binds no request of now. */
	{OTHER, ROOT(OTHER), "s3:GetObject", B "/x",
	 "aws:CurrentTime=2000-06-01T00:00:00Z", true, false, false,
	 SPX_S3_DENIED_BY_POLICY},
	{OTHER, ROOT(OTHER), "s3:GetObject", B "/x",
	 "aws:CurrentTime=2026-06-01T00:00:00Z", true, false, false,
	 SPX_S3_ALLOWED_POLICY},
};

static void keys_of(const char *s, struct spx_kvlist *kv)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(tok, '=');

		*eq = '\0';
		spx_kv_add(kv, tok, eq + 1);
	}
}

static void test_decide(void)
{
	char why[160];
	json_t *pol = NULL, *acct = NULL;

	if (spx_s3_policy_parse(order_policy, strlen(order_policy), "bkt", &pol,
				why, sizeof(why)) < 0 ||
	    spx_s3_policy_parse(account_policy, strlen(account_policy), "bkt",
				&acct, why, sizeof(why)) < 0) {
		T_OK(0, "the table's policies parse: %s", why);
		json_decref(pol);
		return;
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(decisions); i++) {
		struct spx_kvlist kv = SPX_KVLIST_INIT;
		struct spx_s3_access_bucket b = {
			.owner = OWNER,
			.policy = decisions[i].policy == 1   ? pol
				  : decisions[i].policy == 2 ? acct
							     : NULL,
			.restrict_public = decisions[i].restrict_public,
			.acl_allows = decisions[i].acl,
		};
		struct spx_s3_access_req r = {
			.account = decisions[i].account,
			.arn = decisions[i].arn,
			.action = decisions[i].action,
			.resource = decisions[i].resource,
			.keys = &kv,
		};

		keys_of(decisions[i].keys, &kv);
		T_INT(spx_s3_access(&b, &r), decisions[i].want,
		      "decision %zu: %s %s by %s [%s]", i, r.action, r.resource,
		      *r.account ? r.account : "anonymous", decisions[i].keys);
		spx_kv_free(&kv);
	}
	json_decref(pol);
	json_decref(acct);
}

int main(void)
{
	test_parse();
	test_public();
	test_decide();
	return t_done();
}
