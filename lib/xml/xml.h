/* xml.h: the XML writer that renders every AWS response, and the bounded
 * reader that turns a request body into a small DOM.
 *
 * WRITER
 *
 *   struct spx_buf b = SPX_BUF_INIT;
 *   struct spx_xml x;
 *
 *   spx_xml_begin_buf(&x, &b);
 *   spx_xml_decl(&x);
 *   spx_xml_open_ns(&x, "DescribeRegionsResponse", SPX_XML_NS_EC2);
 *   spx_xml_elem(&x, "requestId", id);
 *   spx_xml_close(&x);
 *   if (spx_xml_end(&x) < 0)
 *           ...spx_errmsg()...
 *
 * Output goes to a sink, a callback that takes the bytes in order; a big
 * listing can stream them out. With a buffer sink (spx_xml_begin_buf) the
 * bytes land in the buffer at once; any other sink gets them in pieces of
 * up to SPX_XML_STAGE bytes, and the rest at spx_xml_flush()/spx_xml_end().
 * The output is compact: no indentation, no newlines of its own.
 *
 * Errors are sticky. Every call returns 0, or -1 after recording an error
 * with spx_error(); after the first error every call returns -1 and leaves
 * that first message in place, so a renderer may make its calls unchecked
 * and test only spx_xml_end(). Misuse (a bad element or attribute name,
 * spx_xml_close() with nothing open, nesting deeper than SPX_XML_MAXDEPTH,
 * spx_xml_attr() outside a start tag, text outside the root, a second
 * root, spx_xml_decl() anywhere but first, spx_xml_end() with elements
 * open) is SPX_USAGE; a sink's failure keeps the status the sink recorded.
 *
 * Names of elements and attributes must match [A-Za-z_][A-Za-z0-9_.:-]*
 * and be at most SPX_XML_NAMEMAX bytes: plain ASCII, never data.
 *
 * Escaping. Text and attribute values are bytes meant to be UTF-8, and the
 * output is always well-formed XML 1.0, whatever the input:
 *   &  <  >  "  '      ->  &amp; &lt; &gt; &quot; &apos;  (text too: S3
 *                          writes its ETags as &quot;...&quot;)
 *   CR                 ->  &#xD;  (as S3 does; a raw CR would be read back
 *                          as LF by every XML parser)
 *   TAB, LF            ->  kept in text; &#x9; and &#xA; in attributes
 *                          (which a parser would otherwise fold to spaces)
 *   other C0 controls, NUL, invalid UTF-8 (each maximal ill-formed
 *   subsequence, as Unicode 3.9 recommends), U+FFFE, U+FFFF
 *                      ->  U+FFFD, since XML 1.0 cannot carry them at all,
 *                          not even as character references.
 * That replacement loses information: S3 listings of keys holding such
 * bytes must use encoding-type=url, exactly as with AWS (which, unlike
 * spx, emits ill-formed XML for them).
 *
 * READER
 *
 *   struct spx_xml_parser *p = spx_xml_parser_new(&lim);   (NULL: defaults)
 *   while (more body)
 *           if (spx_xml_feed(p, chunk, n) < 0) goto fail;
 *   if (spx_xml_finish(p, &doc) < 0) goto fail;
 *   spx_xml_parser_free(p);
 *   ... spx_xml_doc_root(doc) ...
 *   spx_xml_doc_free(doc);
 *
 * Built on expat with namespace processing: every node keeps its local
 * name (the prefix dropped) and its namespace URI apart. A node's text is
 * the character data directly inside it (not its descendants'),
 * concatenated, whitespace included, NUL-terminated; XML cannot contain
 * NUL so the string is exact. Children keep document order. Comments and
 * processing instructions are ignored.
 *
 * Refused, all as SPX_USAGE with "line L column C: message" (suitable for
 * S3's MalformedXML): ill-formed XML; any DOCTYPE (so no entity can be
 * declared: no billion laughs, no external entities, which expat never
 * loads anyway); non-whitespace outside the root element; anything beyond
 * the limits below. The byte limit is checked before parsing and its
 * message has no position. Once a feed fails the parser stays failed.
 */
#ifndef SPX_XML_H
#define SPX_XML_H

#include "spx.h"

#define SPX_XML_NS_EC2 "http://ec2.amazonaws.com/doc/2016-11-15/"
#define SPX_XML_NS_S3 "http://s3.amazonaws.com/doc/2006-03-01/"
#define SPX_XML_NS_XSI "http://www.w3.org/2001/XMLSchema-instance"

/* --- writer --- */

#define SPX_XML_MAXDEPTH 32
#define SPX_XML_NAMEMAX 128
#define SPX_XML_STAGE 4096

/* Take n bytes of output; return 0, or -1 after spx_error(). */
typedef int spx_xml_sink(void *ctx, const char *p, size_t n);

/* The writer's state; lives on the caller's stack, holds no heap memory. */
struct spx_xml {
	spx_xml_sink *sink;
	void *ctx;
	struct spx_buf *buf; /* set when the sink is spx_xml_buf_sink */
	uint64_t bytes;	     /* bytes produced so far */
	int depth;
	bool intag;  /* "<Name" written, its '>' not yet */
	bool failed; /* sticky */
	bool root;   /* the root element has been opened */
	size_t poollen;
	size_t off[SPX_XML_MAXDEPTH];
	char pool[SPX_XML_MAXDEPTH * (SPX_XML_NAMEMAX + 1)];
	size_t stagelen;
	char stage[SPX_XML_STAGE];
};

/* The sink for a struct spx_buf (ctx); appends, never fails. */
int spx_xml_buf_sink(void *ctx, const char *p, size_t n);

