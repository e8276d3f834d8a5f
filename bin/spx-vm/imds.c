/* spx-vm imds DIR: one guest connection to 169.254.169.254, on stdin and
 * stdout. QEMU's user network runs it for each connection the guest opens
 * to that address (guestfwd), so the guest it answers is the one whose
 * directory it was given: nothing the guest sends can change that. */
#include "spx.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "file.h"
#include "net/net.h"
#include "proc.h"
#include "vm/imds.h"
#include "vm/runas.h"
#include "vm/vm.h"
#include "vmcli.h"

/* A connection that says nothing for this long is closed. */
#define IDLE_MS 10000
/* Connections of one guest answered at once; more get 429. QEMU runs a
 * process for each connection the guest opens, so without a bound a
 * guest could fill the host with them. */
#define SLOTS SPX_IMDS_SLOTS
/* Requests answered on one connection at most. */
#define REQUESTS_MAX 1000

/* One of the guest's SLOTS connection slots (a lock held while this
 * process runs), or -1 when all are taken. */
static int take_slot(const char *dir)
{
	int i, fd = -1;

	for (i = 0; i < SLOTS && fd < 0; i++) {
		char name[32];
		char *path;

		snprintf(name, sizeof(name), "imds-slot-%d", i);
		path = spx_path_join(dir, name);
		fd = spx_lock_path(path, LOCK_EX | LOCK_NB, "taken");
		free(path);
	}
	spx_error_clear();
	return fd;
}

/* The token's answer leaves with the hop limit as its IP TTL (imds.h)
 * when the connection is a TCP socket of spx-vm imds-server's; under
 * guestfwd it is QEMU's socket pair, which has none. -1 when the limit
 * cannot be set: then the token is not sent. */
static int hop_limit(int fd, int hops)
{
	socklen_t len = sizeof(int);
	int domain;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
	    (domain != AF_INET && domain != AF_INET6))
		return 0;
	if (domain == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops,
		       sizeof(hops)) < 0)
		return spx_error_errno(SPX_FAIL, "cannot set the hop limit");
	if (setsockopt(fd, IPPROTO_IP, IP_TTL, &hops, sizeof(hops)) < 0 &&
	    domain == AF_INET)
		return spx_error_errno(SPX_FAIL, "cannot set the hop limit");
	return 0;
}

