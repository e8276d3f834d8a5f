/* spx-obj mb | rb | ls */
#include "spx.h"

#include <jansson.h>

#include "objcli.h"
#include "print.h"

int cmd_mb(const struct spx_args *a)
{
	struct objcli c;
	int rc = objcli_open(a, &c);

	if (rc)
		return rc;
	rc = spx_obj_bucket_create(c.s, a->argv[0], c.owner, c.region);
	if (rc < 0)
		rc = objcli_fail(a, rc);
	objcli_close(&c);
	return rc;
}

int cmd_rb(const struct spx_args *a)
{
	struct objcli c;
	int rc = objcli_open_bucket(a, &c, a->argv[0]);

	if (rc)
		return rc;
	rc = spx_obj_bucket_delete(c.s, &c.b);
	if (rc < 0)
		rc = objcli_fail(a, rc);
	objcli_close(&c);
	return rc;
}

int cmd_versioning(const struct spx_args *a)
{
	static const char *const names[] = { "", "Enabled", "Suspended" };
	struct objcli c;
	enum spx_obj_versioning v = SPX_OBJ_UNVERSIONED;
	int rc;

	if (a->argc > 1) {
		if (!strcmp(a->argv[1], "enable"))
			v = SPX_OBJ_VERSIONING_ENABLED;
		else if (!strcmp(a->argv[1], "suspend"))
			v = SPX_OBJ_VERSIONING_SUSPENDED;
		else {
			spx_warn("versioning: '%s': say enable or suspend",
				 a->argv[1]);
			return SPX_USAGE;
		}
	}
	if ((rc = objcli_open_bucket(a, &c, a->argv[0])))
		return rc;
	if (v != SPX_OBJ_UNVERSIONED)
		rc = spx_obj_bucket_set_versioning(c.s, &c.b, v);
	else
		printf("%s\n", c.b.versioning == SPX_OBJ_UNVERSIONED
				       ? "Unversioned"
				       : names[c.b.versioning]);
	if (rc < 0)
		rc = objcli_fail(a, rc);
	objcli_close(&c);
	return rc;
}

static void iso_time(int64_t ms, char *out, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + strlen(out), n - strlen(out), ".%03dZ", (int)(ms % 1000));
}

static int ls_buckets(const struct spx_args *a, struct objcli *c)
{
	struct spx_obj_bucket *b;
	size_t n;
	int rc = spx_obj_bucket_list(c->s, &b, &n);

	if (rc < 0)
		return objcli_fail(a, rc);
	if (spx_flag(a, "json")) {
		struct spx_table *t = spx_table_new("NAME", "OWNER", "REGION",
						    "CREATED", NULL);
		char ts[40];

		for (size_t i = 0; i < n; i++) {
			spx_table_row(t);
			spx_table_str(t, b[i].name);
			spx_table_str(t, b[i].owner);
			spx_table_str(t, b[i].region);
			iso_time(b[i].created_ms, ts, sizeof(ts));
			spx_table_str(t, ts);
		}
		rc = spx_table_print(t, stdout, true) < 0 ? SPX_FAIL : 0;
		spx_table_free(t);
	} else {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", b[i].name);
	}
	free(b);
	return rc;
}

/* ls --versions: every version and delete marker, by key then newest
 * first, one per line: KEY VERSION-ID latest|- SIZE|DELETE-MARKER. */
