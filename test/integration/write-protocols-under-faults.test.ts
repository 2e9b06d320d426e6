import { beforeEach, describe, expect, it } from 'vitest';
import { userFilesPrefix } from '../../shared/files/keys.js';
import { S3_TIMEOUTS } from '../../shared/s3/client.js';
import { download, upload, uploadForm } from '../support/attachments.js';
import { feedOf, type ListedAttachment, listAll, settledAudit, summary } from '../support/audit.js';
import { eventually } from '../support/eventually.js';
import { anyDynamodbCall, cutEvery, dynamodbCall, isS3ObjectDelete, type Rule, s3Call } from '../support/fault-proxy.js';
import { type FaultyApi, faultyApiForFile } from '../support/faulty-api.js';

/**
 * One test per row of issue 9's table: each makes exactly the failure that
 * broke an invariant (a lost answer, a held or late request, an S3 outage)
 * with the fault proxy in front of DynamoDB and S3, then audits through the
 * API and an S3 listing only.
 */
const faultyApi = faultyApiForFile();
/** The file's faulty API, for the helpers below; tests run one at a time. */
let f: FaultyApi;
beforeEach(() => {
  f = faultyApi();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * Every DynamoDB write, whichever protocol makes it (a single put or delete
 * today, a transaction later): a rule hits the first write that names what
 * the test is about (a filename, an id, a key), whatever its operation.
 */
const WRITES = ['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems'];

const createConversation = async (userId: string, form: Record<string, string>) => f.t.call(userId, 'POST', '/v1/conversations', { form });

async function conversationWith(userId: string, contactId: string): Promise<string> {
  const response = await createConversation(userId, { contact_id: contactId });
  expect(response.status).toBe(201);
  return response.body.id;
}

/** Waits until the rule caught its request, or the request it belongs to finished without reaching it. */
const reached = (rule: Rule, request: Promise<unknown>) => Promise.race([rule.hit, request]);

/** One upload per filename in these tests. */
const byFilename = (_userId: string, attachment: ListedAttachment) => attachment.filename;

async function expectSettled(userIds: string[], expectedBytes?: (userId: string, attachment: ListedAttachment) => Buffer | undefined) {
  const { violations } = await settledAudit(f, userIds, { expectedBytes, origin: byFilename });
  expect(summary(violations)).toEqual([]);
}

describe('row 1: an attachment in a conversation that no longer exists', () => {
  it('an upload whose file write is still running when its conversation is deleted answers 400 resource_missing and leaves nothing', async () => {
    const userId = 'row1-upload-race';
    const conversationId = await conversationWith(userId, 'alice');
    const fileWrite = f.s3.inject({ match: s3Call('PUT', `/${userFilesPrefix(userId)}`), fault: { kind: 'hold' } });
    const uploading = upload(f.t, userId, { bytes: 'racing bytes', filename: 'racing.txt' }, { conversation_id: conversationId });
    await reached(fileWrite, uploading);

    const deleted = await f.t.call(userId, 'DELETE', `/v1/conversations/${conversationId}`);
    expect(deleted.status).toBe(200);
    fileWrite.release();
    const uploaded = await uploading;
    expect(fileWrite.fired).toBe(1);

    await expectSettled([userId]);
    expect(await listAll(f.t, userId, '/v1/attachments')).toEqual([]);
    expect(uploaded.status).toBe(400);
    expect(uploaded.body.error).toMatchObject({ code: 'resource_missing', param: 'conversation_id' });
  });
});

describe('row 2: a conversation DELETE answered 200 with attachments left', () => {
  it('a DELETE that answers 200 while an upload into the conversation is storing its record leaves no attachment and no file', async () => {
    const userId = 'row2-delete-race';
    const conversationId = await conversationWith(userId, 'bob');
    const recordWrite = f.dynamodb.inject({ match: anyDynamodbCall(WRITES, ['row2-late.txt']), fault: { kind: 'hold' } });
    const uploading = upload(f.t, userId, { bytes: 'late record', filename: 'row2-late.txt' }, { conversation_id: conversationId });
    await reached(recordWrite, uploading);

    const deleted = await f.t.call(userId, 'DELETE', `/v1/conversations/${conversationId}`);
    expect(deleted.status).toBe(200);
    recordWrite.release();
    const uploaded = await uploading;
    expect(recordWrite.fired).toBe(1);
    expect(uploaded.status).not.toBe(500);

    const { violations } = await settledAudit(f, [userId]);
    expect(
      await listAll(f.t, userId, `/v1/attachments?conversation_id=${conversationId}`),
      'attachments left after the DELETE answered 200',
    ).toEqual([]);
    expect(await f.storedKeys(userFilesPrefix(userId)), 'files left after the DELETE answered 200').toEqual([]);
    expect(summary(violations)).toEqual([]);
  });
});

describe('row 3: an orphan S3 file when S3 is down during a cascade', () => {
  it('a conversation deleted while S3 is down loses all its files once S3 is back, whatever the DELETE answered meanwhile', async () => {
    const userId = 'row3-s3-down';
    const conversationId = await conversationWith(userId, 'carol');
    for (const name of ['one.txt', 'two.txt', 'three.txt']) {
      expect((await upload(f.t, userId, { bytes: `bytes of ${name}`, filename: name }, { conversation_id: conversationId })).status).toBe(
        201,
      );
    }
    expect(await f.storedKeys(userFilesPrefix(userId))).toHaveLength(3);

    // S3 refuses the cascade's file removals (each reset before S3 sees it) well past what one call tries (a call
    // was seen making 5 requests for the SDK's 3 attempts), so a removal call failed and the cleanup's own retry
    // is what removes the files; then it is back.
    const removals = cutEvery(f.s3, (request) => isS3ObjectDelete(request) && request.path.includes(`/${userFilesPrefix(userId)}`));
    const outageOver = eventually(
      async () => removals.fired,
      (refused) => refused >= 3 * S3_TIMEOUTS.maxAttempts,
      60_000,
    ).then(() => f.s3.calm());
    // A client retries a 503 until the DELETE is answered.
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const response = await f.t.call(userId, 'DELETE', `/v1/conversations/${conversationId}`);
      statuses.push(response.status);
      if (response.status !== 503) break;
      await sleep(500);
    }
    expect(statuses.at(-1)).toBe(200);
    expect(statuses.filter((status) => status !== 503 && status !== 200)).toEqual([]);
    await outageOver;

    await expectSettled([userId]);
    expect(await f.storedKeys(userFilesPrefix(userId))).toEqual([]);
  });
});

describe('row 4: two conversations for one contact', () => {
  it('a create whose conversation write lands after a second create answered makes one conversation', async () => {
    const userId = 'row4-late-create';
    // The first create's write is held at the proxy; the second create's goes through.
    const lateWrite = f.dynamodb.inject({ match: anyDynamodbCall(WRITES, ['"is_pinned"', userId]), fault: { kind: 'hold' } });
    const first = createConversation(userId, { contact_id: 'dave' });
    await reached(lateWrite, first);
    const second = await createConversation(userId, { contact_id: 'dave' });
    // Now the held write lands (or, if its client gave up on it meanwhile, the SDK's retry already did).
    lateWrite.release();
    const answers = [await first, second];
    expect(lateWrite.fired).toBe(1);

    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 201]);
    expect(answers[0]!.body.id).toBe(answers[1]!.body.id);
    expect(await listAll(f.t, userId, '/v1/conversations?contact_id=dave')).toHaveLength(1);
    await expectSettled([userId]);
  });
});

