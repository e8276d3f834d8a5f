/* The verbs of spx-obj and what they share. */
#ifndef SPX_OBJCLI_H
#define SPX_OBJCLI_H

#include "cmd.h"
#include "obj/obj.h"

struct objcli {
	struct spx_obj *s;
	char *owner;	/* the node's account id */
	char *region;
	int life_day;	/* obj.lifecycle_day: seconds in a lifecycle day */
	struct spx_obj_bucket b; /* objcli_open_bucket's bucket */
};

/* Open the store of the node (--root, $SPX_ROOT, the system layout);
 * on failure print why and return the exit status. */
int objcli_open(const struct spx_args *a, struct objcli *c);
/* The same, and open bucket `name` into c->b (the handle the engine's
 * calls take); on failure the store is closed again. */
int objcli_open_bucket(const struct spx_args *a, struct objcli *c,
		       const char *name);
/* Open another bucket of the open store into *b. */
int objcli_bucket(const struct spx_args *a, struct objcli *c,
		  const char *name, struct spx_obj_bucket *b);
void objcli_close(struct objcli *c);
/* Print "spx-obj: VERB: message" and return the exit status of rc. */
int objcli_fail(const struct spx_args *a, int rc);

int cmd_mb(const struct spx_args *a);
int cmd_rb(const struct spx_args *a);
int cmd_ls(const struct spx_args *a);
int cmd_put(const struct spx_args *a);
int cmd_get(const struct spx_args *a);
int cmd_cat(const struct spx_args *a);
int cmd_cp(const struct spx_args *a);
int cmd_rm(const struct spx_args *a);
int cmd_stat(const struct spx_args *a);
int cmd_verify(const struct spx_args *a);
int cmd_heal(const struct spx_args *a);
int cmd_versioning(const struct spx_args *a);
int cmd_lifecycle(const struct spx_args *a);

#endif
