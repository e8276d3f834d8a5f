/* runas.c: a user of its own for each guest's QEMU (runas.h). */
#include "spx.h"

#include <dirent.h>
#include <grp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "file.h"
#include "vm/imds.h"
#include "vm/runas.h"
#include "vm/vm.h"
#include "vol/grant.h"

int spx_vm_user_read(const char *dir, uint32_t *uid)
{
	char *path = spx_path_join(dir, "user");
	char buf[16];
	size_t len = 0, i;
	uint64_t v = 0;
	int rc;

	*uid = 0;
	rc = spx_read_small(path, buf, sizeof(buf), &len);
	if (rc <= 0)
		goto out;
	rc = -1;
	/* "UID\n", UID 1..2^31-1 without leading zeros. */
	for (i = 0; i < len && buf[i] >= '0' && buf[i] <= '9' && i < 10; i++)
		v = v * 10 + (uint64_t)(buf[i] - '0');
	if (i == 0 || buf[0] == '0' || i + 1 != len || buf[i] != '\n' ||
	    v > INT32_MAX) {
		spx_error(SPX_USAGE, "'%s': not a uid", path);
		goto out;
	}
	*uid = (uint32_t)v;
	rc = 1;
out:
	free(path);
	return rc;
}

int spx_vm_user_become(uint32_t uid)
{
	return setgroups(0, NULL) < 0 || setgid((gid_t)uid) < 0 ||
			       setuid((uid_t)uid) < 0
		       ? -1
		       : 0;
}

/* Does guest dir hold its slot? Its QEMU runs, or someone holds its
 * lock (a start or a stop under way). When not, *lock is its lock,
 * taken, so that no start of it begins while its claim is given up. */
static bool holds(const char *dir, int *lock)
{
	char *path;
	int fd;

	*lock = -1;
	if (spx_vm_pid(dir))
		return true;
	path = spx_path_join(dir, "lock");
	fd = spx_lock_path(path, LOCK_EX | LOCK_NB, "busy");
	free(path);
	if (fd < 0) {
		bool busy = spx_errstatus() == SPX_NO;

		spx_error_clear();
		return busy;
	}
	if (spx_vm_pid(dir)) {
		close(fd);
		return true;
	}
	*lock = fd;
	return false;
}

/* How many processes (not yet dead) have uid as their real, effective
 * or saved user, from /proc. */
static int uid_procs(uint32_t uid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return spx_error_errno(SPX_FAIL, "cannot open /proc");
	while ((e = readdir(d))) {
		char path[64], buf[2048], *u, *st;
		unsigned long r, ef, sv;
		size_t len = 0;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/status", e->d_name);
		if (spx_read_small(path, buf, sizeof(buf) - 1, &len) != 1) {
			spx_error_clear(); /* gone meanwhile */
			continue;
		}
		buf[len] = '\0';
		u = strstr(buf, "\nUid:");
		st = strstr(buf, "\nState:");
		if (!u || sscanf(u + 6, "%lu %lu %lu", &r, &ef, &sv) != 3)
			continue;
		if ((r == uid || ef == uid || sv == uid) &&
		    !(st && strchr("ZX", st[8 + strspn(st + 8, " \t")])))
			n++;
	}
	closedir(d);
	return n;
}

/* Kill every process of uid: what an earlier QEMU of it left behind
 * (it may fork, and setsid: vm.c) would otherwise keep the uid, and so
 * the next guest's volumes and metadata. A child of ours becomes the
 * uid and signals every process it may (kill(2) with -1: those whose
 * real or saved uid is its own, forks racing it included), until /proc
 * shows none left. As root only. */
static int purge_uid(uint32_t uid)
{
	struct timespec ts = { 0, 1000000 };
	int n;

	if (geteuid() != 0)
		return 0;
	for (int round = 0; round < 30; round++) {
		int st = 0;
		pid_t pid;

		if ((n = uid_procs(uid)) <= 0)
			return n;
		if ((pid = fork()) < 0)
			return spx_error_errno(SPX_FAIL, "cannot fork");
		if (pid == 0) {
			if (spx_vm_user_become(uid) < 0)
				_exit(2);
			kill(-1, SIGKILL);
			_exit(0);
		}
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				return spx_error_errno(SPX_FAIL, "waitpid");
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			return spx_error(SPX_FAIL, "cannot become uid %lu",
					 (unsigned long)uid);
		nanosleep(&ts, NULL);
		if (ts.tv_nsec < 128000000)
			ts.tv_nsec *= 2;
	}
	return spx_error(SPX_FAIL,
			 "%d processes of uid %lu outlive SIGKILL", n,
			 (unsigned long)uid);
}

