import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from '@20minutes/s3rver';
import { DUMMY_ACCOUNT } from '@20minutes/s3rver/lib/models/account.js';

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * S3 in this process (s3rver on loopback) with the files bucket created.
 * Files persist under `directory` when given; otherwise they live in a
 * temporary directory removed on close.
 */
export async function startS3(
  host: string,
  bucket: string,
  credentials: S3Credentials,
  directory?: string,
  port = 0,
): Promise<{ endpoint: string; close(): Promise<void> }> {
  // s3rver refuses access keys it does not know, and knows only its own unless told.
  DUMMY_ACCOUNT.createKeyPair(credentials.accessKeyId, credentials.secretAccessKey);
  const root = directory ?? mkdtempSync(join(tmpdir(), 'messaging-s3-'));
  mkdirSync(root, { recursive: true });
  const server = new S3rver({
    address: host,
    port,
    silent: true,
    directory: root,
    // Signatures are checked loosely: a stand-in guards nothing, and a proxy may have rewritten a header.
    allowMismatchedSignatures: true,
    configureBuckets: [{ name: bucket }],
  });
  const address = await server.run();
  return {
    endpoint: `http://${host}:${address.port}`,
    async close() {
      await server.close();
      if (!directory) rmSync(root, { recursive: true, force: true });
    },
  };
}
