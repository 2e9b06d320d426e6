import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { upload } from '../support/attachments.js';

// Time is the test's: uploads stamp last_active_at with it, and an open may be at most 60 s ahead of it.
let now = 1_800_000_000;
let t: TestApi;
let counter = 0;

beforeAll(async () => {
  t = await startTestApi({ clock: () => now });
});
afterAll(() => t?.close());

async function conversation(userId: string): Promise<string> {
  const response = await t.call(userId, 'POST', '/v1/conversations', { form: { contact_id: `contact_${counter++}` } });
  expect(response.status).toBe(201);
  return response.body.id;
}

const put = (userId: string, id: string, json: Record<string, unknown>) => t.call(userId, 'PUT', `/v1/conversations/${id}`, { json });
const get = async (userId: string, id: string) => (await t.call(userId, 'GET', `/v1/conversations/${id}`)).body;
const uploadInto = async (userId: string, id: string) => {
  const response = await upload(t, userId, { bytes: 'hello' }, { conversation_id: id });
  expect(response.status).toBe(201);
};
const unreadIds = async (userId: string, unread: boolean) =>
  (await t.call(userId, 'GET', `/v1/conversations?limit=100&unread=${unread}`)).body.data.map((c: { id: string }) => c.id);

describe('last_opened_at', () => {
  it('is set by PUT and only moves forward: an older value answers 200 with the field unchanged', async () => {
    const id = await conversation('opener');
    expect((await put('opener', id, { last_opened_at: now - 10 })).body.last_opened_at).toBe(now - 10);
    const stale = await put('opener', id, { last_opened_at: now - 100 });
    expect(stale.status).toBe(200);
    expect(stale.body.last_opened_at).toBe(now - 10);
    expect((await t.call('opener', 'PUT', `/v1/conversations/${id}`, { form: { last_opened_at: String(now - 5) } })).body.last_opened_at).toBe(now - 5);
  });

  it('a stale open still applies the other fields of the same PUT', async () => {
    const id = await conversation('opener');
    await put('opener', id, { last_opened_at: now });
    const response = await put('opener', id, { last_opened_at: now - 1, is_pinned: true });
    expect(response.body).toMatchObject({ last_opened_at: now, is_pinned: true });
  });

  it('accepts up to 60 seconds ahead of the server clock and refuses more with a 400', async () => {
    const id = await conversation('opener');
    expect((await put('opener', id, { last_opened_at: now + 60 })).status).toBe(200);
    const ahead = await put('opener', id, { last_opened_at: now + 61 });
    expect(ahead.status).toBe(400);
    expect(ahead.body.error).toMatchObject({ code: 'parameter_invalid', param: 'last_opened_at' });
    expect((await get('opener', id)).last_opened_at).toBe(now + 60);
  });

  it('refuses what is not a Unix time, in JSON and in forms alike', async () => {
    const id = await conversation('opener');
    for (const bad of [-1, 1.5, '12', true, [1], 2 ** 53]) {
      const response = await put('opener', id, { last_opened_at: bad });
      expect(response.status, JSON.stringify(bad)).toBe(400);
      expect(response.body.error.param).toBe('last_opened_at');
    }
    for (const bad of ['-1', 'yesterday', '1e9', ' 12']) {
      const response = await t.call('opener', 'PUT', `/v1/conversations/${id}`, { form: { last_opened_at: bad } });
      expect(response.status, bad).toBe(400);
    }
    expect((await get('opener', id)).last_opened_at).toBeNull();
  });

  it('an empty form value or JSON null clears it (mark as unread)', async () => {
    const id = await conversation('opener');
    await uploadInto('opener', id);
    await put('opener', id, { last_opened_at: now });
    expect(await unreadIds('opener', true)).not.toContain(id);
    const cleared = await t.call('opener', 'PUT', `/v1/conversations/${id}`, { form: { last_opened_at: '' } });
    expect(cleared.body.last_opened_at).toBeNull();
    expect(await unreadIds('opener', true)).toContain(id);
    await put('opener', id, { last_opened_at: now });
    expect((await put('opener', id, { last_opened_at: null })).body.last_opened_at).toBeNull();
    expect(await unreadIds('opener', true)).toContain(id);
  });

  it('marking a conversation without activity unread leaves it read: there is nothing to read', async () => {
    const id = await conversation('quiet');
    await put('quiet', id, { last_opened_at: null });
    expect(await unreadIds('quiet', true)).toEqual([]);
    expect(await unreadIds('quiet', false)).toEqual([id]);
  });

  it('concurrent opens from several devices leave the newest time, whatever order they land in', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: -3_600, max: 60 }), { minLength: 2, maxLength: 8 }), async (offsets) => {
        const id = await conversation('devices');
        const responses = await Promise.all(offsets.map((offset) => put('devices', id, { last_opened_at: now + offset })));
        expect(responses.map((response) => response.status)).toEqual(offsets.map(() => 200));
        expect((await get('devices', id)).last_opened_at).toBe(now + Math.max(...offsets));
      }),
      { numRuns: 15 },
    );
  });
});

describe('unread', () => {
  it('a new conversation is read; an upload into it makes it unread; opening it after the upload makes it read', async () => {
    const user = 'reader';
    const id = await conversation(user);
    expect(await unreadIds(user, false)).toContain(id);
    now += 10;
    await uploadInto(user, id);
    expect((await get(user, id)).last_active_at).toBe(now);
    expect(await unreadIds(user, true)).toEqual([id]);
    expect(await unreadIds(user, false)).not.toContain(id);

    // Opened before the upload (a device that was behind): still unread.
    await put(user, id, { last_opened_at: now - 1 });
    expect(await unreadIds(user, true)).toEqual([id]);
    // Opened at the upload's second: read.
    await put(user, id, { last_opened_at: now });
    expect(await unreadIds(user, true)).toEqual([]);
    expect(await unreadIds(user, false)).toContain(id);
    // New activity after the open: unread again.
    now += 1;
    await uploadInto(user, id);
    expect(await unreadIds(user, true)).toEqual([id]);
  });

  it('uploads racing opens and mark-unreads leave the flag consistent with both timestamps', async () => {
    const user = 'racer';
    const operation = fc.oneof(
      fc.record({ open: fc.integer({ min: -5, max: 5 }) }),
      fc.constant({ upload: true as const }),
      fc.constant({ clear: true as const }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 2, maxLength: 8 }), async (operations) => {
        const id = await conversation(user);
        const statuses = await Promise.all(
          operations.map(async (operation) => {
            if ('upload' in operation) return uploadInto(user, id).then(() => 200);
            const response = await put(user, id, { last_opened_at: 'open' in operation ? now + operation.open : null });
            return response.status;
          }),
        );
        expect(statuses).toEqual(operations.map(() => 200));
        const stored = await get(user, id);
        if (operations.some((operation) => 'upload' in operation)) expect(stored.last_active_at).toBe(now);
        const unread = stored.last_active_at !== null && (stored.last_opened_at === null || stored.last_opened_at < stored.last_active_at);
        expect(await unreadIds(user, unread)).toContain(id);
        expect(await unreadIds(user, !unread)).not.toContain(id);
      }),
      { numRuns: 20 },
    );
  });
});
