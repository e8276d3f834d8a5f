/* sigv4.h: AWS Signature Version 4 (AWS4-HMAC-SHA256): verifying a request
 * signed in the Authorization header or in the query string (a presigned
 * URL), and signing requests for node-to-node calls.
 *
 * The gateway authenticates a request in three steps:
 *
 *   struct spx_sigv4_req r = {
 *           .method = req->method, .path = req->path, .query = req->query,
 *           .headers = &req->headers, .region = "us-east-1",
 *   };
 *   struct spx_sigv4_auth a;
 *   enum spx_sigv4_err e = spx_sigv4_parse(&r, &a);     (1) syntax
 *   if (e == SPX_SIGV4_ENOAUTH) ... anonymous request ...
 *   else if (e) ... reply spx_sigv4_code(e, api, &a) ...
 *   look up a.access_key                                 (2) the caller's
 *     unknown: reply spx_sigv4_code(SPX_SIGV4_EUNKNOWNKEY, api, &a)
 *   if (a.payload == SPX_SIGV4_PAYLOAD_BODY) r.payload_hash = hex of body;
 *   e = spx_sigv4_verify(&r, &a, secret, time(NULL));    (3) clock, HMAC
 *
 * spx_sigv4_parse needs no secret and no body; it reads the Authorization
 * header or the X-Amz-* query parameters (exactly one of the two), checks
 * every field with bounded parsers, and fills *auth, which holds no
 * pointers and needs no release. spx_sigv4_verify checks the clock, then
 * builds the canonical request and compares signatures in constant time.
 * Neither prints nor sets spx_error: each returns one value of
 * enum spx_sigv4_err, and auth->detail says what exactly was wrong (a
 * lowercase phrase for logs, never containing a secret).
 *
 * A successful verify leaves the signing key, the seed signature, the
 * request time and the scope in *auth: spx_chunked_init (chunked.h) takes
 * them from there to check an aws-chunked body's chunk signatures.
 *
 * Rules implemented, as AWS does them:
 * - Canonical URI: for service "s3" each path segment is decoded and
 *   encoded once, never normalized ("a//b/../c" stays). For every other
 *   service "." and ".." segments and repeated slashes are removed and the
 *   raw (already encoded) path is encoded again ("%20" becomes "%2520").
 * - Canonical query: every parameter decoded ('+' is a literal plus) and
 *   re-encoded (RFC 3986 unreserved kept, %XX uppercase), sorted by name
 *   then value; a presigned request leaves out X-Amz-Signature.
 * - Canonical headers: the headers named in SignedHeaders, matched without
 *   regard to case; repeated headers are joined with ',' in arrival order;
 *   each value is trimmed and inner runs of white space become one space.
 * - SignedHeaders must be lowercase, strictly sorted, and include host, and
 *   (header auth) x-amz-date, or date when x-amz-date is absent. For s3,
 *   every x-amz-* header present must be signed (S3's "There were headers
 *   present in the request which were not signed"). A header named in
 *   SignedHeaders must be present.
 * - The credential scope date must be the date of the request time.
 * - Clock: a header-signed request must be within SPX_SIGV4_MAX_SKEW of
 *   now in either direction. A presigned one is valid from X-Amz-Date -
 *   SPX_SIGV4_MAX_SKEW to X-Amz-Date + X-Amz-Expires inclusive; without
 *   X-Amz-Expires (allowed for services other than s3) it is held to the
 *   header rule.
 */
#ifndef SPX_SIGV4_H
#define SPX_SIGV4_H

#include "spx.h"

#define SPX_SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SPX_SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define SPX_SIGV4_STREAMING_PAYLOAD "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define SPX_SIGV4_STREAMING_PAYLOAD_TRAILER \
	"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
#define SPX_SIGV4_STREAMING_UNSIGNED_TRAILER \
	"STREAMING-UNSIGNED-PAYLOAD-TRAILER"
