/* Unit tests for lib/core/checksum: digests against independently computed
 * values (tests/unit/data/checksum/gen.py: zlib, hashlib and bitwise CRCs),
 * streaming against one-shot, base64, verification, and the multipart
 * checksums. SPX_CKSUM_BENCH=1 also prints the speed on 64 MiB. */
#include "spx.h"

#include "checksum.h"
#include "hex.h"
#include "t.h"

struct vec {
	const char *text; /* NULL: the pattern below, len bytes */
	size_t len;
	const char *b64[SPX_CKSUM_NALGO];
};

/* gen.py: begin */
static const struct vec vecs[] = {
	{ "", 0,
	  { "AAAAAA==",
	    "AAAAAA==",
	    "AAAAAAAAAAA=",
	    "2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
	    "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
	    "1B2M2Y8AsgTpgAmY7PhCfg==" } },
	{ "123456789", 9,
	  { "y/Q5Jg==",
	    "4waSgw==",
	    "rosUhgp5mIg=",
	    "98O8HYCOBHMq32eZZczDTKeuNEE=",
	    "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=",
	    "JfnnlDI7RTiF9RgfG2JNCw==" } },
	{ "Hello world", 11,
	  { "i9aeUg==",
	    "crUfeA==",
	    "OOJZ0D8xKts=",
	    "e1AsOh9IyGCa4hLN+2Od7jlnP14=",
	    "ZOyIygCyaOW6GjVnihtTFtIS9PNmskdyMlNKiuyjfzw=",
	    "PiWWCnnbxptnTNTsZ6csYg==" } },
	{ "a", 1,
	  { "6Le+Qw==",
	    "wdBDMA==",
	    "jC+ERbTL/Dw=",
	    "hvfkN/qlp/zhXR3cuerq6jd2Z7g=",
	    "ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs=",
	    "DMF1ucDxtqgxw5niaXcmYQ==" } },
	{ "The quick brown fox jumps over the lazy dog", 43,
	  { "QU+jOQ==",
	    "ImIEBA==",
	    "12xUBUlUwUM=",
	    "L9ThxnotKPzthJ7hu3bnORuT6xI=",
	    "16j7swfXgJRpypq8sAguT41WUeRtPNt2LQLQvzfJ5ZI=",
	    "nhB9nTcrtoJr2B01QqQZ1g==" } },
	{ NULL, 15,
	  { "j3f6uw==",
	    "mwwVFw==",
	    "efmL73Tpjzg=",
	    "RQjseNsN7BEGl/Conz/qZoxFweY=",
	    "RdJ1XFxwDyFONCKXLTbl3kQWZF9JiSascZ+uCWBcCfQ=",
	    "NoUtm+XNq9DScPc/20iOCg==" } },
	{ NULL, 16,
	  { "BjaolQ==",
	    "z3hFpA==",
	    "aVQeL8fBVX8=",
	    "WITx8JPG3Gp9+Nq3XUPVdIxt1YM=",
	    "8IfH/1eYggWriIXsv8qKd8lukbITvaupEUP7zWKZdxM=",
	    "VL1tQkJQ6Jt7E2mfgfYVIA==" } },
	{ NULL, 255,
	  { "UKIrBQ==",
	    "D9lfXg==",
	    "QH7r38tcm9A=",
	    "9GnAGD0LXwhwh9aWvdqGP/zObeY=",
	    "ySQbxFo0p+QCixA0b27cYzbBHE4khN/05M/3SgA7baE=",
	    "OG4ltTwG6huu7f4amPrQMA==" } },
	{ NULL, 256,
	  { "DOnTYw==",
	    "xsYfLw==",
	    "+qfDVMHxlUU=",
	    "RAjWLCo7Nv1xloagCNPIc7fon/I=",
	    "yMbgLVl/psQHpf7DDJgce7rQiXIkDuqJhBuPN+L78yw=",
	    "+jgwDd2jFgsZuNqgBcfNuA==" } },
	{ NULL, 257,
	  { "mNGjHw==",
	    "+N9DXw==",
	    "/KfMqaEoSSA=",
	    "o4yR/2OphAFlnrwjf70HJFFB6cI=",
	    "RC0XDyLxOuT8F+29iMSY35ByuWJ5CUT1iP+u7iqewOs=",
	    "EtTqOW5B/WW4p8HC8eamPQ==" } },
	{ NULL, 1000,
	  { "iQIWHg==",
	    "/1Lulw==",
	    "hJuqFMGMbk4=",
	    "QUR1NBAX7JFwNDWm8pAySBj5g+k=",
	    "UJfn1Yc1L1CXBirmefN72lgC2fh1q6FMjLTRoYitoXk=",
	    "Kx541XZd6eEElaAUEqHPIg==" } },
	{ NULL, 4099,
	  { "7jmpzA==",
	    "/0z/IQ==",
	    "rs4b9NGVBQ4=",
	    "KoxaaE2JVp7cbNjURUHKzlOnoSQ=",
	    "yPlTOhdOAGbRyCi5Rv0SLQ47E9YbAR3POimWTjFirMY=",
	    "wa9ifkDNq3Zk4iveNUDGPA==" } },
};
static const char want_etag[] = "e912e32c9befef6d49af3eb189214b9d-5";
static const char *const want_composite[] = {
	"13aRNw==-5",
	"IXi4BA==-5",
	"H/P1ibEJiyE=-5",
	"W/AHSwTyOU/EVT0r4NWmXpelvGw=-5",
	"IDLspNe2tbsHuJun2fl8nA7xcj/JpZPOxAgB+s0jSwg=-5",
};
/* gen.py: end */

