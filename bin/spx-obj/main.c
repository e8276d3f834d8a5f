/* spx-obj: the object store from the shell. Each verb is a thin call
 * into lib/obj, the same code the S3 API runs. */
#include "spx.h"

#include "conf/conf.h"
#include "node/node.h"
#include "objcli.h"

int objcli_open(const struct spx_args *a, struct objcli *c)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	const struct spx_conf_node *self;
	struct spx_obj_opts o = { 0 };
	int rc;

	memset(c, 0, sizeof(*c));
	spx_node_locate(spx_arg(a, "root"), &loc);
	if (spx_conf_load(loc.conf, loc.root, &conf) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		spx_node_loc_release(&loc);
		return spx_errstatus();
	}
	self = spx_conf_self(&conf);
	o.drives = (const char *const *)self->obj.drives.v;
	o.ndrives = self->obj.drives.n;
	o.data = self->obj.data;
	o.parity = self->obj.parity;
	o.flags = SPX_OBJ_CREATE;
	rc = spx_obj_open(&o, &c->s);
	if (rc == 0) {
		c->owner = spx_strdup(conf.aws.account_id);
		c->region = spx_strdup(conf.aws.region);
		c->life_day = self->obj.lifecycle_day;
	}
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	if (rc < 0)
		return objcli_fail(a, rc);
	return 0;
}

int objcli_bucket(const struct spx_args *a, struct objcli *c,
		  const char *name, struct spx_obj_bucket *b)
{
	int rc = spx_obj_bucket_open(c->s, name, b);

	return rc < 0 ? objcli_fail(a, rc) : 0;
}

int objcli_open_bucket(const struct spx_args *a, struct objcli *c,
		       const char *name)
{
	int rc = objcli_open(a, c);

	if (rc)
		return rc;
	if ((rc = objcli_bucket(a, c, name, &c->b)))
		objcli_close(c);
	return rc;
}

void objcli_close(struct objcli *c)
{
	spx_obj_close(c->s);
	free(c->owner);
	free(c->region);
}

int objcli_fail(const struct spx_args *a, int rc)
{
	spx_warn("%s: %s", a->verb->name, spx_errmsg());
	return spx_obj_status(rc);
}


static const struct spx_opt root_opts[] = { SPX_OPT_ROOT, { 0 } };
static const struct spx_opt heal_opts[] = {
	SPX_OPT_ROOT,
	{ "drive0-replaced", 0, NULL,
	  "drive 0 is new: first copy the buckets' and objects' metadata it "
	  "lacks from the other drives" },
	{ 0 },
};
static const struct spx_opt life_opts[] = {
	SPX_OPT_ROOT,
	{ "budget", 'n', "N",
	  "look at about N versions of each bucket (default 100000; 0: no "
	  "bound), then stop between two keys and exit 1; the next run goes "
	  "on there" },
	{ "now", 0, "SECONDS",
	  "judge as if it were SECONDS since the epoch (default: now)" },
	{ "stderr", 0, NULL,
	  "print the report on standard error (where the agent logs it)" },
	{ "unfinished", 0, NULL,
	  "only the buckets whose last run stopped at the budget (the "
	  "agent's run a second after one that exited 1)" },
	{ 0 },
};
static const struct spx_opt ls_opts[] = {
	SPX_OPT_ROOT,
	{ "prefix", 'p', "P", "only keys that begin with P" },
	{ "start-after", 0, "KEY", "only keys after KEY" },
	{ "delimiter", 'd', "D", "roll keys up to common prefixes at D" },
	{ "max", 'n', "N", "at most N keys (and prefixes)" },
	{ "versions", 'V', NULL,
	  "every version and delete marker: KEY VERSION-ID latest|- SIZE" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};
static const struct spx_opt put_opts[] = {
	SPX_OPT_ROOT,
	{ "content-type", 't', "TYPE", "the Content-Type to store" },
	{ 0 },
};
#define OPT_VERSION_ID \
	{ "version-id", 0, "VID", "that version (\"null\": the null one)" }
static const struct spx_opt get_opts[] = {
	SPX_OPT_ROOT,
	{ "range", 0, "FIRST-LAST", "only bytes FIRST to LAST (inclusive)" },
	OPT_VERSION_ID,
	{ 0 },
};
static const struct spx_opt stat_opts[] = {
	SPX_OPT_ROOT,
	{ "json", 'j', NULL, "print JSON" },
	OPT_VERSION_ID,
	{ 0 },
};
static const struct spx_opt version_opts[] = {
	SPX_OPT_ROOT,
	OPT_VERSION_ID,
	{ 0 },
};

static const struct spx_verb verbs[] = {
	{ "mb", cmd_mb, root_opts, "BUCKET", "make a bucket", 1, 1 },
	{ "rb", cmd_rb, root_opts, "BUCKET",
	  "remove an empty bucket", 1, 1 },
	{ "ls", cmd_ls, ls_opts, "[BUCKET]",
	  "list the buckets, or the keys of BUCKET, one per line", 0, 1 },
	{ "put", cmd_put, put_opts, "BUCKET KEY [FILE]",
	  "store FILE (default stdin) as KEY; print its ETag", 2, 3 },
	{ "get", cmd_get, get_opts, "BUCKET KEY [FILE]",
	  "write the object to FILE (default stdout)", 2, 3 },
	{ "cat", cmd_cat, get_opts, "BUCKET KEY",
	  "write the object to stdout", 2, 2 },
	{ "cp", cmd_cp, version_opts, "SRC_BUCKET SRC_KEY DST_BUCKET DST_KEY",
	  "copy an object (--version-id: of the source)", 4, 4 },
	{ "rm", cmd_rm, version_opts, "BUCKET KEY",
	  "delete an object (a delete marker where versioned), or one "
	  "version", 2, 2 },
	{ "stat", cmd_stat, stat_opts, "BUCKET KEY",
	  "print an object's metadata", 2, 2 },
	{ "versioning", cmd_versioning, root_opts, "BUCKET [enable|suspend]",
	  "print a bucket's versioning state, or set it", 1, 2 },
	{ "verify", cmd_verify, root_opts, "[BUCKET]",
	  "check every shard block; exit 1 if any object is damaged", 0, 1 },
	{ "heal", cmd_heal, heal_opts, "[BUCKET]",
	  "rewrite missing or corrupt shards; exit 1 if any object is lost",
	  0, 1 },
	{ "lifecycle", cmd_lifecycle, life_opts, "[BUCKET]",
	  "apply the buckets' lifecycle rules (expire, remove noncurrent "
	  "versions and expired delete markers, abort old uploads); exit 1 "
	  "if the budget ran out first",
	  0, 1 },
	{ 0 },
};

int main(int argc, char **argv)
{
	static const struct spx_tool tool = {
		"spx-obj",
		"spx-obj: the object store (buckets, objects, erasure coding).",
		verbs, NULL
	};

	return spx_cmd_main(&tool, argc, argv);
}
