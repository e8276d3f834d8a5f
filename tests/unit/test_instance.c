/* lib/ec2/instance.c: RunInstances' rules (image, type, key, counts,
 * user data, the root mapping, zone, tags, metadata options), admission
 * by the node's memory with nothing recorded on refusal, the states an
 * instance goes through with the agent's steps (launch, watch, stop,
 * shutdown, expiry), StopInstances (Force) and StartInstances (with its
 * own admission), the root volume's attachment and its fate on
 * termination, DisableApiTermination, and the metadata a guest reads;
 * placement groups (their rules, a spread group's one place on this node
 * taken and released) and ModifyInstanceMetadataOptions with the agent's
 * step that applies it to a running guest. */
#include "spx.h"

#include <jansson.h>

#include "ec2/fault.h"
#include "ec2/image.h"
#include "ec2/instance.h"
#include "ec2/keypair.h"
#include "ec2/pgroup.h"
#include "ec2/rec.h"
#include "ec2/snapshot.h"
#include "ec2/volume.h"
#include "file.h"
#include "id.h"
#include "state/state.h"
#include "t.h"
#include "vm/imds.h"
#include "vm/vm.h"

#define ACCT "123456789012"
#define T0 1700000000

static struct spx_state *st;
static char *tmp, *lock, *ilock;
static json_t *zones;
static struct spx_ebs_env ebs;
static struct spx_inst_env env;
static char ami[32], snap[32];

static const char *code(void)
{
	const char *c = spx_ec2_fault_code(NULL);

	return c ? c : "-";
}

/* RunInstances from JSON with "%A" replaced by the image id: 0 and the
 * reservation in *res (may be NULL), or -1 with the code. */
static int run(const char *tpl, json_t **res)
{
	struct spx_buf b = SPX_BUF_INIT;
	json_t *req, *out = NULL;
	int rc;

	for (const char *p = tpl; *p; p++) {
		if (p[0] == '%' && p[1] == 'A') {
			spx_buf_adds(&b, ami);
			p++;
		} else {
			spx_buf_addc(&b, *p);
		}
	}
	spx_buf_addc(&b, 0);
	req = json_loads(b.p, 0, NULL);
	if (!req)
		abort();
	spx_buf_release(&b);
	spx_error_clear();
	rc = spx_inst_run(st, &env, ACCT, req, T0, &out);
	json_decref(req);
	if (res)
		*res = out;
	else
		json_decref(out);
	return rc;
}

static size_t count(const char *prefix)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	size_t n;

	if (spx_state_list(st, prefix, 0, &l) < 0)
		abort();
	n = l.n;
	spx_state_list_release(&l);
	return n;
}

static json_t *inst(const char *id)
{
	json_t *r = NULL;

	if (spx_inst_get(st, ACCT, id, &r) < 0)
		return NULL;
	return r;
}

static const char *state_of(const char *id)
{
	static char buf[32];
	json_t *r = inst(id);

	snprintf(buf, sizeof(buf), "%s",
		 r ? json_string_value(json_object_get(
			     json_object_get(r, "State"), "Name"))
		   : code());
	json_decref(r);
	return buf;
}

static const char *vol_state(const char *vol)
{
	static char buf[64];
	json_t *r = NULL;

	if (spx_ebs_get(st, ACCT, vol, &r, NULL) < 0)
		return code();
	snprintf(buf, sizeof(buf), "%s/%zu",
		 json_string_value(json_object_get(r, "State")),
		 json_array_size(json_object_get(r, "Attachments")));
	json_decref(r);
	return buf;
}

/* The agent's step for instance id ("none" when there is none). */
static const char *step_of(const char *id, time_t now,
			   struct spx_inst_work *out)
{
	static const char *const names[] = { "launch", "fail",	 "watch",
					     "shutdown", "stop", "expire",
					     "report", "reboot", "metadata" };
	struct spx_inst_work *w;
	const char *s = "none";
	size_t n;

	if (spx_inst_pending(st, "n1", now, &w, &n) < 0)
		return code();
	for (size_t i = 0; i < n; i++)
		if (!strcmp(w[i].id, id)) {
			s = names[w[i].step];
			if (out)
				*out = w[i];
		}
	free(w);
	return s;
}

/* The root volume of id made by the agent (ok) or failed. */
static void vol_made(const char *vol, bool ok)
{
	struct spx_ebs_work w = { .step = SPX_EBS_CREATE };

	snprintf(w.account, sizeof(w.account), ACCT);
	snprintf(w.id, sizeof(w.id), "%s", vol);
	if (spx_ebs_done(st, &w, ok, ok ? NULL : "no space", T0) < 0)
		abort();
}

static const char *first_id(json_t *res, char *vol, size_t size)
{
	static char id[32];
	json_t *i = json_array_get(json_object_get(res, "Instances"), 0);

	snprintf(id, sizeof(id), "%s",
		 json_string_value(json_object_get(i, "InstanceId")));
	snprintf(vol, size, "%s",
		 json_string_value(json_object_get(
			 json_object_get(json_array_get(json_object_get(
							 i, "BlockDeviceMappings"),
						 0),
					 "Ebs"),
			 "VolumeId")));
	return id;
}

#define RUN1 "\"ImageId\": \"%A\", \"MinCount\": 1, \"MaxCount\": 1"

static void test_rules(void)
{
	static const struct {
		const char *req;
		const char *code;
	} cases[] = {
		{ "{" RUN1 "}", "-" },
		{ "{" RUN1 ", \"InstanceType\": \"t3.nano\"}", "-" },
		{ "{\"ImageId\": \"ami-0123456789abcdef0\", \"MinCount\": 1, "
		  "\"MaxCount\": 1}", "InvalidAMIID.NotFound" },
		{ "{\"ImageId\": \"ami-xyz\", \"MinCount\": 1, \"MaxCount\": 1}",
		  "InvalidAMIID.Malformed" },
		{ "{\"ImageId\": \"vol-0123456789abcdef0\", \"MinCount\": 1, "
		  "\"MaxCount\": 1}", "InvalidAMIID.Malformed" },
		{ "{" RUN1 ", \"InstanceType\": \"t3.gigantic\"}",
		  "InvalidParameterValue" },
		{ "{" RUN1 ", \"KeyName\": \"nope\"}", "InvalidKeyPair.NotFound" },
		{ "{" RUN1 ", \"KeyName\": \"k1\"}", "-" },
		{ "{\"ImageId\": \"%A\", \"MinCount\": 0, \"MaxCount\": 1}",
		  "InvalidParameterValue" },
		{ "{\"ImageId\": \"%A\", \"MinCount\": 2, \"MaxCount\": 1}",
		  "InvalidParameterValue" },
		{ "{\"ImageId\": \"%A\", \"MinCount\": 101, \"MaxCount\": 101}",
		  "InstanceLimitExceeded" },
		{ "{" RUN1 ", \"UserData\": \"IyEvYmluL3NoCmVjaG8gaGkK\"}", "-" },
		{ "{" RUN1 ", \"UserData\": \"not base64!\"}",
		  "InvalidUserData.Malformed" },
		{ "{" RUN1 ", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"VolumeSize\": 2, \"VolumeType\": "
		  "\"gp3\", \"DeleteOnTermination\": false}}]}", "-" },
		{ "{" RUN1 ", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"VolumeSize\": 0}}]}",
		  "InvalidParameterValue" },
		{ "{" RUN1 ", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvdb\", \"Ebs\": {\"VolumeSize\": 4}}]}",
		  "InvalidBlockDeviceMapping" },
		{ "{" RUN1 ", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"VolumeType\": \"io9\"}}]}",
		  "InvalidParameterValue" },
		{ "{" RUN1 ", \"Placement\": {\"AvailabilityZone\": "
		  "\"us-east-1a\"}}", "-" },
		{ "{" RUN1 ", \"Placement\": {\"AvailabilityZone\": "
		  "\"eu-west-1a\"}}", "InvalidParameterValue" },
		{ "{" RUN1 ", \"TagSpecifications\": [{\"ResourceType\": "
		  "\"instance\", \"Tags\": [{\"Key\": \"Name\", \"Value\": "
		  "\"a\"}]}, {\"ResourceType\": \"volume\", \"Tags\": "
		  "[{\"Key\": \"k\", \"Value\": \"v\"}]}]}", "-" },
		{ "{" RUN1 ", \"TagSpecifications\": [{\"ResourceType\": "
		  "\"image\", \"Tags\": [{\"Key\": \"k\", \"Value\": \"v\"}]}]}",
		  "InvalidParameterValue" },
		{ "{" RUN1 ", \"TagSpecifications\": [{\"ResourceType\": "
		  "\"instance\", \"Tags\": [{\"Key\": \"aws:x\", \"Value\": "
		  "\"v\"}]}]}", "InvalidParameterValue" },
		{ "{" RUN1 ", \"MetadataOptions\": {\"HttpTokens\": "
		  "\"required\", \"HttpPutResponseHopLimit\": 2}}", "-" },
		{ "{" RUN1 ", \"MetadataOptions\": {"
		  "\"HttpPutResponseHopLimit\": 65}}", "InvalidParameterValue" },
		{ "{" RUN1 ", \"LaunchTemplate\": {\"LaunchTemplateId\": "
		  "\"lt-0123456789abcdef0\"}}", "Unsupported" },
		{ "{" RUN1 ", \"InstanceType\": \"r6i.32xlarge\"}",
		  "InsufficientInstanceCapacity" },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		size_t ni = count("instances/"), nv = count("volumes/");
		int rc = run(cases[i].req, NULL);

		T_STR(rc == 0 ? "-" : code(), cases[i].code, "run %zu: %s", i,
		      cases[i].req);
		if (rc < 0) {
			/* A refusal records nothing. */
			T_INT(count("instances/"), ni, "run %zu: no instance",
			      i);
			T_INT(count("volumes/"), nv, "run %zu: no volume", i);
		}
	}
}

static void terminate_all(void)
{
	json_t *all, *r, *ids = json_array(), *out = NULL;
	size_t i;

	if (spx_inst_list(st, ACCT, T0, &all) < 0)
		abort();
	json_array_foreach(all, i, r)
		json_array_append(ids, json_object_get(r, "InstanceId"));
	if (spx_inst_terminate(st, ACCT, ids, T0, &out) < 0) {
		fprintf(stderr, "terminate_all: %s\n", spx_errmsg());
		abort();
	}
	json_array_foreach(all, i, r) {
		struct spx_inst_work w = { 0 };

		if (!strcmp(step_of(json_string_value(json_object_get(
					    r, "InstanceId")),
				    T0, &w),
			    "shutdown") &&
		    spx_inst_halted(st, &w, T0) < 0)
			abort();
	}
	json_decref(out);
	json_decref(ids);
	json_decref(all);
}

