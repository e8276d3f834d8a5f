/* volume.c: EBS volumes in the record store (see volume.h). */
#include "spx.h"

#include <sys/file.h>
#include <sys/statvfs.h>

#include "ec2/fault.h"
#include "ec2/instance.h"
#include "ec2/rec.h"
#include "ec2/snapshot.h"
#include "ec2/tags.h"
#include "ec2/volume.h"
#include "id.h"
#include "state/state.h"

#define GIB ((uint64_t)1 << 30)

/* The volume types and their limits ("Amazon EBS volume types"). */
static const struct spx_ebs_type types[] = {
	/* name       size GiB      Iops            ratio def  MiB/s       def  multi */
	{ "standard", 1, 1024,      0, 0,           0, 0,      0, 0, 0,       false },
	{ "gp2",      1, 16384,     0, 0,           0, 0,      0, 0, 0,       false },
	{ "gp3",      1, 16384,     3000, 16000,    500, 3000, 125, 1000, 125, false },
	{ "io1",      4, 16384,     100, 64000,     50, 0,     0, 0, 0,       true },
	{ "io2",      4, 65536,     100, 256000,    1000, 0,   0, 0, 0,       true },
	{ "st1",      125, 16384,   0, 0,           0, 0,      0, 0, 0,       false },
	{ "sc1",      125, 16384,   0, 0,           0, 0,      0, 0, 0,       false },
};

const struct spx_ebs_type *spx_ebs_type(const char *name)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(types); i++)
		if (!strcmp(types[i].name, name))
			return &types[i];
	return NULL;
}

static const struct spx_ec2_kind kind = {
	"volumes", "vol", "volume", "VolumeId",
	"InvalidVolume.NotFound", "InvalidVolumeID.Malformed",
};

static char *rec_key(const char *account, const char *id)
{
	return spx_ec2_kind_key(&kind, account, id);
}

bool spx_ebs_id_wellformed(const char *id)
{
	return spx_ec2_id_wellformed(id, "vol");
}

static int64_t num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static int combination(const char *param, const char *type)
{
	return spx_ec2_fault(400, "InvalidParameterCombination",
			     "The parameter %s is not supported for %s volumes.",
			     param, type);
}

static int too(const char *what, int64_t v, bool high, int64_t limit,
	       const char *unit)
{
	return spx_ec2_fault(400, "InvalidParameterValue",
			     "%s of %lld%s is too %s; %s is %lld%s.", what,
			     (long long)v, unit, high ? "large" : "small",
			     high ? "maximum" : "minimum", (long long)limit,
			     unit);
}

/* The Iops EBS shows for a gp2 volume: 3 per GiB, 100 to 16000. */
static int64_t gp2_iops(int64_t gib)
{
	int64_t v = 3 * gib;

	return v < 100 ? 100 : v > 16000 ? 16000 : v;
}

/* Check Size, Iops and Throughput for type t; the values to record in
 * *iops and *tput (0: none). Shared by create and modify. */
static int check_perf(const struct spx_ebs_type *t, int64_t gib,
		      const json_t *jiops, const json_t *jtput, int64_t *iops,
		      int64_t *tput)
{
	if (gib < t->min_gib)
		return too("Volume size", gib, false, t->min_gib, "GiB");
	if (gib > t->max_gib)
		return too("Volume size", gib, true, t->max_gib, "GiB");
	*iops = 0;
	*tput = 0;
	if (jiops && !t->max_iops)
		return combination("iops", t->name);
	if (jtput && !t->max_tput)
		return combination("throughput", t->name);
	if (t->max_iops) {
		if (!jiops && !t->def_iops)
			return spx_ec2_fault(400, "MissingParameter",
					     "The request must contain the "
					     "parameter iops for %s volumes.",
					     t->name);
		*iops = jiops ? json_integer_value(jiops) : t->def_iops;
		if (*iops < t->min_iops)
			return too("Volume iops", *iops, false, t->min_iops, "");
		if (*iops > t->max_iops)
			return too("Volume iops", *iops, true, t->max_iops, "");
		/* gp3's baseline 3000 needs no size: the ratio binds above
		 * it (and from the first IOPS for io1 and io2). */
		if (*iops > t->def_iops && *iops > t->iops_per_gib * gib)
			return spx_ec2_fault(400, "InvalidParameterValue",
					     "Iops to volume size ratio of "
					     "%.6f is too high; maximum is "
					     "%.6f.",
					     (double)*iops / (double)gib,
					     (double)t->iops_per_gib);
	} else if (!strcmp(t->name, "gp2")) {
		*iops = gp2_iops(gib);
	}
	if (t->max_tput) {
		*tput = jtput ? json_integer_value(jtput) : t->def_tput;
		if (*tput < t->min_tput)
			return too("Throughput", *tput, false, t->min_tput,
				   "MiB/s");
		if (*tput > t->max_tput)
			return too("Throughput", *tput, true, t->max_tput,
				   "MiB/s");
		/* gp3: at most 0.25 MiB/s per provisioned IOPS. */
		if (*tput * 4 > *iops)
			return spx_ec2_fault(400, "InvalidParameterValue",
					     "Throughput (MiBps) to iops ratio "
					     "of %.6f is too high; maximum is "
					     "0.250000 MiBps per iops.",
					     (double)*tput / (double)*iops);
	}
	return 0;
}

static bool zone_ok(const json_t *zones, const char *az)
{
	size_t i;
	json_t *z;

	json_array_foreach(zones, i, z)
		if (json_is_string(z) && !strcmp(json_string_value(z), az))
			return true;
	return false;
}

/* GiB provisioned on node by every account's volumes (deleting ones no
 * longer count); a volume being grown counts at its target size, which
 * it was given room for before the agent has made it that size. */
