// The npm AWS SDK v3 against an spx node: the EC2 actions of the
// model-driven Query layer and every error. The node CA comes in through
// NODE_EXTRA_CA_CERTS, credentials and region from the environment.
//   node ec2-sdk-v3.mjs EC2_ENDPOINT AREA
// AREA: keypairs import tags paging templates errors itypes. Prints
// "ok AREA" when every check passed; a failed check throws (status 1).
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  EC2Client, CreateKeyPairCommand, ImportKeyPairCommand,
  DescribeKeyPairsCommand, DeleteKeyPairCommand, CreateTagsCommand,
  DeleteTagsCommand, DescribeTagsCommand, CreateLaunchTemplateCommand,
  DescribeLaunchTemplatesCommand, DeleteLaunchTemplateCommand,
  DescribeInstanceTypesCommand, DescribeInstanceTypeOfferingsCommand,
  DescribeRegionsCommand, paginateDescribeTags,
  paginateDescribeInstanceTypes,
} from "@aws-sdk/client-ec2";

const [endpoint, area] = process.argv.slice(2);
const ec2 = new EC2Client({ endpoint, maxAttempts: 1 });
const tmp = mkdtempSync(join(tmpdir(), "spx-sdk-v3-"));

function check(cond, ...what) {
  if (!cond) throw new Error("check failed: " + JSON.stringify(what));
}
const uniq = (p) => `${p}-${randomUUID().slice(0, 10)}`;
async function fails(cmd, code, status = 400, msg) {
  try {
    const r = await ec2.send(cmd);
    throw new Error(`no error: ${JSON.stringify(r)}`);
  } catch (e) {
    if (e.message.startsWith("no error")) throw e;
    check(e.name === code && e.$metadata.httpStatusCode === status,
      "got", e.name, e.$metadata.httpStatusCode, e.message, "want", code);
    if (msg !== undefined) check(e.message === msg, e.message, msg);
    return e.message;
  }
}
const colonHex = (buf) => [...buf].map((b) => b.toString(16).padStart(2, "0")).join(":");

async function keypairs() {
  const k1 = await ec2.send(new CreateKeyPairCommand({
    KeyName: uniq("rsa"),
    TagSpecifications: [{ ResourceType: "key-pair", Tags: [{ Key: "env", Value: "v3" }] }],
  }));
  check(k1.KeyMaterial.startsWith("-----BEGIN RSA PRIVATE KEY-----\n"), k1.KeyMaterial.slice(0, 40));
  const der = execFileSync("openssl", ["pkcs8", "-topk8", "-nocrypt", "-outform", "DER"], { input: k1.KeyMaterial });
  check(k1.KeyFingerprint === colonHex(createHash("sha1").update(der).digest()), k1.KeyFingerprint);
  const k2 = await ec2.send(new CreateKeyPairCommand({ KeyName: uniq("ed"), KeyType: "ed25519", KeyFormat: "ppk" }));
  check(k2.KeyMaterial.startsWith("PuTTY-User-Key-File-2: ssh-ed25519"), k2.KeyMaterial.slice(0, 40));
  let d = await ec2.send(new DescribeKeyPairsCommand({ KeyNames: [k1.KeyName, k2.KeyName], IncludePublicKey: true }));
  check(d.KeyPairs.length === 2 && d.KeyPairs.every((k) => k.PublicKey.startsWith("ssh-")), d.KeyPairs);
  check(d.KeyPairs[0].CreateTime instanceof Date, d.KeyPairs[0]);
  d = await ec2.send(new DescribeKeyPairsCommand({
    KeyNames: [k1.KeyName, k2.KeyName],
    Filters: [{ Name: "key-type", Values: ["ed25519"] }],
  }));
  check(d.KeyPairs.map((k) => k.KeyPairId).join() === k2.KeyPairId, d.KeyPairs);
  check(d.KeyPairs[0].PublicKey === undefined, d.KeyPairs[0]);
  d = await ec2.send(new DescribeKeyPairsCommand({ Filters: [{ Name: "tag:env", Values: ["v3"] }, { Name: "key-name", Values: [k1.KeyName] }] }));
  check(d.KeyPairs.map((k) => k.KeyName).join() === k1.KeyName, d.KeyPairs);
  await ec2.send(new DeleteKeyPairCommand({ KeyName: k1.KeyName }));
  await ec2.send(new DeleteKeyPairCommand({ KeyPairId: k2.KeyPairId }));
  await fails(new DescribeKeyPairsCommand({ KeyPairIds: [k2.KeyPairId] }), "InvalidKeyPair.NotFound");
  await fails(new DescribeKeyPairsCommand({ KeyNames: [k1.KeyName] }), "InvalidKeyPair.NotFound", 400,
    `The key pair '${k1.KeyName}' does not exist`);
}

