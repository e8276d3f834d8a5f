/* s3_post.c: POST object, the browser form upload. The request carries
 * no Authorization: the form does. Its fields come first, gathered by the
 * multipart reader (http/form.h); when the file part begins, the policy's
 * signature (SigV4, or SigV2 where the node takes it) is checked, the
 * policy's expiration and every condition against the fields, then the
 * bucket and its owner, and only then is a writer opened: the file's
 * content streams into it, bounded by the policy's content-length-range,
 * and is committed once the form has ended. Nothing is looked up or
 * written for a form that does not authenticate. */
#include "spx.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "checksum.h"
#include "gw/ec2q.h"
#include "gw/s3_int.h"
#include "hex.h"
#include "http/form.h"
#include "http/httpdate.h"
#include "http/query.h"

#define POST_POLICY_MAX (20 << 10)

struct s3_post {
	struct spx_form form;
	struct spx_http_req *req;
	struct spx_kvlist fields; /* names as sent, values decoded */
	char *key;		  /* the object's key (${filename} done) */
	int64_t min, max;	  /* content-length-range; max -1: none */
	uint64_t size;		  /* file bytes so far */
	bool file_done;
};

void s3_post_free(struct s3_post *p)
{
	if (!p)
		return;
	spx_form_release(&p->form);
	spx_kv_free(&p->fields);
	free(p->key);
	free(p);
}

#define bad_post(...) \
	spx_api_error(SPX_USAGE, 400, "InvalidArgument", __VA_ARGS__)
#define policy_fail(...) \
	spx_api_error(SPX_USAGE, 403, "AccessDenied", __VA_ARGS__)

static int malformed_policy(const char *why)
{
	return spx_api_error(SPX_USAGE, 400, "InvalidPolicyDocument",
			     "Invalid Policy: %s", why);
}

/* ---- the form's fields ---------------------------------------------- */

static int on_field(void *arg, const char *name, const char *v, size_t n)
{
	struct gw_req *g = arg;
	struct s3_post *p = g->s3->post;

	if (strlen(v) != n)
		return bad_post("The form field %s holds a NUL.", name);
	if (spx_kv_geti(&p->fields, name))
		return bad_post("The form field %s is given more than once.",
				name);
	spx_kv_add(&p->fields, name, v);
	return 0;
}

static const char *field(const struct s3_post *p, const char *name)
{
	return spx_kv_geti(&p->fields, name);
}

/* ---- the signature -------------------------------------------------- */