/* SHA-256 of the empty string, the payload hash of a request without body. */
#define SPX_SIGV4_EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

#define SPX_SIGV4_MAX_SKEW 900		 /* seconds, either direction */
#define SPX_SIGV4_MAX_EXPIRES 604800	 /* seconds: 7 days */
#define SPX_SIGV4_KEY_MAX 128		 /* access key id length */
#define SPX_SIGV4_REGION_MAX 32
#define SPX_SIGV4_SERVICE_MAX 32
#define SPX_SIGV4_SIGNED_HEADERS_MAX 4096 /* "host;range;x-amz-date" */
#define SPX_SIGV4_SIGNED_HEADERS_NMAX 256 /* names (x-amz-meta-* adds up) */
#define SPX_SIGV4_TOKEN_MAX 4096	 /* X-Amz-Security-Token */
#define SPX_SIGV4_AUTH_HEADER_MAX 8192	 /* Authorization header */
#define SPX_SIGV4_QUERY_PARAMS_MAX 1000
#define SPX_SIGV4_SECRET_MAX 256
/* "20130524/" region "/" service "/aws4_request" */
#define SPX_SIGV4_SCOPE_MAX \
	(8 + 1 + SPX_SIGV4_REGION_MAX + 1 + SPX_SIGV4_SERVICE_MAX + 13)

/* A request as the gateway received it. The strings are borrowed. */
struct spx_sigv4_req {
	const char *method;  /* "GET", as on the request line */
	const char *path;    /* raw, still percent-encoded: "/bkt/a%20b" */
	const char *query;   /* raw, without '?'; "" or NULL if none */
	const struct spx_kvlist *headers; /* names in any case, repeats kept */
	/* The lowercase hex SHA-256 of the body. Read only by verify, and
	 * only when parse set auth.payload to SPX_SIGV4_PAYLOAD_BODY (there is
	 * no x-amz-content-sha256 header: EC2/STS Query POSTs, curl
	 * --aws-sigv4); ignored otherwise, since the header's value is what
	 * the client signed. */
	const char *payload_hash;
	/* What this endpoint accepts in the credential scope; NULL accepts
	 * any. A mismatch is SPX_SIGV4_EREGION / SPX_SIGV4_ESERVICE. */
	const char *region;
	const char *service;
};

/* What the canonical request uses as the payload hash. */
enum spx_sigv4_payload {
	SPX_SIGV4_PAYLOAD_NONE = 0, /* not known yet (parse failed early) */
	/* x-amz-content-sha256 (or presigned X-Amz-Content-Sha256) holds a
	 * hash: payload_sha256 is it in binary. The caller must compare the
	 * body's SHA-256 with it (S3: XAmzContentSHA256Mismatch). */
	SPX_SIGV4_PAYLOAD_SHA256,
	SPX_SIGV4_PAYLOAD_UNSIGNED, /* UNSIGNED-PAYLOAD (also presigned s3) */
	/* No header: the signature covers the body's hash, which the caller
	 * computes and passes in req.payload_hash to verify. */
	SPX_SIGV4_PAYLOAD_BODY,
	/* aws-chunked bodies: decode them with spx_chunked (chunked.h). */
	SPX_SIGV4_PAYLOAD_STREAMING,		      /* chunk signatures */
	SPX_SIGV4_PAYLOAD_STREAMING_TRAILER,	      /* ... and a signed trailer */
	SPX_SIGV4_PAYLOAD_STREAMING_UNSIGNED_TRAILER, /* no signatures */
};