static int provisioned(struct spx_state *st, const char *node,
		       uint64_t *gib_out)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	int rc = spx_state_list(st, "volumes/", 0, &l);

	*gib_out = 0;
	if (rc < 0)
		return spx_ec2_state_fail(rc);
	for (size_t i = 0; i < l.n; i++) {
		json_t *r;
		const char *n, *s, *ms;
		int64_t gib;

		if (spx_ec2_rec_get(st, l.key[i], &r, NULL) < 0) {
			/* Counted as nothing, but said. */
			spx_log(SPX_LOG_WARN, "ebs: %s", spx_errmsg());
			continue;
		}
		n = spx_ec2_str(r, "SpxNode");
		s = spx_ec2_str(r, "State");
		ms = spx_ec2_str(json_object_get(r, "SpxModification"),
				 "ModificationState");
		gib = num(r, "Size");
		if (ms && !strcmp(ms, "modifying") &&
		    num(json_object_get(r, "SpxModification"), "TargetSize") > gib)
			gib = num(json_object_get(r, "SpxModification"),
				  "TargetSize");
		if (n && !strcmp(n, node) && s && strcmp(s, "deleting") && gib > 0)
			*gib_out += (uint64_t)gib;
		json_decref(r);
	}
	spx_state_list_release(&l);
	spx_error_clear();
	return 0;
}

int spx_ebs_lock(const char *path)
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

/* Under the node's lock: is there room on node for gib more? what says
 * what for, in the refusal ("a 4 GiB volume"). */
static int capacity_check(struct spx_state *st,
			  const struct spx_ebs_env *env, const char *node,
			  int64_t gib, const char *what)
{
	struct statvfs sv;
	uint64_t have, cap;

	if (statvfs(env->store, &sv) < 0)
		return spx_ec2_fault(500, "InternalError",
				     "An internal error has occurred "
				     "(cannot measure the volume store: %s)",
				     strerror(errno));
	if (provisioned(st, node, &have) < 0)
		return -1;
	cap = (uint64_t)sv.f_blocks * sv.f_frsize / 100 *
	      (uint64_t)env->overcommit / GIB;
	if (have + (uint64_t)gib > cap)
		return spx_ec2_fault(500, "InsufficientVolumeCapacity",
				     "There is not enough capacity for %s: "
				     "%llu GiB of %llu GiB are provisioned on "
				     "this node (overcommit %lld%%).",
				     what, (unsigned long long)have,
				     (unsigned long long)cap,
				     (long long)env->overcommit);
	return 0;
}

/* The size of a volume from snapshot snap (a record account may use,
 * completed): the snapshot's unless size asks for more. */
static int from_snapshot(const json_t *snap, const json_t *size, int64_t *gib)
{
	const char *id = spx_ec2_str0(snap, "SnapshotId");
	int64_t need = num(snap, "VolumeSize");

	if (strcmp(spx_ec2_str0(snap, "State"), "completed"))
		return spx_ec2_fault(400, "IncorrectState",
				     "Snapshot '%s' is '%s'; a volume can be "
				     "made from it once it is 'completed'.",
				     id, spx_ec2_str0(snap, "State"));
	*gib = size ? json_integer_value(size) : need;
	if (*gib < need)
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Volume of %lldGiB is smaller than "
				     "snapshot '%s', expect size >= %lldGiB",
				     (long long)*gib, id, (long long)need);
	return 0;
}

static int validate_create(const struct spx_ebs_env *env, const json_t *req,
			   const json_t *snap, const struct spx_ebs_type **t,
			   int64_t *gib, int64_t *iops, int64_t *tput)
{
	const char *type = spx_ec2_str(req, "VolumeType");
	const char *az = spx_ec2_str(req, "AvailabilityZone");
	const json_t *size = json_object_get(req, "Size");

	*t = spx_ebs_type(type ? type : "gp2");
	if (!*t)
		return spx_ec2_fault_invalid("volumeType", type, NULL);
	if (!az || !zone_ok(env->zones, az))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Invalid availability zone: [%s]",
				     az ? az : "");
	if (json_object_get(req, "OutpostArn"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Volumes on Outposts are not available "
				     "here.");
	if (spx_ec2_str(req, "KmsKeyId") &&
	    !json_is_true(json_object_get(req, "Encrypted")))
		return spx_ec2_fault(400, "InvalidParameterDependency",
				     "The parameter KmsKeyId requires the "
				     "parameter Encrypted to be set.");
	if (json_is_true(json_object_get(req, "MultiAttachEnabled")) &&
	    !(*t)->multi_attach)
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "Multi-Attach is supported only for io1 "
				     "and io2 volumes.");
	if (snap) {
		if (from_snapshot(snap, size, gib) < 0)
			return -1;
	} else if (!size) {
		return spx_ec2_fault(400, "MissingParameter",
				     "The request must contain the parameter "
				     "size or snapshotId");
	} else {
		*gib = json_integer_value(size);
	}
	return check_perf(*t, *gib, json_object_get(req, "Iops"),
			  json_object_get(req, "Throughput"), iops, tput);
}

/* The record of a new volume of req (of snapshot snap, may be NULL):
 * NULL with a fault when req breaks a rule; *gib its size. */