static const char *const names[SPX_CKSUM_NALGO] = {
	"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256", "MD5",
};

/* The same filler as gen.py. */
static unsigned char *pattern(size_t n)
{
	unsigned char *p = spx_malloc(n ? n : 1);

	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + 7);
	return p;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char *b64(const unsigned char *d, size_t n)
{
	struct spx_buf b = SPX_BUF_INIT;

	spx_base64_encode(d, n, &b);
	return spx_buf_detach(&b, NULL);
}

static void check_values(void)
{
	static const struct {
		enum spx_cksum_algo a;
		const char *hex;
	} checks[] = {
		{ SPX_CKSUM_CRC32, "cbf43926" },
		{ SPX_CKSUM_CRC32C, "e3069283" },
		{ SPX_CKSUM_CRC64NVME, "ae8b14860a799888" },
		{ SPX_CKSUM_SHA1, "f7c3bc1d808e04732adf679965ccc34ca7ae3441" },
		{ SPX_CKSUM_MD5, "25f9e794323b453885f5181f1b624d0b" },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(checks); i++) {
		unsigned char d[SPX_CKSUM_MAX];
		char hex[2 * SPX_CKSUM_MAX + 1];
		size_t n = 0;

		T_INT(spx_cksum_digest(checks[i].a, "123456789", 9, d, &n), 0,
		      "%s of 123456789", names[checks[i].a]);
		spx_hex_encode(d, n, hex);
		T_STR(hex, checks[i].hex, "%s check value",
		      names[checks[i].a]);
	}
}

static void vectors(void)
{
	for (size_t i = 0; i < SPX_ARRAY_SIZE(vecs); i++) {
		const struct vec *v = &vecs[i];
		unsigned char *p = v->text ? NULL : pattern(v->len);
		const void *data = v->text ? (const void *)v->text : p;

		for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
			unsigned char d[SPX_CKSUM_MAX];
			size_t n = 0;
			char *s;

			T_INT(spx_cksum_digest((enum spx_cksum_algo)a, data,
					       v->len, d, &n), 0,
			      "%s of %zu bytes", names[a], v->len);
			T_INT(n, spx_cksum_size((enum spx_cksum_algo)a),
			      "%s digest length", names[a]);
			s = b64(d, n);
			T_STR(s, v->b64[a], "%s of '%s' (%zu bytes)", names[a],
			      v->text ? v->text : "pattern", v->len);
			free(s);
		}
		free(p);
	}
}

