import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Mute } from '../../../shared/conversations/model.js';
import { isMutedAt, requestedMute, shownMute } from '../../../shared/conversations/mute.js';
import { InvalidParameter } from '../../../shared/domain-errors.js';
import { toApiError } from '../../../shared/http/errors.js';

const NOW = 1_000;

describe('isMutedAt and shownMute', () => {
  it('a timed mute is on before its end and off from its end second on, and then shows no end', () => {
    const mute: Mute = { kind: 'until', until: NOW + 10 };
    expect(shownMute(mute, NOW + 9)).toEqual({ is_muted: true, muted_until: NOW + 10 });
    expect(shownMute(mute, NOW + 10)).toEqual({ is_muted: false, muted_until: null });
    expect(shownMute({ kind: 'forever' }, Number.MAX_SAFE_INTEGER)).toEqual({ is_muted: true, muted_until: null });
    expect(shownMute({ kind: 'off' }, 0)).toEqual({ is_muted: false, muted_until: null });
  });

  it('muted_until is shown exactly when a timed mute is on', () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat(), (until, now) => {
        const shown = shownMute({ kind: 'until', until }, now);
        expect(shown.is_muted).toBe(isMutedAt({ kind: 'until', until }, now));
        expect(shown.muted_until).toBe(shown.is_muted ? until : null);
      }),
    );
  });
});

describe('requestedMute', () => {
  const refused = (isMuted: boolean | undefined, until: number | null | undefined) => {
    try {
      requestedMute(isMuted, until, NOW);
    } catch (error) {
      return error;
    }
    return undefined;
  };

  it('reads each field alone', () => {
    expect(requestedMute(undefined, undefined, NOW)).toBeUndefined();
    expect(requestedMute(true, undefined, NOW)).toEqual({ kind: 'forever' });
    expect(requestedMute(false, undefined, NOW)).toEqual({ kind: 'off' });
    expect(requestedMute(undefined, NOW + 1, NOW)).toEqual({ kind: 'until', until: NOW + 1 });
    expect(requestedMute(undefined, NOW, NOW)).toEqual({ kind: 'off' });
    expect(requestedMute(undefined, null, NOW)).toEqual({ kind: 'off' });
  });

  it('accepts a pair exactly when both say the same about being muted, and refuses the rest with a 400 on muted_until', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.option(fc.integer({ min: NOW - 5, max: NOW + 5 }), { nil: null }), (isMuted, until) => {
        const mutes = until !== null && until > NOW;
        const error = refused(isMuted, until);
        if (isMuted === mutes) {
          expect(error).toBeUndefined();
          expect(requestedMute(isMuted, until, NOW)).toEqual(mutes ? { kind: 'until', until } : { kind: 'off' });
        } else {
          expect(error).toBeInstanceOf(InvalidParameter);
          expect(toApiError(error)).toMatchObject({ status: 400, code: 'parameter_invalid', param: 'muted_until' });
        }
      }),
    );
  });
});
