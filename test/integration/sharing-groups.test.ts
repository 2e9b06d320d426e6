import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { download, sha256, uploadForm } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import {
  type Attachment,
  type Conversation,
  expectError,
  expectNotAMember,
  expectNotFound,
  expectNotOwner,
  freshId,
  idsOf,
  type Member,
  sharingApi,
} from '../support/sharing.js';
import { MIB, sessionClient } from '../support/upload-sessions.js';

/**
 * Sharing in a group thread (docs/api.md, "Sharing"): a conversation with
 * group_id G is its user's side of G's thread, and G's members are the users
 * whose token lists G. Here G has members A and B (each with a side) and D
 * (no side); E held a side and left (their token no longer lists G); C never
 * was a member. Each test has a group and users of its own.
 */
const s = sharingApi();

interface Group {
  g: string;
  a: Member;
  b: Member;
  d: Member;
  /** E, as their token is now: without G. */
  e: Member;
  c: Member;
  sideA: Conversation;
  sideB: Conversation;
  sideE: Conversation;
  /** What E uploaded while still a member. */
  fromE: Attachment;
}

/** A group G, the sides of A, B and E (who then leaves, after an upload), D a member without a side, C a stranger. */
async function group(): Promise<Group> {
  const g = freshId('g');
  const member = (name: string): Member => ({ id: freshId(name), groups: ['elsewhere', g] });
  const [a, b, d] = [member('a'), member('b'), member('d')];
  const eWhileMember = member('e');
  const e: Member = { id: eWhileMember.id, groups: ['elsewhere'] };
  const c: Member = { id: freshId('c'), groups: ['elsewhere'] };
  const [sideA, sideB, sideE] = await Promise.all(
    [a, b, eWhileMember].map(async (who) => {
      const opened = await s.openSide(who, { group_id: g });
      expect(opened.status).toBe(201);
      return opened.body;
    }),
  );
  const fromE = await s.upload(eWhileMember, sideE!.id, { bytes: 'from e', filename: 'e.txt' });
  return { g, a, b, d, e, c, sideA: sideA!, sideB: sideB!, sideE: sideE!, fromE };
}

describe('an upload into a group thread', () => {
  it('reaches the other members’ sides through the fan-out: last_active_at the upload’s time, unread; the uploader’s side stays read', async () => {
    const { g, a, b, sideA, sideB } = await group();
    const uploaded = await s.upload(a, sideA.id);
    expect(uploaded).toMatchObject({ conversation_id: sideA.id, uploaded_by: a.id });

    const activeB = await s.sideActiveAt(b, { group_id: g }, uploaded.created_at);
    expect(activeB).toEqual({ ...sideB, last_active_at: uploaded.created_at });
    expect(idsOf(await s.sides(b, { group_id: g }, 'unread=true'))).toEqual([sideB.id]);
    expect(await s.conversation(a, sideA.id)).toEqual({
      ...sideA,
      last_active_at: uploaded.created_at,
      last_opened_at: uploaded.created_at,
    });
    expect(await s.sides(a, { group_id: g }, 'unread=true')).toEqual([]);
  });

  it('is seen by every current member, in each one’s view through their own side, and by nobody else', async () => {
    const { a, b, d, e, c, sideA, sideB, fromE } = await group();
    const bytes = randomBytes(100);
    const uploaded = await s.upload(a, sideA.id, { bytes, filename: 'plan.pdf', type: 'application/pdf' });

    for (const [reader, side] of [
      [a, sideA.id],
      [b, sideB.id],
      [d, null],
    ] as const) {
      // Another member's link comes once the scan says clean.
      const seen = { body: await s.scanned(reader, uploaded.id) };
      expect(seen.body).toMatchObject({
        id: uploaded.id,
        filename: 'plan.pdf',
        uploaded_by: a.id,
        created_at: uploaded.created_at,
        conversation_id: side,
      });
      expect(sha256((await download(seen.body.file_url)).bytes)).toBe(sha256(bytes));
      // E's upload, made while E was a member, is the thread's as well.
      expect((await s.attachment(reader, fromE.id)).body).toMatchObject({ uploaded_by: e.id, conversation_id: side });
    }
    for (const outsider of [c, e]) expectNotFound(await s.attachment(outsider, uploaded.id));
    // A member who leaves sees it no more; the token says who is a member, at every request.
    expectNotFound(await s.attachment({ id: b.id }, uploaded.id));
  });

  it('lists every member’s uploads newest first from each side, each item naming the reader’s side', async () => {
    const { a, b, sideA, sideB, fromE } = await group();
    const fromA = await s.upload(a, sideA.id);
    const fromB = await s.upload(b, sideB.id);
    for (const [reader, side] of [
      [a, sideA.id],
      [b, sideB.id],
    ] as const) {
      const page = await s.list(reader, `conversation_id=${side}`);
      expect(idsOf(page.data)).toEqual([fromB.id, fromA.id, fromE.id]);
      expect(page.data.map((item) => item.conversation_id)).toEqual([side, side, side]);
      const second = await s.list(reader, `conversation_id=${side}&limit=1&starting_after=${fromB.id}`);
      expect({ has_more: second.has_more, ids: idsOf(second.data) }).toEqual({ has_more: true, ids: [fromA.id] });
    }
    expect(idsOf((await s.list(a)).data)).toEqual([fromA.id]);
  });

  it('refuses rename and delete by another member with 403 not_owner, by a former member or a stranger with 404; nothing changes', async () => {
    const { a, b, d, e, c, sideA } = await group();
    const uploaded = await s.upload(a, sideA.id, { bytes: 'mine', filename: 'mine.txt' });
    for (const member of [b, d]) {
      expectNotOwner(await s.call(member, 'PUT', `/v1/attachments/${uploaded.id}`, { form: { filename: 'theirs.txt' } }));
      expectNotOwner(await s.call(member, 'DELETE', `/v1/attachments/${uploaded.id}`));
    }
    for (const outsider of [e, c]) {
      expectNotFound(await s.call(outsider, 'PUT', `/v1/attachments/${uploaded.id}`, { form: { filename: 'theirs.txt' } }));
      expectNotFound(await s.call(outsider, 'DELETE', `/v1/attachments/${uploaded.id}`));
    }
    for (const reader of [a, b, d]) expect((await s.attachment(reader, uploaded.id)).body.filename).toBe('mine.txt');
  });
});

