import { beforeEach, describe, expect, it } from 'vitest';
import { handler as scanRecorder } from '../../functions/scan-result.js';
import { scanRecorderFunction, scanTimeoutFunction } from '../../infra/declarations/function-settings.js';
import { LOCAL_ACCOUNT } from '../../infra/local/gateway.js';
import { actingAs } from '../../infra/local/iam.js';
import { resultEvent } from '../../infra/local/scanner.js';
import { download, fileKeyOf } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import { cutEvery, dynamodbCall, type ProxiedRequest, signedBy } from '../support/fault-proxy.js';
import { type FaultyApi, faultyApiForFile } from '../support/faulty-api.js';
import { freshId, type Member, sharingCalls, type Thread } from '../support/sharing.js';

/**
 * The scan timeout (docs/decisions.md, "The scan timeout") under faults,
 * with the scanner's stand-in answering nothing within the test: the
 * fan-out's send of a file's timer cut before SQS sees it, or its answer
 * lost (the timer sent again), still ends the file `unscannable` once; a
 * result the recorder kept but could not record is applied when the timer
 * comes. Audited through the API: every reader's view and feed.
 */
const faultyApi = faultyApiForFile({ scanDelayMs: 3_600_000, env: { SCAN_TIMEOUT_SECONDS: '2' } });
let f: FaultyApi;
beforeEach(() => {
  f = faultyApi();
});
const s = sharingCalls(() => f.t);

/** Two members of a direct thread, each with their side. */
async function pair() {
  const alice: Member = { id: freshId('alice') };
  const bob: Member = { id: freshId('bob') };
  const side = (await s.openSide(alice, { contact_id: bob.id } satisfies Thread)).body.id;
  await s.openSide(bob, { contact_id: alice.id });
  return { alice, bob, side };
}

/** The fan-out's sends of timers: this file's server has its own queue, and its tests upload one file at a time. */
const timerSend = (request: ProxiedRequest) => request.target === 'AmazonSQS.SendMessageBatch';

/** Each reader's scan changes of the file in their feed, once it reads `status`: [previous, new] scan_status. */
async function scanChangesOf(who: Member, id: string, status: string) {
  const events = await s.feedOf(who, (feed) =>
    feed.some((event) => event.data.object.id === id && event.data.object.scan_status === status),
  );
  return events
    .filter((event) => event.type === 'attachment.updated' && event.data.previous_attributes?.scan_status !== undefined)
    .filter((event) => event.data.object.id === id)
    .map((event) => [event.data.previous_attributes?.scan_status, event.data.object.scan_status]);
}

describe("the scan timer's send", () => {
  it.each([
    ['cut before SQS sees it (the record written, the send failed: the stream delivers the batch again)', 'reset_before'],
    ['answered and the answer lost (the timer sent again: two come back)', 'reset_after'],
  ] as const)('%s still ends the file unscannable, once for each reader', async (_case, kind) => {
    const { alice, bob, side } = await pair();
    const rule = f.sqs.inject({ match: timerSend, times: 2, fault: { kind } });
    const uploaded = await s.upload(alice, side);
    expect(uploaded.scan_status).toBe('pending');
    const theirs = await s.scanned(bob, uploaded.id, 'unscannable');
    expect(theirs.file_url).toBeNull();
    expect(rule.fired).toBe(2);
    for (const who of [alice, bob]) expect(await scanChangesOf(who, uploaded.id, 'unscannable')).toEqual([['pending', 'unscannable']]);
  });
});

describe('a result the recorder kept and could not record', () => {
  it("is applied when the file's timer comes: clean, and the other member downloads it, told once", async () => {
    const { alice, bob, side } = await pair();
    // The timer waits until the result is kept: held at the proxy (the fan-out's sends time out and are retried).
    const held = f.sqs.inject({ match: timerSend, times: Number.POSITIVE_INFINITY, fault: { kind: 'hold' } });
    const uploaded = await s.upload(alice, side);
    await held.hit;
    // Every transaction of the recorder is cut: it keeps the result, then fails (on AWS: its retries, then its dead letters).
    const cut = cutEvery(
      f.dynamodb,
      (request) => dynamodbCall('TransactWriteItems')(request) && signedBy(scanRecorderFunction.name)(request),
    );
    const recorder = actingAs(scanRecorderFunction.name, scanRecorder.withComposition(f.t.api.composition));
    const { region, filesBucket } = f.t.api.config;
    const event = resultEvent(
      { region, account: LOCAL_ACCOUNT, bucket: filesBucket, planArn: 'plan' },
      fileKeyOf(uploaded),
      'NO_THREATS_FOUND',
    );
    await expect(recorder(event)).rejects.toThrow();
    expect(cut.fired).toBeGreaterThan(0);
    expect((await s.attachment(alice, uploaded.id)).body.scan_status).toBe('pending');
    const timerSettling = f.dynamodb.inject({
      match: (request) => dynamodbCall('TransactWriteItems')(request) && signedBy(scanTimeoutFunction.name)(request),
      times: Number.POSITIVE_INFINITY,
      fault: { kind: 'delay', ms: 1 },
    });
    held.release();

    const theirs = await s.scanned(bob, uploaded.id, 'clean');
    expect((await download(theirs.file_url)).status).toBe(200);
    for (const who of [alice, bob]) expect(await scanChangesOf(who, uploaded.id, 'clean')).toEqual([['pending', 'clean']]);
    // The timer's own transaction settled it (as its function), not the recorder's, whose every one is cut.
    expect(timerSettling.fired).toBe(1);
  });
});

describe('a timer that comes after the result', () => {
  it('changes nothing: the file stays clean, each reader told of its scan once', async () => {
    const { alice, bob, side } = await pair();
    const before = { sends: f.sqs.stats().requests, taken: f.t.api.scanTimers!.sent };
    // Held at the proxy until the result is recorded: the fan-out's sends time out and are sent again, so several come.
    const held = f.sqs.inject({ match: timerSend, times: Number.POSITIVE_INFINITY, fault: { kind: 'hold' } });
    const uploaded = await s.upload(alice, side);
    await held.hit;
    const recorder = actingAs(scanRecorderFunction.name, scanRecorder.withComposition(f.t.api.composition));
    const { region, filesBucket } = f.t.api.config;
    await recorder(
      resultEvent({ region, account: LOCAL_ACCOUNT, bucket: filesBucket, planArn: 'plan' }, fileKeyOf(uploaded), 'NO_THREATS_FOUND'),
    );
    expect((await s.attachment(alice, uploaded.id)).body.scan_status).toBe('clean');
    held.release();
    // Every send the proxy saw reached the queue, and every timer has come and gone (each is handled, then deleted).
    await eventually(
      async () => ({
        sends: f.sqs.stats().requests - before.sends,
        taken: f.t.api.scanTimers!.sent - before.taken,
        depth: f.t.api.scanTimers!.depth,
      }),
      ({ sends, taken, depth }) => sends > 0 && taken === sends && depth === 0,
      30_000,
    );
    const theirs = await s.scanned(bob, uploaded.id, 'clean');
    expect((await download(theirs.file_url)).status).toBe(200);
    for (const who of [alice, bob]) expect(await scanChangesOf(who, uploaded.id, 'clean')).toEqual([['pending', 'clean']]);
  });
});
