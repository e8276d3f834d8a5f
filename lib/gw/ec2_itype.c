/* ec2_itype.c: DescribeInstanceTypes and DescribeInstanceTypeOfferings
 * over the instance type catalogue (lib/ec2/itype.h). */
#include "spx.h"

#include "ec2/filter.h"
#include "ec2/itype.h"
#include "ec2/rec.h"
#include "ec2/region.h"
#include "gw/ec2_int.h"

/* The filters EC2 documents for DescribeInstanceTypes, as paths into an
 * InstanceTypeInfo item. */
static const struct spx_ec2_filter_field it_fields[] = {
	{ "auto-recovery-supported", "AutoRecoverySupported" },
	{ "bare-metal", "BareMetal" },
	{ "burstable-performance-supported", "BurstablePerformanceSupported" },
	{ "current-generation", "CurrentGeneration" },
	{ "dedicated-hosts-supported", "DedicatedHostsSupported" },
	{ "ebs-info.ebs-optimized-info.baseline-bandwidth-in-mbps",
	  "EbsInfo.EbsOptimizedInfo.BaselineBandwidthInMbps" },
	{ "ebs-info.ebs-optimized-info.baseline-iops",
	  "EbsInfo.EbsOptimizedInfo.BaselineIops" },
	{ "ebs-info.ebs-optimized-info.baseline-throughput-in-mbps",
	  "EbsInfo.EbsOptimizedInfo.BaselineThroughputInMBps" },
	{ "ebs-info.ebs-optimized-info.maximum-bandwidth-in-mbps",
	  "EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps" },
	{ "ebs-info.ebs-optimized-info.maximum-iops",
	  "EbsInfo.EbsOptimizedInfo.MaximumIops" },
	{ "ebs-info.ebs-optimized-info.maximum-throughput-in-mbps",
	  "EbsInfo.EbsOptimizedInfo.MaximumThroughputInMBps" },
	{ "ebs-info.ebs-optimized-support", "EbsInfo.EbsOptimizedSupport" },
	{ "ebs-info.encryption-support", "EbsInfo.EncryptionSupport" },
	{ "ebs-info.nvme-support", "EbsInfo.NvmeSupport" },
	{ "free-tier-eligible", "FreeTierEligible" },
	{ "hibernation-supported", "HibernationSupported" },
	{ "hypervisor", "Hypervisor" },
	{ "instance-storage-info.disk.count", "InstanceStorageInfo.Disks.Count" },
	{ "instance-storage-info.disk.size-in-gb",
	  "InstanceStorageInfo.Disks.SizeInGB" },
	{ "instance-storage-info.disk.type", "InstanceStorageInfo.Disks.Type" },
	{ "instance-storage-info.encryption-support",
	  "InstanceStorageInfo.EncryptionSupport" },
	{ "instance-storage-info.nvme-support",
	  "InstanceStorageInfo.NvmeSupport" },
	{ "instance-storage-info.total-size-in-gb",
	  "InstanceStorageInfo.TotalSizeInGB" },
	{ "instance-storage-supported", "InstanceStorageSupported" },
	{ "instance-type", "InstanceType" },
	{ "memory-info.size-in-mib", "MemoryInfo.SizeInMiB" },
	{ "network-info.efa-info.maximum-efa-interfaces",
	  "NetworkInfo.EfaInfo.MaximumEfaInterfaces" },
	{ "network-info.efa-supported", "NetworkInfo.EfaSupported" },
	{ "network-info.ena-support", "NetworkInfo.EnaSupport" },
	{ "network-info.encryption-in-transit-supported",
	  "NetworkInfo.EncryptionInTransitSupported" },
	{ "network-info.ipv4-addresses-per-interface",
	  "NetworkInfo.Ipv4AddressesPerInterface" },
	{ "network-info.ipv6-addresses-per-interface",
	  "NetworkInfo.Ipv6AddressesPerInterface" },
	{ "network-info.ipv6-supported", "NetworkInfo.Ipv6Supported" },
	{ "network-info.maximum-network-cards",
	  "NetworkInfo.MaximumNetworkCards" },
	{ "network-info.maximum-network-interfaces",
	  "NetworkInfo.MaximumNetworkInterfaces" },
	{ "network-info.network-performance", "NetworkInfo.NetworkPerformance" },
	{ "nitro-enclaves-support", "NitroEnclavesSupport" },
	{ "nitro-tpm-info.supported-versions", "NitroTpmInfo.SupportedVersions" },
	{ "nitro-tpm-support", "NitroTpmSupport" },
	{ "processor-info.supported-architecture",
	  "ProcessorInfo.SupportedArchitectures" },
	{ "processor-info.sustained-clock-speed-in-ghz",
	  "ProcessorInfo.SustainedClockSpeedInGhz" },
	{ "supported-boot-mode", "SupportedBootModes" },
	{ "supported-root-device-type", "SupportedRootDeviceTypes" },
	{ "supported-usage-class", "SupportedUsageClasses" },
	{ "supported-virtualization-type", "SupportedVirtualizationTypes" },
	{ "vcpu-info.default-cores", "VCpuInfo.DefaultCores" },
	{ "vcpu-info.default-threads-per-core", "VCpuInfo.DefaultThreadsPerCore" },
	{ "vcpu-info.default-vcpus", "VCpuInfo.DefaultVCpus" },
	{ "vcpu-info.valid-cores", "VCpuInfo.ValidCores" },
	{ "vcpu-info.valid-threads-per-core", "VCpuInfo.ValidThreadsPerCore" },
};
static const struct spx_ec2_filter_table it_filters = {
	it_fields, SPX_ARRAY_SIZE(it_fields), NULL
};

