/* spxvol.c: the nbdkit plugin that serves a volume store (lib/vol) over
 * NBD, one export per volume, named by its id.
 *
 *   nbdkit -U SOCKET nbdkit-spxvol-plugin.so dir=STORE [conf=FILE root=DIR]
 *                                            [grants=SOCKET.grants]
 *   spx-nbd -U SOCKET dir=STORE [conf=FILE root=DIR grants=SOCKET.grants]
 *
 * spx-nbd (nbdsrv.c, linked with this file) serves the same plugin from
 * an event loop; it does a local volume's reads and writes itself
 * (spxvol.h) and calls the callbacks below for everything else.
 *
 * Who may open a volume: root and the server's own user any; any other
 * peer (a guest's QEMU running as a user of its own) only the volumes
 * granted to its uid in grants= (lib/vol/grant.h), checked on each open;
 * without grants=, none. Others list no exports. A grant taken away (the
 * disk detached, the volume given to another guest) also cuts off the
 * connections it let in: a thread watches the grants directory (inotify)
 * and marks them, and each of their requests from then on fails with
 * EPERM (nbdkit 1.32 gives a plugin no way to close a connection). The
 * mark is one atomic load a request.
 *
 * nbdkit gives each connection a thread from the moment it is accepted,
 * and waits for the handshake without a time limit (1.32 has none), so
 * the connections of peers other than root and the server's own user
 * are bounded as they come (preconnect, before the handshake): at most
 * UID_CONNS_MAX of one uid, CONNS_MAX of all of them; more are closed
 * at once. A local user can still hold its UID_CONNS_MAX, and local
 * users together CONNS_MAX, for as long as they like.
 *
 * Why nbdkit with a plugin of ours (docs/ARCHITECTURE.md says more):
 * nbdkit is the well-kept NBD server (newstyle handshake, TLS, multi-conn,
 * structured replies, block status, export listing) and leaves the
 * storage to the plugin, which is where spx's work is: reading and
 * writing the sparse data file with the durability NBD promises,
 * fetching the chunks of a volume made from a snapshot on first use, and
 * tracking which chunks changed since the last snapshot.
 *
 * Durability: a write is acknowledged once pwrite(2) returned (in the
 * page cache); FLUSH is fdatasync(2) of the file, and a FUA write, trim or
 * zero is followed by one before it is acknowledged, so whatever a client
 * saw flushed survives kill -9 of every process and a power loss. One
 * fdatasync covers every connection's writes to the file, so several
 * connections may be open at once (multi-conn). A full disk is ENOSPC for
 * the write that needs a new block, never damage to what was written.
 *
 * Snapshots (lib/vol/track.h): every write, trim and zero goes through
 * spx_vol_track_write_begin, which marks the chunks DIRTY before the
 * write (in the shared map; track.h says how a lost mark is detected), waits while a snapshot picks its chunks (milliseconds) and
 * copies a chunk the snapshot has yet to read. The volumes open in this
 * process share one tracking map each, whatever the connections; one
 * process at a time may write a volume (others get EBUSY).
 *
 * Lazy restore: a volume restoring from a snapshot fetches a chunk from
 * the object store (conf= names the node's configuration) before the
 * first read or write of it, and a thread fetches the rest while the
 * volume is open for writing. A fetch that fails for a reason that may
 * pass (the store unreachable, a drive unreadable) is logged, shown by
 * spx-vol info, and retried with backoff while the guest waits: never
 * EIO. A chunk that is gone for good (spx_snap_chunk_get's lost: the
 * store does not hold it, has lost more of it than parity rebuilds, or
 * holds other bytes under its name) is EIO for that read at once,
 * logged and shown by spx-vol info: wrong bytes are never returned, and
 * no reader waits for what cannot come back. The chunk stays to fetch.
 */
#include "spx.h"

