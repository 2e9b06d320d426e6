import { EVENT_TYPES, type EventType } from '../../../shared/events/model.js';
import type { FeedEvent, UserView, Violation } from '../audit.js';
import { mayHaveWorked } from './ledger-audit.js';
import { type Attempt, type Ledger, originOf, type Removal } from './workload.js';

/**
 * The events of a randomized run, held against its ledger and the end state
 * (docs/api.md, "Events"): in the feed of the user who sent it, every change
 * the API acknowledged has exactly one event of its type, naming its object,
 * carrying its request's id; a refused request, a replayed answer and the
 * 200 of an existing conversation have none; one Idempotency-Key has at most
 * one, and an upload session's steps before its completion none; a request
 * whose answer was a 5xx (or lost) has at most one, and has
 * one exactly when the end state shows its change, where the ledger can tell.
 * No event names a request the workload did not send, and each feed is
 * newest first, every event listed once. Events without a request id (what
 * reaches a user from other members or from the cleanup) are only held to
 * the event's shape here.
 */

/** One operation of the ledger, as the events audit holds it. */
interface Operation {
  /** For the report: `chaos-1-u0 upload op12`. */
  name: string;
  userId: string;
  /** The event its change makes. */
  type: EventType;
  attempts: Attempt[];
  /** Sent under an Idempotency-Key: all its attempts are one change at most. */
  keyed: boolean;
  /**
   * A create without a key: each attempt that was not answered may have made
   * a conversation of its own (a retry makes another when the first one's was
   * deleted meanwhile), so it has at most one event per request, not in all.
   */
  perAttempt: boolean;
  /** The object its event names, when known: its target, or the one its answer (or the end state) gave. */
  objectId?: string;
  /** Fields its event's object must show: the new value, the counterpart, the file's name. */
  shows: Record<string, unknown>;
  /** Answered as having changed something (a 2xx that is no 200 of an existing conversation). */
  acknowledged: boolean;
  /** Whether its change happened: known when acknowledged, refused, or the end state shows it; undefined when the ledger cannot tell. */
  happened: boolean | undefined;
  /** An attempt answered as having done nothing: its request has no event. */
  idle: (attempt: Attempt) => string | undefined;
  /** The other event its change may add: an upload into a conversation moves its last_active_at. */
  alongside?: { type: EventType; objectId: string };
}

const refused = (attempt: Attempt) =>
  attempt.status >= 400 && attempt.status < 500 ? `refused (${attempt.status})` : attempt.replayed ? 'a replayed answer' : undefined;
const mayHaveChanged = (op: Pick<Operation, 'idle'>, attempt: Attempt) => mayHaveWorked(attempt) && op.idle(attempt) === undefined;

/**
 * The ledger's operations with what the end state says of each. Deletes of
 * one target exclude each other (the second answers 404), and an attachment
 * also goes with its conversation (the cleanup).
 */
