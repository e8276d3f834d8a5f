/* lib/ec2/volume.c: CreateVolume's rules (table-driven, against the
 * codes EC2 answers), capacity, the state transitions the gateway and
 * the agent make, and what the agent is given to do; snapshots
 * (lib/ec2/snapshot.c): their states, who sees them, and an image that
 * keeps one. */
#include "spx.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ec2/fault.h"
#include "ec2/filter.h"
#include "ec2/rec.h"
#include "ec2/snapshot.h"
#include "ec2/volume.h"
#include "file.h"
#include "state/state.h"
#include "t.h"

#define ACCT "123456789012"
#define OTHER "210987654321"

static struct spx_state *st;
static char *tmp;
static json_t *zones;
static struct spx_ebs_env env;

static json_t *req(const char *json)
{
	json_t *r = json_loads(json, 0, NULL);

	if (!r)
		abort();
	return r;
}

/* Create from a request's JSON: the record, or NULL with the code. */
static json_t *create(const char *json, const char **code)
{
	json_t *r = req(json), *rec = NULL;

	*code = NULL;
	if (spx_ebs_create(st, &env, ACCT, r, NULL, 1700000000, &rec) < 0)
		*code = spx_ec2_fault_code(NULL);
	json_decref(r);
	return rec;
}

static void test_rules(void)
{
	static const struct {
		const char *req, *code; /* code NULL: accepted */
		const char *type;
		long long iops, tput;
	} cases[] = {
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":8}", NULL, "gp2", 100, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":1000}", NULL, "gp2", 3000, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":8000}", NULL, "gp2", 16000, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":1,\"VolumeType\":\"gp3\"}",
		  NULL, "gp3", 3000, 125 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":8,\"VolumeType\":\"gp3\","
		  "\"Iops\":4000,\"Throughput\":1000}", NULL, "gp3", 4000, 1000 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":8,\"VolumeType\":\"gp3\","
		  "\"Iops\":4001}", "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":100,\"VolumeType\":\"gp3\","
		  "\"Throughput\":1001}", "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":100,\"VolumeType\":\"gp3\","
		  "\"Throughput\":124}", "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":100,\"VolumeType\":\"gp3\","
		  "\"Iops\":3000,\"Throughput\":751}", "InvalidParameterValue", NULL,
		  0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":10,\"VolumeType\":\"io1\","
		  "\"Iops\":500}", NULL, "io1", 500, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":10,\"VolumeType\":\"io1\","
		  "\"Iops\":501}", "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":10,\"VolumeType\":\"io1\"}",
		  "MissingParameter", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":3,\"VolumeType\":\"io1\","
		  "\"Iops\":100}", "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":65536,\"VolumeType\":\"io2\","
		  "\"Iops\":256000}", NULL, "io2", 256000, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":10,\"VolumeType\":\"io2\","
		  "\"Iops\":99}", "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":10,\"Iops\":100}",
		  "InvalidParameterCombination", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":10,\"VolumeType\":\"io1\","
		  "\"Iops\":100,\"Throughput\":200}", "InvalidParameterCombination",
		  NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":124,\"VolumeType\":\"st1\"}",
		  "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":125,\"VolumeType\":\"sc1\"}",
		  NULL, "sc1", 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":1025,\"VolumeType\":"
		  "\"standard\"}", "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":0}", "InvalidParameterValue",
		  NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":16385}",
		  "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\"}", "MissingParameter", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az9\",\"Size\":1}", "InvalidParameterValue",
		  NULL, 0, 0 },
		{ "{\"Size\":1}", "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":1,\"KmsKeyId\":\"k\"}",
		  "InvalidParameterDependency", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":1,\"KmsKeyId\":\"k\","
		  "\"Encrypted\":true}", NULL, "gp2", 100, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":1,\"MultiAttachEnabled\":true}",
		  "InvalidParameterCombination", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"SnapshotId\":\"snap-0123456789abcdef0\"}",
		  "InvalidSnapshot.NotFound", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"SnapshotId\":\"snap-../x\"}",
		  "InvalidSnapshotID.Malformed", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":1,\"OutpostArn\":\"arn:x\"}",
		  "InvalidParameterValue", NULL, 0, 0 },
		{ "{\"AvailabilityZone\":\"az1\",\"Size\":1,\"VolumeType\":\"gp9\"}",
		  "InvalidParameterValue", NULL, 0, 0 },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		const char *code;
		json_t *rec = create(cases[i].req, &code);

		if (!cases[i].code) {
			T_OK(rec != NULL, "case %zu accepted (%s)", i,
			     code ? code : "");
			T_STR(json_string_value(json_object_get(rec, "VolumeType")),
			      cases[i].type, "case %zu: type", i);
			T_INT(json_integer_value(json_object_get(rec, "Iops")),
			      cases[i].iops, "case %zu: iops", i);
			T_INT(json_integer_value(json_object_get(rec, "Throughput")),
			      cases[i].tput, "case %zu: throughput", i);
			T_STR(json_string_value(json_object_get(rec, "State")),
			      "creating", "case %zu: creating", i);
		} else {
			T_OK(!rec, "case %zu refused", i);
			T_STR(code, cases[i].code, "case %zu: code", i);
		}
		json_decref(rec);
	}
}

static json_t *get(const char *account, const char *id)
{
	json_t *rec = NULL;

	spx_ebs_get(st, account, id, &rec, NULL);
	return rec;
}

static const char *state_of(const char *id)
{
	static char buf[32];
	json_t *rec = get(ACCT, id);

	snprintf(buf, sizeof(buf), "%s",
		 rec ? json_string_value(json_object_get(rec, "State")) : "-");
	json_decref(rec);
	return buf;
}

