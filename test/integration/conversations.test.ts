import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t.close());

const CONVERSATION_FIELDS = [
  'archived_at',
  'contact_id',
  'created_at',
  'group_id',
  'id',
  'is_muted',
  'is_pinned',
  'last_active_at',
  'last_opened_at',
  'muted_until',
  'pinned_message_id',
];

// A group conversation needs the group in the token: the creator is a member of the group it names.
const create = (user: string, form: Record<string, string>) =>
  t.call(user, 'POST', '/v1/conversations', { form, ...(form.group_id ? { groups: [form.group_id] } : {}) });

describe('POST /v1/conversations', () => {
  it('creates a conversation with a contact, with exactly the documented fields and their initial values', async () => {
    const before = Math.floor(Date.now() / 1000);
    const response = await create('creator', { contact_id: 'contact_1' });
    expect(response.status).toBe(201);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('x-request-id')).toBeTruthy();
    expect(Object.keys(response.body).sort()).toEqual(CONVERSATION_FIELDS);
    expect(response.body).toMatchObject({
      contact_id: 'contact_1',
      group_id: null,
      pinned_message_id: null,
      is_pinned: false,
      is_muted: false,
      muted_until: null,
      last_active_at: null,
      last_opened_at: null,
      archived_at: null,
    });
    expect(response.body.id).toMatch(/^conv_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(response.body.created_at).toBeGreaterThanOrEqual(before);
    expect(Number.isInteger(response.body.created_at)).toBe(true);
  });

  it('creates a group conversation from a JSON body', async () => {
    const response = await t.call('creator', 'POST', '/v1/conversations', { json: { group_id: 'group_1' }, groups: ['group_1'] });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ contact_id: null, group_id: 'group_1' });
  });

  it('answers 200 with the existing conversation when the contact already has one', async () => {
    const first = await create('repeat', { contact_id: 'bob' });
    const second = await create('repeat', { contact_id: 'bob' });
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
  });

  it('makes one conversation out of 20 concurrent creates for one contact', async () => {
    const responses = await Promise.all(Array.from({ length: 20 }, () => create('racer', { contact_id: 'carol' })));
    expect(responses.map((r) => r.status).filter((s) => s === 201)).toHaveLength(1);
    expect(responses.every((r) => r.status === 200 || r.status === 201)).toBe(true);
    expect(new Set(responses.map((r) => r.body.id)).size).toBe(1);
    const list = await t.call('racer', 'GET', '/v1/conversations?contact_id=carol');
    expect(list.body.data).toHaveLength(1);
  });

  it('keeps the same contact of two users apart', async () => {
    const mine = await create('user_a', { contact_id: 'shared_contact' });
    const theirs = await create('user_b', { contact_id: 'shared_contact' });
    expect(mine.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(mine.body.id).not.toBe(theirs.body.id);
  });

  it('refuses neither contact_id nor group_id with parameter_missing', async () => {
    const response = await create('creator', {});
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_missing' });
  });

  it('refuses both contact_id and group_id with parameter_invalid', async () => {
    const response = await create('creator', { contact_id: 'a', group_id: 'b' });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'parameter_invalid', param: 'group_id' });
  });

  it.each([
    ['empty', ''],
    ['with a space', 'a b'],
    ['with a control character', 'a\u0007b'],
    ['of 129 characters', 'x'.repeat(129)],
  ])('refuses a contact_id %s', async (_, contactId) => {
    const response = await create('creator', { contact_id: contactId });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'parameter_invalid', param: 'contact_id' });
  });

  it('accepts a contact_id of 128 characters', async () => {
    const response = await create('creator', { contact_id: 'y'.repeat(128) });
    expect(response.status).toBe(201);
  });

  it.each(['id', 'created_at', 'is_muted', 'owner'])('refuses the unknown body parameter %s', async (name) => {
    const response = await create('creator', { contact_id: 'mass', [name]: 'x' });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'parameter_unknown', param: name });
  });

  it('creates a new conversation after the old one with that contact was deleted', async () => {
    const first = await create('recreate', { contact_id: 'dave' });
    expect((await t.call('recreate', 'DELETE', `/v1/conversations/${first.body.id}`)).status).toBe(200);
    const second = await create('recreate', { contact_id: 'dave' });
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.body.id);
  });
});

