/* spx up | down | status */
#include "spx.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "cli.h"
#include "conf/conf.h"
#include "file.h"
#include "node/node.h"
#include "node/sup.h"
#include "node/svc.h"
#include "print.h"

struct up {
	const char *node;
	bool fg;
	int status;
};

static void up_report(void *arg, enum spx_sup_event ev, int status,
		      const char *msg)
{
	struct up *u = arg;

	switch (ev) {
	case SPX_SUP_INFO:
		/* In the foreground the supervisor is this process and has
		 * logged it to this stderr already. */
		if (!u->fg)
			spx_info("%s", msg);
		break;
	case SPX_SUP_READY:
		printf("node '%s' is up\n", u->node);
		if (u->fg)
			printf("running in the foreground; Ctrl-C stops it\n");
		fflush(stdout);
		break;
	case SPX_SUP_FAIL:
		spx_warn("up: %s", msg);
		u->status = status;
		break;
	}
}

int cmd_up(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	struct up u = { .fg = spx_flag(a, "foreground") };
	pid_t sp;
	int rc, lock;

	rc = spx_cli_load(a, &loc, &conf);
	if (rc)
		return rc;
	u.node = conf.node;
	sp = spx_sup_pid(loc.root);
	if (sp > 0 && !u.fg) {
		/* Up already: the supervisor restarts what is not running;
		 * return, as always, once it is ready. */
		if (spx_sup_wait_ready(loc.root, 60000) < 0) {
			spx_warn("up: %s", spx_errmsg());
			rc = spx_errstatus();
			goto out;
		}
		printf("node '%s' is up (supervisor pid %ld)\n", conf.node,
		       (long)sp);
		goto out;
	}
	if (!u.fg) {
		rc = spx_sup_spawn(loc.root, up_report, &u);
		if (rc < 0) {
			spx_warn("up: %s", spx_errmsg());
			rc = spx_errstatus();
		}
		goto out;
	}
	lock = spx_sup_claim(loc.root);
	if (lock < 0) {
		spx_warn("up: %s", spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	spx_log_timestamps(true);
	rc = spx_sup_run(&(struct spx_sup_opts){ .root = loc.root,
						  .foreground = true,
						  .report = up_report,
						  .arg = &u,
						  .service_level = -1 });
	close(lock);
out:
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}

int cmd_down(const struct spx_args *a)
{
	struct spx_node_loc loc;
	int rc = SPX_OK, n;

	spx_node_locate(spx_arg(a, "root"), &loc);
	n = spx_sup_down(loc.root, 10000);
	if (n < 0) {
		spx_warn("down: %s", spx_errmsg());
		rc = spx_errstatus();
	} else if (n == 0) {
		/* Success (nothing is left running there), but said: a
		 * mistyped root, or a node whose directory was removed
		 * under it (its processes are then beyond the reach of its
		 * pid files), would otherwise pass unnoticed. */
		spx_warn("down: nothing was running at '%s'", loc.root);
	}
	spx_node_loc_release(&loc);
	return rc;
}

/* Who looks after a service: "spx up (pid N)", "systemd (unit)", or
 * "none" when it runs with nobody to restart it. */
static void supervisor_of(const char *root, pid_t svc, char *buf,
			  size_t size)
{
	pid_t sp = spx_sup_pid(root);
	char unit[128];

	if (sp > 0)
		snprintf(buf, size, "spx up (pid %ld)", (long)sp);
	else if (svc > 0 && spx_svc_systemd_unit(svc, unit, sizeof(unit)))
		snprintf(buf, size, "systemd (%s)", unit);
	else
		snprintf(buf, size, "%s", svc > 0 ? "none" : "-");
}

/* running, starting (not ready yet), backoff (due to be restarted) or
 * stopped. The state file is the supervisor's word: without one running,
 * only the lock counts. */
static const char *svc_status(pid_t pid, const struct spx_svc_state *st,
			      bool supervised)
{
	if (pid > 0)
		return st->pid == pid && !strcmp(st->state, "starting")
			       ? "starting"
			       : "running";
	if (supervised && (!strcmp(st->state, "backoff") ||
			   !strcmp(st->state, "starting")))
		return st->state;
	return "stopped";
}

/* One service's record, for spx status and spx get nodes --json. */
static json_t *svc_json(const char *root, const struct spx_svc *s,
			pid_t pid, const struct spx_svc_state *st)
{
	char sup[160];

	supervisor_of(root, pid, sup, sizeof(sup));
	return json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:s}", "name",
			 s->name, "status",
			 svc_status(pid, st, spx_sup_pid(root) > 0), "pid",
			 (json_int_t)(pid > 0 ? pid : 0), "restarts",
			 (json_int_t)st->restarts, "last_exit", st->last_exit,
			 "last_exit_at", st->last_exit_at, "supervisor", sup);
}

