/* imds.c: the instance metadata service (imds.h).
 *
 * Written here rather than on libmicrohttpd: each guest connection is one
 * process whose stdin and stdout are the connection (QEMU's guestfwd), and
 * the protocol needed is a GET or PUT without a body, so a bounded request
 * reader of a page is all it takes (fuzz_imds). */
#include "spx.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "checksum.h"
#include "vm/imds.h"

struct spx_imds {
	json_t *root;
	json_t *md;   /* root's "meta-data" (borrowed) */
	json_t *dyn;  /* root's "dynamic" or NULL (borrowed) */
	json_t *keys; /* root's "public-keys" or NULL (borrowed) */
	unsigned char *ud;
	size_t udlen;
	bool have_ud, required, disabled;
	int hops; /* http-put-response-hop-limit */
};

static bool name_ok(const char *k)
{
	size_t n = strlen(k);

	if (n == 0 || n > 64 || strcmp(k, ".") == 0 || strcmp(k, "..") == 0)
		return false;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || strchr("._-:", *k)))
			return false;
	return true;
}

static int check_tree(json_t *o, int depth)
{
	const char *k;
	json_t *v;

	/* meta-data/network/interfaces/macs/MAC/local-ipv4s is EC2's
	 * deepest. */
	if (depth > SPX_IMDS_DEPTH)
		return spx_error(SPX_USAGE, "metadata: nested too deep");
	json_object_foreach(o, k, v) {
		if (!name_ok(k))
			return spx_error(SPX_USAGE, "metadata: a bad name: '%.64s'",
					 k);
		if (json_is_object(v)) {
			if (check_tree(v, depth + 1) < 0)
				return -1;
		} else if (!json_is_string(v)) {
			return spx_error(SPX_USAGE,
					 "metadata: '%s' is not text or a "
					 "directory",
					 k);
		}
	}
	return 0;
}

static int check_keys(json_t *a)
{
	size_t i;
	json_t *k;

	if (!json_is_array(a) || json_array_size(a) > 10)
		return spx_error(SPX_USAGE,
				 "metadata: public-keys: a list of at most 10");
	json_array_foreach(a, i, k) {
		const char *name = json_string_value(json_object_get(k, "name"));
		const char *key =
			json_string_value(json_object_get(k, "openssh-key"));

		/* Any name EC2 takes ('/' and '=' too: the listing is
		 * "INDEX=NAME" lines, and keys are fetched by index). */
		if (!json_is_object(k) || json_object_size(k) != 2 || !name ||
		    !key || !*name || strlen(name) > 255 ||
		    strpbrk(name, "\n\r") || strpbrk(key, "\n\r"))
			return spx_error(SPX_USAGE,
					 "metadata: public-keys: a bad key");
	}
	return 0;
}

int spx_imds_load(const char *text, size_t len, struct spx_imds **out)
{
	struct spx_imds *md = spx_calloc(1, sizeof(*md));
	json_error_t je;
	const char *k, *s;
	json_t *v;

	*out = NULL;
	if (len > SPX_IMDS_MD_MAX) {
		spx_error(SPX_USAGE, "metadata: larger than %u bytes",
			  SPX_IMDS_MD_MAX);
		goto fail;
	}
	md->hops = 1; /* EC2's default */
	md->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(md->root)) {
		spx_error(SPX_USAGE, "metadata: %s",
			  md->root ? "not an object" : je.text);
		goto fail;
	}
	json_object_foreach(md->root, k, v) {
		if (strcmp(k, "meta-data") == 0) {
			if (!json_is_object(v) || check_tree(v, 1) < 0 ||
			    json_object_get(v, "public-keys")) {
				spx_error_prefix("meta-data");
				goto fail;
			}
			md->md = v;
		} else if (strcmp(k, "dynamic") == 0) {
			if (!json_is_object(v) || check_tree(v, 1) < 0) {
				spx_error_prefix("dynamic");
				goto fail;
			}
			md->dyn = v;
		} else if (strcmp(k, "public-keys") == 0) {
			if (check_keys(v) < 0)
				goto fail;
			md->keys = v;
		} else if (strcmp(k, "user-data") == 0 && (s = json_string_value(v))) {
			md->ud = spx_malloc(SPX_IMDS_UD_MAX + 1);
			if (spx_base64_decode(s, strlen(s), md->ud,
					      SPX_IMDS_UD_MAX, &md->udlen) < 0) {
				spx_error(SPX_USAGE,
					  "metadata: user-data: not base64 of "
					  "at most %u bytes",
					  SPX_IMDS_UD_MAX);
				goto fail;
			}
			md->have_ud = true;
		} else if (strcmp(k, "http-tokens") == 0 &&
			   (s = json_string_value(v)) &&
			   (!strcmp(s, "optional") || !strcmp(s, "required"))) {
			md->required = strcmp(s, "required") == 0;
		} else if (strcmp(k, "http-put-response-hop-limit") == 0 &&
			   json_is_integer(v) && json_integer_value(v) >= 1 &&
			   json_integer_value(v) <= SPX_IMDS_HOPS_MAX) {
			md->hops = (int)json_integer_value(v);
		} else if (strcmp(k, "http-endpoint") == 0 &&
			   (s = json_string_value(v)) &&
			   (!strcmp(s, "enabled") || !strcmp(s, "disabled"))) {
			md->disabled = strcmp(s, "disabled") == 0;
		} else {
			spx_error(SPX_USAGE, "metadata: a bad entry: '%.64s'", k);
			goto fail;
		}
	}
	if (!md->md) {
		spx_error(SPX_USAGE, "metadata: no meta-data");
		goto fail;
	}
	*out = md;
	return 0;