/* The agent's steps on node for id: how many, the last into *out. */
static int work_on(const char *node, const char *id, struct spx_ebs_work *out)
{
	struct spx_ebs_work *w;
	size_t n;
	int found = 0;

	if (spx_ebs_pending(st, node, &w, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(w[i].id, id)) {
			*out = w[i];
			found++;
		}
	free(w);
	return found;
}

static int work_for(const char *id, struct spx_ebs_work *out)
{
	return work_on("n1", id, out);
}

static void test_lifecycle(void)
{
	struct spx_ebs_work w;
	const char *code;
	json_t *rec = create("{\"AvailabilityZone\":\"az1\",\"Size\":2,"
			     "\"VolumeType\":\"gp3\"}",
			     &code), *it, *mod, *r;
	char id[32];

	if (!T_OK(rec, "a volume to work on"))
		return;
	snprintf(id, sizeof(id), "%s",
		 json_string_value(json_object_get(rec, "VolumeId")));
	it = spx_ebs_item(rec);
	T_OK(!json_object_get(it, "SpxNode") && !json_object_get(it, "SpxError"),
	     "the item hides spx's own members");
	T_OK(json_object_get(it, "VolumeId") && json_object_get(it, "Tags"),
	     "the item keeps EC2's");
	json_decref(it);
	json_decref(rec);

	T_INT(work_for(id, &w), 1, "creating: work for the agent");
	T_OK(w.step == SPX_EBS_CREATE && w.bytes == 2ULL << 30 &&
		     !strcmp(w.account, ACCT),
	     "create 2 GiB for the account");
	T_INT(spx_ebs_delete(st, ACCT, id), -1, "no delete while creating");
	T_STR(spx_ec2_fault_code(NULL), "IncorrectState", "IncorrectState");
	T_INT(spx_ebs_done(st, &w, true, NULL, 1700000001), 0, "created");
	T_STR(state_of(id), "available", "available");
	T_INT(work_for(id, &w), 0, "nothing more to do");
	/* A done that comes twice (the agent crashed after recording)
	 * changes nothing. */
	w.step = SPX_EBS_CREATE;
	T_INT(spx_ebs_done(st, &w, false, "late", 1700000001), 0, "late done");
	T_STR(state_of(id), "available", "still available");

	/* Another account does not see it. */
	r = get(OTHER, id);
	T_OK(!r, "another account: not found");
	T_STR(spx_ec2_fault_code(NULL), "InvalidVolume.NotFound",
	      "another account: InvalidVolume.NotFound");
	T_INT(spx_ebs_delete(st, OTHER, id), -1, "another account cannot delete");
	T_STR(state_of(id), "available", "and nothing changed");

	/* Modify: grow, with the agent's resize. */
	r = req("{\"VolumeId\":\"x\",\"Size\":1}");
	json_object_set_new(r, "VolumeId", json_string(id));
	T_INT(spx_ebs_modify(st, &env, ACCT, r, 1700000002, &mod), -1, "no shrink");
	json_decref(r);
	r = req("{\"Size\":4,\"Iops\":2000}");
	json_object_set_new(r, "VolumeId", json_string(id));
	T_INT(spx_ebs_modify(st, &env, ACCT, r, 1700000002, &mod), -1,
	      "gp3 iops below 3000");
	json_decref(r);
	r = req("{\"Size\":4}");
	json_object_set_new(r, "VolumeId", json_string(id));
	T_INT(spx_ebs_modify(st, &env, ACCT, r, 1700000002, &mod), 0, "grow to 4");
	T_STR(json_string_value(json_object_get(mod, "ModificationState")),
	      "modifying", "modifying");
	T_INT(json_integer_value(json_object_get(mod, "TargetIops")), 3000,
	      "gp3 iops carry over");
	json_decref(mod);
	T_INT(spx_ebs_modify(st, &env, ACCT, r, 1700000002, &mod), -1,
	      "a second modification meanwhile");
	T_STR(spx_ec2_fault_code(NULL), "IncorrectModificationState",
	      "IncorrectModificationState");
	json_decref(r);
	T_INT(work_for(id, &w), 1, "resize work");
	T_OK(w.step == SPX_EBS_RESIZE && w.bytes == 4ULL << 30, "resize to 4 GiB");
	T_INT(spx_ebs_done(st, &w, true, NULL, 1700000003), 0, "resized");
	rec = get(ACCT, id);
	T_INT(json_integer_value(json_object_get(rec, "Size")), 4, "size 4");
	T_STR(json_string_value(json_object_get(
		      json_object_get(rec, "SpxModification"), "ModificationState")),
	      "completed", "completed");
	json_decref(rec);

	/* A failed resize is said, and the size stays. */
	r = req("{\"Size\":5}");
	json_object_set_new(r, "VolumeId", json_string(id));
	spx_ebs_modify(st, &env, ACCT, r, 1700000004, &mod);
	json_decref(mod);
	json_decref(r);
	work_for(id, &w);
	T_INT(spx_ebs_done(st, &w, false, "disk on fire", 1700000005), 0,
	      "failed resize recorded");
	rec = get(ACCT, id);
	T_INT(json_integer_value(json_object_get(rec, "Size")), 4, "still 4");
	T_STR(json_string_value(json_object_get(
		      json_object_get(rec, "SpxModification"), "StatusMessage")),
	      "disk on fire", "the reason is kept");
	json_decref(rec);

	/* Delete: deleting, then the agent removes the record. */
	T_INT(spx_ebs_delete(st, ACCT, id), 0, "delete");
	T_STR(state_of(id), "deleting", "deleting");
	T_INT(spx_ebs_delete(st, ACCT, id), 0, "delete again: fine");
	T_INT(work_for(id, &w), 1, "delete work");
	T_OK(w.step == SPX_EBS_DELETE, "step delete");
	T_INT(spx_ebs_done(st, &w, false, "busy", 1700000006), 0,
	      "failed delete recorded");
	T_STR(state_of(id), "deleting", "a failed delete stays deleting");
	T_INT(spx_ebs_done(st, &w, true, NULL, 1700000007), 0, "deleted");
	T_STR(state_of(id), "-", "gone");
	T_INT(spx_ebs_done(st, &w, true, NULL, 1700000007), 0,
	      "deleted twice: fine");

	/* A failed create is "error", which can be deleted. */
	rec = create("{\"AvailabilityZone\":\"az1\",\"Size\":1}", &code);
	snprintf(id, sizeof(id), "%s",
		 json_string_value(json_object_get(rec, "VolumeId")));
	json_decref(rec);
	work_for(id, &w);
	spx_ebs_done(st, &w, false, "no space", 1700000008);
	T_STR(state_of(id), "error", "a failed create: error");
	T_INT(spx_ebs_delete(st, ACCT, id), 0, "an error volume can be deleted");
}

static void test_ids(void)
{
	static const char *const bad[] = {
		"", "vol-", "vol-123", "vol-0123456789ABCDEF0", "../x",
		"vol-0123456789abcdef0/../x", "snap-0123456789abcdef0",
	};
	json_t *rec;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++) {
		T_INT(spx_ebs_get(st, ACCT, bad[i], &rec, NULL), -1,
		      "id '%s' refused", bad[i]);
		T_STR(spx_ec2_fault_code(NULL), "InvalidVolumeID.Malformed",
		      "id '%s': Malformed", bad[i]);
	}
	T_INT(spx_ebs_get(st, ACCT, "vol-12345678", &rec, NULL), -1,
	      "an 8-digit id is well formed");
	T_STR(spx_ec2_fault_code(NULL), "InvalidVolume.NotFound",
	      "and not found");
}

