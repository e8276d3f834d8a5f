/* grant.c: per-volume grants to guest users (grant.h). */
#include "spx.h"

#include <dirent.h>
#include <sys/stat.h>

#include "file.h"
#include "vol/grant.h"
#include "vol/vol.h"

char *spx_vol_grants_dir(const char *sock)
{
	return spx_xprintf("%s.grants", sock);
}

int spx_vol_grant_parse(const char *buf, size_t n, struct spx_vol_grant *g)
{
	size_t i = 0, o = 0;
	uint64_t uid = 0;

	memset(g, 0, sizeof(*g));
	if (n > SPX_VOL_GRANT_MAX)
		goto bad;
	if (i == n || buf[i] < '1' || buf[i] > '9')
		goto bad;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) {
		uid = uid * 10 + (uint64_t)(buf[i] - '0');
		if (uid >= UINT32_MAX)
			goto bad;
	}
	if (i == n || buf[i++] != ' ')
		goto bad;
	for (; i < n && buf[i] != '\n'; i++) {
		char c = buf[i];

		if (o == SPX_VOL_GRANT_GUEST_MAX ||
		    !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      (c == '-' && o > 0)))
			goto bad;
		g->guest[o++] = c;
	}
	if (o == 0 || i + 1 != n)
		goto bad;
	g->guest[o] = 0;
	g->uid = (uint32_t)uid;
	return 0;
bad:
	memset(g, 0, sizeof(*g));
	return spx_error(SPX_USAGE, "a malformed grant");
}

int spx_vol_grant_read(const char *dir, const char *vol,
		       struct spx_vol_grant *g)
{
	char buf[SPX_VOL_GRANT_MAX + 1];
	char *path;
	size_t len = 0;
	int rc;

	memset(g, 0, sizeof(*g));
	if (!spx_vol_id_valid(vol))
		return spx_error(SPX_USAGE, "not a volume id: '%s'", vol);
	path = spx_path_join(dir, vol);
	/* One byte more than a grant may have: a longer file is refused. */
	rc = spx_read_small(path, buf, sizeof(buf), &len);
	if (rc <= 0)
		goto out;
	rc = -1;
	if (spx_vol_grant_parse(buf, len, g) < 0) {
		spx_error_prefix("'%s'", path);
		goto out;
	}
	rc = 1;
out:
	free(path);
	return rc;
}

int spx_vol_grant_write(const char *dir, const char *vol,
			const struct spx_vol_grant *g)
{
	char text[SPX_VOL_GRANT_MAX + 1];
	struct spx_vol_grant check;
	char *path;
	int n, rc;

	n = snprintf(text, sizeof(text), "%lu %s\n", (unsigned long)g->uid,
		     g->guest);
	if (!spx_vol_id_valid(vol) || n < 0 || (size_t)n > SPX_VOL_GRANT_MAX ||
	    spx_vol_grant_parse(text, (size_t)n, &check) < 0)
		return spx_error(SPX_USAGE, "no grant of '%s' to %lu '%s'",
				 vol, (unsigned long)g->uid, g->guest);
	if (spx_mkdirs(dir, 0700) < 0)
		return -1;
	path = spx_path_join(dir, vol);
	rc = spx_write_file(path, text, (size_t)n, 0600, false);
	free(path);
	return rc;
}

int spx_vol_grant_drop(const char *dir, const char *vol, const char *guest)
{
	struct spx_vol_grant g;
	char *path;
	int rc = spx_vol_grant_read(dir, vol, &g);

	if (rc < 0 && spx_errstatus() != SPX_USAGE)
		return -1;
	spx_error_clear();
	if (rc == 0 || (rc > 0 && guest && strcmp(g.guest, guest)))
		return 0;
	/* Malformed, or the guest's: it goes. */
	path = spx_path_join(dir, vol);
	rc = unlink(path) < 0 && errno != ENOENT
		     ? spx_error_errno(SPX_FAIL, "cannot remove '%s'", path)
		     : 0;
	free(path);
	return rc;
}

int spx_vol_grant_purge(const char *dir, uint32_t uid, const char *guest)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0
				       : spx_error_errno(SPX_FAIL,
							 "cannot open '%s'", dir);
	while ((e = readdir(d))) {
		struct spx_vol_grant g;
		int r;

		if (!spx_vol_id_valid(e->d_name))
			continue;
		r = spx_vol_grant_read(dir, e->d_name, &g);
		if (r < 0 && spx_errstatus() != SPX_USAGE) {
			rc = -1;
			continue;
		}
		spx_error_clear();
		if (r == 0 || (r > 0 && (!uid || g.uid != uid) &&
			       (!guest || strcmp(g.guest, guest))))
			continue;
		if (spx_vol_grant_drop(dir, e->d_name, NULL) < 0)
			rc = -1;
	}
	closedir(d);
	return rc;
}
