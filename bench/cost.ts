import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { FAN_OUT_ENTRY, FUNCTION_SETTINGS } from '../infra/declarations/function-settings.js';
import { REPOSITORY_ROOT } from '../infra/local/server.js';

import { attachmentUploads, Composition, conversations, s3Bucket } from '../shared/app.js';
import type { Groups } from '../shared/auth/groups.js';
import type { Caller } from '../shared/caller.js';
import { attachmentKey } from '../shared/dynamo/keys.js';
import type { HttpHandler, ProxyHandler } from '../shared/http/handler.js';
import { type Route, routes } from '../shared/routes.js';
import { nowSeconds } from '../shared/time.js';
import { billedWriteUnits, type CapacityTally, callCount, emptyCapacityTally, meterCapacity } from './dynamo-capacity.js';
import { type EventRequest, type Image, proxyEvent, streamInsertEvent } from './events.js';
import type { Fixture } from './fixture.js';
import { fileOf, multipartBody } from './multipart.js';
import { median, round } from './stats.js';

/**
 * What a user pays AWS per million requests of each endpoint, from what each
 * request did in this run: every DynamoDB call's consumed capacity as the
 * backend reports it (ReturnConsumedCapacity, asked for by SDK middleware the
 * bench installs on the shared clients, and taken out of the answer again so
 * the handler sees what it always sees), every S3 call by operation, and the
 * handler's duration, billed as Lambda bills it (rounded up to the ms, at the
 * stack's memory and architecture). The handlers run in this process on the
 * bench's Composition (its DynamoDB and S3), invoked with API Gateway's proxy events.
 */

/** us-east-1 list prices (USD), the first pricing tier of each; see PRICE_LIST for the source and date. */
export const PRICES = {
  apiGatewayRestPerMillion: 3.5,
  /** The size guard's web ACL (infra/stack/constructs/size-guard.ts) inspects every request; its monthly fees are not per request. */
  wafRequestPerMillion: 0.6,
  lambdaRequestPerMillion: 0.2,
  lambdaGbSecond: { arm64: 0.0000133334, x86_64: 0.0000166667 },
  dynamoWriteUnitPerMillion: 0.625,
  dynamoReadUnitPerMillion: 0.125,
  /** S3 Standard: PUT, COPY, POST, LIST (and the multipart calls) per 1,000; GET per 1,000; DELETE is free. */
  s3PutPerThousand: 0.005,
  s3GetPerThousand: 0.0004,
  /** SQS standard queue, per million requests (each up to 64 KB); the previews queue's. */
  sqsRequestPerMillion: 0.4,
  /** GuardDuty Malware Protection for S3: per GB scanned, and per 1,000 objects evaluated. */
  guardDutyPerGb: 0.09,
  guardDutyPerThousandObjects: 0.215,
};

export const PRICE_LIST =
  'US East (N. Virginia), on-demand list prices of aws.amazon.com/{api-gateway,waf,lambda,dynamodb,s3,sqs,guardduty}/pricing as published in 2025 ' +
  '(DynamoDB after its November 2024 on-demand cut), first tier, no free tier; checked 2026-11-22 ' +
  "(GuardDuty: the pricing page's US East example as transcribed 2026-10-07, see docs/performance.md)";

/** By S3 operation (shared/s3/bucket.ts names them as the S3 API does). */
const S3_PUT_CLASS = new Set([
  'PutObject',
  'CopyObject',
  'CreateMultipartUpload',
  'UploadPart',
  'CompleteMultipartUpload',
  'ListObjectsV2',
  'ListParts',
]);
const S3_GET_CLASS = new Set(['GetObject', 'HeadObject']);
const S3_FREE = new Set(['DeleteObject', 'DeleteObjects', 'AbortMultipartUpload']);

export interface CostFigure {
  endpoint: string;
  invocations: number;
  /** Per request, means over the invocations. */
  dynamoCalls: number;
  readUnits: number;
  writeUnits: number;
  s3Calls: Record<string, number>;
  /** Lambda invocations per request: 1, or 2 with the fan-out the upload sets off. */
  lambdaInvocations: number;
  /** Median handler duration (ms) and the mean billed duration (ms, each invocation rounded up), the fan-out's included. */
  durationMs: number;
  billedMs: number;
  gbSeconds: number;
  /** USD per million requests. */
  dollarsPerMillion: { apiGateway: number; waf: number; lambda: number; dynamodb: number; s3: number; total: number };
  /**
   * Of the DynamoDB units and dollars above, what the events table took: the
   * outbox (shared/events/outbox.ts), a consistent read of the user's head,
   * then in the change's transaction the head's conditional update and one
   * Put per event. Its write units by AWS's rule for transactions from the
   * items sent (item-size.ts), in writeUnits too in place of what DynamoDB
   * Local reported for that table (`reportedWriteUnits`, lower).
   */
  outbox: { readUnits: number; writeUnits: number; reportedWriteUnits: number; dollarsPerMillion: number };
}

