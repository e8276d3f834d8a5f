/* server.c: spx_http_start on libmicrohttpd.
 *
 * One MHD daemon per listener, each with its own thread pool. MHD parses
 * HTTP/1.1, keep-alive, chunked bodies, "Expect: 100-continue" and TLS
 * (GnuTLS); this file turns its calls into the begin/body/end pipeline of
 * driver.h. SigV4 signs the raw bytes of the request, so the unescape
 * callback leaves the path percent-encoded, and the query string is taken
 * from the raw request target that MHD's URI callback sees before it
 * parses anything (MHD's argument list turns '+' into a space).
 *
 * A request's life starts at MHD's URI callback (the request line is in)
 * and ends at its completion callback, which MHD calls for every request
 * it saw a line of, whatever happened after: that is where the access-log
 * line is written, with MHD's reason for the end.
 *
 * MHD's connection timeout is an idle timeout: a client that sends one
 * byte a second never reaches it. So every connection is also in a list
 * that a sweeper thread walks a few times a second, closing (with
 * shutdown(2), which MHD then sees as the client's end) the ones whose
 * request head is late and the ones whose body arrives too slowly; the
 * accept policy and the connection callback keep a count per client
 * address and refuse connections over the cap.
 */
#include "spx.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "http/driver.h"
#include "http/http.h"
#include "proc.h"

struct sconn;
struct addrc;

/* Per-address connection counts: a small chained hash. */
#define ADDR_BUCKETS 1024

struct spx_http_server {
	struct MHD_Daemon *d[SPX_HTTP_NSERVICES * 2];
	size_t n;
	struct spx_http_limits lim;
	struct spx_http_conns conns;
	const struct spx_http_handler *h;
	struct spx_http_alog *alog;
	struct lctx {
		struct spx_http_server *srv;
		enum spx_http_service service;
		bool tls;
		uint64_t max_body;
	} l[SPX_HTTP_NSERVICES * 2];
	/* Every open connection, for the sweeper; mu guards the list, the
	 * counts, the stats and every sconn's fields. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool mu_init, stopping, sweeping;
	pthread_t sweeper;
	struct sconn *conns_head;
	struct addrc *addrs[ADDR_BUCKETS];
	struct {
		unsigned head, body, refused;
		char last[64];
		int64_t since_ms;
	} cut;
	/* The workers that finish writes, and their queue (jmu). */
	pthread_t *wk;
	unsigned nwk;
	pthread_mutex_t jmu;
	pthread_cond_t jcv;
	bool jstop;
	struct conn *jhead, *jtail;
	/* Writes request threads are finishing themselves (end_request),
	 * and the most at once: half as many as a port's request threads,
	 * so that others still take new connections and serve reads while
	 * a slow disk holds these. */
	atomic_uint inl;
	unsigned inl_max;
};

/* What is left of a body after the answer is known is read and thrown
 * away, up to this much; past it the connection is cut. libmicrohttpd
 * 0.9.75 cannot send a response while a body is still arriving. */
#define DRAIN_MAX ((uint64_t)64 << 20)

/* How often the sweeper looks at the connections, and how often at most
 * it reports the ones it cut. */
#define SWEEP_MS 200
#define REPORT_MS 10000

struct addrkey {
	sa_family_t family;
	unsigned char a[16];
};

struct addrc {
	struct addrc *next;
	struct addrkey k;
	unsigned n;
};

enum phase { PH_HEAD, PH_BODY, PH_ANSWER };

/* One TCP connection (MHD's socket context). */
struct sconn {
	struct sconn *prev, *next;
	int fd;
	struct addrkey k;
	char addr[64];
	enum phase phase;
	bool reused;		/* kept alive after an answer */
	int64_t since_ms;	/* when the phase began */
	int64_t cp_ms;		/* body progress checkpoint: when, */
	uint64_t cp_bytes;	/* and how much had arrived then */
	uint64_t body_bytes;	/* body bytes of the current request */
	int busy;		/* the handler is running for it */
	const char *cut;	/* why the sweeper closed it, or NULL */
};

