/* spx-gw call: one signed request to a node's gateway through libcurl,
 * the path nodes use to call each other. Also a handy probe:
 *   spx-gw call DescribeRegions
 *   spx-gw call --service s3 /           (ListBuckets)
 */
#include "spx.h"

#include "auth/cred.h"
#include "cmd.h"
#include "conf/conf.h"
#include "http/client.h"
#include "http/query.h"
#include "node/node.h"
#include "gwcli.h"

static const char *version_of(const char *service)
{
	return !strcmp(service, "sts") ? "2011-06-15" : "2016-11-15";
}

int cmd_call(const struct spx_args *a)
{
	const char *service = spx_arg(a, "service") ? spx_arg(a, "service")
						      : "ec2";
	struct spx_node_loc loc;
	struct spx_conf conf;
	const struct spx_conf_node *self;
	struct spx_creds *creds = NULL;
	struct spx_cred key;
	struct spx_buf form = SPX_BUF_INIT, out = SPX_BUF_INIT;
	char *endpoint = NULL;
	bool s3 = !strcmp(service, "s3");
	long status = 0;
	int rc;

	if (!s3 && strcmp(service, "ec2") && strcmp(service, "sts")) {
		spx_warn("call: unknown service '%s' (ec2, sts or s3)", service);
		return SPX_USAGE;
	}
	if (s3 && (a->argc != 1 || a->argv[0][0] != '/')) {
		spx_warn("call: with --service s3, give one PATH starting "
			 "with '/'");
		return SPX_USAGE;
	}
	rc = gwcli_load(a, &loc, &conf);
	if (rc)
		return rc;
	self = spx_conf_self(&conf);
	if (spx_cred_open(conf.credentials.file, &creds) < 0 ||
	    spx_cred_first(creds, &key) < 0) {
		spx_warn("call: %s", spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	endpoint = spx_xprintf("%s://%s:%d", self->gw.http ? "http" : "https",
			       strchr(self->gw.bind, ':') ? "[::1]" : self->gw.bind,
			       s3 ? self->gw.s3_port : self->gw.ec2_port);
	if (!s3) {
		spx_buf_adds(&form, "Action=");
		spx_uri_encode(a->argv[0], strlen(a->argv[0]), 0, &form);
		spx_buf_addf(&form, "&Version=%s", version_of(service));
		for (int i = 1; i < a->argc; i++) {
			const char *eq = strchr(a->argv[i], '=');

			if (!eq || eq == a->argv[i]) {
				spx_warn("call: '%s' is not Name=Value",
					 a->argv[i]);
				rc = SPX_USAGE;
				goto out;
			}
			spx_buf_addc(&form, '&');
			spx_uri_encode(a->argv[i], (size_t)(eq - a->argv[i]), 0,
				       &form);
			spx_buf_addc(&form, '=');
			spx_uri_encode(eq + 1, strlen(eq + 1), 0, &form);
		}
	}
	struct spx_sigv4_cred cred = { key.access_key, key.secret,
				       conf.aws.region, service, NULL };
	struct spx_http_call call = {
		.method = s3 ? "GET" : "POST",
		.endpoint = endpoint,
		.path = s3 ? a->argv[0] : "/",
		.body = s3 ? NULL : form.p,
		.body_len = form.len,
		.content_type = s3 ? NULL
				   : "application/x-www-form-urlencoded; "
				     "charset=utf-8",
		.ca_file = conf.tls.ca_cert,
		.cred = &cred,
	};
	if (spx_http_call(&call, &status, &out, 64u << 20) < 0) {
		spx_warn("call: %s", spx_errmsg());
		rc = SPX_FAIL;
		goto out;
	}
	fwrite(out.p, 1, out.len, stdout);
	if (out.len && out.p[out.len - 1] != '\n')
		putchar('\n');
	if (status >= 500)
		rc = SPX_FAIL;
	else if (status >= 400)
		rc = status == 404 || status == 409 ? SPX_NO : SPX_USAGE;
	else
		rc = SPX_OK;
	if (status >= 400)
		spx_warn("call: HTTP %ld", status);
out:
	memset(&key, 0, sizeof(key));
	free(endpoint);
	spx_buf_release(&form);
	spx_buf_release(&out);
	spx_cred_close(creds);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}
