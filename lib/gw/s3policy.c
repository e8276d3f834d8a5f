/* s3policy.c: bucket policies and the access decision (contract in
 * s3policy.h). The policy is kept as the JSON it was given, checked once
 * when it is put; evaluation walks it. */
#include "spx.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <strings.h>

#include "ec2/filter.h"
#include "gw/ec2q.h"
#include "gw/s3policy.h"

#define MAX_STATEMENTS 100
#define MAX_VALUES 256 /* in one list */

/* ---- parsing -------------------------------------------------------- */

struct pctx {
	const char *bucket;
	char *why;
	size_t whylen;
};

static int bad(struct pctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int bad(struct pctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, c->whylen, fmt, ap);
	va_end(ap);
	return spx_error(SPX_USAGE, "MalformedPolicy: %s", c->why);
}

/* A string, or a non-empty list of at most MAX_VALUES strings: each
 * passed to fn. */
static int each_string(struct pctx *c, const json_t *v, const char *what,
		       int (*fn)(struct pctx *, const char *))
{
	size_t i;
	json_t *e;

	if (json_is_string(v))
		return fn(c, json_string_value(v));
	if (!json_is_array(v) || !json_array_size(v) ||
	    json_array_size(v) > MAX_VALUES)
		return bad(c, "Invalid %s in policy", what);
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e))
			return bad(c, "Invalid %s in policy", what);
		if (fn(c, json_string_value(e)) < 0)
			return -1;
	}
	return 0;
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return strlen(s) >= n;
}

/* "*", an account id, or arn:aws:iam::ACCOUNT:root|user/..|role/.. */
static int aws_principal(struct pctx *c, const char *s)
{
	if (!strcmp(s, "*") || (strlen(s) == 12 && digits(s, 12)))
		return 0;
	if (!strncmp(s, "arn:aws:iam::", 13) && digits(s + 13, 12) &&
	    s[25] == ':' &&
	    (!strcmp(s + 26, "root") || !strncmp(s + 26, "user/", 5) ||
	     !strncmp(s + 26, "role/", 5)) &&
	    strlen(s) < 160 && !strpbrk(s, "*? "))
		return 0;
	if (!strncmp(s, "arn:aws:sts::", 13) && digits(s + 13, 12) &&
	    s[25] == ':' && !strncmp(s + 26, "assumed-role/", 13) &&
	    strlen(s) < 160 && !strpbrk(s, "*? "))
		return 0;
	return bad(c, "Invalid principal in policy");
}

static int any_principal(struct pctx *c, const char *s)
{
	if (!*s || strlen(s) > 256)
		return bad(c, "Invalid principal in policy");
	return 0;
}

static int canonical_user(struct pctx *c, const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			n = 0;
	if (n != 64)
		return bad(c, "Invalid principal in policy");
	return 0;
}

