/* instance.c: EC2 instances in the record store (see instance.h). */
#include "spx.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/file.h>

#include "buf.h"
#include "checksum.h"
#include "ec2/fault.h"
#include "ec2/image.h"
#include "ec2/instance.h"
#include "ec2/itype.h"
#include "ec2/keypair.h"
#include "ec2/pgroup.h"
#include "ec2/rec.h"
#include "ec2/tags.h"
#include "ec2/volume.h"
#include "id.h"
#include "net/net.h"
#include "state/state.h"
#include "vm/imds.h"

/* RunInstances launches at most this many at once (EC2's own limit is
 * the account's vCPU quota; one node holds far fewer). */
#define RUN_MAX 100
/* User data, decoded (EC2's limit). */
#define USERDATA_MAX 16384

static const struct spx_ec2_kind kind = {
	"instances", "i", "instance", "InstanceId",
	"InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed",
};

static const struct {
	int code;
	const char *name;
} states[] = {
	{ SPX_INST_PENDING, "pending" },
	{ SPX_INST_RUNNING, "running" },
	{ SPX_INST_SHUTTING_DOWN, "shutting-down" },
	{ SPX_INST_TERMINATED, "terminated" },
	{ SPX_INST_STOPPING, "stopping" },
	{ SPX_INST_STOPPED, "stopped" },
};

const char *spx_inst_state_name(int code)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(states); i++)
		if (states[i].code == code)
			return states[i].name;
	return NULL;
}

bool spx_inst_id_wellformed(const char *id)
{
	return spx_ec2_id_wellformed(id, "i");
}

static int64_t num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static int code_of(const json_t *rec)
{
	return (int)num(json_object_get(rec, "State"), "Code");
}

static void set_state(json_t *rec, int code)
{
	json_object_set_new(rec, "State",
			    json_pack("{s:i, s:s}", "Code", code, "Name",
				      spx_inst_state_name(code)));
}

static void set_reason(json_t *rec, const char *code, const char *msg)
{
	if (!code) {
		json_object_del(rec, "StateReason");
		return;
	}
	json_object_set_new(rec, "StateReason",
			    json_pack("{s:s, s:s}", "Code", code, "Message",
				      msg));
}

/* "User initiated (2026-12-02 02:50:00 GMT)", as EC2 words it. */
static void set_transition(json_t *rec, const char *who, time_t now)
{
	char when[32], *s;
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	s = spx_xprintf("%s (%s GMT)", who, when);
	json_object_set_new(rec, "StateTransitionReason", json_string(s));
	free(s);
}

uint64_t spx_inst_host_mem_mib(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	unsigned long long kib = 0;
	char line[256];
	uint64_t mib, keep;

	if (!f) {
		spx_error_errno(SPX_FAIL, "cannot open '/proc/meminfo'");
		return 0;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kib) == 1)
			break;
	fclose(f);
	if (!kib) {
		spx_error(SPX_FAIL, "no MemTotal in '/proc/meminfo'");
		return 0;
	}
	mib = kib / 1024;
	keep = mib / 10 > SPX_INST_RESERVE_MIB ? mib / 10 : SPX_INST_RESERVE_MIB;
	return mib > keep ? mib - keep : 0;
}

/* ---- RunInstances: what the request asks for ----------------------- */

struct launch {
	const struct spx_itype *type;
	json_t *image;		/* the image's record */
	const json_t *root_map;	/* its root device's mapping */
	json_t *volreq;		/* a CreateVolumeRequest for each root */
	bool dot;		/* the root's DeleteOnTermination */
	int64_t min, max;
	char *pubkey;		/* KeyName's, or NULL */
	json_t *itags, *vtags;	/* TagLists for instances and volumes */
	json_t *mdopts;		/* MetadataOptions */
	json_t *pg;		/* the placement group's record, or NULL */
};

static void launch_release(struct launch *l)
{
	json_decref(l->image);
	json_decref(l->volreq);
	free(l->pubkey);
	json_decref(l->itags);
	json_decref(l->vtags);
	json_decref(l->mdopts);
	json_decref(l->pg);
}

static int unsupported(const char *what)
{
	return spx_ec2_fault(400, "Unsupported",
			     "The parameter %s is not supported here yet.",
			     what);
}

static int check_counts(const json_t *req, struct launch *l)
{
	l->min = num(req, "MinCount");
	l->max = num(req, "MaxCount");
	if (l->min < 1)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%lld) for parameter minCount is "
				     "invalid. Expected a value of at least 1.",
				     (long long)l->min);
	if (l->max < l->min)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%lld) for parameter maxCount is "
				     "invalid. It must be at least minCount "
				     "(%lld).",
				     (long long)l->max, (long long)l->min);
	if (l->min > RUN_MAX)
		return spx_ec2_fault(400, "InstanceLimitExceeded",
				     "Your quota allows for %d more running "
				     "instance(s). You requested at least %lld.",
				     RUN_MAX, (long long)l->min);
	if (l->max > RUN_MAX)
		l->max = RUN_MAX;
	return 0;
}

static int check_userdata(const json_t *req)
{
	const char *ud = spx_ec2_str(req, "UserData");
	unsigned char *buf;
	size_t n, got;
	int rc;

	if (!ud)
		return 0;
	n = strlen(ud);
	if (n / 4 * 3 > USERDATA_MAX + 2)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "User data is limited to %d bytes.",
				     USERDATA_MAX);
	buf = spx_calloc(1, USERDATA_MAX + 3);
	rc = spx_base64_decode(ud, n, buf, USERDATA_MAX + 3, &got);
	free(buf);
	spx_error_clear();
	if (rc < 0)
		return spx_ec2_fault(400, "InvalidUserData.Malformed",
				     "Invalid BASE64 encoding of user data.");
	if (got > USERDATA_MAX)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "User data is limited to %d bytes.",
				     USERDATA_MAX);
	return 0;
}

static int check_keyname(struct spx_state *st, const char *account,
			 const json_t *req, struct launch *l)
{
	const char *name = spx_ec2_str(req, "KeyName");
	struct spx_keypair k;
	int rc;

	if (!name)
		return 0;
	rc = spx_keypair_get(st, account, NULL, name, &k);
	if (rc == SPX_EC2_KEYPAIR_NOTFOUND)
		return spx_ec2_fault(400, "InvalidKeyPair.NotFound",
				     "The key pair '%s' does not exist", name);
	if (rc < 0)
		return spx_ec2_fault_rc(rc, name);
	l->pubkey = spx_strdup(k.public_key ? k.public_key : "");
	spx_keypair_release(&k);
	return 0;
}

/* The image's root mapping and the request's changes to it, as the
 * request CreateVolume would get for each root volume. */
static int check_root(const json_t *req, const char *zone, struct launch *l)
{
	const char *root = spx_ec2_str(l->image, "RootDeviceName");
	const json_t *m, *ebs, *want = NULL;
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(l->image, "BlockDeviceMappings"), i,
			   m)
		if (root && !strcmp(spx_ec2_str0(m, "DeviceName"), root))
			l->root_map = m;
	ebs = json_object_get(l->root_map, "Ebs");
	if (!root || !spx_ec2_str(ebs, "SnapshotId"))
		return spx_ec2_fault(400, "InvalidAMIID.Unavailable",
				     "The image '%s' has no root volume to "
				     "launch from.",
				     spx_ec2_str0(l->image, "ImageId"));
	json_array_foreach(json_object_get(req, "BlockDeviceMappings"), i, m) {
		const char *dev = spx_ec2_str0(m, "DeviceName");

		if (strcmp(dev, root))
			return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
					     "Only the root device (%s) can be "
					     "mapped at launch here; attach "
					     "other volumes with AttachVolume "
					     "(%s).",
					     root, dev);
		if (json_object_get(m, "NoDevice") ||
		    json_object_get(m, "VirtualName"))
			return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
					     "The root device %s must be an "
					     "EBS volume.",
					     root);
		want = json_object_get(m, "Ebs");
		v = json_object_get(want, "SnapshotId");
		if (v && strcmp(json_string_value(v),
				spx_ec2_str0(ebs, "SnapshotId")))
			return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
					     "The snapshot of the root device "
					     "is the image's.");
		if (json_object_get(want, "KmsKeyId") ||
		    json_object_get(want, "OutpostArn"))
			return unsupported("BlockDeviceMapping.Ebs.KmsKeyId");
	}
	v = json_object_get(want, "VolumeType");
	if (!v)
		v = json_object_get(ebs, "VolumeType");
	l->volreq = json_pack("{s:s, s:O, s:s}", "AvailabilityZone", zone,
			      "SnapshotId", json_object_get(ebs, "SnapshotId"),
			      "VolumeType",
			      v ? json_string_value(v) : "gp2");
	v = json_object_get(want, "VolumeSize");
	if (!v)
		v = json_object_get(ebs, "VolumeSize");
	if (v)
		json_object_set(l->volreq, "Size", v);
	if ((v = json_object_get(want, "Iops")))
		json_object_set(l->volreq, "Iops", v);
	if ((v = json_object_get(want, "Throughput")))
		json_object_set(l->volreq, "Throughput", v);
	if ((v = json_object_get(want, "Encrypted")))
		json_object_set(l->volreq, "Encrypted", v);
	v = json_object_get(want, "DeleteOnTermination");
	if (!v)
		v = json_object_get(ebs, "DeleteOnTermination");
	l->dot = !v || json_is_true(v);
	return 0;
}

/* TagSpecifications of RunInstances: one for instances, one for
 * volumes (the root volumes), nothing else. */
