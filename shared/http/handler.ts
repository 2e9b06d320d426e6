import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { ApiError, authenticationFailed, errorBody, internalError, serviceUnavailable } from './errors.js';
import { lowerCaseHeaders, requestIdOf, userIdOf, type ApiRequest } from './request.js';
import { toProxyResult, type ApiResponse } from './response.js';
import { isBackendUnavailable } from './unavailable.js';

export type Endpoint = (request: ApiRequest) => Promise<ApiResponse>;
export type ProxyHandler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;

/**
 * Turns an endpoint into a Lambda proxy handler: the one place where typed
 * errors become responses and where nothing internal leaks into a body.
 */
export function httpHandler(endpoint: Endpoint): ProxyHandler {
  return async (event) => {
    const requestId = requestIdOf(event);
    try {
      const userId = userIdOf(event);
      // API Gateway never invokes us without the authorizer; refuse rather than guess a user.
      if (!userId) throw authenticationFailed('token_missing', 'Authorization header with a Bearer token is required');
      const response = await endpoint({ event, requestId, userId, headers: lowerCaseHeaders(event) });
      return toProxyResult(response, requestId);
    } catch (error) {
      return errorResult(error, requestId);
    }
  };
}

export function errorResult(error: unknown, requestId: string): APIGatewayProxyResult {
  const apiError = toApiError(error);
  if (apiError.status >= 500) {
    console.error(
      JSON.stringify({
        level: 'ERROR',
        message: 'request failed',
        request_id: requestId,
        error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
      }),
    );
  }
  return toProxyResult(
    { status: apiError.status, body: errorBody(apiError, requestId), headers: apiError.headers },
    requestId,
  );
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (isBackendUnavailable(error)) return serviceUnavailable();
  return internalError();
}
