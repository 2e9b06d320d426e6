import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { remainingForCalls } from '../deadline.js';

/**
 * The one retry policy of the writes: a contended or throttled table (nothing of ours written) is
 * asked again after a jittered, growing pause while the time budget lasts, because the SDK never
 * retries a transaction cancelled for either (docs/consistency.md, "The building blocks").
 */

/** The table refused for capacity (the SDK retries these few times and then throws them). */
export const THROTTLING = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded']);

/** Another writer: a single-item write that met a transaction on its item, or a transaction whose token is still running. */
export const CONTENTION = new Set(['TransactionConflictException', 'TransactionInProgressException']);

/** A transaction's cancellation reasons that mean the same as the sets above. */
const THROTTLING_REASON = 'ThrottlingError';
const CONTENTION_REASON = 'TransactionConflict';

export type Busy = 'contention' | 'throttling';

/** Which way the table was busy, if that is what `error` says; a cancellation with a failed condition is an answer, never busy. */
export function busyOf(error: unknown): Busy | undefined {
  if (!(error instanceof Error)) return undefined;
  if (THROTTLING.has(error.name)) return 'throttling';
  if (CONTENTION.has(error.name)) return 'contention';
  const codes = cancellationCodes(error);
  if (!codes || codes.includes('ConditionalCheckFailed')) return undefined;
  if (codes.includes(THROTTLING_REASON)) return 'throttling';
  if (codes.includes(CONTENTION_REASON)) return 'contention';
  return undefined;
}

/** The Code of each item of a cancelled transaction, by position; undefined for any other error. */
export function cancellationCodes(error: unknown): (string | undefined)[] | undefined {
  if (!(error instanceof Error) || error.name !== 'TransactionCanceledException') return undefined;
  return (error as Error & { CancellationReasons?: { Code?: string }[] }).CancellationReasons?.map((reason) => reason?.Code);
}

/**
 * What an attempt answers when another writer came first and nothing was
 * written (a condition on what it had read failed, the feed's head was
 * taken): try again, reading anew.
 */
export const CONTENDED = Symbol('contended');

/** Other writes kept this one from committing until the time budget ran out: nothing was written (429, retry shortly). */
export class WriteContention extends Error {
  override readonly name = 'WriteContention';
  constructor() {
    super('Concurrent writes to the same items kept this write from committing within its time budget');
  }
}

/**
 * Full jitter (a pause drawn from 0 to the cap of the attempt, the cap
 * doubling from `firstMs` up to `maxMs`): writers that met each other come
 * back at different moments. Contention clears in the time of another
 * writer's transaction; throttling in the time the table's capacity takes
 * to refill, so it starts slower and goes further.
 */
export const PACING: Record<Busy, { firstMs: number; maxMs: number }> = {
  contention: { firstMs: 10, maxMs: 400 },
  throttling: { firstMs: 50, maxMs: 2_000 },
};

/** An attempt started with less time than this left would only meet the budget's end. */
export const MIN_ATTEMPT_MS = 100;

/** Outside an invocation (scripts, the bench's direct calls) there is no budget: retries stop after this long. */
export const UNBUDGETED_RETRY_MS = 10_000;

/** The retries of one invocation, by what made them (its request line logs them: shared/observability.ts). */
export interface RetryTally {
  contention: number;
  throttling: number;
}

const tallies = new AsyncLocalStorage<RetryTally>();

/** Runs an invocation's work, counting the retries this policy makes in it. */
export async function tallyingRetries<T>(work: () => Promise<T>): Promise<{ value: T; retries: RetryTally }> {
  const retries: RetryTally = { contention: 0, throttling: 0 };
  const value = await tallies.run(retries, work);
  return { value, retries };
}

/**
 * `attempt(n)` (n from 1) until it answers other than CONTENDED, or throws
 * an error that is not busy (busyOf); a busy error is tried again as well.
 * Between attempts, a pause of the busy kind's pacing; when the budget
 * leaves no room for the pause and one more attempt, the last busy outcome
 * ends it: WriteContention for contention, the table's own error for
 * throttling (also when time cuts a later attempt short: still throttled).
 */
export async function retryWhileBusy<T>(
  attempt: (n: number) => Promise<T | typeof CONTENDED>,
  random: () => number = Math.random,
): Promise<T> {
  const unbudgetedEnd = performance.now() + UNBUDGETED_RETRY_MS;
  let lastThrottling: unknown;
  for (let n = 1; ; n += 1) {
    let busy: Busy;
    let error: unknown;
    try {
      const outcome = await attempt(n);
      if (outcome !== CONTENDED) return outcome as T;
      busy = 'contention';
    } catch (thrown) {
      const kind = busyOf(thrown);
      // A table that stayed throttled until time cut an attempt short (the budget, or the request's own timeout).
      if (!kind && lastThrottling !== undefined && cutShort(thrown)) throw lastThrottling;
      if (!kind) throw thrown;
      [busy, error] = [kind, thrown];
      if (kind === 'throttling') lastThrottling = thrown;
    }
    const { firstMs, maxMs } = PACING[busy];
    const pause = random() * Math.min(maxMs, firstMs * 2 ** (n - 1));
    const left = remainingForCalls() ?? Math.max(0, unbudgetedEnd - performance.now());
    if (left < pause + MIN_ATTEMPT_MS) throw busy === 'throttling' ? error : new WriteContention();
    const tally = tallies.getStore();
    if (tally) tally[busy] += 1;
    await sleep(pause);
  }
}

/** Errors of a call cut short by time: the invocation's budget (shared/deadline.ts) or the request's timeout. */
const CUT_SHORT = new Set(['DeadlineExceeded', 'TimeoutError', 'RequestTimeout']);

function cutShort(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = (cause as Error & { cause?: unknown }).cause) {
    if (CUT_SHORT.has(cause.name)) return true;
  }
  return false;
}
