/* vm.c: `spx-bench vm`, instances beside their limits.
 *
 * A private node (spx admin init --http, spx up: the gateway and the node
 * agent), the test image (scripts/mkimage.sh, or --image) imported with
 * `spx admin images import`, a key pair from CreateKeyPair. Each run
 * launches one t3.micro with RunInstances and polls, through the EC2 API
 * as a client would, until it is `running` (DescribeInstances), its
 * console shows something (GetConsoleOutput non-empty) and its SSH
 * server answers through the forwarded loopback port (the server's
 * `SSH-2.0-` banner, then a full login with the key by ssh(1)); then it
 * is terminated and polled until `terminated`. The accelerator QEMU ran
 * with comes from `spx-vm info`.
 *
 * The last run also times DescribeInstances with 100 and 1000 instance
 * records (--records) from a few concurrent clients (--clients), each
 * request SigV4-signed on a kept-alive connection, beside the same
 * clients calling DescribeRegions: the cost of a signed EC2 request on
 * this gateway with no records to read, its limit. The records cannot
 * all be booted: they are copies of the record RunInstances wrote for
 * the last run's instance, each with a new instance and reservation id
 * and stopped (State 80), written into the node's record store
 * (lib/state) beside the real ones, which the agent leaves alone. The
 * report says so. */
#include "spx.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "auth/cred.h"
#include "bench/bench.h"
#include "bench/vmout.h"
#include "conf/conf.h"
#include "ec2/instance.h"
#include "file.h"
#include "http/client.h"
#include "id.h"
#include "node/svc.h"
#include "proc.h"
#include "s3bench.h"
#include "size.h"
#include "state/state.h"
#include "vmbench.h"

#define EC2_VERSION "2016-11-15"
#define KEY_NAME "spx-bench"
#define ITYPE "t3.micro"
#define POLL_MS 50
#define NRECS 2

struct vmb {
	char *base, *dir, *root, *logs, *image, *key, *spx, *spxvm, *spxvol;
	char *ep;
	char *ami, *state_url, *mkimage;
	struct spx_state *st;
	struct spx_cred cred;
	struct spx_sigv4_cred sig;
	bool up, quick, have_ssh;
	uint64_t nruns, timeout_s, clients;
	uint64_t recs[NRECS];
	double api_s;
	char accel[16];
	char *tmpl;	/* the last booted instance's record (JSON) */
	const char *tag, *results;
	struct spx_bench_run *run;
};

static void sleep_ms(int ms)
{
	poll(NULL, 0, ms);
}

/* Run argv with stdin from in_f (NULL: /dev/null), stdout into out (NULL: the logs'
 * file) and stderr into the logs; the child gets SIGTERM when spx-bench
 * dies. Returns its exit status, or -1. */
static int run_in(const struct vmb *v, char *const argv[], const char *in_f,
		  const char *out)
{
	pid_t parent = getpid(), pid;
	char *log = spx_path_join(v->logs, "commands.log");
	int st;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		free(log);
		return spx_error_errno(SPX_FAIL, "cannot fork");
	}
	if (pid == 0) {
		int in = open(in_f ? in_f : "/dev/null", O_RDONLY | O_CLOEXEC);
		int e = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			     0600);
		int o = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC |
						O_CLOEXEC,
				   0600)
			    : e;

		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 ||
		    getppid() != parent)
			_exit(SPX_FAIL);
		if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 ||
		    dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(SPX_FAIL);
		execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	free(log);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return spx_error_errno(SPX_FAIL, "waitpid");
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return spx_error(SPX_FAIL, "%s was killed by signal %d", argv[0],
			 WTERMSIG(st));
}

static int run_to(const struct vmb *v, char *const argv[], const char *out)
{
	return run_in(v, argv, NULL, out);
}

/* run_to, and the first line of its output into *line (caller frees). */
static int run_line(const struct vmb *v, char *const argv[], char **line)
{
	char *out = spx_path_join(v->logs, "out.txt");
	struct spx_buf b = SPX_BUF_INIT;
	int rc = run_to(v, argv, out);

	*line = NULL;
	if (rc == 0 && spx_buf_read_file(&b, out, 1 << 20) == 0) {
		spx_buf_addc(&b, 0);
		*line = spx_xprintf("%.*s", (int)strcspn(b.p, "\n"), b.p);
	}
	spx_buf_release(&b);
	free(out);
	if (rc > 0)
		return spx_error(SPX_FAIL, "%s %s exited with status %d (see "
					   "%s/commands.log)",
				 argv[0], argv[1], rc, v->logs);
	return rc;
}

/* ---- the EC2 API --------------------------------------------------- */

/* The text of the first <tag>...</tag> of an answer, or NULL (caller
 * frees). */
static char *xml_get(const struct spx_buf *b, const char *tag)
{
	return spx_vmout_xml_text(b->p, b->len, tag);
}

static void fill_call(const struct vmb *v, struct spx_http_call *c,
		      const char *body)
{
	memset(c, 0, sizeof(*c));
	c->method = "POST";
	c->endpoint = v->ep;
	c->path = "/";
	c->body = body;
	c->body_len = strlen(body);
	c->content_type = "application/x-www-form-urlencoded; charset=utf-8";
	c->cred = &v->sig;
	c->timeout_ms = 60000;
}

/* One EC2 call: params after Action and Version. body gets the answer;
 * anything but 200 is an error naming the action and EC2's code. */
static int ec2(const struct vmb *v, const char *action, const char *params,
	       struct spx_buf *body)
{
	char *q = spx_xprintf("Action=%s&Version=%s%s%s", action, EC2_VERSION,
			      *params ? "&" : "", params);
	struct spx_http_call c;
	long status = 0;
	int rc;

	fill_call(v, &c, q);
	spx_buf_reset(body);
	rc = spx_http_call(&c, &status, body, 64u << 20);
	free(q);
	if (rc < 0)
		return -1;
	spx_buf_addc(body, 0);
	body->len--;
	if (status != 200) {
		char *code = xml_get(body, "Code");
		char *msg = xml_get(body, "Message");

		spx_error(SPX_FAIL, "%s: HTTP %ld %s: %s", action, status,
			  code ? code : "?", msg ? msg : "");
		free(code);
		free(msg);
		return -1;
	}
	return 0;
}

/* The state name of instance id, or NULL with an error recorded. */
static char *inst_state(const struct vmb *v, const char *id,
			struct spx_buf *b)
{
	char *p = spx_xprintf("InstanceId.1=%s", id), *s = NULL;
	const char *is;

	if (ec2(v, "DescribeInstances", p, b) == 0) {
		is = memmem(b->p, b->len, "<instanceState>", 15);
		s = is ? spx_vmout_xml_text(is, b->len - (size_t)(is - b->p),
					    "name")
		       : NULL;
		if (!s)
			spx_error(SPX_FAIL, "DescribeInstances %s: no state",
				  id);
	}
	free(p);
	return s;
}

