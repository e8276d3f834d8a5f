/* node.h: where a node lives on disk, and making a new one.
 *
 * A node is found from --root DIR, else $SPX_ROOT, else the system layout
 * (/etc/spinifex/spinifex.toml with data under /var/lib/spinifex). Under a
 * root everything is in one tree:
 *
 *   DIR/spinifex.toml        the configuration (spinifex.toml(5))
 *   DIR/credentials.json     access keys, mode 0600
 *   DIR/tls/ca.pem ca.key    the node CA (key 0600)
 *   DIR/tls/node.pem node.key   the gateway's certificate
 *   DIR/aws/credentials config  a ready profile named "spx" for the aws CLI
 *   DIR/state DIR/data DIR/run DIR/log
 */
#ifndef SPX_NODE_H
#define SPX_NODE_H

#include "spx.h"

struct spx_node_loc {
	char *root;	/* absolute */
	char *conf;	/* the spinifex.toml path */
	bool system;	/* the /etc + /var/lib layout */
};

/* root_opt: the --root value or NULL. */
void spx_node_locate(const char *root_opt, struct spx_node_loc *loc);
void spx_node_loc_release(struct spx_node_loc *loc);

struct spx_node_init {
	const char *name;	/* "node1" */
	const char *region;	/* "us-east-1" */
	const char *az;		/* NULL: region + "a" */
	const char *bind;	/* "127.0.0.1" */
	int ec2_port, s3_port;
	int nodes;		/* 1; clusters come later */
	bool http;		/* plain HTTP on loopback */
	bool force;
};

/* Write a new node: configuration, admin key, CA and certificate, aws
 * profile, directories. Refuses (SPX_NO) if the configuration exists and
 * force is not set. On success fills *admin with the new key. */
struct spx_cred;
int spx_node_init(const struct spx_node_loc *loc,
		  const struct spx_node_init *in, struct spx_cred *admin);

/* Validation used by init and by the config schema. */
bool spx_valid_region(const char *s);
bool spx_valid_node_name(const char *s);

#endif
