import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { APIGatewayAuthorizerResult, APIGatewayProxyResult } from 'aws-lambda';
import { REPOSITORY_ROOT } from '../infra/local/server.js';
import { readConfig } from '../shared/config.js';
import { uploadIntentKey } from '../shared/dynamo/keys.js';
import { fileKey } from '../shared/files/keys.js';
import { type Route, routes } from '../shared/routes.js';
import { type BundleFigure, REFERENCE_NAME } from './bundles.js';
import { childResult } from './child-result.js';
import { authorizerEvent, proxyEvent, streamRemovalEvent } from './events.js';
import type { Fixture } from './fixture.js';
import { fileOf, multipartBody } from './multipart.js';
import { LOCAL_ENV } from './processes.js';
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
  result: APIGatewayProxyResult | APIGatewayAuthorizerResult | { statusCode: number };
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
  for (let round = 0; round <= runs; round += 1) {
    for (const bundle of bundles) {
      const event = firstEvent(bundle.name, fixture, round, env);
      const { stdout } = await run(process.execPath, [CHILD, join(REPOSITORY_ROOT, bundle.file)], {
        env: { PATH: process.env.PATH ?? '', ...LOCAL_ENV, ...env, AUTH_SECRET: fixture.authSecret, BENCH_EVENT: JSON.stringify(event) },
      });
      const child = childResult<ChildTimes>(stdout);
      assertSuccess(bundle.name, child.result);
      if (round > 0) times.get(bundle.name)!.push(child);
    }
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

/** The first request each function gets; a delete gets its own conversation or attachment on every run. */
function firstEvent(name: string, fixture: Fixture, round: number, env: Record<string, string>): unknown {
  const [getId, updateId] = fixture.conversationIds;
  const deleteId = fixture.conversationIds[fixture.conversationIds.length - 1 - round]!;
  const [attachmentId] = fixture.attachmentIds;
  const deleteAttachmentId = fixture.attachmentIds[fixture.attachmentIds.length - 1 - round]!;
  const route = (routeName: string): Route => routes.find((candidate) => candidate.name === routeName)!;
  const userId = fixture.userId;
  switch (name) {
    case REFERENCE_NAME:
      return { userId, conversationId: getId };
    case 'Authorizer':
      return authorizerEvent(fixture.token, route('GetConversation'));
    case 'ListConversations':
      return proxyEvent({ route: route(name), userId, query: { limit: '10' } });
    case 'CreateConversation':
      return proxyEvent({ route: route(name), userId, form: { contact_id: fixture.contactId } });
    case 'GetConversation':
      return proxyEvent({ route: route(name), userId, pathParameters: { id: getId! } });
    case 'UpdateConversation':
      return proxyEvent({ route: route(name), userId, pathParameters: { id: updateId! }, form: { is_muted: 'true' } });
    case 'DeleteConversation':
      return proxyEvent({ route: route(name), userId, pathParameters: { id: deleteId } });
    case 'ListAttachments':
      return proxyEvent({ route: route(name), userId, query: { limit: '10' } });
    case 'UploadAttachment':
      return proxyEvent({ route: route(name), userId, multipart: multipartBody(fileOf(64 * 1024)) });
    case 'GetAttachment':
      return proxyEvent({ route: route(name), userId, pathParameters: { id: attachmentId! } });
    case 'UpdateAttachment':
      return proxyEvent({ route: route(name), userId, pathParameters: { id: attachmentId! }, form: { filename: 'renamed.jpg' } });
    case 'DeleteAttachment':
      return proxyEvent({ route: route(name), userId, pathParameters: { id: deleteAttachmentId } });
    case 'StartUploadSession':
      return proxyEvent({ route: route(name), userId, form: { filename: 'video.mp4', file_size: String(1024 ** 3) } });
    case 'GetUploadSession':
      return proxyEvent({ route: route(name), userId, pathParameters: { id: fixture.sessionIds[0]! } });
    case 'SignUploadParts':
      return proxyEvent({ route: route(name), userId, pathParameters: { id: fixture.sessionIds[0]! }, form: { part_numbers: '1-100' } });
    case 'CompleteUploadSession': {
      const { id, parts } = fixture.completableSessions[round]!;
      return proxyEvent({ route: route(name), userId, pathParameters: { id }, json: { parts } });
    }
    case 'AbortUploadSession':
      return proxyEvent({ route: route(name), userId, pathParameters: { id: fixture.sessionIds[fixture.sessionIds.length - 1 - round]! } });
    case 'Cleanup':
      // A failed upload's intent gone from the stream: a read of the record, a delete of the file.
      return streamRemovalEvent(readConfig({ ...LOCAL_ENV, ...env }).attachmentsTable, uploadIntentKey(`att_cold${round}`, 'run'), {
        file_key: fileKey(userId, `att_cold${round}`, 'run'),
      });
    default:
      throw new Error(`No first request defined for ${name}: add one to bench/cold-start.ts`);
  }
}

function assertSuccess(name: string, result: ChildTimes['result'] | undefined): void {
  // A stream handler answers nothing; a failure throws, and the child exits non-zero.
  if (result === undefined) {
    if (name === 'Cleanup') return;
  } else if ('policyDocument' in result) {
    if (result.policyDocument.Statement.some((statement) => statement.Effect === 'Allow')) return;
  } else if (result.statusCode >= 200 && result.statusCode < 300) {
    return;
  }
  throw new Error(`${name}'s cold invocation did not succeed: ${JSON.stringify(result).slice(0, 500)}`);
}