/* ---- the node ------------------------------------------------------ */

static char *find_mkimage(void)
{
	static const char *const rel[] = { "../share/spx/mkimage.sh",
					   "../../scripts/mkimage.sh" };

	return spx_find_beside("SPX_MKIMAGE", rel, SPX_ARRAY_SIZE(rel));
}

static bool have_prog(const char *prog)
{
	char *p = spx_find_prog(prog);
	bool ok = p != NULL;

	free(p);
	return ok;
}

static int node_up(struct vmb *v)
{
	char ports[2][16], *line = NULL, *toml, *file;
	struct spx_creds *creds = NULL;
	struct spx_conf conf;
	int ec2p = free_port(), s3p = free_port(), rc;

	while (s3p == ec2p)
		s3p = free_port();
	snprintf(ports[0], sizeof(ports[0]), "%d", ec2p);
	snprintf(ports[1], sizeof(ports[1]), "%d", s3p);
	char *init[] = { v->spx, "admin", "init", "--root", v->root, "--http",
			 "--ec2-port", ports[0], "--s3-port", ports[1],
			 "--force", NULL };
	if (run_to(v, init, NULL) != 0)
		return spx_error(SPX_FAIL, "spx admin init --root %s failed "
					   "(see %s/commands.log)",
				 v->root, v->logs);
	char *up[] = { v->spx, "up", "--root", v->root, NULL };
	if (run_to(v, up, NULL) != 0)
		return spx_error(SPX_FAIL, "spx up --root %s failed (see "
					   "%s/commands.log)",
				 v->root, v->logs);
	v->up = true;
	v->ep = spx_xprintf("http://127.0.0.1:%d", ec2p);
	toml = spx_xprintf("%s/spinifex.toml", v->root);
	rc = spx_conf_load(toml, v->root, &conf);
	free(toml);
	if (rc < 0)
		return -1;
	v->state_url = spx_strdup(conf.paths.state);
	spx_conf_release(&conf);
	if (spx_state_open(v->state_url, 0, &v->st) < 0)
		return -1;
	file = spx_xprintf("%s/credentials.json", v->root);
	rc = spx_cred_open(file, &creds) < 0 ||
			     spx_cred_first(creds, &v->cred) < 0
		     ? -1
		     : 0;
	spx_cred_close(creds);
	free(file);
	if (rc < 0)
		return -1;
	v->sig.access_key = v->cred.access_key;
	v->sig.secret = v->cred.secret;
	v->sig.region = "us-east-1";
	v->sig.service = "ec2";
	/* The image, as an operator imports one. */
	char *imp[] = { v->spx, "admin", "images", "import", "--root", v->root,
			v->image, "--name", "spx-bench", NULL };
	if (run_line(v, imp, &line) < 0)
		return -1;
	if (!line || strncmp(line, "ami-", 4)) {
		free(line);
		return spx_error(SPX_FAIL, "images import: no image id");
	}
	v->ami = line;
	return 0;
}

static int key_pair(struct vmb *v)
{
	struct spx_buf b = SPX_BUF_INIT;
	char *pem = NULL;
	int rc = -1;

	if (ec2(v, "CreateKeyPair", "KeyName=" KEY_NAME "&KeyType=ed25519",
		&b) < 0)
		goto out;
	pem = xml_get(&b, "keyMaterial");
	if (!pem) {
		spx_error(SPX_FAIL, "CreateKeyPair: no key material");
		goto out;
	}
	spx_buf_reset(&b);
	spx_buf_addf(&b, "%s\n", pem);
	v->key = spx_path_join(v->dir, "key.pem");
	if (spx_write_file(v->key, b.p, b.len, 0600, false) < 0)
		goto out;
	rc = 0;
out:
	free(pem);
	spx_buf_release(&b);
	return rc;
}

/* Kill whatever guest a failed run left (spx down leaves guests). */
static void kill_guests(const struct vmb *v)
{
	char *vms = spx_xprintf("%s/run/vm", v->root);
	DIR *d = opendir(vms);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char *argv[] = { v->spxvm, "kill", "--root", v->root,
				 de->d_name, NULL };
		run_to(v, argv, NULL);
	}
	if (d)
		closedir(d);
	free(vms);
}

/* ---- one boot ------------------------------------------------------- */

/* The SSH server's banner through port: true when it begins
 * "SSH-2.0-" (QEMU's forwarder accepts at once, and closes when the
 * guest does not answer). */
static bool ssh_banner(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	char buf[64];
	size_t got = 0;
	double end = now_s() + 2;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return false;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return false;
	}
	while (got < 8 && now_s() < end) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = read(fd, buf + got, sizeof(buf) - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return got >= 8 && !memcmp(buf, "SSH-2.0-", 8);
}

static bool ssh_login(const struct vmb *v, int port)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", port);
	char *argv[] = { "timeout", "30", "ssh", "-i", v->key, "-p", p,
			 "-o", "BatchMode=yes", "-o",
			 "StrictHostKeyChecking=no", "-o",
			 "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
			 "-o", "ConnectTimeout=10", "root@127.0.0.1", "true",
			 NULL };
	return run_to(v, argv, NULL) == 0;
}

/* The record of id (JSON text, caller frees), or NULL. */
static char *inst_record(const struct vmb *v, const char *id)
{
	char *key = spx_xprintf("instances/%s/%s", v->cred.account, id), *s;
	struct spx_buf b = SPX_BUF_INIT;

	s = spx_state_get(v->st, key, &b, NULL) == 0
		    ? spx_xprintf("%.*s", (int)b.len, b.p)
		    : NULL;
	spx_buf_release(&b);
	free(key);
	return s;
}

static int ssh_port_of(const struct vmb *v, const char *id)
{
	char *rec = inst_record(v, id);
	json_t *j = rec ? json_loads(rec, 0, NULL) : NULL;
	int port = (int)json_integer_value(json_object_get(j, "SpxSshPort"));

	json_decref(j);
	free(rec);
	return port;
}

static void accel_of(struct vmb *v, const char *id)
{
	char *argv[] = { v->spxvm, "info", "--root", v->root, "--json",
			 (char *)id, NULL };
	char *out = spx_path_join(v->logs, "info.json");
	struct spx_buf b = SPX_BUF_INIT;
	json_t *j = NULL;
	const char *a;

	if (run_to(v, argv, out) == 0 && spx_buf_read_file(&b, out, 1 << 20) == 0)
		j = json_loadb(b.p, b.len, 0, NULL);
	a = json_string_value(json_object_get(json_array_get(j, 0), "accel"));
	if (a)
		snprintf(v->accel, sizeof(v->accel), "%s", a);
	json_decref(j);
	spx_buf_release(&b);
	free(out);
}

static void add_s(struct vmb *v, const char *id, const char *label,
		  double s)
{
	spx_bench_add(v->run, id, "boot", label, s, "s", false, 1);
}

