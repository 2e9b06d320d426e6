import { BINARY_MEDIA_TYPES, GATEWAY_MAX_BODY_BYTES, LAMBDA_MAX_INVOKE_PAYLOAD_BYTES } from './gateway-settings.js';

/**
 * The size guard: which requests are refused before API Gateway builds a
 * Lambda event, so that no request can make an event Lambda refuses (docs/api.md,
 * "Sizes and limits": every oversized body is 413 in the error shape, never a 5xx).
 * On AWS it is a WAF web ACL on the stage (infra/stack/constructs/size-guard.ts,
 * rendered from these rules); the local emulator evaluates the same rules
 * before it reads the body (infra/local/gateway.ts). Both answer with the
 * WAF_FILTERED gateway response (infra/declarations/gateway-responses.ts).
 *
 * WAF sees the request line and headers, not the body's length, so the guard
 * trusts Content-Length (API Gateway and Node both refuse a body that does
 * not match it) and refuses requests that do not declare one.
 */

/**
 * API Gateway REST quota "Total combined size of request line and header
 * values": 10,240 bytes (API Gateway developer guide, "Quotas for configuring
 * and running a REST API"). The quota names header values; we take it as the
 * whole head (names included), which is what a client controls besides the body.
 */
export const REQUEST_HEAD_MAX_BYTES = 10_240;

/**
 * The largest proxy event around the body, from the head. A byte of the head
 * lands in the event at most 26 bytes:
 * - a header name or value appears in `headers` and `multiValueHeaders`
 *   (2 copies), each JSON-escaped at worst 6 bytes per byte (`\u0000`): 12;
 *   `User-Agent` and `Host` once more in requestContext (identity.userAgent,
 *   domainName): 18;
 * - every header adds at most 14 bytes of JSON punctuation (`"":"",` and
 *   `"":[""],`) and has a name of at least one byte: 14 more per name byte;
 * - the path appears in `path`, `requestContext.path` and, decoded, in
 *   `pathParameters` (3 × 6 = 18); a query parameter in
 *   `queryStringParameters` and `multiValueQueryStringParameters` (2 × 6)
 *   plus 14 bytes of punctuation for a parameter of at least one byte: 26.
 * So 26 per head byte bounds every case. The rest does not depend on the
 * client and fits 16 KiB with room: the keys, `resource` / `resourcePath`
 * (our route templates), requestContext's ids, times, stage and identity,
 * the headers API Gateway adds (X-Forwarded-*, X-Amzn-Trace-Id), and the
 * authorizer context (principalId and userId, each a user id of at most
 * MAX_USER_ID_BYTES, shared/dynamo/keys.ts). Its `groups` come from the
 * token, a header: at most 1.5 event bytes per token byte, within the 26 per
 * head byte above (test/unit/http/groups-context.test.ts).
 */
export const EVENT_ENVELOPE_MAX_BYTES = REQUEST_HEAD_MAX_BYTES * 26 + 16 * 1024;

/** What is left of Lambda's 6,291,456 bytes for the body's JSON string, its two quotes excepted. */
const BODY_ROOM = LAMBDA_MAX_INVOKE_PAYLOAD_BYTES - EVENT_ENVELOPE_MAX_BYTES - 2;

/**
 * A body of a binary media type is base64 in the event: 4 bytes per 3, so
 * whole groups of 3 bytes fit in BODY_ROOM (4,506,621 bytes).
 */
export const MAX_BINARY_BODY_BYTES = Math.min(GATEWAY_MAX_BODY_BYTES, Math.floor(BODY_ROOM / 4) * 3);

/**
 * Any other body is a JSON string in the event: at worst 6 bytes per byte
 * (a control character is `\u0000`; a byte that is not UTF-8 becomes U+FFFD,
 * `\ufffd`; a 2- to 4-byte UTF-8 character at most 12 bytes): 1,001,471 bytes.
 */
export const MAX_TEXT_BODY_BYTES = Math.min(GATEWAY_MAX_BODY_BYTES, Math.floor(BODY_ROOM / 6));

/**
 * A condition on what WAF can see of a request, and what the emulator
 * evaluates the same way. Header names are lower case. A header that is
 * absent or empty never matches (WAF: a size constraint `> 0` is how AWS's
 * own examples test that a header is there).
 */
export type Condition =
  | { header: string; matches: string }
  | { header: string; present: true }
  | { method: string }
  | { not: Condition }
  | { all: Condition[] }
  | { any: Condition[] };

