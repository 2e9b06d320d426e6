import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';

const APP = 'http://127.0.0.1:5173';
const OTHER_APP = 'https://app.example';
const STRANGER = 'https://evil.example';

let t: TestApi;
let conversationId: string;
beforeAll(async () => {
  t = await startTestApi({ env: { CORS_ORIGINS: `${APP}, ${OTHER_APP}` } });
  conversationId = (await t.call('user', 'POST', '/v1/conversations', { form: { contact_id: 'c' } })).body.id;
});
afterAll(() => t.close());

const preflight = (path: string, origin: string, method = 'POST') =>
  t.call(null, 'OPTIONS', path, {
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,idempotency-key' },
  });

function expectAllowed(response: { headers: Headers }, origin: string) {
  expect(response.headers.get('access-control-allow-origin')).toBe(origin);
  expect(response.headers.get('access-control-expose-headers')).toContain('x-request-id');
  expect(response.headers.get('vary')).toContain('Origin');
}

describe('CORS preflight', () => {
  it('answers OPTIONS on a collection without a token: 204 with its methods and the headers clients send', async () => {
    const response = await preflight('/v1/conversations', APP);
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(APP);
    expect(response.headers.get('access-control-allow-methods')?.split(', ').sort()).toEqual(['GET', 'OPTIONS', 'POST']);
    expect(response.headers.get('access-control-allow-headers')?.split(', ')).toEqual(['Authorization', 'Content-Type', 'Idempotency-Key']);
    expect(response.headers.get('vary')).toBe('Origin');
  });

  it('answers OPTIONS on an item path with the item methods, for any configured origin', async () => {
    const response = await preflight(`/v1/conversations/${conversationId}`, OTHER_APP, 'PUT');
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(OTHER_APP);
    expect(response.headers.get('access-control-allow-methods')?.split(', ').sort()).toEqual(['DELETE', 'GET', 'OPTIONS', 'PUT']);
  });

  it('does not allow an origin that is not configured', async () => {
    const response = await preflight('/v1/conversations', STRANGER);
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('vary')).toBe('Origin');
  });

  it('answers 404 route_not_found to OPTIONS on a path that is no route', async () => {
    const response = await preflight('/v1/nothing', APP);
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('route_not_found');
  });
});

describe('CORS headers on responses', () => {
  const withOrigin = (origin: string) => ({ headers: { origin } });

  it('are on a success', async () => {
    const response = await t.call('user', 'GET', '/v1/conversations', withOrigin(APP));
    expect(response.status).toBe(200);
    expectAllowed(response, APP);
  });

  it('are on a handler error', async () => {
    const response = await t.call('user', 'GET', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', withOrigin(APP));
    expect(response.status).toBe(404);
    expectAllowed(response, APP);
  });

  it('are on the gateway 401 without a token, and on a rejected token', async () => {
    const missing = await t.call(null, 'GET', '/v1/conversations', withOrigin(APP));
    expect(missing.status).toBe(401);
    expectAllowed(missing, APP);
    const forged = await t.call(null, 'GET', '/v1/conversations', { headers: { origin: APP, authorization: 'Bearer not.a.jwt' } });
    expect(forged.status).toBe(401);
    expectAllowed(forged, APP);
  });

  it('are on the gateway 404 for an unknown route', async () => {
    const response = await t.call('user', 'GET', '/v1/nothing', withOrigin(OTHER_APP));
    expect(response.status).toBe(404);
    expectAllowed(response, OTHER_APP);
  });

  it('are on an idempotent replay', async () => {
    const init = { form: { contact_id: 'cors' }, headers: { origin: APP, 'idempotency-key': 'k' } };
    await t.call('user', 'POST', '/v1/conversations', init);
    const replay = await t.call('user', 'POST', '/v1/conversations', init);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expectAllowed(replay, APP);
    expect(replay.headers.get('access-control-expose-headers')).toContain('Idempotent-Replayed');
  });

  it('allow nothing to an origin that is not configured, on a handler success and error alike', async () => {
    for (const response of [
      await t.call('user', 'GET', '/v1/conversations', withOrigin(STRANGER)),
      await t.call('user', 'GET', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', withOrigin(STRANGER)),
    ]) {
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
      expect(response.headers.get('vary')).toBe('Origin');
    }
  });

  it("echo any Origin on the gateway's own answers when several origins are configured, as API Gateway can only copy it", async () => {
    const response = await t.call(null, 'GET', '/v1/conversations', withOrigin(STRANGER));
    expect(response.status).toBe(401);
    expect(response.headers.get('access-control-allow-origin')).toBe(STRANGER);
  });
});

describe('CORS of the files bucket (the S3 stand-in, configured as the stack configures S3)', () => {
  it('lets an allowed origin read a file through file_url, and no other origin', async () => {
    const form = new FormData();
    form.append('file', new Blob(['hello']), 'hello.txt');
    const uploaded = await t.call('user', 'POST', '/v1/attachments', { body: form });
    const allowed = await fetch(uploaded.body.file_url, { headers: { origin: APP } });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(APP);
    expect(allowed.headers.get('access-control-expose-headers')).toContain('Content-Disposition');
    const stranger = await fetch(uploaded.body.file_url, { headers: { origin: STRANGER } });
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
  });
});