function operationsOf(ledger: Ledger, views: Map<string, UserView>): Operation[] {
  const operations: Operation[] = [];
  const add = (
    op: Omit<Operation, 'happened' | 'idle' | 'acknowledged'> & { idle?: Operation['idle'] },
    acknowledgedBy: number,
    shown: () => boolean | undefined,
  ) => {
    const idle = op.idle ?? refused;
    // A replay acknowledges too: the change it answers for was made by the key's first run.
    const acknowledged = op.attempts.some((attempt) => attempt.status === acknowledgedBy);
    const tried = op.attempts.some((attempt) => mayHaveChanged({ idle }, attempt));
    operations.push({ ...op, idle, acknowledged, happened: acknowledged ? true : tried ? shown() : false });
  };
  const viewOf = (userId: string) => views.get(userId) ?? { conversations: [], attachments: [] };
  const mayHaveRemoved = (records: Removal[], userId: string, targetId: string) =>
    records.filter(
      (r) => r.userId === userId && r.targetId === targetId && r.attempts.some((attempt) => mayHaveChanged({ idle: refused }, attempt)),
    );
  const answered200 = (records: Removal[], userId: string, targetId: string) =>
    records.some((r) => r.userId === userId && r.targetId === targetId && r.attempts.some((attempt) => attempt.status === 200));
  /**
   * Deletes: one did not happen when its target is still listed or another
   * delete of it was answered 200; it did when the target is gone and no
   * other delete (nor anything `removedOtherwise` names) could have removed it.
   */
  const deletesOf = (
    records: Removal[],
    type: EventType,
    listed: (userId: string, id: string) => boolean,
    removedOtherwise = (_userId: string, _id: string) => false,
  ) => {
    for (const removal of records) {
      const { userId, targetId } = removal;
      add(
        {
          name: `${userId} delete op${removal.op}`,
          userId,
          type,
          attempts: removal.attempts,
          keyed: false,
          perAttempt: false,
          objectId: targetId,
          shows: { deleted: true },
        },
        200,
        () => {
          if (listed(userId, targetId) || answered200(records, userId, targetId)) return false;
          return !removedOtherwise(userId, targetId) && mayHaveRemoved(records, userId, targetId).length === 1 ? true : undefined;
        },
      );
    }
  };

  for (const create of ledger.creates) {
    add(
      {
        name: `${create.userId} create op${create.op}`,
        userId: create.userId,
        type: 'conversation.created',
        attempts: create.attempts,
        keyed: create.key !== undefined,
        perAttempt: create.key === undefined,
        ...(create.id ? { objectId: create.id } : {}),
        shows: create.kind === 'contact' ? { contact_id: create.counterpart } : { group_id: create.counterpart },
        // A 200 answers with the conversation that already held the place: nothing was created.
        idle: (attempt) => refused(attempt) ?? (attempt.status === 200 ? 'the 200 of an existing conversation' : undefined),
      },
      201,
      // The place may have been taken by another create or by the fan-out: a conversation there proves nothing.
      () => undefined,
    );
  }
  for (const update of ledger.conversationUpdates) {
    const listed = viewOf(update.userId).conversations.find((c) => c.id === update.targetId);
    // Each update's value is its own: shown at the end, this update made it (a later one would show another).
    add(
      {
        name: `${update.userId} update op${update.op}`,
        userId: update.userId,
        type: 'conversation.updated',
        attempts: update.attempts,
        keyed: false,
        perAttempt: false,
        objectId: update.targetId,
        shows: { pinned_message_id: update.value },
      },
      200,
      () => (listed?.pinned_message_id === update.value ? true : undefined),
    );
  }
  deletesOf(ledger.conversationDeletes, 'conversation.deleted', (userId, id) => viewOf(userId).conversations.some((c) => c.id === id));
  for (const upload of ledger.uploads) {
    const listed = viewOf(upload.userId).attachments.find((a) => originOf(a.filename) === upload.op);
    const objectId = upload.id ?? listed?.id;
    add(
      {
        name: `${upload.userId} upload op${upload.op}`,
        userId: upload.userId,
        type: 'attachment.created',
        attempts: upload.attempts,
        keyed: upload.key !== undefined,
        perAttempt: false,
        ...(objectId ? { objectId } : {}),
        shows: { filename: upload.filename },
        ...(upload.conversationId ? { alongside: { type: 'conversation.updated', objectId: upload.conversationId } } : {}),
      },
      201,
      () => {
        if (listed) return true;
        // Its id was never answered, so nobody deleted it by id: only the cleanup of its conversation could have.
        return upload.conversationId && mayHaveRemoved(ledger.conversationDeletes, upload.userId, upload.conversationId).length > 0
          ? undefined
          : false;
      },
    );
  }
  for (const rename of ledger.renames) {
    const listed = viewOf(rename.userId).attachments.find((a) => a.id === rename.targetId);
    add(
      {
        name: `${rename.userId} rename op${rename.op}`,
        userId: rename.userId,
        type: 'attachment.updated',
        attempts: rename.attempts,
        keyed: false,
        perAttempt: false,
        objectId: rename.targetId,
        shows: { filename: rename.value },
      },
      200,
      () => (listed?.filename === rename.value ? true : undefined),
    );
  }
  deletesOf(
    ledger.attachmentDeletes,
    'attachment.deleted',
    (userId, id) => viewOf(userId).attachments.some((a) => a.id === id),
    // The cleanup of its conversation removes it too.
    (userId, id) => {
      const conversationId = ledger.uploads.find((upload) => upload.id === id)?.conversationId;
      return conversationId !== undefined && mayHaveRemoved(ledger.conversationDeletes, userId, conversationId).length > 0;
    },
  );
  return operations;
}