static int check_tags(const json_t *req, struct launch *l)
{
	json_t *ispec = json_array(), *vspec = json_array(), *s;
	const json_t *specs = json_object_get(req, "TagSpecifications");
	size_t i;
	int rc = -1;

	json_array_foreach(specs, i, s) {
		const char *rt = spx_ec2_str0(s, "ResourceType");

		if (!strcmp(rt, "volume"))
			json_array_append(vspec, s);
		else
			json_array_append(ispec, s); /* checked below */
	}
	if (spx_ec2_tagspec(ispec, "instance", &l->itags) == 0 &&
	    spx_ec2_tagspec(vspec, "volume", &l->vtags) == 0)
		rc = 0;
	json_decref(ispec);
	json_decref(vspec);
	return rc;
}

static int check_mdopts(const json_t *req, struct launch *l)
{
	const json_t *o = json_object_get(req, "MetadataOptions");
	const char *tokens = spx_ec2_str(o, "HttpTokens");
	const char *ep = spx_ec2_str(o, "HttpEndpoint");
	const json_t *hop = json_object_get(o, "HttpPutResponseHopLimit");
	int64_t h = hop ? json_integer_value(hop) : 1;

	if (h < 1 || h > 64)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "The HttpPutResponseHopLimit (%lld) must "
				     "be between 1 and 64.",
				     (long long)h);
	if (spx_ec2_str(o, "HttpProtocolIpv6") &&
	    !strcmp(spx_ec2_str(o, "HttpProtocolIpv6"), "enabled"))
		return unsupported("MetadataOptions.HttpProtocolIpv6");
	l->mdopts = json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}", "State",
			      "pending", "HttpTokens",
			      tokens ? tokens : "optional",
			      "HttpPutResponseHopLimit", (json_int_t)h,
			      "HttpEndpoint", ep ? ep : "enabled",
			      "HttpProtocolIpv6", "disabled",
			      "InstanceMetadataTags", "disabled");
	return 0;
}

/* Placement's group members: GroupName or GroupId (not both), and
 * PartitionNumber only with one; the group itself is looked up under the
 * node's lock (group_fit). Dedicated hosts are not here. */
static int check_placement(const json_t *pl)
{
	static const char *const refused[] = {
		"Affinity", "HostId", "HostResourceGroupArn", "SpreadDomain",
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(refused); i++)
		if (json_object_get(pl, refused[i]))
			return spx_ec2_fault(400, "Unsupported",
					     "The parameter Placement.%s is not "
					     "supported here yet.",
					     refused[i]);
	if (spx_ec2_str(pl, "GroupName") && spx_ec2_str(pl, "GroupId"))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "The parameters Placement.GroupName and "
				     "Placement.GroupId cannot be combined.");
	if (spx_ec2_str(pl, "GroupName") &&
	    spx_pg_name_check(spx_ec2_str(pl, "GroupName")) < 0)
		return -1;
	if (json_object_get(pl, "PartitionNumber") &&
	    !spx_ec2_str(pl, "GroupName") && !spx_ec2_str(pl, "GroupId"))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "Placement.PartitionNumber needs a "
				     "placement group.");
	return 0;
}

static int check_request(struct spx_state *st,
			 const struct spx_inst_env *env, const char *account,
			 const json_t *req, struct launch *l)
{
	static const char *const refused[] = {
		"LaunchTemplate", "NetworkInterfaces", "KernelId",
		"RamdiskId", "InstanceMarketOptions", "ElasticGpuSpecification",
		"ElasticInferenceAccelerators", "LicenseSpecifications",
		"Ipv6Addresses", "Ipv6AddressCount", "PrivateIpAddress",
		"IamInstanceProfile",
	};
	const char *type = spx_ec2_str(req, "InstanceType");
	const json_t *pl = json_object_get(req, "Placement");
	const char *az = spx_ec2_str(pl, "AvailabilityZone");
	const char *ten = spx_ec2_str(pl, "Tenancy");
	const char *ami = spx_ec2_str(req, "ImageId");

	for (size_t i = 0; i < SPX_ARRAY_SIZE(refused); i++)
		if (json_object_get(req, refused[i]))
			return unsupported(refused[i]);
	if (!ami)
		return spx_ec2_fault_missing("ImageId");
	if (spx_ec2_image_get(st, account, ami, &l->image) < 0)
		return -1;
	if (strcmp(spx_ec2_str0(l->image, "State"), "available"))
		return spx_ec2_fault(400, "InvalidAMIID.Unavailable",
				     "The image '%s' is '%s'; instances launch "
				     "from an 'available' image.",
				     ami, spx_ec2_str0(l->image, "State"));
	l->type = spx_itype_find(type ? type : SPX_INST_DEFAULT_TYPE);
	if (!l->type)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Invalid value '%s' for InstanceType.",
				     type);
	if (az && strcmp(az, env->zone))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Invalid availability zone: [%s]", az);
	if (ten && strcmp(ten, "default"))
		return unsupported("Placement.Tenancy");
	if (check_placement(pl) < 0)
		return -1;
	if (spx_ec2_str(req, "InstanceInitiatedShutdownBehavior") &&
	    strcmp(spx_ec2_str(req, "InstanceInitiatedShutdownBehavior"),
		   "stop"))
		return unsupported("InstanceInitiatedShutdownBehavior");
	return check_counts(req, l) < 0 || check_userdata(req) < 0 ||
			       check_keyname(st, account, req, l) < 0 ||
			       check_root(req, env->zone, l) < 0 ||
			       check_tags(req, l) < 0 || check_mdopts(req, l) < 0
		       ? -1
		       : 0;
}

/* ---- admission ------------------------------------------------------ */

static bool holds_memory(int code)
{
	return code == SPX_INST_PENDING || code == SPX_INST_RUNNING ||
	       code == SPX_INST_STOPPING || code == SPX_INST_SHUTTING_DOWN;
}

/* What node's instances hold, every account, from one listing: the MiB
 * of memory into *mib; if ips is not NULL, the addresses and taps of
 * those on the bridge (not terminated) into *ips, an object with a
 * member per address and one per tap ("tap:NAME"). */
static int held(struct spx_state *st, const char *node, uint64_t *mib,
		json_t **ips)
{
	json_t *all, *r;
	size_t i;

	*mib = 0;
	if (ips)
		*ips = NULL;
	if (spx_ec2_kind_list(st, &kind, NULL, &all) < 0)
		return -1;
	if (ips)
		*ips = json_object();
	json_array_foreach(all, i, r) {
		if (strcmp(spx_ec2_str0(r, "SpxNode"), node))
			continue;
		if (holds_memory(code_of(r)))
			*mib += (uint64_t)num(r, "SpxMemMiB");
		if (ips && code_of(r) != SPX_INST_TERMINATED &&
		    !strcmp(spx_ec2_str0(r, "SpxNetwork"), "bridge")) {
			char tap[SPX_INST_TAP_SIZE + 4] = "tap:";

			spx_inst_tap(spx_ec2_str0(r, "InstanceId"), tap + 4);
			json_object_set_new(*ips,
					    spx_ec2_str0(r, "PrivateIpAddress"),
					    json_true());
			json_object_set_new(*ips, tap, json_true());
		}
	}
	json_decref(all);
	return 0;
}

/* The lowest address of gw's network that is neither taken nor gw's
 * own nor one a VPC subnet keeps (its first four and its last), into
 * out, and taken. */
static int next_ip(const struct spx_net_cidr *gw, json_t *taken,
		   char out[16])
{
	uint32_t mask = gw->prefix ? ~0u << (32 - gw->prefix) : 0;
	uint32_t net = gw->addr & mask, bcast = net | ~mask;

	for (uint32_t a = net + 4; a < bcast; a++) {
		struct in_addr ia = { .s_addr = htonl(a) };

		if (a == gw->addr)
			continue;
		inet_ntop(AF_INET, &ia, out, 16);
		if (!json_object_get(taken, out)) {
			json_object_set_new(taken, out, json_true());
			return 0;
		}
	}
	return spx_ec2_fault(400, "InsufficientFreeAddressesInSubnet",
			     "There are not enough free addresses in the "
			     "network of this node's instances.");
}

/* How many of mib each fit (at most want) beside the MiB taken (from
 * held, under the node's lock). */
static int fit(const struct spx_inst_env *env, uint64_t taken,
	       const char *type, int64_t mib, int64_t min, int64_t want,
	       int64_t *n)
{
	uint64_t room;

	room = env->mem_mib > taken ? env->mem_mib - taken : 0;
	*n = (int64_t)(room / (uint64_t)mib);
	if (*n > want)
		*n = want;
	if (*n < min)
		return spx_ec2_fault(500, "InsufficientInstanceCapacity",
				     "We currently do not have sufficient %s "
				     "capacity: %lld instance(s) of %lld MiB "
				     "need %lld MiB, and %llu MiB of the "
				     "%llu MiB instances may use on this node "
				     "are taken.",
				     type, (long long)min, (long long)mib,
				     (long long)(min * mib),
				     (unsigned long long)taken,
				     (unsigned long long)env->mem_mib);
	return 0;
}

static bool pg_member(const json_t *rec)
{
	int c = code_of(rec);

	return c != SPX_INST_SHUTTING_DOWN && c != SPX_INST_TERMINATED;
}

int spx_inst_pg_members(struct spx_state *st, const char *account,
			const char *gid, int64_t *n)
{
	json_t *all, *r;
	size_t i;

	*n = 0;
	if (spx_ec2_kind_list(st, &kind, account, &all) < 0)
		return -1;
	json_array_foreach(all, i, r)
		if (!strcmp(spx_ec2_str0(json_object_get(r, "Placement"),
					 "GroupId"),
			    gid) &&
		    pg_member(r))
			(*n)++;
	json_decref(all);
	return 0;
}

/* The request's placement group (under the node's lock): l->pg, and *n
 * cut to what the group takes. A spread group holds one instance on this
 * node (one host). */
