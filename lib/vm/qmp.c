/* qmp.c: the QMP client (qmp.h). One connection, used by one thread. */
#include "spx.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "vm/qmp.h"
#include "proc.h"

struct spx_qmp {
	int fd;
	struct spx_buf in; /* bytes read that do not yet end a line */
	long long next_id;
	json_t *events[SPX_QMP_EVENTS_MAX]; /* oldest first */
	size_t nevents;
};

int spx_qmp_parse(const char *line, size_t len, struct spx_qmp_msg *m)
{
	json_error_t je;
	json_t *o, *v;

	m->obj = NULL;
	m->id = -1;
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return spx_error(SPX_FAIL, "qmp: a line that is not JSON: %s",
				 je.text);
	if (!json_is_object(o))
		goto bad;
	if (json_is_object(json_object_get(o, "QMP")))
		m->kind = SPX_QMP_GREETING;
	else if (json_object_get(o, "return"))
		m->kind = SPX_QMP_RETURN;
	else if ((v = json_object_get(o, "error")) && json_is_object(v) &&
		 json_is_string(json_object_get(v, "class")) &&
		 json_is_string(json_object_get(v, "desc")))
		m->kind = SPX_QMP_ERROR;
	else if (json_is_string(json_object_get(o, "event")))
		m->kind = SPX_QMP_EVENT;
	else
		goto bad;
	v = json_object_get(o, "id");
	if ((m->kind == SPX_QMP_RETURN || m->kind == SPX_QMP_ERROR) &&
	    json_is_integer(v) && json_integer_value(v) >= 0)
		m->id = json_integer_value(v);
	m->obj = o;
	return 0;
bad:
	json_decref(o);
	return spx_error(SPX_FAIL, "qmp: a message of no known kind");
}

/* The deadline timeout_ms from now, never early: the clock counts whole
 * milliseconds, so now may be up to 1 ms later than it says. */
static long long deadline_in(int timeout_ms)
{
	return spx_mono_ms() + timeout_ms + 1;
}

/* Read the next message within the deadline (absolute, now_ms). -1 with
 * an error recorded; *late says the deadline passed (nothing is wrong
 * with the connection then). */
static int read_msg(struct spx_qmp *q, long long deadline,
		    struct spx_qmp_msg *m, bool *late)
{
	*late = false;
	for (;;) {
		char *nl = memchr(q->in.p, '\n', q->in.len);

		if (nl) {
			size_t n = (size_t)(nl - q->in.p) + 1;
			size_t i;
			int rc;

			for (i = 0; i < n && strchr(" \t\r\n", q->in.p[i]); i++)
				;
			rc = i == n ? 1 : spx_qmp_parse(q->in.p, n, m);
			memmove(q->in.p, q->in.p + n, q->in.len - n);
			spx_buf_setlen(&q->in, q->in.len - n);
			if (rc == 1)
				continue; /* a blank line */
			return rc;
		}
		if (q->in.len >= SPX_QMP_LINE_MAX)
			return spx_error(SPX_FAIL,
					 "qmp: a message longer than %u bytes",
					 SPX_QMP_LINE_MAX);
		long long left = deadline - spx_mono_ms();
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		int r;

		if (left <= 0) {
			*late = true;
			return spx_error(SPX_FAIL, "qmp: no answer in time");
		}
		r = poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left));
		if (r < 0 && errno != EINTR)
			return spx_error_errno(SPX_FAIL, "qmp: poll");
		if (r <= 0)
			continue;
		size_t want = SPX_QMP_LINE_MAX - q->in.len;
		ssize_t got;

		if (want > 65536)
			want = 65536;
		spx_buf_grow(&q->in, want);
		got = read(q->fd, q->in.p + q->in.len, want);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return spx_error_errno(SPX_FAIL, "qmp: read");
		if (got == 0)
			return spx_error(SPX_FAIL,
					 "qmp: QEMU closed the connection");
		spx_buf_setlen(&q->in, q->in.len + (size_t)got);
	}
}