/* Split the input at random points (runs of 0 to 700 bytes, so both the
 * table and the folding paths see every alignment) and byte by byte. */
static void streaming(void)
{
	size_t len = 70001;
	unsigned char *p = spx_malloc(len);

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)rnd();
	for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
		unsigned char one[SPX_CKSUM_MAX], d[SPX_CKSUM_MAX];
		size_t n;
		int bad = 0;

		spx_cksum_digest((enum spx_cksum_algo)a, p, len, one, &n);
		for (int trial = 0; trial < 20; trial++) {
			struct spx_cksum c;
			size_t off = 0;

			if (spx_cksum_init(&c, (enum spx_cksum_algo)a) < 0) {
				bad++;
				continue;
			}
			while (off < len) {
				size_t k = (size_t)(rnd() % 701);

				if (k > len - off)
					k = len - off;
				spx_cksum_update(&c, p + off, k);
				off += k;
			}
			if (spx_cksum_final(&c, d, NULL) < 0 ||
			    memcmp(d, one, n))
				bad++;
			spx_cksum_release(&c);
		}
		T_INT(bad, 0, "%s: 20 random splits equal one-shot", names[a]);
	}

	/* Every length and start alignment up to 1100: bytewise (the table)
	 * against one-shot (folding from 256 bytes). */
	for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
		int bad = 0;

		for (size_t n = 0; n <= 1100; n += (n < 300 ? 1 : 7)) {
			unsigned char one[SPX_CKSUM_MAX], d[SPX_CKSUM_MAX];
			const unsigned char *q = p + n % 16;
			struct spx_cksum c;

			spx_cksum_digest((enum spx_cksum_algo)a, q, n, one,
					 NULL);
			spx_cksum_init(&c, (enum spx_cksum_algo)a);
			for (size_t i = 0; i < n; i++)
				spx_cksum_update(&c, q + i, 1);
			if (spx_cksum_final(&c, d, NULL) < 0 ||
			    memcmp(d, one, spx_cksum_size((enum spx_cksum_algo)a)))
				bad++;
			spx_cksum_release(&c);
		}
		T_INT(bad, 0, "%s: bytewise equals one-shot, lengths 0-1100",
		      names[a]);
	}
	free(p);
}

static void naming(void)
{
	static const struct {
		const char *name;
		int want; /* -1: rejected */
	} cases[] = {
		{ "CRC32", SPX_CKSUM_CRC32 },
		{ "crc32", SPX_CKSUM_CRC32 },
		{ "Crc32C", SPX_CKSUM_CRC32C },
		{ "crc64nvme", SPX_CKSUM_CRC64NVME },
		{ "CRC64NVME", SPX_CKSUM_CRC64NVME },
		{ "sha1", SPX_CKSUM_SHA1 },
		{ "SHA256", SPX_CKSUM_SHA256 },
		{ "MD5", -1 },
		{ "md5", -1 },
		{ "", -1 },
		{ "crc", -1 },
		{ "crc32 ", -1 },
		{ "sha-256", -1 },
		{ "crc64", -1 },
	};
	static const char *const headers[SPX_CKSUM_NALGO] = {
		"x-amz-checksum-crc32", "x-amz-checksum-crc32c",
		"x-amz-checksum-crc64nvme", "x-amz-checksum-sha1",
		"x-amz-checksum-sha256", "content-md5",
	};
	static const size_t sizes[SPX_CKSUM_NALGO] = { 4, 4, 8, 20, 32, 16 };

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		enum spx_cksum_algo a = SPX_CKSUM_MD5;
		int rc = spx_cksum_from_name(cases[i].name, &a);

		if (cases[i].want < 0)
			T_OK(rc == -1 && spx_errstatus() == SPX_USAGE,
			     "from_name rejects '%s'", cases[i].name);
		else
			T_OK(rc == 0 && (int)a == cases[i].want,
			     "from_name '%s'", cases[i].name);
	}
	T_STR(spx_errmsg(), "unknown checksum algorithm 'crc64'",
	      "the from_name message");
	for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
		T_STR(spx_cksum_name((enum spx_cksum_algo)a), names[a],
		      "name %d", a);
		T_STR(spx_cksum_header((enum spx_cksum_algo)a), headers[a],
		      "header %d", a);
		T_INT(spx_cksum_size((enum spx_cksum_algo)a), sizes[a],
		      "size %d", a);
	}
	T_OK(!spx_cksum_name((enum spx_cksum_algo)SPX_CKSUM_NALGO) &&
		     !spx_cksum_header((enum spx_cksum_algo)-1) &&
		     !spx_cksum_size((enum spx_cksum_algo)99),
	     "invalid algorithms have no name, header or size");
}

