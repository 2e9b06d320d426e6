import { describe, expect, it } from 'vitest';
import { FAN_OUT_FUNCTION, LARGE_THREAD_SETTLING_FUNCTION, THREAD_SETTLING_QUEUE_NAME } from '../../infra/local/iam.js';
import { RealtimeClient, RealtimeRefused } from '../../infra/local/realtime-client.js';
import { INDEX_SETTLE_SECONDS } from '../../shared/conversations/large-threads.js';
import { DYNAMODB_TIMEOUTS } from '../../shared/dynamo/client.js';
import { groupThreadKey } from '../../shared/dynamo/keys.js';
import type { FeedEvent } from '../support/audit.js';
import { eventually } from '../support/eventually.js';
import { isStreamRead, type ProxiedRequest, type Rule, signedBy } from '../support/fault-proxy.js';
import { faultyApiForFile } from '../support/faulty-api.js';
import {
  type Attachment,
  type Conversation,
  expectError,
  expectNotAMember,
  freshId,
  idsOf,
  type Member,
  sharingCalls,
} from '../support/sharing.js';

/**
 * Large groups (docs/api.md, "Sharing", large groups) with LARGE_GROUP_SIDES
 * set to 3: the change that finds a group's thread with 3 sides reaches each
 * side as in a small group and makes the thread large; from then on a change
 * writes the thread once, and each member whose token lists the group reads
 * the thread's activity with their side. The server's clock is the test's, so
 * each step happens in a second of its own.
 */
const LARGE_GROUP_SIDES = 3;
const clock = { now: 1_900_000_000 };
// Scanning off: these count each change's events, items and hints, and a scan result is a change of its own
// (a large thread's scan result: test/integration/scanning.test.ts).
const faultyApi = faultyApiForFile({ clock: () => clock.now, env: { LARGE_GROUP_SIDES: String(LARGE_GROUP_SIDES), SCANNING: 'off' } });
const s = sharingCalls(() => faultyApi().t);
/** The settling timer comes INDEX_SETTLE_SECONDS (real ones: SQS's delay) after the switch: a generous wait past it. */
const SETTLING_DEADLINE_MS = (INDEX_SETTLE_SECONDS + 50) * 1000;
const tick = () => {
  clock.now += 1;
  return clock.now;
};

/** Items a DynamoDB write request writes: a transaction's items, or one. */
function itemsWrittenBy(request: ProxiedRequest): number {
  const operation = request.target?.split('.')[1] ?? '';
  if (operation === 'TransactWriteItems') return (JSON.parse(request.body.toString()) as { TransactItems: unknown[] }).TransactItems.length;
  if (operation === 'BatchWriteItem') {
    const batch = JSON.parse(request.body.toString()) as { RequestItems: Record<string, unknown[]> };
    return Object.values(batch.RequestItems).reduce((sum, writes) => sum + writes.length, 0);
  }
  return ['PutItem', 'UpdateItem', 'DeleteItem'].includes(operation) ? 1 : 0;
}

/**
 * Counts the items the DynamoDB requests through the proxy that `counted` picks write from now on (a rule that
 * never fires); by default all but the settling sweep's: once per thread, when its timer comes, whichever upload it
 * falls beside.
 */
function countWrites(counted = (request: ProxiedRequest) => !signedBy(LARGE_THREAD_SETTLING_FUNCTION)(request)): {
  readonly items: number;
} {
  const counter = { items: 0 };
  faultyApi().dynamodb.inject({
    match: (request) => {
      if (counted(request)) counter.items += itemsWrittenBy(request);
      return false;
    },
    fault: { kind: 'delay', ms: 0 },
  });
  return counter;
}

interface Group {
  g: string;
  members: Member[];
  sides: Conversation[];
}

/** A group of `size` members, each with a side, all made at one second. */
async function groupOf(size: number): Promise<Group> {
  const g = freshId('g');
  const members = Array.from({ length: size }, (_, index): Member => ({ id: freshId(`m${index}`), groups: [g] }));
  const sides = await Promise.all(members.map(async (member) => (await s.openSide(member, { group_id: g })).body));
  return { g, members, sides };
}