fail:
	spx_imds_free(md);
	return -1;
}

int spx_imds_hop_limit(const struct spx_imds *md)
{
	return md->hops;
}

bool spx_imds_token_put(const struct spx_imds_req *r)
{
	return r->method && r->path && !strcmp(r->method, "PUT") &&
	       !strcmp(r->path, "/latest/api/token");
}

void spx_imds_free(struct spx_imds *md)
{
	if (!md)
		return;
	json_decref(md->root);
	free(md->ud);
	free(md);
}

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c);
}

int spx_imds_parse(const char *buf, size_t len, struct spx_imds_req *r)
{
	size_t end = 0, i;
	char *p, *line, *eol, *sp;
	int nh = 0;

	/* The request ends at the first empty line. */
	for (i = 0; i < len && i < SPX_IMDS_REQ_MAX; i++) {
		if (buf[i] == '\n' &&
		    ((i >= 1 && buf[i - 1] == '\n') ||
		     (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n'))) {
			end = i + 1;
			break;
		}
	}
	if (!end)
		return len >= SPX_IMDS_REQ_MAX ? -1 : 0;
	memset(r, 0, sizeof(*r));
	memcpy(r->buf, buf, end);
	r->buf[end] = 0;
	if (memchr(r->buf, 0, end))
		return -1;
	p = r->buf;
	for (line = p; (eol = strchr(line, '\n')); line = eol + 1) {
		char *name, *val, *e;

		*eol = 0;
		if (eol > line && eol[-1] == '\r')
			eol[-1] = 0;
		if (line == p) { /* METHOD SP TARGET SP HTTP/1.x */
			sp = strchr(line, ' ');
			if (!sp || sp == line)
				return -1;
			*sp = 0;
			for (e = line; *e; e++)
				if (*e < 'A' || *e > 'Z')
					return -1;
			r->method = line;
			r->path = sp + 1;
			sp = strchr(sp + 1, ' ');
			if (!sp || r->path[0] != '/')
				return -1;
			*sp = 0;
			for (e = (char *)r->path; *e; e++)
				if (*e <= ' ' || *e > '~')
					return -1;
			if (strlen(r->path) > 1024)
				return -1;
			if (strcmp(sp + 1, "HTTP/1.1") == 0)
				r->close = false;
			else if (strcmp(sp + 1, "HTTP/1.0") == 0)
				r->close = true;
			else
				return -1;
			continue;
		}
		if (!*line)
			break; /* the empty line */
		if (++nh > 64)
			return -1;
		name = line;
		val = strchr(line, ':');
		if (!val || val == name)
			return -1;
		*val++ = 0;
		for (e = name; *e; e++)
			if (!tchar(*e))
				return -1; /* obs-fold and junk alike */
		while (*val == ' ' || *val == '\t')
			val++;
		e = val + strlen(val);
		while (e > val && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = 0;
		for (e = val; *e; e++)
			if ((unsigned char)*e < ' ' && *e != '\t')
				return -1;
		if (!strcasecmp(name, "X-aws-ec2-metadata-token"))
			r->token = val;
		else if (!strcasecmp(name, "X-aws-ec2-metadata-token-ttl-seconds"))
			r->ttl = val;
		else if (!strcasecmp(name, "X-Forwarded-For"))
			r->forwarded = true;
		else if (!strcasecmp(name, "Connection"))
			r->close = r->close ? strcasecmp(val, "keep-alive") != 0
					    : strcasecmp(val, "close") == 0;
		else if (!strcasecmp(name, "Transfer-Encoding"))
			return -1;
		else if (!strcasecmp(name, "Content-Length") && strcmp(val, "0"))
			return -1;
	}
	if (!r->method)
		return -1;
	r->head = strcmp(r->method, "HEAD") == 0;
	return (int)end;
}

static void respond(struct spx_buf *out, const struct spx_imds_req *r,
		    int code, const char *extra, const void *body, size_t n)
{
	const char *why = code == 200   ? "OK"
			  : code == 400 ? "Bad Request"
			  : code == 401 ? "Unauthorized"
			  : code == 403 ? "Forbidden"
			  : code == 404 ? "Not Found"
					: "Method Not Allowed";

	spx_buf_addf(out,
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
		     "Content-Length: %zu\r\nServer: EC2ws\r\n%s"
		     "Connection: %s\r\n\r\n",
		     code, why, n, extra ? extra : "",
		     r && !r->close ? "keep-alive" : "close");
	if (!r || !r->head)
		spx_buf_add(out, body, n);
}

static void status(struct spx_buf *out, const struct spx_imds_req *r,
		   int code)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "%d\n", code);

	respond(out, r, code, NULL, body, (size_t)n);
}

/* Tokens: "<expiry>.<base64url HMAC-SHA256 of 'spx-imds-v2.<expiry>'>"
 * under the guest's own key. */
static void token_mac(const unsigned char key[SPX_IMDS_KEY_LEN],
		      long long expiry, struct spx_buf *out)
{
	unsigned char mac[32];
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "spx-imds-v2.%lld", expiry);
	size_t i, start = out->len;

	if (!spx_hmac_sha256(key, SPX_IMDS_KEY_LEN, msg, (size_t)n, mac))
		spx_die(SPX_FAIL, "cannot compute HMAC-SHA-256");
	spx_base64_encode(mac, 32, out);
	for (i = start; i < out->len; i++) {
		if (out->p[i] == '+')
			out->p[i] = '-';
		else if (out->p[i] == '/')
			out->p[i] = '_';
	}
	while (out->len > start && out->p[out->len - 1] == '=')
		spx_buf_setlen(out, out->len - 1);
}

