/* Unit tests for lib/bench/vmout.c: the EC2 answers and the busybox
 * jobs' output spx-bench vm reads, as they come and as they must not be
 * taken. */
#include "spx.h"

#include <math.h>

#include "bench/vmout.h"
#include "t.h"

static const struct {
	const char *name, *xml, *tag, *want;
	size_t cut; /* read only this much (0: all) */
} xcases[] = {
	{ "the first of several", "<a><id>i-1</id><id>i-2</id></a>", "id",
	  "i-1", 0 },
	{ "empty text", "<output></output>", "output", "", 0 },
	{ "nested: the inner one", "<s><name>x</name></s><name>y</name>",
	  "name", "x", 0 },
	{ "no opening", "<a>b</a>", "id", NULL, 0 },
	{ "no closing", "<id>i-1", "id", NULL, 0 },
	{ "closing past the length", "<id>i-1</id>", "id", NULL, 9 },
	{ "opening past the length", "xx<id>i-1</id>", "id", NULL, 4 },
	{ "a closing before the opening only", "</id><id>", "id", NULL, 0 },
	{ "entities stay", "<k>a&amp;b</k>", "k", "a&amp;b", 0 },
};

static const struct {
	const char *s, *what;
	size_t n;
} ccases[] = {
	{ "<instanceId>a</instanceId><instanceId>b</instanceId>",
	  "<instanceId>", 2 },
	{ "aaaa", "aa", 2 },
	{ "", "x", 0 },
	{ "x", "", 0 },
};

static const struct {
	const char *name, *text, *err;
	double md5, wr, rd;
} jcases[] = {
	{ "three jobs", "md5 10.00 12.00\nwrite 12.00 12.50\nread 12.50 "
		       "12.75\n",
	  NULL, 128, 32, 64 },
	{ "any order, other lines ignored, no final newline",
	  "hello\nread 1 2\nmd5 1 2\n\nwrite 3 5", NULL, 256, 8, 16 },
	{ "shorter than the clock: 10 ms", "md5 1.00 1.00\nwrite 1 1\nread "
					   "1 1.001\n",
	  NULL, 25600, 1600, 1600 },
	{ "a job missing", "md5 1 2\nwrite 1 2\n", "read did not finish", 0,
	  0, 0 },
	{ "a job twice", "md5 1 2\nmd5 1 2\nwrite 1 2\nread 1 2\n",
	  "md5 twice", 0, 0, 0 },
	{ "ends before it starts", "md5 2 1\nwrite 1 2\nread 1 2\n",
	  "md5: bad times", 0, 0, 0 },
	{ "nan", "md5 nan 1\nwrite 1 2\nread 1 2\n", "md5: bad times", 0, 0,
	  0 },
	{ "inf", "md5 1 inf\nwrite 1 2\nread 1 2\n", "md5: bad times", 0, 0,
	  0 },
	{ "a sign", "md5 1 2\nwrite -1 2\nread 1 2\n", "write: bad times", 0,
	  0, 0 },
	{ "an exponent", "md5 1 2\nwrite 1 2\nread 1 1e9\n",
	  "read: bad times", 0, 0, 0 },
	{ "two dots", "md5 1.2.3 4\nwrite 1 2\nread 1 2\n", "md5: bad times",
	  0, 0, 0 },
	{ "a fourth field: not a job line", "md5 1 2 3\nwrite 1 2\nread 1 2\n",
	  "md5 did not finish", 0, 0, 0 },
	{ "a name that only starts like one", "md55 1 2\nwrite 1 2\nread 1 "
					      "2\n",
	  "md5 did not finish", 0, 0, 0 },
	{ "nothing", "", "md5 did not finish", 0, 0, 0 },
};

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

int main(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(xcases); i++) {
		size_t len = xcases[i].cut ? xcases[i].cut
					   : strlen(xcases[i].xml);
		/* a copy of just len bytes, so reading past it is caught */
		char *x = spx_malloc(len ? len : 1);
		char *got;

		memcpy(x, xcases[i].xml, len);
		got = spx_vmout_xml_text(x, len, xcases[i].tag);
		T_STR(got, xcases[i].want, "xml: %s", xcases[i].name);
		free(got);
		free(x);
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(ccases); i++)
		T_INT(spx_vmout_count(ccases[i].s, strlen(ccases[i].s),
				      ccases[i].what),
		      ccases[i].n, "count '%s' in '%s'", ccases[i].what,
		      ccases[i].s);
	for (size_t i = 0; i < SPX_ARRAY_SIZE(jcases); i++) {
		size_t len = strlen(jcases[i].text);
		char *x = spx_malloc(len ? len : 1);
		double out[SPX_VMOUT_NJOBS] = { 0 };
		int rc;

		memcpy(x, jcases[i].text, len);
		rc = spx_vmout_jobs(x, len, 256, 16, out);
		if (!jcases[i].err) {
			T_OK(rc == 0 && near(out[0], jcases[i].md5) &&
				     near(out[1], jcases[i].wr) &&
				     near(out[2], jcases[i].rd),
			     "jobs: %s (rc %d: %g %g %g)", jcases[i].name, rc,
			     out[0], out[1], out[2]);
		} else {
			T_OK(rc < 0 && spx_errstatus() == SPX_FAIL &&
				     strstr(spx_errmsg(), jcases[i].err),
			     "jobs refused: %s (%s)", jcases[i].name,
			     rc < 0 ? spx_errmsg() : "accepted");
		}
		spx_error_clear();
		free(x);
	}
	return t_done();
}