/** A group made large: its first upload (by its first member) reached every other side, and the switch followed it. */
async function largeGroup(size: number): Promise<Group & { first: Attachment }> {
  const group = await groupOf(size);
  tick();
  const first = await s.upload(group.members[0]!, group.sides[0]!.id);
  for (const member of group.members.slice(1)) {
    await s.feedOf(member, (events) => events.some((event) => event.data.object.id === first.id));
  }
  // The switch follows this batch's last side: done once a member's GET /v1/realtime lists the group's channel.
  await eventually(
    () => s.call(group.members[0]!, 'GET', '/v1/realtime'),
    (response) =>
      response.status === 200 && response.body.group_channels.some((listed: { group_id: string }) => listed.group_id === group.g),
  );
  return { ...group, first };
}

/** `who`'s side once its last_active_at reads at least `time`. */
const sideActiveAt = (who: Member, id: string, time: number): Promise<Conversation> =>
  s.sideActiveAt(who, { group_id: who.groups![0]! }, time).then((side) => {
    expect(side.id).toBe(id);
    return side;
  });

describe('a group thread that reaches LARGE_GROUP_SIDES', () => {
  it('becomes large: a later upload moves every member’s side through the thread, with no event in their own feeds', async () => {
    const { members, sides, first } = await largeGroup(LARGE_GROUP_SIDES);
    const [a, b, c] = members as [Member, Member, Member];
    const at = tick();
    const second = await s.upload(b, sides[1]!.id);
    expect(second.created_at).toBe(at);

    for (const [member, side] of [
      [a, sides[0]!],
      [c, sides[2]!],
    ] as const) {
      expect((await sideActiveAt(member, side.id, at)).last_active_at).toBe(at);
      // The side shows the thread's activity, and the member's own feed holds nothing of another member's change.
      const feed = await s.feed(member);
      expect(feed.some((event) => event.data.object.id === second.id)).toBe(false);
      expect(feed.filter((event) => event.data.object.id === first.id).map((event) => event.type)).toEqual(['attachment.created']);
    }
    // The uploader's own side: its upload is read.
    expect(await s.conversation(b, sides[1]!.id)).toMatchObject({ last_active_at: at, last_opened_at: at });
  });

  it('stays small below it: every side gets the upload and its event', async () => {
    const { members, sides } = await groupOf(LARGE_GROUP_SIDES - 1);
    const at = tick();
    const upload = await s.upload(members[0]!, sides[0]!.id);
    await sideActiveAt(members[1]!, sides[1]!.id, at);
    const feed = await s.feed(members[1]!);
    expect(feed.filter((event) => event.data.object.id === upload.id).map((event) => event.type)).toEqual(['attachment.created']);
  });

  it('becomes large at a change that is no upload (a rename, a scan result) finding the sides; each keeps its own activity until an upload moves the thread', async () => {
    const { g, members, sides } = await groupOf(LARGE_GROUP_SIDES - 1);
    const [a, b] = members as [Member, Member];
    const uploadedAt = tick();
    const upload = await s.upload(a, sides[0]!.id);
    await sideActiveAt(b, sides[1]!.id, uploadedAt);
    // A side made after the upload: the rename's fan-out is the first to find LARGE_GROUP_SIDES sides.
    tick();
    const c: Member = { id: freshId('m2'), groups: [g] };
    const sideC = (await s.openSide(c, { group_id: g })).body;
    tick();
    const renamed = await s.call(a, 'PUT', `/v1/attachments/${upload.id}`, { form: { filename: 'renamed.txt' } });
    expect(renamed.status, renamed.text).toBe(200);
    await eventually(
      () => s.call(a, 'GET', '/v1/realtime'),
      (response) => response.status === 200 && response.body.group_channels.some((listed: { group_id: string }) => listed.group_id === g),
    );
    // The rename reached every side as in a small group, the new one included; no upload moved the thread.
    for (const [member, side] of [
      [b, sides[1]!],
      [c, sideC],
    ] as const) {
      const events = (await s.feed(member)).filter((event) => event.data.object.id === upload.id);
      expect(events.at(-1)).toMatchObject({
        type: 'attachment.updated',
        data: { object: { filename: 'renamed.txt', conversation_id: side.id } },
      });
    }
    expect((await s.conversation(b, sides[1]!.id)).last_active_at).toBe(uploadedAt);
    expect((await s.conversation(c, sideC.id)).last_active_at).toBeNull();

    const at = tick();
    const second = await s.upload(b, sides[1]!.id);
    for (const [member, side] of [
      [a, sides[0]!],
      [c, sideC],
    ] as const) {
      expect((await sideActiveAt(member, side.id, at)).last_active_at).toBe(at);
      expect((await s.feed(member)).some((event) => event.data.object.id === second.id)).toBe(false);
    }
  });

  it('shows the thread’s activity in the unread filter and the activity order, for a token that lists the group only', async () => {
    const { g, members, sides } = await largeGroup(LARGE_GROUP_SIDES);
    const [, b, c] = members as [Member, Member, Member];
    const sideC = sides[2]!;
    // C reads the thread, then a conversation of C's own is the most recently active.
    const opened = tick();
    await s.call(c, 'PUT', `/v1/conversations/${sideC.id}`, { form: { last_opened_at: String(opened) } });
    tick();
    const direct = (await s.openSide(c, { contact_id: freshId('z') })).body;
    const before = await s.call(c, 'GET', '/v1/conversations?order=activity&limit=2');
    expect(idsOf(before.body.data)).toEqual([direct.id, sideC.id]);
    expect(idsOf(await listOf(c, 'unread=true'))).not.toContain(sideC.id);

    const at = tick();
    await s.upload(b, sides[1]!.id);
    await sideActiveAt(c, sideC.id, at);
    expect(idsOf(await listOf(c, 'unread=true'))).toContain(sideC.id);
    expect(idsOf(await listOf(c, 'unread=false'))).not.toContain(sideC.id);
    expect(idsOf((await s.call(c, 'GET', '/v1/conversations?order=activity&limit=1')).body.data)).toEqual([sideC.id]);
    const paged = await s.call(c, 'GET', `/v1/conversations?order=activity&limit=1&starting_after=${sideC.id}`);
    expect(idsOf(paged.body.data)).toEqual([direct.id]);
    expect((await s.conversation(c, sideC.id)).last_active_at).toBe(at);

    // Without the group in the token, the side is as it was stored: its activity stops moving.
    const left: Member = { id: c.id, groups: ['elsewhere'] };
    expect((await s.conversation(left, sideC.id)).last_active_at).toBeLessThan(at);
    expect(idsOf(await listOf(left, 'unread=true'))).not.toContain(sideC.id);
    expect(g).toBeTruthy();
  });

  it('answers a PUT and a repeated POST of a member’s side, and the PUT’s event, with the thread’s activity as GET shows it', async () => {
    const { g, members, sides } = await largeGroup(LARGE_GROUP_SIDES);
    const [, b, c] = members as [Member, Member, Member];
    const at = tick();
    await s.upload(b, sides[1]!.id);
    await sideActiveAt(c, sides[2]!.id, at);

    tick();
    const pinned = await s.call(c, 'PUT', `/v1/conversations/${sides[2]!.id}`, { form: { is_pinned: 'true' } });
    expect(pinned.status).toBe(200);
    expect(pinned.body).toMatchObject({ is_pinned: true, last_active_at: at });
    const again = await s.openSide(c, { group_id: g });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: sides[2]!.id, last_active_at: at });
    const updated = (await s.feed(c)).findLast((event) => event.type === 'conversation.updated' && event.data.object.id === sides[2]!.id);
    expect(updated?.data.object).toMatchObject({ is_pinned: true, last_active_at: at });
  });

  it('marks a side made after the switch, so its member reads the thread’s activity from then on', async () => {
    const { g, members, sides } = await largeGroup(LARGE_GROUP_SIDES);
    const late: Member = { id: freshId('late'), groups: [g] };
    tick();
    const side = (await s.openSide(late, { group_id: g })).body;
    const at = tick();
    await s.upload(members[1]!, sides[1]!.id);
    expect((await sideActiveAt(late, side.id, at)).last_active_at).toBe(at);
    expect(idsOf(await listOf(late, 'unread=true'))).toEqual([side.id]);
  });

  /** Holds the switch of `g`'s thread at its one write of large_since, after its batch went over the sides. */
  const holdTheSwitch = (g: string): Rule =>
    faultyApi().dynamodb.inject({
      match: (request) =>
        signedBy(FAN_OUT_FUNCTION)(request) &&
        request.target?.endsWith('.UpdateItem') === true &&
        request.body.includes(JSON.stringify(groupThreadKey(g).pk)) &&
        request.body.includes('large_since'),
      fault: { kind: 'hold' },
    });

  /**
   * A group of LARGE_GROUP_SIDES whose first upload switches it, and a side made while that switch's one write of
   * large_since is held: the side checked the thread still small, after the batch had gone over the others.
   */
  async function sideMadeDuringTheSwitch(beforeRelease: (late: Member) => void = () => {}) {
    const { g, members, sides } = await groupOf(LARGE_GROUP_SIDES);
    const switching = holdTheSwitch(g);
    const at = tick();
    const upload = await s.upload(members[0]!, sides[0]!.id);
    await switching.hit;
    const late: Member = { id: freshId('late'), groups: [g] };
    tick();
    const side = (await s.openSide(late, { group_id: g })).body;
    beforeRelease(late);
    switching.release();
    return { g, members, sides, at, upload, late, side };
  }

  /** The upload reached the late side as every other: its one event in the member's own feed, its time on the side. */
  async function expectReached(late: Member, sideId: string, upload: Attachment, at: number) {
    const feed = await s.feedOf(late, (events) => events.some((event) => event.data.object.id === upload.id));
    expect(feed.filter((event) => event.data.object.id === upload.id).map((event) => event.type)).toEqual(['attachment.created']);
    expect((await sideActiveAt(late, sideId, at)).last_active_at).toBe(at);
  }

  it('hands a side made while the switching upload reaches the others, before the thread becomes large, that upload too', async () => {
    const { members, sides, at, upload, late, side } = await sideMadeDuringTheSwitch();
    await expectReached(late, side.id, upload, at);
    // And the switch marked it: a later upload shows through the thread.
    const next = tick();
    await s.upload(members[1]!, sides[1]!.id);
    expect((await sideActiveAt(late, side.id, next)).last_active_at).toBe(next);
  });

  it('hands that side the upload in the retry of a switch that failed before reaching it, once, and not in the thread feed', async () => {
    let cut: Rule | undefined;
    const { at, upload, late, side } = await sideMadeDuringTheSwitch((made) => {
      // The switch's delivery to the late side fails on every try of an invocation (cut before DynamoDB saw it).
      cut = faultyApi().dynamodb.inject({
        match: (request) =>
          signedBy(FAN_OUT_FUNCTION)(request) &&
          request.target?.endsWith('.TransactWriteItems') === true &&
          request.body.includes(JSON.stringify(made.id)),
        times: DYNAMODB_TIMEOUTS.maxAttempts,
        fault: { kind: 'reset_before' },
      });
    });
    await expectReached(late, side.id, upload, at);
    expect(cut!.fired).toBe(DYNAMODB_TIMEOUTS.maxAttempts);
    const thread = await s.call(late, 'GET', `/v1/events?conversation_id=${side.id}`);
    expect(thread.status).toBe(200);
    expect(thread.body.data.map((event: FeedEvent) => event.data.object.id)).not.toContain(upload.id);
  });

  it('hands a late side every change of a switching batch whose retry the stream poller split in two', async () => {
    const { g, members, sides } = await groupOf(LARGE_GROUP_SIDES);
    // The fan-out held on an earlier batch, so that both uploads come to it in one batch: the one that switches.
    const [contact, other] = [{ id: freshId('a') }, freshId('b')];
    const earlier = faultyApi().dynamodb.inject({
      match: (request) => signedBy(FAN_OUT_FUNCTION)(request) && request.body.includes(JSON.stringify(other)),
      fault: { kind: 'hold' },
    });
    await s.upload(contact, (await s.openSide(contact, { contact_id: other })).body.id);
    await earlier.hit;
    const firstAt = tick();
    const first = await s.upload(members[0]!, sides[0]!.id);
    const secondAt = tick();
    const second = await s.upload(members[1]!, sides[1]!.id);
    const switching = holdTheSwitch(g);
    earlier.release();
    await switching.hit;
    const late: Member = { id: freshId('late'), groups: [g] };
    tick();
    const side = (await s.openSide(late, { group_id: g })).body;
    // The sweep's delivery to the late side fails in the batch and in its retry from the first upload's record, which
    // then fails at its first record: the poller bisects it, as Lambda's BisectBatchOnFunctionError, and the half that
    // finishes the sweep holds the first upload only.
    const cut = faultyApi().dynamodb.inject({
      match: (request) =>
        signedBy(FAN_OUT_FUNCTION)(request) &&
        request.target?.endsWith('.TransactWriteItems') === true &&
        request.body.includes(JSON.stringify(side.id)),
      times: 2 * DYNAMODB_TIMEOUTS.maxAttempts,
      fault: { kind: 'reset_before' },
    });
    switching.release();
    const feed = await s.feedOf(late, (events) => [first.id, second.id].every((id) => events.some((event) => event.data.object.id === id)));
    expect(cut.fired).toBe(2 * DYNAMODB_TIMEOUTS.maxAttempts);
    for (const upload of [first, second])
      expect(feed.filter((event) => event.data.object.id === upload.id).map((event) => event.type)).toEqual(['attachment.created']);
    expect((await sideActiveAt(late, side.id, secondAt)).last_active_at).toBe(secondAt);
    expect(firstAt).toBeLessThan(secondAt);
  });

  /** A side made during the switch and hidden from every sweep of the fan-out, as by_thread answers before it caught up on AWS. */
  async function sideHiddenFromTheSwitch(beforeRelease: (late: Member) => void = () => {}) {
    let lagging: Rule | undefined;
    const made = await sideMadeDuringTheSwitch((late) => {
      lagging = faultyApi().dynamodb.inject({
        match: (request) =>
          signedBy(FAN_OUT_FUNCTION)(request) && request.target?.endsWith('.Query') === true && request.body.includes('FilterExpression'),
        times: Number.POSITIVE_INFINITY,
        fault: { kind: 'lag', hide: (item) => item.pk?.S === late.id },
      });
      beforeRelease(late);
    });
    await lagging!.hit;
    return made;
  }

  /** Every member's events about `attachmentId` in their own feed, by member. */
  const eventsAbout = async (who: Member, attachmentId: string) =>
    (await s.feed(who)).filter((event) => event.data.object.id === attachmentId).map((event) => event.type);

  it(`hands a side the switch's sweep could not see the switching upload and the thread's activity ${INDEX_SETTLE_SECONDS} s later, with no later change`, async () => {
    const { members, sides, at, upload, late, side } = await sideHiddenFromTheSwitch();
    // No change of the thread follows: the settling timer alone reaches the late side.
    const reached = await eventually(
      () => s.conversation(late, side.id),
      (conversation) => conversation.last_active_at === at,
      SETTLING_DEADLINE_MS,
    );
    expect(reached).toMatchObject({ id: side.id, last_active_at: at, last_opened_at: null });
    expect(await eventsAbout(late, upload.id)).toEqual(['attachment.created']);
    expect(idsOf(await listOf(late, 'unread=true'))).toEqual([side.id]);
    expect(idsOf((await s.call(late, 'GET', '/v1/conversations?order=activity&limit=1')).body.data)).toEqual([side.id]);
    // Marked: a later upload shows through the thread.
    const next = tick();
    await s.upload(members[1]!, sides[1]!.id);
    expect((await sideActiveAt(late, side.id, next)).last_active_at).toBe(next);
  });

  it('keeps the later activity of a hidden side whose member uploaded meanwhile, and still hands it the switching upload', async () => {
    const { sides, at, upload, late, side } = await sideHiddenFromTheSwitch();
    const own = tick();
    await s.upload(late, side.id);
    expect((await s.conversation(late, side.id)).last_active_at).toBe(own);
    await eventually(
      () => eventsAbout(late, upload.id),
      (types) => types.length > 0,
      SETTLING_DEADLINE_MS,
    );
    expect(await eventsAbout(late, upload.id)).toEqual(['attachment.created']);
    expect((await s.conversation(late, side.id)).last_active_at).toBe(own);
    expect(own).toBeGreaterThan(at);
    expect(sides).toHaveLength(LARGE_GROUP_SIDES);
  });

  it('fails the switching batch when its settling timer cannot be sent, sends it again on the retry, and a timer delivered twice changes nothing', async () => {
    const sends = { settling: 0 };
    let refused: Rule | undefined;
    const { g, at, upload, late, side } = await sideHiddenFromTheSwitch(() => {
      const settlingQueue = (request: ProxiedRequest) => request.body.includes(`/${THREAD_SETTLING_QUEUE_NAME}"`);
      faultyApi().sqs.inject({
        match: (request) => {
          if (settlingQueue(request)) sends.settling += 1;
          return false;
        },
        fault: { kind: 'delay', ms: 0 },
      });
      refused = faultyApi().sqs.inject({ match: settlingQueue, fault: { kind: 'reset_before' } });
    });
    await eventually(
      () => s.conversation(late, side.id),
      (conversation) => conversation.last_active_at === at,
      SETTLING_DEADLINE_MS,
    );
    expect(refused!.fired).toBe(1);
    expect(sends.settling).toBe(2);
    // The timer's sweep done to its end (the thread settled after the side), its message deleted.
    const queue = faultyApi().t.api.threadSettling;
    await eventually(
      async () => queue.depth,
      (depth) => depth === 0,
    );
    // The same timer again, as SQS may deliver it: the thread is settled, nothing is written.
    const writes = countWrites(signedBy(LARGE_THREAD_SETTLING_FUNCTION));
    const answer = await queue.accept({
      target: 'SendMessage',
      // The server's own key, which the stand-in takes without a role's check.
      keyId: faultyApi().t.api.config.credentials!.accessKeyId,
      body: { QueueUrl: queue.url, MessageBody: JSON.stringify({ group_id: g }) },
    });
    expect(answer.status).toBe(200);
    await eventually(
      async () => queue.depth,
      (depth) => depth === 0,
    );
    expect(writes.items).toBe(0);
    expect(queue.deadLetters).toEqual([]);
    expect(await eventsAbout(late, upload.id)).toEqual(['attachment.created']);
  });

  it('writes no more items per upload as the group grows, and at most 3 × what an upload to a contact writes', async () => {
    const direct = { a: { id: freshId('a') }, contact: freshId('contact') };
    const sideA = (await s.openSide(direct.a, { contact_id: direct.contact })).body;
    const groups = [await largeGroup(LARGE_GROUP_SIDES), await largeGroup(LARGE_GROUP_SIDES + 5)];
    // An upload seen through the thread: the switch (and its sweep) is over, so none of its writes is counted below.
    for (const group of groups) {
      const at = tick();
      await s.upload(group.members[1]!, group.sides[1]!.id);
      await sideActiveAt(group.members[0]!, group.sides[0]!.id, at);
    }

    const directWrites = countWrites();
    tick();
    const toContact = await s.upload(direct.a, sideA.id);
    await s.sideActiveAt({ id: direct.contact }, { contact_id: direct.a.id }, toContact.created_at);
    const perDirect = directWrites.items;

    const perLarge: number[] = [];
    for (const group of groups) {
      const writes = countWrites();
      const at = tick();
      await s.upload(group.members[1]!, group.sides[1]!.id);
      await sideActiveAt(group.members[0]!, group.sides[0]!.id, at);
      perLarge.push(writes.items);
    }
    expect(perLarge[1]).toBe(perLarge[0]);
    expect(perLarge[0]).toBeLessThanOrEqual(3 * perDirect);
  });
});

