/* xmlparse.c: the bounded XML reader over expat (contract in xml.h). */
#include "spx.h"

#include <expat.h>

#include "xml/xml.h"

/* Expat reports names as "URI<NSSEP>local". XML 1.0 cannot carry U+0001,
 * not even as &#1;, so it can never occur inside a namespace URI. */
#define NSSEP '\x01'

/* Expat takes int lengths, and reparses a token that a feed split: staging
 * small feeds into pieces of this size keeps one-byte feeding linear. */
#define STAGE 8192
#define MAXPIECE ((size_t)1 << 30)

struct arena {
	struct arena *next;
	size_t used, cap;
	max_align_t data[];
};

struct spx_xml_doc {
	struct spx_xml_node *root;
	struct arena *arena;
};

struct spx_xml_parser {
	XML_Parser xp;
	struct spx_xml_limits lim;
	struct spx_xml_doc *doc;
	struct spx_xml_node *cur; /* innermost open element */
	unsigned depth;
	size_t nelems;
	size_t nbytes;
	struct spx_buf *text; /* [max_depth]: text of each open element */
	struct spx_buf stage;
	bool failed, finished;
	char err[512];
};

static void *arena_alloc(struct spx_xml_doc *d, size_t n)
{
	const size_t al = sizeof(max_align_t), blk = 16384;
	struct arena *a = d->arena;
	void *p;

	n = (n + al - 1) / al * al;
	if (a && n > blk / 4) {
		/* A big piece gets a block of its own, behind the current
		 * one, which goes on filling. */
		a = spx_malloc(sizeof(*a) + n);
		a->used = n;
		a->cap = n;
		a->next = d->arena->next;
		d->arena->next = a;
		return a->data;
	}
	if (!a || a->cap - a->used < n) {
		size_t cap = n > blk ? n : blk;

		a = spx_malloc(sizeof(*a) + cap);
		a->used = 0;
		a->cap = cap;
		a->next = d->arena;
		d->arena = a;
	}
	p = (char *)a->data + a->used;
	a->used += n;
	return p;
}

static char *arena_strndup(struct spx_xml_doc *d, const char *s, size_t n)
{
	char *p = arena_alloc(d, n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void spx_xml_doc_free(struct spx_xml_doc *d)
{
	struct arena *a, *next;

	if (!d)
		return;
	for (a = d->arena; a; a = next) {
		next = a->next;
		free(a);
	}
	free(d);
}

const struct spx_xml_node *spx_xml_doc_root(const struct spx_xml_doc *d)
{
	return d->root;
}

/* Record an error at expat's current position and stop the parse. */
__attribute__((format(printf, 2, 3))) static void
stop(struct spx_xml_parser *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->failed)
		return;
	p->failed = true;
	n = snprintf(p->err, sizeof(p->err), "line %llu column %llu: ",
		     (unsigned long long)XML_GetCurrentLineNumber(p->xp),
		     (unsigned long long)XML_GetCurrentColumnNumber(p->xp) + 1);
	if (n < 0 || (size_t)n >= sizeof(p->err))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(p->err + n, sizeof(p->err) - (size_t)n, fmt, ap);
	va_end(ap);
	XML_StopParser(p->xp, XML_FALSE);
}

/* Split an expat name into local name and namespace URI, sharing the
 * parent's URI string when it is the same. */
static void split_name(struct spx_xml_parser *p, const char *full,
		       const char **name, const char **ns,
		       const char *parent_ns)
{
	const char *sep = strrchr(full, NSSEP);

	if (!sep) {
		*ns = "";
		*name = arena_strndup(p->doc, full, strlen(full));
		return;
	}
	*name = arena_strndup(p->doc, sep + 1, strlen(sep + 1));
	if (parent_ns && strlen(parent_ns) == (size_t)(sep - full) &&
	    !memcmp(parent_ns, full, (size_t)(sep - full)))
		*ns = parent_ns;
	else
		*ns = arena_strndup(p->doc, full, (size_t)(sep - full));
}

static void XMLCALL on_start(void *ud, const XML_Char *name,
			     const XML_Char **atts)
{
	struct spx_xml_parser *p = ud;
	struct spx_xml_node *n;
	struct spx_xml_attr *a;
	size_t na = 0;

	if (p->failed)
		return;
	if (p->depth >= p->lim.max_depth) {
		stop(p, "elements nested deeper than %u levels",
		     p->lim.max_depth);
		return;
	}
	if (p->nelems >= p->lim.max_elems) {
		stop(p, "more than %zu elements", p->lim.max_elems);
		return;
	}
	while (atts[2 * na])
		na++;
	if (na > p->lim.max_attrs) {
		stop(p, "more than %zu attributes", p->lim.max_attrs);
		return;
	}
	n = arena_alloc(p->doc, sizeof(*n));
	memset(n, 0, sizeof(*n));
	n->line = (unsigned long)XML_GetCurrentLineNumber(p->xp);
	n->column = (unsigned long)XML_GetCurrentColumnNumber(p->xp) + 1;
	n->parent = p->cur;
	split_name(p, name, &n->name, &n->ns, p->cur ? p->cur->ns : NULL);
	n->text = "";
	if (na) {
		a = arena_alloc(p->doc, na * sizeof(*a));
		for (size_t i = 0; i < na; i++) {
			split_name(p, atts[2 * i], &a[i].name, &a[i].ns,
				   n->ns);
			a[i].value = arena_strndup(p->doc, atts[2 * i + 1],
						   strlen(atts[2 * i + 1]));
		}
		n->attrs = a;
		n->nattrs = na;
	}
	if (p->cur) {
		if (p->cur->lastchild)
			p->cur->lastchild->next = n;
		else
			p->cur->children = n;
		p->cur->lastchild = n;
		p->cur->nchildren++;
	} else {
		p->doc->root = n;
	}
	p->cur = n;
	spx_buf_reset(&p->text[p->depth]);
	p->depth++;
	p->nelems++;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	struct spx_xml_parser *p = ud;
	struct spx_buf *t;

	if (p->failed || !p->cur)
		return;
	t = &p->text[p->depth - 1];
	if (t->len) {
		p->cur->text = arena_strndup(p->doc, t->p, t->len);
		p->cur->textlen = t->len;
	}
	p->cur = p->cur->parent;
	p->depth--;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	struct spx_xml_parser *p = ud;
	struct spx_buf *t;

	if (p->failed || len <= 0)
		return;
	if (!p->depth) {
		/* Expat refuses text outside the root itself; be sure. */
		for (int i = 0; i < len; i++)
			if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' &&
			    s[i] != '\n') {
				stop(p, "text outside the root element");
				return;
			}
		return;
	}
	t = &p->text[p->depth - 1];
	if ((size_t)len > p->lim.max_text - t->len) {
		stop(p, "text of element '%s' is longer than %zu bytes",
		     p->cur->name, p->lim.max_text);
		return;
	}
	spx_buf_add(t, s, (size_t)len);
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name,
			       const XML_Char *sysid, const XML_Char *pubid,
			       int has_internal_subset)
{
	stop(ud, "a document type declaration is not allowed");
}

