import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { type InvocationTime, withinBudget } from '../deadline.js';
import { tallyingRetries } from '../dynamo/busy-retry.js';
import type { IdempotencyService } from '../idempotency/service.js';
import { recordFailure, recordRequest, withLogKeys } from '../observability.js';
import { corsHeaders } from './cors.js';
import { authenticationFailed, errorResponse, toApiError } from './errors.js';
import { type ReplayOptions, underIdempotencyKey } from './idempotency.js';
import { type ParamSpec, type Parsed, readParams } from './params.js';
import { type ApiRequest, callerOf, lowerCaseHeaders, queryOf, requestIdOf, userIdOf } from './request.js';
import { type ApiResponse, toProxyResult } from './response.js';

/**
 * What the pipeline reads of a handler's route row (shared/routes.ts), the one
 * declaration of whether the route honours Idempotency-Key: the stack grants
 * the idempotency table from it, and the handler's type follows it.
 */
export interface RouteRow {
  readonly name: string;
  readonly idempotent?: boolean;
}

/** What the pipeline needs of the Composition it runs on (shared/app.ts; this module does not import it). */
export interface PipelineComposition {
  readonly config: { readonly corsOrigins: readonly string[] };
}

/** What an endpoint does: the request (its query already read) and the Composition (configuration, services) it runs in. */
export type Endpoint<Q, A> = (request: ApiRequest & { query: Q }, composition: A) => Promise<ApiResponse>;

/** A request of an idempotent route; `seed` is its Idempotency-Key's (undefined without one). */
export type SeededRequest = ApiRequest & { seed: string | undefined };

/**
 * What an idempotent route does, in the order it happens: read its input
 * (parse and validate: a refusal here is answered before any key is claimed,
 * and never kept), then run under the request's Idempotency-Key. The ids the
 * run creates come from the seed, so a run after one whose outcome was unknown
 * finds what that one created.
 */
export interface IdempotentEndpoint<I, A> {
  input(request: ApiRequest, composition: A): I | Promise<I>;
  /** What the request means, as the key compares requests; the input itself when omitted. */
  meaning?(input: I): unknown;
  /** How a response is stored and replayed, when not as it is (e.g. a presigned link minted anew). */
  replay?(request: ApiRequest, composition: A): ReplayOptions;
  run(input: I, request: SeededRequest, composition: A): Promise<ApiResponse>;
}

/** `time`: Lambda's context (the emulator gives the same), from which the invocation's budget is drawn. */
export type ProxyHandler = (event: APIGatewayProxyEvent, time?: InvocationTime) => Promise<APIGatewayProxyResult>;

/** A Lambda handler (on the process's Composition) that the local server can also run on a Composition of its own. */
export interface HttpHandler<A> extends ProxyHandler {
  /** The route row it was made for (test/infra/routes.test.ts holds every route to its own). */
  readonly route: RouteRow;
  withComposition(composition: A): ProxyHandler;
}

export interface Accepts<S extends ParamSpec> {
  /** The query parameters the route takes and how each is read; none when omitted. */
  query?: S;
}

/** What the pipeline runs on: given by the composition root, which this module does not import. */
export interface Runtime<A> {
  /** The Composition of the Lambda process, built on its first request. */
  composition: () => A;
  /** The Composition's Idempotency-Key records, for the routes whose row says `idempotent`. */
  idempotency: (composition: A) => IdempotencyService;
}

/**
 * An endpoint of its route: a function for a plain route, an
 * IdempotentEndpoint for a route whose row says `idempotent: true` (any
 * other pairing does not compile).
 */
export interface HttpHandlerFactory<A> {
  <S extends ParamSpec = Record<string, never>>(
    route: RouteRow & { readonly idempotent?: false },
    endpoint: Endpoint<Parsed<S>, A>,
    accepts?: Accepts<S>,
  ): HttpHandler<A>;
  <I>(route: RouteRow & { readonly idempotent: true }, endpoint: IdempotentEndpoint<I, A>): HttpHandler<A>;
}

type RawEndpoint<A> = (request: ApiRequest, composition: A) => Promise<ApiResponse>;

/**
 * Turns endpoints into Lambda proxy handlers: the one place where typed
 * errors become responses, where nothing internal leaks into a body, and
 * where every response gets its CORS headers and its log line. It also
 * reads the query string against what the route accepts, so that every
 * route refuses a parameter it does not know (400 parameter_unknown) before
 * the endpoint runs, and runs an idempotent route's work under its
 * Idempotency-Key (shared/http/idempotency.ts).
 */
