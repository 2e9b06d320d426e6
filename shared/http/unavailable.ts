/**
 * Tells whether an error from the AWS SDK means a backend could not be
 * reached or is overloaded: the client should retry later (503), it is not a
 * bug of ours (500).
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

const THROTTLING = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'SlowDown',
  'ServiceUnavailable',
  'InternalServerError',
  'TimeoutError',
  'RequestTimeout',
  // Transactions: another transaction held the items, or one with this token is still running.
  'TransactionCanceledException',
  'TransactionConflictException',
  'TransactionInProgressException',
  // The invocation's time budget ended before the backend answered (shared/deadline.ts).
  'DeadlineExceeded',
]);

export function isBackendUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const candidate = error as Error & { code?: string; $metadata?: { httpStatusCode?: number }; cause?: unknown };
  if (candidate.code && NETWORK_CODES.has(candidate.code)) return true;
  if (THROTTLING.has(candidate.name)) return true;
  const status = candidate.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  if (error instanceof AggregateError) return error.errors.some(isBackendUnavailable);
  return candidate.cause !== undefined && isBackendUnavailable(candidate.cause);
}