describe('GET /v1/conversations/:id', () => {
  it('returns the conversation', async () => {
    const { body } = await create('reader', { group_id: 'readers' });
    const response = await t.call('reader', 'GET', `/v1/conversations/${body.id}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual(body);
  });

  it("answers 404 for another user's conversation, exactly as for a missing one", async () => {
    const { body } = await create('owner', { contact_id: 'private' });
    const foreign = await t.call('intruder', 'GET', `/v1/conversations/${body.id}`);
    const missing = await t.call('intruder', 'GET', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV');
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ type: 'invalid_request_error', code: 'resource_missing' });
    expect({ ...foreign.body.error, message: '', request_id: '' }).toEqual({ ...missing.body.error, message: '', request_id: '' });
  });

  it.each(['nope', 'conv_short', 'att_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'conv_01ARZ3NDEKTSV4RRFFQ69G5FAV%00'])(
    'answers 404 for the malformed id %s',
    async (id) => {
      const response = await t.call('reader', 'GET', `/v1/conversations/${id}`);
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('resource_missing');
    },
  );
});

describe('PUT /v1/conversations/:id', () => {
  it('changes only the given fields', async () => {
    const { body } = await create('updater', { contact_id: 'erin' });
    const response = await t.call('updater', 'PUT', `/v1/conversations/${body.id}`, { form: { is_muted: 'true' } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...body, is_muted: true });
  });

  it('pins a message and a conversation from JSON, then unpins the message with null', async () => {
    const { body } = await create('updater', { contact_id: 'frank' });
    const pinned = await t.call('updater', 'PUT', `/v1/conversations/${body.id}`, {
      json: { is_pinned: true, pinned_message_id: 'msg_1' },
    });
    expect(pinned.body).toMatchObject({ is_pinned: true, pinned_message_id: 'msg_1' });
    const unpinned = await t.call('updater', 'PUT', `/v1/conversations/${body.id}`, { json: { pinned_message_id: null } });
    expect(unpinned.body).toMatchObject({ is_pinned: true, pinned_message_id: null });
  });

  it('archives with a timestamp and unarchives with an empty form value', async () => {
    const { body } = await create('updater', { contact_id: 'gina' });
    const archived = await t.call('updater', 'PUT', `/v1/conversations/${body.id}`, { form: { archived_at: '1700000000' } });
    expect(archived.body.archived_at).toBe(1700000000);
    expect((await t.call('updater', 'GET', '/v1/conversations?archived=true&contact_id=gina')).body.data).toHaveLength(1);
    const restored = await t.call('updater', 'PUT', `/v1/conversations/${body.id}`, { form: { archived_at: '' } });
    expect(restored.body.archived_at).toBeNull();
    expect((await t.call('updater', 'GET', '/v1/conversations?archived=true&contact_id=gina')).body.data).toHaveLength(0);
    expect((await t.call('updater', 'GET', '/v1/conversations?archived=false&contact_id=gina')).body.data).toHaveLength(1);
  });

  it('answers 200 with the unchanged conversation when no field is given', async () => {
    const { body } = await create('updater', { contact_id: 'hank' });
    const response = await t.call('updater', 'PUT', `/v1/conversations/${body.id}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual(body);
  });

  it('keeps every field of concurrent updates of different fields', async () => {
    const { body } = await create('updater', { contact_id: 'iris' });
    const path = `/v1/conversations/${body.id}`;
    await Promise.all([
      t.call('updater', 'PUT', path, { form: { is_muted: 'true' } }),
      t.call('updater', 'PUT', path, { form: { is_pinned: 'true' } }),
      t.call('updater', 'PUT', path, { form: { pinned_message_id: 'msg_9' } }),
      t.call('updater', 'PUT', path, { form: { archived_at: '1700000001' } }),
    ]);
    const after = await t.call('updater', 'GET', path);
    expect(after.body).toMatchObject({ is_muted: true, is_pinned: true, pinned_message_id: 'msg_9', archived_at: 1700000001 });
  });

  it.each([
    [{ is_muted: 'yes' }, 'is_muted'],
    [{ is_pinned: '1' }, 'is_pinned'],
    [{ archived_at: '-1' }, 'archived_at'],
    [{ archived_at: '1.5' }, 'archived_at'],
    [{ archived_at: 'soon' }, 'archived_at'],
    [{ pinned_message_id: 'two words' }, 'pinned_message_id'],
    [{ last_opened_at: 'yesterday' }, 'last_opened_at'],
    [{ last_opened_at: String(Math.floor(Date.now() / 1000) + 3600) }, 'last_opened_at'],
    [{ muted_until: 'soon' }, 'muted_until'],
    [{ is_muted: 'false', muted_until: String(Math.floor(Date.now() / 1000) + 3600) }, 'muted_until'],
    [{ contact_id: 'someone_else' }, 'contact_id'],
  ])('refuses %o', async (form, param) => {
    const { body } = await create('updater', { contact_id: 'jack' });
    const response = await t.call('updater', 'PUT', `/v1/conversations/${body.id}`, { form });
    expect(response.status).toBe(400);
    expect(response.body.error.param).toBe(param);
    expect((await t.call('updater', 'GET', `/v1/conversations/${body.id}`)).body).toEqual(body);
  });

  it.each([
    [{ is_muted: 'true' }, 'is_muted'],
    [{ archived_at: '1' }, 'archived_at'],
    [{ archived_at: -5 }, 'archived_at'],
  ])('refuses wrongly typed JSON %o', async (json, param) => {
    const { body } = await create('updater', { contact_id: 'kim' });
    const response = await t.call('updater', 'PUT', `/v1/conversations/${body.id}`, { json });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'parameter_invalid', param });
  });

  it("answers 404 for another user's conversation and changes nothing", async () => {
    const { body } = await create('owner', { contact_id: 'locked' });
    const response = await t.call('intruder', 'PUT', `/v1/conversations/${body.id}`, { form: { is_muted: 'true' } });
    expect(response.status).toBe(404);
    expect((await t.call('owner', 'GET', `/v1/conversations/${body.id}`)).body).toEqual(body);
  });
});

describe('DELETE /v1/conversations/:id', () => {
  it('deletes the conversation; a second delete and a get are 404', async () => {
    const { body } = await create('deleter', { contact_id: 'liam' });
    const response = await t.call('deleter', 'DELETE', `/v1/conversations/${body.id}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ id: body.id, deleted: true });
    expect((await t.call('deleter', 'DELETE', `/v1/conversations/${body.id}`)).status).toBe(404);
    expect((await t.call('deleter', 'GET', `/v1/conversations/${body.id}`)).status).toBe(404);
  });

  it("answers 404 for another user's conversation and keeps it", async () => {
    const { body } = await create('owner', { contact_id: 'kept' });
    expect((await t.call('intruder', 'DELETE', `/v1/conversations/${body.id}`)).status).toBe(404);
    expect((await t.call('owner', 'GET', `/v1/conversations/${body.id}`)).status).toBe(200);
  });
});
