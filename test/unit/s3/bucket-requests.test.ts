import { createHash } from 'node:crypto';
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
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { S3Bucket, type S3BucketSettings } from '../../../shared/s3/bucket.js';
import { S3_TIMEOUTS } from '../../../shared/s3/client.js';
import { RecordingTransport, successOf } from '../../support/recording-s3.js';
import { referenceS3Client } from '../../support/reference-s3-client.js';

/**
 * The proof that each of the eight calls is the request the official S3
 * client makes (configured as test/support/reference-s3-client.ts): for
 * generated regions, buckets, endpoints, keys, arguments, bodies (up to
 * 3 MiB, across the 2 MiB where `Expect: 100-continue` begins) and signing
 * dates, the same method, scheme, host, port, path, query and body, every
 * header but the SDK's user agent, and the Authorization header byte for
 * byte: both sides sign at the same faked time, with the same invocation id.
 * Both sides run against a recording transport: nothing is sent.
 */

/**
 * The headers not compared, each for a reason: the SDK's identification of
 * itself (S3 only logs it). The reference client's are removed before it
 * signs (x-amz-user-agent is a signed header), so that what remains, and the
 * signature over it, can be compared whole.
 */
const NOT_COMPARED = ['user-agent', 'x-amz-user-agent'];

/** The one invocation id both sides draw (the SDK's retry middleware draws it with crypto.randomUUID). */
const INVOCATION_ID = '6f1d3e2a-7b4c-4d5e-8f60-718293a4b5c6';

const regions = fc.constantFrom('us-east-1', 'eu-west-1', 'ap-southeast-4', 'cn-north-1', 'us-gov-west-1', 'il-central-1');
const buckets = fc.oneof(
  fc.stringMatching(/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/),
  fc.constantFrom('attachments', 'my.bucket', 'ab', '192.168.1.1', 'a-b', 'x'.repeat(63)),
);
const endpoints = fc.option(
  fc.constantFrom('http://127.0.0.1:4568', 'http://localhost:9000', 'https://minio.example.com:9000/base', 'https://s3.example.org/a/b'),
  {
    nil: undefined,
  },
);
const credentials = fc.record({
  accessKeyId: fc.stringMatching(/^[A-Z0-9]{16,24}$/),
  secretAccessKey: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 }),
  sessionToken: fc.option(fc.base64String({ minLength: 4, maxLength: 200 }), { nil: undefined }),
});
const settings: fc.Arbitrary<S3BucketSettings> = fc.record({
  region: regions,
  bucket: buckets,
  endpoint: endpoints,
  forcePathStyle: fc.boolean(),
  credentials,
  maxAttempts: fc.constant(S3_TIMEOUTS.maxAttempts),
});

/** Keys with Unicode, spaces, `+`, `%`, and the characters URI encoding treats specially, in slash-separated segments. */
const keySegment = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
  fc.constantFrom('a b', '+', '%', '%2F', 'é', '🌞', "'()*!~", '?', '#', '&', '=', 'files', 'usr_01J'),
);
const keys = fc.array(keySegment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));
const contentTypes = fc.constantFrom('application/pdf', 'image/png', 'text/plain; charset=utf-8', 'application/octet-stream');
const uploadIds = fc.oneof(fc.base64String({ minLength: 4, maxLength: 120 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }));
const etags = fc.oneof(fc.stringMatching(/^"[0-9a-f]{32}"$/), fc.constantFrom('"a&b"', "'q'", '"<x>"'));

/** One call, made the same way through our layer and through the client. */
interface Call {
  name: string;
  ours: (bucket: S3Bucket, key: string) => Promise<unknown>;
  theirs: (client: S3Client, bucket: string, key: string) => Promise<unknown>;
}

/** Bytes from a seed (xorshift): megabytes of them without fast-check generating each. */
function seededBytes(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let x = seed | 1;
  for (let index = 0; index < size; index++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[index] = x & 0xff;
  }
  return bytes;
}

