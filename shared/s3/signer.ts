import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';

/** Credentials or a provider of them, as the SDK's signer takes them. */
export type Credentials = ConstructorParameters<typeof SignatureV4>[0]['credentials'];

/**
 * The SDK's own SigV4 signer (@smithy/signature-v4, already in every bundle
 * through the DynamoDB client) set up as the S3 client sets it up: S3 signs
 * the path as sent (it is encoded once, by BucketLocation), and a signed call
 * carries the SHA-256 of its body in x-amz-content-sha256 (applyChecksum,
 * which S3 requires; presigned URLs set UNSIGNED-PAYLOAD themselves).
 */
export function s3Signer(region: string, credentials: Credentials): SignatureV4 {
  return new SignatureV4({ service: 's3', region, credentials, sha256: Sha256, uriEscapePath: false, applyChecksum: true });
}
