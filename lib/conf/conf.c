/* conf.c: the spinifex.toml schema (see conf.h).
 *
 * The table `fields` below is the schema: for each key its path, type,
 * default, range, description and where it is stored. Parsing walks the
 * TOML tree and looks every key up in it, so a key the table does not know
 * is an error; defaults, release and spx_conf_schema_print() read the same
 * table. */
#include "spx.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "conf/conf.h"
#include "conf/toml.h"
#include "net/net.h"

enum kind {
	K_STR,
	K_PATH,		/* string resolved against root */
	K_INT,
	K_BOOL,
	K_NAME,		/* [a-z0-9][a-z0-9-]{0,62} */
	K_REGION,	/* region or availability zone */
	K_ACCOUNT,	/* 12 digits */
	K_IPV4,
	K_IP,		/* IPv4 or IPv6 literal, or "localhost" */
	K_HOST,		/* host name or IP literal */
	K_SOURCE,	/* "static" or "dhcp", stored as an int */
	K_PATHS,	/* array of K_PATH, stored as spx_conf_strv */
	K_IPV4S,	/* array of K_IPV4 */
	K_NODES,	/* the [nodes.*] tables */
	K_POOLS,	/* the [[network.external_pools]] array */
};

/* Which struct a field lives in, and the path prefix its key hangs off. */
enum scope {
	S_ROOT,	/* struct spx_conf */
	S_NODE,	/* struct spx_conf_node, "nodes.*." */
	S_POOL,	/* struct spx_conf_pool, "network.external_pools[]." */
};

#define F_REQUIRED 0x1	/* no default: must be set */
#define F_STATIC 0x2	/* must be set in a static pool */
#define F_DERIVED 0x4	/* default computed from other keys, as def says */

struct field {
	enum scope scope;
	const char *key;	/* dotted, relative to the scope */
	enum kind kind;
	const char *def;	/* the default as text */
	int64_t min, max;	/* integers: the range; arrays: item count */
	unsigned flags;
	const char *desc;
	size_t off, size;	/* the member in the scope's struct */
};

#define AT(type, m) offsetof(type, m), sizeof(((type *)0)->m)
#define ROOT(m) AT(struct spx_conf, m)
#define NODE(m) AT(struct spx_conf_node, m)
#define POOL(m) AT(struct spx_conf_pool, m)