interface Tally {
  /** DynamoDB's, the events table's share apart (the outbox's). */
  dynamo: CapacityTally;
  s3Calls: Record<string, number>;
}

const emptyTally = (): Tally => ({ dynamo: emptyCapacityTally(), s3Calls: {} });

let recording: Tally | undefined;

/** Installed once on the Composition's clients; counts only while `recording` is set. */
function installMeters(composition: Composition): void {
  meterCapacity(composition, () => recording?.dynamo);
  composition.use(s3Bucket).observe((operation) => {
    const tally = recording;
    if (tally) tally.s3Calls[operation] = (tally.s3Calls[operation] ?? 0) + 1;
  });
}

/** A user of a scenario: who a token names, with the groups it grants. */
type Person = Omit<Caller, 'requestId'>;

/** The caller of the services' direct calls that set a scenario up (not counted). */
const benchCaller = ({ userId, groups }: Person): Caller => ({ userId, groups, requestId: 'bench' });

interface Scenario {
  endpoint: string;
  route: string;
  /** The request of invocation `index`; anything it sets up is not counted. */
  request: (index: number) => Promise<Omit<EventRequest, 'route' | 'userId'> & { headers?: Record<string, string> }>;
  /** Who calls; the fixture's user by default. */
  caller?: Person;
  /** The Composition the handlers run on; the bench's by default. */
  composition?: Composition;
  /**
   * An upload whose record then reaches the fan-out from the attachments
   * table's stream: the fan-out is invoked with that record too, counted, and
   * billed as an invocation of its own.
   */
  fanOut?: boolean;
}

function scenarios(composition: Composition, fixture: Fixture): Scenario[] {
  const [getId, updateId] = fixture.conversationIds as [string, string];
  const [attachmentId] = fixture.attachmentIds as [string];
  const conversationId = fixture.attachmentConversationId;
  const upload = (index: number) => ({
    multipart: multipartBody({ ...fileOf(64 * 1024), filename: `cost-${index}.jpg` }, { conversation_id: conversationId }),
  });
  return [
    { endpoint: 'GET /v1/conversations/:id', route: 'GetConversation', request: async () => ({ pathParameters: { id: getId } }) },
    { endpoint: 'GET /v1/conversations (page of 10)', route: 'ListConversations', request: async () => ({ query: { limit: '10' } }) },
    {
      endpoint: 'POST /v1/conversations (existing contact)',
      route: 'CreateConversation',
      request: async () => ({ form: { contact_id: fixture.contactId } }),
    },
    {
      endpoint: 'POST /v1/conversations (new contact)',
      route: 'CreateConversation',
      request: async () => ({ form: { contact_id: `cost-${randomUUID()}` } }),
    },
    {
      endpoint: 'POST /v1/conversations (new, Idempotency-Key)',
      route: 'CreateConversation',
      request: async () => ({ form: { contact_id: `cost-${randomUUID()}` }, headers: { 'Idempotency-Key': randomUUID() } }),
    },
    {
      // Mute, unmute, mute...: every call changes the item and its by_muted key, as a real toggle does.
      endpoint: 'PUT /v1/conversations/:id (mute / unmute)',
      route: 'UpdateConversation',
      request: async (index) => ({ pathParameters: { id: updateId }, form: { is_muted: index % 2 === 0 ? 'true' : 'false' } }),
    },
    {
      endpoint: 'DELETE /v1/conversations/:id (no attachments)',
      route: 'DeleteConversation',
      request: async () => {
        const { conversation } = await composition
          .use(conversations)
          .createConversation(benchCaller(fixture), { kind: 'contact', id: `cost-${randomUUID()}` }, undefined);
        return { pathParameters: { id: conversation.id } };
      },
    },
    { endpoint: 'GET /v1/attachments/:id', route: 'GetAttachment', request: async () => ({ pathParameters: { id: attachmentId } }) },
    { endpoint: 'GET /v1/attachments (page of 10)', route: 'ListAttachments', request: async () => ({ query: { limit: '10' } }) },
    { endpoint: 'POST /v1/attachments (64 KiB, into a conversation)', route: 'UploadAttachment', request: async (index) => upload(index) },
    {
      endpoint: 'POST /v1/attachments (64 KiB, Idempotency-Key)',
      route: 'UploadAttachment',
      request: async (index) => ({ ...upload(index), headers: { 'Idempotency-Key': randomUUID() } }),
    },
    {
      // Two names in turn: every call changes the record (and its by_conversation copy).
      endpoint: 'PUT /v1/attachments/:id',
      route: 'UpdateAttachment',
      request: async (index) => ({ pathParameters: { id: attachmentId }, form: { filename: `renamed-${index % 2}.jpg` } }),
    },
    {
      endpoint: 'DELETE /v1/attachments/:id',
      route: 'DeleteAttachment',
      request: async () => {
        const file = fileOf(4096);
        const attachment = await composition
          .use(attachmentUploads)
          .upload(benchCaller(fixture), { file: { filename: 'gone.jpg', fileType: file.type, bytes: file.bytes } }, undefined);
        return { pathParameters: { id: attachment.id } };
      },
    },
  ];
}

