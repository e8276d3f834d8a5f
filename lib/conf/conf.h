/* conf.h: spinifex.toml, the configuration of a node.
 *
 *   struct spx_conf c;
 *   if (spx_conf_load("/var/lib/spx/spinifex.toml", "/var/lib/spx", &c))
 *           spx_die_last();
 *   self = spx_conf_self(&c);
 *   listen(self->gw.bind, self->gw.s3_port);
 *   spx_conf_release(&c);
 *
 * One static schema in conf.c is the single source of truth: it drives the
 * parsing, the defaults, the checks and spx_conf_schema_print(), from which
 * the spinifex.toml(5) page is generated. Every key is optional unless the
 * schema says otherwise; an unknown key, a value of the wrong type or out of
 * range is an SPX_USAGE error that reads "FILE:LINE:COL: message" with the
 * position of the offending key or value.
 *
 * After a successful parse every string is set (NULL only for the static
 * pool keys of a "dhcp" pool), every path is absolute (relative paths are
 * resolved against root), and defaults have been applied. All memory
 * belongs to the struct and is freed by spx_conf_release().
 */
#ifndef SPX_CONF_H
#define SPX_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* spx_conf_load() refuses larger files. */
#define SPX_CONF_MAX_BYTES (1024 * 1024)

/* A list of strings, each malloc'd. */
struct spx_conf_strv {
	char **v;
	size_t n;
};

enum spx_conf_pool_source {
	SPX_CONF_POOL_STATIC = 1,
	SPX_CONF_POOL_DHCP = 2,
};

/* [[network.external_pools]] */
struct spx_conf_pool {
	char *name;
	int source;		/* enum spx_conf_pool_source */
	/* Dotted IPv4 addresses; NULL in a dhcp pool unless set. */
	char *range_start;
	char *range_end;
	char *gateway;
	int prefix_len;		/* 0 in a dhcp pool unless set */
	struct spx_conf_strv dns_servers;
	int line, col;		/* where the pool's table starts */
};

/* [nodes.NAME] */
struct spx_conf_node {
	char *name;
	char *host;		/* what other nodes and clients dial */
	char *az;
	struct {
		char *bind;	/* IP literal or "localhost" */
		int ec2_port;
		int s3_port;
		bool http;	/* plain HTTP: only with a loopback bind */
		char *s3_domain; /* BUCKET.s3_domain requests; or NULL */
		bool s3_sigv2;	/* S3 accepts Signature Version 2 */
		bool s3_public_access_block; /* buckets' default: all on */
		int threads;
		int write_threads;
		int64_t max_header_bytes;
		int64_t max_body_bytes;
		int64_t max_query_body_bytes;
		int max_conns_per_addr;	/* 0: no cap */
		int header_timeout;	/* seconds */
		int idle_timeout;	/* seconds */
		int body_timeout;	/* seconds */
		int64_t body_min_rate;	/* bytes a second */
	} gw;
	struct {
		struct spx_conf_strv drives;	/* absolute paths */
		int data;
		int parity;
		int lifecycle_interval;	/* seconds between passes */
		int lifecycle_day;	/* seconds in a lifecycle day */
	} obj;
	struct {
		int default_threads;	/* nbdkit --threads */
		char *server;		/* "spx" (spx-nbd) or "nbdkit" */
		int cache_size_mb;	/* 0 disables the cache */
		int overcommit_percent; /* of the volume store's size */
	} ebs;
	struct {
		int64_t uid_base;	/* guests' QEMU users (lib/vm/runas.h) */
		char *network;		/* "user" or "bridge" */
		char *bridge;		/* the bridge of their taps */
		char *address;		/* its address, "a.b.c.d/n" */
	} vm;
	int line, col;		/* where the node's table starts */
};

struct spx_conf {
	char *file;		/* the name given to spx_conf_parse */
	char *root;		/* absolute */
	char *node;		/* the name of this host's node */
	struct {
		char *region;
		char *account_id;	/* 12 digits */
	} aws;
	struct {
		char *ca_cert;
		char *cert;
		char *key;
	} tls;
	struct {
		char *file;
	} credentials;
	struct {
		char *state;
		char *data;
		char *run;
		char *log;
	} paths;
	struct {
		bool ipsec_enabled;
		int underlay_mtu;
		bool firewall_enabled;
		struct spx_conf_pool *external_pools;
		size_t n_external_pools;
	} network;
	struct spx_conf_node *nodes;	/* in the order of the file */
	size_t n_nodes;
};

/* Parse len bytes of text named filename (in messages; NULL reads
 * "<input>"). root is the directory relative paths are resolved against; a
 * relative root is taken from the current directory and NULL means the
 * current directory. out is overwritten (release an old one first); on
 * failure it is left empty and releasing it is harmless. Returns 0, or -1
 * after spx_error(): SPX_USAGE for anything malformed. */
int spx_conf_parse(const char *filename, const char *text, size_t len,
		   const char *root, struct spx_conf *out);

/* Read path (at most SPX_CONF_MAX_BYTES) and parse it. A missing file is
 * SPX_NO ("cannot open '...'"), a read error SPX_FAIL. */
int spx_conf_load(const char *path, const char *root, struct spx_conf *out);

/* The node named by `node`; never NULL after a successful parse. */
const struct spx_conf_node *spx_conf_self(const struct spx_conf *c);
/* The node called name, or NULL. */
const struct spx_conf_node *spx_conf_find_node(const struct spx_conf *c,
					       const char *name);

/* Free everything c holds and leave it empty. */
void spx_conf_release(struct spx_conf *c);

/* One line per key of the schema: "path\ttype\tdefault\tdescription".
 * '*' in a path stands for a node name, "[]" for each pool. */
void spx_conf_schema_print(FILE *f);

#endif
