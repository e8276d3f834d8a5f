/* bench.c: recording, loading and summarising benchmark runs. */
#include "spx.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "bench/bench.h"
#include "file.h"

#define RUN_FILE_MAX (4u << 20)

char *spx_bench_scratch(const char *base, const char *name, mode_t mode)
{
	char *dir;
	struct stat st;

	if (spx_mkdirs(base, 0755) < 0)
		return NULL;
	if (stat(base, &st) < 0) {
		spx_error_errno(SPX_FAIL, "cannot stat '%s'", base);
		return NULL;
	}
	if (!S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && st.st_uid) ||
	    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
		spx_error(SPX_USAGE, "'%s' (owner uid %u, mode %04o) is open "
				     "to another user, who could swap what is "
				     "made in it for links: give --dir a "
				     "directory of your own",
			  base, (unsigned)st.st_uid,
			  (unsigned)(st.st_mode & 07777));
		return NULL;
	}
	dir = spx_xprintf("%s/%s.XXXXXX", base, name);
	if (!mkdtemp(dir)) {
		spx_error_errno(SPX_FAIL, "cannot make a directory in '%s'",
				base);
		free(dir);
		return NULL;
	}
	if (chmod(dir, mode) < 0) {
		spx_error_errno(SPX_FAIL, "cannot set the mode of '%s'", dir);
		rmdir(dir);
		free(dir);
		return NULL;
	}
	return dir;
}

