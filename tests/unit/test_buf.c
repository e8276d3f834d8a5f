/* Unit tests for lib/core: buf, kv, err. */
#include "spx.h"

#include <stdlib.h>
#include <string.h>

#include "t.h"

int main(void)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_kvlist l = SPX_KVLIST_INIT;
	char *p;
	size_t n;

	T_STR(b.p, "", "an empty buffer is the empty string");
	spx_buf_addf(&b, "%s-%d", "ab", 12);
	spx_buf_addc(&b, '!');
	T_STR(b.p, "ab-12!", "addf and addc append");
	for (int i = 0; i < 1000; i++)
		spx_buf_adds(&b, "xyz");
	T_INT(b.len, 6 + 3000, "growth keeps the length");
	T_INT(b.p[b.len], 0, "the buffer stays NUL-terminated");
	spx_buf_setlen(&b, 2);
	T_STR(b.p, "ab", "setlen truncates");
	p = spx_buf_detach(&b, &n);
	T_INT(n, 2, "detach hands over the length");
	T_STR(b.p, "", "detach leaves the buffer empty");
	free(p);
	spx_buf_release(&b);

	spx_kv_add(&l, "Content-Type", "text/plain");
	spx_kv_add(&l, "x", "1");
	spx_kv_add(&l, "x", "2");
	T_STR(spx_kv_geti(&l, "content-type"), "text/plain",
	      "geti ignores case");
	T_OK(spx_kv_get(&l, "content-type") == NULL, "get is exact");
	T_STR(spx_kv_get(&l, "x"), "1", "get returns the first value");
	T_INT(spx_kv_count(&l, "x"), 2, "count counts repeats");
	spx_kv_free(&l);

	T_INT(spx_error(SPX_NO, "cannot find '%s'", "vol-1"), -1,
	      "spx_error returns -1");
	T_INT(spx_errstatus(), SPX_NO, "the status is recorded");
	spx_error_prefix("describe");
	T_STR(spx_errmsg(), "describe: cannot find 'vol-1'",
	      "prefix adds context");
	spx_error_clear();
	T_INT(spx_errstatus(), SPX_FAIL, "a cleared error reads as failure");
	return t_done();
}
