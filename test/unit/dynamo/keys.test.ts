import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  attachmentConversationKey,
  type Counterpart,
  contactKey,
  counterpartKey,
  directThread,
  flagKey,
  groupKey,
  MAX_USER_ID_BYTES,
  threadKey,
} from '../../../shared/dynamo/keys.js';
import { fileKey } from '../../../shared/files/keys.js';
import { newId } from '../../../shared/ids.js';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
// DynamoDB's key limits (bytes) and S3's key limit; the local S3 stand-in also needs path segments within 255 bytes.
const PARTITION_KEY_BYTES = 2048;
const SORT_KEY_BYTES = 1024;
const S3_KEY_BYTES = 1024;

/** Well-formed strings of up to `max` UTF-8 bytes, astral characters included (4 bytes each, 12 percent-encoded). */
const utf8Within = (max: number) =>
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: max }).map((text) => {
    let kept = '';
    for (const char of text) if (bytes(kept + char) <= max) kept += char;
    return kept || 'x';
  });
// A client id as docs/api.md bounds it: 1-128 characters (code points), the worst case 4-byte ones.
const clientIds = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 128 }).map((text) => [...text].slice(0, 128).join('')),
  fc.constant('\u{1F600}'.repeat(128)),
);
const userIds = fc.oneof(
  utf8Within(MAX_USER_ID_BYTES),
  fc.constant('#'.repeat(MAX_USER_ID_BYTES)),
  fc.constant('\u{1F600}'.repeat(MAX_USER_ID_BYTES / 4)),
);

describe('DynamoDB keys', () => {
  it('never lets two (user, group) pairs share an index key, whatever characters they hold', () => {
    expect(groupKey('a#b', 'c')).not.toBe(groupKey('a', 'b#c'));
    expect(groupKey('a%23b', 'c')).not.toBe(groupKey('a#b', 'c'));
  });

  it('keeps uniqueness records of contacts and groups apart', () => {
    expect(counterpartKey('u', { kind: 'contact', id: 'x' })).not.toEqual(counterpartKey('u', { kind: 'group', id: 'x' }));
  });

  it('fits every key DynamoDB holds for any user id the authorizer admits and any client id docs/api.md admits', () => {
    fc.assert(
      fc.property(userIds, clientIds, fc.constantFrom<Counterpart['kind']>('contact', 'group'), (userId, clientId, kind) => {
        for (const partitionKey of [
          userId,
          groupKey(userId, clientId),
          contactKey(userId, clientId),
          flagKey(userId, true),
          attachmentConversationKey(userId, newId('conv')),
        ]) {
          expect(bytes(partitionKey)).toBeLessThanOrEqual(PARTITION_KEY_BYTES);
        }
        expect(bytes(counterpartKey(userId, { kind, id: clientId }).sk)).toBeLessThanOrEqual(SORT_KEY_BYTES);
      }),
      { seed: 10, numRuns: 300 },
    );
  });
});

describe('thread keys', () => {
  it("are the same from either side of a direct thread, and never equal another pair's or any group's", () => {
    fc.assert(
      fc.property(userIds, userIds, userIds, clientIds, (a, b, c, group) => {
        expect(threadKey(directThread(a, b))).toBe(threadKey(directThread(b, a)));
        expect(threadKey(directThread(a, b))).not.toBe(threadKey({ kind: 'group', groupId: group }));
        if (c !== a && c !== b) expect(threadKey(directThread(a, c))).not.toBe(threadKey(directThread(a, b)));
        expect(bytes(threadKey(directThread(a, b)))).toBeLessThanOrEqual(PARTITION_KEY_BYTES);
        expect(bytes(threadKey({ kind: 'group', groupId: group }))).toBeLessThanOrEqual(PARTITION_KEY_BYTES);
      }),
      { seed: 11, numRuns: 300 },
    );
    expect(threadKey(directThread('a#b', 'c'))).not.toBe(threadKey(directThread('a', 'b#c')));
    expect(threadKey(directThread('g', 'x'))).not.toBe(threadKey({ kind: 'group', groupId: 'g#x' }));
  });
});

describe('file keys', () => {
  it('are built from the user and the attachment id only, never from a path the user id spells', () => {
    const key = fileKey('user/../x', 'att_1', 'run_1');
    expect(key).toMatch(/^files\/[A-Za-z0-9_-]{43}\/att_1\/run_1$/);
    expect(fileKey('user/../x', 'att_1', 'run_1')).toBe(key);
    expect(fileKey('user/../y', 'att_1', 'run_1')).not.toBe(key);
    expect(fileKey('user/../x', 'att_1', 'run_2')).not.toBe(key);
  });

  it('stay short ASCII whatever the user id holds, within S3 and file-system limits', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 3000 }), (userId) => {
        const key = fileKey(userId, newId('att'), newId('upl'));
        expect(bytes(key)).toBeLessThanOrEqual(S3_KEY_BYTES);
        expect(key).toMatch(/^files\/[A-Za-z0-9_-]{43}\/att_[0-9A-Z]{26}\/upl_[0-9A-Z]{26}$/);
      }),
      { seed: 10, numRuns: 100 },
    );
  });
});
