/* driver.h: the request pipeline shared by the transports (server.c,
 * cgi.c, spx_http_run). Internal to lib/http. Each step returns true once
 * resp is ready to send; the transport must then stop feeding the body. */
#ifndef SPX_HTTP_DRIVER_H
#define SPX_HTTP_DRIVER_H

#include "http/http.h"

bool spx_http_drive_begin(const struct spx_http_handler *h,
			  const struct spx_http_limits *lim,
			  struct spx_http_req *req, size_t header_bytes,
			  struct spx_http_resp *resp);
bool spx_http_drive_body(const struct spx_http_handler *h,
			 const struct spx_http_limits *lim,
			 struct spx_http_req *req, const char *data, size_t len,
			 struct spx_http_resp *resp);
void spx_http_drive_end(const struct spx_http_handler *h,
			struct spx_http_req *req, struct spx_http_resp *resp);
/* Fill resp with an error through the handler's error callback. */
void spx_http_fail(const struct spx_http_handler *h, struct spx_http_req *req,
		   int status, const char *code, const char *msg,
		   struct spx_http_resp *resp);

#endif
