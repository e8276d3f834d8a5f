#!/usr/bin/env python3
"""Drive an S3 endpoint with writes until it dies, logging every operation
before it starts ("begin") and once it is acknowledged ("ack"), each line
fsynced; then, after a restart, check that the store holds exactly what was
acknowledged.

  s3-crash.py run    ENDPOINT CA BUCKET LOG SEED
  s3-crash.py verify ENDPOINT CA BUCKET LOG

run exits 2 if the server answers an error (a 500, say) instead of dying:
only a cut connection counts as the crash being tested.

An operation that began but was never acknowledged (the server died under
it) may or may not have happened, so its key may hold the state it wrote;
otherwise every key must hold its last acknowledged state byte for byte,
every key that holds anything must be listed (in pages of 50), and nothing
else may be.
"""
import hashlib
import os
import random
import sys

import boto3
from botocore.config import Config


def client(ep, ca):
    cfg = Config(retries={"max_attempts": 1}, connect_timeout=5, read_timeout=30)
    return boto3.session.Session(profile_name="spx").client("s3", endpoint_url=ep, verify=ca, config=cfg)


def log(f, *fields):
    f.write(" ".join(fields) + "\n")
    f.flush()
    os.fsync(f.fileno())


def data_for(key, seed, size):
    # Deterministic content: the verifier can rebuild it from the log.
    r = random.Random("%s/%s" % (key, seed))
    return r.randbytes(size)


def run(ep, ca, bucket, path, seed):
    s3 = client(ep, ca)
    rnd = random.Random(seed)
    with open(path, "a") as f:
        # The caller times its kill from this line: under a slow build
        # (ASan) the imports alone can outlast its shortest wait.
        log(f, "start", seed)
        n = 0
        while True:
            n += 1
            key = "k%02d" % rnd.randrange(12)
            op = rnd.random()
            if op < 0.15:
                log(f, "begin", "del", key)
                s3.delete_object(Bucket=bucket, Key=key)
                log(f, "ack", "del", key)
            elif op < 0.25:
                # Multipart: two 5 MiB parts and a short one.
                size = 10 * 1024 * 1024 + rnd.randrange(100000)
                tag = "%s-%d" % (seed, n)
                body = data_for(key, tag, size)
                log(f, "begin", "put", key, tag, str(size))
                up = s3.create_multipart_upload(Bucket=bucket, Key=key)
                parts = []
                for i, off in enumerate(range(0, size, 5 * 1024 * 1024)):
                    p = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"],
                                       PartNumber=i + 1, Body=body[off:off + 5 * 1024 * 1024])
                    parts.append({"PartNumber": i + 1, "ETag": p["ETag"]})
                s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up["UploadId"],
                                             MultipartUpload={"Parts": parts})
                log(f, "ack", "put", key, tag, str(size))
            else:
                size = rnd.choice([0, 1, 1000, 200000, 1500000, 3000000 + rnd.randrange(1000)])
                tag = "%s-%d" % (seed, n)
                log(f, "begin", "put", key, tag, str(size))
                s3.put_object(Bucket=bucket, Key=key, Body=data_for(key, tag, size))
                log(f, "ack", "put", key, tag, str(size))


def verify(ep, ca, bucket, path):
    s3 = client(ep, ca)
    state, pending = {}, {}
    for line in open(path):
        w = line.split()
        if len(w) < 3 or (w[1] == "put" and len(w) < 5):
            continue  # "start", or a torn last line: that op never began for sure
        kind, op, key = w[0], w[1], w[2]
        val = None if op == "del" else (w[3], int(w[4]))
        if kind == "begin":
            pending.setdefault(key, []).append(val)
        else:
            state[key] = val
            pending[key] = []
    listed = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": 50}):
        listed.update({o["Key"]: o for o in page.get("Contents", [])})
    bad = []
    for key in sorted(set(state) | set(pending) | set(listed)):
        allowed = [state.get(key)] + pending.get(key, [])
        try:
            got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            got = None
        ok = False
        for a in allowed:
            if a is None and got is None:
                ok = True
            elif a is not None and got is not None and len(got) == a[1] and got == data_for(key, a[0], a[1]):
                ok = True
        if key in listed and got is not None and listed[key]["Size"] != len(got):
            ok = False
        if key in listed and got is None:
            ok = False
        # The listing index must never miss a key that is there.
        if got is not None and key not in listed:
            ok = False
        if not ok:
            bad.append(key)
    acked = sum(1 for l in open(path) if l.startswith("ack"))
    print("verified %d keys, %d acknowledged operations, %d bad: %s" % (
        len(set(state) | set(listed)), acked, len(bad), " ".join(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        from botocore.exceptions import ClientError
        try:
            run(*sys.argv[2:6], sys.argv[6])
        except ClientError as e:
            # An answer is not a death: a server error (or any refusal)
            # while the gateway was up is a failure of the test.
            print("server answered an error:", e.response.get("Error", {}),
                  e.response.get("ResponseMetadata", {}).get("HTTPStatusCode"))
            sys.exit(2)
        except Exception as e:  # the server died: that is the point
            print("stopped:", type(e).__name__)
    else:
        verify(*sys.argv[2:6])