/* "AKID/YYYYMMDD/region/s3/aws4_request" */
static int v4_signature(struct gw_req *g, const struct s3_post *p,
			const char *policy)
{
	const char *alg = field(p, "x-amz-algorithm");
	const char *cred = field(p, "x-amz-credential");
	const char *date = field(p, "x-amz-date");
	const char *sig = field(p, "x-amz-signature");
	char ak[SPX_SIGV4_KEY_MAX + 1], day[9], region[SPX_SIGV4_REGION_MAX + 1];
	unsigned char key[32], mac[32];
	char hex[65];
	const char *s1, *s2, *s3;
	time_t t;
	int ok;

	if (!alg || strcmp(alg, SPX_SIGV4_ALGORITHM))
		return bad_post("The x-amz-algorithm %.40s is not supported.",
				alg ? alg : "(none)");
	if (!cred || !date || !sig)
		return bad_post("Bucket POST must contain the fields "
				"x-amz-credential, x-amz-date and "
				"x-amz-signature.");
	s1 = strchr(cred, '/');
	s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	s3 = s2 ? strchr(s2 + 1, '/') : NULL;
	if (!s3 || (size_t)(s1 - cred) > SPX_SIGV4_KEY_MAX || s2 - s1 != 9 ||
	    (size_t)(s3 - s2 - 1) > SPX_SIGV4_REGION_MAX ||
	    strcmp(s3, "/s3/aws4_request") ||
	    !spx_amz_day_valid(s1 + 1, 8))
		return bad_post("The x-amz-credential %.200s is malformed.",
				cred);
	memcpy(ak, cred, (size_t)(s1 - cred));
	ak[s1 - cred] = '\0';
	memcpy(day, s1 + 1, 8);
	day[8] = '\0';
	memcpy(region, s2 + 1, (size_t)(s3 - s2 - 1));
	region[s3 - s2 - 1] = '\0';
	if (strcmp(region, g->gw->conf->aws.region))
		return spx_api_error(SPX_USAGE, 400,
				     "AuthorizationQueryParametersError",
				     "Error parsing the X-Amz-Credential "
				     "parameter; the region '%s' is wrong; "
				     "expecting '%s'",
				     region, g->gw->conf->aws.region);
	if (!spx_amz_date_parse(date, strlen(date), &t) ||
	    memcmp(date, day, 8))
		return bad_post("The x-amz-date %.40s is not the credential's "
				"day in the form YYYYMMDDTHHMMSSZ.",
				date);
	if (spx_cred_lookup(g->gw->creds, ak, &g->who) < 0)
		return spx_api_error(SPX_USAGE, 403, "InvalidAccessKeyId",
				     "The AWS Access Key Id you provided does "
				     "not exist in our records.");
	if (spx_sigv4_signing_key(g->who.secret, day, region, "s3", key) < 0)
		return s3_obj_fail(g, SPX_OBJ_INTERNAL);
	ok = spx_hmac_sha256(key, sizeof(key), policy, strlen(policy), mac);
	OPENSSL_cleanse(key, sizeof(key));
	spx_hex_encode(mac, 32, hex);
	if (!ok || strlen(sig) != 64 || CRYPTO_memcmp(hex, sig, 64))
		return spx_api_error(SPX_USAGE, 403, "SignatureDoesNotMatch",
				     "The request signature we calculated "
				     "does not match the signature you "
				     "provided. Check your key and signing "
				     "method.");
	return 0;
}

/* SigV2: base64 HMAC-SHA1 of the policy with the secret. */
static int v2_signature(struct gw_req *g, const struct s3_post *p,
			const char *policy)
{
	const char *ak = field(p, "AWSAccessKeyId");
	const char *sig = field(p, "signature");
	struct spx_buf want = SPX_BUF_INIT;
	unsigned char mac[20];
	unsigned int len = 0;
	int rc = 0;

	if (!g->gw->self->gw.s3_sigv2)
		return spx_api_error(SPX_USAGE, 400, "InvalidRequest",
				     "The authorization mechanism you have "
				     "provided is not supported. Please use "
				     "AWS4-HMAC-SHA256.");
	if (!sig)
		return bad_post("Bucket POST must contain a field named "
				"'signature'.");
	if (spx_cred_lookup(g->gw->creds, ak, &g->who) < 0)
		return spx_api_error(SPX_USAGE, 403, "InvalidAccessKeyId",
				     "The AWS Access Key Id you provided does "
				     "not exist in our records.");
	if (!HMAC(EVP_sha1(), g->who.secret, (int)strlen(g->who.secret),
		  (const unsigned char *)policy, strlen(policy), mac, &len) ||
	    len != 20)
		return s3_obj_fail(g, SPX_OBJ_INTERNAL);
	spx_base64_encode(mac, 20, &want);
	if (want.len != strlen(sig) || CRYPTO_memcmp(want.p, sig, want.len))
		rc = spx_api_error(SPX_USAGE, 403, "SignatureDoesNotMatch",
				   "The request signature we calculated does "
				   "not match the signature you provided. "
				   "Check your key and signing method.");
	spx_buf_release(&want);
	return rc;
}

/* ---- the policy ----------------------------------------------------- */

/* The value a condition names ("$key", "bucket"): the URL's bucket, or
 * the form's field; "" when the form has none. */
static const char *cond_value(struct gw_req *g, const struct s3_post *p,
			      const char *name)
{
	const char *v;

	if (name[0] == '$')
		name++;
	if (!strcasecmp(name, "bucket"))
		return g->s3->bucket;
	v = field(p, name);
	return v ? v : "";
}

