import type { ErrorType } from '../../shared/http/errors.js';
import { BINARY_MEDIA_TYPES } from './gateway-settings.js';
import { MAX_BINARY_BODY_BYTES, MAX_TEXT_BODY_BYTES } from './size-guard.js';

/**
 * API Gateway's own answers (before or instead of a handler), in the error
 * shape of docs/api.md. The CDK stack renders these as gateway responses with
 * `$context` variables; the local server renders the same definitions with
 * the request's values.
 */
export type GatewayResponseType =
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'MISSING_AUTHENTICATION_TOKEN'
  | 'REQUEST_TOO_LARGE'
  | 'WAF_FILTERED'
  | 'THROTTLED'
  | 'INTEGRATION_TIMEOUT'
  | 'DEFAULT_4XX'
  | 'DEFAULT_5XX';

export interface GatewayResponse {
  status: number;
  /**
   * The deployed gateway keeps the status of the error it stands for (any
   * 4xx or 5xx) instead of forcing `status`, which is then only what the
   * local emulator answers.
   */
  keepsGatewayStatus?: true;
  type: ErrorType;
  /** A fixed code, or the authorizer context key that holds it. */
  code: string | { authorizerContext: string };
  message: string | { authorizerContext: string };
}

export const gatewayResponses: Record<GatewayResponseType, GatewayResponse> = {
  // No Authorization header, or one that is not `Bearer <token>`: API Gateway never calls the authorizer.
  UNAUTHORIZED: {
    status: 401,
    type: 'authentication_error',
    code: 'token_missing',
    message: 'Authorization header with a Bearer token is required',
  },
  // The authorizer denied the token and said why in its context (token_invalid, token_expired).
  ACCESS_DENIED: {
    status: 401,
    type: 'authentication_error',
    code: { authorizerContext: 'error_code' },
    message: { authorizerContext: 'error_message' },
  },
  // API Gateway's answer to a path or method it has no route for.
  MISSING_AUTHENTICATION_TOKEN: {
    status: 404,
    type: 'invalid_request_error',
    code: 'route_not_found',
    message: 'No route for this method and path',
  },
  // API Gateway's own 10 MB limit. AWS answers its default there whatever this says (customizing
  // REQUEST_TOO_LARGE is not supported); the size guard refuses such bodies first (WAF_FILTERED).
  REQUEST_TOO_LARGE: {
    status: 413,
    type: 'invalid_request_error',
    code: 'body_too_large',
    message: 'Request body must be at most 10 MB',
  },
  // The size guard (infra/declarations/size-guard.ts): a WAF web ACL on AWS, the same rules in the emulator. It refuses
  // every body whose Lambda event could pass 6,291,456 bytes, bodies over API Gateway's 10 MB with them.
  WAF_FILTERED: {
    status: 413,
    type: 'invalid_request_error',
    code: 'body_too_large',
    message: `Request body must declare its Content-Length and be at most ${MAX_BINARY_BODY_BYTES} bytes as ${BINARY_MEDIA_TYPES.join(', ')}, ${MAX_TEXT_BODY_BYTES} bytes otherwise`,
  },
  THROTTLED: { status: 429, type: 'rate_limit_error', code: 'rate_limited', message: 'Too many requests; retry later' },
  INTEGRATION_TIMEOUT: {
    status: 503,
    type: 'api_error',
    code: 'service_unavailable',
    message: 'The service did not answer in time; retry later',
  },
  DEFAULT_4XX: {
    status: 400,
    keepsGatewayStatus: true,
    type: 'invalid_request_error',
    code: 'request_invalid',
    message: 'The request could not be accepted',
  },
  DEFAULT_5XX: { status: 500, keepsGatewayStatus: true, type: 'api_error', code: 'internal_error', message: 'An internal error occurred' },
};

/** Statuses that must also tell the client how to authenticate. */
export const authenticationChallenge = { 'www-authenticate': 'Bearer' };
