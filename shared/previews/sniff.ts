/**
 * Whether a file's first bytes are one of the raster formats the preview
 * worker decodes (docs/api.md, "Previews": JPEG, PNG, WebP, GIF, AVIF, TIFF),
 * by their signatures alone: never the name or the declared type. SVG (text)
 * never matches. The worker decides for good (a file that passes here and does
 * not decode is `failed`); this only decides between `pending` and no preview
 * at upload time, without file-type's tables in the upload's bundle.
 */
export function isPreviewedImage(bytes: Uint8Array): boolean {
  return SIGNATURES.some((matches) => matches(bytes));
}

/** What an upload's record holds of its preview: pending for a previewed image (the worker settles it), nothing for any other file. */
export const pendingPreview = (bytes: Uint8Array): { preview?: { status: 'pending' } } =>
  isPreviewedImage(bytes) ? { preview: { status: 'pending' } } : {};

/** How many leading bytes the check reads (an AVIF's brands are within the first 32). */
export const PREVIEW_SNIFF_BYTES = 32;

const startsWith =
  (signature: readonly number[], offset = 0) =>
  (bytes: Uint8Array): boolean =>
    bytes.length >= offset + signature.length && signature.every((byte, index) => bytes[offset + index] === byte);

const ascii = (text: string): number[] => [...text].map((character) => character.charCodeAt(0));

/** An ISO-BMFF `ftyp` box naming an AVIF brand (avif, avis) as major or compatible brand. */
function isAvif(bytes: Uint8Array): boolean {
  if (!startsWith(ascii('ftyp'), 4)(bytes)) return false;
  const boxSize = Math.min(((bytes[0] ?? 0) << 24) | ((bytes[1] ?? 0) << 16) | ((bytes[2] ?? 0) << 8) | (bytes[3] ?? 0), bytes.length);
  for (let offset = 8; offset + 4 <= boxSize; offset += 4) {
    if (offset === 12) continue; // the minor version, not a brand
    const brand = String.fromCharCode(...bytes.subarray(offset, offset + 4));
    if (brand === 'avif' || brand === 'avis') return true;
  }
  return false;
}

const SIGNATURES: readonly ((bytes: Uint8Array) => boolean)[] = [
  startsWith([0xff, 0xd8, 0xff]), // JPEG
  startsWith([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), // PNG
  startsWith(ascii('GIF87a')),
  startsWith(ascii('GIF89a')),
  (bytes) => startsWith(ascii('RIFF'))(bytes) && startsWith(ascii('WEBP'), 8)(bytes),
  startsWith([0x49, 0x49, 0x2a, 0x00]), // TIFF, little-endian
  startsWith([0x4d, 0x4d, 0x00, 0x2a]), // TIFF, big-endian
  isAvif,
];
