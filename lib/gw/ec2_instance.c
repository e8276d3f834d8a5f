/* ec2_instance.c: the instance actions (RunInstances, DescribeInstances,
 * TerminateInstances, StopInstances, StartInstances, RebootInstances,
 * DescribeInstanceStatus, GetConsoleOutput, DescribeInstanceAttribute,
 * ModifyInstanceAttribute, ModifyInstanceMetadataOptions)
 * over lib/ec2/instance.h. A change is recorded and
 * the node agent is rung; the answer is the state AWS shows at that
 * moment ("pending", "shutting-down"). */
#include "spx.h"

#include <sys/stat.h>

#include "buf.h"
#include "checksum.h"

#include "ec2/filter.h"
#include "ec2/instance.h"
#include "ec2/rec.h"
#include "ec2/region.h"
#include "ec2/volume.h"
#include "file.h"
#include "gw/ec2_int.h"
#include "node/agent.h"

static const struct spx_ec2_filter_field inst_fields[] = {
	{ "ami-launch-index", "AmiLaunchIndex" },
	{ "architecture", "Architecture" },
	{ "availability-zone", "Placement.AvailabilityZone" },
	{ "block-device-mapping.device-name", "BlockDeviceMappings.DeviceName" },
	{ "block-device-mapping.status", "BlockDeviceMappings.Ebs.Status" },
	{ "block-device-mapping.volume-id", "BlockDeviceMappings.Ebs.VolumeId" },
	{ "client-token", "ClientToken" },
	{ "hypervisor", "Hypervisor" },
	{ "image-id", "ImageId" },
	{ "instance-id", "InstanceId" },
	{ "instance-state-code", "State.Code" },
	{ "instance-state-name", "State.Name" },
	{ "instance-type", "InstanceType" },
	{ "key-name", "KeyName" },
	{ "launch-time", "LaunchTimeText" },
	{ "metadata-options.http-endpoint", "MetadataOptions.HttpEndpoint" },
	{ "metadata-options.http-tokens", "MetadataOptions.HttpTokens" },
	{ "placement-group-name", "Placement.GroupName" },
	{ "private-dns-name", "PrivateDnsName" },
	{ "private-ip-address", "PrivateIpAddress" },
	{ "reservation-id", "SpxReservationId" },
	{ "root-device-name", "RootDeviceName" },
	{ "root-device-type", "RootDeviceType" },
	{ "state-reason-code", "StateReason.Code" },
	{ "tenancy", "Placement.Tenancy" },
	{ "virtualization-type", "VirtualizationType" },
};
static const struct spx_ec2_filter_table inst_filters = {
	inst_fields, SPX_ARRAY_SIZE(inst_fields), "Tags"
};

/* The node's instance environment for c, what RunInstances and
 * StartInstances admit instances against: its memory, and its bridge's
 * address when its instances are on the bridge (vm.network). env->lock
 * is allocated, for the caller to free, also on failure. */
static int env_of(struct ec2_call *c, struct spx_inst_env *env)
{
	const struct spx_conf_node *self = c->gw->self;

	*env = (struct spx_inst_env){
		self->name, self->az, c->gw->conf->aws.region,
		spx_path_join(c->gw->conf->paths.run, "instances.lock"),
		spx_inst_host_mem_mib(), NULL, NULL
	};
	if (!strcmp(self->vm.network, "bridge"))
		env->bridge_address = self->vm.address;
	if (!env->mem_mib)
		return spx_ec2_fault(500, "InternalError",
				     "An internal error has occurred (%s)",
				     spx_errmsg());
	return 0;
}

int ec2_run_instances(struct ec2_call *c)
{
	const struct spx_conf *conf = c->gw->conf;
	json_t *zones = spx_ec2_locations(conf, "availability-zone");
	char *store = spx_path_join(conf->paths.data, "vol");
	char *elock = ec2_ebs_lock_path(c);
	struct spx_ebs_env ebs = { c->gw->self->name, zones, store, elock,
				   c->gw->self->ebs.overcommit_percent };
	struct spx_inst_env env;
	json_t *res = NULL;
	int rc = -1;

	if (env_of(c, &env) < 0)
		goto out;
	env.ebs = &ebs;
	if (spx_mkdirs(store, 0700) < 0) {
		spx_ec2_fault(500, "InternalError",
			      "An internal error has occurred (%s)",
			      spx_errmsg());
		goto out;
	}
	if (spx_inst_run(c->gw->state, &env, c->account, c->in, c->now,
			 &res) < 0)
		goto out;
	ec2_wake(c);
	json_object_update(c->out, res);
	rc = 0;
out:
	json_decref(res);
	json_decref(zones);
	free(store);
	free(elock);
	free((char *)env.lock);
	return rc;
}

