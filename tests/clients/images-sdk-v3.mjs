// The npm AWS SDK v3 against an spx node: AMIs registered from a
// snapshot, DescribeImages with the SDK's waiter and paginator, its error
// types. The node CA comes in through NODE_EXTRA_CA_CERTS, credentials
// and region from the environment.
//   node images-sdk-v3.mjs EC2_ENDPOINT SNAPSHOT_ID
// Prints "ok images" when every check passed; a failed check throws.
import { randomUUID } from "node:crypto";
import {
  EC2Client, RegisterImageCommand, DescribeImagesCommand,
  DeregisterImageCommand, DescribeImageAttributeCommand, CreateTagsCommand,
  paginateDescribeImages, waitUntilImageAvailable,
} from "@aws-sdk/client-ec2";

const [endpoint, snap] = process.argv.slice(2);
const ec2 = new EC2Client({ endpoint, maxAttempts: 1 });

function check(cond, ...what) {
  if (!cond) throw new Error("check failed: " + JSON.stringify(what));
}
async function fails(cmd, code) {
  try {
    const r = await ec2.send(cmd);
    throw new Error(`no error: ${JSON.stringify(r)}`);
  } catch (e) {
    if (e.message.startsWith("no error")) throw e;
    check(e.name === code && e.$metadata.httpStatusCode === 400,
      "got", e.name, e.$metadata.httpStatusCode, e.message, "want", code);
  }
}

const set = randomUUID().slice(0, 8);
const bdm = [{ DeviceName: "/dev/xvda", Ebs: { SnapshotId: snap } }];
const ids = [];
// Tags at registration (TagSpecifications, which this SDK's model has)
// for two, with CreateTags for the third.
for (let i = 0; i < 3; i++) {
  const r = await ec2.send(new RegisterImageCommand({
    Name: `sdk-${set}-${i}`, RootDeviceName: "/dev/xvda",
    BlockDeviceMappings: bdm, BootMode: i ? "uefi" : "legacy-bios",
    TagSpecifications: i < 2 ? [{ ResourceType: "image",
      Tags: [{ Key: "set", Value: set }] }] : undefined }));
  check(/^ami-[0-9a-f]{17}$/.test(r.ImageId), r);
  ids.push(r.ImageId);
}
await ec2.send(new CreateTagsCommand({ Resources: [ids[2]],
  Tags: [{ Key: "set", Value: set }] }));
await fails(new RegisterImageCommand({ Name: `sdk-${set}-snaptags`,
  BlockDeviceMappings: bdm, TagSpecifications: [{ ResourceType: "volume",
    Tags: [{ Key: "a", Value: "b" }] }] }), "InvalidParameterValue");
const w = await waitUntilImageAvailable(
  { client: ec2, minDelay: 1, maxDelay: 1, maxWaitTime: 30 },
  { ImageIds: ids });
check(w.state === "SUCCESS", w.state);

const seen = [];
for await (const page of paginateDescribeImages({ client: ec2, pageSize: 1 },
  { Owners: ["self"], Filters: [{ Name: "tag:set", Values: [set] }] })) {
  check(page.Images.length <= 1, page.Images.length);
  for (const i of page.Images) seen.push(i.ImageId);
}
check(JSON.stringify(seen) === JSON.stringify([...ids].sort()), seen, ids);

const d = await ec2.send(new DescribeImagesCommand({ ImageIds: [ids[1]] }));
const img = d.Images[0];
check(img.State === "available" && img.BootMode === "uefi" &&
  img.BlockDeviceMappings[0].Ebs.SnapshotId === snap &&
  img.CreationDate.endsWith("Z"), img);
const a = await ec2.send(new DescribeImageAttributeCommand({
  ImageId: ids[0], Attribute: "bootMode" }));
check(a.BootMode.Value === "legacy-bios", a);

await fails(new RegisterImageCommand({ Name: `sdk-${set}-0`,
  BlockDeviceMappings: bdm }), "InvalidAMIName.Duplicate");
await fails(new RegisterImageCommand({ Name: `sdk-${set}-arm`,
  Architecture: "arm64", BlockDeviceMappings: bdm }), "InvalidParameterValue");
await fails(new DescribeImagesCommand({ ImageIds: ["ami-0123456789abcdef0"] }),
  "InvalidAMIID.NotFound");
await fails(new DescribeImagesCommand({ ImageIds: ["ami-bad"] }),
  "InvalidAMIID.Malformed");

for (const id of ids)
  await ec2.send(new DeregisterImageCommand({ ImageId: id }));
await fails(new DeregisterImageCommand({ ImageId: ids[0] }),
  "InvalidAMIID.NotFound");
console.log("ok images");