/* What parse found and verify proved. Plain data: copy it, no release. */
struct spx_sigv4_auth {
	bool presigned; /* query-string auth rather than Authorization */
	bool v2;	/* Signature Version 2 (spx_sigv2_parse filled it) */
	char access_key[SPX_SIGV4_KEY_MAX + 1];
	char date[9];	/* credential scope date, YYYYMMDD */
	char region[SPX_SIGV4_REGION_MAX + 1];
	char service[SPX_SIGV4_SERVICE_MAX + 1];
	char scope[SPX_SIGV4_SCOPE_MAX + 1]; /* date/region/service/aws4_request */
	char amz_date[17]; /* request time, YYYYMMDDTHHMMSSZ (also from Date:) */
	time_t time;	   /* the same as seconds since the epoch */
	long expires;	   /* presigned X-Amz-Expires; 0 if none (SigV2: the
			    * Expires instant, seconds since the epoch) */
	char signed_headers[SPX_SIGV4_SIGNED_HEADERS_MAX + 1];
	char signature[65]; /* as the client sent it: the seed signature
			     * (SigV2: base64 of the HMAC-SHA1) */
	char security_token[SPX_SIGV4_TOKEN_MAX + 1]; /* "" if none */
	enum spx_sigv4_payload payload;
	char payload_hash[65]; /* the string in the canonical request */
	unsigned char payload_sha256[32]; /* for SPX_SIGV4_PAYLOAD_SHA256 */
	/* Set by a successful verify: */
	bool verified;
	unsigned char signing_key[32];
	/* On failure: the header at fault (EUNSIGNED, EMISSINGHEADER, for
	 * S3's HeadersNotSigned), and a lowercase explanation for logs. */
	char header[64];
	char detail[160];
};

/* One value per distinct failure. spx_sigv4_code maps each to an AWS
 * error of the API at hand. */
enum spx_sigv4_err {
	SPX_SIGV4_OK = 0,
	SPX_SIGV4_ENOAUTH,	 /* neither Authorization nor X-Amz-* params */
	SPX_SIGV4_EMULTIPLE,	 /* both Authorization and query auth */
	SPX_SIGV4_EALGORITHM,	 /* not AWS4-HMAC-SHA256 (SigV2, SigV4a, ...) */
	SPX_SIGV4_EHEADER,	 /* Authorization header malformed */
	SPX_SIGV4_EQUERY,	 /* presigned parameters missing or repeated */
	SPX_SIGV4_ECREDENTIAL,	 /* Credential not AK/date/region/svc/aws4_request */
	SPX_SIGV4_EREGION,	 /* scope region is not req.region */
	SPX_SIGV4_ESERVICE,	 /* scope service is not req.service */
	SPX_SIGV4_EDATE,	 /* no valid X-Amz-Date (or Date) */
	SPX_SIGV4_ESCOPEDATE,	 /* scope date is not the request's date */
	SPX_SIGV4_ESIGNEDHEADERS, /* unsorted, uppercase, no host, date unsigned */
	SPX_SIGV4_EMISSINGHEADER, /* a header named in SignedHeaders is absent */
	SPX_SIGV4_EUNSIGNED,	 /* s3: an x-amz-* header is not signed */
	SPX_SIGV4_ESIGNATURE_FORMAT, /* Signature not 64 lowercase hex digits */
	SPX_SIGV4_EEXPIRES,	 /* X-Amz-Expires not an integer in 1..604800 */
	SPX_SIGV4_ECONTENTSHA,	 /* x-amz-content-sha256 not a hash or known */
	SPX_SIGV4_ENOCONTENTSHA, /* PAYLOAD_BODY but req.payload_hash unusable */
	SPX_SIGV4_ETOOBIG,	 /* query or token beyond the bounds above */
	SPX_SIGV4_ESKEW,	 /* header auth: more than 15 minutes off */
	SPX_SIGV4_ENOTYET,	 /* presigned: X-Amz-Date more than 15 min ahead */
	SPX_SIGV4_EEXPIRED,	 /* presigned: past X-Amz-Date + X-Amz-Expires */
	SPX_SIGV4_ESIGNATURE,	 /* the signature does not match */
	SPX_SIGV4_EUNKNOWNKEY,	 /* for the caller: no such access key */
	SPX_SIGV4_NERR
};

