#include "spx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static enum spx_log_level level = SPX_LOG_WARN;
static bool stamps;
static const char *const names[] = { "error", "warn", "info", "debug" };

int spx_log_parse_level(const char *s, enum spx_log_level *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcasecmp(s, names[i]) ||
		    (s[0] == (char)('0' + i) && !s[1])) {
			*out = (enum spx_log_level)i;
			return 0;
		}
	}
	return spx_error(SPX_USAGE,
			 "unknown log level '%s' (error, warn, info, debug)", s);
}

int spx_log_init(void)
{
	const char *s = getenv("SPX_LOG_LEVEL");

	if (!s || !*s)
		return 0;
	return spx_log_parse_level(s, &level);
}

void spx_log_more(void)
{
	if (level < SPX_LOG_DEBUG)
		level++;
}

void spx_log_set(enum spx_log_level l)
{
	level = l;
}

enum spx_log_level spx_log_get(void)
{
	return level;
}

void spx_log_timestamps(bool on)
{
	stamps = on;
}

size_t spx_log_stamp(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	int n;

	buf[0] = '\0';
	if (!stamps || size < 32)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
	if (n < 0 || (size_t)n >= size) {
		buf[0] = '\0';
		return 0;
	}
	return (size_t)n;
}

void spx_log(enum spx_log_level l, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n, m;

	if (l > level)
		return;
	n = (int)spx_log_stamp(line, sizeof(line));
	m = snprintf(line + n, sizeof(line) - (size_t)n, "%s: %s: ",
		     spx_progname(), names[l]);
	if (m < 0 || (size_t)m >= sizeof(line) - (size_t)n)
		return;
	n += m;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line so that threads do not interleave. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