/* Memory: as many as fit up to MaxCount, at least MinCount, and what
 * shutting-down instances hold counts until they are terminated. */
static void test_admission(void)
{
	json_t *res = NULL, *ids, *out = NULL;
	struct spx_inst_work w;
	char vol[32];
	const char *id;

	terminate_all();
	env.mem_mib = 3 * 1024 + 512;
	T_INT(run("{\"ImageId\": \"%A\", \"MinCount\": 1, \"MaxCount\": 5}",
		  &res),
	      0, "run 1..5 t3.micro in 3.5 GiB");
	T_INT(json_array_size(json_object_get(res, "Instances")), 3,
	      "3 of them fit");
	id = first_id(res, vol, sizeof(vol));
	T_INT(run("{" RUN1 "}", NULL), -1, "a fourth does not fit");
	T_STR(code(), "InsufficientInstanceCapacity", "its code");
	T_INT(run("{" RUN1 ", \"InstanceType\": \"t3.nano\"}", NULL), 0,
	      "a t3.nano does");
	ids = json_pack("[s]", id);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate one");
	json_decref(out);
	T_INT(run("{" RUN1 "}", NULL), -1,
	      "shutting-down holds its memory");
	T_STR(step_of(id, T0, &w), "shutdown", "the agent shuts it down");
	T_INT(spx_inst_halted(st, &w, T0), 0, "halted");
	T_STR(state_of(id), "terminated", "terminated");
	T_INT(run("{" RUN1 "}", NULL), 0, "its memory is free again");
	json_decref(ids);
	json_decref(res);
	terminate_all();
	env.mem_mib = 65536;
}

/* On a bridge: each instance its own address, the lowest free one of
 * the network but the first four, the bridge's and the last; held until
 * terminated; a launch takes as many as have one. */
static void test_bridge(void)
{
	json_t *res = NULL, *ids, *out = NULL, *r;
	struct spx_inst_work w = { 0 };
	char vol[32], id[32], tap[SPX_INST_TAP_SIZE];
	/* The bridge has .5 of 10.9.0.0/28: .4 and .6 to .14 are left. */
	const char *want[] = { "10.9.0.4", "10.9.0.6", "10.9.0.7" };
	size_t i;

	terminate_all();
	env.bridge_address = "10.9.0.5/28";
	T_INT(run("{\"ImageId\": \"%A\", \"MinCount\": 3, \"MaxCount\": 3}",
		  &res),
	      0, "run 3 on a bridge");
	for (i = 0; i < 3; i++) {
		r = json_array_get(json_object_get(res, "Instances"), i);
		T_STR(spx_ec2_str0(r, "PrivateIpAddress"), want[i],
		      "address %zu", i);
	}
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	r = inst(id);
	T_STR(spx_ec2_str0(r, "SpxNetwork"), "bridge", "recorded on a bridge");
	T_STR(spx_ec2_str0(r, "PrivateIpAddress"), "10.9.0.4", "as answered");
	json_decref(r);
	vol_made(vol, true);
	T_STR(step_of(id, T0, &w), "launch", "launch");
	T_OK(w.bridge, "the agent puts it on a tap");
	T_STR(w.ip, "10.9.0.4", "at its address");
	spx_inst_tap(id, tap);
	T_INT(strlen(tap), 15, "a tap name of 15: %s", tap);
	T_OK(!strncmp(tap, id, 15), "its id's start");
	spx_inst_tap("i-1234abcd", tap);
	T_STR(tap, "i-1234abcd", "a short id whole");
	/* Terminated: its address is free again, not before. */
	ids = json_pack("[s]", id);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate");
	json_decref(out);
	T_INT(run("{\"ImageId\": \"%A\", \"MinCount\": 8, \"MaxCount\": 8}",
		  NULL),
	      -1, "8 more do not have addresses (7 left while it shuts down)");
	T_STR(code(), "InsufficientFreeAddressesInSubnet", "its code");
	T_STR(step_of(id, T0, &w), "shutdown", "shut down");
	T_INT(spx_inst_halted(st, &w, T0), 0, "halted");
	r = inst(id);
	T_STR(spx_ec2_str0(json_object_get(r, "State"), "Name"), "terminated",
	      "terminated");
	T_OK(!json_object_get(r, "PrivateIpAddress"),
	     "a terminated instance shows no address, as EC2's");
	json_decref(r);
	json_decref(res);
	T_INT(run("{\"ImageId\": \"%A\", \"MinCount\": 1, \"MaxCount\": 20}",
		  &res),
	      0, "1 to 20 more");
	T_INT(json_array_size(json_object_get(res, "Instances")), 8,
	      "as many as have addresses");
	r = json_array_get(json_object_get(res, "Instances"), 0);
	T_STR(spx_ec2_str0(r, "PrivateIpAddress"), "10.9.0.4",
	      "the terminated one's address, again");
	r = json_array_get(json_object_get(res, "Instances"), 7);
	T_STR(spx_ec2_str0(r, "PrivateIpAddress"), "10.9.0.14",
	      "the last but the broadcast");
	T_INT(run("{" RUN1 "}", NULL), -1, "none left");
	T_STR(code(), "InsufficientFreeAddressesInSubnet", "its code");
	json_decref(ids);
	/* Stopped on the bridge, then the node's instances are put on the
	 * user network: it does not start there, and stays stopped. */
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	vol_made(vol, true);
	step_of(id, T0, &w);
	spx_inst_launched(st, &w, T0);
	ids = json_pack("[s]", id);
	T_INT(spx_inst_stop(st, ACCT, ids, false, T0, &out), 0,
	      "stop one on the bridge");
	json_decref(out);
	step_of(id, T0, &w);
	T_INT(spx_inst_halted(st, &w, T0), 0, "halted");
	env.bridge_address = NULL;
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), -1,
	      "no start on a node no longer on its bridge");
	T_STR(code(), "InsufficientInstanceCapacity", "its code");
	T_STR(state_of(id), "stopped", "still stopped");
	env.bridge_address = "10.9.0.5/28";
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), 0,
	      "it starts with the bridge back");
	json_decref(out);
	T_STR(step_of(id, T0, &w), "launch", "launched again");
	T_OK(w.bridge, "on its tap");
	T_STR(w.ip, "10.9.0.4", "at its address");
	json_decref(ids);
	json_decref(res);
	env.bridge_address = NULL;
	terminate_all();
	T_INT(run("{" RUN1 "}", &res), 0, "on the user network again");
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	r = inst(id);
	T_STR(spx_ec2_str0(r, "PrivateIpAddress"), SPX_INST_PRIVATE_IP,
	      "the user network's address");
	T_OK(!json_object_get(r, "SpxNetwork"), "and no SpxNetwork");
	json_decref(r);
	json_decref(res);
	terminate_all();
}

