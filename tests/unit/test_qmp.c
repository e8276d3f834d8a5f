/* test_qmp: the QMP client (lib/vm/qmp.c) against a scripted peer on a
 * real unix socket, the line classifier from a table, and the guest spec
 * file (lib/vm/vm.c). tests/bats/vm.bats drives a real QEMU. */
#include "spx.h"

#include <jansson.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "t.h"
#include "vm/qmp.h"
#include "vm/vm.h"

/* The peer: a script of steps run by a thread on the accepted
 * connection. "<" reads one line and remembers its "id"; ">" sends the
 * text, with %ID% replaced by the last id read; "z" sleeps 300 ms;
 * "x" closes; "B" sends 9 MiB without a newline. */
struct step {
	char op;
	const char *text;
};

struct peer {
	int lfd;
	const struct step *script;
	char seen[8][256]; /* the lines read, for checks */
	int nseen;
};

static void peer_send(int fd, const char *text, long long id)
{
	char out[4096];
	const char *p = strstr(text, "%ID%");
	int n;

	if (p)
		n = snprintf(out, sizeof(out), "%.*s%lld%s\r\n",
			     (int)(p - text), text, id, p + 4);
	else
		n = snprintf(out, sizeof(out), "%s\r\n", text);
	if (n > 0 && (size_t)n < sizeof(out) &&
	    write(fd, out, (size_t)n) != n)
		perror("peer write");
}

static void *peer_run(void *arg)
{
	struct peer *pr = arg;
	int fd = accept(pr->lfd, NULL, NULL);
	long long id = -1;
	const struct step *s;

	if (fd < 0)
		return NULL;
	for (s = pr->script; s->op; s++) {
		if (s->op == '<') {
			char line[256];
			size_t n = 0;

			while (n < sizeof(line) - 1 && read(fd, line + n, 1) == 1 &&
			       line[n] != '\n')
				n++;
			line[n] = 0;
			const char *ip = strstr(line, "\"id\":");

			id = ip ? strtoll(ip + 5, NULL, 10) : -1;
			if (pr->nseen < 8)
				memcpy(pr->seen[pr->nseen++], line, n + 1);
		} else if (s->op == '>') {
			peer_send(fd, s->text, id);
		} else if (s->op == 'z') {
			struct timespec ts = { 0, 300 * 1000000 };

			nanosleep(&ts, NULL);
		} else if (s->op == 'B') {
			static char big[1 << 20];
			int i;

			memset(big, 'x', sizeof(big));
			for (i = 0; i < 9; i++)
				if (write(fd, big, sizeof(big)) < 0)
					break;
		} else if (s->op == 'x') {
			close(fd);
			return NULL;
		}
	}
	/* Hold the connection until the client is done with it. */
	{
		char c;

		while (read(fd, &c, 1) > 0)
			;
	}
	close(fd);
	return NULL;
}

static char sockpath[108];

static int peer_start(struct peer *pr, const struct step *script,
		      pthread_t *th)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(pr, 0, sizeof(*pr));
	pr->script = script;
	unlink(sockpath);
	memcpy(sa.sun_path, sockpath, strlen(sockpath) + 1);
	pr->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (pr->lfd < 0 || bind(pr->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(pr->lfd, 4))
		return -1;
	return pthread_create(th, NULL, peer_run, pr);
}

static void peer_stop(struct peer *pr, pthread_t th)
{
	pthread_join(th, NULL);
	close(pr->lfd);
	unlink(sockpath);
}

#define GREET '>', "{\"QMP\": {\"version\": {}, \"capabilities\": []}}"
#define CAPS_OK '>', "{\"return\": {}, \"id\": %ID%}"

