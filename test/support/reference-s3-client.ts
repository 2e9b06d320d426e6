import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { BucketAddress } from '../../shared/s3/addressing.js';
import { S3_TIMEOUTS } from '../../shared/s3/client.js';
import type { Credentials } from '../../shared/s3/signer.js';

/**
 * The official S3 client (a dev dependency) configured as our client-less S3
 * layer behaves: the same bounds (shared/s3/client.ts), checksums only when an
 * operation requires them, another S3 addressed by path. The equality tests
 * (test/unit/s3/presigner.test.ts, bucket-requests.test.ts) compare our URLs
 * and requests with what it produces.
 */
export function referenceS3Client(address: BucketAddress & { credentials: Credentials }, extra: S3ClientConfig = {}): S3Client {
  return new S3Client({
    region: address.region,
    maxAttempts: S3_TIMEOUTS.maxAttempts,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(address.endpoint ? { endpoint: address.endpoint, forcePathStyle: true } : {}),
    ...(address.forcePathStyle ? { forcePathStyle: true } : {}),
    credentials: address.credentials,
    ...extra,
  });
}
