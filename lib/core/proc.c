#include "spx.h"

#include <time.h>

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "proc.h"

extern char **environ;

pid_t spx_spawn(char *const argv[], bool quiet)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t pid;
	int e;

	/* The child starts with no signal blocked and default actions,
	 * whatever this process blocks or handles (a daemon's sigwait). */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_init(&fa);
	if (quiet) {
		posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
						 O_RDONLY, 0);
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO,
						 "/dev/null", O_WRONLY, 0);
	}
	e = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (e) {
		errno = e;
		return spx_error_errno(SPX_FAIL, "cannot run %s", argv[0]);
	}
	return pid;
}

pid_t spx_spawn_piped(char *const argv[], int *errfd)
{
	pid_t parent = getpid(), pid;
	int fds[2], null;
	sigset_t none;

	*errfd = -1;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return spx_error_errno(SPX_FAIL, "cannot run %s: pipe", argv[0]);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return spx_error_errno(SPX_FAIL, "cannot run %s: fork", argv[0]);
	}
	if (pid == 0) {
		/* Only async-signal-safe calls from here. */
		sigemptyset(&none);
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(SPX_FAIL);
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, STDIN_FILENO) < 0 ||
		    dup2(null, STDOUT_FILENO) < 0 ||
		    dup2(fds[1], STDERR_FILENO) < 0)
			_exit(SPX_FAIL);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	*errfd = fds[0];
	return pid;
}

int spx_run(char *const argv[], bool quiet)
{
	pid_t pid = spx_spawn(argv, quiet);
	int st;

	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return spx_error_errno(SPX_FAIL, "waitpid");
	if (!WIFEXITED(st))
		return spx_error(SPX_FAIL, "%s was killed by signal %d",
				 argv[0], WTERMSIG(st));
	return WEXITSTATUS(st);
}

char *spx_self_dir(void)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return NULL;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return spx_strdup(self);
}

#ifdef __SANITIZE_ADDRESS__
#include <dlfcn.h>

extern void __asan_init(void);

void spx_preload_sanitizers(void)
{
	Dl_info di;

	const char *o = getenv("ASAN_OPTIONS");
	char *opts;

	/* gcc links the runtime as a shared object: preload that file. */
	if (dladdr((void *)__asan_init, &di) && di.dli_fname &&
	    strstr(di.dli_fname, "libasan"))
		setenv("LD_PRELOAD", di.dli_fname, 1);
	/* nbdkit ends without freeing the connections still open: its
	 * leak report would be about nbdkit, not about our code. */
	opts = spx_xprintf("%s%sdetect_leaks=0", o ? o : "", o && *o ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	free(opts);
}
#else
void spx_preload_sanitizers(void)
{
}
#endif

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t spx_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

int64_t spx_wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

char *spx_find_beside(const char *env, const char *const rel[], size_t n)
{
	const char *e = env ? getenv(env) : NULL;
	char *self;

	if (e && *e)
		return spx_strdup(e);
	self = spx_self_dir();
	for (size_t i = 0; self && i < n; i++) {
		char *p = spx_xprintf("%s/%s", self, rel[i]);

		if (access(p, R_OK) == 0) {
			free(self);
			return p;
		}
		free(p);
	}
	free(self);
	return NULL;
}