export function httpPipeline<A extends PipelineComposition>(runtime: Runtime<A>): HttpHandlerFactory<A> {
  function httpHandler(
    route: RouteRow,
    endpoint: Endpoint<never, A> | IdempotentEndpoint<unknown, A>,
    accepts: Accepts<ParamSpec> = {},
  ): HttpHandler<A> {
    if ((route.idempotent === true) !== (typeof endpoint !== 'function')) {
      throw new Error(`${route.name}: an idempotent route takes an IdempotentEndpoint, any other a function`);
    }
    const querySpec = accepts.query ?? {};
    const run: RawEndpoint<A> = typeof endpoint === 'function' ? (endpoint as RawEndpoint<A>) : idempotently(endpoint, runtime.idempotency);
    const withQuery: RawEndpoint<A> = (request, composition) =>
      run({ ...request, query: readParams(queryOf(request.event), querySpec) } as ApiRequest, composition);
    const onComposition =
      (composition: () => A): ProxyHandler =>
      (event, time) =>
        serveWithLogKeys(withQuery, route, event, composition(), time);
    return Object.assign(onComposition(runtime.composition), {
      route,
      withComposition: (composition: A) => onComposition(() => composition),
    });
  }
  return httpHandler as HttpHandlerFactory<A>;
}

function idempotently<I, A>(endpoint: IdempotentEndpoint<I, A>, idempotency: (composition: A) => IdempotencyService): RawEndpoint<A> {
  return async (request, composition) => {
    const input = await endpoint.input(request, composition);
    return underIdempotencyKey(
      idempotency(composition),
      request,
      endpoint.meaning ? endpoint.meaning(input) : input,
      (seed) => endpoint.run(input, { ...request, seed }, composition),
      endpoint.replay?.(request, composition),
    );
  };
}

/**
 * Every line logged while the request runs (the pipeline's, the services',
 * a late promise's) carries its request id, function and caller; the next
 * request's lines carry its own.
 */
function serveWithLogKeys<A extends PipelineComposition>(
  endpoint: RawEndpoint<A>,
  route: RouteRow,
  event: APIGatewayProxyEvent,
  composition: A,
  time: InvocationTime | undefined,
): Promise<APIGatewayProxyResult> {
  const keys = { request_id: requestIdOf(event), function: route.name, user_id: userIdOf(event) };
  return withLogKeys(keys, () => serveRecorded(endpoint, event, composition, time));
}

/** Runs the endpoint within the invocation's budget, adds the CORS headers and records the request's line and metrics. */
async function serveRecorded<A extends PipelineComposition>(
  endpoint: RawEndpoint<A>,
  event: APIGatewayProxyEvent,
  composition: A,
  time: InvocationTime | undefined,
): Promise<APIGatewayProxyResult> {
  const startedAt = performance.now();
  const requestId = requestIdOf(event);
  const headers = lowerCaseHeaders(event);
  const userId = userIdOf(event);
  // Every backend call of the endpoint ends in time for this function to answer (a 503 rather than Lambda's timeout).
  const { value: result, retries } = await tallyingRetries(() =>
    withinBudget(time, () => endpointResult(endpoint, event, composition, requestId, headers, userId)),
  );
  result.headers = { ...result.headers, ...corsHeaders(headers.origin, composition.config.corsOrigins) };
  recordRequest({
    requestId,
    route: event.resource,
    method: event.httpMethod,
    status: result.statusCode,
    latencyMs: Math.round(performance.now() - startedAt),
    userId,
    retries,
  });
  return result;
}

/** The endpoint's response for an authenticated caller, or the error response of whatever it threw. */
async function endpointResult<A>(
  endpoint: RawEndpoint<A>,
  event: APIGatewayProxyEvent,
  composition: A,
  requestId: string,
  headers: Record<string, string>,
  userId: string | undefined,
): Promise<APIGatewayProxyResult> {
  try {
    // API Gateway never invokes us without the authorizer; refuse rather than guess a user.
    if (!userId) throw authenticationFailed('token_missing', 'Authorization header with a Bearer token is required');
    return toProxyResult(await endpoint({ event, caller: callerOf(event, userId), headers }, composition), requestId);
  } catch (error) {
    return errorResult(error, requestId);
  }
}

export function errorResult(error: unknown, requestId: string): APIGatewayProxyResult {
  const apiError = toApiError(error);
  if (apiError.status >= 500) recordFailure(requestId, error);
  return toProxyResult(errorResponse(apiError, requestId), requestId);
}
