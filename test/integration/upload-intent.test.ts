import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { CLEANUP_FUNCTION } from '../../infra/local/iam.js';
import { dynamo, outbox } from '../../shared/app.js';
import { DynamoAttachmentStore } from '../../shared/attachments/dynamo-store.js';
import type { AttachmentRecord, UploadIntent } from '../../shared/attachments/model.js';
import { UPLOAD_INTENT_SK_PREFIX } from '../../shared/dynamo/keys.js';
import { fileKey, userFilesPrefix } from '../../shared/files/keys.js';
import { newId } from '../../shared/ids.js';
import { upload } from '../support/attachments.js';
import { listAll, settledAudit, summary } from '../support/audit.js';
import { eventually } from '../support/eventually.js';
import { cutEvery, dynamodbCall, isStreamRead, type ProxiedRequest, type Rule, s3Call, signedBy } from '../support/fault-proxy.js';
import { type FaultyApi, faultyApiForFile } from '../support/faulty-api.js';

/**
 * An upload writes its intent before its file (docs/consistency.md, "An
 * upload's intent"): the interleavings of S3 and DynamoDB failures that used
 * to leave a file no record and no hand-over held (issue 26: the randomized
 * run's `orphan S3 file (no record)`) leave nothing now. Before, a failed
 * upload wrote its hand-over to the cleanup only after the failure, so
 * DynamoDB failing at that moment as well kept the file for good. The short
 * function timeout makes a stranded intent expire within seconds (the local
 * server runs DynamoDB's TTL for it: infra/local/time-to-live.ts).
 */
const FUNCTION_TIMEOUT_MS = 6_000;
// What the intent's deletion by TTL then does is what these tests prove: deleted at its expiry, not an hour late.
const faultyApi = faultyApiForFile({ functionTimeoutMs: FUNCTION_TIMEOUT_MS, timeToLiveDelayMs: 0 });
let f: FaultyApi;
beforeEach(() => {
  f = faultyApi();
});

/** The expiry (invocation end + its grace) plus the stream's and the cleanup's time, generously. */
const EXPIRY_SETTLES_MS = 60_000;

const filesOf = (userId: string) => f.storedKeys(userFilesPrefix(userId));

/** The upload intents left in the attachments table (read past the proxy's faults: they are calm by then). */
async function intentsLeft(): Promise<Record<string, unknown>[]> {
  const { Items = [] } = await f.t.api.composition.use(dynamo).send(
    new ScanCommand({
      TableName: f.t.api.config.attachmentsTable,
      ConsistentRead: true,
      FilterExpression: 'begins_with(sk, :intent)',
      ExpressionAttributeValues: { ':intent': UPLOAD_INTENT_SK_PREFIX },
    }),
  );
  return Items;
}

/** DynamoDB goes down the moment the rule's first request arrives: everything the run does after that fails. */
/** The run's file, its intent and any record all gone, once the intent's expiry has handed the file to the cleanup. */
async function expectNothingLeftOnceExpired(userId: string): Promise<void> {
  expect(
    await eventually(
      () => filesOf(userId),
      (keys) => keys.length === 0,
      EXPIRY_SETTLES_MS,
    ),
  ).toEqual([]);
  expect(await eventually(intentsLeft, (items) => items.length === 0, EXPIRY_SETTLES_MS)).toEqual([]);
  expect(await listAll(f.t, userId, '/v1/attachments')).toEqual([]);
}

/** The cleanup's DynamoDB calls from now on, and a count of S3 deletes of `userId`'s files (both let through). */
function watchCleanup(userId: string): { cleanupCalls: ProxiedRequest[]; fileDeletes: Rule } {
  const cleanupCalls: ProxiedRequest[] = [];
  const isCleanup = signedBy(CLEANUP_FUNCTION);
  f.dynamodb.inject({
    match: (request) => isCleanup(request) && cleanupCalls.push(request) > 0,
    times: Number.POSITIVE_INFINITY,
    fault: { kind: 'delay', ms: 0 },
  });
  const fileDeletes = f.s3.inject({
    match: s3Call('DELETE', `/${userFilesPrefix(userId)}`),
    times: Number.POSITIVE_INFINITY,
    fault: { kind: 'delay', ms: 0 },
  });
  return { cleanupCalls, fileDeletes };
}

const downOnceHit = (hit: Promise<unknown>) => void hit.then(() => f.dynamodb.down());

