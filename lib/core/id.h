/* id.h: identifiers and secrets drawn from the kernel's CSPRNG.
 *
 * Every function writes a NUL-terminated string into out (outsz bytes, at
 * least the SPX_*_SIZE given) and returns 0, or -1 with spx_error():
 * SPX_USAGE for a buffer too small or a bad prefix, SPX_FAIL when
 * getrandom(2) fails. Every character is uniformly distributed: the
 * alphabets are powers of two except for the account id's digits, which
 * use rejection sampling.
 *
 *   spx_id_new           "vol-" + 17 lowercase hex   vol-0f3c5e8a1b2d4c6e7
 *   spx_request_id       UUID v4, lowercase 8-4-4-4-12 (EC2 requestId)
 *   spx_s3_request_id    16 uppercase hex (S3 x-amz-request-id)
 *   spx_s3_host_id       64 base64 characters (S3 x-amz-id-2)
 *   spx_s3_version_id    32 of [A-Za-z0-9._] (S3 x-amz-version-id: URL-
 *                        and file-name-safe, never "null")
 *   spx_access_key_new   "AKIA" ("ASIA" temporary) + 16 of [A-Z2-7]
 *   spx_secret_key_new   40 of [A-Za-z0-9+/]
 *   spx_account_id_new   12 decimal digits (may begin with 0)
 *
 * A resource prefix is lowercase letters and digits, starting with a
 * letter, in '-'-separated words ("i", "eipalloc", "tgw-attach"), at most
 * SPX_ID_PREFIXMAX bytes.
 */
#ifndef SPX_ID_H
#define SPX_ID_H

#include <stdbool.h>
#include <stddef.h>

#define SPX_ID_PREFIXMAX 32
#define SPX_ID_HEX 17	   /* hex digits of a new id */
#define SPX_ID_HEX_LEGACY 8 /* still accepted by spx_id_valid */
#define SPX_ID_SIZE (SPX_ID_PREFIXMAX + 1 + SPX_ID_HEX + 1)
#define SPX_UUID_SIZE 37
#define SPX_S3_REQID_SIZE 17
#define SPX_S3_HOSTID_SIZE 65
#define SPX_S3_VERSION_ID_SIZE 33
#define SPX_ACCESS_KEY_SIZE 21
#define SPX_SECRET_KEY_SIZE 41
#define SPX_ACCOUNT_ID_SIZE 13

/* Fill buf with n random bytes from getrandom(2). */
int spx_random(void *buf, size_t n);

int spx_id_new(char *out, size_t outsz, const char *prefix);
/* Whether id is prefix + '-' + 17 or 8 lowercase hex digits. A NULL
 * prefix accepts any well-formed prefix. */
bool spx_id_valid(const char *id, const char *prefix);
/* Whether prefix is a well-formed resource prefix. */
bool spx_id_prefix_valid(const char *prefix);

/* The three request ids draw on a per-thread pool of getrandom(2)'s
 * bytes (refilled 4 KiB at a time, emptied in a forked child); the other
 * ids and secrets call getrandom(2) each time. */
int spx_request_id(char *out, size_t outsz);
int spx_s3_request_id(char *out, size_t outsz);
int spx_s3_host_id(char *out, size_t outsz);
int spx_s3_version_id(char *out, size_t outsz);
/* 32 of [A-Za-z0-9._]: the shape spx_s3_version_id makes. */
bool spx_s3_version_id_valid(const char *s);

int spx_access_key_new(char *out, size_t outsz, bool temporary);
int spx_secret_key_new(char *out, size_t outsz);
int spx_account_id_new(char *out, size_t outsz);
/* "AKIA" or "ASIA" + 16 of [A-Z2-7]. */
bool spx_access_key_valid(const char *s);
/* 12 decimal digits. */
bool spx_account_id_valid(const char *s);

#endif
