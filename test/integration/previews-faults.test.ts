import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { previewFunction } from '../../infra/declarations/function-settings.js';
import { DYNAMODB_TIMEOUTS } from '../../shared/dynamo/client.js';
import { PREVIEWS_PREFIX } from '../../shared/files/keys.js';
import { PREVIEW_DELIVERIES, PREVIEW_TIMEOUT_SECONDS } from '../../shared/previews/delivery.js';
import { S3_TIMEOUTS } from '../../shared/s3/client.js';
import { fileKeyOf, upload } from '../support/attachments.js';
import { type FeedEvent, feedOf } from '../support/audit.js';
import { eventually } from '../support/eventually.js';
import { dynamodbCall, type ProxiedRequest, signedBy } from '../support/fault-proxy.js';
import { type FaultyApi, faultyApiForFile } from '../support/faulty-api.js';
import { png } from '../support/images.js';

/**
 * The preview worker under the faults the write protocols are held to: a
 * thumbnail stored whose answers were lost, the settling transaction applied
 * and its answer lost (the request is delivered again: one event), S3 failing
 * every delivery (the last settles `failed`, nothing left pending or stored),
 * and the record deleted while the worker renders (its thumbnails go too).
 * Read through the API and the bucket.
 */
// A failed request comes back after 300 ms here (minutes on AWS): the deliveries run within the test.
// Scanning off: this file counts one protocol's calls under a fault rule, which the scanner's reads and the scan
// results' writes would meet too; scanning under faults is randomized-faults.test.ts's and scanning.test.ts's.
const faultyApi = faultyApiForFile({ previewVisibilityMs: 300, env: { SCANNING: 'off' } });
let f: FaultyApi;
beforeEach(() => {
  f = faultyApi();
});

const freshUser = () => `preview-fault-${randomBytes(4).toString('hex')}`;

async function uploadImage(userId: string) {
  const response = await upload(f.t, userId, { bytes: await png(640, 480), filename: 'p.png', type: 'image/png' });
  expect(response.status, response.text).toBe(201);
  expect(response.body.preview.status).toBe('pending');
  return response.body as { id: string; file_url: string };
}

async function settledPreview(userId: string, id: string) {
  const read = await eventually(
    () => f.t.call(userId, 'GET', `/v1/attachments/${id}`),
    (response) => response.status === 200 && response.body.preview.status !== 'pending',
    30_000,
  );
  expect(read.body.preview.status, JSON.stringify(read.body.preview)).not.toBe('pending');
  return read.body.preview as { status: string; thumbnails: { url: string }[] };
}

const previewEvents = async (userId: string): Promise<FeedEvent[]> =>
  (await feedOf(f.t, userId)).filter((event) => event.type === 'attachment.updated');

/** The thumbnails stored for an attachment, read from the bucket behind the proxy. */
const storedThumbnails = async (id: string) => (await f.storedKeys(PREVIEWS_PREFIX)).filter((key) => key.includes(`/${id}/`));

/** The worker's reads and writes of one file's objects (the file, its thumbnails), as S3 sees them. */
const s3Of = (method: string, key: string) => (request: ProxiedRequest) =>
  request.target === undefined && request.method === method && request.path.includes(key);

