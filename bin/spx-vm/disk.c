/* spx-vm attach | detach | resize: volumes hot-plugged into a running
 * guest as virtio-blk disks, each on a free PCIe root port (hp0..), from
 * the node's NBD server, and a disk grown live. QEMU names them after the
 * volume: NBD node n0-VOL (n1-VOL after a resize), raw node d-VOL over
 * it, device disk-VOL; the guest sees the volume id (without '-') as the
 * disk's serial. */
#include "spx.h"

#include <jansson.h>

#include "file.h"
#include "proc.h"
#include "vm/qmp.h"
#include "vm/runas.h"
#include "vm/vm.h"
#include "vol/grant.h"
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

/* blockdev-del node; one that is not there is no error. */
static int del_node(struct spx_qmp *q, const char *node)
{
	json_t *args = json_pack("{s:s}", "node-name", node);
	int rc = spx_qmp_exec(q, "blockdev-del", args, QMP_MS, NULL);

	json_decref(args);
	if (rc < 0 && spx_errstatus() == SPX_NO && strstr(spx_errmsg(), "find")) {
		spx_error_clear();
		rc = 0;
	}
	return rc;
}

/* The block nodes of a disk of vol whose raw node is raw: raw first,
 * then its NBD node, whichever it is. A disk plugged in before disks
 * had a raw node has its NBD node named raw, and none other. */
static int del_nodes(struct spx_qmp *q, const char *raw, const char *vol)
{
	char nbd[SPX_VM_NODE_SIZE];
	int rc = del_node(q, raw);

	for (unsigned g = 0; rc == 0 && g < 2; g++) {
		spx_vm_nbd_name(vol, g, nbd);
		rc = del_node(q, nbd);
	}
	return rc;
}

/* A step failed: delete node (with vol, all of vol's disk nodes under
 * raw node node) again, keeping the failure as the error to report. */
static void undo(struct spx_qmp *q, const char *node, const char *vol,
		 const char *verb)
{
	char *why = spx_strdup(spx_errmsg());
	int status = spx_errstatus();

	if ((vol ? del_nodes(q, node, vol) : del_node(q, node)) < 0)
		spx_warn("%s: rollback: %s", verb, spx_errmsg());
	spx_error(status, "%s", why);
	free(why);
}

static bool duplicate(int rc)
{
	return rc < 0 && spx_errstatus() == SPX_NO &&
	       strstr(spx_errmsg(), "Duplicate");
}

/* blockdev-add args (taken). */
static int add_node(struct spx_qmp *q, json_t *args)
{
	int rc = spx_qmp_exec(q, "blockdev-add", args, QMP_MS, NULL);

	json_decref(args);
	return rc;
}

/* Plug volume vol into the guest q drives, from the NBD socket sock: an
 * NBD node n0-VOL, a raw node d-VOL over it (vm.h says why two) and a
 * virtio disk disk-VOL on the first free hot-plug port, rolled back when
 * the disk cannot be added. A disk there already is fine (*already set):
 * attach is idempotent, as the agent needs. */