static const struct step s_basic[] = {
	{ GREET },
	{ '<', NULL },
	{ CAPS_OK },
	{ '<', NULL },
	/* An event, a stale answer, then the answer. */
	{ '>', "{\"event\": \"RESUME\", \"timestamp\": {}}" },
	{ '>', "{\"return\": {\"status\": \"stale\"}, \"id\": 999}" },
	{ '>', "{\"return\": {\"status\": \"running\", \"running\": true}, "
	       "\"id\": %ID%}" },
	{ '<', NULL },
	{ '>', "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": "
	       "\"The command nope has not been found\"}, \"id\": %ID%}" },
	{ '<', NULL },
	{ '>', "" }, /* a blank line is skipped */
	{ '>', "{\"return\": {}, \"id\": %ID%}" },
	{ 'z', NULL },
	{ '>', "{\"event\": \"SHUTDOWN\", \"data\": {\"guest\": true}}" },
	{ 0, NULL },
};

static void test_basic(void)
{
	struct peer pr;
	pthread_t th;
	struct spx_qmp *q = NULL;
	json_t *r = NULL, *d = NULL;
	char *reply = NULL;

	T_OK(peer_start(&pr, s_basic, &th) == 0, "peer up");
	T_INT(spx_qmp_connect(sockpath, 2000, &q), 0, "connect: %s",
	      spx_errmsg());
	T_INT(spx_qmp_exec(q, "query-status", NULL, 2000, &r), 0,
	      "exec: %s", spx_errmsg());
	T_STR(json_string_value(json_object_get(r, "status")), "running",
	      "the answer with our id, not the stale one");
	json_decref(r);
	T_INT(spx_qmp_exec(q, "nope", NULL, 2000, &r), -1, "refused");
	T_INT(spx_errstatus(), SPX_NO, "refused: SPX_NO");
	T_STR(spx_errmsg(),
	      "qmp: nope: CommandNotFound: The command nope has not been found",
	      "refused: QEMU's class and text");
	T_OK(spx_qmp_raw(q, "{\"execute\": \"stop\"}", 19, 2000, &reply) == 0,
	     "raw: %s", spx_errmsg());
	T_STR(reply, "{\"return\":{}}", "raw: the answer without our id");
	free(reply);
	T_INT(spx_qmp_wait_event(q, "RESUME", 10, &d), 0,
	      "an event that came during a command is kept");
	T_OK(json_is_null(d), "an event without data gives null");
	json_decref(d);
	T_INT(spx_qmp_wait_event(q, "SHUTDOWN", 2000, &d), 0,
	      "an event that comes later: %s", spx_errmsg());
	T_OK(json_is_true(json_object_get(d, "guest")), "its data");
	json_decref(d);
	T_INT(spx_qmp_wait_event(q, "RESET", 100, NULL), -1,
	      "no such event in time");
	T_INT(spx_errstatus(), SPX_NO, "a missed event is SPX_NO");
	T_OK(strstr(pr.seen[0], "\"execute\":\"qmp_capabilities\"") != NULL,
	     "capabilities negotiated first: %s", pr.seen[0]);
	T_OK(strstr(pr.seen[1], "\"execute\":\"query-status\"") != NULL &&
		     !strstr(pr.seen[1], "arguments"),
	     "a command without arguments: %s", pr.seen[1]);
	spx_qmp_close(q);
	peer_stop(&pr, th);
}

static const struct step s_late[] = {
	{ GREET }, { '<', NULL }, { CAPS_OK },
	/* The first command's answer comes after its deadline... */
	{ '<', NULL }, { 'z', NULL },
	{ '>', "{\"return\": {\"n\": 1}, \"id\": %ID%}" },
	/* ...and is dropped when the second is answered. */
	{ '<', NULL },
	{ '>', "{\"return\": {\"n\": 2}, \"id\": %ID%}" },
	{ 0, NULL },
};

