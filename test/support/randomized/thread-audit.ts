import { sequenceOf } from '../../../shared/events/ids.js';
import type { TestApi } from '../api.js';
import { type FeedEvent, feedOf, type ListedConversation, listAll, type Violation } from '../audit.js';
import { eventually } from '../eventually.js';
import { everyoneIn, finalStatus, type Ledger, type Upload } from './workload.js';

/**
 * The large threads of a randomized run (docs/api.md, "Sharing", large
 * groups), held through the API: while the run goes on, when each group is
 * first seen large (a member's GET /v1/realtime lists its channel; it stays
 * large) and that its thread feed only grows at its head; once it settled,
 * each thread feed as every member reads it, the merge of its activity into
 * each member's side, and nothing of it in anyone else's feed.
 */
export interface ThreadWatch {
  stop(): Promise<WatchedThreads>;
}

export interface WatchedThreads {
  violations: Violation[];
  /** When each group was first seen large (ms, this process's clock): a change begun later is the thread's. */
  largeSince: Map<string, number>;
  feedReads: number;
}

const groupsIn = (ledger: Ledger) => [...new Set([...ledger.cast.groupsOf.values()].flat())].sort();
const membersOf = (ledger: Ledger, group: string) => ledger.users.filter((userId) => ledger.cast.groupsOf.get(userId)!.includes(group));
const get = (t: TestApi, ledger: Ledger, userId: string, path: string) =>
  t.call(userId, 'GET', path, { groups: ledger.cast.groupsOf.get(userId)! });
/** A member's side of the group, as their POST answered it: the ledger's, so the watch needs no list of its own. */
const sideFromLedger = (ledger: Ledger, userId: string, group: string) =>
  ledger.creates.findLast((create) => create.userId === userId && create.counterpart === group && create.id)?.id;

