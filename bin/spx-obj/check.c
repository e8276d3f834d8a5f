/* spx-obj verify | heal */
#include "spx.h"

#include "objcli.h"

struct tally {
	bool heal;
	size_t damaged, lost;
};

static int report(void *ctx, const struct spx_obj_check *c)
{
	struct tally *t = ctx;
	bool bad = c->missing || c->corrupt || c->meta_bad;

	if (c->lost) {
		t->lost++;
		t->damaged++;
		printf("%s/%s lost missing=%zu corrupt=%zu meta=%zu\n", c->bucket,
		       c->key, c->missing, c->corrupt, c->meta_bad);
	} else if (bad) {
		t->damaged++;
		printf("%s/%s %s missing=%zu corrupt=%zu meta=%zu\n", c->bucket,
		       c->key, t->heal ? "healed" : "damaged", c->missing,
		       c->corrupt, c->meta_bad);
	} else {
		printf("%s/%s ok\n", c->bucket, c->key);
	}
	return 0;
}

static int run(const struct spx_args *a, bool heal)
{
	struct objcli c;
	struct tally t = { heal, 0, 0 };
	int rc = objcli_open(a, &c);

	if (rc)
		return rc;
	if (heal && spx_flag(a, "drive0-replaced")) {
		size_t n = 0;

		if ((rc = spx_obj_restore_drive0(c.s, &n)) < 0) {
			rc = objcli_fail(a, rc);
			objcli_close(&c);
			return rc;
		}
		printf("drive 0: %zu metadata files restored from the other "
		       "drives\n", n);
	}
	rc = spx_obj_verify(c.s, a->argc ? a->argv[0] : NULL, heal, report, &t);
	if (rc < 0)
		rc = objcli_fail(a, rc);
	else if (heal ? t.lost : t.damaged)
		rc = SPX_NO;
	objcli_close(&c);
	return rc;
}

int cmd_verify(const struct spx_args *a)
{
	return run(a, false);
}

int cmd_heal(const struct spx_args *a)
{
	return run(a, true);
}
