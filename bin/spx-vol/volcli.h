/* The verbs of spx-vol and what they share. */
#ifndef SPX_VOLCLI_H
#define SPX_VOLCLI_H

#include "cmd.h"
#include "vol/vol.h"

struct volcli {
	struct spx_vol_store *vs;
	char *run;	/* the node's run directory (its sockets) */
	int threads;	/* ebs.default_threads: serve's nbdkit threads */
};

/* Open the volume store of the node (--root, $SPX_ROOT, the system
 * layout); on failure print why and return the exit status. */
int volcli_open(const struct spx_args *a, struct volcli *c);
void volcli_close(struct volcli *c);
/* Print "spx-vol: VERB: message" and return the recorded exit status. */
int volcli_fail(const struct spx_args *a);
/* The socket spx-vol serve listens on: --socket, else RUN/vol.sock
 * (caller frees). */
char *volcli_socket(const struct spx_args *a, const struct volcli *c);

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

#endif
