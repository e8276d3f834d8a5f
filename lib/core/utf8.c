/* utf8.c: see utf8.h. */
#include "spx.h"

#include "utf8.h"

ssize_t spx_utf8_count(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	ssize_t count = 0;

	while (p < end) {
		unsigned c = *p++;
		unsigned lo = 0x80, hi = 0xbf;
		int more;

		if (c < 0x80) {
			count++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			more = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			more = 2;
			if (c == 0xe0)
				lo = 0xa0; /* no overlong */
			else if (c == 0xed)
				hi = 0x9f; /* no surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			more = 3;
			if (c == 0xf0)
				lo = 0x90;
			else if (c == 0xf4)
				hi = 0x8f; /* nothing above U+10FFFF */
		} else {
			return -1;
		}
		if (end - p < more)
			return -1;
		if (*p < lo || *p > hi)
			return -1;
		p++;
		for (int i = 1; i < more; i++, p++)
			if (*p < 0x80 || *p > 0xbf)
				return -1;
		count++;
	}
	return count;
}
