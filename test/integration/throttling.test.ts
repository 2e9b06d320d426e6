import { describe, expect, it } from 'vitest';
import { DYNAMODB_TIMEOUTS } from '../../shared/dynamo/client.js';
import { userFilesPrefix } from '../../shared/files/keys.js';
import { S3_TIMEOUTS } from '../../shared/s3/client.js';
import { conversationOf, upload } from '../support/attachments.js';
import { feedOf, listAll } from '../support/audit.js';
import { eventually } from '../support/eventually.js';
import { type ProxiedRequest, s3Call } from '../support/fault-proxy.js';
import { faultyApiForFile } from '../support/faulty-api.js';

/**
 * Throttling as AWS answers it (the fault proxy's `throttle`): a throttled
 * table or bucket is retried with backoff inside the request, for as long as
 * its time budget allows, and only a backend throttled past the budget is
 * 503 service_unavailable, with Retry-After (docs/api.md, "Errors"). The
 * function's timeout is short here (12 s: calls may run for 9 s, room for six throttled tries on a loaded machine), so that
 * "past the budget" comes soon.
 */
const api = faultyApiForFile({ functionTimeoutMs: 12_000 });

/** The upload's transaction: the record, the uploader's activity and their feed, all under the uploader's id. */
const uploadTransactionOf = (userId: string) => (request: ProxiedRequest) =>
  request.target === 'DynamoDB_20120810.TransactWriteItems' && request.body.includes(`"${userId}"`);

/** The user's conversation, made before any fault is set. */
const conversationFor = (userId: string) => conversationOf(api().t, userId, 'throttling-contact');

const uploadAs = (userId: string, conversationId: string, filename: string) =>
  upload(api().t, userId, { bytes: `bytes of ${filename}`, filename }, { conversation_id: conversationId });

describe('an upload whose transaction DynamoDB throttles', () => {
  it.each(['ProvisionedThroughputExceededException', 'ThrottlingException', 'TransactionCanceledException'] as const)(
    'with %s, try after try past the SDK own retries: 201, written once with its one event',
    async (as) => {
      const userId = `throttled-upload-${as}`;
      const conversationId = await conversationFor(userId);
      const tries = 2 * DYNAMODB_TIMEOUTS.maxAttempts;
      const throttled = api().dynamodb.inject({ match: uploadTransactionOf(userId), times: tries, fault: { kind: 'throttle', as } });
      const response = await uploadAs(userId, conversationId, `${as}.txt`);

      expect(response.status, response.text).toBe(201);
      expect(throttled.fired).toBe(tries);
      const listed = await listAll<{ id: string }>(api().t, userId, '/v1/attachments');
      expect(listed.map((attachment) => attachment.id)).toEqual([response.body.id]);
      const created = (await feedOf(api().t, userId)).filter((event) => event.type === 'attachment.created');
      expect(created.map((event) => event.data.object.id)).toEqual([response.body.id]);
    },
  );

  it('throttled past the time budget: 503 service_unavailable with Retry-After, and nothing of it is left', async () => {
    const userId = 'throttled-upload-always';
    const conversationId = await conversationFor(userId);
    const throttled = api().dynamodb.inject({
      match: uploadTransactionOf(userId),
      times: Number.POSITIVE_INFINITY,
      fault: { kind: 'throttle' },
    });
    const response = await uploadAs(userId, conversationId, 'never.txt');

    expect(response.status, response.text).toBe(503);
    expect(response.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable' });
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    // Retried with backoff, not once.
    expect(throttled.fired).toBeGreaterThan(DYNAMODB_TIMEOUTS.maxAttempts);
    throttled.release();
    expect(await listAll(api().t, userId, '/v1/attachments')).toEqual([]);
    expect((await feedOf(api().t, userId)).filter((event) => event.type === 'attachment.created')).toEqual([]);
    // The file the upload had stored goes with the cleanup's hand-over.
    expect(
      await eventually(
        () => api().storedKeys(userFilesPrefix(userId)),
        (keys) => keys.length === 0,
        60_000,
      ),
    ).toEqual([]);
  });
});

describe('an upload whose file S3 throttles (503 SlowDown)', () => {
  it('once: the SDK retries it, 201', async () => {
    const userId = 'slowed-upload-once';
    const conversationId = await conversationFor(userId);
    const slowed = api().s3.inject({ match: s3Call('PUT', `/${userFilesPrefix(userId)}`), fault: { kind: 'throttle' } });
    const response = await uploadAs(userId, conversationId, 'once.txt');
    expect(response.status, response.text).toBe(201);
    expect(slowed.fired).toBe(1);
  });

  it('at every attempt: 503 service_unavailable with Retry-After, and no attachment', async () => {
    const userId = 'slowed-upload-always';
    const conversationId = await conversationFor(userId);
    const slowed = api().s3.inject({
      match: s3Call('PUT', `/${userFilesPrefix(userId)}`),
      times: Number.POSITIVE_INFINITY,
      fault: { kind: 'throttle' },
    });
    const response = await uploadAs(userId, conversationId, 'always.txt');
    expect(response.status, response.text).toBe(503);
    expect(response.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable' });
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(slowed.fired).toBe(S3_TIMEOUTS.maxAttempts);
    slowed.release();
    expect(await listAll(api().t, userId, '/v1/attachments')).toEqual([]);
  });
});
