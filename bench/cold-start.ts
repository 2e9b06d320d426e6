import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { APIGatewayAuthorizerResult, APIGatewayProxyResult, DynamoDBBatchResponse } from 'aws-lambda';
import { REPOSITORY_ROOT } from '../infra/declarations/repository.js';
import { LOCAL_ACCOUNT } from '../infra/local/gateway.js';
import { resultEvent } from '../infra/local/scanner.js';
import { readConfig } from '../shared/config.js';
import { uploadIntentKey } from '../shared/dynamo/keys.js';
import { fileKey } from '../shared/files/keys.js';
import type { EventApiAuthorizerResult } from '../shared/realtime/authorization.js';
import { type Route, routes } from '../shared/routes.js';
import { type BundleFigure, REFERENCE_NAME } from './bundles.js';
import { childResult } from './child-result.js';
import {
  authorizerEvent,
  eventInsertRecord,
  proxyEvent,
  queueMessageEvent,
  realtimeConnectEvent,
  streamInsertEvent,
  streamRemovalEvent,
} from './events.js';
import type { Fixture } from './fixture.js';
import { fileOf, multipartBody } from './multipart.js';
import { LOCAL_ENV } from './processes.js';
import { startStandIns } from './stand-ins.js';
import { median, ratio, round } from './stats.js';

const run = promisify(execFile);
const CHILD = join(REPOSITORY_ROOT, 'bench', 'cold-child.mjs');

export interface ColdStartFigure {
  name: string;
  runs: number;
  /** Median ms from process start to the handler's first response. */
  firstResponseMs: number;
  /** Median ms from process start to the bundle loaded (module init done). */
  loadedMs: number;
  /** firstResponseMs over the reference's. */
  ratio: number;
}

interface ChildTimes {
  started: number;
  loaded: number;
  responded: number;
  result: APIGatewayProxyResult | APIGatewayAuthorizerResult | EventApiAuthorizerResult | DynamoDBBatchResponse | unknown[];
}

/**
 * Each bundle loaded by `runs` fresh node processes, round-robin so that
 * machine noise hits every function alike, after one discarded round (disk
 * cache). Every first response must be a success, else the figure is void.
 */
export async function measureColdStarts(
  bundles: BundleFigure[],
  fixture: Fixture,
  env: Record<string, string>,
  runs: number,
): Promise<ColdStartFigure[]> {
  const times = new Map<string, ChildTimes[]>(bundles.map((bundle) => [bundle.name, []]));
  const standIns = await startStandIns();
  try {
    const childEnv = { PATH: process.env.PATH ?? '', ...LOCAL_ENV, ...env, ...standIns.env, AUTH_SECRET: fixture.authSecret };
    for (let round = 0; round <= runs; round += 1) {
      for (const bundle of bundles) {
        const event = firstEvent(bundle.name, fixture, round, env);
        const { stdout } = await run(process.execPath, [CHILD, join(REPOSITORY_ROOT, bundle.file)], {
          env: { ...childEnv, BENCH_EVENT: JSON.stringify(event) },
        });
        const child = childResult<ChildTimes>(stdout);
        assertSuccess(bundle.name, child.result);
        if (round > 0) times.get(bundle.name)!.push(child);
      }
    }
  } finally {
    await standIns.close();
  }
  const reference = median(times.get(REFERENCE_NAME)!.map((t) => t.responded));
  return bundles.map((bundle) => {
    const sample = times.get(bundle.name)!;
    const firstResponseMs = median(sample.map((t) => t.responded));
    return {
      name: bundle.name,
      runs: sample.length,
      firstResponseMs: round(firstResponseMs),
      loadedMs: round(median(sample.map((t) => t.loaded))),
      ratio: ratio(firstResponseMs, reference),
    };
  });
}

/** What a first request is made from: the fixture, the round (a delete gets its own object on every run), the backends. */
interface FirstRequestOf {
  fixture: Fixture;
  round: number;
  env: Record<string, string>;
}

