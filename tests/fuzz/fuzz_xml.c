/* fuzz_xml: the XML reader under small limits, fed whole and in two slices
 * (split at the first byte's value), which must agree; a document that
 * parses is written back with the writer and must read back the same. */
#include "spx.h"

#include "xml/xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define XML_NS "http://www.w3.org/XML/1998/namespace"

static const struct spx_xml_limits lim = {
	.max_bytes = 64 << 10,
	.max_depth = 12,
	.max_elems = 2000,
	.max_text = 4096,
	.max_attrs = 8,
};

static void dump(struct spx_buf *o, const struct spx_xml_node *n)
{
	size_t k = 0;

	if (strlen(n->text) != n->textlen)
		abort();
	spx_buf_addf(o, "{%s}%s", n->ns, n->name);
	for (size_t i = 0; i < n->nattrs; i++)
		spx_buf_addf(o, " {%s}%s=%s", n->attrs[i].ns, n->attrs[i].name,
			     n->attrs[i].value);
	spx_buf_addf(o, "(%zu:%s)[", n->textlen, n->text);
	for (const struct spx_xml_node *c = n->children; c; c = c->next) {
		if (c->parent != n)
			abort();
		k++;
		dump(o, c);
	}
	if (k != n->nchildren || k != spx_xml_count(n, NULL))
		abort();
	spx_buf_adds(o, "]");
}

static int parse(const uint8_t *data, size_t size, size_t split,
		 struct spx_buf *o)
{
	struct spx_xml_parser *p = spx_xml_parser_new(&lim);
	struct spx_xml_doc *d = NULL;
	int rc;

	rc = spx_xml_feed(p, (const char *)data, split);
	if (!rc)
		rc = spx_xml_feed(p, (const char *)data + split, size - split);
	if (!rc)
		rc = spx_xml_finish(p, &d);
	spx_xml_parser_free(p);
	if (!rc) {
		dump(o, spx_xml_doc_root(d));
		spx_xml_doc_free(d);
	} else if (spx_errstatus() != SPX_USAGE) {
		abort();
	}
	return rc;
}

/* Write n back; element namespaces as default declarations, attribute
 * namespaces with a prefix of their own. */
static void render(struct spx_xml *x, const struct spx_xml_node *n,
		   const char *parent_ns)
{
	char pfx[16], name[SPX_XML_NAMEMAX + 16];
	const char *dflt = n->ns; /* the default namespace inside n */

	if (!strcmp(n->ns, XML_NS)) {
		/* The xml prefix is bound already and cannot be default. */
		snprintf(name, sizeof(name), "xml:%s", n->name);
		spx_xml_open(x, name);
		dflt = parent_ns;
	} else {
		spx_xml_open(x, n->name);
		if (strcmp(n->ns, parent_ns))
			spx_xml_attr(x, "xmlns", n->ns);
	}
	for (size_t i = 0; i < n->nattrs; i++) {
		const struct spx_xml_attr *a = &n->attrs[i];

		if (!*a->ns) {
			spx_xml_attr(x, a->name, a->value);
		} else if (!strcmp(a->ns, XML_NS)) {
			snprintf(name, sizeof(name), "xml:%s", a->name);
			spx_xml_attr(x, name, a->value);
		} else {
			snprintf(pfx, sizeof(pfx), "xmlns:p%zu", i);
			spx_xml_attr(x, pfx, a->ns);
			snprintf(name, sizeof(name), "p%zu:%s", i, a->name);
			spx_xml_attr(x, name, a->value);
		}
	}
	spx_xml_textn(x, n->text, n->textlen);
	for (const struct spx_xml_node *c = n->children; c; c = c->next)
		render(x, c, dflt);
	spx_xml_close(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_buf whole = SPX_BUF_INIT, halves = SPX_BUF_INIT;
	struct spx_buf out = SPX_BUF_INIT, again = SPX_BUF_INIT;
	struct spx_xml_doc *d;
	struct spx_xml x;
	size_t split = size ? data[0] : 0;
	int rc1, rc2;

	if (split > size)
		split = size;
	rc1 = parse(data, size, size, &whole);
	rc2 = parse(data, size, split, &halves);
	if (rc1 != rc2 || strcmp(whole.p, halves.p))
		abort();
	if (rc1 < 0)
		goto out;

	if (spx_xml_parse((const char *)data, size, &lim, &d) < 0)
		abort();
	spx_xml_begin_buf(&x, &out);
	spx_xml_decl(&x);
	render(&x, spx_xml_doc_root(d), "");
	spx_xml_doc_free(d);
	/* Names the writer refuses (non-ASCII) end the round trip. */
	if (spx_xml_end(&x) < 0)
		goto out;
	if (parse((const uint8_t *)out.p, out.len, out.len, &again) < 0) {
		fprintf(stderr, "written back: %s\nerror: %s\n", out.p,
			spx_errmsg());
		abort();
	}
	if (strcmp(whole.p, again.p)) {
		fprintf(stderr, "first:  %s\nsecond: %s\n", whole.p, again.p);
		abort();
	}
out:
	spx_buf_release(&whole);
	spx_buf_release(&halves);
	spx_buf_release(&out);
	spx_buf_release(&again);
	return 0;
}
