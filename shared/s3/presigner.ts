import { formatUrl } from '@aws-sdk/core/util';
import type { SignatureV4 } from '@smithy/signature-v4';
import { type BucketAddress, BucketLocation } from './addressing.js';
import { type Credentials, s3Signer } from './signer.js';

export type { Credentials } from './signer.js';

export interface PresignerSettings extends BucketAddress {
  credentials: Credentials;
}

export interface PresignOptions {
  /** Seconds the URL lives; SigV4 allows at most 7 days. */
  expiresIn: number;
  /** When the URL is signed (its lifetime starts); now by default. */
  signingDate?: Date;
}

export interface DownloadOverrides {
  /** The Content-Type S3 answers with (response-content-type). */
  contentType: string;
  /** The Content-Disposition S3 answers with (response-content-disposition). */
  contentDisposition: string;
}

/**
 * Presigned S3 URLs without the S3 client, whose middleware ran once per URL for a request never sent:
 * the same URL byte for byte, by the SDK's own signer (docs/architecture.md, "Attachments").
 */
export class S3Presigner {
  private readonly signer: SignatureV4;
  private readonly location: BucketLocation;

  constructor(private readonly settings: PresignerSettings) {
    this.signer = s3Signer(settings.region, settings.credentials);
    this.location = new BucketLocation(settings);
  }

  /** A GET of the object that S3 answers with the given Content-Type and Content-Disposition. */
  presignDownload(key: string, overrides: DownloadOverrides, options: PresignOptions): Promise<string> {
    return this.presign(
      'GET',
      key,
      {
        'response-content-disposition': overrides.contentDisposition,
        'response-content-type': overrides.contentType,
        'x-id': 'GetObject',
      },
      options,
    );
  }

  /** A PUT of one part of a multipart upload (UploadPart). */
  presignUploadPart(key: string, part: { uploadId: string; partNumber: number }, options: PresignOptions): Promise<string> {
    return this.presign(
      'PUT',
      key,
      {
        partNumber: String(part.partNumber),
        uploadId: part.uploadId,
        'x-id': 'UploadPart',
      },
      options,
    );
  }

  /**
   * How long a URL signed at `signedAt` (Unix seconds) may live, at most
   * `wanted`: a URL signed with temporary credentials dies with them,
   * whatever X-Amz-Expires says, so never past their expiry when they state
   * one (temporary ones do; the Lambda role's do not, and configuration
   * bounds the TTL instead, shared/config.ts). For file_url and part URLs alike.
   */
  async lifetimeFrom(signedAt: number, wanted: number): Promise<number> {
    const { credentials } = this.settings;
    const identity = typeof credentials === 'function' ? await credentials() : credentials;
    if (!identity?.expiration) return wanted;
    // At least a second: the SDK refreshes credentials minutes before they expire.
    return Math.min(wanted, Math.max(1, Math.floor(identity.expiration.getTime() / 1000) - signedAt));
  }

  private async presign(method: string, key: string, query: Record<string, string>, options: PresignOptions): Promise<string> {
    // The S3 presigner's marker: the URL signs no payload hash, so any body of the part is accepted.
    const request = this.location.objectRequest(key, { method, query, headers: { 'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD' } });
    const signed = await this.signer.presign(request, {
      expiresIn: options.expiresIn,
      signingDate: options.signingDate,
      unsignableHeaders: new Set(['content-type']),
    });
    return formatUrl(signed);
  }
}