static void test_lifecycle(void)
{
	json_t *res = NULL, *ids, *out = NULL, *r, *md;
	struct spx_inst_work w = { 0 };
	struct spx_imds *im = NULL;
	char vol[32], id[32];
	char *text;

	T_INT(run("{" RUN1 ", \"KeyName\": \"k1\", \"UserData\": "
		  "\"IyEvYmluL3NoCg==\", \"MetadataOptions\": {\"HttpTokens\": "
		  "\"required\"}}",
		  &res),
	      0, "run");
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	T_OK(spx_inst_id_wellformed(id), "an instance id: %s", id);
	T_STR(json_string_value(json_object_get(res, "OwnerId")), ACCT,
	      "OwnerId");
	T_OK(json_object_get(json_array_get(json_object_get(res, "Instances"),
					    0),
			     "SpxNode") == NULL,
	     "the answer holds no Spx member");
	T_STR(state_of(id), "pending", "pending");
	T_STR(vol_state(vol), "creating/1", "root volume creating, attached");
	T_STR(step_of(id, T0, NULL), "none", "no step while it is made");
	vol_made(vol, true);
	T_STR(vol_state(vol), "in-use/1", "root volume in-use");
	T_STR(step_of(id, T0, &w), "launch", "then launch");
	T_STR(w.vol, vol, "with its root volume");
	T_INT(w.mem_mib, 1024, "t3.micro's memory");
	T_INT(w.cpus, 2, "and vCPUs");
	T_INT(spx_inst_set_port(st, &w, 40022), 0, "port");
	T_INT(spx_inst_launched(st, &w, T0), 0, "launched");
	T_STR(state_of(id), "running", "running");
	r = inst(id);
	T_INT(json_integer_value(json_object_get(r, "SpxSshPort")), 40022,
	      "port kept");
	T_OK(json_object_get(r, "StateReason") == NULL, "no StateReason");
	T_STR(json_string_value(json_object_get(
		      json_object_get(r, "MetadataOptions"), "State")),
	      "applied", "metadata options applied");
	md = spx_inst_metadata(r, "us-east-1");
	text = json_dumps(md, JSON_COMPACT);
	T_INT(spx_imds_load(text, strlen(text), &im), 0,
	      "metadata.json loads: %s", text);
	T_OK(strstr(text, "\"instance-id\":\"i-") &&
		     strstr(text, "\"http-tokens\":\"required\"") &&
		     strstr(text, "\"user-data\":\"IyEvYmluL3NoCg==\"") &&
		     strstr(text, "\"openssh-key\":\"ssh-ed25519 ") &&
		     strstr(text, ".ec2.internal\"") &&
		     strstr(text, "\"availability-zone\":\"us-east-1a\""),
	     "metadata holds what the guest needs");
	{
		char mac[SPX_INST_MAC_SIZE], other[SPX_INST_MAC_SIZE];
		const json_t *m = json_object_get(md, "meta-data"), *nic;

		spx_inst_mac(id, mac);
		spx_inst_mac("i-0123456789abcdef1", other);
		T_OK(spx_vm_mac_valid(mac) && !strncmp(mac, "02:", 3),
		     "a unicast, locally administered MAC: %s", mac);
		T_OK(strcmp(mac, other) != 0, "another instance, another MAC");
		T_STR(spx_ec2_str0(m, "mac"), mac, "meta-data/mac");
		nic = json_object_get(json_object_get(json_object_get(
			json_object_get(m, "network"), "interfaces"), "macs"),
			mac);
		T_STR(spx_ec2_str0(nic, "mac"), mac, "network/interfaces/macs/MAC/mac");
		T_STR(spx_ec2_str0(nic, "device-number"), "0", "device-number 0");
		T_STR(spx_ec2_str0(nic, "local-ipv4s"), SPX_INST_PRIVATE_IP,
		      "its address");
		T_STR(spx_ec2_str0(nic, "owner-id"), ACCT, "its owner");
	}
	{
		const char *doc = json_string_value(json_object_get(
			json_object_get(json_object_get(md, "dynamic"),
					"instance-identity"),
			"document"));
		json_t *d = doc ? json_loads(doc, 0, NULL) : NULL;

		T_OK(d && !strncmp(spx_ec2_str0(d, "instanceId"), "i-", 2) &&
			     !strcmp(spx_ec2_str0(d, "region"), "us-east-1") &&
			     !strcmp(spx_ec2_str0(d, "availabilityZone"),
				     "us-east-1a") &&
			     !strcmp(spx_ec2_str0(d, "imageId"),
				     spx_ec2_str0(r, "ImageId")) &&
			     strlen(spx_ec2_str0(d, "pendingTime")) == 20 &&
			     *spx_ec2_str0(d, "accountId"),
		     "the instance identity document: %s", doc ? doc : "none");
		json_decref(d);
	}
	spx_imds_free(im);
	free(text);
	json_decref(md);
	json_decref(r);
	T_STR(step_of(id, T0, &w), "watch", "running: watched");
	/* QEMU gone on its own. */
	T_INT(spx_inst_died(st, &w, "Client.InstanceInitiatedShutdown", T0), 0,
	      "died");
	T_STR(state_of(id), "stopped", "stopped");
	r = inst(id);
	T_STR(json_string_value(json_object_get(json_object_get(r, "StateReason"),
						"Code")),
	      "Client.InstanceInitiatedShutdown", "with the reason");
	json_decref(r);
	T_STR(step_of(id, T0, NULL), "none", "stopped: nothing to do");
	T_INT(spx_inst_died(st, &w, "Server.InternalError", T0), 0,
	      "a second death changes nothing");
	ids = json_pack("[s]", id);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate");
	T_STR(json_string_value(json_object_get(
		      json_object_get(json_array_get(out, 0), "PreviousState"),
		      "Name")),
	      "stopped", "previous state");
	T_STR(json_string_value(json_object_get(
		      json_object_get(json_array_get(out, 0), "CurrentState"),
		      "Name")),
	      "shutting-down", "current state");
	json_decref(out);
	T_STR(step_of(id, T0, &w), "shutdown", "the agent shuts it down");
	T_INT(spx_inst_halted(st, &w, T0), 0, "halted");
	T_STR(state_of(id), "terminated", "terminated");
	T_STR(vol_state(vol), "deleting/0", "root volume deleting, detached");
	T_STR(step_of(id, T0, NULL), "none", "terminated: nothing to do");
	{
		struct spx_ebs_work dw = { .step = SPX_EBS_DELETE };

		snprintf(dw.account, sizeof(dw.account), ACCT);
		snprintf(dw.id, sizeof(dw.id), "%s", vol);
		T_INT(spx_ebs_done(st, &dw, false, "disk on fire", T0), 0,
		      "the volume's deletion fails");
	}
	T_STR(step_of(id, T0, &w), "report", "which the instance reports");
	T_OK(strstr(w.why, "disk on fire") && strstr(w.why, vol), "why: %s",
	     w.why);
	T_INT(spx_inst_note(st, &w, w.why), 0, "noted");
	r = inst(id);
	T_OK(strstr(json_string_value(json_object_get(r, "SpxError")),
		    "disk on fire") != NULL,
	     "in the instance's record");
	json_decref(r);
	T_STR(step_of(id, T0, NULL), "none", "once");
	T_INT(spx_inst_terminate(st, ACCT, ids, T0 + 5, &out), 0,
	      "terminate again");
	T_STR(json_string_value(json_object_get(
		      json_object_get(json_array_get(out, 0), "PreviousState"),
		      "Name")),
	      "terminated", "again: previous terminated");
	json_decref(out);
	T_STR(step_of(id, T0 + 3599, NULL), "none", "kept for an hour");
	T_STR(step_of(id, T0 + 3600, &w), "expire", "then expired");
	r = NULL;
	T_INT(spx_inst_list(st, ACCT, T0 + 3600, &r), 0, "list");
	{
		bool seen = false;
		json_t *e;
		size_t i;

		json_array_foreach(r, i, e)
			seen |= !strcmp(json_string_value(json_object_get(
						e, "InstanceId")),
					id);
		T_OK(!seen, "an expired instance is not listed");
	}
	json_decref(r);
	r = NULL;
	T_INT(spx_inst_list_ids(st, ACCT, ids, T0 + 3599, &r), 0,
	      "by its id, within the hour");
	T_INT(json_array_size(r), 1, "listed");
	json_decref(r);
	r = NULL;
	T_INT(spx_inst_list_ids(st, ACCT, ids, T0 + 3600, &r), 0,
	      "by its id, after it");
	T_INT(json_array_size(r), 0,
	      "an expired instance is not listed by its id either");
	json_decref(r);
	T_INT(spx_inst_expire(st, &w), 0, "expire");
	T_STR(state_of(id), "InvalidInstanceID.NotFound", "gone");
	json_decref(ids);
	json_decref(res);
}

/* Instances named by id: each once, sorted as the full list, only the
 * account's; a malformed or unknown id fails the whole call. */
static void test_list_ids(void)
{
	json_t *res = NULL, *ids, *out, *ra, *rb, *in;
	char a[32], b[32];

	T_INT(run("{\"ImageId\": \"%A\", \"MinCount\": 2, "
		  "\"MaxCount\": 2}",
		  &res),
	      0, "run two");
	in = json_object_get(res, "Instances");
	snprintf(a, sizeof(a), "%s",
		 json_string_value(json_object_get(json_array_get(in, 0),
						   "InstanceId")));
	snprintf(b, sizeof(b), "%s",
		 json_string_value(json_object_get(json_array_get(in, 1),
						   "InstanceId")));
	json_decref(res);
	if (strcmp(a, b) > 0) {
		char t[32];

		memcpy(t, a, sizeof(t));
		memcpy(a, b, sizeof(a));
		memcpy(b, t, sizeof(b));
	}
	ra = inst(a);
	rb = inst(b);
	ids = json_pack("[s, s, s]", b, a, b);
	out = NULL;
	T_INT(spx_inst_list_ids(st, ACCT, ids, T0, &out), 0, "b, a, b");
	T_INT(json_array_size(out), 2, "each once");
	T_OK(json_equal(json_array_get(out, 0), ra) &&
		     json_equal(json_array_get(out, 1), rb),
	     "the records, sorted by id as the full list has them");
	json_decref(out);
	json_decref(ids);
	ids = json_pack("[s, s]", a, "i-0123456789abcdef0");
	out = NULL;
	T_INT(spx_inst_list_ids(st, ACCT, ids, T0, &out), -1,
	      "one unknown");
	T_STR(code(), "InvalidInstanceID.NotFound", "NotFound");
	T_OK(!out, "and nothing listed");
	json_decref(ids);
	ids = json_pack("[s, s]", a, "i-nothex");
	T_INT(spx_inst_list_ids(st, ACCT, ids, T0, &out), -1,
	      "one malformed");
	T_STR(code(), "InvalidInstanceID.Malformed", "Malformed");
	json_decref(ids);
	ids = json_pack("[s]", a);
	T_INT(spx_inst_list_ids(st, "210987654321", ids, T0, &out), -1,
	      "another account's");
	T_STR(code(), "InvalidInstanceID.NotFound", "is not found");
	json_decref(ids);
	json_decref(ra);
	json_decref(rb);
	terminate_all();
}

static void test_keep_and_fail(void)
{
	json_t *res = NULL, *ids, *out = NULL;
	struct spx_inst_work w = { 0 };
	char vol[32], id[32];

	/* DeleteOnTermination false keeps the volume, available. */
	T_INT(run("{" RUN1 ", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"DeleteOnTermination\": false}}]}",
		  &res),
	      0, "run, root kept");
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	vol_made(vol, true);
	step_of(id, T0, &w);
	spx_inst_launched(st, &w, T0);
	ids = json_pack("[s]", id);
	T_INT(spx_ebs_delete(st, ACCT, vol), -1, "DeleteVolume of a root");
	T_STR(code(), "VolumeInUse", "VolumeInUse");
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate");
	json_decref(out);
	step_of(id, T0, &w);
	T_INT(spx_inst_halted(st, &w, T0), 0, "halted");
	T_STR(vol_state(vol), "available/0", "root volume kept, available");
	json_decref(ids);

	/* A root volume that cannot be made fails the launch. */
	T_INT(run("{" RUN1 "}", &res), 0, "run");
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	vol_made(vol, false);
	T_STR(step_of(id, T0, &w), "fail", "the launch fails");
	T_OK(strstr(w.why, "no space") != NULL, "why: %s", w.why);
	T_INT(spx_inst_launch_failed(st, &w, w.why, T0), 0, "recorded");
	T_STR(state_of(id), "terminated", "terminated");
	T_STR(vol_state(vol), "deleting/0", "its volume deleted");

	/* DisableApiTermination. */
	T_INT(run("{" RUN1 ", \"DisableApiTermination\": true}", &res), 0,
	      "run, protected");
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	ids = json_pack("[s, s]", "i-0123456789abcdef0", id);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), -1,
	      "unknown id first");
	T_STR(code(), "InvalidInstanceID.NotFound", "NotFound");
	json_array_remove(ids, 0);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), -1, "protected");
	T_STR(code(), "OperationNotPermitted", "OperationNotPermitted");
	T_STR(state_of(id), "pending", "unchanged");
	json_array_set_new(ids, 0, json_string("i-xyz"));
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), -1, "malformed");
	T_STR(code(), "InvalidInstanceID.Malformed", "Malformed");
	json_decref(ids);
}

static const char *change_name(json_t *out, const char *which)
{
	return json_string_value(json_object_get(
		json_object_get(json_array_get(out, 0), which), "Name"));
}

