/* t.h: a tiny TAP producer for the table-driven unit tests.
 *
 *   T_OK(cond, "name %d", i);        one test point
 *   T_STR(got, want, "name");        string equality, shows both on failure
 *   T_INT(got, want, "name");
 *   return t_done();                 prints the plan, exit status
 *
 * tests/run.sh counts the "ok"/"not ok" lines of every unit binary. */
#ifndef SPX_T_H
#define SPX_T_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int t_n, t_failed;

__attribute__((format(printf, 4, 5), unused)) static int
t_check(int ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++t_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok) {
		t_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return ok;
}

#define T_OK(cond, ...) t_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define T_STR(got, want, ...)                                                \
	do {                                                                 \
		const char *t_g_ = (got), *t_w_ = (want);                    \
		if (!T_OK(t_g_ && t_w_ ? !strcmp(t_g_, t_w_) : t_g_ == t_w_, \
			  __VA_ARGS__))                                      \
			printf("#   got  '%s'\n#   want '%s'\n",             \
			       t_g_ ? t_g_ : "(null)",                       \
			       t_w_ ? t_w_ : "(null)");                      \
	} while (0)

#define T_INT(got, want, ...)                                                \
	do {                                                                 \
		long long t_g_ = (long long)(got), t_w_ = (long long)(want); \
		if (!T_OK(t_g_ == t_w_, __VA_ARGS__))                        \
			printf("#   got  %lld\n#   want %lld\n", t_g_, t_w_);    \
	} while (0)

__attribute__((unused)) static int t_done(void)
{
	printf("1..%d\n", t_n);
	return t_failed ? 1 : 0;
}

#endif
