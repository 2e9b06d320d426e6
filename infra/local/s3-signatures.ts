import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import S3Error from '@20minutes/s3rver/lib/models/error.js';
import { Sha256 } from '@smithy/core/checksum';
import { HttpRequest } from '@smithy/core/protocols';
import { SignatureV4 } from '@smithy/signature-v4';
import { rawHeaderPairs } from './raw-headers.js';

type HeaderBag = Record<string, string>;

/**
 * SigV4 checked as S3 checks it, for every signed request to the local S3:
 * the functions' calls (shared/s3/bucket.ts), the URLs they mint
 * (shared/s3/presigner.ts: file_url, part URLs) as a browser or a test
 * follows them, and the official S3 client's calls. A Koa middleware in front
 * of s3rver's router, before the multipart one, so ListParts, Complete and
 * Abort are checked too (s3rver's own check never sees them, and
 * approximates the canonical request: it stays loose,
 * `allowMismatchedSignatures`).
 *
 * The signature is recomputed with the SDK's signer (@smithy/signature-v4,
 * set up as for S3: the path signed as sent, not encoded again) over the
 * request as it arrived: its method, its path as sent, its query decoded (the
 * signer encodes it again and sorts it), only the headers it names as signed
 * (the others, a browser's Origin and Accept-* or a proxy's, take no part),
 * its date, and its key's secret. What a client signs from its own copy of
 * the request is thus compared with what reached S3.
 *
 * S3's answers, checked in this order: a CORS preflight (OPTIONS) is never
 * signed and passes whatever its query carries, a presigned URL's included;
 * an unsigned request is 403 AccessDenied, as S3 answers anyone for a bucket
 * that blocks public access (the stack's, infra/stack/constructs/data.ts); two ways
 * of signing at once is 400 InvalidArgument; SigV2 is 400 InvalidRequest (S3
 * refuses it on buckets made since mid-2020); a
 * malformed Authorization header or presigned query is 400
 * AuthorizationHeaderMalformed / AuthorizationQueryParametersError; a key the
 * local S3 does not know is 403 InvalidAccessKeyId; a header-signed request
 * dated more than 15 minutes away is 403 RequestTimeTooSkewed; a presigned
 * URL past X-Amz-Date + X-Amz-Expires is 403 AccessDenied "Request has
 * expired"; an x-amz-* header that is not signed is 403 AccessDenied (S3's
 * HeadersNotSigned); a signature that differs is 403 SignatureDoesNotMatch,
 * with the canonical request and string to sign S3 computed, as S3 gives
 * them.
 *
 * A body signed with its SHA-256 (x-amz-content-sha256, the layer's and the
 * client's calls) must hash to it: else 400 XAmzContentSHA256Mismatch, and
 * nothing stored.
 *
 * Not checked (docs/architecture.md, Local S3): the chunk signatures of an
 * aws-chunked body (none of the project's clients sends one), the region in
 * the credential scope (the local S3 has none), a request dated by `Date`
 * without `x-amz-date` (no AWS SDK sends one; it is refused as
 * SignatureDoesNotMatch).
 */
export function signatureCheck(secretOf: (accessKeyId: string) => string | undefined) {
  return async function signatures(ctx: { method: string; req: IncomingMessage }, next: () => Promise<unknown>): Promise<unknown> {
    if (ctx.method === 'OPTIONS') return next();
    const request = arrived(ctx.req);
    const claim = claimOf(request);
    if (claim === undefined) throw new S3Error('AccessDenied', 'Access Denied');
    const secret = secretOf(claim.accessKeyId);
    if (secret === undefined) {
      throw new S3Error('InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.', {
        AWSAccessKeyId: claim.accessKeyId,
      });
    }
    assertTimely(claim, new Date());
    assertAmzHeadersSigned(request, claim);
    const computed = await recompute(request, claim, secret);
    if (!sameHex(computed.signature, claim.signature)) {
      throw new S3Error(
        'SignatureDoesNotMatch',
        'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
        {
          AWSAccessKeyId: claim.accessKeyId,
          StringToSign: computed.stringToSign,
          SignatureProvided: claim.signature,
          StringToSignBytes: bytesOf(computed.stringToSign),
          CanonicalRequest: computed.canonicalRequest,
          CanonicalRequestBytes: bytesOf(computed.canonicalRequest),
        },
      );
    }
    if (claim.payloadHash !== undefined && SHA256_HEX.test(claim.payloadHash)) ctx.req = await bodyHashing(ctx.req, claim.payloadHash);
    return next();
  };
}