static void test_stop_start(void)
{
	json_t *res = NULL, *ids, *out = NULL, *r;
	struct spx_inst_work w = { 0 };
	char vol[32], id[32];

	T_INT(run("{" RUN1 "}", &res), 0, "run");
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	vol_made(vol, true);
	step_of(id, T0, &w);
	spx_inst_launched(st, &w, T0);
	ids = json_pack("[s]", id);
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), 0,
	      "start a running one");
	T_STR(change_name(out, "CurrentState"), "running", "stays running");
	json_decref(out);
	T_INT(spx_inst_stop(st, ACCT, ids, false, T0, &out), 0, "stop");
	T_STR(change_name(out, "PreviousState"), "running", "was running");
	T_STR(change_name(out, "CurrentState"), "stopping", "stopping");
	json_decref(out);
	T_STR(step_of(id, T0, &w), "stop", "the agent stops it");
	T_OK(!w.force, "not forced");
	T_INT(spx_inst_stop(st, ACCT, ids, true, T0, &out), 0, "force it");
	json_decref(out);
	T_STR(step_of(id, T0, &w), "stop", "still a stop");
	T_OK(w.force, "forced now");
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), -1,
	      "start while stopping");
	T_STR(code(), "IncorrectInstanceState", "IncorrectInstanceState");
	T_INT(spx_inst_halted(st, &w, T0), 0, "halted");
	T_STR(state_of(id), "stopped", "stopped");
	r = inst(id);
	T_STR(json_string_value(json_object_get(json_object_get(r, "StateReason"),
						"Code")),
	      "Client.UserInitiatedShutdown", "user initiated");
	T_OK(json_object_get(r, "SpxForce") == NULL, "force forgotten");
	json_decref(r);
	T_STR(vol_state(vol), "in-use/1", "the root volume stays attached");
	/* Not enough memory to start it again. */
	env.mem_mib = 512;
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), -1,
	      "start beyond memory");
	T_STR(code(), "InsufficientInstanceCapacity", "its code");
	T_STR(state_of(id), "stopped", "still stopped");
	env.mem_mib = 65536;
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), 0, "start");
	T_STR(change_name(out, "PreviousState"), "stopped", "was stopped");
	T_STR(change_name(out, "CurrentState"), "pending", "pending");
	json_decref(out);
	T_STR(step_of(id, T0, &w), "launch", "launched again");
	T_INT(w.port, 0, "no port yet");
	json_array_append_new(ids, json_string("i-0123456789abcdef0"));
	T_INT(spx_inst_stop(st, ACCT, ids, false, T0, &out), -1,
	      "stop with an unknown id");
	T_STR(code(), "InvalidInstanceID.NotFound", "NotFound");
	T_STR(state_of(id), "pending", "nothing changed");
	json_array_remove(ids, 1);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate");
	json_decref(out);
	step_of(id, T0, &w);
	spx_inst_halted(st, &w, T0);
	T_INT(spx_inst_stop(st, ACCT, ids, false, T0, &out), -1,
	      "stop a terminated one");
	T_STR(code(), "IncorrectInstanceState", "IncorrectInstanceState");
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), -1,
	      "start a terminated one");
	T_STR(code(), "IncorrectInstanceState", "IncorrectInstanceState");
	json_decref(ids);
}

static int modify(const char *id, const char *json)
{
	char *txt = spx_xprintf("{\"InstanceId\": \"%s\", %s}", id, json);
	json_t *req = json_loads(txt, 0, NULL);
	int rc;

	if (!req)
		abort();
	spx_error_clear();
	rc = spx_inst_modify(st, ACCT, req);
	json_decref(req);
	free(txt);
	return rc;
}

/* TerminateInstances' window between its checks and its changes: the
 * instance named here is protected in it, as a ModifyInstanceAttribute
 * landing there would. */
static char window_protect[SPX_ID_SIZE];

void spx_inst_terminate_window(const char *id)
{
	if (*window_protect && !strcmp(id, window_protect)) {
		*window_protect = '\0';
		if (modify(id, "\"DisableApiTermination\": {\"Value\": true}") < 0)
			abort();
	}
}

static void test_protect_race(void)
{
	json_t *res, *ids, *out = NULL;
	char a[SPX_ID_SIZE], b[SPX_ID_SIZE], vol[SPX_ID_SIZE];

	T_INT(run("{" RUN1 "}", &res), 0, "run a");
	snprintf(a, sizeof(a), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	T_INT(run("{" RUN1 "}", &res), 0, "run b");
	snprintf(b, sizeof(b), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	/* b is protected after the checks passed, before its change. */
	snprintf(window_protect, sizeof(window_protect), "%s", b);
	ids = json_pack("[s, s]", a, b);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), -1,
	      "protected meanwhile: refused");
	T_STR(code(), "OperationNotPermitted", "OperationNotPermitted");
	T_OK(!out, "no answer");
	T_STR(state_of(b), "pending", "the protected one runs on");
	T_STR(state_of(a), "shutting-down", "the one before it was changed");
	T_INT(modify(b, "\"DisableApiTermination\": {\"Value\": false}"), 0,
	      "unprotected");
	json_array_remove(ids, 0);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "then terminated");
	json_decref(out);
	json_decref(ids);
}

static void test_reboot_modify(void)
{
	static const struct {
		const char *req;
		bool stopped;	/* the instance is stopped by then */
		const char *code;
	} cases[] = {
		{ "\"DisableApiTermination\": {\"Value\": true}", false, "-" },
		{ "\"Attribute\": \"disableApiTermination\", \"Value\": "
		  "\"false\"", false, "-" },
		{ "\"Attribute\": \"disableApiTermination\", \"Value\": "
		  "\"maybe\"", false, "InvalidParameterValue" },
		{ "\"InstanceType\": {\"Value\": \"t3.small\"}", false,
		  "IncorrectInstanceState" },
		{ "\"InstanceType\": {\"Value\": \"t3.small\"}", true, "-" },
		{ "\"InstanceType\": {\"Value\": \"t3.huge\"}", true,
		  "InvalidParameterValue" },
		{ "\"UserData\": {\"Value\": \"aGkK\"}", true, "-" },
		{ "\"UserData\": {\"Value\": \"!!\"}", true,
		  "InvalidUserData.Malformed" },
		{ "\"InstanceType\": {\"Value\": \"t3.small\"}, "
		  "\"UserData\": {\"Value\": \"aGkK\"}", true,
		  "InvalidParameterCombination" },
		{ "\"Attribute\": \"instanceType\", \"Value\": \"t3.nano\", "
		  "\"UserData\": {\"Value\": \"aGkK\"}", true,
		  "InvalidParameterCombination" },
		{ "\"Kernel\": {\"Value\": \"aki-1\"}", true, "Unsupported" },
		{ "\"Attribute\": \"instanceType\"", true, "MissingParameter" },
	};
	json_t *res = NULL, *ids, *out = NULL, *r;
	struct spx_inst_work w = { 0 };
	char vol[32], id[32];
	bool stopped = false;

	T_INT(run("{" RUN1 "}", &res), 0, "run");
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	ids = json_pack("[s]", id);
	T_INT(spx_inst_reboot(st, ACCT, ids), 0, "reboot a pending one");
	T_STR(step_of(id, T0, NULL), "none", "nothing to do");
	vol_made(vol, true);
	step_of(id, T0, &w);
	spx_inst_launched(st, &w, T0);
	T_STR(step_of(id, T0, NULL), "watch", "running: watched");
	T_INT(spx_inst_reboot(st, ACCT, ids), 0, "reboot");
	T_STR(step_of(id, T0, &w), "reboot", "the agent reboots it");
	T_INT(w.reboot, 1, "the first reboot");
	T_INT(spx_inst_rebooted(st, &w), 0, "rebooted");
	T_STR(step_of(id, T0, NULL), "watch", "watched again");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		if (cases[i].stopped && !stopped) {
			spx_inst_stop(st, ACCT, ids, false, T0, &out);
			json_decref(out);
			step_of(id, T0, &w);
			spx_inst_halted(st, &w, T0);
			stopped = true;
		}
		T_STR(modify(id, cases[i].req) == 0 ? "-" : code(), cases[i].code,
		      "modify %zu: %s", i, cases[i].req);
	}
	T_INT(spx_inst_reboot(st, ACCT, ids), -1, "reboot a stopped one");
	T_STR(code(), "IncorrectInstanceState", "IncorrectInstanceState");
	r = inst(id);
	T_STR(json_string_value(json_object_get(r, "InstanceType")), "t3.small",
	      "type changed");
	T_INT(json_integer_value(json_object_get(r, "SpxMemMiB")), 2048,
	      "and its memory");
	T_STR(json_string_value(json_object_get(r, "SpxUserData")), "aGkK",
	      "user data changed");
	T_OK(json_is_false(json_object_get(r, "SpxDisableApiTermination")),
	     "not protected");
	json_decref(r);
	T_INT(modify(id, "\"DisableApiTermination\": {\"Value\": true}"), 0,
	      "protect");
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), -1, "protected");
	T_INT(modify(id, "\"DisableApiTermination\": {\"Value\": false}"), 0,
	      "unprotect");
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminated");
	json_decref(out);
	json_decref(ids);
}

/* A volume made (available) on node, in the zone. */
static void new_volume(const char *node, char *id, size_t size)
{
	struct spx_ebs_env e = ebs;
	json_t *req = json_pack("{s:s, s:i}", "AvailabilityZone", "us-east-1a",
				"Size", 1);
	json_t *rec = NULL;

	e.node = node;
	if (spx_ebs_create(st, &e, ACCT, req, NULL, T0, &rec) < 0)
		abort();
	snprintf(id, size, "%s",
		 json_string_value(json_object_get(rec, "VolumeId")));
	json_decref(rec);
	json_decref(req);
	vol_made(id, true);
}

/* AttachVolume of vol to id as dev (NULL: none given): 0, or -1 with
 * the code; *state the attachment's state answered. */
static int attach(const char *vol, const char *id, const char *dev,
		  const char **state)
{
	static char buf[32];
	json_t *irec = inst(id), *req, *out = NULL;
	int rc;

	req = json_pack("{s:s, s:s}", "VolumeId", vol, "InstanceId", id);
	if (dev)
		json_object_set_new(req, "Device", json_string(dev));
	spx_error_clear();
	rc = irec ? spx_ebs_attach(st, &ebs, ACCT, req, irec, T0, &out) : -1;
	snprintf(buf, sizeof(buf), "%s",
		 rc == 0 ? json_string_value(json_object_get(out, "State"))
			 : code());
	if (state)
		*state = buf;
	json_decref(out);
	json_decref(req);
	json_decref(irec);
	return rc;
}