static void test_late(void)
{
	struct peer pr;
	pthread_t th;
	struct spx_qmp *q = NULL;
	json_t *r = NULL;
	struct timespec a, b;

	T_OK(peer_start(&pr, s_late, &th) == 0, "peer up");
	T_INT(spx_qmp_connect(sockpath, 2000, &q), 0, "connect");
	clock_gettime(CLOCK_MONOTONIC, &a);
	T_INT(spx_qmp_exec(q, "slow", NULL, 100, &r), -1, "a deadline");
	clock_gettime(CLOCK_MONOTONIC, &b);
	T_STR(spx_errmsg(), "qmp: slow: no answer in 100 ms", "says so");
	T_INT(spx_errstatus(), SPX_FAIL, "a deadline is SPX_FAIL");
	long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	/* The answer came 300 ms in: failing says it was not waited for. */
	T_OK(ms >= 100, "not before the deadline (%ld ms)", ms);
	T_INT(spx_qmp_exec(q, "next", NULL, 2000, &r), 0, "next: %s",
	      spx_errmsg());
	T_INT(json_integer_value(json_object_get(r, "n")), 2,
	      "the late answer is not taken for the next one");
	json_decref(r);
	spx_qmp_close(q);
	peer_stop(&pr, th);
}

static const struct step s_silent[] = { { 'z', NULL }, { 0, NULL } };
static const struct step s_big[] = { { GREET }, { '<', NULL }, { CAPS_OK },
				     { '<', NULL }, { 'B', NULL }, { 0, NULL } };
static const struct step s_close[] = { { GREET }, { '<', NULL }, { 'x', NULL },
				       { 0, NULL } };
static const struct step s_notqmp[] = { { '>', "{\"hello\": 1}" },
					{ 0, NULL } };

static void test_faults(void)
{
	struct peer pr;
	pthread_t th;
	struct spx_qmp *q = NULL;
	json_t *r = NULL;
	char *reply = NULL;

	T_OK(peer_start(&pr, s_silent, &th) == 0, "peer up");
	T_INT(spx_qmp_connect(sockpath, 100, &q), -1, "no greeting in time");
	T_OK(strstr(spx_errmsg(), "no answer in time") != NULL, "says so: %s",
	     spx_errmsg());
	peer_stop(&pr, th);

	T_OK(peer_start(&pr, s_notqmp, &th) == 0, "peer up");
	T_INT(spx_qmp_connect(sockpath, 1000, &q), -1, "not a QMP greeting");
	T_OK(strstr(spx_errmsg(), "no known kind") != NULL, "says so: %s",
	     spx_errmsg());
	peer_stop(&pr, th);

	T_OK(peer_start(&pr, s_close, &th) == 0, "peer up");
	T_INT(spx_qmp_connect(sockpath, 1000, &q), -1, "closed mid-way");
	T_OK(strstr(spx_errmsg(), "closed the connection") != NULL,
	     "says so: %s", spx_errmsg());
	peer_stop(&pr, th);

	T_OK(peer_start(&pr, s_big, &th) == 0, "peer up");
	T_INT(spx_qmp_connect(sockpath, 1000, &q), 0, "connect");
	/* The deadline only bounds a hang: reading 8 MiB under valgrind on
	 * a busy machine took longer than 5 s once (CI's memcheck stage). */
	T_INT(spx_qmp_exec(q, "big", NULL, 60000, &r), -1,
	      "a line past the limit");
	T_OK(strstr(spx_errmsg(), "longer than") != NULL, "says so: %s",
	     spx_errmsg());
	T_INT(spx_qmp_raw(q, "[1]", 3, 100, &reply), -1, "raw: not an object");
	T_INT(spx_errstatus(), SPX_USAGE, "raw: a usage error");
	T_INT(spx_qmp_raw(q, "{\"x\":1", 6, 100, &reply), -1, "raw: not JSON");
	T_OK(reply == NULL, "raw: no reply");
	spx_qmp_close(q);
	peer_stop(&pr, th);

	T_INT(spx_qmp_connect("/nonexistent/qmp.sock", 100, &q), -1,
	      "no socket");
	T_OK(q == NULL, "no handle");
}

