/* query.c: percent-encoding and query parsing (contract in query.h). */
#include "spx.h"

#include "hex.h"

#include "http/query.h"

/* Decode onto out; base is the offset of s in what the caller parses,
 * for the message. */
static int decode(const char *s, size_t len, int flags, size_t base,
		  struct spx_buf *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0, i = 0;

	spx_buf_grow(out, len);
	while (i < len) {
		int hi, lo;
		char c;

		if (u[i] == '%') {
			hi = i + 2 < len ? spx_hexval(u[i + 1]) : -1;
			lo = hi >= 0 ? spx_hexval(u[i + 2]) : -1;
			if (lo < 0) {
				if (!(flags & SPX_URI_LENIENT))
					return spx_error(
						SPX_USAGE,
						"invalid percent-encoding at "
						"byte %zu",
						base + i);
				i++;
				continue;
			}
			c = (char)(hi << 4 | lo);
			if (!c && (flags & SPX_URI_NONUL))
				return spx_error(SPX_USAGE,
						 "an encoded NUL at byte %zu",
						 base + i);
			spx_buf_add(out, s + run, i - run);
			spx_buf_addc(out, c);
			i += 3;
			run = i;
		} else if (u[i] == '+' && (flags & SPX_URI_PLUS)) {
			spx_buf_add(out, s + run, i - run);
			spx_buf_addc(out, ' ');
			run = ++i;
		} else {
			i++;
		}
	}
	spx_buf_add(out, s + run, len - run);
	return 0;
}

int spx_uri_decode(const char *s, size_t len, int flags, struct spx_buf *out)
{
	size_t old = out->len;

	if (decode(s, len, flags, 0, out) < 0) {
		spx_buf_setlen(out, old);
		return -1;
	}
	return 0;
}

void spx_uri_encode(const char *s, size_t len, int flags, struct spx_buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0;

	spx_buf_grow(out, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = u[i];
		char e[3];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~' || (c == '/' && (flags & SPX_URI_SLASH)))
			continue;
		spx_buf_add(out, s + run, i - run);
		e[0] = '%';
		e[1] = hex[c >> 4];
		e[2] = hex[c & 15];
		spx_buf_add(out, e, 3);
		run = i + 1;
	}
	spx_buf_add(out, s + run, len - run);
}

static void truncate_list(struct spx_kvlist *l, size_t n)
{
	while (l->n > n) {
		l->n--;
		free(l->v[l->n].k);
		free(l->v[l->n].v);
	}
}

int spx_query_parse_max(const char *s, size_t len, int flags,
			size_t max_params, size_t max_bytes,
			struct spx_kvlist *out)
{
	struct spx_buf k = SPX_BUF_INIT, v = SPX_BUF_INIT;
	size_t start = out->n, count = 0, i = 0;
	int rc = -1;

	if (!max_params)
		max_params = SPX_QUERY_MAX_PARAMS;
	if (!max_bytes)
		max_bytes = SPX_QUERY_MAX_BYTES;
	if (len > max_bytes)
		return spx_error(SPX_USAGE, "query is longer than %zu bytes",
				 max_bytes);
	while (i < len) {
		const char *amp = memchr(s + i, '&', len - i);
		size_t end = amp ? (size_t)(amp - s) : len;
		const char *eq = memchr(s + i, '=', end - i);
		size_t kend = eq ? (size_t)(eq - s) : end;

		if (end == i) {
			i++;
			continue;
		}
		if (++count > max_params) {
			spx_error(SPX_USAGE, "query has more than %zu parameters",
				  max_params);
			goto out;
		}
		spx_buf_reset(&k);
		spx_buf_reset(&v);
		if (decode(s + i, kend - i, flags, i, &k) < 0)
			goto out;
		if (eq && decode(s + kend + 1, end - kend - 1, flags, kend + 1,
				 &v) < 0)
			goto out;
		if (memchr(k.p, '\0', k.len) || memchr(v.p, '\0', v.len)) {
			spx_error(SPX_USAGE,
				  "query parameter %zu holds a NUL byte", count);
			goto out;
		}
		spx_kv_addn(out, k.p, k.len, v.p, v.len);
		i = end + 1;
	}
	rc = 0;
out:
	if (rc < 0)
		truncate_list(out, start);
	spx_buf_release(&k);
	spx_buf_release(&v);
	return rc;
}

int spx_query_parse(const char *s, size_t len, int flags,
		    struct spx_kvlist *out)
{
	return spx_query_parse_max(s, len, flags, 0, 0, out);
}
