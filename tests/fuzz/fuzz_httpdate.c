/* fuzz_httpdate: HTTP dates, Range and conditional headers, which arrive
 * from clients verbatim. The first 8 bytes give an object size. */
#include "spx.h"

#include "http/httpdate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t objsize = 0;
	struct spx_range r;
	struct spx_cond c;
	char *s;
	time_t t;

	if (size < 8)
		return 0;
	memcpy(&objsize, data, 8);
	objsize %= (uint64_t)1 << 40;
	s = spx_strndup((const char *)data + 8, size - 8);
	if (spx_range_parse(s, objsize, &r) == SPX_RANGE_OK &&
	    (r.first > r.last || r.last >= objsize))
		abort();
	if (spx_http_date_parse(s, &t) == 0) {
		char back[64];

		spx_http_date(t, back, sizeof(back));
	}
	c = (struct spx_cond){ s, s, s, s };
	spx_cond_eval(&c, s, 0, size & 1);
	free(s);
	return 0;
}
