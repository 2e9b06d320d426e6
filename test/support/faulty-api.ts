import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { LOCAL_ACCOUNT } from '../../infra/local/gateway.js';
import { localIam, SCAN_TIMER_QUEUE_NAME, THREAD_SETTLING_QUEUE_NAME, tablesOf } from '../../infra/local/iam.js';
import { startS3 } from '../../infra/local/s3.js';
import type { LocalApiOptions } from '../../infra/local/server.js';
import { readConfig } from '../../shared/config.js';
import { sharedDynamodb, startTestApi, type TestApi } from './api.js';
import { type FaultProxy, startFaultProxy } from './fault-proxy.js';
import { recordGrantsIn } from './grants-used.js';

const HOST = '127.0.0.1';
const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/**
 * The local API with a fault proxy in front of each backend (the run's
 * DynamoDB Local, where the server makes its own tables, an S3 stand-in
 * of its own, and the scan and settling timers' queues on the server's listener), so that
 * the API's clients talk to them only through the proxies, so a test can
 * lose, stall or refuse any single DynamoDB, S3 or timer call the handlers make. The test audits through the API (and
 * an S3 listing that bypasses the proxy).
 */
export interface FaultyApi {
  t: TestApi;
  dynamodb: FaultProxy;
  s3: FaultProxy;
  /** In front of the scan timers' and the settling timers' queues (the fan-out's sends to them). */
  sqs: FaultProxy;
  /** Every key in the files bucket, read from the S3 stand-in directly. */
  storedKeys(prefix?: string): Promise<string[]>;
  close(): Promise<void>;
}

/** What a test may set on the server behind the proxies (e.g. a short function timeout, its clock, LARGE_GROUP_SIDES or SCANNING=off in `env`). */
export type FaultyApiOptions = Pick<
  LocalApiOptions,
  'functionTimeoutMs' | 'clock' | 'timeToLiveDelayMs' | 'previewVisibilityMs' | 'scanDelayMs' | 'env'
>;

export async function startFaultyApi(options: FaultyApiOptions = {}): Promise<FaultyApi> {
  const { filesBucket } = readConfig(process.env);
  // The run's DynamoDB Local behind a proxy: the server creates its tables (under its own prefix) through it.
  const shared = sharedDynamodb();
  const dynamodb = await startFaultProxy(shared.endpoint);
  // The stand-in behind the proxy answers as the functions' roles, and reports the grants they use like every test server's.
  const resources = { account: LOCAL_ACCOUNT, region: REGION, tables: tablesOf(readConfig({})), bucket: filesBucket };
  const iam = localIam(CREDENTIALS, resources, undefined, recordGrantsIn(inject('grantsDirectory')));
  // The server's scanner stand-in hears of this S3's objects as of its own (it reads them through the proxy, faults and all).
  let scanned: TestApi | undefined;
  const objectCreated = (key: string) => scanned?.api.scanner?.objectCreated(key);
  const s3Backend = await startS3(HOST, filesBucket, CREDENTIALS, undefined, 0, [], iam, objectCreated);
  const s3 = await startFaultProxy(s3Backend.endpoint);
  // The queue is the server's own, on its listener: the proxy finds it there once the server listens.
  const sqs = await startFaultProxy(() => t.api.url);
  const t: TestApi = await startTestApi({
    ...options,
    sharedDynamodb: { ...shared, endpoint: dynamodb.endpoint },
    env: {
      ...options.env,
      S3_ENDPOINT: s3.endpoint,
      SCAN_TIMER_QUEUE_URL: `${sqs.endpoint}/${LOCAL_ACCOUNT}/${SCAN_TIMER_QUEUE_NAME}`,
      THREAD_SETTLING_QUEUE_URL: `${sqs.endpoint}/${LOCAL_ACCOUNT}/${THREAD_SETTLING_QUEUE_NAME}`,
    },
  });
  scanned = t;
  const lister = new S3Client({ region: REGION, endpoint: s3Backend.endpoint, forcePathStyle: true, credentials: CREDENTIALS });

  return {
    t,
    dynamodb,
    s3,
    sqs,
    async storedKeys(prefix = '') {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await lister.send(new ListObjectsV2Command({ Bucket: filesBucket, Prefix: prefix, ContinuationToken: token }));
        keys.push(...(page.Contents ?? []).map((object) => object.Key!));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return keys.sort();
    },
    async close() {
      dynamodb.calm();
      s3.calm();
      sqs.calm();
      await t.close();
      lister.destroy();
      await dynamodb.close();
      await s3.close();
      await sqs.close();
      await s3Backend.close();
    },
  };
}

/**
 * One faulty API for a test file: started before its tests, the proxies
 * calmed after each test (no fault outlives the test that set it), closed at
 * the end. Call the returned function inside a test.
 */
export function faultyApiForFile(options: FaultyApiOptions = {}): () => FaultyApi {
  let f: FaultyApi | undefined;
  beforeAll(async () => {
    f = await startFaultyApi(options);
  });
  afterEach(() => {
    f?.dynamodb.calm();
    f?.s3.calm();
    f?.sqs.calm();
  });
  afterAll(() => f?.close());
  return () => f!;
}