/* Is the form field name one a condition covers? */
static bool covered(const json_t *conds, const char *name)
{
	const json_t *c;
	size_t i;

	json_array_foreach(conds, i, c) {
		const char *k;
		const json_t *v;

		if (json_is_object(c)) {
			json_object_foreach((json_t *)c, k, v)
				if (!strcasecmp(k, name))
					return true;
		} else if (json_is_array(c) && json_array_size(c) == 3 &&
			   json_is_string(json_array_get(c, 1))) {
			k = json_string_value(json_array_get(c, 1));
			if (k[0] == '$' && !strcasecmp(k + 1, name))
				return true;
		}
	}
	return false;
}

/* Fields a policy need not name. */
static bool exempt(const char *name)
{
	return !strcasecmp(name, "policy") ||
	       !strcasecmp(name, "x-amz-signature") ||
	       !strcasecmp(name, "signature") ||
	       !strcasecmp(name, "AWSAccessKeyId") ||
	       !strcasecmp(name, "file") ||
	       !strncasecmp(name, "x-ignore-", 9);
}

static bool json_int(const json_t *v, int64_t *out)
{
	if (json_is_integer(v)) {
		*out = (int64_t)json_integer_value(v);
		return true;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *e = NULL;
		long long n = strtoll(s, &e, 10);

		if (*s && !*e) {
			*out = (int64_t)n;
			return true;
		}
	}
	return false;
}

/* The policy (base64 JSON) against the clock and the fields. */
static int check_policy(struct gw_req *g, struct s3_post *p, const char *b64)
{
	size_t n = strlen(b64), dlen = 0;
	char *doc = spx_malloc(n + 1);
	json_t *root = NULL;
	const json_t *conds, *c;
	json_error_t je;
	double exp;
	size_t i;
	int rc = -1;

	if (n > POST_POLICY_MAX ||
	    spx_base64_decode(b64, n, doc, n, &dlen) < 0) {
		rc = malformed_policy("the policy is not base64");
		goto out;
	}
	root = json_loadb(doc, dlen, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(root) ||
	    !json_is_string(json_object_get(root, "expiration")) ||
	    !json_is_array(conds = json_object_get(root, "conditions"))) {
		rc = malformed_policy("the policy must be a JSON object with "
				      "expiration and conditions");
		goto out;
	}
	if (ec2q_time_parse(json_string_value(json_object_get(root,
							       "expiration")),
			    &exp) < 0) {
		rc = malformed_policy("expiration is not an ISO 8601 time");
		goto out;
	}
	if ((double)gw_now(g->gw) > exp) {
		rc = policy_fail("Invalid according to Policy: Policy "
				 "expired.");
		goto out;
	}
	json_array_foreach(conds, i, c) {
		const char *k, *op, *name, *want, *have;
		const json_t *v;

		if (json_is_object(c)) {
			if (json_object_size(c) != 1) {
				rc = malformed_policy("a condition object has "
						      "one member");
				goto out;
			}
			json_object_foreach((json_t *)c, k, v) {
				if (!json_is_string(v)) {
					rc = malformed_policy(
						"a condition's value is a "
						"string");
					goto out;
				}
				if (strcmp(cond_value(g, p, k),
					   json_string_value(v))) {
					rc = policy_fail(
						"Invalid according to Policy: "
						"Policy Condition failed: "
						"[\"eq\", \"$%.100s\"]",
						k);
					goto out;
				}
			}
			continue;
		}
		if (!json_is_array(c) || json_array_size(c) != 3 ||
		    !json_is_string(json_array_get(c, 0))) {
			rc = malformed_policy("a condition is an object or an "
					      "array of three");
			goto out;
		}
		op = json_string_value(json_array_get(c, 0));
		if (!strcasecmp(op, "content-length-range")) {
			if (!json_int(json_array_get(c, 1), &p->min) ||
			    !json_int(json_array_get(c, 2), &p->max) ||
			    p->min < 0 || p->max < p->min) {
				rc = malformed_policy("content-length-range "
						      "takes two integers");
				goto out;
			}
			continue;
		}
		if (!json_is_string(json_array_get(c, 1)) ||
		    !json_is_string(json_array_get(c, 2))) {
			rc = malformed_policy("a condition compares strings");
			goto out;
		}
		name = json_string_value(json_array_get(c, 1));
		want = json_string_value(json_array_get(c, 2));
		have = cond_value(g, p, name);
		if (!strcasecmp(op, "eq")) {
			if (strcmp(have, want)) {
				rc = policy_fail("Invalid according to Policy: "
						 "Policy Condition failed: "
						 "[\"eq\", \"%.100s\"]",
						 name);
				goto out;
			}
		} else if (!strcasecmp(op, "starts-with")) {
			if (strncmp(have, want, strlen(want))) {
				rc = policy_fail("Invalid according to Policy: "
						 "Policy Condition failed: "
						 "[\"starts-with\", \"%.100s\"]",
						 name);
				goto out;
			}
		} else {
			rc = malformed_policy("unknown condition operator");
			goto out;
		}
	}
	for (i = 0; i < p->fields.n; i++)
		if (!exempt(p->fields.v[i].k) &&
		    !covered(conds, p->fields.v[i].k)) {
			rc = policy_fail("Invalid according to Policy: "
					 "Extra input fields: %.100s",
					 p->fields.v[i].k);
			goto out;
		}
	rc = 0;
out:
	json_decref(root);
	free(doc);
	return rc;
}

