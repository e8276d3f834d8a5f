/* kv.h: an ordered list of name/value string pairs (HTTP headers, query
 * parameters, form fields). The list owns copies of its strings.
 * Lookups by name are exact (spx_kv_get) or ASCII case-insensitive
 * (spx_kv_geti, for HTTP header names). */
#ifndef SPX_KV_H
#define SPX_KV_H

#include <stddef.h>

struct spx_kv {
	char *k;
	char *v;
};

struct spx_kvlist {
	struct spx_kv *v;
	size_t n;
	size_t cap;
};

#define SPX_KVLIST_INIT { NULL, 0, 0 }

void spx_kv_add(struct spx_kvlist *l, const char *k, const char *v);
void spx_kv_addn(struct spx_kvlist *l, const char *k, size_t klen,
		 const char *v, size_t vlen);
/* First value whose name matches, or NULL. */
const char *spx_kv_get(const struct spx_kvlist *l, const char *k);
const char *spx_kv_geti(const struct spx_kvlist *l, const char *k);
/* Number of entries with that name (exact). */
size_t spx_kv_count(const struct spx_kvlist *l, const char *k);
void spx_kv_free(struct spx_kvlist *l);
/* Append every entry of from to to, in order. */
void spx_kv_copy(struct spx_kvlist *to, const struct spx_kvlist *from);

#endif
