import type { S3Bucket } from '../s3/bucket.js';
import type { S3Presigner } from '../s3/presigner.js';
import { nowSeconds } from '../time.js';
import type { AssemblyResult, CompletedPart, FileStore, MultipartFileStore, StoredPart } from './model.js';

const errorName = (error: unknown) => (error instanceof Error ? error.name : '');

/**
 * A key S3 says is not there: HEAD's body-less 404 (NotFound) or GET's
 * NoSuchKey. S3 says so only to a role that holds s3:ListBucket on the key
 * (the 'list' file access, shared/routes.ts); without it a missing key is
 * AccessDenied, which stays an error here: a 403 is also a refused signature
 * or a policy that denies, and reading it as "gone" would hide those.
 */
const isMissingKey = (error: unknown) => errorName(error) === 'NotFound' || errorName(error) === 'NoSuchKey';

/** S3's refusals of CompleteMultipartUpload that are the client's to fix. */
const ASSEMBLY_REFUSALS = {
  InvalidPart: 'invalid_part',
  EntityTooSmall: 'part_too_small',
  InvalidPartOrder: 'invalid_part_order',
} as const;

/** Attachment files in one S3 bucket, whole (small uploads) or in parts (upload sessions). */
export class S3FileStore implements FileStore, MultipartFileStore {
  constructor(
    private readonly bucket: S3Bucket,
    private readonly presigner: S3Presigner,
  ) {}

  put(key: string, bytes: Buffer, fileType: string): Promise<void> {
    return this.bucket.putObject(key, bytes, fileType);
  }

  remove(key: string): Promise<void> {
    return this.bucket.deleteObject(key);
  }

  startMultipart(key: string, fileType: string): Promise<string> {
    return this.bucket.createMultipartUpload(key, fileType);
  }

  /**
   * The one place that signs part URLs (in the process, shared/s3/presigner.ts): the client PUTs the bytes to S3
   * directly. Like file_url, never past the signing credentials' expiry.
   */
  async presignUploadPart(
    key: string,
    uploadId: string,
    partNumber: number,
    ttlSeconds: number,
  ): Promise<{ url: string; expiresIn: number }> {
    const signedAt = nowSeconds();
    const expiresIn = await this.presigner.lifetimeFrom(signedAt, ttlSeconds);
    const url = await this.presigner.presignUploadPart(
      key,
      { uploadId, partNumber },
      { expiresIn, signingDate: new Date(signedAt * 1000) },
    );
    return { url, expiresIn };
  }

  async listParts(key: string, uploadId: string): Promise<StoredPart[]> {
    const parts: StoredPart[] = [];
    let marker: string | undefined;
    try {
      // S3 answers 1,000 parts a page; a session has up to 10,000.
      do {
        const page = await this.bucket.listParts(key, uploadId, marker);
        for (const part of page.parts) parts.push({ part_number: part.partNumber, size: part.size, etag: part.etag });
        marker = page.nextMarker;
      } while (marker);
    } catch (error) {
      if (errorName(error) === 'NoSuchUpload') return [];
      throw error;
    }
    return parts;
  }

  async assemble(key: string, uploadId: string, parts: readonly CompletedPart[]): Promise<AssemblyResult> {
    try {
      await this.bucket.completeMultipartUpload(
        key,
        uploadId,
        parts.map((part) => ({ partNumber: part.part_number, etag: part.etag })),
      );
      return 'assembled';
    } catch (error) {
      const name = errorName(error);
      if (name === 'NoSuchUpload') return 'no_such_upload';
      if (Object.hasOwn(ASSEMBLY_REFUSALS, name)) {
        return { refused: ASSEMBLY_REFUSALS[name as keyof typeof ASSEMBLY_REFUSALS], message: (error as Error).message };
      }
      throw error;
    }
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    try {
      await this.bucket.abortMultipartUpload(key, uploadId);
    } catch (error) {
      if (errorName(error) !== 'NoSuchUpload') throw error;
    }
  }

  async sizeOf(key: string): Promise<number | undefined> {
    try {
      return (await this.bucket.headObject(key)).contentLength;
    } catch (error) {
      if (isMissingKey(error)) return undefined;
      throw error;
    }
  }

  async firstBytes(key: string, count: number): Promise<Uint8Array | undefined> {
    try {
      return await this.bucket.getObject(key, `bytes=0-${count - 1}`);
    } catch (error) {
      if (isMissingKey(error)) return undefined;
      throw error;
    }
  }
}
