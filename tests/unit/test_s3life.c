/* Unit tests for lib/gw/s3life: when a rule says a version expires (a
 * table of filters, days and dates), and the pass over a real store:
 * what it removes, what it leaves to a writer that came first, and a
 * budget that stops between keys and resumes. */
#include "spx.h"

#include <dirent.h>
#include <jansson.h>
#include <sys/stat.h>

#include "file.h"
#include "gw/s3conf.h"
#include "gw/s3life.h"
#include "proc.h"

#include "t.h"

#define DAY 86400LL
#define MS 1000LL

static char root[] = "/tmp/test_s3life.XXXXXX";

/* The rules of a LifecycleConfiguration body, loaded. */
static struct spx_s3_life *rules(const char *xml)
{
	struct spx_apierr err;
	struct spx_s3_life *l = NULL;
	char *js = NULL;

	if (spx_s3_lifecycle_xml(xml, strlen(xml), &js, &err) < 0) {
		printf("# %s: %s\n", err.code, err.message);
		return NULL;
	}
	if (spx_s3_life_load(js, strlen(js), &l) < 0)
		printf("# load: %s\n", spx_errmsg());
	free(js);
	return l;
}

#define CONF(r) "<LifecycleConfiguration>" r "</LifecycleConfiguration>"

static void test_expiry(void)
{
	/* 2026-12-01T10:00:00Z */
	const int64_t t0 = 1796119200LL * MS, midnight = 1796083200LL * MS;
	struct spx_kvlist tags = SPX_KVLIST_INIT;
	struct spx_s3_life *l = rules(CONF(
		"<Rule><ID>logs</ID><Filter><Prefix>logs/</Prefix></Filter>"
		"<Status>Enabled</Status><Expiration><Days>2</Days>"
		"</Expiration></Rule>"
		"<Rule><ID>tagged</ID><Filter><And><Prefix>t/</Prefix><Tag>"
		"<Key>tmp</Key><Value>1</Value></Tag><ObjectSizeGreaterThan>10"
		"</ObjectSizeGreaterThan><ObjectSizeLessThan>100"
		"</ObjectSizeLessThan></And></Filter><Status>Enabled</Status>"
		"<Expiration><Date>2026-01-01T00:00:00Z</Date></Expiration>"
		"</Rule>"
		"<Rule><ID>off</ID><Filter/><Status>Disabled</Status>"
		"<Expiration><Days>1</Days></Expiration></Rule>"
		"<Rule><ID>short</ID><Prefix>logs/x</Prefix><Status>Enabled"
		"</Status><Expiration><Days>1</Days></Expiration></Rule>"));
	const int64_t date = 1767225600LL * MS; /* 2026-01-01 */

	T_OK(l != NULL, "rules load");
	spx_kv_add(&tags, "tmp", "1");
	/* Days: creation plus the days, up to the next midnight UTC. */
	T_INT(spx_s3_life_expiry(l, "logs/a", 5, NULL, t0, DAY, NULL),
	      midnight + 3 * DAY * MS, "two days on, at the next midnight");
	T_INT(spx_s3_life_expiry(l, "logs/a", 5, NULL, midnight, DAY, NULL),
	      midnight + 2 * DAY * MS, "made at midnight: exactly two days");
	T_INT(spx_s3_life_expiry(l, "logs/xy", 5, NULL, t0, DAY, NULL),
	      midnight + 2 * DAY * MS, "the earliest matching rule wins");
	T_INT(spx_s3_life_expiry(l, "logs/a", 5, NULL, 0, 7, NULL),
	      14 * MS, "a short test day rounds to its own multiple");
	T_INT(spx_s3_life_expiry(l, "other", 5, NULL, t0, DAY, NULL), INT64_MAX,
	      "no rule: never (the disabled one does not count)");
	/* Date, with tags and sizes. */
	T_INT(spx_s3_life_expiry(l, "t/a", 50, &tags, t0, DAY, NULL), date,
	      "the date of the matching rule");
	T_INT(spx_s3_life_expiry(l, "t/a", 50, NULL, t0, DAY, NULL), INT64_MAX,
	      "no tags: no match");
	T_INT(spx_s3_life_expiry(l, "t/a", 10, &tags, t0, DAY, NULL), INT64_MAX,
	      "ObjectSizeGreaterThan is strict");
	T_INT(spx_s3_life_expiry(l, "t/a", 100, &tags, t0, DAY, NULL), INT64_MAX,
	      "ObjectSizeLessThan is strict");
	spx_kv_free(&tags);
	spx_kv_add(&tags, "tmp", "2");
	T_INT(spx_s3_life_expiry(l, "t/a", 50, &tags, t0, DAY, NULL), INT64_MAX,
	      "another value: no match");
	T_OK(spx_s3_life_tags(l), "tags are needed");
	spx_kv_free(&tags);
	spx_s3_life_free(l);
	l = rules(CONF("<Rule><ID>off</ID><Filter/><Status>Disabled</Status>"
		       "<Expiration><Days>1</Days></Expiration></Rule>"));
	T_OK(l == NULL, "only disabled rules: none loaded");
	T_INT(spx_s3_life_expiry(NULL, "a", 1, NULL, 0, DAY, NULL), INT64_MAX,
	      "no rules: never");
	l = NULL;
	T_INT(spx_s3_life_load("{}", 2, &l), -1, "not a rule list");
	T_INT(spx_s3_life_load("[{\"Status\":\"Enabled\",\"Expiration\":{"
			       "\"Date\":\"never\"}}]",
			       50, &l),
	      -1, "a bad date");
}