describe('row 5: a live conversation not covered by its uniqueness record', () => {
  it('a create whose read of the conversation is answered 4 s late cannot free the contact of a live conversation', async () => {
    const userId = 'row5-stalled-read';
    const slowWrite = f.dynamodb.inject({ match: anyDynamodbCall(WRITES, ['"is_pinned"', userId]), fault: { kind: 'delay', ms: 2_000 } });
    const stalledRead = f.dynamodb.inject({ match: dynamodbCall('GetItem', [userId, '"conv_']), fault: { kind: 'stall', ms: 4_000 } });
    const first = createConversation(userId, { contact_id: 'erin' });
    await reached(slowWrite, first);
    const second = createConversation(userId, { contact_id: 'erin' });
    await reached(stalledRead, Promise.all([first, second]));
    const answers = [await first, await second];
    // Whoever comes later finds the one conversation.
    const third = await createConversation(userId, { contact_id: 'erin' });

    expect(await listAll(f.t, userId, '/v1/conversations?contact_id=erin')).toHaveLength(1);
    expect(new Set([...answers, third].map((answer) => answer.body.id)).size).toBe(1);
    expect(third.status).toBe(200);
    await expectSettled([userId]);
  });
});

describe('row 6: a DELETE answered 404 by the request that deleted', () => {
  it('a conversation DELETE whose conditional delete lost its answer (the SDK retries it) answers 200', async () => {
    const userId = 'row6-conversation';
    const conversationId = await conversationWith(userId, 'frank');
    const lostAnswer = f.dynamodb.inject({ match: anyDynamodbCall(WRITES, [conversationId]), fault: { kind: 'reset_after' } });

    const deleted = await f.t.call(userId, 'DELETE', `/v1/conversations/${conversationId}`);
    expect(lostAnswer.fired).toBe(1);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: conversationId, deleted: true });
    expect((await f.t.call(userId, 'GET', `/v1/conversations/${conversationId}`)).status).toBe(404);
  });

  it('an attachment DELETE whose conditional delete lost its answer (the SDK retries it) answers 200 and the file goes too', async () => {
    const userId = 'row6-attachment';
    const uploaded = await upload(f.t, userId, { bytes: 'to be deleted', filename: 'gone.txt' });
    expect(uploaded.status).toBe(201);
    const lostAnswer = f.dynamodb.inject({ match: anyDynamodbCall(WRITES, [uploaded.body.id]), fault: { kind: 'reset_after' } });

    const deleted = await f.t.call(userId, 'DELETE', `/v1/attachments/${uploaded.body.id}`);
    expect(lostAnswer.fired).toBe(1);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: uploaded.body.id, deleted: true });
    await expectSettled([userId]);
    expect(await f.storedKeys(userFilesPrefix(userId))).toEqual([]);
  });
});

