import { randomBytes } from 'node:crypto';
import { DeleteItemCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { ListPartsCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startS3 } from '../../infra/local/s3.js';
import { readConfig } from '../../shared/config.js';
import { uploadSessionKey } from '../../shared/dynamo/keys.js';
import { fileKey } from '../../shared/files/keys.js';
import { systemClock } from '../../shared/time.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { download, fileKeyOf, sha256, storedFilesOf } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import { cutEvery, type FaultProxy, isS3Assembly, isS3ObjectDelete, type ProxiedRequest, startFaultProxy } from '../support/fault-proxy.js';
import { type SessionClient, sessionClient } from '../support/upload-sessions.js';

/**
 * What an upload session leaves in S3 once its record is gone. On AWS,
 * DynamoDB's TTL removes an expired session's record; DynamoDB Local never
 * does (it does not run TTL), so these tests delete the record themselves to
 * stand for the expiry: the same REMOVE reaches the cleanup through the
 * table's stream. S3 sits behind a fault proxy to lose the answers a client
 * walks away from; the bucket is audited straight from S3.
 */
const bucket = readConfig(process.env).filesBucket;
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
let s3: Awaited<ReturnType<typeof startS3>>;
let proxy: FaultProxy;
let t: TestApi;
let sessions: SessionClient;
let dynamodb: DynamoDBClient;
let s3Client: S3Client;
/** Where the test has put the API's "now"; undefined: the system clock. */
let movedTo: number | undefined;

beforeAll(async () => {
  s3 = await startS3('127.0.0.1', bucket, credentials);
  proxy = await startFaultProxy(s3.endpoint);
  t = await startTestApi({ env: { S3_ENDPOINT: proxy.endpoint }, clock: () => movedTo ?? systemClock() });
  sessions = sessionClient(t);
  dynamodb = new DynamoDBClient({ endpoint: t.api.dynamodbEndpoint, region: 'us-east-1', credentials });
  s3Client = new S3Client({ endpoint: s3.endpoint, forcePathStyle: true, region: 'us-east-1', credentials });
});
afterEach(() => {
  proxy.calm();
  movedTo = undefined;
});
afterAll(async () => {
  dynamodb?.destroy();
  s3Client?.destroy();
  await t?.close();
  await proxy?.close();
  await s3?.close();
});

const cut = (match: (request: ProxiedRequest) => boolean, when: 'before' | 'after' = 'before') => cutEvery(proxy, match, when);

const filesOf = (userId: string) => storedFilesOf(s3.endpoint, userId);
const noFilesOf = (userId: string) =>
  eventually(
    () => filesOf(userId),
    (keys) => keys.length === 0,
  );

/** The stored session record: what only the server knows (its attachment id, S3's upload id). */
async function recordOf(userId: string, sessionId: string): Promise<{ sessionId: string; attachmentId: string; uploadId: string }> {
  const { Item } = await dynamodb.send(
    new GetItemCommand({ TableName: t.api.config.uploadSessionsTable, Key: keyOf(userId, sessionId), ConsistentRead: true }),
  );
  return { sessionId, attachmentId: Item!.attachment_id!.S!, uploadId: Item!.upload_id!.S! };
}

/** What DynamoDB's TTL does to an expired session on AWS: the record is deleted. */
async function removeRecord(userId: string, sessionId: string): Promise<void> {
  await dynamodb.send(new DeleteItemCommand({ TableName: t.api.config.uploadSessionsTable, Key: keyOf(userId, sessionId) }));
}

const keyOf = (userId: string, sessionId: string) => {
  const { pk, sk } = uploadSessionKey(userId, sessionId);
  return { pk: { S: pk }, sk: { S: sk } };
};

/** Whether S3 still holds the multipart upload (its parts), asked of S3 itself. */
async function uploadExists(userId: string, record: { sessionId: string; attachmentId: string; uploadId: string }): Promise<boolean> {
  try {
    await s3Client.send(
      new ListPartsCommand({ Bucket: bucket, Key: fileKey(userId, record.attachmentId, record.sessionId), UploadId: record.uploadId }),
    );
    return true;
  } catch (error) {
    if ((error as Error).name === 'NoSuchUpload') return false;
    throw error;
  }
}

async function uploadedSession(userId: string, bytes: Buffer) {
  const session = (await sessions.start(userId, { filename: 'a.bin', file_size: bytes.length })).body;
  const parts = await sessions.uploadAll(userId, session, bytes);
  return { session, parts, record: await recordOf(userId, session.id) };
}

/** A completion whose assembly S3 performed but whose answer was lost: 503, the object assembled, the session pending. */
async function completionLost(userId: string, bytes = randomBytes(1000)) {
  const uploaded = await uploadedSession(userId, bytes);
  cut(isS3Assembly, 'after');
  const completed = await sessions.complete(userId, uploaded.session.id, uploaded.parts);
  proxy.calm();
  expect(completed.status).toBe(503);
  expect(completed.body.error.code).toBe('service_unavailable');
  expect(await filesOf(userId)).toEqual([fileKey(userId, uploaded.record.attachmentId, uploaded.session.id)]);
  return uploaded;
}

describe('a session the client walks away from', () => {
  it('leaves nothing in S3 once its record is removed, after a completion whose answer was lost', async () => {
    const user = 'leftovers-walked-away';
    const { session, record } = await completionLost(user);
    expect((await sessions.get(user, session.id)).body.status).toBe('pending');

    await removeRecord(user, session.id);

    expect(await noFilesOf(user)).toEqual([]);
    expect(await uploadExists(user, record)).toBe(false);
    expect((await sessions.get(user, session.id)).status).toBe(404);
    expect((await t.call(user, 'GET', '/v1/attachments')).body.data).toEqual([]);
  });

  it('refuses work once past its expiry though TTL has not removed it yet, and its assembled object goes when TTL does', async () => {
    const user = 'leftovers-expired';
    const { session, parts } = await completionLost(user);

    movedTo = session.expires_at;
    expect((await sessions.get(user, session.id)).body.status).toBe('expired');
    const late = await sessions.complete(user, session.id, parts);
    expect(late.status).toBe(400);
    expect(late.body.error.code).toBe('upload_session_expired');
    expect((await t.call(user, 'GET', '/v1/attachments')).body.data).toEqual([]);
    // Nothing removes the object while the record stays: the removal of the record is what the cleanup follows.
    expect(await filesOf(user)).toHaveLength(1);

    await removeRecord(user, session.id);
    expect(await noFilesOf(user)).toEqual([]);
  });

  it('leaves nothing of parts that were uploaded but never completed', async () => {
    const user = 'leftovers-parts';
    const { session, record } = await uploadedSession(user, randomBytes(1000));
    expect(await uploadExists(user, record)).toBe(true);

    await removeRecord(user, session.id);

    expect(
      await eventually(
        () => uploadExists(user, record),
        (exists) => !exists,
      ),
    ).toBe(false);
    expect(await filesOf(user)).toEqual([]);
  });

  it('keeps the file of a completed session when its record is removed', async () => {
    const user = 'leftovers-completed';
    const bytes = randomBytes(1000);
    const { session, parts } = await uploadedSession(user, bytes);
    const completed = await sessions.complete(user, session.id, parts);
    expect(completed.status).toBe(201);
    // A walked-away session behind it in the same stream: once its object is gone, the completed one's removal was handled first.
    const behind = await completionLost(`${user}-behind`);

    await removeRecord(user, session.id);
    await removeRecord(`${user}-behind`, behind.session.id);
    expect(await noFilesOf(`${user}-behind`)).toEqual([]);

    expect(await filesOf(user)).toEqual([fileKeyOf(completed.body)]);
    const attachment = await t.call(user, 'GET', `/v1/attachments/${completed.body.id}`);
    expect(attachment.status).toBe(200);
    expect(sha256((await download(attachment.body.file_url)).bytes)).toBe(sha256(bytes));
  });
});

describe('an aborted session', () => {
  it('leaves nothing: no parts, no object', async () => {
    const user = 'leftovers-aborted';
    const { session, record } = await uploadedSession(user, randomBytes(1000));
    expect((await sessions.abort(user, session.id)).status).toBe(200);
    expect(await uploadExists(user, record)).toBe(false);
    expect(await filesOf(user)).toEqual([]);
    expect((await sessions.get(user, session.id)).status).toBe(404);
  });

  it('leaves nothing even when the abort could not remove the assembled object itself', async () => {
    const user = 'leftovers-abort-failed';
    const { session } = await completionLost(user);
    cut(isS3ObjectDelete, 'before');
    expect((await sessions.abort(user, session.id)).status).toBe(503);
    // The record went first; the object is held up by S3 until the proxy lets deletes through, then the cleanup removes it.
    expect(await filesOf(user)).toHaveLength(1);
    proxy.calm();
    expect(await noFilesOf(user)).toEqual([]);
    expect((await sessions.get(user, session.id)).status).toBe(404);
  });
});

describe('a completion racing the removal of its session', () => {
  it('answers 404 and leaves nothing when the record goes while S3 assembles the object', async () => {
    const user = 'leftovers-race';
    const { session, parts, record } = await uploadedSession(user, randomBytes(1000));
    // S3 assembles; its answer is held back long enough for the record's removal and the cleanup to run first.
    const stalled = proxy.inject({ match: isS3Assembly, fault: { kind: 'stall', ms: 6_000 } });
    const completing = sessions.complete(user, session.id, parts);
    await stalled.hit;
    await eventually(
      () => filesOf(user),
      (keys) => keys.length === 1,
    );
    await removeRecord(user, session.id);

    const completed = await completing;
    expect(completed.status).toBe(404);
    expect(completed.body.error.code).toBe('resource_missing');
    expect(await noFilesOf(user)).toEqual([]);
    expect(await uploadExists(user, record)).toBe(false);
    expect((await t.call(user, 'GET', '/v1/attachments')).body.data).toEqual([]);
  });
});
