import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { formatUrl } from '@aws-sdk/core/util';
import type { HttpRequest } from '@smithy/core/protocols';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actingAs, functionCredentials, functionKeyId } from '../../infra/local/iam.js';
import { startS3 } from '../../infra/local/s3.js';
import { BucketLocation, type ObjectRequestParts } from '../../shared/s3/addressing.js';
import { S3Bucket, type S3Transport } from '../../shared/s3/bucket.js';
import { S3_TIMEOUTS } from '../../shared/s3/client.js';
import { S3Presigner } from '../../shared/s3/presigner.js';
import { type Credentials, s3Signer } from '../../shared/s3/signer.js';
import { boundedTransport } from '../../shared/transport.js';
import { startTestApi } from '../support/api.js';
import { upload } from '../support/attachments.js';

/**
 * The local S3 checks SigV4 as S3 does (infra/local/s3-signatures.ts): the
 * layer's calls and URLs, signed with each function's own key, and the
 * official client's pass, over keys with the characters encoding treats
 * specially, whatever unsigned headers a browser or a proxy adds; a request
 * changed after signing (its body included), signed with a key S3 does not
 * know or with the wrong secret, dated too far away, or a URL past its
 * expiry, gets S3's 4xx and its XML error, and stores nothing.
 */
const BUCKET = 'signatures-bucket';
const BASE = { accessKeyId: 'local', secretAccessKey: 'local' };
const APP = 'http://app.example';
const KEYS = ['files/u/plain.txt', "files/u/a b+c%d/é 🌞 (1)*!'~.txt", 'files/u/q?x=1&y#z=[]'];
const DOWNLOAD = { contentType: 'text/plain; charset=utf-8', contentDisposition: 'attachment; filename="a b.txt"' };
let s3: Awaited<ReturnType<typeof startS3>>;
let address: { region: string; bucket: string; endpoint: string };

beforeAll(async () => {
  s3 = await startS3('127.0.0.1', BUCKET, BASE, undefined, 0, [APP]);
  address = { region: 'us-east-1', bucket: BUCKET, endpoint: s3.endpoint };
});
afterAll(() => s3?.close());

/** The layer's calls, signed with `credentials` (each function's key by default), each request changed by `change` after signing. */
function bucketSigningWith(credentials: Credentials = functionCredentials(BASE), change?: (request: HttpRequest) => void): S3Bucket {
  const transport = boundedTransport(S3_TIMEOUTS);
  const tampering: S3Transport = {
    handle: (request) => {
      change?.(request);
      return transport.handle(request);
    },
    destroy: () => transport.destroy(),
  };
  return new S3Bucket({ ...address, credentials, maxAttempts: 1 }, tampering);
}

const presigner = (credentials: Credentials = functionCredentials(BASE)) => new S3Presigner({ ...address, credentials });
const failureOf = (work: () => Promise<unknown>) =>
  work().then(
    () => undefined,
    (error: unknown) => error,
  );
const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');

/** A request signed by the SDK's signer as the layer signs it, at `signingDate`, sent by fetch. */
async function sendSigned(key: string, parts: ObjectRequestParts, signingDate?: Date): Promise<Response> {
  const signed = await s3Signer(address.region, BASE).sign(new BucketLocation(address).objectRequest(key, parts), { signingDate });
  const { host: _host, ...headers } = signed.headers;
  return fetch(formatUrl(signed), { method: signed.method, headers, body: parts.body });
}

/** S3's XML error: its code and message. */
async function s3ErrorOf(response: Response): Promise<{ status: number; code?: string; message?: string; body: string }> {
  const body = await response.text();
  return {
    status: response.status,
    code: /<Code>(.*?)<\/Code>/.exec(body)?.[1],
    message: /<Message>(.*?)<\/Message>/.exec(body)?.[1],
    body,
  };
}

