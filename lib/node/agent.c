/* agent.c: the node agent's doorbell (see agent.h). */
#include "spx.h"

#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "node/agent.h"

static int addr(const char *rundir, struct sockaddr_un *sa, socklen_t *len)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/agent.sock",
		     rundir);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return spx_error(SPX_FAIL, "run directory '%s' is too long for "
				 "a socket path", rundir);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
	return 0;
}

void spx_agent_wake(const char *rundir)
{
	struct sockaddr_un sa;
	socklen_t len = 0;
	int fd;

	if (addr(rundir, &sa, &len) < 0) {
		spx_error_clear();
		return;
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	/* A full queue or no agent: it looks on its own within a second. */
	(void)sendto(fd, "w", 1, MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	close(fd);
}

int spx_agent_bell(const char *rundir)
{
	struct sockaddr_un sa;
	socklen_t len = 0;
	mode_t old;
	int fd, rc;

	if (addr(rundir, &sa, &len) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "socket");
	/* The caller holds the agent's pidfile lock: a file here is a
	 * dead agent's. */
	if (unlink(sa.sun_path) < 0 && errno != ENOENT) {
		close(fd);
		return spx_error_errno(SPX_FAIL, "cannot remove '%s'",
				       sa.sun_path);
	}
	old = umask(077);
	rc = bind(fd, (struct sockaddr *)&sa, len);
	umask(old);
	if (rc < 0) {
		close(fd);
		return spx_error_errno(SPX_FAIL, "cannot bind '%s'", sa.sun_path);
	}
	return fd;
}

void spx_agent_bell_drain(int fd)
{
	char b[64];

	while (recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}
