import { mulberry32 } from '../../../bench/population.js';
import type { TestApi, TestResponse } from '../api.js';
import { type ListedConversation, listAll, scanViolations, type UserView, type Violation } from '../audit.js';
import { waitThenLook } from '../eventually.js';
import { mayHaveWorked } from './ledger-audit.js';
import { type Cast, type ConversationCreate, everyoneIn, finalStatus, type Ledger, originOf, type Upload } from './workload.js';

/**
 * The sharing invariants of a randomized run, held through the API:
 * while it runs, no side's last_active_at moves back and nobody outside a
 * thread gets a 200 for its files; once faults stop, every acknowledged
 * upload into a thread reached every side of it (and made the direct
 * contact's side), every member sees each attachment of the thread that is
 * still there and nobody else does, and a removed one is gone for everyone.
 */

/** A thread as the workload made it: the uploader's counterpart (the other user, or a group). */
type Thread = Pick<ConversationCreate, 'kind' | 'counterpart'>;

/** The thread an upload went into (undefined: none, the uploader's alone). */
function threadOf(ledger: Ledger, upload: Upload): Thread | undefined {
  if (!upload.conversationId) return undefined;
  return ledger.creates.find((create) => create.userId === upload.userId && create.id === upload.conversationId);
}

/** Who may read an attachment of `uploader` in `thread`: the uploader and every member. */
function isMember(cast: Cast, uploader: string, thread: Thread | undefined, userId: string): boolean {
  if (userId === uploader) return true;
  if (!thread) return false;
  return thread.kind === 'contact' ? thread.counterpart === userId : cast.groupsOf.get(userId)!.includes(thread.counterpart);
}

/** `userId`'s sides of the thread `uploader` uploaded into (one, or none; two are the audit's other violation). */
function sidesIn(conversations: readonly ListedConversation[], uploader: string, thread: Thread, userId: string): ListedConversation[] {
  if (thread.kind === 'group') return conversations.filter((c) => c.group_id === thread.counterpart);
  const other = userId === uploader ? thread.counterpart : uploader;
  return conversations.filter((c) => c.contact_id === other);
}

const acknowledged = (upload: Upload): upload is Upload & { id: string; createdAt: number } =>
  finalStatus(upload.attempts) === 201 && upload.id !== undefined && upload.createdAt !== undefined;

const get = (t: TestApi, cast: Cast, userId: string, path: string) => t.call(userId, 'GET', path, { groups: cast.groupsOf.get(userId)! });

export interface Watched {
  violations: Violation[];
  /** Each side's last_active_at as last read: the audit's reads must not show less. */
  lastSeen: Map<string, number | null>;
  /** When each side was first read (ms, this process's clock): it existed by then. */
  firstSeen: Map<string, number>;
  sideReads: number;
  outsiderReads: number;
}

export interface SharingWatch {
  /** Stops watching; what was seen. */
  stop(): Promise<Watched>;
}

/** Whether a side's last_active_at, read again, shows less than the read before (`before`; undefined: never read). */
function movedBack(before: number | null | undefined, now: number | null): boolean {
  return before !== undefined && before !== null && (now === null || now < before);
}

/**
 * Two readers beside the workload, one request at a time each, through the
 * faults (a 503 is only skipped): one lists every user's conversations in
 * turn and holds each side's last_active_at to never move back; the other
 * asks, as someone outside its thread, for an acknowledged attachment (a 200
 * is a violation), and as the stranger for a user's thread list (anything
 * listed is one).
 */
