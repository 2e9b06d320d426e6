import { fingerprintOf, type IdempotencyService } from '../idempotency/service.js';
import { isWellFormed } from '../text.js';
import { errorResponse, parameterInvalid, toApiError } from './errors.js';
import type { ApiRequest } from './request.js';
import type { ApiResponse } from './response.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** Set on a response that replays an earlier one. */
export const REPLAYED_HEADER = 'idempotent-replayed';
export const MAX_KEY_LENGTH = 255;

export interface ReplayOptions {
  /** What of a response is stored: leaves out what must not be (e.g. a presigned link). */
  keep?: (response: ApiResponse) => ApiResponse;
  /** Rebuilds a replayed response from what was stored (e.g. mints the link anew). */
  refresh?: (stored: ApiResponse) => Promise<ApiResponse>;
}

/** The work of a request; `seed` is its key's, undefined without a key (see IdempotencyService). */
export type Operation = (seed: string | undefined) => Promise<ApiResponse>;

/**
 * Idempotency-Key over HTTP, for the routes whose row says `idempotent`
 * (shared/http/handler.ts runs it): without the header the operation just
 * runs; with it, the run is the service's, where a response with a status
 * under 500 and a refusal (4xx) are kept and replay with Idempotent-Replayed,
 * and our own failures (5xx, thrown or answered) and contention (429) free the key.
 */
export async function underIdempotencyKey(
  service: IdempotencyService,
  request: ApiRequest,
  meaning: unknown,
  operation: Operation,
  options: ReplayOptions = {},
): Promise<ApiResponse> {
  const key = idempotencyKeyOf(request);
  if (key === undefined) return operation(undefined);
  const { event, caller } = request;
  const keep = options.keep ?? ((response: ApiResponse) => response);
  return service.run({
    userId: caller.userId,
    key,
    fingerprint: fingerprintOf(`${event.httpMethod} ${event.resource}`, meaning),
    operation,
    keep: (response) => (isFinal(response.status) ? keep(response) : undefined),
    keepRefusal: (error) => {
      const apiError = toApiError(error);
      return isFinal(apiError.status) ? errorResponse(apiError, caller.requestId) : undefined;
    },
    replay: async (stored) => replayed(options.refresh ? await options.refresh(stored) : stored),
  });
}

/** An answer a retry of the same request would get again: kept for the key. A 5xx or a 429 (busy, retry shortly) frees it instead. */
const isFinal = (status: number): boolean => status < 500 && status !== 429;

function idempotencyKeyOf(request: ApiRequest): string | undefined {
  const key = request.headers[IDEMPOTENCY_HEADER];
  if (key === undefined) return undefined;
  if (key.length < 1 || key.length > MAX_KEY_LENGTH || /[\p{Cc}]/u.test(key) || !isWellFormed(key)) {
    throw parameterInvalid(
      'Idempotency-Key',
      `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters of well-formed Unicode without control characters`,
    );
  }
  return key;
}

function replayed(response: ApiResponse): ApiResponse {
  return { ...response, headers: { ...response.headers, [REPLAYED_HEADER]: 'true' } };
}