static int send_obj(struct spx_qmp *q, json_t *o, long long deadline)
{
	char *s = json_dumps(o, JSON_COMPACT);
	size_t len, off = 0;
	int rc = 0;

	if (!s)
		return spx_error(SPX_FAIL, "qmp: cannot encode a command");
	len = strlen(s);
	s[len++] = '\n'; /* over the NUL: json_dumps' buffer has it */
	while (off < len) {
		ssize_t w = send(q->fd, s + off, len - off, MSG_NOSIGNAL);
		long long left;
		struct pollfd p = { .fd = q->fd, .events = POLLOUT };

		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			rc = spx_error_errno(SPX_FAIL, "qmp: send");
			break;
		}
		left = deadline - spx_mono_ms();
		if (left <= 0) {
			rc = spx_error(SPX_FAIL, "qmp: QEMU reads no commands");
			break;
		}
		poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left));
	}
	free(s);
	return rc;
}

static void keep_event(struct spx_qmp *q, json_t *ev)
{
	if (q->nevents == SPX_QMP_EVENTS_MAX) {
		json_decref(q->events[0]);
		memmove(q->events, q->events + 1,
			(SPX_QMP_EVENTS_MAX - 1) * sizeof(q->events[0]));
		q->nevents--;
	}
	q->events[q->nevents++] = ev;
}

/* Send o (its "id" set here) and wait for its answer: 0 with *answer the
 * whole return or error message (the caller decrefs). */
static int call(struct spx_qmp *q, json_t *o, const char *what,
		int timeout_ms, json_t **answer)
{
	long long deadline = deadline_in(timeout_ms);
	long long id = q->next_id++;

	*answer = NULL;
	json_object_set_new(o, "id", json_integer(id));
	if (send_obj(q, o, deadline) < 0)
		return spx_error_prefix("%s", what);
	for (;;) {
		struct spx_qmp_msg m;
		bool late;

		if (read_msg(q, deadline, &m, &late) < 0) {
			if (late)
				return spx_error(SPX_FAIL,
						 "qmp: %s: no answer in %d ms",
						 what, timeout_ms);
			return spx_error_prefix("%s", what);
		}
		if (m.kind == SPX_QMP_EVENT) {
			keep_event(q, m.obj);
			continue;
		}
		if ((m.kind == SPX_QMP_RETURN || m.kind == SPX_QMP_ERROR) &&
		    m.id == id) {
			*answer = m.obj;
			return 0;
		}
		json_decref(m.obj); /* a late answer to an earlier call */
	}
}

static int refused(const char *what, json_t *answer)
{
	json_t *e = json_object_get(answer, "error");

	return spx_error(SPX_NO, "qmp: %s: %s: %s", what,
			 json_string_value(json_object_get(e, "class")),
			 json_string_value(json_object_get(e, "desc")));
}

int spx_qmp_exec(struct spx_qmp *q, const char *cmd, json_t *args,
		 int timeout_ms, json_t **ret)
{
	json_t *o = json_object(), *answer;
	int rc;

	if (ret)
		*ret = NULL;
	json_object_set_new(o, "execute", json_string(cmd));
	if (args)
		json_object_set(o, "arguments", args);
	rc = call(q, o, cmd, timeout_ms, &answer);
	json_decref(o);
	if (rc < 0)
		return rc;
	if (!json_object_get(answer, "return")) {
		rc = refused(cmd, answer);
	} else if (ret) {
		*ret = json_incref(json_object_get(answer, "return"));
	}
	json_decref(answer);
	return rc;
}

int spx_qmp_raw(struct spx_qmp *q, const char *text, size_t len,
		int timeout_ms, char **reply)
{
	json_error_t je;
	json_t *o, *answer;
	const char *cmd;
	int rc;

	*reply = NULL;
	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return spx_error(SPX_USAGE, "qmp: not JSON: %s", je.text);
	cmd = json_string_value(json_object_get(o, "execute"));
	if (!json_is_object(o) || !cmd) {
		json_decref(o);
		return spx_error(SPX_USAGE,
				 "qmp: a command is an object with \"execute\"");
	}
	rc = call(q, o, cmd, timeout_ms, &answer);
	if (rc == 0) {
		json_object_del(answer, "id");
		*reply = json_dumps(answer, JSON_COMPACT);
		if (json_object_get(answer, "error"))
			rc = refused(cmd, answer);
		json_decref(answer);
	}
	json_decref(o);
	return rc;
}