static int group_fit(struct spx_state *st, const char *account,
		     const json_t *req, struct launch *l, int64_t *n)
{
	const json_t *pl = json_object_get(req, "Placement");
	const char *name = spx_ec2_str(pl, "GroupName");
	const char *gid = spx_ec2_str(pl, "GroupId");
	const json_t *part = json_object_get(pl, "PartitionNumber");
	const char *strat;
	int64_t have;

	if (!name && !gid)
		return 0;
	if ((name ? spx_pg_find(st, account, name, &l->pg)
		  : spx_pg_get(st, account, gid, &l->pg)) < 0)
		return -1;
	strat = spx_ec2_str0(l->pg, "Strategy");
	if (part) {
		int64_t p = json_integer_value(part);
		int64_t max = num(l->pg, "PartitionCount");

		if (strcmp(strat, "partition"))
			return spx_ec2_fault(400, "InvalidParameterCombination",
					     "Placement.PartitionNumber is "
					     "valid only for a partition "
					     "placement group.");
		if (p < 1 || p > max)
			return spx_ec2_fault(400, "InvalidParameterValue",
					     "The partition number (%lld) must "
					     "be between 1 and %lld for "
					     "placement group '%s'.",
					     (long long)p, (long long)max,
					     spx_ec2_str0(l->pg, "GroupName"));
	}
	if (strcmp(strat, "spread"))
		return 0;
	if (spx_inst_pg_members(st, account, spx_ec2_str0(l->pg, "GroupId"),
				&have) < 0)
		return -1;
	if (have + l->min > 1)
		return spx_ec2_fault(500, "InsufficientInstanceCapacity",
				     "We currently do not have sufficient "
				     "capacity in spread placement group "
				     "'%s': the spread group is full on this "
				     "node, which holds one of its instances "
				     "(it has %lld; %lld requested).",
				     spx_ec2_str0(l->pg, "GroupName"),
				     (long long)have, (long long)l->min);
	if (*n > 1 - have)
		*n = 1 - have;
	return 0;
}

