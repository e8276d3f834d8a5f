/* spx-vol: block volumes from the shell. Each verb is a thin call into
 * lib/vol (the same code the EBS API will run), or, for the data, a
 * libnbd client of the nbdkit plugin that serves them. */
#include "spx.h"

#include "conf/conf.h"
#include "file.h"
#include "node/node.h"
#include "vol/snap.h"
#include "volcli.h"

int volcli_open(const struct spx_args *a, struct volcli *c)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	char *dir;
	int rc;

	memset(c, 0, sizeof(*c));
	spx_node_locate(spx_arg(a, "root"), &loc);
	if (spx_conf_load(loc.conf, loc.root, &conf) < 0) {
		spx_node_loc_release(&loc);
		return volcli_fail(a);
	}
	dir = spx_path_join(conf.paths.data, "vol");
	rc = spx_vol_store_open(dir, SPX_VOL_CREATE, &c->vs);
	if (rc == 0) {
		c->run = spx_strdup(conf.paths.run);
		c->threads = spx_conf_self(&conf)->ebs.default_threads;
		c->server = spx_strdup(spx_conf_self(&conf)->ebs.server);
		c->root = spx_strdup(loc.root);
		c->conf = spx_strdup(loc.conf);
	}
	free(dir);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc < 0 ? volcli_fail(a) : 0;
}

int volcli_snaps(const struct spx_args *a, struct volcli *c)
{
	int rc = volcli_open(a, c);

	if (rc)
		return rc;
	if (spx_snap_store_conf(c->conf, c->root, c->vs, &c->obj, &c->ss) < 0) {
		rc = volcli_fail(a);
		volcli_close(c);
	}
	return rc;
}

void volcli_close(struct volcli *c)
{
	spx_snap_store_close(c->ss);
	spx_obj_close(c->obj);
	spx_vol_store_close(c->vs);
	free(c->run);
	free(c->server);
	free(c->root);
	free(c->conf);
	memset(c, 0, sizeof(*c));
}

int volcli_fail(const struct spx_args *a)
{
	spx_warn("%s: %s", a->verb->name, spx_errmsg());
	return spx_errstatus();
}

char *volcli_socket(const struct spx_args *a, const struct volcli *c)
{
	const char *s = spx_arg(a, "socket");

	return s ? spx_strdup(s) : spx_path_join(c->run, "vol.sock");
}

