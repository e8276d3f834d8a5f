/* keypair.c: EC2 key pairs (contract in keypair.h).
 *
 * Three parts: the key formats (SSH wire encoding, the OpenSSH private key
 * container, PuTTY's PPK, the fingerprints), the public key parser that
 * ImportKeyPair feeds with hostile bytes, and the records in lib/state. */
#include "spx.h"

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/encoder.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>

#include "checksum.h"
#include "ec2/keypair.h"
#include "hex.h"
#include "id.h"
#include "state/state.h"
#include "utf8.h"
#include "proc.h"

/* ---- names, strings ------------------------------------------------ */

const char *spx_key_type_name(enum spx_key_type t)
{
	return t == SPX_KEY_ED25519 ? "ed25519" : "rsa";
}

int spx_key_type_parse(const char *s, enum spx_key_type *out)
{
	if (!strcmp(s, "rsa"))
		*out = SPX_KEY_RSA;
	else if (!strcmp(s, "ed25519"))
		*out = SPX_KEY_ED25519;
	else
		return -1;
	return 0;
}

const char *spx_key_format_name(enum spx_key_format f)
{
	return f == SPX_KEY_PPK ? "ppk" : "pem";
}

int spx_key_format_parse(const char *s, enum spx_key_format *out)
{
	if (!strcmp(s, "pem"))
		*out = SPX_KEY_PEM;
	else if (!strcmp(s, "ppk"))
		*out = SPX_KEY_PPK;
	else
		return -1;
	return 0;
}

int spx_keypair_name_check(const char *name)
{
	size_t n = strlen(name);

	if (!n)
		return spx_ec2_error(SPX_EC2_INVALID,
				     "Value () for parameter keyName is "
				     "invalid. Length must be at least 1.");
	if (n > SPX_KEYPAIR_NAME_MAX)
		return spx_ec2_error(SPX_EC2_INVALID,
				     "Value (%.64s...) for parameter keyName "
				     "is invalid. Length exceeds maximum of %d.",
				     name, SPX_KEYPAIR_NAME_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 ||
		    (unsigned char)name[i] > 0x7e)
			return spx_ec2_error(SPX_EC2_INVALID,
					     "Value for parameter keyName is "
					     "invalid. Character sets beyond "
					     "ASCII are not supported.");
	if (name[0] == ' ' || name[n - 1] == ' ')
		return spx_ec2_error(SPX_EC2_INVALID,
				     "Value (%s) for parameter keyName is "
				     "invalid. It must not begin or end with "
				     "a space.",
				     name);
	return 0;
}

/* Characters of a UTF-8 string, or -1 if it is not valid UTF-8. */
static long utf8_chars(const char *s)
{
	return (long)spx_utf8_count(s, strlen(s));
}

int spx_ec2_tags_check(const struct spx_kvlist *tags)
{
	if (!tags)
		return 0;
	if (tags->n > SPX_EC2_TAGS_MAX)
		return spx_ec2_error(SPX_EC2_TAG_LIMIT,
				     "The maximum number of Tags for a "
				     "resource has been reached.");
	for (size_t i = 0; i < tags->n; i++) {
		const char *k = tags->v[i].k, *v = tags->v[i].v;
		long kl = utf8_chars(k), vl = utf8_chars(v);

		if (kl < 0 || vl < 0)
			return spx_ec2_error(SPX_EC2_INVALID,
					     "Tag keys and values must be "
					     "valid UTF-8");
		if (kl == 0)
			return spx_ec2_error(SPX_EC2_INVALID,
					     "Tag key must not be empty");
		if (kl > SPX_EC2_TAG_KEY_MAX)
			return spx_ec2_error(SPX_EC2_INVALID,
					     "Tag key exceeds the maximum "
					     "length of %d characters",
					     SPX_EC2_TAG_KEY_MAX);
		if (vl > SPX_EC2_TAG_VALUE_MAX)
			return spx_ec2_error(SPX_EC2_INVALID,
					     "Tag value exceeds the maximum "
					     "length of %d characters",
					     SPX_EC2_TAG_VALUE_MAX);
		if (!strncasecmp(k, "aws:", 4))
			return spx_ec2_error(SPX_EC2_INVALID,
					     "Tag keys starting with 'aws:' "
					     "are reserved for internal use");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(tags->v[j].k, k))
				return spx_ec2_error(SPX_EC2_INVALID,
						     "Duplicate tag key '%.128s' "
						     "specified.", k);
	}
	return 0;
}

/* ---- SSH wire encoding (RFC 4251 section 5) ------------------------- */

/* Buffers that hold private key bytes are allocated large enough up front
 * (SECRET_HINT) so that they never move: a realloc would leave a copy of
 * the secret in freed memory that OPENSSL_cleanse cannot reach. */
#define SECRET_HINT 16384

static void buf_wipe(struct spx_buf *b)
{
	if (b->cap)
		OPENSSL_cleanse(b->p, b->cap);
	spx_buf_release(b);
}

static void put_u32(struct spx_buf *b, uint32_t v)
{
	unsigned char x[4] = { (unsigned char)(v >> 24),
			       (unsigned char)(v >> 16),
			       (unsigned char)(v >> 8), (unsigned char)v };

	spx_buf_add(b, x, 4);
}

static void put_string(struct spx_buf *b, const void *p, size_t n)
{
	put_u32(b, (uint32_t)n);
	spx_buf_add(b, p, n);
}

static void put_cstring(struct spx_buf *b, const char *s)
{
	put_string(b, s, strlen(s));
}

/* An mpint: big-endian two's complement, minimal, 0x00 before a set top
 * bit. Only non-negative values occur here. */
static int put_mpint(struct spx_buf *b, const BIGNUM *bn)
{
	int n = BN_num_bytes(bn);
	unsigned char *tmp = spx_malloc((size_t)n + 1);
	size_t off = 1;

	tmp[0] = 0;
	if (BN_bn2bin(bn, tmp + 1) != n) {
		OPENSSL_clear_free(tmp, (size_t)n + 1);
		return spx_error(SPX_FAIL, "cannot encode a big number");
	}
	if (n > 0 && tmp[1] & 0x80)
		off = 0;
	put_string(b, tmp + off, (size_t)n + 1 - off);
	OPENSSL_clear_free(tmp, (size_t)n + 1);
	return 0;
}

/* A bounded reader over an SSH blob. */
struct rd {
	const unsigned char *p;
	size_t n;
};

