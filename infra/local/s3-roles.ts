import { AsyncLocalStorage } from 'node:async_hooks';
import S3Error from '@20minutes/s3rver/lib/models/error.js';
import { attachmentsTable, conversationsTable, eventsTable, idempotencyTable, uploadSessionsTable } from '../../shared/dynamo/tables.js';
import type { Credentials } from '../../shared/s3/signer.js';
import { cleanupPermissions, permissionsFor, type DataArns, type Permission } from '../permissions.js';
import { routes } from '../routes.js';

/**
 * Each function's IAM role, for the local S3: on AWS every function signs
 * with its own role, which the stack grants from the route's `access`
 * (infra/permissions.ts); locally all functions run on one App. So the local
 * server runs each function inside `actingAs(name)`, signs its S3 calls and
 * URLs with a key of that function's own (`functionCredentials`), and the
 * local S3 (infra/local/s3.ts) looks the key up here and answers as S3
 * answers that role, from the same permissions the stack grants.
 *
 * What it answers from the role: a GET or HEAD of a missing key is 404 only
 * for a role that may list the key (s3:ListBucket), else 403 AccessDenied, as
 * S3 does. Calls made outside any function (a test reaching into the App, the
 * server's own set-up) sign with the base key, which may do anything.
 */

/** The function the stack names the cleanup (infra/constructs/functions.ts). */
export const CLEANUP_FUNCTION = 'Cleanup';

const acting = new AsyncLocalStorage<string>();

/** Runs `work` as the function `name`: its S3 calls sign with that function's key. */
export function actingAs<A extends unknown[], R>(name: string, work: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return (...args) => acting.run(name, () => work(...args));
}

/** The key of one function: the base key id with the function's name, the same secret. */
export const functionKeyId = (base: { accessKeyId: string }, name: string) => `${base.accessKeyId}-${name}`;

/** Credentials that are, at each signing, those of the function acting then (the base ones outside any). */
export function functionCredentials(base: { accessKeyId: string; secretAccessKey: string }): Credentials {
  return async () => {
    const name = acting.getStore();
    return name === undefined ? base : { ...base, accessKeyId: functionKeyId(base, name) };
  };
}

/** Every function's key id and the permissions its role holds over a bucket of that name. */
export function functionRoles(base: { accessKeyId: string }, bucket: string): Map<string, Permission[]> {
  const arns: DataArns = {
    conversations: { arn: 'arn:aws:dynamodb:::table/conversations', definition: conversationsTable },
    attachments: { arn: 'arn:aws:dynamodb:::table/attachments', definition: attachmentsTable },
    idempotency: { arn: 'arn:aws:dynamodb:::table/idempotency', definition: idempotencyTable },
    uploadSessions: { arn: 'arn:aws:dynamodb:::table/upload_sessions', definition: uploadSessionsTable },
    events: { arn: 'arn:aws:dynamodb:::table/events', definition: eventsTable },
    filesBucket: bucketArn(bucket),
  };
  return new Map([
    ...routes.map((route) => [functionKeyId(base, route.name), permissionsFor(route, arns)] as const),
    [functionKeyId(base, CLEANUP_FUNCTION), cleanupPermissions(arns)],
  ]);
}

const bucketArn = (bucket: string) => `arn:aws:s3:::${bucket}`;

/**
 * Whether these permissions let S3 tell their holder a key of the bucket is
 * missing: an s3:ListBucket on the bucket whose conditions the key meets as
 * s3:prefix (how S3 evaluates it for a GET or HEAD; StringLike is the only
 * operator the stack uses, any other is read as not met).
 */
export function mayList(permissions: readonly Permission[], bucket: string, key: string): boolean {
  return permissions.some(
    (permission) =>
      permission.actions.includes('s3:ListBucket') &&
      permission.resources.includes(bucketArn(bucket)) &&
      Object.entries(permission.conditions ?? {}).every(
        ([operator, keys]) =>
          operator === 'StringLike' &&
          Object.entries(keys).every(([name, patterns]) => name === 's3:prefix' && [patterns].flat().some((pattern) => globMatches(pattern, key))),
      ),
  );
}

/** IAM's StringLike: `*` any run of characters, `?` any one. */
function globMatches(pattern: string, value: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${source}$`, 's').test(value);
}

interface Context {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * A Koa middleware in front of s3rver's router: a GET or HEAD of a missing
 * object by a function whose role may not list it is answered as S3 answers
 * it, 403 AccessDenied with S3's XML body, rather than s3rver's 404 NoSuchKey.
 */
export function missingKeyAsS3Answers(roles: ReadonlyMap<string, readonly Permission[]>) {
  return async function missingKey(ctx: Context, next: () => Promise<unknown>): Promise<unknown> {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.query.uploadId !== undefined) return next();
    try {
      return await next();
    } catch (error) {
      const role = roles.get(accessKeyIdOf(ctx) ?? '');
      const [, bucket, key] = /^\/([^/]+)\/(.+)$/.exec(ctx.path) ?? [];
      if ((error as { code?: string }).code !== 'NoSuchKey' || !role || bucket === undefined || key === undefined) throw error;
      if (mayList(role, decodeURIComponent(bucket), decodeURIComponent(key))) throw error;
      throw new S3Error('AccessDenied', 'Access Denied');
    }
  };
}

/** The access key a request is signed with: in its Authorization header, or a presigned URL's X-Amz-Credential. */
function accessKeyIdOf(ctx: Context): string | undefined {
  const authorization = ctx.headers.authorization;
  const credential = typeof authorization === 'string' ? /Credential=([^/,\s]+)\//.exec(authorization)?.[1] : undefined;
  const presigned = ctx.query['X-Amz-Credential'];
  return credential ?? (typeof presigned === 'string' ? presigned.split('/')[0] : undefined);
}