export function watchSharing(t: TestApi, ledger: Ledger, seed: number): SharingWatch {
  const { cast } = ledger;
  const violations: Violation[] = [];
  const random = mulberry32(seed);
  let running = true;
  let sideReads = 0;
  let outsiderReads = 0;
  const pause = () => new Promise((resolve) => setTimeout(resolve, 40));

  const lastSeen = new Map<string, number | null>();
  const firstSeen = new Map<string, number>();
  const sides = (async () => {
    const readers = [...cast.users, ...cast.passive];
    for (let turn = 0; running; turn += 1) {
      const userId = readers[turn % readers.length]!;
      const response = await get(t, cast, userId, '/v1/conversations?limit=100');
      if (response.status === 200) {
        sideReads += 1;
        const answered = Date.now();
        for (const side of response.body.data as ListedConversation[]) {
          const before = lastSeen.get(side.id);
          if (movedBack(before, side.last_active_at))
            violations.push({ kind: 'last_active_at moved back', detail: `${userId}/${side.id}: ${before} then ${side.last_active_at}` });
          lastSeen.set(side.id, side.last_active_at);
          if (!firstSeen.has(side.id)) firstSeen.set(side.id, answered);
        }
      }
      await pause();
    }
  })();

  const outsiders = (async () => {
    const everyone = everyoneIn(cast);
    while (running) {
      const known = ledger.uploads.filter(acknowledged);
      const upload = known[Math.floor(random() * known.length)];
      const thread = upload && threadOf(ledger, upload);
      const outside = upload ? everyone.filter((userId) => !isMember(cast, upload.userId, thread, userId)) : [];
      const reader = outside[Math.floor(random() * outside.length)];
      if (upload && reader) {
        const response = await get(t, cast, reader, `/v1/attachments/${upload.id}`);
        if (response.status !== 503) outsiderReads += 1;
        if (response.status === 200) violations.push({ kind: 'outsider got 200', detail: `${reader} read ${upload.userId}/${upload.id}` });
        else if (response.status !== 404 && response.status !== 503)
          violations.push({ kind: `outsider got ${response.status}`, detail: `${reader} read ${upload.id}` });
      }
      if (upload?.conversationId) {
        const list = await get(t, cast, cast.stranger, `/v1/attachments?conversation_id=${upload.conversationId}`);
        if (list.status === 200 && list.body.data.length > 0)
          violations.push({ kind: 'outsider listed a thread', detail: `${cast.stranger} listed ${upload.conversationId}` });
      }
      await pause();
    }
  })();

  return {
    async stop() {
      running = false;
      await Promise.all([sides, outsiders]);
      return { violations, lastSeen, firstSeen, sideReads, outsiderReads };
    },
  };
}

/**
 * For the settling audit of each user's own data: an upload listed although
 * the side it went into is gone (deleting a side removes the uploader's
 * uploads into it). The listed conversation_id cannot tell: it is the
 * reader's side of the thread now, null once they hold none.
 */
export function uploadsOfDeletedSides(ledger: Ledger, views: Map<string, UserView>): Violation[] {
  const violations: Violation[] = [];
  for (const userId of ledger.users) {
    const view = views.get(userId)!;
    const held = new Set(view.conversations.map((c) => c.id));
    for (const attachment of view.attachments) {
      const upload = ledger.uploads.find((u) => u.userId === userId && u.op === originOf(attachment.filename));
      if (upload?.conversationId && !held.has(upload.conversationId)) {
        violations.push({ kind: 'attachment in a deleted conversation', detail: `${userId}/${attachment.id} in ${upload.conversationId}` });
      }
    }
  }
  return violations;
}

/**
 * Once faults stopped and the audit of each user's own data settled: the
 * fan-out has reached every side (read until it has, or `timeoutMs` passed)
 * and no side shows less than the watch last read; then who sees what, asked
 * of everyone for every upload that was acknowledged or is listed.
 */
export async function auditSharing(
  t: TestApi,
  ledger: Ledger,
  views: Map<string, UserView>,
  watched: Watched,
  timeoutMs = 20_000,
): Promise<Violation[]> {
  const { cast } = ledger;
  const readers = [...cast.users, ...cast.passive];
  const sidesNow = async () =>
    new Map(
      await Promise.all(
        // With each reader's groups: a large group's side shows its thread's activity only to a token that lists the group.
        readers.map(
          async (userId) => [userId, await listAll<ListedConversation>(t, userId, '/v1/conversations', cast.groupsOf.get(userId))] as const,
        ),
      ),
    );
  const { sides, violations } = await waitThenLook(
    async () => {
      const sides = await sidesNow();
      return { sides, violations: fanOutViolations(ledger, sides, watched) };
    },
    (result) => result.violations.length === 0,
    timeoutMs,
    500,
  );
  for (const [userId, conversations] of sides) {
    for (const side of conversations.filter((c) => movedBack(watched.lastSeen.get(c.id), c.last_active_at))) {
      violations.push({
        kind: 'last_active_at moved back',
        detail: `${userId}/${side.id}: ${watched.lastSeen.get(side.id)} then ${side.last_active_at}`,
      });
    }
  }
  violations.push(...(await visibilityViolations(t, ledger, views, sides)));
  for (const [userId, conversations] of [...sides].filter(([userId]) => cast.passive.includes(userId))) {
    // A passive user never calls: only the fan-out gave it sides, and never a group's.
    for (const side of conversations.filter((c) => c.group_id !== null))
      violations.push({ kind: 'side made for a group member', detail: `${userId}/${side.id}` });
  }
  const strangers = await listAll<ListedConversation>(t, cast.stranger, '/v1/conversations');
  if (strangers.length > 0) violations.push({ kind: 'side made for a stranger', detail: strangers.map((c) => c.id).join(', ') });
  return violations;
}

