import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { APIGatewayAuthorizerResult, APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { TokenAuthorizer } from '../../functions/authorizer.js';
import { invocationTime } from '../../shared/deadline.js';
import { corsHeaders, gatewayResponseCorsHeaders, preflightHeaders } from '../../shared/http/cors.js';
import { dictionary } from '../../shared/http/dictionary.js';
import { type ApiError, errorBody } from '../../shared/http/errors.js';
import type { ProxyHandler } from '../../shared/http/handler.js';
import { logger } from '../../shared/observability.js';
import type { Route } from '../../shared/routes.js';
import { FUNCTION_TIMEOUT_SECONDS } from '../declarations/function-settings.js';
import { authenticationChallenge, type GatewayResponseType, gatewayResponses } from '../declarations/gateway-responses.js';
import { BEARER_HEADER_PATTERN, BINARY_MEDIA_TYPES, LAMBDA_MAX_INVOKE_PAYLOAD_BYTES } from '../declarations/gateway-settings.js';
import { type GuardedRequest, type GuardRule, refusingRule } from '../declarations/size-guard.js';
import { rawHeaderPairs } from './raw-headers.js';

export interface LoadedRoute {
  route: Route;
  handler: ProxyHandler;
}

export interface GatewayOptions {
  routes: LoadedRoute[];
  authorizer: TokenAuthorizer;
  region?: string;
  stage?: string;
  /** Browser origins allowed (CORS_ORIGINS), for the gateway's own answers. */
  corsOrigins: readonly string[];
  /** Seconds an authorizer result is reused for the same token, as API Gateway's cache does. */
  authorizerCacheSeconds?: number;
  /** Extra handlers for paths outside the API (e.g. the OpenAPI document); no token needed. */
  publicRoutes?: Record<string, (request: IncomingMessage, response: ServerResponse) => void>;
  /**
   * The stage's web ACL: the size guard (infra/declarations/size-guard.ts) unless told
   * otherwise; `() => undefined` is a stage without it.
   */
  webAcl?: (request: GuardedRequest) => GuardRule | undefined;
  /**
   * The functions' timeout (Lambda's, FUNCTION_TIMEOUT_SECONDS, unless told
   * otherwise): a handler or authorizer that has not answered by then is
   * answered as API Gateway answers a function that timed out.
   */
  functionTimeoutMs?: number;
  /** Every request's id (requestContext.requestId), as sam local gives one per start-api process; default: a new one per request, as API Gateway. */
  requestId?: string;
}

const API_ID = 'localapi';
/** The account of everything the local server makes up an ARN or an envelope for. */
export const LOCAL_ACCOUNT = '000000000000';

/**
 * An API Gateway REST API (proxy integration, TOKEN authorizer) in one
 * process: what `npm start` and the integration tests run. It builds the same
 * events API Gateway builds, runs the same authorizer and handlers, and
 * answers with the same gateway responses.
 */
export function createGateway(options: GatewayOptions) {
  const timeoutMs = options.functionTimeoutMs ?? FUNCTION_TIMEOUT_SECONDS * 1000;
  const gateway: Gateway = {
    options,
    region: options.region ?? 'us-east-1',
    stage: options.stage ?? 'local',
    timeoutMs,
    bearer: new RegExp(BEARER_HEADER_PATTERN),
    matchers: options.routes.map((loaded) => ({ ...loaded, pattern: pathPattern(loaded.route.path) })),
    webAcl: options.webAcl ?? refusingRule,
    authorize: cachedAuthorizer(options.authorizer, timeoutMs, (options.authorizerCacheSeconds ?? 300) * 1000),
  };
  return (request: IncomingMessage, response: ServerResponse): Promise<void> => serveRequest(gateway, request, response);
}

/** A gateway's settings, as createGateway resolved them once. */
interface Gateway {
  options: GatewayOptions;
  region: string;
  stage: string;
  timeoutMs: number;
  bearer: RegExp;
  matchers: (LoadedRoute & { pattern: RegExp })[];
  webAcl: (request: GuardedRequest) => GuardRule | undefined;
  authorize: (token: string, methodArn: string) => Promise<AuthorizerOutcome>;
}

type AuthorizerOutcome = APIGatewayAuthorizerResult | 'unauthorized' | 'failed';

/**
 * The authorizer behind API Gateway's result cache (per token). API Gateway
 * answers an authorizer that throws "Unauthorized" with 401 and any other
 * failure (a secret it cannot read, a bug, its timeout) with 500; it caches neither.
 */
function cachedAuthorizer(authorizer: TokenAuthorizer, timeoutMs: number, cacheMs: number): Gateway['authorize'] {
  const cache = new Map<string, { result: APIGatewayAuthorizerResult; expires: number }>();
  return async (token, methodArn) => {
    const cached = cache.get(token);
    if (cached && cached.expires > Date.now()) return cached.result;
    try {
      const outcome = await withinTimeout(timeoutMs, () => authorizer({ type: 'TOKEN', authorizationToken: token, methodArn }));
      if (outcome === TIMED_OUT) return 'failed';
      const { result } = outcome;
      cache.set(token, { result, expires: Date.now() + cacheMs });
      return result;
    } catch (error) {
      return error instanceof Error && error.message === 'Unauthorized' ? 'unauthorized' : 'failed';
    }
  };
}

/** One request, as API Gateway takes it: web ACL, public paths, preflight, route, authorizer, function. */
async function serveRequest(gateway: Gateway, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const requestId = gateway.options.requestId ?? randomUUID();
  // Every answer of the gateway carries CORS headers, as the stack's gateway responses do.
  const allowedOrigins = gateway.options.corsOrigins;
  const origin = headerValue(request, 'origin');
  const answer: Answer = (type, context = {}, status) =>
    sendGatewayResponse(response, type, requestId, context, gatewayResponseCorsHeaders(origin, allowedOrigins), status);
  try {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const method = (request.method ?? 'GET').toUpperCase();
    // WAF sees the request before API Gateway does, from its line and headers alone: the body is not read.
    if (gateway.webAcl({ method, header: (name) => headerValue(request, name) })) {
      answer('WAF_FILTERED');
      return void request.resume();
    }
    const { publicRoutes } = gateway.options;
    const publicRoute = publicRoutes && Object.hasOwn(publicRoutes, url.pathname) ? publicRoutes[url.pathname] : undefined;
    if (publicRoute && method === 'GET') {
      for (const [name, value] of Object.entries(corsHeaders(origin, allowedOrigins))) response.setHeader(name, value);
      return publicRoute(request, response);
    }

    // Past the guard a body has a Content-Length within its limit, which Node holds the body to.
    const body = await readBody(request);

    const candidates = gateway.matchers.flatMap((matcher) => {
      const params = matcher.pattern.exec(url.pathname);
      return params ? [{ matcher, params }] : [];
    });
    // Preflight: a mock integration on every resource, answered without a token.
    if (method === 'OPTIONS' && candidates.length > 0) {
      const methods = candidates.map((candidate) => candidate.matcher.route.method);
      response.writeHead(204, { ...preflightHeaders(origin, allowedOrigins, methods), 'x-request-id': requestId });
      return void response.end();
    }
    const match = candidates.find((candidate) => candidate.matcher.route.method === method);
    if (!match) return answer('MISSING_AUTHENTICATION_TOKEN');
    const { route, handler } = match.matcher;

    const authorizer = await authorizeRequest(gateway, request, method, url, answer);
    if (!authorizer) return;
    const event = proxyEvent({
      request,
      url,
      method,
      route,
      pathParameters: match.params.groups ?? {},
      body,
      requestId,
      stage: gateway.stage,
      authorizer,
    });
    // Behind the guard no event reaches Lambda's limit; without it (webAcl off) Lambda refuses the
    // invocation before the function runs, and API Gateway answers as AWS does then.
    if (invocationPayloadBytes(event) > LAMBDA_MAX_INVOKE_PAYLOAD_BYTES) return sendPayloadRefused(response, requestId);
    const result = await invokeFunction(gateway, route, handler, event, answer);
    if (result) sendProxyResult(response, result, requestId);
  } catch (error) {
    // The emulator's own failure (not a handler's): API Gateway's generic 500.
    logger.error('gateway failed', { request_id: requestId, error });
    if (!response.headersSent) answer('DEFAULT_5XX');
    else response.destroy();
  }
}

type Answer = (type: GatewayResponseType, context?: Record<string, unknown>, status?: number) => void;

/**
 * The token authorizer's decision on a request: the event's
 * `requestContext.authorizer`, or undefined once the refusal is answered.
 */
async function authorizeRequest(
  gateway: Gateway,
  request: IncomingMessage,
  method: string,
  url: URL,
  answer: Answer,
): Promise<Record<string, unknown> | undefined> {
  const authorization = headerValue(request, 'authorization');
  if (!authorization || !gateway.bearer.test(authorization)) return void answer('UNAUTHORIZED');
  const methodArn = `arn:aws:execute-api:${gateway.region}:${LOCAL_ACCOUNT}:${API_ID}/${gateway.stage}/${method}${url.pathname}`;
  const decision = await gateway.authorize(authorization, methodArn);
  if (decision === 'unauthorized') return void answer('UNAUTHORIZED');
  if (decision === 'failed') return void answer('DEFAULT_5XX');
  const context = passedContext(decision);
  // API Gateway's AuthorizerConfigurationException: a 500, whatever the policy says.
  if (!context) return void answer('DEFAULT_5XX');
  if (!allows(decision, methodArn)) return void answer('ACCESS_DENIED', context);
  return { principalId: decision.principalId, ...context };
}

/** The function's result, or undefined once its failure is answered as API Gateway answers a function error. */
async function invokeFunction(
  gateway: Gateway,
  route: Route,
  handler: ProxyHandler,
  event: APIGatewayProxyEvent,
  answer: Answer,
): Promise<APIGatewayProxyResult | undefined> {
  const requestId = event.requestContext.requestId;
  let outcome: { result: APIGatewayProxyResult } | typeof TIMED_OUT;
  try {
    outcome = await withinTimeout(gateway.timeoutMs, () => handler(event, invocationTime(gateway.timeoutMs)));
  } catch (error) {
    // A function error is a 502 on API Gateway (DEFAULT_5XX keeps it); httpHandler never throws, so say so loudly.
    logger.error('handler threw', { request_id: requestId, error });
    return void answer('DEFAULT_5XX', {}, 502);
  }
  if (outcome === TIMED_OUT) {
    // Lambda stops the function and API Gateway gets a function error: the same 502. Locally the
    // handler cannot be stopped; whatever it still does is not answered (docs/deploying.md).
    logger.error(`Task timed out after ${gateway.timeoutMs} ms`, { request_id: requestId, route: route.name });
    return void answer('DEFAULT_5XX', {}, 502);
  }
  return outcome.result;
}

const TIMED_OUT = Symbol('timed out');

/** A function's answer, or TIMED_OUT when it has none after `timeoutMs` (where Lambda stops it). */
async function withinTimeout<T>(timeoutMs: number, invoke: () => Promise<T>): Promise<{ result: T } | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), timeoutMs);
  });
  try {
    // The race subscribes to the invocation: a late rejection is not an unhandled one.
    return await Promise.race([invoke().then((result) => ({ result })), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

function pathPattern(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) => (segment.startsWith('{') && segment.endsWith('}') ? `(?<${segment.slice(1, -1)}>[^/]+)` : escapeRegExp(segment)))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The authorizer's context as API Gateway hands it on: a string as is, a
 * number or boolean as its string (`1` arrives as "1"), null as null; an
 * object or array is no valid context value, and undefined when one is there.
 */
export function passedContext(decision: APIGatewayAuthorizerResult): Record<string, string | null> | undefined {
  const passed: Record<string, string | null> = {};
  for (const [key, value] of Object.entries(decision.context ?? {})) {
    if (value === undefined) continue;
    if (value === null || typeof value === 'string') passed[key] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') passed[key] = String(value);
    else return undefined;
  }
  return passed;
}

/** IAM-style match of the policy's Allow and Deny statements against the method ARN. */
function allows(decision: APIGatewayAuthorizerResult, methodArn: string): boolean {
  const statements = decision.policyDocument?.Statement ?? [];
  const matching = (effect: string) =>
    statements.some((statement) => {
      if (statement.Effect !== effect) return false;
      const resources = 'Resource' in statement ? [statement.Resource].flat() : [];
      return resources.some((resource) => wildcard(String(resource)).test(methodArn));
    });
  return !matching('Deny') && matching('Allow');
}

const wildcard = (pattern: string) => new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`);

function headerValue(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

interface EventParts {
  request: IncomingMessage;
  url: URL;
  method: string;
  route: Route;
  pathParameters: Record<string, string>;
  body: Buffer;
  requestId: string;
  stage: string;
  authorizer: Record<string, unknown>;
}

function proxyEvent(parts: EventParts): APIGatewayProxyEvent {
  const { request, url, method, route, body } = parts;
  // Client-chosen names: null-prototype maps, so `constructor` or `__proto__` are just names.
  const headers = dictionary<string>();
  const multiValueHeaders = dictionary<string[]>();
  for (const [name, value] of rawHeaderPairs(request)) {
    headers[name] = value;
    multiValueHeaders[name] = [...(multiValueHeaders[name] ?? []), value];
  }
  const query = dictionary<string>();
  const multiQuery = dictionary<string[]>();
  for (const [name, value] of url.searchParams) {
    query[name] = value;
    multiQuery[name] = [...(multiQuery[name] ?? []), value];
  }
  const contentType = ((headerValue(request, 'content-type') ?? '').split(';')[0] ?? '').trim().toLowerCase();
  const binary = BINARY_MEDIA_TYPES.includes(contentType);
  const hasBody = body.length > 0;
  const pathParameters = dictionary<string>();
  for (const [name, value] of Object.entries(parts.pathParameters)) pathParameters[name] = safeDecode(value);
  return {
    resource: route.path,
    path: url.pathname,
    httpMethod: method,
    headers,
    multiValueHeaders,
    queryStringParameters: url.searchParams.size > 0 ? query : null,
    multiValueQueryStringParameters: url.searchParams.size > 0 ? multiQuery : null,
    pathParameters: Object.keys(pathParameters).length > 0 ? pathParameters : null,
    stageVariables: null,
    body: hasBody ? body.toString(binary ? 'base64' : 'utf8') : null,
    isBase64Encoded: hasBody && binary,
    requestContext: {
      accountId: LOCAL_ACCOUNT,
      apiId: API_ID,
      authorizer: parts.authorizer,
      httpMethod: method,
      identity: callerIdentity(request.socket.remoteAddress ?? '127.0.0.1', headerValue(request, 'user-agent') ?? null),
      path: `/${parts.stage}${url.pathname}`,
      protocol: `HTTP/${request.httpVersion}`,
      requestId: parts.requestId,
      requestTimeEpoch: Date.now(),
      resourceId: route.name,
      resourcePath: route.path,
      stage: parts.stage,
    },
  };
}

/**
 * The size of the invocation payload Lambda measures: the event as JSON. The
 * body is counted without copying it into a second string (base64 has
 * nothing to escape; text is escaped as JSON.stringify does).
 */
export function invocationPayloadBytes(event: APIGatewayProxyEvent): number {
  const envelope = Buffer.byteLength(JSON.stringify({ ...event, body: null })) - 'null'.length;
  if (event.body === null) return envelope + 'null'.length;
  const body = event.isBase64Encoded ? event.body.length + 2 : Buffer.byteLength(JSON.stringify(event.body));
  return envelope + body;
}

const safeDecode = (value: string) => {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
};

/** The caller identity of a request authorized by a Lambda authorizer: only the source and user agent are known. */
export function callerIdentity(sourceIp: string, userAgent: string | null): APIGatewayProxyEvent['requestContext']['identity'] {
  return {
    accessKey: null,
    accountId: null,
    apiKey: null,
    apiKeyId: null,
    caller: null,
    clientCert: null,
    cognitoAuthenticationProvider: null,
    cognitoAuthenticationType: null,
    cognitoIdentityId: null,
    cognitoIdentityPoolId: null,
    principalOrgId: null,
    sourceIp,
    user: null,
    userAgent,
    userArn: null,
  };
}

/** The request id header API Gateway adds to every answer, its own and the functions'. */
const AMZN_REQUEST_ID = 'x-amzn-requestid';

function sendProxyResult(response: ServerResponse, result: APIGatewayProxyResult, requestId: string): void {
  const headers: Record<string, string | string[]> = { [AMZN_REQUEST_ID]: requestId };
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name.toLowerCase()] = String(value);
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {})) {
    headers[name.toLowerCase()] = values.map(String);
  }
  const body = Buffer.from(result.body ?? '', result.isBase64Encoded ? 'base64' : 'utf8');
  response.writeHead(result.statusCode, { ...headers, 'content-length': body.length });
  response.end(body);
}

/**
 * API Gateway's answer when Lambda refuses the invocation for its size. AWS's
 * Lambda guide says a refused invocation is a 500; REST APIs with Lambda proxy
 * integrations have been seen answering this instead (occasionally a 500
 * `{"message": "Internal server error"}`), see docs/deploying.md. It is
 * API Gateway's own default, not a gateway response we can shape.
 */
function sendPayloadRefused(response: ServerResponse, requestId: string): void {
  const body = JSON.stringify({ message: 'Request Too Long' });
  response.writeHead(413, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-amzn-errortype': 'BadRequestException',
    [AMZN_REQUEST_ID]: requestId,
  });
  response.end(body);
}

export function sendGatewayResponse(
  response: ServerResponse,
  type: GatewayResponseType,
  requestId: string,
  authorizerContext: Record<string, unknown> = {},
  extraHeaders: Record<string, string> = {},
  /** The status of the error a keepsGatewayStatus response stands for (e.g. 502 for a function error). */
  status?: number,
): void {
  const definition = gatewayResponses[type];
  if (status !== undefined && !definition.keepsGatewayStatus) throw new Error(`${type} always answers ${definition.status}`);
  const resolve = (value: string | { authorizerContext: string }) =>
    typeof value === 'string' ? value : String(authorizerContext[value.authorizerContext] ?? '');
  const error = {
    type: definition.type,
    code: resolve(definition.code),
    message: resolve(definition.message),
  } as Pick<ApiError, 'type' | 'code' | 'message' | 'param'>;
  const body = JSON.stringify(errorBody(error, requestId));
  response.writeHead(status ?? definition.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    // As the stack's gateway responses: the id in the body and in API Gateway's own header, no x-request-id.
    [AMZN_REQUEST_ID]: requestId,
    ...(definition.status === 401 ? authenticationChallenge : {}),
    ...extraHeaders,
  });
  response.end(body);
}

/**
 * Node's HTTP parser refuses some requests before any listener sees them (a
 * header section over its limit, bytes a request line or header may not
 * hold, Content-Length together with Transfer-Encoding). Node would answer
 * a bare 400/431 with no body; this answers in the error shape of the
 * gateway responses (DEFAULT_4XX, with Node's status), the id in the body and in x-amzn-requestid.
 * On AWS such requests stop at API Gateway's front end, whose answers are
 * its own and not the stack's gateway responses (docs say what differs).
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const requestId = randomUUID();
  const { type, code } = gatewayResponses.DEFAULT_4XX;
  const message =
    status === 431
      ? 'The request headers are too large'
      : status === 408
        ? 'The request did not arrive in time'
        : 'The request is not valid HTTP';
  // DEFAULT_4XX's code is a fixed string (only ACCESS_DENIED reads the authorizer's context).
  const body = JSON.stringify(errorBody({ type, code: code as string, message }, requestId));
  socket.end(
    [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      'content-type: application/json; charset=utf-8',
      `content-length: ${Buffer.byteLength(body)}`,
      `${AMZN_REQUEST_ID}: ${requestId}`,
      'connection: close',
      '',
      body,
    ].join('\r\n'),
  );
}
