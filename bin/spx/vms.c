/* spx get vms: the node's instances as the records have them, with
 * whether each guest's QEMU is up (spx_vm_pid) and where its SSH server
 * is reached: a loopback port on the user network, its own address on
 * the bridge. */
#include "spx.h"

#include "cli.h"
#include "conf/conf.h"
#include "ec2/instance.h"
#include "ec2/rec.h"
#include "file.h"
#include "node/node.h"
#include "print.h"
#include "state/state.h"
#include "vm/vm.h"

int cmd_get_vms(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	struct spx_state *st = NULL;
	struct spx_table *t;
	json_t *all = NULL, *r;
	char *vms = NULL;
	size_t i;
	int rc;

	if ((rc = spx_cli_load(a, &loc, &conf)))
		return rc;
	if (spx_state_open(conf.paths.state, SPX_STATE_CREATE, &st) < 0 ||
	    spx_inst_list(st, NULL, time(NULL), &all) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	vms = spx_path_join(conf.paths.run, "vm");
	t = spx_table_new("INSTANCE", "STATE", "QEMU", "TYPE", "MEMORY(MiB)",
			  "VCPUS", "ROOT", "SSH", "ACCOUNT", "ERROR", NULL);
	json_array_foreach(all, i, r) {
		const char *id = spx_ec2_str0(r, "InstanceId");
		long long port = json_integer_value(json_object_get(r, "SpxSshPort"));
		char *dir, ssh[32];

		if (strcmp(spx_ec2_str0(r, "SpxNode"), conf.node))
			continue;
		dir = spx_path_join(vms, id);
		if (*spx_ec2_str0(r, "PrivateIpAddress") &&
		    !strcmp(spx_ec2_str0(r, "SpxNetwork"), "bridge"))
			snprintf(ssh, sizeof(ssh), "%s:22",
				 spx_ec2_str0(r, "PrivateIpAddress"));
		else if (port)
			snprintf(ssh, sizeof(ssh), "127.0.0.1:%lld", port);
		else
			snprintf(ssh, sizeof(ssh), "-");
		spx_table_row(t);
		spx_table_str(t, id);
		spx_table_str(t, spx_ec2_str0(json_object_get(r, "State"), "Name"));
		spx_table_str(t, spx_vm_pid(dir) ? "up" : "down");
		spx_table_str(t, spx_ec2_str0(r, "InstanceType"));
		spx_table_int(t, json_integer_value(json_object_get(r, "SpxMemMiB")));
		spx_table_int(t, json_integer_value(json_object_get(r, "SpxCpus")));
		spx_table_str(t, spx_ec2_str0(json_object_get(r, "SpxRoot"),
					      "VolumeId"));
		spx_table_str(t, ssh);
		spx_table_str(t, spx_ec2_str0(r, "SpxAccount"));
		spx_table_str(t, *spx_ec2_str0(r, "SpxError")
					 ? spx_ec2_str0(r, "SpxError")
					 : "-");
		free(dir);
	}
	rc = spx_table_print(t, stdout, spx_flag(a, "json")) < 0 ? SPX_FAIL
								   : SPX_OK;
	spx_table_free(t);
out:
	free(vms);
	json_decref(all);
	spx_state_close(st);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}