static void test_capacity(void)
{
	const char *code;
	json_t *rec;
	int64_t keep = env.overcommit;

	/* 0.001% of any real file system is below 1 GiB... */
	env.overcommit = 1;
	rec = create("{\"AvailabilityZone\":\"az1\",\"Size\":16384}", &code);
	T_OK(!rec, "16 TiB at 1%% of the store's size");
	T_STR(code, "InsufficientVolumeCapacity", "InsufficientVolumeCapacity");
	json_decref(rec);
	/* ... and 100000% of it holds 16 TiB on any disk over 17 GiB. */
	env.overcommit = 100000;
	rec = create("{\"AvailabilityZone\":\"az1\",\"Size\":16384}", &code);
	T_OK(rec != NULL, "16 TiB with overcommit (%s)", code ? code : "");
	json_decref(rec);
	env.overcommit = keep;
}

static const char *code(void)
{
	const char *c = spx_ec2_fault_code(NULL);

	return c ? c : "-";
}

/* The snapshot step for id, as the agent is given it. */
static int snap_work(const char *id, struct spx_ebs_work *out)
{
	struct spx_ebs_work *w = NULL;
	size_t n = 0;
	int found = 0;

	if (spx_ebs_snap_pending(st, "n1", &w, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(w[i].id, id)) {
			*out = w[i];
			found++;
		}
	free(w);
	return found;
}

static const char *snap_field(const char *account, const char *id,
			      const char *k)
{
	static char buf[64];
	json_t *rec = NULL;

	spx_ebs_snap_get(st, account, id, true, &rec);
	snprintf(buf, sizeof(buf), "%s",
		 rec ? json_string_value(json_object_get(rec, k)) : "-");
	json_decref(rec);
	return buf;
}

/* A 1 GiB volume of ACCT on node ncap, available: its id into id. */
static int ncap_volume(const struct spx_ebs_env *e, char *id, size_t size)
{
	struct spx_ebs_work w;
	json_t *r = req("{\"AvailabilityZone\":\"az1\",\"Size\":1}"), *vol;
	int rc = spx_ebs_create(st, e, ACCT, r, NULL, 1700000200, &vol);

	json_decref(r);
	if (rc < 0)
		return -1;
	snprintf(id, size, "%s",
		 json_string_value(json_object_get(vol, "VolumeId")));
	json_decref(vol);
	if (work_on("ncap", id, &w) != 1)
		return -1;
	return spx_ebs_done(st, &w, true, NULL, 1700000201);
}

/* ModifyVolume's grow is held to CreateVolume's capacity rule, counting
 * the growth, under the same lock; a grow not made yet counts at its
 * target, for creates and grows alike. */
static void test_modify_capacity(void)
{
	struct spx_ebs_env e = env;
	struct spx_ebs_work w;
	struct statvfs sv;
	char id[32], id2[32], id3[32], *k;
	json_t *r, *mod = NULL, *rec, *vol = NULL;
	int64_t cap;

	e.node = "ncap"; /* a node of its own: only these volumes count */
	if (!T_OK(ncap_volume(&e, id, sizeof(id)) == 0, "a 1 GiB volume"))
		return;
	/* 1% of the store's file system never holds 16 TiB. */
	e.overcommit = 1;
	r = json_pack("{s:s, s:i}", "VolumeId", id, "Size", 16384);
	T_INT(spx_ebs_modify(st, &e, ACCT, r, 1700000202, &mod), -1,
	      "a grow past the node's capacity");
	T_STR(code(), "InsufficientVolumeCapacity", "CreateVolume's refusal");
	k = spx_xprintf("volume %s to grow by 16383 GiB", id);
	T_OK(strstr(spx_errmsg(), k) != NULL, "saying so: %s", spx_errmsg());
	free(k);
	json_decref(r);
	rec = get(ACCT, id);
	T_OK(rec && json_integer_value(json_object_get(rec, "Size")) == 1 &&
		     !json_object_get(rec, "SpxModification"),
	     "nothing changed");
	json_decref(rec);
	T_INT(work_on("ncap", id, &w), 0, "nothing for the agent");

	/* Exactly full: at 100% the capacity is the file system's size. */
	if (statvfs(tmp, &sv) < 0)
		return;
	cap = (int64_t)((uint64_t)sv.f_blocks * sv.f_frsize / 100 * 100 >> 30);
	if (cap < 2 || cap > 16384) {
		T_OK(1, "# SKIP a %lld GiB store is outside gp2's sizes",
		     (long long)cap);
		goto out;
	}
	e.overcommit = 100;
	r = json_pack("{s:s, s:I}", "VolumeId", id, "Size", (json_int_t)cap);
	T_INT(spx_ebs_modify(st, &e, ACCT, r, 1700000203, &mod), 0,
	      "a grow that just fits");
	json_decref(mod);
	json_decref(r);
	r = req("{\"AvailabilityZone\":\"az1\",\"Size\":1}");
	T_INT(spx_ebs_create(st, &e, ACCT, r, NULL, 1700000204, &vol), -1,
	      "no room left while the grow is being made");
	T_STR(code(), "InsufficientVolumeCapacity", "InsufficientVolumeCapacity");
	T_INT(work_on("ncap", id, &w), 1, "the resize");
	T_INT(spx_ebs_done(st, &w, true, NULL, 1700000205), 0, "resized");
	T_INT(spx_ebs_create(st, &e, ACCT, r, NULL, 1700000206, &vol), -1,
	      "nor once it is made");
	json_decref(r);
	/* Room again once it goes; two grows cannot both take it. */
	T_INT(spx_ebs_delete(st, ACCT, id), 0, "delete it");
	if (!T_OK(ncap_volume(&e, id2, sizeof(id2)) == 0 &&
			  ncap_volume(&e, id3, sizeof(id3)) == 0,
		  "room again: two 1 GiB volumes"))
		goto out;
	r = json_pack("{s:s, s:I}", "VolumeId", id2, "Size",
		      (json_int_t)cap - 1);
	T_INT(spx_ebs_modify(st, &e, ACCT, r, 1700000207, &mod), 0,
	      "one grows to fill the node");
	json_decref(mod);
	json_decref(r);
	r = json_pack("{s:s, s:i}", "VolumeId", id3, "Size", 2);
	T_INT(spx_ebs_modify(st, &e, ACCT, r, 1700000208, &mod), -1,
	      "the other cannot grow meanwhile");
	T_STR(code(), "InsufficientVolumeCapacity", "InsufficientVolumeCapacity");
	json_decref(r);
	/* A change that takes no space still goes through. */
	r = json_pack("{s:s, s:s}", "VolumeId", id3, "VolumeType", "gp3");
	T_INT(spx_ebs_modify(st, &e, ACCT, r, 1700000209, &mod), 0,
	      "a type change on a full node");
	json_decref(mod);
	json_decref(r);
	T_INT(work_on("ncap", id3, &w), 1, "its step");
	spx_ebs_done(st, &w, true, NULL, 1700000210);
	T_INT(work_on("ncap", id2, &w), 1, "the grow's step");
	spx_ebs_done(st, &w, true, NULL, 1700000210);
	spx_ebs_delete(st, ACCT, id2);
	spx_ebs_delete(st, ACCT, id3);
out:
	spx_ebs_delete(st, ACCT, id);
}

/* The owner's tags on snapshot sid (shared with OTHER) are the owner's:
 * OTHER's item has none, and a tag filter does not match it. */
static void tags_not_shared(const char *sid)
{
	static const struct spx_ec2_filter_table tf = { NULL, 0, "Tags" };
	static const char *const filters[] = {
		"[{\"Name\": \"tag:secret\", \"Values\": [\"x\"]}]",
		"[{\"Name\": \"tag-key\", \"Values\": [\"secret\"]}]",
		"[{\"Name\": \"tag-value\", \"Values\": [\"x\"]}]",
	};
	json_t *tags = json_pack("[{s:s, s:s}]", "Key", "secret", "Value", "x");
	json_t *mine = NULL, *theirs = NULL, *im, *it;

	T_INT(spx_ebs_snap_set_tags(st, ACCT, sid, tags, NULL), 0,
	      "the owner tags it");
	json_decref(tags);
	spx_ebs_snap_get(st, ACCT, sid, true, &mine);
	spx_ebs_snap_get(st, OTHER, sid, true, &theirs);
	if (!T_OK(mine && theirs, "both read it"))
		goto out;
	im = spx_ebs_snap_item(mine, ACCT);
	it = spx_ebs_snap_item(theirs, OTHER);
	T_INT(json_array_size(json_object_get(im, "Tags")), 1,
	      "the owner sees its tag");
	T_OK(!json_object_get(it, "Tags"), "the other account sees none");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(filters); i++) {
		struct spx_ec2_filters *fs = NULL;
		json_t *f = req(filters[i]);

		if (T_OK(spx_ec2_filters_compile(&tf, f, &fs) == 0, "filter %zu",
			 i)) {
			T_OK(spx_ec2_filters_match(fs, im), "%s matches for the owner",
			     filters[i]);
			T_OK(!spx_ec2_filters_match(fs, it),
			     "%s does not for the other account", filters[i]);
		}
		spx_ec2_filters_free(fs);
		json_decref(f);
	}
	json_decref(im);
	json_decref(it);
out:
	json_decref(mine);
	json_decref(theirs);
}

