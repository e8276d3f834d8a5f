/* plot.c: PNG charts of one or more tags with gnuplot, like the reference
 * report's: single-thread CPU, random IOPS, sequential MiB/s (medians with
 * min-max error bars) and the per-run variance of each. gnuplot runs as a
 * child by argv (no shell); its input is a script and data files written
 * into the output directory, kept so a chart can be restyled by hand. */
#include "spx.h"

#include <math.h>

#include "bench/bench.h"
#include "file.h"
#include "proc.h"


struct chart {
	const char *file;  /* "random-iops" */
	const char *title;
	const char *ylabel;
	const char *const *ids; /* figures, NULL-ended */
};

static const char *const cpu_ids[] = { "cpu.single.events", NULL };
static const char *const iops_ids[] = { "disk.randrw.read.iops",
					"disk.randrw.write.iops",
					"disk.randread.read.iops", NULL };
static const char *const seq_ids[] = { "disk.seqread.read.mibs",
				       "disk.seqwrite.write.mibs", NULL };

static const struct chart charts[] = {
	{ "cpu-single", "sysbench cpu, 1 thread (higher is better)",
	  "events/s", cpu_ids },
	{ "random-iops", "random 4k I/O (higher is better)", "IOPS", iops_ids },
	{ "sequential-mibs", "sequential 1M I/O (higher is better)", "MiB/s",
	  seq_ids },
};

static const struct spx_bench_stat *find(const struct spx_bench_stat *s,
					 size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].f->id, id))
			return &s[i];
	return NULL;
}

/* gnuplot strings are in double quotes: keep labels plain. */
static void plain(const char *in, char *out, size_t sz)
{
	size_t o = 0;

	for (; *in && o + 1 < sz; in++)
		out[o++] = (*in == '"' || *in == '\\' || *in == '\n') ? ' ' : *in;
	out[o] = '\0';
}

static int run_gnuplot(const char *script)
{
	char *argv[] = { "gnuplot", (char *)script, NULL };
	int st = spx_run(argv, false);

	if (st < 0) {
		char why[256];

		snprintf(why, sizeof(why), "%s", spx_errmsg());
		return spx_error(SPX_FAIL, "%s (apt-get install gnuplot-nox)",
				 why);
	}
	if (st)
		return spx_error(SPX_FAIL, "gnuplot failed on '%s'", script);
	return 0;
}

static void preamble(struct spx_buf *g, const char *png, const char *title,
		     const char *ylabel)
{
	spx_buf_addf(g,
		     "set terminal pngcairo size 960,540 noenhanced font "
		     "'sans,10'\n"
		     "set output '%s'\n"
		     "set title \"%s\"\n"
		     "set ylabel \"%s\"\n"
		     "set grid ytics\nset key outside right top\n"
		     "set yrange [0:*]\n",
		     png, title, ylabel);
}