static int principal(struct pctx *c, const json_t *v)
{
	const char *k;
	json_t *e;

	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "*"))
			return bad(c, "Invalid principal in policy");
		return 0;
	}
	if (!json_is_object(v) || !json_object_size(v))
		return bad(c, "Invalid principal in policy");
	json_object_foreach((json_t *)v, k, e)
	{
		int rc;

		if (!strcmp(k, "AWS"))
			rc = each_string(c, e, "principal", aws_principal);
		else if (!strcmp(k, "CanonicalUser"))
			rc = each_string(c, e, "principal", canonical_user);
		else if (!strcmp(k, "Service") || !strcmp(k, "Federated"))
			rc = each_string(c, e, "principal", any_principal);
		else
			rc = bad(c, "Invalid principal in policy");
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* "*" or s3:NAME, NAME of letters and wildcards. */
static int action(struct pctx *c, const char *s)
{
	if (!strcmp(s, "*"))
		return 0;
	if (strncasecmp(s, "s3:", 3) || !s[3] || strlen(s) > 128)
		return bad(c, "Policy has invalid action");
	for (const char *p = s + 3; *p; p++)
		if (!isalpha((unsigned char)*p) && *p != '*' && *p != '?')
			return bad(c, "Policy has invalid action");
	return 0;
}

/* "*" or arn:aws:s3:::B[/...] where the pattern B matches this bucket. */
static int resource(struct pctx *c, const char *s)
{
	char b[256];
	const char *r, *slash;
	size_t n;

	if (!strcmp(s, "*"))
		return 0;
	if (strncmp(s, "arn:aws:s3:::", 13) || strlen(s) > 2048)
		return bad(c, "Policy has invalid resource");
	r = s + 13;
	slash = strchr(r, '/');
	n = slash ? (size_t)(slash - r) : strlen(r);
	if (!n || n >= sizeof(b))
		return bad(c, "Policy has invalid resource");
	memcpy(b, r, n);
	b[n] = '\0';
	if (!spx_ec2_wildcard(b, c->bucket))
		return bad(c, "Policy has invalid resource");
	return 0;
}

/* ---- conditions ----------------------------------------------------- */

enum cmp {
	C_STR,
	C_STR_CI,
	C_STR_LIKE,
	C_NUM_EQ,
	C_NUM_LT,
	C_NUM_LE,
	C_NUM_GT,
	C_NUM_GE,
	C_DATE_EQ,
	C_DATE_LT,
	C_DATE_LE,
	C_DATE_GT,
	C_DATE_GE,
	C_BOOL,
	C_IP,
	C_ARN,
	C_NULL,
};

static const struct op {
	const char *name;
	enum cmp cmp;
	bool negated;
} ops[] = {
	{"StringEquals", C_STR, false},
	{"StringNotEquals", C_STR, true},
	{"StringEqualsIgnoreCase", C_STR_CI, false},
	{"StringNotEqualsIgnoreCase", C_STR_CI, true},
	{"StringLike", C_STR_LIKE, false},
	{"StringNotLike", C_STR_LIKE, true},
	{"NumericEquals", C_NUM_EQ, false},
	{"NumericNotEquals", C_NUM_EQ, true},
	{"NumericLessThan", C_NUM_LT, false},
	{"NumericLessThanEquals", C_NUM_LE, false},
	{"NumericGreaterThan", C_NUM_GT, false},
	{"NumericGreaterThanEquals", C_NUM_GE, false},
	{"DateEquals", C_DATE_EQ, false},
	{"DateNotEquals", C_DATE_EQ, true},
	{"DateLessThan", C_DATE_LT, false},
	{"DateLessThanEquals", C_DATE_LE, false},
	{"DateGreaterThan", C_DATE_GT, false},
	{"DateGreaterThanEquals", C_DATE_GE, false},
	{"Bool", C_BOOL, false},
	{"IpAddress", C_IP, false},
	{"NotIpAddress", C_IP, true},
	{"ArnEquals", C_ARN, false},
	{"ArnLike", C_ARN, false},
	{"ArnNotEquals", C_ARN, true},
	{"ArnNotLike", C_ARN, true},
	{"Null", C_NULL, false},
};

/* The operator a condition names: ForAnyValue:/ForAllValues: (one value
 * per key here, so either reads as the value itself), the base, and
 * IfExists. */
static const struct op *op_find(const char *name, bool *if_exists)
{
	char base[64];
	size_t n;

	if (!strncmp(name, "ForAnyValue:", 12))
		name += 12;
	else if (!strncmp(name, "ForAllValues:", 13))
		name += 13;
	n = strlen(name);
	*if_exists = n > 8 && !strcmp(name + n - 8, "IfExists");
	if (*if_exists)
		n -= 8;
	if (n >= sizeof(base))
		return NULL;
	memcpy(base, name, n);
	base[n] = '\0';
	for (size_t i = 0; i < SPX_ARRAY_SIZE(ops); i++)
		if (!strcmp(ops[i].name, base))
			return *if_exists && ops[i].cmp == C_NULL ? NULL : &ops[i];
	return NULL;
}

/* A condition value as text: a string, a number or a boolean. */
static bool value_text(const json_t *v, char *buf, size_t len)
{
	if (json_is_string(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%.17g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
	else
		return false;
	return true;
}

static bool number(const char *s, double *d)
{
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return false;
	errno = 0;
	*d = strtod(s, &end);
	return !*end && !errno;
}

/* An address or CIDR block: family, bytes and prefix length. */
struct cidr {
	int af;
	unsigned char a[16];
	int bits;
};

static bool cidr_parse(const char *s, struct cidr *c)
{
	char host[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	int max;

	if (n >= sizeof(host))
		return false;
	memcpy(host, s, n);
	host[n] = '\0';
	if (inet_pton(AF_INET, host, c->a) == 1)
		c->af = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, host, c->a) == 1)
		c->af = AF_INET6, max = 128;
	else
		return false;
	c->bits = max;
	if (slash) {
		char *end;
		long b;

		if (!isdigit((unsigned char)slash[1]))
			return false;
		b = strtol(slash + 1, &end, 10);
		if (*end || b < 0 || b > max)
			return false;
		c->bits = (int)b;
	}
	return true;
}

static bool cidr_has(const struct cidr *net, const struct cidr *ip)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0,	   0,
						 0, 0, 0, 0, 0xff, 0xff};
	int full = net->bits / 8, rest = net->bits % 8;
	struct cidr v4;

	/* An IPv4 peer on a dual-stack socket (::ffff:a.b.c.d) is that IPv4
	 * address: else a deny for it would miss. */
	if (net->af == AF_INET && ip->af == AF_INET6 &&
	    !memcmp(ip->a, mapped, sizeof(mapped))) {
		v4.af = AF_INET;
		memcpy(v4.a, ip->a + 12, 4);
		v4.bits = 32;
		ip = &v4;
	}
	if (net->af != ip->af)
		return false;
	if (memcmp(net->a, ip->a, (size_t)full))
		return false;
	if (rest) {
		unsigned char m = (unsigned char)(0xff << (8 - rest));

		if ((net->a[full] & m) != (ip->a[full] & m))
			return false;
	}
	return true;
}