const route = (name: string): Route => routes.find((candidate) => candidate.name === name)!;
const caller = ({ fixture }: FirstRequestOf) => ({ userId: fixture.userId });
const fromEnd = <T>(items: T[], round: number): T => items[items.length - 1 - round]!;
const attachmentsTable = ({ env }: FirstRequestOf) => readConfig({ ...LOCAL_ENV, ...env }).attachmentsTable;

/**
 * The first request of every bundle: each function the stack deploys
 * (infra/declarations/function-settings.ts; test/unit/bench/cold-start.test.ts holds it to
 * that list) and the reference.
 */
export const firstRequests: Record<string, (of: FirstRequestOf) => unknown> = {
  [REFERENCE_NAME]: ({ fixture }) => ({ userId: fixture.userId, conversationId: fixture.conversationIds[0] }),
  Authorizer: ({ fixture }) => authorizerEvent(fixture.token, route('GetConversation')),
  RealtimeAuthorizer: ({ fixture }) => realtimeConnectEvent(fixture.token),
  ListConversations: (of) => proxyEvent({ route: route('ListConversations'), ...caller(of), query: { limit: '10' } }),
  CreateConversation: (of) => proxyEvent({ route: route('CreateConversation'), ...caller(of), form: { contact_id: of.fixture.contactId } }),
  GetConversation: (of) =>
    proxyEvent({ route: route('GetConversation'), ...caller(of), pathParameters: { id: of.fixture.conversationIds[0]! } }),
  UpdateConversation: (of) =>
    proxyEvent({
      route: route('UpdateConversation'),
      ...caller(of),
      pathParameters: { id: of.fixture.conversationIds[1]! },
      form: { is_muted: 'true' },
    }),
  DeleteConversation: (of) =>
    proxyEvent({
      route: route('DeleteConversation'),
      ...caller(of),
      pathParameters: { id: fromEnd(of.fixture.conversationIds, of.round) },
    }),
  ListAttachments: (of) => proxyEvent({ route: route('ListAttachments'), ...caller(of), query: { limit: '10' } }),
  UploadAttachment: (of) => proxyEvent({ route: route('UploadAttachment'), ...caller(of), multipart: multipartBody(fileOf(64 * 1024)) }),
  GetAttachment: (of) => proxyEvent({ route: route('GetAttachment'), ...caller(of), pathParameters: { id: of.fixture.attachmentIds[0]! } }),
  UpdateAttachment: (of) =>
    proxyEvent({
      route: route('UpdateAttachment'),
      ...caller(of),
      pathParameters: { id: of.fixture.attachmentIds[0]! },
      form: { filename: 'renamed.jpg' },
    }),
  DeleteAttachment: (of) =>
    proxyEvent({ route: route('DeleteAttachment'), ...caller(of), pathParameters: { id: fromEnd(of.fixture.attachmentIds, of.round) } }),
  StartUploadSession: (of) =>
    proxyEvent({ route: route('StartUploadSession'), ...caller(of), form: { filename: 'video.mp4', file_size: String(1024 ** 3) } }),
  GetUploadSession: (of) =>
    proxyEvent({ route: route('GetUploadSession'), ...caller(of), pathParameters: { id: of.fixture.sessionIds[0]! } }),
  SignUploadParts: (of) =>
    proxyEvent({
      route: route('SignUploadParts'),
      ...caller(of),
      pathParameters: { id: of.fixture.sessionIds[0]! },
      form: { part_numbers: '1-100' },
    }),
  CompleteUploadSession: (of) => {
    const { id, parts } = of.fixture.completableSessions[of.round]!;
    return proxyEvent({ route: route('CompleteUploadSession'), ...caller(of), pathParameters: { id }, json: { parts } });
  },
  AbortUploadSession: (of) =>
    proxyEvent({ route: route('AbortUploadSession'), ...caller(of), pathParameters: { id: fromEnd(of.fixture.sessionIds, of.round) } }),
  ListEvents: (of) => proxyEvent({ route: route('ListEvents'), ...caller(of), query: { limit: '10' } }),
  GetEvent: (of) => proxyEvent({ route: route('GetEvent'), ...caller(of), pathParameters: { id: of.fixture.event.id } }),
  GetRealtime: (of) => proxyEvent({ route: route('GetRealtime'), ...caller(of) }),
  // A failed upload's intent gone from the stream: a read of the record, a delete of the file.
  Cleanup: (of) =>
    streamRemovalEvent(attachmentsTable(of), uploadIntentKey(`att_cold${of.round}`, 'run'), {
      file_key: fileKey(of.fixture.userId, `att_cold${of.round}`, 'run'),
    }),
  // An upload's record added to the attachments table: its thread's other members reached (one upload per run).
  FanOut: (of) => streamInsertEvent(attachmentsTable(of), of.fixture.fanOutItems[of.round]!),
  // A preview request whose record is gone: sharp loaded, the record read, the thumbnails' keys removed.
  Previews: (of) =>
    queueMessageEvent('previews', {
      attachment_id: `att_cold${of.round}`,
      file_key: fileKey(of.fixture.userId, `att_cold${of.round}`, 'preview'),
    }),
  // GuardDuty's result for a file whose record is gone: kept beside it, the record read.
  ScanRecorder: (of) => {
    const { region, filesBucket } = readConfig({ ...LOCAL_ENV, ...of.env });
    const key = fileKey(of.fixture.userId, `att_cold${of.round}`, 'scan');
    return resultEvent({ region, account: LOCAL_ACCOUNT, bucket: filesBucket, planArn: 'bench' }, key, 'NO_THREATS_FOUND');
  },
  // A scan timer for a file whose record is gone: the kept result and the record read.
  ScanTimeouts: (of) =>
    queueMessageEvent('scan-timers', { file_key: fileKey(of.fixture.userId, `att_cold${of.round}`, 'timer'), due_at: 0 }),
  // A settling timer for a group whose thread is not large: its record read.
  LargeThreadSettling: (of) => queueMessageEvent('thread-settling', { group_id: `g_cold${of.round}` }),
  // The events pipe's batch of one new event item.
  EventDetail: ({ fixture }) => [eventInsertRecord(fixture.userId, fixture.event)],
  // One new event item from the events stream: its hint published to the Event API's stand-in.
  RealtimePublisher: ({ fixture }) => ({ Records: [eventInsertRecord(fixture.userId, fixture.event)] }),
};

