/**
 * The one place that builds DynamoDB keys. Every item of a user lives under
 * the partition key `pk` = user id, so a user's data is one Query away and
 * never another user's.
 *
 * Composite index keys percent-encode their parts: user ids (a token's `sub`)
 * and client ids may contain `#`, and `a#b` + `c` must never equal `a` + `b#c`.
 *
 * Sizes: DynamoDB holds a partition key of at most 2,048 bytes and a sort
 * key of at most 1,024. The longest index key is composite(user id, client
 * id): a client id is at most 128 characters (docs/api.md), 512 UTF-8 bytes,
 * 1,536 once percent-encoded; a user id of MAX_USER_ID_BYTES is at most 384
 * encoded, so the key stays under 2,048 (1,921). The authorizer refuses a
 * longer `sub` (401 token_invalid) before any of these is built.
 */
export const MAX_USER_ID_BYTES = 128;

const part = (value: string): string => encodeURIComponent(value);
const composite = (...parts: string[]): string => parts.map(part).join('#');

export interface ItemKey {
  pk: string;
  sk: string;
}

/** Every table's partition key attribute: whether an item exists is whether it has one. */
export const PARTITION_KEY = 'pk' satisfies keyof ItemKey;
export const SORT_KEY = 'sk' satisfies keyof ItemKey;

export const conversationKey = (userId: string, conversationId: string): ItemKey => ({
  pk: userId,
  sk: conversationId,
});

/** Conversations' sort keys all start so; uniqueness records do not. */
export const CONVERSATION_SK_PREFIX = 'conv_';

/** Records that keep one conversation per (user, contact) and per (user, group). */
export type Counterpart = { kind: 'contact'; id: string } | { kind: 'group'; id: string };

export const counterpartKey = (userId: string, counterpart: Counterpart): ItemKey => ({
  pk: userId,
  sk: `${counterpart.kind}#${counterpart.id}`,
});

/** Index keys of a conversation: both values of each flag are indexed, so `false` is as cheap as `true`. */
export const flagKey = (userId: string, value: boolean): string => composite(userId, value ? '1' : '0');
export const groupKey = (userId: string, groupId: string): string => composite(userId, groupId);
export const contactKey = (userId: string, contactId: string): string => composite(userId, contactId);

/**
 * Timed mutes only (a sparse index): partition per user, sorted by the end of
 * the mute, so "mutes over by now" is one key condition. The end is a
 * zero-padded decimal string so that string order is time order.
 */
const MUTE_END_DIGITS = 16;
export const muteEndKey = (userId: string): string => composite(userId);
export const muteEndSort = (mutedUntil: number): string => String(mutedUntil).padStart(MUTE_END_DIGITS, '0');

/**
 * A conversation's place in the activity order (the by_activity and
 * by_archived_activity indexes): its activity time (last_active_at, or
 * created_at while that is null) zero-padded so that string order is time
 * order, then its id, so that ties go by id and every place is one
 * conversation's. Conversation ids hold no `#`.
 */
const ACTIVITY_DIGITS = 16;
export const activitySort = (activeAt: number, conversationId: string): string =>
  `${String(activeAt).padStart(ACTIVITY_DIGITS, '0')}#${conversationId}`;

/**
 * A thread: the two sides of a direct conversation (each user's conversation
 * with the other), or every member's side of a group's. Its key is the same
 * from either side: a direct thread's holds both user ids in a canonical
 * order, a group's the group id, each percent-encoded after a prefix of its
 * own, so no direct thread's key can ever equal a group's (or another pair's).
 */
export type Thread = { kind: 'direct'; members: readonly [string, string] } | { kind: 'group'; groupId: string };

export const directThread = (userId: string, contactId: string): Thread => ({ kind: 'direct', members: [userId, contactId] });

export function threadKey(thread: Thread): string {
  if (thread.kind === 'group') return `g#${part(thread.groupId)}`;
  const [first, second] = [...thread.members].map(part).sort();
  return `d#${first}#${second}`;
}

/**
 * A group's thread record (shared/conversations/large-threads.ts): whether
 * it is large and, once it is, its activity. Under the thread's key, which
 * may equal a user id, with a sort key no conversation item has.
 */
export const groupThreadKey = (groupId: string): ItemKey => ({ pk: threadKey({ kind: 'group', groupId }), sk: '#thread' });

/** The by_large_side index's key: a user's sides of large groups (a sparse index). */
export const largeSideKey = (userId: string): string => composite(userId);

