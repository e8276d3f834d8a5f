/* Unit tests for lib/node/sup.c: the restart backoff and how a death is
 * told. (The supervisor itself is tested end to end in
 * tests/bats/supervise.bats.) */
#include "spx.h"

#include <signal.h>
#include <sys/wait.h>

#include "node/sup.h"
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
	return t_done();
}