static void test_snapshots(void)
{
	struct spx_ebs_work w, vw;
	json_t *vol, *snap = NULL, *r, *list, *copy = NULL;
	const char *c;
	char vid[32], sid[32], cid[32];
	bool seen;
	size_t i;

	vol = create("{\"AvailabilityZone\": \"az1\", \"Size\": 3, "
		     "\"Encrypted\": true}",
		     &c);
	if (!T_OK(vol, "a volume to snapshot"))
		return;
	snprintf(vid, sizeof(vid), "%s",
		 json_string_value(json_object_get(vol, "VolumeId")));
	json_decref(vol);
	r = json_pack("{s:s, s:s}", "VolumeId", vid, "Description", "d");
	T_INT(spx_ebs_snap_create(st, ACCT, r, NULL, 1700000100, &snap), -1,
	      "no snapshot of a volume still creating");
	T_STR(code(), "IncorrectState", "IncorrectState");
	work_for(vid, &vw);
	spx_ebs_done(st, &vw, true, NULL, 1700000101);
	T_INT(spx_ebs_snap_create(st, ACCT, r, NULL, 1700000100, &snap), 0,
	      "a snapshot of an available volume");
	json_decref(r);
	if (!T_OK(snap, "the record"))
		return;
	snprintf(sid, sizeof(sid), "%s",
		 json_string_value(json_object_get(snap, "SnapshotId")));
	T_OK(spx_ebs_snap_id_wellformed(sid), "%s is well formed", sid);
	T_STR(json_string_value(json_object_get(snap, "State")), "pending",
	      "pending");
	T_STR(json_string_value(json_object_get(snap, "Progress")), "0%",
	      "0%%");
	T_INT(json_integer_value(json_object_get(snap, "VolumeSize")), 3,
	      "VolumeSize from the volume");
	T_OK(json_is_true(json_object_get(snap, "Encrypted")),
	     "a snapshot of an encrypted volume is encrypted");
	r = spx_ebs_snap_item(snap, ACCT);
	T_OK(!json_object_get(r, "SpxNode") && !json_object_get(r, "SpxError"),
	     "the item hides Spx members");
	json_decref(r);
	json_decref(snap);

	/* The agent's step, progress, and its end. */
	T_INT(snap_work(sid, &w), 1, "pending: a step for the agent");
	T_OK(w.step == SPX_EBS_SNAP_TAKE && !strcmp(w.src, vid),
	     "take a snapshot of the volume");
	T_INT(spx_ebs_snap_progress(st, &w, 40), 0, "progress");
	T_STR(snap_field(ACCT, sid, "Progress"), "40%", "40%%");
	T_INT(spx_ebs_snap_progress(st, &w, 100), 0, "progress 100");
	T_STR(snap_field(ACCT, sid, "Progress"), "99%",
	      "100%% only with completed");
	/* Not completed yet: no volume, no copy from it. */
	r = json_pack("{s:s, s:s}", "AvailabilityZone", "az1", "SnapshotId",
		      sid);
	T_INT(spx_ebs_create(st, &env, ACCT, r, NULL, 1700000102, &vol), -1,
	      "no volume from a pending snapshot");
	T_STR(code(), "IncorrectState", "IncorrectState");
	T_INT(spx_ebs_snap_done(st, &w, false, false, "the store is away"), 0,
	      "a try that failed");
	T_STR(snap_field(ACCT, sid, "State"), "pending", "still pending");
	T_STR(snap_field(ACCT, sid, "SpxError"), "the store is away",
	      "why, kept");
	T_INT(spx_ebs_snap_done(st, &w, true, false, NULL), 0, "done");
	T_STR(snap_field(ACCT, sid, "State"), "completed", "completed");
	T_STR(snap_field(ACCT, sid, "Progress"), "100%", "100%%");
	T_INT(snap_work(sid, &w), 0, "nothing more to do");
	T_INT(spx_ebs_snap_done(st, &w, false, true, "late"), 0, "late");
	T_STR(snap_field(ACCT, sid, "State"), "completed", "left alone");

	/* A volume from it: its size at least, the restore for the agent. */
	T_INT(spx_ebs_create(st, &env, ACCT, r, NULL, 1700000102, &vol), 0,
	      "a volume from the snapshot");
	T_INT(json_integer_value(json_object_get(vol, "Size")), 3,
	      "the snapshot's size");
	T_OK(json_is_true(json_object_get(vol, "Encrypted")), "encrypted");
	T_INT(work_for(json_string_value(json_object_get(vol, "VolumeId")),
		       &vw),
	      1, "its step");
	T_STR(vw.src, sid, "restore from the snapshot");
	json_decref(vol);
	json_object_set_new(r, "Size", json_integer(2));
	T_INT(spx_ebs_create(st, &env, ACCT, r, NULL, 1700000102, &vol), -1,
	      "smaller than the snapshot");
	T_STR(code(), "InvalidParameterValue", "InvalidParameterValue");
	json_decref(r);

	/* Another account: nothing, until shared. */
	r = NULL;
	T_INT(spx_ebs_snap_get(st, OTHER, sid, true, &r), -1,
	      "another account: not found");
	T_STR(code(), "InvalidSnapshot.NotFound", "InvalidSnapshot.NotFound");
	r = json_pack("{s:s, s:s, s:s, s:[s]}", "SnapshotId", sid,
		      "Attribute", "createVolumePermission", "OperationType",
		      "add", "UserIds", OTHER);
	T_INT(spx_ebs_snap_modify_attr(st, OTHER, r), -1,
	      "another account cannot share it");
	T_INT(spx_ebs_snap_modify_attr(st, ACCT, r), 0, "shared");
	json_decref(r);
	T_STR(snap_field(OTHER, sid, "SnapshotId"), sid, "seen when shared");
	tags_not_shared(sid);
	T_INT(spx_ebs_snap_delete(st, env.lock, OTHER, sid), -1,
	      "but not deleted by it");
	T_INT(spx_ebs_snap_set_tags(st, OTHER, sid, NULL, NULL), -1,
	      "nor tagged");
	r = json_pack("{s:s, s:{s:[{s:s}]}}", "SnapshotId", sid,
		      "CreateVolumePermission", "Add", "Group", "all");
	T_INT(spx_ebs_snap_modify_attr(st, ACCT, r), -1,
	      "an encrypted snapshot is never public");
	T_STR(code(), "InvalidParameter", "InvalidParameter");
	json_decref(r);
	r = json_pack("{s:s, s:s}", "SourceSnapshotId", sid, "SourceRegion",
		      "r1");
	T_INT(spx_ebs_snap_copy(st, OTHER, "r1", r, NULL, 1700000103, &copy),
	      0, "the other account copies it");
	snprintf(cid, sizeof(cid), "%s",
		 json_string_value(json_object_get(copy, "SnapshotId")));
	T_STR(json_string_value(json_object_get(copy, "OwnerId")), OTHER,
	      "the copy is its own");
	T_STR(json_string_value(json_object_get(copy, "VolumeId")),
	      "vol-ffffffff", "of no volume, not the owner's %s", vid);
	json_decref(copy);
	T_INT(snap_work(cid, &w), 1, "a copy step");
	T_OK(w.step == SPX_EBS_SNAP_COPY && !strcmp(w.src, sid) &&
		     !strcmp(w.account, OTHER),
	     "copy the source");
	T_INT(spx_ebs_snap_copy(st, OTHER, "r2", r, NULL, 1700000103, &copy),
	      -1, "from another region");
	json_decref(r);
	r = json_pack("{s:s, s:s}", "SnapshotId", sid, "Attribute",
		      "createVolumePermission");
	T_INT(spx_ebs_snap_reset_attr(st, ACCT, r), 0, "reset");
	json_decref(r);
	r = NULL;
	T_INT(spx_ebs_snap_get(st, OTHER, sid, true, &r), -1,
	      "not shared any more");
	T_INT(spx_ebs_snap_list(st, OTHER, &list), 0, "the other's list");
	seen = false;
	json_array_foreach(list, i, r)
		seen |= !strcmp(json_string_value(json_object_get(r, "SnapshotId")),
				sid);
	T_OK(!seen && json_array_size(list) == 1, "holds only its copy");
	json_decref(list);

	/* One unreadable record never breaks a listing. */
	{
		char *k = spx_xprintf("snapshots/%s/snap-0000000000000000f",
				      ACCT);

		spx_state_put(st, k, "{not json", 9, 0, NULL);
		T_INT(spx_ebs_snap_list(st, ACCT, &list), 0,
		      "a list past an unreadable record");
		T_INT(json_array_size(list), 1, "with the snapshot in it");
		json_decref(list);
		spx_state_delete(st, k, 0);
		free(k);
	}

	/* An image that names it keeps it. */
	r = json_pack("{s:s, s:[{s:s, s:{s:s}}]}", "ImageId",
		      "ami-0123456789abcdef0", "BlockDeviceMappings",
		      "DeviceName", "/dev/xvda", "Ebs", "SnapshotId", sid);
	{
		char *k = spx_xprintf("images/%s/ami-0123456789abcdef0", ACCT);
		char *v = json_dumps(r, 0);

		spx_state_put(st, k, v, strlen(v), 0, NULL);
		/* Ownership first: to another account it is not found, and
		 * the image that uses it is not named. */
		T_INT(spx_ebs_snap_delete(st, env.lock, OTHER, sid), -1,
		      "another account cannot delete it");
		T_STR(code(), "InvalidSnapshot.NotFound",
		      "InvalidSnapshot.NotFound to another account");
		T_OK(!strstr(spx_errmsg(), "ami-"), "naming no image: %s",
		     spx_errmsg());
		T_INT(spx_ebs_snap_delete(st, env.lock, ACCT, sid), -1, "in use");
		T_STR(code(), "InvalidSnapshot.InUse", "InvalidSnapshot.InUse");
		spx_state_delete(st, k, 0);
		free(k);
		free(v);
	}
	json_decref(r);
	T_INT(spx_ebs_snap_delete(st, env.lock, ACCT, sid), 0, "deleted");
	r = NULL;
	T_INT(spx_ebs_snap_get(st, ACCT, sid, true, &r), -1, "gone at once");
	T_INT(spx_ebs_snap_delete(st, env.lock, ACCT, sid), -1, "deleted once");
	T_INT(snap_work(sid, &w), 1, "the agent removes it");
	T_OK(w.step == SPX_EBS_SNAP_DELETE, "snapshot-rm");
	T_INT(spx_ebs_snap_done(st, &w, true, true, NULL), 0, "removed");
	T_INT(snap_work(sid, &w), 0, "and its record");
	T_OK(!spx_ebs_snap_id_wellformed("snap-0123") &&
		     !spx_ebs_snap_id_wellformed("snap-0123456789abcdeg0") &&
		     !spx_ebs_snap_id_wellformed("vol-0123456789abcdef0") &&
		     spx_ebs_snap_id_wellformed("snap-01234567"),
	     "snapshot ids");
}

