import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SignatureV4 } from '@smithy/signature-v4';
import { type InvocationTime, invocationTime } from '../../shared/deadline.js';
import type { AnyEventBridgeEvent } from '../../shared/event-target.js';
import { FILES_PREFIX } from '../../shared/files/keys.js';
import { logger } from '../../shared/observability.js';
import { s3Signer } from '../../shared/s3/signer.js';
import type { GuardDutyResult } from '../../shared/scanning/model.js';
import { SCAN_RESULT_DETAIL_TYPE, SCAN_RESULT_SOURCE } from '../../shared/scanning/result-event.js';
import { RESCAN_ACTION } from '../declarations/permissions.js';
import type { PolicyEvaluator } from './iam.js';

/**
 * The EICAR anti-malware test file's 68 characters (eicar.org): the one file
 * the stand-in reports as a threat.
 */
export const EICAR = String.raw`X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`;

/** The tag GuardDuty puts on a scanned object, its value the result (GuardDuty User Guide, "post-scan tagging"). */
export const SCAN_TAG = 'GuardDutyMalwareScanStatus';

export interface LocalScannerOptions {
  region: string;
  account: string;
  bucket: string;
  s3Endpoint: string;
  /** The plan role's key: the stand-in reads and tags as the plan's role, which the local IAM enforces. */
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Who may ask for a new scan: a key whose role allows guardduty:SendObjectMalwareScan on the plan, or the base key. */
  iam: PolicyEvaluator;
  baseKeyId: string;
  planArn: string;
  /** From an object's creation to its result. */
  delayMs: number;
  /** The scan recorder, as its own function, invoked as EventBridge invokes it (asynchronously, retried twice). */
  recorder: (event: AnyEventBridgeEvent, time?: InvocationTime) => Promise<void>;
  retries: number;
  retryDelayMs: number;
  functionTimeoutMs: number;
}

export interface LocalScanner {
  /** Told by the S3 stand-in of each object created (PUT, POST, copy, multipart completion). */
  objectCreated(key: string): void;
  /** Answers GuardDuty's SendObjectMalwareScan when the request is one; false otherwise. */
  handleRequest(request: IncomingMessage, response: ServerResponse): boolean;
  /** Results the recorder failed on after its retries (AWS: the recorder's dead-letter queue). */
  readonly deadLetters: readonly AnyEventBridgeEvent[];
  /** Scans started and not yet handed to the recorder. */
  readonly inFlight: number;
  stop(): Promise<void>;
}

/**
 * A stand-in for GuardDuty Malware Protection for S3, not a scanner: for each
 * object created under the files prefix (the plan's), after `delayMs`, it
 * reads the object as the plan's role, answers THREATS_FOUND for the EICAR
 * test file and NO_THREATS_FOUND for anything else, tags the object with the
 * result as GuardDuty does, and hands GuardDuty's documented result event to
 * the scan recorder as EventBridge invokes a Lambda target. An object gone
 * before its scan gets no result. What differs from GuardDuty:
 * docs/deploying.md.
 */
