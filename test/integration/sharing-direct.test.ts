import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { download, sha256, uploadForm } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import {
  ATTACHMENT_FIELDS,
  type Attachment,
  expectError,
  expectNotFound,
  expectNotOwner,
  freshId,
  idsOf,
  type Member,
  sharingApi,
  type Thread,
} from '../support/sharing.js';

/**
 * Sharing in a direct thread (docs/api.md, "Sharing"): A's conversation with
 * contact B and B's conversation with contact A are the two sides of one
 * thread. Every file uploaded into either side is seen by both, in each
 * reader's view through their own side; only its uploader renames or deletes
 * it; the fan-out gives the contact a side, unread, within seconds; a third
 * user sees nothing of it. Each test has users of its own.
 */
const s = sharingApi();
const withContact = (who: Member): Thread => ({ contact_id: who.id });
const users = () => ({ a: { id: freshId('a') }, b: { id: freshId('b') }, c: { id: freshId('c') } });

/**
 * What two readers' views of one attachment share: all but the link, signed afresh on every answer (and held
 * from the contact until the scan says clean), the reader's side, and the scan's state, which moves meanwhile.
 */
const sharedPart = ({ file_url: _url, file_url_expires_at: _expiry, conversation_id: _side, scan_status: _scan, ...rest }: Attachment) =>
  rest;

/** A's side with contact B and one file A uploaded into it. */
async function aSharesWithB(a: Member, b: Member, bytes: Buffer = randomBytes(64)) {
  const sideA = await s.openSide(a, withContact(b));
  expect(sideA.status).toBe(201);
  const uploaded = await s.upload(a, sideA.body.id, { bytes, filename: 'photo.png', type: 'image/png' });
  return { sideA: sideA.body, uploaded, bytes };
}

