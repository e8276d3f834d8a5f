/* fuzz_ec2filter: EC2 filters and their wildcards on hostile input.
 *
 * The input is lines: a filter name, then its values, an empty line, then
 * another filter, ...; the filters are compiled against a table and
 * matched against a few items. Each (value, name) pair short enough is
 * also matched by spx_ec2_wildcard and by a plain recursive matcher here,
 * which must agree. */
#include "spx.h"

#include "ec2/fault.h"
#include "ec2/filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reference: exponential, so only for short inputs. Byte-wise '?'
 * agrees with the real one on ASCII subjects only. */
static bool ref(const char *p, const char *s)
{
	if (!*p)
		return !*s;
	if (*p == '*')
		return ref(p + 1, s) || (*s && ref(p, s + 1));
	if (!*s)
		return false;
	if (*p == '?')
		return ref(p + 1, s + 1);
	if (*p == '\\' && p[1])
		return p[1] == *s && ref(p + 2, s + 1);
	return *p == *s && ref(p + 1, s + 1);
}

static const struct spx_ec2_filter_field fields[] = {
	{ "name", "Name" },
	{ "vcpus", "VCpuInfo.DefaultVCpus" },
	{ "arch", "ProcessorInfo.SupportedArchitectures" },
};
static const struct spx_ec2_filter_table table = {
	fields, SPX_ARRAY_SIZE(fields), "Tags"
};

static const char *const subjects[] = { "t3.micro", "us-east-1", "", "a*b?c",
					"\\", "aaaaaaaaaaaaaaaa" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *filters = json_array(), *cur = NULL, *items;
	struct spx_ec2_filters *fs = NULL;
	const char *p = (const char *)data, *end = p + size;
	size_t i;
	json_t *e;

	if (size > 8192 || memchr(data, '\0', size))
		goto out;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		json_t *s = json_stringn(p, n);

		p += n + (nl ? 1 : 0);
		if (!s)
			continue; /* not UTF-8: the parser never gives that */
		if (!n) {
			cur = NULL;
			json_decref(s);
			continue;
		}
		if (!cur) {
			cur = json_pack("{s:o, s:[]}", "Name", s, "Values");
			json_array_append_new(filters, cur);
		} else {
			json_array_append_new(json_object_get(cur, "Values"), s);
		}
	}
	/* The wildcard against the reference. */
	json_array_foreach(filters, i, e) {
		const json_t *vals = json_object_get(e, "Values");
		size_t j;
		json_t *v;

		json_array_foreach(vals, j, v) {
			const char *pat = json_string_value(v);

			for (size_t k = 0; k < SPX_ARRAY_SIZE(subjects); k++)
				if (strlen(pat) <= 12 &&
				    spx_ec2_wildcard(pat, subjects[k]) !=
					    ref(pat, subjects[k]))
					abort();
			if (strlen(pat) <= 12 &&
			    spx_ec2_wildcard(pat, pat) != ref(pat, pat))
				abort();
		}
	}
	items = json_loads(
		"[{\"Name\":\"t3.micro\",\"VCpuInfo\":{\"DefaultVCpus\":2},"
		"\"ProcessorInfo\":{\"SupportedArchitectures\":[\"x86_64\"]},"
		"\"Tags\":[{\"Key\":\"k\",\"Value\":\"v\"}]},{\"Name\":\"\"}]",
		0, NULL);
	if (spx_ec2_filters_compile(&table, filters, &fs) < 0) {
		if (fs || !spx_ec2_fault_code(NULL))
			abort();
	} else {
		json_array_foreach(items, i, e)
			(void)spx_ec2_filters_match(fs, e);
	}
	json_decref(items);
	spx_ec2_filters_free(fs);
out:
	json_decref(filters);
	return 0;
}
