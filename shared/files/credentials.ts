import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { Config } from '../config.js';
import type { Credentials } from '../s3/signer.js';

/**
 * What S3 requests and presigned URLs are signed with, the files' own: the
 * local server's key for the function at hand (Config.s3Credentials, so the
 * local S3 answers it as its role would), the configured credentials (the
 * tests), else the SDK's
 * default chain, the one the DynamoDB client also falls back to (on Lambda
 * its first link, the environment: the function's role). The chain caches
 * what it resolved and resolves again before temporary credentials expire.
 */
export function filesCredentials(config: Config): Credentials {
  return config.s3Credentials ?? config.credentials ?? defaultProvider();
}
