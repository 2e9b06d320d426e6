import { createHash } from 'node:crypto';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import S3Error from '@20minutes/s3rver/lib/models/error.js';
import { xmlBodyParser } from '@20minutes/s3rver/lib/utils.js';
import { S3_MAX_PART_BYTES, S3_MAX_PARTS, S3_MIN_PART_BYTES } from '../../shared/uploads/part-plan.js';

/**
 * What s3rver lacks of S3's multipart uploads (its answers for unknown uploads, ListParts, Abort,
 * Complete's checks), as one Koa middleware in front of its router; what still differs from S3:
 * docs/architecture.md, "Local S3".
 */
export interface MultipartStore {
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  putObjectMultipart(bucket: string, uploadId: string, parts: { number: number; etag: string }[]): Promise<{ md5: string; size: number }>;
}

interface Context {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  headers: Record<string, string | string[] | undefined>;
  href: string;
  status: number;
  body: unknown;
  request: { body?: unknown };
  app: { emit(event: 'event', notification: object): boolean };
}

type Next = () => Promise<unknown>;

/** A CompleteMultipartUpload request as the XML body parser gives it: client input, so every field is checked before use. */
type CompleteMultipartUploadBody = { CompleteMultipartUpload?: { Part?: RequestedPart | RequestedPart[] } };
type RequestedPart = { PartNumber?: unknown; ETag?: unknown } | undefined;

const MAX_PARTS_PER_LIST = 1000;