/** The thread whose side a conversation is. */
export const threadOf = (userId: string, counterpart: Counterpart): Thread =>
  counterpart.kind === 'group' ? { kind: 'group', groupId: counterpart.id } : directThread(userId, counterpart.id);

/**
 * Attachment records are keyed by their id alone, so whoever may read one
 * (its uploader, or any member of its thread) finds it with one GetItem.
 */
export const ATTACHMENT_SK = 'attachment';
export const attachmentKey = (attachmentId: string): ItemKey => ({ pk: attachmentId, sk: ATTACHMENT_SK });
/**
 * An upload run's intent: written before its file is (shared/attachments/service.ts),
 * removed by the transaction that writes the record holding the file, else
 * by the run's failure path, else by DynamoDB's TTL after `expires_at`. Its
 * REMOVE reaches the cleanup through the stream, which removes the run's file
 * unless the record holds it. One per upload run: the run's own file key is in the item.
 */
export const UPLOAD_INTENT_SK_PREFIX = 'intent#';
export const uploadIntentKey = (attachmentId: string, run: string): ItemKey => ({
  pk: attachmentId,
  sk: `${UPLOAD_INTENT_SK_PREFIX}${run}`,
});
/**
 * A file's scan result as it arrived (shared/scanning/), beside its record:
 * kept when it comes before the record does (an upload session's object
 * exists first), removed by the write that records it on the record, else by
 * DynamoDB's TTL. One per upload run, as one file per run.
 */
export const SCAN_RESULT_SK_PREFIX = 'scan#';
export const scanResultKey = (attachmentId: string, run: string): ItemKey => ({ pk: attachmentId, sk: `${SCAN_RESULT_SK_PREFIX}${run}` });

/** The uploader's side an attachment went into: the cleanup of that side finds the uploader's files of it. */
export const attachmentConversationKey = (userId: string, conversationId: string): string => composite(userId, conversationId);

export const uploadSessionKey = (userId: string, sessionId: string): ItemKey => ({ pk: userId, sk: sessionId });

/** An Idempotency-Key record: keys are per user, so two users' equal keys never meet. */
export const idempotencyKey = (userId: string, key: string): ItemKey => ({ pk: userId, sk: key });

/**
 * A user's feed of events (shared/events/): under the user's partition, each
 * event at its sequence number, zero-padded so that string order is sequence
 * order, and the feed's head: the last sequence number taken.
 */
export const EVENT_SK_PREFIX = 'e#';
/** 12 digits: a trillion events per user. */
export const EVENT_SEQUENCE_DIGITS = 12;
export const MAX_EVENT_SEQUENCE = 10 ** EVENT_SEQUENCE_DIGITS - 1;
/** A sequence number after a prefix, zero-padded: string order is sequence order (the feed's keys and its indexes' sort keys). */
export const sequenceSort = (prefix: string, sequence: number): string =>
  `${prefix}${String(sequence).padStart(EVENT_SEQUENCE_DIGITS, '0')}`;
export const eventKey = (userId: string, sequence: number): ItemKey => ({ pk: userId, sk: sequenceSort(EVENT_SK_PREFIX, sequence) });
/** Where the feed's type and resource indexes (eventIndexes) keep an event: `<type or resource>#<sequence>`. */
export const eventGroupPrefix = (typeOrResource: string): string => `${typeOrResource}#`;
export const feedHeadKey = (userId: string): ItemKey => ({ pk: userId, sk: 'head' });
/**
 * The partition of a large group's thread feed in the events table, where
 * the users' feeds are under their ids: longer than any user id may be
 * (MAX_USER_ID_BYTES, which the authorizer holds tokens to), so no user's
 * feed is ever a thread's. A thread key is ASCII and holds no `#` but its own.
 */
export const threadFeedKey = (groupId: string): string =>
  `thread#${threadKey({ kind: 'group', groupId })}#`.padEnd(MAX_USER_ID_BYTES + 1, '#');
/**
 * A change another member made that a user's feed has recorded (the fan-out,
 * shared/conversations/side-delivery.ts), by the id of its stream record:
 * written with the event, on the condition that it is absent, so a record
 * delivered twice is recorded once. Outside the feed's `e#` range.
 */
export const deliveredChangeKey = (userId: string, changeId: string): ItemKey => ({ pk: userId, sk: `r#${changeId}` });