static int get_u32(struct rd *r, uint32_t *v)
{
	if (r->n < 4)
		return -1;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 |
	     (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->n -= 4;
	return 0;
}

static int get_string(struct rd *r, const unsigned char **s, size_t *len)
{
	uint32_t l;

	if (get_u32(r, &l) < 0 || l > r->n)
		return -1;
	*s = r->p;
	*len = l;
	r->p += l;
	r->n -= l;
	return 0;
}

/* A positive mpint of at most max bytes (sign byte excluded), minimally
 * encoded as OpenSSH requires. */
static int get_mpint(struct rd *r, size_t max, BIGNUM **out)
{
	const unsigned char *s;
	size_t len;

	if (get_string(r, &s, &len) < 0 || len == 0)
		return -1;
	if (s[0] & 0x80)
		return -1; /* negative */
	if (s[0] == 0) {
		if (len == 1 || !(s[1] & 0x80))
			return -1; /* zero, or a needless leading zero */
		s++;
		len--;
	}
	if (len > max)
		return -1;
	*out = BN_bin2bn(s, (int)len, NULL);
	return *out ? 0 : -1;
}

/* Append the lines of base64 of p, width characters each, each ending
 * in "\n". */
static void b64_lines(struct spx_buf *out, const void *p, size_t n,
		      size_t width)
{
	struct spx_buf t = SPX_BUF_INIT;

	spx_buf_init(&t, SECRET_HINT);
	spx_base64_encode(p, n, &t);
	for (size_t i = 0; i < t.len; i += width) {
		size_t l = t.len - i < width ? t.len - i : width;

		spx_buf_add(out, t.p + i, l);
		spx_buf_addc(out, '\n');
	}
	buf_wipe(&t);
}

static size_t b64_line_count(size_t n, size_t width)
{
	size_t chars = SPX_BASE64_LEN(n);

	return (chars + width - 1) / width;
}

/* ---- keys: generation, public blobs, private encodings -------------- */

static int rsa_bn(const EVP_PKEY *pk, const char *param, BIGNUM **out)
{
	*out = NULL;
	if (!EVP_PKEY_get_bn_param(pk, param, out))
		return spx_error(SPX_FAIL, "cannot read RSA parameter '%s'",
				 param);
	return 0;
}

/* The OpenSSH public key blob: string type, then mpint e, mpint n
 * (ssh-rsa) or string key (ssh-ed25519). */
static int public_blob(EVP_PKEY *pk, enum spx_key_type t, struct spx_buf *b)
{
	if (t == SPX_KEY_ED25519) {
		unsigned char pub[32];
		size_t len = sizeof(pub);

		if (!EVP_PKEY_get_raw_public_key(pk, pub, &len) || len != 32)
			return spx_error(SPX_FAIL,
					 "cannot read the ED25519 public key");
		put_cstring(b, "ssh-ed25519");
		put_string(b, pub, 32);
		return 0;
	} else {
		BIGNUM *n = NULL, *e = NULL;
		int rc = -1;

		if (rsa_bn(pk, OSSL_PKEY_PARAM_RSA_N, &n) < 0 ||
		    rsa_bn(pk, OSSL_PKEY_PARAM_RSA_E, &e) < 0)
			goto out;
		put_cstring(b, "ssh-rsa");
		if (put_mpint(b, e) < 0 || put_mpint(b, n) < 0)
			goto out;
		rc = 0;
out:
		BN_free(n);
		BN_free(e);
		return rc;
	}
}

/* The ED25519 seed and public key (32 bytes each). */
static int ed25519_raw(EVP_PKEY *pk, unsigned char seed[32],
		       unsigned char pub[32])
{
	size_t sl = 32, pl = 32;

	if (!EVP_PKEY_get_raw_private_key(pk, seed, &sl) || sl != 32 ||
	    !EVP_PKEY_get_raw_public_key(pk, pub, &pl) || pl != 32)
		return spx_error(SPX_FAIL, "cannot read the ED25519 key");
	return 0;
}

/* Encode pk with an OpenSSL encoder ("PEM"/"DER", structure) into a
 * malloc'd buffer the caller wipes. */
static int encode(EVP_PKEY *pk, const char *type, const char *structure,
		  int selection, unsigned char **out, size_t *len)
{
	OSSL_ENCODER_CTX *ctx;
	unsigned char *data = NULL;
	size_t n = 0;
	int ok;

	*out = NULL;
	ctx = OSSL_ENCODER_CTX_new_for_pkey(pk, selection, type, structure,
					    NULL);
	if (!ctx)
		return spx_error(SPX_FAIL, "no OpenSSL encoder for %s %s",
				 type, structure);
	ok = OSSL_ENCODER_CTX_get_num_encoders(ctx) > 0 &&
	     OSSL_ENCODER_to_data(ctx, &data, &n);
	OSSL_ENCODER_CTX_free(ctx);
	if (!ok)
		return spx_error(SPX_FAIL, "cannot encode the key as %s %s",
				 type, structure);
	*out = spx_malloc(n + 1);
	memcpy(*out, data, n);
	(*out)[n] = 0;
	OPENSSL_clear_free(data, n);
	*len = n;
	return 0;
}

/* "aa:bb:..." of n bytes into out (3n bytes). */
static void colon_hex(const unsigned char *d, size_t n, char *out)
{
	char hex[3];

	for (size_t i = 0; i < n; i++) {
		spx_hex_encode(d + i, 1, hex);
		memcpy(out + 3 * i, hex, 2);
		out[3 * i + 2] = i + 1 < n ? ':' : '\0';
	}
}

static int digest_colon(enum spx_cksum_algo algo, const void *p, size_t n,
			char *out)
{
	unsigned char d[SPX_CKSUM_MAX];
	size_t dl;

	if (spx_cksum_digest(algo, p, n, d, &dl) < 0)
		return -1;
	colon_hex(d, dl, out);
	return 0;
}

/* base64 SHA-256 of an OpenSSH blob, padding kept. */
static int fp_sha256(const unsigned char *blob, size_t n, char *out)
{
	unsigned char d[SPX_CKSUM_MAX];
	struct spx_buf b = SPX_BUF_INIT;
	size_t dl;

	if (spx_cksum_digest(SPX_CKSUM_SHA256, blob, n, d, &dl) < 0)
		return -1;
	spx_base64_encode(d, dl, &b);
	snprintf(out, SPX_KEYPAIR_FP_SIZE, "%s", b.p);
	spx_buf_release(&b);
	return 0;
}

/* A created RSA key: SHA-1 of the PKCS#8 PrivateKeyInfo DER. */
static int fp_created_rsa(EVP_PKEY *pk, char *out)
{
	unsigned char *der;
	size_t n;
	int rc;

	if (encode(pk, "DER", "PrivateKeyInfo", OSSL_KEYMGMT_SELECT_KEYPAIR,
		   &der, &n) < 0)
		return -1;
	rc = digest_colon(SPX_CKSUM_SHA1, der, n, out);
	OPENSSL_clear_free(der, n + 1);
	return rc;
}

/* An imported RSA key: MD5 of the SubjectPublicKeyInfo DER. */
static int fp_spki_md5(EVP_PKEY *pk, char *out)
{
	unsigned char *der = NULL;
	int n = i2d_PUBKEY(pk, &der);
	int rc;

	if (n <= 0)
		return spx_error(SPX_FAIL, "cannot encode the public key");
	rc = digest_colon(SPX_CKSUM_MD5, der, (size_t)n, out);
	OPENSSL_free(der);
	return rc;
}

/* The openssh-key-v1 container (OpenSSH's PROTOCOL.key), unencrypted, for
 * an ED25519 key. OpenSSL cannot write it. */
static int openssh_private(EVP_PKEY *pk, const struct spx_buf *pubblob,
			   struct spx_buf *out)
{
	static const char magic[] = "openssh-key-v1"; /* with its NUL */
	unsigned char seed[32], pub[32], sk[64], check[4];
	struct spx_buf body = SPX_BUF_INIT, priv = SPX_BUF_INIT;
	uint32_t checkint;
	int rc = -1;

	spx_buf_init(&body, SECRET_HINT);
	spx_buf_init(&priv, SECRET_HINT);
	if (ed25519_raw(pk, seed, pub) < 0 || spx_random(check, 4) < 0)
		goto out;
	checkint = (uint32_t)check[0] << 24 | (uint32_t)check[1] << 16 |
		   (uint32_t)check[2] << 8 | check[3];
	memcpy(sk, seed, 32);
	memcpy(sk + 32, pub, 32);

	/* The private section: two equal check words (a wrong passphrase
	 * shows as a mismatch), the key, a comment, then padding 1, 2, 3,
	 * ... to the cipher block size, 8 for "none". */
	put_u32(&priv, checkint);
	put_u32(&priv, checkint);
	put_cstring(&priv, "ssh-ed25519");
	put_string(&priv, pub, 32);
	put_string(&priv, sk, 64);
	put_cstring(&priv, "");
	for (unsigned char i = 1; priv.len % 8; i++)
		spx_buf_addc(&priv, (char)i);

	spx_buf_add(&body, magic, sizeof(magic));
	put_cstring(&body, "none"); /* cipher */
	put_cstring(&body, "none"); /* kdf */
	put_cstring(&body, "");	    /* kdf options */
	put_u32(&body, 1);	    /* number of keys */
	put_string(&body, pubblob->p, pubblob->len);
	put_string(&body, priv.p, priv.len);

	spx_buf_adds(out, "-----BEGIN OPENSSH PRIVATE KEY-----\n");
	b64_lines(out, body.p, body.len, 70);
	spx_buf_adds(out, "-----END OPENSSH PRIVATE KEY-----\n");
	rc = 0;
out:
	OPENSSL_cleanse(seed, sizeof(seed));
	OPENSSL_cleanse(sk, sizeof(sk));
	buf_wipe(&priv);
	buf_wipe(&body);
	return rc;
}

/* PuTTY's private blob: mpint d, p, q, iqmp for RSA (iqmp = q^-1 mod p,
 * OpenSSL's first CRT coefficient); for ED25519 the 32-byte seed as a
 * little-endian unsigned integer, minimal, as PuTTY writes it. */
static int ppk_private_blob(EVP_PKEY *pk, enum spx_key_type t,
			    struct spx_buf *b)
{
	if (t == SPX_KEY_ED25519) {
		unsigned char seed[32], pub[32];
		size_t n = 32;

		if (ed25519_raw(pk, seed, pub) < 0)
			return -1;
		while (n && !seed[n - 1])
			n--;
		put_string(b, seed, n);
		OPENSSL_cleanse(seed, sizeof(seed));
		return 0;
	} else {
		static const char *const names[] = {
			OSSL_PKEY_PARAM_RSA_D, OSSL_PKEY_PARAM_RSA_FACTOR1,
			OSSL_PKEY_PARAM_RSA_FACTOR2,
			OSSL_PKEY_PARAM_RSA_COEFFICIENT1
		};

		for (size_t i = 0; i < SPX_ARRAY_SIZE(names); i++) {
			BIGNUM *bn = NULL;
			int rc = rsa_bn(pk, names[i], &bn);

			if (!rc)
				rc = put_mpint(b, bn);
			BN_clear_free(bn);
			if (rc < 0)
				return -1;
		}
		return 0;
	}
}

/* PuTTY-User-Key-File-2 without encryption. Its Private-MAC is
 * HMAC-SHA-1, keyed with SHA-1("putty-private-key-file-mac-key") (and the
 * passphrase, empty here), over the SSH strings algorithm, encryption,
 * comment, public blob and private blob. The comment is the one PuTTYgen
 * gives a key converted from OpenSSH. */
static int ppk(EVP_PKEY *pk, enum spx_key_type t,
	       const struct spx_buf *pubblob, struct spx_buf *out)
{
	static const char comment[] = "imported-openssh-key";
	static const char mackey_seed[] = "putty-private-key-file-mac-key";
	const char *alg = t == SPX_KEY_ED25519 ? "ssh-ed25519" : "ssh-rsa";
	struct spx_buf priv = SPX_BUF_INIT, macdata = SPX_BUF_INIT;
	unsigned char key[SPX_CKSUM_MAX], mac[EVP_MAX_MD_SIZE];
	size_t keylen, maclen = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	int rc = -1;

	spx_buf_init(&priv, SECRET_HINT);
	spx_buf_init(&macdata, SECRET_HINT);
	if (ppk_private_blob(pk, t, &priv) < 0)
		goto out;
	put_cstring(&macdata, alg);
	put_cstring(&macdata, "none");
	put_cstring(&macdata, comment);
	put_string(&macdata, pubblob->p, pubblob->len);
	put_string(&macdata, priv.p, priv.len);
	if (spx_cksum_digest(SPX_CKSUM_SHA1, mackey_seed,
			     strlen(mackey_seed), key, &keylen) < 0)
		goto out;
	if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA1", NULL, key, keylen,
		       (const unsigned char *)macdata.p, macdata.len, mac,
		       sizeof(mac), &maclen)) {
		spx_error(SPX_FAIL, "cannot compute the PPK MAC");
		goto out;
	}
	spx_hex_encode(mac, maclen, hex);

	spx_buf_addf(out, "PuTTY-User-Key-File-2: %s\n", alg);
	spx_buf_adds(out, "Encryption: none\n");
	spx_buf_addf(out, "Comment: %s\n", comment);
	spx_buf_addf(out, "Public-Lines: %zu\n",
		     b64_line_count(pubblob->len, 64));
	b64_lines(out, pubblob->p, pubblob->len, 64);
	spx_buf_addf(out, "Private-Lines: %zu\n", b64_line_count(priv.len, 64));
	b64_lines(out, priv.p, priv.len, 64);
	spx_buf_addf(out, "Private-MAC: %s\n", hex);
	rc = 0;
