import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { conversationOf, download, fileKeyOf, sha256, storedFileKeys, storedFilesOf } from '../support/attachments.js';
import { MIB, putPart, type SessionClient, sessionClient } from '../support/upload-sessions.js';

let t: TestApi;
let sessions: SessionClient;

beforeAll(async () => {
  t = await startTestApi();
  sessions = sessionClient(t);
});
afterAll(async () => {
  await t?.close();
});

const now = () => Math.floor(Date.now() / 1000);

async function started(userId: string, fields: Record<string, unknown>) {
  const response = await sessions.start(userId, fields);
  expect(response.status).toBe(201);
  return response.body;
}

describe('POST /v1/upload_sessions', () => {
  it('answers 201 with a pending session whose parts fit S3 (8 MiB parts, the last one shorter)', async () => {
    const before = now();
    const response = await sessions.start('alice', {
      filename: 'clip.mp4',
      file_size: 20 * MIB + 1,
      file_type: 'video/mp4',
      message_id: 'msg_1',
    });
    expect(response.status).toBe(201);
    expect(Object.keys(response.body)).toEqual([
      'id',
      'status',
      'filename',
      'file_size',
      'file_type',
      'part_size',
      'part_count',
      'expires_at',
      'conversation_id',
      'message_id',
      'created_at',
    ]);
    expect(response.body).toMatchObject({
      status: 'pending',
      filename: 'clip.mp4',
      file_size: 20 * MIB + 1,
      file_type: 'video/mp4',
      part_size: 8 * MIB,
      part_count: 3,
      conversation_id: null,
      message_id: 'msg_1',
    });
    expect(response.body.id).toMatch(/^upl_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(response.body.created_at).toBeGreaterThanOrEqual(before);
    expect(response.body.expires_at).toBe(response.body.created_at + 24 * 3600);
  });

  it('takes a form body too, and a file of exactly 5 GiB (the default limit)', async () => {
    const response = await t.call('alice', 'POST', '/v1/upload_sessions', {
      form: { filename: 'big.bin', file_size: String(5 * 1024 * MIB) },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      file_size: 5 * 1024 * MIB,
      part_size: 8 * MIB,
      part_count: 640,
      file_type: 'application/octet-stream',
    });
  });

  it('refuses one byte over 5 GiB with 413 file_too_large', async () => {
    const response = await sessions.start('alice', { filename: 'big.bin', file_size: 5 * 1024 * MIB + 1 });
    expect(response.status).toBe(413);
    expect(response.body.error).toMatchObject({ code: 'file_too_large', param: 'file_size' });
  });

  it.each([
    [{ filename: 'a.bin', file_size: 0 }, 'parameter_invalid', 'file_size'],
    [{ filename: 'a.bin', file_size: -1 }, 'parameter_invalid', 'file_size'],
    [{ filename: 'a.bin', file_size: 1.5 }, 'parameter_invalid', 'file_size'],
    [{ filename: 'a.bin', file_size: '10' }, 'parameter_invalid', 'file_size'],
    [{ filename: 'a.bin' }, 'parameter_missing', 'file_size'],
    [{ file_size: 10 }, 'parameter_missing', 'filename'],
    [{ filename: '', file_size: 10 }, 'parameter_invalid', 'filename'],
    [{ filename: 'a.bin', file_size: 10, file_type: 'not a type' }, 'parameter_invalid', 'file_type'],
    [{ filename: 'a.bin', file_size: 10, message_id: 'has space' }, 'parameter_invalid', 'message_id'],
    [{ filename: 'a.bin', file_size: 10, conversation_id: 'conv_nope' }, 'resource_missing', 'conversation_id'],
    [{ filename: 'a.bin', file_size: 10, part_size: 5 }, 'parameter_unknown', 'part_size'],
  ])('refuses %j with 400 %s on %s', async (fields, code, param) => {
    const response = await sessions.start('alice', fields);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code, param });
  });

  it("refuses another user's conversation as resource_missing", async () => {
    const conversation = await conversationOf(t, 'bob', 'carol');
    const response = await sessions.start('alice', { filename: 'a.bin', file_size: 10, conversation_id: conversation });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'resource_missing', param: 'conversation_id' });
  });

  it('types the file from its extension when no specific type is declared', async () => {
    expect((await started('alice', { filename: 'notes.pdf', file_size: 10 })).file_type).toBe('application/pdf');
    expect((await started('alice', { filename: 'notes.pdf', file_size: 10, file_type: 'application/octet-stream' })).file_type).toBe(
      'application/pdf',
    );
  });

  it('replays the same session for the same Idempotency-Key, and refuses the key for another request', async () => {
    const headers = { 'idempotency-key': `start-${randomBytes(4).toString('hex')}` };
    const first = await sessions.start('alice', { filename: 'a.bin', file_size: 10 }, headers);
    const again = await sessions.start('alice', { filename: 'a.bin', file_size: 10 }, headers);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await sessions.start('alice', { filename: 'b.bin', file_size: 10 }, headers);
    expect(other.status).toBe(409);
  });
});