static int guest_bench(struct vmb *v, int port);

static int boot_one(struct vmb *v)
{
	struct spx_buf b = SPX_BUF_INIT;
	char *p = NULL, *id = NULL, *st = NULL, *out;
	double t0, end, t_run = -1, t_con = -1, t_ssh = -1, t_login = -1;
	double t1;
	int port = 0, rc = -1;

	p = spx_xprintf("ImageId=%s&InstanceType=" ITYPE "&MinCount=1&"
			"MaxCount=1&KeyName=" KEY_NAME,
			v->ami);
	t0 = now_s();
	end = t0 + (double)v->timeout_s;
	if (ec2(v, "RunInstances", p, &b) < 0)
		goto out;
	id = xml_get(&b, "instanceId");
	if (!id) {
		spx_error(SPX_FAIL, "RunInstances: no instance id");
		goto out;
	}
	free(p);
	p = spx_xprintf("InstanceId=%s", id);
	printf("  run %d: %s", v->run->run, id);
	fflush(stdout);
	while (t_run < 0 || t_con < 0 || t_ssh < 0 ||
	       (v->have_ssh && t_login < 0)) {
		if (now_s() > end) {
			spx_error(SPX_FAIL, "%s: not %s after %llu s", id,
				  t_run < 0   ? "running"
				  : t_con < 0 ? "on its console"
				  : t_ssh < 0 ? "answering SSH"
					      : "letting ssh log in",
				  (unsigned long long)v->timeout_s);
			goto out;
		}
		if (t_run < 0) {
			free(st);
			st = inst_state(v, id, &b);
			if (!st)
				goto out;
			if (!strcmp(st, "running"))
				t_run = now_s() - t0;
			else if (strcmp(st, "pending")) {
				char *why = xml_get(&b, "message");

				spx_error(SPX_FAIL, "%s: %s (%s)", id, st,
					  why ? why : "no reason");
				free(why);
				goto out;
			}
		}
		if (t_con < 0) {
			if (ec2(v, "GetConsoleOutput", p, &b) < 0)
				goto out;
			out = xml_get(&b, "output");
			if (out && *out)
				t_con = now_s() - t0;
			free(out);
		}
		if (t_ssh < 0 && (port || (port = ssh_port_of(v, id))) &&
		    ssh_banner(port))
			t_ssh = now_s() - t0;
		if (t_ssh >= 0 && v->have_ssh && t_login < 0 &&
		    ssh_login(v, port))
			t_login = now_s() - t0;
		sleep_ms(POLL_MS);
	}
	accel_of(v, id);
	free(v->tmpl);
	v->tmpl = inst_record(v, id);
	add_s(v, "vm.boot.running.s", "RunInstances to running", t_run);
	add_s(v, "vm.boot.console.s", "RunInstances to the first console "
				      "output",
	      t_con);
	add_s(v, "vm.boot.ssh.s", "RunInstances to the SSH banner", t_ssh);
	if (v->have_ssh)
		add_s(v, "vm.boot.login.s", "RunInstances to an SSH login "
					    "with the key",
		      t_login);
	spx_bench_add(v->run, "vm.boot.kvm", "boot",
		      "accelerator: 1 KVM, 0 TCG", !strcmp(v->accel, "kvm"),
		      "bool", true, 1);
	printf(" (%s): running %.2f s, console %.2f s, SSH banner %.2f s",
	       v->accel, t_run, t_con, t_ssh);
	if (v->have_ssh)
		printf(", login %.2f s", t_login);
	fflush(stdout);
	printf("\n");
	if ((uint64_t)v->run->run == v->nruns && v->have_ssh &&
	    guest_bench(v, port) < 0)
		goto out;
	/* Terminate, and wait for it before the next run. */
	t1 = now_s();
	end = t1 + (double)v->timeout_s;
	free(p);
	p = spx_xprintf("InstanceId.1=%s", id);
	if (ec2(v, "TerminateInstances", p, &b) < 0)
		goto out;
	for (;;) {
		free(st);
		st = inst_state(v, id, &b);
		if (!st)
			goto out;
		if (!strcmp(st, "terminated"))
			break;
		if (now_s() > end) {
			spx_error(SPX_FAIL, "%s: still %s after %llu s", id, st,
				  (unsigned long long)v->timeout_s);
			goto out;
		}
		sleep_ms(POLL_MS);
	}
	add_s(v, "vm.terminate.s", "TerminateInstances to terminated",
	      now_s() - t1);
	printf("  run %d: terminated in %.2f s\n", v->run->run, now_s() - t1);
	rc = 0;
out:
	if (rc < 0 && id) {
		printf("\n");
		fflush(stdout);
	}
	free(st);
	free(id);
	free(p);
	spx_buf_release(&b);
	return rc;
}

/* ---- guest CPU and disk beside the host ------------------------------ */

/* The reference suite (scripts/spx-bench.sh) needs bash, sysbench and
 * fio, which the test image does not have: this is the subset its
 * busybox can run, the same busybox binary (copied out of the guest) on
 * both sides: MD5 of zeros from dd through a pipe (one CPU), and dd with
 * O_DIRECT writing a file (fsync at the end), then reading it back, on
 * the guest's root file system, on its root volume, and on the host's file
 * system under the node. Times from /proc/uptime (10 ms). */
static const char guest_sh[] =
	"BB=$1 D=$2 C=$3 M=$4\n"
	"t() { read -r u _ </proc/uptime; echo \"$u\"; }\n"
	"a=$(t); $BB dd if=/dev/zero bs=1M count=$C 2>/dev/null | "
	"$BB md5sum >/dev/null || exit 1; b=$(t); echo \"md5 $a $b\"\n"
	"a=$(t); $BB dd if=/dev/zero of=$D/spx-bench.f bs=1M count=$M "
	"oflag=direct conv=fsync 2>/dev/null || exit 2; b=$(t); "
	"echo \"write $a $b\"\n"
	"a=$(t); $BB dd if=$D/spx-bench.f of=/dev/null bs=1M iflag=direct "
	"2>/dev/null || exit 3; b=$(t); echo \"read $a $b\"\n"
	"$BB rm -f $D/spx-bench.f\n";

#define NGJOB SPX_VMOUT_NJOBS
/* In spx_vmout_job's order. */
static const struct {
	const char *name, *id, *label;
} gjob[NGJOB] = {
	{ "md5", "cpu.md5.mibs", "busybox md5sum of dd's zeros, 1 CPU" },
	{ "write", "disk.seqwrite.mibs", "busybox dd write 1M O_DIRECT, "
					 "fsync" },
	{ "read", "disk.seqread.mibs", "busybox dd read 1M O_DIRECT" },
};