static const struct {
	const char *line;
	int rc;
	int kind;
	long long id;
} parse[] = {
	{ "{\"QMP\": {\"version\": {}}}\r\n", 0, SPX_QMP_GREETING, -1 },
	{ "{\"return\": {}, \"id\": 7}", 0, SPX_QMP_RETURN, 7 },
	{ "{\"return\": 3}", 0, SPX_QMP_RETURN, -1 },
	{ "{\"return\": {}, \"id\": -2}", 0, SPX_QMP_RETURN, -1 },
	{ "{\"return\": {}, \"id\": \"7\"}", 0, SPX_QMP_RETURN, -1 },
	{ "{\"error\": {\"class\": \"C\", \"desc\": \"d\"}, \"id\": 1}", 0,
	  SPX_QMP_ERROR, 1 },
	{ "{\"error\": {\"class\": \"C\"}, \"id\": 1}", -1, 0, -1 },
	{ "{\"error\": \"x\"}", -1, 0, -1 },
	{ "{\"event\": \"STOP\", \"id\": 3}", 0, SPX_QMP_EVENT, -1 },
	{ "{\"event\": 5}", -1, 0, -1 },
	{ "{\"QMP\": 1}", -1, 0, -1 },
	{ "[]", -1, 0, -1 },
	{ "\"return\"", -1, 0, -1 },
	{ "{\"return\": 1, \"return\": 2}", -1, 0, -1 },
	{ "{\"return\": \"a\\u0000b\"}", -1, 0, -1 },
	{ "{\"return\": ", -1, 0, -1 },
	{ "", -1, 0, -1 },
};

static void test_parse(void)
{
	size_t i;

	for (i = 0; i < SPX_ARRAY_SIZE(parse); i++) {
		struct spx_qmp_msg m;
		int rc = spx_qmp_parse(parse[i].line, strlen(parse[i].line), &m);

		T_INT(rc, parse[i].rc, "parse %zu: %s", i, parse[i].line);
		if (rc == 0) {
			T_INT(m.kind, parse[i].kind, "kind %zu", i);
			T_INT(m.id, parse[i].id, "id %zu", i);
		} else {
			T_OK(m.obj == NULL, "nothing kept %zu", i);
		}
		json_decref(m.obj);
	}
}

#define SPEC(name, mem, sock, uuid, extra)                                   \
	"{\"name\": \"" name "\", \"mem_mib\": " mem ", \"cpus\": 1, "       \
	"\"accel\": \"tcg\", \"nbd_socket\": \"" sock "\", \"root\": "        \
	"\"vol-0123456789abcdef0\", \"ssh_port\": 0, \"imds\": false, "     \
	"\"uuid\": \"" uuid "\"" extra "}"
#define UUID "ec2a13fb-71ab-4cd9-84e9-a539de9da145"

