/* restype.c: the taggable resource types (see tags.h). A new kind of
 * resource adds its row here. */
#include "spx.h"

#include "ec2/tags.h"

const struct spx_ec2_restype *const spx_ec2_restypes[] = {
	NULL,
};
