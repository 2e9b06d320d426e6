import type { APIGatewayProxyEvent } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BINARY_MEDIA_TYPES,
  GATEWAY_MAX_BODY_BYTES,
  LAMBDA_MAX_INVOKE_PAYLOAD_BYTES,
} from '../../../../infra/declarations/gateway-settings.js';
import {
  decimalAtMost,
  EVENT_ENVELOPE_MAX_BYTES,
  MAX_BINARY_BODY_BYTES,
  MAX_TEXT_BODY_BYTES,
  REQUEST_HEAD_MAX_BYTES,
  refusingRule,
} from '../../../../infra/declarations/size-guard.js';
import { callerIdentity, invocationPayloadBytes } from '../../../../infra/local/gateway.js';
import { parseMultipart } from '../../../../shared/attachments/multipart.js';
import { uploadLimits } from '../../../../shared/attachments/upload-params.js';
import { DEFAULT_MAX_FILE_BYTES } from '../../../../shared/config.js';
import { MAX_FILENAME_BYTES } from '../../../../shared/files/filename.js';
import { readParams } from '../../../../shared/http/params.js';
import { completeParams } from '../../../../shared/uploads/params.js';
import { S3_MAX_PARTS } from '../../../../shared/uploads/part-plan.js';

const request = (method: string, headers: Record<string, string>) => ({ method, header: (name: string) => headers[name] });
const decimal = fc
  .tuple(fc.nat({ max: 30 }), fc.bigInt({ min: 0n, max: 10n ** 40n }))
  .map(([zeros, value]) => '0'.repeat(zeros) + value.toString());
const blanks = fc.constantFrom('', ' ', '\t', '  ');

describe('decimalAtMost', () => {
  it('matches a decimal string iff its value is at most the limit, with leading zeros, blanks around and absurd lengths', () => {
    fc.assert(
      fc.property(fc.oneof(fc.maxSafeNat(), fc.nat({ max: 10_000_000 })), decimal, blanks, blanks, (limit, digits, before, after) => {
        expect(new RegExp(decimalAtMost(limit)).test(before + digits + after)).toBe(BigInt(digits) <= BigInt(limit));
      }),
      { numRuns: 2000 },
    );
  });

  it('draws the line exactly at the limit, for every limit up to 10,000 and around the guard limits', () => {
    const limits = [...Array.from({ length: 10_001 }, (_, i) => i), MAX_BINARY_BODY_BYTES, MAX_TEXT_BODY_BYTES, GATEWAY_MAX_BODY_BYTES];
    for (const limit of limits) {
      const pattern = new RegExp(decimalAtMost(limit));
      expect(pattern.test(String(limit))).toBe(true);
      expect(pattern.test(String(limit + 1))).toBe(false);
      if (limit > 0) expect(pattern.test(String(limit - 1))).toBe(true);
    }
  });

  it('matches nothing that is not a plain decimal number (signs, exponents, lists, hex, empty), so such a Content-Length fails closed', () => {
    const pattern = new RegExp(decimalAtMost(MAX_TEXT_BODY_BYTES));
    for (const value of ['', ' ', '-1', '+1', '1e3', '0x10', '5, 5', '5,5', '1.0', '١٢', '1 2']) expect(pattern.test(value)).toBe(false);
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }).filter((text) => !/^[ \t]*[0-9]+[ \t]*$/.test(text)),
        (text) => {
          expect(pattern.test(text)).toBe(false);
        },
      ),
    );
  });

  it('stays within the 200 characters WAF takes for any limit of up to 8 digits (API Gateway’s 10 MB has 8)', () => {
    expect(String(GATEWAY_MAX_BODY_BYTES)).toHaveLength(8);
    fc.assert(
      fc.property(fc.nat({ max: 99_999_999 }), (limit) => {
        expect(decimalAtMost(limit).length).toBeLessThanOrEqual(200);
      }),
    );
  });
});

