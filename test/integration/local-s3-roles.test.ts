import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actingAs, functionCredentials } from '../../infra/local/iam.js';
import { startS3 } from '../../infra/local/s3.js';
import { S3Bucket } from '../../shared/s3/bucket.js';
import { S3_TIMEOUTS } from '../../shared/s3/client.js';
import { S3Presigner } from '../../shared/s3/presigner.js';
import { boundedTransport } from '../../shared/transport.js';

/**
 * The local S3 answers a missing key as S3 answers the calling function's
 * role (infra/local/s3-roles.ts): 404 to a role that may list the files
 * prefix (CompleteUploadSession, shared/routes.ts), 403 AccessDenied to one
 * that may not; the server's own base key may do anything.
 */
const BUCKET = 'roles-bucket';
const BASE = { accessKeyId: 'local', secretAccessKey: 'local' };
let s3: Awaited<ReturnType<typeof startS3>>;
let bucket: S3Bucket;
let presigner: S3Presigner;

beforeAll(async () => {
  s3 = await startS3('127.0.0.1', BUCKET, BASE);
  const address = { region: 'us-east-1', bucket: BUCKET, endpoint: s3.endpoint, credentials: functionCredentials(BASE) };
  bucket = new S3Bucket({ ...address, maxAttempts: S3_TIMEOUTS.maxAttempts }, boundedTransport(S3_TIMEOUTS));
  presigner = new S3Presigner(address);
});
afterAll(async () => {
  bucket?.destroy();
  await s3?.close();
});

const failureOf = (work: () => Promise<unknown>) =>
  work().then(
    () => undefined,
    (error: unknown) => error,
  );

describe('a missing file, to each function', () => {
  it('is 403 AccessDenied, for HEAD and GET, to a function whose role may not list the bucket', async () => {
    const head = await actingAs('GetAttachment', () => failureOf(() => bucket.headObject('files/u/missing')))();
    expect(head).toMatchObject({ name: 'Unknown', $metadata: { httpStatusCode: 403 } });
    const get = await actingAs('GetAttachment', () => failureOf(() => bucket.getObject('files/u/missing', 'bytes=0-9')))();
    expect(get).toMatchObject({ name: 'AccessDenied', message: 'Access Denied', $metadata: { httpStatusCode: 403 } });
  });

  it('is 404 to the completion, which may list the files prefix, and to the base key', async () => {
    const head = await actingAs('CompleteUploadSession', () => failureOf(() => bucket.headObject('files/u/missing')))();
    expect(head).toMatchObject({ name: 'NotFound', $metadata: { httpStatusCode: 404 } });
    const get = await actingAs('CompleteUploadSession', () => failureOf(() => bucket.getObject('files/u/missing', 'bytes=0-9')))();
    expect(get).toMatchObject({ name: 'NoSuchKey', $metadata: { httpStatusCode: 404 } });
    expect(await failureOf(() => bucket.headObject('files/u/missing'))).toMatchObject({ name: 'NotFound' });
  });

  it('is 403 to the completion outside the files prefix, where its ListBucket does not reach', async () => {
    const head = await actingAs('CompleteUploadSession', () => failureOf(() => bucket.headObject('elsewhere/missing')))();
    expect(head).toMatchObject({ $metadata: { httpStatusCode: 403 } });
  });

  it("is 403 with S3's XML body through a file_url signed by a function that may not list", async () => {
    const url = await actingAs('GetAttachment', () =>
      presigner.presignDownload('files/u/missing', { contentType: 'text/plain', contentDisposition: 'attachment' }, { expiresIn: 60 }),
    )();
    const response = await fetch(url);
    expect(response.status).toBe(403);
    expect(await response.text()).toMatch(/<Error>\s*<Code>AccessDenied<\/Code>\s*<Message>Access Denied<\/Message>/);
  });

  it('changes nothing for a file that exists', async () => {
    await bucket.putObject('files/u/present', Buffer.from('hello'), 'text/plain');
    expect(await actingAs('GetAttachment', () => bucket.headObject('files/u/present'))()).toEqual({ contentLength: 5 });
  });
});