static bool token_valid(const char *tok,
			const unsigned char key[SPX_IMDS_KEY_LEN], time_t now)
{
	struct spx_buf want = SPX_BUF_INIT;
	const char *dot = strchr(tok, '.');
	long long expiry = 0;
	const char *p;
	bool ok;

	if (!dot || dot == tok || dot - tok > 12)
		return false;
	for (p = tok; p < dot; p++) {
		if (*p < '0' || *p > '9')
			return false;
		expiry = expiry * 10 + (*p - '0');
	}
	if (expiry <= (long long)now ||
	    expiry > (long long)now + SPX_IMDS_TTL_MAX)
		return false;
	token_mac(key, expiry, &want);
	ok = strlen(dot + 1) == want.len &&
	     CRYPTO_memcmp(dot + 1, want.p, want.len) == 0;
	spx_buf_release(&want);
	return ok;
}

static void token_put(const struct spx_imds_req *r,
		      const unsigned char key[SPX_IMDS_KEY_LEN], time_t now,
		      struct spx_buf *out)
{
	struct spx_buf tok = SPX_BUF_INIT;
	char hdr[96];
	long long ttl = 0;
	const char *p;

	if (r->forwarded) {
		status(out, r, 403);
		return;
	}
	if (!r->ttl || !*r->ttl || strlen(r->ttl) > 5) {
		status(out, r, 400);
		return;
	}
	for (p = r->ttl; *p; p++) {
		if (*p < '0' || *p > '9') {
			status(out, r, 400);
			return;
		}
		ttl = ttl * 10 + (*p - '0');
	}
	if (ttl < 1 || ttl > SPX_IMDS_TTL_MAX) {
		status(out, r, 400);
		return;
	}
	spx_buf_addf(&tok, "%lld.", (long long)now + ttl);
	token_mac(key, (long long)now + ttl, &tok);
	snprintf(hdr, sizeof(hdr),
		 "X-aws-ec2-metadata-token-ttl-seconds: %lld\r\n", ttl);
	respond(out, r, 200, hdr, tok.p, tok.len);
	spx_buf_release(&tok);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A directory's listing: its names sorted, directories with '/'. */
static void listing(json_t *dir, bool keys, struct spx_buf *body)
{
	const char **names = spx_malloc((json_object_size(dir) + 1) *
					sizeof(*names));
	size_t n = 0, i;
	const char *k;
	json_t *v;

	json_object_foreach(dir, k, v)
		names[n++] = k;
	if (keys)
		names[n++] = "public-keys";
	qsort(names, n, sizeof(*names), cmp_key);
	for (i = 0; i < n; i++) {
		v = json_object_get(dir, names[i]);
		spx_buf_addf(body, "%s%s%s", i ? "\n" : "", names[i],
			     !v || json_is_object(v) ? "/" : "");
	}
	free(names);
}

/* The path segs[0..n) in the tree under top into body: 0, or 404. keys:
 * top's listing names public-keys too. */
static int tree(json_t *top, bool keys, char **segs, size_t n,
		struct spx_buf *body)
{
	json_t *cur = top;
	size_t i;

