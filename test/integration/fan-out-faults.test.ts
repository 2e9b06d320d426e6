import { beforeEach, describe, expect, it } from 'vitest';
import { DYNAMODB_TIMEOUTS } from '../../shared/dynamo/client.js';
import { groupThreadKey, threadFeedKey } from '../../shared/dynamo/keys.js';
import type { Json } from '../support/api.js';
import { upload, uploadForm } from '../support/attachments.js';
import { feedOf, type ListedConversation, listAll } from '../support/audit.js';
import { eventually } from '../support/eventually.js';
import { isStreamRead, type ProxiedRequest, type Rule } from '../support/fault-proxy.js';
import { type FaultyApi, faultyApiForFile } from '../support/faulty-api.js';

/**
 * The fan-out (functions/fan-out.ts) under the faults the write protocols are
 * held to: a conversation write of the fan-out whose answer is lost after
 * DynamoDB applied it, so that the stream record is delivered again; DynamoDB
 * down while a record is fanned out; the table throttling the fan-out's
 * writes and reads, in each of the three forms DynamoDB answers it; and the
 * contact's own POST racing the fan-out's create of their side. The fault proxy holds and cuts exactly the
 * request each case is about; the test reads the outcome through the API.
 */
const clock = { now: 1_900_000_000 };
/** Above the groups of three below (small threads, written side by side); the large thread's tests make a group of four. */
const LARGE_GROUP_SIDES = 4;
// Scanning off: these count each change's events in every feed, and a scan result is a change of its own (scanning
// under faults: randomized-faults.test.ts).
const faultyApi = faultyApiForFile({ clock: () => clock.now, env: { LARGE_GROUP_SIDES: String(LARGE_GROUP_SIDES), SCANNING: 'off' } });
let f: FaultyApi;
beforeEach(() => {
  f = faultyApi();
  // Every test's uploads at times of their own, later than any before.
  clock.now += 1_000;
});

interface Side extends ListedConversation {
  last_opened_at: number | null;
}

/** What a request asks DynamoDB to do (its JSON body). */
const bodyOf = (request: ProxiedRequest): Record<string, Json> => (request.target ? JSON.parse(request.body.toString('utf8')) : {});
const isCall = (request: ProxiedRequest, operation: string) => request.target === `DynamoDB_20120810.${operation}`;
/** The items a write puts or updates: an UpdateItem's key, or each item of a transaction. */
const writtenKeys = (request: ProxiedRequest): { pk?: { S?: string } }[] => {
  const body = bodyOf(request);
  if (isCall(request, 'UpdateItem') || isCall(request, 'PutItem')) return [body.Key ?? body.Item ?? {}];
  if (isCall(request, 'TransactWriteItems'))
    return (body.TransactItems ?? []).map((item: Json) => item.Put?.Item ?? item.Update?.Key ?? item.ConditionCheck?.Key ?? {});
  return [];
};
/** A write to an item of `userId`'s (their side, or its uniqueness record): in these tests only the fan-out writes there, but where a test says otherwise. */
const writesOf = (userId: string) => (request: ProxiedRequest) => writtenKeys(request).some((key) => key.pk?.S === userId);
/** The fan-out's transaction that creates `userId`'s side (with its uniqueness record). */
const createsSideOf = (userId: string) => (request: ProxiedRequest) => isCall(request, 'TransactWriteItems') && writesOf(userId)(request);
/** A write that sets `at` on an item of `userId`'s. */
const writesTimeOf = (userId: string, at: number) => (request: ProxiedRequest) =>
  writesOf(userId)(request) && request.body.includes(`"N":"${at}"`);
/** The read that finds `userId`'s side of the direct thread with `contactId` (their uniqueness record). */
const findsSideOf = (userId: string, contactId: string) => (request: ProxiedRequest) =>
  isCall(request, 'GetItem') && bodyOf(request).Key?.pk?.S === userId && request.body.includes(`contact#${contactId}`);
/** Every try of one delivery's write (`match`) lands and loses its answer: the SDK gives up, the batch fails, its records come again. */
const loseEveryTry = (match: (request: ProxiedRequest) => boolean) =>
  f.dynamodb.inject({ match, times: DYNAMODB_TIMEOUTS.maxAttempts, fault: { kind: 'reset_after' } });
