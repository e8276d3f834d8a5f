/* gwnode.h: the gateway the fuzz targets that drive whole requests share
 * (fuzz_http, fuzz_cgi): a node made once in a temp dir (configuration and
 * the AWS documentation's example key), its clock fixed at the date of the
 * documentation's examples. */
#ifndef SPX_FUZZ_GWNODE_H
#define SPX_FUZZ_GWNODE_H

#include "spx.h"

#include "auth/cred.h"
#include "conf/conf.h"
#include "file.h"
#include "gw/gw.h"

static struct spx_gw *fuzz_gw(void)
{
	static const char toml[] =
		"node = \"n1\"\n[aws]\nregion = \"us-east-1\"\n"
		"[nodes.n1]\n[nodes.n1.gw]\nmax_header_bytes = 4096\n"
		"max_query_body_bytes = 65536\n";
	static struct spx_gw *gw;
	static struct spx_conf conf;
	struct spx_cred k = { .access_key = "AKIAIOSFODNN7EXAMPLE",
			      .secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
			      .account = "123456789012",
			      .user = "admin",
			      .arn = "arn:aws:iam::123456789012:root" };
	char dir[] = "/tmp/spx-fuzz-gw.XXXXXX";
	char *cred;

	if (gw)
		return gw;
	if (!mkdtemp(dir))
		abort();
	cred = spx_path_join(dir, "credentials.json");
	if (spx_cred_add(cred, &k) < 0 ||
	    spx_conf_parse("fuzz.toml", toml, sizeof(toml) - 1, dir, &conf) < 0 ||
	    spx_gw_open(&conf, &gw) < 0) {
		fprintf(stderr, "setup: %s\n", spx_errmsg());
		abort();
	}
	spx_gw_set_clock(gw, 1369353600);
	free(cred);
	return gw;
}

#endif
