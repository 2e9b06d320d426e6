import type { HttpRequest, HttpResponse } from '@smithy/core/protocols';
import { retryMiddleware, StandardRetryStrategy } from '@smithy/core/retry';
import type { SignatureV4 } from '@smithy/signature-v4';
import { bodyBytes } from '../transport.js';
import { type BucketAddress, BucketLocation, type ObjectRequestParts } from './addressing.js';
import { endsWithError, headerOf, S3Error, s3ErrorOf } from './errors.js';
import { type Credentials, s3Signer } from './signer.js';
import { completionBody, type PartsPage, partsPageOf, uploadIdOf } from './xml.js';

/** The S3 operations the file store makes (its names are the S3 API's). */
export type S3Operation =
  | 'PutObject'
  | 'DeleteObject'
  | 'CreateMultipartUpload'
  | 'ListParts'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'
  | 'HeadObject'
  | 'GetObject';

/** What sends a signed request and hands the answer back: the SDK's NodeHttpHandler (shared/s3/client.ts). */
export interface S3Transport {
  handle(request: HttpRequest): Promise<{ response: HttpResponse }>;
  destroy?(): void;
}

export interface S3BucketSettings extends BucketAddress {
  credentials: Credentials;
  /** Attempts per call, the first included (the SDK's maxAttempts). */
  maxAttempts: number;
}

/**
 * The S3 client's threshold for `Expect: 100-continue` (its
 * `expectContinueHeader` default, 2 MiB): from there a PUT's body waits for
 * S3's 100 Continue (NodeHttpHandler waits up to 6 s, then sends anyway), so
 * a PUT that S3 refuses on its headers (a denied key, a bad signature, a
 * redirect) is refused before megabytes go. NodeHttpHandler sends such a
 * request on a connection of its own, not kept alive: what the client pays
 * too. The header is never signed (SigV4 leaves `expect` out).
 */
const EXPECT_CONTINUE_FROM_BYTES = 2_097_152; // 2 MiB, a literal: esbuild keeps an unused product, and with it this module, in bundles that never call S3

/** The operations the S3 client wraps an <Error> in a 200 for, whose 200 is read as a 503 (see s3ErrorOf). */
const ANSWER_MAY_BE_AN_ERROR: ReadonlySet<S3Operation> = new Set<S3Operation>([
  'PutObject',
  'DeleteObject',
  'CreateMultipartUpload',
  'ListParts',
  'CompleteMultipartUpload',
  'AbortMultipartUpload',
  'HeadObject',
]);

/**
 * The file store's calls to its bucket without the S3 client, each one request built, signed, sent,
 * retried and read by the SDK's own pieces (docs/architecture.md, "Attachments"). The answer's body
 * is read inside the attempt, so a connection lost while reading it is retried too.
 */
export class S3Bucket {
  private readonly location: BucketLocation;
  private readonly signer: SignatureV4;
  /** The SDK's retry middleware with this bucket's strategy, wrapped around each call's attempts. */
  private readonly retrying: ReturnType<typeof retryMiddleware>;
  private readonly listeners: ((operation: S3Operation) => void)[] = [];

  constructor(
    settings: S3BucketSettings,
    private readonly transport: S3Transport,
  ) {
    this.location = new BucketLocation(settings);
    this.signer = s3Signer(settings.region, settings.credentials);
    // One per bucket, as one per client: its retry token bucket spans the calls.
    const retryStrategy = new StandardRetryStrategy(settings.maxAttempts);
    this.retrying = retryMiddleware({ maxAttempts: async () => settings.maxAttempts, retryStrategy: async () => retryStrategy });
  }

  async putObject(key: string, body: Uint8Array, contentType: string): Promise<void> {
    await this.send('PutObject', key, {
      method: 'PUT',
      query: { 'x-id': 'PutObject' },
      headers: {
        'content-length': String(body.byteLength),
        'content-type': contentType,
        ...(body.byteLength >= EXPECT_CONTINUE_FROM_BYTES ? { Expect: '100-continue' } : {}),
      },
      body,
    });
  }