describe('the local S3 takes, as signed', () => {
  it.each(KEYS)("every call of the layer with a function's key, and its presigned part PUT and download GET, for %s", async (key) => {
    const bucket = bucketSigningWith();
    try {
      await actingAs('UploadAttachment', () => bucket.putObject(key, Buffer.from('hello'), 'text/plain; charset=utf-8'))();
      await actingAs('CompleteUploadSession', async () => {
        expect(await bucket.headObject(key)).toEqual({ contentLength: 5 });
        expect(Buffer.from(await bucket.getObject(key, 'bytes=1-3')).toString()).toBe('ell');
      })();
      const uploadId = await actingAs('StartUploadSession', () => bucket.createMultipartUpload(key, 'application/octet-stream'))();
      const part = Buffer.from('part one');
      const partUrl = await actingAs('SignUploadParts', () =>
        presigner().presignUploadPart(key, { uploadId, partNumber: 1 }, { expiresIn: 60 }),
      )();
      // What a browser adds to a presigned PUT, none of it signed.
      const put = await fetch(partUrl, {
        method: 'PUT',
        body: part,
        headers: { origin: APP, 'content-type': 'application/octet-stream', accept: '*/*' },
      });
      expect(put.status).toBe(200);
      const parts = await actingAs('GetUploadSession', () => bucket.listParts(key, uploadId))();
      expect(parts.parts).toMatchObject([{ partNumber: 1, etag: `"${md5(part)}"` }]);
      await actingAs('CompleteUploadSession', () =>
        bucket.completeMultipartUpload(key, uploadId, [{ partNumber: 1, etag: `"${md5(part)}"` }]),
      )();
      const downloadUrl = await actingAs('GetAttachment', () => presigner().presignDownload(key, DOWNLOAD, { expiresIn: 60 }))();
      const download = await fetch(downloadUrl, { headers: { origin: APP } });
      expect(download.status).toBe(200);
      expect(download.headers.get('content-disposition')).toBe(DOWNLOAD.contentDisposition);
      expect(await download.text()).toBe('part one');
      const aborted = await actingAs('StartUploadSession', () => bucket.createMultipartUpload(key, 'text/plain'))();
      await actingAs('Cleanup', () => bucket.abortMultipartUpload(key, aborted))();
      await actingAs('Cleanup', () => bucket.deleteObject(key))();
      expect(await failureOf(() => bucket.headObject(key))).toMatchObject({ $metadata: { httpStatusCode: 404 } });
    } finally {
      bucket.destroy();
    }
  });

  it("the official S3 client's calls", async () => {
    const client = new S3Client({ ...address, credentials: BASE, forcePathStyle: true, maxAttempts: 1 });
    try {
      await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEYS[1], Body: 'from the client', ContentType: 'text/plain' }));
      const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: KEYS[1] }));
      expect(await got.Body!.transformToString()).toBe('from the client');
    } finally {
      client.destroy();
    }
  });

  it('a request to which a proxy added unsigned headers: only the signed ones count', async () => {
    const bucket = bucketSigningWith(BASE, (request) => {
      request.headers['user-agent'] = 'some proxy';
      request.headers['x-forwarded-for'] = '10.0.0.1';
    });
    try {
      await bucket.putObject('files/u/proxied', Buffer.from('through'), 'text/plain');
      expect(await bucket.headObject('files/u/proxied')).toEqual({ contentLength: 7 });
    } finally {
      bucket.destroy();
    }
  });

  it('a 3 MiB PutObject of the layer, sent after 100 Continue, its body hashed whole', async () => {
    const bucket = bucketSigningWith();
    const body = Buffer.alloc(3 * 1024 * 1024, 7);
    try {
      await actingAs('UploadAttachment', () => bucket.putObject('files/u/large', body, 'application/octet-stream'))();
      expect(await bucket.headObject('files/u/large')).toEqual({ contentLength: body.length });
    } finally {
      bucket.destroy();
    }
  });

  it('a header-signed PUT that declares UNSIGNED-PAYLOAD: signed, its body not hashed', async () => {
    const body = Buffer.from('not hashed');
    const put = await sendSigned('files/u/unsigned-payload', {
      method: 'PUT',
      query: { 'x-id': 'PutObject' },
      headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'content-length': String(body.length) },
      body,
    });
    expect(put.status).toBe(200);
    expect(await (await sendSigned('files/u/unsigned-payload', { method: 'GET', query: { 'x-id': 'GetObject' } })).text()).toBe(
      'not hashed',
    );
  });

  it("a browser's CORS preflight of a presigned PUT, which is never signed", async () => {
    const uploadId = await bucketSigningWith(BASE).createMultipartUpload('files/u/preflight', 'text/plain');
    const partUrl = await presigner().presignUploadPart('files/u/preflight', { uploadId, partNumber: 1 }, { expiresIn: 60 });
    const preflight = await fetch(partUrl, {
      method: 'OPTIONS',
      headers: { origin: APP, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight.status).toBe(200);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('PUT');
  });
});

