/* The load side of `spx-bench s3`: data, client, limits, nginx, nodes.
 * See s3bench.h. */
#include "spx.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "auth/cred.h"
#include "file.h"
#include "http/client.h"
#include "id.h"
#include "node/svc.h"
#include "proc.h"
#include "s3bench.h"


/* ---- the data stream ---- */

static unsigned char *pat;

int pat_init(void)
{
	if (pat)
		return 0;
	pat = spx_malloc(PAT_LEN);
	return spx_random(pat, PAT_LEN);
}

const unsigned char *pat_at(uint64_t off, size_t *avail)
{
	size_t o = (size_t)(off % PAT_LEN);

	*avail = PAT_LEN - o;
	return pat + o;
}

void pat_copy(void *dst, uint64_t off, size_t len)
{
	unsigned char *d = dst;

	while (len) {
		size_t avail, k;
		const unsigned char *s = pat_at(off, &avail);

		k = len < avail ? len : avail;
		memcpy(d, s, k);
		d += k, off += k, len -= k;
	}
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double pat_digest(enum spx_cksum_algo algo, uint64_t off, uint64_t len,
		  unsigned char out[SPX_CKSUM_MAX])
{
	struct spx_cksum c;
	double t0 = now_s();

	if (spx_cksum_init(&c, algo) < 0)
		return -1;
	while (len) {
		size_t avail, k;
		const unsigned char *s = pat_at(off, &avail);

		k = len < avail ? (size_t)len : avail;
		spx_cksum_update(&c, s, k);
		off += k, len -= k;
	}
	if (spx_cksum_final(&c, out, NULL) < 0) {
		spx_cksum_release(&c);
		return -1;
	}
	spx_cksum_release(&c);
	return now_s() - t0;
}

/* ---- the HTTP client ---- */

void ep_set(struct ep *e, const char *base, const char *ca)
{
	const char *h = strstr(base, "://");

	h = h ? h + 3 : base;
	e->base = spx_strdup(base);
	e->host = spx_xprintf("%.*s", (int)strcspn(h, "/"), h);
	e->ca = ca ? spx_strdup(ca) : NULL;
}

void ep_release(struct ep *e)
{
	free(e->base);
	free(e->host);
	free(e->ca);
	memset(e, 0, sizeof(*e));
}

static size_t on_read(char *p, size_t size, size_t n, void *ctx)
{
	struct req *r = ctx;
	size_t want = size * n;

	if (want > r->len)
		want = (size_t)r->len;
	pat_copy(p, r->off, want);
	r->off += want;
	r->len -= want;
	return want;
}

static size_t on_write(char *p, size_t size, size_t n, void *ctx)
{
	struct req *r = ctx;
	size_t len = size * n;

	spx_cksum_update(&r->crc, p, len);
	if (r->into && r->got < r->into_len) {
		size_t k = r->into_len - (size_t)r->got;

		memcpy(r->into + r->got, p, len < k ? len : k);
	}
	if (r->err.len < 4096)
		spx_buf_add(&r->err, p, len < 4096 ? len : 4096);
	r->got += len;
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct req *r = ctx;
	size_t len = size * n;

	if (len > 5 && !strncasecmp(p, "etag:", 5)) {
		const char *v = p + 5;
		size_t k = len - 5;

		while (k && (*v == ' ' || *v == '\t'))
			v++, k--;
		while (k && (v[k - 1] == '\r' || v[k - 1] == '\n' ||
			     v[k - 1] == ' '))
			k--;
		snprintf(r->etag, sizeof(r->etag), "%.*s", (int)k, v);
	}
	return len;
}

int ep_do(CURL **h, const struct ep *e, struct req *r)
{
	struct spx_kvlist hdrs = SPX_KVLIST_INIT;
	struct curl_slist *sl = NULL;
	char *url;
	bool put = !strcmp(r->method, "PUT");
	CURLcode cc;
	int rc = -1;

	spx_http_client_init();
	if (!*h && !(*h = curl_easy_init()))
		return spx_error(SPX_FAIL, "cannot initialise libcurl");
	curl_easy_reset(*h); /* keeps the connection */
	r->status = 0;
	r->got = 0;
	r->etag[0] = '\0';
	spx_buf_reset(&r->err);
	spx_cksum_init(&r->crc, SPX_CKSUM_CRC32C);
	if (r->range)
		spx_kv_add(&hdrs, "Range", r->range);
	if (r->content_md5)
		spx_kv_add(&hdrs, "Content-MD5", r->content_md5);
	{
		struct spx_sigv4_cred cred = { e->access_key, e->secret,
					       e->region, "s3", NULL };

		if (spx_http_headers(e->sign ? &cred : NULL, r->method, e->base,
				     r->path, r->query ? r->query : "", &hdrs,
				     put ? SPX_SIGV4_UNSIGNED_PAYLOAD
					 : SPX_SIGV4_EMPTY_SHA256,
				     &sl) < 0)
			goto out;
	}
	url = spx_xprintf("%s%s%s%s", e->base, r->path, r->query ? "?" : "",
			  r->query ? r->query : "");
	curl_easy_setopt(*h, CURLOPT_URL, url);
	curl_easy_setopt(*h, CURLOPT_HTTPHEADER, sl);
	curl_easy_setopt(*h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(*h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(*h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(*h, CURLOPT_BUFFERSIZE, 512L * 1024);
	curl_easy_setopt(*h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(*h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(*h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(*h, CURLOPT_HEADERDATA, r);
	if (e->ca)
		curl_easy_setopt(*h, CURLOPT_CAINFO, e->ca);
	if (put) {
		curl_easy_setopt(*h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(*h, CURLOPT_UPLOAD_BUFFERSIZE, 2L << 20);
		curl_easy_setopt(*h, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)r->len);
		curl_easy_setopt(*h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(*h, CURLOPT_READDATA, r);
	} else if (!strcmp(r->method, "HEAD")) {
		curl_easy_setopt(*h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(r->method, "GET")) {
		curl_easy_setopt(*h, CURLOPT_CUSTOMREQUEST, r->method);
	}
	cc = curl_easy_perform(*h);
	free(url);
	if (cc != CURLE_OK) {
		spx_error(SPX_FAIL, "%s %s%s: %s", r->method, e->base, r->path,
			  curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(*h, CURLINFO_RESPONSE_CODE, &r->status);
	rc = 0;
out:
	curl_slist_free_all(sl);
	spx_kv_free(&hdrs);
	return rc;
}

void req_crc(struct req *r, unsigned char out[4])
{
	unsigned char d[SPX_CKSUM_MAX];

	spx_cksum_final(&r->crc, d, NULL);
	memcpy(out, d, 4);
}

int req_fail(const struct req *r)
{
	const char *code = NULL, *end = NULL;

	if (r->err.len)
		code = memmem(r->err.p, r->err.len, "<Code>", 6);
	if (code) {
		code += 6;
		end = memchr(code, '<', r->err.len - (size_t)(code - r->err.p));
	}
	return spx_error(SPX_FAIL, "%s %s: HTTP %ld%s%.*s", r->method, r->path,
			 r->status, code && end ? " " : "",
			 code && end ? (int)(end - code) : 0, code ? code : "");
}

/* ---- threads ---- */

struct par {
	void *(*fn)(void *arg, int i);
	void *arg;
	int i;
};

static void *par_main(void *p)
{
	struct par *x = p;

	return x->fn(x->arg, x->i);
}

int par_run(int n, void *(*fn)(void *arg, int i), void *arg)
{
	pthread_t *t = spx_calloc((size_t)n, sizeof(*t));
	struct par *x = spx_calloc((size_t)n, sizeof(*x));
	int started = 0, e = 0;

	for (; started < n; started++) {
		x[started] = (struct par){ fn, arg, started };
		e = pthread_create(&t[started], NULL, par_main, &x[started]);
		if (e)
			break;
	}
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	free(x);
	if (e) {
		errno = e;
		return spx_error_errno(SPX_FAIL, "pthread_create");
	}
	return 0;
}

/* ---- limits ---- */

double raw_write(const char *path, uint64_t len)
{
	char *tmp = spx_xprintf("%s.new", path);
	double t0 = now_s(), t;
	bool w_ok;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint64_t off = 0;

	if (fd < 0) {
		spx_error_errno(SPX_FAIL, "open %s", tmp);
		free(tmp);
		return -1;
	}
	while (off < len) {
		size_t avail, k;
		const unsigned char *s = pat_at(off, &avail);
		ssize_t w;

		k = avail < (1u << 20) ? avail : (1u << 20);
		if (k > len - off)
			k = (size_t)(len - off);
		w = write(fd, s, k);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			spx_error_errno(SPX_FAIL, "write %s", tmp);
			close(fd);
			free(tmp);
			return -1;
		}
		off += (uint64_t)w;
		/* Writeback started as the bytes go, as a good writer does:
		 * the fsync then waits for the tail only. */
		if (off % (8u << 20) == 0)
			sync_file_range(fd, (off_t)(off - (8u << 20)), 8u << 20,
					SYNC_FILE_RANGE_WRITE);
	}
	/* A new file replacing the old one, as an overwrite must be done
	 * durably (an object store cannot truncate the old copy first): the
	 * new pages are allocated while the old are still cached, and the
	 * old file is freed by the rename, inside the time. */
	w_ok = fsync(fd) == 0;
	if (close(fd) < 0)
		w_ok = false;
	if (!w_ok || rename(tmp, path) < 0) {
		spx_error_errno(SPX_FAIL, "write %s", tmp);
		free(tmp);
		return -1;
	}
	t = now_s() - t0;
	free(tmp);
	return t;
}

struct f4k {
	const char *dir;
	double until;
	long *ops;
	int err;
	bool layout;
	bool ordered;	/* spx_fs_ordered of dir */
};

/* One durable 4 KiB object as spx's store lays out a new small key (a
 * flat key, lib/obj/store.c): an unnamed file written, synced and linked
 * in under the key's name, then the directory synced; on a file system
 * that commits in order, written, linked in and synced once. The floor
 * under a PUT of a new key; the store makes the file with the same call. */
static int layout_op(const char *dir, long n, const unsigned char *b,
		     bool ordered)
{
	char *k = spx_xprintf("%s/%ld", dir, n);
	int rc = spx_write_file_ordered(k, b, 4096, 0644, true, ordered);

	free(k);
	return rc;
}

static void *f4k_thread(void *arg, int i)
{
	struct f4k *f = arg;
	char *dir = spx_xprintf("%s/t%02d", f->dir, i);
	unsigned char b[4096];
	long n = 0;

	pat_copy(b, (uint64_t)i * 4096, sizeof(b));
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		f->err = errno;
	while (!f->err && now_s() < f->until) {
		char *p;
		int fd;

		if (f->layout) {
			if (layout_op(dir, n++, b, f->ordered) < 0)
				f->err = errno ? errno : EIO;
			continue;
		}
		p = spx_xprintf("%s/%ld", dir, n);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		/* A durable new file: its data and its directory entry. */
		if (fd < 0 || write(fd, b, sizeof(b)) != (ssize_t)sizeof(b) ||
		    fsync(fd) < 0 || spx_fsync_dir(dir) < 0)
			f->err = errno ? errno : EIO;
		if (fd >= 0)
			close(fd);
		free(p);
		n++;
	}
	f->ops[i] = n;
	free(dir);
	return NULL;
}

double fsync_4k(const char *dir, int n, double secs, bool layout)
{
	long *ops = spx_calloc((size_t)n, sizeof(long));
	struct f4k f = { dir, 0, ops, 0, layout, false };
	double t0, total = 0;

	if (spx_mkdirs(dir, 0755) < 0) {
		free(ops);
		return -1;
	}
	f.ordered = spx_fs_ordered(dir);
	t0 = now_s();
	f.until = t0 + secs;
	if (par_run(n, f4k_thread, &f) < 0) {
		free(ops);
		return -1;
	}
	t0 = now_s() - t0;
	for (int i = 0; i < n; i++)
		total += (double)ops[i];
	free(ops);
	if (f.err) {
		errno = f.err;
		return spx_error_errno(SPX_FAIL, "4 KiB files under %s", dir);
	}
	return total / t0;
}

/* ---- processes ---- */

int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static bool port_open(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* nginx is in /usr/sbin, which is not on every user's PATH. */
static char *find_nginx(void)
{
	const char *path = getenv("PATH");
	char *dirs = spx_xprintf("%s:/usr/sbin:/sbin", path ? path : "");
	char *save = NULL, *found = NULL;

	for (char *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *p = spx_xprintf("%s/nginx", *d ? d : ".");

		if (access(p, X_OK) == 0)
			found = p;
		else
			free(p);
	}
	free(dirs);
	return found;
}

int nginx_start(struct nginx *n, const char *prefix, const char *docroot)
{
	char *bin = find_nginx(), *conf, *base, *err;
	int port = free_port();
	struct spx_buf c = SPX_BUF_INIT;
	double until;

	memset(n, 0, sizeof(*n));
	if (!bin)
		return spx_error(SPX_FAIL, "nginx is not installed (the GET "
					   "limit): run scripts/deps.sh or "
					   "apt-get install nginx");
	if (port < 0 || spx_mkdirs(prefix, 0755) < 0) {
		free(bin);
		return spx_error(SPX_FAIL, "nginx: no port or no prefix");
	}
	n->prefix = spx_strdup(prefix);
	/* Sendfile from the page cache, keep-alive, no logging: the ceiling
	 * of a well-built C HTTP server on this machine. As many workers as
	 * the gateway could use cores. */
	spx_buf_addf(&c,
		     "worker_processes %ld;\n%s"
		     "pid %s/nginx.pid;\nerror_log %s/error.log warn;\n"
		     "events { worker_connections 1024; }\n"
		     "http {\n access_log off;\n sendfile on;\n"
		     " tcp_nopush on;\n tcp_nodelay on;\n"
		     " keepalive_requests 1000000;\n"
		     " default_type application/octet-stream;\n"
		     " client_body_temp_path %s/body;\n"
		     " proxy_temp_path %s/proxy;\n fastcgi_temp_path %s/fcgi;\n"
		     " uwsgi_temp_path %s/uwsgi;\n scgi_temp_path %s/scgi;\n"
		     " server {\n  listen 127.0.0.1:%d;\n  root %s;\n"
		     "  location / { }\n }\n}\n",
		     sysconf(_SC_NPROCESSORS_ONLN),
		     geteuid() == 0 ? "user root;\n" : "", prefix, prefix,
		     prefix, prefix, prefix, prefix, prefix, port, docroot);
	conf = spx_xprintf("%s/nginx.conf", prefix);
	err = spx_xprintf("%s/error.log", prefix);
	if (spx_write_file(conf, c.p, c.len, 0644, false) < 0)
		goto fail;
	{
		char *argv[] = { bin, "-p", (char *)prefix, "-c", conf,
				 "-e", err, "-g", "daemon off;", NULL };

		n->pid = spx_spawn(argv, true);
		if (n->pid < 0) {
			n->pid = 0;
			goto fail;
		}
	}
	until = now_s() + 10;
	while (!port_open(port)) {
		int st;

		if (waitpid(n->pid, &st, WNOHANG) == n->pid) {
			n->pid = 0;
			spx_error(SPX_FAIL, "nginx exited at start: see %s", err);
			goto fail;
		}
		if (now_s() > until) {
			spx_error(SPX_FAIL, "nginx did not listen: see %s", err);
			goto fail;
		}
		usleep(10000);
	}
	base = spx_xprintf("http://127.0.0.1:%d", port);
	ep_set(&n->ep, base, NULL);
	free(base);
	free(bin);
	free(conf);
	free(err);
	spx_buf_release(&c);
	return 0;
fail:
	free(bin);
	free(conf);
	free(err);
	spx_buf_release(&c);
	nginx_stop(n);
	return -1;
}

void nginx_stop(struct nginx *n)
{
	if (n->pid > 0) {
		/* SIGQUIT: graceful; the master waits for its workers. */
		kill(n->pid, SIGQUIT);
		while (waitpid(n->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	free(n->prefix);
	ep_release(&n->ep);
	memset(n, 0, sizeof(*n));
}

int s3node_start(struct s3node *n, const char *root, int k, int m)
{
	int ec2 = free_port(), s3 = free_port();
	char ports[2][16], *base, *toml = NULL, *pidf = NULL;
	struct spx_buf add = SPX_BUF_INIT;
	struct spx_creds *creds = NULL;
	struct spx_cred key;
	FILE *f;
	int rc = -1;

	memset(n, 0, sizeof(*n));
	n->root = spx_strdup(root);
	n->spx = spx_find_prog("spx");
	if (!n->spx)
		n->spx = spx_strdup("spx");
	n->k = k, n->m = m;
	while (s3 == ec2)
		s3 = free_port();
	snprintf(ports[0], sizeof(ports[0]), "%d", ec2);
	snprintf(ports[1], sizeof(ports[1]), "%d", s3);
	char *init[] = { n->spx, "admin", "init", "--root", n->root, "--http",
			 "--ec2-port", ports[0], "--s3-port", ports[1],
			 "--force", NULL };
	if (spx_run(init, true) != 0)
		return spx_error(SPX_FAIL, "spx admin init --root %s failed",
				 root);
	spx_buf_adds(&add, "\n[nodes.node1.obj]\ndrives = [");
	for (int i = 0; i < k + m; i++)
		spx_buf_addf(&add, "%s\"%s/data/obj/d%d\"", i ? ", " : "", root,
			     i);
	spx_buf_addf(&add, "]\ndata = %d\nparity = %d\n", k, m);
	toml = spx_xprintf("%s/spinifex.toml", root);
	f = fopen(toml, "a");
	if (!f || fwrite(add.p, 1, add.len, f) != add.len || fclose(f)) {
		spx_error_errno(SPX_FAIL, "%s", toml);
		goto out;
	}
	char *up[] = { n->spx, "up", "--root", n->root, NULL };
	if (spx_run(up, true) != 0) {
		spx_error(SPX_FAIL, "spx up --root %s failed", root);
		goto out;
	}
	pidf = spx_xprintf("%s/run", root);
	n->gw = spx_svc_pid(pidf, "gw");
	base = spx_xprintf("http://127.0.0.1:%d", s3);
	ep_set(&n->ep, base, NULL);
	free(base);
	free(toml);
	toml = spx_xprintf("%s/credentials.json", root);
	if (spx_cred_open(toml, &creds) < 0 || spx_cred_first(creds, &key) < 0)
		goto out;
	snprintf(n->ep.access_key, sizeof(n->ep.access_key), "%s",
		 key.access_key);
	snprintf(n->ep.secret, sizeof(n->ep.secret), "%s", key.secret);
	snprintf(n->ep.region, sizeof(n->ep.region), "us-east-1");
	n->ep.sign = true;
	memset(&key, 0, sizeof(key));
	rc = 0;
out:
	spx_cred_close(creds);
	spx_buf_release(&add);
	free(toml);
	free(pidf);
	return rc;
}

void s3node_stop(struct s3node *n)
{
	if (n->root && n->spx) {
		char *down[] = { n->spx, "down", "--root", n->root, NULL };

		spx_run(down, true);
	}
	free(n->root);
	free(n->spx);
	ep_release(&n->ep);
	memset(n, 0, sizeof(*n));
}

int rss_reset(pid_t pid)
{
	char p[64];
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/clear_refs", (int)pid);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "5", 1) != 1) {
		if (fd >= 0)
			close(fd);
		return spx_error_errno(SPX_FAIL, "%s", p);
	}
	close(fd);
	return 0;
}

/* A "Vm...:" line of /proc/PID/status, in bytes, or -1. */
static long long vm_field(pid_t pid, const char *field)
{
	char p[64];
	struct spx_buf b = SPX_BUF_INIT;
	const char *h;
	long long kb = -1;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	if (spx_buf_read_file(&b, p, 1u << 16) == 0) {
		spx_buf_addc(&b, '\0');
		h = strstr(b.p, field);
		if (h)
			kb = strtoll(h + strlen(field), NULL, 10);
	}
	spx_buf_release(&b);
	return kb < 0 ? -1 : kb * 1024;
}

long long rss_peak(pid_t pid)
{
	return vm_field(pid, "VmHWM:");
}

long long rss_now(pid_t pid)
{
	return vm_field(pid, "VmRSS:");
}
