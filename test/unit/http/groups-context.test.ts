import type { APIGatewayProxyEvent } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handler as authorizer } from '../../../functions/authorizer.js';
import { handler as createConversation } from '../../../functions/conversations/create.js';
import { LAMBDA_MAX_INVOKE_PAYLOAD_BYTES } from '../../../infra/declarations/gateway-settings.js';
import { REQUEST_HEAD_MAX_BYTES } from '../../../infra/declarations/size-guard.js';
import { passedContext } from '../../../infra/local/gateway.js';
import { Composition } from '../../../shared/app.js';
import { encodeGroups, groupsOfClaim, MAX_GROUPS } from '../../../shared/auth/groups.js';
import { allowPolicy } from '../../../shared/auth/policy.js';
import { signToken } from '../../../shared/auth/tokens.js';
import { readConfig } from '../../../shared/config.js';
import { AuthorizerContextInvalid, callerOf, groupsOf } from '../../../shared/http/request.js';

const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/conversations';
const eventWith = (authorizer: Record<string, unknown>) =>
  ({ requestContext: { requestId: 'r', authorizer } }) as unknown as APIGatewayProxyEvent;

describe('the groups in the request context', () => {
  it('are read as the authorizer encoded them', () => {
    expect(groupsOf(eventWith({ principalId: 'u', groups: '["team","family"]' }))).toEqual(new Set(['team', 'family']));
    expect(groupsOf(eventWith({ principalId: 'u', groups: '[]' }))).toEqual(new Set());
  });

  it.each([
    ['absent', {}],
    ['not JSON', { groups: 'team' }],
    ['not an array', { groups: '{}' }],
    ['an invalid id', { groups: '["a b"]' }],
    ['JSON null', { groups: 'null' }],
  ])('fail closed when %s: never "no groups" in their place', (_, context) => {
    expect(() => groupsOf(eventWith({ principalId: 'u', ...context }))).toThrow(AuthorizerContextInvalid);
  });

  it("are the caller's, read when first asked for: a broken context fails what needs them, not the caller's id", () => {
    const caller = callerOf(eventWith({ principalId: 'u', groups: 'team' }), 'u');
    expect(caller).toMatchObject({ userId: 'u', requestId: 'r' });
    expect(() => caller.groups).toThrow(AuthorizerContextInvalid);
    const member = callerOf(eventWith({ principalId: 'u', groups: '["team"]' }), 'u');
    expect(member.groups).toEqual(new Set(['team']));
    expect(member.groups).toBe(member.groups);
  });

  it('answer 500 internal_error through a function when the context is broken, before anything is read or written', async () => {
    // No DynamoDB behind this Composition: a function that got as far as its store would fail differently (503).
    const composition = new Composition({ ...readConfig({}), dynamodbEndpoint: 'http://127.0.0.1:9' });
    const event = {
      resource: '/v1/conversations',
      httpMethod: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ group_id: 'team' }),
      isBase64Encoded: false,
      requestContext: { requestId: 'broken-context', authorizer: { principalId: 'u', userId: 'u' } },
    } as unknown as APIGatewayProxyEvent;
    const result = await createConversation.withComposition(composition)(event);
    composition.destroy();
    expect(result.statusCode).toBe(500);
    expect(JSON.parse(result.body).error).toMatchObject({ type: 'api_error', code: 'internal_error' });
  });
});

describe('the gateway emulator passes the context as API Gateway does', () => {
  const decision = (context: Record<string, unknown>) =>
    ({ principalId: 'u', policyDocument: { Version: '2012-10-17', Statement: [] }, context }) as never;

  it('strings as they are, numbers and booleans stringified, null kept', () => {
    expect(passedContext(decision({ s: 'x', n: 1, b: true, z: null, gone: undefined }))).toEqual({ s: 'x', n: '1', b: 'true', z: null });
  });

  it('refuses an object or array value (AuthorizerConfigurationException): the groups must be encoded', () => {
    expect(passedContext(decision({ groups: ['team'] }))).toBeUndefined();
    expect(passedContext(decision({ groups: { team: true } }))).toBeUndefined();
  });
});

describe('the size of the groups in the context', () => {
  it('is never more than the claim the token carried: the same escapes, duplicates folded', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }), fc.constantFrom('"', '\\', '"\\"', '\u{1F600}', 'é')),
          { maxLength: MAX_GROUPS },
        ),
        (claim) => {
          const read = groupsOfClaim(claim);
          if ('refused' in read) return;
          expect(Buffer.byteLength(encodeGroups(read.groups))).toBeLessThanOrEqual(Buffer.byteLength(JSON.stringify(claim)));
        },
      ),
    );
  });

  it(`fits a Lambda response with ${MAX_GROUPS} groups of the longest id (128 four-byte characters): the only limit API Gateway documents for a REST API's authorizer result`, () => {
    const groups = new Set(
      Array.from(
        { length: MAX_GROUPS },
        (_, i) =>
          `${String.fromCodePoint(0x1f600 + (i % 64))}${'\u{1F600}'.repeat(126)}${String.fromCodePoint(0x1f300 + Math.floor(i / 64))}`,
      ),
    );
    expect([...groups].every((id) => [...id].length === 128)).toBe(true);
    const result = allowPolicy({ userId: '\u{1F600}'.repeat(32), groups }, METHOD_ARN);
    const bytes = Buffer.byteLength(JSON.stringify(result));
    expect(bytes).toBeGreaterThan(MAX_GROUPS * 128 * 4);
    expect(bytes).toBeLessThan(LAMBDA_MAX_INVOKE_PAYLOAD_BYTES / 40);
  });

  it(`costs the proxy event at most 1.5 bytes per byte of the token, which travels in API Gateway's ${REQUEST_HEAD_MAX_BYTES}-byte request head`, async () => {
    const secret = 'size-test-secret';
    const env = { AUTH_SECRET: secret };
    // The costliest ids: every character escaped once in the claim and twice in the event (`"` → `\"` → `\\\"`).
    for (const id of ['"', '\\', '"\\', 'g', '\u{1F600}', 'é']) {
      const groups = Array.from({ length: MAX_GROUPS }, (_, i) => `${id.repeat(Math.min(24, 128 - String(i).length))}${i}`.slice(0, 128));
      const token = await signToken(secret, 'member', { groups });
      const result = await authorizer.withConfig(readConfig(env))({
        type: 'TOKEN',
        authorizationToken: `Bearer ${token}`,
        methodArn: METHOD_ARN,
      });
      const context = passedContext(result)!;
      const inEvent = Buffer.byteLength(JSON.stringify(context.groups));
      expect(inEvent, id).toBeLessThanOrEqual(1.5 * token.length + 2);
    }
    // So a token that fits the head quota adds at most this to the event, within the 26 bytes per head
    // byte that the size guard's EVENT_ENVELOPE_MAX_BYTES reserves (headers and multiValueHeaders hold it twice more).
    expect(1.5 * REQUEST_HEAD_MAX_BYTES + 2 + 2 * REQUEST_HEAD_MAX_BYTES).toBeLessThan(26 * REQUEST_HEAD_MAX_BYTES);
  });
});
