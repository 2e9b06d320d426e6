import { generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t.close());

const secret = () => new TextEncoder().encode(t.api.authSecret);
const now = () => Math.floor(Date.now() / 1000);
const withToken = (token: string) => t.call(null, 'GET', '/v1/conversations', { headers: { authorization: `Bearer ${token}` } });

function expectAuthenticationError(response: Awaited<ReturnType<TestApi['call']>>, code: string) {
  expect(response.status).toBe(401);
  expect(response.headers.get('www-authenticate')).toBe('Bearer');
  // A gateway response: the id in the body and in API Gateway's own header (docs/deploying.md).
  expect(response.headers.get('x-amzn-requestid')).toBeTruthy();
  expect(response.body.error).toMatchObject({ type: 'authentication_error', code });
  expect(response.body.error.request_id).toBe(response.headers.get('x-amzn-requestid'));
}

describe('authentication', () => {
  it('accepts a token minted with the local secret', async () => {
    expect((await t.call('someone', 'GET', '/v1/conversations')).status).toBe(200);
  });

  it('answers 401 token_missing without an Authorization header', async () => {
    expectAuthenticationError(await t.call(null, 'GET', '/v1/conversations'), 'token_missing');
  });

  it('answers 401 token_missing for a scheme other than Bearer', async () => {
    const token = await t.token('someone');
    const response = await t.call(null, 'GET', '/v1/conversations', { headers: { authorization: `Basic ${token}` } });
    expectAuthenticationError(response, 'token_missing');
  });

  it('answers 401 token_invalid for garbage', async () => {
    expectAuthenticationError(await withToken('not-a-jwt'), 'token_invalid');
  });

  it('answers 401 token_invalid for a bad signature', async () => {
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('victim')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('another secret'));
    expectAuthenticationError(await withToken(forged), 'token_invalid');
  });

  it('answers 401 token_expired for an expired token', async () => {
    const expired = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('late')
      .setExpirationTime(now() - 60)
      .sign(secret());
    expectAuthenticationError(await withToken(expired), 'token_expired');
  });

  it('answers 401 token_invalid for alg none', async () => {
    const unsigned = new UnsecuredJWT({}).setSubject('victim').setExpirationTime('1h').encode();
    expectAuthenticationError(await withToken(unsigned), 'token_invalid');
  });

  it('answers 401 token_invalid for an RS256 token in HS256 mode', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'RS256' }).setSubject('victim').setExpirationTime('1h').sign(privateKey);
    expectAuthenticationError(await withToken(token), 'token_invalid');
  });

  it('answers 401 token_invalid for an HS512 token signed with the right secret (algorithm pinned)', async () => {
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS512' }).setSubject('victim').setExpirationTime('1h').sign(secret());
    expectAuthenticationError(await withToken(token), 'token_invalid');
  });

  it('answers 401 token_invalid for a token without exp', async () => {
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('forever').sign(secret());
    expectAuthenticationError(await withToken(token), 'token_invalid');
  });

  it('answers 401 token_invalid for a token without sub', async () => {
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(secret());
    expectAuthenticationError(await withToken(token), 'token_invalid');
  });

  it('takes the user from the token only, never from a header or the body', async () => {
    const created = await t.call('alice', 'POST', '/v1/conversations', {
      form: { contact_id: 'bob' },
      headers: { 'x-user-id': 'mallory' },
    });
    expect(created.status).toBe(201);
    expect((await t.call('mallory', 'GET', `/v1/conversations/${created.body.id}`)).status).toBe(404);
  });

  it('lets one token reach every route (the cached policy covers the whole API)', async () => {
    const token = await t.token('roamer');
    const headers = { authorization: `Bearer ${token}` };
    const created = await t.call(null, 'POST', '/v1/conversations', { form: { contact_id: 'x' }, headers });
    expect(created.status).toBe(201);
    expect((await t.call(null, 'GET', `/v1/conversations/${created.body.id}`, { headers })).status).toBe(200);
    expect((await t.call(null, 'PUT', `/v1/conversations/${created.body.id}`, { headers })).status).toBe(200);
    expect((await t.call(null, 'GET', '/v1/conversations', { headers })).status).toBe(200);
    expect((await t.call(null, 'DELETE', `/v1/conversations/${created.body.id}`, { headers })).status).toBe(200);
  });
});
