import { InvalidParameter } from '../domain-errors.js';
import type { Mute } from './model.js';

/**
 * Mute until a time. The stored mute never changes when its end passes: what
 * a response shows (`is_muted`, `muted_until`) and what the `muted` filter
 * selects are evaluated against the clock of the request. A mute is on while
 * now < until; at the end second it is over.
 */
export function isMutedAt(mute: Mute, now: number): boolean {
  return mute.kind === 'forever' || (mute.kind === 'until' && now < mute.until);
}

/** The two fields as a response shows them at `now`: an expired mute is no mute, so its end reads null. */
export function shownMute(mute: Mute, now: number): { is_muted: boolean; muted_until: number | null } {
  const muted = isMutedAt(mute, now);
  return { is_muted: muted, muted_until: muted && mute.kind === 'until' ? mute.until : null };
}

/**
 * The mute a PUT asks for, from `is_muted` and `muted_until` as given
 * (undefined: not given; null: empty/JSON null). `muted_until` at or before
 * now asks for a mute that is already over: no mute. A pair that disagrees on
 * whether the conversation ends up muted is refused rather than guessed.
 */
export function requestedMute(isMuted: boolean | undefined, mutedUntil: number | null | undefined, now: number): Mute | undefined {
  const fromUntil: Mute | undefined =
    mutedUntil === undefined
      ? undefined
      : mutedUntil === null || mutedUntil <= now
        ? { kind: 'off' }
        : { kind: 'until', until: mutedUntil };
  if (fromUntil === undefined) return isMuted === undefined ? undefined : { kind: isMuted ? 'forever' : 'off' };
  if (isMuted !== undefined && isMuted !== (fromUntil.kind === 'until')) {
    throw new InvalidParameter(
      'muted_until',
      isMuted
        ? 'is_muted=true contradicts muted_until: give a muted_until in the future, or leave muted_until out to mute with no end'
        : 'is_muted=false contradicts a muted_until in the future: leave one of them out',
    );
  }
  return fromUntil;
}
