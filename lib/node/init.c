#include "spx.h"

#include <arpa/inet.h>

#include "auth/cred.h"
#include "file.h"
#include "id.h"
#include "node/node.h"
#include "node/tls.h"

void spx_node_locate(const char *root_opt, struct spx_node_loc *loc)
{
	const char *env = getenv("SPX_ROOT");

	memset(loc, 0, sizeof(*loc));
	if (!root_opt && env && *env)
		root_opt = env;
	if (root_opt) {
		loc->root = spx_path_abs(root_opt);
		loc->conf = spx_path_join(loc->root, "spinifex.toml");
	} else {
		loc->system = true;
		loc->root = spx_strdup("/var/lib/spinifex");
		loc->conf = spx_strdup("/etc/spinifex/spinifex.toml");
	}
}

void spx_node_loc_release(struct spx_node_loc *loc)
{
	free(loc->root);
	free(loc->conf);
	memset(loc, 0, sizeof(*loc));
}

bool spx_valid_region(const char *s)
{
	/* us-east-1, ap-southeast-2, us-gov-west-1, eu-central-1 ... */
	size_t n = strlen(s), dashes = 0;

	if (n < 4 || n > 32 || s[0] < 'a' || s[0] > 'z' || s[n - 1] < '0' ||
	    s[n - 1] > '9')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '-') {
			if (s[i + 1] == '-' || i == 0)
				return false;
			dashes++;
		} else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
			return false;
		}
	}
	return dashes >= 2;
}

bool spx_valid_node_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 63 || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '-'))
			return false;
	return true;
}

static bool is_loopback(const char *a)
{
	unsigned char b[16];

	if (!strcmp(a, "localhost"))
		return true;
	if (inet_pton(AF_INET, a, b) == 1)
		return b[0] == 127;
	if (inet_pton(AF_INET6, a, b) == 1)
		return !memcmp(b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16);
	return false;
}

static char *render_conf(const struct spx_node_loc *loc,
			 const struct spx_node_init *in, const char *account,
			 const char *az, const char *cred, const char *tls)
{
	struct spx_buf b = SPX_BUF_INIT;

	spx_buf_addf(&b,
		     "# spinifex.toml: written by spx admin init; see "
		     "spinifex.toml(5).\n"
		     "# Relative paths are relative to the node root (%s).\n\n"
		     "node = \"%s\"\n\n"
		     "[aws]\nregion = \"%s\"\naccount_id = \"%s\"\n\n"
		     "[tls]\nca_cert = \"%s/ca.pem\"\ncert = \"%s/node.pem\"\n"
		     "key = \"%s/node.key\"\n\n"
		     "[credentials]\nfile = \"%s\"\n\n"
		     "[network]\nipsec_enabled = false\nunderlay_mtu = 1500\n"
		     "firewall_enabled = false\n\n"
		     "[nodes.%s]\nhost = \"%s\"\naz = \"%s\"\n\n"
		     "[nodes.%s.gw]\nbind = \"%s\"\nec2_port = %d\n"
		     "s3_port = %d\nhttp = %s\n",
		     loc->root, in->name, in->region, account, tls, tls, tls,
		     cred, in->name,
		     is_loopback(in->bind) || !strcmp(in->bind, "0.0.0.0")
			     ? "127.0.0.1"
			     : in->bind,
		     az, in->name, in->bind, in->ec2_port, in->s3_port,
		     in->http ? "true" : "false");
	return spx_buf_detach(&b, NULL);
}

static int write_text(const char *dir, const char *name, const char *text,
		      mode_t mode)
{
	char *p = spx_path_join(dir, name);
	int rc = spx_write_file(p, text, strlen(text), mode, false);

	free(p);
	return rc;
}

