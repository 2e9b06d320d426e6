import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type TestResponse } from '../support/api.js';
import { storedFilesOf, upload, uploadForm } from '../support/attachments.js';
import { sessionClient } from '../support/upload-sessions.js';

/**
 * Group membership from the token (docs/api.md, "Groups"): a group's conversation
 * is created, uploaded into and listed only with the group in the token's
 * groups claim; a refusal is 403 permission_error not_a_member and changes
 * nothing; a conversation already held stays its user's after they leave.
 */
let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t.close());

const MEMBER = ['team'];
const NOT_A_MEMBER = ['other'];

function expectNotAMember(response: TestResponse, param?: string) {
  expect(response.status).toBe(403);
  expect(response.body.error).toEqual({
    type: 'permission_error',
    code: 'not_a_member',
    message: 'You are not a member of group team',
    ...(param ? { param } : {}),
    request_id: response.headers.get('x-request-id'),
  });
}

/** A group conversation of `user`, created while a member. */
async function teamConversation(user: string): Promise<string> {
  const response = await t.call(user, 'POST', '/v1/conversations', { form: { group_id: 'team' }, groups: MEMBER });
  expect(response.status).toBe(201);
  return response.body.id;
}

const conversationsOf = async (user: string) => (await t.call(user, 'GET', '/v1/conversations', { groups: [] })).body.data;
const uploadsOf = async (user: string) => (await t.call(user, 'GET', '/v1/attachments', { groups: [] })).body.data;

describe('POST /v1/conversations with group_id', () => {
  it('needs the group in the token: 403 not_a_member, and no conversation is made', async () => {
    for (const groups of [undefined, [], NOT_A_MEMBER]) {
      expectNotAMember(
        await t.call('outsider', 'POST', '/v1/conversations', { form: { group_id: 'team' }, ...(groups ? { groups } : {}) }),
        'group_id',
      );
    }
    expect(await conversationsOf('outsider')).toEqual([]);
    const joined = await t.call('outsider', 'POST', '/v1/conversations', { json: { group_id: 'team' }, groups: ['family', 'team'] });
    expect(joined.status).toBe(201);
    expect(joined.body).toMatchObject({ group_id: 'team', contact_id: null });
  });

  it('refuses even a group conversation the user already holds once the group left the token', async () => {
    const id = await teamConversation('again');
    expectNotAMember(await t.call('again', 'POST', '/v1/conversations', { form: { group_id: 'team' }, groups: [] }), 'group_id');
    expect((await conversationsOf('again')).map((conversation: { id: string }) => conversation.id)).toEqual([id]);
  });

  it('needs no groups for a contact', async () => {
    expect((await t.call('loner', 'POST', '/v1/conversations', { form: { contact_id: 'alice' }, groups: [] })).status).toBe(201);
  });
});

describe('POST /v1/attachments into a group conversation', () => {
  it('needs the group in the token: 403 not_a_member, no record and no file left', async () => {
    const conversation = await teamConversation('uploader');
    const refused = await t.call('uploader', 'POST', '/v1/attachments', {
      body: uploadForm({ bytes: 'refused bytes', filename: 'no.txt' }, { conversation_id: conversation }),
      groups: NOT_A_MEMBER,
    });
    expectNotAMember(refused, 'conversation_id');
    expect(await uploadsOf('uploader')).toEqual([]);
    expect(await storedFilesOf(t.api.s3Endpoint, 'uploader')).toEqual([]);
    // Its conversation saw no activity.
    expect((await t.call('uploader', 'GET', `/v1/conversations/${conversation}`, { groups: [] })).body.last_active_at).toBeNull();

    const accepted = await t.call('uploader', 'POST', '/v1/attachments', {
      body: uploadForm({ bytes: 'member bytes', filename: 'yes.txt' }, { conversation_id: conversation }),
      groups: MEMBER,
    });
    expect(accepted.status).toBe(201);
    expect(await storedFilesOf(t.api.s3Endpoint, 'uploader')).toHaveLength(1);
  });

  it('still answers 400 resource_missing for a conversation that is not the user’s, member or not', async () => {
    const theirs = await teamConversation('owner');
    const response = await t.call('stranger', 'POST', '/v1/attachments', {
      body: uploadForm({ bytes: 'x' }, { conversation_id: theirs }),
      groups: MEMBER,
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'resource_missing', param: 'conversation_id' });
    expect(await storedFilesOf(t.api.s3Endpoint, 'stranger')).toEqual([]);
  });
});

describe('upload sessions into a group conversation', () => {
  const sessions = () => sessionClient(t);
  const start = (user: string, conversation: string, groups: string[]) =>
    t.call(user, 'POST', '/v1/upload_sessions', { json: { filename: 'clip.bin', file_size: 5, conversation_id: conversation }, groups });

  it('are refused at start without the group: 403 not_a_member', async () => {
    const conversation = await teamConversation('session-starter');
    expectNotAMember(await start('session-starter', conversation, NOT_A_MEMBER), 'conversation_id');
    expect(await storedFilesOf(t.api.s3Endpoint, 'session-starter')).toEqual([]);
  });

  it('are refused at complete once the group left the token: the session stays pending and nothing is assembled; completing as a member works', async () => {
    const conversation = await teamConversation('session-leaver');
    const started = await start('session-leaver', conversation, MEMBER);
    expect(started.status).toBe(201);
    const parts = await sessions().uploadAll('session-leaver', started.body, Buffer.from('bytes'));
    const complete = (groups: string[]) =>
      t.call('session-leaver', 'POST', `/v1/upload_sessions/${started.body.id}/complete`, { json: { parts }, groups });

    expectNotAMember(await complete([]));
    expect((await sessions().get('session-leaver', started.body.id)).body.status).toBe('pending');
    expect(await storedFilesOf(t.api.s3Endpoint, 'session-leaver')).toEqual([]);
    expect(await uploadsOf('session-leaver')).toEqual([]);

    const completed = await complete(MEMBER);
    expect(completed.status).toBe(201);
    expect(completed.body).toMatchObject({ conversation_id: conversation, file_size: 5 });
    // A repeat answers the user's own attachment, member or not.
    const repeated = await complete([]);
    expect(repeated.status).toBe(201);
    expect(repeated.body.id).toBe(completed.body.id);
  });
});