describe('an upload into a direct thread', () => {
  it('is seen by the contact: 200 with uploaded_by the uploader and the contact’s own side (null before it exists), and the same bytes', async () => {
    const { a, b } = users();
    const { sideA, uploaded, bytes } = await aSharesWithB(a, b);
    expect(Object.keys(uploaded)).toEqual(ATTACHMENT_FIELDS);
    expect(uploaded).toMatchObject({ conversation_id: sideA.id, uploaded_by: a.id, filename: 'photo.png', file_type: 'image/png' });

    const early = await s.attachment(b, uploaded.id);
    expect(early.status, early.text).toBe(200);
    expect(Object.keys(early.body)).toEqual(ATTACHMENT_FIELDS);
    expect(sharedPart(early.body)).toEqual(sharedPart(uploaded));

    const sideB = await s.sideActiveAt(b, withContact(a), uploaded.created_at);
    // B's first read came before or after the fan-out made B's side: null, or that side; never A's.
    expect([null, sideB.id]).toContain(early.body.conversation_id);
    const later = await s.scanned(b, uploaded.id);
    expect(later).toMatchObject({ ...sharedPart(uploaded), conversation_id: sideB.id });
    const file = await download(later.file_url);
    expect(file.status).toBe(200);
    expect(sha256(file.bytes)).toBe(sha256(bytes));
    expect(file.contentType).toBe('image/png');
  });

  it('creates the contact’s side through the fan-out: contact_id the uploader, last_active_at and created_at the upload’s time, never opened, unread', async () => {
    const { a, b } = users();
    const { sideA, uploaded } = await aSharesWithB(a, b);
    const sideB = await s.sideActiveAt(b, withContact(a), uploaded.created_at);
    expect(sideB.id).not.toBe(sideA.id);
    expect(sideB).toMatchObject({
      contact_id: a.id,
      group_id: null,
      is_pinned: false,
      is_muted: false,
      archived_at: null,
      last_active_at: uploaded.created_at,
      last_opened_at: null,
      created_at: uploaded.created_at,
    });
    expect(idsOf(await s.sides(b, withContact(a), 'unread=true'))).toEqual([sideB.id]);
    expect(await s.conversation(b, sideB.id)).toEqual(sideB);
  });

  it('leaves the uploader’s own side read: last_active_at and last_opened_at both the upload’s time', async () => {
    const { a, b } = users();
    const { sideA, uploaded } = await aSharesWithB(a, b);
    expect(await s.conversation(a, sideA.id)).toEqual({
      ...sideA,
      last_active_at: uploaded.created_at,
      last_opened_at: uploaded.created_at,
    });
    expect(await s.sides(a, withContact(b), 'unread=true')).toEqual([]);
    expect(idsOf(await s.sides(a, withContact(b), 'unread=false'))).toEqual([sideA.id]);
    // B's side is unread all the same, once the fan-out got there.
    await s.sideActiveAt(b, withContact(a), uploaded.created_at);
    expect(await s.sides(a, withContact(b), 'unread=true')).toEqual([]);
  });

  it('makes the fan-out’s side THE contact’s conversation: the contact’s later POST answers 200 with it', async () => {
    const { a, b } = users();
    const { uploaded } = await aSharesWithB(a, b);
    const sideB = await s.sideActiveAt(b, withContact(a), uploaded.created_at);
    const posted = await s.openSide(b, withContact(a));
    expect(posted.status).toBe(200);
    expect(posted.body).toEqual(sideB);
    expect(idsOf(await s.sides(b, withContact(a)))).toEqual([sideB.id]);
  });

  it('ends in exactly one conversation of the contact when their POST races the fan-out, round after round', async () => {
    // B's POST goes out at once and then later and later after the upload, across the fan-out's reaction time.
    for (const wave of [0, 1]) {
      await Promise.all(
        Array.from({ length: 12 }, async (_, index) => {
          const { a, b } = users();
          const sideA = await s.openSide(a, withContact(b));
          const [uploaded, posted] = await Promise.all([
            s.upload(a, sideA.body.id),
            delay((wave * 12 + index) * 20).then(() => s.openSide(b, withContact(a))),
          ]);
          const sideB = await s.sideActiveAt(b, withContact(a), uploaded.created_at);
          expect(sideB.id).toBe(posted.body.id);
          expect(sideB.last_active_at).toBe(uploaded.created_at);
          const everything = await s.call(b, 'GET', '/v1/conversations?limit=100');
          expect(idsOf(everything.body.data)).toEqual([sideB.id]);
        }),
      );
    }
  });
});

