import { createHash, randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayTokenAuthorizerEvent, DynamoDBRecord, DynamoDBStreamEvent, SQSEvent } from 'aws-lambda';
import { callerIdentity } from '../infra/local/gateway.js';
import { encodeGroups, GROUPS_CONTEXT_KEY, type Groups } from '../shared/auth/groups.js';
import { eventKey } from '../shared/dynamo/keys.js';
import { EVENT_ATTRIBUTE, USER_ATTRIBUTE } from '../shared/events/item.js';
import type { ApiEvent } from '../shared/events/model.js';
import type { PreviewRequest } from '../shared/previews/service.js';
import type { EventApiAuthorizerEvent } from '../shared/realtime/authorization.js';
import type { Route } from '../shared/routes.js';
import type { ScanTimer } from '../shared/scanning/recorder.js';

/**
 * Events as API Gateway (REST, proxy integration) delivers them to a function
 * after the TOKEN authorizer allowed the call: what a cold function receives
 * as its first invocation.
 */
export interface EventRequest {
  route: Route;
  userId: string;
  /** The groups the token lists (none by default), in the context as the authorizer encodes them. */
  groups?: Groups;
  pathParameters?: Record<string, string>;
  query?: Record<string, string>;
  form?: Record<string, string>;
  json?: unknown;
  /** A multipart body: API Gateway passes it base64-encoded (binary media type). */
  multipart?: { contentType: string; body: Buffer };
}

export function proxyEvent({
  route,
  userId,
  groups = new Set(),
  pathParameters,
  query,
  form,
  json,
  multipart,
}: EventRequest): APIGatewayProxyEvent {
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(pathParameters?.[name] ?? ''));
  const body = multipart
    ? multipart.body.toString('base64')
    : form
      ? new URLSearchParams(form).toString()
      : json !== undefined
        ? JSON.stringify(json)
        : null;
  const contentType = multipart
    ? multipart.contentType
    : form
      ? 'application/x-www-form-urlencoded'
      : json !== undefined
        ? 'application/json'
        : undefined;
  const headers: Record<string, string> = {
    Accept: 'application/json',
    Authorization: 'Bearer <token>',
    Host: 'api.example.com',
    'User-Agent': 'bench',
    'X-Forwarded-For': '127.0.0.1',
    ...(contentType ? { 'Content-Type': contentType } : {}),
  };
  const requestId = randomUUID();
  return {
    resource: route.path,
    path,
    httpMethod: route.method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
    queryStringParameters: query ?? null,
    multiValueQueryStringParameters: query ? Object.fromEntries(Object.entries(query).map(([name, value]) => [name, [value]])) : null,
    pathParameters: pathParameters ?? null,
    stageVariables: null,
    body,
    isBase64Encoded: multipart !== undefined,
    requestContext: {
      accountId: '000000000000',
      apiId: 'benchapi',
      authorizer: { principalId: userId, userId, [GROUPS_CONTEXT_KEY]: encodeGroups(groups), integrationLatency: 12 },
      httpMethod: route.method,
      identity: callerIdentity('127.0.0.1', 'bench'),
      path: `/prod${path}`,
      protocol: 'HTTP/1.1',
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: route.name,
      resourcePath: route.path,
      stage: 'prod',
    },
  };
}

export function authorizerEvent(token: string, route: Route): APIGatewayTokenAuthorizerEvent {
  return {
    type: 'TOKEN',
    authorizationToken: `Bearer ${token}`,
    methodArn: `arn:aws:execute-api:us-east-1:000000000000:benchapi/prod/${route.method}${route.path}`,
  };
}

/**
 * What the cleanup receives from a table's stream (KEYS_ONLY, filtered to
 * removals): one record of an item removed from `table`.
 */
/** A removal as the stream delivers it; `old`: the removed item's string attributes (a stream with images). */
export function streamRemovalEvent(table: string, key: { pk: string; sk: string }, old?: Record<string, string>): DynamoDBStreamEvent {
  return {
    Records: [
      {
        eventID: randomUUID(),
        eventName: 'REMOVE',
        eventVersion: '1.1',
        eventSource: 'aws:dynamodb',
        awsRegion: 'us-east-1',
        eventSourceARN: `arn:aws:dynamodb:us-east-1:000000000000:table/${table}/stream/2026-01-01T00:00:00.000`,
        dynamodb: {
          ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
          Keys: { pk: { S: key.pk }, sk: { S: key.sk } },
          ...(old ? { OldImage: Object.fromEntries(Object.entries({ ...key, ...old }).map(([name, S]) => [name, { S }])) } : {}),
          SequenceNumber: '100000000000000000001',
          SizeBytes: 64,
          StreamViewType: old ? 'NEW_AND_OLD_IMAGES' : 'KEYS_ONLY',
        },
      },
    ],
  };
}

/** An item's attribute values, as a stream record carries them. */
export type Image = NonNullable<NonNullable<DynamoDBStreamEvent['Records'][number]['dynamodb']>['NewImage']>;

/**
 * What the fan-out receives from the attachments table's stream
 * (NEW_AND_OLD_IMAGES, filtered to inserts): one record of `item` added, the
 * item as DynamoDB holds it (attribute values, as the low-level client's
 * GetItem answers them).
 */
export function streamInsertEvent(table: string, item: Image): DynamoDBStreamEvent {
  const [removal] = streamRemovalEvent(table, { pk: item.pk!.S!, sk: item.sk!.S! }).Records;
  return {
    Records: [
      {
        ...removal!,
        eventName: 'INSERT',
        dynamodb: {
          ...removal!.dynamodb,
          NewImage: item,
          SizeBytes: Buffer.byteLength(JSON.stringify(item)),
          StreamViewType: 'NEW_AND_OLD_IMAGES',
        },
      },
    ],
  };
}

/** A new event item as the events table's stream (NEW_IMAGE) hands it to its readers (the pipe's enrichment, the publisher). */
export function eventInsertRecord(userId: string, event: ApiEvent): DynamoDBRecord {
  const [removal] = streamRemovalEvent('events', eventKey(userId, 1)).Records;
  const image: Image = { [USER_ATTRIBUTE]: { S: userId }, [EVENT_ATTRIBUTE]: { S: JSON.stringify(event) } };
  return { ...removal!, eventName: 'INSERT', dynamodb: { ...removal!.dynamodb, NewImage: image, StreamViewType: 'NEW_IMAGE' } };
}

/** What the Event API hands its Lambda authorizer when a client connects with `token`. */
export function realtimeConnectEvent(token: string): EventApiAuthorizerEvent {
  return {
    authorizationToken: `Bearer ${token}`,
    requestContext: { apiId: 'benchapi', accountId: '000000000000', requestId: randomUUID(), operation: 'EVENT_CONNECT' },
  };
}

/** One message of a queue (the previews', the scan timers', the settling timers'), as Lambda's SQS mapping hands it to its consumer (first delivery). */
export function queueMessageEvent(
  queue: 'previews' | 'scan-timers' | 'thread-settling',
  message: PreviewRequest | ScanTimer | { group_id: string },
): SQSEvent {
  const body = JSON.stringify(message);
  return {
    Records: [
      {
        messageId: randomUUID(),
        receiptHandle: 'bench',
        body,
        attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: String(Date.now()),
          SenderId: '000000000000',
          ApproximateFirstReceiveTimestamp: String(Date.now()),
        },
        messageAttributes: {},
        md5OfBody: createHash('md5').update(body).digest('hex'),
        eventSource: 'aws:sqs',
        eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${queue}`,
        awsRegion: 'us-east-1',
      },
    ],
  };
}
