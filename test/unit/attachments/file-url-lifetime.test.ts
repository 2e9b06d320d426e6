import { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { readConfig } from '../../../shared/config.js';
import { S3FileStore } from '../../../shared/attachments/s3-file-store.js';
import { nowSeconds } from '../../../shared/time.js';

// Presigning is local computation (no request is sent), so a real client with
// chosen credentials shows what the link says and when it really dies.
const store = (ttlSeconds: number, expiration?: Date) =>
  new S3FileStore(
    new S3Client({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9',
      forcePathStyle: true,
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'session', ...(expiration ? { expiration } : {}) },
    }),
    'attachments',
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
    const link = await store(900, new Date(Date.now() + 6 * 3600 * 1000)).presignDownload('files/u/att_1', download);
    expect(signedFor(link.url)).toBe(900);
    expect(link.expiresAt).toBe(signedAt(link.url) + 900);
  });

  it('ends when the signing credentials end, if that is sooner than the TTL, and says so', async () => {
    const credentialsEnd = nowSeconds() + 600;
    const link = await store(3600, new Date(credentialsEnd * 1000)).presignDownload('files/u/att_1', download);
    expect(link.expiresAt).toBe(credentialsEnd);
    expect(signedAt(link.url) + signedFor(link.url)).toBe(credentialsEnd);
  });

  it('lasts the TTL with credentials that state no expiry (Lambda’s), which configuration bounds', async () => {
    const link = await store(3600).presignDownload('files/u/att_1', download);
    expect(signedFor(link.url)).toBe(3600);
    expect(link.expiresAt).toBe(signedAt(link.url) + 3600);
  });
});

describe('FILE_URL_TTL_SECONDS', () => {
  it('is refused above an hour, the longest the Lambda role credentials are assumed to last', () => {
    expect(readConfig({ FILE_URL_TTL_SECONDS: '3600' }).fileUrlTtlSeconds).toBe(3600);
    expect(() => readConfig({ FILE_URL_TTL_SECONDS: '3601' })).toThrow('FILE_URL_TTL_SECONDS must be an integer from 1 to 3600, got "3601"');
  });
});
