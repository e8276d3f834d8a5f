/* log.h: leveled logging to stderr, never stdout.
 *
 * The level starts at SPX_LOG_WARN, is raised by each -v a tool sees
 * (spx_log_more()) and is overridden by SPX_LOG_LEVEL in the environment
 * (error, warn, info, debug, or 0-3). Lines read
 *   spx-gw: info: listening on 127.0.0.1:9999
 * Thread-safe: each line is written with a single write(2).
 *
 * A daemon whose stderr is a log file turns on timestamps: every line
 * (spx_log and spx_warn alike) then starts with the UTC time,
 *   2026-12-01T10:00:00.123Z spx-gw: warn: ... */
#ifndef SPX_LOG_H
#define SPX_LOG_H

enum spx_log_level {
	SPX_LOG_ERROR = 0,
	SPX_LOG_WARN = 1,
	SPX_LOG_INFO = 2,
	SPX_LOG_DEBUG = 3,
};

/* Read SPX_LOG_LEVEL; returns -1 and records an error if it is set to
 * something unknown. */
int spx_log_init(void);
void spx_log_more(void);
void spx_log_set(enum spx_log_level level);
enum spx_log_level spx_log_get(void);
int spx_log_parse_level(const char *s, enum spx_log_level *out);
void spx_log_timestamps(bool on);
/* Write the timestamp prefix ("" when off) into buf; returns its length. */
size_t spx_log_stamp(char *buf, size_t size);
void spx_log(enum spx_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define spx_debug(...) spx_log(SPX_LOG_DEBUG, __VA_ARGS__)
#define spx_info(...) spx_log(SPX_LOG_INFO, __VA_ARGS__)

#endif
