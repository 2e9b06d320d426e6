import type { APIGatewayProxyEvent } from 'aws-lambda';
import { decodeGroups, GROUPS_CONTEXT_KEY, type Groups } from '../auth/groups.js';
import type { Caller } from '../caller.js';
import { dictionary } from './dictionary.js';
import { bodyInvalid, parameterInvalid, resourceMissing, unsupportedMediaType } from './errors.js';
import type { ParamSource } from './params.js';

/** What a handler needs from an API Gateway REST proxy event, already checked. */
export interface ApiRequest {
  event: APIGatewayProxyEvent;
  /** Who calls, as the authorizer put it in the request context. Never from headers or body. */
  caller: Caller;
  headers: Record<string, string>;
}

export function requestIdOf(event: APIGatewayProxyEvent): string {
  return event.requestContext?.requestId ?? 'unknown';
}

export function lowerCaseHeaders(event: APIGatewayProxyEvent): Record<string, string> {
  const headers = dictionary<string>();
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  return headers;
}

export function userIdOf(event: APIGatewayProxyEvent): string | undefined {
  const authorizer = event.requestContext?.authorizer as Record<string, unknown> | null | undefined;
  const principal = authorizer?.principalId;
  return typeof principal === 'string' && principal !== '' ? principal : undefined;
}

/**
 * The groups the token lists, as the authorizer put them in the request
 * context (shared/auth/policy.ts), never from headers or body. Our authorizer
 * always sets them, so a context without them, or with anything else, means
 * the authorizer and the functions disagree: a 500 (our fault, logged and
 * alarmed on like any 5xx), not a 401 that would send the client to fetch a
 * new token that cannot help, and never "no groups" guessed in its place.
 */
export function groupsOf(event: APIGatewayProxyEvent): Groups {
  const authorizer = event.requestContext?.authorizer as Record<string, unknown> | null | undefined;
  const groups = decodeGroups(authorizer?.[GROUPS_CONTEXT_KEY]);
  if (!groups) throw new AuthorizerContextInvalid(`The authorizer context has no valid ${GROUPS_CONTEXT_KEY}`);
  return groups;
}

/**
 * The caller of a request the authorizer let through as `userId`. Its groups
 * are read (groupsOf) when first asked for, once: a request that never asks
 * does not depend on them.
 */
export function callerOf(event: APIGatewayProxyEvent, userId: string): Caller {
  let groups: Groups | undefined;
  return {
    userId,
    requestId: requestIdOf(event),
    get groups() {
      groups ??= groupsOf(event);
      return groups;
    },
  };
}

/** Not an ApiError: the handler answers it as any internal failure (500 internal_error) and logs this message. */
export class AuthorizerContextInvalid extends Error {
  override name = 'AuthorizerContextInvalid';
}

/** Query parameters; a name given twice is refused rather than silently picking one. */
export function queryOf(event: APIGatewayProxyEvent): ParamSource {
  const multi = event.multiValueQueryStringParameters ?? {};
  const values = dictionary<unknown>();
  for (const [name, list] of Object.entries(multi)) {
    if (!list) continue;
    if (list.length > 1) throw parameterInvalid(name, `${name} was given more than once`);
    values[name] = list[0];
  }
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
    if (!Object.hasOwn(values, name) && value !== undefined) values[name] = value;
  }
  return { kind: 'query', values };
}

/** A path id that does not have the shape of ours is simply not found. */
export function pathId(request: ApiRequest, resource: string, isValid: (id: string) => boolean): string {
  const id = request.event.pathParameters?.id ?? '';
  if (!isValid(id)) throw resourceMissing(resource, id);
  return id;
}

export function mediaTypeOf(request: ApiRequest): string {
  return ((request.headers['content-type'] ?? '').split(';')[0] ?? '').trim().toLowerCase();
}

export function rawBody(request: ApiRequest): Buffer {
  const { body, isBase64Encoded } = request.event;
  if (body === null || body === undefined) return Buffer.alloc(0);
  return isBase64Encoded ? fromBase64(body) : Buffer.from(body, 'utf8');
}

// A multiple of 4 characters: every slice decodes on its own.
const BASE64_SLICE = 256 * 1024;

/**
 * Base64 decoded a slice at a time into one buffer. Buffer.from(text,
 * 'base64') first copies the whole text flat, 1.33 × the file more at the
 * upload's peak memory (measured by `npm run bench`). Text that is not plain
 * base64 (whitespace, stray characters) decodes to fewer bytes than its
 * length implies, and then goes the whole-string way, which skips them.
 */
function fromBase64(text: string): Buffer {
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const expected = Math.floor((text.length * 3) / 4) - padding;
  const bytes = Buffer.allocUnsafe(Math.max(0, expected));
  let written = 0;
  for (let start = 0; start < text.length && written < bytes.length; start += BASE64_SLICE) {
    written += bytes.write(text.slice(start, start + BASE64_SLICE), written, 'base64');
  }
  return written === expected && text.length % 4 === 0 ? bytes : Buffer.from(text, 'base64');
}

const BODY_TYPES = ['application/x-www-form-urlencoded', 'application/json'] as const;

/**
 * The body of a POST or PUT other than the upload: form-encoded or JSON. An
 * absent body is an empty set of parameters.
 */
export function formOrJsonBody(request: ApiRequest): ParamSource {
  const bytes = rawBody(request);
  const mediaType = mediaTypeOf(request);
  if (bytes.length === 0 && mediaType === '') return { kind: 'form', values: dictionary() };
  if (mediaType === 'application/json') return { kind: 'json', values: parseJsonObject(bytes) };
  if (mediaType === 'application/x-www-form-urlencoded') return { kind: 'form', values: parseForm(bytes) };
  throw unsupportedMediaType(mediaType, BODY_TYPES);
}

function parseJsonObject(bytes: Buffer): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw bodyInvalid('Request body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw bodyInvalid('Request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

function parseForm(bytes: Buffer): Record<string, unknown> {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw bodyInvalid('Request body is not valid UTF-8');
  }
  // URLSearchParams replaces bad percent-escapes silently; refuse them instead.
  if (/%(?![0-9a-fA-F]{2})/.test(text)) throw bodyInvalid('Request body is not valid form encoding');
  const values = dictionary<unknown>();
  for (const [name, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(values, name)) throw parameterInvalid(name, `${name} was given more than once`);
    values[name] = value;
  }
  return values;
}
