/* svc.h: a node's services and what is known about each.
 *
 * A service is one long-running spx program (today: spx-gw serve). Each
 * holds an exclusive flock on its pidfile DIR/run/<name>.pid for as long as
 * it lives, so "is it running" is a lock test, immune to stale files and
 * reused pids. A service reports readiness by writing a newline to the
 * file descriptor named by --notify-fd (s6's notification-fd idea) and,
 * under systemd, READY=1 to $NOTIFY_SOCKET (sd_notify's protocol).
 *
 * The supervisor (sup.h) keeps DIR/run/<name>.state, a small JSON record
 * of each service: pid, state, restarts and the cause of the last exit,
 * which `spx status` and `spx get nodes` read. */
#ifndef SPX_SVC_H
#define SPX_SVC_H

#include "spx.h"

#include <signal.h>

struct spx_args;

#define SPX_SVC_MAX 8

struct spx_svc {
	const char *name;	/* "gw" */
	const char *prog;	/* "spx-gw" */
	const char *verb;	/* "serve" */
};

/* The services a node runs, in start order: with the net service when
 * its instances are on a bridge (vm.network "bridge"). */
size_t spx_svc_list(bool bridge, const struct spx_svc **out);
/* The same for the node at root, by its configuration (one that does
 * not load: without the net service). */
size_t spx_svc_list_at(const char *root, const struct spx_svc **out);

/* pid if running, 0 if not, -1 on error. */
pid_t spx_svc_pid(const char *rundir, const char *name);

/* Take the pidfile lock for a process starting now; the returned fd must
 * stay open for the life of the process. SPX_NO if another instance holds
 * it. */
int spx_svc_claim(const char *pidfile);

/* Tell whoever started us that we are ready: a newline on notify_fd (if
 * >= 0, which is then closed) and READY=1 to $NOTIFY_SOCKET if set. */
int spx_svc_ready(int notify_fd);
/* What every service does first (who names it in messages: "serve",
 * "agent"): block the signals its loop reads (SIGTERM, SIGINT, SIGHUP,
 * SIGUSR1, and SIGCHLD when chld), which go into *set; read --notify-fd
 * into *notify (-1 without it); open --log for stdout and stderr, with
 * timestamps. 0, or the exit status after a message. */
int spx_svc_begin(const struct spx_args *a, const char *who, bool chld,
		  sigset_t *set, long long *notify);
/* Point stdout and stderr at the log file path (appending): a service's
 * --log, opened at start and again on SIGHUP after logrotate. */
int spx_svc_log_open(const char *path);
/* Send one sd_notify state ("STOPPING=1") to $NOTIFY_SOCKET, if set. */
int spx_svc_notify(const char *state);

/* A child's output (a pipe) relayed into the service's log a line at a
 * time, each with the log's timestamp and reopened with it on SIGHUP (a
 * child writing to the log file itself would keep the rotated one). A
 * line is relayed whole up to SPX_SVC_LINE_MAX bytes, a longer one in
 * pieces (each within one line of spx_log's). */
#define SPX_SVC_LINE_MAX 1024
struct spx_svc_relay {
	char buf[SPX_SVC_LINE_MAX];
	size_t n;
};
/* Read what fd holds and log its complete lines at level l: 1 when it
 * read some, -1 when there was nothing to read yet (EAGAIN, EINTR), 0 at
 * the end of the output or a read error, after logging what was left
 * (the caller closes fd). */
int spx_svc_relay_read(struct spx_svc_relay *r, int fd,
		       enum spx_log_level l);
/* Log what r holds of a line not ended, as if its output had ended. */
void spx_svc_relay_end(struct spx_svc_relay *r, enum spx_log_level l);

/* If pid runs as a systemd unit named spx-*.service, its name. */
bool spx_svc_systemd_unit(pid_t pid, char *unit, size_t size);

struct spx_svc_state {
	pid_t pid;		/* 0: not running */
	char state[16];		/* starting, running, backoff, stopped */
	unsigned restarts;	/* since the node was last started */
	char last_exit[128];	/* "killed by SIGSEGV (core dumped)", or "" */
	char last_exit_at[32];	/* when, UTC, or "" */
};

/* Read DIR/run/<name>.state; a missing or unreadable record reads as
 * all zero (never an error: it is advisory). */
void spx_svc_state_read(const char *rundir, const char *name,
			struct spx_svc_state *st);
int spx_svc_state_write(const char *rundir, const char *name,
			const struct spx_svc_state *st);

/* Stop every running service (SIGTERM, then SIGKILL after timeout_ms).
 * Does not look at a supervisor: see spx_sup_down. Returns how many it
 * found running, or -1 when one could not be signalled. */
int spx_svc_down(const char *root, int timeout_ms);

/* Locate an spx program: next to the running executable, else on PATH. */
char *spx_find_prog(const char *prog);

#endif