/**
 * Every acknowledged upload into a thread reached each side that existed
 * before it began (last_active_at at least its time). A side's created_at
 * cannot tell: the fan-out dates the side it makes at the upload that made
 * it, which may be older than a later upload into another side of the thread.
 * So a side counts as older when its user's POST answered it, or the watch
 * read it, before the upload began; and a direct contact who deleted none of
 * their sides of the thread since the upload began must hold one that the
 * upload reached (the fan-out made it or moved it).
 */
function fanOutViolations(ledger: Ledger, sides: Map<string, ListedConversation[]>, watched: Watched): Violation[] {
  const { cast } = ledger;
  const violations: Violation[] = [];
  const answeredAt = new Map<string, number>();
  for (const create of ledger.creates) {
    if (create.id && create.endedAt !== undefined)
      answeredAt.set(create.id, Math.min(answeredAt.get(create.id) ?? Number.POSITIVE_INFINITY, create.endedAt));
  }
  const existedBefore = (sideId: string, ms: number) =>
    (answeredAt.get(sideId) ?? Number.POSITIVE_INFINITY) < ms || (watched.firstSeen.get(sideId) ?? Number.POSITIVE_INFINITY) < ms;
  /** Whether `userId` may have deleted a side of the thread once the upload began: only 404s, or answers before it, rule that out. */
  const deletedSince = (userId: string, upload: Upload, thread: Thread) =>
    ledger.conversationDeletes.some(
      (removal) =>
        removal.userId === userId &&
        removal.attempts.some(mayHaveWorked) &&
        (removal.endedAt ?? Number.POSITIVE_INFINITY) >= upload.startedAt &&
        ledger.creates.some(
          (create) => create.id === removal.targetId && sidesIn([asSide(create)], upload.userId, thread, userId).length === 1,
        ),
    );
  // A large group's side shows the thread's activity when later than its created_at (docs/api.md): one made in the upload's second cannot.
  const reached = (side: ListedConversation, upload: Upload & { createdAt: number }) =>
    (side.last_active_at !== null && side.last_active_at >= upload.createdAt) ||
    (side.group_id !== null && side.created_at >= upload.createdAt);

  for (const upload of ledger.uploads.filter(acknowledged)) {
    const thread = threadOf(ledger, upload);
    if (!thread) continue;
    for (const member of [...sides.keys()].filter((userId) => isMember(cast, upload.userId, thread, userId))) {
      for (const side of sidesIn(sides.get(member)!, upload.userId, thread, member).filter(
        (s) => existedBefore(s.id, upload.startedAt) && !reached(s, upload),
      )) {
        violations.push({
          kind: 'upload did not reach a side',
          detail: `${upload.userId}/${upload.id} at ${upload.createdAt}: ${member}/${side.id} active ${side.last_active_at}`,
        });
      }
    }
    if (thread.kind === 'contact' && !deletedSince(thread.counterpart, upload, thread)) {
      const [side] = sidesIn(sides.get(thread.counterpart)!, upload.userId, thread, thread.counterpart);
      if (!side)
        violations.push({ kind: 'direct contact holds no side', detail: `${upload.userId}/${upload.id} for ${thread.counterpart}` });
      else if (!reached(side, upload)) {
        violations.push({
          kind: "upload did not reach the contact's side",
          detail: `${upload.userId}/${upload.id} at ${upload.createdAt}: ${thread.counterpart}/${side.id} active ${side.last_active_at}`,
        });
      }
    }
  }
  return violations;
}

/** A conversation as its create made it, enough to tell its thread. */
const asSide = (create: ConversationCreate): ListedConversation => ({
  id: create.id!,
  contact_id: create.kind === 'contact' ? create.counterpart : null,
  group_id: create.kind === 'group' ? create.counterpart : null,
  pinned_message_id: null,
  created_at: 0,
  last_active_at: null,
});

