import type { UserView, Violation } from '../audit.js';
import { type Attempt, finalStatus, type Ledger, originOf } from './workload.js';

/**
 * What each operation may answer; anything else (a 500 above all) is a
 * violation. A write may also answer 429 write_contention: contention
 * outlasted its budget (which the stalls eat), nothing was written.
 */
const RETRY_LATER = ['503', '429 write_contention'];
const ALLOWED: Record<string, Set<string>> = {
  create: new Set(['200', '201', ...RETRY_LATER]),
  update: new Set(['200', '404', ...RETRY_LATER]),
  delete: new Set(['200', '404', ...RETRY_LATER]),
  upload: new Set(['201', '400 resource_missing', ...RETRY_LATER]),
  rename: new Set(['200', '404', ...RETRY_LATER]),
  // An upload session's start and the request for its part's URL.
  session: new Set(['200', '201', '400 resource_missing', ...RETRY_LATER]),
};

/** A status, with the error code where one status has several meanings (400, 409, 429). */
const label = (attempt: Attempt) =>
  [400, 409, 429].includes(attempt.status) ? `${attempt.status} ${attempt.code}` : String(attempt.status);
/** A request that may have done its work: anything but a refusal. */
export const mayHaveWorked = (attempt: Attempt) => attempt.status < 400 || attempt.status >= 500 || attempt.status === -1;

/**
 * Holds the answers the clients got against what the API shows once the
 * faults are over and cleanup has settled: every acknowledged write visible,
 * nothing created twice under one Idempotency-Key, a request that answered
 * 404 or 400 did no work, and no answer outside the contract.
 */
