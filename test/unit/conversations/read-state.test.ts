import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isUnread, type ReadStateWrite, type ReadTimes, readStateCases, requestedOpen } from '../../../shared/conversations/read-state.js';
import { InvalidParameter } from '../../../shared/domain-errors.js';
import { toApiError } from '../../../shared/http/errors.js';

const time = fc.option(fc.integer({ min: 0, max: 20 }), { nil: null });
const times: fc.Arbitrary<ReadTimes> = fc.record({ last_active_at: time, last_opened_at: time });
const write: fc.Arbitrary<ReadStateWrite> = fc.oneof(
  fc.record({ kind: fc.constant('open' as const), at: fc.integer({ min: 0, max: 20 }) }),
  fc.record({ kind: fc.constant('activity' as const), at: fc.integer({ min: 0, max: 20 }) }),
  fc.record({ kind: fc.constant('own-upload' as const), at: fc.integer({ min: 0, max: 20 }) }),
  fc.constant({ kind: 'clear' as const }),
);

/** The times after a write, as the contract says: opens and activity only move forward (one's own upload moves both); clear empties the open. */
function after(stored: ReadTimes, change: ReadStateWrite): ReadTimes {
  const forward = (current: number | null, at: number) => (current === null || current < at ? at : current);
  if (change.kind === 'clear') return { ...stored, last_opened_at: null };
  if (change.kind === 'open') return { ...stored, last_opened_at: forward(stored.last_opened_at, change.at) };
  if (change.kind === 'own-upload')
    return { last_active_at: forward(stored.last_active_at, change.at), last_opened_at: forward(stored.last_opened_at, change.at) };
  return { ...stored, last_active_at: forward(stored.last_active_at, change.at) };
}

describe('readStateCases', () => {
  it('exactly one case holds for every stored state', () => {
    fc.assert(
      fc.property(times, write, (stored, change) => {
        expect(readStateCases(change).filter((candidate) => candidate.holds(stored))).toHaveLength(1);
      }),
    );
  });

  it('the case that holds moves the times as the contract says and writes the unread flag they give', () => {
    fc.assert(
      fc.property(times, write, (stored, change) => {
        const chosen = readStateCases(change).find((candidate) => candidate.holds(stored))!;
        const result: ReadTimes = { ...stored, ...chosen.set };
        for (const attribute of chosen.remove) result[attribute as keyof ReadTimes] = null;
        expect(result).toEqual(after(stored, change));
        // A case that moves nothing leaves the flag, which was already right for these times.
        if (chosen.unread !== undefined) expect(chosen.unread).toBe(isUnread(result));
        else expect(result).toEqual(stored);
      }),
    );
  });
});

describe('isUnread', () => {
  it('is unread only with activity not opened since', () => {
    expect(isUnread({ last_active_at: null, last_opened_at: null })).toBe(false);
    expect(isUnread({ last_active_at: 5, last_opened_at: null })).toBe(true);
    expect(isUnread({ last_active_at: 5, last_opened_at: 4 })).toBe(true);
    expect(isUnread({ last_active_at: 5, last_opened_at: 5 })).toBe(false);
    expect(isUnread({ last_active_at: null, last_opened_at: 5 })).toBe(false);
  });
});

describe('requestedOpen', () => {
  it('accepts up to 60 seconds ahead of now, null, and nothing; refuses further ahead', () => {
    expect(requestedOpen(160, 100)).toBe(160);
    expect(requestedOpen(0, 100)).toBe(0);
    expect(requestedOpen(null, 100)).toBeNull();
    expect(requestedOpen(undefined, 100)).toBeUndefined();
    let error: unknown;
    try {
      requestedOpen(161, 100);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidParameter);
    expect(toApiError(error)).toMatchObject({ status: 400, code: 'parameter_invalid', param: 'last_opened_at' });
  });
});
