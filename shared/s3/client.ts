import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { config, type Config } from '../config.js';

let client: S3Client | undefined;

/**
 * One S3 client per process, created on first use and kept across warm
 * invocations, for the functions that write or delete files (presigned URLs
 * need no client: shared/s3/presigner.ts).
 */
export function s3(): S3Client {
  client ??= new S3Client(s3ClientOptions(config()));
  return client;
}

/**
 * Short timeouts and few attempts, as for DynamoDB: an unreachable bucket
 * becomes a 503 within seconds.
 *
 * Checksums only when an operation requires them: with the SDK's default the
 * local S3 stand-in stores streamed uploads with their chunk framing, and
 * presigned URLs would carry an empty-body checksum that real S3 rejects.
 * The presigner's equality test builds its reference client from these too.
 */
export function s3ClientOptions({ region, s3Endpoint }: Pick<Config, 'region' | 's3Endpoint'>): S3ClientConfig {
  return {
    region,
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 1_000, requestTimeout: 10_000 },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A stand-in on a host:port has no bucket subdomains.
    ...(s3Endpoint ? { endpoint: s3Endpoint, forcePathStyle: true } : {}),
  };
}
