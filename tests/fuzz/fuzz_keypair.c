/* fuzz_keypair: ImportKeyPair's public key parser on any bytes. It either
 * refuses them with InvalidKey.Format or accepts a key that, written back
 * as an OpenSSH line, parses to the same blob and comment, and has a
 * fingerprint. The key name check is fuzzed on the same bytes. */
#include "spx.h"

#include "ec2/keypair.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_pubkey k, again;
	char fp[SPX_KEYPAIR_FP_SIZE];
	int rc = spx_pubkey_parse(data, size, &k);

	if (rc == 0) {
		struct spx_buf line = SPX_BUF_INIT;

		if (k.bloblen == 0 || k.bloblen > sizeof(k.blob) ||
		    (k.type != SPX_KEY_RSA && k.type != SPX_KEY_ED25519) ||
		    (k.type == SPX_KEY_RSA && (k.bits < 1024 || k.bits > 4096)) ||
		    strlen(k.comment) > SPX_KEYPAIR_NAME_MAX)
			abort();
		spx_pubkey_openssh(&k, k.comment, &line);
		if (spx_pubkey_parse(line.p, line.len, &again) != 0 ||
		    again.type != k.type || again.bloblen != k.bloblen ||
		    memcmp(again.blob, k.blob, k.bloblen) ||
		    strcmp(again.comment, k.comment))
			abort();
		if (spx_pubkey_fingerprint(&k, fp) != 0 || !fp[0])
			abort();
		spx_buf_release(&line);
	} else if (rc != SPX_EC2_KEY_FORMAT) {
		abort();
	}
	{
		char *s = spx_strndup((const char *)data, size);

		rc = spx_keypair_name_check(s);
		if (rc != 0 && rc != SPX_EC2_INVALID)
			abort();
		free(s);
	}
	spx_error_clear();
	return 0;
}
