/* banned.h: functions that invite overflows or silent failure.
 * Included by every file of lib/ and bin/ (via spx.h); a use is a compile
 * error naming the function. Use snprintf (checked), spx_buf, strtoll with
 * end-pointer checks, or spx_parse_* instead. */
#ifndef SPX_BANNED_H
#define SPX_BANNED_H

#define SPX_BANNED(func) sorry_##func##_is_banned_in_spx

#undef strcpy
#define strcpy(x, y) SPX_BANNED(strcpy)
#undef strcat
#define strcat(x, y) SPX_BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) SPX_BANNED(strncpy)
#undef sprintf
#define sprintf(...) SPX_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) SPX_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) SPX_BANNED(strtok)
#undef atoi
#define atoi(x) SPX_BANNED(atoi)
#undef atol
#define atol(x) SPX_BANNED(atol)
#undef gets
#define gets(x) SPX_BANNED(gets)
#undef system
#define system(x) SPX_BANNED(system)

#endif
