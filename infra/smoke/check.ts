import type { StageClient } from './client.js';
import type { Ledger } from './ledger.js';

/** A user of the run: a throwaway id with a token minted for it, or whoever a given token names. */
export interface SmokeUser {
  label: string;
  token: string;
  /** The user's id (the token's `sub`), when it can be read: sharing with them needs it as a contact id. */
  id: string | undefined;
}

/** What every check runs with. */
export interface SmokeContext {
  client: StageClient;
  /** The run's user; `other` only when a second token is at hand (--token-b, or minted). */
  user: SmokeUser;
  other: SmokeUser | undefined;
  /** Starts every name the run gives, so its leftovers can be told from the user's own data. */
  marker: string;
  /** The browser origin the stage should allow (--origin), if the caller named one. */
  origin: string | undefined;
  /** What the run made that the user holds. */
  made: Ledger;
  /** What the run made that the second user holds: the side of the shared thread the stage makes for them. */
  madeForOther: Ledger;
  /** How long an upload shared with the second user may take to reach their side (the fan-out is asynchronous). */
  fanOutWithinMs: number;
  /** What earlier checks produced for later ones; absent when that check failed. */
  conversationId?: string;
}

/**
 * One line of the table. `run` throws to fail (CheckFailed's message is the
 * reason) or throws CheckSkipped when a check it builds on failed; what it
 * returns is a short note for the table. A new feature's check is one more
 * entry in checks/index.ts.
 */
export interface Check {
  name: string;
  run(context: SmokeContext): Promise<string | undefined>;
}

export class CheckFailed extends Error {
  override name = 'CheckFailed';
}

export class CheckSkipped extends Error {
  override name = 'CheckSkipped';
}

export function expect(condition: unknown, reason: string): asserts condition {
  if (!condition) throw new CheckFailed(reason);
}

/** The conversation made by the first check, or a skip that says why there is none. */
export function conversationOf(context: SmokeContext): string {
  if (!context.conversationId) throw new CheckSkipped('no conversation (its check failed)');
  return context.conversationId;
}
