// The npm AWS SDK v3 against an spx node: DescribeRegions and
// GetCallerIdentity over HTTPS. The node CA comes in through
// NODE_EXTRA_CA_CERTS, credentials and region from the environment.
//   node sdk-v3.mjs EC2_ENDPOINT
import { EC2Client, DescribeRegionsCommand, DescribeAvailabilityZonesCommand } from "@aws-sdk/client-ec2";
import { STSClient, GetCallerIdentityCommand } from "@aws-sdk/client-sts";

const endpoint = process.argv[2];
const ec2 = new EC2Client({ endpoint, maxAttempts: 1 });
const sts = new STSClient({ endpoint, maxAttempts: 1 });

const regions = await ec2.send(new DescribeRegionsCommand({}));
console.log("regions", regions.Regions.map((r) => r.RegionName).join(","));
const zones = await ec2.send(new DescribeAvailabilityZonesCommand({}));
console.log("zones", zones.AvailabilityZones.map((z) => `${z.ZoneName}/${z.ZoneId}/${z.State}`).join(","));
const me = await sts.send(new GetCallerIdentityCommand({}));
console.log("account", me.Account);
console.log("arn", me.Arn);
try {
  await ec2.send(new DescribeRegionsCommand({ RegionNames: ["mars-north-1"] }));
  console.log("error none");
} catch (e) {
  console.log("error", e.name, e.$metadata.httpStatusCode);
}