/** At most this many GETs at once: the audit's reads are many (uploads × everyone) and the machine small. */
const AUDIT_CONCURRENCY = 6;

async function inPool<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: AUDIT_CONCURRENCY }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/**
 * Everyone's GET of every upload the ledger knows an id of, or that its
 * uploader lists: 200 for the uploader and every member while its record is
 * there (uploaded_by the uploader, conversation_id the reader's own side or
 * null), 404 for everyone else, and 404 for everyone once it is gone; and each
 * side's thread list holds exactly the thread's attachments that are there.
 */
async function visibilityViolations(
  t: TestApi,
  ledger: Ledger,
  views: Map<string, UserView>,
  sides: Map<string, ListedConversation[]>,
): Promise<Violation[]> {
  const { cast } = ledger;
  const violations: Violation[] = [];
  const listed = new Map<string, Upload>();
  for (const userId of cast.users) {
    for (const attachment of views.get(userId)!.attachments) {
      const upload = ledger.uploads.find((u) => u.userId === userId && u.op === originOf(attachment.filename));
      if (upload) listed.set(attachment.id, upload);
    }
  }
  const known = new Map(ledger.uploads.filter((u) => u.id !== undefined).map((u) => [u.id!, u]));
  const checks = [...new Map([...known, ...listed])].flatMap(([id, upload]) => everyoneIn(cast).map((reader) => ({ id, upload, reader })));
  await inPool(checks, async ({ id, upload, reader }) => {
    const thread = threadOf(ledger, upload);
    const there = listed.has(id);
    const expected = there && isMember(cast, upload.userId, thread, reader) ? 200 : 404;
    const response: TestResponse = await get(t, cast, reader, `/v1/attachments/${id}`);
    if (response.status !== expected) {
      const why = !there ? 'gone' : expected === 200 ? 'a member' : 'outside its thread';
      violations.push({ kind: `${why} got ${response.status}`, detail: `${reader} read ${upload.userId}/${id}` });
      return;
    }
    if (response.status !== 200) return;
    const ownSide =
      thread && reader !== upload.userId ? (sidesIn(sides.get(reader) ?? [], upload.userId, thread, reader)[0]?.id ?? null) : undefined;
    if (response.body.uploaded_by !== upload.userId)
      violations.push({ kind: 'uploaded_by is not the uploader', detail: `${reader} read ${id}: ${response.body.uploaded_by}` });
    // Scanning (docs/api.md): no link to an infected file for anyone, to a file not clean for no one but its uploader.
    violations.push(...scanViolations(`${reader} read ${upload.userId}/${id}`, response.body, reader === upload.userId));
    if (ownSide !== undefined && response.body.conversation_id !== ownSide) {
      violations.push({
        kind: "conversation_id is not the reader's side",
        detail: `${reader} read ${id}: ${response.body.conversation_id}, side ${ownSide}`,
      });
    }
  });

  const threadOfAttachment = new Map([...listed].map(([id, upload]) => [id, { upload, thread: threadOf(ledger, upload) }]));
  const sideChecks = [...sides].flatMap(([userId, conversations]) => conversations.map((side) => ({ userId, side })));
  await inPool(sideChecks, async ({ userId, side }) => {
    let shown: string[];
    try {
      shown = (await listAll<{ id: string }>(t, userId, `/v1/attachments?conversation_id=${side.id}`, cast.groupsOf.get(userId)!)).map(
        (a) => a.id,
      );
    } catch (error) {
      violations.push({ kind: 'thread list refused to a member', detail: `${userId}/${side.id}: ${String(error).slice(0, 200)}` });
      return;
    }
    const expected = [...threadOfAttachment]
      .filter(
        ([, { upload, thread }]) =>
          thread && isMember(cast, upload.userId, thread, userId) && sidesIn([side], upload.userId, thread, userId).length === 1,
      )
      .map(([id]) => id);
    const missing = expected.filter((id) => !shown.includes(id));
    const extra = shown.filter((id) => !expected.includes(id));
    if (missing.length > 0)
      violations.push({ kind: 'thread list misses an attachment', detail: `${userId}/${side.id}: ${missing.join(', ')}` });
    if (extra.length > 0)
      violations.push({ kind: 'thread list shows a foreign attachment', detail: `${userId}/${side.id}: ${extra.join(', ')}` });
  });
  return violations;
}
