/* state.h: the control-plane record store.
 *
 * A store maps keys to records. A record is an opaque value (in practice a
 * JSON document) of at most SPX_STATE_VALUE_MAX bytes and a revision, a
 * uint64 that is at least 1 and grows on every successful write of the
 * key. Revisions are only promised to increase per key, not to be dense:
 * the dir backend counts 1, 2, 3, ... but a NATS JetStream KV backend uses
 * stream sequence numbers. After a delete, a re-created key may start over
 * at a lower revision (the dir backend starts again at 1), so a revision
 * read before a delete means nothing after it.
 *
 *   struct spx_state *st;
 *   uint64_t rev;
 *
 *   if (spx_state_open("dir:/var/lib/spx/state", SPX_STATE_CREATE, &st) < 0)
 *           spx_die_last();
 *   if (spx_state_create(st, "instances/i-0abc", json, len, &rev) < 0)
 *           ...                        (SPX_STATE_EXISTS: taken)
 *   if (spx_state_put(st, "instances/i-0abc", json2, len2, rev, &rev) < 0)
 *           ...                        (SPX_STATE_CONFLICT: read and retry)
 *   spx_state_close(st);
 *
 * Return values. Every operation returns 0 (SPX_STATE_OK) or one of the
 * negative codes of enum spx_state_rc below, and on every failure it also
 * records a message and an exit status with spx_error(), so a caller that
 * does not care which failure it was can write `if (rc < 0)
 * spx_die_last();` and a caller that cares switches on the code. Because
 * SPX_STATE_FAIL is -1, `return spx_error(SPX_FAIL, ...)` is a valid
 * return of every function here.
 *
 * Keys. 1..SPX_STATE_KEY_MAX bytes of components separated by '/'. A
 * component is 1..SPX_STATE_COMPONENT_MAX bytes of [A-Za-z0-9._-] and does
 * not start with '.' (so no "." or ".." either; names with a leading dot
 * are the backends' own: temp and lock files). No leading, trailing or
 * doubled '/'. A NATS backend can map keys to subjects one-to-one by
 * turning '/' into '.' and '.' into '=' ('=' is not in the key alphabet).
 * A key names a leaf: the dir backend stores "a/b" as the file DIR/a/b, so
 * "a" and "a/b" cannot both be records there (the second one fails with
 * SPX_STATE_INVALID). Keep key layouts leaf-only and they work everywhere.
 *
 * Concurrency. Any number of processes and threads may use one store at
 * once, and one handle may be shared by threads and inherited across
 * fork(). Writes of one key are serialised; reads never see a partial
 * record. A write that returned success survives kill -9 of any process and
 * power loss (the dir backend fsyncs the file and its directory). Writers
 * wait for each other without a timeout, and a child forked while another
 * thread is in the middle of a write holds that key's lock (the dir
 * backend's OFD lock is shared with the child) until it execs or exits, so
 * a multi-threaded process should start programs by posix_spawn/exec, as
 * spx does anyway.
 */
#ifndef SPX_STATE_H
#define SPX_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum spx_state_rc {
	SPX_STATE_OK = 0,
	/* System failure: I/O error, corrupt record, store unreachable.
	 * Status SPX_FAIL. */
	SPX_STATE_FAIL = -1,
	/* get, put with a revision, delete: no such record. Status SPX_NO. */
	SPX_STATE_NOTFOUND = -2,
	/* create: the key already holds a record. Status SPX_NO. */
	SPX_STATE_EXISTS = -3,
	/* put or delete with an expected revision that is not the current
	 * one: someone else wrote first. Read again and retry. Status
	 * SPX_NO. */
	SPX_STATE_CONFLICT = -4,
	/* A bad key, prefix, URL or flag, a value larger than
	 * SPX_STATE_VALUE_MAX, or a key that collides with the key tree
	 * (see "Keys" above). Status SPX_USAGE. */
	SPX_STATE_INVALID = -5,
};

#define SPX_STATE_KEY_MAX 256
/* So that the dir backend's temp name ".tmp.<component>" fits NAME_MAX. */
#define SPX_STATE_COMPONENT_MAX 250
#define SPX_STATE_VALUE_MAX (1024 * 1024)

struct spx_state;

/* spx_state_open flags. */
enum {
	/* Create the store (for dir: the directory, mode 0700) if absent. */
	SPX_STATE_CREATE = 1 << 0,
	/* Skip fsync: writes stay atomic and survive kill -9, but not power
	 * loss. For tests and scratch stores only, never for a node's state. */
	SPX_STATE_UNSAFE_NOSYNC = 1 << 1,
};

/* Open a store. url is "dir:PATH" or a plain PATH (which must not contain
 * a ':' before its first '/'; write "dir:PATH" then). On success *out is a
 * handle the caller releases with spx_state_close(). */
int spx_state_open(const char *url, unsigned flags, struct spx_state **out);
/* Close a handle; NULL is a no-op. */
void spx_state_close(struct spx_state *st);

/* 1 if key is a valid key, else 0. No error is recorded. */
int spx_state_key_valid(const char *key);
/* The exit status (SPX_OK, SPX_NO, SPX_USAGE, SPX_FAIL) of a code. */
int spx_state_status(int rc);
/* "ok", "not found", "exists", "conflict", "invalid", "failure". */
const char *spx_state_strrc(int rc);

/* Read a record. value (may be NULL) is reset and receives the value;
 * *rev (may be NULL) its revision. SPX_STATE_NOTFOUND if absent. A torn or
 * corrupt record is SPX_STATE_FAIL, never data. */
int spx_state_get(struct spx_state *st, const char *key,
		  struct spx_buf *value, uint64_t *rev);