/* A Description of at most 255 characters (not bytes); a longer one on a
 * create or a copy is refused and makes nothing. */
static void test_snapshot_description(void)
{
	struct spx_ebs_work vw;
	json_t *vol, *snap = NULL, *r, *list;
	const char *c;
	char vid[32], sid[32], desc[2 * 256 + 1] = "";
	size_t before;

	vol = create("{\"AvailabilityZone\": \"az1\", \"Size\": 1}", &c);
	if (!T_OK(vol, "a volume"))
		return;
	snprintf(vid, sizeof(vid), "%s",
		 json_string_value(json_object_get(vol, "VolumeId")));
	json_decref(vol);
	work_for(vid, &vw);
	spx_ebs_done(st, &vw, true, NULL, 1700000201);
	for (int i = 0; i < 255; i++) /* U+00E9, two bytes each */
		memcpy(desc + 2 * i, "\xc3\xa9", 2);
	r = json_pack("{s:s, s:s}", "VolumeId", vid, "Description", desc);
	T_INT(spx_ebs_snap_create(st, ACCT, r, NULL, 1700000202, &snap), 0,
	      "255 characters (510 bytes)");
	json_decref(r);
	if (!T_OK(snap, "the record"))
		return;
	T_STR(json_string_value(json_object_get(snap, "Description")), desc,
	      "kept whole");
	snprintf(sid, sizeof(sid), "%s",
		 json_string_value(json_object_get(snap, "SnapshotId")));
	json_decref(snap);
	T_INT(spx_ebs_snap_list(st, ACCT, &list), 0, "the list");
	before = json_array_size(list);
	json_decref(list);
	desc[2 * 255] = 'x';
	r = json_pack("{s:s, s:s}", "VolumeId", vid, "Description", desc);
	snap = NULL;
	T_INT(spx_ebs_snap_create(st, ACCT, r, NULL, 1700000203, &snap), -1,
	      "256 characters");
	T_STR(code(), "InvalidParameterValue", "InvalidParameterValue");
	T_OK(!snap, "no record");
	json_decref(r);
	r = json_pack("{s:s, s:s, s:s}", "SourceSnapshotId", sid,
		      "SourceRegion", "r1", "Description", desc);
	T_INT(spx_ebs_snap_copy(st, ACCT, "r1", r, NULL, 1700000204, &snap),
	      -1, "a copy with 256 characters");
	T_STR(code(), "InvalidParameterValue", "InvalidParameterValue");
	json_decref(r);
	T_INT(spx_ebs_snap_list(st, ACCT, &list), 0, "the list again");
	T_INT(json_array_size(list), before, "nothing was made");
	json_decref(list);
}