/* The API family whose error vocabulary to use. */
enum spx_sigv4_api {
	SPX_SIGV4_API_S3,  /* REST XML <Error> */
	SPX_SIGV4_API_EC2, /* EC2 Query */
	SPX_SIGV4_API_STS, /* STS, IAM and other Query APIs */
};

/* Step 1. Fills *auth (always: zeroed first) from the Authorization header
 * or the presigned query parameters. SPX_SIGV4_ENOAUTH means the request
 * carries no SigV4 authentication at all (anonymous). */
enum spx_sigv4_err spx_sigv4_parse(const struct spx_sigv4_req *req,
				   struct spx_sigv4_auth *auth);

/* Step 3. auth must come from spx_sigv4_parse of the same req. Checks the
 * clock against now, then the signature with the key derived from secret
 * (at most SPX_SIGV4_SECRET_MAX bytes). On success sets auth->verified and
 * auth->signing_key; on failure clears them. */
enum spx_sigv4_err spx_sigv4_verify(const struct spx_sigv4_req *req,
				    struct spx_sigv4_auth *auth,
				    const char *secret, time_t now);
/* The same with a signing key the caller derived (and may cache: it
 * depends only on secret, auth->date, auth->region and auth->service). */
enum spx_sigv4_err spx_sigv4_verify_key(const struct spx_sigv4_req *req,
					struct spx_sigv4_auth *auth,
					const unsigned char key[32],
					time_t now);

/* The canonical request and the string to sign that verify compared,
 * replacing the contents of each buffer that is not NULL: S3 returns them
 * in a SignatureDoesNotMatch body (CanonicalRequest, StringToSign).
 * auth must come from a successful parse of req (the payload hash of a
 * PAYLOAD_BODY request is taken from req->payload_hash, "" if NULL). */
void spx_sigv4_canonical(const struct spx_sigv4_req *req,
			 const struct spx_sigv4_auth *auth,
			 struct spx_buf *canonical_request,
			 struct spx_buf *string_to_sign);

/* kSigning = HMAC chain over "AWS4" secret, date (YYYYMMDD), region,
 * service, "aws4_request". Returns -1 (SPX_USAGE) for a secret longer than
 * SPX_SIGV4_SECRET_MAX. */
int spx_sigv4_signing_key(const char *secret, const char *date,
			  const char *region, const char *service,
			  unsigned char key[32]);

/* The AWS error for err in the given API family. auth (may be NULL, read
 * as header auth) tells presigned from header auth, which S3 reports with
 * different codes. Never returns NULL strings. */
struct spx_apierr spx_sigv4_code(enum spx_sigv4_err err,
				       enum spx_sigv4_api api,
				       const struct spx_sigv4_auth *auth);
/* A short lowercase name for logs: "signature does not match". */
const char *spx_sigv4_strerror(enum spx_sigv4_err err);

/* Lowercase hex SHA-256 of data[0..len) into out (65 bytes with NUL). */
void spx_sigv4_sha256_hex(const void *data, size_t len, char out[65]);

/* The credentials a node signs its own calls with. */
struct spx_sigv4_cred {
	const char *access_key;
	const char *secret;
	const char *region;
	const char *service;
	const char *session_token; /* NULL if none */
};

/* Sign a request for libcurl. headers are the request's headers, all of
 * which are signed (leave out Host, User-Agent and Expect: curl manages
 * them); this adds X-Amz-Date, X-Amz-Content-Sha256 (payload_hash) and,
 * with a session token, X-Amz-Security-Token to it (replacing earlier
 * values, so the same list can be signed again on a retry). host is the
 * Host header curl will send ("node2:8443"); path and query are raw, as
 * they will be on the request line. payload_hash is the hex SHA-256 of the
 * body (SPX_SIGV4_EMPTY_SHA256 for none), SPX_SIGV4_UNSIGNED_PAYLOAD or
 * SPX_SIGV4_STREAMING_UNSIGNED_TRAILER (the caller then sends the body
 * aws-chunked, without chunk signatures).
 * Replaces *authorization with the Authorization header's value. Returns
 * 0, or -1 (SPX_USAGE) on an argument verify would reject. */
