/* Unit tests for lib/ec2/itype: every catalogue entry is self-consistent
 * (vCPUs = cores x threads, the valid lists hold the defaults, names are
 * unique and parse as family.size, families and sizes are the ones AWS
 * sells), a few figures pinned from the AWS specification pages, and the
 * JSON uses only the botocore model's member names. */
#include "spx.h"

#include <jansson.h>

#include "ec2/itype.h"
#include "t.h"

/* Every size AWS sells in each family, in catalogue order. */
static const struct {
	const char *family;
	const char *sizes[16];
} families[] = {
	{ "t3", { "nano", "micro", "small", "medium", "large", "xlarge",
		  "2xlarge" } },
	{ "m6i", { "large", "xlarge", "2xlarge", "4xlarge", "8xlarge",
		   "12xlarge", "16xlarge", "24xlarge", "32xlarge", "metal" } },
	{ "c6i", { "large", "xlarge", "2xlarge", "4xlarge", "8xlarge",
		   "12xlarge", "16xlarge", "24xlarge", "32xlarge", "metal" } },
	{ "r6i", { "large", "xlarge", "2xlarge", "4xlarge", "8xlarge",
		   "12xlarge", "16xlarge", "24xlarge", "32xlarge", "metal" } },
	{ "m8i", { "large", "xlarge", "2xlarge", "4xlarge", "8xlarge",
		   "12xlarge", "16xlarge", "24xlarge", "32xlarge", "48xlarge",
		   "96xlarge", "metal-48xl", "metal-96xl" } },
	{ "c8i", { "large", "xlarge", "2xlarge", "4xlarge", "8xlarge",
		   "12xlarge", "16xlarge", "24xlarge", "32xlarge", "48xlarge",
		   "96xlarge", "metal-48xl", "metal-96xl" } },
	{ "g6", { "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge",
		  "16xlarge", "24xlarge", "48xlarge" } },
};

