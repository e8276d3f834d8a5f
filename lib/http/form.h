/* form.h: a streaming multipart/form-data reader (RFC 7578), for S3's
 * POST object (browser form uploads). Bounded: the small fields are
 * gathered whole, up to SPX_FORM_FIELDS_MAX bytes in all; the file's
 * content is handed on in pieces as it arrives, never held; parts after
 * the file are read and ignored, as S3 ignores them.
 *
 *   struct spx_form f;
 *   if (spx_form_init(&f, content_type_header, &callbacks, arg) < 0) ...
 *   for each piece of the body: e = spx_form_feed(&f, p, n); stop on e
 *   e = spx_form_finish(&f);
 *   spx_form_release(&f);
 *
 * Why not libmicrohttpd's post processor: it is bound to an MHD
 * connection (it reads the Content-Type itself), which the gateway's
 * handlers never see (tests and fuzzers drive them through
 * spx_http_run), and it hands on fields of any length. */
#ifndef SPX_FORM_H
#define SPX_FORM_H

#include "spx.h"

#define SPX_FORM_BOUNDARY_MAX 70     /* RFC 2046 */
#define SPX_FORM_HEAD_MAX 8192	     /* one part's header block */
#define SPX_FORM_FIELDS_MAX (64 << 10) /* every field but the file */
#define SPX_FORM_PARTS_MAX 1000
#define SPX_FORM_NAME_MAX 1024	     /* a field name or file name */

enum spx_form_err {
	SPX_FORM_OK = 0,
	SPX_FORM_ECONTENT_TYPE, /* not multipart/form-data with a boundary */
	SPX_FORM_EMALFORMED,	/* the body breaks the grammar */
	SPX_FORM_ETOOBIG,	/* fields, a header block or parts too many */
	SPX_FORM_ETRUNCATED,	/* finish before the closing delimiter */
	SPX_FORM_ENOFILE,	/* finish without a part named "file" */
	SPX_FORM_ECALLBACK,	/* a callback returned -1 */
	SPX_FORM_NERR
};

/* Callbacks; each returns 0, or -1 to stop the reader (ECALLBACK). */
struct spx_form_cb {
	/* A field before the file, whole (value may hold any byte; a NUL is
	 * added after it). */
	int (*field)(void *arg, const char *name, const char *value,
		     size_t len);
	/* The part named "file": its filename ("" when none) and its
	 * Content-Type (NULL when none), then its content in pieces, then
	 * its end. */
	int (*file_begin)(void *arg, const char *filename, const char *ctype);
	int (*file_data)(void *arg, const void *p, size_t n);
	int (*file_end)(void *arg);
};

enum spx_form_state {
	SPX_FORM_PREAMBLE,
	SPX_FORM_AFTER_DELIM,
	SPX_FORM_HEAD,
	SPX_FORM_BODY,
	SPX_FORM_DONE,
	SPX_FORM_FAILED,
};

struct spx_form {
	const struct spx_form_cb *cb;
	void *arg;
	char delim[4 + SPX_FORM_BOUNDARY_MAX + 1]; /* "\r\n--" boundary */
	size_t dlen;
	enum spx_form_state st;
	struct spx_buf in;     /* unconsumed input (bounded) */
	struct spx_buf value;  /* the field being gathered */
	char name[SPX_FORM_NAME_MAX + 1];
	bool in_file;	       /* the current part is the file */
	bool file_seen;	       /* ... and after it, parts are ignored */
	size_t fields;	       /* bytes of fields so far */
	size_t parts;
	enum spx_form_err err;
};

/* The boundary of a Content-Type header. Returns 0, or -1 (the header is
 * not multipart/form-data with a valid boundary). */
int spx_form_init(struct spx_form *f, const char *content_type,
		  const struct spx_form_cb *cb, void *arg);
enum spx_form_err spx_form_feed(struct spx_form *f, const char *p, size_t n);
/* The body has ended: the closing delimiter and the file must have been
 * seen. */
enum spx_form_err spx_form_finish(struct spx_form *f);
void spx_form_release(struct spx_form *f);
const char *spx_form_strerror(enum spx_form_err e);

#endif
