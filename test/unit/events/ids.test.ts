import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventKey, MAX_EVENT_SEQUENCE } from '../../../shared/dynamo/keys.js';
import { eventId, isEventId, sequenceOf } from '../../../shared/events/ids.js';

const sequence = fc.integer({ min: 1, max: MAX_EVENT_SEQUENCE });
const random = fc.uint8Array({ minLength: 10, maxLength: 10 }).map((bytes) => Buffer.from(bytes));

describe('event ids', () => {
  it('name the sequence they were minted for, whatever the random part', () => {
    fc.assert(fc.property(sequence, random, (n, bytes) => sequenceOf(eventId(n, bytes)) === n && isEventId(eventId(n, bytes))));
  });

  it('sort like their sequence, and like the sort keys of their items', () => {
    fc.assert(
      fc.property(sequence, sequence, random, random, (a, b, ra, rb) => {
        const [idA, idB] = [eventId(a, ra), eventId(b, rb)];
        const [skA, skB] = [eventKey('u', a).sk, eventKey('u', b).sk];
        if (a === b) return idA.slice(0, 12) === idB.slice(0, 12) && skA === skB;
        return a < b === idA < idB && a < b === skA < skB;
      }),
    );
  });

  it('carry 80 random bits: two ids of one sequence differ', () => {
    const ids = new Set(Array.from({ length: 1_000 }, () => eventId(42)));
    expect(ids.size).toBe(1_000);
    expect(eventId(42)).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{24}$/);
  });

  it('refuse what is no event id of ours, and sequences out of range', () => {
    fc.assert(fc.property(fc.string(), (text) => !isEventId(text) || /^evt_[0-9A-HJKMNP-TV-Z]{24}$/.test(text)));
    for (const id of [
      'evt_',
      'evt_000000000000000000000000',
      `evt_${'Z'.repeat(24)}`,
      eventId(7).toLowerCase(),
      `${eventId(7)}A`,
      `conv_${eventId(7).slice(4)}`,
      eventId(7).replace(/.$/, 'U'),
    ]) {
      expect(sequenceOf(id), id).toBeUndefined();
    }
    for (const bad of [0, -1, 1.5, MAX_EVENT_SEQUENCE + 1, Number.NaN]) expect(() => eventId(bad, randomBytes(10))).toThrow(RangeError);
    expect(sequenceOf(eventId(MAX_EVENT_SEQUENCE))).toBe(MAX_EVENT_SEQUENCE);
    expect(sequenceOf(eventId(1))).toBe(1);
  });
});
