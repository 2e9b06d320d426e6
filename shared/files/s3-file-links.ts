import type { S3Presigner } from '../s3/presigner.js';
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
   * A URL signed with temporary credentials dies with them, whatever
   * X-Amz-Expires says, so it is signed for no longer than they have left
   * when the credentials say (the Lambda role's do not: config.ts bounds the TTL).
   */
  async download(key: string, download: { filename: string; fileType: string }): Promise<DownloadLink> {
    const signedAt = nowSeconds();
    const expiresIn = Math.min(this.ttlSeconds, await this.credentialsSecondsLeft(signedAt));
    const url = await this.presigner.presignDownload(
      key,
      { contentType: download.fileType, contentDisposition: attachmentDisposition(download.filename) },
      { expiresIn, signingDate: new Date(signedAt * 1000) },
    );
    return { url, expiresAt: signedAt + expiresIn };
  }

  private async credentialsSecondsLeft(now: number): Promise<number> {
    const expiration = await this.presigner.credentialsExpiration();
    if (!expiration) return Number.POSITIVE_INFINITY;
    // At least a second: the SDK refreshes credentials minutes before they expire.
    return Math.max(1, Math.floor(expiration.getTime() / 1000) - now);
  }
}