/* ---- CreateVolume against DeleteSnapshot ---------------------------- */

struct racer {
	const char *sid;
	int rc;
	char code[64];
};

static void *create_from(void *arg)
{
	struct racer *r = arg;
	json_t *q = json_pack("{s:s, s:s}", "AvailabilityZone", "az1",
			      "SnapshotId", r->sid),
	       *vol = NULL;

	r->rc = spx_ebs_create(st, &env, ACCT, q, NULL, 1700000300, &vol);
	snprintf(r->code, sizeof(r->code), "%s", r->rc < 0 ? code() : "");
	json_decref(vol);
	json_decref(q);
	return NULL;
}

static void *delete_snap(void *arg)
{
	struct racer *r = arg;

	r->rc = spx_ebs_snap_delete(st, env.lock, ACCT, r->sid);
	snprintf(r->code, sizeof(r->code), "%s", r->rc < 0 ? code() : "");
	return NULL;
}

/* Until a flock on path waits (its "->" line in /proc/locks): 1, or 0
 * after 10 s. */
static int lock_waited(const char *path)
{
	struct stat sb;
	char pat[64], line[256];

	if (stat(path, &sb) < 0)
		return 0;
	snprintf(pat, sizeof(pat), ":%llu ", (unsigned long long)sb.st_ino);
	for (int i = 0; i < 10000; i++) {
		FILE *f = fopen("/proc/locks", "r");
		bool seen = false;

		while (f && !seen && fgets(line, sizeof(line), f))
			seen = strstr(line, "->") && strstr(line, "FLOCK") &&
			       strstr(line, pat);
		if (f)
			fclose(f);
		if (seen)
			return 1;
		usleep(1000);
	}
	return 0;
}

/* A completed snapshot of a new available volume, its id into sid. */
static int completed_snapshot(char *sid, size_t size)
{
	struct spx_ebs_work w;
	const char *c;
	json_t *vol = create("{\"AvailabilityZone\": \"az1\", \"Size\": 1}", &c),
	       *r, *snap = NULL;
	int rc = -1;

	if (!vol)
		return -1;
	r = json_pack("{s:s}", "VolumeId",
		      json_string_value(json_object_get(vol, "VolumeId")));
	if (work_for(json_string_value(json_object_get(vol, "VolumeId")), &w) == 1 &&
	    spx_ebs_done(st, &w, true, NULL, 1700000301) == 0 &&
	    spx_ebs_snap_create(st, ACCT, r, NULL, 1700000302, &snap) == 0) {
		snprintf(sid, size, "%s",
			 json_string_value(json_object_get(snap, "SnapshotId")));
		if (snap_work(sid, &w) == 1 &&
		    spx_ebs_snap_done(st, &w, true, false, NULL) == 0)
			rc = 0;
	}
	json_decref(snap);
	json_decref(r);
	json_decref(vol);
	return rc;
}

static size_t volumes_of(const char *sid)
{
	json_t *list = NULL, *v;
	size_t i, n = 0;

	if (spx_ebs_list(st, ACCT, &list) < 0)
		return 0;
	json_array_foreach(list, i, v)
		n += !strcmp(json_string_value(json_object_get(v, "SnapshotId")),
			     sid);
	json_decref(list);
	return n;
}

/* A DeleteSnapshot between CreateVolume's first look at the snapshot
 * and its record: the volume must not be recorded (the agent would
 * find no snapshot to restore and the volume would end in error). */
