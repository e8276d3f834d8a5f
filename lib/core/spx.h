/* spx.h: the core every file of lib/ and bin/ includes first. */
#ifndef SPX_H
#define SPX_H

/* The system headers come before banned.h so that its macros cannot clash
 * with their declarations; a later #include of any of them is a no-op. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "log.h"
#include "buf.h"
#include "kv.h"

#define SPX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#include "banned.h"

#endif
