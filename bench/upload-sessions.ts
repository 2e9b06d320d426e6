import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { REPOSITORY_ROOT } from '../infra/local/server.js';
import { type Composition, credentials, s3Bucket } from '../shared/app.js';
import { fileKey } from '../shared/files/keys.js';
import { newId } from '../shared/ids.js';
import { routes } from '../shared/routes.js';
import type { BundleFigure } from './bundles.js';
import { childResult } from './child-result.js';
import { countingProxy } from './dynamodb-counter.js';
import { proxyEvent } from './events.js';
import type { Fixture } from './fixture.js';
import type { Json } from './local-api.js';
import { LOCAL_ENV, startProcess } from './processes.js';
import { median, ratio, round } from './stats.js';

/**
 * Upload sessions: a large file through the session flow (start, presign the
 * parts 100 a call, PUT them straight to S3, complete) against the same parts
 * sent by UploadPart from this process at the same concurrency; the complete
 * function's peak memory for a small and a large file; and what the session
 * calls cost per GiB in API requests and DynamoDB operations.
 */
const MiB = 1024 * 1024;
const run = promisify(execFile);
export const SESSION_CONCURRENCY = 4;

export interface SessionFlowFigures {
  mebibytes: number;
  rounds: number;
  concurrency: number;
  partSize: number;
  partCount: number;
  sessionMs: number;
  directMs: number;
  sessionMiBps: number;
  directMiBps: number;
  /** Session flow rate over direct UploadPart rate. */
  ratio: number;
  /** Per GiB uploaded: API requests by route, and DynamoDB operations (by name) the API made for them. */
  apiRequestsPerGiB: Record<string, number>;
  dynamodbPerGiB: Record<string, number>;
  /** Read and write capacity units per GiB by DynamoDB's rules (items under 1 KB). */
  capacityPerGiB: { readUnits: number; writeUnits: number };
  /** The complete function's peak above idle while it completes a session of this size. */
  completeMemory: { mebibytes: number; peakAboveIdleMiB: number }[];
}

interface Session {
  id: string;
  part_size: number;
  part_count: number;
}

export async function measureUploadSessions(
  fixture: Fixture,
  bundles: BundleFigure[],
  backends: { DYNAMODB_ENDPOINT: string; S3_ENDPOINT: string },
  mebibytes: number,
  rounds: number,
): Promise<SessionFlowFigures> {
  // A server of its own, whose DynamoDB traffic passes through the counter.
  const counter = await countingProxy(backends.DYNAMODB_ENDPOINT);
  const server = await startProcess<{ url: string }>('server-process.ts', {
    ...backends,
    DYNAMODB_ENDPOINT: counter.endpoint,
    AUTH_SECRET: fixture.authSecret,
  });
  const api = apiClient(server.info.url, fixture.token);
  const base = randomBytes(8 * MiB);
  const s3 = directClient(fixture.composition);
  try {
    const sessionTimes: number[] = [];
    const directTimes: number[] = [];
    let requests: Record<string, number> = {};
    let operations: Record<string, number> = {};
    let plan: Session | undefined;
    for (let index = 0; index < rounds; index += 1) {
      directTimes.push(await timed(() => direct(s3, fixture.composition, fixture.userId, mebibytes * MiB, base)));
      counter.reset();
      api.reset();
      sessionTimes.push(
        await timed(async () => {
          const { session, attachmentId } = await sessionFlow(api, mebibytes * MiB, base);
          plan = session;
          await removeFile(fixture.composition, fileKey(fixture.userId, attachmentId, session.id));
        }),
      );
      requests = api.counts();
      operations = counter.counts();
    }
    const completeMemory = [];
    for (const size of [16, mebibytes])
      completeMemory.push({ mebibytes: size, peakAboveIdleMiB: round(await completePeak(api, fixture, bundles, backends, size, base)) });
    const perGiB = (counts: Record<string, number>) =>
      Object.fromEntries(Object.entries(counts).map(([name, count]) => [name, round((count * 1024) / mebibytes, 1)]));
    const sessionMs = median(sessionTimes);
    const directMs = median(directTimes);
    const dynamodbPerGiB = perGiB(operations);
    return {
      mebibytes,
      rounds,
      concurrency: SESSION_CONCURRENCY,
      partSize: plan!.part_size,
      partCount: plan!.part_count,
      sessionMs: round(sessionMs, 0),
      directMs: round(directMs, 0),
      sessionMiBps: round((mebibytes * 1000) / sessionMs),
      directMiBps: round((mebibytes * 1000) / directMs),
      ratio: ratio(directMs, sessionMs),
      apiRequestsPerGiB: perGiB(requests),
      dynamodbPerGiB,
      capacityPerGiB: capacityOf(dynamodbPerGiB),
      completeMemory,
    };
  } finally {
    s3.destroy();
    await server.stop();
    await counter.close();
  }
}

