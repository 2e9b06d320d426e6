import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { deadEndpoint } from '../support/dead-endpoint.js';

describe('when DynamoDB cannot be reached', () => {
  let t: TestApi;
  beforeAll(async () => {
    t = await startTestApi({ env: { DYNAMODB_ENDPOINT: await deadEndpoint() } });
  });
  afterAll(() => t.close());

  it.each([
    ['GET', '/v1/conversations', undefined],
    ['POST', '/v1/conversations', { contact_id: 'a' }],
    ['GET', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', undefined],
    ['PUT', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', { is_muted: 'true' }],
    ['DELETE', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', undefined],
  ])('%s %s answers 503 service_unavailable in the error shape', async (method, path, form) => {
    const response = await t.call('user', method, path, form ? { form } : {});
    expect(response.status).toBe(503);
    expect(response.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable' });
    expect(response.body.error.request_id).toBe(response.headers.get('x-request-id'));
    expect(response.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|stack|arn:/);
  });

  it('is its own server: another one started in the same process keeps its own working client', async () => {
    const healthy = await startTestApi();
    try {
      expect((await healthy.call('user', 'POST', '/v1/conversations', { form: { contact_id: 'a' } })).status).toBe(201);
      expect((await t.call('user', 'GET', '/v1/conversations')).status).toBe(503);
      expect((await healthy.call('user', 'GET', '/v1/conversations')).status).toBe(200);
    } finally {
      await healthy.close();
    }
  });

  it('still validates input before touching the backend', async () => {
    const response = await t.call('user', 'GET', '/v1/conversations?limit=0');
    expect(response.status).toBe(400);
  });
});