describe('an upload whose file S3 stored while DynamoDB went down', () => {
  it('answers 503 when the PUT answer is lost and DynamoDB is down for the whole failure path; the file stays only until its intent expires', async () => {
    const userId = 'intent-lost-put';
    downOnceHit(cutEvery(f.s3, s3Call('PUT', `/${userFilesPrefix(userId)}`), 'after').hit);
    const response = await upload(f.t, userId, { bytes: 'stored, unacknowledged', filename: 'lost-put.txt' });
    expect(response.status).toBe(503);
    // S3 stored it (every answer lost): the old hand-over, written after the failure, could not be written now.
    expect(await filesOf(userId)).toHaveLength(1);

    f.dynamodb.calm();
    f.s3.calm();
    await expectNothingLeftOnceExpired(userId);
  });

  it('answers 503 when every attempt of the record transaction was refused and DynamoDB is down for the read-back; the file goes once its intent expires', async () => {
    const userId = 'intent-refused-record';
    downOnceHit(cutEvery(f.dynamodb, dynamodbCall('TransactWriteItems', ['refused-record.txt'])).hit);
    const response = await upload(f.t, userId, { bytes: 'no record ever', filename: 'refused-record.txt' });
    expect(response.status).toBe(503);
    expect(await filesOf(userId)).toHaveLength(1);

    f.dynamodb.calm();
    await expectNothingLeftOnceExpired(userId);
  });

  it('keeps the file of a record whose transaction committed with its answer lost, though the run answered 503: the record replaced the intent', async () => {
    const userId = 'intent-committed-record';
    downOnceHit(cutEvery(f.dynamodb, dynamodbCall('TransactWriteItems', ['committed-record.txt']), 'after').hit);
    const response = await upload(f.t, userId, { bytes: 'committed, unacknowledged', filename: 'committed-record.txt' });
    expect(response.status).toBe(503);

    f.dynamodb.calm();
    const { cleanupCalls, fileDeletes } = watchCleanup(userId);
    const [record] = await listAll<{ id: string }>(f.t, userId, '/v1/attachments');
    // What could remove the file has run: the cleanup read the record on the intent's REMOVE and finished that batch.
    await eventually(
      async () => cleanupCalls.slice(cleanupCalls.findIndex(dynamodbCall('GetItem', [record!.id])) + 1),
      (later) => cleanupCalls.some(dynamodbCall('GetItem', [record!.id])) && later.filter(isStreamRead).length >= 2,
    );
    expect(fileDeletes.fired).toBe(0);
    const { violations } = await settledAudit(f, [userId], { expectedBytes: () => Buffer.from('committed, unacknowledged') });
    expect(summary(violations)).toEqual([]);
    expect(
      (await listAll<{ id: string; filename: string }>(f.t, userId, '/v1/attachments')).map((attachment) => attachment.filename),
    ).toEqual(['committed-record.txt']);
    expect(await intentsLeft()).toEqual([]);
  }, 60_000);
});

describe('the record write and the intent', () => {
  const store = () =>
    new DynamoAttachmentStore(
      f.t.api.composition.use(dynamo),
      f.t.api.config.attachmentsTable,
      f.t.api.config.conversationsTable,
      f.t.api.composition.use(outbox),
    );
  const recordOf = (userId: string, id: string, run: string): AttachmentRecord => ({
    id,
    message_id: null,
    filename: 'late.txt',
    file_type: 'text/plain',
    file_size: 4,
    created_at: 1_700_000_000,
    uploaded_by: userId,
    placement: null,
    file_key: fileKey(userId, id, run),
    scan_status: 'clean' as const,
  });
  const intentOf = (record: AttachmentRecord, run: string): UploadIntent => ({
    attachmentId: record.id,
    run,
    fileKey: record.file_key,
    expiresAt: Math.ceil(Date.now() / 1000) + 600,
  });

  it('commits no record once the intent is removed: an attempt arriving after its run gave up makes nothing the cleanup would not remove', async () => {
    const record = recordOf('intent-late-attempt', newId('att'), 'run-1');
    const intent = intentOf(record, 'run-1');
    await store().intend(intent);
    await store().abandon(intent);
    expect(await store().add(record, 'request-1', intent)).toBe('intent-gone');
    expect(await store().get(record.id)).toBeUndefined();
  });

  it('removes the intent in the transaction that writes the record', async () => {
    const record = recordOf('intent-replaced', newId('att'), 'run-1');
    const intent = intentOf(record, 'run-1');
    await store().intend(intent);
    expect((await intentsLeft()).filter((item) => item.pk === record.id)).toHaveLength(1);
    expect(await store().add(record, 'request-1', intent)).toBe('added');
    expect((await intentsLeft()).filter((item) => item.pk === record.id)).toEqual([]);
    expect((await store().get(record.id))?.file_key).toBe(record.file_key);
  });
});
