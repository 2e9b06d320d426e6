import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { storedFileKeys, upload } from '../support/attachments.js';
import { deadEndpoint } from '../support/dead-endpoint.js';

// DynamoDB is down (nothing listens on its port); the local S3 is up and shows what was left in it.
let t: TestApi;

beforeAll(async () => {
  t = await startTestApi({ env: { DYNAMODB_ENDPOINT: await deadEndpoint() } });
});
afterAll(async () => {
  await t?.close();
});

describe('when DynamoDB is unreachable', () => {
  it('answers an upload with 503 and stores no file: the intent that would hand it to the cleanup cannot be written first', async () => {
    const response = await upload(t, 'unlucky', { bytes: 'orphan?', filename: 'orphan.txt' });
    expect(response.status).toBe(503);
    expect(response.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable' });
    // Before issue 26 the file was stored and kept, unreachable: the upload's intent now comes before the file.
    expect(await storedFileKeys(t.api.s3Endpoint)).toEqual([]);
  });

  it('answers list, get, rename and delete with 503 in the error shape', async () => {
    const id = 'att_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    for (const [method, path, init] of [
      ['GET', '/v1/attachments', {}],
      ['GET', `/v1/attachments/${id}`, {}],
      ['PUT', `/v1/attachments/${id}`, { form: { filename: 'x.txt' } }],
      ['DELETE', `/v1/attachments/${id}`, {}],
    ] as const) {
      const response = await t.call('unlucky', method, path, init);
      expect(response.status).toBe(503);
      expect(response.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable' });
    }
  });
});
