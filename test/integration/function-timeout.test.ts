import { describe, expect, it } from 'vitest';
import { ANSWER_SHARE, FALLBACK_SHARE } from '../../shared/deadline.js';
import { DYNAMODB_TIMEOUTS } from '../../shared/dynamo/client.js';
import { userFilesPrefix } from '../../shared/files/keys.js';
import type { Json } from '../support/api.js';
import { download, upload } from '../support/attachments.js';
import { settledAudit } from '../support/audit.js';
import { dynamodbCall, s3Call } from '../support/fault-proxy.js';
import { type FaultyApi, faultyApiForFile } from '../support/faulty-api.js';

/**
 * The function timeout, enforced by the emulator as Lambda enforces it (a
 * function that has not answered by then gets API Gateway's 502), is never
 * reached because a backend stalls: each invocation's backend calls end
 * within its budget (shared/deadline.ts), the answer is a 503, and the write
 * protocol's fallbacks still run in the time kept for them. A 503 rather than
 * the emulator's 502 is the proof the answer came before the timeout. A short
 * timeout (8 s: calls until 6 s, fallbacks until 7.2 s) keeps the tests quick;
 * the stalls outlast it.
 */
const FUNCTION_TIMEOUT_MS = 8_000;
// Scanning off: this file counts one protocol's calls under a fault rule, which the scanner's reads and the scan
// results' writes would meet too; scanning under faults is randomized-faults.test.ts's and scanning.test.ts's.
const faultyApi = faultyApiForFile({ functionTimeoutMs: FUNCTION_TIMEOUT_MS, env: { SCANNING: 'off' } });

/** Held far past the function's timeout. */
const STALL_MS = 30_000;

/**
 * How many attempts of one DynamoDB call can start before the budget for
 * calls ends: an attempt whose answer never comes lasts the client's request
 * timeout, so the next starts no earlier than that after it. However slow the
 * machine, no more can start (fewer may); one more would mean an attempt
 * started after the budget ended.
 */
const DYNAMODB_ATTEMPTS_IN_BUDGET = Math.ceil(
  (FUNCTION_TIMEOUT_MS * (1 - ANSWER_SHARE - FALLBACK_SHARE)) / DYNAMODB_TIMEOUTS.requestTimeout,
);

const expectServiceUnavailable = (response: { status: number; body: Json }) => {
  expect(response.status).toBe(503);
  expect(response.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable' });
};

/** No attachment listed, no file in the bucket, once the cleanup has settled. */
async function expectNothingLeft(f: FaultyApi, user: string) {
  const { violations, views } = await settledAudit(f, [user]);
  expect(violations).toEqual([]);
  expect(views.get(user)!.attachments).toEqual([]);
  expect(await f.storedKeys(userFilesPrefix(user))).toEqual([]);
}

describe('a backend that stalls past the function timeout', () => {
  it('an upload whose S3 PUT is stored but never acknowledged answers 503 in time, and its file is removed', async () => {
    const f = faultyApi();
    const user = 'timeout-s3-put';
    const stalled = f.s3.inject({ match: s3Call('PUT', `/${userFilesPrefix(user)}`), times: 10, fault: { kind: 'stall', ms: STALL_MS } });

    const response = await upload(f.t, user, { bytes: 'stored, never acknowledged', filename: 'slow.txt' });
    expectServiceUnavailable(response);
    // One attempt, cut by the budget: no retry was started once it was spent.
    expect(stalled.fired).toBe(1);
    f.s3.calm();

    // The file S3 did store was handed to the cleanup inside the time kept for it.
    await expectNothingLeft(f, user);
  });

  it('an upload whose record transaction never reaches DynamoDB answers 503 in time, and its file is removed', async () => {
    const f = faultyApi();
    const user = 'timeout-dynamodb-lost';
    // Every attempt is held before it is forwarded, until the test is over: DynamoDB never runs it.
    const held = f.dynamodb.inject({
      match: dynamodbCall('TransactWriteItems', [user]),
      times: Number.POSITIVE_INFINITY,
      fault: { kind: 'hold' },
    });

    const response = await upload(f.t, user, { bytes: 'never recorded', filename: 'lost.txt' });
    expectServiceUnavailable(response);
    // Each attempt ran out its request timeout or was cut by the budget; none started after the budget ended.
    expect(held.fired).toBeGreaterThanOrEqual(1);
    expect(held.fired).toBeLessThanOrEqual(DYNAMODB_ATTEMPTS_IN_BUDGET);
    // What was held has no client left to answer: dropped, never run.
    held.release();

    // The fallback asked whether the record was stored (no) and handed the file to the cleanup.
    await expectNothingLeft(f, user);
  });

  it('an upload whose record transaction DynamoDB applied but never acknowledged answers 201 in time: the fallback read finds it', async () => {
    const f = faultyApi();
    const user = 'timeout-dynamodb-applied';
    const stalled = f.dynamodb.inject({
      match: dynamodbCall('TransactWriteItems', [user]),
      times: 10,
      fault: { kind: 'stall', ms: STALL_MS },
    });

    const response = await upload(f.t, user, { bytes: 'recorded, never acknowledged', filename: 'kept.txt' });
    expect(response.status).toBe(201);
    expect(stalled.fired).toBeGreaterThanOrEqual(1);
    expect(stalled.fired).toBeLessThanOrEqual(DYNAMODB_ATTEMPTS_IN_BUDGET);
    expect((await download(response.body.file_url)).bytes.toString()).toBe('recorded, never acknowledged');

    const { violations, views } = await settledAudit(f, [user]);
    expect(violations).toEqual([]);
    expect(views.get(user)!.attachments.map((attachment) => attachment.id)).toEqual([response.body.id]);
  });

  it('a read whose DynamoDB answers all stall answers 503 in time', async () => {
    const f = faultyApi();
    const user = 'timeout-reader';
    const created = await f.t.call(user, 'POST', '/v1/conversations', { form: { contact_id: 'slow' } });
    expect(created.status).toBe(201);
    f.dynamodb.inject({ match: dynamodbCall('GetItem', [created.body.id]), times: 10, fault: { kind: 'stall', ms: STALL_MS } });

    expectServiceUnavailable(await f.t.call(user, 'GET', `/v1/conversations/${created.body.id}`));
  });
});
