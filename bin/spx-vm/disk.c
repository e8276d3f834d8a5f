/* spx-vm attach | detach: volumes hot-plugged into a running guest as
 * virtio-blk disks, each on a free PCIe root port (hp0..), from the node's
 * NBD server. QEMU names them after the volume: block node d-VOL, device
 * disk-VOL; the guest sees the volume id (without '-') as the disk's
 * serial. */
#include "spx.h"

#include <jansson.h>

#include "file.h"
#include "vm/qmp.h"
#include "vm/vm.h"
#include "vmcli.h"

#define QMP_MS 5000

struct disk {
	struct guest g;
	struct spx_vm_spec spec;
	char node[SPX_VM_NAME_MAX + 3], dev[SPX_VM_NAME_MAX + 6];
};

static int disk_open(const struct spx_args *a, struct disk *d)
{
	const char *vol = a->argv[1];
	int rc;

	memset(&d->spec, 0, sizeof(d->spec));
	if (!spx_vm_name_valid(vol)) {
		memset(&d->g, 0, sizeof(d->g));
		d->g.lock = -1;
		spx_warn("%s: not a volume id: '%s'", a->verb->name, vol);
		return SPX_USAGE;
	}
	snprintf(d->node, sizeof(d->node), "d-%s", vol);
	snprintf(d->dev, sizeof(d->dev), "disk-%s", vol);
	rc = guest_open(a, GUEST_LOCK | GUEST_QMP, &d->g);
	if (rc == 0 && vmcli_spec(d->g.dir, &d->spec) < 0)
		rc = vmcli_fail(a);
	return rc;
}

static void disk_close(struct disk *d)
{
	spx_vm_spec_release(&d->spec);
	guest_close(&d->g);
}

int cmd_attach(const struct spx_args *a)
{
	const char *vol = a->argv[1], *sockopt = spx_arg(a, "socket");
	struct disk d;
	char serial[SPX_VM_SERIAL_SIZE], bus[16];
	json_t *args = NULL;
	char *sock = NULL;
	unsigned i;
	int rc = disk_open(a, &d);

	if (rc)
		goto out;
	sock = sockopt ? spx_path_abs(sockopt) : spx_strdup(d.spec.nbd_socket);
	args = spx_vm_nbd_node(d.node, sock, vol);
	if (spx_qmp_exec(d.g.q, "blockdev-add", args, QMP_MS, NULL) < 0) {
		if (spx_errstatus() == SPX_NO && strstr(spx_errmsg(), "Duplicate"))
			spx_error(SPX_NO, "'%s' is attached already", vol);
		rc = vmcli_fail(a);
		goto out;
	}
	json_decref(args);
	/* The first free port takes it; a port in use refuses. */
	spx_vm_serial(vol, serial);
	for (i = 0; i < SPX_VM_HOTPLUG_SLOTS; i++) {
		snprintf(bus, sizeof(bus), "hp%u", i);
		args = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "driver",
				 "virtio-blk-pci", "id", d.dev, "drive", d.node,
				 "bus", bus, "iothread", "io0", "serial",
				 serial);
		rc = spx_qmp_exec(d.g.q, "device_add", args, QMP_MS, NULL);
		json_decref(args);
		args = NULL;
		if (rc == 0 || spx_errstatus() != SPX_NO)
			break;
	}
	if (rc < 0) {
		/* Roll back: no block node stays without its disk. */
		if (i == SPX_VM_HOTPLUG_SLOTS)
			spx_error(SPX_NO, "no free slot for '%s' (%d at most)",
				  vol, SPX_VM_HOTPLUG_SLOTS);
		rc = vmcli_fail(a);
		args = json_pack("{s:s}", "node-name", d.node);
		if (spx_qmp_exec(d.g.q, "blockdev-del", args, QMP_MS, NULL) < 0)
			spx_warn("attach: rollback: %s", spx_errmsg());
		goto out;
	}
	printf("%s: %s attached (%s, serial %s)\n", a->argv[0], vol, bus,
	       serial);
	rc = SPX_OK;
out:
	json_decref(args);
	free(sock);
	disk_close(&d);
	return rc;
}

int cmd_detach(const struct spx_args *a)
{
	const char *vol = a->argv[1];
	struct disk d;
	json_t *args = NULL, *data = NULL;
	long long secs, end;
	int rc = disk_open(a, &d);

	if (rc)
		goto out;
	if (spx_arg_int(a, "timeout", 1, 3600, 30, &secs) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	/* The guest is asked to let go (ACPI); the device goes when it has. */
	args = json_pack("{s:s}", "id", d.dev);
	rc = spx_qmp_exec(d.g.q, "device_del", args, QMP_MS, NULL);
	json_decref(args);
	args = NULL;
	if (rc < 0 && strstr(spx_errmsg(), "not found")) {
		spx_error(SPX_NO, "'%s' is not attached", vol);
		rc = vmcli_fail(a);
		goto out;
	}
	if (rc < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	end = time(NULL) + secs;
	for (;;) {
		long long left = end - time(NULL);

		if (left <= 0 ||
		    spx_qmp_wait_event(d.g.q, "DEVICE_DELETED", (int)left * 1000,
				       &data) < 0) {
			spx_error(SPX_FAIL,
				  "the guest did not let '%s' go in %lld s; it "
				  "goes when the guest does",
				  vol, secs);
			rc = vmcli_fail(a);
			goto out;
		}
		bool ours = json_is_string(json_object_get(data, "device")) &&
			    !strcmp(json_string_value(json_object_get(data,
								      "device")),
				    d.dev);

		json_decref(data);
		data = NULL;
		if (ours)
			break;
	}
	args = json_pack("{s:s}", "node-name", d.node);
	if (spx_qmp_exec(d.g.q, "blockdev-del", args, QMP_MS, NULL) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	printf("%s: %s detached\n", a->argv[0], vol);
	rc = SPX_OK;
out:
	json_decref(args);
	disk_close(&d);
	return rc;
}