export interface GuardRule {
  /** Names the WAF rule and its metric. */
  name: string;
  condition: Condition;
}

/**
 * The media types API Gateway base64-encodes (BINARY_MEDIA_TYPES), exactly
 * as written: parameters may follow. Compared without case folding: a
 * client that writes `Multipart/Form-Data` is held to the smaller text
 * limit, which is safe whether or not API Gateway folds case.
 */
export const BINARY_CONTENT_TYPE_PATTERN = `^(?:${BINARY_MEDIA_TYPES.map(literalMediaType).join('|')})(?:[ \\t;].*)?$`;

const binaryBody: Condition = { header: 'content-type', matches: BINARY_CONTENT_TYPE_PATTERN };
const declaredLength: Condition = { header: 'content-length', present: true };
const lengthAtMost = (limit: number): Condition => ({ header: 'content-length', matches: decimalAtMost(limit) });

export const sizeGuardRules: readonly GuardRule[] = [
  { name: 'BinaryBodyTooLarge', condition: { all: [binaryBody, declaredLength, { not: lengthAtMost(MAX_BINARY_BODY_BYTES) }] } },
  { name: 'TextBodyTooLarge', condition: { all: [{ not: binaryBody }, declaredLength, { not: lengthAtMost(MAX_TEXT_BODY_BYTES) }] } },
  {
    // A chunked body (or an HTTP/2 body without Content-Length) has no size WAF can compare. The two
    // methods that carry bodies must declare it; Transfer-Encoding is refused on any method.
    name: 'BodyLengthUndeclared',
    condition: { any: [{ header: 'transfer-encoding', present: true }, { all: [{ method: '^(?:POST|PUT)$' }, { not: declaredLength }] }] },
  },
];

export interface GuardedRequest {
  method: string;
  /** The header's value as received, undefined when absent. */
  header(name: string): string | undefined;
}

/** The rule that refuses this request, or undefined when it may pass. */
export function refusingRule(request: GuardedRequest): GuardRule | undefined {
  return sizeGuardRules.find((rule) => holds(rule.condition, request));
}

function holds(condition: Condition, request: GuardedRequest): boolean {
  if ('all' in condition) return condition.all.every((part) => holds(part, request));
  if ('any' in condition) return condition.any.some((part) => holds(part, request));
  if ('not' in condition) return !holds(condition.not, request);
  if ('method' in condition) return pattern(condition.method).test(request.method);
  const value = request.header(condition.header);
  if (value === undefined || value.length === 0) return false;
  return 'present' in condition || pattern(condition.matches).test(value);
}

/** The rules' patterns, compiled once (the emulator checks every request against them). */
const compiled = new Map<string, RegExp>();
function pattern(source: string): RegExp {
  const known = compiled.get(source);
  if (known) return known;
  const regex = new RegExp(source);
  compiled.set(source, regex);
  return regex;
}

/**
 * A regular expression (WAF's PCRE subset and JavaScript alike) that matches
 * a decimal number at most `limit`: leading zeros and surrounding blanks
 * allowed, nothing else. The guard refuses a Content-Length it does not
 * match, so a value that is not a plain number fails closed. WAF has no
 * numeric comparison on a header, hence digits: every number with fewer
 * digits, then for each position the numbers that share the limit's
 * prefix and have a smaller digit there, then the limit itself.
 */
export function decimalAtMost(limit: number): string {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new Error(`decimalAtMost needs a non-negative integer, not ${limit}`);
  const digits = String(limit);
  const alternatives: string[] = [];
  if (digits.length > 1) alternatives.push(`[0-9]{1,${digits.length - 1}}`);
  for (let i = 0; i < digits.length; i++) {
    const digit = Number(digits[i]);
    const lowest = i === 0 && digits.length > 1 ? 1 : 0;
    if (digit <= lowest) continue;
    const smaller = digit - 1 === lowest ? String(lowest) : `[${lowest}-${digit - 1}]`;
    const rest = digits.length - i - 1;
    alternatives.push(`${digits.slice(0, i)}${smaller}${rest > 1 ? `[0-9]{${rest}}` : rest === 1 ? '[0-9]' : ''}`);
  }
  alternatives.push(digits);
  return `^[ \\t]*0*(?:${alternatives.join('|')})[ \\t]*$`;
}

function literalMediaType(type: string): string {
  if (type.includes('*')) throw new Error(`The size guard matches exact binary media types, not the wildcard ${type}`);
  return type.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