const objectIdOf = (event: FeedEvent): unknown => event.data?.object?.id;

/**
 * Another request changed what an operation sets on the same object between its events (feed ids grow with
 * the feed): a retry without an Idempotency-Key then makes its change again, one event per change, as it should.
 */
function changedBetween(feed: readonly FeedEvent[], events: readonly FeedEvent[], shows: Record<string, unknown>): boolean {
  const ids = events.map(({ id }) => id).sort();
  const [first, last] = [ids[0]!, ids.at(-1)!];
  const { type } = events[0]!;
  const object = objectIdOf(events[0]!);
  return feed.some(
    (event) =>
      event.type === type &&
      objectIdOf(event) === object &&
      event.id > first &&
      event.id < last &&
      !events.includes(event) &&
      Object.keys(shows).some((field) => field in (event.data.previous_attributes ?? {})),
  );
}
const describe = (events: readonly FeedEvent[]) =>
  events.map((event) => `${event.id} ${event.type} of ${String(objectIdOf(event))} by ${event.request_id}`).join('; ');

/**
 * Holds each user's feed (`feeds`: the whole feed, as listed, of every user
 * read) against the ledger and the end state's `views`.
 */
export function auditEvents(ledger: Ledger, views: Map<string, UserView>, feeds: Map<string, FeedEvent[]>): Violation[] {
  const violations: Violation[] = [];
  const add = (kind: string, detail: string) => violations.push({ kind, detail });
  const operations = operationsOf(ledger, views);
  const byRequest = new Map<string, { op: Operation; attempt: Attempt }>();
  for (const op of operations) for (const attempt of op.attempts) if (attempt.requestId) byRequest.set(attempt.requestId, { op, attempt });
  const eventsOf = new Map<Operation, { event: FeedEvent; attempt?: Attempt }[]>(operations.map((op) => [op, []]));
  // An upload session's start and parts change nothing a user sees: only its completion has an event.
  const sessionSteps = new Map(
    ledger.uploads.flatMap((upload) =>
      (upload.session?.steps ?? []).flatMap((step) =>
        step.requestId ? [[step.requestId, `${upload.userId} upload session of op${upload.op}`] as const] : [],
      ),
    ),
  );

  /**
   * The operation an event names no request of may still have caused it: one
   * whose answer was lost (-1) has no request id, since the server mints it
   * and sends it only in the answer. Such events are matched by their type
   * and object instead.
   */
  const lostAnswerOf = (userId: string, event: FeedEvent) =>
    operations.find((op) => {
      if (op.userId !== userId || !op.attempts.some((attempt) => attempt.status === -1)) return false;
      const object = event.data.object;
      if (op.alongside && event.type === op.alongside.type) return object.id === op.alongside.objectId;
      if (event.type !== op.type) return false;
      return op.objectId !== undefined
        ? object.id === op.objectId
        : Object.entries(op.shows).every(([field, value]) => object[field] === value);
    });

  for (const [userId, feed] of feeds) {
    const seen = new Set<string>();
    for (const [index, event] of feed.entries()) {
      const at = `${userId}/${event.id}`;
      if (seen.has(event.id)) add('event listed twice', at);
      seen.add(event.id);
      const before = feed[index - 1];
      if (before && before.id <= event.id) add('feed not newest first', `${userId}: ${before.id} listed before ${event.id}`);
      if (before && before.created_at < event.created_at)
        add(
          'feed created_at goes forward',
          `${userId}: ${before.id} (${before.created_at}) listed before ${event.id} (${event.created_at})`,
        );
      if (!(EVENT_TYPES as readonly string[]).includes(event.type)) add('event of an unknown type', `${at}: ${event.type}`);
      if (typeof objectIdOf(event) !== 'string') add('event without data.object.id', `${at} (${event.type})`);
      if (event.request_id === null) continue;
      const step = sessionSteps.get(event.request_id);
      if (step) {
        add('event for an upload session step', `${at}: ${event.type} by ${step}`);
        continue;
      }
      const sent = byRequest.get(event.request_id);
      if (sent && sent.op.userId !== userId) {
        add('event in the feed of a user who did not send its request', `${at}: ${event.type} by ${sent.op.name}`);
        continue;
      }
      const op = sent?.op ?? lostAnswerOf(userId, event);
      if (!op) add('event for a request nobody sent', `${at}: ${event.type} of ${String(objectIdOf(event))} by ${event.request_id}`);
      else eventsOf.get(op)!.push({ event, ...(sent ? { attempt: sent.attempt } : {}) });
    }
    // An attachment is created once and deleted once, whichever operations tried.
    for (const type of ['attachment.created', 'attachment.deleted']) {
      const byObject = new Map<unknown, FeedEvent[]>();
      for (const event of feed)
        if (event.type === type && event.request_id !== null)
          byObject.set(objectIdOf(event), [...(byObject.get(objectIdOf(event)) ?? []), event]);
      for (const [objectId, events] of byObject)
        if (events.length > 1) add('two events for one change', `${userId}/${String(objectId)}: ${describe(events)}`);
    }
  }

  for (const [op, caused] of eventsOf) {
    if (!feeds.has(op.userId)) continue;
    const main = caused.filter(({ event }) => event.type === op.type).map(({ event }) => event);
    const alongside = caused.filter(({ event }) => event.type !== op.type).map(({ event }) => event);
    const statuses = op.attempts.map((attempt) => `${attempt.status}${attempt.replayed ? ' replayed' : ''}`).join(', ');
    const at = `${op.name} (${statuses})`;
    const ofIdleAnswers = new Set<FeedEvent>();
    for (const { event, attempt } of caused) {
      const idle = attempt && op.idle(attempt);
      if (!idle) continue;
      add(`event for ${idle.startsWith('refused') ? 'a refused request' : idle}`, `${at}: ${describe([event])}`);
      ofIdleAnswers.add(event);
    }
    for (const event of alongside) {
      if (!op.alongside || event.type !== op.alongside.type || objectIdOf(event) !== op.alongside.objectId)
        add('event of another type for its request', `${at}: ${describe([event])}`);
    }
    if (alongside.length > main.length) add('event alongside a change that has none', `${at}: ${describe(alongside)}`);
    for (const event of main) {
      const object = event.data.object;
      const wrong = Object.entries(op.shows).filter(([field, value]) => object[field] !== value);
      if (wrong.length > 0)
        add(
          'event does not show its change',
          `${at}: ${event.id} shows ${wrong.map(([field]) => `${field} ${JSON.stringify(object[field])}`).join(', ')}`,
        );
      if (op.objectId !== undefined && object.id !== op.objectId && !op.perAttempt)
        add('event names another object', `${at}: ${event.id} names ${String(object.id)}, not ${op.objectId}`);
    }
    const perRequest = new Map<string | null, number>();
    for (const event of main) perRequest.set(event.request_id, (perRequest.get(event.request_id) ?? 0) + 1);
    if ([...perRequest.values()].some((count) => count > 1)) add('two events for one request', `${at}: ${describe(main)}`);
    else if (!op.perAttempt && main.length > 1 && (op.keyed || !changedBetween(feeds.get(op.userId)!, main, op.shows)))
      add(op.keyed ? 'two events for one Idempotency-Key' : 'two events for one operation', `${at}: ${describe(main)}`);
    const ofObject = main.filter((event) => op.objectId === undefined || event.data.object.id === op.objectId);
    if (op.happened === true && ofObject.length === 0)
      add(
        op.acknowledged ? 'acknowledged change without its event' : 'change shown in the end state without its event',
        `${at}: ${op.type} of ${op.objectId ?? 'its object'}`,
      );
    const unexplained = main.filter((event) => !ofIdleAnswers.has(event));
    if (op.happened === false && unexplained.length > 0) add('event without its change', `${at}: ${describe(unexplained)}`);
  }
  return [...violations, ...auditFromOthers(ledger, views, feeds)];
}

