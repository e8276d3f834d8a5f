/* Unit tests for lib/conf/conf: the spinifex.toml schema, its defaults,
 * path resolution, node selection and every class of error with its
 * position. */
#include "spx.h"

#include "conf/conf.h"

#include "t.h"

static const char full[] =
	"node = \"node1\"\n"
	"[aws]\n"
	"region = \"eu-west-2\"\n"
	"account_id = \"123456789012\"\n"
	"[tls]\n"
	"ca_cert = \"tls/ca.pem\"\n"
	"cert = \"/etc/spx/node.pem\"\n"
	"key = \"./tls//node.key\"\n"
	"[credentials]\n"
	"file = \"creds.json\"\n"
	"[paths]\n"
	"state = \"st\"\n"
	"data = \"/data/\"\n"
	"run = \"r/./un\"\n"
	"log = \"../log\"\n"
	"[network]\n"
	"ipsec_enabled = true\n"
	"underlay_mtu = 9000\n"
	"firewall_enabled = true\n"
	"[[network.external_pools]]\n"
	"name = \"wan\"\n"
	"source = \"static\"\n"
	"range_start = \"192.168.157.201\"\n"
	"range_end = \"192.168.157.250\"\n"
	"gateway = \"192.168.157.1\"\n"
	"prefix_len = 24\n"
	"dns_servers = [\"1.1.1.1\", \"8.8.8.8\"]\n"
	"[[network.external_pools]]\n"
	"name = \"lan\"\n"
	"source = \"dhcp\"\n"
	"[nodes.node1]\n"
	"host = \"node1.example.com\"\n"
	"az = \"eu-west-2b\"\n"
	"[nodes.node1.gw]\n"
	"bind = \"0.0.0.0\"\n"
	"ec2_port = 19999\n"
	"s3_port = 18443\n"
	"http = false\n"
	"threads = 4\n"
	"max_header_bytes = 8192\n"
	"max_body_bytes = 1_000_000\n"
	"max_query_body_bytes = 65536\n"
	"max_conns_per_addr = 0\n"
	"header_timeout = 5\n"
	"idle_timeout = 30\n"
	"body_timeout = 10\n"
	"body_min_rate = 0\n"
	"[nodes.node1.obj]\n"
	"drives = [\"d/0\", \"/mnt/d1\"]\n"
	"data = 4\n"
	"parity = 2\n"
	"[nodes.node1.ebs]\n"
	"default_threads = 32\n"
	"cache_size_mb = 0\n"
	"[nodes.node2]\n"
	"host = \"10.0.0.2\"\n";

static int parse(const char *text, const char *root, struct spx_conf *c)
{
	spx_error_clear();
	return spx_conf_parse("c.toml", text, strlen(text), root, c);
}