/* A value the operator can compare: numbers for Numeric*, dates for
 * Date*, true/false for Bool and Null, addresses for IpAddress. */
static bool value_valid(enum cmp cmp, const char *v)
{
	double d;
	struct cidr ip;

	switch (cmp) {
	case C_NUM_EQ:
	case C_NUM_LT:
	case C_NUM_LE:
	case C_NUM_GT:
	case C_NUM_GE:
		return number(v, &d);
	case C_DATE_EQ:
	case C_DATE_LT:
	case C_DATE_LE:
	case C_DATE_GT:
	case C_DATE_GE:
		return ec2q_time_parse(v, &d) == 0;
	case C_BOOL:
	case C_NULL:
		return !strcasecmp(v, "true") || !strcasecmp(v, "false");
	case C_IP:
		return cidr_parse(v, &ip);
	default:
		return true;
	}
}

/* The condition keys the gateway gives a request (request_keys,
 * s3_access.c: keep the two in step). A key outside them would never
 * be present when the policy is evaluated, so a Deny that names it would
 * never deny, and a negated operator on it would always hold: such a
 * policy is refused when it is put rather than kept failing open. */
static const char *const supported_keys[] = {
	"aws:CurrentTime",
	"aws:EpochTime",
	"aws:PrincipalAccount",
	"aws:PrincipalArn",
	"aws:PrincipalType",
	"aws:Referer",
	"aws:SecureTransport",
	"aws:SourceIp",
	"aws:UserAgent",
	"aws:username",
	"s3:authType",
	"s3:delimiter",
	"s3:max-keys",
	"s3:prefix",
	"s3:signatureversion",
	"s3:VersionId",
	"s3:x-amz-acl",
	"s3:x-amz-content-sha256",
	"s3:x-amz-copy-source",
	"s3:x-amz-metadata-directive",
	"s3:x-amz-server-side-encryption",
	"s3:x-amz-storage-class",
};