  async deleteObject(key: string): Promise<void> {
    await this.send('DeleteObject', key, { method: 'DELETE', query: { 'x-id': 'DeleteObject' } });
  }

  /** Starts a multipart upload of an object of that Content-Type; its UploadId. */
  async createMultipartUpload(key: string, contentType: string): Promise<string> {
    const answer = await this.send('CreateMultipartUpload', key, {
      method: 'POST',
      query: { uploads: '' },
      headers: { 'content-type': contentType },
    });
    return uploadIdOf(answer.text);
  }

  /** One page of the upload's parts (S3 answers 1,000 a page), from after `partNumberMarker`. */
  async listParts(key: string, uploadId: string, partNumberMarker?: string): Promise<PartsPage> {
    const answer = await this.send('ListParts', key, {
      method: 'GET',
      query: { 'x-id': 'ListParts', uploadId, ...(partNumberMarker === undefined ? {} : { 'part-number-marker': partNumberMarker }) },
    });
    return partsPageOf(answer.text);
  }

  async completeMultipartUpload(key: string, uploadId: string, parts: readonly { partNumber: number; etag: string }[]): Promise<void> {
    const body = Buffer.from(completionBody(parts), 'utf8');
    await this.send('CompleteMultipartUpload', key, {
      method: 'POST',
      query: { uploadId },
      headers: { 'content-type': 'application/xml', 'content-length': String(body.byteLength) },
      body,
    });
  }

  async abortMultipartUpload(key: string, uploadId: string): Promise<void> {
    await this.send('AbortMultipartUpload', key, { method: 'DELETE', query: { 'x-id': 'AbortMultipartUpload', uploadId } });
  }

  /** The object's size (Content-Length of a HEAD). */
  async headObject(key: string): Promise<{ contentLength: number | undefined }> {
    const { response } = await this.send('HeadObject', key, { method: 'HEAD' });
    const length = headerOf(response, 'content-length');
    return { contentLength: length === undefined ? undefined : Number(length) };
  }

  /** The bytes of `range` (an HTTP Range, e.g. `bytes=0-4099`) of the object. */
  async getObject(key: string, range: string): Promise<Uint8Array> {
    const { body } = await this.send('GetObject', key, { method: 'GET', query: { 'x-id': 'GetObject' }, headers: { range } });
    return body;
  }

  /** Called with each call's operation as it starts (the bench counts S3 requests by operation with it). */
  observe(listener: (operation: S3Operation) => void): void {
    this.listeners.push(listener);
  }

  /** Closes the transport's connections. */
  destroy(): void {
    this.transport.destroy?.();
  }

  /** One call: the SDK's retry middleware around attempts that each sign, send and read the answer. */
  private async send(
    operation: S3Operation,
    key: string,
    parts: ObjectRequestParts,
  ): Promise<{ response: HttpResponse; body: Uint8Array; text: string }> {
    for (const listener of this.listeners) listener(operation);
    const handler = this.retrying(({ request }) => this.attempt(operation, request as HttpRequest), {});
    const { output } = await handler({ input: {}, request: this.location.objectRequest(key, parts) });
    return { response: output.response, body: output.body, text: utf8(output.body) };
  }

  private async attempt(operation: S3Operation, request: HttpRequest) {
    // Signed at each attempt (the retry middleware sets its headers first): a retry carries a fresh date.
    const signed = await this.signer.sign(request);
    const { response } = await this.transport.handle(signed as HttpRequest);
    const body = await bodyBytes(response.body);
    const status = response.statusCode;
    if (status < 200 || status >= 300) throw s3ErrorOf(response, utf8(body));
    if (ANSWER_MAY_BE_AN_ERROR.has(operation) && endsWithError(body)) throw s3ErrorOf(response, utf8(body), 503);
    if (operation === 'CompleteMultipartUpload' && body.byteLength === 0) {
      // An assembly S3 gave up on after its 200 went out: the S3 client throws this, and retries it.
      throw new S3Error('InternalError', 'S3 aborted request', { httpStatusCode: 503 }, response);
    }
    return { response, output: { $metadata: { httpStatusCode: status }, response, body } };
  }
}

const utf8 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