static bool contains(const int *v, size_t n, int x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static void test_catalogue_order(void)
{
	size_t i = 0;

	for (size_t f = 0; f < SPX_ARRAY_SIZE(families); f++)
		for (size_t s = 0; families[f].sizes[s]; s++, i++) {
			char want[64];
			const struct spx_itype *t = spx_itype_at(i);

			snprintf(want, sizeof(want), "%s.%s",
				 families[f].family, families[f].sizes[s]);
			T_STR(t ? t->name : NULL, want, "entry %zu is %s", i,
			      want);
		}
	T_INT(spx_itype_count(), i, "%zu types, no more", i);
	T_OK(spx_itype_at(spx_itype_count()) == NULL, "past the end");
}

static void test_entries(void)
{
	size_t n = spx_itype_count();

	for (size_t i = 0; i < n; i++) {
		const struct spx_itype *t = spx_itype_at(i);
		char fam[32], size[32];
		int v[512];
		size_t nc, nt;
		bool metal = t->flags & SPX_IT_METAL;

		T_OK(t->vcpus == t->cores * t->threads_per_core,
		     "%s: %d vCPUs = %d cores x %d threads", t->name, t->vcpus,
		     t->cores, t->threads_per_core);
		T_OK(spx_itype_split(t->name, fam, size, sizeof(fam)) == 0,
		     "%s: family.size", t->name);
		T_OK(spx_itype_find(t->name) == t, "%s: found by name, once",
		     t->name);
		T_OK(!strncmp(size, "metal", 5) == metal,
		     "%s: bare metal exactly when the size says so", t->name);
		nc = spx_itype_valid_cores(t, v, SPX_ARRAY_SIZE(v));
		T_OK(metal ? nc == 0
			   : nc > 0 && nc <= SPX_ARRAY_SIZE(v) &&
				     contains(v, nc, t->cores),
		     "%s: ValidCores holds the default", t->name);
		for (size_t j = 1; !metal && j < nc; j++)
			if (v[j] <= v[j - 1] || v[j] > t->cores)
				T_OK(0, "%s: ValidCores ascending, at most %d",
				     t->name, t->cores);
		nt = spx_itype_valid_threads(t, v, SPX_ARRAY_SIZE(v));
		T_OK(metal ? nt == 0 : contains(v, nt, t->threads_per_core),
		     "%s: ValidThreadsPerCore holds the default", t->name);
		T_OK(t->memory_mib > 0 && t->memory_mib % 512 == 0,
		     "%s: memory %lld MiB", t->name, (long long)t->memory_mib);
		T_OK(t->net_baseline_gbps > 0 &&
			     t->net_baseline_gbps <= t->net_peak_gbps,
		     "%s: network baseline <= peak", t->name);
		T_OK(strstr(t->network_performance, "Gigabit") &&
			     !strncmp(t->network_performance, "Up to ", 6) ==
				     (t->net_baseline_gbps < t->net_peak_gbps),
		     "%s: '%s' says Up to exactly when it bursts", t->name,
		     t->network_performance);
		T_OK(t->ebs_baseline_mbps > 0 &&
			     t->ebs_baseline_mbps <= t->ebs_max_mbps &&
			     t->ebs_baseline_iops <= t->ebs_max_iops &&
			     t->ebs_baseline_mbs <= t->ebs_max_mbs,
		     "%s: EBS baseline <= maximum", t->name);
		/* Throughput is bandwidth / 8 wherever AWS publishes both. */
		T_OK(t->ebs_max_mbs * 8 > t->ebs_max_mbps - 1 &&
			     t->ebs_max_mbs * 8 < t->ebs_max_mbps + 1,
		     "%s: EBS MB/s = Mbps / 8", t->name);
		T_OK(t->max_enis > 0 && t->ipv4_per_eni > 0, "%s: ENIs",
		     t->name);
		T_OK(!(t->flags & SPX_IT_HIBERNATION) ||
			     (!metal && t->memory_mib < 150 * 1024),
		     "%s: no hibernation for metal or >= 150 GiB", t->name);
		T_OK((t->gpu.count > 0) == !strcmp(fam, "g6"),
		     "%s: GPUs exactly on g6", t->name);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (!strcmp(spx_itype_at(i)->name,
				    spx_itype_at(j)->name))
				T_OK(0, "duplicate name %s",
				     spx_itype_at(i)->name);
}

static void test_split(void)
{
	static const struct {
		const char *in, *fam, *size;
	} cases[] = {
		{ "m6i.large", "m6i", "large" },
		{ "m8i.metal-96xl", "m8i", "metal-96xl" },
		{ "t3", NULL, NULL },
		{ ".large", NULL, NULL },
		{ "m6i.", NULL, NULL },
		{ "m6i.large.x", NULL, NULL },
		{ "M6I.large", NULL, NULL },
		{ "m6i.la rge", NULL, NULL },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		char f[32], s[32];
		int rc = spx_itype_split(cases[i].in, f, s, sizeof(f));

		T_INT(rc, cases[i].fam ? 0 : -1, "split '%s'", cases[i].in);
		if (!rc && cases[i].fam) {
			T_STR(f, cases[i].fam, "family of '%s'", cases[i].in);
			T_STR(s, cases[i].size, "size of '%s'", cases[i].in);
		}
	}
	T_OK(spx_itype_find("m6i.huge") == NULL, "unknown type");
	T_OK(spx_itype_find("M6I.LARGE") == NULL, "names are exact");
}

/* Figures from the AWS specification pages, pinned. */
static void test_pinned(void)
{
	const struct spx_itype *t;
	int v[512];
	size_t n;

	t = spx_itype_find("m6i.large");
	T_OK(t && t->vcpus == 2 && t->memory_mib == 8192, "m6i.large 2/8 GiB");
	T_STR(t->network_performance, "Up to 12.5 Gigabit", "m6i.large net");
	T_INT(t->ebs_baseline_mbps, 650, "m6i.large EBS baseline");
	T_INT(t->ebs_max_iops, 40000, "m6i.large EBS max IOPS");
	T_INT(t->max_enis, 3, "m6i.large ENIs");
	T_INT(t->ipv4_per_eni, 10, "m6i.large IPs per ENI");
	T_OK(!(t->flags & SPX_IT_NITRO_ENCLAVES), "no enclaves on .large");
	t = spx_itype_find("m6i.32xlarge");
	T_INT(t->efa_interfaces, 1, "m6i.32xlarge EFA");
	n = spx_itype_valid_cores(t, v, SPX_ARRAY_SIZE(v));
	T_INT(n, 32, "m6i.32xlarge: 32 even core counts");
	t = spx_itype_find("c6i.4xlarge");
	T_OK(t && t->memory_mib == 32768, "c6i.4xlarge 32 GiB");
	t = spx_itype_find("r6i.large");
	T_OK(t && t->memory_mib == 16384, "r6i.large 16 GiB");
	t = spx_itype_find("m8i.96xlarge");
	T_OK(t && t->vcpus == 384 && t->memory_mib == 1572864,
	     "m8i.96xlarge 384 vCPUs, 1536 GiB");
	T_STR(t->network_performance, "100 Gigabit", "m8i.96xlarge net");
	T_INT(t->ebs_max_iops, 480000, "m8i.96xlarge IOPS");
	t = spx_itype_find("c8i.metal-48xl");
	T_OK(t && (t->flags & SPX_IT_METAL) && t->vcpus == 192 &&
		     t->memory_mib == 393216,
	     "c8i.metal-48xl bare metal 192/384 GiB");
	t = spx_itype_find("t3.micro");
	T_OK(t && (t->flags & SPX_IT_BURSTABLE) && t->memory_mib == 1024,
	     "t3.micro burstable 1 GiB");
	T_STR(t->network_performance, "Up to 5 Gigabit", "t3.micro net");
	T_INT(t->ebs_baseline_mbps, 87, "t3.micro EBS baseline");
	t = spx_itype_find("g6.12xlarge");
	T_OK(t && t->gpu.count == 4 && !strcmp(t->gpu.name, "L4"),
	     "g6.12xlarge 4 L4");
	T_OK(t->disk_count == 4 && t->disk_gb == 940, "g6.12xlarge 4 x 940 GB");
	T_STR(t->network_performance, "40 Gigabit", "g6.12xlarge net");
}

/* The member names of a botocore structure shape, recursively: every key
 * of the rendered JSON must be one. */
static int check_members(json_t *model, const char *shape, json_t *v,
			 const char *const *newer, const char *where)
{
	json_t *sh = json_object_get(json_object_get(model, "shapes"), shape);
	const char *type = json_string_value(json_object_get(sh, "type"));
	int bad = 0;

	if (!sh)
		return 0;
	if (type && !strcmp(type, "list") && json_is_array(v)) {
		json_t *m = json_object_get(json_object_get(sh, "member"),
					    "shape");
		size_t i;
		json_t *e;

		json_array_foreach(v, i, e)
			bad += check_members(model, json_string_value(m), e,
					     newer, where);
		return bad;
	}
	if (type && !strcmp(type, "structure") && json_is_object(v)) {
		json_t *mem = json_object_get(sh, "members"), *e;
		const char *k;

		json_object_foreach(v, k, e) {
			json_t *m = json_object_get(mem, k);
			bool ok = m != NULL;

			for (size_t i = 0; !ok && newer[i]; i++)
				ok = !strcmp(newer[i], k);
			if (!ok) {
				printf("#   %s: %s.%s is not in the model\n",
				       where, shape, k);
				bad++;
			}
			if (m)
				bad += check_members(
					model,
					json_string_value(
						json_object_get(m, "shape")),
					e, newer, where);
		}
	}
	return bad;
}

static void test_json(void)
{
	/* Debian's awscli model (early 2023), and the members botocore 1.43's
	 * copy of the same 2016-11-15 model added since. */
	static const char model_path[] =
		"/usr/lib/python3/dist-packages/awscli/botocore/data/ec2/"
		"2016-11-15/service-2.json";
	static const char *const newer[] = {
		"Manufacturer",		 "NitroEnclavesSupport",
		"NitroTpmSupport",	 "NitroTpmInfo",
		"BaselineBandwidthInGbps", "PeakBandwidthInGbps",
		"BandwidthWeightings",	 NULL
	};
	json_t *model = json_load_file(model_path, 0, NULL);
	const struct spx_itype *t = spx_itype_find("g6.48xlarge");
	json_t *o = spx_itype_json(t), *x;
	char *s;

	x = json_object_get(json_object_get(o, "VCpuInfo"), "DefaultVCpus");
	T_INT(json_integer_value(x), 192, "VCpuInfo.DefaultVCpus");
	x = json_object_get(json_object_get(o, "MemoryInfo"), "SizeInMiB");
	T_INT(json_integer_value(x), 786432, "MemoryInfo.SizeInMiB");
	x = json_object_get(json_object_get(o, "GpuInfo"),
			    "TotalGpuMemoryInMiB");
	T_INT(json_integer_value(x), 8 * 22888, "GpuInfo.TotalGpuMemoryInMiB");
	x = json_object_get(json_object_get(o, "InstanceStorageInfo"),
			    "TotalSizeInGB");
	T_INT(json_integer_value(x), 7520, "InstanceStorageInfo.TotalSizeInGB");
	T_STR(json_string_value(json_object_get(o, "Hypervisor")), "nitro",
	      "Hypervisor");
	s = json_dumps(o, JSON_COMPACT);
	T_OK(s && strstr(s, "\"ValidCores\":[1,2,3,") != NULL,
	     "ValidCores rendered");
	free(s);
	json_decref(o);

	o = spx_itype_json(spx_itype_find("m8i.metal-48xl"));
	T_OK(json_object_get(o, "Hypervisor") == NULL, "no Hypervisor on metal");
	T_OK(json_is_true(json_object_get(o, "BareMetal")), "BareMetal true");
	T_OK(json_object_get(json_object_get(o, "VCpuInfo"), "ValidCores") ==
		     NULL,
	     "no ValidCores on metal");
	json_decref(o);

	if (!model) {
		printf("ok %d - botocore model not installed # skip\n", ++t_n);
		return;
	}
	for (size_t i = 0; i < spx_itype_count(); i++) {
		t = spx_itype_at(i);
		o = spx_itype_json(t);
		T_INT(check_members(model, "InstanceTypeInfo", o, newer,
				    t->name),
		      0, "%s: every member is the model's", t->name);
		json_decref(o);
	}
	json_decref(model);
}

int main(int argc, char **argv)
{
	spx_set_progname(argv[0]);
	test_catalogue_order();
	test_entries();
	test_split();
	test_pinned();
	test_json();
	return t_done();
}