/* ---- the file ------------------------------------------------------- */

/* The object's key: the form's, with ${filename} the file's name. */
static int object_key(struct s3_post *p, const char *filename)
{
	const char *k = field(p, "key"), *at;
	struct spx_buf b = SPX_BUF_INIT;

	if (!k)
		return bad_post("Bucket POST must contain a field named "
				"'key'.");
	at = strstr(k, "${filename}");
	if (at) {
		spx_buf_add(&b, k, (size_t)(at - k));
		spx_buf_adds(&b, filename);
		spx_buf_adds(&b, at + 11);
	} else {
		spx_buf_adds(&b, k);
	}
	p->key = spx_buf_detach(&b, NULL);
	if (!*p->key)
		return bad_post("The key must not be empty.");
	return 0;
}

/* A form value that becomes a header (stored metadata, Location): no
 * control characters but tab, so no answer can be split. */
static bool header_safe(const char *v)
{
	for (; *v; v++)
		if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f)
			return false;
	return true;
}

/* A header name: RFC 9110's token characters. */
static bool header_name_ok(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!((*k >= '0' && *k <= '9') || (*k >= 'a' && *k <= 'z') ||
		      (*k >= 'A' && *k <= 'Z') ||
		      strchr("!#$%&'*+-.^_`|~", *k)))
			return false;
	return true;
}

/* The object's metadata from the form, as PutObject takes them from
 * headers. */
static int object_meta(struct s3_post *p, struct spx_obj_meta *m)
{
	/* acl: s3_acl_write_check, before. */
	if (field(p, "tagging") || field(p, "x-amz-server-side-encryption"))
		return s3_not_impl();
	for (size_t i = 0; i < p->fields.n; i++) {
		const char *k = p->fields.v[i].k;

		if ((!strncasecmp(k, "x-amz-meta-", 11) && !header_name_ok(k)) ||
		    !header_safe(p->fields.v[i].v))
			if (!exempt(k) && strcasecmp(k, "key"))
				return bad_post("The form field %.100s cannot "
						"be stored as a header.",
						k);
	}
	s3_meta_from_list(&p->fields, m);
	return 0;
}

