import { randomBytes } from 'node:crypto';
import { ListPartsCommand, S3Client } from '@aws-sdk/client-s3';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fileKey } from '../../shared/files/keys.js';
import { runDynamodb, startTestApi, type TestApi } from '../support/api.js';
import { download, fileKeyOf, sha256, storedFilesOf } from '../support/attachments.js';
import { cutEvery, dynamodbCall, type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { putPart, type SessionClient, sessionClient } from '../support/upload-sessions.js';

/**
 * DynamoDB behind a proxy that cuts chosen requests: the completing
 * transaction (or the abort's delete) fails before DynamoDB acted, or after
 * with the answer lost. The protocol must end with exactly one attachment
 * whose file is there, or none and no file.
 */
let proxy: FaultProxy;
let t: TestApi;
let sessions: SessionClient;

beforeAll(async () => {
  proxy = await startFaultProxy(runDynamodb());
  t = await startTestApi({ sharedDynamodb: { endpoint: proxy.endpoint, tablePrefix: `f${randomBytes(6).toString('hex')}_` } });
  sessions = sessionClient(t);
});
afterEach(() => proxy.calm());
afterAll(async () => {
  await t?.close();
  await proxy?.close();
});

/** Every call of the operation is cut before DynamoDB sees it, until the test calms the proxy. */
const cutCallsOf = (operation: string) => cutEvery(proxy, dynamodbCall(operation));
const filesOf = (userId: string) => storedFilesOf(t.api.s3Endpoint, userId);

async function uploadedSession(userId: string, bytes: Buffer) {
  const session = (await sessions.start(userId, { filename: 'a.bin', file_size: bytes.length })).body;
  const parts = await sessions.uploadAll(userId, session, bytes);
  return { session, parts };
}

describe('a start when DynamoDB loses its answer', () => {
  it('answers 201 with a session that works when the session was written but the answer was lost (the SDK sends the write again)', async () => {
    let puts = 0;
    const lost = proxy.inject({ match: (request) => dynamodbCall('PutItem')(request) && ++puts > 0, fault: { kind: 'reset_after' } });
    const bytes = randomBytes(1000);
    const started = await sessions.start('ddb-lost-start', { filename: 'a.bin', file_size: bytes.length });
    expect(lost.fired).toBe(1);
    expect(puts).toBeGreaterThan(1);
    expect(started.status).toBe(201);
    expect((await sessions.get('ddb-lost-start', started.body.id)).body.status).toBe('pending');
    const completed = await sessions.complete(
      'ddb-lost-start',
      started.body.id,
      await sessions.uploadAll('ddb-lost-start', started.body, bytes),
    );
    expect(completed.status).toBe(201);
    expect(sha256((await download(completed.body.file_url)).bytes)).toBe(sha256(bytes));
  });
});

describe('a start when DynamoDB cannot write the session', () => {
  // S3 started the multipart upload before the record was tried: nothing would point at it, so the start aborts it.
  it('answers 503 and aborts the upload it started: no session, no upload left in S3', async () => {
    const userId = `ddb-start-down-${randomBytes(4).toString('hex')}`;
    const written: { id: string; attachment_id: string; upload_id: string }[] = [];
    const cut = cutEvery(proxy, (request) => {
      if (!dynamodbCall('PutItem', [userId, 'upload_id'])(request)) return false;
      written.push(unmarshall(JSON.parse(request.body.toString()).Item) as (typeof written)[number]);
      return true;
    });
    const started = await sessions.start(userId, { filename: 'a.bin', file_size: 1000 });
    expect(started.status, started.text).toBe(503);
    expect(cut.fired).toBeGreaterThan(0);
    proxy.calm();
    // Every attempt wrote the one record the start made, naming the upload S3 had started for it.
    const [record] = written;
    expect(new Set(written.map(({ upload_id }) => upload_id))).toEqual(new Set([record!.upload_id]));
    expect((await sessions.get(userId, record!.id)).status).toBe(404);
    expect(await uploadExists(fileKey(userId, record!.attachment_id, record!.id), record!.upload_id)).toBe(false);
  });
});

/** Whether S3 still holds the multipart upload (ListParts answers NoSuchUpload once it is aborted). */
async function uploadExists(key: string, uploadId: string): Promise<boolean> {
  const s3 = new S3Client({
    endpoint: t.api.s3Endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'local' },
  });
  try {
    await s3.send(new ListPartsCommand({ Bucket: t.api.config.filesBucket, Key: key, UploadId: uploadId }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'NoSuchUpload') return false;
    throw error;
  } finally {
    s3.destroy();
  }
}

describe('a completion when DynamoDB fails its transaction', () => {
  it('answers 201 with the one attachment when the transaction happened but its answer was lost (the SDK retries)', async () => {
    const bytes = randomBytes(1000);
    const { session, parts } = await uploadedSession('ddb-lost', bytes);
    let transactions = 0;
    const lost = proxy.inject({
      match: (request) => dynamodbCall('TransactWriteItems')(request) && ++transactions > 0,
      fault: { kind: 'reset_after' },
    });
    const response = await sessions.complete('ddb-lost', session.id, parts);
    expect(lost.fired).toBe(1);
    expect(transactions).toBeGreaterThan(1);
    expect(response.status).toBe(201);
    const list = await t.call('ddb-lost', 'GET', '/v1/attachments');
    expect(list.body.data.map((attachment: { id: string }) => attachment.id)).toEqual([response.body.id]);
    expect(sha256((await download(response.body.file_url)).bytes)).toBe(sha256(bytes));
  });

  it('answers 503 when the transaction cannot be made; no attachment shows, and the retry completes the same file', async () => {
    const bytes = randomBytes(1000);
    const { session, parts } = await uploadedSession('ddb-down', bytes);
    cutCallsOf('TransactWriteItems');
    const failed = await sessions.complete('ddb-down', session.id, parts);
    expect(failed.status).toBe(503);
    proxy.calm();
    expect((await t.call('ddb-down', 'GET', '/v1/attachments')).body.data).toEqual([]);
    expect((await sessions.get('ddb-down', session.id)).body.status).toBe('pending');
    const retried = await sessions.complete('ddb-down', session.id, parts);
    expect(retried.status).toBe(201);
    expect(sha256((await download(retried.body.file_url)).bytes)).toBe(sha256(bytes));
    expect(await filesOf('ddb-down')).toEqual([fileKeyOf(retried.body)]);
  });
});

describe('an abort when DynamoDB fails', () => {
  it('answers 503 and leaves the session and its parts as they were; the retry aborts both', async () => {
    const session = (await sessions.start('ddb-abort', { filename: 'a.bin', file_size: 100 })).body;
    const [url] = (await sessions.sign('ddb-abort', session.id, [1])).body.data;
    await putPart(url.url, randomBytes(100));
    cutCallsOf('DeleteItem');
    expect((await sessions.abort('ddb-abort', session.id)).status).toBe(503);
    proxy.calm();
    expect((await sessions.get('ddb-abort', session.id)).body.parts).toHaveLength(1);
    expect((await sessions.abort('ddb-abort', session.id)).status).toBe(200);
    expect((await sessions.get('ddb-abort', session.id)).status).toBe(404);
    await expect(putPart(url.url, randomBytes(10))).rejects.toThrow(/NoSuchUpload/);
  });
});