describe('the guard limits', () => {
  it('are derived from Lambda’s 6,291,456 bytes: 4,506,621 bytes of binary body and 1,001,471 of text', () => {
    expect(EVENT_ENVELOPE_MAX_BYTES).toBe(REQUEST_HEAD_MAX_BYTES * 26 + 16_384);
    expect(MAX_BINARY_BODY_BYTES).toBe(4_506_621);
    expect(MAX_TEXT_BODY_BYTES).toBe(1_001_471);
    // The body's share of the event: base64 (4 per 3) or escaped text (at most 6 per byte), with its quotes.
    expect(Buffer.from(new Uint8Array(MAX_BINARY_BODY_BYTES)).toString('base64').length + 2 + EVENT_ENVELOPE_MAX_BYTES).toBeLessThanOrEqual(
      LAMBDA_MAX_INVOKE_PAYLOAD_BYTES,
    );
    expect(MAX_TEXT_BODY_BYTES * 6 + 2 + EVENT_ENVELOPE_MAX_BYTES).toBeLessThanOrEqual(LAMBDA_MAX_INVOKE_PAYLOAD_BYTES);
  });

  it('keep a worst-case event under Lambda’s limit: 10,240 bytes of head all escaped six-fold, in every place the event repeats it', () => {
    // A head made of the most expensive bytes: one-byte header names and values that JSON escapes as \u0001.
    const headers: Record<string, string> = {};
    for (let i = 0; Object.keys(headers).length * 4 < REQUEST_HEAD_MAX_BYTES / 2; i++) headers[String.fromCharCode(0x100 + i)] = '\u0001';
    const query = Object.fromEntries(
      Array.from({ length: REQUEST_HEAD_MAX_BYTES / 8 }, (_, i) => [String.fromCharCode(0x100 + i), '\u0001']),
    );
    const path = `/v1/attachments/${'\u0001'.repeat(1600)}`;
    const event = (body: string, isBase64Encoded: boolean): APIGatewayProxyEvent => ({
      resource: '/v1/attachments/{id}',
      path,
      httpMethod: 'POST',
      headers: { ...headers, 'User-Agent': '\u0001'.repeat(1000), Host: '\u0001'.repeat(1000) },
      multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
      queryStringParameters: query,
      multiValueQueryStringParameters: Object.fromEntries(Object.entries(query).map(([name, value]) => [name, [value]])),
      pathParameters: { id: '\u0001'.repeat(1600) },
      stageVariables: null,
      body,
      isBase64Encoded,
      requestContext: {
        accountId: '123456789012',
        apiId: 'abcdefghij',
        authorizer: { principalId: 'u'.repeat(1024), userId: 'u'.repeat(1024) },
        domainName: '\u0001'.repeat(1000),
        httpMethod: 'POST',
        identity: callerIdentity('255.255.255.255', '\u0001'.repeat(1000)),
        path: `/prod${path}`,
        protocol: 'HTTP/1.1',
        requestId: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
        requestTimeEpoch: 1_700_000_000_000,
        resourceId: 'abcdef',
        resourcePath: '/v1/attachments/{id}',
        stage: 'prod',
      },
    });
    const binary = event(Buffer.alloc(MAX_BINARY_BODY_BYTES).toString('base64'), true);
    expect(invocationPayloadBytes(binary)).toBeLessThanOrEqual(LAMBDA_MAX_INVOKE_PAYLOAD_BYTES);
    const text = event('\u0001'.repeat(MAX_TEXT_BODY_BYTES), false);
    expect(invocationPayloadBytes(text)).toBeLessThanOrEqual(LAMBDA_MAX_INVOKE_PAYLOAD_BYTES);
  });
});

