/* idem.h: ClientToken idempotency.
 *
 * An action with a ClientToken remembers, per account in lib/state, the
 * token, the action and a hash of its parameters together with its first
 * answer. The same token with the same action and parameters answers that
 * first result again (nothing is done twice); with anything different it
 * is IdempotentParameterMismatch. A token is 1 to 64 printable ASCII
 * characters.
 *
 *   struct spx_ec2_idem h;
 *   rc = spx_ec2_idem_begin(st, account, "RunInstances", token, in, now,
 *                           &h, &first);
 *   rc < 0: an error is recorded; rc == 1: answer with first (a new ref);
 *   rc == 0: do the work, then spx_ec2_idem_end(&h, answer), or
 *            spx_ec2_idem_end(&h, NULL) when it failed (the token is free
 *            again: failures are not remembered).
 *
 * While the first request runs, a second one with the same token waits for
 * its answer (at most SPX_EC2_IDEM_WAIT_MS); a reservation older than
 * SPX_EC2_IDEM_STALE seconds (its gateway died) is taken over.
 *
 * XXX: records are kept for good; an expiry sweep belongs with the node
 * agent's housekeeping.
 */
#ifndef SPX_EC2_IDEM_H
#define SPX_EC2_IDEM_H

#include <jansson.h>
#include <stdint.h>
#include <time.h>

struct spx_state;

#define SPX_EC2_TOKEN_MAX 64
#define SPX_EC2_IDEM_WAIT_MS 5000
#define SPX_EC2_IDEM_STALE 60

struct spx_ec2_idem {
	struct spx_state *st;
	char key[128];
	char *record; /* the pending record as written */
	uint64_t rev;
};

int spx_ec2_idem_begin(struct spx_state *st, const char *account,
		       const char *action, const char *token,
		       const json_t *in, time_t now, struct spx_ec2_idem *h,
		       json_t **first);
/* Record the answer (NULL: release the token). Returns 0 or -1 (the
 * answer was not recorded; the action itself succeeded). */
int spx_ec2_idem_end(struct spx_ec2_idem *h, const json_t *answer);

#endif
