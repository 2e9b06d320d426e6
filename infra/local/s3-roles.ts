import S3Error from '@20minutes/s3rver/lib/models/error.js';
import type { AccessRequest, PolicyEvaluator } from './iam.js';

/**
 * IAM, for the local S3: every request signed with a function's key
 * (infra/local/iam.ts) is authorised as S3 authorises it for that function's
 * role, from the same permissions the stack grants; a refused one is answered
 * as S3 answers it, 403 AccessDenied with S3's XML body. A GET or HEAD of a
 * missing key is then 404 only to a role that may list that key
 * (s3:ListBucket with the key as s3:prefix), else 403 AccessDenied, as S3
 * does. Requests signed with the base key (the server's own set-up, a test
 * reaching into the bucket) may do anything.
 */

type Query = Record<string, string | string[] | undefined>;
type Headers = Record<string, string | string[] | undefined>;

const bucketArn = (bucket: string) => `arn:aws:s3:::${bucket}`;
const objectArn = (bucket: string, key: string) => `arn:aws:s3:::${bucket}/${key}`;
const has = (query: Query, name: string) => query[name] !== undefined;

/**
 * What S3 authorises one request as (the actions of the S3 API reference's
 * "Permissions" of each operation): object reads GetObject, every write of an
 * object or of a multipart upload's parts PutObject (a copy also GetObject on
 * its source), ListMultipartUploadParts, AbortMultipartUpload, DeleteObject; a
 * bucket listing ListBucket with its s3:prefix, s3:delimiter and s3:max-keys.
 * A multi-object delete is authorised as DeleteObject on the whole bucket,
 * stricter than S3, which checks each key: no function makes one.
 */
export function s3AccessRequests(method: string, bucket: string, key: string | undefined, query: Query, headers: Headers): AccessRequest[] {
  if (method === 'OPTIONS') return [];
  if (key === undefined) return bucketRequests(method, bucket, query);
  const on = (action: string): AccessRequest => ({ action, resource: objectArn(bucket, key) });
  const copied = copySource(headers);
  const withCopy = (requests: AccessRequest[]) =>
    copied ? [...requests, { action: 's3:GetObject', resource: objectArn(copied.bucket, copied.key) }] : requests;
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (has(query, 'uploadId')) return [on('s3:ListMultipartUploadParts')];
      if (has(query, 'tagging')) return [on('s3:GetObjectTagging')];
      return [on(has(query, 'versionId') ? 's3:GetObjectVersion' : 's3:GetObject')];
    case 'PUT':
      if (has(query, 'tagging')) return [on('s3:PutObjectTagging')];
      return withCopy([on('s3:PutObject')]);
    case 'POST':
      return [on(has(query, 'restore') ? 's3:RestoreObject' : 's3:PutObject')];
    case 'DELETE':
      if (has(query, 'uploadId')) return [on('s3:AbortMultipartUpload')];
      if (has(query, 'tagging')) return [on('s3:DeleteObjectTagging')];
      return [on('s3:DeleteObject')];
    default:
      return [on(`s3:${method}Object`)];
  }
}

function bucketRequests(method: string, bucket: string, query: Query): AccessRequest[] {
  const on = (action: string, context?: Record<string, string>): AccessRequest => ({
    action,
    resource: bucketArn(bucket),
    ...(context ? { context } : {}),
  });
  if (method === 'GET' || method === 'HEAD') {
    if (has(query, 'uploads')) return [on('s3:ListBucketMultipartUploads')];
    if (has(query, 'cors')) return [on('s3:GetBucketCORS')];
    if (has(query, 'location')) return [on('s3:GetBucketLocation')];
    if (has(query, 'versions')) return [on('s3:ListBucketVersions')];
    return [on('s3:ListBucket', listContext(query))];
  }
  if (has(query, 'cors')) return [on('s3:PutBucketCORS')];
  if (method === 'POST' && has(query, 'delete')) return [{ action: 's3:DeleteObject', resource: objectArn(bucket, '*') }];
  if (method === 'PUT') return [on('s3:CreateBucket')];
  if (method === 'DELETE') return [on('s3:DeleteBucket')];
  return [on(`s3:${method}Bucket`)];
}

/** A listing's condition keys: S3 sets s3:prefix (empty when the request has none), s3:delimiter and s3:max-keys when given. */
function listContext(query: Query): Record<string, string> {
  const one = (name: string) => [query[name]].flat()[0];
  const delimiter = one('delimiter');
  const maxKeys = one('max-keys');
  return {
    's3:prefix': one('prefix') ?? '',
    ...(delimiter !== undefined ? { 's3:delimiter': delimiter } : {}),
    ...(maxKeys !== undefined ? { 's3:max-keys': maxKeys } : {}),
  };
}

function copySource(headers: Headers): { bucket: string; key: string } | undefined {
  const source = [headers['x-amz-copy-source']].flat()[0];
  const [, bucket, key] = (source && /^\/?([^/]+)\/(.+?)(?:\?versionId=.*)?$/.exec(source)) || [];
  return bucket && key ? { bucket: decodeURIComponent(bucket), key: decodeURIComponent(key) } : undefined;
}

/** What S3 checks before it tells a GET or HEAD of a missing key 404 rather than 403: that the caller may list that key. */
export const listingOf = (bucket: string, key: string): AccessRequest => ({
  action: 's3:ListBucket',
  resource: bucketArn(bucket),
  context: { 's3:prefix': key },
});

interface Context {
  method: string;
  path: string;
  query: Query;
  headers: Headers;
}

/**
 * A Koa middleware in front of s3rver's router, after the signature check:
 * a function's request its role does not allow is refused before s3rver does
 * anything, and a GET or HEAD of a missing object by a function whose role
 * may not list it is answered 403 AccessDenied rather than s3rver's 404 NoSuchKey.
 */
export function iamAsS3Answers(evaluator: PolicyEvaluator) {
  return async function iam(ctx: Context, next: () => Promise<unknown>): Promise<unknown> {
    const role = evaluator.roleOf(accessKeyIdOf(ctx));
    const target = /^\/([^/]+)(?:\/(.*))?$/s.exec(ctx.path);
    const bucketName = target?.[1];
    if (!role || !target || !bucketName) return next();
    const bucket = decodeURIComponent(bucketName);
    const key = target[2] ? decodeURIComponent(target[2]) : undefined;
    if (await evaluator.denial(role, s3AccessRequests(ctx.method, bucket, key, ctx.query, ctx.headers)))
      throw new S3Error('AccessDenied', 'Access Denied');
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || key === undefined || has(ctx.query, 'uploadId')) return next();
    try {
      return await next();
    } catch (error) {
      if ((error as { code?: string }).code !== 'NoSuchKey') throw error;
      if (await evaluator.denial(role, [listingOf(bucket, key)])) throw new S3Error('AccessDenied', 'Access Denied');
      throw error;
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
