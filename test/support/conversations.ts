import { afterAll, beforeAll, expect } from 'vitest';
import type { LocalApiOptions } from '../../infra/local/server.js';
import { startTestApi, type TestApi, type TestResponse } from './api.js';

let contacts = 0;

/**
 * The conversation calls that behaviour tests repeat, on the API `api()`
 * returns (started in a beforeAll): each new conversation with a contact of
 * its own, lists as ids, and successes checked where a test only needs the result.
 */
export function conversationCalls(api: () => TestApi) {
  return {
    async create(userId: string): Promise<string> {
      const response = await api().call(userId, 'POST', '/v1/conversations', { form: { contact_id: `contact_${contacts++}` } });
      expect(response.status).toBe(201);
      return response.body.id;
    },
    put: (userId: string, id: string, json: Record<string, unknown>): Promise<TestResponse> =>
      api().call(userId, 'PUT', `/v1/conversations/${id}`, { json }),
    async get(userId: string, id: string) {
      return (await api().call(userId, 'GET', `/v1/conversations/${id}`)).body;
    },
    /** The ids of one page of up to 100 conversations, `query` being e.g. `unread=true`. */
    async ids(userId: string, query: string): Promise<string[]> {
      const response = await api().call(userId, 'GET', `/v1/conversations?limit=100&${query}`);
      expect(response.status).toBe(200);
      return response.body.data.map((c: { id: string }) => c.id);
    },
  };
}

/**
 * A local API whose clock the test sets (`clock.now`, Unix seconds), started
 * before the file's tests and closed after them, with the conversation calls.
 */
export function clockedApi(start: number, options: LocalApiOptions = {}) {
  const clock = { now: start };
  let api: TestApi | undefined;
  beforeAll(async () => {
    api = await startTestApi({ ...options, clock: () => clock.now });
  });
  afterAll(() => api?.close());
  const t = () => api!;
  return { clock, t, ...conversationCalls(t) };
}
