import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AttachmentRecord } from '../../../shared/attachments/model.js';
import {
  FanOut,
  type GroupThreads,
  type LargeGroups,
  latestUpload,
  type MemberDelivery,
  memberEvents,
  type ThreadChange,
  type ThreadFeeds,
} from '../../../shared/conversations/fan-out.js';
import type { GroupThread } from '../../../shared/conversations/large-threads.js';
import { threadKey, threadOf } from '../../../shared/dynamo/keys.js';

const users = ['u1', 'u2', 'u3', 'u4'];
const groups = ['g1', 'g2'];

const record: fc.Arbitrary<AttachmentRecord> = fc.record({
  id: fc.uuid().map((id) => `att_${id}`),
  message_id: fc.constant(null),
  filename: fc.constantFrom('a.txt', 'b.txt'),
  file_type: fc.constant('text/plain'),
  file_size: fc.constant(1),
  created_at: fc.integer({ min: 1_800_000_000, max: 1_800_000_010 }),
  uploaded_by: fc.constantFrom(...users),
  scan_status: fc.constantFrom('pending' as const, 'clean' as const, 'not_scanned' as const),
  placement: fc.option(
    fc.record({
      conversation_id: fc.constant('conv_uploader'),
      counterpart: fc.oneof(
        fc.record({ kind: fc.constant('contact' as const), id: fc.constantFrom(...users) }),
        fc.record({ kind: fc.constant('group' as const), id: fc.constantFrom(...groups) }),
      ),
    }),
    { nil: null },
  ),
  file_key: fc.constant('files/k'),
});

const change: fc.Arbitrary<ThreadChange> = fc
  .tuple(record, fc.constantFrom('created' as const, 'renamed' as const, 'removed' as const), fc.boolean())
  .map(([r, kind, newName]): ThreadChange => {
    const id = `${r.id}-${kind}`;
    return kind === 'renamed'
      ? { kind, id, record: { ...r, filename: newName ? 'renamed.txt' : r.filename }, before: r }
      : { kind, id, record: r };
  });

/** Who holds a side of each group's thread. */
const groupSides = fc.record({ g1: fc.subarray(users), g2: fc.subarray(users) });

/** Runs a batch through the fan-out against in-memory sides, recording what each member was handed. */
async function fanOut(batch: ThreadChange[], sides: Record<string, string[]>): Promise<MemberDelivery[]> {
  const delivered: MemberDelivery[] = [];
  const threads = {
    async *sidesOf(key: string) {
      const groupId = groups.find((group) => threadKey({ kind: 'group', groupId: group }) === key)!;
      yield sides[groupId]!.map((userId) => ({ userId, conversationId: `conv_${userId}_${groupId}` }));
    },
  };
  await new FanOut(
    threads,
    {
      deliver: async (delivery) => {
        delivered.push(delivery);
        return true;
      },
      notYetDelivered: async (deliveries) => [...deliveries],
    },
    neverLarge(),
  ).deliver(batch);
  return delivered;
}

const small: GroupThread = { large: false, swept: false, settled: false, switchChanges: [], lastActiveAt: null };

/** Group threads' records and feeds in memory, and every write to them in order. */
function threadRecords(): GroupThreads & ThreadFeeds & { records: Map<string, GroupThread>; writes: string[] } {
  const records = new Map<string, GroupThread>();
  const writes: string[] = [];
  const passed = new Map<string, ThreadChange>();
  const of = (groupId: string): GroupThread => records.get(groupId) ?? small;
  return {
    records,
    writes,
    thread: async (groupId) => of(groupId),
    async becomeLarge(groupId, at, _now, switchChanges) {
      writes.push(`large ${groupId}`);
      if (!of(groupId).large) records.set(groupId, { ...small, large: true, switchChanges: [...switchChanges], lastActiveAt: at ?? null });
    },
    async markSide(userId) {
      writes.push(`mark ${userId}`);
    },
    async swept(groupId) {
      writes.push(`swept ${groupId}`);
      records.set(groupId, { ...of(groupId), swept: true });
    },
    async settled(groupId) {
      writes.push(`settled ${groupId}`);
      records.set(groupId, { ...of(groupId), settled: true });
    },
    async record(groupId, changes) {
      writes.push(`feed ${groupId} ${changes.map((change) => change.id).join(',')}`);
    },
    async passOver(groupId, changes) {
      writes.push(`passed over ${groupId} ${changes.map((change) => change.id).join(',')}`);
      for (const change of changes) passed.set(change.id, change);
      return changes.map((change) => change.id);
    },
    passedOver: async (_, ids) => ids.flatMap((id) => (passed.has(id) ? [passed.get(id)!] : [])),
    async moveActivity(groupId, at) {
      writes.push(`activity ${groupId} ${at}`);
      records.set(groupId, { ...of(groupId), lastActiveAt: Math.max(at, of(groupId).lastActiveAt ?? 0) });
    },
  };
}