int ec2_terminate_instances(struct ec2_call *c)
{
	json_t *res;

	if (spx_inst_terminate(c->gw->state, c->account,
			       ec2_list(c, "InstanceIds"), c->now, &res) < 0)
		return -1;
	ec2_wake(c);
	json_object_set_new(c->out, "TerminatingInstances", res);
	return 0;
}

static const char *inst_id(const json_t *item)
{
	return json_string_value(json_object_get(item, "InstanceId"));
}

/* The data volumes (AttachVolume's) of instance item it, from the
 * account's volume records vols, after its root in BlockDeviceMappings:
 * the volume record is where their attachment is kept. */
static void add_data_volumes(json_t *it, const json_t *vols)
{
	json_t *bdm = json_object_get(it, "BlockDeviceMappings"), *v;
	const char *id = spx_ec2_str0(it, "InstanceId");
	size_t i;

	if (!json_is_array(bdm))
		return;
	json_array_foreach(vols, i, v) {
		const json_t *a = json_array_get(json_object_get(v, "Attachments"), 0);

		if (!a || !json_is_true(json_object_get(v, "SpxData")) ||
		    strcmp(spx_ec2_str0(a, "InstanceId"), id))
			continue;
		json_array_append_new(
			bdm, json_pack("{s:O, s:{s:O, s:O, s:O, s:O}}",
				       "DeviceName", json_object_get(a, "Device"),
				       "Ebs", "AttachTime",
				       json_object_get(a, "AttachTime"),
				       "DeleteOnTermination",
				       json_object_get(a, "DeleteOnTermination"),
				       "Status", json_object_get(a, "State"),
				       "VolumeId", json_object_get(a, "VolumeId")));
	}
}

/* The items of the account's instances that InstanceIds names (all when
 * absent), each with LaunchTimeText and SpxReservationId for filters and
 * grouping; a malformed or unknown id fails as EC2 fails it. Named ones
 * are read alone: a caller that describes its instances by id (as
 * Terraform does, one at a time) reads no other instance's record. */
static int selected(struct ec2_call *c, json_t **out)
{
	const json_t *ids = ec2_list(c, "InstanceIds");
	json_t *all = NULL, *vols = NULL, *data, *rec, *v, *sel = json_array();
	size_t i;
	int rc;

	*out = NULL;
	rc = json_array_size(ids) ? spx_inst_list_ids(c->gw->state, c->account,
						      ids, c->now, &all)
				  : spx_inst_list(c->gw->state, c->account,
						  c->now, &all);
	if (rc < 0 || spx_ebs_list(c->gw->state, c->account, &vols) < 0) {
		json_decref(all);
		json_decref(sel);
		return -1;
	}
	/* Only the data volumes, looked through once per instance (root
	 * volumes, one an instance, would make that quadratic). */
	data = json_array();
	json_array_foreach(vols, i, v)
		if (json_is_true(json_object_get(v, "SpxData")))
			json_array_append(data, v);
	json_decref(vols);
	json_array_foreach(all, i, rec) {
		json_t *it, *rid;

		/* The list is ours: each record becomes its item in place
		 * (a copy of a thousand would double the work). */
		it = json_incref(rec);
		rid = json_incref(json_object_get(it, "SpxReservationId"));
		spx_ec2_rec_strip(it);
		add_data_volumes(it, data);
		ec2_time_text(it, "LaunchTime");
		if (rid)
			json_object_set_new(it, "SpxReservationId", rid);
		json_array_append_new(sel, it);
	}
	json_decref(all);
	json_decref(data);
	*out = sel;
	return 0;
}