static void XMLCALL on_entity(void *ud, const XML_Char *name, int is_param,
			      const XML_Char *value, int value_len,
			      const XML_Char *base, const XML_Char *sysid,
			      const XML_Char *pubid, const XML_Char *notation)
{
	stop(ud, "an entity declaration is not allowed");
}

struct spx_xml_parser *spx_xml_parser_new(const struct spx_xml_limits *lim)
{
	struct spx_xml_parser *p = spx_calloc(1, sizeof(*p));

	if (lim)
		p->lim = *lim;
	if (!p->lim.max_bytes)
		p->lim.max_bytes = SPX_XML_DEF_BYTES;
	if (!p->lim.max_depth)
		p->lim.max_depth = SPX_XML_DEF_DEPTH;
	if (p->lim.max_depth > SPX_XML_MAX_DEPTH)
		p->lim.max_depth = SPX_XML_MAX_DEPTH;
	if (!p->lim.max_elems)
		p->lim.max_elems = SPX_XML_DEF_ELEMS;
	if (!p->lim.max_text)
		p->lim.max_text = SPX_XML_DEF_TEXT;
	if (!p->lim.max_attrs)
		p->lim.max_attrs = SPX_XML_DEF_ATTRS;
	p->xp = XML_ParserCreateNS(NULL, NSSEP);
	if (!p->xp)
		spx_die(SPX_FAIL, "out of memory creating an xml parser");
	p->doc = spx_calloc(1, sizeof(*p->doc));
	p->text = spx_calloc(p->lim.max_depth, sizeof(*p->text));
	for (unsigned i = 0; i < p->lim.max_depth; i++)
		spx_buf_init(&p->text[i], 0);
	spx_buf_init(&p->stage, 0);
	XML_SetUserData(p->xp, p);
	XML_SetElementHandler(p->xp, on_start, on_end);
	XML_SetCharacterDataHandler(p->xp, on_text);
	XML_SetStartDoctypeDeclHandler(p->xp, on_doctype);
	XML_SetEntityDeclHandler(p->xp, on_entity);
	/* The default already; said here because it matters (no XXE). */
	XML_SetParamEntityParsing(p->xp, XML_PARAM_ENTITY_PARSING_NEVER);
	return p;
}

void spx_xml_parser_free(struct spx_xml_parser *p)
{
	if (!p)
		return;
	XML_ParserFree(p->xp);
	spx_xml_doc_free(p->doc);
	for (unsigned i = 0; i < p->lim.max_depth; i++)
		spx_buf_release(&p->text[i]);
	free(p->text);
	spx_buf_release(&p->stage);
	free(p);
}