#include <linux/falloc.h>
#include <poll.h>
#include <pthread.h>
#include <sys/inotify.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "iobuf.h"
#include "obj/obj.h"
#include "proc.h"
#include "vol/grant.h"
#include "vol/nbdkit/spxvol.h"
#include "vol/snap.h"
#include "vol/track.h"
#include "vol/vol.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* Connections open at once of one peer uid other than root and ours
 * (a guest's QEMU has one a disk), and of all of them: well above what
 * a node's guests use, far below what makes a thread per connection a
 * burden. */
#define UID_CONNS_MAX 64
#define CONNS_MAX 512
/* A refused connection is logged at most this often. */
#define REFUSED_LOG_MS 10000

/* Retries of a fetch that failed: from 100 ms, doubling, to 5 s. */
#define RETRY_MIN_MS 100
#define RETRY_MAX_MS 5000

static char *store_dir, *conf_file, *root_dir, *grants_dir;
static struct spx_vol_store *vs;
/* The snapshot store, opened on first need (fetching). */
static pthread_mutex_t ss_mu = PTHREAD_MUTEX_INITIALIZER;
static struct spx_obj *obj;
static struct spx_snap_store *ss;

/* A volume open in this process: shared by its connections. */
struct pvol {
	struct pvol *next;
	char id[SPX_ID_SIZE];
	unsigned refs, writers;
	struct spx_vol_track *t;
	/* Lazy restore. */
	bool restoring;			/* atomic: chunks may be left */
	struct spx_snap_fill fill;
	int fillfd;			/* data, for writing fetched chunks */
	int filldirect;			/* the same with O_DIRECT, or -1 */
	pthread_t filler;
	bool filler_on, stop;		/* stop: atomic */
	uint64_t fill_next;		/* the fillers' next entry (atomic) */
};

static pthread_mutex_t vols_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pvol *vols;

struct handle {
	int fd;
	uint64_t size;
	bool readonly;
	struct pvol *pv;
	/* Opened by a grant (uid >= 0): on the granted list until closed,
	 * cut off (atomic) once the grant is gone. */
	int64_t uid;
	bool cut;
	struct handle *gnext;
};

/* The connections grants let in, and the watch on the grants directory
 * that cuts them off when their grant goes. The watch is added by the
 * first such open (the directory exists by then: it held the grant) and
 * again after the directory was removed or moved. */
static pthread_mutex_t granted_mu = PTHREAD_MUTEX_INITIALIZER;
static struct handle *granted;
static int ino_fd = -1, ino_wd = -1, watch_stop[2] = { -1, -1 };
static pthread_t watcher;
static bool watcher_on, watch_broken;

/* The open connections of peers other than root and ours, by uid. A
 * connection's place is given back when its thread ends (conn_key's
 * destructor): nbdkit runs each connection on a thread of its own and
 * calls nothing at the end of one that never opened an export. */
struct uid_conns {
	int64_t uid;
	unsigned n;
};

static pthread_mutex_t conns_mu = PTHREAD_MUTEX_INITIALIZER;
static struct uid_conns conns[CONNS_MAX]; /* the first nconns are used */
static size_t nconns;
static unsigned conns_total, refused_unlogged;
static int64_t refused_logged_ms = -REFUSED_LOG_MS;
static pthread_key_t conn_key;
static bool conn_key_made;

static void watcher_stop(void);
static void conn_end(void *mark);

static void spxvol_unload(void)
{
	watcher_stop();
	/* XXX: a connection thread still ending may be past this and call
	 * conn_end as nbdkit unloads us; spx-vol serve kills nbdkit rather
	 * than stopping it, and other servers of ours see only trusted
	 * peers, which have no mark. */
	if (conn_key_made)
		pthread_key_delete(conn_key);
	spx_snap_store_close(ss);
	spx_obj_close(obj);
	spx_vol_store_close(vs);
	free(store_dir);
	free(conf_file);
	free(root_dir);
	free(grants_dir);
}

static int spxvol_config(const char *key, const char *value)
{
	char **to = !strcmp(key, "dir")	   ? &store_dir
		    : !strcmp(key, "conf") ? &conf_file
		    : !strcmp(key, "root") ? &root_dir
		    : !strcmp(key, "grants") ? &grants_dir
					   : NULL;

	if (!to) {
		nbdkit_error("unknown parameter '%s'", key);
		return -1;
	}
	free(*to);
	*to = nbdkit_absolute_path(value);
	return *to ? 0 : -1;
}

static struct spx_snap_store *snap_store(void)
{
	pthread_mutex_lock(&ss_mu);
	if (!ss) {
		if (!conf_file)
			spx_error(SPX_FAIL, "no conf=FILE: cannot reach the "
					    "snapshot store");
		else
			spx_snap_store_conf(conf_file, root_dir, vs, &obj, &ss);
	}
	pthread_mutex_unlock(&ss_mu);
	return ss;
}

static void sleep_ms(unsigned ms)
{
	nbdkit_nanosleep(ms / 1000, (ms % 1000) * 1000000);
}

/* Make chunk c local, waiting out failures that may pass (logged and
 * shown by spx-vol info); -1 with errno EIO for a lost chunk, or
 * ESHUTDOWN when nbdkit stops meanwhile. With wrote (the background
 * filler), only fetch and write it (spx_snap_fill_fetch): *wrote says
 * whether it awaits spx_snap_fill_commit. */
static int fetch(struct pvol *pv, uint64_t c, bool *stop, bool *wrote)
{
	unsigned wait = RETRY_MIN_MS, tries = 0;
	char *buf;

	if (wrote)
		*wrote = false;
	if (!spx_vol_track_test(pv->t, SPX_TRACK_UNFILLED, c))
		return 0;
	buf = malloc(SPX_SNAP_CHUNK);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		bool lost = false;
		struct spx_snap_store *st =
			__atomic_load_n(&pv->fill.ss, __ATOMIC_SEQ_CST);
		unsigned w = 0;

		if (!st && (st = snap_store()))
			__atomic_store_n(&pv->fill.ss, st, __ATOMIC_SEQ_CST);
		if (st && (wrote ? spx_snap_fill_fetch(&pv->fill, c, 1, buf,
						       NULL, &lost, &w)
				 : spx_snap_fill_chunk(&pv->fill, c, buf,
						       &lost)) == 0) {
			if (wrote)
				*wrote = w & 1;
			if (tries)
				nbdkit_error("%s: chunk %llu fetched after %u "
					     "failures",
					     pv->id, (unsigned long long)c, tries);
			spx_vol_track_fetch_ok(pv->t);
			free(buf);
			return 0;
		}
		if (wrote)
			*wrote = false; /* nothing to commit */
		if (lost) {
			nbdkit_error("%s: chunk %llu: %s", pv->id,
				     (unsigned long long)c, spx_errmsg());
			spx_vol_track_fetch_lost(pv->t, spx_errmsg());
			free(buf);
			errno = EIO;
			return -1;
		}
		spx_vol_track_fetch_error(pv->t, spx_errmsg());
		/* Once, and then every 10 tries: the log stays readable. */
		if (tries++ % 10 == 0)
			nbdkit_error("%s: cannot fetch chunk %llu (%s); "
				     "retrying",
				     pv->id, (unsigned long long)c, spx_errmsg());
		sleep_ms(wait);
		if ((stop && __atomic_load_n(stop, __ATOMIC_SEQ_CST)) ||
		    nbdkit_nanosleep(0, 0) < 0) {
			free(buf);
			errno = ESHUTDOWN;
			return -1;
		}
		wait = wait * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : wait * 2;
	}
}

