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

export const attachmentKey = (userId: string, attachmentId: string): ItemKey => ({ pk: userId, sk: attachmentId });
/** Attachment records' sort keys begin so (their ids); the base table's queries of a user's records keep to it. */
export const ATTACHMENT_SK_PREFIX = 'att_';
/**
 * A file that no record may hold any more (a failed upload), handed to the
 * cleanup by writing and removing this item in the attachments table (its
 * REMOVE reaches the cleanup through the stream, retried until it succeeds).
 */
export const ORPHAN_FILE_SK_PREFIX = 'orphan#';
export const orphanFileKey = (userId: string, attachmentId: string): ItemKey => ({ pk: userId, sk: `${ORPHAN_FILE_SK_PREFIX}${attachmentId}` });
export const attachmentConversationKey = (userId: string, conversationId: string): string => composite(userId, conversationId);

export const uploadSessionKey = (userId: string, sessionId: string): ItemKey => ({ pk: userId, sk: sessionId });

/** An Idempotency-Key record: keys are per user, so two users' equal keys never meet. */
export const idempotencyKey = (userId: string, key: string): ItemKey => ({ pk: userId, sk: key });
