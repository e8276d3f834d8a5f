#include "spx.h"

#include <jansson.h>

#include "print.h"

struct cell {
	char *s;
	bool is_int;
	long long v;
	json_t *json; /* the value for --json, when it is not s or v */
};

struct spx_table {
	char **cols;
	size_t ncols;
	struct cell *cells; /* nrows * ncols */
	size_t nrows, cur;  /* cur: cells filled in the last row */
};

struct spx_table *spx_table_new(const char *col, ...)
{
	struct spx_table *t = spx_calloc(1, sizeof(*t));
	va_list ap;

	va_start(ap, col);
	for (const char *c = col; c; c = va_arg(ap, const char *)) {
		t->cols = spx_realloc(t->cols, (t->ncols + 1) * sizeof(char *));
		t->cols[t->ncols++] = spx_strdup(c);
	}
	va_end(ap);
	return t;
}

void spx_table_row(struct spx_table *t)
{
	t->cells = spx_realloc(t->cells,
			       (t->nrows + 1) * t->ncols * sizeof(struct cell));
	memset(t->cells + t->nrows * t->ncols, 0,
	       t->ncols * sizeof(struct cell));
	t->nrows++;
	t->cur = 0;
}

static struct cell *next(struct spx_table *t)
{
	if (!t->nrows || t->cur >= t->ncols)
		spx_die(SPX_FAIL, "print: too many cells in a row");
	return &t->cells[(t->nrows - 1) * t->ncols + t->cur++];
}

void spx_table_str(struct spx_table *t, const char *s)
{
	next(t)->s = spx_strdup(s ? s : "");
}

void spx_table_json(struct spx_table *t, const char *text, struct json_t *v)
{
	struct cell *c = next(t);

	c->s = spx_strdup(text ? text : "");
	c->json = v;
}

void spx_table_int(struct spx_table *t, long long v)
{
	struct cell *c = next(t);

	c->is_int = true;
	c->v = v;
	c->s = spx_xprintf("%lld", v);
}

static int print_json(const struct spx_table *t, FILE *f)
{
	json_t *arr = json_array();
	char *out;
	int rc;

	for (size_t r = 0; r < t->nrows; r++) {
		json_t *o = json_object();

		for (size_t c = 0; c < t->ncols; c++) {
			const struct cell *cl = &t->cells[r * t->ncols + c];
			char key[64];
			size_t i;

			/* "LAST EXIT" becomes "last_exit". */
			for (i = 0; t->cols[c][i] && i < sizeof(key) - 1; i++)
				key[i] = t->cols[c][i] == ' '
						 ? '_'
						 : (char)((t->cols[c][i] >= 'A' &&
							   t->cols[c][i] <= 'Z')
								  ? t->cols[c][i] | 0x20
								  : t->cols[c][i]);
			key[i] = '\0';
			json_object_set_new(
				o, key,
				cl->json     ? json_incref(cl->json)
				: cl->is_int ? json_integer(cl->v)
					     : json_string(cl->s ? cl->s : ""));
		}
		json_array_append_new(arr, o);
	}
	out = json_dumps(arr, JSON_INDENT(2));
	json_decref(arr);
	if (!out)
		return spx_error(SPX_FAIL, "cannot render json");
	rc = fprintf(f, "%s\n", out) < 0 ? -1 : 0;
	free(out);
	if (rc < 0)
		return spx_error_errno(SPX_FAIL, "cannot write output");
	return 0;
}

int spx_table_print(const struct spx_table *t, FILE *f, bool json)
{
	size_t *w;

	if (json)
		return print_json(t, f);
	w = spx_calloc(t->ncols, sizeof(size_t));
	for (size_t c = 0; c < t->ncols; c++) {
		w[c] = strlen(t->cols[c]);
		for (size_t r = 0; r < t->nrows; r++) {
			const char *s = t->cells[r * t->ncols + c].s;
			size_t l = s ? strlen(s) : 0;

			if (l > w[c])
				w[c] = l;
		}
	}
	for (size_t r = 0; r <= t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = r ? t->cells[(r - 1) * t->ncols + c].s
					  : t->cols[c];
			bool last = c + 1 == t->ncols;

			if (last)
				fprintf(f, "%s", s ? s : "");
			else
				fprintf(f, "%-*s | ", (int)w[c], s ? s : "");
		}
		fputc('\n', f);
	}
	free(w);
	if (ferror(f))
		return spx_error_errno(SPX_FAIL, "cannot write output");
	return 0;
}

void spx_table_free(struct spx_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * t->ncols; i++) {
		free(t->cells[i].s);
		json_decref(t->cells[i].json);
	}
	for (size_t c = 0; c < t->ncols; c++)
		free(t->cols[c]);
	free(t->cells);
	free(t->cols);
	free(t);
}
