import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll } from 'vitest';
import { ensureTables } from '../../infra/local/dynamodb.js';
import { type StreamPoller, type StreamPollerOptions, startStreamPoller } from '../../infra/local/stream-poller.js';
import type { TableDefinition } from '../../shared/dynamo/tables.js';
import { runDynamodb } from './api.js';

const REGION = 'us-east-1';
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

/** What the local stream poller's own tests share: tables with a stream on the worker's DynamoDB Local, pollers of them, writes. */
export interface StreamedTables<Name extends string> {
  /** Each table's name, fresh for the file. */
  names: Record<Name, string>;
  /** A poller of one table's stream, handing every record, with what the test says of its reading and its handler. */
  pollerOn(table: string, options: Pick<StreamPollerOptions, 'handler'> & Partial<StreamPollerOptions>): StreamPoller;
  /** Writes an item keyed `pk`: one record on the table's stream. */
  put(table: string, pk: string): Promise<unknown>;
}

/** Tables `<prefix>_<random>`, each with a KEYS_ONLY stream, made before the file's tests (call at the file's top level). */
export function streamedTables<const Name extends string>(...prefixes: Name[]): StreamedTables<Name> {
  const endpoint = runDynamodb();
  const names = Object.fromEntries(prefixes.map((prefix) => [prefix, `${prefix}_${randomUUID().slice(0, 8)}`])) as Record<Name, string>;
  let client: DynamoDBClient | undefined;
  beforeAll(async () => {
    client = new DynamoDBClient({ endpoint, region: REGION, credentials });
    const definition: TableDefinition = { partitionKey: 'pk', sortKey: 'sk', indexes: [], stream: 'KEYS_ONLY' };
    await ensureTables(endpoint, REGION, credentials, Object.fromEntries(Object.values<string>(names).map((name) => [name, definition])));
  });
  afterAll(() => client?.destroy());
  return {
    names,
    pollerOn: (table, options) =>
      startStreamPoller({
        endpoint,
        region: REGION,
        credentials,
        tables: [{ name: table, stream: 'KEYS_ONLY' }],
        filter: {},
        functionTimeoutMs: 20_000,
        ...options,
      }),
    put: (table, pk) => client!.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, sk: { S: 'x' } } })),
  };
}

/** The keys of a batch's records, in order. */
export const keysOf = (event: DynamoDBStreamEvent): string[] => event.Records.map((record) => record.dynamodb!.Keys!.pk!.S!);
