import {
  DomainError,
  InvalidParameter,
  KeyInUse,
  KeyReused,
  NotAMember,
  NotFound,
  NotTheOwner,
  ReferenceMissing,
  SessionRefused,
} from '../domain-errors.js';
import { WriteContention } from '../dynamo/busy-retry.js';
import type { ApiResponse } from './response.js';
import { isBackendThrottled, isBackendUnavailable } from './unavailable.js';

/**
 * The one place that knows the error shape (docs/api.md, "Errors"). Handlers and
 * request parsers throw ApiError, services domain errors (shared/domain-errors.ts)
 * that toApiError answers; the handler wrapper, the local gateway and the CDK
 * gateway responses all render through errorBody().
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'idempotency_error'
  | 'rate_limit_error'
  | 'api_error';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string,
    message: string,
    readonly param?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface ErrorBody {
  error: {
    type: ErrorType;
    code: string;
    message: string;
    param?: string;
    request_id: string;
  };
}

export function errorBody(error: Pick<ApiError, 'type' | 'code' | 'message' | 'param'>, requestId: string): ErrorBody {
  return {
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      ...(error.param === undefined ? {} : { param: error.param }),
      request_id: requestId,
    },
  };
}

export const parameterMissing = (param: string, message = `${param} is required`) =>
  new ApiError(400, 'invalid_request_error', 'parameter_missing', message, param);

export const parameterInvalid = (param: string, message: string) =>
  new ApiError(400, 'invalid_request_error', 'parameter_invalid', message, param);

export const parameterUnknown = (param: string) =>
  new ApiError(400, 'invalid_request_error', 'parameter_unknown', `Unknown parameter: ${param}`, param);

export const bodyInvalid = (message: string) => new ApiError(400, 'invalid_request_error', 'body_invalid', message);

/** A reference in the request body to something the user does not have. */
export const referenceMissing = (param: string, message: string) =>
  new ApiError(400, 'invalid_request_error', 'resource_missing', message, param);

/** The path names nothing of the user's. Another user's id looks exactly the same. */
export const resourceMissing = (resource: string, id: string) =>
  new ApiError(404, 'invalid_request_error', 'resource_missing', `No such ${resource}: ${id}`, 'id');

export const unsupportedMediaType = (contentType: string, accepted: readonly string[]) =>
  new ApiError(
    415,
    'invalid_request_error',
    'unsupported_media_type',
    `Content type ${contentType || '(none)'} is not accepted here; use ${accepted.join(' or ')}`,
  );

/** A file over its size limit: the uploaded file part, or the declared `file_size` of an upload session. */
export const fileTooLarge = (limit: number, param = 'file') =>
  new ApiError(413, 'invalid_request_error', 'file_too_large', `${param} must be at most ${limit} bytes`, param);

/**
 * A group conversation whose group the token does not list (docs/api.md,
 * "Groups"): the user may see the thing but not do this to it.
 */
export const notAMember = (groupId: string, param?: string) =>
  new ApiError(403, 'permission_error', 'not_a_member', `You are not a member of group ${groupId}`, param);

export const notOwner = (resource: string, id: string) =>
  new ApiError(403, 'permission_error', 'not_owner', `Only the uploader may change or delete ${resource} ${id}`);

export const idempotencyKeyReused = () =>
  new ApiError(
    409,
    'idempotency_error',
    'idempotency_key_reused',
    'This Idempotency-Key was already used with a different request',
    'Idempotency-Key',
  );

/** A concurrent request with the same key is still running after we waited for it. */
export const idempotencyKeyInUse = () =>
  new ApiError(
    409,
    'idempotency_error',
    'idempotency_key_in_use',
    'A request with this Idempotency-Key is still in progress; retry shortly',
    'Idempotency-Key',
  );

export const authenticationFailed = (code: 'token_missing' | 'token_invalid' | 'token_expired', message: string) =>
  new ApiError(401, 'authentication_error', code, message, undefined, { 'www-authenticate': 'Bearer' });

/** `retryAfterSeconds`: when the backend stayed throttled, how soon a retry has a chance (Retry-After). */
export const serviceUnavailable = (retryAfterSeconds?: number) =>
  new ApiError(
    503,
    'api_error',
    'service_unavailable',
    'The service is temporarily unavailable; retry later',
    undefined,
    retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) },
  );

/**
 * Other writes to the same records (the user's feed, a conversation) kept
 * this one from committing for the whole time budget, retried all along:
 * nothing was written. Not an outage (503) nor the client's mistake (409):
 * a burst on one resource, as Stripe answers its lock timeouts.
 */
export const writeContention = () =>
  new ApiError(
    429,
    'rate_limit_error',
    'write_contention',
    'Concurrent writes to the same records kept this request from completing; retry shortly',
    undefined,
    {
      'retry-after': String(RETRY_AFTER_SECONDS.contention),
    },
  );

/** What Retry-After says after a busy backend: contention clears in the time of a few writes, throttling as capacity refills. */
export const RETRY_AFTER_SECONDS = { contention: 1, throttling: 2 } as const;

export const internalError = () => new ApiError(500, 'api_error', 'internal_error', 'An internal error occurred');

/**
 * What a thrown error answers: an ApiError itself, a service's refusal as its
 * domain error says, contention that outlasted
 * the budget 429, a backend throttled past it 503 with Retry-After, an
 * unreachable or failing one 503, anything else 500 without internals.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof DomainError) return refusalOf(error);
  if (error instanceof WriteContention) return writeContention();
  if (isBackendThrottled(error)) return serviceUnavailable(RETRY_AFTER_SECONDS.throttling);
  if (isBackendUnavailable(error)) return serviceUnavailable();
  return internalError();
}

/** The one mapping of the services' domain errors to answers. */
function refusalOf(error: DomainError): ApiError {
  if (error instanceof NotFound) return resourceMissing(error.resource, error.id);
  if (error instanceof ReferenceMissing) return referenceMissing(error.param, error.message);
  if (error instanceof NotAMember) return notAMember(error.groupId, error.param);
  if (error instanceof NotTheOwner) return notOwner(error.resource, error.id);
  if (error instanceof InvalidParameter) return parameterInvalid(error.param, error.message);
  if (error instanceof SessionRefused) return new ApiError(400, 'invalid_request_error', error.code, error.message, error.param);
  if (error instanceof KeyReused) return idempotencyKeyReused();
  if (error instanceof KeyInUse) return idempotencyKeyInUse();
  return internalError();
}

/** An error as the response that carries it. */
export function errorResponse(error: ApiError, requestId: string): ApiResponse {
  return { status: error.status, body: errorBody(error, requestId), headers: error.headers };
}
