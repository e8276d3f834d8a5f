/* compare.c: two tags side by side, as the reference report does by hand:
 * medians over runs with the full range, the ratio B/A, rows whose ranges
 * overlap marked as not resolved, and no ratio at all between figures
 * measured with different thread counts. */
#include "spx.h"

#include <jansson.h>
#include <math.h>

#include "bench/bench.h"

/* 66169 -> "66,169"; 1456.5 -> "1456.50" */
static void fmt_num(double v, char *out, size_t sz)
{
	char tmp[64];
	size_t n, o = 0;

	if (!isfinite(v)) {
		snprintf(out, sz, "-");
		return;
	}
	if (fabs(v) < 1000) {
		snprintf(out, sz, "%.2f", v);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%.0f", v);
	n = strlen(tmp);
	for (size_t i = 0; i < n && o + 2 < sz; i++) {
		out[o++] = tmp[i];
		if (tmp[i] != '-' && (n - i - 1) % 3 == 0 && i + 1 < n)
			out[o++] = ',';
	}
	out[o] = '\0';
}

/* Display width of UTF-8 text: code points, not bytes. */
static size_t width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void pad(FILE *out, const char *s, size_t w)
{
	size_t n = width(s);

	fputs(s, out);
	while (n++ < w)
		fputc(' ', out);
	fputs("  ", out);
}

static const struct spx_bench_stat *find(const struct spx_bench_stat *s,
					 size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].f->id, id))
			return &s[i];
	return NULL;
}

static void cell(const struct spx_bench_stat *s, char *out, size_t sz)
{
	char m[32], lo[32], hi[32];

	if (!s) {
		snprintf(out, sz, "-");
		return;
	}
	fmt_num(s->median, m, sizeof(m));
	if (s->n < 2) {
		snprintf(out, sz, "%s", m);
		return;
	}
	fmt_num(s->min, lo, sizeof(lo));
	fmt_num(s->max, hi, sizeof(hi));
	snprintf(out, sz, "%s [%s–%s] %.1f%%", m, lo, hi, s->spread * 100);
}

struct row {
	const struct spx_bench_stat *a, *b;
	const struct spx_bench_figure *f;
	bool comparable, resolved;
	double ratio;
};

static void judge(struct row *r)
{
	r->comparable = r->a && r->b && r->a->threads >= 0 &&
			r->a->threads == r->b->threads;
	r->ratio = r->comparable && r->a->median != 0
			   ? r->b->median / r->a->median
			   : NAN;
	/* Ranges that overlap cannot tell A from B. */
	r->resolved = r->comparable &&
		      (r->b->min > r->a->max || r->b->max < r->a->min);
}

static json_t *side(const struct spx_bench_stat *s)
{
	json_t *vals;

	if (!s)
		return json_null();
	vals = json_array();
	for (size_t i = 0; i < s->n; i++)
		json_array_append_new(vals, json_real(s->values[i]));
	return json_pack("{s:f, s:f, s:f, s:f, s:i, s:i, s:o}", "median",
			 s->median, "min", s->min, "max", s->max, "spread",
			 s->spread, "runs", (int)s->n, "threads", s->threads,
			 "values", vals);
}

int spx_bench_compare(const char *tag_a, const struct spx_bench_runs *a,
		      const char *tag_b, const struct spx_bench_runs *b,
		      FILE *out, bool json)
{
	struct spx_bench_stat *sa, *sb;
	size_t na = spx_bench_summarise(a, &sa);
	size_t nb = spx_bench_summarise(b, &sb);
	struct row *rows = spx_calloc(na + nb + 1, sizeof(*rows));
	size_t nr = 0, wa = strlen(tag_a), wb = strlen(tag_b), wl = 6;
	json_t *arr = json_array();
	int rc = 0;

	/* A's figures in A's order, then any only B has. */
	for (size_t i = 0; i < na; i++)
		rows[nr++] = (struct row){ &sa[i], find(sb, nb, sa[i].f->id),
					   sa[i].f, false, false, NAN };
	for (size_t i = 0; i < nb; i++)
		if (!find(sa, na, sb[i].f->id))
			rows[nr++] = (struct row){ NULL, &sb[i], sb[i].f, false,
						   false, NAN };
	for (size_t i = 0; i < nr; i++) {
		char c[128];

		judge(&rows[i]);
		cell(rows[i].a, c, sizeof(c));
		if (width(c) + 6 > wa)
			wa = width(c) + 6;
		cell(rows[i].b, c, sizeof(c));
		if (width(c) + 6 > wb)
			wb = width(c) + 6;
		if (width(rows[i].f->label) > wl)
			wl = width(rows[i].f->label);
	}
	if (!json) {
		fprintf(out,
			"spx-bench compare: A = %s (%zu run%s), B = %s (%zu "
			"run%s)\n"
			"medians over runs, [min–max] and spread; B/A is B's "
			"median as a share of A's\n\n",
			tag_a, a->n, a->n == 1 ? "" : "s", tag_b, b->n,
			b->n == 1 ? "" : "s");
		pad(out, "figure", wl);
		pad(out, "unit", 12);
		pad(out, tag_a, wa);
		pad(out, tag_b, wb);
		fputs("B/A\n", out);
	}
	for (size_t i = 0; i < nr; i++) {
		const struct row *r = &rows[i];
		char ca[128], cb[128], unit[32], verdict[64];

		if (json) {
			json_array_append_new(
				arr,
				json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, "
					  "s:b, s:b}",
					  "id", r->f->id, "label", r->f->label,
					  "unit", r->f->unit, "better",
					  r->f->higher_better ? "higher"
							      : "lower",
					  "a", side(r->a), "b", side(r->b),
					  "ratio",
					  isfinite(r->ratio)
						  ? json_real(r->ratio)
						  : json_null(),
					  "comparable", r->comparable,
					  "resolved", r->resolved));
			continue;
		}
		cell(r->a, ca, sizeof(ca));
		cell(r->b, cb, sizeof(cb));
		if (r->a && r->b && !r->comparable) {
			/* Show the thread counts that make them differ. */
			size_t l = strlen(ca);

			snprintf(ca + l, sizeof(ca) - l, " (%dt)", r->a->threads);
			l = strlen(cb);
			snprintf(cb + l, sizeof(cb) - l, " (%dt)", r->b->threads);
		}
		snprintf(unit, sizeof(unit), "%s%s", r->f->unit,
			 r->f->higher_better ? "" : " (lower)");
		if (!r->a || !r->b)
			snprintf(verdict, sizeof(verdict), "only in %s",
				 r->a ? "A" : "B");
		else if (!r->comparable)
			snprintf(verdict, sizeof(verdict), "not comparable");
		else if (!isfinite(r->ratio))
			snprintf(verdict, sizeof(verdict), "-");
		else
			snprintf(verdict, sizeof(verdict), "%.1f%%%s",
				 r->ratio * 100,
				 r->resolved ? "" : "  not resolved");
		pad(out, r->f->label, wl);
		pad(out, unit, 12);
		pad(out, ca, wa);
		pad(out, cb, wb);
		fprintf(out, "%s\n", verdict);
	}
	if (json) {
		char *s = json_dumps(arr, JSON_INDENT(2) | JSON_REAL_PRECISION(10));

		if (!s || fprintf(out, "%s\n", s) < 0)
			rc = spx_error(SPX_FAIL, "cannot write the comparison");
		free(s);
	}
	json_decref(arr);
	free(rows);
	spx_bench_stats_free(sa, na);
	spx_bench_stats_free(sb, nb);
	return rc;
}