const SHA256_HEX = /^[0-9a-f]{64}$/i;

/**
 * The body, read whole and hashed before anything is stored: S3 stores
 * nothing of a body that does not hash to the x-amz-content-sha256 signed
 * (400 XAmzContentSHA256Mismatch), and s3rver writes in place. Held in
 * memory: the bodies signed with their hash are the layer's PutObject (the
 * size guard's few MiB) and XML; parts, presigned, sign UNSIGNED-PAYLOAD.
 */
async function bodyHashing(req: IncomingMessage, declared: string): Promise<IncomingMessage> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const computed = createHash('sha256').update(body).digest('hex');
  if (computed !== declared.toLowerCase()) {
    const mismatch = new S3Error(
      'XAmzContentSHA256Mismatch',
      "The provided 'x-amz-content-sha256' header does not match what was computed.",
      {
        ClientComputedContentSHA256: declared,
        S3ComputedContentSHA256: computed,
      },
    );
    // s3rver knows no status for this code; S3's is 400.
    throw Object.assign(mismatch, { status: 400, expose: true });
  }
  // What s3rver reads the body from (it pipes ctx.req); the request itself is spent.
  return Readable.from([body]) as unknown as IncomingMessage;
}

/** A request as it reached the local S3. */
interface Arrived {
  method: string;
  /** The path as sent, still encoded: S3 signs it so. */
  path: string;
  /** The query's parameters, decoded, in the order sent. */
  query: [string, string][];
  /** Each header's values as sent (lower-case names), repeated ones in order. */
  headers: Map<string, string[]>;
}

/** What a request says of its signature, from its Authorization header or its presigned query. */
interface Claim {
  accessKeyId: string;
  /** The credential scope's region (its date and service are those of X-Amz-Date and S3, or the signature differs). */
  region: string;
  /** X-Amz-Date, as sent. */
  date: string;
  signedHeaders: string[];
  signature: string;
  /** Header-signed: the body's hash as declared (x-amz-content-sha256). Presigned: none, S3 signs UNSIGNED-PAYLOAD. */
  payloadHash: string | undefined;
  /** Presigned: X-Amz-Expires, in seconds. */
  expiresIn: number | undefined;
}

function arrived(req: IncomingMessage): Arrived {
  const [path = '/', rawQuery = ''] = (req.url ?? '/').split(/\?(.*)/s);
  const query =
    rawQuery === ''
      ? []
      : rawQuery.split('&').map((pair): [string, string] => {
          const [name = '', value = ''] = pair.split(/=(.*)/s);
          return [decoded(name), decoded(value)];
        });
  const headers = new Map<string, string[]>();
  for (const [sentName, value] of rawHeaderPairs(req)) {
    const name = sentName.toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), value]);
  }
  return { method: req.method ?? 'GET', path, query, headers };
}

/** A query component decoded; a `+` stays a plus (SigV4 clients send a space as %20). */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

const PRESIGNED_PARAMETERS = [
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
] as const;
const SIGV4 = 'AWS4-HMAC-SHA256';
const MAX_EXPIRES_SECONDS = 604_800;
const MAX_SKEW_MS = 15 * 60 * 1000;

function claimOf(request: Arrived): Claim | undefined {
  const authorization = request.headers.get('authorization')?.join(',');
  const parameter = (name: string) => request.query.find(([key]) => key === name)?.[1];
  const presigned = parameter('X-Amz-Algorithm') !== undefined;
  const presignedV2 = parameter('AWSAccessKeyId') !== undefined && parameter('Signature') !== undefined;
  if ([authorization !== undefined, presigned, presignedV2].filter(Boolean).length > 1) {
    throw new S3Error(
      'InvalidArgument',
      'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified',
      { ArgumentName: 'Authorization', ArgumentValue: authorization ?? '' },
    );
  }
  if (presignedV2 || (authorization !== undefined && !authorization.startsWith(`${SIGV4} `))) {
    throw new S3Error('InvalidRequest', 'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.');
  }
  if (authorization !== undefined) return headerClaim(authorization, request.headers);
  if (presigned) return queryClaim(parameter);
  return undefined;
}

