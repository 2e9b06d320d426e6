import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { AppPart } from '../app.js';
import type { Config } from '../config.js';

/**
 * Bounded in time as for DynamoDB (shared/dynamo/client.ts): 1 s to connect,
 * 10 s for an answer (a 4 MiB upload included), at most 3 attempts.
 *
 * Checksums only when an operation requires them: with the SDK's default the
 * local S3 stand-in stores streamed uploads with their chunk framing, and
 * presigned URLs would carry an empty-body checksum that real S3 rejects.
 *
 * Only the functions that write or delete files build it: file_url is signed
 * without a client (shared/s3/presigner.ts), whose equality test builds its
 * reference client from s3ClientOptions.
 */
export const S3_TIMEOUTS = { maxAttempts: 3, connectionTimeout: 1_000, requestTimeout: 10_000 } as const;

export function createS3Client(config: Config): S3Client {
  return new S3Client(s3ClientOptions(config));
}

export function s3ClientOptions(config: Pick<Config, 'region' | 's3Endpoint' | 'credentials'>): S3ClientConfig {
  return {
    region: config.region,
    maxAttempts: S3_TIMEOUTS.maxAttempts,
    requestHandler: {
      connectionTimeout: S3_TIMEOUTS.connectionTimeout,
      requestTimeout: S3_TIMEOUTS.requestTimeout,
      // Without it the SDK only logs a warning when requestTimeout passes and goes on waiting.
      throwOnRequestTimeout: true,
    },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A stand-in on a host:port has no bucket subdomains.
    ...(config.s3Endpoint ? { endpoint: config.s3Endpoint, forcePathStyle: true } : {}),
    ...(config.credentials ? { credentials: config.credentials } : {}),
  };
}

/** The App's S3 client, for the functions that write or delete files (see AppPart). */
export const s3Client: AppPart<S3Client> = {
  name: 's3',
  build: (app) => createS3Client(app.config),
  destroy: (client) => client.destroy(),
};
