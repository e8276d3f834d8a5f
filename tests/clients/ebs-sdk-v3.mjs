// The npm AWS SDK v3 against an spx node: volumes and snapshots with the
// SDK's own waiters and paginator, and its error types. The node CA comes
// in through NODE_EXTRA_CA_CERTS, credentials and region from the
// environment.
//   node ebs-sdk-v3.mjs EC2_ENDPOINT
// Prints "ok ebs" when every check passed; a failed check throws.
import { randomUUID } from "node:crypto";
import {
  EC2Client, CreateVolumeCommand, DeleteVolumeCommand,
  DescribeVolumesCommand, CreateSnapshotCommand, DeleteSnapshotCommand,
  DescribeSnapshotsCommand, CopySnapshotCommand,
  ModifySnapshotAttributeCommand, DescribeSnapshotAttributeCommand,
  paginateDescribeSnapshots, waitUntilVolumeAvailable,
  waitUntilSnapshotCompleted, waitUntilVolumeDeleted,
} from "@aws-sdk/client-ec2";

const [endpoint] = process.argv.slice(2);
const ec2 = new EC2Client({ endpoint, maxAttempts: 1 });
const wait = { client: ec2, minDelay: 1, maxDelay: 1, maxWaitTime: 90 };

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
const tags = (i) => [{ ResourceType: "snapshot",
  Tags: [{ Key: "set", Value: set }, { Key: "i", Value: String(i) }] }];

const v = await ec2.send(new CreateVolumeCommand({
  AvailabilityZone: "us-east-1a", Size: 2, VolumeType: "gp3" }));
check(v.State === "creating", v);
await waitUntilVolumeAvailable(wait, { VolumeIds: [v.VolumeId] });

const snaps = [];
for (let i = 0; i < 6; i++) {
  const s = await ec2.send(new CreateSnapshotCommand({
    VolumeId: v.VolumeId, Description: `sdk ${i}`, TagSpecifications: tags(i) }));
  check(s.State === "pending" && s.Progress === "0%" && s.VolumeSize === 2, s);
  check(s.StartTime instanceof Date, s.StartTime);
  snaps.push(s.SnapshotId);
}
await waitUntilSnapshotCompleted(wait, { SnapshotIds: snaps });

// The paginator, five a page: every snapshot once.
const seen = [];
for await (const page of paginateDescribeSnapshots({ client: ec2, pageSize: 5 }, {
  OwnerIds: ["self"], Filters: [{ Name: "tag:set", Values: [set] }] })) {
  check(page.Snapshots.length <= 5, page.Snapshots.length);
  for (const s of page.Snapshots) {
    check(s.State === "completed" && s.Progress === "100%", s);
    seen.push(s.SnapshotId);
  }
}
check(seen.length === 6 && new Set(seen).size === 6 &&
  snaps.every((id) => seen.includes(id)), seen, snaps);

// A copy, a volume from the copy, permissions.
const c = await ec2.send(new CopySnapshotCommand({
  SourceRegion: "us-east-1", SourceSnapshotId: snaps[0] }));
await waitUntilSnapshotCompleted(wait, { SnapshotIds: [c.SnapshotId] });
const r = await ec2.send(new CreateVolumeCommand({
  AvailabilityZone: "us-east-1a", SnapshotId: c.SnapshotId }));
check(r.Size === 2 && r.SnapshotId === c.SnapshotId, r);
await waitUntilVolumeAvailable(wait, { VolumeIds: [r.VolumeId] });
await ec2.send(new ModifySnapshotAttributeCommand({
  SnapshotId: c.SnapshotId, Attribute: "createVolumePermission",
  CreateVolumePermission: { Add: [{ UserId: "111122223333" }] } }));
const a = await ec2.send(new DescribeSnapshotAttributeCommand({
  SnapshotId: c.SnapshotId, Attribute: "createVolumePermission" }));
check(a.CreateVolumePermissions.length === 1 &&
  a.CreateVolumePermissions[0].UserId === "111122223333", a);

// Errors as their own types.
await fails(new DescribeSnapshotsCommand({
  SnapshotIds: ["snap-0123456789abcdef0"] }), "InvalidSnapshot.NotFound");
await fails(new CreateVolumeCommand({ AvailabilityZone: "us-east-1a",
  SnapshotId: snaps[1], Size: 1 }), "InvalidParameterValue");
await fails(new CreateSnapshotCommand({ VolumeId: "vol-0123456789abcdef0" }),
  "InvalidVolume.NotFound");

for (const id of [...snaps, c.SnapshotId])
  await ec2.send(new DeleteSnapshotCommand({ SnapshotId: id }));
const left = await ec2.send(new DescribeSnapshotsCommand({
  OwnerIds: ["self"], Filters: [{ Name: "tag:set", Values: [set] }] }));
check(left.Snapshots.length === 0, left);
for (const id of [v.VolumeId, r.VolumeId])
  await ec2.send(new DeleteVolumeCommand({ VolumeId: id }));
// One id at a time: the waiter ends at the first NotFound.
for (const id of [v.VolumeId, r.VolumeId])
  await waitUntilVolumeDeleted(wait, { VolumeIds: [id] });
const gone = await ec2.send(new DescribeVolumesCommand({
  Filters: [{ Name: "volume-id", Values: [v.VolumeId, r.VolumeId] }] }));
check(gone.Volumes.length === 0, gone);
console.log("ok ebs");
