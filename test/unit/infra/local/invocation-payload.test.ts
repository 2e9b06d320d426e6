import type { APIGatewayProxyEvent } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callerIdentity, invocationPayloadBytes } from '../../../../infra/local/gateway.js';

// Lambda measures an invocation by its JSON; the emulator counts it without a second copy of the body.
const event = (body: string | null, isBase64Encoded: boolean, headers: Record<string, string>): APIGatewayProxyEvent => ({
  resource: '/v1/attachments',
  path: '/v1/attachments',
  httpMethod: 'POST',
  headers,
  multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
  queryStringParameters: null,
  multiValueQueryStringParameters: null,
  pathParameters: null,
  stageVariables: null,
  body,
  isBase64Encoded,
  requestContext: {
    accountId: '000000000000',
    apiId: 'localapi',
    authorizer: { principalId: 'üser "1"' },
    httpMethod: 'POST',
    identity: callerIdentity('127.0.0.1', 'agent\u0000'),
    path: '/local/v1/attachments',
    protocol: 'HTTP/1.1',
    requestId: 'r',
    requestTimeEpoch: 1,
    resourceId: 'UploadAttachment',
    resourcePath: '/v1/attachments',
    stage: 'local',
  },
});
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
const headers = fc.dictionary(fc.string({ unit: 'grapheme', minLength: 1 }), fc.string({ unit: 'binary' }), { maxKeys: 5 });

describe('the invocation payload size', () => {
  it('is the byte length of the event as JSON, for any text body and headers (escapes, emoji, lone surrogates)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), headers, (body, extra) => {
        const text = event(body, false, extra);
        expect(invocationPayloadBytes(text)).toBe(jsonBytes(text));
      }),
    );
  });

  it('is the byte length of the event as JSON, for any binary body as base64', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), headers, (bytes, extra) => {
        const binary = event(Buffer.from(bytes).toString('base64'), true, extra);
        expect(invocationPayloadBytes(binary)).toBe(jsonBytes(binary));
      }),
    );
  });

  it('counts an absent body as null', () => {
    const empty = event(null, false, {});
    expect(invocationPayloadBytes(empty)).toBe(jsonBytes(empty));
  });
});
