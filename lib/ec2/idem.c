/* idem.c: ClientToken idempotency (see idem.h). */
#include "spx.h"

#include <openssl/evp.h>

#include "ec2/fault.h"
#include "ec2/idem.h"
#include "hex.h"
#include "state/state.h"

static void sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned int len = 0;

	EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
	spx_hex_encode(md, 32, out);
}

/* The hash of what makes two requests the same: the action and every
 * parameter but the token and DryRun. */
static int params_hash(const char *action, const json_t *in, char out[65])
{
	json_t *q = json_deep_copy(in);
	char *s;
	struct spx_buf b = SPX_BUF_INIT;

	json_object_del(q, "ClientToken");
	json_object_del(q, "DryRun");
	s = json_dumps(q, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(q);
	if (!s)
		return spx_ec2_fault(500, "InternalError",
				     "cannot normalise the request");
	spx_buf_addf(&b, "%s", action);
	spx_buf_add(&b, "", 1);
	spx_buf_adds(&b, s);
	sha256_hex(b.p, b.len, out);
	spx_buf_release(&b);
	free(s);
	return 0;
}

static bool str_is(const json_t *v, const char *s)
{
	return json_is_string(v) && !strcmp(json_string_value(v), s);
}

static bool token_ok(const char *t)
{
	size_t n = strlen(t);

	if (n < 1 || n > SPX_EC2_TOKEN_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (t[i] < 0x21 || t[i] > 0x7e)
			return false;
	return true;
}

static void nap(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

int spx_ec2_idem_begin(struct spx_state *st, const char *account,
		       const char *action, const char *token,
		       const json_t *in, time_t now, struct spx_ec2_idem *h,
		       json_t **first)
{
	char tok[65], params[65];
	struct spx_buf cur = SPX_BUF_INIT;
	json_t *rec;
	int rc = -1;

	memset(h, 0, sizeof(*h));
	*first = NULL;
	if (!token_ok(token))
		return spx_ec2_fault_invalid("clientToken", token,
				       "It must be 1 to 64 printable ASCII "
				       "characters.");
	if (params_hash(action, in, params) < 0)
		return -1;
	sha256_hex(token, strlen(token), tok);
	snprintf(h->key, sizeof(h->key), "ec2/idem/%s/%s", account, tok);
	h->st = st;
	rec = json_pack("{s:s, s:s, s:s, s:I}", "action", action, "params",
			params, "state", "pending", "time", (json_int_t)now);
	h->record = json_dumps(rec, JSON_COMPACT);
	json_decref(rec);
	for (int tries = 0; tries < SPX_EC2_IDEM_WAIT_MS / 20; tries++) {
		uint64_t rev = 0;
		json_t *old;
		const char *state;
		int r;

		r = spx_state_create(st, h->key, h->record, strlen(h->record),
				     &h->rev);
		if (r == 0)
			return 0;
		if (r != SPX_STATE_EXISTS)
			goto out;
		r = spx_state_get(st, h->key, &cur, &rev);
		if (r == SPX_STATE_NOTFOUND)
			continue; /* released meanwhile */
		if (r < 0)
			goto out;
		old = json_loadb(cur.p, cur.len, 0, NULL);
		if (!old) {
			spx_ec2_fault(500, "InternalError",
				      "bad client token record '%s'", h->key);
			goto out;
		}
		state = json_string_value(json_object_get(old, "state"));
		if (!str_is(json_object_get(old, "action"), action) ||
		    !str_is(json_object_get(old, "params"), params)) {
			json_decref(old);
			spx_ec2_fault(400, "IdempotentParameterMismatch",
				      "The request uses the same client token "
				      "as a previous, but non-identical "
				      "request. Do not reuse a client token "
				      "with different requests, unless the "
				      "requests are identical.");
			goto out;
		}
		if (state && !strcmp(state, "done")) {
			*first = json_incref(json_object_get(old, "answer"));
			json_decref(old);
			free(h->record);
			h->record = NULL;
			spx_buf_release(&cur);
			return 1;
		}
		if (now - json_integer_value(json_object_get(old, "time")) >
		    SPX_EC2_IDEM_STALE) {
			json_decref(old);
			r = spx_state_put(st, h->key, h->record,
					  strlen(h->record), rev, &h->rev);
			if (r == 0) {
				spx_buf_release(&cur);
				return 0;
			}
			if (r != SPX_STATE_CONFLICT && r != SPX_STATE_NOTFOUND)
				goto out;
			continue;
		}
		json_decref(old);
		nap();
	}
	spx_ec2_fault(500, "InternalError",
		      "A request with the same client token is still in "
		      "progress");
out:
	free(h->record);
	h->record = NULL;
	spx_buf_release(&cur);
	return rc;
}

int spx_ec2_idem_end(struct spx_ec2_idem *h, const json_t *answer)
{
	json_t *rec;
	char *s;
	int rc;

	if (!h->record)
		return 0;
	if (!answer) {
		rc = spx_state_delete(h->st, h->key, h->rev);
	} else {
		rec = json_loads(h->record, 0, NULL);
		json_object_set_new(rec, "state", json_string("done"));
		json_object_set(rec, "answer", (json_t *)answer);
		s = json_dumps(rec, JSON_COMPACT);
		json_decref(rec);
		rc = s ? spx_state_put(h->st, h->key, s, strlen(s), h->rev,
				       NULL)
		       : -1;
		free(s);
	}
	free(h->record);
	h->record = NULL;
	return rc < 0 ? -1 : 0;
}
