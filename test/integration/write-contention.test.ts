import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { logger } from '../../shared/observability.js';
import type { Json, TestResponse } from '../support/api.js';
import { uploadForm } from '../support/attachments.js';
import { freshId, type Member, sharingApi } from '../support/sharing.js';

/**
 * Contention is not an outage (docs/api.md, "Errors"; docs/consistency.md):
 * every write of a user moves their feed's head, and so does every upload
 * of another member of their group, by the fan-out into their side. Here a
 * user writes steadily, several requests at once (uploads, renames, pins),
 * while the other members upload into the group's thread, so their writes
 * and the fan-out meet on the user's head and side; no answer may be a 5xx,
 * and every write lands, with its event, in the user's feed. The handlers
 * run in this process: their request lines say how many retries contention
 * caused, so the test knows the writes did meet.
 */
const s = sharingApi();

const OWN_WRITES = 60;
const IN_FLIGHT = 6;
const OTHER_MEMBERS = 4;
const UPLOADS_PER_MEMBER = 8;

let requestLines: Record<string, Json>[] = [];
beforeEach(() => {
  requestLines = [];
  const info = logger.info.bind(logger);
  vi.spyOn(logger, 'info').mockImplementation((message: unknown, ...rest: unknown[]) => {
    if (message === 'request' && typeof rest[0] === 'object') requestLines.push(rest[0] as Record<string, Json>);
    return (info as (...args: unknown[]) => void)(message, ...rest);
  });
});
afterEach(() => vi.restoreAllMocks());

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
  it('never answer 5xx: each lands once in their feed, and the fan-out reaches their side', async () => {
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

    const failures = answers
      .filter(({ response }) => response.status >= 500)
      .map(({ what, response }) => `${what}: ${response.status} ${response.text}`);
    expect(failures).toEqual([]);
    // Contention that outlasts the whole time budget would be a 429; here it never lasts that long.
    const refused = answers
      .filter(({ response }) => response.status >= 400)
      .map(({ what, response }) => `${what}: ${response.status} ${response.text}`);
    expect(refused).toEqual([]);
    // The writes did meet: some of their requests were retried for contention.
    const contended = requestLines.filter((line) => (line.retries?.contention ?? 0) > 0);
    expect(contended.length, 'requests retried for contention').toBeGreaterThan(0);

    // Each of the user's acknowledged writes is in their feed, once, with its request id.
    const ownAnswers = answers.filter(({ what }) => what !== 'other upload');
    const feed = await s.feed(user);
    const feedRequests = new Set(feed.map((event) => event.request_id));
    const missing = ownAnswers.filter(({ response }) => !feedRequests.has(response.headers.get('x-request-id'))).map(({ what }) => what);
    expect(missing).toEqual([]);
    const uploadsInFeed = feed.filter((event) => event.type === 'attachment.created').map((event) => event.data.object.id);
    expect(new Set(uploadsInFeed).size).toBe(uploadsInFeed.length);

    // The other members' uploads reached the user's side: its last_active_at is at least the latest of them.
    const latest = Math.max(
      ...answers.filter(({ what }) => what === 'other upload').map(({ response }) => response.body.created_at as number),
    );
    await s.sideActiveAt(user, { group_id: g }, latest);
  }, 120_000);
});