static const struct field fields[] = {
	{ S_ROOT, "node", K_NAME, "the only node", 0, 0, F_DERIVED,
	  "which [nodes.*] table describes this host; required when there "
	  "are several", ROOT(node) },
	{ S_ROOT, "aws.region", K_REGION, "us-east-1", 0, 0, 0,
	  "the region the API reports", ROOT(aws.region) },
	{ S_ROOT, "aws.account_id", K_ACCOUNT, "000000000000", 0, 0, 0,
	  "the account id of the admin account, exactly 12 digits",
	  ROOT(aws.account_id) },
	{ S_ROOT, "tls.ca_cert", K_PATH, "tls/ca.pem", 0, 0, 0,
	  "the CA certificate (PEM) that signs the node certificates",
	  ROOT(tls.ca_cert) },
	{ S_ROOT, "tls.cert", K_PATH, "tls/node.pem", 0, 0, 0,
	  "this node's certificate chain (PEM)", ROOT(tls.cert) },
	{ S_ROOT, "tls.key", K_PATH, "tls/node.key", 0, 0, 0,
	  "this node's private key (PEM)", ROOT(tls.key) },
	{ S_ROOT, "credentials.file", K_PATH, "credentials.json", 0, 0, 0,
	  "the file holding the access keys", ROOT(credentials.file) },
	{ S_ROOT, "paths.state", K_PATH, "state", 0, 0, 0,
	  "the state directory", ROOT(paths.state) },
	{ S_ROOT, "paths.data", K_PATH, "data", 0, 0, 0,
	  "the data directory", ROOT(paths.data) },
	{ S_ROOT, "paths.run", K_PATH, "run", 0, 0, 0,
	  "the runtime directory (sockets, pid files)", ROOT(paths.run) },
	{ S_ROOT, "paths.log", K_PATH, "log", 0, 0, 0,
	  "the log directory", ROOT(paths.log) },
	{ S_ROOT, "network.ipsec_enabled", K_BOOL, "false", 0, 0, 0,
	  "encrypt the underlay between nodes with IPsec",
	  ROOT(network.ipsec_enabled) },
	{ S_ROOT, "network.underlay_mtu", K_INT, "1500", 576, 9216, 0,
	  "the MTU of the network between nodes", ROOT(network.underlay_mtu) },
	{ S_ROOT, "network.firewall_enabled", K_BOOL, "false", 0, 0, 0,
	  "enforce security groups with nftables",
	  ROOT(network.firewall_enabled) },
	{ S_ROOT, "network.external_pools", K_POOLS, "none", 0, 64, 0,
	  "pools of external (public) addresses, one table each",
	  ROOT(network.external_pools) },
	{ S_POOL, "name", K_NAME, NULL, 0, 0, F_REQUIRED,
	  "the pool's name, unique", POOL(name) },
	{ S_POOL, "source", K_SOURCE, NULL, 0, 0, F_REQUIRED,
	  "where addresses come from: a static range or DHCP",
	  POOL(source) },
	{ S_POOL, "range_start", K_IPV4, NULL, 0, 0, F_STATIC,
	  "the first address of a static range", POOL(range_start) },
	{ S_POOL, "range_end", K_IPV4, NULL, 0, 0, F_STATIC,
	  "the last address of a static range", POOL(range_end) },
	{ S_POOL, "gateway", K_IPV4, NULL, 0, 0, F_STATIC,
	  "the gateway of a static range", POOL(gateway) },
	{ S_POOL, "prefix_len", K_INT, NULL, 1, 32, F_STATIC,
	  "the prefix length of the static range's network",
	  POOL(prefix_len) },
	{ S_POOL, "dns_servers", K_IPV4S, "[]", 0, 8, 0,
	  "DNS servers handed to instances", POOL(dns_servers) },
	{ S_ROOT, "nodes", K_NODES, NULL, 1, 256, F_REQUIRED,
	  "one table per node, named [a-z0-9][a-z0-9-]{0,62}",
	  ROOT(nodes) },
	{ S_NODE, "host", K_HOST, "127.0.0.1", 0, 0, 0,
	  "the address other nodes and clients use to reach this node",
	  NODE(host) },
	{ S_NODE, "az", K_REGION, "<aws.region>a", 0, 0, F_DERIVED,
	  "the node's availability zone", NODE(az) },
	{ S_NODE, "gw.bind", K_IP, "127.0.0.1", 0, 0, 0,
	  "the listen address of both API ports", NODE(gw.bind) },
	{ S_NODE, "gw.ec2_port", K_INT, "9999", 1, 65535, 0,
	  "the port of the EC2 API", NODE(gw.ec2_port) },
	{ S_NODE, "gw.s3_port", K_INT, "8443", 1, 65535, 0,
	  "the port of the S3 API", NODE(gw.s3_port) },
	{ S_NODE, "gw.http", K_BOOL, "false", 0, 0, 0,
	  "serve plain HTTP instead of TLS; only with a loopback bind "
	  "(127.0.0.0/8, ::1, localhost)", NODE(gw.http) },
	{ S_NODE, "gw.s3_domain", K_HOST, NULL, 0, 0, 0,
	  "the domain of virtual-host-style S3 requests (BUCKET.DOMAIN); "
	  "unset: path-style only", NODE(gw.s3_domain) },
	{ S_NODE, "gw.s3_sigv2", K_BOOL, "true", 0, 0, 0,
	  "accept S3 requests signed with Signature Version 2 (older tools, "
	  "boto3's default presigned URLs); false refuses them as AWS "
	  "regions without it do", NODE(gw.s3_sigv2) },
	{ S_NODE, "gw.s3_public_access_block", K_BOOL, "true", 0, 0, 0,
	  "buckets without a public access block of their own block public "
	  "policies and ACLs, as AWS's new buckets do; false: they have none "
	  "(as MinIO's), and a public bucket policy takes effect once put",
	  NODE(gw.s3_public_access_block) },
	{ S_NODE, "gw.threads", K_INT, "8", 1, 256, 0,
	  "request threads per API port", NODE(gw.threads) },
	{ S_NODE, "gw.write_threads", K_INT, "16", 0, 256, 0,
	  "threads, shared by the API ports, that finish requests which "
	  "change something "
	  "(their commit and its syncs) while the request threads serve "
	  "other connections; a request thread serving only that "
	  "connection finishes it itself, up to half as many at once as "
	  "gw.threads; 0: the request thread finishes them all",
	  NODE(gw.write_threads) },
	{ S_NODE, "gw.max_header_bytes", K_INT, "16384", 1024, 1048576, 0,
	  "the largest request head accepted", NODE(gw.max_header_bytes) },
	{ S_NODE, "gw.max_body_bytes", K_INT, "5368709120", 1, INT64_MAX, 0,
	  "the largest request body accepted (an S3 single PUT is up to "
	  "5 GiB)", NODE(gw.max_body_bytes) },
	{ S_NODE, "gw.max_query_body_bytes", K_INT, "1048576", 1, 67108864,
	  0, "the largest form-encoded (EC2 Query) body accepted",
	  NODE(gw.max_query_body_bytes) },
	{ S_NODE, "gw.max_conns_per_addr", K_INT, "128", 0, 1000000, 0,
	  "open connections one client address may hold on both API ports "
	  "together; more are closed at once; 0: no cap",
	  NODE(gw.max_conns_per_addr) },
	{ S_NODE, "gw.header_timeout", K_INT, "20", 1, 3600, 0,
	  "seconds a new connection has to send a complete request head "
	  "(and, with TLS, the handshake before it); later it is closed",
	  NODE(gw.header_timeout) },
	{ S_NODE, "gw.idle_timeout", K_INT, "60", 1, 86400, 0,
	  "seconds a kept-alive connection has to send its next complete "
	  "request head after an answer, and the longest a connection may "
	  "send or read nothing at all", NODE(gw.idle_timeout) },
	{ S_NODE, "gw.body_timeout", K_INT, "30", 1, 86400, 0,
	  "the window, in seconds, over which a request body must keep "
	  "arriving at gw.body_min_rate; a body that stalls is cut",
	  NODE(gw.body_timeout) },
	{ S_NODE, "gw.body_min_rate", K_INT, "1024", 0, 1073741824, 0,
	  "the slowest request body accepted, in bytes a second averaged "
	  "over each gw.body_timeout window; 0: only a body that brings "
	  "nothing in a window is cut", NODE(gw.body_min_rate) },
	{ S_NODE, "obj.drives", K_PATHS, "[\"<paths.data>/obj/d0\"]", 1, 64,
	  F_DERIVED, "the object store's drives, one directory each",
	  NODE(obj.drives) },
	{ S_NODE, "obj.data", K_INT, "1", 1, 16, 0,
	  "Reed-Solomon data shards per object", NODE(obj.data) },
	{ S_NODE, "obj.parity", K_INT, "0", 0, 16, 0,
	  "Reed-Solomon parity shards per object", NODE(obj.parity) },
	{ S_NODE, "obj.lifecycle_interval", K_INT, "3600", 1, 86400, 0,
	  "seconds between the agent's lifecycle passes over the buckets "
	  "(spx-obj lifecycle); a pass that stops at its bound goes on at "
	  "once", NODE(obj.lifecycle_interval) },
	{ S_NODE, "obj.lifecycle_day", K_INT, "86400", 1, 86400, 0,
	  "the length in seconds of a lifecycle rule's day (tests shorten "
	  "it); rules count days from midnight UTC as S3 does",
	  NODE(obj.lifecycle_day) },
	{ S_NODE, "ebs.default_threads", K_INT, "16", 1, 256, 0,
	  "I/O threads of the volume server when it is nbdkit (spx-vol "
	  "serve, nbdkit --threads), shared by every volume",
	  NODE(ebs.default_threads) },
	{ S_NODE, "ebs.server", K_NAME, "spx", 0, 0, 0,
	  "the NBD server of spx-vol serve: spx (spx-nbd, an io_uring event "
	  "loop a connection) or nbdkit (a thread a request in flight); "
	  "both serve the same plugin", NODE(ebs.server) },
	{ S_NODE, "ebs.overcommit_percent", K_INT, "100", 1, 100000, 0,
	  "how much volume size CreateVolume and ModifyVolume may provision, "
	  "in percent of the size of the file system holding the volumes; "
	  "volumes are thin, so "
	  "above 100 the host disk can fill before the volumes do",
	  NODE(ebs.overcommit_percent) },
	{ S_NODE, "ebs.cache_size_mb", K_INT, "128", 0, 65536, 0,
	  "the block cache in MiB; 0 disables it", NODE(ebs.cache_size_mb) },
	{ S_NODE, "vm.uid_base", K_INT, "2113929216", 65536, 2147418112, 0,
	  "the first of the 65536 numeric uids (and gids) the guests' QEMUs "
	  "run as when spx-vm runs as root, one per running guest, never "
	  "the same for two guests of the host, whatever their nodes "
	  "(spx-vm(8)): no user or group of the host may have one; the "
	  "default, 0x7E000000, is above login.defs' and "
	  "subordinate ids and systemd's container ranges",
	  NODE(vm.uid_base) },
	{ S_NODE, "vm.network", K_NAME, "user", 0, 0, 0,
	  "the instances' network: user (QEMU's user network: SSH "
	  "forwarded from a loopback port, the address 169.254.169.15 for "
	  "all) or bridge (each instance on a tap of vm.bridge with an "
	  "address of its own from vm.address's network, by DHCP; needs "
	  "root: spx up then runs the net service)", NODE(vm.network) },
	{ S_NODE, "vm.bridge", K_NAME, "spxbr0", 0, 0, 0,
	  "the bridge of the instances' taps when vm.network is bridge "
	  "(15 characters at most; each node on a host needs its own, and "
	  "an address of its own)", NODE(vm.bridge) },
	{ S_NODE, "vm.address", K_STR, "172.31.0.1/20", 0, 0, 0,
	  "the bridge's address and prefix (16 to 28), the instances' "
	  "gateway; instances take the network's other addresses but, as "
	  "in a VPC subnet, its first four and its last",
	  NODE(vm.address) },
};

