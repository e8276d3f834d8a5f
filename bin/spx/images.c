/* spx admin images import | ls | rm: the operator's side of AMIs.
 *
 * import runs the tools an operator would, each logged on stderr as it
 * starts: `spx-vol import --id VOL FILE` (raw or qcow2, qemu-img's
 * progress on a terminal), `spx-vol snapshot --id SNAP VOL`, then records
 * the snapshot and registers the image as RegisterImage does (the same
 * lib/ec2 calls, under the node's EBS lock), and removes the volume with
 * `spx-vol rm VOL`. A failure midway leaves no half image: the volume is
 * always removed, and the snapshot (record and manifest) when the image
 * could not be registered. The SHA-256 of FILE is recorded on the image
 * (the tag spx:sha256, and SpxSha256 in the record). */
#include "spx.h"

#include <openssl/evp.h>
#include <signal.h>

#include "auth/cred.h"
#include "cli.h"
#include "conf/conf.h"
#include "ec2/fault.h"
#include "ec2/image.h"
#include "ec2/rec.h"
#include "ec2/snapshot.h"
#include "file.h"
#include "hex.h"
#include "id.h"
#include "node/agent.h"
#include "node/node.h"
#include "node/svc.h"
#include "print.h"
#include "proc.h"
#include "state/state.h"
#include "vol/vol.h"

/* What every verb opens. */
struct img {
	struct spx_node_loc loc;
	struct spx_conf conf;
	struct spx_state *st;
	char account[32];
	char *lock;
};

static void img_close(struct img *m)
{
	spx_state_close(m->st);
	free(m->lock);
	spx_conf_release(&m->conf);
	spx_node_loc_release(&m->loc);
}

/* The node, its records, and the account: --account, else the admin's.
 * want_account false: no account needed (NULL means all). */
static int img_open(const struct spx_args *a, struct img *m, bool want_account)
{
	const char *acct = spx_arg(a, "account");
	struct spx_creds *creds = NULL;
	struct spx_cred admin;
	int rc;

	memset(m, 0, sizeof(*m));
	if (acct && !spx_account_id_valid(acct)) {
		spx_warn("%s: '%s' is not an account id (12 digits)",
			 a->verb->name, acct);
		return SPX_USAGE;
	}
	if ((rc = spx_cli_load(a, &m->loc, &m->conf)))
		return rc;
	if (acct) {
		snprintf(m->account, sizeof(m->account), "%s", acct);
	} else if (want_account) {
		if (spx_cred_open(m->conf.credentials.file, &creds) < 0 ||
		    spx_cred_first(creds, &admin) < 0) {
			spx_warn("%s: %s", a->verb->name, spx_errmsg());
			spx_cred_close(creds);
			rc = spx_errstatus();
			goto fail;
		}
		snprintf(m->account, sizeof(m->account), "%s", admin.account);
		memset(&admin, 0, sizeof(admin));
		spx_cred_close(creds);
	}
	if (spx_mkdirs(m->conf.paths.run, 0700) < 0 ||
	    spx_state_open(m->conf.paths.state, SPX_STATE_CREATE, &m->st) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		rc = spx_errstatus();
		goto fail;
	}
	m->lock = spx_path_join(m->conf.paths.run, "ebs.lock");
	return 0;
fail:
	spx_conf_release(&m->conf);
	spx_node_loc_release(&m->loc);
	return rc;
}

/* The SHA-256 of file as hex into out (65 bytes). */
static int file_sha256(const char *file, char *out)
{
	unsigned char buf[1 << 16], md[32];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	ssize_t n = -1;
	unsigned len = 0;

	if (fd < 0) {
		EVP_MD_CTX_free(ctx);
		return spx_error_errno(errno == ENOENT ? SPX_NO : SPX_FAIL,
				       "cannot open '%s'", file);
	}
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1)
		while ((n = read(fd, buf, sizeof(buf))) > 0 ||
		       (n < 0 && errno == EINTR))
			if (n > 0 && EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)
				break;
	if (n < 0) {
		int e = errno;

		close(fd);
		EVP_MD_CTX_free(ctx);
		errno = e;
		return spx_error_errno(SPX_FAIL, "cannot read '%s'", file);
	}
	close(fd);
	if (n != 0 || EVP_DigestFinal_ex(ctx, md, &len) != 1 || len != 32) {
		EVP_MD_CTX_free(ctx);
		return spx_error(SPX_FAIL, "cannot hash '%s'", file);
	}
	EVP_MD_CTX_free(ctx);
	spx_hex_encode(md, 32, out);
	return 0;
}

/* Run spx-vol VERB --root ROOT ARGS... (stdout quiet: ours carries only
 * the answer; stderr, where progress goes, kept), said on stderr first.
 * Its exit status, or -1 when it could not run or was killed. */
