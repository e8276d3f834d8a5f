/* fuzz_vm_spec: a guest's spec.json (lib/vm/vm.h) as a crash or a hand
 * may leave it. What parses is safe to put on QEMU's command line. */
#include "spx.h"

#include "net/net.h"
#include "vm/vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_vm_spec s;

	if (spx_vm_spec_parse((const char *)data, size, &s) == 0) {
		if (!spx_vm_name_valid(s.name) || !spx_vm_name_valid(s.root) ||
		    s.nbd_socket[0] != '/' || strchr(s.nbd_socket, ',') ||
		    s.mem_mib < SPX_VM_MEM_MIN || s.cpus < 1 ||
		    s.ssh_port > 65535 ||
		    (*s.tap && (!spx_net_name_valid(s.tap) || s.ssh_port)))
			abort();
		char **argv = spx_vm_qemu_argv(&s, "/run/spx/vm/x",
					       "/usr/bin/spx-vm");

		spx_vm_argv_free(argv);
	}
	spx_vm_spec_release(&s);
	spx_error_clear();
	return 0;
}
