/* filter.c: EC2's Describe filters over JSON items (see filter.h). */
#include "spx.h"

#include "ec2/fault.h"
#include "ec2/filter.h"

/* One character of UTF-8: the lead byte and its continuation bytes. */
static const char *next_char(const char *s)
{
	s++;
	while ((*s & 0xc0) == 0x80)
		s++;
	return s;
}

bool spx_ec2_wildcard(const char *p, const char *s)
{
	/* Glob with one backtrack point, the last '*' seen: a later star
	 * subsumes what an earlier one could have matched, so this is exact
	 * and takes at most |p| * |s| steps. */
	const char *star_p = NULL, *star_s = NULL;

	while (*s) {
		if (*p == '*') {
			star_p = ++p;
			star_s = s;
			continue;
		}
		if (*p == '?') {
			p++;
			s = next_char(s);
			continue;
		}
		if (*p == '\\' && p[1]) {
			if (p[1] == *s) {
				p += 2;
				s++;
				continue;
			}
		} else if (*p && *p == *s) {
			p++;
			s++;
			continue;
		}
		if (!star_p)
			return false;
		p = star_p;
		s = star_s = next_char(star_s);
	}
	while (*p == '*')
		p++;
	return !*p;
}

static bool leaf_text(const json_t *v, bool (*fn)(void *, const char *),
		      void *ctx)
{
	char b[40];

	switch (json_typeof(v)) {
	case JSON_STRING:
		return fn(ctx, json_string_value(v));
	case JSON_INTEGER:
		snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(v));
		return fn(ctx, b);
	case JSON_REAL:
		snprintf(b, sizeof(b), "%.15g", json_real_value(v));
		return fn(ctx, b);
	case JSON_TRUE:
		return fn(ctx, "true");
	case JSON_FALSE:
		return fn(ctx, "false");
	default:
		return false;
	}
}

static bool path_any(const json_t *v, const char *path,
		     bool (*fn)(void *, const char *), void *ctx, int depth)
{
	size_t i;
	json_t *e;

	if (!v || depth > 16)
		return false;
	if (json_is_array(v)) {
		json_array_foreach(v, i, e)
			if (path_any(e, path, fn, ctx, depth + 1))
				return true;
		return false;
	}
	if (!*path)
		return leaf_text(v, fn, ctx);
	if (!json_is_object(v))
		return false;

	const char *dot = strchr(path, '.');
	size_t n = dot ? (size_t)(dot - path) : strlen(path);
	char name[128];

	if (n >= sizeof(name))
		return false;
	memcpy(name, path, n);
	name[n] = '\0';
	return path_any(json_object_get(v, name), dot ? dot + 1 : "", fn, ctx,
			depth + 1);
}

bool spx_ec2_json_path_any(const json_t *item, const char *path,
			   bool (*fn)(void *ctx, const char *value),
			   void *ctx)
{
	return path_any(item, path, fn, ctx, 0);
}

enum kind { BY_PATH, BY_TAG, BY_TAG_KEY, BY_TAG_VALUE };

struct filt {
	const char *name;
	enum kind kind;
	const char *path;   /* BY_PATH */
	const char *tagkey; /* BY_TAG */
	const json_t *values;
};

struct spx_ec2_filters {
	const char *tags;
	size_t n;
	struct filt f[];
};

void spx_ec2_filters_free(struct spx_ec2_filters *f)
{
	free(f);
}

static int limit(void)
{
	return spx_ec2_fault(400, "FilterLimitExceeded",
			     "The maximum number of filter values specified on "
			     "a single call is %d",
			     SPX_EC2_MAX_FILTER_VALUES);
}

int spx_ec2_filters_compile(const struct spx_ec2_filter_table *t,
			    const json_t *filters,
			    struct spx_ec2_filters **out)
{
	struct spx_ec2_filters *fs;
	size_t n = json_array_size(filters), nvalues = 0, i;
	json_t *e;

