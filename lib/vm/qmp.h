/* qmp.h: a client of QEMU's machine protocol (QMP) on a unix socket.
 *
 * QMP is JSON objects, one a line, both ways: QEMU greets with
 * {"QMP": {...}}, the client sends {"execute": "qmp_capabilities"} once,
 * then commands; each gets {"return": ...} or {"error": {"class", "desc"}}
 * with the "id" the command carried, and events ({"event": ...}) come in
 * between at any time. QEMU is a local process, but a hung or wedged QEMU
 * must never hang a tool or the agent: every call here has a deadline, and
 * every line read is bounded (SPX_QMP_LINE_MAX) and parsed by a checking
 * parser before anything looks into it.
 *
 *   struct spx_qmp *q;
 *   json_t *ret;
 *   if (spx_qmp_connect("run/vm/i-0a1b/qmp.sock", 2000, &q) < 0) ...
 *   if (spx_qmp_exec(q, "query-status", NULL, 2000, &ret) < 0) ...
 *   json_decref(ret);
 *   spx_qmp_close(q);
 *
 * Failures are recorded (err.h): SPX_FAIL for the connection (refused,
 * closed, a deadline passed, a malformed line), SPX_NO for a command QEMU
 * refused ("qmp: query-foo: CommandNotFound: The command query-foo has not
 * been found"). After a deadline passed the connection may still deliver
 * the late answer: replies carry the id of their command, and one with
 * another id is dropped. */
#ifndef SPX_VM_QMP_H
#define SPX_VM_QMP_H

#include "spx.h"
#include <jansson.h>

/* One QMP message at most this long (query-qmp-schema is about 200 KB). */
#define SPX_QMP_LINE_MAX (8u << 20)
/* Events kept for spx_qmp_wait_event while commands run. */
#define SPX_QMP_EVENTS_MAX 64

struct spx_qmp;

/* Connect to the QMP socket at path, read the greeting and negotiate
 * capabilities, all within timeout_ms. */
int spx_qmp_connect(const char *path, int timeout_ms, struct spx_qmp **out);
void spx_qmp_close(struct spx_qmp *q);

/* Run one command. args (borrowed, may be NULL) is its "arguments"
 * object. On success *ret, when ret is not NULL, gets a new reference to
 * what "return" held (the caller decrefs). */
int spx_qmp_exec(struct spx_qmp *q, const char *cmd, json_t *args,
		 int timeout_ms, json_t **ret);

/* Send a command given as JSON text ({"execute": ..., "arguments": ...};
 * anything else is refused with SPX_USAGE) and give back QEMU's whole
 * answer as compact JSON text in *reply (caller frees), an error answer
 * included: that is for spx-vm qmp, which passes QMP through for
 * debugging. Its own "id", if any, is replaced. */
int spx_qmp_raw(struct spx_qmp *q, const char *text, size_t len,
		int timeout_ms, char **reply);

/* Wait for an event named name (one that came before, during an earlier
 * call, counts, and is consumed); *data, when not NULL, gets a new
 * reference to its "data" (json null when it had none). SPX_NO when the
 * deadline passes first, SPX_FAIL when the connection closes. */
int spx_qmp_wait_event(struct spx_qmp *q, const char *name, int timeout_ms,
		       json_t **data);

/* What a line from QEMU is. spx_qmp_parse checks a line's shape and
 * classifies it: SPX_QMP_GREETING ({"QMP": object}), SPX_QMP_RETURN (has
 * "return"), SPX_QMP_ERROR ("error" with string "class" and "desc"),
 * SPX_QMP_EVENT (string "event"). m->obj holds the parsed object (the
 * caller json_decrefs it); m->id is the integer "id" or -1 when it has
 * none or another kind. A line that is none of these, or not JSON, gives
 * -1 (SPX_FAIL) and m->obj NULL. */
enum spx_qmp_kind {
	SPX_QMP_GREETING,
	SPX_QMP_RETURN,
	SPX_QMP_ERROR,
	SPX_QMP_EVENT,
};
struct spx_qmp_msg {
	enum spx_qmp_kind kind;
	json_t *obj;
	long long id;
};
int spx_qmp_parse(const char *line, size_t len, struct spx_qmp_msg *m);

#endif