describe('POST /v1/upload_sessions/:id/parts', () => {
  it('presigns one PUT per part, valid for 15 minutes, that S3 takes and answers with an ETag', async () => {
    const session = await started('alice', { filename: 'a.bin', file_size: 20 * MIB });
    const signedFrom = now();
    const response = await sessions.sign('alice', session.id, [3, 1]);
    const signedBy = now();
    expect(response.status).toBe(200);
    expect(response.body.data.map((part: { part_number: number }) => part.part_number)).toEqual([1, 3]);
    // 15 minutes from the signing, which happened between the two readings of the clock, however long the call took.
    for (const part of response.body.data) {
      expect(part.expires_at).toBeGreaterThanOrEqual(signedFrom + 900);
      expect(part.expires_at).toBeLessThanOrEqual(signedBy + 900);
      expect(new URL(part.url).searchParams.get('X-Amz-Expires')).toBe('900');
    }
    const etag = await putPart(response.body.data[0].url, randomBytes(1000));
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
  });

  it('takes ranges in a form: 1,2-3', async () => {
    const session = await started('alice', { filename: 'a.bin', file_size: 30 * MIB });
    const response = await sessions.sign('alice', session.id, '1,2-3');
    expect(response.status).toBe(200);
    expect(response.body.data.map((part: { part_number: number }) => part.part_number)).toEqual([1, 2, 3]);
  });

  it.each([[[0]], [[5]], [[]], [['1']], [Array.from({ length: 101 }, (_, index) => index + 1)], ['3-1'], ['1-101'], ['x']])(
    'refuses part_numbers %j with 400 on part_numbers',
    async (numbers) => {
      const session = await started('alice', { filename: 'a.bin', file_size: 30 * MIB });
      const response = await sessions.sign('alice', session.id, numbers as number[]);
      expect(response.status).toBe(400);
      expect(response.body.error.param).toBe('part_numbers');
    },
  );

  it("answers 404 for another user's session, and for ids that are not session ids", async () => {
    const session = await started('alice', { filename: 'a.bin', file_size: 10 });
    for (const [user, id] of [
      ['bob', session.id],
      ['alice', 'upl_nope'],
      ['alice', 'att_01HZY3M2V7X9Z1B3D5F7H9K1MN'],
    ]) {
      const response = await sessions.sign(user!, id!, [1]);
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('resource_missing');
    }
  });
});

describe('GET /v1/upload_sessions/:id', () => {
  it('shows the parts S3 holds, with their sizes and ETags, so a client can resume', async () => {
    const session = await started('alice', { filename: 'a.bin', file_size: 20 * MIB });
    const signed = await sessions.sign('alice', session.id, [2]);
    const etag = await putPart(signed.body.data[0].url, randomBytes(8 * MIB));
    const response = await sessions.get('alice', session.id);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ ...session, parts: [{ part_number: 2, size: 8 * MIB, etag }] });
  });

  it("answers 404 for another user's session", async () => {
    const session = await started('alice', { filename: 'a.bin', file_size: 10 });
    expect((await sessions.get('bob', session.id)).status).toBe(404);
  });
});

