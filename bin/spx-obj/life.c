/* spx-obj lifecycle: one pass of the buckets' lifecycle rules
 * (lib/gw/s3life.h), what the node agent runs every
 * obj.lifecycle_interval seconds. */
#include "spx.h"

#include "gw/s3life.h"
#include "objcli.h"
#include "proc.h"

/* One bucket; *more is set when it stopped at the budget. */
static int one(const struct spx_args *a, struct objcli *c,
	       struct spx_obj_bucket *b, int64_t now, size_t budget,
	       bool *more)
{
	struct spx_s3_life_stats st = { 0 };
	int rc = spx_s3_life_pass(c->s, b, now, c->life_day, budget, &st);

	if (rc < 0) {
		spx_warn("lifecycle: %s: %s", b->name, spx_errmsg());
		return spx_obj_status(rc);
	}
	if (rc == 1)
		*more = true;
	if (st.expired || st.noncurrent || st.markers || st.aborted ||
	    st.kept || rc == 1)
		fprintf(spx_flag(a, "stderr") ? stderr : stdout,
			"%s: %llu versions looked at, %llu expired, %llu "
		       "noncurrent removed, %llu delete markers removed, %llu "
		       "uploads aborted, %llu kept by object lock%s\n",
		       b->name, (unsigned long long)st.versions,
		       (unsigned long long)st.expired,
		       (unsigned long long)st.noncurrent,
		       (unsigned long long)st.markers,
		       (unsigned long long)st.aborted,
		       (unsigned long long)st.kept,
		       rc == 1 ? "; more next run" : "");
	return 0;
}

/* Did b's last pass stop at its budget (it kept where)? *yes; 0, or the
 * exit status of a failure to tell (reported). */
static int stopped(struct objcli *c, const struct spx_obj_bucket *b,
		   bool *yes)
{
	struct spx_buf d = SPX_BUF_INIT;
	int rc = spx_obj_bucket_doc(c->s, b, SPX_S3_LIFE_POS_DOC, &d);

	*yes = rc == 0 && d.len > 0;
	spx_buf_release(&d);
	if (rc < 0) {
		spx_warn("lifecycle: %s: %s", b->name, spx_errmsg());
		return spx_obj_status(rc);
	}
	return 0;
}

int cmd_lifecycle(const struct spx_args *a)
{
	struct objcli c;
	struct spx_obj_bucket *v = NULL;
	long long budget, now_s;
	size_t n = 0;
	bool more = false;
	int64_t now;
	int rc;

	if (spx_arg_int(a, "budget", 0, 1000000000, 100000, &budget) < 0 ||
	    spx_arg_int(a, "now", 0, 253402300799LL, 0, &now_s) < 0) {
		spx_warn("lifecycle: %s", spx_errmsg());
		return SPX_USAGE;
	}
	now = spx_arg(a, "now") ? (int64_t)now_s * 1000 : spx_wall_ms();
	if ((rc = objcli_open(a, &c)))
		return rc;
	if (a->argc) {
		struct spx_obj_bucket b;

		if (!(rc = objcli_bucket(a, &c, a->argv[0], &b)))
			rc = one(a, &c, &b, now, (size_t)budget, &more);
	} else if ((rc = spx_obj_bucket_list(c.s, &v, &n)) < 0) {
		rc = objcli_fail(a, rc);
	} else {
		rc = 0;
		/* A bucket that fails is reported; the others go on. */
		for (size_t i = 0; i < n; i++) {
			bool go = true;
			int r = spx_flag(a, "unfinished")
					? stopped(&c, &v[i], &go)
					: 0;

			if (!r && go)
				r = one(a, &c, &v[i], now, (size_t)budget,
					&more);
			if (r && !rc)
				rc = r;
		}
	}
	free(v);
	objcli_close(&c);
	if (!rc && more)
		rc = SPX_NO;
	fflush(NULL);
	return rc;
}