describe('a member without a side', () => {
  it('gets none from the fan-out, and a POST then makes one, with last_active_at null, that shows the thread', async () => {
    const { g, a, b, d, sideA, fromE } = await group();
    const uploaded = await s.upload(a, sideA.id);
    // B's side got this upload's activity: the fan-out is past it, and had its chance to give D a side.
    await s.sideActiveAt(b, { group_id: g }, uploaded.created_at);
    expect(await s.sides(d, { group_id: g })).toEqual([]);
    expect((await s.call(d, 'GET', '/v1/conversations')).body.data).toEqual([]);
    expect((await s.attachment(d, uploaded.id)).body.conversation_id).toBeNull();

    const opened = await s.openSide(d, { group_id: g });
    expect(opened.status).toBe(201);
    expect(opened.body).toMatchObject({ group_id: g, contact_id: null, last_active_at: null, last_opened_at: null });
    expect((await s.attachment(d, uploaded.id)).body.conversation_id).toBe(opened.body.id);
    const page = await s.list(d, `conversation_id=${opened.body.id}`);
    expect(idsOf(page.data)).toEqual([uploaded.id, fromE.id]);
    expect(page.data.map((item) => item.conversation_id)).toEqual([opened.body.id, opened.body.id]);
  });

  it('cannot use another member’s side: upload 400 resource_missing, thread list empty', async () => {
    const { d, sideA, fromE } = await group();
    const refused = await s.call(d, 'POST', '/v1/attachments', { body: uploadForm({ bytes: 'x' }, { conversation_id: sideA.id }) });
    expectError(refused, 400, { type: 'invalid_request_error', code: 'resource_missing', param: 'conversation_id' });
    expect(await s.list(d, `conversation_id=${sideA.id}`)).toEqual({ has_more: false, data: [] });
    expect(await s.list(d)).toEqual({ has_more: false, data: [] });
    expect((await s.attachment(d, fromE.id)).status).toBe(200);
  });
});

describe('deleting a side of a group thread', () => {
  it('removes the deleter’s uploads for every member within seconds, and keeps the other sides and their uploads', async () => {
    const { g, a, b, d, sideA, sideB, fromE } = await group();
    const fromA = await s.upload(a, sideA.id);
    const fromB = await s.upload(b, sideB.id);
    expect((await s.call(a, 'DELETE', `/v1/conversations/${sideA.id}`)).status).toBe(200);

    const listed = await eventually(
      () => s.list(b, `conversation_id=${sideB.id}`),
      (page) => page.data.length === 2,
    );
    expect(idsOf(listed.data)).toEqual([fromB.id, fromE.id]);
    for (const reader of [a, b, d]) expectNotFound(await s.attachment(reader, fromA.id));
    expect((await s.attachment(a, fromB.id)).body).toMatchObject({ uploaded_by: b.id, conversation_id: null });
    expect(await s.sides(a, { group_id: g })).toEqual([]);
    expect((await s.conversation(b, sideB.id)).id).toBe(sideB.id);
  });
});