int spx_sigv4_sign(const struct spx_sigv4_cred *cred, const char *method,
		   const char *host, const char *path, const char *query,
		   struct spx_kvlist *headers, const char *payload_hash,
		   time_t now, struct spx_buf *authorization);

/* A presigned URL's query string: query (raw, may be "" or NULL) followed
 * by the X-Amz-* parameters, signing only host, valid for expires seconds
 * (1..SPX_SIGV4_MAX_EXPIRES). The payload is UNSIGNED-PAYLOAD for s3 and
 * the empty body's hash otherwise. Replaces *query_out. Returns 0, or -1
 * (SPX_USAGE) on a bad argument or a query that already holds X-Amz-*
 * authentication parameters. */
int spx_sigv4_presign(const struct spx_sigv4_cred *cred, const char *method,
		      const char *host, const char *path, const char *query,
		      time_t now, long expires, struct spx_buf *query_out);

/* ---- Signature Version 2 (S3 only) ---------------------------------
 *
 * The older S3 scheme, still sent by s3cmd's v2 mode, minio-go's V2
 * signer and boto3's default presigned URLs: "Authorization: AWS
 * AKID:SIG", or the query parameters AWSAccessKeyId, Signature and
 * Expires. SIG is base64 HMAC-SHA1, keyed with the secret, of
 *
 *   METHOD \n Content-MD5 \n Content-Type \n DATE \n
 *   x-amz-name:value \n ... RESOURCE
 *
 * DATE: the Date header, "" when x-amz-date is sent, the Expires value
 * for a presigned request. The x-amz-* headers: lowercase names, sorted,
 * values trimmed, repeats joined with ','. RESOURCE: "/" bucket for a
 * virtual-hosted request, then the path as sent ("/bucket" path-style
 * is "/bucket/", as for a virtual-hosted bucket), then "?" and the S3
 * subresources among the query parameters (acl, uploadId, versionId,
 * response-content-type ...), sorted, decoded, "name" alone when empty.
 * The body is not signed (Content-MD5 is, when sent): auth.payload is
 * SPX_SIGV4_PAYLOAD_UNSIGNED. The errors are spx_sigv4_err's;
 * spx_sigv4_code gives S3's SigV2 words when auth.v2 is set. */

/* Is req signed with SigV2 (an "AWS " Authorization header, or an
 * AWSAccessKeyId or Signature query parameter)? */
bool spx_sigv2_present(const struct spx_sigv4_req *req);
/* Step 1, as spx_sigv4_parse: fills *auth (zeroed first; v2 set). */
enum spx_sigv4_err spx_sigv2_parse(const struct spx_sigv4_req *req,
				   struct spx_sigv4_auth *auth);
/* Step 3: the clock (a header-signed request within SPX_SIGV4_MAX_SKEW
 * of now; a presigned one until its Expires), then the signature.
 * vhost_bucket: the bucket named by the Host header, NULL for a
 * path-style request. */
enum spx_sigv4_err spx_sigv2_verify(const struct spx_sigv4_req *req,
				    struct spx_sigv4_auth *auth,
				    const char *vhost_bucket,
				    const char *secret, time_t now);
/* Is the query parameter name (decoded) part of a SigV2 signature's
 * RESOURCE? A parameter outside it can be added to a signed or presigned
 * URL without breaking the signature, so a server that routes on such a
 * parameter must refuse it under SigV2 (clients, botocore's included,
 * do not sign the newer subresources either). */
bool spx_sigv2_signs_param(const char *name);
/* The string to sign of req, into out (replaced). */
void spx_sigv2_string_to_sign(const struct spx_sigv4_req *req,
			      const struct spx_sigv4_auth *auth,
			      const char *vhost_bucket, struct spx_buf *out);

#endif