static int lock_node(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd >= 0 && flock(fd, LOCK_EX) == 0)
		return fd;
	spx_ec2_fault(500, "InternalError",
		      "An internal error has occurred (lock '%s': %s)", path,
		      strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* ---- records -------------------------------------------------------- */

static char *dns_name(const char *id, const char *region)
{
	if (!strcmp(region, "us-east-1"))
		return spx_xprintf("%s.ec2.internal", id);
	return spx_xprintf("%s.%s.compute.internal", id, region);
}

static json_t *new_record(const struct spx_inst_env *env,
			  const char *account, const json_t *req,
			  const struct launch *l, const char *id,
			  const char *rid, const char *vol, const char *ip,
			  int64_t index, time_t now)
{
	const char *root = spx_ec2_str(l->image, "RootDeviceName");
	const char *tok = spx_ec2_str(req, "ClientToken");
	char *dns = dns_name(id, env->region);
	json_t *rec, *v;

	rec = json_pack(
		"{s:s, s:O, s:s, s:s, s:I, s:{s:s, s:s, s:s}, s:s, s:s, "
		"s:s, s:s, s:s, s:s, s:[{s:s, s:{s:I, s:b, s:s, s:s}}], "
		"s:O, s:{s:s}, s:O, s:I, s:s, s:b, s:s, s:s, s:{s:i, s:i}, "
		"s:[], s:[], s:[], s:b, s:b, s:s, s:s, "
		"s:{s:s, s:b, s:b}, s:{s:b}, s:{s:b}}",
		"InstanceId", id, "ImageId", json_object_get(l->image, "ImageId"),
		"InstanceType", l->type->name, "StateTransitionReason", "",
		"LaunchTime", (json_int_t)now, "Placement", "AvailabilityZone",
		env->zone, "GroupName", "", "Tenancy", "default",
		"PrivateIpAddress", ip ? ip : SPX_INST_PRIVATE_IP, "PrivateDnsName", dns,
		"PublicDnsName", "", "Architecture",
		spx_ec2_str0(l->image, "Architecture"), "RootDeviceName", root,
		"RootDeviceType", "ebs", "BlockDeviceMappings", "DeviceName",
		root, "Ebs", "AttachTime", (json_int_t)now,
		"DeleteOnTermination", l->dot, "Status", "attaching", "VolumeId",
		vol, "MetadataOptions", l->mdopts, "Monitoring", "State",
		"disabled", "Tags", l->itags, "AmiLaunchIndex", (json_int_t)index,
		"ClientToken", tok ? tok : "", "EbsOptimized",
		json_is_true(json_object_get(req, "EbsOptimized")), "Hypervisor",
		"xen", "VirtualizationType", "hvm", "CpuOptions", "CoreCount",
		l->type->cores, "ThreadsPerCore",
		l->type->threads_per_core ? l->type->threads_per_core : 1,
		"ProductCodes", "SecurityGroups", "NetworkInterfaces",
		"EnaSupport", 1, "SourceDestCheck", 1, "PlatformDetails",
		"Linux/UNIX", "UsageOperation", "RunInstances",
		"PrivateDnsNameOptions", "HostnameType", "resource-name",
		"EnableResourceNameDnsARecord", 0,
		"EnableResourceNameDnsAAAARecord", 0, "HibernationOptions",
		"Configured", 0, "EnclaveOptions", "Enabled", 0);
	free(dns);
	if (!rec)
		return NULL;
	set_state(rec, SPX_INST_PENDING);
	set_reason(rec, "pending", "pending");
	if (spx_ec2_str(req, "KeyName"))
		json_object_set(rec, "KeyName", json_object_get(req, "KeyName"));
	if ((v = json_object_get(l->image, "BootMode")))
		json_object_set(rec, "BootMode", v);
	if (l->pg) {
		json_t *pl = json_object_get(rec, "Placement");
		const json_t *part = json_object_get(
			json_object_get(req, "Placement"), "PartitionNumber");

		json_object_set(pl, "GroupName",
				json_object_get(l->pg, "GroupName"));
		json_object_set(pl, "GroupId", json_object_get(l->pg, "GroupId"));
		if (part)
			json_object_set(pl, "PartitionNumber", (json_t *)part);
		else if (!strcmp(spx_ec2_str0(l->pg, "Strategy"), "partition"))
			/* EC2 spreads them over the partitions itself. */
			json_object_set_new(
				pl, "PartitionNumber",
				json_integer(index % num(l->pg,
							 "PartitionCount") +
					     1));
	}
	json_object_set_new(rec, "SpxNode", json_string(env->node));
	json_object_set_new(rec, "SpxAccount", json_string(account));
	json_object_set_new(rec, "SpxReservationId", json_string(rid));
	json_object_set_new(rec, "SpxDesired", json_string("running"));
	if ((v = json_object_get(req, "UserData")))
		json_object_set(rec, "SpxUserData", v);
	if (l->pubkey)
		json_object_set_new(rec, "SpxPublicKey", json_string(l->pubkey));
	json_object_set_new(rec, "SpxMemMiB",
			    json_integer(l->type->memory_mib));
	json_object_set_new(rec, "SpxCpus", json_integer(l->type->vcpus));
	json_object_set_new(rec, "SpxRoot",
			    json_pack("{s:s, s:b}", "VolumeId", vol,
				      "DeleteOnTermination", l->dot));
	json_object_set_new(rec, "SpxSshPort", json_integer(0));
	if (ip)
		json_object_set_new(rec, "SpxNetwork", json_string("bridge"));
	json_object_set_new(rec, "SpxDisableApiTermination",
			    json_boolean(json_is_true(json_object_get(
				    req, "DisableApiTermination"))));
	if ((v = json_object_get(req, "SecurityGroupIds")))
		json_object_set(rec, "SpxSecurityGroupIds", v);
	if ((v = json_object_get(req, "SubnetId")))
		json_object_set(rec, "SpxSubnetId", v);
	json_object_set_new(rec, "SpxError", json_string(""));
	return rec;
}

/* The root volume vol of instance id: attached (recorded "attaching"),
 * in-use once the agent made it. */
struct attach {
	const char *id, *dev;
	bool dot;
	time_t now;
};

static int do_attach(json_t *vrec, void *arg)
{
	struct attach *a = arg;

	json_object_set_new(
		vrec, "Attachments",
		json_pack("[{s:I, s:s, s:s, s:s, s:O, s:b}]", "AttachTime",
			  (json_int_t)a->now, "Device", a->dev, "InstanceId",
			  a->id, "State", "attaching", "VolumeId",
			  json_object_get(vrec, "VolumeId"),
			  "DeleteOnTermination", a->dot));
	if (!strcmp(spx_ec2_str0(vrec, "State"), "available"))
		json_object_set_new(vrec, "State", json_string("in-use"));
	return 0;
}

/* Detach a root volume and, when del, have the agent delete it (a volume
 * still being made is deleted once it is). */
static int do_release(json_t *vrec, void *arg)
{
	bool del = *(bool *)arg;
	const char *s = spx_ec2_str0(vrec, "State");

	json_object_set_new(vrec, "Attachments", json_array());
	if (del && strcmp(s, "deleting"))
		json_object_set_new(vrec, "State", json_string("deleting"));
	else if (!strcmp(s, "in-use"))
		json_object_set_new(vrec, "State", json_string("available"));
	return 0;
}

static int release_volume(struct spx_state *st, const char *account,
			  const char *vol, bool del)
{
	char *key = spx_xprintf("volumes/%s/%s", account, vol);
	int rc = spx_ec2_rec_change(st, key, do_release, &del);

	free(key);
	return rc == SPX_STATE_NOTFOUND ? 0 : rc;
}

/* Undo the launches recorded so far: their records go, their volumes are
 * deleted (the agent may be making them already). */
static void undo(struct spx_state *st, const char *account, json_t *made)
{
	size_t i;
	json_t *r;

	json_array_foreach(made, i, r) {
		const char *vol = spx_ec2_str(json_object_get(r, "SpxRoot"),
					      "VolumeId");
		char *key;

		if (json_object_get(r, "SpxRecorded")) {
			key = spx_ec2_kind_key(&kind, account,
					       spx_ec2_str0(r, "InstanceId"));
			spx_state_delete(st, key, 0);
			free(key);
		}
		if (vol && release_volume(st, account, vol, true) < 0)
			spx_log(SPX_LOG_WARN, "ec2: cannot undo volume %s: %s",
				vol, spx_errmsg());
	}
}

/* A new instance id into id; on a bridge (taken, from held) one
 * whose tap's name no instance there has (a tap names an instance by
 * its id's first 15 characters), recorded as taken. */
static int new_id(json_t *taken, char id[SPX_ID_SIZE])
{
	char tap[SPX_INST_TAP_SIZE + 4] = "tap:";

	for (int i = 0; i < 16; i++) {
		if (spx_id_new(id, SPX_ID_SIZE, "i") < 0)
			return spx_ec2_fault(500, "InternalError", "%s",
					     spx_errmsg());
		if (!taken)
			return 0;
		spx_inst_tap(id, tap + 4);
		if (!json_object_get(taken, tap)) {
			json_object_set_new(taken, tap, json_true());
			return 0;
		}
	}
	return spx_ec2_fault(500, "InternalError",
			     "no instance id with a tap name of its own");
}

int spx_inst_run(struct spx_state *st, const struct spx_inst_env *env,
		 const char *account, const json_t *req, time_t now,
		 json_t **out)
{
	struct launch l = { 0 };
	char rid[SPX_ID_SIZE];
	json_t *made = json_array(), *insts = json_array(), *r, *ips = NULL;
	struct spx_net_cidr gw;
	uint64_t taken;
	int64_t n = 0;
	int lk = -1, rc = -1;
	size_t i;

	*out = NULL;
	if (!spx_account_id_valid(account)) {
		spx_ec2_fault(500, "InternalError", "bad account");
		goto out;
	}
	if (check_request(st, env, account, req, &l) < 0)
		goto out;
	if (spx_id_new(rid, sizeof(rid), "r") < 0) {
		spx_ec2_fault(500, "InternalError", "%s", spx_errmsg());
		goto out;
	}
	/* The memory, placement group and address checks and the records
	 * under the node's lock: two launches cannot both take the last
	 * memory, a spread group's one place or an address. The placement
	 * group first: an unknown or full one is said as such whatever the
	 * memory. */
	n = l.max;
	if ((lk = lock_node(env->lock)) < 0 ||
	    group_fit(st, account, req, &l, &n) < 0 ||
	    held(st, env->node, &taken, env->bridge_address ? &ips : NULL) < 0 ||
	    fit(env, taken, l.type->name, l.type->memory_mib, l.min, n, &n) < 0)
		goto out;
	if (env->bridge_address &&
	    spx_net_cidr_parse(env->bridge_address,
			       strlen(env->bridge_address), &gw) < 0) {
		spx_ec2_fault(500, "InternalError", "%s", spx_errmsg());
		goto out;
	}
	for (int64_t k = 0; k < n; k++) {
		char id[SPX_ID_SIZE], ip[16], *key;
		struct attach at;
		json_t *vol = NULL;

		if (new_id(ips, id) < 0)
			goto fail;
		/* As many as have addresses, when MinCount have. */
		if (ips && next_ip(&gw, ips, ip) < 0) {
			if (k < l.min)
				goto fail;
			spx_error_clear();
			break;
		}
		if (spx_ebs_create(st, env->ebs, account, l.volreq, l.vtags,
				   now, &vol) < 0)
			goto fail;
		r = new_record(env, account, req, &l, id, rid,
			       spx_ec2_str0(vol, "VolumeId"), ips ? ip : NULL,
			       k, now);
		json_decref(vol);
		if (!r) {
			spx_ec2_fault(500, "InternalError", "cannot encode");
			goto fail;
		}
		json_array_append_new(made, r);
		at = (struct attach){ id, spx_ec2_str(r, "RootDeviceName"),
				      l.dot, now };
		key = spx_xprintf("volumes/%s/%s", account,
				  spx_ec2_str(json_object_get(r, "SpxRoot"),
					      "VolumeId"));
		rc = spx_ec2_rec_change(st, key, do_attach, &at);
		free(key);
		if (rc == 0) {
			key = spx_ec2_kind_key(&kind, account, id);
			rc = spx_ec2_rec_put(st, key, r, true, 0);
			free(key);
			if (rc < 0)
				spx_ec2_state_fail(rc);
		} else if (rc == SPX_STATE_NOTFOUND) {
			spx_ec2_state_fail(rc);
		}
		if (rc < 0)
			goto fail;
		json_object_set_new(r, "SpxRecorded", json_true());
	}
	json_array_foreach(made, i, r)
		json_array_append_new(insts, spx_inst_item(r));
	*out = json_pack("{s:s, s:s, s:[], s:O}", "ReservationId", rid,
			 "OwnerId", account, "Groups", "Instances", insts);
	rc = 0;
	goto out;
fail:
	rc = -1;
	undo(st, account, made);
out:
	if (lk >= 0)
		close(lk);
	json_decref(ips);
	json_decref(made);
	json_decref(insts);
	launch_release(&l);
	return rc;
}

/* ---- reading -------------------------------------------------------- */

int spx_inst_get(struct spx_state *st, const char *account, const char *id,
		 json_t **out)
{
	return spx_ec2_kind_get(st, &kind, account, id, out, NULL);
}

static bool expired(const json_t *rec, time_t now)
{
	return code_of(rec) == SPX_INST_TERMINATED &&
	       now - num(rec, "SpxTerminatedAt") >= SPX_INST_TERMINATED_KEEP;
}

int spx_inst_list(struct spx_state *st, const char *account, time_t now,
		  json_t **out)
{
	json_t *all, *keep, *r;
	size_t i;

	*out = NULL;
	if (spx_ec2_kind_list(st, &kind, account, &all) < 0)
		return -1;
	keep = json_array();
	json_array_foreach(all, i, r)
		if (!expired(r, now))
			json_array_append(keep, r);
	json_decref(all);
	*out = keep;
	return 0;
}

int spx_inst_list_ids(struct spx_state *st, const char *account,
		      const json_t *ids, time_t now, json_t **out)
{
	json_t *seen = json_object(), *keep = json_array(), *v, *r;
	size_t i;

	*out = NULL;
	json_array_foreach(ids, i, v) {
		const char *id = json_string_value(v);

		/* A repeated id was read and checked the first time. */
		if (id && json_object_get(seen, id))
			continue;
		if (spx_inst_get(st, account, id ? id : "", &r) < 0) {
			json_decref(seen);
			json_decref(keep);
			return -1;
		}
		json_object_set_new(seen, id, json_true());
		if (expired(r, now))
			json_decref(r);
		else
			json_array_append_new(keep, r);
	}
	json_decref(seen);
	spx_ec2_sort_by(keep, "InstanceId");
	*out = keep;
	return 0;
}

json_t *spx_inst_item(const json_t *rec)
{
	return spx_ec2_rec_item(rec);
}

/* ---- TerminateInstances --------------------------------------------- */

static json_t *state_obj(const json_t *rec)
{
	return json_deep_copy(json_object_get(rec, "State"));
}

struct term {
	time_t now;
	json_t *prev, *cur; /* out */
};

/* OperationNotPermitted when rec is protected from termination. */
static int protected(const json_t *rec)
{
	if (!json_is_true(json_object_get(rec, "SpxDisableApiTermination")) ||
	    code_of(rec) == SPX_INST_TERMINATED)
		return 0;
	return spx_ec2_fault(400, "OperationNotPermitted",
			     "The instance '%s' may not be terminated. Modify "
			     "its 'disableApiTermination' instance attribute "
			     "and try again.",
			     spx_ec2_str0(rec, "InstanceId"));
}

static int do_terminate(json_t *rec, void *arg)
{
	struct term *t = arg;
	int c = code_of(rec);

	json_decref(t->prev);
	json_decref(t->cur);
	t->prev = state_obj(rec);
	t->cur = NULL;
	if (c == SPX_INST_TERMINATED || c == SPX_INST_SHUTTING_DOWN) {
		t->cur = state_obj(rec);
		return 1;
	}
	/* Again, in the change: protection set since the check holds. */
	if (protected(rec) < 0)
		return -1;
	set_state(rec, SPX_INST_SHUTTING_DOWN);
	set_reason(rec, "Client.UserInitiatedShutdown",
		   "Client.UserInitiatedShutdown: User initiated shutdown");
	set_transition(rec, "User initiated", t->now);
	json_object_set_new(rec, "SpxDesired", json_string("terminated"));
	t->cur = state_obj(rec);
	return 0;
}

int spx_inst_terminate(struct spx_state *st, const char *account,
		       const json_t *ids, time_t now, json_t **out)
{
	json_t *res, *rec, *v;
	size_t i;

	*out = NULL;
	/* Every id first: one that cannot be terminated changes nothing. */
	json_array_foreach(ids, i, v) {
		const char *id = json_string_value(v);
		int rc;

		if (spx_inst_get(st, account, id, &rec) < 0)
			return -1;
		rc = protected(rec);
		json_decref(rec);
		if (rc < 0)
			return -1;
	}
	res = json_array();
	json_array_foreach(ids, i, v) {
		struct term t = { now, NULL, NULL };

		if (spx_inst_terminate_window)
			spx_inst_terminate_window(json_string_value(v));
		if (spx_ec2_kind_change(st, &kind, account, json_string_value(v),
					do_terminate, &t) < 0) {
			json_decref(t.prev);
			json_decref(t.cur);
			json_decref(res);
			return -1;
		}
		json_array_append_new(res,
				      json_pack("{s:O, s:o, s:o}", "InstanceId",
						v, "CurrentState", t.cur,
						"PreviousState", t.prev));
	}
	*out = res;
	return 0;
}

/* The root volume's id, or NULL when it has none (detached while
 * stopped). */
static const char *root_vol(const json_t *rec)
{
	return spx_ec2_str(json_object_get(rec, "SpxRoot"), "VolumeId");
}

/* ---- StopInstances, StartInstances ---------------------------------- */

static int incorrect_state(const json_t *rec, const char *verb)
{
	return spx_ec2_fault(400, "IncorrectInstanceState",
			     "The instance '%s' is not in a state from which "
			     "it can be %s.",
			     spx_ec2_str0(rec, "InstanceId"), verb);
}

struct stopstart {
	bool start, force;
	time_t now;
	json_t *prev, *cur; /* out */
};

/* May rec be stopped (started)? 0 to change it, 1 when it is there
 * already, -1 (IncorrectInstanceState) when it cannot be. */
static int may(const json_t *rec, bool start)
{
	int c = code_of(rec);

	if (start) {
		if (c == SPX_INST_PENDING || c == SPX_INST_RUNNING)
			return 1;
		if (c != SPX_INST_STOPPED)
			return incorrect_state(rec, "started");
		if (!root_vol(rec))
			return spx_ec2_fault(400, "IncorrectInstanceState",
					     "The instance '%s' has no volume "
					     "attached at its root device "
					     "'%s'.",
					     spx_ec2_str0(rec, "InstanceId"),
					     spx_ec2_str0(rec,
							  "RootDeviceName"));
		return 0;
	}
	if (c == SPX_INST_STOPPING || c == SPX_INST_STOPPED)
		return 1;
	return c == SPX_INST_PENDING || c == SPX_INST_RUNNING
		       ? 0
		       : incorrect_state(rec, "stopped");
}

static int do_stopstart(json_t *rec, void *arg)
{
	struct stopstart *x = arg;
	int rc = may(rec, x->start);

	json_decref(x->prev);
	json_decref(x->cur);
	x->prev = state_obj(rec);
	x->cur = NULL;
	if (rc != 0) {
		x->cur = state_obj(rec);
		if (rc == 1 && !x->start && x->force &&
		    code_of(rec) == SPX_INST_STOPPING &&
		    !json_is_true(json_object_get(rec, "SpxForce"))) {
			/* A forced stop of one stopping already: it is. */
			json_object_set_new(rec, "SpxForce", json_true());
			return 0;
		}
		return rc;
	}
	if (x->start) {
		set_state(rec, SPX_INST_PENDING);
		set_reason(rec, "pending", "pending");
		json_object_set_new(rec, "StateTransitionReason",
				    json_string(""));
		json_object_set_new(rec, "SpxDesired", json_string("running"));
	} else {
		set_state(rec, SPX_INST_STOPPING);
		set_reason(rec, "Client.UserInitiatedShutdown",
			   "Client.UserInitiatedShutdown: User initiated "
			   "shutdown");
		set_transition(rec, "User initiated", x->now);
		json_object_set_new(rec, "SpxDesired", json_string("stopped"));
		if (x->force)
			json_object_set_new(rec, "SpxForce", json_true());
	}
	x->cur = state_obj(rec);
	return 0;
}

static int stopstart(struct spx_state *st, const char *account,
		     const json_t *ids, struct stopstart *x, json_t **out)
{
	json_t *res, *rec, *v;
	size_t i;

	*out = NULL;
	/* Every id first: one that cannot change changes nothing. */
	json_array_foreach(ids, i, v) {
		int rc;

		if (spx_inst_get(st, account, json_string_value(v), &rec) < 0)
			return -1;
		rc = may(rec, x->start);
		json_decref(rec);
		if (rc < 0)
			return -1;
	}
	res = json_array();
	json_array_foreach(ids, i, v) {
		x->prev = x->cur = NULL;
		if (spx_ec2_kind_change(st, &kind, account, json_string_value(v),
					do_stopstart, x) < 0) {
			json_decref(x->prev);
			json_decref(x->cur);
			json_decref(res);
			return -1;
		}
		json_array_append_new(res,
				      json_pack("{s:O, s:o, s:o}", "InstanceId",
						v, "CurrentState", x->cur,
						"PreviousState", x->prev));
	}
	*out = res;
	return 0;
}

int spx_inst_stop(struct spx_state *st, const char *account,
		  const json_t *ids, bool force, time_t now, json_t **out)
{
	struct stopstart x = { false, force, now, NULL, NULL };

	return stopstart(st, account, ids, &x, out);
}

int spx_inst_start(struct spx_state *st, const struct spx_inst_env *env,
		   const char *account, const json_t *ids, time_t now,
		   json_t **out)
{
	struct stopstart x = { true, false, now, NULL, NULL };
	int64_t need = 0, n;
	uint64_t taken;
	json_t *rec, *v;
	size_t i;
	int lk, rc;

	*out = NULL;
	if ((lk = lock_node(env->lock)) < 0)
		return -1;
	/* The memory of those that will start, under the node's lock. One
	 * that holds an address on the bridge starts only while the node's
	 * instances are on it: on the user network it would have neither
	 * its address nor its metadata. */
	json_array_foreach(ids, i, v) {
		bool off_bridge;

		if (spx_inst_get(st, account, json_string_value(v), &rec) < 0) {
			close(lk);
			return -1;
		}
		off_bridge = !env->bridge_address &&
			     !strcmp(spx_ec2_str0(rec, "SpxNetwork"), "bridge");
		if (code_of(rec) == SPX_INST_STOPPED && off_bridge) {
			json_decref(rec);
			close(lk);
			return spx_ec2_fault(500, "InsufficientInstanceCapacity",
					     "Instance %s has its address on "
					     "this node's bridge, and the "
					     "node's instances are now on "
					     "QEMU's user network (vm.network): "
					     "it starts again when vm.network "
					     "is 'bridge'.",
					     json_string_value(v));
		}
		if (code_of(rec) == SPX_INST_STOPPED)
			need += num(rec, "SpxMemMiB");
		json_decref(rec);
	}
	rc = !need				    ? 0
	     : held(st, env->node, &taken, NULL) < 0 ? -1
		: fit(env, taken, "instance", need, 1, 1, &n);
	if (rc == 0)
		rc = stopstart(st, account, ids, &x, out);
	close(lk);
	return rc;
}

/* ---- the root volume of a stopped instance ------------------------- */

struct rootvol {
	const char *vol;
	time_t now;
};

static int not_stopped(const json_t *rec, const char *what)
{
	return spx_ec2_fault(400, "IncorrectInstanceState",
			     "The instance '%s' is '%s'; %s only while it is "
			     "'stopped'.",
			     spx_ec2_str0(rec, "InstanceId"),
			     spx_inst_state_name(code_of(rec))
				     ? spx_inst_state_name(code_of(rec))
				     : "",
			     what);
}

static int do_root_detach(json_t *rec, void *arg)
{
	const struct rootvol *r = arg;
	const char *root = spx_ec2_str0(rec, "RootDeviceName");
	json_t *bdm = json_object_get(rec, "BlockDeviceMappings"), *m;
	size_t i;

	if (!root_vol(rec) || strcmp(root_vol(rec), r->vol))
		return 1; /* not (or no longer) its root volume */
	if (code_of(rec) != SPX_INST_STOPPED)
		return spx_ec2_fault(400, "IncorrectState",
				     "Unable to detach root volume '%s' from "
				     "instance '%s': it is '%s'; a root "
				     "volume is detached only while its "
				     "instance is 'stopped'.",
				     r->vol, spx_ec2_str0(rec, "InstanceId"),
				     spx_inst_state_name(code_of(rec))
					     ? spx_inst_state_name(code_of(rec))
					     : "");
	json_object_del(rec, "SpxRoot");
	json_array_foreach(bdm, i, m)
		if (!strcmp(spx_ec2_str0(m, "DeviceName"), root)) {
			json_array_remove(bdm, i);
			break;
		}
	return 0;
}

int spx_inst_root_detach(struct spx_state *st, const char *account,
			 const char *id, const char *vol)
{
	struct rootvol r = { vol, 0 };

	return spx_ec2_kind_change(st, &kind, account, id, do_root_detach,
				   &r);
}

static int do_root_attach(json_t *rec, void *arg)
{
	const struct rootvol *r = arg;
	const char *root = spx_ec2_str0(rec, "RootDeviceName");
	json_t *bdm = json_object_get(rec, "BlockDeviceMappings");

	if (root_vol(rec) && !strcmp(root_vol(rec), r->vol))
		return 1;
	if (code_of(rec) != SPX_INST_STOPPED)
		return not_stopped(rec, "a root volume is attached");
	if (root_vol(rec))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Attachment point %s is already in use",
				     root);
	json_object_set_new(rec, "SpxRoot",
			    json_pack("{s:s, s:b}", "VolumeId", r->vol,
				      "DeleteOnTermination", 0));
	if (!json_is_array(bdm)) {
		bdm = json_array();
		json_object_set_new(rec, "BlockDeviceMappings", bdm);
	}
	json_array_insert_new(
		bdm, 0,
		json_pack("{s:s, s:{s:I, s:b, s:s, s:s}}", "DeviceName", root,
			  "Ebs", "AttachTime", (json_int_t)r->now,
			  "DeleteOnTermination", 0, "Status", "attached",
			  "VolumeId", r->vol));
	return 0;
}