static int detach(const char *json, const char **state)
{
	static char buf[32];
	json_t *req = json_loads(json, 0, NULL), *out = NULL;
	int rc;

	spx_error_clear();
	rc = spx_ebs_detach(st, ACCT, req, &out);
	snprintf(buf, sizeof(buf), "%s",
		 rc == 0 ? json_string_value(json_object_get(out, "State"))
			 : code());
	if (state)
		*state = buf;
	json_decref(out);
	json_decref(req);
	return rc;
}

/* The attach or detach step the agent has for vol: "attach@16",
 * "detach@80" (the instance's state code), or "none". */
static const char *vol_step(const char *vol)
{
	static char buf[48];
	struct spx_ebs_work *w;
	size_t n;

	snprintf(buf, sizeof(buf), "none");
	if (spx_ebs_pending(st, "n1", &w, &n) < 0)
		return code();
	for (size_t i = 0; i < n; i++)
		if (!strcmp(w[i].id, vol) &&
		    (w[i].step == SPX_EBS_ATTACH || w[i].step == SPX_EBS_DETACH))
			snprintf(buf, sizeof(buf), "%s@%d%s",
				 w[i].step == SPX_EBS_ATTACH ? "attach"
							     : "detach",
				 w[i].inst_code, w[i].force ? "!" : "");
	free(w);
	return buf;
}

static void vol_step_done(const char *vol, const char *id, bool attach_step,
			  bool ok)
{
	struct spx_ebs_work w = { .step = attach_step ? SPX_EBS_ATTACH
						      : SPX_EBS_DETACH };

	snprintf(w.account, sizeof(w.account), ACCT);
	snprintf(w.id, sizeof(w.id), "%s", vol);
	snprintf(w.inst, sizeof(w.inst), "%s", id);
	if (spx_ebs_done(st, &w, ok, ok ? NULL : "no slot", T0) < 0)
		abort();
}

/* A running instance (its root volume made, launched): its id. */
static const char *running_one(char *rootvol, size_t size)
{
	static char id[32];
	struct spx_inst_work w = { 0 };
	json_t *res = NULL;

	if (run("{" RUN1 "}", &res) < 0)
		abort();
	snprintf(id, sizeof(id), "%s", first_id(res, rootvol, size));
	json_decref(res);
	vol_made(rootvol, true);
	step_of(id, T0, &w);
	spx_inst_launched(st, &w, T0);
	return id;
}

static void test_attach(void)
{
	static const struct {
		const char *dev;
		const char *code;
	} bad_dev[] = {
		{ NULL, "MissingParameter" },
		{ "/dev/hda", "InvalidParameterValue" },
		{ "/dev/sda", "InvalidParameterValue" },
		{ "/dev/sdf1", "InvalidParameterValue" },
		{ "/dev/sd", "InvalidParameterValue" },
		{ "/dev/sdF", "InvalidParameterValue" },
		{ "/dev/../sdf", "InvalidParameterValue" },
		{ "sdf", "InvalidParameterValue" },
		{ "/dev/xvda", "InvalidParameterValue" },
		{ "", "InvalidParameterValue" },
	};
	char id[32], id2[32], rootv[32], root2[32], v[32], w2[32], far[32];
	char many[SPX_EBS_DATA_MAX][32], det[512];
	const char *s;
	json_t *ids, *out = NULL, *dv, *r, *md;
	char *text;
	struct spx_inst_work iw = { 0 };

	snprintf(id, sizeof(id), "%s", running_one(rootv, sizeof(rootv)));
	snprintf(id2, sizeof(id2), "%s", running_one(root2, sizeof(root2)));
	new_volume("n1", v, sizeof(v));
	new_volume("n1", w2, sizeof(w2));
	new_volume("n2", far, sizeof(far));
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad_dev); i++) {
		T_INT(attach(v, id, bad_dev[i].dev, &s), -1, "device '%s'",
		      bad_dev[i].dev ? bad_dev[i].dev : "(none)");
		T_STR(s, bad_dev[i].code, "device '%s': its code",
		      bad_dev[i].dev ? bad_dev[i].dev : "(none)");
	}
	T_STR(vol_state(v), "available/0", "refusals change nothing");
	T_INT(attach("vol-0123456789abcdef0", id, "/dev/sdf", &s), -1, "unknown");
	T_STR(s, "InvalidVolume.NotFound", "its code");
	T_INT(attach("vol-../x", id, "/dev/sdf", &s), -1, "malformed");
	T_STR(s, "InvalidVolumeID.Malformed", "its code");
	T_INT(attach(far, id, "/dev/sdf", &s), -1, "another node's");
	T_STR(s, "InvalidVolume.ZoneMismatch", "its code");
	T_INT(attach(root2, id, "/dev/sdf", &s), -1, "another's root");
	T_STR(s, "VolumeInUse", "its code");

	T_INT(attach(v, id, "/dev/sdf", &s), 0, "attach");
	T_STR(s, "attaching", "attaching");
	T_STR(vol_state(v), "in-use/1", "in use");
	T_STR(vol_step(v), "attach@16", "the agent plugs it in");
	T_INT(attach(v, id2, "/dev/sdf", &s), -1, "attach it again");
	T_STR(s, "VolumeInUse", "its code");
	T_INT(attach(w2, id, "/dev/sdf", &s), -1, "the same device");
	T_STR(s, "InvalidParameterValue", "its code");
	vol_step_done(v, id, true, false);
	T_STR(vol_step(v), "attach@16", "a failed plug is tried again");
	vol_step_done(v, id, true, true);
	T_STR(vol_step(v), "none", "attached: nothing to do");
	dv = spx_ebs_data_volumes(st, ACCT, id);
	T_INT((long long)json_array_size(dv), 1, "one data volume");
	T_STR(json_string_value(json_array_get(dv, 0)), v, "it");
	json_decref(dv);
	/* The metadata's block-device-mapping: ebs1 is its device. */
	dv = spx_ebs_data_devices(st, ACCT, id);
	T_INT((long long)json_array_size(dv), 1, "one data device");
	T_STR(json_string_value(json_array_get(dv, 0)), "sdf", "without /dev/");
	r = inst(id);
	md = spx_inst_metadata(r, "us-east-1");
	spx_inst_metadata_ebs(md, dv);
	text = json_dumps(md, JSON_COMPACT | JSON_SORT_KEYS);
	T_OK(strstr(text, "\"block-device-mapping\":{\"ami\":\"/dev/xvda\","
			  "\"ebs1\":\"sdf\",\"root\":\"/dev/xvda\"}") != NULL,
	     "ebs1 in the mapping: %s", text);
	free(text);
	json_decref(dv);
	dv = json_array();
	spx_inst_metadata_ebs(md, dv);
	text = json_dumps(md, JSON_COMPACT | JSON_SORT_KEYS);
	T_OK(strstr(text, "\"ebs1\"") == NULL, "none: no ebs1: %s", text);
	free(text);
	json_decref(dv);
	json_decref(md);
	json_decref(r);

	/* Detach: the attachment named must be the one there. */
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\", \"InstanceId\": \"%s\"}",
		 v, id2);
	T_INT(detach(det, &s), -1, "another instance's");
	T_STR(s, "InvalidAttachment.NotFound", "its code");
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\", \"Device\": \"/dev/sdg\"}", v);
	T_INT(detach(det, &s), -1, "another device");
	T_STR(s, "InvalidAttachment.NotFound", "its code");
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\"}", rootv);
	T_INT(detach(det, &s), -1, "a root volume");
	T_STR(s, "IncorrectState", "its code");
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\"}", w2);
	T_INT(detach(det, &s), -1, "one not attached");
	T_STR(s, "IncorrectState", "its code");
	snprintf(det, sizeof(det),
		 "{\"VolumeId\": \"%s\", \"InstanceId\": \"%s\", "
		 "\"Device\": \"/dev/sdf\"}",
		 v, id);
	T_INT(detach(det, &s), 0, "detach");
	T_STR(s, "detaching", "detaching");
	T_STR(vol_step(v), "detach@16", "the agent unplugs it");
	T_INT(detach(det, &s), 0, "detach again");
	T_STR(s, "detaching", "still detaching");
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\", \"Force\": true}", v);
	T_INT(detach(det, &s), 0, "force it");
	T_STR(vol_step(v), "detach@16!", "forced");
	dv = spx_ebs_data_volumes(st, ACCT, id);
	T_INT((long long)json_array_size(dv), 0, "a start plugs no detaching one");
	json_decref(dv);
	vol_step_done(v, id, false, true);
	T_STR(vol_state(v), "available/0", "available");
	T_STR(vol_step(v), "none", "nothing to do");

	/* As many data volumes as the guest has ports, then no more. */
	for (int i = 0; i < SPX_EBS_DATA_MAX; i++) {
		char dev[16];

		new_volume("n1", many[i], sizeof(many[i]));
		snprintf(dev, sizeof(dev), "/dev/sd%c", 'f' + i);
		T_INT(attach(many[i], id, dev, NULL), 0, "data volume %d", i);
	}
	T_INT(attach(v, id, "/dev/vdz", &s), -1, "one more");
	T_STR(s, "AttachmentLimitExceeded", "its code");

	/* Stopped: attached by the agent without a guest. */
	ids = json_pack("[s]", id2);
	T_INT(spx_inst_stop(st, ACCT, ids, false, T0, &out), 0, "stop");
	json_decref(out);
	step_of(id2, T0, &iw);
	spx_inst_halted(st, &iw, T0);
	T_INT(attach(v, id2, "/dev/xvdf", &s), 0, "attach to a stopped one");
	T_STR(vol_step(v), "attach@80", "the agent records it");
	vol_step_done(v, id2, true, true);
	T_STR(vol_state(v), "in-use/1", "attached");
	/* Terminated: its data volumes are let go. */
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate");
	json_decref(out);
	step_of(id2, T0, &iw);
	T_INT(spx_inst_halted(st, &iw, T0), 0, "terminated");
	T_STR(vol_state(v), "available/0", "the data volume is free");
	T_STR(vol_state(root2), "deleting/0", "the root volume goes");
	T_INT(attach(v, id2, "/dev/sdf", &s), -1, "to a terminated one");
	T_STR(s, "IncorrectInstanceState", "its code");
	json_decref(ids);
	/* An attachment recorded for an instance that then ends is
	 * released by the agent's step. */
	ids = json_pack("[s]", id);
	T_INT(attach(w2, id, "/dev/vdb", &s), -1, "no port left");
	for (int i = 0; i < SPX_EBS_DATA_MAX; i++) {
		snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\"}", many[i]);
		detach(det, NULL);
		vol_step_done(many[i], id, false, true);
	}
	T_INT(attach(w2, id, "/dev/vdb", &s), 0, "a port again");
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate it");
	json_decref(out);
	T_STR(vol_step(w2), "attach@32", "attaching to one shutting down");
	json_decref(ids);
}

