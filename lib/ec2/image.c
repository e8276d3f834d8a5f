/* image.c: AMIs in the record store (see image.h). */
#include "spx.h"

#include <unistd.h>

#include "ec2/fault.h"
#include "ec2/image.h"
#include "ec2/instance.h"
#include "ec2/rec.h"
#include "ec2/snapshot.h"
#include "ec2/volume.h"
#include "id.h"
#include "state/state.h"
#include "utf8.h"

#define PREFIX "images/"

static const struct spx_ec2_kind kind = {
	"images", "ami", "image", "ImageId",
	"InvalidAMIID.NotFound", "InvalidAMIID.Malformed",
};

bool spx_ec2_image_id_wellformed(const char *id)
{
	return spx_ec2_id_wellformed(id, "ami");
}

bool spx_ec2_image_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n < SPX_EC2_IMAGE_NAME_MIN || n > SPX_EC2_IMAGE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || strchr("()[] ./-'@_", c)))
			return false;
	}
	return true;
}

/* A device name as EC2 takes them for EBS: /dev/sdX, /dev/xvdX (one or
 * two letters), /dev/sda1 style partitions, /dev/vdX, /dev/hdX. */
static bool device_valid(const char *d)
{
	static const char *const pre[] = { "/dev/sd", "/dev/xvd", "/dev/vd",
					   "/dev/hd" };
	size_t letters = 0, digits = 0;
	const char *p = NULL;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(pre) && !p; i++)
		if (!strncmp(d, pre[i], strlen(pre[i])))
			p = d + strlen(pre[i]);
	if (!p)
		return false;
	for (; *p >= 'a' && *p <= 'z'; p++)
		letters++;
	for (; *p >= '0' && *p <= '9'; p++)
		digits++;
	return !*p && letters >= 1 && letters <= 2 && digits <= 2;
}

/* Printable text: no control character but tab and line ends (EC2's
 * answers are XML 1.0, which cannot carry the others). */
static bool text_ok(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 && !strchr("\t\n\r", *s))
			return false;
	return true;
}

/* Name and Description, as RegisterImage and CreateImage take them. */
static int check_name(const json_t *req)
{
	const char *name = spx_ec2_str(req, "Name");
	const char *desc = spx_ec2_str(req, "Description");

	if (!name)
		return spx_ec2_fault_missing("Name");
	if (!spx_ec2_image_name_valid(name))
		return spx_ec2_fault(400, "InvalidAMIName.Malformed",
				     "AMI names must be between 3 and 128 "
				     "characters long, and may contain letters, "
				     "numbers, spaces, '(', ')', '[', ']', '.', "
				     "'/', '-', ''', '@' and '_'");
	if (spx_ec2_desc_check(desc, SPX_EC2_IMAGE_DESC_MAX) < 0)
		return -1;
	if (!text_ok(desc))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "The description holds a control "
				     "character.");
	return 0;
}

/* The request's own rules, before any record is read. */
static int check_request(const json_t *req)
{
	const char *arch = spx_ec2_str(req, "Architecture");
	const char *virt = spx_ec2_str(req, "VirtualizationType");
	const char *root = spx_ec2_str(req, "RootDeviceName");
	static const char *const refused[][2] = {
		{ "ImageLocation", "Images stored in S3 (instance store) are "
				   "not available here; register an image "
				   "from an EBS snapshot." },
		{ "KernelId", "HVM images boot their own kernel; KernelId "
			      "is not available here." },
		{ "RamdiskId", "HVM images boot their own kernel; RamdiskId "
			       "is not available here." },
		{ "BillingProducts", "Billing products are not available "
				     "here." },
		{ "TpmSupport", "Guests have no TPM here." },
		{ "UefiData", "UEFI variable stores are not available "
			      "here." },
	};

	if (check_name(req) < 0)
		return -1;
	for (size_t i = 0; i < SPX_ARRAY_SIZE(refused); i++)
		if (json_object_get(req, refused[i][0]))
			return spx_ec2_fault(400, "InvalidParameterValue", "%s",
					     refused[i][1]);
	if (arch && strcmp(arch, "x86_64"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%s) for parameter architecture is "
				     "invalid. Guests run under QEMU on x86_64 "
				     "hosts here, without emulating another "
				     "architecture; only x86_64 images can be "
				     "registered.",
				     arch);
	if (virt && strcmp(virt, "hvm"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%s) for parameter "
				     "virtualizationType is invalid. Only hvm "
				     "images can be registered.",
				     virt);
	if (root && !device_valid(root))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%s) for parameter rootDeviceName "
				     "is invalid.",
				     root);
	if (!json_array_size(json_object_get(req, "BlockDeviceMappings")))
		return spx_ec2_fault(400, "MissingParameter",
				     "The request must contain the parameter "
				     "BlockDeviceMapping: an image here is "
				     "registered from an EBS snapshot.");
	return 0;
}