export async function measureCost(composition: Composition, fixture: Fixture, invocations: number): Promise<CostFigure[]> {
  installMeters(composition);
  const sharing = await sharingScenarios(composition);
  const figures: CostFigure[] = [];
  try {
    for (const scenario of [...scenarios(composition, fixture), ...sharing.scenarios]) {
      const on = scenario.composition ?? composition;
      const caller = scenario.caller ?? { userId: fixture.userId, groups: fixture.groups };
      const route = routes.find((candidate) => candidate.name === scenario.route)!;
      const handler = ((await import(join(REPOSITORY_ROOT, route.entry))) as { handler: HttpHandler<Composition> }).handler.withComposition(
        on,
      );
      const fanOut = scenario.fanOut ? await fanOutConsumer(on) : undefined;
      try {
        // The invocations of one request (the handler's, then the fan-out's), each one's duration.
        // The request is prepared (a DELETE's attachment uploaded) before the tally starts.
        const perform = async (request: Awaited<ReturnType<Scenario['request']>>): Promise<number[]> => {
          let started = performance.now();
          const body = await invoke(handler, route, caller, request);
          const durations = [performance.now() - started];
          if (fanOut) {
            const event = await fanOut.eventOf((JSON.parse(body) as { id: string }).id);
            started = performance.now();
            await fanOut.handler(event);
            durations.push(performance.now() - started);
          }
          return durations;
        };
        // One uncounted request first: module state, connections, JIT.
        await perform(await scenario.request(-1));
        const tallies: Tally[] = [];
        const durations: number[][] = [];
        for (let index = 0; index < invocations; index += 1) {
          const tally = emptyTally();
          const request = await scenario.request(index);
          recording = tally;
          try {
            durations.push(await perform(request));
          } finally {
            recording = undefined;
          }
          tallies.push(tally);
        }
        figures.push(figureOf(scenario.endpoint, tallies, durations));
      } finally {
        fanOut?.destroy();
      }
    }
  } finally {
    sharing.composition.destroy();
  }
  return figures;
}

/**
 * Uploads into shared threads, each followed by its fan-out: to the
 * contact's existing side, to a contact who holds none (the fan-out creates
 * the side), and to the 100 other sides of a group of 101. On a Composition of their
 * own whose clock moves a second before every upload, so each fan-out moves
 * the sides forward as uploads seconds apart do (a second upload within the
 * same second finds the sides already there and writes nothing).
 */
