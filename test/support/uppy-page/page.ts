/**
 * A web page that uploads with Uppy (@uppy/core + @uppy/aws-s3 in multipart
 * mode), its multipart callbacks wired to the upload session routes. Bundled
 * by esbuild for the browser tests (bundle.ts); no CDN.
 */

import AwsS3 from '@uppy/aws-s3';
import Uppy from '@uppy/core';
import type { UploadOutcome, UploadRequest } from './protocol.js';

/** xorshift32: cheap, deterministic bytes, so a reloaded page makes the same file again. */
function seededBytes(size: number, seed: number): Uint8Array {
  const words = new Uint32Array(Math.ceil(size / 4));
  let x = seed >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    words[i] = x;
  }
  return new Uint8Array(words.buffer, 0, size);
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

async function upload(request: UploadRequest): Promise<UploadOutcome> {
  const { api, token } = request;
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = await response.json();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };

  const bytes = seededBytes(request.size, request.seed);
  const blob = new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' });
  const sha256 = await sha256Hex(bytes);
  // The session is started (or found again) first: Uppy cuts the file into parts before it asks for an upload id.
  const session = request.resumeSessionId
    ? await call('GET', `/v1/upload_sessions/${request.resumeSessionId}`)
    : await call('POST', '/v1/upload_sessions', { filename: 'generated.bin', file_size: request.size, file_type: blob.type });

  let partsUploaded = 0;
  const uppy = new Uppy({ autoProceed: false });
  uppy.use(AwsS3, {
    shouldUseMultipart: true,
    limit: 4,
    retryDelays: [0, 200, 500, 1000],
    getChunkSize: () => session.part_size,
    createMultipartUpload: async () => ({ uploadId: session.id, key: session.id }),
    listParts: async (_file, { uploadId }) => {
      const current = await call('GET', `/v1/upload_sessions/${uploadId}`);
      return current.parts.map((part: { part_number: number; size: number; etag: string }) => ({
        PartNumber: part.part_number,
        Size: part.size,
        ETag: part.etag,
      }));
    },
    signPart: async (_file, { uploadId, partNumber }) => {
      const { data } = await call('POST', `/v1/upload_sessions/${uploadId}/parts`, { part_numbers: [partNumber] });
      return { method: 'PUT', url: data[0].url, expires: data[0].expires_at - Math.floor(Date.now() / 1000) };
    },
    completeMultipartUpload: async (_file, { uploadId, parts }) => {
      const attachment = await call('POST', `/v1/upload_sessions/${uploadId}/complete`, {
        parts: parts.map((part) => ({ part_number: part.PartNumber, etag: part.ETag })),
      });
      return { location: attachment.file_url, attachment };
    },
    abortMultipartUpload: async (_file, { uploadId }) => {
      await call('DELETE', `/v1/upload_sessions/${uploadId}`);
    },
  });
  const fileId = uppy.addFile({ name: 'generated.bin', type: blob.type, data: blob, source: 'page' });
  // A page that lost its state names the upload it had begun; Uppy then asks listParts and sends only the rest.
  if (request.resumeSessionId) uppy.setFileState(fileId, { s3Multipart: { uploadId: session.id, key: session.id } } as never);

  const stopped = new Promise<void>((resolve) => {
    uppy.on('s3-multipart:part-uploaded', () => {
      partsUploaded++;
      if (request.stopAfterParts !== undefined && partsUploaded >= request.stopAfterParts) resolve();
    });
  });
  const finished = uppy.upload();
  if (request.stopAfterParts !== undefined) {
    await stopped;
    uppy.pauseAll();
    return { sessionId: session.id, sha256, partsUploaded };
  }
  const result = await finished;
  const success = result?.successful?.[0];
  if (!success) return { sessionId: session.id, sha256, partsUploaded, error: String(result?.failed?.[0]?.error ?? 'no result') };
  const body = success.response?.body as { attachment?: UploadOutcome['attachment'] } | undefined;
  return { sessionId: session.id, sha256, partsUploaded, ...(body?.attachment ? { attachment: body.attachment } : {}) };
}

(globalThis as unknown as { uploadWithUppy: typeof upload }).uploadWithUppy = upload;
