// The npm AWS SDK v3 against an spx node: CreateSnapshots of a running
// instance's data volumes, read back through the SDK's waiter and
// DescribeSnapshots, and its error for an unknown instance. The node CA
// comes in through NODE_EXTRA_CA_CERTS, the profile and region from the
// environment.
//   node snapset-sdk-v3.mjs EC2_ENDPOINT INSTANCE_ID VOLUME_ID...
// VOLUME_ID...: the instance's data volumes, which the set must hold;
// the first is tagged from=vol and k=vol.
// Prints the snapshot ids on one line when every check passed; a failed
// check throws.
import {
  EC2Client, CreateSnapshotsCommand, DescribeSnapshotsCommand,
  waitUntilSnapshotCompleted,
} from "@aws-sdk/client-ec2";

const [endpoint, instance, ...volumes] = process.argv.slice(2);
const ec2 = new EC2Client({ endpoint, maxAttempts: 1 });

function check(cond, ...what) {
  if (!cond) throw new Error("check failed: " + JSON.stringify(what));
}

try {
  await ec2.send(new CreateSnapshotsCommand({
    InstanceSpecification: { InstanceId: "i-0123456789abcdef0" },
  }));
  throw new Error("no error for an unknown instance");
} catch (e) {
  check(e.name === "InvalidInstanceID.NotFound" &&
    e.$metadata.httpStatusCode === 400, "unknown instance", e.name, e.message);
}

const r = await ec2.send(new CreateSnapshotsCommand({
  InstanceSpecification: { InstanceId: instance, ExcludeBootVolume: true },
  Description: "sdk v3 set",
  CopyTagsFromSource: "volume",
  TagSpecifications: [{ ResourceType: "snapshot",
    Tags: [{ Key: "k", Value: "v3" }] }],
}));
const got = r.Snapshots.map((s) => s.VolumeId).sort();
check(JSON.stringify(got) === JSON.stringify([...volumes].sort()),
  "the set's volumes", got, volumes);
for (const s of r.Snapshots) {
  check(/^snap-[0-9a-f]{17}$/.test(s.SnapshotId), "id", s.SnapshotId);
  check(s.State === "pending" && s.Progress === "0%", "state", s);
  check(s.Description === "sdk v3 set", "description", s);
  check(s.StartTime instanceof Date && !isNaN(s.StartTime), "time", s);
  check(s.Tags.some((t) => t.Key === "k" && t.Value === "v3"), "tags", s);
}
const ids = r.Snapshots.map((s) => s.SnapshotId);
await waitUntilSnapshotCompleted(
  { client: ec2, minDelay: 1, maxDelay: 1, maxWaitTime: 120 },
  { SnapshotIds: ids });
const d = await ec2.send(new DescribeSnapshotsCommand({
  Filters: [{ Name: "description", Values: ["sdk v3 set"] }],
}));
check(d.Snapshots.length === ids.length, "described", d.Snapshots);
for (const s of d.Snapshots) {
  check(ids.includes(s.SnapshotId) && s.State === "completed" &&
    s.Progress === "100%", "completed", s);
  // The first volume's own tags came with it (CopyTagsFromSource); the
  // request's win where both name a key.
  if (s.VolumeId === volumes[0]) {
    const tags = s.Tags.map((t) => `${t.Key}=${t.Value}`).sort().join(",");
    check(tags === "from=vol,k=v3", "tags of the first volume's", tags);
  }
}
console.log(ids.join(" "));