	*out = NULL;
	if (!n)
		return 0;
	if (n > SPX_EC2_MAX_FILTERS)
		return limit();
	fs = spx_calloc(1, sizeof(*fs) + n * sizeof(fs->f[0]));
	fs->tags = t->tags;
	json_array_foreach(filters, i, e) {
		const char *name = json_string_value(json_object_get(e, "Name"));
		const json_t *vals = json_object_get(e, "Values");
		struct filt *f = &fs->f[fs->n];
		size_t j;
		json_t *v;
		char where[64];

		if (!name) {
			snprintf(where, sizeof(where), "Filter.%zu.Name", i + 1);
			spx_ec2_fault_missing(where);
			goto fail;
		}
		nvalues += json_array_size(vals);
		if (nvalues > SPX_EC2_MAX_FILTER_VALUES) {
			limit();
			goto fail;
		}
		json_array_foreach(vals, j, v)
			if (!json_is_string(v) ||
			    json_string_length(v) > SPX_EC2_MAX_FILTER_VALUE) {
				snprintf(where, sizeof(where),
					 "Filter.%zu.Value.%zu", i + 1, j + 1);
				spx_ec2_fault_invalid(where, "...",
						"A filter value is at most 1024 "
						"bytes long.");
				goto fail;
			}
		f->name = name;
		f->values = vals;
		if (t->tags && !strncmp(name, "tag:", 4) && name[4]) {
			f->kind = BY_TAG;
			f->tagkey = name + 4;
		} else if (t->tags && !strcmp(name, "tag-key")) {
			f->kind = BY_TAG_KEY;
		} else if (t->tags && !strcmp(name, "tag-value")) {
			f->kind = BY_TAG_VALUE;
		} else {
			size_t k;

			for (k = 0; k < t->n && strcmp(t->fields[k].name, name);
			     k++)
				;
			if (k == t->n) {
				spx_ec2_fault(400, "InvalidParameterValue",
					      "The filter '%s' is invalid", name);
				goto fail;
			}
			f->kind = BY_PATH;
			f->path = t->fields[k].path;
		}
		fs->n++;
	}
	*out = fs;
	return 0;
fail:
	free(fs);
	return -1;
}

const json_t *spx_ec2_filters_values(const struct spx_ec2_filters *f,
				     const char *name)
{
	for (size_t i = 0; f && i < f->n; i++)
		if (!strcmp(f->f[i].name, name))
			return f->f[i].values;
	return NULL;
}

/* Does value match one of the filter's values? */
static bool any_value(void *ctx, const char *value)
{
	const json_t *vals = ctx;
	size_t i;
	json_t *v;

	json_array_foreach(vals, i, v)
		if (spx_ec2_wildcard(json_string_value(v), value))
			return true;
	return false;
}

static bool one(const struct spx_ec2_filters *fs, const struct filt *f,
		const json_t *item)
{
	const json_t *tags = fs->tags ? json_object_get(item, fs->tags) : NULL;
	size_t i;
	json_t *tag;

	switch (f->kind) {
	case BY_PATH:
		return spx_ec2_json_path_any(item, f->path, any_value,
					     (void *)f->values);
	case BY_TAG:
		json_array_foreach(tags, i, tag) {
			const char *k = json_string_value(json_object_get(tag, "Key"));
			const char *v = json_string_value(
				json_object_get(tag, "Value"));

			if (k && !strcmp(k, f->tagkey) &&
			    any_value((void *)f->values, v ? v : ""))
				return true;
		}
		return false;
	case BY_TAG_KEY:
	case BY_TAG_VALUE:
		json_array_foreach(tags, i, tag) {
			const char *s = json_string_value(json_object_get(
				tag, f->kind == BY_TAG_KEY ? "Key" : "Value"));

			if (any_value((void *)f->values, s ? s : ""))
				return true;
		}
		return false;
	}
	return false;
}

bool spx_ec2_filters_match(const struct spx_ec2_filters *fs,
			   const json_t *item)
{
	for (size_t i = 0; fs && i < fs->n; i++)
		if (!one(fs, &fs->f[i], item))
			return false;
	return true;
}
