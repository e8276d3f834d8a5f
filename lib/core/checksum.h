/* checksum.h: the integrity checksums of S3, computed as data streams by.
 *
 *   struct spx_cksum c;
 *   unsigned char d[SPX_CKSUM_MAX];
 *   size_t n;
 *
 *   if (spx_cksum_init(&c, SPX_CKSUM_CRC64NVME) < 0)
 *           return -1;
 *   while (more)
 *           spx_cksum_update(&c, p, len);
 *   rc = spx_cksum_final(&c, d, &n);
 *   spx_cksum_release(&c);
 *
 * The digest is raw bytes, exactly what S3 base64-encodes into its headers
 * (x-amz-checksum-crc32: "y/Q5Jg==" for "123456789"): the CRCs big-endian
 * (4, 4 and 8 bytes), the hashes as their standard output (20, 32, 16).
 *
 *   CRC32      IEEE 802.3 / zlib (reflected 0xedb88320), by ISA-L
 *   CRC32C     Castagnoli (iSCSI), by ISA-L
 *   CRC64NVME  CRC-64/NVME (poly 0xad93d23594c93659, reflected, init and
 *              xorout all ones), here: PCLMULQDQ folding where the CPU has
 *              it, slicing-by-8 otherwise
 *   SHA1, SHA256, MD5 by OpenSSL's EVP (MD5: Content-MD5 and ETags)
 *
 * The CRCs need no heap; the hashes hold an EVP context, so every
 * successful spx_cksum_init must be paired with spx_cksum_release (which is
 * also safe on a zeroed or already released context).
 *
 * Multipart uploads carry two kinds of whole-object checksum:
 *   COMPOSITE    the checksum of the concatenated raw part digests, shown
 *                as "<base64>-<nparts>": spx_cksum_composite;
 *   FULL_OBJECT  the CRC of the whole object, derived from the part CRCs
 *                and lengths without rereading the data: spx_cksum_combine
 *                (CRCs only; S3 allows only FULL_OBJECT for CRC64NVME,
 *                which the caller enforces).
 * The multipart ETag is the MD5 of the concatenated binary part MD5s in
 * hex with "-<nparts>": spx_etag_multipart. */
#ifndef SPX_CHECKSUM_H
#define SPX_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spx_buf;

enum spx_cksum_algo {
	SPX_CKSUM_CRC32,
	SPX_CKSUM_CRC32C,
	SPX_CKSUM_CRC64NVME,
	SPX_CKSUM_SHA1,
	SPX_CKSUM_SHA256,
	SPX_CKSUM_MD5,
};
#define SPX_CKSUM_NALGO 6

/* The largest raw digest (SHA256), and its base64 with a NUL. */
#define SPX_CKSUM_MAX 32
#define SPX_BASE64_LEN(n) (((n) + 2) / 3 * 4)
#define SPX_CKSUM_B64_MAX (SPX_BASE64_LEN(SPX_CKSUM_MAX) + 1)

/* Opaque: use the functions. */
struct spx_cksum {
	enum spx_cksum_algo algo;
	/* live, failed (an EVP update failed: final reports it), or done
	 * (finished, released or never started: final fails) */
	unsigned char state;
	union {
		uint32_t crc32;
		uint64_t crc64;
		void *md; /* EVP_MD_CTX * */
	} u;
};

/* The digest length in bytes (4, 4, 8, 20, 32, 16), 0 for an invalid algo. */
size_t spx_cksum_size(enum spx_cksum_algo algo);
/* "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256", "MD5"; NULL if invalid. */
const char *spx_cksum_name(enum spx_cksum_algo algo);
/* CRC-32C (Castagnoli, as iSCSI and S3's CRC32C) of p[0..n), with ISA-L:
 * the one CRC-32C of spx (shard blocks, state records, metadata). */
uint32_t spx_crc32c(const void *p, size_t n);

/* The OpenSSL digest of SHA1, SHA256 and MD5 (NULL for the others),
 * fetched once per process: use it rather than EVP_sha256() and friends,
 * which OpenSSL 3 looks up again at every use. */
struct evp_md_st;
const struct evp_md_st *spx_md(enum spx_cksum_algo algo);
/* HMAC-SHA-256 of msg under key into out, on a context each thread keeps
 * (no lookup per call). false if OpenSSL fails. */
bool spx_hmac_sha256(const void *key, size_t klen, const void *msg,
		     size_t mlen, unsigned char out[32]);

/* The header carrying the value: "x-amz-checksum-crc32", ...,
 * "x-amz-checksum-sha256", and "content-md5" for MD5; NULL if invalid.
 * The part after "x-amz-checksum-" is the lowercase name. */
