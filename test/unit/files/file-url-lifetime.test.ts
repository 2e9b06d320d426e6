import { describe, expect, it } from 'vitest';
import { readConfig } from '../../../shared/config.js';
import { S3FileLinks } from '../../../shared/files/s3-file-links.js';
import { S3FileStore } from '../../../shared/files/s3-file-store.js';
import { S3Bucket } from '../../../shared/s3/bucket.js';
import { S3Presigner } from '../../../shared/s3/presigner.js';
import { nowSeconds } from '../../../shared/time.js';
import { RecordingTransport, successOf } from '../../support/recording-s3.js';

// Presigning is local computation (no request is sent), so the presigner with
// chosen credentials shows what the link says and when it really dies.
const links = (ttlSeconds: number, expiration?: Date) =>
  new S3FileLinks(
    new S3Presigner({
      region: 'us-east-1',
      bucket: 'attachments',
      endpoint: 'http://127.0.0.1:9',
      credentials: {
        accessKeyId: 'AKIDEXAMPLE',
        secretAccessKey: 'secret',
        sessionToken: 'session',
        ...(expiration ? { expiration } : {}),
      },
    }),
    ttlSeconds,
  );
const download = { filename: 'a.txt', fileType: 'text/plain' };
const signedFor = (url: string) => Number(new URL(url).searchParams.get('X-Amz-Expires'));
const signedAt = (url: string) => {
  const [, y, mo, d, h, mi, s] = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(new URL(url).searchParams.get('X-Amz-Date')!)!;
  return Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, +s!) / 1000;
};

describe('file_url lifetime', () => {
  it('lasts the configured TTL when the credentials outlive it, and says when it ends', async () => {
    const link = await links(900, new Date(Date.now() + 6 * 3600 * 1000)).download('files/u/att_1', download);
    expect(signedFor(link.url)).toBe(900);
    expect(link.expiresAt).toBe(signedAt(link.url) + 900);
  });

  it('ends when the signing credentials end, if that is sooner than the TTL, and says so', async () => {
    const credentialsEnd = nowSeconds() + 600;
    const link = await links(3600, new Date(credentialsEnd * 1000)).download('files/u/att_1', download);
    expect(link.expiresAt).toBe(credentialsEnd);
    expect(signedAt(link.url) + signedFor(link.url)).toBe(credentialsEnd);
  });

  it('lasts the TTL with credentials that state no expiry (Lambda’s), which configuration bounds', async () => {
    const link = await links(3600).download('files/u/att_1', download);
    expect(signedFor(link.url)).toBe(3600);
    expect(link.expiresAt).toBe(signedAt(link.url) + 3600);
  });
});

describe('part URL lifetime (upload sessions)', () => {
  const store = (expiration?: Date) => {
    const address = {
      region: 'us-east-1',
      bucket: 'attachments',
      endpoint: 'http://127.0.0.1:9',
      credentials: {
        accessKeyId: 'AKIDEXAMPLE',
        secretAccessKey: 'secret',
        sessionToken: 'session',
        ...(expiration ? { expiration } : {}),
      },
    };
    return new S3FileStore(new S3Bucket({ ...address, maxAttempts: 1 }, new RecordingTransport(successOf)), new S3Presigner(address));
  };

  it('ends when the signing credentials end, as file_url does, and says how long it lives', async () => {
    const credentialsEnd = nowSeconds() + 600;
    const part = await store(new Date(credentialsEnd * 1000)).presignUploadPart('files/u/att_1', 'upload-1', 3, 900);
    expect(signedAt(part.url) + signedFor(part.url)).toBe(credentialsEnd);
    expect(part.expiresIn).toBe(signedFor(part.url));
    expect(new URL(part.url).searchParams.get('partNumber')).toBe('3');
  });

  it('lasts the TTL asked for when the credentials outlive it or state no expiry', async () => {
    const later = await store(new Date(Date.now() + 6 * 3600 * 1000)).presignUploadPart('files/u/att_1', 'upload-1', 1, 900);
    expect([later.expiresIn, signedFor(later.url)]).toEqual([900, 900]);
    const role = await store().presignUploadPart('files/u/att_1', 'upload-1', 1, 900);
    expect([role.expiresIn, signedFor(role.url)]).toEqual([900, 900]);
  });
});

describe('FILE_URL_TTL_SECONDS', () => {
  it('is refused above an hour, the longest the Lambda role credentials are assumed to last', () => {
    expect(readConfig({ FILE_URL_TTL_SECONDS: '3600' }).fileUrlTtlSeconds).toBe(3600);
    expect(() => readConfig({ FILE_URL_TTL_SECONDS: '3601' })).toThrow(
      'FILE_URL_TTL_SECONDS must be an integer from 1 to 3600, got "3601"',
    );
  });
});
