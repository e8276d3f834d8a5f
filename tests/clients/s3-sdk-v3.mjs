// The npm AWS SDK v3 S3 client against an spx node: it sends CRC32
// checksums with aws-chunked trailers by default.
//   node s3-sdk-v3.mjs S3_ENDPOINT BUCKET
import { S3Client, CreateBucketCommand, PutObjectCommand, GetObjectCommand,
  HeadObjectCommand, ListObjectsV2Command, DeleteObjectCommand,
  DeleteBucketCommand } from "@aws-sdk/client-s3";

const [endpoint, bucket] = process.argv.slice(2);
const s3 = new S3Client({ endpoint, forcePathStyle: true, maxAttempts: 1 });
const body = Buffer.alloc(3 * 1024 * 1024 + 17, "spx");

await s3.send(new CreateBucketCommand({ Bucket: bucket }));
const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "a/b c.bin",
  Body: body, ContentType: "application/x-test", Metadata: { colour: "blue" } }));
console.log("put", put.ETag, put.ChecksumCRC32 ?? "-");
const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "a/b c.bin" }));
console.log("head", head.ContentLength, head.ContentType, head.Metadata.colour);
const get = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "a/b c.bin", Range: "bytes=1-4" }));
console.log("range", JSON.stringify(await get.Body.transformToString()));
const all = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "a/b c.bin" }));
const got = Buffer.from(await all.Body.transformToByteArray());
console.log("same", got.equals(body));
const list = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "a/" }));
console.log("list", list.KeyCount, list.Contents.map((o) => o.Key).join(","));
await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "a/b c.bin" }));
try {
  await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "a/b c.bin" }));
  console.log("gone no");
} catch (e) {
  console.log("gone", e.name, e.$metadata.httpStatusCode);
}
await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
console.log("done");