bool spx_bench_tag_valid(const char *tag)
{
	size_t n = strlen(tag);

	if (n < 1 || n > 64 || tag[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((tag[i] >= 'a' && tag[i] <= 'z') ||
		      (tag[i] >= 'A' && tag[i] <= 'Z') ||
		      (tag[i] >= '0' && tag[i] <= '9') || tag[i] == '.' ||
		      tag[i] == '_' || tag[i] == '-'))
			return false;
	return true;
}

void spx_bench_run_init(struct spx_bench_run *r, const char *suite,
			const char *tag, int run)
{
	char host[256] = "unknown", now[32];
	time_t t = time(NULL);
	struct tm tm;

	memset(r, 0, sizeof(*r));
	gethostname(host, sizeof(host) - 1);
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	r->suite = spx_strdup(suite);
	r->tag = spx_strdup(tag);
	r->host = spx_strdup(host);
	r->time = spx_strdup(now);
	r->run = run;
}

void spx_bench_add(struct spx_bench_run *r, const char *id,
		   const char *section, const char *label, double value,
		   const char *unit, bool higher_better, int threads)
{
	struct spx_bench_figure *f;

	r->fig = spx_realloc(r->fig, (r->nfig + 1) * sizeof(*r->fig));
	f = &r->fig[r->nfig++];
	f->id = spx_strdup(id);
	f->section = spx_strdup(section);
	f->label = spx_strdup(label);
	f->unit = spx_strdup(unit);
	f->value = value;
	f->higher_better = higher_better;
	f->threads = threads;
}

void spx_bench_run_release(struct spx_bench_run *r)
{
	for (size_t i = 0; i < r->nfig; i++) {
		free(r->fig[i].id);
		free(r->fig[i].section);
		free(r->fig[i].label);
		free(r->fig[i].unit);
	}
	free(r->fig);
	free(r->suite);
	free(r->tag);
	free(r->time);
	free(r->host);
	free(r->file);
	memset(r, 0, sizeof(*r));
}

int spx_bench_save(const struct spx_bench_run *r, const char *results,
		   char **path)
{
	json_t *o = json_object(), *figs = json_array();
	char stamp[32], *dir, *p, *text;
	int rc;

	for (size_t i = 0; i < r->nfig; i++) {
		const struct spx_bench_figure *f = &r->fig[i];

		json_array_append_new(
			figs, json_pack("{s:s, s:s, s:s, s:f, s:s, s:s, s:i}",
					"id", f->id, "section", f->section,
					"label", f->label, "value", f->value,
					"unit", f->unit, "better",
					f->higher_better ? "higher" : "lower",
					"threads", f->threads));
	}
	json_object_set_new(o, "schema", json_string(SPX_BENCH_SCHEMA));
	json_object_set_new(o, "suite", json_string(r->suite));
	json_object_set_new(o, "tag", json_string(r->tag));
	json_object_set_new(o, "run", json_integer(r->run));
	json_object_set_new(o, "time", json_string(r->time));
	json_object_set_new(o, "host", json_string(r->host));
	json_object_set_new(o, "quick", json_boolean(r->quick));
	json_object_set_new(o, "figures", figs);
	text = json_dumps(o, JSON_INDENT(2));
	json_decref(o);
	if (!text)
		return spx_error(SPX_FAIL, "cannot render the results");
	/* 2026-11-30T20:15:00Z -> 20261130T201500Z */
	size_t k = 0;
	for (const char *s = r->time; *s && k < sizeof(stamp) - 1; s++)
		if (*s != '-' && *s != ':')
			stamp[k++] = *s;
	stamp[k] = '\0';
	dir = spx_xprintf("%s/%s", results, r->tag);
	p = spx_xprintf("%s/%s-%s-run%d.json", dir, stamp, r->suite, r->run);
	rc = spx_mkdirs(dir, 0755);
	if (rc == 0)
		rc = spx_write_file(p, text, strlen(text), 0644, false);
	free(text);
	free(dir);
	if (rc == 0 && path)
		*path = p;
	else
		free(p);
	return rc;
}

static char *jstr(json_t *o, const char *k, const char *def)
{
	const char *s = json_string_value(json_object_get(o, k));

	return spx_strdup(s ? s : def);
}

int spx_bench_load_file(const char *path, struct spx_bench_run *out)
{
	struct spx_buf b = SPX_BUF_INIT;
	json_error_t je;
	json_t *o = NULL, *figs, *f;
	const char *schema;
	size_t i;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (spx_buf_read_file(&b, path, RUN_FILE_MAX) < 0)
		goto out;
	o = json_loadb(b.p, b.len, 0, &je);
	if (!o) {
		spx_error(SPX_USAGE, "%s:%d:%d: %s", path, je.line, je.column,
			  je.text);
		goto out;
	}
	schema = json_string_value(json_object_get(o, "schema"));
	figs = json_object_get(o, "figures");
	if (!schema || strcmp(schema, SPX_BENCH_SCHEMA) || !json_is_array(figs)) {
		spx_error(SPX_USAGE, "'%s' is not a %s result", path,
			  SPX_BENCH_SCHEMA);
		goto out;
	}
	out->suite = jstr(o, "suite", "?");
	out->tag = jstr(o, "tag", "?");
	out->time = jstr(o, "time", "?");
	out->host = jstr(o, "host", "?");
	out->file = spx_strdup(path);
	out->run = (int)json_integer_value(json_object_get(o, "run"));
	out->quick = json_is_true(json_object_get(o, "quick"));
	json_array_foreach(figs, i, f)
	{
		json_t *v = json_object_get(f, "value");
		const char *id = json_string_value(json_object_get(f, "id"));
		const char *better =
			json_string_value(json_object_get(f, "better"));

		if (!id || !json_is_number(v)) {
			spx_error(SPX_USAGE,
				  "'%s': figure %zu has no id or no number",
				  path, i + 1);
			goto out;
		}
		char *sec = jstr(f, "section", "");
		char *label = jstr(f, "label", id);
		char *unit = jstr(f, "unit", "");
		spx_bench_add(out, id, sec, label, json_number_value(v), unit,
			      !better || strcmp(better, "lower"),
			      (int)json_integer_value(
				      json_object_get(f, "threads")));
		free(sec);
		free(label);
		free(unit);
	}
	rc = 0;
out:
	if (rc < 0)
		spx_bench_run_release(out);
	json_decref(o);
	spx_buf_release(&b);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int spx_bench_load_tag(const char *results, const char *tag,
		       struct spx_bench_runs *out)
{
	char *dir, **names = NULL;
	size_t n = 0;
	struct dirent *e;
	DIR *d;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!spx_bench_tag_valid(tag))
		return spx_error(SPX_USAGE, "bad tag '%s' ([A-Za-z0-9._-], 1 to 64)",
				 tag);
	dir = spx_xprintf("%s/%s", results, tag);
	d = opendir(dir);
	if (!d) {
		rc = spx_error_errno(errno == ENOENT ? SPX_NO : SPX_FAIL,
				     "no results for tag '%s' in '%s'", tag,
				     results);
		free(dir);
		return rc;
	}
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (e->d_name[0] == '.' || l < 6 ||
		    strcmp(e->d_name + l - 5, ".json"))
			continue;
		names = spx_realloc(names, (n + 1) * sizeof(*names));
		names[n++] = spx_strdup(e->d_name);
	}
	closedir(d);
	/* The names start with the UTC time: name order is time order. */
	qsort(names, n, sizeof(*names), by_name);
	out->v = spx_calloc(n ? n : 1, sizeof(*out->v));
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *p = spx_xprintf("%s/%s", dir, names[i]);

		if (spx_bench_load_file(p, &out->v[out->n]) < 0)
			rc = -1;
		else
			out->n++;
		free(p);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(dir);
	if (rc == 0 && !out->n)
		rc = spx_error(SPX_NO, "no results for tag '%s' in '%s'", tag,
			       results);
	if (rc < 0)
		spx_bench_runs_release(out);
	return rc;
}

