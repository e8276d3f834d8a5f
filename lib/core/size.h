/* size.h: bounded parsers for sizes and integers from the command line,
 * configuration files and requests.
 *
 * All three take plain ASCII decimal: no leading or trailing space, no
 * '+', no hex or octal (a leading 0 is just a digit), nothing after the
 * number but a size suffix. They return 0 with *out set, or -1 and
 * SPX_USAGE from spx_error() with *out untouched.
 *
 * spx_parse_size: digits, then an optional suffix, all powers of 1024
 * whatever the spelling, as nbdkit_parse_size does, so "1MB" is what a
 * user of disk sizes means (1048576) and never 10^6:
 *   (none), b, B                      1
 *   k K  kB KB  kiB KiB               2^10
 *   m M  mB MB  miB MiB               2^20
 *   g G ... t T ... p P ... e E ...   2^30, 2^40, 2^50, 2^60
 * Fractions ("1.5G") and negatives are refused, as is any result above
 * UINT64_MAX ("16E" is 2^64: refused; "15E" is fine). A caller storing an
 * off_t must still check against INT64_MAX.
 *
 * spx_parse_uint and spx_parse_int check the range min..max inclusive
 * and name the value in their messages:
 *   port '70000' is out of range 1..65535
 *   invalid port 'http'
 * (name NULL reads "value"). spx_parse_int also takes a leading '-'. */
#ifndef SPX_SIZE_H
#define SPX_SIZE_H

#include <stdint.h>

int spx_parse_size(const char *s, uint64_t *out);
int spx_parse_uint(const char *name, const char *s, uint64_t min,
		   uint64_t max, uint64_t *out);
int spx_parse_int(const char *name, const char *s, int64_t min, int64_t max,
		  int64_t *out);

/* A size for people, in the suffixes spx_parse_size reads: "30G" when
 * exact, else one decimal ("1.5G", "0" for zero, "512" below 1K). out
 * holds at least SPX_SIZE_STR bytes. */
#define SPX_SIZE_STR 24
void spx_size_str(uint64_t v, char *out, size_t n);

#endif
