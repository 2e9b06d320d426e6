import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOpenApi } from '../../infra/local/openapi.js';
import { startTestApi, type TestApi } from '../support/api.js';

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t.close());

describe('GET /openapi.json', () => {
  it('serves docs/openapi.yaml as JSON without a token', async () => {
    const response = await fetch(`${t.url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await response.json()).toEqual(loadOpenApi());
  });
});