describe('who may change a shared attachment', () => {
  it('refuses the contact’s rename and delete with 403 not_owner, and nothing changes for anyone', async () => {
    const { a, b } = users();
    const { uploaded, bytes } = await aSharesWithB(a, b);
    expectNotOwner(await s.call(b, 'PUT', `/v1/attachments/${uploaded.id}`, { form: { filename: 'taken.png' } }));
    expectNotOwner(await s.call(b, 'DELETE', `/v1/attachments/${uploaded.id}`));
    for (const reader of [a, b]) {
      const seen = { body: await s.scanned(reader, uploaded.id) };
      expect(seen.body.filename).toBe('photo.png');
      const file = await download(seen.body.file_url);
      expect(file.status).toBe(200);
      expect(sha256(file.bytes)).toBe(sha256(bytes));
      expect(file.contentDisposition).toBe(`attachment; filename="photo.png"; filename*=UTF-8''photo.png`);
    }
    expect(idsOf((await s.list(a)).data)).toEqual([uploaded.id]);
  });

  it('answers a stranger’s GET, PUT and DELETE exactly like a missing id (404), and shows the stranger nothing of the thread', async () => {
    const { a, b, c } = users();
    const { sideA, uploaded } = await aSharesWithB(a, b);
    const missing = 'att_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const withoutRequestId = (error: Record<string, unknown>) => ({ ...error, request_id: undefined });
    for (const [method, init] of [
      ['GET', {}],
      ['PUT', { form: { filename: 'stolen.png' } }],
      ['DELETE', {}],
    ] as const) {
      const theirs = await s.call(c, method, `/v1/attachments/${uploaded.id}`, init);
      expectNotFound(theirs);
      const none = await s.call(c, method, `/v1/attachments/${missing}`, init);
      expect(withoutRequestId(theirs.body.error)).toEqual({
        ...withoutRequestId(none.body.error),
        message: `No such attachment: ${uploaded.id}`,
      });
    }
    expect(await s.list(c)).toEqual({ has_more: false, data: [] });
    expect(await s.list(c, `conversation_id=${sideA.id}`)).toEqual({ has_more: false, data: [] });
    expect(await s.sides(c, withContact(a))).toEqual([]);
    expect(await s.sides(c, withContact(b))).toEqual([]);
    expect((await s.attachment(a, uploaded.id)).body.filename).toBe('photo.png');
  });

  it('shows the uploader’s rename to the contact, in GET, in the thread list and in the download’s name', async () => {
    const { a, b } = users();
    const { uploaded } = await aSharesWithB(a, b);
    const renamed = await s.call(a, 'PUT', `/v1/attachments/${uploaded.id}`, { form: { filename: 'holiday.png' } });
    expect(renamed.status).toBe(200);
    const seen = { body: await s.scanned(b, uploaded.id) };
    expect(seen.body.filename).toBe('holiday.png');
    expect((await download(seen.body.file_url)).contentDisposition).toBe(
      `attachment; filename="holiday.png"; filename*=UTF-8''holiday.png`,
    );
    const sideB = await s.sideActiveAt(b, withContact(a), uploaded.created_at);
    expect((await s.list(b, `conversation_id=${sideB.id}`)).data.map((item) => item.filename)).toEqual(['holiday.png']);
  });

  it('removes the uploader’s deleted attachment for the contact: 404, and off the thread list', async () => {
    const { a, b } = users();
    const { uploaded } = await aSharesWithB(a, b);
    const sideB = await s.sideActiveAt(b, withContact(a), uploaded.created_at);
    expect((await s.call(a, 'DELETE', `/v1/attachments/${uploaded.id}`)).body).toEqual({ id: uploaded.id, deleted: true });
    expectNotFound(await s.attachment(b, uploaded.id));
    expect(await s.list(b, `conversation_id=${sideB.id}`)).toEqual({ has_more: false, data: [] });
  });
});

