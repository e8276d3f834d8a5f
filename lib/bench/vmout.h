/* vmout.h: what `spx-bench vm` reads from others: the gateway's EC2
 * answers (XML) and the output of its busybox jobs on the host and in a
 * guest (over SSH, so a guest writes it).
 *
 * Neither is trusted: both are bounded by a length, never read past it,
 * and every number is checked before it becomes a figure. */
#ifndef SPX_BENCH_VMOUT_H
#define SPX_BENCH_VMOUT_H

#include "spx.h"

/* The text between the first "<tag>" in xml[0, len) and the "</tag>"
 * after it, as a new string; NULL when there is none (no error
 * recorded). Entities are left as they are. */
char *spx_vmout_xml_text(const char *xml, size_t len, const char *tag);
/* How many times what occurs in s[0, len), not overlapping. */
size_t spx_vmout_count(const char *s, size_t len, const char *what);

/* The busybox jobs, in this order: md5 (CPU), write, read. */
#define SPX_VMOUT_NJOBS 3
extern const char *const spx_vmout_job[SPX_VMOUT_NJOBS];
/* Lines "NAME START END" (seconds of /proc/uptime) for each job: MiB/s
 * into out, cpu_mib for md5, disk_mib for write and read. A time shorter
 * than the clock's 10 ms counts as 10 ms. A job missing, given twice, or
 * with a time that is not a finite number or ends before it starts is
 * refused (SPX_FAIL, the job named). Other lines are ignored. */
int spx_vmout_jobs(const char *text, size_t len, uint64_t cpu_mib,
		   uint64_t disk_mib, double out[SPX_VMOUT_NJOBS]);

#endif