/** The switch as it is by default for these tests: no group here grows large. */
const neverLarge = (): LargeGroups => {
  const threads = threadRecords();
  return { threads, feeds: threads, largeGroupSides: Number.MAX_SAFE_INTEGER, clock: () => 0, settling: timersIn(threads) };
};

/** Settling timers that log each start among the thread's writes. */
const timersIn = (threads: { writes: string[] }) => ({
  async start(groupId: string) {
    threads.writes.push(`timer ${groupId}`);
  },
});

/** The switch at `largeGroupSides`, over these records, at time 7. */
const switchAt = (threads: ReturnType<typeof threadRecords>, largeGroupSides = 3, clock = () => 7): LargeGroups => ({
  threads,
  feeds: threads,
  largeGroupSides,
  clock,
  settling: timersIn(threads),
});

/** Sides of one group, each member named by its index. */
function groupOf(groupId: string, members: number): { sidesOf(key: string): AsyncIterable<{ userId: string; conversationId: string }[]> } {
  return {
    async *sidesOf(key: string) {
      if (key !== threadKey({ kind: 'group', groupId })) return;
      yield Array.from({ length: members }, (_, index) => ({ userId: `m${index}`, conversationId: `conv_m${index}` }));
    },
  };
}

function upload(id: string, groupId: string, by = 'uploader'): ThreadChange {
  const r: AttachmentRecord = {
    id: `att_${id}`,
    message_id: null,
    filename: 'a.txt',
    file_type: 'text/plain',
    file_size: 1,
    created_at: 1_800_000_000,
    uploaded_by: by,
    placement: { conversation_id: 'conv_uploader', counterpart: { kind: 'group', id: groupId } },
    file_key: 'files/k',
    scan_status: 'clean' as const,
  };
  return { kind: 'created', id, record: r };
}

/** The members a change should reach: the other side of a direct thread, every other side holder of a group's. */
function audience(c: ThreadChange, sides: Record<string, string[]>): string[] {
  const { uploaded_by, placement } = c.record;
  if (!placement) return [];
  if (placement.counterpart.kind === 'contact') return placement.counterpart.id === uploaded_by ? [] : [placement.counterpart.id];
  return sides[placement.counterpart.id]!.filter((member) => member !== uploaded_by);
}

