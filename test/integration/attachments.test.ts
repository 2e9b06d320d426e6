import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userFilesPrefix } from '../../shared/files/keys.js';
import { type CallInit, startTestApi, type TestApi } from '../support/api.js';
import { conversationOf, download, fileKeyOf, sha256, storedFileKeys, upload } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import { ATTACHMENT_FIELDS } from '../support/sharing.js';

let t: TestApi;

beforeAll(async () => {
  t = await startTestApi();
});
afterAll(async () => {
  await t?.close();
});

const now = () => Math.floor(Date.now() / 1000);

describe('upload', () => {
  it('answers 201 with the attachment object and keeps the exact bytes behind file_url', async () => {
    const bytes = randomBytes(5000);
    const before = now();
    const response = await upload(t, 'alice', { bytes, filename: 'photo.png', type: 'image/png' });
    expect(response.status).toBe(201);
    expect(Object.keys(response.body)).toEqual(ATTACHMENT_FIELDS);
    expect(response.body).toMatchObject({
      message_id: null,
      conversation_id: null,
      filename: 'photo.png',
      file_type: 'image/png',
      file_size: 5000,
    });
    expect(response.body.id).toMatch(/^att_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(response.body.created_at).toBeGreaterThanOrEqual(before);
    expect(response.body.created_at).toBeLessThanOrEqual(now());

    const file = await download(response.body.file_url);
    expect(file.status).toBe(200);
    expect(sha256(file.bytes)).toBe(sha256(bytes));
    expect(file.contentType).toBe('image/png');
    expect(file.contentDisposition).toBe(`attachment; filename="photo.png"; filename*=UTF-8''photo.png`);
  });

  it('stores the file under a key made of the user and the attachment id, never the filename', async () => {
    const response = await upload(t, 'keys-user', { bytes: 'x', filename: 'secret-name.txt' });
    expect(response.status).toBe(201);
    const keys = await storedFileKeys(t.api.s3Endpoint);
    expect(keys).toContain(fileKeyOf(response.body));
    expect(fileKeyOf(response.body).startsWith(`${userFilesPrefix('keys-user')}${response.body.id}/`)).toBe(true);
    expect(keys.some((key) => key.includes('secret-name'))).toBe(false);
    expect(new URL(response.body.file_url).pathname).toBe(`/attachments/${fileKeyOf(response.body)}`);
  });

  it('downloads a non-ASCII name with an ASCII filename and the exact UTF-8 filename*', async () => {
    const response = await upload(t, 'alice', { bytes: 'résumé', filename: 'Résumé 📄.pdf', type: 'application/pdf' });
    expect(response.status).toBe(201);
    expect(response.body.filename).toBe('Résumé 📄.pdf');
    const file = await download(response.body.file_url);
    expect(file.contentType).toBe('application/pdf');
    expect(file.contentDisposition).toBe(`attachment; filename="Resume _.pdf"; filename*=UTF-8''${encodeURIComponent('Résumé 📄.pdf')}`);
  });

  it('takes file_type from the extension when the part says only application/octet-stream', async () => {
    const response = await upload(t, 'alice', { bytes: '{}', filename: 'data.json' });
    expect(response.body.file_type).toBe('application/json');
    const unknown = await upload(t, 'alice', { bytes: 'x', filename: 'blob.nosuchext' });
    expect(unknown.body.file_type).toBe('application/octet-stream');
    expect((await download(unknown.body.file_url)).contentType).toBe('application/octet-stream');
  });

  it('uploads into a conversation with a message id and sets the conversation last_active_at', async () => {
    const conversationId = await conversationOf(t, 'alice', 'bob');
    const before = now();
    const response = await upload(
      t,
      'alice',
      { bytes: 'hi', filename: 'hi.txt' },
      { conversation_id: conversationId, message_id: 'msg_1' },
    );
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ conversation_id: conversationId, message_id: 'msg_1' });
    const conversation = await t.call('alice', 'GET', `/v1/conversations/${conversationId}`);
    expect(conversation.body.last_active_at).toBeGreaterThanOrEqual(before);
  });

  it("refuses a conversation_id that is not one of the user's conversations with 400 resource_missing, writing nothing", async () => {
    const theirs = await conversationOf(t, 'mallory', 'bob');
    const user = 'refused-upload-user';
    for (const conversationId of [theirs, 'conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'not-an-id']) {
      const response = await upload(t, user, { bytes: 'x', filename: 'x.txt' }, { conversation_id: conversationId });
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'resource_missing', param: 'conversation_id' });
    }
    expect((await t.call(user, 'GET', '/v1/attachments')).body.data).toEqual([]);
    expect((await t.call('mallory', 'GET', `/v1/conversations/${theirs}`)).body.last_active_at).toBeNull();
    expect((await storedFileKeys(t.api.s3Endpoint)).some((key) => key.startsWith(userFilesPrefix(user)))).toBe(false);
  });
});

