/* lib/ec2/image.c: RegisterImage's rules (names, architectures,
 * mappings, snapshots of other accounts), the states an image takes from
 * its snapshot, names unique per account, DeregisterImage, the snapshot
 * an image keeps (InvalidSnapshot.InUse for any account), and
 * RegisterImage racing DeleteSnapshot under the node's lock. */
#include "spx.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "ec2/fault.h"
#include "ec2/image.h"
#include "ec2/snapshot.h"
#include "ec2/volume.h"
#include "file.h"
#include "id.h"
#include "state/state.h"
#include "t.h"

#define ACCT "123456789012"
#define OTHER "210987654321"
#define T0 1700000000

static struct spx_state *st;
static char *tmp, *lock;
/* The lock RegisterImage takes here (the node's, or another to pass a
 * lock the test holds). */
static const char *reg_lock;

static const char *code(void)
{
	const char *c = spx_ec2_fault_code(NULL);

	return c ? c : "-";
}

/* A completed snapshot of account (as `spx admin images import` records
 * one), its id into sid. */
static int stored_snapshot(const char *account, uint64_t bytes, char *sid,
			   size_t size)
{
	char id[SPX_ID_SIZE];
	json_t *rec = NULL;
	int rc;

	if (spx_id_new(id, sizeof(id), "snap") < 0)
		return -1;
	rc = spx_ebs_snap_record_stored(st, account, id, "n1", bytes, "t",
					NULL, T0, &rec);
	json_decref(rec);
	snprintf(sid, size, "%s", id);
	return rc;
}

/* tpl with each "%s" replaced by sid (caller frees). */
static char *subst(const char *tpl, const char *sid)
{
	struct spx_buf b = SPX_BUF_INIT;

	for (const char *p = tpl; *p; p++) {
		if (p[0] == '%' && p[1] == 's') {
			spx_buf_adds(&b, sid);
			p++;
		} else {
			spx_buf_addc(&b, *p);
		}
	}
	return spx_buf_detach(&b, NULL);
}

/* RegisterImage of account from a request's JSON, %s in it replaced by
 * sid: the ImageId into ami (or "" with the code). */
static int reg(const char *account, const char *tpl, const char *sid,
	       char *ami, size_t size)
{
	char *txt = subst(tpl, sid);
	json_t *r = json_loads(txt, 0, NULL), *rec = NULL;
	int rc;

	if (!r)
		abort();
	free(txt);
	rc = spx_ec2_image_register(st, reg_lock, account, r, NULL, NULL, T0,
				    &rec);
	snprintf(ami, size, "%s",
		 rc == 0 ? json_string_value(json_object_get(rec, "ImageId"))
			 : "");
	json_decref(rec);
	json_decref(r);
	return rc;
}

#define ROOT_MAP "\"BlockDeviceMappings\": [{\"DeviceName\": \"/dev/xvda\", " \
		 "\"Ebs\": {\"SnapshotId\": \"%s\"}}]"

static const char *field(const char *account, const char *ami, const char *k)
{
	static char buf[256];
	json_t *rec = NULL;

	if (spx_ec2_image_get(st, account, ami, &rec) < 0)
		return code();
	snprintf(buf, sizeof(buf), "%s",
		 json_string_value(json_object_get(rec, k))
			 ? json_string_value(json_object_get(rec, k))
			 : "(none)");
	json_decref(rec);
	return buf;
}

static void test_names(void)
{
	static const struct {
		const char *name;
		bool ok;
	} t[] = {
		{ "abc", true },
		{ "ab", false },
		{ "", false },
		{ "debian-12 (x86_64) [2026.12.01] @spx/o'brien_1", true },
		{ "..", false },
		{ "../../etc", true }, /* EC2 allows '.' and '/': a name is no path */
		{ "a\tb", false },
		{ "ab\xc3\xa9", false },
		{ "semi;colon", false },
		{ "star*", false },
		{ "new\nline", false },
	};
	char big[130];

	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++)
		T_INT(spx_ec2_image_name_valid(t[i].name), t[i].ok, "name '%s'",
		      t[i].name);
	memset(big, 'a', 128);
	big[128] = '\0';
	T_OK(spx_ec2_image_name_valid(big), "128 characters");
	big[128] = 'a';
	big[129] = '\0';
	T_OK(!spx_ec2_image_name_valid(big), "129 characters");
	T_OK(!spx_ec2_image_name_valid(NULL), "no name");
	T_OK(spx_ec2_image_id_wellformed("ami-0123456789abcdef0") &&
		     spx_ec2_image_id_wellformed("ami-01234567") &&
		     !spx_ec2_image_id_wellformed("ami-0123456789abcdeF0") &&
		     !spx_ec2_image_id_wellformed("snap-0123456789abcdef0") &&
		     !spx_ec2_image_id_wellformed("ami-"),
	     "ids");
}