static void base64(void)
{
	static const struct {
		const char *raw, *enc;
	} good[] = {
		{ "", "" },
		{ "f", "Zg==" },
		{ "fo", "Zm8=" },
		{ "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
		{ "\xfb\xff", "+/8=" },
	};
	static const struct {
		const char *enc;
		size_t len;
		const char *why;
	} bad[] = {
		{ "Zg=", 3, "a length not a multiple of 4" },
		{ "Zg", 2, "missing padding" },
		{ "Z", 1, "one character" },
		{ "Z===", 4, "three pad characters" },
		{ "====", 4, "only padding" },
		{ "Zh==", 4, "nonzero bits under two pads" },
		{ "Zm9=", 4, "nonzero bits under one pad" },
		{ "Zm=v", 4, "padding in the middle" },
		{ "=Zm9", 4, "padding first" },
		{ "Zg==Zm9v", 8, "padding before the end" },
		{ "Zm9v====", 8, "a block of padding" },
		{ "Zm 9", 4, "a space" },
		{ "Zm9v\n", 5, "a trailing newline" },
		{ "Zm9v\r\nYmFy", 10, "a line break" },
		{ "Zm-v", 4, "the url alphabet's -" },
		{ "Zm_v", 4, "the url alphabet's _" },
		{ "Zm\0v", 4, "a NUL" },
		{ "Zm9\xc3", 4, "a non-ASCII byte" },
	};
	unsigned char out[64], all[256];
	size_t n;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(good); i++) {
		size_t rl = strlen(good[i].raw);
		char *s = b64((const unsigned char *)good[i].raw, rl);

		T_STR(s, good[i].enc, "base64 of '%s'", good[i].raw);
		free(s);
		n = 99;
		T_OK(spx_base64_decode(good[i].enc, strlen(good[i].enc), out,
				       sizeof(out), &n) == 0 &&
			     n == rl && !memcmp(out, good[i].raw, rl),
		     "decode '%s'", good[i].enc);
	}
	for (size_t i = 0; i < SPX_ARRAY_SIZE(bad); i++) {
		n = 99;
		T_OK(spx_base64_decode(bad[i].enc, bad[i].len, out,
				       sizeof(out), &n) == -1 &&
			     spx_errstatus() == SPX_USAGE && n == 0,
		     "decode rejects %s", bad[i].why);
	}
	T_OK(spx_base64_decode("Zm9vYmFy", 8, out, 5, &n) == -1,
	     "decode rejects an output longer than outsz");
	T_STR(spx_errmsg(), "base64 value too long: 6 bytes, at most 5",
	      "the too-long message");
	T_OK(spx_base64_decode("Zm9vYmFy", 8, out, 6, &n) == 0 && n == 6,
	     "decode fills outsz exactly");
	T_OK(spx_base64_decode(NULL, 0, out, 0, &n) == 0 && n == 0,
	     "decode of nothing is nothing");

	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)(255 - i);
	for (size_t len = 0; len <= 256; len += 1) {
		unsigned char back[256];
		char *s = b64(all, len);

		if (strlen(s) != SPX_BASE64_LEN(len) ||
		    spx_base64_decode(s, strlen(s), back, len, &n) < 0 ||
		    n != len || memcmp(back, all, len)) {
			T_OK(0, "base64 round trip of %zu bytes", len);
			free(s);
			break;
		}
		free(s);
		if (len == 256)
			T_OK(1, "base64 round trips of 0 to 256 bytes");
	}
}