describe('GET /v1/attachments?conversation_id= of a group conversation', () => {
  it('needs the group in the token: 403 not_a_member for the user’s own group conversation', async () => {
    const conversation = await teamConversation('lister');
    // No groups claim at all: no groups.
    expectNotAMember(await upload(t, 'lister', { bytes: 'a' }, { conversation_id: conversation }), 'conversation_id');
    const uploaded = await t.call('lister', 'POST', '/v1/attachments', {
      body: uploadForm({ bytes: 'a' }, { conversation_id: conversation }),
      groups: MEMBER,
    });
    expect(uploaded.status).toBe(201);
    expectNotAMember(
      await t.call('lister', 'GET', `/v1/attachments?conversation_id=${conversation}`, { groups: NOT_A_MEMBER }),
      'conversation_id',
    );
    const listed = await t.call('lister', 'GET', `/v1/attachments?conversation_id=${conversation}`, { groups: MEMBER });
    expect(listed.status).toBe(200);
    // The team's thread: other tests' members upload into it too.
    expect(listed.body.data.map((attachment: { id: string }) => attachment.id)).toContain(uploaded.body.id);
  });

  it('lists nothing, rather than refusing, for another user’s group conversation', async () => {
    const theirs = await teamConversation('list-owner');
    const response = await t.call('list-stranger', 'GET', `/v1/attachments?conversation_id=${theirs}`, { groups: [] });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ has_more: false, data: [] });
  });
});

describe('leaving a group', () => {
  it('keeps the conversation and the user’s own uploads theirs to get, list, update and delete', async () => {
    const conversation = await teamConversation('leaver');
    const uploaded = await t.call('leaver', 'POST', '/v1/attachments', {
      body: uploadForm({ bytes: 'mine', filename: 'mine.txt' }, { conversation_id: conversation }),
      groups: MEMBER,
    });
    expect(uploaded.status).toBe(201);

    // From here on the token no longer lists the group.
    const asFormerMember = (method: string, path: string, init: Parameters<TestApi['call']>[3] = {}) =>
      t.call('leaver', method, path, { ...init, groups: NOT_A_MEMBER });
    expect((await asFormerMember('GET', `/v1/conversations/${conversation}`)).status).toBe(200);
    expect((await asFormerMember('GET', '/v1/conversations?group_id=team')).body.data.map((item: { id: string }) => item.id)).toEqual([
      conversation,
    ]);
    const updated = await asFormerMember('PUT', `/v1/conversations/${conversation}`, { form: { is_pinned: 'true' } });
    expect(updated.status).toBe(200);
    expect(updated.body.is_pinned).toBe(true);
    expect((await asFormerMember('GET', '/v1/attachments')).body.data.map((item: { id: string }) => item.id)).toEqual([uploaded.body.id]);
    expect((await asFormerMember('GET', `/v1/attachments/${uploaded.body.id}`)).status).toBe(200);
    const renamed = await asFormerMember('PUT', `/v1/attachments/${uploaded.body.id}`, { form: { filename: 'still-mine.txt' } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.filename).toBe('still-mine.txt');
    expect((await asFormerMember('GET', `/v1/attachments/${uploaded.body.id}`)).body.filename).toBe('still-mine.txt');
    expect((await asFormerMember('DELETE', `/v1/attachments/${uploaded.body.id}`)).body).toEqual({ id: uploaded.body.id, deleted: true });
    expect((await asFormerMember('GET', `/v1/attachments/${uploaded.body.id}`)).status).toBe(404);
    expect((await asFormerMember('GET', '/v1/attachments')).body.data).toEqual([]);
    expect((await asFormerMember('DELETE', `/v1/conversations/${conversation}`)).body).toEqual({ id: conversation, deleted: true });
  });
});

describe('a malformed groups claim', () => {
  const tokenWith = (groups: unknown) =>
    new SignJWT({ groups })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('claimant')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(t.api.authSecret));

  it.each([
    ['a string', 'team'],
    ['an array holding a number', ['team', 1]],
    ['an id with whitespace', ['my team']],
    ['257 ids', Array.from({ length: 257 }, (_, i) => `g${i}`)],
  ])('is 401 token_invalid with WWW-Authenticate: %s', async (_, groups) => {
    const response = await t.call(null, 'GET', '/v1/conversations', { headers: { authorization: `Bearer ${await tokenWith(groups)}` } });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(response.body.error).toMatchObject({
      type: 'authentication_error',
      code: 'token_invalid',
      message: expect.stringMatching(/^Token groups must /),
    });
  });
});