out:
	buf_wipe(&priv);
	buf_wipe(&macdata);
	return rc;
}

/* ---- the public key parser ------------------------------------------ */

#define RSA_MIN_BITS 1024
#define RSA_MAX_BITS 4096
#define RSA_MAX_E_BYTES 64 /* public exponents of up to 512 bits */

static int bad_key(const char *why)
{
	return spx_ec2_error(SPX_EC2_KEY_FORMAT, "invalid public key: %s",
			     why);
}

/* Build the canonical ssh-rsa blob from n and e (owned by the caller)
 * after checking them. */
static int rsa_from_ne(const BIGNUM *n, const BIGNUM *e, struct spx_pubkey *k)
{
	struct spx_buf b = SPX_BUF_INIT;
	int bits = BN_num_bits(n);

	if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS)
		return spx_ec2_error(SPX_EC2_KEY_FORMAT,
				     "invalid public key: a %d-bit RSA key "
				     "(%d to %d bits are accepted)",
				     bits, RSA_MIN_BITS, RSA_MAX_BITS);
	if (!BN_is_odd(n) || !BN_is_odd(e) || BN_num_bits(e) < 2 ||
	    BN_num_bytes(e) > RSA_MAX_E_BYTES || BN_cmp(e, n) >= 0)
		return bad_key("RSA exponent or modulus out of range");
	put_cstring(&b, "ssh-rsa");
	if (put_mpint(&b, e) < 0 || put_mpint(&b, n) < 0 ||
	    b.len > sizeof(k->blob)) {
		spx_buf_release(&b);
		return spx_ec2_error(SPX_EC2_FAIL, "cannot encode RSA key");
	}
	k->type = SPX_KEY_RSA;
	k->bits = bits;
	memcpy(k->blob, b.p, b.len);
	k->bloblen = b.len;
	spx_buf_release(&b);
	return 0;
}