describe('the local S3 refuses, as S3 does', () => {
  it.each([
    [
      'a signed header',
      (request: HttpRequest) => {
        request.headers['content-type'] = 'text/html';
      },
    ],
    [
      'the path',
      (request: HttpRequest) => {
        request.path = request.path.replace('target', 'other');
      },
    ],
    [
      'the query',
      (request: HttpRequest) => {
        request.query['x-id'] = 'CopyObject';
      },
    ],
    [
      'the date',
      (request: HttpRequest) => {
        request.headers['x-amz-date'] = request.headers['x-amz-date']!.replace(/\d(?=Z$)/, (d) => String((Number(d) + 1) % 10));
      },
    ],
    [
      'the declared body hash',
      (request: HttpRequest) => {
        request.headers['x-amz-content-sha256'] = createHash('sha256').update('other').digest('hex');
      },
    ],
  ])('a call whose %s changed after signing: 403 SignatureDoesNotMatch, nothing stored', async (_what, change) => {
    const bucket = bucketSigningWith(functionCredentials(BASE), change);
    const reader = bucketSigningWith(BASE);
    try {
      const refused = await failureOf(() =>
        actingAs('UploadAttachment', () => bucket.putObject('files/u/target', Buffer.from('hello'), 'text/plain'))(),
      );
      expect(refused).toMatchObject({ name: 'SignatureDoesNotMatch', $metadata: { httpStatusCode: 403 } });
      expect(await failureOf(() => reader.headObject('files/u/target'))).toMatchObject({ $metadata: { httpStatusCode: 404 } });
    } finally {
      bucket.destroy();
      reader.destroy();
    }
  });

  it('a body changed after signing, its hash left as signed: 400 XAmzContentSHA256Mismatch, the stored object kept', async () => {
    const honest = bucketSigningWith(BASE);
    const tampered = bucketSigningWith(BASE, (request) => {
      request.body = Buffer.from('HELLO');
    });
    try {
      await honest.putObject('files/u/kept', Buffer.from('hello'), 'text/plain');
      expect(await failureOf(() => tampered.putObject('files/u/kept', Buffer.from('hello'), 'text/plain'))).toMatchObject({
        name: 'XAmzContentSHA256Mismatch',
        $metadata: { httpStatusCode: 400 },
      });
      expect(Buffer.from(await honest.getObject('files/u/kept', 'bytes=0-4')).toString()).toBe('hello');
    } finally {
      honest.destroy();
      tampered.destroy();
    }
  });

  it('a signature that differs, showing the canonical request it computed, as S3 does', async () => {
    const date = new Date().toISOString().replace(/[-:]|\.\d+/g, '');
    const response = await fetch(`${s3.endpoint}/${BUCKET}/files/u/shown?x-id=GetObject`, {
      headers: {
        authorization: `AWS4-HMAC-SHA256 Credential=local/${date.slice(0, 8)}/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${'0'.repeat(64)}`,
        'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
        'x-amz-date': date,
      },
    });
    const error = await s3ErrorOf(response);
    expect(error).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    const host = new URL(s3.endpoint).host;
    expect(error.body).toContain(
      `<CanonicalRequest>GET\n/${BUCKET}/files/u/shown\nx-id=GetObject\nhost:${host}\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:${date}\n\nhost;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD</CanonicalRequest>`,
    );
  });

  it('an x-amz-* header added after signing: 403 AccessDenied, HeadersNotSigned', async () => {
    const bucket = bucketSigningWith(BASE, (request) => {
      request.headers['x-amz-acl'] = 'public-read';
    });
    try {
      expect(await failureOf(() => bucket.putObject('files/u/acl', Buffer.from('x'), 'text/plain'))).toMatchObject({
        name: 'AccessDenied',
        message: 'There were headers present in the request which were not signed',
        $metadata: { httpStatusCode: 403 },
      });
    } finally {
      bucket.destroy();
    }
  });

  it('a key it does not know: 403 InvalidAccessKeyId; a known key with the wrong secret: 403 SignatureDoesNotMatch', async () => {
    const stranger = bucketSigningWith({ accessKeyId: 'AKIASTRANGER', secretAccessKey: BASE.secretAccessKey });
    const forger = bucketSigningWith({ accessKeyId: functionKeyId(BASE, 'GetAttachment'), secretAccessKey: 'not-the-secret' });
    try {
      expect(await failureOf(() => stranger.getObject('files/u/any', 'bytes=0-1'))).toMatchObject({
        name: 'InvalidAccessKeyId',
        $metadata: { httpStatusCode: 403 },
      });
      expect(await failureOf(() => forger.getObject('files/u/any', 'bytes=0-1'))).toMatchObject({
        name: 'SignatureDoesNotMatch',
        $metadata: { httpStatusCode: 403 },
      });
    } finally {
      stranger.destroy();
      forger.destroy();
    }
    const url = await presigner({ accessKeyId: 'AKIASTRANGER', secretAccessKey: BASE.secretAccessKey }).presignDownload(
      'files/u/any',
      DOWNLOAD,
      { expiresIn: 60 },
    );
    expect(await s3ErrorOf(await fetch(url))).toMatchObject({ status: 403, code: 'InvalidAccessKeyId' });
  });

  it('a request with no signature at all: 403 AccessDenied, as a bucket that blocks public access answers', async () => {
    await bucketSigningWith(BASE).putObject('files/u/private', Buffer.from('secret'), 'text/plain');
    const url = new URL(await presigner().presignDownload('files/u/private', DOWNLOAD, { expiresIn: 60 }));
    expect(await s3ErrorOf(await fetch(`${url.origin}${url.pathname}`))).toMatchObject({
      status: 403,
      code: 'AccessDenied',
      message: 'Access Denied',
    });
  });

  it('a header-signed request dated over 15 minutes away: 403 RequestTimeTooSkewed', async () => {
    const early = await sendSigned('files/u/skewed', { method: 'GET', query: { 'x-id': 'GetObject' } }, new Date(Date.now() - 20 * 60_000));
    expect(await s3ErrorOf(early)).toMatchObject({ status: 403, code: 'RequestTimeTooSkewed' });
    const late = await sendSigned(
      'files/u/skewed',
      { method: 'DELETE', query: { 'x-id': 'DeleteObject' } },
      new Date(Date.now() + 20 * 60_000),
    );
    expect(await s3ErrorOf(late)).toMatchObject({ status: 403, code: 'RequestTimeTooSkewed' });
  });

  it('a presigned download or part URL past its expiry: 403 AccessDenied "Request has expired"', async () => {
    await bucketSigningWith(BASE).putObject('files/u/expiring', Buffer.from('soon gone'), 'text/plain');
    const uploadId = await bucketSigningWith(BASE).createMultipartUpload('files/u/expiring-parts', 'text/plain');
    const signingDate = new Date(Date.now() - 120_000);
    const download = await presigner().presignDownload('files/u/expiring', DOWNLOAD, { expiresIn: 60, signingDate });
    const expired = await s3ErrorOf(await fetch(download));
    expect(expired).toMatchObject({ status: 403, code: 'AccessDenied', message: 'Request has expired' });
    expect(expired.body).toContain('<X-Amz-Expires>60</X-Amz-Expires>');
    const part = await presigner().presignUploadPart('files/u/expiring-parts', { uploadId, partNumber: 1 }, { expiresIn: 60, signingDate });
    expect(await s3ErrorOf(await fetch(part, { method: 'PUT', body: 'late' }))).toMatchObject({
      status: 403,
      code: 'AccessDenied',
      message: 'Request has expired',
    });
    expect((await bucketSigningWith(BASE).listParts('files/u/expiring-parts', uploadId)).parts).toEqual([]);
    // Still alive, the same URL works: the expiry, not the signing date, refused it.
    const alive = await presigner().presignDownload('files/u/expiring', DOWNLOAD, { expiresIn: 300, signingDate });
    expect(await (await fetch(alive)).text()).toBe('soon gone');
  });

  it.each([
    ['its response-content-type', (url: URL) => url.searchParams.set('response-content-type', 'text/html')],
    ['its expiry, made longer', (url: URL) => url.searchParams.set('X-Amz-Expires', '604800')],
    [
      'its key',
      (url: URL) => {
        url.pathname = url.pathname.replace('tampered', 'other');
      },
    ],
    [
      'its signature',
      (url: URL) =>
        url.searchParams.set(
          'X-Amz-Signature',
          url.searchParams.get('X-Amz-Signature')!.replace(/^./, (c) => (c === '0' ? '1' : '0')),
        ),
    ],
    ['an added parameter', (url: URL) => url.searchParams.set('versionId', 'null')],
  ])('a presigned download whose %s changed: 403 SignatureDoesNotMatch', async (_what, change) => {
    await bucketSigningWith(BASE).putObject('files/u/tampered', Buffer.from('guarded'), 'text/plain');
    const url = new URL(await presigner().presignDownload('files/u/tampered', DOWNLOAD, { expiresIn: 60 }));
    expect((await fetch(url)).status).toBe(200);
    change(url);
    expect(await s3ErrorOf(await fetch(url))).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
  });

  it('a presigned part URL moved to another part number or upload: 403 SignatureDoesNotMatch, no part stored', async () => {
    const bucket = bucketSigningWith(BASE);
    const uploadId = await bucket.createMultipartUpload('files/u/parts', 'text/plain');
    const other = await bucket.createMultipartUpload('files/u/parts', 'text/plain');
    const url = new URL(await presigner().presignUploadPart('files/u/parts', { uploadId, partNumber: 1 }, { expiresIn: 60 }));
    const moved = new URL(url);
    moved.searchParams.set('partNumber', '2');
    expect(await s3ErrorOf(await fetch(moved, { method: 'PUT', body: 'x' }))).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    const elsewhere = new URL(url);
    elsewhere.searchParams.set('uploadId', other);
    expect(await s3ErrorOf(await fetch(elsewhere, { method: 'PUT', body: 'x' }))).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
    expect((await fetch(url, { method: 'POST', body: 'x' })).status).toBe(403);
    expect((await bucket.listParts('files/u/parts', uploadId)).parts).toEqual([]);
    expect((await bucket.listParts('files/u/parts', other)).parts).toEqual([]);
  });
});

