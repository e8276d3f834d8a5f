/* fuzz_toml: spx_toml_parse and spx_conf_parse on any bytes. Checks that
 * the tree keeps its invariants (depth, positions, NUL-free UTF-8 strings),
 * that every error is a positioned usage error, and that a configuration
 * that parses is complete. */
#include "spx.h"

#include "conf/conf.h"
#include "conf/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = *p < 0x80 ? 1 : *p < 0xe0 ? 2 : *p < 0xf0 ? 3 : 4;

		if (*p >= 0x80 && *p < 0xc2)
			abort();
		for (size_t i = 1; i < n; i++)
			if ((p[i] & 0xc0) != 0x80)
				abort();
		p += n;
	}
}

static void check_tree(const struct spx_toml *t, int depth)
{
	if (depth > SPX_TOML_MAX_DEPTH || t->line < 1 || t->col < 1)
		abort();
	switch (t->type) {
	case SPX_TOML_TABLE:
		for (size_t i = 0; i < t->n; i++) {
			const struct spx_toml_entry *e = &t->ent[i];

			if (strlen(e->key) > SPX_TOML_MAX_KEY || e->line < 1 ||
			    e->col < 1)
				abort();
			check_utf8(e->key);
			if (spx_toml_get_entry(t, e->key) != e)
				abort();
			check_tree(e->val, depth + 1);
		}
		break;
	case SPX_TOML_ARRAY:
		for (size_t i = 0; i < t->n; i++)
			check_tree(t->item[i], depth + 1);
		break;
	case SPX_TOML_STRING:
		check_utf8(t->v.s);
		break;
	case SPX_TOML_INTEGER:
	case SPX_TOML_BOOL:
		break;
	default:
		abort();
	}
}

static void check_error(const char *prefix)
{
	const char *m = spx_errmsg();
	size_t n = strlen(prefix);

	if (spx_errstatus() != SPX_USAGE || strncmp(m, prefix, n) ||
	    m[n] < '1' || m[n] > '9')
		abort();
}

static void check_conf(const struct spx_conf *c)
{
	const struct spx_conf_node *self = spx_conf_self(c);

	if (!self || !c->n_nodes || c->root[0] != '/' ||
	    c->paths.data[0] != '/' || c->tls.key[0] != '/')
		abort();
	for (size_t i = 0; i < c->n_nodes; i++) {
		const struct spx_conf_node *n = &c->nodes[i];

		if (!n->name || !n->host || !n->az || !n->gw.bind ||
		    !n->obj.drives.n || n->gw.ec2_port < 1 ||
		    n->gw.ec2_port > 65535 || n->gw.ec2_port == n->gw.s3_port)
			abort();
		for (size_t j = 0; j < n->obj.drives.n; j++)
			if (n->obj.drives.v[j][0] != '/')
				abort();
	}
	for (size_t i = 0; i < c->network.n_external_pools; i++) {
		const struct spx_conf_pool *p = &c->network.external_pools[i];

		if (!p->name || (p->source == SPX_CONF_POOL_STATIC &&
				 (!p->range_start || !p->gateway)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct spx_toml *t;
	struct spx_conf c;

	t = spx_toml_parse("f", s, size, 1 << 20);
	if (t) {
		if (t->type != SPX_TOML_TABLE)
			abort();
		check_tree(t, 0);
		spx_toml_free(t);
	} else {
		check_error("f:");
	}
	/* Any input longer than the limit fails. */
	t = spx_toml_parse("f", s, size, size / 2);
	if (t && size)
		abort();
	spx_toml_free(t);

	if (spx_conf_parse("c", s, size, "/r", &c) == 0) {
		check_conf(&c);
		spx_conf_release(&c);
	} else {
		check_error("c:");
		if (c.nodes || c.root)
			abort();
	}
	spx_conf_release(&c);
	return 0;
}
