import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { lambdaApp, type App } from '../app.js';
import { withinBudget, type InvocationTime } from '../deadline.js';
import { recordFailure, recordRequest } from '../observability.js';
import { corsHeaders } from './cors.js';
import { ApiError, authenticationFailed, errorBody, internalError, serviceUnavailable } from './errors.js';
import { readParams, type Parsed, type ParamSpec } from './params.js';
import { lowerCaseHeaders, queryOf, requestIdOf, userIdOf, type ApiRequest } from './request.js';
import { toProxyResult, type ApiResponse } from './response.js';
import { isBackendUnavailable } from './unavailable.js';

/** What an endpoint does: the request (its query already read) and the App (configuration, services) it runs in. */
export type Endpoint<Q = Record<string, never>> = (request: ApiRequest & { query: Q }, app: App) => Promise<ApiResponse>;
/** `time`: Lambda's context (the emulator gives the same), from which the invocation's budget is drawn. */
export type ProxyHandler = (event: APIGatewayProxyEvent, time?: InvocationTime) => Promise<APIGatewayProxyResult>;

/** A Lambda handler (on the process's App) that the local server can also run on an App of its own. */
export interface HttpHandler extends ProxyHandler {
  withApp(app: App): ProxyHandler;
}

export interface Accepts<S extends ParamSpec> {
  /** The query parameters the route takes and how each is read; none when omitted. */
  query?: S;
}

/**
 * Turns an endpoint into a Lambda proxy handler: the one place where typed
 * errors become responses, where nothing internal leaks into a body, and
 * where every response gets its CORS headers and its log line. It also
 * reads the query string against what the route accepts, so that every
 * route, lists and the rest alike, refuses a parameter it does not know
 * (400 parameter_unknown) before the endpoint runs.
 */
export function httpHandler<S extends ParamSpec = Record<string, never>>(
  endpoint: Endpoint<Parsed<S>>,
  accepts: Accepts<S> = {},
): HttpHandler {
  const querySpec = accepts.query ?? ({} as S);
  const withQuery = (request: ApiRequest, app: App) => endpoint({ ...request, query: readParams(queryOf(request.event), querySpec) }, app);
  const onApp = (app: () => App): ProxyHandler => (event, time) => handle(withQuery, event, app(), time);
  return Object.assign(onApp(lambdaApp), { withApp: (app: App) => onApp(() => app) });
}

async function handle(endpoint: RawEndpoint, event: APIGatewayProxyEvent, app: App, time: InvocationTime | undefined): Promise<APIGatewayProxyResult> {
  const startedAt = performance.now();
  const requestId = requestIdOf(event);
  const headers = lowerCaseHeaders(event);
  const userId = userIdOf(event);
  // Every backend call of the endpoint ends in time for this function to answer (a 503 rather than Lambda's timeout).
  const result = await withinBudget(time, () => respond(endpoint, event, app, requestId, headers, userId));
  result.headers = { ...result.headers, ...corsHeaders(headers.origin, app.config.corsOrigins) };
  recordRequest({
    requestId,
    route: event.resource,
    method: event.httpMethod,
    status: result.statusCode,
    latencyMs: Math.round(performance.now() - startedAt),
    userId,
  });
  return result;
}

type RawEndpoint = (request: ApiRequest, app: App) => Promise<ApiResponse>;

async function respond(
  endpoint: RawEndpoint,
  event: APIGatewayProxyEvent,
  app: App,
  requestId: string,
  headers: Record<string, string>,
  userId: string | undefined,
): Promise<APIGatewayProxyResult> {
  try {
    // API Gateway never invokes us without the authorizer; refuse rather than guess a user.
    if (!userId) throw authenticationFailed('token_missing', 'Authorization header with a Bearer token is required');
    return toProxyResult(await endpoint({ event, requestId, userId, headers }, app), requestId);
  } catch (error) {
    return errorResult(error, requestId);
  }
}

export function errorResult(error: unknown, requestId: string): APIGatewayProxyResult {
  const apiError = toApiError(error);
  if (apiError.status >= 500) recordFailure(requestId, error);
  return toProxyResult(
    { status: apiError.status, body: errorBody(apiError, requestId), headers: apiError.headers },
    requestId,
  );
}

export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (isBackendUnavailable(error)) return serviceUnavailable();
  return internalError();
}