/* The page's instances grouped into their reservations, in the order
 * the page has them. */
static json_t *reservations(const struct ec2_call *c, json_t *page)
{
	json_t *res = json_array(), *by_id = json_object(), *it, *r;
	size_t i;

	json_array_foreach(page, i, it) {
		const char *rid = spx_ec2_str0(it, "SpxReservationId");
		json_t *into = json_object_get(by_id, rid);

		if (!into) {
			r = json_pack("{s:s, s:s, s:[], s:[]}", "ReservationId",
				      rid, "OwnerId", c->account, "Groups",
				      "Instances");
			json_array_append_new(res, r);
			into = json_object_get(r, "Instances");
			json_object_set(by_id, rid, into);
		}
		json_object_del(it, "SpxReservationId");
		ec2_time_text_del(it, "LaunchTime");
		json_array_append(into, it);
	}
	json_decref(by_id);
	return res;
}

int ec2_describe_instances(struct ec2_call *c)
{
	struct spx_ec2_filters *fs = NULL;
	struct spx_ec2_pager pg;
	struct spx_ec2_page p;
	json_t *all = NULL, *sel = NULL, *it;
	char *next = NULL;
	size_t i;
	int rc = -1;

	if (json_array_size(ec2_list(c, "InstanceIds")) &&
	    json_object_get(c->in, "MaxResults"))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "The parameter instancesSet cannot be used "
				     "with the parameter maxResults");
	ec2_pager(c, 5, 1000, 0, &pg);
	if (spx_ec2_page_begin(&pg, c->in, &p) < 0)
		return -1;
	if (spx_ec2_filters_compile(&inst_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0 ||
	    selected(c, &all) < 0)
		goto out;
	sel = json_array();
	json_array_foreach(all, i, it)
		if (spx_ec2_filters_match(fs, it) &&
		    spx_ec2_page_after(&p, inst_id(it)))
			json_array_append(sel, it);
	if (spx_ec2_page_take(&p, sel, inst_id, &next) < 0)
		goto out;
	json_object_set_new(c->out, "Reservations", reservations(c, sel));
	if (next)
		json_object_set_new(c->out, "NextToken", json_string(next));
	rc = 0;
out:
	free(next);
	json_decref(sel);
	json_decref(all);
	spx_ec2_filters_free(fs);
	spx_ec2_page_release(&p);
	return rc;
}

int ec2_stop_instances(struct ec2_call *c)
{
	json_t *res;

	if (ec2_bool(c, "Hibernate"))
		return spx_ec2_fault(400, "UnsupportedHibernationConfiguration",
				     "Hibernation is not available here.");
	if (spx_inst_stop(c->gw->state, c->account, ec2_list(c, "InstanceIds"),
			  ec2_bool(c, "Force"), c->now, &res) < 0)
		return -1;
	ec2_wake(c);
	json_object_set_new(c->out, "StoppingInstances", res);
	return 0;
}

int ec2_start_instances(struct ec2_call *c)
{
	struct spx_inst_env env;
	json_t *res;
	int rc;

	rc = env_of(c, &env);
	if (rc == 0)
		rc = spx_inst_start(c->gw->state, &env, c->account,
				    ec2_list(c, "InstanceIds"), c->now, &res);
	free((char *)env.lock);
	if (rc < 0)
		return -1;
	ec2_wake(c);
	json_object_set_new(c->out, "StartingInstances", res);
	return 0;
}

static const struct spx_ec2_filter_field status_fields[] = {
	{ "availability-zone", "AvailabilityZone" },
	{ "instance-state-code", "InstanceState.Code" },
	{ "instance-state-name", "InstanceState.Name" },
	{ "instance-status.reachability", "InstanceStatus.Details.Status" },
	{ "instance-status.status", "InstanceStatus.Status" },
	{ "system-status.reachability", "SystemStatus.Details.Status" },
	{ "system-status.status", "SystemStatus.Status" },
};
static const struct spx_ec2_filter_table status_filters = {
	status_fields, SPX_ARRAY_SIZE(status_fields), NULL
};

/* An instance's status: "ok" once it runs (its QEMU is watched by the
 * agent, which records it stopped when it goes), "not-applicable"
 * otherwise. The guest's own reachability is not probed. */
