/* s3_lock.c: object lock — write-once versions for backups.
 *
 * A bucket has object lock when it was made with
 * x-amz-bucket-object-lock-enabled: true, or given a configuration once
 * its versioning is Enabled; its bucket document "objectlock" holds the
 * configuration as JSON ({} or {"Mode": M, "Days"|"Years": N}), and its
 * versioning can no longer be suspended. A version's retention and legal
 * hold are kept in its metadata as the headers S3 answers GET and HEAD
 * with (x-amz-object-lock-mode, -retain-until-date, -legal-hold), so they
 * are written, replicated, healed and read back with the version itself.
 *
 * What the lock refuses, decided by the engine under the key's lock
 * (spx_obj_delete_version_if, spx_obj_update): removing a version under
 * legal hold or before its retain-until date (GOVERNANCE: unless the
 * caller asks to bypass it and may, s3:BypassGovernanceRetention), and
 * shortening or removing a COMPLIANCE retention, by anyone. Writes are
 * never in place: with versioning Enabled each is a new version. */
#include "spx.h"

#include <jansson.h>
#include <math.h>
#include <strings.h>
#include <time.h>

#include "gw/ec2q.h"
#include "gw/s3_int.h"
#include "gw/s3conf.h"

#define MODE_H "x-amz-object-lock-mode"
#define UNTIL_H "x-amz-object-lock-retain-until-date"
#define HOLD_H "x-amz-object-lock-legal-hold"

/* A retain-until date: ISO 8601 (or epoch seconds), within years 1970
 * to 9999, so that it prints back as one. */
static bool lock_date(const char *s, double *t)
{
	return ec2q_time_parse(s, t) == 0 && *t >= 0 && *t < 253402300800.0;
}

static int no_lock(struct gw_req *g)
{
	return s3_fail(g, 400, "InvalidRequest",
		       "Bucket is missing Object Lock Configuration");
}

int s3_lock_conf(struct gw_req *g, const struct spx_obj_bucket *b,
		 json_t **conf)
{
	struct spx_buf d = SPX_BUF_INIT;
	int rc;

	*conf = NULL;
	/* Object lock needs versioning Enabled: other buckets have none,
	 * and nothing need be read. */
	if (b->versioning != SPX_OBJ_VERSIONING_ENABLED)
		return 0;
	rc = spx_obj_bucket_doc(g->gw->obj, b, "objectlock", &d);
	if (rc < 0) {
		spx_buf_release(&d);
		return s3_obj_fail(g, rc);
	}
	if (d.len && !(*conf = json_loadb(d.p, d.len, 0, NULL))) {
		spx_buf_release(&d);
		return s3_obj_fail(g, SPX_OBJ_INTERNAL);
	}
	spx_buf_release(&d);
	return 0;
}

/* t (seconds since the epoch) as S3 writes a retain-until date. */
static void iso_time(double t, char out[64])
{
	time_t s = (time_t)floor(t);
	int ms = (int)((t - (double)s) * 1000.0);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ms < 0 ? 0 : ms > 999 ? 999 : ms);
}

/* m's sys without the lock headers. */
static void drop_lock(struct spx_obj_meta *m)
{
	struct spx_kvlist keep = SPX_KVLIST_INIT;

	for (size_t i = 0; i < m->sys.n; i++)
		if (strncasecmp(m->sys.v[i].k, "x-amz-object-lock-", 18))
			spx_kv_add(&keep, m->sys.v[i].k, m->sys.v[i].v);
	spx_kv_free(&m->sys);
	m->sys = keep;
}

static void set_retention(struct spx_obj_meta *m, const char *mode,
			  double until)
{
	char t[64];
	const char *hold = spx_kv_get(&m->sys, HOLD_H);
	char *keep = hold ? spx_strdup(hold) : NULL;

	drop_lock(m);
	if (mode) {
		iso_time(until, t);
		spx_kv_add(&m->sys, MODE_H, mode);
		spx_kv_add(&m->sys, UNTIL_H, t);
	}
	if (keep)
		spx_kv_add(&m->sys, HOLD_H, keep);
	free(keep);
}

/* s3_lock_for_write, with the lock's settings from h and key the
 * object's name. */
static int lock_for_write(struct gw_req *g, struct spx_http_req *req,
			  const struct spx_kvlist *h, const char *key,
			  struct spx_obj_meta *m, bool need_digest)
{
	const char *mode = spx_kv_geti(h, MODE_H);
	const char *until = spx_kv_geti(h, UNTIL_H);
	const char *hold = spx_kv_geti(h, HOLD_H);
	double t = 0, now = (double)gw_now(g->gw);
	json_t *conf;
	int rc = 0;

