/* itype.c: the instance type catalogue (contract in itype.h).
 *
 * Figures from the AWS "Amazon EC2 instance type specifications" pages
 * (general purpose, compute optimized, memory optimized, accelerated
 * computing) and "Amazon EBS-optimized instance types", read in 2026:
 *   - vCPUs, cores, threads per core, memory: the performance tables.
 *   - NetworkPerformance: "Up to <burst> Gigabit" where the network table
 *     gives baseline / burst, else "<bandwidth> Gigabit"; the baseline
 *     and burst are each card's BaselineBandwidthInGbps and
 *     PeakBandwidthInGbps. ENIs, addresses per ENI (IPv6 as many as
 *     IPv4), EFA and ENA Express: the network tables.
 *   - EbsOptimizedInfo: the EBS tables; sizes without a burst have
 *     baseline = maximum.
 *   - Nitro Enclaves and NitroTPM: the security tables; hibernation,
 *     Dedicated Hosts and bare metal: the family summaries. AWS does not
 *     hibernate bare metal or instances with 150 GiB of memory or more,
 *     so those sizes say false.
 * Gaps (not found in those pages; XXX: check against a real
 * DescribeInstanceTypes answer when one is at hand):
 *   - SustainedClockSpeedInGhz: 2.5 for t3 is what DescribeInstanceTypes
 *     answered for t3.micro and t3.large (captured in the test data of
 *     aws/amazon-ec2-instance-selector and aws/karpenter-provider-aws);
 *     3.5 for the Ice Lake families as it answered for m6idn (same CPU);
 *     3.9 for m8i/c8i is the "up to 3.9 GHz all-core turbo" of AWS's
 *     announcement, not a seen answer; g6 is left out (0): its CPU (AMD
 *     EPYC 7R13) answered 3.6 on inf2, but not seen for g6.
 *   - ValidCores: AWS's "Supported CPU options" table was not found;
 *     core_rule reproduces the pattern seen for t3/m5 (even counts, 1..n
 *     at up to 2 cores) on t3 and 6th generation Intel, and every count
 *     on m8i/c8i (as RDS lists for db.m8i) and g6. Unverified.
 *   - PhcSupport, MaximumEbsAttachments, the ENA queue counts and
 *     SupportedFeatures are left out: not found for these types.
 *   - GPU memory: AWS lists the L4 as "22 GiB" per GPU and 89 / 178 GiB
 *     for 4 / 8 GPUs, i.e. about 22.35 GiB each: 22888 MiB.
 *   - AutoRecoverySupported is false for g6 (instance store volumes rule
 *     out simplified automatic recovery) and true elsewhere.
 *   - FreeTierEligible: t3.micro only (accounts on the free tier plan
 *     also get t3.small; DescribeInstanceTypes answers per account).
 */
#include "spx.h"

#include "ec2/itype.h"

#define FREE SPX_IT_FREE_TIER
#define METAL SPX_IT_METAL
#define HIB SPX_IT_HIBERNATION
#define SRD SPX_IT_ENA_SRD
#define ENCL SPX_IT_NITRO_ENCLAVES
#define TPM SPX_IT_NITRO_TPM

/* What a family's sizes share. */
#define T3_FLAGS                                                             \
	(SPX_IT_BURSTABLE | SPX_IT_HIBERNATION | SPX_IT_DEDICATED_HOSTS |    \
	 SPX_IT_AUTO_RECOVERY | SPX_IT_NITRO_TPM)
#define GEN6_FLAGS                                                           \
	(SPX_IT_DEDICATED_HOSTS | SPX_IT_AUTO_RECOVERY |                     \
	 SPX_IT_ENCRYPT_TRANSIT | SPX_IT_CLUSTER_PG)
#define GEN8_FLAGS (GEN6_FLAGS | SPX_IT_BW_WEIGHTING)
#define G6_FLAGS                                                             \
	(SPX_IT_DEDICATED_HOSTS | SPX_IT_ENCRYPT_TRANSIT |                   \
	 SPX_IT_CLUSTER_PG | SPX_IT_NITRO_ENCLAVES | SPX_IT_NITRO_TPM)

#define SKYLAKE_T3                                                           \
	.threads_per_core = 2, .processor = "Intel Skylake P-8175",          \
	.manufacturer = "Intel", .clock_ghz = 2.5
#define ICE_LAKE                                                             \
	.threads_per_core = 2, .processor = "Intel Xeon Ice Lake",           \
	.manufacturer = "Intel", .clock_ghz = 3.5
#define GRANITE_RAPIDS                                                       \
	.threads_per_core = 2, .processor = "Intel Xeon Granite Rapids",     \
	.manufacturer = "Intel", .clock_ghz = 3.9
