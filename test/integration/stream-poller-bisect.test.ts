import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runDynamodb } from '../support/api.js';
import { ensureTables } from '../../infra/local/dynamodb.js';
import { startStreamPoller } from '../../infra/local/stream-poller.js';
import { eventually } from '../support/eventually.js';

/**
 * The local stream poller hands a failed batch again in halves, as the stack's
 * event source mapping does with BisectBatchOnFunctionError: a batch too large
 * for one invocation still gets through, record by record in stream order.
 */
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const endpoint = runDynamodb();
const table = `bisect_${randomUUID().slice(0, 8)}`;
let client: DynamoDBClient;

beforeAll(async () => {
  client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials });
  await ensureTables(endpoint, 'us-east-1', credentials, { [table]: { partitionKey: 'pk', sortKey: 'sk', indexes: [], stream: 'KEYS_ONLY' } });
});
afterAll(() => client?.destroy());

it('hands a batch its handler cannot take whole again in halves, until every record went through once in order', async () => {
  const keys = Array.from({ length: 20 }, (_, index) => `item-${String(index).padStart(2, '0')}`);
  for (const pk of keys) await client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, sk: { S: 'x' } } }));
  const invocations: number[] = [];
  const handled: string[] = [];
  const poller = startStreamPoller({
    endpoint,
    region: 'us-east-1',
    credentials,
    tables: [{ name: table, stream: 'KEYS_ONLY' }],
    filter: {},
    // Stands for a batch whose work outlasts one invocation's time budget: more than 3 records fail.
    handler: async (event: DynamoDBStreamEvent) => {
      invocations.push(event.Records.length);
      if (event.Records.length > 3) throw new Error('batch too large for one invocation');
      handled.push(...event.Records.map((record) => record.dynamodb!.Keys!.pk!.S!));
    },
    functionTimeoutMs: 20_000,
  });
  try {
    await eventually(async () => handled.length, (count) => count >= keys.length);
  } finally {
    await poller.stop();
  }
  expect(handled).toEqual(keys);
  // A batch larger than the handler takes was read and tried whole, then handed again in halves.
  expect(invocations[0]).toBeGreaterThan(3);
  expect(invocations.filter((size) => size <= 3).length).toBeGreaterThan(0);
});
