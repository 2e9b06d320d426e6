import { Readable } from 'node:stream';
import { type HttpRequest, HttpResponse } from '@smithy/core/protocols';
import type { S3Transport } from '../../shared/s3/bucket.js';

/** A bucket on a stand-in's address, with the SDK's three attempts: what the scripted tests call. */
export const SCRIPTED_BUCKET = {
  region: 'us-east-1',
  bucket: 'attachments',
  endpoint: 'http://127.0.0.1:4568',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
  maxAttempts: 3,
};

/**
 * One answer of a scripted S3: a status, headers, a body (cut by a reset
 * after `cutAfter` bytes when given: a connection lost mid-body); or a
 * network failure before any answer.
 */
export type ScriptedAnswer = { status: number; headers?: Record<string, string>; body?: string; cutAfter?: number } | { fail: Error };

/**
 * A transport that records every request it is handed and answers from a
 * script, never touching the network: for the unit tests of the S3 layer
 * (shared/s3/bucket.ts) and of the reference S3 client it is compared with.
 */
export class RecordingTransport implements S3Transport {
  readonly requests: HttpRequest[] = [];

  constructor(private readonly answer: (request: HttpRequest, index: number) => ScriptedAnswer) {}

  async handle(request: HttpRequest): Promise<{ response: HttpResponse }> {
    this.requests.push(request);
    const answer = this.answer(request, this.requests.length - 1);
    if ('fail' in answer) throw answer.fail;
    return {
      response: new HttpResponse({
        statusCode: answer.status,
        headers: answer.headers ?? {},
        // A stream, as NodeHttpHandler hands the body over.
        body:
          answer.cutAfter === undefined
            ? Readable.from(answer.body === undefined ? [] : [Buffer.from(answer.body, 'utf8')])
            : cutBody(answer.body ?? '', answer.cutAfter),
      }),
    };
  }

  /** What the S3 client's requestHandler option takes. */
  asRequestHandler() {
    return { handle: (request: HttpRequest) => this.handle(request), updateHttpClientConfig() {}, httpHandlerConfigs: () => ({}) };
  }
}

/** A body whose connection is reset after `bytes` of it, as NodeHttpHandler's stream then fails. */
function cutBody(text: string, bytes: number): Readable {
  const stream = new Readable({ read() {} });
  stream.push(Buffer.from(text, 'utf8').subarray(0, bytes));
  setImmediate(() => stream.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
  return stream;
}

/** A successful answer of each operation, as S3 shapes it, told apart by method and query as S3 does. */
export function successOf(request: HttpRequest): ScriptedAnswer {
  const query = request.query ?? {};
  const xml = (body: string) => ({
    status: 200,
    headers: { 'content-type': 'application/xml' },
    body: `<?xml version="1.0" encoding="UTF-8"?>\n${body}`,
  });
  if (request.method === 'POST' && 'uploads' in query) {
    return xml(
      '<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><Key>k</Key><UploadId>upload-1</UploadId></InitiateMultipartUploadResult>',
    );
  }
  if (request.method === 'POST') {
    return xml(
      '<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Location>l</Location><Bucket>b</Bucket><Key>k</Key><ETag>"e-2"</ETag></CompleteMultipartUploadResult>',
    );
  }
  if (request.method === 'GET' && 'uploadId' in query) {
    return xml(
      '<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IsTruncated>false</IsTruncated><Part><PartNumber>1</PartNumber><ETag>"e1"</ETag><Size>5</Size></Part></ListPartsResult>',
    );
  }
  if (request.method === 'GET') return { status: 206, headers: { 'content-range': 'bytes 0-4/5', 'content-length': '5' }, body: 'hello' };
  if (request.method === 'HEAD') return { status: 200, headers: { 'content-length': '5' } };
  if (request.method === 'DELETE') return { status: 204 };
  return { status: 200, headers: { etag: '"5d41402abc4b2a76b9719d911017c592"' } };
}
