/* paging.c: MaxResults and NextToken (see paging.h). */
#include "spx.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "checksum.h"
#include "ec2/fault.h"
#include "ec2/paging.h"

#define TOKEN_VERSION 1
#define MAC_LEN 16

static void mac(const struct spx_ec2_page *p, const char *key, size_t klen,
		unsigned char out[MAC_LEN])
{
	static const char label[] = "spx-ec2-page/1";
	const struct spx_ec2_pager *pg = p->pg;
	unsigned char md[32];
	struct spx_buf b = SPX_BUF_INIT;

	/* NUL-separated fields: none of them holds a NUL. */
	spx_buf_add(&b, label, sizeof(label));
	spx_buf_add(&b, pg->account, strlen(pg->account) + 1);
	spx_buf_add(&b, pg->action, strlen(pg->action) + 1);
	spx_buf_add(&b, p->query, strlen(p->query) + 1);
	spx_buf_add(&b, key, klen);
	if (!spx_hmac_sha256(pg->secret, SPX_EC2_PAGE_SECRET, b.p, b.len, md))
		spx_die(SPX_FAIL, "cannot compute HMAC-SHA-256");
	memcpy(out, md, MAC_LEN);
	spx_buf_release(&b);
}

static int bad_token(const char *t)
{
	return spx_ec2_fault(400, "InvalidParameterValue",
			     "Value ( %s ) for parameter NextToken is invalid. "
			     "The token is invalid.",
			     t);
}

int spx_ec2_page_begin(const struct spx_ec2_pager *pg, const json_t *in,
		       struct spx_ec2_page *p)
{
	const json_t *mr = json_object_get(in, "MaxResults");
	const char *tok = json_string_value(json_object_get(in, "NextToken"));
	json_t *q;

	memset(p, 0, sizeof(*p));
	p->pg = pg;
	p->max = pg->def;
	if (mr) {
		json_int_t v = json_integer_value(mr);

		if (pg->min < pg->max && (v < pg->min || v > pg->max)) {
			if (v < pg->min)
				return spx_ec2_fault(
					400, "InvalidParameterValue",
					"Value ( %lld ) for parameter maxResults "
					"is invalid. Expecting a value greater "
					"than %lld.",
					(long long)v, (long long)pg->min);
			return spx_ec2_fault(400, "InvalidParameterValue",
					     "Value ( %lld ) for parameter "
					     "maxResults is invalid. Expecting a "
					     "value less than or equal to %lld.",
					     (long long)v, (long long)pg->max);
		}
		p->max = v > 0 ? (size_t)v : 0;
	}
	q = json_deep_copy(in);
	json_object_del(q, "NextToken");
	json_object_del(q, "MaxResults");
	json_object_del(q, "DryRun");
	p->query = json_dumps(q, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(q);
	if (!p->query)
		return spx_ec2_fault(500, "InternalError",
				     "cannot normalise the query");
	if (tok && *tok) {
		unsigned char raw[1 + SPX_EC2_PAGE_KEYMAX + MAC_LEN];
		unsigned char want[MAC_LEN];
		size_t len = strlen(tok), n = 0;

		if (len > 4 * ((sizeof(raw) + 2) / 3) ||
		    spx_base64_decode(tok, len, raw, sizeof(raw), &n) < 0 ||
		    n < 1 + 1 + MAC_LEN || raw[0] != TOKEN_VERSION ||
		    memchr(raw + 1, '\0', n - 1 - MAC_LEN)) {
			spx_ec2_page_release(p);
			return bad_token(tok);
		}
		mac(p, (const char *)raw + 1, n - 1 - MAC_LEN, want);
		if (CRYPTO_memcmp(want, raw + n - MAC_LEN, MAC_LEN)) {
			spx_ec2_page_release(p);
			return bad_token(tok);
		}
		p->after = spx_strndup((const char *)raw + 1, n - 1 - MAC_LEN);
	}
	return 0;
}

int spx_ec2_page_after(const struct spx_ec2_page *p, const char *key)
{
	return !p->after || strcmp(key, p->after) > 0;
}

int spx_ec2_page_take(struct spx_ec2_page *p, json_t *items,
		      const char *(*key)(const json_t *item), char **next)
{
	size_t n = json_array_size(items);
	unsigned char raw[1 + SPX_EC2_PAGE_KEYMAX + MAC_LEN];
	struct spx_buf b = SPX_BUF_INIT;
	const char *last;
	size_t klen;

	*next = NULL;
	if (!p->max || n <= p->max)
		return 0;
	while (json_array_size(items) > p->max)
		json_array_remove(items, json_array_size(items) - 1);
	last = key(json_array_get(items, p->max - 1));
	klen = last ? strlen(last) : 0;
	if (!klen || klen > SPX_EC2_PAGE_KEYMAX)
		return spx_ec2_fault(500, "InternalError",
				     "cannot page after key '%s'",
				     last ? last : "");
	raw[0] = TOKEN_VERSION;
	memcpy(raw + 1, last, klen);
	mac(p, last, klen, raw + 1 + klen);
	spx_base64_encode(raw, 1 + klen + MAC_LEN, &b);
	*next = spx_buf_detach(&b, NULL);
	return 0;
}

void spx_ec2_page_release(struct spx_ec2_page *p)
{
	free(p->after);
	free(p->query);
	p->after = p->query = NULL;
}
