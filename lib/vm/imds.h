/* imds.h: the instance metadata service a guest reaches at
 * http://169.254.169.254, as EC2 answers it (IMDSv1 and IMDSv2).
 *
 * Who asks is never taken from the request: QEMU's user network runs one
 * `spx-vm imds NAME` per connection the guest opens to that address
 * (guestfwd), so the answering process is bound to its guest by how it
 * was started, and serves that guest's metadata.json only.
 *
 * metadata.json (written when the guest is started, checked here like
 * any input) is the tree the guest sees:
 *   { "meta-data": { "instance-id": "i-...", "placement":
 *                    { "availability-zone": "us-east-1a" }, ... },
 *     "public-keys": [ { "name": "k1", "openssh-key": "ssh-ed25519 ..." } ],
 *     "user-data": "<base64>",                      (optional)
 *     "http-tokens": "optional" | "required",        (optional)
 *     "http-put-response-hop-limit": 1..64,          (optional, 1)
 *     "http-endpoint": "enabled" | "disabled" }      (optional)
 * Objects are directories (a listing names them with a trailing '/'),
 * strings are leaves; a name is 1 to 64 of [A-Za-z0-9._:-] (a MAC
 * address names a directory), not "." or "..", at most SPX_IMDS_DEPTH
 * directories deep. public-keys appear under meta-data as EC2 lists
 * them ("0=k1", then 0/openssh-key).
 *
 * IMDSv2: PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds
 * (1..21600) gives a token, an expiry and an HMAC of it under the guest's
 * key (imds.key, made at start); GETs carrying a valid token in
 * X-aws-ec2-metadata-token are served, an invalid or expired one gets 401,
 * and with http-tokens "required" so does a GET without one. A token PUT
 * with X-Forwarded-For is refused, as EC2 refuses it.
 *
 * The hop limit is the IP TTL of the token's answer, as EC2 sends it: a
 * container or a host the guest routes for, one hop further, never gets
 * the token. It is set on the connection's socket (IP_TTL) before the
 * answer and kept for the rest of that connection, retransmissions
 * included. It can only work where the guest's packets reach a socket of
 * ours: on a tap (spx-vm imds-server); through QEMU's user network the
 * guest talks to QEMU's own TCP stack, which answers with its own TTL. */
#ifndef SPX_VM_IMDS_H
#define SPX_VM_IMDS_H

#include "spx.h"

#define SPX_IMDS_MD_MAX (64u << 10)   /* metadata.json */
#define SPX_IMDS_UD_MAX (16u << 10)   /* user data, decoded (EC2's limit) */
#define SPX_IMDS_REQ_MAX 8192	      /* a request's line and headers */
#define SPX_IMDS_KEY_LEN 32
#define SPX_IMDS_TTL_MAX 21600
#define SPX_IMDS_DEPTH 5
#define SPX_IMDS_HOPS_MAX 64
/* Connections of one guest answered at once (DIR/imds-slot-0.., locked
 * by each `spx-vm imds` while it runs). */
#define SPX_IMDS_SLOTS 8

struct spx_imds;

/* Parse and check metadata.json. */
int spx_imds_load(const char *text, size_t len, struct spx_imds **out);
void spx_imds_free(struct spx_imds *md);

/* One request, as far as the bytes in buf go. Returns the bytes it used
 * (> 0) with r filled, 0 when buf holds no whole request yet (and less
 * than SPX_IMDS_REQ_MAX), or -1 for a request to answer 400 and close
 * (malformed, too long, a body, Transfer-Encoding). r's strings point
 * into r->buf. */
struct spx_imds_req {
	char buf[SPX_IMDS_REQ_MAX + 1];
	const char *method, *path;
	const char *token, *ttl;    /* NULL when absent */
	bool forwarded;		    /* X-Forwarded-For present */
	bool close;		    /* Connection: close, or HTTP/1.0 */
	bool head;
};
int spx_imds_parse(const char *buf, size_t len, struct spx_imds_req *r);

/* The hop limit (1..SPX_IMDS_HOPS_MAX), and whether r asks for a token,
 * whose answer the hop limit is for. */
int spx_imds_hop_limit(const struct spx_imds *md);
bool spx_imds_token_put(const struct spx_imds_req *r);

/* Append the whole HTTP response to r to out. now: the time tokens are
 * checked against. */
void spx_imds_answer(const struct spx_imds *md, const struct spx_imds_req *r,
		     const unsigned char key[SPX_IMDS_KEY_LEN], time_t now,
		     struct spx_buf *out);

#endif