static int on_file_begin(void *arg, const char *filename, const char *ctype)
{
	struct gw_req *g = arg;
	struct gw_s3 *s = g->s3;
	struct s3_post *p = s->post;
	struct spx_obj_meta in = SPX_OBJ_META_INIT;
	const char *policy = field(p, "policy");
	int rc;

	(void)ctype;
	/* Who: the form's signature over its policy. */
	if (!policy)
		return spx_api_error(SPX_USAGE, 403, "AccessDenied",
				     "Access Denied");
	if (field(p, "x-amz-algorithm") || field(p, "x-amz-signature"))
		rc = v4_signature(g, p, policy);
	else if (field(p, "AWSAccessKeyId"))
		rc = v2_signature(g, p, policy);
	else
		rc = bad_post("Bucket POST must contain a field named "
			      "'x-amz-credential'.");
	if (rc < 0 || check_policy(g, p, policy) < 0 ||
	    object_key(p, filename) < 0)
		return -1;
	g->authed = true;
	snprintf(p->req->note.principal, sizeof(p->req->note.principal), "%s",
		 g->who.access_key);
	/* Where: the caller's own bucket. */
	if (s3_find_bucket(g, s->bucket, &s->b) < 0)
		return -1;
	if (spx_kv_geti(&p->req->headers, "Origin"))
		s3_cors_actual(g, p->req);
	if ((rc = spx_obj_key_check(p->key)) < 0)
		return s3_obj_fail(g, rc);
	if (s3_authorize(g, p->req, &s->b, "s3:PutObject", p->key) < 0)
		return -1;
	{
		struct spx_kvlist h = SPX_KVLIST_INIT;

		if (field(p, "acl"))
			spx_kv_add(&h, "x-amz-acl", field(p, "acl"));
		rc = s3_acl_write_check(g, &h, &s->b);
		spx_kv_free(&h);
		if (rc < 0)
			return -1;
	}
	if ((rc = spx_obj_key_check(p->key)) < 0)
		return s3_obj_fail(g, rc);
	{
		const char *sc = field(p, "x-amz-storage-class");

		if (sc && !s3_storage_class_valid(sc))
			return s3_fail(g, 400, "InvalidStorageClass",
				       "The storage class you specified is "
				       "not valid");
	}
	/* The bucket's default retention applies as to any new version. */
	if (object_meta(p, &in) < 0 ||
	    s3_lock_for_post(g, p->req, &p->fields, p->key, &in) < 0) {
		spx_obj_meta_release(&in);
		return -1;
	}
	s3_acl_meta(g, &in);
	s->versioned = s->b.versioning != SPX_OBJ_UNVERSIONED;
	rc = spx_obj_writer_begin(g->gw->obj, &s->b, p->key, &in, &s->w);
	spx_obj_meta_release(&in);
	return rc < 0 ? s3_obj_fail(g, rc) : 0;
}

static int too_big(void)
{
	return spx_api_error(SPX_USAGE, 400, "EntityTooLarge",
			     "Your proposed upload exceeds the maximum "
			     "allowed size");
}

static int on_file_data(void *arg, const void *d, size_t n)
{
	struct gw_req *g = arg;
	struct s3_post *p = g->s3->post;
	int rc;

	p->size += n;
	if (p->max >= 0 && p->size > (uint64_t)p->max)
		return too_big();
	rc = spx_obj_writer_write(g->s3->w, d, n);
	return rc < 0 ? s3_obj_fail(g, rc) : 0;
}

static int on_file_end(void *arg)
{
	struct gw_req *g = arg;

	g->s3->post->file_done = true;
	return 0;
}

static const struct spx_form_cb form_cb = {
	on_field,
	on_file_begin,
	on_file_data,
	on_file_end,
};

/* ---- the operation -------------------------------------------------- */

static int form_error(enum spx_form_err e)
{
	if (e == SPX_FORM_ECALLBACK)
		return -1; /* the callback recorded why */
	if (e == SPX_FORM_ENOFILE)
		return bad_post("POST requires exactly one file upload per "
				"request.");
	if (e == SPX_FORM_ETOOBIG)
		return bad_post("Your POST form fields are too large: %s",
				spx_form_strerror(e));
	return spx_api_error(SPX_USAGE, 400, "MalformedPOSTRequest",
			     "The body of your POST request is not "
			     "well-formed multipart/form-data.");
}

int s3_post_begin(struct gw_req *g, struct spx_http_req *req,
		  struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct s3_post *p = spx_calloc(1, sizeof(*p));

	(void)resp;
	s->post = p;
	p->req = req;
	p->max = -1;
	if (s->key)
		return s3_fail(g, 405, "MethodNotAllowed",
			       "The specified method is not allowed against "
			       "this resource.");
	if (!s->bucket)
		return s3_fail(g, 400, "InvalidRequest",
			       "A POST object request names a bucket.");
	if (spx_form_init(&p->form, spx_kv_geti(&req->headers,
						 "Content-Type"),
			  &form_cb, g) < 0)
		return form_error(SPX_FORM_EMALFORMED);
	return 0;
}