/* The root volume of a stopped instance detached (to mend it from
 * another instance) and attached again at the root device. */
static void test_root_swap(void)
{
	char id[32], id2[32], rootv[32], root2[32], v[32], det[256];
	struct spx_inst_work iw = { 0 };
	json_t *ids, *out = NULL, *r, *dv;
	const char *s;

	snprintf(id, sizeof(id), "%s", running_one(rootv, sizeof(rootv)));
	snprintf(id2, sizeof(id2), "%s", running_one(root2, sizeof(root2)));
	new_volume("n1", v, sizeof(v));
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\"}", rootv);
	T_INT(detach(det, &s), -1, "the root volume of a running instance");
	T_STR(s, "IncorrectState", "its code");
	T_STR(vol_state(rootv), "in-use/1", "still its root");
	ids = json_pack("[s]", id);
	T_INT(spx_inst_stop(st, ACCT, ids, false, T0, &out), 0, "stop");
	json_decref(out);
	T_INT(detach(det, &s), -1, "stopping");
	T_STR(s, "IncorrectState", "its code");
	step_of(id, T0, &iw);
	spx_inst_halted(st, &iw, T0);
	T_STR(state_of(id), "stopped", "stopped");
	snprintf(det, sizeof(det),
		 "{\"VolumeId\": \"%s\", \"InstanceId\": \"%s\"}", rootv,
		 id2);
	T_INT(detach(det, &s), -1, "named with another instance");
	T_STR(s, "InvalidAttachment.NotFound", "its code");
	r = inst(id);
	T_OK(json_object_get(r, "SpxRoot") != NULL, "a refusal keeps the root");
	json_decref(r);
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\"}", rootv);
	T_INT(detach(det, &s), 0, "detached while stopped");
	T_STR(s, "detaching", "as EC2 answers");
	T_STR(vol_state(rootv), "available/0", "free at once");
	T_STR(vol_step(rootv), "none", "nothing for the agent");
	r = inst(id);
	T_OK(!json_object_get(r, "SpxRoot") &&
		     !json_array_size(json_object_get(r, "BlockDeviceMappings")),
	     "the instance has no root volume");
	json_decref(r);
	T_INT(detach(det, &s), -1, "detached twice");
	T_STR(s, "IncorrectState", "its code");
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), -1,
	      "no start without a root volume");
	T_STR(code(), "IncorrectInstanceState", "its code");
	T_STR(state_of(id), "stopped", "still stopped");

	/* Mended as another instance's data volume. */
	T_INT(attach(rootv, id2, "/dev/sdf", &s), 0, "a data volume of another");
	vol_step_done(rootv, id2, true, true);
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\"}", rootv);
	T_INT(detach(det, &s), 0, "and detached from it");
	vol_step_done(rootv, id2, false, true);
	T_STR(vol_state(rootv), "available/0", "free again");

	/* The root device of a running instance, or of one that has its
	 * root volume, is taken; a data device is no root device. */
	T_INT(attach(v, id2, "/dev/xvda", &s), -1, "a running one's root");
	T_STR(s, "InvalidParameterValue", "its code");
	T_INT(attach(v, id, "/dev/xvda", &s), 0, "another volume as root");
	T_STR(s, "attached", "attached at once");
	T_STR(vol_state(v), "in-use/1", "in use");
	T_STR(vol_step(v), "none", "nothing to plug");
	T_INT(attach(rootv, id, "/dev/xvda", &s), -1, "a second root");
	T_STR(s, "InvalidParameterValue", "its code");
	T_INT(attach(v, id, "/dev/xvda", &s), -1, "the same again");
	T_STR(s, "InvalidParameterValue", "its code: the device is taken");
	r = inst(id);
	T_STR(json_string_value(json_object_get(
		      json_object_get(r, "SpxRoot"), "VolumeId")),
	      v, "the instance's root volume");
	T_STR(json_string_value(json_object_get(
		      json_object_get(json_array_get(json_object_get(
						     r, "BlockDeviceMappings"),
					     0),
				      "Ebs"),
		      "VolumeId")),
	      v, "in its mappings");
	json_decref(r);
	dv = spx_ebs_data_volumes(st, ACCT, id);
	T_INT((long long)json_array_size(dv), 0, "a root volume is no data volume");
	json_decref(dv);

	/* A crash between the instance letting go and the volume: the
	 * volume is attached to an instance that does not name it, and
	 * DetachVolume frees it. */
	T_INT(spx_inst_root_detach(st, ACCT, id, v), 0, "the instance lets go");
	T_INT(spx_inst_root_detach(st, ACCT, id, v), 0, "again: nothing");
	T_STR(vol_state(v), "in-use/1", "the volume still says attached");
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), -1,
	      "no start");
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\"}", v);
	T_INT(detach(det, &s), 0, "the leftover detached");
	T_STR(vol_state(v), "available/0", "free");
	T_INT(attach(rootv, id, "/dev/xvda", &s), 0, "the mended root back");

	/* It starts from it, and it is kept at termination (attached by
	 * hand: DeleteOnTermination false). */
	T_INT(spx_inst_start(st, &env, ACCT, ids, T0, &out), 0, "start");
	json_decref(out);
	T_STR(step_of(id, T0, &iw), "launch", "the agent launches it");
	T_STR(iw.vol, rootv, "from the mended root");
	spx_inst_launched(st, &iw, T0);
	T_STR(state_of(id), "running", "running");
	T_STR(vol_state(rootv), "in-use/1", "its root");
	snprintf(det, sizeof(det), "{\"VolumeId\": \"%s\"}", rootv);
	T_INT(detach(det, &s), -1, "running again: its root stays");
	T_STR(s, "IncorrectState", "its code");
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate");
	json_decref(out);
	step_of(id, T0, &iw);
	spx_inst_halted(st, &iw, T0);
	T_STR(vol_state(rootv), "available/0", "kept");
	json_decref(ids);
	ids = json_pack("[s]", id2);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "the other");
	json_decref(out);
	json_decref(ids);
}

static void test_create_image(void)
{
	char id[32], rootv[32];
	json_t *irec, *req, *img = NULL, *res = NULL;
	const char *sid;

	snprintf(id, sizeof(id), "%s", running_one(rootv, sizeof(rootv)));
	irec = inst(id);
	req = json_pack("{s:s, s:s, s:s}", "InstanceId", id, "Name", "made",
			"Description", "of a running one");
	T_INT(spx_ec2_image_create(st, lock, ACCT, req, irec, NULL, NULL, T0,
				   &img),
	      0, "CreateImage");
	T_STR(json_string_value(json_object_get(img, "State")), "pending",
	      "pending until its snapshot is stored");
	T_STR(json_string_value(json_object_get(img, "RootDeviceName")),
	      "/dev/xvda", "the instance's root device");
	sid = json_string_value(json_object_get(
		json_object_get(json_array_get(json_object_get(
					       img, "BlockDeviceMappings"),
				       0),
				"Ebs"),
		"SnapshotId"));
	T_OK(sid && !strncmp(sid, "snap-", 5), "of a snapshot: %s", sid);
	json_decref(img);
	img = NULL;
	T_INT(spx_ec2_image_create(st, lock, ACCT, req, irec, NULL, NULL, T0,
				   &img),
	      -1, "the same name again");
	T_STR(code(), "InvalidAMIName.Duplicate", "its code");
	json_object_set_new(req, "Name", json_string("x"));
	T_INT(spx_ec2_image_create(st, lock, ACCT, req, irec, NULL, NULL, T0,
				   &img),
	      -1, "a bad name");
	T_STR(code(), "InvalidAMIName.Malformed", "its code");
	json_object_set_new(req, "Name", json_string("mapped"));
	json_object_set_new(req, "BlockDeviceMappings",
			    json_pack("[{s:s}]", "DeviceName", "/dev/sdf"));
	T_INT(spx_ec2_image_create(st, lock, ACCT, req, irec, NULL, NULL, T0,
				   &img),
	      -1, "with mappings");
	T_STR(code(), "InvalidParameterValue", "its code");
	json_object_del(req, "BlockDeviceMappings");
	json_decref(irec);
	/* Terminated: nothing to image. */
	res = json_pack("[s]", id);
	json_decref(img);
	img = NULL;
	if (spx_inst_terminate(st, ACCT, res, T0, &img) < 0)
		abort();
	json_decref(img);
	img = NULL;
	irec = inst(id);
	T_INT(spx_ec2_image_create(st, lock, ACCT, req, irec, NULL, NULL, T0,
				   &img),
	      -1, "of one shutting down");
	T_STR(code(), "IncorrectInstanceState", "its code");
	json_decref(irec);
	json_decref(res);
	json_decref(req);
}

/* CreatePlacementGroup from JSON: 0, or -1 with the code. */
static int pg_create(const char *txt, json_t **out)
{
	json_t *req = json_loads(txt, 0, NULL), *rec = NULL;
	int rc;

	if (!req)
		abort();
	spx_error_clear();
	rc = spx_pg_create(st, ilock, "us-east-1", ACCT, req, NULL, &rec);
	json_decref(req);
	if (out)
		*out = rec;
	else
		json_decref(rec);
	return rc;
}