async function importKeys() {
  for (const kt of ["rsa", "ed25519"]) {
    const path = join(tmp, "id_" + kt);
    execFileSync("ssh-keygen", ["-q", "-t", kt, "-N", "", "-f", path]);
    const material = readFileSync(path + ".pub");
    let want;
    if (kt === "rsa") {
      const spki = execFileSync("ssh-keygen", ["-e", "-m", "PKCS8", "-f", path + ".pub"]);
      const der = execFileSync("openssl", ["pkey", "-pubin", "-outform", "DER"], { input: spki });
      want = colonHex(createHash("md5").update(der).digest());
    } else {
      const blob = Buffer.from(material.toString().split(" ")[1], "base64");
      want = createHash("sha256").update(blob).digest("base64");
    }
    const name = uniq("imp");
    const r = await ec2.send(new ImportKeyPairCommand({ KeyName: name, PublicKeyMaterial: material }));
    check(r.KeyFingerprint === want, kt, r, want);
    await fails(new ImportKeyPairCommand({ KeyName: name, PublicKeyMaterial: material }),
      "InvalidKeyPair.Duplicate", 400, `The keypair '${name}' already exists.`);
    await ec2.send(new DeleteKeyPairCommand({ KeyName: name }));
  }
  await fails(new ImportKeyPairCommand({ KeyName: uniq("bad"), PublicKeyMaterial: Buffer.from("ssh-ed25519 AAAA") }),
    "InvalidKey.Format", 400, "Key is not in valid OpenSSH public key format");
  await fails(new ImportKeyPairCommand({ KeyName: uniq("bad"), PublicKeyMaterial: randomBytes(200) }), "InvalidKey.Format");
}

async function tags() {
  const kp = await ec2.send(new CreateKeyPairCommand({ KeyName: uniq("tg"), KeyType: "ed25519" }));
  const lt = (await ec2.send(new CreateLaunchTemplateCommand({
    LaunchTemplateName: uniq("tg"), LaunchTemplateData: { ImageId: "ami-1" },
  }))).LaunchTemplate;
  const ids = [kp.KeyPairId, lt.LaunchTemplateId];
  await ec2.send(new CreateTagsCommand({ Resources: ids, Tags: [{ Key: "team", Value: "red" }, { Key: "x", Value: "1" }] }));
  let d = await ec2.send(new DescribeTagsCommand({ Filters: [{ Name: "resource-id", Values: ids }] }));
  check(d.Tags.length === 4, d.Tags);
  check(d.Tags.map((t) => t.ResourceType).sort().join() === "key-pair,key-pair,launch-template,launch-template", d.Tags);
  d = await ec2.send(new DescribeTagsCommand({ Filters: [{ Name: "resource-id", Values: ids }, { Name: "value", Values: ["r?d"] }] }));
  check(d.Tags.length === 2 && d.Tags.every((t) => t.Key === "team"), d.Tags);
  await ec2.send(new DeleteTagsCommand({ Resources: ids, Tags: [{ Key: "team" }] }));
  d = await ec2.send(new DescribeTagsCommand({ Filters: [{ Name: "resource-id", Values: ids }] }));
  check(d.Tags.length === 2 && d.Tags.every((t) => t.Key === "x"), d.Tags);
  await fails(new CreateTagsCommand({ Resources: [kp.KeyPairId], Tags: Array.from({ length: 51 }, (_, i) => ({ Key: `k${i}`, Value: "" })) }),
    "TagLimitExceeded");
  await fails(new CreateTagsCommand({ Resources: [kp.KeyPairId], Tags: [{ Key: "aws:x", Value: "" }] }), "InvalidParameterValue", 400,
    "Tag keys starting with 'aws:' are reserved for internal use");
  await fails(new CreateTagsCommand({ Resources: ["vol-0123"], Tags: [{ Key: "a", Value: "" }] }), "InvalidID", 400,
    "The ID 'vol-0123' is not valid");
  await ec2.send(new DeleteKeyPairCommand({ KeyPairId: kp.KeyPairId }));
  await ec2.send(new DeleteLaunchTemplateCommand({ LaunchTemplateId: lt.LaunchTemplateId }));
}