int s3_post_body(struct gw_req *g, struct spx_http_req *req,
		 const char *data, size_t len)
{
	enum spx_form_err e = spx_form_feed(&g->s3->post->form, data, len);

	(void)req;
	return e ? form_error(e) : 0;
}

/* http(s)://host/bucket/key, for Location. */
static void location(struct gw_req *g, struct spx_http_req *req,
		     struct spx_buf *out)
{
	const char *host = spx_kv_geti(&req->headers, "Host");

	spx_buf_addf(out, "%s://%s/", req->tls ? "https" : "http",
		     host ? host : "localhost");
	spx_uri_encode(g->s3->bucket, strlen(g->s3->bucket), 0, out);
	spx_buf_addc(out, '/');
	spx_uri_encode(g->s3->post->key, strlen(g->s3->post->key),
		       SPX_URI_SLASH, out);
}

int s3_post_end(struct gw_req *g, struct spx_http_req *req,
		struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct s3_post *p = s->post;
	struct spx_obj_meta out = SPX_OBJ_META_INIT;
	struct spx_buf loc = SPX_BUF_INIT, url = SPX_BUF_INIT;
	const char *st, *redirect;
	char quoted[SPX_OBJ_ETAG_SIZE + 2];
	enum spx_form_err e = spx_form_finish(&p->form);
	int rc;

	if (e)
		return form_error(e);
	if (!p->file_done || !s->w)
		return form_error(SPX_FORM_ENOFILE);
	if (p->max >= 0 && p->size < (uint64_t)p->min)
		return spx_api_error(SPX_USAGE, 400, "EntityTooSmall",
				     "Your proposed upload is smaller than the "
				     "minimum allowed size");
	rc = spx_obj_writer_commit(s->w, NULL, &out);
	s->w = NULL;
	if (rc < 0) {
		spx_obj_meta_release(&out);
		return s3_obj_fail(g, rc);
	}
	snprintf(quoted, sizeof(quoted), "\"%s\"", out.etag);
	location(g, req, &loc);
	st = field(p, "success_action_status");
	redirect = field(p, "success_action_redirect");
	if (!redirect)
		redirect = field(p, "redirect");
	spx_kv_add(&resp->headers, "x-amz-request-id", g->reqid);
	spx_kv_add(&resp->headers, "x-amz-id-2", g->hostid);
	spx_kv_add(&resp->headers, "ETag", quoted);
	s3_version_header(resp, s->versioned || out.vid[0], out.vid);
	if (redirect && header_safe(redirect) &&
	    (!strncmp(redirect, "http://", 7) ||
	     !strncmp(redirect, "https://", 8))) {
		spx_buf_adds(&url, redirect);
		spx_buf_addc(&url, strchr(redirect, '?') ? '&' : '?');
		spx_buf_adds(&url, "bucket=");
		spx_uri_encode(s->bucket, strlen(s->bucket), 0, &url);
		spx_buf_adds(&url, "&key=");
		spx_uri_encode(p->key, strlen(p->key), 0, &url);
		spx_buf_adds(&url, "&etag=");
		spx_uri_encode(quoted, strlen(quoted), 0, &url);
		spx_kv_add(&resp->headers, "Location", url.p);
		resp->status = 303;
		resp->ready = true;
	} else if (st && !strcmp(st, "201")) {
		struct spx_xml x;

		gw_xml_begin(g, resp, &x);
		resp->status = 201;
		spx_kv_add(&resp->headers, "Location", loc.p);
		spx_xml_open(&x, "PostResponse");
		spx_xml_elem(&x, "Location", loc.p);
		spx_xml_elem(&x, "Bucket", s->bucket);
		spx_xml_elem(&x, "Key", p->key);
		spx_xml_elem(&x, "ETag", quoted);
		gw_xml_finish(g, req, resp, &x);
	} else {
		resp->status = st && !strcmp(st, "200") ? 200 : 204;
		spx_kv_add(&resp->headers, "Location", loc.p);
		resp->ready = true;
	}
	spx_buf_release(&loc);
	spx_buf_release(&url);
	spx_obj_meta_release(&out);
	return 0;
}