static int spx_vol(const struct img *m, const char *verb, const char *a1,
		   const char *a2, const char *a3, const char *a4)
{
	char *prog = spx_find_prog("spx-vol");
	char *argv[] = { prog, (char *)verb, "--root", m->loc.root,
			 (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL };
	int rc;

	if (!prog)
		return spx_error(SPX_FAIL, "cannot find spx-vol");
	fprintf(stderr, "spx: run: spx-vol %s --root %s", verb, m->loc.root);
	for (size_t i = 4; argv[i]; i++)
		fprintf(stderr, " %s", argv[i]);
	fputc('\n', stderr);
	rc = spx_run(argv, true);
	free(prog);
	return rc;
}

static const char *boot_mode(const char *arg)
{
	if (!arg || !strcmp(arg, "bios") || !strcmp(arg, "legacy-bios"))
		return "legacy-bios";
	if (!strcmp(arg, "uefi"))
		return "uefi";
	return NULL;
}

static void print_image(const struct spx_args *a, const json_t *rec)
{
	if (spx_flag(a, "json")) {
		json_t *it = spx_ec2_image_item(rec);

		json_dumpf(it, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
		json_decref(it);
	} else {
		printf("%s\n", spx_ec2_str0(rec, "ImageId"));
	}
}

int cmd_admin_images_import(const struct spx_args *a)
{
	const char *file = a->argv[0], *name = spx_arg(a, "name");
	const char *desc = spx_arg(a, "description");
	const char *boot = boot_mode(spx_arg(a, "boot-mode"));
	char vol[SPX_ID_SIZE], snap[SPX_ID_SIZE], ami[64], sha[65];
	struct sigaction ign = { .sa_handler = SIG_IGN }, old[3];
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	json_t *req = NULL, *tags = NULL, *srec = NULL, *rec = NULL;
	bool made_vol = false, made_snap = false;
	struct spx_vol_store *vs;
	struct spx_vol_info vi;
	struct img m;
	char *dir, *sdesc;
	int rc, r;

	if (!name || !spx_ec2_image_name_valid(name)) {
		spx_warn("%s: --name must be 3 to 128 letters, digits, spaces "
			 "or ( ) [ ] . / - ' @ _",
			 a->verb->name);
		return SPX_USAGE;
	}
	if (!boot) {
		spx_warn("%s: --boot-mode is bios or uefi", a->verb->name);
		return SPX_USAGE;
	}
	if (spx_ec2_desc_check(desc, SPX_EC2_IMAGE_DESC_MAX) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		return SPX_USAGE;
	}
	if ((rc = img_open(a, &m, true)))
		return rc;
	/* A name taken is refused before any work. RegisterImage checks it
	 * again under the lock, at the end. */
	if (spx_ec2_image_by_name(m.st, m.account, name, ami, sizeof(ami)) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		rc = spx_errstatus();
		goto out_close;
	}
	if (*ami) {
		spx_warn("%s: account %s has an image named '%s' (%s)",
			 a->verb->name, m.account, name, ami);
		rc = SPX_NO;
		goto out_close;
	}
	if (file_sha256(file, sha) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		rc = spx_errstatus();
		goto out_close;
	}
	if (spx_id_new(vol, sizeof(vol), "vol") < 0 ||
	    spx_id_new(snap, sizeof(snap), "snap") < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		rc = SPX_FAIL;
		goto out_close;
	}
	/* Ctrl-C stops the tool at work (it has the signal's default
	 * action), and this process then cleans up. */
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &ign, &old[i]);
	r = spx_vol(&m, "import", "--id", vol, file, NULL);
	/* A failed import removes its volume itself, unless it was killed. */
	made_vol = true;
	if (r != 0) {
		spx_warn("%s: spx-vol import failed%s%s", a->verb->name,
			 r < 0 ? ": " : "", r < 0 ? spx_errmsg() : "");
		rc = r == SPX_USAGE ? SPX_USAGE : r == SPX_NO ? SPX_NO : SPX_FAIL;
		goto out;
	}
	r = spx_vol(&m, "snapshot", "--id", snap, vol, NULL);
	if (r != 0) {
		/* It may have stored its manifest before it failed. */
		made_snap = true;
		spx_warn("%s: spx-vol snapshot failed%s%s", a->verb->name,
			 r < 0 ? ": " : "", r < 0 ? spx_errmsg() : "");
		rc = SPX_FAIL;
		goto out;
	}
	made_snap = true;
	dir = spx_path_join(m.conf.paths.data, "vol");
	rc = spx_vol_store_open(dir, 0, &vs);
	free(dir);
	if (rc == 0) {
		rc = spx_vol_info(vs, vol, &vi);
		spx_vol_store_close(vs);
	}
	if (rc < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		rc = SPX_FAIL;
		goto out;
	}
	sdesc = spx_xprintf("spx admin images import: %s", name);
	tags = json_pack("[{s:s, s:s}]", "Key", "spx:sha256", "Value", sha);
	rc = spx_ebs_snap_record_stored(m.st, m.account, snap, m.conf.node,
					vi.size, sdesc, NULL, time(NULL), &srec);
	free(sdesc);
	if (rc == 0) {
		req = json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:{s:s}}]}",
				"Name", name, "BootMode", boot, "Architecture",
				"x86_64", "RootDeviceName",
				SPX_EC2_IMAGE_ROOT_DEFAULT,
				"BlockDeviceMappings", "DeviceName",
				SPX_EC2_IMAGE_ROOT_DEFAULT, "Ebs", "SnapshotId",
				snap);
		if (desc)
			json_object_set_new(req, "Description", json_string(desc));
		rc = spx_ec2_image_register(m.st, m.lock, m.account, req, tags,
					    sha, time(NULL), &rec);
	}
	if (rc < 0) {
		const char *code = spx_ec2_fault_code(NULL);

		spx_warn("%s: %s%s%s", a->verb->name, code ? code : "",
			 code ? ": " : "", spx_errmsg());
		rc = code && strstr(code, "Duplicate") ? SPX_NO : SPX_FAIL;
		goto out;
	}
	made_snap = false; /* the image's now */
	print_image(a, rec);
	rc = SPX_OK;
