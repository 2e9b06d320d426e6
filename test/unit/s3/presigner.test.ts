import { GetObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { attachmentDisposition } from '../../../shared/files/content-disposition.js';
import { type PresignerSettings, S3Presigner } from '../../../shared/s3/presigner.js';
import { referenceS3Client } from '../../support/reference-s3-client.js';

/**
 * The proof that the client-less presigner signs what S3 accepts without an
 * AWS account: over a generated corpus, its URL equals, byte for byte, the one
 * @aws-sdk/s3-request-presigner makes with an S3 client configured as our
 * S3 layer behaves (test/support/reference-s3-client.ts).
 */

const regions = fc.constantFrom(
  'us-east-1',
  'us-west-2',
  'eu-west-1',
  'eu-central-2',
  'ap-southeast-4',
  'sa-east-1',
  'il-central-1',
  'mx-central-1',
  'cn-north-1',
  'cn-northwest-1',
  'us-gov-west-1',
  'us-gov-east-1',
  'us-iso-east-1',
  'us-isob-east-1',
  'eusc-de-east-1',
);

/** Valid names (virtual-hostable), and the ones S3 addresses by path: dots, capitals, too short, IP-like. */
// S3 refuses names beginning `xn--` (its bucket naming rules), and a host label so begun is punycode that the
// WHATWG URL parser the SDK's endpoint resolver uses may refuse (`xn--0`): no such bucket exists to sign for.
const notPunycode = (name: string) => !name.startsWith('xn--');
const buckets = fc.oneof(
  fc.stringMatching(/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/).filter(notPunycode),
  fc.stringMatching(/^[a-z0-9][a-z0-9.-]{1,20}[a-z0-9]$/).filter(notPunycode),
  fc.constantFrom(
    'attachments',
    'my.bucket',
    'My_Bucket',
    'ab',
    '192.168.1.1',
    '10-0-0-1',
    '-abc',
    'abc-',
    'a-b',
    'x'.repeat(63),
    'y'.repeat(64),
  ),
);

/** AWS itself, or another S3 (a stand-in, MinIO) with or without a base path, by path or by host. */
const endpoints = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(
    'http://127.0.0.1:4568',
    'http://localhost:9000',
    'https://minio.example.com',
    'https://minio.example.com:9000/base',
    'http://host.docker.internal:4568/',
    'https://s3.example.org/a/b',
  ),
);

const accessKeys = fc.stringMatching(/^[A-Z0-9]{16,24}$/);
/** Any text, with the characters a session token and a secret really carry (+ / =). */
const secrets = fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 60 });
const credentials = fc.record({
  accessKeyId: accessKeys,
  secretAccessKey: secrets,
  sessionToken: fc.option(fc.base64String({ minLength: 4, maxLength: 400 }), { nil: undefined }),
});

const settings: fc.Arbitrary<PresignerSettings> = fc.record({
  region: regions,
  bucket: buckets,
  endpoint: endpoints,
  forcePathStyle: fc.boolean(),
  credentials,
});

/** Segments of any Unicode, with the characters URI encoding treats specially, and slashes between. */
const keySegment = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.constantFrom('.', '..', '', ' ', "'()*!~", '%2F', '%', '+', '?', '#', '&', '=', 'a b', 'é', '🌞', '\u0000', '\u202e'),
);
const keys = fc
  .array(keySegment, { minLength: 1, maxLength: 5 })
  .map((parts) => parts.join('/'))
  .filter((key) => key !== '');

/** Filenames as users send them: Unicode, quotes, spaces, RFC 5987 specials, percent signs, control characters. */
const filenames = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 }),
  fc.constantFrom(
    'report.pdf',
    'Été 🌞.jpg',
    'a "quoted" name.txt',
    "it's (a)*.txt",
    'naïve résumé.docx',
    '100% real.png',
    "UTF-8''already.txt",
    'semi;colon,comma.txt',
    'back\\slash.txt',
    '日本語のファイル.pdf',
    'tab\there.txt',
    ' lead and trail ',
  ),
);

