/* spx-vol create | rm | ls | info | resize */
#include "spx.h"

#include <jansson.h>

#include "http/httpdate.h"
#include "print.h"
#include "size.h"
#include "vol/track.h"
#include "volcli.h"

/* SIZE and ALLOCATED read as "30G" in the table and as bytes in JSON. */
static void size_cell(struct spx_table *t, uint64_t v)
{
	char s[SPX_SIZE_STR];

	spx_size_str(v, s, sizeof(s));
	spx_table_json(t, s, json_integer((json_int_t)v));
}

/* "" reads "-" for people and null in JSON. */
static void opt_cell(struct spx_table *t, const char *s)
{
	spx_table_json(t, *s ? s : "-", *s ? json_string(s) : json_null());
}

/* The snapshot columns of a volume: what it counts from, what it is
 * restoring from, the chunks still to fetch and the fetch errors the
 * guest waited on. */
static void snap_cells(struct volcli *c, struct spx_table *t,
		       const struct spx_vol_info *v)
{
	char *dir = spx_vol_dir(c->vs, v->id);
	struct spx_vol_snapstate st;
	struct spx_vol_track_status ts = { 0 };
	struct spx_vol_track *tr;
	char when[40] = "";

	if (spx_vol_snapstate_read(dir, &st) < 0) {
		spx_warn("%s", spx_errmsg());
		memset(&st, 0, sizeof(st));
	}
	if (spx_vol_track_open(dir, v->size, 0, &tr) == 0) {
		spx_vol_track_status(tr, &ts);
		spx_vol_track_close(tr);
	}
	spx_error_clear();
	free(dir);
	opt_cell(t, st.base);
	opt_cell(t, st.source);
	spx_table_int(t, (long long)ts.unfilled);
	spx_table_int(t, (long long)ts.fetch_errors);
	if (ts.last_error_ms)
		spx_iso8601_ms((time_t)(ts.last_error_ms / 1000), when,
			       sizeof(when));
	opt_cell(t, when);
	opt_cell(t, ts.last_error);
	spx_table_int(t, (long long)ts.lost_fetches);
	opt_cell(t, ts.lost);
}

int volcli_print_vols(struct volcli *c, const struct spx_vol_info *v,
		      size_t n, bool json, bool detail)
{
	struct spx_table *t =
		detail ? spx_table_new("ID", "SIZE", "ALLOCATED", "CREATED",
				       "SNAPSHOT", "RESTORING", "TO FETCH",
				       "FETCH ERRORS", "LAST ERROR AT",
				       "LAST ERROR", "LOST FETCHES", "LOST", NULL)
		       : spx_table_new("ID", "SIZE", "ALLOCATED", "CREATED",
				       NULL);
	char ts[40];
	int rc;

	for (size_t i = 0; i < n; i++) {
		spx_table_row(t);
		spx_table_str(t, v[i].id);
		size_cell(t, v[i].size);
		size_cell(t, v[i].allocated);
		spx_iso8601_ms((time_t)(v[i].created_ms / 1000), ts, sizeof(ts));
		spx_table_str(t, ts);
		if (detail)
			snap_cells(c, t, &v[i]);
	}
	rc = spx_table_print(t, stdout, json) < 0 ? SPX_FAIL : 0;
	spx_table_free(t);
	return rc;
}

/* SIZE from the command line: a suffixed size in whole sectors. */
static int parse_size(const struct spx_args *a, const char *s, uint64_t *out)
{
	if (spx_parse_size(s, out) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		return SPX_USAGE;
	}
	return 0;
}

int cmd_create(const struct spx_args *a)
{
	const char *s = spx_arg(a, "size");
	struct spx_vol_info v;
	struct volcli c;
	uint64_t size;
	int rc;

	if (!s) {
		spx_warn("create: --size is required (e.g. --size 30G)");
		return SPX_USAGE;
	}
	if ((rc = parse_size(a, s, &size)) || (rc = volcli_open(a, &c)))
		return rc;
	if (spx_vol_create(c.vs, size, spx_arg(a, "id"), &v) < 0)
		rc = volcli_fail(a);
	else if (spx_flag(a, "json"))
		rc = volcli_print_vols(&c, &v, 1, true, false);
	else
		printf("%s\n", v.id);
	volcli_close(&c);
	return rc;
}

int cmd_rm(const struct spx_args *a)
{
	struct volcli c;
	int rc = volcli_open(a, &c);

	if (rc)
		return rc;
	if (spx_vol_remove(c.vs, a->argv[0]) < 0)
		rc = volcli_fail(a);
	volcli_close(&c);
	return rc;
}

int cmd_ls(const struct spx_args *a)
{
	struct spx_vol_info *v;
	struct volcli c;
	size_t n;
	int rc = volcli_open(a, &c);

	if (rc)
		return rc;
	if (spx_vol_list(c.vs, &v, &n) < 0) {
		rc = volcli_fail(a);
	} else {
		rc = volcli_print_vols(&c, v, n, spx_flag(a, "json"), false);
		free(v);
	}
	volcli_close(&c);
	return rc;
}

int cmd_info(const struct spx_args *a)
{
	struct spx_vol_info v;
	struct volcli c;
	int rc = volcli_open(a, &c);

	if (rc)
		return rc;
	if (spx_vol_info(c.vs, a->argv[0], &v) < 0)
		rc = volcli_fail(a);
	else
		rc = volcli_print_vols(&c, &v, 1, spx_flag(a, "json"), true);
	volcli_close(&c);
	return rc;
}

int cmd_resize(const struct spx_args *a)
{
	struct volcli c;
	uint64_t size;
	int rc;

	if ((rc = parse_size(a, a->argv[1], &size)) || (rc = volcli_open(a, &c)))
		return rc;
	if (spx_vol_resize(c.vs, a->argv[0], size) < 0) {
		rc = volcli_fail(a);
	} else if (spx_flag(a, "json")) {
		struct spx_vol_info v;

		if (spx_vol_info(c.vs, a->argv[0], &v) < 0)
			rc = volcli_fail(a);
		else
			rc = volcli_print_vols(&c, &v, 1, true, false);
	}
	volcli_close(&c);
	return rc;
}
