/* Unit tests for lib/node/sup.c: the restart backoff and how a death is
 * told; and lib/node/svc.c's relay of a child's output into the log.
 * (The supervisor itself is tested end to end in
 * tests/bats/supervise.bats.) */
#include "spx.h"

#include <signal.h>
#include <sys/wait.h>

#include "node/sup.h"
#include "node/svc.h"
#include "proc.h"
#include "t.h"

static const struct {
	unsigned n, ms;
} backoff[] = {
	{ 1, 100 },   { 2, 200 },   { 3, 400 },    { 4, 800 },
	{ 5, 1600 },  { 9, 25600 }, { 10, 30000 }, { 11, 30000 },
	{ 1000, 30000 }, { 0xffffffffu, 30000 },
};

/* Real wait statuses, from real children. */
static int status_of(int how)
{
	int ws = 0;
	pid_t p = fork();

	if (p == 0) {
		if (how > 0)
			_exit(how);
		signal(-how, SIG_DFL);
		raise(-how);
		_exit(0);
	}
	waitpid(p, &ws, 0);
	return ws;
}

/* What the relay logs (stderr caught in a file) of what is written into
 * a pipe in the pieces given, the pipe then closed. *reads: the relay's
 * answers, one character each ('1', '-', '0'). */
static char *relayed(const char *const *pieces, size_t n, char *reads,
		     size_t nreads)
{
	struct spx_svc_relay r = { .n = 0 };
	char path[] = "/tmp/spx-test-relay-XXXXXX";
	int p[2], out = mkstemp(path), err = dup(2);
	size_t k = 0;
	struct spx_buf b = SPX_BUF_INIT;
	char *s;

	unlink(path);
	if (out < 0 || err < 0 || pipe2(p, O_NONBLOCK) < 0)
		return NULL;
	dup2(out, 2);
	for (size_t i = 0; i <= n; i++) {
		int rc;

		if (i < n) {
			if (write(p[1], pieces[i], strlen(pieces[i])) < 0)
				break;
		} else {
			close(p[1]);
		}
		do {
			rc = spx_svc_relay_read(&r, p[0], SPX_LOG_WARN);
			if (k + 1 < nreads)
				reads[k++] = rc > 0 ? '1' : rc < 0 ? '-' : '0';
		} while (rc > 0);
	}
	reads[k] = 0;
	close(p[0]);
	dup2(err, 2);
	close(err);
	lseek(out, 0, SEEK_SET);
	spx_buf_read_fd(&b, out, path, 1 << 20);
	close(out);
	spx_buf_addc(&b, 0);
	s = spx_strdup(b.p);
	spx_buf_release(&b);
	return s;
}

static void test_relay(void)
{
	char reads[64], *long1 = spx_malloc(SPX_SVC_LINE_MAX + 11);
	char *want, *got;

	got = relayed((const char *const[]){ "one\ntw", "o\n\nthr", "ee" }, 3,
		      reads, sizeof(reads));
	T_STR(got, "spx: warn: one\nspx: warn: two\n"
		   "spx: warn: \nspx: warn: three\n",
	      "relay: lines whole across reads, the last at the end");
	T_STR(reads, "1-1-1-0", "relay: read, nothing yet, end");
	free(got);
	/* An overlong line in pieces of the most it holds. */
	memset(long1, 'x', SPX_SVC_LINE_MAX + 10);
	long1[SPX_SVC_LINE_MAX + 10] = 0;
	got = relayed((const char *const[]){ long1 }, 1, reads, sizeof(reads));
	want = spx_xprintf("spx: warn: %.*s\nspx: warn: xxxxxxxxxx\n",
			   SPX_SVC_LINE_MAX, long1);
	T_STR(got, want, "relay: a line longer than %d bytes in pieces",
	      SPX_SVC_LINE_MAX);
	free(got);
	free(want);
	free(long1);
}

int main(void)
{
	static const struct {
		int how; /* > 0: exit status; < 0: -signal */
		const char *want;
	} deaths[] = {
		{ 111, "exited with status 111" },
		{ 1, "exited with status 1" },
		{ -SIGKILL, "killed by SIGKILL" },
		{ -SIGTERM, "killed by SIGTERM" },
	};
	char buf[128];

	for (size_t i = 0; i < SPX_ARRAY_SIZE(backoff); i++)
		T_INT(spx_sup_backoff_ms(backoff[i].n), backoff[i].ms,
		      "backoff after death %u in a row", backoff[i].n);
	for (size_t i = 0; i < SPX_ARRAY_SIZE(deaths); i++) {
		spx_sup_describe(status_of(deaths[i].how), buf, sizeof(buf));
		T_STR(buf, deaths[i].want, "describe: death %zu", i);
	}
	/* A core dump is said; the kernel decides whether one is made. */
	spx_sup_describe(status_of(-SIGSEGV), buf, sizeof(buf));
	T_OK(!strncmp(buf, "killed by SIGSEGV", 17), "describe: SIGSEGV (%s)",
	     buf);
	spx_sup_describe(0x7f | (SIGSTOP << 8), buf, sizeof(buf));
	T_OK(!strncmp(buf, "ended (wait status", 18), "describe: other");
	test_relay();
	return t_done();
}
