import type { S3Presigner } from '../s3/presigner.js';
import { attachmentDisposition } from './content-disposition.js';
import type { FileLinks } from './model.js';

/** Presigned S3 GETs of attachment files, signed in the process (no request to S3). */
export class S3FileLinks implements FileLinks {
  constructor(
    private readonly presigner: S3Presigner,
    private readonly ttlSeconds: number,
  ) {}

  /**
   * The name and type travel in the signed URL (S3 answers with them), not in
   * the object: a rename changes the next link and never touches the file.
   */
  download(key: string, download: { filename: string; fileType: string }): Promise<string> {
    return this.presigner.presignDownload(
      key,
      { contentType: download.fileType, contentDisposition: attachmentDisposition(download.filename) },
      { expiresIn: this.ttlSeconds },
    );
  }
}