int cmd_imds(const struct spx_args *a)
{
	const char *dir = a->argv[0];
	char *path = spx_path_join(dir, "metadata.json");
	struct spx_buf b = SPX_BUF_INIT, out = SPX_BUF_INIT;
	unsigned char key[SPX_IMDS_KEY_LEN];
	struct spx_imds_req *r = spx_malloc(sizeof(*r));
	struct spx_imds *md = NULL;
	char in[SPX_IMDS_REQ_MAX];
	size_t have = 0;
	int n = 0, rc = SPX_FAIL, fd, slot = -1;

	if (spx_buf_read_file(&b, path, SPX_IMDS_MD_MAX) < 0 ||
	    spx_imds_load(b.p, b.len, &md) < 0) {
		spx_warn("imds: %s", spx_errmsg());
		goto out;
	}
	free(path);
	path = spx_path_join(dir, "imds.key");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, key, sizeof(key)) != (ssize_t)sizeof(key)) {
		spx_warn_errno("imds: cannot read '%s'", path);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	slot = take_slot(dir);
	if (slot < 0) {
		static const char busy[] =
			"HTTP/1.1 429 Too Many Requests\r\n"
			"Content-Type: text/plain\r\nContent-Length: 4\r\n"
			"Server: EC2ws\r\nConnection: close\r\n\r\n429\n";

		spx_write_all(STDOUT_FILENO, busy, sizeof(busy) - 1, "stdout");
		rc = SPX_OK;
		goto out;
	}
	while (n < REQUESTS_MAX) {
		int used = spx_imds_parse(in, have, r);
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		ssize_t got;

		if (used < 0) {
			memset(r, 0, sizeof(*r));
			r->close = true;
			spx_buf_adds(&out, "HTTP/1.1 400 Bad Request\r\n"
					   "Content-Type: text/plain\r\n"
					   "Content-Length: 4\r\nServer: EC2ws\r\n"
					   "Connection: close\r\n\r\n400\n");
			spx_write_all(STDOUT_FILENO, out.p, out.len, "stdout");
			break;
		}
		if (used > 0) {
			if (spx_imds_token_put(r) &&
			    hop_limit(STDOUT_FILENO,
				      spx_imds_hop_limit(md)) < 0) {
				spx_warn("imds: %s", spx_errmsg());
				break;
			}
			spx_buf_reset(&out);
			spx_imds_answer(md, r, key, time(NULL), &out);
			if (spx_write_all(STDOUT_FILENO, out.p, out.len,
					  "stdout") < 0)
				break;
			memmove(in, in + used, have - (size_t)used);
			have -= (size_t)used;
			n++;
			if (r->close)
				break;
			continue;
		}
		if (poll(&p, 1, IDLE_MS) <= 0)
			break;
		got = read(STDIN_FILENO, in + have, sizeof(in) - have);
		if (got <= 0)
			break;
		have += (size_t)got;
	}
	rc = SPX_OK;
out:
	if (slot >= 0)
		close(slot);
	spx_imds_free(md);
	spx_buf_release(&b);
	spx_buf_release(&out);
	free(r);
	free(path);
	return rc;
}

/* ---- spx-vm imds-server: the metadata service of guests on taps ---- */

/* Connections being answered at once, all guests together; more wait in
 * the listen queue. Each guest has SLOTS of them besides. */
#define SERVER_CHILDREN_MAX 128

/* Guests are told apart by the mark of the tap their packets came in
 * from (lib/net), which an accepted TCP socket carries only with
 * net.ipv4.tcp_fwmark_accept; without it every connection would be
 * turned away. Set when it is not, and said so. */
static int fwmark_accept(void)
{
	static const char path[] = "/proc/sys/net/ipv4/tcp_fwmark_accept";
	struct spx_buf b = SPX_BUF_INIT;
	int rc = 0;

	if (spx_buf_read_file(&b, path, 64) < 0) {
		spx_buf_release(&b);
		return -1;
	}
	if (b.len < 1 || b.p[0] != '1') {
		int fd = open(path, O_WRONLY | O_CLOEXEC);

		if (fd < 0 || spx_write_all(fd, "1\n", 2, path) < 0)
			rc = spx_error_errno(SPX_FAIL,
					     "net.ipv4.tcp_fwmark_accept must "
					     "be 1, and cannot be set");
		else
			spx_warn("imds-server: set "
				 "net.ipv4.tcp_fwmark_accept = 1 (guests are "
				 "known by the mark of their tap)");
		if (fd >= 0)
			close(fd);
	}
	spx_buf_release(&b);
	return rc;
}

