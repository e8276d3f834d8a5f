/* block.h: `spx-bench block`, the block volume path beside its limits
 * (block.c). */
#ifndef SPX_BENCH_BLOCK_H
#define SPX_BENCH_BLOCK_H

#include "cmd.h"

/* The verb; results is the results directory. */
int cmd_block(const struct spx_args *a, const char *results);

#endif
