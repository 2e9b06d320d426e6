import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { S3Presigner } from '../s3/presigner.js';
import type { AssemblyResult, CompletedPart, MultipartFileStore, StoredPart } from '../uploads/model.js';
import type { FileStore } from './model.js';

const errorName = (error: unknown) => (error instanceof Error ? error.name : '');

/** S3's refusals of CompleteMultipartUpload that are the client's to fix. */
const ASSEMBLY_REFUSALS = {
  InvalidPart: 'invalid_part',
  EntityTooSmall: 'part_too_small',
  InvalidPartOrder: 'invalid_part_order',
} as const;

/** Attachment files in one S3 bucket, whole (small uploads) or in parts (upload sessions). */
export class S3FileStore implements FileStore, MultipartFileStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly presigner: S3Presigner,
  ) {}

  async put(key: string, bytes: Buffer, fileType: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes, ContentLength: bytes.length, ContentType: fileType }),
    );
  }

  async remove(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async startMultipart(key: string, fileType: string): Promise<string> {
    const { UploadId } = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: fileType }));
    if (!UploadId) throw new Error('S3 started a multipart upload without an UploadId');
    return UploadId;
  }

  /** The one place that signs part URLs (in the process, shared/s3/presigner.ts): the client PUTs the bytes to S3 directly. */
  presignUploadPart(key: string, uploadId: string, partNumber: number, ttlSeconds: number): Promise<string> {
    return this.presigner.presignUploadPart(key, { uploadId, partNumber }, { expiresIn: ttlSeconds });
  }

  async listParts(key: string, uploadId: string): Promise<StoredPart[]> {
    const parts: StoredPart[] = [];
    let marker: string | undefined;
    try {
      // S3 answers 1,000 parts a page; a session has up to 10,000.
      do {
        const page = await this.client.send(
          new ListPartsCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, ...(marker ? { PartNumberMarker: marker } : {}) }),
        );
        for (const part of page.Parts ?? []) {
          parts.push({ part_number: part.PartNumber ?? 0, size: part.Size ?? 0, etag: part.ETag ?? '' });
        }
        marker = page.IsTruncated ? page.NextPartNumberMarker : undefined;
      } while (marker);
    } catch (error) {
      if (errorName(error) === 'NoSuchUpload') return [];
      throw error;
    }
    return parts;
  }

  async assemble(key: string, uploadId: string, parts: readonly CompletedPart[]): Promise<AssemblyResult> {
    try {
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts.map((part) => ({ PartNumber: part.part_number, ETag: part.etag })) },
        }),
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
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }));
    } catch (error) {
      if (errorName(error) !== 'NoSuchUpload') throw error;
    }
  }

  async sizeOf(key: string): Promise<number | undefined> {
    try {
      const { ContentLength } = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return ContentLength;
    } catch (error) {
      if (errorName(error) === 'NotFound' || errorName(error) === 'NoSuchKey') return undefined;
      throw error;
    }
  }

  async firstBytes(key: string, count: number): Promise<Uint8Array> {
    const { Body } = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: `bytes=0-${count - 1}` }));
    return Body ? Body.transformToByteArray() : new Uint8Array();
  }
}