/** One reader beside the workload, one request at a time (a 503 is only skipped): each group's switch, and each large feed's growth. */
export function watchLargeThreads(t: TestApi, ledger: Ledger): ThreadWatch {
  const violations: Violation[] = [];
  const largeSince = new Map<string, number>();
  /** Each large thread's feed as last read, oldest first: a later read must start with it. */
  const lastFeed = new Map<string, string[]>();
  let feedReads = 0;
  let running = true;
  const groups = groupsIn(ledger);
  const watching = (async () => {
    for (let turn = 0; running; turn += 1) {
      const group = groups[turn % groups.length]!;
      const members = membersOf(ledger, group);
      const reader = members[Math.floor(turn / groups.length) % members.length]!;
      if (!largeSince.has(group)) {
        const response = await get(t, ledger, reader, '/v1/realtime');
        // Large by the answer, not the question: a change begun between them may have found it small.
        if (response.status === 200 && response.body.group_channels.some((listed: { group_id: string }) => listed.group_id === group))
          largeSince.set(group, Date.now());
      } else {
        const side = sideFromLedger(ledger, reader, group);
        const response = side ? await get(t, ledger, reader, `/v1/events?limit=100&conversation_id=${side}`) : undefined;
        // Only a whole feed (one page) is compared: a longer one's pages would be read at different times.
        if (response?.status === 200 && !response.body.has_more) {
          feedReads += 1;
          const now = (response.body.data as FeedEvent[]).map((event) => event.id).reverse();
          const before = lastFeed.get(group) ?? [];
          if (before.some((id, index) => now[index] !== id))
            violations.push({ kind: 'thread feed changed behind its head', detail: `${group}: ${before.join(',')} then ${now.join(',')}` });
          lastFeed.set(group, now);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await watching;
      return { violations, largeSince, feedReads };
    },
  };
}

/** The group an upload went into, or undefined (a direct thread, or none). */
const groupOf = (ledger: Ledger, upload: Upload) =>
  upload.conversationId
    ? ledger.creates.find((create) => create.kind === 'group' && create.userId === upload.userId && create.id === upload.conversationId)
        ?.counterpart
    : undefined;

/**
 * The groups whose thread must be large by the audit: an acknowledged upload into the group began after
 * `threshold` of its members' sides were acknowledged created, none of them ever asked to be deleted, so
 * the fan-out of that upload found them all (the sides the switch counts).
 */
export function groupsOwedTheSwitch(ledger: Ledger, threshold: number): string[] {
  const deleted = new Set(ledger.conversationDeletes.map((removal) => removal.targetId));
  return groupsIn(ledger).filter((group) => {
    const created = ledger.creates
      .filter((create) => create.kind === 'group' && create.counterpart === group && create.id && !deleted.has(create.id))
      .filter((create) => create.endedAt !== undefined && [200, 201].includes(finalStatus(create.attempts)));
    const sides = new Map<string, number>();
    for (const create of created) sides.set(create.userId, Math.min(sides.get(create.userId) ?? Infinity, create.endedAt!));
    if (sides.size < threshold) return false;
    const allCreatedAt = [...sides.values()].sort((a, b) => a - b)[threshold - 1]!;
    return ledger.uploads.some((u) => finalStatus(u.attempts) === 201 && u.startedAt > allCreatedAt && groupOf(ledger, u) === group);
  });
}

/** What a change is, whichever feed lists it: its type and attachment, and for a rename the name it gave. */
const changeOf = (event: FeedEvent) =>
  `${event.type} ${String(event.data.object.id)}${event.type === 'attachment.updated' ? ` ${JSON.stringify(event.data.previous_attributes)}` : ''}`;

/** Whether `group` is large now, as a member's GET /v1/realtime answers (a 503 is asked again, until the wait's deadline). */
async function isLargeNow(t: TestApi, ledger: Ledger, group: string): Promise<boolean> {
  const [reader] = membersOf(ledger, group);
  const response = await eventually(
    () => get(t, ledger, reader!, '/v1/realtime'),
    (answer) => answer.status !== 503,
  );
  if (response.status !== 200) throw new Error(`GET /v1/realtime answered ${response.status}: ${response.text}`);
  return response.body.group_channels.some((listed: { group_id: string }) => listed.group_id === group);
}

/**
 * Once the run settled, for each group large by then (seen so during the run,
 * or found so now: a loaded run's fan-out may switch a thread late): every member holding a
 * side reads the same thread feed through it (403/400 for everyone else),
 * gap-free (sequences n … 1) and each change once; no change is both in the
 * thread feed and delivered into a member's own feed (the switch hands each
 * to one of them); every acknowledged upload into the group begun after it was
 * seen large is in the thread feed; each member's side shows the thread's
 * latest upload later than the side's creation; and nobody's own feed holds
 * an event of the thread's that was not their own change.
 */
export async function auditLargeThreads(
  t: TestApi,
  ledger: Ledger,
  ownFeeds: Map<string, FeedEvent[]>,
  watched: WatchedThreads,
): Promise<{ violations: Violation[]; large: string[] }> {
  const violations: Violation[] = [];
  const add = (kind: string, detail: string) => violations.push({ kind, detail });
  const large: string[] = [];
  for (const group of groupsIn(ledger)) {
    // Only uploads begun after the group was seen large are the thread's for sure.
    const since = watched.largeSince.get(group) ?? ((await isLargeNow(t, ledger, group)) ? Number.POSITIVE_INFINITY : undefined);
    if (since === undefined) continue;
    large.push(group);
    const members = membersOf(ledger, group);
    const sides = new Map<string, ListedConversation>();
    for (const member of members) {
      const [side] = await listAll<ListedConversation>(t, member, `/v1/conversations?group_id=${group}`, ledger.cast.groupsOf.get(member));
      if (side) sides.set(member, side);
    }
    const [first] = sides.keys();
    if (first === undefined) continue;
    const thread = await feedOf(t, first, `conversation_id=${sides.get(first)!.id}`, ledger.cast.groupsOf.get(first));
    const ids = thread.map((event) => event.id);
    const sequences = thread.map((event) => sequenceOf(event.id));
    if (sequences.some((sequence, index) => sequence !== thread.length - index))
      add('thread feed not gap-free', `${group}: sequences ${sequences.join(',')}`);
    const changes = new Map<string, FeedEvent[]>();
    for (const event of thread) changes.set(changeOf(event), [...(changes.get(changeOf(event)) ?? []), event]);
    for (const [change, events] of changes)
      if (events.length > 1) add('change twice in the thread feed', `${group}: ${change}: ${events.map((e) => e.id).join(', ')}`);

    for (const [member, side] of sides) {
      const read = await feedOf(t, member, `conversation_id=${side.id}`, ledger.cast.groupsOf.get(member));
      if (read.map((event) => event.id).join() !== ids.join())
        add('members read different thread feeds', `${group}: ${member} reads ${read.length} events, ${first} ${thread.length}`);
      // The merge rule: the thread's activity shows in a side made before it.
      const latest = Math.max(
        0,
        ...thread
          .filter((event) => event.type === 'attachment.created')
          .map((event) => Number(event.data.object.created_at))
          .filter((at) => at > side.created_at),
      );
      if (latest > 0 && (side.last_active_at ?? 0) < latest)
        add(
          "a member's side misses the thread's activity",
          `${group}: ${member}/${side.id} active ${side.last_active_at}, thread ${latest}`,
        );
      // Another member's upload delivered to the side and listed by the thread: one change twice.
      const delivered = (ownFeeds.get(member) ?? []).filter(
        (event) => event.request_id === null && event.type === 'attachment.created' && event.data.object.uploaded_by !== member,
      );
      for (const event of delivered.filter((own) => changes.has(changeOf(own))))
        add('change both delivered and in the thread feed', `${group}: ${member}/${event.id}: ${changeOf(event)}`);
    }
    for (const upload of ledger.uploads.filter(
      (u) => finalStatus(u.attempts) === 201 && u.id && u.startedAt > since && groupOf(ledger, u) === group,
    )) {
      if (!changes.has(`attachment.created ${upload.id}`))
        add('upload into a large thread missing from its feed', `${group}: ${upload.userId}/${upload.id}`);
    }

    const threadObjects = new Set(thread.map((event) => String(event.data.object.id)));
    for (const reader of everyoneIn(ledger.cast).filter((userId) => !ledger.cast.groupsOf.get(userId)!.includes(group))) {
      const groups = ledger.cast.groupsOf.get(reader)!;
      for (const [member, side] of sides) {
        const response = await t.call(reader, 'GET', `/v1/events?conversation_id=${side.id}`, { groups });
        if (response.status !== 403 && response.status !== 400)
          add(`outsider read a thread feed: ${response.status}`, `${reader} read ${group} through ${member}/${side.id}`);
      }
      for (const event of (ownFeeds.get(reader) ?? []).filter((own) => threadObjects.has(String(own.data.object.id))))
        add("thread's event in an outsider's feed", `${reader}/${event.id}: ${changeOf(event)}`);
    }
  }
  return { violations, large };
}
