import { type AttachmentRecord, attachmentObject } from '../attachments/model.js';
import { type Counterpart, type Thread, threadKey, threadOf } from '../dynamo/keys.js';
import { createdEvent, deletedEvent, type EventDraft, updatedEvents } from '../events/model.js';
import { fileAccess, type ScanSettings } from '../scanning/model.js';
import type { Clock } from '../time.js';
import type { GroupThread } from './large-threads.js';

/**
 * What the fan-out reacts to: every change of the attachments table (an
 * upload, a rename, a removal each reach the thread's other members). The
 * stack's mapping filters on this pattern, the local poller applies it too.
 */
export const CHANGES_FILTER_PATTERN = { eventName: ['INSERT', 'MODIFY', 'REMOVE'] } as const;

/**
 * A change to an attachment of a thread, as the attachments table's stream
 * shows it: an upload, a rename, a removal (by its uploader, or by the
 * cleanup of the uploader's side). `id` is the stream record's eventID, the
 * same on every delivery of the record: a member's feed records it once.
 */
export type ThreadChange =
  | { kind: 'created'; id: string; record: AttachmentRecord }
  | { kind: 'renamed'; id: string; record: AttachmentRecord; before: AttachmentRecord }
  | { kind: 'removed'; id: string; record: AttachmentRecord };

/** What a batch's changes of one thread bring one member who did not make them. */
export interface MemberDelivery {
  userId: string;
  /** Whom the member's side is with: the uploader in a direct thread, the group in a group's. */
  counterpart: Counterpart;
  /** The member's side, when the index of the thread's sides named it (a group); else it is looked up. */
  conversationId?: string;
  /** Other members' changes, in the stream's order, each an event in the member's feed. */
  changes: ThreadChange[];
}

/** A member's side of a group's thread, as the index of the thread's sides names it. */
export interface Side {
  userId: string;
  conversationId: string;
}

/** Where the fan-out finds a group's sides (DynamoConversationStore). */
export interface SidesIndex {
  /** Every side of a thread (or only those not marked large yet), a page of its index at a time. */
  sidesOf(threadKey: string, unmarkedOnly?: boolean): AsyncIterable<Side[]>;
}

/** What the fan-out writes through (SideDelivery). */
export interface MemberFeeds {
  /** The member's events, their side's activity, and in a direct thread their side made when they hold none: false when they hold no side. */
  deliver(delivery: MemberDelivery): Promise<boolean>;
  /**
   * The deliveries less the changes an earlier delivery recorded (a retried
   * batch), and less those that show nothing; a delivery left with none is
   * left out. A cheap read that spares a retried batch the reads and
   * transaction of every member it had reached; a change not known to be
   * recorded stays in (the write's own conditions decide).
   */
  notYetDelivered(deliveries: readonly MemberDelivery[]): Promise<MemberDelivery[]>;
}

/** Where a group's thread says whether it is large, and what a large one's changes write (LargeThreads). */
export interface GroupThreads {
  thread(groupId: string): Promise<GroupThread>;
  becomeLarge(groupId: string, at: number | undefined, now: number, switchChanges: readonly string[]): Promise<void>;
  markSide(userId: string, conversationId: string): Promise<void>;
  swept(groupId: string, now: number): Promise<void>;
  settled(groupId: string): Promise<void>;
  moveActivity(groupId: string, at: number): Promise<void>;
}

/** Where a large thread's changes are its events (ThreadFeedWriter): once each, however often delivered. */
export interface ThreadFeeds {
  record(groupId: string, changes: readonly ThreadChange[]): Promise<void>;
  /** Records these changes as in the thread's feed without events (the switching batch's, which reached every side), each kept whole; their ids. */
  passOver(groupId: string, changes: readonly ThreadChange[]): Promise<string[]>;
  /** The changes of these ids a switch passed over: what it owes a side it has not reached yet. */
  passedOver(groupId: string, ids: readonly string[]): Promise<ThreadChange[]>;
}

/** The switch's settling timer (SqsSettlingTimers): the group comes back INDEX_SETTLE_SECONDS later for the settling sweep. */
export interface SettlingTimers {
  start(groupId: string): Promise<void>;
}

/** The switch to large groups: the threads' records and feeds, and the sides at which a group's thread becomes large. */
export interface LargeGroups {
  threads: GroupThreads;
  feeds: ThreadFeeds;
  largeGroupSides: number;
  clock: Clock;
  settling: SettlingTimers;
}

/** What a batch's delivery came to. */
export interface FanOutOutcome {
  /** Members reached now. */
  reached: number;
  /** Large threads written once for their members. */
  threads: number;
  /** Group members left alone: an earlier delivery of these changes had reached them. */
  skipped: number;
  /** The batch's first change not delivered to every member of its thread, and why: what is retried from. */
  unfinished?: { change: ThreadChange; error: unknown };
}

/** Members of a group written at once: enough to reach 1,000 sides in seconds, few enough not to throttle one partition. */
const GROUP_WRITES_IN_FLIGHT = 16;

