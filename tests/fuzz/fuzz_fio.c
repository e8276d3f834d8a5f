/* fuzz_fio: fio's JSON report (spx-bench block reads it from a file fio
 * wrote). Any input parses or is refused; what parses holds figures a
 * report can hold: finite, not negative, a direction present only with
 * bytes moved, at least one job and no more than the bound. */
#include "spx.h"

#include <math.h>

#include "bench/fio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct spx_fio_dir *d)
{
	if (!isfinite(d->iops) || d->iops < 0 || !isfinite(d->mibs) ||
	    d->mibs < 0 || !isfinite(d->p99_ms) || d->p99_ms < 0 ||
	    (d->present != (d->bytes > 0)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_fio_result r;

	if (spx_fio_parse((const char *)data, size, &r) == 0) {
		if (r.njobs < 1 || r.njobs > SPX_FIO_MAX_JOBS || r.error < 0)
			abort();
		check(&r.read);
		check(&r.write);
	}
	spx_error_clear();
	return 0;
}