static void test_pgroup_rules(void)
{
	char long_name[300], *big;
	static const struct {
		const char *req;
		const char *code;
		const char *strategy, *level;	/* recorded */
		int partitions;
	} cases[] = {
		{ "{\"GroupName\": \"c1\", \"Strategy\": \"cluster\"}", "-",
		  "cluster", NULL, 0 },
		{ "{\"GroupName\": \"s1\", \"Strategy\": \"spread\"}", "-",
		  "spread", "rack", 0 },
		{ "{\"GroupName\": \"s2\", \"Strategy\": \"spread\", "
		  "\"SpreadLevel\": \"rack\"}", "-", "spread", "rack", 0 },
		{ "{\"GroupName\": \"p1\", \"Strategy\": \"partition\"}", "-",
		  "partition", NULL, 2 },
		{ "{\"GroupName\": \"p7\", \"Strategy\": \"partition\", "
		  "\"PartitionCount\": 7}", "-", "partition", NULL, 7 },
		{ "{\"GroupName\": \"My group: a/b.c\", \"Strategy\": "
		  "\"cluster\"}", "-", "cluster", NULL, 0 },
		{ "{\"GroupName\": \"c1\", \"Strategy\": \"spread\"}",
		  "InvalidPlacementGroup.Duplicate", NULL, NULL, 0 },
		{ "{\"GroupName\": \"p8\", \"Strategy\": \"partition\", "
		  "\"PartitionCount\": 8}", "InvalidParameterValue", NULL, NULL,
		  0 },
		{ "{\"GroupName\": \"p0\", \"Strategy\": \"partition\", "
		  "\"PartitionCount\": 0}", "InvalidParameterValue", NULL, NULL,
		  0 },
		{ "{\"GroupName\": \"cp\", \"Strategy\": \"cluster\", "
		  "\"PartitionCount\": 2}", "InvalidParameterCombination", NULL,
		  NULL, 0 },
		{ "{\"GroupName\": \"sh\", \"Strategy\": \"spread\", "
		  "\"SpreadLevel\": \"host\"}", "InvalidParameterValue", NULL,
		  NULL, 0 },
		{ "{\"GroupName\": \"cl\", \"Strategy\": \"cluster\", "
		  "\"SpreadLevel\": \"rack\"}", "InvalidParameterCombination",
		  NULL, NULL, 0 },
		{ "{\"GroupName\": \"x\", \"Strategy\": \"diagonal\"}",
		  "InvalidParameterValue", NULL, NULL, 0 },
		{ "{\"GroupName\": \"x\"}", "MissingParameter", NULL, NULL, 0 },
		{ "{\"Strategy\": \"cluster\"}", "MissingParameter", NULL, NULL,
		  0 },
		{ "{\"GroupName\": \"\", \"Strategy\": \"cluster\"}",
		  "InvalidParameterValue", NULL, NULL, 0 },
		{ "{\"GroupName\": \"tab\\there\", \"Strategy\": \"cluster\"}",
		  "InvalidParameterValue", NULL, NULL, 0 },
		{ "{\"GroupName\": \"caf\\u00e9\", \"Strategy\": \"cluster\"}",
		  "InvalidParameterValue", NULL, NULL, 0 },
	};
	json_t *rec, *all;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		size_t n = count("placement-groups/");
		int rc = pg_create(cases[i].req, &rec);

		T_STR(rc == 0 ? "-" : code(), cases[i].code, "pg %zu: %s", i,
		      cases[i].req);
		if (rc < 0) {
			T_INT(count("placement-groups/"), n,
			      "pg %zu: nothing recorded", i);
			continue;
		}
		T_OK(spx_pg_id_wellformed(spx_ec2_str(rec, "GroupId")),
		     "pg %zu: id %s", i, spx_ec2_str0(rec, "GroupId"));
		T_STR(spx_ec2_str(rec, "State"), "available", "pg %zu: state", i);
		T_STR(spx_ec2_str(rec, "Strategy"), cases[i].strategy,
		      "pg %zu: strategy", i);
		T_STR(spx_ec2_str(rec, "SpreadLevel"), cases[i].level,
		      "pg %zu: spread level", i);
		T_INT(json_integer_value(json_object_get(rec, "PartitionCount")),
		      cases[i].partitions, "pg %zu: partitions", i);
		json_decref(rec);
	}
	/* 255 characters, not 256. */
	memset(long_name, 'n', 255);
	long_name[255] = 0;
	big = spx_xprintf("{\"GroupName\": \"%s\", \"Strategy\": \"cluster\"}",
			  long_name);
	T_INT(pg_create(big, &rec), 0, "a name of 255 characters");
	T_OK(rec && !strncmp(spx_ec2_str0(rec, "GroupArn"),
			     "arn:aws:ec2:us-east-1:" ACCT ":placement-group/nnn",
			     49),
	     "its ARN: %s", spx_ec2_str0(rec, "GroupArn"));
	json_decref(rec);
	free(big);
	long_name[255] = 'n';
	long_name[256] = 0;
	big = spx_xprintf("{\"GroupName\": \"%s\", \"Strategy\": \"cluster\"}",
			  long_name);
	T_INT(pg_create(big, NULL), -1, "a name of 256 characters");
	T_STR(code(), "InvalidParameterValue", "its code");
	free(big);
	T_INT(spx_pg_find(st, ACCT, "nope", &rec), -1, "an unknown name");
	T_STR(code(), "InvalidPlacementGroup.Unknown", "its code");
	T_INT(spx_pg_get(st, ACCT, "pg-0123456789abcdef0", &rec), -1,
	      "an unknown id");
	T_STR(code(), "InvalidPlacementGroup.Unknown", "its code");
	T_INT(spx_pg_get(st, ACCT, "pg-xyz", &rec), -1, "a malformed id");
	T_STR(code(), "InvalidPlacementGroupId.Malformed", "its code");
	T_INT(spx_pg_find(st, "210987654321", "c1", &rec), -1,
	      "another account's name");
	T_STR(code(), "InvalidPlacementGroup.Unknown", "its code");
	T_INT(spx_pg_list(st, ACCT, &all), 0, "list");
	T_INT(json_array_size(all), 7, "the groups made");
	json_decref(all);
	T_INT(spx_pg_delete(st, ilock, ACCT, "nope"), -1, "delete unknown");
	T_STR(code(), "InvalidPlacementGroup.Unknown", "its code");
	T_INT(spx_pg_delete(st, ilock, ACCT, "s2"), 0, "delete s2");
	T_INT(spx_pg_find(st, ACCT, "s2", &rec), -1, "s2 is gone");
	T_INT(pg_create("{\"GroupName\": \"s2\", \"Strategy\": \"cluster\"}",
			NULL),
	      0, "its name is free again");
}

static const char *placement_of(const char *id, const char *member)
{
	static char buf[300];
	json_t *r = inst(id), *it = r ? spx_inst_item(r) : NULL;
	const json_t *v = json_object_get(json_object_get(it, "Placement"),
					  member);

	if (json_is_integer(v))
		snprintf(buf, sizeof(buf), "%lld",
			 (long long)json_integer_value(v));
	else
		snprintf(buf, sizeof(buf), "%s",
			 json_is_string(v) ? json_string_value(v) : "(none)");
	json_decref(it);
	json_decref(r);
	return buf;
}

/* A spread group holds one instance on this node; terminating it or a
 * failed launch frees the place at once; the group cannot be deleted
 * while it has one. */
static void test_pgroup_run(void)
{
	json_t *res = NULL, *ids, *out = NULL, *g = NULL;
	struct spx_inst_work w = { 0 };
	char vol[32], id[32], id2[32], gid[32];
	size_t ni, nv;

	T_INT(pg_create("{\"GroupName\": \"sp\", \"Strategy\": \"spread\"}",
			&g),
	      0, "a spread group");
	snprintf(gid, sizeof(gid), "%s", spx_ec2_str0(g, "GroupId"));
	json_decref(g);
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupName\": \"nope\"}}",
		  NULL),
	      -1, "an unknown group");
	T_STR(code(), "InvalidPlacementGroup.Unknown", "its code");
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupId\": "
		  "\"pg-0123456789abcdef0\"}}",
		  NULL),
	      -1, "an unknown group id");
	T_STR(code(), "InvalidPlacementGroup.Unknown", "its code");
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupName\": \"sp\", "
		  "\"GroupId\": \"pg-0123456789abcdef0\"}}",
		  NULL),
	      -1, "name and id");
	T_STR(code(), "InvalidParameterCombination", "its code");
	T_INT(run("{" RUN1 ", \"Placement\": {\"PartitionNumber\": 1}}",
		  NULL),
	      -1, "a partition without a group");
	T_STR(code(), "InvalidParameterCombination", "its code");
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupName\": \"sp\", "
		  "\"HostId\": \"h-0123456789abcdef0\"}}",
		  NULL),
	      -1, "a dedicated host");
	T_STR(code(), "Unsupported", "its code");
	T_INT(run("{\"ImageId\": \"%A\", \"MinCount\": 2, \"MaxCount\": 2, "
		  "\"Placement\": {\"GroupName\": \"sp\"}}",
		  NULL),
	      -1, "two into a spread group");
	T_STR(code(), "InsufficientInstanceCapacity", "its code");
	T_OK(strstr(spx_errmsg(), "spread group is full on this node"),
	     "said: %s", spx_errmsg());
	T_INT(run("{\"ImageId\": \"%A\", \"MinCount\": 1, \"MaxCount\": 3, "
		  "\"Placement\": {\"GroupName\": \"sp\"}}",
		  &res),
	      0, "one to three into it");
	T_INT(json_array_size(json_object_get(res, "Instances")), 1,
	      "one launched");
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	T_STR(placement_of(id, "GroupName"), "sp", "its group name");
	T_STR(placement_of(id, "GroupId"), gid, "its group id");
	ni = count("instances/");
	nv = count("volumes/");
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupId\": \"pg-x\"}}", NULL),
	      -1, "a malformed group id");
	T_STR(code(), "InvalidPlacementGroupId.Malformed", "its code");
	{
		char *txt = spx_xprintf("{\"ImageId\": \"%%A\", \"MinCount\": 1, "
					"\"MaxCount\": 1, \"Placement\": "
					"{\"GroupId\": \"%s\"}}",
					gid);

		T_INT(run(txt, NULL), -1, "a second, by id");
		free(txt);
	}
	T_STR(code(), "InsufficientInstanceCapacity", "its code");
	T_INT(count("instances/"), ni, "no instance recorded");
	T_INT(count("volumes/"), nv, "no volume recorded");
	T_INT(spx_pg_delete(st, ilock, ACCT, "sp"), -1, "delete while in use");
	T_STR(code(), "InvalidPlacementGroup.InUse", "its code");
	/* Stopped, it keeps its place. */
	ids = json_pack("[s]", id);
	vol_made(vol, true);
	step_of(id, T0, &w);
	spx_inst_launched(st, &w, T0);
	spx_inst_stop(st, ACCT, ids, false, T0, &out);
	json_decref(out);
	step_of(id, T0, &w);
	spx_inst_halted(st, &w, T0);
	T_STR(state_of(id), "stopped", "stopped");
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupName\": \"sp\"}}", NULL),
	      -1, "a stopped member keeps its place");
	/* Terminated: shutting-down already frees it. */
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate");
	json_decref(out);
	json_decref(ids);
	T_STR(state_of(id), "shutting-down", "shutting-down");
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupName\": \"sp\"}}", &res),
	      0, "the place is free at once");
	snprintf(id2, sizeof(id2), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	/* A failed launch frees it too. */
	vol_made(vol, false);
	T_STR(step_of(id2, T0, &w), "fail", "its root volume failed");
	T_INT(spx_inst_launch_failed(st, &w, "no space", T0), 0, "failed");
	T_STR(state_of(id2), "terminated", "terminated");
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupName\": \"sp\"}}", &res),
	      0, "free again");
	snprintf(id2, sizeof(id2), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	ids = json_pack("[s]", id2);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate it");
	json_decref(out);
	json_decref(ids);
	T_INT(spx_pg_delete(st, ilock, ACCT, "sp"), 0,
	      "deleted once nothing is in it");
	/* Partition groups: numbers in range, spread over the partitions. */
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupName\": \"p7\", "
		  "\"PartitionNumber\": 8}}",
		  NULL),
	      -1, "partition 8 of 7");
	T_STR(code(), "InvalidParameterValue", "its code");
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupName\": \"c1\", "
		  "\"PartitionNumber\": 1}}",
		  NULL),
	      -1, "a partition of a cluster group");
	T_STR(code(), "InvalidParameterCombination", "its code");
	T_INT(run("{" RUN1 ", \"Placement\": {\"GroupName\": \"p7\", "
		  "\"PartitionNumber\": 3}}",
		  &res),
	      0, "partition 3");
	T_STR(placement_of(first_id(res, vol, sizeof(vol)), "PartitionNumber"),
	      "3", "in partition 3");
	json_decref(res);
	T_INT(run("{\"ImageId\": \"%A\", \"MinCount\": 3, \"MaxCount\": 3, "
		  "\"Placement\": {\"GroupName\": \"c1\"}}",
		  &res),
	      0, "a cluster group takes many");
	json_decref(res);
}

