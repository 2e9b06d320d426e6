import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { HttpRequest } from '@smithy/core/protocols';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3 } from '../../infra/local/s3.js';
import { boundedTransport } from '../../shared/deadline.js';
import { S3Bucket, type S3Transport } from '../../shared/s3/bucket.js';
import { S3_TIMEOUTS } from '../../shared/s3/client.js';
import { S3Presigner } from '../../shared/s3/presigner.js';

/**
 * The local S3 checks SigV4 as S3 does (infra/local/s3-signatures.ts): the
 * layer's calls and URLs and the official client's pass, over keys with the
 * characters encoding treats specially, and a request changed after it was
 * signed is refused with 403 SignatureDoesNotMatch.
 */
const BUCKET = 'signatures-bucket';
const CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };
const KEYS = ['files/u/plain.txt', "files/u/a b+c%d/é 🌞 (1)*!'~.txt", 'files/u/q?x=1&y#z'];
let s3: Awaited<ReturnType<typeof startS3>>;
let address: { region: string; bucket: string; endpoint: string; credentials: typeof CREDENTIALS };

beforeAll(async () => {
  s3 = await startS3('127.0.0.1', BUCKET, CREDENTIALS);
  address = { region: 'us-east-1', bucket: BUCKET, endpoint: s3.endpoint, credentials: CREDENTIALS };
});
afterAll(() => s3?.close());

/** A transport that changes each request after it was signed, then sends it. */
function tampering(change: (request: HttpRequest) => void): S3Transport {
  const transport = boundedTransport(S3_TIMEOUTS);
  return { handle: (request) => (change(request), transport.handle(request)), destroy: () => transport.destroy() };
}

describe('signatures at the local S3', () => {
  it.each(KEYS)("take the layer's calls and the S3 client's, as signed, for %s", async (key) => {
    const bucket = new S3Bucket({ ...address, maxAttempts: 1 }, boundedTransport(S3_TIMEOUTS));
    const client = new S3Client({ ...address, forcePathStyle: true, maxAttempts: 1 });
    try {
      await bucket.putObject(key, Buffer.from('hello'), 'text/plain; charset=utf-8');
      expect(await bucket.headObject(key)).toEqual({ contentLength: 5 });
      const uploadId = await bucket.createMultipartUpload(key, 'text/plain');
      expect((await bucket.listParts(key, uploadId)).parts).toEqual([]);
      await bucket.abortMultipartUpload(key, uploadId);
      await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'again' }));
      expect(await (await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body!.transformToString()).toBe('again');
      const url = await new S3Presigner(address).presignDownload(key, { contentType: 'text/plain', contentDisposition: 'attachment' }, { expiresIn: 60 });
      expect(await (await fetch(url)).text()).toBe('again');
    } finally {
      bucket.destroy();
      client.destroy();
    }
  });

  it.each([
    ['a signed header', (request: HttpRequest) => (request.headers['content-type'] = 'text/html')],
    ['the path', (request: HttpRequest) => (request.path = request.path.replace('plain', 'other'))],
    ['the query', (request: HttpRequest) => (request.query['x-id'] = 'GetObject')],
    ['the date', (request: HttpRequest) => (request.headers['x-amz-date'] = request.headers['x-amz-date']!.replace(/\d(?=Z$)/, (d) => String((Number(d) + 1) % 10)))],
  ])('refuse a call whose %s changed after signing, with 403 SignatureDoesNotMatch', async (_what, change) => {
    const bucket = new S3Bucket({ ...address, maxAttempts: 1 }, tampering(change));
    try {
      await expect(bucket.putObject('files/u/plain.txt', Buffer.from('hello'), 'text/plain')).rejects.toMatchObject({
        name: 'SignatureDoesNotMatch',
        $metadata: { httpStatusCode: 403 },
      });
    } finally {
      bucket.destroy();
    }
  });

  it('refuse a presigned URL whose query or secret differs', async () => {
    const url = new URL(await new S3Presigner(address).presignDownload(KEYS[0]!, { contentType: 'text/plain', contentDisposition: 'attachment' }, { expiresIn: 60 }));
    url.searchParams.set('response-content-type', 'text/html');
    const changed = await fetch(url);
    expect(changed.status).toBe(403);
    expect(await changed.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
    const forged = await new S3Presigner({ ...address, credentials: { ...CREDENTIALS, secretAccessKey: 'not-the-secret' } }).presignDownload(
      KEYS[0]!,
      { contentType: 'text/plain', contentDisposition: 'attachment' },
      { expiresIn: 60 },
    );
    expect((await fetch(forged)).status).toBe(403);
  });
});