static int64_t num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* One Ebs of a mapping, checked against its snapshot (may be NULL: an
 * empty volume), into out (the Ebs the image records). */
static int check_ebs(const char *dev, const json_t *ebs, const json_t *snap,
		     json_t *out)
{
	const char *tname = spx_ec2_str(ebs, "VolumeType");
	const struct spx_ebs_type *t = spx_ebs_type(tname ? tname : "gp2");
	const json_t *size = json_object_get(ebs, "VolumeSize");
	const json_t *iops = json_object_get(ebs, "Iops");
	const json_t *tput = json_object_get(ebs, "Throughput");
	const json_t *dot = json_object_get(ebs, "DeleteOnTermination");
	int64_t gib, need = snap ? num(snap, "VolumeSize") : 0;
	bool enc;

	if (!t)
		return spx_ec2_fault_invalid("volumeType", tname, NULL);
	if (json_object_get(ebs, "OutpostArn"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Volumes on Outposts are not available "
				     "here.");
	if (!snap && !size)
		return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
				     "The block device mapping for %s needs "
				     "a snapshot or a volume size.",
				     dev);
	gib = size ? json_integer_value(size) : need;
	if (gib < need)
		return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
				     "Volume of size %lldGiB is smaller than "
				     "snapshot '%s', expect size >= %lldGiB",
				     (long long)gib, spx_ec2_str0(snap, "SnapshotId"),
				     (long long)need);
	if (gib < t->min_gib || gib > t->max_gib)
		return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
				     "Volume size %lldGiB is out of range for "
				     "%s volumes (%lld to %lld GiB).",
				     (long long)gib, t->name,
				     (long long)t->min_gib, (long long)t->max_gib);
	if ((iops && !t->max_iops) || (tput && !t->max_tput))
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "The parameter %s is not supported for %s "
				     "volumes.",
				     iops && !t->max_iops ? "iops" : "throughput",
				     t->name);
	if (t->max_iops && !iops && !t->def_iops)
		return spx_ec2_fault(400, "MissingParameter",
				     "The request must contain the parameter "
				     "iops for %s volumes.",
				     t->name);
	if (iops && (num(ebs, "Iops") < t->min_iops ||
		     num(ebs, "Iops") > t->max_iops))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Volume iops of %lld is out of range for "
				     "%s volumes (%lld to %lld).",
				     (long long)num(ebs, "Iops"), t->name,
				     (long long)t->min_iops, (long long)t->max_iops);
	if (tput && (num(ebs, "Throughput") < t->min_tput ||
		     num(ebs, "Throughput") > t->max_tput))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Throughput of %lld MiB/s is out of range "
				     "for %s volumes (%lld to %lld).",
				     (long long)num(ebs, "Throughput"), t->name,
				     (long long)t->min_tput, (long long)t->max_tput);
	if (spx_ec2_str(ebs, "KmsKeyId") &&
	    !json_is_true(json_object_get(ebs, "Encrypted")) &&
	    !json_is_true(json_object_get(snap, "Encrypted")))
		return spx_ec2_fault(400, "InvalidParameterDependency",
				     "The parameter KmsKeyId requires the "
				     "parameter Encrypted to be set.");
	/* A volume of an encrypted snapshot is encrypted. */
	enc = json_is_true(json_object_get(ebs, "Encrypted")) ||
	      json_is_true(json_object_get(snap, "Encrypted"));
	json_object_set_new(out, "DeleteOnTermination",
			    json_boolean(dot ? json_is_true(dot) : true));
	if (snap)
		json_object_set(out, "SnapshotId",
				json_object_get(snap, "SnapshotId"));
	json_object_set_new(out, "VolumeSize", json_integer(gib));
	json_object_set_new(out, "VolumeType", json_string(t->name));
	json_object_set_new(out, "Encrypted", json_boolean(enc));
	if (t->max_iops)
		json_object_set_new(out, "Iops",
				    json_integer(iops ? num(ebs, "Iops")
						      : t->def_iops));
	if (t->max_tput)
		json_object_set_new(out, "Throughput",
				    json_integer(tput ? num(ebs, "Throughput")
						      : t->def_tput));
	if (spx_ec2_str(ebs, "KmsKeyId"))
		json_object_set(out, "KmsKeyId", json_object_get(ebs, "KmsKeyId"));
	else if (enc && spx_ec2_str(snap, "KmsKeyId"))
		json_object_set(out, "KmsKeyId", json_object_get(snap, "KmsKeyId"));
	return 0;
}