const everyTryMade = (rule: Rule) =>
  eventually(
    async () => rule.fired,
    (fired) => fired === DYNAMODB_TIMEOUTS.maxAttempts,
  );
/** Counts (and lets through) the fan-out's look-ups of `userId`'s side: one per delivery of a record of the thread. */
const countDeliveries = (userId: string, contactId: string) =>
  f.dynamodb.inject({ match: findsSideOf(userId, contactId), times: Number.POSITIVE_INFINITY, fault: { kind: 'delay', ms: 0 } });

async function conversationWith(userId: string, contactId: string): Promise<Side> {
  const response = await f.t.call(userId, 'POST', '/v1/conversations', { form: { contact_id: contactId } });
  expect(response.status).toBe(201);
  return response.body;
}

/** `userId`'s sides of the direct thread with `contactId`: one, or none yet; two would be the bug. */
const sidesOf = (userId: string, contactId: string) =>
  listAll<Side>(f.t, userId, `/v1/conversations?contact_id=${encodeURIComponent(contactId)}`);

async function uploadInto(userId: string, conversationId: string, filename: string): Promise<{ id: string; created_at: number }> {
  const response = await upload(f.t, userId, { bytes: `bytes of ${filename}`, filename }, { conversation_id: conversationId });
  expect(response.status).toBe(201);
  expect(response.body.created_at).toBe(clock.now);
  return response.body;
}

/**
 * `userId`'s feed as the fan-out left it: each upload of `uploads` exactly
 * once as attachment.created, whatever was delivered again; their side
 * created once (by the fan-out or their own POST); and the fan-out's
 * conversation.updated events each moving last_active_at forward from where
 * the one before left it (none repeated).
 */
async function expectEachChangeOnce(userId: string, uploads: { id: string }[]) {
  const events = (await feedOf(f.t, userId)).reverse();
  const ofType = (type: string) => events.filter((event) => event.type === type);
  expect(
    ofType('attachment.created')
      .map((event) => event.data.object.id)
      .sort(),
  ).toEqual(uploads.map((u) => u.id).sort());
  expect(ofType('conversation.created')).toHaveLength(1);
  const moves = ofType('conversation.updated').map(
    (event) => [event.data.previous_attributes?.last_active_at, event.data.object.last_active_at] as [number | null, number],
  );
  for (const [index, [from, to]] of moves.entries()) {
    expect(to).toBeGreaterThan(from ?? 0);
    if (index > 0) expect(from).toBe(moves[index - 1]![1]);
  }
}

/** The user's unread conversations (`unread=true`): an upload reaching a side makes it unread. */
const unreadIds = async (userId: string) => (await listAll<Side>(f.t, userId, '/v1/conversations?unread=true')).map((side) => side.id);

/** Reads `userId`'s side until the fan-out of an upload at `at` reached it. */
const reachedAt = (userId: string, contactId: string, at: number) =>
  eventually(
    () => sidesOf(userId, contactId),
    (sides) => sides.length > 0 && sides.every((side) => (side.last_active_at ?? 0) >= at),
  );