static json_t *new_record(const struct spx_ebs_env *env, const json_t *req,
			  const json_t *snap, const json_t *tags, time_t now,
			  int64_t *gib)
{
	const char *sid = spx_ec2_str(req, "SnapshotId");
	const struct spx_ebs_type *t;
	int64_t iops = 0, tput = 0;
	char id[SPX_ID_SIZE];
	json_t *rec;
	bool enc;

	if (validate_create(env, req, snap, &t, gib, &iops, &tput) < 0 ||
	    spx_id_new(id, sizeof(id), "vol") < 0) {
		if (!spx_ec2_fault_code(NULL))
			spx_ec2_fault(500, "InternalError", "%s", spx_errmsg());
		return NULL;
	}
	/* A volume of an encrypted snapshot is encrypted. */
	enc = json_is_true(json_object_get(req, "Encrypted")) ||
	      json_is_true(json_object_get(snap, "Encrypted"));
	rec = json_pack("{s:s, s:I, s:s, s:s, s:b, s:s, s:b, s:s, s:I, s:[], "
			"s:o, s:s, s:s}",
			"VolumeId", id, "Size", (json_int_t)*gib, "VolumeType",
			t->name, "AvailabilityZone",
			spx_ec2_str(req, "AvailabilityZone"), "Encrypted", enc,
			"SnapshotId", sid ? sid : "",
			"MultiAttachEnabled",
			json_is_true(json_object_get(req, "MultiAttachEnabled")),
			"State", "creating", "CreateTime", (json_int_t)now,
			"Attachments", "Tags",
			tags ? json_deep_copy(tags) : json_array(), "SpxNode",
			env->node, "SpxError", "");
	if (iops)
		json_object_set_new(rec, "Iops", json_integer(iops));
	if (tput)
		json_object_set_new(rec, "Throughput", json_integer(tput));
	if (spx_ec2_str(req, "KmsKeyId"))
		json_object_set_new(rec, "KmsKeyId",
				    json_string(spx_ec2_str(req, "KmsKeyId")));
	return rec;
}

int spx_ebs_create(struct spx_state *st, const struct spx_ebs_env *env,
		   const char *account, const json_t *req, const json_t *tags,
		   time_t now, json_t **out)
{
	const char *sid = spx_ec2_str(req, "SnapshotId");
	json_t *rec = NULL, *snap = NULL;
	int64_t gib = 0;
	char *key;
	int lk, rc;

	*out = NULL;
	if (!spx_account_id_valid(account))
		return spx_ec2_fault(500, "InternalError", "bad account");
	/* The snapshot, the checks and the record under the node's lock:
	 * two creates cannot both take the last free space, and a
	 * DeleteSnapshot (under the same lock) comes wholly before this
	 * create, which then finds no snapshot, or after its record, which
	 * the agent then restores before it deletes the snapshot. */
	if ((lk = spx_ebs_lock(env->lock)) < 0)
		return -1;
	rc = sid ? spx_ebs_snap_get(st, account, sid, true, &snap) : 0;
	if (rc == 0 && !(rec = new_record(env, req, snap, tags, now, &gib)))
		rc = -1;
	json_decref(snap);
	if (rc == 0) {
		char *what = spx_xprintf("a %lld GiB volume", (long long)gib);

		rc = capacity_check(st, env, env->node, gib, what);
		free(what);
	}
	if (rc == 0) {
		key = rec_key(account, spx_ec2_str(rec, "VolumeId"));
		rc = spx_ec2_rec_put(st, key, rec, true, 0);
		free(key);
		if (rc < 0)
			rc = spx_ec2_state_fail(rc);
	}
	close(lk);
	if (rc < 0) {
		json_decref(rec);
		return -1;
	}
	*out = rec;
	return 0;
}

int spx_ebs_get(struct spx_state *st, const char *account, const char *id,
		json_t **out, uint64_t *rev)
{
	return spx_ec2_kind_get(st, &kind, account, id, out, rev);
}

int spx_ebs_list(struct spx_state *st, const char *account, json_t **out)
{
	return spx_ec2_kind_list(st, &kind, account, out);
}

/* ---- transitions -------------------------------------------------- */

static int change(struct spx_state *st, const char *account, const char *id,
		  int (*fn)(json_t *, void *), void *arg)
{
	return spx_ec2_kind_change(st, &kind, account, id, fn, arg);
}

static int to_deleting(json_t *rec, void *arg)
{
	const char *s = spx_ec2_str(rec, "State");

	(void)arg;
	if (s && !strcmp(s, "deleting"))
		return 1;
	if (s && !strcmp(s, "in-use"))
		return spx_ec2_fault(400, "VolumeInUse",
				     "Volume %s is currently attached to %s",
				     spx_ec2_str0(rec, "VolumeId"),
				     spx_ec2_str0(json_array_get(json_object_get(
								 rec, "Attachments"),
							 0),
					  "InstanceId"));
	if (!s || (strcmp(s, "available") && strcmp(s, "error")))
		return spx_ec2_fault(400, "IncorrectState",
				     "The volume '%s' is '%s'; it can be "
				     "deleted once it is 'available'.",
				     spx_ec2_str(rec, "VolumeId"), s ? s : "");
	json_object_set_new(rec, "State", json_string("deleting"));
	return 0;
}

int spx_ebs_delete(struct spx_state *st, const char *account, const char *id)
{
	return change(st, account, id, to_deleting, NULL);
}

struct modify {
	struct spx_state *st;
	const struct spx_ebs_env *env;
	const json_t *req;
	time_t now;
	json_t *mod; /* out */
};