/* An OpenSSH public key blob; want is the type the text named, or NULL. */
static int parse_blob(const unsigned char *p, size_t n, const char *want,
		      struct spx_pubkey *k)
{
	struct rd r = { p, n };
	const unsigned char *type;
	size_t tl;

	if (get_string(&r, &type, &tl) < 0)
		return bad_key("truncated key blob");
	if (want && (tl != strlen(want) || memcmp(type, want, tl)))
		return bad_key("the key blob's type is not the one named");
	if (tl == 7 && !memcmp(type, "ssh-rsa", 7)) {
		BIGNUM *e = NULL, *nn = NULL;
		int rc;

		if (get_mpint(&r, RSA_MAX_E_BYTES, &e) < 0 ||
		    get_mpint(&r, RSA_MAX_BITS / 8, &nn) < 0 || r.n) {
			BN_free(e);
			BN_free(nn);
			return bad_key("malformed ssh-rsa key blob");
		}
		rc = rsa_from_ne(nn, e, k);
		BN_free(e);
		BN_free(nn);
		return rc;
	}
	if (tl == 11 && !memcmp(type, "ssh-ed25519", 11)) {
		const unsigned char *key;
		size_t kl;

		if (get_string(&r, &key, &kl) < 0 || kl != 32 || r.n)
			return bad_key("malformed ssh-ed25519 key blob");
		k->type = SPX_KEY_ED25519;
		k->bits = 256;
		memcpy(k->blob, p, n);
		k->bloblen = n;
		return 0;
	}
	return bad_key("unsupported key type (only ssh-rsa and ssh-ed25519)");
}

/* An RSA key from DER: SubjectPublicKeyInfo, or with pkcs1 set the bare
 * RSAPublicKey of "-----BEGIN RSA PUBLIC KEY-----". */
static int parse_der(const unsigned char *p, size_t n, bool pkcs1,
		     struct spx_pubkey *k)
{
	EVP_PKEY *pk = NULL;
	BIGNUM *nn = NULL, *e = NULL;
	int rc;

	if (n > SPX_KEYPAIR_IMPORT_MAX)
		return bad_key("too long");
	if (pkcs1) {
		OSSL_DECODER_CTX *dctx = OSSL_DECODER_CTX_new_for_pkey(
			&pk, "DER", "type-specific", "RSA",
			EVP_PKEY_PUBLIC_KEY, NULL, NULL);
		const unsigned char *q = p;
		size_t left = n;

		if (!dctx)
			return spx_ec2_error(SPX_EC2_FAIL,
					     "no OpenSSL RSA decoder");
		if (!OSSL_DECODER_from_data(dctx, &q, &left) || left) {
			EVP_PKEY_free(pk);
			pk = NULL;
		}
		OSSL_DECODER_CTX_free(dctx);
	} else {
		const unsigned char *q = p;

		pk = d2i_PUBKEY(NULL, &q, (long)n);
		if (pk && q != p + n) {
			EVP_PKEY_free(pk);
			pk = NULL;
		}
	}
	if (!pk)
		return bad_key("not a DER public key");
	if (!EVP_PKEY_is_a(pk, "RSA")) {
		EVP_PKEY_free(pk);
		return bad_key("only RSA keys are accepted in this format");
	}
	if (!EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_N, &nn) ||
	    !EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_E, &e))
		rc = bad_key("RSA key without modulus or exponent");
	else
		rc = rsa_from_ne(nn, e, k);
	BN_free(nn);
	BN_free(e);
	EVP_PKEY_free(pk);
	return rc;
}

static bool is_b64(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
}

/* Lines of text, without their "\n" or "\r\n". */
struct lines {
	const char *p, *end;
};

static bool next_line(struct lines *l, const char **s, size_t *n)
{
	const char *e;

	if (l->p >= l->end)
		return false;
	e = memchr(l->p, '\n', (size_t)(l->end - l->p));
	if (!e)
		e = l->end;
	*s = l->p;
	*n = (size_t)(e - l->p);
	if (*n && (*s)[*n - 1] == '\r')
		(*n)--;
	l->p = e < l->end ? e + 1 : e;
	return true;
}

static bool line_is(const char *s, size_t n, const char *want)
{
	return n == strlen(want) && !memcmp(s, want, n);
}

/* Strict base64 (the line ends already removed) into out, at most cap
 * bytes: anything else is not a key we take. */
static int b64_text(const char *s, size_t n, unsigned char *out, size_t cap,
		    size_t *outlen)
{
	if (spx_base64_decode(s, n, out, cap, outlen) < 0)
		return bad_key("malformed base64");
	return 0;
}

/* PEM armour "-----BEGIN <label>-----" (already matched), base64 lines,
 * "-----END <label>-----", nothing after it but blank lines. No headers
 * (an encrypted or otherwise qualified key is refused). */
static int parse_pem(struct lines *l, const char *label, struct spx_pubkey *k)
{
	char end[64];
	struct spx_buf b64 = SPX_BUF_INIT;
	unsigned char der[SPX_KEYPAIR_IMPORT_MAX];
	const char *s;
	size_t n, dl;
	bool done = false;
	int rc;

	snprintf(end, sizeof(end), "-----END %s-----", label);
	while (next_line(l, &s, &n)) {
		if (line_is(s, n, end)) {
			done = true;
			break;
		}
		for (size_t i = 0; i < n; i++)
			if (!is_b64((unsigned char)s[i])) {
				spx_buf_release(&b64);
				return bad_key("unexpected text in PEM body");
			}
		spx_buf_add(&b64, s, n);
	}
	while (done && next_line(l, &s, &n))
		if (n) {
			spx_buf_release(&b64);
			return bad_key("text after the PEM block");
		}
	if (!done) {
		spx_buf_release(&b64);
		return bad_key("PEM block without its END line");
	}
	rc = b64_text(b64.p, b64.len, der, sizeof(der), &dl);
	spx_buf_release(&b64);
	if (rc < 0)
		return rc;
	return parse_der(der, dl, !strcmp(label, "RSA PUBLIC KEY"), k);
}

/* RFC 4716 "---- BEGIN SSH2 PUBLIC KEY ----" (already matched): header
 * lines "Tag: value" (continued by a trailing backslash), then base64
 * lines, then "---- END SSH2 PUBLIC KEY ----". AWS takes RSA keys only
 * in this format. */
static int parse_rfc4716(struct lines *l, struct spx_pubkey *k)
{
	static const char end[] = "---- END SSH2 PUBLIC KEY ----";
	struct spx_buf b64 = SPX_BUF_INIT;
	unsigned char blob[SPX_SSH_BLOB_MAX];
	const char *s;
	size_t n, bl;
	bool done = false, in_body = false, cont = false;
	int rc;

	while (next_line(l, &s, &n)) {
		if (line_is(s, n, end)) {
			done = true;
			break;
		}
		if (cont) { /* the continuation of a header value */
			cont = n && s[n - 1] == '\\';
			continue;
		}
		if (!in_body && memchr(s, ':', n)) {
			const char *c = memchr(s, ':', n);

			/* A header tag: 1..64 printable characters. */
			if (c == s || c - s > 64)
				goto bad;
			for (const char *q = s; q < c; q++)
				if (*q <= ' ' || *q > '~')
					goto bad;
			cont = s[n - 1] == '\\';
			continue;
		}
		in_body = true;
		for (size_t i = 0; i < n; i++)
			if (!is_b64((unsigned char)s[i]))
				goto bad;
		spx_buf_add(&b64, s, n);
		if (b64.len > SPX_KEYPAIR_IMPORT_MAX)
			goto bad;
	}
	while (done && next_line(l, &s, &n))
		if (n)
			goto bad;
	if (!done || !b64.len)
		goto bad;
	rc = b64_text(b64.p, b64.len, blob, sizeof(blob), &bl);
	spx_buf_release(&b64);
	if (rc < 0)
		return rc;
	return parse_blob(blob, bl, "ssh-rsa", k);
bad:
	spx_buf_release(&b64);
	return bad_key("malformed RFC 4716 public key");
}