static void test_full(void)
{
	struct spx_conf c;
	const struct spx_conf_node *n;
	const struct spx_conf_pool *p;

	if (!T_OK(parse(full, "/srv/spx", &c) == 0,
		  "the full example parses")) {
		printf("#   %s\n", spx_errmsg());
		return;
	}
	T_STR(c.file, "c.toml", "file");
	T_STR(c.root, "/srv/spx", "root");
	T_STR(c.node, "node1", "node");
	T_STR(c.aws.region, "eu-west-2", "aws.region");
	T_STR(c.aws.account_id, "123456789012", "aws.account_id");
	T_STR(c.tls.ca_cert, "/srv/spx/tls/ca.pem", "a relative path is "
						       "resolved against root");
	T_STR(c.tls.cert, "/etc/spx/node.pem", "an absolute path is kept");
	T_STR(c.tls.key, "/srv/spx/tls/node.key", "'.' and '//' are cleaned");
	T_STR(c.credentials.file, "/srv/spx/creds.json", "credentials.file");
	T_STR(c.paths.state, "/srv/spx/st", "paths.state");
	T_STR(c.paths.data, "/data", "a trailing slash is dropped");
	T_STR(c.paths.run, "/srv/spx/r/un", "paths.run");
	T_STR(c.paths.log, "/srv/spx/../log", "'..' is kept");
	T_OK(c.network.ipsec_enabled, "network.ipsec_enabled");
	T_INT(c.network.underlay_mtu, 9000, "network.underlay_mtu");
	T_OK(c.network.firewall_enabled, "network.firewall_enabled");
	T_INT(c.network.n_external_pools, 2, "two pools");
	p = &c.network.external_pools[0];
	T_STR(p->name, "wan", "pool name");
	T_INT(p->source, SPX_CONF_POOL_STATIC, "pool source static");
	T_STR(p->range_start, "192.168.157.201", "range_start");
	T_STR(p->range_end, "192.168.157.250", "range_end");
	T_STR(p->gateway, "192.168.157.1", "gateway");
	T_INT(p->prefix_len, 24, "prefix_len");
	T_INT(p->dns_servers.n, 2, "two dns servers");
	T_STR(p->dns_servers.v[1], "8.8.8.8", "dns_servers[1]");
	T_INT(p->line * 100 + p->col, 2001, "the pool is at its header");
	p = &c.network.external_pools[1];
	T_STR(p->name, "lan", "second pool name");
	T_INT(p->source, SPX_CONF_POOL_DHCP, "pool source dhcp");
	T_OK(p->range_start == NULL && p->gateway == NULL &&
	     p->prefix_len == 0 && p->dns_servers.n == 0,
	     "a dhcp pool leaves the static keys unset");
	T_INT(c.n_nodes, 2, "two nodes");
	n = spx_conf_self(&c);
	T_OK(n == &c.nodes[0], "self is node1");
	T_STR(n->name, "node1", "node name");
	T_STR(n->host, "node1.example.com", "host");
	T_STR(n->az, "eu-west-2b", "az");
	T_STR(n->gw.bind, "0.0.0.0", "gw.bind");
	T_INT(n->gw.ec2_port, 19999, "gw.ec2_port");
	T_INT(n->gw.s3_port, 18443, "gw.s3_port");
	T_OK(!n->gw.http, "gw.http");
	T_INT(n->gw.threads, 4, "gw.threads");
	T_INT(n->gw.max_header_bytes, 8192, "gw.max_header_bytes");
	T_INT(n->gw.max_body_bytes, 1000000, "gw.max_body_bytes");
	T_INT(n->gw.max_query_body_bytes, 65536, "gw.max_query_body_bytes");
	T_INT(n->gw.max_conns_per_addr, 0, "gw.max_conns_per_addr");
	T_INT(n->gw.header_timeout, 5, "gw.header_timeout");
	T_INT(n->gw.idle_timeout, 30, "gw.idle_timeout");
	T_INT(n->gw.body_timeout, 10, "gw.body_timeout");
	T_INT(n->gw.body_min_rate, 0, "gw.body_min_rate");
	T_INT(n->obj.drives.n, 2, "two drives");
	T_STR(n->obj.drives.v[0], "/srv/spx/d/0", "drives are resolved "
						  "against root");
	T_STR(n->obj.drives.v[1], "/mnt/d1", "drives[1]");
	T_INT(n->obj.data, 4, "obj.data");
	T_INT(n->obj.parity, 2, "obj.parity");
	T_INT(n->ebs.default_threads, 32, "ebs.default_threads");
	T_INT(n->ebs.cache_size_mb, 0, "ebs.cache_size_mb");
	T_INT(n->line * 100 + n->col, 3101, "the node is at its header");
	n = spx_conf_find_node(&c, "node2");
	T_OK(n == &c.nodes[1], "find_node finds node2");
	T_STR(n->host, "10.0.0.2", "node2's host");
	T_STR(n->az, "eu-west-2a", "node2's az defaults to region + a");
	T_STR(n->obj.drives.v[0], "/data/obj/d0",
	      "node2's drive defaults under paths.data");
	T_INT(n->gw.s3_port, 8443, "node2's s3 port is the default");
	T_OK(spx_conf_find_node(&c, "node3") == NULL, "find_node misses");
	T_OK(spx_conf_find_node(&c, NULL) == NULL, "find_node(NULL) misses");
	spx_conf_release(&c);
	T_OK(c.nodes == NULL && c.root == NULL && c.n_nodes == 0,
	     "release empties the struct");
	spx_conf_release(&c);
	T_OK(1, "release twice is harmless");
}