static void test_rules(void)
{
	static const struct {
		const char *req;
		const char *code; /* NULL: registered */
	} t[] = {
		{ "{\"Name\": \"r-ok\", " ROOT_MAP "}", NULL },
		{ "{" ROOT_MAP "}", "MissingParameter" },
		{ "{\"Name\": \"x\", " ROOT_MAP "}", "InvalidAMIName.Malformed" },
		{ "{\"Name\": \"a;b\", " ROOT_MAP "}", "InvalidAMIName.Malformed" },
		{ "{\"Name\": \"r-arm\", \"Architecture\": \"arm64\", " ROOT_MAP "}",
		  "InvalidParameterValue" },
		{ "{\"Name\": \"r-i386\", \"Architecture\": \"i386\", " ROOT_MAP "}",
		  "InvalidParameterValue" },
		{ "{\"Name\": \"r-pv\", \"VirtualizationType\": \"paravirtual\", "
		  ROOT_MAP "}", "InvalidParameterValue" },
		{ "{\"Name\": \"r-loc\", \"ImageLocation\": \"b/m.xml\", " ROOT_MAP
		  "}", "InvalidParameterValue" },
		{ "{\"Name\": \"r-kernel\", \"KernelId\": \"aki-01234567\", " ROOT_MAP
		  "}", "InvalidParameterValue" },
		{ "{\"Name\": \"r-none\"}", "MissingParameter" },
		{ "{\"Name\": \"r-root\", \"RootDeviceName\": \"/dev/sda1\", "
		  ROOT_MAP "}", "InvalidBlockDeviceMapping" },
		{ "{\"Name\": \"r-badroot\", \"RootDeviceName\": \"/etc/passwd\", "
		  ROOT_MAP "}", "InvalidParameterValue" },
		{ "{\"Name\": \"r-baddev\", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/../x\", \"Ebs\": {\"SnapshotId\": \"%s\"}}]}",
		  "InvalidBlockDeviceMapping" },
		{ "{\"Name\": \"r-twice\", \"BlockDeviceMappings\": ["
		  "{\"DeviceName\": \"/dev/xvda\", \"Ebs\": {\"SnapshotId\": \"%s\"}},"
		  "{\"DeviceName\": \"/dev/xvda\", \"Ebs\": {\"VolumeSize\": 1}}]}",
		  "InvalidBlockDeviceMapping" },
		{ "{\"Name\": \"r-twice2\", \"BlockDeviceMappings\": ["
		  "{\"DeviceName\": \"/dev/xvda\", \"Ebs\": {\"SnapshotId\": \"%s\"}},"
		  "{\"DeviceName\": \"/dev/sdb\", \"NoDevice\": \"\"},"
		  "{\"DeviceName\": \"/dev/sdc\", \"NoDevice\": \"\"},"
		  "{\"DeviceName\": \"/dev/sdb\", \"NoDevice\": \"\"}]}",
		  "InvalidBlockDeviceMapping" },
		{ "{\"Name\": \"r-small\", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"SnapshotId\": \"%s\", \"VolumeSize\": 1}}]}",
		  "InvalidBlockDeviceMapping" },
		{ "{\"Name\": \"r-type\", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"SnapshotId\": \"%s\", \"VolumeType\": "
		  "\"gp9\"}}]}", "InvalidParameterValue" },
		{ "{\"Name\": \"r-io1\", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"SnapshotId\": \"%s\", \"VolumeType\": "
		  "\"io1\", \"VolumeSize\": 10}}]}", "MissingParameter" },
		{ "{\"Name\": \"r-eph\", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"SnapshotId\": \"%s\"}}, {\"DeviceName\": "
		  "\"/dev/xvdb\", \"VirtualName\": \"ephemeral0\"}]}",
		  "InvalidBlockDeviceMapping" },
		{ "{\"Name\": \"r-nosnap\", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"VolumeSize\": 8}}]}",
		  "InvalidBlockDeviceMapping" },
		{ "{\"Name\": \"r-unknown\", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"SnapshotId\": \"snap-0123456789abcdef0\"}}]}",
		  "InvalidSnapshot.NotFound" },
		{ "{\"Name\": \"r-malformed\", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"SnapshotId\": \"snap-../x\"}}]}",
		  "InvalidSnapshotID.Malformed" },
		{ "{\"Name\": \"r-desc\", \"Description\": \"a\\u0001b\", " ROOT_MAP "}",
		  "InvalidParameterValue" },
		{ "{\"Name\": \"r-data\", \"BlockDeviceMappings\": [{\"DeviceName\": "
		  "\"/dev/xvda\", \"Ebs\": {\"SnapshotId\": \"%s\", \"VolumeSize\": 8, "
		  "\"VolumeType\": \"gp3\", \"DeleteOnTermination\": false}}, "
		  "{\"DeviceName\": \"/dev/xvdb\", \"Ebs\": {\"VolumeSize\": 4}}, "
		  "{\"DeviceName\": \"/dev/xvdc\", \"NoDevice\": \"\"}]}", NULL },
	};
	char sid[SPX_ID_SIZE], ami[32];
	json_t *rec = NULL, *root;

	if (!T_OK(stored_snapshot(ACCT, 3ull << 30, sid, sizeof(sid)) == 0,
		  "a snapshot of 3 GiB"))
		return;
	for (size_t i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		int rc = reg(ACCT, t[i].req, sid, ami, sizeof(ami));

		if (t[i].code)
			T_STR(rc < 0 ? code() : "registered", t[i].code, "rule %zu",
			      i);
		else
			T_STR(rc < 0 ? code() : "registered", "registered",
			      "rule %zu", i);
	}
	/* What r-ok recorded, as EC2 shows it. */
	if (!T_OK(reg(ACCT, "{\"Name\": \"r-shape\", \"Description\": \"d\", "
			    "\"BootMode\": \"uefi\", " ROOT_MAP "}",
		      sid, ami, sizeof(ami)) == 0,
		  "registered"))
		return;
	T_INT(spx_ec2_image_get(st, ACCT, ami, &rec), 0, "read back");
	T_STR(json_string_value(json_object_get(rec, "State")), "available",
	      "available at once: the snapshot is completed");
	T_STR(json_string_value(json_object_get(rec, "Architecture")), "x86_64",
	      "x86_64");
	T_STR(json_string_value(json_object_get(rec, "RootDeviceName")),
	      "/dev/xvda", "the default root device");
	T_STR(json_string_value(json_object_get(rec, "BootMode")), "uefi", "uefi");
	T_STR(json_string_value(json_object_get(rec, "CreationDate")),
	      "2023-11-14T22:13:20.000Z", "CreationDate");
	T_STR(json_string_value(json_object_get(rec, "ImageLocation")),
	      ACCT "/r-shape", "ImageLocation");
	T_OK(json_is_false(json_object_get(rec, "Public")), "not public");
	root = json_object_get(json_array_get(json_object_get(rec,
							      "BlockDeviceMappings"),
					      0),
			       "Ebs");
	T_STR(json_string_value(json_object_get(root, "SnapshotId")), sid,
	      "the snapshot");
	T_INT(json_integer_value(json_object_get(root, "VolumeSize")), 3,
	      "its size by default");
	T_OK(json_is_true(json_object_get(root, "DeleteOnTermination")),
	     "DeleteOnTermination");
	{
		json_t *it = spx_ec2_image_item(rec);

		T_OK(!json_object_get(it, "SpxSnapOwners") &&
			     !json_object_get(it, "SpxSha256"),
		     "the item shows no Spx member");
		json_decref(it);
	}
	json_decref(rec);
	/* Names are per account. */
	T_INT(reg(ACCT, "{\"Name\": \"r-shape\", " ROOT_MAP "}", sid, ami,
		  sizeof(ami)),
	      -1, "a name twice");
	T_STR(code(), "InvalidAMIName.Duplicate", "InvalidAMIName.Duplicate");
}

