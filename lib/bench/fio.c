/* fio.c: fio's JSON report, read with bounds (fio.h). */
#include "spx.h"

#include <jansson.h>
#include <math.h>

#include "bench/fio.h"

/* Bounds far beyond any machine, so that sums over jobs stay finite and
 * byte counts exact in a double. */
#define MAX_IOPS 1e12	     /* operations per second */
#define MAX_BW 1e15	     /* KiB/s */
#define MAX_BYTES 9007199254740992.0 /* 2^53 per job */
#define MAX_LAT_NS 1e15	     /* 11 days */

/* A number field of o: present, a JSON number, within 0..max. */
static int num(json_t *o, const char *what, const char *key, double max,
	       double *out)
{
	json_t *v = json_object_get(o, key);
	double d;

	*out = 0;
	if (!json_is_number(v))
		return spx_error(SPX_FAIL, "fio's report: %s.%s is %s", what,
				 key, v ? "not a number" : "missing");
	d = json_number_value(v);
	if (!isfinite(d) || d < 0 || d > max)
		return spx_error(SPX_FAIL, "fio's report: %s.%s is out of range",
				 what, key);
	*out = d;
	return 0;
}

/* One direction of one job, added into d. */
static int dir_add(json_t *job, const char *name, struct spx_fio_dir *d)
{
	json_t *o = json_object_get(job, name), *pct;
	double iops, bw, bytes, p99;

	if (!json_is_object(o))
		return spx_error(SPX_FAIL, "fio's report: job.%s is %s", name,
				 o ? "not an object" : "missing");
	if (num(o, name, "iops", MAX_IOPS, &iops) < 0 ||
	    num(o, name, "bw", MAX_BW, &bw) < 0 ||
	    num(o, name, "io_bytes", MAX_BYTES, &bytes) < 0)
		return -1;
	/* A count of bytes: a fraction would move bytes and count none. */
	if (bytes != floor(bytes))
		return spx_error(SPX_FAIL, "fio's report: %s.io_bytes is not "
					   "a whole number",
				 name);
	if (bytes == 0)
		return 0;
	/* Latency percentiles exist once a direction did I/O. */
	pct = json_object_get(json_object_get(o, "clat_ns"), "percentile");
	if (!json_is_object(pct))
		return spx_error(SPX_FAIL, "fio's report: %s.clat_ns.percentile "
					   "is missing",
				 name);
	if (num(pct, name, "99.000000", MAX_LAT_NS, &p99) < 0)
		return -1;
	d->present = true;
	d->iops += iops;
	d->mibs += bw / 1024.0;
	d->bytes += (uint64_t)bytes;
	if (p99 / 1e6 > d->p99_ms)
		d->p99_ms = p99 / 1e6;
	return 0;
}

int spx_fio_parse(const char *text, size_t len, struct spx_fio_result *out)
{
	json_error_t je;
	json_t *root = NULL, *jobs, *job;
	size_t start = 0, i;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (len > SPX_FIO_MAX_BYTES)
		return spx_error(SPX_FAIL, "fio's report is larger than %u MiB",
				 SPX_FIO_MAX_BYTES >> 20);
	/* fio's own lines come first; the report is the first line that
	 * starts with '{'. */
	while (start < len && text[start] != '{') {
		const char *nl = memchr(text + start, '\n', len - start);

		start = nl ? (size_t)(nl - text) + 1 : len;
	}
	if (start == len)
		return spx_error(SPX_FAIL, "fio wrote no JSON report");
	root = json_loadb(text + start, len - start,
			  JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return spx_error(SPX_FAIL, "fio's report is not JSON: line %d: "
					   "%s",
				 je.line, je.text);
	jobs = json_object_get(root, "jobs");
	if (!json_is_array(jobs) || json_array_size(jobs) == 0) {
		spx_error(SPX_FAIL, "fio's report has no jobs");
		goto out;
	}
	if (json_array_size(jobs) > SPX_FIO_MAX_JOBS) {
		spx_error(SPX_FAIL, "fio's report has more than %d jobs",
			  SPX_FIO_MAX_JOBS);
		goto out;
	}
	json_array_foreach(jobs, i, job)
	{
		json_t *e = json_object_get(job, "error");

		if (!json_is_object(job)) {
			spx_error(SPX_FAIL, "fio's report: job %zu is not an "
					    "object",
				  i);
			goto out;
		}
		if (!json_is_integer(e) || json_integer_value(e) < 0 ||
		    json_integer_value(e) > INT_MAX) {
			spx_error(SPX_FAIL, "fio's report: job %zu: error is "
					    "not an errno",
				  i);
			goto out;
		}
		if (!out->error)
			out->error = (int)json_integer_value(e);
		if (dir_add(job, "read", &out->read) < 0 ||
		    dir_add(job, "write", &out->write) < 0)
			goto out;
	}
	out->njobs = json_array_size(jobs);
	rc = 0;
out:
	json_decref(root);
	return rc;
}