const MIB = 1024 * 1024;
const bodies = fc.oneof(
  { weight: 3, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.oneof(fc.constantFrom(2 * MIB - 1, 2 * MIB, 2 * MIB + 1), fc.integer({ min: 1, max: 3 * MIB })), fc.integer())
      .map(([size, seed]) => seededBytes(size, seed)),
  },
);

const calls: fc.Arbitrary<Call> = fc.oneof(
  fc.tuple(bodies, contentTypes).map(
    ([bytes, type]): Call => ({
      name: 'PutObject',
      ours: (b, key) => b.putObject(key, bytes, type),
      theirs: (c, Bucket, Key) =>
        c.send(new PutObjectCommand({ Bucket, Key, Body: bytes, ContentLength: bytes.length, ContentType: type })),
    }),
  ),
  fc.constant<Call>({
    name: 'DeleteObject',
    ours: (b, key) => b.deleteObject(key),
    theirs: (c, Bucket, Key) => c.send(new DeleteObjectCommand({ Bucket, Key })),
  }),
  contentTypes.map(
    (type): Call => ({
      name: 'CreateMultipartUpload',
      ours: (b, key) => b.createMultipartUpload(key, type),
      theirs: (c, Bucket, Key) => c.send(new CreateMultipartUploadCommand({ Bucket, Key, ContentType: type })),
    }),
  ),
  fc.tuple(uploadIds, fc.option(fc.integer({ min: 1, max: 9_999 }).map(String), { nil: undefined })).map(
    ([uploadId, marker]): Call => ({
      name: 'ListParts',
      ours: (b, key) => b.listParts(key, uploadId, marker),
      theirs: (c, Bucket, Key) =>
        c.send(new ListPartsCommand({ Bucket, Key, UploadId: uploadId, ...(marker ? { PartNumberMarker: marker } : {}) })),
    }),
  ),
  fc
    .tuple(uploadIds, fc.array(fc.record({ partNumber: fc.integer({ min: 1, max: 10_000 }), etag: etags }), { minLength: 1, maxLength: 5 }))
    .map(
      ([uploadId, parts]): Call => ({
        name: 'CompleteMultipartUpload',
        ours: (b, key) => b.completeMultipartUpload(key, uploadId, parts),
        theirs: (c, Bucket, Key) =>
          c.send(
            new CompleteMultipartUploadCommand({
              Bucket,
              Key,
              UploadId: uploadId,
              MultipartUpload: { Parts: parts.map((part) => ({ PartNumber: part.partNumber, ETag: part.etag })) },
            }),
          ),
      }),
    ),
  uploadIds.map(
    (uploadId): Call => ({
      name: 'AbortMultipartUpload',
      ours: (b, key) => b.abortMultipartUpload(key, uploadId),
      theirs: (c, Bucket, Key) => c.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })),
    }),
  ),
  fc.constant<Call>({
    name: 'HeadObject',
    ours: (b, key) => b.headObject(key),
    theirs: (c, Bucket, Key) => c.send(new HeadObjectCommand({ Bucket, Key })),
  }),
  fc.integer({ min: 1, max: 4100 }).map(
    (count): Call => ({
      name: 'GetObject',
      ours: (b, key) => b.getObject(key, `bytes=0-${count - 1}`),
      theirs: async (c, Bucket, Key) =>
        (await c.send(new GetObjectCommand({ Bucket, Key, Range: `bytes=0-${count - 1}` }))).Body?.transformToByteArray(),
    }),
  ),
);

/** A request as it goes on the wire, every header but NOT_COMPARED by its lower-case name; a large body by its hash. */
function wire(request: HttpRequest) {
  const headers = Object.fromEntries(
    Object.entries(request.headers)
      .map(([name, value]) => [name.toLowerCase(), value] as const)
      .filter(([name]) => !NOT_COMPARED.includes(name)),
  );
  const body = request.body === undefined ? Buffer.alloc(0) : Buffer.from(request.body as Uint8Array | string);
  return {
    method: request.method,
    protocol: request.protocol,
    hostname: request.hostname,
    port: request.port,
    path: request.path,
    query: request.query,
    headers,
    body: body.length <= 64 ? body.toString('hex') : `${body.length} bytes, sha256 ${createHash('sha256').update(body).digest('hex')}`,
  };
}

