import { fileTypeFromBuffer } from 'file-type/core';
import type { Sniffer } from './service.js';

/** How many leading bytes file-type needs to recognise every format it knows (its reasonableDetectionSizeInBytes). */
export const SNIFF_BYTES = 4100;

/**
 * The type the file's first bytes prove (magic numbers, by file-type), or
 * undefined when the format is not one it recognises (plain text, CSV, ...).
 */
export async function sniffFileType(firstBytes: Uint8Array): Promise<string | undefined> {
  const found = await fileTypeFromBuffer(firstBytes);
  return found?.mime.toLowerCase();
}

export const fileTypeSniffer: Sniffer = { bytesNeeded: SNIFF_BYTES, sniff: sniffFileType };
