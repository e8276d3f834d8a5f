/* vmbench.h: `spx-bench vm`, instances beside their limits (vm.c). */
#ifndef SPX_BENCH_VM_H
#define SPX_BENCH_VM_H

#include "cmd.h"

/* The verb; results is the results directory. */
int cmd_vm(const struct spx_args *a, const char *results);

#endif