static const struct spx_opt root_opts[] = { SPX_OPT_ROOT, { 0 } };
static const struct spx_opt create_opts[] = {
	SPX_OPT_ROOT,
	{ "size", 's', "SIZE", "the size, with a suffix (30G; required)" },
	{ "id", 0, "ID", "this volume id instead of a new one" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};
static const struct spx_opt json_opts[] = {
	SPX_OPT_ROOT,
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};
#define OPT_SOCKET                                                         \
	{ "socket", 'S', "PATH",                                           \
	  "a running spx-vol serve's socket (default: run/vol.sock for "   \
	  "serve; for cat and write, a private server)" }
static const struct spx_opt serve_opts[] = {
	SPX_OPT_ROOT,
	OPT_SOCKET,
	{ "server", 0, "spx|nbdkit",
	  "the NBD server: spx-nbd, an event loop a connection, or nbdkit "
	  "(default: ebs.server, spx)" },
	{ "threads", 't', "N",
	  "nbdkit's threads (default: ebs.default_threads, 16)" },
	{ "notify-fd", 0, "FD", "write a newline to FD once serving" },
	{ "pidfile", 0, "FILE", "hold a lock on FILE and write the pid in it" },
	{ "log", 0, "FILE", "append messages (nbdkit's too) to FILE" },
	{ 0 },
};
static const struct spx_opt data_opts[] = {
	SPX_OPT_ROOT,
	OPT_SOCKET,
	{ 0 },
};

static const struct spx_opt snapshot_opts[] = {
	SPX_OPT_ROOT,
	{ "id", 0, "SNAP[,SNAP...]",
	  "this snapshot id instead of a new one, one per volume in their "
	  "order (done already when stored)" },
	{ "parent", 0, "SNAP",
	  "count from this snapshot (default: the one the volume was last "
	  "snapshotted or restored from)" },
	{ "full", 0, NULL, "read every chunk that holds data, not only the "
			   "changed ones" },
	{ "progress", 0, NULL,
	  "report progress on stderr also when it is not a terminal" },
	{ "json", 'j', NULL, "print JSON, with what was read and stored" },
	{ 0 },
};
static const struct spx_opt copy_opts[] = {
	SPX_OPT_ROOT,
	{ "id", 0, "SNAP",
	  "the copy's id instead of a new one (done already when it is "
	  "stored)" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};
static const struct spx_opt snapshots_opts[] = {
	SPX_OPT_ROOT,
	{ "volume", 0, "ID", "only the snapshots of this volume" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};
static const struct spx_opt gc_opts[] = {
	SPX_OPT_ROOT,
	{ "wait", 0, NULL,
	  "wait for snapshots being taken instead of giving up" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};
static const struct spx_opt restore_opts[] = {
	SPX_OPT_ROOT,
	{ "id", 0, "ID", "this volume id instead of a new one" },
	{ "size", 's', "SIZE", "the volume's size (default and least: the "
			       "snapshot's)" },
	{ "eager", 0, NULL, "fetch every chunk before returning" },
	{ "progress", 0, NULL,
	  "report progress on stderr also when it is not a terminal" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};

static const struct spx_opt import_opts[] = {
	SPX_OPT_ROOT,
	OPT_SOCKET,
	{ "format", 'f', "FORMAT",
	  "raw or qcow2 (default: qcow2 when FILE has its header)" },
	{ "id", 0, "ID", "this volume id instead of a new one" },
	{ "size", 's', "SIZE",
	  "the volume's size (default and least: the image's)" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};
static const struct spx_opt export_opts[] = {
	SPX_OPT_ROOT,
	OPT_SOCKET,
	{ "format", 'f', "FORMAT", "raw (default) or qcow2" },
	{ 0 },
};

static const struct spx_verb verbs[] = {
	{ "create", cmd_create, create_opts, "",
	  "make a thin-provisioned volume of --size; print its id", 0, 0 },
	{ "rm", cmd_rm, root_opts, "ID", "remove a volume and its data", 1, 1 },
	{ "ls", cmd_ls, json_opts, "",
	  "list the volumes: ID SIZE ALLOCATED CREATED", 0, 0 },
	{ "info", cmd_info, json_opts, "ID",
	  "show a volume: size, bytes allocated on disk, creation, its last "
	  "snapshot, what it still fetches from the one it was restored from",
	  1, 1 },
	{ "resize", cmd_resize, json_opts, "ID SIZE",
	  "grow a volume to SIZE (a volume never shrinks)", 2, 2 },
	{ "serve", cmd_serve, serve_opts, "",
	  "serve every volume over NBD on a unix socket (runs spx-nbd, or "
	  "nbdkit; one export per volume id)", 0, 0 },
	{ "cat", cmd_cat, data_opts, "ID",
	  "write a volume's bytes to stdout (through NBD)", 1, 1 },
	{ "write", cmd_write, data_opts, "ID",
	  "write stdin to a volume from its start, then flush (through NBD)",
	  1, 1 },
	{ "import", cmd_import, import_opts, "FILE",
	  "make a volume from a raw or qcow2 image (qemu-img, through NBD); "
	  "print its id",
	  1, 1 },
	{ "export", cmd_export, export_opts, "ID FILE",
	  "write a volume to a new raw or qcow2 image FILE", 2, 2 },
	{ "snapshot", cmd_snapshot, snapshot_opts, "ID...",
	  "snapshot volumes into the object store (several: at one moment), "
	  "storing only the chunks the store lacks; print the snapshots' ids",
	  1, SPX_SNAP_SET_MAX },
	{ "snapshot-copy", cmd_snapshot_copy, copy_opts, "SNAP",
	  "copy a snapshot (a new manifest naming the same chunks: nothing is "
	  "uploaded); print the copy's id",
	  1, 1 },
	{ "snapshots", cmd_snapshots, snapshots_opts, "[SNAP...]",
	  "list the snapshots: ID VOLUME SIZE CHUNKS PARENT CREATED", 0, -1 },
	{ "snapshot-rm", cmd_snapshot_rm, root_opts, "SNAP",
	  "remove a snapshot; the chunks no other one names are collected", 1,
	  1 },
	{ "snapshot-gc", cmd_snapshot_gc, gc_opts, "",
	  "remove the chunks no snapshot names", 0, 0 },
	{ "restore", cmd_restore, restore_opts, "SNAP",
	  "make a new volume from a snapshot, usable at once (its chunks are "
	  "fetched as they are used); print its id",
	  1, 1 },
	{ 0 },
};

int main(int argc, char **argv)
{
	static const struct spx_tool tool = {
		"spx-vol",
		"spx-vol: block volumes, served over NBD.",
		verbs, NULL
	};

	return spx_cmd_main(&tool, argc, argv);
}
