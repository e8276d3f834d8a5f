#!/usr/bin/env python3
"""Send one SigV4-signed request (signed by botocore) and print the status
line and body, for the gateway's bad-input tests.

  sigv4req.py URL [--method M] [--service ec2] [--region R] [--body B]
              [--key AK --secret SK] [--skew SECONDS] [--tamper]
              [--header 'Name: value' ...] [--no-auth] [--ca FILE]
              [--unsigned-header 'Name: value'] [--presign SECONDS]
              [--send-body B] [--send-query Q]

--send-body sends B instead of the body that was signed (an attacker who
saw one signed request replaying its headers with another body).
--send-query sends the query string Q instead of the URL's: another
spelling of the same parameters (a literal '+' for '%2B') that a server
must canonicalise to the same string.

Prints "STATUS" on the first line, then the response body.
"""
import argparse
import datetime
import ssl
import sys
import urllib.error
import urllib.request
from unittest import mock

from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

p = argparse.ArgumentParser()
p.add_argument("url")
p.add_argument("--method", default="GET")
p.add_argument("--service", default="ec2")
p.add_argument("--region", default="us-east-1")
p.add_argument("--body", default="")
p.add_argument("--key")
p.add_argument("--secret")
p.add_argument("--skew", type=int, default=0)
p.add_argument("--tamper", action="store_true")
p.add_argument("--no-auth", action="store_true")
p.add_argument("--header", action="append", default=[])
p.add_argument("--unsigned-header", action="append", default=[])
p.add_argument("--ca")
p.add_argument("--presign", type=int)
p.add_argument("--send-body")
p.add_argument("--send-query")
a = p.parse_args()

headers = {}
for h in a.header:
    k, v = h.split(":", 1)
    headers[k.strip()] = v.strip()
req = AWSRequest(method=a.method, url=a.url, data=a.body.encode(), headers=headers)
if not a.no_auth:
    creds = Credentials(a.key, a.secret)
    when = datetime.datetime.utcnow() + datetime.timedelta(seconds=a.skew)
    # Newer botocore reads the clock through get_current_datetime, older
    # through datetime.datetime.utcnow: fix both at `when`.
    import botocore.auth as bauth
    patches = [mock.patch("botocore.auth.datetime")]
    if hasattr(bauth, "get_current_datetime"):
        patches.append(mock.patch("botocore.auth.get_current_datetime", return_value=when))
    with patches[0] as dt:
        dt.datetime.utcnow.return_value = when
        dt.datetime.strptime = datetime.datetime.strptime
        extra = patches[1] if len(patches) > 1 else None
        if extra:
            extra.start()
        try:
            if a.presign is not None:
                S3SigV4QueryAuth(creds, a.service, a.region, expires=a.presign).add_auth(req)
            elif a.service == "s3":
                req.headers["X-Amz-Content-SHA256"] = S3SigV4Auth(creds, a.service, a.region).payload(req)
                S3SigV4Auth(creds, a.service, a.region).add_auth(req)
            else:
                SigV4Auth(creds, a.service, a.region).add_auth(req)
        finally:
            if extra:
                extra.stop()
    if a.tamper:
        auth = req.headers.get("Authorization")
        if auth:
            sig = auth[-64:]
            flipped = ("0" if sig[0] != "0" else "1") + sig[1:]
            req.headers.replace_header("Authorization", auth[:-64] + flipped)
for h in a.unsigned_header:
    k, v = h.split(":", 1)
    req.headers[k.strip()] = v.strip()

prepared = req.prepare()
if a.send_query is not None:
    prepared.url = prepared.url.split("?", 1)[0] + "?" + a.send_query
if a.send_body is not None:
    prepared.body = a.send_body.encode()
    prepared.headers["Content-Length"] = str(len(prepared.body))
ctx = ssl.create_default_context(cafile=a.ca) if a.ca else None
r = urllib.request.Request(prepared.url, data=prepared.body or None,
                           method=a.method, headers=dict(prepared.headers.items()))
try:
    with urllib.request.urlopen(r, context=ctx, timeout=30) as resp:
        print(resp.status)
        sys.stdout.write(resp.read().decode())
except urllib.error.HTTPError as e:
    print(e.code)
    sys.stdout.write(e.read().decode())