/* The script's output as MiB/s. */
static int gparse(const char *file, uint64_t cmib, uint64_t dmib,
		  double out[NGJOB])
{
	struct spx_buf b = SPX_BUF_INIT;
	int rc = spx_buf_read_file(&b, file, 1 << 16);

	if (rc == 0 && spx_vmout_jobs(b.p, b.len, cmib, dmib, out) < 0)
		rc = spx_error(SPX_FAIL, "%s: %s", file, spx_errmsg());
	spx_buf_release(&b);
	return rc;
}

static int guest_bench(struct vmb *v, int port)
{
	char p[16], cm[16], dm[16], *sh = spx_path_join(v->dir, "guest.sh");
	char *bb = spx_path_join(v->dir, "busybox");
	char *hd = spx_path_join(v->dir, "hostdisk");
	char *ho = spx_path_join(v->logs, "host-busybox.out");
	char *go = spx_path_join(v->logs, "guest-busybox.out");
	uint64_t cmib = v->quick ? 16 : 256, dmib = v->quick ? 16 : 64;
	double h[NGJOB], g[NGJOB];
	int rc = -1, st;

	snprintf(p, sizeof(p), "%d", port);
	snprintf(cm, sizeof(cm), "%llu", (unsigned long long)cmib);
	snprintf(dm, sizeof(dm), "%llu", (unsigned long long)dmib);
#define SSH_ARGS                                                           \
	"ssh", "-i", v->key, "-p", p, "-o", "BatchMode=yes", "-o",         \
		"StrictHostKeyChecking=no", "-o",                          \
		"UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",    \
		"root@127.0.0.1"
	char *cat[] = { "timeout", "60", SSH_ARGS, "cat /bin/busybox", NULL };
	char *host[] = { bb, "sh", sh, bb, hd, cm, dm, NULL };
	char *gst[] = { "timeout", "900", SSH_ARGS, "sh", "-s", "busybox",
			"/root", cm, dm, NULL };
#undef SSH_ARGS
	if (spx_write_file(sh, guest_sh, strlen(guest_sh), 0644, false) < 0 ||
	    spx_mkdirs(hd, 0700) < 0)
		goto out;
	if (run_in(v, cat, NULL, bb) != 0 || chmod(bb, 0755) < 0) {
		spx_error(SPX_FAIL, "cannot copy the guest's busybox");
		goto out;
	}
	printf("  busybox jobs (%s MiB MD5, %s MiB dd) on the host...", cm,
	       dm);
	fflush(stdout);
	st = run_in(v, host, NULL, ho);
	if (st != 0) {
		spx_error(SPX_FAIL, "the busybox jobs failed on the host "
				    "(status %d%s)",
			  st, st == 2 ? ": no O_DIRECT there?" : "");
		goto out;
	}
	printf(" in the guest...");
	fflush(stdout);
	st = run_in(v, gst, sh, go);
	if (st != 0) {
		spx_error(SPX_FAIL, "the busybox jobs failed in the guest "
				    "(status %d)",
			  st);
		goto out;
	}
	if (gparse(ho, cmib, dmib, h) < 0 || gparse(go, cmib, dmib, g) < 0)
		goto out;
	printf(" done\n");
	for (int k = 0; k < NGJOB; k++) {
		char id[64];

		snprintf(id, sizeof(id), "vm.limit.host.%s", gjob[k].id);
		spx_bench_add(v->run, id, "limit", gjob[k].label, h[k],
			      "MiB/s", true, 1);
		snprintf(id, sizeof(id), "vm.guest.%s", gjob[k].id);
		spx_bench_add(v->run, id, "guest", gjob[k].label, g[k],
			      "MiB/s", true, 1);
		printf("    %-44s host %8.1f MiB/s  guest %8.1f MiB/s  "
		       "guest/host %3.0f%%\n",
		       gjob[k].label, h[k], g[k], 100 * g[k] / h[k]);
	}
	/* The same figures as two tags of their own, for compare. */
	for (int side = 0; side < 2; side++) {
		struct spx_bench_run r;
		char *t = spx_xprintf("%s-%s", v->tag, side ? "guest" : "host");

		spx_bench_run_init(&r, "vm-busybox", t, 1);
		r.quick = v->quick;
		for (int k = 0; k < NGJOB; k++)
			spx_bench_add(&r, gjob[k].id, k ? "disk" : "cpu",
				      gjob[k].label, side ? g[k] : h[k],
				      "MiB/s", true, 1);
		if (spx_bench_save(&r, v->results, NULL) == 0)
			printf("    saved as tag %s\n", t);
		spx_bench_run_release(&r);
		free(t);
	}
	rc = 0;
out:
	free(sh);
	free(bb);
	free(hd);
	free(ho);
	free(go);
	return rc;
}

/* ---- the limit of a boot ------------------------------------------- */

/* The same image booted by spx-vm directly, as the agent would start
 * it, but with no API, no agent and no restore from a snapshot: a fresh
 * volume imported from the image (untimed), the last instance's
 * metadata (spx_inst_metadata, as the agent writes it), the type's
 * memory and CPUs. Timed from `spx-vm start` to its return (the
 * instance's `running`), to the console file not empty, to the SSH
 * banner and to a login. */
