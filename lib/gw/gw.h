/* gw.h: the gateway: AWS APIs over the CGI-style handler of http.h.
 *
 * spx_gw_open loads what the gateway needs from a node's configuration
 * (credentials, region, zones, limits), opens the node's record store
 * (paths.state: EC2 resources, ClientToken records, the secret that signs
 * NextTokens) and spx_gw_handler returns the
 * handler that both `spx-gw serve` (libmicrohttpd) and `spx-gw cgi` run.
 * Requests on the EC2 listener speak the Query protocol (EC2, and STS by
 * its credential scope or Version); requests on the S3 listener speak S3
 * REST. Every request is authenticated with SigV4 before it is
 * dispatched; every answer, errors included, is the XML document AWS
 * returns for that API. */
#ifndef SPX_GW_H
#define SPX_GW_H

#include "spx.h"

#include "conf/conf.h"
#include "http/http.h"

struct spx_gw;

/* conf is borrowed and must outlive the gateway. */
int spx_gw_open(const struct spx_conf *conf, struct spx_gw **out);
void spx_gw_close(struct spx_gw *gw);
const struct spx_http_handler *spx_gw_handler(struct spx_gw *gw);
const struct spx_http_limits *spx_gw_limits(struct spx_gw *gw);
/* For tests and the fuzz target: a fixed clock instead of time(NULL). */
void spx_gw_set_clock(struct spx_gw *gw, time_t now);

#endif