describe('the local server (npm start)', () => {
  it("signs a file_url with the uploading function's own key, which its S3 checks: changed or moved to another key, it is 403", async () => {
    const t = await startTestApi();
    try {
      const uploaded = await upload(t, 'signer', { bytes: 'signed bytes', filename: 'a.txt', type: 'text/plain' });
      expect(uploaded.status).toBe(201);
      const url = new URL(uploaded.body.file_url);
      const [keyId, ...scope] = url.searchParams.get('X-Amz-Credential')!.split('/');
      expect(keyId).toBe(functionKeyId({ accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local' }, 'UploadAttachment'));
      expect(await (await fetch(url)).text()).toBe('signed bytes');

      const inline = new URL(url);
      inline.searchParams.set('response-content-disposition', 'inline');
      expect(await s3ErrorOf(await fetch(inline))).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
      const asAnother = new URL(url);
      asAnother.searchParams.set(
        'X-Amz-Credential',
        [functionKeyId({ accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local' }, 'GetAttachment'), ...scope].join('/'),
      );
      expect(await s3ErrorOf(await fetch(asAnother))).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    } finally {
      await t.close();
    }
  });
});

describe('a request whose Host is not the loopback address (sam local: host.docker.internal)', () => {
  /**
   * Signed path-style for `http://<host>:<port>` as the functions in SAM's
   * containers sign it (S3_ENDPOINT of infra/stack/sam-env.json), and sent to the
   * stand-in with that Host header, as Docker's host gateway delivers it.
   */
  async function sendAs(host: string, key: string, parts: ObjectRequestParts): Promise<{ status: number; body: string }> {
    const { port } = new URL(s3.endpoint);
    const location = new BucketLocation({ ...address, endpoint: `http://${host}:${port}` });
    const signed = await s3Signer(address.region, BASE).sign(location.objectRequest(key, parts));
    expect(signed.headers.host).toBe(`${host}:${port}`);
    return new Promise((resolve, reject) => {
      const query = new URLSearchParams(signed.query as Record<string, string>).toString();
      const request = httpRequest(
        {
          host: '127.0.0.1',
          port: Number(port),
          method: signed.method,
          path: `${signed.path}${query ? `?${query}` : ''}`,
          headers: signed.headers,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      request.on('error', reject);
      request.end(parts.body);
    });
  }

  it('is a path-style request of the bucket, not a virtual-hosted bucket named after the host: its signature holds and the file is stored', async () => {
    const body = Buffer.from('through the docker host gateway');
    const put = await sendAs('host.docker.internal', 'files/u/docker-host', {
      method: 'PUT',
      query: { 'x-id': 'PutObject' },
      headers: { 'content-type': 'text/plain', 'content-length': String(body.length) },
      body,
    });
    expect(put.body).not.toContain('SignatureDoesNotMatch');
    expect(put.status).toBe(200);
    const read = await sendAs('host.docker.internal', 'files/u/docker-host', { method: 'GET', query: { 'x-id': 'GetObject' } });
    expect(read).toEqual({ status: 200, body: 'through the docker host gateway' });
  });
});