/* Create a record if the key is free: SPX_STATE_EXISTS if not. *rev (may
 * be NULL) receives its revision. */
int spx_state_create(struct spx_state *st, const char *key, const void *val,
		     size_t len, uint64_t *rev);

/* Compare-and-swap: replace the record if its revision is expect
 * (SPX_STATE_CONFLICT if it is another, SPX_STATE_NOTFOUND if there is no
 * record). expect 0 writes unconditionally, creating the record if absent.
 * *rev (may be NULL) receives the new revision. */
int spx_state_put(struct spx_state *st, const char *key, const void *val,
		  size_t len, uint64_t expect, uint64_t *rev);

/* Delete a record if its revision is expect, or whatever it is if expect
 * is 0. SPX_STATE_NOTFOUND if absent, SPX_STATE_CONFLICT on a mismatch.
 * With expect 0 a corrupt record can be deleted. */
int spx_state_delete(struct spx_state *st, const char *key, uint64_t expect);

/* Read-modify-write with retries. fn sees the current value (NULL if the
 * record is absent) and its revision (0 if absent) and either fills out
 * and returns 0 to write it (created if absent, compare-and-swap if not),
 * returns 1 to leave the record as it is (SPX_STATE_NOTFOUND if there is
 * none), or returns a negative code after
 * recording an error (spx_error) to abort. fn may run several times (once
 * per attempt), so it must not have other side effects; out is empty on
 * every call. spx_state_update returns 0 with *rev (may be NULL) the
 * revision written or left, fn's own negative value, another failure, or
 * SPX_STATE_CONFLICT when SPX_STATE_UPDATE_TRIES attempts all lost a race.
 * Contended attempts back off for a random, growing time (at most 20 ms). */
typedef int spx_state_update_fn(void *ctx, const struct spx_buf *old,
				uint64_t rev, struct spx_buf *out);
#define SPX_STATE_UPDATE_TRIES 200
int spx_state_update(struct spx_state *st, const char *key,
		     spx_state_update_fn *fn, void *ctx, uint64_t *rev);

/* A list of keys, sorted bytewise (strcmp). rev[i] is the revision of
 * key[i] when listed with SPX_STATE_LIST_REVS, else rev is NULL. The list
 * owns its strings; release it with spx_state_list_release(). */
struct spx_state_list {
	char **key;
	uint64_t *rev;
	size_t n;
	size_t cap;
};
#define SPX_STATE_LIST_INIT { NULL, NULL, 0, 0 }

enum {
	/* Also read each record's revision (costs a read per record). */
	SPX_STATE_LIST_REVS = 1 << 0,
};

/* Add every key that begins with prefix to out (which must be empty).
 * prefix is "" (every key), a key prefix ending in '/', or one that ends
 * inside a component: "instances/i-0a" lists "instances/i-0a1" and
 * "instances/i-0a/x" but not "instances/i-0b". A record deleted while the
 * list is made may or may not appear. */
int spx_state_list(struct spx_state *st, const char *prefix, unsigned flags,
		   struct spx_state_list *out);
void spx_state_list_release(struct spx_state_list *l);

/* Dir backend maintenance: remove the temp files that writers killed
 * before their rename left behind (each under its key's lock, so a live
 * writer is never disturbed). They are harmless, invisible to get and
 * list, and also replaced by the next write or delete of their key; call
 * this from time to time, e.g. when a node starts. *removed (may be NULL)
 * receives how many were removed. A no-op for backends without temp files.
 */
int spx_state_sweep(struct spx_state *st, size_t *removed);

/*
 * For backends. spx_state_open() picks ops by the URL's scheme and the
 * dispatch functions above validate keys, prefixes, values and flags before
 * they call a backend, which may rely on that. Each op returns 0 or a
 * negative spx_state_rc with spx_error() recorded, as above; *rev is never
 * NULL when an op gets it.
 */
struct spx_state_ops {
	const char *scheme;
	int (*open)(const char *arg, unsigned flags, void **be);
	void (*close)(void *be);
	int (*get)(void *be, const char *key, struct spx_buf *value,
		   uint64_t *rev);
	int (*create)(void *be, const char *key, const void *val, size_t len,
		      uint64_t *rev);
	int (*put)(void *be, const char *key, const void *val, size_t len,
		   uint64_t expect, uint64_t *rev);
	int (*del)(void *be, const char *key, uint64_t expect);
	/* Appends keys beginning with prefix (and revisions if asked) in any
	 * order; the dispatcher sorts. */
	int (*list)(void *be, const char *prefix, unsigned flags,
		    struct spx_state_list *out);
	/* May be NULL. */
	int (*sweep)(void *be, size_t *removed);
};

extern const struct spx_state_ops spx_state_dir_ops;

/* Record a failure of class rc (SPX_STATE_*) and return rc. */
int spx_state_error(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Append key (copied) and rev to l. */
void spx_state_list_add(struct spx_state_list *l, const char *key,
			uint64_t rev, int with_rev);

/* The dir backend's record file: the header line
 *   "spx-state 1 rev=<decimal> len=<decimal> crc32c=<8 lowercase hex>\n"
 * followed by exactly len bytes of value whose CRC-32C is the crc.
 * decode checks all of it and returns 0 with the value at p + *off, or -1
 * (SPX_STATE_FAIL) with an error naming what is wrong. */
#define SPX_STATE_HEADER_MAX 96
void spx_state_record_encode(struct spx_buf *out, uint64_t rev,
			     const void *val, size_t len);
int spx_state_record_decode(const char *p, size_t n, uint64_t *rev,
			    size_t *off, size_t *len);

#endif