describe('a large group’s thread feed', () => {
  const threadFeed = async (who: Member, sideId: string, query = ''): Promise<FeedEvent[]> => {
    const limit = query.includes('limit=') ? '' : '&limit=100';
    const response = await s.call(who, 'GET', `/v1/events?conversation_id=${sideId}${limit}${query}`);
    expect(response.status, response.text).toBe(200);
    return response.body.data;
  };

  it('lists each change of the thread once, newest first, each attachment in the reader’s side; none in the members’ own feeds', async () => {
    const { members, sides } = await largeGroup(LARGE_GROUP_SIDES);
    const [a, b] = members as [Member, Member];
    tick();
    const upload = await s.upload(b, sides[1]!.id, { bytes: 'thread', filename: 'before.txt' });
    tick();
    const renamed = await s.call(b, 'PUT', `/v1/attachments/${upload.id}`, { form: { filename: 'after.txt' } });
    expect(renamed.status, renamed.text).toBe(200);
    tick();
    expect((await s.call(b, 'DELETE', `/v1/attachments/${upload.id}`)).status).toBe(200);

    const feed = await eventually(
      () => threadFeed(a, sides[0]!.id),
      (events) => events.length >= 3,
    );
    expect(feed.map((event) => event.type)).toEqual(['attachment.deleted', 'attachment.updated', 'attachment.created']);
    expect(feed[2]!.data.object).toMatchObject({ id: upload.id, conversation_id: sides[0]!.id, uploaded_by: b.id, filename: 'before.txt' });
    expect(feed[1]!.data).toMatchObject({
      object: { filename: 'after.txt', conversation_id: sides[0]!.id },
      previous_attributes: { filename: 'before.txt' },
    });
    expect(feed[0]!.data.object).toEqual({ id: upload.id, deleted: true });
    // The same events for another member, each in their own side; the uploader's own feed keeps its own changes.
    expect((await threadFeed(b, sides[1]!.id)).map((event) => [event.id, event.data.object.conversation_id ?? null])).toEqual(
      feed.map((event) => [event.id, event.type === 'attachment.deleted' ? null : sides[1]!.id]),
    );
    expect((await s.feed(a)).some((event) => event.data.object.id === upload.id)).toBe(false);
    expect((await s.feed(b)).filter((event) => event.data.object.id === upload.id).map((event) => event.type)).toEqual([
      'attachment.created',
      'attachment.updated',
      'attachment.deleted',
    ]);
    // Pages of one walk the feed exactly, and the head only grows.
    expect(idsOf(await threadFeed(a, sides[0]!.id, `&limit=1&starting_after=${feed[0]!.id}`))).toEqual([feed[1]!.id]);
    expect(idsOf(await threadFeed(a, sides[0]!.id, `&ending_before=${feed[1]!.id}`))).toEqual([feed[0]!.id]);
  });

  it('takes uploads of many members at once with no 429 or 5xx, and lists each of them once', async () => {
    const { members, sides } = await largeGroup(LARGE_GROUP_SIDES + 5);
    tick();
    const uploads = await Promise.all(members.map((member, index) => s.upload(member, sides[index]!.id)));
    const feed = await eventually(
      () => threadFeed(members[0]!, sides[0]!.id, '&type=attachment.created'),
      (events) => events.length >= uploads.length,
    );
    expect(feed.map((event) => event.data.object.id).sort()).toEqual(idsOf(uploads).sort());
    expect(new Set(idsOf(feed)).size).toBe(feed.length);
  });

  it('is refused without the group in the token (403), for no side of the caller’s (400), and for a side of no large group (400)', async () => {
    const { g, members, sides } = await largeGroup(LARGE_GROUP_SIDES);
    const small = await groupOf(LARGE_GROUP_SIDES - 1);
    const left: Member = { id: members[0]!.id, groups: ['elsewhere'] };
    const stranger: Member = { id: freshId('stranger'), groups: [g] };
    const direct = (await s.openSide(members[0]!, { contact_id: freshId('z') })).body;
    expectNotAMember(await s.call(left, 'GET', `/v1/events?conversation_id=${sides[0]!.id}`), 'conversation_id');
    expectError(await s.call(stranger, 'GET', `/v1/events?conversation_id=${sides[0]!.id}`), 400, {
      type: 'invalid_request_error',
      code: 'resource_missing',
      param: 'conversation_id',
    });
    for (const [who, id] of [
      [small.members[0]!, small.sides[0]!.id],
      [members[0]!, direct.id],
    ] as const) {
      expectError(await s.call(who, 'GET', `/v1/events?conversation_id=${id}`), 400, {
        type: 'invalid_request_error',
        code: 'parameter_invalid',
        param: 'conversation_id',
      });
    }
  });
});