/* The state an image's snapshots give it: "available", "pending" or
 * "failed" with why. A snapshot is read as its owner's record: once
 * registered, an image keeps its snapshot whoever may use it later. */
static const char *snap_state(const json_t *snap, char *why, size_t size)
{
	const char *s = spx_ec2_str0(snap, "State");
	const char *id = spx_ec2_str0(snap, "SnapshotId");

	if (!snap || json_is_true(json_object_get(snap, "SpxDeleting"))) {
		snprintf(why, size, "The snapshot %s is gone.", id);
		return "failed";
	}
	if (!strcmp(s, "completed"))
		return "available";
	if (!strcmp(s, "pending"))
		return "pending";
	snprintf(why, size, "The snapshot %s failed: %s", id,
		 spx_ec2_str0(snap, "StateMessage"));
	return "failed";
}

/* The state of rec from its snapshots' records now; why set for failed. */
static const char *image_state(struct spx_state *st, const json_t *rec,
			       char *why, size_t size)
{
	const json_t *owners = json_object_get(rec, "SpxSnapOwners");
	const char *sid, *state = "available";
	const json_t *owner;

	json_object_foreach((json_t *)owners, sid, owner) {
		char *key = spx_xprintf("snapshots/%s/%s",
					json_string_value(owner), sid);
		json_t *snap = NULL;
		const char *s;
		int rc = spx_ec2_rec_get(st, key, &snap, NULL);

		free(key);
		if (rc < 0 && rc != SPX_STATE_NOTFOUND) {
			/* Unknown for now: looked at again next time. */
			spx_error_clear();
			json_decref(snap);
			return "pending";
		}
		if (!snap)
			snprintf(why, size, "The snapshot %s is gone.", sid);
		s = snap ? snap_state(snap, why, size) : "failed";
		json_decref(snap);
		if (!strcmp(s, "failed"))
			return s;
		if (!strcmp(s, "pending"))
			state = s;
	}
	return state;
}

static void set_state(json_t *rec, const char *state, const char *why)
{
	json_object_set_new(rec, "State", json_string(state));
	if (!strcmp(state, "failed"))
		json_object_set_new(rec, "StateReason",
				    json_pack("{s:s, s:s}", "Code",
					      "Client.InvalidSnapshot", "Message",
					      why));
	else
		json_object_del(rec, "StateReason");
}

struct refresh {
	const char *state, *why;
};

static int do_refresh(json_t *rec, void *arg)
{
	struct refresh *r = arg;

	if (strcmp(spx_ec2_str0(rec, "State"), "pending"))
		return 1; /* moved on meanwhile */
	set_state(rec, r->state, r->why);
	return 0;
}

/* A pending image looked at again: rec (account's) is changed in place
 * and in the store when its snapshots moved on. */
static void refresh(struct spx_state *st, const char *account, json_t *rec)
{
	char why[512] = "";
	struct refresh r = { NULL, why };
	char *key;

	if (strcmp(spx_ec2_str0(rec, "State"), "pending"))
		return;
	r.state = image_state(st, rec, why, sizeof(why));
	if (!strcmp(r.state, "pending"))
		return;
	key = spx_ec2_kind_key(&kind, account, spx_ec2_str0(rec, "ImageId"));
	if (spx_ec2_rec_change(st, key, do_refresh, &r) < 0) {
		spx_log(SPX_LOG_WARN, "ec2: %s: %s", key, spx_errmsg());
		spx_error_clear();
	}
	free(key);
	set_state(rec, r.state, why);
}

