#include "spx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *progname = "spx";

void spx_set_progname(const char *argv0)
{
	const char *s;

	if (!argv0 || !*argv0)
		return;
	s = strrchr(argv0, '/');
	progname = s ? s + 1 : argv0;
}

const char *spx_progname(void)
{
	return progname;
}

__attribute__((format(printf, 1, 0))) static void
vmsg(const char *fmt, va_list ap, int errnum)
{
	char line[2048];
	size_t s = spx_log_stamp(line, sizeof(line));
	int n;

	n = snprintf(line + s, sizeof(line) - s, "%s: ", progname);
	if (n < 0 || (size_t)n >= sizeof(line) - s)
		n = 0;
	n += (int)s;
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (errnum)
		fprintf(stderr, "%s: %s\n", line, strerror(errnum));
	else
		fprintf(stderr, "%s\n", line);
}

void spx_die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, 0);
	va_end(ap);
	exit(status);
}

void spx_die_errno(int status, const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, e);
	va_end(ap);
	exit(status);
}

void spx_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, 0);
	va_end(ap);
}

void spx_warn_errno(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, e);
	va_end(ap);
}

static _Thread_local struct {
	int status;
	char msg[1024];
	int http;			/* spx_api_error's, else 0 */
	char code[SPX_API_CODE_MAX];
} last;

__attribute__((format(printf, 3, 0))) static int
verror(int status, int errnum, const char *fmt, va_list ap)
{
	size_t n;

	last.status = status;
	last.http = 0;
	last.code[0] = '\0';
	vsnprintf(last.msg, sizeof(last.msg), fmt, ap);
	if (errnum) {
		n = strlen(last.msg);
		snprintf(last.msg + n, sizeof(last.msg) - n, ": %s",
			 strerror(errnum));
	}
	return -1;
}

int spx_error(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(status, 0, fmt, ap);
	va_end(ap);
	return -1;
}

int spx_error_errno(int status, const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	verror(status, e, fmt, ap);
	va_end(ap);
	return -1;
}

int spx_error_at(const char *file, int line, int col, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return spx_error(SPX_USAGE, "%s:%d:%d: %s", file, line, col, msg);
}

int spx_error_prefix(const char *fmt, ...)
{
	char pre[512];
	size_t pl, ml, room;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	/* "pre: old", the old message truncated if the slot is full. */
	pl = strlen(pre);
	room = sizeof(last.msg) - pl - 3;
	ml = strnlen(last.msg, sizeof(last.msg) - 1);
	if (ml > room)
		ml = room;
	memmove(last.msg + pl + 2, last.msg, ml);
	last.msg[pl + 2 + ml] = '\0';
	memcpy(last.msg, pre, pl);
	last.msg[pl] = ':';
	last.msg[pl + 1] = ' ';
	if (!last.status)
		last.status = SPX_FAIL;
	return -1;
}

int spx_api_error(int status, int http, const char *code, const char *fmt,
		  ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(status, 0, fmt, ap);
	va_end(ap);
	last.http = http;
	snprintf(last.code, sizeof(last.code), "%s", code);
	return -1;
}

const char *spx_api_errcode(int *http)
{
	if (!last.code[0])
		return NULL;
	if (http)
		*http = last.http;
	return last.code;
}

const char *spx_errmsg(void)
{
	return last.msg[0] ? last.msg : "unknown error";
}

int spx_errstatus(void)
{
	return last.status ? last.status : SPX_FAIL;
}

void spx_error_clear(void)
{
	last.status = 0;
	last.msg[0] = '\0';
	last.http = 0;
	last.code[0] = '\0';
}

void spx_die_last(void)
{
	spx_die(spx_errstatus(), "%s", spx_errmsg());
}

void *spx_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		spx_die(SPX_FAIL, "out of memory allocating %zu bytes", n);
	return p;
}

void *spx_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		spx_die(SPX_FAIL, "out of memory allocating %zu x %zu bytes", n,
			size);
	return p;
}

void *spx_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		spx_die(SPX_FAIL, "out of memory allocating %zu bytes", n);
	return q;
}

char *spx_strdup(const char *s)
{
	return spx_strndup(s, strlen(s));
}

char *spx_strndup(const char *s, size_t n)
{
	char *p = spx_malloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *spx_xprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		spx_die(SPX_FAIL, "out of memory formatting a string");
	return p;
}