/**
 * DynamoDB's units for these operations (every item here is under 1 KB):
 * a strongly consistent read 1 RCU, a write 1 WCU, a transactional write
 * 2 WCU per item. The session reads are strongly consistent.
 */
function capacityOf(perGiB: Record<string, number>) {
  const count = (name: string) => perGiB[name] ?? 0;
  return {
    readUnits: round(count('GetItem') + count('Query'), 1),
    writeUnits: round(count('PutItem') + count('UpdateItem') + count('DeleteItem') + 2 * count('TransactWriteItemsItems'), 1),
  };
}

/** The bytes of part `number`: the base buffer with the part number written into it, so no two parts are alike. */
function partBytes(base: Buffer, fileSize: number, partSize: number, number: number): Buffer {
  const size = Math.min(partSize, fileSize - (number - 1) * partSize);
  const bytes = Buffer.from(base.subarray(0, size));
  bytes.writeUInt32BE(number, 0);
  return bytes;
}

async function pool(count: number, work: (number: number) => Promise<void>): Promise<void> {
  let next = 1;
  await Promise.all(
    Array.from({ length: SESSION_CONCURRENCY }, async () => {
      while (next <= count) await work(next++);
    }),
  );
}

/**
 * The S3 client (a dev dependency; no function bundles it) for the direct
 * upload: S3's own multipart upload as an SDK user makes it, the baseline.
 */
function directClient(composition: Composition): S3Client {
  const { region, s3Endpoint } = composition.config;
  return new S3Client({
    region,
    credentials: composition.use(credentials),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(s3Endpoint ? { endpoint: s3Endpoint, forcePathStyle: true } : {}),
  });
}

/** Create, UploadPart at the same concurrency and part size, Complete: S3's own multipart upload from this process. */
async function direct(s3: S3Client, composition: Composition, userId: string, fileSize: number, base: Buffer): Promise<void> {
  const Bucket = composition.config.filesBucket;
  const Key = fileKey(userId, newId('att'), newId('upl'));
  const partSize = 8 * MiB;
  const count = Math.ceil(fileSize / partSize);
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
  const parts: { PartNumber: number; ETag: string }[] = [];
  await pool(count, async (PartNumber) => {
    const { ETag } = await s3.send(
      new UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body: partBytes(base, fileSize, partSize, PartNumber) }),
    );
    parts.push({ PartNumber, ETag: ETag! });
  });
  parts.sort((a, b) => a.PartNumber - b.PartNumber);
  await s3.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
  await removeFile(composition, Key);
}

const removeFile = (composition: Composition, key: string) => composition.use(s3Bucket).deleteObject(key);

interface ApiClient {
  call(method: string, path: string, body?: unknown): Promise<Json>;
  counts(): Record<string, number>;
  reset(): void;
}

