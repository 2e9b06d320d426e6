import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { logger } from '../../shared/observability.js';
import type { Json, TestResponse } from '../support/api.js';
import { uploadForm } from '../support/attachments.js';
import { feedOf } from '../support/audit.js';
import { faultyApiForFile } from '../support/faulty-api.js';
import { freshId, type Member, sharingApi } from '../support/sharing.js';

/**
 * Contention is not an outage (docs/api.md, "Errors"; docs/consistency.md):
 * every write of a user moves their feed's head, and so does every upload
 * of another member of their group, by the fan-out into their side. Here a
 * user writes steadily, several requests at once (uploads, renames, pins),
 * while the other members upload into the group's thread, so their writes
 * and the fan-out meet on the user's head and side; no answer may be a 5xx,
 * and every write acknowledged lands, with its event, in the user's feed.
 * Contention that outlasts a request's time budget answers 429
 * write_contention with Retry-After and writes nothing. A starved machine may
 * also run a request out of its budget in a backend call: 503
 * service_unavailable, allowed only when the cause the server logged is a
 * backend call that did not answer in time, never contention. The handlers
 * run in this process: their request lines say how many retries contention
 * caused, so the test knows the writes did meet, and their failure lines say
 * why a 5xx was answered.
 */
const s = sharingApi();
/** A server whose transactions the proxy may answer as contended; a short function timeout ends a budget soon. */
const faultyApi = faultyApiForFile({ functionTimeoutMs: 3_000 });

const OWN_WRITES = 60;
const IN_FLIGHT = 6;
const OTHER_MEMBERS = 4;
const UPLOADS_PER_MEMBER = 8;

let requestLines: Record<string, Json>[] = [];
/** What the server logged as the cause of each 5xx, by request id (shared/observability.ts, recordFailure). */
let failureCauses = new Map<string, string>();
beforeEach(() => {
  requestLines = [];
  failureCauses = new Map();
  const info = logger.info.bind(logger);
  vi.spyOn(logger, 'info').mockImplementation((message: unknown, ...rest: unknown[]) => {
    if (message === 'request' && typeof rest[0] === 'object') requestLines.push(rest[0] as Record<string, Json>);
    return (info as (...args: unknown[]) => void)(message, ...rest);
  });
  const error = logger.error.bind(logger);
  vi.spyOn(logger, 'error').mockImplementation((message: unknown, ...rest: unknown[]) => {
    const line = rest[0] as Record<string, Json> | undefined;
    if (message === 'request failed' && line) failureCauses.set(line.request_id, line.error?.name ?? String(line.error));
    return (error as (...args: unknown[]) => void)(message, ...rest);
  });
});
afterEach(() => vi.restoreAllMocks());

/** A backend call that did not answer within the request's budget (shared/deadline.ts) or the SDK's timeout. */
const TIMED_OUT_CAUSES = new Set(['DeadlineExceeded', 'TimeoutError', 'RequestTimeout']);

type Outcome = 'written' | 'contended' | 'timed out';

/**
 * What an answer says happened, or why it is wrong: 2xx written; 429
 * write_contention with Retry-After contended (nothing written); 503
 * service_unavailable timed out, only when the server logged a timed-out
 * backend call as its cause. Anything else (any other 5xx, a 503 caused by
 * contention or anything but a timeout, any other refusal) is a violation.
 */
function outcomeOf(response: TestResponse): Outcome | string {
  const requestId = response.headers.get('x-request-id') ?? '';
  if (response.status < 300) return 'written';
  const error = response.body?.error ?? {};
  if (
    response.status === 429 &&
    error.type === 'rate_limit_error' &&
    error.code === 'write_contention' &&
    response.headers.get('retry-after')
  )
    return 'contended';
  const cause = failureCauses.get(requestId);
  if (response.status === 503 && error.code === 'service_unavailable' && cause && TIMED_OUT_CAUSES.has(cause)) return 'timed out';
  return `${response.status} ${response.text} (logged cause: ${cause ?? 'none'})`;
}

/** Runs `count` jobs, `limit` at a time. */
async function pool(count: number, limit: number, job: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < count) await job(next++);
    }),
  );
}