async function sharingScenarios(composition: Composition): Promise<{ composition: Composition; scenarios: Scenario[] }> {
  let now = nowSeconds();
  const sharingApp = new Composition(composition.config, () => now);
  installMeters(sharingApp);
  const people = sharingApp.use(conversations);
  const run = randomUUID().slice(0, 8);
  const alone: Groups = new Set();
  const sharer = `cost-sharer-${run}`;
  const contact = `cost-contact-${run}`;
  const { conversation: sharerSide } = await people.createConversation(
    benchCaller({ userId: sharer, groups: alone }),
    { kind: 'contact', id: contact },
    undefined,
  );
  await people.createConversation(benchCaller({ userId: contact, groups: alone }), { kind: 'contact', id: sharer }, undefined);
  const group = `cost-group-${run}`;
  const members: Person[] = Array.from({ length: 101 }, (_, index) => ({
    userId: `cost-member-${run}-${index}`,
    groups: new Set([group]),
  }));
  const groupSides: string[] = [];
  for (const member of members)
    groupSides.push((await people.createConversation(benchCaller(member), { kind: 'group', id: group }, undefined)).conversation.id);
  const upload = (index: number, conversationId: string) => {
    now += 1;
    return { multipart: multipartBody({ ...fileOf(64 * 1024), filename: `shared-${index}.jpg` }, { conversation_id: conversationId }) };
  };
  const shared = { route: 'UploadAttachment', app: sharingApp, fanOut: true };
  return {
    composition: sharingApp,
    scenarios: [
      {
        ...shared,
        endpoint: "POST /v1/attachments (64 KiB) + fan-out to the contact's side",
        caller: { userId: sharer, groups: alone },
        request: async (index) => upload(index, sharerSide.id),
      },
      {
        ...shared,
        endpoint: "POST /v1/attachments (64 KiB) + fan-out creating the contact's side",
        caller: { userId: sharer, groups: alone },
        request: async (index) => {
          const { conversation } = await people.createConversation(
            benchCaller({ userId: sharer, groups: alone }),
            { kind: 'contact', id: `cost-new-${run}-${index}` },
            undefined,
          );
          return upload(index, conversation.id);
        },
      },
      {
        ...shared,
        endpoint: 'POST /v1/attachments (64 KiB) + fan-out to 100 sides (group of 101)',
        caller: members[0]!,
        request: async (index) => upload(index, groupSides[0]!),
      },
    ],
  };
}

type StreamHandler = (event: DynamoDBStreamEvent) => Promise<void>;

/**
 * The fan-out function on `app`, and the stream record it gets for an
 * upload: the attachment's item as the table holds it (read by a client of
 * its own, so the read is not counted).
 */
async function fanOutConsumer(
  composition: Composition,
): Promise<{ handler: StreamHandler; eventOf(attachmentId: string): Promise<DynamoDBStreamEvent>; destroy(): void }> {
  const module = (await import(join(REPOSITORY_ROOT, FAN_OUT_ENTRY))) as {
    handler: { withComposition(composition: Composition): StreamHandler };
  };
  const { region, dynamodbEndpoint, credentials, attachmentsTable } = composition.config;
  const reader = new DynamoDBClient({
    region,
    ...(dynamodbEndpoint ? { endpoint: dynamodbEndpoint } : {}),
    ...(credentials ? { credentials } : {}),
  });
  return {
    handler: module.handler.withComposition(composition),
    async eventOf(attachmentId) {
      const key = attachmentKey(attachmentId);
      const { Item } = await reader.send(
        new GetItemCommand({ TableName: attachmentsTable, Key: { pk: { S: key.pk }, sk: { S: key.sk } }, ConsistentRead: true }),
      );
      if (!Item) throw new Error(`No record of the upload ${attachmentId}`);
      return streamInsertEvent(attachmentsTable, Item as Image);
    },
    destroy: () => reader.destroy(),
  };
}

async function invoke(
  handler: ProxyHandler,
  route: Route,
  caller: Person,
  request: Awaited<ReturnType<Scenario['request']>>,
): Promise<string> {
  const { headers, ...rest } = request;
  const event = proxyEvent({ route, userId: caller.userId, groups: caller.groups, ...rest });
  if (headers) {
    Object.assign(event.headers, headers);
    for (const [name, value] of Object.entries(headers)) event.multiValueHeaders[name] = [value];
  }
  const result = await handler(event);
  if (result.statusCode >= 300) throw new Error(`${route.name} answered ${result.statusCode}: ${result.body.slice(0, 300)}`);
  return result.body;
}

