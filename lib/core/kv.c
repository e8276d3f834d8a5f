#include "spx.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void spx_kv_addn(struct spx_kvlist *l, const char *k, size_t klen,
		 const char *v, size_t vlen)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = spx_realloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n].k = spx_strndup(k, klen);
	l->v[l->n].v = spx_strndup(v, vlen);
	l->n++;
}

void spx_kv_add(struct spx_kvlist *l, const char *k, const char *v)
{
	spx_kv_addn(l, k, strlen(k), v, strlen(v));
}

const char *spx_kv_get(const struct spx_kvlist *l, const char *k)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].k, k))
			return l->v[i].v;
	return NULL;
}

const char *spx_kv_geti(const struct spx_kvlist *l, const char *k)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcasecmp(l->v[i].k, k))
			return l->v[i].v;
	return NULL;
}

size_t spx_kv_count(const struct spx_kvlist *l, const char *k)
{
	size_t c = 0;

	for (size_t i = 0; i < l->n; i++)
		c += !strcmp(l->v[i].k, k);
	return c;
}

void spx_kv_free(struct spx_kvlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].k);
		free(l->v[i].v);
	}
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

void spx_kv_copy(struct spx_kvlist *to, const struct spx_kvlist *from)
{
	for (size_t i = 0; i < from->n; i++)
		spx_kv_add(to, from->v[i].k, from->v[i].v);
}