static void test_defaults(void)
{
	struct spx_conf c;
	const struct spx_conf_node *n;

	if (!T_OK(parse("[nodes.n1]\n", "/r", &c) == 0,
		  "a lone node is a whole configuration")) {
		printf("#   %s\n", spx_errmsg());
		return;
	}
	T_STR(c.node, "n1", "node defaults to the only node");
	T_STR(c.aws.region, "us-east-1", "default region");
	T_STR(c.aws.account_id, "000000000000", "default account id");
	T_STR(c.tls.ca_cert, "/r/tls/ca.pem", "default ca_cert");
	T_STR(c.tls.cert, "/r/tls/node.pem", "default cert");
	T_STR(c.tls.key, "/r/tls/node.key", "default key");
	T_STR(c.credentials.file, "/r/credentials.json", "default credentials");
	T_STR(c.paths.state, "/r/state", "default state");
	T_STR(c.paths.data, "/r/data", "default data");
	T_STR(c.paths.run, "/r/run", "default run");
	T_STR(c.paths.log, "/r/log", "default log");
	T_OK(!c.network.ipsec_enabled, "default ipsec_enabled");
	T_INT(c.network.underlay_mtu, 1500, "default underlay_mtu");
	T_OK(!c.network.firewall_enabled, "default firewall_enabled");
	T_INT(c.network.n_external_pools, 0, "no pools by default");
	n = spx_conf_self(&c);
	T_STR(n->host, "127.0.0.1", "default host");
	T_STR(n->az, "us-east-1a", "default az");
	T_STR(n->gw.bind, "127.0.0.1", "default bind");
	T_INT(n->gw.ec2_port, 9999, "default ec2_port");
	T_INT(n->gw.s3_port, 8443, "default s3_port");
	T_OK(!n->gw.http, "default http");
	T_INT(n->gw.threads, 8, "default threads");
	T_INT(n->gw.max_header_bytes, 16384, "default max_header_bytes");
	T_INT(n->gw.max_body_bytes, 5368709120LL, "default max_body_bytes");
	T_INT(n->gw.max_query_body_bytes, 1048576,
	      "default max_query_body_bytes");
	T_INT(n->gw.max_conns_per_addr, 128, "default max_conns_per_addr");
	T_INT(n->gw.header_timeout, 20, "default header_timeout");
	T_INT(n->gw.idle_timeout, 60, "default idle_timeout");
	T_INT(n->gw.body_timeout, 30, "default body_timeout");
	T_INT(n->gw.body_min_rate, 1024, "default body_min_rate");
	T_INT(n->obj.drives.n, 1, "one default drive");
	T_STR(n->obj.drives.v[0], "/r/data/obj/d0", "default drive");
	T_INT(n->obj.data, 1, "default data");
	T_INT(n->obj.parity, 0, "default parity");
	T_INT(n->ebs.default_threads, 16, "default default_threads");
	T_STR(n->ebs.server, "spx", "default ebs.server");
	T_INT(n->ebs.cache_size_mb, 128, "default cache_size_mb");
	T_INT(n->ebs.overcommit_percent, 100, "default overcommit_percent");
	T_INT(n->vm.uid_base, 2113929216, "default vm.uid_base");
	T_STR(n->vm.network, "user", "default vm.network");
	T_STR(n->vm.bridge, "spxbr0", "default vm.bridge");
	T_STR(n->vm.address, "172.31.0.1/20", "default vm.address");
	spx_conf_release(&c);

	T_OK(parse("[aws]\nregion = 'ap-south-1'\n[paths]\ndata = 'x'\n"
		   "[nodes.a]\n", "/", &c) == 0, "root / parses");
	T_STR(c.nodes[0].az, "ap-south-1a", "az follows the region");
	T_STR(c.nodes[0].obj.drives.v[0], "/x/obj/d0",
	      "the drive follows paths.data");
	T_STR(c.paths.state, "/state", "paths under root /");
	spx_conf_release(&c);

	T_OK(parse("[paths]\ndata = '/'\n[nodes.a]\n", "/r", &c) == 0,
	     "data at / parses");
	T_STR(c.nodes[0].obj.drives.v[0], "/obj/d0", "no double slash");
	spx_conf_release(&c);

	T_OK(parse("[nodes.a]\n[aws]\nregion = 'xx-1'\n[paths]\ndata = 'dd'\n",
		   "/r", &c) == 0, "keys after the nodes still count");
	T_STR(c.nodes[0].az, "xx-1a", "az from a region given later");
	T_STR(c.nodes[0].obj.drives.v[0], "/r/dd/obj/d0",
	      "drive from a data path given later");
	spx_conf_release(&c);
}

static void test_roots_and_nodes(void)
{
	struct spx_conf c;
	char *cwd = getcwd(NULL, 0), *want;

	T_OK(parse("[nodes.a]\n", "/srv//spx/./", &c) == 0, "a messy root");
	T_STR(c.root, "/srv/spx", "the root is cleaned");
	T_STR(c.paths.state, "/srv/spx/state", "paths under a cleaned root");
	spx_conf_release(&c);

	T_OK(parse("[nodes.a]\n", "rel/dir", &c) == 0, "a relative root");
	want = spx_xprintf("%s/rel/dir", strcmp(cwd, "/") ? cwd : "");
	T_STR(c.root, want, "a relative root is taken from the cwd");
	free(want);
	spx_conf_release(&c);

	T_OK(parse("[nodes.a]\n", NULL, &c) == 0, "a NULL root");
	T_STR(c.root, cwd, "a NULL root is the cwd");
	spx_conf_release(&c);
	free(cwd);

	T_OK(parse("node = 'b'\n[nodes.a]\n[nodes.b]\n[nodes.c]\n", "/r",
		   &c) == 0, "node picks one of three");
	T_STR(spx_conf_self(&c)->name, "b", "self is b");
	T_INT(c.n_nodes, 3, "three nodes");
	T_STR(c.nodes[2].name, "c", "nodes keep the file's order");
	spx_conf_release(&c);

	T_OK(parse("node = 'a'\n[nodes.a]\n", "/r", &c) == 0,
	     "node may name the only node");
	spx_conf_release(&c);

	T_OK(parse("nodes = { a = { gw = { ec2_port = 1, s3_port = 2 } } }\n"
		   "network = { external_pools = [ { name = 'p', source = "
		   "'dhcp' } ] }\n", "/r", &c) == 0,
	     "inline tables are as good as headers");
	T_INT(c.nodes[0].gw.ec2_port, 1, "inline ec2_port");
	T_STR(c.network.external_pools[0].name, "p", "inline pool");
	spx_conf_release(&c);

	T_OK(parse("nodes.a.gw.http = true\nnodes.b.gw.bind = '::1'\n"
		   "nodes.b.gw.http = true\nnodes.c.gw.bind = 'localhost'\n"
		   "nodes.c.gw.http = true\nnodes.d.gw.bind = '127.8.9.10'\n"
		   "nodes.d.gw.http = true\nnodes.e.gw.bind = "
		   "'::ffff:127.0.0.1'\nnodes.e.gw.http = true\nnode = 'a'\n",
		   "/r", &c) == 0, "http on every kind of loopback bind");
	T_OK(c.nodes[0].gw.http && c.nodes[4].gw.http, "http is stored");
	spx_conf_release(&c);

	T_OK(parse("node = 'a'\n[nodes.a]\nhost = '::1'\n[nodes.b]\n"
		   "host = 'B-2.example'\n[nodes.c.gw]\nbind = '::'\n"
		   "[nodes.0]\n[nodes.abcdefghijabcdefghijabcdefghijabcdefghij"
		   "abcdefghijabcdefghijabc]\n", "/r", &c) == 0,
	     "hosts, binds and names at their limits");
	T_INT(strlen(c.nodes[4].name), 63, "a node name of 63 characters");
	spx_conf_release(&c);

	T_OK(parse("[nodes.a.gw]\nmax_body_bytes = 9223372036854775807\n"
		   "[nodes.a.ebs]\ncache_size_mb = 65536\n[nodes.a.obj]\n"
		   "data = 16\nparity = 16\n", "/r", &c) == 0,
	     "integers at the top of their range");
	T_INT(c.nodes[0].gw.max_body_bytes, INT64_MAX, "max_body_bytes max");
	spx_conf_release(&c);
}