function headerClaim(authorization: string, headers: Arrived['headers']): Claim {
  const parts = new Map(
    authorization
      .slice(SIGV4.length)
      .split(',')
      .map((part) => part.trim().split(/=(.*)/s) as [string, string?])
      .map(([name, value]) => [name, value ?? ''] as const),
  );
  const part = (name: string): string => {
    const value = parts.get(name);
    if (value === undefined) throw new S3Error('AuthorizationHeaderMalformed', `The authorization header is malformed; missing ${name}.`);
    return value;
  };
  const [credential, signedHeaders, signature] = [part('Credential'), part('SignedHeaders'), part('Signature')];
  const payloadHash = headers.get('x-amz-content-sha256')?.join(',');
  if (payloadHash === undefined) throw new S3Error('InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
  const { accessKeyId, region } = credentialOf(
    credential,
    () =>
      new S3Error(
        'AuthorizationHeaderMalformed',
        'The authorization header is malformed; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".',
      ),
  );
  return {
    accessKeyId,
    region,
    date: headers.get('x-amz-date')?.[0] ?? '',
    signedHeaders: signedHeaders.split(';'),
    signature,
    payloadHash,
    expiresIn: undefined,
  };
}

function queryClaim(parameter: (name: string) => string | undefined): Claim {
  const missing = () =>
    new S3Error(
      'AuthorizationQueryParametersError',
      'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
    );
  if (parameter('X-Amz-Algorithm') !== SIGV4)
    throw new S3Error('AuthorizationQueryParametersError', `X-Amz-Algorithm only supports "${SIGV4}"`);
  if (PRESIGNED_PARAMETERS.some((name) => parameter(name) === undefined)) throw missing();
  const present = (name: (typeof PRESIGNED_PARAMETERS)[number]): string => {
    const value = parameter(name);
    if (value === undefined) throw missing();
    return value;
  };
  if (!/^\d+$/.test(present('X-Amz-Expires'))) throw new S3Error('AuthorizationQueryParametersError', 'X-Amz-Expires should be a number');
  const expiresIn = Number(parameter('X-Amz-Expires'));
  if (expiresIn > MAX_EXPIRES_SECONDS) {
    throw new S3Error(
      'AuthorizationQueryParametersError',
      'X-Amz-Expires must be less than a week (in seconds) that is 7 days or 604800 seconds',
    );
  }
  const { accessKeyId, region } = credentialOf(
    present('X-Amz-Credential'),
    () =>
      new S3Error(
        'AuthorizationQueryParametersError',
        'Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".',
      ),
  );
  return {
    accessKeyId,
    region,
    date: present('X-Amz-Date'),
    signedHeaders: present('X-Amz-SignedHeaders').split(';'),
    signature: present('X-Amz-Signature'),
    payloadHash: undefined,
    expiresIn,
  };
}

function credentialOf(credential: string, malformed: () => Error): Pick<Claim, 'accessKeyId' | 'region'> {
  const [accessKeyId, day, region, service, terminator, ...rest] = credential.split('/');
  if (!accessKeyId || !day || !region || !service || terminator !== 'aws4_request' || rest.length > 0) throw malformed();
  return { accessKeyId, region };
}

/** X-Amz-Date as a time: yyyyMMdd'T'HHmmss'Z'. */
function timeOf(date: string): Date | undefined {
  const parts = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date);
  if (!parts) return undefined;
  const time = new Date(`${parts[1]}-${parts[2]}-${parts[3]}T${parts[4]}:${parts[5]}:${parts[6]}Z`);
  return Number.isNaN(time.getTime()) ? undefined : time;
}

const s3Time = (time: Date) => time.toISOString().replace(/\.\d+Z$/, 'Z');