async function paging() {
  const kp = await ec2.send(new CreateKeyPairCommand({ KeyName: uniq("pg"), KeyType: "ed25519" }));
  await ec2.send(new CreateTagsCommand({ Resources: [kp.KeyPairId], Tags: Array.from({ length: 12 }, (_, i) => ({ Key: `k${String(i).padStart(2, "0")}`, Value: "v" })) }));
  const Filters = [{ Name: "resource-id", Values: [kp.KeyPairId] }];
  const keys = [];
  let pages = 0;
  for await (const p of paginateDescribeTags({ client: ec2, pageSize: 5 }, { Filters })) {
    pages++;
    keys.push(...p.Tags.map((t) => t.Key));
  }
  check(pages === 3 && keys.join() === Array.from({ length: 12 }, (_, i) => `k${String(i).padStart(2, "0")}`).join(), pages, keys);
  const first = await ec2.send(new DescribeTagsCommand({ Filters, MaxResults: 5 }));
  check(first.Tags.length === 5 && first.NextToken, first);
  const second = await ec2.send(new DescribeTagsCommand({ Filters, MaxResults: 1000, NextToken: first.NextToken }));
  check(second.Tags.length === 7 && !second.NextToken, second);
  await fails(new DescribeTagsCommand({ Filters: [...Filters, { Name: "key", Values: ["k1*"] }], NextToken: first.NextToken }),
    "InvalidParameterValue", 400, `Value ( ${first.NextToken} ) for parameter NextToken is invalid. The token is invalid.`);
  await ec2.send(new DeleteKeyPairCommand({ KeyPairId: kp.KeyPairId }));
}

async function templates() {
  const name = uniq("lt");
  const LaunchTemplateData = { ImageId: "ami-1", InstanceType: "c8i.xlarge", BlockDeviceMappings: [{ DeviceName: "/dev/xvda", Ebs: { VolumeSize: 8 } }] };
  const ClientToken = randomUUID();
  const a = await ec2.send(new CreateLaunchTemplateCommand({ LaunchTemplateName: name, LaunchTemplateData, ClientToken }));
  const b = await ec2.send(new CreateLaunchTemplateCommand({ LaunchTemplateName: name, LaunchTemplateData, ClientToken }));
  check(a.LaunchTemplate.LaunchTemplateId === b.LaunchTemplate.LaunchTemplateId, a, b);
  await fails(new CreateLaunchTemplateCommand({ LaunchTemplateName: name, LaunchTemplateData: { ImageId: "ami-2" }, ClientToken }),
    "IdempotentParameterMismatch");
  // Without a token the SDK makes one: a second create is a new request.
  await fails(new CreateLaunchTemplateCommand({ LaunchTemplateName: name, LaunchTemplateData }),
    "InvalidLaunchTemplateName.AlreadyExistsException", 400, "Launch template name already in use.");
  await fails(new CreateLaunchTemplateCommand({
    LaunchTemplateName: uniq("lt"),
    LaunchTemplateData: { InstanceRequirements: { VCpuCount: { Min: 1 }, MemoryMiB: { Min: 512 }, AllowedInstanceTypes: ["m8i.*"], ExcludedInstanceTypes: ["c8i.*"] } },
  }), "InvalidParameterCombination", 400,
  "The parameter allowedInstanceTypes cannot be used with the parameter excludedInstanceTypes");
  const d = await ec2.send(new DescribeLaunchTemplatesCommand({ LaunchTemplateNames: [name] }));
  check(d.LaunchTemplates.length === 1 && d.LaunchTemplates[0].LaunchTemplateId === a.LaunchTemplate.LaunchTemplateId, d);
  await ec2.send(new DeleteLaunchTemplateCommand({ LaunchTemplateName: name }));
  await fails(new DescribeLaunchTemplatesCommand({ LaunchTemplateIds: [a.LaunchTemplate.LaunchTemplateId] }), "InvalidLaunchTemplateId.NotFound");
}