/** The reference client, its user agent removed before it signs (NOT_COMPARED). */
function referenceWithoutUserAgent(s: S3BucketSettings, transport: RecordingTransport): S3Client {
  const client = referenceS3Client(s, { requestHandler: transport.asRequestHandler() });
  client.middlewareStack.addRelativeTo(
    ((next: (args: { request: unknown }) => Promise<unknown>) => async (args: { request: unknown }) => {
      const request = args.request as HttpRequest;
      for (const name of Object.keys(request.headers)) if (NOT_COMPARED.includes(name.toLowerCase())) delete request.headers[name];
      return next(args);
    }) as unknown as Parameters<S3Client['middlewareStack']['addRelativeTo']>[0],
    { relation: 'before', toMiddleware: 'httpSigningMiddleware', name: 'withoutUserAgent' },
  );
  return client;
}

const signingDates = fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2035-12-31T23:59:59Z'), noInvalidDate: true });

describe('S3Bucket requests', () => {
  beforeAll(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.spyOn(globalThis.crypto, 'randomUUID').mockReturnValue(INVOCATION_ID);
  });
  afterAll(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('are, call for call, the requests @aws-sdk/client-s3 makes: address, query, body, every header, the signature byte for byte', async () => {
    await fc.assert(
      fc.asyncProperty(settings, keys, calls, signingDates, async (s, key, call, date) => {
        vi.setSystemTime(date);
        const ours = new RecordingTransport(successOf);
        await call.ours(new S3Bucket(s, ours), key);
        const theirs = new RecordingTransport(successOf);
        await call.theirs(referenceWithoutUserAgent(s, theirs), s.bucket, key);
        expect(ours.requests).toHaveLength(1);
        expect(theirs.requests).toHaveLength(1);
        const [mine, reference] = [wire(ours.requests[0]!), wire(theirs.requests[0]!)];
        expect(mine).toEqual(reference);
        expect(mine.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=[^,]+, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/);
      }),
      { numRuns: 400 },
    );
  }, 240_000);

  it('sends Expect: 100-continue on a PUT body from 2 MiB, as the client does, unsigned', async () => {
    const s = {
      region: 'us-east-1',
      bucket: 'attachments',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      maxAttempts: 3,
    };
    for (const [size, expected] of [
      [2 * MIB - 1, undefined],
      [2 * MIB, '100-continue'],
    ] as const) {
      const ours = new RecordingTransport(successOf);
      await new S3Bucket(s, ours).putObject('files/k', new Uint8Array(size), 'application/octet-stream');
      expect(wire(ours.requests[0]!).headers.expect).toBe(expected);
      expect(wire(ours.requests[0]!).headers.authorization).not.toMatch(/SignedHeaders=[^,]*expect/);
    }
  });

  it('address one object by path on another S3 and by host on AWS', async () => {
    const credentialsOf = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
    const local = new RecordingTransport(successOf);
    await new S3Bucket(
      { region: 'us-east-1', bucket: 'attachments', endpoint: 'http://127.0.0.1:4568', credentials: credentialsOf, maxAttempts: 3 },
      local,
    ).deleteObject('files/a b+%/é.txt');
    const aws = new RecordingTransport(successOf);
    await new S3Bucket({ region: 'eu-west-1', bucket: 'attachments', credentials: credentialsOf, maxAttempts: 3 }, aws).deleteObject(
      'files/a b+%/é.txt',
    );
    expect(wire(local.requests[0]!)).toMatchObject({
      protocol: 'http:',
      hostname: '127.0.0.1',
      port: 4568,
      path: '/attachments/files/a%20b%2B%25/%C3%A9.txt',
      headers: { host: '127.0.0.1:4568' },
    });
    expect(wire(aws.requests[0]!)).toMatchObject({
      protocol: 'https:',
      hostname: 'attachments.s3.eu-west-1.amazonaws.com',
      path: '/files/a%20b%2B%25/%C3%A9.txt',
      headers: {
        host: 'attachments.s3.eu-west-1.amazonaws.com',
        authorization: expect.stringMatching(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/s3\/aws4_request, /),
      },
    });
  });
});