export function multipartFidelity(store: MultipartStore) {
  return async function multipart(ctx: Context, next: Next): Promise<unknown> {
    const uploadId = single(ctx.query.uploadId);
    if (uploadId === undefined) return next();
    const target = bucketAndKey(ctx.path);
    if (!target) return next();
    const upload = new Upload(store, target.bucket, target.key, uploadId);
    switch (ctx.method) {
      case 'PUT': {
        await upload.assertExists();
        const number = partNumberOf(single(ctx.query.partNumber));
        if (Number(single(ctx.headers['content-length']) ?? 0) > S3_MAX_PART_BYTES) {
          throw new S3Error('EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
        }
        try {
          return await next();
        } catch (error) {
          // s3rver writes a part in place: a PUT cut off midway (a closed tab) would leave half a part. S3 stores none.
          await upload.discardPart(number);
          throw error;
        }
      }
      case 'GET':
        await upload.assertExists();
        ctx.body = await upload.listParts(single(ctx.query['part-number-marker']), single(ctx.query['max-parts']));
        return;
      case 'DELETE':
        await upload.assertExists();
        await rm(upload.directory, { recursive: true, force: true });
        ctx.status = 204;
        return;
      case 'POST':
        await upload.assertExists();
        await xmlBodyParser(ctx);
        ctx.body = await upload.complete(ctx.request.body, ctx.href.split('?')[0] ?? '');
        // As s3rver announces its own writes (S3's event notification), which s3rver does not for this call.
        ctx.app.emit('event', { Records: [{ eventName: 'ObjectCreated:CompleteMultipartUpload', s3: { object: { key: target.key } } }] });
        return;
      default:
        return next();
    }
  };
}

class Upload {
  readonly directory: string;

  constructor(
    private readonly store: MultipartStore,
    private readonly bucket: string,
    private readonly key: string,
    private readonly id: string,
  ) {
    // s3rver's own layout (its FilesystemStore): <bucket>/<uploads dir>/<uploadId>/{key, metadata, <n>, <n>.md5}.
    this.directory = join(store.getResourcePath(bucket, undefined, 'uploads'), id);
  }

  async assertExists(): Promise<void> {
    const key = /^[0-9a-f]+$/.test(this.id) ? await readFile(join(this.directory, 'key'), 'utf8').catch(() => undefined) : undefined;
    if (key !== this.key) {
      throw new S3Error(
        'NoSuchUpload',
        'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
        { UploadId: this.id },
      );
    }
  }

  async discardPart(number: number): Promise<void> {
    await Promise.all([
      rm(join(this.directory, String(number)), { force: true }),
      rm(join(this.directory, `${number}.md5`), { force: true }),
    ]);
  }

  /** The parts stored whole: s3rver writes a part's .md5 only once all its bytes are in. */
  private async parts(): Promise<{ number: number; size: number; md5: string; modified: Date }[]> {
    const names = (await readdir(this.directory)).filter((name) => /^\d+$/.test(name));
    const parts = await Promise.all(
      names.map(async (name) => {
        const md5 = await readFile(join(this.directory, `${name}.md5`), 'utf8').catch(() => undefined);
        if (md5 === undefined) return undefined;
        const info = await stat(join(this.directory, name));
        return { number: Number(name), size: info.size, md5: md5.trim(), modified: info.mtime };
      }),
    );
    return parts.filter((part) => part !== undefined).sort((a, b) => a.number - b.number);
  }

  async listParts(markerText: string | undefined, maxText: string | undefined) {
    const marker = markerText === undefined ? 0 : Number(markerText);
    const max = Math.min(MAX_PARTS_PER_LIST, maxText === undefined ? MAX_PARTS_PER_LIST : Number(maxText));
    const after = (await this.parts()).filter((part) => part.number > marker);
    const page = after.slice(0, max);
    return {
      ListPartsResult: {
        Bucket: this.bucket,
        Key: this.key,
        UploadId: this.id,
        PartNumberMarker: marker,
        NextPartNumberMarker: page.at(-1)?.number ?? marker,
        MaxParts: max,
        IsTruncated: after.length > page.length,
        Part: page.map((part) => ({
          PartNumber: part.number,
          LastModified: part.modified.toISOString(),
          ETag: JSON.stringify(part.md5),
          Size: part.size,
        })),
      },
    };
  }

  async complete(body: unknown, location: string) {
    const requested = (body as CompleteMultipartUploadBody | undefined)?.CompleteMultipartUpload?.Part;
    if (!requested) throw malformed();
    const wanted = [requested].flat().map((part) => ({
      number: Number(part?.PartNumber),
      // S3 ignores the quotes when it compares ETags.
      etag: String(part?.ETag ?? '').replace(/"/g, ''),
    }));
    wanted.forEach((part, index) => {
      if (!Number.isInteger(part.number) || part.number < 1 || part.number > S3_MAX_PARTS) throw malformed();
      const previous = wanted[index - 1];
      if (previous && part.number <= previous.number) {
        throw new S3Error(
          'InvalidPartOrder',
          'The list of parts was not in ascending order. The parts list must be specified in order by part number.',
        );
      }
    });
    const held = new Map((await this.parts()).map((part) => [part.number, part]));
    const stored = wanted.map((part, index) => {
      const stored = held.get(part.number);
      if (!stored || stored.md5 !== part.etag) {
        throw new S3Error(
          'InvalidPart',
          "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
          { PartNumber: part.number, ETag: part.etag },
        );
      }
      if (index < wanted.length - 1 && stored.size < S3_MIN_PART_BYTES) {
        throw new S3Error('EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.', {
          ProposedSize: stored.size,
          MinSizeAllowed: S3_MIN_PART_BYTES,
          PartNumber: part.number,
        });
      }
      return stored;
    });
    // S3's ETag of a multipart object: the MD5 of the parts' binary MD5s, then the part count.
    const etag = `${createHash('md5')
      .update(Buffer.concat(stored.map((part) => Buffer.from(part.md5, 'hex'))))
      .digest('hex')}-${wanted.length}`;
    await this.store.putObjectMultipart(this.bucket, this.id, wanted);
    return { CompleteMultipartUploadResult: { Location: location, Bucket: this.bucket, Key: this.key, ETag: JSON.stringify(etag) } };
  }
}

const malformed = () =>
  new S3Error('MalformedXML', 'The XML you provided was not well-formed or did not validate against our published schema.');

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function partNumberOf(text: string | undefined): number {
  const number = Number(text);
  if (!Number.isInteger(number) || number < 1 || number > S3_MAX_PARTS) {
    throw new S3Error('InvalidArgument', `Part number must be an integer between 1 and ${S3_MAX_PARTS}, inclusive`, {
      ArgumentName: 'partNumber',
      ArgumentValue: text ?? '',
    });
  }
  return number;
}

/** Path-style addressing (what the SDK uses against an endpoint with forcePathStyle): /bucket/key. */
function bucketAndKey(path: string): { bucket: string; key: string } | undefined {
  const [, bucket, key] = /^\/([^/]+)\/(.+)$/.exec(path) ?? [];
  if (bucket === undefined || key === undefined) return undefined;
  try {
    return { bucket: decodeURIComponent(bucket), key: decodeURIComponent(key) };
  } catch {
    return undefined;
  }
}