static struct spx_obj *open_store(void)
{
	char *d = spx_xprintf("%s/d0", root);
	const char *dv[1] = { d };
	struct spx_obj_opts o = { .drives = dv, .ndrives = 1, .data = 1,
				  .flags = SPX_OBJ_CREATE };
	struct spx_obj *s = NULL;

	if (spx_obj_open(&o, &s) < 0)
		printf("# open: %s\n", spx_errmsg());
	free(d);
	return s;
}

static int put(struct spx_obj *s, const struct spx_obj_bucket *b,
	       const char *key)
{
	struct spx_obj_writer *w = NULL;
	struct spx_obj_meta m = SPX_OBJ_META_INIT, out = SPX_OBJ_META_INIT;
	int rc = spx_obj_writer_begin(s, b, key, &m, &w);

	if (!rc && (rc = spx_obj_writer_write(w, "x", 1)) < 0)
		spx_obj_writer_abort(w);
	else if (!rc)
		rc = spx_obj_writer_commit(w, NULL, &out);
	spx_obj_meta_release(&out);
	return rc;
}

static size_t count(struct spx_obj *s, const struct spx_obj_bucket *b)
{
	struct spx_obj_list_opts o = { 0 };
	struct spx_obj_list l = SPX_OBJ_LIST_INIT;
	size_t n;

	if (spx_obj_list(s, b, &o, &l) < 0)
		return 9999;
	n = l.n;
	spx_obj_list_release(&l);
	return n;
}

static void set_rules(struct spx_obj *s, struct spx_obj_bucket *b,
		      const char *xml)
{
	struct spx_apierr err;
	char *js = NULL;

	if (spx_s3_lifecycle_xml(xml, strlen(xml), &js, &err) == 0)
		spx_obj_bucket_set_doc(s, b, "lifecycle", js, strlen(js));
	free(js);
}

static void test_pass(void)
{
	struct spx_obj *s = open_store();
	struct spx_obj_bucket b;
	struct spx_s3_life_stats st = { 0 };
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	int64_t now = spx_wall_ms();
	char key[16];
	int rc, runs = 0;

	T_OK(s != NULL, "store opens");
	if (!s)
		return;
	spx_obj_bucket_create(s, "life", "111122223333", "us-east-1");
	spx_obj_bucket_open(s, "life", &b);
	for (int i = 0; i < 7; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(s, &b, key);
	}
	put(s, &b, "other");
	T_INT(spx_s3_life_pass(s, &b, now, 1, 0, &st), 0,
	      "no rules: done, nothing looked at");
	T_INT((long long)st.versions, 0, "nothing looked at");
	set_rules(s, &b,
		  CONF("<Rule><ID>k</ID><Filter><Prefix>k</Prefix></Filter>"
		       "<Status>Enabled</Status><Expiration><Days>1</Days>"
		       "</Expiration></Rule>"));
	T_INT(spx_s3_life_pass(s, &b, now, DAY, 0, &st), 0,
	      "not yet due: done");
	T_INT(count(s, &b), 8, "nothing removed");
	/* Three versions a pass: stops between keys, goes on after. */
	do {
		memset(&st, 0, sizeof(st));
		rc = spx_s3_life_pass(s, &b, now + 3 * DAY * MS, DAY, 3, &st);
		runs++;
	} while (rc == 1 && runs < 10);
	T_INT(rc, 0, "the last pass is done");
	T_INT(runs, 3, "three passes of three versions");
	T_INT(count(s, &b), 1, "every k* expired");
	T_INT(spx_obj_stat(s, &b, "other", &m), 0, "other stays");
	spx_obj_meta_release(&m);
	/* A key written after the pass looked is the writer's. */
	put(s, &b, "k0");
	memset(&st, 0, sizeof(st));
	T_INT(spx_s3_life_pass(s, &b, now, DAY, 0, &st), 0, "a fresh key");
	T_INT((long long)st.expired, 0, "is not due");
	T_INT(spx_obj_stat(s, &b, "k0", &m), 0, "and stays");
	spx_obj_meta_release(&m);
	spx_obj_close(s);
}

int main(void)
{
	if (!mkdtemp(root))
		return 99;
	test_expiry();
	test_pass();
	spx_rmtree(root);
	return t_done();
}