static int do_modify(json_t *rec, void *arg)
{
	struct modify *m = arg;
	const json_t *req = m->req;
	const json_t *prev = json_object_get(rec, "SpxModification");
	const char *ps = spx_ec2_str(prev, "ModificationState");
	const char *s = spx_ec2_str(rec, "State");
	const char *tname = spx_ec2_str(req, "VolumeType");
	const struct spx_ebs_type *t;
	int64_t gib = num(rec, "Size"), iops, tput;
	const json_t *jiops = json_object_get(req, "Iops");
	const json_t *jtput = json_object_get(req, "Throughput");
	bool same_type;
	json_t *mod;

	if (ps && (!strcmp(ps, "modifying") || !strcmp(ps, "optimizing")))
		return spx_ec2_fault(400, "IncorrectModificationState",
				     "Volume %s is already being modified.",
				     spx_ec2_str(rec, "VolumeId"));
	if (!s || (strcmp(s, "available") && strcmp(s, "in-use")))
		return spx_ec2_fault(400, "IncorrectState",
				     "The volume '%s' is '%s'; only an "
				     "'available' or 'in-use' volume can be "
				     "modified.",
				     spx_ec2_str(rec, "VolumeId"), s ? s : "");
	if (json_object_get(req, "Size")) {
		gib = json_integer_value(json_object_get(req, "Size"));
		if (gib < num(rec, "Size"))
			return spx_ec2_fault(400, "InvalidParameterValue",
					     "New size cannot be smaller than "
					     "existing size");
	}
	if (!tname)
		tname = spx_ec2_str(rec, "VolumeType");
	t = spx_ebs_type(tname);
	if (!t)
		return spx_ec2_fault_invalid("VolumeType", tname, NULL);
	same_type = !strcmp(t->name, spx_ec2_str(rec, "VolumeType"));
	/* Unchanged Iops and Throughput carry over within a type. */
	if (!jiops && same_type && t->max_iops)
		jiops = json_object_get(rec, "Iops");
	if (!jtput && same_type && t->max_tput)
		jtput = json_object_get(rec, "Throughput");
	if (check_perf(t, gib, jiops, jtput, &iops, &tput) < 0)
		return -1;
	if (json_object_get(req, "MultiAttachEnabled") &&
	    json_is_true(json_object_get(req, "MultiAttachEnabled")) &&
	    !t->multi_attach)
		return spx_ec2_fault(400, "InvalidParameterCombination",
				     "Multi-Attach is supported only for io1 "
				     "and io2 volumes.");
	if (gib == num(rec, "Size") && same_type &&
	    iops == num(rec, "Iops") && tput == num(rec, "Throughput") &&
	    !json_object_get(req, "MultiAttachEnabled"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "New volume configuration is the same as "
				     "the existing one.");
	/* A grow takes space as a create does: CreateVolume's rule and
	 * refusal, under the node's lock that spx_ebs_modify holds. The
	 * volume is not being modified (refused above), so its node counts
	 * it at its size now, and the growth is the rest. */
	if (gib > num(rec, "Size")) {
		char *what = spx_xprintf("volume %s to grow by %lld GiB",
					 spx_ec2_str0(rec, "VolumeId"),
					 (long long)(gib - num(rec, "Size")));
		int rc = capacity_check(m->st, m->env, spx_ec2_str0(rec, "SpxNode"),
					gib - num(rec, "Size"), what);

		free(what);
		if (rc < 0)
			return -1;
	}
	mod = json_pack("{s:O, s:s, s:I, s:s, s:b, s:I, s:s, s:b, s:I, s:I}",
			"VolumeId", json_object_get(rec, "VolumeId"),
			"ModificationState", "modifying", "TargetSize",
			(json_int_t)gib, "TargetVolumeType", t->name,
			"TargetMultiAttachEnabled",
			json_object_get(req, "MultiAttachEnabled")
				? json_is_true(json_object_get(
					  req, "MultiAttachEnabled"))
				: json_is_true(json_object_get(
					  rec, "MultiAttachEnabled")),
			"OriginalSize", (json_int_t)num(rec, "Size"),
			"OriginalVolumeType", spx_ec2_str(rec, "VolumeType"),
			"OriginalMultiAttachEnabled",
			json_is_true(json_object_get(rec, "MultiAttachEnabled")),
			"Progress", (json_int_t)0, "StartTime",
			(json_int_t)m->now);
	if (iops)
		json_object_set_new(mod, "TargetIops", json_integer(iops));
	if (tput)
		json_object_set_new(mod, "TargetThroughput", json_integer(tput));
	if (json_object_get(rec, "Iops"))
		json_object_set(mod, "OriginalIops", json_object_get(rec, "Iops"));
	if (json_object_get(rec, "Throughput"))
		json_object_set(mod, "OriginalThroughput",
				json_object_get(rec, "Throughput"));
	json_object_set(rec, "SpxModification", mod);
	json_decref(m->mod);
	m->mod = mod;
	return 0;
}

int spx_ebs_modify(struct spx_state *st, const struct spx_ebs_env *env,
		   const char *account, const json_t *req, time_t now,
		   json_t **out)
{
	struct modify m = { st, env, req, now, NULL };
	const char *id = spx_ec2_str(req, "VolumeId");
	int lk, rc;

	*out = NULL;
	/* Under the node's lock, as spx_ebs_create: a grow and a create, or
	 * two grows, cannot both take the last free space. */
	if ((lk = spx_ebs_lock(env->lock)) < 0)
		return -1;
	rc = change(st, account, id ? id : "", do_modify, &m);
	close(lk);
	if (rc < 0) {
		json_decref(m.mod);
		return -1;
	}
	*out = m.mod;
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

int spx_ebs_set_tags(struct spx_state *st, const char *account,
		     const char *id, const json_t *set, const json_t *unset)
{
	struct tags t = { set, unset };

	return change(st, account, id, do_tags, &t);
}

json_t *spx_ebs_item(const json_t *rec)
{
	return spx_ec2_rec_item(rec);
}

uint64_t spx_ebs_bytes(const json_t *rec)
{
	return (uint64_t)num(rec, "Size") * GIB;
}

/* ---- attachments ---------------------------------------------------- */

bool spx_ebs_device_valid(const char *dev)
{
	static const char *const pre[] = { "/dev/sd", "/dev/xvd", "/dev/vd" };

	if (!dev)
		return false;
	for (size_t i = 0; i < SPX_ARRAY_SIZE(pre); i++) {
		size_t n = strlen(pre[i]);

		if (!strncmp(dev, pre[i], n) && dev[n] >= 'b' &&
		    dev[n] <= 'z' && !dev[n + 1])
			return true;
	}
	return false;
}

static json_t *attachment(const json_t *rec)
{
	return json_array_get(json_object_get(rec, "Attachments"), 0);
}

static int inst_code(const json_t *inst)
{
	return (int)json_integer_value(
		json_object_get(json_object_get(inst, "State"), "Code"));
}

/* Under the node's lock: the device free on the instance, and a slot. */
static int attach_room(struct spx_state *st, const char *account,
		       const char *inst, const char *dev)
{
	json_t *all, *v;
	size_t i, n = 0;
	int rc = 0;

	if (spx_ebs_list(st, account, &all) < 0)
		return -1;
	json_array_foreach(all, i, v) {
		const json_t *a = attachment(v);

		if (!a || strcmp(spx_ec2_str0(a, "InstanceId"), inst))
			continue;
		if (!strcmp(spx_ec2_str0(a, "Device"), dev)) {
			rc = spx_ec2_fault(400, "InvalidParameterValue",
					   "Attachment point %s is already in "
					   "use",
					   dev);
			break;
		}
		n += json_is_true(json_object_get(v, "SpxData"));
	}
	if (rc == 0 && n >= SPX_EBS_DATA_MAX)
		rc = spx_ec2_fault(400, "AttachmentLimitExceeded",
				   "Instance %s has %zu volumes attached; %d "
				   "is the most it can have.",
				   inst, n, SPX_EBS_DATA_MAX);
	json_decref(all);
	return rc;
}

struct attach {
	const json_t *inst;
	const char *dev;
	bool root; /* at the instance's root device */
	time_t now;
	json_t *out;
};

static int do_attach(json_t *rec, void *arg)
{
	struct attach *a = arg;
	const char *s = spx_ec2_str0(rec, "State");
	const char *id = spx_ec2_str0(a->inst, "InstanceId");
	const char *vid = spx_ec2_str0(rec, "VolumeId");
	const char *iaz = spx_ec2_str0(json_object_get(a->inst, "Placement"),
				       "AvailabilityZone");
	json_t *att;

	if (!strcmp(s, "in-use"))
		return spx_ec2_fault(400, "VolumeInUse",
				     "%s is already attached to an instance",
				     vid);
	if (strcmp(s, "available"))
		return spx_ec2_fault(400, "IncorrectState",
				     "The volume '%s' is '%s'; it can be "
				     "attached once it is 'available'.",
				     vid, s);
	if (strcmp(spx_ec2_str0(rec, "AvailabilityZone"), iaz) ||
	    strcmp(spx_ec2_str0(rec, "SpxNode"),
		   spx_ec2_str0(a->inst, "SpxNode")))
		return spx_ec2_fault(400, "InvalidVolume.ZoneMismatch",
				     "The volume '%s' is not in the same "
				     "availability zone as instance '%s'",
				     vid, id);
	/* A root volume is attached to a stopped instance, which takes it
	 * at its next start: there is nothing to plug. */
	att = json_pack("{s:I, s:s, s:s, s:s, s:s, s:b}", "AttachTime",
			(json_int_t)a->now, "Device", a->dev, "InstanceId", id,
			"State", a->root ? "attached" : "attaching",
			"VolumeId", vid, "DeleteOnTermination", 0);
	json_object_set_new(rec, "Attachments", json_pack("[O]", att));
	json_object_set_new(rec, "State", json_string("in-use"));
	if (a->root)
		json_object_del(rec, "SpxData");
	else
		json_object_set_new(rec, "SpxData", json_true());
	json_object_del(rec, "SpxForce");
	json_object_set_new(rec, "SpxError", json_string(""));
	json_decref(a->out);
	a->out = att;
	return 0;
}

/* Undo a root volume's attachment that its instance refused. */
static int do_unattach(json_t *rec, void *arg)
{
	const json_t *a = attachment(rec);

	if (!a || strcmp(spx_ec2_str0(a, "InstanceId"), arg) ||
	    json_is_true(json_object_get(rec, "SpxData")))
		return 1;
	json_object_set_new(rec, "Attachments", json_array());
	json_object_set_new(rec, "State", json_string("available"));
	return 0;
}

int spx_ebs_attach(struct spx_state *st, const struct spx_ebs_env *env,
		   const char *account, const json_t *req, const json_t *inst,
		   time_t now, json_t **out)
{
	const char *vol = spx_ec2_str(req, "VolumeId");
	const char *dev = spx_ec2_str(req, "Device");
	const char *id = spx_ec2_str0(inst, "InstanceId");
	const char *rootdev = spx_ec2_str0(inst, "RootDeviceName");
	struct attach a = { inst, dev, false, now, NULL };
	int code = inst_code(inst), lk, rc;
	json_t *rec;

	*out = NULL;
	if (!vol)
		return spx_ec2_fault_missing("VolumeId");
	if (!dev)
		return spx_ec2_fault_missing("Device");
	if (spx_ebs_get(st, account, vol, &rec, NULL) < 0)
		return -1;
	json_decref(rec);
	if (code != SPX_INST_RUNNING && code != SPX_INST_STOPPED)
		return spx_ec2_fault(400, "IncorrectInstanceState",
				     "The instance '%s' is '%s'; volumes are "
				     "attached to a 'running' or 'stopped' "
				     "instance.",
				     id, spx_inst_state_name(code)
					     ? spx_inst_state_name(code)
					     : "");
	/* The root device: free only on a stopped instance whose root
	 * volume was detached; the volume becomes its root volume. */
	a.root = *rootdev && !strcmp(dev, rootdev);
	if (a.root && json_object_get(inst, "SpxRoot"))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Attachment point %s is already in use",
				     dev);
	if (a.root && code != SPX_INST_STOPPED)
		return spx_ec2_fault(400, "IncorrectInstanceState",
				     "The instance '%s' is '%s'; a root "
				     "volume is attached only while it is "
				     "'stopped'.",
				     id, spx_inst_state_name(code));
	if (!a.root && !spx_ebs_device_valid(dev))
		return spx_ec2_fault(400, "InvalidParameterValue",
				     "Value (%s) for parameter device is "
				     "invalid. %s is not a valid EBS device "
				     "name.",
				     dev, dev);
	if ((lk = spx_ebs_lock(env->lock)) < 0)
		return -1;
	rc = attach_room(st, account, id, dev);
	if (rc == 0)
		rc = change(st, account, vol, do_attach, &a);
	/* The volume first, then the instance: a crash between leaves a
	 * volume attached to an instance that does not name it (DetachVolume
	 * frees it), never an instance starting from a volume that is not
	 * its own. */
	if (rc == 0 && a.root &&
	    spx_inst_root_attach(st, account, id, vol, now) < 0) {
		int http = 500;
		const char *fc = spx_ec2_fault_code(&http);
		char *c = spx_strdup(fc ? fc : "InternalError");
		char *msg = spx_strdup(spx_errmsg());

		/* The instance's refusal is the answer, whatever the undo
		 * says. */
		if (change(st, account, vol, do_unattach, (void *)id) < 0)
			spx_log(SPX_LOG_WARN,
				"ec2: %s stays attached to %s, which refused "
				"it: %s",
				vol, id, spx_errmsg());
		spx_ec2_fault(http, c, "%s", msg);
		free(c);
		free(msg);
		rc = -1;
	}
	close(lk);
	if (rc < 0) {
		json_decref(a.out);
		return -1;
	}
	*out = a.out;
	return 0;
}

struct detach {
	const json_t *req;
	bool root; /* the instance let go of its root volume */
	json_t *out;
};

/* May rec's attachment be detached as req asks? A root volume only once
 * its instance has let go of it (d->root). */
static int detach_check(const json_t *rec, const struct detach *d)
{
	const char *vid = spx_ec2_str0(rec, "VolumeId");
	const char *inst = spx_ec2_str(d->req, "InstanceId");
	const char *dev = spx_ec2_str(d->req, "Device");
	const json_t *a = attachment(rec);

	if (!a)
		return spx_ec2_fault(400, "IncorrectState",
				     "Volume '%s' is in the '%s' state.", vid,
				     spx_ec2_str0(rec, "State"));
	if ((inst && strcmp(inst, spx_ec2_str0(a, "InstanceId"))) ||
	    (dev && strcmp(dev, spx_ec2_str0(a, "Device"))))
		return spx_ec2_fault(400, "InvalidAttachment.NotFound",
				     "The volume %s is not attached to "
				     "instance %s as %s.",
				     vid, inst ? inst : spx_ec2_str0(a, "InstanceId"),
				     dev ? dev : spx_ec2_str0(a, "Device"));
	if (!json_is_true(json_object_get(rec, "SpxData")) && !d->root)
		return spx_ec2_fault(400, "IncorrectState",
				     "Unable to detach root volume '%s' from "
				     "instance '%s'",
				     vid, spx_ec2_str0(a, "InstanceId"));
	return 0;
}

static int do_detach(json_t *rec, void *arg)
{
	struct detach *d = arg;
	bool force = json_is_true(json_object_get(d->req, "Force"));
	json_t *a = attachment(rec);
	const char *as = spx_ec2_str0(a, "State");

	if (detach_check(rec, d) < 0)
		return -1;
	json_decref(d->out);
	d->out = json_deep_copy(a);
	json_object_set_new(d->out, "State", json_string("detaching"));
	if (!json_is_true(json_object_get(rec, "SpxData"))) {
		/* A stopped instance's root volume: nothing runs with it,
		 * so it is free at once. */
		json_object_set_new(rec, "Attachments", json_array());
		json_object_set_new(rec, "State", json_string("available"));
		return 0;
	}
	if (!strcmp(as, "detaching") &&
	    (!force || json_is_true(json_object_get(rec, "SpxForce"))))
		return 1;
	json_object_set_new(a, "State", json_string("detaching"));
	if (force)
		json_object_set_new(rec, "SpxForce", json_true());
	return 0;
}

int spx_ebs_detach(struct spx_state *st, const char *account,
		   const json_t *req, json_t **out)
{
	const char *vol = spx_ec2_str(req, "VolumeId");
	const char *inst = spx_ec2_str(req, "InstanceId");
	struct detach d = { req, false, NULL };
	json_t *rec;
	int rc = 0;

	*out = NULL;
	if (!vol)
		return spx_ec2_fault_missing("VolumeId");
	if (inst && !spx_inst_id_wellformed(inst))
		return spx_ec2_fault(400, "InvalidInstanceID.Malformed",
				     "Invalid id: \"%s\"", inst);
	/* A root volume: its instance lets go of it first (only while
	 * stopped), then the volume is free. A crash between the two
	 * leaves the volume attached to an instance that does not name it,
	 * which this detach, asked again, frees. */
	if (spx_ebs_get(st, account, vol, &rec, NULL) < 0)
		return -1;
	if (attachment(rec) && !json_is_true(json_object_get(rec, "SpxData"))) {
		d.root = true;
		rc = detach_check(rec, &d);
		if (rc == 0)
			rc = spx_inst_root_detach(
				st, account,
				spx_ec2_str0(attachment(rec), "InstanceId"),
				vol);
		/* An instance whose record is gone names nothing. */
		if (rc < 0 && spx_ec2_fault_code(NULL) &&
		    !strcmp(spx_ec2_fault_code(NULL),
			    "InvalidInstanceID.NotFound"))
			rc = 0;
	}
	json_decref(rec);
	if (rc < 0 || change(st, account, vol, do_detach, &d) < 0) {
		json_decref(d.out);
		return -1;
	}
	*out = d.out;
	return 0;
}

/* Is rec a data volume attached (or attaching, or detaching when
 * detaching) to inst? */
static bool data_of(const json_t *rec, const char *inst, bool detaching)
{
	const json_t *a = attachment(rec);
	const char *as = spx_ec2_str0(a, "State");

	return a && json_is_true(json_object_get(rec, "SpxData")) &&
	       !strcmp(spx_ec2_str0(a, "InstanceId"), inst) &&
	       (detaching || strcmp(as, "detaching"));
}

json_t *spx_ebs_data_volumes(struct spx_state *st, const char *account,
			     const char *inst)
{
	json_t *all, *v, *ids;
	size_t i;

	if (spx_ebs_list(st, account, &all) < 0)
		return NULL;
	ids = json_array();
	json_array_foreach(all, i, v)
		if (data_of(v, inst, false))
			json_array_append(ids, json_object_get(v, "VolumeId"));
	json_decref(all);
	return ids;
}

json_t *spx_ebs_data_devices(struct spx_state *st, const char *account,
			     const char *inst)
{
	json_t *all, *v, *devs;
	size_t i;

	if (spx_ebs_list(st, account, &all) < 0)
		return NULL;
	devs = json_array();
	json_array_foreach(all, i, v) {
		const char *d = spx_ec2_str0(attachment(v), "Device");

		if (data_of(v, inst, false) && !strncmp(d, "/dev/", 5) &&
		    json_array_size(devs) < SPX_EBS_DATA_MAX)
			json_array_append_new(devs, json_string(d + 5));
	}
	json_decref(all);
	spx_ec2_sort_by(devs, NULL);
	return devs;
}

/* The attachment is gone: available (if it is still inst's). */
static int do_detached(json_t *rec, void *arg)
{
	if (!data_of(rec, arg, true))
		return 1;
	json_object_set_new(rec, "Attachments", json_array());
	json_object_set_new(rec, "State", json_string("available"));
	json_object_del(rec, "SpxData");
	json_object_del(rec, "SpxForce");
	return 0;
}

int spx_ebs_release_data(struct spx_state *st, const char *account,
			 const char *inst)
{
	json_t *all, *v;
	size_t i;
	int rc = 0;

	if (spx_ebs_list(st, account, &all) < 0)
		return -1;
	json_array_foreach(all, i, v) {
		char *key;
		int r;

		if (!data_of(v, inst, true))
			continue;
		key = rec_key(account, spx_ec2_str0(v, "VolumeId"));
		r = spx_ec2_rec_change(st, key, do_detached, (void *)inst);
		free(key);
		if (r < 0 && r != SPX_STATE_NOTFOUND)
			rc = -1;
	}
	json_decref(all);
	return rc;
}

/* ---- the agent's side --------------------------------------------- */

/* The attach or detach step a data volume waits on, if any: attaching
 * (its instance told), detaching, or attached to an instance that is
 * ending or gone. */
static bool attach_work(struct spx_state *st, const json_t *rec,
			struct spx_ebs_work *w)
{
	const json_t *a = attachment(rec);
	const char *as = spx_ec2_str0(a, "State");
	const char *inst = spx_ec2_str0(a, "InstanceId");
	json_t *irec = NULL;

	if (!a || !spx_inst_id_wellformed(inst) ||
	    strlen(inst) >= sizeof(w->inst))
		return false;
	snprintf(w->inst, sizeof(w->inst), "%s", inst);
	w->inst_code = spx_inst_get(st, w->account, inst, &irec) < 0
			       ? -1
			       : inst_code(irec);
	json_decref(irec);
	spx_error_clear();
	w->force = json_is_true(json_object_get(rec, "SpxForce"));
	if (!strcmp(as, "attaching"))
		w->step = SPX_EBS_ATTACH;
	else if (!strcmp(as, "detaching") || w->inst_code < 0 ||
		 w->inst_code == SPX_INST_SHUTTING_DOWN ||
		 w->inst_code == SPX_INST_TERMINATED)
		w->step = SPX_EBS_DETACH;
	else
		return false;
	return true;
}

int spx_ebs_pending(struct spx_state *st, const char *node,
		    struct spx_ebs_work **out, size_t *n)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	int rc = spx_state_list(st, "volumes/", 0, &l);
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (rc < 0)
		return spx_ec2_state_fail(rc);
	for (size_t i = 0; i < l.n; i++) {
		struct spx_ebs_work w = { 0 };
		const char *acct = l.key[i] + strlen("volumes/");
		const char *slash = strchr(acct, '/');
		const char *s, *ms, *nd;
		json_t *r;

		if (!slash || (size_t)(slash - acct) >= sizeof(w.account) ||
		    spx_ec2_rec_get(st, l.key[i], &r, NULL) < 0)
			continue;
		s = spx_ec2_str(r, "State");
		nd = spx_ec2_str(r, "SpxNode");
		ms = spx_ec2_str(json_object_get(r, "SpxModification"),
			 "ModificationState");
		memcpy(w.account, acct, (size_t)(slash - acct));
		snprintf(w.id, sizeof(w.id), "%s", spx_ec2_str0(r, "VolumeId"));
		if (!nd || strcmp(nd, node) || !spx_ebs_id_wellformed(w.id) || !s) {
			json_decref(r);
			continue;
		}
		if (!strcmp(s, "creating")) {
			w.step = SPX_EBS_CREATE;
			w.bytes = spx_ebs_bytes(r);
			snprintf(w.src, sizeof(w.src), "%s",
				 spx_ec2_str0(r, "SnapshotId"));
		} else if (!strcmp(s, "deleting")) {
			w.step = SPX_EBS_DELETE;
		} else if (ms && !strcmp(ms, "modifying")) {
			w.step = SPX_EBS_RESIZE;
			w.bytes = (uint64_t)num(json_object_get(r, "SpxModification"),
						"TargetSize") * GIB;
		} else if (ms && !strcmp(ms, "optimizing")) {
			w.step = SPX_EBS_GROW;
			snprintf(w.inst, sizeof(w.inst), "%s",
				 spx_ec2_str0(attachment(r), "InstanceId"));
		} else if (json_is_true(json_object_get(r, "SpxData")) &&
			   attach_work(st, r, &w)) {
			/* w says */
		} else {
			json_decref(r);
			continue;
		}
		json_decref(r);
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			*out = spx_realloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = w;
	}
	spx_state_list_release(&l);
	spx_error_clear();
	return 0;
}