describe('a former member', () => {
  it('is refused the thread list of the side they still hold (403 not_a_member) and others’ files (404), and keeps their side and own uploads', async () => {
    const { g, a, e, sideA, sideE, fromE } = await group();
    const fromA = await s.upload(a, sideA.id);

    expectNotAMember(await s.call(e, 'GET', `/v1/attachments?conversation_id=${sideE.id}`), 'conversation_id');
    // Only for a side they hold: another member's side reveals nothing.
    expect(await s.list(e, `conversation_id=${sideA.id}`)).toEqual({ has_more: false, data: [] });
    expectNotFound(await s.attachment(e, fromA.id));
    expect((await s.attachment(e, fromE.id)).body).toMatchObject({ uploaded_by: e.id, conversation_id: sideE.id, filename: 'e.txt' });
    expect(idsOf((await s.list(e)).data)).toEqual([fromE.id]);

    expect((await s.call(e, 'GET', `/v1/conversations/${sideE.id}`)).status).toBe(200);
    const pinned = await s.call(e, 'PUT', `/v1/conversations/${sideE.id}`, { form: { is_pinned: 'true' } });
    expect(pinned.status).toBe(200);
    expect(pinned.body).toMatchObject({ id: sideE.id, group_id: g, is_pinned: true });
    expect((await s.call(e, 'DELETE', `/v1/conversations/${sideE.id}`)).body).toEqual({ id: sideE.id, deleted: true });
    expect((await s.call(e, 'GET', `/v1/conversations/${sideE.id}`)).status).toBe(404);
  });

  it('may rename their own upload, which the members then see', async () => {
    const { a, e, fromE } = await group();
    const renamed = await s.call(e, 'PUT', `/v1/attachments/${fromE.id}`, { form: { filename: 'renamed.txt' } });
    expect(renamed.status).toBe(200);
    expect((await s.attachment(a, fromE.id)).body.filename).toBe('renamed.txt');
  });
});

describe('an upload session into a group side', () => {
  const sessions = () => sessionClient(s.t());
  const start = (who: Member, conversationId: string, fileSize: number) =>
    s.call(who, 'POST', '/v1/upload_sessions', { json: { filename: 'clip.bin', file_size: fileSize, conversation_id: conversationId } });
  const complete = (who: Member, sessionId: string, parts: unknown) =>
    s.call(who, 'POST', `/v1/upload_sessions/${sessionId}/complete`, { json: { parts } });

  it('shares its completed attachment exactly as an upload: the members see it, the other sides get the activity, the uploader’s stays read', async () => {
    const { g, a, b, d, c, sideA, sideB } = await group();
    const bytes = randomBytes(MIB + 17);
    const started = await start(a, sideA.id, bytes.length);
    expect(started.status, started.text).toBe(201);
    const completed = await complete(a, started.body.id, await sessions().uploadAll(a.id, started.body, bytes));
    expect(completed.status, completed.text).toBe(201);
    const attachment: Attachment = completed.body;
    expect(attachment).toMatchObject({ conversation_id: sideA.id, uploaded_by: a.id, file_size: bytes.length });

    expect(await s.conversation(a, sideA.id)).toMatchObject({
      last_active_at: attachment.created_at,
      last_opened_at: attachment.created_at,
    });
    const activeB = await s.sideActiveAt(b, { group_id: g }, attachment.created_at);
    expect(activeB).toEqual({ ...sideB, last_active_at: attachment.created_at });
    for (const [reader, side] of [
      [b, sideB.id],
      [d, null],
    ] as const) {
      const seen = { body: await s.scanned(reader, attachment.id) };
      expect(seen.body).toMatchObject({ id: attachment.id, uploaded_by: a.id, conversation_id: side });
      expect(sha256((await download(seen.body.file_url)).bytes)).toBe(sha256(bytes));
    }
    expect(idsOf((await s.list(b, `conversation_id=${sideB.id}`)).data)).toContain(attachment.id);
    expectNotFound(await s.attachment(c, attachment.id));
  });

  it('needs the membership at start and again at complete: 403 not_a_member, and nothing reaches the thread', async () => {
    const { g, a, b, sideA, sideB, fromE } = await group();
    const leftG: Member = { id: a.id, groups: ['elsewhere'] };
    expectNotAMember(await start(leftG, sideA.id, 5), 'conversation_id');

    const started = await start(a, sideA.id, 5);
    expect(started.status).toBe(201);
    const parts = await sessions().uploadAll(a.id, started.body, Buffer.from('bytes'));
    expectNotAMember(await complete(leftG, started.body.id, parts));
    expect((await sessions().get(a.id, started.body.id)).body.status).toBe('pending');
    expect(idsOf((await s.list(b, `conversation_id=${sideB.id}`)).data)).toEqual([fromE.id]);
    // A's own upload would have marked A's side read.
    expect((await s.conversation(a, sideA.id)).last_opened_at).toBeNull();
    expect(await s.list(a)).toEqual({ has_more: false, data: [] });

    const completed = await complete(a, started.body.id, parts);
    expect(completed.status).toBe(201);
    await s.sideActiveAt(b, { group_id: g }, completed.body.created_at);
    expect(idsOf((await s.list(b, `conversation_id=${sideB.id}`)).data)).toEqual([completed.body.id, fromE.id]);
  });
});