static void test_create_vs_delete(void)
{
	struct racer r = { 0 };
	char sid[32], *elsewhere = spx_xprintf("%s/other.lock", tmp);
	json_t *snap = NULL;
	pthread_t th;
	int fd;

	if (!T_OK(completed_snapshot(sid, sizeof(sid)) == 0, "a snapshot"))
		goto out;
	fd = open(env.lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (!T_OK(fd >= 0 && flock(fd, LOCK_EX) == 0, "the node's lock held"))
		goto out;
	r.sid = sid;
	pthread_create(&th, NULL, create_from, &r);
	T_OK(lock_waited(env.lock), "CreateVolume waits for the lock");
	/* The deletion that came first, past the lock this test holds. */
	T_INT(spx_ebs_snap_delete(st, elsewhere, ACCT, sid), 0,
	      "the snapshot deleted meanwhile");
	flock(fd, LOCK_UN);
	pthread_join(th, NULL);
	T_INT(r.rc, -1, "CreateVolume refused");
	T_STR(r.code, "InvalidSnapshot.NotFound", "InvalidSnapshot.NotFound");
	T_INT(volumes_of(sid), 0, "no volume of it was recorded");

	/* DeleteSnapshot waits for the lock as well. */
	if (!T_OK(completed_snapshot(sid, sizeof(sid)) == 0, "another"))
		goto out_fd;
	flock(fd, LOCK_EX);
	pthread_create(&th, NULL, delete_snap, &r);
	T_OK(lock_waited(env.lock), "DeleteSnapshot waits for the lock");
	T_INT(spx_ebs_snap_get(st, ACCT, sid, false, &snap), 0,
	      "the snapshot stays meanwhile");
	json_decref(snap);
	flock(fd, LOCK_UN);
	pthread_join(th, NULL);
	T_INT(r.rc, 0, "then it is deleted");
	snap = NULL;
	T_INT(spx_ebs_snap_get(st, ACCT, sid, false, &snap), -1, "gone");
out_fd:
	close(fd);
out:
	free(elsewhere);
}

/* An available volume of ACCT (its id into id). */
static void avail(char *id, size_t n, const char *tags)
{
	struct spx_ebs_work w;
	json_t *r = req("{\"AvailabilityZone\": \"az1\", \"Size\": 1}"), *rec = NULL;
	json_t *t = tags ? req(tags) : NULL;

	*id = '\0';
	if (spx_ebs_create(st, &env, ACCT, r, t, 1700000400, &rec) == 0) {
		snprintf(id, n, "%s", spx_ec2_str0(rec, "VolumeId"));
		work_for(id, &w);
		spx_ebs_done(st, &w, true, NULL, 1700000401);
	}
	json_decref(rec);
	json_decref(r);
	json_decref(t);
}

/* CreateSnapshots: a set of records, whole or none. */
static void test_snapshot_sets(void)
{
	char root[32], d1[32], d2[32], loose[32];
	json_t *inst, *r, *out = NULL, *v, *a;
	struct spx_ebs_work w0, w1, w2;
	size_t i;
	bool sorted = true;

	avail(root, sizeof(root), NULL);
	avail(d1, sizeof(d1), "[{\"Key\": \"k\", \"Value\": \"vol\"}, "
			      "{\"Key\": \"from\", \"Value\": \"vol\"}]");
	avail(d2, sizeof(d2), NULL);
	avail(loose, sizeof(loose), NULL);
	inst = json_pack("{s:s, s:{s:i, s:s}, s:s, s:{s:s}, s:{s:s}, s:s}",
			 "InstanceId", "i-0123456789abcdef0", "State", "Code",
			 16, "Name", "running", "RootDeviceName", "/dev/xvda",
			 "SpxRoot", "VolumeId", root, "Placement",
			 "AvailabilityZone", "az1", "SpxNode", "n1");
	for (int k = 0; k < 2; k++) {
		r = json_pack("{s:s, s:s}", "VolumeId", k ? d2 : d1, "Device",
			      k ? "/dev/sdg" : "/dev/sdf");
		if (!T_OK(spx_ebs_attach(st, &env, ACCT, r, inst, 1700000402,
					 &a) == 0,
			  "attach %d", k))
			printf("#   %s: %s\n", code(), spx_errmsg());
		json_decref(a);
		json_decref(r);
	}

	r = req("{\"InstanceSpecification\": {\"InstanceId\": "
		"\"i-0123456789abcdef0\"}, \"Description\": \"set\", "
		"\"CopyTagsFromSource\": \"volume\"}");
	{
		json_t *tags = req("[{\"Key\": \"k\", \"Value\": \"set\"}]");

		T_INT(spx_ebs_snap_create_set(st, ACCT, r, inst, tags,
					      1700000403, &out),
		      0, "a set of the root and two data volumes");
		json_decref(tags);
	}
	json_decref(r);
	T_INT(json_array_size(out), 3, "three snapshots");
	json_array_foreach(out, i, v) {
		if (i && strcmp(spx_ec2_str0(json_array_get(out, i - 1),
					     "VolumeId"),
				spx_ec2_str0(v, "VolumeId")) >= 0)
			sorted = false;
		T_STR(spx_ec2_str0(v, "SpxSet"),
		      spx_ec2_str0(json_array_get(out, 0), "SnapshotId"),
		      "%zu: SpxSet names the first", i);
		T_STR(spx_ec2_str0(v, "State"), "pending", "%zu: pending", i);
		T_STR(spx_ec2_str0(v, "Description"), "set", "%zu: described",
		      i);
		if (!strcmp(spx_ec2_str0(v, "VolumeId"), d1)) {
			char *tags = json_dumps(json_object_get(v, "Tags"),
						JSON_SORT_KEYS | JSON_COMPACT);

			T_STR(tags, "[{\"Key\":\"from\",\"Value\":\"vol\"},"
				    "{\"Key\":\"k\",\"Value\":\"set\"}]",
			      "the volume's tags, the asked-for winning");
			free(tags);
		}
	}
	T_OK(sorted, "by VolumeId");
	if (json_array_size(out) == 3) {
		int seen = snap_work(spx_ec2_str0(json_array_get(out, 0),
						  "SnapshotId"), &w0) +
			   snap_work(spx_ec2_str0(json_array_get(out, 1),
						  "SnapshotId"), &w1) +
			   snap_work(spx_ec2_str0(json_array_get(out, 2),
						  "SnapshotId"), &w2);

		T_INT(seen, 3, "the agent sees the three");
		T_OK(*w0.set && !strcmp(w0.set, w1.set) &&
			     !strcmp(w1.set, w2.set),
		     "as one set");
		T_OK(w0.step == SPX_EBS_SNAP_TAKE, "to take");
		T_OK(w0.set_size == 3 && w2.set_size == 3 &&
			     w0.set_time == 1700000403,
		     "of three, asked for at its StartTime");
	}
	json_decref(out);
	out = NULL;

	r = json_pack("{s:{s:s, s:b, s:[s]}}", "InstanceSpecification",
		      "InstanceId", "i-0123456789abcdef0", "ExcludeBootVolume",
		      1, "ExcludeDataVolumeIds", d2);
	T_INT(spx_ebs_snap_create_set(st, ACCT, r, inst, NULL, 1700000404,
				      &out),
	      0, "without the root volume and the second data volume");
	T_INT(json_array_size(out), 1, "one snapshot");
	T_STR(spx_ec2_str0(json_array_get(out, 0), "VolumeId"), d1, "of d1");
	json_decref(out);
	json_decref(r);

	/* Refused, nothing recorded. */
	{
		struct {
			const char *what, *code;
			json_t *req;
		} bad[] = {
			{ "the root volume as a data volume",
			  "InvalidParameterValue",
			  json_pack("{s:{s:s, s:[s]}}", "InstanceSpecification",
				    "InstanceId", "i-0123456789abcdef0",
				    "ExcludeDataVolumeIds", root) },
			{ "a volume not attached", "InvalidParameterValue",
			  json_pack("{s:{s:s, s:[s]}}", "InstanceSpecification",
				    "InstanceId", "i-0123456789abcdef0",
				    "ExcludeDataVolumeIds", loose) },
			{ "a malformed volume id", "InvalidVolumeID.Malformed",
			  json_pack("{s:{s:s, s:[s]}}", "InstanceSpecification",
				    "InstanceId", "i-0123456789abcdef0",
				    "ExcludeDataVolumeIds", "vol-../x") },
			{ "nothing left", "InvalidParameterValue",
			  json_pack("{s:{s:s, s:b, s:[s, s]}}",
				    "InstanceSpecification", "InstanceId",
				    "i-0123456789abcdef0", "ExcludeBootVolume",
				    1, "ExcludeDataVolumeIds", d1, d2) },
			{ "tags from an image", "InvalidParameterValue",
			  json_pack("{s:{s:s}, s:s}", "InstanceSpecification",
				    "InstanceId", "i-0123456789abcdef0",
				    "CopyTagsFromSource", "image") },
			{ "an Outpost", "InvalidParameterValue",
			  json_pack("{s:{s:s}, s:s}", "InstanceSpecification",
				    "InstanceId", "i-0123456789abcdef0",
				    "OutpostArn", "arn:x") },
		};
		json_t *all = NULL;
		size_t before, after;

		spx_ebs_snap_list(st, ACCT, &all);
		before = json_array_size(all);
		json_decref(all);
		for (i = 0; i < SPX_ARRAY_SIZE(bad); i++) {
			out = NULL;
			T_INT(spx_ebs_snap_create_set(st, ACCT, bad[i].req, inst,
						      NULL, 1700000405, &out),
			      -1, "%s: refused", bad[i].what);
			T_STR(code(), bad[i].code, "%s: its code",
			      bad[i].what);
			T_OK(!out, "%s: no records", bad[i].what);
			json_decref(bad[i].req);
		}
		/* A pending instance, and a volume not ready. */
		r = req("{\"InstanceSpecification\": {\"InstanceId\": "
			"\"i-0123456789abcdef0\"}}");
		json_object_set_new(json_object_get(inst, "State"), "Code",
				    json_integer(0));
		T_INT(spx_ebs_snap_create_set(st, ACCT, r, inst, NULL,
					      1700000406, &out),
		      -1, "a pending instance");
		T_STR(code(), "IncorrectState", "IncorrectState");
		json_object_set_new(json_object_get(inst, "State"), "Code",
				    json_integer(80));
		/* A stopped instance is fine. */
		T_INT(spx_ebs_snap_create_set(st, ACCT, r, inst, NULL,
					      1700000407, &out),
		      0, "a stopped instance");
		T_INT(json_array_size(out), 3, "three again");
		json_decref(out);
		json_decref(r);
		spx_ebs_snap_list(st, ACCT, &all);
		after = json_array_size(all);
		json_decref(all);
		T_INT(after, before + 3, "only the accepted set was recorded");
	}
	json_decref(inst);
	spx_error_clear();
}

/* The record helpers the set uses: sort strings, sort objects, find. */
static void test_rec_helpers(void)
{
	json_t *a = json_pack("[s, s, s, i]", "vol-b", "vol-c", "vol-a", 7);
	json_t *o = json_pack("[{s:s}, {s:s}, {}]", "Id", "y", "Id", "x");
	char *text;

	spx_ec2_sort_by(a, NULL);
	text = json_dumps(a, JSON_COMPACT);
	/* A member that is not a string sorts as "". */
	T_STR(text, "[7,\"vol-a\",\"vol-b\",\"vol-c\"]", "strings sorted");
	free(text);
	spx_ec2_sort_by(o, "Id");
	text = json_dumps(o, JSON_COMPACT);
	T_STR(text, "[{},{\"Id\":\"x\"},{\"Id\":\"y\"}]", "objects by Id");
	free(text);
	T_OK(spx_ec2_has_string(a, "vol-b"), "has vol-b");
	T_OK(!spx_ec2_has_string(a, "vol-"), "not a prefix");
	T_OK(!spx_ec2_has_string(a, NULL), "not NULL");
	T_OK(!spx_ec2_has_string(NULL, "vol-b"), "not in no array");
	T_OK(!spx_ec2_has_string(o, "x"), "not an object's member");
	json_decref(a);
	json_decref(o);
}

int main(void)
{
	char tpl[] = "/tmp/spx-test-ebs.XXXXXX";
	char *sdir;

	tmp = mkdtemp(tpl);
	if (!tmp)
		return 2;
	sdir = spx_xprintf("dir:%s/state", tmp);
	if (spx_state_open(sdir, SPX_STATE_CREATE | SPX_STATE_UNSAFE_NOSYNC,
			   &st) < 0)
		return 2;
	zones = json_pack("[s, s]", "az1", "az2");
	env.node = "n1";
	env.zones = zones;
	env.store = tmp;
	env.lock = spx_xprintf("%s/ebs.lock", tmp);
	env.overcommit = 100000;
	test_rules();
	test_rec_helpers();
	test_lifecycle();
	test_ids();
	test_capacity();
	test_modify_capacity();
	test_snapshots();
	test_snapshot_description();
	test_snapshot_sets();
	test_create_vs_delete();
	spx_state_close(st);
	json_decref(zones);
	free((char *)env.lock);
	free(sdir);
	spx_rmtree(tmp);
	return t_done();
}