/* kind_get, with EC2's wording of an image not found. */
static int get_rec(struct spx_state *st, const char *account, const char *id,
		   json_t **out, uint64_t *rev)
{
	const char *code;

	if (spx_ec2_kind_get(st, &kind, account, id, out, rev) == 0)
		return 0;
	code = spx_ec2_fault_code(NULL);
	if (code && !strcmp(code, kind.not_found))
		spx_ec2_fault(400, kind.not_found,
			      "The image id '[%s]' does not exist", id);
	return -1;
}

int spx_ec2_image_get(struct spx_state *st, const char *account,
		      const char *id, json_t **out)
{
	if (get_rec(st, account, id, out, NULL) < 0)
		return -1;
	refresh(st, account, *out);
	return 0;
}

int spx_ec2_image_list(struct spx_state *st, const char *account,
		       json_t **out)
{
	json_t *r;
	size_t i;

	if (spx_ec2_kind_list(st, &kind, account, out) < 0)
		return -1;
	json_array_foreach(*out, i, r)
		refresh(st, account ? account : spx_ec2_str0(r, "OwnerId"), r);
	return 0;
}

int spx_ec2_image_by_name(struct spx_state *st, const char *account,
			  const char *name, char *ami, size_t size)
{
	json_t *all, *r;
	size_t i;

	*ami = '\0';
	if (spx_ec2_kind_list(st, &kind, account, &all) < 0)
		return -1;
	json_array_foreach(all, i, r)
		if (!strcmp(spx_ec2_str0(r, "Name"), name)) {
			snprintf(ami, size, "%s", spx_ec2_str0(r, "ImageId"));
			break;
		}
	json_decref(all);
	return 0;
}

int spx_ec2_image_using(struct spx_state *st, const char *account,
			const char *snap, char *ami, size_t size)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	char *prefix = spx_xprintf(PREFIX "%s/", account);
	int rc = spx_state_list(st, prefix, 0, &l);

	free(prefix);
	*ami = '\0';
	if (rc < 0)
		return spx_ec2_state_fail(rc);
	for (size_t k = 0; k < l.n && !*ami; k++) {
		const json_t *m;
		json_t *img;
		size_t i;

		if (spx_ec2_rec_get(st, l.key[k], &img, NULL) < 0) {
			spx_log(SPX_LOG_WARN, "ec2: '%s' is unreadable: %s",
				l.key[k], spx_errmsg());
			continue;
		}
		json_array_foreach(json_object_get(img, "BlockDeviceMappings"),
				   i, m)
			if (!strcmp(spx_ec2_str0(json_object_get(m, "Ebs"),
						 "SnapshotId"),
				    snap)) {
				snprintf(ami, size, "%s",
					 spx_ec2_str0(img, "ImageId"));
				break;
			}
		json_decref(img);
	}
	spx_state_list_release(&l);
	spx_error_clear();
	return 0;
}

/* The mappings of req checked, their snapshots read (account's own or
 * shared with it), into the record's BlockDeviceMappings and
 * SpxSnapOwners. Under the node's lock. */