static int failed(struct spx_xml_parser *p)
{
	return spx_error(SPX_USAGE, "%s", p->err);
}

/* Hand data to expat; final marks the end of the document. */
static int parse(struct spx_xml_parser *p, const char *data, size_t len,
		 bool final)
{
	do {
		size_t n = len < MAXPIECE ? len : MAXPIECE;
		bool last = final && n == len;

		if (XML_Parse(p->xp, data, (int)n, last) != XML_STATUS_OK) {
			enum XML_Error e = XML_GetErrorCode(p->xp);

			if (!p->failed) {
				p->failed = true;
				snprintf(p->err, sizeof(p->err),
					 "line %llu column %llu: %s",
					 (unsigned long long)
						 XML_GetCurrentLineNumber(p->xp),
					 (unsigned long long)
						 XML_GetCurrentColumnNumber(
							 p->xp) + 1,
					 e == XML_ERROR_ABORTED
						 ? "parsing aborted"
						 : XML_ErrorString(e));
			}
			return failed(p);
		}
		if (p->failed) /* cannot happen: a stop makes Parse fail */
			return failed(p);
		data += n;
		len -= n;
	} while (len);
	return 0;
}

int spx_xml_feed(struct spx_xml_parser *p, const char *data, size_t len)
{
	if (p->failed)
		return failed(p);
	if (p->finished)
		return spx_error(SPX_USAGE, "xml document fed after its end");
	if (len > p->lim.max_bytes - p->nbytes) {
		p->failed = true;
		snprintf(p->err, sizeof(p->err),
			 "xml document is larger than %zu bytes",
			 p->lim.max_bytes);
		return failed(p);
	}
	p->nbytes += len;
	if (p->stage.len + len <= STAGE) {
		spx_buf_add(&p->stage, data, len);
		if (p->stage.len < STAGE)
			return 0;
		data = NULL;
		len = 0;
	}
	if (p->stage.len) {
		int rc = parse(p, p->stage.p, p->stage.len, false);

		spx_buf_reset(&p->stage);
		if (rc < 0)
			return -1;
	}
	if (len)
		return parse(p, data, len, false);
	return 0;
}

int spx_xml_finish(struct spx_xml_parser *p, struct spx_xml_doc **out)
{
	int rc;

	*out = NULL;
	if (p->failed)
		return failed(p);
	if (p->finished)
		return spx_error(SPX_USAGE, "xml document finished twice");
	p->finished = true;
	rc = parse(p, p->stage.p, p->stage.len, true);
	spx_buf_release(&p->stage);
	if (rc < 0)
		return -1;
	if (!p->doc->root) /* expat says "no element found" first */
		return spx_error(SPX_USAGE, "xml document has no element");
	*out = p->doc;
	p->doc = NULL;
	return 0;
}

int spx_xml_parse(const char *data, size_t len,
		  const struct spx_xml_limits *lim, struct spx_xml_doc **out)
{
	struct spx_xml_parser *p = spx_xml_parser_new(lim);
	int rc;

	*out = NULL;
	rc = spx_xml_feed(p, data, len);
	if (!rc)
		rc = spx_xml_finish(p, out);
	spx_xml_parser_free(p);
	return rc;
}

bool spx_xml_is(const struct spx_xml_node *n, const char *name,
		const char *ns)
{
	return n && !strcmp(n->name, name) && (!ns || !strcmp(n->ns, ns));
}

static bool match(const struct spx_xml_node *n, const char *name)
{
	return !name || !strcmp(n->name, name);
}

const struct spx_xml_node *spx_xml_child(const struct spx_xml_node *n,
					 const char *name)
{
	const struct spx_xml_node *c;

	for (c = n ? n->children : NULL; c; c = c->next)
		if (match(c, name))
			return c;
	return NULL;
}

const struct spx_xml_node *spx_xml_next(const struct spx_xml_node *c,
					const char *name)
{
	for (c = c ? c->next : NULL; c; c = c->next)
		if (match(c, name))
			return c;
	return NULL;
}

const char *spx_xml_child_text(const struct spx_xml_node *n,
			       const char *name)
{
	const struct spx_xml_node *c = spx_xml_child(n, name);

	return c ? c->text : NULL;
}

size_t spx_xml_count(const struct spx_xml_node *n, const char *name)
{
	size_t k = 0;

	for (const struct spx_xml_node *c = n ? n->children : NULL; c;
	     c = c->next)
		k += match(c, name);
	return k;
}

const char *spx_xml_node_attr(const struct spx_xml_node *n, const char *name)
{
	for (size_t i = 0; n && i < n->nattrs; i++)
		if (!strcmp(n->attrs[i].name, name))
			return n->attrs[i].value;
	return NULL;
}
