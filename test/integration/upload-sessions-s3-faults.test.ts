import { randomBytes } from 'node:crypto';
import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startS3 } from '../../infra/local/s3.js';
import { readConfig } from '../../shared/config.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { download, sha256, storedFilesOf } from '../support/attachments.js';
import {
  cutEvery,
  type FaultProxy,
  isS3Assembly,
  isS3Head,
  isS3ObjectDelete,
  isS3Start,
  type ProxiedRequest,
  startFaultProxy,
} from '../support/fault-proxy.js';
import { type SessionClient, sessionClient } from '../support/upload-sessions.js';

/**
 * S3 behind a proxy that cuts chosen requests: one step of a completion
 * fails (before S3 acted, or after it acted with the answer lost), and the
 * client's retry of the same call must finish the job without a second
 * attachment, and without leaving a file no attachment owns.
 */
let s3: Awaited<ReturnType<typeof startS3>>;
let proxy: FaultProxy;
let t: TestApi;
let sessions: SessionClient;

beforeAll(async () => {
  s3 = await startS3('127.0.0.1', readConfig(process.env).filesBucket, { accessKeyId: 'local', secretAccessKey: 'local' });
  proxy = await startFaultProxy(s3.endpoint);
  t = await startTestApi({ env: { S3_ENDPOINT: proxy.endpoint } });
  sessions = sessionClient(t);
});
afterEach(() => proxy.calm());
afterAll(async () => {
  await t?.close();
  await proxy?.close();
  await s3?.close();
});

const cut = (match: (request: ProxiedRequest) => boolean, when: 'before' | 'after' = 'before') => cutEvery(proxy, match, when);

async function uploadedSession(userId: string, bytes: Buffer, declaredSize = bytes.length) {
  const session = (await sessions.start(userId, { filename: 'a.bin', file_size: declaredSize })).body;
  const parts = await sessions.uploadAll(userId, session, bytes);
  return { session, parts };
}

const filesOf = (userId: string) => storedFilesOf(s3.endpoint, userId);

describe('a completion when S3 fails one step', () => {
  it('is 503 when S3 cannot be reached to start a session, and no session exists', async () => {
    cut(isS3Start);
    const response = await sessions.start('s3-faults-start', { filename: 'a.bin', file_size: 10 });
    expect(response.status).toBe(503);
    expect(response.body.error.code).toBe('service_unavailable');
    const dynamodb = new DynamoDBClient({
      endpoint: t.api.dynamodbEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const stored = await dynamodb.send(
      new QueryCommand({
        TableName: t.api.config.uploadSessionsTable,
        KeyConditionExpression: 'pk = :user',
        ExpressionAttributeValues: { ':user': { S: 's3-faults-start' } },
      }),
    );
    dynamodb.destroy();
    expect(stored.Count).toBe(0);
  });

  it('answers 503 when the assembly fails, and the retry completes the same file', async () => {
    const bytes = randomBytes(6 * 1024 * 1024);
    const { session, parts } = await uploadedSession('s3-faults-assembly', bytes);
    cut(isS3Assembly);
    expect((await sessions.complete('s3-faults-assembly', session.id, parts)).status).toBe(503);
    expect((await sessions.get('s3-faults-assembly', session.id)).body.status).toBe('pending');
    proxy.calm();
    const retried = await sessions.complete('s3-faults-assembly', session.id, parts);
    expect(retried.status).toBe(201);
    expect(sha256((await download(retried.body.file_url)).bytes)).toBe(sha256(bytes));
  });

  it('finishes on retry when S3 assembled the file but the answer was lost', async () => {
    const bytes = randomBytes(1000);
    const { session, parts } = await uploadedSession('s3-faults-lost', bytes);
    cut(isS3Assembly, 'after');
    expect((await sessions.complete('s3-faults-lost', session.id, parts)).status).toBe(503);
    proxy.calm();
    const retried = await sessions.complete('s3-faults-lost', session.id, parts);
    expect(retried.status).toBe(201);
    expect(sha256((await download(retried.body.file_url)).bytes)).toBe(sha256(bytes));
    expect((await t.call('s3-faults-lost', 'GET', '/v1/attachments')).body.data).toHaveLength(1);
  });

  it('finishes on retry when the size check could not read the file', async () => {
    const bytes = randomBytes(1000);
    const { session, parts } = await uploadedSession('s3-faults-head', bytes);
    cut(isS3Head);
    expect((await sessions.complete('s3-faults-head', session.id, parts)).status).toBe(503);
    proxy.calm();
    expect((await sessions.complete('s3-faults-head', session.id, parts)).status).toBe(201);
  });

  it('removes a file of the wrong size on the retry when its first removal failed, and answers 400', async () => {
    const { session, parts } = await uploadedSession('s3-faults-size', randomBytes(1000), 999);
    cut(isS3ObjectDelete);
    expect((await sessions.complete('s3-faults-size', session.id, parts)).status).toBe(503);
    expect(await filesOf('s3-faults-size')).toHaveLength(1);
    proxy.calm();
    const retried = await sessions.complete('s3-faults-size', session.id, parts);
    expect(retried.status).toBe(400);
    expect(retried.body.error.code).toBe('file_size_mismatch');
    expect(await filesOf('s3-faults-size')).toEqual([]);
  });
});

describe('a completion racing an abort', () => {
  /**
   * On AWS the file is then missing to the completion's HEAD, which S3
   * answers 404 only because the function may list the files prefix (a role
   * without s3:ListBucket gets 403, and the client a 500); the local S3
   * answers each function as its role would (infra/local/s3-roles.ts).
   */
  it.each([
    ['before S3 assembles the file', isS3Assembly],
    ['after S3 assembled it, before its size is read', isS3Head],
  ])('answers 404 for the session the abort removed %s, and leaves no file', async (_when, step) => {
    const userId = `s3-race-${step === isS3Head ? 'head' : 'assembly'}`;
    const { session, parts } = await uploadedSession(userId, randomBytes(1000));
    const held = proxy.inject({ match: step, fault: { kind: 'hold' } });
    const completing = sessions.complete(userId, session.id, parts);
    await held.hit;
    expect((await sessions.abort(userId, session.id)).status).toBe(200);
    held.release();
    const completed = await completing;
    expect(completed.status).toBe(404);
    expect(completed.body.error).toMatchObject({ code: 'resource_missing', param: 'id' });
    expect(await filesOf(userId)).toEqual([]);
  });
});
