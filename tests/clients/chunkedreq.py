#!/usr/bin/env python3
"""Send one S3 request whose body is aws-chunked with chunk signatures
(x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD), signed the
way the AWS SDKs sign it: a seed signature over the headers, then each
chunk's signature chained from it. Prints the status, then the body.

  chunkedreq.py URL --key AK --secret SK --body B [--method PUT]
                [--ca FILE] [--chunk N] [--tamper-chunk]
                [--unsigned-trailer 'x-amz-checksum-crc32:VALUE']

--tamper-chunk flips a bit of the last data chunk's signature.
--unsigned-trailer sends STREAMING-UNSIGNED-PAYLOAD-TRAILER instead: the
chunks without signatures, then that trailer (as the SDKs send checksums).
"""
import argparse, datetime, hashlib, hmac, ssl, sys, urllib.error, urllib.request
from urllib.parse import urlsplit, quote

p = argparse.ArgumentParser()
p.add_argument("url")
p.add_argument("--key", required=True)
p.add_argument("--secret", required=True)
p.add_argument("--body", default="")
p.add_argument("--method", default="PUT")
p.add_argument("--region", default="us-east-1")
p.add_argument("--ca")
p.add_argument("--chunk", type=int, default=64)
p.add_argument("--tamper-chunk", action="store_true")
p.add_argument("--unsigned-trailer")
a = p.parse_args()

u = urlsplit(a.url)
now = datetime.datetime.utcnow()
amz = now.strftime("%Y%m%dT%H%M%SZ")
day = now.strftime("%Y%m%d")
scope = f"{day}/{a.region}/s3/aws4_request"
data = a.body.encode()
pieces = [data[i:i + a.chunk] for i in range(0, len(data), a.chunk)] + [b""]

def hm(k, m):
    return hmac.new(k, m.encode(), hashlib.sha256).digest()

key = hm(hm(hm(hm(("AWS4" + a.secret).encode(), day), a.region), "s3"), "aws4_request")
hdrs = {
    "host": u.netloc,
    "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    "x-amz-date": amz,
    "x-amz-decoded-content-length": str(len(data)),
    "content-encoding": "aws-chunked",
}
if a.unsigned_trailer:
    hdrs["x-amz-content-sha256"] = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    hdrs["x-amz-trailer"] = a.unsigned_trailer.split(":", 1)[0]
# Canonical query: every name and value encoded (RFC 3986), sorted.
qs = []
for part in filter(None, u.query.split("&")):
    k, _, v = part.partition("=")
    qs.append((quote(k, safe="-_.~"), quote(v, safe="-_.~")))
cq = "&".join(f"{k}={v}" for k, v in sorted(qs))
signed = ";".join(sorted(hdrs))
creq = "\n".join([a.method, quote(u.path or "/", safe="/-_.~"), cq] +
                 [f"{k}:{hdrs[k]}" for k in sorted(hdrs)] + ["", signed, hdrs["x-amz-content-sha256"]])
sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(creq.encode()).hexdigest()])
prev = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
auth = f"AWS4-HMAC-SHA256 Credential={a.key}/{scope}, SignedHeaders={signed}, Signature={prev}"
empty = hashlib.sha256(b"").hexdigest()
body = b""
for i, c in enumerate(pieces if not a.unsigned_trailer else []):
    s = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz, scope, prev, empty, hashlib.sha256(c).hexdigest()])
    sig = hmac.new(key, s.encode(), hashlib.sha256).hexdigest()
    prev = sig
    if a.tamper_chunk and i == len(pieces) - 2:
        sig = ("0" if sig[0] != "0" else "1") + sig[1:]
    body += f"{len(c):x};chunk-signature={sig}\r\n".encode() + c + b"\r\n"
if a.unsigned_trailer:
    for c in pieces:
        body += f"{len(c):x}\r\n".encode() + c + (b"\r\n" if c else b"")
    body += a.unsigned_trailer.encode() + b"\r\n\r\n"
h = {k: v for k, v in hdrs.items() if k != "host"}
h["Authorization"] = auth
h["Content-Length"] = str(len(body))
ctx = ssl.create_default_context(cafile=a.ca) if a.ca else None
r = urllib.request.Request(a.url, data=body, method=a.method, headers=h)
try:
    with urllib.request.urlopen(r, context=ctx, timeout=30) as resp:
        print(resp.status)
        sys.stdout.write(resp.read().decode())
except urllib.error.HTTPError as e:
    print(e.code)
    sys.stdout.write(e.read().decode())
