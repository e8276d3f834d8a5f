/* cred.h: the access keys the gateway accepts.
 *
 * The keys live in one JSON file (mode 0600, written crash-safely):
 *   {"keys": [{"AccessKeyId": "AKIA...", "SecretAccessKey": "...",
 *              "AccountId": "123456789012", "UserName": "admin",
 *              "Arn": "arn:aws:iam::123456789012:root",
 *              "Status": "Active"}]}
 * spx_cred_open reads it; lookups re-read it when it changed (its inode,
 * size or mtime), so a key added by `spx admin` is seen without a
 * restart. A lookup that finds its key looks at the file at most once a
 * second (SPX_CRED_RECHECK_MS): a key removed or made Inactive is refused
 * within a second; one that is not found always looks, so a new key
 * works at once. Safe to share between threads. */
#ifndef SPX_CRED_H
#define SPX_CRED_H

#include "spx.h"

struct spx_cred {
	char access_key[32];
	char secret[64];
	char account[16];
	char user[64];
	char arn[160];
};

struct spx_creds;

#define SPX_CRED_RECHECK_MS 1000

int spx_cred_open(const char *path, struct spx_creds **out);
void spx_cred_close(struct spx_creds *c);
/* 0 and *out filled; -1 with SPX_NO if the key is unknown or inactive. */
int spx_cred_lookup(struct spx_creds *c, const char *access_key,
		    struct spx_cred *out);
/* The first active key whose UserName is user; SPX_NO if none. */
int spx_cred_find_user(struct spx_creds *c, const char *user,
		       struct spx_cred *out);
/* The first key in the file: the admin key spx admin init wrote. */
int spx_cred_first(struct spx_creds *c, struct spx_cred *out);
/* Append a key to the file at path (created if absent). */
int spx_cred_add(const char *path, const struct spx_cred *k);
/* The keys' JSON as written to disk, for tests and `spx admin`. */
char *spx_cred_render(const struct spx_cred *keys, size_t n);

#endif
