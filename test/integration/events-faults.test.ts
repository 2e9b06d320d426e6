import { beforeEach, describe, expect, it } from 'vitest';
import { upload } from '../support/attachments.js';
import { anyDynamodbCall } from '../support/fault-proxy.js';
import { type FaultyApi, faultyApiForFile } from '../support/faulty-api.js';
import { sessionClient } from '../support/upload-sessions.js';

/**
 * An event is written in its change's transaction: when that transaction's
 * answer is lost after DynamoDB committed it (the SDK sends it again, with
 * its token), the request still answers as the change it made, and the feed
 * holds exactly one event for it, never two and never none.
 */
// Scanning off: a scan result's attachment.updated, 1 s after an upload, would land among the events counted here.
const faultyApi = faultyApiForFile({ env: { SCANNING: 'off' } });
let f: FaultyApi;
beforeEach(() => {
  f = faultyApi();
});

/** The first TransactWriteItems that names `text` loses its answer after the commit. */
const loseAnswerOf = (text: string) =>
  f.dynamodb.inject({ match: anyDynamodbCall(['TransactWriteItems'], [text]), fault: { kind: 'reset_after' } });

async function typesOf(userId: string): Promise<string[]> {
  const response = await f.t.call(userId, 'GET', '/v1/events?limit=100');
  expect(response.status).toBe(200);
  return response.body.data.map((event: { type: string }) => event.type).reverse();
}

describe('an event whose transaction lost its answer', () => {
  it('conversation create, update and delete: each answers as it did, one event each', async () => {
    const userId = 'faults-conversation';
    const lostCreate = loseAnswerOf('contact-lost');
    const created = await f.t.call(userId, 'POST', '/v1/conversations', { form: { contact_id: 'contact-lost' } });
    expect(lostCreate.fired).toBe(1);
    expect(created.status).toBe(201);

    const lostUpdate = loseAnswerOf('message-lost');
    const updated = await f.t.call(userId, 'PUT', `/v1/conversations/${created.body.id}`, { json: { pinned_message_id: 'message-lost' } });
    expect(lostUpdate.fired).toBe(1);
    expect(updated.status).toBe(200);
    expect(updated.body.pinned_message_id).toBe('message-lost');

    const lostDelete = loseAnswerOf(created.body.id);
    const deleted = await f.t.call(userId, 'DELETE', `/v1/conversations/${created.body.id}`);
    expect(lostDelete.fired).toBe(1);
    expect(deleted.status).toBe(200);

    expect(await typesOf(userId)).toEqual(['conversation.created', 'conversation.updated', 'conversation.deleted']);
    const [, update] = (await f.t.call(userId, 'GET', '/v1/events?limit=100')).body.data.reverse();
    expect(update.data.previous_attributes).toEqual({ pinned_message_id: null });
  });

  it('upload, rename and delete of an attachment: each answers as it did, one event each', async () => {
    const userId = 'faults-attachment';
    const lostUpload = loseAnswerOf('lost-upload.txt');
    const uploaded = await upload(f.t, userId, { bytes: 'kept once', filename: 'lost-upload.txt' });
    expect(lostUpload.fired).toBe(1);
    expect(uploaded.status).toBe(201);

    const lostRename = loseAnswerOf('lost-rename.txt');
    const renamed = await f.t.call(userId, 'PUT', `/v1/attachments/${uploaded.body.id}`, { json: { filename: 'lost-rename.txt' } });
    expect(lostRename.fired).toBe(1);
    expect(renamed.status).toBe(200);

    const lostDelete = loseAnswerOf(uploaded.body.id);
    const deleted = await f.t.call(userId, 'DELETE', `/v1/attachments/${uploaded.body.id}`);
    expect(lostDelete.fired).toBe(1);
    expect(deleted.status).toBe(200);

    expect(await typesOf(userId)).toEqual(['attachment.created', 'attachment.updated', 'attachment.deleted']);
  });

  it('an upload session completion: 201 with its attachment, one attachment.created', async () => {
    const userId = 'faults-session';
    const sessions = sessionClient(f.t);
    const bytes = Buffer.from('a session whose completion lost its answer');
    const started = await sessions.start(userId, {
      filename: 'session.bin',
      file_size: bytes.length,
      file_type: 'application/octet-stream',
    });
    expect(started.status).toBe(201);
    const parts = await sessions.uploadAll(userId, started.body, bytes);
    const lostCompletion = loseAnswerOf(started.body.id);
    const completed = await sessions.complete(userId, started.body.id, parts);
    expect(lostCompletion.fired).toBe(1);
    expect(completed.status).toBe(201);
    expect(await typesOf(userId)).toEqual(['attachment.created']);
  });
});
