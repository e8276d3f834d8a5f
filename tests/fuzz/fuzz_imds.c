/* fuzz_imds: what a guest sends to the metadata service, and a
 * metadata.json as a crash or a hand may leave it. The first byte picks
 * which. A request that parses is answered with a whole HTTP response. */
#include "spx.h"

#include "vm/imds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char md_json[] =
	"{\"meta-data\": {\"instance-id\": \"i-1\", \"placement\": "
	"{\"availability-zone\": \"us-east-1a\"}}, \"public-keys\": "
	"[{\"name\": \"k\", \"openssh-key\": \"ssh-ed25519 AAAA k\"}], "
	"\"dynamic\": {\"instance-identity\": {\"document\": \"{}\"}}, "
	"\"user-data\": \"aGk=\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct spx_imds_req r;
	static const unsigned char key[SPX_IMDS_KEY_LEN];
	struct spx_buf out = SPX_BUF_INIT;
	struct spx_imds *md = NULL;
	int used;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		if (spx_imds_load((const char *)data + 1, size - 1, &md) == 0) {
			spx_imds_parse("GET /latest/meta-data/ HTTP/1.1\r\n\r\n",
				       36, &r);
			spx_imds_answer(md, &r, key, 1000, &out);
		}
	} else if (spx_imds_load(md_json, sizeof(md_json) - 1, &md) == 0) {
		used = spx_imds_parse((const char *)data + 1, size - 1, &r);
		if (used > (int)(size - 1))
			abort();
		if (used > 0) {
			spx_imds_answer(md, &r, key, 1000, &out);
			if (strncmp(out.p, "HTTP/1.1 ", 9) != 0)
				abort();
		}
	}
	spx_imds_free(md);
	spx_buf_release(&out);
	spx_error_clear();
	return 0;
}
