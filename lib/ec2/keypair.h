/* keypair.h: EC2 key pairs (CreateKeyPair, ImportKeyPair, DescribeKeyPairs,
 * DeleteKeyPair, and their tags), kept in the record store.
 *
 * Records. Per account, in lib/state:
 *   keypairs/<account>/<key-pair-id>          the key pair (JSON, below)
 *   keypair-names/<account>/<sha256-hex(name)> {"KeyPairId": ..., "KeyName": ...}
 * The name record is the commit point: a key pair exists when its name
 * record names its id. Create writes the key pair record first and then
 * creates the name record with spx_state_create, so of any number of
 * concurrent creates of one name (threads or processes, any node sharing
 * the store) exactly one succeeds and the others get
 * SPX_EC2_KEYPAIR_DUPLICATE (and remove their own record). Delete removes
 * the name record first. A crash between the two steps leaves a key pair
 * record that no name record names: it is invisible to every function
 * here (XXX: nothing removes such orphans yet; they are a few hundred
 * bytes each).
 *
 * The key pair record is
 *   {"KeyPairId": "key-0123456789abcdef0", "KeyName": "k1",
 *    "KeyType": "rsa"|"ed25519", "KeyFingerprint": "...",
 *    "PublicKey": "ssh-rsa AAAA... k1", "CreateTime": <ms since epoch>,
 *    "Tags": [{"Key": ..., "Value": ...}, ...]}
 * Private keys are never stored: CreateKeyPair hands the private key to
 * its caller once and forgets it.
 *
 * As AWS does it:
 *   - IDs are "key-" + 17 lowercase hex digits from the CSPRNG.
 *   - Names are 1..255 ASCII characters (0x20..0x7e), without leading or
 *     trailing spaces, unique per account (case-sensitive).
 *   - CreateKeyPair makes 2048-bit RSA or ED25519 keys. KeyMaterial:
 *       rsa, pem      "-----BEGIN RSA PRIVATE KEY-----" (PKCS#1, unencrypted)
 *       ed25519, pem  "-----BEGIN OPENSSH PRIVATE KEY-----" (openssh-key-v1,
 *                     cipher "none")
 *       *, ppk        PuTTY-User-Key-File-2, Encryption none, with its
 *                     HMAC-SHA-1 Private-MAC (the version PuTTY before 0.75
 *                     also reads)
 *   - Fingerprints ("Verify the fingerprint of your key pair"):
 *       created rsa   SHA-1 of the private key's PKCS#8 DER, colon hex
 *                     (openssl pkcs8 -topk8 -nocrypt -outform DER | openssl sha1 -c)
 *       imported rsa  MD5 of the public key's SubjectPublicKeyInfo DER,
 *                     colon hex (openssl rsa -pubout -outform DER | openssl md5 -c)
 *       ed25519       base64 of the SHA-256 of the OpenSSH public key blob,
 *                     with its '=' padding (ssh-keygen -l shows it without)
 *   - ImportKeyPair accepts an OpenSSH public key line (ssh-rsa,
 *     ssh-ed25519) and, for RSA only, a PEM "PUBLIC KEY" (SPKI) or
 *     "RSA PUBLIC KEY" (PKCS#1), an RFC 4716 "SSH2 PUBLIC KEY" and base64
 *     or raw DER SubjectPublicKeyInfo. RSA moduli are 1024..4096 bits. DSA,
 *     ECDSA and security-key types are InvalidKey.Format.
 *
 * Every function returns 0 or a negative enum spx_ec2_rc (ec2err.h) with
 * spx_error() recorded. account is a 12-digit account id. Safe to call
 * from several threads and processes on one store.
 */
#ifndef SPX_EC2_KEYPAIR_H
#define SPX_EC2_KEYPAIR_H

#include <stdint.h>

#include "spx.h"
#include "ec2/ec2err.h"

struct spx_state;

enum spx_key_type { SPX_KEY_RSA, SPX_KEY_ED25519 };
enum spx_key_format { SPX_KEY_PEM, SPX_KEY_PPK };

#define SPX_KEYPAIR_NAME_MAX 255
#define SPX_KEYPAIR_ID_SIZE 32	     /* "key-" + 17 hex + NUL fits */
#define SPX_KEYPAIR_FP_SIZE 64	     /* 59 for colon-hex SHA-1, 44 base64 */
#define SPX_KEYPAIR_IMPORT_MAX 16384 /* bytes of public key material */
#define SPX_EC2_TAGS_MAX 50
#define SPX_EC2_TAG_KEY_MAX 127	     /* characters (UTF-8) */
#define SPX_EC2_TAG_VALUE_MAX 255

struct spx_keypair {
	char id[SPX_KEYPAIR_ID_SIZE];
	char name[SPX_KEYPAIR_NAME_MAX + 1];
	char account[16];
	enum spx_key_type type;
	char fingerprint[SPX_KEYPAIR_FP_SIZE];
	char *public_key;      /* OpenSSH one-line form; owned */
	int64_t created_ms;    /* creation (or import) time, ms since epoch */
	struct spx_kvlist tags; /* Key -> Value, in the order set; owned */
};