describe('the fan-out of a batch', () => {
  it('hands each change to exactly the members who should see it, in one delivery per member and thread, in the batch order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(change, { maxLength: 30 }), groupSides, async (batch, sides) => {
        const delivered = await fanOut(batch, sides);
        for (const c of batch) {
          const reached = delivered.filter((d) => d.changes.includes(c)).map((d) => d.userId);
          expect(reached.sort()).toEqual(audience(c, sides).sort());
        }
        for (const delivery of delivered) {
          const [first] = delivery.changes;
          const thread = threadKey(threadOf(first!.record.uploaded_by, first!.record.placement!.counterpart));
          for (const c of delivery.changes) {
            expect(c.record.uploaded_by).not.toBe(delivery.userId);
            expect(threadKey(threadOf(c.record.uploaded_by, c.record.placement!.counterpart))).toBe(thread);
          }
          expect(delivery.changes).toEqual(batch.filter((c) => delivery.changes.includes(c)));
          // A direct thread's member is found by whom their side is with: the uploader.
          if (first!.record.placement!.counterpart.kind === 'contact')
            expect(delivery.counterpart).toEqual({ kind: 'contact', id: first!.record.uploaded_by });
        }
        const perThreadAndMember = delivered.map(
          (d) => `${d.userId}|${threadKey(threadOf(d.changes[0]!.record.uploaded_by, d.changes[0]!.record.placement!.counterpart))}`,
        );
        expect(new Set(perThreadAndMember).size).toBe(perThreadAndMember.length);
      }),
    );
  });

  it("moves a side to its latest upload's time (renames and removals are no activity), and shows each change in the member's own side", () => {
    fc.assert(
      fc.property(fc.array(change, { maxLength: 20 }), (changes) => {
        const uploads = changes.filter((c) => c.kind === 'created').map((c) => c.record.created_at);
        expect(latestUpload(changes)).toBe(uploads.length ? Math.max(...uploads) : undefined);
        for (const c of changes) {
          const events = memberEvents(c, 'conv_member', { serveUnscannable: false });
          if (c.kind === 'removed')
            expect(events).toEqual([
              { type: 'attachment.deleted', data: { object: { id: c.record.id, deleted: true } }, request_id: null },
            ]);
          else if (c.kind === 'renamed' && c.before.filename === c.record.filename) expect(events).toEqual([]);
          else {
            expect(events).toHaveLength(1);
            expect(events[0]!.data.object).toMatchObject({
              id: c.record.id,
              conversation_id: 'conv_member',
              uploaded_by: c.record.uploaded_by,
              filename: c.record.filename,
            });
          }
        }
      }),
    );
  });

  it("stops at the first thread that fails and names that thread's first change: every change before it reached every member", async () => {
    const batch = [upload('e1', 'ok'), upload('e2', 'failing'), upload('e3', 'ok'), upload('e4', 'failing'), upload('e5', 'later')];
    const sides = {
      async *sidesOf(key: string) {
        for (const groupId of ['ok', 'failing', 'later'])
          if (key === threadKey({ kind: 'group', groupId })) yield [{ userId: `member-of-${groupId}`, conversationId: 'conv' }];
      },
    };
    const handed: string[] = [];
    const failure = new Error('throttled');
    const outcome = await new FanOut(
      sides,
      {
        deliver: async (delivery) => {
          handed.push(delivery.userId);
          if (delivery.userId === 'member-of-failing') throw failure;
          return true;
        },
        notYetDelivered: async (deliveries) => [...deliveries],
      },
      neverLarge(),
    ).deliver(batch);
    expect(outcome.unfinished).toEqual({ change: batch[1], error: failure });
    expect(outcome.reached).toBe(1);
    // The thread after the failing one is not begun: it is retried with it.
    expect(handed).toEqual(['member-of-ok', 'member-of-failing']);
  });

  it('leaves out the members a check finds reached before, and reaches the others', async () => {
    const change = upload('e1', 'big');
    const written: string[] = [];
    const outcome = await new FanOut(
      groupOf('big', 50),
      {
        deliver: async (delivery) => {
          written.push(delivery.userId);
          return true;
        },
        // As a retried batch finds it: the first 30 members were reached by the run that stopped.
        notYetDelivered: async (deliveries) => deliveries.filter((delivery) => Number(delivery.userId.slice(1)) >= 30),
      },
      neverLarge(),
    ).deliver([change]);
    expect(outcome).toEqual({ reached: 20, threads: 0, skipped: 30 });
    expect(written.sort()).toEqual(Array.from({ length: 20 }, (_, index) => `m${index + 30}`).sort());
  });
});