static void verify(void)
{
	static const struct {
		enum spx_cksum_algo a;
		const char *b64;
		enum spx_cksum_verdict want;
	} cases[] = {
		{ SPX_CKSUM_CRC32, "y/Q5Jg==", SPX_CKSUM_OK },
		{ SPX_CKSUM_CRC32, "y/Q5Jw==", SPX_CKSUM_MISMATCH },
		{ SPX_CKSUM_CRC32, "AAAAAA==", SPX_CKSUM_MISMATCH },
		{ SPX_CKSUM_CRC32, "y/Q5Jg=", SPX_CKSUM_MALFORMED },
		{ SPX_CKSUM_CRC32, "y/Q5Jg", SPX_CKSUM_MALFORMED },
		{ SPX_CKSUM_CRC32, "", SPX_CKSUM_MALFORMED },
		{ SPX_CKSUM_CRC32, "y/Q5Jg== ", SPX_CKSUM_MALFORMED },
		{ SPX_CKSUM_CRC32, "y/Q5Jh==", SPX_CKSUM_MALFORMED },
		{ SPX_CKSUM_CRC32, "rosUhgp5mIg=", SPX_CKSUM_MALFORMED },
		{ SPX_CKSUM_CRC32C, "4waSgw==", SPX_CKSUM_OK },
		{ SPX_CKSUM_CRC64NVME, "rosUhgp5mIg=", SPX_CKSUM_OK },
		{ SPX_CKSUM_CRC64NVME, "y/Q5Jg==", SPX_CKSUM_MALFORMED },
		{ SPX_CKSUM_CRC64NVME, "rosUhgp5mIk=", SPX_CKSUM_MISMATCH },
		{ SPX_CKSUM_SHA1, "98O8HYCOBHMq32eZZczDTKeuNEE=",
		  SPX_CKSUM_OK },
		{ SPX_CKSUM_SHA256,
		  "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=",
		  SPX_CKSUM_OK },
		{ SPX_CKSUM_SHA256,
		  "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU",
		  SPX_CKSUM_MALFORMED },
		{ SPX_CKSUM_MD5, "JfnnlDI7RTiF9RgfG2JNCw==", SPX_CKSUM_OK },
		{ SPX_CKSUM_MD5, "25f9e794323b453885f5181f1b624d0b",
		  SPX_CKSUM_MALFORMED },
		{ SPX_CKSUM_MD5, "1B2M2Y8AsgTpgAmY7PhCfg==",
		  SPX_CKSUM_MISMATCH },
	};
	unsigned char d[SPX_CKSUM_MAX];
	enum spx_cksum_verdict why;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		int rc;

		spx_cksum_digest(cases[i].a, "123456789", 9, d, NULL);
		why = (enum spx_cksum_verdict)99;
		rc = spx_cksum_verify_b64(cases[i].a, cases[i].b64, d, &why);
		T_OK(rc == (cases[i].want == SPX_CKSUM_OK ? 0 : -1) &&
			     why == cases[i].want &&
			     (rc == 0 || spx_errstatus() == SPX_USAGE),
		     "verify %s '%s' gives %d", names[cases[i].a],
		     cases[i].b64, (int)cases[i].want);
	}
	spx_cksum_digest(SPX_CKSUM_CRC32, "123456789", 9, d, NULL);
	T_INT(spx_cksum_verify_b64(SPX_CKSUM_CRC32, "AAAAAA==", d, NULL), -1,
	      "verify without why");
	T_STR(spx_errmsg(),
	      "x-amz-checksum-crc32 mismatch: sent 'AAAAAA==', computed "
	      "'y/Q5Jg=='",
	      "the mismatch message");
	spx_cksum_verify_b64(SPX_CKSUM_CRC32, "y/Q5", d, NULL);
	T_STR(spx_errmsg(),
	      "malformed x-amz-checksum-crc32: not the base64 of 4 bytes",
	      "the malformed message");
	spx_cksum_digest(SPX_CKSUM_MD5, "123456789", 9, d, NULL);
	spx_cksum_verify_b64(SPX_CKSUM_MD5, "", d, NULL);
	T_STR(spx_errmsg(), "malformed content-md5: not the base64 of 16 bytes",
	      "the Content-MD5 message");
}