/** `durations`: per request, the duration of each of its invocations (the handler's, and the fan-out's if any). */
function figureOf(endpoint: string, tallies: Tally[], durations: number[][]): CostFigure {
  const mean = (pick: (tally: Tally) => number) => tallies.reduce((sum, tally) => sum + pick(tally), 0) / tallies.length;
  const s3Names = new Set(tallies.flatMap((tally) => Object.keys(tally.s3Calls)));
  const s3Calls = Object.fromEntries([...s3Names].map((name) => [name, mean((tally) => tally.s3Calls[name] ?? 0)]));
  // Lambda rounds each invocation up to the ms on its own.
  const billedMs =
    durations.reduce((sum, request) => sum + request.reduce((billed, ms) => billed + Math.ceil(ms), 0), 0) / durations.length;
  const lambdaInvocations = durations[0]!.length;
  const { memoryMb, architecture } = FUNCTION_SETTINGS;
  const gbSeconds = (memoryMb / 1024) * (billedMs / 1000);
  const readUnits = mean((tally) => tally.dynamo.readUnits);
  const outboxReadUnits = mean((tally) => tally.dynamo.eventsReadUnits);
  const outboxWriteUnits = mean((tally) => tally.dynamo.eventsWriteUnits);
  const outboxReportedWriteUnits = mean((tally) => tally.dynamo.eventsReportedWriteUnits);
  const writeUnits = mean((tally) => billedWriteUnits(tally.dynamo));
  const s3 = Object.entries(s3Calls).reduce((sum, [name, count]) => {
    if (S3_PUT_CLASS.has(name)) return sum + count * PRICES.s3PutPerThousand * 1000;
    if (S3_GET_CLASS.has(name)) return sum + count * PRICES.s3GetPerThousand * 1000;
    if (S3_FREE.has(name)) return sum;
    throw new Error(`No S3 price for ${name}: add it to bench/cost.ts`);
  }, 0);
  const apiGateway = PRICES.apiGatewayRestPerMillion;
  const waf = PRICES.wafRequestPerMillion;
  const lambda = lambdaInvocations * PRICES.lambdaRequestPerMillion + gbSeconds * PRICES.lambdaGbSecond[architecture] * 1e6;
  const dynamoDollars = (read: number, written: number) =>
    read * PRICES.dynamoReadUnitPerMillion + written * PRICES.dynamoWriteUnitPerMillion;
  const dynamodb = dynamoDollars(readUnits, writeUnits);
  return {
    endpoint,
    invocations: tallies.length,
    dynamoCalls: round(
      mean((tally) => callCount(tally.dynamo)),
      2,
    ),
    readUnits: round(readUnits, 2),
    writeUnits: round(writeUnits, 2),
    s3Calls,
    lambdaInvocations,
    durationMs: round(median(durations.map((request) => request.reduce((sum, ms) => sum + ms, 0))), 1),
    billedMs: round(billedMs, 1),
    gbSeconds: round(gbSeconds, 5),
    dollarsPerMillion: {
      apiGateway: round(apiGateway, 3),
      waf: round(waf, 3),
      lambda: round(lambda, 3),
      dynamodb: round(dynamodb, 3),
      s3: round(s3, 3),
      total: round(apiGateway + waf + lambda + dynamodb + s3, 3),
    },
    outbox: {
      readUnits: round(outboxReadUnits, 2),
      writeUnits: round(outboxWriteUnits, 2),
      reportedWriteUnits: round(outboxReportedWriteUnits, 2),
      dollarsPerMillion: round(dynamoDollars(outboxReadUnits, outboxWriteUnits), 3),
    },
  };
}

/**
 * An upload session moves its bytes straight to S3: per GiB at a part size,
 * CreateMultipartUpload + one UploadPart per part + CompleteMultipartUpload,
 * all PUT-class requests (the presigned part URLs are signed in the function,
 * no S3 request).
 */
export function multipartDollarsPerGiB(partSizeBytes: number): { requests: number; dollars: number } {
  const parts = Math.ceil(2 ** 30 / partSizeBytes);
  const requests = parts + 2;
  return { requests, dollars: round((requests * PRICES.s3PutPerThousand) / 1000, 5) };
}

/**
 * What GuardDuty charges to scan one file of `bytes` (docs/api.md,
 * "Scanning"), per million files: objects evaluated and GB scanned at its
 * list price, and the S3 requests it makes on the bucket's bill (one GET to
 * read the object, one PUT-class PutObjectTagging for its tag). The
 * recorder's own invocation and writes are not in it.
 */
export function scanDollarsPerMillion(bytes: number): { objects: number; scanned: number; s3: number; total: number } {
  const objects = PRICES.guardDutyPerThousandObjects * 1000;
  const scanned = (bytes / 1e9) * PRICES.guardDutyPerGb * 1e6;
  const s3 = PRICES.s3GetPerThousand * 1000 + PRICES.s3PutPerThousand * 1000;
  return { objects: round(objects, 3), scanned: round(scanned, 3), s3: round(s3, 3), total: round(objects + scanned + s3, 3) };
}
