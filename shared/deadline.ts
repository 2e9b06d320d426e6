import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * One time budget per invocation, so that a stalled backend is a 503 before Lambda's timeout cuts a
 * write protocol half-way (docs/consistency.md, "What a client sees when a backend stalls"); carried
 * by AsyncLocalStorage, so concurrent requests of the local server each see their own.
 */

/** What a Lambda invocation's context tells about time (the emulator gives the same). */
export interface InvocationTime {
  getRemainingTimeInMillis(): number;
}

/** The time of an invocation the local emulators start now, that Lambda would stop after `timeoutMs`. */
export function invocationTime(timeoutMs: number): InvocationTime {
  const endsAt = performance.now() + timeoutMs;
  return { getRemainingTimeInMillis: () => Math.max(0, Math.round(endsAt - performance.now())) };
}

/** Where an invocation's budget ends, on the monotonic clock (performance.now()). */
export interface Budget {
  /** Backend calls of the main path stop here. */
  callsEndAt: number;
  /** The protocols' fallbacks (see `inFallback`) may go on until here; then the function answers. */
  fallbacksEndAt: number;
}

/** Kept to answer after the last call: the response, its log line, the return to the runtime. */
export const ANSWER_SHARE = 0.1;
/** Kept for the fallbacks that follow a failed call (the orphan-file hand-off, "was the record stored?", the key's release). */
export const FALLBACK_SHARE = 0.15;

/**
 * The budget of an invocation that has `remainingMs` left at `now`: of a 20 s
 * function, backend calls until 15 s, fallbacks until 18 s, 2 s to answer.
 */
export function budgetFor(remainingMs: number, now: number): Budget {
  const left = Math.max(0, remainingMs);
  return {
    callsEndAt: now + left * (1 - ANSWER_SHARE - FALLBACK_SHARE),
    fallbacksEndAt: now + left * (1 - ANSWER_SHARE),
  };
}

/** What a stream consumer keeps at most after its last call: its partial batch response and its log line. */
export const CONSUMER_ANSWER_RESERVE_MS = 10_000;
/** What a stream consumer's fallbacks may use at most after its main path's calls stop. */
export const CONSUMER_FALLBACK_RESERVE_MS = 5_000;

/**
 * A stream consumer's budget: nobody waits on its answer, so of a 900 s
 * function its calls go on until 885 s, fallbacks until 890 s. A short
 * timeout (the local tests') keeps the API's shares, whichever ends later.
 */
export function consumerBudgetFor(remainingMs: number, now: number): Budget {
  const left = Math.max(0, remainingMs);
  const shares = budgetFor(left, now);
  return {
    callsEndAt: Math.max(shares.callsEndAt, now + left - CONSUMER_ANSWER_RESERVE_MS - CONSUMER_FALLBACK_RESERVE_MS),
    fallbacksEndAt: Math.max(shares.fallbacksEndAt, now + left - CONSUMER_ANSWER_RESERVE_MS),
  };
}

interface Scope {
  budget: Budget;
  /** Inside a fallback: calls may use the reserve. */
  fallback: boolean;
  /** Where Lambda stops the invocation, on the wall clock (epoch milliseconds). */
  endsAt: number;
}

const scopes = new AsyncLocalStorage<Scope>();

/** Runs an invocation's work within its budget (none when the caller gives no time, as a direct call does). */
export function withinBudget<T>(
  time: InvocationTime | undefined,
  work: () => Promise<T>,
  budgetOf: typeof budgetFor = budgetFor,
): Promise<T> {
  if (!time) return work();
  const remaining = time.getRemainingTimeInMillis();
  return scopes.run({ budget: budgetOf(remaining, performance.now()), fallback: false, endsAt: Date.now() + Math.max(0, remaining) }, work);
}

/**
 * When the current invocation ends (epoch milliseconds): nothing of it runs
 * after, so nothing it started can still write. Undefined outside an invocation.
 */
export function invocationEndsAt(): number | undefined {
  return scopes.getStore()?.endsAt;
}

/**
 * Runs what a protocol does after a failed call to leave nothing behind: its
 * calls may use the reserve the main path left (FALLBACK_SHARE).
 */
export function inFallback<T>(work: () => Promise<T>): Promise<T> {
  const scope = scopes.getStore();
  return scope ? scopes.run({ ...scope, fallback: true }, work) : work();
}

/** Milliseconds a backend call may still take (0: none may start); undefined outside an invocation. */
export function remainingForCalls(now = performance.now()): number | undefined {
  const scope = scopes.getStore();
  if (!scope) return undefined;
  return remainingOf(scope.budget, scope.fallback, now);
}

export function remainingOf(budget: Budget, fallback: boolean, now: number): number {
  return Math.max(0, (fallback ? budget.fallbacksEndAt : budget.callsEndAt) - now);
}

/**
 * A backend call refused or cut because the invocation's budget is spent.
 * Not retryable by the SDK (it is none of the errors its retry strategy
 * retries), so no attempt follows; the API answers 503 service_unavailable.
 */
export class DeadlineExceeded extends Error {
  override readonly name = 'DeadlineExceeded';
  constructor() {
    super("The invocation's time budget for backend calls is spent");
  }
}
