import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureTables } from '../../infra/local/dynamodb.js';
import { startStreamPoller } from '../../infra/local/stream-poller.js';
import { runDynamodb } from '../support/api.js';
import { eventually } from '../support/eventually.js';

/**
 * The local stream poller hands a failed batch again in halves, as the stack's
 * event source mapping does with BisectBatchOnFunctionError: a batch too large
 * for one invocation still gets through, record by record in stream order.
 * And it reads a partial batch response as the mapping does with
 * ReportBatchItemFailures: the records before the one named are kept, the
 * rest handed again.
 */
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const endpoint = runDynamodb();
const table = `bisect_${randomUUID().slice(0, 8)}`;
const resumeTable = `resume_${randomUUID().slice(0, 8)}`;
let client: DynamoDBClient;

beforeAll(async () => {
  client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials });
  await ensureTables(endpoint, 'us-east-1', credentials, {
    [table]: { partitionKey: 'pk', sortKey: 'sk', indexes: [], stream: 'KEYS_ONLY' },
    [resumeTable]: { partitionKey: 'pk', sortKey: 'sk', indexes: [], stream: 'KEYS_ONLY' },
  });
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
    await eventually(
      async () => handled.length,
      (count) => count >= keys.length,
    );
  } finally {
    await poller.stop();
  }
  expect(handled).toEqual(keys);
  // A batch larger than the handler takes was read and tried whole, then handed again in halves.
  expect(invocations[0]).toBeGreaterThan(3);
  expect(invocations.filter((size) => size <= 3).length).toBeGreaterThan(0);
});

it('resumes a batch from the record its handler names in a partial batch response, never handing the ones before again', async () => {
  const keys = Array.from({ length: 20 }, (_, index) => `item-${String(index).padStart(2, '0')}`);
  for (const pk of keys) await client.send(new PutItemCommand({ TableName: resumeTable, Item: { pk: { S: pk }, sk: { S: 'x' } } }));
  const invocations: string[][] = [];
  const handled: string[] = [];
  const poller = startStreamPoller({
    endpoint,
    region: 'us-east-1',
    credentials,
    tables: [{ name: resumeTable, stream: 'KEYS_ONLY' }],
    filter: {},
    // Stops at item-07 (a partial response), then at the first record of what is handed again (a partial response
    // naming the batch's first record: the batch fails, and is read again after the last record kept).
    handler: async (event: DynamoDBStreamEvent) => {
      const batch = event.Records.map((record) => record.dynamodb!.Keys!.pk!.S!);
      invocations.push(batch);
      const stopAt = invocations.length === 1 ? batch.indexOf('item-07') : invocations.length === 2 ? 0 : -1;
      const done = stopAt < 0 ? batch : batch.slice(0, stopAt);
      handled.push(...done);
      return stopAt < 0
        ? { batchItemFailures: [] }
        : { batchItemFailures: [{ itemIdentifier: event.Records[stopAt]!.dynamodb!.SequenceNumber! }] };
    },
    functionTimeoutMs: 900_000,
  });
  try {
    await eventually(
      async () => handled.length,
      (count) => count >= keys.length,
    );
  } finally {
    await poller.stop();
  }
  // Each record handled once, in order: what came before the record named was never handed again.
  expect(handled).toEqual(keys);
  expect(invocations[0]).toEqual(keys);
  // The batch split at the record named: the rest handed again at once.
  expect(invocations[1]).toEqual(keys.slice(7));
  // Named again, now as the first of its batch: a failure, read again after the last record kept (item-06).
  expect(invocations[2]).toEqual(keys.slice(7));
  expect(invocations).toHaveLength(3);
});
