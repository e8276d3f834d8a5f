/* vmout.c: see vmout.h. */
#include "spx.h"

#include <math.h>

#include "bench/vmout.h"

const char *const spx_vmout_job[SPX_VMOUT_NJOBS] = { "md5", "write",
						     "read" };

char *spx_vmout_xml_text(const char *xml, size_t len, const char *tag)
{
	char *open = spx_xprintf("<%s>", tag), *close = spx_xprintf("</%s>",
								   tag);
	const char *s = xml ? memmem(xml, len, open, strlen(open)) : NULL;
	const char *e = NULL;
	char *out = NULL;

	if (s) {
		s += strlen(open);
		e = memmem(s, len - (size_t)(s - xml), close, strlen(close));
	}
	if (s && e)
		out = spx_xprintf("%.*s", (int)(e - s), s);
	free(open);
	free(close);
	return out;
}

size_t spx_vmout_count(const char *s, size_t len, const char *what)
{
	size_t n = 0, w = strlen(what);
	const char *end = s + len;

	if (!s || !w)
		return 0;
	while (s < end && (s = memmem(s, (size_t)(end - s), what, w))) {
		n++;
		s += w;
	}
	return n;
}

/* A number of /proc/uptime: digits, optionally '.' and digits. */
static bool uptime_num(const char *p, size_t n, double *out)
{
	char buf[32], *end;
	size_t dots = 0;

	if (!n || n >= sizeof(buf))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '.')
			dots++;
		else if (p[i] < '0' || p[i] > '9')
			return false;
	}
	if (dots > 1 || p[0] == '.')
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	*out = strtod(buf, &end);
	return *end == '\0' && isfinite(*out);
}

int spx_vmout_jobs(const char *text, size_t len, uint64_t cpu_mib,
		   uint64_t disk_mib, double out[SPX_VMOUT_NJOBS])
{
	const char *p = text, *end = text + len;
	unsigned found = 0;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *f[3], *q = p;
		size_t fl[3], nf = 0;
		double a, z;

		while (q < le && nf < 3) {
			while (q < le && *q == ' ')
				q++;
			if (q == le)
				break;
			f[nf] = q;
			while (q < le && *q != ' ')
				q++;
			fl[nf] = (size_t)(q - f[nf]);
			nf++;
		}
		while (q < le && *q == ' ')
			q++;
		p = nl ? nl + 1 : NULL;
		if (nf != 3 || q != le)
			continue;
		for (int k = 0; k < SPX_VMOUT_NJOBS; k++) {
			if (fl[0] != strlen(spx_vmout_job[k]) ||
			    memcmp(f[0], spx_vmout_job[k], fl[0]))
				continue;
			if (found & (1u << k))
				return spx_error(SPX_FAIL, "busybox job %s "
							   "twice",
						 spx_vmout_job[k]);
			if (!uptime_num(f[1], fl[1], &a) ||
			    !uptime_num(f[2], fl[2], &z) || z < a)
				return spx_error(SPX_FAIL, "busybox job %s: "
							   "bad times",
						 spx_vmout_job[k]);
			/* /proc/uptime counts in 10 ms */
			out[k] = (double)(k ? disk_mib : cpu_mib) /
				 (z - a < 0.01 ? 0.01 : z - a);
			found |= 1u << k;
		}
	}
	for (int k = 0; k < SPX_VMOUT_NJOBS; k++)
		if (!(found & (1u << k)))
			return spx_error(SPX_FAIL, "busybox job %s did not "
						   "finish",
					 spx_vmout_job[k]);
	return 0;
}
