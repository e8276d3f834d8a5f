#include "spx.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "node/tls.h"

static int ossl_error(const char *what)
{
	char msg[256];
	unsigned long e = ERR_get_error();

	ERR_error_string_n(e, msg, sizeof(msg));
	ERR_clear_error();
	return spx_error(SPX_FAIL, "%s: %s", what, e ? msg : "openssl error");
}

static char *bio_string(BIO *b)
{
	char *p;
	long n = BIO_get_mem_data(b, &p);

	return n >= 0 ? spx_strndup(p, (size_t)n) : NULL;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ex;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ex)
		return ossl_error("cannot make a certificate extension");
	X509_add_ext(cert, ex, -1);
	X509_EXTENSION_free(ex);
	return 0;
}

static X509 *new_cert(EVP_PKEY *key, const char *cn, long days)
{
	X509 *x = X509_new();
	unsigned char serial[16];
	BIGNUM *bn;

	if (!x)
		return NULL;
	X509_set_version(x, 2);
	if (RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f;
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))) {
		BN_free(bn);
		goto fail;
	}
	BN_free(bn);
	/* Back-date an hour so that a client whose clock is a little behind
	 * still accepts a certificate made a moment ago. */
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), days * 86400L);
	X509_set_pubkey(x, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "O", MBSTRING_UTF8,
				   (const unsigned char *)"spx", -1, -1, 0);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN",
				   MBSTRING_UTF8, (const unsigned char *)cn, -1,
				   -1, 0);
	return x;
fail:
	X509_free(x);
	return NULL;
}

static int pem_out(X509 *x, EVP_PKEY *k, char **cert_pem, char **key_pem)
{
	BIO *bc = BIO_new(BIO_s_mem()), *bk = BIO_new(BIO_s_mem());
	int rc = -1;

	if (!bc || !bk || !PEM_write_bio_X509(bc, x) ||
	    !PEM_write_bio_PrivateKey(bk, k, NULL, NULL, 0, NULL, NULL)) {
		ossl_error("cannot write PEM");
		goto out;
	}
	*cert_pem = bio_string(bc);
	*key_pem = bio_string(bk);
	rc = 0;
out:
	BIO_free(bc);
	BIO_free(bk);
	return rc;
}

int spx_tls_make_ca(const char *cn, char **cert_pem, char **key_pem)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = NULL;
	int rc = -1;

	if (!k)
		return ossl_error("cannot make a key");
	x = new_cert(k, cn, 3650);
	if (!x) {
		ossl_error("cannot make a certificate");
		goto out;
	}
	X509_set_issuer_name(x, X509_get_subject_name(x));
	if (add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(x, x, NID_authority_key_identifier, "keyid:always") < 0)
		goto out;
	if (!X509_sign(x, k, EVP_sha256())) {
		ossl_error("cannot sign the CA certificate");
		goto out;
	}
	rc = pem_out(x, k, cert_pem, key_pem);
out:
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}

int spx_tls_make_cert(const char *ca_cert_pem, const char *ca_key_pem,
		      const char *cn, const char *const *names,
		      char **cert_pem, char **key_pem)
{
	BIO *b1 = BIO_new_mem_buf(ca_cert_pem, -1);
	BIO *b2 = BIO_new_mem_buf(ca_key_pem, -1);
	X509 *ca = b1 ? PEM_read_bio_X509(b1, NULL, NULL, NULL) : NULL;
	EVP_PKEY *cak = b2 ? PEM_read_bio_PrivateKey(b2, NULL, NULL, NULL) : NULL;
	EVP_PKEY *k = NULL;
	struct spx_buf san = SPX_BUF_INIT;
	unsigned char addr[16];
	X509 *x = NULL;
	int rc = -1;

	if (!ca || !cak) {
		ossl_error("cannot read the node CA");
		goto out;
	}
	k = EVP_EC_gen("P-256");
	if (!k) {
		ossl_error("cannot make a key");
		goto out;
	}
	x = new_cert(k, cn, 825);
	if (!x) {
		ossl_error("cannot make a certificate");
		goto out;
	}
	X509_set_issuer_name(x, X509_get_subject_name(ca));
	for (size_t i = 0; names && names[i]; i++) {
		bool ip = inet_pton(AF_INET, names[i], addr) == 1 ||
			  inet_pton(AF_INET6, names[i], addr) == 1;

		if (strchr(names[i], ','))
			continue;
		spx_buf_addf(&san, "%s%s:%s", san.len ? "," : "",
			     ip ? "IP" : "DNS", names[i]);
	}
	if (add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, ca, NID_key_usage,
		    "critical,digitalSignature,keyEncipherment") < 0 ||
	    add_ext(x, ca, NID_ext_key_usage, "serverAuth,clientAuth") < 0 ||
	    add_ext(x, ca, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(x, ca, NID_authority_key_identifier, "keyid:always") < 0 ||
	    (san.len && add_ext(x, ca, NID_subject_alt_name, san.p) < 0))
		goto out;
	if (!X509_sign(x, cak, EVP_sha256())) {
		ossl_error("cannot sign the node certificate");
		goto out;
	}
	rc = pem_out(x, k, cert_pem, key_pem);
out:
	spx_buf_release(&san);
	X509_free(x);
	X509_free(ca);
	EVP_PKEY_free(k);
	EVP_PKEY_free(cak);
	BIO_free(b1);
	BIO_free(b2);
	return rc;
}