int spx_inst_root_attach(struct spx_state *st, const char *account,
			 const char *id, const char *vol, time_t now)
{
	struct rootvol r = { vol, now };

	return spx_ec2_kind_change(st, &kind, account, id, do_root_attach,
				   &r);
}

/* ---- RebootInstances, ModifyInstanceAttribute ------------------------ */

static int do_reboot(json_t *rec, void *arg)
{
	(void)arg;
	if (code_of(rec) != SPX_INST_RUNNING)
		return 1; /* pending: it is starting anyway */
	json_object_set_new(rec, "SpxReboot",
			    json_integer(num(rec, "SpxReboot") + 1));
	return 0;
}

int spx_inst_reboot(struct spx_state *st, const char *account,
		    const json_t *ids)
{
	json_t *rec, *v;
	size_t i;

	json_array_foreach(ids, i, v) {
		int c;

		if (spx_inst_get(st, account, json_string_value(v), &rec) < 0)
			return -1;
		c = code_of(rec);
		if (c != SPX_INST_RUNNING && c != SPX_INST_PENDING) {
			incorrect_state(rec, "rebooted");
			json_decref(rec);
			return -1;
		}
		json_decref(rec);
	}
	json_array_foreach(ids, i, v)
		if (spx_ec2_kind_change(st, &kind, account, json_string_value(v),
					do_reboot, NULL) < 0)
			return -1;
	return 0;
}

