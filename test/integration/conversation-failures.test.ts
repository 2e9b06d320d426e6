import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterpartKey } from '../../shared/dynamo/keys.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { deadEndpoint } from '../support/dead-endpoint.js';


describe('when a create failed between its two writes', () => {
  let t: TestApi;
  let db: DynamoDBDocumentClient;
  beforeAll(async () => {
    t = await startTestApi();
    db = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: t.api.dynamodbEndpoint, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
    );
  });
  afterAll(() => t.close());

  const leaveDanglingRecord = (userId: string, contactId: string, ageMs: number) =>
    db.send(
      new PutCommand({
        TableName: t.api.config.conversationsTable,
        Item: {
          ...counterpartKey(userId, { kind: 'contact', id: contactId }),
          conversation_id: 'conv_01ARZ3NDEKTSV4RRFFQ69G5FAV',
          locked_at_ms: Date.now() - ageMs,
        },
      }),
    );

  it('repairs a uniqueness record that points at no conversation and creates the conversation', async () => {
    await leaveDanglingRecord('crashed', 'zoe', 60_000);
    const response = await t.call('crashed', 'POST', '/v1/conversations', { form: { contact_id: 'zoe' } });
    expect(response.status).toBe(201);
    const { Item } = await db.send(new GetCommand({ TableName: t.api.config.conversationsTable, Key: counterpartKey('crashed', { kind: 'contact', id: 'zoe' }) }));
    expect(Item?.conversation_id).toBe(response.body.id);
    expect((await t.call('crashed', 'POST', '/v1/conversations', { form: { contact_id: 'zoe' } })).body.id).toBe(response.body.id);
  });

  it('waits out the lease of a fresh record whose create never finished, then creates', async () => {
    await leaveDanglingRecord('crashed', 'yann', 0);
    const response = await t.call('crashed', 'POST', '/v1/conversations', { form: { contact_id: 'yann' } });
    expect(response.status).toBe(201);
  });
});

describe('when DynamoDB cannot be reached', () => {
  let t: TestApi;
  beforeAll(async () => {
    t = await startTestApi({ env: { DYNAMODB_ENDPOINT: await deadEndpoint() } });
  });
  afterAll(() => t.close());

  it.each([
    ['GET', '/v1/conversations', undefined],
    ['POST', '/v1/conversations', { contact_id: 'a' }],
    ['GET', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', undefined],
    ['PUT', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', { is_muted: 'true' }],
    ['DELETE', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', undefined],
  ])('%s %s answers 503 service_unavailable in the error shape', async (method, path, form) => {
    const response = await t.call('user', method, path, form ? { form } : {});
    expect(response.status).toBe(503);
    expect(response.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable' });
    expect(response.body.error.request_id).toBe(response.headers.get('x-request-id'));
    expect(response.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|stack|arn:/);
  });

  it('is its own server: another one started in the same process keeps its own working client', async () => {
    const healthy = await startTestApi();
    try {
      expect((await healthy.call('user', 'POST', '/v1/conversations', { form: { contact_id: 'a' } })).status).toBe(201);
      expect((await t.call('user', 'GET', '/v1/conversations')).status).toBe(503);
      expect((await healthy.call('user', 'GET', '/v1/conversations')).status).toBe(200);
    } finally {
      await healthy.close();
    }
  });

  it('still validates input before touching the backend', async () => {
    const response = await t.call('user', 'GET', '/v1/conversations?limit=0');
    expect(response.status).toBe(400);
  });
});
