import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { inFallback } from '../deadline.js';
import { KeyInUse, KeyReused } from '../domain-errors.js';
import { newSeed } from '../ids.js';
import { logger } from '../observability.js';
import type { Claim, IdempotencyRecord, IdempotencyStore } from './model.js';

/** What a key keeps of a run's answer, and replays. */
export type KeptAnswer = Extract<IdempotencyRecord, { state: 'completed' }>['response'];

export interface IdempotencyTiming {
  /**
   * How long a run holds its key before a waiting retry of the same request
   * may take it over. Shorter than a function may run (FUNCTION_TIMEOUT_SECONDS,
   * 20 s) on purpose: a run that is slow, or died, or could not record its end,
   * does not hold its key for the rest of the function's time.
   */
  leaseMs: number;
  /** How long a concurrent request waits for the run holding its key, and how often it looks. */
  waitMs: number;
  pollMs: number;
  now: () => number;
}

/**
 * The lease is shorter than the wait: a request that finds its key held by a
 * run that is slow, or whose end could not be recorded, takes the key over
 * within its wait instead of answering 409. Two runs of one key at once are
 * safe: both mint the same ids from the key's seed, and one write wins; the
 * run that lost the key can no longer complete or release it.
 */
export const defaultTiming: IdempotencyTiming = { leaseMs: 5_000, waitMs: 10_000, pollMs: 50, now: Date.now };

/**
 * One request run under its key. How an answer is kept and replayed belongs
 * to the caller (the HTTP pipeline, shared/http/idempotency.ts); this service
 * only decides when a run runs, waits, replays or is refused.
 */
export interface KeyedRun {
  userId: string;
  key: string;
  /** What the request means (fingerprintOf): the same key with another meaning is refused. */
  fingerprint: string;
  /** The work, with the key's seed: the ids it creates come from it, in every run of the key. */
  operation: (seed: string) => Promise<KeptAnswer>;
  /** What is kept of an answer for replays; undefined when the answer is a failure of ours, which frees the key. */
  keep: (answer: KeptAnswer) => KeptAnswer | undefined;
  /** A thrown error as an answer to keep (a refusal replays like a success); undefined when it is a failure of ours. */
  keepRefusal: (error: unknown) => KeptAnswer | undefined;
  /** A kept answer, served again. */
  replay: (kept: KeptAnswer) => Promise<KeptAnswer>;
}

/**
 * Idempotency keys: the first request with a key runs and its answer is kept
 * for 24 hours; a retry with the same key and the same request gets that
 * answer again; the same key with a different request is refused (409).
 * A concurrent retry waits for the first run and replays it. A run that fails
 * on our side frees the key, so a retry runs again, with the same seed: a run
 * after one whose outcome was unknown finds what that one created instead of
 * creating it twice.
 */
export class IdempotencyService {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly timing: IdempotencyTiming = defaultTiming,
  ) {}

  async run(run: KeyedRun): Promise<KeptAnswer> {
    const { userId, key, fingerprint } = run;
    const deadline = this.timing.now() + this.timing.waitMs;
    for (;;) {
      const claim: Claim = {
        userId,
        key,
        fingerprint,
        owner: randomUUID(),
        seed: newSeed(),
        nowMs: this.timing.now(),
        leaseMs: this.timing.leaseMs,
      };
      const outcome = await this.store.claim(claim);
      if (outcome.claimed) return this.runClaimed(claim, outcome.seed, run);
      const { holder } = outcome;
      if (holder.fingerprint !== fingerprint) throw new KeyReused();
      if (holder.state === 'completed') return run.replay(holder.response);
      if (this.timing.now() >= deadline) throw new KeyInUse();
      await sleep(this.timing.pollMs);
    }
  }

  private async runClaimed(claim: Claim, seed: string, run: KeyedRun): Promise<KeptAnswer> {
    let answer: KeptAnswer;
    try {
      answer = await run.operation(seed);
    } catch (error) {
      const refusal = run.keepRefusal(error);
      if (refusal) await this.keep(claim, refusal);
      else await this.releaseQuietly(claim);
      throw error;
    }
    const kept = run.keep(answer);
    if (kept) await this.keep(claim, kept);
    else await inFallback(() => this.store.release(claim));
    return answer;
  }

  /** After a failure of our own: a key that cannot be released waits for its lease, which is logged, not answered. */
  private async releaseQuietly(claim: Claim): Promise<void> {
    await inFallback(() => this.store.release(claim)).catch((error) => logger.warn('idempotency key not released', { error }));
  }

  /**
   * The work is done: if its answer cannot be kept, the client still gets
   * it, and the key is released so that a retry runs again with the same
   * seed and finds that work (only if even that fails does the key wait for
   * its lease).
   */
  private async keep(claim: Claim, answer: KeptAnswer): Promise<void> {
    try {
      await this.store.complete(claim, answer);
    } catch (error) {
      logger.warn('idempotency record not stored', { error });
      await this.releaseQuietly(claim);
    }
  }
}

/** A hash of what the request means (route and parsed parameters), not of its bytes. */
export function fingerprintOf(route: string, meaning: unknown): string {
  return createHash('sha256').update(canonicalJson({ route, meaning })).digest('base64url');
}

/** JSON with object keys sorted, so equal meanings hash equally whatever order they came in. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([name, item]) => `${JSON.stringify(name)}:${canonicalJson(item)}`).join(',')}}`;
}