describe('DELETE /v1/upload_sessions/:id', () => {
  it('aborts: the session and its parts are gone, and nothing is left in the bucket', async () => {
    const session = await started('abort-user', { filename: 'a.bin', file_size: 20 * MIB });
    const signed = await sessions.sign('abort-user', session.id, [1]);
    await putPart(signed.body.data[0].url, randomBytes(8 * MIB));
    const response = await sessions.abort('abort-user', session.id);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ id: session.id, deleted: true });
    expect((await sessions.get('abort-user', session.id)).status).toBe(404);
    // The old part URL leads nowhere: the upload is gone in S3.
    await expect(putPart(signed.body.data[0].url, randomBytes(10))).rejects.toThrow(/404.*NoSuchUpload/s);
    expect(await storedFilesOf(t.api.s3Endpoint, 'abort-user')).toEqual([]);
  });

  it("answers 404 for another user's session and leaves it alone", async () => {
    const session = await started('alice', { filename: 'a.bin', file_size: 10 });
    expect((await sessions.abort('bob', session.id)).status).toBe(404);
    expect((await sessions.get('alice', session.id)).status).toBe(200);
  });
});

describe('POST /v1/upload_sessions/:id/complete', () => {
  it('assembles the parts into an attachment whose file_url downloads the same bytes, typed by its first bytes', async () => {
    const conversation = await conversationOf(t, 'alice', 'dave');
    // The start of a PNG (signature, IHDR chunk, IDAT chunk header), declared as something else: the bytes win.
    const png = '89504e470d0a1a0a' + '0000000d49484452' + '000000100000001008060000001ff3ff61' + '0010000049444154';
    const bytes = Buffer.concat([Buffer.from(png, 'hex'), randomBytes(17 * MIB)]);
    const session = await started('alice', {
      filename: 'picture.bin',
      file_size: bytes.length,
      file_type: 'text/plain',
      conversation_id: conversation,
    });
    const parts = await sessions.uploadAll('alice', session, bytes);
    const response = await sessions.complete('alice', session.id, parts);
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      message_id: null,
      conversation_id: conversation,
      filename: 'picture.bin',
      file_type: 'image/png',
      file_size: bytes.length,
    });
    const attachment = await t.call('alice', 'GET', `/v1/attachments/${response.body.id}`);
    // A link is minted per response: its end moves with the second it was minted in.
    expect({ ...attachment.body, file_url: undefined, file_url_expires_at: undefined }).toEqual({
      ...response.body,
      file_url: undefined,
      file_url_expires_at: undefined,
    });
    const file = await download(response.body.file_url);
    expect(sha256(file.bytes)).toBe(sha256(bytes));
    expect(await storedFileKeys(t.api.s3Endpoint)).toContain(fileKeyOf(response.body));
    const conversationNow = await t.call('alice', 'GET', `/v1/conversations/${conversation}`);
    expect(conversationNow.body.last_active_at).toBe(response.body.created_at);
    expect((await sessions.get('alice', session.id)).body).toMatchObject({ status: 'completed', parts: [] });
  });

  it("marks the uploader's own conversation active and read at the completion's time, as a small upload does", async () => {
    const conversation = await conversationOf(t, 'reader', 'sam');
    const opened = await t.call('reader', 'PUT', `/v1/conversations/${conversation}`, { json: { last_opened_at: now() - 10 } });
    expect(opened.status).toBe(200);
    const bytes = randomBytes(100);
    const session = await started('reader', { filename: 'a.bin', file_size: bytes.length, conversation_id: conversation });
    const response = await sessions.complete('reader', session.id, await sessions.uploadAll('reader', session, bytes));
    expect(response.status).toBe(201);
    const shown = (await t.call('reader', 'GET', `/v1/conversations/${conversation}`)).body;
    expect(shown).toMatchObject({ last_active_at: response.body.created_at, last_opened_at: response.body.created_at });
    expect((await t.call('reader', 'GET', '/v1/conversations?unread=true')).body.data).toEqual([]);
  });

  it('keeps the declared type when the bytes prove no format', async () => {
    const bytes = Buffer.from('just some text\n');
    const session = await started('alice', { filename: 'notes.txt', file_size: bytes.length, file_type: 'text/markdown' });
    const parts = await sessions.uploadAll('alice', session, bytes);
    const response = await sessions.complete('alice', session.id, parts);
    expect(response.status).toBe(201);
    expect(response.body.file_type).toBe('text/markdown');
  });

  it('answers the same attachment when repeated, and refuses new parts after', async () => {
    const bytes = randomBytes(1000);
    const session = await started('alice', { filename: 'a.bin', file_size: bytes.length });
    const parts = await sessions.uploadAll('alice', session, bytes);
    const first = await sessions.complete('alice', session.id, parts);
    const again = await sessions.complete('alice', session.id, parts);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    const signed = await sessions.sign('alice', session.id, [1]);
    expect(signed.status).toBe(400);
    expect(signed.body.error.code).toBe('upload_session_completed');
    const aborted = await sessions.abort('alice', session.id);
    expect(aborted.status).toBe(400);
    expect(aborted.body.error.code).toBe('upload_session_completed');
  });

  it('makes one attachment of concurrent completes, and every caller gets it', async () => {
    const bytes = randomBytes(9 * MIB);
    const session = await started('racer', { filename: 'a.bin', file_size: bytes.length });
    const parts = await sessions.uploadAll('racer', session, bytes);
    const answers = await Promise.all(Array.from({ length: 4 }, () => sessions.complete('racer', session.id, parts)));
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201]);
    expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1);
    const list = await t.call('racer', 'GET', '/v1/attachments');
    expect(list.body.data).toHaveLength(1);
    expect(sha256((await download(list.body.data[0].file_url)).bytes)).toBe(sha256(bytes));
  });

  it('refuses a size that differs from the declared one with 400, removes the file, and fails the session', async () => {
    const bytes = randomBytes(1000);
    const session = await started('liar', { filename: 'a.bin', file_size: 999 });
    const signed = await sessions.sign('liar', session.id, [1]);
    const etag = await putPart(signed.body.data[0].url, bytes);
    const response = await sessions.complete('liar', session.id, [{ part_number: 1, etag }]);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'file_size_mismatch', param: 'file_size' });
    expect(await storedFilesOf(t.api.s3Endpoint, 'liar')).toEqual([]);
    expect((await t.call('liar', 'GET', '/v1/attachments')).body.data).toEqual([]);
    expect((await sessions.get('liar', session.id)).body.status).toBe('failed');
    const again = await sessions.complete('liar', session.id, [{ part_number: 1, etag }]);
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('file_size_mismatch');
  });

  it('refuses a wrong or missing ETag with 400 on parts, and the session stays open to fix it', async () => {
    const bytes = randomBytes(100);
    const session = await started('alice', { filename: 'a.bin', file_size: bytes.length });
    const [part] = await sessions.uploadAll('alice', session, bytes);
    const wrong = await sessions.complete('alice', session.id, [{ part_number: 1, etag: '"00000000000000000000000000000000"' }]);
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({ code: 'parameter_invalid', param: 'parts' });
    const missing = await sessions.complete('alice', session.id, [{ part_number: 1 }]);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'parameter_missing', param: 'parts' });
    expect((await sessions.complete('alice', session.id, [part])).status).toBe(201);
  });

  it('refuses a part but the last under 5 MiB with 400 on parts', async () => {
    const session = await started('alice', { filename: 'a.bin', file_size: 2000 });
    const signed = await sessions.sign('alice', session.id, [1]);
    // Part 2 is outside this session's single part: refused before S3 is asked.
    const outside = await sessions.complete('alice', session.id, [
      { part_number: 1, etag: '"00000000000000000000000000000000"' },
      { part_number: 2, etag: '"00000000000000000000000000000000"' },
    ]);
    expect(outside.status).toBe(400);
    expect(outside.body.error.param).toBe('parts');
    const big = await started('alice', { filename: 'a.bin', file_size: 16 * MIB });
    const urls = (await sessions.sign('alice', big.id, [1, 2])).body.data;
    const small = [await putPart(urls[0].url, randomBytes(MIB)), await putPart(urls[1].url, randomBytes(MIB))];
    const response = await sessions.complete(
      'alice',
      big.id,
      small.map((etag, index) => ({ part_number: index + 1, etag })),
    );
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'parameter_invalid', param: 'parts' });
    expect(signed.status).toBe(200);
  });

  it('refuses a conversation deleted between start and complete, and leaves no file', async () => {
    const conversation = await conversationOf(t, 'mover', 'erin');
    const bytes = randomBytes(100);
    const session = await started('mover', { filename: 'a.bin', file_size: bytes.length, conversation_id: conversation });
    const parts = await sessions.uploadAll('mover', session, bytes);
    expect((await t.call('mover', 'DELETE', `/v1/conversations/${conversation}`)).status).toBe(200);
    const response = await sessions.complete('mover', session.id, parts);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'resource_missing', param: 'conversation_id' });
    expect((await t.call('mover', 'GET', '/v1/attachments')).body.data).toEqual([]);
    expect(await storedFilesOf(t.api.s3Endpoint, 'mover')).toEqual([]);
  });

  it("answers 404 for another user's session", async () => {
    const bytes = randomBytes(100);
    const session = await started('alice', { filename: 'a.bin', file_size: bytes.length });
    const parts = await sessions.uploadAll('alice', session, bytes);
    expect((await sessions.complete('bob', session.id, parts)).status).toBe(404);
    expect((await sessions.get('alice', session.id)).body.status).toBe('pending');
  });

  it('replays the same attachment for the same Idempotency-Key, with a fresh file_url', async () => {
    const bytes = randomBytes(100);
    const session = await started('alice', { filename: 'a.bin', file_size: bytes.length });
    const parts = await sessions.uploadAll('alice', session, bytes);
    const headers = { 'idempotency-key': `complete-${session.id}` };
    const first = await sessions.complete('alice', session.id, parts, headers);
    const again = await sessions.complete('alice', session.id, parts, headers);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect({ ...again.body, file_url: undefined, file_url_expires_at: undefined }).toEqual({
      ...first.body,
      file_url: undefined,
      file_url_expires_at: undefined,
    });
    expect(again.body.file_url_expires_at).toBeGreaterThanOrEqual(first.body.file_url_expires_at);
    expect(sha256((await download(again.body.file_url)).bytes)).toBe(sha256(bytes));
  });

  it.each([
    [{ parts: [] }],
    [{ parts: 'x' }],
    [
      {
        parts: [
          { part_number: 2, etag: '"5d41402abc4b2a76b9719d911017c592"' },
          { part_number: 1, etag: '"5d41402abc4b2a76b9719d911017c592"' },
        ],
      },
    ],
    [{ parts: [{ part_number: 1, etag: 'nope' }] }],
    [{ parts: [{ part_number: 1, etag: '"5d41402abc4b2a76b9719d911017c592"', size: 3 }] }],
  ])('refuses the body %j with 400', async (body) => {
    const session = await started('alice', { filename: 'a.bin', file_size: 30 * MIB });
    const response = await t.call('alice', 'POST', `/v1/upload_sessions/${session.id}/complete`, { json: body });
    expect(response.status).toBe(400);
    expect(response.body.error.param).toBe('parts');
  });
});
