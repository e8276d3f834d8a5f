/* err.h: exit statuses, diagnostics and the library's error slot.
 *
 * Every spx tool exits with one of four statuses (documented in every man
 * page) and the gateway maps the same classes to HTTP:
 *   0   SPX_OK     success                                   200
 *   1   SPX_NO     negative answer: not found, exists, ...   404/409
 *   100 SPX_USAGE  bad option, argument or input             400
 *   111 SPX_FAIL   system or temporary failure               5xx
 *
 * Library functions never print and never exit. On failure they return
 * spx_error(status, fmt, ...), which records a message and a status in a
 * thread-local slot and yields -1; the caller (a tool's main, or the
 * gateway, which turns it into an HTTP error) reads it back with
 * spx_errmsg()/spx_errstatus(). Messages are lowercase, without a trailing
 * period, with the object quoted: "cannot open 'vol-0a1b': No such file".
 */
#ifndef SPX_ERR_H
#define SPX_ERR_H

#include <stdarg.h>

enum {
	SPX_OK = 0,
	SPX_NO = 1,
	SPX_USAGE = 100,
	SPX_FAIL = 111,
};

/* Set once from main(): the basename of argv[0] prefixes every message. */
void spx_set_progname(const char *argv0);
const char *spx_progname(void);

/* Print "prog: message" on stderr and exit with status. */
_Noreturn void spx_die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same with ": strerror(errno)" appended. */
_Noreturn void spx_die_errno(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void spx_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void spx_warn_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record an error for the caller; always returns -1. */
int spx_error(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same with ": strerror(errno)" appended (errno read on entry). */
int spx_error_errno(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same for a position in a file: "file:line:col: message", always
 * SPX_USAGE (a malformed input). */
int spx_error_at(const char *file, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Prefix the recorded message with "what: " (adds context on the way up);
 * always returns -1. */
int spx_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *spx_errmsg(void);
int spx_errstatus(void);
void spx_error_clear(void);

/* Print the recorded error as "prog: message" and exit with its status. */
_Noreturn void spx_die_last(void);

/* Errors in an API's words. AWS answers a failure with an HTTP status, a
 * code ("NoSuchKey", "InvalidKeyPair.NotFound") and a message; tables of
 * such answers use this one struct (message: a static string). */
struct spx_apierr {
	int http;
	const char *code;
	const char *message;
};
#define SPX_API_CODE_MAX 64
/* Record an error as spx_error(status, ...) does, and also the HTTP status
 * and API code it is answered with; always returns -1. Code and message
 * go to the client as they are. A handler records its failure so, and
 * the gateway renders it in one place. */
int spx_api_error(int status, int http, const char *code, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));
/* The code of the last error if spx_api_error recorded it (*http, may be
 * NULL, gets its status): NULL when the last error was recorded some
 * other way, or cleared. spx_error_prefix keeps the code. */
const char *spx_api_errcode(int *http);

/* Allocation that cannot fail: exits 111 on exhaustion (as git's xmalloc). */
void *spx_malloc(size_t n);
void *spx_calloc(size_t n, size_t size);
void *spx_realloc(void *p, size_t n);
char *spx_strdup(const char *s);
char *spx_strndup(const char *s, size_t n);
/* asprintf that cannot fail. */
char *spx_xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
