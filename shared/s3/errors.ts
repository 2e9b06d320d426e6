import type { HttpResponse } from '@smithy/core/protocols';
import { childText, readXml, type XmlValue } from './xml.js';

export interface S3ResponseMetadata {
  httpStatusCode: number;
  requestId?: string;
  extendedRequestId?: string;
  /** Set by the SDK's retry middleware when the call gives up. */
  attempts?: number;
  totalRetryDelay?: number;
}

/**
 * S3's refusal, shaped as the S3 client shapes it: `name` is S3's error Code
 * (NoSuchUpload, InvalidPart, SlowDown...), `$metadata.httpStatusCode` the
 * status, `$fault` who is at fault, `$response` (hidden) the answer, from
 * which the SDK's retry strategy reads Retry-After. The SDK's retry
 * classification (@smithy/core/retry) and isBackendUnavailable
 * (shared/http/unavailable.ts) read these very fields.
 */
export class S3Error extends Error {
  readonly $fault: 'client' | 'server';
  readonly $metadata: S3ResponseMetadata;
  declare readonly $response: HttpResponse;
  /** Never set: typed as the SDK types its errors' cause, so the SDK's error classifiers take an S3Error. */
  declare readonly cause?: Error;

  constructor(code: string, message: string, metadata: S3ResponseMetadata, response: HttpResponse) {
    super(message);
    this.name = code;
    this.$fault = metadata.httpStatusCode < 500 ? 'client' : 'server';
    this.$metadata = metadata;
    // Hidden as the SDK hides it: a logged error does not carry the whole answer.
    Object.defineProperty(this, '$response', { value: response, enumerable: false });
  }
}

/**
 * The error an answer means. `status` is the answer's own status, or 503 for
 * the 200 that carries an <Error> (S3 documents it for CompleteMultipartUpload:
 * the error comes after the 200 was sent; the S3 client turns it into a 503,
 * which its retry strategy retries).
 *
 * The code comes from the body (<Error><Code>, as S3 sends it); a body-less
 * answer (HEAD) is named from its status as the S3 client names it: 404 is
 * NotFound, anything else Unknown.
 */
export function s3ErrorOf(response: HttpResponse, body: string, status: number = response.statusCode): S3Error {
  const metadata: S3ResponseMetadata = {
    httpStatusCode: status,
    requestId: headerOf(response, 'x-amz-request-id'),
    extendedRequestId: headerOf(response, 'x-amz-id-2'),
  };
  const details = errorDetails(body);
  const code = details.code ?? (status === 404 ? 'NotFound' : 'Unknown');
  const message = details.message ?? (body === '' ? `S3 answered ${status} without a body` : 'UnknownError');
  if (!metadata.requestId && details.requestId) metadata.requestId = details.requestId;
  return new S3Error(code, message, metadata, response);
}

/**
 * True when a successful answer's body is in fact an error: it ends with
 * `</Error>`, the S3 client's test, here after trailing whitespace (S3 pads a
 * long assembly's answer with whitespace, before the XML; a newline after it
 * must not hide an error either).
 */
export function endsWithError(body: Uint8Array): boolean {
  return Buffer.from(body.subarray(Math.max(0, body.length - 64)))
    .toString('latin1')
    .trimEnd()
    .endsWith('</Error>');
}

function errorDetails(body: string): { code?: string; message?: string; requestId?: string } {
  if (body === '') return {};
  let value: XmlValue;
  try {
    ({ value } = readXml(body));
  } catch {
    // Not XML (a proxy's HTML page): the status decides what it means.
    return {};
  }
  // <Error><Code/>…</Error> is what S3 sends; <ErrorResponse><Error>…</Error></ErrorResponse> what other AWS XML services do.
  const error = typeof value === 'object' && typeof value.Error === 'object' && !Array.isArray(value.Error) ? value.Error : value;
  return { code: childText(error, 'Code') || undefined, message: childText(error, 'Message'), requestId: childText(error, 'RequestId') };
}

/** A header of the answer, whatever the case of its name. */
export function headerOf(response: HttpResponse, name: string): string | undefined {
  for (const [key, value] of Object.entries(response.headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}