export function auditLedger(ledger: Ledger, views: Map<string, UserView>): Violation[] {
  const violations: Violation[] = [];
  const add = (kind: string, detail: string) => violations.push({ kind, detail });

  const answers: [string, { op: number; attempts: Attempt[] }[]][] = [
    ['create', ledger.creates],
    ['update', ledger.conversationUpdates],
    ['delete', [...ledger.conversationDeletes, ...ledger.attachmentDeletes]],
    ['upload', ledger.uploads],
    ['rename', ledger.renames],
    ['session', ledger.uploads.flatMap((upload) => (upload.session ? [{ op: upload.op, attempts: upload.session.steps }] : []))],
  ];
  for (const [kind, records] of answers) {
    for (const record of records) {
      for (const [index, attempt] of record.attempts.entries()) {
        // A replay of an upload whose attachment was deleted since (by its uploader, or with its conversation): 404 (docs/api.md, Idempotency).
        // A session's completion repeated after one whose answer was lost: it answers the attachment, 404 once it is gone.
        const earlier = record.attempts.slice(0, index);
        const completedSession = 'session' in record && earlier.some(mayHaveWorked);
        const replayOfDeleted =
          kind === 'upload' && attempt.status === 404 && (completedSession || earlier.some((answer) => answer.status === 201));
        if (replayOfDeleted) continue;
        if (attempt.status === 500) add('answered 500', `${kind} op${record.op}`);
        else if (attempt.status === -1) add('no documented answer', `${kind} op${record.op}: ${attempt.problem}`);
        else if (!ALLOWED[kind]!.has(label(attempt)))
          add(
            `${kind} answered ${label(attempt)}`,
            `op${record.op}: ${record.attempts.map(label).join(', ')} (${JSON.stringify({ ...record, attempts: undefined, bytes: undefined })})`,
          );
      }
    }
  }

  for (const userId of ledger.users) {
    const view = views.get(userId)!;
    const listedConversations = new Map(view.conversations.map((c) => [c.id, c]));
    const listedAttachments = new Map(view.attachments.map((a) => [a.id, a]));
    const deletesOf = (records: Ledger['conversationDeletes'], id: string) =>
      records.filter((r) => r.userId === userId && r.targetId === id).flatMap((r) => r.attempts);

    /** Why an acknowledged object may be gone: a delete that may have run; only 404s mean none did. */
    const explainGone = (deletes: Attempt[], kind: string, id: string) => {
      if (deletes.some(mayHaveWorked)) return;
      add(deletes.length > 0 ? 'DELETE answered 404 but deleted' : 'acknowledged write lost', `${userId}/${kind} ${id}`);
    };

    for (const create of ledger.creates.filter((c) => c.userId === userId && c.id)) {
      if (!listedConversations.has(create.id!)) explainGone(deletesOf(ledger.conversationDeletes, create.id!), 'conversation', create.id!);
    }
    for (const removal of ledger.conversationDeletes.filter((r) => r.userId === userId && finalStatus(r.attempts) === 200)) {
      if (listedConversations.has(removal.targetId)) add('acknowledged delete undone', `${userId}/conversation ${removal.targetId}`);
    }
    for (const removal of ledger.attachmentDeletes.filter((r) => r.userId === userId && finalStatus(r.attempts) === 200)) {
      if (listedAttachments.has(removal.targetId)) add('acknowledged delete undone', `${userId}/attachment ${removal.targetId}`);
    }

    for (const conversation of view.conversations) {
      const updates = ledger.conversationUpdates.filter((u) => u.userId === userId && u.targetId === conversation.id);
      const possible = new Set(updates.filter((u) => u.attempts.some(mayHaveWorked)).map((u) => u.value));
      const acknowledged = updates.some((u) => finalStatus(u.attempts) === 200);
      const pinned = conversation.pinned_message_id;
      if (pinned === null ? acknowledged : !possible.has(pinned)) {
        add('acknowledged update not visible', `${userId}/${conversation.id}: pinned_message_id ${pinned}`);
      }
    }

    // A 404 for something that is still there: the request found nothing although nothing had removed it.
    const notFoundFor = (
      records: { targetId: string; userId: string; op: number; attempts: Attempt[] }[],
      listed: Map<string, unknown>,
      kind: string,
    ) => {
      for (const record of records.filter((r) => r.userId === userId && listed.has(r.targetId))) {
        if (record.attempts.some((attempt) => attempt.status === 404))
          add('answered 404 for a live resource', `${userId}/${kind} op${record.op} on ${record.targetId}`);
      }
    };
    notFoundFor(ledger.conversationUpdates, listedConversations, 'conversation update');
    notFoundFor(ledger.conversationDeletes, listedConversations, 'conversation delete');
    notFoundFor(ledger.renames, listedAttachments, 'rename');
    notFoundFor(ledger.attachmentDeletes, listedAttachments, 'attachment delete');

    const uploadsByOp = new Map(ledger.uploads.filter((u) => u.userId === userId).map((u) => [u.op, u]));
    for (const attachment of view.attachments) {
      const upload = uploadsByOp.get(originOf(attachment.filename) ?? -1);
      if (!upload) {
        add('attachment nobody uploaded', `${userId}/${attachment.id} (${attachment.filename})`);
        continue;
      }
      if (!upload.attempts.some(mayHaveWorked))
        add('a refused upload stored its file', `${userId}/op${upload.op}: ${upload.attempts.map(label).join(', ')}`);
      if (upload.id !== undefined && upload.id !== attachment.id)
        add('one upload stored twice', `${userId}/op${upload.op}: answered ${upload.id}, listed ${attachment.id}`);
      const renames = ledger.renames.filter((r) => r.userId === userId && r.targetId === attachment.id);
      const possibleNames = new Set([...renames.filter((r) => r.attempts.some(mayHaveWorked)).map((r) => r.value)]);
      const renamed = renames.some((r) => finalStatus(r.attempts) === 200);
      if (
        renamed
          ? !possibleNames.has(attachment.filename)
          : attachment.filename !== upload.filename && !possibleNames.has(attachment.filename)
      ) {
        add('acknowledged rename not visible', `${userId}/${attachment.id}: ${attachment.filename}`);
      }
    }
    for (const upload of uploadsByOp.values()) {
      if (upload.id === undefined || listedAttachments.has(upload.id)) continue;
      const deletes = [
        ...deletesOf(ledger.attachmentDeletes, upload.id),
        ...(upload.conversationId ? deletesOf(ledger.conversationDeletes, upload.conversationId) : []),
      ];
      explainGone(deletes, 'attachment', upload.id);
    }
  }
  return violations;
}

/** Counts per key, sorted by key, for the printed figures. */
export function tally(keys: Iterable<string>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const key of keys) counts[key] = (counts[key] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

export const statusesOf = (ledger: Ledger) =>
  [
    ledger.creates,
    ledger.conversationUpdates,
    ledger.conversationDeletes,
    ledger.uploads,
    ledger.renames,
    ledger.attachmentDeletes,
  ].flatMap((records) => records.flatMap((record) => record.attempts.map(label)));