static int mappings_in(struct spx_state *st, const char *account,
		       const json_t *req, const char *root, json_t *bdms,
		       json_t *owners, json_t *seen)
{
	const json_t *m;
	bool have_root = false;
	size_t i;

	json_array_foreach(json_object_get(req, "BlockDeviceMappings"), i, m) {
		const char *dev = spx_ec2_str(m, "DeviceName");
		const json_t *ebs = json_object_get(m, "Ebs");
		const char *sid = spx_ec2_str(ebs, "SnapshotId");
		json_t *snap = NULL, *e, *out;
		int rc;

		if (!dev)
			return spx_ec2_fault(400, "MissingParameter",
					     "The request must contain the "
					     "parameter "
					     "BlockDeviceMapping.%zu.DeviceName",
					     i + 1);
		if (!device_valid(dev))
			return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
					     "Invalid device name %s", dev);
		if (json_object_get(seen, dev))
			return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
					     "The device %s is mapped twice.",
					     dev);
		json_object_set_new(seen, dev, json_true());
		if (spx_ec2_str(m, "VirtualName"))
			return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
					     "Instance store volumes (%s) are "
					     "not available here.",
					     spx_ec2_str(m, "VirtualName"));
		if (json_object_get(m, "NoDevice")) {
			if (!strcmp(dev, root))
				return spx_ec2_fault(400,
						     "InvalidBlockDeviceMapping",
						     "The root device %s cannot "
						     "be suppressed.",
						     dev);
			json_array_append_new(bdms,
					      json_pack("{s:s, s:s}", "DeviceName",
							dev, "NoDevice", ""));
			continue;
		}
		if (!ebs)
			return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
					     "The block device mapping for %s "
					     "has no Ebs.",
					     dev);
		if (!strcmp(dev, root)) {
			have_root = true;
			if (!sid)
				return spx_ec2_fault(400,
						     "InvalidBlockDeviceMapping",
						     "The root device %s needs "
						     "a snapshot "
						     "(Ebs.SnapshotId).",
						     dev);
		}
		if (sid && spx_ebs_snap_get(st, account, sid, true, &snap) < 0)
			return -1;
		if (snap && !strcmp(spx_ec2_str0(snap, "State"), "error")) {
			spx_ec2_fault(400, "IncorrectState",
				      "Snapshot '%s' is 'error'; an image "
				      "cannot be made of it.",
				      sid);
			json_decref(snap);
			return -1;
		}
		e = json_object();
		rc = check_ebs(dev, ebs, snap, e);
		if (rc == 0 && snap)
			json_object_set(owners, sid, json_object_get(snap, "OwnerId"));
		json_decref(snap);
		if (rc < 0) {
			json_decref(e);
			return -1;
		}
		out = json_pack("{s:s, s:o}", "DeviceName", dev, "Ebs", e);
		json_array_append_new(bdms, out);
	}
	if (!have_root)
		return spx_ec2_fault(400, "InvalidBlockDeviceMapping",
				     "The root device %s has no block device "
				     "mapping with a snapshot.",
				     root);
	return 0;
}

/* The names seen, for "mapped twice" in one look each (a request may
 * carry thousands of mappings: a scan of those before each was
 * quadratic). */
static int mappings(struct spx_state *st, const char *account,
		    const json_t *req, const char *root, json_t *bdms,
		    json_t *owners)
{
	json_t *seen = json_object();
	int rc = mappings_in(st, account, req, root, bdms, owners, seen);

	json_decref(seen);
	return rc;
}

static json_t *new_record(const char *account, const char *id,
			  const json_t *req, const char *root,
			  const json_t *tags, const char *sha256, time_t now)
{
	const char *desc = spx_ec2_str(req, "Description");
	const char *boot = spx_ec2_str(req, "BootMode");
	const json_t *ena = json_object_get(req, "EnaSupport");
	char when[32];
	struct tm tm;
	json_t *rec;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, "
			"s:s, s:b, s:s, s:s, s:s, s:b, s:s, s:s, s:o}",
			"ImageId", id, "ImageLocation", "", "Name",
			spx_ec2_str(req, "Name"), "Architecture", "x86_64",
			"ImageType", "machine", "State", "pending",
			"CreationDate", when, "OwnerId", account,
			"RootDeviceName", root, "RootDeviceType", "ebs",
			"VirtualizationType", "hvm", "EnaSupport",
			ena ? json_is_true(ena) : true, "BootMode",
			boot ? boot : "legacy-bios", "Hypervisor", "xen",
			"PlatformDetails", "Linux/UNIX", "Public", false,
			"UsageOperation", "RunInstances", "SpxSha256",
			sha256 ? sha256 : "", "Tags",
			tags ? json_deep_copy(tags) : json_array());
	{
		char *loc = spx_xprintf("%s/%s", account, spx_ec2_str(req, "Name"));

		json_object_set_new(rec, "ImageLocation", json_string(loc));
		free(loc);
	}
	if (desc)
		json_object_set_new(rec, "Description", json_string(desc));
	if (spx_ec2_str(req, "SriovNetSupport"))
		json_object_set(rec, "SriovNetSupport",
				json_object_get(req, "SriovNetSupport"));
	if (spx_ec2_str(req, "ImdsSupport"))
		json_object_set(rec, "ImdsSupport",
				json_object_get(req, "ImdsSupport"));
	return rec;
}

