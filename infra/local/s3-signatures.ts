import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import S3Error from '@20minutes/s3rver/lib/models/error.js';

/**
 * SigV4 checked as S3 checks it, for every signed request to the local S3
 * (the project's calls, its presigned URLs, the tests' clients): the
 * canonical request rebuilt from what arrived on the wire (method, path as
 * sent, query re-encoded and sorted, the signed headers trimmed), hashed,
 * signed with the key's secret, and compared. A mismatch is S3's 403
 * SignatureDoesNotMatch. Written from the SigV4 specification with
 * node:crypto, not with the SDK's signer: a check by the code that signs
 * would agree with itself.
 *
 * s3rver's own check stays loose (allowMismatchedSignatures): it
 * approximates the canonical request (query values left unencoded, header
 * values untrimmed) and would refuse correct signatures, and it runs after
 * the multipart middleware, so it never saw ListParts, Complete and Abort.
 * Not checked: that the body hashes to x-amz-content-sha256 (S3's
 * XAmzContentSHA256Mismatch): s3rver streams bodies to disk, and the layer's
 * hash is the SDK signer's own, compared with the client's in
 * test/unit/s3/bucket-requests.test.ts.
 */
interface Context {
  method: string;
  req: { url?: string; headers: Record<string, string | string[] | undefined> };
}

interface Authorization {
  accessKeyId: string;
  scope: string;
  date: string;
  signedHeaders: string[];
  signature: string;
  payloadHash: string;
  /** The query parameters the signature covers (a presigned URL's own signature excluded). */
  excluded: string | undefined;
}

export function signatureCheck(secretOf: (accessKeyId: string) => string | undefined) {
  return async function signatures(ctx: Context, next: () => Promise<unknown>): Promise<unknown> {
    const [rawPath = '/', rawQuery = ''] = (ctx.req.url ?? '/').split(/\?(.*)/s);
    const query = queryPairs(rawQuery);
    const authorization = authorizationOf(ctx.req.headers, query);
    // Unsigned (a browser's preflight, an anonymous GET): s3rver answers it as S3 would.
    if (!authorization) return next();
    const secret = secretOf(authorization.accessKeyId);
    if (secret === undefined) return next();
    const canonicalRequest = [
      ctx.method,
      rawPath,
      canonicalQuery(query.filter(([name]) => name !== authorization.excluded)),
      authorization.signedHeaders.map((name) => `${name}:${headerValue(ctx.req.headers[name])}\n`).join(''),
      authorization.signedHeaders.join(';'),
      authorization.payloadHash,
    ].join('\n');
    const stringToSign = ['AWS4-HMAC-SHA256', authorization.date, authorization.scope, sha256Hex(canonicalRequest)].join('\n');
    const [day, region, service] = authorization.scope.split('/');
    let key: Buffer = Buffer.from(`AWS4${secret}`, 'utf8');
    for (const part of [day!, region!, service!, 'aws4_request']) key = createHmac('sha256', key).update(part, 'utf8').digest();
    const expected = createHmac('sha256', key).update(stringToSign, 'utf8').digest();
    const provided = Buffer.from(authorization.signature, 'hex');
    if (provided.length !== expected.length || !timingSafeEqual(provided, expected)) {
      throw new S3Error('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.', {
        AWSAccessKeyId: authorization.accessKeyId,
        CanonicalRequest: canonicalRequest,
      });
    }
    return next();
  };
}

function authorizationOf(headers: Context['req']['headers'], query: [string, string][]): Authorization | undefined {
  const header = headerValue(headers.authorization);
  const signed = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(header);
  if (signed) {
    return {
      accessKeyId: signed[1]!,
      scope: signed[2]!,
      signedHeaders: signed[3]!.split(';'),
      signature: signed[4]!,
      date: headerValue(headers['x-amz-date']),
      payloadHash: headerValue(headers['x-amz-content-sha256']),
      excluded: undefined,
    };
  }
  const parameter = (name: string) => query.find(([key]) => key === name)?.[1];
  const credential = parameter('X-Amz-Credential');
  if (parameter('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256' || !credential) return undefined;
  const [accessKeyId, ...scope] = credential.split('/');
  return {
    accessKeyId: accessKeyId!,
    scope: scope.join('/'),
    signedHeaders: (parameter('X-Amz-SignedHeaders') ?? '').split(';'),
    signature: parameter('X-Amz-Signature') ?? '',
    date: parameter('X-Amz-Date') ?? '',
    // A presigned URL signs no body (S3's rule for query authentication).
    payloadHash: 'UNSIGNED-PAYLOAD',
    excluded: 'X-Amz-Signature',
  };
}

/** The query's name/value pairs, decoded (a `+` is itself: SigV4 clients encode a space as %20). */
function queryPairs(raw: string): [string, string][] {
  if (raw === '') return [];
  return raw.split('&').map((pair) => {
    const [name = '', value = ''] = pair.split(/=(.*)/s);
    return [safeDecode(name), safeDecode(value)];
  });
}

function canonicalQuery(pairs: [string, string][]): string {
  return pairs
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

/** SigV4's URI encoding: every byte but the unreserved characters A-Z a-z 0-9 - . _ ~. */
const uriEncode = (text: string) => encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A header's value as SigV4 canonicalizes it: repeated values joined by commas, trimmed, inner runs of spaces as one. */
function headerValue(value: string | string[] | undefined): string {
  return [value ?? ''].flat().map((part) => part.trim().replace(/\s+/g, ' ')).join(',');
}

const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