/* Every chunk of [off, off + len) local. */
static int fetch_range(struct pvol *pv, uint64_t off, uint64_t len)
{
	if (!__atomic_load_n(&pv->restoring, __ATOMIC_SEQ_CST) || !len)
		return 0;
	for (uint64_t c = off / SPX_SNAP_CHUNK;
	     c <= (off + len - 1) / SPX_SNAP_CHUNK; c++)
		if (fetch(pv, c, NULL, NULL) < 0)
			return -1;
	return 0;
}

/* Background fetches overlap, each waiting on the store. */
#define FILLERS 4

/* Commit the chunks a filler wrote: until then a reader fetches them
 * again (the same bytes). A failure is the local disk's: logged, and
 * the chunks stay to fetch. */
static void filler_commit(struct pvol *pv, const uint64_t *c, size_t *n)
{
	if (*n && spx_snap_fill_commit(&pv->fill, c, *n) < 0)
		nbdkit_error("%s: %s", pv->id, spx_errmsg());
	*n = 0;
}

/* Claim the next run of up to SPX_SNAP_FILL_RUN adjacent chunks of the
 * snapshot: its first entry in *i and its length (0: none left). */
static unsigned claim_run(struct pvol *pv, uint64_t *i)
{
	uint64_t at = __atomic_load_n(&pv->fill_next, __ATOMIC_SEQ_CST);
	unsigned n;

	do {
		if (!(n = spx_snap_fill_run(&pv->fill.src, at)))
			return 0;
	} while (!__atomic_compare_exchange_n(&pv->fill_next, &at, at + n,
					      false, __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	*i = at;
	return n;
}

/* One try at a run of n chunks from c into buf (as the eager restore
 * does them: one store read each, one write of the adjacent ones); the
 * chunks written are added to batch. -1 when it did not work whole:
 * the caller takes the run a chunk at a time, with fetch's waits. */
static int fetch_run(struct pvol *pv, uint64_t c, unsigned n, void *buf,
		     uint64_t *batch, size_t *nb)
{
	unsigned w = 0;

	if (!buf || n < 2 || !__atomic_load_n(&pv->fill.ss, __ATOMIC_SEQ_CST) ||
	    spx_snap_fill_fetch(&pv->fill, c, n, buf, NULL, NULL, &w) < 0) {
		spx_error_clear();
		return -1;
	}
	for (unsigned j = 0; j < n; j++)
		if (w & 1u << j)
			batch[(*nb)++] = c + j;
	spx_vol_track_fetch_ok(pv->t);
	return 0;
}

static void *filler_one(void *arg)
{
	struct pvol *pv = arg;
	struct spx_snap_runbuf rb;
	unsigned char *buf = spx_snap_runbuf_get(&rb);
	uint64_t batch[SPX_SNAP_FILL_BATCH];
	size_t nb = 0;

	for (;;) {
		uint64_t i;
		unsigned n;

		if (__atomic_load_n(&pv->stop, __ATOMIC_SEQ_CST) ||
		    !(n = claim_run(pv, &i)))
			break;
		/* One sync of the data and one of the map a batch. */
		if (nb + SPX_SNAP_FILL_RUN > SPX_SNAP_FILL_BATCH)
			filler_commit(pv, batch, &nb);
		if (fetch_run(pv, pv->fill.src.v[i].idx, n, buf, batch,
			      &nb) == 0)
			continue;
		for (unsigned j = 0; j < n; j++) {
			uint64_t c = pv->fill.src.v[i + j].idx;
			bool wrote;

			if (fetch(pv, c, &pv->stop, &wrote) < 0) {
				if (errno != EIO)
					goto out;
				continue; /* a lost chunk stays to fetch */
			}
			if (wrote)
				batch[nb++] = c;
		}
	}
out:
	filler_commit(pv, batch, &nb);
	spx_snap_runbuf_put(&rb);
	return NULL;
}

static void *filler(void *arg)
{
	struct pvol *pv = arg;
	pthread_t th[FILLERS];
	int n = 0;

	for (int i = 0; i < FILLERS; i++)
		if (pthread_create(&th[n], NULL, filler_one, pv) == 0)
			n++;
	if (!n)
		filler_one(pv);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (__atomic_load_n(&pv->stop, __ATOMIC_SEQ_CST))
		return NULL;
	switch (spx_snap_fill_finish(&pv->fill)) {
	case 1:
		__atomic_store_n(&pv->restoring, false, __ATOMIC_SEQ_CST);
		nbdkit_debug("%s: every chunk is local", pv->id);
		break;
	case 0: /* a lost chunk stays to fetch */
		break;
	default:
		nbdkit_error("%s: %s", pv->id, spx_errmsg());
	}
	return NULL;
}

static void pvol_free(struct pvol *pv)
{
	if (pv->filler_on) {
		__atomic_store_n(&pv->stop, true, __ATOMIC_SEQ_CST);
		pthread_join(pv->filler, NULL);
	}
	/* Its readers may have fetched the last chunks. */
	if (__atomic_load_n(&pv->restoring, __ATOMIC_SEQ_CST) &&
	    spx_snap_fill_finish(&pv->fill) < 0)
		nbdkit_error("%s: %s", pv->id, spx_errmsg());
	spx_snap_fill_release(&pv->fill);
	if (pv->fillfd >= 0)
		close(pv->fillfd);
	if (pv->filldirect >= 0)
		close(pv->filldirect);
	spx_vol_track_close(pv->t);
	free(pv);
}

/* The process's state of volume name (size bytes now), made on first
 * use; the caller holds vols_mu. */
static struct pvol *pvol_get(const char *name, uint64_t size)
{
	struct pvol *pv;
	char *dir, *data;

	for (pv = vols; pv; pv = pv->next)
		if (!strcmp(pv->id, name)) {
			if (spx_vol_track_resize(pv->t, size) < 0)
				return NULL;
			pv->refs++;
			return pv;
		}
	pv = spx_calloc(1, sizeof(*pv));
	pv->fillfd = pv->filldirect = -1;
	pv->fill.datafd = -1;
	snprintf(pv->id, sizeof(pv->id), "%s", name);
	dir = spx_vol_dir(vs, name);
	data = spx_vol_data_path(vs, name);
	if (spx_vol_track_open(dir, size, SPX_TRACK_CREATE, &pv->t) < 0)
		goto fail;
	{
		struct spx_vol_snapstate st;

		if (spx_vol_snapstate_read(dir, &st) < 0)
			goto fail;
		if (*st.source) {
			/* The store is reached on the first fetch: it may be
			 * away now and back by then. */
			pv->fillfd = open(data, O_RDWR | O_CLOEXEC);
			if (pv->fillfd < 0) {
				spx_error_errno(SPX_FAIL, "cannot open '%s'", data);
				goto fail;
			}
			if (spx_snap_fill_open(NULL, pv->t, pv->fillfd,
					       &pv->fill) < 0)
				goto fail;
			/* Fetched chunks go around the page cache, as the
			 * guest's aligned writes do: the fillers then do not
			 * wait on each other's copies (else -1: through it). */
			pv->filldirect = open(data, O_WRONLY | O_DIRECT |
							    O_CLOEXEC);
			pv->fill.directfd = pv->filldirect;
			pv->restoring = true;
		}
	}
	free(dir);
	free(data);
	pv->refs = 1;
	pv->next = vols;
	vols = pv;
	return pv;
fail:
	free(dir);
	free(data);
	pvol_free(pv);
	return NULL;
}

static void pvol_put(struct pvol *pv, bool writer)
{
	struct pvol **pp;

	pthread_mutex_lock(&vols_mu);
	if (writer && !--pv->writers)
		spx_vol_track_writer_unlock(pv->t);
	if (--pv->refs) {
		pthread_mutex_unlock(&vols_mu);
		return;
	}
	for (pp = &vols; *pp != pv; pp = &(*pp)->next)
		;
	*pp = pv->next;
	pthread_mutex_unlock(&vols_mu);
	pvol_free(pv);
}

static int spxvol_config_complete(void)
{
	if (!store_dir) {
		nbdkit_error("dir=STORE is required");
		return -1;
	}
	if (spx_vol_store_open(store_dir, 0, &vs) < 0) {
		nbdkit_error("%s", spx_errmsg());
		return -1;
	}
	if ((errno = pthread_key_create(&conn_key, conn_end))) {
		nbdkit_error("pthread_key_create: %m");
		return -1;
	}
	conn_key_made = true;
	return 0;
}

/* Who is on the other end may open any volume: root, or this server's
 * own user (grant.h). A peer whose uid is unknown (not a unix socket)
 * may not. */
static bool peer_trusted(int64_t *uid)
{
	*uid = nbdkit_peer_uid();
	return *uid == 0 || (*uid > 0 && (uint64_t)*uid == (uint64_t)geteuid());
}

static void conn_end(void *mark)
{
	int64_t uid = *(int64_t *)mark;

	free(mark);
	pthread_mutex_lock(&conns_mu);
	for (size_t i = 0; i < nconns; i++)
		if (conns[i].uid == uid) {
			if (!--conns[i].n)
				conns[i] = conns[--nconns];
			break;
		}
	conns_total--;
	pthread_mutex_unlock(&conns_mu);
}

/* Before the handshake: a peer other than root and ours gets a place,
 * or its connection is closed. */
static int spxvol_preconnect(int readonly)
{
	int64_t uid, *mark;
	unsigned have = 0, limit = 0;
	const char *whose = NULL;
	size_t i;

	if (peer_trusted(&uid))
		return 0;
	mark = malloc(sizeof(*mark));
	if (!mark) {
		nbdkit_error("out of memory");
		return -1;
	}
	*mark = uid;
	pthread_mutex_lock(&conns_mu);
	for (i = 0; i < nconns && conns[i].uid != uid; i++)
		;
	if (i < nconns && conns[i].n >= UID_CONNS_MAX) {
		whose = "of its own";
		have = conns[i].n;
		limit = UID_CONNS_MAX;
	} else if (conns_total >= CONNS_MAX) {
		whose = "of users other than root and this server's";
		have = conns_total;
		limit = CONNS_MAX;
	} else if ((errno = pthread_setspecific(conn_key, mark))) {
		pthread_mutex_unlock(&conns_mu);
		nbdkit_error("pthread_setspecific: %m");
		free(mark);
		return -1;
	} else {
		if (i == nconns)
			conns[nconns++] = (struct uid_conns){ uid, 0 };
		conns[i].n++;
		conns_total++;
	}
	if (whose) {
		/* Logged now and then: refusals come as fast as a local
		 * user can connect. */
		int64_t now = spx_mono_ms();

		if (now - refused_logged_ms >= REFUSED_LOG_MS) {
			nbdkit_error("refused a connection of uid %lld: %u %s "
				     "are open (at most %u); %u more refused "
				     "since the last message",
				     (long long)uid, have, whose, limit,
				     refused_unlogged);
			refused_logged_ms = now;
			refused_unlogged = 0;
		} else {
			refused_unlogged++;
		}
	}
	pthread_mutex_unlock(&conns_mu);
	if (whose) {
		free(mark);
		errno = EACCES;
		return -1;
	}
	return 0;
}

/* Does the grant of volume name name uid now? A grant that cannot be
 * read or parses badly names nobody (logged). */
static bool granted_to(const char *name, int64_t uid)
{
	struct spx_vol_grant g;
	int r = grants_dir ? spx_vol_grant_read(grants_dir, name, &g) : 0;

	if (r < 0) {
		nbdkit_error("%s: %s", name, spx_errmsg());
		spx_error_clear();
	}
	return r > 0 && uid > 0 && (uint64_t)uid == g.uid;
}

/* Mark the granted connections whose grant is gone; under granted_mu. */
static void grants_recheck(void)
{
	for (struct handle *h = granted; h; h = h->gnext) {
		const char *name = h->pv->id;

		if (__atomic_load_n(&h->cut, __ATOMIC_SEQ_CST) ||
		    granted_to(name, h->uid))
			continue;
		__atomic_store_n(&h->cut, true, __ATOMIC_SEQ_CST);
		nbdkit_error("%s: the grant to uid %lld is gone: its connection "
			     "is refused from now on",
			     name, (long long)h->uid);
	}
}

/* Watch the grants directory if it is not watched; under granted_mu. */
static int watch_add(void)
{
	if (ino_wd >= 0)
		return 0;
	ino_wd = inotify_add_watch(ino_fd, grants_dir,
				   IN_CREATE | IN_DELETE | IN_MODIFY |
					   IN_CLOSE_WRITE | IN_MOVED_FROM |
					   IN_MOVED_TO | IN_ATTRIB |
					   IN_DELETE_SELF | IN_MOVE_SELF |
					   IN_ONLYDIR);
	return ino_wd < 0 ? -1 : 0;
}

static void *watch_grants(void *arg)
{
	/* Aligned as struct inotify_event needs. */
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		struct pollfd p[2] = { { ino_fd, POLLIN, 0 },
				       { watch_stop[0], POLLIN, 0 } };
		bool self = false;
		ssize_t n;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			return NULL;
		if (!p[0].revents)
			continue;
		n = read(ino_fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		pthread_mutex_lock(&granted_mu);
		for (char *e = buf; e < buf + n;) {
			const struct inotify_event *ev = (const void *)e;

			/* Of the watch now on (an IN_IGNORED of one this
			 * thread removed is not). */
			if (ev->wd == ino_wd &&
			    (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)))
				self = true;
			e += sizeof(*ev) + ev->len;
		}
		/* The directory went (or another took its name): watch the
		 * one there now, if any, before reading it, so that no later
		 * change goes unseen. */
		if (self) {
			if (ino_wd >= 0)
				inotify_rm_watch(ino_fd, ino_wd);
			ino_wd = -1;
			watch_add();
		}
		grants_recheck();
		pthread_mutex_unlock(&granted_mu);
	}
	/* Unwatched, no grant can be trusted to last: none is. */
	nbdkit_error("the watch on '%s' ended: %m; every connection a grant "
		     "let in is cut off, and no more are let in",
		     grants_dir);
	pthread_mutex_lock(&granted_mu);
	watch_broken = true;
	for (struct handle *h = granted; h; h = h->gnext)
		__atomic_store_n(&h->cut, true, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&granted_mu);
	return NULL;
}

/* The watcher, started on first need; under granted_mu. */
static int watcher_start(void)
{
	if (watcher_on)
		return 0;
	if (ino_fd < 0 &&
	    (ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return -1;
	if (watch_stop[0] < 0 && pipe2(watch_stop, O_CLOEXEC) < 0)
		return -1;
	if ((errno = pthread_create(&watcher, NULL, watch_grants, NULL)))
		return -1;
	watcher_on = true;
	return 0;
}

static void watcher_stop(void)
{
	if (watcher_on) {
		(void)!write(watch_stop[1], "", 1);
		pthread_join(watcher, NULL);
		watcher_on = false;
	}
	for (int i = 0; i < 2; i++)
		if (watch_stop[i] >= 0)
			close(watch_stop[i]);
	if (ino_fd >= 0)
		close(ino_fd);
	watch_stop[0] = watch_stop[1] = ino_fd = ino_wd = -1;
}

/* May the peer open volume name? 0, or -1 with the NBD error's errno
 * set and the reason logged. A peer let in by a grant (*uid >= 0 after)
 * is put on the granted list by grant_hold. */
static int authorize(const char *name, int64_t *uid)
{
	if (peer_trusted(uid)) {
		*uid = -1;
		return 0;
	}
	if (granted_to(name, *uid))
		return 0;
	nbdkit_error("%s: refused to uid %lld (not granted to it)", name,
		     (long long)*uid);
	errno = EACCES;
	return -1;
}

/* Put h, opened by a grant, on the granted list: the watch is on first,
 * then the grant is read again, so a grant taken away at any moment
 * either refuses this open or cuts h off. -1 (logged, errno set) when
 * it is gone or cannot be watched. */
static int grant_hold(struct handle *h, const char *name)
{
	int rc = -1;

	pthread_mutex_lock(&granted_mu);
	if (watch_broken) {
		nbdkit_error("%s: grants are not watched; refused to uid %lld",
			     name, (long long)h->uid);
		errno = EACCES;
	} else if (watcher_start() < 0 || watch_add() < 0) {
		nbdkit_error("%s: cannot watch '%s': %m; refused to uid %lld",
			     name, grants_dir, (long long)h->uid);
		errno = EACCES;
	} else if (!granted_to(name, h->uid)) {
		nbdkit_error("%s: refused to uid %lld (not granted to it)",
			     name, (long long)h->uid);
		errno = EACCES;
	} else {
		h->gnext = granted;
		granted = h;
		rc = 0;
	}
	pthread_mutex_unlock(&granted_mu);
	return rc;
}

static void grant_release(struct handle *h)
{
	struct handle **pp;

	pthread_mutex_lock(&granted_mu);
	for (pp = &granted; *pp && *pp != h; pp = &(*pp)->gnext)
		;
	if (*pp)
		*pp = h->gnext;
	pthread_mutex_unlock(&granted_mu);
}

/* Each request of a connection that was cut off fails. */
static int cut_off(struct handle *h)
{
	if (!__atomic_load_n(&h->cut, __ATOMIC_RELAXED))
		return 0;
	errno = EPERM;
	return -1;
}

static int spxvol_list_exports(int readonly, int is_tls,
			       struct nbdkit_exports *exports)
{
	struct spx_vol_info *v = NULL;
	size_t n = 0;
	int64_t uid;
	int rc = 0;

	/* A guest's user learns no volume's name from here. */
	if (!peer_trusted(&uid))
		return 0;
	if (spx_vol_list(vs, &v, &n) < 0) {
		nbdkit_error("%s", spx_errmsg());
		return -1;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = nbdkit_add_export(exports, v[i].id, NULL);
	free(v);
	return rc;
}

static void *spxvol_open(int readonly)
{
	const char *name = nbdkit_export_name();
	struct spx_vol_info v;
	struct handle *h;
	int64_t uid;
	char *path;

	if (!name || !spx_vol_id_valid(name)) {
		nbdkit_error("the export name must be a volume id, not '%s'",
			     name ? name : "");
		errno = ENOENT;
		return NULL;
	}
	if (authorize(name, &uid) < 0)
		return NULL;
	if (spx_vol_info(vs, name, &v) < 0) {
		nbdkit_error("%s", spx_errmsg());
		errno = ENOENT;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		nbdkit_error("out of memory");
		return NULL;
	}
	h->uid = uid;
	path = spx_vol_data_path(vs, name);
	h->fd = open(path, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (h->fd < 0) {
		nbdkit_error("cannot open '%s': %m", path);
		free(path);
		free(h);
		return NULL;
	}
	free(path);
	h->size = v.size;
	h->readonly = readonly;
	pthread_mutex_lock(&vols_mu);
	h->pv = pvol_get(name, v.size);
	if (h->pv && !readonly && !h->pv->writers++ &&
	    spx_vol_track_writer_lock(h->pv->t) < 0) {
		h->pv->writers--;
		pthread_mutex_unlock(&vols_mu);
		nbdkit_error("%s", spx_errmsg());
		pvol_put(h->pv, false);
		close(h->fd);
		free(h);
		errno = EBUSY;
		return NULL;
	}
	if (h->pv && !readonly && h->pv->restoring && !h->pv->filler_on) {
		/* The rest comes in the background while it is served. */
		if (pthread_create(&h->pv->filler, NULL, filler, h->pv) == 0)
			h->pv->filler_on = true;
	}
	pthread_mutex_unlock(&vols_mu);
	if (!h->pv) {
		nbdkit_error("%s", spx_errmsg());
		close(h->fd);
		free(h);
		return NULL;
	}
	/* The grant may have gone since it was read above. */
	if (uid >= 0 && grant_hold(h, name) < 0) {
		int e = errno;

		pvol_put(h->pv, !readonly);
		close(h->fd);
		free(h);
		errno = e;
		return NULL;
	}
	return h;
}

static void spxvol_close(void *handle)
{
	struct handle *h = handle;

	if (h->uid >= 0)
		grant_release(h);
	pvol_put(h->pv, !h->readonly);
	close(h->fd);
	free(h);
}

static int64_t spxvol_get_size(void *handle)
{
	return (int64_t)((struct handle *)handle)->size;
}

static int spxvol_block_size(void *handle, uint32_t *minimum,
			     uint32_t *preferred, uint32_t *maximum)
{
	*minimum = 1;
	*preferred = 4096;
	*maximum = 0xffffffff;
	return 0;
}

static int yes(void *handle)
{
	return 1;
}

static int spxvol_is_rotational(void *handle)
{
	return 0;
}

static int spxvol_can_fua(void *handle)
{
	return NBDKIT_FUA_NATIVE;
}

static int spxvol_can_cache(void *handle)
{
	return NBDKIT_CACHE_NATIVE;
}

/* The write is on the disk before it is acknowledged. */
static int sync_if(struct handle *h, uint32_t flags)
{
	if ((flags & NBDKIT_FLAG_FUA) && fdatasync(h->fd) < 0) {
		nbdkit_error("fdatasync: %m");
		return -1;
	}
	return 0;
}

static int spxvol_pread(void *handle, void *buf, uint32_t count,
			uint64_t offset, uint32_t flags)
{
	struct handle *h = handle;
	char *p = buf;

	if (cut_off(h) < 0 || fetch_range(h->pv, offset, count) < 0)
		return -1;
	while (count) {
		ssize_t r = pread(h->fd, p, count, (off_t)offset);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			nbdkit_error("pread: %m");
			return -1;
		}
		if (!r) { /* past the file (cannot be, but a zero is right) */
			memset(p, 0, count);
			break;
		}
		p += r;
		count -= (uint32_t)r;
		offset += (uint64_t)r;
	}
	return 0;
}

/* Before a write of [off, off + len): its chunks local, marked, and
 * kept for a snapshot being taken. */
static int write_begin(struct handle *h, uint64_t off, uint64_t len)
{
	if (cut_off(h) < 0 || fetch_range(h->pv, off, len) < 0)
		return -1;
	if (spx_vol_track_write_begin(h->pv->t, off, len) < 0) {
		nbdkit_error("%s", spx_errmsg());
		errno = EIO;
		return -1;
	}
	return 0;
}

static int spxvol_pwrite(void *handle, const void *buf, uint32_t count,
			 uint64_t offset, uint32_t flags)
{
	struct handle *h = handle;
	const char *p = buf;
	int rc = 0;

	if (write_begin(h, offset, count) < 0)
		return -1;
	while (count) {
		ssize_t r = pwrite(h->fd, p, count, (off_t)offset);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* ENOSPC reaches the client as itself (nbdkit keeps
			 * errno): only the new block failed. */
			nbdkit_error("pwrite: %m");
			rc = -1;
			break;
		}
		p += r;
		count -= (uint32_t)r;
		offset += (uint64_t)r;
	}
	spx_vol_track_write_end(h->pv->t);
	return rc < 0 ? rc : sync_if(h, flags);
}

static int spxvol_flush(void *handle, uint32_t flags)
{
	struct handle *h = handle;

	if (cut_off(h) < 0)
		return -1;
	if (fdatasync(h->fd) < 0) {
		nbdkit_error("fdatasync: %m");
		return -1;
	}
	return 0;
}

static int spxvol_trim(void *handle, uint32_t count, uint64_t offset,
		       uint32_t flags)
{
	struct handle *h = handle;
	int rc;

	if (write_begin(h, offset, count) < 0)
		return -1;
	/* The blocks go back to the host: thin again. */
	rc = fallocate(h->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       (off_t)offset, count);
	if (rc < 0)
		nbdkit_error("trim: %m");
	spx_vol_track_write_end(h->pv->t);
	return rc < 0 ? rc : sync_if(h, flags);
}

static int spxvol_zero(void *handle, uint32_t count, uint64_t offset,
		       uint32_t flags)
{
	struct handle *h = handle;
	int mode = flags & NBDKIT_FLAG_MAY_TRIM
			   ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
			   : FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;

	int rc;

	if (write_begin(h, offset, count) < 0)
		return -1;
	rc = fallocate(h->fd, mode, (off_t)offset, count);
	if (rc < 0) {
		/* A file system without ZERO_RANGE: nbdkit writes zeros
		 * itself (or says a fast zero is not to be had). */
		if (errno == EOPNOTSUPP)
			errno = ENOTSUP;
		if (errno != ENOTSUP)
			nbdkit_error("zero: %m");
	}
	{
		int e = errno;

		spx_vol_track_write_end(h->pv->t);
		errno = e;
	}
	return rc < 0 ? rc : sync_if(h, flags);
}

static int spxvol_extents(void *handle, uint32_t count, uint64_t offset,
			  uint32_t flags, struct nbdkit_extents *extents)
{
	struct handle *h = handle;
	uint64_t end = offset + count;

	if (cut_off(h) < 0)
		return -1;
	/* Chunks not fetched yet are holes here, data there: all data. */
	if (__atomic_load_n(&h->pv->restoring, __ATOMIC_SEQ_CST))
		return nbdkit_add_extent(extents, offset, count, 0);
	while (offset < end) {
		off_t data = lseek(h->fd, (off_t)offset, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO)
			data = (off_t)end; /* holes to the end */
		else if (data < 0) {
			nbdkit_error("lseek: %m");
			return -1;
		}
		if ((uint64_t)data > offset) {
			uint64_t to = (uint64_t)data < end ? (uint64_t)data : end;

			if (nbdkit_add_extent(extents, offset, to - offset,
					      NBDKIT_EXTENT_HOLE |
						      NBDKIT_EXTENT_ZERO) < 0)
				return -1;
			offset = to;
			if ((flags & NBDKIT_FLAG_REQ_ONE) || offset >= end)
				break;
		}
		hole = lseek(h->fd, (off_t)offset, SEEK_HOLE);
		if (hole < 0) {
			nbdkit_error("lseek: %m");
			return -1;
		}
		{
			uint64_t to = (uint64_t)hole < end ? (uint64_t)hole : end;

			if (nbdkit_add_extent(extents, offset, to - offset, 0) <
			    0)
				return -1;
			offset = to;
		}
		if (flags & NBDKIT_FLAG_REQ_ONE)
			break;
	}
	return 0;
}

static int spxvol_cache(void *handle, uint32_t count, uint64_t offset,
			uint32_t flags)
{
	struct handle *h = handle;
	int e;

	if (cut_off(h) < 0)
		return -1;
	e = posix_fadvise(h->fd, (off_t)offset, count, POSIX_FADV_WILLNEED);
	if (e) {
		errno = e;
		nbdkit_error("posix_fadvise: %m");
		return -1;
	}
	return 0;
}

/* ---- for spx's own NBD server (spxvol.h) ---- */

int spxvol_fd(void *handle)
{
	return ((struct handle *)handle)->fd;
}

int spxvol_direct_begin(void *handle, bool write, uint64_t off,
			uint32_t len, bool wait)
{
	struct handle *h = handle;
	int r;

	if (cut_off(h) < 0)
		return -1;
	if (__atomic_load_n(&h->pv->restoring, __ATOMIC_SEQ_CST))
		return 1;
	if (!write)
		return 0;
	r = wait ? spx_vol_track_write_begin(h->pv->t, off, len)
		 : spx_vol_track_write_try_begin(h->pv->t, off, len);
	if (r < 0) {
		nbdkit_error("%s", spx_errmsg());
		errno = EIO;
		return -1;
	}
	return r ? 2 : 0;
}

void spxvol_direct_end(void *handle)
{
	spx_vol_track_write_end(((struct handle *)handle)->pv->t);
}

static struct nbdkit_plugin plugin = {
	.name = "spxvol",
	.longname = "spx volumes",
	.description = "spx's block volumes (lib/vol), one export per volume",
	.unload = spxvol_unload,
	.config = spxvol_config,
	.config_complete = spxvol_config_complete,
	.config_help = "dir=<STORE>   the volume store (required)\n"
		       "conf=<FILE>   the node's configuration (to fetch "
		       "chunks of snapshots)\n"
		       "root=<DIR>    the node's root (relative paths of conf)",
	.magic_config_key = "dir",
	.preconnect = spxvol_preconnect,
	.list_exports = spxvol_list_exports,
	.open = spxvol_open,
	.close = spxvol_close,
	.get_size = spxvol_get_size,
	.block_size = spxvol_block_size,
	.can_write = yes,
	.can_flush = yes,
	.can_trim = yes,
	.can_zero = yes,
	.can_fast_zero = yes,
	.can_extents = yes,
	.can_multi_conn = yes,
	.can_fua = spxvol_can_fua,
	.can_cache = spxvol_can_cache,
	.is_rotational = spxvol_is_rotational,
	.pread = spxvol_pread,
	.pwrite = spxvol_pwrite,
	.flush = spxvol_flush,
	.trim = spxvol_trim,
	.zero = spxvol_zero,
	.extents = spxvol_extents,
	.cache = spxvol_cache,
	.errno_is_preserved = 1,
};

NBDKIT_REGISTER_PLUGIN(plugin)