static int condition_key(struct pctx *c, const char *k)
{
	size_t n = strlen(k);

	if (n < 4 || n > 128 ||
	    (strncasecmp(k, "aws:", 4) && strncasecmp(k, "s3:", 3)))
		return bad(c, "Policy has an invalid condition key");
	for (size_t i = 0; i < n; i++)
		if (!isgraph((unsigned char)k[i]))
			return bad(c, "Policy has an invalid condition key");
	/* Keys are case-insensitive, as the request's are looked up. */
	for (size_t i = 0; i < SPX_ARRAY_SIZE(supported_keys); i++)
		if (!strcasecmp(k, supported_keys[i]))
			return 0;
	return bad(c, "Policy has an invalid condition key: %s is not "
		      "evaluated by this server",
		   k);
}

static int condition(struct pctx *c, const json_t *v)
{
	const char *opname, *key;
	json_t *keys, *vals;

	if (!json_is_object(v))
		return bad(c, "Invalid Condition in policy");
	json_object_foreach((json_t *)v, opname, keys)
	{
		bool ie;
		const struct op *o = op_find(opname, &ie);

		if (!o)
			return bad(c, "Invalid Condition type : %.64s", opname);
		if (!json_is_object(keys) || !json_object_size(keys))
			return bad(c, "Invalid Condition in policy");
		json_object_foreach(keys, key, vals)
		{
			json_t *one = vals;
			size_t i = 0, n = 1;
			char buf[512];

			if (condition_key(c, key) < 0)
				return -1;
			if (json_is_array(vals)) {
				n = json_array_size(vals);
				if (!n || n > MAX_VALUES)
					return bad(c, "Invalid Condition in "
						      "policy");
			}
			for (; i < n; i++) {
				if (json_is_array(vals))
					one = json_array_get(vals, i);
				if (!value_text(one, buf, sizeof(buf)) ||
				    !value_valid(o->cmp, buf))
					return bad(c, "Invalid Condition value "
						      "for %.64s",
						   opname);
			}
		}
	}
	return 0;
}

static int statement(struct pctx *c, const json_t *st)
{
	const char *k;
	json_t *v;
	int have = 0;

	if (!json_is_object(st))
		return bad(c, "Invalid policy syntax.");
	json_object_foreach((json_t *)st, k, v)
	{
		int rc = 0;

		if (!strcmp(k, "Sid")) {
			if (!json_is_string(v))
				rc = bad(c, "Invalid Sid in policy");
		} else if (!strcmp(k, "Effect")) {
			if (!json_is_string(v) ||
			    (strcmp(json_string_value(v), "Allow") &&
			     strcmp(json_string_value(v), "Deny")))
				rc = bad(c, "Invalid effect: %.32s",
					 json_is_string(v)
						 ? json_string_value(v)
						 : "");
			have |= 1;
		} else if (!strcmp(k, "Principal") ||
			   !strcmp(k, "NotPrincipal")) {
			rc = principal(c, v);
			have |= have & 2 ? 0x100 : 2;
		} else if (!strcmp(k, "Action") || !strcmp(k, "NotAction")) {
			rc = each_string(c, v, "action", action);
			have |= have & 4 ? 0x100 : 4;
		} else if (!strcmp(k, "Resource") ||
			   !strcmp(k, "NotResource")) {
			rc = each_string(c, v, "resource", resource);
			have |= have & 8 ? 0x100 : 8;
		} else if (!strcmp(k, "Condition"))
			rc = condition(c, v);
		else
			rc = bad(c, "Unknown field %.64s", k);
		if (rc < 0)
			return -1;
	}
	if (have & 0x100)
		return bad(c, "Invalid policy syntax.");
	if (!(have & 1))
		return bad(c, "Missing required field Effect");
	if (!(have & 2))
		return bad(c, "Missing required field Principal");
	if (!(have & 4))
		return bad(c, "Missing required field Action");
	if (!(have & 8))
		return bad(c, "Missing required field Resource");
	return 0;
}

