#!/usr/bin/env python3
"""The same probe with boto3: who am I, which regions and zones.

    examples/whoami.py NODE_ROOT
"""
import configparser
import os
import sys

import boto3

root = sys.argv[1]
conf = configparser.ConfigParser()
conf.read(os.path.join(root, "aws/config"))
ca = conf["profile spx"]["ca_bundle"]
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(root, "aws/credentials")
os.environ["AWS_CONFIG_FILE"] = os.path.join(root, "aws/config")
port = None
scheme = "https"
with open(os.path.join(root, "spinifex.toml")) as f:
    for line in f:
        if line.startswith("ec2_port = "):
            port = line.split("=")[1].strip()
        if line.strip() == "http = true":
            scheme = "http"
ep = "%s://127.0.0.1:%s" % (scheme, port)
s = boto3.session.Session(profile_name="spx")
print(s.client("sts", endpoint_url=ep, verify=ca).get_caller_identity()["Arn"])
ec2 = s.client("ec2", endpoint_url=ep, verify=ca)
print(" ".join(r["RegionName"] for r in ec2.describe_regions()["Regions"]))
for z in ec2.describe_availability_zones()["AvailabilityZones"]:
    print(z["ZoneName"], z["ZoneId"], z["State"])
