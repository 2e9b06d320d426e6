import { S3Client } from '@aws-sdk/client-s3';
import { config } from '../config.js';

let client: S3Client | undefined;

/**
 * One S3 client per process, created on first use and kept across warm
 * invocations. Short timeouts and few attempts, as for DynamoDB: an
 * unreachable bucket becomes a 503 within seconds.
 *
 * Checksums only when an operation requires them: with the SDK's default the
 * local S3 stand-in stores streamed uploads with their chunk framing, and
 * presigned URLs would carry an empty-body checksum that real S3 rejects.
 */
export function s3(): S3Client {
  if (!client) {
    const { region, s3Endpoint } = config();
    client = new S3Client({
      region,
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 1_000, requestTimeout: 10_000 },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // A stand-in on a host:port has no bucket subdomains.
      ...(s3Endpoint ? { endpoint: s3Endpoint, forcePathStyle: true } : {}),
    });
  }
  return client;
}
