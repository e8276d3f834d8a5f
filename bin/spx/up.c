/* spx up | down | status */
#include "spx.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "cli.h"
#include "conf/conf.h"
#include "file.h"
#include "node/node.h"
#include "node/svc.h"
#include "print.h"

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

/* Foreground: the services are our children; a signal stops them all,
 * and so does the death of any one. */
static int supervise(const char *root, pid_t *pids, size_t n)
{
	struct sigaction sa = { .sa_handler = on_stop };
	int rc = SPX_OK, status;
	pid_t p;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (;;) {
		p = wait(&status);
		if (p < 0 && errno == EINTR && stop_sig)
			break;
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0)
			break;
		spx_warn("up: a service (pid %ld) exited with status %d",
			 (long)p, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		rc = SPX_FAIL;
		break;
	}
	for (size_t i = 0; i < n; i++)
		kill(pids[i], SIGTERM);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	(void)root;
	return rc;
}

int cmd_up(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	pid_t pids[SPX_SVC_MAX];
	size_t n = 0;
	bool fg = spx_flag(a, "foreground");
	int rc;

	rc = spx_cli_load(a, &loc, &conf);
	if (rc)
		return rc;
	if (fg) {
		/* Ignore the stop signals while starting; supervise() installs
		 * the handlers that forward them. */
		signal(SIGINT, SIG_IGN);
	}
	if (spx_svc_up(loc.root, fg, pids, &n) < 0) {
		spx_warn("up: %s", spx_errmsg());
		rc = spx_errstatus();
		if (fg)
			for (size_t i = 0; i < n; i++)
				kill(pids[i], SIGTERM);
		goto out;
	}
	printf("node '%s' is up\n", conf.node);
	if (fg) {
		signal(SIGINT, SIG_DFL);
		printf("running in the foreground; Ctrl-C stops it\n");
		fflush(stdout);
		rc = supervise(loc.root, pids, n);
	}
out:
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}

int cmd_down(const struct spx_args *a)
{
	struct spx_node_loc loc;
	int rc = SPX_OK;

	spx_node_locate(spx_arg(a, "root"), &loc);
	if (spx_svc_down(loc.root, 10000) < 0) {
		spx_warn("down: %s", spx_errmsg());
		rc = spx_errstatus();
	}
	spx_node_loc_release(&loc);
	return rc;
}

int cmd_status(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	const struct spx_svc *svcs;
	const struct spx_conf_node *self;
	struct spx_table *t;
	size_t ns = spx_svc_list(&svcs);
	char *rundir;
	int rc, down = 0;

	rc = spx_cli_load(a, &loc, &conf);
	if (rc)
		return rc;
	self = spx_conf_self(&conf);
	rundir = spx_path_join(loc.root, "run");
	t = spx_table_new("SERVICE", "STATUS", "PID", "ENDPOINTS", NULL);
	for (size_t i = 0; i < ns; i++) {
		pid_t p = spx_svc_pid(rundir, svcs[i].name);
		const char *scheme = self->gw.http ? "http" : "https";
		char *ep = spx_xprintf("%s://%s:%d %s://%s:%d", scheme,
				       self->gw.bind, (int)self->gw.ec2_port,
				       scheme, self->gw.bind,
				       (int)self->gw.s3_port);

		spx_table_row(t);
		spx_table_str(t, svcs[i].name);
		spx_table_str(t, p > 0 ? "running" : "stopped");
		spx_table_int(t, p > 0 ? p : 0);
		spx_table_str(t, ep);
		free(ep);
		down += p <= 0;
	}
	if (spx_table_print(t, stdout, spx_flag(a, "json")) < 0)
		rc = SPX_FAIL;
	else
		rc = down ? SPX_NO : SPX_OK;
	spx_table_free(t);
	free(rundir);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}

/* Does something accept connections on addr:port? */
static bool answers(const char *addr, int port)
{
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr *sa;
	socklen_t len;
	int fd, ok;

	if (!strcmp(addr, "0.0.0.0") || !strcmp(addr, "localhost"))
		addr = "127.0.0.1";
	if (!strcmp(addr, "::"))
		addr = "::1";
	if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1) {
		s4.sin_port = htons((uint16_t)port);
		sa = (struct sockaddr *)&s4;
		len = sizeof(s4);
	} else if (inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1) {
		s6.sin6_port = htons((uint16_t)port);
		sa = (struct sockaddr *)&s6;
		len = sizeof(s6);
	} else {
		return false;
	}
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	ok = connect(fd, sa, len) == 0;
	close(fd);
	return ok;
}

int cmd_get_nodes(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	const struct spx_svc *svcs;
	struct spx_table *t;
	size_t ns = spx_svc_list(&svcs);
	char *rundir;
	int rc;

	rc = spx_cli_load(a, &loc, &conf);
	if (rc)
		return rc;
	rundir = spx_path_join(loc.root, "run");
	t = spx_table_new("NAME", "STATUS", "ROLES", "IP", "REGION", "AZ",
			  "VMs", "SERVICES", NULL);
	for (size_t i = 0; i < conf.n_nodes; i++) {
		const struct spx_conf_node *n = &conf.nodes[i];
		struct spx_buf running = SPX_BUF_INIT, roles = SPX_BUF_INIT;
		bool self = !strcmp(n->name, conf.node), ready = self;

		/* Only this node can be inspected locally; the others are
		 * reached over the cluster bus (a later issue). */
		for (size_t s = 0; self && s < ns; s++) {
			if (spx_svc_pid(rundir, svcs[s].name) > 0) {
				spx_buf_addf(&running, "%s%s",
					     running.len ? "," : "",
					     svcs[s].name);
				spx_buf_addf(&roles, "%s%s", roles.len ? "," : "",
					     svcs[s].name);
			} else {
				ready = false;
			}
		}
		if (ready)
			ready = answers(n->gw.bind, (int)n->gw.ec2_port);
		spx_table_row(t);
		spx_table_str(t, n->name);
		spx_table_str(t, self ? (ready ? "Ready" : "NotReady")
				      : "Unknown");
		spx_table_str(t, roles.len ? roles.p : "-");
		spx_table_str(t, n->host);
		spx_table_str(t, conf.aws.region);
		spx_table_str(t, n->az);
		spx_table_int(t, 0);
		spx_table_str(t, running.len ? running.p : "-");
		spx_buf_release(&running);
		spx_buf_release(&roles);
	}
	rc = spx_table_print(t, stdout, spx_flag(a, "json")) < 0 ? SPX_FAIL
								   : SPX_OK;
	spx_table_free(t);
	free(rundir);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}
