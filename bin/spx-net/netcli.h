/* The verbs of spx-net that live outside main.c. */
#ifndef SPX_NETCLI_H
#define SPX_NETCLI_H

#include "cmd.h"

/* spx-net serve (serve.c): the bridge, dnsmasq and the metadata server
 * of a node whose instances are on a bridge. */
int cmd_serve(const struct spx_args *a);

#endif
