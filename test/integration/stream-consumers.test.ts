import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DynamoDbLocal, ensureTables, startDynamoDbLocal } from '../../infra/local/dynamodb.js';
import { attachmentsTable, conversationsTable, eventsTable, idempotencyTable, uploadSessionsTable } from '../../shared/dynamo/tables.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { fileKeyOf, storedFilesOf, upload } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import { type FaultProxy, type ProxiedRequest, type Rule, startFaultProxy } from '../support/fault-proxy.js';

/**
 * `npm start` with DYNAMODB_ENDPOINT: a DynamoDB this server did not start
 * (here a DynamoDB Local of the test's own, as one in a container would be),
 * whose tables someone else created. The server runs the cleanup on their
 * streams as the stack's event source mappings do, unless
 * LOCAL_STREAM_CONSUMERS=off.
 */
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
let dynamodb: DynamoDbLocal;
let client: DynamoDBClient;

/** The table names of one server, created on the external DynamoDB as its owner would, and the env that names them. */
async function externalTables(prefix: string): Promise<Record<string, string>> {
  const names = {
    CONVERSATIONS_TABLE: `${prefix}conversations`,
    ATTACHMENTS_TABLE: `${prefix}attachments`,
    IDEMPOTENCY_TABLE: `${prefix}idempotency`,
    UPLOAD_SESSIONS_TABLE: `${prefix}upload_sessions`,
    EVENTS_TABLE: `${prefix}events`,
  };
  await ensureTables(dynamodb.endpoint, 'us-east-1', credentials, {
    [names.CONVERSATIONS_TABLE]: conversationsTable,
    [names.ATTACHMENTS_TABLE]: attachmentsTable,
    [names.IDEMPOTENCY_TABLE]: idempotencyTable,
    [names.UPLOAD_SESSIONS_TABLE]: uploadSessionsTable,
    [names.EVENTS_TABLE]: eventsTable,
  });
  return names;
}

/** Every record of the user in a table, read straight from DynamoDB. */
async function recordsOf(table: string, userId: string): Promise<string[]> {
  const { Items = [] } = await client.send(
    new QueryCommand({ TableName: table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': { S: userId } } }),
  );
  return Items.map((item) => item.sk!.S!);
}

beforeAll(async () => {
  dynamodb = await startDynamoDbLocal('127.0.0.1');
  client = new DynamoDBClient({ endpoint: dynamodb.endpoint, region: 'us-east-1', credentials });
});
afterAll(async () => {
  client?.destroy();
  await dynamodb?.close();
});

describe('a local server on another DynamoDB', () => {
  let t: TestApi;
  let tables: Record<string, string>;
  beforeAll(async () => {
    tables = await externalTables('on_');
    t = await startTestApi({ env: { DYNAMODB_ENDPOINT: dynamodb.endpoint, ...tables } });
  });
  afterAll(() => t?.close());

  it('uses that DynamoDB, not one of its own', () => {
    expect(t.api.dynamodbEndpoint).toBe(dynamodb.endpoint);
  });

  it("removes a deleted attachment's file, and a deleted conversation's attachment records and files", async () => {
    const user = 'external_cleaner';
    const single = (await upload(t, user, { bytes: 'alone', filename: 'alone.txt' })).body;
    const conversation = (await t.call(user, 'POST', '/v1/conversations', { form: { contact_id: 'erin' } })).body;
    const inside = [];
    for (const index of [1, 2])
      inside.push((await upload(t, user, { bytes: `inside ${index}`, filename: 'in.txt' }, { conversation_id: conversation.id })).body);
    expect((await storedFilesOf(t.api.s3Endpoint, user)).sort()).toEqual([single, ...inside].map((a) => fileKeyOf(a)).sort());

    expect((await t.call(user, 'DELETE', `/v1/attachments/${single.id}`)).status).toBe(200);
    const afterSingle = await eventually(
      () => storedFilesOf(t.api.s3Endpoint, user),
      (keys) => keys.length === 2,
    );
    expect(afterSingle.sort()).toEqual(inside.map((a) => fileKeyOf(a)).sort());

    expect((await t.call(user, 'DELETE', `/v1/conversations/${conversation.id}`)).status).toBe(200);
    expect(
      await eventually(
        () => recordsOf(tables.ATTACHMENTS_TABLE!, user),
        (records) => records.length === 0,
      ),
    ).toEqual([]);
    expect(
      await eventually(
        () => storedFilesOf(t.api.s3Endpoint, user),
        (keys) => keys.length === 0,
      ),
    ).toEqual([]);
  });
});

describe('LOCAL_STREAM_CONSUMERS=off', () => {
  const streamReads = (request: ProxiedRequest) =>
    request.target === 'DynamoDB_20120810.DescribeTable' || (request.target ?? '').startsWith('DynamoDBStreams_20120810.');
  let proxy: FaultProxy;
  let seen: Rule;
  let off: TestApi;
  let tables: Record<string, string>;
  beforeAll(async () => {
    tables = await externalTables('off_');
    // Between the server and DynamoDB, to see every call it makes (no faults).
    proxy = await startFaultProxy(dynamodb.endpoint);
    seen = proxy.inject({ match: streamReads, times: Number.MAX_SAFE_INTEGER, fault: { kind: 'delay', ms: 0 } });
    off = await startTestApi({ env: { DYNAMODB_ENDPOINT: proxy.endpoint, LOCAL_STREAM_CONSUMERS: 'off', ...tables } });
  });
  afterAll(async () => {
    await off?.close();
    await proxy?.close();
  });

  it('reads no stream, so a deleted attachment keeps its file until a consumer runs', async () => {
    const user = 'unconsumed';
    const attachment = (await upload(off, user, { bytes: 'left behind', filename: 'left.txt' })).body;
    expect((await off.call(user, 'DELETE', `/v1/attachments/${attachment.id}`)).status).toBe(200);
    expect(await recordsOf(tables.ATTACHMENTS_TABLE!, user)).toEqual([]);
    expect(await storedFilesOf(off.api.s3Endpoint, user)).toEqual([fileKeyOf(attachment)]);

    // A server with consumers on the same tables and files finds the removal still in the stream and cleans it up:
    // the removal waited there, unread, the whole time the first server ran.
    const on = await startTestApi({ env: { DYNAMODB_ENDPOINT: dynamodb.endpoint, S3_ENDPOINT: off.api.s3Endpoint, ...tables } });
    try {
      expect(
        await eventually(
          () => storedFilesOf(off.api.s3Endpoint, user),
          (keys) => keys.length === 0,
        ),
      ).toEqual([]);
    } finally {
      await on.close();
    }
    expect(seen.fired).toBe(0);
  });

  it('is on or off, nothing else', async () => {
    await expect(startTestApi({ env: { LOCAL_STREAM_CONSUMERS: 'false' } })).rejects.toThrow(
      'LOCAL_STREAM_CONSUMERS must be on or off, got "false"',
    );
  });
});