async function errors() {
  // MissingParameter: SDK v3 sends what it is given.
  await fails(new CreateKeyPairCommand({}), "MissingParameter", 400, "The request must contain the parameter KeyName");
  // UnknownParameter: a parameter added to the body before signing.
  const extra = new EC2Client({ endpoint, maxAttempts: 1 });
  extra.middlewareStack.addRelativeTo((next) => async (args) => {
    args.request.body += "&Colour=red";
    args.request.headers["content-length"] = String(Buffer.byteLength(args.request.body));
    return next(args);
  }, { relation: "before", toMiddleware: "httpSigningMiddleware", name: "addColour" });
  try {
    await extra.send(new DescribeRegionsCommand({}));
    throw new Error("no error");
  } catch (e) {
    check(e.name === "UnknownParameter" && e.message === "The parameter Colour is not recognized", e.name, e.message);
  }
  await fails(new CreateKeyPairCommand({ KeyName: uniq("x"), KeyFormat: "der" }), "InvalidParameterValue", 400,
    "Value (der) for parameter keyFormat is invalid. Valid values are: pem, ppk");
  await fails(new DescribeInstanceTypesCommand({ MaxResults: 101 }), "InvalidParameterValue", 400,
    "Value ( 101 ) for parameter maxResults is invalid. Expecting a value less than or equal to 100.");
  await fails(new CreateKeyPairCommand({ KeyName: uniq("dry"), DryRun: true }), "DryRunOperation", 412,
    "Request would have succeeded, but DryRun flag is set.");
  await fails(new DescribeRegionsCommand({ RegionNames: ["mars-north-1"] }), "InvalidParameterValue", 400, "Invalid region: mars-north-1");
}

async function itypes() {
  const r = await ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: ["c8i.large", "g6.xlarge"] }));
  const byName = Object.fromEntries(r.InstanceTypes.map((t) => [t.InstanceType, t]));
  check(Object.keys(byName).sort().join() === "c8i.large,g6.xlarge", Object.keys(byName));
  check(byName["c8i.large"].VCpuInfo.DefaultVCpus === 2, byName["c8i.large"]);
  check(byName["g6.xlarge"].GpuInfo && byName["g6.xlarge"].GpuInfo.Gpus.length > 0, byName["g6.xlarge"]);
  await fails(new DescribeInstanceTypesCommand({ InstanceTypes: ["c8i.huge"] }), "InvalidInstanceType");
  const all = [];
  for await (const p of paginateDescribeInstanceTypes({ client: ec2, pageSize: 6 }, {
    Filters: [{ Name: "processor-info.supported-architecture", Values: ["x86_64"] }],
  })) all.push(...p.InstanceTypes.map((t) => t.InstanceType));
  check(all.length > 10 && new Set(all).size === all.length, all);
  const o = await ec2.send(new DescribeInstanceTypeOfferingsCommand({
    LocationType: "availability-zone-id", Filters: [{ Name: "instance-type", Values: ["m8i.large"] }],
  }));
  check(o.InstanceTypeOfferings.length === 1 && o.InstanceTypeOfferings[0].Location === "use1-az1", o);
}

const areas = { keypairs, import: importKeys, tags, paging, templates, errors, itypes };
try {
  await areas[area]();
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
console.log("ok", area);