struct ecase {
	const char *in;
	const char *err;
};

#define N "[nodes.n]\n"

static const struct ecase ecases[] = {
	/* TOML errors pass through */
	{ "a = ", "c.toml:1:5: expected a value, found end of input" },
	{ "a = 1.5", "c.toml:1:5: floats are not supported" },
	/* unknown keys */
	{ "foo = 1\n" N, "c.toml:1:1: unknown key 'foo'" },
	{ N "[nodes.n.gw]\nfoo = 1\n", "c.toml:3:1: unknown key "
				       "'nodes.n.gw.foo'" },
	{ "[nodes.node1.gw]\nfoo = 1\n", "c.toml:2:1: unknown key "
					 "'nodes.node1.gw.foo'" },
	{ N "[aws]\nregion = 'x'\n[bogus]\n", "c.toml:4:2: unknown key "
					      "'bogus'" },
	{ "[aws]\nzone = 'x'\n" N, "c.toml:2:1: unknown key 'aws.zone'" },
	{ "\"aws.region\" = 'x'\n" N, "c.toml:1:1: unknown key "
				      "'\"aws.region\"'" },
	{ "[\"aws\"]\n\"region.x\" = 'x'\n" N, "c.toml:2:1: unknown key "
					       "'aws.\"region.x\"'" },
	{ N "hots = 'x'\n", "c.toml:2:1: unknown key 'nodes.n.hots'" },
	{ N "gw.obj = 1\n", "c.toml:2:4: unknown key 'nodes.n.gw.obj'" },
	{ N "[nodes.n.disk]\n", "c.toml:2:10: unknown key 'nodes.n.disk'" },
	{ "[network.gw]\n" N, "c.toml:1:10: unknown key 'network.gw'" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'dhcp'\nfoo = 1\n"
	  N, "c.toml:4:1: unknown key 'network.external_pools[0].foo'" },
	{ "[tls]\ncert.x = 1\n" N, "c.toml:2:1: 'tls.cert' must be a string, "
				   "not a table" },
	{ "[nodes.n.gw.bind]\n", "c.toml:1:1: 'nodes.n.gw.bind' must be "
				 "a string, not a table" },
	/* wrong types */
	{ "[aws]\nregion = 1\n" N, "c.toml:2:10: 'aws.region' must be a "
				   "string, not an integer" },
	{ "[network]\nunderlay_mtu = '1500'\n" N,
	  "c.toml:2:16: 'network.underlay_mtu' must be an integer, not a "
	  "string" },
	{ "[network]\nipsec_enabled = 1\n" N,
	  "c.toml:2:17: 'network.ipsec_enabled' must be a boolean, not an "
	  "integer" },
	{ "[network]\nfirewall_enabled = 'yes'\n" N,
	  "c.toml:2:20: 'network.firewall_enabled' must be a boolean, not a "
	  "string" },
	{ "aws = 1\n" N, "c.toml:1:7: 'aws' must be a table, not an integer" },
	{ "node = 1\n" N, "c.toml:1:8: 'node' must be a string, not an "
			  "integer" },
	{ "nodes = 1\n", "c.toml:1:9: 'nodes' must be a table, not an "
			 "integer" },
	{ "nodes = []\n", "c.toml:1:9: 'nodes' must be a table, not an array" },
	{ "[nodes]\nn1 = 1\n", "c.toml:2:6: 'nodes.n1' must be a table, not an "
			       "integer" },
	{ N "gw = 1\n", "c.toml:2:6: 'nodes.n.gw' must be a table, not an "
			"integer" },
	{ N "[nodes.n.gw]\nec2_port = '80'\n",
	  "c.toml:3:12: 'nodes.n.gw.ec2_port' must be an integer, not a "
	  "string" },
	{ N "[nodes.n.gw]\nhttp = 'true'\n",
	  "c.toml:3:8: 'nodes.n.gw.http' must be a boolean, not a string" },
	{ N "[nodes.n.obj]\ndrives = 'd0'\n",
	  "c.toml:3:10: 'nodes.n.obj.drives' must be an array, not a string" },
	{ N "[nodes.n.obj]\ndrives = ['a', 1]\n",
	  "c.toml:3:16: 'nodes.n.obj.drives[1]' must be a string, not an "
	  "integer" },
	{ N "host = ['a']\n", "c.toml:2:8: 'nodes.n.host' must be a string, "
			      "not an array" },
	/* bad strings */
	{ "[aws]\naccount_id = '123'\n" N,
	  "c.toml:2:14: 'aws.account_id' must be exactly 12 digits, not "
	  "'123'" },
	{ "[aws]\naccount_id = '12345678901a'\n" N,
	  "c.toml:2:14: 'aws.account_id' must be exactly 12 digits" },
	{ "[aws]\naccount_id = '1234567890123'\n" N,
	  "c.toml:2:14: 'aws.account_id' must be exactly 12 digits" },
	{ "[aws]\nregion = 'US-East-1'\n" N,
	  "c.toml:2:10: 'aws.region' must be a region or zone name" },
	{ "[aws]\nregion = ''\n" N, "c.toml:2:10: 'aws.region' must be a "
				    "region or zone name" },
	{ "[aws]\nregion = \"a\\nb\"\n" N, "c.toml:2:10: 'aws.region' must be "
					 "a region or zone name of 1 to 64 "
					 "characters from a-z, 0-9 and '-', "
					 "not starting with '-', not 'a?b'" },
	{ "[paths]\nstate = ''\n" N, "c.toml:2:9: 'paths.state' must be a "
				     "non-empty path, not ''" },
	{ "node = 'N1'\n" N, "c.toml:1:8: 'node' must be a name" },
	{ N "host = 'bad host'\n", "c.toml:2:8: 'nodes.n.host' must be a "
				   "host name or an IP address, not "
				   "'bad host'" },
	{ N "host = '-a.b'\n", "c.toml:2:8: 'nodes.n.host' must be a host "
			       "name" },
	{ N "host = 'a..b'\n", "c.toml:2:8: 'nodes.n.host' must be a host "
			       "name" },
	{ N "host = ''\n", "c.toml:2:8: 'nodes.n.host' must be a host name" },
	{ N "az = 'Zone'\n", "c.toml:2:6: 'nodes.n.az' must be a region or "
			     "zone name" },
	{ N "[nodes.n.gw]\nbind = 'foo'\n",
	  "c.toml:3:8: 'nodes.n.gw.bind' must be an IP address or "
	  "'localhost', not 'foo'" },
	{ N "[nodes.n.gw]\nbind = '127.1'\n",
	  "c.toml:3:8: 'nodes.n.gw.bind' must be an IP address" },
	{ N "[nodes.n.gw]\nbind = '256.0.0.1'\n",
	  "c.toml:3:8: 'nodes.n.gw.bind' must be an IP address" },
	{ N "[nodes.n.obj]\ndrives = ['']\n",
	  "c.toml:3:11: 'nodes.n.obj.drives[0]' must be a non-empty path" },
	{ N "[nodes.n.obj]\ndrives = ['a', './a/']\n",
	  "c.toml:3:16: 'nodes.n.obj.drives' lists './a/' twice" },
	/* node names */
	{ "[nodes.N1]\n", "c.toml:1:8: invalid node name 'N1': it must be a "
			  "name of 1 to 63 characters" },
	{ "[nodes.-a]\n", "c.toml:1:8: invalid node name '-a'" },
	{ "[nodes.\"\"]\n", "c.toml:1:8: invalid node name ''" },
	{ "[nodes.a_b]\n", "c.toml:1:8: invalid node name 'a_b'" },
	{ "[nodes.abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij"
	  "abcd]\n", "c.toml:1:8: invalid node name" },
	/* ranges */
	{ "[network]\nunderlay_mtu = 575\n" N,
	  "c.toml:2:16: 'network.underlay_mtu' must be between 576 and 9216, "
	  "not 575" },
	{ "[network]\nunderlay_mtu = 9217\n" N,
	  "c.toml:2:16: 'network.underlay_mtu' must be between 576 and 9216, "
	  "not 9217" },
	{ N "[nodes.n.gw]\nec2_port = 0\n",
	  "c.toml:3:12: 'nodes.n.gw.ec2_port' must be between 1 and 65535, "
	  "not 0" },
	{ N "[nodes.n.gw]\ns3_port = 65536\n",
	  "c.toml:3:11: 'nodes.n.gw.s3_port' must be between 1 and 65535, "
	  "not 65536" },
	{ N "[nodes.n.gw]\ns3_port = -1\n",
	  "c.toml:3:11: 'nodes.n.gw.s3_port' must be between 1 and 65535, "
	  "not -1" },
	{ N "[nodes.n.gw]\nthreads = 257\n",
	  "c.toml:3:11: 'nodes.n.gw.threads' must be between 1 and 256" },
	{ N "[nodes.n.gw]\nthreads = 0\n",
	  "c.toml:3:11: 'nodes.n.gw.threads' must be between 1 and 256" },
	{ N "[nodes.n.gw]\nmax_header_bytes = 1023\n",
	  "c.toml:3:20: 'nodes.n.gw.max_header_bytes' must be between 1024 "
	  "and 1048576, not 1023" },
	{ N "[nodes.n.gw]\nmax_header_bytes = 1048577\n",
	  "c.toml:3:20: 'nodes.n.gw.max_header_bytes' must be between" },
	{ N "[nodes.n.gw]\nmax_body_bytes = 0\n",
	  "c.toml:3:18: 'nodes.n.gw.max_body_bytes' must be at least 1, not "
	  "0" },
	{ N "[nodes.n.gw]\nmax_query_body_bytes = 0\n",
	  "c.toml:3:24: 'nodes.n.gw.max_query_body_bytes' must be between 1 "
	  "and 67108864, not 0" },
	{ N "[nodes.n.gw]\nheader_timeout = 0\n",
	  "c.toml:3:18: 'nodes.n.gw.header_timeout' must be between 1 and "
	  "3600, not 0" },
	{ N "[nodes.n.gw]\nmax_conns_per_addr = -1\n",
	  "c.toml:3:22: 'nodes.n.gw.max_conns_per_addr' must be between 0 and "
	  "1000000, not -1" },
	{ N "[nodes.n.obj]\ndata = 0\n",
	  "c.toml:3:8: 'nodes.n.obj.data' must be between 1 and 16, not 0" },
	{ N "[nodes.n.obj]\ndata = 17\n",
	  "c.toml:3:8: 'nodes.n.obj.data' must be between 1 and 16, not 17" },
	{ N "[nodes.n.obj]\nparity = 17\n",
	  "c.toml:3:10: 'nodes.n.obj.parity' must be between 0 and 16, not "
	  "17" },
	{ N "[nodes.n.obj]\nparity = -1\n",
	  "c.toml:3:10: 'nodes.n.obj.parity' must be between 0 and 16" },
	{ N "[nodes.n.ebs]\ndefault_threads = 0\n",
	  "c.toml:3:19: 'nodes.n.ebs.default_threads' must be between 1 and "
	  "256, not 0" },
	{ N "[nodes.n.ebs]\ncache_size_mb = 65537\n",
	  "c.toml:3:17: 'nodes.n.ebs.cache_size_mb' must be between 0 and "
	  "65536, not 65537" },
	{ N "[nodes.n.vm]\nuid_base = 1000\n",
	  "c.toml:3:12: 'nodes.n.vm.uid_base' must be between 65536 and "
	  "2147418112, not 1000" },
	{ N "[nodes.n.vm]\nnetwork = 'tap'\n",
	  "c.toml:3:11: 'nodes.n.vm.network' must be 'user' or 'bridge', "
	  "not 'tap'" },
	{ N "[nodes.n.vm]\nbridge = 'a-bridge-name-of-16'\n",
	  "c.toml:3:10: 'nodes.n.vm.bridge' must be an interface name of 15 "
	  "characters at most, not 'a-bridge-name-of-16'" },
	{ N "[nodes.n.vm]\naddress = '172.31.0.0/20'\n",
	  "c.toml:3:11: 'nodes.n.vm.address' must be a host's address and a "
	  "prefix of 16 to 28 (172.31.0.1/20), not '172.31.0.0/20'" },
	{ N "[nodes.n.vm]\naddress = '10.1.2.1/29'\n",
	  "c.toml:3:11: 'nodes.n.vm.address' must be a host's address" },
	{ N "[nodes.n.vm]\naddress = '010.1.2.1/24'\n",
	  "c.toml:3:11: 'nodes.n.vm.address' must be a host's address" },
	{ N "[nodes.n.obj]\ndrives = []\n",
	  "c.toml:3:10: 'nodes.n.obj.drives' must have 1 to 64 items, not 0" },
	/* the gateway */
	{ N "[nodes.n.gw]\nbind = '0.0.0.0'\nhttp = true\n",
	  "c.toml:4:1: 'nodes.n.gw.http' is allowed only with a loopback bind "
	  "address (127.0.0.0/8, ::1, localhost), not '0.0.0.0'" },
	{ N "[nodes.n.gw]\nhttp = true\nbind = '10.0.0.1'\n",
	  "c.toml:3:1: 'nodes.n.gw.http' is allowed only with a loopback" },
	{ N "[nodes.n.gw]\nhttp = true\nbind = '::'\n",
	  "c.toml:3:1: 'nodes.n.gw.http' is allowed only with a loopback" },
	{ N "[nodes.n.gw]\nhttp = true\nbind = '128.0.0.1'\n",
	  "c.toml:3:1: 'nodes.n.gw.http' is allowed only with a loopback" },
	{ N "gw.http = true\ngw.bind = '::ffff:10.0.0.1'\n",
	  "c.toml:2:4: 'nodes.n.gw.http' is allowed only with a loopback" },
	{ N "[nodes.n.gw]\nec2_port = 8443\n",
	  "c.toml:3:12: 'nodes.n.gw.s3_port' and 'nodes.n.gw.ec2_port' are "
	  "both 8443" },
	{ N "[nodes.n.gw]\ns3_port = 9999\n",
	  "c.toml:3:11: 'nodes.n.gw.s3_port' and 'nodes.n.gw.ec2_port' are "
	  "both 9999" },
	/* nodes */
	{ "", "c.toml:1:1: no node is defined: at least one [nodes.NAME] "
	      "table is required" },
	{ "[aws]\n", "c.toml:1:1: no node is defined" },
	{ "\n[nodes]\n", "c.toml:2:1: no node is defined" },
	{ "[nodes.a]\n[nodes.b]\n", "c.toml:1:1: 'node' is required: 2 nodes "
				    "are defined" },
	{ "node = 'n2'\n[nodes.n1]\n", "c.toml:1:8: 'node' names 'n2', which "
				       "is not a [nodes.*] table" },
	/* pools */
	{ "[[network.external_pools]]\nsource = 'dhcp'\n" N,
	  "c.toml:1:1: missing key 'network.external_pools[0].name'" },
	{ "[[network.external_pools]]\nname = 'a'\n" N,
	  "c.toml:1:1: missing key 'network.external_pools[0].source'" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'dhcp'\n"
	  "[[network.external_pools]]\nname = 'b'\nsource = 'static'\n"
	  "range_end = '10.0.0.9'\n" N,
	  "c.toml:4:1: missing key 'network.external_pools[1].range_start' "
	  "(required when source is 'static')" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'static'\n"
	  "range_start = '10.0.0.1'\nrange_end = '10.0.0.9'\n"
	  "gateway = '10.0.0.254'\n" N,
	  "c.toml:1:1: missing key 'network.external_pools[0].prefix_len' "
	  "(required when source is 'static')" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'manual'\n" N,
	  "c.toml:3:10: 'network.external_pools[0].source' must be 'static' or "
	  "'dhcp', not 'manual'" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 1\n" N,
	  "c.toml:3:10: 'network.external_pools[0].source' must be a string" },
	{ "[[network.external_pools]]\nname = 'A'\n" N,
	  "c.toml:2:8: 'network.external_pools[0].name' must be a name" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'static'\n"
	  "range_start = '1.2.3'\n" N,
	  "c.toml:4:15: 'network.external_pools[0].range_start' must be an "
	  "IPv4 address, not '1.2.3'" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'static'\n"
	  "gateway = '::1'\n" N,
	  "c.toml:4:11: 'network.external_pools[0].gateway' must be an IPv4 "
	  "address, not '::1'" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'static'\n"
	  "range_start = '10.0.0.9'\nrange_end = '10.0.0.1'\n"
	  "gateway = '10.0.0.254'\nprefix_len = 24\n" N,
	  "c.toml:5:13: 'network.external_pools[0].range_end' 10.0.0.1 is "
	  "before range_start 10.0.0.9" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'static'\n"
	  "range_start = '10.0.1.1'\nrange_end = '10.0.1.9'\n"
	  "gateway = '10.0.0.254'\nprefix_len = 24\n" N,
	  "c.toml:4:15: 'network.external_pools[0].range_start' 10.0.1.1 is "
	  "outside the network 10.0.0.254/24" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'static'\n"
	  "range_start = '10.0.0.1'\nrange_end = '10.0.1.9'\n"
	  "gateway = '10.0.0.254'\nprefix_len = 24\n" N,
	  "c.toml:5:13: 'network.external_pools[0].range_end' 10.0.1.9 is "
	  "outside the network 10.0.0.254/24" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'static'\n"
	  "prefix_len = 33\n" N,
	  "c.toml:4:14: 'network.external_pools[0].prefix_len' must be "
	  "between 1 and 32, not 33" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'dhcp'\n"
	  "dns_servers = '1.1.1.1'\n" N,
	  "c.toml:4:15: 'network.external_pools[0].dns_servers' must be an "
	  "array, not a string" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'dhcp'\n"
	  "dns_servers = ['1.1.1.1', 'dns.google']\n" N,
	  "c.toml:4:27: 'network.external_pools[0].dns_servers[1]' must be an "
	  "IPv4 address, not 'dns.google'" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'dhcp'\n"
	  "dns_servers = ['1.1.1.1', '1.1.1.1']\n" N,
	  "c.toml:4:27: 'network.external_pools[0].dns_servers' lists "
	  "'1.1.1.1' twice" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'dhcp'\n"
	  "dns_servers = ['1.0.0.1', '1.0.0.2', '1.0.0.3', '1.0.0.4', "
	  "'1.0.0.5', '1.0.0.6', '1.0.0.7', '1.0.0.8', '1.0.0.9']\n" N,
	  "c.toml:4:15: 'network.external_pools[0].dns_servers' must have 0 "
	  "to 8 items, not 9" },
	{ "[[network.external_pools]]\nname = 'a'\nsource = 'dhcp'\n"
	  "[[network.external_pools]]\nname = 'a'\nsource = 'dhcp'\n" N,
	  "c.toml:5:8: duplicate pool name 'a'" },
	{ "[network]\nexternal_pools = 1\n" N,
	  "c.toml:2:18: 'network.external_pools' must be an array of tables, "
	  "not an integer" },
	{ "[network]\nexternal_pools = [1]\n" N,
	  "c.toml:2:19: 'network.external_pools[0]' must be a table, not an "
	  "integer" },
	{ "[network]\nexternal_pools = {}\n" N,
	  "c.toml:2:18: 'network.external_pools' must be an array of tables, "
	  "not a table" },
};