const char *spx_cksum_header(enum spx_cksum_algo algo);
/* Parse an S3 checksum algorithm name, ASCII case-insensitive
 * (x-amz-sdk-checksum-algorithm, x-amz-checksum-algorithm, the suffix of
 * an x-amz-checksum-<name> header). Only the five S3 checksum algorithms
 * are accepted: "MD5" is not one and fails like any unknown name.
 * Returns 0, or -1 (SPX_USAGE). */
int spx_cksum_from_name(const char *name, enum spx_cksum_algo *algo);

/* Start a checksum. Returns 0, or -1 (SPX_USAGE for an invalid algo,
 * SPX_FAIL if OpenSSL fails); after -1 there is nothing to release. */
int spx_cksum_init(struct spx_cksum *c, enum spx_cksum_algo algo);
/* Add len bytes (any split of the input gives the same digest). */
void spx_cksum_update(struct spx_cksum *c, const void *data, size_t len);
/* Write the digest (spx_cksum_size(algo) bytes, at most SPX_CKSUM_MAX)
 * into out and its length into *len (may be NULL). Call once; then only
 * spx_cksum_release is allowed. Returns 0, or -1 (SPX_FAIL). */
int spx_cksum_final(struct spx_cksum *c, unsigned char out[SPX_CKSUM_MAX],
		    size_t *len);
void spx_cksum_release(struct spx_cksum *c);
/* One call: init, update, final, release. */
int spx_cksum_digest(enum spx_cksum_algo algo, const void *data, size_t len,
		     unsigned char out[SPX_CKSUM_MAX], size_t *outlen);

/* Standard base64 (RFC 4648 section 4, with padding), appended to out. */
void spx_base64_encode(const void *data, size_t len, struct spx_buf *out);
/* Strict decoding of s[0..len): the standard alphabet, a length that is a
 * multiple of 4, "=" only as the last one or two characters, unused bits
 * zero (so the encoding of the result is s again); no whitespace, no NUL.
 * Writes at most outsz bytes. Returns 0 and *outlen, or -1 (SPX_USAGE:
 * malformed, or decodes to more than outsz bytes). */
int spx_base64_decode(const char *s, size_t len, void *out, size_t outsz,
		      size_t *outlen);

/* Why spx_cksum_verify_b64 failed: the gateway answers InvalidDigest for a
 * malformed value and BadDigest for a mismatch. */
enum spx_cksum_verdict {
	SPX_CKSUM_OK,
	SPX_CKSUM_MALFORMED, /* not base64 of exactly the digest length */
	SPX_CKSUM_MISMATCH,  /* well formed, but another digest */
};

/* Check a client's base64 value (an x-amz-checksum-* header or trailer, or
 * Content-MD5; NUL-terminated) against the digest computed from the data
 * (spx_cksum_size(algo) bytes). Returns 0, or -1 (SPX_USAGE, the message
 * says "malformed" or "mismatch"); *why (may be NULL) says which. */
int spx_cksum_verify_b64(enum spx_cksum_algo algo, const char *b64,
			 const unsigned char *computed,
			 enum spx_cksum_verdict *why);

/* COMPOSITE: digests holds nparts raw part digests of algo back to back
 * (nparts * spx_cksum_size(algo) bytes, in part order). Appends
 * "<base64>-<nparts>" to out. Returns 0, or -1 (SPX_USAGE: MD5, which
 * S3's ETag covers, or nparts 0; SPX_FAIL). */
int spx_cksum_composite(enum spx_cksum_algo algo, const unsigned char *digests,
			size_t nparts, struct spx_buf *out);

/* FULL_OBJECT: turn acc, the raw CRC of some data A, into the CRC of A
 * followed by B, given B's raw CRC (part) and length. Start acc as the
 * digest of no data (all zero bytes for the three CRCs) and fold in the
 * parts in order. Returns 0, or -1 (SPX_USAGE: not a CRC algo). */
int spx_cksum_combine(enum spx_cksum_algo algo, unsigned char *acc,
		      const unsigned char *part, uint64_t part_len);

/* The multipart ETag, without quotes: 32 lowercase hex digits of the MD5
 * of the n binary part MD5s, "-", n in decimal. Returns 0, or -1
 * (SPX_USAGE for n 0, SPX_FAIL). */
#define SPX_ETAG_MAX (32 + 1 + 20 + 1)
int spx_etag_multipart(const unsigned char (*md5s)[16], size_t n,
		       char out[SPX_ETAG_MAX]);

#endif
