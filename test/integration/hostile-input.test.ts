import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_USER_ID_BYTES } from '../../shared/dynamo/keys.js';
import { type Json, startTestApi, type TestApi } from '../support/api.js';
import { download, fieldPart, filePart, multipartBody, rawUpload, upload } from '../support/attachments.js';
import { rawRequest } from '../support/raw-http.js';

// One named regression test (or group) per class of issue 10: each answered 5xx, or stored what it should have refused.
let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t.close());

const USER = 'hostile-input';
const json = (method: string, path: string, body: string, userId = USER) =>
  t.call(userId, method, path, { body, headers: { 'content-type': 'application/json' } });
const newConversation = async (contact: string, userId = USER) =>
  (await t.call(userId, 'POST', '/v1/conversations', { form: { contact_id: contact } })).body;
const tokenWith = (claims: Record<string, unknown>) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime(Math.floor(Date.now() / 1000) + 600)
    .sign(new TextEncoder().encode(t.api.authSecret));

function expectRefused(response: { status: number; body: Json; headers: Headers }, status: number, code: string, param?: string) {
  expect(response.status).toBe(status);
  expect(response.body.error).toMatchObject({ code, ...(param === undefined ? {} : { param }) });
  // A function's answer carries x-request-id; a gateway response carries the id in x-amzn-requestid only.
  expect(response.headers.get('x-request-id') ?? response.headers.get('x-amzn-requestid')).toBe(response.body.error.request_id);
}

