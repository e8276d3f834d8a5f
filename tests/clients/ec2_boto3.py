#!/usr/bin/python3
"""boto3 (Debian's python3-boto3, run by /usr/bin/python3) against an spx
node: the EC2 actions of the model-driven Query layer and every error.

    ec2_boto3.py ENDPOINT CA_FILE AREA

AREA is one of: keypairs import tags paging templates errors itypes.
Credentials come from the "spx" profile of the environment's config
files. Prints "ok AREA" when every check passed; any failed check raises
(exit status 1) with what was seen.
"""
import base64
import datetime
import hashlib
import os
import subprocess
import sys
import tempfile
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, ca, area = sys.argv[1], sys.argv[2], sys.argv[3]
session = boto3.session.Session(profile_name="spx")
ec2 = session.client("ec2", endpoint_url=endpoint, verify=ca,
                     config=Config(retries={"max_attempts": 1}))
# A client that sends what it is given: botocore's own checks off.
raw = session.client("ec2", endpoint_url=endpoint, verify=ca,
                     config=Config(parameter_validation=False,
                                   retries={"max_attempts": 1}))
tmp = tempfile.mkdtemp(prefix="spx-boto3-")


def uniq(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


def fails(fn, code, status=400, msg=None, **kw):
    try:
        r = fn(**kw)
    except ClientError as e:
        err = e.response["Error"]
        got = (err["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"])
        assert got == (code, status), (got, err, kw)
        if msg is not None:
            assert err["Message"] == msg, (err["Message"], msg)
        return err["Message"]
    raise AssertionError("no error from %s %r: %r" % (fn.__name__, kw, r))


def run(*argv, data=None):
    return subprocess.run(argv, input=data, check=True,
                          capture_output=True).stdout


def write(name, data, mode=0o600):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    os.chmod(path, mode)
    return path


def colon_hex(digest):
    return ":".join("%02x" % b for b in digest)


def keypairs():
    env = uniq("env")
    # RSA, PEM: PKCS#1; the fingerprint is the SHA-1 of its PKCS#8 DER.
    k1 = ec2.create_key_pair(KeyName=uniq("rsa"), TagSpecifications=[
        {"ResourceType": "key-pair", "Tags": [{"Key": "env", "Value": env}]}])
    pem = k1["KeyMaterial"]
    assert pem.startswith("-----BEGIN RSA PRIVATE KEY-----\n"), pem[:40]
    der = run("openssl", "pkcs8", "-topk8", "-nocrypt", "-outform", "DER",
              data=pem.encode())
    assert k1["KeyFingerprint"] == colon_hex(hashlib.sha1(der).digest()), k1
    assert k1["KeyPairId"].startswith("key-") and len(k1["KeyPairId"]) == 21
    assert k1["Tags"] == [{"Key": "env", "Value": env}], k1
    # ED25519, PEM: an OpenSSH private key ssh-keygen reads.
    k2 = ec2.create_key_pair(KeyName=uniq("ed"), KeyType="ed25519")
    path = write("ed", k2["KeyMaterial"])
    pub = run("ssh-keygen", "-y", "-f", path).decode().split()
    blob = base64.b64decode(pub[1])
    want = base64.b64encode(hashlib.sha256(blob).digest()).decode()
    assert k2["KeyFingerprint"] == want, (k2["KeyFingerprint"], want)
    assert "Tags" not in k2, k2
    # PPK: PuTTY's own tool reads both kinds.
    for kt in ("rsa", "ed25519"):
        k = ec2.create_key_pair(KeyName=uniq("ppk"), KeyType=kt,
                                KeyFormat="ppk")
        m = k["KeyMaterial"]
        assert m.startswith("PuTTY-User-Key-File-2: ssh-"), m[:40]
        p = write("k.ppk", m)
        out = run("puttygen", p, "-O", "public-openssh").decode().split()
        d = ec2.describe_key_pairs(KeyPairIds=[k["KeyPairId"]],
                                   IncludePublicKey=True)["KeyPairs"][0]
        assert d["PublicKey"].split()[:2] == out[:2], (d, out)
        assert d["KeyType"] == kt, d
        ec2.delete_key_pair(KeyPairId=k["KeyPairId"])

    # Describe: by name, by id, filters, IncludePublicKey.
    d = ec2.describe_key_pairs(KeyNames=[k1["KeyName"]])["KeyPairs"]
    assert [x["KeyPairId"] for x in d] == [k1["KeyPairId"]], d
    assert "PublicKey" not in d[0], d
    assert isinstance(d[0]["CreateTime"], datetime.datetime), d
    assert d[0]["KeyType"] == "rsa" and d[0]["KeyFingerprint"] == \
        k1["KeyFingerprint"], d
    d = ec2.describe_key_pairs(KeyPairIds=[k2["KeyPairId"]],
                               IncludePublicKey=True)["KeyPairs"]
    assert d[0]["PublicKey"].split()[:2] == pub[:2], (d, pub)
    both = [k1["KeyName"], k2["KeyName"]]
    for f, v, want in (
            ("key-name", k1["KeyName"][:4] + "*", None),
            ("key-type", "ed25519", k2["KeyName"]),
            ("fingerprint", k1["KeyFingerprint"], k1["KeyName"]),
            ("key-pair-id", k2["KeyPairId"], k2["KeyName"]),
            ("tag:env", env, k1["KeyName"]),
            ("tag-key", "env", k1["KeyName"]),
            ("tag-value", env[:5] + "?" + env[6:], k1["KeyName"])):
        got = [x["KeyName"] for x in ec2.describe_key_pairs(
            KeyNames=both, Filters=[{"Name": f, "Values": [v]}])["KeyPairs"]]
        if want is None:
            assert k1["KeyName"] in got, (f, got)
        else:
            assert got == [want], (f, v, got)
    # Delete by name and by id; a name that is not there is no error.
    ec2.delete_key_pair(KeyName=k1["KeyName"])
    ec2.delete_key_pair(KeyPairId=k2["KeyPairId"])
    ec2.delete_key_pair(KeyName=k1["KeyName"])
    fails(ec2.describe_key_pairs, "InvalidKeyPair.NotFound",
          msg="The key pair '%s' does not exist" % k1["KeyName"],
          KeyNames=[k1["KeyName"]])
    fails(ec2.delete_key_pair, "InvalidKeyPair.NotFound",
          KeyPairId=k2["KeyPairId"])


def import_():
    for kt in ("rsa", "ed25519"):
        path = os.path.join(tmp, "id_" + kt)
        run("ssh-keygen", "-q", "-t", kt, "-N", "", "-C", "me@host", "-f",
            path)
        with open(path + ".pub", "rb") as f:
            material = f.read()
        if kt == "rsa":
            spki = run("ssh-keygen", "-e", "-m", "PKCS8", "-f", path + ".pub")
            der = run("openssl", "pkey", "-pubin", "-outform", "DER",
                      data=spki)
            want = colon_hex(hashlib.md5(der).digest())
        else:
            blob = base64.b64decode(material.split()[1])
            want = base64.b64encode(hashlib.sha256(blob).digest()).decode()
        name = uniq("imp")
        r = ec2.import_key_pair(KeyName=name, PublicKeyMaterial=material,
                                TagSpecifications=[{
                                    "ResourceType": "key-pair",
                                    "Tags": [{"Key": "k", "Value": kt}]}])
        assert r["KeyFingerprint"] == want, (kt, r, want)
        assert r["KeyName"] == name and r["Tags"] == [
            {"Key": "k", "Value": kt}], r
        d = ec2.describe_key_pairs(KeyNames=[name], IncludePublicKey=True)
        got = d["KeyPairs"][0]
        assert got["KeyType"] == kt, got
        assert got["PublicKey"].split()[:2] == material.decode().split()[:2]
        fails(ec2.import_key_pair, "InvalidKeyPair.Duplicate",
              msg="The keypair '%s' already exists." % name, KeyName=name,
              PublicKeyMaterial=material)
        ec2.delete_key_pair(KeyName=name)
    fails(ec2.import_key_pair, "InvalidKey.Format",
          msg="Key is not in valid OpenSSH public key format",
          KeyName=uniq("bad"), PublicKeyMaterial=b"ssh-rsa not-a-key")
    fails(ec2.import_key_pair, "InvalidKey.Format", KeyName=uniq("bad"),
          PublicKeyMaterial=os.urandom(300))


def tags():
    kp = ec2.create_key_pair(KeyName=uniq("tg"), KeyType="ed25519")
    lt = ec2.create_launch_template(
        LaunchTemplateName=uniq("tg"),
        LaunchTemplateData={"ImageId": "ami-12345678"})["LaunchTemplate"]
    ids = [kp["KeyPairId"], lt["LaunchTemplateId"]]
    ec2.create_tags(Resources=ids, Tags=[{"Key": "team", "Value": "red"},
                                         {"Key": "empty"}])
    d = ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": ids}])
    got = [(t["ResourceId"], t["ResourceType"], t["Key"], t["Value"])
           for t in d["Tags"]]
    want = sorted([(kp["KeyPairId"], "key-pair", "empty", ""),
                   (kp["KeyPairId"], "key-pair", "team", "red"),
                   (lt["LaunchTemplateId"], "launch-template", "empty", ""),
                   (lt["LaunchTemplateId"], "launch-template", "team", "red")])
    assert got == want, got
    d = ec2.describe_tags(Filters=[
        {"Name": "resource-id", "Values": ids},
        {"Name": "resource-type", "Values": ["launch-template"]},
        {"Name": "key", "Values": ["t*"]}])["Tags"]
    assert [(t["ResourceId"], t["Value"]) for t in d] == [
        (lt["LaunchTemplateId"], "red")], d
    # Overwrite a value; delete by key, and by key and value.
    ec2.create_tags(Resources=[kp["KeyPairId"]],
                    Tags=[{"Key": "team", "Value": "blue"}])
    ec2.delete_tags(Resources=ids, Tags=[{"Key": "team", "Value": "red"}])
    ec2.delete_tags(Resources=[kp["KeyPairId"]], Tags=[{"Key": "empty"}])
    d = ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": ids}])
    got = [(t["ResourceId"], t["Key"], t["Value"]) for t in d["Tags"]]
    assert got == [(kp["KeyPairId"], "team", "blue"),
                   (lt["LaunchTemplateId"], "empty", "")], got
    # DeleteTags without tags removes them all.
    ec2.delete_tags(Resources=ids)
    d = ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": ids}])
    assert d["Tags"] == [], d
    # The rules.
    fails(ec2.create_tags, "TagLimitExceeded", Resources=[kp["KeyPairId"]],
          Tags=[{"Key": "k%d" % i, "Value": ""} for i in range(51)])
    fails(ec2.create_tags, "InvalidParameterValue",
          msg="Tag keys starting with 'aws:' are reserved for internal use",
          Resources=[kp["KeyPairId"]], Tags=[{"Key": "aws:x", "Value": ""}])
    fails(ec2.create_tags, "InvalidParameterValue",
          Resources=[kp["KeyPairId"]], Tags=[{"Key": "k" * 128}])
    fails(ec2.create_tags, "InvalidID", msg="The ID 'i-nope' is not valid",
          Resources=["i-nope"], Tags=[{"Key": "a", "Value": "b"}])
    fails(ec2.create_tags, "InvalidKeyPair.NotFound",
          Resources=["key-0123456789abcdef0"], Tags=[{"Key": "a"}])
    fails(ec2.create_key_pair, "InvalidParameterValue",
          msg="'instance' is not a valid taggable resource type for this "
              "operation.",
          KeyName=uniq("x"), TagSpecifications=[
              {"ResourceType": "instance", "Tags": [{"Key": "a"}]}])
    # 50 tags fit; none of a failed request is applied.
    ec2.create_tags(Resources=ids,
                    Tags=[{"Key": "k%d" % i, "Value": "v"} for i in range(50)])
    fails(ec2.create_tags, "InvalidKeyPair.NotFound",
          Resources=[lt["LaunchTemplateId"], "key-0123456789abcdef0"],
          Tags=[{"Key": "k0", "Value": "changed"}])
    d = ec2.describe_tags(Filters=[{"Name": "key", "Values": ["k0"]},
                                   {"Name": "resource-id", "Values": ids}])
    assert [t["Value"] for t in d["Tags"]] == ["v", "v"], d
    ec2.delete_key_pair(KeyPairId=kp["KeyPairId"])
    ec2.delete_launch_template(LaunchTemplateId=lt["LaunchTemplateId"])


def paging():
    kp = ec2.create_key_pair(KeyName=uniq("pg"), KeyType="ed25519")
    rid = kp["KeyPairId"]
    ec2.create_tags(Resources=[rid], Tags=[{"Key": "k%02d" % i, "Value": "v"}
                                           for i in range(12)])
    f = [{"Name": "resource-id", "Values": [rid]}]
    keys, token, pages = [], None, 0
    while True:
        kw = {"Filters": f, "MaxResults": 5}
        if token:
            kw["NextToken"] = token
        r = ec2.describe_tags(**kw)
        keys += [t["Key"] for t in r["Tags"]]
        pages += 1
        token = r.get("NextToken")
        if pages == 1:
            first = token
        if not token:
            break
    assert pages == 3 and keys == ["k%02d" % i for i in range(12)], (pages,
                                                                     keys)
    # The paginator gets them all too.
    got = [t["Key"] for page in ec2.get_paginator("describe_tags").paginate(
        Filters=f, PaginationConfig={"PageSize": 5}) for t in page["Tags"]]
    assert got == keys, got
    # A token reused with other filters is refused.
    fails(ec2.describe_tags, "InvalidParameterValue",
          msg="Value ( %s ) for parameter NextToken is invalid. The token "
              "is invalid." % first,
          Filters=f + [{"Name": "key", "Values": ["k0*"]}], NextToken=first)
    fails(ec2.describe_tags, "InvalidParameterValue", Filters=f,
          NextToken="bm90IGEgdG9rZW4=")
    fails(ec2.describe_tags, "InvalidParameterValue",
          msg="Value ( 4 ) for parameter maxResults is invalid. Expecting a "
              "value greater than 5.",
          Filters=f, MaxResults=4)
    # Any valid key pages, whatever lands on a page's end: 127 characters
    # of 3 and of 4 bytes (the token carries the id and the key whole).
    wide = sorted(c * 124 + "%03d" % i for c in ("\u20ac", "\U0001F600")
                  for i in range(5))
    ec2.create_tags(Resources=[rid], Tags=[{"Key": k, "Value": "w"}
                                           for k in wide])
    got = [t["Key"] for page in ec2.get_paginator("describe_tags").paginate(
        Filters=f, PaginationConfig={"PageSize": 5}) for t in page["Tags"]]
    assert got == keys + wide, got
    ec2.delete_key_pair(KeyPairId=rid)


def templates():
    name = uniq("lt")
    data = {"ImageId": "ami-12345678", "InstanceType": "m8i.large",
            "BlockDeviceMappings": [{"DeviceName": "/dev/xvda",
                                     "Ebs": {"VolumeSize": 20,
                                             "VolumeType": "gp3"}}],
            "NetworkInterfaces": [{"DeviceIndex": 0,
                                   "Groups": ["sg-1", "sg-2"]}]}
    tok = uuid.uuid4().hex
    a = ec2.create_launch_template(LaunchTemplateName=name,
                                   LaunchTemplateData=data, ClientToken=tok)
    b = ec2.create_launch_template(LaunchTemplateName=name,
                                   LaunchTemplateData=data, ClientToken=tok)
    assert a["LaunchTemplate"] == b["LaunchTemplate"], (a, b)
    lt = a["LaunchTemplate"]
    assert lt["LaunchTemplateId"].startswith("lt-") and \
        lt["DefaultVersionNumber"] == 1 and lt["LatestVersionNumber"] == 1, lt
    assert lt["CreatedBy"].startswith("arn:aws:iam::"), lt
    data2 = dict(data, ImageId="ami-87654321")
    fails(ec2.create_launch_template, "IdempotentParameterMismatch",
          LaunchTemplateName=name, LaunchTemplateData=data2, ClientToken=tok)
    fails(ec2.create_launch_template,
          "InvalidLaunchTemplateName.AlreadyExistsException",
          msg="Launch template name already in use.",
          LaunchTemplateName=name, LaunchTemplateData=data2)
    fails(ec2.create_launch_template,
          "InvalidLaunchTemplateName.MalformedException",
          LaunchTemplateName="bad name!", LaunchTemplateData=data)
    fails(ec2.create_launch_template, "InvalidParameterCombination",
          msg="The parameter instanceRequirements cannot be used with the "
              "parameter instanceType",
          LaunchTemplateName=uniq("lt"), LaunchTemplateData=dict(
              data, InstanceRequirements={"VCpuCount": {"Min": 2},
                                          "MemoryMiB": {"Min": 1024}}))
    other = ec2.create_launch_template(
        LaunchTemplateName=uniq("lt"), LaunchTemplateData={"ImageId": "ami-2"},
        TagSpecifications=[{"ResourceType": "launch-template",
                            "Tags": [{"Key": "role", "Value": "web"}]}])
    oid = other["LaunchTemplate"]["LaunchTemplateId"]
    ids = [lt["LaunchTemplateId"], oid]
    d = ec2.describe_launch_templates(LaunchTemplateIds=ids)
    assert sorted(x["LaunchTemplateId"] for x in d["LaunchTemplates"]) == \
        sorted(ids), d
    d = ec2.describe_launch_templates(LaunchTemplateNames=[name])
    assert [x["LaunchTemplateId"] for x in d["LaunchTemplates"]] == \
        [lt["LaunchTemplateId"]], d
    d = ec2.describe_launch_templates(LaunchTemplateIds=ids, Filters=[
        {"Name": "tag:role", "Values": ["w*"]}])
    assert [x["LaunchTemplateId"] for x in d["LaunchTemplates"]] == [oid], d
    d = ec2.describe_launch_templates(LaunchTemplateIds=ids, Filters=[
        {"Name": "launch-template-name", "Values": [name[:3] + "*"]}])
    assert len(d["LaunchTemplates"]) == 2, d
    fails(ec2.describe_launch_templates, "InvalidLaunchTemplateId.NotFound",
          LaunchTemplateIds=["lt-0123456789abcdef0"])
    fails(ec2.describe_launch_templates,
          "InvalidLaunchTemplateName.NotFoundException",
          LaunchTemplateNames=["no-such-template"])
    # Paging across templates.
    got = [x["LaunchTemplateId"] for p in ec2.get_paginator(
        "describe_launch_templates").paginate(
        PaginationConfig={"PageSize": 1}) for x in p["LaunchTemplates"]]
    assert set(ids) <= set(got) and len(got) == len(set(got)), got
    r = ec2.delete_launch_template(LaunchTemplateName=name)
    assert r["LaunchTemplate"]["LaunchTemplateId"] == lt["LaunchTemplateId"]
    ec2.delete_launch_template(LaunchTemplateId=oid)
    fails(ec2.delete_launch_template, "InvalidLaunchTemplateId.NotFound",
          LaunchTemplateId=oid)


def errors():
    # MissingParameter: botocore would refuse this itself.
    fails(raw.create_key_pair, "MissingParameter",
          msg="The request must contain the parameter KeyName")
    fails(raw.delete_tags, "MissingParameter",
          msg="The request must contain the parameter ResourceId")

    # UnknownParameter: a parameter added to the body before signing.
    def add(request, **kw):
        request.data["Colour"] = "red"
    raw.meta.events.register("before-sign.ec2.DescribeKeyPairs", add)
    fails(raw.describe_key_pairs, "UnknownParameter",
          msg="The parameter Colour is not recognized")
    raw.meta.events.unregister("before-sign.ec2.DescribeKeyPairs", add)
    # InvalidParameterValue: a value the model does not allow.
    fails(ec2.create_key_pair, "InvalidParameterValue",
          msg="Value (dsa) for parameter keyType is invalid. Valid values "
              "are: rsa, ed25519",
          KeyName=uniq("x"), KeyType="dsa")
    fails(raw.describe_instance_types, "InvalidParameterValue",
          msg="Value ( 4 ) for parameter maxResults is invalid. Expecting a "
              "value greater than 5.",
          MaxResults=4)
    fails(ec2.describe_key_pairs, "InvalidParameterValue",
          msg="The filter 'colour' is invalid",
          Filters=[{"Name": "colour", "Values": ["red"]}])
    # DryRunOperation: a request that would succeed.
    fails(ec2.create_key_pair, "DryRunOperation", 412,
          msg="Request would have succeeded, but DryRun flag is set.",
          KeyName=uniq("dry"), DryRun=True)
    fails(ec2.describe_tags, "DryRunOperation", 412, DryRun=True)
    # InvalidParameterCombination, IdempotentParameterMismatch, NotFound
    # and InvalidKey.Format: see templates, keypairs and import.
    k = uniq("dup")
    ec2.create_key_pair(KeyName=k, KeyType="ed25519")
    fails(ec2.create_key_pair, "InvalidKeyPair.Duplicate",
          msg="The keypair '%s' already exists." % k, KeyName=k)
    ec2.delete_key_pair(KeyName=k)


def itypes():
    r = ec2.describe_instance_types(InstanceTypes=["t3.micro", "m8i.large"])
    got = {x["InstanceType"]: x for x in r["InstanceTypes"]}
    assert set(got) == {"t3.micro", "m8i.large"}, got
    t = got["t3.micro"]
    assert t["VCpuInfo"]["DefaultVCpus"] == 2, t
    assert t["MemoryInfo"]["SizeInMiB"] == 1024, t
    assert t["CurrentGeneration"] is True and t["BurstablePerformanceSupported"]
    assert "x86_64" in t["ProcessorInfo"]["SupportedArchitectures"], t
    fails(ec2.describe_instance_types, "InvalidInstanceType",
          InstanceTypes=["t3.nosuch"])
    # Filters as AWS documents them.
    for f, v in (("instance-type", "c8i.*"),
                 ("vcpu-info.default-vcpus", "2"),
                 ("memory-info.size-in-mib", "1024"),
                 ("current-generation", "true"),
                 ("processor-info.supported-architecture", "x86_64")):
        r = ec2.describe_instance_types(Filters=[{"Name": f, "Values": [v]}])
        assert r["InstanceTypes"], (f, v)
    r = ec2.describe_instance_types(Filters=[
        {"Name": "instance-type", "Values": ["c8i.*"]}])
    assert all(x["InstanceType"].startswith("c8i.")
               for x in r["InstanceTypes"]), r
    # Paging: the paginator sees every type once.
    names = [x["InstanceType"] for p in ec2.get_paginator(
        "describe_instance_types").paginate(PaginationConfig={"PageSize": 5})
        for x in p["InstanceTypes"]]
    assert len(names) == len(set(names)) and len(names) > 10, names
    for fam in ("t3.", "m6i.", "c6i.", "r6i.", "m8i.", "c8i.", "g6."):
        assert any(n.startswith(fam) for n in names), (fam, names)
    # Offerings, by region, zone and zone id.
    for lt, loc in (("region", "us-east-1"), ("availability-zone",
                                              "us-east-1a"),
                    ("availability-zone-id", "use1-az1")):
        r = ec2.describe_instance_type_offerings(
            LocationType=lt, Filters=[
                {"Name": "instance-type", "Values": ["t3.micro"]}])
        o = r["InstanceTypeOfferings"]
        assert o == [{"InstanceType": "t3.micro", "LocationType": lt,
                      "Location": loc}], (lt, o)
    offs = [x["InstanceType"] for p in ec2.get_paginator(
        "describe_instance_type_offerings").paginate(
        PaginationConfig={"PageSize": 7}) for x in p["InstanceTypeOfferings"]]
    assert sorted(offs) == sorted(names), (offs, names)
    r = ec2.describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[{"Name": "location", "Values": ["us-east-1b"]}])
    assert r["InstanceTypeOfferings"] == [], r


try:
    {"keypairs": keypairs, "import": import_, "tags": tags,
     "paging": paging, "templates": templates, "errors": errors,
     "itypes": itypes}[area]()
finally:
    subprocess.run(["rm", "-rf", tmp])
print("ok", area, boto3.__version__)