/**
 * The events no request of the user made (another member's upload, rename
 * or delete reaching them through the fan-out; the cleanup removing their
 * own uploads with a deleted side), held to what the run did: each names an
 * attachment a workload user uploaded (its `op<N>` name and uploader as the
 * ledger has them), never the user's own but for the cleanup's removal;
 * one attachment's creation or deletion is in a feed once at most, however
 * often the fan-out's records were delivered; and a deletion names an
 * attachment that is gone at the end. Which members held a side when the
 * fan-out ran is not in the ledger, so a missing one is not looked for
 * here: test/integration/fan-out-faults.test.ts counts them exactly.
 */
/** Whether an attachment.updated is a preview's settling: true, false for a preview change that is not one (undefined: another change). */
function previewSettled(event: FeedEvent): boolean | undefined {
  const changed = event.data.previous_attributes ?? {};
  if (!('preview' in changed)) return undefined;
  const statusOf = (preview: unknown) => (preview as { status?: string } | null)?.status;
  const after = statusOf(event.data.object.preview);
  return Object.keys(changed).length === 1 && statusOf(changed.preview) === 'pending' && (after === 'ready' || after === 'failed');
}

/**
 * Whether an attachment.updated is a scan result's (docs/api.md, "Scanning"): its scan_status from pending to
 * settled, with at most the preview beside it (a member's preview shows once clean, and none once infected);
 * undefined for an event that changes no scan_status.
 */