/**
 * Moves a batch of attachment changes to the other members of their threads
 * (docs/api.md, "Sharing" and "Events"): each member who holds a side gets
 * one event per change in their feed and, for uploads, their side's
 * last_active_at moved forward to the latest upload's time, in the same
 * transaction; a direct thread's contact who holds no side gets it made by
 * an upload. Every write records which changes it delivered, so a record
 * delivered twice, or retried after a lost answer, changes nothing the
 * second time. A group member without a side gets nothing: the service
 * knows a group's members only from their tokens.
 */
export class FanOut {
  constructor(
    private readonly sides: SidesIndex,
    private readonly members: MemberFeeds,
    private readonly large: LargeGroups,
  ) {}

  /**
   * Thread by thread, in the order of their first change in the batch; a
   * thread that fails stops the batch there, so every change before that
   * thread's first was delivered to every member (`unfinished`).
   */
  async deliver(changes: ThreadChange[]): Promise<FanOutOutcome> {
    const outcome: FanOutOutcome = { reached: 0, threads: 0, skipped: 0 };
    for (const { thread, changes: ofThread } of byThread(changes)) {
      try {
        if (thread.kind === 'direct') outcome.reached += await this.direct(thread.members, ofThread);
        else await this.group(thread.groupId, ofThread, outcome);
      } catch (error) {
        return { ...outcome, unfinished: { change: ofThread[0], error } };
      }
    }
    return outcome;
  }

  /** Each member of a direct thread gets the other's changes (a thread of one has no other side). */
  private async direct([first, second]: readonly [string, string], changes: ThreadChange[]): Promise<number> {
    if (first === second) return 0;
    let reached = 0;
    for (const [member, other] of [
      [first, second],
      [second, first],
    ] as const) {
      const theirs = changes.filter((change) => change.record.uploaded_by === other);
      if (
        theirs.length > 0 &&
        (await this.members.deliver({ userId: member, counterpart: { kind: 'contact', id: other }, changes: theirs }))
      )
        reached += 1;
    }
    return reached;
  }

  /**
   * A large thread's changes write the thread once (its activity), never a
   * side. A small thread's go to every side, and the batch that finds
   * `largeGroupSides` sides makes the thread large once it has reached them
   * all (docs/decisions.md, "Large groups").
   */
  private async group(groupId: string, changes: ThreadChange[], outcome: FanOutOutcome): Promise<void> {
    const { threads, feeds, largeGroupSides, clock } = this.large;
    const thread = await threads.thread(groupId);
    if (thread.large) return this.largeThread(groupId, thread, changes, outcome);
    const at = latestUpload(changes);
    const seen = new Set<string>();
    for await (const page of this.sides.sidesOf(threadKey({ kind: 'group', groupId }))) {
      for (const side of page) seen.add(side.conversationId);
      await this.deliverTo(page, groupId, changes, outcome);
    }
    if (seen.size < largeGroupSides) return;
    // Before the switch: a retry of this batch finds the thread large, and must not list these changes again.
    const passed = await feeds.passOver(groupId, changes);
    await threads.becomeLarge(groupId, at, clock(), passed);
    await this.sweep(groupId, changes, seen, outcome);
  }

  /** A large thread's changes: its activity and its feed, after the switch's sweep if it is unfinished. */
  private async largeThread(groupId: string, thread: GroupThread, changes: ThreadChange[], outcome: FanOutOutcome): Promise<void> {
    const { threads, feeds } = this.large;
    // A switch whose sweep failed part way is finished by the next change (it is retried until it is), owing the
    // sides it has not reached yet every change it passed over: a retried batch split in two carries only some.
    if (!thread.swept) await this.sweep(groupId, await feeds.passedOver(groupId, thread.switchChanges), new Set(), outcome);
    const at = latestUpload(changes);
    // The activity first: a member told of an event by its push then reads the side as it shows it.
    if (at !== undefined) await threads.moveActivity(groupId, at);
    await feeds.record(groupId, changes);
    outcome.threads += 1;
  }

  /**
   * Marks every side of a thread that just became large, so that its
   * members' lists find it (by_large_side); sides made from now on are
   * marked at their creation (LargeThreads.stillSmall). A side made while the
   * switching batch went over the others, before the thread became large
   * (made unmarked, so found here), is first handed the changes the switch
   * `owed` it: each change is then in every side or in the thread's feed.
   */
  private async sweep(groupId: string, owed: ThreadChange[], seen: ReadonlySet<string>, outcome: FanOutOutcome): Promise<void> {
    await this.markUnmarked(groupId, owed, seen, outcome);
    // Before `swept`: a timer that cannot be sent fails the batch, whose retry sweeps and sends again.
    await this.large.settling.start(groupId);
    await this.large.threads.swept(groupId, this.large.clock());
  }

