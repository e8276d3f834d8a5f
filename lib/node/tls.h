/* tls.h: the node's certificate authority and TLS certificates (OpenSSL).
 *
 * spx admin init makes a CA (ECDSA P-256, 10 years, CA:TRUE, keyCertSign)
 * and signs the node's server certificate with it (ECDSA P-256, 825 days,
 * serverAuth + clientAuth, subjectAltName listing every name and address
 * the node answers on). Clients trust the CA (aws --ca-bundle, ca_bundle in
 * the profile, NODE_EXTRA_CA_CERTS). All PEM strings are malloc'd; the
 * caller frees them. */
#ifndef SPX_TLS_H
#define SPX_TLS_H

#include "spx.h"

int spx_tls_make_ca(const char *cn, char **cert_pem, char **key_pem);
/* names: DNS names and IP addresses (told apart by parsing), NULL-ended. */
int spx_tls_make_cert(const char *ca_cert_pem, const char *ca_key_pem,
		      const char *cn, const char *const *names,
		      char **cert_pem, char **key_pem);

#endif
