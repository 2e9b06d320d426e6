import { isVirtualHostableS3Bucket, partition } from '@aws-sdk/core/client';
import { formatUrl } from '@aws-sdk/core/util';
import { Sha256 } from '@smithy/core/checksum';
import { extendedEncodeURIComponent, HttpRequest } from '@smithy/core/protocols';
import { SignatureV4 } from '@smithy/signature-v4';

/** Credentials or a provider of them, as the SDK's signer takes them. */
export type Credentials = ConstructorParameters<typeof SignatureV4>[0]['credentials'];

export interface PresignerSettings {
  region: string;
  bucket: string;
  /** Another S3 (a stand-in, MinIO): its URL, bucket in the path. Unset: AWS's regional endpoint. */
  endpoint?: string;
  /** Path-style addressing on AWS too (the bucket in the path, not the host). */
  forcePathStyle?: boolean;
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
 * Presigned S3 URLs without the S3 client: the SDK's own SigV4 signer
 * (@smithy/signature-v4, already in every bundle through the DynamoDB client)
 * and the SDK's own helpers for what the S3 client would add around it: the
 * partition's DNS suffix, the virtual-host rule for bucket names, the key's
 * URI encoding and the URL's formatting. The client's middleware stack
 * (endpoint rules, schema serde, checksums, XML) ran once per URL for a request
 * that is never sent; this produces the same URL, byte for byte, which
 * test/unit/s3/presigner.test.ts proves against @aws-sdk/s3-request-presigner
 * over a generated corpus. What it produces is what the client does with
 * `requestChecksumCalculation`/`responseChecksumValidation: WHEN_REQUIRED`
 * (shared/s3/client.ts): no checksum parameters, which S3 would check against
 * the uploaded bytes.
 *
 * Not covered (never configured here): FIPS and dual-stack endpoints,
 * access points, S3 Express directory buckets, accelerate.
 */
export class S3Presigner {
  private readonly signer: SignatureV4;
  private readonly origin: { protocol: string; hostname: string; port?: number; basePath: string };

  constructor(private readonly settings: PresignerSettings) {
    this.signer = new SignatureV4({
      service: 's3',
      region: settings.region,
      credentials: settings.credentials,
      sha256: Sha256,
      // S3 signs the path as sent (it is encoded once, here), and presigned URLs carry no payload hash.
      uriEscapePath: false,
      applyChecksum: false,
    });
    this.origin = resolveOrigin(settings);
  }

  /** A GET of the object that S3 answers with the given Content-Type and Content-Disposition. */
  presignDownload(key: string, overrides: DownloadOverrides, options: PresignOptions): Promise<string> {
    return this.presign('GET', key, {
      'response-content-disposition': overrides.contentDisposition,
      'response-content-type': overrides.contentType,
      'x-id': 'GetObject',
    }, options);
  }

  /** A PUT of one part of a multipart upload (UploadPart). */
  presignUploadPart(key: string, part: { uploadId: string; partNumber: number }, options: PresignOptions): Promise<string> {
    return this.presign('PUT', key, {
      partNumber: String(part.partNumber),
      uploadId: part.uploadId,
      'x-id': 'UploadPart',
    }, options);
  }

  /** When the signing credentials end, if they say (temporary ones do; the Lambda role's do not). */
  async credentialsExpiration(): Promise<Date | undefined> {
    const { credentials } = this.settings;
    const identity = typeof credentials === 'function' ? await credentials() : credentials;
    return identity?.expiration;
  }

  private async presign(method: string, key: string, query: Record<string, string>, options: PresignOptions): Promise<string> {
    const { bucket } = this.settings;
    const { protocol, hostname, port, basePath } = this.origin;
    // As the S3 client configured by shared/s3/client.ts: another S3 is always addressed by path.
    const virtualHost = !this.settings.forcePathStyle && this.settings.endpoint === undefined && isVirtualHostableS3Bucket(bucket);
    const host = virtualHost ? `${bucket}.${hostname}` : hostname;
    const request = new HttpRequest({
      method,
      protocol,
      hostname: host,
      port,
      path: `${basePath}${virtualHost ? '' : `/${extendedEncodeURIComponent(bucket)}`}/${encodeKey(key)}`,
      query,
      headers: {
        host: port === undefined ? host : `${host}:${port}`,
        // The S3 presigner's marker: the URL signs no payload hash, so any body of the part is accepted.
        'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD',
      },
    });
    const signed = await this.signer.presign(request, {
      expiresIn: options.expiresIn,
      signingDate: options.signingDate,
      unsignableHeaders: new Set(['content-type']),
    });
    return formatUrl(signed);
  }
}

/** A key is one greedy path label: each segment encoded, the slashes kept. */
function encodeKey(key: string): string {
  return key.split('/').map(extendedEncodeURIComponent).join('/');
}

function resolveOrigin(settings: PresignerSettings): { protocol: string; hostname: string; port?: number; basePath: string } {
  if (settings.endpoint !== undefined) {
    const url = new URL(settings.endpoint);
    return {
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      basePath: url.pathname.replace(/\/+$/, ''),
    };
  }
  const { dnsSuffix } = partition(settings.region);
  return { protocol: 'https:', hostname: `s3.${settings.region}.${dnsSuffix}`, basePath: '' };
}