  /**
   * The settling sweep, when the switch's timer comes INDEX_SETTLE_SECONDS
   * after the thread became large, when by_thread shows every side made
   * before (a side made after is marked at its creation): each side still
   * unmarked is handed every change the switch passed over, then marked.
   * Once: a timer that comes again finds the thread settled.
   */
  async settle(groupId: string): Promise<FanOutOutcome & { settled: 'now' | 'before' | 'small' }> {
    const outcome: FanOutOutcome = { reached: 0, threads: 0, skipped: 0 };
    const thread = await this.large.threads.thread(groupId);
    if (!thread.large) return { ...outcome, settled: 'small' };
    if (thread.settled) return { ...outcome, settled: 'before' };
    await this.markUnmarked(groupId, await this.large.feeds.passedOver(groupId, thread.switchChanges), new Set(), outcome);
    await this.large.threads.settled(groupId);
    return { ...outcome, settled: 'now' };
  }

  /** Each side by_thread shows unmarked is handed `owed` (unless in `seen`, which the batch reached), then marked. */
  private async markUnmarked(groupId: string, owed: ThreadChange[], seen: ReadonlySet<string>, outcome: FanOutOutcome): Promise<void> {
    for await (const page of this.sides.sidesOf(threadKey({ kind: 'group', groupId }), true)) {
      await this.deliverTo(
        page.filter((side) => !seen.has(side.conversationId)),
        groupId,
        owed,
        outcome,
      );
      await this.markAll(page);
    }
  }

  private async markAll(sides: readonly Side[]): Promise<void> {
    for (let start = 0; start < sides.length; start += GROUP_WRITES_IN_FLIGHT) {
      const settled = await Promise.allSettled(
        sides.slice(start, start + GROUP_WRITES_IN_FLIGHT).map((side) => this.large.threads.markSide(side.userId, side.conversationId)),
      );
      const failed = settled.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    }
  }

  /**
   * Each of these sides gets the changes not its member's: those an
   * earlier delivery reached (a retried batch) are left out by one cheap
   * read, the others written GROUP_WRITES_IN_FLIGHT at once.
   */
  private async deliverTo(sides: readonly Side[], groupId: string, changes: ThreadChange[], outcome: FanOutOutcome): Promise<void> {
    const all = sides
      .map(
        (side): MemberDelivery => ({
          ...side,
          counterpart: { kind: 'group', id: groupId },
          changes: changes.filter((change) => change.record.uploaded_by !== side.userId),
        }),
      )
      .filter((delivery) => delivery.changes.length > 0);
    if (all.length === 0) return;
    const deliveries = await this.members.notYetDelivered(all);
    outcome.skipped += all.length - deliveries.length;
    for (let start = 0; start < deliveries.length; start += GROUP_WRITES_IN_FLIGHT) {
      // Every write of the chunk settled before a failure is answered: none goes on after the invocation ends.
      const settled = await Promise.allSettled(
        deliveries.slice(start, start + GROUP_WRITES_IN_FLIGHT).map((delivery) => this.members.deliver(delivery)),
      );
      outcome.reached += settled.filter((result) => result.status === 'fulfilled' && result.value).length;
      const failed = settled.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    }
  }
}

/** A batch's changes by thread, each thread's in the batch's order. */
export function byThread(changes: ThreadChange[]): { thread: Thread; changes: [ThreadChange, ...ThreadChange[]] }[] {
  const threads = new Map<string, { thread: Thread; changes: [ThreadChange, ...ThreadChange[]] }>();
  for (const change of changes) {
    const { uploaded_by, placement } = change.record;
    if (!placement) continue;
    const thread = threadOf(uploaded_by, placement.counterpart);
    const key = threadKey(thread);
    const entry = threads.get(key);
    if (entry) entry.changes.push(change);
    else threads.set(key, { thread, changes: [change] });
  }
  return [...threads.values()];
}

/**
 * The events a change is in the feed of a member whose side of the thread is
 * `conversationId` (none for a rename that shows nothing new), showing what
 * scanning lets a member see of the file at that point (a scan result is a
 * change like a rename).
 */
export function memberEvents(
  change: ThreadChange,
  conversationId: string | null,
  scanning: Pick<ScanSettings, 'serveUnscannable'>,
): EventDraft[] {
  const asMember = (record: AttachmentRecord) => attachmentObject(record, conversationId, fileAccess(record.scan_status, false, scanning));
  switch (change.kind) {
    case 'created':
      return [createdEvent('attachment', asMember(change.record), null)];
    case 'renamed':
      return updatedEvents('attachment', asMember(change.before), asMember(change.record), null);
    case 'removed':
      return [deletedEvent('attachment', change.record.id, null)];
  }
}

/**
 * Whether a change puts an event in a member's feed, and so is recorded as
 * delivered (a rename that shows nothing new does neither). It does not
 * depend on the member's side, hence any side id.
 */
export function showsAnything(change: ThreadChange, scanning: Pick<ScanSettings, 'serveUnscannable'>): boolean {
  return memberEvents(change, '', scanning).length > 0;
}

/**
 * The time of the latest upload among `changes`: where the member's side's
 * last_active_at moves. Every write moves it forward only, so the latest
 * stands for all of them (100 uploads into a group of 1,000 in one batch
 * move each side once).
 */
export function latestUpload(changes: readonly ThreadChange[]): number | undefined {
  const times = changes.filter((change) => change.kind === 'created').map((change) => change.record.created_at);
  return times.length > 0 ? Math.max(...times) : undefined;
}
