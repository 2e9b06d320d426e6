import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { attachmentDisposition } from './content-disposition.js';
import type { FileStore } from './model.js';

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
   */
  presignDownload(key: string, download: { filename: string; fileType: string }): Promise<string> {
    return getSignedUrl(
      this.client,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ResponseContentType: download.fileType,
        ResponseContentDisposition: attachmentDisposition(download.filename),
      }),
      { expiresIn: this.urlTtlSeconds },
    );
  }
}