int spx_qmp_wait_event(struct spx_qmp *q, const char *name, int timeout_ms,
		       json_t **data)
{
	long long deadline = deadline_in(timeout_ms);
	json_t *ev = NULL;
	size_t i;

	for (i = 0; i < q->nevents; i++) {
		if (strcmp(json_string_value(json_object_get(q->events[i],
							     "event")),
			   name) == 0) {
			ev = q->events[i];
			memmove(q->events + i, q->events + i + 1,
				(q->nevents - i - 1) * sizeof(q->events[0]));
			q->nevents--;
			break;
		}
	}
	while (!ev) {
		struct spx_qmp_msg m;
		bool late;

		if (read_msg(q, deadline, &m, &late) < 0) {
			if (late)
				return spx_error(SPX_NO,
						 "qmp: no %s event in %d ms",
						 name, timeout_ms);
			return -1;
		}
		if (m.kind == SPX_QMP_EVENT &&
		    strcmp(json_string_value(json_object_get(m.obj, "event")),
			   name) == 0)
			ev = m.obj;
		else if (m.kind == SPX_QMP_EVENT)
			keep_event(q, m.obj);
		else
			json_decref(m.obj);
	}
	if (data) {
		json_t *d = json_object_get(ev, "data");

		*data = d ? json_incref(d) : json_null();
	}
	json_decref(ev);
	return 0;
}

int spx_qmp_connect(const char *path, int timeout_ms, struct spx_qmp **out)
{
	long long deadline = deadline_in(timeout_ms);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct spx_qmp *q;
	struct spx_qmp_msg m;
	json_t *ret;
	bool late;

	*out = NULL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return spx_error(SPX_USAGE, "qmp: socket path too long: '%s'",
				 path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	q = spx_calloc(1, sizeof(*q));
	spx_buf_init(&q->in, 4096);
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (q->fd < 0) {
		spx_error_errno(SPX_FAIL, "qmp: socket");
		goto fail;
	}
	if (connect(q->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		/* A full listen backlog; anything else is final. */
		struct pollfd p = { .fd = q->fd, .events = POLLOUT };
		int err = 0;
		socklen_t el = sizeof(err);

		if (errno != EAGAIN && errno != EINPROGRESS) {
			spx_error_errno(SPX_FAIL, "qmp: cannot connect to '%s'",
					path);
			goto fail;
		}
		if (poll(&p, 1, timeout_ms) <= 0 ||
		    getsockopt(q->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 ||
		    err) {
			errno = err ? err : ETIMEDOUT;
			spx_error_errno(SPX_FAIL, "qmp: cannot connect to '%s'",
					path);
			goto fail;
		}
	}
	/* QEMU serves one client at a time: another one connected stalls
	 * the greeting, and the deadline says so. */
	if (read_msg(q, deadline, &m, &late) < 0) {
		spx_error_prefix("'%s'", path);
		goto fail;
	}
	if (m.kind != SPX_QMP_GREETING) {
		json_decref(m.obj);
		spx_error(SPX_FAIL, "qmp: '%s' did not greet as QMP", path);
		goto fail;
	}
	json_decref(m.obj);
	long long left = deadline - spx_mono_ms();

	if (spx_qmp_exec(q, "qmp_capabilities", NULL,
			 left > 1 ? (int)left : 1, &ret) < 0)
		goto fail;
	json_decref(ret);
	*out = q;
	return 0;
fail:
	spx_qmp_close(q);
	return -1;
}

void spx_qmp_close(struct spx_qmp *q)
{
	size_t i;

	if (!q)
		return;
	if (q->fd >= 0)
		close(q->fd);
	for (i = 0; i < q->nevents; i++)
		json_decref(q->events[i]);
	spx_buf_release(&q->in);
	free(q);
}