#define NFIELDS SPX_ARRAY_SIZE(fields)

static const char *const scope_prefix[] = {
	[S_ROOT] = "",
	[S_NODE] = "nodes.*.",
	[S_POOL] = "network.external_pools[].",
};

static const struct {
	const char *name;	/* the type column of the schema */
	const char *what;	/* "must be ..." */
} kinds[] = {
	[K_STR] = { "string", "a non-empty string" },
	[K_PATH] = { "path", "a non-empty path" },
	[K_INT] = { "integer", "an integer" },
	[K_BOOL] = { "boolean", "a boolean" },
	[K_NAME] = { "name", "a name of 1 to 63 characters from a-z, 0-9 "
			     "and '-', not starting with '-'" },
	[K_REGION] = { "region", "a region or zone name of 1 to 64 "
				 "characters from a-z, 0-9 and '-', not "
				 "starting with '-'" },
	[K_ACCOUNT] = { "account id", "exactly 12 digits" },
	[K_IPV4] = { "IPv4 address", "an IPv4 address" },
	[K_IP] = { "IP address", "an IP address or 'localhost'" },
	[K_HOST] = { "host", "a host name or an IP address" },
	[K_SOURCE] = { "\"static\" or \"dhcp\"", "'static' or 'dhcp'" },
	[K_PATHS] = { "array of paths", "an array of paths" },
	[K_IPV4S] = { "array of IPv4 addresses",
		      "an array of IPv4 addresses" },
	[K_NODES] = { "table per node", "a table of nodes" },
	[K_POOLS] = { "array of tables", "an array of tables" },
};

