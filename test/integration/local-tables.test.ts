import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, type StreamViewType } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJava, ensureTables } from '../../infra/local/dynamodb.js';
import { conversationsTable, eventsTable, uploadSessionsTable } from '../../shared/dynamo/tables.js';
import { startTestApi, type TestApi } from '../support/api.js';

// `npm start` keeps its tables under .data/: a table from an older version must get the indexes and the stream it lacks.
let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t?.close());

describe('ensureTables', () => {
  it('adds the indexes a table kept from an older version lacks, each active', async () => {
    const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
    const client = new DynamoDBClient({ endpoint: t.api.dynamodbEndpoint, region: 'us-east-1', credentials });
    const name = `older_conversations_${Date.now()}`;
    // Three of the conversations' indexes: one kept, two to add one after the other (each waits until ACTIVE, seconds
    // on a loaded machine), the same path as all seven.
    const definition = { ...conversationsTable, indexes: conversationsTable.indexes.slice(0, 3) };
    const [kept, ...added] = definition.indexes;
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: ['pk', 'sk', kept!.partitionKey].map((AttributeName) => ({ AttributeName, AttributeType: 'S' })),
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: kept!.name,
            KeySchema: [
              { AttributeName: kept!.partitionKey, KeyType: 'HASH' },
              { AttributeName: 'sk', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      }),
    );
    await ensureTables(t.api.dynamodbEndpoint, 'us-east-1', credentials, { [name]: definition });
    const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
    expect(Table?.GlobalSecondaryIndexes?.map((index) => [index.IndexName, index.IndexStatus]).sort()).toEqual(
      [kept!, ...added].map((index) => [index.name, 'ACTIVE']).sort(),
    );
    client.destroy();
  });

  it('gives a kept table the stream its definition asks for, of the view type it asks for', async () => {
    const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
    const client = new DynamoDBClient({ endpoint: t.api.dynamodbEndpoint, region: 'us-east-1', credentials });
    const older = { none: `older_sessions_${Date.now()}`, keysOnly: `older_sessions_keys_${Date.now()}` };
    await keyedOnly(client, older.none);
    await keyedOnly(client, older.keysOnly, 'KEYS_ONLY');
    await ensureTables(t.api.dynamodbEndpoint, 'us-east-1', credentials, {
      [older.none]: uploadSessionsTable,
      [older.keysOnly]: uploadSessionsTable,
    });
    for (const name of Object.values(older)) {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
      expect(Table?.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: 'OLD_IMAGE' });
      expect(Table?.LatestStreamArn).toBeDefined();
    }
    client.destroy();
  });

  it('refuses a kept events table without its local indexes, which DynamoDB makes only with the table, naming the folder to remove', async () => {
    const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
    const client = new DynamoDBClient({ endpoint: t.api.dynamodbEndpoint, region: 'us-east-1', credentials });
    const name = `older_events_${Date.now()}`;
    await keyedOnly(client, name, 'NEW_IMAGE');
    await expect(ensureTables(t.api.dynamodbEndpoint, 'us-east-1', credentials, { [name]: eventsTable })).rejects.toThrow(
      /local index by_type and local index by_resource differ from this one's\. Remove the local data folder/,
    );
    client.destroy();
  });
});

/** A table as an older version made it: its key, no index, and the stream given. */
function keyedOnly(client: DynamoDBClient, name: string, stream?: StreamViewType) {
  return client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: ['pk', 'sk'].map((AttributeName) => ({ AttributeName, AttributeType: 'S' })),
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      ...(stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: stream } } : {}),
    }),
  );
}

// The unit lane runs without Java (test/unit/infra/local/java-release.test.ts); this lane's DynamoDB Local needs it.
describe('the Java check before DynamoDB Local starts', () => {
  it('accepts the java of this machine, which runs the suite', () => {
    expect(() => checkJava()).not.toThrow();
  });
});