describe('a large group’s channel', () => {
  const endpointOf = async (who: Member) => {
    const response = await s.call(who, 'GET', '/v1/realtime');
    expect(response.status, response.text).toBe(200);
    return response.body as { url: string; host: string; channel: string; group_channels: { group_id: string; channel: string }[] };
  };
  const token = (who: Member) => faultyApi().t.token(who.id, { groups: who.groups ?? [] });

  it('is listed for the large groups the token lists, and hears one thread hint per change of the thread', async () => {
    const { g, members, sides } = await largeGroup(LARGE_GROUP_SIDES);
    const small = await groupOf(LARGE_GROUP_SIDES - 1);
    const [a, b] = members as [Member, Member];
    const both: Member = { id: a.id, groups: [g, small.g] };
    const endpoint = await endpointOf(both);
    expect(endpoint.group_channels).toHaveLength(1);
    expect(endpoint.group_channels[0]).toMatchObject({ group_id: g, channel: expect.stringMatching(/^\/inbox\/[A-Za-z0-9-]{1,50}$/) });
    expect(endpoint.group_channels[0]!.channel).not.toBe(endpoint.channel);
    expect((await endpointOf({ id: a.id, groups: [small.g] })).group_channels).toEqual([]);

    const client = await RealtimeClient.connect({ url: endpoint.url, host: endpoint.host, token: await token(both) });
    try {
      const hints: Record<string, unknown>[] = [];
      await client.subscribe(endpoint.group_channels[0]!.channel, (event) => hints.push(event as Record<string, unknown>));
      tick();
      await s.upload(b, sides[1]!.id);
      const [event] = await eventually(
        () => s.call(a, 'GET', `/v1/events?conversation_id=${sides[0]!.id}`).then((response) => response.body.data as FeedEvent[]),
        (events) => events.length >= 1,
      );
      const heard = await eventually(
        async () => hints,
        (all) => all.length >= 1,
      );
      expect(heard).toEqual([{ type: 'thread', group_id: g, event_id: event!.id, event_type: 'attachment.created' }]);
    } finally {
      await client.close();
    }
  });

  it('cannot be subscribed to without the group in the token', async () => {
    const { g, members } = await largeGroup(LARGE_GROUP_SIDES);
    const channel = (await endpointOf(members[0]!)).group_channels.find((listed) => listed.group_id === g)!.channel;
    const outsider: Member = { id: members[0]!.id, groups: ['elsewhere'] };
    const endpoint = await endpointOf(outsider);
    const client = await RealtimeClient.connect({ url: endpoint.url, host: endpoint.host, token: await token(outsider) });
    try {
      const refusal = await client.subscribe(channel).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(RealtimeRefused);
      expect((refusal as RealtimeRefused).reply).toMatchObject({
        type: 'subscribe_error',
        errors: [{ errorType: 'UnauthorizedException' }],
      });
    } finally {
      await client.close();
    }
  });
});