struct modify {
	const char *attr;	/* "disableApiTermination", ... */
	const json_t *value;	/* its value: a JSON boolean or string */
};

static int do_modify(json_t *rec, void *arg)
{
	struct modify *m = arg;
	const struct spx_itype *t;

	if (!strcmp(m->attr, "disableApiTermination")) {
		json_object_set(rec, "SpxDisableApiTermination",
				(json_t *)m->value);
		return 0;
	}
	if (code_of(rec) != SPX_INST_STOPPED)
		return spx_ec2_fault(400, "IncorrectInstanceState",
				     "The instance '%s' is not in the 'stopped' "
				     "state; its %s can be changed only then.",
				     spx_ec2_str0(rec, "InstanceId"), m->attr);
	if (!strcmp(m->attr, "userData")) {
		json_object_set(rec, "SpxUserData", (json_t *)m->value);
		return 0;
	}
	t = spx_itype_find(json_string_value(m->value));
	json_object_set_new(rec, "InstanceType", json_string(t->name));
	json_object_set_new(rec, "SpxMemMiB", json_integer(t->memory_mib));
	json_object_set_new(rec, "SpxCpus", json_integer(t->vcpus));
	json_object_set_new(rec, "CpuOptions",
			    json_pack("{s:i, s:i}", "CoreCount", t->cores,
				      "ThreadsPerCore",
				      t->threads_per_core ? t->threads_per_core
							  : 1));
	return 0;
}

int spx_inst_modify(struct spx_state *st, const char *account,
		    const json_t *req)
{
	static const struct {
		const char *member, *attr;
	} known[] = {
		{ "DisableApiTermination", "disableApiTermination" },
		{ "InstanceType", "instanceType" },
		{ "UserData", "userData" },
	};
	struct modify m = { NULL, NULL };
	const char *attr = spx_ec2_str(req, "Attribute");
	const json_t *val = json_object_get(req, "Value");
	json_t *v = NULL;
	const char *k;
	json_t *x;
	int n = 0, rc;

	/* One attribute a request, as EC2 takes them: Attribute and Value,
	 * or one of the structures. */
	json_object_foreach((json_t *)req, k, x) {
		if (!strcmp(k, "InstanceId") || !strcmp(k, "DryRun") ||
		    !strcmp(k, "Attribute") || !strcmp(k, "Value"))
			continue;
		n++;
		for (size_t i = 0; i < SPX_ARRAY_SIZE(known); i++)
			if (!strcmp(k, known[i].member)) {
				m.attr = known[i].attr;
				val = json_object_get(x, "Value");
			}
		if (!m.attr)
			return unsupported(k);
	}
	if (attr && n)
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "Attribute and Value cannot be combined "
				     "with another attribute.");
	if (n > 1)
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "Only one attribute can be modified at a "
				     "time.");
	if (attr)
		m.attr = attr;
	if (!m.attr)
		return spx_ec2_fault_missing("Attribute");
	if (!val)
		return spx_ec2_fault_missing("Value");
	if (!strcmp(m.attr, "disableApiTermination")) {
		const char *s = json_string_value(val);

		if (json_is_boolean(val))
			v = json_incref((json_t *)val);
		else if (s && (!strcmp(s, "true") || !strcmp(s, "false")))
			v = json_boolean(!strcmp(s, "true"));
		else
			return spx_ec2_fault_invalid("value", s ? s : "", NULL);
	} else if (!strcmp(m.attr, "instanceType")) {
		const char *s = json_string_value(val);

		if (!s || !spx_itype_find(s))
			return spx_ec2_fault(400, "InvalidParameterValue",
					     "Invalid value '%s' for "
					     "InstanceType.",
					     s ? s : "");
		v = json_incref((json_t *)val);
	} else if (!strcmp(m.attr, "userData")) {
		json_t *probe;

		if (!json_is_string(val))
			return spx_ec2_fault_invalid("value", "", NULL);
		probe = json_pack("{s:O}", "UserData", val);
		rc = check_userdata(probe);
		json_decref(probe);
		if (rc < 0)
			return -1;
		v = json_incref((json_t *)val);
	} else {
		return unsupported(m.attr);
	}
	m.value = v;
	rc = spx_ec2_kind_change(st, &kind, account,
				 spx_ec2_str0(req, "InstanceId"), do_modify, &m);
	json_decref(v);
	return rc < 0 ? -1 : 0;
}

/* ---- ModifyInstanceMetadataOptions ---------------------------------- */

struct mdmod {
	const json_t *req;
	json_t *opts; /* out: the MetadataOptions after */
};

static int do_mdopts(json_t *rec, void *arg)
{
	static const char *const members[] = {
		"HttpTokens", "HttpPutResponseHopLimit", "HttpEndpoint",
		"HttpProtocolIpv6", "InstanceMetadataTags",
	};
	struct mdmod *m = arg;
	json_t *mo = json_object_get(rec, "MetadataOptions");
	int c = code_of(rec);

	if (c == SPX_INST_SHUTTING_DOWN || c == SPX_INST_TERMINATED)
		return incorrect_state(rec, "modified");
	if (!json_is_object(mo)) {
		mo = json_object();
		json_object_set_new(rec, "MetadataOptions", mo);
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(members); i++) {
		json_t *v = json_object_get(m->req, members[i]);

		if (v)
			json_object_set(mo, members[i], v);
	}
	/* A running guest gets the change from the agent (applied then);
	 * any other on its next start. */
	json_object_set_new(mo, "State", json_string("pending"));
	json_object_set_new(rec, "SpxMetadataRev",
			    json_integer(num(rec, "SpxMetadataRev") + 1));
	json_decref(m->opts);
	m->opts = json_deep_copy(mo);
	return 0;
}

int spx_inst_modify_mdopts(struct spx_state *st, const char *account,
			   const json_t *req, json_t **out)
{
	const json_t *hop = json_object_get(req, "HttpPutResponseHopLimit");
	const char *tokens = spx_ec2_str(req, "HttpTokens");
	const char *ep = spx_ec2_str(req, "HttpEndpoint");
	const char *v6 = spx_ec2_str(req, "HttpProtocolIpv6");
	const char *tags = spx_ec2_str(req, "InstanceMetadataTags");
	struct mdmod m = { req, NULL };

	*out = NULL;
	if (tokens && strcmp(tokens, "optional") && strcmp(tokens, "required"))
		return spx_ec2_fault_invalid("HttpTokens", tokens, NULL);
	if (ep && strcmp(ep, "enabled") && strcmp(ep, "disabled"))
		return spx_ec2_fault_invalid("HttpEndpoint", ep, NULL);
	if (hop && (json_integer_value(hop) < 1 || json_integer_value(hop) > 64))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "The HttpPutResponseHopLimit (%lld) must "
				     "be between 1 and 64.",
				     (long long)json_integer_value(hop));
	if (v6 && strcmp(v6, "disabled"))
		return unsupported("HttpProtocolIpv6");
	if (tags && strcmp(tags, "disabled"))
		return unsupported("InstanceMetadataTags");
	if (!tokens && !ep && !hop && !v6 && !tags)
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "At least one of HttpTokens, "
				     "HttpPutResponseHopLimit, HttpEndpoint, "
				     "HttpProtocolIpv6 and InstanceMetadataTags "
				     "is required.");
	if (spx_ec2_kind_change(st, &kind, account,
				spx_ec2_str0(req, "InstanceId"), do_mdopts,
				&m) < 0) {
		json_decref(m.opts);
		return -1;
	}
	*out = m.opts;
	return 0;
}

struct tags {
	const json_t *set, *unset;
};

static int do_tags(json_t *rec, void *arg)
{
	struct tags *t = arg;

	return spx_ec2_rec_tags(rec, t->set, t->unset);
}

int spx_inst_set_tags(struct spx_state *st, const char *account,
		      const char *id, const json_t *set, const json_t *unset)
{
	struct tags t = { set, unset };

	return spx_ec2_kind_change(st, &kind, account, id, do_tags, &t);
}

/* ---- metadata ------------------------------------------------------- */

void spx_inst_tap(const char *id, char out[SPX_INST_TAP_SIZE])
{
	snprintf(out, SPX_INST_TAP_SIZE, "%.15s", id);
}