#define EPYC_7R13                                                            \
	.threads_per_core = 2, .processor = "AMD EPYC 7R13",                 \
	.manufacturer = "AMD", .clock_ghz = 0

#define NET(perf, base, peak, enis, ips, efa)                                \
	.network_performance = perf, .net_baseline_gbps = base,              \
	.net_peak_gbps = peak, .max_enis = enis, .ipv4_per_eni = ips,        \
	.efa_interfaces = efa
#define EBS(bw, bwmax, tp, tpmax, iops, iopsmax)                             \
	.ebs_baseline_mbps = bw, .ebs_max_mbps = bwmax,                      \
	.ebs_baseline_mbs = tp, .ebs_max_mbs = tpmax,                        \
	.ebs_baseline_iops = iops, .ebs_max_iops = iopsmax
#define DISKS(n, gb) .disk_count = n, .disk_gb = gb
#define L4(n) .gpu = { "L4", "NVIDIA", n, 22888 }

static const struct spx_itype types[] = {

	/* t3 */
	{ .name = "t3.nano", .vcpus = 2, .cores = 1, .memory_mib = 512,
	  SKYLAKE_T3, .core_rule = 2, .flags = T3_FLAGS,
	  NET("Up to 5 Gigabit", 0.032, 5, 2, 2, 0),
	  EBS(43, 2085, 5.38, 260.62, 250, 11800) },
	{ .name = "t3.micro", .vcpus = 2, .cores = 1, .memory_mib = 1024,
	  SKYLAKE_T3, .core_rule = 2, .flags = T3_FLAGS | FREE,
	  NET("Up to 5 Gigabit", 0.064, 5, 2, 2, 0),
	  EBS(87, 2085, 10.88, 260.62, 500, 11800) },
	{ .name = "t3.small", .vcpus = 2, .cores = 1, .memory_mib = 2048,
	  SKYLAKE_T3, .core_rule = 2, .flags = T3_FLAGS,
	  NET("Up to 5 Gigabit", 0.128, 5, 3, 4, 0),
	  EBS(174, 2085, 21.75, 260.62, 1000, 11800) },
	{ .name = "t3.medium", .vcpus = 2, .cores = 1, .memory_mib = 4096,
	  SKYLAKE_T3, .core_rule = 2, .flags = T3_FLAGS,
	  NET("Up to 5 Gigabit", 0.256, 5, 3, 6, 0),
	  EBS(347, 2085, 43.38, 260.62, 2000, 11800) },
	{ .name = "t3.large", .vcpus = 2, .cores = 1, .memory_mib = 8192,
	  SKYLAKE_T3, .core_rule = 2, .flags = T3_FLAGS,
	  NET("Up to 5 Gigabit", 0.512, 5, 3, 12, 0),
	  EBS(695, 2780, 86.88, 347.5, 4000, 15700) },
	{ .name = "t3.xlarge", .vcpus = 4, .cores = 2, .memory_mib = 16384,
	  SKYLAKE_T3, .core_rule = 2, .flags = T3_FLAGS,
	  NET("Up to 5 Gigabit", 1.024, 5, 4, 15, 0),
	  EBS(695, 2780, 86.88, 347.5, 4000, 15700) },
	{ .name = "t3.2xlarge", .vcpus = 8, .cores = 4, .memory_mib = 32768,
	  SKYLAKE_T3, .core_rule = 2, .flags = T3_FLAGS,
	  NET("Up to 5 Gigabit", 2.048, 5, 4, 15, 0),
	  EBS(695, 2780, 86.88, 347.5, 4000, 15700) },

	/* m6i */
	{ .name = "m6i.large", .vcpus = 2, .cores = 1, .memory_mib = 8192,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | TPM,
	  NET("Up to 12.5 Gigabit", 0.781, 12.5, 3, 10, 0),
	  EBS(650, 10000, 81.25, 1250, 3600, 40000) },
	{ .name = "m6i.xlarge", .vcpus = 4, .cores = 2, .memory_mib = 16384,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 1.562, 12.5, 4, 15, 0),
	  EBS(1250, 10000, 156.25, 1250, 6000, 40000) },
	{ .name = "m6i.2xlarge", .vcpus = 8, .cores = 4, .memory_mib = 32768,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 3.125, 12.5, 4, 15, 0),
	  EBS(2500, 10000, 312.5, 1250, 12000, 40000) },
	{ .name = "m6i.4xlarge", .vcpus = 16, .cores = 8, .memory_mib = 65536,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 6.25, 12.5, 8, 30, 0),
	  EBS(5000, 10000, 625, 1250, 20000, 40000) },
	{ .name = "m6i.8xlarge", .vcpus = 32, .cores = 16, .memory_mib = 131072,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | SRD | ENCL | TPM,
	  NET("12.5 Gigabit", 12.5, 12.5, 8, 30, 0),
	  EBS(10000, 10000, 1250, 1250, 40000, 40000) },
	{ .name = "m6i.12xlarge", .vcpus = 48, .cores = 24, .memory_mib = 196608,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("18.75 Gigabit", 18.75, 18.75, 8, 30, 0),
	  EBS(15000, 15000, 1875, 1875, 60000, 60000) },
	{ .name = "m6i.16xlarge", .vcpus = 64, .cores = 32, .memory_mib = 262144,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("25 Gigabit", 25, 25, 15, 50, 0),
	  EBS(20000, 20000, 2500, 2500, 80000, 80000) },
	{ .name = "m6i.24xlarge", .vcpus = 96, .cores = 48, .memory_mib = 393216,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("37.5 Gigabit", 37.5, 37.5, 15, 50, 0),
	  EBS(30000, 30000, 3750, 3750, 120000, 120000) },
	{ .name = "m6i.32xlarge", .vcpus = 128, .cores = 64, .memory_mib = 524288,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("50 Gigabit", 50, 50, 15, 50, 1),
	  EBS(40000, 40000, 5000, 5000, 160000, 160000) },
	{ .name = "m6i.metal", .vcpus = 128, .cores = 64, .memory_mib = 524288,
	  ICE_LAKE, .core_rule = 0, .flags = GEN6_FLAGS | METAL | SRD,
	  NET("50 Gigabit", 50, 50, 15, 50, 1),
	  EBS(40000, 40000, 5000, 5000, 160000, 160000) },

	/* c6i */
	{ .name = "c6i.large", .vcpus = 2, .cores = 1, .memory_mib = 4096,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | TPM,
	  NET("Up to 12.5 Gigabit", 0.781, 12.5, 3, 10, 0),
	  EBS(650, 10000, 81.25, 1250, 3600, 40000) },
	{ .name = "c6i.xlarge", .vcpus = 4, .cores = 2, .memory_mib = 8192,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 1.562, 12.5, 4, 15, 0),
	  EBS(1250, 10000, 156.25, 1250, 6000, 40000) },
	{ .name = "c6i.2xlarge", .vcpus = 8, .cores = 4, .memory_mib = 16384,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 3.125, 12.5, 4, 15, 0),
	  EBS(2500, 10000, 312.5, 1250, 12000, 40000) },
	{ .name = "c6i.4xlarge", .vcpus = 16, .cores = 8, .memory_mib = 32768,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 6.25, 12.5, 8, 30, 0),
	  EBS(5000, 10000, 625, 1250, 20000, 40000) },
	{ .name = "c6i.8xlarge", .vcpus = 32, .cores = 16, .memory_mib = 65536,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | SRD | ENCL | TPM,
	  NET("12.5 Gigabit", 12.5, 12.5, 8, 30, 0),
	  EBS(10000, 10000, 1250, 1250, 40000, 40000) },
	{ .name = "c6i.12xlarge", .vcpus = 48, .cores = 24, .memory_mib = 98304,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | SRD | ENCL | TPM,
	  NET("18.75 Gigabit", 18.75, 18.75, 8, 30, 0),
	  EBS(15000, 15000, 1875, 1875, 60000, 60000) },
	{ .name = "c6i.16xlarge", .vcpus = 64, .cores = 32, .memory_mib = 131072,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | SRD | ENCL | TPM,
	  NET("25 Gigabit", 25, 25, 15, 50, 0),
	  EBS(20000, 20000, 2500, 2500, 80000, 80000) },
	{ .name = "c6i.24xlarge", .vcpus = 96, .cores = 48, .memory_mib = 196608,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("37.5 Gigabit", 37.5, 37.5, 15, 50, 0),
	  EBS(30000, 30000, 3750, 3750, 120000, 120000) },
	{ .name = "c6i.32xlarge", .vcpus = 128, .cores = 64, .memory_mib = 262144,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("50 Gigabit", 50, 50, 15, 50, 1),
	  EBS(40000, 40000, 5000, 5000, 160000, 160000) },
	{ .name = "c6i.metal", .vcpus = 128, .cores = 64, .memory_mib = 262144,
	  ICE_LAKE, .core_rule = 0, .flags = GEN6_FLAGS | METAL | SRD,
	  NET("50 Gigabit", 50, 50, 15, 50, 1),
	  EBS(40000, 40000, 5000, 5000, 160000, 160000) },

	/* r6i */
	{ .name = "r6i.large", .vcpus = 2, .cores = 1, .memory_mib = 16384,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | TPM,
	  NET("Up to 12.5 Gigabit", 0.781, 12.5, 3, 10, 0),
	  EBS(650, 10000, 81.25, 1250, 3600, 40000) },
	{ .name = "r6i.xlarge", .vcpus = 4, .cores = 2, .memory_mib = 32768,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 1.562, 12.5, 4, 15, 0),
	  EBS(1250, 10000, 156.25, 1250, 6000, 40000) },
	{ .name = "r6i.2xlarge", .vcpus = 8, .cores = 4, .memory_mib = 65536,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 3.125, 12.5, 4, 15, 0),
	  EBS(2500, 10000, 312.5, 1250, 12000, 40000) },
	{ .name = "r6i.4xlarge", .vcpus = 16, .cores = 8, .memory_mib = 131072,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 6.25, 12.5, 8, 30, 0),
	  EBS(5000, 10000, 625, 1250, 20000, 40000) },
	{ .name = "r6i.8xlarge", .vcpus = 32, .cores = 16, .memory_mib = 262144,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("12.5 Gigabit", 12.5, 12.5, 8, 30, 0),
	  EBS(10000, 10000, 1250, 1250, 40000, 40000) },
	{ .name = "r6i.12xlarge", .vcpus = 48, .cores = 24, .memory_mib = 393216,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("18.75 Gigabit", 18.75, 18.75, 8, 30, 0),
	  EBS(15000, 15000, 1875, 1875, 60000, 60000) },
	{ .name = "r6i.16xlarge", .vcpus = 64, .cores = 32, .memory_mib = 524288,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("25 Gigabit", 25, 25, 15, 50, 0),
	  EBS(20000, 20000, 2500, 2500, 80000, 80000) },
	{ .name = "r6i.24xlarge", .vcpus = 96, .cores = 48, .memory_mib = 786432,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("37.5 Gigabit", 37.5, 37.5, 15, 50, 0),
	  EBS(30000, 30000, 3750, 3750, 120000, 120000) },
	{ .name = "r6i.32xlarge", .vcpus = 128, .cores = 64, .memory_mib = 1048576,
	  ICE_LAKE, .core_rule = 2, .flags = GEN6_FLAGS | SRD | ENCL | TPM,
	  NET("50 Gigabit", 50, 50, 15, 50, 1),
	  EBS(40000, 40000, 5000, 5000, 160000, 160000) },
	{ .name = "r6i.metal", .vcpus = 128, .cores = 64, .memory_mib = 1048576,
	  ICE_LAKE, .core_rule = 0, .flags = GEN6_FLAGS | METAL | SRD,
	  NET("50 Gigabit", 50, 50, 15, 50, 1),
	  EBS(40000, 40000, 5000, 5000, 160000, 160000) },

	/* m8i */
	{ .name = "m8i.large", .vcpus = 2, .cores = 1, .memory_mib = 8192,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | TPM,
	  NET("Up to 12.5 Gigabit", 0.937, 12.5, 3, 20, 0),
	  EBS(650, 10000, 81.25, 1250, 3600, 40000) },
	{ .name = "m8i.xlarge", .vcpus = 4, .cores = 2, .memory_mib = 16384,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 1.875, 12.5, 4, 30, 0),
	  EBS(1250, 10000, 156.25, 1250, 6000, 40000) },
	{ .name = "m8i.2xlarge", .vcpus = 8, .cores = 4, .memory_mib = 32768,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 15 Gigabit", 3.75, 15, 4, 30, 0),
	  EBS(2500, 10000, 312.5, 1250, 12000, 40000) },
	{ .name = "m8i.4xlarge", .vcpus = 16, .cores = 8, .memory_mib = 65536,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 15 Gigabit", 7.5, 15, 8, 50, 0),
	  EBS(5000, 10000, 625, 1250, 20000, 40000) },
	{ .name = "m8i.8xlarge", .vcpus = 32, .cores = 16, .memory_mib = 131072,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | SRD | ENCL | TPM,
	  NET("15 Gigabit", 15, 15, 10, 50, 0),
	  EBS(10000, 10000, 1250, 1250, 40000, 40000) },
	{ .name = "m8i.12xlarge", .vcpus = 48, .cores = 24, .memory_mib = 196608,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("22.5 Gigabit", 22.5, 22.5, 12, 50, 0),
	  EBS(15000, 15000, 1875, 1875, 60000, 60000) },
	{ .name = "m8i.16xlarge", .vcpus = 64, .cores = 32, .memory_mib = 262144,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("30 Gigabit", 30, 30, 16, 64, 0),
	  EBS(20000, 20000, 2500, 2500, 80000, 80000) },
	{ .name = "m8i.24xlarge", .vcpus = 96, .cores = 48, .memory_mib = 393216,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("40 Gigabit", 40, 40, 16, 64, 0),
	  EBS(30000, 30000, 3750, 3750, 120000, 120000) },
	{ .name = "m8i.32xlarge", .vcpus = 128, .cores = 64, .memory_mib = 524288,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("50 Gigabit", 50, 50, 24, 64, 0),
	  EBS(40000, 40000, 5000, 5000, 160000, 160000) },
	{ .name = "m8i.48xlarge", .vcpus = 192, .cores = 96, .memory_mib = 786432,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("75 Gigabit", 75, 75, 24, 64, 1),
	  EBS(60000, 60000, 7500, 7500, 240000, 240000) },
	{ .name = "m8i.96xlarge", .vcpus = 384, .cores = 192, .memory_mib = 1572864,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("100 Gigabit", 100, 100, 24, 64, 1),
	  EBS(80000, 80000, 10000, 10000, 480000, 480000) },
	{ .name = "m8i.metal-48xl", .vcpus = 192, .cores = 96, .memory_mib = 786432,
	  GRANITE_RAPIDS, .core_rule = 0, .flags = GEN8_FLAGS | METAL | SRD,
	  NET("75 Gigabit", 75, 75, 24, 64, 1),
	  EBS(60000, 60000, 7500, 7500, 240000, 240000) },
	{ .name = "m8i.metal-96xl", .vcpus = 384, .cores = 192, .memory_mib = 1572864,
	  GRANITE_RAPIDS, .core_rule = 0, .flags = GEN8_FLAGS | METAL | SRD,
	  NET("100 Gigabit", 100, 100, 24, 64, 1),
	  EBS(80000, 80000, 10000, 10000, 480000, 480000) },

	/* c8i */
	{ .name = "c8i.large", .vcpus = 2, .cores = 1, .memory_mib = 4096,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | TPM,
	  NET("Up to 12.5 Gigabit", 0.937, 12.5, 3, 20, 0),
	  EBS(650, 10000, 81.25, 1250, 3600, 40000) },
	{ .name = "c8i.xlarge", .vcpus = 4, .cores = 2, .memory_mib = 8192,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 12.5 Gigabit", 1.875, 12.5, 4, 30, 0),
	  EBS(1250, 10000, 156.25, 1250, 6000, 40000) },
	{ .name = "c8i.2xlarge", .vcpus = 8, .cores = 4, .memory_mib = 16384,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 15 Gigabit", 3.75, 15, 4, 30, 0),
	  EBS(2500, 10000, 312.5, 1250, 12000, 40000) },
	{ .name = "c8i.4xlarge", .vcpus = 16, .cores = 8, .memory_mib = 32768,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | ENCL | TPM,
	  NET("Up to 15 Gigabit", 7.5, 15, 8, 50, 0),
	  EBS(5000, 10000, 625, 1250, 20000, 40000) },
	{ .name = "c8i.8xlarge", .vcpus = 32, .cores = 16, .memory_mib = 65536,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | ENCL | TPM,
	  NET("15 Gigabit", 15, 15, 10, 50, 0),
	  EBS(10000, 10000, 1250, 1250, 40000, 40000) },
	{ .name = "c8i.12xlarge", .vcpus = 48, .cores = 24, .memory_mib = 98304,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | ENCL | TPM,
	  NET("22.5 Gigabit", 22.5, 22.5, 12, 50, 0),
	  EBS(15000, 15000, 1875, 1875, 60000, 60000) },
	{ .name = "c8i.16xlarge", .vcpus = 64, .cores = 32, .memory_mib = 131072,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | HIB | ENCL | TPM,
	  NET("30 Gigabit", 30, 30, 16, 64, 0),
	  EBS(20000, 20000, 2500, 2500, 80000, 80000) },
	{ .name = "c8i.24xlarge", .vcpus = 96, .cores = 48, .memory_mib = 196608,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("40 Gigabit", 40, 40, 16, 64, 0),
	  EBS(30000, 30000, 3750, 3750, 120000, 120000) },
	{ .name = "c8i.32xlarge", .vcpus = 128, .cores = 64, .memory_mib = 262144,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("50 Gigabit", 50, 50, 24, 64, 0),
	  EBS(40000, 40000, 5000, 5000, 160000, 160000) },
	{ .name = "c8i.48xlarge", .vcpus = 192, .cores = 96, .memory_mib = 393216,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("75 Gigabit", 75, 75, 24, 64, 1),
	  EBS(60000, 60000, 7500, 7500, 240000, 240000) },
	{ .name = "c8i.96xlarge", .vcpus = 384, .cores = 192, .memory_mib = 786432,
	  GRANITE_RAPIDS, .core_rule = 1, .flags = GEN8_FLAGS | SRD | ENCL | TPM,
	  NET("100 Gigabit", 100, 100, 24, 64, 1),
	  EBS(80000, 80000, 10000, 10000, 480000, 480000) },
	{ .name = "c8i.metal-48xl", .vcpus = 192, .cores = 96, .memory_mib = 393216,
	  GRANITE_RAPIDS, .core_rule = 0, .flags = GEN8_FLAGS | METAL | SRD,
	  NET("75 Gigabit", 75, 75, 24, 64, 1),
	  EBS(60000, 60000, 7500, 7500, 240000, 240000) },
	{ .name = "c8i.metal-96xl", .vcpus = 384, .cores = 192, .memory_mib = 786432,
	  GRANITE_RAPIDS, .core_rule = 0, .flags = GEN8_FLAGS | METAL | SRD,
	  NET("100 Gigabit", 100, 100, 24, 64, 1),
	  EBS(80000, 80000, 10000, 10000, 480000, 480000) },

	/* g6 */
	{ .name = "g6.xlarge", .vcpus = 4, .cores = 2, .memory_mib = 16384,
	  EPYC_7R13, .core_rule = 1, .flags = G6_FLAGS,
	  NET("Up to 10 Gigabit", 2.5, 10, 4, 15, 0),
	  EBS(1000, 5000, 125, 625, 4000, 20000),
	  DISKS(1, 250), L4(1) },
	{ .name = "g6.2xlarge", .vcpus = 8, .cores = 4, .memory_mib = 32768,
	  EPYC_7R13, .core_rule = 1, .flags = G6_FLAGS,
	  NET("Up to 10 Gigabit", 5, 10, 4, 15, 0),
	  EBS(2000, 5000, 250, 625, 8000, 20000),
	  DISKS(1, 450), L4(1) },
	{ .name = "g6.4xlarge", .vcpus = 16, .cores = 8, .memory_mib = 65536,
	  EPYC_7R13, .core_rule = 1, .flags = G6_FLAGS,
	  NET("Up to 25 Gigabit", 10, 25, 8, 30, 0),
	  EBS(8000, 8000, 1000, 1000, 32000, 32000),
	  DISKS(1, 600), L4(1) },
	{ .name = "g6.8xlarge", .vcpus = 32, .cores = 16, .memory_mib = 131072,
	  EPYC_7R13, .core_rule = 1, .flags = G6_FLAGS,
	  NET("25 Gigabit", 25, 25, 8, 30, 1),
	  EBS(16000, 16000, 2000, 2000, 64000, 64000),
	  DISKS(2, 450), L4(1) },
	{ .name = "g6.12xlarge", .vcpus = 48, .cores = 24, .memory_mib = 196608,
	  EPYC_7R13, .core_rule = 1, .flags = G6_FLAGS,
	  NET("40 Gigabit", 40, 40, 8, 30, 1),
	  EBS(20000, 20000, 2500, 2500, 80000, 80000),
	  DISKS(4, 940), L4(4) },
	{ .name = "g6.16xlarge", .vcpus = 64, .cores = 32, .memory_mib = 262144,
	  EPYC_7R13, .core_rule = 1, .flags = G6_FLAGS,
	  NET("25 Gigabit", 25, 25, 15, 50, 1),
	  EBS(20000, 20000, 2500, 2500, 80000, 80000),
	  DISKS(2, 940), L4(1) },
	{ .name = "g6.24xlarge", .vcpus = 96, .cores = 48, .memory_mib = 393216,
	  EPYC_7R13, .core_rule = 1, .flags = G6_FLAGS,
	  NET("50 Gigabit", 50, 50, 15, 50, 1),
	  EBS(30000, 30000, 3750, 3750, 120000, 120000),
	  DISKS(4, 940), L4(4) },
	{ .name = "g6.48xlarge", .vcpus = 192, .cores = 96, .memory_mib = 786432,
	  EPYC_7R13, .core_rule = 1, .flags = G6_FLAGS | SRD,
	  NET("100 Gigabit", 100, 100, 15, 50, 1),
	  EBS(60000, 60000, 7500, 7500, 240000, 240000),
	  DISKS(8, 940), L4(8) },
};

