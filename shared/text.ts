/**
 * What every client string must be before anything stores or encodes it.
 * A lone UTF-16 surrogate (JSON `"\ud800"`, a token claim) has no UTF-8
 * form: DynamoDB, S3 and encodeURIComponent refuse or throw on it, so a
 * value holding one could be written by one request and then fail every
 * read after it. Checked at the edge (request parameters, filenames,
 * headers, the token's subject), never repaired silently.
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

export const isWellFormed = (text: string): boolean => !LONE_SURROGATE.test(text);

export const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/**
 * Ids that clients give us (`contact_id`, `group_id`, `message_id`,
 * `pinned_message_id`, and the group ids of a token): 1-128 characters, no
 * whitespace or control characters, well-formed. One rule, so that a group
 * id a token may carry is exactly one a request may name.
 */
const CLIENT_ID = /^[^\s\p{Cc}]{1,128}$/u;

export const CLIENT_ID_RULE = '1 to 128 characters without whitespace or control characters';

export const isClientId = (value: string): boolean => CLIENT_ID.test(value) && isWellFormed(value);