/* The snapshot of another account: NotFound unless it is shared; a
 * shared one is kept by the other's image; an image is its owner's. */
static void test_accounts(void)
{
	char sid[SPX_ID_SIZE], ami[32], mine[32];
	json_t *r, *list = NULL;

	if (!T_OK(stored_snapshot(OTHER, 1ull << 30, sid, sizeof(sid)) == 0,
		  "another account's snapshot"))
		return;
	T_INT(reg(ACCT, "{\"Name\": \"acct-a\", " ROOT_MAP "}", sid, ami,
		  sizeof(ami)),
	      -1, "not shared: refused");
	T_STR(code(), "InvalidSnapshot.NotFound", "InvalidSnapshot.NotFound");
	r = json_pack("{s:s, s:{s:[{s:s}]}}", "SnapshotId", sid,
		      "CreateVolumePermission", "Add", "UserId", ACCT);
	T_INT(spx_ebs_snap_modify_attr(st, OTHER, r), 0, "shared");
	json_decref(r);
	T_INT(reg(ACCT, "{\"Name\": \"acct-a\", " ROOT_MAP "}", sid, ami,
		  sizeof(ami)),
	      0, "shared: registered");
	/* The same name in another account is another image. */
	T_INT(reg(OTHER, "{\"Name\": \"acct-a\", " ROOT_MAP "}", sid, mine,
		  sizeof(mine)),
	      0, "the same name in the other account");
	T_STR(field(OTHER, ami, "State"), "InvalidAMIID.NotFound",
	      "another account's image does not exist");
	T_OK(strstr(spx_errmsg(), "The image id '[ami-") == spx_errmsg(),
	     "as EC2 words it: %s", spx_errmsg());
	T_INT(spx_ec2_image_deregister(st, OTHER, ami), -1,
	      "nor can it be deregistered");
	T_STR(code(), "InvalidAMIID.NotFound", "InvalidAMIID.NotFound");
	T_INT(spx_ec2_image_deregister(st, ACCT, "ami-../../x"), -1, "malformed");
	T_STR(code(), "InvalidAMIID.Malformed", "InvalidAMIID.Malformed");
	T_INT(spx_ec2_image_list(st, OTHER, &list), 0, "the other's list");
	T_INT(json_array_size(list), 1, "holds its own image only");
	json_decref(list);
	T_INT(spx_ebs_snap_delete(st, lock, OTHER, sid), -1,
	      "the owner's own image keeps it");
	T_STR(code(), "InvalidSnapshot.InUse", "InvalidSnapshot.InUse");
	T_OK(strstr(spx_errmsg(), mine) != NULL, "naming that image: %s",
	     spx_errmsg());
	T_INT(spx_ec2_image_deregister(st, OTHER, mine), 0, "deregistered");
	/* Another account's image does not keep it, as on AWS: else the
	 * account it was shared with could keep the owner from deleting it
	 * for good, with an image the owner can neither see nor
	 * deregister. The share withdrawn first, as the owner would. */
	r = json_pack("{s:s, s:{s:[{s:s}]}}", "SnapshotId", sid,
		      "CreateVolumePermission", "Remove", "UserId", ACCT);
	T_INT(spx_ebs_snap_modify_attr(st, OTHER, r), 0, "no longer shared");
	json_decref(r);
	T_INT(spx_ebs_snap_delete(st, lock, OTHER, sid), 0,
	      "the owner deletes it under the other's image");
	T_INT(spx_ec2_image_deregister(st, ACCT, ami), 0,
	      "that image is still its own owner's to deregister");
	T_INT(spx_ec2_image_deregister(st, ACCT, ami), -1, "once");
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

/* A pending snapshot of a new volume, its id into sid. */
static int pending_snapshot(char *sid, size_t size)
{
	static const struct spx_ebs_env env0 = { "n1", NULL, "/", NULL, 100000 };
	struct spx_ebs_env env = env0;
	json_t *zones = json_pack("[s]", "az1"), *vol = NULL, *snap = NULL, *r;
	int rc = -1;

	env.zones = zones;
	env.lock = lock;
	r = json_pack("{s:s, s:i}", "AvailabilityZone", "az1", "Size", 2);
	if (spx_ebs_create(st, &env, ACCT, r, NULL, T0, &vol) == 0) {
		json_t *sr = json_pack("{s:O}", "VolumeId",
				       json_object_get(vol, "VolumeId"));
		char *k = spx_xprintf("volumes/%s/%s", ACCT,
				      json_string_value(json_object_get(vol, "VolumeId")));

		/* available, as the agent would make it */
		json_object_set_new(vol, "State", json_string("available"));
		{
			char *v = json_dumps(vol, 0);

			spx_state_put(st, k, v, strlen(v), 0, NULL);
			free(v);
		}
		free(k);
		if (spx_ebs_snap_create(st, ACCT, sr, NULL, T0, &snap) == 0) {
			snprintf(sid, size, "%s",
				 json_string_value(json_object_get(snap, "SnapshotId")));
			rc = 0;
		}
		json_decref(sr);
	}
	json_decref(snap);
	json_decref(vol);
	json_decref(r);
	json_decref(zones);
	return rc;
}

static void test_states(void)
{
	char sid[SPX_ID_SIZE], ami[32], sid2[32], ami2[32];
	struct spx_ebs_work w;

	if (!T_OK(pending_snapshot(sid, sizeof(sid)) == 0, "a pending snapshot"))
		return;
	T_INT(reg(ACCT, "{\"Name\": \"st-pending\", " ROOT_MAP "}", sid, ami,
		  sizeof(ami)),
	      0, "registered from a pending snapshot");
	T_STR(field(ACCT, ami, "State"), "pending", "pending");
	T_INT(snap_work(sid, &w), 1, "the snapshot's step");
	T_INT(spx_ebs_snap_done(st, &w, true, false, NULL), 0, "completed");
	T_STR(field(ACCT, ami, "State"), "available", "then available");

	if (!T_OK(pending_snapshot(sid2, sizeof(sid2)) == 0, "another"))
		return;
	T_INT(reg(ACCT, "{\"Name\": \"st-failing\", " ROOT_MAP "}", sid2, ami2,
		  sizeof(ami2)),
	      0, "registered");
	T_INT(snap_work(sid2, &w), 1, "its step");
	T_INT(spx_ebs_snap_done(st, &w, false, true, "the store is away"), 0,
	      "the snapshot fails");
	T_STR(field(ACCT, ami2, "State"), "failed", "the image failed");
	{
		json_t *rec = NULL;

		spx_ec2_image_get(st, ACCT, ami2, &rec);
		T_OK(strstr(json_string_value(json_object_get(
				    json_object_get(rec, "StateReason"), "Message")),
			    "the store is away") != NULL,
		     "with the snapshot's reason");
		json_decref(rec);
	}
	T_INT(reg(ACCT, "{\"Name\": \"st-error\", " ROOT_MAP "}", sid2, ami2,
		  sizeof(ami2)),
	      -1, "a snapshot in error makes no image");
	T_STR(code(), "IncorrectState", "IncorrectState");

	/* One unreadable record never breaks a listing. */
	{
		char *k = spx_xprintf("images/%s/ami-0000000000000000f", ACCT);
		json_t *list = NULL;
		size_t before;

		spx_ec2_image_list(st, ACCT, &list);
		before = json_array_size(list);
		json_decref(list);
		spx_state_put(st, k, "{not json", 9, 0, NULL);
		T_INT(spx_ec2_image_list(st, ACCT, &list), 0,
		      "a list past an unreadable record");
		T_INT(json_array_size(list), before, "with the others in it");
		json_decref(list);
		ami2[0] = '\0';
		T_INT(spx_ec2_image_using(st, ACCT, sid, ami2, sizeof(ami2)), 0,
		      "in-use check past it");
		T_STR(ami2, ami, "finds the image");
		spx_state_delete(st, k, 0);
		free(k);
	}
}

struct racer {
	const char *sid;
	int rc;
	char code[64], ami[32];
};

static void *register_from(void *arg)
{
	struct racer *r = arg;

	r->rc = reg(ACCT, "{\"Name\": \"race-%s\", " ROOT_MAP "}", r->sid,
		    r->ami, sizeof(r->ami));
	snprintf(r->code, sizeof(r->code), "%s", r->rc < 0 ? code() : "");
	return NULL;
}

static void *delete_snap(void *arg)
{
	struct racer *r = arg;

	r->rc = spx_ebs_snap_delete(st, lock, ACCT, r->sid);
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

static size_t images_of(const char *sid)
{
	char ami[32];

	return spx_ec2_image_using(st, ACCT, sid, ami, sizeof(ami)) == 0 && *ami;
}

/* A DeleteSnapshot between RegisterImage's start and its record: the
 * image must not be recorded; and a DeleteSnapshot after it is refused. */
static void test_register_vs_delete(void)
{
	struct racer r = { 0 }, d = { 0 };
	char sid[SPX_ID_SIZE], *elsewhere = spx_xprintf("%s/other.lock", tmp);
	pthread_t th;
	int fd;

	if (!T_OK(stored_snapshot(ACCT, 1ull << 30, sid, sizeof(sid)) == 0,
		  "a snapshot"))
		goto out;
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (!T_OK(fd >= 0 && flock(fd, LOCK_EX) == 0, "the node's lock held"))
		goto out;
	r.sid = sid;
	pthread_create(&th, NULL, register_from, &r);
	T_OK(lock_waited(lock), "RegisterImage waits for the lock");
	T_INT(spx_ebs_snap_delete(st, elsewhere, ACCT, sid), 0,
	      "the snapshot deleted meanwhile");
	flock(fd, LOCK_UN);
	pthread_join(th, NULL);
	T_INT(r.rc, -1, "RegisterImage refused");
	T_STR(r.code, "InvalidSnapshot.NotFound", "InvalidSnapshot.NotFound");
	T_INT(images_of(sid), 0, "no image of it was recorded");

	/* The other order: registered first, the deletion refused. */
	if (!T_OK(stored_snapshot(ACCT, 1ull << 30, sid, sizeof(sid)) == 0,
		  "another"))
		goto out_fd;
	flock(fd, LOCK_EX);
	d.sid = sid;
	pthread_create(&th, NULL, delete_snap, &d);
	T_OK(lock_waited(lock), "DeleteSnapshot waits for the lock");
	reg_lock = elsewhere;
	r.rc = reg(ACCT, "{\"Name\": \"race-first\", " ROOT_MAP "}", sid, r.ami,
		   sizeof(r.ami));
	T_INT(r.rc, 0, "RegisterImage first (past the lock this test holds: "
		       "lock elsewhere)");
	reg_lock = lock;
	flock(fd, LOCK_UN);
	pthread_join(th, NULL);
	T_INT(d.rc, -1, "then the deletion is refused");
	T_STR(d.code, "InvalidSnapshot.InUse", "InvalidSnapshot.InUse");

	/* Many of both at once: every outcome is one of the two orders. */
	for (int round = 0; round < 20; round++) {
		struct racer a = { 0 }, b = { 0 };
		pthread_t ta, tb;
		char s2[SPX_ID_SIZE];

		if (stored_snapshot(ACCT, 1ull << 30, s2, sizeof(s2)) < 0)
			break;
		a.sid = s2;
		b.sid = s2;
		pthread_create(&ta, NULL, register_from, &a);
		pthread_create(&tb, NULL, delete_snap, &b);
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		if (!T_OK((a.rc == 0 && b.rc < 0 &&
			   !strcmp(b.code, "InvalidSnapshot.InUse")) ||
				  (a.rc < 0 && b.rc == 0 &&
				   !strcmp(a.code, "InvalidSnapshot.NotFound") &&
				   !images_of(s2)),
			  "round %d: register %d %s, delete %d %s", round, a.rc,
			  a.code, b.rc, b.code))
			break;
	}
out_fd:
	close(fd);
out:
	free(elsewhere);
}

int main(void)
{
	char tpl[] = "/tmp/spx-test-image.XXXXXX";
	char *sdir;

	tmp = mkdtemp(tpl);
	if (!tmp)
		return 2;
	sdir = spx_xprintf("dir:%s/state", tmp);
	if (spx_state_open(sdir, SPX_STATE_CREATE | SPX_STATE_UNSAFE_NOSYNC,
			   &st) < 0)
		return 2;
	lock = spx_xprintf("%s/ebs.lock", tmp);
	reg_lock = lock;
	test_names();
	test_rules();
	test_accounts();
	test_states();
	test_register_vs_delete();
	spx_state_close(st);
	free(lock);
	free(sdir);
	spx_rmtree(tmp);
	return t_done();
}
