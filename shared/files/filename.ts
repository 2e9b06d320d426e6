import { utf8Bytes } from '../text.js';

/**
 * Filenames by the rules of docs/api.md (POST /v1/attachments). The name is
 * metadata only: the S3 key never derives from it, so these rules are about
 * what clients show and save.
 */
export const MAX_FILENAME_BYTES = 255;
export const DEFAULT_FILENAME = 'file';

// C0, DEL and C1 controls, and the bidirectional controls (U+202E and kin) that
// make "invoice\u202Efdp.exe" display as "invoiceexe.pdf".
const CONTROLS = /[\p{Cc}\p{Bidi_Control}]/gu;
// An extension this long is not one; the name is then cut as a whole.
const MAX_EXTENSION_BYTES = 32;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

export function normalizeFilename(raw: string): string {
  const cleaned = raw.replace(CONTROLS, '').normalize('NFC');
  // Both separators: Windows clients send C:\Users\me\photo.jpg.
  const base = cleaned.slice(Math.max(cleaned.lastIndexOf('/'), cleaned.lastIndexOf('\\')) + 1).trim();
  if (base === '' || base === '.' || base === '..') return DEFAULT_FILENAME;
  return truncateKeepingExtension(base);
}

function truncateKeepingExtension(name: string): string {
  if (utf8Bytes(name) <= MAX_FILENAME_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 ? name.slice(dot) : '';
  const kept = utf8Bytes(extension) <= MAX_EXTENSION_BYTES ? extension : '';
  const stem = cutToBytes(name.slice(0, name.length - kept.length), MAX_FILENAME_BYTES - utf8Bytes(kept));
  return stem.trim() === '' ? DEFAULT_FILENAME : `${stem}${kept}`;
}

/** The longest prefix within `budget` bytes that never splits a character, emoji or accent from its letter. */
function cutToBytes(text: string, budget: number): string {
  let result = '';
  let used = 0;
  for (const { segment } of graphemes.segment(text)) {
    const size = utf8Bytes(segment);
    if (used + size > budget) break;
    result += segment;
    used += size;
  }
  return result;
}

/**
 * The plain-ASCII stand-in for `filename=` in Content-Disposition, for clients
 * that ignore `filename*`: accents dropped (é → e), anything else outside
 * printable ASCII, and the characters clients unescape or mangle, replaced.
 */
export function asciiFallback(filename: string): string {
  const ascii = filename
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\x20-\x7e]|["%\\]/gu, '_');
  return ascii.trim() === '' ? DEFAULT_FILENAME : ascii;
}