/* "rsa" / "ed25519", "pem" / "ppk"; parse returns 0 or -1 (no error
 * recorded) for anything else. */
const char *spx_key_type_name(enum spx_key_type t);
int spx_key_type_parse(const char *s, enum spx_key_type *out);
const char *spx_key_format_name(enum spx_key_format f);
int spx_key_format_parse(const char *s, enum spx_key_format *out);

/* Check a key name as CreateKeyPair/ImportKeyPair do: SPX_EC2_INVALID with
 * AWS's wording recorded, or 0. */
int spx_keypair_name_check(const char *name);

/* Check a tag set (Key -> Value) as CreateTags does on one resource:
 * keys 1..127 and values 0..255 UTF-8 characters, no key starting with
 * "aws:", no key twice, at most SPX_EC2_TAGS_MAX: SPX_EC2_INVALID or
 * SPX_EC2_TAG_LIMIT, or 0. */
int spx_ec2_tags_check(const struct spx_kvlist *tags);

/* Create a key pair. tags may be NULL. On success *out (which the caller
 * releases with spx_keypair_release) describes it and *key_material is the
 * private key in format f, NUL-terminated, malloc'd: the caller wipes it
 * (OPENSSL_cleanse or explicit_bzero) and frees it. On failure *out is
 * zeroed and *key_material NULL. */
int spx_keypair_create(struct spx_state *st, const char *account,
		       const char *name, enum spx_key_type t,
		       enum spx_key_format f, const struct spx_kvlist *tags,
		       struct spx_keypair *out, char **key_material);

/* Import public key material (len raw bytes: the gateway has already
 * decoded the request's base64). SPX_EC2_KEY_FORMAT for material we do
 * not accept. */
int spx_keypair_import(struct spx_state *st, const char *account,
		       const char *name, const void *pub, size_t len,
		       const struct spx_kvlist *tags, struct spx_keypair *out);

/* Read one key pair by id (if id is not NULL) or else by name.
 * SPX_EC2_KEYPAIR_NOTFOUND if there is none; *out is released by the
 * caller on success. */
int spx_keypair_get(struct spx_state *st, const char *account,
		    const char *id, const char *name, struct spx_keypair *out);

/* Every key pair of the account, sorted by name (names are unique, so the
 * order is stable). *out is a malloc'd array of *n key pairs (NULL when
 * there are none); free it with spx_keypair_list_free. */
int spx_keypair_list(struct spx_state *st, const char *account,
		     struct spx_keypair **out, size_t *n);
void spx_keypair_list_free(struct spx_keypair *v, size_t n);

/* Delete by id (if not NULL) or else by name. SPX_EC2_KEYPAIR_NOTFOUND if
 * there is none (AWS answers DeleteKeyPair of an unknown name with
 * success; the gateway decides). *deleted_id (may be NULL, at least
 * SPX_KEYPAIR_ID_SIZE bytes) receives the id deleted. */
int spx_keypair_delete(struct spx_state *st, const char *account,
		       const char *id, const char *name, char *deleted_id);

/* Change a key pair's tags as CreateTags and DeleteTags do: first every
 * unset[i] is removed (unset[i].v NULL removes the key whatever its value;
 * a string, "" included, removes it only if the value is equal), then
 * every set entry is added or overwritten. set and unset may be NULL. The
 * result is checked with spx_ec2_tags_check before it is written. */
int spx_keypair_set_tags(struct spx_state *st, const char *account,
			 const char *id, const struct spx_kvlist *set,
			 const struct spx_kv *unset, size_t n_unset);

/* Free what a key pair owns and zero it; safe on a zeroed struct. */
void spx_keypair_release(struct spx_keypair *k);

/*
 * The public key parser, exposed for the fuzz target and for tools. It is
 * a bounded parser of hostile input: any bytes in, SPX_EC2_KEY_FORMAT out
 * unless they are one of the accepted forms above.
 */
#define SPX_SSH_BLOB_MAX 1024 /* a 4096-bit ssh-rsa blob is 535 bytes */

struct spx_pubkey {
	enum spx_key_type type;
	int bits;			       /* RSA modulus bits, 256 for ED25519 */
	unsigned char blob[SPX_SSH_BLOB_MAX];  /* canonical OpenSSH blob */
	size_t bloblen;
	char comment[SPX_KEYPAIR_NAME_MAX + 1]; /* OpenSSH line's comment, or "" */
};

int spx_pubkey_parse(const void *p, size_t len, struct spx_pubkey *out);
/* "ssh-rsa AAAA..." with " comment" when comment is not NULL or empty;
 * appended to out. */
void spx_pubkey_openssh(const struct spx_pubkey *k, const char *comment,
			struct spx_buf *out);
/* The fingerprint AWS shows for an imported key (MD5 of the SPKI DER for
 * RSA, base64 SHA-256 of the blob for ED25519) into out (at least
 * SPX_KEYPAIR_FP_SIZE bytes). */
int spx_pubkey_fingerprint(const struct spx_pubkey *k, char *out);

#endif
