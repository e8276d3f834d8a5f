/* cmd.h: verb tables, option parsing and --help for every spx tool.
 *
 * A tool is a table of verbs; each row carries the verb's name (one or two
 * words: "serve", "admin init"), its function, its options and a one-line
 * summary. The usage text, --help, --list-verbs and --list-options (read by
 * scripts/gen-completions.sh) all come from the table, so they cannot
 * drift. Verbs match exactly, never by prefix.
 *
 *   static const struct spx_opt init_opts[] = {
 *       { "root", 'r', "DIR", "put everything under DIR" },
 *       { "force", 0, NULL, "overwrite an existing node" },
 *       { 0 } };
 *   static const struct spx_verb verbs[] = {
 *       { "admin init", cmd_init, init_opts, "", "initialise a node" },
 *       { 0 } };
 *   int main(int argc, char **argv) {
 *       static const struct spx_tool tool = { "spx", "...", verbs };
 *       return spx_cmd_main(&tool, argc, argv);
 *   }
 *
 * A verb function gets the parsed arguments and returns an exit status
 * (SPX_OK, SPX_NO, SPX_USAGE, SPX_FAIL). spx_cmd_main flushes and closes
 * stdout and fails with 111 if that fails (ENOSPC, EPIPE).
 */
#ifndef SPX_CMD_H
#define SPX_CMD_H

#include "spx.h"

struct spx_opt {
	const char *name;  /* long name, without "--" */
	char shortname;	   /* 0 for none */
	const char *arg;   /* argument placeholder ("DIR"), NULL for a flag */
	const char *help;
};

struct spx_args {
	const struct spx_verb *verb;
	struct spx_kvlist opts; /* long name -> value ("" for flags) */
	int argc;		/* positional arguments */
	char **argv;
};

struct spx_verb {
	const char *name;
	int (*fn)(const struct spx_args *a);
	const struct spx_opt *opts; /* terminated by a zeroed row; may be NULL */
	const char *operands;	    /* "KEY [FILE]", "" for none */
	const char *summary;
	int min_args, max_args;	    /* positional bounds; max -1: unbounded */
};

struct spx_tool {
	const char *name;
	const char *summary;
	const struct spx_verb *verbs; /* terminated by a zeroed row */
	/* Called with the first word when no verb matches; NULL: usage error.
	 * Used by spx to exec spx-<tool>. */
	int (*fallback)(int argc, char **argv);
};

int spx_cmd_main(const struct spx_tool *tool, int argc, char **argv);

/* The --root option every node-facing verb takes (lib/node/node.h says how
 * a node is found without it). */
#define SPX_OPT_ROOT                                                       \
	{ "root", 'r', "DIR",                                              \
	  "the node root (default $SPX_ROOT, else /etc/spinifex)" }

/* The value of an option, or NULL when it was not given. */
const char *spx_arg(const struct spx_args *a, const char *name);
bool spx_flag(const struct spx_args *a, const char *name);
/* Parse an integer option in [min, max]; def when absent. -1 + error. */
int spx_arg_int(const struct spx_args *a, const char *name, long long min,
		long long max, long long def, long long *out);

/* Print "usage: ..." for a verb on stderr and return SPX_USAGE. */
int spx_usage(const struct spx_tool *tool, const struct spx_verb *v);
/* The tool currently running (valid inside a verb function). */
const struct spx_tool *spx_cmd_tool(void);

#endif