int spx_ec2_image_register(struct spx_state *st, const char *lock,
			   const char *account, const json_t *req,
			   const json_t *tags, const char *sha256, time_t now,
			   json_t **out)
{
	const char *root = spx_ec2_str(req, "RootDeviceName");
	char id[SPX_ID_SIZE], ami[64], why[512] = "";
	json_t *rec = NULL, *bdms = json_array(), *owners = json_object();
	const char *state;
	char *key;
	int lk, rc;

	*out = NULL;
	if (!root)
		root = SPX_EC2_IMAGE_ROOT_DEFAULT;
	if (!spx_account_id_valid(account)) {
		rc = spx_ec2_fault(500, "InternalError", "bad account");
		goto out;
	}
	if ((rc = check_request(req)) < 0)
		goto out;
	if (spx_id_new(id, sizeof(id), "ami") < 0) {
		rc = spx_ec2_fault(500, "InternalError", "%s", spx_errmsg());
		goto out;
	}
	/* The name, the snapshots and the record under the node's lock: two
	 * registrations of one name cannot both pass, and a DeleteSnapshot
	 * (under the same lock, looking for images that use its snapshot)
	 * comes wholly before, when this one finds no snapshot, or after
	 * the record, which it then sees. */
	if ((lk = spx_ebs_lock(lock)) < 0) {
		rc = -1;
		goto out;
	}
	rc = spx_ec2_image_by_name(st, account, spx_ec2_str(req, "Name"), ami,
				   sizeof(ami));
	if (rc == 0 && *ami)
		rc = spx_ec2_fault(400, "InvalidAMIName.Duplicate",
				   "AMI name %s is already in use by AMI %s",
				   spx_ec2_str(req, "Name"), ami);
	if (rc == 0)
		rc = mappings(st, account, req, root, bdms, owners);
	if (rc == 0) {
		rec = new_record(account, id, req, root, tags, sha256, now);
		json_object_set(rec, "BlockDeviceMappings", bdms);
		json_object_set(rec, "SpxSnapOwners", owners);
		state = image_state(st, rec, why, sizeof(why));
		if (!strcmp(state, "failed")) {
			rc = spx_ec2_fault(400, "IncorrectState", "%s", why);
		} else {
			set_state(rec, state, why);
			key = spx_ec2_kind_key(&kind, account, id);
			rc = spx_ec2_rec_put(st, key, rec, true, 0);
			free(key);
			if (rc < 0)
				rc = spx_ec2_state_fail(rc);
		}
	}
	close(lk);
out:
	json_decref(bdms);
	json_decref(owners);
	if (rc < 0) {
		json_decref(rec);
		return -1;
	}
	*out = rec;
	return 0;
}

int spx_ec2_image_deregister(struct spx_state *st, const char *account,
			     const char *id)
{
	uint64_t rev;
	json_t *rec;
	char *key;
	int rc;

	/* Against the revision read: a tag changed meanwhile makes it read
	 * again, never deletes a record it did not see. */
	for (int tries = 0; tries < 16; tries++) {
		if (get_rec(st, account, id, &rec, &rev) < 0)
			return -1;
		json_decref(rec);
		key = spx_ec2_kind_key(&kind, account, id);
		rc = spx_state_delete(st, key, rev);
		free(key);
		if (rc == SPX_STATE_NOTFOUND)
			continue; /* and read as not found */
		if (rc != SPX_STATE_CONFLICT)
			return rc < 0 ? spx_ec2_state_fail(rc) : 0;
	}
	return spx_ec2_state_fail(SPX_STATE_CONFLICT);
}

struct tags {
	const json_t *set, *unset;
};

static int do_tags(json_t *rec, void *arg)
{
	struct tags *t = arg;

	return spx_ec2_rec_tags(rec, t->set, t->unset);
}

int spx_ec2_image_set_tags(struct spx_state *st, const char *account,
			   const char *id, const json_t *set,
			   const json_t *unset)
{
	struct tags t = { set, unset };

	return spx_ec2_kind_change(st, &kind, account, id, do_tags, &t);
}

json_t *spx_ec2_image_item(const json_t *rec)
{
	return spx_ec2_rec_item(rec);
}