describe('the switch and a large thread under faults', () => {
  it('end as one delivery of each change when the fan-out’s calls are lost, refused or throttled at random', async () => {
    const { g, members, sides } = await groupOf(LARGE_GROUP_SIDES + 2);
    const fanOutCalls = (request: ProxiedRequest) => signedBy(FAN_OUT_FUNCTION)(request) && !isStreamRead(request);
    faultyApi().dynamodb.randomize({
      seed: 3434,
      rates: { reset_after: 0.15, reset_before: 0.1, throttle: 0.1 },
      stallMs: 0,
      delayMs: [0, 0],
      match: fanOutCalls,
    });
    // The first upload finds the threshold and switches the thread; the next two go to the thread.
    const uploads: Attachment[] = [];
    for (const index of [0, 1, 2]) {
      const at = tick();
      uploads.push(await s.upload(members[index]!, sides[index]!.id));
      for (const [other, member] of members.entries()) await sideActiveAt(member, sides[other]!.id, at);
    }
    const faults = faultyApi().dynamodb.stats().faults;
    expect(faults.reset_after + faults.reset_before + faults.throttle).toBeGreaterThan(0);
    faultyApi().dynamodb.calm();

    const [first, ...later] = uploads as [Attachment, ...Attachment[]];
    const threadFeed = await eventually(
      () =>
        s
          .call(members[4]!, 'GET', `/v1/events?limit=100&conversation_id=${sides[4]!.id}`)
          .then((response) => response.body.data as FeedEvent[]),
      (events) => events.length >= later.length,
    );
    expect(threadFeed.map((event) => [event.type, event.data.object.id])).toEqual(
      later.reverse().map((upload) => ['attachment.created', upload.id]),
    );
    for (const [index, member] of members.entries()) {
      const own = (await s.feed(member)).filter((event) => event.type.startsWith('attachment.'));
      // Every member's feed: the switching upload once (as a small group's), their own uploads, nothing else.
      const expected = [first, ...later.filter((upload) => upload.uploaded_by === member.id)];
      expect(
        own.map((event) => event.data.object.id),
        `${member.id} of ${g}`,
      ).toEqual(
        index === 0
          ? [first.id]
          : expected.map((upload) => upload.id).sort((a, b) => (uploadsOrder(uploads, a) < uploadsOrder(uploads, b) ? -1 : 1)),
      );
      expect(idsOf(await listOf(member, 'unread=true')), member.id).toEqual(index === 2 ? [] : [sides[index]!.id]);
    }
  });
});

const uploadsOrder = (uploads: Attachment[], id: string): number => uploads.findIndex((upload) => upload.id === id);

async function listOf(who: Member, query: string): Promise<Conversation[]> {
  const response = await s.call(who, 'GET', `/v1/conversations?limit=100&${query}`);
  expect(response.status, response.text).toBe(200);
  return response.body.data;
}
