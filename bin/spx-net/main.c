/* spx-net: the bridges and taps guests are plugged into (lib/net), in
 * the network namespace it runs in. Each verb makes the interface as
 * asked or finds it so, so the agent converges by running it again. */
#include "spx.h"

#include <jansson.h>
#include <string.h>

#include "cmd.h"
#include "net/net.h"
#include "netcli.h"
#include "print.h"

static int fail(const struct spx_args *a)
{
	spx_warn("%s: %s", a->verb->name, spx_errmsg());
	return spx_errstatus();
}

/* --address A[,B...]: the addresses, SPX_NET_ADDRS_MAX at most. */
static int addrs_of(const char *list, struct spx_net_cidr *out, size_t *n)
{
	*n = 0;
	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ",");

		if (*n == SPX_NET_ADDRS_MAX)
			return spx_error(SPX_USAGE, "--address: %d at most",
					 SPX_NET_ADDRS_MAX);
		if (spx_net_cidr_parse(p, len, &out[*n]) < 0)
			return spx_error_prefix("--address");
		for (size_t i = 0; i < *n; i++)
			if (out[i].addr == out[*n].addr)
				return spx_error(SPX_USAGE,
						 "--address: '%.*s' twice",
						 (int)len, p);
		(*n)++;
		p += len;
		if (*p == ',' && *++p == 0)
			return spx_error(SPX_USAGE, "--address: an empty one");
	}
	return 0;
}

static int cmd_bridge(const struct spx_args *a)
{
	struct spx_net_cidr addrs[SPX_NET_ADDRS_MAX];
	size_t n;

	if (addrs_of(spx_arg(a, "address"), addrs, &n) < 0 ||
	    spx_net_bridge(a->argv[0], addrs, n) < 0)
		return fail(a);
	return SPX_OK;
}

static int cmd_tap(const struct spx_args *a)
{
	const char *br = spx_arg(a, "bridge");
	long long owner;

	if (!br) {
		spx_warn("%s: --bridge is required", a->verb->name);
		return SPX_USAGE;
	}
	/* A uid below 2^31 - 1: (uid_t)-1 means none to the kernel. */
	if (spx_arg_int(a, "owner", 0, 0x7ffffffe, -1, &owner) < 0)
		return fail(a);
	struct spx_net_guard g;
	bool guard = spx_arg(a, "mac") || spx_arg(a, "address");

	if (guard && (!spx_arg(a, "mac") || !spx_arg(a, "address"))) {
		spx_warn("%s: --mac and --address go together (the guard)",
			 a->verb->name);
		return SPX_USAGE;
	}
	if ((guard && spx_net_guard_parse(spx_arg(a, "mac"),
					  spx_arg(a, "address"), &g) < 0) ||
	    spx_net_tap(a->argv[0], br, (uid_t)owner, guard ? &g : NULL) < 0)
		return fail(a);
	return SPX_OK;
}

static int cmd_rm(const struct spx_args *a)
{
	int rc = SPX_OK;

	for (int i = 0; i < a->argc; i++)
		if (spx_net_remove(a->argv[i]) < 0) {
			int st = fail(a);

			/* A usage error wins, then a failure. */
			if (rc != SPX_USAGE && (st == SPX_USAGE || rc == SPX_OK ||
						st == SPX_FAIL))
				rc = st;
		}
	return rc;
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s && *s ? s : "-";
}

