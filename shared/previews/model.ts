/**
 * An image attachment's preview (docs/api.md, "Previews"): what is stored on
 * the attachment record, and what readers and events are shown of it.
 */

export type PreviewStatus = 'pending' | 'ready' | 'failed';

/** A WebP rendition as stored: its size and its S3 key (shared/files/keys.ts, thumbnailKey). */
export interface StoredThumbnail {
  width: number;
  height: number;
  key: string;
}

/**
 * What the record holds: `pending` from the upload of a file whose bytes are
 * a raster image, until the preview worker settles it once, `ready` or
 * `failed` (with why, for the logs; never shown). No preview at all (a file
 * that is not such an image) is the record without one.
 */
export type PreviewRecord =
  | { status: 'pending' }
  | { status: 'failed'; reason: string }
  | { status: 'ready'; width: number; height: number; placeholder: string; thumbnails: StoredThumbnail[] };

/** The preview as an event shows it: thumbnails with their size only (events carry no URLs). */
export interface PreviewObject {
  status: PreviewStatus;
  width: number | null;
  height: number | null;
  placeholder: string | null;
  thumbnails: { width: number; height: number }[];
}

/** A thumbnail as a reader's response shows it: a link minted for the response, like file_url. */
export interface ThumbnailView {
  width: number;
  height: number;
  url: string;
  url_expires_at: number;
}

/** The preview as a reader's response shows it. */
export interface PreviewView extends Omit<PreviewObject, 'thumbnails'> {
  thumbnails: ThumbnailView[];
}

/** The stored preview as events show it; null for a file that has none. */
export function previewObject(preview: PreviewRecord | undefined): PreviewObject | null {
  if (!preview) return null;
  if (preview.status !== 'ready') return { status: preview.status, width: null, height: null, placeholder: null, thumbnails: [] };
  const { status, width, height, placeholder, thumbnails } = preview;
  return {
    status,
    width,
    height,
    placeholder,
    thumbnails: thumbnails.map((thumbnail) => ({ width: thumbnail.width, height: thumbnail.height })),
  };
}

/** A preview as a reader the file is held from sees it (docs/api.md, "Scanning"): its status, nothing of the image. */
export const statusAlone = ({ status }: PreviewObject): PreviewObject => ({
  status,
  width: null,
  height: null,
  placeholder: null,
  thumbnails: [],
});

/** A preview settled by the worker, what it records in place of `pending`. */
export type SettledPreview = Exclude<PreviewRecord, { status: 'pending' }>;

/** The file's own failure: it does not decode, is truncated, is too large or is not a previewed format. */
export class Undecodable extends Error {
  override readonly name = 'Undecodable';
}

/** What the worker makes of a file's bytes. */
export interface RenderedPreview {
  /** As displayed: EXIF orientation applied. */
  width: number;
  height: number;
  /** ThumbHash, base64. */
  placeholder: string;
  /** WebP, smallest first, no metadata. */
  thumbnails: { width: number; height: number; bytes: Buffer }[];
}

/**
 * Decodes bytes into a preview, or throws Undecodable. The worker's handler
 * passes it in (render.ts, sharp), so that sharp, native and external to
 * every bundle, is imported by the preview worker's bundle alone.
 */
export type Renderer = (bytes: Uint8Array) => Promise<RenderedPreview>;