static int limit_boot(struct vmb *v)
{
	char *md = spx_path_join(v->dir, "limit-metadata.json");
	char *con = spx_xprintf("%s/run/vm/limit/console.log", v->root);
	char *vol = NULL, mem[32], cpus[16], port[16];
	json_t *rec = v->tmpl ? json_loads(v->tmpl, 0, NULL) : NULL, *m;
	double t0 = 0, end, t_up = -1, t_con = -1, t_ssh = -1, t_login = -1;
	int rc = -1, p = 0, st = -1;
	struct stat sb;

	if (!rec) {
		spx_error(SPX_FAIL, "no instance record for the limit");
		goto out;
	}
	m = spx_inst_metadata(rec, "us-east-1");
	st = json_dump_file(m, md, JSON_COMPACT);
	json_decref(m);
	if (st < 0) {
		spx_error(SPX_FAIL, "cannot write %s", md);
		goto out;
	}
	snprintf(mem, sizeof(mem), "%lldM",
		 (long long)json_integer_value(
			 json_object_get(rec, "SpxMemMiB")));
	snprintf(cpus, sizeof(cpus), "%lld",
		 (long long)json_integer_value(json_object_get(rec, "SpxCpus")));
	char *imp[] = { v->spxvol, "import", "--root", v->root, v->image,
			NULL };
	if (run_line(v, imp, &vol) < 0)
		goto out;
	if (!vol || strncmp(vol, "vol-", 4)) {
		spx_error(SPX_FAIL, "spx-vol import: no volume id");
		goto out;
	}
	/* The guest is "limit" in every run and QEMU appends to its
	 * console: the last run's lines would read as this one's. */
	if (unlink(con) < 0 && errno != ENOENT) {
		spx_error_errno(SPX_FAIL, "cannot remove %s", con);
		goto out;
	}
	/* A port taken meanwhile makes QEMU fail at once: try another. */
	st = -1;
	for (int try = 0; try < 3 && st != 0; try++) {
		p = free_port();
		snprintf(port, sizeof(port), "%d", p);
		char *start[] = { v->spxvm, "start", "--root", v->root,
				  "limit", "--volume", vol, "--memory", mem,
				  "--cpus", cpus, "--ssh-port", port,
				  "--metadata", md, NULL };
		t0 = now_s();
		st = run_to(v, start, NULL);
	}
	if (st != 0) {
		spx_error(SPX_FAIL, "spx-vm start failed (see "
				    "%s/commands.log)",
			  v->logs);
		goto out;
	}
	t_up = now_s() - t0;
	end = t0 + (double)v->timeout_s;
	while (t_con < 0 || t_ssh < 0 || (v->have_ssh && t_login < 0)) {
		if (now_s() > end) {
			spx_error(SPX_FAIL, "the limit's guest: no %s after "
					    "%llu s",
				  t_con < 0   ? "console output"
				  : t_ssh < 0 ? "SSH banner"
					      : "SSH login",
				  (unsigned long long)v->timeout_s);
			goto out;
		}
		if (t_con < 0 && stat(con, &sb) == 0 && sb.st_size > 0)
			t_con = now_s() - t0;
		if (t_ssh < 0 && ssh_banner(p))
			t_ssh = now_s() - t0;
		if (t_ssh >= 0 && v->have_ssh && t_login < 0 &&
		    ssh_login(v, p))
			t_login = now_s() - t0;
		sleep_ms(POLL_MS);
	}
	spx_bench_add(v->run, "vm.limit.boot.started.s", "limit",
		      "spx-vm start to its return", t_up, "s", false, 1);
	spx_bench_add(v->run, "vm.limit.boot.console.s", "limit",
		      "spx-vm start to the first console output", t_con, "s",
		      false, 1);
	spx_bench_add(v->run, "vm.limit.boot.ssh.s", "limit",
		      "spx-vm start to the SSH banner", t_ssh, "s", false, 1);
	if (v->have_ssh)
		spx_bench_add(v->run, "vm.limit.boot.login.s", "limit",
			      "spx-vm start to an SSH login with the key",
			      t_login, "s", false, 1);
	printf("  run %d, limit (spx-vm start, no API): started %.2f s, "
	       "console %.2f s, SSH banner %.2f s",
	       v->run->run, t_up, t_con, t_ssh);
	if (v->have_ssh)
		printf(", login %.2f s", t_login);
	printf("\n");
	rc = 0;
out:
	fflush(stdout);
	{
		char *kill[] = { v->spxvm, "kill", "--root", v->root, "limit",
				 NULL };
		char *rm[] = { v->spxvol, "rm", "--root", v->root, vol, NULL };

		if (st == 0)
			run_to(v, kill, NULL);
		if (vol && !strncmp(vol, "vol-", 4) && run_to(v, rm, NULL) &&
		    rc == 0)
			rc = spx_error(SPX_FAIL, "spx-vol rm %s failed", vol);
	}
	json_decref(rec);
	free(vol);
	free(con);
	free(md);
	return rc;
}

/* ---- control-plane latency ------------------------------------------ */

/* Records: copies of the template, stopped, until the account holds n.
 * Returns how many it holds, or -1. */
static long seed(struct vmb *v, uint64_t n)
{
	char *prefix = spx_xprintf("instances/%s/", v->cred.account);
	struct spx_state_list l = { 0 };
	json_t *t = json_loads(v->tmpl ? v->tmpl : "", 0, NULL);
	long have = -1;

	if (!t) {
		spx_error(SPX_FAIL, "no instance record to copy");
		goto out;
	}
	if (spx_state_list(v->st, prefix, 0, &l) < 0)
		goto out;
	have = (long)l.n;
	json_object_set_new(t, "State",
			    json_pack("{s:i, s:s}", "Code", SPX_INST_STOPPED,
				      "Name", "stopped"));
	json_object_set_new(t, "SpxDesired", json_string("stopped"));
	json_object_set_new(t, "StateTransitionReason",
			    json_string("User initiated"));
	json_object_del(t, "SpxTerminatedAt");
	while ((uint64_t)have < n) {
		char iid[32], rid[32], *key, *s;
		int rc;

		if (spx_id_new(iid, sizeof(iid), "i") < 0 ||
		    spx_id_new(rid, sizeof(rid), "r") < 0) {
			have = -1;
			goto out;
		}
		json_object_set_new(t, "InstanceId", json_string(iid));
		json_object_set_new(t, "SpxReservationId", json_string(rid));
		s = json_dumps(t, JSON_COMPACT);
		key = spx_xprintf("%s%s", prefix, iid);
		rc = spx_state_create(v->st, key, s, strlen(s), NULL);
		free(key);
		free(s);
		if (rc < 0) {
			have = -1;
			goto out;
		}
		have++;
	}
out:
	spx_state_list_release(&l);
	json_decref(t);
	free(prefix);
	return have;
}

static size_t buf_sink(char *p, size_t size, size_t n, void *ctx)
{
	spx_buf_add(ctx, p, size * n);
	return size * n;
}

struct lat {
	const struct vmb *v;
	const char *action;
	size_t want;	/* instances in every answer (DescribeInstances) */
	double until;
	double *ms[64];
	size_t n[64];
	int err[64];
	char why[64][256];
};

static void *lat_thread(void *arg, int i)
{
	struct lat *l = arg;
	const struct vmb *v = l->v;
	char *body = spx_xprintf("Action=%s&Version=%s", l->action,
				 EC2_VERSION);
	char hash[65];
	struct spx_buf resp = SPX_BUF_INIT;
	CURL *h = curl_easy_init();
	size_t cap = 0;

	spx_sigv4_sha256_hex(body, strlen(body), hash);
	if (!h) {
		l->err[i] = 1;
		snprintf(l->why[i], sizeof(l->why[i]), "no curl handle");
		goto out;
	}
	while (now_s() < l->until) {
		struct spx_kvlist hdrs = SPX_KVLIST_INIT;
		struct curl_slist *sl = NULL;
		double t0 = now_s();
		long status = 0;
		CURLcode cc;

		spx_buf_reset(&resp);
		spx_kv_add(&hdrs, "Content-Type", "application/x-www-form-"
						  "urlencoded; charset=utf-8");
		if (spx_http_headers(&v->sig, "POST", v->ep, "/", "", &hdrs,
				     hash, &sl) < 0) {
			spx_kv_free(&hdrs);
			l->err[i] = 1;
			snprintf(l->why[i], sizeof(l->why[i]), "%s",
				 spx_errmsg());
			break;
		}
		curl_easy_reset(h);
		curl_easy_setopt(h, CURLOPT_URL, v->ep);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, sl);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_sink);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
		cc = curl_easy_perform(h);
		if (cc == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		curl_slist_free_all(sl);
		spx_kv_free(&hdrs);
		if (cc != CURLE_OK || status != 200) {
			l->err[i] = 1;
			snprintf(l->why[i], sizeof(l->why[i]),
				 "%s: %s (HTTP %ld)", l->action,
				 cc != CURLE_OK ? curl_easy_strerror(cc)
						: "refused",
				 status);
			break;
		}
		/* Every answer is checked on the first request, then one in
		 * 16 (counting is the client's work, not the server's). */
		if (l->want && l->n[i] % 16 == 0) {
			size_t got = spx_vmout_count(resp.p, resp.len,
						     "<instanceId>");

			if (got != l->want) {
				l->err[i] = 1;
				snprintf(l->why[i], sizeof(l->why[i]),
					 "%s: %zu instances, not %zu",
					 l->action, got, l->want);
				break;
			}
		}
		if (l->n[i] == cap) {
			cap = cap ? 2 * cap : 1024;
			l->ms[i] = spx_realloc(l->ms[i],
					       cap * sizeof(double));
		}
		l->ms[i][l->n[i]++] = (now_s() - t0) * 1e3;
	}
