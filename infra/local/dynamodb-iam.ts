import { randomUUID } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import { crc32 } from 'node:zlib';
import { logger } from '../../shared/observability.js';
import { type AccessRequest, type Denial, type LocalResources, type PolicyEvaluator, tableArn } from './iam.js';

/**
 * IAM in front of a DynamoDB that has none (DynamoDB Local): a loopback
 * proxy that reads each request's operation (X-Amz-Target) and JSON body,
 * asks the evaluator whether the signing function's role allows every action
 * AWS authorises it as (`accessRequests`), and forwards it untouched, or
 * answers as DynamoDB answers a refused call: HTTP 400, AccessDeniedException,
 * AWS's message. The SDK behind the function then does with it what it does
 * on AWS (no retry; the service sees the error).
 *
 * One upstream connection per client connection, bytes passed as they come:
 * a reset, a stall or a refused connection upstream (a dead endpoint, the
 * tests' fault proxy) reaches the client as it happened.
 */
export async function startDynamoDbEnforcer(options: {
  host: string;
  upstream: string;
  evaluator: PolicyEvaluator;
  resources: Pick<LocalResources, 'account' | 'region'>;
}): Promise<{ endpoint: string; close(): Promise<void> }> {
  const upstream = new URL(options.upstream);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const backend = connect({ host: upstream.hostname, port: Number(upstream.port || 80) });
    for (const socket of [client, backend]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    }
    backend.on('data', (chunk) => client.write(chunk));
    backend.on('end', () => client.end());
    // As the backend failed, so the client's connection: reset, not a clean end.
    backend.on('error', () => client.resetAndDestroy());
    client.on('error', () => backend.destroy());
    client.on('close', () => backend.destroy());
    let pending = Buffer.alloc(0);
    let turn = Promise.resolve();
    client.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      for (let request = nextRequest(); request; request = nextRequest()) {
        pending = pending.subarray(request.bytes.length);
        const { bytes } = request;
        const parsed = request;
        // In order: a connection's requests are answered one after another.
        turn = turn.then(async () => {
          const denial = await decide(parsed).catch((error: unknown) => error as Error);
          if (denial instanceof Error) {
            logger.error('local IAM evaluation failed', { error: denial });
            client.write(dynamodbError(500, 'com.amazonaws.dynamodb.v20120810#InternalServerError', String(denial)));
          } else if (denial) {
            client.write(dynamodbError(400, 'com.amazon.coral.service#AccessDeniedException', denial.message));
          } else {
            backend.write(bytes);
          }
        });
      }
    });
    /** The next whole request; a request this proxy cannot frame ends the connection. */
    function nextRequest(): ParsedRequest | undefined {
      try {
        return takeRequest(pending);
      } catch (error) {
        logger.error('local DynamoDB IAM proxy refused a request', { error });
        client.resetAndDestroy();
        return undefined;
      }
    }
  });

  async function decide(request: ParsedRequest): Promise<Denial | undefined> {
    const role = options.evaluator.roleOf(accessKeyIdOf(request.headers.authorization));
    if (!role) return undefined;
    const target = request.headers['x-amz-target'] ?? '';
    const operation = target.slice(target.indexOf('.') + 1);
    const body = request.body.length > 0 ? JSON.parse(request.body.toString('utf8')) : {};
    return options.evaluator.denial(role, accessRequests(operation, body, options.resources));
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.host, () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://${options.host}:${port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

interface ParsedRequest {
  /** The whole request as it came (head and body). */
  bytes: Buffer;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: Buffer;
}

/** One whole HTTP/1.1 request from the front of `data`, or undefined until all of it has come. */
export function takeRequest(data: Buffer): ParsedRequest | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const headers: Record<string, string> = {};
  for (const line of data.subarray(0, end).toString('latin1').split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  // The SDK frames DynamoDB's requests with Content-Length, never chunks them.
  if (headers['transfer-encoding']) throw new Error('chunked requests are not supported by the local DynamoDB IAM proxy');
  const length = Number(headers['content-length'] ?? 0);
  const total = end + 4 + length;
  if (data.length < total) return undefined;
  return { bytes: data.subarray(0, total), headers, body: data.subarray(end + 4, total) };
}

/** The access key a request is signed with, from its SigV4 Authorization header. */
export const accessKeyIdOf = (authorization: string | undefined) =>
  authorization ? /Credential=([^/,\s]+)\//.exec(authorization)?.[1] : undefined;

/** DynamoDB's error answer: the JSON 1.0 body its SDKs read (`__type`, `Message`). */
function dynamodbError(status: 400 | 500, type: string, message: string): Buffer {
  const body = Buffer.from(JSON.stringify({ __type: type, Message: message }));
  const head =
    `HTTP/1.1 ${status} ${status === 400 ? 'Bad Request' : 'Internal Server Error'}\r\n` +
    `x-amzn-RequestId: ${randomUUID()}\r\n` +
    `x-amz-crc32: ${crc32(body)}\r\n` +
    'Content-Type: application/x-amz-json-1.0\r\n' +
    `Content-Length: ${body.length}\r\n` +
    `Date: ${new Date().toUTCString()}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
}

// biome-ignore lint/suspicious/noExplicitAny: a parsed DynamoDB request body, read by key per action as DynamoDB's API defines it
type Body = Record<string, any>;

/** A transaction's items, each authorised as the single-item action it stands for. */
const TRANSACT_WRITE_ACTIONS: Record<string, string> = {
  Put: 'dynamodb:PutItem',
  Update: 'dynamodb:UpdateItem',
  Delete: 'dynamodb:DeleteItem',
  ConditionCheck: 'dynamodb:ConditionCheckItem',
};

/**
 * What AWS authorises one DynamoDB (or DynamoDB Streams) call as: the action
 * on each resource it touches, with the condition keys the request carries.
 * TransactWriteItems and TransactGetItems: each item as its own action on its
 * own table; Query and Scan: the index's ARN when they read an index; the
 * batch actions once per table; the Streams calls on the stream's ARN
 * (GetRecords on the stream its iterator reads). ListTables and ListStreams
 * have no resource (`*`).
 */
export function accessRequests(operation: string, body: Body, resources: Pick<LocalResources, 'account' | 'region'>): AccessRequest[] {
  const table = (name: string) => tableArn(resources, name);
  const action = `dynamodb:${operation}`;
  const returns = (item: Body) => ({
    ...(item.ReturnValues ? { 'dynamodb:ReturnValues': item.ReturnValues } : {}),
    ...(body.ReturnConsumedCapacity ? { 'dynamodb:ReturnConsumedCapacity': body.ReturnConsumedCapacity } : {}),
  });
  switch (operation) {
    case 'GetItem':
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return [{ action, resource: table(body.TableName), context: returns(body) }];
    case 'Query':
    case 'Scan':
      return [
        {
          action,
          resource: body.IndexName ? `${table(body.TableName)}/index/${body.IndexName}` : table(body.TableName),
          context: { ...returns(body), ...(body.Select ? { 'dynamodb:Select': body.Select } : {}) },
        },
      ];
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.keys(body.RequestItems ?? {}).map((name) => ({ action, resource: table(name), context: returns(body) }));
    case 'TransactWriteItems':
      return (body.TransactItems ?? []).map((item: Body) => {
        const [kind, detail] = Object.entries(item)[0] as [string, Body];
        return { action: TRANSACT_WRITE_ACTIONS[kind] ?? `dynamodb:${kind}`, resource: table(detail.TableName), context: returns(body) };
      });
    case 'TransactGetItems':
      return (body.TransactItems ?? []).map((item: Body) => ({
        action: 'dynamodb:GetItem',
        resource: table(item.Get?.TableName),
        context: returns(body),
      }));
    case 'DescribeStream':
    case 'GetShardIterator':
      return [{ action, resource: localStreamArn(body.StreamArn, resources) }];
    case 'GetRecords':
      return [{ action, resource: localStreamArn(streamArnOfIterator(body.ShardIterator), resources) }];
    case 'ListTables':
    case 'ListStreams':
      return [{ action, resource: '*' }];
    default:
      return [{ action, resource: body.TableName ? table(body.TableName) : (body.ResourceArn ?? '*') }];
  }
}

/** A stream's ARN as DynamoDB Local names it (region `ddblocal`, its own account) under this server's region and account. */
function localStreamArn(arn: string, resources: Pick<LocalResources, 'account' | 'region'>): string {
  const [, tableName, streamLabel] = /:table\/([^/]+)\/stream\/(.+)$/.exec(arn ?? '') ?? [];
  if (!tableName || !streamLabel) throw new Error(`not a stream ARN: ${arn}`);
  return `${tableArn(resources, tableName)}/stream/${streamLabel}`;
}

/** DynamoDB Local's shard iterators carry the stream's ARN between `|` separators. */
function streamArnOfIterator(iterator: string): string {
  const arn = (iterator ?? '').split('|').find((part) => /^arn:aws:dynamodb:.*:table\/[^/]+\/stream\//.test(part));
  if (!arn) throw new Error('a shard iterator that names no stream');
  return arn;
}