void spx_xml_begin(struct spx_xml *x, spx_xml_sink *sink, void *ctx);
/* Append to b (which keeps its earlier content). */
void spx_xml_begin_buf(struct spx_xml *x, struct spx_buf *b);
/* <?xml version="1.0" encoding="UTF-8"?> */
int spx_xml_decl(struct spx_xml *x);
/* Open <name>, or <name xmlns="ns">. Attributes may follow until the
 * first content, child or close. */
int spx_xml_open(struct spx_xml *x, const char *name);
int spx_xml_open_ns(struct spx_xml *x, const char *name, const char *ns);
/* An attribute of the start tag just opened: name="escaped value"; a NULL
 * value writes nothing. */
int spx_xml_attr(struct spx_xml *x, const char *name, const char *value);
/* Escaped text inside the innermost open element (NULL: nothing). */
int spx_xml_text(struct spx_xml *x, const char *s);
int spx_xml_textn(struct spx_xml *x, const char *s, size_t n);
/* Close the innermost open element: </name> (an element left empty is
 * written <name></name>, as AWS does). */
int spx_xml_close(struct spx_xml *x);
/* <name>escaped text</name>. A NULL text writes nothing at all, so an
 * optional field can be passed straight through. */
int spx_xml_elem(struct spx_xml *x, const char *name, const char *text);
int spx_xml_elemn(struct spx_xml *x, const char *name, const char *text,
		  size_t n);
int spx_xml_elemf(struct spx_xml *x, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "true" / "false", and decimal numbers. */
int spx_xml_elem_bool(struct spx_xml *x, const char *name, bool v);
int spx_xml_elem_u64(struct spx_xml *x, const char *name, uint64_t v);
int spx_xml_elem_i64(struct spx_xml *x, const char *name, int64_t v);
/* Hand the staged bytes to the sink. */
int spx_xml_flush(struct spx_xml *x);
/* Flush, then fail if an element is still open or any call failed. */
int spx_xml_end(struct spx_xml *x);

/* --- reader --- */

/* Zero fields take the defaults in brackets. */
struct spx_xml_limits {
	size_t max_bytes;    /* whole document [1 MiB] */
	unsigned max_depth;  /* nesting [16], at most SPX_XML_MAX_DEPTH */
	size_t max_elems;    /* elements in all [100000] */
	size_t max_text;     /* character data of one element [64 KiB] */
	size_t max_attrs;    /* attributes of one element [16] */
};

#define SPX_XML_DEF_BYTES ((size_t)1 << 20)
#define SPX_XML_DEF_DEPTH 16u
#define SPX_XML_MAX_DEPTH 256u
#define SPX_XML_DEF_ELEMS ((size_t)100000)
#define SPX_XML_DEF_TEXT ((size_t)64 << 10)
#define SPX_XML_DEF_ATTRS ((size_t)16)

struct spx_xml_attr {
	const char *name; /* local name */
	const char *ns;	  /* namespace URI, "" when none */
	const char *value;
};

/* A node and all its strings belong to the document. */
struct spx_xml_node {
	const char *name; /* local name, without its prefix */
	const char *ns;	  /* namespace URI, "" when none */
	const char *text; /* direct character data, "" when none */
	size_t textlen;
	const struct spx_xml_attr *attrs;
	size_t nattrs;
	struct spx_xml_node *parent;
	struct spx_xml_node *children; /* first child */
	struct spx_xml_node *lastchild;
	struct spx_xml_node *next; /* next sibling */
	size_t nchildren;
	unsigned long line, column; /* of the start tag, 1-based */
};

struct spx_xml_doc;
struct spx_xml_parser;

/* A parser with copied limits (lim NULL: all defaults). */
struct spx_xml_parser *spx_xml_parser_new(const struct spx_xml_limits *lim);
/* Parse the next piece of the document. */
int spx_xml_feed(struct spx_xml_parser *p, const char *data, size_t len);
/* End of input: on success *out is the document, which the caller frees
 * with spx_xml_doc_free(); the parser must still be freed. */
int spx_xml_finish(struct spx_xml_parser *p, struct spx_xml_doc **out);
void spx_xml_parser_free(struct spx_xml_parser *p);
/* new + feed + finish + free in one call. */
int spx_xml_parse(const char *data, size_t len,
		  const struct spx_xml_limits *lim, struct spx_xml_doc **out);

const struct spx_xml_node *spx_xml_doc_root(const struct spx_xml_doc *d);
void spx_xml_doc_free(struct spx_xml_doc *d);

/* Local name equal to name and, unless ns is NULL, namespace URI to ns. */
bool spx_xml_is(const struct spx_xml_node *n, const char *name,
		const char *ns);
/* First child of n named name (any namespace; NULL name: any element). */
const struct spx_xml_node *spx_xml_child(const struct spx_xml_node *n,
					 const char *name);
/* The next sibling after c with that name (NULL: any), to iterate:
 *   for (c = spx_xml_child(n, "Object"); c; c = spx_xml_next(c, "Object")) */
const struct spx_xml_node *spx_xml_next(const struct spx_xml_node *c,
					const char *name);
/* Text of the first child named name, or NULL when there is none. */
const char *spx_xml_child_text(const struct spx_xml_node *n,
			       const char *name);
/* Number of children named name (NULL: all). */
size_t spx_xml_count(const struct spx_xml_node *n, const char *name);
/* Value of the attribute with that local name (any namespace), or NULL. */
const char *spx_xml_node_attr(const struct spx_xml_node *n, const char *name);

#endif