/* One request (MHD's request context). */
struct conn {
	struct spx_http_req req;
	struct spx_http_resp resp;
	struct spx_http_limits lim;
	struct lctx *l;
	struct sconn *sc;
	char *raw_query;	/* from the request target, as sent */
	bool began;
	bool queued;
	uint64_t drained;
	uint64_t sent;		/* body bytes handed to MHD */
	bool gen_failed;	/* the body generator failed midway */
	bool buffered;		/* the body was handed to MHD whole */
	/* Finished by a worker (end_request): the connection, suspended
	 * meanwhile, and whether the handler's end has run. */
	struct MHD_Connection *mc;
	bool ended;
	struct conn *jnext;
};

static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	return strlen(s);
}

struct collect {
	struct spx_http_req *req;
	size_t bytes;
};

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind,
				  const char *k, const char *v)
{
	struct collect *c = cls;

	spx_kv_add(&c->req->headers, k, v ? v : "");
	c->bytes += strlen(k) + (v ? strlen(v) : 0) + 4;
	return MHD_YES;
}

static void addr_text(const struct sockaddr *sa, char *out, size_t sz)
{
	out[0] = '\0';
	if (!sa)
		return;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  out, (socklen_t)sz);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
			  (socklen_t)sz);
}

static void peer(struct MHD_Connection *c, char *out, size_t sz)
{
	const union MHD_ConnectionInfo *ci;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	addr_text(ci ? ci->client_addr : NULL, out, sz);
}

/* ---- per-address counts and the connection list (under srv->mu) ---- */