describe("a user's writes while the other members' uploads fan out into their feed", () => {
  it('never answer 5xx for contention: each acknowledged write lands once in their feed, and the fan-out reaches their side', async () => {
    const g = freshId('busy-g');
    const user: Member = { id: freshId('busy-u'), groups: [g] };
    const others: Member[] = Array.from({ length: OTHER_MEMBERS }, () => ({ id: freshId('busy-m'), groups: [g] }));
    const side = (await s.openSide(user, { group_id: g })).body;
    const otherSides = await Promise.all(others.map(async (member) => (await s.openSide(member, { group_id: g })).body));
    const first = await s.upload(user, side.id, { bytes: randomBytes(16), filename: 'first.txt' });

    const answers: { what: string; response: TestResponse }[] = [];
    const own = pool(OWN_WRITES, IN_FLIGHT, async (index) => {
      const kind = index % 3;
      const response =
        kind === 0
          ? await s.call(user, 'POST', '/v1/attachments', {
              body: uploadForm({ bytes: randomBytes(16), filename: `own-${index}.txt` }, { conversation_id: side.id }),
            })
          : kind === 1
            ? await s.call(user, 'PUT', `/v1/attachments/${first.id}`, { form: { filename: `renamed-${index}.txt` } })
            : await s.call(user, 'PUT', `/v1/conversations/${side.id}`, {
                form: { is_pinned: String(index % 2 === 0), pinned_message_id: `m-${index}` },
              });
      answers.push({ what: ['upload', 'rename', 'pin'][kind]!, response });
    });
    const fannedOut = pool(OTHER_MEMBERS * UPLOADS_PER_MEMBER, OTHER_MEMBERS, async (index) => {
      const member = index % OTHER_MEMBERS;
      const response = await s.call(others[member]!, 'POST', '/v1/attachments', {
        body: uploadForm({ bytes: randomBytes(16), filename: `other-${index}.txt` }, { conversation_id: otherSides[member]!.id }),
      });
      answers.push({ what: 'other upload', response });
    });
    await Promise.all([own, fannedOut]);

    const judged = answers.map((answer) => ({ ...answer, outcome: outcomeOf(answer.response) }));
    const violations = judged
      .filter(({ outcome }) => !['written', 'contended', 'timed out'].includes(outcome))
      .map(({ what, outcome }) => `${what}: ${outcome}`);
    expect(violations).toEqual([]);
    // The writes did meet: some of their requests were retried for contention.
    const contended = requestLines.filter((line) => (line.retries?.contention ?? 0) > 0);
    expect(contended.length, 'requests retried for contention').toBeGreaterThan(0);

    // Each of the user's acknowledged writes is in their feed, once, with its request id; a contended one is not.
    const ownAnswers = judged.filter(({ what }) => what !== 'other upload');
    const feed = await s.feed(user);
    const feedRequests = feed.map((event) => event.request_id);
    const requestOf = ({ response }: { response: TestResponse }) => response.headers.get('x-request-id');
    const missing = ownAnswers.filter((answer) => answer.outcome === 'written' && !feedRequests.includes(requestOf(answer)));
    expect(missing.map(({ what }) => what)).toEqual([]);
    const writtenAnyway = ownAnswers.filter((answer) => answer.outcome === 'contended' && feedRequests.includes(requestOf(answer)));
    expect(writtenAnyway.map(({ what }) => what)).toEqual([]);
    const uploadsInFeed = feed.filter((event) => event.type === 'attachment.created').map((event) => event.data.object.id);
    expect(new Set(uploadsInFeed).size).toBe(uploadsInFeed.length);

    // The other members' uploads reached the user's side: its last_active_at is at least the latest of them.
    const latest = Math.max(
      ...judged
        .filter(({ what, outcome }) => what === 'other upload' && outcome === 'written')
        .map(({ response }) => response.body.created_at as number),
    );
    await s.sideActiveAt(user, { group_id: g }, latest);
  }, 120_000);
});

describe('writes that meet contention for longer than their time budget', () => {
  it('answer 429 write_contention with Retry-After, never a 5xx, and write nothing', async () => {
    const f = faultyApi();
    const user = freshId('held-u');
    const created = await f.t.call(user, 'POST', '/v1/conversations', { form: { contact_id: 'them' } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    // Every transaction of the user's conversation meets another that holds its items, for as long as the rule lasts.
    const held = f.dynamodb.inject({
      match: (request) => request.target === 'DynamoDB_20120810.TransactWriteItems' && request.body.includes(user),
      times: Number.POSITIVE_INFINITY,
      fault: { kind: 'conflict' },
    });
    // Each request retries until its budget leaves no room for another attempt. On a starved machine an attempt may
    // itself run out of the budget first (a timed-out call, 503): so rounds go on until contention has been answered.
    const judged: { outcome: Outcome | string; requestId: string | null }[] = [];
    for (let round = 0; round < 5 && !judged.some(({ outcome }) => outcome === 'contended'); round += 1) {
      const answers = await Promise.all(
        [true, false, true].map((pinned) =>
          f.t.call(user, 'PUT', `/v1/conversations/${id}`, { form: { is_pinned: String(pinned), pinned_message_id: `m-${round}` } }),
        ),
      );
      judged.push(...answers.map((response) => ({ outcome: outcomeOf(response), requestId: response.headers.get('x-request-id') })));
    }
    expect(held.fired).toBeGreaterThan(0);
    expect(judged.filter(({ outcome }) => !['contended', 'timed out'].includes(outcome))).toEqual([]);
    expect(
      judged.map(({ outcome }) => outcome),
      'contention past the budget answered',
    ).toContain('contended');
    held.release();

    // Nothing was written: the conversation is as created, and its feed holds only its creation.
    const stored = await f.t.call(user, 'GET', `/v1/conversations/${id}`);
    expect(stored.body).toMatchObject({ is_pinned: false, pinned_message_id: null });
    expect((await feedOf(f.t, user)).map((event) => event.type)).toEqual(['conversation.created']);
  }, 120_000);
});
