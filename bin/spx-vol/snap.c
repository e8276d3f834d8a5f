/* spx-vol snapshot | snapshots | snapshot-rm | snapshot-gc | restore:
 * thin calls into lib/vol/snap.c, which does the work. */
#include "spx.h"

#include <jansson.h>

#include "http/httpdate.h"
#include "print.h"
#include "size.h"
#include "vol/snap.h"
#include "volcli.h"

/* Progress on stderr: a line that rewrites itself on a terminal, with
 * --progress a line per percent elsewhere (for the node agent). */
struct prog {
	const char *what;
	bool tty, lines, shown;
	int last;
};

static void progress(void *ctx, uint64_t done, uint64_t total)
{
	struct prog *p = ctx;
	int pct = total ? (int)(done * 100 / total) : 100;

	if (p->tty) {
		fprintf(stderr, "\r%s: %llu/%llu chunks (%d%%)", p->what,
			(unsigned long long)done, (unsigned long long)total, pct);
		p->shown = true;
	} else if (p->lines && pct != p->last) {
		fprintf(stderr, "%s: %d%%\n", p->what, pct);
	}
	p->last = pct;
}

static void prog_init(struct prog *p, const struct spx_args *a,
		      const char *what)
{
	memset(p, 0, sizeof(*p));
	p->what = what;
	p->tty = isatty(STDERR_FILENO);
	p->lines = spx_flag(a, "progress");
	p->last = -1;
}

static void prog_end(struct prog *p)
{
	if (p->shown)
		fputc('\n', stderr);
}

static void size_cell(struct spx_table *t, uint64_t v)
{
	char s[SPX_SIZE_STR];

	spx_size_str(v, s, sizeof(s));
	spx_table_json(t, s, json_integer((json_int_t)v));
}

static void time_cell(struct spx_table *t, int64_t ms)
{
	char ts[40];

	spx_iso8601_ms((time_t)(ms / 1000), ts, sizeof(ts));
	spx_table_str(t, ts);
}

/* "" reads "-" for people and null in JSON. */
static void id_cell(struct spx_table *t, const char *id)
{
	spx_table_json(t, *id ? id : "-", *id ? json_string(id) : json_null());
}

static void int_cell(struct spx_table *t, uint64_t v)
{
	spx_table_int(t, (long long)v);
}

/* The table of n snapshots (t, freed here) as JSON; for people, their
 * ids alone, a line each. The exit status. */
static int print_report(struct spx_table *t, const struct spx_snap_report *r,
			int n, bool json)
{
	int rc = 0;

	if (json)
		rc = spx_table_print(t, stdout, true) < 0 ? SPX_FAIL : 0;
	else
		for (int i = 0; i < n; i++)
			printf("%s\n", r[i].id);
	spx_table_free(t);
	return rc;
}

/* --id's list: one id per volume, comma-separated. */
static int split_ids(const struct spx_args *a, char *buf, const char **ids)
{
	int n = 0;

	for (char *p = buf, *comma; p; p = comma ? comma + 1 : NULL) {
		comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (n == a->argc) {
			n++;
			break;
		}
		ids[n++] = p;
	}
	if (n != a->argc) {
		spx_warn("snapshot: --id names %d snapshot%s for %d volume%s",
			 n, n == 1 ? "" : "s", a->argc, a->argc == 1 ? "" : "s");
		return SPX_USAGE;
	}
	return 0;
}

