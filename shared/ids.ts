import { ulid } from 'ulid';

/**
 * Ids we mint: a resource prefix and a ULID. ULIDs sort by creation time, so
 * the sort key order of DynamoDB is the newest-first order of every list.
 */
export type IdPrefix = 'conv' | 'att' | 'upl';

export const newId = (prefix: IdPrefix): string => `${prefix}_${ulid()}`;

/** A ULID for a run of an idempotent request: its retries mint the same ids from it (see IdempotencyService). */
export const newSeed = (): string => ulid();

/** The id a seeded run creates: the same for every retry of that run. */
export const seededId = (prefix: IdPrefix, seed: string | undefined): string => (seed ? `${prefix}_${seed}` : newId(prefix));

/**
 * An id that takes another id's ULID: what one creation makes in turn (a
 * direct upload's new side for its contact) has the same id on every retry
 * of the work that makes it.
 */
export const idWithUlidOf = (prefix: IdPrefix, id: string): string => `${prefix}_${id.slice(id.indexOf('_') + 1)}`;

const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const patterns: Record<IdPrefix, RegExp> = {
  conv: new RegExp(`^conv_${ULID}$`),
  att: new RegExp(`^att_${ULID}$`),
  upl: new RegExp(`^upl_${ULID}$`),
};

export const isId = (prefix: IdPrefix, value: string): boolean => patterns[prefix].test(value);

export const isConversationId = (value: string): boolean => isId('conv', value);
export const isAttachmentId = (value: string): boolean => isId('att', value);
export const isUploadSessionId = (value: string): boolean => isId('upl', value);
