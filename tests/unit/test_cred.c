/* Unit tests for lib/auth/cred: the gateway's access keys, re-read when
 * their file changes (cred.h says how soon). */
#include "spx.h"

#include <time.h>

#include "auth/cred.h"
#include "file.h"
#include "t.h"

static struct spx_cred key(const char *ak, const char *secret,
			   const char *user)
{
	struct spx_cred k = { 0 };

	snprintf(k.access_key, sizeof(k.access_key), "%s", ak);
	snprintf(k.secret, sizeof(k.secret), "%s", secret);
	snprintf(k.account, sizeof(k.account), "111111111111");
	snprintf(k.user, sizeof(k.user), "%s", user);
	snprintf(k.arn, sizeof(k.arn), "arn:aws:iam::111111111111:root");
	return k;
}

static int write_keys(const char *path, const struct spx_cred *keys,
		      size_t n)
{
	char *text = spx_cred_render(keys, n);
	int rc = spx_write_file(path, text, strlen(text), 0600, false);

	free(text);
	return rc;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(void)
{
	char dir[] = "/tmp/spx-test-cred-XXXXXX";
	struct spx_cred keys[2], got;
	struct spx_creds *c = NULL;
	char *path;

	if (!mkdtemp(dir))
		return 1;
	path = spx_xprintf("%s/credentials.json", dir);
	keys[0] = key("AKIAAAAAAAAAAAAAAAAA", "secret-a", "alice");
	T_INT(write_keys(path, keys, 1), 0, "a key file");
	T_INT(spx_cred_open(path, &c), 0, "opened");
	T_INT(spx_cred_lookup(c, "AKIAAAAAAAAAAAAAAAAA", &got), 0, "the key");
	T_STR(got.secret, "secret-a", "its secret");
	T_OK(spx_cred_lookup(c, "AKIABBBBBBBBBBBBBBBB", &got) < 0,
	     "an unknown key is refused");
	spx_error_clear();

	/* A key added is found at once, however recently the file was
	 * looked at. */
	keys[1] = key("AKIABBBBBBBBBBBBBBBB", "secret-b", "bob");
	T_INT(spx_cred_add(path, &keys[1]), 0, "a key added");
	T_INT(spx_cred_lookup(c, "AKIABBBBBBBBBBBBBBBB", &got), 0,
	      "found at once");
	T_STR(got.user, "bob", "its user");
	T_INT(spx_cred_find_user(c, "bob", &got), 0, "by its user");

	/* A key removed, and another's secret changed: refused, and the new
	 * secret used, within SPX_CRED_RECHECK_MS. */
	keys[0] = keys[1];
	snprintf(keys[0].secret, sizeof(keys[0].secret), "secret-b2");
	T_INT(write_keys(path, keys, 1), 0, "alice's key removed, bob's changed");
	sleep_ms(SPX_CRED_RECHECK_MS + 200);
	T_OK(spx_cred_lookup(c, "AKIAAAAAAAAAAAAAAAAA", &got) < 0,
	     "the removed key is refused");
	spx_error_clear();
	T_INT(spx_cred_lookup(c, "AKIABBBBBBBBBBBBBBBB", &got), 0, "bob's key");
	T_STR(got.secret, "secret-b2", "with its new secret");

	/* A broken file keeps the keys there were. */
	T_INT(spx_write_file(path, "{\"keys\": [", 10, 0600, false), 0,
	      "the file broken");
	sleep_ms(SPX_CRED_RECHECK_MS + 200);
	T_INT(spx_cred_lookup(c, "AKIABBBBBBBBBBBBBBBB", &got), 0,
	      "bob's key still works");
	spx_error_clear();
	spx_cred_close(c);
	unlink(path);
	{
		char *lock = spx_xprintf("%s.lock", path);

		unlink(lock);
		free(lock);
	}
	rmdir(dir);
	free(path);
	return t_done();
}
