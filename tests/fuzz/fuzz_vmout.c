/* fuzz_vmout: what spx-bench vm reads from the gateway (EC2 XML) and
 * from a guest (its busybox jobs' output over SSH). Nothing is read past
 * the input; what parses is a figure a report can hold: finite and
 * positive. */
#include "spx.h"

#include <math.h>

#include "bench/vmout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	double out[SPX_VMOUT_NJOBS];
	char *t;

	t = spx_vmout_xml_text(s, size, "instanceId");
	if (t && strlen(t) > size)
		abort();
	free(t);
	if (spx_vmout_count(s, size, "<instanceId>") > size / 12)
		abort();
	if (spx_vmout_jobs(s, size, 256, 64, out) == 0)
		for (int k = 0; k < SPX_VMOUT_NJOBS; k++)
			if (!isfinite(out[k]) || out[k] <= 0)
				abort();
	spx_error_clear();
	return 0;
}