int spx_bench_plot(const char *const *tags, const struct spx_bench_runs *rs,
		   size_t ntags, const char *outdir)
{
	struct spx_bench_stat **st = spx_calloc(ntags, sizeof(*st));
	size_t *ns = spx_calloc(ntags, sizeof(*ns));
	struct spx_buf g = SPX_BUF_INIT, d = SPX_BUF_INIT;
	char label[128];
	int rc = 0;

	if (spx_mkdirs(outdir, 0755) < 0) {
		free(st);
		free(ns);
		return -1;
	}
	for (size_t t = 0; t < ntags; t++)
		ns[t] = spx_bench_summarise(&rs[t], &st[t]);

	for (size_t c = 0; c < SPX_ARRAY_SIZE(charts) && rc == 0; c++) {
		const struct chart *ch = &charts[c];
		char *dat = spx_xprintf("%s/%s.dat", outdir, ch->file);
		char *gp = spx_xprintf("%s/%s.gp", outdir, ch->file);
		char *png = spx_xprintf("%s/%s.png", outdir, ch->file);
		size_t rows = 0;

		spx_buf_reset(&d);
		spx_buf_reset(&g);
		/* One row per figure: label, then median min max per tag. */
		for (size_t i = 0; ch->ids[i]; i++) {
			const struct spx_bench_stat *any = NULL;

			for (size_t t = 0; t < ntags && !any; t++)
				any = find(st[t], ns[t], ch->ids[i]);
			if (!any)
				continue;
			plain(any->f->label, label, sizeof(label));
			spx_buf_addf(&d, "\"%s\"", label);
			for (size_t t = 0; t < ntags; t++) {
				const struct spx_bench_stat *s =
					find(st[t], ns[t], ch->ids[i]);

				if (s)
					spx_buf_addf(&d, " %.6g %.6g %.6g",
						     s->median, s->min, s->max);
				else
					spx_buf_adds(&d, " NaN NaN NaN");
			}
			spx_buf_addc(&d, '\n');
			rows++;
		}
		if (!rows) {
			spx_info("plot: no figures for %s", ch->file);
			goto next;
		}
		preamble(&g, png, ch->title, ch->ylabel);
		spx_buf_adds(&g, "set style data histograms\n"
				 "set style histogram errorbars gap 1 lw 1\n"
				 "set style fill solid 0.7 border -1\n"
				 "set boxwidth 0.9\nset bars 2\n");
		spx_buf_adds(&g, "plot ");
		for (size_t t = 0; t < ntags; t++)
			spx_buf_addf(&g,
				     "%s'%s' using %zu:%zu:%zu%s title \"%s\"",
				     t ? ", " : "", dat, 2 + 3 * t, 3 + 3 * t,
				     4 + 3 * t, t ? "" : ":xtic(1)", tags[t]);
		spx_buf_addc(&g, '\n');
		if (spx_write_file(dat, d.p, d.len, 0644, false) < 0 ||
		    spx_write_file(gp, g.p, g.len, 0644, false) < 0 ||
		    run_gnuplot(gp) < 0)
			rc = -1;
next:
		free(dat);
		free(gp);
		free(png);
	}

	/* Variance: every run's value over its tag's median, per figure. */
	if (rc == 0) {
		char *dat = spx_xprintf("%s/variance.dat", outdir);
		char *gp = spx_xprintf("%s/variance.gp", outdir);
		char *png = spx_xprintf("%s/variance.png", outdir);
		size_t nfig = ntags ? ns[0] : 0;

		spx_buf_reset(&d);
		spx_buf_reset(&g);
		for (size_t t = 0; t < ntags; t++) {
			for (size_t i = 0; i < nfig; i++) {
				const struct spx_bench_stat *s =
					find(st[t], ns[t], st[0][i].f->id);

				for (size_t r = 0; s && r < s->n; r++)
					if (s->median != 0)
						spx_buf_addf(
							&d, "%zu %.6g\n", i,
							100 * s->values[r] /
								s->median);
			}
			spx_buf_adds(&d, "\n\n");
		}
		preamble(&g, png, "every run as a share of its tag's median",
			 "% of median");
		spx_buf_adds(&g, "set yrange [*:*]\nset xtics rotate by -40 "
				 "scale 0\nset bmargin 10\n");
		spx_buf_adds(&g, "set xtics (");
		for (size_t i = 0; i < nfig; i++) {
			plain(st[0][i].f->label, label, sizeof(label));
			spx_buf_addf(&g, "%s\"%s\" %zu", i ? ", " : "", label, i);
		}
		spx_buf_addf(&g, ")\nset xrange [-0.5:%.1f]\nplot ",
			     (double)nfig - 0.5);
		for (size_t t = 0; t < ntags; t++)
			spx_buf_addf(&g,
				     "%s'%s' index %zu using ($1+%.2f):2 with "
				     "points pt 7 ps 1 title \"%s\"",
				     t ? ", " : "", dat, t,
				     ntags > 1 ? -0.2 + 0.4 * (double)t /
							     (double)(ntags - 1)
					       : 0.0,
				     tags[t]);
		spx_buf_addc(&g, '\n');
		if (!nfig) {
			spx_info("plot: no figures for the variance chart");
		} else if (spx_write_file(dat, d.p, d.len, 0644, false) < 0 ||
			   spx_write_file(gp, g.p, g.len, 0644, false) < 0 ||
			   run_gnuplot(gp) < 0) {
			rc = -1;
		}
		free(dat);
		free(gp);
		free(png);
	}
	for (size_t t = 0; t < ntags; t++)
		spx_bench_stats_free(st[t], ns[t]);
	free(st);
	free(ns);
	spx_buf_release(&g);
	spx_buf_release(&d);
	return rc;
}