describe('a group thread that reaches LARGE_GROUP_SIDES', () => {
  const members = () => ({
    written: [] as string[],
    deliver: async function (this: { written: string[] }, delivery: MemberDelivery) {
      this.written.push(delivery.userId);
      return true;
    },
    notYetDelivered: async (deliveries: readonly MemberDelivery[]) => [...deliveries],
  });

  it('reaches every side with the change that finds it that large, then becomes large and marks each side once', async () => {
    const threads = threadRecords();
    const feeds = members();
    const outcome = await new FanOut(groupOf('g', 3), feeds, switchAt(threads)).deliver([upload('e1', 'g')]);
    expect(outcome).toEqual({ reached: 3, threads: 0, skipped: 0 });
    expect(feeds.written.sort()).toEqual(['m0', 'm1', 'm2']);
    // Its settling timer sent before `swept`: a send that fails fails the batch, whose retry sends it again.
    expect(threads.writes).toEqual(['passed over g e1', 'large g', 'mark m0', 'mark m1', 'mark m2', 'timer g', 'swept g']);
    expect(threads.records.get('g')).toEqual({ ...small, large: true, swept: true, switchChanges: ['e1'], lastActiveAt: 1_800_000_000 });
  });

  it('stays small below it: every side is written, the thread never', async () => {
    const threads = threadRecords();
    const feeds = members();
    await new FanOut(groupOf('g', 2), feeds, switchAt(threads)).deliver([upload('e1', 'g')]);
    expect(feeds.written.sort()).toEqual(['m0', 'm1']);
    expect(threads.writes).toEqual([]);
  });

  it('writes a large thread once per batch and no side, however many members it has', async () => {
    const threads = threadRecords();
    threads.records.set('g', { ...small, large: true, swept: true, settled: true, lastActiveAt: 1 });
    const feeds = members();
    const batch = [upload('e1', 'g', 'm1'), upload('e2', 'g', 'm2'), upload('e3', 'other')];
    const outcome = await new FanOut(groupOf('g', 500), feeds, switchAt(threads)).deliver(batch);
    expect(outcome).toEqual({ reached: 0, threads: 1, skipped: 0 });
    expect(feeds.written).toEqual([]);
    expect(threads.writes).toEqual(['activity g 1800000000', 'feed g e1,e2']);
  });

  it('finishes a switch whose sweep stopped part way before it writes the thread', async () => {
    const threads = threadRecords();
    threads.records.set('g', { ...small, large: true });
    await new FanOut(groupOf('g', 2), members(), switchAt(threads)).deliver([upload('e1', 'g')]);
    expect(threads.writes).toEqual(['mark m0', 'mark m1', 'timer g', 'swept g', 'activity g 1800000000', 'feed g e1']);
  });

  /**
   * A thread's sides as by_thread shows them at each listing: `listings[n]` the members of the nth
   * (the last one from then on), each marked once its mark is written, as DynamoDB's filter leaves it out.
   */
  function sidesOver(threads: ReturnType<typeof threadRecords>, listings: number[][]) {
    let listing = 0;
    return {
      async *sidesOf(_key: string, unmarkedOnly = false) {
        const members = listings[Math.min(listing, listings.length - 1)]!;
        listing += 1;
        const marked = (index: number) => threads.writes.includes(`mark m${index}`);
        yield members
          .filter((index) => !unmarkedOnly || !marked(index))
          .map((index) => ({ userId: `m${index}`, conversationId: `conv_m${index}` }));
      },
    };
  }

  /** Members' feeds that log each delivery, with its changes, among the thread's writes; `reachedBefore` an earlier try reached. */
  const loggedMembers = (threads: ReturnType<typeof threadRecords>, reachedBefore: string[] = []) => ({
    deliver: async (delivery: MemberDelivery) => {
      threads.writes.push(`deliver ${delivery.userId} ${delivery.changes.map((change) => change.id).join(',')}`);
      return true;
    },
    notYetDelivered: async (deliveries: readonly MemberDelivery[]) =>
      deliveries.filter((delivery) => !reachedBefore.includes(delivery.userId)),
  });

  it('hands a side made while the switching batch went over the others (before the switch) that batch’s changes, then marks it', async () => {
    const threads = threadRecords();
    const index = sidesOver(threads, [
      [0, 1, 2],
      [0, 1, 2, 3],
    ]);
    const outcome = await new FanOut(index, loggedMembers(threads), switchAt(threads)).deliver([upload('e1', 'g')]);
    expect(outcome).toEqual({ reached: 4, threads: 0, skipped: 0 });
    expect(threads.writes).toEqual([
      'deliver m0 e1',
      'deliver m1 e1',
      'deliver m2 e1',
      'passed over g e1',
      'large g',
      'deliver m3 e1',
      'mark m0',
      'mark m1',
      'mark m2',
      'mark m3',
      'timer g',
      'swept g',
    ]);
  });

  it('finishes a retried switch by handing the sides it has not reached the changes it passed over, and lists the others in the thread', async () => {
    const threads = threadRecords();
    await threads.passOver('g', [upload('e1', 'g')]);
    threads.records.set('g', { ...small, large: true, switchChanges: ['e1'] });
    threads.writes.length = 0;
    // m0 was reached and marked by the first try; m1 reached, not marked; m2 made meanwhile.
    threads.writes.push('mark m0');
    const index = sidesOver(threads, [[0, 1, 2]]);
    await new FanOut(index, loggedMembers(threads, ['m0', 'm1']), switchAt(threads)).deliver([upload('e1', 'g'), upload('e2', 'g')]);
    expect(threads.writes.slice(1)).toEqual([
      'deliver m2 e1',
      'mark m1',
      'mark m2',
      'timer g',
      'swept g',
      'activity g 1800000000',
      'feed g e1,e2',
    ]);
  });

  it('hands a late side every change of a retried switch split in two, not only the half that finishes the sweep', async () => {
    const threads = threadRecords();
    // m0..m2 as the switching batch found them; m3 made meanwhile, whose first delivery fails.
    const index = sidesOver(threads, [
      [0, 1, 2],
      [0, 1, 2, 3],
    ]);
    let failing = true;
    // Each member's recorded changes, as their feed's records keep them: a retry passes over what they hold.
    const recorded = new Set<string>();
    const members = {
      deliver: async (delivery: MemberDelivery) => {
        if (delivery.userId === 'm3' && failing) {
          failing = false;
          throw new Error('lost');
        }
        threads.writes.push(`deliver ${delivery.userId} ${delivery.changes.map((change) => change.id).join(',')}`);
        for (const change of delivery.changes) recorded.add(`${delivery.userId} ${change.id}`);
        return true;
      },
      notYetDelivered: async (deliveries: readonly MemberDelivery[]) =>
        deliveries
          .map((delivery) => ({
            ...delivery,
            changes: delivery.changes.filter((change) => !recorded.has(`${delivery.userId} ${change.id}`)),
          }))
          .filter((delivery) => delivery.changes.length > 0),
    };
    const fanOut = new FanOut(index, members, switchAt(threads));
    const [e1, e2] = [upload('e1', 'g', 'm0'), upload('e2', 'g', 'm1')];
    expect((await fanOut.deliver([e1, e2])).unfinished?.change).toBe(e1);
    // Lambda's bisectBatchOnError: the retry is split, each half on its own.
    threads.writes.length = 0;
    await fanOut.deliver([e1]);
    await fanOut.deliver([e2]);
    expect(threads.writes).toEqual([
      'deliver m3 e1,e2',
      'mark m0',
      'mark m1',
      'mark m2',
      'mark m3',
      'timer g',
      'swept g',
      'activity g 1800000000',
      'feed g e1',
      'activity g 1800000000',
      'feed g e2',
    ]);
  });
});

