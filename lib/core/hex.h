/* hex.h: hexadecimal digits, one implementation for every parser. */
#ifndef SPX_HEX_H
#define SPX_HEX_H

#include <stdbool.h>
#include <stddef.h>

/* The value of one hex digit (either case), or -1. */
int spx_hexval(int c);
/* n bytes as 2n lowercase hex digits and a NUL into out (2n+1 bytes). */
void spx_hex_encode(const void *p, size_t n, char *out);
/* Are s[0..n) all lowercase hex digits? */
bool spx_is_lower_hex(const char *s, size_t n);

#endif