describe('thread lists', () => {
  const { a, b } = users();
  let sideA: string;
  let sideB: string;
  /** Oldest first: A, B, A, B, A. */
  const uploads: Attachment[] = [];
  const newestFirst = () => idsOf([...uploads].reverse());

  beforeAll(async () => {
    sideA = (await s.openSide(a, withContact(b))).body.id;
    sideB = (await s.openSide(b, withContact(a))).body.id;
    for (let index = 0; index < 5; index += 1) {
      const [uploader, side] = index % 2 === 0 ? [a, sideA] : [b, sideB];
      uploads.push(await s.upload(uploader, side, { bytes: `file ${index}`, filename: `f${index}.txt` }));
    }
    // Each reader downloads the other's files: once their scans say clean.
    for (const upload of uploads) await s.scanned(upload.uploaded_by === a.id ? b : a, upload.id);
  });

  it('list both users’ uploads newest first from either side, each item naming its uploader and the reader’s own side', async () => {
    for (const [reader, side] of [
      [a, sideA],
      [b, sideB],
    ] as const) {
      const page = await s.list(reader, `conversation_id=${side}`);
      expect(page.has_more).toBe(false);
      expect(idsOf(page.data)).toEqual(newestFirst());
      expect(page.data.map((item) => item.conversation_id)).toEqual(uploads.map(() => side));
      expect(page.data.map((item) => item.uploaded_by)).toEqual([a.id, b.id, a.id, b.id, a.id]);
      for (const item of page.data) expect((await download(item.file_url)).status).toBe(200);
    }
  });

  it('page with starting_after and ending_before whoever uploaded the cursor’s item', async () => {
    const ids = newestFirst();
    const page = async (reader: Member, side: string, cursor: string) => {
      const body = await s.list(reader, `conversation_id=${side}&limit=2&${cursor}`);
      return { has_more: body.has_more, ids: idsOf(body.data) };
    };
    // ids[1] and ids[3] are B's, ids[0], ids[2] and ids[4] are A's.
    expect(await page(a, sideA, `starting_after=${ids[1]}`)).toEqual({ has_more: true, ids: ids.slice(2, 4) });
    expect(await page(a, sideA, `starting_after=${ids[3]}`)).toEqual({ has_more: false, ids: ids.slice(4) });
    expect(await page(a, sideA, `ending_before=${ids[3]}`)).toEqual({ has_more: true, ids: ids.slice(1, 3) });
    expect(await page(b, sideB, `starting_after=${ids[0]}`)).toEqual({ has_more: true, ids: ids.slice(1, 3) });
    expect(await page(b, sideB, `ending_before=${ids[4]}`)).toEqual({ has_more: true, ids: ids.slice(2, 4) });
    expect(await page(b, sideB, `ending_before=${ids[2]}`)).toEqual({ has_more: false, ids: ids.slice(0, 2) });
    const first = await s.list(b, `conversation_id=${sideB}&limit=2`);
    expect({ has_more: first.has_more, ids: idsOf(first.data) }).toEqual({ has_more: true, ids: ids.slice(0, 2) });
  });

  it('list only the user’s own uploads without conversation_id', async () => {
    const ids = newestFirst();
    expect(idsOf((await s.list(a)).data)).toEqual([ids[0], ids[2], ids[4]]);
    expect(idsOf((await s.list(b)).data)).toEqual([ids[1], ids[3]]);
  });
});

describe('deleting a side of a direct thread', () => {
  it('keeps the contact’s side and the contact’s uploads; the deleter’s uploads are gone for the contact within seconds', async () => {
    const { a, b } = users();
    const sideB = (await s.openSide(b, withContact(a))).body;
    const fromB = await s.upload(b, sideB.id, { bytes: 'kept bytes', filename: 'kept.txt' });
    // A's side is the one B's upload made: no fan-out towards A is left to come after A deletes it.
    const sideA = await s.sideActiveAt(a, withContact(b), fromB.created_at);
    const fromA = await s.upload(a, sideA.id);
    const fromAAgain = await s.upload(a, sideA.id);
    const sideBBefore = await s.sideActiveAt(b, withContact(a), fromAAgain.created_at);

    expect((await s.call(a, 'DELETE', `/v1/conversations/${sideA.id}`)).body).toEqual({ id: sideA.id, deleted: true });

    expect(await s.conversation(b, sideB.id)).toEqual(sideBBefore);
    const listed = await eventually(
      () => s.list(b, `conversation_id=${sideB.id}`),
      (page) => page.data.length === 1,
    );
    expect(idsOf(listed.data)).toEqual([fromB.id]);
    for (const gone of [fromA, fromAAgain]) {
      expectNotFound(
        await eventually(
          () => s.attachment(b, gone.id),
          (response) => response.status === 404,
        ),
      );
      expectNotFound(await s.attachment(a, gone.id));
    }
    const kept = await s.attachment(b, fromB.id);
    expect(kept.body).toMatchObject({ conversation_id: sideB.id, uploaded_by: b.id });
    expect(sha256((await download(kept.body.file_url)).bytes)).toBe(sha256('kept bytes'));
    expect(idsOf((await s.list(b)).data)).toEqual([fromB.id]);
    // A is still B's contact: A sees B's file, through no side until A opens one again.
    expect((await s.attachment(a, fromB.id)).body).toMatchObject({ conversation_id: null, uploaded_by: b.id });

    const reopened = await s.openSide(a, withContact(b));
    expect(reopened.status).toBe(201);
    expect(reopened.body.id).not.toBe(sideA.id);
    expect(reopened.body).toMatchObject({ last_active_at: null, last_opened_at: null });
    const shown = await s.list(a, `conversation_id=${reopened.body.id}`);
    expect(idsOf(shown.data)).toEqual([fromB.id]);
    expect(shown.data[0]!.conversation_id).toBe(reopened.body.id);
  });

  it('leaves the contact seeing the other’s file with conversation_id null, until their new side shows it again', async () => {
    const { a, b } = users();
    const { uploaded } = await aSharesWithB(a, b);
    const sideB = await s.sideActiveAt(b, withContact(a), uploaded.created_at);
    expect((await s.call(b, 'DELETE', `/v1/conversations/${sideB.id}`)).status).toBe(200);

    const sideless = await s.attachment(b, uploaded.id);
    expect(sideless.status).toBe(200);
    expect(sideless.body).toMatchObject({ conversation_id: null, uploaded_by: a.id });
    expect(await s.sides(b, withContact(a))).toEqual([]);

    const reopened = await s.openSide(b, withContact(a));
    expect(reopened.status).toBe(201);
    expect(reopened.body).toMatchObject({ contact_id: a.id, last_active_at: null, last_opened_at: null });
    expect((await s.attachment(b, uploaded.id)).body.conversation_id).toBe(reopened.body.id);
    expect(idsOf((await s.list(b, `conversation_id=${reopened.body.id}`)).data)).toEqual([uploaded.id]);
  });
});

