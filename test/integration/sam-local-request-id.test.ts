import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { uploadForm } from '../support/attachments.js';
import { feedOf } from '../support/audit.js';

/**
 * `sam local start-api` gives every request of one process the same
 * requestContext.requestId (docs/deploying.md, "sam local"). The server here
 * is pinned to one id the same way, so two different writes of the same item
 * by the same user share it: each must still commit, as its own transaction
 * (a token made from the request id would repeat with other items, and
 * DynamoDB would refuse the second: IdempotentParameterMismatchException).
 */
const REQUEST_ID = `sam-local-${randomUUID()}`;
let t: TestApi;
beforeAll(async () => {
  t = await startTestApi({ requestId: REQUEST_ID });
});
afterAll(() => t?.close());

const user = () => `same-id-${randomBytes(4).toString('hex')}`;

describe('a server whose requests all carry one request id, as sam local gives', () => {
  it('runs two different updates of one conversation: both answer 200 and both are in the conversation and the feed', async () => {
    const me = user();
    const created = await t.call(me, 'POST', '/v1/conversations', { form: { contact_id: 'them' } });
    expect(created.status, created.text).toBe(201);
    expect(created.headers.get('x-request-id')).toBe(REQUEST_ID);
    const id = created.body.id as string;

    const pinned = await t.call(me, 'PUT', `/v1/conversations/${id}`, { form: { is_pinned: 'true' } });
    expect(pinned.status, pinned.text).toBe(200);
    const marked = await t.call(me, 'PUT', `/v1/conversations/${id}`, { form: { pinned_message_id: 'm-2' } });
    expect(marked.status, marked.text).toBe(200);
    expect([pinned.headers.get('x-request-id'), marked.headers.get('x-request-id')]).toEqual([REQUEST_ID, REQUEST_ID]);

    const stored = await t.call(me, 'GET', `/v1/conversations/${id}`);
    expect(stored.body).toMatchObject({ is_pinned: true, pinned_message_id: 'm-2' });
    const updates = await feedOf(t, me, 'type=conversation.updated');
    expect(updates.map((event) => [event.data.previous_attributes, event.request_id])).toEqual([
      [{ pinned_message_id: null }, REQUEST_ID],
      [{ is_pinned: false }, REQUEST_ID],
    ]);
  });

  it('runs two renames of one attachment: both answer 200, and the feed has both', async () => {
    const me = user();
    const uploaded = await t.call(me, 'POST', '/v1/attachments', { body: uploadForm({ bytes: randomBytes(16), filename: 'a.txt' }) });
    expect(uploaded.status, uploaded.text).toBe(201);
    const id = uploaded.body.id as string;

    for (const filename of ['b.txt', 'c.txt']) {
      const renamed = await t.call(me, 'PUT', `/v1/attachments/${id}`, { form: { filename } });
      expect(renamed.status, renamed.text).toBe(200);
    }
    const stored = await t.call(me, 'GET', `/v1/attachments/${id}`);
    expect(stored.body.filename).toBe('c.txt');
    // The file's scan result is an attachment.updated too, whenever it comes: the renames are those that change the filename.
    const renames = (await feedOf(t, me, 'type=attachment.updated')).filter(
      (event) => 'filename' in (event.data.previous_attributes ?? {}),
    );
    expect(renames.map((event) => [event.data.previous_attributes, event.data.object.filename, event.request_id])).toEqual([
      [{ filename: 'b.txt' }, 'c.txt', REQUEST_ID],
      [{ filename: 'a.txt' }, 'b.txt', REQUEST_ID],
    ]);
  });
});