int cmd_snapshot(const struct spx_args *a)
{
	struct spx_snap_opts o = { .parent = spx_arg(a, "parent"),
				   .full = spx_flag(a, "full") };
	const char *ids[SPX_SNAP_SET_MAX];
	struct spx_snap_report r[SPX_SNAP_SET_MAX];
	char *idbuf = NULL;
	struct volcli c;
	struct prog p;
	int rc;

	if (spx_arg(a, "id")) {
		idbuf = spx_strdup(spx_arg(a, "id"));
		if ((rc = split_ids(a, idbuf, ids))) {
			free(idbuf);
			return rc;
		}
	}
	if (a->argc > 1 && o.parent) {
		free(idbuf);
		spx_warn("snapshot: --parent is for one volume; a set counts "
			 "each from its own last snapshot");
		return SPX_USAGE;
	}
	if ((rc = volcli_snaps(a, &c))) {
		free(idbuf);
		return rc;
	}
	prog_init(&p, a, a->argv[0]);
	o.progress = progress;
	o.ctx = &p;
	if (a->argc == 1) {
		o.id = idbuf ? ids[0] : NULL;
		rc = spx_snap_create(c.ss, a->argv[0], &o, r);
	} else {
		rc = spx_snap_create_set(c.ss, (const char *const *)a->argv,
					 idbuf ? ids : NULL, (size_t)a->argc,
					 &o, r);
	}
	prog_end(&p);
	if (rc < 0) {
		rc = volcli_fail(a);
	} else {
		struct spx_table *t = spx_table_new(
			"ID", "VOLUME", "PARENT", "SIZE", "CREATED", "CHUNKS",
			"INCREMENTAL", "READ", "UPLOADED", "UPLOADED BYTES", NULL);

		for (int i = 0; i < a->argc; i++) {
			spx_table_row(t);
			spx_table_str(t, r[i].id);
			spx_table_str(t, r[i].volume);
			id_cell(t, r[i].parent);
			size_cell(t, r[i].size);
			time_cell(t, r[i].created_ms);
			int_cell(t, r[i].chunks);
			spx_table_json(t, r[i].incremental ? "yes" : "no",
				       json_boolean(r[i].incremental));
			int_cell(t, r[i].read);
			int_cell(t, r[i].uploaded);
			size_cell(t, r[i].uploaded_bytes);
		}
		rc = print_report(t, r, a->argc, spx_flag(a, "json"));
	}
	free(idbuf);
	volcli_close(&c);
	return rc;
}

int cmd_snapshot_copy(const struct spx_args *a)
{
	struct spx_snap_report r;
	struct volcli c;
	int rc;

	if ((rc = volcli_snaps(a, &c)))
		return rc;
	if (spx_snap_copy(c.ss, a->argv[0], spx_arg(a, "id"), &r) < 0) {
		rc = volcli_fail(a);
	} else {
		struct spx_table *t = spx_table_new("ID", "SOURCE", "VOLUME",
						    "SIZE", "CREATED", "CHUNKS",
						    NULL);

		spx_table_row(t);
		spx_table_str(t, r.id);
		spx_table_str(t, r.parent);
		spx_table_str(t, r.volume);
		size_cell(t, r.size);
		time_cell(t, r.created_ms);
		int_cell(t, r.chunks);
		rc = print_report(t, &r, 1, spx_flag(a, "json"));
	}
	volcli_close(&c);
	return rc;
}

static bool wanted(const struct spx_args *a, const struct spx_snap_manifest *m)
{
	const char *vol = spx_arg(a, "volume");

	if (vol && strcmp(vol, m->volume))
		return false;
	if (!a->argc)
		return true;
	for (int i = 0; i < a->argc; i++)
		if (!strcmp(a->argv[i], m->id))
			return true;
	return false;
}