int spx_s3_policy_parse(const char *p, size_t n, const char *bucket,
			json_t **out, char *why, size_t whylen)
{
	struct pctx c = {bucket, why, whylen};
	json_error_t je;
	json_t *doc, *v;
	const char *k;
	size_t i;

	if (n > SPX_S3_POLICY_MAX)
		return bad(&c, "Policies must be less than 20 KB");
	doc = json_loadb(p, n, JSON_REJECT_DUPLICATES, &je);
	if (!doc || !json_is_object(doc)) {
		json_decref(doc);
		return bad(&c, "Policies must be valid JSON and the first "
			       "byte must be '{'");
	}
	json_object_foreach(doc, k, v)
	{
		if (!strcmp(k, "Version")) {
			if (!json_is_string(v) ||
			    (strcmp(json_string_value(v), "2012-10-17") &&
			     strcmp(json_string_value(v), "2008-10-17"))) {
				bad(&c, "The policy must contain a valid "
					"version string");
				goto fail;
			}
		} else if (!strcmp(k, "Id")) {
			if (!json_is_string(v)) {
				bad(&c, "Invalid Id in policy");
				goto fail;
			}
		} else if (strcmp(k, "Statement")) {
			bad(&c, "Unknown field %.64s", k);
			goto fail;
		}
	}
	v = json_object_get(doc, "Statement");
	if (!v) {
		bad(&c, "Missing required field Statement");
		goto fail;
	}
	if (json_is_object(v)) {
		if (statement(&c, v) < 0)
			goto fail;
	} else if (json_is_array(v) && json_array_size(v) &&
		   json_array_size(v) <= MAX_STATEMENTS) {
		json_t *st;

		json_array_foreach(v, i, st)
		{
			if (statement(&c, st) < 0)
				goto fail;
		}
	} else {
		bad(&c, "Invalid policy syntax.");
		goto fail;
	}
	*out = doc;
	return 0;
fail:
	json_decref(doc);
	return -1;
}

/* ---- evaluation ----------------------------------------------------- */

/* Calls fn on the string or each string of a list until it says true. */
static bool any_string(const json_t *v, bool (*fn)(const char *, const void *),
		       const void *arg)
{
	size_t i;
	json_t *e;

	if (json_is_string(v))
		return fn(json_string_value(v), arg);
	json_array_foreach(v, i, e)
	{
		if (json_is_string(e) && fn(json_string_value(e), arg))
			return true;
	}
	return false;
}

static bool aws_principal_has(const char *p, const void *arg)
{
	const struct spx_s3_access_req *r = arg;

	if (!strcmp(p, "*"))
		return true;
	if (!*r->account)
		return false;
	if (!strcmp(p, r->account))
		return true;
	if (!strncmp(p, "arn:aws:iam::", 13) && !strncmp(p + 13, r->account, 12) &&
	    strlen(r->account) == 12 && !strcmp(p + 25, ":root"))
		return true;
	return *r->arn && !strcmp(p, r->arn);
}

static bool principal_has(const json_t *v, const struct spx_s3_access_req *r)
{
	if (json_is_string(v))
		return true; /* "*" */
	v = json_object_get(v, "AWS");
	return v && any_string(v, aws_principal_has, r);
}

static bool action_has(const char *pattern, const void *arg)
{
	char p[160], a[160];
	size_t i;

	snprintf(p, sizeof(p), "%s", pattern);
	snprintf(a, sizeof(a), "%s", (const char *)arg);
	for (i = 0; p[i]; i++)
		p[i] = (char)tolower((unsigned char)p[i]);
	for (i = 0; a[i]; i++)
		a[i] = (char)tolower((unsigned char)a[i]);
	return spx_ec2_wildcard(p, a);
}

