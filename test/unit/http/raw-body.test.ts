import { randomBytes } from 'node:crypto';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { type ApiRequest, rawBody } from '../../../shared/http/request.js';

const requestWith = (body: string | null, isBase64Encoded: boolean): ApiRequest => ({
  event: { body, isBase64Encoded } as APIGatewayProxyEvent,
  caller: { userId: 'user', groups: new Set(), requestId: 'test' },
  headers: {},
});

describe('rawBody', () => {
  it('decodes a base64 body of several megabytes to exactly the bytes sent', () => {
    for (const size of [4 * 1024 * 1024, 1_000_001, 1_000_002, 3]) {
      const bytes = randomBytes(size);
      expect(rawBody(requestWith(bytes.toString('base64'), true)).equals(bytes), `${size} bytes`).toBe(true);
    }
  });

  it('decodes base64 wrapped in line breaks to the same bytes', () => {
    const bytes = randomBytes(600_000);
    const wrapped = bytes.toString('base64').replace(/.{76}/g, '$&\r\n');
    expect(rawBody(requestWith(wrapped, true)).equals(bytes)).toBe(true);
  });

  it('takes a text body as UTF-8 and an absent body as empty', () => {
    expect(rawBody(requestWith('contact_id=é', false)).toString('utf8')).toBe('contact_id=é');
    expect(rawBody(requestWith(null, true))).toHaveLength(0);
    expect(rawBody(requestWith('', true))).toHaveLength(0);
  });
});