	/* A copy's source settings are not the copy's. */
	drop_lock(m);
	if (s3_lock_conf(g, &g->s3->b, &conf) < 0)
		return -1;
	if (!conf) {
		if (mode || until || hold)
			return no_lock(g);
		return 0;
	}
	if (!mode != !until) {
		rc = s3_fail(g, 400, "InvalidArgument",
			     "x-amz-object-lock-retain-until-date and "
			     "x-amz-object-lock-mode must both be supplied");
		goto out;
	}
	if (mode && strcmp(mode, "GOVERNANCE") && strcmp(mode, "COMPLIANCE")) {
		rc = s3_fail(g, 400, "InvalidArgument",
			     "Unknown wormMode directive.");
		goto out;
	}
	if (until && !lock_date(until, &t)) {
		rc = s3_fail(g, 400, "InvalidArgument",
			     "The retain until date must be provided in ISO "
			     "8601 format");
		goto out;
	}
	if (until && t <= now) {
		rc = s3_fail(g, 400, "InvalidArgument",
			     "The retain until date must be in the future!");
		goto out;
	}
	if (hold && strcmp(hold, "ON") && strcmp(hold, "OFF")) {
		rc = s3_fail(g, 400, "InvalidArgument",
			     "Legal Hold must be either of 'ON' or 'OFF'");
		goto out;
	}
	/* Setting a lock is an action of its own, which PutObject does
	 * not grant: else a writer could make what it writes undeletable
	 * by the bucket's owner. */
	if ((mode && s3_authorize(g, req, &g->s3->b, "s3:PutObjectRetention",
				  key) < 0) ||
	    (hold && s3_authorize(g, req, &g->s3->b, "s3:PutObjectLegalHold",
				  key) < 0)) {
		rc = -1;
		goto out;
	}
	/* As S3: an upload that sets a lock carries its digest. */
	if (need_digest && (mode || hold) &&
	    !spx_kv_geti(&req->headers, "Content-MD5") &&
	    !spx_kv_geti(&req->headers, "x-amz-sdk-checksum-algorithm") &&
	    !spx_kv_geti(&req->headers, "x-amz-trailer")) {
		bool ck = false;

		for (size_t i = 0; i < req->headers.n; i++)
			ck |= !strncasecmp(req->headers.v[i].k,
					   "x-amz-checksum-", 15);
		if (!ck) {
			rc = s3_fail(g, 400, "InvalidRequest",
				     "Content-MD5 OR x-amz-checksum- HTTP "
				     "header is required for Put Object "
				     "requests with Object Lock parameters");
			goto out;
		}
	}
	/* Else the bucket's default retention, from now. */
	if (!mode && json_object_get(conf, "Mode")) {
		json_int_t d = json_integer_value(json_object_get(conf, "Days"));
		json_int_t y = json_integer_value(json_object_get(conf, "Years"));

		mode = json_string_value(json_object_get(conf, "Mode"));
		t = now + (double)(d ? d : y * 365) * 86400.0;
	}
	if (mode)
		set_retention(m, mode, t);
	if (hold)
		spx_kv_add(&m->sys, HOLD_H, hold);
out:
	json_decref(conf);
	return rc;
}

int s3_lock_for_write(struct gw_req *g, struct spx_http_req *req,
		      struct spx_obj_meta *m, bool need_digest)
{
	return lock_for_write(g, req, &req->headers, g->s3->key, m,
			      need_digest);
}

int s3_lock_for_post(struct gw_req *g, struct spx_http_req *req,
		     const struct spx_kvlist *fields, const char *key,
		     struct spx_obj_meta *m)
{
	static const char *const names[] = { MODE_H, UNTIL_H, HOLD_H };
	struct spx_kvlist h = SPX_KVLIST_INIT;
	int rc;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = spx_kv_geti(fields, names[i]);

		if (v)
			spx_kv_add(&h, names[i], v);
	}
	rc = lock_for_write(g, req, &h, key, m, false);
	spx_kv_free(&h);
	return rc;
}

/* ---- the refusals the engine makes under the key's lock ------------- */

/* What a version's lock allows: 0, or SPX_OBJ_LOCKED. shorter: the
 * request would remove or shorten its retention. */
static int locked(const struct spx_obj_meta *v, const struct s3_lock_ctx *c,
		  bool shorter)
{
	const char *hold = spx_kv_get(&v->sys, HOLD_H);
	const char *mode = spx_kv_get(&v->sys, MODE_H);
	const char *until = spx_kv_get(&v->sys, UNTIL_H);
	double t = 0;

	if (c->removing && hold && !strcmp(hold, "ON"))
		return SPX_OBJ_LOCKED;
	if (!mode || !until)
		return 0;
	/* A date that does not read back (never written so) holds: the
	 * lock fails closed. */
	if (lock_date(until, &t) && t <= c->now)
		return 0;
	if (!shorter)
		return 0;
	if (!strcmp(mode, "COMPLIANCE") || !c->bypass)
		return SPX_OBJ_LOCKED;
	return 0;
}