static bool resource_has(const char *pattern, const void *arg)
{
	return spx_ec2_wildcard(pattern, (const char *)arg);
}

static bool compare(enum cmp cmp, const char *want, const char *have)
{
	double a, b;
	struct cidr n, ip;

	switch (cmp) {
	case C_STR:
		return !strcmp(want, have);
	case C_STR_CI:
		return !strcasecmp(want, have);
	case C_STR_LIKE:
	case C_ARN:
		return spx_ec2_wildcard(want, have);
	case C_BOOL:
		return !strcasecmp(want, have);
	case C_IP:
		return cidr_parse(want, &n) && cidr_parse(have, &ip) &&
		       cidr_has(&n, &ip);
	case C_NULL:
		return false;
	default:
		break;
	}
	if (cmp >= C_DATE_EQ && cmp <= C_DATE_GE) {
		if (ec2q_time_parse(want, &a) < 0 ||
		    ec2q_time_parse(have, &b) < 0)
			return false;
	} else if (!number(want, &a) || !number(have, &b))
		return false;
	/* b (the request's) against a (the policy's). */
	switch (cmp) {
	case C_NUM_EQ:
	case C_DATE_EQ:
		return b == a;
	case C_NUM_LT:
	case C_DATE_LT:
		return b < a;
	case C_NUM_LE:
	case C_DATE_LE:
		return b <= a;
	case C_NUM_GT:
	case C_DATE_GT:
		return b > a;
	default:
		return b >= a;
	}
}

/* One key of one operator: any of the policy's values matches (none, for
 * a negated operator). A key the request lacks: true for IfExists and
 * negated operators, false otherwise; Null asks only whether it lacks
 * it. */
static bool key_holds(const struct op *o, bool if_exists, const json_t *vals,
		      const char *have)
{
	char want[512];
	size_t n = json_is_array(vals) ? json_array_size(vals) : 1;
	bool any = false;

	if (o->cmp == C_NULL) {
		value_text(json_is_array(vals) ? json_array_get(vals, 0) : vals,
			   want, sizeof(want));
		return !strcasecmp(want, "true") == !have;
	}
	if (!have)
		return if_exists || o->negated;
	for (size_t i = 0; i < n && !any; i++) {
		const json_t *v = json_is_array(vals) ? json_array_get(vals, i)
						      : vals;

		if (value_text(v, want, sizeof(want)))
			any = compare(o->cmp, want, have);
	}
	return o->negated ? !any : any;
}

static bool conditions_hold(const json_t *cond,
			    const struct spx_s3_access_req *r)
{
	const char *opname, *key;
	json_t *keys, *vals;

	if (!cond)
		return true;
	json_object_foreach((json_t *)cond, opname, keys)
	{
		bool ie;
		const struct op *o = op_find(opname, &ie);

		if (!o)
			return false;
		json_object_foreach(keys, key, vals)
		{
			if (!key_holds(o, ie, vals,
				       r->keys ? spx_kv_geti(r->keys, key)
					       : NULL))
				return false;
		}
	}
	return true;
}

static bool applies(const json_t *st, const struct spx_s3_access_req *r)
{
	const json_t *v;

	if ((v = json_object_get(st, "Principal")) && !principal_has(v, r))
		return false;
	if ((v = json_object_get(st, "NotPrincipal")) && principal_has(v, r))
		return false;
	if ((v = json_object_get(st, "Action")) &&
	    !any_string(v, action_has, r->action))
		return false;
	if ((v = json_object_get(st, "NotAction")) &&
	    any_string(v, action_has, r->action))
		return false;
	if ((v = json_object_get(st, "Resource")) &&
	    !any_string(v, resource_has, r->resource))
		return false;
	if ((v = json_object_get(st, "NotResource")) &&
	    any_string(v, resource_has, r->resource))
		return false;
	return conditions_hold(json_object_get(st, "Condition"), r);
}

/* The condition keys that pin a caller down, as S3's public test reads
 * them. */
