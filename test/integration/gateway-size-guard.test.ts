import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_MAX_BODY_BYTES } from '../../infra/declarations/gateway-settings.js';
import { MAX_BINARY_BODY_BYTES, MAX_TEXT_BODY_BYTES } from '../../infra/declarations/size-guard.js';
import { DEFAULT_MAX_FILE_BYTES } from '../../shared/config.js';
import { MAX_FILENAME_BYTES } from '../../shared/files/filename.js';
import { startTestApi, type TestApi, type TestResponse } from '../support/api.js';
import { conversationOf, download, filePart, multipartBody, rawUpload, sha256, upload } from '../support/attachments.js';
import { rawRequest } from '../support/raw-http.js';

// The size guard (infra/declarations/size-guard.ts) as clients meet it: WAF on AWS, the emulator here, same rules.
let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t?.close());

/** A multipart upload body of exactly `length` bytes: one file part padded to fit. */
function multipartOfLength(length: number): Buffer {
  const framing = multipartBody([filePart('', 'form-data; name="file"; filename="big.bin"', 'application/octet-stream')]).length;
  return multipartBody([filePart(randomBytes(length - framing), 'form-data; name="file"; filename="big.bin"', 'application/octet-stream')]);
}

function expectGuardAnswer(response: TestResponse): void {
  expect(response.status).toBe(413);
  expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'body_too_large' });
  expect(response.body.error.message).toContain(String(MAX_BINARY_BODY_BYTES));
  expect(response.body.error.request_id).toBe(response.headers.get('x-amzn-requestid'));
}

const storedFor = async (userId: string) => (await t.call(userId, 'GET', '/v1/attachments')).body.data;

describe('the size guard in front of the API', () => {
  it('lets the largest legitimate upload through: a 4 MiB file with a 255-byte filename and both form fields', async () => {
    const conversationId = await conversationOf(t, 'largest', 'someone');
    const bytes = randomBytes(DEFAULT_MAX_FILE_BYTES);
    const filename = `${'é'.repeat((MAX_FILENAME_BYTES - 5) / 2)}.jpeg`;
    expect(Buffer.byteLength(filename)).toBe(MAX_FILENAME_BYTES);
    const response = await upload(t, 'largest', { bytes, filename }, { conversation_id: conversationId, message_id: 'm'.repeat(128) });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ filename, file_size: DEFAULT_MAX_FILE_BYTES, conversation_id: conversationId });
    expect(sha256((await download(response.body.file_url)).bytes)).toBe(sha256(bytes));
  });

  it('passes a multipart body of exactly its limit to the handler (whose file is then too large) and refuses one byte more, storing nothing', async () => {
    const atLimit = await rawUpload(t, 'binary-guard', multipartOfLength(MAX_BINARY_BODY_BYTES));
    expect(atLimit.status).toBe(413);
    expect(atLimit.body.error.code).toBe('file_too_large');

    expectGuardAnswer(await rawUpload(t, 'binary-guard', multipartOfLength(MAX_BINARY_BODY_BYTES + 1)));
    expect(await storedFor('binary-guard')).toEqual([]);
  });

  it('passes a text body of exactly its limit to the handler and refuses one byte more', async () => {
    const send = (length: number) =>
      t.call('text-guard', 'POST', '/v1/conversations', { body: 'x'.repeat(length), headers: { 'content-type': 'application/json' } });
    const atLimit = await send(MAX_TEXT_BODY_BYTES);
    expect(atLimit.status).toBe(400);
    expect(atLimit.body.error.code).toBe('body_invalid');
    expectGuardAnswer(await send(MAX_TEXT_BODY_BYTES + 1));
  });

  it('refuses a body over API Gateway’s 10 MB with the same answer, before API Gateway’s own limit', async () => {
    expectGuardAnswer(await rawUpload(t, 'huge', multipartOfLength(GATEWAY_MAX_BODY_BYTES + 1)));
    expect(await storedFor('huge')).toEqual([]);
  });

  it('refuses a chunked body, whose length WAF cannot see, with the same answer', async () => {
    const chunks = [randomBytes(1000), randomBytes(1000)];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const chunk = chunks.shift();
        if (chunk) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const token = await t.token('chunked');
    const response = await fetch(`${t.url}/v1/conversations`, {
      method: 'POST',
      body,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    const answer = (await response.json()) as { error: Record<string, string> };
    expect(answer.error).toMatchObject({ code: 'body_too_large', request_id: response.headers.get('x-amzn-requestid') });
  });

  it('refuses a POST without Content-Length and no body at all, and lets a GET without one through', async () => {
    const token = await t.token('undeclared');
    const host = new URL(t.url).host;
    const post = await rawRequest(
      t.url,
      `POST /v1/conversations HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    expect(post.status).toBe(413);
    expect(JSON.parse(post.body).error).toMatchObject({ code: 'body_too_large', request_id: post.headers['x-amzn-requestid'] });
    const get = await rawRequest(
      t.url,
      `GET /v1/conversations HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    expect(get.status).toBe(200);
  });
});