static int listen_on(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd, on = 1;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return spx_error(SPX_USAGE, "--listen: not an IPv4 address: "
					    "'%s'",
				 addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot make a socket");
	/* The address may come onto its bridge after this starts. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &on, sizeof(on)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 128) < 0) {
		spx_error_errno(SPX_FAIL, "cannot listen on %s:%d", addr, port);
		close(fd);
		return -1;
	}
	return fd;
}

/* The directory of the running guest whose spec puts it on tap and has
 * metadata, or NULL. */
static char *guest_on(const struct vmcli *c, const char *tap)
{
	DIR *d = opendir(c->vms);
	struct dirent *de;
	char *found = NULL;

	while (d && !found && (de = readdir(d))) {
		struct spx_vm_spec s;
		char *dir;

		if (!spx_vm_name_valid(de->d_name))
			continue;
		dir = spx_path_join(c->vms, de->d_name);
		if (vmcli_spec(dir, &s) == 0 && s.imds && !strcmp(s.tap, tap) &&
		    spx_vm_pid(dir))
			found = dir;
		else
			free(dir);
		spx_vm_spec_release(&s);
		spx_error_clear();
	}
	if (d)
		closedir(d);
	return found;
}

/* Hand the connection fd to `spx-vm imds DIR` of its guest, run as the
 * guest's user when it has one (as QEMU's guestfwd child runs): 1 when
 * a child took it, 0 when it was turned away. */
static int hand_over(const struct vmcli *c, int fd, const char *prog)
{
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);
	char tap[SPX_NET_NAME_MAX + 1], who[INET_ADDRSTRLEN] = "?";
	uint32_t mark = 0, uid = 0;
	int has_user = 0;
	char *dir;
	pid_t pid;

	if (getpeername(fd, (struct sockaddr *)&peer, &len) == 0)
		inet_ntop(AF_INET, &peer.sin_addr, who, sizeof(who));
	len = sizeof(mark);
	if (getsockopt(fd, SOL_SOCKET, SO_MARK, &mark, &len) < 0 ||
	    spx_net_mark_tap(mark, tap) < 0) {
		spx_warn("imds-server: %s: not from a guest's tap (mark "
			 "0x%08x): turned away",
			 who, mark);
		spx_error_clear();
		return 0;
	}
	if (!(dir = guest_on(c, tap))) {
		spx_warn("imds-server: %s: no running guest with metadata on "
			 "tap '%s': turned away",
			 who, tap);
		return 0;
	}
	if ((has_user = spx_vm_user_read(dir, &uid)) < 0) {
		spx_warn("imds-server: %s", spx_errmsg());
		free(dir);
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		if (dup2(fd, STDIN_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(SPX_FAIL);
		if (has_user && spx_vm_user_become(uid) < 0)
			_exit(SPX_FAIL);
		execl(prog, "spx-vm", "imds", dir, (char *)NULL);
		_exit(SPX_FAIL);
	}
	if (pid < 0)
		spx_warn_errno("imds-server: cannot fork");
	free(dir);
	return pid > 0;
}

int cmd_imds_server(const struct spx_args *a)
{
	const char *addr = spx_arg(a, "listen") ? spx_arg(a, "listen")
						: "169.254.169.254";
	char *self = spx_self_dir(), *prog = NULL;
	struct vmcli c;
	long long port;
	int rc, fd = -1, children = 0;

	if (spx_arg_int(a, "port", 1, 65535, 80, &port) < 0)
		return vmcli_fail(a);
	if ((rc = vmcli_open(a, &c))) {
		free(self);
		return rc;
	}
	prog = self ? spx_path_join(self, "spx-vm") : NULL;
	if (!prog || fwmark_accept() < 0 ||
	    (fd = listen_on(addr, (int)port)) < 0) {
		if (!prog)
			spx_error(SPX_FAIL, "cannot find spx-vm itself");
		rc = vmcli_fail(a);
		goto out;
	}
	spx_warn("imds-server: answering guests on taps at %s:%lld", addr,
		 port);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int conn;

		while (waitpid(-1, NULL, WNOHANG) > 0)
			children--;
		if (children >= SERVER_CHILDREN_MAX) {
			poll(NULL, 0, 50);
			continue;
		}
		if (poll(&p, 1, 1000) <= 0)
			continue;
		conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			/* Out of descriptors or memory: not a tight loop. */
			if (errno != EINTR && errno != EAGAIN &&
			    errno != ECONNABORTED)
				poll(NULL, 0, 100);
			continue;
		}
		children += hand_over(&c, conn, prog);
		close(conn);
	}
out:
	if (fd >= 0)
		close(fd);
	free(prog);
	free(self);
	vmcli_close(&c);
	return rc;
}
