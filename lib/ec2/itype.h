/* itype.h: the instance type catalogue (DescribeInstanceTypes).
 *
 * A static table of every size AWS sells in the t3, m6i, c6i, r6i, m8i,
 * c8i and g6 families, with the figures DescribeInstanceTypes returns for
 * them. The catalogue, not any model's InstanceType enum, decides which
 * types exist here (Debian's botocore model predates m8i and c8i).
 *
 * Sources: the "Amazon EC2 instance type specifications" pages (general
 * purpose, compute optimized, memory optimized, accelerated computing:
 * family summary, performance, network, EBS, instance store and security
 * tables) and "Amazon EBS-optimized instance types". Where a figure was
 * not found there the table says so at the family (itype.c) and the
 * member is left out of the JSON rather than invented.
 *
 * Iteration order is the table's: families in the order above, each from
 * its smallest size to its largest, bare metal last. It never changes
 * between calls, so it can back paging.
 */
#ifndef SPX_EC2_ITYPE_H
#define SPX_EC2_ITYPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bits of spx_itype.flags. */
enum {
	SPX_IT_METAL = 1u << 0,		 /* BareMetal; no Hypervisor */
	SPX_IT_BURSTABLE = 1u << 1,	 /* BurstablePerformanceSupported */
	SPX_IT_FREE_TIER = 1u << 2,	 /* FreeTierEligible */
	SPX_IT_HIBERNATION = 1u << 3,	 /* HibernationSupported */
	SPX_IT_DEDICATED_HOSTS = 1u << 4, /* DedicatedHostsSupported */
	SPX_IT_AUTO_RECOVERY = 1u << 5,	 /* AutoRecoverySupported */
	SPX_IT_ENA_SRD = 1u << 6,	 /* EnaSrdSupported (ENA Express) */
	SPX_IT_ENCRYPT_TRANSIT = 1u << 7, /* EncryptionInTransitSupported */
	SPX_IT_NITRO_ENCLAVES = 1u << 8, /* NitroEnclavesSupport */
	SPX_IT_NITRO_TPM = 1u << 9,	 /* NitroTpmSupport (TPM 2.0) */
	SPX_IT_CLUSTER_PG = 1u << 10,	 /* "cluster" placement groups */
	SPX_IT_BW_WEIGHTING = 1u << 11,	 /* BandwidthWeightings vpc-1, ebs-1 */
};

struct spx_itype_gpu {
	const char *name;	  /* "L4" */
	const char *manufacturer; /* "NVIDIA" */
	int count;		  /* 0: no GPU */
	int memory_mib;		  /* per GPU */
};

struct spx_itype {
	const char *name;	  /* "m6i.large" */
	int vcpus;		  /* DefaultVCpus */
	int cores;		  /* DefaultCores */
	int threads_per_core;	  /* DefaultThreadsPerCore */
	int64_t memory_mib;	  /* MemoryInfo.SizeInMiB */
	const char *processor;	  /* "Intel Xeon Ice Lake" (for people) */
	const char *manufacturer; /* ProcessorInfo.Manufacturer */
	double clock_ghz;	  /* SustainedClockSpeedInGhz; 0: unknown */
	/* ValidCores: 0 none listed (bare metal takes no CPU options);
	 * 1 every count 1..cores; 2 even counts 2..cores (1..cores for up
	 * to 2 cores). */
	int core_rule;
	unsigned flags;		  /* SPX_IT_* */
	/* NetworkInfo */
	const char *network_performance; /* "Up to 12.5 Gigabit" */
	double net_baseline_gbps, net_peak_gbps;
	int max_enis;		  /* MaximumNetworkInterfaces (one card) */
	int ipv4_per_eni;	  /* also Ipv6AddressesPerInterface */
	int efa_interfaces;	  /* EfaInfo.MaximumEfaInterfaces; 0: no EFA */
	/* EbsInfo.EbsOptimizedInfo */
	int ebs_baseline_mbps, ebs_max_mbps;
	double ebs_baseline_mbs, ebs_max_mbs;
	int ebs_baseline_iops, ebs_max_iops;
	/* InstanceStorageInfo: disk_count disks of disk_gb GB NVMe SSD */
	int disk_count, disk_gb;
	struct spx_itype_gpu gpu;
};

/* The number of types, and the i-th (0 <= i < spx_itype_count()). */
size_t spx_itype_count(void);
const struct spx_itype *spx_itype_at(size_t i);
/* The type of that exact name, or NULL (no error recorded). */
const struct spx_itype *spx_itype_find(const char *name);
/* Split "m6i.large" into family "m6i" and size "large" (at most cap
 * bytes each, NUL included). Returns 0, or -1 for a malformed name. */
int spx_itype_split(const char *name, char *family, char *size, size_t cap);

/* ValidCores of t into out (at most cap values); returns how many there
 * are (0 for bare metal). ValidThreadsPerCore is {1, threads_per_core}
 * when threads_per_core is 2, else {1}, and likewise none for bare metal:
 * spx_itype_valid_threads. */
size_t spx_itype_valid_cores(const struct spx_itype *t, int *out, size_t cap);
size_t spx_itype_valid_threads(const struct spx_itype *t, int *out,
			       size_t cap);

/* One entry as a DescribeInstanceTypes InstanceTypeInfo: a new object
 * (the caller decrefs it) whose member names are the botocore model's
 * ("VCpuInfo": {"DefaultVCpus": 2, ...}). Members the 2016-11-15 model
 * of botocore 1.43 added after Debian's copy (ProcessorInfo.Manufacturer,
 * NitroEnclavesSupport, NitroTpmSupport, NitroTpmInfo,
 * NetworkCards[].BaselineBandwidthInGbps/PeakBandwidthInGbps,
 * BandwidthWeightings) are included under those names. */
json_t *spx_itype_json(const struct spx_itype *t);

#endif