static void test_errors(void)
{
	struct spx_conf c;
	int rc;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(ecases); i++) {
		rc = parse(ecases[i].in, "/r", &c);
		if (!T_OK(rc == -1 && spx_errstatus() == SPX_USAGE &&
			  strstr(spx_errmsg(), ecases[i].err),
			  "error %zu: %s", i, ecases[i].err))
			printf("#   got '%s' (rc %d)\n",
			       rc ? spx_errmsg() : "success", rc);
		if (!rc)
			spx_conf_release(&c);
		else
			T_OK(c.nodes == NULL && c.root == NULL,
			     "error %zu leaves the struct empty", i);
	}
}

static void test_load(void)
{
	char dir[] = "/tmp/spx-test-conf.XXXXXX", *path, *big;
	struct spx_conf c;
	FILE *f;

	if (!T_OK(mkdtemp(dir) != NULL, "mkdtemp"))
		return;
	path = spx_xprintf("%s/spinifex.toml", dir);
	T_INT(spx_conf_load(path, dir, &c), -1, "a missing file fails");
	T_INT(spx_errstatus(), SPX_NO, "a missing file is SPX_NO");
	big = spx_xprintf("cannot open '%s'", path);
	T_OK(!strncmp(spx_errmsg(), big, strlen(big)),
	     "a missing file says cannot open");
	free(big);
	spx_conf_release(&c);

	f = fopen(path, "w");
	fputs("[nodes.me]\n[nodes.me.gw]\nthreads = 0\n", f);
	fclose(f);
	T_INT(spx_conf_load(path, dir, &c), -1, "a bad file fails");
	big = spx_xprintf("%s:3:11: 'nodes.me.gw.threads' must be between",
			  path);
	T_OK(!strncmp(spx_errmsg(), big, strlen(big)) &&
	     spx_errstatus() == SPX_USAGE, "the error names the file");
	free(big);

	f = fopen(path, "w");
	fputs(full, f);
	fclose(f);
	T_INT(spx_conf_load(path, dir, &c), 0, "the full example loads");
	T_STR(c.file, path, "the file is recorded");
	T_STR(c.root, dir, "the root is recorded");
	T_STR(spx_conf_self(&c)->name, "node1", "self after load");
	spx_conf_release(&c);

	f = fopen(path, "w");
	for (size_t n = 0; n <= SPX_CONF_MAX_BYTES; n += 10)
		fputs("# comment\n", f);
	fclose(f);
	T_INT(spx_conf_load(path, dir, &c), -1, "a file over 1 MiB fails");
	T_OK(spx_errstatus() == SPX_USAGE &&
	     strstr(spx_errmsg(), "is larger than 1048576 bytes"),
	     "a file over 1 MiB is a usage error");
	unlink(path);
	rmdir(dir);
	free(path);
}