export function startLocalScanner(options: LocalScannerOptions): LocalScanner {
  const signer = s3Signer(options.region, options.credentials);
  const deadLetters: AnyEventBridgeEvent[] = [];
  const running = new Set<Promise<void>>();
  const stopping = new AbortController();
  let stopped = false;

  const track = (work: Promise<void>) => {
    running.add(work);
    void work.finally(() => running.delete(work));
  };

  const scan = async (key: string) => {
    // A scan still waiting when the server stops never answers (as a result lost with GuardDuty's outage).
    if (!(await sleep(options.delayMs, true, { signal: stopping.signal }).catch(() => false))) return;
    // GuardDuty reports an object it could not read (S3 failing) as FAILED, one it may not read as ACCESS_DENIED.
    const read = await readObject(signer, options, key).catch((error: unknown) => {
      logger.warn('scanner stand-in: the object could not be read; FAILED', { object_key: key, error });
      return 'failed' as const;
    });
    if (read === 'gone') {
      logger.warn('scanner stand-in: the object is gone before its scan; no result', { object_key: key });
      return;
    }
    const result: GuardDutyResult =
      read === 'denied' ? 'ACCESS_DENIED' : read === 'failed' ? 'FAILED' : read ? 'THREATS_FOUND' : 'NO_THREATS_FOUND';
    // A tag that fails is GuardDuty's "post scan action failed", a separate event: the result is published all the same.
    if (typeof read === 'boolean')
      await s3Call(signer, options, 'PUT', key, tagging(result)).catch((error: unknown) =>
        logger.warn('scanner stand-in: the object could not be tagged', { object_key: key, error }),
      );
    await deliver(resultEvent(options, key, result));
  };

  const deliver = async (event: AnyEventBridgeEvent) => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await options.recorder(event, invocationTime(options.functionTimeoutMs));
        return;
      } catch (error) {
        if (attempt >= options.retries || stopped) {
          deadLetters.push(event);
          logger.error('scan result moved to the dead letters after its retries', { event_id: event.id, error });
          return;
        }
        await sleep(options.retryDelayMs);
      }
    }
  };

  const start = (key: string) => {
    if (stopped || !key.startsWith(FILES_PREFIX)) return;
    track(scan(key).catch((error: unknown) => logger.error('scanner stand-in failed', { object_key: key, error })));
  };

  const askAgain = async (request: IncomingMessage, response: ServerResponse) => {
    const answer = (status: number, body: object) => {
      const text = JSON.stringify(body);
      response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      response.end(text);
    };
    const chunks: Buffer[] = [];
    for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk);
    const keyId = /Credential=([^/,\s]+)\//.exec(request.headers.authorization ?? '')?.[1];
    if (!keyId) return answer(403, { message: 'Missing Authentication Token' });
    if (keyId !== options.baseKeyId) {
      const role = options.iam.roleOf(keyId);
      if (!role) return answer(403, { message: 'The security token included in the request is invalid.' });
      // SendObjectMalwareScan has no resource type: IAM authorises it on `*`.
      const denial = await options.iam.denial(role, [{ action: RESCAN_ACTION, resource: '*' }]);
      if (denial) return answer(403, { __type: 'AccessDeniedException', message: denial.message });
    }
    const { s3Object } = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { s3Object?: { bucket?: string; key?: string } };
    if (s3Object?.bucket !== options.bucket || typeof s3Object.key !== 'string')
      return answer(400, { __type: 'BadRequestException', message: 'The bucket has no malware protection plan.' });
    // On demand, GuardDuty scans whatever the key (the plan's prefix does not apply).
    track(scan(s3Object.key).catch((error: unknown) => logger.error('scanner stand-in failed', { object_key: s3Object.key, error })));
    answer(200, {});
  };

  return {
    objectCreated: start,
    handleRequest(request, response) {
      if (request.method !== 'POST' || request.url !== '/object-malware-scan/send') return false;
      askAgain(request, response).catch((error: unknown) => {
        logger.error('scanner stand-in failed', { error });
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
      return true;
    },
    get deadLetters() {
      return deadLetters;
    },
    get inFlight() {
      return running.size;
    },
    async stop() {
      stopped = true;
      stopping.abort();
      await Promise.allSettled([...running]);
    },
  };
}

/**
 * Whether the object holds the EICAR string anywhere (a real scanner reads
 * much more; this is the test file's signature only), read as a stream so a
 * file of gigabytes is never held whole: true/false, or why it could not be read.
 */
async function readObject(
  signer: SignatureV4,
  options: Pick<LocalScannerOptions, 'bucket' | 's3Endpoint'>,
  key: string,
): Promise<boolean | 'gone' | 'denied'> {
  const response = await s3Request(signer, options, 'GET', key);
  if (response.status === 404) return 'gone';
  if (response.status === 403) return 'denied';
  if (!response.ok || !response.body) throw new Error(`the S3 stand-in answered the scanner's GET ${response.status}`);
  let tail = Buffer.alloc(0);
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    const window = Buffer.concat([tail, chunk]);
    if (window.includes(EICAR, 0, 'latin1')) {
      await response.body.cancel().catch(() => undefined);
      return true;
    }
    tail = window.subarray(Math.max(0, window.length - EICAR.length + 1));
  }
  return false;
}

const tagging = (result: GuardDutyResult) =>
  `<Tagging><TagSet><Tag><Key>${SCAN_TAG}</Key><Value>${result}</Value></Tag></TagSet></Tagging>`;

/**
 * GuardDuty's "Malware Protection Object Scan Result" event, in the shape its
 * documentation's sample shows (test/unit/scanning/fixtures/).
 */
export function resultEvent(
  options: Pick<LocalScannerOptions, 'region' | 'account' | 'bucket' | 'planArn'>,
  key: string,
  result: GuardDutyResult,
): AnyEventBridgeEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': SCAN_RESULT_DETAIL_TYPE,
    source: SCAN_RESULT_SOURCE,
    account: options.account,
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: options.region,
    resources: [options.planArn],
    detail: {
      schemaVersion: '1.0',
      scanStatus: 'COMPLETED',
      resourceType: 'S3_OBJECT',
      s3ObjectDetails: { bucketName: options.bucket, objectKey: key, s3Throttled: false },
      scanResultDetails: {
        scanResultStatus: result,
        threats: result === 'THREATS_FOUND' ? [{ name: 'EICAR-Test-File (not a virus)' }] : null,
      },
    },
  };
}

/** A PUT of the object's tagging, signed as the plan's role. */
async function s3Call(
  signer: SignatureV4,
  options: Pick<LocalScannerOptions, 'bucket' | 's3Endpoint'>,
  method: 'PUT',
  key: string,
  body: string,
): Promise<void> {
  const response = await s3Request(signer, options, method, key, body);
  if (!response.ok)
    throw new Error(`the S3 stand-in answered the scanner's ${method} ${response.status}: ${(await response.text()).slice(0, 300)}`);
}

/** A request for the object (GET) or its tagging (PUT), signed as the plan's role. */
async function s3Request(
  signer: SignatureV4,
  options: Pick<LocalScannerOptions, 'bucket' | 's3Endpoint'>,
  method: 'GET' | 'PUT',
  key: string,
  body?: string,
): Promise<Response> {
  const url = new URL(`/${options.bucket}/${key}${method === 'PUT' ? '?tagging' : ''}`, options.s3Endpoint);
  const payload = body ?? '';
  const signed = await signer.sign({
    method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: Number(url.port),
    path: url.pathname,
    query: method === 'PUT' ? { tagging: '' } : {},
    headers: { host: url.host, 'x-amz-content-sha256': createHash('sha256').update(payload).digest('hex') },
    ...(body === undefined ? {} : { body }),
  });
  const headers = Object.fromEntries(Object.entries(signed.headers).filter(([name]) => name.toLowerCase() !== 'host'));
  return fetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
}