int s3_lock_cond(void *ctx, const struct spx_obj_meta *v)
{
	struct s3_lock_ctx *c = ctx;

	if (v->delete_marker)
		return 0;
	return locked(v, c, true);
}

void s3_lock_ctx_init(struct gw_req *g, struct spx_http_req *req,
		      const char *key, struct s3_lock_ctx *c)
{
	const char *h = spx_kv_geti(&req->headers,
				    "x-amz-bypass-governance-retention");

	memset(c, 0, sizeof(*c));
	c->now = (double)gw_now(g->gw);
	c->removing = true;
	/* Asked for, and allowed: the owner, or a policy granting it. */
	if (h && !strcasecmp(h, "true")) {
		c->bypass = s3_authorize(g, req, &g->s3->b,
					 "s3:BypassGovernanceRetention",
					 key) == 0;
		spx_error_clear();
	}
}

/* ---- object lock configuration -------------------------------------- */

int s3_put_lock_conf(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_apierr e;
	char *json;
	int rc;

	if (spx_s3_lock_conf_xml(s->body.p, s->body.len, &json, &e) < 0)
		return s3_conf_fail(&e);
	if (s->b.versioning != SPX_OBJ_VERSIONING_ENABLED) {
		free(json);
		return s3_fail(g, 409, "InvalidBucketState",
			       "Versioning must be 'Enabled' on the bucket to "
			       "apply a Object Lock configuration");
	}
	rc = spx_obj_bucket_set_doc(g->gw->obj, &s->b, "objectlock", json,
				    strlen(json));
	free(json);
	return s3_empty_or_fail(g, resp, rc, 200);
}

int s3_get_lock_conf(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct spx_xml x;
	json_t *conf;

	if (s3_lock_conf(g, &g->s3->b, &conf) < 0)
		return -1;
	if (!conf)
		return s3_fail(g, 404, "ObjectLockConfigurationNotFoundError",
			       "Object Lock configuration does not exist for "
			       "this bucket");
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "ObjectLockConfiguration", GW_S3_NS);
	spx_xml_elem(&x, "ObjectLockEnabled", "Enabled");
	if (json_object_get(conf, "Mode")) {
		const char *unit = json_object_get(conf, "Days") ? "Days"
								 : "Years";

		spx_xml_open(&x, "Rule");
		spx_xml_open(&x, "DefaultRetention");
		spx_xml_elem(&x, "Mode",
			     json_string_value(json_object_get(conf, "Mode")));
		spx_xml_elem_i64(&x, unit,
				 (int64_t)json_integer_value(
					 json_object_get(conf, unit)));
		spx_xml_close(&x);
		spx_xml_close(&x);
	}
	spx_xml_close(&x);
	gw_xml_finish(g, req, resp, &x);
	json_decref(conf);
	return 0;
}

int s3_lock_on_create(struct gw_req *g, struct spx_http_req *req)
{
	const char *h = spx_kv_geti(&req->headers,
				    "x-amz-bucket-object-lock-enabled");
	struct gw_s3 *s = g->s3;
	struct spx_buf d = SPX_BUF_INIT;
	int rc;

	if (!h || strcasecmp(h, "true"))
		return 0;
	if ((rc = spx_obj_bucket_open(g->gw->obj, s->bucket, &s->b)) < 0 ||
	    (rc = spx_obj_bucket_set_versioning(g->gw->obj, &s->b,
						SPX_OBJ_VERSIONING_ENABLED)) <
		    0 ||
	    (rc = spx_obj_bucket_doc(g->gw->obj, &s->b, "objectlock", &d)) < 0)
		goto out;
	/* Made again (a retry): the configuration it has stays. */
	if (!d.len)
		rc = spx_obj_bucket_set_doc(g->gw->obj, &s->b, "objectlock",
					    "{}", 2);
out:
	spx_buf_release(&d);
	return rc < 0 ? s3_obj_fail(g, rc) : 0;
}

/* ---- retention and legal hold --------------------------------------- */

/* The version's lock headers, read: -1 (recorded) when the bucket has no
 * object lock or the version is not there. */
/* The bucket has object lock (else -1, InvalidRequest); *want is the
 * versionId asked for. */
static int lock_target(struct gw_req *g, const char **want)
{
	json_t *conf;

	if (s3_lock_conf(g, &g->s3->b, &conf) < 0)
		return -1;
	if (!conf)
		return no_lock(g);
	json_decref(conf);
	return s3_version_param(g, want);
}

static int lock_stat(struct gw_req *g, struct spx_obj_meta *m,
		     const char **want)
{
	if (lock_target(g, want) < 0)
		return -1;
	return s3_stat_named(g, want, m);
}