int cmd_snapshots(const struct spx_args *a)
{
	struct spx_snap_manifest *v = NULL;
	struct spx_table *t;
	struct volcli c;
	size_t n;
	int rc;

	for (int i = 0; i < a->argc; i++)
		if (!spx_snap_id_valid(a->argv[i])) {
			spx_warn("snapshots: '%s' is not a snapshot id (snap- "
				 "and 17 hex digits)",
				 a->argv[i]);
			return SPX_USAGE;
		}
	if (spx_arg(a, "volume") && !spx_vol_id_valid(spx_arg(a, "volume"))) {
		spx_warn("snapshots: '%s' is not a volume id (vol- and 17 hex "
			 "digits)",
			 spx_arg(a, "volume"));
		return SPX_USAGE;
	}
	if ((rc = volcli_snaps(a, &c)))
		return rc;
	if (spx_snap_list(c.ss, &v, &n) < 0) {
		rc = volcli_fail(a);
		volcli_close(&c);
		return rc;
	}
	t = spx_table_new("ID", "VOLUME", "SIZE", "CHUNKS", "PARENT", "CREATED",
			  NULL);
	for (size_t i = 0; i < n; i++) {
		if (!wanted(a, &v[i]))
			continue;
		spx_table_row(t);
		spx_table_str(t, v[i].id);
		spx_table_str(t, v[i].volume);
		size_cell(t, v[i].size);
		int_cell(t, v[i].count);
		id_cell(t, v[i].parent);
		time_cell(t, v[i].created_ms);
	}
	rc = spx_table_print(t, stdout, spx_flag(a, "json")) < 0 ? SPX_FAIL : 0;
	spx_table_free(t);
	/* Asked for by id: each must be there. */
	for (int i = 0; i < a->argc && !rc; i++) {
		size_t j;

		for (j = 0; j < n && strcmp(v[j].id, a->argv[i]); j++)
			;
		if (j == n) {
			spx_warn("snapshots: no snapshot '%s'", a->argv[i]);
			rc = SPX_NO;
		}
	}
	free(v);
	volcli_close(&c);
	return rc;
}

int cmd_snapshot_rm(const struct spx_args *a)
{
	struct spx_snap_gc_report g;
	struct volcli c;
	int rc;

	if ((rc = volcli_snaps(a, &c)))
		return rc;
	if (spx_snap_remove(c.ss, a->argv[0]) < 0) {
		rc = volcli_fail(a);
	} else if (spx_snap_gc(c.ss, false, &g) < 0) {
		/* Removed; its chunks wait for the next collection. */
		spx_log(SPX_LOG_INFO, "snapshot-rm: %s", spx_errmsg());
		spx_error_clear();
	}
	volcli_close(&c);
	return rc;
}

int cmd_snapshot_gc(const struct spx_args *a)
{
	struct spx_snap_gc_report g;
	struct volcli c;
	int rc;

	if ((rc = volcli_snaps(a, &c)))
		return rc;
	if (spx_snap_gc(c.ss, spx_flag(a, "wait"), &g) < 0) {
		rc = volcli_fail(a);
	} else {
		struct spx_table *t = spx_table_new("MANIFESTS", "REFERENCED",
						    "CHUNKS", "REMOVED",
						    "REMOVED BYTES", NULL);

		spx_table_row(t);
		int_cell(t, g.manifests);
		int_cell(t, g.referenced);
		int_cell(t, g.chunks);
		int_cell(t, g.removed);
		size_cell(t, g.removed_bytes);
		rc = spx_table_print(t, stdout, spx_flag(a, "json")) < 0 ? SPX_FAIL
									  : 0;
		spx_table_free(t);
	}
	volcli_close(&c);
	return rc;
}

int cmd_restore(const struct spx_args *a)
{
	struct spx_snap_restore_opts o = { .id = spx_arg(a, "id"),
					   .eager = spx_flag(a, "eager") };
	const char *s = spx_arg(a, "size");
	struct spx_vol_info v;
	struct volcli c;
	struct prog p;
	int rc;

	if (s && spx_parse_size(s, &o.size) < 0) {
		spx_warn("restore: %s", spx_errmsg());
		return SPX_USAGE;
	}
	if (s && !o.size) {
		spx_warn("restore: a volume of 0 bytes");
		return SPX_USAGE;
	}
	if ((rc = volcli_snaps(a, &c)))
		return rc;
	prog_init(&p, a, a->argv[0]);
	o.progress = progress;
	o.ctx = &p;
	rc = spx_snap_restore(c.ss, a->argv[0], &o, &v);
	prog_end(&p);
	if (rc < 0)
		rc = volcli_fail(a);
	else if (spx_flag(a, "json"))
		rc = volcli_print_vols(&c, &v, 1, true, true);
	else
		printf("%s\n", v.id);
	volcli_close(&c);
	return rc;
}
