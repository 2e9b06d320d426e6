import type { DownloadOverrides, S3Presigner } from '../s3/presigner.js';
import { nowSeconds } from '../time.js';
import { attachmentDisposition } from './content-disposition.js';
import type { DownloadLink, FileLinks } from './model.js';

/** Presigned S3 GETs of attachment files, signed in the process (no request to S3). */
export class S3FileLinks implements FileLinks {
  constructor(
    private readonly presigner: S3Presigner,
    private readonly ttlSeconds: number,
  ) {}

  /**
   * The name and type travel in the signed URL (S3 answers with them), not in
   * the object: a rename changes the next link and never touches the file.
   * Signed for no longer than the signing credentials have left (S3Presigner.lifetimeFrom).
   */
  download(key: string, download: { filename: string; fileType: string }): Promise<DownloadLink> {
    return this.link(key, { contentType: download.fileType, contentDisposition: attachmentDisposition(download.filename) });
  }

  /** Shown in place (a browser draws it in an <img>), never saved under a name. */
  thumbnail(key: string): Promise<DownloadLink> {
    return this.link(key, { contentType: 'image/webp', contentDisposition: 'inline' });
  }

  private async link(key: string, overrides: DownloadOverrides): Promise<DownloadLink> {
    const signedAt = nowSeconds();
    const expiresIn = await this.presigner.lifetimeFrom(signedAt, this.ttlSeconds);
    const url = await this.presigner.presignDownload(key, overrides, { expiresIn, signingDate: new Date(signedAt * 1000) });
    return { url, expiresAt: signedAt + expiresIn };
  }
}