	for (i = 0; i < n; i++) {
		cur = json_object_get(cur, segs[i]);
		if (!cur)
			return 404;
		if (!json_is_object(cur) && i + 1 < n)
			return 404;
	}
	if (json_is_object(cur))
		listing(cur, cur == top && keys, body);
	else
		spx_buf_adds(body, json_string_value(cur));
	return 0;
}

/* The meta-data path segs[0..n) into body: 0, or 404. */
static int meta(const struct spx_imds *md, char **segs, size_t n,
		struct spx_buf *body)
{
	json_t *k;
	size_t i;

	if (n >= 1 && md->keys && strcmp(segs[0], "public-keys") == 0) {
		char *end;
		unsigned long idx;

		if (n == 1) {
			json_array_foreach(md->keys, i, k)
				spx_buf_addf(body, "%s%zu=%s", i ? "\n" : "", i,
					     json_string_value(json_object_get(
						     k, "name")));
			return 0;
		}
		errno = 0;
		idx = strtoul(segs[1], &end, 10);
		if (errno || *end || segs[1][0] < '0' || segs[1][0] > '9' ||
		    (segs[1][0] == '0' && segs[1][1]) ||
		    idx >= json_array_size(md->keys) || n > 3)
			return 404;
		k = json_array_get(md->keys, idx);
		if (n == 2) {
			spx_buf_adds(body, "openssh-key");
			return 0;
		}
		if (strcmp(segs[2], "openssh-key"))
			return 404;
		spx_buf_addf(body, "%s\n",
			     json_string_value(json_object_get(k, "openssh-key")));
		return 0;
	}
	return tree(md->md, md->keys, segs, n, body);
}

/* A version segment: "latest" or a dated one (cloud-init asks for
 * 2009-04-04 and later dates). */
static bool version_ok(const char *s)
{
	size_t i;

	if (strcmp(s, "latest") == 0)
		return true;
	if (strlen(s) != 10)
		return false;
	for (i = 0; i < 10; i++)
		if (i == 4 || i == 7 ? s[i] != '-' : s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

void spx_imds_answer(const struct spx_imds *md, const struct spx_imds_req *r,
		     const unsigned char key[SPX_IMDS_KEY_LEN], time_t now,
		     struct spx_buf *out)
{
	struct spx_buf body = SPX_BUF_INIT;
	char path[1025], *segs[16], *s, *save = NULL;
	size_t n = 0;
	int code = 0;

	if (md->disabled) {
		status(out, r, 403);
		return;
	}
	if (strcmp(r->method, "PUT") == 0) {
		if (spx_imds_token_put(r))
			token_put(r, key, now, out);
		else
			status(out, r, 405);
		return;
	}
	if (strcmp(r->method, "GET") && !r->head) {
		status(out, r, 405);
		return;
	}
	if (r->token ? !token_valid(r->token, key, now) : md->required) {
		status(out, r, 401);
		return;
	}
	snprintf(path, sizeof(path), "%s", r->path);
	for (s = strtok_r(path, "/", &save); s && n < SPX_ARRAY_SIZE(segs);
	     s = strtok_r(NULL, "/", &save))
		segs[n++] = s;
	if (s) {
		code = 404;
	} else if (n == 0) {
		spx_buf_adds(&body, "latest");
	} else if (!version_ok(segs[0])) {
		code = 404;
	} else if (n == 1) {
		spx_buf_addf(&body, "%smeta-data%s", md->dyn ? "dynamic\n" : "",
			     md->have_ud ? "\nuser-data" : "");
	} else if (strcmp(segs[1], "meta-data") == 0) {
		code = meta(md, segs + 2, n - 2, &body);
	} else if (strcmp(segs[1], "dynamic") == 0 && md->dyn) {
		code = tree(md->dyn, false, segs + 2, n - 2, &body);
	} else if (strcmp(segs[1], "user-data") == 0 && n == 2 && md->have_ud) {
		spx_buf_add(&body, md->ud, md->udlen);
	} else if (strcmp(segs[1], "api") == 0) {
		code = 405; /* the token is PUT */
	} else {
		code = 404;
	}
	if (code)
		status(out, r, code);
	else
		respond(out, r, 200, NULL, body.p, body.len);
	spx_buf_release(&body);
}
