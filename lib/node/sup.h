/* sup.h: the supervisor `spx up` runs over a node's services.
 *
 * It starts each service (svc.h) as its child and waits for its
 * readiness, then stays: a service that exits or dies by a signal is
 * restarted after a backoff (0.1 s, doubling up to 30 s; back to 0.1 s
 * once a service has been ready for 10 s), and every death is logged with
 * its cause and counted in DIR/run/<name>.state. It holds the lock of
 * DIR/run/supervise.pid for its whole life, so `spx status` can tell a
 * running supervisor from a gone one.
 *
 * A service that dies before it was ever ready when the supervisor
 * starts is not restarted: the supervisor stops and reports the failure
 * with the end of the service's log. Services found running with no
 * supervisor (the previous one was killed) are adopted: watched through a
 * pidfd, and restarted like the others when they end, though their exit
 * status is not ours to read. The services get SIGUSR1 if the supervisor
 * dies (PR_SET_PDEATHSIG), and log that they run on unsupervised.
 *
 * SIGTERM or SIGINT stops the services (SIGTERM, SIGKILL after 10 s) and
 * then the supervisor, which restarts nothing once it is stopping.
 * SIGHUP reopens the supervisor's log and is passed on to the services,
 * which reopen theirs. */
#ifndef SPX_SUP_H
#define SPX_SUP_H

#include "spx.h"

enum spx_sup_event {
	SPX_SUP_INFO,	/* progress while starting: "started gw (pid 12)" */
	SPX_SUP_READY,	/* every service is ready: supervising now */
	SPX_SUP_FAIL,	/* start-up failed; status and message */
};

/* How the supervisor reports its start-up, once per event. */
typedef void spx_sup_report_fn(void *arg, enum spx_sup_event ev, int status,
			       const char *msg);

struct spx_sup_opts {
	const char *root;
	/* The services keep the supervisor's stdout and stderr (spx up
	 * --foreground); otherwise each logs to DIR/log/<name>.log. */
	bool foreground;
	spx_sup_report_fn *report;
	void *arg;
	int service_level; /* the services' log level; -1: the caller's */
};

/* Take DIR/run/supervise.pid: the fd to keep open, or -1 (SPX_NO when
 * another supervisor holds it). */
int spx_sup_claim(const char *root);
/* The running supervisor's pid, 0 if none. */
pid_t spx_sup_pid(const char *root);

/* Supervise until SIGTERM or SIGINT (blocked by the caller's process on
 * entry, whatever it had). Returns the exit status: 0 after a stop, the
 * failure's status when start-up failed. */
int spx_sup_run(const struct spx_sup_opts *o);

/* Fork a detached supervisor (its own session, its log in
 * DIR/log/supervise.log) and relay its start-up through report in this
 * process; returns once it reported ready (0) or failed (the status). */
int spx_sup_spawn(const char *root, spx_sup_report_fn *report, void *arg);

/* With a supervisor running: wait until it reports every service
 * ready (or systemd runs it), up to timeout_ms. A service waiting out
 * its restart backoff is started at once (SIGUSR2 to the supervisor):
 * `spx up` is the operator asking for the node now. */
int spx_sup_wait_ready(const char *root, int timeout_ms);

/* Stop the node for good: the supervisor first (so that nothing is
 * restarted), waiting for it to stop its services, then any service
 * still running without one. Returns how many processes it found
 * running (the supervisor counts as one), or -1. */
int spx_sup_down(const char *root, int timeout_ms);

/* The restart delay after the n-th death in a row (n >= 1), in ms. */
unsigned spx_sup_backoff_ms(unsigned n);
/* "exited with status 1", "killed by SIGSEGV (core dumped)". */
void spx_sup_describe(int wstatus, char *buf, size_t size);

#endif
