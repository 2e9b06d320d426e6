import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { AssemblyResult, CompletedPart, MultipartFileStore, StoredPart } from '../uploads/model.js';
import { nowSeconds } from '../time.js';
import { attachmentDisposition } from './content-disposition.js';
import type { DownloadLink, FileStore } from './model.js';

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
    private readonly urlTtlSeconds: number,
  ) {}

  async put(key: string, bytes: Buffer, fileType: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes, ContentLength: bytes.length, ContentType: fileType }),
    );
  }

  async remove(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  /**
   * The name and type travel in the signed URL (S3 answers with them), not in
   * the object: a rename changes the next link and never touches the file.
   * A URL signed with temporary credentials dies with them, whatever
   * X-Amz-Expires says, so it is signed for no longer than they have left
   * when the credentials say (the Lambda role's do not: config.ts bounds the TTL).
   */
  async presignDownload(key: string, download: { filename: string; fileType: string }): Promise<DownloadLink> {
    const signedAt = nowSeconds();
    const expiresIn = Math.min(this.urlTtlSeconds, await this.credentialsSecondsLeft(signedAt));
    const url = await getSignedUrl(
      this.client,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ResponseContentType: download.fileType,
        ResponseContentDisposition: attachmentDisposition(download.filename),
      }),
      { expiresIn, signingDate: new Date(signedAt * 1000) },
    );
    return { url, expiresAt: signedAt + expiresIn };
  }

  private async credentialsSecondsLeft(now: number): Promise<number> {
    const { expiration } = await this.client.config.credentials();
    if (!expiration) return Number.POSITIVE_INFINITY;
    // At least a second: the SDK refreshes credentials minutes before they expire.
    return Math.max(1, Math.floor(expiration.getTime() / 1000) - now);
  }

  async startMultipart(key: string, fileType: string): Promise<string> {
    const { UploadId } = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: fileType }));
    if (!UploadId) throw new Error('S3 started a multipart upload without an UploadId');
    return UploadId;
  }

  /** The one place that signs part URLs: the client PUTs the bytes to S3 directly. */
  presignUploadPart(key: string, uploadId: string, partNumber: number, ttlSeconds: number): Promise<string> {
    return getSignedUrl(
      this.client,
      new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber }),
      { expiresIn: ttlSeconds },
    );
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