describe('a fan-out write whose answer is lost after DynamoDB applied it', () => {
  it("on every try of a delivery: the record is delivered again, and the contact's side moves once, to the upload's time", async () => {
    const [a, b] = ['fo-lost-a', 'fo-lost-b'];
    const mine = await conversationWith(a, b);
    const theirs = await conversationWith(b, a);
    const lost = loseEveryTry(writesOf(b));
    const deliveries = countDeliveries(b, a);
    const uploaded = await uploadInto(a, mine.id, 'lost-answer.txt');
    await everyTryMade(lost);
    const seen: (number | null)[] = [];
    const [side] = await eventually(
      async () => {
        const sides = await sidesOf(b, a);
        seen.push(...sides.map((s) => s.last_active_at));
        return sides;
      },
      (sides) => sides[0]?.last_active_at === uploaded.created_at,
    );

    // A later upload is fanned out only after the failed record went through: the poller never skips one.
    clock.now += 10;
    const later = await uploadInto(a, mine.id, 'after-the-retry.txt');
    await reachedAt(b, a, later.created_at);
    seen.push(...(await sidesOf(b, a)).map((s) => s.last_active_at));

    // The failed delivery, then at least one more: the retried record's own, or (when the later upload joined
    // its batch first) the later one's, which stands for both (each uploader's latest of a batch is delivered).
    expect(deliveries.fired).toBeGreaterThanOrEqual(2);
    expect(side).toMatchObject({ id: theirs.id, last_active_at: uploaded.created_at, last_opened_at: null });
    expect(await unreadIds(b)).toEqual([theirs.id]);
    // Every read showed nothing yet, the upload's time or the later one's, in that order.
    const times = seen.map((at) => at ?? 0);
    expect(times.filter((at) => ![0, uploaded.created_at, later.created_at].includes(at))).toEqual([]);
    expect(times).toEqual([...times].sort((x, y) => x - y));
    expect((await sidesOf(b, a)).map((s) => s.id)).toEqual([theirs.id]);
    await expectEachChangeOnce(b, [uploaded, later]);
  });

  it("never moves a side back: an earlier upload's record delivered again after a later one's landed leaves the later time", async () => {
    const [a, b] = ['fo-back-a', 'fo-back-b'];
    const mine = await conversationWith(a, b);
    const theirs = await conversationWith(b, a);
    // Both uploads reach the stream before either consumer reads it again: the fan-out gets them in one batch.
    const streamReads = f.dynamodb.inject({
      match: (request) => request.target === 'DynamoDBStreams_20120810.GetRecords',
      times: Number.POSITIVE_INFINITY,
      fault: { kind: 'hold' },
    });
    // Three pollers (cleanup, fan-out and the real-time publisher), each waiting on its one read: all are held.
    await eventually(
      async () => streamReads.fired,
      (fired) => fired >= 3,
    );
    const earlier = await uploadInto(a, mine.id, 'earlier.txt');
    clock.now += 10;
    const later = await uploadInto(a, mine.id, 'later.txt');
    // The batch delivers the later upload only (each uploader's latest); its write lands and its answers are lost,
    // so the batch fails and is handed again in halves: the earlier record alone, then the later one.
    const lost = loseEveryTry(writesTimeOf(b, later.created_at));
    // The fan-out finds b's side once per delivery: the third time is the later record's second delivery, after the earlier one's.
    const secondDelivery = f.dynamodb.inject({ match: findsSideOf(b, a), nth: 3, fault: { kind: 'hold' } });
    streamReads.release();

    await secondDelivery.hit;
    expect(lost.fired).toBe(DYNAMODB_TIMEOUTS.maxAttempts);
    const between = await sidesOf(b, a);
    secondDelivery.release();
    const settled = await reachedAt(b, a, later.created_at);

    expect(between.map((side) => [side.id, side.last_active_at])).toEqual([[theirs.id, later.created_at]]);
    expect(settled.map((side) => [side.id, side.last_active_at])).toEqual([[theirs.id, later.created_at]]);
    expect(earlier.created_at).toBeLessThan(later.created_at);
    await expectEachChangeOnce(b, [earlier, later]);
  });

  it("that creates the contact's side: the record is delivered again, and the side is one conversation, the contact's later POST finds it", async () => {
    const [a, b] = ['fo-create-a', 'fo-create-b'];
    const mine = await conversationWith(a, b);
    const lost = loseEveryTry(createsSideOf(b));
    const deliveries = countDeliveries(b, a);
    const uploaded = await uploadInto(a, mine.id, 'creates-their-side.txt');
    await everyTryMade(lost);
    const sides = await reachedAt(b, a, uploaded.created_at);
    // The record's next delivery (or any later one) must find the side, never make a second.
    clock.now += 10;
    const later = await uploadInto(a, mine.id, 'after-the-retry.txt');
    const after = await reachedAt(b, a, later.created_at);

    // The failed delivery, then at least one more (the retried record's, or the later one's standing for both).
    expect(deliveries.fired).toBeGreaterThanOrEqual(2);
    expect(sides).toHaveLength(1);
    expect(sides[0]).toMatchObject({
      contact_id: a,
      created_at: uploaded.created_at,
      last_active_at: uploaded.created_at,
      last_opened_at: null,
    });
    expect(after.map((side) => side.id)).toEqual([sides[0]!.id]);
    expect(await unreadIds(b)).toEqual([sides[0]!.id]);
    const posted = await f.t.call(b, 'POST', '/v1/conversations', { form: { contact_id: a } });
    expect(posted.status).toBe(200);
    expect(posted.body.id).toBe(sides[0]!.id);
    await expectEachChangeOnce(b, [uploaded, later]);
  });
});