function scanSettled(event: FeedEvent): boolean | undefined {
  const changed = event.data.previous_attributes ?? {};
  if (!('scan_status' in changed)) return undefined;
  const others = Object.keys(changed).filter((field) => field !== 'scan_status' && field !== 'preview');
  return (
    changed.scan_status === 'pending' &&
    ['clean', 'infected', 'unscannable'].includes(String(event.data.object.scan_status)) &&
    others.length === 0
  );
}

function auditFromOthers(ledger: Ledger, views: Map<string, UserView>, feeds: Map<string, FeedEvent[]>): Violation[] {
  const violations: Violation[] = [];
  const add = (kind: string, detail: string) => violations.push({ kind, detail });
  const remaining = new Set([...views.values()].flatMap((view) => view.attachments.map((attachment) => attachment.id)));
  const uploads = new Map(ledger.uploads.map((upload) => [upload.op, upload]));
  for (const [userId, feed] of feeds) {
    const seen = new Map<string, FeedEvent[]>();
    for (const event of feed) {
      if (event.request_id !== null || !event.type.startsWith('attachment.')) continue;
      const id = String(objectIdOf(event));
      const at = `${userId}/${event.id} (${event.type} of ${id})`;
      // A scan result or a preview settled (docs/api.md): the recorder's or worker's event in the uploader's own feed, the
      // fan-out's in the others'; once each.
      const scan = event.type === 'attachment.updated' ? scanSettled(event) : undefined;
      if (scan === false) add('scan change not from pending to settled', `${at}: ${JSON.stringify(event.data.previous_attributes)}`);
      const preview = event.type === 'attachment.updated' && scan === undefined ? previewSettled(event) : scan;
      if (preview === false && scan === undefined)
        add('preview change not from pending to settled', `${at}: ${JSON.stringify(event.data.previous_attributes)}`);
      const settled = scan ? `scan of ${id}` : preview ? `preview of ${id}` : undefined;
      const change = event.type !== 'attachment.updated' ? `${event.type} ${id}` : settled;
      if (change) seen.set(change, [...(seen.get(change) ?? []), event]);
      if (event.type === 'attachment.deleted') {
        if (remaining.has(id)) add('attachment.deleted for an attachment still there', at);
        continue;
      }
      const { uploaded_by: uploader, filename } = event.data.object;
      const upload = typeof filename === 'string' ? uploads.get(originOf(filename) ?? -1) : undefined;
      if (uploader === userId && !preview) add("another member's event in the uploader's own feed", at);
      if (!upload || upload.userId !== uploader || (upload.id !== undefined && upload.id !== id))
        add('event for an upload nobody made', `${at}: ${String(filename)} by ${String(uploader)}`);
    }
    for (const [change, events] of seen)
      if (events.length > 1) add('two events for one change', `${userId}: ${change}: ${describe(events)}`);
  }
  return violations;
}