/* The 4099-byte pattern as parts of 1000 bytes, as gen.py. */
static void multipart(void)
{
	size_t len = 4099, np = (len + 999) / 1000;
	unsigned char *p = pattern(len), md5s[5][16];
	char etag[SPX_ETAG_MAX];
	struct spx_buf b = SPX_BUF_INIT;

	for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
		size_t n = spx_cksum_size((enum spx_cksum_algo)a);
		unsigned char *ds = spx_malloc(np * n);

		for (size_t i = 0; i < np; i++) {
			size_t k = len - i * 1000 < 1000 ? len - i * 1000 : 1000;

			spx_cksum_digest((enum spx_cksum_algo)a, p + i * 1000,
					 k, ds + i * n, NULL);
			if (a == SPX_CKSUM_MD5)
				memcpy(md5s[i], ds + i * n, 16);
		}
		spx_buf_reset(&b);
		if (a == SPX_CKSUM_MD5) {
			T_OK(spx_cksum_composite(SPX_CKSUM_MD5, ds, np, &b) ==
					     -1 &&
				     spx_errstatus() == SPX_USAGE,
			     "no composite MD5 (the ETag covers it)");
		} else {
			T_INT(spx_cksum_composite((enum spx_cksum_algo)a, ds,
						  np, &b),
			      0, "composite %s", names[a]);
			T_STR(b.p, want_composite[a], "composite %s value",
			      names[a]);
		}
		free(ds);
	}
	T_OK(spx_cksum_composite(SPX_CKSUM_CRC32, NULL, 0, &b) == -1,
	     "no composite of 0 parts");

	T_INT(spx_etag_multipart((const unsigned char(*)[16])md5s, np, etag),
	      0, "multipart etag");
	T_STR(etag, want_etag, "multipart etag value");
	T_OK(spx_etag_multipart((const unsigned char(*)[16])md5s, 0, etag) ==
			     -1 &&
		     spx_errstatus() == SPX_USAGE,
	     "no etag of 0 parts");
	{
		unsigned char(*many)[16] = spx_calloc(10000, 16);

		T_INT(spx_etag_multipart((const unsigned char(*)[16])many,
					 10000, etag),
		      0, "etag of 10000 parts");
		T_INT(strlen(etag), 32 + 6, "etag of 10000 parts length");
		T_STR(etag + 32, "-10000", "etag of 10000 parts suffix");
		free(many);
	}

	/* FULL_OBJECT: fold the part CRCs into the whole object's; also
	 * with random part sizes, empty parts included. */
	for (int a = 0; a <= SPX_CKSUM_CRC64NVME; a++) {
		unsigned char acc[8] = { 0 }, d[SPX_CKSUM_MAX], whole[SPX_CKSUM_MAX];
		size_t n = spx_cksum_size((enum spx_cksum_algo)a);
		int bad = 0;
		char *s;

		for (size_t i = 0; i < np; i++) {
			size_t k = len - i * 1000 < 1000 ? len - i * 1000 : 1000;

			spx_cksum_digest((enum spx_cksum_algo)a, p + i * 1000,
					 k, d, NULL);
			if (spx_cksum_combine((enum spx_cksum_algo)a, acc, d,
					      k) < 0)
				bad++;
		}
		s = b64(acc, n);
		T_STR(s, vecs[SPX_ARRAY_SIZE(vecs) - 1].b64[a],
		      "full-object %s of 5 parts", names[a]);
		free(s);

		spx_cksum_digest((enum spx_cksum_algo)a, p, len, whole, NULL);
		for (int trial = 0; trial < 50; trial++) {
			size_t off = 0;

			memset(acc, 0, sizeof(acc));
			while (off < len) {
				size_t k = (size_t)(rnd() % 1500);

				if (k > len - off)
					k = len - off;
				spx_cksum_digest((enum spx_cksum_algo)a,
						 p + off, k, d, NULL);
				spx_cksum_combine((enum spx_cksum_algo)a, acc,
						  d, k);
				off += k;
			}
			if (memcmp(acc, whole, n))
				bad++;
		}
		T_INT(bad, 0, "full-object %s of random parts", names[a]);
	}
	{
		unsigned char acc[32] = { 0 }, d[32] = { 0 };

		T_OK(spx_cksum_combine(SPX_CKSUM_SHA256, acc, d, 1) == -1 &&
			     spx_errstatus() == SPX_USAGE,
		     "combine rejects a hash");
	}
	spx_buf_release(&b);
	free(p);
}