static int no_lock_conf(struct gw_req *g)
{
	return s3_fail(g, 404, "NoSuchObjectLockConfiguration",
		       "The specified object does not have a ObjectLock "
		       "configuration");
}

int s3_get_retention(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	const char *want, *mode, *until;
	struct spx_xml x;
	int rc = -1;

	if (lock_stat(g, &m, &want) < 0)
		goto out;
	mode = spx_kv_get(&m.sys, MODE_H);
	until = spx_kv_get(&m.sys, UNTIL_H);
	if (!mode || !until) {
		no_lock_conf(g);
		goto out;
	}
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "Retention", GW_S3_NS);
	spx_xml_elem(&x, "Mode", mode);
	spx_xml_elem(&x, "RetainUntilDate", until);
	spx_xml_close(&x);
	gw_xml_finish(g, req, resp, &x);
	rc = 0;
out:
	spx_obj_meta_release(&m);
	return rc;
}

struct retention {
	struct s3_lock_ctx c;
	const char *mode;
	double until;
};

/* Under the key's lock: shortening (an earlier date, or none) or
 * weakening (COMPLIANCE to GOVERNANCE) a retention in force is the
 * bypass's, and never COMPLIANCE's. */
static int change_retention(void *ctx, struct spx_obj_meta *m)
{
	struct retention *r = ctx;
	const char *mode = spx_kv_get(&m->sys, MODE_H);
	const char *until = spx_kv_get(&m->sys, UNTIL_H);
	double t = 0;
	int rc;

	if (mode && until) {
		bool shorter;

		/* Unreadable: as if it never ended. */
		if (!lock_date(until, &t))
			t = INFINITY;
		shorter = !r->mode || r->until < t ||
			  (!strcmp(mode, "COMPLIANCE") &&
			   strcmp(r->mode, "COMPLIANCE"));
		if ((rc = locked(m, &r->c, shorter)) < 0)
			return rc;
	}
	set_retention(m, r->mode, r->until);
	return 0;
}

int s3_put_retention(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct retention r;
	struct spx_apierr e;
	const char *want;
	int rc;

	if (spx_s3_retention_xml(s->body.p, s->body.len, &r.mode, &r.until,
				 &e) < 0)
		return s3_conf_fail(&e);
	if (lock_target(g, &want) < 0)
		return -1;
	s3_lock_ctx_init(g, req, s->key, &r.c);
	r.c.removing = false;
	if (r.mode && r.until <= r.c.now)
		return s3_fail(g, 400, "InvalidArgument",
			       "The retain until date must be in the future!");
	if (r.mode && r.until >= 253402300800.0)
		return s3_fail(g, 400, "InvalidArgument",
			       "The retain until date must be before the "
			       "year 10000");
	rc = spx_obj_update(g->gw->obj, &s->b, s->key, want, change_retention,
			    &r, NULL);
	return s3_empty_or_fail(g, resp, rc, 200);
}

int s3_get_legal_hold(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	const char *want, *hold;
	struct spx_xml x;
	int rc = -1;

	if (lock_stat(g, &m, &want) < 0)
		goto out;
	if (!(hold = spx_kv_get(&m.sys, HOLD_H))) {
		no_lock_conf(g);
		goto out;
	}
	gw_xml_begin(g, resp, &x);
	spx_xml_open_ns(&x, "LegalHold", GW_S3_NS);
	spx_xml_elem(&x, "Status", hold);
	spx_xml_close(&x);
	gw_xml_finish(g, req, resp, &x);
	rc = 0;
out:
	spx_obj_meta_release(&m);
	return rc;
}

static int change_hold(void *ctx, struct spx_obj_meta *m)
{
	const char *on = ctx;
	struct spx_kvlist keep = SPX_KVLIST_INIT;

	for (size_t i = 0; i < m->sys.n; i++)
		if (strcasecmp(m->sys.v[i].k, HOLD_H))
			spx_kv_add(&keep, m->sys.v[i].k, m->sys.v[i].v);
	spx_kv_add(&keep, HOLD_H, on);
	spx_kv_free(&m->sys);
	m->sys = keep;
	return 0;
}

int s3_put_legal_hold(struct gw_req *g, struct spx_http_req *req,
		      struct spx_http_resp *resp)
{
	struct gw_s3 *s = g->s3;
	struct spx_apierr e;
	const char *want;
	bool on;
	int rc;

	if (spx_s3_legal_hold_xml(s->body.p, s->body.len, &on, &e) < 0)
		return s3_conf_fail(&e);
	if (lock_target(g, &want) < 0)
		return -1;
	rc = spx_obj_update(g->gw->obj, &s->b, s->key, want, change_hold,
			    (void *)(on ? "ON" : "OFF"), NULL);
	return s3_empty_or_fail(g, resp, rc, 200);
}
