import { isVirtualHostableS3Bucket, partition } from '@aws-sdk/core/client';
import { extendedEncodeURIComponent, HttpRequest } from '@smithy/core/protocols';

/** Where the bucket is: AWS's regional endpoint, or another S3 (a stand-in, MinIO). */
export interface BucketAddress {
  region: string;
  bucket: string;
  /** Another S3: its URL, bucket in the path. Unset: AWS's regional endpoint. */
  endpoint?: string;
  /** Path-style addressing on AWS too (the bucket in the path, not the host). */
  forcePathStyle?: boolean;
}

/** What a request to one object carries besides its address. */
export interface ObjectRequestParts {
  method: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Uint8Array;
}

/**
 * The one place that turns a bucket and a key into an HTTP request, for presigned URLs and calls alike,
 * as the S3 client would address it (docs/architecture.md, "Attachments"; proven equal by
 * test/unit/s3/presigner.test.ts and bucket-requests.test.ts).
 */
export class BucketLocation {
  private readonly origin: { protocol: string; hostname: string; port?: number; basePath: string };
  private readonly virtualHost: boolean;

  constructor(readonly address: BucketAddress) {
    this.origin = resolveOrigin(address);
    // Another S3 is always addressed by path: a stand-in on a host:port has no bucket subdomains.
    this.virtualHost = !address.forcePathStyle && address.endpoint === undefined && isVirtualHostableS3Bucket(address.bucket);
  }

  /** An unsigned request to the object `key`, its host header set (SigV4 signs it). */
  objectRequest(key: string, parts: ObjectRequestParts): HttpRequest {
    const { bucket } = this.address;
    const { protocol, hostname, port, basePath } = this.origin;
    const host = this.virtualHost ? `${bucket}.${hostname}` : hostname;
    return new HttpRequest({
      method: parts.method,
      protocol,
      hostname: host,
      port,
      path: `${basePath}${this.virtualHost ? '' : `/${extendedEncodeURIComponent(bucket)}`}/${encodeKey(key)}`,
      query: parts.query ?? {},
      headers: { ...parts.headers, host: port === undefined ? host : `${host}:${port}` },
      body: parts.body,
    });
  }
}

/** A key is one greedy path label: each segment encoded, the slashes kept. */
function encodeKey(key: string): string {
  return key.split('/').map(extendedEncodeURIComponent).join('/');
}

function resolveOrigin(address: BucketAddress): { protocol: string; hostname: string; port?: number; basePath: string } {
  if (address.endpoint !== undefined) {
    const url = new URL(address.endpoint);
    return {
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      basePath: url.pathname.replace(/\/+$/, ''),
    };
  }
  const { dnsSuffix } = partition(address.region);
  return { protocol: 'https:', hostname: `s3.${address.region}.${dnsSuffix}`, basePath: '' };
}
