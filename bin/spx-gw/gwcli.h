/* The verbs of spx-gw. */
#ifndef SPX_GWCLI_H
#define SPX_GWCLI_H

#include "cmd.h"

struct spx_conf;
struct spx_node_loc;

int cmd_call(const struct spx_args *a);
/* Load the node's configuration; on failure print why and return the exit
 * status (non-zero). */
int gwcli_load(const struct spx_args *a, struct spx_node_loc *loc,
	       struct spx_conf *conf);

#endif