out:
	if (made_snap) {
		if (spx_ebs_snap_unrecord(m.st, m.account, snap) < 0)
			spx_warn("%s: %s", a->verb->name, spx_errmsg());
		if (spx_vol(&m, "snapshot-rm", snap, NULL, NULL, NULL) > 1)
			spx_warn("%s: could not remove snapshot %s",
				 a->verb->name, snap);
	}
	if (made_vol && spx_vol(&m, "rm", vol, NULL, NULL, NULL) > 1)
		spx_warn("%s: could not remove the temporary volume %s",
			 a->verb->name, vol);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
out_close:
	json_decref(req);
	json_decref(tags);
	json_decref(srec);
	json_decref(rec);
	img_close(&m);
	return rc;
}

int cmd_admin_images_ls(const struct spx_args *a)
{
	struct spx_table *t;
	json_t *all = NULL, *r;
	struct img m;
	size_t i;
	int rc;

	if ((rc = img_open(a, &m, false)))
		return rc;
	if (spx_ec2_image_list(m.st, *m.account ? m.account : NULL, &all) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	t = spx_table_new("IMAGE", "NAME", "STATE", "OWNER", "SNAPSHOT",
			  "SIZE(GiB)", "BOOT", "CREATED", "SHA256", NULL);
	json_array_foreach(all, i, r) {
		const json_t *ebs = json_object_get(
			json_array_get(json_object_get(r, "BlockDeviceMappings"), 0),
			"Ebs");

		spx_table_row(t);
		spx_table_str(t, spx_ec2_str0(r, "ImageId"));
		spx_table_str(t, spx_ec2_str0(r, "Name"));
		spx_table_str(t, spx_ec2_str0(r, "State"));
		spx_table_str(t, spx_ec2_str0(r, "OwnerId"));
		spx_table_str(t, spx_ec2_str0(ebs, "SnapshotId"));
		spx_table_int(t, json_integer_value(json_object_get(ebs, "VolumeSize")));
		spx_table_str(t, spx_ec2_str0(r, "BootMode"));
		spx_table_str(t, spx_ec2_str0(r, "CreationDate"));
		spx_table_str(t, *spx_ec2_str0(r, "SpxSha256")
					 ? spx_ec2_str0(r, "SpxSha256")
					 : "-");
	}
	rc = spx_table_print(t, stdout, spx_flag(a, "json")) < 0 ? SPX_FAIL
								   : SPX_OK;
	spx_table_free(t);
out:
	json_decref(all);
	img_close(&m);
	return rc;
}

int cmd_admin_images_rm(const struct spx_args *a)
{
	const char *id = a->argv[0];
	json_t *all = NULL, *r, *hit = NULL;
	char snap[SPX_ID_SIZE] = "";
	struct img m;
	size_t i;
	int rc;

	if (!spx_ec2_image_id_wellformed(id)) {
		spx_warn("%s: '%s' is not an image id (ami-...)", a->verb->name,
			 id);
		return SPX_USAGE;
	}
	if ((rc = img_open(a, &m, false)))
		return rc;
	/* Whatever account holds it, unless --account says which. */
	if (spx_ec2_image_list(m.st, *m.account ? m.account : NULL, &all) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	json_array_foreach(all, i, r)
		if (!strcmp(spx_ec2_str0(r, "ImageId"), id))
			hit = r;
	if (!hit) {
		spx_warn("%s: no image '%s'", a->verb->name, id);
		rc = SPX_NO;
		goto out;
	}
	snprintf(m.account, sizeof(m.account), "%s", spx_ec2_str0(hit, "OwnerId"));
	snprintf(snap, sizeof(snap), "%s",
		 spx_ec2_str0(json_object_get(json_array_get(json_object_get(
							      hit,
							      "BlockDeviceMappings"),
						      0),
					      "Ebs"),
			      "SnapshotId"));
	if (spx_ec2_image_deregister(m.st, m.account, id) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	/* Its snapshot too, when asked and it is the account's own: marked
	 * deleted, then removed by the node agent. */
	if (spx_flag(a, "delete-snapshot") && *snap &&
	    spx_ebs_snap_delete(m.st, m.lock, m.account, snap) < 0) {
		spx_warn("%s: %s: %s", a->verb->name, snap, spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	if (spx_flag(a, "delete-snapshot"))
		spx_agent_wake(m.conf.paths.run);
	rc = SPX_OK;
out:
	json_decref(all);
	img_close(&m);
	return rc;
}