void spx_inst_mac(const char *id, char out[SPX_INST_MAC_SIZE])
{
	unsigned char md[SPX_CKSUM_MAX] = { 0 };
	size_t n;

	if (spx_cksum_digest(SPX_CKSUM_SHA256, id, strlen(id), md, &n) < 0)
		spx_error_clear(); /* cannot be: then all its bytes are 0 */
	snprintf(out, SPX_INST_MAC_SIZE, "02:%02x:%02x:%02x:%02x:%02x", md[0],
		 md[1], md[2], md[3], md[4]);
}

/* meta-data/network/interfaces/macs/MAC/: the interface, as EC2 shows
 * its primary one (subnet and VPC come with VPCs). */
static json_t *network_md(const json_t *rec, const char *mac)
{
	return json_pack("{s:{s:{s:{s:s, s:O, s:O, s:s, s:s}}}}", "interfaces",
			 "macs", mac, "device-number", "0", "local-hostname",
			 json_object_get(rec, "PrivateDnsName"), "local-ipv4s",
			 json_object_get(rec, "PrivateIpAddress"), "mac", mac,
			 "owner-id", spx_ec2_str0(rec, "SpxAccount"));
}

/* The instance identity document, as EC2 serves it at
 * /latest/dynamic/instance-identity/document (cloud-init's Ec2 datasource
 * reads it on AWS, and finds no metadata without it): JSON text. */
static json_t *identity_doc(const json_t *rec, const char *region)
{
	time_t t = (time_t)num(rec, "LaunchTime");
	struct tm tm;
	char when[32] = "";
	json_t *doc;
	char *text;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	doc = json_pack(
		"{s:s, s:s, s:s, s:n, s:n, s:s, s:s, s:s, s:n, s:n, s:s, "
		"s:s, s:n, s:s, s:s}",
		"accountId", spx_ec2_str0(rec, "SpxAccount"), "architecture",
		spx_ec2_str0(rec, "Architecture"), "availabilityZone",
		spx_ec2_str0(json_object_get(rec, "Placement"),
			     "AvailabilityZone"),
		"billingProducts", "devpayProductCodes", "imageId",
		spx_ec2_str0(rec, "ImageId"), "instanceId",
		spx_ec2_str0(rec, "InstanceId"), "instanceType",
		spx_ec2_str0(rec, "InstanceType"), "kernelId",
		"marketplaceProductCodes", "pendingTime", when, "privateIp",
		spx_ec2_str0(rec, "PrivateIpAddress"), "ramdiskId", "region",
		region, "version", "2017-09-30");
	if (!doc)
		return NULL;
	text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (!text)
		return NULL;
	doc = json_pack("{s:{s:s}}", "instance-identity", "document", text);
	free(text);
	return doc;
}

json_t *spx_inst_metadata(const json_t *rec, const char *region)
{
	const json_t *mo = json_object_get(rec, "MetadataOptions");
	const char *root = spx_ec2_str0(rec, "RootDeviceName");
	char idx[24], mac[SPX_INST_MAC_SIZE];
	json_t *md, *meta, *dyn, *net;
	json_int_t hops;

	snprintf(idx, sizeof(idx), "%lld",
		 (long long)num(rec, "AmiLaunchIndex"));
	meta = json_pack(
		"{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:s, s:{s:O, s:s}, "
		"s:{s:s, s:s}, s:s}",
		"instance-id", json_object_get(rec, "InstanceId"), "ami-id",
		json_object_get(rec, "ImageId"), "instance-type",
		json_object_get(rec, "InstanceType"), "hostname",
		json_object_get(rec, "PrivateDnsName"), "local-hostname",
		json_object_get(rec, "PrivateDnsName"), "local-ipv4",
		json_object_get(rec, "PrivateIpAddress"), "reservation-id",
		json_object_get(rec, "SpxReservationId"), "ami-launch-index",
		idx, "placement", "availability-zone",
		json_object_get(json_object_get(rec, "Placement"),
				"AvailabilityZone"),
		"region", region, "block-device-mapping", "ami", root, "root",
		root, "instance-action", "none");
	if (!meta)
		return NULL;
	json_object_set_new(meta, "services",
			    json_pack("{s:s, s:s}", "domain", "amazonaws.com",
				      "partition", "aws"));
	spx_inst_mac(spx_ec2_str0(rec, "InstanceId"), mac);
	net = network_md(rec, mac);
	if (!net) {
		json_decref(meta);
		return NULL;
	}
	json_object_set_new(meta, "mac", json_string(mac));
	json_object_set_new(meta, "network", net);
	md = json_pack("{s:o, s:s, s:s}", "meta-data", meta, "http-tokens",
		       spx_ec2_str(mo, "HttpTokens") ? spx_ec2_str(mo, "HttpTokens")
						     : "optional",
		       "http-endpoint",
		       spx_ec2_str(mo, "HttpEndpoint")
			       ? spx_ec2_str(mo, "HttpEndpoint")
			       : "enabled");
	if (!md)
		return NULL;
	/* The token's IP TTL, for a guest on a tap (imds.h). */
	hops = json_integer_value(json_object_get(mo, "HttpPutResponseHopLimit"));
	if (hops >= 1 && hops <= SPX_IMDS_HOPS_MAX)
		json_object_set_new(md, "http-put-response-hop-limit",
				    json_integer(hops));
	dyn = identity_doc(rec, region);
	if (!dyn) {
		json_decref(md);
		return NULL;
	}
	json_object_set_new(md, "dynamic", dyn);
	if (spx_ec2_str(rec, "SpxPublicKey"))
		json_object_set_new(
			md, "public-keys",
			json_pack("[{s:s, s:O}]", "name",
				  spx_ec2_str0(rec, "KeyName"), "openssh-key",
				  json_object_get(rec, "SpxPublicKey")));
	if (spx_ec2_str(rec, "SpxUserData"))
		json_object_set(md, "user-data",
				json_object_get(rec, "SpxUserData"));
	return md;
}

void spx_inst_metadata_ebs(json_t *md, const json_t *devs)
{
	json_t *bdm = json_object_get(json_object_get(md, "meta-data"),
				      "block-device-mapping");
	const char *k;
	json_t *v;
	void *tmp;
	size_t i;

	if (!json_is_object(bdm))
		return;
	json_object_foreach_safe(bdm, tmp, k, v)
		if (!strncmp(k, "ebs", 3))
			json_object_del(bdm, k);
	json_array_foreach(devs, i, v) {
		char key[24];

		if (!json_is_string(v))
			continue;
		snprintf(key, sizeof(key), "ebs%zu", i + 1);
		json_object_set(bdm, key, v);
	}
}

/* ---- the agent's side ----------------------------------------------- */

static bool root_dot(const json_t *rec)
{
	return json_is_true(json_object_get(json_object_get(rec, "SpxRoot"),
					    "DeleteOnTermination"));
}

int spx_inst_pending(struct spx_state *st, const char *node, time_t now,
		     struct spx_inst_work **out, size_t *n)
{
	json_t *all, *r;
	size_t i, cap = 0;