int spx_bench_repeat(const char *suite, const char *tag, uint64_t nruns,
		     bool quick, const char *results,
		     int (*one)(void *ctx, struct spx_bench_run *r), void *ctx,
		     struct spx_bench_runs *rs)
{
	rs->v = spx_calloc(nruns ? nruns : 1, sizeof(*rs->v));
	rs->n = 0;
	for (uint64_t r = 0; r < nruns; r++) {
		struct spx_bench_run *run = &rs->v[r];
		char *path = NULL;

		printf("run %llu of %llu\n", (unsigned long long)r + 1,
		       (unsigned long long)nruns);
		spx_bench_run_init(run, suite, tag, (int)r + 1);
		run->quick = quick;
		rs->n++;
		if (one(ctx, run) < 0 || spx_bench_save(run, results, &path) < 0)
			return -1;
		printf("  saved %s\n", path);
		free(path);
	}
	return 0;
}

void spx_bench_runs_release(struct spx_bench_runs *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		spx_bench_run_release(&rs->v[i]);
	free(rs->v);
	rs->v = NULL;
	rs->n = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double spx_bench_median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

size_t spx_bench_summarise(const struct spx_bench_runs *rs,
			   struct spx_bench_stat **out)
{
	struct spx_bench_stat *s = NULL;
	size_t ns = 0;

	for (size_t r = 0; r < rs->n; r++) {
		for (size_t i = 0; i < rs->v[r].nfig; i++) {
			const struct spx_bench_figure *f = &rs->v[r].fig[i];
			size_t k;

			for (k = 0; k < ns; k++)
				if (!strcmp(s[k].f->id, f->id))
					break;
			if (k == ns) {
				s = spx_realloc(s, (ns + 1) * sizeof(*s));
				memset(&s[ns], 0, sizeof(*s));
				s[ns].f = f;
				s[ns].threads = f->threads;
				s[ns].values =
					spx_calloc(rs->n, sizeof(double));
				ns++;
			}
			if (s[k].threads != f->threads)
				s[k].threads = -1;
			s[k].values[s[k].n++] = f->value;
		}
	}
	for (size_t k = 0; k < ns; k++) {
		double *tmp = spx_calloc(s[k].n, sizeof(double));

		memcpy(tmp, s[k].values, s[k].n * sizeof(double));
		s[k].median = spx_bench_median(tmp, s[k].n);
		s[k].min = tmp[0];
		s[k].max = tmp[s[k].n - 1];
		s[k].spread = s[k].median != 0
				      ? (s[k].max - s[k].min) / fabs(s[k].median)
				      : 0;
		free(tmp);
	}
	*out = s;
	return ns;
}

void spx_bench_stats_free(struct spx_bench_stat *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s[i].values);
	free(s);
}

const struct spx_bench_stat *spx_bench_stat_find(const struct spx_bench_stat *s,
						 size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].f->id, id))
			return &s[i];
	return NULL;
}

double spx_bench_run_value(const struct spx_bench_run *r, const char *id)
{
	for (size_t i = 0; i < r->nfig; i++)
		if (!strcmp(r->fig[i].id, id))
			return r->fig[i].value;
	return NAN;
}

size_t spx_bench_run_ratios(const struct spx_bench_runs *rs, const char *id,
			    const char *lim, double *med, double *lo,
			    double *hi)
{
	double *v = spx_calloc(rs->n + 1, sizeof(double));
	size_t k = 0;

	for (size_t r = 0; r < rs->n; r++) {
		double a = spx_bench_run_value(&rs->v[r], id);
		double l = spx_bench_run_value(&rs->v[r], lim);

		if (!isnan(a) && !isnan(l) && l > 0)
			v[k++] = a / l;
	}
	if (k) {
		*lo = *hi = v[0];
		for (size_t i = 1; i < k; i++) {
			*lo = v[i] < *lo ? v[i] : *lo;
			*hi = v[i] > *hi ? v[i] : *hi;
		}
		*med = spx_bench_median(v, k);
	}
	free(v);
	return k;
}

void spx_bench_machine(struct spx_buf *md)
{
	char host[64] = "", line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");
	struct utsname u;
	long mem = sysconf(_SC_PHYS_PAGES), pg = sysconf(_SC_PAGESIZE);

	gethostname(host, sizeof(host) - 1);
	spx_buf_addf(md, "- host: %s, %ld CPUs", host,
		     sysconf(_SC_NPROCESSORS_ONLN));
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			const char *m = strchr(line, ':') + 1;

			line[strcspn(line, "\n")] = '\0';
			spx_buf_addf(md, " (%s)", m + strspn(m, " \t"));
			break;
		}
	if (f)
		fclose(f);
	if (mem > 0 && pg > 0)
		spx_buf_addf(md, ", %.1f GiB of memory",
			     (double)mem * (double)pg / (1024.0 * 1024 * 1024));
	if (uname(&u) == 0)
		spx_buf_addf(md, ", %s %s", u.sysname, u.release);
	spx_buf_adds(md, "\n");
}