function assertTimely(claim: Claim, now: Date): void {
  const signedAt = timeOf(claim.date);
  if (claim.expiresIn === undefined) {
    if (!signedAt) throw new S3Error('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
    if (Math.abs(now.getTime() - signedAt.getTime()) > MAX_SKEW_MS) {
      throw new S3Error('RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.', {
        RequestTime: claim.date,
        ServerTime: s3Time(now),
        MaxAllowedSkewMilliseconds: MAX_SKEW_MS,
      });
    }
    return;
  }
  if (!signedAt)
    throw new S3Error('AuthorizationQueryParametersError', "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
  const expires = new Date(signedAt.getTime() + claim.expiresIn * 1000);
  if (now > expires) {
    throw new S3Error('AccessDenied', 'Request has expired', {
      'X-Amz-Expires': claim.expiresIn,
      Expires: s3Time(expires),
      ServerTime: s3Time(now),
    });
  }
}

/** Every x-amz-* header a request carries is signed (or, presigned, in the query): S3 refuses one added after signing. */
function assertAmzHeadersSigned(request: Arrived, claim: Claim): void {
  const unsigned = [...request.headers.keys()].filter((name) => name.startsWith('x-amz-') && !claim.signedHeaders.includes(name));
  if (unsigned.length > 0) {
    throw new S3Error('AccessDenied', 'There were headers present in the request which were not signed', {
      HeadersNotSigned: unsigned.join(', '),
    });
  }
}

/**
 * The signature S3 computes for the request, by the SDK's signer: a signed
 * copy of the request as it arrived, stripped to what the signature covers.
 */
async function recompute(
  request: Arrived,
  claim: Claim,
  secretAccessKey: string,
): Promise<{ signature: string; canonicalRequest: string; stringToSign: string }> {
  const signer = new RecordingSigner({
    service: 's3',
    region: claim.region,
    credentials: { accessKeyId: claim.accessKeyId, secretAccessKey },
    sha256: Sha256,
    uriEscapePath: false,
  });
  const signed = new Set(claim.signedHeaders);
  const headers: HeaderBag = {};
  for (const name of signed) {
    const values = request.headers.get(name);
    if (values !== undefined) headers[name] = values.join(',');
  }
  const signingDate = timeOf(claim.date) ?? new Date(0);
  const copy = (query: [string, string][], extraHeaders: HeaderBag = {}) =>
    new HttpRequest({ method: request.method, path: request.path, query: grouped(query), headers: { ...headers, ...extraHeaders } });
  if (claim.expiresIn === undefined) {
    // x-amz-content-sha256 is among the signed headers (assertAmzHeadersSigned): the signer takes the payload hash from it.
    const result = await signer.sign(copy(request.query), { signingDate, signableHeaders: signed });
    const signature = /Signature=([0-9a-f]*)$/.exec(String(result.headers.authorization))?.[1] ?? '';
    return { signature, ...signer.recorded };
  }
  // A presigned URL signs UNSIGNED-PAYLOAD: the signer takes it from this header, which is neither hoisted nor signed.
  const result = await signer.presign(
    copy(
      request.query.filter(([name]) => !(PRESIGNED_PARAMETERS as readonly string[]).includes(name)),
      { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
    ),
    {
      signingDate,
      expiresIn: claim.expiresIn,
      signableHeaders: signed,
      unsignableHeaders: new Set(['x-amz-content-sha256']),
      unhoistableHeaders: new Set([...signed, 'x-amz-content-sha256']),
    },
  );
  return { signature: String(result.query?.['X-Amz-Signature'] ?? ''), ...signer.recorded };
}

/** The SDK's signer, keeping the canonical request and string to sign it built (S3's SignatureDoesNotMatch shows both). */
class RecordingSigner extends SignatureV4 {
  readonly recorded = { canonicalRequest: '', stringToSign: '' };

  protected override createCanonicalRequest(request: HttpRequest, canonicalHeaders: HeaderBag, payloadHash: string): string {
    this.recorded.canonicalRequest = super.createCanonicalRequest(request, canonicalHeaders, payloadHash);
    return this.recorded.canonicalRequest;
  }

  protected override async createStringToSign(
    longDate: string,
    scope: string,
    canonicalRequest: string,
    algorithm: string,
  ): Promise<string> {
    this.recorded.stringToSign = await super.createStringToSign(longDate, scope, canonicalRequest, algorithm);
    return this.recorded.stringToSign;
  }
}

/** Query pairs as the signer takes them: a name sent more than once has its values in a list. */
function grouped(pairs: [string, string][]): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of pairs) {
    const held = query[name];
    query[name] = held === undefined ? value : [held, value].flat();
  }
  return query;
}

function sameHex(computed: string, provided: string): boolean {
  const a = Buffer.from(computed, 'utf8');
  const b = Buffer.from(provided, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

const bytesOf = (text: string) =>
  Buffer.from(text, 'utf8')
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ');
