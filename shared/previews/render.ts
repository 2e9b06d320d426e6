import type SharpModule from 'sharp';
import type { SharpOptions } from 'sharp';
import { rgbaToThumbHash } from 'thumbhash';
import { type Renderer, Undecodable } from './model.js';

export { Undecodable };

/** Over this many pixels an image is refused before any pixel is decoded: a decompression bomb never reaches the decoder. */
export const MAX_PREVIEW_PIXELS = 100_000_000;

/** The renditions' longest edges (docs/api.md, "Previews"): min(320, L), and min(1024, L) when L > 320. */
export const THUMBNAIL_EDGES = [320, 1024] as const;
const LARGEST_EDGE = THUMBNAIL_EDGES[1];

/** ThumbHash's input is at most 100 px a side. */
const PLACEHOLDER_EDGE = 100;

/** What sharp names the formats the contract previews (AVIF is libheif's). SVG, PDF and the rest are never rendered. */
const PREVIEWED_FORMATS = new Set(['jpeg', 'png', 'webp', 'gif', 'heif', 'tiff']);

/**
 * The first frame only (`pages: 1`), the pixel limit enforced by libvips
 * itself too, and a truncated or corrupt file an error rather than grey
 * pixels (`failOn: 'error'` includes truncation).
 */
const INPUT: SharpOptions = { pages: 1, limitInputPixels: MAX_PREVIEW_PIXELS, failOn: 'error' };

/**
 * Decodes the bytes once, down to the largest rendition, and draws the
 * thumbnails and the placeholder from those pixels. The header is read first
 * (sharp's metadata decodes no pixel), so a bomb or another format is refused
 * before decoding.
 */
/**
 * sharp, loaded on the first render: its native binary is the deployed
 * platform's (linux-arm64 in the worker's asset), so importing the bundle
 * elsewhere (a check of its exports, sam local's emulation) does not load it.
 */
let loaded: Promise<typeof SharpModule> | undefined;
const sharpLibrary = (): Promise<typeof SharpModule> => {
  loaded ??= import('sharp').then((module) => module.default);
  return loaded;
};

export const renderPreview: Renderer = async (bytes) => {
  const sharp = await sharpLibrary();
  const { width, height } = await displayedSize(bytes);
  const longest = Math.max(width, height);
  const largest = Math.min(LARGEST_EDGE, longest);
  // Raw pixels carry no metadata: what is encoded from them cannot tell where a photo was taken.
  const base = await fileFailure(() =>
    sharp(bytes, INPUT)
      .autoOrient()
      .resize(largest, largest, { fit: 'inside', withoutEnlargement: true })
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true }),
  );
  const raw = { raw: { width: base.info.width, height: base.info.height, channels: base.info.channels } } as const;
  const edges = renditionEdges(longest);
  const thumbnails = await Promise.all(
    edges.map(async (edge) => {
      const { data, info } = await sharp(base.data, raw)
        .resize(edge, edge, { fit: 'inside', withoutEnlargement: true })
        .webp({ quality: 80 })
        .toBuffer({ resolveWithObject: true });
      return { width: info.width, height: info.height, bytes: data };
    }),
  );
  const small = await sharp(base.data, raw)
    .resize(PLACEHOLDER_EDGE, PLACEHOLDER_EDGE, { fit: 'inside' })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const placeholder = Buffer.from(rgbaToThumbHash(small.info.width, small.info.height, small.data)).toString('base64');
  return { width, height, placeholder, thumbnails };
};

/** min(320, L), and min(1024, L) when L > 320: never larger than the original, one rendition for a small image. */
export function renditionEdges(longest: number): number[] {
  const [small, large] = THUMBNAIL_EDGES;
  return longest > small ? [small, Math.min(large, longest)] : [longest];
}

/** The size as displayed, from the header alone; refuses what is not previewed or is over the pixel limit. */
async function displayedSize(bytes: Uint8Array): Promise<{ width: number; height: number }> {
  const sharp = await sharpLibrary();
  const metadata = await fileFailure(() => sharp(bytes, INPUT).metadata());
  if (!PREVIEWED_FORMATS.has(metadata.format)) throw new Undecodable(`${metadata.format} is not a previewed format`);
  const frameHeight = metadata.pageHeight ?? metadata.height;
  if (metadata.width * frameHeight > MAX_PREVIEW_PIXELS)
    throw new Undecodable(`${metadata.width} × ${frameHeight} pixels is over the ${MAX_PREVIEW_PIXELS} pixel limit`);
  const turned = (metadata.orientation ?? 1) >= 5;
  return turned ? { width: frameHeight, height: metadata.width } : { width: metadata.width, height: frameHeight };
}

/** sharp's errors are the file's (it does not decode); they become Undecodable. */
async function fileFailure<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw new Undecodable(error instanceof Error ? error.message : String(error));
  }
}