static void addr_key(const struct sockaddr *sa, struct addrkey *k)
{
	memset(k, 0, sizeof(*k));
	if (!sa)
		return;
	k->family = sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(k->a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(k->a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static struct addrc **addr_slot(struct spx_http_server *srv,
				const struct addrkey *k)
{
	uint32_t h = 2166136261u;
	struct addrc **pp;

	for (size_t i = 0; i < sizeof(k->a); i++)
		h = (h ^ k->a[i]) * 16777619u;
	pp = &srv->addrs[(h ^ k->family) % ADDR_BUCKETS];
	while (*pp && memcmp(&(*pp)->k, k, sizeof(*k)))
		pp = &(*pp)->next;
	return pp;
}

static unsigned addr_count(struct spx_http_server *srv,
			   const struct addrkey *k)
{
	struct addrc *a = *addr_slot(srv, k);

	return a ? a->n : 0;
}

static unsigned addr_add(struct spx_http_server *srv, const struct addrkey *k,
			 int delta)
{
	struct addrc **pp = addr_slot(srv, k), *a = *pp;

	if (!a) {
		if (delta < 0)
			return 0;
		a = spx_calloc(1, sizeof(*a));
		a->k = *k;
		*pp = a;
	}
	if (delta < 0 && a->n == 0)
		return 0;
	a->n = (unsigned)((int)a->n + delta);
	if (a->n)
		return a->n;
	*pp = a->next;
	free(a);
	return 0;
}

static void note_cut(struct spx_http_server *srv, unsigned *counter,
		     const char *addr)
{
	(*counter)++;
	snprintf(srv->cut.last, sizeof(srv->cut.last), "%s", addr);
}

/* Close a connection from outside its thread: shutdown() makes MHD see
 * the end of the stream and close it on its own thread. The sconn is in
 * the list, so MHD has not told us it closed, so the descriptor is still
 * MHD's and still open. */
static void cut(struct spx_http_server *srv, struct sconn *sc,
		const char *why, unsigned *counter)
{
	sc->cut = why;
	shutdown(sc->fd, SHUT_RDWR);
	note_cut(srv, counter, sc->addr);
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr,
				 socklen_t addrlen)
{
	struct spx_http_server *srv = cls;
	struct addrkey k;
	enum MHD_Result ok = MHD_YES;
	char text[64];

	if (!srv->conns.max_per_addr)
		return MHD_YES;
	addr_key(addr, &k);
	pthread_mutex_lock(&srv->mu);
	if (addr_count(srv, &k) >= srv->conns.max_per_addr) {
		addr_text(addr, text, sizeof(text));
		note_cut(srv, &srv->cut.refused, text);
		ok = MHD_NO;
	}
	pthread_mutex_unlock(&srv->mu);
	return ok;
}

/* Connections open on this request thread. MHD tells of a connection's
 * start and of its close on the thread that serves it (each thread of
 * its pool accepts for itself), so the count needs no lock. */
static _Thread_local int thread_conns;

static void on_connection(void *cls, struct MHD_Connection *c,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode what)
{
	struct spx_http_server *srv = cls;
	struct sconn *sc = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (what == MHD_CONNECTION_NOTIFY_STARTED) {
		thread_conns++;
		sc = spx_calloc(1, sizeof(*sc));
		ci = MHD_get_connection_info(c,
					     MHD_CONNECTION_INFO_CONNECTION_FD);
		sc->fd = ci ? ci->connect_fd : -1;
		ci = MHD_get_connection_info(c,
					     MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		addr_key(ci ? ci->client_addr : NULL, &sc->k);
		addr_text(ci ? ci->client_addr : NULL, sc->addr,
			  sizeof(sc->addr));
		sc->phase = PH_HEAD;
		sc->since_ms = spx_mono_ms();
		pthread_mutex_lock(&srv->mu);
		sc->next = srv->conns_head;
		if (sc->next)
			sc->next->prev = sc;
		srv->conns_head = sc;
		/* The accept policy let it in, but another thread may have
		 * accepted one from the same address meanwhile. */
		if (addr_add(srv, &sc->k, 1) > srv->conns.max_per_addr &&
		    srv->conns.max_per_addr && sc->fd >= 0)
			cut(srv, sc, "cap", &srv->cut.refused);
		pthread_mutex_unlock(&srv->mu);
		*socket_context = sc;
		return;
	}
	if (!sc)
		return;
	thread_conns--;
	pthread_mutex_lock(&srv->mu);
	if (sc->prev)
		sc->prev->next = sc->next;
	else
		srv->conns_head = sc->next;
	if (sc->next)
		sc->next->prev = sc->prev;
	addr_add(srv, &sc->k, -1);
	pthread_mutex_unlock(&srv->mu);
	free(sc);
	*socket_context = NULL;
}

static struct sconn *sconn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Enter a phase; and mark the handler running (busy 1) or done (-1). */
static void phase(struct spx_http_server *srv, struct sconn *sc,
		  enum phase ph, int busy, uint64_t body)
{
	if (!sc)
		return;
	pthread_mutex_lock(&srv->mu);
	if (sc->phase != ph) {
		sc->phase = ph;
		sc->since_ms = sc->cp_ms = spx_mono_ms();
		sc->cp_bytes = sc->body_bytes = 0;
	}
	sc->body_bytes += body;
	sc->busy += busy;
	pthread_mutex_unlock(&srv->mu);
}

/* The sweeper: cuts connections whose head is late or whose body
 * stalls, and now and then says how many it cut. */
static void sweep(struct spx_http_server *srv, int64_t now)
{
	const struct spx_http_conns *cf = &srv->conns;
	uint64_t min = cf->body_min_rate * cf->body_timeout_ms / 1000;
	int64_t limit;

	if (!min)
		min = 1;
	for (struct sconn *sc = srv->conns_head; sc; sc = sc->next) {
		if (sc->cut || sc->fd < 0)
			continue;
		if (sc->busy) {
			/* The handler holds it: that is our time, not the
			 * client's. */
			sc->cp_ms = now;
			sc->cp_bytes = sc->body_bytes;
			continue;
		}
		/* A kept-alive connection may wait for its next request
		 * as long as an idle one; its head is due by then. */
		limit = sc->reused ? (int64_t)cf->idle_timeout_s * 1000
				   : (int64_t)cf->header_timeout_ms;
		if (sc->phase == PH_HEAD && cf->header_timeout_ms &&
		    now - sc->since_ms >= limit) {
			cut(srv, sc, "head", &srv->cut.head);
		} else if (sc->phase == PH_BODY && cf->body_timeout_ms &&
			   now - sc->cp_ms >= cf->body_timeout_ms) {
			if (sc->body_bytes - sc->cp_bytes < min) {
				cut(srv, sc, "body", &srv->cut.body);
				continue;
			}
			sc->cp_ms = now;
			sc->cp_bytes = sc->body_bytes;
		}
	}
	if (now - srv->cut.since_ms < REPORT_MS)
		return;
	if (srv->cut.head || srv->cut.body || srv->cut.refused)
		spx_log(SPX_LOG_WARN,
			"http: in the last %lld s: %u connections closed "
			"without a complete request head in %u ms, %u bodies "
			"cut for sending under %llu bytes/s, %u connections "
			"refused over %u per address (the last from %s)",
			(long long)(now - srv->cut.since_ms) / 1000,
			srv->cut.head, cf->header_timeout_ms, srv->cut.body,
			(unsigned long long)cf->body_min_rate,
			srv->cut.refused, cf->max_per_addr, srv->cut.last);
	srv->cut.head = srv->cut.body = srv->cut.refused = 0;
	srv->cut.since_ms = now;
}

static void *sweeper(void *arg)
{
	struct spx_http_server *srv = arg;
	struct timespec ts;

	pthread_mutex_lock(&srv->mu);
	srv->cut.since_ms = spx_mono_ms();
	while (!srv->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += SWEEP_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&srv->cv, &srv->mu, &ts);
		if (!srv->stopping)
			sweep(srv, spx_mono_ms());
	}
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/* ---- requests ------------------------------------------------------ */

static ssize_t gen_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct conn *cn = cls;
	ssize_t n;

	if (cn->resp.gen) {
		n = cn->resp.gen(cn->resp.gen_ctx, pos, buf, max);
	} else {
		/* A buffered body goes through here too, so that what was
		 * handed to the connection is counted the same way. */
		size_t left = pos < cn->resp.body.len
				      ? cn->resp.body.len - (size_t)pos
				      : 0;

		n = (ssize_t)(left < max ? left : max);
		memcpy(buf, cn->resp.body.p + pos, (size_t)n);
	}
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n < 0) {
		cn->gen_failed = true;
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	cn->sent += (uint64_t)n;
	return n;
}

static enum MHD_Result queue(struct MHD_Connection *c, struct conn *cn)
{
	struct spx_http_resp *r = &cn->resp;
	struct MHD_Response *mr;
	enum MHD_Result ret;
	uint64_t size;
	size_t block;

	if (r->gen) {
		size = r->gen_len < 0 ? MHD_SIZE_UNKNOWN : (uint64_t)r->gen_len;
		block = r->gen_block ? r->gen_block : 64 * 1024;
	} else {
		size = r->body.len;
		block = r->body.len ? r->body.len : 1;
		if (block > 64 * 1024)
			block = 64 * 1024;
	}
	/* A buffered body is handed over whole: MHD sends it with the
	 * head in one call (the answer's bytes count as sent once it is
	 * complete, on_completed). */
	if (!r->gen) {
		cn->buffered = true;
		mr = MHD_create_response_from_buffer(r->body.len, r->body.p,
						     MHD_RESPMEM_PERSISTENT);
	} else {
		mr = MHD_create_response_from_callback(size, block, gen_cb, cn,
						       NULL);
	}
	if (!mr)
		return MHD_NO;
	for (size_t i = 0; i < r->headers.n; i++)
		MHD_add_response_header(mr, r->headers.v[i].k,
					r->headers.v[i].v);
	if (r->close)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION,
					"close");
	ret = MHD_queue_response(c, (unsigned)r->status, mr);
	MHD_destroy_response(mr);
	cn->queued = true;
	return ret;
}

static struct conn *conn_new(struct lctx *l, struct MHD_Connection *c,
			     const char *uri)
{
	struct conn *cn = spx_calloc(1, sizeof(*cn));

	spx_http_resp_init(&cn->resp);
	spx_http_req_start(&cn->req);
	cn->l = l;
	cn->sc = sconn_of(c);
	cn->req.service = l->service;
	cn->req.tls = l->tls;
	cn->req.content_length = -1;
	/* Until the head is parsed, the access log knows only this. */
	cn->req.path = spx_strndup(uri, strcspn(uri, "?"));
	cn->raw_query = spx_strdup(strchr(uri, '?') ? strchr(uri, '?') + 1 : "");
	peer(c, cn->req.remote, sizeof(cn->req.remote));
	return cn;
}

/* The request line is in: the request's life (and its log line) starts
 * here, so that a head libmicrohttpd refuses itself is logged too. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	return conn_new(cls, c, uri ? uri : "");
}

static void begin(struct lctx *l, struct MHD_Connection *c, struct conn *cn,
		  const char *url, const char *method, const char *version)
{
	struct spx_http_server *srv = l->srv;
	struct collect col;
	const char *cl;
	char *end;

	free(cn->req.path);
	cn->req.method = spx_strdup(method);
	cn->req.path = spx_strdup(url);
	col.req = &cn->req;
	col.bytes = strlen(method) + strlen(url) + strlen(version) + 4;
	MHD_get_connection_values(c, MHD_HEADER_KIND, add_header, &col);
	/* The query as sent (conn_new kept it): what SigV4 signs. */
	free(cn->req.query);
	cn->req.query = cn->raw_query ? cn->raw_query : spx_strdup("");
	cn->raw_query = NULL;
	col.bytes += strlen(cn->req.query);
	cl = spx_kv_geti(&cn->req.headers, "Content-Length");
	if (cl) {
		errno = 0;
		unsigned long long v = strtoull(cl, &end, 10);
		if (!errno && end != cl && !*end && *cl != '-' && v <= INT64_MAX)
			cn->req.content_length = (int64_t)v;
	}
	cn->began = true;
	cn->lim = srv->lim;
	if (l->max_body)
		cn->lim.max_body_bytes = l->max_body;
	spx_http_drive_begin(srv->h, &cn->lim, &cn->req, col.bytes, &cn->resp);
}

/* ---- the workers that finish writes --------------------------------
 *
 * A request that changes something ends in the handler's end, which
 * commits it: files written and synced, a wait on the disk of a few
 * milliseconds. On a request thread that wait would hold up every other
 * connection the thread serves, so the number of request threads would
 * have to follow the number of writers; instead the connection is
 * suspended, a worker runs the end, and resuming it brings the answer
 * back to the request thread, which sends it. Reads (GET, HEAD,
 * OPTIONS) end on the request thread: their end reads what the page
 * cache mostly holds, and a hand-over would cost more than it saves. */

static bool is_read(const char *method)
{
	return method && (!strcmp(method, "GET") || !strcmp(method, "HEAD") ||
			  !strcmp(method, "OPTIONS"));
}

/* The end of a suspended request. MHD then calls on_request again, on
 * the connection's own thread, which queues the answer. */
static void finish(struct spx_http_server *srv, struct conn *cn)
{
	spx_http_drive_end(srv->h, &cn->req, &cn->resp);
	cn->ended = true;
	MHD_resume_connection(cn->mc);
}

/* Take one of the inline slots: false when all are taken. */
static bool inline_take(struct spx_http_server *srv)
{
	unsigned n = atomic_load(&srv->inl);

	while (n < srv->inl_max)
		if (atomic_compare_exchange_weak(&srv->inl, &n, n + 1))
			return true;
	return false;
}

/* End the request: true when a worker will (the connection suspended
 * meanwhile), false when this thread has. */
static bool end_request(struct spx_http_server *srv, struct MHD_Connection *c,
			struct conn *cn)
{
	if (!srv->nwk || is_read(cn->req.method)) {
		spx_http_drive_end(srv->h, &cn->req, &cn->resp);
		return false;
	}
	/* A thread serving this connection alone holds up no other while it
	 * waits for the disk: it finishes the write itself, without the two
	 * thread switches of the hand-over, while a slot is free. */
	if (thread_conns == 1 && inline_take(srv)) {
		spx_http_drive_end(srv->h, &cn->req, &cn->resp);
		atomic_fetch_sub(&srv->inl, 1);
		return false;
	}
	/* Suspended before it is queued, outside the queue's lock: the
	 * suspension is a system call (MHD takes the connection out of its
	 * epoll set), and the workers wait for that lock. */
	cn->mc = c;
	cn->jnext = NULL;
	MHD_suspend_connection(c);
	pthread_mutex_lock(&srv->jmu);
	/* Stopping: the workers may be gone, so this thread finishes it, as
	 * a worker would. */
	if (srv->jstop) {
		pthread_mutex_unlock(&srv->jmu);
		finish(srv, cn);
		return true;
	}
	if (srv->jtail)
		srv->jtail->jnext = cn;
	else
		srv->jhead = cn;
	srv->jtail = cn;
	pthread_mutex_unlock(&srv->jmu);
	/* After the unlock, so that the worker it wakes does not wait for
	 * the lock at once. A worker that finds no job waits again. */
	pthread_cond_signal(&srv->jcv);
	return true;
}

static void *worker(void *arg)
{
	struct spx_http_server *srv = arg;

	pthread_mutex_lock(&srv->jmu);
	for (;;) {
		struct conn *cn = srv->jhead;

		if (!cn) {
			if (srv->jstop)
				break;
			pthread_cond_wait(&srv->jcv, &srv->jmu);
			continue;
		}
		srv->jhead = cn->jnext;
		if (!srv->jhead)
			srv->jtail = NULL;
		pthread_mutex_unlock(&srv->jmu);
		finish(srv, cn);
		pthread_mutex_lock(&srv->jmu);
	}
	pthread_mutex_unlock(&srv->jmu);
	return NULL;
}

/* Every job queued is finished (its connection resumed) before the
 * workers stop: the daemons stop after them. */
static void workers_stop(struct spx_http_server *srv)
{
	if (!srv->wk)
		return;
	pthread_mutex_lock(&srv->jmu);
	srv->jstop = true;
	pthread_cond_broadcast(&srv->jcv);
	pthread_mutex_unlock(&srv->jmu);
	for (unsigned i = 0; i < srv->nwk; i++)
		pthread_join(srv->wk[i], NULL);
	free(srv->wk);
	srv->wk = NULL;
	srv->nwk = 0;
}

static int workers_start(struct spx_http_server *srv, unsigned n)
{
	srv->wk = spx_calloc(n ? n : 1, sizeof(*srv->wk));
	for (unsigned i = 0; i < n; i++) {
		int e = pthread_create(&srv->wk[i], NULL, worker, srv);

		if (e) {
			errno = e;
			return spx_error_errno(SPX_FAIL, "cannot start a thread");
		}
		srv->nwk = i + 1;
	}
	return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct lctx *l = cls;
	struct spx_http_server *srv = l->srv;
	struct conn *cn = *con_cls;
	enum MHD_Result ret;

	if (!cn) {
		cn = conn_new(l, c, url);
		*con_cls = cn;
	}
	if (!cn->began) {
		phase(srv, cn->sc, PH_BODY, 1, 0);
		begin(l, c, cn, url, method, version);
		phase(srv, cn->sc, PH_BODY, -1, 0);
		/* An answer before the body, with a body to come. Answering
		 * now and closing resets a client that is sending already,
		 * which then sees a broken pipe instead of the answer: boto3,
		 * for one, waits only a second for "100 Continue" and then
		 * sends anyway, so under load it lost such answers. So a
		 * body we would read whole (declared up to DRAIN_MAX, or
		 * chunked) is taken (after "100 Continue" if the client
		 * asks) and dropped, and the answer goes at the final call,
		 * where keep-alive survives too; a chunked body past
		 * DRAIN_MAX is cut. Only a client that declared more than
		 * that gets the answer now, without "100 Continue", and the
		 * connection closes. */
		if (cn->resp.ready &&
		    cn->req.content_length > (int64_t)DRAIN_MAX)
			return queue(c, cn);
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (cn->resp.ready) {
			phase(srv, cn->sc, PH_BODY, 0, n);
			cn->drained += n;
			return cn->drained > DRAIN_MAX ? MHD_NO : MHD_YES;
		}
		phase(srv, cn->sc, PH_BODY, 1, n);
		spx_http_drive_body(srv->h, &cn->lim, &cn->req, upload, n,
				    &cn->resp);
		phase(srv, cn->sc, PH_BODY, -1, 0);
		return MHD_YES;
	}
	if (!cn->ended) {
		phase(srv, cn->sc, PH_ANSWER, 1, 0);
		if (!cn->resp.ready && end_request(srv, c, cn))
			return MHD_YES;
	}
	ret = cn->queued ? MHD_YES : queue(c, cn);
	phase(srv, cn->sc, PH_ANSWER, -1, 0);
	return ret;
}

static const char *ending(enum MHD_RequestTerminationCode toe,
			  const struct sconn *sc, const struct conn *cn)
{
	/* However MHD saw the end of a connection we cut, we cut it. */
	if (sc && sc->cut && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK &&
	    toe != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN)
		return "timeout";
	switch (toe) {
	case MHD_REQUEST_TERMINATED_COMPLETED_OK:
		return "ok";
	case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
		return "timeout";
	case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
		return "shutdown";
	case MHD_REQUEST_TERMINATED_READ_ERROR:
	case MHD_REQUEST_TERMINATED_CLIENT_ABORT:
		return "aborted";
	case MHD_REQUEST_TERMINATED_WITH_ERROR:
		/* While an answer was being sent, and not because of us: the
		 * client went away (MHD's send failed). */
		if (cn->queued && !cn->gen_failed)
			return "aborted";
		return "error";
	default:
		return "error";
	}
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct lctx *l = cls;
	struct spx_http_server *srv = l->srv;
	struct conn *cn = *con_cls;
	struct spx_http_outcome o = { 0 };

	if (!cn)
		return;
	clock_gettime(CLOCK_MONOTONIC, &o.t1);
	pthread_mutex_lock(&srv->mu);
	o.end = ending(toe, cn->sc, cn);
	pthread_mutex_unlock(&srv->mu);
	o.status = cn->queued ? cn->resp.status : 0;
	o.in = cn->req.body_seen + cn->drained;
	o.out = cn->buffered ? (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK
					? cn->resp.body.len
					: 0)
			     : cn->sent;
	spx_http_alog_write(srv->alog, &cn->req, &o);
	/* The next request's head is due from now. */
	phase(srv, cn->sc, PH_HEAD, 0, 0);
	if (cn->sc) {
		pthread_mutex_lock(&srv->mu);
		cn->sc->reused = true;
		pthread_mutex_unlock(&srv->mu);
	}
	if (cn->began && srv->h->done)
		srv->h->done(srv->h->app, &cn->req);
	spx_http_resp_release(&cn->resp);
	spx_http_req_release(&cn->req);
	free(cn->raw_query);
	free(cn);
	*con_cls = NULL;
}

__attribute__((format(printf, 2, 0))) static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	spx_log(SPX_LOG_INFO, "http: %s", line);
}

