import { createHash } from 'node:crypto';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { FILES_PREFIX, userFilesPrefix } from '../../shared/files/keys.js';
import type { TestApi, TestResponse } from './api.js';

export interface FileSpec {
  bytes: Buffer | string;
  filename?: string;
  type?: string;
}

/** An upload as Node's own FormData (undici) encodes it. */
export function uploadForm(file: FileSpec, fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([Buffer.from(file.bytes)], { type: file.type ?? '' }), file.filename ?? 'file.bin');
  return form;
}

/** The user's conversation with this contact (created, or the existing one). */
export async function conversationOf(t: TestApi, userId: string, contactId: string): Promise<string> {
  const response = await t.call(userId, 'POST', '/v1/conversations', { form: { contact_id: contactId } });
  if (response.status !== 200 && response.status !== 201) throw new Error(`POST /v1/conversations answered ${response.status}`);
  return response.body.id;
}

export function upload(t: TestApi, userId: string, file: FileSpec, fields: Record<string, string> = {}): Promise<TestResponse> {
  return t.call(userId, 'POST', '/v1/attachments', { body: uploadForm(file, fields) });
}

export const BOUNDARY = 'test-boundary-7MA4YWxkTrZu0gW';

/** A multipart body built byte by byte, for the inputs no well-behaved client sends. */
export function multipartBody(parts: { headers: string[]; body: Buffer | string }[], boundary = BOUNDARY): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(Buffer.from(`--${boundary}\r\n${part.headers.join('\r\n')}\r\n\r\n`, 'utf8'), Buffer.from(part.body), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

export const filePart = (body: Buffer | string, disposition = 'form-data; name="file"; filename="a.txt"', type = 'text/plain') => ({
  headers: [`Content-Disposition: ${disposition}`, `Content-Type: ${type}`],
  body,
});

export const fieldPart = (name: string, value: string) => ({ headers: [`Content-Disposition: form-data; name="${name}"`], body: value });

export function rawUpload(t: TestApi, userId: string, body: Buffer, contentType = `multipart/form-data; boundary=${BOUNDARY}`) {
  return t.call(userId, 'POST', '/v1/attachments', { body, headers: { 'content-type': contentType } });
}

export const sha256 = (bytes: Buffer | Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');

/** Follows a file_url as any HTTP client on the host would. */
export async function download(fileUrl: string) {
  const response = await fetch(fileUrl);
  const bytes = Buffer.from(await response.arrayBuffer());
  return {
    status: response.status,
    bytes,
    contentType: response.headers.get('content-type'),
    contentDisposition: response.headers.get('content-disposition'),
  };
}

/** The keys stored in the files bucket, read straight from S3: what no API response can hide. */
export async function storedFileKeys(s3Endpoint: string, bucket = 'attachments', prefix = FILES_PREFIX): Promise<string[]> {
  const client = new S3Client({
    endpoint: s3Endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'local' },
  });
  try {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      keys.push(...(page.Contents ?? []).map((object) => object.Key!));
      token = page.NextContinuationToken;
    } while (token);
    return keys;
  } finally {
    client.destroy();
  }
}

/** The S3 key of an attachment's file, as its file_url names it (path style: /<bucket>/<key>). */
export const fileKeyOf = (attachment: { file_url: string }): string => new URL(attachment.file_url).pathname.split('/').slice(2).join('/');

/** The stored files of one user (keys under that user's prefix). */
export async function storedFilesOf(s3Endpoint: string, userId: string): Promise<string[]> {
  const prefix = userFilesPrefix(userId);
  return (await storedFileKeys(s3Endpoint)).filter((key) => key.startsWith(prefix));
}