static bool sp(int c)
{
	return c == ' ' || c == '\t';
}

/* "type base64 [comment]": one line (blank lines around it are fine). */
static int parse_openssh(const char *s, size_t n, struct lines *rest,
			 struct spx_pubkey *k)
{
	char type[32];
	const char *b, *c;
	size_t tl = 0, bl, cl;
	unsigned char blob[SPX_SSH_BLOB_MAX];
	size_t blen;
	int rc;

	while (tl < n && !sp(s[tl]))
		tl++;
	if (tl >= sizeof(type))
		return bad_key("unknown key type");
	memcpy(type, s, tl);
	type[tl] = 0;
	if (strcmp(type, "ssh-rsa") && strcmp(type, "ssh-ed25519"))
		return bad_key("unsupported key type (only ssh-rsa and "
			       "ssh-ed25519)");
	b = s + tl;
	while (b < s + n && sp(*b))
		b++;
	for (c = b; c < s + n && !sp(*c); c++)
		if (!is_b64((unsigned char)*c))
			return bad_key("malformed base64");
	bl = (size_t)(c - b);
	if (!bl)
		return bad_key("no key after the key type");
	rc = b64_text(b, bl, blob, sizeof(blob), &blen);
	if (rc < 0)
		return rc;
	rc = parse_blob(blob, blen, type, k);
	if (rc < 0)
		return rc;
	while (c < s + n && sp(*c))
		c++;
	cl = (size_t)(s + n - c);
	while (cl && sp(c[cl - 1]))
		cl--;
	/* Keep a comment only if it is plain ASCII and fits. */
	k->comment[0] = 0;
	if (cl && cl <= SPX_KEYPAIR_NAME_MAX) {
		bool ok = true;

		for (size_t i = 0; i < cl; i++)
			ok &= c[i] >= 0x20 && c[i] <= 0x7e;
		if (ok) {
			memcpy(k->comment, c, cl);
			k->comment[cl] = 0;
		}
	}
	{
		const char *ls;
		size_t ln;

		while (next_line(rest, &ls, &ln))
			for (size_t i = 0; i < ln; i++)
				if (!sp(ls[i]))
					return bad_key("more than one key");
	}
	return 0;
}

int spx_pubkey_parse(const void *p, size_t len, struct spx_pubkey *k)
{
	const unsigned char *u = p;
	struct lines l;
	const char *s;
	size_t n;

	memset(k, 0, sizeof(*k));
	if (!len)
		return bad_key("empty");
	if (len > SPX_KEYPAIR_IMPORT_MAX)
		return bad_key("too long");
	/* Raw DER: a SEQUENCE. */
	if (u[0] == 0x30)
		return parse_der(u, len, false, k);
	if (memchr(p, 0, len))
		return bad_key("a NUL byte in the key text");

	l = (struct lines){ p, (const char *)p + len };
	/* The first line that is not blank decides the format. */
	for (;;) {
		size_t i = 0;

		if (!next_line(&l, &s, &n))
			return bad_key("empty");
		while (i < n && sp(s[i]))
			i++;
		if (i < n) {
			s += i;
			n -= i;
			break;
		}
	}
	while (n && sp(s[n - 1]))
		n--;
	if (line_is(s, n, "---- BEGIN SSH2 PUBLIC KEY ----"))
		return parse_rfc4716(&l, k);
	if (line_is(s, n, "-----BEGIN PUBLIC KEY-----"))
		return parse_pem(&l, "PUBLIC KEY", k);
	if (line_is(s, n, "-----BEGIN RSA PUBLIC KEY-----"))
		return parse_pem(&l, "RSA PUBLIC KEY", k);
	if (n > 4 && !memcmp(s, "ssh-", 4))
		return parse_openssh(s, n, &l, k);
	{
		/* Base64 of a DER SubjectPublicKeyInfo, on one or more
		 * lines. */
		struct spx_buf b64 = SPX_BUF_INIT;
		unsigned char der[SPX_KEYPAIR_IMPORT_MAX];
		size_t dl;
		int rc;

		l = (struct lines){ p, (const char *)p + len };
		while (next_line(&l, &s, &n)) {
			for (size_t i = 0; i < n; i++) {
				if (sp(s[i]))
					continue;
				if (!is_b64((unsigned char)s[i])) {
					spx_buf_release(&b64);
					return bad_key("unrecognised key "
						       "format");
				}
				spx_buf_addc(&b64, s[i]);
			}
		}
		rc = b64_text(b64.p, b64.len, der, sizeof(der), &dl);
		spx_buf_release(&b64);
		if (rc < 0)
			return rc;
		if (!dl || der[0] != 0x30)
			return bad_key("unrecognised key format");
		return parse_der(der, dl, false, k);
	}
}

void spx_pubkey_openssh(const struct spx_pubkey *k, const char *comment,
			struct spx_buf *out)
{
	spx_buf_adds(out, k->type == SPX_KEY_ED25519 ? "ssh-ed25519 "
						      : "ssh-rsa ");
	spx_base64_encode(k->blob, k->bloblen, out);
	if (comment && *comment)
		spx_buf_addf(out, " %s", comment);
}

/* The EVP_PKEY of a parsed RSA blob (for its SPKI DER). */
static int pubkey_rsa_evp(const struct spx_pubkey *k, EVP_PKEY **out)
{
	struct rd r = { k->blob, k->bloblen };
	const unsigned char *t;
	size_t tl;
	BIGNUM *e = NULL, *n = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	int rc = -1;

	*out = NULL;
	if (get_string(&r, &t, &tl) < 0 || get_mpint(&r, RSA_MAX_E_BYTES, &e) < 0 ||
	    get_mpint(&r, RSA_MAX_BITS / 8, &n) < 0) {
		spx_error(SPX_FAIL, "corrupt RSA blob");
		goto out;
	}
	bld = OSSL_PARAM_BLD_new();
	if (!bld || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) ||
	    !(params = OSSL_PARAM_BLD_to_param(bld)) ||
	    !(ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) ||
	    EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) <= 0) {
		spx_error(SPX_FAIL, "cannot build an RSA public key");
		goto out;
	}
	rc = 0;
out:
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(e);
	BN_free(n);
	return rc;
}

int spx_pubkey_fingerprint(const struct spx_pubkey *k, char *out)
{
	EVP_PKEY *pk;
	int rc;

	if (k->type == SPX_KEY_ED25519)
		return fp_sha256(k->blob, k->bloblen, out) < 0 ? SPX_EC2_FAIL
							       : 0;
	if (pubkey_rsa_evp(k, &pk) < 0)
		return SPX_EC2_FAIL;
	rc = fp_spki_md5(pk, out);
	EVP_PKEY_free(pk);
	return rc < 0 ? SPX_EC2_FAIL : 0;
}

/* ---- records -------------------------------------------------------- */

