#include "spx.h"

#include "cmd.h"

static const struct spx_tool *current;

const struct spx_tool *spx_cmd_tool(void)
{
	return current;
}

static size_t words(const char *name)
{
	size_t n = 1;

	for (; *name; name++)
		n += *name == ' ';
	return n;
}

/* Do the first words of argv spell the verb's name ("admin init")? */
static bool matches(const struct spx_verb *v, int argc, char **argv)
{
	const char *p = v->name;
	size_t n = words(p);

	if ((size_t)argc < n)
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t l = strcspn(p, " ");

		if (strlen(argv[i]) != l || strncmp(argv[i], p, l))
			return false;
		p += l + (p[l] == ' ');
	}
	return true;
}

static void print_opts(FILE *f, const struct spx_verb *v)
{
	char left[64];

	if (!v->opts)
		return;
	for (const struct spx_opt *o = v->opts; o->name; o++) {
		if (o->shortname)
			snprintf(left, sizeof(left), "-%c, --%s%s%s",
				 o->shortname, o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "      %-26s %s\n", left, o->help);
	}
}

static void verb_line(FILE *f, const struct spx_tool *t,
		      const struct spx_verb *v)
{
	fprintf(f, "%s %s", t->name, v->name);
	if (v->opts)
		for (const struct spx_opt *o = v->opts; o->name; o++)
			fprintf(f, " [--%s%s%s]", o->name, o->arg ? " " : "",
				o->arg ? o->arg : "");
	if (v->operands && *v->operands)
		fprintf(f, " %s", v->operands);
	fputc('\n', f);
}

int spx_usage(const struct spx_tool *t, const struct spx_verb *v)
{
	if (v) {
		fputs("usage: ", stderr);
		verb_line(stderr, t, v);
		return SPX_USAGE;
	}
	fprintf(stderr, "usage: %s [-v] VERB [OPTIONS] [ARGS]\n", t->name);
	fprintf(stderr, "run '%s --help' for the verbs\n", t->name);
	return SPX_USAGE;
}

static void help(const struct spx_tool *t, const struct spx_verb *only)
{
	if (only) {
		fputs("usage: ", stdout);
		verb_line(stdout, t, only);
		printf("\n%s\n", only->summary);
		if (only->opts && only->opts->name) {
			printf("\noptions:\n");
			print_opts(stdout, only);
		}
		return;
	}
	printf("usage: %s [-v] VERB [OPTIONS] [ARGS]\n\n%s\n\nverbs:\n",
	       t->name, t->summary);
	for (const struct spx_verb *v = t->verbs; v->name; v++)
		printf("  %-22s %s\n", v->name, v->summary);
	printf("\ncommon options:\n"
	       "      -v                         more log output (repeat for "
	       "debug); SPX_LOG_LEVEL overrides\n"
	       "      -h, --help                 this text; VERB --help for "
	       "one verb\n"
	       "\nexit status: 0 success, 1 negative answer, 100 usage error, "
	       "111 system failure\n");
}

static const struct spx_opt *find_opt(const struct spx_verb *v,
				      const char *name, size_t len, char sh)
{
	if (!v->opts)
		return NULL;
	for (const struct spx_opt *o = v->opts; o->name; o++) {
		if (sh && o->shortname == sh)
			return o;
		if (!sh && strlen(o->name) == len &&
		    !strncmp(o->name, name, len))
			return o;
	}
	return NULL;
}

static int parse(const struct spx_tool *t, const struct spx_verb *v,
		 int argc, char **argv, struct spx_args *a)
{
	int i;

	a->verb = v;
	a->argv = spx_calloc((size_t)argc + 1, sizeof(char *));
	a->argc = 0;
	for (i = 0; i < argc; i++) {
		const char *s = argv[i];
		const struct spx_opt *o;
		const char *val = NULL;

		if (!strcmp(s, "--")) {
			for (i++; i < argc; i++)
				a->argv[a->argc++] = argv[i];
			break;
		}
		if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			help(t, v);
			return 1;
		}
		if (!strcmp(s, "-v")) {
			spx_log_more();
			continue;
		}
		if (s[0] != '-' || !s[1]) {
			a->argv[a->argc++] = argv[i];
			continue;
		}
		if (s[1] == '-') {
			const char *eq = strchr(s + 2, '=');
			size_t len = eq ? (size_t)(eq - s - 2) : strlen(s + 2);

			o = find_opt(v, s + 2, len, 0);
			if (eq)
				val = eq + 1;
		} else {
			o = s[2] ? NULL : find_opt(v, NULL, 0, s[1]);
		}
		if (!o) {
			spx_warn("%s: unknown option '%s'", v->name, s);
			return -1;
		}
		if (o->arg && !val) {
			if (i + 1 >= argc) {
				spx_warn("%s: option '--%s' needs %s", v->name,
					 o->name, o->arg);
				return -1;
			}
			val = argv[++i];
		} else if (!o->arg && val) {
			spx_warn("%s: option '--%s' takes no value", v->name,
				 o->name);
			return -1;
		}
		spx_kv_add(&a->opts, o->name, val ? val : "");
	}
	if (a->argc < v->min_args) {
		spx_warn("%s: missing operand", v->name);
		return -1;
	}
	if (v->max_args >= 0 && a->argc > v->max_args) {
		spx_warn("%s: unexpected operand '%s'", v->name,
			 a->argv[v->max_args]);
		return -1;
	}
	return 0;
}