const fileTypes = fc.oneof(
  fc.constantFrom(
    'application/pdf',
    'image/png',
    'text/plain',
    'application/octet-stream',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  ),
  fc.tuple(fc.stringMatching(/^[a-z]{1,12}$/), fc.stringMatching(/^[a-z0-9.+-]{1,40}$/)).map(([type, sub]) => `${type}/${sub}`),
);

const expiries = fc.integer({ min: 1, max: 604_800 });
const signingDates = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true });

describe('S3Presigner', () => {
  it('signs the same download URL as @aws-sdk/s3-request-presigner, byte for byte', async () => {
    await fc.assert(
      fc.asyncProperty(
        settings,
        keys,
        filenames,
        fileTypes,
        expiries,
        signingDates,
        async (s, key, filename, fileType, expiresIn, signingDate) => {
          const overrides = { contentType: fileType, contentDisposition: attachmentDisposition(filename) };
          const ours = await new S3Presigner(s).presignDownload(key, overrides, { expiresIn, signingDate });
          const theirs = await getSignedUrl(
            referenceS3Client(s),
            new GetObjectCommand({
              Bucket: s.bucket,
              Key: key,
              ResponseContentType: overrides.contentType,
              ResponseContentDisposition: overrides.contentDisposition,
            }),
            { expiresIn, signingDate },
          );
          expect(ours).toBe(theirs);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('signs the same UploadPart URL as @aws-sdk/s3-request-presigner, byte for byte', async () => {
    const uploadIds = fc.oneof(
      fc.base64String({ minLength: 4, maxLength: 200 }),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
    );
    const partNumbers = fc.integer({ min: 1, max: 10_000 });
    await fc.assert(
      fc.asyncProperty(
        settings,
        keys,
        uploadIds,
        partNumbers,
        expiries,
        signingDates,
        async (s, key, uploadId, partNumber, expiresIn, signingDate) => {
          const ours = await new S3Presigner(s).presignUploadPart(key, { uploadId, partNumber }, { expiresIn, signingDate });
          const theirs = await getSignedUrl(
            referenceS3Client(s),
            new UploadPartCommand({ Bucket: s.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber }),
            { expiresIn, signingDate },
          );
          expect(ours).toBe(theirs);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('signs with the credentials the provider gives at each call, session token included', async () => {
    let current = { accessKeyId: 'AKIAFIRST', secretAccessKey: 'one', sessionToken: 'token-1' };
    const presigner = new S3Presigner({ region: 'eu-west-1', bucket: 'files', credentials: async () => current });
    const options = { expiresIn: 900, signingDate: new Date('2026-01-01T00:00:00Z') };
    const first = new URL(await presigner.presignDownload('k', { contentType: 'text/plain', contentDisposition: 'attachment' }, options));
    current = { accessKeyId: 'AKIASECOND', secretAccessKey: 'two', sessionToken: 'token-2' };
    const second = new URL(await presigner.presignDownload('k', { contentType: 'text/plain', contentDisposition: 'attachment' }, options));
    expect(first.searchParams.get('X-Amz-Security-Token')).toBe('token-1');
    expect(second.searchParams.get('X-Amz-Credential')).toBe('AKIASECOND/20260101/eu-west-1/s3/aws4_request');
    expect(second.searchParams.get('X-Amz-Security-Token')).toBe('token-2');
    expect(second.origin).toBe('https://files.s3.eu-west-1.amazonaws.com');
  });

  it('refuses a lifetime beyond the 7 days SigV4 allows, and signs one of 7 days', async () => {
    const presigner = new S3Presigner({ region: 'us-east-1', bucket: 'files', credentials: { accessKeyId: 'A', secretAccessKey: 'B' } });
    const download = (expiresIn: number) =>
      presigner.presignDownload('k', { contentType: 'text/plain', contentDisposition: 'attachment' }, { expiresIn });
    // The signer's refusal (@smithy/signature-v4 throws it as a bare string).
    await expect(download(604_801)).rejects.toBe(
      'Signature version 4 presigned URLs must have an expiration date less than one week in the future',
    );
    expect(new URL(await download(604_800)).searchParams.get('X-Amz-Expires')).toBe('604800');
  });
});
