import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureTables } from '../../infra/local/dynamodb.js';
import { startStreamPoller } from '../../infra/local/stream-poller.js';
import { runDynamodb } from '../support/api.js';

/**
 * The local stream poller's caughtUp, which tests wait on before relying on what a consumer did: it
 * settles only once everything written before the call was handled, a batch that failed and waits
 * for its retry included.
 */
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const endpoint = runDynamodb();
const table = `caught_up_${randomUUID().slice(0, 8)}`;
let client: DynamoDBClient;

beforeAll(async () => {
  client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials });
  await ensureTables(endpoint, 'us-east-1', credentials, {
    [table]: { partitionKey: 'pk', sortKey: 'sk', indexes: [], stream: 'KEYS_ONLY' },
  });
});
afterAll(() => client?.destroy());

it('settles caughtUp only after every record written before the call was handled, a failed batch retried included', async () => {
  const handled: string[] = [];
  let failuresLeft = 0;
  const poller = startStreamPoller({
    endpoint,
    region: 'us-east-1',
    credentials,
    tables: [{ name: table, stream: 'KEYS_ONLY' }],
    filter: {},
    // Fails its first invocations (three back-offs, about 1.75 s in all), as a consumer whose backend is down.
    handler: async (event: DynamoDBStreamEvent) => {
      if (failuresLeft > 0) {
        failuresLeft -= 1;
        throw new Error('backend down');
      }
      handled.push(...event.Records.map((record) => record.dynamodb!.Keys!.pk!.S!));
    },
    functionTimeoutMs: 20_000,
  });
  try {
    await poller.ready;
    // Nothing written: it settles.
    await poller.caughtUp();
    expect(handled).toEqual([]);

    failuresLeft = 3;
    const keys = ['first', 'second', 'third'];
    for (const pk of keys) await client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, sk: { S: 'x' } } }));
    await poller.caughtUp();
    expect(failuresLeft).toBe(0);
    expect(handled).toEqual(keys);
  } finally {
    await poller.stop();
  }
});

it('settles a caughtUp still waiting when the poller stops', async () => {
  const poller = startStreamPoller({
    endpoint,
    region: 'us-east-1',
    credentials,
    tables: [{ name: table, stream: 'KEYS_ONLY' }],
    filter: {},
    handler: async () => {
      throw new Error('never handles anything');
    },
    functionTimeoutMs: 20_000,
  });
  await poller.ready;
  await client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'stuck' }, sk: { S: 'x' } } }));
  const caughtUp = poller.caughtUp();
  await poller.stop();
  await expect(caughtUp).resolves.toBeUndefined();
});