static void test_spec(void)
{
	static const struct {
		const char *text;
		int rc;
	} t[] = {
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID, ""), 0 },
		{ SPEC("i,0a", "256", "/run/vol.sock", UUID, ""), -1 },
		{ SPEC("-i", "256", "/run/vol.sock", UUID, ""), -1 },
		{ SPEC("I-0a", "256", "/run/vol.sock", UUID, ""), -1 },
		{ SPEC("i-0a", "63", "/run/vol.sock", UUID, ""), -1 },
		{ SPEC("i-0a", "4194305", "/run/vol.sock", UUID, ""), -1 },
		{ SPEC("i-0a", "256", "/run/vol,x.sock", UUID, ""), -1 },
		{ SPEC("i-0a", "256", "run/vol.sock", UUID, ""), -1 },
		{ SPEC("i-0a", "256", "/run/v\\nl.sock", UUID, ""), -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock",
		       "EC2A13FB-71ab-4cd9-84e9-a539de9da145", ""),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID, ", \"more\": 1"),
		  -1 },
		{ SPEC("i-0a", "\"256\"", "/run/vol.sock", UUID, ""), -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"boot\": \"uefi\""),
		  0 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"boot\": \"bios\""),
		  0 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"boot\": \"efi\""),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID, ", \"boot\": 1"),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"mac\": \"02:e7:b8:db:08:be\""),
		  0 },
		/* Upper case, multicast, short, a ',' for QEMU's parser. */
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"mac\": \"02:E7:b8:db:08:be\""),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"mac\": \"03:e7:b8:db:08:be\""),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"mac\": \"02:e7:b8:db:08\""),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"mac\": \"02:e7:b8:db:08,b\""),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID, ", \"mac\": 2"),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"tap\": \"spxt0\", \"vhost\": true"),
		  0 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"tap\": \"a,b\""),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID, ", \"tap\": \"0\""),
		  -1 },
		{ SPEC("i-0a", "256", "/run/vol.sock", UUID,
		       ", \"tap\": \"spxt0\", \"vhost\": 1"),
		  -1 },
		{ "{}", -1 },
		{ "", -1 },
	};
	size_t i;

	for (i = 0; i < SPX_ARRAY_SIZE(t); i++) {
		struct spx_vm_spec s;
		int rc = spx_vm_spec_parse(t[i].text, strlen(t[i].text), &s);

		T_INT(rc, t[i].rc, "spec %zu: %s", i, rc ? spx_errmsg() : "ok");
		if (rc == 0) {
			json_t *j = spx_vm_spec_json(&s);
			char *back = json_dumps(j, JSON_COMPACT);
			struct spx_vm_spec s2;

			T_INT(spx_vm_spec_parse(back, strlen(back), &s2), 0,
			      "spec %zu round trip", i);
			T_STR(s2.root, s.root, "spec %zu root", i);
			T_INT(s2.mem_mib, 256, "spec %zu memory", i);
			T_INT(s2.uefi, strstr(t[i].text, "uefi") != NULL,
			      "spec %zu boot mode", i);
			T_STR(s2.mac, strstr(t[i].text, "mac") ?
				      "02:e7:b8:db:08:be" : "",
			      "spec %zu mac", i);
			T_STR(s2.tap, strstr(t[i].text, "spxt0") ? "spxt0" : "",
			      "spec %zu tap", i);
			T_INT(s2.vhost, strstr(t[i].text, "spxt0") != NULL,
			      "spec %zu vhost-net", i);
			spx_vm_spec_release(&s2);
			free(back);
			json_decref(j);
		}
		spx_vm_spec_release(&s);
	}
}