out:
	if (h)
		curl_easy_cleanup(h);
	spx_buf_release(&resp);
	free(body);
	return NULL;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* action from --clients clients for api_s seconds: p50, p99 (ms) and
 * requests a second. */
static int latency(const struct vmb *v, const char *action, size_t want,
		   double *p50, double *p99, double *rps)
{
	struct lat *l = spx_calloc(1, sizeof(*l));
	int nc = (int)v->clients, rc = -1;
	double t0, secs, *all;
	size_t n = 0;

	l->v = v;
	l->action = action;
	l->want = want;
	t0 = now_s();
	l->until = t0 + v->api_s;
	if (par_run(nc, lat_thread, l) < 0)
		goto out;
	secs = now_s() - t0;
	for (int i = 0; i < nc; i++) {
		if (l->err[i]) {
			spx_error(SPX_FAIL, "%s", l->why[i]);
			goto out;
		}
		n += l->n[i];
	}
	if (!n) {
		spx_error(SPX_FAIL, "%s: no request answered", action);
		goto out;
	}
	all = spx_calloc(n, sizeof(double));
	n = 0;
	for (int i = 0; i < nc; i++) {
		memcpy(all + n, l->ms[i], l->n[i] * sizeof(double));
		n += l->n[i];
	}
	qsort(all, n, sizeof(double), dbl_cmp);
	*p50 = all[(n - 1) / 2];
	*p99 = all[(size_t)ceil(0.99 * (double)n) - 1];
	*rps = (double)n / secs;
	free(all);
	rc = 0;
out:
	for (int i = 0; i < nc; i++)
		free(l->ms[i]);
	free(l);
	return rc;
}

static void add_lat(struct vmb *v, const char *pfx, const char *what,
		    const char *section, double p50, double p99, double rps)
{
	char id[96], label[160];
	int c = (int)v->clients;

	snprintf(id, sizeof(id), "%s.p50.ms", pfx);
	snprintf(label, sizeof(label), "%s p50", what);
	spx_bench_add(v->run, id, section, label, p50, "ms", false, c);
	snprintf(id, sizeof(id), "%s.p99.ms", pfx);
	snprintf(label, sizeof(label), "%s p99", what);
	spx_bench_add(v->run, id, section, label, p99, "ms", false, c);
	snprintf(id, sizeof(id), "%s.rps", pfx);
	snprintf(label, sizeof(label), "%s", what);
	spx_bench_add(v->run, id, section, label, rps, "requests/s", true, c);
}

static int api(struct vmb *v)
{
	double p50, p99, rps;

	printf("  control plane: %llu clients, %g s each, SigV4 on kept-alive "
	       "connections\n",
	       (unsigned long long)v->clients, v->api_s);
	if (latency(v, "DescribeRegions", 0, &p50, &p99, &rps) < 0)
		return -1;
	add_lat(v, "vm.limit.api", "DescribeRegions (no records)", "limit",
		p50, p99, rps);
	printf("    DescribeRegions (limit)        p50 %7.2f ms  p99 %7.2f ms"
	       "  %8.0f requests/s\n",
	       p50, p99, rps);
	for (int k = 0; k < NRECS; k++) {
		char pfx[64], what[96];
		long have = seed(v, v->recs[k]);

		if (have < 0)
			return -1;
		if ((uint64_t)have != v->recs[k])
			return spx_error(SPX_FAIL, "the account holds %ld "
						   "instance records, more "
						   "than %llu",
					 have, (unsigned long long)v->recs[k]);
		if (latency(v, "DescribeInstances", (size_t)have, &p50, &p99,
			    &rps) < 0)
			return -1;
		snprintf(pfx, sizeof(pfx), "vm.api.describe.%llu",
			 (unsigned long long)v->recs[k]);
		snprintf(what, sizeof(what), "DescribeInstances, %llu records",
			 (unsigned long long)v->recs[k]);
		add_lat(v, pfx, what, "api", p50, p99, rps);
		printf("    DescribeInstances %5llu records p50 %7.2f ms  p99 "
		       "%7.2f ms  %8.0f requests/s\n",
		       (unsigned long long)v->recs[k], p50, p99, rps);
	}
	return 0;
}

/* ---- the verb ------------------------------------------------------- */

static int run_one(void *ctx, struct spx_bench_run *r)
{
	struct vmb *v = ctx;

	v->run = r;
	if (boot_one(v) < 0 || limit_boot(v) < 0)
		return -1;
	if ((uint64_t)r->run == v->nruns && api(v) < 0)
		return -1;
	return 0;
}

static int setup(struct vmb *v)
{
	/* Searched by the guests' QEMU users (spx-vm as root): the node
	 * is below. */
	v->dir = spx_bench_scratch(v->base, "vm", 0711);
	if (!v->dir)
		return -1;
	v->root = spx_path_join(v->dir, "node");
	v->logs = spx_path_join(v->dir, "logs");
	if (spx_mkdirs(v->logs, 0700) < 0)
		return -1;
	v->spx = spx_find_prog("spx");
	v->spxvm = spx_find_prog("spx-vm");
	v->spxvol = spx_find_prog("spx-vol");
	if (!v->spx || !v->spxvm || !v->spxvol)
		return spx_error(SPX_FAIL, "cannot find %s",
				 !v->spx     ? "spx"
				 : !v->spxvm ? "spx-vm"
					     : "spx-vol");
	if (!have_prog("qemu-system-x86_64"))
		return spx_error(SPX_FAIL, "qemu-system-x86_64 is not "
					   "installed (qemu-system-x86)");
	v->have_ssh = have_prog("ssh");
	if (!v->image) {
		char *img = spx_path_join(v->dir, "spx.img");

		v->mkimage = find_mkimage();
		if (!v->mkimage) {
			free(img);
			return spx_error(SPX_FAIL, "cannot find mkimage.sh (set "
						   "SPX_MKIMAGE, or give "
						   "--image)");
		}
		printf("  building the test image (%s)\n", v->mkimage);
		fflush(stdout);
		char *argv[] = { "bash", v->mkimage, img, NULL };
		if (run_to(v, argv, NULL) != 0) {
			free(img);
			return spx_error(SPX_FAIL, "mkimage.sh failed (see "
						   "%s/commands.log)",
					 v->logs);
		}
		v->image = img;
	}
	if (node_up(v) < 0 || key_pair(v) < 0)
		return -1;
	return 0;
}