size_t spx_itype_count(void)
{
	return SPX_ARRAY_SIZE(types);
}

const struct spx_itype *spx_itype_at(size_t i)
{
	return i < SPX_ARRAY_SIZE(types) ? &types[i] : NULL;
}

const struct spx_itype *spx_itype_find(const char *name)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(types); i++)
		if (!strcmp(types[i].name, name))
			return &types[i];
	return NULL;
}

int spx_itype_split(const char *name, char *family, char *size, size_t cap)
{
	const char *dot = strchr(name, '.');
	size_t fl, sl;

	if (!dot || strchr(dot + 1, '.'))
		return -1;
	fl = (size_t)(dot - name);
	sl = strlen(dot + 1);
	if (!fl || !sl || fl >= cap || sl >= cap)
		return -1;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '-'))
			return -1;
	memcpy(family, name, fl);
	family[fl] = 0;
	memcpy(size, dot + 1, sl + 1);
	return 0;
}

size_t spx_itype_valid_cores(const struct spx_itype *t, int *out, size_t cap)
{
	size_t n = 0;

	if (t->core_rule == 0)
		return 0;
	if (t->core_rule == 1 || t->cores <= 2) {
		for (int c = 1; c <= t->cores; c++, n++)
			if (n < cap)
				out[n] = c;
		return n;
	}
	for (int c = 2; c <= t->cores; c += 2, n++)
		if (n < cap)
			out[n] = c;
	return n;
}