describe('the settling sweep, when the switch’s timer comes', () => {
  const members = (threads: ReturnType<typeof threadRecords>) => ({
    deliver: async (delivery: MemberDelivery) => {
      threads.writes.push(`deliver ${delivery.userId} ${delivery.changes.map((change) => change.id).join(',')}`);
      return true;
    },
    notYetDelivered: async (deliveries: readonly MemberDelivery[]) => [...deliveries],
  });

  it('hands each side by_thread had not shown the switch every change it passed over but its own, marks it, and settles once', async () => {
    const threads = threadRecords();
    // m0, m1 found by the switch; m2 made before it, hidden from its sweep by the index's lag.
    let listings = 0;
    const index = {
      async *sidesOf(_key: string, unmarkedOnly = false) {
        listings += 1;
        const shown = listings <= 2 ? [0, 1] : [0, 1, 2];
        yield shown
          .filter((member) => !unmarkedOnly || !threads.writes.includes(`mark m${member}`))
          .map((member) => ({ userId: `m${member}`, conversationId: `conv_m${member}` }));
      },
    };
    const fanOut = new FanOut(index, members(threads), switchAt(threads, 2));
    await fanOut.deliver([upload('e1', 'g', 'm0'), upload('e2', 'g', 'm2')]);
    expect(threads.writes).not.toContain('mark m2');
    const before = threads.writes.length;
    expect(await fanOut.settle('g')).toEqual({ reached: 1, threads: 0, skipped: 0, settled: 'now' });
    expect(threads.writes.slice(before)).toEqual(['deliver m2 e1', 'mark m2', 'settled g']);
    // The timer delivered again: nothing more.
    expect(await fanOut.settle('g')).toMatchObject({ reached: 0, settled: 'before' });
    expect(threads.writes).toHaveLength(before + 3);
  });

  it('leaves a thread that is not large alone', async () => {
    const threads = threadRecords();
    const fanOut = new FanOut(groupOf('g', 5), members(threads), switchAt(threads));
    expect(await fanOut.settle('g')).toEqual({ reached: 0, threads: 0, skipped: 0, settled: 'small' });
    expect(threads.writes).toEqual([]);
  });
});
