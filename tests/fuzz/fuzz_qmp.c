/* fuzz_qmp: a line from QEMU's QMP socket. Any input is classified or
 * refused; what is classified has the shape its kind promises. */
#include "spx.h"

#include "vm/qmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_qmp_msg m;

	if (spx_qmp_parse((const char *)data, size, &m) == 0) {
		json_t *e = json_object_get(m.obj, "error");

		if (!json_is_object(m.obj))
			abort();
		if (m.kind == SPX_QMP_ERROR &&
		    (!json_is_string(json_object_get(e, "class")) ||
		     !json_is_string(json_object_get(e, "desc"))))
			abort();
		if (m.kind == SPX_QMP_EVENT &&
		    !json_is_string(json_object_get(m.obj, "event")))
			abort();
		if (m.id < -1)
			abort();
		json_decref(m.obj);
	} else if (m.obj) {
		abort();
	}
	spx_error_clear();
	return 0;
}