static void test_schema(void)
{
	char *out = NULL, *line, *save = NULL;
	size_t len = 0, n = 0, bad = 0;
	FILE *f = open_memstream(&out, &len);

	spx_conf_schema_print(f);
	fclose(f);
	T_OK(strstr(out, "nodes.*.gw.http\tboolean\tfalse\tserve plain HTTP") !=
	     NULL, "the schema lists nodes.*.gw.http");
	T_OK(strstr(out, "\nnetwork.underlay_mtu\tinteger 576..9216\t1500\t") !=
	     NULL, "the schema shows ranges");
	T_OK(strstr(out, "\nnodes.*.gw.max_body_bytes\tinteger >= 1\t"
			 "5368709120\t") != NULL, "open-ended ranges");
	T_OK(strstr(out, "\nnetwork.external_pools[].name\tname\trequired\t") !=
	     NULL, "required pool keys");
	T_OK(strstr(out, "\nnetwork.external_pools[].range_start\tIPv4 address"
			 "\trequired when static\t") != NULL,
	     "keys required for static pools");
	T_OK(strstr(out, "\nnodes.*\ttable per node, 1..256\trequired\t") !=
	     NULL, "the nodes table");
	T_OK(!strncmp(out, "node\tname\tthe only node\t", 23), "node is first");
	T_OK(strstr(out, "\nnodes.*.obj.drives\tarray of paths, 1..64\t"
			 "[\"<paths.data>/obj/d0\"]\t") != NULL, "drives");
	T_OK(strstr(out, "\naws.account_id\taccount id\t000000000000\t") !=
	     NULL, "account id");
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t tabs = 0;

		for (char *s = line; *s; s++)
			tabs += *s == '\t';
		n++;
		bad += tabs != 3;
	}
	T_INT(n, 55, "one line per key");
	T_INT(bad, 0, "every line has four columns");
	free(out);
}

int main(void)
{
	test_full();
	test_defaults();
	test_roots_and_nodes();
	test_errors();
	test_load();
	test_schema();
	return t_done();
}
