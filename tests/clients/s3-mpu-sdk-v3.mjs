// Multipart through the npm AWS SDK v3 S3 client, which sends a CRC32
// checksum with every UploadPart by default: an upload made without a
// checksum algorithm is completed with a part list naming only PartNumber
// and ETag (the common pattern), then read back. Then a FULL_OBJECT CRC32
// upload whose parts carry no checksum at all (a client that sends them
// only when required): the gateway computes them, the part list needs
// none, and the object's CRC32 is that of the whole.
//   node s3-mpu-sdk-v3.mjs S3_ENDPOINT BUCKET
import { S3Client, CreateBucketCommand, CreateMultipartUploadCommand,
  UploadPartCommand, CompleteMultipartUploadCommand, GetObjectCommand,
  DeleteObjectCommand, DeleteBucketCommand } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";

const [endpoint, bucket] = process.argv.slice(2);
const s3 = new S3Client({ endpoint, forcePathStyle: true, maxAttempts: 1 });
const MiB = 1024 * 1024;
const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB), randomBytes(5 * MiB),
  randomBytes(3 * MiB)];

await s3.send(new CreateBucketCommand({ Bucket: bucket }));
const u = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "k" }));
const list = [];
for (let i = 0; i < parts.length; i++) {
  const r = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "k",
    UploadId: u.UploadId, PartNumber: i + 1, Body: parts[i],
    ChecksumAlgorithm: "CRC32" }));
  console.log("part", i + 1, r.ChecksumCRC32 ? "crc32" : "none");
  list.push({ PartNumber: i + 1, ETag: r.ETag });
}
const c = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket,
  Key: "k", UploadId: u.UploadId, MultipartUpload: { Parts: list } }));
console.log("complete", c.ETag);
const o = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "k" }));
const got = Buffer.from(await o.Body.transformToByteArray());
console.log("same", got.equals(Buffer.concat(parts)));

const bare = new S3Client({ endpoint, forcePathStyle: true, maxAttempts: 1,
  requestChecksumCalculation: "WHEN_REQUIRED" });
const f = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket,
  Key: "full", ChecksumAlgorithm: "CRC32", ChecksumType: "FULL_OBJECT" }));
const flist = [];
for (let i = 0; i < parts.length; i++) {
  const r = await bare.send(new UploadPartCommand({ Bucket: bucket, Key: "full",
    UploadId: f.UploadId, PartNumber: i + 1, Body: parts[i] }));
  flist.push({ PartNumber: i + 1, ETag: r.ETag });
}
const fc = await bare.send(new CompleteMultipartUploadCommand({ Bucket: bucket,
  Key: "full", UploadId: f.UploadId, MultipartUpload: { Parts: flist } }));
const whole = Buffer.alloc(4);
whole.writeUInt32BE(crc32(Buffer.concat(parts)) >>> 0);
console.log("full", fc.ChecksumType, fc.ChecksumCRC32 === whole.toString("base64"));
await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "full" }));
await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "k" }));
await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
console.log("done");