static void teardown(struct vmb *v, bool keep)
{
	if (v->up) {
		char *down[] = { v->spx, "down", "--root", v->root, NULL };

		kill_guests(v);
		run_to(v, down, NULL);
	}
	spx_state_close(v->st);
	if (v->dir && !keep)
		spx_rmtree(v->dir);
	else if (v->dir)
		printf("== kept %s (the node in node/, logs in logs/)\n",
		       v->dir);
	free(v->dir);
	free(v->root);
	free(v->logs);
	free(v->image);
	free(v->key);
	free(v->spx);
	free(v->spxvm);
	free(v->spxvol);
	free(v->ep);
	free(v->ami);
	free(v->state_url);
	free(v->mkimage);
	free(v->tmpl);
	memset(&v->cred, 0, sizeof(v->cred));
}

static const struct spx_bench_stat *find(const struct spx_bench_stat *s,
					 size_t n, const char *id)
{
	return spx_bench_stat_find(s, n, id);
}

/* "2.19 s [2.12-2.37]": median and range, or "-". */
static void secs_cell(struct spx_buf *o, const struct spx_bench_stat *x)
{
	if (!x)
		spx_buf_adds(o, " - |");
	else
		spx_buf_addf(o, " %.2f s [%.2f-%.2f] |", x->median, x->min,
			     x->max);
}

static const struct {
	const char *what, *id, *lim, *limwhat;
} brow[] = {
	{ "to `running`", "vm.boot.running.s", "vm.limit.boot.started.s",
	  "spx-vm start returned" },
	{ "to the first console output", "vm.boot.console.s",
	  "vm.limit.boot.console.s", "console output" },
	{ "to the SSH banner", "vm.boot.ssh.s", "vm.limit.boot.ssh.s",
	  "SSH banner" },
	{ "to an SSH login with the key", "vm.boot.login.s",
	  "vm.limit.boot.login.s", "SSH login" },
	{ "TerminateInstances to `terminated`", "vm.terminate.s", NULL,
	  NULL },
};

static void lat_row(struct spx_buf *o, const struct spx_bench_stat *s,
		    size_t n, const char *pfx, const char *label)
{
	const struct spx_bench_stat *l50 = find(s, n, "vm.limit.api.p50.ms");
	const struct spx_bench_stat *lr = find(s, n, "vm.limit.api.rps");
	const struct spx_bench_stat *p50, *p99, *r;
	char id[96];

	snprintf(id, sizeof(id), "%s.p50.ms", pfx);
	p50 = find(s, n, id);
	snprintf(id, sizeof(id), "%s.p99.ms", pfx);
	p99 = find(s, n, id);
	snprintf(id, sizeof(id), "%s.rps", pfx);
	r = find(s, n, id);
	if (!p50 || !p99 || !r)
		return;
	spx_buf_addf(o, "| %s | %.2f ms | %.2f ms | %.0f |", label,
		     p50->median, p99->median, r->median);
	if (l50 && lr && strcmp(pfx, "vm.limit.api")) {
		double pct = 100 * r->median / lr->median;

		spx_buf_addf(o, " %.1fx | %.*f%% |\n",
			     p50->median / l50->median, pct < 10 ? 2 : 0,
			     pct);
	} else {
		spx_buf_adds(o, " (limit) | (limit) |\n");
	}
}

static void report(const struct vmb *v, const struct spx_bench_runs *rs,
		   const char *tag, const char *results)
{
	struct spx_bench_stat *s = NULL;
	size_t n = spx_bench_summarise(rs, &s);
	struct spx_buf o = SPX_BUF_INIT;
	char *path;

	spx_buf_addf(&o, "spx-bench vm, tag %s: %zu run%s, %s to %s.\n\n", tag,
		     rs->n, rs->n == 1 ? "" : "s",
		     rs->n ? rs->v[0].time : "-",
		     rs->n ? rs->v[rs->n - 1].time : "-");
	spx_bench_machine(&o);
	spx_buf_addf(&o, "- accelerator: %s; one %s guest a run (the test "
			 "image: busybox and dropbear on Debian's cloud "
			 "kernel); a private node, EC2 over plain HTTP on "
			 "loopback\n",
		     !strcmp(v->accel, "kvm") ? "KVM" : "TCG (no KVM)", ITYPE);
	if (v->quick)
		spx_buf_adds(&o, "- --quick: one-second latency phases and "
				 "16 MiB busybox jobs, to test the suite, not "
				 "figures to read\n");
	spx_buf_addf(&o, "\n| boot, from the request (API polled every "
			 "%d ms) | instance, median [min-max] | limit: spx-vm "
			 "start, no API | limit, median [min-max] | "
			 "instance/limit |\n|---|---|---|---|---|\n",
		     POLL_MS);
	for (size_t k = 0; k < SPX_ARRAY_SIZE(brow); k++) {
		double med, lo, hi;

		if (!find(s, n, brow[k].id))
			continue;
		spx_buf_addf(&o, "| %s |", brow[k].what);
		secs_cell(&o, find(s, n, brow[k].id));
		spx_buf_addf(&o, " %s |", brow[k].limwhat ? brow[k].limwhat
							  : "-");
		secs_cell(&o, brow[k].lim ? find(s, n, brow[k].lim) : NULL);
		if (brow[k].lim && spx_bench_run_ratios(rs, brow[k].id,
							brow[k].lim, &med,
							&lo, &hi))
			spx_buf_addf(&o, " %.2fx [%.2f-%.2f] |\n", med, lo, hi);
		else
			spx_buf_adds(&o, " - |\n");
	}
	spx_buf_adds(&o, "\nThe limit is the same image started by `spx-vm "
			 "start` directly, with no API, agent or restore from "
			 "a snapshot (a fresh volume, the instance's own "
			 "metadata, memory and CPUs); instance/limit is the "
			 "median of the runs' own ratios. `running` includes "
			 "the restore of the root volume and the agent's "
			 "next look at its records.\n");
	if (find(s, n, "vm.guest.cpu.md5.mibs")) {
		spx_buf_adds(&o, "\n| guest beside host (the last run) | host "
				 "| guest | guest/host |\n|---|---|---|---|\n");
		for (int k = 0; k < NGJOB; k++) {
			char hid[64], gid[64];
			const struct spx_bench_stat *h, *g;

			snprintf(hid, sizeof(hid), "vm.limit.host.%s",
				 gjob[k].id);
			snprintf(gid, sizeof(gid), "vm.guest.%s", gjob[k].id);
			h = find(s, n, hid);
			g = find(s, n, gid);
			if (h && g)
				spx_buf_addf(&o, "| %s | %.1f MiB/s | %.1f "
						 "MiB/s | %.0f%% |\n",
					     gjob[k].label, h->median,
					     g->median,
					     100 * g->median / h->median);
		}
		spx_buf_addf(&o, "\nThe reference suite (scripts/spx-bench.sh) "
				 "needs bash, sysbench and fio, which the test "
				 "image lacks: these are what its busybox can "
				 "run, the guest's own busybox binary on both "
				 "sides; the guest's disk is its root volume, "
				 "whose server reads through the host's page "
				 "cache. `spx-bench compare %s-host "
				 "%s-guest` sets them side by side.\n",
			     tag, tag);
	}
	if (find(s, n, "vm.limit.api.rps")) {
		spx_buf_addf(&o, "\n| control plane, %llu clients on %ld "
				 "CPUs, SigV4, keep-alive | p50 | p99 | "
				 "requests/s | p50/limit | requests/s, share of "
				 "the limit |\n|---|---|---|---|---|---|\n",
			     (unsigned long long)v->clients,
			     sysconf(_SC_NPROCESSORS_ONLN));
		lat_row(&o, s, n, "vm.limit.api",
			"DescribeRegions, no records (limit)");
		for (int k = 0; k < NRECS; k++) {
			char pfx[64], label[64];

			snprintf(pfx, sizeof(pfx), "vm.api.describe.%llu",
				 (unsigned long long)v->recs[k]);
			snprintf(label, sizeof(label),
				 "DescribeInstances, %llu records",
				 (unsigned long long)v->recs[k]);
			lat_row(&o, s, n, pfx, label);
		}
		spx_buf_adds(&o, "\nThe records: one instance booted by "
				 "RunInstances, its record copied with new "
				 "instance and reservation ids, stopped, into "
				 "the node's record store; the terminated "
				 "instances of the boot runs count among "
				 "them. The clients share the gateway's "
				 "CPUs.\n");
	}
	fputs("\n", stdout);
	fwrite(o.p, 1, o.len, stdout);
	path = spx_xprintf("%s/%s/summary.md", results, tag);
	if (spx_write_file(path, o.p, o.len, 0644, false) == 0)
		printf("== summary: %s\n", path);
	free(path);
	spx_bench_stats_free(s, n);
	spx_buf_release(&o);
}