void spx_keypair_release(struct spx_keypair *k)
{
	free(k->public_key);
	spx_kv_free(&k->tags);
	memset(k, 0, sizeof(*k));
}

void spx_keypair_list_free(struct spx_keypair *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		spx_keypair_release(&v[i]);
	free(v);
}

static int check_account(const char *account)
{
	if (!account || !spx_account_id_valid(account))
		return spx_ec2_error(SPX_EC2_INVALID,
				     "invalid account id '%.32s'",
				     account ? account : "");
	return 0;
}

static char *record_key(const char *account, const char *id)
{
	return spx_xprintf("keypairs/%s/%s", account, id);
}

static char *name_key(const char *account, const char *name)
{
	unsigned char d[SPX_CKSUM_MAX];
	char hex[2 * SPX_CKSUM_MAX + 1];
	size_t dl;

	/* Names may hold any printable ASCII; keys may not. */
	if (spx_cksum_digest(SPX_CKSUM_SHA256, name, strlen(name), d, &dl) < 0)
		return NULL;
	spx_hex_encode(d, dl, hex);
	return spx_xprintf("keypair-names/%s/%s", account, hex);
}

static json_t *tags_json(const struct spx_kvlist *tags)
{
	json_t *a = json_array();

	for (size_t i = 0; tags && i < tags->n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s}", "Key",
						   tags->v[i].k, "Value",
						   tags->v[i].v));
	return a;
}

static char *record_json(const struct spx_keypair *k)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:o}",
			      "KeyPairId", k->id, "KeyName", k->name,
			      "KeyType", spx_key_type_name(k->type),
			      "KeyFingerprint", k->fingerprint, "PublicKey",
			      k->public_key, "CreateTime",
			      (json_int_t)k->created_ms, "Tags",
			      tags_json(&k->tags));
	char *s;

	if (!o)
		spx_die(SPX_FAIL, "keypair: cannot build a record");
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		spx_die(SPX_FAIL, "keypair: cannot render a record");
	return s;
}

static int copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

/* Parse a key pair record; a record that is not what we write is
 * corrupt (SPX_EC2_FAIL). */
static int record_parse(const char *account, const char *key, const char *p,
			size_t n, struct spx_keypair *k)
{
	json_t *o, *tags, *t;
	json_error_t jerr;
	const char *id, *name, *type, *fp, *pub;
	json_int_t created;
	size_t i;

	memset(k, 0, sizeof(*k));
	o = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!o || json_unpack(o, "{s:s, s:s, s:s, s:s, s:s, s:I, s:o}",
			      "KeyPairId", &id, "KeyName", &name, "KeyType",
			      &type, "KeyFingerprint", &fp, "PublicKey", &pub,
			      "CreateTime", &created, "Tags", &tags) < 0 ||
	    !json_is_array(tags) ||
	    copy_str(k->id, sizeof(k->id), id) < 0 ||
	    copy_str(k->name, sizeof(k->name), name) < 0 ||
	    copy_str(k->account, sizeof(k->account), account) < 0 ||
	    copy_str(k->fingerprint, sizeof(k->fingerprint), fp) < 0 ||
	    spx_key_type_parse(type, &k->type) < 0)
		goto bad;
	k->created_ms = created;
	k->public_key = spx_strdup(pub);
	json_array_foreach(tags, i, t) {
		const char *tk, *tv;

		if (json_unpack(t, "{s:s, s:s}", "Key", &tk, "Value", &tv) < 0)
			goto bad;
		spx_kv_add(&k->tags, tk, tv);
	}
	json_decref(o);
	return 0;
bad:
	json_decref(o);
	spx_keypair_release(k);
	return spx_ec2_error(SPX_EC2_FAIL, "corrupt key pair record '%s'",
			     key);
}

/* The id a name record names, into id (SPX_KEYPAIR_ID_SIZE); *rev its
 * revision. SPX_EC2_KEYPAIR_NOTFOUND if there is no such name. */
static int read_name(struct spx_state *st, const char *account,
		     const char *name, char *id, uint64_t *rev)
{
	char *key = name_key(account, name);
	struct spx_buf v = SPX_BUF_INIT;
	json_t *o = NULL;
	const char *i, *nm;
	int rc;

	if (!key)
		return SPX_EC2_FAIL;
	rc = spx_state_get(st, key, &v, rev);
	if (rc == SPX_STATE_NOTFOUND) {
		rc = spx_ec2_error(SPX_EC2_KEYPAIR_NOTFOUND,
				   "key pair '%s' does not exist", name);
		goto out;
	}
	if (rc < 0) {
		rc = SPX_EC2_FAIL;
		goto out;
	}
	o = json_loadb(v.p, v.len, 0, NULL);
	if (!o || json_unpack(o, "{s:s, s:s}", "KeyPairId", &i, "KeyName",
			      &nm) < 0 ||
	    copy_str(id, SPX_KEYPAIR_ID_SIZE, i) < 0) {
		rc = spx_ec2_error(SPX_EC2_FAIL, "corrupt record '%s'", key);
		goto out;
	}
	if (strcmp(nm, name)) /* a SHA-256 collision: as good as absent */
		rc = spx_ec2_error(SPX_EC2_KEYPAIR_NOTFOUND,
				   "key pair '%s' does not exist", name);
	else
		rc = 0;
out:
	json_decref(o);
	spx_buf_release(&v);
	free(key);
	return rc;
}

/* Read the key pair record of id, whether or not its name commits it. */
static int read_record(struct spx_state *st, const char *account,
		       const char *id, struct spx_keypair *k)
{
	char *key;
	struct spx_buf v = SPX_BUF_INIT;
	int rc;

	memset(k, 0, sizeof(*k));
	if (!spx_id_valid(id, "key"))
		return spx_ec2_error(SPX_EC2_KEYPAIR_NOTFOUND,
				     "key pair '%.64s' does not exist", id);
	key = record_key(account, id);
	rc = spx_state_get(st, key, &v, NULL);
	if (rc == SPX_STATE_NOTFOUND)
		rc = spx_ec2_error(SPX_EC2_KEYPAIR_NOTFOUND,
				   "key pair '%s' does not exist", id);
	else if (rc < 0)
		rc = SPX_EC2_FAIL;
	else
		rc = record_parse(account, key, v.p, v.len, k);
	spx_buf_release(&v);
	free(key);
	return rc;
}

int spx_keypair_get(struct spx_state *st, const char *account,
		    const char *id, const char *name, struct spx_keypair *out)
{
	char nid[SPX_KEYPAIR_ID_SIZE];
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = check_account(account)) < 0)
		return rc;
	if (!id && !name)
		return spx_ec2_error(SPX_EC2_INVALID,
				     "either KeyName or KeyPairId is needed");
	if (id) {
		if ((rc = read_record(st, account, id, out)) < 0)
			return rc;
		/* Committed only if its name record names it. */
		rc = read_name(st, account, out->name, nid, NULL);
		if (rc == 0 && strcmp(nid, id))
			rc = SPX_EC2_KEYPAIR_NOTFOUND;
		if (rc < 0) {
			spx_keypair_release(out);
			if (rc == SPX_EC2_KEYPAIR_NOTFOUND)
				return spx_ec2_error(rc,
						     "key pair '%s' does not "
						     "exist", id);
		}
		return rc;
	}
	if ((rc = read_name(st, account, name, nid, NULL)) < 0)
		return rc;
	rc = read_record(st, account, nid, out);
	if (rc == 0 && strcmp(out->name, name))
		rc = SPX_EC2_FAIL;
	if (rc < 0) {
		spx_keypair_release(out);
		if (rc == SPX_EC2_KEYPAIR_NOTFOUND)
			/* Deleted between the two reads. */
			return spx_ec2_error(rc, "key pair '%s' does not exist",
					     name);
		if (rc == SPX_EC2_FAIL)
			return spx_ec2_error(rc, "key pair record '%s' does "
						 "not match its name", nid);
	}
	return rc;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct spx_keypair *)a)->name,
		      ((const struct spx_keypair *)b)->name);
}

