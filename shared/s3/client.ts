import type { Config } from '../config.js';
import { boundedTransport } from '../transport.js';
import { S3Bucket } from './bucket.js';
import type { Credentials } from './signer.js';

/**
 * Bounded in time as for DynamoDB (shared/dynamo/client.ts): 1 s to connect,
 * 10 s for an answer (a 4 MiB upload included), at most 3 attempts, and
 * never past the invocation's budget (shared/deadline.ts).
 */
export const S3_TIMEOUTS = { maxAttempts: 3, connectionTimeout: 1_000, requestTimeout: 10_000 } as const;

/**
 * The files bucket, for the functions that write, read or delete files: the
 * calls of shared/s3/bucket.ts over the SDK's NodeHttpHandler, signed with
 * the credentials the presigner signs with (the configured ones, else the
 * default chain: the function's role). No S3 client: file_url and part URLs
 * are presigned without one too (shared/s3/presigner.ts).
 */
export function createFilesBucket(config: Config, credentials: Credentials): S3Bucket {
  const { region, filesBucket, s3Endpoint } = config;
  return new S3Bucket(
    { region, bucket: filesBucket, endpoint: s3Endpoint, credentials, maxAttempts: S3_TIMEOUTS.maxAttempts },
    boundedTransport(S3_TIMEOUTS),
  );
}
