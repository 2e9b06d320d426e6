import { describe, expect, it, vi } from 'vitest';

// The real evaluator, counted: a decision is made once per role, action, resource and condition keys.
const simulations = vi.hoisted(() => ({ count: 0 }));
vi.mock('@cloud-copilot/iam-simulate', async (importOriginal) => {
  const original = await importOriginal<typeof import('@cloud-copilot/iam-simulate')>();
  return {
    ...original,
    runSimulation: (...args: Parameters<typeof original.runSimulation>) => {
      simulations.count += 1;
      return original.runSimulation(...args);
    },
  };
});

// The unit lane shares modules between files (isolate: false): a file before this one may have loaded the
// evaluator unmocked, so the modules under test are loaded afresh, with the counted one.
vi.resetModules();
const { accessRequests, accessKeyIdOf, takeRequest } = await import('../../../../infra/local/dynamodb-iam.js');
const { CLEANUP_FUNCTION, EVENTS_PIPE, FAN_OUT_FUNCTION, functionKeyId, localIam, policyDocument } = await import(
  '../../../../infra/local/iam.js'
);
const { listingOf, s3AccessRequests } = await import('../../../../infra/local/s3-roles.js');

const at = { account: '000000000000', region: 'eu-west-1' };
const table = (name: string) => `arn:aws:dynamodb:eu-west-1:000000000000:table/${name}`;
const actionsOn = (requests: { action: string; resource: string }[]) => requests.map(({ action, resource }) => [action, resource]);

describe('what a DynamoDB call is authorised as', () => {
  it('an item call: its own action on its table, with ReturnValues and ReturnConsumedCapacity as condition keys', () => {
    for (const operation of ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem']) {
      expect(accessRequests(operation, { TableName: 'c', ReturnValues: 'ALL_OLD', ReturnConsumedCapacity: 'TOTAL' }, at)).toEqual([
        {
          action: `dynamodb:${operation}`,
          resource: table('c'),
          context: { 'dynamodb:ReturnValues': 'ALL_OLD', 'dynamodb:ReturnConsumedCapacity': 'TOTAL' },
        },
      ]);
    }
  });

  it("Query and Scan: on the index's ARN when they read an index, else on the table, with Select", () => {
    expect(actionsOn(accessRequests('Query', { TableName: 'c', IndexName: 'by_thread' }, at))).toEqual([
      ['dynamodb:Query', `${table('c')}/index/by_thread`],
    ]);
    expect(actionsOn(accessRequests('Query', { TableName: 'c' }, at))).toEqual([['dynamodb:Query', table('c')]]);
    expect(accessRequests('Scan', { TableName: 'c', IndexName: 'by_user', Select: 'COUNT' }, at)).toEqual([
      { action: 'dynamodb:Scan', resource: `${table('c')}/index/by_user`, context: { 'dynamodb:Select': 'COUNT' } },
    ]);
  });

  it('TransactWriteItems: each item as the action it stands for, on its own table', () => {
    const body = {
      TransactItems: [
        { Put: { TableName: 'events', Item: {} } },
        { Update: { TableName: 'conversations', Key: {} } },
        { Delete: { TableName: 'attachments', Key: {} } },
        { ConditionCheck: { TableName: 'conversations', Key: {}, ConditionExpression: 'x' } },
      ],
    };
    expect(actionsOn(accessRequests('TransactWriteItems', body, at))).toEqual([
      ['dynamodb:PutItem', table('events')],
      ['dynamodb:UpdateItem', table('conversations')],
      ['dynamodb:DeleteItem', table('attachments')],
      ['dynamodb:ConditionCheckItem', table('conversations')],
    ]);
  });

  it('TransactGetItems: each item a GetItem on its table; the batch actions once per table', () => {
    expect(
      actionsOn(accessRequests('TransactGetItems', { TransactItems: [{ Get: { TableName: 'a' } }, { Get: { TableName: 'b' } }] }, at)),
    ).toEqual([
      ['dynamodb:GetItem', table('a')],
      ['dynamodb:GetItem', table('b')],
    ]);
    expect(actionsOn(accessRequests('BatchGetItem', { RequestItems: { a: {}, b: {} } }, at))).toEqual([
      ['dynamodb:BatchGetItem', table('a')],
      ['dynamodb:BatchGetItem', table('b')],
    ]);
    expect(actionsOn(accessRequests('BatchWriteItem', { RequestItems: { a: [] } }, at))).toEqual([['dynamodb:BatchWriteItem', table('a')]]);
  });

  it('a table call on its table; ListTables and ListStreams on *', () => {
    expect(actionsOn(accessRequests('DescribeTable', { TableName: 'c' }, at))).toEqual([['dynamodb:DescribeTable', table('c')]]);
    expect(actionsOn(accessRequests('ListTables', {}, at))).toEqual([['dynamodb:ListTables', '*']]);
    expect(actionsOn(accessRequests('ListStreams', { TableName: 'c' }, at))).toEqual([['dynamodb:ListStreams', '*']]);
  });

  it("the Streams calls on the stream's ARN under this account and region (GetRecords: the stream its iterator reads)", () => {
    const local = 'arn:aws:dynamodb:ddblocal:000000000000:table/t_attachments/stream/2026-01-01T00:00:00.000';
    const ours = `${table('t_attachments')}/stream/2026-01-01T00:00:00.000`;
    expect(actionsOn(accessRequests('DescribeStream', { StreamArn: local }, at))).toEqual([['dynamodb:DescribeStream', ours]]);
    expect(actionsOn(accessRequests('GetShardIterator', { StreamArn: local, ShardId: 's' }, at))).toEqual([
      ['dynamodb:GetShardIterator', ours],
    ]);
    expect(actionsOn(accessRequests('GetRecords', { ShardIterator: `000|${local}|c2hhcmQ=` }, at))).toEqual([
      ['dynamodb:GetRecords', ours],
    ]);
    expect(() => accessRequests('GetRecords', { ShardIterator: 'opaque' }, at)).toThrow(/names no stream/);
  });
});

