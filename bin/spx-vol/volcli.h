/* The verbs of spx-vol and what they share. */
#ifndef SPX_VOLCLI_H
#define SPX_VOLCLI_H

#include "cmd.h"
#include "vol/vol.h"

struct spx_obj;
struct spx_snap_store;

struct volcli {
	struct spx_vol_store *vs;
	char *run;	/* the node's run directory (its sockets) */
	int threads;	/* ebs.default_threads: serve's nbdkit threads */
	char *server;	/* ebs.server: serve's NBD server, spx or nbdkit */
	char *root;	/* the node's root and configuration file */
	char *conf;
	struct spx_obj *obj;		/* volcli_snaps: the object store */
	struct spx_snap_store *ss;	/* and the snapshot store on it */
};

/* Open the volume store of the node (--root, $SPX_ROOT, the system
 * layout); on failure print why and return the exit status. */
int volcli_open(const struct spx_args *a, struct volcli *c);
/* volcli_open, and the node's snapshot store (in its object store). */
int volcli_snaps(const struct spx_args *a, struct volcli *c);
void volcli_close(struct volcli *c);
/* Print volumes as a table or JSON; detail adds the snapshot columns
 * (spx-vol info). */
int volcli_print_vols(struct volcli *c, const struct spx_vol_info *v,
		      size_t n, bool json, bool detail);
/* Print "spx-vol: VERB: message" and return the recorded exit status. */
int volcli_fail(const struct spx_args *a);
/* The socket spx-vol serve listens on: --socket, else RUN/vol.sock
 * (caller frees). */
char *volcli_socket(const struct spx_args *a, const struct volcli *c);

/* Is an NBD server answering on the unix socket path? 0 when one is,
 * else -1 with errno (ECONNREFUSED: a socket nobody serves). */
int volcli_probe(const char *path);
/* The nbdkit program: $SPX_NBDKIT, else nbdkit from PATH. */
const char *volcli_nbdkit(void);

int cmd_create(const struct spx_args *a);
int cmd_rm(const struct spx_args *a);
int cmd_ls(const struct spx_args *a);
int cmd_info(const struct spx_args *a);
int cmd_resize(const struct spx_args *a);
int cmd_serve(const struct spx_args *a);
int cmd_cat(const struct spx_args *a);
int cmd_write(const struct spx_args *a);
int cmd_snapshot_copy(const struct spx_args *a);
int cmd_snapshot(const struct spx_args *a);
int cmd_snapshots(const struct spx_args *a);
int cmd_snapshot_rm(const struct spx_args *a);
int cmd_snapshot_gc(const struct spx_args *a);
int cmd_restore(const struct spx_args *a);
int cmd_import(const struct spx_args *a);
int cmd_export(const struct spx_args *a);

#endif
