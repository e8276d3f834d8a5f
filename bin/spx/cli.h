/* The verbs of the spx dispatcher, one file each. */
#ifndef SPX_BIN_SPX_H
#define SPX_BIN_SPX_H

#include "cmd.h"

int cmd_admin_init(const struct spx_args *a);
int cmd_admin_profile(const struct spx_args *a);
int cmd_admin_schema(const struct spx_args *a);
int cmd_admin_account_create(const struct spx_args *a);
int cmd_admin_images_import(const struct spx_args *a);
int cmd_admin_images_ls(const struct spx_args *a);
int cmd_admin_images_rm(const struct spx_args *a);
int cmd_up(const struct spx_args *a);
int cmd_down(const struct spx_args *a);
int cmd_status(const struct spx_args *a);
int cmd_get_nodes(const struct spx_args *a);
int cmd_get_instance_types(const struct spx_args *a);
int cmd_get_vms(const struct spx_args *a);
int cmd_agent(const struct spx_args *a);

/* Load the node's configuration; on failure print why and return the exit
 * status (non-zero). */
struct spx_conf;
struct spx_node_loc;
int spx_cli_load(const struct spx_args *a, struct spx_node_loc *loc,
		 struct spx_conf *conf);

#endif