static void test_argv(void)
{
	struct spx_vm_spec s = { .mem_mib = 512, .cpus = 2,
				 .accel = SPX_VM_TCG, .ssh_port = 2222 };
	char **argv, **p;
	bool sandbox = false, blockdev = false, raw = false, fwd = false;
	bool daemonize = false, nic = false, noshut = false, panic_dev = false,
	     panic_pause = false;

	memcpy(s.name, "i-0a", 5);
	memcpy(s.uuid, UUID, sizeof(UUID));
	s.nbd_socket = spx_strdup("/run/spx/vol.sock");
	s.root = spx_strdup("vol-0123456789abcdef0");
	s.imds = true;
	argv = spx_vm_qemu_argv(&s, "/run/spx/vm/i-0a", "/usr/bin/spx-vm");
	for (p = argv; *p; p++) {
		if (!strcmp(*p, "-sandbox"))
			sandbox = !strcmp(p[1], "on,obsolete=deny,"
						"resourcecontrol=deny");
		if (!strcmp(*p, "-blockdev") &&
		    !strncmp(p[1], "{\"driver\":\"raw\"", 15))
			raw = !strcmp(p[1], "{\"driver\":\"raw\",\"node-name\":"
					    "\"root\",\"file\":\"n0-vol-"
					    "0123456789abcdef0\",\"discard\":"
					    "\"unmap\"}");
		else if (!strcmp(*p, "-blockdev"))
			blockdev = !strcmp(
				p[1], "{\"driver\":\"nbd\",\"node-name\":"
				      "\"n0-vol-0123456789abcdef0\","
				      "\"server\":{\"type\":\"unix\",\"path\":"
				      "\"/run/spx/vol.sock\"},\"export\":"
				      "\"vol-0123456789abcdef0\",\"read-only\":"
				      "false,\"reconnect-delay\":60,"
				      "\"discard\":\"unmap\"}");
		if (!strcmp(*p, "-netdev"))
			fwd = !strcmp(p[1],
				      "user,id=n0,net=169.254.169.0/24,"
				      "dns=169.254.169.253,"
				      "hostfwd=tcp:127.0.0.1:2222-:22,"
				      "guestfwd=tcp:169.254.169.254:80-cmd:"
				      "'/usr/bin/spx-vm' imds '/run/spx/vm/i-0a'");
		if (!strcmp(*p, "-daemonize"))
			daemonize = true;
		if (!strcmp(*p, "-no-shutdown"))
			noshut = true;
		if (!strcmp(*p, "-device") && !strcmp(p[1], "pvpanic-pci"))
			panic_dev = true;
		if (!strcmp(*p, "-action") && !strcmp(p[1], "panic=pause"))
			panic_pause = true;
		if (!strcmp(*p, "-device") && strstr(p[1], "virtio-net"))
			nic = !strcmp(p[1], "virtio-net-pci,netdev=n0");
	}
	T_OK(nic, "no mac: QEMU's default");
	T_OK(!daemonize, "no -daemonize: spx-vm starts QEMU in a session");
	T_OK(noshut, "-no-shutdown: QEMU tells of a guest's power-off");
	T_OK(panic_dev && panic_pause,
	     "pvpanic, and a panicked guest kept for the agent to see");
	T_OK(sandbox, "the sandbox, with fork and setsid for guestfwd");
	T_OK(blockdev, "the root volume over NBD, in JSON");
	T_OK(raw, "a raw node root over it, which the device drives");
	T_OK(fwd, "ssh forwarded on loopback only, metadata to spx-vm imds");
	for (p = argv; *p; p++)
		T_OK(!strstr(*p, "pflash"), "BIOS: no pflash (%s)", *p);
	spx_vm_argv_free(argv);
	memcpy(s.mac, "02:e7:b8:db:08:be", 18);
	argv = spx_vm_qemu_argv(&s, "/run/spx/vm/i-0a", "/usr/bin/spx-vm");
	nic = false;
	for (p = argv; *p; p++)
		if (!strcmp(*p, "-device") && strstr(p[1], "virtio-net"))
			nic = !strcmp(p[1], "virtio-net-pci,netdev=n0,"
					    "mac=02:e7:b8:db:08:be");
	T_OK(nic, "the interface with its MAC");
	spx_vm_argv_free(argv);
	/* UEFI: OVMF's code read-only, the guest's own variable store. */
	s.uefi = true;
	argv = spx_vm_qemu_argv(&s, "/run/spx/vm/i-0a", "/usr/bin/spx-vm");
	{
		int code = 0, vars = 0;

		for (p = argv; *p; p++) {
			code += !strcmp(*p, "if=pflash,format=raw,unit=0,"
					    "readonly=on,file=" SPX_VM_OVMF_CODE);
			vars += !strcmp(*p, "if=pflash,format=raw,unit=1,"
					    "file=/run/spx/vm/i-0a/uefi-vars.fd");
		}
		T_OK(code == 1 && vars == 1, "UEFI: OVMF's two flash drives");
	}
	spx_vm_argv_free(argv);
	setenv("SPX_OVMF_CODE", "/usr/share/OVMF,x", 1);
	T_OK(spx_vm_qemu_argv(&s, "/run/spx/vm/i-0a", "/usr/bin/spx-vm") ==
		     NULL,
	     "a comma in the firmware's path is refused");
	unsetenv("SPX_OVMF_CODE");
	s.uefi = false;
	T_OK(spx_vm_qemu_argv(&s, "/run/spx/vm/i-0a", "/usr/bin/spx,vm") == NULL,
	     "a comma in the program is refused");
	T_OK(spx_vm_qemu_argv(&s, "/run/it's/vm/i-0a", "/usr/bin/spx-vm") ==
		     NULL,
	     "a quote in the directory is refused");
	spx_error_clear();
	/* On a tap: QEMU opens it by name, no forwards, vhost-net when the
	 * spec says the host has it. */
	s.ssh_port = 0;
	s.imds = false;
	memcpy(s.tap, "spxt0", 6);
	for (int vhost = 0; vhost < 2; vhost++) {
		int tap = 0, user = 0;

		s.vhost = vhost;
		argv = spx_vm_qemu_argv(&s, "/run/spx/vm/i-0a",
					"/usr/bin/spx-vm");
		for (p = argv; p && *p; p++) {
			if (strcmp(*p, "-netdev"))
				continue;
			tap += !strcmp(p[1], vhost ? "tap,id=n0,ifname=spxt0,"
						     "script=no,downscript=no,"
						     "vhost=on"
						   : "tap,id=n0,ifname=spxt0,"
						     "script=no,downscript=no");
			user += !strncmp(p[1], "user", 4);
		}
		T_OK(argv && tap == 1 && user == 0, "a tap, vhost-net %s",
		     vhost ? "on" : "off");
		spx_vm_argv_free(argv);
	}
	memcpy(s.tap, "a,b", 4);
	T_OK(spx_vm_qemu_argv(&s, "/run/spx/vm/i-0a", "/usr/bin/spx-vm") ==
		     NULL,
	     "a tap name with QEMU's separator is refused");
	spx_error_clear();
	spx_vm_spec_release(&s);
}