describe('DynamoDB down while a record is fanned out', () => {
  it("the contact's side catches up once it is back: created once, at the upload's time", async () => {
    const [a, b] = ['fo-down-a', 'fo-down-b'];
    const mine = await conversationWith(a, b);
    // The fan-out has found that b holds no side; DynamoDB goes down before it writes one.
    const found = f.dynamodb.inject({ match: findsSideOf(b, a), fault: { kind: 'hold' } });
    const uploaded = await uploadInto(a, mine.id, 'while-down.txt');
    await found.hit;
    const refused: ProxiedRequest[] = [];
    const down = f.dynamodb.inject({
      match: (request) => refused.push(request) > 0,
      times: Number.POSITIVE_INFINITY,
      fault: { kind: 'reset_before' },
    });
    found.release();
    // Down for a while: the fan-out's next call for b (the read of b's feed before its write) was refused, and
    // after it the poller's reads of the stream, twice at least.
    const forB = (request: ProxiedRequest) => writesOf(b)(request) || (isCall(request, 'GetItem') && bodyOf(request).Key?.pk?.S === b);
    const after = await eventually(
      async () => refused.slice(refused.findIndex(forB) + 1),
      (later) => refused.some(forB) && later.filter(isStreamRead).length >= 2,
      // The poller backs off up to 4 s between tries, and a loaded machine stretches each: generous.
      60_000,
    );
    expect(refused.some(forB) && after.filter(isStreamRead).length >= 2).toBe(true);
    const whileDown = await f.t.call(a, 'GET', `/v1/conversations/${mine.id}`);
    down.release();

    expect(whileDown.status).toBe(503);
    const sides = await reachedAt(b, a, uploaded.created_at);
    expect(sides).toHaveLength(1);
    expect(sides[0]).toMatchObject({ contact_id: a, last_active_at: uploaded.created_at, last_opened_at: null });
    await expectEachChangeOnce(b, [uploaded]);
  });
});

describe('the table throttled while a record is fanned out', () => {
  it.each(['ProvisionedThroughputExceededException', 'ThrottlingException', 'TransactionCanceledException'] as const)(
    "answering %s to the fan-out's write for the contact, try after try: retried with backoff in the same delivery, the side moved once",
    async (as) => {
      const [a, b] = [`fo-throttled-${as}-a`, `fo-throttled-${as}-b`];
      const mine = await conversationWith(a, b);
      const theirs = await conversationWith(b, a);
      // Twice the SDK's own attempts: its retries alone give up, and a cancelled transaction it never retries.
      const tries = 2 * DYNAMODB_TIMEOUTS.maxAttempts;
      const throttled = f.dynamodb.inject({
        match: (request) => isCall(request, 'TransactWriteItems') && writesOf(b)(request),
        times: tries,
        fault: { kind: 'throttle', as },
      });
      const deliveries = countDeliveries(b, a);
      const uploaded = await uploadInto(a, mine.id, `throttled-${as}.txt`);
      const [side] = await reachedAt(b, a, uploaded.created_at);

      expect(throttled.fired).toBe(tries);
      // One delivery: the throttling was retried where it happened, the batch never failed.
      expect(deliveries.fired).toBe(1);
      expect(side).toMatchObject({ id: theirs.id, last_active_at: uploaded.created_at, last_opened_at: null });
      await expectEachChangeOnce(b, [uploaded]);
    },
  );

  it("answering the fan-out's reads of the contact's side with throttling: the delivery still reaches it once", async () => {
    const [a, b] = ['fo-throttled-read-a', 'fo-throttled-read-b'];
    const mine = await conversationWith(a, b);
    const theirs = await conversationWith(b, a);
    const tries = 2 * DYNAMODB_TIMEOUTS.maxAttempts;
    const throttled = f.dynamodb.inject({
      match: findsSideOf(b, a),
      times: tries,
      fault: { kind: 'throttle', as: 'ProvisionedThroughputExceededException' },
    });
    const uploaded = await uploadInto(a, mine.id, 'throttled-read.txt');
    const [side] = await reachedAt(b, a, uploaded.created_at);

    expect(throttled.fired).toBe(tries);
    expect(side).toMatchObject({ id: theirs.id, last_active_at: uploaded.created_at });
    await expectEachChangeOnce(b, [uploaded]);
  });
});

