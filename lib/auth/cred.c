#include "spx.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <sys/file.h>

#include "auth/cred.h"
#include "file.h"
#include "proc.h"

#define CRED_MAX_FILE (4u << 20)

struct spx_creds {
	char *path;
	pthread_mutex_t mu;
	struct spx_file_id id;	/* of the file the keys came from */
	struct spx_cred *keys;
	size_t n;
	int64_t checked_ms;	/* when the file was last looked at */
};

static int copy_field(json_t *o, const char *name, char *dst, size_t sz,
		      bool required, const char *path)
{
	json_t *v = json_object_get(o, name);
	const char *s;

	if (!v) {
		dst[0] = '\0';
		return required ? spx_error(SPX_USAGE, "'%s': a key has no %s",
					    path, name)
				: 0;
	}
	s = json_string_value(v);
	if (!s || strlen(s) >= sz)
		return spx_error(SPX_USAGE, "'%s': bad %s", path, name);
	snprintf(dst, sz, "%s", s);
	return 0;
}

static int parse_keys(const char *path, const char *text, size_t len,
		      struct spx_cred **out, size_t *n)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	json_t *arr, *o;
	struct spx_cred *keys = NULL;
	size_t i, k = 0;
	int rc = -1;

	if (!root)
		return spx_error(SPX_USAGE, "%s:%d:%d: %s", path, je.line,
				 je.column, je.text);
	arr = json_object_get(root, "keys");
	if (!json_is_array(arr)) {
		spx_error(SPX_USAGE, "'%s': no \"keys\" array", path);
		goto out;
	}
	keys = spx_calloc(json_array_size(arr) + 1, sizeof(*keys));
	json_array_foreach(arr, i, o)
	{
		struct spx_cred *c = &keys[k];
		char status[16];

		if (copy_field(o, "AccessKeyId", c->access_key,
			       sizeof(c->access_key), true, path) < 0 ||
		    copy_field(o, "SecretAccessKey", c->secret,
			       sizeof(c->secret), true, path) < 0 ||
		    copy_field(o, "AccountId", c->account, sizeof(c->account),
			       true, path) < 0 ||
		    copy_field(o, "UserName", c->user, sizeof(c->user), false,
			       path) < 0 ||
		    copy_field(o, "Arn", c->arn, sizeof(c->arn), false, path) <
			    0 ||
		    copy_field(o, "Status", status, sizeof(status), false,
			       path) < 0)
			goto out;
		if (status[0] && strcmp(status, "Active"))
			continue;
		if (!c->arn[0])
			snprintf(c->arn, sizeof(c->arn), "arn:aws:iam::%s:root",
				 c->account);
		k++;
	}
	*out = keys;
	*n = k;
	keys = NULL;
	rc = 0;
out:
	free(keys);
	json_decref(root);
	return rc;
}

/* Called with c->mu held, with the file's stat taken before (a stat
 * under the lock would make every request of every thread wait on it). */
static int reload_st(struct spx_creds *c, int st_err, const struct stat *st_in)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_cred *keys;
	struct stat st;
	size_t n;

	if (st_err) {
		errno = st_err;
		return spx_error_errno(SPX_FAIL, "cannot stat '%s'", c->path);
	}
	st = *st_in;
	if (c->keys && spx_file_id_same(&c->id, &st))
		return 0;
	if (spx_buf_read_file(&b, c->path, CRED_MAX_FILE) < 0 ||
	    parse_keys(c->path, b.p, b.len, &keys, &n) < 0) {
		spx_buf_release(&b);
		return -1;
	}
	spx_buf_release(&b);
	free(c->keys);
	c->keys = keys;
	c->n = n;
	spx_file_id_of(&st, &c->id);
	return 0;
}

static int reload(struct spx_creds *c)
{
	struct stat st;
	int st_err = stat(c->path, &st) < 0 ? errno : 0;

	return reload_st(c, st_err, &st);
}

int spx_cred_open(const char *path, struct spx_creds **out)
{
	struct spx_creds *c = spx_calloc(1, sizeof(*c));

	c->path = spx_strdup(path);
	pthread_mutex_init(&c->mu, NULL);
	if (reload(c) < 0) {
		spx_cred_close(c);
		return -1;
	}
	*out = c;
	return 0;
}

void spx_cred_close(struct spx_creds *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->mu);
	free(c->keys);
	free(c->path);
	free(c);
}

