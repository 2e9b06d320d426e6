import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from '@20minutes/s3rver';
import { DUMMY_ACCOUNT } from '@20minutes/s3rver/lib/models/account.js';
import { readConfig } from '../../shared/config.js';
import { filesBucketCors } from '../../shared/http/cors.js';
import { LOCAL_ACCOUNT } from './gateway.js';
import { localIam, type PolicyEvaluator, tablesOf } from './iam.js';
import { multipartFidelity } from './s3-multipart.js';
import { iamAsS3Answers } from './s3-roles.js';
import { signatureCheck } from './s3-signatures.js';

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
  corsOrigins: readonly string[] = [],
  /** The functions' roles it answers as (the local server's); by default, each as the stack grants it over this bucket. */
  iam: PolicyEvaluator = localIam(credentials, { account: LOCAL_ACCOUNT, region: 'us-east-1', tables: tablesOf(readConfig({})), bucket }),
  /** Told of each object created (PUT, POST, copy, multipart completion), as S3 tells EventBridge: the scanner's stand-in listens. */
  objectCreated?: (key: string) => void,
): Promise<{ endpoint: string; close(): Promise<void> }> {
  // s3rver refuses access keys it does not know, and knows only its own unless told: the base key, and each function's.
  DUMMY_ACCOUNT.createKeyPair(credentials.accessKeyId, credentials.secretAccessKey);
  for (const keyId of iam.roles.keys()) DUMMY_ACCOUNT.createKeyPair(keyId, credentials.secretAccessKey);
  const root = directory ?? mkdtempSync(join(tmpdir(), 'messaging-s3-'));
  mkdirSync(root, { recursive: true });
  const server = new S3rver({
    address: host,
    port,
    silent: true,
    directory: root,
    // s3rver's own check approximates SigV4 and never sees the multipart calls; s3-signatures.ts checks them all, as S3 does.
    allowMismatchedSignatures: true,
    // Path-style only, as every client of ours addresses it (forcePathStyle): by default s3rver takes any Host that
    // is not an IP, localhost or this machine's name as a virtual-hosted bucket and rewrites the path before the
    // signature check, so the functions of `sam local`, which reach it as host.docker.internal, all failed with
    // SignatureDoesNotMatch (docs/deploying.md).
    vhostBuckets: false,
    configureBuckets: [{ name: bucket, configs: corsOrigins.length > 0 ? [corsXml(corsOrigins)] : [] }],
  });
  // Just before s3rver's router: SigV4 as S3 checks it (s3-signatures.ts), what s3rver lacks of S3's multipart
  // uploads (s3-multipart.ts), and of IAM (s3-roles.ts: authorised before anything is done). Every key it knows has the base secret.
  const secretOf = (accessKeyId: string) =>
    accessKeyId === credentials.accessKeyId || iam.roles.has(accessKeyId) ? credentials.secretAccessKey : undefined;
  server.middleware.splice(server.middleware.length - 1, 0, signatureCheck(secretOf), iamAsS3Answers(iam), multipartFidelity(server.store));
  if (objectCreated)
    server.on('event', (event: { Records?: { eventName?: string; s3?: { object?: { key?: string } } }[] }) => {
      for (const record of event.Records ?? [])
        if (record.eventName?.startsWith('ObjectCreated:') && record.s3?.object?.key) objectCreated(record.s3.object.key);
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

/** The bucket CORS the stack sets, as S3's XML: browsers on the allowed origins may follow file_url. */
function corsXml(origins: readonly string[]): string {
  const rule = filesBucketCors(origins);
  const elements = (tag: string, values: readonly string[]) => values.map((value) => `<${tag}>${escapeXml(value)}</${tag}>`).join('');
  return (
    '<CORSConfiguration><CORSRule>' +
    elements('AllowedOrigin', rule.allowedOrigins) +
    elements('AllowedMethod', rule.allowedMethods) +
    elements('AllowedHeader', rule.allowedHeaders) +
    elements('ExposeHeader', rule.exposedHeaders) +
    `<MaxAgeSeconds>${rule.maxAgeSeconds}</MaxAgeSeconds>` +
    '</CORSRule></CORSConfiguration>'
  );
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
