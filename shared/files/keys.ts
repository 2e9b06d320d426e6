import { createHash } from 'node:crypto';

/**
 * The one place that builds S3 object keys (an object key is not a DynamoDB
 * key: those are built in shared/dynamo/keys.ts).
 */

/** Every stored file lives under this prefix; the stack scopes S3 permissions to it. */
export const FILES_PREFIX = 'files/';
/**
 * An attachment's S3 key: from the uploader, the attachment id and the run
 * that wrote it (an upload's own token, or the upload session's id), never
 * from the filename. Each run its own key: two runs of one Idempotency-Key
 * write the same attachment id, and the cleanup of the run that lost must
 * never remove the file of the run whose record holds it. The user id enters as its SHA-256 (43 base64url characters), so
 * every key has the same short ASCII shape whatever the user id holds: far
 * under S3's 1,024-byte key limit and any file system's 255-byte name (the
 * local stand-in stores keys as paths), and nothing S3 could refuse.
 */
export const fileKey = (userId: string, attachmentId: string, run: string): string => `${userFilesPrefix(userId)}${attachmentId}/${run}`;

/** The attachment and run a file key names (the inverse of fileKey); undefined for any other key. */
export function fileOfKey(key: string): { attachmentId: string; run: string } | undefined {
  const [prefix, , attachmentId, run, ...rest] = key.split('/');
  if (`${prefix}/` !== FILES_PREFIX || !attachmentId || !run || rest.length > 0) return undefined;
  return { attachmentId, run };
}

/** Where every file a user uploaded lives. */
export const userFilesPrefix = (userId: string): string =>
  `${FILES_PREFIX}${createHash('sha256').update(userId, 'utf8').digest('base64url')}/`;

/**
 * Thumbnails live under their own prefix, apart from the files (scanning
 * watches the files' prefix; the preview worker may write here alone).
 */
export const PREVIEWS_PREFIX = 'previews/';

/** How many renditions a preview has at most (320 and 1024 px: shared/previews/render.ts). */
export const MAX_THUMBNAILS = 2;

/**
 * The key of a file's rendition `index` (0: the smallest): derived from the
 * file's own key, so that whatever removes a file knows its thumbnails
 * without reading anything, and each upload run's file has its own.
 */
export const thumbnailKey = (fileKey: string, index: number): string =>
  `${PREVIEWS_PREFIX}${fileKey.startsWith(FILES_PREFIX) ? fileKey.slice(FILES_PREFIX.length) : fileKey}/${index}.webp`;

/** Every key a file's thumbnails may have. */
export const thumbnailKeys = (fileKey: string): string[] =>
  Array.from({ length: MAX_THUMBNAILS }, (_, index) => thumbnailKey(fileKey, index));

/** Where the thumbnails of every file a user uploaded live. */
export const userPreviewsPrefix = (userId: string): string => `${PREVIEWS_PREFIX}${userFilesPrefix(userId).slice(FILES_PREFIX.length)}`;