int spx_ec2_image_create(struct spx_state *st, const char *lock,
			 const char *account, const json_t *req,
			 const json_t *inst, const json_t *img_tags,
			 const json_t *snap_tags, time_t now, json_t **out)
{
	const char *id = spx_ec2_str0(inst, "InstanceId");
	const char *name = spx_ec2_str(req, "Name");
	const char *vid = spx_ec2_str(json_object_get(inst, "SpxRoot"),
				      "VolumeId");
	const char *root = spx_ec2_str(inst, "RootDeviceName");
	int code = (int)json_integer_value(
		json_object_get(json_object_get(inst, "State"), "Code"));
	json_t *vol = NULL, *sreq = NULL, *snap = NULL, *ireq = NULL;
	char ami[64], *desc = NULL, *code_s = NULL, *msg = NULL;
	int rc = -1, http = 400;

	*out = NULL;
	if (json_array_size(json_object_get(req, "BlockDeviceMappings")))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "CreateImage makes an image of the root "
				     "volume only here; BlockDeviceMappings "
				     "are not available.");
	if (check_name(req) < 0)
		return -1;
	if (code != SPX_INST_RUNNING && code != SPX_INST_STOPPED)
		return spx_ec2_fault(400, "IncorrectInstanceState",
				     "The instance '%s' is not in a state from "
				     "which it can be imaged ('%s'); it must "
				     "be 'running' or 'stopped'.",
				     id, spx_inst_state_name(code)
					     ? spx_inst_state_name(code)
					     : "");
	if (!vid || !root)
		return spx_ec2_fault(400, "IncorrectInstanceState",
				     "The instance '%s' has no root volume.",
				     id);
	/* The name first, so that a taken one costs no snapshot (the
	 * registration looks again under the lock). */
	if (spx_ec2_image_by_name(st, account, name, ami, sizeof(ami)) < 0)
		return -1;
	if (*ami)
		return spx_ec2_fault(400, "InvalidAMIName.Duplicate",
				     "AMI name %s is already in use by AMI %s",
				     name, ami);
	if (spx_ebs_get(st, account, vid, &vol, NULL) < 0)
		return -1;
	desc = spx_xprintf("Created by CreateImage(%s) from %s", id, vid);
	sreq = json_pack("{s:s, s:s}", "VolumeId", vid, "Description", desc);
	if (spx_ebs_snap_create(st, account, sreq, snap_tags, now, &snap) < 0)
		goto out;
	ireq = json_pack("{s:s, s:s, s:s, s:[{s:s, s:{s:O, s:O, s:O, s:b}}]}",
			 "Name", name, "Architecture", "x86_64",
			 "RootDeviceName", root, "BlockDeviceMappings",
			 "DeviceName", root, "Ebs", "SnapshotId",
			 json_object_get(snap, "SnapshotId"), "VolumeSize",
			 json_object_get(vol, "Size"), "VolumeType",
			 json_object_get(vol, "VolumeType"),
			 "DeleteOnTermination", 1);
	if (spx_ec2_str(req, "Description"))
		json_object_set(ireq, "Description",
				json_object_get(req, "Description"));
	if (spx_ec2_str(inst, "BootMode"))
		json_object_set(ireq, "BootMode",
				json_object_get(inst, "BootMode"));
	if (spx_ec2_image_register(st, lock, account, ireq, img_tags, NULL, now,
				   out) == 0) {
		rc = 0;
		goto out;
	}
	/* Not registered (a name taken meanwhile): its snapshot goes, and
	 * the registration's fault is the answer. */
	code_s = spx_strdup(spx_ec2_fault_code(&http) ? spx_ec2_fault_code(&http)
						      : "InternalError");
	msg = spx_strdup(spx_errmsg());
	if (spx_ebs_snap_delete(st, lock, account,
				spx_ec2_str0(snap, "SnapshotId")) < 0)
		spx_log(SPX_LOG_WARN, "CreateImage: snapshot %s stays: %s",
			spx_ec2_str0(snap, "SnapshotId"), spx_errmsg());
	spx_ec2_fault(http, code_s, "%s", msg);
out:
	free(code_s);
	free(msg);
	free(desc);
	json_decref(vol);
	json_decref(sreq);
	json_decref(snap);
	json_decref(ireq);
	return rc;
}
