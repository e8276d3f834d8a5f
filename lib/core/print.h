/* print.h: one print layer for people and for machines.
 *
 * A command fills a table with the same calls whatever the output mode;
 * spx_table_print renders it as aligned columns ("NAME  | STATUS | ...")
 * or, with json set, as a JSON array of objects keyed by the lower-cased
 * column names, spaces as '_' (iproute2's print_*(PRINT_ANY, ...) idea).
 *
 *   struct spx_table *t = spx_table_new("NAME", "STATUS", NULL);
 *   spx_table_row(t);
 *   spx_table_str(t, "node1");
 *   spx_table_int(t, 0);
 *   spx_table_print(t, stdout, json);
 *   spx_table_free(t);
 */
#ifndef SPX_PRINT_H
#define SPX_PRINT_H

#include "spx.h"

struct spx_table;

struct spx_table *spx_table_new(const char *col, ...)
	__attribute__((sentinel));
void spx_table_row(struct spx_table *t);
void spx_table_str(struct spx_table *t, const char *s);
void spx_table_int(struct spx_table *t, long long v);
/* A cell that reads as text in the table and as the JSON value v (a
 * jansson json_t, whose reference the table takes) with --json. */
struct json_t;
void spx_table_json(struct spx_table *t, const char *text, struct json_t *v);
/* Print; returns 0, or -1 with an error recorded on a write failure. */
int spx_table_print(const struct spx_table *t, FILE *f, bool json);
void spx_table_free(struct spx_table *t);

#endif
