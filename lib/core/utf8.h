/* utf8.h: checking UTF-8 the way XML and JSON need it. */
#ifndef SPX_UTF8_H
#define SPX_UTF8_H

#include <stddef.h>
#include <sys/types.h>

/* The number of code points in s[0..n), or -1 if the bytes are not
 * well-formed UTF-8 (Unicode 3.9: no overlong forms, no surrogates,
 * nothing above U+10FFFF). NUL counts as a code point. */
ssize_t spx_utf8_count(const char *s, size_t n);

#endif
