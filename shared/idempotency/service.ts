import { createHash, randomUUID } from 'node:crypto';
import { inFallback } from '../deadline.js';
import { errorBody, idempotencyKeyInUse, idempotencyKeyReused, parameterInvalid } from '../http/errors.js';
import { toApiError } from '../http/handler.js';
import type { ApiRequest } from '../http/request.js';
import type { ApiResponse } from '../http/response.js';
import { logger } from '../observability.js';
import { isWellFormed } from '../text.js';
import { newSeed } from '../ids.js';
import type { Claim, IdempotencyStore } from './model.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** Set on a response that replays an earlier one. */
export const REPLAYED_HEADER = 'idempotent-replayed';
export const MAX_KEY_LENGTH = 255;

export interface IdempotencyTiming {
  /** How long a run holds its key before another request may take it over (longer than a Lambda runs). */
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
 * safe: both mint the same ids from the key's seed, and one write wins.
 */
export const defaultTiming: IdempotencyTiming = { leaseMs: 5_000, waitMs: 10_000, pollMs: 50, now: Date.now };

export interface ReplayOptions {
  /** What of a response is stored: leaves out what must not be (e.g. a presigned link). */
  keep?: (response: ApiResponse) => ApiResponse;
  /** Rebuilds a replayed response from what was stored (e.g. mints the link anew). */
  refresh?: (stored: ApiResponse) => Promise<ApiResponse>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The work of a request; `seed` is its key's (see IdempotencyService.run). */
export type Operation = (seed: string | undefined) => Promise<ApiResponse>;

/**
 * Idempotency-Key: the first request with a key runs and its response is kept
 * for 24 hours; a retry with the same key and the same request gets that
 * response again; the same key with a different request is refused (409).
 * A concurrent retry waits for the first run and replays it. A run that fails
 * on our side (5xx) frees the key, so a retry runs again.
 */
export class IdempotencyService {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly timing: IdempotencyTiming = defaultTiming,
  ) {}

  /**
   * `operation` gets the key's seed (undefined without a key): the ids it
   * creates come from it, so a run after one whose outcome was unknown finds
   * what that one created instead of creating it twice.
   */
  async run(request: ApiRequest, meaning: unknown, operation: Operation, options: ReplayOptions = {}): Promise<ApiResponse> {
    const key = idempotencyKeyOf(request);
    if (key === undefined) return operation(undefined);
    const { event, userId, requestId } = request;
    const fingerprint = fingerprintOf(`${event.httpMethod} ${event.resource}`, meaning);
    const deadline = this.timing.now() + this.timing.waitMs;
    for (;;) {
      const claim: Claim = { userId, key, fingerprint, owner: randomUUID(), seed: newSeed(), nowMs: this.timing.now(), leaseMs: this.timing.leaseMs };
      const outcome = await this.store.claim(claim);
      if (outcome.claimed) return this.runClaimed(claim, requestId, () => operation(outcome.seed), options.keep ?? ((response) => response));
      const { holder } = outcome;
      if (holder.fingerprint !== fingerprint) throw idempotencyKeyReused();
      if (holder.state === 'completed') return replayed(options.refresh ? await options.refresh(holder.response) : holder.response);
      if (this.timing.now() >= deadline) throw idempotencyKeyInUse();
      await sleep(this.timing.pollMs);
    }
  }

  private async runClaimed(
    claim: Claim,
    requestId: string,
    operation: () => Promise<ApiResponse>,
    keep: (response: ApiResponse) => ApiResponse,
  ): Promise<ApiResponse> {
    let response: ApiResponse;
    try {
      response = await operation();
    } catch (error) {
      const apiError = toApiError(error);
      // A refusal is the request's answer and replays like a success; our own failure does not.
      if (apiError.status < 500) {
        await this.keep(claim, { status: apiError.status, body: errorBody(apiError, requestId), headers: apiError.headers });
      } else {
        await this.releaseQuietly(claim);
      }
      throw error;
    }
    if (response.status >= 500) await inFallback(() => this.store.release(claim));
    else await this.keep(claim, keep(response));
    return response;
  }

  /**
   * The work is done: if its response cannot be kept, the client still gets
   * the answer, and the key is released so that a retry runs again with the
   * same seed and finds that work (only if even that fails does the key wait
   * for its lease).
   */
  /** After a failure of our own: a key that cannot be released waits for its lease, which is logged, not answered. */
  private async releaseQuietly(claim: Claim): Promise<void> {
    await inFallback(() => this.store.release(claim)).catch((error) => logger.warn('idempotency key not released', { error: String(error) }));
  }

  private async keep(claim: Claim, response: ApiResponse): Promise<void> {
    try {
      await this.store.complete(claim, response);
    } catch (error) {
      logger.warn('idempotency record not stored', { error: String(error) });
      await this.releaseQuietly(claim);
    }
  }
}

function idempotencyKeyOf(request: ApiRequest): string | undefined {
  const key = request.headers[IDEMPOTENCY_HEADER];
  if (key === undefined) return undefined;
  if (key.length < 1 || key.length > MAX_KEY_LENGTH || /[\p{Cc}]/u.test(key) || !isWellFormed(key)) {
    throw parameterInvalid('Idempotency-Key', `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters of well-formed Unicode without control characters`);
  }
  return key;
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

function replayed(response: ApiResponse): ApiResponse {
  return { ...response, headers: { ...response.headers, [REPLAYED_HEADER]: 'true' } };
}