static json_t *status_item(const json_t *it)
{
	const json_t *state = json_object_get(it, "State");
	bool up = json_integer_value(json_object_get(state, "Code")) ==
		  SPX_INST_RUNNING;
	const char *s = up ? "ok" : "not-applicable";

	return json_pack("{s:O, s:O, s:O, s:{s:s, s:[{s:s, s:s}]}, "
			 "s:{s:s, s:[{s:s, s:s}]}, s:[]}",
			 "InstanceId", json_object_get(it, "InstanceId"),
			 "AvailabilityZone",
			 json_object_get(json_object_get(it, "Placement"),
					 "AvailabilityZone"),
			 "InstanceState", state, "InstanceStatus", "Status", s,
			 "Details", "Name", "reachability", "Status",
			 up ? "passed" : "not-applicable", "SystemStatus",
			 "Status", s, "Details", "Name", "reachability",
			 "Status", up ? "passed" : "not-applicable", "Events");
}

int ec2_describe_instance_status(struct ec2_call *c)
{
	struct spx_ec2_filters *fs = NULL;
	struct spx_ec2_pager pg;
	struct spx_ec2_page p;
	json_t *all = NULL, *sel = NULL, *it;
	bool every = ec2_bool(c, "IncludeAllInstances");
	size_t i;
	int rc = -1;

	if (json_array_size(ec2_list(c, "InstanceIds")) &&
	    json_object_get(c->in, "MaxResults"))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "The parameter instancesSet cannot be used "
				     "with the parameter maxResults");
	ec2_pager(c, 5, 1000, 0, &pg);
	if (spx_ec2_page_begin(&pg, c->in, &p) < 0)
		return -1;
	if (spx_ec2_filters_compile(&status_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0 ||
	    selected(c, &all) < 0)
		goto out;
	sel = json_array();
	json_array_foreach(all, i, it) {
		json_t *st;

		if (!every && json_integer_value(json_object_get(
				      json_object_get(it, "State"), "Code")) !=
				      SPX_INST_RUNNING)
			continue;
		st = status_item(it);
		if (spx_ec2_filters_match(fs, st) &&
		    spx_ec2_page_after(&p, inst_id(st)))
			json_array_append(sel, st);
		json_decref(st);
	}
	rc = ec2_page_answer(c, &p, sel, inst_id, "InstanceStatuses", NULL);
out:
	json_decref(sel);
	json_decref(all);
	spx_ec2_filters_free(fs);
	spx_ec2_page_release(&p);
	return rc;
}

/* EC2 gives at most the last 64 KiB of a console. */
#define CONSOLE_MAX (64 << 10)

