/* query.c: helpers for the Query APIs: list parameters, EC2 filters,
 * DryRun. */
#include "spx.h"

#include "gw/gw_int.h"

bool gw_wildcard(const char *p, const char *s)
{
	/* Iterative glob with one backtrack point: linear enough for the
	 * short patterns EC2 filters carry, and no recursion. */
	const char *star = NULL, *ss = NULL;

	while (*s) {
		if (*p == '\\' && (p[1] == '*' || p[1] == '?' || p[1] == '\\') &&
		    p[1] == *s) {
			p += 2;
			s++;
		} else if (*p == '?' || (*p && *p != '*' && *p != '\\' && *p == *s)) {
			p++;
			s++;
		} else if (*p == '*') {
			star = p++;
			ss = s;
		} else if (star) {
			p = star + 1;
			s = ++ss;
		} else {
			return false;
		}
	}
	while (*p == '*')
		p++;
	return !*p;
}

/* Prefix.N parameters in numeric order of N. */
size_t gw_param_list(const struct spx_kvlist *params, const char *prefix,
		     const char ***out)
{
	size_t pl = strlen(prefix), n = 0;
	const char **vals = NULL;
	unsigned long *idx = NULL;

	for (size_t i = 0; i < params->n; i++) {
		const char *k = params->v[i].k;
		char *end;
		unsigned long v;

		if (strncmp(k, prefix, pl) || k[pl] != '.' || k[pl + 1] < '0' ||
		    k[pl + 1] > '9')
			continue;
		v = strtoul(k + pl + 1, &end, 10);
		if (*end)
			continue;
		vals = spx_realloc(vals, (n + 1) * sizeof(*vals));
		idx = spx_realloc(idx, (n + 1) * sizeof(*idx));
		/* insertion by index */
		size_t j = n;
		while (j > 0 && idx[j - 1] > v) {
			vals[j] = vals[j - 1];
			idx[j] = idx[j - 1];
			j--;
		}
		vals[j] = params->v[i].v;
		idx[j] = v;
		n++;
	}
	free(idx);
	*out = vals;
	return n;
}

void gw_filters_free(struct gw_filters *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		free(fs->f[i].values);
	free(fs->f);
	fs->f = NULL;
	fs->n = 0;
}

int gw_filters_parse(struct gw_req *g, struct spx_http_req *req,
		     struct spx_http_resp *resp, const char *const *known,
		     struct gw_filters *out)
{
	const struct spx_kvlist *p = &g->params;

	memset(out, 0, sizeof(*out));
	for (unsigned n = 1;; n++) {
		char key[64], pre[64];
		const char *name;
		struct gw_filter *f;
		bool ok = false;

		snprintf(key, sizeof(key), "Filter.%u.Name", n);
		name = spx_kv_get(p, key);
		if (!name) {
			/* Filter.N.Value.M without a name is an error. */
			snprintf(pre, sizeof(pre), "Filter.%u.Value", n);
			const char **v;
			size_t nv = gw_param_list(p, pre, &v);

			free(v);
			if (nv) {
				gw_error(g, req, resp, 400, "MissingParameter",
					 "The request must contain the "
					 "parameter Filter.%u.Name",
					 n);
				gw_filters_free(out);
				return -1;
			}
			break;
		}
		for (size_t k = 0; known && known[k]; k++)
			ok |= !strcmp(known[k], name);
		if (!ok) {
			gw_error(g, req, resp, 400, "InvalidParameterValue",
				 "The filter '%s' is invalid", name);
			gw_filters_free(out);
			return -1;
		}
		out->f = spx_realloc(out->f, (out->n + 1) * sizeof(*out->f));
		f = &out->f[out->n++];
		f->name = name;
		snprintf(pre, sizeof(pre), "Filter.%u.Value", n);
		f->n = gw_param_list(p, pre, &f->values);
		if (n > 200)
			break;
	}
	return 0;
}

bool gw_filters_match(const struct gw_filters *fs,
		      const char *(*get)(const void *item, const char *name),
		      const void *item)
{
	/* Filters AND together; the values of one filter OR. */
	for (size_t i = 0; i < fs->n; i++) {
		const char *v = get(item, fs->f[i].name);
		bool any = false;

		for (size_t j = 0; v && j < fs->f[i].n && !any; j++)
			any = gw_wildcard(fs->f[i].values[j], v);
		if (!any)
			return false;
	}
	return true;
}

bool gw_dry_run(struct gw_req *g, struct spx_http_req *req,
		struct spx_http_resp *resp)
{
	const char *d = spx_kv_get(&g->params, "DryRun");

	if (!d || strcasecmp(d, "true"))
		return false;
	gw_error(g, req, resp, 412, "DryRunOperation",
		 "Request would have succeeded, but DryRun flag is set.");
	return true;
}