static void misuse(void)
{
	struct spx_cksum c;
	unsigned char d[SPX_CKSUM_MAX];

	T_OK(spx_cksum_init(&c, (enum spx_cksum_algo)99) == -1 &&
		     spx_errstatus() == SPX_USAGE,
	     "init rejects an invalid algorithm");
	spx_cksum_update(&c, "x", 1);
	T_INT(spx_cksum_final(&c, d, NULL), -1,
	      "final after a failed init fails");
	spx_cksum_release(&c);

	for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
		T_INT(spx_cksum_init(&c, (enum spx_cksum_algo)a), 0, "init %s",
		      names[a]);
		spx_cksum_update(&c, NULL, 0);
		T_INT(spx_cksum_final(&c, d, NULL), 0, "final %s", names[a]);
		T_OK(spx_cksum_final(&c, d, NULL) == -1 &&
			     spx_errstatus() == SPX_USAGE,
		     "a second final of %s fails", names[a]);
		spx_cksum_release(&c);
		spx_cksum_release(&c);
		T_INT(spx_cksum_final(&c, d, NULL), -1,
		      "final after release of %s fails", names[a]);
	}
	memset(&c, 0, sizeof(c));
	spx_cksum_release(&c);
	T_OK(1, "release of a zeroed context");
}

static void bench(void)
{
	size_t len = 64 << 20;
	unsigned char *p = spx_malloc(len), d[SPX_CKSUM_MAX];

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 2654435761u >> 13);
	for (int a = 0; a < SPX_CKSUM_NALGO; a++) {
		struct timespec t0, t1;
		double best = 1e9;

		for (int r = 0; r < 5; r++) {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			spx_cksum_digest((enum spx_cksum_algo)a, p, len, d, NULL);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			double s = (double)(t1.tv_sec - t0.tv_sec) +
				   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
			if (s < best)
				best = s;
		}
		printf("# %-9s %8.0f MB/s on 64 MiB\n", names[a],
		       (double)len / best / 1e6);
	}
	free(p);
}

int main(void)
{
	check_values();
	vectors();
	streaming();
	naming();
	base64();
	verify();
	multipart();
	misuse();
	if (getenv("SPX_CKSUM_BENCH"))
		bench();
	return t_done();
}