int ec2_get_console_output(struct ec2_call *c)
{
	const char *id = ec2_str(c, "InstanceId");
	char *vms = spx_path_join(c->gw->conf->paths.run, "vm"), *dir, *path;
	struct spx_buf out = SPX_BUF_INIT;
	unsigned char *buf = spx_calloc(1, CONSOLE_MAX);
	struct stat sb;
	ssize_t n = 0;
	json_t *rec;
	int fd;

	if (spx_inst_get(c->gw->state, c->account, id, &rec) < 0) {
		free(vms);
		free(buf);
		return -1;
	}
	json_decref(rec);
	dir = spx_path_join(vms, id);
	path = spx_path_join(dir, "console.log");
	/* Latest or not, the end of the log: it is cut back as it grows,
	 * so its start is not the boot's anyway. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && fstat(fd, &sb) == 0) {
		off_t from = sb.st_size > CONSOLE_MAX ? sb.st_size - CONSOLE_MAX
						      : 0;

		n = pread(fd, buf, CONSOLE_MAX, from);
		if (n < 0)
			n = 0;
	}
	if (fd >= 0)
		close(fd);
	spx_base64_encode(buf, (size_t)n, &out);
	spx_buf_addc(&out, 0);
	json_object_set_new(c->out, "InstanceId", json_string(id));
	json_object_set_new(c->out, "Output", json_string(out.p));
	json_object_set_new(c->out, "Timestamp", json_integer(c->now));
	spx_buf_release(&out);
	free(buf);
	free(path);
	free(dir);
	free(vms);
	return 0;
}

int ec2_describe_instance_attribute(struct ec2_call *c)
{
	const char *attr = ec2_str(c, "Attribute");
	json_t *rec, *v = NULL;

	if (spx_inst_get(c->gw->state, c->account, ec2_str(c, "InstanceId"),
			 &rec) < 0)
		return -1;
	json_object_set(c->out, "InstanceId", json_object_get(rec, "InstanceId"));
	if (!strcmp(attr, "instanceType"))
		v = json_pack("{s:O}", "Value", json_object_get(rec, "InstanceType"));
	else if (!strcmp(attr, "userData"))
		v = json_object_get(rec, "SpxUserData")
			    ? json_pack("{s:O}", "Value",
					json_object_get(rec, "SpxUserData"))
			    : json_object();
	else if (!strcmp(attr, "disableApiTermination"))
		v = json_pack("{s:b}", "Value",
			      json_is_true(json_object_get(
				      rec, "SpxDisableApiTermination")));
	else if (!strcmp(attr, "instanceInitiatedShutdownBehavior"))
		v = json_pack("{s:s}", "Value", "stop");
	else if (!strcmp(attr, "rootDeviceName"))
		v = json_pack("{s:O}", "Value",
			      json_object_get(rec, "RootDeviceName"));
	else if (!strcmp(attr, "blockDeviceMapping"))
		v = json_deep_copy(json_object_get(rec, "BlockDeviceMappings"));
	else if (!strcmp(attr, "productCodes") || !strcmp(attr, "groupSet"))
		v = json_array();
	else if (!strcmp(attr, "sourceDestCheck") ||
		 !strcmp(attr, "enaSupport"))
		v = json_pack("{s:b}", "Value", 1);
	else if (!strcmp(attr, "ebsOptimized"))
		v = json_pack("{s:O}", "Value",
			      json_object_get(rec, "EbsOptimized"));
	else if (!strcmp(attr, "disableApiStop"))
		v = json_pack("{s:b}", "Value", 0);
	else if (!strcmp(attr, "enclaveOptions"))
		v = json_pack("{s:b}", "Enabled", 0);
	json_decref(rec);
	if (!v)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%s) for parameter attribute is "
				     "invalid. The attribute is not available "
				     "here.",
				     attr);
	{
		static const struct {
			const char *attr, *member;
		} names[] = {
			{ "instanceType", "InstanceType" },
			{ "userData", "UserData" },
			{ "disableApiTermination", "DisableApiTermination" },
			{ "instanceInitiatedShutdownBehavior",
			  "InstanceInitiatedShutdownBehavior" },
			{ "rootDeviceName", "RootDeviceName" },
			{ "blockDeviceMapping", "BlockDeviceMappings" },
			{ "productCodes", "ProductCodes" },
			{ "groupSet", "Groups" },
			{ "sourceDestCheck", "SourceDestCheck" },
			{ "enaSupport", "EnaSupport" },
			{ "ebsOptimized", "EbsOptimized" },
			{ "disableApiStop", "DisableApiStop" },
			{ "enclaveOptions", "EnclaveOptions" },
		};

		for (size_t i = 0; i < SPX_ARRAY_SIZE(names); i++)
			if (!strcmp(names[i].attr, attr))
				json_object_set(c->out, names[i].member, v);
	}
	json_decref(v);
	return 0;
}

int ec2_reboot_instances(struct ec2_call *c)
{
	if (spx_inst_reboot(c->gw->state, c->account,
			    ec2_list(c, "InstanceIds")) < 0)
		return -1;
	ec2_wake(c);
	return 0;
}

int ec2_modify_instance_attribute(struct ec2_call *c)
{
	return spx_inst_modify(c->gw->state, c->account, c->in);
}

int ec2_modify_instance_metadata_options(struct ec2_call *c)
{
	json_t *mo;

	if (spx_inst_modify_mdopts(c->gw->state, c->account, c->in, &mo) < 0)
		return -1;
	ec2_wake(c);
	json_object_set(c->out, "InstanceId",
			json_object_get(c->in, "InstanceId"));
	json_object_set_new(c->out, "InstanceMetadataOptions", mo);
	return 0;
}