describe('a conversation with oneself', () => {
  it('is a thread of one: the upload is the user’s, the side stays read, and no second side appears', async () => {
    const { a, b } = users();
    const self = await s.openSide(a, withContact(a));
    expect(self.status).toBe(201);
    const uploaded = await s.upload(a, self.body.id);
    expect(uploaded).toMatchObject({ conversation_id: self.body.id, uploaded_by: a.id });

    // A later upload's fan-out arriving says the stream got past this one's.
    const { uploaded: later } = await aSharesWithB(a, b);
    await s.sideActiveAt(b, withContact(a), later.created_at);

    expect(await s.sides(a, withContact(a))).toEqual([
      { ...self.body, last_active_at: uploaded.created_at, last_opened_at: uploaded.created_at },
    ]);
    expect(await s.sides(a, withContact(a), 'unread=true')).toEqual([]);
    expect(idsOf((await s.list(a, `conversation_id=${self.body.id}`)).data)).toEqual([uploaded.id]);
    expect((await s.openSide(a, withContact(a))).status).toBe(200);
    expectNotFound(await s.attachment(b, uploaded.id));
  });
});

describe('another user’s conversation id as conversation_id', () => {
  it('is 400 resource_missing on upload and an empty list on GET, for the contact and a stranger alike, storing nothing', async () => {
    const { a, b, c } = users();
    const { sideA, uploaded } = await aSharesWithB(a, b);
    for (const reader of [b, c]) {
      const refused = await s.call(reader, 'POST', '/v1/attachments', {
        body: uploadForm({ bytes: 'x', filename: 'x.txt' }, { conversation_id: sideA.id }),
      });
      expectError(refused, 400, { type: 'invalid_request_error', code: 'resource_missing', param: 'conversation_id' });
      expect(await s.list(reader, `conversation_id=${sideA.id}`)).toEqual({ has_more: false, data: [] });
      expect(await s.list(reader)).toEqual({ has_more: false, data: [] });
    }
    expect(idsOf((await s.list(a, `conversation_id=${sideA.id}`)).data)).toEqual([uploaded.id]);
    expect((await s.conversation(a, sideA.id)).last_active_at).toBe(uploaded.created_at);
  });
});
