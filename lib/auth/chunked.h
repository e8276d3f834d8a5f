/* chunked.h: an incremental decoder of S3's aws-chunked body encoding
 * (Content-Encoding: aws-chunked), for requests whose x-amz-content-sha256
 * is one of the STREAMING-* values:
 *
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD
 *       hex-size ";chunk-signature=" sig CRLF data CRLF ...
 *       "0;chunk-signature=" sig CRLF CRLF
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
 *       the same chunks, then after the final chunk trailer lines
 *       "name:value" CRLF ... "x-amz-trailer-signature:" sig CRLF CRLF
 *   STREAMING-UNSIGNED-PAYLOAD-TRAILER
 *       hex-size CRLF data CRLF ... "0" CRLF, trailer lines, CRLF
 *
 * Each chunk signature is HMAC(signing key, "AWS4-HMAC-SHA256-PAYLOAD\n"
 * date "\n" scope "\n" previous signature "\n" sha256("") "\n"
 * sha256(data)), chained from the request's seed signature; the trailer
 * signature is HMAC(key, "AWS4-HMAC-SHA256-TRAILER\n" date "\n" scope "\n"
 * final chunk's signature "\n" sha256(the trailers as "name:value\n",
 * sorted by name)).
 *
 *   struct spx_chunked d;
 *   if (spx_chunked_init(&d, &auth, decoded_length, write_fn, file) < 0)
 *           ... (auth is not a verified STREAMING-* request) ...
 *   for each piece of the body:
 *           if ((e = spx_chunked_feed(&d, p, n))) ... reply error ...
 *   e = spx_chunked_finish(&d);        truncation, length, last signature
 *   ... spx_chunked_trailers(&d) (x-amz-checksum-crc32, ...) ...
 *   spx_chunked_release(&d);
 *
 * Pieces may split the encoding at any byte. Data bytes pass straight to
 * the output callback while their SHA-256 is computed on the way, so the
 * decoder holds one header line (SPX_CHUNKED_LINE_MAX) and the trailers
 * (SPX_CHUNKED_TRAILER_MAX) at most, whatever the body's size. The price:
 * a chunk's bytes reach the callback before its signature (at the chunk's
 * end) is checked. Treat the output as provisional until spx_chunked_finish
 * returns SPX_CHUNKED_OK (write to a temporary file, commit at the end).
 *
 * After the first error every call returns that error. The decoder never
 * prints; detail says what was wrong, for logs.
 */
#ifndef SPX_CHUNKED_H
#define SPX_CHUNKED_H

#include "spx.h"

#include "auth/sigv4.h"

#define SPX_CHUNKED_LINE_MAX 256     /* a chunk header or trailer line */
#define SPX_CHUNKED_TRAILER_MAX 2048 /* all trailer lines together */
#define SPX_CHUNKED_TRAILERS_NMAX 16 /* trailer lines */

enum spx_chunked_err {
	SPX_CHUNKED_OK = 0,
	SPX_CHUNKED_EFORMAT,	/* not aws-chunked where a size or CRLF was due */
	SPX_CHUNKED_ELINE,	/* a header or trailer line over the limit */
	SPX_CHUNKED_ESIGNATURE, /* a chunk or trailer signature does not match */
	SPX_CHUNKED_ELENGTH,	/* decoded length is not the declared one */
	SPX_CHUNKED_ETRUNCATED, /* the body ended before its final chunk */
	SPX_CHUNKED_ETRAILER,	/* malformed, too many or unsigned trailers */
	SPX_CHUNKED_EOUTPUT,	/* the output callback returned -1 */
	SPX_CHUNKED_NERR
};

/* Receives decoded payload bytes; returns 0, or -1 to stop the decoder
 * (spx_chunked_feed then returns SPX_CHUNKED_EOUTPUT). */
typedef int (*spx_chunked_out_fn)(void *arg, const void *data, size_t len);

/* Private; allocate it anywhere (it is under 1 KiB) and use the calls. */
struct spx_chunked {
	int state;
	bool sign;	/* chunk signatures */
	bool trailer;	/* trailer lines after the final chunk */
	bool got_trailer_sig;
	enum spx_chunked_err err;
	spx_chunked_out_fn out;
	void *arg;
	void *md; /* EVP_MD_CTX *, for the current chunk's SHA-256 */
	unsigned char key[32];
	char amz_date[17];
	char scope[SPX_SIGV4_SCOPE_MAX + 1];
	char prev[65];	     /* previous signature in the chain */
	char chunk_sig[65];  /* the current chunk's claimed signature */
	int64_t expect;	     /* x-amz-decoded-content-length, -1 if unknown */
	uint64_t decoded;    /* payload bytes announced by chunk headers */
	uint64_t remaining;  /* payload bytes left in the current chunk */
	size_t trailer_bytes;
	struct spx_kvlist trailers;
	size_t linelen;
	char line[SPX_CHUNKED_LINE_MAX];
	char detail[128];
};

/* Start decoding the body of a request auth describes: auth must have
 * passed spx_sigv4_verify and its payload must be one of the STREAMING-*
 * kinds (else -1, SPX_USAGE). decoded_length is x-amz-decoded-content-length
 * (checked as chunks arrive and at the end), or -1 when absent. out may be
 * NULL to discard the payload. spx_chunked_release is safe after a failed
 * init. Returns 0 or -1. */
int spx_chunked_init(struct spx_chunked *c, const struct spx_sigv4_auth *auth,
		     int64_t decoded_length, spx_chunked_out_fn out, void *arg);
/* Decode the next len bytes of the body. */
enum spx_chunked_err spx_chunked_feed(struct spx_chunked *c, const void *data,
				      size_t len);
/* The body has ended: SPX_CHUNKED_OK only if it ended exactly after the
 * final chunk (and trailers), with the declared decoded length. */
enum spx_chunked_err spx_chunked_finish(struct spx_chunked *c);
/* The trailers received ("x-amz-checksum-crc32" -> "AAAAAA=="), names in
 * lowercase, without x-amz-trailer-signature. Valid until release. */
const struct spx_kvlist *spx_chunked_trailers(const struct spx_chunked *c);
/* Payload bytes announced so far. */
uint64_t spx_chunked_decoded(const struct spx_chunked *c);
void spx_chunked_release(struct spx_chunked *c);

const char *spx_chunked_strerror(enum spx_chunked_err err);
/* The S3 error for err (SignatureDoesNotMatch, IncompleteBody, ...). */
struct spx_apierr spx_chunked_code(enum spx_chunked_err err);

#endif