describe('the guard rules', () => {
  const multipart = `${BINARY_MEDIA_TYPES[0]}; boundary=x`;

  it('let a body through up to its limit and refuse one byte more, by content type', () => {
    const at = (type: string, length: number) =>
      refusingRule(request('POST', { 'content-type': type, 'content-length': String(length) }))?.name;
    expect(at(multipart, MAX_BINARY_BODY_BYTES)).toBeUndefined();
    expect(at(multipart, MAX_BINARY_BODY_BYTES + 1)).toBe('BinaryBodyTooLarge');
    expect(at('application/json', MAX_TEXT_BODY_BYTES)).toBeUndefined();
    expect(at('application/json', MAX_TEXT_BODY_BYTES + 1)).toBe('TextBodyTooLarge');
    expect(at('multipart/form-data;boundary=x', MAX_BINARY_BODY_BYTES)).toBeUndefined();
    // Not the binary type as written: held to the text limit.
    expect(at('Multipart/Form-Data; boundary=x', MAX_TEXT_BODY_BYTES + 1)).toBe('TextBodyTooLarge');
    expect(at('multipart/form-data-x', MAX_TEXT_BODY_BYTES + 1)).toBe('TextBodyTooLarge');
    expect(refusingRule(request('POST', { 'content-length': String(MAX_TEXT_BODY_BYTES + 1) }))?.name).toBe('TextBodyTooLarge');
    expect(at(multipart, GATEWAY_MAX_BODY_BYTES + 1)).toBe('BinaryBodyTooLarge');
  });

  it('refuse bodies of undeclared length: any Transfer-Encoding, and POST or PUT without Content-Length', () => {
    expect(refusingRule(request('POST', { 'transfer-encoding': 'chunked' }))?.name).toBe('BodyLengthUndeclared');
    expect(refusingRule(request('GET', { 'transfer-encoding': 'chunked' }))?.name).toBe('BodyLengthUndeclared');
    expect(refusingRule(request('PUT', {}))?.name).toBe('BodyLengthUndeclared');
    expect(refusingRule(request('POST', { 'content-length': '' }))?.name).toBe('BodyLengthUndeclared');
    expect(refusingRule(request('GET', {}))).toBeUndefined();
    expect(refusingRule(request('DELETE', {}))).toBeUndefined();
    expect(refusingRule(request('POST', { 'content-length': '0' }))).toBeUndefined();
  });

  it('refuse a Content-Length that is not a plain number', () => {
    for (const value of ['-1', '1e9', '5, 5'])
      expect(refusingRule(request('POST', { 'content-length': value }))?.name).toBe('TextBodyTooLarge');
  });
});

describe('legitimate requests at their largest', () => {
  it('a 4 MiB upload with a 255-byte filename that the client escapes threefold and every form field the parser takes, each at its longest, passes the binary guard', async () => {
    const limits = uploadLimits(DEFAULT_MAX_FILE_BYTES);
    const form = new FormData();
    // More than the handler takes (conversation_id and message_id): as many fields as the parser lets
    // through beside the file, each as long as it accepts.
    for (let i = 0; i < limits.maxFields; i++) form.append(`f${i}`, 'v'.repeat(limits.maxFieldBytes));
    // A `"` is sent as %22: the longest filename on the wire.
    form.append('file', new Blob([new Uint8Array(DEFAULT_MAX_FILE_BYTES)]), '"'.repeat(MAX_FILENAME_BYTES));
    const encoded = new Request('http://x/', { method: 'POST', body: form });
    const body = Buffer.from(await encoded.arrayBuffer());
    const type = encoded.headers.get('content-type')!;
    // The body is what the handler takes: the file whole, every field.
    const parsed = await parseMultipart(body, type, limits);
    expect(parsed.files[0]!.bytes.length).toBe(DEFAULT_MAX_FILE_BYTES);
    expect(Object.keys(parsed.fields)).toHaveLength(limits.maxFields);
    expect(refusingRule(request('POST', { 'content-type': type, 'content-length': String(body.length) }))).toBeUndefined();
    expect(MAX_BINARY_BODY_BYTES - body.length).toBeGreaterThan(250_000);
  });

  it('completing a session of 10,000 parts with the longest ETags the handler accepts passes the text guard, compact or indented', () => {
    const parts = Array.from({ length: S3_MAX_PARTS }, (_, i) => ({ part_number: i + 1, etag: `"${'f'.repeat(32)}-99999"` }));
    for (const json of [JSON.stringify({ parts }), JSON.stringify({ parts }, null, 2)]) {
      expect(readParams({ kind: 'json', values: JSON.parse(json) }, completeParams).parts).toHaveLength(S3_MAX_PARTS);
      const length = Buffer.byteLength(json);
      expect(refusingRule(request('POST', { 'content-type': 'application/json', 'content-length': String(length) }))).toBeUndefined();
    }
  });
});