int vm_plug(struct spx_qmp *q, const char *sock, const char *vol,
	    bool *already)
{
	char node[SPX_VM_NAME_MAX + 3], dev[SPX_VM_NAME_MAX + 6];
	char serial[SPX_VM_SERIAL_SIZE], bus[16], nbd[SPX_VM_NODE_SIZE];
	json_t *args;
	unsigned i;
	int rc;
	bool made;

	*already = false;
	snprintf(node, sizeof(node), "d-%s", vol);
	snprintf(dev, sizeof(dev), "disk-%s", vol);
	spx_vm_nbd_name(vol, 0, nbd);
	/* Nodes there already: their disk may be too (asked again), or a
	 * rollback failed; either way the disk is what counts. */
	rc = add_node(q, spx_vm_nbd_node(nbd, sock, vol));
	if (rc < 0 && !duplicate(rc))
		return -1;
	made = rc == 0;
	spx_error_clear();
	rc = add_node(q, spx_vm_raw_node(node, nbd));
	if (rc < 0 && !duplicate(rc)) {
		if (made)
			undo(q, nbd, NULL, "attach");
		return -1;
	}
	spx_error_clear();
	/* The raw node was there, over n1 since a resize: the n0 made now
	 * is not its. */
	if (rc < 0 && made && del_node(q, nbd) < 0) {
		spx_warn("attach: %s", spx_errmsg());
		spx_error_clear();
	}
	/* The first free port takes it; a port in use refuses. */
	spx_vm_serial(vol, serial);
	for (i = 0; i < SPX_VM_HOTPLUG_SLOTS; i++) {
		snprintf(bus, sizeof(bus), "hp%u", i);
		/* Slot 0 named: a root port has no other, and QEMU would
		 * put a second disk at 1.0 there, where no guest looks. */
		args = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
				 "driver", "virtio-blk-pci", "id", dev, "drive",
				 node, "bus", bus, "addr", "0", "iothread",
				 "io0", "serial", serial);
		rc = spx_qmp_exec(q, "device_add", args, QMP_MS, NULL);
		json_decref(args);
		if (rc < 0 && spx_errstatus() == SPX_NO &&
		    strstr(spx_errmsg(), "Duplicate device ID")) {
			spx_error_clear();
			*already = true;
			return 0;
		}
		if (rc == 0 || spx_errstatus() != SPX_NO)
			break;
	}
	if (rc == 0)
		return 0;
	/* Roll back: no block node stays without its disk. */
	if (i == SPX_VM_HOTPLUG_SLOTS)
		spx_error(SPX_NO, "no free slot for '%s' (%d at most)", vol,
			  SPX_VM_HOTPLUG_SLOTS);
	undo(q, node, vol, "attach");
	return -1;
}

/* A guest whose QEMU runs as a user of its own (runas.h) may open vol
 * over sock once granted (grant.h): before blockdev-add, which QEMU
 * runs as that user. *fresh: the grant was not there before. */
static int grant(const struct disk *d, const char *sock, const char *vol,
		 bool *fresh)
{
	char *dir = spx_vol_grants_dir(sock);
	struct spx_vol_grant g = { 0 }, old;
	uint32_t uid;
	int rc = spx_vm_user_read(d->g.dir, &uid);

	*fresh = false;
	if (rc <= 0)
		goto out;
	g.uid = uid;
	snprintf(g.guest, sizeof(g.guest), "%s", d->g.name);
	rc = spx_vol_grant_read(dir, vol, &old);
	spx_error_clear();
	*fresh = !(rc > 0 && old.uid == g.uid && !strcmp(old.guest, g.guest));
	rc = spx_vol_grant_write(dir, vol, &g);
out:
	free(dir);
	return rc < 0 ? -1 : 0;
}

static void ungrant(const struct disk *d, const char *sock, const char *vol)
{
	char *dir = spx_vol_grants_dir(sock);

	if (spx_vol_grant_drop(dir, vol, d->g.name) < 0)
		spx_warn("%s: %s", vol, spx_errmsg());
	free(dir);
}