int spx_keypair_list(struct spx_state *st, const char *account,
		     struct spx_keypair **out, size_t *n)
{
	struct spx_state_list l = SPX_STATE_LIST_INIT;
	char *prefix;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = check_account(account)) < 0)
		return rc;
	prefix = spx_xprintf("keypair-names/%s/", account);
	rc = spx_state_list(st, prefix, 0, &l);
	free(prefix);
	if (rc < 0)
		return SPX_EC2_FAIL;
	for (size_t i = 0; i < l.n; i++) {
		struct spx_buf v = SPX_BUF_INIT;
		json_t *o;
		const char *id;
		struct spx_keypair k;

		rc = spx_state_get(st, l.key[i], &v, NULL);
		if (rc == SPX_STATE_NOTFOUND) { /* deleted meanwhile */
			spx_buf_release(&v);
			continue;
		}
		if (rc < 0) {
			rc = SPX_EC2_FAIL;
			goto fail;
		}
		o = json_loadb(v.p, v.len, 0, NULL);
		spx_buf_release(&v);
		if (!o || json_unpack(o, "{s:s}", "KeyPairId", &id) < 0) {
			json_decref(o);
			rc = spx_ec2_error(SPX_EC2_FAIL, "corrupt record '%s'",
					   l.key[i]);
			goto fail;
		}
		rc = read_record(st, account, id, &k);
		json_decref(o);
		if (rc == SPX_EC2_KEYPAIR_NOTFOUND)
			continue;
		if (rc < 0)
			goto fail;
		*out = spx_realloc(*out, (*n + 1) * sizeof(**out));
		(*out)[(*n)++] = k;
	}
	spx_state_list_release(&l);
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_name);
	spx_error_clear();
	return 0;
fail:
	spx_state_list_release(&l);
	spx_keypair_list_free(*out, *n);
	*out = NULL;
	*n = 0;
	return rc < 0 ? rc : SPX_EC2_FAIL;
}

/* Write k (filled but for its id and time) as a new key pair: its record,
 * then its name record, the commit. */
static int commit_new(struct spx_state *st, struct spx_keypair *k)
{
	char *rkey = NULL, *nkey = NULL, *rec = NULL, *idx = NULL;
	json_t *o;
	int rc;

	if (spx_id_new(k->id, sizeof(k->id), "key") < 0)
		return SPX_EC2_FAIL;
	k->created_ms = spx_wall_ms();
	rkey = record_key(k->account, k->id);
	nkey = name_key(k->account, k->name);
	if (!nkey) {
		rc = SPX_EC2_FAIL;
		goto out;
	}
	rec = record_json(k);
	rc = spx_state_create(st, rkey, rec, strlen(rec), NULL);
	if (rc < 0) { /* EXISTS would be a 68-bit id collision */
		rc = SPX_EC2_FAIL;
		goto out;
	}
	o = json_pack("{s:s, s:s}", "KeyPairId", k->id, "KeyName", k->name);
	idx = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	rc = spx_state_create(st, nkey, idx, strlen(idx), NULL);
	if (rc < 0) {
		int err = rc;

		/* Remove our record; if that fails it stays an invisible
		 * orphan. */
		spx_state_delete(st, rkey, 0);
		if (err == SPX_STATE_EXISTS)
			rc = spx_ec2_error(SPX_EC2_KEYPAIR_DUPLICATE,
					   "key pair '%s' already exists",
					   k->name);
		else
			rc = spx_ec2_error(SPX_EC2_FAIL,
					   "cannot commit key pair '%s': %s",
					   k->name, spx_errmsg());
		goto out;
	}
	rc = 0;
out:
	free(rkey);
	free(nkey);
	free(rec);
	free(idx);
	return rc;
}

/* The checks CreateKeyPair and ImportKeyPair share, and a cheap early
 * duplicate answer before any key work (the commit decides for sure). */
static int precheck(struct spx_state *st, const char *account,
		    const char *name, const struct spx_kvlist *tags)
{
	char id[SPX_KEYPAIR_ID_SIZE];
	int rc;

	if ((rc = check_account(account)) < 0 ||
	    (rc = spx_keypair_name_check(name)) < 0 ||
	    (rc = spx_ec2_tags_check(tags)) < 0)
		return rc;
	rc = read_name(st, account, name, id, NULL);
	if (rc == 0)
		return spx_ec2_error(SPX_EC2_KEYPAIR_DUPLICATE,
				     "key pair '%s' already exists", name);
	if (rc != SPX_EC2_KEYPAIR_NOTFOUND)
		return rc;
	spx_error_clear();
	return 0;
}

static void fill_common(struct spx_keypair *k, const char *account,
			const char *name, const struct spx_kvlist *tags)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->account, sizeof(k->account), "%s", account);
	snprintf(k->name, sizeof(k->name), "%s", name);
	for (size_t i = 0; tags && i < tags->n; i++)
		spx_kv_add(&k->tags, tags->v[i].k, tags->v[i].v);
}

int spx_keypair_create(struct spx_state *st, const char *account,
		       const char *name, enum spx_key_type t,
		       enum spx_key_format f, const struct spx_kvlist *tags,
		       struct spx_keypair *out, char **key_material)
{
	EVP_PKEY *pk = NULL;
	struct spx_buf pubblob = SPX_BUF_INIT, line = SPX_BUF_INIT;
	struct spx_buf mat = SPX_BUF_INIT;
	unsigned char *pem = NULL;
	size_t pemlen = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	*key_material = NULL;
	if (t != SPX_KEY_RSA && t != SPX_KEY_ED25519)
		return spx_ec2_error(SPX_EC2_INVALID, "invalid key type");
	if (f != SPX_KEY_PEM && f != SPX_KEY_PPK)
		return spx_ec2_error(SPX_EC2_INVALID, "invalid key format");
	if ((rc = precheck(st, account, name, tags)) < 0)
		return rc;

	pk = t == SPX_KEY_RSA ? EVP_PKEY_Q_keygen(NULL, NULL, "RSA",
						  (size_t)2048)
			      : EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	if (!pk)
		return spx_ec2_error(SPX_EC2_FAIL, "cannot generate a key");
	fill_common(out, account, name, tags);
	out->type = t;
	spx_buf_init(&mat, SECRET_HINT);
	rc = SPX_EC2_FAIL;
	if (public_blob(pk, t, &pubblob) < 0)
		goto fail;
	spx_buf_adds(&line, t == SPX_KEY_RSA ? "ssh-rsa " : "ssh-ed25519 ");
	spx_base64_encode(pubblob.p, pubblob.len, &line);
	spx_buf_addf(&line, " %s", name);
	out->public_key = spx_buf_detach(&line, NULL);

	if (t == SPX_KEY_RSA) {
		if (fp_created_rsa(pk, out->fingerprint) < 0)
			goto fail;
	} else if (fp_sha256((const unsigned char *)pubblob.p, pubblob.len,
			     out->fingerprint) < 0) {
		goto fail;
	}

