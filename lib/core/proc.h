/* proc.h: running other programs from a tool. */
#ifndef SPX_PROC_H
#define SPX_PROC_H

#include "spx.h"

/* Start argv[0] (searched in PATH unless it has a '/') with argv. quiet
 * gives it /dev/null for stdin and stdout (stderr is always kept: it says
 * why something failed). It starts with no signal blocked and every
 * signal at its default action. Returns its pid, or -1 with an error
 * recorded (SPX_FAIL). */
pid_t spx_spawn(char *const argv[], bool quiet);
/* Start argv[0] as spx_spawn does, quiet, with its stderr into a pipe
 * whose read end (non-blocking, close-on-exec) goes to *errfd; the child
 * gets SIGTERM when this process dies (PR_SET_PDEATHSIG), so a killed
 * supervisor leaves no step running that its successor would start
 * again. */
pid_t spx_spawn_piped(char *const argv[], int *errfd);
/* spx_spawn, then wait for it. Returns its exit status (0..255), or -1
 * with an error recorded (SPX_FAIL) when it could not be started or was
 * killed by a signal. */
int spx_run(char *const argv[], bool quiet);

/* The directory of the running executable (from /proc/self/exe), or NULL.
 * Caller frees. Tools find their siblings and data files from it. */
char *spx_self_dir(void);
/* A file a program ships beside it: $env when set and not empty, else
 * the first of rel (paths relative to spx_self_dir()) that can be read;
 * NULL when none can. The caller frees it. */
char *spx_find_beside(const char *env, const char *const rel[], size_t n);

/* Sanitizer builds (make asan): a program of ours that has another
 * program load our code (nbdkit loading the spx-vol plugin) first sets
 * LD_PRELOAD to the AddressSanitizer runtime for its children, which
 * that runtime needs to come first in, and turns off leak detection
 * for them (nbdkit exits without freeing its open connections). The
 * program's own options were read at its start and stay. Elsewhere a
 * no-op. */
void spx_preload_sanitizers(void);

/* Milliseconds of CLOCK_MONOTONIC (deadlines, intervals) and of
 * CLOCK_REALTIME (times recorded). */
int64_t spx_mono_ms(void);
int64_t spx_wall_ms(void);

#endif