/** The first request of the bundle `name`. */
function firstEvent(name: string, fixture: Fixture, round: number, env: Record<string, string>): unknown {
  const request = Object.hasOwn(firstRequests, name) ? firstRequests[name] : undefined;
  if (!request) throw new Error(`No first request defined for ${name}: add one to bench/cold-start.ts`);
  return request({ fixture, round, env });
}

// EventBridge ignores a target's answer: the recorder answers nothing and fails by throwing (the child then exits non-zero).
const ANSWERS_NOTHING = new Set(['ScanRecorder']);

function assertSuccess(name: string, result: ChildTimes['result'] | undefined): void {
  if (result === undefined ? ANSWERS_NOTHING.has(name) : succeeded(result)) return;
  throw new Error(`${name}'s cold invocation did not succeed: ${String(JSON.stringify(result)).slice(0, 500)}`);
}

/** Each kind of function's success: a 2xx, an Allow, an authorized connection, a batch with no failure, one detail per record. */
function succeeded(result: ChildTimes['result'] | undefined): boolean {
  if (result === undefined) return false;
  // The enrichment answers one detail per record.
  if (Array.isArray(result)) return result.length === 1;
  if ('policyDocument' in result) return result.policyDocument.Statement.some((statement) => statement.Effect === 'Allow');
  if ('isAuthorized' in result) return result.isAuthorized;
  // The stream consumers answer a partial batch response (shared/stream-consumer.ts).
  if ('batchItemFailures' in result) return result.batchItemFailures.length === 0;
  return result.statusCode >= 200 && result.statusCode < 300;
}
