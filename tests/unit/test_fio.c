/* Unit tests for lib/bench/fio.c: fio's JSON report, as fio 3.33 writes
 * it (the nbd engine's lines first) and as it must not be taken. */
#include "spx.h"

#include <math.h>

#include "bench/fio.h"
#include "t.h"

/* The shape of a report, cut to the fields that are read. */
#define JOB(err, rd, wr)                                                   \
	"{\"jobname\": \"j\", \"error\": " err ", \"read\": " rd         \
	", \"write\": " wr "}"
#define DIR(iops, bw, bytes, p99)                                          \
	"{\"io_bytes\": " bytes ", \"bw\": " bw ", \"iops\": " iops      \
	", \"clat_ns\": {\"percentile\": {\"1.000000\": 1, "              \
	"\"99.000000\": " p99 "}}}"
#define IDLE "{\"io_bytes\": 0, \"bw\": 0, \"iops\": 0.0, \"clat_ns\": {}}"
#define REPORT(...) "{\"fio version\": \"fio-3.33\", \"jobs\": [" __VA_ARGS__ "]}"

static const struct {
	const char *name, *text;
	int error;
	bool rd, wr;
	double riops, rmibs, rp99, wiops, wp99;
} cases[] = {
	{ "randrw through the nbd engine, its lines first",
	  "fio: connected to NBD server\nfio: connected to NBD server\n" REPORT(
		  JOB("0", DIR("67823.920266", "271295", "83619840", "1286144"),
		      DIR("29272.425249", "117089", "36089856", "2572288"))),
	  0, true, true, 67823.920266, 271295 / 1024.0, 1.286144,
	  29272.425249, 2.572288 },
	{ "a read job: no write figures",
	  REPORT(JOB("0", DIR("1000", "1024", "4096", "500000"), IDLE)),
	  0, true, false, 1000, 1, 0.5, 0, 0 },
	{ "two jobs are summed, p99 the larger",
	  REPORT(JOB("0", DIR("100", "2048", "10", "1000000"), IDLE) ","
		 JOB("0", DIR("50", "1024", "10", "3000000"), IDLE)),
	  0, true, false, 150, 3, 3, 0, 0 },
	{ "a failed verify: parses, error kept",
	  REPORT(JOB("84", DIR("10", "10", "4096", "1"), IDLE)), 84,
	  true, false, 10, 10 / 1024.0, 1e-6, 0, 0 },
	{ "text after the report is ignored",
	  REPORT(JOB("0", IDLE, DIR("1", "1", "1", "1"))) "\nfio: done\n",
	  0, false, true, 0, 0, 0, 1, 1e-6 },
};

/* Reports that are refused, with a part of the message naming why. */
static const struct {
	const char *name, *text, *err;
} bad[] = {
	{ "empty", "", "no JSON report" },
	{ "only fio's lines", "fio: connected to NBD server\n",
	  "no JSON report" },
	{ "a brace mid-line is not a report", "x {\"jobs\": []}\n",
	  "no JSON report" },
	{ "cut short", "{\"jobs\": [{\"error\": 0, \"read\": {",
	  "not JSON" },
	{ "no jobs", REPORT(), "no jobs" },
	{ "jobs not an array", "{\"jobs\": {}}", "no jobs" },
	{ "a job not an object", REPORT("1"), "not an object" },
	{ "error missing", "{\"jobs\": [{\"read\": " IDLE ", \"write\": " IDLE "}]}",
	  "error is not an errno" },
	{ "error negative", REPORT(JOB("-1", IDLE, IDLE)),
	  "error is not an errno" },
	{ "error not an integer", REPORT(JOB("1.5", IDLE, IDLE)),
	  "error is not an errno" },
	{ "read missing", "{\"jobs\": [{\"error\": 0, \"write\": " IDLE "}]}",
	  "job.read is missing" },
	{ "iops a string", REPORT(JOB("0", DIR("\"9\"", "1", "1", "1"), IDLE)),
	  "read.iops is not a number" },
	{ "iops negative", REPORT(JOB("0", DIR("-5", "1", "1", "1"), IDLE)),
	  "read.iops is out of range" },
	{ "bw missing",
	  REPORT(JOB("0", "{\"io_bytes\": 1, \"iops\": 1}", IDLE)),
	  "read.bw is missing" },
	{ "io_bytes beyond any disk",
	  REPORT(JOB("0", DIR("1", "1", "1e300", "1"), IDLE)),
	  "io_bytes is out of range" },
	{ "io_bytes a fraction (fio counts whole bytes)",
	  REPORT(JOB("0", DIR("1", "1", "0.5", "1"), IDLE)),
	  "read.io_bytes is not a whole number" },
	{ "I/O done but no percentiles",
	  REPORT(JOB("0", "{\"io_bytes\": 1, \"bw\": 1, \"iops\": 1}", IDLE)),
	  "clat_ns.percentile is missing" },
	{ "p99 missing",
	  REPORT(JOB("0",
		     "{\"io_bytes\": 1, \"bw\": 1, \"iops\": 1, \"clat_ns\": "
		     "{\"percentile\": {\"50.000000\": 1}}}",
		     IDLE)),
	  "99.000000 is missing" },
	{ "a duplicate key", "{\"jobs\": [], \"jobs\": []}", "not JSON" },
};

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(b) > 1 ? fabs(b) : 1);
}

int main(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		struct spx_fio_result r;
		int rc = spx_fio_parse(cases[i].text, strlen(cases[i].text), &r);

		if (!T_OK(rc == 0, "%s: parses", cases[i].name)) {
			printf("#   %s\n", spx_errmsg());
			continue;
		}
		T_INT(r.error, cases[i].error, "%s: error", cases[i].name);
		T_OK(r.read.present == cases[i].rd &&
			     r.write.present == cases[i].wr,
		     "%s: directions", cases[i].name);
		T_OK(near(r.read.iops, cases[i].riops) &&
			     near(r.read.mibs, cases[i].rmibs) &&
			     near(r.read.p99_ms, cases[i].rp99),
		     "%s: read figures", cases[i].name);
		T_OK(near(r.write.iops, cases[i].wiops) &&
			     near(r.write.p99_ms, cases[i].wp99),
		     "%s: write figures", cases[i].name);
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++) {
		struct spx_fio_result r;
		int rc = spx_fio_parse(bad[i].text, strlen(bad[i].text), &r);
		bool ok = rc < 0 && spx_errstatus() == SPX_FAIL &&
			  strstr(spx_errmsg(), bad[i].err);

		if (!T_OK(ok, "%s: refused", bad[i].name))
			printf("#   got '%s'\n", rc ? spx_errmsg() : "(parsed)");
		spx_error_clear();
	}
	{
		/* The size bound holds before any parsing. */
		size_t n = SPX_FIO_MAX_BYTES + 1;
		char *big = spx_calloc(n, 1);
		struct spx_fio_result r;

		memset(big, ' ', n);
		T_OK(spx_fio_parse(big, n, &r) < 0 &&
			     strstr(spx_errmsg(), "larger than"),
		     "a report beyond the bound is refused");
		spx_error_clear();
		free(big);
	}
	return t_done();
}
