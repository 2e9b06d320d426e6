import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../shared/dynamo/keys.js';
import { startTestApi, type TestApi } from '../support/api.js';

const createWithKey = (t: TestApi, userId: string, key: string, form: Record<string, string>) =>
  t.call(userId, 'POST', '/v1/conversations', { form, headers: { 'idempotency-key': key } });

describe('Idempotency-Key after a failure of ours', () => {
  let t: TestApi;
  let db: DynamoDBDocumentClient;
  beforeAll(async () => {
    t = await startTestApi();
    const client = new DynamoDBClient({
      endpoint: t.api.dynamodbEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    });
    db = DynamoDBDocumentClient.from(client);
    // The conversations table is gone: creating a conversation fails with a 5xx.
    await client.send(new DeleteTableCommand({ TableName: t.api.config.conversationsTable }));
  });
  afterAll(() => t.close());

  it('does not keep a 5xx: the key is released (keeping its seed) so that a retry runs again', async () => {
    const failed = await createWithKey(t, 'unlucky', 'key-1', { contact_id: 'alice' });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    const { Item } = await db.send(
      new GetCommand({ TableName: t.api.config.idempotencyTable, Key: idempotencyKey('unlucky', 'key-1'), ConsistentRead: true }),
    );
    expect(Item).toMatchObject({ state: 'released' });
    expect(Item).not.toHaveProperty('response');
    const retried = await createWithKey(t, 'unlucky', 'key-1', { contact_id: 'alice' });
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });
});
