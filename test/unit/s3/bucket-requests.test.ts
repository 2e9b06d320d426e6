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
import { describe, expect, it } from 'vitest';
import { S3Bucket, type S3BucketSettings } from '../../../shared/s3/bucket.js';
import { S3_TIMEOUTS } from '../../../shared/s3/client.js';
import { RecordingTransport, successOf } from '../../support/recording-s3.js';
import { referenceS3Client } from '../../support/reference-s3-client.js';

/**
 * The proof that each of the eight calls is the request the official S3
 * client makes (configured as test/support/reference-s3-client.ts): for
 * generated regions, buckets, endpoints, keys and arguments, the same method,
 * scheme, host, port, path, query, body and the headers S3 reads, and a SigV4
 * signature over them with the same credential scope and payload hash. Both
 * sides run against a recording transport: nothing is sent.
 */

const regions = fc.constantFrom('us-east-1', 'eu-west-1', 'ap-southeast-4', 'cn-north-1', 'us-gov-west-1', 'il-central-1');
const buckets = fc.oneof(
  fc.stringMatching(/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/),
  fc.constantFrom('attachments', 'my.bucket', 'ab', '192.168.1.1', 'a-b', 'x'.repeat(63)),
);
const endpoints = fc.option(fc.constantFrom('http://127.0.0.1:4568', 'http://localhost:9000', 'https://minio.example.com:9000/base', 'https://s3.example.org/a/b'), {
  nil: undefined,
});
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

const calls: fc.Arbitrary<Call> = fc.oneof(
  fc.tuple(fc.uint8Array({ maxLength: 64 }), contentTypes).map(([bytes, type]): Call => ({
    name: 'PutObject',
    ours: (b, key) => b.putObject(key, bytes, type),
    theirs: (c, Bucket, Key) => c.send(new PutObjectCommand({ Bucket, Key, Body: bytes, ContentLength: bytes.length, ContentType: type })),
  })),
  fc.constant<Call>({
    name: 'DeleteObject',
    ours: (b, key) => b.deleteObject(key),
    theirs: (c, Bucket, Key) => c.send(new DeleteObjectCommand({ Bucket, Key })),
  }),
  contentTypes.map((type): Call => ({
    name: 'CreateMultipartUpload',
    ours: (b, key) => b.createMultipartUpload(key, type),
    theirs: (c, Bucket, Key) => c.send(new CreateMultipartUploadCommand({ Bucket, Key, ContentType: type })),
  })),
  fc.tuple(uploadIds, fc.option(fc.integer({ min: 1, max: 9_999 }).map(String), { nil: undefined })).map(([uploadId, marker]): Call => ({
    name: 'ListParts',
    ours: (b, key) => b.listParts(key, uploadId, marker),
    theirs: (c, Bucket, Key) => c.send(new ListPartsCommand({ Bucket, Key, UploadId: uploadId, ...(marker ? { PartNumberMarker: marker } : {}) })),
  })),
  fc.tuple(uploadIds, fc.array(fc.record({ partNumber: fc.integer({ min: 1, max: 10_000 }), etag: etags }), { minLength: 1, maxLength: 5 })).map(
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
  uploadIds.map((uploadId): Call => ({
    name: 'AbortMultipartUpload',
    ours: (b, key) => b.abortMultipartUpload(key, uploadId),
    theirs: (c, Bucket, Key) => c.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })),
  })),
  fc.constant<Call>({
    name: 'HeadObject',
    ours: (b, key) => b.headObject(key),
    theirs: (c, Bucket, Key) => c.send(new HeadObjectCommand({ Bucket, Key })),
  }),
  fc.integer({ min: 1, max: 4100 }).map((count): Call => ({
    name: 'GetObject',
    ours: (b, key) => b.getObject(key, `bytes=0-${count - 1}`),
    theirs: async (c, Bucket, Key) => (await c.send(new GetObjectCommand({ Bucket, Key, Range: `bytes=0-${count - 1}` }))).Body?.transformToByteArray(),
  })),
);

/** The headers S3 reads from these requests (the SDK's own user agent and invocation ids aside). */
const S3_HEADERS = ['host', 'content-type', 'content-length', 'range', 'x-amz-content-sha256', 'x-amz-security-token'];

function wire(request: HttpRequest) {
  const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), value]));
  const authorization = headers.authorization ?? '';
  return {
    method: request.method,
    protocol: request.protocol,
    hostname: request.hostname,
    port: request.port,
    path: request.path,
    query: request.query,
    headers: Object.fromEntries(S3_HEADERS.filter((name) => headers[name] !== undefined).map((name) => [name, headers[name]])),
    body: request.body === undefined ? '' : Buffer.from(request.body as Uint8Array | string).toString('hex'),
    scope: /Credential=([^,]+)/.exec(authorization)?.[1],
    date: headers['x-amz-date']?.slice(0, 8),
    signed: /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';').filter((name) => S3_HEADERS.includes(name)),
  };
}

describe('S3Bucket requests', () => {
  it('are, call for call, the requests @aws-sdk/client-s3 makes: address, query, headers, body and signature scope', async () => {
    await fc.assert(
      fc.asyncProperty(settings, keys, calls, async (s, key, call) => {
        const ours = new RecordingTransport(successOf);
        await call.ours(new S3Bucket(s, ours), key);
        const theirs = new RecordingTransport(successOf);
        const client = referenceS3Client(s, { requestHandler: theirs.asRequestHandler() });
        await call.theirs(client, s.bucket, key);
        expect(ours.requests).toHaveLength(1);
        expect(theirs.requests).toHaveLength(1);
        const [mine, reference] = [wire(ours.requests[0]!), wire(theirs.requests[0]!)];
        expect(mine).toEqual(reference);
        expect(mine.signed).toEqual(expect.arrayContaining(['host', 'x-amz-content-sha256']));
      }),
      { numRuns: 400 },
    );
  }, 120_000);

  it('address one object by path on another S3 and by host on AWS', async () => {
    const credentialsOf = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
    const local = new RecordingTransport(successOf);
    await new S3Bucket({ region: 'us-east-1', bucket: 'attachments', endpoint: 'http://127.0.0.1:4568', credentials: credentialsOf, maxAttempts: 3 }, local).deleteObject('files/a b+%/é.txt');
    const aws = new RecordingTransport(successOf);
    await new S3Bucket({ region: 'eu-west-1', bucket: 'attachments', credentials: credentialsOf, maxAttempts: 3 }, aws).deleteObject('files/a b+%/é.txt');
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
      headers: { host: 'attachments.s3.eu-west-1.amazonaws.com' },
      scope: expect.stringMatching(/^AKIDEXAMPLE\/\d{8}\/eu-west-1\/s3\/aws4_request$/),
    });
  });
});