static int parse_addr(const char *bind, int port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!strcmp(bind, "localhost"))
		bind = "127.0.0.1";
	if (inet_pton(AF_INET, bind, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		return 0;
	}
	if (inet_pton(AF_INET6, bind, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		return 0;
	}
	return spx_error(SPX_USAGE, "bad listen address '%s'", bind);
}

int spx_http_start(const struct spx_http_listener *ls, size_t n,
		   unsigned threads, const struct spx_http_limits *lim,
		   const struct spx_http_conns *conns,
		   const struct spx_http_handler *h, struct spx_http_alog *alog,
		   struct spx_http_server **out)
{
	struct spx_http_server *srv;
	struct sockaddr_storage ss;
	pthread_condattr_t ca;
	unsigned flags;

	if (n > SPX_ARRAY_SIZE(srv->d))
		return spx_error(SPX_USAGE, "too many listeners");
	srv = spx_calloc(1, sizeof(*srv));
	srv->lim = *lim;
	if (conns)
		srv->conns = *conns;
	if (!srv->conns.idle_timeout_s)
		srv->conns.idle_timeout_s = 120;
	srv->h = h;
	srv->alog = alog;
	pthread_mutex_init(&srv->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&srv->jmu, NULL);
	pthread_cond_init(&srv->jcv, NULL);
	srv->mu_init = true;
	srv->inl_max = threads / 2;
	if (srv->conns.workers && workers_start(srv, srv->conns.workers) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		if (parse_addr(ls[i].bind, ls[i].port, &ss) < 0)
			goto fail;
		srv->l[i].srv = srv;
		srv->l[i].service = ls[i].service;
		srv->l[i].tls = ls[i].cert_pem != NULL;
		srv->l[i].max_body = ls[i].max_body_bytes;
		flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			MHD_USE_ERROR_LOG;
		if (srv->conns.workers)
			flags |= MHD_ALLOW_SUSPEND_RESUME;
		if (ss.ss_family == AF_INET6)
			flags |= MHD_USE_IPv6;
		if (ls[i].cert_pem)
			flags |= MHD_USE_TLS;
		/* The connection memory pool holds the request head. It is
		 * well above our own header limit so that the driver, not
		 * MHD, answers an oversized head, with an AWS error body; only
		 * a head beyond the pool itself gets MHD's own 431 page. Not
		 * larger: libmicrohttpd 0.9.75 zeroes the whole pool between
		 * two requests of a kept-alive connection, which at 1 MiB was
		 * 15% of the gateway's CPU on small GETs. */
		size_t pool = lim->max_header_bytes * 4;

		if (pool < (64u << 10))
			pool = 64u << 10;
		/* The logger first, so that MHD reports everything after it
		 * through us. The TLS pair last, so that END can cut it. */
		struct MHD_OptionItem opts[] = {
			{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL },
			{ MHD_OPTION_SOCK_ADDR, 0, &ss },
			{ MHD_OPTION_THREAD_POOL_SIZE, threads, NULL },
			{ MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)pool,
			  NULL },
			{ MHD_OPTION_CONNECTION_TIMEOUT,
			  (intptr_t)srv->conns.idle_timeout_s, NULL },
			{ MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)no_unescape,
			  NULL },
			{ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri,
			  &srv->l[i] },
			{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed,
			  &srv->l[i] },
			{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection,
			  srv },
			{ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)ls[i].key_pem },
			{ MHD_OPTION_HTTPS_MEM_CERT, 0,
			  (void *)ls[i].cert_pem },
			{ MHD_OPTION_END, 0, NULL },
		};

		if (!ls[i].cert_pem)
			opts[9].option = MHD_OPTION_END;
		srv->d[i] = MHD_start_daemon(flags, 0, on_accept, srv,
					     on_request, &srv->l[i],
					     MHD_OPTION_ARRAY, opts,
					     MHD_OPTION_END);
		if (!srv->d[i]) {
			spx_error_errno(SPX_FAIL, "cannot listen on %s port %d",
					ls[i].bind, ls[i].port);
			goto fail;
		}
		srv->n = i + 1;
	}
	if (srv->conns.header_timeout_ms || srv->conns.body_timeout_ms ||
	    srv->conns.max_per_addr) {
		int e = pthread_create(&srv->sweeper, NULL, sweeper, srv);

		if (e) {
			errno = e;
			spx_error_errno(SPX_FAIL, "cannot start a thread");
			goto fail;
		}
		srv->sweeping = true;
	}
	*out = srv;
	return 0;
fail:
	spx_http_stop(srv);
	return -1;
}

void spx_http_stop(struct spx_http_server *srv)
{
	if (!srv)
		return;
	if (srv->sweeping) {
		pthread_mutex_lock(&srv->mu);
		srv->stopping = true;
		pthread_cond_signal(&srv->cv);
		pthread_mutex_unlock(&srv->mu);
		pthread_join(srv->sweeper, NULL);
	}
	workers_stop(srv);
	for (size_t i = 0; i < srv->n; i++)
		if (srv->d[i])
			MHD_stop_daemon(srv->d[i]);
	/* Every connection is closed and every count back to zero. */
	for (size_t i = 0; i < ADDR_BUCKETS; i++)
		while (srv->addrs[i]) {
			struct addrc *a = srv->addrs[i];

			srv->addrs[i] = a->next;
			free(a);
		}
	if (srv->mu_init) {
		pthread_cond_destroy(&srv->cv);
		pthread_mutex_destroy(&srv->mu);
		pthread_cond_destroy(&srv->jcv);
		pthread_mutex_destroy(&srv->jmu);
	}
	free(srv);
}
