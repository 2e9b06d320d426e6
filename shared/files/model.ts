/**
 * Files: where the bytes of attachments live, whole (small uploads) or in
 * parts (upload sessions), and the links that download them. Attachments and
 * upload sessions both use these; the S3 adapters (s3-file-store.ts,
 * s3-file-links.ts) implement them.
 */

/** Where the bytes live, addressed by the key that fileKey() builds. */
export interface FileStore {
  put(key: string, bytes: Buffer, fileType: string): Promise<void>;
  /** Removing a file that is not there is not an error. */
  remove(key: string): Promise<void>;
}

/**
 * Links to the files. Apart from the store: a link is signed locally, so the
 * functions that only show attachments carry no storage client.
 */
export interface FileLinks {
  /** A time-limited link that downloads the file under this name and type. */
  download(key: string, download: { filename: string; fileType: string }): Promise<DownloadLink>;
  /** A time-limited link that shows a thumbnail (image/webp, inline). */
  thumbnail(key: string): Promise<DownloadLink>;
}

export interface DownloadLink {
  url: string;
  /** Unix seconds after which the link no longer works. */
  expiresAt: number;
}

/** A part that S3 holds, as GET /v1/upload_sessions/:id shows it. */
export interface StoredPart {
  part_number: number;
  size: number;
  etag: string;
}

/** A part as the client names it when completing. */
export interface CompletedPart {
  part_number: number;
  etag: string;
}

/** The result of asking S3 to assemble the parts. */
export type AssemblyResult =
  | 'assembled'
  | 'no_such_upload'
  | { refused: 'invalid_part' | 'part_too_small' | 'invalid_part_order'; message: string };

/** S3 multipart uploads, addressed by the key that fileKey() builds. */
export interface MultipartFileStore {
  /** Starts a multipart upload; its id. */
  startMultipart(key: string, fileType: string): Promise<string>;
  /** A presigned PUT of one part, valid for `ttlSeconds` or less (never past the signing credentials): the URL and how long it lives. */
  presignUploadPart(key: string, uploadId: string, partNumber: number, ttlSeconds: number): Promise<{ url: string; expiresIn: number }>;
  /** The parts S3 holds, ascending; empty when the upload no longer exists. */
  listParts(key: string, uploadId: string): Promise<StoredPart[]>;
  assemble(key: string, uploadId: string, parts: readonly CompletedPart[]): Promise<AssemblyResult>;
  /** Aborting an upload that is gone is not an error. */
  abortMultipart(key: string, uploadId: string): Promise<void>;
  /** The stored object's size, or undefined when there is none. */
  sizeOf(key: string): Promise<number | undefined>;
  /** Up to `count` bytes from the start of the object, or undefined when there is none. */
  firstBytes(key: string, count: number): Promise<Uint8Array | undefined>;
  remove(key: string): Promise<void>;
}