describe('row 7: a record whose file is gone', () => {
  it('an upload whose record write lost its answer (the SDK retries it) answers 201 and its file downloads', async () => {
    const userId = 'row7-lost-record-answer';
    const bytes = Buffer.from('stored once, answered once');
    const lostAnswer = f.dynamodb.inject({ match: anyDynamodbCall(WRITES, ['row7.txt']), fault: { kind: 'reset_after' } });

    const uploaded = await upload(f.t, userId, { bytes, filename: 'row7.txt' });
    expect(lostAnswer.fired).toBe(1);
    await expectSettled([userId], () => bytes);
    expect(uploaded.status).toBe(201);
    const listed = await listAll<ListedAttachment>(f.t, userId, '/v1/attachments');
    expect(listed.map((attachment) => attachment.id)).toEqual([uploaded.body.id]);
    expect((await download(uploaded.body.file_url)).bytes.equals(bytes)).toBe(true);
  });

  it('two runs of one Idempotency-Key: the cleanup of the run whose outcome was unknown never removes the file of the run whose record holds it (issue 18, seed 4242)', async () => {
    const userId = 'row7-two-runs';
    const key = 'row7-two-runs-key';
    const bytes = Buffer.from('the second run holds this file');
    const send = () =>
      f.t.call(userId, 'POST', '/v1/attachments', {
        body: uploadForm({ bytes, filename: 'two-runs.txt' }),
        headers: { 'idempotency-key': key },
      });
    // Run 1 stores its file, then every try of its record write is cut before DynamoDB sees it: its outcome is
    // unknown to it, so it hands its file to the cleanup and answers 503, which frees the key.
    const recordWrites = cutEvery(f.dynamodb, dynamodbCall('TransactWriteItems', ['two-runs.txt']));
    // The cleanup found no record for that file; its removal is held until run 2 has stored and committed.
    const cleanupRemoval = f.s3.inject({
      match: (request) => isS3ObjectDelete(request) && request.path.includes(userFilesPrefix(userId)),
      fault: { kind: 'hold' },
    });
    const first = await send();
    expect(first.status).toBe(503);
    expect(recordWrites.fired).toBeGreaterThan(0);
    await cleanupRemoval.hit;

    recordWrites.release();
    const second = await send();
    expect(second.status).toBe(201);
    const filesBefore = await f.storedKeys(userFilesPrefix(userId));
    cleanupRemoval.release();
    // The held removal lands now: whatever it removes, it must not be the file the record holds.
    await eventually(
      () => f.storedKeys(userFilesPrefix(userId)),
      (keys) => keys.length < filesBefore.length,
    );

    const shown = await f.t.call(userId, 'GET', `/v1/attachments/${second.body.id}`);
    expect(shown.status).toBe(200);
    const file = await download(shown.body.file_url);
    expect(file.status).toBe(200);
    expect(file.bytes.equals(bytes)).toBe(true);
    await expectSettled([userId], () => bytes);
  });
});

