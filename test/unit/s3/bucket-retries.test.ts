import { describe, expect, it } from 'vitest';
import { isBackendUnavailable } from '../../../shared/http/unavailable.js';
import { S3Bucket } from '../../../shared/s3/bucket.js';
import { S3Error } from '../../../shared/s3/errors.js';
import { RecordingTransport, type ScriptedAnswer, SCRIPTED_BUCKET as SETTINGS, successOf } from '../../support/recording-s3.js';

/**
 * What the SDK's retry middleware and standard strategy do with S3's answers
 * through our layer, against a scripted transport (the integration tests do
 * the same against the local S3 behind a fault proxy). The waits are the
 * strategy's own backoff: tens of milliseconds, up to a second for throttling.
 */

const errorXml = (code: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${code} happened</Message><RequestId>R</RequestId></Error>`;

/** A bucket whose S3 gives these answers in turn, then succeeds. */
function bucketAnswering(...answers: ScriptedAnswer[]) {
  const transport = new RecordingTransport((request, index) => answers[index] ?? successOf(request));
  return { bucket: new S3Bucket(SETTINGS, transport), transport };
}

const header = (transport: RecordingTransport, index: number, name: string) => transport.requests[index]!.headers[name];

describe('S3Bucket retries', () => {
  it("retries SlowDown, signing each attempt anew with its attempt number and the call's one invocation id", async () => {
    const { bucket, transport } = bucketAnswering({ status: 503, body: errorXml('SlowDown') });
    await bucket.putObject('files/k', Buffer.from('hello'), 'text/plain');
    expect(transport.requests).toHaveLength(2);
    expect(header(transport, 0, 'amz-sdk-request')).toBe('attempt=1; max=3');
    expect(header(transport, 1, 'amz-sdk-request')).toBe('attempt=2; max=3');
    expect(header(transport, 1, 'amz-sdk-invocation-id')).toBe(header(transport, 0, 'amz-sdk-invocation-id'));
    expect(header(transport, 1, 'authorization')).toMatch(
      /SignedHeaders=amz-sdk-invocation-id;amz-sdk-request;content-length;content-type;host;x-amz-content-sha256;x-amz-date,/,
    );
    expect(header(transport, 1, 'authorization')).not.toBe(header(transport, 0, 'authorization'));
    // The same body goes again, hashed into the signature.
    expect(Buffer.from(transport.requests[1]!.body as Uint8Array).toString()).toBe('hello');
    expect(header(transport, 1, 'x-amz-content-sha256')).toBe('2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
  });

  it("retries CompleteMultipartUpload's 200 that carries an <Error>, and its empty 200", async () => {
    const { bucket, transport } = bucketAnswering({ status: 200, body: `\n \n${errorXml('InternalError')}` }, { status: 200, body: '' });
    await bucket.completeMultipartUpload('files/k', 'upload-1', [{ partNumber: 1, etag: '"e1"' }]);
    expect(transport.requests).toHaveLength(3);
  });

  it('retries a lost connection and a request timeout', async () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const timeout = Object.assign(new Error('request timed out'), { name: 'TimeoutError' });
    const { bucket, transport } = bucketAnswering({ fail: reset }, { fail: timeout });
    expect(await bucket.headObject('files/k')).toEqual({ contentLength: 5 });
    expect(transport.requests).toHaveLength(3);
  });

  it('gives up after three attempts with the last error, which the API answers as 503', async () => {
    const { bucket, transport } = bucketAnswering(
      { status: 500, body: errorXml('InternalError') },
      { status: 502, body: 'Bad Gateway' },
      { status: 503, body: errorXml('ServiceUnavailable') },
    );
    const failure = await bucket.deleteObject('files/k').catch((error: unknown) => error);
    expect(transport.requests).toHaveLength(3);
    expect(failure).toBeInstanceOf(S3Error);
    expect(failure).toMatchObject({ name: 'ServiceUnavailable', $metadata: { httpStatusCode: 503, attempts: 3 } });
    expect(isBackendUnavailable(failure)).toBe(true);
  });

  it("does not retry what is the caller's to fix: NoSuchUpload, InvalidPart, a HEAD 404", async () => {
    for (const [answer, name] of [
      [{ status: 404, body: errorXml('NoSuchUpload') }, 'NoSuchUpload'],
      [{ status: 400, body: errorXml('InvalidPart') }, 'InvalidPart'],
    ] as const) {
      const { bucket, transport } = bucketAnswering(answer);
      await expect(bucket.completeMultipartUpload('files/k', 'u', [{ partNumber: 1, etag: '"e"' }])).rejects.toMatchObject({ name });
      expect(transport.requests).toHaveLength(1);
    }
    const { bucket, transport } = bucketAnswering({ status: 404 });
    await expect(bucket.headObject('files/missing')).rejects.toMatchObject({ name: 'NotFound', $metadata: { httpStatusCode: 404 } });
    expect(transport.requests).toHaveLength(1);
  });

  it("hands over a file's first bytes even when they end like an error: GetObject's body is the file", async () => {
    const content = errorXml('NotAnError');
    const { bucket, transport } = bucketAnswering({ status: 206, body: content });
    expect(Buffer.from(await bucket.getObject('files/k', 'bytes=0-4099')).toString()).toBe(content);
    expect(transport.requests).toHaveLength(1);
  });

  it('tells each call to its observers once, whatever its retries', async () => {
    const { bucket } = bucketAnswering({ status: 500, body: errorXml('InternalError') });
    const seen: string[] = [];
    bucket.observe((operation) => seen.push(operation));
    await bucket.createMultipartUpload('files/k', 'image/png');
    await bucket.abortMultipartUpload('files/k', 'upload-1');
    expect(seen).toEqual(['CreateMultipartUpload', 'AbortMultipartUpload']);
  });
});
