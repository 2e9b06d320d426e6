import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { HttpRequest } from '@smithy/core/protocols';
import { describe, expect, it } from 'vitest';
import { S3Bucket } from '../../../shared/s3/bucket.js';
import { RecordingTransport, type ScriptedAnswer, SCRIPTED_BUCKET as SETTINGS, successOf } from '../../support/recording-s3.js';
import { referenceS3Client } from '../../support/reference-s3-client.js';

/**
 * The same scripted answers, fed to the official S3 client and to the layer:
 * the same outcome, call for call. Success with the same result, or failure
 * with the same error name, status and attempt count, after the same number
 * of requests (retries). One difference is by design and pinned below: the
 * layer reads a GetObject body inside the attempt, so a connection lost
 * mid-body is retried; the client hands the stream to its caller.
 */

const KEY = 'files/u/att_1';

interface Operation {
  name: string;
  ours: (bucket: S3Bucket) => Promise<unknown>;
  theirs: (client: S3Client) => Promise<unknown>;
  /** Whether S3 answers it with an XML document (which a 200 may turn out to be an <Error>). */
  xmlAnswer: boolean;
}

const operations: Operation[] = [
  {
    name: 'PutObject',
    ours: (b) => b.putObject(KEY, Buffer.from('hello'), 'text/plain').then(() => 'done'),
    theirs: (c) =>
      c
        .send(new PutObjectCommand({ Bucket: SETTINGS.bucket, Key: KEY, Body: Buffer.from('hello'), ContentType: 'text/plain' }))
        .then(() => 'done'),
    xmlAnswer: false,
  },
  {
    name: 'DeleteObject',
    ours: (b) => b.deleteObject(KEY).then(() => 'done'),
    theirs: (c) => c.send(new DeleteObjectCommand({ Bucket: SETTINGS.bucket, Key: KEY })).then(() => 'done'),
    xmlAnswer: false,
  },
  {
    name: 'CreateMultipartUpload',
    ours: (b) => b.createMultipartUpload(KEY, 'text/plain'),
    theirs: async (c) =>
      (await c.send(new CreateMultipartUploadCommand({ Bucket: SETTINGS.bucket, Key: KEY, ContentType: 'text/plain' }))).UploadId,
    xmlAnswer: true,
  },
  {
    name: 'ListParts',
    ours: async (b) => (await b.listParts(KEY, 'upload-1')).parts.map((part) => [part.partNumber, part.etag, part.size]),
    theirs: async (c) =>
      (await c.send(new ListPartsCommand({ Bucket: SETTINGS.bucket, Key: KEY, UploadId: 'upload-1' }))).Parts?.map((part) => [
        part.PartNumber,
        part.ETag,
        part.Size,
      ]),
    xmlAnswer: true,
  },
  {
    name: 'CompleteMultipartUpload',
    ours: (b) => b.completeMultipartUpload(KEY, 'upload-1', [{ partNumber: 1, etag: '"e1"' }]).then(() => 'done'),
    theirs: (c) =>
      c
        .send(
          new CompleteMultipartUploadCommand({
            Bucket: SETTINGS.bucket,
            Key: KEY,
            UploadId: 'upload-1',
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"e1"' }] },
          }),
        )
        .then(() => 'done'),
    xmlAnswer: true,
  },
  {
    name: 'AbortMultipartUpload',
    ours: (b) => b.abortMultipartUpload(KEY, 'upload-1').then(() => 'done'),
    theirs: (c) => c.send(new AbortMultipartUploadCommand({ Bucket: SETTINGS.bucket, Key: KEY, UploadId: 'upload-1' })).then(() => 'done'),
    xmlAnswer: false,
  },
  {
    name: 'HeadObject',
    ours: async (b) => (await b.headObject(KEY)).contentLength,
    theirs: async (c) => (await c.send(new HeadObjectCommand({ Bucket: SETTINGS.bucket, Key: KEY }))).ContentLength,
    xmlAnswer: false,
  },
  {
    name: 'GetObject',
    ours: async (b) => Buffer.from(await b.getObject(KEY, 'bytes=0-4')).toString(),
    theirs: async (c) =>
      (await c.send(new GetObjectCommand({ Bucket: SETTINGS.bucket, Key: KEY, Range: 'bytes=0-4' }))).Body!.transformToString(),
    xmlAnswer: false,
  },
];