describe('get, rename and delete', () => {
  it('gets an attachment by id with a freshly minted file_url', async () => {
    const uploaded = await upload(t, 'alice', { bytes: 'abc', filename: 'a.txt', type: 'text/plain' });
    const response = await t.call('alice', 'GET', `/v1/attachments/${uploaded.body.id}`);
    expect(response.status).toBe(200);
    const { file_url, file_url_expires_at: _expiry, ...rest } = response.body;
    const { file_url: _uploadedUrl, file_url_expires_at: _uploadedExpiry, ...uploadedRest } = uploaded.body;
    expect(rest).toEqual(uploadedRest);
    expect(sha256((await download(file_url)).bytes)).toBe(sha256('abc'));
    // The link says when it dies: the default 15 minutes after it was signed.
    const signed = new URL(file_url).searchParams;
    expect(signed.get('X-Amz-Expires')).toBe('900');
    expect(response.body.file_url_expires_at).toBe(xAmzDateSeconds(signed.get('X-Amz-Date')!) + 900);
  });

  it('answers 404 resource_missing for an unknown or malformed id', async () => {
    for (const id of ['att_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'nope', 'conv_01ARZ3NDEKTSV4RRFFQ69G5FAV']) {
      const response = await t.call('alice', 'GET', `/v1/attachments/${id}`);
      expect(response.status).toBe(404);
      expect(response.body.error).toMatchObject({ code: 'resource_missing', param: 'id' });
    }
  });

  it('renames with a form: the response, the record and the file_url carry the new name; the bytes stay', async () => {
    const bytes = randomBytes(300);
    const uploaded = await upload(t, 'alice', { bytes, filename: 'old.bin', type: 'application/octet-stream' });
    const renamed = await t.call('alice', 'PUT', `/v1/attachments/${uploaded.body.id}`, { form: { filename: 'nouveau café.bin' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.filename).toBe('nouveau café.bin');
    expect(new URL(renamed.body.file_url).pathname).toBe(new URL(uploaded.body.file_url).pathname);
    const file = await download(renamed.body.file_url);
    expect(sha256(file.bytes)).toBe(sha256(bytes));
    expect(file.contentDisposition).toBe(`attachment; filename="nouveau cafe.bin"; filename*=UTF-8''nouveau%20caf%C3%A9.bin`);
    expect((await t.call('alice', 'GET', `/v1/attachments/${uploaded.body.id}`)).body.filename).toBe('nouveau café.bin');
  });

  it('renames with JSON and applies the filename rules to the new name', async () => {
    const uploaded = await upload(t, 'alice', { bytes: 'x', filename: 'x.txt' });
    const renamed = await t.call('alice', 'PUT', `/v1/attachments/${uploaded.body.id}`, {
      json: { filename: '../../etc/re\u0301sume\u0301\u202E.txt' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.filename).toBe('résumé.txt');
    expect(renamed.body.file_type).toBe(uploaded.body.file_type);
  });

  it('refuses an empty, missing, non-string or unknown rename parameter with 400', async () => {
    const uploaded = await upload(t, 'alice', { bytes: 'x', filename: 'x.txt' });
    const path = `/v1/attachments/${uploaded.body.id}`;
    const cases: { init: CallInit; code: string; param: string }[] = [
      { init: { form: { filename: '' } }, code: 'parameter_invalid', param: 'filename' },
      { init: { json: { filename: 42 } }, code: 'parameter_invalid', param: 'filename' },
      { init: { json: {} }, code: 'parameter_missing', param: 'filename' },
      { init: { form: { filename: 'a.txt', file_size: '1' } }, code: 'parameter_unknown', param: 'file_size' },
    ];
    for (const { init, code, param } of cases) {
      const response = await t.call('alice', 'PUT', path, init);
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ code, param });
    }
    expect((await t.call('alice', 'GET', path)).body.filename).toBe('x.txt');
  });

  it('renames an unknown id with 404', async () => {
    const response = await t.call('alice', 'PUT', '/v1/attachments/att_01ARZ3NDEKTSV4RRFFQ69G5FAV', { form: { filename: 'a' } });
    expect(response.status).toBe(404);
  });

  it('deletes the record at once and the file right after; a second delete is 404', async () => {
    const uploaded = await upload(t, 'deleter', { bytes: 'bye', filename: 'bye.txt' });
    const id = uploaded.body.id;
    const response = await t.call('deleter', 'DELETE', `/v1/attachments/${id}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ id, deleted: true });
    expect((await t.call('deleter', 'GET', `/v1/attachments/${id}`)).status).toBe(404);
    // The file follows from the table's stream.
    const keys = await eventually(
      () => storedFileKeys(t.api.s3Endpoint),
      (stored) => !stored.includes(fileKeyOf(uploaded.body)),
    );
    expect(keys).not.toContain(fileKeyOf(uploaded.body));
    // As S3 answers a link signed by a role that may not list the bucket (the upload's): 403, not 404.
    expect((await download(uploaded.body.file_url)).status).toBe(403);
    const again = await t.call('deleter', 'DELETE', `/v1/attachments/${id}`);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('resource_missing');
  });
});

describe('list', () => {
  const user = 'lister';
  const ids: string[] = [];
  let conversationId: string;

  beforeAll(async () => {
    conversationId = await conversationOf(t, user, 'carol');
    for (let i = 0; i < 5; i += 1) {
      const fields: Record<string, string> = i % 2 === 0 ? { conversation_id: conversationId } : {};
      const response = await upload(t, user, { bytes: `file ${i}`, filename: `f${i}.txt` }, fields);
      ids.push(response.body.id);
    }
  });

  it('lists newest first with file_url on every item', async () => {
    const response = await t.call(user, 'GET', '/v1/attachments');
    expect(response.status).toBe(200);
    expect(response.body.has_more).toBe(false);
    expect(response.body.data.map((a: { id: string }) => a.id)).toEqual([...ids].reverse());
    for (const attachment of response.body.data) expect((await download(attachment.file_url)).status).toBe(200);
  });

  it('pages with limit, starting_after and ending_before', async () => {
    const newestFirst = [...ids].reverse();
    const first = await t.call(user, 'GET', '/v1/attachments?limit=2');
    expect(first.body).toMatchObject({ has_more: true });
    expect(first.body.data.map((a: { id: string }) => a.id)).toEqual(newestFirst.slice(0, 2));
    const second = await t.call(user, 'GET', `/v1/attachments?limit=2&starting_after=${newestFirst[1]}`);
    expect(second.body.data.map((a: { id: string }) => a.id)).toEqual(newestFirst.slice(2, 4));
    expect(second.body.has_more).toBe(true);
    const last = await t.call(user, 'GET', `/v1/attachments?limit=2&starting_after=${newestFirst[3]}`);
    expect(last.body).toMatchObject({ has_more: false });
    expect(last.body.data.map((a: { id: string }) => a.id)).toEqual(newestFirst.slice(4));
    const back = await t.call(user, 'GET', `/v1/attachments?limit=2&ending_before=${newestFirst[4]}`);
    expect(back.body.data.map((a: { id: string }) => a.id)).toEqual(newestFirst.slice(2, 4));
    expect(back.body.has_more).toBe(true);
  });

  it('filters by conversation_id, paging within the filter', async () => {
    const inConversation = [ids[4], ids[2], ids[0]];
    const all = await t.call(user, 'GET', `/v1/attachments?conversation_id=${conversationId}`);
    expect(all.body.data.map((a: { id: string }) => a.id)).toEqual(inConversation);
    const page = await t.call(user, 'GET', `/v1/attachments?conversation_id=${conversationId}&limit=1&starting_after=${ids[4]}`);
    expect(page.body).toMatchObject({ has_more: true });
    expect(page.body.data.map((a: { id: string }) => a.id)).toEqual([ids[2]]);
  });

  it('answers a conversation_id filter that matches nothing with an empty list', async () => {
    for (const filter of ['conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'whatever']) {
      const response = await t.call(user, 'GET', `/v1/attachments?conversation_id=${filter}`);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ has_more: false, data: [] });
    }
  });

  it('refuses bad list parameters with 400', async () => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['starting_after=conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'starting_after'],
      [`starting_after=${ids[0]}&ending_before=${ids[1]}`, 'ending_before'],
      ['filename=x', 'filename'],
    ]) {
      const response = await t.call(user, 'GET', `/v1/attachments?${query}`);
      expect(response.status).toBe(400);
      expect(response.body.error.param).toBe(param);
    }
  });
});

describe('isolation of two users', () => {
  let theirs: { id: string; file_url: string };
  let theirConversation: string;

  beforeAll(async () => {
    theirConversation = await conversationOf(t, 'owner', 'dave');
    theirs = (await upload(t, 'owner', { bytes: 'private', filename: 'private.txt' }, { conversation_id: theirConversation })).body;
  });

  const withoutRequestId = (body: { error: Record<string, unknown> }) => ({ ...body.error, request_id: undefined });

  it("answers GET, PUT and DELETE of another user's attachment exactly like a missing id", async () => {
    const missing = 'att_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    for (const [method, init] of [
      ['GET', {}],
      ['PUT', { form: { filename: 'stolen.txt' } }],
      ['DELETE', {}],
    ] as const) {
      const other = await t.call('intruder', method, `/v1/attachments/${theirs.id}`, init);
      const none = await t.call('intruder', method, `/v1/attachments/${missing}`, init);
      expect(other.status).toBe(404);
      expect(withoutRequestId(other.body)).toEqual({ ...withoutRequestId(none.body), message: `No such attachment: ${theirs.id}` });
    }
    const stillThere = await t.call('owner', 'GET', `/v1/attachments/${theirs.id}`);
    expect(stillThere.body.filename).toBe('private.txt');
    expect((await download(stillThere.body.file_url)).status).toBe(200);
  });

  it("never lists another user's attachments, with or without their conversation_id", async () => {
    await upload(t, 'intruder', { bytes: 'mine', filename: 'mine.txt' });
    const list = await t.call('intruder', 'GET', '/v1/attachments?limit=100');
    expect(list.body.data.map((a: { id: string }) => a.id)).not.toContain(theirs.id);
    expect(list.body.data).toHaveLength(1);
    const filtered = await t.call('intruder', 'GET', `/v1/attachments?conversation_id=${theirConversation}`);
    expect(filtered.body).toEqual({ has_more: false, data: [] });
  });

  it("does not take another user's attachment id as a cursor into their list", async () => {
    const response = await t.call('intruder', 'GET', `/v1/attachments?starting_after=${theirs.id}`);
    expect(response.status).toBe(200);
    expect(response.body.data.map((a: { id: string }) => a.id)).not.toContain(theirs.id);
  });

  it("refuses an upload into another user's conversation", async () => {
    const response = await upload(t, 'intruder', { bytes: 'x', filename: 'x.txt' }, { conversation_id: theirConversation });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'resource_missing', param: 'conversation_id' });
    const filtered = await t.call('owner', 'GET', `/v1/attachments?conversation_id=${theirConversation}`);
    expect(filtered.body.data.map((a: { id: string }) => a.id)).toEqual([theirs.id]);
  });
});

// Deleting a conversation removes its attachments from the table's stream: test/integration/cleanup.test.ts.

function xAmzDateSeconds(stamp: string): number {
  const [, y, mo, d, h, mi, s] = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(stamp)!;
  return Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, +s!) / 1000;
}