describe("the contact's POST racing the fan-out's create of their side", () => {
  it("lands between the fan-out's create, whose answer was lost, and its retry: one conversation, the fan-out's", async () => {
    const [a, b] = ['fo-race-a', 'fo-race-b'];
    const mine = await conversationWith(a, b);
    const lost = f.dynamodb.inject({ match: createsSideOf(b), fault: { kind: 'reset_after' } });
    const retry = f.dynamodb.inject({ match: createsSideOf(b), fault: { kind: 'hold' } });
    const uploaded = await uploadInto(a, mine.id, 'race-lost-answer.txt');
    await retry.hit;
    expect(lost.fired).toBe(1);

    const posted = await f.t.call(b, 'POST', '/v1/conversations', { form: { contact_id: a } });
    retry.release();
    const sides = await reachedAt(b, a, uploaded.created_at);

    expect(posted.status).toBe(200);
    expect(sides.map((side) => side.id)).toEqual([posted.body.id]);
    expect(sides[0]).toMatchObject({
      contact_id: a,
      created_at: uploaded.created_at,
      last_active_at: uploaded.created_at,
      last_opened_at: null,
    });
    await expectEachChangeOnce(b, [uploaded]);
  });

  it("whose own create lost its answer: the fan-out moves the side the POST made, and the POST's retry does not move it back", async () => {
    const [a, b] = ['fo-post-a', 'fo-post-b'];
    const mine = await conversationWith(a, b);
    // b's create lands and its answer is lost; the SDK's retry is held until the fan-out has been.
    const lost = f.dynamodb.inject({ match: writesOf(b), fault: { kind: 'reset_after' } });
    const retry = f.dynamodb.inject({ match: writesOf(b), fault: { kind: 'hold' } });
    const posting = f.t.call(b, 'POST', '/v1/conversations', { form: { contact_id: a } });
    await Promise.race([retry.hit, posting]);
    expect(lost.fired).toBe(1);
    expect(retry.fired).toBe(1);

    const uploaded = await uploadInto(a, mine.id, 'race-post.txt');
    const moved = await reachedAt(b, a, uploaded.created_at);
    retry.release();
    const posted = await posting;
    const sides = await sidesOf(b, a);

    expect([200, 201]).toContain(posted.status);
    expect(moved.map((side) => side.id)).toEqual([posted.body.id]);
    expect(sides.map((side) => side.id)).toEqual([posted.body.id]);
    expect(sides[0]).toMatchObject({ contact_id: a, last_active_at: uploaded.created_at });
    expect(await unreadIds(b)).toEqual([posted.body.id]);
    await expectEachChangeOnce(b, [uploaded]);
  });
});

/**
 * A group of `size` members (`a`, `b`, `c` the first three) with a side each; `a` uploads. The calls carry the
 * group in the token. Past LARGE_GROUP_SIDES its first change makes the thread large (`madeLarge`).
 */
