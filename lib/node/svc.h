/* svc.h: starting, stopping and watching a node's services.
 *
 * A service is one long-running spx program (today: spx-gw serve). Each
 * holds an exclusive flock on its pidfile DIR/run/<name>.pid for as long as
 * it lives, so "is it running" is a lock test, immune to stale files and
 * reused pids. A service reports readiness by writing a newline to the
 * file descriptor named by --notify-fd (s6's notification-fd idea), so
 * `spx up` returns only once the service answers. */
#ifndef SPX_SVC_H
#define SPX_SVC_H

#include "spx.h"

#define SPX_SVC_MAX 8

struct spx_svc {
	const char *name;	/* "gw" */
	const char *prog;	/* "spx-gw" */
	const char *verb;	/* "serve" */
};

/* The services a node runs, in start order. */
size_t spx_svc_list(const struct spx_svc **out);

/* pid if running, 0 if not, -1 on error. */
pid_t spx_svc_pid(const char *rundir, const char *name);

/* Take the pidfile lock for a service starting now; the returned fd must
 * stay open for the life of the process. SPX_NO if another instance holds
 * it. */
int spx_svc_claim(const char *pidfile);

/* Start every service that is not running. Background: detached, output
 * to DIR/log/<name>.log. Returns once all are ready, or -1 naming the one
 * that failed (with the tail of its log). */
int spx_svc_up(const char *root, bool foreground_children,
	       pid_t *pids, size_t *npids);
/* Stop every running service (SIGTERM, then SIGKILL after timeout_ms). */
int spx_svc_down(const char *root, int timeout_ms);

/* Locate an spx program: next to the running executable, else on PATH. */
char *spx_find_prog(const char *prog);

#endif
