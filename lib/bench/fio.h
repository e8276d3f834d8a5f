/* fio.h: the figures of one fio run, read from its JSON report
 * (fio --output-format=json).
 *
 * fio's report is input from another program, and a file a hand or a
 * crash may leave: it is parsed with jansson under a size bound, every
 * field it is asked for is checked for type and range, and whatever does
 * not fit is refused with a message naming the field. fio prints lines
 * of its own ahead of the JSON ("fio: connected to NBD server" from the
 * nbd engine): parsing starts at the first line that opens an object.
 * Text after the object is ignored.
 *
 * The jobs of the report are summed (IOPS, bandwidth, bytes); the 99th
 * percentile of completion latency is the largest of the jobs', which is
 * exact for one job entry, as --group_reporting gives. */
#ifndef SPX_BENCH_FIO_H
#define SPX_BENCH_FIO_H

#include "spx.h"

/* The largest report read, and the most job entries in one. */
#define SPX_FIO_MAX_BYTES (16u << 20)
#define SPX_FIO_MAX_JOBS 1024

struct spx_fio_dir {
	bool present;	 /* the run did I/O in this direction */
	double iops;
	double mibs;	 /* bandwidth, MiB/s (fio's bw is KiB/s) */
	double p99_ms;	 /* 99th percentile of completion latency */
	uint64_t bytes;	 /* bytes moved */
};

struct spx_fio_result {
	int error;	 /* the first job's non-zero "error" (an errno), or 0 */
	size_t njobs;	 /* job entries in the report */
	struct spx_fio_dir read, write;
};

/* Parse a report of len bytes (need not be NUL-terminated). 0 on success;
 * -1 with an error recorded (SPX_FAIL) for a report that is not one. A
 * job that reported an error still parses: out->error says so. */
int spx_fio_parse(const char *text, size_t len, struct spx_fio_result *out);

#endif