int cmd_attach(const struct spx_args *a)
{
	const char *vol = a->argv[1], *sockopt = spx_arg(a, "socket");
	struct disk d;
	char serial[SPX_VM_SERIAL_SIZE], *sock = NULL;
	bool already, fresh;
	int rc = disk_open(a, &d);

	if (rc)
		goto out;
	sock = sockopt ? spx_path_abs(sockopt) : spx_strdup(d.spec.nbd_socket);
	if (grant(&d, sock, vol, &fresh) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	if (vm_plug(d.g.q, sock, vol, &already) < 0) {
		rc = vmcli_fail(a);
		if (fresh)
			ungrant(&d, sock, vol);
		goto out;
	}
	if (already)
		printf("%s: %s is attached already\n", a->argv[0], vol);
	else
		printf("%s: %s attached (serial %s)\n", a->argv[0], vol,
		       (spx_vm_serial(vol, serial), serial));
	rc = SPX_OK;
out:
	free(sock);
	disk_close(&d);
	return rc;
}

/* Is QEMU's device id there? 1, 0, or -1 (an error recorded). */
static int has_device(struct spx_qmp *q, const char *id)
{
	char path[SPX_VM_NAME_MAX + 40];
	json_t *args;
	int rc;

	snprintf(path, sizeof(path), "/machine/peripheral/%s", id);
	args = json_pack("{s:s, s:s}", "path", path, "property", "type");
	rc = spx_qmp_exec(q, "qom-get", args, QMP_MS, NULL);
	json_decref(args);
	if (rc == 0)
		return 1;
	if (spx_errstatus() == SPX_NO && strstr(spx_errmsg(), "not found")) {
		spx_error_clear();
		return 0;
	}
	return -1;
}

int cmd_detach(const struct spx_args *a)
{
	const char *vol = a->argv[1];
	struct disk d;
	json_t *args = NULL, *data = NULL;
	long long secs, end;
	bool was = true;
	int rc = disk_open(a, &d), has;

	if (rc)
		goto out;
	if (spx_arg_int(a, "timeout", 1, 3600, 30, &secs) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	/* The guest is asked to let go (ACPI); the device goes when it has.
	 * Asked again (a detach that timed out), the request stands. */
	args = json_pack("{s:s}", "id", d.dev);
	rc = spx_qmp_exec(d.g.q, "device_del", args, QMP_MS, NULL);
	json_decref(args);
	args = NULL;
	if (rc < 0 && strstr(spx_errmsg(), "not found")) {
		was = false;
	} else if (rc < 0 && !strstr(spx_errmsg(), "process of unplug")) {
		rc = vmcli_fail(a);
		goto out;
	}
	spx_error_clear();
	end = spx_mono_ms() + secs * 1000;
	/* The event says when, but one sent while no one listened is lost:
	 * the device is looked for after each wait. */
	while (was && (has = has_device(d.g.q, d.dev)) != 0) {
		long long left = end - spx_mono_ms();

		if (has < 0) {
			rc = vmcli_fail(a);
			goto out;
		}
		if (left <= 0) {
			spx_error(SPX_FAIL,
				  "the guest did not let '%s' go in %lld s; it "
				  "goes when the guest does",
				  vol, secs);
			rc = vmcli_fail(a);
			goto out;
		}
		if (spx_qmp_wait_event(d.g.q, "DEVICE_DELETED",
				       left < 500 ? (int)left : 500, &data) == 0)
			json_decref(data);
		data = NULL;
		spx_error_clear();
	}
	/* Then its block nodes (absent when the disk never was). */
	if (del_nodes(d.g.q, d.node, vol) < 0) {
		rc = vmcli_fail(a);
		goto out;
	}
	/* Its QEMU may not open the volume again. */
	ungrant(&d, d.spec.nbd_socket, vol);
	printf("%s: %s %s\n", a->argv[0], vol,
	       was ? "detached" : "was not attached");
	rc = SPX_OK;
out:
	json_decref(args);
	disk_close(&d);
	return rc;
}

/* What query-named-block-nodes says of node: its driver and size; 0, or
 * 1 when there is no such node. */
static int node_info(const json_t *nodes, const char *node, const char **drv,
		     json_int_t *size)
{
	const json_t *n;
	const char *name;
	size_t i;

	json_array_foreach(nodes, i, n) {
		name = json_string_value(json_object_get(n, "node-name"));
		if (!name || strcmp(name, node))
			continue;
		*drv = json_string_value(json_object_get(n, "drv"));
		if (!*drv)
			*drv = "";
		*size = json_integer_value(json_object_get(
			json_object_get(n, "image"), "virtual-size"));
		return 0;
	}
	return 1;
}

static int query_nodes(struct spx_qmp *q, json_t **nodes)
{
	json_t *args = json_pack("{s:b}", "flat", 1);
	int rc = spx_qmp_exec(q, "query-named-block-nodes", args, QMP_MS,
			      nodes);

	json_decref(args);
	if (rc == 0 && !json_is_array(*nodes)) {
		json_decref(*nodes);
		*nodes = NULL;
		return spx_error(SPX_FAIL,
				 "query-named-block-nodes: not a list");
	}
	return rc;
}

/* The NBD node (0 or 1) under the raw node of vol, in *gen. One that a
 * resize stopped half way left beside it goes: the one in use refuses
 * blockdev-del (it is busy), the other is deleted. */
static int nbd_gen(struct spx_qmp *q, const json_t *nodes, const char *vol,
		   unsigned *gen)
{
	char nbd[SPX_VM_NODE_SIZE];
	const char *drv;
	json_int_t size;
	bool has[2];

	for (unsigned g = 0; g < 2; g++) {
		spx_vm_nbd_name(vol, g, nbd);
		has[g] = node_info(nodes, nbd, &drv, &size) == 0;
	}
	if (!has[0] && !has[1])
		return spx_error(SPX_FAIL,
				 "no NBD node under the disk of '%s'", vol);
	*gen = has[0] ? 0 : 1;
	if (has[0] && has[1]) {
		spx_vm_nbd_name(vol, 1, nbd);
		if (del_node(q, nbd) < 0) {
			if (spx_errstatus() != SPX_NO)
				return -1;
			*gen = 1;
		}
		spx_error_clear();
	}
	return 0;
}

/* blockdev-reopen the raw node raw over file. */
static int reopen(struct spx_qmp *q, const char *raw, const char *file)
{
	json_t *args = json_pack("{s:[o]}", "options",
				 spx_vm_raw_node(raw, file));
	int rc = spx_qmp_exec(q, "blockdev-reopen", args, QMP_MS, NULL);

	json_decref(args);
	return rc;
}

int cmd_resize(const struct spx_args *a)
{
	const char *vol = a->argv[1], *raw, *drv = "";
	char cur[SPX_VM_NODE_SIZE], next[SPX_VM_NODE_SIZE];
	struct disk d;
	json_t *nodes = NULL, *args;
	json_int_t before = 0, size = 0;
	unsigned gen = 0;
	int rc = disk_open(a, &d);

	if (rc)
		goto out;
	raw = d.spec.root && !strcmp(vol, d.spec.root) ? "root" : d.node;
	if (query_nodes(d.g.q, &nodes) < 0)
		goto fail;
	if (node_info(nodes, raw, &drv, &before)) {
		spx_error(SPX_NO, "'%s' is not a disk of %s", vol, a->argv[0]);
		goto fail;
	}
	if (strcmp(drv, "raw")) {
		spx_error(SPX_FAIL,
			  "the disk of '%s' was plugged in before spx-vm "
			  "could grow disks live; it takes the volume's size "
			  "when the guest starts again",
			  vol);
		goto fail;
	}
	if (nbd_gen(d.g.q, nodes, vol, &gen) < 0)
		goto fail;
	spx_vm_nbd_name(vol, gen, cur);
	spx_vm_nbd_name(vol, gen + 1, next);
	/* A fresh connection, as the guest's user (its grant stands), sees
	 * the volume's size now. */
	if (add_node(d.g.q, spx_vm_nbd_node(next, d.spec.nbd_socket, vol)) < 0)
		goto fail;
	/* QEMU drains the disk's requests; then the raw node reads and
	 * writes through the new connection. */
	if (reopen(d.g.q, raw, next) < 0) {
		undo(d.g.q, next, NULL, "resize");
		goto fail;
	}
	json_decref(nodes);
	nodes = NULL;
	if (query_nodes(d.g.q, &nodes) < 0)
		goto fail;
	if (node_info(nodes, next, &drv, &size)) {
		spx_error(SPX_FAIL, "the new node of '%s' is gone", vol);
		goto fail;
	}
	/* The raw node takes its new file's size, and the device tells the
	 * guest (a virtio configuration change). */
	args = json_pack("{s:s, s:I}", "node-name", raw, "size", size);
	rc = spx_qmp_exec(d.g.q, "block_resize", args, QMP_MS, NULL);
	json_decref(args);
	if (rc < 0 || del_node(d.g.q, cur) < 0)
		goto fail;
	if (size == before)
		printf("%s: %s is %lld bytes already\n", a->argv[0], vol,
		       (long long)size);
	else
		printf("%s: %s grown to %lld bytes\n", a->argv[0], vol,
		       (long long)size);
	rc = SPX_OK;
	goto out;
fail:
	rc = vmcli_fail(a);
out:
	json_decref(nodes);
	disk_close(&d);
	return rc;
}
