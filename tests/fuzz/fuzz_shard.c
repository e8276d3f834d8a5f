/* fuzz_shard: the object store's reader against shard files it did not
 * write. An object is stored once at RS(2,1) with 64-byte blocks (each
 * followed by its CRC-32C); each input then replaces one or two of its
 * three shard files. With one replaced, every read must give the original
 * bytes (the CRCs find the damage and the other two rebuild it); with two,
 * a read may fail, but what it returns must still be the original bytes:
 * never a wrong byte. The low bit of the first byte picks one or two. */
#include "spx.h"

#include "file.h"
#include "obj/obj.h"

static struct spx_obj *s;
static struct spx_obj_bucket b;
static unsigned char orig[1500];
static char *shard[3];

static void setup(void)
{
	char dir[] = "/tmp/spx-fuzz-shard.XXXXXX", *dv[3];
	struct spx_obj_opts o = { .ndrives = 3, .data = 2, .parity = 1,
				  .block = 64,
				  .flags = SPX_OBJ_CREATE | SPX_OBJ_NO_INLINE };
	struct spx_obj_writer *w;
	struct spx_obj_meta m = SPX_OBJ_META_INIT;
	char enc[256];

	if (!mkdtemp(dir))
		abort();
	for (int i = 0; i < 3; i++)
		dv[i] = spx_xprintf("%s/d%d", dir, i);
	o.drives = (const char *const *)dv;
	for (size_t i = 0; i < sizeof(orig); i++)
		orig[i] = (unsigned char)(i * 7 + 3);
	if (spx_obj_open(&o, &s) < 0 ||
	    spx_obj_bucket_create(s, "fzb", "123456789012", "us-east-1") < 0 ||
	    spx_obj_bucket_open(s, "fzb", &b) < 0 ||
	    spx_obj_writer_begin(s, &b, "k", NULL, &w) < 0 ||
	    spx_obj_writer_write(w, orig, sizeof(orig)) < 0 ||
	    spx_obj_writer_commit(w, NULL, &m) < 0) {
		fprintf(stderr, "setup: %s\n", spx_errmsg());
		abort();
	}
	spx_obj_key_encode("k", enc, sizeof(enc));
	for (int i = 0; i < 3; i++) {
		shard[i] = spx_xprintf("%s/b/fzb/o/%s/%s/%s", dv[i], enc, m.data,
				       m.segs[0].name);
		free(dv[i]);
	}
	spx_obj_meta_release(&m);
}

/* Read the whole object in pieces of odd sizes; -1 on an error. */
static int check(void)
{
	struct spx_obj_reader *r;
	unsigned char buf[1600];
	size_t off = 0, got;

	if (spx_obj_reader_open(s, &b, "k", &r) < 0)
		return -1;
	while (off < sizeof(orig)) {
		if (spx_obj_read(r, off, buf, 97, &got) < 0) {
			spx_obj_reader_close(r);
			return -1;
		}
		if (!got || memcmp(buf, orig + off, got))
			abort(); /* short or wrong bytes with no error */
		off += got;
	}
	spx_obj_reader_close(r);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_buf keep[2] = { SPX_BUF_INIT, SPX_BUF_INIT };
	bool two = size && (data[0] & 1);
	size_t half = two ? size / 2 : size;
	int rc;

	if (!s)
		setup();
	if (size > 4096)
		return 0;
	/* Replace shard 0 (and 1), remembering what was there. */
	for (int i = 0; i < (two ? 2 : 1); i++) {
		FILE *f = fopen(shard[i], "rb");
		char tmp[4096];
		size_t n;

		if (!f)
			abort();
		while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
			spx_buf_add(&keep[i], tmp, n);
		fclose(f);
		if (spx_write_file(shard[i], data + (i ? half : 0),
				   i ? size - half : half, 0644, false) < 0)
			abort();
	}
	rc = check();
	if (!two && rc < 0)
		abort(); /* one lost shard must always be rebuilt */
	for (int i = 0; i < (two ? 2 : 1); i++) {
		if (spx_write_file(shard[i], keep[i].p, keep[i].len, 0644,
				   false) < 0)
			abort();
		spx_buf_release(&keep[i]);
	}
	spx_error_clear();
	return 0;
}