describe('row 8: one upload stored twice under one Idempotency-Key', () => {
  /** A client that retries what failed on the server's side (5xx) with the same Idempotency-Key. */
  async function uploadRetrying(userId: string, key: string, bytes: Buffer, filename: string) {
    const statuses: number[] = [];
    for (;;) {
      const response = await f.t.call(userId, 'POST', '/v1/attachments', {
        body: uploadForm({ bytes, filename }),
        headers: { 'idempotency-key': key },
      });
      statuses.push(response.status);
      if (response.status < 500 || statuses.length === 5) return { response, statuses };
      await sleep(200);
    }
  }

  it('an upload with an Idempotency-Key whose record write lost its answer is stored once, however the client retries', async () => {
    const userId = 'row8-retried-upload';
    const bytes = Buffer.from('one upload, one attachment');
    const lostAnswer = f.dynamodb.inject({ match: anyDynamodbCall(WRITES, ['row8.txt']), fault: { kind: 'reset_after' } });

    const { response, statuses } = await uploadRetrying(userId, 'row8-key', bytes, 'row8.txt');
    expect(lostAnswer.fired).toBe(1);
    await expectSettled([userId], () => bytes);
    const listed = await listAll<ListedAttachment>(f.t, userId, '/v1/attachments');
    expect(listed.map((attachment) => attachment.filename)).toEqual(['row8.txt']);
    expect(statuses.filter((status) => status === 500)).toEqual([]);
    expect(response.status).toBe(201);
    expect(response.body.id).toBe(listed[0]!.id);
    // Replayed later: the same attachment, nothing new.
    const replay = await uploadRetrying(userId, 'row8-key', bytes, 'row8.txt');
    expect(replay.response.body.id).toBe(listed[0]!.id);
    expect(await listAll(f.t, userId, '/v1/attachments')).toHaveLength(1);
  });

  it('an Idempotency-Key claim whose answer was lost (the SDK retries it) is recognised as its own: 201, not 409 idempotency_key_in_use', async () => {
    const userId = 'row8-retried-claim';
    const bytes = Buffer.from('claimed once');
    const lostClaim = f.dynamodb.inject({ match: anyDynamodbCall(WRITES, ['row8-claim-key']), fault: { kind: 'reset_after' } });

    const { response, statuses } = await uploadRetrying(userId, 'row8-claim-key', bytes, 'claimed.txt');
    expect(lostClaim.fired).toBe(1);
    expect(statuses).toEqual([201]);
    expect(response.body.filename).toBe('claimed.txt');
    await expectSettled([userId], () => bytes);
    expect(await listAll(f.t, userId, '/v1/attachments')).toHaveLength(1);
  });
});

describe('row 9: a request answered as if its transaction had not committed (randomized run, seed 4242)', () => {
  /**
   * The transaction commits and its answer is lost; the SDK's resend meets a throttled table, the next
   * resends a stalled one: a table still throttled when time cut an attempt short. Nothing may then take
   * the write for unwritten and retry it with other items (a new conversation's id, a second read).
   */
  function committedThenThrottledAndStalled(match: ReturnType<typeof anyDynamodbCall>): Rule {
    const lost = f.dynamodb.inject({ match, fault: { kind: 'reset_after' } });
    f.dynamodb.inject({ match, fault: { kind: 'throttle' } });
    f.dynamodb.inject({ match, times: 3, fault: { kind: 'stall', ms: 5_500 } });
    return lost;
  }

  it('a create whose committed transaction then meets a throttled and a stalled table answers 201 or 503, never 200 with the conversation it made', async () => {
    const userId = 'row9-create';
    const lost = committedThenThrottledAndStalled(anyDynamodbCall(['TransactWriteItems'], ['"is_pinned"', userId]));

    const created = await createConversation(userId, { contact_id: 'gina' });
    expect(lost.fired).toBe(1);
    expect([201, 503]).toContain(created.status);
    const listed = await listAll(f.t, userId, '/v1/conversations?contact_id=gina');
    expect(listed).toHaveLength(1);
    if (created.status === 201) expect(created.body.id).toBe(listed[0]!.id);
    const events = await feedOf(f.t, userId, 'type=conversation.created');
    expect(events.map((event) => event.data.object.id)).toEqual([listed[0]!.id]);
  });

  it('a conversation DELETE whose committed transaction then meets a throttled and a stalled table answers 200 or 503, never 404', async () => {
    const userId = 'row9-delete';
    const conversationId = await conversationWith(userId, 'hank');
    const lost = committedThenThrottledAndStalled(anyDynamodbCall(['TransactWriteItems'], [conversationId]));

    const deleted = await f.t.call(userId, 'DELETE', `/v1/conversations/${conversationId}`);
    expect(lost.fired).toBe(1);
    expect([200, 503]).toContain(deleted.status);
    expect((await f.t.call(userId, 'GET', `/v1/conversations/${conversationId}`)).status).toBe(404);
    expect(await feedOf(f.t, userId, 'type=conversation.deleted')).toHaveLength(1);
  });
});
