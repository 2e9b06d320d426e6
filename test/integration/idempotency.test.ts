import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';

// A group conversation needs the group in the token: the creator is a member of the group it names.
const createWithKey = (t: TestApi, userId: string, key: string, form: Record<string, string>) =>
  t.call(userId, 'POST', '/v1/conversations', {
    form,
    headers: { 'idempotency-key': key },
    ...(form.group_id ? { groups: [form.group_id] } : {}),
  });

describe('Idempotency-Key on POST /v1/conversations', () => {
  let t: TestApi;
  beforeAll(async () => {
    t = await startTestApi();
  });
  afterAll(() => t.close());

  it('replays the first response, status and body, for the same user, key and request', async () => {
    const first = await createWithKey(t, 'replay', 'key-1', { contact_id: 'alice' });
    const again = await createWithKey(t, 'replay', 'key-1', { contact_id: 'alice' });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // Without the key the same request is an ordinary "already exists".
    expect((await t.call('replay', 'POST', '/v1/conversations', { form: { contact_id: 'alice' } })).status).toBe(200);
  });

  it('treats the same request as form and as JSON as the same request', async () => {
    const first = await createWithKey(t, 'encodings', 'key-1', { contact_id: 'bob' });
    const asJson = await t.call('encodings', 'POST', '/v1/conversations', {
      json: { contact_id: 'bob' },
      headers: { 'idempotency-key': 'key-1' },
    });
    expect(asJson.status).toBe(201);
    expect(asJson.body).toEqual(first.body);
  });

  it('answers 409 idempotency_key_reused for the same key with a different request, and creates nothing', async () => {
    await createWithKey(t, 'reuse', 'key-1', { contact_id: 'carol' });
    const other = await createWithKey(t, 'reuse', 'key-1', { contact_id: 'dave' });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ type: 'idempotency_error', code: 'idempotency_key_reused', param: 'Idempotency-Key' });
    const list = await t.call('reuse', 'GET', '/v1/conversations');
    expect(list.body.data.map((conversation: { contact_id: string }) => conversation.contact_id)).toEqual(['carol']);
  });

  it('keeps keys per user: another user with the same key gets their own conversation', async () => {
    const mine = await createWithKey(t, 'user-a', 'shared-key', { contact_id: 'erin' });
    const theirs = await createWithKey(t, 'user-b', 'shared-key', { contact_id: 'erin' });
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
  });

  it('accepts a key of 255 characters and refuses one of 256 with 400', async () => {
    expect((await createWithKey(t, 'lengths', 'k'.repeat(255), { contact_id: 'frank' })).status).toBe(201);
    const tooLong = await createWithKey(t, 'lengths', 'k'.repeat(256), { contact_id: 'grace' });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatchObject({ code: 'parameter_invalid', param: 'Idempotency-Key' });
    const list = await t.call('lengths', 'GET', '/v1/conversations');
    expect(list.body.data).toHaveLength(1);
  });

  it('answers ten concurrent requests with one key with the one first response', async () => {
    const responses = await Promise.all(Array.from({ length: 10 }, () => createWithKey(t, 'concurrent', 'key-1', { group_id: 'family' })));
    // Without idempotency one would be 201 and nine 200 ("already exists"): all ten replay the 201.
    expect(responses.map((response) => response.status)).toEqual(Array(10).fill(201));
    expect(new Set(responses.map((response) => response.body.id)).size).toBe(1);
    expect(responses.filter((response) => response.headers.get('idempotent-replayed') === 'true')).toHaveLength(9);
    const list = await t.call('concurrent', 'GET', '/v1/conversations');
    expect(list.body.data).toHaveLength(1);
  });

  it('replays a refusal of the operation too (a 400 is the answer to that request)', async () => {
    const first = await createWithKey(t, 'refusal', 'key-1', { contact_id: 'x', group_id: 'y' });
    const again = await createWithKey(t, 'refusal', 'key-1', { contact_id: 'x', group_id: 'y' });
    expect(first.status).toBe(400);
    expect(again.status).toBe(400);
  });
});
