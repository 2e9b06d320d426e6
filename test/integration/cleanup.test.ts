import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userFilesPrefix } from '../../shared/files/keys.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { fileKeyOf, storedFileKeys, upload } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';

/**
 * Deletes answer once what the API shows is gone; what hangs off it (a
 * conversation's attachments, every file) follows from the tables' streams,
 * through the same cleanup handler the stack's event source mapping runs.
 */
let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t?.close());

const filesOf = async (userId: string) => (await storedFileKeys(t.api.s3Endpoint)).filter((key) => key.startsWith(userFilesPrefix(userId)));

describe('deleting a conversation', () => {
  it('answers 200 at once, and its attachments and their files are gone within seconds after', async () => {
    const user = 'cleaner';
    const conversation = (await t.call(user, 'POST', '/v1/conversations', { form: { contact_id: 'carl' } })).body;
    const kept = await upload(t, user, { bytes: 'not in the conversation', filename: 'kept.txt' });
    for (let index = 0; index < 30; index += 1) {
      expect(
        (await upload(t, user, { bytes: `file ${index}`, filename: `f${index}.txt` }, { conversation_id: conversation.id })).status,
      ).toBe(201);
    }
    expect(await filesOf(user)).toHaveLength(31);

    const deleted = await t.call(user, 'DELETE', `/v1/conversations/${conversation.id}`);
    expect(deleted.status).toBe(200);
    expect((await t.call(user, 'GET', `/v1/conversations/${conversation.id}`)).status).toBe(404);

    const listed = await eventually(
      () => t.call(user, 'GET', `/v1/attachments?conversation_id=${conversation.id}`),
      (response) => response.body.data.length === 0,
    );
    expect(listed.body.data).toEqual([]);
    // 30 files and their thumbnails' keys, one stream batch: seconds idle, longer on a loaded machine.
    const files = await eventually(
      () => filesOf(user),
      (keys) => keys.length === 1,
      60_000,
    );
    expect(files).toEqual([fileKeyOf(kept.body)]);
    expect((await t.call(user, 'GET', `/v1/attachments/${kept.body.id}`)).status).toBe(200);
  });

  it('lets a new conversation with the same contact be created at once', async () => {
    const first = (await t.call('again', 'POST', '/v1/conversations', { form: { contact_id: 'dora' } })).body;
    expect((await t.call('again', 'DELETE', `/v1/conversations/${first.id}`)).status).toBe(200);
    const second = await t.call('again', 'POST', '/v1/conversations', { form: { contact_id: 'dora' } });
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.id);
  });
});

describe('uploading into a conversation that is gone', () => {
  it('answers 400 resource_missing and leaves no file', async () => {
    const user = 'late';
    const conversation = (await t.call(user, 'POST', '/v1/conversations', { form: { contact_id: 'eve' } })).body;
    expect((await t.call(user, 'DELETE', `/v1/conversations/${conversation.id}`)).status).toBe(200);
    const response = await upload(t, user, { bytes: 'too late', filename: 'late.txt' }, { conversation_id: conversation.id });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'resource_missing', param: 'conversation_id' });
    expect(await filesOf(user)).toEqual([]);
  });

  it('never leaves an attachment in a conversation deleted while uploads into it race the delete', async () => {
    const user = 'racer';
    for (let round = 0; round < 5; round += 1) {
      const conversation = (await t.call(user, 'POST', '/v1/conversations', { form: { contact_id: `racer-${round}` } })).body;
      const uploads = Array.from({ length: 8 }, (_, index) =>
        upload(t, user, { bytes: `race ${round} ${index}`, filename: 'r.txt' }, { conversation_id: conversation.id }),
      );
      const [deleted, ...answers] = await Promise.all([t.call(user, 'DELETE', `/v1/conversations/${conversation.id}`), ...uploads]);
      expect(deleted.status).toBe(200);
      for (const answer of answers) expect([201, 400]).toContain(answer.status);
    }
    const listed = await eventually(
      () => t.call(user, 'GET', '/v1/attachments?limit=100'),
      (response) => response.body.data.length === 0,
    );
    expect(listed.body.data).toEqual([]);
    expect(
      await eventually(
        () => filesOf(user),
        (keys) => keys.length === 0,
      ),
    ).toEqual([]);
  });
});

describe('deleting an attachment', () => {
  it('answers 200, a second delete 404, and its file is gone within seconds after', async () => {
    const user = 'single';
    const attachment = (await upload(t, user, { bytes: 'short-lived', filename: 's.txt' })).body;
    expect(await filesOf(user)).toEqual([fileKeyOf(attachment)]);
    expect((await t.call(user, 'DELETE', `/v1/attachments/${attachment.id}`)).status).toBe(200);
    expect((await t.call(user, 'DELETE', `/v1/attachments/${attachment.id}`)).status).toBe(404);
    expect(
      await eventually(
        () => filesOf(user),
        (keys) => keys.length === 0,
      ),
    ).toEqual([]);
  });
});