describe('the preview worker', () => {
  it('stores a thumbnail whose every answer was lost, is delivered again, and settles ready once (one event)', async () => {
    const userId = freshUser();
    const rule = f.s3.inject({
      match: (request) => request.method === 'PUT' && request.path.includes(`/${PREVIEWS_PREFIX}`),
      times: S3_TIMEOUTS.maxAttempts,
      fault: { kind: 'reset_after' },
    });
    const { id } = await uploadImage(userId);
    const preview = await settledPreview(userId, id);
    expect(rule.fired).toBe(S3_TIMEOUTS.maxAttempts);
    expect(preview.status).toBe('ready');
    expect(await storedThumbnails(id)).toHaveLength(2);
    expect(await previewEvents(userId)).toHaveLength(1);
  });

  it('settles once when the settling transaction was applied and every answer lost: the delivery again finds it settled, no second event', async () => {
    const userId = freshUser();
    const rule = f.dynamodb.inject({
      // The worker's one transaction, the settling one (the upload's own, which writes the record pending, is not the worker's).
      match: (request) => dynamodbCall('TransactWriteItems', [userId])(request) && signedBy(previewFunction.name)(request),
      times: DYNAMODB_TIMEOUTS.maxAttempts,
      fault: { kind: 'reset_after' },
    });
    const { id } = await uploadImage(userId);
    const preview = await settledPreview(userId, id);
    expect(preview.status).toBe('ready');
    // The record reads ready from the first attempt on, while the SDK still resends: the queue is empty only once
    // that delivery has given up and the next one (its request came back after 300 ms) has run.
    await eventually(
      async () => f.t.api.previews.depth,
      (depth) => depth === 0,
    );
    expect(f.t.api.previews.depth).toBe(0);
    expect(rule.fired).toBe(DYNAMODB_TIMEOUTS.maxAttempts);
    const events = await previewEvents(userId);
    expect(events).toHaveLength(1);
    expect(events[0]!.data.previous_attributes).toEqual({
      preview: { status: 'pending', width: null, height: null, placeholder: null, thumbnails: [] },
    });
  });

  it('settles failed on the last delivery when S3 fails every one: not pending forever, nothing stored, nothing dead-lettered', async () => {
    const userId = freshUser();
    const uploaded = await uploadImage(userId);
    // Every read of the file from now on is cut before S3 sees it (the upload itself is done).
    const rule = f.s3.inject({ match: s3Of('GET', fileKeyOf(uploaded)), times: 1_000, fault: { kind: 'reset_before' } });
    const preview = await settledPreview(userId, uploaded.id);
    expect(preview).toEqual({ status: 'failed', width: null, height: null, placeholder: null, thumbnails: [] });
    expect(rule.fired).toBe(PREVIEW_DELIVERIES * S3_TIMEOUTS.maxAttempts);
    rule.release();
    expect(await storedThumbnails(uploaded.id)).toEqual([]);
    expect(f.t.api.previews.deadLetters).toEqual([]);
    expect(await previewEvents(userId)).toHaveLength(1);
  });

  it('settles failed on a last delivery whose read of the file stalls until its time for calls is spent', async () => {
    const userId = freshUser();
    const uploaded = await uploadImage(userId);
    const reads = s3Of('GET', fileKeyOf(uploaded));
    const earlier = (PREVIEW_DELIVERIES - 1) * S3_TIMEOUTS.maxAttempts;
    // The last delivery's read hangs past every attempt's timeout: its calls stop where the budget ends them. (Rules
    // are asked in order and the first that fires wins: this one counts every read, the earlier deliveries' too.)
    const stalled = f.s3.inject({ match: reads, nth: earlier + 1, times: 1_000, fault: { kind: 'stall', ms: 120_000 } });
    const cut = f.s3.inject({ match: reads, times: earlier, fault: { kind: 'reset_before' } });
    const read = await eventually(
      () => f.t.call(userId, 'GET', `/v1/attachments/${uploaded.id}`),
      (response) => response.status === 200 && response.body.preview.status !== 'pending',
      PREVIEW_TIMEOUT_SECONDS * 1000 * 2,
    );
    expect(read.body.preview).toEqual({ status: 'failed', width: null, height: null, placeholder: null, thumbnails: [] });
    expect(cut.fired).toBe(earlier);
    expect(stalled.fired).toBeGreaterThan(0);
    stalled.release();
    expect(f.t.api.previews.deadLetters).toEqual([]);
  });

  it('removes its thumbnails when the record was deleted while it rendered: no thumbnail outlives its record, no event', async () => {
    const userId = freshUser();
    // Both thumbnail writes wait until the record is gone and the cleanup has removed the file (and what thumbnails it found).
    const held = f.s3.inject({
      match: (request) => request.method === 'PUT' && request.path.includes(`/${PREVIEWS_PREFIX}`),
      times: 2,
      fault: { kind: 'hold' },
    });
    const uploaded = await uploadImage(userId);
    await held.hit;
    const deleted = await f.t.call(userId, 'DELETE', `/v1/attachments/${uploaded.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    const fileGone = await eventually(
      async () => (await f.storedKeys(fileKeyOf(uploaded))).length === 0,
      (gone) => gone,
    );
    expect(fileGone, 'the cleanup removed the file').toBe(true);
    held.release();
    // The thumbnails are written only now; the worker then finds its record gone and removes them.
    const left = await eventually(
      async () => ({ depth: f.t.api.previews.depth, stored: await storedThumbnails(uploaded.id) }),
      ({ depth, stored }) => depth === 0 && stored.length === 0,
    );
    expect(held.fired).toBe(2);
    expect(left).toEqual({ depth: 0, stored: [] });
    expect(await previewEvents(userId)).toEqual([]);
  });
});