static const char *const pinning[] = {
	"aws:SourceIp",	      "aws:SourceAccount",  "aws:SourceArn",
	"aws:SourceVpc",      "aws:SourceVpce",	    "aws:SourceOwner",
	"aws:PrincipalAccount", "aws:PrincipalArn", "aws:PrincipalOrgID",
	"aws:userid",
};

/* A value a string or ARN operator matches more than one value by. */
static bool wide(const char *v, const void *arg)
{
	(void)arg;
	return strpbrk(v, "*?") != NULL;
}

static bool prefix_eq(const unsigned char *a, const unsigned char *b, int bits)
{
	int full = bits / 8, rest = bits % 8;
	unsigned char m = (unsigned char)(0xff << (8 - rest));

	return !memcmp(a, b, (size_t)full) &&
	       (!rest || (a[full] & m) == (b[full] & m));
}

/* Do the blocks of family af cover every address under p/len (p zero
 * past len)? Only subtrees that hold a block's start are split, so the
 * work is bounded by the blocks times the address length. */
static bool covered(const struct cidr *b, size_t n, int af,
		    const unsigned char *p, int len, int max)
{
	unsigned char q[16];
	bool inside = false;

	for (size_t i = 0; i < n; i++) {
		if (b[i].af != af)
			continue;
		if (b[i].bits <= len && prefix_eq(b[i].a, p, b[i].bits))
			return true;
		if (b[i].bits > len && prefix_eq(b[i].a, p, len))
			inside = true;
	}
	if (!inside || len >= max)
		return false;
	memcpy(q, p, sizeof(q));
	if (!covered(b, n, af, q, len + 1, max))
		return false;
	q[len / 8] |= (unsigned char)(0x80 >> (len % 8));
	return covered(b, n, af, q, len + 1, max);
}

/* Does an IpAddress condition's list of ranges match every address of
 * a family, however it is written ("1.2.3.4/0", "/00", two /1s)? An
 * IPv4-mapped IPv6 range is the IPv4 range it maps, and an IPv6 range
 * that holds ::ffff:0:0/96 holds every IPv4 peer too: on a dual-stack
 * socket those arrive as mapped addresses. */
static bool ip_wide(const json_t *vals)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0,	   0,
						 0, 0, 0, 0, 0xff, 0xff};
	static const unsigned char zero[16];
	struct cidr b[MAX_VALUES + 1];
	size_t n = 0, cnt = json_is_array(vals) ? json_array_size(vals) : 1;
	char buf[512];

	for (size_t i = 0; i < cnt && n < MAX_VALUES; i++) {
		const json_t *v = json_is_array(vals) ? json_array_get(vals, i)
						      : vals;
		struct cidr *c = &b[n];

		if (!value_text(v, buf, sizeof(buf)) || !cidr_parse(buf, c))
			continue;
		n++;
		if (c->af != AF_INET6)
			continue;
		if (c->bits >= 96 && !memcmp(c->a, mapped, sizeof(mapped))) {
			c->af = AF_INET;
			memmove(c->a, c->a + 12, 4);
			memset(c->a + 4, 0, 12);
			c->bits -= 96;
		} else if (c->bits <= 96 && prefix_eq(c->a, mapped, c->bits)) {
			b[n++] = (struct cidr){.af = AF_INET, .bits = 0};
		}
	}
	return covered(b, n, AF_INET, zero, 0, 32) ||
	       covered(b, n, AF_INET6, zero, 0, 128);
}

static bool pinned(const json_t *cond)
{
	const char *opname, *key;
	json_t *keys, *vals;

	json_object_foreach((json_t *)cond, opname, keys)
	{
		bool ie;
		const struct op *o = op_find(opname, &ie);

		if (!o || o->negated || ie ||
		    (o->cmp != C_STR && o->cmp != C_ARN && o->cmp != C_IP))
			continue;
		json_object_foreach(keys, key, vals)
		{
			for (size_t i = 0; i < SPX_ARRAY_SIZE(pinning); i++)
				if (!strcasecmp(key, pinning[i]) &&
				    !(o->cmp == C_IP
					      ? ip_wide(vals)
					      : any_string(vals, wide, NULL)))
					return true;
		}
	}
	return false;
}