/* The console log cut back in place, on dir's file system. */
static void test_console(const char *dir)
{
	char *log = spx_xprintf("%s/console.log", dir);
	char *old = spx_xprintf("%s/console.log.1", dir);
	struct stat st;
	char *buf = spx_malloc(SPX_VM_CONSOLE_MAX + 4096 * 3);
	size_t n = SPX_VM_CONSOLE_MAX + 4096 * 3, i;
	int fd;

	for (i = 0; i < n; i++)
		buf[i] = (char)('a' + (i / 4096) % 26);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	T_OK(fd >= 0 && write(fd, buf, SPX_VM_CONSOLE_MAX) ==
				(ssize_t)SPX_VM_CONSOLE_MAX,
	     "%s: a full log", dir);
	T_INT(spx_vm_console_trim(dir), 0, "%s: at the limit: %s", dir,
	      spx_errmsg());
	T_OK(stat(log, &st) == 0 && st.st_size == SPX_VM_CONSOLE_MAX,
	     "%s: not cut at the limit", dir);
	T_OK(write(fd, buf + SPX_VM_CONSOLE_MAX, n - SPX_VM_CONSOLE_MAX) > 0,
	     "%s: past it", dir);
	T_INT(spx_vm_console_trim(dir), 0, "%s: cut: %s", dir, spx_errmsg());
	T_OK(stat(log, &st) == 0 && st.st_size >= SPX_VM_CONSOLE_KEEP &&
		     st.st_size < SPX_VM_CONSOLE_KEEP + 2 * 4096 + 4096 * 3,
	     "%s: the last MiB stays (%lld)", dir, (long long)st.st_size);
	/* The writer appends on at the new end. */
	T_OK(write(fd, "END", 3) == 3, "%s: appended after", dir);
	{
		struct spx_buf b = SPX_BUF_INIT;

		T_INT(spx_buf_read_file(&b, log, 8u << 20), 0, "%s: read", dir);
		T_OK(b.len >= 3 + 4096 && !memcmp(b.p + b.len - 3, "END", 3) &&
			     !memcmp(b.p + b.len - 3 - 4096,
				     buf + n - 4096, 4096),
		     "%s: the tail is the log's tail, then the new bytes", dir);
		spx_buf_release(&b);
	}
	T_OK(stat(old, &st) == 0 && st.st_size > 0, "%s: the cut part kept",
	     dir);
	close(fd);
	unlink(log);
	unlink(old);
	free(buf);
	free(log);
	free(old);
}

int main(void)
{
	char dir[] = "/tmp/test_qmp.XXXXXX";

	if (!mkdtemp(dir))
		return 2;
	snprintf(sockpath, sizeof(sockpath), "%s/qmp.sock", dir);
	test_parse();
	test_basic();
	test_late();
	test_faults();
	test_spec();
	test_argv();
	test_console(dir);
	{
		/* tmpfs has no FALLOC_FL_COLLAPSE_RANGE: the copying cut. */
		char shm[] = "/dev/shm/test_qmp.XXXXXX";

		if (mkdtemp(shm)) {
			test_console(shm);
			rmdir(shm);
		}
	}
	rmdir(dir);
	return t_done();
}