/* The first key whose field at offset `off` equals want, in c->keys
 * (c->mu held). */
static int search(struct spx_creds *c, size_t off, const char *want,
		  struct spx_cred *out)
{
	for (size_t i = 0; i < c->n; i++) {
		if (!strcmp((const char *)&c->keys[i] + off, want)) {
			*out = c->keys[i];
			return 0;
		}
	}
	return -1;
}

/* search, with the file looked at first when it was not looked at in
 * the last SPX_CRED_RECHECK_MS, or when the keys held lack want. */
static int find(struct spx_creds *c, size_t off, const char *want,
		struct spx_cred *out)
{
	int64_t now = spx_mono_ms();
	struct stat st;
	int rc = -1, st_err;

	pthread_mutex_lock(&c->mu);
	if (c->keys && now - c->checked_ms < SPX_CRED_RECHECK_MS)
		rc = search(c, off, want, out);
	pthread_mutex_unlock(&c->mu);
	if (rc == 0)
		return 0;
	/* The stat outside the lock: under it, every request of every
	 * thread would wait on it. */
	st_err = stat(c->path, &st) < 0 ? errno : 0;
	pthread_mutex_lock(&c->mu);
	/* A failed reload keeps the keys already loaded: a half-edited file
	 * must not lock everybody out. */
	if (reload_st(c, st_err, &st) < 0)
		spx_log(SPX_LOG_WARN, "%s", spx_errmsg());
	c->checked_ms = now;
	rc = search(c, off, want, out);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int spx_cred_lookup(struct spx_creds *c, const char *access_key,
		    struct spx_cred *out)
{
	if (find(c, offsetof(struct spx_cred, access_key), access_key, out) < 0)
		return spx_error(SPX_NO, "unknown access key '%s'", access_key);
	return 0;
}

int spx_cred_find_user(struct spx_creds *c, const char *user,
		       struct spx_cred *out)
{
	if (find(c, offsetof(struct spx_cred, user), user, out) < 0)
		return spx_error(SPX_NO, "no account named '%s'", user);
	return 0;
}

int spx_cred_first(struct spx_creds *c, struct spx_cred *out)
{
	int rc = -1;

	pthread_mutex_lock(&c->mu);
	if (reload(c) == 0 || c->keys) {
		if (c->n) {
			*out = c->keys[0];
			rc = 0;
		} else {
			spx_error(SPX_NO, "'%s' holds no active key", c->path);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

char *spx_cred_render(const struct spx_cred *keys, size_t n)
{
	json_t *root = json_object(), *arr = json_array();
	char *s;

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "AccessKeyId",
				    json_string(keys[i].access_key));
		json_object_set_new(o, "SecretAccessKey",
				    json_string(keys[i].secret));
		json_object_set_new(o, "AccountId",
				    json_string(keys[i].account));
		json_object_set_new(o, "UserName", json_string(keys[i].user));
		json_object_set_new(o, "Arn", json_string(keys[i].arn));
		json_object_set_new(o, "Status", json_string("Active"));
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "keys", arr);
	s = json_dumps(root, JSON_INDENT(2));
	json_decref(root);
	if (!s)
		spx_die(SPX_FAIL, "out of memory rendering keys");
	return s;
}

int spx_cred_add(const char *path, const struct spx_cred *k)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_cred *keys = NULL;
	char *lockp = spx_xprintf("%s.lock", path);
	size_t n = 0;
	char *text;
	int rc = -1, lfd;

	/* Read-modify-write under a lock, so that two `spx admin` runs at
	 * once cannot lose a key. */
	lfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX) < 0) {
		spx_error_errno(SPX_FAIL, "cannot lock '%s'", lockp);
		goto out;
	}
	if (spx_exists(path) && (spx_buf_read_file(&b, path, CRED_MAX_FILE) < 0 ||
				 parse_keys(path, b.p, b.len, &keys, &n) < 0))
		goto out;
	keys = spx_realloc(keys, (n + 1) * sizeof(*keys));
	keys[n++] = *k;
	text = spx_cred_render(keys, n);
	rc = spx_write_file(path, text, strlen(text), 0600, false);
	OPENSSL_cleanse(text, strlen(text));
	free(text);
out:
	if (lfd >= 0)
		close(lfd);
	if (keys)
		OPENSSL_cleanse(keys, n * sizeof(*keys));
	free(keys);
	free(lockp);
	spx_buf_release(&b);
	return rc;
}