static int ls_versions(const struct spx_args *a, struct objcli *c,
		       size_t left, json_t *arr)
{
	struct spx_obj_versions_opts o = { 0 };
	struct spx_obj_versions l;
	char *km = spx_arg(a, "start-after") ? spx_strdup(spx_arg(a, "start-after"))
					     : NULL;
	char vm[SPX_OBJ_VID_SIZE + 4] = "";
	int rc = 0;

	o.prefix = spx_arg(a, "prefix");
	o.delimiter = spx_arg(a, "delimiter");
	while (left) {
		o.key_marker = km;
		o.vid_marker = vm[0] ? vm : NULL;
		o.max = left < 1000 ? left : 1000;
		if ((rc = spx_obj_list_versions(c->s, &c->b, &o, &l)) < 0) {
			rc = objcli_fail(a, rc);
			break;
		}
		for (size_t i = 0; i < l.nprefixes; i++) {
			if (arr)
				json_array_append_new(arr, json_pack("{s:s}", "prefix",
								     l.prefixes[i]));
			else
				printf("%s\n", l.prefixes[i]);
		}
		for (size_t i = 0; i < l.n; i++) {
			const struct spx_obj_version *v = &l.v[i];
			char ts[40];

			iso_time(v->mtime_ms, ts, sizeof(ts));
			if (arr)
				json_array_append_new(
					arr, json_pack("{s:s,s:s,s:b,s:b,s:I,s:s,s:s}",
						       "key", v->key, "version_id",
						       spx_obj_vid_name(v->vid),
						       "latest", (int)v->latest,
						       "delete_marker",
						       (int)v->delete_marker, "size",
						       (json_int_t)v->size, "etag",
						       v->etag, "mtime", ts));
			else if (v->delete_marker)
				printf("%s %s %s DELETE-MARKER\n", v->key,
				       spx_obj_vid_name(v->vid),
				       v->latest ? "latest" : "-");
			else
				printf("%s %s %s %llu\n", v->key,
				       spx_obj_vid_name(v->vid),
				       v->latest ? "latest" : "-",
				       (unsigned long long)v->size);
		}
		left -= l.n + l.nprefixes;
		free(km);
		km = l.truncated ? spx_strdup(l.next_key) : NULL;
		snprintf(vm, sizeof(vm), "%s",
			 l.truncated && !l.next_is_prefix
				 ? spx_obj_vid_name(l.next_vid)
				 : "");
		spx_obj_versions_release(&l);
		if (!km)
			break;
	}
	free(km);
	return rc;
}

int cmd_ls(const struct spx_args *a)
{
	struct objcli c;
	struct spx_obj_list_opts o = { 0 };
	struct spx_obj_list l;
	long long max;
	size_t left;
	char *after = NULL;
	bool json = spx_flag(a, "json");
	json_t *arr = json ? json_array() : NULL;
	int rc;

	if (spx_arg_int(a, "max", 1, 1000000000, 0, &max) < 0) {
		spx_warn("ls: %s", spx_errmsg());
		json_decref(arr);
		return SPX_USAGE;
	}
	if ((rc = objcli_open(a, &c))) {
		json_decref(arr);
		return rc;
	}
	if (!a->argc) {
		rc = ls_buckets(a, &c);
		goto out;
	}
	if ((rc = objcli_bucket(a, &c, a->argv[0], &c.b)))
		goto out;
	if (spx_flag(a, "versions")) {
		rc = ls_versions(a, &c, max ? (size_t)max : SIZE_MAX, arr);
		if (!rc && json) {
			json_dumpf(arr, stdout, JSON_INDENT(2));
			putchar('\n');
		}
		goto out;
	}
	o.prefix = spx_arg(a, "prefix");
	o.delimiter = spx_arg(a, "delimiter");
	after = spx_arg(a, "start-after") ? spx_strdup(spx_arg(a, "start-after")) : NULL;
	left = max ? (size_t)max : SIZE_MAX;
	/* Page through, 1000 at a time, as an S3 client would. */
	while (left) {
		o.after = after;
		o.max = left < 1000 ? left : 1000;
		if ((rc = spx_obj_list(c.s, &c.b, &o, &l)) < 0) {
			rc = objcli_fail(a, rc);
			goto out;
		}
		for (size_t i = 0; i < l.nprefixes; i++) {
			if (json)
				json_array_append_new(arr, json_pack("{s:s}", "prefix",
								     l.prefixes[i]));
			else
				printf("%s\n", l.prefixes[i]);
		}
		for (size_t i = 0; i < l.n; i++) {
			char ts[40];

			iso_time(l.v[i].mtime_ms, ts, sizeof(ts));
			if (json)
				json_array_append_new(
					arr, json_pack("{s:s,s:I,s:s,s:s}", "key",
						       l.v[i].key, "size",
						       (json_int_t)l.v[i].size, "etag",
						       l.v[i].etag, "mtime", ts));
			else
				printf("%s\n", l.v[i].key);
		}
		left -= l.n + l.nprefixes;
		free(after);
		after = l.truncated ? spx_strdup(l.next) : NULL;
		spx_obj_list_release(&l);
		if (!after)
			break;
	}
	rc = 0;
	if (json) {
		json_dumpf(arr, stdout, JSON_INDENT(2));
		putchar('\n');
	}
out:
	json_decref(arr);
	free(after);
	objcli_close(&c);
	return rc;
}
