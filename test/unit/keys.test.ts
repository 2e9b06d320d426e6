import { describe, expect, it } from 'vitest';
import { counterpartKey, fileKey, groupKey } from '../../shared/dynamo/keys.js';

describe('DynamoDB keys', () => {
  it('never lets two (user, group) pairs share an index key, whatever characters they hold', () => {
    expect(groupKey('a#b', 'c')).not.toBe(groupKey('a', 'b#c'));
    expect(groupKey('a%23b', 'c')).not.toBe(groupKey('a#b', 'c'));
  });

  it('keeps uniqueness records of contacts and groups apart', () => {
    expect(counterpartKey('u', { kind: 'contact', id: 'x' })).not.toEqual(counterpartKey('u', { kind: 'group', id: 'x' }));
  });

  it('builds file keys from the user and the attachment id only', () => {
    expect(fileKey('user/../x', 'att_1')).toBe('files/user%2F..%2Fx/att_1');
  });
});