size_t spx_itype_valid_threads(const struct spx_itype *t, int *out,
			       size_t cap)
{
	size_t n = 0;

	if (t->core_rule == 0)
		return 0;
	for (int i = 1; i <= t->threads_per_core; i++, n++)
		if (n < cap)
			out[n] = i;
	return n;
}

static json_t *strings(int n, ...)
{
	json_t *a = json_array();
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_string(va_arg(ap, const char *)));
	va_end(ap);
	return a;
}

static json_t *ints(const int *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

static void set(json_t *o, const char *k, json_t *v)
{
	json_object_set_new(o, k, v);
}

static json_t *vcpu_info(const struct spx_itype *t)
{
	json_t *o = json_object();
	int v[512];
	size_t n;

	set(o, "DefaultVCpus", json_integer(t->vcpus));
	set(o, "DefaultCores", json_integer(t->cores));
	set(o, "DefaultThreadsPerCore", json_integer(t->threads_per_core));
	n = spx_itype_valid_cores(t, v, SPX_ARRAY_SIZE(v));
	if (n)
		set(o, "ValidCores", ints(v, n));
	n = spx_itype_valid_threads(t, v, SPX_ARRAY_SIZE(v));
	if (n)
		set(o, "ValidThreadsPerCore", ints(v, n));
	return o;
}

static json_t *ebs_info(const struct spx_itype *t)
{
	json_t *o = json_object(), *opt = json_object();

	set(o, "EbsOptimizedSupport", json_string("default"));
	set(o, "EncryptionSupport", json_string("supported"));
	set(opt, "BaselineBandwidthInMbps", json_integer(t->ebs_baseline_mbps));
	set(opt, "BaselineThroughputInMBps", json_real(t->ebs_baseline_mbs));
	set(opt, "BaselineIops", json_integer(t->ebs_baseline_iops));
	set(opt, "MaximumBandwidthInMbps", json_integer(t->ebs_max_mbps));
	set(opt, "MaximumThroughputInMBps", json_real(t->ebs_max_mbs));
	set(opt, "MaximumIops", json_integer(t->ebs_max_iops));
	set(o, "EbsOptimizedInfo", opt);
	set(o, "NvmeSupport", json_string("required"));
	return o;
}

static json_t *network_info(const struct spx_itype *t)
{
	json_t *o = json_object(), *card = json_object();

	set(o, "NetworkPerformance", json_string(t->network_performance));
	set(o, "MaximumNetworkInterfaces", json_integer(t->max_enis));
	set(o, "MaximumNetworkCards", json_integer(1));
	set(o, "DefaultNetworkCardIndex", json_integer(0));
	set(card, "NetworkCardIndex", json_integer(0));
	set(card, "NetworkPerformance", json_string(t->network_performance));
	set(card, "MaximumNetworkInterfaces", json_integer(t->max_enis));
	set(card, "BaselineBandwidthInGbps", json_real(t->net_baseline_gbps));
	set(card, "PeakBandwidthInGbps", json_real(t->net_peak_gbps));
	set(o, "NetworkCards", json_pack("[o]", card));
	set(o, "Ipv4AddressesPerInterface", json_integer(t->ipv4_per_eni));
	set(o, "Ipv6AddressesPerInterface", json_integer(t->ipv4_per_eni));
	set(o, "Ipv6Supported", json_true());
	set(o, "EnaSupport", json_string("required"));
	set(o, "EfaSupported", json_boolean(t->efa_interfaces > 0));
	if (t->efa_interfaces)
		set(o, "EfaInfo", json_pack("{s:i}", "MaximumEfaInterfaces",
					    t->efa_interfaces));
	set(o, "EncryptionInTransitSupported",
	    json_boolean(t->flags & SPX_IT_ENCRYPT_TRANSIT));
	set(o, "EnaSrdSupported", json_boolean(t->flags & SPX_IT_ENA_SRD));
	if (t->flags & SPX_IT_BW_WEIGHTING)
		set(o, "BandwidthWeightings",
		    strings(3, "default", "vpc-1", "ebs-1"));
	return o;
}

json_t *spx_itype_json(const struct spx_itype *t)
{
	json_t *o = json_object(), *p = json_object();
	bool metal = t->flags & SPX_IT_METAL;

	set(o, "InstanceType", json_string(t->name));
	set(o, "CurrentGeneration", json_true());
	set(o, "FreeTierEligible", json_boolean(t->flags & SPX_IT_FREE_TIER));
	set(o, "SupportedUsageClasses", strings(2, "on-demand", "spot"));
	set(o, "SupportedRootDeviceTypes", strings(1, "ebs"));
	set(o, "SupportedVirtualizationTypes", strings(1, "hvm"));
	set(o, "BareMetal", json_boolean(metal));
	if (!metal)
		set(o, "Hypervisor", json_string("nitro"));
	set(p, "SupportedArchitectures", strings(1, "x86_64"));
	if (t->clock_ghz > 0)
		set(p, "SustainedClockSpeedInGhz", json_real(t->clock_ghz));
	set(p, "Manufacturer", json_string(t->manufacturer));
	set(o, "ProcessorInfo", p);
	set(o, "VCpuInfo", vcpu_info(t));
	set(o, "MemoryInfo", json_pack("{s:I}", "SizeInMiB",
				       (json_int_t)t->memory_mib));
	set(o, "InstanceStorageSupported", json_boolean(t->disk_count > 0));
	if (t->disk_count) {
		json_t *s = json_object();

		set(s, "TotalSizeInGB",
		    json_integer((json_int_t)t->disk_count * t->disk_gb));
		set(s, "Disks", json_pack("[{s:i, s:i, s:s}]", "SizeInGB",
					  t->disk_gb, "Count", t->disk_count,
					  "Type", "ssd"));
		set(s, "NvmeSupport", json_string("required"));
		set(s, "EncryptionSupport", json_string("required"));
		set(o, "InstanceStorageInfo", s);
	}
	set(o, "EbsInfo", ebs_info(t));
	set(o, "NetworkInfo", network_info(t));
	if (t->gpu.count) {
		json_t *g = json_pack("{s:s, s:s, s:i, s:{s:i}}", "Name",
				      t->gpu.name, "Manufacturer",
				      t->gpu.manufacturer, "Count",
				      t->gpu.count, "MemoryInfo", "SizeInMiB",
				      t->gpu.memory_mib);

		set(o, "GpuInfo",
		    json_pack("{s:[o], s:i}", "Gpus", g, "TotalGpuMemoryInMiB",
			      t->gpu.count * t->gpu.memory_mib));
	}
	set(o, "PlacementGroupInfo",
	    json_pack("{s:o}", "SupportedStrategies",
		      t->flags & SPX_IT_CLUSTER_PG
			      ? strings(3, "cluster", "partition", "spread")
			      : strings(2, "partition", "spread")));
	set(o, "HibernationSupported",
	    json_boolean(t->flags & SPX_IT_HIBERNATION));
	set(o, "BurstablePerformanceSupported",
	    json_boolean(t->flags & SPX_IT_BURSTABLE));
	set(o, "DedicatedHostsSupported",
	    json_boolean(t->flags & SPX_IT_DEDICATED_HOSTS));
	set(o, "AutoRecoverySupported",
	    json_boolean(t->flags & SPX_IT_AUTO_RECOVERY));
	set(o, "SupportedBootModes", strings(2, "legacy-bios", "uefi"));
	set(o, "NitroEnclavesSupport",
	    json_string(t->flags & SPX_IT_NITRO_ENCLAVES ? "supported"
							 : "unsupported"));
	set(o, "NitroTpmSupport",
	    json_string(t->flags & SPX_IT_NITRO_TPM ? "supported"
						    : "unsupported"));
	if (t->flags & SPX_IT_NITRO_TPM)
		set(o, "NitroTpmInfo",
		    json_pack("{s:[s]}", "SupportedVersions", "2.0"));
	return o;
}
