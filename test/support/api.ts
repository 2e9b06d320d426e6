import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { type LocalApi, type LocalApiOptions, startLocalApi } from '../../infra/local/server.js';
import { encode, read } from '../../infra/smoke/client.js';
import { signToken } from '../../shared/auth/tokens.js';
import { recordGrantsIn } from './grants-used.js';
import { OpenApiContract } from './openapi-contract.js';
import { workerDynamodb } from './workers.js';

/** One per test process: compiling the document's schemas once. */
let contract: OpenApiContract | undefined;

/**
 * A client of the local server for behaviour tests: real HTTP on loopback to
 * the gateway emulator, the real handlers, the run's DynamoDB Local and an S3 stand-in.
 */
export interface TestApi {
  api: LocalApi;
  url: string;
  /** A token of `userId`; `groups` puts the groups claim in it (absent: no claim, no groups). */
  token(userId: string, claims?: TestTokenClaims): Promise<string>;
  /** A request as `userId` (or with no token when userId is null). */
  call(userId: string | null, method: string, path: string, init?: CallInit): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface CallInit {
  form?: Record<string, string>;
  json?: unknown;
  body?: RequestInit['body'];
  headers?: Record<string, string>;
  /** The groups the call's token lists (the claim is left out when not given). */
  groups?: readonly string[];
  /** Fails the call (AbortError) when no answer came within this many milliseconds: a hang is a failure. */
  timeoutMs?: number;
}

/** JSON a test reads (an answer's body, a template, a log line): its shape is what the test asserts, so it is read by key unchecked. */
// biome-ignore lint/suspicious/noExplicitAny: parsed JSON, read by key after (or in) the test's own assertions on its shape
export type Json = any;

export interface TestResponse {
  status: number;
  headers: Headers;
  body: Json;
  text: string;
}

export interface TestTokenClaims {
  ttlSeconds?: number;
  groups?: readonly string[];
}

/**
 * DynamoDB deletes expired items within days and until then returns them: the tests' servers delete them an
 * hour late, past any test, so every read that relies on expiry must leave them out itself. A test of what
 * the deletion then does (its REMOVE on the stream) asks for 0 and says why.
 */
export const TEST_TIME_TO_LIVE_DELAY_MS = 3_600_000;

export async function startTestApi(options: LocalApiOptions = {}): Promise<TestApi> {
  const api = await startLocalApi({
    port: 0,
    sharedDynamodb: sharedDynamodb(),
    grantUsed: recordGrantsIn(inject('grantsDirectory')),
    timeToLiveDelayMs: TEST_TIME_TO_LIVE_DELAY_MS,
    ...options,
  });
  const tokens = new Map<string, string>();
  const { groupsClaim } = api;
  const token = async (userId: string, { ttlSeconds = 3600, groups }: TestTokenClaims = {}) => {
    if (ttlSeconds !== 3600) return signToken(api.authSecret, userId, { ttlSeconds, groups, groupsClaim });
    // One token per user and groups: the gateway's authorizer cache then answers most calls, as on AWS.
    const key = JSON.stringify([userId, groups ?? null]);
    if (!tokens.has(key)) tokens.set(key, await signToken(api.authSecret, userId, { groups, groupsClaim }));
    return tokens.get(key)!;
  };
  return {
    api,
    url: api.url,
    token,
    call: apiCaller(api.url, token),
    close: () => api.close(),
  };
}

/**
 * Requests to an API at `url` with tokens from `token`; every response is
 * checked against the OpenAPI document before the test sees it.
 */
export function apiCaller(url: string, token: (userId: string, claims?: TestTokenClaims) => Promise<string>): TestApi['call'] {
  return async (userId, method, path, init = {}) => {
    const signal = init.timeoutMs === undefined ? undefined : AbortSignal.timeout(init.timeoutMs);
    const request = encode(userId === null ? null : await token(userId, init.groups ? { groups: init.groups } : {}), init);
    const received = await read(await fetch(`${url}${path}`, { method, ...request, ...(signal ? { signal } : {}) }));
    // Every response a test receives must be one the OpenAPI document describes.
    contract ??= new OpenApiContract();
    const problems = contract.check(method, path, received);
    if (problems.length > 0) throw new Error(`Response does not match docs/openapi.yaml:\n- ${problems.join('\n- ')}`);
    return received;
  };
}

/** This worker's DynamoDB Local (test/support/global-setup.ts). */
export const runDynamodb = (): string => workerDynamodb(inject('dynamodbEndpoints'));

/** This worker's DynamoDB Local, under table names no other server uses. */
export function sharedDynamodb(): { endpoint: string; tablePrefix: string } {
  return { endpoint: runDynamodb(), tablePrefix: `t${randomBytes(6).toString('hex')}_` };
}
