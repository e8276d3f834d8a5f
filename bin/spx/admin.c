/* spx admin init | profile */
#include "spx.h"

#include "auth/cred.h"
#include "cli.h"
#include "conf/conf.h"
#include "id.h"
#include "node/node.h"

int cmd_admin_init(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_node_init in = {
		.name = spx_arg(a, "name") ? spx_arg(a, "name") : "node1",
		.region = spx_arg(a, "region") ? spx_arg(a, "region")
					       : "us-east-1",
		.az = spx_arg(a, "az"),
		.bind = spx_arg(a, "bind") ? spx_arg(a, "bind") : "127.0.0.1",
		.http = spx_flag(a, "http"),
		.force = spx_flag(a, "force"),
	};
	struct spx_cred admin;
	long long ec2, s3, nodes;

	if (spx_arg_int(a, "ec2-port", 1, 65535, 9999, &ec2) < 0 ||
	    spx_arg_int(a, "s3-port", 1, 65535, 8443, &s3) < 0 ||
	    spx_arg_int(a, "nodes", 1, 64, 1, &nodes) < 0) {
		spx_warn("admin init: %s", spx_errmsg());
		return SPX_USAGE;
	}
	in.ec2_port = (int)ec2;
	in.s3_port = (int)s3;
	in.nodes = (int)nodes;
	spx_node_locate(spx_arg(a, "root"), &loc);
	if (spx_node_init(&loc, &in, &admin) < 0) {
		spx_warn("admin init: %s", spx_errmsg());
		spx_node_loc_release(&loc);
		return spx_errstatus();
	}
	printf("initialised node '%s' in %s\n", in.name, loc.root);
	printf("config:      %s\n", loc.conf);
	printf("access key:  %s\n", admin.access_key);
	printf("next:        spx up%s%s && spx admin profile%s%s\n",
	       spx_arg(a, "root") ? " --root " : "",
	       spx_arg(a, "root") ? loc.root : "",
	       spx_arg(a, "root") ? " --root " : "",
	       spx_arg(a, "root") ? loc.root : "");
	spx_node_loc_release(&loc);
	return SPX_OK;
}

int cmd_admin_profile(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	const struct spx_conf_node *self;
	struct spx_creds *creds = NULL;
	struct spx_cred admin;
	const char *scheme;
	char *awsdir;
	int rc;

	rc = spx_cli_load(a, &loc, &conf);
	if (rc)
		return rc;
	self = spx_conf_self(&conf);
	scheme = self->gw.http ? "http" : "https";
	if (spx_cred_open(conf.credentials.file, &creds) < 0 ||
	    spx_cred_first(creds, &admin) < 0) {
		spx_warn("admin profile: %s", spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	awsdir = loc.system ? spx_strdup("/etc/spinifex/aws")
			    : spx_xprintf("%s/aws", loc.root);
	printf("# spx node '%s' (region %s)\n", conf.node, conf.aws.region);
	printf("#   EC2/STS  %s://%s:%d\n", scheme, self->gw.bind,
	       (int)self->gw.ec2_port);
	printf("#   S3       %s://%s:%d\n", scheme, self->gw.bind,
	       (int)self->gw.s3_port);
	printf("#   CA       %s\n", conf.tls.ca_cert);
	printf("#   access key %s, account %s\n", admin.access_key,
	       admin.account);
	printf("#\n# The profile is in %s; to use it:\n", awsdir);
	printf("export AWS_SHARED_CREDENTIALS_FILE=%s/credentials\n", awsdir);
	printf("export AWS_CONFIG_FILE=%s/config\n", awsdir);
	printf("export AWS_PROFILE=spx\n");
	printf("unset AWS_CA_BUNDLE  # it would override the profile's "
	       "ca_bundle\n");
	printf("# then:\n");
	printf("#   aws --endpoint-url %s://%s:%d ec2 describe-regions\n",
	       scheme, self->gw.bind, (int)self->gw.ec2_port);
	printf("#   aws --endpoint-url %s://%s:%d sts get-caller-identity\n",
	       scheme, self->gw.bind, (int)self->gw.ec2_port);
	printf("#   aws --endpoint-url %s://%s:%d s3 ls\n", scheme,
	       self->gw.bind, (int)self->gw.s3_port);
	printf("#\n# Or as a profile to paste into ~/.aws/credentials and "
	       "~/.aws/config:\n");
	printf("#   [spx]\n#   aws_access_key_id = %s\n"
	       "#   aws_secret_access_key = %s\n",
	       admin.access_key, admin.secret);
	printf("#   [profile spx]\n#   region = %s\n#   ca_bundle = %s\n",
	       conf.aws.region, conf.tls.ca_cert);
	free(awsdir);
	memset(&admin, 0, sizeof(admin));
out:
	spx_cred_close(creds);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}

int cmd_admin_schema(const struct spx_args *a)
{
	spx_conf_schema_print(stdout);
	return SPX_OK;
}

static bool valid_account_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("+=,.@_-", s[i])))
			return false;
	return true;
}

int cmd_admin_account_create(const struct spx_args *a)
{
	const char *name = spx_arg(a, "name");
	struct spx_node_loc loc;
	struct spx_conf conf;
	struct spx_creds *creds = NULL;
	struct spx_cred k, have;
	int rc;

	if (!name || !valid_account_name(name)) {
		spx_warn("admin account create: --name must be 1 to 64 of "
			 "[A-Za-z0-9+=,.@_-]");
		return SPX_USAGE;
	}
	rc = spx_cli_load(a, &loc, &conf);
	if (rc)
		return rc;
	if (spx_cred_open(conf.credentials.file, &creds) < 0) {
		spx_warn("admin account create: %s", spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	if (spx_cred_find_user(creds, name, &have) == 0) {
		spx_warn("admin account create: an account named '%s' exists "
			 "(%s)",
			 name, have.account);
		rc = SPX_NO;
		goto out;
	}
	memset(&k, 0, sizeof(k));
	spx_account_id_new(k.account, sizeof(k.account));
	spx_access_key_new(k.access_key, sizeof(k.access_key), false);
	spx_secret_key_new(k.secret, sizeof(k.secret));
	snprintf(k.user, sizeof(k.user), "%s", name);
	snprintf(k.arn, sizeof(k.arn), "arn:aws:iam::%s:root", k.account);
	if (spx_cred_add(conf.credentials.file, &k) < 0) {
		spx_warn("admin account create: %s", spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	if (spx_flag(a, "json"))
		printf("{\"AccountId\": \"%s\", \"AccountName\": \"%s\", "
		       "\"AccessKeyId\": \"%s\", \"SecretAccessKey\": \"%s\"}\n",
		       k.account, name, k.access_key, k.secret);
	else
		printf("AccountId        %s\nAccountName      %s\n"
		       "AccessKeyId      %s\nSecretAccessKey  %s\n",
		       k.account, name, k.access_key, k.secret);
	memset(&k, 0, sizeof(k));
	rc = SPX_OK;
out:
	spx_cred_close(creds);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}