function apiClient(url: string, token: string): ApiClient {
  let counts: Record<string, number> = {};
  return {
    async call(method, path, body) {
      const route = `${method} ${path.replace(/upl_[0-9A-Z]{26}/, ':id')}`;
      counts[route] = (counts[route] ?? 0) + 1;
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = await response.json();
      if (!response.ok) throw new Error(`${route}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    },
    counts: () => ({ ...counts }),
    reset: () => {
      counts = {};
    },
  };
}

/**
 * The bytes go out through Node's http module on both sides (the SDK's
 * request handler for UploadPart; a keep-alive agent here for the presigned
 * PUTs), so the comparison measures the session calls, not two HTTP clients:
 * fetch (undici) sent 8 MiB bodies ~1.7 × slower than either on this machine.
 */
const partAgent = new Agent({ keepAlive: true, maxSockets: SESSION_CONCURRENCY });

function putPart(url: string, body: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const put = request(url, { method: 'PUT', agent: partAgent, headers: { 'content-length': body.length } }, (response) => {
      response.resume();
      response.on('end', () =>
        response.statusCode === 200
          ? resolve(String(response.headers.etag))
          : reject(new Error(`part PUT answered ${response.statusCode}`)),
      );
    });
    put.on('error', reject);
    put.end(body);
  });
}

/** Start, presign 100 parts a call, PUT them (at the concurrency) straight to S3. */
async function uploadParts(
  api: ApiClient,
  fileSize: number,
  base: Buffer,
): Promise<{ session: Session; parts: { part_number: number; etag: string }[] }> {
  const session = (await api.call('POST', '/v1/upload_sessions', { filename: 'bench.bin', file_size: fileSize })) as Session;
  const urls = new Map<number, string>();
  for (let first = 1; first <= session.part_count; first += 100) {
    const numbers = Array.from({ length: Math.min(100, session.part_count - first + 1) }, (_, index) => first + index);
    const { data } = await api.call('POST', `/v1/upload_sessions/${session.id}/parts`, { part_numbers: numbers });
    for (const part of data as { part_number: number; url: string }[]) urls.set(part.part_number, part.url);
  }
  const parts: { part_number: number; etag: string }[] = [];
  await pool(session.part_count, async (number) => {
    parts.push({ part_number: number, etag: await putPart(urls.get(number)!, partBytes(base, fileSize, session.part_size, number)) });
  });
  parts.sort((a, b) => a.part_number - b.part_number);
  return { session, parts };
}

async function sessionFlow(api: ApiClient, fileSize: number, base: Buffer): Promise<{ session: Session; attachmentId: string }> {
  const { session, parts } = await uploadParts(api, fileSize, base);
  const attachment = await api.call('POST', `/v1/upload_sessions/${session.id}/complete`, { parts });
  if (attachment.file_size !== fileSize) throw new Error(`Completed ${attachment.file_size} bytes, not ${fileSize}`);
  return { session, attachmentId: attachment.id };
}

/**
 * The complete function's peak resident memory above idle, in a fresh
 * process as on Lambda (bench/upload-memory-child.mjs), after a warm-up
 * completion of a small session.
 */
async function completePeak(
  api: ApiClient,
  fixture: Fixture,
  bundles: BundleFigure[],
  backends: Record<string, string>,
  mebibytes: number,
  base: Buffer,
): Promise<number> {
  const bundle = bundles.find((candidate) => candidate.name === 'CompleteUploadSession');
  if (!bundle) throw new Error('No CompleteUploadSession bundle');
  const route = routes.find((candidate) => candidate.name === 'CompleteUploadSession')!;
  const directory = mkdtempSync(join(tmpdir(), 'bench-complete-'));
  try {
    const eventFor = async (bytes: number) => {
      const { session, parts } = await uploadParts(api, bytes, base);
      return JSON.stringify(proxyEvent({ route, userId: fixture.userId, pathParameters: { id: session.id }, json: { parts } }));
    };
    const warmUp = join(directory, 'warm-up.json');
    const complete = join(directory, 'complete.json');
    writeFileSync(warmUp, await eventFor(1024));
    writeFileSync(complete, await eventFor(mebibytes * MiB));
    const { stdout } = await run(
      process.execPath,
      ['--expose-gc', join(REPOSITORY_ROOT, 'bench', 'upload-memory-child.mjs'), join(REPOSITORY_ROOT, bundle.file), warmUp, complete],
      { env: { PATH: process.env.PATH ?? '', ...LOCAL_ENV, ...backends, AUTH_SECRET: fixture.authSecret } },
    );
    const child = childResult<{ idleKiB: number; peakKiB: number; warmUpStatus: number; status: number }>(stdout);
    if (child.status !== 201 || child.warmUpStatus !== 201) throw new Error(`Complete answered ${child.warmUpStatus}, ${child.status}`);
    return (child.peakKiB - child.idleKiB) / 1024;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}