/* The host's claims: every uid a guest of any node on this host holds
 * has an entry SPX_VM_HOST_USERS/UID, a symbolic link to that guest's
 * directory, made and changed under SPX_VM_HOST_USERS/.lock. A node's
 * records alone cannot tell: two nodes on one host would give their
 * first guests the same uid, and each start kills whatever runs as the
 * uid it takes (purge_uid). The directory is root's alone: made 0700,
 * and refused when anyone else could have changed it. */
static int host_lock(void)
{
	struct stat st;

	if (mkdir(SPX_VM_HOST_USERS, 0700) < 0 && errno != EEXIST)
		return spx_error_errno(SPX_FAIL, "cannot make '%s'",
				       SPX_VM_HOST_USERS);
	if (lstat(SPX_VM_HOST_USERS, &st) < 0)
		return spx_error_errno(SPX_FAIL, "cannot stat '%s'",
				       SPX_VM_HOST_USERS);
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return spx_error(SPX_FAIL,
				 "'%s' is not a directory that root alone may "
				 "write",
				 SPX_VM_HOST_USERS);
	return spx_lock_path(SPX_VM_HOST_USERS "/.lock", LOCK_EX, "busy");
}

/* uid's entry: SPX_VM_HOST_USERS/UID, with prefix before UID. */
#define HOST_ENTRY_SIZE 64
static void host_entry(uint32_t uid, const char *prefix,
		       char out[HOST_ENTRY_SIZE])
{
	snprintf(out, HOST_ENTRY_SIZE, SPX_VM_HOST_USERS "/%s%lu", prefix,
		 (unsigned long)uid);
}

/* The guest directory that claims uid on this host, or NULL. */
static char *host_owner(uint32_t uid)
{
	char path[HOST_ENTRY_SIZE], *to = spx_malloc(PATH_MAX);
	ssize_t n;

	host_entry(uid, "", path);
	n = readlink(path, to, PATH_MAX - 1);
	if (n <= 0) {
		free(to);
		return NULL;
	}
	to[n] = '\0';
	return to;
}

/* Claim uid for guest directory dir (a canonical path), replacing
 * whatever claimed it. */
