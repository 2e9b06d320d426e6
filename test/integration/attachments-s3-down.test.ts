import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoAttachmentStore } from '../../shared/attachments/dynamo-store.js';
import { Outbox } from '../../shared/events/outbox.js';
import { fileKey } from '../../shared/files/keys.js';
import { newId } from '../../shared/ids.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { upload } from '../support/attachments.js';
import { deadEndpoint } from '../support/dead-endpoint.js';

// S3 is down (nothing listens on its port); DynamoDB is up and shows what was written.
let t: TestApi;

beforeAll(async () => {
  t = await startTestApi({ env: { S3_ENDPOINT: await deadEndpoint() } });
});
afterAll(async () => {
  await t?.close();
});

describe('when S3 is unreachable', () => {
  it('answers an upload with 503 in the error shape and writes no record', async () => {
    const response = await upload(t, 'unlucky', { bytes: 'lost', filename: 'lost.txt' });
    expect(response.status).toBe(503);
    expect(response.body).toEqual({
      error: {
        type: 'api_error',
        code: 'service_unavailable',
        message: expect.any(String),
        request_id: expect.any(String),
      },
    });
    const list = await t.call('unlucky', 'GET', '/v1/attachments');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ has_more: false, data: [] });
  });

  it('answers an upload into a conversation with 503 and leaves the conversation without attachments', async () => {
    const conversation = (await t.call('unlucky', 'POST', '/v1/conversations', { form: { contact_id: 'gina' } })).body;
    const response = await upload(t, 'unlucky', { bytes: 'lost', filename: 'lost.txt' }, { conversation_id: conversation.id });
    expect(response.status).toBe(503);
    const list = await t.call('unlucky', 'GET', `/v1/attachments?conversation_id=${conversation.id}`);
    expect(list.body).toEqual({ has_more: false, data: [] });
  });

  it('deletes the record at once even while S3 is down: 200, and no record is left pointing at the file', async () => {
    // A record as an earlier upload (while S3 was up) left it, written through the real store.
    const client = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: t.api.dynamodbEndpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    const id = newId('att');
    const store = new DynamoAttachmentStore(
      client,
      t.api.config.attachmentsTable,
      t.api.config.conversationsTable,
      new Outbox(client, t.api.config.eventsTable),
    );
    const intent = {
      attachmentId: id,
      run: 'earlier-run',
      fileKey: fileKey('unlucky', id, 'earlier-run'),
      expiresAt: Math.ceil(Date.now() / 1000) + 600,
    };
    await store.intend(intent);
    await store.add(
      {
        id,
        message_id: null,
        filename: 'earlier.txt',
        file_type: 'text/plain',
        file_size: 7,
        created_at: 1_700_000_000,
        uploaded_by: 'unlucky',
        placement: null,
        file_key: intent.fileKey,
        scan_status: 'clean' as const,
      },
      'earlier-request',
      intent,
    );
    client.destroy();
    expect((await t.call('unlucky', 'GET', `/v1/attachments/${id}`)).status).toBe(200);

    // The file follows from the table's stream once S3 answers again (test/integration/cleanup.test.ts).
    const response = await t.call('unlucky', 'DELETE', `/v1/attachments/${id}`);
    expect(response.status).toBe(200);
    expect((await t.call('unlucky', 'GET', `/v1/attachments/${id}`)).status).toBe(404);
  });
});
