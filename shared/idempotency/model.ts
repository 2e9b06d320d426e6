import type { ApiResponse } from '../http/response.js';

/** How long a key replays its first response. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

/**
 * What a key holds: a request that is running (with a lease, so a crashed run
 * does not block the key forever) or the response it finished with.
 */
export type IdempotencyRecord =
  | { state: 'in_progress'; fingerprint: string; owner: string; leaseUntilMs: number }
  | { state: 'released'; fingerprint: string }
  | { state: 'completed'; fingerprint: string; response: ApiResponse };

/**
 * This run holds the key, with the key's seed: minted by the first run and
 * kept when a run releases the key, so every run of one key creates the same
 * ids, and a run after one whose outcome was unknown finds what that one
 * created instead of creating it again.
 */
export type ClaimOutcome = { claimed: true; seed: string } | { claimed: false; holder: IdempotencyRecord };

export interface Claim {
  userId: string;
  key: string;
  fingerprint: string;
  /** Identifies this run, so that only it can complete or release its claim. */
  owner: string;
  /** The seed this run mints when the key has none yet. */
  seed: string;
  nowMs: number;
  leaseMs: number;
}

export interface IdempotencyStore {
  /**
   * Takes the key for this run when it is free (never used, expired,
   * released, or its lease ran out) and the request is the same; otherwise
   * returns the record that holds it.
   */
  claim(claim: Claim): Promise<ClaimOutcome>;
  /** The live record of a key; undefined when there is none or it has expired. */
  get(userId: string, key: string, nowMs: number): Promise<IdempotencyRecord | undefined>;
  /** Stores the response of the run that holds the claim, for 24 hours from the claim. */
  complete(claim: Claim, response: ApiResponse): Promise<void>;
  /** Frees the key after a failed run so that a retry runs again (with the same seed). */
  release(claim: Claim): Promise<void>;
}