const errorXml = (code: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${code} happened</Message><RequestId>R1</RequestId><HostId>H1</HostId></Error>`;

/** An S3 error answer; a HEAD's carries no body, as S3 sends it. */
const failure =
  (status: number, code: string) =>
  (request: HttpRequest): ScriptedAnswer =>
    request.method === 'HEAD'
      ? { status, headers: { 'x-amz-request-id': 'R1' } }
      : { status, headers: { 'content-type': 'application/xml', 'x-amz-request-id': 'R1' }, body: errorXml(code) };

type Script = ((request: HttpRequest) => ScriptedAnswer)[];

const scenarios: [string, Script, (operation: Operation) => boolean][] = [
  [
    '404 NoSuchKey / NoSuchUpload',
    [(request) => failure(404, 'uploadId' in (request.query ?? {}) ? 'NoSuchUpload' : 'NoSuchKey')(request)],
    () => true,
  ],
  ['403 AccessDenied', [failure(403, 'AccessDenied')], () => true],
  ['500 InternalError once, then success', [failure(500, 'InternalError')], () => true],
  [
    '500 InternalError at every attempt',
    [failure(500, 'InternalError'), failure(500, 'InternalError'), failure(500, 'InternalError')],
    () => true,
  ],
  ['503 SlowDown once, then success', [failure(503, 'SlowDown')], () => true],
  ['503 SlowDown at every attempt', [failure(503, 'SlowDown'), failure(503, 'SlowDown'), failure(503, 'SlowDown')], () => true],
  [
    'a 200 whose body is an <Error>, then success',
    [() => ({ status: 200, headers: { 'content-type': 'application/xml' }, body: `\n  ${errorXml('InternalError')}` })],
    (operation) => operation.name === 'CompleteMultipartUpload',
  ],
  [
    'a 200 whose body is an <Error> at every attempt',
    Array.from({ length: 3 }, () => () => ({
      status: 200,
      headers: { 'content-type': 'application/xml' },
      body: errorXml('InternalError'),
    })),
    (operation) => operation.name === 'CompleteMultipartUpload',
  ],
  [
    'a connection reset mid-body, then success',
    [(request) => ({ ...(successOf(request) as { status: number; body: string }), cutAfter: 20 })],
    (operation) => operation.xmlAnswer,
  ],
  [
    'a connection reset before any answer, then success',
    [() => ({ fail: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) })],
    () => true,
  ],
];

/** What a caller sees of a call: its result, or its error's name, status and attempts; and how many requests it took. */
async function outcomeOf(call: () => Promise<unknown>, transport: RecordingTransport) {
  try {
    return { result: await call(), requests: transport.requests.length };
  } catch (error) {
    const { name, $metadata } = error as { name: string; $metadata?: { httpStatusCode?: number; attempts?: number } };
    return { error: { name, status: $metadata?.httpStatusCode, attempts: $metadata?.attempts }, requests: transport.requests.length };
  }
}

function scripted(script: Script): RecordingTransport {
  return new RecordingTransport((request, index) => (script[index] ?? successOf)(request));
}

const cases = scenarios.flatMap(([scenario, script, applies]) =>
  operations.filter(applies).map((operation) => [`${operation.name}: ${scenario}`, operation, script] as const),
);

describe('S3Bucket outcomes, against the S3 client on the same answers', () => {
  it.concurrent.each(cases)('%s', async (_name, operation, script) => {
    const ours = scripted(script);
    const theirs = scripted(script);
    const mine = await outcomeOf(() => operation.ours(new S3Bucket(SETTINGS, ours)), ours);
    const reference = await outcomeOf(
      () => operation.theirs(referenceS3Client(SETTINGS, { requestHandler: theirs.asRequestHandler() })),
      theirs,
    );
    expect(mine).toEqual(reference);
  });

  it('differs by design on a GetObject body cut mid-way: the layer retries it, the client hands the broken stream to its caller', async () => {
    const script: Script = [(request) => ({ ...(successOf(request) as { status: number; body: string }), cutAfter: 2 })];
    const ours = scripted(script);
    expect(await outcomeOf(() => operations.find((o) => o.name === 'GetObject')!.ours(new S3Bucket(SETTINGS, ours)), ours)).toEqual({
      result: 'hello',
      requests: 2,
    });
    const theirs = scripted(script);
    const client = referenceS3Client(SETTINGS, { requestHandler: theirs.asRequestHandler() });
    const reference = await outcomeOf(() => operations.find((o) => o.name === 'GetObject')!.theirs(client), theirs);
    expect(reference).toMatchObject({ error: { name: 'Error' }, requests: 1 });
  });
});
