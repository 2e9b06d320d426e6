import { expect } from 'vitest';
import type { TestApi, TestResponse } from './api.js';

/** A client of the upload session routes, as a script or an app would drive them. */
export interface SessionClient {
  start(userId: string, fields: Record<string, unknown>, headers?: Record<string, string>): Promise<TestResponse>;
  sign(userId: string, sessionId: string, partNumbers: number[] | string): Promise<TestResponse>;
  get(userId: string, sessionId: string): Promise<TestResponse>;
  complete(userId: string, sessionId: string, parts: unknown, headers?: Record<string, string>): Promise<TestResponse>;
  abort(userId: string, sessionId: string): Promise<TestResponse>;
  /** Presigns and PUTs each part of `bytes` by the session's part_size; the parts for complete. */
  uploadAll(userId: string, session: { id: string; part_size: number }, bytes: Buffer): Promise<{ part_number: number; etag: string }[]>;
}

export function sessionClient(t: TestApi): SessionClient {
  const client: SessionClient = {
    start: (userId, fields, headers = {}) => t.call(userId, 'POST', '/v1/upload_sessions', { json: fields, headers }),
    sign: (userId, id, partNumbers) =>
      typeof partNumbers === 'string'
        ? t.call(userId, 'POST', `/v1/upload_sessions/${id}/parts`, { form: { part_numbers: partNumbers } })
        : t.call(userId, 'POST', `/v1/upload_sessions/${id}/parts`, { json: { part_numbers: partNumbers } }),
    get: (userId, id) => t.call(userId, 'GET', `/v1/upload_sessions/${id}`),
    complete: (userId, id, parts, headers = {}) =>
      t.call(userId, 'POST', `/v1/upload_sessions/${id}/complete`, { json: { parts }, headers }),
    abort: (userId, id) => t.call(userId, 'DELETE', `/v1/upload_sessions/${id}`),
    async uploadAll(userId, session, bytes) {
      const count = Math.ceil(bytes.length / session.part_size);
      const numbers = Array.from({ length: count }, (_, index) => index + 1);
      const signed = await client.sign(userId, session.id, numbers);
      expect(signed.status).toBe(200);
      return Promise.all(
        signed.body.data.map(async ({ part_number, url }: { part_number: number; url: string }) => {
          const start = (part_number - 1) * session.part_size;
          const etag = await putPart(url, bytes.subarray(start, start + session.part_size));
          return { part_number, etag };
        }),
      );
    },
  };
  return client;
}

/** PUTs one part to its presigned URL, straight to S3; the ETag S3 answered. */
export async function putPart(url: string, bytes: Uint8Array): Promise<string> {
  const response = await fetch(url, { method: 'PUT', body: bytes });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`part PUT answered ${response.status}: ${text}`);
  return response.headers.get('etag')!;
}

export const MIB = 1024 * 1024;