static const struct spx_ec2_filter_field off_fields[] = {
	{ "instance-type", "InstanceType" },
	{ "location", "Location" },
};
static const struct spx_ec2_filter_table off_filters = {
	off_fields, SPX_ARRAY_SIZE(off_fields), NULL
};

/* Items page in catalogue order: the sort key is the catalogue index,
 * zero-padded so that it sorts as text ("%05zu", then the location). */
static const char *sort_key(const json_t *item)
{
	return json_string_value(json_object_get(item, "SortKey"));
}

int ec2_describe_instance_types(struct ec2_call *c)
{
	const json_t *want = ec2_list(c, "InstanceTypes");
	uint16_t info = ec2q_shape_find(c->svc, "InstanceTypeInfo");
	struct spx_ec2_filters *fs = NULL;
	struct spx_ec2_pager pg;
	struct spx_ec2_page p;
	struct spx_buf bad = SPX_BUF_INIT;
	json_t *items = NULL, *e;
	size_t i;
	int rc = -1;

	/* The catalogue, not the model's enum, says which types exist. */
	json_array_foreach(want, i, e)
		if (!spx_itype_find(json_string_value(e)))
			spx_buf_addf(&bad, "%s%s", bad.len ? ", " : "",
				     json_string_value(e));
	if (bad.len) {
		spx_ec2_fault(400, "InvalidInstanceType",
			      "The following supplied instance types do not "
			      "exist: [%s]",
			      bad.p);
		spx_buf_release(&bad);
		return -1;
	}
	/* Without MaxResults EC2 answers pages of 100. */
	ec2_pager(c, 0, 0, 100, &pg);
	if (spx_ec2_page_begin(&pg, c->in, &p) < 0)
		return -1;
	if (spx_ec2_filters_compile(&it_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0)
		goto out;
	items = json_array();
	for (i = 0; i < spx_itype_count(); i++) {
		const struct spx_itype *t = spx_itype_at(i);
		char key[24];
		bool named = !json_array_size(want) ||
			     spx_ec2_has_string(want, t->name);

		snprintf(key, sizeof(key), "%05zu", i);
		if (!named || !spx_ec2_page_after(&p, key))
			continue;
		e = spx_itype_json(t);
		/* Filters see every member; the answer only the model's. */
		if (spx_ec2_filters_match(fs, e)) {
			ec2q_prune(c->svc, info, e);
			json_object_set_new(e, "SortKey", json_string(key));
			json_array_append(items, e);
		}
		json_decref(e);
	}
	if (ec2_page_answer(c, &p, items, sort_key, "InstanceTypes", "SortKey") < 0)
		goto out;
	rc = 0;
out:
	json_decref(items);
	spx_ec2_filters_free(fs);
	spx_ec2_page_release(&p);
	return rc;
}

int ec2_describe_instance_type_offerings(struct ec2_call *c)
{
	const char *lt = ec2_str(c, "LocationType");
	struct spx_ec2_filters *fs = NULL;
	struct spx_ec2_pager pg;
	struct spx_ec2_page p;
	json_t *locs, *items = NULL, *l;
	int rc = -1;

	if (!lt)
		lt = "region";
	locs = spx_ec2_locations(c->gw->conf, lt);
	if (!locs)
		return spx_ec2_fault_invalid("locationType", lt,
					     "Valid values are: region, "
					     "availability-zone, "
					     "availability-zone-id");
	ec2_pager(c, 0, 0, 1000, &pg);
	if (spx_ec2_page_begin(&pg, c->in, &p) < 0) {
		json_decref(locs);
		return -1;
	}
	if (spx_ec2_filters_compile(&off_filters,
				    json_object_get(c->in, "Filters"), &fs) < 0)
		goto out;
	items = json_array();
	for (size_t i = 0; i < spx_itype_count(); i++) {
		const struct spx_itype *t = spx_itype_at(i);
		size_t j;

		json_array_foreach(locs, j, l) {
			json_t *o = json_pack("{s:s, s:s, s:O}", "InstanceType",
					      t->name, "LocationType", lt,
					      "Location", l);
			char *key = spx_xprintf("%05zu %s", i,
						json_string_value(l));

			if (spx_ec2_filters_match(fs, o) &&
			    spx_ec2_page_after(&p, key)) {
				json_object_set_new(o, "SortKey",
						    json_string(key));
				json_array_append(items, o);
			}
			free(key);
			json_decref(o);
		}
	}
	if (ec2_page_answer(c, &p, items, sort_key, "InstanceTypeOfferings", "SortKey") < 0)
		goto out;
	rc = 0;
out:
	json_decref(items);
	json_decref(locs);
	spx_ec2_filters_free(fs);
	spx_ec2_page_release(&p);
	return rc;
}