	if (f == SPX_KEY_PPK) {
		if (ppk(pk, t, &pubblob, &mat) < 0)
			goto fail;
	} else if (t == SPX_KEY_ED25519) {
		if (openssh_private(pk, &pubblob, &mat) < 0)
			goto fail;
	} else {
		/* "type-specific" is PKCS#1: BEGIN RSA PRIVATE KEY. */
		if (encode(pk, "PEM", "type-specific",
			   OSSL_KEYMGMT_SELECT_KEYPAIR, &pem, &pemlen) < 0)
			goto fail;
		spx_buf_add(&mat, pem, pemlen);
		OPENSSL_clear_free(pem, pemlen + 1);
	}
	EVP_PKEY_free(pk);
	pk = NULL;

	if ((rc = commit_new(st, out)) < 0)
		goto fail;
	*key_material = spx_malloc(mat.len + 1);
	memcpy(*key_material, mat.p, mat.len + 1);
	buf_wipe(&mat);
	spx_buf_release(&pubblob);
	return 0;
fail:
	EVP_PKEY_free(pk);
	buf_wipe(&mat);
	spx_buf_release(&pubblob);
	spx_buf_release(&line);
	spx_keypair_release(out);
	return rc;
}

int spx_keypair_import(struct spx_state *st, const char *account,
		       const char *name, const void *pub, size_t len,
		       const struct spx_kvlist *tags, struct spx_keypair *out)
{
	struct spx_pubkey k;
	struct spx_buf line = SPX_BUF_INIT;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = precheck(st, account, name, tags)) < 0)
		return rc;
	if ((rc = spx_pubkey_parse(pub, len, &k)) < 0)
		return rc;
	fill_common(out, account, name, tags);
	out->type = k.type;
	if ((rc = spx_pubkey_fingerprint(&k, out->fingerprint)) < 0)
		goto fail;
	spx_pubkey_openssh(&k, k.comment, &line);
	out->public_key = spx_buf_detach(&line, NULL);
	if ((rc = commit_new(st, out)) < 0)
		goto fail;
	return 0;
fail:
	spx_keypair_release(out);
	return rc;
}

int spx_keypair_delete(struct spx_state *st, const char *account,
		       const char *id, const char *name, char *deleted_id)
{
	struct spx_keypair k;
	char nid[SPX_KEYPAIR_ID_SIZE];
	char *nkey = NULL, *rkey = NULL;
	uint64_t rev;
	int rc;

	if ((rc = check_account(account)) < 0)
		return rc;
	if (!id && !name)
		return spx_ec2_error(SPX_EC2_INVALID,
				     "either KeyName or KeyPairId is needed");
	if ((rc = spx_keypair_get(st, account, id, name, &k)) < 0)
		return rc;
	/* The name record as it is now must still name this key pair: a
	 * delete and re-create by someone else in between is not ours to
	 * remove. The revision makes the check and the delete one step. */
	rc = read_name(st, account, k.name, nid, &rev);
	if (rc == 0 && strcmp(nid, k.id))
		rc = spx_ec2_error(SPX_EC2_KEYPAIR_NOTFOUND,
				   "key pair '%s' does not exist", k.id);
	if (rc < 0)
		goto out;
	nkey = name_key(account, k.name);
	rkey = record_key(account, k.id);
	rc = nkey ? spx_state_delete(st, nkey, rev) : SPX_EC2_FAIL;
	if (rc == SPX_STATE_NOTFOUND || rc == SPX_STATE_CONFLICT) {
		rc = spx_ec2_error(SPX_EC2_KEYPAIR_NOTFOUND,
				   "key pair '%s' does not exist", k.id);
		goto out;
	}
	if (rc < 0) {
		rc = SPX_EC2_FAIL;
		goto out;
	}
	/* Committed: the key pair is gone. A failure here leaves an
	 * invisible orphan record, not a visible key pair. */
	spx_state_delete(st, rkey, 0);
	spx_error_clear();
	if (deleted_id)
		snprintf(deleted_id, SPX_KEYPAIR_ID_SIZE, "%s", k.id);
	rc = 0;
out:
	free(nkey);
	free(rkey);
	spx_keypair_release(&k);
	return rc;
}

struct tag_update {
	const char *account;
	const struct spx_kvlist *set;
	const struct spx_kv *unset;
	size_t n_unset;
	int rc; /* why tags_fn aborted: its codes overlap the store's */
};

static int tags_fn(void *ctx, const struct spx_buf *old, uint64_t rev,
		   struct spx_buf *out)
{
	struct tag_update *u = ctx;
	struct spx_keypair k;
	struct spx_kvlist nt = SPX_KVLIST_INIT;
	char *s;
	int rc;

	if (!old)
		return u->rc = spx_ec2_error(SPX_EC2_KEYPAIR_NOTFOUND,
					     "the key pair does not exist");
	if ((rc = record_parse(u->account, "key pair", old->p, old->len, &k)) <
	    0)
		return u->rc = rc;
	for (size_t i = 0; i < k.tags.n; i++) {
		bool drop = false;

		for (size_t j = 0; j < u->n_unset && !drop; j++)
			drop = !strcmp(u->unset[j].k, k.tags.v[i].k) &&
			       (!u->unset[j].v ||
				!strcmp(u->unset[j].v, k.tags.v[i].v));
		if (!drop)
			spx_kv_add(&nt, k.tags.v[i].k, k.tags.v[i].v);
	}
	for (size_t i = 0; u->set && i < u->set->n; i++) {
		size_t j;

		for (j = 0; j < nt.n; j++)
			if (!strcmp(nt.v[j].k, u->set->v[i].k))
				break;
		if (j < nt.n) {
			free(nt.v[j].v);
			nt.v[j].v = spx_strdup(u->set->v[i].v);
		} else {
			spx_kv_add(&nt, u->set->v[i].k, u->set->v[i].v);
		}
	}
	rc = spx_ec2_tags_check(&nt);
	if (rc < 0) {
		spx_kv_free(&nt);
		spx_keypair_release(&k);
		return u->rc = rc;
	}
	spx_kv_free(&k.tags);
	k.tags = nt;
	s = record_json(&k);
	spx_buf_adds(out, s);
	free(s);
	spx_keypair_release(&k);
	return 0;
}

int spx_keypair_set_tags(struct spx_state *st, const char *account,
			 const char *id, const struct spx_kvlist *set,
			 const struct spx_kv *unset, size_t n_unset)
{
	struct tag_update u = { account, set, unset, n_unset, 0 };
	struct spx_keypair k;
	char *key;
	int rc;

	if ((rc = check_account(account)) < 0)
		return rc;
	/* Only a committed key pair can be tagged. */
	if ((rc = spx_keypair_get(st, account, id, NULL, &k)) < 0)
		return rc;
	spx_keypair_release(&k);
	key = record_key(account, id);
	rc = spx_state_update(st, key, tags_fn, &u, NULL);
	free(key);
	if (u.rc)
		return u.rc;
	if (rc == SPX_STATE_NOTFOUND)
		return spx_ec2_error(SPX_EC2_KEYPAIR_NOTFOUND,
				     "key pair '%s' does not exist", id);
	if (rc == SPX_STATE_CONFLICT || rc == SPX_STATE_INVALID ||
	    rc == SPX_STATE_EXISTS)
		return SPX_EC2_FAIL;
	return rc;
}