/* Which fields of one table were set, by the entry that set them. */
struct seen {
	const struct spx_toml_entry *e[NFIELDS];
};

struct ctx {
	const char *file;
	const char *root;	/* absolute */
	struct spx_conf *c;
};

#define cerr(x, line, col, ...) \
	spx_error_at((x)->file, (line), (col), __VA_ARGS__)

/* ---- values ---- */

static bool is_string_kind(enum kind k)
{
	switch (k) {
	case K_STR:
	case K_PATH:
	case K_NAME:
	case K_REGION:
	case K_ACCOUNT:
	case K_IPV4:
	case K_IP:
	case K_HOST:
		return true;
	default:
		return false;
	}
}

static bool is_lower_name(const char *s, size_t max)
{
	size_t n = 0;

	if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
		return false;
	for (; *s; s++, n++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      *s == '-'))
			return false;
	return n <= max;
}

static bool is_ipv4(const char *s)
{
	struct in_addr a;

	return inet_pton(AF_INET, s, &a) == 1;
}

static bool is_ip(const char *s)
{
	struct in6_addr a;

	return is_ipv4(s) || inet_pton(AF_INET6, s, &a) == 1;
}

/* RFC 1123 host names: dot-separated labels of letters, digits and '-'. */
static bool is_hostname(const char *s)
{
	size_t label = 0, n = 0;

	for (; *s; s++, n++) {
		if (*s == '.') {
			if (!label || s[-1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
		if (*s == '-' && !label)
			return false;
		if (++label > 63)
			return false;
	}
	return n && n <= 253 && label && s[-1] != '-';
}

static bool is_loopback(const char *s)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (!strcmp(s, "localhost"))
		return true;
	if (inet_pton(AF_INET, s, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, s, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) ||
		       (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	return false;
}

static bool valid(enum kind k, const char *s)
{
	switch (k) {
	case K_PATH:
	case K_STR:
		return *s != '\0';
	case K_NAME:
		return is_lower_name(s, 63);
	case K_REGION:
		return is_lower_name(s, 64);
	case K_ACCOUNT:
		return strlen(s) == 12 && strspn(s, "0123456789") == 12;
	case K_IPV4:
		return is_ipv4(s);
	case K_IP:
		return !strcmp(s, "localhost") || is_ip(s);
	case K_HOST:
		return is_ip(s) || is_hostname(s);
	default:
		return false;
	}
}

/* A string from the file, made safe and short for a message. */
static const char *shown(const char *s, char *buf, size_t sz)
{
	size_t n = 0;

	for (; *s && n + 4 < sz; s++)
		buf[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	if (*s) {
		/* Cut before a character, never inside one. */
		if (((unsigned char)*s & 0xc0) == 0x80) {
			while (n && ((unsigned char)buf[n - 1] & 0xc0) == 0x80)
				n--;
			if (n)
				n--;
		}
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

static const char *a_type(enum spx_toml_type t)
{
	switch (t) {
	case SPX_TOML_TABLE:
		return "a table";
	case SPX_TOML_ARRAY:
		return "an array";
	case SPX_TOML_STRING:
		return "a string";
	case SPX_TOML_INTEGER:
		return "an integer";
	case SPX_TOML_BOOL:
		return "a boolean";
	}
	return "a value";
}

static int type_err(const struct ctx *x, const struct spx_toml *v,
		    const char *disp, const char *want)
{
	return cerr(x, v->line, v->col, "'%s' must be %s, not %s", disp, want,
		    a_type(v->type));
}

/* The absolute, lexically cleaned form of path ('.' components and repeated
 * slashes removed; '..' is kept, since symbolic links give it meaning). */
static char *resolve(const char *root, const char *path)
{
	struct spx_buf in = SPX_BUF_INIT, out = SPX_BUF_INIT;
	const char *s, *e;

	if (path[0] != '/') {
		spx_buf_adds(&in, root);
		spx_buf_addc(&in, '/');
	}
	spx_buf_adds(&in, path);
	for (s = in.p; *s; s = e) {
		while (*s == '/')
			s++;
		for (e = s; *e && *e != '/'; e++)
			;
		if (e == s || (e - s == 1 && *s == '.'))
			continue;
		spx_buf_addc(&out, '/');
		spx_buf_add(&out, s, (size_t)(e - s));
	}
	if (!out.len)
		spx_buf_addc(&out, '/');
	spx_buf_release(&in);
	return spx_buf_detach(&out, NULL);
}

/* Check the string v against kind and return the value to store (a copy,
 * resolved for paths), or NULL after an error. */
static char *take_string(const struct ctx *x, enum kind kind,
			 const struct spx_toml *v, const char *disp)
{
	char buf[80];
	char *s;

	if (v->type != SPX_TOML_STRING)
		return type_err(x, v, disp, "a string"), NULL;
	if (!valid(kind, v->v.s)) {
		cerr(x, v->line, v->col, "'%s' must be %s, not '%s'", disp,
		     kinds[kind].what, shown(v->v.s, buf, sizeof(buf)));
		return NULL;
	}
	if (kind != K_PATH)
		return spx_strdup(v->v.s);
	s = resolve(x->root, v->v.s);
	if (strlen(s) >= PATH_MAX) {
		free(s);
		cerr(x, v->line, v->col, "'%s' is longer than %d bytes", disp,
		     PATH_MAX - 1);
		return NULL;
	}
	return s;
}

static void strv_free(struct spx_conf_strv *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = 0;
}

static void strv_add(struct spx_conf_strv *sv, char *s)
{
	sv->v = spx_realloc(sv->v, (sv->n + 1) * sizeof(*sv->v));
	sv->v[sv->n++] = s;
}

static int range_err(const struct ctx *x, const struct spx_toml *v,
		     const char *disp, const struct field *f, int64_t got,
		     const char *unit)
{
	if (f->max == INT64_MAX)
		return cerr(x, v->line, v->col,
			    "'%s' must be at least %lld%s, not %lld", disp,
			    (long long)f->min, unit, (long long)got);
	return cerr(x, v->line, v->col,
		    "'%s' must be between %lld and %lld%s, not %lld", disp,
		    (long long)f->min, (long long)f->max, unit,
		    (long long)got);
}

static void set_int(const struct field *f, void *slot, int64_t i)
{
	int n = (int)i;

	if (f->size == sizeof(int))
		memcpy(slot, &n, sizeof(n));
	else
		memcpy(slot, &i, sizeof(i));
}

/* Store the value v of field f (shown as disp) into base. */
static int store(const struct ctx *x, const struct field *f,
		 const struct spx_toml *v, const char *disp, void *base)
{
	void *slot = (char *)base + f->off;
	struct spx_conf_strv *sv = slot;
	enum kind ik = f->kind == K_PATHS ? K_PATH : K_IPV4;
	char buf[80], *d, *s;
	int source;

	switch (f->kind) {
	case K_INT:
		if (v->type != SPX_TOML_INTEGER)
			return type_err(x, v, disp, "an integer");
		if (v->v.i < f->min || v->v.i > f->max)
			return range_err(x, v, disp, f, v->v.i, "");
		set_int(f, slot, v->v.i);
		return 0;
	case K_BOOL:
		if (v->type != SPX_TOML_BOOL)
			return type_err(x, v, disp, "a boolean");
		memcpy(slot, &v->v.b, sizeof(bool));
		return 0;
	case K_SOURCE:
		if (v->type != SPX_TOML_STRING)
			return type_err(x, v, disp, "a string");
		if (!strcmp(v->v.s, "static")) {
			source = SPX_CONF_POOL_STATIC;
		} else if (!strcmp(v->v.s, "dhcp")) {
			source = SPX_CONF_POOL_DHCP;
		} else {
			return cerr(x, v->line, v->col,
				    "'%s' must be %s, not '%s'", disp,
				    kinds[K_SOURCE].what,
				    shown(v->v.s, buf, sizeof(buf)));
		}
		memcpy(slot, &source, sizeof(source));
		return 0;
	case K_PATHS:
	case K_IPV4S:
		if (v->type != SPX_TOML_ARRAY)
			return type_err(x, v, disp, "an array");
		if ((int64_t)v->n < f->min || (int64_t)v->n > f->max)
			return cerr(x, v->line, v->col,
				    "'%s' must have %lld to %lld items, not "
				    "%zu", disp, (long long)f->min,
				    (long long)f->max, v->n);
		strv_free(sv);
		for (size_t i = 0; i < v->n; i++) {
			d = spx_xprintf("%s[%zu]", disp, i);
			s = take_string(x, ik, v->item[i], d);
			free(d);
			if (!s)
				return -1;
			for (size_t j = 0; j < sv->n; j++) {
				if (strcmp(sv->v[j], s))
					continue;
				free(s);
				return cerr(x, v->item[i]->line,
					    v->item[i]->col,
					    "'%s' lists '%s' twice", disp,
					    shown(v->item[i]->v.s, buf,
						  sizeof(buf)));
			}
			strv_add(sv, s);
		}
		return 0;
	default:
		s = take_string(x, f->kind, v, disp);
		if (!s)
			return -1;
		free(*(char **)slot);
		*(char **)slot = s;
		return 0;
	}
}

/* Apply the literal defaults of a scope. */
static void set_defaults(const struct ctx *x, enum scope sc, void *base)
{
	const struct field *f;
	void *slot;
	char *s;

	for (f = fields; f < fields + NFIELDS; f++) {
		if (f->scope != sc || !f->def || (f->flags & F_DERIVED))
			continue;
		slot = (char *)base + f->off;
		if (f->kind == K_INT) {
			set_int(f, slot, strtoll(f->def, NULL, 10));
		} else if (f->kind == K_BOOL) {
			bool b = !strcmp(f->def, "true");

			memcpy(slot, &b, sizeof(b));
		} else if (is_string_kind(f->kind)) {
			s = f->kind == K_PATH ? resolve(x->root, f->def)
					      : spx_strdup(f->def);
			free(*(char **)slot);
			*(char **)slot = s;
		}
	}
}

static void release_scope(enum scope sc, void *base)
{
	const struct field *f;
	void *slot;

	for (f = fields; f < fields + NFIELDS; f++) {
		if (f->scope != sc)
			continue;
		slot = (char *)base + f->off;
		if (is_string_kind(f->kind)) {
			free(*(char **)slot);
			*(char **)slot = NULL;
		} else if (f->kind == K_PATHS || f->kind == K_IPV4S) {
			strv_free(slot);
		}
	}
}

/* ---- the walk ---- */

static const struct field *field_find(enum scope sc, const char *key)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].scope == sc && !strcmp(fields[i].key, key))
			return &fields[i];
	return NULL;
}

/* Whether key names a table on the way to some field of the scope. */
static bool field_prefix(enum scope sc, const char *key)
{
	size_t n = strlen(key);

	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].scope == sc &&
		    !strncmp(fields[i].key, key, n) && fields[i].key[n] == '.')
			return true;
	return false;
}

static bool is_bare_key(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

/* The display path of key under disp, quoting a key that is not bare. */
static char *join(const char *disp, const char *key)
{
	char buf[80];

	if (is_bare_key(key))
		return spx_xprintf("%s%s%s", disp, *disp ? "." : "", key);
	return spx_xprintf("%s%s\"%s\"", disp, *disp ? "." : "",
			   shown(key, buf, sizeof(buf)));
}

static int walk(const struct ctx *x, const struct spx_toml *t, enum scope sc,
		const char *rel, const char *disp, void *base,
		struct seen *seen);
static int do_nodes(const struct ctx *x, const struct spx_toml_entry *e);
static int do_pools(const struct ctx *x, const struct spx_toml_entry *e);

static int walk_entry(const struct ctx *x, const struct spx_toml_entry *e,
		      enum scope sc, const char *rel, const char *disp,
		      void *base, struct seen *seen)
{
	const struct field *f = NULL;
	char *r, *d;
	int rc;

	r = spx_xprintf("%s%s%s", rel, *rel ? "." : "", e->key);
	d = join(disp, e->key);
	/* A quoted key holding a dot must not pass for a dotted one. */
	if (!strchr(e->key, '.'))
		f = field_find(sc, r);
	if (f) {
		seen->e[f - fields] = e;
		if (f->kind == K_NODES)
			rc = do_nodes(x, e);
		else if (f->kind == K_POOLS)
			rc = do_pools(x, e);
		else
			rc = store(x, f, e->val, d, base);
	} else if (!strchr(e->key, '.') && field_prefix(sc, r)) {
		if (e->val->type != SPX_TOML_TABLE)
			rc = type_err(x, e->val, d, "a table");
		else
			rc = walk(x, e->val, sc, r, d, base, seen);
	} else {
		rc = cerr(x, e->line, e->col, "unknown key '%s'", d);
	}
	free(r);
	free(d);
	return rc;
}

static int walk(const struct ctx *x, const struct spx_toml *t, enum scope sc,
		const char *rel, const char *disp, void *base,
		struct seen *seen)
{
	for (size_t i = 0; i < t->n; i++)
		if (walk_entry(x, &t->ent[i], sc, rel, disp, base, seen))
			return -1;
	return 0;
}

static const struct spx_toml_entry *seen_of(const struct seen *seen,
					    enum scope sc, const char *key)
{
	const struct field *f = field_find(sc, key);

	return f ? seen->e[f - fields] : NULL;
}

static int check_node(const struct ctx *x, const struct spx_conf_node *n,
		      const struct seen *seen)
{
	const struct spx_toml_entry *e;
	struct spx_net_cidr cidr;
	char buf[80];

	if (n->gw.http && !is_loopback(n->gw.bind)) {
		e = seen_of(seen, S_NODE, "gw.http");
		return cerr(x, e->line, e->col,
			    "'nodes.%s.gw.http' is allowed only with a "
			    "loopback bind address (127.0.0.0/8, ::1, "
			    "localhost), not '%s'", n->name,
			    shown(n->gw.bind, buf, sizeof(buf)));
	}
	if (strcmp(n->vm.network, "user") && strcmp(n->vm.network, "bridge")) {
		e = seen_of(seen, S_NODE, "vm.network");
		return cerr(x, e->val->line, e->val->col,
			    "'nodes.%s.vm.network' must be 'user' or "
			    "'bridge', not '%s'", n->name,
			    shown(n->vm.network, buf, sizeof(buf)));
	}
	if (!spx_net_name_valid(n->vm.bridge)) {
		e = seen_of(seen, S_NODE, "vm.bridge");
		return cerr(x, e->val->line, e->val->col,
			    "'nodes.%s.vm.bridge' must be an interface name "
			    "of 15 characters at most, not '%s'", n->name,
			    shown(n->vm.bridge, buf, sizeof(buf)));
	}
	if (spx_net_cidr_parse(n->vm.address, strlen(n->vm.address),
			       &cidr) < 0 ||
	    cidr.prefix < 16 || cidr.prefix > 28) {
		spx_error_clear();
		e = seen_of(seen, S_NODE, "vm.address");
		return cerr(x, e->val->line, e->val->col,
			    "'nodes.%s.vm.address' must be a host's address "
			    "and a prefix of 16 to 28 (172.31.0.1/20), not "
			    "'%s'", n->name,
			    shown(n->vm.address, buf, sizeof(buf)));
	}
	if (n->gw.ec2_port == n->gw.s3_port) {
		e = seen_of(seen, S_NODE, "gw.s3_port");
		if (!e)
			e = seen_of(seen, S_NODE, "gw.ec2_port");
		return cerr(x, e->val->line, e->val->col,
			    "'nodes.%s.gw.s3_port' and "
			    "'nodes.%s.gw.ec2_port' are both %d", n->name,
			    n->name, n->gw.s3_port);
	}
	return 0;
}

static int do_nodes(const struct ctx *x, const struct spx_toml_entry *e)
{
	const struct field *f = field_find(S_ROOT, "nodes");
	const struct spx_toml *t = e->val;
	const struct spx_toml_entry *ne;
	struct spx_conf *c = x->c;
	struct spx_conf_node *n;
	struct seen seen;
	char buf[80], *d;
	int rc;

	if (t->type != SPX_TOML_TABLE)
		return type_err(x, t, "nodes", "a table");
	if ((int64_t)t->n > f->max)
		return cerr(x, t->line, t->col,
			    "more than %lld nodes are defined",
			    (long long)f->max);
	c->nodes = spx_calloc(t->n, sizeof(*c->nodes));
	for (size_t i = 0; i < t->n; i++) {
		ne = &t->ent[i];
		if (!is_lower_name(ne->key, 63))
			return cerr(x, ne->line, ne->col,
				    "invalid node name '%s': it must be %s",
				    shown(ne->key, buf, sizeof(buf)),
				    kinds[K_NAME].what);
		d = join("nodes", ne->key);
		if (ne->val->type != SPX_TOML_TABLE) {
			rc = type_err(x, ne->val, d, "a table");
			free(d);
			return rc;
		}
		n = &c->nodes[c->n_nodes++];
		n->name = spx_strdup(ne->key);
		n->line = ne->val->line;
		n->col = ne->val->col;
		set_defaults(x, S_NODE, n);
		memset(&seen, 0, sizeof(seen));
		rc = walk(x, ne->val, S_NODE, "", d, n, &seen);
		free(d);
		if (rc || check_node(x, n, &seen))
			return -1;
	}
	return 0;
}

static uint32_t ipv4(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return 0;
	return ntohl(a.s_addr);
}

static int check_pool(const struct ctx *x, const struct spx_conf_pool *p,
		      const struct spx_toml *t, const char *disp,
		      const struct seen *seen)
{
	const struct spx_toml_entry *e;
	const struct field *f;
	uint32_t start, end, gw, mask;
	char buf[80];

	for (f = fields; f < fields + NFIELDS; f++) {
		if (f->scope != S_POOL || seen->e[f - fields])
			continue;
		if (f->flags & F_REQUIRED)
			return cerr(x, t->line, t->col,
				    "missing key '%s.%s'", disp, f->key);
		if ((f->flags & F_STATIC) &&
		    p->source == SPX_CONF_POOL_STATIC)
			return cerr(x, t->line, t->col,
				    "missing key '%s.%s' (required when "
				    "source is 'static')", disp, f->key);
	}
	for (const struct spx_conf_pool *q = x->c->network.external_pools;
	     q < p; q++) {
		if (strcmp(q->name, p->name))
			continue;
		e = seen_of(seen, S_POOL, "name");
		return cerr(x, e->val->line, e->val->col,
			    "duplicate pool name '%s'", p->name);
	}
	if (p->source != SPX_CONF_POOL_STATIC)
		return 0;
	start = ipv4(p->range_start);
	end = ipv4(p->range_end);
	gw = ipv4(p->gateway);
	mask = p->prefix_len == 32 ? 0xffffffffu
				   : ~(0xffffffffu >> p->prefix_len);
	if (start > end) {
		e = seen_of(seen, S_POOL, "range_end");
		return cerr(x, e->val->line, e->val->col,
			    "'%s.range_end' %s is before range_start %s",
			    disp, p->range_end, p->range_start);
	}
	if ((start & mask) != (gw & mask) || (end & mask) != (gw & mask)) {
		e = seen_of(seen, S_POOL,
			    (start & mask) != (gw & mask) ? "range_start"
							  : "range_end");
		return cerr(x, e->val->line, e->val->col,
			    "'%s.%s' %s is outside the network %s/%d", disp,
			    e->key, shown(e->val->v.s, buf, sizeof(buf)),
			    p->gateway, p->prefix_len);
	}
	return 0;
}

static int do_pools(const struct ctx *x, const struct spx_toml_entry *e)
{
	const struct field *f = field_find(S_ROOT, "network.external_pools");
	const struct spx_toml *t = e->val, *pt;
	struct spx_conf *c = x->c;
	struct spx_conf_pool *p;
	struct seen seen;
	char *d;
	int rc;

	if (t->type != SPX_TOML_ARRAY)
		return type_err(x, t, "network.external_pools",
				"an array of tables");
	if ((int64_t)t->n > f->max)
		return cerr(x, t->line, t->col,
			    "more than %lld external pools are defined",
			    (long long)f->max);
	c->network.external_pools = spx_calloc(t->n, sizeof(*p));
	for (size_t i = 0; i < t->n; i++) {
		pt = t->item[i];
		d = spx_xprintf("network.external_pools[%zu]", i);
		if (pt->type != SPX_TOML_TABLE) {
			rc = type_err(x, pt, d, "a table");
			free(d);
			return rc;
		}
		p = &c->network.external_pools[c->network.n_external_pools++];
		p->line = pt->line;
		p->col = pt->col;
		set_defaults(x, S_POOL, p);
		memset(&seen, 0, sizeof(seen));
		rc = walk(x, pt, S_POOL, "", d, p, &seen);
		if (!rc)
			rc = check_pool(x, p, pt, d, &seen);
		free(d);
		if (rc)
			return -1;
	}
	return 0;
}

/* Defaults that depend on other keys, and the choice of this node. */
static int finish(const struct ctx *x, const struct seen *seen)
{
	struct spx_conf *c = x->c;
	const struct spx_toml_entry *e;
	struct spx_conf_node *n;
	char buf[80];

	if (!c->n_nodes) {
		e = seen_of(seen, S_ROOT, "nodes");
		return cerr(x, e ? e->val->line : 1, e ? e->val->col : 1,
			    "no node is defined: at least one [nodes.NAME] "
			    "table is required");
	}
	for (n = c->nodes; n < c->nodes + c->n_nodes; n++) {
		if (!n->az)
			n->az = spx_xprintf("%sa", c->aws.region);
		if (!n->obj.drives.n)
			strv_add(&n->obj.drives,
				 spx_xprintf("%s/obj/d0",
					     strcmp(c->paths.data, "/")
						     ? c->paths.data
						     : ""));
	}
	e = seen_of(seen, S_ROOT, "node");
	if (!e) {
		if (c->n_nodes > 1)
			return cerr(x, 1, 1,
				    "'node' is required: %zu nodes are "
				    "defined", c->n_nodes);
		c->node = spx_strdup(c->nodes[0].name);
		return 0;
	}
	if (!spx_conf_find_node(c, c->node))
		return cerr(x, e->val->line, e->val->col,
			    "'node' names '%s', which is not a [nodes.*] "
			    "table", shown(c->node, buf, sizeof(buf)));
	return 0;
}

static char *abs_root(const char *root)
{
	char *cwd, *r;

	if (root && root[0] == '/')
		return resolve("/", root);
	cwd = getcwd(NULL, 0);
	if (!cwd) {
		spx_error_errno(SPX_FAIL, "cannot get the current directory");
		return NULL;
	}
	r = resolve(cwd, root ? root : ".");
	free(cwd);
	return r;
}

int spx_conf_parse(const char *filename, const char *text, size_t len,
		   const char *root, struct spx_conf *out)
{
	struct ctx x = { .file = filename ? filename : "<input>", .c = out };
	struct spx_toml *doc = NULL;
	struct seen seen;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->file = spx_strdup(x.file);
	out->root = abs_root(root);
	if (!out->root)
		goto out;
	x.root = out->root;
	doc = spx_toml_parse(x.file, text, len, SPX_CONF_MAX_BYTES);
	if (!doc)
		goto out;
	set_defaults(&x, S_ROOT, out);
	memset(&seen, 0, sizeof(seen));
	if (walk(&x, doc, S_ROOT, "", "", out, &seen))
		goto out;
	if (finish(&x, &seen))
		goto out;
	rc = 0;
out:
	spx_toml_free(doc);
	if (rc)
		spx_conf_release(out);
	return rc;
}

int spx_conf_load(const char *path, const char *root, struct spx_conf *out)
{
	struct spx_buf b = SPX_BUF_INIT;
	int rc;

	memset(out, 0, sizeof(*out));
	if (spx_buf_read_file(&b, path, SPX_CONF_MAX_BYTES)) {
		spx_buf_release(&b);
		return -1;
	}
	rc = spx_conf_parse(path, b.p, b.len, root, out);
	spx_buf_release(&b);
	return rc;
}

const struct spx_conf_node *spx_conf_find_node(const struct spx_conf *c,
					       const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < c->n_nodes; i++)
		if (!strcmp(c->nodes[i].name, name))
			return &c->nodes[i];
	return NULL;
}

const struct spx_conf_node *spx_conf_self(const struct spx_conf *c)
{
	return spx_conf_find_node(c, c->node);
}

void spx_conf_release(struct spx_conf *c)
{
	release_scope(S_ROOT, c);
	for (size_t i = 0; i < c->n_nodes; i++) {
		release_scope(S_NODE, &c->nodes[i]);
		free(c->nodes[i].name);
	}
	free(c->nodes);
	for (size_t i = 0; i < c->network.n_external_pools; i++)
		release_scope(S_POOL, &c->network.external_pools[i]);
	free(c->network.external_pools);
	free(c->file);
	free(c->root);
	memset(c, 0, sizeof(*c));
}

void spx_conf_schema_print(FILE *f)
{
	const struct field *fl;
	char type[96];
	const char *def;

	for (fl = fields; fl < fields + NFIELDS; fl++) {
		const char *name = kinds[fl->kind].name;

		if (fl->kind == K_INT && fl->max == INT64_MAX)
			snprintf(type, sizeof(type), "%s >= %lld", name,
				 (long long)fl->min);
		else if (fl->kind == K_INT)
			snprintf(type, sizeof(type), "%s %lld..%lld", name,
				 (long long)fl->min, (long long)fl->max);
		else if (fl->kind == K_PATHS || fl->kind == K_IPV4S ||
			 fl->kind == K_NODES || fl->kind == K_POOLS)
			snprintf(type, sizeof(type), "%s, %lld..%lld", name,
				 (long long)fl->min, (long long)fl->max);
		else
			snprintf(type, sizeof(type), "%s", name);
		if (fl->flags & F_REQUIRED)
			def = "required";
		else if (fl->flags & F_STATIC)
			def = "required when static";
		else
			def = fl->def ? fl->def : "none";
		fprintf(f, "%s%s%s\t%s\t%s\t%s\n", scope_prefix[fl->scope],
			fl->key, fl->kind == K_NODES ? ".*" : "", type, def,
			fl->desc);
	}
}