async function groupOf(name: string, size = 3) {
  const g = `${name}-g`;
  const members = Array.from({ length: size }, (_, index) => `${name}-${'abcdefgh'[index]}`);
  const [a, b, c] = members as [string, string, string];
  const sides: Record<string, Side> = {};
  for (const who of members) {
    const opened = await f.t.call(who, 'POST', '/v1/conversations', { form: { group_id: g }, groups: [g] });
    expect(opened.status).toBe(201);
    sides[who] = opened.body;
  }
  const call = (who: string, method: string, path: string, init: Parameters<FaultyApi['t']['call']>[3] = {}) =>
    f.t.call(who, method, path, { ...init, groups: [g] });
  const uploadAs = async (who: string, filename: string) => {
    const response = await call(who, 'POST', '/v1/attachments', {
      body: uploadForm({ bytes: `bytes of ${filename}`, filename }, { conversation_id: sides[who]!.id }),
    });
    expect(response.status, response.text).toBe(201);
    return response.body as { id: string; created_at: number };
  };
  const sideOf = async (who: string) => {
    const response = await call(who, 'GET', `/v1/conversations/${sides[who]!.id}`);
    expect(response.status).toBe(200);
    return response.body as Side;
  };
  const createdIn = async (who: string) =>
    (await feedOf(f.t, who, '', [g])).filter((event) => event.type === 'attachment.created').map((event) => event.data.object.id as string);
  /** The thread's feed as `who` reads it through their side (a large thread's; docs/api.md, "Events"). */
  const threadFeed = async (who: string) => feedOf(f.t, who, `conversation_id=${sides[who]!.id}`, [g]);
  /** The switch follows the batch of the change that found the threshold: done once a member's GET /v1/realtime lists the group's channel. */
  const madeLarge = () =>
    eventually(
      () => call(a, 'GET', '/v1/realtime'),
      (response) => response.status === 200 && response.body.group_channels.some((listed: { group_id: string }) => listed.group_id === g),
    );
  return { g, members, a, b, c, sides, uploadAs, sideOf, createdIn, threadFeed, madeLarge };
}

describe("a group member whose side is already at the upload's time, reached again", () => {
  it("by a redelivery of the same change (its first delivery's write landed, its answer lost): the record goes through, and what follows it", async () => {
    const { a, b, c, uploadAs, sideOf, createdIn } = await groupOf('fo-redeliver');
    const next = await groupOf('fo-redeliver-next');
    // b's transaction lands on every try and its answers are lost: the batch fails and the change comes again,
    // when b's side is already at the upload's time (the transaction then only checks it: ConditionCheck).
    const lost = loseEveryTry((request) => isCall(request, 'TransactWriteItems') && writesOf(b)(request));
    const uploaded = await uploadAs(a, 'redelivered.txt');
    await everyTryMade(lost);
    // An upload into another group, later in the same stream: it reaches that group's members only after the
    // failed record went through (the poller never skips one), and cannot stand for it (another thread).
    clock.now += 10;
    const later = await next.uploadAs(next.a, 'after-the-redelivery.txt');

    await eventually(
      () => next.createdIn(next.b),
      (ids) => ids.includes(later.id),
      60_000,
    );
    expect(await next.createdIn(next.b)).toEqual([later.id]);
    expect(await createdIn(b)).toEqual([uploaded.id]);
    expect(await createdIn(c)).toEqual([uploaded.id]);
    for (const member of [b, c]) expect((await sideOf(member)).last_active_at).toBe(uploaded.created_at);
  });

  it('by a second upload in the same second: it reaches every member, whose side stays at that time', async () => {
    const { a, b, c, uploadAs, sideOf, createdIn } = await groupOf('fo-same-second');
    const first = await uploadAs(a, 'first.txt');
    for (const member of [b, c])
      await eventually(
        () => sideOf(member),
        (side) => side.last_active_at === first.created_at,
      );
    const second = await uploadAs(a, 'second.txt');
    expect(second.created_at).toBe(first.created_at);

    for (const member of [b, c]) {
      await eventually(
        () => createdIn(member),
        (ids) => ids.includes(second.id),
        60_000,
      );
      expect((await createdIn(member)).sort()).toEqual([first.id, second.id].sort());
      expect((await sideOf(member)).last_active_at).toBe(first.created_at);
    }
  });
});