int spx_node_init(const struct spx_node_loc *loc,
		  const struct spx_node_init *in, struct spx_cred *admin)
{
	const char *names[8];
	char *ca = NULL, *cak = NULL, *crt = NULL, *key = NULL, *conf = NULL;
	char *confdir = NULL, *tlsdir = NULL, *awsdir = NULL, *credp = NULL;
	char *json = NULL, *awscred = NULL, *awsconf = NULL, *az = NULL;
	char account[16], host[256];
	int rc = -1;

	if (!spx_valid_node_name(in->name))
		return spx_error(SPX_USAGE, "bad node name '%s'", in->name);
	if (!spx_valid_region(in->region))
		return spx_error(SPX_USAGE, "bad region '%s'", in->region);
	az = in->az ? spx_strdup(in->az) : spx_xprintf("%sa", in->region);
	if (strncmp(az, in->region, strlen(in->region)) ||
	    strlen(az) != strlen(in->region) + 1 ||
	    az[strlen(az) - 1] < 'a' || az[strlen(az) - 1] > 'z') {
		spx_error(SPX_USAGE,
			  "bad availability zone '%s' (the region and a "
			  "letter: '%sa')",
			  az, in->region);
		goto out;
	}
	if (in->nodes != 1) {
		spx_error(SPX_USAGE,
			  "--nodes %d: only single-node init is supported yet",
			  in->nodes);
		goto out;
	}
	if (in->http && !is_loopback(in->bind)) {
		spx_error(SPX_USAGE,
			  "--http needs a loopback bind address, not '%s'",
			  in->bind);
		goto out;
	}
	if (in->ec2_port == in->s3_port) {
		spx_error(SPX_USAGE, "the EC2 and S3 ports must differ");
		goto out;
	}
	if (spx_exists(loc->conf) && !in->force) {
		spx_error(SPX_NO, "'%s' exists (use --force to overwrite)",
			  loc->conf);
		goto out;
	}

	/* Everything is made in memory first, so that a failure (say, no
	 * entropy or a bad argument) writes nothing. */
	memset(admin, 0, sizeof(*admin));
	spx_access_key_new(admin->access_key, sizeof(admin->access_key), false);
	spx_secret_key_new(admin->secret, sizeof(admin->secret));
	spx_account_id_new(account, sizeof(account));
	snprintf(admin->account, sizeof(admin->account), "%s", account);
	snprintf(admin->user, sizeof(admin->user), "admin");
	snprintf(admin->arn, sizeof(admin->arn), "arn:aws:iam::%s:root",
		 account);
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	names[0] = "localhost";
	names[1] = "127.0.0.1";
	names[2] = "::1";
	names[3] = host;
	names[4] = in->name;
	names[5] = is_loopback(in->bind) || !strcmp(in->bind, "0.0.0.0") ||
				   !strcmp(in->bind, "::")
			   ? NULL
			   : in->bind;
	names[6] = NULL;
	if (spx_tls_make_ca("spx node CA", &ca, &cak) < 0 ||
	    spx_tls_make_cert(ca, cak, in->name, names, &crt, &key) < 0)
		goto out;

	confdir = loc->system ? spx_strdup("/etc/spinifex") : spx_strdup(loc->root);
	tlsdir = spx_path_join(confdir, "tls");
	awsdir = spx_path_join(confdir, "aws");
	credp = spx_path_join(confdir, "credentials.json");
	conf = render_conf(loc, in, account, az,
			   loc->system ? credp : "credentials.json",
			   loc->system ? tlsdir : "tls");
	json = spx_cred_render(admin, 1);
	awscred = spx_xprintf("[spx]\naws_access_key_id = %s\n"
			      "aws_secret_access_key = %s\n",
			      admin->access_key, admin->secret);
	awsconf = spx_xprintf("[profile spx]\nregion = %s\noutput = json\n"
			      "ca_bundle = %s/ca.pem\n",
			      in->region, tlsdir);

	if (spx_mkdirs(confdir, 0755) < 0 || spx_mkdirs(tlsdir, 0700) < 0 ||
	    spx_mkdirs(awsdir, 0700) < 0)
		goto out;
	for (const char *d = "state\0data\0run\0log\0"; *d; d += strlen(d) + 1) {
		char *p = spx_path_join(loc->root, d);
		int r = spx_mkdirs(p, 0700);

		free(p);
		if (r < 0)
			goto out;
	}
	/* The configuration goes last: its presence marks a complete node. */
	if (write_text(tlsdir, "ca.key", cak, 0600) < 0 ||
	    write_text(tlsdir, "ca.pem", ca, 0644) < 0 ||
	    write_text(tlsdir, "node.key", key, 0600) < 0 ||
	    write_text(tlsdir, "node.pem", crt, 0644) < 0 ||
	    write_text(confdir, "credentials.json", json, 0600) < 0 ||
	    write_text(awsdir, "credentials", awscred, 0600) < 0 ||
	    write_text(awsdir, "config", awsconf, 0644) < 0 ||
	    spx_write_file(loc->conf, conf, strlen(conf), 0644, false) < 0)
		goto out;
	rc = 0;
out:
	free(ca);
	free(cak);
	free(crt);
	free(key);
	free(conf);
	free(confdir);
	free(tlsdir);
	free(awsdir);
	free(credp);
	free(json);
	free(awscred);
	free(awsconf);
	free(az);
	return rc;
}
