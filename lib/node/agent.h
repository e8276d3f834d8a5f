/* agent.h: the node agent's doorbell.
 *
 * The agent (spx agent, a service of spx up) reconciles the records the
 * gateway writes with what exists on the node. It looks at the records
 * once a second anyway; a process that has just recorded work for it
 * rings the doorbell, a datagram on the unix socket RUN/agent.sock, so
 * the agent starts at once. Ringing is best effort: nothing is lost when
 * no agent listens. */
#ifndef SPX_NODE_AGENT_H
#define SPX_NODE_AGENT_H

/* Ring the agent of the node whose run directory is rundir. */
void spx_agent_wake(const char *rundir);
/* The agent's end: a non-blocking datagram socket bound to
 * RUN/agent.sock (mode 0600; a stale file is replaced). -1 with an
 * error recorded on failure. */
int spx_agent_bell(const char *rundir);
/* Empty the socket of pending rings. */
void spx_agent_bell_drain(int fd);

#endif