describe('a request read off the wire', () => {
  it('is whole only with all of its Content-Length, and names its signing key', () => {
    const body = '{"TableName":"c"}';
    const head = `POST / HTTP/1.1\r\nX-Amz-Target: DynamoDB_20120810.GetItem\r\nAuthorization: AWS4-HMAC-SHA256 Credential=localFanOut/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00\r\nContent-Length: ${body.length}\r\n\r\n`;
    expect(takeRequest(Buffer.from(head + body.slice(0, 5)))).toBeUndefined();
    const request = takeRequest(Buffer.from(`${head}${body}POST / HTTP/1.1\r\n`))!;
    expect(request.body.toString()).toBe(body);
    expect(request.bytes.toString()).toBe(head + body);
    expect(request.headers['x-amz-target']).toBe('DynamoDB_20120810.GetItem');
    expect(accessKeyIdOf(request.headers.authorization)).toBe('localFanOut');
  });
});

describe('what an S3 request is authorised as', () => {
  const object = 'arn:aws:s3:::b/files/u/a/1';
  const call = (method: string, query: Record<string, string> = {}, headers: Record<string, string> = {}) =>
    actionsOn(s3AccessRequests(method, 'b', 'files/u/a/1', query, headers));
  it('each of the calls the functions make', () => {
    expect(call('GET')).toEqual([['s3:GetObject', object]]);
    expect(call('HEAD')).toEqual([['s3:GetObject', object]]);
    expect(call('PUT')).toEqual([['s3:PutObject', object]]);
    expect(call('POST', { uploads: '' })).toEqual([['s3:PutObject', object]]);
    expect(call('PUT', { partNumber: '1', uploadId: 'u' })).toEqual([['s3:PutObject', object]]);
    expect(call('POST', { uploadId: 'u' })).toEqual([['s3:PutObject', object]]);
    expect(call('GET', { uploadId: 'u' })).toEqual([['s3:ListMultipartUploadParts', object]]);
    expect(call('DELETE', { uploadId: 'u' })).toEqual([['s3:AbortMultipartUpload', object]]);
    expect(call('DELETE')).toEqual([['s3:DeleteObject', object]]);
    expect(call('OPTIONS')).toEqual([]);
  });

  it('a copy also reads its source; a listing is ListBucket with its prefix', () => {
    expect(call('PUT', {}, { 'x-amz-copy-source': '/other/files/x%20y' })).toEqual([
      ['s3:PutObject', object],
      ['s3:GetObject', 'arn:aws:s3:::other/files/x y'],
    ]);
    expect(s3AccessRequests('GET', 'b', undefined, { 'list-type': '2', prefix: 'files/u/' }, {})).toEqual([
      { action: 's3:ListBucket', resource: 'arn:aws:s3:::b', context: { 's3:prefix': 'files/u/' } },
    ]);
    expect(listingOf('b', 'files/missing')).toEqual({
      action: 's3:ListBucket',
      resource: 'arn:aws:s3:::b',
      context: { 's3:prefix': 'files/missing' },
    });
  });
});

