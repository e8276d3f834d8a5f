#!/usr/bin/env python3
"""Generate the expected values table of tests/unit/test_checksum.c.

Independent of the C code: CRC-32 from zlib, SHA-1/SHA-256/MD5 from
hashlib, CRC-32C and CRC-64/NVME from the bitwise definitions below (the
Rocksoft Model parameters of the CRC catalogue). The output is C source;
paste it into the test between the "gen.py" markers:

    python3 tests/unit/data/checksum/gen.py
"""
import base64
import hashlib
import zlib


def crc_refl(data, width, poly_normal, init, xorout):
    """A reflected (refin = refout = true) CRC, one bit at a time."""
    poly = int(f"{poly_normal:0{width}b}"[::-1], 2)
    mask = (1 << width) - 1
    crc = init
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return (crc ^ xorout) & mask


def crc32c(data):
    return crc_refl(data, 32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF)


def crc64nvme(data):
    return crc_refl(data, 64, 0xAD93D23594C93659, (1 << 64) - 1, (1 << 64) - 1)


assert crc32c(b"123456789") == 0xE3069283
assert crc64nvme(b"123456789") == 0xAE8B14860A799888
assert zlib.crc32(b"123456789") == 0xCBF43926


def pattern(n):
    """The test's deterministic filler: byte i is (i * 31 + 7) & 0xff."""
    return bytes((i * 31 + 7) & 0xFF for i in range(n))


def digests(data):
    return [
        zlib.crc32(data).to_bytes(4, "big"),
        crc32c(data).to_bytes(4, "big"),
        crc64nvme(data).to_bytes(8, "big"),
        hashlib.sha1(data).digest(),
        hashlib.sha256(data).digest(),
        hashlib.md5(data).digest(),
    ]


INPUTS = [
    ("", b""),
    ("123456789", b"123456789"),
    ("Hello world", b"Hello world"),
    ("a", b"a"),
    ("The quick brown fox jumps over the lazy dog",
     b"The quick brown fox jumps over the lazy dog"),
]
PATTERNS = [15, 16, 255, 256, 257, 1000, 4099]


def b64(b):
    return base64.b64encode(b).decode()


def main():
    print("/* gen.py: begin */")
    print("static const struct vec vecs[] = {")
    rows = [(f'"{name}"', len(d), d) for name, d in INPUTS]
    rows += [(f"NULL", n, pattern(n)) for n in PATTERNS]
    for text, n, data in rows:
        print(f"\t{{ {text}, {n},")
        print("\t  { " + ",\n\t    ".join(f'"{b64(x)}"' for x in digests(data)) + " } },")
    print("};")

    # Multipart: parts of the 4099-byte pattern at 1000-byte boundaries.
    data = pattern(4099)
    parts = [data[i:i + 1000] for i in range(0, len(data), 1000)]
    md5s = [hashlib.md5(p).digest() for p in parts]
    etag = hashlib.md5(b"".join(md5s)).hexdigest() + f"-{len(parts)}"
    print(f'static const char want_etag[] = "{etag}";')
    print("static const char *const want_composite[] = {")
    for algo in range(5):
        ds = [digests(p)[algo] for p in parts]
        whole = digests(b"".join(ds))[algo]
        print(f'\t"{b64(whole)}-{len(parts)}",')
    print("};")
    print("/* gen.py: end */")


main()
