import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { deadEndpoint } from '../support/dead-endpoint.js';

// The authorizer cannot read its secret (the secrets extension is not there):
// API Gateway answers such an authorizer failure with a 500, never a 401 and never a pass.
describe('when the authorizer itself fails', () => {
  let t: TestApi;
  beforeAll(async () => {
    const extension = new URL(await deadEndpoint());
    t = await startTestApi({
      env: {
        AUTH_SECRET: '',
        AUTH_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:auth-AbCdEf',
        PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: extension.port,
        AWS_SESSION_TOKEN: 'session',
      },
    });
  });
  afterAll(() => t.close());

  it('answers 500 internal_error in the error shape, not a 401', async () => {
    const response = await t.call('alice', 'POST', '/v1/conversations', { form: { contact_id: 'bob' } });
    expect(response.status).toBe(500);
    expect(response.body.error).toMatchObject({ type: 'api_error', code: 'internal_error' });
    expect(response.body.error.request_id).toBe(response.headers.get('x-amzn-requestid'));
  });

  it('still answers 401 token_missing before the authorizer is asked', async () => {
    const response = await t.call(null, 'GET', '/v1/conversations');
    expect(response.status).toBe(401);
    expect(response.body.error.code).toBe('token_missing');
  });
});
