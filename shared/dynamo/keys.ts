/**
 * The one place that builds DynamoDB keys. Every item of a user lives under
 * the partition key `pk` = user id, so a user's data is one Query away and
 * never another user's.
 *
 * Composite index keys percent-encode their parts: user ids (a token's `sub`)
 * and client ids may contain `#`, and `a#b` + `c` must never equal `a` + `b#c`.
 */
const part = (value: string): string => encodeURIComponent(value);
const composite = (...parts: string[]): string => parts.map(part).join('#');

export interface ItemKey {
  pk: string;
  sk: string;
}

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

export const attachmentKey = (userId: string, attachmentId: string): ItemKey => ({ pk: userId, sk: attachmentId });
export const attachmentConversationKey = (userId: string, conversationId: string): string => composite(userId, conversationId);

export const uploadSessionKey = (userId: string, sessionId: string): ItemKey => ({ pk: userId, sk: sessionId });

/** Every stored file lives under this prefix; the stack scopes S3 permissions to it. */
export const FILES_PREFIX = 'files/';
/** An attachment's S3 key: from the user and the attachment id, never from the filename. */
export const fileKey = (userId: string, attachmentId: string): string => `${FILES_PREFIX}${part(userId)}/${attachmentId}`;

/** An Idempotency-Key record: keys are per user, so two users' equal keys never meet. */
export const idempotencyKey = (userId: string, key: string): ItemKey => ({ pk: userId, sk: key });