describe('a large group thread whose writes fail', () => {
  /** The fan-out's write of the thread record's activity at `at` (the thread's one write per upload batch). */
  const writesThreadAt = (g: string, at: number) => (request: ProxiedRequest) =>
    isCall(request, 'UpdateItem') && bodyOf(request).Key?.pk?.S === groupThreadKey(g).pk && request.body.includes(`"N":"${at}"`);
  /** The fan-out's transaction that appends to the thread's feed. */
  const writesThreadFeed = (g: string) => (request: ProxiedRequest) =>
    isCall(request, 'TransactWriteItems') && writtenKeys(request).some((key) => key.pk?.S === threadFeedKey(g));

  /** A large group of four: `a`'s upload switched it (every member's own feed holds it once), later changes go to the thread. */
  async function largeGroup(name: string) {
    const group = await groupOf(name, LARGE_GROUP_SIDES);
    const switching = await group.uploadAs(group.a, 'switching.txt');
    await group.madeLarge();
    clock.now += 1;
    return { ...group, switching };
  }

  /**
   * `b`'s changes (`changes`: type and attachment, oldest first) each once in the thread's feed as every member
   * reads it, gap-free order of the changes; every side at `at`; only b's own feed besides holds b's upload.
   */
  async function expectThreadOnce(group: Awaited<ReturnType<typeof largeGroup>>, changes: [string, string][], at: number) {
    for (const member of group.members) {
      const feed = await eventually(
        () => group.threadFeed(member),
        (events) => events.length >= changes.length,
      );
      expect(
        feed.map((event) => [event.type, event.data.object.id]),
        member,
      ).toEqual([...changes].reverse());
      expect((await group.sideOf(member)).last_active_at, member).toBe(at);
      const uploadedHere = member === group.b ? changes.filter(([type]) => type === 'attachment.created').map(([, id]) => id) : [];
      expect((await group.createdIn(member)).sort(), member).toEqual([group.switching.id, ...uploadedHere].sort());
    }
  }

  it.each(['the thread record', 'the thread feed'] as const)(
    'when every try of %s write lands and loses its answer: the batch comes again, and each change is in the thread once',
    async (target) => {
      const group = await largeGroup(`fo-large-lost-${target === 'the thread record' ? 'record' : 'feed'}`);
      const at = clock.now;
      const lost = loseEveryTry(target === 'the thread record' ? writesThreadAt(group.g, at) : writesThreadFeed(group.g));
      const uploaded = await group.uploadAs(group.b, 'lost-answer.txt');
      await everyTryMade(lost);
      await expectThreadOnce(group, [['attachment.created', uploaded.id]], at);
    },
  );

  it('when the thread feed write of a rename and of a removal loses every answer: each is in the thread once, after the upload', async () => {
    const group = await largeGroup('fo-large-lost-changes');
    const at = clock.now;
    const uploaded = await group.uploadAs(group.b, 'before.txt');
    await eventually(
      () => group.threadFeed(group.a),
      (events) => events.length === 1,
    );
    for (const [method, init] of [
      ['PUT', { form: { filename: 'after.txt' } }],
      ['DELETE', {}],
    ] as const) {
      const lost = loseEveryTry(writesThreadFeed(group.g));
      const response = await f.t.call(group.b, method, `/v1/attachments/${uploaded.id}`, { ...init, groups: [group.g] });
      expect(response.status, response.text).toBe(200);
      await everyTryMade(lost);
      f.dynamodb.calm();
    }
    await expectThreadOnce(
      group,
      [
        ['attachment.created', uploaded.id],
        ['attachment.updated', uploaded.id],
        ['attachment.deleted', uploaded.id],
      ],
      at,
    );
  });

  it.each(['the thread record', 'the thread feed'] as const)(
    'when %s write is throttled try after try: retried in the same delivery, the change in the thread once',
    async (target) => {
      const group = await largeGroup(`fo-large-throttled-${target === 'the thread record' ? 'record' : 'feed'}`);
      const at = clock.now;
      const tries = 2 * DYNAMODB_TIMEOUTS.maxAttempts;
      const throttled = f.dynamodb.inject({
        match: target === 'the thread record' ? writesThreadAt(group.g, at) : writesThreadFeed(group.g),
        times: tries,
        fault: { kind: 'throttle', as: 'ProvisionedThroughputExceededException' },
      });
      const uploaded = await group.uploadAs(group.b, 'throttled.txt');
      await expectThreadOnce(group, [['attachment.created', uploaded.id]], at);
      expect(throttled.fired).toBe(tries);
    },
  );
});