describe('class 1: names that are members of Object.prototype are ordinary names', () => {
  it.each(['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf'])(
    'refuses the query parameter %s as unknown (400, not 500)',
    async (name) => {
      expectRefused(await t.call(USER, 'GET', `/v1/conversations?${name}=1`), 400, 'parameter_unknown', name);
    },
  );

  it.each(['constructor', '__proto__', 'toString'])('answers a request carrying a header named %s', async (name) => {
    const response = await t.call(USER, 'GET', '/v1/conversations', { headers: { [name]: 'x' } });
    expect(response.status).toBe(200);
  });

  it('refuses a form or JSON field named __proto__ instead of dropping it', async () => {
    const form = await t.call(USER, 'POST', '/v1/conversations', {
      body: 'contact_id=proto-form&__proto__=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectRefused(form, 400, 'parameter_unknown', '__proto__');
    expectRefused(
      await json('POST', '/v1/conversations', '{"contact_id":"proto-json","__proto__":{"x":1}}'),
      400,
      'parameter_unknown',
      '__proto__',
    );
    const list = await t.call(USER, 'GET', '/v1/conversations?limit=100');
    expect(list.body.data.map((c: Json) => c.contact_id)).not.toContain('proto-form');
  });

  it('refuses a multipart field named __proto__ instead of dropping it', async () => {
    const body = multipartBody([fieldPart('__proto__', 'x'), filePart('bytes', 'form-data; name="file"; filename="p.txt"')]);
    expectRefused(await rawUpload(t, USER, body), 400, 'parameter_unknown', '__proto__');
  });
});

describe('class 2: strings that are not well-formed Unicode are refused before anything is stored', () => {
  it.each(['contact_id', 'group_id'])('refuses a lone surrogate in %s (400)', async (name) => {
    expectRefused(await json('POST', '/v1/conversations', `{"${name}":"a\\ud800b"}`), 400, 'parameter_invalid', name);
  });

  it('refuses a rename to a lone surrogate, and the attachment and every list stay readable', async () => {
    const conversation = await newConversation('surrogate-rename');
    const uploaded = (await upload(t, USER, { bytes: 'x', filename: 'kept.txt' }, { conversation_id: conversation.id })).body;
    const rename = await json('PUT', `/v1/attachments/${uploaded.id}`, '{"filename":"a\\udc00b.txt"}');
    expectRefused(rename, 400, 'parameter_invalid', 'filename');
    const got = await t.call(USER, 'GET', `/v1/attachments/${uploaded.id}`);
    expect(got.status).toBe(200);
    expect(got.body.filename).toBe('kept.txt');
    expect((await t.call(USER, 'GET', '/v1/attachments')).status).toBe(200);
    expect((await t.call(USER, 'GET', `/v1/attachments?conversation_id=${conversation.id}`)).status).toBe(200);
  });

  it('refuses a token whose sub holds a lone surrogate (401 token_invalid)', async () => {
    const token = await tokenWith({ sub: 'user\ud800' });
    const response = await t.call(null, 'GET', '/v1/conversations', { headers: { authorization: `Bearer ${token}` } });
    expectRefused(response, 401, 'token_invalid');
  });
});

describe('class 3: token subjects are bounded to what the stores can hold', () => {
  // 4-byte characters and '#' are the worst cases once percent-encoded into index keys.
  const longest = `${'\u{1F600}'.repeat(MAX_USER_ID_BYTES / 4 - 1)}#%/.`;

  it(`accepts a sub of exactly ${MAX_USER_ID_BYTES} UTF-8 bytes everywhere: create, upload, get, lists, download`, async () => {
    expect(Buffer.byteLength(longest)).toBe(MAX_USER_ID_BYTES);
    const widest = '\u{1F600}'.repeat(128);
    const authorization = `Bearer ${await tokenWith({ sub: longest, groups: [widest] })}`;
    const call = (method: string, path: string, init: Record<string, unknown> = {}) =>
      t.call(null, method, path, { ...init, headers: { authorization, ...(init.headers as object) } });
    const conversation = await call('POST', '/v1/conversations', { json: { group_id: widest } });
    expect(conversation.status).toBe(201);
    const form = new FormData();
    form.append('conversation_id', conversation.body.id);
    form.append('message_id', widest);
    form.append('file', new Blob(['long-sub bytes']), 'long.txt');
    const uploaded = await call('POST', '/v1/attachments', { body: form });
    expect(uploaded.status).toBe(201);
    expect((await download(uploaded.body.file_url)).bytes.toString()).toBe('long-sub bytes');
    expect((await call('GET', `/v1/attachments/${uploaded.body.id}`)).status).toBe(200);
    expect((await call('GET', `/v1/attachments?conversation_id=${conversation.body.id}`)).body.data).toHaveLength(1);
    expect((await call('GET', `/v1/conversations?group_id=${encodeURIComponent(widest)}`)).body.data).toHaveLength(1);
  });

  it.each([
    ['one byte over the bound', `${longest}x`],
    ['3,000 characters', 'u'.repeat(3000)],
  ])('refuses a sub %s with 401 token_invalid', async (_, sub) => {
    const token = await tokenWith({ sub });
    expectRefused(
      await t.call(null, 'POST', '/v1/conversations', { form: { contact_id: 'c' }, headers: { authorization: `Bearer ${token}` } }),
      401,
      'token_invalid',
    );
  });
});

describe('class 4: every route refuses unknown query parameters', () => {
  it('DELETE /v1/conversations/:id?force=true is refused and deletes nothing', async () => {
    const conversation = await newConversation('query-delete');
    expectRefused(await t.call(USER, 'DELETE', `/v1/conversations/${conversation.id}?force=true`), 400, 'parameter_unknown', 'force');
    expect((await t.call(USER, 'GET', `/v1/conversations/${conversation.id}`)).status).toBe(200);
  });

  it('POST /v1/conversations?is_muted=true is refused and creates nothing', async () => {
    const response = await t.call(USER, 'POST', '/v1/conversations?is_muted=true', { form: { contact_id: 'query-create' } });
    expectRefused(response, 400, 'parameter_unknown', 'is_muted');
    const list = await t.call(USER, 'GET', '/v1/conversations?contact_id=query-create');
    expect(list.body.data).toEqual([]);
  });

  it('PUT /v1/conversations/:id?is_muted=true is refused rather than answering 200 unchanged', async () => {
    const conversation = await newConversation('query-update');
    expectRefused(
      await t.call(USER, 'PUT', `/v1/conversations/${conversation.id}?is_muted=true`, { form: {} }),
      400,
      'parameter_unknown',
      'is_muted',
    );
  });

  it.each([
    ['GET', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV'],
    ['GET', '/v1/attachments/att_01ARZ3NDEKTSV4RRFFQ69G5FAV'],
    ['PUT', '/v1/attachments/att_01ARZ3NDEKTSV4RRFFQ69G5FAV'],
    ['DELETE', '/v1/attachments/att_01ARZ3NDEKTSV4RRFFQ69G5FAV'],
    ['POST', '/v1/attachments'],
  ])('%s %s refuses ?x=1 before anything else', async (method, path) => {
    expectRefused(await t.call(USER, method, `${path}?x=1`), 400, 'parameter_unknown', 'x');
  });
});

describe('class 5: a file part whose Content-Type cannot be parsed takes its type from the extension', () => {
  it.each([
    { label: 'unparsable (;;;)', typeHeader: ['Content-Type: ;;;'], expected: 'application/pdf' },
    { label: 'absent', typeHeader: [], expected: 'application/pdf' },
    { label: 'a bare word', typeHeader: ['Content-Type: pdf'], expected: 'application/pdf' },
    { label: 'text/plain, said explicitly', typeHeader: ['Content-Type: Text/Plain; charset=utf-8'], expected: 'text/plain' },
  ])('a Content-Type $label on g.pdf is stored as $expected', async ({ typeHeader, expected }) => {
    const body = multipartBody([
      { headers: ['Content-Disposition: form-data; name="file"; filename="g.pdf"', ...typeHeader], body: '%PDF-1.4' },
    ]);
    const response = await rawUpload(t, USER, body);
    expect(response.status).toBe(201);
    expect(response.body.file_type).toBe(expected);
  });
});

describe('class 6: requests Node refuses to parse get the gateway error shape and a request id', () => {
  const host = () => new URL(t.url).host;
  it.each([
    {
      label: 'a 16 KB header',
      request: `GET /v1/conversations HTTP/1.1\r\nHost: HOST\r\nX-Big: ${'a'.repeat(16 * 1024)}\r\n\r\n`,
      status: 431,
    },
    { label: 'raw UTF-8 bytes in the path', request: 'GET /v1/conversations/é HTTP/1.1\r\nHost: HOST\r\n\r\n', status: 400 },
    {
      label: 'a DEL byte in a header value',
      request: 'GET /v1/conversations HTTP/1.1\r\nHost: HOST\r\nX-Odd: a\x7fb\r\n\r\n',
      status: 400,
    },
    {
      label: 'Content-Length with Transfer-Encoding',
      request: 'POST /v1/conversations HTTP/1.1\r\nHost: HOST\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      status: 400,
    },
    { label: 'no HTTP at all', request: 'HELLO\r\n\r\n', status: 400 },
  ])('answers $label with $status in the error shape', async ({ request, status }) => {
    const response = await rawRequest(t.url, Buffer.from(request.replace('HOST', host()), 'utf8'));
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = JSON.parse(response.body);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'request_invalid' });
    expect(response.headers['x-amzn-requestid']).toBe(body.error.request_id);
  });
});