describe("the functions' roles, evaluated", () => {
  const base = { accessKeyId: 'local' };
  const resources = {
    ...at,
    tables: {
      conversations: 'p_conversations',
      attachments: 'p_attachments',
      idempotency: 'p_idempotency',
      uploadSessions: 'p_upload_sessions',
      events: 'p_events',
    },
    bucket: 'files-bucket',
  };
  const iam = localIam(base, resources);
  const role = (name: string) => iam.roleOf(functionKeyId(base, name))!;
  const allows = async (name: string, operation: string, body: object) =>
    (await iam.denial(role(name), accessRequests(operation, body, at))) === undefined;

  it('knows each function by its key, and the base key as no role (it may do anything)', () => {
    expect(role(FAN_OUT_FUNCTION).principal).toBe('arn:aws:sts::000000000000:assumed-role/FanOutRole/FanOut');
    expect(role('GetConversation').name).toBe('GetConversation');
    expect(iam.roleOf('local')).toBeUndefined();
    expect(iam.roleOf(undefined)).toBeUndefined();
  });

  it('the fan-out: checks a side in a transaction, queries by_thread only, never deletes', async () => {
    const transaction = (kind: string, name: string) => ({ TransactItems: [{ [kind]: { TableName: name, Key: {} } }] });
    expect(await allows(FAN_OUT_FUNCTION, 'TransactWriteItems', transaction('ConditionCheck', 'p_conversations'))).toBe(true);
    expect(await allows(FAN_OUT_FUNCTION, 'TransactWriteItems', transaction('Update', 'p_conversations'))).toBe(true);
    expect(await allows(FAN_OUT_FUNCTION, 'TransactWriteItems', transaction('Delete', 'p_conversations'))).toBe(false);
    expect(await allows(FAN_OUT_FUNCTION, 'TransactWriteItems', transaction('ConditionCheck', 'p_events'))).toBe(false);
    expect(await allows(FAN_OUT_FUNCTION, 'Query', { TableName: 'p_conversations', IndexName: 'by_thread' })).toBe(true);
    expect(await allows(FAN_OUT_FUNCTION, 'Query', { TableName: 'p_conversations' })).toBe(false);
    expect(await allows(FAN_OUT_FUNCTION, 'Query', { TableName: 'p_conversations', IndexName: 'by_user' })).toBe(false);
  });

  it('the cleanup queries by_conversation; the stream readers read their own streams only', async () => {
    const stream = (name: string) => `arn:aws:dynamodb:ddblocal:000000000000:table/${name}/stream/2026-01-01T00:00:00.000`;
    expect(await allows(CLEANUP_FUNCTION, 'Query', { TableName: 'p_attachments', IndexName: 'by_conversation' })).toBe(true);
    expect(await allows(CLEANUP_FUNCTION, 'GetRecords', { ShardIterator: `000|${stream('p_upload_sessions')}|x` })).toBe(true);
    expect(await allows(FAN_OUT_FUNCTION, 'GetRecords', { ShardIterator: `000|${stream('p_attachments')}|x` })).toBe(true);
    expect(await allows(FAN_OUT_FUNCTION, 'GetRecords', { ShardIterator: `000|${stream('p_conversations')}|x` })).toBe(false);
    expect(await allows(EVENTS_PIPE, 'DescribeStream', { StreamArn: stream('p_events') })).toBe(true);
    expect(await allows(EVENTS_PIPE, 'GetItem', { TableName: 'p_events' })).toBe(false);
  });

  it("refuses in AWS's words, naming the first item the role does not allow", async () => {
    const denial = await iam.denial(
      role('GetConversation'),
      accessRequests(
        'TransactWriteItems',
        { TransactItems: [{ Update: { TableName: 'p_conversations' } }, { ConditionCheck: { TableName: 'p_conversations' } }] },
        at,
      ),
    );
    expect(denial?.message).toBe(
      'User: arn:aws:sts::000000000000:assumed-role/GetConversationRole/GetConversation is not authorized to perform: dynamodb:UpdateItem on resource: ' +
        'arn:aws:dynamodb:eu-west-1:000000000000:table/p_conversations because no identity-based policy allows the dynamodb:UpdateItem action',
    );
  });

  it('S3: ListBucket holds on the files prefix only (its s3:prefix condition), as the stack grants it', async () => {
    expect(await iam.denial(role('CompleteUploadSession'), [listingOf('files-bucket', 'files/u/missing')])).toBeUndefined();
    expect(await iam.denial(role('CompleteUploadSession'), [listingOf('files-bucket', 'elsewhere/missing')])).toBeDefined();
    expect(await iam.denial(role('GetAttachment'), [listingOf('files-bucket', 'files/u/missing')])).toBeDefined();
  });

  it('decides each role, action, resource and condition keys once', async () => {
    const fresh = localIam(base, resources);
    const before = simulations.count;
    for (let i = 0; i < 5; i += 1)
      await fresh.denial(role(FAN_OUT_FUNCTION), accessRequests('GetItem', { TableName: 'p_conversations' }, at));
    expect(simulations.count - before).toBe(1);
    await fresh.denial(
      role(FAN_OUT_FUNCTION),
      accessRequests('GetItem', { TableName: 'p_conversations', ReturnConsumedCapacity: 'TOTAL' }, at),
    );
    expect(simulations.count - before).toBe(2);
  });

  it('takes a grant away when told (a test proving what needs it)', async () => {
    const without = localIam(base, resources, (name, granted) =>
      name === FAN_OUT_FUNCTION
        ? granted.map((p) => ({ ...p, actions: p.actions.filter((a) => a !== 'dynamodb:ConditionCheckItem') }))
        : granted,
    );
    const check = accessRequests('TransactWriteItems', { TransactItems: [{ ConditionCheck: { TableName: 'p_conversations' } }] }, at);
    expect(await without.denial(without.roleOf(functionKeyId(base, FAN_OUT_FUNCTION))!, check)).toBeDefined();
  });

  it('tells each grant an allowed call used, named by the part its table or bucket plays, whatever the server names them', async () => {
    const used: string[] = [];
    const recording = localIam(base, resources, undefined, ({ role, action, resource }) => used.push(`${role} ${action} ${resource}`));
    const as = (name: string) => recording.roleOf(functionKeyId(base, name))!;
    await recording.denial(as(FAN_OUT_FUNCTION), accessRequests('Query', { TableName: 'p_conversations', IndexName: 'by_thread' }, at));
    await recording.denial(as(FAN_OUT_FUNCTION), accessRequests('Query', { TableName: 'p_conversations' }, at));
    await recording.denial(as(CLEANUP_FUNCTION), s3AccessRequests('DELETE', 'files-bucket', 'files/u/a/b', {}, {}));
    expect(used).toEqual(['FanOut dynamodb:Query table:conversations/index/by_thread', 'Cleanup s3:DeleteObject bucket/files/*']);
  });

  it('renders a permission as the stack does: one Allow statement, its conditions as given', () => {
    expect(
      policyDocument([
        { actions: ['s3:ListBucket'], resources: ['arn:aws:s3:::b'], conditions: { StringLike: { 's3:prefix': 'files/*' } } },
      ]),
    ).toEqual({
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Action: ['s3:ListBucket'], Resource: ['arn:aws:s3:::b'], Condition: { StringLike: { 's3:prefix': 'files/*' } } },
      ],
    });
  });
});