static int finish(int status)
{
	/* stdout carries data: a failed write (ENOSPC, EPIPE) is a failure
	 * even when the verb succeeded. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		spx_warn_errno("cannot write to standard output");
		return SPX_FAIL;
	}
	if (fclose(stdout) != 0) {
		spx_warn_errno("cannot close standard output");
		return SPX_FAIL;
	}
	return status;
}

int spx_cmd_main(const struct spx_tool *t, int argc, char **argv)
{
	struct spx_args a = { 0 };
	const struct spx_verb *v;
	int i = 1, rc;

	current = t;
	spx_set_progname(argv[0]);
	if (spx_log_init() < 0)
		spx_die_last();
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v")) {
			spx_log_more();
		} else if (!strcmp(argv[i], "-h") ||
			   !strcmp(argv[i], "--help")) {
			help(t, NULL);
			return finish(SPX_OK);
		} else if (!strcmp(argv[i], "--list-verbs")) {
			for (v = t->verbs; v->name; v++)
				printf("%s\n", v->name);
			return finish(SPX_OK);
		} else if (!strcmp(argv[i], "--list-options")) {
			/* All options of one verb ("a b" for two words), or
			 * the global ones. */
			const char *want = i + 1 < argc ? argv[i + 1] : NULL;

			if (!want) {
				printf("--help\n-v\n--list-verbs\n"
				       "--list-options\n");
				return finish(SPX_OK);
			}
			for (v = t->verbs; v->name; v++) {
				if (strcmp(v->name, want))
					continue;
				printf("--help\n");
				if (v->opts)
					for (const struct spx_opt *o = v->opts;
					     o->name; o++)
						printf("--%s\n", o->name);
				return finish(SPX_OK);
			}
			spx_warn("unknown verb '%s'", want);
			return finish(SPX_USAGE);
		} else {
			spx_warn("unknown option '%s'", argv[i]);
			return spx_usage(t, NULL);
		}
	}
	if (i >= argc)
		return spx_usage(t, NULL);
	/* The longest name that matches wins: "admin account create" over
	 * "admin". */
	{
		const struct spx_verb *best = NULL;

		for (v = t->verbs; v->name; v++)
			if (matches(v, argc - i, argv + i) &&
			    (!best || words(v->name) > words(best->name)))
				best = v;
		v = best ? best : v;
	}
	if (!v->name) {
		if (t->fallback)
			return t->fallback(argc - i, argv + i);
		spx_warn("unknown verb '%s'", argv[i]);
		return spx_usage(t, NULL);
	}
	i += (int)words(v->name);
	rc = parse(t, v, argc - i, argv + i, &a);
	if (rc > 0) {
		rc = SPX_OK;
	} else if (rc < 0) {
		rc = spx_usage(t, v);
	} else {
		spx_error_clear();
		rc = v->fn(&a);
	}
	spx_kv_free(&a.opts);
	free(a.argv);
	return finish(rc);
}

const char *spx_arg(const struct spx_args *a, const char *name)
{
	const char *v = NULL;

	/* The last occurrence wins, as with getopt. */
	for (size_t i = 0; i < a->opts.n; i++)
		if (!strcmp(a->opts.v[i].k, name))
			v = a->opts.v[i].v;
	return v;
}

bool spx_flag(const struct spx_args *a, const char *name)
{
	return spx_arg(a, name) != NULL;
}

int spx_arg_int(const struct spx_args *a, const char *name, long long min,
		long long max, long long def, long long *out)
{
	const char *s = spx_arg(a, name);
	char *end;
	long long v;

	if (!s) {
		*out = def;
		return 0;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || *s == ' ' || *s == '+')
		return spx_error(SPX_USAGE, "--%s: '%s' is not a number", name,
				 s);
	if (v < min || v > max)
		return spx_error(SPX_USAGE,
				 "--%s: '%s' is out of range %lld..%lld", name,
				 s, min, max);
	*out = v;
	return 0;
}