int cmd_status(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	const struct spx_svc *svcs;
	const struct spx_conf_node *self;
	struct spx_table *t;
	size_t ns = 0;
	char *rundir, sup[160];
	int rc, down = 0;
	bool any = false;

	rc = spx_cli_load(a, &loc, &conf);
	if (rc)
		return rc;
	self = spx_conf_self(&conf);
	ns = spx_svc_list(!strcmp(self->vm.network, "bridge"), &svcs);
	rundir = spx_path_join(loc.root, "run");
	t = spx_table_new("SERVICE", "STATUS", "PID", "RESTARTS", "LAST EXIT",
			  "LAST EXIT AT", "SUPERVISOR", "ENDPOINTS", NULL);
	for (size_t i = 0; i < ns; i++) {
		pid_t p = spx_svc_pid(rundir, svcs[i].name);
		struct spx_svc_state st;
		const char *scheme = self->gw.http ? "http" : "https";
		/* Where clients reach it: the gateway's URLs, the volume
		 * server's NBD socket (as an NBD URI, without an export), the
		 * agent's doorbell. */
		char *ep = !strcmp(svcs[i].name, "vol")
				   ? spx_xprintf("nbd+unix:///?socket=%s/vol.sock",
						 conf.paths.run)
			   : !strcmp(svcs[i].name, "agent")
				   ? spx_xprintf("unix:%s/agent.sock",
						 conf.paths.run)
			   : !strcmp(svcs[i].name, "net")
				   ? spx_xprintf("bridge %s %s",
						 self->vm.bridge,
						 self->vm.address)
				   : spx_xprintf("%s://%s:%d %s://%s:%d", scheme,
						 self->gw.bind,
						 (int)self->gw.ec2_port, scheme,
						 self->gw.bind,
						 (int)self->gw.s3_port);

		spx_svc_state_read(rundir, svcs[i].name, &st);
		supervisor_of(loc.root, p, sup, sizeof(sup));
		spx_table_row(t);
		spx_table_str(t, svcs[i].name);
		spx_table_str(t, svc_status(p, &st, spx_sup_pid(loc.root) > 0));
		spx_table_int(t, p > 0 ? p : 0);
		spx_table_int(t, st.restarts);
		spx_table_str(t, st.last_exit[0] ? st.last_exit : "-");
		spx_table_str(t, st.last_exit_at[0] ? st.last_exit_at : "-");
		spx_table_str(t, sup);
		spx_table_str(t, ep);
		free(ep);
		down += p <= 0;
		any |= p > 0;
	}
	if (spx_table_print(t, stdout, spx_flag(a, "json")) < 0)
		rc = SPX_FAIL;
	else
		rc = down ? SPX_NO : SPX_OK;
	/* Running with nobody to restart it: say so, and count it as down. */
	if (any && !strcmp(sup, "none")) {
		spx_warn("status: the supervisor is gone: the services run "
			 "unsupervised; 'spx up' adopts them");
		if (!rc)
			rc = SPX_NO;
	}
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
	size_t ns = 0;
	char *rundir;
	int rc;

	rc = spx_cli_load(a, &loc, &conf);
	if (rc)
		return rc;
	ns = spx_svc_list(!strcmp(spx_conf_self(&conf)->vm.network, "bridge"),
			  &svcs);
	rundir = spx_path_join(loc.root, "run");
	t = spx_table_new("NAME", "STATUS", "ROLES", "IP", "REGION", "AZ",
			  "VMs", "SERVICES", NULL);
	for (size_t i = 0; i < conf.n_nodes; i++) {
		const struct spx_conf_node *n = &conf.nodes[i];
		struct spx_buf running = SPX_BUF_INIT, roles = SPX_BUF_INIT;
		bool self = !strcmp(n->name, conf.node), ready = self;

		/* Only this node can be inspected locally; the others are
		 * reached over the cluster bus (a later issue). */
		json_t *detail = json_array();

		for (size_t s = 0; self && s < ns; s++) {
			pid_t p = spx_svc_pid(rundir, svcs[s].name);
			struct spx_svc_state st;

			spx_svc_state_read(rundir, svcs[s].name, &st);
			json_array_append_new(detail,
					      svc_json(loc.root, &svcs[s], p,
						       &st));
			if (p > 0) {
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
		/* With --json, each service's pid, restarts and last exit. */
		spx_table_json(t, running.len ? running.p : "-", detail);
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