static int cmd_ls(const struct spx_args *a)
{
	struct spx_table *t = spx_table_new("NAME", "KIND", "STATE", "MASTER",
					    "MAC", "MTU", "OWNER", "MARK",
					    "ADDRESSES", NULL);
	bool all = spx_flag(a, "all");
	json_t *list = NULL, *o;
	size_t i;
	int rc = SPX_OK;

	if (spx_net_list(&list) < 0) {
		spx_table_free(t);
		return fail(a);
	}
	json_array_foreach(list, i, o) {
		const char *kind = json_string_value(json_object_get(o, "kind"));
		json_t *owner = json_object_get(o, "owner"), *addrs, *v;
		struct spx_buf b = SPX_BUF_INIT;
		json_int_t mark;
		size_t j;

		if (!all && strcmp(kind, "bridge") && strcmp(kind, "tun"))
			continue;
		spx_table_row(t);
		spx_table_str(t, str(o, "name"));
		spx_table_str(t, str(o, "kind"));
		spx_table_str(t, str(o, "state"));
		spx_table_str(t, str(o, "master"));
		spx_table_str(t, str(o, "mac"));
		spx_table_int(t, json_integer_value(json_object_get(o, "mtu")));
		if (owner && json_integer_value(owner) >= 0)
			spx_table_int(t, json_integer_value(owner));
		else
			spx_table_json(t, "-", json_null());
		mark = json_integer_value(json_object_get(o, "mark"));
		if (mark) {
			char hex[16];

			snprintf(hex, sizeof(hex), "0x%08llx", (long long)mark);
			spx_table_json(t, hex, json_integer(mark));
		} else {
			spx_table_json(t, "-", json_null());
		}
		addrs = json_object_get(o, "addresses");
		json_array_foreach(addrs, j, v)
			spx_buf_addf(&b, "%s%s", j ? "," : "",
				       json_string_value(v));
		spx_table_json(t, b.len ? b.p : "-", json_incref(addrs));
		spx_buf_release(&b);
	}
	if (spx_table_print(t, stdout, spx_flag(a, "json")) < 0)
		rc = fail(a);
	spx_table_free(t);
	json_decref(list);
	return rc;
}

static const struct spx_opt bridge_opts[] = {
	{ "address", 'a', "CIDR[,CIDR...]",
	  "IPv4 addresses the host has on the bridge, as 10.0.0.1/24 (8 at "
	  "most)" },
	{ 0 },
};
static const struct spx_opt tap_opts[] = {
	{ "bridge", 'b', "NAME", "the bridge the tap is a port of (required)" },
	{ "owner", 'o', "UID",
	  "the user who may attach to the tap without privilege (QEMU's; "
	  "default: root only, or the owner it has)" },
	{ "mac", 'm', "MAC",
	  "with --address: guard the tap, letting in only frames from MAC, "
	  "and of them only ARP and IPv4 from the address (and DHCP's "
	  "requests)" },
	{ "address", 'A', "ADDRESS", "the guest's IPv4 address (with --mac)" },
	{ 0 },
};
static const struct spx_opt ls_opts[] = {
	{ "all", 'a', NULL, "every interface, not only bridges and taps" },
	{ "json", 'j', NULL, "print JSON" },
	{ 0 },
};

static const struct spx_opt serve_opts[] = {
	SPX_OPT_ROOT,
	{ "notify-fd", 0, "FD", "write a newline to FD once serving" },
	{ "pidfile", 0, "FILE", "hold a lock on FILE and write the pid in it" },
	{ "log", 0, "FILE", "append messages (dnsmasq's too) to FILE" },
	{ 0 },
};

static const struct spx_verb verbs[] = {
	{ "bridge", cmd_bridge, bridge_opts, "NAME",
	  "make the bridge NAME, or keep it, up and with the addresses", 1,
	  1 },
	{ "tap", cmd_tap, tap_opts, "NAME",
	  "make the persistent tap NAME, or keep it, a port of the bridge, "
	  "up",
	  1, 1 },
	{ "rm", cmd_rm, NULL, "NAME...", "remove interfaces", 1, -1 },
	{ "serve", cmd_serve, serve_opts, "",
	  "the node's net service (vm.network = \"bridge\"): make the "
	  "bridge, run dnsmasq for the instances' addresses and spx-vm "
	  "imds-server for their metadata (runs until stopped; spx up runs "
	  "it)",
	  0, 0 },
	{ "ls", cmd_ls, ls_opts, "",
	  "list the bridges and taps: NAME KIND STATE MASTER MAC MTU OWNER "
	  "MARK ADDRESSES",
	  0, 0 },
	{ 0 },
};

int main(int argc, char **argv)
{
	static const struct spx_tool tool = {
		"spx-net",
		"spx-net: the bridges and taps guests are plugged into.",
		verbs, NULL
	};

	return spx_cmd_main(&tool, argc, argv);
}
