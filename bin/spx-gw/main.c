/* spx-gw: the gateway. `serve` runs the EC2/STS and S3 listeners;
 * `cgi` answers one request from CGI variables and stdin. */
#include "spx.h"

#include <signal.h>

#include "cmd.h"
#include "conf/conf.h"
#include "gw/gw.h"
#include "http/http.h"
#include "node/node.h"
#include "node/svc.h"
#include "gwcli.h"

int gwcli_load(const struct spx_args *a, struct spx_node_loc *loc,
	       struct spx_conf *conf)
{
	spx_node_locate(spx_arg(a, "root"), loc);
	if (spx_conf_load(loc->conf, loc->root, conf) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		spx_node_loc_release(loc);
		return spx_errstatus();
	}
	return 0;
}

static char *read_pem(const char *path)
{
	struct spx_buf b = SPX_BUF_INIT;

	if (spx_buf_read_file(&b, path, 1u << 20) < 0) {
		spx_buf_release(&b);
		return NULL;
	}
	return spx_buf_detach(&b, NULL);
}

static int cmd_serve(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	const struct spx_conf_node *self;
	struct spx_http_listener ls[2];
	struct spx_http_server *srv = NULL;
	struct spx_gw *gw = NULL;
	char *cert = NULL, *key = NULL;
	long long notify;
	int rc, pidfd = -1, sig;
	sigset_t set;

	if (spx_arg_int(a, "notify-fd", 3, 1024, -1, &notify) < 0) {
		spx_warn("serve: %s", spx_errmsg());
		return SPX_USAGE;
	}
	rc = gwcli_load(a, &loc, &conf);
	if (rc)
		return rc;
	rc = SPX_FAIL;
	if (spx_arg(a, "pidfile")) {
		pidfd = spx_svc_claim(spx_arg(a, "pidfile"));
		if (pidfd < 0) {
			spx_warn("serve: %s", spx_errmsg());
			rc = spx_errstatus();
			goto out;
		}
	}
	self = spx_conf_self(&conf);
	if (!self->gw.http) {
		cert = read_pem(conf.tls.cert);
		key = cert ? read_pem(conf.tls.key) : NULL;
		if (!key) {
			spx_warn("serve: %s", spx_errmsg());
			goto out;
		}
	}
	if (spx_gw_open(&conf, &gw) < 0) {
		spx_warn("serve: %s", spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	/* Query API bodies are small forms: the EC2 port takes no more. */
	ls[0] = (struct spx_http_listener){
		SPX_HTTP_EC2, self->gw.bind, (int)self->gw.ec2_port, cert, key,
		(uint64_t)self->gw.max_query_body_bytes
	};
	ls[1] = (struct spx_http_listener){ SPX_HTTP_S3, self->gw.bind,
					    (int)self->gw.s3_port, cert, key,
					    0 };
	/* Block the stop signals before any thread starts, so that they all
	 * inherit the mask and only sigwait below sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (spx_http_start(ls, 2, (unsigned)self->gw.threads,
			   spx_gw_limits(gw), spx_gw_handler(gw), &srv) < 0) {
		spx_warn("serve: %s", spx_errmsg());
		goto out;
	}
	spx_log(SPX_LOG_INFO, "%s: ec2/sts on %s://%s:%d, s3 on %s://%s:%d",
		conf.node, cert ? "https" : "http", self->gw.bind,
		(int)self->gw.ec2_port, cert ? "https" : "http", self->gw.bind,
		(int)self->gw.s3_port);
	if (notify >= 0) {
		if (write((int)notify, "\n", 1) != 1)
			spx_warn_errno("serve: cannot notify readiness");
		close((int)notify);
	}
	do {
		if (sigwait(&set, &sig) != 0)
			break;
	} while (sig == SIGHUP);
	spx_log(SPX_LOG_INFO, "stopping on signal %d", sig);
	rc = SPX_OK;
out:
	spx_http_stop(srv);
	spx_gw_close(gw);
	free(cert);
	free(key);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	if (pidfd >= 0)
		close(pidfd);
	return rc;
}

static int cmd_cgi(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	struct spx_gw *gw = NULL;
	const char *svc = spx_arg(a, "service");
	enum spx_http_service s = SPX_HTTP_EC2;
	int rc;

	if (svc && !strcmp(svc, "s3"))
		s = SPX_HTTP_S3;
	else if (svc && strcmp(svc, "ec2")) {
		spx_warn("cgi: unknown service '%s' (ec2 or s3)", svc);
		return SPX_USAGE;
	}
	rc = gwcli_load(a, &loc, &conf);
	if (rc)
		return rc;
	if (spx_gw_open(&conf, &gw) < 0) {
		spx_warn("cgi: %s", spx_errmsg());
		rc = spx_errstatus();
	} else if (spx_http_cgi(s, spx_gw_limits(gw), spx_gw_handler(gw), 0,
				1) < 0) {
		spx_warn("cgi: %s", spx_errmsg());
		rc = spx_errstatus();
	}
	spx_gw_close(gw);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}

static const struct spx_opt serve_opts[] = {
	SPX_OPT_ROOT,
	{ "notify-fd", 0, "FD", "write a newline to FD once listening" },
	{ "pidfile", 0, "FILE", "hold a lock on FILE and write the pid in it" },
	{ 0 },
};

static const struct spx_opt cgi_opts[] = {
	SPX_OPT_ROOT,
	{ "service", 's', "ec2|s3", "which API the request is for (default ec2)" },
	{ 0 },
};

static const struct spx_opt call_opts[] = {
	SPX_OPT_ROOT,
	{ "service", 's', "ec2|sts|s3", "which API to call (default ec2)" },
	{ 0 },
};

static const struct spx_verb verbs[] = {
	{ "serve", cmd_serve, serve_opts, "",
	  "run the EC2/STS and S3 listeners until SIGTERM", 0, 0 },
	{ "cgi", cmd_cgi, cgi_opts, "",
	  "answer one request from CGI variables and stdin", 0, 0 },
	{ "call", cmd_call, call_opts, "ACTION [Name=Value ...] | PATH",
	  "make one signed call to the node's gateway (libcurl)", 1, -1 },
	{ 0 },
};

int main(int argc, char **argv)
{
	static const struct spx_tool tool = {
		"spx-gw", "spx-gw: the AWS API gateway of an spx node", verbs,
		NULL
	};

	return spx_cmd_main(&tool, argc, argv);
}