	*out = NULL;
	*n = 0;
	if (spx_ec2_kind_list(st, &kind, NULL, &all) < 0)
		return -1;
	json_array_foreach(all, i, r) {
		struct spx_inst_work w = { 0 };
		const char *acct = spx_ec2_str0(r, "SpxAccount");
		int c = code_of(r);
		json_t *v = NULL;

		/* Only what fits and is well formed reaches a command line. */
		if (strcmp(spx_ec2_str0(r, "SpxNode"), node) ||
		    !spx_account_id_valid(acct) ||
		    !spx_inst_id_wellformed(spx_ec2_str(r, "InstanceId")) ||
		    (root_vol(r) && !spx_ebs_id_wellformed(root_vol(r))))
			continue;
		snprintf(w.account, sizeof(w.account), "%s", acct);
		snprintf(w.id, sizeof(w.id), "%s", spx_ec2_str0(r, "InstanceId"));
		snprintf(w.vol, sizeof(w.vol), "%s",
			 root_vol(r) ? root_vol(r) : "");
		w.mem_mib = num(r, "SpxMemMiB");
		w.cpus = (int)num(r, "SpxCpus");
		w.port = (int)num(r, "SpxSshPort");
		/* An address that is not one stays off the command line. */
		w.bridge = !strcmp(spx_ec2_str0(r, "SpxNetwork"), "bridge");
		if (w.bridge && c != SPX_INST_TERMINATED &&
		    inet_pton(AF_INET, spx_ec2_str0(r, "PrivateIpAddress"),
			      &(struct in_addr){ 0 }) != 1)
			continue;
		snprintf(w.ip, sizeof(w.ip), "%s",
			 w.bridge ? spx_ec2_str0(r, "PrivateIpAddress") : "");
		w.force = json_is_true(json_object_get(r, "SpxForce"));
		w.uefi = !strcmp(spx_ec2_str0(r, "BootMode"), "uefi");
		w.mdrev = num(r, "SpxMetadataRev");
		switch (c) {
		case SPX_INST_PENDING:
			if (spx_ebs_get(st, w.account, w.vol, &v, NULL) < 0) {
				w.step = SPX_INST_FAIL;
				snprintf(w.why, sizeof(w.why),
					 "the root volume %s is gone", w.vol);
				spx_error_clear();
				break;
			}
			if (!strcmp(spx_ec2_str0(v, "State"), "error")) {
				w.step = SPX_INST_FAIL;
				snprintf(w.why, sizeof(w.why),
					 "the root volume %s could not be made: "
					 "%s",
					 w.vol, spx_ec2_str0(v, "SpxError"));
			} else if (!strcmp(spx_ec2_str0(v, "State"), "in-use") ||
				   !strcmp(spx_ec2_str0(v, "State"),
					   "available")) {
				w.step = SPX_INST_LAUNCH;
			} else {
				json_decref(v);
				continue; /* being made */
			}
			json_decref(v);
			break;
		case SPX_INST_RUNNING:
			w.reboot = num(r, "SpxReboot");
			w.step = w.reboot > num(r, "SpxRebooted")
					 ? SPX_INST_REBOOT
				 : !strcmp(spx_ec2_str0(json_object_get(
						       r, "MetadataOptions"),
						       "State"),
					   "pending")
					 ? SPX_INST_METADATA
					 : SPX_INST_WATCH;
			break;
		case SPX_INST_SHUTTING_DOWN:
			w.step = SPX_INST_SHUTDOWN;
			break;
		case SPX_INST_STOPPING:
			w.step = SPX_INST_STOP;
			break;
		case SPX_INST_TERMINATED:
			if (expired(r, now)) {
				w.step = SPX_INST_EXPIRE;
				break;
			}
			/* A root volume whose deletion fails: said in the
			 * instance's record too, once. */
			if (!root_dot(r) || !*w.vol ||
			    spx_ebs_get(st, w.account, w.vol, &v, NULL) < 0) {
				spx_error_clear();
				continue;
			}
			if (!strcmp(spx_ec2_str0(v, "State"), "deleting") &&
			    *spx_ec2_str0(v, "SpxError"))
				snprintf(w.why, sizeof(w.why),
					 "the root volume %s cannot be deleted: "
					 "%s",
					 w.vol, spx_ec2_str0(v, "SpxError"));
			json_decref(v);
			if (!*w.why || !strcmp(w.why, spx_ec2_str0(r, "SpxError")))
				continue;
			w.step = SPX_INST_REPORT;
			break;
		default:
			continue;
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			*out = spx_realloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = w;
	}
	json_decref(all);
	return 0;
}

static int change(struct spx_state *st, const struct spx_inst_work *w,
		  int (*fn)(json_t *, void *), void *arg)
{
	return spx_ec2_kind_change(st, &kind, w->account, w->id, fn, arg);
}

static int do_port(json_t *rec, void *arg)
{
	if (code_of(rec) != SPX_INST_PENDING)
		return 1;
	json_object_set_new(rec, "SpxSshPort", json_integer(*(int *)arg));
	return 0;
}

int spx_inst_set_port(struct spx_state *st, const struct spx_inst_work *w,
		      int port)
{
	return change(st, w, do_port, &port);
}

static void bdm_status(json_t *rec, const char *status)
{
	json_t *m;
	size_t i;

	json_array_foreach(json_object_get(rec, "BlockDeviceMappings"), i, m)
		json_object_set_new(json_object_get(m, "Ebs"), "Status",
				    json_string(status));
}

static int do_launched(json_t *rec, void *arg)
{
	const struct spx_inst_work *w = arg;

	if (code_of(rec) != SPX_INST_PENDING)
		return 1;
	set_state(rec, SPX_INST_RUNNING);
	set_reason(rec, NULL, NULL);
	json_object_set_new(rec, "StateTransitionReason", json_string(""));
	/* Options changed since the launch read them stay pending: the
	 * agent writes them into the running guest's metadata next. */
	if (num(rec, "SpxMetadataRev") == w->mdrev)
		json_object_set_new(json_object_get(rec, "MetadataOptions"),
				    "State", json_string("applied"));
	bdm_status(rec, "attached");
	json_object_set_new(rec, "SpxError", json_string(""));
	return 0;
}

static int do_vol_attached(json_t *vrec, void *arg)
{
	json_t *a = json_array_get(json_object_get(vrec, "Attachments"), 0);

	if (!a || strcmp(spx_ec2_str0(a, "InstanceId"), arg))
		return 1;
	json_object_set_new(a, "State", json_string("attached"));
	return 0;
}

int spx_inst_launched(struct spx_state *st, const struct spx_inst_work *w,
		      time_t now)
{
	char *key = spx_xprintf("volumes/%s/%s", w->account, w->vol);
	int rc;

	(void)now;
	rc = spx_ec2_rec_change(st, key, do_vol_attached, (void *)w->id);
	free(key);
	if (rc < 0 && rc != SPX_STATE_NOTFOUND)
		return -1;
	return change(st, w, do_launched, (void *)w);
}

static int do_md_applied(json_t *rec, void *arg)
{
	const struct spx_inst_work *w = arg;
	json_t *mo = json_object_get(rec, "MetadataOptions");

	if (code_of(rec) != SPX_INST_RUNNING ||
	    num(rec, "SpxMetadataRev") != w->mdrev || !json_is_object(mo))
		return 1;
	json_object_set_new(mo, "State", json_string("applied"));
	return 0;
}

int spx_inst_metadata_applied(struct spx_state *st,
			      const struct spx_inst_work *w)
{
	return change(st, w, do_md_applied, (void *)w);
}

/* The end of an instance: terminated with reason (NULL: as it is). */
struct end {
	struct spx_state *st;
	const char *account;
	const char *code, *msg, *why;
	int from; /* the state it must be in */
	time_t now;
};

static int do_end(json_t *rec, void *arg)
{
	struct end *e = arg;
	const char *vol = root_vol(rec);
	char *err = NULL;

	if (code_of(rec) != e->from)
		return 1;
	/* The root volume first: its deletion asked for is the record's
	 * business from now on, and a failure to ask is kept here. */
	if (vol && release_volume(e->st, e->account, vol, root_dot(rec)) < 0)
		err = spx_xprintf("cannot %s the root volume %s: %s",
				  root_dot(rec) ? "delete" : "detach", vol,
				  spx_errmsg());
	/* Its data volumes are free again (the agent would find them so,
	 * too: a volume of a terminated instance is detached). */
	else if (spx_ebs_release_data(e->st, e->account,
				      spx_ec2_str0(rec, "InstanceId")) < 0)
		err = spx_xprintf("cannot detach the data volumes: %s",
				  spx_errmsg());
	if (err || e->why)
		json_object_set_new(rec, "SpxError",
				    json_string(err ? err : e->why));
	free(err);
	set_state(rec, SPX_INST_TERMINATED);
	/* Its address is free for another (held): a terminated
	 * instance shows none, nor a private DNS name, as EC2's. */
	json_object_del(rec, "PrivateIpAddress");
	json_object_set_new(rec, "PrivateDnsName", json_string(""));
	if (e->code)
		set_reason(rec, e->code, e->msg);
	bdm_status(rec, "detached");
	json_object_set_new(rec, "SpxTerminatedAt", json_integer(e->now));
	json_object_set_new(rec, "SpxDesired", json_string("terminated"));
	return 0;
}

int spx_inst_launch_failed(struct spx_state *st,
			   const struct spx_inst_work *w, const char *why,
			   time_t now)
{
	struct end e = { st, w->account, "Server.InternalError",
			 "Server.InternalError: Internal error on launch", why,
			 SPX_INST_PENDING, now };

	return change(st, w, do_end, &e);
}

struct died {
	const char *code;
	time_t now;
};

static int do_died(json_t *rec, void *arg)
{
	struct died *d = arg;
	bool clean = !strcmp(d->code, "Client.InstanceInitiatedShutdown");
	char *msg;

	if (code_of(rec) != SPX_INST_RUNNING)
		return 1;
	set_state(rec, SPX_INST_STOPPED);
	msg = spx_xprintf("%s: %s", d->code,
			  clean ? "Instance initiated shutdown"
				: "The guest's QEMU ended without a shutdown");
	set_reason(rec, d->code, msg);
	free(msg);
	set_transition(rec, clean ? "Instance initiated shutdown"
				  : "Server error",
		       d->now);
	json_object_set_new(rec, "SpxDesired", json_string("stopped"));
	json_object_set_new(json_object_get(rec, "MetadataOptions"), "State",
			    json_string("pending"));
	return 0;
}

int spx_inst_died(struct spx_state *st, const struct spx_inst_work *w,
		  const char *code, time_t now)
{
	struct died d = { code, now };

	return change(st, w, do_died, &d);
}

static int do_stopped(json_t *rec, void *arg)
{
	(void)arg;
	if (code_of(rec) != SPX_INST_STOPPING)
		return 1;
	set_state(rec, SPX_INST_STOPPED);
	set_reason(rec, "Client.UserInitiatedShutdown",
		   "Client.UserInitiatedShutdown: User initiated shutdown");
	json_object_del(rec, "SpxForce");
	return 0;
}

int spx_inst_halted(struct spx_state *st, const struct spx_inst_work *w,
		    time_t now)
{
	struct end e = { st, w->account, NULL, NULL, NULL,
			 SPX_INST_SHUTTING_DOWN, now };

	if (w->step == SPX_INST_STOP)
		return change(st, w, do_stopped, NULL);
	return change(st, w, do_end, &e);
}

static int do_rebooted(json_t *rec, void *arg)
{
	const struct spx_inst_work *w = arg;

	if (num(rec, "SpxRebooted") >= w->reboot)
		return 1;
	json_object_set_new(rec, "SpxRebooted", json_integer(w->reboot));
	return 0;
}

int spx_inst_rebooted(struct spx_state *st, const struct spx_inst_work *w)
{
	return change(st, w, do_rebooted, (void *)w);
}

int spx_inst_expire(struct spx_state *st, const struct spx_inst_work *w)
{
	char *key = spx_ec2_kind_key(&kind, w->account, w->id);
	int rc = spx_state_delete(st, key, 0);

	free(key);
	return rc < 0 && rc != SPX_STATE_NOTFOUND ? spx_ec2_state_fail(rc) : 0;
}

static int do_note(json_t *rec, void *arg)
{
	json_object_set_new(rec, "SpxError", json_string(arg));
	return 0;
}

int spx_inst_note(struct spx_state *st, const struct spx_inst_work *w,
		  const char *why)
{
	return change(st, w, do_note, (void *)why);
}