/* ModifyInstanceMetadataOptions from JSON (with "InstanceId" id). */
static int mdmod(const char *id, const char *body, json_t **out)
{
	char *txt = spx_xprintf("{\"InstanceId\": \"%s\"%s%s}", id,
				*body ? ", " : "", body);
	json_t *req = json_loads(txt, 0, NULL), *o = NULL;
	int rc;

	if (!req)
		abort();
	spx_error_clear();
	rc = spx_inst_modify_mdopts(st, ACCT, req, &o);
	json_decref(req);
	free(txt);
	if (out)
		*out = o;
	else
		json_decref(o);
	return rc;
}

static void test_mdopts(void)
{
	static const struct {
		const char *req;
		const char *code;
	} cases[] = {
		{ "\"HttpTokens\": \"required\"", "-" },
		{ "\"HttpTokens\": \"optional\", \"HttpPutResponseHopLimit\": 64",
		  "-" },
		{ "\"HttpEndpoint\": \"disabled\"", "-" },
		{ "\"HttpEndpoint\": \"enabled\"", "-" },
		{ "\"InstanceMetadataTags\": \"disabled\"", "-" },
		{ "\"HttpPutResponseHopLimit\": 0", "InvalidParameterValue" },
		{ "\"HttpPutResponseHopLimit\": 65", "InvalidParameterValue" },
		{ "\"HttpTokens\": \"sometimes\"", "InvalidParameterValue" },
		{ "\"HttpEndpoint\": \"off\"", "InvalidParameterValue" },
		{ "\"HttpProtocolIpv6\": \"enabled\"", "Unsupported" },
		{ "\"InstanceMetadataTags\": \"enabled\"", "Unsupported" },
		{ "", "InvalidParameterCombination" },
	};
	json_t *res = NULL, *o = NULL, *r, *md, *ids, *out = NULL;
	struct spx_inst_work w = { 0 }, w2 = { 0 };
	char vol[32], id[32];

	T_INT(run("{" RUN1 "}", &res), 0, "run");
	snprintf(id, sizeof(id), "%s", first_id(res, vol, sizeof(vol)));
	json_decref(res);
	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++)
		T_STR(mdmod(id, cases[i].req, NULL) == 0 ? "-" : code(),
		      cases[i].code, "mdopts %zu: %s", i, cases[i].req);
	T_INT(mdmod("i-0123456789abcdef0", "\"HttpTokens\": \"required\"",
		    NULL),
	      -1, "an unknown instance");
	T_STR(code(), "InvalidInstanceID.NotFound", "its code");
	/* Pending: the launch reads the options it applies. */
	vol_made(vol, true);
	T_STR(step_of(id, T0, &w), "launch", "launch");
	T_INT(mdmod(id, "\"HttpTokens\": \"required\"", &o), 0,
	      "changed while it launches");
	T_STR(spx_ec2_str(o, "State"), "pending", "answered pending");
	T_STR(spx_ec2_str(o, "HttpTokens"), "required", "answered required");
	T_INT(json_integer_value(json_object_get(o, "HttpPutResponseHopLimit")),
	      64, "the hop limit set before stays");
	json_decref(o);
	T_INT(spx_inst_launched(st, &w, T0), 0, "launched");
	T_STR(step_of(id, T0, &w), "metadata",
	      "the change after the launch read it is applied next");
	r = inst(id);
	md = spx_inst_metadata(r, "us-east-1");
	T_STR(spx_ec2_str(md, "http-tokens"), "required",
	      "the guest's metadata requires tokens");
	T_INT(json_integer_value(
		      json_object_get(md, "http-put-response-hop-limit")),
	      64, "and carries the hop limit");
	json_decref(md);
	json_decref(r);
	/* Changed again before the agent's write is recorded: still
	 * pending afterwards. */
	T_INT(mdmod(id, "\"HttpEndpoint\": \"disabled\"", NULL), 0,
	      "changed again");
	T_INT(spx_inst_metadata_applied(st, &w), 0, "the older write");
	T_STR(placement_of(id, "AvailabilityZone"), "us-east-1a", "(zone)");
	r = inst(id);
	T_STR(spx_ec2_str(json_object_get(r, "MetadataOptions"), "State"),
	      "pending", "still pending");
	json_decref(r);
	T_STR(step_of(id, T0, &w2), "metadata", "applied again");
	T_INT(spx_inst_metadata_applied(st, &w2), 0, "the newer write");
	r = inst(id);
	T_STR(spx_ec2_str(json_object_get(r, "MetadataOptions"), "State"),
	      "applied", "applied");
	T_STR(spx_ec2_str(json_object_get(r, "MetadataOptions"), "HttpEndpoint"),
	      "disabled", "endpoint disabled");
	json_decref(r);
	T_STR(step_of(id, T0, NULL), "watch", "watched again");
	ids = json_pack("[s]", id);
	T_INT(spx_inst_terminate(st, ACCT, ids, T0, &out), 0, "terminate");
	json_decref(out);
	json_decref(ids);
	T_INT(mdmod(id, "\"HttpTokens\": \"optional\"", NULL), -1,
	      "shutting-down");
	T_STR(code(), "IncorrectInstanceState", "its code");
}

int main(void)
{
	char tpl[] = "/tmp/spx-test-instance.XXXXXX";
	struct spx_keypair k;
	char *sdir, *mat = NULL, *reqtxt;
	json_t *rec = NULL, *req;

	tmp = mkdtemp(tpl);
	if (!tmp)
		return 2;
	sdir = spx_xprintf("dir:%s/state", tmp);
	if (spx_state_open(sdir, SPX_STATE_CREATE | SPX_STATE_UNSAFE_NOSYNC,
			   &st) < 0)
		return 2;
	lock = spx_xprintf("%s/ebs.lock", tmp);
	ilock = spx_xprintf("%s/instances.lock", tmp);
	zones = json_pack("[s]", "us-east-1a");
	ebs = (struct spx_ebs_env){ "n1", zones, tmp, lock, 100000 };
	env = (struct spx_inst_env){ "n1", "us-east-1a", "us-east-1", ilock,
				     65536, &ebs, NULL };
	/* A 1 GiB snapshot, an image of it, a key pair. */
	if (spx_id_new(snap, sizeof(snap), "snap") < 0 ||
	    spx_ebs_snap_record_stored(st, ACCT, snap, "n1", 1 << 30, "t",
				       NULL, T0, &rec) < 0)
		return 2;
	json_decref(rec);
	reqtxt = spx_xprintf("{\"Name\": \"img\", \"BlockDeviceMappings\": "
			     "[{\"DeviceName\": \"/dev/xvda\", \"Ebs\": "
			     "{\"SnapshotId\": \"%s\"}}]}",
			     snap);
	req = json_loads(reqtxt, 0, NULL);
	if (spx_ec2_image_register(st, lock, ACCT, req, NULL, NULL, T0,
				   &rec) < 0)
		return 2;
	snprintf(ami, sizeof(ami), "%s",
		 json_string_value(json_object_get(rec, "ImageId")));
	json_decref(rec);
	json_decref(req);
	free(reqtxt);
	if (spx_keypair_create(st, ACCT, "k1", SPX_KEY_ED25519, SPX_KEY_PEM,
			       NULL, &k, &mat) < 0)
		return 2;
	spx_keypair_release(&k);
	free(mat);
	T_OK(spx_inst_host_mem_mib() > 0, "host memory for instances: %llu MiB",
	     (unsigned long long)spx_inst_host_mem_mib());
	test_rules();
	test_admission();
	test_bridge();
	test_lifecycle();
	test_list_ids();
	test_keep_and_fail();
	test_stop_start();
	test_reboot_modify();
	test_attach();
	test_root_swap();
	test_create_image();
	test_pgroup_rules();
	test_pgroup_run();
	test_mdopts();
	test_protect_race();
	json_decref(zones);
	spx_state_close(st);
	free(lock);
	free(ilock);
	free(sdir);
	spx_rmtree(tmp);
	return t_done();
}