static int host_claim(uint32_t uid, const char *dir)
{
	char path[HOST_ENTRY_SIZE], tmp[HOST_ENTRY_SIZE];

	host_entry(uid, "", path);
	host_entry(uid, ".new.", tmp);
	unlink(tmp);
	if (symlink(dir, tmp) < 0 || rename(tmp, path) < 0) {
		spx_error_errno(SPX_FAIL, "cannot claim uid %lu in '%s'",
				(unsigned long)uid, SPX_VM_HOST_USERS);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Drop dir's claim of uid, if it has it. */
static void host_drop(uint32_t uid, const char *dir)
{
	char path[HOST_ENTRY_SIZE], *owner = host_owner(uid);

	if (owner && !strcmp(owner, dir)) {
		host_entry(uid, "", path);
		unlink(path);
	}
	free(owner);
}

static int release_locked(const char *dir);

/* Does owner (another guest's directory, of any node) still hold uid?
 * Not when its record names another uid or none (it is gone), nor when
 * its QEMU is gone and no start or stop of it is under way: then its
 * claim is given up here, as its own node would at its next start. */
static bool host_held(const char *owner, uint32_t uid)
{
	uint32_t v;
	int glock, r = spx_vm_user_read(owner, &v);

	spx_error_clear();
	if (r <= 0 || v != uid)
		return false;
	if (holds(owner, &glock))
		return true;
	if (release_locked(owner) < 0)
		spx_warn("%s", spx_errmsg());
	spx_error_clear();
	close(glock);
	return false;
}

/* May guest directory dir (canonical) take uid, as far as the host's
 * claims go? Unclaimed, claimed by dir, or claimed by a guest that no
 * longer holds it. */
static bool host_free(uint32_t uid, const char *dir)
{
	char *owner = host_owner(uid);
	bool ok = !owner || !strcmp(owner, dir) || !host_held(owner, uid);

	free(owner);
	return ok;
}

int spx_vm_user_take(const char *vms, const char *name, uint32_t base,
		     const char *grants, uint32_t *uid)
{
	char *lockp = spx_path_join(vms, ".users.lock");
	char *mine = spx_path_join(vms, name), *real = NULL;
	unsigned char *used = NULL;
	DIR *d = NULL;
	struct dirent *e;
	int lock, hlock = -1, rc = -1, r;
	uint32_t u, slot;

	*uid = 0;
	if (base < 1 || base > UINT32_MAX - SPX_VM_USERS) {
		free(lockp);
		free(mine);
		return spx_error(SPX_USAGE, "uid base %lu out of range",
				 (unsigned long)base);
	}
	lock = spx_lock_path(lockp, LOCK_EX, "busy");
	if (lock < 0 || (hlock = host_lock()) < 0)
		goto out;
	if (!(real = realpath(mine, NULL))) {
		spx_error_errno(SPX_FAIL, "cannot resolve '%s'", mine);
		goto out;
	}
	r = spx_vm_user_read(mine, &u);
	if (r < 0)
		goto out;
	/* Its own again, unless a guest of another node took it since. */
	if (r > 0 && u >= base && u - base < SPX_VM_USERS &&
	    host_free(u, real))
		goto found;
	/* A record from another base (the setting changed), or of a uid
	 * another guest holds now: given up. */
	if (r > 0 && release_locked(mine) < 0)
		goto out;
	used = spx_calloc(SPX_VM_USERS / 8, 1);
	d = opendir(vms);
	if (!d) {
		spx_error_errno(SPX_FAIL, "cannot open '%s'", vms);
		goto out;
	}
	while ((e = readdir(d))) {
		char *dir;
		int glock = -1;

		if (!spx_vm_name_valid(e->d_name) || !strcmp(e->d_name, name))
			continue;
		dir = spx_path_join(vms, e->d_name);
		r = spx_vm_user_read(dir, &u);
		spx_error_clear();
		if (r > 0 && !holds(dir, &glock)) {
			/* Its QEMU is gone: so is its claim. */
			if (release_locked(dir) < 0)
				spx_warn("%s", spx_errmsg());
			spx_error_clear();
			close(glock);
		} else if (r > 0 && u >= base && u - base < SPX_VM_USERS) {
			used[(u - base) / 8] |= (unsigned char)(1u << ((u - base) % 8));
		}
		free(dir);
	}
	/* Free on this node, and on the host. */
	for (slot = 0; slot < SPX_VM_USERS; slot++)
		if (!(used[slot / 8] & (1u << (slot % 8))) &&
		    host_free(base + slot, real))
			break;
	if (slot == SPX_VM_USERS) {
		spx_error(SPX_FAIL, "every one of the %u guest users is taken",
			  SPX_VM_USERS);
		goto out;
	}
	u = base + slot;
	{
		char text[16], *path = spx_path_join(mine, "user");
		int n = snprintf(text, sizeof(text), "%lu\n", (unsigned long)u);

		r = spx_write_file(path, text, (size_t)n, 0600, false);
		free(path);
		if (r < 0)
			goto out;
	}
found:
	/* Whatever was granted to this uid or this guest before (volumes
	 * detached since, a guest gone) is void: the start grants anew;
	 * and whatever still runs as it goes, which the host's claim says
	 * is no other guest's. */
	if (host_claim(u, real) < 0 ||
	    (grants && spx_vol_grant_purge(grants, u, name) < 0) ||
	    purge_uid(u) < 0)
		goto out;
	*uid = u;
	rc = 0;
out:
	if (d)
		closedir(d);
	if (hlock >= 0)
		close(hlock);
	if (lock >= 0)
		close(lock);
	free(used);
	free(real);
	free(lockp);
	free(mine);
	return rc;
}

/* chown name in dir to uid:uid (0: root) and chmod it; a missing file
 * is left missing unless create. */
static int own(const char *dir, const char *name, uint32_t uid, mode_t mode,
	       bool create)
{
	char *path = spx_path_join(dir, name);
	int fd, rc = -1;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
				(create ? O_CREAT : 0),
		  0600);
	if (fd < 0) {
		rc = errno == ENOENT && !create
			     ? 0
			     : spx_error_errno(SPX_FAIL, "cannot open '%s'",
					       path);
		goto out;
	}
	if (fchown(fd, uid, uid) < 0 || fchmod(fd, mode) < 0)
		spx_error_errno(SPX_FAIL, "cannot give '%s' to %lu", path,
				(unsigned long)uid);
	else
		rc = 0;
	close(fd);
out:
	free(path);
	return rc;
}

int spx_vm_user_prepare(const char *dir, uint32_t uid)
{
	char name[32];

	if (own(dir, "metadata.json", uid, 0400, false) < 0 ||
	    own(dir, "imds.key", uid, 0400, false) < 0)
		return -1;
	for (int i = 0; i < SPX_IMDS_SLOTS; i++) {
		snprintf(name, sizeof(name), "imds-slot-%d", i);
		if (own(dir, name, uid, 0600, true) < 0)
			return -1;
	}
	if (chown(dir, 0, uid) < 0 || chmod(dir, 0710) < 0)
		return spx_error_errno(SPX_FAIL, "cannot give '%s' to %lu",
				       dir, (unsigned long)uid);
	return 0;
}

/* spx_vm_user_release, the host's lock held. */
static int release_locked(const char *dir)
{
	struct spx_buf b = SPX_BUF_INIT;
	struct spx_vm_spec s;
	char name[32], *path;
	uint32_t uid;
	int r = spx_vm_user_read(dir, &uid), rc = -1;

	memset(&s, 0, sizeof(s));
	if (r < 0 && spx_errstatus() != SPX_USAGE)
		return -1;
	spx_error_clear();
	if (r == 0)
		return 0;
	if (chown(dir, 0, 0) < 0 || chmod(dir, 0700) < 0) {
		spx_error_errno(SPX_FAIL, "cannot take '%s' back", dir);
		goto out;
	}
	if (own(dir, "metadata.json", 0, 0600, false) < 0 ||
	    own(dir, "imds.key", 0, 0600, false) < 0)
		goto out;
	for (int i = 0; i < SPX_IMDS_SLOTS; i++) {
		snprintf(name, sizeof(name), "imds-slot-%d", i);
		if (own(dir, name, 0, 0600, false) < 0)
			goto out;
	}
	/* The volumes granted to it or to this guest: by its spec, which
	 * names the socket (and so the grants) it used. */
	path = spx_path_join(dir, "spec.json");
	if (spx_buf_read_file(&b, path, 1 << 16) == 0 &&
	    spx_vm_spec_parse(b.p, b.len, &s) == 0) {
		char *grants = spx_vol_grants_dir(s.nbd_socket);
		int g = spx_vol_grant_purge(grants, r > 0 ? uid : 0, s.name);

		free(grants);
		if (g < 0) {
			free(path);
			goto out;
		}
	}
	spx_error_clear();
	free(path);
	path = spx_path_join(dir, "user");
	if (unlink(path) < 0 && errno != ENOENT) {
		spx_error_errno(SPX_FAIL, "cannot remove '%s'", path);
	} else {
		char *real = r > 0 ? realpath(dir, NULL) : NULL;

		if (real)
			host_drop(uid, real);
		free(real);
		rc = 0;
	}
	free(path);
out:
	spx_vm_spec_release(&s);
	spx_buf_release(&b);
	return rc;
}

int spx_vm_user_release(const char *dir)
{
	uint32_t uid;
	int r = spx_vm_user_read(dir, &uid), lock, rc;

	/* No record (a guest not run as a user of its own): nothing to
	 * give up, and no host lock to take. */
	if (r == 0)
		return 0;
	spx_error_clear();
	if ((lock = host_lock()) < 0)
		return -1;
	rc = release_locked(dir);
	close(lock);
	return rc;
}

int spx_vm_user_searchable(const char *path)
{
	char *up = spx_strdup(path), *slash;
	struct stat st;

	/* The way there is the host's: checked, never changed. */
	while ((slash = strrchr(up, '/'))) {
		slash[slash == up] = 0;
		if (stat(up, &st) < 0 || !(st.st_mode & S_IXOTH)) {
			spx_error(SPX_FAIL,
				  "'%s' is not searchable by others (o+x): a "
				  "guest's QEMU user could not reach '%s'",
				  up, path);
			free(up);
			return -1;
		}
		if (slash == up)
			break;
	}
	free(up);
	if (stat(path, &st) < 0)
		return spx_error_errno(SPX_FAIL, "cannot stat '%s'", path);
	if ((st.st_mode & 0111) == 0111)
		return 0;
	if (chmod(path, (st.st_mode & 07777) | 0111) < 0)
		return spx_error_errno(SPX_FAIL, "cannot chmod '%s'", path);
	return 0;
}
