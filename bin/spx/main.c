/* spx: the dispatcher. Its own verbs manage a node; `spx TOOL VERB ...`
 * execs spx-TOOL (exact names only) and passes its exit status through. */
#include "spx.h"

#include "cli.h"
#include "conf/conf.h"
#include "node/node.h"
#include "node/svc.h"

int spx_cli_load(const struct spx_args *a, struct spx_node_loc *loc,
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

static int exec_tool(int argc, char **argv)
{
	char name[80];
	char *prog;

	/* Tool names are plain words: no path tricks through argv. */
	for (const char *p = argv[0]; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '-') ||
		    p - argv[0] > 32) {
			spx_warn("unknown verb '%s'", argv[0]);
			return SPX_USAGE;
		}
	snprintf(name, sizeof(name), "spx-%s", argv[0]);
	prog = spx_find_prog(name);
	if (!prog) {
		spx_warn("unknown verb or tool '%s'", argv[0]);
		return SPX_USAGE;
	}
	argv[0] = name;
	execv(prog, argv);
	spx_warn_errno("cannot run '%s'", prog);
	free(prog);
	return SPX_FAIL;
}


static const struct spx_opt init_opts[] = {
	SPX_OPT_ROOT,
	{ "nodes", 0, "N", "nodes in the cluster (1: a single node)" },
	{ "name", 0, "NODE", "this node's name (default node1)" },
	{ "region", 0, "REGION", "the region (default us-east-1)" },
	{ "az", 0, "AZ", "this node's availability zone (default REGIONa)" },
	{ "bind", 0, "ADDR", "listen address of the API ports (default 127.0.0.1)" },
	{ "ec2-port", 0, "PORT", "the EC2/STS API port (default 9999)" },
	{ "s3-port", 0, "PORT", "the S3 API port (default 8443)" },
	{ "http", 0, NULL, "plain HTTP instead of TLS (loopback only)" },
	{ "force", 'f', NULL, "overwrite an existing node" },
	{ 0 },
};
static const struct spx_opt root_opts[] = { SPX_OPT_ROOT, { 0 } };
static const struct spx_opt account_opts[] = {
	SPX_OPT_ROOT,
	{ "name", 'n', "NAME", "the account's name (unique)" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};
static const struct spx_opt images_import_opts[] = {
	SPX_OPT_ROOT,
	{ "name", 'n', "NAME", "the image's name (required; unique in the "
			       "account)" },
	{ "boot-mode", 0, "MODE", "bios (default) or uefi" },
	{ "description", 'd', "TEXT", "the image's description" },
	{ "account", 0, "ID", "the owning account (default: the admin's)" },
	{ "json", 'j', NULL, "print the image as JSON" },
	{ 0 },
};
static const struct spx_opt images_ls_opts[] = {
	SPX_OPT_ROOT,
	{ "account", 0, "ID", "only this account's images (default: all)" },
	{ "json", 'j', NULL, "print JSON instead of a table" },
	{ 0 },
};
static const struct spx_opt images_rm_opts[] = {
	SPX_OPT_ROOT,
	{ "account", 0, "ID", "the owning account (default: whichever)" },
	{ "delete-snapshot", 0, NULL, "delete the image's snapshot too" },
	{ 0 },
};
static const struct spx_opt up_opts[] = {
	SPX_OPT_ROOT,
	{ "foreground", 'F', NULL, "stay in the foreground; Ctrl-C stops" },
	{ 0 },
};
static const struct spx_opt json_opts[] = {
	SPX_OPT_ROOT,
	{ "json", 'j', NULL, "print JSON instead of a table" },
	{ 0 },
};

static const struct spx_opt agent_opts[] = {
	SPX_OPT_ROOT,
	{ "notify-fd", 0, "FD", "write a newline to FD once working" },
	{ "pidfile", 0, "FILE", "hold a lock on FILE and write the pid in it" },
	{ "log", 0, "FILE", "append messages to FILE" },
	{ 0 },
};

static const struct spx_opt itype_opts[] = {
	{ "json", 'j', NULL, "print JSON instead of a table" },
	{ 0 },
};

static const struct spx_verb verbs[] = {
	{ "admin init", cmd_admin_init, init_opts, "",
	  "make a new node: configuration, admin key, CA, aws profile", 0, 0 },
	{ "admin profile", cmd_admin_profile, root_opts, "",
	  "print the node's endpoints and a ready aws profile", 0, 0 },
	{ "admin account create", cmd_admin_account_create, account_opts, "",
	  "make an account with its own access key", 0, 0 },
	{ "admin images import", cmd_admin_images_import, images_import_opts,
	  "FILE",
	  "make an image (AMI) of a raw or qcow2 disk image: spx-vol import, "
	  "spx-vol snapshot, RegisterImage; prints the ImageId", 1, 1 },
	{ "admin images ls", cmd_admin_images_ls, images_ls_opts, "",
	  "list the images (AMIs) of every account", 0, 0 },
	{ "admin images rm", cmd_admin_images_rm, images_rm_opts, "AMI",
	  "deregister an image (its snapshot stays unless "
	  "--delete-snapshot)", 1, 1 },
	{ "admin schema", cmd_admin_schema, NULL, "",
	  "print every spinifex.toml key: type, default, meaning", 0, 0 },
	{ "up", cmd_up, up_opts, "", "start the node's services", 0, 0 },
	{ "down", cmd_down, root_opts, "", "stop the node's services", 0, 0 },
	{ "status", cmd_status, json_opts, "",
	  "show the node's services (exit 1 if any is down)", 0, 0 },
	{ "agent", cmd_agent, agent_opts, "",
	  "the node agent: make the volumes and instances the gateway "
	  "recorded (a service of spx up; logs every command it runs)", 0, 0 },
	{ "get nodes", cmd_get_nodes, json_opts, "",
	  "list the cluster's nodes", 0, 0 },
	{ "get vms", cmd_get_vms, json_opts, "",
	  "list the node's instances: state, whether QEMU is up, type, root "
	  "volume and the loopback port of their SSH", 0, 0 },
	{ "get instance-types", cmd_get_instance_types, itype_opts, "[TYPE...]",
	  "list the instance types the cloud offers", 0, -1 },
	{ 0 },
};

int main(int argc, char **argv)
{
	static const struct spx_tool tool = {
		"spx",
		"spx: an AWS-compatible edge cloud.\n"
		"'spx TOOL VERB ...' runs spx-TOOL (gw, ...).",
		verbs, exec_tool
	};

	return spx_cmd_main(&tool, argc, argv);
}
