import { randomBytes } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListPartsCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3 } from '../../infra/local/s3.js';
import { MIB } from '../support/upload-sessions.js';

/** The local S3 stand-in answers multipart uploads as S3 does (infra/local/s3-multipart.ts). */
const BUCKET = 'multipart-bucket';
let s3: Awaited<ReturnType<typeof startS3>>;
let client: S3Client;

beforeAll(async () => {
  const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
  s3 = await startS3('127.0.0.1', BUCKET, credentials);
  client = new S3Client({ endpoint: s3.endpoint, forcePathStyle: true, region: 'us-east-1', credentials, maxAttempts: 1 });
});
afterAll(async () => {
  client?.destroy();
  await s3?.close();
});

async function started(key: string): Promise<string> {
  return (await client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }))).UploadId!;
}

async function part(key: string, uploadId: string, number: number, bytes: Buffer): Promise<string> {
  return (await client.send(new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId: uploadId, PartNumber: number, Body: bytes })))
    .ETag!;
}

const complete = (key: string, uploadId: string, parts: { PartNumber: number; ETag: string }[]) =>
  client.send(new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }));

const errorName = (promise: Promise<unknown>) =>
  promise.then(
    () => 'no error',
    (error: Error) => error.name,
  );

describe('the local S3 stand-in, multipart', () => {
  it('assembles parts named by their ETags into the object, with a multipart ETag', async () => {
    const key = 'files/u/whole';
    const uploadId = await started(key);
    const bytes = [randomBytes(5 * MIB), randomBytes(5 * MIB), randomBytes(123)];
    const etags = await Promise.all(bytes.map((chunk, index) => part(key, uploadId, index + 1, chunk)));
    const result = await complete(
      key,
      uploadId,
      etags.map((ETag, index) => ({ PartNumber: index + 1, ETag })),
    );
    expect(result.ETag).toMatch(/^"[0-9a-f]{32}-3"$/);
    const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    expect(Buffer.from(await object.Body!.transformToByteArray()).equals(Buffer.concat(bytes))).toBe(true);
    // Completed: the upload is gone.
    expect(await errorName(client.send(new ListPartsCommand({ Bucket: BUCKET, Key: key, UploadId: uploadId })))).toBe('NoSuchUpload');
  });

  it('lists the parts it holds, a page at a time', async () => {
    const key = 'files/u/listed';
    const uploadId = await started(key);
    const etags = [];
    for (const number of [1, 2, 3]) etags.push(await part(key, uploadId, number, randomBytes(10 * number)));
    const first = await client.send(new ListPartsCommand({ Bucket: BUCKET, Key: key, UploadId: uploadId, MaxParts: 2 }));
    expect(first.Parts!.map((p) => [p.PartNumber, p.Size, p.ETag])).toEqual([
      [1, 10, etags[0]],
      [2, 20, etags[1]],
    ]);
    expect(first.IsTruncated).toBe(true);
    const rest = await client.send(
      new ListPartsCommand({ Bucket: BUCKET, Key: key, UploadId: uploadId, PartNumberMarker: first.NextPartNumberMarker }),
    );
    expect(rest.Parts!.map((p) => p.PartNumber)).toEqual([3]);
    expect(rest.IsTruncated).toBe(false);
  });

  it('refuses a wrong ETag (InvalidPart), a missing part (InvalidPart), a small part but the last (EntityTooSmall) and disorder (InvalidPartOrder)', async () => {
    const key = 'files/u/refused';
    const uploadId = await started(key);
    const small = await part(key, uploadId, 1, randomBytes(MIB));
    const last = await part(key, uploadId, 2, randomBytes(10));
    expect(await errorName(complete(key, uploadId, [{ PartNumber: 1, ETag: '"00000000000000000000000000000000"' }]))).toBe('InvalidPart');
    expect(await errorName(complete(key, uploadId, [{ PartNumber: 3, ETag: last }]))).toBe('InvalidPart');
    expect(
      await errorName(
        complete(key, uploadId, [
          { PartNumber: 1, ETag: small },
          { PartNumber: 2, ETag: last },
        ]),
      ),
    ).toBe('EntityTooSmall');
    expect(
      await errorName(
        complete(key, uploadId, [
          { PartNumber: 2, ETag: last },
          { PartNumber: 1, ETag: small },
        ]),
      ),
    ).toBe('InvalidPartOrder');
    // None of these used up the upload: one small part alone is a valid (last) part.
    await complete(key, uploadId, [{ PartNumber: 1, ETag: small }]);
  });

  it('answers NoSuchUpload for parts, lists and completions of an upload that does not exist or was aborted', async () => {
    const key = 'files/u/aborted';
    const uploadId = await started(key);
    await part(key, uploadId, 1, randomBytes(10));
    await client.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId: uploadId }));
    for (const id of [uploadId, 'deadbeef']) {
      expect(await errorName(part(key, id, 1, randomBytes(10)))).toBe('NoSuchUpload');
      expect(await errorName(client.send(new ListPartsCommand({ Bucket: BUCKET, Key: key, UploadId: id })))).toBe('NoSuchUpload');
      expect(await errorName(complete(key, id, [{ PartNumber: 1, ETag: '"00000000000000000000000000000000"' }]))).toBe('NoSuchUpload');
      expect(await errorName(client.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId: id })))).toBe(
        'NoSuchUpload',
      );
    }
    // An upload id belongs to its key.
    const other = await started('files/u/other');
    expect(await errorName(part(key, other, 1, randomBytes(10)))).toBe('NoSuchUpload');
  });

  it('refuses part numbers outside 1 to 10,000', async () => {
    const key = 'files/u/numbers';
    const uploadId = await started(key);
    expect(await errorName(part(key, uploadId, 10_001, randomBytes(10)))).toBe('InvalidArgument');
  });
});
