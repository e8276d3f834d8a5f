/* spx-gw: the gateway. `serve` runs the EC2/STS and S3 listeners;
 * `cgi` answers one request from CGI variables and stdin. */
#include "spx.h"

#include <signal.h>
#include <sys/resource.h>

#include "cmd.h"
#include "file.h"
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

/* --log FILE: the service's own log, on stdout and stderr, with
 * timestamps; opened again on SIGHUP, so that logrotate can move it. */
static int open_access_log(const struct spx_conf *conf,
			   struct spx_http_alog **out)
{
	char *path;
	int rc;

	*out = NULL;
	if (spx_mkdirs(conf->paths.log, 0700) < 0)
		return -1;
	path = spx_path_join(conf->paths.log, "access.log");
	rc = spx_http_alog_open(path, out);
	free(path);
	return rc;
}

/* As many open files as the hard limit allows: every connection is one. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int cmd_serve(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	const struct spx_conf_node *self;
	struct spx_http_listener ls[2];
	struct spx_http_conns conns;
	struct spx_http_server *srv = NULL;
	struct spx_http_alog *alog = NULL;
	struct spx_gw *gw = NULL;
	const char *logfile = spx_arg(a, "log");
	char *cert = NULL, *key = NULL;
	long long notify;
	int rc, pidfd = -1, sig;
	sigset_t set;

	/* Block the signals this loop waits for before anything else, so
	 * that every thread inherits the mask and only sigwait below sees
	 * them. SIGUSR1 is what a supervisor's death sends (spx up sets
	 * it as the parent-death signal). */
	if ((rc = spx_svc_begin(a, "serve", false, &set, &notify)))
		return rc;
	signal(SIGPIPE, SIG_IGN);
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
	raise_nofile();
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
	if (open_access_log(&conf, &alog) < 0) {
		spx_warn("serve: %s", spx_errmsg());
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
	conns = (struct spx_http_conns){
		.max_per_addr = (unsigned)self->gw.max_conns_per_addr,
		.header_timeout_ms = (unsigned)self->gw.header_timeout * 1000,
		.body_timeout_ms = (unsigned)self->gw.body_timeout * 1000,
		.body_min_rate = (uint64_t)self->gw.body_min_rate,
		.idle_timeout_s = (unsigned)self->gw.idle_timeout,
		.workers = (unsigned)self->gw.write_threads,
	};
	if (spx_http_start(ls, 2, (unsigned)self->gw.threads,
			   spx_gw_limits(gw), &conns, spx_gw_handler(gw), alog,
			   &srv) < 0) {
		spx_warn("serve: %s", spx_errmsg());
		goto out;
	}
	spx_log(SPX_LOG_INFO, "%s: ec2/sts on %s://%s:%d, s3 on %s://%s:%d",
		conf.node, cert ? "https" : "http", self->gw.bind,
		(int)self->gw.ec2_port, cert ? "https" : "http", self->gw.bind,
		(int)self->gw.s3_port);
	if (spx_svc_ready((int)notify) < 0)
		spx_warn("serve: %s", spx_errmsg());
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			break;
		if (sig == SIGHUP) {
			/* logrotate moved the files away: write to new ones. */
			if ((logfile && spx_svc_log_open(logfile) < 0) ||
			    spx_http_alog_reopen(alog) < 0)
				spx_warn("serve: %s", spx_errmsg());
			else
				spx_log(SPX_LOG_INFO, "log files reopened");
			continue;
		}
		if (sig == SIGUSR1) {
			spx_log(SPX_LOG_WARN,
				"the supervisor that started this service is "
				"gone; serving on unsupervised until 'spx up' "
				"adopts it");
			continue;
		}
		break;
	}
	spx_log(SPX_LOG_INFO, "stopping on signal %d", sig);
	spx_svc_notify("STOPPING=1");
	rc = SPX_OK;
out:
	spx_http_stop(srv);
	spx_http_alog_close(alog);
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
	struct spx_http_alog *alog = NULL;
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
	/* The node's access log, when this user may write it; the web
	 * server in front keeps its own in any case. */
	if (open_access_log(&conf, &alog) < 0)
		spx_debug("cgi: no access log: %s", spx_errmsg());
	if (spx_gw_open(&conf, &gw) < 0) {
		spx_warn("cgi: %s", spx_errmsg());
		rc = spx_errstatus();
	} else if (spx_http_cgi(s, spx_gw_limits(gw), spx_gw_handler(gw), alog,
				0, 1) < 0) {
		spx_warn("cgi: %s", spx_errmsg());
		rc = spx_errstatus();
	}
	spx_gw_close(gw);
	spx_http_alog_close(alog);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}

static const struct spx_opt serve_opts[] = {
	SPX_OPT_ROOT,
	{ "notify-fd", 0, "FD", "write a newline to FD once listening" },
	{ "pidfile", 0, "FILE", "hold a lock on FILE and write the pid in it" },
	{ "log", 0, "FILE", "log to FILE (timestamped; reopened on SIGHUP)" },
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