struct done {
	const struct spx_ebs_work *w;
	bool ok;
	const char *why;
	time_t now;
};

static int do_done(json_t *rec, void *arg)
{
	struct done *d = arg;
	const char *s = spx_ec2_str(rec, "State");
	json_t *mod = json_object_get(rec, "SpxModification");

	json_object_set_new(rec, "SpxError", json_string(d->ok ? "" : d->why));
	switch (d->w->step) {
	case SPX_EBS_CREATE:
		if (!s || strcmp(s, "creating"))
			return 1;
		/* A root volume (instance.h) is attached from the start. */
		json_object_set_new(rec, "State",
				    json_string(!d->ok ? "error"
						: json_array_size(json_object_get(
							  rec, "Attachments"))
							? "in-use"
							: "available"));
		return 0;
	case SPX_EBS_RESIZE:
		if (!mod || strcmp(spx_ec2_str0(mod, "ModificationState"), "modifying"))
			return 1;
		/* Grown, and attached: "optimizing" (as EBS says while the
		 * volume is usable at its new size) until the guest's disk
		 * has grown too (SPX_EBS_GROW). */
		if (d->ok && !strcmp(spx_ec2_str0(attachment(rec), "State"),
				     "attached")) {
			json_object_set_new(mod, "ModificationState",
					    json_string("optimizing"));
			json_object_set_new(mod, "Progress", json_integer(50));
		} else {
			json_object_set_new(mod, "ModificationState",
					    json_string(d->ok ? "completed"
							      : "failed"));
			json_object_set_new(mod, "EndTime",
					    json_integer(d->now));
		}
		if (!d->ok) {
			json_object_set_new(mod, "StatusMessage",
					    json_string(d->why));
			return 0;
		}
		if (!strcmp(spx_ec2_str0(mod, "ModificationState"), "completed"))
			json_object_set_new(mod, "Progress", json_integer(100));
		json_object_set(rec, "Size", json_object_get(mod, "TargetSize"));
		json_object_set(rec, "VolumeType",
				json_object_get(mod, "TargetVolumeType"));
		json_object_set(rec, "MultiAttachEnabled",
				json_object_get(mod, "TargetMultiAttachEnabled"));
		json_object_del(rec, "Iops");
		json_object_del(rec, "Throughput");
		if (json_object_get(mod, "TargetIops"))
			json_object_set(rec, "Iops",
					json_object_get(mod, "TargetIops"));
		if (json_object_get(mod, "TargetThroughput"))
			json_object_set(rec, "Throughput",
					json_object_get(mod, "TargetThroughput"));
		/* gp2's Iops follow its size. */
		if (!strcmp(spx_ec2_str(rec, "VolumeType"), "gp2"))
			json_object_set_new(rec, "Iops",
					    json_integer(gp2_iops(
						    num(rec, "Size"))));
		return 0;
	case SPX_EBS_DELETE: /* failed: SpxError says why; tried again */
		return s && !strcmp(s, "deleting") ? 0 : 1;
	case SPX_EBS_ATTACH: {
		json_t *a = attachment(rec);

		if (!data_of(rec, d->w->inst, false) ||
		    strcmp(spx_ec2_str0(a, "State"), "attaching"))
			return 1;
		if (d->ok)
			json_object_set_new(a, "State", json_string("attached"));
		return 0;
	}
	case SPX_EBS_DETACH:
		if (!data_of(rec, d->w->inst, true))
			return 1;
		if (d->ok)
			return do_detached(rec, (void *)d->w->inst);
		return 0;
	case SPX_EBS_GROW:
		/* The volume has its size whatever the guest's disk did (a
		 * failure is the agent's log's): a guest that starts again
		 * sees it. */
		if (!mod || strcmp(spx_ec2_str0(mod, "ModificationState"),
				   "optimizing"))
			return 1;
		json_object_set_new(mod, "ModificationState",
				    json_string("completed"));
		json_object_set_new(mod, "Progress", json_integer(100));
		json_object_set_new(mod, "EndTime", json_integer(d->now));
		return 0;
	default:
		return 1;
	}
}

int spx_ebs_done(struct spx_state *st, const struct spx_ebs_work *w, bool ok,
		 const char *why, time_t now)
{
	struct done d = { w, ok, why ? why : "", now };
	char *key;
	int rc;

	if (w->step == SPX_EBS_DELETE) {
		if (!ok) {
			/* Stays "deleting": the agent tries again. */
			return change(st, w->account, w->id, do_done, &d);
		}
		key = rec_key(w->account, w->id);
		rc = spx_state_delete(st, key, 0);
		free(key);
		return rc < 0 && rc != SPX_STATE_NOTFOUND ? spx_ec2_state_fail(rc)
							  : 0;
	}
	return change(st, w->account, w->id, do_done, &d);
}
