import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { nowSeconds } from '../time.js';
import { attachmentDisposition } from './content-disposition.js';
import type { DownloadLink, FileStore } from './model.js';

/** Attachment files in one S3 bucket. */
export class S3FileStore implements FileStore {
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
}