static bool aws_star(const char *p, const void *arg)
{
	(void)arg;
	return !strcmp(p, "*");
}

static bool statement_public(const json_t *st)
{
	const json_t *p = json_object_get(st, "Principal");
	const json_t *cond = json_object_get(st, "Condition");
	const char *e = json_string_value(json_object_get(st, "Effect"));

	if (!e || strcmp(e, "Allow"))
		return false;
	if (json_object_get(st, "NotPrincipal"))
		return !cond || !pinned(cond);
	if (!p)
		return false;
	if (!json_is_string(p)) {
		p = json_object_get(p, "AWS");
		if (!p || !any_string(p, aws_star, NULL))
			return false;
	}
	return !cond || !pinned(cond);
}

/* Statement i of a policy (one statement, or a list). */
static const json_t *statement_at(const json_t *pol, size_t i)
{
	const json_t *s = json_object_get(pol, "Statement");

	if (json_is_object(s))
		return i ? NULL : s;
	return json_array_get(s, i);
}

bool spx_s3_policy_public(const json_t *policy)
{
	const json_t *st;

	for (size_t i = 0; (st = statement_at(policy, i)); i++)
		if (statement_public(st))
			return true;
	return false;
}

enum spx_s3_policy_says spx_s3_policy_eval(const json_t *policy,
					   const struct spx_s3_access_req *r)
{
	const json_t *st;
	bool allow = false, allow_public = false;

	for (size_t i = 0; (st = statement_at(policy, i)); i++) {
		const char *e = json_string_value(json_object_get(st, "Effect"));

		if (!e || !applies(st, r))
			continue;
		if (!strcmp(e, "Deny"))
			return SPX_S3_POLICY_DENY;
		if (statement_public(st))
			allow_public = true;
		else
			allow = true;
	}
	return allow	      ? SPX_S3_POLICY_ALLOW
	       : allow_public ? SPX_S3_POLICY_ALLOW_PUBLIC
			      : SPX_S3_POLICY_NOTHING;
}

static bool owner_root(const struct spx_s3_access_bucket *b,
		       const struct spx_s3_access_req *r)
{
	size_t n = strlen(r->arn);

	return *r->account && !strcmp(r->account, b->owner) && n > 5 &&
	       !strcmp(r->arn + n - 5, ":root");
}

enum spx_s3_access_why spx_s3_access(const struct spx_s3_access_bucket *b,
				     const struct spx_s3_access_req *r)
{
	enum spx_s3_policy_says says =
		b->policy ? spx_s3_policy_eval(b->policy, r)
			  : SPX_S3_POLICY_NOTHING;

	if (says == SPX_S3_POLICY_DENY) {
		if (owner_root(b, r) &&
		    (!strcmp(r->action, "s3:GetBucketPolicy") ||
		     !strcmp(r->action, "s3:PutBucketPolicy") ||
		     !strcmp(r->action, "s3:DeleteBucketPolicy")))
			return SPX_S3_ALLOWED_OWNER;
		return SPX_S3_DENIED_BY_POLICY;
	}
	if (*r->account && !strcmp(r->account, b->owner))
		return SPX_S3_ALLOWED_OWNER;
	/* RestrictPublicBuckets: a public policy grants nobody outside the
	 * owner's account anything, its statements for named accounts
	 * included (S3's rule). */
	if ((says == SPX_S3_POLICY_ALLOW ||
	     says == SPX_S3_POLICY_ALLOW_PUBLIC) &&
	    !(b->restrict_public && spx_s3_policy_public(b->policy)))
		return SPX_S3_ALLOWED_POLICY;
	if (b->acl_allows)
		return SPX_S3_ALLOWED_ACL;
	return SPX_S3_DENIED;
}
