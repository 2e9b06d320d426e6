import { busyOf } from '../dynamo/busy-retry.js';

/**
 * What an error from a backend means for the client: the backend could not
 * be reached or failed (503), or stayed throttled past the time budget (503
 * with Retry-After); anything else is a bug of ours (500). Contention is none
 * of these: it is retried inside the request (shared/dynamo/busy-retry.ts),
 * and what outlasts the budget is WriteContention (429).
 */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
]);

/** The backend failed or did not answer in time: its own 5xx codes, the SDK's timeouts, and the invocation's budget (shared/deadline.ts). */
const BACKEND_UNAVAILABLE = new Set(['ServiceUnavailable', 'InternalServerError', 'TimeoutError', 'RequestTimeout', 'DeadlineExceeded']);

/** S3's throttling (DynamoDB's is busyOf's): 503 SlowDown, which the SDK retries and then throws. */
const S3_THROTTLING = new Set(['SlowDown']);

export function isBackendThrottled(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (S3_THROTTLING.has(error.name) || busyOf(error) === 'throttling') return true;
  const cause = (error as Error & { cause?: unknown }).cause;
  if (error instanceof AggregateError) return error.errors.some(isBackendThrottled);
  return cause !== undefined && isBackendThrottled(cause);
}

export function isBackendUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const candidate = error as Error & { code?: string; $metadata?: { httpStatusCode?: number }; cause?: unknown };
  if (candidate.code && NETWORK_CODES.has(candidate.code)) return true;
  if (BACKEND_UNAVAILABLE.has(candidate.name)) return true;
  const status = candidate.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  if (error instanceof AggregateError) return error.errors.some(isBackendUnavailable);
  return candidate.cause !== undefined && isBackendUnavailable(candidate.cause);
}