static int parse_recs(const char *s, uint64_t out[NRECS])
{
	char *end;

	for (int k = 0; k < NRECS; k++) {
		unsigned long long x;

		errno = 0;
		x = strtoull(s, &end, 10);
		if (errno || end == s || x < 1 || x > 100000 ||
		    (k && x < out[k - 1]) || *end != (k ? '\0' : ','))
			return spx_error(SPX_USAGE, "--records: N,M with 1 <= "
						    "N <= M <= 100000");
		out[k] = x;
		s = end + 1;
	}
	return 0;
}

int cmd_vm(const struct spx_args *a, const char *results)
{
	struct vmb v = { .nruns = 5, .timeout_s = 300, .clients = 4,
			 .recs = { 100, 1000 }, .api_s = 5 };
	const char *tag = spx_arg(a, "tag"), *env = getenv("BENCHDIR");
	struct spx_bench_runs runs = { 0 };
	char host[64] = "", *deftag = NULL;
	uint64_t secs;
	int rc = SPX_FAIL;

	v.base = (char *)(spx_arg(a, "dir") ? spx_arg(a, "dir")
			  : env && *env     ? env
					    : "/var/tmp/spx-bench");
	snprintf(v.accel, sizeof(v.accel), "tcg");
	v.quick = spx_flag(a, "quick");
	if (v.quick)
		v.api_s = 1;
	if ((spx_arg(a, "runs") &&
	     spx_parse_uint("--runs", spx_arg(a, "runs"), 1, 100, &v.nruns) <
		     0) ||
	    (spx_arg(a, "timeout") &&
	     spx_parse_uint("--timeout", spx_arg(a, "timeout"), 10, 3600,
			    &v.timeout_s) < 0) ||
	    (spx_arg(a, "clients") &&
	     spx_parse_uint("--clients", spx_arg(a, "clients"), 1, 64,
			    &v.clients) < 0) ||
	    (spx_arg(a, "records") && parse_recs(spx_arg(a, "records"),
						 v.recs) < 0))
		goto usage;
	if (spx_arg(a, "seconds")) {
		if (spx_parse_uint("--seconds", spx_arg(a, "seconds"), 1, 600,
				   &secs) < 0)
			goto usage;
		v.api_s = (double)secs;
	}
	if (spx_arg(a, "image")) {
		v.image = spx_path_abs(spx_arg(a, "image"));
		if (!v.image || access(v.image, R_OK) < 0) {
			spx_error(SPX_USAGE, "--image: cannot read '%s'",
				  spx_arg(a, "image"));
			goto usage;
		}
	}
	if (!tag) {
		gethostname(host, sizeof(host) - 1);
		deftag = spx_xprintf("vm-%.*s", (int)strcspn(host, "."), host);
		tag = deftag;
	}
	if (!spx_bench_tag_valid(tag)) {
		spx_error(SPX_USAGE, "--tag: '%s' is not [A-Za-z0-9._-]{1,64}",
			  tag);
		goto usage;
	}
	printf("== spx-bench vm: %llu boot%s of a %s guest; DescribeInstances "
	       "with %llu and %llu records, %llu clients, %g s each\n",
	       (unsigned long long)v.nruns, v.nruns == 1 ? "" : "s", ITYPE,
	       (unsigned long long)v.recs[0], (unsigned long long)v.recs[1],
	       (unsigned long long)v.clients, v.api_s);
	fflush(stdout);
	v.tag = tag;
	v.results = results;
	if (setup(&v) < 0)
		goto fail;
	if (!v.have_ssh)
		printf("== ssh(1) is not installed: no login figure, the SSH "
		       "banner only\n");
	printf("== node %s (EC2 at %s), image %s\n", v.root, v.ep, v.ami);
	fflush(stdout);
	if (spx_bench_repeat("vm", tag, v.nruns, v.quick, results, run_one, &v,
			     &runs) < 0)
		goto fail;
	report(&v, &runs, tag, results);
	rc = 0;
	goto out;
usage:
	rc = SPX_USAGE;
fail:
	spx_warn("vm: %s", spx_errmsg());
	if (rc != SPX_USAGE)
		rc = spx_errstatus();
out:
	teardown(&v, spx_flag(a, "keep"));
	spx_bench_runs_release(&runs);
	free(deftag);
	return rc;
}
